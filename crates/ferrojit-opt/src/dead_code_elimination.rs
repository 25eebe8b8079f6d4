//! Dead code elimination, PyTorch's `EliminateDeadCode` (`_jit_pass_dce`): nodes whose
//! outputs nothing live uses are removed, with the unused outputs of `prim::If` and the unused
//! carried values of `prim::Loop`; nodes with side effects stay.
//!
//! Liveness runs backwards from the graph's outputs and every node with side effects. A
//! loop-carried value whose body parameter has any use at all is live (PyTorch's rule), which
//! keeps the loop and every node around it. Without alias analysis an operator that writes an
//! argument (`Tensor(a!)`) counts as a side effect, as in PyTorch's DCE when it has no
//! `AliasDb`; PyTorch with one also removes writes to values nothing live can see.
//!
//! The graph is edited in place with the IR's edit operations, in an order that keeps every
//! erase legal: a value is erased only once nothing uses it.

use std::collections::HashSet;

use ferrojit_ir::{Graph, GraphEditError, NodeId, Prim, ValueDefinition, ValueId};

/// Whether a node must be kept even when nothing uses its outputs.
fn has_side_effects(graph: &Graph, node: NodeId) -> bool {
    let kind = graph.kind(node);
    if let Some(prim) = kind.prim() {
        return prim.has_side_effects();
    }
    matches!(
        kind.as_str(),
        "aten::warn"
            // Reseeds the default generator (PyTorch's `Node::hasSideEffects` lists it too).
            | "aten::manual_seed"
            // Grad mode is global state; a fork's `wait` raises the errors of the code the
            // fork ran even when its value is never read.
            | "aten::set_grad_enabled"
            | "aten::wait"
    ) || match graph.node(node).schema.as_ref() {
        Some(schema) => schema.is_mutable(),
        // Graphs read from text carry no schemas: fall back on ATen's naming convention,
        // where a trailing underscore (`aten::relu_`, `aten::add_`) marks an in-place op.
        None => is_in_place_name(kind.as_str()),
    }
}

fn is_in_place_name(kind: &str) -> bool {
    kind.strip_prefix("aten::")
        .is_some_and(|name| name.ends_with('_') && !name.ends_with("__"))
}

enum Item {
    Value(ValueId),
    Node(NodeId),
    Carried(NodeId, usize),
}

#[derive(Default)]
pub(crate) struct Liveness {
    values: HashSet<ValueId>,
    nodes: HashSet<NodeId>,
    carried: HashSet<(NodeId, usize)>,
}

pub(crate) fn compute_liveness(graph: &Graph) -> Liveness {
    let mut live = Liveness::default();
    let mut work: Vec<Item> = graph.outputs().iter().map(|&v| Item::Value(v)).collect();
    for node in graph.all_nodes() {
        if has_side_effects(graph, node) {
            work.push(Item::Node(node));
        }
        // PyTorch's DCE keeps a loop-carried value whose body parameter has any use at all,
        // even one that is itself dead: and with it the loop, and every node around the loop.
        if graph.kind(node).is_prim(Prim::Loop) {
            if let Some(&body) = graph.node_blocks(node).first() {
                let parameters = graph.block_parameters(body);
                for (index, &parameter) in parameters.iter().enumerate().skip(1) {
                    if !graph.value_uses(parameter).is_empty() {
                        work.push(Item::Carried(node, index - 1));
                    }
                }
            }
        }
    }
    while let Some(item) = work.pop() {
        match item {
            Item::Value(value) => {
                if !live.values.insert(value) {
                    continue;
                }
                match graph.value_definition(value) {
                    ValueDefinition::NodeOutput { node, index } => {
                        work.push(Item::Node(node));
                        let kind = graph.kind(node);
                        if kind.is_prim(Prim::If) {
                            for &block in graph.node_blocks(node) {
                                if let Some(&output) = graph.block_outputs(block).get(index) {
                                    work.push(Item::Value(output));
                                }
                            }
                        } else if kind.is_prim(Prim::Loop) {
                            work.push(Item::Carried(node, index));
                        }
                    }
                    ValueDefinition::BlockParameter { block, index } => {
                        if let Some(owner) = graph.block_owning_node(block) {
                            if graph.kind(owner).is_prim(Prim::Loop) && index > 0 {
                                work.push(Item::Carried(owner, index - 1));
                            } else {
                                work.push(Item::Node(owner));
                            }
                        }
                    }
                }
            }
            Item::Node(node) => {
                if !live.nodes.insert(node) {
                    continue;
                }
                let kind = graph.kind(node).clone();
                let inputs = graph.node_inputs(node);
                if kind.is_prim(Prim::If) {
                    work.extend(inputs.iter().take(1).map(|&v| Item::Value(v)));
                } else if kind.is_prim(Prim::Loop) {
                    // Every input of a live loop is live, the initial values of carried values
                    // that are themselves dead included (PyTorch marks a node's inputs when it
                    // marks the node; the dead slot goes, its initial value's producer stays).
                    work.extend(inputs.iter().map(|&v| Item::Value(v)));
                    if let Some(&body) = graph.node_blocks(node).first() {
                        if let Some(&condition) = graph.block_outputs(body).first() {
                            work.push(Item::Value(condition));
                        }
                    }
                } else {
                    work.extend(inputs.iter().map(|&v| Item::Value(v)));
                }
                if let Some(block) = graph.node(node).owning_block {
                    if let Some(owner) = graph.block_owning_node(block) {
                        work.push(Item::Node(owner));
                    }
                }
            }
            Item::Carried(node, index) => {
                if !live.carried.insert((node, index)) {
                    continue;
                }
                work.push(Item::Node(node));
                if let Some(&input) = graph.node_inputs(node).get(index + 2) {
                    work.push(Item::Value(input));
                }
                if let Some(&body) = graph.node_blocks(node).first() {
                    if let Some(&output) = graph.block_outputs(body).get(index + 1) {
                        work.push(Item::Value(output));
                    }
                }
            }
        }
    }
    live
}

/// The outputs of each live `prim::If` and the carried values of each live `prim::Loop` that
/// are kept, by the old output index, ascending.
struct KeptOutputs {
    node: NodeId,
    is_loop: bool,
    kept: Vec<usize>,
}

fn kept_outputs(graph: &Graph, live: &Liveness, node: NodeId) -> Option<KeptOutputs> {
    let kind = graph.kind(node);
    let is_loop = kind.is_prim(Prim::Loop);
    if !is_loop && !kind.is_prim(Prim::If) {
        return None;
    }
    let outputs = graph.node_outputs(node);
    let kept = (0..outputs.len())
        .filter(|&index| {
            if is_loop {
                live.carried.contains(&(node, index))
            } else {
                live.values.contains(&outputs[index])
            }
        })
        .collect();
    Some(KeptOutputs {
        node,
        is_loop,
        kept,
    })
}

/// An edit the liveness analysis guarantees is legal; a refusal is a bug in this pass.
fn edited(result: Result<(), GraphEditError>) {
    if let Err(error) = result {
        panic!("dead code elimination made an illegal graph edit: {error}");
    }
}

/// Step 1: the return-node entries and the loop inputs of dead outputs go first, so that no
/// live node uses a dead value any more.
fn erase_dead_uses(graph: &mut Graph, entry: &KeptOutputs) {
    let count = graph.node_outputs(entry.node).len();
    let dead: Vec<usize> = (0..count)
        .rev()
        .filter(|i| !entry.kept.contains(i))
        .collect();
    for block in graph.node_blocks(entry.node).to_vec() {
        for &index in &dead {
            // A loop body's outputs are the condition, then the carried values.
            edited(graph.erase_block_output(block, index + usize::from(entry.is_loop)));
        }
    }
    if entry.is_loop {
        for &index in &dead {
            // A loop's inputs are the trip count and the initial condition, then the carried
            // values.
            edited(graph.erase_node_input(entry.node, index + 2));
        }
    }
}

/// Step 3: the dead outputs and loop-body parameters themselves, now unused.
fn erase_dead_definitions(graph: &mut Graph, entry: &KeptOutputs) {
    let count = graph.node_outputs(entry.node).len();
    let dead: Vec<usize> = (0..count)
        .rev()
        .filter(|i| !entry.kept.contains(i))
        .collect();
    for &index in &dead {
        edited(graph.erase_node_output(entry.node, index));
        if entry.is_loop {
            if let Some(&body) = graph.node_blocks(entry.node).first() {
                // The body's first parameter is the iteration count.
                edited(graph.erase_block_parameter(body, index + 1));
            }
        }
    }
}

/// Removes every dead node, dead `prim::If` output and dead `prim::Loop` carried value.
pub fn eliminate_dead_code(graph: &mut Graph) {
    let live = compute_liveness(graph);
    let order = graph.all_nodes();
    let entries: Vec<KeptOutputs> = order
        .iter()
        .filter(|node| live.nodes.contains(node))
        .filter_map(|&node| kept_outputs(graph, &live, node))
        .collect();
    for entry in &entries {
        erase_dead_uses(graph, entry);
    }
    // Dead nodes, users before the values they use (reverse program order). A node inside a
    // dead node's block goes with it (its block's return node may still use it).
    for &node in order.iter().rev() {
        let in_live_block = graph
            .node(node)
            .owning_block
            .and_then(|block| graph.block_owning_node(block))
            .is_none_or(|owner| live.nodes.contains(&owner));
        if !live.nodes.contains(&node) && in_live_block {
            crate::jit_log::log("dce", crate::jit_log::LogLevel::Update, || {
                format!("Node {} will be removed", graph.kind(node).as_str())
            });
            let destroyed = graph.destroy_node(node);
            debug_assert!(destroyed, "a dead node's outputs have only dead users");
        }
    }
    for entry in &entries {
        erase_dead_definitions(graph, entry);
    }
}
