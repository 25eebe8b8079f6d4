//! `math` module functions and numeric builtins on int/float (PyTorch's register_prim_ops.cpp
//! schemas): `math.sqrt`, `math.log` (with a base), `math.atan2`, `math.gcd`,
//! `math.isfinite`, `round`, `divmod`, `math.modf`... Tensor overloads of the same names are
//! registered earlier (core_ops), so the compiler tries them first, as PyTorch does.

use ferrojit_tensor::ops::special::{erf, erfc};
use ferrojit_tensor::Scalar;

use super::{pop_array, push, KernelTableEntry};
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::registry::Stack;

fn as_f64(value: &IValue) -> Result<f64> {
    Ok(value.to_scalar()?.to_f64())
}

/// Kernels for `f(a) -> float` (every int/float/Scalar overload of one function).
macro_rules! unary_float_kernels {
    ($($name:ident => $f:expr;)*) => {
        $(
            fn $name(stack: &mut Stack) -> Result<()> {
                let [a] = pop_array::<1>(stack)?;
                let f: fn(f64) -> f64 = $f;
                push(stack, f(as_f64(&a)?))
            }
        )*
    };
}

/// Kernels for `f(a, b) -> float`.
macro_rules! binary_float_kernels {
    ($($name:ident => $f:expr;)*) => {
        $(
            fn $name(stack: &mut Stack) -> Result<()> {
                let [a, b] = pop_array::<2>(stack)?;
                let f: fn(f64, f64) -> f64 = $f;
                push(stack, f(as_f64(&a)?, as_f64(&b)?))
            }
        )*
    };
}

/// Kernels for `f(float a) -> bool`.
macro_rules! float_predicate_kernels {
    ($($name:ident => $f:expr;)*) => {
        $(
            fn $name(stack: &mut Stack) -> Result<()> {
                let [a] = pop_array::<1>(stack)?;
                let f: fn(f64) -> bool = $f;
                push(stack, f(as_f64(&a)?))
            }
        )*
    };
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

unary_float_kernels! {
    log => f64::ln;
    exp => f64::exp;
    round => round_to_even;
    log1p => f64::ln_1p;
    log10 => f64::log10;
    sqrt => f64::sqrt;
    acos => f64::acos;
    asin => f64::asin;
    atan => f64::atan;
    cos => f64::cos;
    sin => f64::sin;
    tan => f64::tan;
    asinh => f64::asinh;
    atanh => f64::atanh;
    acosh => f64::acosh;
    sinh => f64::sinh;
    cosh => f64::cosh;
    tanh => f64::tanh;
    angle => |a| 0.0f64.atan2(a);
    to_degrees => degrees;
    to_radians => radians;
    gamma => tgamma;
    erf_kernel => erf;
    erfc_kernel => erfc;
    expm1 => f64::exp_m1;
    fabs => f64::abs;
    lgamma_kernel => lgamma;
}

binary_float_kernels! {
    log_base => |a, b| a.ln() / b.ln();
    atan2 => f64::atan2;
    fmod => |a, b| a % b;
    copysign => f64::copysign;
    mathremainder => ieee_remainder;
}

float_predicate_kernels! {
    isnan => f64::is_nan;
    isfinite => f64::is_finite;
    isinf => f64::is_infinite;
}

/// `math.gcd`: Euclid on the values, made non-negative at the end (as PyTorch).
fn gcd(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    let (mut a, mut b) = (a.to_int()?, b.to_int()?);
    while b != 0 {
        let r = a.wrapping_rem(b);
        a = b;
        b = r;
    }
    push(stack, a.wrapping_abs())
}

/// `math.factorial` on a 64-bit int (wrapping like PyTorch's; n! is 0 mod 2^64 from n = 66).
fn factorial(stack: &mut Stack) -> Result<()> {
    let [n] = pop_array::<1>(stack)?;
    // PyTorch's kernel takes a C `int`.
    let n = n.to_int()? as i32;
    if n < 0 {
        return Err(RuntimeError::Other(
            "factorial() not defined for negative values".to_string(),
        ));
    }
    if n >= 66 {
        return push(stack, 0i64);
    }
    let product = (2..=i64::from(n)).fold(1i64, |acc, k| acc.wrapping_mul(k));
    push(stack, product)
}

fn divmod_int(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    let (a, b) = (a.to_int()?, b.to_int()?);
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
    stack.push(IValue::Int(quotient));
    push(stack, remainder)
}

fn float_divmod_error() -> RuntimeError {
    RuntimeError::Other("ZeroDivisionError: float divmod()".to_string())
}

fn divmod_float(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    let (a, b) = (as_f64(&a)?, as_f64(&b)?);
    if b == 0.0 {
        return Err(float_divmod_error());
    }
    let mut remainder = a % b;
    if remainder != 0.0 && ((a < 0.0) != (b < 0.0)) {
        remainder += b;
    }
    stack.push(IValue::Double((a - remainder) / b));
    push(stack, remainder)
}

/// `divmod` with one int and one float operand.
fn divmod_mixed(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    let (a, b) = (as_f64(&a)?, as_f64(&b)?);
    if b == 0.0 {
        return Err(float_divmod_error());
    }
    let quotient = (a / b).floor();
    stack.push(IValue::Double(quotient));
    push(stack, a - quotient * b)
}

/// `math.modf`: (fractional part, integral part), both with the sign of `a`.
fn modf(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    let a = as_f64(&a)?;
    let integral = a.trunc();
    let fractional = if a.is_infinite() {
        0.0f64.copysign(a)
    } else {
        (a - integral).copysign(a)
    };
    stack.push(IValue::Double(fractional));
    push(stack, integral)
}

/// `math.frexp`: mantissa in [0.5, 1) and exponent with `a = m * 2**e`.
fn frexp(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    let a = as_f64(&a)?;
    if a == 0.0 || !a.is_finite() {
        stack.push(IValue::Double(a));
        return push(stack, 0i64);
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
    stack.push(IValue::Double(mantissa));
    push(stack, exponent)
}

/// `math.ldexp(x, i)`: x * 2**i, without overflowing the exponent arithmetic.
fn ldexp(stack: &mut Stack) -> Result<()> {
    let [x, i] = pop_array::<2>(stack)?;
    let x = as_f64(&x)?;
    let mut exponent = i.to_int()?.clamp(-2200, 2200);
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
    push(stack, value)
}

/// `prim::abs(Tensor x)`: the builtin `abs` on a tensor.
fn abs_tensor(stack: &mut Stack) -> Result<()> {
    let [x] = pop_array::<1>(stack)?;
    let result = x
        .to_tensor()?
        .unary(ferrojit_tensor::ops::pointwise::UnaryOp::Abs)?;
    push(stack, result)
}

/// `round` of a Scalar keeps PyTorch's float result.
fn round_scalar(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    match a.to_scalar()? {
        Scalar::Float(f) => push(stack, round_to_even(f)),
        other => push(stack, other.to_f64()),
    }
}

/// The table, in PyTorch's registration order within each name.
pub const TABLE: &[KernelTableEntry] = &[
    ("aten::log.int(int a) -> float", log),
    ("aten::log.float(float a) -> float", log),
    ("aten::log.Scalar(Scalar a) -> Scalar", log),
    ("aten::round.int(int a) -> float", round),
    ("aten::round.float(float a) -> float", round),
    ("aten::round.Scalar(Scalar a) -> Scalar", round_scalar),
    ("aten::exp.int(int a) -> float", exp),
    ("aten::exp.float(float a) -> float", exp),
    ("aten::exp.Scalar(Scalar a) -> Scalar", exp),
    ("aten::modf(float a) -> (float, float)", modf),
    ("aten::frexp(float a) -> (float, int)", frexp),
    ("aten::ldexp(float x, int i) -> float", ldexp),
    (
        "aten::mathremainder.int(int a, int b) -> float",
        mathremainder,
    ),
    (
        "aten::mathremainder.float(float a, float b) -> float",
        mathremainder,
    ),
    (
        "aten::mathremainder.int_float(int a, float b) -> float",
        mathremainder,
    ),
    (
        "aten::mathremainder.float_int(float a, int b) -> float",
        mathremainder,
    ),
    (
        "aten::mathremainder(Scalar a, Scalar b) -> float",
        mathremainder,
    ),
    ("aten::log.int_int(int a, int b) -> float", log_base),
    ("aten::log.float_float(float a, float b) -> float", log_base),
    ("aten::log.int_float(int a, float b) -> float", log_base),
    ("aten::log.float_int(float a, int b) -> float", log_base),
    (
        "aten::log.Scalar_Scalar(Scalar a, Scalar b) -> float",
        log_base,
    ),
    ("aten::log1p.int(int a) -> float", log1p),
    ("aten::log1p.float(float a) -> float", log1p),
    ("aten::log1p.Scalar(Scalar a) -> Scalar", log1p),
    ("aten::log10.int(int a) -> float", log10),
    ("aten::log10.float(float a) -> float", log10),
    ("aten::log10.Scalar(Scalar a) -> Scalar", log10),
    ("aten::sqrt.int(int a) -> float", sqrt),
    ("aten::sqrt.float(float a) -> float", sqrt),
    ("aten::sqrt.Scalar(Scalar a) -> Scalar", sqrt),
    ("aten::acos.int(int a) -> float", acos),
    ("aten::acos.float(float a) -> float", acos),
    ("aten::acos.Scalar(Scalar a) -> Scalar", acos),
    ("aten::asin.int(int a) -> float", asin),
    ("aten::asin.float(float a) -> float", asin),
    ("aten::asin.Scalar(Scalar a) -> Scalar", asin),
    ("aten::atan.int(int a) -> float", atan),
    ("aten::atan.float(float a) -> float", atan),
    ("aten::atan.Scalar(Scalar a) -> Scalar", atan),
    ("aten::atan2.int(int a, int b) -> float", atan2),
    ("aten::atan2.float(float a, float b) -> float", atan2),
    ("aten::atan2.int_float(int a, float b) -> float", atan2),
    ("aten::atan2.float_int(float a, int b) -> float", atan2),
    (
        "aten::atan2.Scalar_Scalar(Scalar a, Scalar b) -> float",
        atan2,
    ),
    ("aten::cos.int(int a) -> float", cos),
    ("aten::cos.float(float a) -> float", cos),
    ("aten::cos.Scalar(Scalar a) -> Scalar", cos),
    ("aten::sin.int(int a) -> float", sin),
    ("aten::sin.float(float a) -> float", sin),
    ("aten::sin.Scalar(Scalar a) -> Scalar", sin),
    ("aten::tan.int(int a) -> float", tan),
    ("aten::tan.float(float a) -> float", tan),
    ("aten::tan.Scalar(Scalar a) -> Scalar", tan),
    ("aten::asinh.int(int a) -> float", asinh),
    ("aten::asinh.float(float a) -> float", asinh),
    ("aten::asinh.Scalar(Scalar a) -> Scalar", asinh),
    ("aten::atanh.int(int a) -> float", atanh),
    ("aten::atanh.float(float a) -> float", atanh),
    ("aten::atanh.Scalar(Scalar a) -> Scalar", atanh),
    ("aten::acosh.int(int a) -> float", acosh),
    ("aten::acosh.float(float a) -> float", acosh),
    ("aten::acosh.Scalar(Scalar a) -> Scalar", acosh),
    ("aten::sinh.int(int a) -> float", sinh),
    ("aten::sinh.float(float a) -> float", sinh),
    ("aten::sinh.Scalar(Scalar a) -> Scalar", sinh),
    ("aten::cosh.int(int a) -> float", cosh),
    ("aten::cosh.float(float a) -> float", cosh),
    ("aten::cosh.Scalar(Scalar a) -> Scalar", cosh),
    ("aten::tanh.int(int a) -> float", tanh),
    ("aten::tanh.float(float a) -> float", tanh),
    ("aten::tanh.Scalar(Scalar a) -> Scalar", tanh),
    ("aten::angle.int(int a) -> float", angle),
    ("aten::angle.float(float a) -> float", angle),
    ("aten::angle.Scalar(Scalar a) -> Scalar", angle),
    ("aten::degrees.int(int a) -> float", to_degrees),
    ("aten::degrees.float(float a) -> float", to_degrees),
    ("aten::degrees.Scalar(Scalar a) -> Scalar", to_degrees),
    ("aten::radians.int(int a) -> float", to_radians),
    ("aten::radians.float(float a) -> float", to_radians),
    ("aten::radians.Scalar(Scalar a) -> Scalar", to_radians),
    ("aten::fmod.int(int a, int b) -> float", fmod),
    ("aten::fmod.float(float a, float b) -> float", fmod),
    ("aten::fmod.int_float(int a, float b) -> float", fmod),
    ("aten::fmod.float_int(float a, int b) -> float", fmod),
    ("aten::fmod(Scalar a, Scalar b) -> float", fmod),
    ("aten::factorial.int(int a) -> int", factorial),
    ("aten::isnan.float(float a) -> bool", isnan),
    ("aten::isfinite.float(float a) -> bool", isfinite),
    ("aten::isinf.float(float a) -> bool", isinf),
    ("aten::gamma.int(int a) -> float", gamma),
    ("aten::gamma.float(float a) -> float", gamma),
    ("aten::gamma.Scalar(Scalar a) -> Scalar", gamma),
    ("aten::erf.int(int a) -> float", erf_kernel),
    ("aten::erf.float(float a) -> float", erf_kernel),
    ("aten::erf.Scalar(Scalar a) -> Scalar", erf_kernel),
    ("aten::erfc.int(int a) -> float", erfc_kernel),
    ("aten::erfc.float(float a) -> float", erfc_kernel),
    ("aten::erfc.Scalar(Scalar a) -> Scalar", erfc_kernel),
    ("aten::expm1.int(int a) -> float", expm1),
    ("aten::expm1.float(float a) -> float", expm1),
    ("aten::expm1.Scalar(Scalar a) -> Scalar", expm1),
    ("aten::fabs.int(int a) -> float", fabs),
    ("aten::fabs.float(float a) -> float", fabs),
    ("aten::fabs.Scalar(Scalar a) -> Scalar", fabs),
    ("aten::lgamma.int(int a) -> float", lgamma_kernel),
    ("aten::lgamma.float(float a) -> float", lgamma_kernel),
    ("aten::lgamma.Scalar(Scalar a) -> Scalar", lgamma_kernel),
    ("prim::abs(Tensor x) -> Tensor", abs_tensor),
    ("aten::gcd.int(int a, int b) -> int", gcd),
    ("aten::copysign.int(int a, int b) -> float", copysign),
    ("aten::copysign.float(float a, float b) -> float", copysign),
    (
        "aten::copysign.int_float(int a, float b) -> float",
        copysign,
    ),
    (
        "aten::copysign.float_int(float a, int b) -> float",
        copysign,
    ),
    ("aten::copysign(Scalar a, Scalar b) -> float", copysign),
    ("aten::divmod.int(int x, int y) -> (int, int)", divmod_int),
    (
        "aten::divmod.float(float x, float y) -> (float, float)",
        divmod_float,
    ),
    (
        "aten::divmod.int_float(int x, float y) -> (float, float)",
        divmod_mixed,
    ),
    (
        "aten::divmod.float_int(float x, int y) -> (float, float)",
        divmod_mixed,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn run(kernel: fn(&mut Stack) -> Result<()>, args: Vec<IValue>) -> Result<Vec<IValue>> {
        let mut stack = args;
        kernel(&mut stack)?;
        Ok(stack)
    }

    fn float(value: &IValue) -> f64 {
        value.to_double().unwrap()
    }

    #[test]
    fn unary_and_binary_math() {
        assert_eq!(round_to_even(2.5), 2.0);
        assert_eq!(round_to_even(-1.5), -2.0);
        assert_eq!(round_to_even(3.25), 3.0);
        let out = run(sqrt, vec![IValue::Int(2)]).unwrap();
        assert_eq!(float(&out[0]), std::f64::consts::SQRT_2);
        let out = run(to_degrees, vec![IValue::Double(8.0)]).unwrap();
        assert_eq!(float(&out[0]), 458.3662361046586);
        let out = run(log_base, vec![IValue::Int(8), IValue::Int(2)]).unwrap();
        assert_eq!(float(&out[0]), 3.0);
        assert_eq!(ieee_remainder(5.0, 2.0), 1.0);
        assert_eq!(ieee_remainder(7.0, 2.0), -1.0);
        assert_eq!(ieee_remainder(5.5, 2.0), -0.5);
        assert_eq!(tgamma(5.0), 24.0);
        assert!((lgamma(10.0) - 12.801827480081469).abs() < 1e-12);
        assert!((tgamma(0.5) - std::f64::consts::PI.sqrt()).abs() < 1e-14);
    }

    #[test]
    fn integer_math() {
        let out = run(gcd, vec![IValue::Int(12), IValue::Int(-18)]).unwrap();
        assert!(matches!(out[0], IValue::Int(6)));
        let out = run(factorial, vec![IValue::Int(6)]).unwrap();
        assert!(matches!(out[0], IValue::Int(720)));
        assert!(run(factorial, vec![IValue::Int(-1)]).is_err());
        let out = run(factorial, vec![IValue::Int(1 << 40)]).unwrap();
        assert!(matches!(out[0], IValue::Int(1)), "C int truncation: 0! = 1");
        let out = run(divmod_int, vec![IValue::Int(-7), IValue::Int(2)]).unwrap();
        assert!(matches!(out[..], [IValue::Int(-4), IValue::Int(1)]));
        assert!(run(divmod_int, vec![IValue::Int(1), IValue::Int(0)]).is_err());
        let out = run(divmod_float, vec![IValue::Double(7.5), IValue::Double(2.0)]).unwrap();
        assert_eq!((float(&out[0]), float(&out[1])), (3.0, 1.5));
        let out = run(frexp, vec![IValue::Double(8.0)]).unwrap();
        assert_eq!(float(&out[0]), 0.5);
        assert!(matches!(out[1], IValue::Int(4)));
        let out = run(modf, vec![IValue::Double(-2.5)]).unwrap();
        assert_eq!((float(&out[0]), float(&out[1])), (-0.5, -2.0));
        let out = run(ldexp, vec![IValue::Double(0.5), IValue::Int(i64::MAX)]).unwrap();
        assert_eq!(float(&out[0]), f64::INFINITY);
    }
}
