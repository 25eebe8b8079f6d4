//! `transpose_frozen_linear`, PyTorch's `FrozenLinearTranspose`
//! (frozen_linear_transpose.cpp, part of `optimize_for_inference`): an `aten::linear` whose
//! weight is a constant becomes `aten::matmul` with the weight transposed once, ahead of
//! time, into a contiguous constant, followed by `aten::add(…, bias, 1)` when it has a bias.

use ferrojit_ir::{AttributeValue, BlockId, Graph, InsertPoint, NodeId, Type};
use ferrojit_runtime::registry::OperatorRegistry;
use ferrojit_runtime::IValue;

use super::operator_calls::{
    call_tensor_operator, constant_tensor, has_non_constant_parameters,
    insert_tensor_constant_before, is_none, tensor_argument,
};

/// Replaces every linear with a constant weight; `Ok(true)` when one was replaced.
pub fn transpose_frozen_linear(graph: &mut Graph) -> Result<bool, String> {
    let top = graph.top_block();
    let changed = transpose_in_block(graph, top)?;
    let top = graph.top_block();
    graph.set_insert_point(InsertPoint::EndOf(top));
    Ok(changed)
}

fn transpose_in_block(graph: &mut Graph, block: BlockId) -> Result<bool, String> {
    let mut changed = false;
    for node in graph.block_nodes(block) {
        for nested in graph.node_blocks(node).to_vec() {
            changed |= transpose_in_block(graph, nested)?;
        }
        changed |= transpose_at(graph, node)?;
    }
    Ok(changed)
}

fn transpose_at(graph: &mut Graph, linear: NodeId) -> Result<bool, String> {
    if !graph.kind(linear).is("aten::linear")
        || graph.node_inputs(linear).len() != 3
        || graph.node_outputs(linear).len() != 1
    {
        return Ok(false);
    }
    let [input, weight_value, bias] = graph.node_inputs(linear)[..] else {
        return Ok(false);
    };
    // PyTorch's `nonConstantParameters`: the bias must be a constant (or None) too.
    if has_non_constant_parameters(graph, linear) {
        return Ok(false);
    }
    let Some(weight) = constant_tensor(graph, weight_value) else {
        return Ok(false);
    };
    if weight.dim() != 2 {
        return Ok(false);
    }
    let transposed = call_tensor_operator(
        "aten::transpose.int",
        vec![tensor_argument(&weight), IValue::Int(1), IValue::Int(0)],
    )?;
    let transposed = call_tensor_operator("aten::contiguous", vec![tensor_argument(&transposed)])?;
    // `contiguous` may hand back the same view when it already is; a constant of its own
    // keeps the printed archive from sharing storage with the original weight's view.
    let transposed = transposed.contiguous();
    let weight_t = insert_tensor_constant_before(graph, linear, transposed, None);
    graph.set_insert_point(InsertPoint::Before(linear));
    let matmul = graph.insert("aten::matmul", &[input, weight_t], &[Type::Tensor]);
    attach_schema(graph, matmul);
    let mut result = graph.node_output(matmul, 0);
    if !is_none(graph, bias) {
        let one = graph.insert_constant(Some(AttributeValue::Int(1)), Type::Int);
        let add = graph.insert("aten::add", &[result, bias, one], &[Type::Tensor]);
        attach_schema(graph, add);
        result = graph.node_output(add, 0);
    }
    let top = graph.top_block();
    graph.set_insert_point(InsertPoint::EndOf(top));
    let output = graph.node_output(linear, 0);
    if let Some(name) = graph.debug_name(output).map(str::to_string) {
        graph.set_debug_name(result, &name);
    }
    graph.replace_all_uses_with(output, result);
    graph.destroy_node(linear);
    Ok(true)
}

/// Gives a new node the schema of the overload its input types select, as PyTorch's nodes
/// look theirs up. The archive printer needs it: `aten::add.Tensor` takes `alpha` by keyword
/// only, and printed positionally `torch.add(x, bias, 1)` would select `add.Scalar` on load.
fn attach_schema(graph: &mut Graph, node: NodeId) {
    let types: Vec<Type> = graph
        .node_inputs(node)
        .iter()
        .map(|&v| graph.value_type(v).clone())
        .collect();
    let schema = OperatorRegistry::global()
        .find_by_types(graph.kind(node).as_str(), &types)
        .map(|operator| operator.schema.clone());
    graph.set_node_schema(node, schema);
}
