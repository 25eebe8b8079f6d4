//! Joining tensors: `cat` and `stack`, with dtype promotion across the inputs.

use crate::error::{format_shape, Result, TensorError};
use crate::macros::dispatch_dtype;
use crate::promotion::result_type;
use crate::shape::wrap_dim;
use crate::tensor::Tensor;

/// `torch.cat`: concatenates along `dim`. Legacy 1-D empty tensors (shape `[0]`) are skipped.
pub fn cat(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    if tensors.is_empty() {
        return Err(TensorError::InvalidArgument(
            "torch.cat(): expected a non-empty list of Tensors".to_string(),
        ));
    }
    for (i, t) in tensors.iter().enumerate() {
        if t.dim() == 0 {
            return Err(TensorError::InvalidArgument(format!(
                "zero-dimensional tensor (at position {i}) cannot be concatenated"
            )));
        }
    }
    let refs: Vec<&Tensor> = tensors.iter().collect();
    let dtype = result_type(&refs);
    let is_skipped = |t: &Tensor| t.dim() == 1 && t.sizes()[0] == 0;
    let Some(reference) = tensors.iter().find(|t| !is_skipped(t)) else {
        return Tensor::zeros(&[0], dtype);
    };
    let d = wrap_dim(dim, reference.dim())?;
    let mut out_sizes = reference.sizes().to_vec();
    out_sizes[d] = 0;
    for (i, t) in tensors.iter().enumerate() {
        if is_skipped(t) {
            continue;
        }
        if t.dim() != reference.dim() {
            return Err(TensorError::InvalidArgument(format!(
                "Tensors must have same number of dimensions: got {} and {}",
                reference.dim(),
                t.dim()
            )));
        }
        for (axis, (&expected, &got)) in reference.sizes().iter().zip(t.sizes()).enumerate() {
            if axis != d && expected != got {
                return Err(TensorError::InvalidArgument(format!(
                    "Sizes of tensors must match except in dimension {d}. Expected size {expected} but got size {got} for tensor number {i} in the list."
                )));
            }
        }
        out_sizes[d] += t.sizes()[d];
    }
    let out = Tensor::zeros(&out_sizes, dtype)?;
    let mut start = 0usize;
    for t in tensors.iter().filter(|t| !is_skipped(t)) {
        let len = t.sizes()[d];
        let region = out.slice(d as i64, Some(start as i64), Some((start + len) as i64), 1)?;
        dispatch_dtype!(dtype, T => region.scatter::<T>(&t.gather::<T>()));
        start += len;
    }
    Ok(out)
}

/// `torch.stack`: joins equally shaped tensors along a new dimension `dim`.
pub fn stack(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let Some(first) = tensors.first() else {
        return Err(TensorError::InvalidArgument(
            "stack expects a non-empty TensorList".to_string(),
        ));
    };
    for (i, t) in tensors.iter().enumerate() {
        if t.sizes() != first.sizes() {
            return Err(TensorError::InvalidArgument(format!(
                "stack expects each tensor to be equal size, but got {} at entry 0 and {} at entry {}",
                format_shape(first.sizes()),
                format_shape(t.sizes()),
                i
            )));
        }
    }
    let d = wrap_dim(dim, first.dim() + 1)?;
    let expanded = tensors
        .iter()
        .map(|t| t.unsqueeze(d as i64))
        .collect::<Result<Vec<_>>>()?;
    cat(&expanded, d as i64)
}
