//! The backward node of a `prim::DifferentiableGraph` (PyTorch's `DifferentiableGraphBackward`
//! in graph_executor.cpp): the interpreter hands a group with a symbolic gradient to
//! [`SymbolicGraphHook`], which runs the forward graph without recording, keeps the saved
//! values it returned, and records ONE node whose backward runs the backward graph. A
//! backward that must itself be differentiable (`create_graph=True`) recomputes the group
//! with recording instead, since the saved values carry no history.

use std::sync::{Arc, Mutex};

use ferrojit_runtime::autograd::{GradHistory, GradModeGuard, GradNode};
use ferrojit_runtime::interpreter::differentiable_graph::{
    DifferentiableGraphHook, SymbolicGradient,
};
use ferrojit_runtime::interpreter::{run_code, Code, RunOptions};
use ferrojit_runtime::{IValue, NoMethods, Result, RuntimeError};

use crate::formulas::{FormulaInput, Gradients};
use crate::node::{ArgumentEdges, CustomBackward, Edge, Node, SavedVersion, TensorMeta};

/// The name `grad_fn` prints for a group's outputs, as PyTorch's.
pub const BACKWARD_NAME: &str = "DifferentiableGraphBackward";

/// Installed by [`crate::register`].
pub struct SymbolicGraphHook;

/// Runs the backward graph on the output gradients and the saved values.
struct BackwardGraph {
    backward: Arc<Code>,
    forward: Arc<Code>,
    num_outputs: usize,
    /// The group's inputs, for a backward that must itself be differentiable.
    inputs: Vec<IValue>,
}

impl BackwardGraph {
    /// The backward of a backward that records (`create_graph=True`): the saved values have
    /// no history (the forward graph ran without recording), so the symbolic backward graph
    /// would lose every second-order path through them. The forward graph runs again, this
    /// time recording per operator, and the engine differentiates that instead.
    fn recomputed(&self, input: &FormulaInput) -> Result<Gradients> {
        let recomputed = run_code(
            Arc::clone(&self.forward),
            self.inputs.clone(),
            &NoMethods,
            &RunOptions::default(),
        )?;
        let mut outputs = Vec::new();
        let mut output_gradients = Vec::new();
        for (value, gradient) in recomputed.iter().take(self.num_outputs).zip(input.grads) {
            if let (IValue::Tensor(cell), Some(gradient)) = (value, gradient) {
                if cell.requires_grad() {
                    outputs.push(Arc::clone(cell));
                    output_gradients.push(Some(gradient.clone()));
                }
            }
        }
        let wanted: Vec<(usize, Arc<ferrojit_runtime::TensorCell>)> = self
            .inputs
            .iter()
            .enumerate()
            .filter_map(|(index, value)| match value {
                IValue::Tensor(cell) if cell.requires_grad() => Some((index, Arc::clone(cell))),
                _ => None,
            })
            .collect();
        let mut gradients: Gradients = vec![None; self.inputs.len()];
        if outputs.is_empty() || wanted.is_empty() {
            return Ok(gradients);
        }
        let cells: Vec<_> = wanted.iter().map(|(_, cell)| Arc::clone(cell)).collect();
        let options = crate::GradOptions {
            retain_graph: Some(true),
            create_graph: true,
        };
        let found = crate::grad(&outputs, &cells, &output_gradients, options, true)?;
        for ((index, _), gradient) in wanted.iter().zip(found) {
            gradients[*index] = gradient;
        }
        Ok(gradients)
    }
}

impl CustomBackward for BackwardGraph {
    fn apply(&self, input: &FormulaInput) -> Result<Gradients> {
        if ferrojit_runtime::autograd::is_grad_enabled() {
            return self.recomputed(input);
        }
        let mut inputs: Vec<IValue> = Vec::with_capacity(input.grads.len() + input.arguments.len());
        for gradient in input.grads {
            inputs.push(gradient.clone().ok_or_else(|| {
                RuntimeError::Other(
                    "DifferentiableGraphBackward: an output's gradient is undefined".to_string(),
                )
            })?);
        }
        inputs.extend(input.arguments.iter().cloned());
        let outputs = run_code(
            Arc::clone(&self.backward),
            inputs,
            &NoMethods,
            &RunOptions::default(),
        )?;
        Ok(outputs
            .into_iter()
            .map(|value| match value {
                IValue::None => None,
                other => Some(other),
            })
            .collect())
    }
}

fn meta_of(value: &IValue) -> Option<TensorMeta> {
    match value {
        IValue::Tensor(cell) => {
            let tensor = cell.get();
            Some(TensorMeta {
                sizes: tensor.sizes().to_vec(),
                dtype: tensor.dtype(),
            })
        }
        _ => None,
    }
}

impl DifferentiableGraphHook for SymbolicGraphHook {
    fn run(&self, gradient: &SymbolicGradient, inputs: Vec<IValue>) -> Result<Vec<IValue>> {
        let mut results = {
            // The group's own operators record nothing: its one node stands for them all.
            let _no_grad = GradModeGuard::new(false);
            run_code(
                Arc::clone(&gradient.forward_code),
                inputs.clone(),
                &NoMethods,
                &RunOptions::default(),
            )?
        };
        if results.len() < gradient.num_outputs {
            return Err(RuntimeError::Other(
                "prim::DifferentiableGraph: the forward graph returned too few values".to_string(),
            ));
        }
        let saved = results.split_off(gradient.num_outputs);
        let outputs = results;
        let edges: Vec<ArgumentEdges> = inputs
            .iter()
            .map(|value| match value {
                IValue::Tensor(cell) => ArgumentEdges::Tensor(Edge::of(cell)),
                _ => ArgumentEdges::None,
            })
            .collect();
        if edges.iter().all(|edges| edges.iter().next().is_none()) {
            return Ok(outputs);
        }
        let input_meta: Vec<Vec<Option<TensorMeta>>> =
            inputs.iter().map(|value| vec![meta_of(value)]).collect();
        let mut saved_versions = Vec::new();
        for (index, value) in saved.iter().enumerate() {
            if let IValue::Tensor(cell) = value {
                let counter = cell.autograd().version_counter();
                saved_versions.push(SavedVersion {
                    argument: index,
                    version: counter.current(),
                    counter,
                });
            }
        }
        // A saved output is kept through a handle of its own, without history: the output's
        // handle gets this node as its `grad_fn`, and saving that handle would make a cycle
        // that outlives the graph when no backward runs. Its version is checked against
        // the output's counter, noted above.
        let saved: Vec<IValue> = saved
            .into_iter()
            .map(|value| match &value {
                IValue::Tensor(cell)
                    if outputs.iter().any(
                        |output| matches!(output, IValue::Tensor(out) if Arc::ptr_eq(out, cell)),
                    ) =>
                {
                    IValue::tensor_with_requires_grad((*cell.get()).clone(), false)
                }
                _ => value,
            })
            .collect();
        // An output that is one of the inputs' very handles keeps its own history.
        let is_input = |cell: &Arc<ferrojit_runtime::TensorCell>| {
            inputs
                .iter()
                .any(|value| matches!(value, IValue::Tensor(input) if Arc::ptr_eq(input, cell)))
        };
        let mut output_meta = Vec::with_capacity(outputs.len());
        let mut output_cells = Vec::with_capacity(outputs.len());
        let mut targets = Vec::new();
        for (index, value) in outputs.iter().enumerate() {
            match value {
                IValue::Tensor(cell)
                    if cell.get().dtype().is_floating_point() && !is_input(cell) =>
                {
                    output_meta.push(meta_of(value));
                    output_cells.push(Arc::downgrade(cell));
                    targets.push((index, Arc::clone(cell)));
                }
                _ => {
                    output_meta.push(None);
                    output_cells.push(std::sync::Weak::new());
                }
            }
        }
        let node = Arc::new(Node {
            name: BACKWARD_NAME.into(),
            operator: "prim::DifferentiableGraph".into(),
            formula: None,
            custom: Some(Arc::new(BackwardGraph {
                backward: Arc::clone(&gradient.backward_code),
                forward: Arc::clone(&gradient.forward_code),
                num_outputs: gradient.num_outputs,
                inputs: inputs.clone(),
            })),
            arguments: Mutex::new(Some(saved)),
            saved_versions,
            edges,
            input_meta,
            output_meta,
            output_cells,
        });
        for (index, cell) in targets {
            cell.autograd().set_grad_fn(Some(GradHistory {
                node: Arc::clone(&node) as Arc<dyn GradNode>,
                output_nr: index,
            }));
        }
        Ok(outputs)
    }
}
