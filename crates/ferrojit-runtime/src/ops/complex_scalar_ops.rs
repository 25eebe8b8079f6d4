//! Operators on TorchScript's `complex` scalar (Python's complex number): the `Complex`
//! constructors, arithmetic and comparison with int/float mixes, the `.complex` math
//! overloads, `polar`, `sum` of a complex list, complex tensors from and to numbers, and the
//! dict operators for complex keys (PyTorch's register_prim_ops.cpp and
//! register_prim_ops_fulljit.cpp schemas).
//!
//! The arithmetic follows c10::complex<double>: a real operand acts on the real part only
//! (`(a+bj) * x` is `(a*x) + (b*x)j`, not a complex product with `x+0j`, which differs for
//! infinities), and division is numpy's scaled algorithm, as c10's `operator/=`.

use std::sync::Arc;

use ferrojit_tensor::{Complex128, DType, Tensor};
use rustfft::num_complex::Complex;

use super::binding::{typed, CpuDevice};
use super::dict_ops::declarations_for_key;
use super::scalar_ops::implicit_tensor_number;
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;

fn to_num(value: Complex128) -> Complex<f64> {
    value.to_num()
}

fn from_num(value: Complex<f64>) -> Complex128 {
    Complex128::from_num(value)
}

/// An int, float or bool operand as the real number c10 converts it to.
fn real_operand(value: &IValue) -> Result<f64> {
    match value {
        IValue::Int(v) => Ok(*v as f64),
        IValue::Double(v) => Ok(*v),
        IValue::Bool(v) => Ok(f64::from(u8::from(*v))),
        other => other.to_double(),
    }
}

/// One operand of a mixed complex/real operator: the overload's schema decides which.
#[derive(Clone, Copy)]
enum Operand {
    Real(f64),
    Complex(Complex128),
}

impl Operand {
    fn read(value: &IValue) -> Result<Operand> {
        match value {
            IValue::Complex(c) => Ok(Operand::Complex(*c)),
            other => Ok(Operand::Real(real_operand(other)?)),
        }
    }

    fn as_complex(self) -> Complex128 {
        match self {
            Operand::Real(x) => Complex128::new(x, 0.0),
            Operand::Complex(c) => c,
        }
    }
}

fn add(a: IValue, b: IValue) -> Result<Complex128> {
    Ok(match (Operand::read(&a)?, Operand::read(&b)?) {
        (Operand::Complex(x), Operand::Real(y)) => Complex128::new(x.re + y, x.im),
        (Operand::Real(x), Operand::Complex(y)) => Complex128::new(x + y.re, y.im),
        (x, y) => {
            let (x, y) = (x.as_complex(), y.as_complex());
            Complex128::new(x.re + y.re, x.im + y.im)
        }
    })
}

fn sub(a: IValue, b: IValue) -> Result<Complex128> {
    Ok(match (Operand::read(&a)?, Operand::read(&b)?) {
        (Operand::Complex(x), Operand::Real(y)) => Complex128::new(x.re - y, x.im),
        // c10: `T - complex` is `complex(T) -= rhs`, so the imaginary part is `0 - im`.
        (x, y) => {
            let (x, y) = (x.as_complex(), y.as_complex());
            Complex128::new(x.re - y.re, x.im - y.im)
        }
    })
}

fn mul(a: IValue, b: IValue) -> Result<Complex128> {
    Ok(match (Operand::read(&a)?, Operand::read(&b)?) {
        (Operand::Complex(x), Operand::Real(y)) | (Operand::Real(y), Operand::Complex(x)) => {
            Complex128::new(x.re * y, x.im * y)
        }
        (x, y) => {
            let (x, y) = (x.as_complex(), y.as_complex());
            Complex128::new(x.re * y.re - x.im * y.im, x.re * y.im + x.im * y.re)
        }
    })
}

/// c10::complex's division (numpy's): scaled by the larger part of the divisor; a zero
/// divisor divides each part by zero, giving infinities or NaN.
fn complex_divide(a: Complex128, b: Complex128) -> Complex128 {
    let (c, d) = (b.re, b.im);
    let (abs_c, abs_d) = (c.abs(), d.abs());
    if abs_c >= abs_d {
        if abs_c == 0.0 && abs_d == 0.0 {
            Complex128::new(a.re / abs_c, a.im / abs_d)
        } else {
            let ratio = d / c;
            let scale = 1.0 / (c + d * ratio);
            Complex128::new((a.re + a.im * ratio) * scale, (a.im - a.re * ratio) * scale)
        }
    } else {
        let ratio = c / d;
        let scale = 1.0 / (d + c * ratio);
        Complex128::new((a.re * ratio + a.im) * scale, (a.im * ratio - a.re) * scale)
    }
}

fn div(a: Complex128, b: Complex128) -> Result<Complex128> {
    Ok(complex_divide(a, b))
}

/// `pow` as the C++ standard library computes it for c10: complex ** complex is
/// `exp(b * log(a))` (so `0j ** 0j` is NaN, as in PyTorch); complex ** real is the real
/// power of a positive real base, else `polar(exp(b * log|a|), b * arg(a))`; a positive real
/// base to a complex power is `polar(a ** re(b), im(b) * ln(a))`.
fn pow(a: IValue, b: IValue) -> Result<Complex128> {
    let exp_of_log = |base: Complex<f64>, exponent: Complex<f64>| (exponent * base.ln()).exp();
    Ok(match (Operand::read(&a)?, Operand::read(&b)?) {
        (Operand::Complex(base), Operand::Real(exponent)) => {
            if base.im == 0.0 && base.re > 0.0 {
                Complex128::new(base.re.powf(exponent), 0.0)
            } else {
                let log = to_num(base).ln();
                from_num(Complex::from_polar(
                    (exponent * log.re).exp(),
                    exponent * log.im,
                ))
            }
        }
        (Operand::Real(base), Operand::Complex(exponent)) if base > 0.0 => from_num(
            Complex::from_polar(base.powf(exponent.re), exponent.im * base.ln()),
        ),
        (base, exponent) => from_num(exp_of_log(
            to_num(base.as_complex()),
            to_num(exponent.as_complex()),
        )),
    })
}

fn equal(a: IValue, b: IValue) -> Result<bool> {
    let (x, y) = (
        Operand::read(&a)?.as_complex(),
        Operand::read(&b)?.as_complex(),
    );
    Ok(x.re == y.re && x.im == y.im)
}

fn not_equal(a: IValue, b: IValue) -> Result<bool> {
    Ok(!equal(a, b)?)
}

fn neg(a: Complex128) -> Result<Complex128> {
    Ok(Complex128::new(-a.re, -a.im))
}

/// `log(a, base)`: `log(a) / log(base)` in c10's mixed arithmetic (a real quotient divides
/// each part; a real dividend is a complex with a zero imaginary part).
fn log_with_base(a: IValue, b: IValue) -> Result<Complex128> {
    let log_of = |operand: Operand| match operand {
        Operand::Real(x) => Operand::Real(x.ln()),
        Operand::Complex(c) => Operand::Complex(from_num(to_num(c).ln())),
    };
    Ok(
        match (log_of(Operand::read(&a)?), log_of(Operand::read(&b)?)) {
            (Operand::Complex(x), Operand::Real(y)) => Complex128::new(x.re / y, x.im / y),
            (x, y) => complex_divide(x.as_complex(), y.as_complex()),
        },
    )
}

/// `1 - z` and `1 + z` with the signs of zero the branch cuts need (`1 - (3+0j)` is `-2-0j`,
/// below the cut, as C99's `casin` sees it).
fn one_minus_and_plus(z: Complex<f64>) -> (Complex<f64>, Complex<f64>) {
    (
        Complex::new(1.0 - z.re, -z.im),
        Complex::new(1.0 + z.re, z.im),
    )
}

/// `asin` by Kahan's formulas, which keep C99's branch cuts (`asin(3+0j)` has a positive
/// imaginary part, as in PyTorch).
fn complex_asin(z: Complex<f64>) -> Complex<f64> {
    let (minus, plus) = one_minus_and_plus(z);
    let (minus, plus) = (minus.sqrt(), plus.sqrt());
    Complex::new(
        z.re.atan2((minus * plus).re),
        (minus.conj() * plus).im.asinh(),
    )
}

/// `acos` by Kahan's formulas (branch cuts as C99's `cacos`).
fn complex_acos(z: Complex<f64>) -> Complex<f64> {
    let (minus, plus) = one_minus_and_plus(z);
    let (minus, plus) = (minus.sqrt(), plus.sqrt());
    Complex::new(
        2.0 * minus.re.atan2(plus.re),
        (plus.conj() * minus).im.asinh(),
    )
}

/// `atanh`: `(log(1 + z) - log(1 - z)) / 2` with a signed-zero `1 - z` (branch cuts as C99's
/// `catanh`).
fn complex_atanh(z: Complex<f64>) -> Complex<f64> {
    let (minus, plus) = one_minus_and_plus(z);
    (plus.ln() - minus.ln()) * 0.5
}

/// A complex function of one complex number (`Complex::exp`, [`complex_asin`]...).
type ComplexFunction = fn(Complex<f64>) -> Complex<f64>;

fn unary(function: ComplexFunction) -> impl Fn(Complex128) -> Result<Complex128> {
    move |a| Ok(from_num(function(to_num(a))))
}

fn angle(a: Complex128) -> Result<f64> {
    Ok(a.im.atan2(a.re))
}

fn magnitude(a: Complex128) -> Result<f64> {
    Ok(a.re.hypot(a.im))
}

fn is_nan(a: Complex128) -> Result<bool> {
    Ok(a.re.is_nan() || a.im.is_nan())
}

fn is_inf(a: Complex128) -> Result<bool> {
    Ok(a.re.is_infinite() || a.im.is_infinite())
}

fn is_finite(a: Complex128) -> Result<bool> {
    Ok(a.re.is_finite() && a.im.is_finite())
}

fn sum(values: Arc<crate::ivalue::ListValue>) -> Result<Complex128> {
    let mut total = Complex128::new(0.0, 0.0);
    for item in values.to_vec() {
        let item = item.to_complex()?;
        total = Complex128::new(total.re + item.re, total.im + item.im);
    }
    Ok(total)
}

/// `polar(abs, angle)`: c10::polar, `abs * (cos(angle) + sin(angle)j)`.
fn polar(magnitude: IValue, angle: IValue) -> Result<Complex128> {
    let (r, theta) = (real_operand(&magnitude)?, real_operand(&angle)?);
    Ok(Complex128::new(r * theta.cos(), r * theta.sin()))
}

/// A tensor operand of a `Complex` constructor: its one element as a real number (c10's
/// `item<double>()`, which refuses more than one element and a complex value).
fn tensor_part(tensor: &Tensor) -> Result<f64> {
    if tensor.numel() != 1 {
        return Err(RuntimeError::Other(format!(
            "a Tensor with {} elements cannot be converted to Scalar",
            tensor.numel()
        )));
    }
    if tensor.dtype().is_complex() {
        let value = complex_element(tensor)?;
        if value.im != 0.0 {
            return Err(RuntimeError::Other(
                "value cannot be converted to type double without overflow".to_string(),
            ));
        }
        return Ok(value.re);
    }
    Ok(tensor.item()?.to_f64())
}

/// The single element of a tensor, as a complex number.
pub(crate) fn complex_element(tensor: &Tensor) -> Result<Complex128> {
    let values = tensor
        .contiguous()
        .to_dtype(DType::ComplexDouble)
        .to_vec::<Complex128>()?;
    values.first().copied().ok_or_else(|| {
        RuntimeError::Other("a Tensor with 0 elements cannot be converted to Scalar".to_string())
    })
}

/// `complex(x, y)` for every mix of int, float, bool and single-element tensor parts.
fn construct(real: IValue, imaginary: IValue) -> Result<Complex128> {
    let part = |value: &IValue| match value {
        IValue::Tensor(cell) => tensor_part(&cell.get()),
        other => real_operand(other),
    };
    Ok(Complex128::new(part(&real)?, part(&imaginary)?))
}

/// `Complex.Scalar(a)`: the number as a complex.
fn construct_from_scalar(value: IValue) -> Result<Complex128> {
    match value {
        IValue::Complex(c) => Ok(c),
        other => Ok(Complex128::new(real_operand(&other)?, 0.0)),
    }
}

/// `ComplexImplicit(tensor)`: a zero-dimensional tensor used where a complex is expected.
fn complex_implicit(tensor: Arc<Tensor>) -> Result<Complex128> {
    implicit_tensor_number(&tensor, false)?;
    complex_element(&tensor)
}

/// `torch.tensor(c)`: a zero-dimensional tensor of the default complex dtype (complex64 with
/// float32 as the default float), or of `dtype` when given.
fn tensor_from_complex(
    value: Complex128,
    dtype: Option<DType>,
    device: CpuDevice,
    requires_grad: bool,
) -> Result<IValue> {
    let tensor = as_tensor_from_complex(value, dtype, device)?;
    Ok(IValue::tensor_with_requires_grad(tensor, requires_grad))
}

fn as_tensor_from_complex(
    value: Complex128,
    dtype: Option<DType>,
    _device: CpuDevice,
) -> Result<Tensor> {
    let default = DType::default_float()
        .to_complex()
        .unwrap_or(DType::ComplexFloat);
    let tensor = Tensor::from_vec(vec![value], &[])?;
    Ok(tensor.to_dtype(dtype.unwrap_or(default)))
}

pub fn declarations() -> Vec<OperatorDeclaration> {
    let mut declarations = vec![typed(
        "aten::Complex.Scalar(Scalar a) -> complex",
        construct_from_scalar,
    )];
    for (x, y) in [
        ("Tensor", "Tensor"),
        ("Tensor", "bool"),
        ("Tensor", "float"),
        ("Tensor", "int"),
        ("bool", "Tensor"),
        ("bool", "bool"),
        ("bool", "float"),
        ("bool", "int"),
        ("float", "Tensor"),
        ("float", "bool"),
        ("float", "float"),
        ("float", "int"),
        ("int", "Tensor"),
        ("int", "bool"),
        ("int", "float"),
        ("int", "int"),
    ] {
        let (a, b) = if (x, y) == ("Tensor", "Tensor") {
            ("a", "b")
        } else {
            ("x", "y")
        };
        declarations.push(typed(
            &format!("aten::Complex.{x}_{y}({x} {a}, {y} {b}) -> complex"),
            construct,
        ));
    }
    declarations.push(typed(
        "aten::ComplexImplicit(Tensor a) -> complex",
        complex_implicit,
    ));
    for (name, kernel) in [
        ("add", add as fn(IValue, IValue) -> Result<Complex128>),
        ("sub", sub),
        ("mul", mul),
    ] {
        declarations.push(typed(
            &format!("aten::{name}.complex(complex a, complex b) -> complex"),
            kernel,
        ));
        for (x, y) in [
            ("complex", "float"),
            ("complex", "int"),
            ("float", "complex"),
            ("int", "complex"),
        ] {
            declarations.push(typed(
                &format!("aten::{name}.{x}_{y}({x} a, {y} b) -> complex"),
                kernel,
            ));
        }
    }
    declarations.push(typed(
        "aten::div.complex(complex a, complex b) -> complex",
        div,
    ));
    declarations.push(typed(
        "aten::pow.complex(complex a, complex b) -> complex",
        pow,
    ));
    declarations.push(typed(
        "aten::pow.complex_float(complex a, float b) -> complex",
        pow,
    ));
    declarations.push(typed(
        "aten::pow.float_complex(float a, complex b) -> complex",
        pow,
    ));
    for (name, kernel) in [
        ("eq", equal as fn(IValue, IValue) -> Result<bool>),
        ("ne", not_equal),
    ] {
        declarations.push(typed(
            &format!("aten::{name}.complex(complex a, complex b) -> bool"),
            kernel,
        ));
        declarations.push(typed(
            &format!("aten::{name}.complex_float(complex a, float b) -> bool"),
            kernel,
        ));
        declarations.push(typed(
            &format!("aten::{name}.float_complex(float a, complex b) -> bool"),
            kernel,
        ));
    }
    declarations.push(typed("aten::neg.complex(complex a) -> complex", neg));
    declarations.push(typed(
        "aten::log.complex_complex(complex a, complex b) -> complex",
        log_with_base,
    ));
    for (x, y) in [
        ("complex", "float"),
        ("complex", "int"),
        ("float", "complex"),
        ("int", "complex"),
    ] {
        declarations.push(typed(
            &format!("aten::log.{x}_{y}({x} a, {y} b) -> complex"),
            log_with_base,
        ));
    }
    let math: [(&str, ComplexFunction); 15] = [
        ("log", Complex::ln),
        ("log10", Complex::log10),
        ("exp", Complex::exp),
        ("sqrt", Complex::sqrt),
        ("sin", Complex::sin),
        ("cos", Complex::cos),
        ("tan", Complex::tan),
        ("asin", complex_asin),
        ("acos", complex_acos),
        ("atan", Complex::atan),
        ("sinh", Complex::sinh),
        ("cosh", Complex::cosh),
        ("tanh", Complex::tanh),
        ("asinh", Complex::asinh),
        ("acosh", Complex::acosh),
    ];
    for (name, function) in math {
        declarations.push(typed(
            &format!("aten::{name}.complex(complex a) -> complex"),
            unary(function),
        ));
    }
    declarations.push(typed(
        "aten::atanh.complex(complex a) -> complex",
        unary(complex_atanh),
    ));
    declarations.push(typed("aten::angle.complex(complex a) -> float", angle));
    declarations.push(typed("prim::abs.complex(complex a) -> float", magnitude));
    declarations.push(typed("aten::isnan.complex(complex a) -> bool", is_nan));
    declarations.push(typed("aten::isinf.complex(complex a) -> bool", is_inf));
    declarations.push(typed(
        "aten::isfinite.complex(complex a) -> bool",
        is_finite,
    ));
    declarations.push(typed("aten::sum.complex(complex[] self) -> complex", sum));
    declarations.push(typed(
        "aten::polar.Scalar_Scalar(Scalar a, Scalar b) -> Scalar",
        polar,
    ));
    for (x, y) in [
        ("float", "float"),
        ("float", "int"),
        ("int", "int"),
        ("int", "float"),
    ] {
        let overload = if x == y {
            x.to_string()
        } else {
            format!("{x}_{y}")
        };
        declarations.push(typed(
            &format!("aten::polar.{overload}({x} a, {y} b) -> complex"),
            polar,
        ));
    }
    declarations.push(typed(
        "aten::tensor.complex(complex t, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False) -> Tensor",
        tensor_from_complex,
    ));
    declarations.push(typed(
        "aten::as_tensor.complex(complex t, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
        as_tensor_from_complex,
    ));
    declarations.extend(declarations_for_key("complex"));
    declarations
}
