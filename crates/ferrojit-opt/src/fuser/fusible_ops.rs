//! Which nodes the fuser may put in a `prim::FusionGroup`: the one list of fusible operator
//! overloads, and the checks on a node's types and arguments.
//!
//! The list is the contract with the code generator (crates/ferrojit-codegen): pointwise
//! operators on floating tensors whose dtype and sizes are known. Every argument that is not
//! a tensor (alpha, a scalar operand, clamp's bounds, gelu's `approximate`) must be a
//! `prim::Constant`, because the group copies it into its subgraph as a constant: a group's
//! inputs are tensors only.
//!
//! A group may also end with one trailing reduction ([`is_trailing_reduction`]): softmax or
//! log_softmax over the last dimension. It only ever seeds a group (the pointwise chain
//! before it joins), never joins one as a producer, so it is always the group's last node
//! and a group holds at most one.

use ferrojit_ir::{FunctionSchema, Graph, NodeId, Prim, TensorRefinement, Type, ValueId};

/// The fusible operators, as `(name, overload)`. Overloads not listed (`div.Tensor_mode`,
/// `clamp.Tensor`, `pow.Tensor_Tensor`, the number overloads) are not fused.
pub const FUSIBLE_OPERATORS: &[(&str, &str)] = &[
    ("aten::add", "Tensor"),
    ("aten::add", "Scalar"),
    ("aten::sub", "Tensor"),
    ("aten::sub", "Scalar"),
    ("aten::mul", "Tensor"),
    ("aten::mul", "Scalar"),
    ("aten::div", "Tensor"),
    ("aten::div", "Scalar"),
    ("aten::neg", ""),
    ("aten::relu", ""),
    ("aten::sigmoid", ""),
    ("aten::tanh", ""),
    ("aten::exp", ""),
    ("aten::log", ""),
    ("aten::sqrt", ""),
    ("aten::rsqrt", ""),
    ("aten::abs", ""),
    ("aten::reciprocal", ""),
    ("aten::gelu", ""),
    ("aten::silu", ""),
    ("aten::erf", ""),
    ("aten::pow", "Tensor_Scalar"),
    ("aten::clamp", ""),
    ("aten::minimum", ""),
    ("aten::maximum", ""),
    ("aten::where", "self"),
];

/// The floating dtypes a fused operator may read and write. (`aten::where`'s condition is
/// the one `Bool` tensor a group may take.)
const FUSIBLE_DTYPES: &[&str] = &["Float", "Double"];

/// The schema `node` calls: the one it carries, else the registry's overload for its input
/// types (graphs parsed from text carry none).
pub fn node_schema(graph: &Graph, node: NodeId) -> Option<std::sync::Arc<FunctionSchema>> {
    if let Some(schema) = &graph.node(node).schema {
        return Some(schema.clone());
    }
    let types: Vec<Type> = graph
        .node_inputs(node)
        .iter()
        .map(|&value| graph.value_type(value).clone())
        .collect();
    ferrojit_runtime::OperatorRegistry::global()
        .find_by_types(graph.kind(node).as_str(), &types)
        .map(|operator| operator.schema.clone())
}

/// The facts of a tensor type the fuser needs: dtype, every size, not on another device and
/// not requiring grad (PyTorch fuses only what needs no gradient). `None` when the type is
/// not a tensor type or misses one of them.
pub fn complete_tensor_type(ty: &Type) -> Option<&TensorRefinement> {
    let Type::RefinedTensor(refinement) = ty else {
        return None;
    };
    let sizes_known = refinement
        .sizes
        .as_ref()
        .is_some_and(|sizes| sizes.iter().all(Option::is_some));
    let on_cpu = refinement
        .device
        .as_deref()
        .is_none_or(|device| device == "cpu");
    let no_grad = refinement.requires_grad != Some(true);
    let defined = refinement.undefined != Some(true);
    (refinement.scalar_type.is_some() && sizes_known && on_cpu && no_grad && defined)
        .then_some(&**refinement)
}

/// Whether `value` is a tensor of complete type and of one of `dtypes`.
fn is_complete_tensor_of(graph: &Graph, value: ValueId, dtypes: &[&str]) -> bool {
    complete_tensor_type(graph.value_type(value)).is_some_and(|refinement| {
        refinement
            .scalar_type
            .as_deref()
            .is_some_and(|dtype| dtypes.contains(&dtype))
    })
}

/// Whether `value` is made by a `prim::Constant` (which the group can copy).
pub fn is_constant(graph: &Graph, value: ValueId) -> bool {
    graph
        .producer(value)
        .is_some_and(|producer| graph.kind(producer).is_prim(Prim::Constant))
}

/// Whether `node` may join a fusion group: a listed overload, one tensor output, every tensor
/// input and the output of complete floating type (a `where` condition of complete `Bool`
/// type), and every other input a constant.
pub fn is_fusible(graph: &Graph, node: NodeId) -> bool {
    let kind = graph.kind(node).as_str();
    if !FUSIBLE_OPERATORS.iter().any(|(name, _)| *name == kind) {
        return false;
    }
    let Some(schema) = node_schema(graph, node) else {
        return false;
    };
    if !FUSIBLE_OPERATORS
        .iter()
        .any(|(name, overload)| *name == kind && *overload == schema.overload_name)
    {
        return false;
    }
    let outputs = graph.node_outputs(node);
    if outputs.len() != 1 || !is_complete_tensor_of(graph, outputs[0], FUSIBLE_DTYPES) {
        return false;
    }
    let mut tensor_inputs = 0;
    for (index, &input) in graph.node_inputs(node).iter().enumerate() {
        if graph.value_type(input).is_tensor() {
            let dtypes: &[&str] = if kind == "aten::where" && index == 0 {
                &["Bool"]
            } else {
                FUSIBLE_DTYPES
            };
            if !is_complete_tensor_of(graph, input, dtypes) {
                return false;
            }
            tensor_inputs += 1;
        } else if !is_constant(graph, input) {
            return false;
        }
    }
    tensor_inputs > 0
}

/// The reductions a group may end with, as `(name, overload)`: over the last dimension only,
/// the shape of the code generator's row kernel.
pub const TRAILING_REDUCTIONS: &[(&str, &str)] =
    &[("aten::softmax", "int"), ("aten::log_softmax", "int")];

/// The constant int `value` holds, if a `prim::Constant` makes it.
fn constant_int(graph: &Graph, value: ValueId) -> Option<i64> {
    let producer = graph.producer(value)?;
    if !graph.kind(producer).is_prim(Prim::Constant) {
        return None;
    }
    match graph.attribute(producer, "value") {
        Some(ferrojit_ir::AttributeValue::Int(number)) => Some(*number),
        _ => None,
    }
}

/// Whether `value` is a `prim::Constant` None.
fn is_constant_none(graph: &Graph, value: ValueId) -> bool {
    is_constant(graph, value) && *graph.value_type(value) == Type::NoneType
}

/// Whether `node` may end a fusion group as its trailing reduction: `softmax.int` or
/// `log_softmax.int` with a constant dim that is the last one (-1 or rank - 1), dtype a
/// constant None, and input and output of complete floating type with the same sizes, of
/// rank at least 1.
pub fn is_trailing_reduction(graph: &Graph, node: NodeId) -> bool {
    let kind = graph.kind(node).as_str();
    if !TRAILING_REDUCTIONS.iter().any(|(name, _)| *name == kind) {
        return false;
    }
    let Some(schema) = node_schema(graph, node) else {
        return false;
    };
    if !TRAILING_REDUCTIONS
        .iter()
        .any(|(name, overload)| *name == kind && *overload == schema.overload_name)
    {
        return false;
    }
    let [input, dim, dtype] = graph.node_inputs(node)[..] else {
        return false;
    };
    let [output] = graph.node_outputs(node)[..] else {
        return false;
    };
    if !is_complete_tensor_of(graph, input, FUSIBLE_DTYPES)
        || !is_complete_tensor_of(graph, output, FUSIBLE_DTYPES)
        || !is_constant_none(graph, dtype)
    {
        return false;
    }
    let sizes = |value: ValueId| {
        complete_tensor_type(graph.value_type(value))
            .and_then(|refinement| refinement.sizes.clone())
    };
    let (Some(input_sizes), Some(output_sizes)) = (sizes(input), sizes(output)) else {
        return false;
    };
    let rank = input_sizes.len() as i64;
    if input_sizes != output_sizes || rank == 0 {
        return false;
    }
    constant_int(graph, dim).is_some_and(|dim| dim == -1 || dim == rank - 1)
}
