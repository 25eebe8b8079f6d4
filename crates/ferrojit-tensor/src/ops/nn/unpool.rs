//! Max unpooling (`max_unpool2d`, `max_unpool3d`): scatters each pooled value back to the
//! flat position its index names within its channel's output plane or volume, zeros
//! elsewhere, with the checks and messages of ATen's CPU kernels.

use super::invalid;
use crate::dtype::DType;
use crate::error::{format_shape, Result, TensorError};
use crate::tensor::Tensor;
use crate::Element;

/// The shared scatter: `input` and `indices` of one shape `[..., spatial...]` (the last
/// `output_size.len()` dims spatial), each index a flat position within one output volume.
fn unpool(
    input: &Tensor,
    indices: &Tensor,
    output_size: &[usize],
    op: &'static str,
) -> Result<Tensor> {
    let spatial = output_size.len();
    let leading = &input.sizes()[..input.dim() - spatial];
    let mut out_sizes = leading.to_vec();
    out_sizes.extend_from_slice(output_size);
    let volume: usize = output_size.iter().product();
    let planes: usize = leading.iter().product();
    let per_plane = input.numel().checked_div(planes).unwrap_or(0);
    let positions = indices.to_i64_vec();
    let volume_text = output_size
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join("x");
    if !input.dtype().is_floating_point() {
        return Err(TensorError::NotImplementedForDType {
            op,
            dtype: input.dtype(),
        });
    }
    crate::macros::dispatch_dtype!(input.dtype(), T => {
        let values = input.gather::<T>();
        let mut output = vec![T::from_f64(0.0); planes * volume];
        if volume > 0 {
            for plane in 0..planes {
                for k in 0..per_plane {
                    let at = plane * per_plane + k;
                    let position = positions[at];
                    if position < 0 || position >= volume as i64 {
                        return Err(invalid(format!(
                            "Found an invalid max index: {position} (output volumes are of size {volume_text})"
                        )));
                    }
                    output[plane * volume + position as usize] = values[at];
                }
            }
        }
        Ok(Tensor::from_values(output, &out_sizes))
    })
}

fn require_long_indices(indices: &Tensor) -> Result<()> {
    if indices.dtype() == DType::Int64 {
        return Ok(());
    }
    Err(invalid(format!(
        "elements in indices should be type int64 but got: {}",
        indices.dtype().scalar_type_name()
    )))
}

fn same_shape_and_nonempty(input: &Tensor, indices: &Tensor, kernel: &str) -> Result<()> {
    if input.sizes() != indices.sizes() {
        return Err(invalid(format!(
            "Expected shape of indices to be same as that of the input tensor ({}) but got indices tensor with shape: {}",
            format_shape(input.sizes()),
            format_shape(indices.sizes())
        )));
    }
    for dim in 1..input.dim() {
        if input.sizes()[dim] == 0 {
            return Err(invalid(format!(
                "{kernel}(): Expected input to have non-zero size for non-batch dimensions, but input has sizes {} with dimension {dim} being empty",
                format_shape(input.sizes())
            )));
        }
    }
    Ok(())
}

fn output_extent(output_size: &[i64]) -> Result<Vec<usize>> {
    output_size
        .iter()
        .map(|&s| {
            usize::try_from(s).map_err(|_| {
                invalid(format!(
                    "Trying to create tensor with negative dimension {s}: {output_size:?}"
                ))
            })
        })
        .collect()
}

/// `max_unpool2d(x, indices, output_size)`: `x` is `[C, H, W]` or `[N, C, H, W]`.
pub fn max_unpool2d(input: &Tensor, indices: &Tensor, output_size: &[i64]) -> Result<Tensor> {
    require_long_indices(indices)?;
    if output_size.len() != 2 {
        return Err(invalid(format!(
            "There should be exactly two elements (height, width) in output_size, but got {} elements.",
            output_size.len()
        )));
    }
    if input.dim() != 3 && input.dim() != 4 {
        return Err(invalid(format!(
            "Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor with {} dimensions.",
            input.dim()
        )));
    }
    same_shape_and_nonempty(input, indices, "max_unpooling2d_forward_out_cpu")?;
    unpool(input, indices, &output_extent(output_size)?, "max_unpool2d")
}

/// `max_unpool3d(x, indices, output_size, stride, padding)`: `x` is `[C, D, H, W]` or
/// `[N, C, D, H, W]`; `stride` and `padding` are only checked, as ATen's kernel does.
pub fn max_unpool3d(
    input: &Tensor,
    indices: &Tensor,
    output_size: &[i64],
    stride: &[i64],
    padding: &[i64],
) -> Result<Tensor> {
    require_long_indices(indices)?;
    if input.dim() != 4 && input.dim() != 5 {
        return Err(invalid(format!(
            "Input to max_unpooling3d should be a 4d or 5d Tensor, but got a tensor with {} dimensions.",
            input.dim()
        )));
    }
    if output_size.len() != 3 {
        return Err(invalid(format!(
            "There should be exactly three elements (depth, height, width) in output_size, but got {} elements.",
            output_size.len()
        )));
    }
    if stride.len() != 3 {
        return Err(invalid(format!(
            "There should be exactly three elements (depth, height, width) in stride, but got: {} elements.",
            stride.len()
        )));
    }
    if padding.len() != 3 {
        return Err(invalid(format!(
            "There should be exactly three elements (depth, height, width) in padding, but got: {} elements.",
            padding.len()
        )));
    }
    same_shape_and_nonempty(input, indices, "max_unpooling3d_forward_out_cpu")?;
    if stride.iter().any(|&s| s <= 0) {
        return Err(invalid(format!(
            "strides should be greater than zero, but got stride: {}",
            crate::error::format_shape_i64(stride)
        )));
    }
    unpool(input, indices, &output_extent(output_size)?, "max_unpool3d")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unpooling_places_each_value_at_its_index() {
        let input = Tensor::from_vec(vec![5.0f32, 7.0], &[1, 1, 1, 2]).unwrap();
        let indices = Tensor::from_vec(vec![1i64, 3], &[1, 1, 1, 2]).unwrap();
        let out = max_unpool2d(&input, &indices, &[2, 2]).unwrap();
        assert_eq!(out.sizes(), &[1, 1, 2, 2]);
        assert_eq!(out.to_f64_vec(), vec![0.0, 5.0, 0.0, 7.0]);
        let bad = Tensor::from_vec(vec![1i64, 4], &[1, 1, 1, 2]).unwrap();
        assert!(max_unpool2d(&input, &bad, &[2, 2]).is_err());
    }
}
