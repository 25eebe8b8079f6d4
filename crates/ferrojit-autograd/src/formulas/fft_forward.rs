//! Derivatives of the FFTs with a complex result: the complex-to-complex transforms
//! (`fft`/`ifft`, `fft2`/`ifft2`, `fftn`/`ifftn`) and the one-sided real-to-complex ones
//! (`rfft*`, and `ihfft*`, which is the conjugate of `rfft*` with the `norm` direction
//! swapped). The adjoint of a transform is the opposite-direction transform with the `norm`
//! direction swapped; a one-sided result's gradient is zero-padded back to the full length
//! first, a real input keeps the real part, and the result is trimmed or zero-padded back to
//! the input's lengths (the forward zero-pads or trims the input to the lengths it
//! transforms).

use ferrojit_runtime::{IValue, Result};

use super::fft::{plan_with, resized, swapped};
use super::support::refuse;
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call1, ints};

/// Which transform a formula undoes.
#[derive(Clone, Copy, PartialEq)]
enum Transform {
    /// `fft*`: complex to complex, forward.
    Forward,
    /// `ifft*`: complex to complex, inverse.
    Inverse,
    /// `rfft*`: real to one-sided complex.
    OneSided,
    /// `ihfft*`: the conjugate of `rfft*` with the norm direction swapped.
    HermitianOneSided,
}

fn norm_of(value: &IValue) -> Result<&'static str> {
    match value {
        IValue::None => Ok("backward"),
        IValue::Str(text) => match &**text {
            "backward" => Ok("backward"),
            "forward" => Ok("forward"),
            "ortho" => Ok("ortho"),
            other => Err(refuse(format!("Invalid normalization mode: \"{other}\""))),
        },
        _ => Err(refuse("fft: norm must be a string or None")),
    }
}

/// The transformed dims and their lengths (`n`/`s` or the input's own), as `fft`, `fft2`
/// and `fftn` read `s` and `dim` (`None` dims: the last `len(s)`, or all).
fn plan(sizes: &[usize], s: &IValue, dim: &IValue) -> Result<(Vec<usize>, Vec<usize>)> {
    plan_with(sizes, s, dim, |d, _| sizes[d])
}

/// The gradient of a transform with argument layout `(self, n or s, dim, norm)`.
fn transform_back(input: &FormulaInput, transform: Transform) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let (dims, lengths) = plan(&sizes, input.argument(1)?, input.argument(2)?)?;
    let norm = norm_of(input.argument(3)?)?;
    let mut gradient = input.grad(0)?.clone();
    // ihfft = conj(rfft) with the norm direction swapped: conjugate the gradient first.
    let (norm, onesided) = match transform {
        Transform::HermitianOneSided => {
            gradient = call::unary("aten::conj_physical", &gradient)?;
            (swapped(norm), true)
        }
        Transform::OneSided => (norm, true),
        Transform::Forward | Transform::Inverse => (norm, false),
    };
    let (last_dim, last_length) = (dims[dims.len() - 1], lengths[lengths.len() - 1]);
    if onesided {
        gradient = resized(gradient, last_dim, last_length)?;
    }
    let adjoint = if transform == Transform::Inverse {
        "aten::fft_fftn"
    } else {
        "aten::fft_ifftn"
    };
    let dim_values: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
    gradient = call1(
        adjoint,
        vec![
            gradient,
            IValue::None,
            ints(&dim_values),
            IValue::Str(swapped(norm).into()),
        ],
    )?;
    if !input.dtype(0)?.is_complex() {
        gradient = call::unary("aten::real", &gradient)?;
    }
    for &d in &dims {
        gradient = resized(gradient, d, sizes[d])?;
    }
    let mut out = input.none();
    out[0] = Some(gradient);
    Ok(out)
}

fn forward(input: &FormulaInput) -> Result<Gradients> {
    transform_back(input, Transform::Forward)
}

fn inverse(input: &FormulaInput) -> Result<Gradients> {
    transform_back(input, Transform::Inverse)
}

fn one_sided(input: &FormulaInput) -> Result<Gradients> {
    transform_back(input, Transform::OneSided)
}

fn hermitian_one_sided(input: &FormulaInput) -> Result<Gradients> {
    transform_back(input, Transform::HermitianOneSided)
}

formula_table![
    ("aten::fft_fft", "FftC2CBackward0", forward, &[]),
    ("aten::fft_fft2", "FftC2CBackward0", forward, &[]),
    ("aten::fft_fftn", "FftC2CBackward0", forward, &[]),
    ("aten::fft_ifft", "FftC2CBackward0", inverse, &[]),
    ("aten::fft_ifft2", "FftC2CBackward0", inverse, &[]),
    ("aten::fft_ifftn", "FftC2CBackward0", inverse, &[]),
    ("aten::fft_rfft", "FftR2CBackward0", one_sided, &[]),
    ("aten::fft_rfft2", "FftR2CBackward0", one_sided, &[]),
    ("aten::fft_rfftn", "FftR2CBackward0", one_sided, &[]),
    (
        "aten::fft_ihfft",
        "FftR2CBackward0",
        hermitian_one_sided,
        &[]
    ),
    (
        "aten::fft_ihfft2",
        "FftR2CBackward0",
        hermitian_one_sided,
        &[]
    ),
    (
        "aten::fft_ihfftn",
        "FftR2CBackward0",
        hermitian_one_sided,
        &[]
    ),
];
