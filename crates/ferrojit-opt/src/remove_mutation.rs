//! Removal of mutation, PyTorch's `MutationRemover` (`_jit_pass_remove_mutation`): list
//! mutation first (`RemoveListMutation`), then tensor mutation (`RemoveTensorMutation`).
//!
//! * A list built by `prim::ListConstruct` and then changed by `aten::append`,
//!   `aten::insert` at a constant position, or `aten::_set_item` at a constant index inside
//!   the list, gets the change folded into the construct.
//! * An in-place `aten` operator (`aten::add_`) on a value that is a fresh memory location
//!   becomes its functional form (`aten::add`); `aten::fill_.Scalar`, `aten::zero_` and
//!   `aten::normal_` become `full_like`, `zeros_like` and `normal` with the arguments PyTorch
//!   gives them. Uses of the mutated value after the mutation read the new value.
//!
//! What PyTorch refuses is refused here: a value that is a graph or block input, that comes
//! from a node with blocks, a subgraph or side effects, or that may alias (or contain an
//! alias of) one of its producer's inputs; and a creation that cannot be moved next to the
//! mutation without changing what the graph computes (asked of [`AliasDb`]). An `If` output
//! is accepted when both branch values are fresh and used only as the branch output.
//!
//! PyTorch updates its alias database in place after each rewrite; here the database is
//! rebuilt instead, which gives the same answers for the rewritten graph.

use ferrojit_ir::{Graph, InsertPoint, NodeId, Prim, Type, ValueDefinition, ValueId};
use ferrojit_runtime::registry::OperatorRegistry;

use crate::alias_analysis::{attach_registry_schemas, has_side_effects, AliasDb};
use crate::constant_insertion::constant_int;

/// Runs list then tensor mutation removal on every block of `graph`.
pub fn remove_mutation(graph: &mut Graph) -> Result<(), String> {
    let registry = OperatorRegistry::global();
    attach_registry_schemas(graph, registry);
    let mut remover = MutationRemover {
        registry,
        alias_db: AliasDb::new(graph),
    };
    let top = graph.top_block();
    remover.remove_list_mutation(graph, top);
    remover.remove_tensor_mutation(graph, top);
    Ok(())
}

struct MutationRemover {
    registry: &'static OperatorRegistry,
    alias_db: AliasDb,
}

/// The full schema name (`aten::fill_.Scalar`) of the operator attached to `node`.
fn schema_full_name(graph: &Graph, node: NodeId) -> Option<String> {
    graph
        .node(node)
        .schema
        .as_ref()
        .map(|schema| schema.full_name())
}

/// The in-place operators PyTorch rewrites to another operator than their own functional
/// form (`isSpecialMappedOp`).
fn is_special_mapped_op(graph: &Graph, node: NodeId) -> bool {
    matches!(
        schema_full_name(graph, node).as_deref(),
        Some("aten::fill_.Scalar" | "aten::zero_" | "aten::normal_")
    )
}

/// Position of `node` in its block; a block's return node comes after every other node.
fn position_in_block(graph: &Graph, node: NodeId) -> usize {
    let Some(block) = graph.node(node).owning_block else {
        return 0;
    };
    if graph.block_return_node(block) == node {
        return usize::MAX;
    }
    graph
        .block_nodes(block)
        .iter()
        .position(|&n| n == node)
        .unwrap_or(0)
}

/// The chain of (block, node) pairs from `node` up to the top block.
fn ancestry(graph: &Graph, node: NodeId) -> Vec<NodeId> {
    let mut chain = vec![node];
    let mut current = node;
    while let Some(block) = graph.node(current).owning_block {
        match graph.block_owning_node(block) {
            Some(owner) => {
                chain.push(owner);
                current = owner;
            }
            None => break,
        }
    }
    chain
}

/// Whether `node` comes after `anchor` in program order (PyTorch's `Node::isAfter`): the two
/// are compared in the innermost block holding both (or nodes that hold them).
fn is_after(graph: &Graph, node: NodeId, anchor: NodeId) -> bool {
    let node_chain = ancestry(graph, node);
    let anchor_chain = ancestry(graph, anchor);
    for &left in &node_chain {
        for &right in &anchor_chain {
            if graph.node(left).owning_block == graph.node(right).owning_block {
                return position_in_block(graph, left) > position_in_block(graph, right);
            }
        }
    }
    false
}

/// Makes the uses of `old` by nodes after `anchor` uses of `new`
/// (`Value::replaceAllUsesAfterNodeWith`).
fn replace_uses_after(graph: &mut Graph, old: ValueId, anchor: NodeId, new: ValueId) {
    let uses: Vec<_> = graph.value_uses(old).to_vec();
    for use_site in uses {
        if is_after(graph, use_site.node, anchor) {
            graph.replace_node_input(use_site.node, use_site.input_index, new);
        }
    }
}

/// Inserts `kind(inputs)` with outputs of `output_types` just before `anchor`.
fn insert_before(
    graph: &mut Graph,
    anchor: NodeId,
    kind: &str,
    inputs: &[ValueId],
    output_types: &[Type],
) -> NodeId {
    let saved = graph.insert_point();
    graph.set_insert_point(InsertPoint::Before(anchor));
    let node = graph.insert(kind, inputs, output_types);
    graph.set_insert_point(saved);
    node
}

/// Inserts a `None` constant just before `anchor`.
fn insert_none_before(graph: &mut Graph, anchor: NodeId) -> ValueId {
    let saved = graph.insert_point();
    graph.set_insert_point(InsertPoint::Before(anchor));
    let value = graph.insert_constant(None, Type::NoneType);
    graph.set_insert_point(saved);
    value
}

impl MutationRemover {
    fn rebuild_alias_db(&mut self, graph: &mut Graph) {
        attach_registry_schemas(graph, self.registry);
        self.alias_db = AliasDb::new(graph);
    }

    /// PyTorch's `hasSideEffectOrAlias`: whether `value` may not be a memory location of its
    /// own, so removing a mutation of it could be observed elsewhere.
    fn has_side_effect_or_alias(&self, graph: &Graph, value: ValueId) -> bool {
        let ValueDefinition::NodeOutput { node, .. } = graph.value_definition(value) else {
            return true;
        };
        let unhandled = !graph.node_blocks(node).is_empty()
            || graph.attribute(node, "Subgraph").is_some()
            || has_side_effects(graph, node);
        let may_alias_inputs = !graph.kind(node).is_prim(Prim::ListConstruct)
            && self
                .alias_db
                .may_contain_alias_any(graph.node_inputs(node), &[value]);
        unhandled || may_alias_inputs
    }

    fn try_make_creation_and_mutation_atomic(
        &self,
        graph: &mut Graph,
        mutated: ValueId,
        mutating: NodeId,
    ) -> bool {
        if self.has_side_effect_or_alias(graph, mutated) {
            return false;
        }
        let Some(creator) = graph.producer(mutated) else {
            return false;
        };
        self.alias_db
            .move_before_topologically_valid(graph, creator, mutating)
    }

    fn try_make_unaliased_if_output_and_mutation_atomic(
        &self,
        graph: &mut Graph,
        mutated: ValueId,
        mutating: NodeId,
    ) -> bool {
        let ValueDefinition::NodeOutput {
            node: if_node,
            index,
        } = graph.value_definition(mutated)
        else {
            return false;
        };
        if !graph.kind(if_node).is_prim(Prim::If) {
            return false;
        }
        let blocks = graph.node_blocks(if_node);
        let (Some(&then_block), Some(&else_block)) = (blocks.first(), blocks.get(1)) else {
            return false;
        };
        let (Some(&then_value), Some(&else_value)) = (
            graph.block_outputs(then_block).get(index),
            graph.block_outputs(else_block).get(index),
        ) else {
            return false;
        };
        if graph.value_uses(then_value).len() > 1 || graph.value_uses(else_value).len() > 1 {
            return false;
        }
        if self.has_side_effect_or_alias(graph, then_value)
            || self.has_side_effect_or_alias(graph, else_value)
        {
            return false;
        }
        self.alias_db
            .move_before_topologically_valid(graph, if_node, mutating)
    }

    /// PyTorch's `listMutationFollowingListConstruct`.
    fn is_list_mutation_following_list_construct(&self, graph: &Graph, node: NodeId) -> bool {
        let inputs = graph.node_inputs(node);
        let Some(list_node) = inputs.first().and_then(|&list| graph.producer(list)) else {
            return false;
        };
        if !graph.kind(list_node).is_prim(Prim::ListConstruct) {
            return false;
        }
        let kind = graph.kind(node);
        if kind.is("aten::append") {
            return inputs.len() == 2;
        }
        if kind.is("aten::insert") {
            return inputs.len() == 3
                && graph
                    .producer(inputs[1])
                    .is_some_and(|p| graph.kind(p).is_prim(Prim::Constant))
                && constant_int(graph, inputs[1]).is_some();
        }
        if kind.is("aten::_set_item") {
            if inputs.len() != 3 {
                return false;
            }
            let Some(mut index) = constant_int(graph, inputs[1]) else {
                return false;
            };
            let length = graph.node_inputs(list_node).len() as i64;
            if index < 0 {
                index += length;
            }
            return (0..length).contains(&index);
        }
        false
    }

    fn remove_list_mutation(&mut self, graph: &mut Graph, block: ferrojit_ir::BlockId) {
        for node in graph.block_nodes(block) {
            if graph.is_destroyed(node) {
                continue;
            }
            for nested in graph.node_blocks(node).to_vec() {
                self.remove_list_mutation(graph, nested);
            }
            if !self.is_list_mutation_following_list_construct(graph, node) {
                continue;
            }
            let inputs = graph.node_inputs(node).to_vec();
            let mutated = inputs[0];
            if !self.try_make_creation_and_mutation_atomic(graph, mutated, node) {
                continue;
            }
            let Some(list_node) = graph.producer(mutated) else {
                continue;
            };
            let mut elements = graph.node_inputs(list_node).to_vec();
            let size = elements.len() as i64;
            if graph.kind(node).is("aten::append") {
                elements.push(inputs[1]);
            } else {
                let position = constant_int(graph, inputs[1]).unwrap_or(0);
                let position = if position < 0 {
                    (position + size).max(0)
                } else {
                    position
                };
                if graph.kind(node).is("aten::insert") {
                    elements.insert(position.min(size) as usize, inputs[2]);
                } else {
                    elements[position as usize] = inputs[2];
                }
            }
            graph.remove_all_inputs(list_node);
            for element in elements {
                graph.add_node_input(list_node, element);
            }
            for output in graph.node_outputs(node).to_vec() {
                graph.replace_all_uses_with(output, mutated);
            }
            graph.destroy_node(node);
            self.rebuild_alias_db(graph);
        }
    }

    /// PyTorch's `inplaceOpVariant`: an `aten` operator named with a trailing `_` that writes
    /// its first input and no other, returns one value, and has a functional form.
    fn is_in_place_variant(&self, graph: &Graph, node: NodeId) -> bool {
        if graph.kind(node).namespace() != "aten" {
            return false;
        }
        if is_special_mapped_op(graph, node) {
            return true;
        }
        let Some(schema) = graph.node(node).schema.as_ref() else {
            return false;
        };
        let Some(functional) = schema.name.strip_suffix('_') else {
            return false;
        };
        let inputs = graph.node_inputs(node);
        if graph.node_outputs(node).len() != 1 || inputs.is_empty() {
            return false;
        }
        if !self.alias_db.writes_to_alias(graph, node, &inputs[..1])
            || self.alias_db.writes_to_alias(graph, node, &inputs[1..])
        {
            return false;
        }
        !self.registry.overloads(functional).is_empty()
    }

    /// The replacement of a special mapped op, inserted before it (`createSpecialMappedOp`).
    fn create_special_mapped_op(&self, graph: &mut Graph, node: NodeId) -> Option<NodeId> {
        let inputs = graph.node_inputs(node).to_vec();
        let output_type = graph.value_type(graph.node_output(node, 0)).clone();
        let name = schema_full_name(graph, node)?;
        let new_node = match name.as_str() {
            "aten::fill_.Scalar" => {
                let dtype_node =
                    insert_before(graph, node, "prim::dtype", &inputs[..1], &[Type::Int]);
                let dtype = graph.node_output(dtype_node, 0);
                // full_like(self, fill_value, *, dtype, layout, device, pin_memory,
                // memory_format): the defaults PyTorch's schema matching fills in.
                let mut arguments = vec![inputs[0], inputs[1], dtype];
                for _ in 0..4 {
                    arguments.push(insert_none_before(graph, node));
                }
                insert_before(graph, node, "aten::full_like", &arguments, &[output_type])
            }
            "aten::zero_" => {
                let mut arguments = vec![inputs[0]];
                for _ in 0..5 {
                    arguments.push(insert_none_before(graph, node));
                }
                insert_before(graph, node, "aten::zeros_like", &arguments, &[output_type])
            }
            "aten::normal_" => {
                let this = inputs[0];
                let size = insert_before(
                    graph,
                    node,
                    "aten::size",
                    &[this],
                    &[Type::List(Box::new(Type::Int))],
                );
                let dtype = insert_before(graph, node, "prim::dtype", &[this], &[Type::Int]);
                let layout = insert_before(graph, node, "prim::layout", &[this], &[Type::Int]);
                let device = insert_before(graph, node, "prim::device", &[this], &[Type::Device]);
                let pin_device = insert_none_before(graph, node);
                let pinned = insert_before(
                    graph,
                    node,
                    "aten::is_pinned",
                    &[this, pin_device],
                    &[Type::Bool],
                );
                let generator = insert_none_before(graph, node);
                let (Some(&mean), Some(&std)) = (inputs.get(1), inputs.get(2)) else {
                    return None;
                };
                let arguments = [
                    mean,
                    std,
                    graph.node_output(size, 0),
                    generator,
                    graph.node_output(dtype, 0),
                    graph.node_output(layout, 0),
                    graph.node_output(device, 0),
                    graph.node_output(pinned, 0),
                ];
                insert_before(graph, node, "aten::normal", &arguments, &[output_type])
            }
            _ => return None,
        };
        Some(new_node)
    }

    fn copy_metadata(graph: &mut Graph, from: NodeId, to: NodeId) {
        let data = graph.node(from);
        let location = data.source_location.clone();
        graph.set_source_location(to, location);
    }

    fn remove_tensor_mutation(&mut self, graph: &mut Graph, block: ferrojit_ir::BlockId) {
        for node in graph.block_nodes(block) {
            if graph.is_destroyed(node) {
                continue;
            }
            for nested in graph.node_blocks(node).to_vec() {
                self.remove_tensor_mutation(graph, nested);
            }
            if !self.is_in_place_variant(graph, node) {
                continue;
            }
            let mutated = graph.node_inputs(node)[0];
            if !self.try_make_creation_and_mutation_atomic(graph, mutated, node)
                && !self.try_make_unaliased_if_output_and_mutation_atomic(graph, mutated, node)
            {
                continue;
            }
            let new_node = if is_special_mapped_op(graph, node) {
                match self.create_special_mapped_op(graph, node) {
                    Some(new_node) => new_node,
                    None => continue,
                }
            } else {
                let Some(name) = graph
                    .node(node)
                    .schema
                    .as_ref()
                    .and_then(|schema| schema.name.strip_suffix('_').map(str::to_string))
                else {
                    continue;
                };
                let inputs = graph.node_inputs(node).to_vec();
                let types: Vec<Type> = inputs
                    .iter()
                    .map(|&v| graph.value_type(v).clone())
                    .collect();
                // PyTorch drops the rewrite when no functional overload takes these inputs.
                let Some(schema) = self
                    .registry
                    .find_by_types(&name, &types)
                    .map(|operator| operator.schema.clone())
                else {
                    continue;
                };
                let output_type = graph.value_type(graph.node_output(node, 0)).clone();
                let new_node = insert_before(graph, node, &name, &inputs, &[output_type]);
                graph.set_node_schema(new_node, Some(schema));
                new_node
            };
            Self::copy_metadata(graph, node, new_node);
            let new_output = graph.node_output(new_node, 0);
            replace_uses_after(graph, mutated, node, new_output);
            let old_output = graph.node_output(node, 0);
            graph.replace_all_uses_with(old_output, new_output);
            graph.destroy_node(node);
            self.rebuild_alias_db(graph);
        }
    }
}
