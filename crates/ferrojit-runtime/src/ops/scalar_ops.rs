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

/// Python's `//` on ints: rounds toward negative infinity. Division by zero fails with
/// PyTorch's message (`division by 0`), typed as a zero division.
pub fn python_floordiv(a: i64, b: i64) -> Result<i64> {
    if b == 0 {
        return Err(RuntimeError::ZeroDivision("division by 0".to_string()));
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

/// The int/float arithmetic and comparison operators that the interpreter runs inline
/// (without a kernel call) when both operands are ints or floats. Each gives exactly what
/// its builtin kernel (`add`, `eq`, ... below) gives on such operands; the kernel stays the
/// fallback for everything else (bools, strings, devices, and int zero divisors, which it
/// raises).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumberOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Remainder,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl NumberOp {
    /// The inline form of a builtin number operator, by full schema name: the `int`,
    /// `float`, `int_float`, `float_int` and `Scalar` overloads of the operators above.
    pub fn for_operator(full_name: &str) -> Option<NumberOp> {
        let (name, overload) = full_name.split_once('.').unwrap_or((full_name, ""));
        if !matches!(overload, "" | "int" | "float" | "int_float" | "float_int") {
            return None;
        }
        Some(match name {
            "aten::add" => NumberOp::Add,
            "aten::sub" => NumberOp::Sub,
            "aten::mul" => NumberOp::Mul,
            "aten::div" => NumberOp::Div,
            "aten::floordiv" => NumberOp::FloorDiv,
            "aten::remainder" => NumberOp::Remainder,
            "aten::eq" => NumberOp::Eq,
            "aten::ne" => NumberOp::Ne,
            "aten::lt" => NumberOp::Lt,
            "aten::le" => NumberOp::Le,
            "aten::gt" => NumberOp::Gt,
            "aten::ge" => NumberOp::Ge,
            _ => return None,
        })
    }

    /// The operator on two ints; `None` for a zero divisor (the kernel raises the error).
    #[inline(always)]
    pub fn on_ints(self, a: i64, b: i64) -> Option<NumberValue> {
        Some(match self {
            NumberOp::Add => NumberValue::Int(a.wrapping_add(b)),
            NumberOp::Sub => NumberValue::Int(a.wrapping_sub(b)),
            NumberOp::Mul => NumberValue::Int(a.wrapping_mul(b)),
            NumberOp::Div => NumberValue::Float(a as f64 / b as f64),
            NumberOp::FloorDiv => NumberValue::Int(python_floordiv(a, b).ok()?),
            NumberOp::Remainder => NumberValue::Int(python_remainder(a, b).ok()?),
            NumberOp::Eq => NumberValue::Bool(a == b),
            NumberOp::Ne => NumberValue::Bool(a != b),
            NumberOp::Lt => NumberValue::Bool(a < b),
            NumberOp::Le => NumberValue::Bool(a <= b),
            NumberOp::Gt => NumberValue::Bool(a > b),
            NumberOp::Ge => NumberValue::Bool(a >= b),
        })
    }

    /// The operator on two floats (IEEE comparisons: NaN is unequal to everything).
    #[inline(always)]
    pub fn on_floats(self, a: f64, b: f64) -> NumberValue {
        match self {
            NumberOp::Add => NumberValue::Float(a + b),
            NumberOp::Sub => NumberValue::Float(a - b),
            NumberOp::Mul => NumberValue::Float(a * b),
            NumberOp::Div => NumberValue::Float(a / b),
            NumberOp::FloorDiv => NumberValue::Float((a / b).floor()),
            NumberOp::Remainder => NumberValue::Float(python_remainder_float(a, b)),
            NumberOp::Eq => NumberValue::Bool(a == b),
            NumberOp::Ne => NumberValue::Bool(a != b),
            NumberOp::Lt => NumberValue::Bool(a < b),
            NumberOp::Le => NumberValue::Bool(a <= b),
            NumberOp::Gt => NumberValue::Bool(a > b),
            NumberOp::Ge => NumberValue::Bool(a >= b),
        }
    }

    /// The result for two int/float operands; `None` for any other operands and for int
    /// zero divisors (the kernel handles those).
    #[inline(always)]
    pub fn apply(self, a: &IValue, b: &IValue) -> Option<NumberValue> {
        match (a, b) {
            (IValue::Int(a), IValue::Int(b)) => self.on_ints(*a, *b),
            (IValue::Double(a), IValue::Double(b)) => Some(self.on_floats(*a, *b)),
            (IValue::Int(a), IValue::Double(b)) => Some(self.on_floats(*a as f64, *b)),
            (IValue::Double(a), IValue::Int(b)) => Some(self.on_floats(*a, *b as f64)),
            _ => None,
        }
    }
}

/// A `NumberOp` result: a plain copyable value the interpreter writes straight into its
/// destination (an `IValue`, or a `Result` around one, is returned through memory).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NumberValue {
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl From<NumberValue> for IValue {
    #[inline(always)]
    fn from(value: NumberValue) -> IValue {
        match value {
            NumberValue::Int(v) => IValue::Int(v),
            NumberValue::Float(v) => IValue::Double(v),
            NumberValue::Bool(v) => IValue::Bool(v),
        }
    }
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

fn negative_shift() -> RuntimeError {
    RuntimeError::ValueError("negative shift count".to_string())
}

/// `a << b` on 64-bit ints: bits shifted out are lost; 64 or more gives 0.
fn int_lshift(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    let (a, b) = (a.to_int()?, b.to_int()?);
    if b < 0 {
        return Err(negative_shift());
    }
    let shifted = u32::try_from(b)
        .ok()
        .and_then(|b| a.checked_shl(b))
        .unwrap_or(0);
    push(stack, shifted)
}

/// `a >> b`: arithmetic shift (rounds toward negative infinity, as Python).
fn int_rshift(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    let (a, b) = (a.to_int()?, b.to_int()?);
    if b < 0 {
        return Err(negative_shift());
    }
    let amount = u32::try_from(b.min(63)).unwrap_or(63);
    push(stack, a >> amount)
}

/// `Int(x)` for float, bool, int and Scalar inputs.
fn to_int(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    match a.to_scalar()? {
        Scalar::Float(f) => push(stack, float_to_int(f)?),
        other => push(stack, other.to_i64()),
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
fn int_from_str(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    let text = a.to_str()?;
    let (value, consumed) =
        stoll_prefix(text).map_err(|what| RuntimeError::Other(what.to_string()))?;
    if consumed != text.len() {
        return Err(RuntimeError::Other(format!(
            "invalid literal for int() with base 10: '{text}'"
        )));
    }
    push(stack, value)
}

/// PyTorch's `checkImplicitTensorToNum`: a tensor passed where a number is expected must be
/// 0-dimensional (and integral when an int is expected).
fn implicit_tensor_number(value: &IValue, to_int: bool) -> Result<Scalar> {
    let tensor = value.to_tensor()?;
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

fn int_implicit(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    let value = implicit_tensor_number(&a, true)?;
    push(stack, value.to_i64())
}

fn float_implicit(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    let value = implicit_tensor_number(&a, false)?;
    push(stack, value.to_f64())
}

fn scalar_implicit(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    let value = implicit_tensor_number(&a, false)?;
    push(stack, IValue::from(value))
}

/// `Float(x)` for int, bool, float and Scalar inputs.
fn to_float(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    push(stack, a.to_scalar()?.to_f64())
}

/// `float(s)`: PyTorch's `c10::stod` (leading whitespace, then C's float syntax), and the
/// whole string must have been consumed. `stod` is the message when nothing converts.
fn float_from_str(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    let text = a.to_str()?;
    let rest = text.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    if let Ok(value) = rest.parse::<f64>() {
        return push(stack, value);
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
fn to_bool(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    push(stack, a.to_scalar()?.to_bool())
}

fn str_concat(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    let joined = format!("{}{}", a.to_str()?, b.to_str()?);
    push(stack, joined)
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

fn hash(stack: &mut Stack) -> Result<()> {
    let [value] = pop_array::<1>(stack)?;
    let hashed = hash_value(&value)?;
    push(stack, hashed)
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
    ("aten::__lshift__.int(int a, int b) -> int", int_lshift),
    ("aten::__rshift__.int(int a, int b) -> int", int_rshift),
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
    ("aten::IntImplicit(Tensor a) -> int", int_implicit),
    ("aten::FloatImplicit(Tensor a) -> float", float_implicit),
    ("aten::ScalarImplicit(Tensor a) -> Scalar", scalar_implicit),
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
    ("aten::hash.generic(t value) -> int", hash),
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

    fn run(kernel: fn(&mut Stack) -> Result<()>, args: Vec<IValue>) -> Result<IValue> {
        let mut stack = args;
        kernel(&mut stack)?;
        stack
            .pop()
            .ok_or_else(|| RuntimeError::Other("no result".into()))
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
        for &(schema, kernel) in TABLE {
            let full_name = ferrojit_ir::parse_schema(schema).unwrap().full_name();
            let Some(op) = NumberOp::for_operator(&full_name) else {
                continue;
            };
            checked += 1;
            for a in &values {
                for b in &values {
                    let expected = run(kernel, vec![a.clone(), b.clone()]);
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
    fn conversions_shifts_and_hash() {
        let int_of = |text: &str| run(int_from_str, vec![IValue::from(text)]);
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
        let float_of = |text: &str| run(float_from_str, vec![IValue::from(text)]);
        assert!(matches!(float_of(" 2.5"), Ok(IValue::Double(v)) if v == 2.5));
        assert!(matches!(float_of("-inf"), Ok(IValue::Double(v)) if v == f64::NEG_INFINITY));
        assert_eq!(float_of("abc").unwrap_err().to_string(), "stod");
        assert!(float_of("2.5x")
            .unwrap_err()
            .to_string()
            .contains("could not convert"));
        let shifted = run(int_lshift, vec![IValue::Int(-5), IValue::Int(2)]).unwrap();
        assert!(matches!(shifted, IValue::Int(-20)));
        let shifted = run(int_rshift, vec![IValue::Int(-5), IValue::Int(1)]).unwrap();
        assert!(matches!(shifted, IValue::Int(-3)));
        let shifted = run(int_lshift, vec![IValue::Int(1), IValue::Int(200)]).unwrap();
        assert!(matches!(shifted, IValue::Int(0)));
        assert!(run(int_rshift, vec![IValue::Int(1), IValue::Int(-1)]).is_err());
        assert!(matches!(
            run(hash, vec![IValue::Int(42)]),
            Ok(IValue::Int(42))
        ));
        let a = run(hash, vec![IValue::from("key")])
            .unwrap()
            .to_int()
            .unwrap();
        let b = run(hash, vec![IValue::from("key")])
            .unwrap()
            .to_int()
            .unwrap();
        assert_eq!(a, b);
        assert!(run(hash, vec![IValue::int_list(&[1])]).is_err());
        let error = python_floordiv(1, 0).unwrap_err();
        assert!(error.to_string().contains("division by 0"));
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
