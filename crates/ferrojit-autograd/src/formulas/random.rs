//! Sampling operators (`bernoulli`, `normal`): PyTorch gives their tensor parameters a zero
//! gradient (derivatives.yaml), not a reparameterized one, so the gradient does not depend on
//! the draw.

use ferrojit_runtime::Result;

use super::support::zeros_of;
use super::{Formula, FormulaInput, Gradients};

/// Zeros for every tensor argument that needs a gradient.
fn zero_for_tensors(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    for (index, slot) in out.iter_mut().enumerate() {
        let is_tensor = input
            .input_meta
            .get(index)
            .is_some_and(|metas| metas.len() == 1 && metas[0].is_some());
        if is_tensor && input.needs(index) {
            *slot = Some(zeros_of(input, index)?);
        }
    }
    Ok(out)
}

formula_table![
    (
        "aten::bernoulli",
        "BernoulliBackward0",
        zero_for_tensors,
        &[]
    ),
    (
        "aten::bernoulli.p",
        "BernoulliBackward1",
        zero_for_tensors,
        &[]
    ),
    (
        "aten::bernoulli.Tensor",
        "BernoulliBackward2",
        zero_for_tensors,
        &[]
    ),
    (
        "aten::normal.Tensor_float",
        "NormalBackward1",
        zero_for_tensors,
        &[]
    ),
    (
        "aten::normal.float_Tensor",
        "NormalBackward2",
        zero_for_tensors,
        &[]
    ),
    (
        "aten::normal.Tensor_Tensor",
        "NormalBackward3",
        zero_for_tensors,
        &[]
    ),
];
