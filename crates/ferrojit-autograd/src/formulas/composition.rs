//! Differentiating an operator through a composition of other operators: the composition
//! runs on fresh leaves holding the saved arguments' values, with recording on, and the
//! engine takes its gradient for the node's output gradients. This serves operators that
//! PyTorch itself differentiates through a decomposition (or whose formula is a long manual
//! derivation) when every operator of the composition has a formula. First order only: the
//! gradients have no history back to the original arguments.

use std::sync::Arc;

use ferrojit_runtime::autograd::GradModeGuard;
use ferrojit_runtime::{IValue, Result, TensorCell};

use super::support::refuse;
use super::{FormulaInput, Gradients};
use crate::engine::{grad, GradOptions};

/// The gradients of `compose(arguments)` (its outputs in the operator's output order) with
/// respect to the tensor arguments `differentiable` that need one.
pub fn through_composition(
    input: &FormulaInput,
    differentiable: &[usize],
    compose: impl Fn(&[IValue]) -> Result<Vec<IValue>>,
) -> Result<Gradients> {
    let mut arguments = input.arguments.to_vec();
    let mut leaves: Vec<(usize, Arc<TensorCell>)> = Vec::new();
    for &index in differentiable {
        if !input.needs(index) {
            continue;
        }
        let value = input.argument(index)?.to_tensor()?;
        let leaf = IValue::tensor_with_requires_grad((*value).clone(), true);
        leaves.push((index, Arc::clone(leaf.to_tensor_cell()?)));
        arguments[index] = leaf;
    }
    let mut out = input.none();
    if leaves.is_empty() {
        return Ok(out);
    }
    let outputs = {
        let _recording = GradModeGuard::new(true);
        compose(&arguments)?
    };
    let mut cells = Vec::new();
    let mut seeds = Vec::new();
    for (position, output) in outputs.iter().enumerate() {
        let cell = output.to_tensor_cell()?;
        let seed = input.grads.get(position).cloned().flatten();
        if cell.requires_grad() && seed.is_some() {
            cells.push(Arc::clone(cell));
            seeds.push(seed);
        }
    }
    if cells.is_empty() {
        return Ok(out);
    }
    let inputs: Vec<Arc<TensorCell>> = leaves.iter().map(|(_, cell)| Arc::clone(cell)).collect();
    let gradients = grad(&cells, &inputs, &seeds, GradOptions::default(), true)?;
    if gradients.len() != leaves.len() {
        return Err(refuse(
            "autograd: a composition's gradient has the wrong length",
        ));
    }
    for ((index, _), gradient) in leaves.iter().zip(gradients) {
        out[*index] = gradient;
    }
    Ok(out)
}
