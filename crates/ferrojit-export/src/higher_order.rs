//! The higher-order operators that call an operator or a subgraph on behalf of the graph:
//! `invoke_subgraph` (a region the program calls more than once, kept as one subgraph),
//! `with_effects` (an effectful operator threaded on a token, so its calls keep their order),
//! and `auto_functionalized` / `auto_functionalized_v2` (a custom operator that mutates its
//! arguments, run on copies that are returned as new values). Their semantics follow
//! PyTorch 2.15's dense implementations in `torch/_higher_order_ops/`.

use crate::error::{ExportError, Result};
use crate::fallback::find_operator;
use crate::model::{Argument, Graph, Node};
use crate::run::{
    argument_value, classify_operator, run_graph_at_depth, wrap_number_for_tensor, Environment,
};
use ferrojit_ir::binding::{bind_arguments, ArgumentSource};
use ferrojit_ir::Type;
use ferrojit_runtime::interpreter::code::default_value;
use ferrojit_runtime::{IValue, Operator};

/// The higher-order operators this module runs.
pub const CALLING_HIGHER_ORDER_OPERATORS: &[&str] = &[
    "invoke_subgraph",
    "with_effects",
    "auto_functionalized",
    "auto_functionalized_v2",
];

fn unsupported(message: impl Into<String>) -> ExportError {
    ExportError::Unsupported(message.into())
}

/// The operator an `as_operator` argument names (`torch.ops.mylib.op.default`).
pub(crate) fn operator_argument(node: &Node, position: usize) -> Result<&'static Operator> {
    let Some(Argument::Operator(target)) = node.inputs.get(position).map(|input| &input.arg) else {
        return Err(ExportError::MissingReference {
            kind: "operator argument",
            name: format!("{} #{position}", node.target),
        });
    };
    let full_name = classify_operator(target)
        .ok_or_else(|| unsupported(format!("operator argument '{target}'")))?;
    find_operator(&full_name)
        .ok_or_else(|| unsupported(format!("operator {full_name} is not registered")))
}

/// `invoke_subgraph(subgraph, identifier, *operands)`: the subgraph's outputs.
pub(crate) fn invoke_subgraph(
    node: &Node,
    environment: &Environment,
    depth: usize,
) -> Result<Vec<IValue>> {
    let Some(Argument::Graph(subgraph)) = node.inputs.first().map(|input| &input.arg) else {
        return Err(ExportError::MissingReference {
            kind: "subgraph argument",
            name: format!("{} #0", node.target),
        });
    };
    let operands = node
        .inputs
        .iter()
        .skip(2)
        .map(|input| argument_value(&input.arg, None, environment))
        .collect::<Result<Vec<_>>>()?;
    run_subgraph(&subgraph.graph, operands, depth)
}

fn run_subgraph(graph: &Graph, inputs: Vec<IValue>, depth: usize) -> Result<Vec<IValue>> {
    run_graph_at_depth(graph, inputs, depth + 1)
}

/// `with_effects(token, op, *args, **kwargs)`: `(new token, *op's results)`. ferrojit runs
/// nodes in graph order, which is the order the tokens impose, so a token carries no data.
pub(crate) fn with_effects(node: &Node, environment: &Environment) -> Result<Vec<IValue>> {
    let operator = operator_argument(node, 1)?;
    let mut positional = Vec::new();
    let mut keywords = Vec::new();
    for input in node.inputs.iter().skip(2) {
        let value = argument_value(&input.arg, None, environment)?;
        if input.name.is_empty() {
            positional.push(value);
        } else {
            keywords.push((input.name.clone(), value));
        }
    }
    let results = call_operator(operator, positional, keywords)?;
    let mut outputs = vec![IValue::None];
    outputs.extend(results_or_none(operator, results));
    Ok(outputs)
}

/// An operator's results as the higher-order operators return them: `None` for an operator
/// that returns nothing, else its results in order.
fn results_or_none(operator: &Operator, results: Vec<IValue>) -> Vec<IValue> {
    if operator.schema.returns.is_empty() {
        vec![IValue::None]
    } else {
        results
    }
}

/// The keyword arguments of an `auto_functionalized` node (everything after the operator).
fn keyword_values(node: &Node, environment: &Environment) -> Result<Vec<(String, IValue)>> {
    node.inputs
        .iter()
        .skip(1)
        .map(|input| {
            if input.name.is_empty() {
                return Err(unsupported(format!(
                    "{} with a positional argument after the operator",
                    node.target
                )));
            }
            Ok((
                input.name.clone(),
                argument_value(&input.arg, None, environment)?,
            ))
        })
        .collect()
}

/// The names of the arguments the operator writes (`Tensor(a!) x`), in schema order.
fn mutable_arguments(operator: &Operator) -> Vec<(String, bool)> {
    operator
        .schema
        .arguments
        .iter()
        .filter(|argument| {
            argument
                .alias_info
                .as_ref()
                .is_some_and(|alias| alias.is_write)
        })
        .map(|argument| {
            let is_list = match &argument.ty {
                Type::List(_) => true,
                Type::Optional(inner) => matches!(inner.as_ref(), Type::List(_)),
                _ => false,
            };
            (argument.name.clone(), is_list)
        })
        .collect()
}

fn call_named(full_name: &str, arguments: Vec<IValue>) -> Result<IValue> {
    let operator = find_operator(full_name)
        .ok_or_else(|| unsupported(format!("operator {full_name} is not registered")))?;
    call_operator(operator, arguments, Vec::new())?
        .into_iter()
        .next()
        .ok_or_else(|| unsupported(format!("{full_name} returned nothing")))
}

/// A copy of a tensor argument (`None` stays `None`; a list is copied element by element).
fn copy_value(value: &IValue) -> Result<IValue> {
    Ok(match value {
        IValue::None => IValue::None,
        IValue::List(list) => {
            let items = list
                .to_vec()
                .iter()
                .map(copy_value)
                .collect::<Result<Vec<_>>>()?;
            IValue::list(Type::Optional(Box::new(Type::Tensor)), items)
        }
        tensor => call_named("aten::clone", vec![tensor.clone()])?,
    })
}

/// `auto_functionalized(op, **kwargs)`: runs `op` with each argument it writes replaced by
/// a copy, and returns `(op's results, *the copies)`.
pub(crate) fn auto_functionalized(node: &Node, environment: &Environment) -> Result<Vec<IValue>> {
    let operator = operator_argument(node, 0)?;
    let mut keywords = keyword_values(node, environment)?;
    let mut copies = Vec::new();
    for (name, _) in mutable_arguments(operator) {
        let slot = keywords
            .iter_mut()
            .find(|(keyword, _)| *keyword == name)
            .ok_or_else(|| {
                unsupported(format!(
                    "auto_functionalized has no value for the mutated argument '{name}'"
                ))
            })?;
        slot.1 = copy_value(&slot.1)?;
        copies.push(slot.1.clone());
    }
    let results = call_operator(operator, Vec::new(), keywords)?;
    let mut outputs = results_or_none(operator, results);
    outputs.extend(copies);
    Ok(outputs)
}

/// `auto_functionalized_v2(op, _all_bases=[...], **kwargs)`: copies every base, rebuilds each
/// mutated argument as a view of its base's copy from the `_NAME_base_index`,
/// `_NAME_alias`, `_NAME_size`/`_stride`/`_storage_offset` or `_NAME_slice_dim`/`_start`/
/// `_end` keywords (`_NAME_length` and `_NAME_I_...` for a list), runs `op`, and returns
/// `(op's results, *the copied bases)`.
pub(crate) fn auto_functionalized_v2(
    node: &Node,
    environment: &Environment,
) -> Result<Vec<IValue>> {
    let operator = operator_argument(node, 0)?;
    let mut keywords = keyword_values(node, environment)?;
    let bases = match take_keyword(&mut keywords, "_all_bases") {
        Some(IValue::List(list)) => list.to_vec(),
        Some(IValue::None) | None => Vec::new(),
        Some(other) => {
            return Err(unsupported(format!(
                "_all_bases is a {}, not a list",
                other.tag_name()
            )))
        }
    };
    let copied_bases = bases.iter().map(copy_value).collect::<Result<Vec<_>>>()?;
    let mut operator_keywords = Vec::new();
    for (name, is_list) in mutable_arguments(operator) {
        let value = if is_list {
            match take_keyword(&mut keywords, &format!("_{name}_length")) {
                Some(IValue::Int(length)) => {
                    let length = usize::try_from(length)
                        .map_err(|_| unsupported(format!("_{name}_length {length}")))?;
                    let items = (0..length)
                        .map(|index| {
                            regenerate_view(
                                &mut keywords,
                                &format!("_{name}_{index}"),
                                &copied_bases,
                            )
                        })
                        .collect::<Result<Vec<_>>>()?;
                    IValue::list(Type::Optional(Box::new(Type::Tensor)), items)
                }
                _ => IValue::None,
            }
        } else {
            regenerate_view(&mut keywords, &format!("_{name}"), &copied_bases)?
        };
        operator_keywords.push((name, value));
    }
    operator_keywords.extend(keywords);
    let results = call_operator(operator, Vec::new(), operator_keywords)?;
    let mut outputs = results_or_none(operator, results);
    outputs.extend(copied_bases);
    Ok(outputs)
}

fn take_keyword(keywords: &mut Vec<(String, IValue)>, name: &str) -> Option<IValue> {
    let position = keywords.iter().position(|(keyword, _)| keyword == name)?;
    Some(keywords.remove(position).1)
}

/// One mutated argument of `auto_functionalized_v2`, rebuilt over the copied bases.
fn regenerate_view(
    keywords: &mut Vec<(String, IValue)>,
    prefix: &str,
    bases: &[IValue],
) -> Result<IValue> {
    let base_index = match take_keyword(keywords, &format!("{prefix}_base_index")) {
        None | Some(IValue::None) => return Ok(IValue::None),
        Some(IValue::Int(index)) => index,
        Some(other) => {
            return Err(unsupported(format!(
                "{prefix}_base_index is a {}",
                other.tag_name()
            )))
        }
    };
    let base = usize::try_from(base_index)
        .ok()
        .and_then(|index| bases.get(index))
        .cloned()
        .ok_or_else(|| ExportError::MissingReference {
            kind: "auto_functionalized_v2 base",
            name: format!("{prefix}_base_index {base_index} of {} bases", bases.len()),
        })?;
    if take_keyword(keywords, &format!("{prefix}_alias")).is_some() {
        return call_named("aten::alias", vec![base]);
    }
    if let Some(offset) = take_keyword(keywords, &format!("{prefix}_storage_offset")) {
        let size = take_keyword(keywords, &format!("{prefix}_size"))
            .ok_or_else(|| unsupported(format!("{prefix}_storage_offset without a size")))?;
        let stride = take_keyword(keywords, &format!("{prefix}_stride"))
            .ok_or_else(|| unsupported(format!("{prefix}_storage_offset without a stride")))?;
        return call_named("aten::as_strided", vec![base, size, stride, offset]);
    }
    if let Some(dim) = take_keyword(keywords, &format!("{prefix}_slice_dim")) {
        let start =
            take_keyword(keywords, &format!("{prefix}_slice_start")).unwrap_or(IValue::None);
        let end = take_keyword(keywords, &format!("{prefix}_slice_end")).unwrap_or(IValue::None);
        return call_named(
            "aten::slice.Tensor",
            vec![base, dim, start, end, IValue::Int(1)],
        );
    }
    Ok(base)
}

/// Calls `operator` with positional and keyword values bound to its schema (defaults filled
/// in, numbers wrapped where a tensor is taken, an int widened where a float is taken) and
/// returns what it pushed.
pub(crate) fn call_operator(
    operator: &Operator,
    positional: Vec<IValue>,
    keywords: Vec<(String, IValue)>,
) -> Result<Vec<IValue>> {
    let schema = &operator.schema;
    let names: Vec<&str> = keywords.iter().map(|(name, _)| name.as_str()).collect();
    let binding = bind_arguments(schema, positional.len(), &names, |_, _| false);
    if let Some(error) = binding.error {
        return Err(unsupported(format!(
            "arguments do not fit {schema}: {error}"
        )));
    }
    let mut stack = Vec::with_capacity(schema.arguments.len());
    for (formal, source) in schema.arguments.iter().zip(&binding.sources) {
        let value = match source {
            ArgumentSource::Positional(index) => positional
                .get(*index)
                .cloned()
                .ok_or_else(|| unsupported(format!("no positional value for '{}'", formal.name)))?,
            ArgumentSource::Keyword(index) => keywords[*index].1.clone(),
            ArgumentSource::Default => match &formal.default {
                Some(default) => default_value(default, &formal.ty)?,
                None => return Err(unsupported(format!("no value for '{}'", formal.name))),
            },
            ArgumentSource::PackedPositionals(_) => {
                return Err(unsupported(format!(
                    "packed positional arguments for '{}'",
                    formal.name
                )))
            }
        };
        let value = match (&formal.ty, value) {
            (Type::Float, IValue::Int(number)) => IValue::Double(number as f64),
            (_, value) => wrap_number_for_tensor(value, &formal.ty),
        };
        stack.push(value);
    }
    (operator.kernel)(&mut stack)?;
    Ok(stack)
}
