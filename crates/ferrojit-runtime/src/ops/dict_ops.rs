//! Dict operators for every key type PyTorch supports (str, int, bool, float, Tensor;
//! complex keys excepted), PyTorch's `CREATE_DICT_OPS` schemas, as typed kernels. Dicts keep
//! insertion order and are shared by reference (`Arc<DictValue>`), so mutating ops change
//! every alias. Keys and values are generic (`IValue`): the dict compares keys itself.

use std::sync::Arc;

use ferrojit_ir::Type;

use super::binding::typed;
use crate::error::{Result, RuntimeError};
use crate::ivalue::{DictValue, IValue, ListValue};
use crate::opdef::OperatorDeclaration;

/// A dict argument, shared with the caller.
type Dict = Arc<DictValue>;

fn key_error(key: &IValue) -> RuntimeError {
    RuntimeError::KeyError(key.to_string())
}

fn dict_len(dict: Dict) -> Result<i64> {
    Ok(dict.len() as i64)
}

fn dict_keys(dict: Dict) -> Result<IValue> {
    let keys = dict.entries().into_iter().map(|(k, _)| k).collect();
    Ok(IValue::list(dict.key_type().clone(), keys))
}

fn dict_values(dict: Dict) -> Result<IValue> {
    let values = dict.entries().into_iter().map(|(_, v)| v).collect();
    Ok(IValue::list(dict.value_type().clone(), values))
}

fn dict_items(dict: Dict) -> Result<IValue> {
    let element = Type::Tuple(vec![dict.key_type().clone(), dict.value_type().clone()]);
    let items = dict
        .entries()
        .into_iter()
        .map(|(k, v)| IValue::tuple(vec![k, v]))
        .collect();
    Ok(IValue::list(element, items))
}

fn dict_get_item(dict: Dict, key: IValue) -> Result<IValue> {
    dict.get(&key).ok_or_else(|| key_error(&key))
}

fn dict_get(dict: Dict, key: IValue) -> Result<IValue> {
    Ok(dict.get(&key).unwrap_or(IValue::None))
}

fn dict_get_default(dict: Dict, key: IValue, default: IValue) -> Result<IValue> {
    Ok(dict.get(&key).unwrap_or(default))
}

fn dict_set_default(dict: Dict, key: IValue, default: IValue) -> Result<IValue> {
    Ok(match dict.get(&key) {
        Some(existing) => existing,
        None => {
            dict.insert(key, default.clone());
            default
        }
    })
}

fn dict_delete(dict: Dict, key: IValue) -> Result<()> {
    dict.remove(&key).ok_or_else(|| key_error(&key))?;
    Ok(())
}

fn dict_pop(dict: Dict, key: IValue) -> Result<IValue> {
    dict.remove(&key).ok_or_else(|| key_error(&key))
}

fn dict_pop_default(dict: Dict, key: IValue, default: IValue) -> Result<IValue> {
    Ok(dict.remove(&key).unwrap_or(default))
}

fn dict_pop_item(dict: Dict) -> Result<IValue> {
    let (key, value) = dict
        .entries()
        .into_iter()
        .next()
        .ok_or_else(|| RuntimeError::Other("popitem(): dictionary is empty".to_string()))?;
    dict.remove(&key);
    Ok(IValue::tuple(vec![key, value]))
}

fn dict_clear(dict: Dict) -> Result<()> {
    dict.clear();
    Ok(())
}

fn dict_update(dict: Dict, other: Dict) -> Result<()> {
    // Snapshot first: `d.update(d)` must not read while writing.
    for (key, value) in other.entries() {
        dict.insert(key, value);
    }
    Ok(())
}

fn dict_copy(dict: Dict) -> Result<IValue> {
    let copy = DictValue::new(dict.key_type().clone(), dict.value_type().clone());
    for (key, value) in dict.entries() {
        copy.insert(key, value);
    }
    Ok(IValue::Dict(copy))
}

fn dict_contains(dict: Dict, key: IValue) -> Result<bool> {
    Ok(dict.contains(&key))
}

fn dict_set_item(dict: Dict, key: IValue, value: IValue) -> Result<()> {
    dict.insert(key, value);
    Ok(())
}

/// `dict(list_of_pairs)`.
fn dict_from_list(list: Arc<ListValue>) -> Result<IValue> {
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
    Ok(IValue::Dict(dict))
}

/// `dict()` without arguments: PyTorch types it `Dict[str, Tensor]`.
fn empty_dict() -> Result<IValue> {
    Ok(IValue::Dict(DictValue::new(Type::Str, Type::Tensor)))
}

/// The dict operators of one key type (`str`, `int`, ...), in PyTorch's order.
pub(crate) fn declarations_for_key(key: &str) -> Vec<OperatorDeclaration> {
    vec![
        typed(&format!("aten::len.Dict_{key}(Dict({key}, t) self) -> int"), dict_len),
        typed(&format!("aten::keys.{key}(Dict({key}, t) self) -> {key}[](*)"), dict_keys),
        typed(&format!("aten::values.{key}(Dict({key}, t) self) -> t[](*)"), dict_values),
        typed(
            &format!("aten::__getitem__.Dict_{key}(Dict({key}, t) self, {key} key) -> t(*)"),
            dict_get_item,
        ),
        typed(&format!("aten::get.{key}(Dict({key}, t) self, {key} key) -> t(*)?"), dict_get),
        typed(
            &format!(
                "aten::get.default_{key}(Dict({key}, t) self, {key} key, t default_value) -> t(*)"
            ),
            dict_get_default,
        ),
        typed(
            &format!(
                "aten::setdefault.{key}(Dict({key}, t)(a!) self, {key}(b -> *) key, t(c -> *) default_value) -> t(*)"
            ),
            dict_set_default,
        ),
        typed(
            &format!("aten::Delete.Dict_{key}(Dict({key}, t)(a!) self, {key} key) -> ()"),
            dict_delete,
        ),
        typed(
            &format!("aten::pop.Dict_{key}(Dict({key}, t)(a!) self, {key} key) -> t(*)"),
            dict_pop,
        ),
        typed(
            &format!(
                "aten::pop.Dict_default_{key}(Dict({key}, t)(a!) self, {key} key, t default_value) -> t(*)"
            ),
            dict_pop_default,
        ),
        typed(
            &format!("aten::popitem.{key}(Dict({key}, t)(a!) self) -> (({key}, t))"),
            dict_pop_item,
        ),
        typed(&format!("aten::clear.{key}(Dict({key}, t)(a!) self) -> ()"), dict_clear),
        typed(
            &format!(
                "aten::update.{key}(Dict({key}, t)(a!) self, Dict({key}, t)(a!) to_add) -> ()"
            ),
            dict_update,
        ),
        typed(&format!("aten::items.{key}(Dict({key}, t) self) -> (({key}, t)[])"), dict_items),
        typed(
            &format!("aten::copy.Dict_{key}(Dict({key}, t)(a) self) -> Dict({key}, t)"),
            dict_copy,
        ),
        typed(
            &format!("aten::__contains__.{key}(Dict({key}, t) dict, {key} key) -> bool"),
            dict_contains,
        ),
        typed(
            &format!(
                "aten::_set_item.{key}(Dict({key}, t)(a!) l, {key}(b -> *) idx, t(c -> *) v) -> ()"
            ),
            dict_set_item,
        ),
        typed(
            &format!("aten::dict.{key}(({key}, tVal)[] inputs) -> Dict({key}, tVal)"),
            dict_from_list,
        ),
        typed(
            &format!("aten::dict.Dict_{key}(Dict({key}, t)(a) self) -> Dict({key}, t)"),
            dict_copy,
        ),
    ]
}

/// Dict operators for every key type PyTorch supports (complex keys excepted).
pub fn declarations() -> Vec<OperatorDeclaration> {
    let mut declarations = vec![typed("aten::dict() -> Dict(str, Tensor)", empty_dict)];
    for key in ["str", "int", "bool", "float", "Tensor"] {
        declarations.extend(declarations_for_key(key));
    }
    declarations
}
