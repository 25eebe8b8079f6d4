//! Derivatives of special functions expressed through their neighbours: the Bessel
//! functions (`J0' = -J1`, `J1' = J0 - J1/x`, the same for `Y`, `I`, `K`), the scaled
//! modified ones (`i0e`, `i1e`, `i1`), `sinc`, `logit` and the multivariate log-gamma.
//! Removable singularities at `x = 0` take their limit, as PyTorch's formulas do.

use std::f64::consts::PI;

use ferrojit_runtime::{IValue, Result};

use super::support::{against, binary, fill_where, zero_where};
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, add_scalar, div, mul, neg, rsub_scalar, scale, sub};

fn x<'a>(input: &'a FormulaInput) -> Result<&'a IValue> {
    input.argument(0)
}

fn times(input: &FormulaInput, derivative: IValue) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(mul(input.grad(0)?, &derivative)?);
    Ok(out)
}

fn of(name: &str, value: &IValue) -> Result<IValue> {
    call::unary(name, value)
}

/// `value` with `limit` where `x == 0` (a removable singularity of `f(x) / x`).
fn at_zero(x: &IValue, limit: f64, value: &IValue) -> Result<IValue> {
    fill_where(&against("aten::eq.Scalar", x, 0.0)?, limit, value)
}

fn bessel_j0(input: &FormulaInput) -> Result<Gradients> {
    times(input, neg(&of("aten::special_bessel_j1", x(input)?)?)?)
}

fn bessel_j1(input: &FormulaInput) -> Result<Gradients> {
    let x = x(input)?;
    let value = sub(
        &of("aten::special_bessel_j0", x)?,
        &div(&of("aten::special_bessel_j1", x)?, x)?,
    )?;
    times(input, at_zero(x, 0.5, &value)?)
}

fn bessel_y0(input: &FormulaInput) -> Result<Gradients> {
    times(input, neg(&of("aten::special_bessel_y1", x(input)?)?)?)
}

fn bessel_y1(input: &FormulaInput) -> Result<Gradients> {
    let x = x(input)?;
    let value = sub(
        &of("aten::special_bessel_y0", x)?,
        &div(&of("aten::special_bessel_y1", x)?, x)?,
    )?;
    times(input, value)
}

fn modified_i0(input: &FormulaInput) -> Result<Gradients> {
    times(input, of("aten::special_modified_bessel_i1", x(input)?)?)
}

fn modified_i1(input: &FormulaInput) -> Result<Gradients> {
    let x = x(input)?;
    let value = sub(
        &of("aten::special_modified_bessel_i0", x)?,
        &div(&of("aten::special_modified_bessel_i1", x)?, x)?,
    )?;
    times(input, at_zero(x, 0.5, &value)?)
}

fn modified_k0(input: &FormulaInput) -> Result<Gradients> {
    times(
        input,
        neg(&of("aten::special_modified_bessel_k1", x(input)?)?)?,
    )
}

fn modified_k1(input: &FormulaInput) -> Result<Gradients> {
    let x = x(input)?;
    let value = neg(&call::add(
        &of("aten::special_modified_bessel_k0", x)?,
        &div(&of("aten::special_modified_bessel_k1", x)?, x)?,
    )?)?;
    times(input, value)
}

/// `i1' = i0 - i1 / x` (1/2 at 0).
fn special_i1(input: &FormulaInput) -> Result<Gradients> {
    let x = x(input)?;
    let value = sub(&of("aten::i0", x)?, &div(&of("aten::special_i1", x)?, x)?)?;
    times(input, at_zero(x, 0.5, &value)?)
}

/// `i0e' = i1e - sgn(x) * i0e`.
fn special_i0e(input: &FormulaInput) -> Result<Gradients> {
    let x = x(input)?;
    let value = sub(
        &of("aten::special_i1e", x)?,
        &mul(&of("aten::sgn", x)?, &of("aten::special_i0e", x)?)?,
    )?;
    times(input, value)
}

/// `i1e' = i0e - i1e * (sgn(x) + 1/x)` (1/2 at 0).
fn special_i1e(input: &FormulaInput) -> Result<Gradients> {
    let x = x(input)?;
    let factor = call::add(&of("aten::sgn", x)?, &of("aten::reciprocal", x)?)?;
    let value = sub(
        &of("aten::special_i0e", x)?,
        &mul(&of("aten::special_i1e", x)?, &factor)?,
    )?;
    times(input, at_zero(x, 0.5, &value)?)
}

/// `sinc'(x) = (cos(pi x) pi x - sin(pi x)) / (pi x²)` (0 at 0).
fn sinc(input: &FormulaInput) -> Result<Gradients> {
    let x = x(input)?;
    let angle = scale(x, PI)?;
    let numerator = sub(
        &mul(&of("aten::cos", &angle)?, &angle)?,
        &of("aten::sin", &angle)?,
    )?;
    let value = div(&numerator, &mul(&angle, x)?)?;
    let value = zero_where(&against("aten::eq.Scalar", x, 0.0)?, &value)?;
    times(input, value)
}

/// `logit(self, eps)`: `grad / (x (1 - x))`; without `eps` NaN outside `[0, 1]`, with it
/// zero outside `[eps, 1 - eps]`.
fn logit(input: &FormulaInput) -> Result<Gradients> {
    let x = x(input)?;
    let slope = div(input.grad(0)?, &mul(x, &rsub_scalar(x, 1.0)?)?)?;
    let (low, high, outside) = match input.argument(1)? {
        IValue::None => (0.0, 1.0, f64::NAN),
        eps => {
            let eps = eps.to_double()?;
            (eps, 1.0 - eps, 0.0)
        }
    };
    let out_of_range = binary(
        "aten::logical_or",
        &against("aten::lt.Scalar", x, low)?,
        &against("aten::gt.Scalar", x, high)?,
    )?;
    let mut out = input.none();
    out[0] = Some(fill_where(&out_of_range, outside, &slope)?);
    Ok(out)
}

/// `mvlgamma(self, p)`: `sum_{j<p} digamma(x - j/2)`.
fn mvlgamma(input: &FormulaInput) -> Result<Gradients> {
    let x = x(input)?;
    let p = input.int(1)?;
    let mut total: Option<IValue> = None;
    for j in 0..p {
        let term = of("aten::digamma", &add_scalar(x, -(j as f64) / 2.0)?)?;
        total = Some(match total {
            None => term,
            Some(sum) => call::add(&sum, &term)?,
        });
    }
    let total = match total {
        Some(total) => total,
        None => scale(x, 0.0)?,
    };
    times(input, total)
}

formula_table![
    (
        "aten::special_bessel_j0",
        "SpecialBesselJ0Backward0",
        bessel_j0,
        &[0]
    ),
    (
        "aten::special_bessel_j1",
        "SpecialBesselJ1Backward0",
        bessel_j1,
        &[0]
    ),
    (
        "aten::special_bessel_y0",
        "SpecialBesselY0Backward0",
        bessel_y0,
        &[0]
    ),
    (
        "aten::special_bessel_y1",
        "SpecialBesselY1Backward0",
        bessel_y1,
        &[0]
    ),
    (
        "aten::special_modified_bessel_i0",
        "SpecialModifiedBesselI0Backward0",
        modified_i0,
        &[0]
    ),
    (
        "aten::special_modified_bessel_i1",
        "SpecialModifiedBesselI1Backward0",
        modified_i1,
        &[0]
    ),
    (
        "aten::special_modified_bessel_k0",
        "SpecialModifiedBesselK0Backward0",
        modified_k0,
        &[0]
    ),
    (
        "aten::special_modified_bessel_k1",
        "SpecialModifiedBesselK1Backward0",
        modified_k1,
        &[0]
    ),
    ("aten::special_i1", "SpecialI1Backward0", special_i1, &[0]),
    (
        "aten::special_i0e",
        "SpecialI0EBackward0",
        special_i0e,
        &[0]
    ),
    (
        "aten::special_i1e",
        "SpecialI1EBackward0",
        special_i1e,
        &[0]
    ),
    ("aten::sinc", "SincBackward0", sinc, &[0]),
    ("aten::logit", "LogitBackward0", logit, &[0]),
    ("aten::mvlgamma", "MvlgammaBackward0", mvlgamma, &[0]),
];
