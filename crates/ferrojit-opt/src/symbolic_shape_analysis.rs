//! Symbolic shape analysis, PyTorch's `PropagateShapesOnGraph`
//! (`_jit_pass_propagate_shapes_on_graph`): the sizes of each operator's outputs, computed by
//! the operator's shape function ([`crate::shape_functions`]) from what is known of its
//! inputs.
//!
//! As in PyTorch:
//!
//! * nodes are visited in order; the branches of a `prim::If` are analysed and its outputs
//!   get the merge of both branches' types; loop bodies are not analysed;
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
use crate::shape_functions::{self, ShapeArgument, SymInt};

/// Runs symbolic shape analysis on `graph`, refining the sizes in its value types.
pub fn propagate_shapes_on_graph(graph: &mut Graph) -> Result<(), String> {
    attach_registry_schemas(graph, OperatorRegistry::global());
    let alias_db = AliasDb::new(graph);
    let mut analysis = ShapeAnalysis {
        alias_db,
        symbols: HashMap::new(),
        next_symbol: 1,
    };
    let top = graph.top_block();
    analysis.analyse_block(graph, top);
    Ok(())
}

struct ShapeAnalysis {
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
            } else if kind.is_prim(Prim::TupleConstruct) {
                self.retype_tuple(graph, node);
            } else {
                self.analyse_operator(graph, node);
            }
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
        let Some(function) = shape_functions::shape_function_for(&full_name) else {
            return;
        };
        let inputs = graph.node_inputs(node).to_vec();
        let arguments: Vec<ShapeArgument> = inputs
            .iter()
            .map(|&input| self.argument(graph, input))
            .collect();
        let shapes = shape_functions::apply(function, &arguments);
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
