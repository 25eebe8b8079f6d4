//! List operators (generic over the element type `t`, or specialized per element type as in
//! PyTorch's register_prim_ops.cpp), and `Tensor.tolist()`'s conversion. Lists are shared by
//! reference, so mutating ops change every alias. Dict operators are in `dict_ops`.

use std::cmp::Ordering;

use ferrojit_ir::Type;
use ferrojit_tensor::{DType, Tensor};

use super::{normalize_index, pop_array, push, slice_indices, KernelTableEntry};
use crate::error::{Result, RuntimeError};
use crate::ivalue::{IValue, ListValue};
use crate::registry::Stack;

fn index_error() -> RuntimeError {
    RuntimeError::IndexError("list index out of range".to_string())
}

fn len(stack: &mut Stack) -> Result<()> {
    let [list] = pop_array::<1>(stack)?;
    push(stack, list.to_list()?.len() as i64)
}

fn get_item(stack: &mut Stack) -> Result<()> {
    let [list, index] = pop_array::<2>(stack)?;
    let items = list.to_list()?.read();
    let position = normalize_index(index.to_int()?, items.len()).ok_or_else(index_error)?;
    let value = items.get(position).cloned().ok_or_else(index_error)?;
    drop(items);
    push(stack, value)
}

fn set_item(stack: &mut Stack) -> Result<()> {
    let [list, index, value] = pop_array::<3>(stack)?;
    {
        let mut items = list.to_list()?.write();
        let position = normalize_index(index.to_int()?, items.len()).ok_or_else(index_error)?;
        if let Some(slot) = items.get_mut(position) {
            *slot = value;
        }
    }
    push(stack, list)
}

fn append(stack: &mut Stack) -> Result<()> {
    let [list, value] = pop_array::<2>(stack)?;
    list.to_list()?.push(value);
    push(stack, list)
}

fn extend(stack: &mut Stack) -> Result<()> {
    let [list, other] = pop_array::<2>(stack)?;
    // Snapshot first: `l.extend(l)` must not read while writing.
    let extra = other.to_list()?.to_vec();
    list.to_list()?.write().extend(extra);
    Ok(())
}

fn insert(stack: &mut Stack) -> Result<()> {
    let [list, index, value] = pop_array::<3>(stack)?;
    let mut items = list.to_list()?.write();
    let len = items.len() as i64;
    let index = index.to_int()?;
    // Python clamps insert positions instead of failing.
    let position = if index < 0 {
        (index + len).max(0)
    } else {
        index.min(len)
    };
    items.insert(position as usize, value);
    Ok(())
}

fn pop(stack: &mut Stack) -> Result<()> {
    let [list, index] = pop_array::<2>(stack)?;
    let value = {
        let mut items = list.to_list()?.write();
        if items.is_empty() {
            return Err(RuntimeError::IndexError("pop from empty list".to_string()));
        }
        let position = normalize_index(index.to_int()?, items.len())
            .ok_or_else(|| RuntimeError::IndexError("pop index out of range".to_string()))?;
        items.remove(position)
    };
    push(stack, value)
}

fn clear(stack: &mut Stack) -> Result<()> {
    let [list] = pop_array::<1>(stack)?;
    list.to_list()?.write().clear();
    Ok(())
}

fn delete(stack: &mut Stack) -> Result<()> {
    let [list, index] = pop_array::<2>(stack)?;
    let mut items = list.to_list()?.write();
    let position = normalize_index(index.to_int()?, items.len()).ok_or_else(|| {
        RuntimeError::IndexError("list assignment index out of range".to_string())
    })?;
    items.remove(position);
    Ok(())
}

fn reverse(stack: &mut Stack) -> Result<()> {
    let [list] = pop_array::<1>(stack)?;
    list.to_list()?.write().reverse();
    Ok(())
}

/// `list.copy()`, `list(l)`: a new list with the same elements.
fn copy(stack: &mut Stack) -> Result<()> {
    let [list] = pop_array::<1>(stack)?;
    let list = list.to_list()?;
    push(
        stack,
        IValue::List(ListValue::new(list.element_type().clone(), list.to_vec())),
    )
}

fn concat(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    let a = a.to_list()?;
    let mut items = a.to_vec();
    items.extend(b.to_list()?.to_vec());
    push(
        stack,
        IValue::List(ListValue::new(a.element_type().clone(), items)),
    )
}

fn concat_in_place(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    let extra = b.to_list()?.to_vec();
    a.to_list()?.write().extend(extra);
    push(stack, a)
}

fn slice(stack: &mut Stack) -> Result<()> {
    let [list, start, end, step] = pop_array::<4>(stack)?;
    let list = list.to_list()?;
    let items = list.to_vec();
    let (first, step, count) = slice_indices(
        items.len(),
        start.to_optional_int()?,
        end.to_optional_int()?,
        step.to_int()?,
    )?;
    let mut result = Vec::with_capacity(count);
    let mut position = first;
    for _ in 0..count {
        if let Some(item) = usize::try_from(position).ok().and_then(|p| items.get(p)) {
            result.push(item.clone());
        }
        position += step;
    }
    push(
        stack,
        IValue::List(ListValue::new(list.element_type().clone(), result)),
    )
}

/// The most elements a list operation builds: `[0] * 10**12` fails instead of exhausting
/// memory.
pub(crate) const MAX_LIST_ELEMENTS: usize = 1 << 28;

fn repeat(list: &ListValue, times: i64) -> Result<IValue> {
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
    Ok(IValue::List(ListValue::new(
        list.element_type().clone(),
        result,
    )))
}

fn mul_left(stack: &mut Stack) -> Result<()> {
    let [list, times] = pop_array::<2>(stack)?;
    let result = repeat(list.to_list()?, times.to_int()?)?;
    push(stack, result)
}

fn mul_right(stack: &mut Stack) -> Result<()> {
    let [times, list] = pop_array::<2>(stack)?;
    let result = repeat(list.to_list()?, times.to_int()?)?;
    push(stack, result)
}

fn mul_in_place(stack: &mut Stack) -> Result<()> {
    let [list, times] = pop_array::<2>(stack)?;
    let repeated = repeat(list.to_list()?, times.to_int()?)?;
    let new_items = repeated.to_list()?.to_vec();
    *list.to_list()?.write() = new_items;
    push(stack, list)
}

fn list_eq(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    push(stack, a.equals(&b)?)
}

fn list_ne(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    push(stack, !a.equals(&b)?)
}

fn contains(stack: &mut Stack) -> Result<()> {
    let [list, item] = pop_array::<2>(stack)?;
    let items = list.to_list()?.to_vec();
    for candidate in &items {
        if candidate.equals(&item)? {
            return push(stack, true);
        }
    }
    push(stack, false)
}

fn sum_int(stack: &mut Stack) -> Result<()> {
    let [list] = pop_array::<1>(stack)?;
    let total = list
        .to_int_vec()?
        .into_iter()
        .fold(0i64, |acc, v| acc.wrapping_add(v));
    push(stack, total)
}

fn sum_float(stack: &mut Stack) -> Result<()> {
    let [list] = pop_array::<1>(stack)?;
    push(stack, list.to_double_vec()?.into_iter().sum::<f64>())
}

fn extreme(stack: &mut Stack, want_max: bool) -> Result<()> {
    let [list] = pop_array::<1>(stack)?;
    let items = list.to_list()?.to_vec();
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
    let value =
        best.ok_or_else(|| RuntimeError::ValueError(format!("{name}() arg is an empty sequence")))?;
    push(stack, value)
}

fn list_max(stack: &mut Stack) -> Result<()> {
    extreme(stack, true)
}

fn list_min(stack: &mut Stack) -> Result<()> {
    extreme(stack, false)
}

/// `min(l, r)`/`max(l, r)` on two lists: PyTorch's `minList`/`maxList` (the first differing
/// element decides; otherwise the shorter list, or `r` when both are equal). The chosen
/// list itself is returned, not a copy.
fn pick_list(stack: &mut Stack, want_max: bool) -> Result<()> {
    let [left, right] = pop_array::<2>(stack)?;
    let (a_items, b_items) = (right.to_list()?.to_vec(), left.to_list()?.to_vec());
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
        return push(stack, if a_wins { right } else { left });
    }
    let b_wins = if want_max {
        b_items.len() > a_items.len()
    } else {
        b_items.len() < a_items.len()
    };
    push(stack, if b_wins { left } else { right })
}

fn min_of_lists(stack: &mut Stack) -> Result<()> {
    pick_list(stack, false)
}

fn max_of_lists(stack: &mut Stack) -> Result<()> {
    pick_list(stack, true)
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

fn sort(stack: &mut Stack) -> Result<()> {
    let [list, reverse] = pop_array::<2>(stack)?;
    let reverse = reverse.to_bool()?;
    let list = list.to_list()?;
    let mut items = list.to_vec();
    sort_values(&mut items, reverse)?;
    *list.write() = items;
    Ok(())
}

/// `sorted(l)`: a sorted copy.
fn sorted(stack: &mut Stack) -> Result<()> {
    let [list] = pop_array::<1>(stack)?;
    let list = list.to_list()?;
    let mut items = list.to_vec();
    sort_values(&mut items, false)?;
    push(
        stack,
        IValue::List(ListValue::new(list.element_type().clone(), items)),
    )
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
fn remove(stack: &mut Stack) -> Result<()> {
    let [list, element] = pop_array::<2>(stack)?;
    let list = list.to_list()?;
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
fn index(stack: &mut Stack) -> Result<()> {
    let [list, element] = pop_array::<2>(stack)?;
    let items = list.to_list()?.to_vec();
    match position_of(&items, &element)? {
        Some(position) => push(stack, position as i64),
        None => Err(RuntimeError::Other(format!(
            "'{}' is not in list",
            element_text(&element)
        ))),
    }
}

/// `l.count(x)`: how many elements equal `x`.
fn count(stack: &mut Stack) -> Result<()> {
    let [list, element] = pop_array::<2>(stack)?;
    let items = list.to_list()?.to_vec();
    let mut total = 0i64;
    for item in &items {
        if item.equals(&element)? {
            total += 1;
        }
    }
    push(stack, total)
}

fn sum_bool(stack: &mut Stack) -> Result<()> {
    let [list] = pop_array::<1>(stack)?;
    let mut total = 0i64;
    for item in list.to_list()?.to_vec() {
        if item.to_bool()? {
            total += 1;
        }
    }
    push(stack, total)
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

fn any(stack: &mut Stack) -> Result<()> {
    let [list] = pop_array::<1>(stack)?;
    for item in list.to_list()?.to_vec() {
        if truthy(&item)? {
            return push(stack, true);
        }
    }
    push(stack, false)
}

fn all(stack: &mut Stack) -> Result<()> {
    let [list] = pop_array::<1>(stack)?;
    for item in list.to_list()?.to_vec() {
        if !truthy(&item)? {
            return push(stack, false);
        }
    }
    push(stack, true)
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

pub const TABLE: &[KernelTableEntry] = &[
    ("aten::len.t(t[] a) -> int", len),
    // PyTorch registers `Any[]` so that `len()` accepts heterogeneous tuples too.
    ("aten::len.any(Any[] a) -> int", len),
    ("aten::select.t(t[](a) list, int idx) -> t(*)", get_item),
    (
        "aten::__getitem__.t(t[](a) list, int idx) -> t(*)",
        get_item,
    ),
    (
        "aten::append.t(t[](a!) self, t(c -> *) el) -> t[](a!)",
        append,
    ),
    ("aten::reverse.t(t[](a!) self) -> ()", reverse),
    ("aten::extend.t(t[](a!) self, t[] other) -> ()", extend),
    ("aten::copy.t(t[](a) self) -> t[]", copy),
    (
        "aten::_set_item.t(t[](a!) l, int idx, t(b -> *) el) -> t[](a!)",
        set_item,
    ),
    ("aten::clear.t(t[](a!) self) -> ()", clear),
    ("aten::Delete.t(t[](a!) self, int idx) -> ()", delete),
    (
        "aten::insert.t(t[](a!) self, int idx, t(b -> *) el) -> ()",
        insert,
    ),
    ("aten::pop.t(t[](a!) self, int idx=-1) -> t(*)", pop),
    ("aten::add.t(t[] a, t[] b) -> t[]", concat),
    ("aten::add_.t(t[](a!) self, t[] b) -> t[]", concat_in_place),
    (
        "aten::slice.t(t[] l, int? start=None, int? end=None, int step=1) -> t[]",
        slice,
    ),
    ("aten::list.t(t[] l) -> t[]", copy),
    ("aten::mul.left_t(t[] l, int n) -> t[]", mul_left),
    ("aten::mul.right_(int n, t[] l) -> t[]", mul_right),
    ("aten::mul_.t(t[](a!) l, int n) -> t[](a!)", mul_in_place),
    ("aten::eq.int_list(int[] a, int[] b) -> bool", list_eq),
    ("aten::eq.float_list(float[] a, float[] b) -> bool", list_eq),
    ("aten::eq.bool_list(bool[] a, bool[] b) -> bool", list_eq),
    ("aten::eq.str_list(str[] a, str[] b) -> bool", list_eq),
    ("aten::ne.int_list(int[] a, int[] b) -> bool", list_ne),
    ("aten::ne.float_list(float[] a, float[] b) -> bool", list_ne),
    ("aten::ne.bool_list(bool[] a, bool[] b) -> bool", list_ne),
    ("aten::ne.str_list(str[] a, str[] b) -> bool", list_ne),
    (
        "aten::__contains__.int_list(int[] l, int item) -> bool",
        contains,
    ),
    (
        "aten::__contains__.str_list(str[] l, str item) -> bool",
        contains,
    ),
    (
        "aten::__contains__.float_list(float[] l, float item) -> bool",
        contains,
    ),
    ("aten::sum.int(int[] self) -> int", sum_int),
    ("aten::sum.float(float[] self) -> float", sum_float),
    (
        "prim::min.int_list(int[] l, int[] r) -> int[]",
        min_of_lists,
    ),
    (
        "prim::max.int_list(int[] l, int[] r) -> int[]",
        max_of_lists,
    ),
    ("prim::min.self_int(int[] self) -> int", list_min),
    ("prim::max.self_int(int[] self) -> int", list_max),
    (
        "prim::min.float_list(float[] l, float[] r) -> float[]",
        min_of_lists,
    ),
    (
        "prim::max.float_list(float[] l, float[] r) -> float[]",
        max_of_lists,
    ),
    ("prim::min.self_float(float[] self) -> float", list_min),
    ("prim::max.self_float(float[] self) -> float", list_max),
    (
        "prim::min.bool_list(bool[] l, bool[] r) -> bool[]",
        min_of_lists,
    ),
    (
        "prim::max.bool_list(bool[] l, bool[] r) -> bool[]",
        max_of_lists,
    ),
    ("prim::min.self_bool(bool[] self) -> bool", list_min),
    ("prim::max.self_bool(bool[] self) -> bool", list_max),
    (
        "aten::sort.int(int[](a!) self, bool reverse=False) -> ()",
        sort,
    ),
    (
        "aten::sort.float(float[](a!) self, bool reverse=False) -> ()",
        sort,
    ),
    (
        "aten::sort.bool(bool[](a!) self, bool reverse=False) -> ()",
        sort,
    ),
    (
        "aten::sort.str(str[](a!) self, bool reverse=False) -> ()",
        sort,
    ),
    (
        "aten::sort.Tensor(Tensor[](a!) self, bool reverse=False) -> ()",
        sort,
    ),
    ("aten::remove.int(int[](a!) self, int el) -> ()", remove),
    ("aten::index.list_int(int[] self, int el) -> int", index),
    ("aten::count.int(int[] self, int el) -> int", count),
    (
        "aten::remove.float(float[](a!) self, float el) -> ()",
        remove,
    ),
    (
        "aten::index.list_float(float[] self, float el) -> int",
        index,
    ),
    ("aten::count.float(float[] self, float el) -> int", count),
    ("aten::remove.bool(bool[](a!) self, bool el) -> ()", remove),
    ("aten::index.list_bool(bool[] self, bool el) -> int", index),
    ("aten::count.bool(bool[] self, bool el) -> int", count),
    (
        "aten::remove.Tensor(Tensor[](a!) self, Tensor el) -> ()",
        remove,
    ),
    (
        "aten::index.list_Tensor(Tensor[] self, Tensor el) -> int",
        index,
    ),
    ("aten::count.Tensor(Tensor[] self, Tensor el) -> int", count),
    ("aten::remove.str(str[](a!) self, str el) -> ()", remove),
    ("aten::index.list_str(str[] self, str el) -> int", index),
    ("aten::count.str(str[] self, str el) -> int", count),
    ("aten::sorted.int(int[](a) input) -> (int[])", sorted),
    ("aten::sorted.float(float[](a) input) -> (float[])", sorted),
    (
        "aten::sorted.Tensor(Tensor[](a) input) -> (Tensor[])",
        sorted,
    ),
    ("aten::sorted.bool(bool[](a) input) -> (bool[])", sorted),
    ("aten::sorted.str(str[](a) input) -> (str[])", sorted),
    (
        "aten::eq.Tensor_list(Tensor[] a, Tensor[] b) -> bool",
        list_eq,
    ),
    (
        "aten::ne.Tensor_list(Tensor[] a, Tensor[] b) -> bool",
        list_ne,
    ),
    ("aten::sum.bool(bool[] self) -> int", sum_bool),
    ("aten::any.str(str[] self) -> bool", any),
    ("aten::any.int(int[] self) -> bool", any),
    ("aten::any.float(float[] self) -> bool", any),
    ("aten::any.bool(bool[] self) -> bool", any),
    ("aten::all.int(int[] self) -> bool", all),
    ("aten::all.float(float[] self) -> bool", all),
    ("aten::all.bool(bool[] self) -> bool", all),
];
