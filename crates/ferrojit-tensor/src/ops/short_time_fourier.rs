//! `torch.stft` and `torch.istft` (`aten::stft`, `aten::stft.center`, `aten::istft`): the
//! short-time Fourier transform and its inverse, built from the frame view (`unfold`), the
//! window product, the one-dimensional FFTs of `ops::fft`, and an overlap-add written here.
//! The argument checks and their messages follow PyTorch 2.15's (`torch/_refs` `stft` and
//! `istft`, which describe what the C++ kernels do).

use crate::dtype::DType;
use crate::error::{Result, TensorError};
use crate::ops::nn::misc::{pad, PadMode};
use crate::ops::views::legacy_type_name;
use crate::tensor::Tensor;

fn invalid(message: impl Into<String>) -> TensorError {
    TensorError::InvalidArgument(message.into())
}

/// The arguments `stft` and `istft` share.
#[derive(Debug, Clone, Copy)]
pub struct FrameLayout<'a> {
    pub n_fft: i64,
    /// `None`: `n_fft / 4`.
    pub hop_length: Option<i64>,
    /// `None`: `n_fft`.
    pub win_length: Option<i64>,
    pub window: Option<&'a Tensor>,
    pub normalized: bool,
    /// `None`: one-sided unless the input or the window is complex (stft), or unless the
    /// frequency dimension holds `n_fft` entries (istft).
    pub onesided: Option<bool>,
}

impl FrameLayout<'_> {
    fn hop(&self) -> i64 {
        self.hop_length.unwrap_or(self.n_fft / 4)
    }

    fn win(&self) -> i64 {
        self.win_length.unwrap_or(self.n_fft)
    }
}

/// `window` (or a rectangular one of `win_length` ones when absent) zero-padded on both
/// sides to `n_fft` entries, centred as PyTorch centres it; `None` when no window was given
/// and none is needed.
fn padded_window(
    window: Option<&Tensor>,
    win_length: i64,
    n_fft: i64,
    dtype: DType,
    always: bool,
) -> Result<Option<Tensor>> {
    if win_length == n_fft {
        return match (window, always) {
            (Some(window), _) => Ok(Some(window.clone())),
            (None, true) => Ok(Some(Tensor::ones(&[n_fft as usize], dtype)?)),
            (None, false) => Ok(None),
        };
    }
    let window = match window {
        Some(window) => window.clone(),
        None => Tensor::ones(&[win_length as usize], dtype)?,
    };
    let left = (n_fft - win_length) / 2;
    Ok(Some(pad(
        &window,
        &[left, n_fft - win_length - left],
        PadMode::Constant,
        0.0,
    )?))
}

fn check_window_shape(window: Option<&Tensor>, win_length: i64, message: String) -> Result<()> {
    match window {
        Some(window) if window.sizes() != [win_length as usize] => Err(invalid(message)),
        _ => Ok(()),
    }
}

/// How PyTorch's C++ kernels name a tensor's type in these messages: the legacy
/// `torch.FloatTensor` for real types, `CPUComplexFloatType` for complex ones.
fn type_string(tensor: &Tensor) -> String {
    match tensor.dtype() {
        DType::ComplexFloat => "CPUComplexFloatType".to_string(),
        DType::ComplexDouble => "CPUComplexDoubleType".to_string(),
        _ => legacy_type_name(tensor),
    }
}

fn sizes_string(tensor: &Tensor) -> String {
    let sizes: Vec<String> = tensor.sizes().iter().map(usize::to_string).collect();
    format!("[{}]", sizes.join(", "))
}

fn window_string(window: Option<&Tensor>) -> String {
    match window {
        Some(window) => format!("{}{{{}}}", type_string(window), sizes_string(window)),
        None => "None".to_string(),
    }
}

fn optional_string<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "None".to_string(), |value| value.to_string())
}

/// PyTorch prints booleans in these messages as C++ streams them: 0 or 1.
fn flag(value: bool) -> u8 {
    u8::from(value)
}

impl Tensor {
    /// `torch.stft`: frames of `n_fft` samples every `hop_length`, each multiplied by the
    /// window and transformed; the result is (batch?, frequencies, frames), complex, or its
    /// `view_as_real` when `return_complex` is false. `center` pads `n_fft / 2` samples on
    /// each side with `pad_mode` first (the `stft.center` overload; `aten::stft` itself
    /// passes `center = false`).
    pub fn stft(
        &self,
        layout: FrameLayout<'_>,
        center: bool,
        pad_mode: &str,
        return_complex: Option<bool>,
        align_to_window: Option<bool>,
    ) -> Result<Tensor> {
        if center && align_to_window.is_some() {
            return Err(invalid(
                "stft align_to_window should only be set when center = false.",
            ));
        }
        let window_complex = layout.window.is_some_and(|w| w.dtype().is_complex());
        let given_return_complex = return_complex;
        let return_complex = match return_complex {
            Some(value) => value,
            None if self.dtype().is_complex() || window_complex => true,
            None => {
                return Err(invalid(
                    "stft requires the return_complex parameter be given for real inputs, and \
                     will further require that return_complex=True in a future PyTorch release.",
                ))
            }
        };
        let pad_mode = PadMode::parse(pad_mode)?;
        let mut input = self.clone();
        if center {
            // PyTorch pads a (batch, channel, length) view, then calls the uncentred stft.
            let rank = input.dim();
            let mut extended: Vec<i64> = vec![1; 3usize.saturating_sub(rank)];
            extended.extend(input.sizes().iter().map(|&size| size as i64));
            let amount = layout.n_fft / 2;
            let padded = pad(&input.reshape(&extended)?, &[amount, amount], pad_mode, 0.0)?;
            let kept: Vec<i64> = padded.sizes()[padded.dim() - rank.min(padded.dim())..]
                .iter()
                .map(|&size| size as i64)
                .collect();
            input = padded.reshape(&kept)?;
        }
        let (n_fft, hop, win) = (layout.n_fft, layout.hop(), layout.win());
        // The C++ kernel's messages start with the call as it received it.
        let call = format!(
            "stft({}{}, n_fft={n_fft}, hop_length={hop}, win_length={win}, window={}, \
             normalized={}, onesided={}, return_complex={}, align_to_window={}) ",
            type_string(&input),
            sizes_string(&input),
            window_string(layout.window),
            flag(layout.normalized),
            optional_string(layout.onesided.map(flag)),
            optional_string(given_return_complex.map(flag)),
            optional_string(align_to_window.map(flag)),
        );
        if !input.dtype().is_floating_point() && !input.dtype().is_complex() {
            return Err(invalid(format!(
                "{call}: expected a tensor of floating point or complex values"
            )));
        }
        if !(1..=2).contains(&input.dim()) {
            return Err(invalid(format!("{call}: expected a 1D or 2D tensor")));
        }
        let was_1d = input.dim() == 1;
        if was_1d {
            input = input.unsqueeze(0)?;
        }
        let length = input.sizes()[1] as i64;
        if n_fft <= 0 || n_fft > length {
            return Err(invalid(format!(
                "{call}: expected 0 < n_fft < {length}, but got n_fft={n_fft}"
            )));
        }
        if hop <= 0 {
            return Err(invalid(format!(
                "{call}: expected hop_length > 0, but got hop_length={hop}"
            )));
        }
        if win <= 0 || win > n_fft {
            return Err(invalid(format!(
                "{call}: expected 0 < win_length <= n_fft, but got win_length={win}"
            )));
        }
        check_window_shape(
            layout.window,
            win,
            format!(
                "{call}: expected a 1D window tensor of size equal to win_length={win}, but got \
                 window with size {}",
                layout.window.map(sizes_string).unwrap_or_default()
            ),
        )?;
        let window = padded_window(layout.window, win, n_fft, input.dtype().to_real(), false)?;
        if !center && align_to_window == Some(true) {
            let amount = (n_fft - win) / 2;
            input = pad(&input.unsqueeze(1)?, &[amount, amount], pad_mode, 0.0)?.squeeze_dim(1)?;
        }
        let mut frames = input.unfold(-1, n_fft, hop)?;
        if let Some(window) = &window {
            frames = frames.mul(window)?;
        }
        let complex_fft = frames.dtype().is_complex();
        let onesided = layout.onesided.unwrap_or(!complex_fft);
        let norm = layout.normalized.then_some("ortho");
        let spectrum = if onesided {
            if complex_fft {
                return Err(invalid(
                    "Cannot have onesided output if window or input is complex",
                ));
            }
            frames.rfftn(None, Some(&[-1]), norm)?
        } else {
            frames.fft_1d(None, -1, norm, true)?
        };
        let mut out = spectrum.transpose(1, 2)?;
        if was_1d {
            out = out.squeeze_dim(0)?;
        }
        if return_complex {
            Ok(out)
        } else {
            out.view_as_real()
        }
    }

    /// `torch.istft`: the inverse of `stft` for a complex (batch?, frequencies, frames)
    /// input: each frame's inverse FFT times the window, overlap-added, divided by the
    /// overlap-added squared window, trimmed by `center` and to `length`.
    pub fn istft(
        &self,
        layout: FrameLayout<'_>,
        center: bool,
        length: Option<i64>,
        return_complex: bool,
    ) -> Result<Tensor> {
        let (n_fft, hop, win) = (layout.n_fft, layout.hop(), layout.win());
        if !self.dtype().is_complex() {
            return Err(invalid(
                "istft requires a complex-valued input tensor matching the output from stft \
                 with return_complex=True.",
            ));
        }
        // The C++ kernel's messages start with the call as it received it.
        let call = format!(
            "istft({}{}, n_fft={n_fft}, hop_length={hop}, win_length={win}, window={}, \
             center={}, normalized={}, onesided={}, length={}, return_complex={}) ",
            type_string(self),
            sizes_string(self),
            window_string(layout.window),
            flag(center),
            flag(layout.normalized),
            optional_string(layout.onesided.map(flag)),
            optional_string(length),
            flag(return_complex),
        );
        if self.numel() == 0 {
            return Err(invalid(format!("{call}: input tensor cannot be empty.")));
        }
        if !(2..=3).contains(&self.dim()) {
            // PyTorch counts the dimensions of the input's real view.
            return Err(invalid(format!(
                "{call}: expected a tensor with 3 or 4 dimensions, but got {}",
                self.dim() + 1
            )));
        }
        let sizes = self.sizes();
        let n_frames = sizes[sizes.len() - 1] as i64;
        let fft_size = sizes[sizes.len() - 2] as i64;
        let onesided = layout.onesided.unwrap_or(fft_size != n_fft);
        if onesided && n_fft / 2 + 1 != fft_size {
            return Err(invalid(format!(
                "{call}: expected the frequency dimension (3rd to the last) of the input tensor \
                 to match n_fft / 2 + 1 when onesided=True, but got {fft_size}"
            )));
        }
        if !onesided && n_fft != fft_size {
            return Err(invalid(format!(
                "{call}: expected the frequency dimension (3rd to the last) of the input tensor \
                 to match n_fft when onesided=False, but got {fft_size}"
            )));
        }
        if !(0 < hop && hop <= win) {
            return Err(invalid(format!(
                "{call}: expected 0 < hop_length <= win_length"
            )));
        }
        if !(0 < win && win <= n_fft) {
            return Err(invalid(format!("{call}: expected 0 < win_length <= n_fft")));
        }
        check_window_shape(
            layout.window,
            win,
            format!("{call}: Invalid window shape. window has to be 1D and length of `win_length`"),
        )?;
        let window = padded_window(layout.window, win, n_fft, self.dtype().to_real(), true)?
            .ok_or_else(|| invalid("istft: no window"))?;
        let was_2d = self.dim() == 2;
        let input = if was_2d {
            self.unsqueeze(0)?
        } else {
            self.clone()
        };
        // (batch, frames, frequencies): one transform per frame.
        let input = input.transpose(1, 2)?;
        let norm = layout.normalized.then_some("ortho");
        let frames = if return_complex {
            if onesided {
                return Err(invalid(
                    "Cannot have onesided output if window or input is complex",
                ));
            }
            input.fft_1d(None, -1, norm, false)?
        } else {
            if window.dtype().is_complex() {
                return Err(invalid(
                    "Complex windows are incompatible with return_complex=False",
                ));
            }
            let half = if onesided {
                input
            } else {
                input.narrow(-1, 0, n_fft / 2 + 1)?
            };
            half.irfft(Some(n_fft), -1, norm)?
        };
        let weighted = frames.mul(&window)?;
        let signal_length = n_fft + hop * (n_frames - 1);
        let signal = overlap_add(&weighted, signal_length as usize, hop as usize)?;
        let squared = window.mul(&window)?;
        let envelope = overlap_add(
            &squared.expand(&[1, n_frames, n_fft])?,
            signal_length as usize,
            hop as usize,
        )?;
        let start = if center { n_fft / 2 } else { 0 };
        let end = match length {
            Some(length) => start + length,
            None if center => signal_length - n_fft / 2,
            None => signal_length,
        };
        let clamped_end = end.min(signal_length);
        let envelope = envelope.narrow(1, start, (clamped_end - start).max(0))?;
        // PyTorch refuses a window whose overlap-add vanishes inside the kept range (the
        // division would make infinities and NaNs).
        let smallest = envelope
            .abs()?
            .to_dtype(DType::Float64)
            .contiguous()
            .to_vec::<f64>()?
            .into_iter()
            .fold(f64::INFINITY, f64::min);
        if smallest < 1e-11 {
            // PyTorch prints the failed check's boolean where the minimum would be.
            return Err(invalid(format!("{call}window overlap add min: 1")));
        }
        let mut y = signal
            .narrow(1, start, (clamped_end - start).max(0))?
            .div(&envelope, None)?;
        if end > signal_length {
            y = pad(&y, &[0, end - signal_length], PadMode::Constant, 0.0)?;
        }
        if was_2d {
            y = y.squeeze_dim(0)?;
        }
        Ok(y)
    }
}

/// Overlap-add: `frames` is (batch, n_frames, frame_length); frame `f` is added into the
/// output (batch, `signal_length`) from sample `f * hop` on. This is `unfold`'s backward.
fn overlap_add(frames: &Tensor, signal_length: usize, hop: usize) -> Result<Tensor> {
    let sizes = frames.sizes().to_vec();
    let (batch, n_frames, frame_length) = (sizes[0], sizes[1], sizes[2]);
    let last_end = (n_frames.saturating_sub(1)) * hop + frame_length;
    if n_frames > 0 && last_end > signal_length {
        return Err(invalid(format!(
            "overlap-add: {n_frames} frames of {frame_length} every {hop} need {last_end} \
             samples, more than {signal_length}"
        )));
    }
    let dtype = frames.dtype();
    if dtype.is_complex() {
        // Real and imaginary parts add independently.
        let parts = frames.view_as_real()?;
        let real = overlap_add(&parts.select(-1, 0)?, signal_length, hop)?;
        let imaginary = overlap_add(&parts.select(-1, 1)?, signal_length, hop)?;
        return Tensor::complex(&real, &imaginary);
    }
    let values = frames
        .to_dtype(DType::Float64)
        .contiguous()
        .to_vec::<f64>()?;
    let mut out = vec![0.0f64; batch * signal_length];
    for b in 0..batch {
        for f in 0..n_frames {
            let source = &values[(b * n_frames + f) * frame_length..][..frame_length];
            let target = &mut out[b * signal_length + f * hop..][..frame_length];
            for (t, s) in target.iter_mut().zip(source) {
                *t += s;
            }
        }
    }
    Ok(Tensor::from_vec(out, &[batch, signal_length])?.to_dtype(dtype))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(n_fft: i64, hop: i64, window: Option<&Tensor>) -> FrameLayout<'_> {
        FrameLayout {
            n_fft,
            hop_length: Some(hop),
            win_length: None,
            window,
            normalized: false,
            onesided: None,
        }
    }

    #[test]
    fn stft_then_istft_gives_the_signal_back() {
        let signal: Vec<f64> = (0..64)
            .map(|i| ((i * 7 % 13) as f64) * 0.25 - 1.0)
            .collect();
        let x = Tensor::from_vec(signal.clone(), &[64]).unwrap();
        // A periodic Hann window of 16 with hop 4 satisfies the NOLA condition.
        let hann: Vec<f64> = (0..16)
            .map(|n| 0.5 - 0.5 * (2.0 * std::f64::consts::PI * n as f64 / 16.0).cos())
            .collect();
        let window = Tensor::from_vec(hann, &[16]).unwrap();
        let spectrum = x
            .stft(
                layout(16, 4, Some(&window)),
                true,
                "reflect",
                Some(true),
                None,
            )
            .unwrap();
        assert_eq!(spectrum.sizes(), &[9, 17]);
        let back = spectrum
            .istft(layout(16, 4, Some(&window)), true, Some(64), false)
            .unwrap();
        let back = back.to_vec::<f64>().unwrap();
        for (a, b) in back.iter().zip(&signal) {
            assert!((a - b).abs() < 1e-9, "{a} vs {b}");
        }
    }

    #[test]
    fn stft_of_a_real_input_needs_return_complex() {
        let x = Tensor::zeros(&[32], DType::Float32).unwrap();
        let error = x
            .stft(layout(8, 2, None), true, "reflect", None, None)
            .unwrap_err();
        assert!(error.to_string().contains("return_complex"), "{error}");
    }

    #[test]
    fn overlap_add_refuses_frames_past_the_signal() {
        let frames = Tensor::ones(&[1, 3, 4], DType::Float32).unwrap();
        assert!(overlap_add(&frames, 5, 2).is_err());
        let summed = overlap_add(&frames, 8, 2).unwrap();
        assert_eq!(
            summed.to_vec::<f32>().unwrap(),
            vec![1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 1.0, 1.0]
        );
    }

    #[test]
    fn a_zero_window_is_refused_by_istft() {
        let x = Tensor::zeros(&[5, 4], DType::ComplexFloat).unwrap();
        let window = Tensor::zeros(&[8], DType::Float32).unwrap();
        let error = x
            .istft(layout(8, 2, Some(&window)), true, None, false)
            .unwrap_err();
        assert!(error.to_string().contains("overlap add"), "{error}");
    }
}
