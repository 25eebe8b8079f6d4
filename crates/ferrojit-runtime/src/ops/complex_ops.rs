//! The complex-number operators: `view_as_real`/`view_as_complex`, `real`, `imag`, the
//! conjugates, `angle`, `polar` and `complex`. Elementwise arithmetic, comparisons,
//! reductions and conversions on complex tensors go through their usual families; the
//! kernels are `ferrojit_tensor::ops::complex`.

use std::sync::Arc;

use ferrojit_tensor::Tensor;

use super::binding::{out_from_functional, typed};
use crate::error::Result;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

fn view_as_real(input: Input) -> Result<Tensor> {
    Ok(input.view_as_real()?)
}

fn view_as_complex(input: Input) -> Result<Tensor> {
    Ok(input.view_as_complex()?)
}

fn real(input: Input) -> Result<Tensor> {
    Ok(input.real_part()?)
}

fn imag(input: Input) -> Result<Tensor> {
    Ok(input.imaginary_part()?)
}

fn conj(input: Input) -> Result<Tensor> {
    Ok(input.conj()?)
}

/// ferrojit computes conjugates at once, so no tensor carries an unresolved conjugate bit.
fn resolve_conj(input: Input) -> Result<Tensor> {
    Ok((*input).clone())
}

fn is_conj(_input: Input) -> Result<bool> {
    Ok(false)
}

fn angle(input: Input) -> Result<Tensor> {
    Ok(input.angle()?)
}

fn polar(magnitude: Input, angle: Input) -> Result<Tensor> {
    Ok(Tensor::polar(&magnitude, &angle)?)
}

fn complex(real: Input, imaginary: Input) -> Result<Tensor> {
    Ok(Tensor::complex(&real, &imaginary)?)
}

pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        typed(
            "aten::view_as_real(Tensor(a) self) -> Tensor(a)",
            view_as_real,
        ),
        typed(
            "aten::view_as_complex(Tensor(a) self) -> Tensor(a)",
            view_as_complex,
        ),
        typed("aten::real(Tensor(a) self) -> Tensor(a)", real),
        typed("aten::imag(Tensor(a) self) -> Tensor(a)", imag),
        typed("aten::conj(Tensor(a) self) -> Tensor(a)", conj),
        typed("aten::_conj(Tensor(a) self) -> Tensor(a)", conj),
        typed(
            "aten::resolve_conj(Tensor(a) self) -> Tensor(a)",
            resolve_conj,
        ),
        typed("aten::is_conj(Tensor self) -> bool", is_conj),
        typed("aten::conj_physical(Tensor self) -> Tensor", conj),
        out_from_functional(
            "aten::conj_physical.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
            conj,
        ),
        typed("aten::_conj_physical(Tensor self) -> Tensor", conj),
        typed("aten::angle(Tensor self) -> Tensor", angle),
        out_from_functional(
            "aten::angle.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
            angle,
        ),
        typed("aten::polar(Tensor abs, Tensor angle) -> Tensor", polar),
        out_from_functional(
            "aten::polar.out(Tensor abs, Tensor angle, *, Tensor(a!) out) -> Tensor(a!)",
            polar,
        ),
        typed("aten::complex(Tensor real, Tensor imag) -> Tensor", complex),
        out_from_functional(
            "aten::complex.out(Tensor real, Tensor imag, *, Tensor(a!) out) -> Tensor(a!)",
            complex,
        ),
    ]
}
