//! The trailing reduction a fusion group may end with: softmax or log_softmax over the last
//! dimension, applied row by row to the value the group's pointwise chain wrote.
//!
//! The generated code (compile.rs) walks a range of whole rows; for each row it runs the
//! pointwise chain block by block into the output buffer, then calls one of these kernels on
//! that row while it is still in L1. The kernels follow PyTorch's vectorized last-dim
//! softmax (`_vec_softmax_lastdim` / `_vec_log_softmax_lastdim` in SoftMaxKernel.cpp): the
//! row's maximum, then exp(x - max) and its sum, then a scale by 1/sum (log_softmax:
//! x - max - log(sum)). exp and log are math.rs's polynomials, so the same ULP bounds hold;
//! the sum is kept in [`LANES`] partial sums (as a vector register would) so LLVM vectorizes
//! it. A row holding NaN gives NaN everywhere, as in PyTorch; a row that is all -inf gives
//! NaN (max - max is NaN), also as in PyTorch.

use crate::math::{exp_f32, log_f32};

/// Partial sums and maxima kept side by side; 8 matches an AVX2 register of f32.
const LANES: usize = 8;

/// Which reduction ends the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RowReductionKind {
    Softmax,
    LogSoftmax,
}

/// The C signature of a row kernel: the row's first value and its length, rewritten in
/// place.
pub type RowKernel = unsafe extern "C" fn(*mut f32, i64);

impl RowReductionKind {
    /// The operator (`aten::softmax` or `aten::log_softmax`) this reduction is.
    pub fn from_operator(kind: &str) -> Option<RowReductionKind> {
        match kind {
            "aten::softmax" => Some(RowReductionKind::Softmax),
            "aten::log_softmax" => Some(RowReductionKind::LogSoftmax),
            _ => None,
        }
    }

    /// The JIT symbol the kernel is registered under.
    pub fn symbol(&self) -> &'static str {
        match self {
            RowReductionKind::Softmax => "ferrojit_codegen_softmax_row_f32",
            RowReductionKind::LogSoftmax => "ferrojit_codegen_log_softmax_row_f32",
        }
    }

    /// The kernel's address, for the JIT's symbol table.
    pub fn kernel(&self) -> RowKernel {
        match self {
            RowReductionKind::Softmax => softmax_row_kernel,
            RowReductionKind::LogSoftmax => log_softmax_row_kernel,
        }
    }

    pub fn all() -> [RowReductionKind; 2] {
        [RowReductionKind::Softmax, RowReductionKind::LogSoftmax]
    }

    /// Applies the reduction to one row in place (the safe form the kernels wrap).
    pub fn apply(&self, row: &mut [f32]) {
        match self {
            RowReductionKind::Softmax => softmax_row(row),
            RowReductionKind::LogSoftmax => log_softmax_row(row),
        }
    }
}

/// The larger of two values, NaN if either is NaN (PyTorch's `vec::maximum`).
#[inline(always)]
fn maximum_propagating_nan(a: f32, b: f32) -> f32 {
    if a.is_nan() || a > b {
        a
    } else {
        b
    }
}

/// The row's maximum (NaN if it holds one), reduced in [`LANES`] partial maxima.
fn row_maximum(row: &[f32]) -> f32 {
    let mut partial = [f32::NEG_INFINITY; LANES];
    let mut chunks = row.chunks_exact(LANES);
    for chunk in &mut chunks {
        for (lane, &value) in partial.iter_mut().zip(chunk) {
            *lane = maximum_propagating_nan(*lane, value);
        }
    }
    let mut maximum = chunks
        .remainder()
        .iter()
        .fold(f32::NEG_INFINITY, |m, &v| maximum_propagating_nan(m, v));
    for lane in partial {
        maximum = maximum_propagating_nan(maximum, lane);
    }
    maximum
}

/// The sum of `values`, in [`LANES`] partial sums added pairwise at the end.
fn lane_sum(values: &[f32]) -> f32 {
    let mut partial = [0.0f32; LANES];
    let mut chunks = values.chunks_exact(LANES);
    for chunk in &mut chunks {
        for (lane, &value) in partial.iter_mut().zip(chunk) {
            *lane += value;
        }
    }
    let tail: f32 = chunks.remainder().iter().sum();
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for lane in 0..width {
            partial[lane] += partial[lane + width];
        }
    }
    partial[0] + tail
}

/// softmax over the row, in place.
pub fn softmax_row(row: &mut [f32]) {
    if row.is_empty() {
        return;
    }
    let maximum = row_maximum(row);
    for value in row.iter_mut() {
        *value = exp_f32(*value - maximum);
    }
    let scale = 1.0 / lane_sum(row);
    for value in row.iter_mut() {
        *value *= scale;
    }
}

/// log_softmax over the row, in place. The exponentials go through a small stack buffer,
/// since the row itself must keep x - max.
pub fn log_softmax_row(row: &mut [f32]) {
    if row.is_empty() {
        return;
    }
    let maximum = row_maximum(row);
    for value in row.iter_mut() {
        *value -= maximum;
    }
    let mut exponentials = [0.0f32; 256];
    let mut sum = 0.0f32;
    for chunk in row.chunks(exponentials.len()) {
        let buffer = &mut exponentials[..chunk.len()];
        for (exponential, &value) in buffer.iter_mut().zip(chunk) {
            *exponential = exp_f32(value);
        }
        sum += lane_sum(buffer);
    }
    let log_sum = log_f32(sum);
    for value in row.iter_mut() {
        *value -= log_sum;
    }
}

/// The row as a slice, for the kernels below; empty for a non-positive length.
///
/// # Safety
/// `row` must be valid for reading and writing `length` f32 values, and nothing else may
/// access them during the call.
unsafe fn row_slice<'a>(row: *mut f32, length: i64) -> &'a mut [f32] {
    match usize::try_from(length) {
        Ok(length) if length > 0 && !row.is_null() => {
            // SAFETY: forwarded from this function's contract: `length` values from `row`
            // are valid and exclusively ours for the call.
            unsafe { std::slice::from_raw_parts_mut(row, length) }
        }
        _ => &mut [],
    }
}

/// A generated-code entry point: softmax of `length` values at `row`, in place.
///
/// # Safety
/// `row` must be valid for reading and writing `length` f32 values, not accessed by anyone
/// else during the call.
pub unsafe extern "C" fn softmax_row_kernel(row: *mut f32, length: i64) {
    // SAFETY: forwarded from this function's contract.
    softmax_row(unsafe { row_slice(row, length) });
}

/// A generated-code entry point: log_softmax of `length` values at `row`, in place.
///
/// # Safety
/// As [`softmax_row_kernel`].
pub unsafe extern "C" fn log_softmax_row_kernel(row: *mut f32, length: i64) {
    // SAFETY: forwarded from this function's contract.
    log_softmax_row(unsafe { row_slice(row, length) });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// f64 softmax of a row, the accurate answer the f32 kernels are held to.
    fn softmax_f64(row: &[f32]) -> Vec<f64> {
        let maximum = row
            .iter()
            .fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)));
        let exponentials: Vec<f64> = row
            .iter()
            .map(|&v| (f64::from(v) - maximum).exp())
            .collect();
        let sum: f64 = exponentials.iter().sum();
        exponentials.iter().map(|e| e / sum).collect()
    }

    #[test]
    fn softmax_rows_sum_to_one_and_match_f64() {
        for length in [1usize, 3, 8, 13, 300] {
            let row: Vec<f32> = (0..length)
                .map(|i| ((i * 37) % 11) as f32 * 0.7 - 3.0)
                .collect();
            let mut result = row.clone();
            softmax_row(&mut result);
            let expected = softmax_f64(&row);
            let total: f32 = result.iter().sum();
            assert!((total - 1.0).abs() < 1e-5, "length {length}: sum {total}");
            for (got, want) in result.iter().zip(&expected) {
                assert!(
                    (f64::from(*got) - want).abs() <= 1e-6 * want.max(1e-3),
                    "{got} vs {want}"
                );
            }
            let mut logs = row.clone();
            log_softmax_row(&mut logs);
            for (got, want) in logs.iter().zip(&expected) {
                assert!(
                    (f64::from(*got) - want.ln()).abs() < 1e-5,
                    "{got} vs {}",
                    want.ln()
                );
            }
        }
    }

    #[test]
    fn nan_and_all_masked_rows_give_nan_like_pytorch() {
        let mut with_nan = [1.0, f32::NAN, 2.0];
        softmax_row(&mut with_nan);
        assert!(with_nan.iter().all(|v| v.is_nan()));
        let mut masked = [f32::NEG_INFINITY; 4];
        log_softmax_row(&mut masked);
        assert!(masked.iter().all(|v| v.is_nan()));
        // One masked position among finite ones is exactly zero.
        let mut partly = [0.5, f32::NEG_INFINITY, -0.5];
        softmax_row(&mut partly);
        assert_eq!(partly[1], 0.0);
    }

    #[test]
    fn kernels_touch_exactly_length_values() {
        for kind in RowReductionKind::all() {
            // A guard value past the row: the kernel must leave it alone.
            let mut buffer = vec![0.25f32, 1.0, -2.0, 7.0, 123.0];
            // SAFETY: the buffer holds 5 values; the kernel is told 4.
            unsafe { (kind.kernel())(buffer.as_mut_ptr(), 4) };
            assert_eq!(buffer[4], 123.0, "{kind:?}");
            let mut expected = vec![0.25f32, 1.0, -2.0, 7.0];
            kind.apply(&mut expected);
            assert_eq!(&buffer[..4], expected.as_slice(), "{kind:?}");
            // Zero and negative lengths touch nothing.
            let mut untouched = [3.0f32];
            // SAFETY: lengths <= 0 read and write nothing.
            unsafe { (kind.kernel())(untouched.as_mut_ptr(), 0) };
            // SAFETY: as above.
            unsafe { (kind.kernel())(untouched.as_mut_ptr(), -5) };
            assert_eq!(untouched, [3.0]);
        }
    }
}
