//! Dict operators for every key type PyTorch supports (str, int, bool, float, Tensor;
//! complex keys excepted), PyTorch's `CREATE_DICT_OPS` schemas. Dicts keep insertion order
//! and are shared by reference, so mutating ops change every alias.

use std::sync::Arc;

use ferrojit_ir::Type;

use super::{pop_array, push, KernelTableEntry};
use crate::error::{Result, RuntimeError};
use crate::ivalue::{DictValue, IValue};
use crate::registry::Stack;

fn key_error(key: &IValue) -> RuntimeError {
    RuntimeError::KeyError(key.to_string())
}

fn dict_len(stack: &mut Stack) -> Result<()> {
    let [dict] = pop_array::<1>(stack)?;
    push(stack, dict.to_dict()?.len() as i64)
}

fn dict_keys(stack: &mut Stack) -> Result<()> {
    let [dict] = pop_array::<1>(stack)?;
    let dict = dict.to_dict()?;
    let keys = dict.entries().into_iter().map(|(k, _)| k).collect();
    push(stack, IValue::list(dict.key_type().clone(), keys))
}

fn dict_values(stack: &mut Stack) -> Result<()> {
    let [dict] = pop_array::<1>(stack)?;
    let dict = dict.to_dict()?;
    let values = dict.entries().into_iter().map(|(_, v)| v).collect();
    push(stack, IValue::list(dict.value_type().clone(), values))
}

fn dict_items(stack: &mut Stack) -> Result<()> {
    let [dict] = pop_array::<1>(stack)?;
    let dict = dict.to_dict()?;
    let element = Type::Tuple(vec![dict.key_type().clone(), dict.value_type().clone()]);
    let items = dict
        .entries()
        .into_iter()
        .map(|(k, v)| IValue::tuple(vec![k, v]))
        .collect();
    push(stack, IValue::list(element, items))
}

fn dict_get_item(stack: &mut Stack) -> Result<()> {
    let [dict, key] = pop_array::<2>(stack)?;
    let value = dict.to_dict()?.get(&key).ok_or_else(|| key_error(&key))?;
    push(stack, value)
}

fn dict_get(stack: &mut Stack) -> Result<()> {
    let [dict, key] = pop_array::<2>(stack)?;
    let value = dict.to_dict()?.get(&key).unwrap_or(IValue::None);
    push(stack, value)
}

fn dict_get_default(stack: &mut Stack) -> Result<()> {
    let [dict, key, default] = pop_array::<3>(stack)?;
    let value = dict.to_dict()?.get(&key).unwrap_or(default);
    push(stack, value)
}

fn dict_set_default(stack: &mut Stack) -> Result<()> {
    let [dict, key, default] = pop_array::<3>(stack)?;
    let dict = dict.to_dict()?;
    let value = match dict.get(&key) {
        Some(existing) => existing,
        None => {
            dict.insert(key, default.clone());
            default
        }
    };
    push(stack, value)
}

fn dict_delete(stack: &mut Stack) -> Result<()> {
    let [dict, key] = pop_array::<2>(stack)?;
    dict.to_dict()?
        .remove(&key)
        .ok_or_else(|| key_error(&key))?;
    Ok(())
}

fn dict_pop(stack: &mut Stack) -> Result<()> {
    let [dict, key] = pop_array::<2>(stack)?;
    let value = dict
        .to_dict()?
        .remove(&key)
        .ok_or_else(|| key_error(&key))?;
    push(stack, value)
}

fn dict_pop_default(stack: &mut Stack) -> Result<()> {
    let [dict, key, default] = pop_array::<3>(stack)?;
    let value = dict.to_dict()?.remove(&key).unwrap_or(default);
    push(stack, value)
}

fn dict_pop_item(stack: &mut Stack) -> Result<()> {
    let [dict] = pop_array::<1>(stack)?;
    let dict = dict.to_dict()?;
    let (key, value) = dict
        .entries()
        .into_iter()
        .next()
        .ok_or_else(|| RuntimeError::Other("popitem(): dictionary is empty".to_string()))?;
    dict.remove(&key);
    push(stack, IValue::tuple(vec![key, value]))
}

fn dict_clear(stack: &mut Stack) -> Result<()> {
    let [dict] = pop_array::<1>(stack)?;
    dict.to_dict()?.clear();
    Ok(())
}

fn dict_update(stack: &mut Stack) -> Result<()> {
    let [dict, other] = pop_array::<2>(stack)?;
    let entries = other.to_dict()?.entries();
    let dict = dict.to_dict()?;
    for (key, value) in entries {
        dict.insert(key, value);
    }
    Ok(())
}

fn copy_dict(dict: &DictValue) -> Arc<DictValue> {
    let copy = DictValue::new(dict.key_type().clone(), dict.value_type().clone());
    for (key, value) in dict.entries() {
        copy.insert(key, value);
    }
    copy
}

fn dict_copy(stack: &mut Stack) -> Result<()> {
    let [dict] = pop_array::<1>(stack)?;
    let copy = copy_dict(dict.to_dict()?);
    push(stack, IValue::Dict(copy))
}

fn dict_contains(stack: &mut Stack) -> Result<()> {
    let [dict, key] = pop_array::<2>(stack)?;
    push(stack, dict.to_dict()?.contains(&key))
}

fn dict_set_item(stack: &mut Stack) -> Result<()> {
    let [dict, key, value] = pop_array::<3>(stack)?;
    dict.to_dict()?.insert(key, value);
    Ok(())
}

/// `dict(list_of_pairs)`.
fn dict_from_list(stack: &mut Stack) -> Result<()> {
    let [list] = pop_array::<1>(stack)?;
    let list = list.to_list()?;
    let (key_type, value_type) = match list.element_type() {
        Type::Tuple(elements) if elements.len() == 2 => (elements[0].clone(), elements[1].clone()),
        other => {
            return Err(RuntimeError::type_mismatch(
                "a list of 2-tuples",
                format!("{other}[]"),
                "dict()",
            ))
        }
    };
    let dict = DictValue::new(key_type, value_type);
    for item in list.to_vec() {
        let tuple = item.to_tuple()?;
        match tuple.items.as_slice() {
            [key, value] => dict.insert(key.clone(), value.clone()),
            _ => {
                return Err(RuntimeError::ValueError(
                    "dictionary update sequence element has the wrong length".to_string(),
                ))
            }
        }
    }
    push(stack, IValue::Dict(dict))
}

/// `dict()` without arguments: PyTorch types it `Dict[str, Tensor]`.
fn empty_dict(stack: &mut Stack) -> Result<()> {
    push(stack, IValue::Dict(DictValue::new(Type::Str, Type::Tensor)))
}

macro_rules! dict_ops_for_key {
    ($table:ident, $key:literal) => {
        $table.extend_from_slice(&[
            (
                concat!("aten::len.Dict_", $key, "(Dict(", $key, ", t) self) -> int"),
                dict_len as crate::registry::KernelFn,
            ),
            (
                concat!(
                    "aten::keys.",
                    $key,
                    "(Dict(",
                    $key,
                    ", t) self) -> ",
                    $key,
                    "[](*)"
                ),
                dict_keys,
            ),
            (
                concat!(
                    "aten::values.",
                    $key,
                    "(Dict(",
                    $key,
                    ", t) self) -> t[](*)"
                ),
                dict_values,
            ),
            (
                concat!(
                    "aten::__getitem__.Dict_",
                    $key,
                    "(Dict(",
                    $key,
                    ", t) self, ",
                    $key,
                    " key) -> t(*)"
                ),
                dict_get_item,
            ),
            (
                concat!(
                    "aten::get.",
                    $key,
                    "(Dict(",
                    $key,
                    ", t) self, ",
                    $key,
                    " key) -> t(*)?"
                ),
                dict_get,
            ),
            (
                concat!(
                    "aten::get.default_",
                    $key,
                    "(Dict(",
                    $key,
                    ", t) self, ",
                    $key,
                    " key, t default_value) -> t(*)"
                ),
                dict_get_default,
            ),
            (
                concat!(
                    "aten::setdefault.",
                    $key,
                    "(Dict(",
                    $key,
                    ", t)(a!) self, ",
                    $key,
                    "(b -> *) key, t(c -> *) default_value) -> t(*)"
                ),
                dict_set_default,
            ),
            (
                concat!(
                    "aten::Delete.Dict_",
                    $key,
                    "(Dict(",
                    $key,
                    ", t)(a!) self, ",
                    $key,
                    " key) -> ()"
                ),
                dict_delete,
            ),
            (
                concat!(
                    "aten::pop.Dict_",
                    $key,
                    "(Dict(",
                    $key,
                    ", t)(a!) self, ",
                    $key,
                    " key) -> t(*)"
                ),
                dict_pop,
            ),
            (
                concat!(
                    "aten::pop.Dict_default_",
                    $key,
                    "(Dict(",
                    $key,
                    ", t)(a!) self, ",
                    $key,
                    " key, t default_value) -> t(*)"
                ),
                dict_pop_default,
            ),
            (
                concat!(
                    "aten::popitem.",
                    $key,
                    "(Dict(",
                    $key,
                    ", t)(a!) self) -> ((",
                    $key,
                    ", t))"
                ),
                dict_pop_item,
            ),
            (
                concat!("aten::clear.", $key, "(Dict(", $key, ", t)(a!) self) -> ()"),
                dict_clear,
            ),
            (
                concat!(
                    "aten::update.",
                    $key,
                    "(Dict(",
                    $key,
                    ", t)(a!) self, Dict(",
                    $key,
                    ", t)(a!) to_add) -> ()"
                ),
                dict_update,
            ),
            (
                concat!(
                    "aten::items.",
                    $key,
                    "(Dict(",
                    $key,
                    ", t) self) -> ((",
                    $key,
                    ", t)[])"
                ),
                dict_items,
            ),
            (
                concat!(
                    "aten::copy.Dict_",
                    $key,
                    "(Dict(",
                    $key,
                    ", t)(a) self) -> Dict(",
                    $key,
                    ", t)"
                ),
                dict_copy,
            ),
            (
                concat!(
                    "aten::__contains__.",
                    $key,
                    "(Dict(",
                    $key,
                    ", t) dict, ",
                    $key,
                    " key) -> bool"
                ),
                dict_contains,
            ),
            (
                concat!(
                    "aten::_set_item.",
                    $key,
                    "(Dict(",
                    $key,
                    ", t)(a!) l, ",
                    $key,
                    "(b -> *) idx, t(c -> *) v) -> ()"
                ),
                dict_set_item,
            ),
            (
                concat!(
                    "aten::dict.",
                    $key,
                    "((",
                    $key,
                    ", tVal)[] inputs) -> Dict(",
                    $key,
                    ", tVal)"
                ),
                dict_from_list,
            ),
            (
                concat!(
                    "aten::dict.Dict_",
                    $key,
                    "(Dict(",
                    $key,
                    ", t)(a) self) -> Dict(",
                    $key,
                    ", t)"
                ),
                dict_copy,
            ),
        ]);
    };
}

/// Dict operators for every key type PyTorch supports (complex keys excepted).
pub fn table() -> Vec<KernelTableEntry> {
    let mut table: Vec<KernelTableEntry> = vec![("aten::dict() -> Dict(str, Tensor)", empty_dict)];
    dict_ops_for_key!(table, "str");
    dict_ops_for_key!(table, "int");
    dict_ops_for_key!(table, "bool");
    dict_ops_for_key!(table, "float");
    dict_ops_for_key!(table, "Tensor");
    table
}
