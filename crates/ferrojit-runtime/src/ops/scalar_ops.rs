//! int/float/bool/str arithmetic, comparison and conversion operators (PyTorch's
//! register_prim_ops.cpp schemas). One kernel serves every overload of an operation: the
//! operands' kinds pick int or float arithmetic, as PyTorch's `Scalar` overloads do.

use ferrojit_tensor::Scalar;

use super::{pop_array, push, KernelTableEntry};
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::registry::Stack;

/// Operands of a binary number op: both ints (bools count as ints) or, otherwise, floats.
enum NumberPair {
    Ints(i64, i64),
    Floats(f64, f64),
}

fn number_pair(a: &IValue, b: &IValue) -> Result<NumberPair> {
    let a = a.to_scalar()?;
    let b = b.to_scalar()?;
    Ok(match (a, b) {
        (Scalar::Float(_), _) | (_, Scalar::Float(_)) => NumberPair::Floats(a.to_f64(), b.to_f64()),
        _ => NumberPair::Ints(a.to_i64(), b.to_i64()),
    })
}

fn zero_division() -> RuntimeError {
    RuntimeError::ZeroDivision("integer division or modulo by zero".to_string())
}

/// Python's `//` on ints: rounds toward negative infinity.
pub fn python_floordiv(a: i64, b: i64) -> Result<i64> {
    if b == 0 {
        return Err(zero_division());
    }
    let quotient = a.wrapping_div(b);
    let remainder = a.wrapping_rem(b);
    if remainder != 0 && ((remainder < 0) != (b < 0)) {
        Ok(quotient.wrapping_sub(1))
    } else {
        Ok(quotient)
    }
}

/// Python's `%` on ints: the result has the sign of the divisor.
pub fn python_remainder(a: i64, b: i64) -> Result<i64> {
    if b == 0 {
        return Err(zero_division());
    }
    let remainder = a.wrapping_rem(b);
    if remainder != 0 && ((remainder < 0) != (b < 0)) {
        Ok(remainder.wrapping_add(b))
    } else {
        Ok(remainder)
    }
}

/// PyTorch's float remainder: `fmod(b + fmod(a, b), b)`.
pub fn python_remainder_float(a: f64, b: f64) -> f64 {
    (b + a % b) % b
}

fn binary(
    stack: &mut Stack,
    int_op: impl Fn(i64, i64) -> Result<IValue>,
    float_op: impl Fn(f64, f64) -> Result<IValue>,
) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    let result = match number_pair(&a, &b)? {
        NumberPair::Ints(a, b) => int_op(a, b)?,
        NumberPair::Floats(a, b) => float_op(a, b)?,
    };
    push(stack, result)
}

fn add(stack: &mut Stack) -> Result<()> {
    binary(
        stack,
        |a, b| Ok(IValue::Int(a.wrapping_add(b))),
        |a, b| Ok(IValue::Double(a + b)),
    )
}

fn sub(stack: &mut Stack) -> Result<()> {
    binary(
        stack,
        |a, b| Ok(IValue::Int(a.wrapping_sub(b))),
        |a, b| Ok(IValue::Double(a - b)),
    )
}

fn mul(stack: &mut Stack) -> Result<()> {
    binary(
        stack,
        |a, b| Ok(IValue::Int(a.wrapping_mul(b))),
        |a, b| Ok(IValue::Double(a * b)),
    )
}

/// True division: always float (division by zero gives inf/nan, as in PyTorch's C++).
fn div(stack: &mut Stack) -> Result<()> {
    binary(
        stack,
        |a, b| Ok(IValue::Double(a as f64 / b as f64)),
        |a, b| Ok(IValue::Double(a / b)),
    )
}

fn floordiv(stack: &mut Stack) -> Result<()> {
    binary(
        stack,
        |a, b| Ok(IValue::Int(python_floordiv(a, b)?)),
        |a, b| Ok(IValue::Double((a / b).floor())),
    )
}

fn remainder(stack: &mut Stack) -> Result<()> {
    binary(
        stack,
        |a, b| Ok(IValue::Int(python_remainder(a, b)?)),
        |a, b| Ok(IValue::Double(python_remainder_float(a, b))),
    )
}

fn checked_pow(a: f64, b: f64) -> Result<f64> {
    if a == 0.0 && b < 0.0 {
        return Err(RuntimeError::Other(
            "0.0 cannot be raised to a negative power".to_string(),
        ));
    }
    Ok(a.powf(b))
}

/// `int ** int` is a float in TorchScript (negative exponents), as are the mixed forms.
fn pow(stack: &mut Stack) -> Result<()> {
    binary(
        stack,
        |a, b| Ok(IValue::Double(checked_pow(a as f64, b as f64)?)),
        |a, b| Ok(IValue::Double(checked_pow(a, b)?)),
    )
}

fn pow_int_to_int(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    let (a, b) = (a.to_int()?, b.to_int()?);
    if b < 0 {
        if a == 0 {
            return Err(RuntimeError::Other(
                "0.0 cannot be raised to a negative power".to_string(),
            ));
        }
        return push(stack, (a as f64).powf(b as f64) as i64);
    }
    let exponent = u32::try_from(b).unwrap_or(u32::MAX);
    push(stack, a.wrapping_pow(exponent))
}

fn min(stack: &mut Stack) -> Result<()> {
    binary(
        stack,
        |a, b| Ok(IValue::Int(a.min(b))),
        |a, b| Ok(IValue::Double(if a < b { a } else { b })),
    )
}

fn max(stack: &mut Stack) -> Result<()> {
    binary(
        stack,
        |a, b| Ok(IValue::Int(a.max(b))),
        |a, b| Ok(IValue::Double(if a > b { a } else { b })),
    )
}

/// `nan_result` is what a comparison involving NaN gives: true only for `!=`.
fn compare(
    stack: &mut Stack,
    test: impl Fn(std::cmp::Ordering) -> bool,
    nan_result: bool,
) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    let result = match (&a, &b) {
        (IValue::Str(x), IValue::Str(y)) => test(x.as_ref().cmp(y.as_ref())),
        (IValue::Device(x), IValue::Device(y)) => {
            // Only equality is defined for devices; order them by text for completeness.
            test(x.to_string().cmp(&y.to_string()))
        }
        _ => match number_pair(&a, &b)? {
            NumberPair::Ints(x, y) => test(x.cmp(&y)),
            NumberPair::Floats(x, y) => match x.partial_cmp(&y) {
                Some(ordering) => test(ordering),
                None => nan_result,
            },
        },
    };
    push(stack, result)
}

fn eq(stack: &mut Stack) -> Result<()> {
    compare(stack, |o| o.is_eq(), false)
}

fn ne(stack: &mut Stack) -> Result<()> {
    compare(stack, |o| o.is_ne(), true)
}

fn lt(stack: &mut Stack) -> Result<()> {
    compare(stack, |o| o.is_lt(), false)
}

fn le(stack: &mut Stack) -> Result<()> {
    compare(stack, |o| o.is_le(), false)
}

fn gt(stack: &mut Stack) -> Result<()> {
    compare(stack, |o| o.is_gt(), false)
}

fn ge(stack: &mut Stack) -> Result<()> {
    compare(stack, |o| o.is_ge(), false)
}

fn neg(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    match a.to_scalar()? {
        Scalar::Float(f) => push(stack, -f),
        other => push(stack, other.to_i64().wrapping_neg()),
    }
}

fn abs(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    match a.to_scalar()? {
        Scalar::Float(f) => push(stack, f.abs()),
        other => push(stack, other.to_i64().wrapping_abs()),
    }
}

/// float → int the way Python's `int()` does, refusing NaN and infinities.
fn float_to_int(value: f64) -> Result<i64> {
    if value.is_nan() {
        return Err(RuntimeError::ValueError(
            "cannot convert float NaN to integer".to_string(),
        ));
    }
    if value.is_infinite() {
        return Err(RuntimeError::Other(
            "OverflowError: cannot convert float infinity to integer".to_string(),
        ));
    }
    Ok(value as i64)
}

fn floor(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    match a.to_scalar()? {
        Scalar::Float(f) => push(stack, float_to_int(f.floor())?),
        other => push(stack, other.to_i64()),
    }
}

fn ceil(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    match a.to_scalar()? {
        Scalar::Float(f) => push(stack, float_to_int(f.ceil())?),
        other => push(stack, other.to_i64()),
    }
}

fn bool_and(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    push(stack, a.to_bool()? && b.to_bool()?)
}

fn bool_or(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    push(stack, a.to_bool()? || b.to_bool()?)
}

fn bool_xor(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    push(stack, a.to_bool()? != b.to_bool()?)
}

fn bool_not(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    push(stack, !a.to_bool()?)
}

fn int_and(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    push(stack, a.to_int()? & b.to_int()?)
}

fn int_or(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    push(stack, a.to_int()? | b.to_int()?)
}

fn int_xor(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    push(stack, a.to_int()? ^ b.to_int()?)
}

/// `Int(x)` for float, bool, int and Scalar inputs.
fn to_int(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    match a.to_scalar()? {
        Scalar::Float(f) => push(stack, float_to_int(f)?),
        other => push(stack, other.to_i64()),
    }
}

fn int_from_str(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    let text = a.to_str()?;
    let value: i64 = text.trim().parse().map_err(|_| {
        RuntimeError::ValueError(format!("invalid literal for int() with base 10: '{text}'"))
    })?;
    push(stack, value)
}

/// `Float(x)` for int, bool, float and Scalar inputs.
fn to_float(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    push(stack, a.to_scalar()?.to_f64())
}

fn float_from_str(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    let text = a.to_str()?;
    let trimmed = text.trim();
    let value: f64 = match trimmed.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        "nan" | "+nan" | "-nan" => f64::NAN,
        _ => trimmed.parse().map_err(|_| {
            RuntimeError::ValueError(format!("could not convert string to float: '{text}'"))
        })?,
    };
    push(stack, value)
}

/// `Bool(x)` for int and float inputs.
fn to_bool(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    push(stack, a.to_scalar()?.to_bool())
}

fn str_concat(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    let joined = format!("{}{}", a.to_str()?, b.to_str()?);
    push(stack, joined)
}

fn str_len(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    push(stack, a.to_str()?.chars().count() as i64)
}

fn str_getitem(stack: &mut Stack) -> Result<()> {
    let [text, index] = pop_array::<2>(stack)?;
    let text = text.to_str()?;
    let index = index.to_int()?;
    let length = text.chars().count();
    let position = super::normalize_index(index, length)
        .ok_or_else(|| RuntimeError::IndexError("string index out of range".to_string()))?;
    let character: String = text.chars().skip(position).take(1).collect();
    push(stack, character)
}

fn str_slice(stack: &mut Stack) -> Result<()> {
    let [text, start, end, step] = pop_array::<4>(stack)?;
    let chars: Vec<char> = text.to_str()?.chars().collect();
    let (first, step, count) = super::slice_indices(
        chars.len(),
        start.to_optional_int()?,
        end.to_optional_int()?,
        step.to_int()?,
    )?;
    let mut out = String::with_capacity(count);
    let mut position = first;
    for _ in 0..count {
        if let Some(c) = usize::try_from(position).ok().and_then(|p| chars.get(p)) {
            out.push(*c);
        }
        position += step;
    }
    push(stack, out)
}

fn str_lower(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    push(stack, a.to_str()?.to_lowercase())
}

fn str_upper(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    push(stack, a.to_str()?.to_uppercase())
}

fn str_startswith(stack: &mut Stack) -> Result<()> {
    let [text, prefix, start, end] = pop_array::<4>(stack)?;
    let window = str_window(text.to_str()?, start.to_int()?, end.to_int()?);
    push(stack, window.starts_with(prefix.to_str()?))
}

fn str_endswith(stack: &mut Stack) -> Result<()> {
    let [text, suffix, start, end] = pop_array::<4>(stack)?;
    let window = str_window(text.to_str()?, start.to_int()?, end.to_int()?);
    push(stack, window.ends_with(suffix.to_str()?))
}

/// The `[start:end]` window PyTorch's string methods use (end=-1 means the whole string).
fn str_window(text: &str, start: i64, end: i64) -> String {
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len() as i64;
    let start = if start < 0 {
        (size + start).max(0)
    } else {
        start.min(size)
    };
    let end = if end < 0 {
        (size + end + 1).max(0)
    } else {
        end.min(size)
    };
    if end <= start {
        return String::new();
    }
    chars[start as usize..end as usize].iter().collect()
}

/// `range()` length: PyTorch's `aten::__range_length`.
fn range_length(stack: &mut Stack) -> Result<()> {
    let [lo, hi, step] = pop_array::<3>(stack)?;
    let (lo, hi, step) = (lo.to_int()?, hi.to_int()?, step.to_int()?);
    if step == 0 {
        return Err(RuntimeError::ValueError(
            "range() arg 3 must not be zero".to_string(),
        ));
    }
    let length = if step > 0 && lo < hi {
        1 + (hi as i128 - 1 - lo as i128) / step as i128
    } else if step < 0 && lo > hi {
        1 + (lo as i128 - 1 - hi as i128) / (-(step as i128))
    } else {
        0
    };
    push(stack, i64::try_from(length).unwrap_or(i64::MAX))
}

/// The loop variable of `range(start, _, step)` at iteration `index`.
fn derive_index(stack: &mut Stack) -> Result<()> {
    let [index, start, step] = pop_array::<3>(stack)?;
    let (index, start, step) = (index.to_int()?, start.to_int()?, step.to_int()?);
    push(stack, start.wrapping_add(index.wrapping_mul(step)))
}

/// The table: (schema, kernel), in PyTorch's registration order within each name.
pub const TABLE: &[KernelTableEntry] = &[
    ("aten::add.int(int a, int b) -> int", add),
    ("aten::add.float(float a, float b) -> float", add),
    ("aten::add.int_float(int a, float b) -> float", add),
    ("aten::add.float_int(float a, int b) -> float", add),
    ("aten::add(Scalar a, Scalar b) -> Scalar", add),
    ("aten::add.str(str a, str b) -> str", str_concat),
    ("aten::sub.int(int a, int b) -> int", sub),
    ("aten::sub.float(float a, float b) -> float", sub),
    ("aten::sub.int_float(int a, float b) -> float", sub),
    ("aten::sub.float_int(float a, int b) -> float", sub),
    ("aten::sub(Scalar a, Scalar b) -> Scalar", sub),
    ("aten::mul.int(int a, int b) -> int", mul),
    ("aten::mul.float(float a, float b) -> float", mul),
    ("aten::mul.int_float(int a, float b) -> float", mul),
    ("aten::mul.float_int(float a, int b) -> float", mul),
    ("aten::mul(Scalar a, Scalar b) -> Scalar", mul),
    ("aten::div.int(int a, int b) -> float", div),
    ("aten::div.float(float a, float b) -> float", div),
    ("aten::div.int_float(int a, float b) -> float", div),
    ("aten::div.float_int(float a, int b) -> float", div),
    ("aten::div(Scalar a, Scalar b) -> float", div),
    ("aten::floordiv.int(int a, int b) -> int", floordiv),
    ("aten::floordiv.float(float a, float b) -> float", floordiv),
    (
        "aten::floordiv.int_float(int a, float b) -> float",
        floordiv,
    ),
    (
        "aten::floordiv.float_int(float a, int b) -> float",
        floordiv,
    ),
    ("aten::floordiv(Scalar a, Scalar b) -> Scalar", floordiv),
    ("aten::remainder.int(int a, int b) -> int", remainder),
    (
        "aten::remainder.float(float a, float b) -> float",
        remainder,
    ),
    (
        "aten::remainder.int_float(int a, float b) -> float",
        remainder,
    ),
    (
        "aten::remainder.float_int(float a, int b) -> float",
        remainder,
    ),
    ("aten::remainder(Scalar a, Scalar b) -> Scalar", remainder),
    ("aten::pow.int(int a, int b) -> float", pow),
    ("aten::pow.float(float a, float b) -> float", pow),
    ("aten::pow.int_float(int a, float b) -> float", pow),
    ("aten::pow.float_int(float a, int b) -> float", pow),
    ("aten::pow.Scalar_Scalar(Scalar a, Scalar b) -> float", pow),
    ("aten::pow.int_to_int(int a, int b) -> int", pow_int_to_int),
    ("prim::min.int(int a, int b) -> int", min),
    ("prim::min.float(float a, float b) -> float", min),
    ("prim::min.int_float(int a, float b) -> float", min),
    ("prim::min.float_int(float a, int b) -> float", min),
    ("prim::min(Scalar a, Scalar b) -> Scalar", min),
    ("prim::max.int(int a, int b) -> int", max),
    ("prim::max.float(float a, float b) -> float", max),
    ("prim::max.int_float(int a, float b) -> float", max),
    ("prim::max.float_int(float a, int b) -> float", max),
    ("prim::max(Scalar a, Scalar b) -> Scalar", max),
    ("aten::eq.int(int a, int b) -> bool", eq),
    ("aten::eq.float(float a, float b) -> bool", eq),
    ("aten::eq.int_float(int a, float b) -> bool", eq),
    ("aten::eq.float_int(float a, int b) -> bool", eq),
    ("aten::eq(Scalar a, Scalar b) -> bool", eq),
    ("aten::eq.str(str a, str b) -> bool", eq),
    ("aten::eq.bool(bool a, bool b) -> bool", eq),
    ("aten::eq.device(Device a, Device b) -> bool", eq),
    ("aten::ne.int(int a, int b) -> bool", ne),
    ("aten::ne.float(float a, float b) -> bool", ne),
    ("aten::ne.int_float(int a, float b) -> bool", ne),
    ("aten::ne.float_int(float a, int b) -> bool", ne),
    ("aten::ne(Scalar a, Scalar b) -> bool", ne),
    ("aten::ne.str(str a, str b) -> bool", ne),
    ("aten::ne.bool(bool a, bool b) -> bool", ne),
    ("aten::ne.device(Device a, Device b) -> bool", ne),
    ("aten::lt.int(int a, int b) -> bool", lt),
    ("aten::lt.float(float a, float b) -> bool", lt),
    ("aten::lt.int_float(int a, float b) -> bool", lt),
    ("aten::lt.float_int(float a, int b) -> bool", lt),
    ("aten::lt(Scalar a, Scalar b) -> bool", lt),
    ("aten::lt.str(str a, str b) -> bool", lt),
    ("aten::gt.int(int a, int b) -> bool", gt),
    ("aten::gt.float(float a, float b) -> bool", gt),
    ("aten::gt.int_float(int a, float b) -> bool", gt),
    ("aten::gt.float_int(float a, int b) -> bool", gt),
    ("aten::gt(Scalar a, Scalar b) -> bool", gt),
    ("aten::gt.str(str a, str b) -> bool", gt),
    ("aten::le.int(int a, int b) -> bool", le),
    ("aten::le.float(float a, float b) -> bool", le),
    ("aten::le.int_float(int a, float b) -> bool", le),
    ("aten::le.float_int(float a, int b) -> bool", le),
    ("aten::le(Scalar a, Scalar b) -> bool", le),
    ("aten::le.str(str a, str b) -> bool", le),
    ("aten::ge.int(int a, int b) -> bool", ge),
    ("aten::ge.float(float a, float b) -> bool", ge),
    ("aten::ge.int_float(int a, float b) -> bool", ge),
    ("aten::ge.float_int(float a, int b) -> bool", ge),
    ("aten::ge(Scalar a, Scalar b) -> bool", ge),
    ("aten::ge.str(str a, str b) -> bool", ge),
    ("aten::__and__.bool(bool a, bool b) -> bool", bool_and),
    ("aten::__and__.int(int a, int b) -> int", int_and),
    ("aten::__or__.bool(bool a, bool b) -> bool", bool_or),
    ("aten::__or__.int(int a, int b) -> int", int_or),
    ("aten::__xor__.bool(bool a, bool b) -> bool", bool_xor),
    ("aten::__xor__.int(int a, int b) -> int", int_xor),
    ("aten::__not__(bool self) -> bool", bool_not),
    ("aten::neg.int(int a) -> int", neg),
    ("aten::neg.float(float a) -> float", neg),
    ("aten::neg.Scalar(Scalar a) -> Scalar", neg),
    ("prim::abs.int(int a) -> int", abs),
    ("prim::abs.float(float a) -> float", abs),
    ("prim::abs.Scalar(Scalar a) -> Scalar", abs),
    ("aten::floor.int(int a) -> int", floor),
    ("aten::floor.float(float a) -> int", floor),
    ("aten::floor.Scalar(Scalar a) -> Scalar", floor),
    ("aten::ceil.int(int a) -> int", ceil),
    ("aten::ceil.float(float a) -> int", ceil),
    ("aten::ceil.Scalar(Scalar a) -> Scalar", ceil),
    ("aten::Bool.int(int a) -> bool", to_bool),
    ("aten::Bool.float(float a) -> bool", to_bool),
    ("aten::Int.bool(bool a) -> int", to_int),
    ("aten::Int.float(float a) -> int", to_int),
    ("aten::Int.Scalar(Scalar a) -> int", to_int),
    ("aten::Int.str(str a) -> int", int_from_str),
    ("aten::Float.Scalar(Scalar a) -> float", to_float),
    ("aten::Float.int(int a) -> float", to_float),
    ("aten::Float.bool(bool a) -> float", to_float),
    ("aten::Float.str(str a) -> float", float_from_str),
    ("aten::len.str(str s) -> int", str_len),
    (
        "aten::__getitem__.str(str s, int index) -> str",
        str_getitem,
    ),
    (
        "aten::slice.str(str string, int? start=None, int? end=None, int step=1) -> str",
        str_slice,
    ),
    ("aten::lower(str self) -> str", str_lower),
    ("aten::upper(str self) -> str", str_upper),
    (
        "aten::startswith(str self, str substr, int start=0, int end=-1) -> bool",
        str_startswith,
    ),
    (
        "aten::endswith(str self, str substr, int start=0, int end=-1) -> bool",
        str_endswith,
    ),
    (
        "aten::__range_length(int lo, int hi, int step) -> int",
        range_length,
    ),
    (
        "aten::__derive_index(int index, int start, int step) -> int",
        derive_index,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn run(kernel: fn(&mut Stack) -> Result<()>, args: Vec<IValue>) -> Result<IValue> {
        let mut stack = args;
        kernel(&mut stack)?;
        stack
            .pop()
            .ok_or_else(|| RuntimeError::Other("no result".into()))
    }

    #[test]
    fn python_division_rules() {
        assert_eq!(python_floordiv(-7, 2).unwrap(), -4);
        assert_eq!(python_floordiv(7, -2).unwrap(), -4);
        assert_eq!(python_floordiv(7, 2).unwrap(), 3);
        assert_eq!(python_remainder(-7, 2).unwrap(), 1);
        assert_eq!(python_remainder(7, -2).unwrap(), -1);
        assert_eq!(python_remainder(-7, -2).unwrap(), -1);
        assert!(python_floordiv(1, 0).is_err());
        assert_eq!(python_remainder_float(-7.0, 2.0), 1.0);
        assert_eq!(python_remainder_float(5.5, -2.0), -0.5);
    }

    #[test]
    fn mixed_number_kernels() {
        let result = run(add, vec![IValue::Int(2), IValue::Double(0.5)]).unwrap();
        assert!(matches!(result, IValue::Double(v) if v == 2.5));
        let result = run(div, vec![IValue::Int(7), IValue::Int(2)]).unwrap();
        assert!(matches!(result, IValue::Double(v) if v == 3.5));
        let result = run(pow, vec![IValue::Int(2), IValue::Int(-1)]).unwrap();
        assert!(matches!(result, IValue::Double(v) if v == 0.5));
        let result = run(lt, vec![IValue::from("abc"), IValue::from("abd")]).unwrap();
        assert!(matches!(result, IValue::Bool(true)));
        let result = run(ne, vec![IValue::Double(f64::NAN), IValue::Double(f64::NAN)]).unwrap();
        assert!(matches!(result, IValue::Bool(true)));
        let result = run(eq, vec![IValue::Double(f64::NAN), IValue::Double(f64::NAN)]).unwrap();
        assert!(matches!(result, IValue::Bool(false)));
        let result = run(
            range_length,
            vec![IValue::Int(10), IValue::Int(0), IValue::Int(-3)],
        )
        .unwrap();
        assert!(matches!(result, IValue::Int(4)));
        assert!(run(to_int, vec![IValue::Double(f64::NAN)]).is_err());
        let result = run(to_int, vec![IValue::Double(-2.7)]).unwrap();
        assert!(matches!(result, IValue::Int(-2)));
    }
}
