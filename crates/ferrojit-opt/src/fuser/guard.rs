//! Replacing a found group by a guarded `prim::FusionGroup`, as PyTorch guards its fusion
//! groups (`insertTypeGuard` in tensorexpr_fuser.cpp, `guardFusionGroup` in the legacy
//! fuser):
//!
//! ```text
//! %a.1 : Float(2, 3), %b.1 : Float(2, 3), %ok : bool = prim::TypeCheck[types=[...]](%a, %b)
//! %r : Float(2, 3) = prim::If(%ok)
//!   block0():
//!     %r.1 : Float(2, 3) = prim::FusionGroup_0(%a.1, %b.1)
//!     -> (%r.1)
//!   block1():
//!     ... the group's nodes, copied, on %a and %b ...
//!     -> (%r.2)
//! ```
//!
//! The type check compares each input with the type the group was built for; the true block
//! runs the group on the checked inputs, the false block runs the original nodes unfused on
//! the unchecked ones. The group's subgraph takes only tensors: the constants its nodes read
//! are copied into it.

use std::collections::HashMap;

use ferrojit_ir::{
    AttributeValue, Graph, InsertPoint, NodeId, Prim, TensorRefinement, Type, ValueId,
};

use super::fusible_ops::complete_tensor_type;
use super::grouping::{group_inputs, group_outputs};

/// The kind of the node a group becomes.
pub const FUSION_GROUP: &str = "prim::FusionGroup";
/// The kind of the guard before it.
pub const TYPE_CHECK: &str = "prim::TypeCheck";

/// The type the guard checks for a group input: its dtype and sizes (and strides, when its
/// type states them all), on the CPU and not requiring grad. A fused group computes no
/// gradient, so a tensor that needs one must take the unfused path, as in PyTorch.
fn guard_type(refinement: &TensorRefinement) -> Type {
    let strides_known = refinement
        .strides
        .as_ref()
        .is_some_and(|strides| strides.iter().all(Option::is_some));
    Type::RefinedTensor(Box::new(TensorRefinement {
        scalar_type: refinement.scalar_type.clone(),
        sizes: refinement.sizes.clone(),
        strides: if strides_known {
            refinement.strides.clone()
        } else {
            None
        },
        requires_grad: Some(false),
        device: Some("cpu".to_string()),
        undefined: None,
    }))
}

/// What is needed to copy a node without blocks (fusible nodes and constants have none).
struct NodeTemplate {
    kind: String,
    inputs: Vec<ValueId>,
    outputs: Vec<(ValueId, Type, Option<String>)>,
    attributes: Vec<(String, AttributeValue)>,
    schema: Option<std::sync::Arc<ferrojit_ir::FunctionSchema>>,
}

fn node_template(
    source: &Graph,
    node: NodeId,
    value_map: &HashMap<ValueId, ValueId>,
) -> Result<NodeTemplate, String> {
    let inputs = source
        .node_inputs(node)
        .iter()
        .map(|input| {
            value_map
                .get(input)
                .copied()
                .ok_or_else(|| format!("fuser: %{} has no copy", source.value_display_name(*input)))
        })
        .collect::<Result<_, _>>()?;
    Ok(NodeTemplate {
        kind: source.kind(node).as_str().to_string(),
        inputs,
        outputs: source
            .node_outputs(node)
            .iter()
            .map(|&output| {
                (
                    output,
                    source.value_type(output).clone(),
                    source.debug_name(output).map(str::to_string),
                )
            })
            .collect(),
        attributes: source.node(node).attributes.clone(),
        schema: source.node(node).schema.clone(),
    })
}

/// Inserts a copy of `template` at `target`'s insertion point and maps the original's
/// outputs to the copy's.
fn insert_copy(
    target: &mut Graph,
    template: NodeTemplate,
    value_map: &mut HashMap<ValueId, ValueId>,
) -> NodeId {
    let types: Vec<Type> = template
        .outputs
        .iter()
        .map(|(_, ty, _)| ty.clone())
        .collect();
    let copy = target.create_node(&template.kind, &template.inputs, &types);
    for (name, value) in template.attributes {
        target.set_attribute(copy, &name, value);
    }
    target.set_node_schema(copy, template.schema);
    target.insert_node(copy);
    let copied_outputs = target.node_outputs(copy).to_vec();
    for ((original, _, name), copied) in template.outputs.into_iter().zip(copied_outputs) {
        if let Some(name) = name {
            target.set_debug_name(copied, &name);
        }
        value_map.insert(original, copied);
    }
    copy
}

/// Copies `node` of `source` into `target` (another graph).
fn copy_node(
    source: &Graph,
    node: NodeId,
    target: &mut Graph,
    value_map: &mut HashMap<ValueId, ValueId>,
) -> Result<NodeId, String> {
    let template = node_template(source, node, value_map)?;
    Ok(insert_copy(target, template, value_map))
}

/// The group's subgraph: tensor inputs become its inputs, constants are copied in, the
/// nodes follow in order, and `outputs` are returned.
fn build_subgraph(
    graph: &Graph,
    group: &[NodeId],
    tensor_inputs: &[ValueId],
    outputs: &[ValueId],
) -> Result<Graph, String> {
    let mut subgraph = Graph::new();
    let mut value_map = HashMap::new();
    for &input in tensor_inputs {
        let name = graph.debug_name(input);
        let copied = subgraph.add_input(graph.value_type(input).clone(), name);
        value_map.insert(input, copied);
    }
    for input in group_inputs(graph, group) {
        if value_map.contains_key(&input) {
            continue;
        }
        let producer = graph
            .producer(input)
            .filter(|&producer| graph.kind(producer).is_prim(Prim::Constant))
            .ok_or_else(|| {
                format!(
                    "fuser: the group reads %{}, which is neither a tensor nor a constant",
                    graph.value_display_name(input)
                )
            })?;
        copy_node(graph, producer, &mut subgraph, &mut value_map)?;
    }
    for &node in group {
        copy_node(graph, node, &mut subgraph, &mut value_map)?;
    }
    for output in outputs {
        subgraph.register_output(value_map[output]);
    }
    Ok(subgraph)
}

/// Replaces `group` (contiguous nodes of one block, in order) by a type check, an `If`, the
/// `prim::FusionGroup` in its true block and the unfused copy in its false block.
pub fn guard_group(graph: &mut Graph, group: &[NodeId]) -> Result<(), String> {
    let Some(&first) = group.first() else {
        return Ok(());
    };
    let inputs = group_inputs(graph, group);
    let tensor_inputs: Vec<ValueId> = inputs
        .iter()
        .copied()
        .filter(|&input| graph.value_type(input).is_tensor())
        .collect();
    let outputs = group_outputs(graph, group);
    let mut guard_types = Vec::with_capacity(tensor_inputs.len());
    for &input in &tensor_inputs {
        let refinement = complete_tensor_type(graph.value_type(input)).ok_or_else(|| {
            format!(
                "fuser: group input %{} has no complete tensor type",
                graph.value_display_name(input)
            )
        })?;
        guard_types.push(guard_type(refinement));
    }
    let subgraph = build_subgraph(graph, group, &tensor_inputs, &outputs)?;
    let output_types: Vec<Type> = outputs
        .iter()
        .map(|&output| graph.value_type(output).clone())
        .collect();

    let saved_point = graph.insert_point();
    graph.set_insert_point(InsertPoint::Before(first));
    // The check's outputs are the inputs it checked, then whether all of them passed.
    let mut check_types: Vec<Type> = tensor_inputs
        .iter()
        .map(|&input| graph.value_type(input).clone())
        .collect();
    check_types.push(Type::Bool);
    let type_check = graph.insert(TYPE_CHECK, &tensor_inputs, &check_types);
    graph.set_attribute(type_check, "types", AttributeValue::Types(guard_types));
    let checked: Vec<ValueId> = graph.node_outputs(type_check).to_vec();
    let passed = checked[tensor_inputs.len()];
    let versioning_if = graph.insert(Prim::If.name(), &[passed], &output_types);
    let true_block = graph.add_node_block(versioning_if);
    let false_block = graph.add_node_block(versioning_if);

    graph.set_insert_point(InsertPoint::EndOf(true_block));
    let fusion_group = graph.insert(FUSION_GROUP, &checked[..tensor_inputs.len()], &output_types);
    graph.set_attribute(
        fusion_group,
        "Subgraph",
        AttributeValue::Graph(Box::new(subgraph)),
    );
    for &output in graph.node_outputs(fusion_group).to_vec().iter() {
        graph.add_block_output(true_block, output);
    }

    graph.set_insert_point(InsertPoint::EndOf(false_block));
    let mut value_map: HashMap<ValueId, ValueId> =
        inputs.iter().map(|&input| (input, input)).collect();
    for &node in group {
        let template = node_template(graph, node, &value_map)?;
        insert_copy(graph, template, &mut value_map);
    }
    for output in &outputs {
        graph.add_block_output(false_block, value_map[output]);
    }
    graph.set_insert_point(saved_point);

    let if_outputs = graph.node_outputs(versioning_if).to_vec();
    for (&output, &replacement) in outputs.iter().zip(&if_outputs) {
        // Only uses outside the group: the group's own uses go with its nodes.
        let outside: Vec<_> = graph
            .value_uses(output)
            .iter()
            .filter(|use_site| !group.contains(&use_site.node))
            .copied()
            .collect();
        for use_site in outside {
            graph.replace_node_input(use_site.node, use_site.input_index, replacement);
        }
        if let Some(name) = graph.debug_name(output).map(str::to_string) {
            graph.set_debug_name(replacement, &name);
        }
    }
    for &node in group.iter().rev() {
        if !graph.destroy_node(node) {
            return Err(format!(
                "fuser: a grouped {} still has uses after the group replaced it",
                graph.kind(node)
            ));
        }
    }
    Ok(())
}
