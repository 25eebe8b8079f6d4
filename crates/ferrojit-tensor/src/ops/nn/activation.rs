//! Activations that reduce along a dim (softmax, log_softmax) and dropout.

use super::{from_f64, invalid, map_rows};
use crate::dtype::DType;
use crate::element::Element;
use crate::error::{Result, TensorError};
use crate::shape::wrap_dim;
use crate::tensor::Tensor;

/// Applies `f` to each run of values along `dim`, writing the same number of outputs.
pub(crate) fn along_dim(
    input: &Tensor,
    dim: usize,
    mut f: impl FnMut(&[f64], &mut [f64]),
) -> Vec<f64> {
    let x = input.to_f64_vec();
    let sizes = input.sizes();
    let len = sizes.get(dim).copied().unwrap_or(1);
    let inner: usize = sizes.get(dim + 1..).map_or(1, |s| s.iter().product());
    let outer = x.len().checked_div(len * inner).unwrap_or(0);
    let mut out = vec![0.0; x.len()];
    let mut run = vec![0.0; len];
    let mut res = vec![0.0; len];
    for o in 0..outer {
        for i in 0..inner {
            for k in 0..len {
                run[k] = x[(o * len + k) * inner + i];
            }
            f(&run, &mut res);
            for k in 0..len {
                out[(o * len + k) * inner + i] = res[k];
            }
        }
    }
    out
}

fn softmax_impl(input: &Tensor, dim: i64, dtype: Option<DType>, log: bool) -> Result<Tensor> {
    let input = match dtype {
        Some(d) => input.to_dtype(d),
        None => input.clone(),
    };
    if !input.dtype().is_floating_point() {
        return Err(TensorError::NotImplementedForDType {
            op: if log {
                "log_softmax_lastdim_kernel_impl"
            } else {
                "softmax_lastdim_kernel_impl"
            },
            dtype: input.dtype(),
        });
    }
    let d = wrap_dim(dim, input.dim().max(1))?;
    let softmax_run = |run: &[f64], res: &mut [f64]| {
        let max = run.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let max = if max.is_finite() { max } else { 0.0 };
        // Each exponential once: kept in `res`, summed in order, then normalized.
        let mut sum = 0.0;
        for (r, v) in res.iter_mut().zip(run) {
            *r = (v - max).exp();
            sum += *r;
        }
        if log {
            let log_sum = sum.ln();
            for (r, v) in res.iter_mut().zip(run) {
                *r = v - max - log_sum;
            }
        } else {
            for r in res.iter_mut() {
                *r /= sum;
            }
        }
        if run.iter().any(|v| v.is_nan()) {
            res.fill(f64::NAN);
        }
    };
    if d + 1 >= input.dim() {
        // Runs along the last dim are consecutive in logical order: whole rows at a time.
        let len = input.sizes().last().copied().unwrap_or(1);
        return Ok(map_rows(&input, len, softmax_run));
    }
    let out = along_dim(&input, d, softmax_run);
    Ok(from_f64(out, input.sizes(), input.dtype()))
}

impl Tensor {
    /// `torch.softmax(self, dim, dtype)`.
    pub fn softmax(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        softmax_impl(self, dim, dtype, false)
    }

    /// `torch.log_softmax(self, dim, dtype)`.
    pub fn log_softmax(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        softmax_impl(self, dim, dtype, true)
    }

    /// `torch.dropout(self, p, train)`: identity when not training (or `p == 0`); otherwise
    /// PyTorch's CPU recipe: a noise tensor laid out like `self` gets `bernoulli_(1 - p)` from
    /// the default generator, is divided by `1 - p` in the tensor's dtype, and multiplies `self`.
    pub fn dropout(&self, p: f64, train: bool) -> Result<Tensor> {
        self.dropout_impl(p, train, false)
    }

    /// `torch.feature_dropout(self, p, train)` (dropout1d/2d/3d): one draw per `(N, C)` channel,
    /// zeroing or scaling the whole channel.
    pub fn feature_dropout(&self, p: f64, train: bool) -> Result<Tensor> {
        self.dropout_impl(p, train, true)
    }

    fn dropout_impl(&self, p: f64, train: bool, feature: bool) -> Result<Tensor> {
        if !(0.0..=1.0).contains(&p) {
            return Err(invalid(format!(
                "dropout probability has to be between 0 and 1, but got {p}"
            )));
        }
        if !train || p == 0.0 || self.numel() == 0 {
            return Ok(self.clone());
        }
        if !self.dtype().is_floating_point() {
            return Err(TensorError::NotImplementedForDType {
                op: "bernoulli_scalar_cpu_",
                dtype: self.dtype(),
            });
        }
        if p == 1.0 {
            // `input * zeros({})`: NaN and infinity stay NaN, negatives give -0.
            return self.mul(&Tensor::zeros(&[], self.dtype())?);
        }
        let (keep, group) = if feature {
            if self.dim() < 2 {
                return Err(invalid(
                    "Feature dropout requires at least 2 dimensions in the input",
                ));
            }
            let channels = [self.sizes()[0], self.sizes()[1]];
            let keep = crate::ops::random::bernoulli_draws(&channels, &[channels[1], 1], 1.0 - p);
            let inner: usize = self.sizes()[2..].iter().product();
            (keep, inner.max(1))
        } else {
            let strides = crate::ops::random::like_layout(self);
            (
                crate::ops::random::bernoulli_draws(self.sizes(), &strides, 1.0 - p),
                1,
            )
        };
        let kept = |i: usize| keep.get(i / group).copied().unwrap_or(false);
        let sizes = self.sizes();
        Ok(match self.dtype() {
            DType::Float64 => {
                let noise = 1.0 / (1.0 - p);
                let x = self.gather::<f64>();
                let out: Vec<f64> = x
                    .iter()
                    .enumerate()
                    .map(|(i, v)| v * if kept(i) { noise } else { 0.0 })
                    .collect();
                Tensor::from_values(out, sizes)
            }
            DType::Float32 => {
                let noise = 1.0f32 / (1.0 - p) as f32;
                let x = self.gather::<f32>();
                let out: Vec<f32> = x
                    .iter()
                    .enumerate()
                    .map(|(i, v)| v * if kept(i) { noise } else { 0.0 })
                    .collect();
                Tensor::from_values(out, sizes)
            }
            DType::Float16 => scale_half_by_mask::<half::f16>(self, p, &kept),
            _ => scale_half_by_mask::<half::bf16>(self, p, &kept),
        })
    }
}

/// Dropout's scaling for float16 and bfloat16, as ATen computes it: the factor `1 / (1 - p)`
/// rounded to the dtype, each product taken in float and rounded to the dtype.
fn scale_half_by_mask<T: Element + Default>(
    input: &Tensor,
    p: f64,
    kept: &dyn Fn(usize) -> bool,
) -> Tensor {
    // Going through f64 rounds once: every half or bfloat16 value, and every float product
    // of two of them, is exact in f64.
    let noise = T::from_f64(f64::from(1.0f32 / (1.0 - p) as f32)).to_f64() as f32;
    let out: Vec<T> = input
        .gather::<T>()
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let factor = if kept(i) { noise } else { 0.0 };
            T::from_f64(f64::from(v.to_f64() as f32 * factor))
        })
        .collect();
    Tensor::from_values(out, input.sizes())
}
