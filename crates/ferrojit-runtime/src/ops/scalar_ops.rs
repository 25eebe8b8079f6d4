//! int/float/bool/str arithmetic, comparison and conversion operators (PyTorch's
//! register_prim_ops.cpp schemas). One kernel serves every overload of an operation: the
//! operands' kinds pick int or float arithmetic, as PyTorch's `Scalar` overloads do.

use std::sync::Arc;

use ferrojit_tensor::{Scalar, Tensor};

use super::binding::typed;
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::number_op::{python_floordiv, python_remainder, python_remainder_float};
use crate::opdef::OperatorDeclaration;

/// Operands of a binary number op: both ints (bools count as ints) or, otherwise, floats.
enum NumberPair {
    Ints(i64, i64),
    Floats(f64, f64),
}

fn number_pair(a: Scalar, b: Scalar) -> NumberPair {
    match (a, b) {
        (Scalar::Float(_), _) | (_, Scalar::Float(_)) => NumberPair::Floats(a.to_f64(), b.to_f64()),
        _ => NumberPair::Ints(a.to_i64(), b.to_i64()),
    }
}

/// A binary number operator: int arithmetic on two ints (bools count as ints), float
/// arithmetic otherwise.
fn binary(
    a: Scalar,
    b: Scalar,
    int_op: impl Fn(i64, i64) -> Result<IValue>,
    float_op: impl Fn(f64, f64) -> Result<IValue>,
) -> Result<IValue> {
    match number_pair(a, b) {
        NumberPair::Ints(a, b) => int_op(a, b),
        NumberPair::Floats(a, b) => float_op(a, b),
    }
}

fn add(a: Scalar, b: Scalar) -> Result<IValue> {
    binary(
        a,
        b,
        |a, b| Ok(IValue::Int(a.wrapping_add(b))),
        |a, b| Ok(IValue::Double(a + b)),
    )
}

fn sub(a: Scalar, b: Scalar) -> Result<IValue> {
    binary(
        a,
        b,
        |a, b| Ok(IValue::Int(a.wrapping_sub(b))),
        |a, b| Ok(IValue::Double(a - b)),
    )
}

fn mul(a: Scalar, b: Scalar) -> Result<IValue> {
    binary(
        a,
        b,
        |a, b| Ok(IValue::Int(a.wrapping_mul(b))),
        |a, b| Ok(IValue::Double(a * b)),
    )
}

/// True division: always float (division by zero gives inf/nan, as in PyTorch's C++).
fn div(a: Scalar, b: Scalar) -> Result<IValue> {
    binary(
        a,
        b,
        |a, b| Ok(IValue::Double(a as f64 / b as f64)),
        |a, b| Ok(IValue::Double(a / b)),
    )
}

fn floordiv(a: Scalar, b: Scalar) -> Result<IValue> {
    binary(
        a,
        b,
        |a, b| Ok(IValue::Int(python_floordiv(a, b)?)),
        |a, b| Ok(IValue::Double((a / b).floor())),
    )
}

/// `aten::__round_to_zero_floordiv`, which loop unrolling inserts for the unrolled trip
/// count: C++ integer division, rounding toward zero (PyTorch crashes on a zero divisor;
/// here it is a zero-division error).
fn round_to_zero_floordiv(a: i64, b: i64) -> Result<IValue> {
    if b == 0 {
        return Err(RuntimeError::ZeroDivision("division by 0".to_string()));
    }
    Ok(IValue::Int(a.wrapping_div(b)))
}

fn remainder(a: Scalar, b: Scalar) -> Result<IValue> {
    binary(
        a,
        b,
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
fn pow(a: Scalar, b: Scalar) -> Result<IValue> {
    binary(
        a,
        b,
        |a, b| Ok(IValue::Double(checked_pow(a as f64, b as f64)?)),
        |a, b| Ok(IValue::Double(checked_pow(a, b)?)),
    )
}

fn pow_int_to_int(a: i64, b: i64) -> Result<i64> {
    if b < 0 {
        if a == 0 {
            return Err(RuntimeError::Other(
                "0.0 cannot be raised to a negative power".to_string(),
            ));
        }
        return Ok((a as f64).powf(b as f64) as i64);
    }
    let exponent = u32::try_from(b).unwrap_or(u32::MAX);
    Ok(a.wrapping_pow(exponent))
}

fn min(a: Scalar, b: Scalar) -> Result<IValue> {
    binary(
        a,
        b,
        |a, b| Ok(IValue::Int(a.min(b))),
        |a, b| Ok(IValue::Double(if a < b { a } else { b })),
    )
}

fn max(a: Scalar, b: Scalar) -> Result<IValue> {
    binary(
        a,
        b,
        |a, b| Ok(IValue::Int(a.max(b))),
        |a, b| Ok(IValue::Double(if a > b { a } else { b })),
    )
}

/// `nan_result` is what a comparison involving NaN gives: true only for `!=`.
fn compare(
    a: &IValue,
    b: &IValue,
    test: impl Fn(std::cmp::Ordering) -> bool,
    nan_result: bool,
) -> Result<bool> {
    Ok(match (a, b) {
        (IValue::Str(x), IValue::Str(y)) => test(x.as_ref().cmp(y.as_ref())),
        (IValue::Device(x), IValue::Device(y)) => {
            // Only equality is defined for devices; order them by text for completeness.
            test(x.to_string().cmp(&y.to_string()))
        }
        _ => match number_pair(a.to_scalar()?, b.to_scalar()?) {
            NumberPair::Ints(x, y) => test(x.cmp(&y)),
            NumberPair::Floats(x, y) => match x.partial_cmp(&y) {
                Some(ordering) => test(ordering),
                None => nan_result,
            },
        },
    })
}

fn eq(a: IValue, b: IValue) -> Result<bool> {
    compare(&a, &b, |o| o.is_eq(), false)
}

fn ne(a: IValue, b: IValue) -> Result<bool> {
    compare(&a, &b, |o| o.is_ne(), true)
}

fn lt(a: IValue, b: IValue) -> Result<bool> {
    compare(&a, &b, |o| o.is_lt(), false)
}

fn le(a: IValue, b: IValue) -> Result<bool> {
    compare(&a, &b, |o| o.is_le(), false)
}

fn gt(a: IValue, b: IValue) -> Result<bool> {
    compare(&a, &b, |o| o.is_gt(), false)
}

fn ge(a: IValue, b: IValue) -> Result<bool> {
    compare(&a, &b, |o| o.is_ge(), false)
}

fn neg(a: Scalar) -> Result<IValue> {
    Ok(match a {
        Scalar::Float(f) => IValue::Double(-f),
        other => IValue::Int(other.to_i64().wrapping_neg()),
    })
}

fn abs(a: Scalar) -> Result<IValue> {
    Ok(match a {
        Scalar::Float(f) => IValue::Double(f.abs()),
        other => IValue::Int(other.to_i64().wrapping_abs()),
    })
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

fn floor(a: Scalar) -> Result<i64> {
    match a {
        Scalar::Float(f) => float_to_int(f.floor()),
        other => Ok(other.to_i64()),
    }
}

fn ceil(a: Scalar) -> Result<i64> {
    match a {
        Scalar::Float(f) => float_to_int(f.ceil()),
        other => Ok(other.to_i64()),
    }
}

fn bool_and(a: bool, b: bool) -> Result<bool> {
    Ok(a && b)
}

fn bool_or(a: bool, b: bool) -> Result<bool> {
    Ok(a || b)
}

fn bool_xor(a: bool, b: bool) -> Result<bool> {
    Ok(a != b)
}

fn bool_not(a: bool) -> Result<bool> {
    Ok(!a)
}

fn int_and(a: i64, b: i64) -> Result<i64> {
    Ok(a & b)
}

fn int_or(a: i64, b: i64) -> Result<i64> {
    Ok(a | b)
}

fn int_xor(a: i64, b: i64) -> Result<i64> {
    Ok(a ^ b)
}

fn negative_shift() -> RuntimeError {
    RuntimeError::ValueError("negative shift count".to_string())
}

/// `a << b` on 64-bit ints: bits shifted out are lost; 64 or more gives 0.
fn int_lshift(a: i64, b: i64) -> Result<i64> {
    if b < 0 {
        return Err(negative_shift());
    }
    let shifted = u32::try_from(b)
        .ok()
        .and_then(|b| a.checked_shl(b))
        .unwrap_or(0);
    Ok(shifted)
}

/// `a >> b`: arithmetic shift (rounds toward negative infinity, as Python).
fn int_rshift(a: i64, b: i64) -> Result<i64> {
    if b < 0 {
        return Err(negative_shift());
    }
    let amount = u32::try_from(b.min(63)).unwrap_or(63);
    Ok(a >> amount)
}

/// `Int(x)` for float, bool, int and Scalar inputs.
fn to_int(a: Scalar) -> Result<i64> {
    match a {
        Scalar::Float(f) => float_to_int(f),
        other => Ok(other.to_i64()),
    }
}

/// C's `strtoll` prefix rule as used by `std::stoll`: leading whitespace, an optional sign
/// and decimal digits. Returns the value and the number of bytes consumed, `Err("stoll")`
/// when nothing converts or the value does not fit (the `what()` of the C++ exceptions).
fn stoll_prefix(text: &str) -> std::result::Result<(i64, usize), &'static str> {
    let bytes = text.as_bytes();
    let mut position = 0;
    while position < bytes.len()
        && matches!(
            bytes[position],
            b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r'
        )
    {
        position += 1;
    }
    let negative = match bytes.get(position) {
        Some(b'-') => {
            position += 1;
            true
        }
        Some(b'+') => {
            position += 1;
            false
        }
        _ => false,
    };
    let digits_start = position;
    let mut magnitude: i128 = 0;
    while let Some(digit) = bytes.get(position).filter(|b| b.is_ascii_digit()) {
        magnitude = (magnitude * 10 + i128::from(digit - b'0')).min(i128::from(u64::MAX) + 1);
        position += 1;
    }
    if position == digits_start {
        return Err("stoll");
    }
    let value = if negative { -magnitude } else { magnitude };
    let value = i64::try_from(value).map_err(|_| "stoll")?;
    Ok((value, position))
}

/// `int(s)`: PyTorch's `c10::stoll`, then the whole string must have been consumed.
fn int_from_str(text: String) -> Result<i64> {
    let (value, consumed) =
        stoll_prefix(&text).map_err(|what| RuntimeError::Other(what.to_string()))?;
    if consumed != text.len() {
        return Err(RuntimeError::Other(format!(
            "invalid literal for int() with base 10: '{text}'"
        )));
    }
    Ok(value)
}

/// PyTorch's `checkImplicitTensorToNum`: a tensor passed where a number is expected must be
/// 0-dimensional (and integral when an int is expected).
pub(crate) fn implicit_tensor_number(tensor: &Tensor, to_int: bool) -> Result<Scalar> {
    if !tensor.sizes().is_empty() {
        return Err(RuntimeError::Other(
            "Cannot input a tensor of dimension other than 0 as a scalar argument".to_string(),
        ));
    }
    if to_int && !tensor.dtype().is_integral(false) {
        return Err(RuntimeError::Other(format!(
            "Cannot input a tensor of type {} as an integral argument",
            tensor.dtype().scalar_type_name()
        )));
    }
    Ok(tensor.item()?)
}

fn int_implicit(tensor: Arc<Tensor>) -> Result<i64> {
    Ok(implicit_tensor_number(&tensor, true)?.to_i64())
}

fn float_implicit(tensor: Arc<Tensor>) -> Result<f64> {
    Ok(implicit_tensor_number(&tensor, false)?.to_f64())
}

/// A complex tensor gives a `complex` (TorchScript's Scalar covers complex numbers).
fn scalar_implicit(tensor: Arc<Tensor>) -> Result<IValue> {
    let number = implicit_tensor_number(&tensor, false)?;
    if tensor.dtype().is_complex() {
        return super::complex_scalar_ops::complex_element(&tensor).map(IValue::Complex);
    }
    Ok(IValue::from(number))
}

/// `Float(x)` for int, bool, float and Scalar inputs.
fn to_float(a: Scalar) -> Result<f64> {
    Ok(a.to_f64())
}

/// `Float.Scalar` of any number, a complex one included: its real part (c10's
/// `Scalar::toDouble` drops the imaginary part unchecked).
fn number_to_float(a: IValue) -> Result<f64> {
    match a {
        IValue::Complex(value) => Ok(value.re),
        other => to_float(other.to_scalar()?),
    }
}

/// `Int.Scalar` of any number: a complex one converts only without an imaginary part
/// (c10's `checked_convert` calls a nonzero one an overflow), then as its real part does.
fn number_to_int(a: IValue) -> Result<i64> {
    match a {
        IValue::Complex(value) if value.im != 0.0 => Err(RuntimeError::Other(
            "value cannot be converted to type int without overflow".to_string(),
        )),
        IValue::Complex(value) => float_to_int(value.re),
        other => to_int(other.to_scalar()?),
    }
}

/// `float(s)`: PyTorch's `c10::stod` (leading whitespace, then C's float syntax), and the
/// whole string must have been consumed. `stod` is the message when nothing converts.
fn float_from_str(text: String) -> Result<f64> {
    let rest = text.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    if let Ok(value) = rest.parse::<f64>() {
        return Ok(value);
    }
    // Something converts but not everything: PyTorch's own message. Otherwise stod's.
    let converts_partly = rest
        .char_indices()
        .map(|(i, _)| i)
        .take(400)
        .any(|end| end > 0 && rest[..end].parse::<f64>().is_ok());
    if converts_partly {
        Err(RuntimeError::Other(format!(
            "could not convert string to float: '{text}'"
        )))
    } else {
        Err(RuntimeError::Other("stod".to_string()))
    }
}

/// `Bool(x)` for int and float inputs.
fn to_bool(a: Scalar) -> Result<bool> {
    Ok(a.to_bool())
}

fn str_concat(a: String, b: String) -> Result<String> {
    Ok(a + &b)
}

/// FNV-1a over bytes: a stable hash for strings.
/// The byte hash behind `std::hash` for strings and doubles in the C++ library PyTorch's
/// Linux builds use (a 64-bit MurmurHash2 variant with seed 0xc70f6907), so `hash("abc")`
/// gives the number PyTorch prints.
fn std_hash_bytes(bytes: &[u8]) -> i64 {
    const MUL: u64 = (0xc6a4_a793_u64 << 32) + 0x5bd1_e995;
    const SEED: u64 = 0xc70f_6907;
    fn shift_mix(value: u64) -> u64 {
        value ^ (value >> 47)
    }
    let mut hash = SEED ^ (bytes.len() as u64).wrapping_mul(MUL);
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let data = shift_mix(u64::from_le_bytes(word).wrapping_mul(MUL)).wrapping_mul(MUL);
        hash ^= data;
        hash = hash.wrapping_mul(MUL);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        let data = tail
            .iter()
            .rev()
            .fold(0u64, |acc, &byte| (acc << 8) | u64::from(byte));
        hash ^= data;
        hash = hash.wrapping_mul(MUL);
    }
    hash = shift_mix(hash).wrapping_mul(MUL);
    shift_mix(hash) as i64
}

/// PyTorch's `IValue::hash`: ints hash to themselves (`std::hash<int64_t>`), tuples combine
/// their elements; lists, dicts and objects are not hashable.
pub fn hash_value(value: &IValue) -> Result<i64> {
    Ok(match value {
        IValue::None => 0,
        IValue::Bool(b) => i64::from(*b),
        IValue::Int(i) => *i,
        IValue::Double(f) => {
            if *f == 0.0 {
                0
            } else {
                std_hash_bytes(&f.to_bits().to_le_bytes())
            }
        }
        IValue::Str(text) => std_hash_bytes(text.as_bytes()),
        IValue::Device(device) => std_hash_bytes(device.to_string().as_bytes()),
        IValue::Tuple(tuple) => {
            let mut seed: u64 = 0;
            for item in &tuple.items {
                let h = hash_value(item)? as u64;
                // boost::hash_combine
                seed ^= h
                    .wrapping_add(0x9e37_79b9)
                    .wrapping_add(seed << 6)
                    .wrapping_add(seed >> 2);
            }
            seed as i64
        }
        other => {
            return Err(RuntimeError::Other(format!(
                "Can't hash IValues with tag '{}'",
                other.tag_name()
            )))
        }
    })
}

fn hash(value: IValue) -> Result<i64> {
    hash_value(&value)
}

/// `range()` length: PyTorch's `aten::__range_length`.
fn range_length(lo: i64, hi: i64, step: i64) -> Result<i64> {
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
    Ok(i64::try_from(length).unwrap_or(i64::MAX))
}

/// The loop variable of `range(start, _, step)` at iteration `index`.
fn derive_index(index: i64, start: i64, step: i64) -> Result<i64> {
    Ok(start.wrapping_add(index.wrapping_mul(step)))
}

/// Every operator of this file, in PyTorch's registration order within each name.
#[rustfmt::skip]
pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        typed("aten::add.int(int a, int b) -> int", add),
        typed("aten::add.float(float a, float b) -> float", add),
        typed("aten::add.int_float(int a, float b) -> float", add),
        typed("aten::add.float_int(float a, int b) -> float", add),
        typed("aten::add(Scalar a, Scalar b) -> Scalar", add),
        typed("aten::add.str(str a, str b) -> str", str_concat),
        typed("aten::sub.int(int a, int b) -> int", sub),
        typed("aten::sub.float(float a, float b) -> float", sub),
        typed("aten::sub.int_float(int a, float b) -> float", sub),
        typed("aten::sub.float_int(float a, int b) -> float", sub),
        typed("aten::sub(Scalar a, Scalar b) -> Scalar", sub),
        typed("aten::mul.int(int a, int b) -> int", mul),
        typed("aten::mul.float(float a, float b) -> float", mul),
        typed("aten::mul.int_float(int a, float b) -> float", mul),
        typed("aten::mul.float_int(float a, int b) -> float", mul),
        typed("aten::mul(Scalar a, Scalar b) -> Scalar", mul),
        typed("aten::div.int(int a, int b) -> float", div),
        typed("aten::div.float(float a, float b) -> float", div),
        typed("aten::div.int_float(int a, float b) -> float", div),
        typed("aten::div.float_int(float a, int b) -> float", div),
        typed("aten::div(Scalar a, Scalar b) -> float", div),
        typed("aten::floordiv.int(int a, int b) -> int", floordiv),
        typed(
            "aten::__round_to_zero_floordiv.int(int a, int b) -> int",
            round_to_zero_floordiv,
        ),
        typed("aten::floordiv.float(float a, float b) -> float", floordiv),
        typed("aten::floordiv.int_float(int a, float b) -> float", floordiv),
        typed("aten::floordiv.float_int(float a, int b) -> float", floordiv),
        typed("aten::floordiv(Scalar a, Scalar b) -> Scalar", floordiv),
        typed("aten::remainder.int(int a, int b) -> int", remainder),
        typed("aten::remainder.float(float a, float b) -> float", remainder),
        typed("aten::remainder.int_float(int a, float b) -> float", remainder),
        typed("aten::remainder.float_int(float a, int b) -> float", remainder),
        typed("aten::remainder(Scalar a, Scalar b) -> Scalar", remainder),
        typed("aten::pow.int(int a, int b) -> float", pow),
        typed("aten::pow.float(float a, float b) -> float", pow),
        typed("aten::pow.int_float(int a, float b) -> float", pow),
        typed("aten::pow.float_int(float a, int b) -> float", pow),
        typed("aten::pow.Scalar_Scalar(Scalar a, Scalar b) -> float", pow),
        typed("aten::pow.int_to_int(int a, int b) -> int", pow_int_to_int),
        typed("prim::min.int(int a, int b) -> int", min),
        typed("prim::min.float(float a, float b) -> float", min),
        typed("prim::min.int_float(int a, float b) -> float", min),
        typed("prim::min.float_int(float a, int b) -> float", min),
        typed("prim::min(Scalar a, Scalar b) -> Scalar", min),
        typed("prim::max.int(int a, int b) -> int", max),
        typed("prim::max.float(float a, float b) -> float", max),
        typed("prim::max.int_float(int a, float b) -> float", max),
        typed("prim::max.float_int(float a, int b) -> float", max),
        typed("prim::max(Scalar a, Scalar b) -> Scalar", max),
        typed("aten::eq.int(int a, int b) -> bool", eq),
        typed("aten::eq.float(float a, float b) -> bool", eq),
        typed("aten::eq.int_float(int a, float b) -> bool", eq),
        typed("aten::eq.float_int(float a, int b) -> bool", eq),
        typed("aten::eq(Scalar a, Scalar b) -> bool", eq),
        typed("aten::eq.str(str a, str b) -> bool", eq),
        typed("aten::eq.bool(bool a, bool b) -> bool", eq),
        typed("aten::eq.device(Device a, Device b) -> bool", eq),
        typed("aten::ne.int(int a, int b) -> bool", ne),
        typed("aten::ne.float(float a, float b) -> bool", ne),
        typed("aten::ne.int_float(int a, float b) -> bool", ne),
        typed("aten::ne.float_int(float a, int b) -> bool", ne),
        typed("aten::ne(Scalar a, Scalar b) -> bool", ne),
        typed("aten::ne.str(str a, str b) -> bool", ne),
        typed("aten::ne.bool(bool a, bool b) -> bool", ne),
        typed("aten::ne.device(Device a, Device b) -> bool", ne),
        typed("aten::lt.int(int a, int b) -> bool", lt),
        typed("aten::lt.float(float a, float b) -> bool", lt),
        typed("aten::lt.int_float(int a, float b) -> bool", lt),
        typed("aten::lt.float_int(float a, int b) -> bool", lt),
        typed("aten::lt(Scalar a, Scalar b) -> bool", lt),
        typed("aten::lt.str(str a, str b) -> bool", lt),
        typed("aten::gt.int(int a, int b) -> bool", gt),
        typed("aten::gt.float(float a, float b) -> bool", gt),
        typed("aten::gt.int_float(int a, float b) -> bool", gt),
        typed("aten::gt.float_int(float a, int b) -> bool", gt),
        typed("aten::gt(Scalar a, Scalar b) -> bool", gt),
        typed("aten::gt.str(str a, str b) -> bool", gt),
        typed("aten::le.int(int a, int b) -> bool", le),
        typed("aten::le.float(float a, float b) -> bool", le),
        typed("aten::le.int_float(int a, float b) -> bool", le),
        typed("aten::le.float_int(float a, int b) -> bool", le),
        typed("aten::le(Scalar a, Scalar b) -> bool", le),
        typed("aten::le.str(str a, str b) -> bool", le),
        typed("aten::ge.int(int a, int b) -> bool", ge),
        typed("aten::ge.float(float a, float b) -> bool", ge),
        typed("aten::ge.int_float(int a, float b) -> bool", ge),
        typed("aten::ge.float_int(float a, int b) -> bool", ge),
        typed("aten::ge(Scalar a, Scalar b) -> bool", ge),
        typed("aten::ge.str(str a, str b) -> bool", ge),
        typed("aten::__and__.bool(bool a, bool b) -> bool", bool_and),
        typed("aten::__and__.int(int a, int b) -> int", int_and),
        typed("aten::__or__.bool(bool a, bool b) -> bool", bool_or),
        typed("aten::__or__.int(int a, int b) -> int", int_or),
        typed("aten::__xor__.bool(bool a, bool b) -> bool", bool_xor),
        typed("aten::__xor__.int(int a, int b) -> int", int_xor),
        typed("aten::__lshift__.int(int a, int b) -> int", int_lshift),
        typed("aten::__rshift__.int(int a, int b) -> int", int_rshift),
        typed("aten::__not__(bool self) -> bool", bool_not),
        typed("aten::neg.int(int a) -> int", neg),
        typed("aten::neg.float(float a) -> float", neg),
        typed("aten::neg.Scalar(Scalar a) -> Scalar", neg),
        typed("prim::abs.int(int a) -> int", abs),
        typed("prim::abs.float(float a) -> float", abs),
        typed("prim::abs.Scalar(Scalar a) -> Scalar", abs),
        typed("aten::floor.int(int a) -> int", floor),
        typed("aten::floor.float(float a) -> int", floor),
        typed("aten::floor.Scalar(Scalar a) -> Scalar", floor),
        typed("aten::ceil.int(int a) -> int", ceil),
        typed("aten::ceil.float(float a) -> int", ceil),
        typed("aten::ceil.Scalar(Scalar a) -> Scalar", ceil),
        typed("aten::IntImplicit(Tensor a) -> int", int_implicit),
        typed("aten::FloatImplicit(Tensor a) -> float", float_implicit),
        typed("aten::ScalarImplicit(Tensor a) -> Scalar", scalar_implicit),
        typed("aten::Bool.int(int a) -> bool", to_bool),
        typed("aten::Bool.float(float a) -> bool", to_bool),
        typed("aten::Int.bool(bool a) -> int", to_int),
        typed("aten::Int.float(float a) -> int", to_int),
        typed("aten::Int.Scalar(Scalar a) -> int", number_to_int),
        typed("aten::Int.str(str a) -> int", int_from_str),
        typed("aten::Float.Scalar(Scalar a) -> float", number_to_float),
        typed("aten::Float.int(int a) -> float", to_float),
        typed("aten::Float.bool(bool a) -> float", to_float),
        typed("aten::Float.str(str a) -> float", float_from_str),
        typed("aten::hash.generic(t value) -> int", hash),
        typed("aten::__range_length(int lo, int hi, int step) -> int", range_length),
        typed("aten::__derive_index(int index, int start, int step) -> int", derive_index),
    ]
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::number_op::NumberOp;
    use crate::opdef::DeclaredKernel;

    /// Values printed by PyTorch 2.15 (Linux, CPU wheel) for `hash(...)` in TorchScript
    /// (`torch.jit.CompilationUnit`), so hashes agree with PyTorch's, not merely exist.
    #[test]
    fn hash_matches_pytorch() {
        let string = |text: &str| IValue::Str(std::sync::Arc::from(text));
        let cases = [
            (string("abc"), 3663726644998027833),
            (string(""), 6142509188972423790),
            (string("abcdefghij"), -404676311405430612),
            (
                string("h\u{e9}llo w\u{f6}rld, a longer string!"),
                -1296424279222411477,
            ),
            (IValue::Double(1.5), 4982507072649106663),
            (IValue::Double(-1e300), -4705377318500119136),
            (IValue::Double(-0.0), 0),
            (IValue::Double(0.0), 0),
            (IValue::Int(-7), -7),
            (IValue::Bool(true), 1),
            (
                IValue::tuple(vec![IValue::Int(1), string("a")]),
                4993892805569072552,
            ),
            (
                IValue::tuple(vec![
                    IValue::Double(2.5),
                    IValue::Bool(true),
                    IValue::Int(-3),
                ]),
                -6097344701250376614,
            ),
        ];
        for (value, expected) in cases {
            assert_eq!(hash_value(&value).unwrap(), expected, "hash({value})");
        }
    }

    /// Runs a typed kernel on `arguments` and returns its one result.
    fn run_declaration(
        declaration: &OperatorDeclaration,
        arguments: Vec<IValue>,
    ) -> Result<IValue> {
        let DeclaredKernel::Arguments(kernel) = &declaration.kernel else {
            panic!("{} is not a typed kernel", declaration.schema);
        };
        kernel(&arguments)?
            .pop()
            .ok_or_else(|| RuntimeError::Other("no result".into()))
    }

    /// Runs the operator declared under `schema`.
    fn run(schema: &str, arguments: Vec<IValue>) -> Result<IValue> {
        let declaration = declarations()
            .into_iter()
            .find(|declaration| declaration.schema == schema)
            .unwrap_or_else(|| panic!("no operator {schema}"));
        run_declaration(&declaration, arguments)
    }

    fn same_result(a: &Result<IValue>, b: &Result<IValue>) -> bool {
        match (a, b) {
            (Ok(IValue::Int(x)), Ok(IValue::Int(y))) => x == y,
            (Ok(IValue::Bool(x)), Ok(IValue::Bool(y))) => x == y,
            (Ok(IValue::Double(x)), Ok(IValue::Double(y))) => {
                x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
            }
            (Err(x), Err(y)) => x.to_string() == y.to_string(),
            _ => false,
        }
    }

    /// The interpreter's inline number operators give exactly what the kernels registered
    /// under the same schemas give, on every int/float operand pair (and decline the rest).
    #[test]
    fn inline_number_ops_match_their_kernels() {
        let ints = [0i64, 1, -1, 2, -3, 7, i64::MAX, i64::MIN];
        let floats = [
            0.0f64,
            -0.0,
            1.5,
            -2.25,
            3.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        let mut values: Vec<IValue> = ints.iter().map(|&i| IValue::Int(i)).collect();
        values.extend(floats.iter().map(|&f| IValue::Double(f)));
        let mut checked = 0;
        for declaration in declarations() {
            let full_name = ferrojit_ir::parse_schema(&declaration.schema)
                .unwrap()
                .full_name();
            let Some(op) = NumberOp::for_operator(&full_name) else {
                continue;
            };
            checked += 1;
            for a in &values {
                for b in &values {
                    let expected = run_declaration(&declaration, vec![a.clone(), b.clone()]);
                    match op.apply(a, b) {
                        Some(inline) => assert!(
                            same_result(&Ok(inline.into()), &expected),
                            "{full_name}({a:?}, {b:?}): inline {inline:?}, kernel {expected:?}"
                        ),
                        // Only int zero divisors go to the kernel, which raises.
                        None => assert!(
                            matches!((a, b), (IValue::Int(_), IValue::Int(0))) && expected.is_err(),
                            "{full_name}({a:?}, {b:?}) not inline, kernel {expected:?}"
                        ),
                    }
                }
            }
            for other in [IValue::Bool(true), IValue::None, IValue::from("x")] {
                assert!(op.apply(&other, &IValue::Int(1)).is_none());
                assert!(op.apply(&IValue::Double(1.0), &other).is_none());
            }
        }
        // Five overloads each of twelve operators.
        assert_eq!(checked, 60);
    }

    #[test]
    fn conversions_shifts_and_hash() {
        let int_of = |text: &str| run("aten::Int.str(str a) -> int", vec![IValue::from(text)]);
        assert!(matches!(int_of(" 12"), Ok(IValue::Int(12))));
        assert!(matches!(int_of("-7"), Ok(IValue::Int(-7))));
        assert_eq!(int_of("xyz").unwrap_err().to_string(), "stoll");
        assert_eq!(
            int_of("99999999999999999999").unwrap_err().to_string(),
            "stoll"
        );
        assert!(int_of("12 ")
            .unwrap_err()
            .to_string()
            .contains("invalid literal for int() with base 10: '12 '"));
        let float_of =
            |text: &str| run("aten::Float.str(str a) -> float", vec![IValue::from(text)]);
        assert!(matches!(float_of(" 2.5"), Ok(IValue::Double(v)) if v == 2.5));
        assert!(matches!(float_of("-inf"), Ok(IValue::Double(v)) if v == f64::NEG_INFINITY));
        assert_eq!(float_of("abc").unwrap_err().to_string(), "stod");
        assert!(float_of("2.5x")
            .unwrap_err()
            .to_string()
            .contains("could not convert"));
        let shifted = run(
            "aten::__lshift__.int(int a, int b) -> int",
            vec![IValue::Int(-5), IValue::Int(2)],
        )
        .unwrap();
        assert!(matches!(shifted, IValue::Int(-20)));
        let shifted = run(
            "aten::__rshift__.int(int a, int b) -> int",
            vec![IValue::Int(-5), IValue::Int(1)],
        )
        .unwrap();
        assert!(matches!(shifted, IValue::Int(-3)));
        let shifted = run(
            "aten::__lshift__.int(int a, int b) -> int",
            vec![IValue::Int(1), IValue::Int(200)],
        )
        .unwrap();
        assert!(matches!(shifted, IValue::Int(0)));
        assert!(run(
            "aten::__rshift__.int(int a, int b) -> int",
            vec![IValue::Int(1), IValue::Int(-1)]
        )
        .is_err());
        assert!(matches!(
            run("aten::hash.generic(t value) -> int", vec![IValue::Int(42)]),
            Ok(IValue::Int(42))
        ));
        let a = run(
            "aten::hash.generic(t value) -> int",
            vec![IValue::from("key")],
        )
        .unwrap()
        .to_int()
        .unwrap();
        let b = run(
            "aten::hash.generic(t value) -> int",
            vec![IValue::from("key")],
        )
        .unwrap()
        .to_int()
        .unwrap();
        assert_eq!(a, b);
        assert!(run(
            "aten::hash.generic(t value) -> int",
            vec![IValue::int_list(&[1])]
        )
        .is_err());
        let error = python_floordiv(1, 0).unwrap_err();
        assert!(error.to_string().contains("division by 0"));
    }

    #[test]
    fn round_to_zero_floordiv_truncates() {
        let schema = "aten::__round_to_zero_floordiv.int(int a, int b) -> int";
        // PyTorch's answers: -7 / 2 = -3, 7 / -2 = -3, 7 / 2 = 3, -8 / 8 = -1.
        for (a, b, expected) in [(-7, 2, -3), (7, -2, -3), (7, 2, 3), (-8, 8, -1)] {
            let result = run(schema, vec![IValue::Int(a), IValue::Int(b)]).unwrap();
            assert_eq!(result.to_int().unwrap(), expected, "{a} / {b}");
        }
        assert!(run(schema, vec![IValue::Int(1), IValue::Int(0)]).is_err());
        let smallest = run(schema, vec![IValue::Int(i64::MIN), IValue::Int(-1)]).unwrap();
        assert_eq!(
            smallest.to_int().unwrap(),
            i64::MIN,
            "wraps as the other int kernels do"
        );
    }

    #[test]
    fn mixed_number_kernels() {
        let result = run(
            "aten::add(Scalar a, Scalar b) -> Scalar",
            vec![IValue::Int(2), IValue::Double(0.5)],
        )
        .unwrap();
        assert!(matches!(result, IValue::Double(v) if v == 2.5));
        let result = run(
            "aten::div(Scalar a, Scalar b) -> float",
            vec![IValue::Int(7), IValue::Int(2)],
        )
        .unwrap();
        assert!(matches!(result, IValue::Double(v) if v == 3.5));
        let result = run(
            "aten::pow.int(int a, int b) -> float",
            vec![IValue::Int(2), IValue::Int(-1)],
        )
        .unwrap();
        assert!(matches!(result, IValue::Double(v) if v == 0.5));
        let result = run(
            "aten::lt.str(str a, str b) -> bool",
            vec![IValue::from("abc"), IValue::from("abd")],
        )
        .unwrap();
        assert!(matches!(result, IValue::Bool(true)));
        let result = run(
            "aten::ne.float(float a, float b) -> bool",
            vec![IValue::Double(f64::NAN), IValue::Double(f64::NAN)],
        )
        .unwrap();
        assert!(matches!(result, IValue::Bool(true)));
        let result = run(
            "aten::eq.float(float a, float b) -> bool",
            vec![IValue::Double(f64::NAN), IValue::Double(f64::NAN)],
        )
        .unwrap();
        assert!(matches!(result, IValue::Bool(false)));
        let result = run(
            "aten::__range_length(int lo, int hi, int step) -> int",
            vec![IValue::Int(10), IValue::Int(0), IValue::Int(-3)],
        )
        .unwrap();
        assert!(matches!(result, IValue::Int(4)));
        assert!(run(
            "aten::Int.float(float a) -> int",
            vec![IValue::Double(f64::NAN)]
        )
        .is_err());
        let result = run(
            "aten::Int.float(float a) -> int",
            vec![IValue::Double(-2.7)],
        )
        .unwrap();
        assert!(matches!(result, IValue::Int(-2)));
    }
}
