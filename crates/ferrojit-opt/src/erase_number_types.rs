//! Number types become tensor types, PyTorch's `EraseNumberTypes`
//! (`_jit_pass_erase_number_types`), as ONNX export wants: values of type `int`, `float` and
//! `complex` become zero-dimensional CPU tensors of type `Long`, `Double` and `ComplexDouble`,
//! and `bool` values `Bool` tensors; number and bool constants become tensor
//! constants; the conversions between numbers and tensors (`aten::Int`, `aten::Float`,
//! `aten::Bool`, the `*Implicit` forms and `prim::NumToTensor`) disappear, their uses reading
//! their input.
//!
//! As in PyTorch, a value's type changes where a node reads it, so an unused bool constant
//! keeps the type `bool` around its tensor value.

use ferrojit_ir::{AttributeValue, BlockId, Graph, InsertPoint, Prim, TensorRefinement, Type};
use ferrojit_tensor::{DType, Scalar, Tensor};

/// Kinds that only convert between a number and a tensor.
const CONVERSIONS: &[&str] = &[
    "aten::Bool",
    "aten::Float",
    "aten::Int",
    "aten::FloatImplicit",
    "aten::IntImplicit",
    "aten::ScalarImplicit",
    "prim::NumToTensor",
];

/// Whether PyTorch counts the type as a number (`bool` is not one).
fn is_number(ty: &Type) -> bool {
    matches!(ty, Type::Int | Type::Float | Type::Complex | Type::Number)
}

/// The zero-dimensional CPU tensor type standing for a number or bool type.
fn tensor_type_for(ty: &Type) -> Type {
    let scalar_type = match ty {
        Type::Int => "Long",
        Type::Float => "Double",
        Type::Complex => "ComplexDouble",
        Type::Bool => "Bool",
        _ => return Type::Tensor,
    };
    Type::RefinedTensor(Box::new(TensorRefinement {
        scalar_type: Some(scalar_type.to_string()),
        sizes: Some(Vec::new()),
        strides: Some(Vec::new()),
        requires_grad: None,
        device: Some("cpu".to_string()),
        undefined: None,
    }))
}

/// The tensor constant for a number or bool constant's value.
fn tensor_constant(ty: &Type, attribute: Option<&AttributeValue>) -> Option<Tensor> {
    let (value, dtype) = match (ty, attribute?) {
        (Type::Int, AttributeValue::Int(v)) => (Scalar::Int(*v), DType::Int64),
        (Type::Float, AttributeValue::Float(v)) => (Scalar::Float(*v), DType::Float64),
        (Type::Bool, AttributeValue::Int(v)) => (Scalar::Bool(*v != 0), DType::Bool),
        _ => return None,
    };
    Some(Tensor::scalar_tensor(value, dtype))
}

/// Gives a number or bool value its tensor type (PyTorch's `SetNumTypeToTensorType`).
fn set_tensor_type(graph: &mut Graph, value: ferrojit_ir::ValueId) {
    let ty = graph.value_type(value).clone();
    if is_number(&ty) || ty == Type::Bool {
        graph.set_value_type(value, tensor_type_for(&ty));
    }
}

/// Runs the pass on `graph`.
pub fn erase_number_types(graph: &mut Graph) {
    for input in graph.inputs().to_vec() {
        set_tensor_type(graph, input);
    }
    let top = graph.top_block();
    erase_in_block(graph, top);
    graph.set_insert_point(InsertPoint::EndOf(top));
}

fn erase_in_block(graph: &mut Graph, block: BlockId) {
    for node in graph.block_nodes(block) {
        for input in graph.node_inputs(node).to_vec() {
            set_tensor_type(graph, input);
        }
        for nested in graph.node_blocks(node).to_vec() {
            erase_in_block(graph, nested);
        }
        let kind = graph.kind(node).clone();
        if kind.is_prim(Prim::Constant) {
            let output = graph.node_output(node, 0);
            let ty = graph.value_type(output).clone();
            if !(is_number(&ty) || ty == Type::Bool) {
                continue;
            }
            let Some(tensor) = tensor_constant(&ty, graph.attribute(node, "value")) else {
                continue;
            };
            graph.set_insert_point(InsertPoint::Before(node));
            // The replacement keeps the old value's type and name (PyTorch's copyMetadata).
            let replacement = graph.insert_constant(Some(AttributeValue::Tensor(tensor)), ty);
            if let Some(name) = graph.debug_name(output).map(str::to_string) {
                graph.set_debug_name(replacement, &name);
            }
            graph.replace_all_uses_with(output, replacement);
            let destroyed = graph.destroy_node(node);
            debug_assert!(destroyed, "a replaced constant has no uses left");
        } else if CONVERSIONS.contains(&kind.as_str()) {
            let (Some(&output), Some(&input)) = (
                graph.node_outputs(node).first(),
                graph.node_inputs(node).first(),
            ) else {
                continue;
            };
            graph.replace_all_uses_with(output, input);
            let destroyed = graph.destroy_node(node);
            debug_assert!(destroyed, "a replaced conversion has no uses left");
        } else {
            for output in graph.node_outputs(node).to_vec() {
                set_tensor_type(graph, output);
            }
        }
    }
}
