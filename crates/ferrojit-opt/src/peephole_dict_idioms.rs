//! Dict idioms, PyTorch's `PeepholeOptimizeDictIdioms` (part of `_jit_pass_peephole`): on a
//! dict built by `prim::DictConstruct` that nothing writes, with int, float or str keys
//! that are all constants and all different, `len(d)` is the number of keys and `d[k]` for
//! a constant key present is the value given for it.

use std::collections::HashSet;

use ferrojit_ir::{AttributeValue, BlockId, Graph, NodeId, Prim, Type, ValueId};
use ferrojit_runtime::IValue;

use crate::alias_analysis::AliasDb;
use crate::constant_insertion::constant_value;
use crate::peephole::{insert_constant_before, single_output};

/// Runs the dict idioms on `graph` (whose nodes should carry their schemas); whether any
/// applied.
pub fn optimize_dict_idioms(graph: &mut Graph) -> bool {
    let alias_db = AliasDb::new(graph);
    let mut mutated = HashSet::new();
    let top = graph.top_block();
    collect_mutated_dicts(graph, &alias_db, top, &mut mutated);
    run_block(graph, top, &mutated)
}

fn is_dict(graph: &Graph, value: ValueId) -> bool {
    matches!(graph.value_type(value), Type::Dict(..))
}

fn collect_mutated_dicts(
    graph: &Graph,
    alias_db: &AliasDb,
    block: BlockId,
    mutated: &mut HashSet<ValueId>,
) {
    let parameters: Vec<ValueId> = if block == graph.top_block() {
        graph.inputs().to_vec()
    } else {
        graph.block_parameters(block).to_vec()
    };
    let nodes = graph.block_nodes(block);
    let outputs = nodes
        .iter()
        .flat_map(|&node| graph.node_outputs(node).iter().copied());
    for value in parameters.into_iter().chain(outputs) {
        if is_dict(graph, value) && alias_db.has_writers(value) {
            mutated.insert(value);
        }
    }
    for node in nodes {
        for &nested in graph.node_blocks(node) {
            collect_mutated_dicts(graph, alias_db, nested, mutated);
        }
    }
}

/// A dict key, compared as PyTorch's per-key-type maps compare them.
#[derive(PartialEq)]
enum Key {
    Int(i64),
    Float(f64),
    Str(String),
}

fn key_of(value: &IValue, key_type: &Type) -> Option<Key> {
    match (key_type, value) {
        (Type::Int, IValue::Int(v)) => Some(Key::Int(*v)),
        (Type::Float, IValue::Double(v)) => Some(Key::Float(*v)),
        (Type::Str, IValue::Str(v)) => Some(Key::Str(v.to_string())),
        _ => None,
    }
}

/// The (key, value) pairs of a `prim::DictConstruct` when it can be read statically: a
/// supported key type, every key a constant, no key twice.
fn static_entries(graph: &Graph, construct: NodeId) -> Option<Vec<(Key, ValueId)>> {
    let output = single_output(graph, construct)?;
    let Type::Dict(key_type, _) = graph.value_type(output) else {
        return None;
    };
    if !matches!(**key_type, Type::Int | Type::Float | Type::Str) {
        return None;
    }
    let mut entries: Vec<(Key, ValueId)> = Vec::new();
    for pair in graph.node_inputs(construct).chunks(2) {
        let [key, value] = pair else {
            return None;
        };
        let key = key_of(&constant_value(graph, *key)?, key_type)?;
        if entries.iter().any(|(seen, _)| *seen == key) {
            return None;
        }
        entries.push((key, *value));
    }
    Some(entries)
}

fn run_block(graph: &mut Graph, block: BlockId, mutated: &HashSet<ValueId>) -> bool {
    let mut changed = false;
    for node in graph.block_nodes(block) {
        for nested in graph.node_blocks(node).to_vec() {
            changed |= run_block(graph, nested, mutated);
        }
        changed |= optimize_node(graph, node, mutated);
    }
    changed
}

fn optimize_node(graph: &mut Graph, node: NodeId, mutated: &HashSet<ValueId>) -> bool {
    let inputs = graph.node_inputs(node).to_vec();
    let Some(&dict) = inputs.first() else {
        return false;
    };
    if !is_dict(graph, dict) || mutated.contains(&dict) {
        return false;
    }
    let Some(construct) = graph.producer(dict) else {
        return false;
    };
    if !graph.kind(construct).is_prim(Prim::DictConstruct) {
        return false;
    }
    let Some(output) = single_output(graph, node) else {
        return false;
    };
    let kind = graph.kind(node).as_str().to_string();
    let Some(entries) = static_entries(graph, construct) else {
        return false;
    };
    match kind.as_str() {
        "aten::len" => {
            let length = insert_constant_before(
                graph,
                node,
                Some(AttributeValue::Int(entries.len() as i64)),
                Type::Int,
            );
            graph.replace_all_uses_with(output, length);
            true
        }
        "aten::__getitem__" => {
            let Some(&key) = inputs.get(1) else {
                return false;
            };
            let Type::Dict(key_type, _) = graph.value_type(dict).clone() else {
                return false;
            };
            let Some(key) = constant_value(graph, key).and_then(|k| key_of(&k, &key_type)) else {
                return false;
            };
            let Some(&(_, value)) = entries.iter().find(|(seen, _)| *seen == key) else {
                return false;
            };
            graph.replace_all_uses_with(output, value);
            true
        }
        _ => false,
    }
}
