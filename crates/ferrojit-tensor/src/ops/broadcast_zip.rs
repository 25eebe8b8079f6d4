//! Elementwise loops over two operands broadcast to one shape, read in place from their
//! storages: the binary kernels' fast path when both operands already hold the computation's
//! dtype (no gathered copy of either operand, no expanded copy of a broadcast one).

use crate::element::Element;
use crate::ops::parallel::{num_threads, split_ranges, PARALLEL_THRESHOLD};
use crate::tensor::Tensor;

/// The two operands' strides over the output's dims, merged where both allow it.
struct Walk {
    /// (size, stride in `a`, stride in `b`), outermost first; the last entry is the inner row.
    dims: Vec<(usize, usize, usize)>,
    a_offset: usize,
    b_offset: usize,
}

impl Walk {
    /// `a` and `b` are views of the output's shape (broadcast dims have stride 0).
    fn new(a: &Tensor, b: &Tensor) -> Walk {
        let mut dims: Vec<(usize, usize, usize)> = Vec::with_capacity(a.sizes().len());
        for ((&size, &a_stride), &b_stride) in a.sizes().iter().zip(a.strides()).zip(b.strides()) {
            if size == 1 {
                continue;
            }
            match dims.last_mut() {
                // An outer dim folds into the next one when, in both operands, stepping it once
                // is the same as stepping the inner one `size` times.
                Some(last) if last.1 == a_stride * size && last.2 == b_stride * size => {
                    last.0 *= size;
                    last.1 = a_stride;
                    last.2 = b_stride;
                }
                _ => dims.push((size, a_stride, b_stride)),
            }
        }
        if dims.is_empty() {
            dims.push((1, 1, 1));
        }
        Walk {
            dims,
            a_offset: a.storage_offset(),
            b_offset: b.storage_offset(),
        }
    }

    fn inner(&self) -> (usize, usize, usize) {
        self.dims[self.dims.len() - 1]
    }

    /// The storage offsets of row `row` (rows are the inner dim's runs, in output order).
    fn row_start(&self, mut row: usize) -> (usize, usize) {
        let (mut a, mut b) = (self.a_offset, self.b_offset);
        for &(size, a_stride, b_stride) in self.dims[..self.dims.len() - 1].iter().rev() {
            let index = row % size;
            row /= size;
            a += index * a_stride;
            b += index * b_stride;
        }
        (a, b)
    }

    /// Writes `f` of output positions `start .. start + out.len()` into `out`.
    fn fill<T: Element, R>(
        &self,
        a: &[T],
        b: &[T],
        start: usize,
        out: &mut [R],
        f: &impl Fn(T, T) -> R,
    ) {
        let (len, a_step, b_step) = self.inner();
        let mut row = start / len;
        let mut column = start % len;
        let mut written = 0;
        while written < out.len() {
            let count = (len - column).min(out.len() - written);
            let (a_row, b_row) = self.row_start(row);
            let (a_first, b_first) = (a_row + column * a_step, b_row + column * b_step);
            let target = &mut out[written..written + count];
            // The common layouts get loops the compiler vectorizes; any other stride pair
            // (a transposed operand, say) is read element by element.
            match (a_step, b_step) {
                (1, 1) => {
                    let (xs, ys) = (&a[a_first..a_first + count], &b[b_first..b_first + count]);
                    for ((slot, &x), &y) in target.iter_mut().zip(xs).zip(ys) {
                        *slot = f(x, y);
                    }
                }
                (1, 0) => {
                    let y = b[b_first];
                    for (slot, &x) in target.iter_mut().zip(&a[a_first..a_first + count]) {
                        *slot = f(x, y);
                    }
                }
                (0, 1) => {
                    let x = a[a_first];
                    for (slot, &y) in target.iter_mut().zip(&b[b_first..b_first + count]) {
                        *slot = f(x, y);
                    }
                }
                _ => {
                    for (k, slot) in target.iter_mut().enumerate() {
                        *slot = f(a[a_first + k * a_step], b[b_first + k * b_step]);
                    }
                }
            }
            written += count;
            row += 1;
            column = 0;
        }
    }
}

/// `f(a[i], b[i])` for every position `i` of `shape`, in order, where `a` and `b` are already
/// broadcast to `shape`; `None` (nothing computed) unless both hold `T`'s dtype. Split across
/// the pool for long outputs; each output depends on its own position only, so the result is
/// the same either way.
pub(crate) fn broadcast_zip_map<T: Element, R: Copy + Send + Sync>(
    a: &Tensor,
    b: &Tensor,
    f: impl Fn(T, T) -> R + Sync + Send,
) -> Option<Vec<R>> {
    if a.dtype() != T::DTYPE || b.dtype() != T::DTYPE || a.sizes() != b.sizes() {
        return None;
    }
    let numel = a.numel();
    if numel == 0 {
        return Some(Vec::new());
    }
    let walk = Walk::new(a, b);
    let a_guard = a.storage().read();
    // The same storage read twice (`x * x`) takes one guard: a second read lock on one RwLock
    // could wait behind a writer queued between the two.
    let b_guard = if a.shares_storage(b) {
        None
    } else {
        Some(b.storage().read())
    };
    let a_values = T::slice_of(&a_guard)?;
    let b_values = match &b_guard {
        Some(guard) => T::slice_of(guard)?,
        None => a_values,
    };
    // As for `Tensor::gather`, every view lies inside its storage (checked when views are
    // made; broadcasting only adds stride-0 dims); the slice indexing below would stop a
    // broken one with a panic, never a read outside the buffer.
    let first = f(a_values[walk.a_offset], b_values[walk.b_offset]);
    let mut out = vec![first; numel];
    let threads = num_threads();
    if numel >= PARALLEL_THRESHOLD && threads > 1 {
        use rayon::prelude::*;
        let ranges = split_ranges(numel, threads);
        let chunk = ranges[0].len();
        out.par_chunks_mut(chunk)
            .enumerate()
            .for_each(|(part, slice)| walk.fill(a_values, b_values, part * chunk, slice, &f));
    } else {
        walk.fill(a_values, b_values, 0, &mut out, &f);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::broadcast_zip_map;
    use crate::tensor::Tensor;

    fn tensor(values: Vec<f32>, sizes: &[usize]) -> Tensor {
        Tensor::from_values(values, sizes)
    }

    /// Every layout the walk distinguishes (same shape, a broadcast row, a broadcast column, a
    /// per-channel operand, a transposed operand, a scalar, an offset view), against an
    /// element-by-element reference through the tensors' logical order.
    #[test]
    fn matches_the_gathered_reference_for_every_layout() {
        let base: Vec<f32> = (0..4 * 3 * 5).map(|v| v as f32 * 0.5 - 7.0).collect();
        let x = tensor(base.clone(), &[4, 3, 5]);
        let shape = [4usize, 3, 5];
        let operands = vec![
            tensor(base.iter().map(|v| v * 2.0).collect(), &[4, 3, 5]),
            tensor((0..5).map(|v| v as f32).collect(), &[5]),
            tensor((0..3).map(|v| v as f32 + 1.0).collect(), &[3, 1]),
            tensor((0..3).map(|v| v as f32 - 1.0).collect(), &[1, 3, 1]),
            tensor(base.clone(), &[4, 5, 3]).transpose(1, 2).unwrap(),
            tensor(vec![3.5], &[]),
            tensor((0..40).map(|v| v as f32).collect(), &[40])
                .narrow(0, 7, 15)
                .unwrap()
                .reshape(&[3, 5])
                .unwrap(),
        ];
        for other in operands {
            for (left, right) in [(&x, &other), (&other, &x)] {
                let a = left.broadcast_to(&shape).unwrap();
                let b = right.broadcast_to(&shape).unwrap();
                let got = broadcast_zip_map::<f32, f32>(&a, &b, |p, q| p * 10.0 - q).unwrap();
                let expected: Vec<f32> = a
                    .to_f64_vec()
                    .iter()
                    .zip(b.to_f64_vec())
                    .map(|(&p, q)| p as f32 * 10.0 - q as f32)
                    .collect();
                assert_eq!(got, expected, "operand sizes {:?}", right.sizes());
            }
        }
    }

    /// Long outputs split across threads at positions inside a row: the split must resume
    /// each part at its own row and column.
    #[test]
    fn split_outputs_resume_mid_row() {
        let rows = 37;
        let columns = super::PARALLEL_THRESHOLD / 17 + 3;
        let a = tensor(
            (0..rows * columns).map(|v| v as f32).collect(),
            &[rows, columns],
        );
        let b = tensor((0..rows).map(|v| v as f32 * 1000.0).collect(), &[rows, 1]);
        let b = b.broadcast_to(&[rows, columns]).unwrap();
        let got = broadcast_zip_map::<f32, f32>(&a, &b, |p, q| p + q).unwrap();
        for (index, value) in got.iter().enumerate() {
            let expected = index as f32 + (index / columns) as f32 * 1000.0;
            assert_eq!(*value, expected, "position {index}");
        }
    }

    #[test]
    fn other_dtypes_are_left_to_the_caller() {
        let a = tensor(vec![1.0, 2.0], &[2]);
        let b = Tensor::from_values(vec![1.0f64, 2.0], &[2]);
        assert!(broadcast_zip_map::<f32, f32>(&a, &b, |p, q| p + q).is_none());
    }
}
