//! Elementwise operators: arithmetic (with broadcasting undone by summing), unary math and
//! activations, `clamp`, `where`.

use ferrojit_runtime::{IValue, Result};

use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call1, mask_like, mul, scale, sum_to};

/// `value` conjugated when complex: PyTorch's gradients of holomorphic functions are the
/// upstream gradient times the conjugate of the derivative (the conjugate Wirtinger
/// convention), so a complex derivative enters conjugated. Real values pass unchanged.
pub(super) fn conjugated(value: IValue) -> Result<IValue> {
    if call::tensor(&value)?.dtype().is_complex() {
        call::unary("aten::conj_physical", &value)
    } else {
        Ok(value)
    }
}

/// A complex gradient of a real argument keeps its real part (PyTorch's `handle_r_to_c`).
fn real_for_real_argument(input: &FormulaInput, index: usize, gradient: IValue) -> Result<IValue> {
    if !input.dtype(index)?.is_complex() && call::tensor(&gradient)?.dtype().is_complex() {
        call::unary("aten::real", &gradient)
    } else {
        Ok(gradient)
    }
}

fn alpha_of(input: &FormulaInput, index: usize) -> Result<f64> {
    input.number(index)
}

fn scaled(grad: &IValue, factor: f64) -> Result<IValue> {
    if factor == 1.0 {
        Ok(grad.clone())
    } else {
        scale(grad, factor)
    }
}

fn add_tensor(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(sum_to(grad, &input.sizes(0)?)?);
    }
    if input.needs(1) {
        out[1] = Some(sum_to(
            &scaled(grad, alpha_of(input, 2)?)?,
            &input.sizes(1)?,
        )?);
    }
    Ok(out)
}

fn sub_tensor(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(sum_to(grad, &input.sizes(0)?)?);
    }
    if input.needs(1) {
        out[1] = Some(sum_to(
            &scaled(grad, -alpha_of(input, 2)?)?,
            &input.sizes(1)?,
        )?);
    }
    Ok(out)
}

/// `rsub(self, other, alpha) = other - alpha * self`.
fn rsub_tensor(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(sum_to(
            &scaled(grad, -alpha_of(input, 2)?)?,
            &input.sizes(0)?,
        )?);
    }
    if input.needs(1) {
        out[1] = Some(sum_to(grad, &input.sizes(1)?)?);
    }
    Ok(out)
}

fn rsub_scalar(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(scaled(input.grad(0)?, -alpha_of(input, 2)?)?);
    Ok(out)
}

/// The gradient passes unchanged to `self` (`add.Scalar`, `sub.Scalar`, `clone`, ...).
pub fn identity(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(input.grad(0)?.clone());
    Ok(out)
}

fn mul_tensor(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let mut out = input.none();
    if input.needs(0) {
        let gradient = mul(grad, &conjugated(input.argument(1)?.clone())?)?;
        let gradient = real_for_real_argument(input, 0, gradient)?;
        out[0] = Some(sum_to(&gradient, &input.sizes(0)?)?);
    }
    if input.needs(1) {
        let gradient = mul(grad, &conjugated(input.argument(0)?.clone())?)?;
        let gradient = real_for_real_argument(input, 1, gradient)?;
        out[1] = Some(sum_to(&gradient, &input.sizes(1)?)?);
    }
    Ok(out)
}

fn mul_scalar(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(scale(input.grad(0)?, input.number(1)?)?);
    Ok(out)
}

fn div_tensor(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let other = input.argument(1)?;
    let mut out = input.none();
    if input.needs(0) {
        let gradient = call::div(grad, &conjugated(other.clone())?)?;
        let gradient = real_for_real_argument(input, 0, gradient)?;
        out[0] = Some(sum_to(&gradient, &input.sizes(0)?)?);
    }
    if input.needs(1) {
        // -grad * conj(self / other²)
        let quotient = call::div(input.argument(0)?, &mul(other, other)?)?;
        let gradient = call::neg(&mul(grad, &conjugated(quotient)?)?)?;
        let gradient = real_for_real_argument(input, 1, gradient)?;
        out[1] = Some(sum_to(&gradient, &input.sizes(1)?)?);
    }
    Ok(out)
}

fn div_scalar(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(scale(input.grad(0)?, 1.0 / input.number(1)?)?);
    Ok(out)
}

fn neg(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(call::neg(input.grad(0)?)?);
    Ok(out)
}

fn pow_scalar(input: &FormulaInput) -> Result<Gradients> {
    let exponent = input.number(1)?;
    let grad = input.grad(0)?;
    let mut out = input.none();
    out[0] = Some(if exponent == 0.0 {
        scale(grad, 0.0)?
    } else {
        let power = call::pow_scalar(input.argument(0)?, exponent - 1.0)?;
        mul(grad, &conjugated(scale(&power, exponent)?)?)?
    });
    Ok(out)
}

/// `grad * conj(f(self))` for a unary op whose derivative is `f`.
fn unary_times(input: &FormulaInput, derivative: IValue) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(mul(input.grad(0)?, &conjugated(derivative)?)?);
    Ok(out)
}

fn exp(input: &FormulaInput) -> Result<Gradients> {
    unary_times(input, call::unary("aten::exp", input.argument(0)?)?)
}

fn log(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(call::div(
        input.grad(0)?,
        &conjugated(input.argument(0)?.clone())?,
    )?);
    Ok(out)
}

fn sqrt(input: &FormulaInput) -> Result<Gradients> {
    let root = call::unary("aten::sqrt", input.argument(0)?)?;
    let mut out = input.none();
    out[0] = Some(call::div(input.grad(0)?, &conjugated(scale(&root, 2.0)?)?)?);
    Ok(out)
}

fn sin(input: &FormulaInput) -> Result<Gradients> {
    unary_times(input, call::unary("aten::cos", input.argument(0)?)?)
}

fn cos(input: &FormulaInput) -> Result<Gradients> {
    let sine = call::unary("aten::sin", input.argument(0)?)?;
    unary_times(input, call::neg(&sine)?)
}

/// `erf'(x) = 2 / sqrt(pi) * exp(-x²)`.
fn erf(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let density = call::unary("aten::exp", &scale(&mul(x, x)?, -1.0)?)?;
    unary_times(input, scale(&density, 2.0 / std::f64::consts::PI.sqrt())?)
}

/// `relu(self)`: PyTorch's `threshold_backward(grad, result, 0)`, the gradient except where
/// `x <= 0` (a NaN passes it); in a recorded backward `x` stays connected with the zero
/// second-order gradient PyTorch's formula gives it.
fn relu(input: &FormulaInput) -> Result<Gradients> {
    let self_value = input.argument(0)?;
    let at_or_below = call::compare_scalar("aten::le.Scalar", self_value, 0.0)?;
    let gradient = super::support::zero_where(&at_or_below, input.grad(0)?)?;
    let mut out = input.none();
    out[0] = Some(super::support::connected_to(gradient, self_value)?);
    Ok(out)
}

fn sigmoid(input: &FormulaInput) -> Result<Gradients> {
    let s = call::unary("aten::sigmoid", input.argument(0)?)?;
    unary_times(input, mul(&s, &call::rsub_scalar(&s, 1.0)?)?)
}

fn tanh(input: &FormulaInput) -> Result<Gradients> {
    let t = call::unary("aten::tanh", input.argument(0)?)?;
    unary_times(input, call::rsub_scalar(&mul(&t, &t)?, 1.0)?)
}

fn silu(input: &FormulaInput) -> Result<Gradients> {
    // s * (1 + x * (1 - s))
    let x = input.argument(0)?;
    let s = call::unary("aten::sigmoid", x)?;
    let inner = call::add_scalar(&mul(x, &call::rsub_scalar(&s, 1.0)?)?, 1.0)?;
    unary_times(input, mul(&s, &inner)?)
}

fn gelu(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let approximate = match input.argument(1)? {
        IValue::Str(text) => text.to_string(),
        _ => "none".to_string(),
    };
    let derivative = if approximate == "tanh" {
        // 0.5 (1 + tanh(u)) + 0.5 x (1 - tanh²(u)) u', u = k (x + c x³)
        let k = (2.0 / std::f64::consts::PI).sqrt();
        let c = 0.044715;
        let cube = call::pow_scalar(x, 3.0)?;
        let u = scale(&call::add(x, &scale(&cube, c)?)?, k)?;
        let t = call::unary("aten::tanh", &u)?;
        let du = scale(&call::add_scalar(&scale(&mul(x, x)?, 3.0 * c)?, 1.0)?, k)?;
        let left = scale(&call::add_scalar(&t, 1.0)?, 0.5)?;
        let sech2 = call::rsub_scalar(&mul(&t, &t)?, 1.0)?;
        let right = scale(&mul(&mul(x, &sech2)?, &du)?, 0.5)?;
        call::add(&left, &right)?
    } else {
        // Φ(x) + x φ(x)
        let cdf = scale(
            &call::add_scalar(
                &call::unary("aten::erf", &scale(x, std::f64::consts::FRAC_1_SQRT_2)?)?,
                1.0,
            )?,
            0.5,
        )?;
        let density = scale(
            &call::unary("aten::exp", &scale(&mul(x, x)?, -0.5)?)?,
            1.0 / (2.0 * std::f64::consts::PI).sqrt(),
        )?;
        call::add(&cdf, &mul(x, &density)?)?
    };
    unary_times(input, derivative)
}

/// `clamp(self, min, max)`: the gradient passes where `min <= self <= max`.
fn clamp(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let mut mask: Option<IValue> = None;
    for (index, comparison) in [(1, "aten::ge.Scalar"), (2, "aten::le.Scalar")] {
        let bound = input.argument(index)?;
        if bound.is_none() {
            continue;
        }
        let inside = mask_like(&call::call1(comparison, vec![x.clone(), bound.clone()])?, x)?;
        mask = Some(match mask {
            None => inside,
            Some(previous) => mul(&previous, &inside)?,
        });
    }
    let grad = input.grad(0)?;
    let mut out = input.none();
    out[0] = Some(match mask {
        Some(mask) => mul(grad, &mask)?,
        None => grad.clone(),
    });
    Ok(out)
}

/// `clamp_min`/`clamp_max(self, bound)`.
fn clamp_one_side(input: &FormulaInput, comparison: &str) -> Result<Gradients> {
    let x = input.argument(0)?;
    let inside = mask_like(
        &call1(comparison, vec![x.clone(), input.argument(1)?.clone()])?,
        x,
    )?;
    unary_times(input, inside)
}

fn clamp_min(input: &FormulaInput) -> Result<Gradients> {
    clamp_one_side(input, "aten::ge.Scalar")
}

fn clamp_max(input: &FormulaInput) -> Result<Gradients> {
    clamp_one_side(input, "aten::le.Scalar")
}

/// `where(condition, self, other)`.
fn where_self(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let mask = mask_like(input.argument(0)?, grad)?;
    let mut out = input.none();
    if input.needs(1) {
        out[1] = Some(sum_to(&mul(grad, &mask)?, &input.sizes(1)?)?);
    }
    if input.needs(2) {
        let inverse = call::rsub_scalar(&mask, 1.0)?;
        out[2] = Some(sum_to(&mul(grad, &inverse)?, &input.sizes(2)?)?);
    }
    Ok(out)
}

fn to_dtype(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    let dtype = input.dtype(0)?;
    out[0] = Some(call1(
        "aten::to.dtype",
        vec![input.grad(0)?.clone(), call::int(dtype.scalar_type_index())],
    )?);
    Ok(out)
}

pub const FORMULAS: &[(&str, Formula)] = &[
    (
        "aten::add.Tensor",
        Formula {
            name: "AddBackward0",
            saves: &[],
            apply: add_tensor,
        },
    ),
    (
        "aten::add_.Tensor",
        Formula {
            name: "AddBackward0",
            saves: &[],
            apply: add_tensor,
        },
    ),
    (
        "aten::add.Scalar",
        Formula {
            name: "AddBackward1",
            saves: &[],
            apply: identity,
        },
    ),
    (
        "aten::add_.Scalar",
        Formula {
            name: "AddBackward1",
            saves: &[],
            apply: identity,
        },
    ),
    (
        "aten::sub.Tensor",
        Formula {
            name: "SubBackward0",
            saves: &[],
            apply: sub_tensor,
        },
    ),
    (
        "aten::sub_.Tensor",
        Formula {
            name: "SubBackward0",
            saves: &[],
            apply: sub_tensor,
        },
    ),
    (
        "aten::sub.Scalar",
        Formula {
            name: "SubBackward1",
            saves: &[],
            apply: identity,
        },
    ),
    (
        "aten::sub_.Scalar",
        Formula {
            name: "SubBackward1",
            saves: &[],
            apply: identity,
        },
    ),
    (
        "aten::rsub.Tensor",
        Formula {
            name: "RsubBackward0",
            saves: &[],
            apply: rsub_tensor,
        },
    ),
    (
        "aten::rsub.Scalar",
        Formula {
            name: "RsubBackward1",
            saves: &[],
            apply: rsub_scalar,
        },
    ),
    (
        "aten::mul.Tensor",
        Formula {
            name: "MulBackward0",
            saves: &[0, 1],
            apply: mul_tensor,
        },
    ),
    (
        "aten::mul.Scalar",
        Formula {
            name: "MulBackward1",
            saves: &[],
            apply: mul_scalar,
        },
    ),
    (
        "aten::mul_.Scalar",
        Formula {
            name: "MulBackward1",
            saves: &[],
            apply: mul_scalar,
        },
    ),
    (
        "aten::div.Tensor",
        Formula {
            name: "DivBackward0",
            saves: &[0, 1],
            apply: div_tensor,
        },
    ),
    (
        "aten::div.Scalar",
        Formula {
            name: "DivBackward1",
            saves: &[],
            apply: div_scalar,
        },
    ),
    (
        "aten::div_.Scalar",
        Formula {
            name: "DivBackward1",
            saves: &[],
            apply: div_scalar,
        },
    ),
    (
        "aten::neg",
        Formula {
            name: "NegBackward0",
            saves: &[],
            apply: neg,
        },
    ),
    (
        "aten::pow.Tensor_Scalar",
        Formula {
            name: "PowBackward0",
            saves: &[0],
            apply: pow_scalar,
        },
    ),
    (
        "aten::exp",
        Formula {
            name: "ExpBackward0",
            saves: &[0],
            apply: exp,
        },
    ),
    (
        "aten::log",
        Formula {
            name: "LogBackward0",
            saves: &[0],
            apply: log,
        },
    ),
    (
        "aten::sqrt",
        Formula {
            name: "SqrtBackward0",
            saves: &[0],
            apply: sqrt,
        },
    ),
    (
        "aten::sin",
        Formula {
            name: "SinBackward0",
            saves: &[0],
            apply: sin,
        },
    ),
    (
        "aten::cos",
        Formula {
            name: "CosBackward0",
            saves: &[0],
            apply: cos,
        },
    ),
    (
        "aten::erf",
        Formula {
            name: "ErfBackward0",
            saves: &[0],
            apply: erf,
        },
    ),
    (
        "aten::relu",
        Formula {
            name: "ReluBackward0",
            saves: &[0],
            apply: relu,
        },
    ),
    (
        "aten::sigmoid",
        Formula {
            name: "SigmoidBackward0",
            saves: &[0],
            apply: sigmoid,
        },
    ),
    (
        "aten::tanh",
        Formula {
            name: "TanhBackward0",
            saves: &[0],
            apply: tanh,
        },
    ),
    (
        "aten::silu",
        Formula {
            name: "SiluBackward0",
            saves: &[0],
            apply: silu,
        },
    ),
    (
        "aten::gelu",
        Formula {
            name: "GeluBackward0",
            saves: &[0],
            apply: gelu,
        },
    ),
    (
        "aten::clamp",
        Formula {
            name: "ClampBackward1",
            saves: &[0],
            apply: clamp,
        },
    ),
    (
        "aten::clamp_min",
        Formula {
            name: "ClampMinBackward0",
            saves: &[0],
            apply: clamp_min,
        },
    ),
    (
        "aten::clamp_max",
        Formula {
            name: "ClampMaxBackward0",
            saves: &[0],
            apply: clamp_max,
        },
    ),
    (
        "aten::where.self",
        Formula {
            name: "WhereBackward0",
            saves: &[0],
            apply: where_self,
        },
    ),
    (
        "aten::clone",
        Formula {
            name: "CloneBackward0",
            saves: &[],
            apply: identity,
        },
    ),
    (
        "aten::contiguous",
        Formula {
            name: "CloneBackward0",
            saves: &[],
            apply: identity,
        },
    ),
    (
        "aten::to.dtype",
        Formula {
            name: "ToCopyBackward0",
            saves: &[],
            apply: to_dtype,
        },
    ),
    (
        "aten::dropout",
        Formula {
            name: "NativeDropoutBackward0",
            saves: &[],
            apply: super::nn::dropout,
        },
    ),
];
