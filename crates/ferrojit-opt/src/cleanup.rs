//! Post-emission cleanup, as PyTorch runs after `ConvertToSSA`: dead code elimination
//! (including unused `prim::If` outputs and loop-carried values) and constant pooling
//! (constants deduplicated and moved to the start of the graph).
//!
//! and output canonicalisation (PyTorch's `CanonicalizeOutputs`: the outputs of `prim::If`
//! and the carried values of `prim::Loop` ordered by their first use).
//!
//! The graph is edited in place with the IR's edit operations (erase, permute, move,
//! replace), which keep use lists consistent; node and value identities survive, as they do
//! in PyTorch's passes. The steps run in an order that keeps every erase legal: a value is
//! erased only once nothing uses it.

use std::collections::{HashMap, HashSet};

use ferrojit_ir::{
    BlockId, Graph, GraphEditError, InsertPoint, NodeId, Prim, ValueDefinition, ValueId,
};

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
struct Liveness {
    values: HashSet<ValueId>,
    nodes: HashSet<NodeId>,
    carried: HashSet<(NodeId, usize)>,
}

fn compute_liveness(graph: &Graph) -> Liveness {
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
                    work.extend(inputs.iter().take(2).map(|&v| Item::Value(v)));
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
        panic!("cleanup made an illegal graph edit: {error}");
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

/// Step 4: the kept outputs ordered by first use; unused ones keep their order at the end.
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

/// Step 5: constants deduplicated and moved to the start of the graph, each before the ones
/// met earlier (as PyTorch's constant pooling leaves them). Tensor and generator constants
/// are objects with an identity: two equal ones stay two (a generator's state advances
/// separately), and generators keep their order (the printer names them, so a reversed order
/// would change the code from one save to the next).
fn pool_constants(graph: &mut Graph) {
    let mut pooled: HashMap<String, ValueId> = HashMap::new();
    let mut last_generator: Option<NodeId> = None;
    let top = graph.top_block();
    for node in graph.all_nodes() {
        if !graph.kind(node).is_prim(Prim::Constant) {
            continue;
        }
        let output = graph.node_output(node, 0);
        let ty = graph.value_type(output).clone();
        let attribute = graph.attribute(node, "value");
        let is_generator = ty == ferrojit_ir::Type::Generator;
        let has_identity =
            matches!(attribute, Some(ferrojit_ir::AttributeValue::Tensor(_))) || is_generator;
        if !has_identity {
            let key = format!(
                "{}|{}",
                ty,
                attribute.map(|a| a.to_ir_string()).unwrap_or_default()
            );
            if let Some(&existing) = pooled.get(&key) {
                graph.replace_all_uses_with(output, existing);
                let destroyed = graph.destroy_node(node);
                debug_assert!(destroyed, "a replaced constant has no uses left");
                continue;
            }
            pooled.insert(key, output);
        }
        match (
            last_generator.filter(|_| is_generator),
            graph.block_nodes(top).first(),
        ) {
            (Some(previous), _) if previous != node => graph.move_after(node, previous),
            (Some(_), _) => {}
            (None, Some(&first)) if first != node => graph.move_before(node, first),
            _ => {}
        }
        if is_generator {
            last_generator = Some(node);
        }
    }
}

/// Removes dead nodes and outputs, orders the outputs of `prim::If` and `prim::Loop` by first
/// use, and pools constants at the start of the graph.
pub fn eliminate_dead_code_and_pool_constants(graph: &mut Graph) {
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
    // Step 2: dead nodes, users before the values they use (reverse program order). A node
    // inside a dead node's block goes with it (its block's return node may still use it).
    for &node in order.iter().rev() {
        let in_live_block = graph
            .node(node)
            .owning_block
            .and_then(|block| graph.block_owning_node(block))
            .is_none_or(|owner| live.nodes.contains(&owner));
        if !live.nodes.contains(&node) && in_live_block {
            let destroyed = graph.destroy_node(node);
            debug_assert!(destroyed, "a dead node's outputs have only dead users");
        }
    }
    for entry in &entries {
        erase_dead_definitions(graph, entry);
    }
    let mut position = HashMap::new();
    number_nodes(graph, graph.top_block(), &mut position);
    for entry in &entries {
        canonicalize_outputs(graph, &position, entry.node, entry.is_loop);
    }
    pool_constants(graph);
    let top = graph.top_block();
    graph.set_insert_point(InsertPoint::EndOf(top));
}
