//! `math` module functions and numeric builtins on int/float (PyTorch's register_prim_ops.cpp
//! schemas): `math.sqrt`, `math.log` (with a base), `math.atan2`, `math.gcd`,
//! `math.isfinite`, `round`, `divmod`, `math.modf`... Tensor overloads of the same names are
//! registered earlier (core_ops), so the compiler tries them first, as PyTorch does.
//!
//! Every kernel is typed: an `int`, `float` or `Scalar` argument of a float function binds as
//! an `f64` (the binding reads any Python number so), so one kernel serves all its overloads.

use std::sync::Arc;

use ferrojit_tensor::ops::pointwise::UnaryOp;
use ferrojit_tensor::ops::special::{erf, erfc};
use ferrojit_tensor::{Scalar, Tensor};

use super::binding::typed;
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;

/// The kernel of `f(a) -> float` (every int/float/Scalar overload of one function).
fn unary(function: fn(f64) -> f64) -> impl Fn(f64) -> Result<f64> + Send + Sync + 'static {
    move |a| Ok(function(a))
}

/// The kernel of `f(a, b) -> float`.
fn binary(
    function: fn(f64, f64) -> f64,
) -> impl Fn(f64, f64) -> Result<f64> + Send + Sync + 'static {
    move |a, b| Ok(function(a, b))
}

/// The kernel of `f(float a) -> bool`.
fn predicate(function: fn(f64) -> bool) -> impl Fn(f64) -> Result<bool> + Send + Sync + 'static {
    move |a| Ok(function(a))
}

/// Python's `round`: halfway cases go to the even neighbour (PyTorch's `round_to_even`).
pub fn round_to_even(a: f64) -> f64 {
    a.round_ties_even()
}

fn degrees(a: f64) -> f64 {
    a * (180.0 / std::f64::consts::PI)
}

fn radians(a: f64) -> f64 {
    a * (std::f64::consts::PI / 180.0)
}

/// IEEE remainder (C's `std::remainder`): `a - n * b` with `n` the nearest integer to `a / b`
/// (ties to even).
fn ieee_remainder(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() || a.is_infinite() || b == 0.0 {
        return f64::NAN;
    }
    if b.is_infinite() {
        return a;
    }
    let r = a % b; // exact, with the sign of a
    let half = b.abs() / 2.0;
    let r_abs = r.abs();
    let adjusted = if r_abs > half {
        r_abs - b.abs()
    } else if r_abs == half {
        // Tie: pick the even quotient. fmod's quotient parity decides.
        let quotient = ((a - r) / b).abs();
        if quotient % 2.0 == 0.0 {
            r_abs
        } else {
            r_abs - b.abs()
        }
    } else {
        r_abs
    };
    if r < 0.0 || (r == 0.0 && a.is_sign_negative()) {
        -adjusted
    } else {
        adjusted
    }
}

/// Lanczos approximation (g = 7, 9 terms) of ln|Γ(x)| for x >= 0.5.
fn ln_gamma_positive(x: f64) -> f64 {
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (i, c) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// C's `lgamma`: ln|Γ(x)|.
fn lgamma(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.is_infinite() {
        return f64::INFINITY;
    }
    if x <= 0.0 && x == x.floor() {
        return f64::INFINITY;
    }
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1-x) = π / sin(πx).
        let s = (std::f64::consts::PI * x).sin().abs();
        return std::f64::consts::PI.ln() - s.ln() - ln_gamma_positive(1.0 - x);
    }
    if x == 1.0 || x == 2.0 {
        return 0.0;
    }
    ln_gamma_positive(x)
}

/// C's `tgamma`: Γ(x), exact for small positive integers.
fn tgamma(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x == f64::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f64::INFINITY.copysign(x);
    }
    if x < 0.0 && (x == x.floor() || x.is_infinite()) {
        return f64::NAN;
    }
    if x == x.floor() && x <= 23.0 {
        let mut product = 1.0;
        let mut k = 2.0;
        while k < x {
            product *= k;
            k += 1.0;
        }
        return product;
    }
    if x < 0.5 {
        let s = (std::f64::consts::PI * x).sin();
        return std::f64::consts::PI / (s * tgamma(1.0 - x));
    }
    ln_gamma_positive(x).exp()
}

/// `math.log(a, base)`.
fn log_base(a: f64, base: f64) -> f64 {
    a.ln() / base.ln()
}

/// The angle of a real number: 0 for non-negative values, π for negative ones.
fn angle(a: f64) -> f64 {
    0.0f64.atan2(a)
}

/// C's `fmod`: the remainder with the sign of `a`.
fn fmod(a: f64, b: f64) -> f64 {
    a % b
}

/// `math.gcd`: Euclid on the values, made non-negative at the end (as PyTorch).
fn gcd(mut a: i64, mut b: i64) -> Result<i64> {
    while b != 0 {
        let r = a.wrapping_rem(b);
        a = b;
        b = r;
    }
    Ok(a.wrapping_abs())
}

/// `math.factorial` on a 64-bit int (wrapping like PyTorch's; n! is 0 mod 2^64 from n = 66).
fn factorial(n: i64) -> Result<i64> {
    // PyTorch's kernel takes a C `int`.
    let n = n as i32;
    if n < 0 {
        return Err(RuntimeError::Other(
            "factorial() not defined for negative values".to_string(),
        ));
    }
    if n >= 66 {
        return Ok(0);
    }
    Ok((2..=i64::from(n)).fold(1i64, |acc, k| acc.wrapping_mul(k)))
}

/// `divmod(int, int) -> (int, int)`: Python's floored quotient and remainder.
fn divmod_int(a: i64, b: i64) -> Result<Vec<IValue>> {
    if b == 0 {
        return Err(RuntimeError::Other(
            "ZeroDivisionError: integer division or modulo by zero".to_string(),
        ));
    }
    let mut quotient = a.wrapping_div(b);
    let mut remainder = a.wrapping_rem(b);
    if remainder != 0 && ((a < 0) != (b < 0)) {
        quotient = quotient.wrapping_sub(1);
        remainder = remainder.wrapping_add(b);
    }
    Ok(vec![IValue::Int(quotient), IValue::Int(remainder)])
}

fn float_divmod_error() -> RuntimeError {
    RuntimeError::Other("ZeroDivisionError: float divmod()".to_string())
}

/// `divmod(float, float) -> (float, float)`.
fn divmod_float(a: f64, b: f64) -> Result<Vec<IValue>> {
    if b == 0.0 {
        return Err(float_divmod_error());
    }
    let mut remainder = a % b;
    if remainder != 0.0 && ((a < 0.0) != (b < 0.0)) {
        remainder += b;
    }
    Ok(vec![
        IValue::Double((a - remainder) / b),
        IValue::Double(remainder),
    ])
}

/// `divmod` with one int and one float operand.
fn divmod_mixed(a: f64, b: f64) -> Result<Vec<IValue>> {
    if b == 0.0 {
        return Err(float_divmod_error());
    }
    let quotient = (a / b).floor();
    Ok(vec![
        IValue::Double(quotient),
        IValue::Double(a - quotient * b),
    ])
}

/// `math.modf`: (fractional part, integral part), both with the sign of `a`.
fn modf(a: f64) -> Result<Vec<IValue>> {
    let integral = a.trunc();
    let fractional = if a.is_infinite() {
        0.0f64.copysign(a)
    } else {
        (a - integral).copysign(a)
    };
    Ok(vec![IValue::Double(fractional), IValue::Double(integral)])
}

/// `math.frexp`: mantissa in [0.5, 1) and exponent with `a = m * 2**e`.
fn frexp(a: f64) -> Result<Vec<IValue>> {
    if a == 0.0 || !a.is_finite() {
        return Ok(vec![IValue::Double(a), IValue::Int(0)]);
    }
    let bits = a.to_bits();
    let raw_exponent = ((bits >> 52) & 0x7ff) as i64;
    let (mantissa, exponent) = if raw_exponent == 0 {
        // Subnormal: scale into the normal range first.
        let scaled = a * 2f64.powi(64);
        let e = ((scaled.to_bits() >> 52) & 0x7ff) as i64;
        let m = f64::from_bits((scaled.to_bits() & !(0x7ff << 52)) | (1022 << 52));
        (m, e - 1022 - 64)
    } else {
        let m = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
        (m, raw_exponent - 1022)
    };
    Ok(vec![IValue::Double(mantissa), IValue::Int(exponent)])
}

/// `math.ldexp(x, i)`: x * 2**i, without overflowing the exponent arithmetic.
fn ldexp(x: f64, i: i64) -> Result<f64> {
    let mut exponent = i.clamp(-2200, 2200);
    let mut value = x;
    while exponent > 0 {
        let step = exponent.min(1000);
        value *= 2f64.powi(step as i32);
        exponent -= step;
    }
    while exponent < 0 {
        let step = (-exponent).min(1000);
        value /= 2f64.powi(step as i32);
        exponent += step;
    }
    Ok(value)
}

/// `prim::abs(Tensor x)`: the builtin `abs` on a tensor.
fn abs_tensor(x: Arc<Tensor>) -> Result<Tensor> {
    Ok(x.unary(UnaryOp::Abs)?)
}

/// `round` of a Scalar keeps PyTorch's float result.
fn round_scalar(a: Scalar) -> Result<f64> {
    Ok(match a {
        Scalar::Float(f) => round_to_even(f),
        other => other.to_f64(),
    })
}

/// Every operator of this file, in PyTorch's registration order within each name.
#[rustfmt::skip]
pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        typed("aten::log.int(int a) -> float", unary(f64::ln)),
        typed("aten::log.float(float a) -> float", unary(f64::ln)),
        typed("aten::log.Scalar(Scalar a) -> Scalar", unary(f64::ln)),
        typed("aten::round.int(int a) -> float", unary(round_to_even)),
        typed("aten::round.float(float a) -> float", unary(round_to_even)),
        typed("aten::round.Scalar(Scalar a) -> Scalar", round_scalar),
        typed("aten::exp.int(int a) -> float", unary(f64::exp)),
        typed("aten::exp.float(float a) -> float", unary(f64::exp)),
        typed("aten::exp.Scalar(Scalar a) -> Scalar", unary(f64::exp)),
        typed("aten::modf(float a) -> (float, float)", modf),
        typed("aten::frexp(float a) -> (float, int)", frexp),
        typed("aten::ldexp(float x, int i) -> float", ldexp),
        typed("aten::mathremainder.int(int a, int b) -> float", binary(ieee_remainder)),
        typed("aten::mathremainder.float(float a, float b) -> float", binary(ieee_remainder)),
        typed("aten::mathremainder.int_float(int a, float b) -> float", binary(ieee_remainder)),
        typed("aten::mathremainder.float_int(float a, int b) -> float", binary(ieee_remainder)),
        typed("aten::mathremainder(Scalar a, Scalar b) -> float", binary(ieee_remainder)),
        typed("aten::log.int_int(int a, int b) -> float", binary(log_base)),
        typed("aten::log.float_float(float a, float b) -> float", binary(log_base)),
        typed("aten::log.int_float(int a, float b) -> float", binary(log_base)),
        typed("aten::log.float_int(float a, int b) -> float", binary(log_base)),
        typed("aten::log.Scalar_Scalar(Scalar a, Scalar b) -> float", binary(log_base)),
        typed("aten::log1p.int(int a) -> float", unary(f64::ln_1p)),
        typed("aten::log1p.float(float a) -> float", unary(f64::ln_1p)),
        typed("aten::log1p.Scalar(Scalar a) -> Scalar", unary(f64::ln_1p)),
        typed("aten::log10.int(int a) -> float", unary(f64::log10)),
        typed("aten::log10.float(float a) -> float", unary(f64::log10)),
        typed("aten::log10.Scalar(Scalar a) -> Scalar", unary(f64::log10)),
        typed("aten::sqrt.int(int a) -> float", unary(f64::sqrt)),
        typed("aten::sqrt.float(float a) -> float", unary(f64::sqrt)),
        typed("aten::sqrt.Scalar(Scalar a) -> Scalar", unary(f64::sqrt)),
        typed("aten::acos.int(int a) -> float", unary(f64::acos)),
        typed("aten::acos.float(float a) -> float", unary(f64::acos)),
        typed("aten::acos.Scalar(Scalar a) -> Scalar", unary(f64::acos)),
        typed("aten::asin.int(int a) -> float", unary(f64::asin)),
        typed("aten::asin.float(float a) -> float", unary(f64::asin)),
        typed("aten::asin.Scalar(Scalar a) -> Scalar", unary(f64::asin)),
        typed("aten::atan.int(int a) -> float", unary(f64::atan)),
        typed("aten::atan.float(float a) -> float", unary(f64::atan)),
        typed("aten::atan.Scalar(Scalar a) -> Scalar", unary(f64::atan)),
        typed("aten::atan2.int(int a, int b) -> float", binary(f64::atan2)),
        typed("aten::atan2.float(float a, float b) -> float", binary(f64::atan2)),
        typed("aten::atan2.int_float(int a, float b) -> float", binary(f64::atan2)),
        typed("aten::atan2.float_int(float a, int b) -> float", binary(f64::atan2)),
        typed("aten::atan2.Scalar_Scalar(Scalar a, Scalar b) -> float", binary(f64::atan2)),
        typed("aten::cos.int(int a) -> float", unary(f64::cos)),
        typed("aten::cos.float(float a) -> float", unary(f64::cos)),
        typed("aten::cos.Scalar(Scalar a) -> Scalar", unary(f64::cos)),
        typed("aten::sin.int(int a) -> float", unary(f64::sin)),
        typed("aten::sin.float(float a) -> float", unary(f64::sin)),
        typed("aten::sin.Scalar(Scalar a) -> Scalar", unary(f64::sin)),
        typed("aten::tan.int(int a) -> float", unary(f64::tan)),
        typed("aten::tan.float(float a) -> float", unary(f64::tan)),
        typed("aten::tan.Scalar(Scalar a) -> Scalar", unary(f64::tan)),
        typed("aten::asinh.int(int a) -> float", unary(f64::asinh)),
        typed("aten::asinh.float(float a) -> float", unary(f64::asinh)),
        typed("aten::asinh.Scalar(Scalar a) -> Scalar", unary(f64::asinh)),
        typed("aten::atanh.int(int a) -> float", unary(f64::atanh)),
        typed("aten::atanh.float(float a) -> float", unary(f64::atanh)),
        typed("aten::atanh.Scalar(Scalar a) -> Scalar", unary(f64::atanh)),
        typed("aten::acosh.int(int a) -> float", unary(f64::acosh)),
        typed("aten::acosh.float(float a) -> float", unary(f64::acosh)),
        typed("aten::acosh.Scalar(Scalar a) -> Scalar", unary(f64::acosh)),
        typed("aten::sinh.int(int a) -> float", unary(f64::sinh)),
        typed("aten::sinh.float(float a) -> float", unary(f64::sinh)),
        typed("aten::sinh.Scalar(Scalar a) -> Scalar", unary(f64::sinh)),
        typed("aten::cosh.int(int a) -> float", unary(f64::cosh)),
        typed("aten::cosh.float(float a) -> float", unary(f64::cosh)),
        typed("aten::cosh.Scalar(Scalar a) -> Scalar", unary(f64::cosh)),
        typed("aten::tanh.int(int a) -> float", unary(f64::tanh)),
        typed("aten::tanh.float(float a) -> float", unary(f64::tanh)),
        typed("aten::tanh.Scalar(Scalar a) -> Scalar", unary(f64::tanh)),
        typed("aten::angle.int(int a) -> float", unary(angle)),
        typed("aten::angle.float(float a) -> float", unary(angle)),
        typed("aten::angle.Scalar(Scalar a) -> Scalar", unary(angle)),
        typed("aten::degrees.int(int a) -> float", unary(degrees)),
        typed("aten::degrees.float(float a) -> float", unary(degrees)),
        typed("aten::degrees.Scalar(Scalar a) -> Scalar", unary(degrees)),
        typed("aten::radians.int(int a) -> float", unary(radians)),
        typed("aten::radians.float(float a) -> float", unary(radians)),
        typed("aten::radians.Scalar(Scalar a) -> Scalar", unary(radians)),
        typed("aten::fmod.int(int a, int b) -> float", binary(fmod)),
        typed("aten::fmod.float(float a, float b) -> float", binary(fmod)),
        typed("aten::fmod.int_float(int a, float b) -> float", binary(fmod)),
        typed("aten::fmod.float_int(float a, int b) -> float", binary(fmod)),
        typed("aten::fmod(Scalar a, Scalar b) -> float", binary(fmod)),
        typed("aten::factorial.int(int a) -> int", factorial),
        typed("aten::isnan.float(float a) -> bool", predicate(f64::is_nan)),
        typed("aten::isfinite.float(float a) -> bool", predicate(f64::is_finite)),
        typed("aten::isinf.float(float a) -> bool", predicate(f64::is_infinite)),
        typed("aten::gamma.int(int a) -> float", unary(tgamma)),
        typed("aten::gamma.float(float a) -> float", unary(tgamma)),
        typed("aten::gamma.Scalar(Scalar a) -> Scalar", unary(tgamma)),
        typed("aten::erf.int(int a) -> float", unary(erf)),
        typed("aten::erf.float(float a) -> float", unary(erf)),
        typed("aten::erf.Scalar(Scalar a) -> Scalar", unary(erf)),
        typed("aten::erfc.int(int a) -> float", unary(erfc)),
        typed("aten::erfc.float(float a) -> float", unary(erfc)),
        typed("aten::erfc.Scalar(Scalar a) -> Scalar", unary(erfc)),
        typed("aten::expm1.int(int a) -> float", unary(f64::exp_m1)),
        typed("aten::expm1.float(float a) -> float", unary(f64::exp_m1)),
        typed("aten::expm1.Scalar(Scalar a) -> Scalar", unary(f64::exp_m1)),
        typed("aten::fabs.int(int a) -> float", unary(f64::abs)),
        typed("aten::fabs.float(float a) -> float", unary(f64::abs)),
        typed("aten::fabs.Scalar(Scalar a) -> Scalar", unary(f64::abs)),
        typed("aten::lgamma.int(int a) -> float", unary(lgamma)),
        typed("aten::lgamma.float(float a) -> float", unary(lgamma)),
        typed("aten::lgamma.Scalar(Scalar a) -> Scalar", unary(lgamma)),
        typed("prim::abs(Tensor x) -> Tensor", abs_tensor),
        typed("aten::gcd.int(int a, int b) -> int", gcd),
        typed("aten::copysign.int(int a, int b) -> float", binary(f64::copysign)),
        typed("aten::copysign.float(float a, float b) -> float", binary(f64::copysign)),
        typed("aten::copysign.int_float(int a, float b) -> float", binary(f64::copysign)),
        typed("aten::copysign.float_int(float a, int b) -> float", binary(f64::copysign)),
        typed("aten::copysign(Scalar a, Scalar b) -> float", binary(f64::copysign)),
        typed("aten::divmod.int(int x, int y) -> (int, int)", divmod_int),
        typed("aten::divmod.float(float x, float y) -> (float, float)", divmod_float),
        typed("aten::divmod.int_float(int x, float y) -> (float, float)", divmod_mixed),
        typed("aten::divmod.float_int(float x, int y) -> (float, float)", divmod_mixed),
    ]
}
#[cfg(test)]
mod tests {
    use super::*;

    fn float(value: &IValue) -> f64 {
        value.to_double().unwrap()
    }

    #[test]
    fn unary_and_binary_math() {
        assert_eq!(round_to_even(2.5), 2.0);
        assert_eq!(round_to_even(-1.5), -2.0);
        assert_eq!(round_to_even(3.25), 3.0);
        assert_eq!(unary(f64::sqrt)(2.0).unwrap(), std::f64::consts::SQRT_2);
        assert_eq!(degrees(8.0), 458.3662361046586);
        assert_eq!(binary(log_base)(8.0, 2.0).unwrap(), 3.0);
        assert_eq!(ieee_remainder(5.0, 2.0), 1.0);
        assert_eq!(ieee_remainder(7.0, 2.0), -1.0);
        assert_eq!(ieee_remainder(5.5, 2.0), -0.5);
        assert_eq!(tgamma(5.0), 24.0);
        assert!((lgamma(10.0) - 12.801827480081469).abs() < 1e-12);
        assert!((tgamma(0.5) - std::f64::consts::PI.sqrt()).abs() < 1e-14);
    }

    #[test]
    fn integer_math() {
        assert_eq!(gcd(12, -18).unwrap(), 6);
        assert_eq!(factorial(6).unwrap(), 720);
        assert!(factorial(-1).is_err());
        assert_eq!(factorial(1 << 40).unwrap(), 1, "C int truncation: 0! = 1");
        let out = divmod_int(-7, 2).unwrap();
        assert!(matches!(out[..], [IValue::Int(-4), IValue::Int(1)]));
        assert!(divmod_int(1, 0).is_err());
        let out = divmod_float(7.5, 2.0).unwrap();
        assert_eq!((float(&out[0]), float(&out[1])), (3.0, 1.5));
        let out = frexp(8.0).unwrap();
        assert_eq!(float(&out[0]), 0.5);
        assert!(matches!(out[1], IValue::Int(4)));
        let out = modf(-2.5).unwrap();
        assert_eq!((float(&out[0]), float(&out[1])), (-0.5, -2.0));
        assert_eq!(ldexp(0.5, i64::MAX).unwrap(), f64::INFINITY);
    }

    #[test]
    fn every_declaration_registers() {
        let mut registry = crate::registry::OperatorRegistry::new();
        registry
            .register_family(crate::opdef::OverloadRank::Builtin, declarations())
            .unwrap();
    }
}
