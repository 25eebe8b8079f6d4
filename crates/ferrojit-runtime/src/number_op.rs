//! The int/float arithmetic and comparison operators the interpreter runs inline, without a
//! kernel call (`NumberOp`), and Python's int and float division rules they share with the
//! builtin number kernels of `ops::scalar_ops`. A module of its own so that the interpreter
//! and the operators both use it without the interpreter depending on the operators.

use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;

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
/// its builtin kernel (`add`, `eq`, ... in `ops::scalar_ops`) gives on such operands; the kernel stays the
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
