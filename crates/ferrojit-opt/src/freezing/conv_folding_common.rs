//! What the three convolution folds share (PyTorch's helpers in frozen_conv_folding.cpp):
//! which convolutions fold, whether a pointwise operator after one may fold into it, and
//! how its scalar or tensor operand is shaped to the convolution's channels.

use ferrojit_ir::{Graph, NodeId, Type, ValueId};
use ferrojit_runtime::IValue;
use ferrojit_tensor::{promote_types, Scalar, Tensor};

use super::operator_calls::{
    call_tensor_operator, constant_bool, constant_tensor, has_non_constant_parameters,
    tensor_argument, value_reading_uses,
};
use crate::constant_insertion::constant_value;

/// PyTorch's `supportedConvNode`: `conv1d`, `conv2d`, `conv3d`, and `_convolution` whose
/// `transposed` is the constant False.
pub fn is_supported_conv(graph: &Graph, node: NodeId) -> bool {
    // Text IR allows a node of any shape; a convolution without its weight and bias or
    // without one result is left alone.
    if graph.node_inputs(node).len() < 3 || graph.node_outputs(node).len() != 1 {
        return false;
    }
    match graph.kind(node).as_str() {
        "aten::conv1d" | "aten::conv2d" | "aten::conv3d" => true,
        "aten::_convolution" => {
            graph
                .node_inputs(node)
                .get(6)
                .and_then(|&transposed| constant_bool(graph, transposed))
                == Some(false)
        }
        _ => false,
    }
}

/// The convolution producing `value`, if a supported one does.
pub fn producing_conv(graph: &Graph, value: ValueId) -> Option<NodeId> {
    let producer = graph.producer(value)?;
    is_supported_conv(graph, producer).then_some(producer)
}

/// PyTorch's `opDoesNotBroadCastWithConv`: the operand may only have size 1 everywhere, but
/// the output-channel count in dimension 1, and no more dimensions than the weight.
pub fn op_does_not_broadcast_with_conv(operand: &Tensor, weight: &Tensor) -> bool {
    if operand.dim() > weight.dim() {
        return false;
    }
    let out_channels = weight.sizes().first().copied().unwrap_or(0);
    operand
        .sizes()
        .iter()
        .enumerate()
        .all(|(dim, &size)| (dim == 1 && size == out_channels) || size == 1)
}

/// PyTorch's `checkConvAndBroadcastingOpPreConditions`: all parameters constant, the
/// convolution's result used once, a floating-point weight, and a tensor operand that
/// neither broadcasts the result to a new shape nor promotes its type.
pub fn conv_and_pointwise_op_can_fold(graph: &Graph, conv: NodeId, op: NodeId) -> bool {
    if has_non_constant_parameters(graph, conv) || has_non_constant_parameters(graph, op) {
        return false;
    }
    if value_reading_uses(graph, graph.node_output(conv, 0)) > 1 {
        return false;
    }
    let Some(weight) = constant_tensor(graph, graph.node_inputs(conv)[1]) else {
        return false;
    };
    if !weight.dtype().is_floating_point() || weight.dim() == 0 {
        return false;
    }
    if graph.node_outputs(op).len() != 1 {
        return false;
    }
    let Some(&operand) = graph.node_inputs(op).get(1) else {
        return false;
    };
    if matches!(
        graph.value_type(operand),
        Type::Tensor | Type::RefinedTensor(_)
    ) {
        let Some(operand) = constant_tensor(graph, operand) else {
            return false;
        };
        if !op_does_not_broadcast_with_conv(&operand, &weight) {
            return false;
        }
        if !operand.dtype().is_floating_point()
            && promote_types(operand.dtype(), weight.dtype()) != weight.dtype()
        {
            return false;
        }
    }
    true
}

/// PyTorch's `resizeConstantScalarOrTensorToShape`: a scalar operand becomes a tensor of
/// `shape` (the weight's dtype) filled with it; a tensor operand of one element is expanded
/// to `shape`, any other is viewed as `shape`.
pub fn resize_constant_scalar_or_tensor_to_shape(
    graph: &Graph,
    operand: ValueId,
    shape: &[i64],
    like: &Tensor,
) -> Result<Tensor, String> {
    let resized = match constant_value(graph, operand) {
        Some(IValue::Tensor(cell)) => cell.get().as_ref().clone(),
        Some(IValue::Int(number)) => filled(shape, Scalar::Int(number), like)?,
        Some(IValue::Double(number)) => filled(shape, Scalar::Float(number), like)?,
        Some(IValue::Bool(flag)) => filled(shape, Scalar::Int(i64::from(flag)), like)?,
        _ => return Err("the operand is not a constant number or tensor".to_string()),
    };
    let shape_value = IValue::list(
        Type::Int,
        shape.iter().map(|&size| IValue::Int(size)).collect(),
    );
    if resized.numel() == 1 {
        let flat = call_tensor_operator(
            "aten::reshape",
            vec![
                tensor_argument(&resized),
                IValue::list(Type::Int, vec![IValue::Int(1)]),
            ],
        )?;
        call_tensor_operator("aten::expand", vec![tensor_argument(&flat), shape_value])
    } else {
        let expected: i64 = shape.iter().product();
        if resized.numel() as i64 != expected {
            return Err(format!(
                "an operand of {} elements cannot be viewed as {shape:?}",
                resized.numel()
            ));
        }
        call_tensor_operator("aten::view", vec![tensor_argument(&resized), shape_value])
    }
}

/// `at::zeros(shape, like.options()).fill_(value)`.
fn filled(shape: &[i64], value: Scalar, like: &Tensor) -> Result<Tensor, String> {
    let sizes: Vec<usize> = shape
        .iter()
        .map(|&size| usize::try_from(size).map_err(|_| format!("negative size in {shape:?}")))
        .collect::<Result<_, _>>()?;
    Tensor::full(&sizes, value, like.dtype()).map_err(|error| error.to_string())
}
