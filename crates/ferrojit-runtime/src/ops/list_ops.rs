//! List operators (generic over the element type `t`, or specialized per element type as in
//! PyTorch's register_prim_ops.cpp), as typed kernels, and `Tensor.tolist()`'s conversion.
//! Lists are shared by reference (`Arc<ListValue>`), so mutating ops change every alias, and
//! an operator that returns its list argument returns that very list. Dict operators are in
//! `dict_ops`.

use std::cmp::Ordering;
use std::sync::Arc;

use ferrojit_ir::Type;
use ferrojit_tensor::{DType, Tensor};

use super::binding::typed;
use super::{normalize_index, slice_indices};
use crate::error::{Result, RuntimeError};
use crate::ivalue::{IValue, ListValue};
use crate::opdef::OperatorDeclaration;

/// A list argument of any element type, shared with the caller.
type List = Arc<ListValue>;

fn index_error() -> RuntimeError {
    RuntimeError::IndexError("list index out of range".to_string())
}

/// A new list of `list`'s element type.
fn list_like(list: &ListValue, items: Vec<IValue>) -> IValue {
    IValue::List(ListValue::new(list.element_type().clone(), items))
}

fn len(list: List) -> Result<i64> {
    Ok(list.len() as i64)
}

fn get_item(list: List, index: i64) -> Result<IValue> {
    let items = list.read();
    let position = normalize_index(index, items.len()).ok_or_else(index_error)?;
    items.get(position).cloned().ok_or_else(index_error)
}

fn set_item(list: List, index: i64, value: IValue) -> Result<IValue> {
    {
        let mut items = list.write();
        let position = normalize_index(index, items.len()).ok_or_else(index_error)?;
        if let Some(slot) = items.get_mut(position) {
            *slot = value;
        }
    }
    Ok(IValue::List(list))
}

fn append(list: List, value: IValue) -> Result<IValue> {
    list.push(value);
    Ok(IValue::List(list))
}

fn extend(list: List, other: List) -> Result<()> {
    // Snapshot first: `l.extend(l)` must not read while writing.
    let extra = other.to_vec();
    list.write().extend(extra);
    Ok(())
}

fn insert(list: List, index: i64, value: IValue) -> Result<()> {
    let mut items = list.write();
    let len = items.len() as i64;
    // Python clamps insert positions instead of failing.
    let position = if index < 0 {
        index.saturating_add(len).max(0)
    } else {
        index.min(len)
    };
    items.insert(position as usize, value);
    Ok(())
}

fn pop(list: List, index: i64) -> Result<IValue> {
    let mut items = list.write();
    if items.is_empty() {
        return Err(RuntimeError::IndexError("pop from empty list".to_string()));
    }
    let position = normalize_index(index, items.len())
        .ok_or_else(|| RuntimeError::IndexError("pop index out of range".to_string()))?;
    Ok(items.remove(position))
}

fn clear(list: List) -> Result<()> {
    list.write().clear();
    Ok(())
}

fn delete(list: List, index: i64) -> Result<()> {
    let mut items = list.write();
    let position = normalize_index(index, items.len()).ok_or_else(|| {
        RuntimeError::IndexError("list assignment index out of range".to_string())
    })?;
    items.remove(position);
    Ok(())
}

fn reverse(list: List) -> Result<()> {
    list.write().reverse();
    Ok(())
}

/// `list.copy()`, `list(l)`: a new list with the same elements.
fn copy(list: List) -> Result<IValue> {
    Ok(list_like(&list, list.to_vec()))
}

fn concat(a: List, b: List) -> Result<IValue> {
    let mut items = a.to_vec();
    items.extend(b.to_vec());
    Ok(list_like(&a, items))
}

fn concat_in_place(a: List, b: List) -> Result<IValue> {
    let extra = b.to_vec();
    a.write().extend(extra);
    Ok(IValue::List(a))
}

fn slice(list: List, start: Option<i64>, end: Option<i64>, step: i64) -> Result<IValue> {
    let items = list.to_vec();
    let (first, step, count) = slice_indices(items.len(), start, end, step)?;
    let mut result = Vec::with_capacity(count);
    let mut position = first;
    for _ in 0..count {
        if let Some(item) = usize::try_from(position).ok().and_then(|p| items.get(p)) {
            result.push(item.clone());
        }
        position += step;
    }
    Ok(list_like(&list, result))
}

/// The most elements a list operation builds: `[0] * 10**12` fails instead of exhausting
/// memory.
pub(crate) const MAX_LIST_ELEMENTS: usize = 1 << 28;

/// The elements of `list` repeated `times` times (none for a negative count).
fn repeated_items(list: &ListValue, times: i64) -> Result<Vec<IValue>> {
    let items = list.to_vec();
    let times = usize::try_from(times).unwrap_or(0);
    let total = items.len().saturating_mul(times);
    if total > MAX_LIST_ELEMENTS {
        return Err(RuntimeError::Other(format!(
            "list repetition would create {total} elements (more than {MAX_LIST_ELEMENTS})"
        )));
    }
    let mut result = Vec::with_capacity(total);
    for _ in 0..times {
        result.extend(items.iter().cloned());
    }
    Ok(result)
}

fn mul_left(list: List, times: i64) -> Result<IValue> {
    Ok(list_like(&list, repeated_items(&list, times)?))
}

fn mul_right(times: i64, list: List) -> Result<IValue> {
    Ok(list_like(&list, repeated_items(&list, times)?))
}

fn mul_in_place(list: List, times: i64) -> Result<IValue> {
    let new_items = repeated_items(&list, times)?;
    *list.write() = new_items;
    Ok(IValue::List(list))
}

fn list_eq(a: List, b: List) -> Result<bool> {
    IValue::List(a).equals(&IValue::List(b))
}

fn list_ne(a: List, b: List) -> Result<bool> {
    Ok(!list_eq(a, b)?)
}

fn contains(list: List, item: IValue) -> Result<bool> {
    Ok(position_of(&list.to_vec(), &item)?.is_some())
}

fn sum_int(values: Vec<i64>) -> Result<i64> {
    Ok(values.into_iter().fold(0i64, |acc, v| acc.wrapping_add(v)))
}

fn sum_float(values: Vec<f64>) -> Result<f64> {
    Ok(values.into_iter().sum::<f64>())
}

fn extreme(list: &ListValue, want_max: bool) -> Result<IValue> {
    let items = list.to_vec();
    let mut best: Option<IValue> = None;
    for item in items {
        best = Some(match best {
            None => item,
            Some(current) => {
                let better = match (&item, &current) {
                    (IValue::Int(a), IValue::Int(b)) => (a > b) == want_max && a != b,
                    (IValue::Double(a), IValue::Double(b)) => {
                        if want_max {
                            a > b
                        } else {
                            a < b
                        }
                    }
                    (IValue::Bool(a), IValue::Bool(b)) => (a > b) == want_max && a != b,
                    _ => {
                        return Err(RuntimeError::type_mismatch(
                            "int, float or bool elements",
                            item.type_of().to_string(),
                            "min()/max() of a list",
                        ))
                    }
                };
                if better {
                    item
                } else {
                    current
                }
            }
        });
    }
    let name = if want_max { "max" } else { "min" };
    best.ok_or_else(|| RuntimeError::ValueError(format!("{name}() arg is an empty sequence")))
}

fn list_max(list: List) -> Result<IValue> {
    extreme(&list, true)
}

fn list_min(list: List) -> Result<IValue> {
    extreme(&list, false)
}

/// `min(l, r)`/`max(l, r)` on two lists: PyTorch's `minList`/`maxList` (the first differing
/// element decides; otherwise the shorter list, or `r` when both are equal). The chosen
/// list itself is returned, not a copy.
fn pick_list(left: List, right: List, want_max: bool) -> Result<IValue> {
    let (a_items, b_items) = (right.to_vec(), left.to_vec());
    for (a, b) in a_items.iter().zip(&b_items) {
        let ordering = compare_elements(a, b)?;
        if a.equals(b)? {
            continue;
        }
        let a_wins = if want_max {
            ordering == Ordering::Greater
        } else {
            ordering == Ordering::Less
        };
        return Ok(IValue::List(if a_wins { right } else { left }));
    }
    let b_wins = if want_max {
        b_items.len() > a_items.len()
    } else {
        b_items.len() < a_items.len()
    };
    Ok(IValue::List(if b_wins { left } else { right }))
}

fn min_of_lists(left: List, right: List) -> Result<IValue> {
    pick_list(left, right, false)
}

fn max_of_lists(left: List, right: List) -> Result<IValue> {
    pick_list(left, right, true)
}

/// PyTorch's `a < b` on list elements of one kind, as a total preorder so that sorting
/// never sees an inconsistent comparison (NaN sorts after the numbers, as `total_cmp`).
fn compare_elements(a: &IValue, b: &IValue) -> Result<Ordering> {
    Ok(match (a, b) {
        (IValue::Int(x), IValue::Int(y)) => x.cmp(y),
        (IValue::Double(x), IValue::Double(y)) => {
            x.partial_cmp(y).unwrap_or_else(|| x.total_cmp(y))
        }
        (IValue::Bool(x), IValue::Bool(y)) => x.cmp(y),
        (IValue::Str(x), IValue::Str(y)) => x.as_bytes().cmp(y.as_bytes()),
        (IValue::Tensor(x), IValue::Tensor(y)) => {
            let (x, y) = (single_element(&x.get())?, single_element(&y.get())?);
            x.partial_cmp(&y).unwrap_or_else(|| x.total_cmp(&y))
        }
        _ => {
            return Err(RuntimeError::Other(format!(
                "IValues of type: {} are not comparable",
                a.tag_name()
            )))
        }
    })
}

/// The value of a one-element tensor compared as `bool(a < b)` requires.
fn single_element(tensor: &Tensor) -> Result<f64> {
    if tensor.numel() != 1 {
        return Err(RuntimeError::Other(
            "Boolean value of Tensor with more than one value is ambiguous".to_string(),
        ));
    }
    Ok(tensor.item()?.to_f64())
}

/// Sorts `items` in place (stable), failing on elements that cannot be compared.
fn sort_values(items: &mut [IValue], reverse: bool) -> Result<()> {
    for item in items.iter() {
        compare_elements(item, item)?;
    }
    if let Some(first) = items.first() {
        for item in items.iter() {
            compare_elements(first, item)?;
        }
    }
    items.sort_by(|a, b| {
        let ordering = compare_elements(a, b).unwrap_or(Ordering::Equal);
        if reverse {
            ordering.reverse()
        } else {
            ordering
        }
    });
    Ok(())
}

fn sort(list: List, reverse: bool) -> Result<()> {
    let mut items = list.to_vec();
    sort_values(&mut items, reverse)?;
    *list.write() = items;
    Ok(())
}

/// Sorts script-class objects by their `__lt__` method (PyTorch's `sort.any`/`sorted.any`
/// comparator for objects); other elements compare as the typed overloads do. The sort is
/// stable; the first error `__lt__` raises is returned.
fn sort_any_values(items: &mut [IValue], reverse: bool) -> Result<()> {
    if !items.iter().any(|item| matches!(item, IValue::Object(_))) {
        return sort_values(items, reverse);
    }
    let mut failure: Option<RuntimeError> = None;
    let mut less = |a: &IValue, b: &IValue| -> bool {
        if failure.is_some() {
            return false;
        }
        let (IValue::Object(left), IValue::Object(_)) = (a, b) else {
            failure = Some(RuntimeError::Other(format!(
                "cannot sort a list mixing objects with {} and {}",
                a.tag_name(),
                b.tag_name()
            )));
            return false;
        };
        match crate::module::Module::new(left.clone()).run_method("__lt__", vec![b.clone()]) {
            Ok(IValue::Bool(answer)) => answer,
            Ok(other) => {
                failure = Some(RuntimeError::Other(format!(
                    "__lt__ of {} returned {}, not a bool",
                    left.class().qualified_name(),
                    other.tag_name()
                )));
                false
            }
            Err(error) => {
                failure = Some(error);
                false
            }
        }
    };
    // A merge sort of our own: a user's `__lt__` need not be a total order, and the
    // standard library's sort may panic on one that is not.
    let sorted = merge_sort(items.to_vec(), &mut |a: &IValue, b: &IValue| {
        if reverse {
            less(b, a)
        } else {
            less(a, b)
        }
    });
    if let Some(error) = failure {
        return Err(error);
    }
    items.clone_from_slice(&sorted);
    Ok(())
}

/// A stable merge sort by `less` (an element of the right half goes first only when it is
/// strictly less).
fn merge_sort(
    mut items: Vec<IValue>,
    less: &mut dyn FnMut(&IValue, &IValue) -> bool,
) -> Vec<IValue> {
    if items.len() <= 1 {
        return items;
    }
    let right = items.split_off(items.len() / 2);
    let left = merge_sort(items, less);
    let right = merge_sort(right, less);
    let mut merged = Vec::with_capacity(left.len() + right.len());
    let (mut left, mut right) = (left.into_iter().peekable(), right.into_iter().peekable());
    while let (Some(a), Some(b)) = (left.peek(), right.peek()) {
        if less(b, a) {
            merged.extend(right.next());
        } else {
            merged.extend(left.next());
        }
    }
    merged.extend(left);
    merged.extend(right);
    merged
}

fn sort_any(list: List, reverse: bool) -> Result<()> {
    let mut items = list.to_vec();
    sort_any_values(&mut items, reverse)?;
    *list.write() = items;
    Ok(())
}

fn sorted_any(list: List) -> Result<IValue> {
    let mut items = list.to_vec();
    sort_any_values(&mut items, false)?;
    Ok(list_like(&list, items))
}

/// `sorted(l)`: a sorted copy.
fn sorted(list: List) -> Result<IValue> {
    let mut items = list.to_vec();
    sort_values(&mut items, false)?;
    Ok(list_like(&list, items))
}

/// C++ `operator<<` of a list element, for error messages (`%g`-style doubles, bools as
/// 1/0).
fn element_text(value: &IValue) -> String {
    match value {
        IValue::Double(f) => ferrojit_tensor::display::format_g(*f, 6),
        IValue::Bool(b) => u8::from(*b).to_string(),
        other => other.to_string(),
    }
}

fn position_of(items: &[IValue], element: &IValue) -> Result<Option<usize>> {
    for (position, item) in items.iter().enumerate() {
        if item.equals(element)? {
            return Ok(Some(position));
        }
    }
    Ok(None)
}

/// `l.remove(x)`: removes the first element equal to `x`.
fn remove(list: List, element: IValue) -> Result<()> {
    let items = list.to_vec();
    match position_of(&items, &element)? {
        Some(position) => {
            let mut items = list.write();
            if position < items.len() {
                items.remove(position);
            }
            Ok(())
        }
        None => Err(RuntimeError::Other(
            "list.remove(x): x not in list".to_string(),
        )),
    }
}

/// `l.index(x)`: the position of the first element equal to `x`.
fn index(list: List, element: IValue) -> Result<i64> {
    match position_of(&list.to_vec(), &element)? {
        Some(position) => Ok(position as i64),
        None => Err(RuntimeError::Other(format!(
            "'{}' is not in list",
            element_text(&element)
        ))),
    }
}

/// `l.count(x)`: how many elements equal `x`.
fn count(list: List, element: IValue) -> Result<i64> {
    let mut total = 0i64;
    for item in &list.to_vec() {
        if item.equals(&element)? {
            total += 1;
        }
    }
    Ok(total)
}

fn sum_bool(values: Vec<bool>) -> Result<i64> {
    Ok(values.into_iter().filter(|&value| value).count() as i64)
}

/// Python truthiness of an int/float/bool/str list element.
fn truthy(value: &IValue) -> Result<bool> {
    Ok(match value {
        IValue::Bool(b) => *b,
        IValue::Int(i) => *i != 0,
        IValue::Double(f) => *f != 0.0,
        IValue::Str(text) => !text.is_empty(),
        other => {
            return Err(RuntimeError::type_mismatch(
                "int, float, bool or str elements",
                other.tag_name(),
                "any()/all()",
            ))
        }
    })
}

fn any(list: List) -> Result<bool> {
    for item in list.to_vec() {
        if truthy(&item)? {
            return Ok(true);
        }
    }
    Ok(false)
}

fn all(list: List) -> Result<bool> {
    for item in list.to_vec() {
        if !truthy(&item)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `Tensor.tolist()` annotated as `dim` nested lists of `elem_type` (0 int, 1 float, 2 bool):
/// PyTorch's `prim::tolist` kernel, with its checks and messages. The compiler passes `dim`
/// and `elem_type` as constants taken from the type annotation.
pub fn tensor_to_list(tensor: &Tensor, dim: i64, elem_type: i64) -> Result<IValue> {
    let element = match elem_type {
        0 => Type::Int,
        1 => Type::Float,
        2 => Type::Bool,
        _ => {
            return Err(RuntimeError::Other(
                "Unsupported element type for tolist; only int, float, complex and bool are \
                 supported"
                    .to_string(),
            ))
        }
    };
    let dtype = tensor.dtype();
    let matches = match element {
        Type::Int => dtype == DType::Int64,
        Type::Float => dtype.is_floating_point(),
        _ => dtype == DType::Bool,
    };
    if !matches {
        return Err(RuntimeError::Other(
            "Output annotation element type and runtime tensor element type must match for \
             tolist()"
                .to_string(),
        ));
    }
    if usize::try_from(dim).ok() != Some(tensor.sizes().len()) {
        return Err(RuntimeError::Other(
            "Output annotation list dimension and runtime tensor dimension must match for \
             tolist()"
                .to_string(),
        ));
    }
    let values: Vec<IValue> = match element {
        Type::Int => tensor.to_i64_vec().into_iter().map(IValue::Int).collect(),
        Type::Float => tensor
            .to_f64_vec()
            .into_iter()
            .map(IValue::Double)
            .collect(),
        _ => tensor
            .to_i64_vec()
            .into_iter()
            .map(|v| IValue::Bool(v != 0))
            .collect(),
    };
    Ok(nest(&values, tensor.sizes(), &element))
}

/// Groups logical-order `values` into nested lists of the given `sizes`.
fn nest(values: &[IValue], sizes: &[usize], element: &Type) -> IValue {
    match sizes.split_first() {
        None => values.first().cloned().unwrap_or(IValue::None),
        Some((&outer, inner)) => {
            let inner_type = inner.iter().fold(element.clone(), |ty, _| Type::list(ty));
            let chunk = inner.iter().product::<usize>();
            let items = (0..outer)
                .map(|i| {
                    let start = (i * chunk).min(values.len());
                    let end = (start + chunk).min(values.len());
                    nest(&values[start..end], inner, element)
                })
                .collect();
            IValue::list(inner_type, items)
        }
    }
}

/// Every list operator, in PyTorch's registration order within each name.
pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        typed("aten::len.t(t[] a) -> int", len),
        // PyTorch registers `Any[]` so that `len()` accepts heterogeneous tuples too.
        typed("aten::len.any(Any[] a) -> int", len),
        typed("aten::select.t(t[](a) list, int idx) -> t(*)", get_item),
        typed(
            "aten::__getitem__.t(t[](a) list, int idx) -> t(*)",
            get_item,
        ),
        typed(
            "aten::append.t(t[](a!) self, t(c -> *) el) -> t[](a!)",
            append,
        ),
        typed("aten::reverse.t(t[](a!) self) -> ()", reverse),
        typed("aten::extend.t(t[](a!) self, t[] other) -> ()", extend),
        typed("aten::copy.t(t[](a) self) -> t[]", copy),
        typed(
            "aten::_set_item.t(t[](a!) l, int idx, t(b -> *) el) -> t[](a!)",
            set_item,
        ),
        typed("aten::clear.t(t[](a!) self) -> ()", clear),
        typed("aten::Delete.t(t[](a!) self, int idx) -> ()", delete),
        typed(
            "aten::insert.t(t[](a!) self, int idx, t(b -> *) el) -> ()",
            insert,
        ),
        typed("aten::pop.t(t[](a!) self, int idx=-1) -> t(*)", pop),
        typed("aten::add.t(t[] a, t[] b) -> t[]", concat),
        typed("aten::add_.t(t[](a!) self, t[] b) -> t[]", concat_in_place),
        typed(
            "aten::slice.t(t[] l, int? start=None, int? end=None, int step=1) -> t[]",
            slice,
        ),
        typed("aten::list.t(t[] l) -> t[]", copy),
        typed("aten::mul.left_t(t[] l, int n) -> t[]", mul_left),
        typed("aten::mul.right_(int n, t[] l) -> t[]", mul_right),
        typed("aten::mul_.t(t[](a!) l, int n) -> t[](a!)", mul_in_place),
        typed("aten::eq.int_list(int[] a, int[] b) -> bool", list_eq),
        typed("aten::eq.float_list(float[] a, float[] b) -> bool", list_eq),
        typed("aten::eq.bool_list(bool[] a, bool[] b) -> bool", list_eq),
        typed("aten::eq.str_list(str[] a, str[] b) -> bool", list_eq),
        typed("aten::ne.int_list(int[] a, int[] b) -> bool", list_ne),
        typed("aten::ne.float_list(float[] a, float[] b) -> bool", list_ne),
        typed("aten::ne.bool_list(bool[] a, bool[] b) -> bool", list_ne),
        typed("aten::ne.str_list(str[] a, str[] b) -> bool", list_ne),
        typed(
            "aten::__contains__.int_list(int[] l, int item) -> bool",
            contains,
        ),
        typed(
            "aten::__contains__.str_list(str[] l, str item) -> bool",
            contains,
        ),
        typed(
            "aten::__contains__.float_list(float[] l, float item) -> bool",
            contains,
        ),
        typed("aten::sum.int(int[] self) -> int", sum_int),
        typed("aten::sum.float(float[] self) -> float", sum_float),
        typed(
            "prim::min.int_list(int[] l, int[] r) -> int[]",
            min_of_lists,
        ),
        typed(
            "prim::max.int_list(int[] l, int[] r) -> int[]",
            max_of_lists,
        ),
        typed("prim::min.self_int(int[] self) -> int", list_min),
        typed("prim::max.self_int(int[] self) -> int", list_max),
        typed(
            "prim::min.float_list(float[] l, float[] r) -> float[]",
            min_of_lists,
        ),
        typed(
            "prim::max.float_list(float[] l, float[] r) -> float[]",
            max_of_lists,
        ),
        typed("prim::min.self_float(float[] self) -> float", list_min),
        typed("prim::max.self_float(float[] self) -> float", list_max),
        typed(
            "prim::min.bool_list(bool[] l, bool[] r) -> bool[]",
            min_of_lists,
        ),
        typed(
            "prim::max.bool_list(bool[] l, bool[] r) -> bool[]",
            max_of_lists,
        ),
        typed("prim::min.self_bool(bool[] self) -> bool", list_min),
        typed("prim::max.self_bool(bool[] self) -> bool", list_max),
        typed(
            "aten::sort.int(int[](a!) self, bool reverse=False) -> ()",
            sort,
        ),
        typed(
            "aten::sort.float(float[](a!) self, bool reverse=False) -> ()",
            sort,
        ),
        typed(
            "aten::sort.bool(bool[](a!) self, bool reverse=False) -> ()",
            sort,
        ),
        typed(
            "aten::sort.str(str[](a!) self, bool reverse=False) -> ()",
            sort,
        ),
        typed(
            "aten::sort.Tensor(Tensor[](a!) self, bool reverse=False) -> ()",
            sort,
        ),
        typed("aten::remove.int(int[](a!) self, int el) -> ()", remove),
        typed("aten::index.list_int(int[] self, int el) -> int", index),
        typed("aten::count.int(int[] self, int el) -> int", count),
        typed(
            "aten::remove.float(float[](a!) self, float el) -> ()",
            remove,
        ),
        typed(
            "aten::index.list_float(float[] self, float el) -> int",
            index,
        ),
        typed("aten::count.float(float[] self, float el) -> int", count),
        typed("aten::remove.bool(bool[](a!) self, bool el) -> ()", remove),
        typed("aten::index.list_bool(bool[] self, bool el) -> int", index),
        typed("aten::count.bool(bool[] self, bool el) -> int", count),
        typed(
            "aten::remove.Tensor(Tensor[](a!) self, Tensor el) -> ()",
            remove,
        ),
        typed(
            "aten::index.list_Tensor(Tensor[] self, Tensor el) -> int",
            index,
        ),
        typed("aten::count.Tensor(Tensor[] self, Tensor el) -> int", count),
        typed("aten::remove.str(str[](a!) self, str el) -> ()", remove),
        typed("aten::index.list_str(str[] self, str el) -> int", index),
        typed("aten::count.str(str[] self, str el) -> int", count),
        typed("aten::sorted.int(int[](a) input) -> (int[])", sorted),
        typed("aten::sorted.float(float[](a) input) -> (float[])", sorted),
        typed(
            "aten::sorted.Tensor(Tensor[](a) input) -> (Tensor[])",
            sorted,
        ),
        typed("aten::sorted.bool(bool[](a) input) -> (bool[])", sorted),
        typed("aten::sorted.str(str[](a) input) -> (str[])", sorted),
        typed("aten::sorted.any(t[](a) self) -> (t[])", sorted_any),
        typed(
            "aten::sort.any(t[](a!) self, bool reverse=False) -> ()",
            sort_any,
        ),
        typed(
            "aten::eq.Tensor_list(Tensor[] a, Tensor[] b) -> bool",
            list_eq,
        ),
        typed(
            "aten::ne.Tensor_list(Tensor[] a, Tensor[] b) -> bool",
            list_ne,
        ),
        typed("aten::sum.bool(bool[] self) -> int", sum_bool),
        typed("aten::any.str(str[] self) -> bool", any),
        typed("aten::any.int(int[] self) -> bool", any),
        typed("aten::any.float(float[] self) -> bool", any),
        typed("aten::any.bool(bool[] self) -> bool", any),
        typed("aten::all.int(int[] self) -> bool", all),
        typed("aten::all.float(float[] self) -> bool", all),
        typed("aten::all.bool(bool[] self) -> bool", all),
    ]
}
