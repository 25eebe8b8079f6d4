//! Elementwise operators of two (or three) tensors beyond the arithmetic ones: `clamp` with
//! tensor bounds, `maximum`/`minimum`/`fmax`/`fmin`, `atan2`, `hypot`, `logaddexp`,
//! `pow(Tensor, Tensor)`, `xlogy`/`xlog1py`, `fmod`/`remainder`, rounding `div`, `lerp`.
//! Each input's gradient is summed back over the dimensions it was broadcast along.

use ferrojit_runtime::{IValue, Result};

use super::support::{against, binary, give_summed, keep_where, recompute1, zero_where};
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call1, div, mul, neg, scale, sub};

/// `clamp.Tensor(self, min, max)` (`clamp_backward_min_max`): `self` gets the gradient
/// where it lies within the bounds, `min` where `self < min` (and `min < max`), `max` where
/// `self > max` (or the bounds cross).
fn clamp_tensor(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let low = input.argument(1)?;
    let high = input.argument(2)?;
    let grad = input.grad(0)?;
    let mut out = input.none();
    match (low.is_none(), high.is_none()) {
        (false, false) => {
            give_summed(input, &mut out, 0, || {
                let inside = binary(
                    "aten::logical_and",
                    &binary("aten::ge.Tensor", x, low)?,
                    &binary("aten::le.Tensor", x, high)?,
                )?;
                keep_where(&inside, grad)
            })?;
            give_summed(input, &mut out, 1, || {
                let below = binary(
                    "aten::logical_and",
                    &binary("aten::lt.Tensor", x, low)?,
                    &binary("aten::lt.Tensor", low, high)?,
                )?;
                keep_where(&below, grad)
            })?;
            give_summed(input, &mut out, 2, || {
                let above = binary(
                    "aten::logical_or",
                    &binary("aten::gt.Tensor", x, high)?,
                    &binary("aten::lt.Tensor", high, low)?,
                )?;
                keep_where(&above, grad)
            })?;
        }
        (false, true) => {
            give_summed(input, &mut out, 0, || {
                keep_where(&binary("aten::ge.Tensor", x, low)?, grad)
            })?;
            give_summed(input, &mut out, 1, || {
                keep_where(&binary("aten::lt.Tensor", x, low)?, grad)
            })?;
        }
        (true, false) => {
            give_summed(input, &mut out, 0, || {
                keep_where(&binary("aten::le.Tensor", x, high)?, grad)
            })?;
            give_summed(input, &mut out, 2, || {
                keep_where(&binary("aten::gt.Tensor", x, high)?, grad)
            })?;
        }
        (true, true) => give_summed(input, &mut out, 0, || Ok(grad.clone()))?,
    }
    Ok(out)
}

/// `clamp_min.Tensor`/`clamp_max.Tensor(self, bound)`: `self` where `keep` holds,
/// the bound elsewhere.
fn clamp_one_bound(input: &FormulaInput, keep: &str, pass: &str) -> Result<Gradients> {
    let x = input.argument(0)?;
    let bound = input.argument(1)?;
    let grad = input.grad(0)?;
    let mut out = input.none();
    give_summed(input, &mut out, 0, || {
        keep_where(&binary(keep, x, bound)?, grad)
    })?;
    give_summed(input, &mut out, 1, || {
        keep_where(&binary(pass, x, bound)?, grad)
    })?;
    Ok(out)
}

fn clamp_min_tensor(input: &FormulaInput) -> Result<Gradients> {
    clamp_one_bound(input, "aten::ge.Tensor", "aten::lt.Tensor")
}

fn clamp_max_tensor(input: &FormulaInput) -> Result<Gradients> {
    clamp_one_bound(input, "aten::le.Tensor", "aten::gt.Tensor")
}

/// `maximum`/`minimum`: the larger (smaller) input gets the gradient, ties split it.
fn extreme_of_two(input: &FormulaInput, self_loses: &str, other_loses: &str) -> Result<Gradients> {
    let x = input.argument(0)?;
    let y = input.argument(1)?;
    let grad = input.grad(0)?;
    let tie = binary("aten::eq.Tensor", x, y)?;
    let shared = call1(
        "aten::where.self",
        vec![tie, scale(grad, 0.5)?, grad.clone()],
    )?;
    let mut out = input.none();
    give_summed(input, &mut out, 0, || {
        zero_where(&binary(self_loses, x, y)?, &shared)
    })?;
    give_summed(input, &mut out, 1, || {
        zero_where(&binary(other_loses, x, y)?, &shared)
    })?;
    Ok(out)
}

fn maximum(input: &FormulaInput) -> Result<Gradients> {
    extreme_of_two(input, "aten::lt.Tensor", "aten::gt.Tensor")
}

fn minimum(input: &FormulaInput) -> Result<Gradients> {
    extreme_of_two(input, "aten::gt.Tensor", "aten::lt.Tensor")
}

/// `fmax`/`fmin`: like `maximum`/`minimum` but a NaN loses; no tie splitting.
fn nan_ignoring_extreme(input: &FormulaInput, wins: &str) -> Result<Gradients> {
    let x = input.argument(0)?;
    let y = input.argument(1)?;
    let grad = input.grad(0)?;
    let self_wins = binary(
        "aten::logical_or",
        &binary(wins, x, y)?,
        &binary("aten::ne.Tensor", y, y)?,
    )?;
    let mut out = input.none();
    give_summed(input, &mut out, 0, || keep_where(&self_wins, grad))?;
    give_summed(input, &mut out, 1, || zero_where(&self_wins, grad))?;
    Ok(out)
}

fn fmax(input: &FormulaInput) -> Result<Gradients> {
    nan_ignoring_extreme(input, "aten::ge.Tensor")
}

fn fmin(input: &FormulaInput) -> Result<Gradients> {
    nan_ignoring_extreme(input, "aten::le.Tensor")
}

/// `atan2(self, other)`: `(other, -self) / (self² + other²)`.
fn atan2(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let y = input.argument(1)?;
    let grad = input.grad(0)?;
    let denominator = call::add(&mul(x, x)?, &mul(y, y)?)?;
    let shared = div(grad, &denominator)?;
    let mut out = input.none();
    give_summed(input, &mut out, 0, || mul(&shared, y))?;
    give_summed(input, &mut out, 1, || mul(&shared, &neg(x)?))?;
    Ok(out)
}

/// `hypot(self, other)`: `grad * input / result`.
fn hypot(input: &FormulaInput) -> Result<Gradients> {
    let result = recompute1("aten::hypot", input)?;
    let shared = div(input.grad(0)?, &result)?;
    let mut out = input.none();
    give_summed(input, &mut out, 0, || mul(&shared, input.argument(0)?))?;
    give_summed(input, &mut out, 1, || mul(&shared, input.argument(1)?))?;
    Ok(out)
}

/// `logaddexp(self, other)`: `grad / (1 + exp(other - self))` and symmetrically.
fn logaddexp(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let y = input.argument(1)?;
    let grad = input.grad(0)?;
    let share = |from: &IValue, to: &IValue| -> Result<IValue> {
        let growth = call::unary("aten::exp", &sub(from, to)?)?;
        div(grad, &call::add_scalar(&growth, 1.0)?)
    };
    let mut out = input.none();
    give_summed(input, &mut out, 0, || share(y, x))?;
    give_summed(input, &mut out, 1, || share(x, y))?;
    Ok(out)
}

/// `pow.Tensor_Tensor(self, exponent)`: `grad * exponent * self^(exponent - 1)` (zero where
/// the exponent is 0) and `grad * result * log(self)` (zero where `self == 0` and
/// `exponent >= 0`).
fn pow_tensor(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let exponent = input.argument(1)?;
    let grad = input.grad(0)?;
    let mut out = input.none();
    give_summed(input, &mut out, 0, || {
        let lowered = call1(
            "aten::pow.Tensor_Tensor",
            vec![x.clone(), call::add_scalar(exponent, -1.0)?],
        )?;
        let slope = mul(&mul(grad, exponent)?, &lowered)?;
        zero_where(&against("aten::eq.Scalar", exponent, 0.0)?, &slope)
    })?;
    give_summed(input, &mut out, 1, || {
        let result = call1("aten::pow.Tensor_Tensor", vec![x.clone(), exponent.clone()])?;
        let slope = mul(&result, &call::unary("aten::log", x)?)?;
        let degenerate = binary(
            "aten::logical_and",
            &against("aten::eq.Scalar", x, 0.0)?,
            &against("aten::ge.Scalar", exponent, 0.0)?,
        )?;
        mul(grad, &zero_where(&degenerate, &slope)?)
    })?;
    Ok(out)
}

/// `xlogy.Tensor(self, other)` / `special_xlog1py(self, other)`: `self` gets
/// `xlogy(grad, other)` (zero where `self == 0` and `other <= edge`), `other` gets
/// `grad * self / (other + shift)`.
fn x_log(input: &FormulaInput, name: &str, shift: f64) -> Result<Gradients> {
    let x = input.argument(0)?;
    let y = input.argument(1)?;
    let grad = input.grad(0)?;
    let mut out = input.none();
    give_summed(input, &mut out, 0, || {
        let value = call1(name, vec![grad.clone(), y.clone()])?;
        let undefined = binary(
            "aten::logical_and",
            &against("aten::eq.Scalar", x, 0.0)?,
            &against("aten::le.Scalar", y, -shift)?,
        )?;
        zero_where(&undefined, &value)
    })?;
    give_summed(input, &mut out, 1, || {
        let denominator = if shift == 0.0 {
            y.clone()
        } else {
            call::add_scalar(y, shift)?
        };
        div(&mul(grad, x)?, &denominator)
    })?;
    Ok(out)
}

fn xlogy(input: &FormulaInput) -> Result<Gradients> {
    x_log(input, "aten::xlogy.Tensor", 0.0)
}

fn xlog1py(input: &FormulaInput) -> Result<Gradients> {
    x_log(input, "aten::special_xlog1py", 1.0)
}

/// `fmod.Tensor`/`remainder.Tensor`: `self` gets `grad`, `other` gets
/// `-grad * div(self, other, rounding_mode)`.
fn modulo(input: &FormulaInput, rounding: &str) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let mut out = input.none();
    give_summed(input, &mut out, 0, || Ok(grad.clone()))?;
    give_summed(input, &mut out, 1, || {
        let quotient = call1(
            "aten::div.Tensor_mode",
            vec![
                input.argument(0)?.clone(),
                input.argument(1)?.clone(),
                IValue::string(rounding),
            ],
        )?;
        neg(&mul(grad, &quotient)?)
    })?;
    Ok(out)
}

fn fmod_tensor(input: &FormulaInput) -> Result<Gradients> {
    modulo(input, "trunc")
}

fn remainder_tensor(input: &FormulaInput) -> Result<Gradients> {
    modulo(input, "floor")
}

/// `div.Tensor_mode(self, other, rounding_mode)`: with a rounding mode the result is
/// piecewise constant (zero gradients); without one, plain division's.
fn div_mode(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let x = input.argument(0)?;
    let y = input.argument(1)?;
    let rounded = !input.argument(2)?.is_none();
    let mut out = input.none();
    give_summed(input, &mut out, 0, || {
        if rounded {
            scale(grad, 0.0)
        } else {
            div(grad, y)
        }
    })?;
    give_summed(input, &mut out, 1, || {
        if rounded {
            scale(grad, 0.0)
        } else {
            neg(&div(&mul(grad, x)?, &mul(y, y)?)?)
        }
    })?;
    Ok(out)
}

/// `lerp.Scalar(self, end, weight)`: `(1 - weight, weight)` shares of the gradient.
fn lerp_scalar(input: &FormulaInput) -> Result<Gradients> {
    let weight = input.number(2)?;
    let grad = input.grad(0)?;
    let mut out = input.none();
    give_summed(input, &mut out, 0, || scale(grad, 1.0 - weight))?;
    give_summed(input, &mut out, 1, || scale(grad, weight))?;
    Ok(out)
}

/// `lerp.Tensor(self, end, weight)`; `weight` gets `grad * (end - self)`.
fn lerp_tensor(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let end = input.argument(1)?;
    let weight = input.argument(2)?;
    let grad = input.grad(0)?;
    let mut out = input.none();
    give_summed(input, &mut out, 0, || {
        mul(grad, &call::rsub_scalar(weight, 1.0)?)
    })?;
    give_summed(input, &mut out, 1, || mul(grad, weight))?;
    give_summed(input, &mut out, 2, || mul(grad, &sub(end, x)?))?;
    Ok(out)
}

formula_table![
    (
        "aten::clamp.Tensor",
        "ClampBackward0",
        clamp_tensor,
        &[0, 1, 2]
    ),
    (
        "aten::clamp_min.Tensor",
        "ClampMinBackward1",
        clamp_min_tensor,
        &[0, 1]
    ),
    (
        "aten::clamp_max.Tensor",
        "ClampMaxBackward1",
        clamp_max_tensor,
        &[0, 1]
    ),
    ("aten::maximum", "MaximumBackward0", maximum, &[0, 1]),
    ("aten::max.other", "MaximumBackward0", maximum, &[0, 1]),
    ("aten::minimum", "MinimumBackward0", minimum, &[0, 1]),
    ("aten::min.other", "MinimumBackward0", minimum, &[0, 1]),
    ("aten::fmax", "FmaxBackward0", fmax, &[0, 1]),
    ("aten::fmin", "FminBackward0", fmin, &[0, 1]),
    ("aten::atan2", "Atan2Backward0", atan2, &[0, 1]),
    ("aten::hypot", "HypotBackward0", hypot, &[0, 1]),
    ("aten::logaddexp", "LogaddexpBackward0", logaddexp, &[0, 1]),
    (
        "aten::pow.Tensor_Tensor",
        "PowBackward1",
        pow_tensor,
        &[0, 1]
    ),
    ("aten::xlogy.Tensor", "XlogyBackward0", xlogy, &[0, 1]),
    (
        "aten::special_xlog1py",
        "SpecialXlog1PyBackward0",
        xlog1py,
        &[0, 1]
    ),
    ("aten::fmod.Tensor", "FmodBackward1", fmod_tensor, &[0, 1]),
    (
        "aten::remainder.Tensor",
        "RemainderBackward1",
        remainder_tensor,
        &[0, 1]
    ),
    ("aten::div.Tensor_mode", "DivBackward1", div_mode, &[0, 1]),
    ("aten::lerp.Scalar", "LerpBackward0", lerp_scalar, &[]),
    (
        "aten::lerp.Tensor",
        "LerpBackward1",
        lerp_tensor,
        &[0, 1, 2]
    ),
];
