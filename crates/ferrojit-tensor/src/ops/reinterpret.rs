//! Reinterpreting a tensor's bytes as another dtype (`view_copy.dtype`): PyTorch's
//! `view(dtype)` size and stride rules and errors, with the result copied into a new
//! storage, since a ferrojit storage holds elements of one dtype.

use crate::dtype::DType;
use crate::error::{Result, TensorError};
use crate::storage::Storage;
use crate::tensor::Tensor;

fn refusal(message: String) -> TensorError {
    TensorError::InvalidArgument(message)
}

impl Tensor {
    /// The sizes `self.view(dtype)` has, after PyTorch's checks: the last dim scales by the
    /// ratio of the element sizes, and viewing as a wider dtype needs the last dim contiguous
    /// and the offset, the other strides and the last size divisible by the ratio.
    pub fn view_dtype_sizes(&self, dtype: DType) -> Result<Vec<usize>> {
        let (old_size, new_size) = (self.dtype().item_size(), dtype.item_size());
        let mut sizes = self.sizes().to_vec();
        if old_size == new_size {
            return Ok(sizes);
        }
        let describe = || {
            format!(
                "to view {} as {} (different element sizes)",
                self.dtype().scalar_type_name(),
                dtype.scalar_type_name()
            )
        };
        let Some(last) = sizes.len().checked_sub(1) else {
            return Err(refusal(format!("self.dim() cannot be 0 {}", describe())));
        };
        let strides = self.strides();
        let last_stride_must_be_one = || {
            if strides[last] != 1 {
                return Err(refusal(format!(
                    "self.stride(-1) must be 1 {}, but got {}",
                    describe(),
                    strides[last]
                )));
            }
            Ok(())
        };
        if old_size > new_size {
            last_stride_must_be_one()?;
            sizes[last] *= old_size / new_size;
            return Ok(sizes);
        }
        let ratio = new_size / old_size;
        if !sizes[last].is_multiple_of(ratio) {
            return Err(refusal(format!(
                "self.size(-1) must be divisible by {ratio} {}, but got {}",
                describe(),
                sizes[last]
            )));
        }
        if !self.storage_offset().is_multiple_of(ratio) {
            return Err(refusal(format!(
                "self.storage_offset() must be divisible by {ratio} {}, but got {}",
                describe(),
                self.storage_offset()
            )));
        }
        last_stride_must_be_one()?;
        for (dim, &stride) in strides[..last].iter().enumerate() {
            if !stride.is_multiple_of(ratio) {
                return Err(refusal(format!(
                    "self.stride({dim}) must be divisible by {ratio} {}, but got {stride}",
                    describe()
                )));
            }
        }
        sizes[last] /= ratio;
        Ok(sizes)
    }

    /// `view_copy.dtype`: the elements' bytes, in order, read as `dtype` (a contiguous new
    /// tensor with the sizes `view(dtype)` would have).
    pub fn view_dtype_copy(&self, dtype: DType) -> Result<Tensor> {
        let sizes = self.view_dtype_sizes(dtype)?;
        let source = self.contiguous();
        let item = source.dtype().item_size();
        let start = source.storage_offset() * item;
        let bytes = source.storage().to_le_bytes();
        let own = &bytes[start..start + source.numel() * item];
        let storage = Storage::from_bytes(dtype, own, true)?;
        let strides = contiguous_strides(&sizes);
        Tensor::from_storage(storage, 0, sizes, strides)
    }
}

fn contiguous_strides(sizes: &[usize]) -> Vec<usize> {
    let mut strides = vec![1usize; sizes.len()];
    for dim in (0..sizes.len().saturating_sub(1)).rev() {
        strides[dim] = strides[dim + 1] * sizes[dim + 1].max(1);
    }
    strides
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_float_is_four_little_endian_bytes() {
        let x = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
        let bytes = x.view_dtype_copy(DType::UInt8).unwrap();
        assert_eq!(bytes.sizes(), &[4]);
        assert_eq!(bytes.to_vec::<u8>().unwrap(), vec![0, 0, 0x80, 0x3f]);
    }

    #[test]
    fn a_scalar_cannot_change_element_size() {
        let x = Tensor::from_vec(vec![1.0f32], &[]).unwrap();
        let error = x.view_dtype_copy(DType::Float64).unwrap_err().to_string();
        assert!(error.contains("self.dim() cannot be 0 to view Float as Double"));
    }
}
