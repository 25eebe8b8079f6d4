//! The non-tensor peephole rewrites, PyTorch's `PeepholeOptimizeNonTensor` (part of
//! `_jit_pass_peephole`), on every block, nested blocks first:
//!
//! * a non-constant node's output of type `NoneType` is replaced by a `None` constant;
//! * a bool `prim::If` output that is `True` in the then-branch and `False` in the else
//!   branch is the condition; an optional output whose branches both give non-optional
//!   values takes the unified type of the two;
//! * `aten::__is__`/`__isnot__` of a value that must be None and one that cannot be fold;
//! * `prim::unchecked_unwrap_optional`/`aten::_unwrap_optional` of a value that cannot be
//!   None, and `prim::unchecked_cast` to a supertype, are their input;
//! * `aten::Int`/`aten::ceil` of an int is the int;
//! * `aten::eq`/`aten::ne` of a value with itself fold for bool, int, float and None (and
//!   lists and dicts of those), which cannot throw;
//! * int arithmetic: `x * 1`, `x // 1`, `x / 1` are `x`; `x + 0` and `x - 0` are `x`; an
//!   add or sub of a constant after an add or sub of a constant merges the two constants.
//!   A constant first operand of an int `mul` or `add` is swapped to the second place
//!   whether or not a rewrite follows, as PyTorch does.

use ferrojit_ir::{unify_types, AttributeValue, BlockId, Graph, NodeId, Prim, Type, ValueId};
use ferrojit_runtime::IValue;

use crate::constant_insertion::constant_value;
use crate::peephole::{insert_constant_before, must_be_none, must_not_be_none, single_output};

/// Runs the non-tensor rewrites on `graph`; whether any applied.
pub fn optimize_non_tensor(graph: &mut Graph) -> bool {
    let top = graph.top_block();
    optimize_block(graph, top)
}

fn optimize_block(graph: &mut Graph, block: BlockId) -> bool {
    let mut changed = false;
    for node in graph.block_nodes(block) {
        for nested in graph.node_blocks(node).to_vec() {
            changed |= optimize_block(graph, nested);
        }
        if !graph.kind(node).is_prim(Prim::Constant) {
            // A value of type None is the None constant (an optional attribute set to None,
            // for example).
            for output in graph.node_outputs(node).to_vec() {
                if graph.value_type(output) == &Type::NoneType {
                    let none = insert_constant_before(graph, node, None, Type::NoneType);
                    graph.replace_all_uses_with(output, none);
                    changed = true;
                }
            }
        }
        changed |= optimize_node(graph, node);
    }
    changed
}

/// The constant int `value` holds (PyTorch's `constant_as<int64_t>`).
fn constant_int(graph: &Graph, value: ValueId) -> Option<i64> {
    match constant_value(graph, value)? {
        IValue::Int(v) => Some(v),
        _ => None,
    }
}

/// The constant bool `value` holds.
fn constant_bool(graph: &Graph, value: ValueId) -> Option<bool> {
    match constant_value(graph, value)? {
        IValue::Bool(v) => Some(v),
        _ => None,
    }
}

fn optimize_node(graph: &mut Graph, node: NodeId) -> bool {
    let kind = graph.kind(node).as_str().to_string();
    let inputs = graph.node_inputs(node).to_vec();
    match kind.as_str() {
        "prim::If" => optimize_if(graph, node),
        "aten::__is__" | "aten::__isnot__" if inputs.len() == 2 => {
            let Some(output) = single_output(graph, node) else {
                return false;
            };
            let mut changed = false;
            for checked in [0, 1] {
                if must_be_none(graph, inputs[checked])
                    && must_not_be_none(graph, inputs[1 - checked])
                {
                    let answer = kind == "aten::__isnot__";
                    let constant = insert_constant_before(
                        graph,
                        node,
                        Some(AttributeValue::Int(i64::from(answer))),
                        Type::Bool,
                    );
                    graph.replace_all_uses_with(output, constant);
                    changed = true;
                }
            }
            changed
        }
        "prim::unchecked_unwrap_optional" | "aten::_unwrap_optional" if inputs.len() == 1 => {
            let Some(output) = single_output(graph, node) else {
                return false;
            };
            if must_not_be_none(graph, inputs[0]) {
                graph.replace_all_uses_with(output, inputs[0]);
                return true;
            }
            false
        }
        "prim::unchecked_cast" if inputs.len() == 1 => {
            let Some(output) = single_output(graph, node) else {
                return false;
            };
            let input_type = graph.value_type(inputs[0]).unshaped();
            let output_type = graph.value_type(output).unshaped();
            if input_type.is_subtype_of(&output_type) {
                graph.replace_all_uses_with(output, inputs[0]);
                return true;
            }
            false
        }
        "aten::Int" | "aten::ceil"
            if inputs.len() == 1 && graph.value_type(inputs[0]) == &Type::Int =>
        {
            let Some(output) = single_output(graph, node) else {
                return false;
            };
            graph.replace_all_uses_with(output, inputs[0]);
            true
        }
        "aten::eq" | "aten::ne" => {
            if inputs.len() != 2 || inputs[0] != inputs[1] {
                return false;
            }
            let Some(output) = single_output(graph, node) else {
                return false;
            };
            let immutable =
                |ty: &Type| matches!(ty, Type::Bool | Type::Int | Type::Float | Type::NoneType);
            let cannot_throw = match graph.value_type(inputs[0]) {
                Type::List(element) => immutable(element),
                Type::Dict(key, value) => immutable(key) && immutable(value),
                other => immutable(other),
            };
            if !cannot_throw {
                return false;
            }
            let answer = kind == "aten::eq";
            let constant = insert_constant_before(
                graph,
                node,
                Some(AttributeValue::Int(i64::from(answer))),
                Type::Bool,
            );
            graph.replace_all_uses_with(output, constant);
            true
        }
        "aten::mul" | "aten::floordiv" | "aten::div" => simplify_mul_or_div(graph, node),
        "aten::add" | "aten::sub" => simplify_add_or_sub(graph, node),
        _ => false,
    }
}

fn optimize_if(graph: &mut Graph, node: NodeId) -> bool {
    let blocks = graph.node_blocks(node).to_vec();
    let (Some(&then_block), Some(&else_block)) = (blocks.first(), blocks.get(1)) else {
        return false;
    };
    let Some(&condition) = graph.node_inputs(node).first() else {
        return false;
    };
    let outputs = graph.node_outputs(node).to_vec();
    let then_outputs = graph.block_outputs(then_block).to_vec();
    let else_outputs = graph.block_outputs(else_block).to_vec();
    if then_outputs.len() != outputs.len() || else_outputs.len() != outputs.len() {
        return false;
    }
    let mut changed = false;
    // "x and True", "x or False": an output that is True exactly when the condition is.
    for (index, &output) in outputs.iter().enumerate() {
        if graph.value_type(output) != &Type::Bool {
            continue;
        }
        let then_true = constant_bool(graph, then_outputs[index]).unwrap_or(false);
        let else_false = !constant_bool(graph, else_outputs[index]).unwrap_or(true);
        if then_true && else_false {
            graph.replace_all_uses_with(output, condition);
            changed = true;
        }
    }
    // An optional output both of whose branch values are not optional.
    for (index, &output) in outputs.iter().enumerate() {
        let then_type = graph.value_type(then_outputs[index]).clone();
        let else_type = graph.value_type(else_outputs[index]).clone();
        let branches_not_optional =
            !matches!(then_type, Type::Optional(_)) && !matches!(else_type, Type::Optional(_));
        if branches_not_optional && matches!(graph.value_type(output), Type::Optional(_)) {
            if let Some(unified) = unify_types(&then_type, &else_type) {
                graph.set_value_type(output, unified);
                changed = true;
            }
        }
    }
    changed
}

/// PyTorch's `checkArithNode`: for a binary node on two ints, the constant operand, moved
/// to the second place first for `mul` and `add` when it was the first.
fn check_arith_node(graph: &mut Graph, node: NodeId) -> Option<i64> {
    let inputs = graph.node_inputs(node).to_vec();
    if inputs.len() != 2
        || graph.value_type(inputs[0]) != &Type::Int
        || graph.value_type(inputs[1]) != &Type::Int
    {
        return None;
    }
    let kind = graph.kind(node);
    if kind.is("aten::mul") || kind.is("aten::add") {
        if let Some(first) = constant_int(graph, inputs[0]) {
            // Two inputs always form a permutation; the error case cannot arise.
            graph.permute_node_inputs(node, &[1, 0]).ok()?;
            return Some(first);
        }
    }
    constant_int(graph, inputs[1])
}

fn simplify_mul_or_div(graph: &mut Graph, node: NodeId) -> bool {
    if check_arith_node(graph, node) != Some(1) {
        return false;
    }
    let Some(output) = single_output(graph, node) else {
        return false;
    };
    let kept = graph.node_inputs(node)[0];
    graph.replace_all_uses_with(output, kept);
    true
}

fn simplify_add_or_sub(graph: &mut Graph, node: NodeId) -> bool {
    let Some(constant) = check_arith_node(graph, node) else {
        return false;
    };
    let Some(output) = single_output(graph, node) else {
        return false;
    };
    let operand = graph.node_inputs(node)[0];
    if constant == 0 {
        graph.replace_all_uses_with(output, operand);
        return true;
    }
    let Some(dependency) = graph.producer(operand) else {
        return false;
    };
    let dependency_kind = graph.kind(dependency).as_str().to_string();
    if dependency_kind != "aten::add" && dependency_kind != "aten::sub" {
        return false;
    }
    let Some(delta) = check_arith_node(graph, dependency) else {
        return false;
    };
    let merged = if graph.kind(node).as_str() == dependency_kind {
        constant.wrapping_add(delta)
    } else {
        constant.wrapping_sub(delta)
    };
    let base = graph.node_inputs(dependency)[0];
    if merged == 0 {
        graph.replace_all_uses_with(output, base);
    } else {
        graph.replace_node_input(node, 0, base);
        let merged_constant =
            insert_constant_before(graph, node, Some(AttributeValue::Int(merged)), Type::Int);
        graph.replace_node_input(node, 1, merged_constant);
    }
    true
}
