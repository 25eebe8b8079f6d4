//! `stft`'s gradient with a real result (`return_complex=False`): the transform is rebuilt
//! from differentiable real operators (frames cut by `unfold`, windowed, then multiplied by
//! the cosine and sine tables of the discrete Fourier transform) and differentiated through
//! that composition. PyTorch differentiates its own decomposition the same way; a complex
//! result is not recorded by ferrojit's autograd, so it never reaches this formula.

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
    if optional_bool(input.argument(7)?, false)? {
        return Err(refuse(
            "stft: the gradient of a complex result (return_complex=True) is not supported",
        ));
    }
    if optional_bool(input.argument(8)?, false)? {
        return Err(refuse(
            "stft: the gradient with align_to_window=True is not supported",
        ));
    }
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
        let real = matmul(&windowed, &cosines)?;
        let imaginary = neg(&matmul(&windowed, &sines)?)?;
        let pairs = call1(
            "aten::stack",
            vec![tensor_list(vec![real, imaginary]), int(-1)],
        )?;
        let mut result = transpose(&pairs, -3, -2)?;
        if normalized {
            result = scale(&result, 1.0 / (n_fft as f64).sqrt())?;
        }
        Ok(vec![result])
    })
}

formula_table![("aten::stft", "StftBackward0", stft, &[0, 4]),];
