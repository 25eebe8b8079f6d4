//! `torch.special` and the older names of the same functions (`digamma`, `polygamma`, `i0`,
//! `lgamma`, `mvlgamma`, `sinc`, `igamma`, ...): schemas and argument binding. The kernels are
//! `ferrojit_tensor::special_functions`; the `special_*` aliases of functions registered
//! elsewhere (`special_erf`, `special_expit`, `special_softmax`, ...) call the same kernels.

use std::sync::Arc;

use ferrojit_tensor::ops::pointwise::UnaryOp;
use ferrojit_tensor::special_functions::polynomials::{evaluate, Polynomial};
use ferrojit_tensor::special_functions::{
    bessel, bessel_rational, entr, gamma, map_binary, map_unary, map_unary_with_single, normal,
    sinc, xlog1py, xlogy,
};
use ferrojit_tensor::{DType, Tensor, TensorError};

use super::binding::{out_from_functional, typed, WrappedNumber};
use crate::error::Result;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// A special function of one f64.
type UnaryFunction = fn(f64) -> f64;

/// A special function of one f32 (for the functions PyTorch evaluates in f32).
type SingleFunction = fn(f32) -> f32;

/// A special function of two f64s.
type BinaryFunction = fn(f64, f64) -> f64;

/// One-argument functions: (name, function). Each gets `aten::NAME(Tensor self)` and
/// `aten::NAME.out`.
const UNARY: &[(&str, UnaryFunction)] = &[
    ("digamma", gamma::digamma),
    ("special_digamma", gamma::digamma),
    ("special_psi", gamma::digamma),
    ("lgamma", gamma::lgamma),
    ("special_gammaln", gamma::lgamma),
    ("i0", bessel::i0),
    ("special_i0", bessel::i0),
    ("special_i0e", bessel::i0e),
    ("special_i1", bessel::i1),
    ("special_i1e", bessel::i1e),
    ("special_modified_bessel_i0", bessel::i0),
    ("special_modified_bessel_i1", bessel::i1),
    ("special_modified_bessel_k0", bessel::k0),
    ("special_modified_bessel_k1", bessel::k1),
    ("special_scaled_modified_bessel_k0", bessel::k0e),
    ("special_scaled_modified_bessel_k1", bessel::k1e),
    ("special_bessel_j0", bessel::bessel_j0),
    ("special_bessel_j1", bessel::bessel_j1),
    ("special_bessel_y0", bessel::bessel_y0),
    ("special_bessel_y1", bessel::bessel_y1),
    ("special_spherical_bessel_j0", bessel::spherical_bessel_j0),
    ("special_airy_ai", bessel::airy_ai),
    ("special_erfcx", normal::erfcx),
    ("special_ndtr", normal::ndtr),
    ("special_ndtri", normal::ndtri),
    ("special_log_ndtr", normal::log_ndtr),
    ("special_entr", entr),
    ("sinc", sinc),
    ("special_sinc", sinc),
];

/// The functions of [`UNARY`] PyTorch evaluates in f32 for float32 tensors, with their f32
/// form (the others compute in f64 and round).
const SINGLE_PRECISION: &[(&str, SingleFunction)] = &[
    ("special_bessel_j0", bessel_rational::j0::<f32>),
    ("special_bessel_j1", bessel_rational::j1::<f32>),
    ("special_bessel_y0", bessel_rational::y0::<f32>),
    ("special_bessel_y1", bessel_rational::y1::<f32>),
];

/// The functions of [`UNARY`] whose schemas name the argument `x`.
const ARGUMENT_NAMED_X: &[&str] = &[
    "special_scaled_modified_bessel_k0",
    "special_scaled_modified_bessel_k1",
    "special_spherical_bessel_j0",
    "special_airy_ai",
];

/// `special_*` names of unary functions registered elsewhere, with their kernel.
const UNARY_ALIASES: &[(&str, UnaryOp)] = &[
    ("special_expit", UnaryOp::Sigmoid),
    ("special_exp2", UnaryOp::Exp2),
    ("special_expm1", UnaryOp::Expm1),
    ("special_log1p", UnaryOp::Log1p),
    ("special_erf", UnaryOp::Erf),
    ("special_erfc", UnaryOp::Erfc),
    ("special_erfinv", UnaryOp::Erfinv),
];

/// Two-argument functions with their Tensor/Scalar overloads: (name, function).
const BINARY: &[(&str, BinaryFunction)] = &[
    ("special_xlog1py", xlog1py),
    ("special_xlogy", xlogy),
    ("special_zeta", gamma::zeta),
];

const POLYNOMIALS: &[(&str, Polynomial)] = &[
    ("special_chebyshev_polynomial_t", Polynomial::ChebyshevT),
    ("special_chebyshev_polynomial_u", Polynomial::ChebyshevU),
    ("special_chebyshev_polynomial_v", Polynomial::ChebyshevV),
    ("special_chebyshev_polynomial_w", Polynomial::ChebyshevW),
    (
        "special_shifted_chebyshev_polynomial_t",
        Polynomial::ShiftedChebyshevT,
    ),
    (
        "special_shifted_chebyshev_polynomial_u",
        Polynomial::ShiftedChebyshevU,
    ),
    (
        "special_shifted_chebyshev_polynomial_v",
        Polynomial::ShiftedChebyshevV,
    ),
    (
        "special_shifted_chebyshev_polynomial_w",
        Polynomial::ShiftedChebyshevW,
    ),
    ("special_hermite_polynomial_h", Polynomial::HermiteH),
    ("special_hermite_polynomial_he", Polynomial::HermiteHe),
    ("special_laguerre_polynomial_l", Polynomial::LaguerreL),
    ("special_legendre_polynomial_p", Polynomial::LegendreP),
];

fn unary_declarations(declarations: &mut Vec<OperatorDeclaration>) {
    for &(name, function) in UNARY {
        let single = SINGLE_PRECISION
            .iter()
            .find(|(single_name, _)| *single_name == name)
            .map(|&(_, single)| single);
        let kernel = move |input: Input| -> Result<Tensor> {
            Ok(match single {
                Some(single) => map_unary_with_single(name, &input, function, single)?,
                None => map_unary(name, &input, function)?,
            })
        };
        // The newer functions name their argument `x`, the older ones `self`.
        let argument = if ARGUMENT_NAMED_X.contains(&name) {
            "x"
        } else {
            "self"
        };
        declarations.push(typed(
            &format!("aten::{name}(Tensor {argument}) -> Tensor"),
            kernel,
        ));
        declarations.push(out_from_functional(
            &format!("aten::{name}.out(Tensor {argument}, *, Tensor(a!) out) -> Tensor(a!)"),
            kernel,
        ));
    }
    for &(name, op) in UNARY_ALIASES {
        let kernel = move |input: Input| -> Result<Tensor> { Ok(input.unary(op)?) };
        declarations.push(typed(
            &format!("aten::{name}(Tensor self) -> Tensor"),
            kernel,
        ));
        declarations.push(out_from_functional(
            &format!("aten::{name}.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)"),
            kernel,
        ));
    }
}

fn binary_declarations(declarations: &mut Vec<OperatorDeclaration>) {
    for &(name, function) in BINARY {
        let tensors =
            move |a: Input, b: Input| -> Result<Tensor> { Ok(map_binary(name, &a, &b, function)?) };
        let self_scalar = move |a: WrappedNumber, b: Input| -> Result<Tensor> {
            Ok(map_binary(name, &a, &b, function)?)
        };
        let other_scalar = move |a: Input, b: WrappedNumber| -> Result<Tensor> {
            Ok(map_binary(name, &a, &b, function)?)
        };
        declarations.extend([
            typed(&format!("aten::{name}(Tensor self, Tensor other) -> Tensor"), tensors),
            out_from_functional(
                &format!("aten::{name}.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)"),
                tensors,
            ),
            typed(&format!("aten::{name}.self_scalar(Scalar self, Tensor other) -> Tensor"), self_scalar),
            out_from_functional(
                &format!("aten::{name}.self_scalar_out(Scalar self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)"),
                self_scalar,
            ),
            typed(&format!("aten::{name}.other_scalar(Tensor self, Scalar other) -> Tensor"), other_scalar),
            out_from_functional(
                &format!("aten::{name}.other_scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)"),
                other_scalar,
            ),
        ]);
    }
}

fn polynomial_declarations(declarations: &mut Vec<OperatorDeclaration>) {
    for &(name, kind) in POLYNOMIALS {
        let function = move |x: f64, n: f64| evaluate(kind, x, n);
        let tensors =
            move |x: Input, n: Input| -> Result<Tensor> { Ok(map_binary(name, &x, &n, function)?) };
        let x_scalar = move |x: WrappedNumber, n: Input| -> Result<Tensor> {
            Ok(map_binary(name, &x, &n, function)?)
        };
        let n_scalar = move |x: Input, n: WrappedNumber| -> Result<Tensor> {
            Ok(map_binary(name, &x, &n, function)?)
        };
        declarations.extend([
            typed(&format!("aten::{name}(Tensor x, Tensor n) -> Tensor"), tensors),
            out_from_functional(
                &format!("aten::{name}.out(Tensor x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)"),
                tensors,
            ),
            typed(&format!("aten::{name}.x_scalar(Scalar x, Tensor n) -> Tensor"), x_scalar),
            out_from_functional(
                &format!("aten::{name}.x_scalar_out(Scalar x, Tensor n, *, Tensor(a!) out) -> Tensor(a!)"),
                x_scalar,
            ),
            typed(&format!("aten::{name}.n_scalar(Tensor x, Scalar n) -> Tensor"), n_scalar),
            out_from_functional(
                &format!("aten::{name}.n_scalar_out(Tensor x, Scalar n, *, Tensor(a!) out) -> Tensor(a!)"),
                n_scalar,
            ),
        ]);
    }
}

fn polygamma(n: i64, input: Input) -> Result<Tensor> {
    if n < 0 {
        return Err(TensorError::InvalidArgument(
            "polygamma(n, x) does not support negative n.".to_string(),
        )
        .into());
    }
    Ok(map_unary("polygamma", &input, |x| gamma::polygamma(n, x))?)
}

/// `mvlgamma(x, p)`: PyTorch 2.15 no longer checks the domain; arguments at or below
/// (p - 1) / 2 reach a pole of lgamma (+inf) or give its value there.
fn mvlgamma(input: Input, p: i64) -> Result<Tensor> {
    if p < 1 {
        return Err(TensorError::InvalidArgument(
            "p has to be greater than or equal to 1".to_string(),
        )
        .into());
    }
    Ok(map_unary("mvlgamma", &input, |x| {
        gamma::multigammaln(x, p)
    })?)
}

fn igamma(a: Input, x: Input) -> Result<Tensor> {
    Ok(map_binary("igamma", &a, &x, gamma::gammainc)?)
}

fn igammac(a: Input, x: Input) -> Result<Tensor> {
    Ok(map_binary("igammac", &a, &x, gamma::gammaincc)?)
}

fn logit(input: Input, eps: Option<f64>) -> Result<Tensor> {
    Ok(input.unary(UnaryOp::Logit(eps))?)
}

fn round(input: Input, decimals: i64) -> Result<Tensor> {
    Ok(input.unary(UnaryOp::Round(decimals))?)
}

fn softmax(input: Input, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    Ok(input.softmax(dim, dtype)?)
}

fn log_softmax(input: Input, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    Ok(input.log_softmax(dim, dtype)?)
}

fn logsumexp(input: Input, dim: Vec<i64>, keepdim: bool) -> Result<Tensor> {
    Ok(input.logsumexp(&dim, keepdim)?)
}

pub fn declarations() -> Vec<OperatorDeclaration> {
    let mut declarations = Vec::new();
    unary_declarations(&mut declarations);
    binary_declarations(&mut declarations);
    polynomial_declarations(&mut declarations);
    declarations.extend([
        typed("aten::polygamma(int n, Tensor self) -> Tensor", polygamma),
        out_from_functional("aten::polygamma.out(int n, Tensor self, *, Tensor(a!) out) -> Tensor(a!)", polygamma),
        typed("aten::special_polygamma(int n, Tensor self) -> Tensor", polygamma),
        out_from_functional("aten::special_polygamma.out(int n, Tensor self, *, Tensor(a!) out) -> Tensor(a!)", polygamma),
        typed("aten::mvlgamma(Tensor self, int p) -> Tensor", mvlgamma),
        out_from_functional("aten::mvlgamma.out(Tensor self, int p, *, Tensor(a!) out) -> Tensor(a!)", mvlgamma),
        typed("aten::special_multigammaln(Tensor self, int p) -> Tensor", mvlgamma),
        out_from_functional("aten::special_multigammaln.out(Tensor self, int p, *, Tensor(a!) out) -> Tensor(a!)", mvlgamma),
        typed("aten::igamma(Tensor self, Tensor other) -> Tensor", igamma),
        out_from_functional("aten::igamma.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", igamma),
        typed("aten::special_gammainc(Tensor self, Tensor other) -> Tensor", igamma),
        out_from_functional("aten::special_gammainc.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", igamma),
        typed("aten::igammac(Tensor self, Tensor other) -> Tensor", igammac),
        out_from_functional("aten::igammac.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", igammac),
        typed("aten::special_gammaincc(Tensor self, Tensor other) -> Tensor", igammac),
        out_from_functional("aten::special_gammaincc.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", igammac),
        typed("aten::special_logit(Tensor self, float? eps=None) -> Tensor", logit),
        out_from_functional("aten::special_logit.out(Tensor self, float? eps=None, *, Tensor(a!) out) -> Tensor(a!)", logit),
        typed("aten::special_round(Tensor self, *, int decimals=0) -> Tensor", round),
        out_from_functional("aten::special_round.out(Tensor self, *, int decimals=0, Tensor(a!) out) -> Tensor(a!)", round),
        typed("aten::special_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", softmax),
        typed("aten::special_log_softmax(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", log_softmax),
        typed("aten::special_logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor", logsumexp),
        out_from_functional("aten::special_logsumexp.out(Tensor self, int[1] dim, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)", logsumexp),
    ]);
    declarations
}
