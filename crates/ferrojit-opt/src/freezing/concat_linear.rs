//! `concat_frozen_linear`, PyTorch's `FrozenConcatLinear` (frozen_concat_linear.cpp):
//! `aten::linear` nodes of one block that read the same input, with constant weights and
//! biases of the same dtypes and of shapes equal but in dimension 0, become one linear whose
//! weight and bias are the concatenations (in program order), placed before the first of
//! them; each original result becomes `aten::slice(out, -1, start, end, 1)` of its rows.
//! A later linear joins the group only when alias analysis says nothing between the first
//! member and it writes the input they share (so it could move up to the first).

use std::collections::{HashMap, HashSet};

use ferrojit_ir::{AttributeValue, BlockId, Graph, InsertPoint, NodeId, Type, ValueId};
use ferrojit_tensor::Tensor;

use super::operator_calls::{constant_tensor, insert_tensor_constant_before};
use crate::alias_analysis::{attach_registry_schemas, AliasDb};

/// Merges every group of compatible linears; `Ok(true)` when one group was merged.
pub fn concat_frozen_linear(graph: &mut Graph) -> Result<bool, String> {
    let mut blocks = vec![graph.top_block()];
    for node in graph.all_nodes() {
        blocks.extend(graph.node_blocks(node).iter().copied());
    }
    let mut changed = false;
    for block in blocks {
        changed |= merge_in_block(graph, block)?;
    }
    let top = graph.top_block();
    graph.set_insert_point(InsertPoint::EndOf(top));
    if changed {
        crate::dead_code_elimination::eliminate_dead_code(graph);
    }
    Ok(changed)
}

/// A linear whose weight and bias are tensor constants.
fn constant_linear(graph: &Graph, node: NodeId) -> Option<(ValueId, Tensor, Tensor)> {
    if !graph.kind(node).is("aten::linear") || graph.node_outputs(node).len() != 1 {
        return None;
    }
    let [input, weight, bias] = graph.node_inputs(node)[..] else {
        return None;
    };
    let weight = constant_tensor(graph, weight)?;
    let bias = constant_tensor(graph, bias)?;
    if weight.dim() == 0 || bias.dim() == 0 {
        return None;
    }
    Some((input, weight.as_ref().clone(), bias.as_ref().clone()))
}

/// PyTorch's `isNonZeroDimEqual`: equal rank and equal sizes after dimension 0.
fn equal_but_in_dim_zero(a: &Tensor, b: &Tensor) -> bool {
    a.dim() == b.dim() && a.sizes().iter().skip(1).eq(b.sizes().iter().skip(1))
}

fn merge_in_block(graph: &mut Graph, block: BlockId) -> Result<bool, String> {
    let mut groups: Vec<(ValueId, Vec<NodeId>)> = Vec::new();
    let mut group_of_input: HashMap<ValueId, usize> = HashMap::new();
    for node in graph.block_nodes(block) {
        if let Some((input, _, _)) = constant_linear(graph, node) {
            let index = *group_of_input.entry(input).or_insert_with(|| {
                groups.push((input, Vec::new()));
                groups.len() - 1
            });
            groups[index].1.push(node);
        }
    }
    let mut changed = false;
    for (input, group) in groups {
        if group.len() < 2 {
            continue;
        }
        // Alias analysis runs on a copy with the registry's schemas attached (a parsed graph
        // has none); attaching them to the graph itself would change what it verifies as.
        let mut analysed = graph.clone();
        attach_registry_schemas(&mut analysed, ferrojit_runtime::OperatorRegistry::global());
        let alias_db = AliasDb::new(&analysed);
        let block_order = graph.block_nodes(block);
        let mut checked: HashSet<NodeId> = HashSet::new();
        let mut merges = Vec::new();
        for (index, &base) in group.iter().enumerate() {
            if checked.contains(&base) {
                continue;
            }
            let Some((_, base_weight, base_bias)) = constant_linear(graph, base) else {
                continue;
            };
            let mut compatible = vec![base];
            for &candidate in &group[index + 1..] {
                if checked.contains(&candidate) {
                    continue;
                }
                let Some((_, weight, bias)) = constant_linear(graph, candidate) else {
                    continue;
                };
                if base_weight.dtype() != weight.dtype() || base_bias.dtype() != bias.dtype() {
                    continue;
                }
                if !equal_but_in_dim_zero(&base_weight, &weight)
                    || !equal_but_in_dim_zero(&base_bias, &bias)
                {
                    continue;
                }
                if written_between(&analysed, &alias_db, &block_order, base, candidate, input) {
                    continue;
                }
                compatible.push(candidate);
                checked.insert(candidate);
            }
            if compatible.len() > 1 {
                merges.push(compatible);
            }
        }
        for compatible in merges {
            merge_linears(graph, &compatible)?;
            changed = true;
        }
    }
    Ok(changed)
}

/// Whether a node after `first` and before `last` (in `order`) may write to memory `input`
/// refers to: then `last` cannot move up to `first` (PyTorch asks AliasDb's
/// `couldMoveBeforeTopologically`; a linear reads nothing but its input and constants).
fn written_between(
    graph: &Graph,
    alias_db: &AliasDb,
    order: &[NodeId],
    first: NodeId,
    last: NodeId,
    input: ValueId,
) -> bool {
    let (Some(start), Some(end)) = (
        order.iter().position(|&node| node == first),
        order.iter().position(|&node| node == last),
    ) else {
        return true;
    };
    order[start + 1..end]
        .iter()
        .any(|&node| alias_db.writes_to_alias(graph, node, &[input]))
}

fn merge_linears(graph: &mut Graph, layers: &[NodeId]) -> Result<(), String> {
    // The merged linear goes before whichever member comes first now; each slice goes just
    // before the member it replaces, so every use of it still follows its definition.
    let block_order = graph
        .node(layers[0])
        .owning_block
        .map(|block| graph.block_nodes(block))
        .unwrap_or_default();
    let first = block_order
        .iter()
        .copied()
        .find(|node| layers.contains(node))
        .unwrap_or(layers[0]);
    let mut weights = Vec::new();
    let mut biases = Vec::new();
    let mut input = None;
    for &layer in layers {
        let (layer_input, weight, bias) = constant_linear(graph, layer).ok_or_else(|| {
            "concat_frozen_linear: a merged linear lost its constants".to_string()
        })?;
        input = Some(layer_input);
        weights.push(weight);
        biases.push(bias);
    }
    let input = input.ok_or_else(|| "concat_frozen_linear: an empty group".to_string())?;
    let cat_weight = ferrojit_tensor::cat(&weights, 0).map_err(|error| error.to_string())?;
    let cat_bias = ferrojit_tensor::cat(&biases, 0).map_err(|error| error.to_string())?;
    let weight_value = insert_tensor_constant_before(graph, first, cat_weight, None);
    let bias_value = insert_tensor_constant_before(graph, first, cat_bias, None);
    graph.set_insert_point(InsertPoint::Before(first));
    let linear = graph.insert(
        "aten::linear",
        &[input, weight_value, bias_value],
        &[Type::Tensor],
    );
    let merged = graph.node_output(linear, 0);
    let minus_one = graph.insert_constant(Some(AttributeValue::Int(-1)), Type::Int);
    let one = graph.insert_constant(Some(AttributeValue::Int(1)), Type::Int);
    // Every bound is made here, while `first` still exists to insert before.
    let mut bounds = vec![graph.insert_constant(Some(AttributeValue::Int(0)), Type::Int)];
    let mut end = 0_i64;
    for weight in &weights {
        end += weight.sizes()[0] as i64;
        bounds.push(graph.insert_constant(Some(AttributeValue::Int(end)), Type::Int));
    }
    for ((&layer, &start_value), &end_value) in layers.iter().zip(&bounds).zip(&bounds[1..]) {
        graph.set_insert_point(InsertPoint::Before(layer));
        let slice = graph.insert(
            "aten::slice",
            &[merged, minus_one, start_value, end_value, one],
            &[Type::Tensor],
        );
        let output = graph.node_output(layer, 0);
        let sliced = graph.node_output(slice, 0);
        if let Some(name) = graph.debug_name(output).map(str::to_string) {
            graph.set_debug_name(sliced, &name);
        }
        graph.replace_all_uses_with(output, sliced);
        graph.destroy_node(layer);
    }
    let top = graph.top_block();
    graph.set_insert_point(InsertPoint::EndOf(top));
    Ok(())
}
