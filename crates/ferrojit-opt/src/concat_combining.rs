//! Concat combining, PyTorch's `CombineConcats` (run by `_jit_pass_peephole`): a `cat`
//! whose only use is an element of the list of a second `cat` along the same constant
//! dimension is spliced into that list, so one `cat` does the work of both:
//!
//! ```text
//! %a = prim::ListConstruct(%x, %y);  %c = aten::cat(%a, %dim)
//! %b = prim::ListConstruct(%z, %c);  %d = aten::cat(%b, %dim)
//!   becomes  %n = prim::ListConstruct(%z, %x, %y);  %d = aten::cat(%n, %dim)
//! ```
//!
//! Chains combine into the last `cat`. The first `cat`'s list must be a
//! `prim::ListConstruct` that could move down to the `cat` (nothing between writes it), and
//! each intermediate value must have exactly one use. Dead code elimination with alias
//! analysis runs when anything combined.

use std::collections::HashMap;

use ferrojit_ir::{Graph, InsertPoint, NodeId, Prim};
use ferrojit_runtime::IValue;

use crate::alias_analysis::AliasDb;
use crate::constant_insertion::constant_value;

/// One combinable pair: `first`'s inputs go into `second`'s list at `index`.
struct CombinablePair {
    first: NodeId,
    second: NodeId,
    index: usize,
}

/// Runs concat combining on `graph` (whose nodes should carry their schemas); whether it
/// combined anything.
pub fn combine_concats(graph: &mut Graph) -> Result<bool, String> {
    let alias_db = AliasDb::new(graph);
    let mut pairs = Vec::new();
    for node in graph.all_nodes() {
        if graph.kind(node).is("aten::cat") {
            if let Some(pair) = combinable_pair(graph, &alias_db, node) {
                pairs.push(pair);
            }
        }
    }
    if pairs.is_empty() {
        return Ok(false);
    }
    // Each chain's inputs accumulate under its latest cat, as PyTorch's map does.
    let mut order: Vec<NodeId> = Vec::new();
    let mut lists: HashMap<NodeId, Vec<ferrojit_ir::ValueId>> = HashMap::new();
    for pair in &pairs {
        let added = list_elements(graph, pair.second);
        let mut list = lists.remove(&pair.first).unwrap_or_default();
        order.retain(|&node| node != pair.first);
        if list.is_empty() {
            list = list_elements(graph, pair.first);
        }
        let mut combined: Vec<_> = added[..pair.index].to_vec();
        combined.extend(list);
        combined.extend_from_slice(&added[pair.index + 1..]);
        // PyTorch's emplace keeps an entry already there.
        if let std::collections::hash_map::Entry::Vacant(slot) = lists.entry(pair.second) {
            slot.insert(combined);
            order.push(pair.second);
        }
    }
    for concat in order {
        let Some(elements) = lists.remove(&concat) else {
            continue;
        };
        let Some(old_list) = graph.node_inputs(concat).first().copied() else {
            continue;
        };
        let ty = graph.value_type(old_list).clone();
        let saved = graph.insert_point();
        graph.set_insert_point(InsertPoint::Before(concat));
        let construct = graph.insert(Prim::ListConstruct.name(), &elements, &[ty]);
        graph.set_insert_point(saved);
        let new_list = graph.node_output(construct, 0);
        graph.replace_all_uses_with(old_list, new_list);
    }
    graph.set_insert_point(InsertPoint::EndOf(graph.top_block()));
    crate::dead_code_elimination::eliminate_dead_code_with_alias_db(graph)
        .map_err(|error| format!("peephole (combining concats): {error}"))?;
    Ok(true)
}

/// The elements of the `prim::ListConstruct` a `cat` concatenates.
fn list_elements(graph: &Graph, concat: NodeId) -> Vec<ferrojit_ir::ValueId> {
    graph
        .node_inputs(concat)
        .first()
        .and_then(|&list| graph.producer(list))
        .map(|construct| graph.node_inputs(construct).to_vec())
        .unwrap_or_default()
}

/// The constant int dimension of a `cat`.
fn constant_dim(graph: &Graph, concat: NodeId) -> Option<i64> {
    match constant_value(graph, *graph.node_inputs(concat).get(1)?)? {
        IValue::Int(dim) => Some(dim),
        _ => None,
    }
}

fn combinable_pair(
    graph: &mut Graph,
    alias_db: &AliasDb,
    concat: NodeId,
) -> Option<CombinablePair> {
    let dim = constant_dim(graph, concat)?;
    let list = *graph.node_inputs(concat).first()?;
    let list_node = graph.producer(list)?;
    if !graph.kind(list_node).is_prim(Prim::ListConstruct)
        || !alias_db.could_move_before_topologically(graph, list_node, concat)
    {
        return None;
    }
    let [output] = graph.node_outputs(concat) else {
        return None;
    };
    let output = *output;
    let [use_site] = graph.value_uses(output) else {
        return None;
    };
    let next_list = use_site.node;
    if !graph.kind(next_list).is_prim(Prim::ListConstruct) {
        return None;
    }
    let [next_list_output] = graph.node_outputs(next_list) else {
        return None;
    };
    let [next_use] = graph.value_uses(*next_list_output) else {
        return None;
    };
    let next_concat = next_use.node;
    if !graph.kind(next_concat).is("aten::cat") || constant_dim(graph, next_concat)? != dim {
        return None;
    }
    // The second cat must read the list as its tensors, so that its elements are spliced.
    if graph.node_inputs(next_concat).first() != Some(next_list_output) {
        return None;
    }
    let index = graph
        .node_inputs(next_list)
        .iter()
        .position(|&value| value == output)?;
    Some(CombinablePair {
        first: concat,
        second: next_concat,
        index,
    })
}
