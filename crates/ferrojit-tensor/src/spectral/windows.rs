//! PyTorch's window functions. A symmetric window of length N is the periodic formula sampled
//! over N points with denominator N - 1; a periodic window of length N is the symmetric one of
//! length N + 1 without its last point. Lengths 0 and 1 give an empty tensor and `[1]`.
//! Values are computed in f64 and rounded once to the requested floating dtype.

use crate::dtype::DType;
use crate::error::{Result, TensorError};
use crate::special_functions::bessel::i0;
use crate::tensor::Tensor;

/// The window shapes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Window {
    /// `alpha - beta cos(2πn / (N - 1))`; Hann is alpha = beta = 0.5.
    Hamming {
        alpha: f64,
        beta: f64,
    },
    Blackman,
    Bartlett,
    Kaiser {
        beta: f64,
    },
}

/// `op`'s window of `length` points in `dtype` (PyTorch's checks and messages).
pub fn window(
    op: &str,
    window: Window,
    length: i64,
    periodic: bool,
    dtype: DType,
) -> Result<Tensor> {
    if length < 0 {
        return Err(TensorError::InvalidArgument(format!(
            "{op} requires non-negative window_length, got window_length={length}"
        )));
    }
    if !dtype.is_floating_point() {
        return Err(TensorError::InvalidArgument(format!(
            "{op} expects floating point dtypes, got: {}",
            dtype.scalar_type_name()
        )));
    }
    let length = length as usize;
    if length <= 1 {
        return Tensor::ones(&[length], dtype);
    }
    let points = if periodic { length + 1 } else { length };
    let last = (points - 1) as f64;
    let values: Vec<f64> = (0..length)
        .map(|n| {
            let n = n as f64;
            match window {
                Window::Hamming { alpha, beta } => {
                    alpha - beta * (2.0 * std::f64::consts::PI * n / last).cos()
                }
                Window::Blackman => {
                    let angle = 2.0 * std::f64::consts::PI * n / last;
                    0.42 - 0.5 * angle.cos() + 0.08 * (2.0 * angle).cos()
                }
                Window::Bartlett => 1.0 - (2.0 * n / last - 1.0).abs(),
                Window::Kaiser { beta } => {
                    let alpha = last / 2.0;
                    let ratio = n / alpha - 1.0;
                    i0(beta * (1.0 - ratio * ratio).max(0.0).sqrt()) / i0(beta)
                }
            }
        })
        .collect();
    Ok(Tensor::from_vec(values, &[length])?.to_dtype(dtype))
}
