//! PyTorch's `EliminateDeadCode(Block*, recurse)`: the mark-and-sweep dead code elimination
//! without alias analysis that passes run on one block (loop unrolling on each unrolled body,
//! with `recurse` false) or on a whole graph's top block (`lower_all_tuples`).
//!
//! It follows PyTorch's algorithm step by step, because its quirks show in printed graphs:
//! the block's own outputs are all live; a node with side effects (or a mutable schema, as
//! nothing says which writes matter) is live and so is every node around it; a loop is marked
//! until nothing new is marked; unused `prim::If` outputs and unused loop-carried values are
//! erased while sweeping, even in live nodes. Without `recurse` only the block's own nodes
//! are swept. Freed values lose their debug names, as PyTorch frees them.

use std::collections::{HashMap, HashSet};

use ferrojit_ir::{BlockId, Graph, GraphEditError, NodeId, Prim, ValueId};

use crate::dead_code_elimination::has_side_effects;

/// Runs the eliminator on `block`; with `recurse`, nested blocks are swept too.
pub fn eliminate_dead_code_in_block(
    graph: &mut Graph,
    block: BlockId,
    recurse: bool,
) -> Result<(), GraphEditError> {
    let mut eliminator = BlockEliminator::default();
    let return_node = graph.block_return_node(block);
    eliminator.mark_node(graph, return_node);
    eliminator.mark_block(graph, block);
    eliminator.sweep(graph, block, recurse)
}

/// Destroys `node` (whose outputs nothing uses) with its blocks, clearing the debug names of
/// every value it defines first, as PyTorch's `freeValue` does.
pub fn destroy_node_freeing_names(graph: &mut Graph, node: NodeId) -> bool {
    if graph
        .node_outputs(node)
        .iter()
        .any(|&output| !graph.value_uses(output).is_empty())
    {
        return false;
    }
    let mut values: Vec<ValueId> = graph.node_outputs(node).to_vec();
    let mut pending: Vec<BlockId> = graph.node_blocks(node).to_vec();
    while let Some(block) = pending.pop() {
        values.extend_from_slice(graph.block_parameters(block));
        for inner in graph.block_nodes(block) {
            values.extend_from_slice(graph.node_outputs(inner));
            pending.extend_from_slice(graph.node_blocks(inner));
        }
    }
    for value in values {
        graph.clear_debug_name(value);
    }
    graph.destroy_node(node)
}

#[derive(Default)]
struct BlockEliminator {
    marked: HashSet<NodeId>,
    live_values: HashSet<ValueId>,
    side_effects: HashMap<NodeId, bool>,
}

impl BlockEliminator {
    /// Marks `node` live with every node that contains it; its inputs become live values.
    /// Returns whether it was not marked before.
    fn mark_node(&mut self, graph: &Graph, node: NodeId) -> bool {
        if !self.marked.insert(node) {
            return false;
        }
        let mut current = node;
        while let Some(block) = graph.node(current).owning_block {
            let Some(owner) = graph.block_owning_node(block) else {
                break;
            };
            self.mark_node(graph, owner);
            current = owner;
        }
        self.live_values
            .extend(graph.node_inputs(node).iter().copied());
        true
    }

    /// A block's return node: only the outputs whose outer values are live are live (for a
    /// loop, also a carried value read in the body, and the continue condition).
    fn mark_return_node(&mut self, graph: &Graph, return_node: NodeId) -> bool {
        if self.marked.contains(&return_node) {
            return false;
        }
        let Some(block) = graph.node(return_node).owning_block else {
            return self.mark_node(graph, return_node);
        };
        let Some(outer) = graph.block_owning_node(block) else {
            return self.mark_node(graph, return_node);
        };
        if graph.kind(outer).is_prim(Prim::Loop) {
            let body = graph.node_blocks(outer)[0];
            let body_parameters = graph.block_parameters(body);
            let body_outputs = graph.block_outputs(body);
            for (index, &outer_output) in graph.node_outputs(outer).iter().enumerate() {
                let (Some(&inner_input), Some(&inner_output)) =
                    (body_parameters.get(index + 1), body_outputs.get(index + 1))
                else {
                    continue;
                };
                if self.live_values.contains(&outer_output)
                    || !graph.value_uses(inner_input).is_empty()
                {
                    self.live_values.insert(inner_output);
                }
            }
            if let Some(&condition) = body_outputs.first() {
                self.live_values.insert(condition);
            }
        } else {
            let inner_outputs = graph.node_inputs(return_node);
            for (index, &outer_output) in graph.node_outputs(outer).iter().enumerate() {
                if self.live_values.contains(&outer_output) {
                    if let Some(&inner_output) = inner_outputs.get(index) {
                        self.live_values.insert(inner_output);
                    }
                }
            }
        }
        self.marked.insert(return_node);
        true
    }

    fn mark_loop(&mut self, graph: &Graph, node: NodeId) -> bool {
        let body = graph.node_blocks(node)[0];
        let mut any_marked = false;
        while self.mark_block(graph, body) {
            any_marked = true;
        }
        any_marked
    }

    fn mark_block(&mut self, graph: &Graph, block: BlockId) -> bool {
        let nodes = graph.block_nodes(block);
        let mut any_marked = false;
        for &node in &nodes {
            if self.has_side_effects(graph, node) {
                any_marked |= self.mark_node(graph, node);
            }
        }
        any_marked |= self.mark_return_node(graph, graph.block_return_node(block));
        for &node in nodes.iter().rev() {
            if graph.kind(node).is_prim(Prim::Loop) {
                any_marked |= self.mark_loop(graph, node);
            } else {
                for &nested in graph.node_blocks(node) {
                    any_marked |= self.mark_block(graph, nested);
                }
            }
            if graph
                .node_outputs(node)
                .iter()
                .any(|output| self.live_values.contains(output))
            {
                any_marked |= self.mark_node(graph, node);
            }
        }
        any_marked
    }

    /// PyTorch's rule without alias analysis: the node's own side effects, those of any
    /// node in its blocks, or a schema that writes.
    fn has_side_effects(&mut self, graph: &Graph, node: NodeId) -> bool {
        if let Some(&known) = self.side_effects.get(&node) {
            return known;
        }
        let mut result = has_side_effects(graph, node);
        if !result {
            'blocks: for &block in graph.node_blocks(node) {
                for inner in graph.block_nodes(block) {
                    if self.has_side_effects(graph, inner) {
                        result = true;
                        break 'blocks;
                    }
                }
            }
        }
        self.side_effects.insert(node, result);
        result
    }

    fn sweep(
        &self,
        graph: &mut Graph,
        block: BlockId,
        recurse: bool,
    ) -> Result<(), GraphEditError> {
        for node in graph.block_nodes(block).into_iter().rev() {
            remove_dead_if_outputs(graph, node)?;
            remove_dead_loop_outputs(graph, node)?;
            if recurse {
                for nested in graph.node_blocks(node).to_vec() {
                    self.sweep(graph, nested, true)?;
                }
            }
            let used = graph
                .node_outputs(node)
                .iter()
                .any(|&output| !graph.value_uses(output).is_empty());
            if !self.marked.contains(&node) && !used {
                crate::jit_log::log("dce", crate::jit_log::LogLevel::Update, || {
                    format!("Node {} will be removed", graph.kind(node).as_str())
                });
                destroy_node_freeing_names(graph, node);
            }
        }
        Ok(())
    }
}

/// Erases the outputs of a `prim::If` that nothing uses, with the matching block outputs.
fn remove_dead_if_outputs(graph: &mut Graph, node: NodeId) -> Result<(), GraphEditError> {
    if !graph.kind(node).is_prim(Prim::If) {
        return Ok(());
    }
    for index in (0..graph.node_outputs(node).len()).rev() {
        let output = graph.node_output(node, index);
        if !graph.value_uses(output).is_empty() {
            continue;
        }
        graph.clear_debug_name(output);
        graph.erase_node_output(node, index)?;
        for block in graph.node_blocks(node).to_vec() {
            graph.erase_block_output(block, index)?;
        }
    }
    Ok(())
}

/// Erases the carried values of a `prim::Loop` that neither the loop's users nor its body
/// read: the output, the initial value, the body parameter and the body output.
fn remove_dead_loop_outputs(graph: &mut Graph, node: NodeId) -> Result<(), GraphEditError> {
    if !graph.kind(node).is_prim(Prim::Loop) {
        return Ok(());
    }
    let Some(&body) = graph.node_blocks(node).first() else {
        return Ok(());
    };
    for index in (0..graph.node_outputs(node).len()).rev() {
        let output = graph.node_output(node, index);
        let Some(&parameter) = graph.block_parameters(body).get(index + 1) else {
            continue;
        };
        if !graph.value_uses(output).is_empty() || !graph.value_uses(parameter).is_empty() {
            continue;
        }
        graph.clear_debug_name(output);
        graph.erase_node_output(node, index)?;
        graph.erase_node_input(node, index + 2)?;
        graph.clear_debug_name(parameter);
        graph.erase_block_parameter(body, index + 1)?;
        graph.erase_block_output(body, index + 1)?;
    }
    Ok(())
}
