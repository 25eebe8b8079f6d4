//! `fold_frozen_conv_mul_or_div`, PyTorch's `FoldFrozenConvMulOrDiv`
//! (frozen_conv_folding.cpp): `conv(x, w, b) * c` (or `/ c`), where `c` is a constant number
//! or a tensor with one value per output channel, becomes `conv(x, w * c', b * c)`: the
//! operand is shaped `[out_channels, 1, ...]` for the weight and `[out_channels]` for the
//! bias, each product runs through the runtime's kernel and is cast back to the dtype of
//! what it replaces.

use ferrojit_ir::{Graph, NodeId};

use super::conv_folding_common::{
    conv_and_pointwise_op_can_fold, producing_conv, resize_constant_scalar_or_tensor_to_shape,
};
use super::fold_conv_add_or_sub::is_tensor;
use super::operator_calls::{
    call_tensor_operator, constant_tensor, debug_name, fold_at_every_node,
    insert_tensor_constant_before, is_none, tensor_argument, to_dtype,
};

/// Folds every foldable conv → mul/div pair; `Ok(true)` when one was folded.
pub fn fold_frozen_conv_mul_or_div(graph: &mut Graph) -> Result<bool, String> {
    fold_at_every_node(graph, fold_at)
}

/// `aten::mul` or `aten::div` (without a rounding mode) of a tensor and a tensor or number:
/// PyTorch's `mul.Tensor`, `mul.Scalar`, `div.Tensor` and `div.Scalar`.
fn is_supported_mul_or_div(graph: &Graph, node: NodeId) -> bool {
    let kind = graph.kind(node).as_str();
    if kind != "aten::mul" && kind != "aten::div" {
        return false;
    }
    let inputs = graph.node_inputs(node);
    inputs.len() == 2
        && graph.node_outputs(node).len() == 1
        && is_tensor(graph.value_type(inputs[0]))
}

fn fold_at(graph: &mut Graph, op: NodeId) -> Result<bool, String> {
    if !is_supported_mul_or_div(graph, op) {
        return Ok(false);
    }
    let Some(conv) = producing_conv(graph, graph.node_inputs(op)[0]) else {
        return Ok(false);
    };
    if !conv_and_pointwise_op_can_fold(graph, conv, op) {
        return Ok(false);
    }
    let weight_value = graph.node_inputs(conv)[1];
    let bias_value = graph.node_inputs(conv)[2];
    let Some(weight) = constant_tensor(graph, weight_value) else {
        return Ok(false);
    };
    let bias = if is_none(graph, bias_value) {
        None
    } else {
        match constant_tensor(graph, bias_value) {
            Some(bias) => Some(bias),
            None => return Ok(false),
        }
    };
    let operand_value = graph.node_inputs(op)[1];
    let out_channels = weight.sizes()[0] as i64;
    let mut weight_shape = vec![1_i64; weight.dim()];
    weight_shape[0] = out_channels;
    let kind = graph.kind(op).as_str().to_string();
    let operator = format!("{kind}.Tensor");
    let unqualified = kind.trim_start_matches("aten::").to_string();

    let weight_operand =
        resize_constant_scalar_or_tensor_to_shape(graph, operand_value, &weight_shape, &weight)?;
    let fused_weight = call_tensor_operator(
        &operator,
        vec![tensor_argument(&weight), tensor_argument(&weight_operand)],
    )?;
    let fused_weight = to_dtype(&fused_weight, weight.dtype())?;
    let fused_bias = match &bias {
        Some(bias) => {
            let bias_operand = resize_constant_scalar_or_tensor_to_shape(
                graph,
                operand_value,
                &[out_channels],
                bias,
            )?;
            let fused = call_tensor_operator(
                &operator,
                vec![tensor_argument(bias), tensor_argument(&bias_operand)],
            )?;
            Some(to_dtype(&fused, bias.dtype())?)
        }
        None => None,
    };

    let weight_name = format!("{}_fused_{unqualified}", debug_name(graph, weight_value));
    let new_weight = insert_tensor_constant_before(graph, conv, fused_weight, Some(&weight_name));
    graph.replace_node_input(conv, 1, new_weight);
    if let Some(fused_bias) = fused_bias {
        let bias_name = format!("{}_fused_{unqualified}", debug_name(graph, bias_value));
        let new_bias = insert_tensor_constant_before(graph, conv, fused_bias, Some(&bias_name));
        graph.replace_node_input(conv, 2, new_bias);
    }
    let op_output = graph.node_output(op, 0);
    let conv_output = graph.node_output(conv, 0);
    graph.replace_all_uses_with(op_output, conv_output);
    // As PyTorch, the folded op now reads constants, not the convolution: it is dead, and
    // the convolution's result is free for the next fold in the same run.
    graph.replace_node_input(op, 0, new_weight);
    Ok(true)
}
