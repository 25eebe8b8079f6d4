//! The `Tensor` handle: a strided view onto a shared `Storage`, with constructors, accessors and
//! the strided read/write helpers every kernel is built on.

use crate::dtype::{DType, Scalar};
use crate::element::Element;
use crate::error::{Result, TensorError};
use crate::macros::dispatch_dtype;
use crate::shape::{check_allocation, checked_numel, contiguous_strides};
use crate::storage::{with_buffer, Storage};

/// A cheap-clone strided view of a shared storage. Cloning the handle never copies elements;
/// use [`Tensor::clone_tensor`] for a deep copy.
#[derive(Clone)]
pub struct Tensor {
    storage: Storage,
    sizes: Vec<usize>,
    strides: Vec<usize>,
    storage_offset: usize,
    is_wrapped_number: bool,
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensor")
            .field("dtype", &self.dtype())
            .field("sizes", &self.sizes)
            .field("strides", &self.strides)
            .field("storage_offset", &self.storage_offset)
            .field("is_wrapped_number", &self.is_wrapped_number)
            .finish()
    }
}

/// Iterates storage offsets of a strided tensor in logical (row-major) order.
pub(crate) struct StridedOffsets<'a> {
    sizes: &'a [usize],
    strides: &'a [usize],
    index: Vec<usize>,
    current: usize,
    remaining: usize,
}

impl<'a> StridedOffsets<'a> {
    pub(crate) fn new(sizes: &'a [usize], strides: &'a [usize], offset: usize) -> Self {
        let remaining = sizes.iter().product();
        StridedOffsets {
            sizes,
            strides,
            index: vec![0; sizes.len()],
            current: offset,
            remaining,
        }
    }
}

impl Iterator for StridedOffsets<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.remaining == 0 {
            return None;
        }
        let out = self.current;
        self.remaining -= 1;
        if self.remaining > 0 {
            for d in (0..self.sizes.len()).rev() {
                self.index[d] += 1;
                self.current += self.strides[d];
                if self.index[d] < self.sizes[d] {
                    break;
                }
                // This dim wrapped around: undo its whole extent and carry into the next one.
                self.current -= self.strides[d] * self.sizes[d];
                self.index[d] = 0;
            }
        }
        Some(out)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for StridedOffsets<'_> {}

/// Walks a strided view as rows: calls `row(start, length, stride)` for each run along the
/// innermost dim, in logical order, after dropping size-1 dims and merging dims that are
/// contiguous with each other. Copies then cost one call per row instead of per element.
pub(crate) fn for_each_row(
    sizes: &[usize],
    strides: &[usize],
    offset: usize,
    mut row: impl FnMut(usize, usize, usize),
) {
    if sizes.contains(&0) {
        return;
    }
    // Merged (size, stride) pairs, outermost first.
    let mut dims: Vec<(usize, usize)> = Vec::with_capacity(sizes.len());
    for (&size, &stride) in sizes.iter().zip(strides) {
        if size == 1 {
            continue;
        }
        match dims.last_mut() {
            Some(last) if last.1 == stride * size => {
                last.0 *= size;
                last.1 = stride;
            }
            _ => dims.push((size, stride)),
        }
    }
    let Some(&(inner_size, inner_stride)) = dims.last() else {
        row(offset, 1, 1);
        return;
    };
    let outer = &dims[..dims.len() - 1];
    let mut index = vec![0usize; outer.len()];
    let mut start = offset;
    loop {
        row(start, inner_size, inner_stride);
        // Odometer over the outer dims.
        let mut dim = outer.len();
        loop {
            if dim == 0 {
                return;
            }
            dim -= 1;
            index[dim] += 1;
            start += outer[dim].1;
            if index[dim] < outer[dim].0 {
                break;
            }
            start -= outer[dim].1 * outer[dim].0;
            index[dim] = 0;
        }
    }
}

impl Tensor {
    /// A view of `storage` with the given geometry, checked to stay inside the storage.
    pub fn from_storage(
        storage: Storage,
        storage_offset: usize,
        sizes: Vec<usize>,
        strides: Vec<usize>,
    ) -> Result<Tensor> {
        if sizes.len() != strides.len() {
            return Err(TensorError::InvalidArgument(format!(
                "mismatch in length of strides and shape: {} vs {}",
                strides.len(),
                sizes.len()
            )));
        }
        let numel = checked_numel(&sizes)?;
        if numel > 0 {
            let mut max_offset = Some(storage_offset);
            for (&size, &stride) in sizes.iter().zip(&strides) {
                max_offset = max_offset.and_then(|m| {
                    (size - 1)
                        .checked_mul(stride)
                        .and_then(|e| m.checked_add(e))
                });
            }
            let item_size = storage.dtype().item_size();
            let out_of_bounds = match max_offset {
                Some(m) => m >= storage.len_elements(),
                None => true,
            };
            if out_of_bounds {
                let required_bytes = match max_offset {
                    Some(m) => (m as u128 + 1) * item_size as u128,
                    None => u128::MAX,
                };
                return Err(TensorError::StorageOutOfBounds {
                    sizes,
                    strides,
                    offset: storage_offset,
                    item_size,
                    required_bytes,
                    storage_bytes: storage.nbytes(),
                });
            }
        }
        Ok(Tensor {
            storage,
            sizes,
            strides,
            storage_offset,
            is_wrapped_number: false,
        })
    }

    /// Internal constructor for geometry already known to be valid.
    pub(crate) fn from_parts(
        storage: Storage,
        storage_offset: usize,
        sizes: Vec<usize>,
        strides: Vec<usize>,
    ) -> Tensor {
        Tensor {
            storage,
            sizes,
            strides,
            storage_offset,
            is_wrapped_number: false,
        }
    }

    /// A contiguous tensor owning `values` (logical order) with the given shape.
    pub fn from_vec<T: Element>(values: Vec<T>, sizes: &[usize]) -> Result<Tensor> {
        let numel = checked_numel(sizes)?;
        if numel != values.len() {
            return Err(TensorError::ElementCountMismatch {
                numel: values.len(),
                sizes: sizes.to_vec(),
            });
        }
        Ok(Tensor::from_parts(
            Storage::from_vec(values),
            0,
            sizes.to_vec(),
            contiguous_strides(sizes),
        ))
    }

    pub fn from_slice<T: Element>(values: &[T], sizes: &[usize]) -> Result<Tensor> {
        Tensor::from_vec(values.to_vec(), sizes)
    }

    pub fn zeros(sizes: &[usize], dtype: DType) -> Result<Tensor> {
        let numel = checked_numel(sizes)?;
        check_allocation(numel, dtype)?;
        Ok(Tensor::from_parts(
            Storage::zeros(dtype, numel),
            0,
            sizes.to_vec(),
            contiguous_strides(sizes),
        ))
    }

    pub fn ones(sizes: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::full(sizes, Scalar::Int(1), dtype)
    }

    /// A tensor filled with `value` cast to `dtype`.
    pub fn full(sizes: &[usize], value: Scalar, dtype: DType) -> Result<Tensor> {
        let numel = checked_numel(sizes)?;
        check_allocation(numel, dtype)?;
        dispatch_dtype!(dtype, T => Tensor::from_vec(vec![T::from_scalar(&value); numel], sizes))
    }

    /// A 0-dim tensor holding `value` cast to `dtype`.
    pub fn scalar_tensor(value: Scalar, dtype: DType) -> Tensor {
        dispatch_dtype!(dtype, T => Tensor::from_parts(
            Storage::from_vec(vec![T::from_scalar(&value)]),
            0,
            Vec::new(),
            Vec::new(),
        ))
    }

    /// PyTorch's wrapped number: a 0-dim tensor made from a Python scalar that promotes like a scalar.
    pub fn wrapped_scalar(value: Scalar) -> Tensor {
        let mut t = Tensor::scalar_tensor(value, value.dtype());
        t.is_wrapped_number = true;
        t
    }

    /// `torch.arange(start, end, step)` with the given dtype (step must be non-zero).
    pub fn arange(start: f64, end: f64, step: f64, dtype: DType) -> Result<Tensor> {
        if step == 0.0 || !step.is_finite() || !start.is_finite() || !end.is_finite() {
            return Err(TensorError::InvalidArgument(
                "step must be nonzero".to_string(),
            ));
        }
        if (step > 0.0 && end < start) || (step < 0.0 && end > start) {
            return Err(TensorError::InvalidArgument(
                "upper bound and larger bound inconsistent with step sign".to_string(),
            ));
        }
        let count = ((end - start) / step).ceil().max(0.0);
        if count > (isize::MAX as f64) {
            return Err(TensorError::SizeOverflow);
        }
        let count = count as usize;
        check_allocation(count, dtype)?;
        dispatch_dtype!(dtype, T => {
            let values: Vec<T> = if dtype.is_floating_point() {
                (0..count).map(|i| T::from_f64(start + step * i as f64)).collect()
            } else {
                let (s, st) = (start as i64, step as i64);
                (0..count).map(|i| T::from_i64(s.wrapping_add(st.wrapping_mul(i as i64)))).collect()
            };
            Tensor::from_vec(values, &[count])
        })
    }

    pub fn dtype(&self) -> DType {
        self.storage.dtype()
    }

    pub fn sizes(&self) -> &[usize] {
        &self.sizes
    }

    pub fn strides(&self) -> &[usize] {
        &self.strides
    }

    pub fn storage_offset(&self) -> usize {
        self.storage_offset
    }

    pub fn dim(&self) -> usize {
        self.sizes.len()
    }

    pub fn numel(&self) -> usize {
        self.sizes.iter().product()
    }

    /// Size of a (possibly negative) dimension.
    pub fn size(&self, dim: i64) -> Result<usize> {
        let d = crate::shape::wrap_dim(dim, self.dim())?;
        Ok(self.sizes.get(d).copied().unwrap_or(1))
    }

    /// Contiguity like PyTorch's `is_contiguous()`: size-1 dims may have any stride.
    pub fn is_contiguous(&self) -> bool {
        if self.numel() == 0 {
            return true;
        }
        let mut expected = 1usize;
        for (&size, &stride) in self.sizes.iter().zip(&self.strides).rev() {
            if size != 1 {
                if stride != expected {
                    return false;
                }
                expected *= size;
            }
        }
        true
    }

    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// The storage, moved out of the tensor (the layout is dropped): with
    /// [`Storage::try_into_buffer`], a way to hand a result's elements to another owner
    /// without a copy.
    pub fn into_storage(self) -> Storage {
        self.storage
    }

    pub fn is_wrapped_number(&self) -> bool {
        self.is_wrapped_number
    }

    pub fn set_wrapped_number(&mut self, value: bool) {
        self.is_wrapped_number = value;
    }

    /// Whether both handles view the same storage.
    pub fn shares_storage(&self, other: &Tensor) -> bool {
        Storage::ptr_eq(&self.storage, &other.storage)
    }

    /// Whether both handles are the same view (same storage and geometry), like Python's `is` on tensors.
    pub fn is_same(&self, other: &Tensor) -> bool {
        self.shares_storage(other)
            && self.sizes == other.sizes
            && self.strides == other.strides
            && self.storage_offset == other.storage_offset
    }

    pub(crate) fn offsets(&self) -> StridedOffsets<'_> {
        StridedOffsets::new(&self.sizes, &self.strides, self.storage_offset)
    }

    /// All elements in logical order, converted to `T`.
    pub(crate) fn gather<T: Element>(&self) -> Vec<T> {
        let numel = self.numel();
        if numel == 0 {
            // Zero-size views may carry any offset, so never index the buffer for them.
            return Vec::new();
        }
        let guard = self.storage.read();
        if let Some(buf) = T::slice_of(&guard) {
            // Same dtype: plain copies of whole rows, no per-element conversion.
            if self.is_contiguous() {
                return buf[self.storage_offset..self.storage_offset + numel].to_vec();
            }
            let mut out = Vec::with_capacity(numel);
            for_each_row(
                &self.sizes,
                &self.strides,
                self.storage_offset,
                |start, len, stride| {
                    if stride == 1 {
                        out.extend_from_slice(&buf[start..start + len]);
                    } else {
                        out.extend((0..len).map(|k| buf[start + k * stride]));
                    }
                },
            );
            return out;
        }
        with_buffer!(&*guard, buf => {
            if self.is_contiguous() {
                buf[self.storage_offset..self.storage_offset + numel]
                    .iter()
                    .map(|x| x.cast::<T>())
                    .collect()
            } else {
                let mut out = Vec::with_capacity(numel);
                for_each_row(&self.sizes, &self.strides, self.storage_offset, |start, len, stride| {
                    if stride == 1 {
                        out.extend(buf[start..start + len].iter().map(|x| x.cast::<T>()));
                    } else {
                        out.extend((0..len).map(|k| buf[start + k * stride].cast::<T>()));
                    }
                });
                out
            }
        })
    }

    /// The one element every position of a non-empty view reads (a scalar broadcast to a
    /// shape: all strides 0), converted to `T`; `None` for any other view.
    pub(crate) fn single_element<T: Element>(&self) -> Option<T> {
        if self.numel() == 0
            || self
                .strides
                .iter()
                .zip(&self.sizes)
                .any(|(&st, &sz)| st != 0 && sz != 1)
        {
            return None;
        }
        let guard = self.storage.read();
        Some(with_buffer!(&*guard, buf => buf[self.storage_offset].cast::<T>()))
    }

    /// Writes `values` (logical order, `numel` of them) into this view, converting to its dtype.
    /// The fast case of writing `src` into `self`: both contiguous, one dtype, separate
    /// storages (so neither lock waits on the other), copied without an intermediate vector.
    /// Returns false, having written nothing, in every other case.
    pub(crate) fn copy_contiguous_from(&self, src: &Tensor) -> bool {
        let numel = self.numel();
        if numel == 0
            || src.sizes != self.sizes
            || src.dtype() != self.dtype()
            || !self.is_contiguous()
            || !src.is_contiguous()
            || Storage::ptr_eq(&self.storage, &src.storage)
        {
            return false;
        }
        let source = src.storage.read();
        let mut target = self.storage.write();
        dispatch_dtype!(self.dtype(), T => {
            match (T::slice_of(&source), T::slice_of_mut(&mut target)) {
                (Some(from), Some(to)) => {
                    to[self.storage_offset..self.storage_offset + numel]
                        .copy_from_slice(&from[src.storage_offset..src.storage_offset + numel]);
                    true
                }
                _ => false,
            }
        })
    }

    /// Applies `f` to every element of a contiguous tensor of element type `T` in place,
    /// split across the intra-op threads. Returns false, having changed nothing, when the
    /// tensor is not contiguous or not of type `T`.
    pub(crate) fn map_contiguous_in_place<T: Element>(&self, f: impl Fn(T) -> T + Sync) -> bool {
        self.map_contiguous_chunks_in_place::<T>(|chunk| {
            for x in chunk {
                *x = f(*x);
            }
        })
    }

    /// As [`Tensor::map_contiguous_in_place`], with `f` given whole chunks of the elements
    /// (one per thread for large tensors), for kernels that work on slices.
    pub(crate) fn map_contiguous_chunks_in_place<T: Element>(
        &self,
        f: impl Fn(&mut [T]) + Sync,
    ) -> bool {
        let numel = self.numel();
        if self.dtype() != T::DTYPE || !self.is_contiguous() {
            return false;
        }
        if numel == 0 {
            return true;
        }
        let mut guard = self.storage.write();
        let Some(buffer) = T::slice_of_mut(&mut guard) else {
            return false;
        };
        let values = &mut buffer[self.storage_offset..self.storage_offset + numel];
        crate::ops::parallel::for_each_chunk_mut(values, f);
        true
    }

    pub(crate) fn scatter<T: Element>(&self, values: &[T]) {
        let numel = self.numel();
        if numel == 0 {
            return;
        }
        let mut guard = self.storage.write();
        with_buffer!(&mut *guard, buf => {
            if self.is_contiguous() {
                for (dst, src) in buf[self.storage_offset..self.storage_offset + numel]
                    .iter_mut()
                    .zip(values)
                {
                    *dst = src.cast();
                }
            } else {
                let mut values = values.iter();
                for_each_row(&self.sizes, &self.strides, self.storage_offset, |start, len, stride| {
                    if stride == 1 {
                        for (dst, src) in buf[start..start + len].iter_mut().zip(&mut values) {
                            *dst = src.cast();
                        }
                    } else {
                        for (k, src) in (0..len).zip(&mut values) {
                            buf[start + k * stride] = src.cast();
                        }
                    }
                });
            }
        })
    }

    /// Calls `f` with the elements in logical order as `T`: borrowed straight from the
    /// storage when the tensor is contiguous and already `T` (no copy of a large weight for a
    /// kernel that reads a few rows of it), otherwise a converted copy.
    pub(crate) fn with_elements<T: Element, R>(&self, f: impl FnOnce(&[T]) -> R) -> R {
        let numel = self.numel();
        if numel > 0 && self.dtype() == T::DTYPE && self.is_contiguous() {
            let guard = self.storage.read();
            if let Some(buffer) = T::slice_of(&guard) {
                let start = self.storage_offset;
                if let Some(values) = buffer.get(start..start + numel) {
                    return f(values);
                }
            }
        }
        f(&self.gather::<T>())
    }

    /// Elements in logical order; the dtype must be exactly `T`'s.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if self.dtype() != T::DTYPE {
            return Err(TensorError::TypeMismatch {
                expected: T::DTYPE,
                actual: self.dtype(),
            });
        }
        Ok(self.gather::<T>())
    }

    /// Elements in logical order converted to f64 (any dtype).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        self.gather::<f64>()
    }

    /// Elements in logical order converted to i64 (floats truncate).
    pub fn to_i64_vec(&self) -> Vec<i64> {
        self.gather::<i64>()
    }

    /// The single element as a Python-like scalar.
    pub fn item(&self) -> Result<Scalar> {
        let numel = self.numel();
        if numel != 1 {
            return Err(TensorError::NotASingleElement { numel });
        }
        let guard = self.storage.read();
        Ok(with_buffer!(&*guard, buf => buf[self.storage_offset].to_scalar()))
    }

    /// A contiguous tensor from logical-order values of the given dtype.
    pub(crate) fn from_values<T: Element>(values: Vec<T>, sizes: &[usize]) -> Tensor {
        Tensor::from_parts(
            Storage::from_vec(values),
            0,
            sizes.to_vec(),
            contiguous_strides(sizes),
        )
    }

    /// Self when already contiguous, otherwise a contiguous copy.
    pub fn contiguous(&self) -> Tensor {
        if self.is_contiguous() {
            self.clone()
        } else {
            self.clone_tensor()
        }
    }

    /// Deep copy into fresh contiguous storage (keeps dtype; drops the wrapped-number flag).
    pub fn clone_tensor(&self) -> Tensor {
        self.cast_copy(self.dtype())
    }

    /// Converts to `dtype`; returns the same view when the dtype already matches.
    pub fn to_dtype(&self, dtype: DType) -> Tensor {
        if dtype == self.dtype() {
            self.clone()
        } else {
            self.cast_copy(dtype)
        }
    }

    /// A fresh contiguous copy converted to `dtype`.
    pub(crate) fn cast_copy(&self, dtype: DType) -> Tensor {
        dispatch_dtype!(dtype, T => Tensor::from_values(self.gather::<T>(), &self.sizes))
    }

    /// Same storage with new geometry (caller guarantees validity).
    pub(crate) fn with_geometry(
        &self,
        sizes: Vec<usize>,
        strides: Vec<usize>,
        storage_offset: usize,
    ) -> Tensor {
        Tensor::from_parts(self.storage.clone(), storage_offset, sizes, strides)
    }
}

#[cfg(test)]
mod row_walk_tests {
    use super::{for_each_row, StridedOffsets};

    /// Every offset the row walk visits, in order.
    fn walked(sizes: &[usize], strides: &[usize], offset: usize) -> Vec<usize> {
        let mut offsets = Vec::new();
        for_each_row(sizes, strides, offset, |start, len, stride| {
            offsets.extend((0..len).map(|k| start + k * stride));
        });
        offsets
    }

    #[test]
    fn row_walk_visits_the_same_offsets_as_the_element_walk() {
        let cases: &[(&[usize], &[usize], usize)] = &[
            (&[2, 3, 4, 5], &[60, 20, 5, 1], 0), // contiguous: one row
            (&[2, 4, 3, 5], &[60, 5, 20, 1], 7), // permuted middle dims
            (&[5, 4, 3, 2], &[1, 5, 20, 60], 0), // fully transposed
            (&[3, 1, 4], &[8, 100, 2], 3),       // size-1 dim, stepped inner
            (&[2, 3, 4], &[0, 4, 1], 0),         // expanded outer dim
            (&[2, 3, 4], &[12, 0, 0], 5),        // expanded inner dims
            (&[4, 6], &[12, 2], 1),              // slice with step
            (&[1, 1], &[9, 9], 4),               // one element
            (&[], &[], 6),                       // 0-dim
            (&[3, 0, 2], &[2, 2, 1], 0),         // empty
            (&[2, 2, 3, 2], &[12, 6, 2, 1], 0),  // mergeable all the way
            (&[2, 2, 3, 2], &[24, 6, 2, 1], 0),  // mergeable inner three
        ];
        for &(sizes, strides, offset) in cases {
            let expected: Vec<usize> = if sizes.contains(&0) {
                Vec::new()
            } else {
                StridedOffsets::new(sizes, strides, offset).collect()
            };
            assert_eq!(
                walked(sizes, strides, offset),
                expected,
                "{sizes:?} {strides:?}"
            );
        }
    }
}
