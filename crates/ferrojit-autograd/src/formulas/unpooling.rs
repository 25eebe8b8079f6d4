//! Derivatives of max unpooling (`max_unpool2d`, `max_unpool3d`) and of the patch
//! rearrangements `im2col` (`F.unfold`) and `col2im` (`F.fold`): unpooling placed each input
//! element at its index, so its gradient gathers the output gradient at those indices
//! (PyTorch's `max_pool_double_backward`); `im2col` and `col2im` are each other's adjoint.

use ferrojit_runtime::{IValue, Result};

use super::support::{refuse, zeros_of};
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call1, int, reshape, sizes_of};

/// Gathers the output gradient's last `spatial` dimensions, flattened, at the flat indices
/// (argument 1) each input element was written to.
fn gather_at_indices(input: &FormulaInput, spatial: usize) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let mut out = input.none();
    if !input.needs(0) {
        return Ok(out);
    }
    if sizes.iter().product::<usize>() == 0 {
        out[0] = Some(zeros_of(input, 0)?);
        return Ok(out);
    }
    if sizes.len() < spatial + 1 {
        return Err(refuse(format!(
            "max_unpool backward: expected an input of at least {} dimensions, got {}",
            spatial + 1,
            sizes.len()
        )));
    }
    let split = sizes.len() - spatial;
    let planes: usize = sizes[..split].iter().product();
    let plane: usize = sizes[split..].iter().product();
    let grad = input.grad(0)?;
    let outputs = call::tensor(grad)?.numel() / planes.max(1);
    let flat_grad = reshape(grad, &[planes, outputs])?;
    let flat_indices = reshape(input.argument(1)?, &[planes, plane])?;
    let gathered = call1("aten::gather", vec![flat_grad, int(1), flat_indices])?;
    out[0] = Some(reshape(&gathered, &sizes)?);
    Ok(out)
}

/// `max_unpool2d(self, indices, output_size)`.
fn max_unpool2d(input: &FormulaInput) -> Result<Gradients> {
    gather_at_indices(input, 2)
}

/// `max_unpool3d(self, indices, output_size, stride, padding)`.
fn max_unpool3d(input: &FormulaInput) -> Result<Gradients> {
    gather_at_indices(input, 3)
}

/// `im2col(self, kernel_size, dilation, padding, stride)`: `col2im` of the gradient back to
/// the input's spatial size.
fn im2col(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let mut out = input.none();
    if sizes.iter().product::<usize>() == 0 {
        out[0] = Some(zeros_of(input, 0)?);
        return Ok(out);
    }
    let spatial = &sizes[sizes.len().saturating_sub(2)..];
    let mut arguments: Vec<IValue> = vec![input.grad(0)?.clone(), sizes_of(spatial)];
    arguments.extend(input.arguments[1..5].iter().cloned());
    let folded = call1("aten::col2im", arguments)?;
    out[0] = Some(reshape(&folded, &sizes)?);
    Ok(out)
}

/// `col2im(self, output_size, kernel_size, dilation, padding, stride)`: `im2col` of the
/// gradient.
fn col2im(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let mut out = input.none();
    if sizes.iter().product::<usize>() == 0 {
        out[0] = Some(zeros_of(input, 0)?);
        return Ok(out);
    }
    let mut arguments: Vec<IValue> = vec![input.grad(0)?.clone()];
    arguments.extend(input.arguments[2..6].iter().cloned());
    let unfolded = call1("aten::im2col", arguments)?;
    out[0] = Some(reshape(&unfolded, &sizes)?);
    Ok(out)
}

formula_table![
    (
        "aten::max_unpool2d",
        "MaxUnpool2DBackward0",
        max_unpool2d,
        &[1]
    ),
    (
        "aten::max_unpool3d",
        "MaxUnpool3DBackward0",
        max_unpool3d,
        &[1]
    ),
    ("aten::im2col", "Im2ColBackward0", im2col, &[]),
    ("aten::col2im", "Col2ImBackward0", col2im, &[]),
];
