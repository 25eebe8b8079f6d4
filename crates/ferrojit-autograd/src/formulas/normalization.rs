//! Derivatives of the normalizations beyond `batch_norm`/`layer_norm`: the native batch-norm
//! entry points (sharing `batch_norm`'s formula), group and instance norm (statistics per
//! sample and channel group) and `rms_norm`, composed from differentiable operators.

use ferrojit_runtime::{IValue, Result};

use super::nn::batch_norm;
use super::support::{connected_to, refuse};
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, mean_dims, mul, reshape, sub, sum_dims};

/// `native_batch_norm` and `_native_batch_norm_legit(input, weight, bias, running_mean,
/// running_var, training, momentum, eps)`: `batch_norm`'s arguments in the same places; only
/// the first output (the normalized input) carries a gradient, as in PyTorch.
fn native_batch_norm(input: &FormulaInput) -> Result<Gradients> {
    batch_norm(input)
}

/// `_native_batch_norm_legit.no_stats(input, weight, bias, training, momentum, eps)`: the
/// batch's own statistics, so `batch_norm` in training with no running statistics.
fn native_batch_norm_no_stats(input: &FormulaInput) -> Result<Gradients> {
    let arguments = vec![
        input.argument(0)?.clone(),
        input.argument(1)?.clone(),
        input.argument(2)?.clone(),
        IValue::None,
        IValue::None,
        IValue::Bool(true),
        input.argument(4)?.clone(),
        input.argument(5)?.clone(),
    ];
    let needed: Vec<bool> = (0..8)
        .map(|index| index < 3 && input.needs(index))
        .collect();
    let mut meta = input.input_meta.to_vec();
    meta.resize(8, Vec::new());
    let shifted = FormulaInput {
        arguments: &arguments,
        grads: input.grads,
        needed: &needed,
        input_meta: &meta,
    };
    let gradients = batch_norm(&shifted)?;
    let mut out = input.none();
    for (index, gradient) in gradients.into_iter().take(3).enumerate() {
        out[index] = gradient;
    }
    Ok(out)
}

/// `[1, C, 1, ...]` view of a per-channel vector for an input of `rank`.
fn channel_view(value: &IValue, rank: usize) -> Result<IValue> {
    let channels = call::sizes(value)?.first().copied().unwrap_or(1);
    let mut sizes = vec![1usize; rank];
    if rank > 1 {
        sizes[1] = channels;
    }
    reshape(value, &sizes)
}

/// Normalization over `[N, groups, rest]` per (sample, group), then a per-channel affine
/// map: the gradients of input, weight and bias (`group_norm`; `instance_norm` with its own
/// statistics is the case of one group per channel).
fn grouped_norm(
    input: &FormulaInput,
    groups: usize,
    weight_index: usize,
    eps: f64,
) -> Result<Gradients> {
    let x = input.argument(0)?;
    let grad = input.grad(0)?;
    let sizes = input.sizes(0)?;
    let rank = sizes.len();
    if rank < 2 || groups == 0 || sizes[1] % groups != 0 {
        return Err(refuse(format!(
            "Expected number of channels in input to be divisible by num_groups, but got \
             input of shape {sizes:?} and num_groups={groups}"
        )));
    }
    let batch = sizes[0];
    let grouped_sizes = [
        batch,
        groups,
        sizes.iter().product::<usize>() / (batch * groups).max(1),
    ];
    let grouped = reshape(x, &grouped_sizes)?;
    let mean = mean_dims(&grouped, &[2], true)?;
    let centered = sub(&grouped, &mean)?;
    let variance = mean_dims(&mul(&centered, &centered)?, &[2], true)?;
    let invstd = call::pow_scalar(&call::add_scalar(&variance, eps)?, -0.5)?;
    let xhat_grouped = mul(&centered, &invstd)?;
    let weight = input.argument(weight_index)?;
    let per_channel_dims: Vec<i64> = (0..rank as i64).filter(|&dim| dim != 1).collect();
    let mut out = input.none();
    if input.needs(0) {
        let scaled = if weight.is_none() {
            grad.clone()
        } else {
            mul(grad, &channel_view(weight, rank)?)?
        };
        let scaled = reshape(&scaled, &grouped_sizes)?;
        let mean_grad = mean_dims(&scaled, &[2], true)?;
        let projection = mean_dims(&mul(&scaled, &xhat_grouped)?, &[2], true)?;
        let inner = sub(
            &sub(&scaled, &mean_grad)?,
            &mul(&xhat_grouped, &projection)?,
        )?;
        out[0] = Some(reshape(&mul(&inner, &invstd)?, &sizes)?);
    }
    if input.needs(weight_index) {
        let xhat = reshape(&xhat_grouped, &sizes)?;
        out[weight_index] = Some(sum_dims(&mul(grad, &xhat)?, &per_channel_dims, false)?);
    }
    if input.needs(weight_index + 1) {
        out[weight_index + 1] = Some(sum_dims(grad, &per_channel_dims, false)?);
    }
    Ok(out)
}

/// `group_norm(input, num_groups, weight, bias, eps, cudnn_enabled)`. In a recorded backward
/// the bias stays connected to its gradient (with a zero derivative), as PyTorch's double
/// backward gives the bias zeros rather than nothing.
fn group_norm(input: &FormulaInput) -> Result<Gradients> {
    let groups = usize::try_from(input.int(1)?).unwrap_or(0);
    let mut out = grouped_norm(input, groups, 2, input.number(4)?)?;
    let bias = input.argument(3)?;
    if let (Some(gradient), IValue::Tensor(_)) = (&out[3], bias) {
        out[3] = Some(connected_to(gradient.clone(), bias)?);
    }
    Ok(out)
}

/// `instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
/// eps, cudnn_enabled)`: per (sample, channel) statistics, or the running ones (then it is
/// `batch_norm` in evaluation, whose arguments sit in the same places).
fn instance_norm(input: &FormulaInput) -> Result<Gradients> {
    if !input.argument(5)?.to_bool()? {
        return batch_norm(input);
    }
    let channels = input.sizes(0)?.get(1).copied().unwrap_or(1);
    grouped_norm(input, channels, 1, input.number(7)?)
}

/// `rms_norm(input, normalized_shape, weight, eps)`: `y = x r w`, `r = (mean(x²) + eps)^-½`
/// over the normalized dims; `eps` defaults to the dtype's machine epsilon.
fn rms_norm(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let grad = input.grad(0)?;
    let sizes = input.sizes(0)?;
    let rank = sizes.len();
    let normalized = input.ints(1)?.len().min(rank);
    let axes: Vec<i64> = ((rank - normalized) as i64..rank as i64).collect();
    let leading: Vec<i64> = (0..(rank - normalized) as i64).collect();
    let eps = match input.argument(3)? {
        IValue::None => {
            if input.dtype(0)? == ferrojit_tensor::DType::Float64 {
                f64::EPSILON
            } else {
                f64::from(f32::EPSILON)
            }
        }
        other => other.to_double()?,
    };
    let mean_square = mean_dims(&mul(x, x)?, &axes, true)?;
    let r = call::pow_scalar(&call::add_scalar(&mean_square, eps)?, -0.5)?;
    let weight = input.argument(2)?;
    let mut out = input.none();
    if input.needs(0) {
        let scaled = if weight.is_none() {
            grad.clone()
        } else {
            mul(grad, weight)?
        };
        let projection = mean_dims(&mul(&scaled, x)?, &axes, true)?;
        let r_cubed = call::pow_scalar(&r, 3.0)?;
        out[0] = Some(sub(
            &mul(&scaled, &r)?,
            &mul(&mul(x, &r_cubed)?, &projection)?,
        )?);
    }
    if input.needs(2) {
        let per_element = mul(&mul(grad, x)?, &r)?;
        out[2] = Some(if leading.is_empty() {
            per_element
        } else {
            sum_dims(&per_element, &leading, false)?
        });
    }
    Ok(out)
}

formula_table![
    (
        "aten::native_batch_norm",
        "NativeBatchNormBackward0",
        native_batch_norm,
        &[0, 1, 3, 4]
    ),
    (
        "aten::_native_batch_norm_legit",
        "NativeBatchNormLegitBackward0",
        native_batch_norm,
        &[0, 1, 3, 4]
    ),
    (
        "aten::_native_batch_norm_legit.no_stats",
        "NativeBatchNormLegitBackward0",
        native_batch_norm_no_stats,
        &[0, 1]
    ),
    (
        "aten::group_norm",
        "NativeGroupNormBackward0",
        group_norm,
        &[0, 2, 3]
    ),
    (
        "aten::instance_norm",
        "NativeBatchNormBackward0",
        instance_norm,
        &[0, 1, 3, 4]
    ),
    ("aten::rms_norm", "RmsNormBackward0", rms_norm, &[0, 2]),
];
