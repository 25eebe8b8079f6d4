//! Schemas and argument binding for `aten::stft` (both overloads) and `aten::istft`, over
//! the kernels in `ferrojit_tensor::ops::short_time_fourier`. These take more arguments
//! than the typed binder's eight, so each reads its arguments by position.

use std::sync::Arc;

use ferrojit_tensor::ops::short_time_fourier::FrameLayout;
use ferrojit_tensor::Tensor;

use super::binding::{FromArgument, IntoResults};
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;

/// Argument `index` of `arguments`, converted.
fn at<T: FromArgument>(arguments: &[IValue], index: usize) -> Result<T> {
    let value = arguments.get(index).ok_or_else(|| {
        RuntimeError::InvalidGraph(format!(
            "operand stack underflow: argument {index} of a short-time Fourier operator"
        ))
    })?;
    T::from_argument(value)
}

/// Arguments 0–4, shared by every overload: self, n_fft, hop_length, win_length, window.
struct Leading {
    input: Arc<Tensor>,
    n_fft: i64,
    hop_length: Option<i64>,
    win_length: Option<i64>,
    window: Option<Arc<Tensor>>,
}

fn leading(arguments: &[IValue]) -> Result<Leading> {
    Ok(Leading {
        input: at(arguments, 0)?,
        n_fft: at(arguments, 1)?,
        hop_length: at(arguments, 2)?,
        win_length: at(arguments, 3)?,
        window: at(arguments, 4)?,
    })
}

fn layout(leading: &Leading, normalized: bool, onesided: Option<bool>) -> FrameLayout<'_> {
    FrameLayout {
        n_fft: leading.n_fft,
        hop_length: leading.hop_length,
        win_length: leading.win_length,
        window: leading.window.as_deref(),
        normalized,
        onesided,
    }
}

/// `aten::stft(self, n_fft, hop_length, win_length, window, normalized, onesided,
/// return_complex, align_to_window)`: no centring (Python's `torch.stft` pads first).
fn stft(arguments: &[IValue]) -> Result<Vec<IValue>> {
    let leading = leading(arguments)?;
    let frame_layout = layout(&leading, at(arguments, 5)?, at(arguments, 6)?);
    Ok(leading
        .input
        .stft(
            frame_layout,
            false,
            "reflect",
            at(arguments, 7)?,
            at(arguments, 8)?,
        )?
        .into_results())
}

/// `aten::stft.center(self, n_fft, hop_length, win_length, window, center, pad_mode,
/// normalized, onesided, return_complex, align_to_window)`.
fn stft_center(arguments: &[IValue]) -> Result<Vec<IValue>> {
    let leading = leading(arguments)?;
    let center: bool = at(arguments, 5)?;
    let pad_mode: String = at(arguments, 6)?;
    let frame_layout = layout(&leading, at(arguments, 7)?, at(arguments, 8)?);
    Ok(leading
        .input
        .stft(
            frame_layout,
            center,
            &pad_mode,
            at(arguments, 9)?,
            at(arguments, 10)?,
        )?
        .into_results())
}

/// `aten::istft(self, n_fft, hop_length, win_length, window, center, normalized, onesided,
/// length, return_complex)`.
fn istft(arguments: &[IValue]) -> Result<Vec<IValue>> {
    let leading = leading(arguments)?;
    let center: bool = at(arguments, 5)?;
    let frame_layout = layout(&leading, at(arguments, 6)?, at(arguments, 7)?);
    Ok(leading
        .input
        .istft(frame_layout, center, at(arguments, 8)?, at(arguments, 9)?)?
        .into_results())
}

pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        OperatorDeclaration::arguments(
            "aten::stft(Tensor self, int n_fft, int? hop_length=None, int? win_length=None, Tensor? window=None, bool normalized=False, bool? onesided=None, bool? return_complex=None, bool? align_to_window=None) -> Tensor".to_string(),
            stft,
        )
        .with_arity(9),
        OperatorDeclaration::arguments(
            "aten::stft.center(Tensor self, int n_fft, int? hop_length=None, int? win_length=None, Tensor? window=None, bool center=True, str pad_mode=\"reflect\", bool normalized=False, bool? onesided=None, bool? return_complex=None, bool? align_to_window=None) -> Tensor".to_string(),
            stft_center,
        )
        .with_arity(11),
        OperatorDeclaration::arguments(
            "aten::istft(Tensor self, int n_fft, int? hop_length=None, int? win_length=None, Tensor? window=None, bool center=True, bool normalized=False, bool? onesided=None, int? length=None, bool return_complex=False) -> Tensor".to_string(),
            istft,
        )
        .with_arity(10),
    ]
}
