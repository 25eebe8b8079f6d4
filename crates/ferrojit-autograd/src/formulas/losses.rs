//! Derivatives of the elementwise losses beyond `mse_loss`: `l1_loss`, `smooth_l1_loss`,
//! `huber_loss`, `binary_cross_entropy` (with and without logits) and `kl_div`, for both the
//! input and the target, after PyTorch's `*_backward` kernels (reduction 0 none, 1 mean,
//! 2 sum: a mean divides by the element count).

use ferrojit_runtime::{IValue, Result};

use super::support::{against, binary, fill_where};
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call1, mul, scale, sub, sum_to};

/// The output gradient as it reaches each element: divided by the count for a mean.
fn per_element(input: &FormulaInput, reduction_index: usize) -> Result<IValue> {
    let grad = input.grad(0)?;
    match input.int(reduction_index)? {
        1 => {
            let sizes = super::support::broadcast_shape(&input.sizes(0)?, &input.sizes(1)?)?;
            let count: usize = sizes.iter().product();
            scale(grad, 1.0 / count.max(1) as f64)
        }
        _ => Ok(grad.clone()),
    }
}

/// `self`'s gradient is `gradient`, the target's its negation (losses of `self - target`).
fn of_difference(input: &FormulaInput, gradient: IValue) -> Result<Gradients> {
    let mut out = input.none();
    if input.needs(1) {
        out[1] = Some(sum_to(&call::neg(&gradient)?, &input.sizes(1)?)?);
    }
    if input.needs(0) {
        out[0] = Some(sum_to(&gradient, &input.sizes(0)?)?);
    }
    Ok(out)
}

/// `l1_loss(self, target, reduction) = |self - target|`: `sgn(self - target)`.
fn l1_loss(input: &FormulaInput) -> Result<Gradients> {
    let difference = sub(input.argument(0)?, input.argument(1)?)?;
    let sign = call::unary("aten::sgn", &difference)?;
    let gradient = mul(&sign, &per_element(input, 2)?)?;
    of_difference(input, gradient)
}

/// The derivative of a loss that is linear with slope `outer` beyond `±limit` and
/// `inner_scale * d` inside (`smooth_l1`: 1 and `1/beta`; `huber`: `delta` and 1).
fn clipped_linear(
    input: &FormulaInput,
    limit: f64,
    outer: f64,
    inner_scale: f64,
) -> Result<Gradients> {
    let difference = sub(input.argument(0)?, input.argument(1)?)?;
    let inside = scale(&difference, inner_scale)?;
    let above = fill_where(
        &against("aten::gt.Scalar", &difference, limit)?,
        outer,
        &inside,
    )?;
    let derivative = fill_where(
        &against("aten::lt.Scalar", &difference, -limit)?,
        -outer,
        &above,
    )?;
    let gradient = mul(&derivative, &per_element(input, 2)?)?;
    of_difference(input, gradient)
}

/// `smooth_l1_loss(self, target, reduction, beta)`; `beta == 0` is `l1_loss`.
fn smooth_l1_loss(input: &FormulaInput) -> Result<Gradients> {
    let beta = input.number(3)?;
    if beta == 0.0 {
        return l1_loss(input);
    }
    clipped_linear(input, beta, 1.0, 1.0 / beta)
}

/// `huber_loss(self, target, reduction, delta)`.
fn huber_loss(input: &FormulaInput) -> Result<Gradients> {
    let delta = input.number(3)?;
    clipped_linear(input, delta, delta, 1.0)
}

/// Multiplies by the optional per-element `weight` argument.
fn weighted(value: IValue, weight: &IValue) -> Result<IValue> {
    if weight.is_none() {
        Ok(value)
    } else {
        mul(&value, weight)
    }
}

/// `binary_cross_entropy(self, target, weight, reduction)`: `self`'s gradient
/// `(x - t) / max(x (1 - x), 1e-12)`, the target's `-logit(x)`.
fn binary_cross_entropy(input: &FormulaInput) -> Result<Gradients> {
    let (x, target) = (input.argument(0)?, input.argument(1)?);
    let weight = input.argument(2)?;
    let grad = per_element(input, 3)?;
    let mut out = input.none();
    if input.needs(0) {
        let spread = mul(&call::rsub_scalar(x, 1.0)?, x)?;
        let floor = call1("aten::clamp_min", vec![spread, call::float(1e-12)])?;
        let derivative = call::div(&sub(x, target)?, &floor)?;
        out[0] = Some(weighted(mul(&derivative, &grad)?, weight)?);
    }
    if input.needs(1) {
        let logit = call::unary("aten::logit", x)?;
        out[1] = Some(weighted(mul(&call::neg(&logit)?, &grad)?, weight)?);
    }
    Ok(out)
}

/// `binary_cross_entropy_with_logits(self, target, weight, pos_weight, reduction)`: with
/// `p = pos_weight` (1 when absent), `self`'s gradient `(p t + 1 - t) sigmoid(x) - p t` and
/// the target's `(p - 1) softplus(-x) - x`.
fn binary_cross_entropy_with_logits(input: &FormulaInput) -> Result<Gradients> {
    let (x, target) = (input.argument(0)?, input.argument(1)?);
    let weight = input.argument(2)?;
    let pos_weight = input.argument(3)?;
    let grad = per_element(input, 4)?;
    let mut out = input.none();
    if input.needs(0) {
        let sigmoid = call::unary("aten::sigmoid", x)?;
        let derivative = if pos_weight.is_none() {
            sub(&sigmoid, target)?
        } else {
            let scaled_target = mul(pos_weight, target)?;
            let factor = sub(&call::add_scalar(&scaled_target, 1.0)?, target)?;
            sub(&mul(&factor, &sigmoid)?, &scaled_target)?
        };
        out[0] = Some(sum_to(
            &weighted(mul(&derivative, &grad)?, weight)?,
            &input.sizes(0)?,
        )?);
    }
    if input.needs(1) {
        let derivative = if pos_weight.is_none() {
            call::neg(x)?
        } else {
            let softplus = call::unary("aten::softplus", &call::neg(x)?)?;
            sub(&mul(&call::add_scalar(pos_weight, -1.0)?, &softplus)?, x)?
        };
        out[1] = Some(sum_to(
            &weighted(mul(&derivative, &grad)?, weight)?,
            &input.sizes(1)?,
        )?);
    }
    Ok(out)
}

/// `kl_div(self, target, reduction, log_target)`, PyTorch's composite
/// `exp(t) (t - x)` (log target) or `xlogy(t, t) - t x`: `self`'s gradient `-exp(t)` or
/// `-t`; the target's `exp(t) (t - x + 1)` or `xlogy(t != 0, t) + t / t - x`.
fn kl_div(input: &FormulaInput) -> Result<Gradients> {
    let (x, target) = (input.argument(0)?, input.argument(1)?);
    let log_target = input.argument(3)?.to_bool()?;
    let grad = per_element(input, 2)?;
    let mut out = input.none();
    if input.needs(0) {
        let derivative = if log_target {
            call::neg(&call::unary("aten::exp", target)?)?
        } else {
            call::neg(target)?
        };
        out[0] = Some(sum_to(&mul(&derivative, &grad)?, &input.sizes(0)?)?);
    }
    if input.needs(1) {
        let derivative = if log_target {
            let exp = call::unary("aten::exp", target)?;
            mul(&exp, &call::add_scalar(&sub(target, x)?, 1.0)?)?
        } else {
            let nonzero = call::mask_like(&against("aten::ne.Scalar", target, 0.0)?, target)?;
            let log_part = binary("aten::xlogy.Tensor", &nonzero, target)?;
            sub(&call::add(&log_part, &call::div(target, target)?)?, x)?
        };
        out[1] = Some(sum_to(&mul(&derivative, &grad)?, &input.sizes(1)?)?);
    }
    Ok(out)
}

formula_table![
    ("aten::l1_loss", "L1LossBackward0", l1_loss, &[0, 1]),
    (
        "aten::smooth_l1_loss",
        "SmoothL1LossBackward0",
        smooth_l1_loss,
        &[0, 1]
    ),
    (
        "aten::huber_loss",
        "HuberLossBackward0",
        huber_loss,
        &[0, 1]
    ),
    (
        "aten::binary_cross_entropy",
        "BinaryCrossEntropyBackward0",
        binary_cross_entropy,
        &[0, 1, 2]
    ),
    (
        "aten::binary_cross_entropy_with_logits",
        "BinaryCrossEntropyWithLogitsBackward0",
        binary_cross_entropy_with_logits,
        &[0, 1, 2, 3]
    ),
    ("aten::kl_div", "KlDivBackward0", kl_div, &[0, 1]),
];
