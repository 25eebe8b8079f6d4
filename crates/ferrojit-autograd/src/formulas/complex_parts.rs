//! Operators between real and complex tensors (`view_as_real`, `view_as_complex`, `complex`,
//! `imag`, `polar`, `conj`) and the non-holomorphic `angle` and `sgn`. Gradients follow PyTorch's convention for a real loss `L`: the
//! gradient of a complex tensor `z` is `dL/dRe(z) + i dL/dIm(z)`, and a real tensor's is the
//! real part of what reaches it.

use ferrojit_runtime::{IValue, Result};

use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call1, mul};

fn real_part(value: &IValue) -> Result<IValue> {
    call::unary("aten::real", value)
}

fn imaginary_part(value: &IValue) -> Result<IValue> {
    call::unary("aten::imag", value)
}

fn complex_of(real: &IValue, imaginary: &IValue) -> Result<IValue> {
    call1("aten::complex", vec![real.clone(), imaginary.clone()])
}

/// `view_as_real(z)`: the (..., 2) gradient read back as complex numbers.
fn view_as_real(input: &FormulaInput) -> Result<Gradients> {
    let contiguous = call1(
        "aten::contiguous",
        vec![input.grad(0)?.clone(), IValue::Int(0)],
    )?;
    let mut out = input.none();
    out[0] = Some(call::unary("aten::view_as_complex", &contiguous)?);
    Ok(out)
}

/// `view_as_complex(x)`: the complex gradient split into its (..., 2) parts.
fn view_as_complex(input: &FormulaInput) -> Result<Gradients> {
    let resolved = call::unary("aten::resolve_conj", input.grad(0)?)?;
    let mut out = input.none();
    out[0] = Some(call::unary("aten::view_as_real", &resolved)?);
    Ok(out)
}

/// `complex(real, imag)`: each part gets its part of the gradient.
fn complex(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(real_part(grad)?);
    }
    if input.needs(1) {
        out[1] = Some(imaginary_part(grad)?);
    }
    Ok(out)
}

/// `imag(z)`: the real gradient lands on the imaginary part (`0 + i grad`).
fn imag(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let zeros = call1("aten::zeros_like", vec![grad.clone()])?;
    let mut out = input.none();
    out[0] = Some(complex_of(&zeros, grad)?);
    Ok(out)
}

/// `polar(abs, angle) = abs (cos angle + i sin angle)`: with the gradient `gr + i gi`,
/// `abs` gets `gr cos + gi sin` and `angle` gets `abs (gi cos - gr sin)`.
fn polar(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let (gr, gi) = (real_part(grad)?, imaginary_part(grad)?);
    let angle = input.argument(1)?;
    let cos = call::unary("aten::cos", angle)?;
    let sin = call::unary("aten::sin", angle)?;
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(call::add(&mul(&gr, &cos)?, &mul(&gi, &sin)?)?);
    }
    if input.needs(1) {
        let turned = call::sub(&mul(&gi, &cos)?, &mul(&gr, &sin)?)?;
        out[1] = Some(mul(input.argument(0)?, &turned)?);
    }
    Ok(out)
}

/// `conj(z)`: the gradient conjugated (a no-op on real tensors).
fn conj(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(call::unary("aten::conj", input.grad(0)?)?);
    Ok(out)
}

/// The parts `(x, y)` of complex `z`, `r² = x² + y²`, and `r²` with its zeros replaced by
/// one (so that the masked-out quotients stay finite, also in a double backward).
fn polar_parts(z: &IValue) -> Result<(IValue, IValue, IValue, IValue)> {
    let (x, y) = (real_part(z)?, imaginary_part(z)?);
    let squared = call::add(&mul(&x, &x)?, &mul(&y, &y)?)?;
    let at_zero = call::compare_scalar("aten::eq.Scalar", &squared, 0.0)?;
    let safe = call1(
        "aten::where.ScalarSelf",
        vec![at_zero.clone(), call::float(1.0), squared],
    )?;
    Ok((x, y, safe, at_zero))
}

/// Zero where `at_zero`, else `value`.
fn zero_at(at_zero: &IValue, value: &IValue) -> Result<IValue> {
    call1(
        "aten::where.ScalarSelf",
        vec![at_zero.clone(), call::float(0.0), value.clone()],
    )
}

/// `angle(z)`: PyTorch's `angle_backward`, `grad * i z / |z|²` (zero at `z = 0`) for complex
/// `z`; zeros for real input, where the angle is piecewise constant.
fn angle(input: &FormulaInput) -> Result<Gradients> {
    let z = input.argument(0)?;
    let grad = input.grad(0)?;
    let mut out = input.none();
    if !input.dtype(0)?.is_complex() {
        out[0] = Some(call::scale(grad, 0.0)?);
        return Ok(out);
    }
    let (x, y, squared, at_zero) = polar_parts(z)?;
    let scaled = call::div(grad, &squared)?;
    let real = zero_at(&at_zero, &call::neg(&mul(&scaled, &y)?)?)?;
    let imaginary = zero_at(&at_zero, &mul(&scaled, &x)?)?;
    out[0] = Some(complex_of(&real, &imaginary)?);
    Ok(out)
}

/// `sgn(z) = z / |z|`: for complex `z`, PyTorch's `sgn_backward`,
/// `(grad - Re(grad conj(s)) s) / |z|` with `s = sgn(z)`, zero at `z = 0`; zeros for real
/// input (piecewise constant).
fn sgn(input: &FormulaInput) -> Result<Gradients> {
    let z = input.argument(0)?;
    let grad = input.grad(0)?;
    let mut out = input.none();
    if !input.dtype(0)?.is_complex() {
        out[0] = Some(call::scale(grad, 0.0)?);
        return Ok(out);
    }
    let (x, y, squared, at_zero) = polar_parts(z)?;
    let modulus = call::unary("aten::sqrt", &squared)?;
    let (sx, sy) = (call::div(&x, &modulus)?, call::div(&y, &modulus)?);
    let (gx, gy) = (real_part(grad)?, imaginary_part(grad)?);
    let along = call::add(&mul(&gx, &sx)?, &mul(&gy, &sy)?)?;
    let part = |g: &IValue, s: &IValue| -> Result<IValue> {
        zero_at(
            &at_zero,
            &call::div(&call::sub(g, &mul(&along, s)?)?, &modulus)?,
        )
    };
    out[0] = Some(complex_of(&part(&gx, &sx)?, &part(&gy, &sy)?)?);
    Ok(out)
}

formula_table![
    (
        "aten::view_as_real",
        "ViewAsRealBackward0",
        view_as_real,
        &[]
    ),
    (
        "aten::view_as_complex",
        "ViewAsComplexBackward0",
        view_as_complex,
        &[]
    ),
    ("aten::complex", "ComplexBackward0", complex, &[]),
    ("aten::imag", "ImagBackward0", imag, &[]),
    ("aten::polar", "PolarBackward0", polar, &[0, 1]),
    ("aten::conj", "ConjBackward0", conj, &[]),
    ("aten::conj_physical", "ConjPhysicalBackward0", conj, &[]),
    ("aten::angle", "AngleBackward0", angle, &[0]),
    ("aten::sgn", "SgnBackward0", sgn, &[0]),
];
