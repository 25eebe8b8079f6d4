//! `fold_frozen_linear_bn`, PyTorch's `FoldFrozenLinearBatchnorm`
//! (frozen_linear_folding.cpp): a batch norm in eval mode whose input is an `aten::linear`
//! with constant parameters becomes part of the linear. With `scale = bn_w * rsqrt(var +
//! eps)`, the new weight is `w * scale.unsqueeze(-1)` and the new bias `(b - mean) * scale +
//! bn_b` (`b` is zeros when the linear has none), each cast back to the dtype it replaces.
//!
//! Unlike PyTorch, a linear whose result has other uses is left alone: folding it would
//! change what those uses read.

use ferrojit_ir::{Graph, NodeId};
use ferrojit_runtime::IValue;

use super::batch_norm_parameters::{add, mul, sub, BatchNormParameters};
use super::operator_calls::{
    call_tensor_operator, constant_tensor, debug_name, fold_at_every_node,
    has_non_constant_parameters, insert_tensor_constant_before, is_none, tensor_argument, to_dtype,
    value_reading_uses,
};

/// Folds every foldable linear → batch norm pair; `Ok(true)` when one was folded.
pub fn fold_frozen_linear_batch_norm(graph: &mut Graph) -> Result<bool, String> {
    fold_at_every_node(graph, fold_at)
}

fn fold_at(graph: &mut Graph, batch_norm: NodeId) -> Result<bool, String> {
    if !graph.kind(batch_norm).is("aten::batch_norm")
        || graph.node_inputs(batch_norm).len() != 9
        || graph.node_outputs(batch_norm).len() != 1
    {
        return Ok(false);
    }
    let Some(linear) = graph.producer(graph.node_inputs(batch_norm)[0]) else {
        return Ok(false);
    };
    if !graph.kind(linear).is("aten::linear")
        || graph.node_inputs(linear).len() != 3
        || graph.node_outputs(linear).len() != 1
    {
        return Ok(false);
    }
    if has_non_constant_parameters(graph, linear) || has_non_constant_parameters(graph, batch_norm)
    {
        return Ok(false);
    }
    let linear_output = graph.node_output(linear, 0);
    if value_reading_uses(graph, linear_output) > 1 {
        return Ok(false);
    }
    let Some(parameters) = BatchNormParameters::read(graph, batch_norm)? else {
        return Ok(false);
    };
    let weight_value = graph.node_inputs(linear)[1];
    let bias_value = graph.node_inputs(linear)[2];
    let Some(weight) = constant_tensor(graph, weight_value) else {
        return Ok(false);
    };
    if weight.dim() != 2 || weight.sizes()[0] != parameters.running_mean.numel() {
        return Ok(false);
    }
    let bias = if is_none(graph, bias_value) {
        call_tensor_operator(
            "aten::zeros_like",
            vec![tensor_argument(&parameters.running_mean)],
        )?
    } else {
        match constant_tensor(graph, bias_value) {
            Some(bias) => bias.as_ref().clone(),
            None => return Ok(false),
        }
    };

    let scale = mul(&parameters.weight, &parameters.var_rsqrt()?)?;
    let column = call_tensor_operator(
        "aten::unsqueeze",
        vec![tensor_argument(&scale), IValue::Int(-1)],
    )?;
    let new_weight = to_dtype(&mul(&weight, &column)?, weight.dtype())?;
    let new_bias = add(
        &mul(&sub(&bias, &parameters.running_mean)?, &scale)?,
        &parameters.bias,
    )?;
    let new_bias = to_dtype(&new_bias, bias.dtype())?;

    let weight_name = format!("{}_fused_bn", debug_name(graph, weight_value));
    let bias_name = format!("{}_fused_bn", debug_name(graph, bias_value));
    let fused_weight = insert_tensor_constant_before(graph, linear, new_weight, Some(&weight_name));
    let fused_bias = insert_tensor_constant_before(graph, linear, new_bias, Some(&bias_name));
    graph.replace_node_input(linear, 1, fused_weight);
    graph.replace_node_input(linear, 2, fused_bias);
    let batch_norm_output = graph.node_output(batch_norm, 0);
    graph.replace_all_uses_with(batch_norm_output, linear_output);
    Ok(true)
}
