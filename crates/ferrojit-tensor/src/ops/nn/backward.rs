//! Gradient kernels of pooling and embedding (`_adaptive_avg_pool2d_backward`,
//! `avg_pool2d_backward`, `max_pool2d_with_indices_backward`, `embedding_dense_backward`), as
//! PyTorch's CPU kernels compute them: each output gradient is spread over the input
//! positions its forward window read, accumulated in f64 and rounded once to the dtype.

use super::pool::{adaptive_window, lift, planes, pool_params, pooled_size};
use super::{from_f64, invalid, require_float};
use crate::dtype::DType;
use crate::error::{format_shape, Result};
use crate::tensor::Tensor;

/// Fails unless `grad_output` has `expected` sizes from dim `first` on, checking one dim at
/// a time with the message of PyTorch's `check_dim_size` (the pooling backward kernels do not
/// check the batch dim).
pub(super) fn check_grad_shape(
    grad_output: &Tensor,
    expected: &[usize],
    first: usize,
) -> Result<()> {
    for (d, &size) in expected.iter().enumerate().skip(first) {
        let actual = grad_output.sizes().get(d).copied();
        if grad_output.dim() != expected.len() || actual != Some(size) {
            return Err(invalid(format!(
                "Expected a tensor of dimension {} and tensor.size[{d}] == {size} but got: dimension {} and tensor.size[{d}] = {}",
                expected.len(),
                grad_output.dim(),
                actual.map_or_else(|| "?".to_string(), |a| a.to_string())
            )));
        }
    }
    Ok(())
}

/// Fails unless the gradient and the forward input share a dtype (PyTorch allocates the
/// input gradient like `self` and reads `grad_output` as the same scalar type).
fn check_same_dtype(op: &str, grad_output: &Tensor, input: &Tensor) -> Result<DType> {
    let dtype = require_float(input, "pooling_backward")?;
    if grad_output.dtype() != dtype {
        return Err(invalid(format!(
            "{op}: expected grad_output to have dtype {}, but got {}",
            dtype.scalar_type_name(),
            grad_output.dtype().scalar_type_name()
        )));
    }
    Ok(dtype)
}

/// The forward output sizes: `input`'s leading dims, then `spatial`.
fn with_spatial(input: &Tensor, spatial: &[usize]) -> Vec<usize> {
    let mut sizes = input.sizes()[..input.dim() - spatial.len()].to_vec();
    sizes.extend_from_slice(spatial);
    sizes
}

/// `_adaptive_avg_pool2d_backward(grad_output, self)`: each output gradient divided by its
/// window's size and added to every input position of the window.
pub fn adaptive_avg_pool2d_backward(grad_output: &Tensor, input: &Tensor) -> Result<Tensor> {
    let op = "adaptive_avg_pool2d_backward";
    let dtype = check_same_dtype(op, grad_output, input)?;
    let (count, in_sp) = planes(input, 2, op)?;
    if grad_output.dim() != input.dim() {
        return Err(invalid(format!(
            "{op}(): Expected grad_output to have the rank of self ({}), but got {}",
            input.dim(),
            grad_output.dim()
        )));
    }
    let out_sp = grad_output.sizes()[grad_output.dim() - 2..].to_vec();
    if out_sp.contains(&0) {
        return Err(invalid(format!(
            "{op}(): Expected grad_output to have non-zero size for non-batch dimensions, but grad_output has sizes {}",
            format_shape(grad_output.sizes())
        )));
    }
    check_grad_shape(grad_output, &with_spatial(input, &out_sp), input.dim() - 3)?;
    let (ih, iw, oh_, ow_) = (in_sp[0], in_sp[1], out_sp[0], out_sp[1]);
    let go = grad_output.to_f64_vec();
    let mut grad = vec![0.0; count * ih * iw];
    for plane in 0..count {
        let src = &go[plane * oh_ * ow_..][..oh_ * ow_];
        let dst = &mut grad[plane * ih * iw..][..ih * iw];
        for oh in 0..oh_ {
            let (h0, h1) = adaptive_window(oh, ih, oh_);
            for ow in 0..ow_ {
                let (w0, w1) = adaptive_window(ow, iw, ow_);
                let delta = src[oh * ow_ + ow] / ((h1 - h0) * (w1 - w0)) as f64;
                for h in h0..h1 {
                    for slot in &mut dst[h * iw + w0..h * iw + w1] {
                        *slot += delta;
                    }
                }
            }
        }
    }
    Ok(from_f64(grad, input.sizes(), dtype))
}

/// `avg_pool2d_backward`: each output gradient divided as the forward divided its window
/// (`divisor_override`, or the window's size with or without the padding) and added to every
/// input position of the window.
#[allow(clippy::too_many_arguments)]
pub fn avg_pool2d_backward(
    grad_output: &Tensor,
    input: &Tensor,
    kernel: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<Tensor> {
    let op = "avg_pool2d_backward";
    let dtype = check_same_dtype(op, grad_output, input)?;
    if divisor_override == Some(0) {
        return Err(invalid("divisor must be not zero"));
    }
    let p = pool_params(2, kernel, stride, padding, &[1])?;
    let (count, in_sp) = planes(input, 2, op)?;
    let out_sp = (0..2)
        .map(|i| {
            pooled_size(
                in_sp[i],
                p.kernel[i],
                p.padding[i],
                p.stride[i],
                1,
                ceil_mode,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    check_grad_shape(grad_output, &with_spatial(input, &out_sp), input.dim() - 3)?;
    let (ih, iw, oh_, ow_) = (in_sp[0] as i64, in_sp[1] as i64, out_sp[0], out_sp[1]);
    let (kh, kw) = (p.kernel[0] as i64, p.kernel[1] as i64);
    let (sh, sw) = (p.stride[0] as i64, p.stride[1] as i64);
    let (ph, pw) = (p.padding[0] as i64, p.padding[1] as i64);
    let go = grad_output.to_f64_vec();
    let plane_len = (ih * iw) as usize;
    let mut grad = vec![0.0; count * plane_len];
    for plane in 0..count {
        let src = &go[plane * oh_ * ow_..][..oh_ * ow_];
        let dst = &mut grad[plane * plane_len..][..plane_len];
        for oh in 0..oh_ {
            for ow in 0..ow_ {
                let mut h0 = oh as i64 * sh - ph;
                let mut w0 = ow as i64 * sw - pw;
                let mut h1 = (h0 + kh).min(ih + ph);
                let mut w1 = (w0 + kw).min(iw + pw);
                let padded = (h1 - h0) * (w1 - w0);
                h0 = h0.max(0);
                w0 = w0.max(0);
                h1 = h1.min(ih);
                w1 = w1.min(iw);
                if h0 >= h1 || w0 >= w1 {
                    continue;
                }
                let divisor = match divisor_override {
                    Some(d) => d,
                    None if count_include_pad => padded,
                    None => (h1 - h0) * (w1 - w0),
                };
                let delta = src[oh * ow_ + ow] / divisor as f64;
                for h in h0..h1 {
                    for w in w0..w1 {
                        dst[(h * iw + w) as usize] += delta;
                    }
                }
            }
        }
    }
    Ok(from_f64(grad, input.sizes(), dtype))
}

/// `max_pool2d_with_indices_backward`: each output gradient added at the input position its
/// index names (an index into the flattened input plane, as `max_pool2d_with_indices` gives).
#[allow(clippy::too_many_arguments)]
pub fn max_pool2d_with_indices_backward(
    grad_output: &Tensor,
    input: &Tensor,
    kernel: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
    indices: &Tensor,
) -> Result<Tensor> {
    let op = "max_pool2d_with_indices_backward";
    let dtype = check_same_dtype(op, grad_output, input)?;
    if indices.dtype() != DType::Int64 {
        return Err(invalid(format!(
            "{op}: expected indices to have dtype Long, but got {}",
            indices.dtype().scalar_type_name()
        )));
    }
    let p = pool_params(2, kernel, stride, padding, dilation)?;
    let (count, in_sp) = planes(input, 2, op)?;
    let out_sp = (0..2)
        .map(|i| {
            pooled_size(
                in_sp[i],
                p.kernel[i],
                p.padding[i],
                p.stride[i],
                p.dilation[i],
                ceil_mode,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let out_sizes = with_spatial(input, &out_sp);
    check_grad_shape(grad_output, &out_sizes, input.dim() - 3)?;
    if indices.sizes() != out_sizes.as_slice() {
        return Err(invalid(format!(
            "{op}: expected indices of size {}, but got indices of size {}",
            format_shape(&out_sizes),
            format_shape(indices.sizes())
        )));
    }
    let plane_len: usize = lift(&in_sp, 1).iter().product();
    let out_len = out_sp[0] * out_sp[1];
    let go = grad_output.to_f64_vec();
    let at = indices.to_i64_vec();
    let mut grad = vec![0.0; count * plane_len];
    for plane in 0..count {
        for o in 0..out_len {
            let index = at[plane * out_len + o];
            let slot = usize::try_from(index)
                .ok()
                .filter(|&i| i < plane_len)
                .ok_or_else(|| {
                    invalid(format!(
                        "{op}: index {index} is out of bounds for an input plane of {plane_len} elements"
                    ))
                })?;
            grad[plane * plane_len + slot] += go[plane * out_len + o];
        }
    }
    Ok(from_f64(grad, input.sizes(), dtype))
}

/// `embedding_dense_backward`: row `i` of the gradient is the sum of the gradient rows whose
/// index is `i` (none for `padding_idx`), each divided by how often `i` occurs when
/// `scale_grad_by_freq`.
pub fn embedding_dense_backward(
    grad_output: &Tensor,
    indices: &Tensor,
    num_weights: i64,
    padding_idx: i64,
    scale_grad_by_freq: bool,
) -> Result<Tensor> {
    if !matches!(indices.dtype(), DType::Int64 | DType::Int32) {
        return Err(invalid(format!(
            "Expected tensor for argument #2 'indices' to have one of the following scalar types: Long, Int; but got {} instead (while checking arguments for embedding_backward)",
            super::misc::legacy_name(indices.dtype())
        )));
    }
    let dtype = require_float(grad_output, "embedding_dense_backward")?;
    let rows = usize::try_from(num_weights).map_err(|_| {
        invalid(format!(
            "num_weights must be non-negative, got {num_weights}"
        ))
    })?;
    let width = if grad_output.dim() == 0 {
        1
    } else {
        grad_output.sizes()[grad_output.dim() - 1]
    };
    let count = indices.numel();
    if grad_output.numel() != count * width {
        return Err(invalid(format!(
            "embedding_dense_backward: grad_output of size {} does not hold one row of {width} for each of the {count} indices",
            format_shape(grad_output.sizes())
        )));
    }
    let at = indices.to_i64_vec();
    let mut frequency = vec![0usize; rows];
    for &index in &at {
        let row = usize::try_from(index)
            .ok()
            .filter(|&r| r < rows)
            .ok_or_else(|| {
                invalid(format!(
                    "embedding_dense_backward: index {index} is out of range for {rows} rows"
                ))
            })?;
        frequency[row] += 1;
    }
    let go = grad_output.to_f64_vec();
    let mut grad = vec![0.0; rows * width];
    for (position, &index) in at.iter().enumerate() {
        if index == padding_idx {
            continue;
        }
        let row = index as usize;
        let scale = if scale_grad_by_freq {
            1.0 / frequency[row] as f64
        } else {
            1.0
        };
        let src = &go[position * width..][..width];
        for (slot, &g) in grad[row * width..][..width].iter_mut().zip(src) {
            *slot += g * scale;
        }
    }
    Ok(from_f64(grad, &[rows, width], dtype))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(values: Vec<f64>, sizes: &[usize]) -> Tensor {
        Tensor::from_vec(values, sizes).unwrap()
    }

    /// The gradient of a sum over the pooled output: every input position gets the sum of
    /// 1/window over the windows that read it, so the total equals the number of outputs.
    #[test]
    fn adaptive_average_gradients_add_up_to_the_output_count() {
        let input = tensor(vec![0.0; 2 * 5 * 7], &[2, 5, 7]);
        let grad_output = tensor(vec![1.0; 2 * 3 * 4], &[2, 3, 4]);
        let grad = adaptive_avg_pool2d_backward(&grad_output, &input).unwrap();
        assert_eq!(grad.sizes(), &[2, 5, 7]);
        let total: f64 = grad.to_f64_vec().iter().sum();
        assert!((total - 24.0).abs() < 1e-12, "{total}");
    }

    #[test]
    fn max_pool_backward_refuses_indices_outside_the_plane() {
        let input = tensor(vec![0.0; 4], &[1, 2, 2]);
        let grad_output = tensor(vec![1.0], &[1, 1, 1]);
        let indices = Tensor::from_vec(vec![7i64], &[1, 1, 1]).unwrap();
        let error = max_pool2d_with_indices_backward(
            &grad_output,
            &input,
            &[2],
            &[2],
            &[0],
            &[1],
            false,
            &indices,
        )
        .unwrap_err();
        assert!(error.to_string().contains("out of bounds"), "{error}");
    }

    #[test]
    fn embedding_backward_skips_padding_and_scales_by_frequency() {
        let grad_output = tensor(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]);
        let indices = Tensor::from_vec(vec![1i64, 1, 0], &[3]).unwrap();
        let grad = embedding_dense_backward(&grad_output, &indices, 3, 0, true).unwrap();
        assert_eq!(grad.to_f64_vec(), vec![0.0, 0.0, 2.0, 3.0, 0.0, 0.0]);
        let outside = Tensor::from_vec(vec![3i64, 0, 0], &[3]).unwrap();
        assert!(embedding_dense_backward(&grad_output, &outside, 3, -1, false).is_err());
    }
}
