//! `stft`'s gradient: the transform is rebuilt from differentiable real operators (frames
//! cut by `unfold`, windowed, then multiplied by the cosine and sine tables of the discrete
//! Fourier transform; `complex` joins the parts of a complex result; with align_to_window
//! the frames are `win_length` long and padded) and differentiated
//! through that composition. PyTorch differentiates its own decomposition the same way.

use std::f64::consts::PI;

use ferrojit_runtime::{IValue, Result};
use ferrojit_tensor::{DType, Tensor};

use super::composition::through_composition;
use super::support::refuse;
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call1, int, ints, matmul, neg, scale, tensor_list, transpose};

/// A `rows x columns` table of `f(row, column)` in `dtype`.
fn table(
    rows: usize,
    columns: usize,
    dtype: DType,
    f: impl Fn(usize, usize) -> f64,
) -> Result<IValue> {
    let mut values = Vec::with_capacity(rows * columns);
    for row in 0..rows {
        for column in 0..columns {
            values.push(f(row, column));
        }
    }
    let table = call::fresh(Tensor::from_vec(values, &[rows, columns])?);
    if dtype == DType::Float64 {
        Ok(table)
    } else {
        call1(
            "aten::to.dtype",
            vec![table, int(dtype.scalar_type_index())],
        )
    }
}

fn optional_int(value: &IValue, default: i64) -> Result<i64> {
    if value.is_none() {
        Ok(default)
    } else {
        value.to_int()
    }
}

fn optional_bool(value: &IValue, default: bool) -> Result<bool> {
    if value.is_none() {
        Ok(default)
    } else {
        value.to_bool()
    }
}

/// `stft(self, n_fft, hop_length, win_length, window, normalized, onesided, return_complex,
/// align_to_window)` for a real `self` (framed along its last dimension).
fn stft(input: &FormulaInput) -> Result<Gradients> {
    let n_fft = input.int(1)?;
    let hop = optional_int(input.argument(2)?, n_fft / 4)?;
    let win_length = optional_int(input.argument(3)?, n_fft)?;
    let normalized = input.argument(5)?.to_bool()?;
    let onesided = optional_bool(input.argument(6)?, true)?;
    let complex_result = optional_bool(input.argument(7)?, false)?;
    // align_to_window (center=False only): each frame's window covers the `win_length`
    // samples from the frame's start, not the middle of an `n_fft` frame.
    let aligned = optional_bool(input.argument(8)?, false)? && win_length < n_fft;
    if n_fft <= 0 || hop <= 0 || win_length <= 0 || win_length > n_fft {
        return Err(refuse(format!(
            "stft: expected 0 < n_fft, 0 < hop_length and 0 < win_length <= n_fft, but got \
             n_fft={n_fft}, hop_length={hop}, win_length={win_length}"
        )));
    }
    let dtype = input.dtype(0)?;
    if !matches!(dtype, DType::Float32 | DType::Float64) {
        return Err(refuse(format!(
            "stft: the gradient needs a real floating input, got {dtype:?}"
        )));
    }
    let length = n_fft as usize;
    let bins = if onesided { length / 2 + 1 } else { length };
    through_composition(input, &[0, 4], |arguments| {
        let angle =
            |sample: usize, bin: usize| 2.0 * PI * ((sample * bin) % length) as f64 / length as f64;
        let cosines = table(length, bins, dtype, |sample, bin| angle(sample, bin).cos())?;
        let sines = table(length, bins, dtype, |sample, bin| angle(sample, bin).sin())?;
        if aligned {
            // Frames of `win_length`, windowed, then zero-padded to `n_fft` around the middle
            // (where a centred window would sit).
            let frames = call1(
                "aten::unfold",
                vec![arguments[0].clone(), int(-1), int(win_length), int(hop)],
            )?;
            let windowed = if arguments[4].is_none() {
                frames
            } else {
                let window = call1(
                    "aten::reshape",
                    vec![arguments[4].clone(), ints(&[win_length])],
                )?;
                call::mul(&frames, &window)?
            };
            let left = (n_fft - win_length) / 2;
            let padded = call1(
                "aten::constant_pad_nd",
                vec![windowed, ints(&[left, n_fft - win_length - left])],
            )?;
            return transform_frames(&padded, &cosines, &sines, complex_result, normalized, n_fft);
        }
        let frames = call1(
            "aten::unfold",
            vec![arguments[0].clone(), int(-1), int(n_fft), int(hop)],
        )?;
        let windowed = match &arguments[4] {
            IValue::None if win_length == n_fft => frames,
            window => {
                let window = if window.is_none() {
                    table(1, win_length as usize, dtype, |_, _| 1.0)?
                } else {
                    window.clone()
                };
                let window = call1("aten::reshape", vec![window, ints(&[win_length])])?;
                // A shorter window sits in the middle of the frame.
                let left = (n_fft - win_length) / 2;
                let padded = call1(
                    "aten::constant_pad_nd",
                    vec![window, ints(&[left, n_fft - win_length - left])],
                )?;
                call::mul(&frames, &padded)?
            }
        };
        transform_frames(
            &windowed,
            &cosines,
            &sines,
            complex_result,
            normalized,
            n_fft,
        )
    })
}

/// The discrete Fourier transform of windowed frames (`[..., frames, n_fft]`) through the
/// cosine and sine tables, as stft lays it out: `[..., bins, frames]` complex, or
/// `[..., bins, frames, 2]` real.
fn transform_frames(
    windowed: &IValue,
    cosines: &IValue,
    sines: &IValue,
    complex_result: bool,
    normalized: bool,
    n_fft: i64,
) -> Result<Vec<IValue>> {
    let real = matmul(windowed, cosines)?;
    let imaginary = neg(&matmul(windowed, sines)?)?;
    let mut result = if complex_result {
        let values = call1("aten::complex", vec![real, imaginary])?;
        transpose(&values, -2, -1)?
    } else {
        let pairs = call1(
            "aten::stack",
            vec![tensor_list(vec![real, imaginary]), int(-1)],
        )?;
        transpose(&pairs, -3, -2)?
    };
    if normalized {
        result = scale(&result, 1.0 / (n_fft as f64).sqrt())?;
    }
    Ok(vec![result])
}

/// The window of `win_length` (ones when absent) zero-padded to `n_fft`, centred.
fn full_window(window: &IValue, n_fft: i64, win_length: i64, dtype: DType) -> Result<IValue> {
    let window = if window.is_none() {
        table(1, win_length as usize, dtype, |_, _| 1.0)?
    } else {
        window.clone()
    };
    let window = call1("aten::reshape", vec![window, ints(&[win_length])])?;
    let left = (n_fft - win_length) / 2;
    call1(
        "aten::constant_pad_nd",
        vec![window, ints(&[left, n_fft - win_length - left])],
    )
}

/// The frames (`[..., frames, n_fft]`) overlapped and added, `hop` apart, into one signal.
fn overlap_add(frames: &IValue, count: usize, n_fft: i64, hop: i64) -> Result<IValue> {
    let total = n_fft + hop * (count as i64 - 1);
    let mut signal: Option<IValue> = None;
    for frame in 0..count {
        let piece = call1(
            "aten::select.int",
            vec![frames.clone(), int(-2), int(frame as i64)],
        )?;
        let offset = hop * frame as i64;
        let placed = call1(
            "aten::constant_pad_nd",
            vec![piece, ints(&[offset, total - n_fft - offset])],
        )?;
        signal = Some(match signal {
            Some(sum) => call::add(&sum, &placed)?,
            None => placed,
        });
    }
    signal.ok_or_else(|| refuse("istft: the input has no frames"))
}

/// `istft(self, n_fft, hop_length, win_length, window, center, normalized, onesided, length,
/// return_complex)`: the inverse transform of each frame, windowed,
/// overlap-added and divided by the overlap-added squared window, as PyTorch computes it.
fn istft(input: &FormulaInput) -> Result<Gradients> {
    let n_fft = input.int(1)?;
    let hop = optional_int(input.argument(2)?, n_fft / 4)?;
    let win_length = optional_int(input.argument(3)?, n_fft)?;
    let center = input.argument(5)?.to_bool()?;
    let normalized = input.argument(6)?.to_bool()?;
    let sizes = input.sizes(0)?;
    let rank = sizes.len();
    if rank < 2 || n_fft <= 0 || hop <= 0 || win_length <= 0 || win_length > n_fft {
        return Err(refuse(format!(
            "istft: expected a (batch of) [freq, frames] input, 0 < n_fft, 0 < hop_length \
             and 0 < win_length <= n_fft, but got {rank} dimensions, n_fft={n_fft}, \
             hop_length={hop}, win_length={win_length}"
        )));
    }
    let (bins, count) = (sizes[rank - 2], sizes[rank - 1]);
    let onesided = optional_bool(input.argument(7)?, bins as i64 != n_fft)?;
    let length = input.argument(8)?;
    // A complex result (two-sided input only) keeps the inverse transform's imaginary part.
    let complex_result = optional_bool(input.argument(9)?, false)?;
    let length = if length.is_none() {
        None
    } else {
        Some(length.to_int()?)
    };
    let real_dtype = match input.dtype(0)? {
        DType::ComplexFloat => DType::Float32,
        _ => DType::Float64,
    };
    through_composition(input, &[0, 4], |arguments| {
        let mut spectra = transpose(&arguments[0], -2, -1)?;
        if normalized {
            spectra = scale(&spectra, (n_fft as f64).sqrt())?;
        }
        let frames = if onesided {
            call1(
                "aten::fft_irfft",
                vec![spectra, int(n_fft), int(-1), IValue::None],
            )?
        } else {
            let inverse = call1(
                "aten::fft_ifft",
                vec![spectra, int(n_fft), int(-1), IValue::None],
            )?;
            if complex_result {
                inverse
            } else {
                call::unary("aten::real", &inverse)?
            }
        };
        let window = full_window(&arguments[4], n_fft, win_length, real_dtype)?;
        let signal = overlap_add(&call::mul(&frames, &window)?, count, n_fft, hop)?;
        let squared = call::mul(&window, &window)?;
        let spread = call::expand(&squared, &[count, n_fft as usize])?;
        let envelope = overlap_add(&spread, count, n_fft, hop)?;
        let total = n_fft + hop * (count as i64 - 1);
        let start = if center { n_fft / 2 } else { 0 };
        let end = match length {
            Some(length) => start + length,
            None if center => total - n_fft / 2,
            None => total,
        };
        let kept = end.min(total) - start;
        let narrow = |value: &IValue| {
            call1(
                "aten::narrow",
                vec![value.clone(), int(-1), int(start), int(kept)],
            )
        };
        let mut result = call::div(&narrow(&signal)?, &narrow(&envelope)?)?;
        if end > total {
            result = call1(
                "aten::constant_pad_nd",
                vec![result, ints(&[0, end - total])],
            )?;
        }
        Ok(vec![result])
    })
}

formula_table![
    ("aten::stft", "StftBackward0", stft, &[0, 4]),
    ("aten::istft", "IstftBackward0", istft, &[0, 4]),
];
