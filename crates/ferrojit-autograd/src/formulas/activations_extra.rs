//! Derivatives of the piecewise activations (`elu` family, `leaky_relu`, `hardtanh`/`relu6`,
//! `hardsigmoid`, `hardswish`, `hardshrink`, `threshold`) and the smooth ones (`softplus`,
//! `mish`), after PyTorch's `*_backward` kernels: the branch taken at a boundary point is
//! PyTorch's, so the gradient at a kink matches.

use ferrojit_runtime::{IValue, Result};

use super::support::{against, binary, connected_to, keep_where, zero_where};
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, mul, scale};

/// `grad * derivative` as the gradient of `self`.
fn times(input: &FormulaInput, derivative: &IValue) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(connected_to(
        mul(input.grad(0)?, derivative)?,
        input.argument(0)?,
    )?);
    Ok(out)
}

/// `grad` where `mask` holds, zero elsewhere, as the gradient of `self`.
fn pass_where(input: &FormulaInput, mask: &IValue) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(connected_to(
        keep_where(mask, input.grad(0)?)?,
        input.argument(0)?,
    )?);
    Ok(out)
}

/// PyTorch's `elu_backward` on the input (not the result): `scale` where `x > 0`, else
/// `input_scale * alpha * scale * exp(x * input_scale)`.
fn elu_gradient(
    input: &FormulaInput,
    alpha: f64,
    scale_: f64,
    input_scale: f64,
) -> Result<Gradients> {
    let x = input.argument(0)?;
    let negative = scale(
        &call::unary("aten::exp", &scale(x, input_scale)?)?,
        input_scale * alpha * scale_,
    )?;
    let positive = against("aten::gt.Scalar", x, 0.0)?;
    let derivative = call::call1(
        "aten::where.ScalarSelf",
        vec![positive, call::float(scale_), negative],
    )?;
    times(input, &derivative)
}

/// `elu(self, alpha, scale, input_scale)`.
fn elu(input: &FormulaInput) -> Result<Gradients> {
    elu_gradient(input, input.number(1)?, input.number(2)?, input.number(3)?)
}

/// `celu(self, alpha)`: `elu` with `input_scale = 1 / alpha`.
fn celu(input: &FormulaInput) -> Result<Gradients> {
    let alpha = input.number(1)?;
    elu_gradient(input, alpha, 1.0, 1.0 / alpha)
}

/// `selu(self)`: `elu` with PyTorch's fixed alpha and scale.
fn selu(input: &FormulaInput) -> Result<Gradients> {
    elu_gradient(input, 1.673_263_242_354_377_3, 1.050_700_987_355_480_5, 1.0)
}

/// `leaky_relu(self, negative_slope)`: 1 where `x > 0`, the slope elsewhere.
fn leaky_relu(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let slope = input.number(1)?;
    let positive = against("aten::gt.Scalar", x, 0.0)?;
    let grad = input.grad(0)?;
    let mut out = input.none();
    let gradient = call::call1(
        "aten::where.self",
        vec![positive, grad.clone(), scale(grad, slope)?],
    )?;
    out[0] = Some(connected_to(gradient, x)?);
    Ok(out)
}

/// The gradient passes strictly inside `(low, high)` (`hardtanh_backward`).
fn strictly_inside(input: &FormulaInput, low: f64, high: f64) -> Result<IValue> {
    let x = input.argument(0)?;
    binary(
        "aten::logical_and",
        &against("aten::gt.Scalar", x, low)?,
        &against("aten::lt.Scalar", x, high)?,
    )
}

/// `hardtanh(self, min_val, max_val)`.
fn hardtanh(input: &FormulaInput) -> Result<Gradients> {
    let mask = strictly_inside(input, input.number(1)?, input.number(2)?)?;
    pass_where(input, &mask)
}

/// `relu6(self)` is `hardtanh(self, 0, 6)`.
fn relu6(input: &FormulaInput) -> Result<Gradients> {
    let mask = strictly_inside(input, 0.0, 6.0)?;
    pass_where(input, &mask)
}

/// `hardsigmoid(self)`: 1/6 strictly inside (-3, 3).
fn hardsigmoid(input: &FormulaInput) -> Result<Gradients> {
    let mask = strictly_inside(input, -3.0, 3.0)?;
    let mut out = input.none();
    out[0] = Some(keep_where(&mask, &scale(input.grad(0)?, 1.0 / 6.0)?)?);
    Ok(out)
}

/// `hardswish(self)`: 0 below -3, `x / 3 + 1/2` up to 3 (inclusive), 1 above.
fn hardswish(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let middle = call::add_scalar(&scale(x, 1.0 / 3.0)?, 0.5)?;
    let above = against("aten::gt.Scalar", x, 3.0)?;
    let upper = call::call1(
        "aten::where.ScalarSelf",
        vec![above, call::float(1.0), middle],
    )?;
    let below = against("aten::lt.Scalar", x, -3.0)?;
    let derivative = zero_where(&below, &upper)?;
    times(input, &derivative)
}

/// `hardshrink(self, lambd)`: zero on `[-lambd, lambd]`, the gradient elsewhere.
fn hardshrink(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let lambd = input.number(1)?;
    let inside = binary(
        "aten::logical_and",
        &against("aten::ge.Scalar", x, -lambd)?,
        &against("aten::le.Scalar", x, lambd)?,
    )?;
    let mut out = input.none();
    out[0] = Some(connected_to(zero_where(&inside, input.grad(0)?)?, x)?);
    Ok(out)
}

/// `threshold(self, threshold, value)`: zero where `x <= threshold`.
fn threshold(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let below = against("aten::le.Scalar", x, input.number(1)?)?;
    let mut out = input.none();
    out[0] = Some(connected_to(zero_where(&below, input.grad(0)?)?, x)?);
    Ok(out)
}

/// `softplus(self, beta, threshold)`: `z / (z + 1)` with `z = exp(beta x)`, 1 where
/// `beta x > threshold` (where the forward is the identity).
fn softplus(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let beta = input.number(1)?;
    let limit = input.number(2)?;
    let scaled = scale(x, beta)?;
    let z = call::unary("aten::exp", &scaled)?;
    let smooth = call::div(&z, &call::add_scalar(&z, 1.0)?)?;
    let linear = against("aten::gt.Scalar", &scaled, limit)?;
    let derivative = call::call1(
        "aten::where.ScalarSelf",
        vec![linear, call::float(1.0), smooth],
    )?;
    times(input, &derivative)
}

/// `mish(self) = x tanh(softplus(x))`: `t + x sigmoid(x) (1 - t²)`, `t = tanh(softplus(x))`.
fn mish(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let t = call::unary("aten::tanh", &call::unary("aten::softplus", x)?)?;
    let sigmoid = call::unary("aten::sigmoid", x)?;
    let sech_squared = call::rsub_scalar(&mul(&t, &t)?, 1.0)?;
    let derivative = call::add(&t, &mul(&mul(x, &sigmoid)?, &sech_squared)?)?;
    times(input, &derivative)
}

formula_table![
    ("aten::elu", "EluBackward0", elu, &[0]),
    ("aten::celu", "CeluBackward0", celu, &[0]),
    ("aten::selu", "EluBackward0", selu, &[0]),
    ("aten::leaky_relu", "LeakyReluBackward0", leaky_relu, &[0]),
    ("aten::hardtanh", "HardtanhBackward0", hardtanh, &[0]),
    ("aten::relu6", "HardtanhBackward0", relu6, &[0]),
    (
        "aten::hardsigmoid",
        "HardsigmoidBackward0",
        hardsigmoid,
        &[0]
    ),
    ("aten::hardswish", "HardswishBackward0", hardswish, &[0]),
    ("aten::hardshrink", "HardshrinkBackward0", hardshrink, &[0]),
    ("aten::threshold", "ThresholdBackward0", threshold, &[0]),
    ("aten::softplus", "SoftplusBackward0", softplus, &[0]),
    ("aten::mish", "MishBackward0", mish, &[0]),
];
