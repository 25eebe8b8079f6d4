//! Symbolic shape analysis, PyTorch's `PropagateShapesOnGraph`
//! (`_jit_pass_propagate_shapes_on_graph`): the sizes of each operator's outputs, computed by
//! the operator's shape function ([`crate::shape_functions`]) from what is known of its
//! inputs.
//!
//! As in PyTorch:
//!
//! * nodes are visited in order; the branches of a `prim::If` are analysed and its outputs
//!   get the merge of both branches' types; loop bodies are not analysed (the graph
//!   executor's variant, [`propagate_shapes_on_graph_and_loops`], analyses them too);
//! * a dimension that is not known (`*` in a tensor type) is a symbol: it stays the same
//!   symbol through operators that pass it on (so `x + relu(x)` knows both sides agree);
//! * an output keeps its other facts (dtype, device...) and gets the new sizes, or loses its
//!   rank when the shape function cannot decide it; an operator without a shape function is
//!   left alone;
//! * an `int[]` argument built by `prim::ListConstruct` (that nothing writes) contributes
//!   each element: a constant, or the size `aten::size(t, i)` reads from `t`; `aten::size(t)`
//!   contributes `t`'s sizes;
//! * `prim::TupleConstruct` outputs get the tuple of their inputs' types.
//!
//! Symbols print as `*`, as PyTorch prints them at its default type verbosity.

use std::collections::HashMap;
use std::sync::Arc;

use ferrojit_ir::{
    AttributeValue, BlockId, Graph, NamedTupleType, NodeId, Prim, TensorRefinement, Type, ValueId,
};
use ferrojit_runtime::registry::OperatorRegistry;

use crate::alias_analysis::{attach_registry_schemas, AliasDb};
use crate::shape_functions::{self, Shape, ShapeArgument, SymInt};

/// Runs symbolic shape analysis on `graph`, refining the sizes in its value types.
pub fn propagate_shapes_on_graph(graph: &mut Graph) -> Result<(), String> {
    propagate_shapes(graph, false);
    Ok(())
}

/// [`propagate_shapes_on_graph`], and loop bodies too, to a fixed point of the loop-carried
/// types (see `analyse_loop`), and the elements of unpacked tuples. The graph executor runs
/// this: PyTorch's profiling executor knows the types inside a loop body and of unpacked
/// elements from profiling, which this form derives instead. The named pass keeps PyTorch's
/// behaviour of leaving both alone.
pub fn propagate_shapes_on_graph_and_loops(graph: &mut Graph) {
    propagate_shapes(graph, true);
}

fn propagate_shapes(graph: &mut Graph, executor_form: bool) {
    attach_registry_schemas(graph, OperatorRegistry::global());
    let alias_db = AliasDb::new(graph);
    let mut analysis = ShapeAnalysis {
        alias_db,
        symbols: HashMap::new(),
        next_symbol: 1,
        executor_form,
    };
    let top = graph.top_block();
    analysis.analyse_block(graph, top);
}

struct ShapeAnalysis {
    /// Whether loop bodies and tuple unpacks are analysed (the executor's form) or left alone
    /// (PyTorch's pass).
    executor_form: bool,
    alias_db: AliasDb,
    /// The symbolic sizes of each ranked tensor value seen so far, so that a symbol keeps its
    /// identity from one node to the next (the IR type only prints it as `*`).
    symbols: HashMap<ValueId, Vec<SymInt>>,
    next_symbol: u64,
}

/// The tensor facts of a type, when it is a tensor type.
fn tensor_refinement(ty: &Type) -> Option<TensorRefinement> {
    match ty {
        Type::Tensor => Some(TensorRefinement::default()),
        Type::RefinedTensor(refinement) => Some(refinement.as_ref().clone()),
        _ => None,
    }
}

fn refinement_type(refinement: TensorRefinement) -> Type {
    if refinement.is_empty() {
        Type::Tensor
    } else {
        Type::RefinedTensor(Box::new(refinement))
    }
}

/// The value a `prim::Constant` node holds, as a shape argument.
fn constant_argument(graph: &Graph, node: NodeId, ty: &Type) -> ShapeArgument {
    match (graph.attribute(node, "value"), ty) {
        (None, Type::NoneType) => ShapeArgument::None,
        (Some(AttributeValue::Int(value)), Type::Bool) => ShapeArgument::Bool(Some(*value != 0)),
        (Some(AttributeValue::Int(value)), Type::Int) => ShapeArgument::Int(SymInt::Static(*value)),
        (Some(AttributeValue::Float(value)), Type::Float) => ShapeArgument::Float(Some(*value)),
        (Some(AttributeValue::Ints(values)), Type::List(element)) if **element == Type::Int => {
            ShapeArgument::IntList(Some(values.iter().map(|&v| SymInt::Static(v)).collect()))
        }
        _ => ShapeArgument::Other,
    }
}

impl ShapeAnalysis {
    fn fresh_symbol(&mut self) -> SymInt {
        let symbol = SymInt::Symbol(self.next_symbol);
        self.next_symbol += 1;
        symbol
    }

    /// The symbolic sizes of a tensor value: remembered ones, or its type's sizes with a fresh
    /// symbol for each unknown one. `None` when the rank is unknown.
    fn symbolic_sizes(&mut self, graph: &Graph, value: ValueId) -> Option<Vec<SymInt>> {
        if let Some(sizes) = self.symbols.get(&value) {
            return Some(sizes.clone());
        }
        let refinement = tensor_refinement(graph.value_type(value))?;
        let sizes: Vec<SymInt> = refinement
            .sizes?
            .iter()
            .map(|size| match size {
                Some(size) => SymInt::Static(*size),
                None => self.fresh_symbol(),
            })
            .collect();
        self.symbols.insert(value, sizes.clone());
        Some(sizes)
    }

    fn analyse_block(&mut self, graph: &mut Graph, block: BlockId) {
        for node in graph.block_nodes(block) {
            let kind = graph.kind(node).clone();
            if kind.is_prim(Prim::If) {
                let blocks = graph.node_blocks(node).to_vec();
                for &branch in &blocks {
                    self.analyse_block(graph, branch);
                }
                if let [then_block, else_block] = blocks[..] {
                    self.merge_if_outputs(graph, node, then_block, else_block);
                }
            } else if kind.is_prim(Prim::Loop) && self.executor_form {
                self.analyse_loop(graph, node);
            } else if kind.is_prim(Prim::TupleUnpack) && self.executor_form {
                self.type_unpacked_elements(graph, node);
            } else if kind.is_prim(Prim::TupleConstruct) {
                self.retype_tuple(graph, node);
            } else {
                self.analyse_operator(graph, node);
            }
        }
    }

    /// Types a `prim::Loop`'s body and outputs by iterating to a fixed point, as PyTorch's
    /// shape propagation does for loops: each loop-carried tensor starts with the type of its
    /// initial value, the body is analysed, and the carried type becomes the merge of itself
    /// and the body's output, until nothing changes. A merge only forgets facts (a size, then
    /// the rank), so the carried types stop changing after at most a few rounds; the bound
    /// below leaves them unrefined in the pathological case. The types inside the body are
    /// then facts for every iteration, which lets the peephole fold checks such as
    /// `aten::dim` of a value that a loop carries (an RNN cell's hidden state).
    fn analyse_loop(&mut self, graph: &mut Graph, node: NodeId) {
        const MAX_ROUNDS: usize = 8;
        let Some(&body) = graph.node_blocks(node).first() else {
            return;
        };
        // Loop inputs: trip count, initial condition, then the carried values. Body
        // parameters: the iteration counter, then the carried values. Body outputs: the
        // continue condition, then the carried values.
        let initial: Vec<ValueId> = graph.node_inputs(node).iter().skip(2).copied().collect();
        let parameters: Vec<ValueId> = graph
            .block_parameters(body)
            .iter()
            .skip(1)
            .copied()
            .collect();
        let outputs = graph.node_outputs(node).to_vec();
        if initial.len() != parameters.len() || outputs.len() != parameters.len() {
            return;
        }
        let body_values = values_defined_in(graph, body);
        let mut carried: Vec<Option<TensorRefinement>> = initial
            .iter()
            .map(|&value| tensor_refinement(graph.value_type(value)))
            .collect();
        for round in 0..=MAX_ROUNDS {
            for (&parameter, facts) in parameters.iter().zip(carried.iter_mut()) {
                if let Some(facts) = facts {
                    // Not settled within the bound: nothing is known of the carried tensors,
                    // in the body or after the loop.
                    if round == MAX_ROUNDS {
                        *facts = TensorRefinement::default();
                    }
                    graph.set_value_type(parameter, refinement_type(facts.clone()));
                }
            }
            for value in &body_values {
                self.symbols.remove(value);
            }
            self.analyse_block(graph, body);
            let body_outputs: Vec<ValueId> =
                graph.block_outputs(body).iter().skip(1).copied().collect();
            let mut changed = false;
            for (facts, &output) in carried.iter_mut().zip(&body_outputs) {
                let Some(current) = facts else {
                    continue;
                };
                let merged = match tensor_refinement(graph.value_type(output)) {
                    Some(from_body) => current.merge(&from_body),
                    None => TensorRefinement::default(),
                };
                if merged != *current {
                    *current = merged;
                    changed = true;
                }
            }
            if !changed || round == MAX_ROUNDS {
                break;
            }
        }
        for (&output, facts) in outputs.iter().zip(&carried) {
            if let Some(facts) = facts {
                self.symbols.remove(&output);
                graph.set_value_type(output, refinement_type(facts.clone()));
            }
        }
    }

    /// Gives the outputs of a `prim::TupleUnpack` the element types of its tuple, with the
    /// elements' symbols, as PyTorch's older shape propagation did; the tuple a loop carries
    /// into an RNN cell is unpacked this way.
    fn type_unpacked_elements(&mut self, graph: &mut Graph, node: NodeId) {
        let Some(&tuple) = graph.node_inputs(node).first() else {
            return;
        };
        let elements = match graph.value_type(tuple) {
            Type::Tuple(elements) => elements.clone(),
            Type::NamedTuple(named) => named.fields.iter().map(|(_, ty)| ty.clone()).collect(),
            _ => return,
        };
        let constructed = graph
            .producer(tuple)
            .filter(|&producer| graph.kind(producer).is_prim(Prim::TupleConstruct))
            .map(|producer| graph.node_inputs(producer).to_vec());
        let outputs = graph.node_outputs(node).to_vec();
        if outputs.len() != elements.len() {
            return;
        }
        for (index, (&output, element)) in outputs.iter().zip(elements).enumerate() {
            let (Some(_), Some(facts)) = (
                tensor_refinement(graph.value_type(output)),
                tensor_refinement(&element),
            ) else {
                continue;
            };
            self.symbols.remove(&output);
            // The symbols of the constructed element carry over when the tuple is built here.
            if let Some(source) = constructed.as_ref().and_then(|inputs| inputs.get(index)) {
                if let Some(sizes) = self.symbolic_sizes(graph, *source) {
                    self.symbols.insert(output, sizes);
                }
            }
            graph.set_value_type(output, refinement_type(facts));
        }
    }

    /// Gives each `If` output the merge of the two branch outputs' types, as PyTorch's
    /// `mergeTypes` does; symbols the branches agree on are kept.
    fn merge_if_outputs(
        &mut self,
        graph: &mut Graph,
        node: NodeId,
        then_block: BlockId,
        else_block: BlockId,
    ) {
        let outputs = graph.node_outputs(node).to_vec();
        let then_outputs = graph.block_outputs(then_block).to_vec();
        let else_outputs = graph.block_outputs(else_block).to_vec();
        for ((&output, &then_value), &else_value) in
            outputs.iter().zip(&then_outputs).zip(&else_outputs)
        {
            let then_type = graph.value_type(then_value).clone();
            let else_type = graph.value_type(else_value).clone();
            let (Some(then_facts), Some(else_facts)) =
                (tensor_refinement(&then_type), tensor_refinement(&else_type))
            else {
                continue;
            };
            let merged = then_facts.merge(&else_facts);
            let then_sizes = self.symbolic_sizes(graph, then_value);
            let else_sizes = self.symbolic_sizes(graph, else_value);
            self.symbols.remove(&output);
            if let (Some(then_sizes), Some(else_sizes), Some(_)) =
                (then_sizes, else_sizes, &merged.sizes)
            {
                let sizes: Vec<SymInt> = then_sizes
                    .iter()
                    .zip(&else_sizes)
                    .map(|(&a, &b)| if a == b { a } else { self.fresh_symbol() })
                    .collect();
                self.symbols.insert(output, sizes);
            }
            graph.set_value_type(output, refinement_type(merged));
        }
    }

    fn retype_tuple(&mut self, graph: &mut Graph, node: NodeId) {
        let output = graph.node_output(node, 0);
        let element_types: Vec<Type> = graph
            .node_inputs(node)
            .iter()
            .map(|&input| graph.value_type(input).clone())
            .collect();
        let new_type = match graph.value_type(output) {
            Type::Tuple(_) => Type::Tuple(element_types),
            Type::NamedTuple(named) if named.fields.len() == element_types.len() => {
                Type::NamedTuple(Arc::new(NamedTupleType {
                    name: named.name.clone(),
                    fields: named
                        .fields
                        .iter()
                        .zip(element_types)
                        .map(|((name, _), ty)| (name.clone(), ty))
                        .collect(),
                }))
            }
            _ => return,
        };
        graph.set_value_type(output, new_type);
    }

    fn analyse_operator(&mut self, graph: &mut Graph, node: NodeId) {
        // An operator the runtime's registry does not know is looked up by its kind, which
        // finds the operators PyTorch registers a shape function for under one schema only.
        let full_name = match graph.node(node).schema.as_ref() {
            Some(schema) => schema.full_name(),
            None if graph.kind(node).namespace() == "aten" => graph.kind(node).as_str().to_string(),
            None => return,
        };
        let function = shape_functions::shape_function_for(&full_name);
        let recurrent_cell = self.executor_form && RECURRENT_CELLS.contains(&full_name.as_str());
        if function.is_none() && !recurrent_cell {
            return;
        }
        let inputs = graph.node_inputs(node).to_vec();
        let arguments: Vec<ShapeArgument> = inputs
            .iter()
            .map(|&input| self.argument(graph, input))
            .collect();
        let shapes = match function {
            Some(function) => shape_functions::apply(function, &arguments),
            None => recurrent_cell_shapes(&full_name, &arguments),
        };
        let outputs = graph.node_outputs(node).to_vec();
        for (&output, shape) in outputs.iter().zip(shapes) {
            let Some(mut refinement) = tensor_refinement(graph.value_type(output)) else {
                continue;
            };
            match shape {
                Some(sizes) => {
                    let sizes: Vec<SymInt> = sizes
                        .into_iter()
                        .map(|size| match size {
                            SymInt::Unknown => self.fresh_symbol(),
                            known => known,
                        })
                        .collect();
                    refinement.sizes = Some(
                        sizes
                            .iter()
                            .map(|size| match size {
                                SymInt::Static(size) => Some(*size),
                                _ => None,
                            })
                            .collect(),
                    );
                    self.symbols.insert(output, sizes);
                }
                None => {
                    refinement.sizes = None;
                    self.symbols.remove(&output);
                }
            }
            graph.set_value_type(output, refinement_type(refinement));
        }
    }

    /// What the shape function may use of one node input.
    fn argument(&mut self, graph: &Graph, value: ValueId) -> ShapeArgument {
        let ty = graph.value_type(value).clone();
        let producer = graph.producer(value);
        if let Some(producer) = producer {
            if graph.kind(producer).is_prim(Prim::Constant) {
                if tensor_refinement(&ty).is_some() {
                    return ShapeArgument::Tensor(self.symbolic_sizes(graph, value));
                }
                return constant_argument(graph, producer, &ty);
            }
        }
        match &ty {
            Type::Tensor | Type::RefinedTensor(_) => {
                ShapeArgument::Tensor(self.symbolic_sizes(graph, value))
            }
            Type::Int => ShapeArgument::Int(SymInt::Unknown),
            Type::Float => ShapeArgument::Float(None),
            Type::Bool => ShapeArgument::Bool(None),
            Type::NoneType => ShapeArgument::None,
            Type::List(element) if tensor_refinement(element).is_some() => match producer {
                Some(producer)
                    if graph.kind(producer).is_prim(Prim::ListConstruct)
                        && !self.alias_db.has_writers(value) =>
                {
                    let elements = graph.node_inputs(producer).to_vec();
                    ShapeArgument::TensorList(Some(
                        elements
                            .iter()
                            .map(|&element| self.symbolic_sizes(graph, element))
                            .collect(),
                    ))
                }
                _ => ShapeArgument::TensorList(None),
            },
            Type::List(element) if **element == Type::Int => {
                ShapeArgument::IntList(self.int_list(graph, value, producer))
            }
            _ => ShapeArgument::Other,
        }
    }

    /// The elements of an `int[]` argument that is not a constant, as far as they are known.
    fn int_list(
        &mut self,
        graph: &Graph,
        value: ValueId,
        producer: Option<NodeId>,
    ) -> Option<Vec<SymInt>> {
        let producer = producer?;
        if self.alias_db.has_writers(value) {
            return None;
        }
        let kind = graph.kind(producer).clone();
        if kind.is("aten::size") && graph.node_inputs(producer).len() == 1 {
            let tensor = graph.node_inputs(producer)[0];
            return self.symbolic_sizes(graph, tensor);
        }
        if !kind.is_prim(Prim::ListConstruct) {
            return None;
        }
        let elements = graph.node_inputs(producer).to_vec();
        let mut list = Vec::with_capacity(elements.len());
        for element in elements {
            list.push(self.list_element(graph, element));
        }
        Some(list)
    }

    /// One element of a constructed `int[]`: a constant, a size read from a tensor by
    /// `aten::size(t, constant)` (a fresh symbol when that size is not known), or unknown.
    fn list_element(&mut self, graph: &Graph, element: ValueId) -> SymInt {
        let Some(producer) = graph.producer(element) else {
            return SymInt::Unknown;
        };
        if graph.kind(producer).is_prim(Prim::Constant) {
            return match constant_argument(graph, producer, graph.value_type(element)) {
                ShapeArgument::Int(value) => value,
                _ => SymInt::Unknown,
            };
        }
        if graph.kind(producer).is("aten::size") && graph.node_inputs(producer).len() == 2 {
            let inputs = graph.node_inputs(producer).to_vec();
            let index = match graph.producer(inputs[1]) {
                Some(index_node) if graph.kind(index_node).is_prim(Prim::Constant) => {
                    match constant_argument(graph, index_node, graph.value_type(inputs[1])) {
                        ShapeArgument::Int(SymInt::Static(index)) => Some(index),
                        _ => None,
                    }
                }
                _ => None,
            };
            let sizes = self.symbolic_sizes(graph, inputs[0]);
            let size = match (sizes, index) {
                (Some(sizes), Some(index)) => {
                    let position = if index < 0 {
                        index + sizes.len() as i64
                    } else {
                        index
                    };
                    usize::try_from(position)
                        .ok()
                        .and_then(|position| sizes.get(position).copied())
                }
                _ => None,
            };
            // The size of a tensor is never negative, even when it is not known.
            return size.unwrap_or_else(|| self.fresh_symbol());
        }
        SymInt::Unknown
    }
}

/// The single-step recurrent cells, which PyTorch registers no shape function for. The
/// executor's form knows their outputs' sizes, so that the state an RNN loop carries keeps its
/// rank (see `recurrent_cell_shapes`).
const RECURRENT_CELLS: &[&str] = &[
    "aten::lstm_cell",
    "aten::gru_cell",
    "aten::rnn_tanh_cell",
    "aten::rnn_relu_cell",
];

/// A recurrent cell's new states have exactly the sizes of its first state, `[batch, hidden]`:
/// the cell refuses any other state shape (`hx` is a list for the LSTM cell, whose two outputs
/// share those sizes, and one tensor for the others).
fn recurrent_cell_shapes(full_name: &str, arguments: &[ShapeArgument]) -> Vec<Shape> {
    let state = match arguments.get(1) {
        Some(ShapeArgument::TensorList(Some(states))) => states.first().cloned().flatten(),
        Some(ShapeArgument::Tensor(state)) => state.clone(),
        _ => None,
    };
    let outputs = if full_name == "aten::lstm_cell" { 2 } else { 1 };
    vec![state.filter(|sizes| sizes.len() == 2); outputs]
}

/// Every value defined inside `block`, nested blocks included: block parameters and node
/// outputs.
fn values_defined_in(graph: &Graph, block: BlockId) -> Vec<ValueId> {
    let mut values = graph.block_parameters(block).to_vec();
    for node in graph.block_nodes(block) {
        values.extend_from_slice(graph.node_outputs(node));
        for &nested in graph.node_blocks(node) {
            values.extend(values_defined_in(graph, nested));
        }
    }
    values
}
