//! Derivatives of the runtime's pooling backward kernels, which first-order formulas call
//! (so these give the double backward), and of `where` with a number for one branch (which
//! the formulas use for masking): each backward kernel is linear in its output gradient, so
//! that gradient receives the forward pooling (or the gather at the pooling indices) of the
//! incoming gradient, and `self` receives zeros, as PyTorch's formulas give it.

use ferrojit_runtime::Result;

use super::support::{keep_where, zero_where, zeros_of};
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call1, int, reshape};

/// `avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
/// count_include_pad, divisor_override)`.
fn avg_pool2d_backward(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    if input.needs(0) {
        let mut arguments = vec![input.grad(0)?.clone()];
        arguments.extend(input.arguments[2..8].iter().cloned());
        out[0] = Some(call1("aten::avg_pool2d", arguments)?);
    }
    if input.needs(1) {
        out[1] = Some(zeros_of(input, 1)?);
    }
    Ok(out)
}

/// `max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding,
/// dilation, ceil_mode, indices)`: the incoming gradient gathered at the indices (flat
/// positions within each plane).
fn max_pool2d_with_indices_backward(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    if input.needs(0) {
        let output_sizes = input.sizes(0)?;
        let input_sizes = input.sizes(1)?;
        let split = output_sizes.len().saturating_sub(2);
        let planes: usize = output_sizes[..split].iter().product();
        let outputs: usize = output_sizes[split..].iter().product();
        let plane: usize = input_sizes[split.min(input_sizes.len())..].iter().product();
        if planes * outputs == 0 {
            out[0] = Some(zeros_of(input, 0)?);
        } else {
            let grad = reshape(input.grad(0)?, &[planes, plane])?;
            let indices = reshape(input.argument(7)?, &[planes, outputs])?;
            let gathered = call1("aten::gather", vec![grad, int(1), indices])?;
            out[0] = Some(reshape(&gathered, &output_sizes)?);
        }
    }
    if input.needs(1) {
        out[1] = Some(zeros_of(input, 1)?);
    }
    Ok(out)
}

/// `where(condition, self, other)` with a number `other`: `self` receives the gradient
/// where the condition holds.
fn where_scalar_other(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    if input.needs(1) {
        let gradient = keep_where(input.argument(0)?, input.grad(0)?)?;
        out[1] = Some(call::sum_to(&gradient, &input.sizes(1)?)?);
    }
    Ok(out)
}

/// `where(condition, self, other)` with a number `self`: `other` receives the gradient
/// where the condition fails.
fn where_scalar_self(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    if input.needs(2) {
        let gradient = zero_where(input.argument(0)?, input.grad(0)?)?;
        out[2] = Some(call::sum_to(&gradient, &input.sizes(2)?)?);
    }
    Ok(out)
}

formula_table![
    (
        "aten::avg_pool2d_backward",
        "AvgPool2DBackwardBackward0",
        avg_pool2d_backward,
        &[]
    ),
    (
        "aten::max_pool2d_with_indices_backward",
        "MaxPool2DWithIndicesBackwardBackward0",
        max_pool2d_with_indices_backward,
        &[7]
    ),
    (
        "aten::where.ScalarOther",
        "WhereBackward0",
        where_scalar_other,
        &[0]
    ),
    (
        "aten::where.ScalarSelf",
        "WhereBackward0",
        where_scalar_self,
        &[0]
    ),
];
