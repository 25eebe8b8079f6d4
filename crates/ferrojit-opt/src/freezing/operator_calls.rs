//! What the frozen-graph folds share: reading constant inputs, running one of the runtime's
//! operators on constant tensors (so folded weights are computed by ferrojit's own kernels,
//! operation by operation in PyTorch's order), and inserting the results as constants.

use std::sync::Arc;

use ferrojit_ir::{AttributeValue, Graph, InsertPoint, NodeId, Prim, Type, ValueId};
use ferrojit_runtime::{IValue, OperatorRegistry};
use ferrojit_tensor::{DType, Tensor};

use crate::constant_insertion::{constant_value, tensor_type};

/// Runs the operator `full_name` (`aten::add.Tensor`) on `arguments`, filling the
/// arguments left out with the schema's defaults; `Err` says which operator failed and why.
pub fn call_operator(full_name: &str, mut arguments: Vec<IValue>) -> Result<IValue, String> {
    let registry = OperatorRegistry::global();
    let operator = registry
        .lookup(full_name)
        .ok_or_else(|| format!("the runtime has no operator {full_name}"))?;
    for argument in operator.schema.arguments.iter().skip(arguments.len()) {
        let default = argument
            .default
            .as_ref()
            .ok_or_else(|| format!("{full_name}: argument '{}' has no default", argument.name))?;
        arguments.push(
            ferrojit_runtime::interpreter::code::default_value(default, &argument.ty)
                .map_err(|error| format!("{full_name}: {error}"))?,
        );
    }
    let mut stack = arguments;
    (operator.kernel)(&mut stack).map_err(|error| format!("{full_name}: {error}"))?;
    stack
        .pop()
        .ok_or_else(|| format!("{full_name} returned nothing"))
}

/// [`call_operator`] for operators returning a tensor.
pub fn call_tensor_operator(full_name: &str, arguments: Vec<IValue>) -> Result<Tensor, String> {
    let result = call_operator(full_name, arguments)?;
    let tensor = result
        .to_tensor()
        .map_err(|error| format!("{full_name}: {error}"))?;
    Ok(tensor.as_ref().clone())
}

/// A tensor as an operator argument.
pub fn tensor_argument(tensor: &Tensor) -> IValue {
    IValue::from(tensor.clone())
}

/// `tensor.to(dtype)` through the runtime's `aten::to.dtype`.
pub fn to_dtype(tensor: &Tensor, dtype: DType) -> Result<Tensor, String> {
    if tensor.dtype() == dtype {
        return Ok(tensor.clone());
    }
    Ok(tensor.to_dtype(dtype))
}

/// Whether `value` comes from a `prim::Constant`.
pub fn is_constant(graph: &Graph, value: ValueId) -> bool {
    graph
        .producer(value)
        .is_some_and(|node| graph.kind(node).is_prim(Prim::Constant))
}

/// PyTorch's `nonConstantParameters`: whether any input after the first is not a constant.
pub fn has_non_constant_parameters(graph: &Graph, node: NodeId) -> bool {
    graph
        .node_inputs(node)
        .iter()
        .skip(1)
        .any(|&input| !is_constant(graph, input))
}

/// The tensor a constant holds.
pub fn constant_tensor(graph: &Graph, value: ValueId) -> Option<Arc<Tensor>> {
    constant_value(graph, value)?.to_tensor().ok()
}

/// Whether `value` is a `None` constant (or typed `NoneType`).
pub fn is_none(graph: &Graph, value: ValueId) -> bool {
    matches!(graph.value_type(value), Type::NoneType)
        || matches!(constant_value(graph, value), Some(IValue::None))
}

/// The number a constant holds, as a double.
pub fn constant_double(graph: &Graph, value: ValueId) -> Option<f64> {
    match constant_value(graph, value)? {
        IValue::Double(number) => Some(number),
        IValue::Int(number) => Some(number as f64),
        _ => None,
    }
}

/// The boolean a constant holds.
pub fn constant_bool(graph: &Graph, value: ValueId) -> Option<bool> {
    match constant_value(graph, value)? {
        IValue::Bool(flag) => Some(flag),
        _ => None,
    }
}

/// Inserts a constant holding `tensor` just before `anchor`, named `name` when given.
pub fn insert_tensor_constant_before(
    graph: &mut Graph,
    anchor: NodeId,
    tensor: Tensor,
    name: Option<&str>,
) -> ValueId {
    let ty = tensor_type(&tensor);
    graph.set_insert_point(InsertPoint::Before(anchor));
    let value = graph.insert_constant(Some(AttributeValue::Tensor(tensor)), ty);
    let top = graph.top_block();
    graph.set_insert_point(InsertPoint::EndOf(top));
    if let Some(name) = name {
        graph.set_debug_name(value, name);
    }
    value
}

/// A value's debug name, or its number as PyTorch's `debugName()` gives it.
pub fn debug_name(graph: &Graph, value: ValueId) -> String {
    graph.value_display_name(value)
}

/// PyTorch's `tensor.is_floating_point()`.
pub fn is_floating_point(tensor: &Tensor) -> bool {
    tensor.dtype().is_floating_point()
}

/// How many uses of `value` read its values, not counting `aten::dim` and `aten::size`,
/// which read only its shape. A fold rewrites a result's values but keeps its shape, so a
/// result whose other uses only ask its rank (a batch norm's input check, inlined from
/// `_check_input_dim`) can still fold; PyTorch's graphs have no such uses left by then.
pub fn value_reading_uses(graph: &Graph, value: ValueId) -> usize {
    graph
        .value_uses(value)
        .iter()
        .filter(|use_| !matches!(graph.kind(use_.node).as_str(), "aten::dim" | "aten::size"))
        .count()
}

/// Runs a fold on every node of `graph`, nested blocks first at each node, then removes what
/// the folds left dead (PyTorch's fold passes walk and clean up the same way). `Ok(true)`
/// when some fold changed the graph.
pub fn fold_at_every_node(
    graph: &mut Graph,
    fold_at: fn(&mut Graph, NodeId) -> Result<bool, String>,
) -> Result<bool, String> {
    fn fold_in_block(
        graph: &mut Graph,
        block: ferrojit_ir::BlockId,
        fold_at: fn(&mut Graph, NodeId) -> Result<bool, String>,
    ) -> Result<bool, String> {
        let mut changed = false;
        for node in graph.block_nodes(block) {
            for nested in graph.node_blocks(node).to_vec() {
                changed |= fold_in_block(graph, nested, fold_at)?;
            }
            changed |= fold_at(graph, node)?;
        }
        Ok(changed)
    }
    let top = graph.top_block();
    let changed = fold_in_block(graph, top, fold_at)?;
    crate::dead_code_elimination::eliminate_dead_code(graph);
    Ok(changed)
}
