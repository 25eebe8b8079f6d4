//! Gradient operators of the core ATen set (`*_backward` of pooling, embedding, layer and
//! group normalization and convolution), which programs exported for training (or
//! decomposed with their backward graphs) call. Kernels live in ferrojit-tensor's
//! `ops::nn::{backward, norm_backward, conv_backward}`; a gradient that `output_mask` does not
//! ask for comes back as None, as ATen's undefined tensor reaches Python.

use std::sync::Arc;

use ferrojit_tensor::ops::nn::conv_backward::{convolution_backward, ConvGeometry};
use ferrojit_tensor::ops::nn::{backward, norm_backward};
use ferrojit_tensor::{Tensor, TensorError};

use super::binding::{out_from_functional, typed};
use super::nn_ops::{Unused, Wide};
use crate::error::Result;
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// A `bool[3] output_mask`.
fn output_mask(mask: &[bool]) -> Result<[bool; 3]> {
    match mask {
        [a, b, c] => Ok([*a, *b, *c]),
        _ => Err(TensorError::InvalidArgument(format!(
            "output_mask must hold 3 values, but got {}",
            mask.len()
        ))
        .into()),
    }
}

/// Three optional gradients as the operator's three results (None where not computed).
fn three_results(gradients: (Option<Tensor>, Option<Tensor>, Option<Tensor>)) -> Vec<IValue> {
    let value = |gradient: Option<Tensor>| gradient.map_or(IValue::None, IValue::from);
    vec![value(gradients.0), value(gradients.1), value(gradients.2)]
}

fn adaptive_avg_pool2d_backward(grad_output: Input, input: Input) -> Result<Tensor> {
    Ok(backward::adaptive_avg_pool2d_backward(
        &grad_output,
        &input,
    )?)
}

#[allow(clippy::too_many_arguments)]
fn avg_pool2d_backward(
    grad_output: Input,
    input: Input,
    kernel_size: Vec<i64>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<Tensor> {
    Ok(backward::avg_pool2d_backward(
        &grad_output,
        &input,
        &kernel_size,
        &stride,
        &padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
    )?)
}

#[allow(clippy::too_many_arguments)]
fn max_pool2d_with_indices_backward(
    grad_output: Input,
    input: Input,
    kernel_size: Vec<i64>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    ceil_mode: bool,
    indices: Input,
) -> Result<Tensor> {
    Ok(backward::max_pool2d_with_indices_backward(
        &grad_output,
        &input,
        &kernel_size,
        &stride,
        &padding,
        &dilation,
        ceil_mode,
        &indices,
    )?)
}

fn embedding_dense_backward(
    grad_output: Input,
    indices: Input,
    num_weights: i64,
    padding_idx: i64,
    scale_grad_by_freq: bool,
) -> Result<Tensor> {
    Ok(backward::embedding_dense_backward(
        &grad_output,
        &indices,
        num_weights,
        padding_idx,
        scale_grad_by_freq,
    )?)
}

#[allow(clippy::too_many_arguments)]
fn native_layer_norm_backward(
    grad_out: Input,
    input: Input,
    normalized_shape: Vec<i64>,
    mean: Input,
    rstd: Input,
    weight: Option<Input>,
    bias: Option<Input>,
    mask: Vec<bool>,
) -> Result<Vec<IValue>> {
    Ok(three_results(norm_backward::native_layer_norm_backward(
        &grad_out,
        &input,
        &normalized_shape,
        &mean,
        &rstd,
        weight.as_deref(),
        bias.as_deref(),
        output_mask(&mask)?,
    )?))
}

#[allow(clippy::too_many_arguments)]
fn native_group_norm_backward(
    grad_out: Input,
    input: Input,
    mean: Input,
    rstd: Input,
    weight: Option<Input>,
    batch: i64,
    channels: i64,
    inner: i64,
    group: i64,
    mask: Vec<bool>,
) -> Result<Vec<IValue>> {
    Ok(three_results(norm_backward::native_group_norm_backward(
        &grad_out,
        &input,
        &mean,
        &rstd,
        weight.as_deref(),
        [batch, channels, inner],
        group,
        output_mask(&mask)?,
    )?))
}

/// `convolution_backward`; `bias_sizes` only says whether the forward had a bias, which
/// `output_mask[2]` already says.
#[allow(clippy::too_many_arguments)]
fn convolution_backward_op(
    grad_output: Input,
    input: Input,
    weight: Input,
    _bias_sizes: Unused,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    transposed: bool,
    output_padding: Vec<i64>,
    groups: i64,
    mask: Vec<bool>,
) -> Result<Vec<IValue>> {
    let geometry = ConvGeometry {
        stride: &stride,
        padding: &padding,
        dilation: &dilation,
        transposed,
        output_padding: &output_padding,
        groups,
    };
    Ok(three_results(convolution_backward(
        &grad_output,
        &input,
        &weight,
        &geometry,
        output_mask(&mask)?,
    )?))
}

pub fn declarations() -> Vec<OperatorDeclaration> {
    #[rustfmt::skip]
    let declarations = vec![
        typed("aten::_adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> Tensor", adaptive_avg_pool2d_backward),
        out_from_functional("aten::_adaptive_avg_pool2d_backward.out(Tensor grad_output, Tensor self, *, Tensor(a!) out) -> Tensor(a!)", adaptive_avg_pool2d_backward),
        typed("aten::avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor", avg_pool2d_backward),
        out_from_functional("aten::avg_pool2d_backward.grad_input(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, bool ceil_mode, bool count_include_pad, int? divisor_override, *, Tensor(a!) grad_input) -> Tensor(a!)", avg_pool2d_backward),
        typed("aten::max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor", max_pool2d_with_indices_backward),
        out_from_functional("aten::max_pool2d_with_indices_backward.grad_input(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices, *, Tensor(a!) grad_input) -> Tensor(a!)", max_pool2d_with_indices_backward),
        typed("aten::embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, SymInt padding_idx, bool scale_grad_by_freq) -> Tensor", embedding_dense_backward),
        out_from_functional("aten::embedding_dense_backward.out(Tensor grad_output, Tensor indices, SymInt num_weights, SymInt padding_idx, bool scale_grad_by_freq, *, Tensor(a!) out) -> Tensor(a!)", embedding_dense_backward),
        typed("aten::native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)", native_layer_norm_backward),
        typed("aten::native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, Tensor rstd, Tensor? weight, SymInt N, SymInt C, SymInt HxW, int group, bool[3] output_mask) -> (Tensor, Tensor, Tensor)", Wide(native_group_norm_backward)),
        typed("aten::convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? bias_sizes, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, bool[3] output_mask) -> (Tensor, Tensor, Tensor)", Wide(convolution_backward_op)),
    ];
    declarations
}
