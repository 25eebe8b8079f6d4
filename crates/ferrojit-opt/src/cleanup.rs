//! Post-emission cleanup, as PyTorch runs after `ConvertToSSA`: dead code elimination
//! (including unused `prim::If` outputs and loop-carried values) and constant pooling
//! (constants deduplicated and moved to the start of the graph).
//!
//! and output canonicalisation (PyTorch's `CanonicalizeOutputs`: the outputs of `prim::If`
//! and the carried values of `prim::Loop` ordered by their first use).
//!
//! It composes the passes [`crate::dead_code_elimination`] and [`crate::constant_pooling`]
//! with the output canonicalisation here. All three edit the graph in place with the IR's edit
//! operations (erase, permute, move, replace), which keep use lists consistent; node and value
//! identities survive, as they do in PyTorch's passes.

use std::collections::HashMap;

use ferrojit_ir::{BlockId, Graph, GraphEditError, InsertPoint, NodeId, Prim, ValueId};

use crate::constant_pooling::pool_constants;
use crate::dead_code_elimination::eliminate_dead_code;

/// A permutation the IR refused; it always names every position once, so this is a bug here.
fn edited(result: Result<(), GraphEditError>) {
    if let Err(error) = result {
        panic!("cleanup made an illegal graph edit: {error}");
    }
}

/// Program-order position of every node, with a block's return node after its nodes.
fn number_nodes(graph: &Graph, block: BlockId, position: &mut HashMap<NodeId, usize>) {
    for node in graph.block_nodes(block) {
        let next = position.len();
        position.insert(node, next);
        for &nested in graph.node_blocks(node) {
            number_nodes(graph, nested, position);
        }
    }
    let next = position.len();
    position.insert(graph.block_return_node(block), next);
}

/// Where a value is first used (PyTorch's `firstOrLastUse`): the earliest user in program
/// order, then the lowest input index.
fn first_use(
    graph: &Graph,
    position: &HashMap<NodeId, usize>,
    value: ValueId,
) -> Option<(usize, usize)> {
    graph
        .value_uses(value)
        .iter()
        .map(|u| {
            (
                position.get(&u.node).copied().unwrap_or(usize::MAX),
                u.input_index,
            )
        })
        .min()
}

/// The outputs of one `prim::If` or `prim::Loop` ordered by first use; unused ones keep their order at the end.
fn canonicalize_outputs(
    graph: &mut Graph,
    position: &HashMap<NodeId, usize>,
    node: NodeId,
    is_loop: bool,
) {
    let outputs = graph.node_outputs(node).to_vec();
    let mut keyed: Vec<(Option<(usize, usize)>, usize)> = outputs
        .iter()
        .enumerate()
        .map(|(index, &output)| (first_use(graph, position, output), index))
        .collect();
    keyed.sort_by(|a, b| match (a.0, b.0) {
        (None, None) => a.1.cmp(&b.1),
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (Some(_), None) => std::cmp::Ordering::Less,
        (Some(x), Some(y)) => x.cmp(&y).then(a.1.cmp(&b.1)),
    });
    let order: Vec<usize> = keyed.into_iter().map(|(_, index)| index).collect();
    if order.iter().enumerate().all(|(new, &old)| new == old) {
        return;
    }
    edited(graph.permute_node_outputs(node, &order));
    // The same order shifted past the entries that come first in each list (see step 1).
    let shifted = |offset: usize| -> Vec<usize> {
        (0..offset)
            .chain(order.iter().map(|&index| index + offset))
            .collect()
    };
    if is_loop {
        edited(graph.permute_node_inputs(node, &shifted(2)));
        if let Some(&body) = graph.node_blocks(node).first() {
            edited(graph.permute_block_parameters(body, &shifted(1)));
            edited(graph.permute_block_outputs(body, &shifted(1)));
        }
    } else {
        for block in graph.node_blocks(node).to_vec() {
            edited(graph.permute_block_outputs(block, &order));
        }
    }
}

/// Removes dead nodes and outputs, orders the outputs of `prim::If` and `prim::Loop` by first
/// use, and pools constants at the start of the graph.
pub fn eliminate_dead_code_and_pool_constants(graph: &mut Graph) {
    eliminate_dead_code(graph);
    let mut position = HashMap::new();
    number_nodes(graph, graph.top_block(), &mut position);
    for node in graph.all_nodes() {
        let kind = graph.kind(node);
        let is_loop = kind.is_prim(Prim::Loop);
        if is_loop || kind.is_prim(Prim::If) {
            canonicalize_outputs(graph, &position, node, is_loop);
        }
    }
    pool_constants(graph);
    let top = graph.top_block();
    graph.set_insert_point(InsertPoint::EndOf(top));
}
