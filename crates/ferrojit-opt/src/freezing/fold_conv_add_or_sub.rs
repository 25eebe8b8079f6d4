//! `fold_frozen_conv_add_or_sub`, PyTorch's `FoldFrozenConvAddOrSub`
//! (frozen_conv_folding.cpp): `conv(x, w, b) + c` (or `- c`, with any constant `alpha`),
//! where `c` is a constant number or a tensor with one value per output channel, becomes
//! `conv(x, w, b + c)`. The operand is shaped to `[out_channels]` (a number fills a tensor
//! of the weight's dtype), the missing bias is zeros, the add or sub runs on the bias with
//! the runtime's kernel and the result is cast back to the bias's dtype.

use ferrojit_ir::{Graph, NodeId, Type};
use ferrojit_tensor::Tensor;

use super::conv_folding_common::{
    conv_and_pointwise_op_can_fold, producing_conv, resize_constant_scalar_or_tensor_to_shape,
};
use super::operator_calls::{
    call_tensor_operator, constant_tensor, debug_name, fold_at_every_node,
    insert_tensor_constant_before, is_none, tensor_argument, to_dtype,
};
use crate::constant_insertion::constant_value;

/// Folds every foldable conv → add/sub pair; `Ok(true)` when one was folded.
pub fn fold_frozen_conv_add_or_sub(graph: &mut Graph) -> Result<bool, String> {
    fold_at_every_node(graph, fold_at)
}

/// `aten::add` or `aten::sub` of a tensor and a tensor or number, with `alpha`: PyTorch's
/// `add.Tensor`, `add.Scalar`, `sub.Tensor` and `sub.Scalar`.
fn is_supported_add_or_sub(graph: &Graph, node: NodeId) -> bool {
    let kind = graph.kind(node).as_str();
    if kind != "aten::add" && kind != "aten::sub" {
        return false;
    }
    let inputs = graph.node_inputs(node);
    inputs.len() == 3
        && graph.node_outputs(node).len() == 1
        && is_tensor(graph.value_type(inputs[0]))
}

pub(super) fn is_tensor(ty: &Type) -> bool {
    matches!(ty, Type::Tensor | Type::RefinedTensor(_))
}

fn fold_at(graph: &mut Graph, op: NodeId) -> Result<bool, String> {
    if !is_supported_add_or_sub(graph, op) {
        return Ok(false);
    }
    let Some(conv) = producing_conv(graph, graph.node_inputs(op)[0]) else {
        return Ok(false);
    };
    if !conv_and_pointwise_op_can_fold(graph, conv, op) {
        return Ok(false);
    }
    let Some(weight) = constant_tensor(graph, graph.node_inputs(conv)[1]) else {
        return Ok(false);
    };
    let out_channels = weight.sizes()[0] as i64;
    let operand = resize_constant_scalar_or_tensor_to_shape(
        graph,
        graph.node_inputs(op)[1],
        &[out_channels],
        &weight,
    )?;
    let bias_value = graph.node_inputs(conv)[2];
    let bias: Tensor = if is_none(graph, bias_value) {
        Tensor::zeros(&[operand.numel()], weight.dtype()).map_err(|error| error.to_string())?
    } else {
        match constant_tensor(graph, bias_value) {
            Some(bias) => bias.as_ref().clone(),
            None => return Ok(false),
        }
    };
    let Some(alpha) = constant_value(graph, graph.node_inputs(op)[2]) else {
        return Ok(false);
    };
    let kind = graph.kind(op).as_str().to_string();
    let operator = format!("{kind}.Tensor");
    let fused = call_tensor_operator(
        &operator,
        vec![tensor_argument(&bias), tensor_argument(&operand), alpha],
    )?;
    let fused = to_dtype(&fused, bias.dtype())?;
    let unqualified = kind.trim_start_matches("aten::");
    let name = format!("{}_fused_{unqualified}", debug_name(graph, bias_value));
    let fused_bias = insert_tensor_constant_before(graph, conv, fused, Some(&name));
    graph.replace_node_input(conv, 2, fused_bias);
    let op_output = graph.node_output(op, 0);
    let conv_output = graph.node_output(conv, 0);
    graph.replace_all_uses_with(op_output, conv_output);
    // As PyTorch, the folded op now reads constants, not the convolution: it is dead, and
    // the convolution's result is free for the next fold in the same run.
    graph.replace_node_input(op, 0, fused_bias);
    Ok(true)
}
