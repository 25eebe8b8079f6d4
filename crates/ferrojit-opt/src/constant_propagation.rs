//! Constant propagation over immutable types, PyTorch's `ConstantPropagationImmutableTypes`
//! (`_jit_pass_constant_propagation_immutable_types`): a node whose inputs are all constants,
//! whose inputs and outputs are all of immutable types (numbers, strings, None, devices, and
//! tuples and optionals of them), that has no blocks, no side effects and no randomness, is run
//! once through the runtime's kernel, and its outputs become constants. A `prim::If` whose
//! condition is constant is replaced by the branch taken; a `prim::Loop` that cannot run is
//! replaced by its initial values; If outputs equal in both branches and loop-carried values
//! the body never changes are removed. Dead code elimination follows when anything changed.
//!
//! A kernel that fails (a division by zero, say) leaves the node as it is, as PyTorch does.
//! Results that an IR constant cannot hold (tuples, here) are left to the node, which stays.
//!
//! [`propagate_constants`] is the full pass (`_jit_pass_constant_propagation`): instead of
//! requiring immutable types it asks the graph's [`AliasDb`] (built the first time a node
//! with constant inputs is met, as PyTorch builds it) that no node writes the node's inputs
//! or outputs, so tensor and list operations on constants fold too, into tensor and list
//! constants (see [`crate::constant_insertion`]). Random operators, side effects and nodes
//! with blocks never run. Dead code elimination with alias analysis follows.

use ferrojit_ir::{AttributeValue, BlockId, Graph, InsertPoint, NodeId, Prim, Type, ValueId};
use ferrojit_runtime::interpreter::code::default_value;
use ferrojit_runtime::{IValue, OperatorRegistry};

use crate::alias_analysis::{attach_registry_schemas, has_side_effects, AliasDb};
use crate::common_subexpression_elimination::is_nondeterministic;
use crate::constant_insertion::{constant_for, constant_value};
use crate::dead_code_elimination::{eliminate_dead_code, eliminate_dead_code_with_alias_db};

/// Node kinds never folded, as PyTorch's skip list (control flow and placeholders, and
/// `aten::dequantize`).
const SKIPPED_KINDS: &[&str] = &[
    "prim::If",
    "prim::Loop",
    "prim::Closure",
    "prim::Constant",
    "prim::AutogradZero",
    "prim::Uninitialized",
    "prim::Guard",
    "prim::profile",
    "prim::profile_ivalue",
    "prim::unchecked_unwrap_optional",
    "aten::dequantize",
];

/// Whether values of this type can be changed in place, so that a constant of it could be
/// written through another reference (PyTorch's `AliasDb::isMutableType`).
pub fn is_mutable_type(ty: &Type) -> bool {
    match ty {
        Type::Int
        | Type::Float
        | Type::Bool
        | Type::Complex
        | Type::Number
        | Type::Str
        | Type::NoneType
        | Type::Device
        | Type::Layout
        | Type::ScalarType
        | Type::MemoryFormat
        | Type::QScheme
        | Type::Enum(_)
        | Type::AnyEnum
        | Type::Function(_) => false,
        Type::Optional(inner) => is_mutable_type(inner),
        Type::Tuple(elements) | Type::Union(elements) => elements.iter().any(is_mutable_type),
        Type::NamedTuple(named) => named.fields.iter().any(|(_, ty)| is_mutable_type(ty)),
        _ => true,
    }
}

struct ConstantPropagator<'r> {
    registry: &'r OperatorRegistry,
    made_change: bool,
    /// Whether mutable types may fold when alias analysis allows (the full pass).
    with_alias_db: bool,
    /// Built on first need, from the graph as it is then (as PyTorch builds it).
    alias_db: Option<AliasDb>,
}

/// Runs the immutable-types pass on `graph`.
pub fn propagate_constants_of_immutable_types(graph: &mut Graph) {
    let mut propagator = ConstantPropagator {
        registry: OperatorRegistry::global(),
        made_change: false,
        with_alias_db: false,
        alias_db: None,
    };
    let top = graph.top_block();
    propagator.block(graph, top);
    if propagator.made_change {
        eliminate_dead_code(graph);
    }
    graph.set_insert_point(InsertPoint::EndOf(top));
}

/// Runs the full pass on `graph` (`_jit_pass_constant_propagation`). Nodes without schemas
/// (graphs read from text) get the registry's first, as the interpreter resolves them.
pub fn propagate_constants(graph: &mut Graph) -> Result<(), String> {
    let registry = OperatorRegistry::global();
    attach_registry_schemas(graph, registry);
    let mut propagator = ConstantPropagator {
        registry,
        made_change: false,
        with_alias_db: true,
        alias_db: None,
    };
    let top = graph.top_block();
    propagator.block(graph, top);
    if propagator.made_change {
        eliminate_dead_code_with_alias_db(graph).map_err(|error| error.to_string())?;
    }
    graph.set_insert_point(InsertPoint::EndOf(top));
    Ok(())
}

fn is_constant(graph: &Graph, value: ValueId) -> bool {
    graph
        .producer(value)
        .is_some_and(|node| graph.kind(node).is_prim(Prim::Constant))
}

impl ConstantPropagator<'_> {
    fn block(&mut self, graph: &mut Graph, block: BlockId) {
        // Nodes may be destroyed or moved out while the block is walked; the list is taken
        // first, and a node already gone is skipped.
        for node in graph.block_nodes(block) {
            if !graph.is_destroyed(node) {
                self.node(graph, node);
            }
        }
    }

    fn blocks(&mut self, graph: &mut Graph, node: NodeId) {
        for block in graph.node_blocks(node).to_vec() {
            self.block(graph, block);
        }
    }

    fn node(&mut self, graph: &mut Graph, node: NodeId) {
        let constant_inputs = graph
            .node_inputs(node)
            .iter()
            .all(|&input| is_constant(graph, input));
        let kind = graph.kind(node).clone();
        if kind.is_prim(Prim::If) {
            if constant_inputs {
                self.inline_if(graph, node);
            } else {
                self.blocks(graph, node);
                self.remove_extra_if_outputs(graph, node);
            }
        } else if kind.is_prim(Prim::Loop) {
            if loop_will_not_run(graph, node) {
                self.remove_loop(graph, node);
            } else {
                self.blocks(graph, node);
                self.remove_extra_loop_outputs(graph, node);
            }
        } else if constant_inputs && self.is_supported(graph, node) {
            self.fold(graph, node);
        } else {
            self.blocks(graph, node);
        }
    }

    fn is_supported(&mut self, graph: &Graph, node: NodeId) -> bool {
        let kind = graph.kind(node);
        if SKIPPED_KINDS.contains(&kind.as_str()) || !graph.node_blocks(node).is_empty() {
            return false;
        }
        if self.with_alias_db {
            let alias_db = self.alias_db.get_or_insert_with(|| AliasDb::new(graph));
            let written = graph
                .node_inputs(node)
                .iter()
                .chain(graph.node_outputs(node))
                .any(|&value| alias_db.has_writers(value));
            return !written
                && !is_nondeterministic(self.registry, graph, node)
                && !has_side_effects(graph, node);
        }
        if let Some(prim) = kind.prim() {
            if prim.has_side_effects() {
                return false;
            }
        }
        let immutable = |values: &[ValueId]| {
            values
                .iter()
                .all(|&value| !is_mutable_type(graph.value_type(value)))
        };
        immutable(graph.node_inputs(node)) && immutable(graph.node_outputs(node))
    }

    /// Runs the node's operator on its constant inputs and replaces each output it can with a
    /// constant inserted before the node.
    fn fold(&mut self, graph: &mut Graph, node: NodeId) {
        let Some(outputs) = self.run(graph, node) else {
            return;
        };
        if outputs.len() != graph.node_outputs(node).len() {
            return;
        }
        graph.set_insert_point(InsertPoint::Before(node));
        for (index, value) in outputs.iter().enumerate() {
            let output = graph.node_output(node, index);
            let Some((attribute, ty)) = constant_for(value, graph.value_type(output)) else {
                continue;
            };
            let constant = graph.insert_constant(attribute, ty);
            crate::jit_log::log(
                "constant_propagation_immutable_types",
                crate::jit_log::LogLevel::Update,
                || {
                    format!(
                        "Folding %{} with {value:?}",
                        graph.value_display_name(output)
                    )
                },
            );
            graph.replace_all_uses_with(output, constant);
            self.made_change = true;
        }
    }

    /// The node's results, or None when it cannot run here (no operator, a vararg schema, a
    /// side effect or randomness, or the kernel failed).
    fn run(&self, graph: &Graph, node: NodeId) -> Option<Vec<IValue>> {
        let data = graph.node(node);
        // The container prims PyTorch runs itself rather than through an operator.
        match data.kind.as_str() {
            "prim::ListConstruct" => {
                let Type::List(element) = graph.value_type(*data.outputs.first()?) else {
                    return None;
                };
                let items = data
                    .inputs
                    .iter()
                    .map(|&input| constant_value(graph, input))
                    .collect::<Option<Vec<_>>>()?;
                return Some(vec![IValue::list(element.as_ref().clone(), items)]);
            }
            "prim::ListUnpack" => {
                let list = constant_value(graph, *data.inputs.first()?)?;
                let items = list.to_list().ok()?.to_vec();
                return (items.len() == data.outputs.len()).then_some(items);
            }
            _ => {}
        }
        let operator = match &data.schema {
            Some(schema) => self.registry.lookup(&schema.full_name())?,
            None => {
                let types: Vec<Type> = data
                    .inputs
                    .iter()
                    .map(|&value| graph.value_type(value).clone())
                    .collect();
                self.registry.find_by_types(data.kind.as_str(), &types)?
            }
        };
        // The full pass has already asked PyTorch's `isNondeterministic`, which lets
        // `aten::dropout` with a constant `train=False` run.
        if operator.flags.has_side_effects
            || (operator.flags.nondeterministic_seeded && !self.with_alias_db)
            || operator.schema.is_vararg
        {
            return None;
        }
        let mut stack = Vec::with_capacity(operator.schema.arguments.len());
        for &input in &data.inputs {
            stack.push(constant_value(graph, input)?);
        }
        for argument in operator.schema.arguments.get(data.inputs.len()..)? {
            stack.push(default_value(argument.default.as_ref()?, &argument.ty).ok()?);
        }
        (operator.kernel)(&mut stack).ok()?;
        // A tensor that requires grad cannot be a constant (PyTorch gives up on the node).
        let requires_grad = stack.iter().any(|value| {
            value
                .to_tensor_cell()
                .is_ok_and(|cell| cell.requires_grad())
        });
        (!requires_grad).then_some(stack)
    }

    /// Replaces an If with a constant condition by the branch it takes.
    fn inline_if(&mut self, graph: &mut Graph, node: NodeId) {
        let Some(IValue::Bool(condition)) = constant_value(graph, graph.node_inputs(node)[0])
        else {
            return;
        };
        let Some(&taken) = graph.node_blocks(node).get(if condition { 0 } else { 1 }) else {
            return;
        };
        self.block(graph, taken);
        for moved in graph.block_nodes(taken) {
            graph.move_before(moved, node);
        }
        let results = graph.block_outputs(taken).to_vec();
        for (index, result) in results.into_iter().enumerate() {
            let output = graph.node_output(node, index);
            graph.replace_all_uses_with(output, result);
        }
        let destroyed = graph.destroy_node(node);
        debug_assert!(destroyed, "an inlined If has no uses left");
        self.made_change = true;
    }

    fn remove_loop(&mut self, graph: &mut Graph, node: NodeId) {
        let outputs = graph.node_outputs(node).to_vec();
        let inputs = graph.node_inputs(node).to_vec();
        for (index, output) in outputs.into_iter().enumerate() {
            if let Some(&initial) = inputs.get(index + 2) {
                graph.replace_all_uses_with(output, initial);
            }
        }
        let destroyed = graph.destroy_node(node);
        debug_assert!(destroyed, "a removed loop has no uses left");
        self.made_change = true;
    }

    /// Removes If outputs that are the same value in both branches, or equal constants.
    fn remove_extra_if_outputs(&mut self, graph: &mut Graph, node: NodeId) {
        let blocks = graph.node_blocks(node).to_vec();
        let [then_block, else_block] = blocks[..] else {
            return;
        };
        let mut index = 0;
        while index < graph.node_outputs(node).len() {
            let then_value = graph.block_outputs(then_block)[index];
            let else_value = graph.block_outputs(else_block)[index];
            let replacement = if then_value == else_value {
                Some(then_value)
            } else if let Some(producer) = equal_constants(graph, then_value, else_value) {
                let attribute = graph.attribute(producer, "value").cloned();
                let ty = graph.value_type(then_value).clone();
                graph.set_insert_point(InsertPoint::Before(node));
                Some(graph.insert_constant(attribute, ty))
            } else {
                None
            };
            let Some(replacement) = replacement else {
                index += 1;
                continue;
            };
            let output = graph.node_output(node, index);
            graph.replace_all_uses_with(output, replacement);
            let erased = graph
                .erase_node_output(node, index)
                .and_then(|()| graph.erase_block_output(then_block, index))
                .and_then(|()| graph.erase_block_output(else_block, index));
            debug_assert!(erased.is_ok(), "{erased:?}");
            self.made_change = true;
        }
    }

    /// Removes loop-carried values the body passes through unchanged.
    fn remove_extra_loop_outputs(&mut self, graph: &mut Graph, node: NodeId) {
        let Some(&body) = graph.node_blocks(node).first() else {
            return;
        };
        for index in (0..graph.node_outputs(node).len()).rev() {
            let parameter = graph.block_parameters(body)[index + 1];
            if graph.block_outputs(body)[index + 1] != parameter {
                continue;
            }
            let initial = graph.node_inputs(node)[index + 2];
            let output = graph.node_output(node, index);
            graph.replace_all_uses_with(output, initial);
            graph.replace_all_uses_with(parameter, initial);
            let erased = graph
                .erase_block_output(body, index + 1)
                .and_then(|()| graph.erase_block_parameter(body, index + 1))
                .and_then(|()| graph.erase_node_output(node, index))
                .and_then(|()| graph.erase_node_input(node, index + 2));
            debug_assert!(erased.is_ok(), "{erased:?}");
            self.made_change = true;
        }
    }
}

/// The first value's `prim::Constant` when both values are constants of the same type and
/// value (PyTorch's `EqualNode` on their nodes).
fn equal_constants(graph: &Graph, a: ValueId, b: ValueId) -> Option<NodeId> {
    let (node_a, node_b) = (graph.producer(a)?, graph.producer(b)?);
    let is_constant = |node| graph.kind(node).is_prim(Prim::Constant);
    let text = |node| {
        graph
            .attribute(node, "value")
            .map(AttributeValue::to_ir_string)
    };
    let equal = is_constant(node_a)
        && is_constant(node_b)
        && graph.value_type(a) == graph.value_type(b)
        && text(node_a) == text(node_b);
    equal.then_some(node_a)
}

/// A loop whose trip count is a constant of at most zero, or whose first condition is the
/// constant False.
fn loop_will_not_run(graph: &Graph, node: NodeId) -> bool {
    let inputs = graph.node_inputs(node);
    let trip_count = match inputs.first().and_then(|&v| constant_value(graph, v)) {
        Some(IValue::Int(count)) => count,
        _ => 1,
    };
    let condition = match inputs.get(1).and_then(|&v| constant_value(graph, v)) {
        Some(IValue::Bool(condition)) => condition,
        _ => true,
    };
    !(condition && trip_count > 0)
}
