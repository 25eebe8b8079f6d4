//! Derivatives of the unary math operators beyond the basic ones in `pointwise.rs`: the
//! remaining trigonometric and hyperbolic functions and their inverses, the other
//! logarithms and exponentials, `abs`, `reciprocal`/`rsqrt`/`square`, the rounding family
//! (zero gradient), the degree conversions, and the special functions whose derivative is
//! another registered operator. Each is `grad * f'(self)` as PyTorch's derivatives.yaml
//! defines it, computed through recorded calls so that double backward works.

use std::f64::consts::{LN_10, LN_2, PI};

use ferrojit_runtime::{IValue, Result};

use super::pointwise::conjugated;
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, add_scalar, call1, div, mul, neg, pow_scalar, rsub_scalar, scale};

/// `grad * conj(derivative)` for argument 0 (conjugate Wirtinger for complex input).
fn times(input: &FormulaInput, derivative: IValue) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(mul(input.grad(0)?, &conjugated(derivative)?)?);
    Ok(out)
}

/// `grad / conj(denominator)` for argument 0.
fn over(input: &FormulaInput, denominator: IValue) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(div(input.grad(0)?, &conjugated(denominator)?)?);
    Ok(out)
}

fn x<'a>(input: &'a FormulaInput) -> Result<&'a IValue> {
    input.argument(0)
}

fn squared(value: &IValue) -> Result<IValue> {
    mul(value, value)
}

/// `abs`: `grad * sgn(self)`, not conjugated (for complex input `|z|` is not holomorphic
/// and `z / |z|` is already PyTorch's gradient direction).
fn abs(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(mul(input.grad(0)?, &call::unary("aten::sgn", x(input)?)?)?);
    Ok(out)
}

fn expm1(input: &FormulaInput) -> Result<Gradients> {
    times(input, call::unary("aten::exp", x(input)?)?)
}

fn exp2(input: &FormulaInput) -> Result<Gradients> {
    times(input, scale(&call::unary("aten::exp2", x(input)?)?, LN_2)?)
}

fn log2(input: &FormulaInput) -> Result<Gradients> {
    over(input, scale(x(input)?, LN_2)?)
}

fn log10(input: &FormulaInput) -> Result<Gradients> {
    over(input, scale(x(input)?, LN_10)?)
}

fn log1p(input: &FormulaInput) -> Result<Gradients> {
    over(input, add_scalar(x(input)?, 1.0)?)
}

/// `tan' = 1 + tan²`.
fn tan(input: &FormulaInput) -> Result<Gradients> {
    let tangent = call::unary("aten::tan", x(input)?)?;
    times(input, add_scalar(&squared(&tangent)?, 1.0)?)
}

fn sinh(input: &FormulaInput) -> Result<Gradients> {
    times(input, call::unary("aten::cosh", x(input)?)?)
}

fn cosh(input: &FormulaInput) -> Result<Gradients> {
    times(input, call::unary("aten::sinh", x(input)?)?)
}

/// `asin' = 1 / sqrt(1 - x²)`.
fn asin(input: &FormulaInput) -> Result<Gradients> {
    let root = call::unary("aten::sqrt", &rsub_scalar(&squared(x(input)?)?, 1.0)?)?;
    over(input, root)
}

/// `acos' = -1 / sqrt(1 - x²)`.
fn acos(input: &FormulaInput) -> Result<Gradients> {
    let root = call::unary("aten::sqrt", &rsub_scalar(&squared(x(input)?)?, 1.0)?)?;
    over(input, neg(&root)?)
}

/// `atan' = 1 / (1 + x²)`.
fn atan(input: &FormulaInput) -> Result<Gradients> {
    over(input, add_scalar(&squared(x(input)?)?, 1.0)?)
}

/// `asinh' = 1 / sqrt(x² + 1)`.
fn asinh(input: &FormulaInput) -> Result<Gradients> {
    let root = call::unary("aten::sqrt", &add_scalar(&squared(x(input)?)?, 1.0)?)?;
    over(input, root)
}

/// `acosh' = 1 / sqrt(x² - 1)` (PyTorch: `grad * (self.pow(2) - 1).rsqrt()`).
fn acosh(input: &FormulaInput) -> Result<Gradients> {
    let inverse_root = call::unary("aten::rsqrt", &add_scalar(&squared(x(input)?)?, -1.0)?)?;
    times(input, inverse_root)
}

/// `atanh' = 1 / (1 - x²)`.
fn atanh(input: &FormulaInput) -> Result<Gradients> {
    over(input, rsub_scalar(&squared(x(input)?)?, 1.0)?)
}

/// `(1/x)' = -1/x²`.
fn reciprocal(input: &FormulaInput) -> Result<Gradients> {
    let inverse = call::unary("aten::reciprocal", x(input)?)?;
    times(input, neg(&squared(&inverse)?)?)
}

/// `(x^-1/2)' = -x^-3/2 / 2`.
fn rsqrt(input: &FormulaInput) -> Result<Gradients> {
    times(input, scale(&pow_scalar(x(input)?, -1.5)?, -0.5)?)
}

fn square(input: &FormulaInput) -> Result<Gradients> {
    times(input, scale(x(input)?, 2.0)?)
}

/// `erfc' = -2 / sqrt(pi) * exp(-x²)`.
fn erfc(input: &FormulaInput) -> Result<Gradients> {
    let density = call::unary("aten::exp", &neg(&squared(x(input)?)?)?)?;
    times(input, scale(&density, -2.0 / PI.sqrt())?)
}

/// `erfinv' = sqrt(pi) / 2 * exp(erfinv(x)²)`.
fn erfinv(input: &FormulaInput) -> Result<Gradients> {
    let inverse = call::unary("aten::erfinv", x(input)?)?;
    let growth = call::unary("aten::exp", &squared(&inverse)?)?;
    times(input, scale(&growth, PI.sqrt() / 2.0)?)
}

/// Piecewise-constant functions (`sign`, `floor`, `ceil`, `round`, `trunc`): the gradient
/// is zero wherever it is defined, and PyTorch returns zeros.
fn zero(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(call1("aten::zeros_like", vec![input.grad(0)?.clone()])?);
    Ok(out)
}

/// `frac(x) = x - trunc(x)`: the gradient passes through.
fn identity(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(input.grad(0)?.clone());
    Ok(out)
}

fn rad2deg(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(scale(input.grad(0)?, 180.0 / PI)?);
    Ok(out)
}

fn deg2rad(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(scale(input.grad(0)?, PI / 180.0)?);
    Ok(out)
}

/// `lgamma' = digamma`.
fn lgamma(input: &FormulaInput) -> Result<Gradients> {
    times(input, call::unary("aten::digamma", x(input)?)?)
}

/// `polygamma(n, x)' = polygamma(n + 1, x)`; `n` is argument 0, `x` argument 1.
fn polygamma(input: &FormulaInput) -> Result<Gradients> {
    let order = input.int(0)?;
    let x = input.argument(1)?;
    let derivative = call1("aten::polygamma", vec![call::int(order + 1), x.clone()])?;
    let mut out = input.none();
    out[1] = Some(mul(input.grad(0)?, &derivative)?);
    Ok(out)
}

/// `digamma' = polygamma(1, x)`.
fn digamma(input: &FormulaInput) -> Result<Gradients> {
    times(
        input,
        call1("aten::polygamma", vec![call::int(1), x(input)?.clone()])?,
    )
}

/// `i0' = i1`.
fn i0(input: &FormulaInput) -> Result<Gradients> {
    times(input, call::unary("aten::special_i1", x(input)?)?)
}

/// The standard normal density `exp(-x²/2) / sqrt(2 pi)`.
fn normal_density(value: &IValue) -> Result<IValue> {
    let exponent = scale(&squared(value)?, -0.5)?;
    scale(
        &call::unary("aten::exp", &exponent)?,
        1.0 / (2.0 * PI).sqrt(),
    )
}

fn special_ndtr(input: &FormulaInput) -> Result<Gradients> {
    times(input, normal_density(x(input)?)?)
}

/// `log_ndtr' = density / ndtr = exp(-(log_ndtr(x) + x²/2)) / sqrt(2 pi)`: the
/// logarithmic form stays accurate in the far left tail, where `ndtr` underflows.
fn special_log_ndtr(input: &FormulaInput) -> Result<Gradients> {
    let logarithm = call::unary("aten::special_log_ndtr", x(input)?)?;
    let exponent = call::add(&logarithm, &scale(&squared(x(input)?)?, 0.5)?)?;
    let density_ratio = scale(
        &call::unary("aten::exp", &neg(&exponent)?)?,
        1.0 / (2.0 * PI).sqrt(),
    )?;
    times(input, density_ratio)
}

/// `ndtri' = sqrt(2 pi) * exp(ndtri(x)² / 2)`.
fn special_ndtri(input: &FormulaInput) -> Result<Gradients> {
    let quantile = call::unary("aten::special_ndtri", x(input)?)?;
    let growth = call::unary("aten::exp", &scale(&squared(&quantile)?, 0.5)?)?;
    times(input, scale(&growth, (2.0 * PI).sqrt())?)
}

/// `erfcx' = 2 x erfcx(x) - 2 / sqrt(pi)`.
fn special_erfcx(input: &FormulaInput) -> Result<Gradients> {
    let scaled = call::unary("aten::special_erfcx", x(input)?)?;
    let twice = scale(&mul(x(input)?, &scaled)?, 2.0)?;
    times(input, add_scalar(&twice, -2.0 / PI.sqrt())?)
}

/// `entr(x) = -x ln x`: `entr' = -(1 + ln x)`.
fn special_entr(input: &FormulaInput) -> Result<Gradients> {
    let logarithm = call::unary("aten::log", x(input)?)?;
    times(input, neg(&add_scalar(&logarithm, 1.0)?)?)
}

macro_rules! unary_formulas {
    ($(($operator:literal, $node:literal, $apply:ident, $saves:expr)),* $(,)?) => {
        pub(super) const FORMULAS: &[(&str, Formula)] = &[
            $(($operator, Formula { name: $node, saves: $saves, apply: $apply }),)*
        ];
    };
}

unary_formulas![
    ("aten::abs", "AbsBackward0", abs, &[0]),
    ("aten::expm1", "Expm1Backward0", expm1, &[0]),
    ("aten::exp2", "Exp2Backward0", exp2, &[0]),
    ("aten::log2", "Log2Backward0", log2, &[0]),
    ("aten::log10", "Log10Backward0", log10, &[0]),
    ("aten::log1p", "Log1PBackward0", log1p, &[0]),
    ("aten::tan", "TanBackward0", tan, &[0]),
    ("aten::sinh", "SinhBackward0", sinh, &[0]),
    ("aten::cosh", "CoshBackward0", cosh, &[0]),
    ("aten::asin", "AsinBackward0", asin, &[0]),
    ("aten::acos", "AcosBackward0", acos, &[0]),
    ("aten::atan", "AtanBackward0", atan, &[0]),
    ("aten::asinh", "AsinhBackward0", asinh, &[0]),
    ("aten::acosh", "AcoshBackward0", acosh, &[0]),
    ("aten::atanh", "AtanhBackward0", atanh, &[0]),
    ("aten::reciprocal", "ReciprocalBackward0", reciprocal, &[0]),
    ("aten::rsqrt", "RsqrtBackward0", rsqrt, &[0]),
    ("aten::square", "PowBackward0", square, &[0]),
    ("aten::erfc", "ErfcBackward0", erfc, &[0]),
    ("aten::erfinv", "ErfinvBackward0", erfinv, &[0]),
    ("aten::sign", "SignBackward0", zero, &[]),
    ("aten::floor", "FloorBackward0", zero, &[]),
    ("aten::ceil", "CeilBackward0", zero, &[]),
    ("aten::round", "RoundBackward0", zero, &[]),
    ("aten::round.decimals", "RoundBackward1", zero, &[]),
    ("aten::trunc", "TruncBackward0", zero, &[]),
    ("aten::frac", "FracBackward0", identity, &[]),
    ("aten::rad2deg", "Rad2DegBackward0", rad2deg, &[]),
    ("aten::deg2rad", "Deg2RadBackward0", deg2rad, &[]),
    ("aten::lgamma", "LgammaBackward0", lgamma, &[0]),
    ("aten::digamma", "DigammaBackward0", digamma, &[0]),
    ("aten::polygamma", "PolygammaBackward0", polygamma, &[1]),
    ("aten::i0", "I0Backward0", i0, &[0]),
    ("aten::special_ndtr", "MulBackward1", special_ndtr, &[0]),
    (
        "aten::special_log_ndtr",
        "SpecialLogNdtrBackward0",
        special_log_ndtr,
        &[0]
    ),
    (
        "aten::special_ndtri",
        "SpecialNdtriBackward0",
        special_ndtri,
        &[0]
    ),
    (
        "aten::special_erfcx",
        "SpecialErfcxBackward0",
        special_erfcx,
        &[0]
    ),
    (
        "aten::special_entr",
        "SpecialEntrBackward0",
        special_entr,
        &[0]
    ),
];
