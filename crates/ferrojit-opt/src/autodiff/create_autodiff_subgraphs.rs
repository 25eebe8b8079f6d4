//! The `create_autodiff_subgraphs` pass (PyTorch's `CreateAutodiffSubgraphs`): maximal groups
//! of differentiable nodes (see [`super::is_differentiable`]) become `prim::DifferentiableGraph`
//! nodes whose `Subgraph` attribute holds the group.
//!
//! Each block is scanned from its end, as PyTorch's slicer does: a differentiable node seeds a
//! group (the consumer), which then takes in the differentiable producers of its inputs, the
//! latest-defined input's producer first. A producer joins only when every other use of its
//! outputs comes after the group and AliasDb lets it move to just before the group (it is
//! never moved across a write to an alias of what it reads), so the group stays contiguous.
//! Constants are not members: each group copies the constants it reads. A group with fewer
//! than the threshold's nodes (constants not counted) is left as it was; PyTorch's profiling
//! executor uses a threshold of 2 ([`DEFAULT_MIN_SUBGRAPH_SIZE`]).
//!
//! The subgraph's inputs and outputs are in PyTorch's order: the seed's inputs, then, as each
//! producer joins, its inputs replace its outputs at the end of the input list; the seed's
//! outputs, then the outputs of each joined producer that something outside reads, in the
//! order they joined.

use std::collections::{HashMap, HashSet};

use ferrojit_ir::{AttributeValue, BlockId, Graph, InsertPoint, NodeId, Prim, Type, ValueId};

use super::{is_differentiable, DIFFERENTIABLE_GRAPH};
use crate::alias_analysis::{attach_registry_schemas, AliasDb};
// The group-growing moves are the fuser's: the same AliasDb-checked slicing.
use crate::fuser::grouping::{block_positions, move_next_to, uses_are_in_or_after};

/// PyTorch's minimum group size in the profiling executor (`getAutodiffSubgraphInlining`'s
/// threshold, and the pass's default).
pub const DEFAULT_MIN_SUBGRAPH_SIZE: usize = 2;

/// The pass as registered: [`create_autodiff_subgraphs`] with the default threshold.
pub fn create_autodiff_subgraphs_pass(graph: &mut Graph) -> Result<(), String> {
    create_autodiff_subgraphs(graph, DEFAULT_MIN_SUBGRAPH_SIZE).map(drop)
}

/// The graph executor's form of the pass (registered as `create_autodiff_subgraphs_with_lists`):
/// the default threshold, and the list pairs (`chunk` with its `prim::ListUnpack`,
/// `prim::ListConstruct` with its `cat`) grouped too, see
/// [`super::is_differentiable_with_lists`].
pub fn create_autodiff_subgraphs_with_lists_pass(graph: &mut Graph) -> Result<(), String> {
    create_autodiff_subgraphs_of(
        graph,
        DEFAULT_MIN_SUBGRAPH_SIZE,
        super::is_differentiable_with_lists,
    )
    .map(drop)
}

/// A group being grown: its nodes in program order (contiguous in their block), and its
/// boundary in PyTorch's order.
struct Group {
    nodes: Vec<NodeId>,
    inputs: Vec<ValueId>,
    outputs: Vec<ValueId>,
}

/// Groups differentiable nodes of every block into `prim::DifferentiableGraph` nodes of at
/// least `min_subgraph_size` nodes. Returns how many it made.
pub fn create_autodiff_subgraphs(
    graph: &mut Graph,
    min_subgraph_size: usize,
) -> Result<usize, String> {
    create_autodiff_subgraphs_of(graph, min_subgraph_size, is_differentiable)
}

/// Which nodes a group may hold.
type Differentiable = fn(&Graph, NodeId) -> bool;

/// [`create_autodiff_subgraphs`] with the groups' members chosen by `differentiable`.
fn create_autodiff_subgraphs_of(
    graph: &mut Graph,
    min_subgraph_size: usize,
    differentiable: Differentiable,
) -> Result<usize, String> {
    attach_registry_schemas(graph, ferrojit_runtime::OperatorRegistry::global());
    let alias_db = AliasDb::new(graph);
    let mut groups = Vec::new();
    let mut pending = vec![graph.top_block()];
    while let Some(block) = pending.pop() {
        for node in graph.block_nodes(block) {
            pending.extend(graph.node_blocks(node).iter().copied());
        }
        groups.extend(groups_in_block(
            graph,
            &alias_db,
            block,
            min_subgraph_size,
            differentiable,
        ));
    }
    // Every group is found before any is replaced: replacing creates nodes, which the alias
    // analysis does not know.
    for group in &groups {
        replace_group(graph, group)?;
    }
    Ok(groups.len())
}

/// Whether `value` is made by a `prim::Constant` (copied into groups, never a member).
fn is_constant(graph: &Graph, value: ValueId) -> bool {
    graph
        .producer(value)
        .is_some_and(|producer| graph.kind(producer).is_prim(Prim::Constant))
}

fn groups_in_block(
    graph: &mut Graph,
    alias_db: &AliasDb,
    block: BlockId,
    min_subgraph_size: usize,
    differentiable: Differentiable,
) -> Vec<Group> {
    let mut grouped: HashSet<NodeId> = HashSet::new();
    let mut groups = Vec::new();
    let mut cursor = graph.block_nodes(block).last().copied();
    while let Some(seed) = cursor {
        if grouped.contains(&seed) || !differentiable(graph, seed) {
            cursor = graph.previous_node(seed);
            continue;
        }
        let group = grow_group(graph, alias_db, block, seed, &grouped, differentiable);
        cursor = graph.previous_node(group.nodes[0]);
        if group.nodes.len() >= min_subgraph_size {
            grouped.extend(group.nodes.iter().copied());
            groups.push(group);
        }
    }
    groups.reverse();
    groups
}

/// Appends to `inputs` each non-constant input of `node` not already there.
fn add_inputs_of(graph: &Graph, node: NodeId, inputs: &mut Vec<ValueId>) {
    for &input in graph.node_inputs(node) {
        if !is_constant(graph, input) && !inputs.contains(&input) {
            inputs.push(input);
        }
    }
}

fn grow_group(
    graph: &mut Graph,
    alias_db: &AliasDb,
    block: BlockId,
    seed: NodeId,
    grouped: &HashSet<NodeId>,
    differentiable: Differentiable,
) -> Group {
    let mut group = Group {
        nodes: vec![seed],
        inputs: Vec::new(),
        outputs: graph.node_outputs(seed).to_vec(),
    };
    add_inputs_of(graph, seed, &mut group.inputs);
    loop {
        let positions = block_positions(graph, block);
        let members: HashSet<NodeId> = group.nodes.iter().copied().collect();
        let mut candidates: Vec<NodeId> = group
            .inputs
            .iter()
            .filter_map(|&value| graph.producer(value))
            .filter(|producer| {
                positions.contains_key(producer)
                    && !members.contains(producer)
                    && !grouped.contains(producer)
            })
            .collect();
        candidates.sort_by_key(|producer| std::cmp::Reverse(positions[producer]));
        candidates.dedup();
        let last_position = positions[group.nodes.last().unwrap_or(&seed)];
        let joined = candidates.into_iter().find(|&candidate| {
            differentiable(graph, candidate)
                && uses_are_in_or_after(
                    graph,
                    block,
                    &positions,
                    candidate,
                    &members,
                    last_position,
                )
                && move_next_to(graph, alias_db, candidate, group.nodes[0])
        });
        let Some(producer) = joined else {
            return group;
        };
        group.nodes.insert(0, producer);
        let made: Vec<ValueId> = graph.node_outputs(producer).to_vec();
        group.inputs.retain(|input| !made.contains(input));
        add_inputs_of(graph, producer, &mut group.inputs);
        let members: HashSet<NodeId> = group.nodes.iter().copied().collect();
        for output in made {
            let read_outside = graph
                .value_uses(output)
                .iter()
                .any(|use_site| !members.contains(&use_site.node));
            if read_outside {
                group.outputs.push(output);
            }
        }
    }
}

/// Copies `node` (no blocks) into `target` at its insertion point, mapping values.
fn copy_node(
    source: &Graph,
    node: NodeId,
    target: &mut Graph,
    value_map: &mut HashMap<ValueId, ValueId>,
) -> Result<(), String> {
    let inputs = source
        .node_inputs(node)
        .iter()
        .map(|input| {
            value_map.get(input).copied().ok_or_else(|| {
                format!(
                    "create_autodiff_subgraphs: %{} has no copy",
                    source.value_display_name(*input)
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let outputs = source.node_outputs(node);
    let types: Vec<Type> = outputs
        .iter()
        .map(|&output| source.value_type(output).clone())
        .collect();
    let copy = target.create_node(source.kind(node).as_str(), &inputs, &types);
    for (name, value) in &source.node(node).attributes {
        target.set_attribute(copy, name, value.clone());
    }
    target.set_node_schema(copy, source.node(node).schema.clone());
    target.insert_node(copy);
    for (&original, &copied) in outputs
        .iter()
        .zip(target.node_outputs(copy).to_vec().iter())
    {
        if let Some(name) = source.debug_name(original) {
            target.set_debug_name(copied, name);
        }
        value_map.insert(original, copied);
    }
    Ok(())
}

/// The subgraph of `group`: its inputs, each constant copied just before its first reader,
/// the nodes in order, its outputs.
fn build_subgraph(graph: &Graph, group: &Group) -> Result<Graph, String> {
    let mut subgraph = Graph::new();
    let mut value_map = HashMap::new();
    for &input in &group.inputs {
        let copied = subgraph.add_input(graph.value_type(input).clone(), graph.debug_name(input));
        value_map.insert(input, copied);
    }
    for &node in &group.nodes {
        for &input in graph.node_inputs(node) {
            if value_map.contains_key(&input) {
                continue;
            }
            let constant = graph
                .producer(input)
                .filter(|&producer| graph.kind(producer).is_prim(Prim::Constant))
                .ok_or_else(|| {
                    format!(
                        "create_autodiff_subgraphs: the group reads %{}, which is neither an \
                         input nor a constant",
                        graph.value_display_name(input)
                    )
                })?;
            copy_node(graph, constant, &mut subgraph, &mut value_map)?;
        }
        copy_node(graph, node, &mut subgraph, &mut value_map)?;
    }
    for output in &group.outputs {
        subgraph.register_output(value_map[output]);
    }
    Ok(subgraph)
}

/// Replaces `group` (contiguous, in order) by one `prim::DifferentiableGraph` node.
fn replace_group(graph: &mut Graph, group: &Group) -> Result<(), String> {
    let subgraph = build_subgraph(graph, group)?;
    let output_types: Vec<Type> = group
        .outputs
        .iter()
        .map(|&output| graph.value_type(output).clone())
        .collect();
    let saved_point = graph.insert_point();
    graph.set_insert_point(InsertPoint::Before(group.nodes[0]));
    let differentiable = graph.insert(DIFFERENTIABLE_GRAPH, &group.inputs, &output_types);
    graph.set_insert_point(saved_point);
    graph.set_attribute(
        differentiable,
        "Subgraph",
        AttributeValue::Graph(Box::new(subgraph)),
    );
    let replacements = graph.node_outputs(differentiable).to_vec();
    for (&output, &replacement) in group.outputs.iter().zip(&replacements) {
        let outside: Vec<_> = graph
            .value_uses(output)
            .iter()
            .filter(|use_site| !group.nodes.contains(&use_site.node))
            .copied()
            .collect();
        for use_site in outside {
            graph.replace_node_input(use_site.node, use_site.input_index, replacement);
        }
        if let Some(name) = graph.debug_name(output).map(str::to_string) {
            graph.set_debug_name(replacement, &name);
        }
    }
    for &node in group.nodes.iter().rev() {
        if !graph.destroy_node(node) {
            return Err(format!(
                "create_autodiff_subgraphs: a grouped {} still has uses after the group replaced it",
                graph.kind(node)
            ));
        }
    }
    Ok(())
}
