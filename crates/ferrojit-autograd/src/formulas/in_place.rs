//! Derivatives of in-place forms (`sqrt_`, `clamp_min_`, `lerp_`, `copy_`, `squeeze_`,
//! `transpose_`) whose out-of-place formula cannot simply be reused. An in-place call's
//! saved `self` is read after the kernel wrote it, so it is the result: the formulas that
//! need a value read it as the result, as PyTorch's in-place formulas do (`sqrt_`'s
//! `grad / (2 result)`, `clamp_min_`'s `result > min`, which also gives zero where `self`
//! was exactly `min`). Note: such a saved result holds its own `grad_fn`; the cycle is
//! broken when a backward releases the node's saved tensors.

use ferrojit_runtime::{Result, RuntimeError};

use super::support::{against, give_summed, keep_where};
use super::variants::same_as;
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call1, int, mul, scale};

/// `sqrt_(self)`: `grad / (2 result)`.
fn sqrt_in_place(input: &FormulaInput) -> Result<Gradients> {
    let result = input.argument(0)?;
    let mut out = input.none();
    out[0] = Some(call::div(input.grad(0)?, &scale(result, 2.0)?)?);
    Ok(out)
}

/// `clamp_min_(self, min)`: the gradient where the result is above `min`.
fn clamp_min_in_place(input: &FormulaInput) -> Result<Gradients> {
    let above = against("aten::gt.Scalar", input.argument(0)?, input.number(1)?)?;
    let mut out = input.none();
    out[0] = Some(keep_where(&above, input.grad(0)?)?);
    Ok(out)
}

/// `lerp_(self, end, weight)` with a number weight: `self + weight (end - self)`, so
/// `grad (1 - weight)` and `grad weight` (summed to `end`'s shape).
fn lerp_scalar_in_place(input: &FormulaInput) -> Result<Gradients> {
    let weight = input.number(2)?;
    let grad = input.grad(0)?;
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(scale(grad, 1.0 - weight)?);
    }
    give_summed(input, &mut out, 1, || scale(grad, weight))?;
    Ok(out)
}

/// `lerp_(self, end, weight)` with a tensor weight: `grad (1 - weight)` and `grad weight`.
/// The weight's own gradient, `grad (end - self)`, needs the `self` the call overwrote.
fn lerp_tensor_in_place(input: &FormulaInput) -> Result<Gradients> {
    if input.needs(2) {
        return Err(RuntimeError::Other(
            "the derivative for 'lerp_' with respect to a tensor weight is not implemented: \
             the call overwrote self"
                .into(),
        ));
    }
    let weight = input.argument(2)?;
    let grad = input.grad(0)?;
    let mut out = input.none();
    give_summed(input, &mut out, 0, || call::sub(grad, &mul(grad, weight)?))?;
    give_summed(input, &mut out, 1, || mul(grad, weight))?;
    Ok(out)
}

/// `copy_(self, src)`: `self`'s old values are gone (a zero gradient), `src` gets the
/// gradient summed to its shape and in its dtype.
fn copy_in_place(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(call::unary("aten::zeros_like", grad)?);
    }
    if input.needs(1) {
        let mut gradient = call::sum_to(grad, &input.sizes(1)?)?;
        let dtype = input.dtype(1)?;
        if call::tensor(&gradient)?.dtype() != dtype {
            gradient = call1(
                "aten::to.dtype",
                vec![gradient, int(dtype.scalar_type_index())],
            )?;
        }
        out[1] = Some(gradient);
    }
    Ok(out)
}

// The in-place views read only `self`'s shape before the call, as their views do.
fn squeeze_in_place(input: &FormulaInput) -> Result<Gradients> {
    same_as(input, "aten::squeeze")
}

fn squeeze_dim_in_place(input: &FormulaInput) -> Result<Gradients> {
    same_as(input, "aten::squeeze.dim")
}

fn squeeze_dims_in_place(input: &FormulaInput) -> Result<Gradients> {
    same_as(input, "aten::squeeze.dims")
}

fn transpose_in_place(input: &FormulaInput) -> Result<Gradients> {
    same_as(input, "aten::transpose.int")
}

formula_table![
    ("aten::sqrt_", "SqrtBackward0", sqrt_in_place, &[0]),
    (
        "aten::clamp_min_",
        "ClampMinBackward0",
        clamp_min_in_place,
        &[0]
    ),
    (
        "aten::lerp_.Scalar",
        "LerpBackward0",
        lerp_scalar_in_place,
        &[]
    ),
    (
        "aten::lerp_.Tensor",
        "LerpBackward1",
        lerp_tensor_in_place,
        &[2]
    ),
    ("aten::copy_", "CopyBackwards", copy_in_place, &[]),
    ("aten::copy_.Tensor", "CopyBackwards", copy_in_place, &[]),
    ("aten::squeeze_", "SqueezeBackward0", squeeze_in_place, &[]),
    (
        "aten::squeeze_.dim",
        "SqueezeBackward1",
        squeeze_dim_in_place,
        &[]
    ),
    (
        "aten::squeeze_.dims",
        "SqueezeBackward2",
        squeeze_dims_in_place,
        &[]
    ),
    (
        "aten::transpose_",
        "TransposeBackward0",
        transpose_in_place,
        &[]
    ),
];
