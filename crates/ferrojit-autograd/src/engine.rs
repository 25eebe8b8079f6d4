//! The backward engine: from the roots' gradients, runs each reachable node once all the
//! nodes that feed it have run (dependency order), sums the gradients reaching each node's
//! outputs, and accumulates into leaves' `.grad` (`backward`) or hands the gradients of the
//! requested inputs back (`grad`).

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::Arc;

use ferrojit_runtime::autograd::GradModeGuard;
use ferrojit_runtime::{IValue, Result, RuntimeError, TensorCell};

use crate::call::{self, call1, fresh};
use crate::formulas::FormulaInput;
use crate::node::{AddressHasher, AddressMap, ArgumentEdges, Edge, Node};

/// `retain_graph` and `create_graph`, as `torch.autograd.backward`/`grad` take them.
#[derive(Debug, Clone, Copy, Default)]
pub struct GradOptions {
    /// Keep the saved values for another backward (default: `create_graph`).
    pub retain_graph: Option<bool>,
    /// Record the backward computation itself, for higher-order gradients.
    pub create_graph: bool,
}

fn error(message: String) -> RuntimeError {
    RuntimeError::Other(message)
}

fn node_key(node: &Arc<Node>) -> usize {
    Arc::as_ptr(node) as usize
}

fn shape_text(sizes: &[usize]) -> String {
    format!(
        "torch.Size([{}])",
        sizes
            .iter()
            .map(|size| size.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The root gradients: the given ones (checked against the outputs' shapes) or ones for a
/// scalar output.
fn root_gradients(
    outputs: &[Arc<TensorCell>],
    grad_outputs: &[Option<IValue>],
    create_graph: bool,
) -> Result<Vec<(Edge, IValue)>> {
    if !grad_outputs.is_empty() && grad_outputs.len() != outputs.len() {
        return Err(error(format!(
            "grad requires one gradient per output: got {} tensors and {} gradients",
            outputs.len(),
            grad_outputs.len()
        )));
    }
    let mut roots = Vec::with_capacity(outputs.len());
    for (index, output) in outputs.iter().enumerate() {
        let Some(edge) = Edge::of(output) else {
            return Err(error(format!(
                "element {index} of tensors does not require grad and does not have a grad_fn"
            )));
        };
        let tensor = output.get();
        let gradient = match grad_outputs.get(index).cloned().flatten() {
            Some(gradient) => {
                let given = call::sizes(&gradient)?;
                if given != tensor.sizes() {
                    return Err(error(format!(
                        "Mismatch in shape: grad_output[{index}] has a shape of {} and output[{index}] has a shape of {}.",
                        shape_text(&given),
                        shape_text(tensor.sizes())
                    )));
                }
                if create_graph {
                    gradient
                } else {
                    detached(&gradient)?
                }
            }
            None => {
                if tensor.numel() != 1 {
                    return Err(error(
                        "grad can be implicitly created only for scalar outputs".to_string(),
                    ));
                }
                fresh(ferrojit_tensor::Tensor::ones(
                    tensor.sizes(),
                    tensor.dtype(),
                )?)
            }
        };
        roots.push((edge, gradient));
    }
    Ok(roots)
}

fn detached(value: &IValue) -> Result<IValue> {
    Ok(IValue::Tensor(Arc::new(TensorCell::new(
        value.to_tensor()?,
    ))))
}

/// What the run delivers: into leaves' `.grad`, or into the requested inputs' slots.
enum Target {
    Accumulate,
    Capture {
        leaves: AddressMap<usize>,
        /// `(node, output_nr)` of each non-leaf input → its input indices.
        outputs: HashMap<(usize, usize), Vec<usize>, BuildHasherDefault<AddressHasher>>,
    },
}

struct Run {
    buffers: AddressMap<Vec<Option<IValue>>>,
    dependencies: AddressMap<usize>,
    nodes: AddressMap<Arc<Node>>,
    captured: Vec<Option<IValue>>,
    create_graph: bool,
    retain_graph: bool,
}

/// Adds `value` into `slot` (the first gradient is taken as is).
fn accumulate_into(slot: &mut Option<IValue>, value: IValue) -> Result<()> {
    *slot = Some(match slot.take() {
        None => value,
        Some(previous) => call::add(&previous, &value)?,
    });
    Ok(())
}

impl Run {
    fn collect(&mut self, roots: &[(Edge, IValue)]) {
        let mut stack: Vec<Arc<Node>> = Vec::new();
        for (edge, _) in roots {
            if let Edge::Node(node, _) = edge {
                if self
                    .nodes
                    .insert(node_key(node), Arc::clone(node))
                    .is_none()
                {
                    stack.push(Arc::clone(node));
                }
            }
        }
        while let Some(node) = stack.pop() {
            for edges in &node.edges {
                for edge in edges.iter() {
                    if let Edge::Node(next, _) = edge {
                        *self.dependencies.entry(node_key(next)).or_default() += 1;
                        if self
                            .nodes
                            .insert(node_key(next), Arc::clone(next))
                            .is_none()
                        {
                            stack.push(Arc::clone(next));
                        }
                    }
                }
            }
        }
    }

    fn deliver(&mut self, edge: &Edge, gradient: IValue, target: &Target) -> Result<()> {
        match edge {
            Edge::Node(node, output_nr) => {
                let buffer = self
                    .buffers
                    .entry(node_key(node))
                    .or_insert_with(|| vec![None; node.output_meta.len()]);
                if let Some(slot) = buffer.get_mut(*output_nr) {
                    accumulate_into(slot, gradient)?;
                }
                Ok(())
            }
            Edge::Leaf(cell) => match target {
                Target::Accumulate => self.accumulate_leaf(cell, gradient),
                Target::Capture { leaves, .. } => {
                    if let Some(&index) = leaves.get(&(Arc::as_ptr(cell) as usize)) {
                        accumulate_into(&mut self.captured[index], gradient)?;
                    }
                    Ok(())
                }
            },
        }
    }

    /// `AccumulateGrad`: the first gradient is stored (a copy, unless the graph is being
    /// built), later ones are added (in place when no graph is built, as PyTorch does).
    fn accumulate_leaf(&self, cell: &Arc<TensorCell>, gradient: IValue) -> Result<()> {
        let meta = cell.autograd();
        match meta.grad() {
            None => {
                let stored = if self.create_graph {
                    gradient
                } else {
                    let _no_grad = GradModeGuard::new(false);
                    call1("aten::clone", vec![gradient])?
                };
                meta.set_grad(Some(stored.to_tensor_cell()?.clone()));
            }
            Some(existing) => {
                if self.create_graph {
                    let sum = call::add(&IValue::Tensor(existing), &gradient)?;
                    meta.set_grad(Some(sum.to_tensor_cell()?.clone()));
                } else {
                    let _no_grad = GradModeGuard::new(false);
                    call1(
                        "aten::add_.Tensor",
                        vec![IValue::Tensor(existing), gradient],
                    )?;
                }
            }
        }
        Ok(())
    }

    fn run_node(&mut self, node: &Arc<Node>, target: &Target) -> Result<()> {
        let key = node_key(node);
        let mut buffer = self
            .buffers
            .remove(&key)
            .unwrap_or_else(|| vec![None; node.output_meta.len()]);
        if let Target::Capture { outputs, .. } = target {
            for (output_nr, slot) in buffer.iter().enumerate() {
                if let (Some(indices), Some(gradient)) = (outputs.get(&(key, output_nr)), slot) {
                    for &index in indices {
                        accumulate_into(&mut self.captured[index], gradient.clone())?;
                    }
                }
            }
        }
        // Non-leaf outputs that asked for it (`retain_grad`) keep the gradient reaching them.
        for (slot, weak) in buffer.iter().zip(&node.output_cells) {
            if let (Some(gradient), Some(cell)) = (slot, weak.upgrade()) {
                if cell.autograd().retains_grad() {
                    let stored = if self.create_graph {
                        gradient.clone()
                    } else {
                        detached(gradient)?
                    };
                    let previous = cell.autograd().grad();
                    let value = match previous {
                        Some(previous) => call::add(&IValue::Tensor(previous), &stored)?,
                        None => stored,
                    };
                    cell.autograd()
                        .set_grad(Some(value.to_tensor_cell()?.clone()));
                }
            }
        }
        // No gradient reached this node: nothing flows on (PyTorch skips it too).
        if buffer.iter().all(Option::is_none) {
            return Ok(());
        }
        let needed: Vec<bool> = node
            .edges
            .iter()
            .map(|edges| edges.iter().next().is_some())
            .collect();
        if !needed.iter().any(|&n| n) {
            return Ok(());
        }
        if node.formula.is_none() && node.custom.is_none() {
            return Err(error(format!(
                "the derivative for '{}' is not implemented.",
                node.operator.trim_start_matches("aten::")
            )));
        }
        // Undefined output gradients become zeros of the output's shape.
        for (slot, meta) in buffer.iter_mut().zip(&node.output_meta) {
            if slot.is_none() {
                if let Some(meta) = meta {
                    *slot = Some(call::zeros(&meta.sizes, meta.dtype)?);
                }
            }
        }
        let arguments = node.arguments_for_backward(!self.retain_graph)?;
        let input = FormulaInput {
            arguments: &arguments,
            grads: &buffer,
            needed: &needed,
            input_meta: &node.input_meta,
        };
        let gradients = match (&node.custom, node.formula) {
            (Some(custom), _) => custom.apply(&input),
            (None, Some(formula)) => (formula.apply)(&input),
            (None, None) => Err(error(format!(
                "the derivative for '{}' is not implemented.",
                node.operator
            ))),
        }
        .map_err(|failure| {
            error(format!(
                "backward of {} ({}): {failure}",
                node.name, node.operator
            ))
        })?;
        drop(arguments);
        if !self.retain_graph {
            node.release();
        }
        for (index, edges) in node.edges.iter().enumerate() {
            let Some(Some(gradient)) = gradients.get(index) else {
                continue;
            };
            match edges {
                ArgumentEdges::None => {}
                ArgumentEdges::Tensor(Some(edge)) => {
                    let gradient = self.fit(gradient, node.input_meta[index][0].as_ref())?;
                    self.deliver(edge, gradient, target)?;
                }
                ArgumentEdges::Tensor(None) => {}
                ArgumentEdges::List(list) => {
                    let items = gradient.to_list()?.to_vec();
                    for (position, edge) in list.iter().enumerate() {
                        if let (Some(edge), Some(item)) = (edge, items.get(position)) {
                            if !item.is_none() {
                                let meta = node.input_meta[index][position].as_ref();
                                let item = self.fit(item, meta)?;
                                self.deliver(edge, item, target)?;
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Checks a formula's gradient against the input's shape and casts it to its dtype.
    fn fit(&self, gradient: &IValue, meta: Option<&crate::node::TensorMeta>) -> Result<IValue> {
        let Some(meta) = meta else {
            return Ok(gradient.clone());
        };
        let tensor = gradient.to_tensor()?;
        if tensor.sizes() != meta.sizes.as_slice() {
            return Err(error(format!(
                "Function returned an invalid gradient: got shape {:?}, expected {:?}",
                tensor.sizes(),
                meta.sizes
            )));
        }
        if tensor.dtype() != meta.dtype {
            return call1(
                "aten::to.dtype",
                vec![
                    gradient.clone(),
                    IValue::Int(meta.dtype.scalar_type_index()),
                ],
            );
        }
        Ok(gradient.clone())
    }

    fn execute(&mut self, roots: Vec<(Edge, IValue)>, target: &Target) -> Result<()> {
        self.collect(&roots);
        for (edge, gradient) in roots {
            self.deliver(&edge, gradient, target)?;
        }
        let mut ready: Vec<Arc<Node>> = self
            .nodes
            .iter()
            .filter(|(key, _)| !self.dependencies.contains_key(key))
            .map(|(_, node)| Arc::clone(node))
            .collect();
        while let Some(node) = ready.pop() {
            self.run_node(&node, target)?;
            for edges in &node.edges {
                for edge in edges.iter() {
                    if let Edge::Node(next, _) = edge {
                        let key = node_key(next);
                        if let Some(count) = self.dependencies.get_mut(&key) {
                            *count -= 1;
                            if *count == 0 {
                                self.dependencies.remove(&key);
                                ready.push(Arc::clone(next));
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

fn new_run(options: GradOptions) -> Run {
    Run {
        buffers: AddressMap::default(),
        dependencies: AddressMap::default(),
        nodes: AddressMap::default(),
        captured: Vec::new(),
        create_graph: options.create_graph,
        retain_graph: options.retain_graph.unwrap_or(options.create_graph),
    }
}

/// `torch.autograd.backward(tensors, grad_tensors, retain_graph, create_graph)`: accumulates
/// the gradients of `tensors` into the `.grad` of every leaf they depend on.
pub fn backward(
    tensors: &[Arc<TensorCell>],
    grad_tensors: &[Option<IValue>],
    options: GradOptions,
) -> Result<()> {
    let roots = root_gradients(tensors, grad_tensors, options.create_graph)?;
    let _mode = GradModeGuard::new(options.create_graph);
    let mut run = new_run(options);
    run.execute(roots, &Target::Accumulate)
}

/// `torch.autograd.grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
/// allow_unused)`: the gradients of `outputs` with respect to `inputs` (`None` for an unused
/// input when `allow_unused`), leaving `.grad` untouched.
pub fn grad(
    outputs: &[Arc<TensorCell>],
    inputs: &[Arc<TensorCell>],
    grad_outputs: &[Option<IValue>],
    options: GradOptions,
    allow_unused: bool,
) -> Result<Vec<Option<IValue>>> {
    let roots = root_gradients(outputs, grad_outputs, options.create_graph)?;
    let mut leaves = AddressMap::default();
    let mut captured_outputs: HashMap<(usize, usize), Vec<usize>, _> = HashMap::default();
    for (index, input) in inputs.iter().enumerate() {
        if !input.requires_grad() {
            return Err(error(
                "One of the differentiated Tensors does not require grad".to_string(),
            ));
        }
        match input.autograd().grad_fn() {
            Some(history) => {
                let node = crate::node::node_of(&history.node)
                    .ok_or_else(|| error("autograd: foreign grad_fn".to_string()))?;
                captured_outputs
                    .entry((node_key(&node), history.output_nr))
                    .or_default()
                    .push(index);
            }
            None => {
                leaves.insert(Arc::as_ptr(input) as usize, index);
            }
        }
    }
    let _mode = GradModeGuard::new(options.create_graph);
    let mut run = new_run(options);
    run.captured = vec![None; inputs.len()];
    // A root that is itself a requested input gets its gradient directly.
    let target = Target::Capture {
        leaves,
        outputs: captured_outputs,
    };
    run.execute(roots, &target)?;
    let mut results = Vec::with_capacity(inputs.len());
    for (index, captured) in run.captured.into_iter().enumerate() {
        match captured {
            Some(gradient) => results.push(Some(if options.create_graph {
                gradient
            } else {
                detached(&gradient)?
            })),
            None if allow_unused => results.push(None),
            None => {
                return Err(error(format!(
                    "The differentiated Tensor at index {index} appears to not have been used in \
                     the graph. Set allow_unused=True if this is the desired behavior."
                )))
            }
        }
    }
    Ok(results)
}
