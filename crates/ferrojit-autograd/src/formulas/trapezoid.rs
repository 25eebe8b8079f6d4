//! Derivatives of the trapezoid rule (`trapezoid`/`trapz` and `cumulative_trapezoid`, with
//! sample points `x` or a spacing `dx`) and of `torch.gradient`'s finite differences: each
//! interval adds `dx_i (y_i + y_{i+1}) / 2`, so `y_i` collects half of the two intervals it
//! bounds and `x_i` the difference of the two interval averages beside it; a difference
//! stencil's gradient is the stencil transposed.

use ferrojit_runtime::{IValue, Result};

use super::support::refuse;
use super::{wrap_dim, Formula, FormulaInput, Gradients};
use crate::call::{self, call1, int, mul, sum_to, tensor_list};

fn slice(value: &IValue, dim: i64, start: usize, length: usize) -> Result<IValue> {
    call1(
        "aten::narrow",
        vec![
            value.clone(),
            int(dim),
            int(start as i64),
            int(length as i64),
        ],
    )
}

/// `value` with a zero slice added before (`front`) or after it along `dim`.
fn padded(value: &IValue, dim: i64, front: bool) -> Result<IValue> {
    let zero = call::scale(&slice(value, dim, 0, 1)?, 0.0)?;
    let pieces = if front {
        vec![zero, value.clone()]
    } else {
        vec![value.clone(), zero]
    };
    call1("aten::cat", vec![tensor_list(pieces), int(dim)])
}

/// The gradient reaching each interval: `grad` with the reduced dim restored
/// (`cumulative`: the sum of the gradients of every running total that includes it).
fn per_interval(grad: &IValue, dim: i64, cumulative: bool) -> Result<IValue> {
    if cumulative {
        let dims = IValue::int_list(&[dim]);
        let flipped = call1("aten::flip", vec![grad.clone(), dims.clone()])?;
        let summed = call1("aten::cumsum", vec![flipped, int(dim)])?;
        call1("aten::flip", vec![summed, dims])
    } else {
        call1("aten::unsqueeze", vec![grad.clone(), int(dim)])
    }
}

/// Argument layout `(y, x or dx, dim)`.
fn trapezoid_with(input: &FormulaInput, cumulative: bool) -> Result<Gradients> {
    let y = input.argument(0)?;
    let sizes = input.sizes(0)?;
    let dim = wrap_dim(input.int(2)?, sizes.len()) as i64;
    let count = sizes.get(dim as usize).copied().unwrap_or(0);
    if count < 2 {
        return Err(refuse(
            "the derivative for a trapezoid rule over fewer than two samples is not implemented.",
        ));
    }
    let spacing = input.argument(1)?;
    let tensor_spacing = matches!(spacing, IValue::Tensor(_));
    if tensor_spacing && input.sizes(1)?.len() != sizes.len() {
        return Err(refuse(
            "the derivative for trapezoid with 1-D sample points on an N-D input is not implemented.",
        ));
    }
    let grad = per_interval(input.grad(0)?, dim, cumulative)?;
    let intervals = count - 1;
    let widths = if tensor_spacing {
        call1(
            "aten::sub.Tensor",
            vec![
                slice(spacing, dim, 1, intervals)?,
                slice(spacing, dim, 0, intervals)?,
            ],
        )?
    } else {
        IValue::Double(
            spacing
                .to_double()
                .or_else(|_| spacing.to_int().map(|v| v as f64))?,
        )
    };
    let mut out = input.none();
    if input.needs(0) {
        let half = match &widths {
            IValue::Double(width) => call::scale(&grad, width / 2.0)?,
            tensor => call::scale(&mul(&grad, tensor)?, 0.5)?,
        };
        let gradient = call::add(&padded(&half, dim, false)?, &padded(&half, dim, true)?)?;
        out[0] = Some(sum_to(&gradient, &sizes)?);
    }
    if tensor_spacing && input.needs(1) {
        let averages = call::scale(
            &call::add(&slice(y, dim, 1, intervals)?, &slice(y, dim, 0, intervals)?)?,
            0.5,
        )?;
        let per_width = mul(&grad, &averages)?;
        let gradient = call::sub(
            &padded(&per_width, dim, true)?,
            &padded(&per_width, dim, false)?,
        )?;
        out[1] = Some(sum_to(&gradient, &input.sizes(1)?)?);
    }
    Ok(out)
}

fn trapezoid(input: &FormulaInput) -> Result<Gradients> {
    trapezoid_with(input, false)
}

fn cumulative_trapezoid(input: &FormulaInput) -> Result<Gradients> {
    trapezoid_with(input, true)
}

/// The adjoint of `torch.gradient`'s first-order stencil along `dim` with spacing `h`:
/// one-sided differences at the ends, central ones inside.
fn stencil_adjoint(grad: &IValue, dim: usize, h: f64) -> Result<IValue> {
    let sizes = call::sizes(grad)?;
    let count = sizes[dim];
    let axis = dim as i64;
    let dtype = call::tensor(grad)?.dtype();
    let zeros = |width: usize| {
        let mut shape = sizes.clone();
        shape[dim] = width;
        call::zeros(&shape, dtype)
    };
    let join = |pieces: Vec<IValue>| call1("aten::cat", vec![tensor_list(pieces), int(axis)]);
    let first = call::scale(&slice(grad, axis, 0, 1)?, 1.0 / h)?;
    let last = call::scale(&slice(grad, axis, count - 1, 1)?, 1.0 / h)?;
    let mut total = call::add(
        &join(vec![call::neg(&first)?, first, zeros(count - 2)?])?,
        &join(vec![zeros(count - 2)?, call::neg(&last)?, last])?,
    )?;
    if count > 2 {
        let inner = call::scale(&slice(grad, axis, 1, count - 2)?, 0.5 / h)?;
        let forward = join(vec![zeros(2)?, inner.clone()])?;
        let backward = join(vec![inner, zeros(2)?])?;
        total = call::add(&total, &call::sub(&forward, &backward)?)?;
    }
    Ok(total)
}

/// `gradient.scalarint(self, spacing, dim, edge_order)` and `gradient.scalararray(self,
/// spacing, dim, edge_order)` with one uniform spacing and `edge_order = 1`: each output's
/// stencil transposed, summed.
fn gradient(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let spacing = match input.argument(1)? {
        IValue::None => 1.0,
        IValue::Int(value) => *value as f64,
        other => other.to_double()?,
    };
    if input.int(3)? != 1 {
        return Err(refuse(
            "the derivative for 'gradient' with edge_order=2 is not implemented.",
        ));
    }
    let dims: Vec<usize> = match input.argument(2)? {
        IValue::None => (0..sizes.len()).collect(),
        IValue::Int(dim) => vec![wrap_dim(*dim, sizes.len())],
        other => other
            .to_int_vec()?
            .into_iter()
            .map(|dim| wrap_dim(dim, sizes.len()))
            .collect(),
    };
    let mut total: Option<IValue> = None;
    for (output, &dim) in dims.iter().enumerate() {
        if sizes[dim] < 2 {
            return Err(refuse(
                "torch.gradient expected each dimension size to be at least edge_order+1",
            ));
        }
        let Some(Some(grad)) = input.grads.get(output) else {
            continue;
        };
        let part = stencil_adjoint(grad, dim, spacing)?;
        total = Some(match total {
            Some(previous) => call::add(&previous, &part)?,
            None => part,
        });
    }
    let mut out = input.none();
    out[0] = total;
    Ok(out)
}

formula_table![
    (
        "aten::gradient.scalarint",
        "GradientBackward0",
        gradient,
        &[]
    ),
    (
        "aten::gradient.scalararray",
        "GradientBackward0",
        gradient,
        &[]
    ),
    (
        "aten::trapezoid.x",
        "TrapezoidBackward0",
        trapezoid,
        &[0, 1]
    ),
    ("aten::trapezoid.dx", "TrapezoidBackward0", trapezoid, &[0]),
    ("aten::trapz.x", "TrapezoidBackward0", trapezoid, &[0, 1]),
    ("aten::trapz.dx", "TrapezoidBackward0", trapezoid, &[0]),
    (
        "aten::cumulative_trapezoid.x",
        "CumulativeTrapezoidBackward0",
        cumulative_trapezoid,
        &[0, 1]
    ),
    (
        "aten::cumulative_trapezoid.dx",
        "CumulativeTrapezoidBackward0",
        cumulative_trapezoid,
        &[0]
    ),
];
