//! The runtime side of fusion: `prim::TypeCheck`, and the [`FusionBackend`] that runs a
//! `prim::FusionGroup` (a code generator above the runtime, such as ferrojit-codegen's
//! Cranelift backend). A group the backend cannot take, or any group when no backend is
//! installed, runs its subgraph in the interpreter, compiled once with the plan that holds it.
//!
//! The fuser guards each group with a `prim::TypeCheck` (see ferrojit-opt's `fuser::guard`):
//! it passes its inputs through and adds whether every one matches the type the group was
//! built for.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ferrojit_ir::{Graph, TensorRefinement, Type};
use ferrojit_tensor::Tensor;

use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;

/// Runs fusion groups as native code. Installed through
/// [`RunOptions::fusion_backend`](super::RunOptions::fusion_backend); travels with the run's
/// options into the tasks it forks.
pub trait FusionBackend: Send + Sync {
    /// Runs the group `group_key` (stable for one group node of one compiled plan for the life
    /// of the process), whose body is `subgraph`, on `inputs` (tensors only, in the
    /// subgraph's input order). `Ok(None)`: this group cannot be compiled, and the
    /// interpreter runs the subgraph instead. `Ok(Some(outputs))` must hold one tensor per
    /// subgraph output. `Err`: the group failed (the message names why).
    fn run_group(
        &self,
        group_key: u64,
        subgraph: &Graph,
        inputs: &[Tensor],
    ) -> std::result::Result<Option<Vec<Tensor>>, String>;
}

/// Hands out group keys: one per `prim::FusionGroup` node compiled, never reused.
pub(crate) fn next_group_key() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Whether `value` has type `expected`: a tensor whose dtype, sizes, strides, device and
/// `requires_grad` equal each fact the type states (facts it leaves out are not checked).
pub fn matches_checked_type(value: &IValue, expected: &TensorRefinement) -> bool {
    let IValue::Tensor(cell) = value else {
        return false;
    };
    let tensor = cell.get();
    let same_dims = |stated: &Option<Vec<Option<i64>>>, actual: &[usize]| match stated {
        None => true,
        Some(stated) => {
            stated.len() == actual.len()
                && stated
                    .iter()
                    .zip(actual)
                    .all(|(stated, &actual)| stated.is_none_or(|size| size == actual as i64))
        }
    };
    expected
        .scalar_type
        .as_deref()
        .is_none_or(|name| name == tensor.dtype().scalar_type_name())
        && same_dims(&expected.sizes, tensor.sizes())
        && same_dims(&expected.strides, tensor.strides())
        && expected
            .device
            .as_deref()
            .is_none_or(|device| device == "cpu")
        && expected
            .requires_grad
            .is_none_or(|requires_grad| requires_grad == cell.requires_grad())
        && expected.undefined != Some(true)
}

/// The refinements of a `prim::TypeCheck`'s `types` attribute; a type that is not a tensor
/// type is a malformed graph.
pub(crate) fn checked_types(types: &[Type]) -> Result<Vec<TensorRefinement>> {
    types
        .iter()
        .map(|ty| match ty {
            Type::RefinedTensor(refinement) => Ok((**refinement).clone()),
            Type::Tensor => Ok(TensorRefinement::default()),
            other => Err(RuntimeError::InvalidGraph(format!(
                "prim::TypeCheck can only check tensor types, not {other}"
            ))),
        })
        .collect()
}

/// Runs `prim::TypeCheck` on the top `types.len()` values of `stack`: leaves them and pushes
/// whether all match.
pub(crate) fn run_type_check(types: &[TensorRefinement], stack: &mut Vec<IValue>) -> Result<()> {
    let start = stack.len().checked_sub(types.len()).ok_or_else(|| {
        RuntimeError::InvalidGraph("corrupt code: operand stack underflow".into())
    })?;
    let passed = stack[start..]
        .iter()
        .zip(types)
        .all(|(value, expected)| matches_checked_type(value, expected));
    stack.push(IValue::Bool(passed));
    Ok(())
}

/// Offers the group on top of `stack` (its `num_inputs` inputs) to `backend`. On `true` the
/// inputs were replaced by the group's outputs; on `false` the stack is untouched and the
/// interpreter must run the subgraph.
pub(crate) fn try_backend(
    backend: &Arc<dyn FusionBackend>,
    group_key: u64,
    subgraph: &Graph,
    num_inputs: usize,
    num_outputs: usize,
    stack: &mut Vec<IValue>,
) -> Result<bool> {
    let start = stack.len().checked_sub(num_inputs).ok_or_else(|| {
        RuntimeError::InvalidGraph("corrupt code: operand stack underflow".into())
    })?;
    let inputs: Vec<Tensor> = stack[start..]
        .iter()
        .enumerate()
        .map(|(index, value)| match value {
            IValue::Tensor(cell) => Ok((*cell.get()).clone()),
            other => Err(RuntimeError::Argument(format!(
                "prim::FusionGroup input {index} must be a tensor, not {}",
                other.tag_name()
            ))),
        })
        .collect::<Result<_>>()?;
    let outputs = match backend.run_group(group_key, subgraph, &inputs) {
        Ok(Some(outputs)) => outputs,
        Ok(None) => return Ok(false),
        Err(message) => {
            return Err(RuntimeError::Other(format!(
                "fusion group {group_key} failed in the fusion backend: {message}"
            )))
        }
    };
    if outputs.len() != num_outputs {
        return Err(RuntimeError::Other(format!(
            "fusion group {group_key}: the fusion backend returned {} output(s) for a group \
             with {num_outputs}",
            outputs.len()
        )));
    }
    stack.truncate(start);
    stack.extend(outputs.into_iter().map(IValue::from));
    Ok(true)
}
