//! Derivatives of the FFTs with a real result: `irfft`/`irfft2`/`irfftn` (complex-to-real
//! inverse transforms) and `hfft`/`hfft2`/`hfftn` (which are `irfft*` of the conjugate with
//! the `norm` direction swapped). As PyTorch's `fft_c2r_backward`: the gradient is the
//! real-to-complex transform of the output gradient with the same scaling, with the entries
//! whose mirror image falls outside the one-sided half doubled, then resized back to the
//! input's lengths (the forward zero-pads or trims the input to the lengths it transforms).

use ferrojit_runtime::{IValue, Result};
use ferrojit_tensor::Tensor;

use super::support::refuse;
use super::{wrap_dim, Formula, FormulaInput, Gradients};
use crate::call::{self, call1, int, ints, mul};

/// The `norm` argument as a string (`None` is "backward").
fn norm_of(value: &IValue) -> Result<String> {
    match value {
        IValue::None => Ok("backward".into()),
        IValue::Str(text) => match &**text {
            "backward" | "forward" | "ortho" => Ok(text.to_string()),
            other => Err(refuse(format!("Invalid normalization mode: \"{other}\""))),
        },
        _ => Err(refuse("fft: norm must be a string or None")),
    }
}

/// The other direction's name for the same scaling ("backward" scales the inverse by 1/n,
/// "forward" the forward transform).
pub(super) fn swapped(norm: &str) -> &str {
    match norm {
        "backward" => "forward",
        "forward" => "backward",
        other => other,
    }
}

/// The transformed dims and output lengths of a c2r call on an input of `sizes`: `s` and
/// `dim` as the `*fftn` functions read them (`None` dims: the last `len(s)`, or all). A dim
/// `s` leaves out gets `2 * (size - 1)` for the last one (the one-sided half's full length).
fn plan(sizes: &[usize], s: &IValue, dim: &IValue) -> Result<(Vec<usize>, Vec<usize>)> {
    plan_with(sizes, s, dim, |d, last| {
        if last {
            2 * sizes[d].saturating_sub(1)
        } else {
            sizes[d]
        }
    })
}

/// The transformed dims and their lengths, read from `s` and `dim` as the `*fft*` functions
/// read them; `default_length(d, is_last)` gives the length of a dim that `s` leaves out.
pub(super) fn plan_with(
    sizes: &[usize],
    s: &IValue,
    dim: &IValue,
    default_length: impl Fn(usize, bool) -> usize,
) -> Result<(Vec<usize>, Vec<usize>)> {
    let rank = sizes.len();
    let lengths: Option<Vec<i64>> = match s {
        IValue::None => None,
        IValue::Int(n) => Some(vec![*n]),
        other => Some(other.to_int_vec()?),
    };
    let dims: Vec<usize> = match dim {
        IValue::None => match &lengths {
            Some(lengths) => (rank - lengths.len().min(rank)..rank).collect(),
            None => (0..rank).collect(),
        },
        IValue::Int(d) => vec![wrap_dim(*d, rank)],
        other => other
            .to_int_vec()?
            .into_iter()
            .map(|d| wrap_dim(d, rank))
            .collect(),
    };
    let Some(&last) = dims.last() else {
        return Err(refuse("fft: no dimension to transform"));
    };
    let mut out_lengths = Vec::with_capacity(dims.len());
    for (position, &d) in dims.iter().enumerate() {
        let given = lengths
            .as_ref()
            .and_then(|lengths| lengths.get(position))
            .copied()
            .filter(|&n| n >= 0);
        let length = match given {
            Some(n) => n as usize,
            None => default_length(d, d == last),
        };
        if length == 0 {
            return Err(refuse(format!(
                "Invalid number of data points ({length}) specified"
            )));
        }
        out_lengths.push(length);
    }
    Ok((dims, out_lengths))
}

/// Zero-pads or trims `value` along `dim` to `length`.
pub(super) fn resized(value: IValue, dim: usize, length: usize) -> Result<IValue> {
    let sizes = call::sizes(&value)?;
    let current = sizes[dim];
    if current == length {
        return Ok(value);
    }
    if current > length {
        return call1(
            "aten::narrow",
            vec![value, int(dim as i64), int(0), int(length as i64)],
        );
    }
    // constant_pad_nd pads from the last dim backwards, two entries per dim.
    let mut pad = vec![0i64; 2 * (sizes.len() - dim)];
    let slot = pad.len() - 1;
    pad[slot] = (length - current) as i64;
    call1("aten::constant_pad_nd", vec![value, ints(&pad)])
}

/// The gradient of `c2r(self)` (`irfft*` scaled per `norm`): argument layout
/// `(self, s or n, dim, norm)`; `conjugate` for the `hfft*` forms.
fn complex_to_real_back(input: &FormulaInput, hermitian: bool) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let (dims, lengths) = plan(&sizes, input.argument(1)?, input.argument(2)?)?;
    let norm = norm_of(input.argument(3)?)?;
    // irfft's inverse scaling is the forward scaling of the r2c transform taking it back.
    let inverse_norm = if hermitian {
        swapped(&norm)
    } else {
        norm.as_str()
    };
    let transform_norm = swapped(inverse_norm);
    let dim_values: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
    let transformed = call1(
        "aten::fft_rfftn",
        vec![
            input.grad(0)?.clone(),
            IValue::None,
            ints(&dim_values),
            IValue::Str(transform_norm.into()),
        ],
    )?;
    let complex_input = input.dtype(0)?.is_complex();
    let mut gradient = if complex_input {
        transformed
    } else {
        call1("aten::real", vec![transformed])?
    };
    let (last_dim, last_length) = (dims[dims.len() - 1], lengths[lengths.len() - 1]);
    let onesided = last_length / 2 + 1;
    let doubled = last_length - onesided;
    if doubled > 0 {
        let weights: Vec<f64> = (0..onesided)
            .map(|index| {
                if (1..=doubled).contains(&index) {
                    2.0
                } else {
                    1.0
                }
            })
            .collect();
        let mut shape = vec![1usize; sizes.len()];
        shape[last_dim] = onesided;
        let mut weights = call::fresh(Tensor::from_vec(weights, &shape)?);
        if !complex_input && input.dtype(0)? != ferrojit_tensor::DType::Float64 {
            weights = call1(
                "aten::to.dtype",
                vec![weights, int(input.dtype(0)?.scalar_type_index())],
            )?;
        }
        gradient = mul(&gradient, &weights)?;
    }
    for &d in &dims {
        gradient = resized(gradient, d, sizes[d])?;
    }
    if hermitian && complex_input {
        gradient = call1("aten::conj_physical", vec![gradient])?;
    }
    let mut out = input.none();
    out[0] = Some(gradient);
    Ok(out)
}

fn irfft(input: &FormulaInput) -> Result<Gradients> {
    complex_to_real_back(input, false)
}

fn hfft(input: &FormulaInput) -> Result<Gradients> {
    complex_to_real_back(input, true)
}

formula_table![
    ("aten::fft_irfft", "FftC2RBackward0", irfft, &[]),
    ("aten::fft_irfft2", "FftC2RBackward0", irfft, &[]),
    ("aten::fft_irfftn", "FftC2RBackward0", irfft, &[]),
    ("aten::fft_hfft", "FftC2RBackward0", hfft, &[]),
    ("aten::fft_hfft2", "FftC2RBackward0", hfft, &[]),
    ("aten::fft_hfftn", "FftC2RBackward0", hfft, &[]),
];
