//! Finding fusion groups: maximal runs of fusible nodes in one block, gathered next to each
//! other with AliasDb's move checks (PyTorch's `GraphFuser` in graph_fuser.cpp).
//!
//! Each block is scanned from its end. A fusible node not yet grouped seeds a group; the
//! group then takes in, one at a time, the fusible producers of its inputs, latest first.
//! A producer joins only when every use of its outputs is in the group or after it (so
//! nothing between them needs it first) and AliasDb lets it move to just before the group:
//! it is never moved across a write to an alias of what it reads. The group's nodes stay
//! contiguous, so replacing them by one node changes no order. Groups of fewer than
//! [`MIN_GROUP_SIZE`] nodes are dropped. A trailing reduction (softmax over the last dim)
//! may seed a group but never joins one, so a group has at most one, at its end.

use std::collections::{HashMap, HashSet};

use ferrojit_ir::{BlockId, Graph, NodeId, ValueId};

use super::fusible_ops::{is_fusible, is_trailing_reduction};
use crate::alias_analysis::AliasDb;

/// The fewest nodes worth a group: a single node gains nothing from fusion and pays for the
/// type check. PyTorch's TensorExpr fuser uses the same minimum (`min_group_size` 2); its
/// legacy fuser keeps single-node groups.
pub const MIN_GROUP_SIZE: usize = 2;

/// The fusion groups of `block` and of every block nested in it, each as its nodes in
/// program order, contiguous in their block. Moves nodes (only where AliasDb allows) but
/// creates none, so `alias_db` stays valid throughout.
pub fn find_groups(graph: &mut Graph, alias_db: &AliasDb, block: BlockId) -> Vec<Vec<NodeId>> {
    let mut groups = Vec::new();
    let mut pending = vec![block];
    while let Some(block) = pending.pop() {
        for node in graph.block_nodes(block) {
            pending.extend(graph.node_blocks(node).iter().copied());
        }
        groups.extend(groups_in_block(graph, alias_db, block));
    }
    groups
}

/// The groups of one block (not of its nested blocks).
fn groups_in_block(graph: &mut Graph, alias_db: &AliasDb, block: BlockId) -> Vec<Vec<NodeId>> {
    let mut grouped: HashSet<NodeId> = HashSet::new();
    let mut groups = Vec::new();
    let mut cursor = graph.block_nodes(block).last().copied();
    while let Some(seed) = cursor {
        // A trailing reduction only seeds: producers that join are pointwise, so it stays
        // the group's last node.
        if grouped.contains(&seed)
            || !(is_fusible(graph, seed) || is_trailing_reduction(graph, seed))
        {
            cursor = graph.previous_node(seed);
            continue;
        }
        let group = grow_group(graph, alias_db, block, seed, &grouped);
        // The group grew backwards from the seed; scanning goes on before its first node.
        cursor = graph.previous_node(group[0]);
        if group.len() >= MIN_GROUP_SIZE {
            grouped.extend(group.iter().copied());
            groups.push(group);
        }
    }
    groups.reverse();
    groups
}

/// Grows a group backwards from `seed`: returns its nodes in program order.
fn grow_group(
    graph: &mut Graph,
    alias_db: &AliasDb,
    block: BlockId,
    seed: NodeId,
    grouped: &HashSet<NodeId>,
) -> Vec<NodeId> {
    let mut group = vec![seed];
    loop {
        let positions = block_positions(graph, block);
        let members: HashSet<NodeId> = group.iter().copied().collect();
        let mut candidates: Vec<NodeId> = group
            .iter()
            .flat_map(|&node| graph.node_inputs(node).to_vec())
            .filter_map(|value| graph.producer(value))
            .filter(|producer| {
                positions.contains_key(producer)
                    && !members.contains(producer)
                    && !grouped.contains(producer)
            })
            .collect();
        candidates.sort_by_key(|producer| std::cmp::Reverse(positions[producer]));
        candidates.dedup();
        let last_position = positions[group.last().unwrap_or(&seed)];
        let joined = candidates.into_iter().find(|&candidate| {
            is_fusible(graph, candidate)
                && uses_are_in_or_after(
                    graph,
                    block,
                    &positions,
                    candidate,
                    &members,
                    last_position,
                )
                && move_next_to(graph, alias_db, candidate, group[0])
        });
        match joined {
            Some(candidate) => group.insert(0, candidate),
            None => return group,
        }
    }
}

/// Each node of `block` and its index in the block.
pub(crate) fn block_positions(graph: &Graph, block: BlockId) -> HashMap<NodeId, usize> {
    graph
        .block_nodes(block)
        .into_iter()
        .enumerate()
        .map(|(index, node)| (node, index))
        .collect()
}

/// Whether every use of `candidate`'s outputs is by a group member or after the group's last
/// node (`last_position`); a use inside a nested block counts where its enclosing node of
/// `block` is, and a use by the block's return is after everything.
pub(crate) fn uses_are_in_or_after(
    graph: &Graph,
    block: BlockId,
    positions: &HashMap<NodeId, usize>,
    candidate: NodeId,
    members: &HashSet<NodeId>,
    last_position: usize,
) -> bool {
    graph.node_outputs(candidate).iter().all(|&output| {
        graph.value_uses(output).iter().all(|use_site| {
            if members.contains(&use_site.node) {
                return true;
            }
            match enclosing_node_in(graph, block, use_site.node) {
                Some(user) => positions.get(&user).is_some_and(|&at| at > last_position),
                // The block's return node.
                None => true,
            }
        })
    })
}

/// The node of `block` that is `node` or contains it; `None` for `block`'s return node (or a
/// node outside `block`, which SSA scoping rules out for uses of a value defined in it).
pub(crate) fn enclosing_node_in(graph: &Graph, block: BlockId, mut node: NodeId) -> Option<NodeId> {
    loop {
        let owner = graph.node(node).owning_block?;
        if owner == block {
            return (graph.block_return_node(block) != node).then_some(node);
        }
        node = graph.block_owning_node(owner)?;
    }
}

/// Puts `candidate` just before `first` (the group's first node), when AliasDb allows the
/// move. The caller has checked that no node between them uses `candidate`'s outputs, so
/// only memory dependencies can stop it: a write, between the two, to an alias of what
/// `candidate` reads.
pub(crate) fn move_next_to(
    graph: &mut Graph,
    alias_db: &AliasDb,
    candidate: NodeId,
    first: NodeId,
) -> bool {
    if graph.next_node(candidate) == Some(first) {
        return true;
    }
    if !alias_db.could_move_before_topologically(graph, candidate, first) {
        return false;
    }
    alias_db.move_before_topologically_valid(graph, candidate, first);
    // Nothing between used the candidate, so it moved alone and sits next to the group.
    graph.next_node(candidate) == Some(first)
}

/// The values the group's nodes read that no group node makes, in order of first use.
pub fn group_inputs(graph: &Graph, group: &[NodeId]) -> Vec<ValueId> {
    let members: HashSet<NodeId> = group.iter().copied().collect();
    let mut inputs = Vec::new();
    for &node in group {
        for &input in graph.node_inputs(node) {
            let made_inside = graph
                .producer(input)
                .is_some_and(|producer| members.contains(&producer));
            if !made_inside && !inputs.contains(&input) {
                inputs.push(input);
            }
        }
    }
    inputs
}

/// The values group nodes make that something outside the group reads, in program order.
pub fn group_outputs(graph: &Graph, group: &[NodeId]) -> Vec<ValueId> {
    let members: HashSet<NodeId> = group.iter().copied().collect();
    group
        .iter()
        .flat_map(|&node| graph.node_outputs(node).to_vec())
        .filter(|&output| {
            graph
                .value_uses(output)
                .iter()
                .any(|use_site| !members.contains(&use_site.node))
        })
        .collect()
}
