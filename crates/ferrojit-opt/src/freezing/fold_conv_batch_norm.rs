//! `fold_frozen_conv_bn`, PyTorch's `FoldFrozenConvBatchnorm` (frozen_conv_folding.cpp): a
//! batch norm in eval mode whose input is a convolution used only there, with every
//! parameter of both constant, becomes part of the convolution. The new weight is
//! `w * (bn_w * rsqrt(var + eps)).reshape([-1, 1, ...])` and the new bias
//! `(b - mean) * rsqrt(var + eps) * bn_w + bn_b`, computed in that order with the runtime's
//! kernels (as `torch/nn/utils/fusion.py` computes them), each cast back to the dtype of the
//! weight or bias it replaces. The batch norm's uses read the convolution; dead code
//! elimination removes the batch norm.

use ferrojit_ir::Type;
use ferrojit_ir::{Graph, NodeId};
use ferrojit_runtime::IValue;

use super::batch_norm_parameters::{add, mul, sub, BatchNormParameters};
use super::conv_folding_common::producing_conv;
use super::operator_calls::{
    call_tensor_operator, constant_tensor, debug_name, fold_at_every_node,
    has_non_constant_parameters, insert_tensor_constant_before, is_none, tensor_argument, to_dtype,
    value_reading_uses,
};

/// Folds every foldable conv → batch norm pair; `Ok(true)` when one was folded.
pub fn fold_frozen_conv_batch_norm(graph: &mut Graph) -> Result<bool, String> {
    fold_at_every_node(graph, fold_at)
}

fn fold_at(graph: &mut Graph, batch_norm: NodeId) -> Result<bool, String> {
    if !graph.kind(batch_norm).is("aten::batch_norm")
        || graph.node_inputs(batch_norm).len() != 9
        || graph.node_outputs(batch_norm).len() != 1
    {
        return Ok(false);
    }
    let Some(conv) = producing_conv(graph, graph.node_inputs(batch_norm)[0]) else {
        return Ok(false);
    };
    if has_non_constant_parameters(graph, conv) || has_non_constant_parameters(graph, batch_norm) {
        return Ok(false);
    }
    let conv_output = graph.node_output(conv, 0);
    if value_reading_uses(graph, conv_output) > 1 {
        return Ok(false);
    }
    let Some(parameters) = BatchNormParameters::read(graph, batch_norm)? else {
        return Ok(false);
    };
    let weight_value = graph.node_inputs(conv)[1];
    let bias_value = graph.node_inputs(conv)[2];
    let Some(weight) = constant_tensor(graph, weight_value) else {
        return Ok(false);
    };
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

    let var_rsqrt = parameters.var_rsqrt()?;
    let mut sizes = vec![IValue::Int(1); weight.dim()];
    if let Some(first) = sizes.first_mut() {
        *first = IValue::Int(-1);
    }
    let scale = call_tensor_operator(
        "aten::reshape",
        vec![
            tensor_argument(&mul(&parameters.weight, &var_rsqrt)?),
            IValue::list(Type::Int, sizes),
        ],
    )?;
    let new_weight = to_dtype(&mul(&weight, &scale)?, weight.dtype())?;
    let new_bias = add(
        &mul(
            &mul(&sub(&bias, &parameters.running_mean)?, &var_rsqrt)?,
            &parameters.weight,
        )?,
        &parameters.bias,
    )?;
    let new_bias = to_dtype(&new_bias, bias.dtype())?;

    let weight_name = format!("{}_fused_bn", debug_name(graph, weight_value));
    let bias_name = format!("{}_fused_bn", debug_name(graph, bias_value));
    let fused_weight = insert_tensor_constant_before(graph, conv, new_weight, Some(&weight_name));
    let fused_bias = insert_tensor_constant_before(graph, conv, new_bias, Some(&bias_name));
    graph.replace_node_input(conv, 1, fused_weight);
    graph.replace_node_input(conv, 2, fused_bias);
    let batch_norm_output = graph.node_output(batch_norm, 0);
    graph.replace_all_uses_with(batch_norm_output, conv_output);
    Ok(true)
}
