//! Derivatives of fractional max pooling (`fractional_max_pool2d`, `3d`): the output gradient
//! goes back to the input element each maximum came from, through the runtime's backward
//! kernels (`fractional_max_pool{2,3}d_backward`), whose own derivative gathers the incoming
//! gradient at those indices and gives `self` zeros, as PyTorch's formulas do.

use ferrojit_runtime::autograd::GradModeGuard;
use ferrojit_runtime::Result;

use super::support::{refuse, zeros_of};
use super::{Formula, FormulaInput, Gradients};
use crate::call::{call, call1, int, reshape};

/// `fractional_max_pool{2,3}d(self, kernel_size, output_size, random_samples)`: the
/// backward kernel on the indices, recomputed without recording from the same samples.
fn pool(input: &FormulaInput, forward: &str, backward: &str) -> Result<Gradients> {
    let mut out = input.none();
    if !input.needs(0) {
        return Ok(out);
    }
    let indices = {
        let _no_grad = GradModeGuard::new(false);
        call(forward, input.arguments.to_vec())?
            .into_iter()
            .nth(1)
            .ok_or_else(|| refuse(format!("autograd: {forward} returned no indices")))?
    };
    out[0] = Some(call1(
        backward,
        vec![
            input.grad(0)?.clone(),
            input.argument(0)?.clone(),
            input.argument(1)?.clone(),
            input.argument(2)?.clone(),
            indices,
        ],
    )?);
    Ok(out)
}

fn pool2d(input: &FormulaInput) -> Result<Gradients> {
    pool(
        input,
        "aten::fractional_max_pool2d",
        "aten::fractional_max_pool2d_backward",
    )
}

fn pool3d(input: &FormulaInput) -> Result<Gradients> {
    pool(
        input,
        "aten::fractional_max_pool3d",
        "aten::fractional_max_pool3d_backward",
    )
}

/// `fractional_max_pool{2,3}d_backward(grad_output, self, kernel_size, output_size,
/// indices)`: linear in `grad_output`, whose gradient is the incoming one (shaped as `self`)
/// gathered at the indices; `self` gets zeros.
fn pool_backward(input: &FormulaInput, spatial: usize) -> Result<Gradients> {
    let mut out = input.none();
    if input.needs(0) {
        let output_sizes = input.sizes(0)?;
        let input_sizes = input.sizes(1)?;
        if input_sizes.len() < spatial + 1 || output_sizes.len() != input_sizes.len() {
            return Err(refuse(format!(
                "fractional max pooling double backward: expected an input of at least {} \
                 dimensions and an output gradient of the same rank",
                spatial + 1
            )));
        }
        let split = input_sizes.len() - spatial;
        let planes: usize = input_sizes[..split].iter().product();
        let plane: usize = input_sizes[split..].iter().product();
        let outputs: usize = output_sizes[split..].iter().product();
        if planes * outputs == 0 {
            out[0] = Some(zeros_of(input, 0)?);
        } else {
            let grad = reshape(input.grad(0)?, &[planes, plane])?;
            let indices = reshape(input.argument(4)?, &[planes, outputs])?;
            let gathered = call1("aten::gather", vec![grad, int(1), indices])?;
            out[0] = Some(reshape(&gathered, &output_sizes)?);
        }
    }
    if input.needs(1) {
        out[1] = Some(zeros_of(input, 1)?);
    }
    Ok(out)
}

fn pool2d_backward(input: &FormulaInput) -> Result<Gradients> {
    pool_backward(input, 2)
}

fn pool3d_backward(input: &FormulaInput) -> Result<Gradients> {
    pool_backward(input, 3)
}

formula_table![
    (
        "aten::fractional_max_pool2d",
        "FractionalMaxPool2DBackward0",
        pool2d,
        &[0, 3]
    ),
    (
        "aten::fractional_max_pool3d",
        "FractionalMaxPool3DBackward0",
        pool3d,
        &[0, 3]
    ),
    (
        "aten::fractional_max_pool2d_backward",
        "FractionalMaxPool2DBackwardBackward0",
        pool2d_backward,
        &[4]
    ),
    (
        "aten::fractional_max_pool3d_backward",
        "FractionalMaxPool3DBackwardBackward0",
        pool3d_backward,
        &[4]
    ),
];
