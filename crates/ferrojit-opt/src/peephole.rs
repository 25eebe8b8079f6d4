//! The peephole optimizer, PyTorch's `PeepholeOptimize` (`_jit_pass_peephole`): small local
//! rewrites that each replace one node's output by something simpler.
//!
//! It runs, in PyTorch's order, once each (no fixed point):
//! 1. the tensor rewrites of this file: `x.t().t()` is `x`; `x.expand(x.size())` is `x`;
//!    `x.type_as(y)` is `x` when both dtypes and devices are known and equal;
//!    `aten::Int(prim::NumToTensor(n))` (and `Float` and the `*Implicit` forms) is `n`;
//!    `_grad_sum_to_size(x, None)` is `x` and a chain of two keeps the last; and, when
//!    the input's static type knows the fact ("shape peepholes"), `size()`, `size(d)`,
//!    `len(x.size())`, `dim()`, `prim::dtype`, `prim::device`, `prim::is_cuda`,
//!    `is_floating_point()`, `is_complex()` and `aten::device(str, int)` become constants;
//! 2. the list idioms ([`crate::peephole_list_idioms`], without length refinement);
//! 3. the dict idioms ([`crate::peephole_dict_idioms`]);
//! 4. the alias-sensitive rewrites ([`crate::peephole_alias_sensitive`]);
//! 5. the non-tensor rewrites ([`crate::peephole_non_tensor`]);
//! 6. concat combining ([`crate::concat_combining`]).
//!
//! When any of these changed the graph, dead code elimination (`_jit_pass_dce`, without
//! alias analysis) runs last, as in PyTorch.
//!
//! The helpers at the end (constants, None-ness, tensor facts) are shared by the peephole
//! files.

use ferrojit_ir::{
    types::SCALAR_TYPE_NAMES, AttributeValue, Graph, InsertPoint, NodeId, Prim, TensorRefinement,
    Type, ValueId,
};
use ferrojit_runtime::registry::OperatorRegistry;
use ferrojit_runtime::IValue;

use crate::alias_analysis::attach_registry_schemas;
use crate::constant_insertion::constant_value;

/// Runs PyTorch's peephole optimizer on `graph`. `disable_shape_peepholes` turns off the
/// rewrites that read static tensor facts (sizes, dtype, device), as PyTorch's flag does.
pub fn peephole(graph: &mut Graph, disable_shape_peepholes: bool) -> Result<(), String> {
    let shape_peepholes = !disable_shape_peepholes;
    let top = graph.top_block();
    let mut changed = optimize_tensor_block(graph, top, shape_peepholes);
    // The later parts consult alias analysis, which needs the operators' schemas.
    attach_registry_schemas(graph, OperatorRegistry::global());
    changed |= crate::peephole_list_idioms::optimize_list_idioms(graph, false)?;
    changed |= crate::peephole_dict_idioms::optimize_dict_idioms(graph);
    changed |= crate::peephole_alias_sensitive::optimize_alias_sensitive(graph, shape_peepholes);
    changed |= crate::peephole_non_tensor::optimize_non_tensor(graph);
    changed |= crate::concat_combining::combine_concats(graph)?;
    if changed {
        crate::dead_code_elimination::eliminate_dead_code(graph);
    }
    graph.set_insert_point(InsertPoint::EndOf(top));
    Ok(())
}

/// The tensor rewrites on the nodes of `block`, nested blocks first; whether any applied.
fn optimize_tensor_block(
    graph: &mut Graph,
    block: ferrojit_ir::BlockId,
    shape_peepholes: bool,
) -> bool {
    let mut changed = false;
    for node in graph.block_nodes(block) {
        for nested in graph.node_blocks(node).to_vec() {
            changed |= optimize_tensor_block(graph, nested, shape_peepholes);
        }
        changed |= optimize_tensor_node(graph, node, shape_peepholes);
    }
    changed
}

/// The one rewrite that applies to `node`, if any; whether it changed the graph.
fn optimize_tensor_node(graph: &mut Graph, node: NodeId, shape_peepholes: bool) -> bool {
    let kind = graph.kind(node).as_str().to_string();
    let inputs = graph.node_inputs(node).to_vec();
    let Some(output) = single_output(graph, node) else {
        return false;
    };
    let input_is_tensor = |index: usize| {
        inputs
            .get(index)
            .is_some_and(|&v| graph.value_type(v).is_tensor())
    };
    match kind.as_str() {
        "aten::_grad_sum_to_size"
            if inputs.len() == 2
                && input_is_tensor(0)
                && graph
                    .value_type(inputs[1])
                    .is_subtype_of(&Type::optional(Type::list(Type::Int))) =>
        {
            if must_be_none(graph, inputs[1]) {
                graph.replace_all_uses_with(output, inputs[0]);
                return true;
            }
            // x._grad_sum_to_size(y)._grad_sum_to_size(z) == x._grad_sum_to_size(z)
            let mut changed = false;
            for use_site in graph.value_uses(output).to_vec() {
                let user = use_site.node;
                let user_inputs = graph.node_inputs(user);
                if graph.kind(user).is("aten::_grad_sum_to_size")
                    && user_inputs.len() == 2
                    && user_inputs[0] == output
                    && graph
                        .value_type(user_inputs[1])
                        .is_subtype_of(&Type::list(Type::Int))
                {
                    graph.replace_node_input(user, 0, inputs[0]);
                    changed = true;
                }
            }
            changed
        }
        "aten::expand"
            if inputs.len() == 3
                && input_is_tensor(0)
                && graph.value_type(inputs[2]) == &Type::Bool =>
        {
            // x.expand(x.size()) == x, for a constant size equal to the known sizes.
            let Some(IValue::List(list)) = constant_value(graph, inputs[1]) else {
                return false;
            };
            let expanded: Option<Vec<i64>> =
                list.to_vec().iter().map(|v| v.to_int().ok()).collect();
            let known = concrete_sizes(graph.value_type(inputs[0]));
            if shape_peepholes && expanded.is_some() && known.is_some() && expanded == known {
                graph.replace_all_uses_with(output, inputs[0]);
                return true;
            }
            false
        }
        "aten::t" if inputs.len() == 1 && input_is_tensor(0) => {
            let Some(producer) = graph.producer(inputs[0]) else {
                return false;
            };
            let producer_inputs = graph.node_inputs(producer);
            if graph.kind(producer).is("aten::t")
                && producer_inputs.len() == 1
                && graph.value_type(producer_inputs[0]).is_tensor()
                && graph.node_outputs(producer).len() == 1
            {
                let original = producer_inputs[0];
                graph.replace_all_uses_with(output, original);
                return true;
            }
            false
        }
        "aten::type_as" if shape_peepholes && inputs.len() == 2 && input_is_tensor(1) => {
            if !input_is_tensor(0) {
                return false;
            }
            let self_facts = refinement(graph.value_type(inputs[0]));
            let other_facts = refinement(graph.value_type(inputs[1]));
            let known_equal = |a: Option<&String>, b: Option<&String>| a.is_some() && a == b;
            if known_equal(
                self_facts.and_then(|f| f.scalar_type.as_ref()),
                other_facts.and_then(|f| f.scalar_type.as_ref()),
            ) && known_equal(
                self_facts.and_then(|f| f.device.as_ref()),
                other_facts.and_then(|f| f.device.as_ref()),
            ) {
                graph.replace_all_uses_with(output, inputs[0]);
                return true;
            }
            false
        }
        "aten::Float"
        | "aten::Int"
        | "aten::FloatImplicit"
        | "aten::IntImplicit"
        | "aten::ScalarImplicit"
            if inputs.len() == 1 =>
        {
            let Some(producer) = graph.producer(inputs[0]) else {
                return false;
            };
            if !graph.kind(producer).is("prim::NumToTensor") {
                return false;
            }
            let Some(&number) = graph.node_inputs(producer).first() else {
                return false;
            };
            graph.replace_all_uses_with(output, number);
            true
        }
        "aten::size" if shape_peepholes && inputs.len() == 1 && input_is_tensor(0) => {
            let Some(sizes) = concrete_sizes(graph.value_type(inputs[0])) else {
                return false;
            };
            let constant = insert_constant_before(
                graph,
                node,
                Some(AttributeValue::Ints(sizes)),
                Type::list(Type::Int),
            );
            graph.replace_all_uses_with(output, constant);
            true
        }
        "aten::len"
            if shape_peepholes
                && inputs.len() == 1
                && matches!(graph.value_type(inputs[0]), Type::List(_)) =>
        {
            // len(x.size()) is x's rank when the list has no other use (it could be mutated).
            let Some(size_node) = graph.producer(inputs[0]) else {
                return false;
            };
            let size_inputs = graph.node_inputs(size_node);
            if !graph.kind(size_node).is("aten::size")
                || size_inputs.len() != 1
                || !graph.value_type(size_inputs[0]).is_tensor()
            {
                return false;
            }
            let Some(rank) = tensor_rank(graph.value_type(size_inputs[0])) else {
                return false;
            };
            if graph.value_uses(inputs[0]).len() != 1 {
                return false;
            }
            replace_with_constant(graph, node, output, AttributeValue::Int(rank), Type::Int)
        }
        "aten::size"
            if shape_peepholes
                && inputs.len() == 2
                && input_is_tensor(0)
                && graph.value_type(inputs[1]) == &Type::Int =>
        {
            let Some(facts) = refinement(graph.value_type(inputs[0])) else {
                return false;
            };
            let Some(sizes) = facts.sizes.as_ref() else {
                return false;
            };
            let Some(IValue::Int(index)) = constant_value(graph, inputs[1]) else {
                return false;
            };
            let rank = sizes.len() as i64;
            let normalized = if index < 0 { rank + index } else { index };
            if !(0..rank).contains(&normalized) {
                return false;
            }
            let Some(size) = sizes[normalized as usize] else {
                return false;
            };
            replace_with_constant(graph, node, output, AttributeValue::Int(size), Type::Int)
        }
        "aten::is_floating_point" | "aten::is_complex"
            if shape_peepholes && inputs.len() == 1 && input_is_tensor(0) =>
        {
            let Some(dtype) = known_scalar_type(graph.value_type(inputs[0])) else {
                return false;
            };
            let answer = if kind == "aten::is_floating_point" {
                is_floating_scalar_type(&dtype)
            } else {
                is_complex_scalar_type(&dtype)
            };
            replace_with_constant(
                graph,
                node,
                output,
                AttributeValue::Int(i64::from(answer)),
                Type::Bool,
            )
        }
        "prim::dtype" if shape_peepholes && inputs.len() == 1 && input_is_tensor(0) => {
            let Some(dtype) = known_scalar_type(graph.value_type(inputs[0])) else {
                return false;
            };
            let Some(code) = SCALAR_TYPE_NAMES.iter().position(|name| *name == dtype) else {
                return false;
            };
            replace_with_constant(
                graph,
                node,
                output,
                AttributeValue::Int(code as i64),
                Type::Int,
            )
        }
        "prim::device" | "prim::is_cuda"
            if shape_peepholes && inputs.len() == 1 && input_is_tensor(0) =>
        {
            let Some(device) =
                refinement(graph.value_type(inputs[0])).and_then(|facts| facts.device.clone())
            else {
                return false;
            };
            if kind == "prim::device" {
                replace_with_constant(
                    graph,
                    node,
                    output,
                    AttributeValue::Str(device),
                    Type::Device,
                )
            } else {
                let is_cuda = device == "cuda" || device.starts_with("cuda:");
                replace_with_constant(
                    graph,
                    node,
                    output,
                    AttributeValue::Int(i64::from(is_cuda)),
                    Type::Bool,
                )
            }
        }
        "aten::device"
            if shape_peepholes
                && inputs.len() == 2
                && graph.value_type(inputs[0]) == &Type::Str
                && graph.value_type(inputs[1]) == &Type::Int =>
        {
            // PyTorch reads the type string from a constant (and fails on any other input);
            // a missing index constant counts as 0.
            let Some(IValue::Str(device_type)) = constant_value(graph, inputs[0]) else {
                return false;
            };
            let index = match constant_value(graph, inputs[1]) {
                Some(IValue::Int(index)) => index,
                _ => 0,
            };
            let device = format!("{device_type}:{index}");
            replace_with_constant(
                graph,
                node,
                output,
                AttributeValue::Str(device),
                Type::Device,
            )
        }
        "aten::dim" if shape_peepholes && inputs.len() == 1 && input_is_tensor(0) => {
            let Some(rank) = tensor_rank(graph.value_type(inputs[0])) else {
                return false;
            };
            replace_with_constant(graph, node, output, AttributeValue::Int(rank), Type::Int)
        }
        _ => false,
    }
}

/// Inserts a constant before `node` and makes `output`'s uses read it.
fn replace_with_constant(
    graph: &mut Graph,
    node: NodeId,
    output: ValueId,
    value: AttributeValue,
    ty: Type,
) -> bool {
    let constant = insert_constant_before(graph, node, Some(value), ty);
    graph.replace_all_uses_with(output, constant);
    true
}

/// The only output of `node`, when it has exactly one.
pub(crate) fn single_output(graph: &Graph, node: NodeId) -> Option<ValueId> {
    match graph.node_outputs(node) {
        [output] => Some(*output),
        _ => None,
    }
}

/// Inserts `prim::Constant` just before `node` (PyTorch's `WithInsertPoint(node)` then
/// `insertConstant`), leaving the insertion point as it was.
pub(crate) fn insert_constant_before(
    graph: &mut Graph,
    node: NodeId,
    value: Option<AttributeValue>,
    ty: Type,
) -> ValueId {
    let saved = graph.insert_point();
    graph.set_insert_point(InsertPoint::Before(node));
    let constant = graph.insert_constant(value, ty);
    graph.set_insert_point(saved);
    constant
}

/// PyTorch's `Value::mustBeNone`: the type is `NoneType`, or the producer can only give
/// None (`prim::AutogradZero`, or an optional constant without a value).
pub(crate) fn must_be_none(graph: &Graph, value: ValueId) -> bool {
    if graph.value_type(value) == &Type::NoneType {
        return true;
    }
    let Some(producer) = graph.producer(value) else {
        return false;
    };
    let kind = graph.kind(producer);
    if kind.is("prim::AutogradZero") {
        return true;
    }
    let outputs = graph.node_outputs(producer);
    if outputs.len() == 1 && graph.value_type(outputs[0]) == &Type::NoneType {
        return true;
    }
    kind.is_prim(Prim::Constant)
        && graph.node(producer).attributes.is_empty()
        && outputs.len() == 1
        && matches!(graph.value_type(outputs[0]), Type::Optional(_))
}

/// PyTorch's `Value::mustNotBeNone`: a type that cannot hold None, from a producer other
/// than `prim::AutogradAdd`.
pub(crate) fn must_not_be_none(graph: &Graph, value: ValueId) -> bool {
    if graph
        .producer(value)
        .is_some_and(|producer| graph.kind(producer).is("prim::AutogradAdd"))
    {
        return false;
    }
    match graph.value_type(value) {
        Type::NoneType | Type::Optional(_) => false,
        Type::Union(members) => !members.iter().any(|member| {
            matches!(member, Type::NoneType | Type::Optional(_))
                || Type::NoneType.is_subtype_of(member)
        }),
        _ => true,
    }
}

/// The tensor facts of a refined tensor type.
pub(crate) fn refinement(ty: &Type) -> Option<&TensorRefinement> {
    match ty {
        Type::RefinedTensor(facts) => Some(facts),
        _ => None,
    }
}

/// Every size, when the type knows the rank and each size.
pub(crate) fn concrete_sizes(ty: &Type) -> Option<Vec<i64>> {
    refinement(ty)?.sizes.as_ref()?.iter().copied().collect()
}

/// The rank, when the type knows it.
pub(crate) fn tensor_rank(ty: &Type) -> Option<i64> {
    Some(refinement(ty)?.sizes.as_ref()?.len() as i64)
}

/// The dtype's printed name (`Float`), when the type knows it.
pub(crate) fn known_scalar_type(ty: &Type) -> Option<String> {
    refinement(ty)?.scalar_type.clone()
}

/// `at::isFloatingType`.
pub(crate) fn is_floating_scalar_type(name: &str) -> bool {
    matches!(name, "Half" | "Float" | "Double" | "BFloat16") || name.starts_with("Float8_")
}

/// `at::isComplexType`.
fn is_complex_scalar_type(name: &str) -> bool {
    matches!(name, "ComplexHalf" | "ComplexFloat" | "ComplexDouble")
}

/// A constant's value read as a double (PyTorch's `Scalar::toDouble` on a constant input).
pub(crate) fn constant_scalar(graph: &Graph, value: ValueId) -> Option<f64> {
    match constant_value(graph, value)? {
        IValue::Int(v) => Some(v as f64),
        IValue::Double(v) => Some(v),
        IValue::Bool(v) => Some(f64::from(u8::from(v))),
        _ => None,
    }
}

/// Whether the type may stand for a `Scalar` argument in schema matching (bool may not).
pub(crate) fn is_scalar_type(ty: &Type) -> bool {
    matches!(ty, Type::Int | Type::Float | Type::Complex | Type::Number)
}
