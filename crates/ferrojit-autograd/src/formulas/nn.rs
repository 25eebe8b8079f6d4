//! Neural-network operators: `convolution` and 2-d pooling (through the backward kernels the
//! runtime has), batch and layer norm and the losses (composed from differentiable ops, so
//! they can be differentiated twice), dropout when it is the identity.

use ferrojit_ir::Type;
use ferrojit_runtime::{IValue, Result, RuntimeError};

use super::reduction::log_softmax_backward;
use super::{Formula, FormulaInput, Gradients};
use crate::call::{
    self, call, call1, int, mask_like, mean_dims, mul, reshape, scale, sub, sum_dims,
};

fn bools(values: &[bool]) -> IValue {
    IValue::list(
        Type::Bool,
        values.iter().map(|&v| IValue::Bool(v)).collect(),
    )
}

/// `convolution_backward` for `conv2d`/`convolution` (first-order only: the backward
/// kernel itself has no formula).
fn convolution_gradients(
    input: &FormulaInput,
    transposed: bool,
    output_padding: IValue,
) -> Result<Gradients> {
    let bias_sizes = if input.argument(2)?.is_none() && !input.needs(2) {
        IValue::None
    } else {
        call::sizes_of(&input.sizes(2)?)
    };
    let results = call(
        "aten::convolution_backward",
        vec![
            input.grad(0)?.clone(),
            input.argument(0)?.clone(),
            input.argument(1)?.clone(),
            bias_sizes,
            input.argument(3)?.clone(),
            input.argument(4)?.clone(),
            input.argument(5)?.clone(),
            IValue::Bool(transposed),
            output_padding,
            input.argument(8)?.clone(),
            bools(&[input.needs(0), input.needs(1), input.needs(2)]),
        ],
    )?;
    let mut out = input.none();
    for (index, value) in results.into_iter().enumerate().take(3) {
        if input.needs(index) && !value.is_none() {
            out[index] = Some(value);
        }
    }
    Ok(out)
}

/// `convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
/// groups)`.
fn convolution(input: &FormulaInput) -> Result<Gradients> {
    let transposed = input.argument(6)?.to_bool()?;
    convolution_gradients(input, transposed, input.argument(7)?.clone())
}

pub(super) fn max_pool2d(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?.clone();
    let arguments: Vec<IValue> = (1..6)
        .map(|index| input.argument(index).cloned())
        .collect::<Result<_>>()?;
    let indices = {
        let _no_grad = ferrojit_runtime::autograd::GradModeGuard::new(false);
        let mut call_arguments = vec![x.clone()];
        call_arguments.extend(arguments.iter().cloned());
        call("aten::max_pool2d_with_indices", call_arguments)?
            .into_iter()
            .nth(1)
            .ok_or_else(|| RuntimeError::Other("max_pool2d_with_indices: no indices".into()))?
    };
    let mut backward_arguments = vec![input.grad(0)?.clone(), x];
    backward_arguments.extend(arguments);
    backward_arguments.push(indices);
    let mut out = input.none();
    out[0] = Some(call1(
        "aten::max_pool2d_with_indices_backward",
        backward_arguments,
    )?);
    Ok(out)
}

fn avg_pool2d(input: &FormulaInput) -> Result<Gradients> {
    let mut arguments = vec![input.grad(0)?.clone()];
    for index in 0..7 {
        arguments.push(input.argument(index)?.clone());
    }
    let mut out = input.none();
    out[0] = Some(call1("aten::avg_pool2d_backward", arguments)?);
    Ok(out)
}

fn adaptive_avg_pool2d(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(call1(
        "aten::_adaptive_avg_pool2d_backward",
        vec![input.grad(0)?.clone(), input.argument(0)?.clone()],
    )?);
    Ok(out)
}

/// Reshapes a per-channel vector `[C]` to broadcast over `[N, C, ...]`.
fn per_channel(value: &IValue, rank: usize) -> Result<IValue> {
    let channels = call::sizes(value)?.first().copied().unwrap_or(1);
    let mut sizes = vec![1usize; rank];
    if rank > 1 {
        sizes[1] = channels;
    }
    reshape(value, &sizes)
}

/// `batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
/// cudnn_enabled)`. Training: statistics of the batch; evaluation: the running ones.
pub(super) fn batch_norm(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let grad = input.grad(0)?;
    let sizes = input.sizes(0)?;
    let rank = sizes.len();
    let training = input.argument(5)?.to_bool()?;
    let eps = input.number(7)?;
    if !ferrojit_runtime::autograd::is_grad_enabled() {
        // A backward that is not itself recorded (no `create_graph`) runs the fused kernel:
        // two passes per channel instead of a dozen broadcasting tensor operations.
        return batch_norm_kernel_gradients(input, training, eps);
    }
    let reduce: Vec<i64> = (0..rank as i64).filter(|&dim| dim != 1).collect();
    let (mean, variance) = if training {
        let mean = mean_dims(x, &reduce, true)?;
        let centered = sub(x, &mean)?;
        let variance = mean_dims(&mul(&centered, &centered)?, &reduce, true)?;
        (mean, variance)
    } else {
        (
            per_channel(input.argument(3)?, rank)?,
            per_channel(input.argument(4)?, rank)?,
        )
    };
    let invstd = call::pow_scalar(&call::add_scalar(&variance, eps)?, -0.5)?;
    let xhat = mul(&sub(x, &mean)?, &invstd)?;
    let weight = input.argument(1)?;
    let mut out = input.none();
    if input.needs(0) {
        let scaled_grad = if weight.is_none() {
            grad.clone()
        } else {
            mul(grad, &per_channel(weight, rank)?)?
        };
        out[0] = Some(if training {
            // invstd * (g - mean(g) - xhat * mean(g * xhat))
            let mean_grad = mean_dims(&scaled_grad, &reduce, true)?;
            let projection = mean_dims(&mul(&scaled_grad, &xhat)?, &reduce, true)?;
            let centered = sub(&sub(&scaled_grad, &mean_grad)?, &mul(&xhat, &projection)?)?;
            mul(&centered, &invstd)?
        } else {
            mul(&scaled_grad, &invstd)?
        });
    }
    if input.needs(1) {
        out[1] = Some(sum_dims(&mul(grad, &xhat)?, &reduce, false)?);
    }
    if input.needs(2) {
        out[2] = Some(sum_dims(grad, &reduce, false)?);
    }
    Ok(out)
}

/// `batch_norm`'s gradients from ferrojit-tensor's batch norm backward kernel (not
/// differentiable again: only for a backward that is not being recorded).
fn batch_norm_kernel_gradients(
    input: &FormulaInput,
    training: bool,
    eps: f64,
) -> Result<Gradients> {
    use ferrojit_tensor::ops::nn::batch_norm_backward::{batch_norm_backward, BatchNormStatistics};
    let x = call::tensor(input.argument(0)?)?;
    let grad = call::tensor(input.grad(0)?)?;
    let optional = |index: usize| -> Result<Option<std::sync::Arc<ferrojit_tensor::Tensor>>> {
        let value = input.argument(index)?;
        if value.is_none() {
            Ok(None)
        } else {
            call::tensor(value).map(Some)
        }
    };
    let weight = optional(1)?;
    let (running_mean, running_var) = (optional(3)?, optional(4)?);
    let statistics = match (training, &running_mean, &running_var) {
        (true, _, _) => BatchNormStatistics::FromInput,
        (false, Some(mean), Some(variance)) => BatchNormStatistics::Running { mean, variance },
        (false, _, _) => {
            return Err(super::support::refuse(
                "running_mean and running_var must be defined in evaluation mode",
            ))
        }
    };
    let mask = [input.needs(0), input.needs(1), input.needs(2)];
    let (grad_input, grad_weight, grad_bias) =
        batch_norm_backward(&grad, &x, weight.as_deref(), statistics, eps, mask)?;
    let mut out = input.none();
    out[0] = grad_input.map(call::fresh);
    out[1] = grad_weight.map(call::fresh);
    out[2] = grad_bias.map(call::fresh);
    Ok(out)
}

/// `layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable)`.
fn layer_norm(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let grad = input.grad(0)?;
    let sizes = input.sizes(0)?;
    let normalized = input.ints(1)?.len();
    let rank = sizes.len();
    let axes: Vec<i64> = ((rank - normalized) as i64..rank as i64).collect();
    let leading: Vec<i64> = (0..(rank - normalized) as i64).collect();
    let eps = input.number(4)?;
    let mean = mean_dims(x, &axes, true)?;
    let centered = sub(x, &mean)?;
    let variance = mean_dims(&mul(&centered, &centered)?, &axes, true)?;
    let invstd = call::pow_scalar(&call::add_scalar(&variance, eps)?, -0.5)?;
    let xhat = mul(&centered, &invstd)?;
    let weight = input.argument(2)?;
    let mut out = input.none();
    if input.needs(0) {
        let scaled_grad = if weight.is_none() {
            grad.clone()
        } else {
            mul(grad, weight)?
        };
        let mean_grad = mean_dims(&scaled_grad, &axes, true)?;
        let projection = mean_dims(&mul(&scaled_grad, &xhat)?, &axes, true)?;
        let inner = sub(&sub(&scaled_grad, &mean_grad)?, &mul(&xhat, &projection)?)?;
        out[0] = Some(mul(&inner, &invstd)?);
    }
    let reduce_leading = |value: IValue| -> Result<IValue> {
        if leading.is_empty() {
            Ok(value)
        } else {
            sum_dims(&value, &leading, false)
        }
    };
    if input.needs(2) {
        out[2] = Some(reduce_leading(mul(grad, &xhat)?)?);
    }
    if input.needs(3) {
        out[3] = Some(reduce_leading(grad.clone())?);
    }
    Ok(out)
}

/// `dropout(input, p, train)`: the identity when not training or `p == 0`; the mask of a
/// random dropout is not kept, so its gradient is refused rather than guessed.
pub fn dropout(input: &FormulaInput) -> Result<Gradients> {
    let p = input.number(1)?;
    let train = input.argument(2)?.to_bool()?;
    if train && p > 0.0 {
        return Err(RuntimeError::Other(
            "the derivative for 'dropout' with p > 0 in training is not implemented.".into(),
        ));
    }
    super::pointwise::identity(input)
}

/// The loss reductions: 0 none, 1 mean, 2 sum.
fn reduce_grad(grad: &IValue, reduction: i64, count: usize) -> Result<IValue> {
    match reduction {
        1 => scale(grad, 1.0 / count.max(1) as f64),
        _ => Ok(grad.clone()),
    }
}

fn mse_loss(input: &FormulaInput) -> Result<Gradients> {
    let difference = sub(input.argument(0)?, input.argument(1)?)?;
    let count: usize = input.sizes(0)?.iter().product();
    let grad = reduce_grad(input.grad(0)?, input.int(2)?, count)?;
    let gradient = mul(&scale(&difference, 2.0)?, &grad)?;
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(call::sum_to(&gradient, &input.sizes(0)?)?);
    }
    if input.needs(1) {
        out[1] = Some(call::sum_to(&call::neg(&gradient)?, &input.sizes(1)?)?);
    }
    Ok(out)
}

/// The gradient of `nll_loss(log_probabilities, target, weight, reduction, ignore_index)`
/// with respect to the log-probabilities (class dim 1, or 0 for an unbatched input).
fn nll_gradient(
    sizes: &[usize],
    dtype: ferrojit_tensor::DType,
    target: &IValue,
    weight: &IValue,
    reduction: i64,
    ignore_index: i64,
    grad: &IValue,
) -> Result<IValue> {
    let class_dim: i64 = if sizes.len() == 1 { 0 } else { 1 };
    let ignored = call1("aten::eq.Scalar", vec![target.clone(), int(ignore_index)])?;
    let safe_target = call1(
        "aten::masked_fill.Scalar",
        vec![target.clone(), ignored.clone(), int(0)],
    )?;
    let kept = call::rsub_scalar(&mask_like(&ignored, grad)?, 1.0)?;
    let target_weight = if weight.is_none() {
        kept
    } else {
        let flat = reshape(&safe_target, &[call::tensor(&safe_target)?.numel()])?;
        let picked = call1("aten::index_select", vec![weight.clone(), int(0), flat])?;
        let picked = reshape(&picked, &call::sizes(&safe_target)?)?;
        mul(&picked, &kept)?
    };
    let per_element = match reduction {
        0 => mul(grad, &target_weight)?,
        1 => {
            let total = call1("aten::sum", vec![target_weight.clone()])?;
            mul(&call::div(grad, &total)?, &target_weight)?
        }
        _ => mul(grad, &target_weight)?,
    };
    let zeros = call::zeros(sizes, dtype)?;
    let index = call1("aten::unsqueeze", vec![safe_target, int(class_dim)])?;
    let source = call1(
        "aten::unsqueeze",
        vec![call::neg(&per_element)?, int(class_dim)],
    )?;
    call1(
        "aten::scatter.src",
        vec![zeros, int(class_dim), index, source],
    )
}

fn nll_loss(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(nll_gradient(
        &input.sizes(0)?,
        input.dtype(0)?,
        input.argument(1)?,
        input.argument(2)?,
        input.int(3)?,
        input.int(4)?,
        input.grad(0)?,
    )?);
    Ok(out)
}

/// `cross_entropy_loss(self, target, weight, reduction, ignore_index, label_smoothing)`:
/// `nll_loss(log_softmax(self, 1))`, class-index targets, no label smoothing.
fn cross_entropy(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let target = input.argument(1)?;
    if call::tensor(target)?.dtype().is_floating_point() {
        return cross_entropy_probabilities(input);
    }
    if input.number(5)? != 0.0 {
        return Err(RuntimeError::Other(
            "the derivative for 'cross_entropy_loss' with label_smoothing is not implemented."
                .into(),
        ));
    }
    let log_grad = nll_gradient(
        &sizes,
        input.dtype(0)?,
        target,
        input.argument(2)?,
        input.int(3)?,
        input.int(4)?,
        input.grad(0)?,
    )?;
    let class_dim = if sizes.len() == 1 { 0 } else { 1 };
    let mut out = input.none();
    out[0] = Some(log_softmax_backward(
        input.argument(0)?,
        &log_grad,
        class_dim,
    )?);
    Ok(out)
}

/// `cross_entropy_loss` with class-probability targets, PyTorch's composite
/// `-(log_softmax(self) * t * weight)` summed over the class dim, reduced (a mean divides by
/// the number of samples), with `t = target (1 - s) + s / C` for label smoothing `s`.
fn cross_entropy_probabilities(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let sizes = input.sizes(0)?;
    let class_dim: usize = if sizes.len() == 1 { 0 } else { 1 };
    let classes = sizes.get(class_dim).copied().unwrap_or(1);
    let smoothing = input.number(5)?;
    let target = input.argument(1)?;
    let smoothed = if smoothing > 0.0 {
        call::add_scalar(&scale(target, 1.0 - smoothing)?, smoothing / classes as f64)?
    } else {
        target.clone()
    };
    let weight = input.argument(2)?;
    let grad = input.grad(0)?;
    let reaching = match input.int(3)? {
        0 => call1("aten::unsqueeze", vec![grad.clone(), int(class_dim as i64)])?,
        1 => {
            let samples = sizes.iter().product::<usize>() / classes.max(1);
            scale(grad, 1.0 / samples.max(1) as f64)?
        }
        _ => grad.clone(),
    };
    let weighted = if weight.is_none() {
        reaching
    } else {
        let mut shape = vec![1usize; sizes.len()];
        shape[class_dim] = classes;
        mul(&reaching, &reshape(weight, &shape)?)?
    };
    let mut out = input.none();
    if input.needs(0) {
        let log_grad = call::neg(&mul(&smoothed, &weighted)?)?;
        out[0] = Some(log_softmax_backward(x, &log_grad, class_dim as i64)?);
    }
    if input.needs(1) {
        let log_probabilities = call1(
            "aten::log_softmax.int",
            vec![x.clone(), int(class_dim as i64)],
        )?;
        let gradient = call::neg(&mul(&log_probabilities, &weighted)?)?;
        out[1] = Some(if smoothing > 0.0 {
            scale(&gradient, 1.0 - smoothing)?
        } else {
            gradient
        });
    }
    Ok(out)
}

pub const FORMULAS: &[(&str, Formula)] = &[
    (
        "aten::convolution",
        Formula {
            name: "ConvolutionBackward0",
            saves: &[0, 1],
            apply: convolution,
        },
    ),
    (
        "aten::max_pool2d",
        Formula {
            name: "MaxPool2DWithIndicesBackward0",
            saves: &[0],
            apply: max_pool2d,
        },
    ),
    (
        "aten::avg_pool2d",
        Formula {
            name: "AvgPool2DBackward0",
            saves: &[0],
            apply: avg_pool2d,
        },
    ),
    (
        "aten::adaptive_avg_pool2d",
        Formula {
            name: "AdaptiveAvgPool2DBackward0",
            saves: &[0],
            apply: adaptive_avg_pool2d,
        },
    ),
    (
        "aten::batch_norm",
        Formula {
            name: "NativeBatchNormBackward0",
            saves: &[0, 1, 3, 4],
            apply: batch_norm,
        },
    ),
    (
        "aten::layer_norm",
        Formula {
            name: "NativeLayerNormBackward0",
            saves: &[0, 2],
            apply: layer_norm,
        },
    ),
    (
        "aten::mse_loss",
        Formula {
            name: "MseLossBackward0",
            saves: &[0, 1],
            apply: mse_loss,
        },
    ),
    (
        "aten::nll_loss",
        Formula {
            name: "NllLossBackward0",
            saves: &[1, 2],
            apply: nll_loss,
        },
    ),
    (
        "aten::nll_loss_nd",
        Formula {
            name: "NllLossBackward0",
            saves: &[1, 2],
            apply: nll_loss,
        },
    ),
    (
        "aten::cross_entropy_loss",
        Formula {
            name: "NllLossBackward0",
            saves: &[0, 1, 2],
            apply: cross_entropy,
        },
    ),
];
