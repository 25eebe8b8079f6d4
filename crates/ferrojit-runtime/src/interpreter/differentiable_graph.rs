//! Running `prim::DifferentiableGraph` nodes (PyTorch's `DifferentiableGraphOp` in
//! graph_executor.cpp). The node's `Subgraph` runs as a call when no gradient is recorded;
//! when the graph executor attached a symbolic gradient (the `forward` and `backward` graph
//! attributes, see ferrojit-opt's `autodiff::differentiate`), grad mode is on and an input
//! requires grad, the installed [`DifferentiableGraphHook`] runs the forward graph and
//! records one backward node for the whole group (the autograd crate installs it).

use std::sync::{Arc, OnceLock};

use ferrojit_ir::{AttributeValue, Graph, NodeId};

use super::code::{compile_with_registry, Code};
use crate::ivalue::IValue;
use crate::registry::OperatorRegistry;
use crate::{Result, RuntimeError};

fn invalid(message: &str) -> RuntimeError {
    RuntimeError::InvalidGraph(message.to_string())
}

/// The attribute holding the forward graph (subgraph outputs, then saved values).
pub const FORWARD_ATTRIBUTE: &str = "forward";
/// The attribute holding the backward graph (output gradients and saved values in, one
/// gradient per input out).
pub const BACKWARD_ATTRIBUTE: &str = "backward";

/// A group's symbolic gradient, as the interpreter hands it to the hook: both graphs, and
/// their code, compiled once with the plan.
#[derive(Debug)]
pub struct SymbolicGradient {
    pub forward: Arc<Graph>,
    pub backward: Arc<Graph>,
    pub forward_code: Arc<Code>,
    pub backward_code: Arc<Code>,
    /// How many of the forward graph's outputs are the node's outputs (the rest are saved).
    pub num_outputs: usize,
}

/// Runs a group with its symbolic gradient and records its backward node.
pub trait DifferentiableGraphHook: Send + Sync {
    /// Runs `gradient.forward` on `inputs`; returns the node's outputs.
    fn run(&self, gradient: &SymbolicGradient, inputs: Vec<IValue>) -> Result<Vec<IValue>>;
}

static HOOK: OnceLock<Box<dyn DifferentiableGraphHook>> = OnceLock::new();

/// Installs the process's hook; false (and `hook` dropped) when one already is.
pub fn install_differentiable_graph_hook(hook: Box<dyn DifferentiableGraphHook>) -> bool {
    HOOK.set(hook).is_ok()
}

/// The installed hook, if any.
pub fn differentiable_graph_hook() -> Option<&'static dyn DifferentiableGraphHook> {
    HOOK.get().map(|hook| &**hook)
}

/// The symbolic gradient attached to `node`, when both graphs are there and agree with the
/// node's arity; `Err` for graphs that do not.
pub fn attached_gradient(
    graph: &Graph,
    node: NodeId,
    num_inputs: usize,
    num_outputs: usize,
    registry: &OperatorRegistry,
) -> Result<Option<SymbolicGradient>> {
    let forward = match graph.attribute(node, FORWARD_ATTRIBUTE) {
        Some(AttributeValue::Graph(forward)) => forward,
        _ => return Ok(None),
    };
    let Some(AttributeValue::Graph(backward)) = graph.attribute(node, BACKWARD_ATTRIBUTE) else {
        return Err(invalid(
            "prim::DifferentiableGraph has a forward graph but no backward graph",
        ));
    };
    let saved = forward.outputs().len().checked_sub(num_outputs);
    let agrees = forward.inputs().len() == num_inputs
        && saved.is_some_and(|saved| backward.inputs().len() == num_outputs + saved)
        && backward.outputs().len() == num_inputs;
    if !agrees {
        return Err(invalid(
            "prim::DifferentiableGraph's forward and backward graphs do not match its inputs \
             and outputs",
        ));
    }
    Ok(Some(SymbolicGradient {
        forward_code: Arc::new(compile_with_registry(forward, registry)?),
        backward_code: Arc::new(compile_with_registry(backward, registry)?),
        forward: Arc::new((**forward).clone()),
        backward: Arc::new((**backward).clone()),
        num_outputs,
    }))
}

/// Whether the symbolic path should run for these inputs: grad mode on, a hook installed,
/// and some tensor input requiring grad.
pub fn records_gradient(inputs: &[IValue]) -> bool {
    crate::autograd::is_grad_enabled()
        && differentiable_graph_hook().is_some()
        && inputs
            .iter()
            .any(|value| matches!(value, IValue::Tensor(cell) if cell.requires_grad()))
}
