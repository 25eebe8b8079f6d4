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
//!
//! [`eliminate_dead_code_with_alias_db`] is the pass PyTorch runs as `_jit_pass_dce`: it
//! follows PyTorch's mark-and-sweep order exactly, and asks the [`AliasDb`] which writes
//! matter. A node that writes memory a live value may alias is live when the write comes
//! before a live use (marking walks each block backwards, so a write after the last use of
//! what it writes is dead), and a node that writes to a wildcard set (a graph input, or
//! memory that escaped into a container or a call) is a side effect. The variant without
//! alias analysis ([`eliminate_dead_code`]) is what the frontend's cleanup runs.

use std::collections::{HashMap, HashSet};

use ferrojit_ir::{BlockId, Graph, GraphEditError, NodeId, Prim, ValueDefinition, ValueId};

use crate::alias_analysis::{attach_registry_schemas, AliasDb};

/// Whether a node must be kept even when nothing uses its outputs.
pub(crate) fn has_side_effects(graph: &Graph, node: NodeId) -> bool {
    let kind = graph.kind(node);
    if let Some(prim) = kind.prim() {
        return prim.has_side_effects();
    }
    if matches!(
        kind.as_str(),
        "aten::warn"
            // Reseeds the default generator (PyTorch's `Node::hasSideEffects` lists it too).
            | "aten::manual_seed"
            // Grad mode is global state; a fork's `wait` raises the errors of the code the
            // fork ran even when its value is never read.
            | "aten::set_grad_enabled"
            | "aten::wait"
    ) {
        return true;
    }
    let operator = registry_operator(graph, node);
    // An operator registered as having side effects (PyTorch's conservative alias kind) stays:
    // ferrojit-autograd's `aten::backward` returns nothing and writes the leaves' `.grad`.
    if operator.is_some_and(|operator| operator.flags.has_side_effects) {
        return true;
    }
    match graph.node(node).schema.as_ref() {
        Some(schema) => schema.is_mutable(),
        // Graphs read from text carry no schemas: the registry's overload for the input
        // types says (`aten::append` writes its list), else ATen's naming convention, where
        // a trailing underscore (`aten::relu_`, `aten::add_`) marks an in-place op.
        None => operator
            .map(|operator| operator.schema.is_mutable())
            .unwrap_or_else(|| is_in_place_name(kind.as_str())),
    }
}

/// The registry's operator for `node`: by its schema's full name, or, for a node without a
/// schema (a graph read from text), the first overload accepting its input types.
fn registry_operator(graph: &Graph, node: NodeId) -> Option<&'static ferrojit_runtime::Operator> {
    let registry = ferrojit_runtime::OperatorRegistry::global();
    if let Some(schema) = graph.node(node).schema.as_ref() {
        return registry.lookup(&schema.full_name());
    }
    let types: Vec<ferrojit_ir::Type> = graph
        .node_inputs(node)
        .iter()
        .map(|&value| graph.value_type(value).clone())
        .collect();
    registry.find_by_types(graph.kind(node).as_str(), &types)
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

/// PyTorch's `EliminateDeadCode(graph)` (`_jit_pass_dce`): gives schemas to nodes that have
/// none (graphs read from text), builds the graph's [`AliasDb`] and runs the alias-aware
/// eliminator.
pub fn eliminate_dead_code_with_alias_db(graph: &mut Graph) -> Result<(), GraphEditError> {
    attach_registry_schemas(graph, ferrojit_runtime::OperatorRegistry::global());
    let alias_db = AliasDb::new(graph);
    let mut eliminator = AliasAwareEliminator {
        alias_db: &alias_db,
        marked: HashSet::new(),
        live_values: HashSet::new(),
        side_effects: HashMap::new(),
    };
    let top = graph.top_block();
    eliminator.mark_return_node(graph, graph.block_return_node(top));
    eliminator.mark_block(graph, top);
    eliminator.sweep(graph, top)
}

/// The mark phase's state, as PyTorch's `DeadCodeEliminator` keeps it: marked nodes and the
/// values some marked node reads.
struct AliasAwareEliminator<'a> {
    alias_db: &'a AliasDb,
    marked: HashSet<NodeId>,
    live_values: HashSet<ValueId>,
    side_effects: HashMap<NodeId, bool>,
}

impl AliasAwareEliminator<'_> {
    /// Marks the block's side-effect nodes, its return node, then (walking backwards) every
    /// node whose outputs are live or that writes memory a live value may alias. Returns
    /// whether anything new was marked.
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
                // A loop body runs again: a value read at its start may be written at its
                // end, so its body is marked until nothing new is.
                loop {
                    let marked = graph
                        .node_blocks(node)
                        .first()
                        .is_some_and(|&body| self.mark_block(graph, body));
                    any_marked |= marked;
                    if !marked {
                        break;
                    }
                }
            } else {
                for &nested in graph.node_blocks(node) {
                    any_marked |= self.mark_block(graph, nested);
                }
            }
            any_marked |= self.mark_if_live(graph, node);
        }
        any_marked
    }

    /// A nested block's return node makes live only the results its owner's live outputs
    /// need (and, for a loop, the carried values the body reads and the condition).
    fn mark_return_node(&mut self, graph: &Graph, return_node: NodeId) -> bool {
        if self.marked.contains(&return_node) {
            return false;
        }
        let owner = graph
            .node(return_node)
            .owning_block
            .and_then(|block| graph.block_owning_node(block));
        let Some(owner) = owner else {
            return self.mark_node(graph, return_node);
        };
        let returned = graph.node_inputs(return_node);
        let outer_outputs = graph.node_outputs(owner);
        if graph.kind(owner).is_prim(Prim::Loop) {
            let parameters = graph
                .node_blocks(owner)
                .first()
                .map(|&body| graph.block_parameters(body))
                .unwrap_or_default();
            for (index, &outer) in outer_outputs.iter().enumerate() {
                let read_in_body = parameters
                    .get(index + 1)
                    .is_some_and(|&parameter| !graph.value_uses(parameter).is_empty());
                if self.live_values.contains(&outer) || read_in_body {
                    if let Some(&inner) = returned.get(index + 1) {
                        self.live_values.insert(inner);
                    }
                }
            }
            if let Some(&condition) = returned.first() {
                self.live_values.insert(condition);
            }
        } else {
            for (&outer, &inner) in outer_outputs.iter().zip(returned) {
                if self.live_values.contains(&outer) {
                    self.live_values.insert(inner);
                }
            }
        }
        self.marked.insert(return_node);
        true
    }

    fn mark_if_live(&mut self, graph: &Graph, node: NodeId) -> bool {
        let outputs_live = graph
            .node_outputs(node)
            .iter()
            .any(|output| self.live_values.contains(output));
        if outputs_live || self.writes_to_live_memory(graph, node) {
            return self.mark_node(graph, node);
        }
        false
    }

    fn writes_to_live_memory(&self, graph: &Graph, node: NodeId) -> bool {
        if self.alias_db.writes_of(graph, node).is_empty() {
            return false;
        }
        let live: Vec<ValueId> = self.live_values.iter().copied().collect();
        self.alias_db.writes_to_alias(graph, node, &live)
    }

    /// Marks `node` and every node whose block holds it; its inputs become live.
    fn mark_node(&mut self, graph: &Graph, node: NodeId) -> bool {
        if !self.marked.insert(node) {
            return false;
        }
        let owner = graph
            .node(node)
            .owning_block
            .and_then(|block| graph.block_owning_node(block));
        if let Some(owner) = owner {
            self.mark_node(graph, owner);
        }
        self.live_values
            .extend(graph.node_inputs(node).iter().copied());
        true
    }

    /// PyTorch's rule: a side effect of the node itself or of a node in its blocks, or a
    /// write to a wildcard set (memory the analysis cannot follow).
    fn has_side_effects(&mut self, graph: &Graph, node: NodeId) -> bool {
        if let Some(&known) = self.side_effects.get(&node) {
            return known;
        }
        let mut result = crate::alias_analysis::has_side_effects(graph, node);
        if !result {
            'blocks: for &block in graph.node_blocks(node) {
                for nested in graph.block_nodes(block) {
                    if self.has_side_effects(graph, nested) {
                        result = true;
                        break 'blocks;
                    }
                }
            }
        }
        result = result || self.alias_db.writes_to_wildcard(node);
        self.side_effects.insert(node, result);
        result
    }

    /// Walks the block backwards: dead If outputs and loop-carried values go first (which
    /// may leave code in the blocks unused), then the blocks, then the node if it is
    /// unmarked and unused.
    fn sweep(&mut self, graph: &mut Graph, block: BlockId) -> Result<(), GraphEditError> {
        for node in graph.block_nodes(block).into_iter().rev() {
            remove_dead_block_outputs(graph, node)?;
            remove_dead_loop_outputs(graph, node)?;
            for nested in graph.node_blocks(node).to_vec() {
                self.sweep(graph, nested)?;
            }
            let used = graph
                .node_outputs(node)
                .iter()
                .any(|&output| !graph.value_uses(output).is_empty());
            if !self.marked.contains(&node) && !used {
                crate::jit_log::log("dce", crate::jit_log::LogLevel::Update, || {
                    format!("Node {} will be removed", graph.kind(node).as_str())
                });
                graph.destroy_node(node);
            }
        }
        Ok(())
    }
}

/// Removes the outputs of a `prim::If` (or `prim::GradOf`) that nothing uses.
fn remove_dead_block_outputs(graph: &mut Graph, node: NodeId) -> Result<(), GraphEditError> {
    let kind = graph.kind(node);
    if !kind.is_prim(Prim::If) && kind.as_str() != "prim::GradOf" {
        return Ok(());
    }
    for index in (0..graph.node_outputs(node).len()).rev() {
        if graph.value_uses(graph.node_output(node, index)).is_empty() {
            graph.erase_node_output(node, index)?;
            for block in graph.node_blocks(node).to_vec() {
                graph.erase_block_output(block, index)?;
            }
        }
    }
    Ok(())
}

/// Removes the carried values of a `prim::Loop` that neither the code after the loop nor
/// the body reads.
fn remove_dead_loop_outputs(graph: &mut Graph, node: NodeId) -> Result<(), GraphEditError> {
    if !graph.kind(node).is_prim(Prim::Loop) {
        return Ok(());
    }
    let Some(&body) = graph.node_blocks(node).first() else {
        return Ok(());
    };
    for index in (0..graph.node_outputs(node).len()).rev() {
        let output_unused = graph.value_uses(graph.node_output(node, index)).is_empty();
        let parameter_unused = graph
            .block_parameters(body)
            .get(index + 1)
            .is_some_and(|&parameter| graph.value_uses(parameter).is_empty());
        if output_unused && parameter_unused {
            graph.erase_node_output(node, index)?;
            graph.erase_node_input(node, index + 2)?;
            graph.erase_block_parameter(body, index + 1)?;
            graph.erase_block_output(body, index + 1)?;
        }
    }
    Ok(())
}
