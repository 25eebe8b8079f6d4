//! Shape arithmetic: dimension wrapping, contiguous strides, broadcasting and view-stride inference.

use crate::error::{Result, TensorError};

/// Wraps a possibly negative dimension into `0..ndim` like PyTorch's `maybe_wrap_dim`.
/// A 0-dim tensor accepts dims as if it had one dimension.
pub fn wrap_dim(dim: i64, ndim: usize) -> Result<usize> {
    let effective = ndim.max(1) as i64;
    let (min, max) = (-effective, effective - 1);
    if dim < min || dim > max {
        return Err(TensorError::DimOutOfRange { dim, min, max });
    }
    Ok(if dim < 0 {
        (dim + effective) as usize
    } else {
        dim as usize
    })
}

/// Row-major strides of a contiguous tensor of this shape.
pub fn contiguous_strides(sizes: &[usize]) -> Vec<usize> {
    let mut strides = vec![0usize; sizes.len()];
    let mut acc = 1usize;
    for (stride, size) in strides.iter_mut().zip(sizes).rev() {
        *stride = acc;
        acc = acc.saturating_mul((*size).max(1));
    }
    strides
}

/// Number of elements, with overflow checking.
pub fn checked_numel(sizes: &[usize]) -> Result<usize> {
    sizes
        .iter()
        .try_fold(1usize, |acc, &s| acc.checked_mul(s))
        .ok_or(TensorError::SizeOverflow)
}

/// Rejects element counts whose byte size cannot be allocated, like PyTorch's allocator error.
pub fn check_allocation(numel: usize, dtype: crate::dtype::DType) -> Result<()> {
    let bytes = (numel as u128) * (dtype.item_size() as u128);
    if bytes > isize::MAX as u128 {
        return Err(TensorError::InvalidArgument(format!(
            "DefaultCPUAllocator: can't allocate memory: you tried to allocate {bytes} bytes."
        )));
    }
    Ok(())
}

/// The broadcast shape of two shapes, with PyTorch's error message.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let ndim = a.len().max(b.len());
    let mut out = vec![0usize; ndim];
    // PyTorch compares from the last dimension backwards, so when several dimensions
    // disagree its message names the last of them; walking the same way names the same one.
    for (i, slot) in out.iter_mut().enumerate().rev() {
        let offset = ndim - 1 - i;
        let size_a = if offset < a.len() {
            a[a.len() - 1 - offset]
        } else {
            1
        };
        let size_b = if offset < b.len() {
            b[b.len() - 1 - offset]
        } else {
            1
        };
        *slot = if size_a == size_b || size_b == 1 {
            size_a
        } else if size_a == 1 {
            size_b
        } else {
            return Err(TensorError::BroadcastMismatch {
                size_a,
                size_b,
                dim: i,
            });
        };
    }
    Ok(out)
}

/// Resolves a requested shape with at most one `-1` against an element count.
pub fn infer_size(shape: &[i64], numel: usize) -> Result<Vec<usize>> {
    let mut inferred: Option<usize> = None;
    let mut product = 1usize;
    let mut out = Vec::with_capacity(shape.len());
    for (i, &s) in shape.iter().enumerate() {
        if s == -1 {
            if inferred.is_some() {
                return Err(TensorError::InvalidArgument(
                    "only one dimension can be inferred".to_string(),
                ));
            }
            inferred = Some(i);
            out.push(1);
        } else if s < 0 {
            return Err(TensorError::InvalidArgument(format!(
                "invalid shape dimension {s} at index {i} of shape {}",
                crate::error::format_shape_i64(shape)
            )));
        } else {
            let s = s as usize;
            product = product.checked_mul(s).ok_or(TensorError::SizeOverflow)?;
            out.push(s);
        }
    }
    let invalid = || TensorError::InvalidShape {
        shape: shape.to_vec(),
        numel,
    };
    match inferred {
        Some(i) => {
            if product == 0 && numel != 0 {
                return Err(invalid());
            }
            if product == 0 {
                return Err(TensorError::InvalidArgument(format!(
                    "cannot reshape tensor of 0 elements into shape {} because the unspecified dimension size -1 can be any value and is ambiguous",
                    crate::error::format_shape_i64(shape)
                )));
            }
            if !numel.is_multiple_of(product) {
                return Err(invalid());
            }
            out[i] = numel / product;
        }
        None => {
            if product != numel {
                return Err(invalid());
            }
        }
    }
    Ok(out)
}

/// Strides that let a tensor of `old_sizes`/`old_strides` be viewed as `new_sizes` without copying,
/// or `None` when some new dimension would span two non-contiguous chunks.
pub fn view_strides(
    old_sizes: &[usize],
    old_strides: &[usize],
    new_sizes: &[usize],
) -> Option<Vec<usize>> {
    let numel: usize = old_sizes.iter().product();
    if numel == 0 || old_sizes.is_empty() {
        return Some(contiguous_strides(new_sizes));
    }
    let mut new_strides = vec![0usize; new_sizes.len()];
    // Walk old dims from the innermost outward, grouping them into chunks that are
    // contiguous with respect to each other; each chunk must be covered exactly by new dims.
    let mut view_d = new_sizes.len() as isize - 1;
    let mut chunk_base_stride = *old_strides.last()?;
    let mut tensor_numel = 1usize;
    let mut view_numel = 1usize;
    for tensor_d in (0..old_sizes.len()).rev() {
        tensor_numel *= old_sizes[tensor_d];
        let chunk_ends = tensor_d == 0
            || (old_sizes[tensor_d - 1] != 1
                && old_strides[tensor_d - 1] != tensor_numel.checked_mul(chunk_base_stride)?);
        if chunk_ends {
            while view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d as usize] == 1) {
                new_strides[view_d as usize] = view_numel * chunk_base_stride;
                view_numel *= new_sizes[view_d as usize];
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return None;
            }
            if tensor_d > 0 {
                chunk_base_stride = old_strides[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    if view_d != -1 {
        return None;
    }
    Some(new_strides)
}
