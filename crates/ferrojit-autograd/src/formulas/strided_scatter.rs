//! The derivative of `as_strided_scatter(self, src, size, stride, storage_offset)`: `src`
//! receives the strided window of the gradient. For `self`, PyTorch 2.15's
//! `as_strided_scatter_backward` returns the gradient inside that window and zeros outside
//! it (measured: `as_strided_scatter(x, s, (2,), (1,), 1)` with gradient `[1, 2, 3, 4]`
//! gives `x` the gradient `[0, 2, 3, 0]`), the opposite of the mathematical derivative;
//! ferrojit follows PyTorch so that gradients agree.

use ferrojit_runtime::Result;

use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call1};

fn as_strided_scatter(input: &FormulaInput) -> Result<Gradients> {
    let grad = call1("aten::contiguous", vec![input.grad(0)?.clone()])?;
    let (size, stride, offset) = (
        input.argument(2)?.clone(),
        input.argument(3)?.clone(),
        input.argument(4)?.clone(),
    );
    let window = call1(
        "aten::as_strided",
        vec![grad.clone(), size.clone(), stride.clone(), offset.clone()],
    )?;
    let window = call1("aten::clone", vec![window])?;
    let mut out = input.none();
    if input.needs(0) {
        let zeros = call::zeros(&call::sizes(&grad)?, call::tensor(&grad)?.dtype())?;
        out[0] = Some(call1(
            "aten::as_strided_scatter",
            vec![zeros, window.clone(), size, stride, offset],
        )?);
    }
    if input.needs(1) {
        out[1] = Some(window);
    }
    Ok(out)
}

formula_table![(
    "aten::as_strided_scatter",
    "AsStridedScatterBackward0",
    as_strided_scatter,
    &[]
)];
