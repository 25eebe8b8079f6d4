//! Values to and from `prim::Constant` nodes, as constant propagation needs them: reading a
//! constant's value (tensor constants typed with their static facts included), and PyTorch's
//! `tryInsertConstant` rules for which results can become constants and with what type.
//!
//! A tensor constant takes the type PyTorch infers from the tensor (`Float(2, 3,
//! strides=[3, 1], requires_grad=0, device=cpu)`); lists of ints, floats, strings and
//! tensors become list constants; a `None` result takes the type of the output it replaces.
//! Tuples, dicts and objects cannot be held by an IR constant here, so their nodes stay.

use ferrojit_ir::{AttributeValue, Graph, Prim, TensorRefinement, Type, ValueId};
use ferrojit_runtime::interpreter::code::decode_constant;
use ferrojit_runtime::IValue;
use ferrojit_tensor::Tensor;

/// The value of a constant-produced value, if `value` is one and its value can be read.
pub fn constant_value(graph: &Graph, value: ValueId) -> Option<IValue> {
    let node = graph.producer(value)?;
    if !graph.kind(node).is_prim(Prim::Constant) {
        return None;
    }
    let attribute = graph.attribute(node, "value");
    match (graph.value_type(value), attribute) {
        (Type::RefinedTensor(_), Some(AttributeValue::Tensor(tensor))) => {
            Some(IValue::from(tensor.clone()))
        }
        (Type::List(element), Some(AttributeValue::Tensors(tensors)))
            if is_tensor_type(element) =>
        {
            let items = tensors.iter().cloned().map(IValue::from).collect();
            Some(IValue::list(Type::Tensor, items))
        }
        (ty, attribute) => decode_constant(ty, attribute).ok(),
    }
}

fn is_tensor_type(ty: &Type) -> bool {
    matches!(ty, Type::Tensor | Type::RefinedTensor(_))
}

/// The IR constant holding `value`, if one can: the attribute and the type. `declared` is
/// the type of the output the constant replaces.
pub fn constant_for(value: &IValue, declared: &Type) -> Option<(Option<AttributeValue>, Type)> {
    Some(match value {
        IValue::Int(v) => (Some(AttributeValue::Int(*v)), Type::Int),
        IValue::Double(v) => (Some(AttributeValue::Float(*v)), Type::Float),
        IValue::Bool(v) => (Some(AttributeValue::Int(i64::from(*v))), Type::Bool),
        IValue::Str(v) => (Some(AttributeValue::Str(v.to_string())), Type::Str),
        IValue::Device(device) => (Some(AttributeValue::Str(device.to_string())), Type::Device),
        // PyTorch gives a folded None the type of the output it replaces.
        IValue::None => (None, declared.clone()),
        IValue::Tensor(cell) => {
            if cell.requires_grad() {
                return None;
            }
            let tensor = value.to_tensor().ok()?;
            let ty = tensor_type(&tensor);
            (Some(AttributeValue::Tensor(tensor.as_ref().clone())), ty)
        }
        IValue::List(list) => {
            let items = list.to_vec();
            match list.element_type() {
                Type::Int => (
                    Some(AttributeValue::Ints(
                        items
                            .iter()
                            .map(|v| v.to_int().ok())
                            .collect::<Option<_>>()?,
                    )),
                    Type::List(Box::new(Type::Int)),
                ),
                Type::Float => (
                    Some(AttributeValue::Floats(
                        items
                            .iter()
                            .map(|v| v.to_double().ok())
                            .collect::<Option<_>>()?,
                    )),
                    Type::List(Box::new(Type::Float)),
                ),
                Type::Str => (
                    Some(AttributeValue::Strs(
                        items
                            .iter()
                            .map(|v| v.to_str().ok().map(|s| s.to_string()))
                            .collect::<Option<_>>()?,
                    )),
                    Type::List(Box::new(Type::Str)),
                ),
                element if is_tensor_type(element) => {
                    let mut tensors = Vec::with_capacity(items.len());
                    for item in &items {
                        let IValue::Tensor(cell) = item else {
                            return None;
                        };
                        if cell.requires_grad() {
                            return None;
                        }
                        tensors.push(item.to_tensor().ok()?.as_ref().clone());
                    }
                    (
                        Some(AttributeValue::Tensors(tensors)),
                        Type::List(Box::new(Type::Tensor)),
                    )
                }
                _ => return None,
            }
        }
        _ => return None,
    })
}

/// The complete tensor type PyTorch infers from a tensor (`TensorType::create`): dtype,
/// sizes, strides, `requires_grad=0` and the device.
pub fn tensor_type(tensor: &Tensor) -> Type {
    let sizes = tensor
        .sizes()
        .iter()
        .map(|&size| Some(size as i64))
        .collect();
    let strides = tensor
        .strides()
        .iter()
        .map(|&stride| Some(stride as i64))
        .collect();
    Type::RefinedTensor(Box::new(TensorRefinement {
        scalar_type: Some(tensor.dtype().scalar_type_name().to_string()),
        sizes: Some(sizes),
        strides: Some(strides),
        requires_grad: Some(false),
        device: Some("cpu".to_string()),
        undefined: None,
    }))
}

/// The integer an `int` constant holds: `Some` only when `value` is the output of a
/// `prim::Constant` typed `int` (the loop, tuple and mutation passes read trip counts and
/// indices with it).
pub(crate) fn constant_int(graph: &Graph, value: ValueId) -> Option<i64> {
    let producer = graph.producer(value)?;
    if !graph.kind(producer).is_prim(Prim::Constant) || graph.value_type(value) != &Type::Int {
        return None;
    }
    match graph.attribute(producer, "value") {
        Some(AttributeValue::Int(number)) => Some(*number),
        _ => None,
    }
}
