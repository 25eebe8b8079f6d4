//! Normalization layers: batch_norm (inference and training statistics, running-stat update),
//! layer_norm, group_norm and instance_norm. Statistics are accumulated in f64.

use super::{from_f64, invalid, map_rows, require_float, to_sizes, Opmath};
use crate::dtype::DType;
use crate::error::{format_shape, Result};
use crate::tensor::Tensor;

/// Mean and biased variance of each of `groups` consecutive runs of `len` values.
fn group_stats(x: &[f64], groups: usize, len: usize) -> Vec<(f64, f64)> {
    (0..groups)
        .map(|g| run_stats(&x[g * len..(g + 1) * len]))
        .collect()
}

/// Mean and biased variance of one run of values.
fn run_stats(run: &[f64]) -> (f64, f64) {
    let n = run.len() as f64;
    let mean = run.iter().sum::<f64>() / n;
    let var = run.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    (mean, var)
}

/// Per-channel optional affine parameter as f64 values (checked length).
fn channel_param(p: Option<&Tensor>, channels: usize, what: &str) -> Result<Option<Vec<f64>>> {
    match p {
        None => Ok(None),
        Some(t) => {
            if t.numel() != channels {
                return Err(invalid(format!(
                    "{what} should contain {channels} elements not {}",
                    t.numel()
                )));
            }
            Ok(Some(t.to_f64_vec()))
        }
    }
}

/// Writes `value` (f64 values, same numel) into a running-stat tensor in place.
fn update_running(target: &Tensor, values: Vec<f64>) -> Result<()> {
    let update = from_f64(values, target.sizes(), target.dtype());
    target.copy_(&update)?;
    Ok(())
}

/// That `input`'s trailing dimensions are `shape` (layer norm's `normalized_shape`), with
/// PyTorch's message after `prefix` (empty, or the backward operator's name and `: `).
pub(super) fn check_normalized_shape(input: &Tensor, shape: &[usize], prefix: &str) -> Result<()> {
    let k = shape.len();
    if k == 0 || input.dim() < k || input.sizes()[input.dim() - k..] != shape[..] {
        return Err(invalid(format!(
            "{prefix}Given normalized_shape={}, expected input with shape [*, {}], but got input of size{}",
            format_shape(shape),
            shape
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            format_shape(input.sizes())
        )));
    }
    Ok(())
}

/// `torch.batch_norm`.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<Tensor> {
    batch_norm_with_stats(
        input,
        weight,
        bias,
        running_mean,
        running_var,
        training,
        momentum,
        eps,
    )
    .map(|(out, _)| out)
}

/// `_native_batch_norm_legit` (and its `no_stats` form): the output, then the batch mean and
/// inverse standard deviation `1 / sqrt(var + eps)` that training saves for the backward
/// pass (empty `[0]` tensors in evaluation mode); running statistics, when given and
/// training, are updated in place as `batch_norm` updates them.
#[allow(clippy::too_many_arguments)]
pub fn native_batch_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let (out, stats) = batch_norm_with_stats(
        input,
        weight,
        bias,
        running_mean,
        running_var,
        training,
        momentum,
        eps,
    )?;
    let dtype = input.dtype();
    if !training {
        let empty = || from_f64(Vec::new(), &[0], dtype);
        return Ok((out, empty(), empty()));
    }
    let channels = stats.len();
    let means = stats.iter().map(|s| s.0).collect();
    let invstd = stats.iter().map(|s| 1.0 / (s.1 + eps).sqrt()).collect();
    Ok((
        out,
        from_f64(means, &[channels], dtype),
        from_f64(invstd, &[channels], dtype),
    ))
}

/// `batch_norm`'s output with each channel's (mean, biased variance): the batch's when
/// training, the running statistics otherwise.
#[allow(clippy::too_many_arguments)]
fn batch_norm_with_stats(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Vec<(f64, f64)>)> {
    let dtype = require_float(input, "batch_norm")?;
    if input.dim() < 2 {
        return Err(invalid(format!(
            "Expected 2D or higher input to batch_norm, but got input of size {}",
            format_shape(input.sizes())
        )));
    }
    let (batch, channels) = (input.sizes()[0], input.sizes()[1]);
    let inner: usize = input.sizes()[2..].iter().product();
    let weight = channel_param(weight, channels, "weight")?;
    let bias = channel_param(bias, channels, "bias")?;
    // Other dtypes are widened to f64 once (kept in `elements` for the normalization); a
    // contiguous float32 input is summed and normalized in place (`apply_f32_from_storage`).
    let mut elements = None;
    let stats: Vec<(f64, f64)> = if training {
        // One value per channel is allowed here (F.batch_norm checks it in Python); the
        // running variance then becomes NaN, as in PyTorch.
        let count = batch * inner;
        // A contiguous float32 input is read in place (each value widened as it is summed:
        // the same sums as widening the whole tensor first).
        let stats = if dtype == DType::Float32 && input.is_contiguous() && input.numel() > 0 {
            let guard = input.storage().read();
            match <f32 as crate::element::Element>::slice_of(&guard) {
                Some(buffer) => {
                    let x = &buffer[input.storage_offset()..][..input.numel()];
                    channel_statistics(x, batch, channels, inner, |v| f64::from(*v))
                }
                None => {
                    let x = elements.insert(input.to_f64_vec());
                    channel_statistics(x, batch, channels, inner, |v| *v)
                }
            }
        } else {
            let x = elements.insert(input.to_f64_vec());
            channel_statistics(x, batch, channels, inner, |v| *v)
        };
        if let Some(rm) = running_mean {
            let old = channel_param(Some(rm), channels, "running_mean")?.unwrap_or_default();
            let new = old
                .iter()
                .zip(&stats)
                .map(|(o, s)| (1.0 - momentum) * o + momentum * s.0)
                .collect();
            update_running(rm, new)?;
        }
        if let Some(rv) = running_var {
            let old = channel_param(Some(rv), channels, "running_var")?.unwrap_or_default();
            let unbias = count as f64 / (count as f64 - 1.0);
            let new = old
                .iter()
                .zip(&stats)
                .map(|(o, s)| (1.0 - momentum) * o + momentum * s.1 * unbias)
                .collect();
            update_running(rv, new)?;
        }
        stats
    } else {
        let (Some(rm), Some(rv)) = (running_mean, running_var) else {
            return Err(invalid(
                "running_mean and running_var must be defined in evaluation mode",
            ));
        };
        let means = channel_param(Some(rm), channels, "running_mean")?.unwrap_or_default();
        let vars = channel_param(Some(rv), channels, "running_var")?.unwrap_or_default();
        means.into_iter().zip(vars).collect()
    };
    let terms = AffineTerms {
        stats: &stats,
        weight: weight.as_deref(),
        bias: bias.as_deref(),
        eps,
        training,
    };
    if dtype == DType::Float32 {
        if let Some(out) = terms.apply_f32_from_storage(input, inner) {
            return Ok((out, stats));
        }
    }
    let x = elements.unwrap_or_else(|| input.to_f64_vec());
    let out = if dtype == DType::Float64 {
        terms.apply::<f64>(&x, batch, inner)
    } else {
        terms.apply::<f32>(&x, batch, inner)
    };
    Ok((from_f64(out, input.sizes(), dtype), stats))
}

/// Each channel's mean and biased variance over the batch and positions of `x` (laid out
/// `[batch, channels, inner]`), two passes in f64.
fn channel_statistics<E>(
    x: &[E],
    batch: usize,
    channels: usize,
    inner: usize,
    wide: impl Fn(&E) -> f64,
) -> Vec<(f64, f64)> {
    let count = (batch * inner) as f64;
    let plane = |n: usize, c: usize| {
        let base = (n * channels + c) * inner;
        &x[base..base + inner]
    };
    (0..channels)
        .map(|c| {
            let sum: f64 = (0..batch)
                .map(|n| plane(n, c).iter().map(&wide).sum::<f64>())
                .sum();
            let mean = sum / count;
            let squares: f64 = (0..batch)
                .map(|n| {
                    plane(n, c)
                        .iter()
                        .map(|v| (wide(v) - mean) * (wide(v) - mean))
                        .sum::<f64>()
                })
                .sum();
            (mean, squares / count)
        })
        .collect()
}

/// Per-channel statistics and affine parameters of a batch_norm call.
struct AffineTerms<'a> {
    stats: &'a [(f64, f64)],
    weight: Option<&'a [f64]>,
    bias: Option<&'a [f64]>,
    eps: f64,
    training: bool,
}

impl AffineTerms<'_> {
    /// PyTorch's CPU kernel folds everything into `x * alpha + beta` per channel (alpha =
    /// invstd * weight, beta = bias - mean * alpha) in the opmath type and evaluates it as a
    /// fused multiply-add; doing the same keeps results within a rounding of PyTorch's.
    fn apply<P: Opmath>(&self, x: &[f64], batch: usize, inner: usize) -> Vec<f64> {
        let channels = self.stats.len();
        let coefficients = self.coefficients::<P>();
        let mut out = Vec::with_capacity(x.len());
        for n in 0..batch {
            for (c, &(alpha, beta)) in coefficients.iter().enumerate() {
                let base = (n * channels + c) * inner;
                out.extend(
                    x[base..base + inner]
                        .iter()
                        .map(|&v| P::of(v).fused(alpha, beta).wide()),
                );
            }
        }
        out
    }

    /// `apply::<f32>` for a contiguous float32 tensor, computed in f32 straight from its
    /// storage: the same coefficients and the same fused multiply-add, so the same bits,
    /// without widening every element to f64 and back. None when the input is not laid out
    /// for it (then `apply` handles it).
    fn apply_f32_from_storage(&self, input: &Tensor, inner: usize) -> Option<Tensor> {
        if !input.is_contiguous() || input.numel() == 0 || inner == 0 {
            return None;
        }
        let channels = self.stats.len();
        let coefficients = self.coefficients::<f32>();
        let guard = input.storage().read();
        let buffer = <f32 as crate::element::Element>::slice_of(&guard)?;
        let x = &buffer[input.storage_offset()..][..input.numel()];
        let mut out = vec![0.0f32; x.len()];
        let plane = |index: usize, dst: &mut [f32]| {
            let (alpha, beta) = coefficients[index % channels];
            crate::ops::fused::affine_f32(&x[index * inner..][..inner], alpha, beta, dst);
        };
        if x.len() >= crate::ops::parallel::PARALLEL_THRESHOLD {
            use rayon::prelude::*;
            out.par_chunks_mut(inner)
                .enumerate()
                .for_each(|(index, dst)| plane(index, dst));
        } else {
            for (index, dst) in out.chunks_mut(inner).enumerate() {
                plane(index, dst);
            }
        }
        Some(Tensor::from_values(out, input.sizes()))
    }

    /// Each channel's (alpha, beta).
    fn coefficients<P: Opmath>(&self) -> Vec<(P, P)> {
        self.stats
            .iter()
            .enumerate()
            .map(|(c, &(mean, var))| {
                let invstd = if self.training {
                    P::of(1.0 / (var + self.eps).sqrt())
                } else {
                    P::of(1.0) / (P::of(var) + P::of(self.eps)).sqrt()
                };
                let w = P::of(self.weight.map_or(1.0, |w| w[c]));
                let b = P::of(self.bias.map_or(0.0, |b| b[c]));
                let alpha = invstd * w;
                (alpha, b - P::of(mean) * alpha)
            })
            .collect()
    }
}

/// `torch.layer_norm`: normalizes over the trailing `normalized_shape` dims.
pub fn layer_norm(
    input: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    require_float(input, "LayerNormKernelImpl")?;
    let shape = to_sizes(normalized_shape, "normalized_shape")?;
    check_normalized_shape(input, &shape, "")?;
    for (p, name) in [(weight, "weight"), (bias, "bias")] {
        if let Some(t) = p {
            if t.sizes() != &shape[..] {
                return Err(invalid(format!(
                    "Expected {name} to be of same shape as normalized_shape, but got {name} of shape {} and normalized_shape = {}",
                    format_shape(t.sizes()),
                    format_shape(&shape)
                )));
            }
        }
    }
    let len: usize = shape.iter().product();
    let w = weight.map(|t| t.to_f64_vec());
    let b = bias.map(|t| t.to_f64_vec());
    // The normalized dims are the trailing ones: each group is one row of `len` values.
    Ok(map_rows(input, len, |x, out| {
        let (mean, var) = run_stats(x);
        let inv = 1.0 / (var + eps).sqrt();
        for (i, (o, &xi)) in out.iter_mut().zip(x).enumerate() {
            let v = (xi - mean) * inv;
            let v = w.as_ref().map_or(v, |w| v * w[i]);
            *o = b.as_ref().map_or(v, |b| v + b[i]);
        }
    }))
}

/// `torch.group_norm`: statistics over each group of channels (and all spatial positions).
pub fn group_norm(
    input: &Tensor,
    num_groups: i64,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    let dtype = require_float(input, "GroupNormKernelImpl")?;
    if input.dim() < 2 {
        return Err(invalid(format!(
            "Expected at least 2 dimensions for input tensor but received {}",
            input.dim()
        )));
    }
    let (batch, channels) = (input.sizes()[0], input.sizes()[1]);
    if num_groups <= 0 || channels % num_groups as usize != 0 {
        return Err(invalid(format!(
            "Expected number of channels in input to be divisible by num_groups, but got input of shape {} and num_groups={num_groups}",
            format_shape(input.sizes())
        )));
    }
    let groups = num_groups as usize;
    let inner: usize = input.sizes()[2..].iter().product();
    let w = channel_param(weight, channels, "weight")?;
    let b = channel_param(bias, channels, "bias")?;
    let x = input.to_f64_vec();
    let len = channels / groups * inner;
    let stats = group_stats(&x, batch * groups, len);
    let mut out = Vec::with_capacity(x.len());
    for n in 0..batch {
        for c in 0..channels {
            let (mean, var) = stats[n * groups + c / (channels / groups)];
            let inv = 1.0 / (var + eps).sqrt();
            let base = (n * channels + c) * inner;
            let wc = w.as_ref().map_or(1.0, |w| w[c]);
            let bc = b.as_ref().map_or(0.0, |b| b[c]);
            out.extend(
                x[base..base + inner]
                    .iter()
                    .map(|v| (v - mean) * inv * wc + bc),
            );
        }
    }
    Ok(from_f64(out, input.sizes(), dtype))
}

/// `torch.instance_norm`: per-sample, per-channel statistics (or the running ones when
/// `use_input_stats` is false); running stats are updated with the batch average.
#[allow(clippy::too_many_arguments)]
pub fn instance_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    use_input_stats: bool,
    momentum: f64,
    eps: f64,
) -> Result<Tensor> {
    require_float(input, "batch_norm")?;
    if input.dim() < 2 {
        return Err(invalid(format!(
            "Expected 2D or higher input to instance_norm, but got input of size {}",
            format_shape(input.sizes())
        )));
    }
    if !use_input_stats {
        return batch_norm(
            input,
            weight,
            bias,
            running_mean,
            running_var,
            false,
            momentum,
            eps,
        );
    }
    let (batch, channels) = (input.sizes()[0], input.sizes()[1]);
    // Fold the batch into channels: [1, N*C, ...], and repeat the per-channel parameters.
    let mut folded_shape = vec![1, batch * channels];
    folded_shape.extend(&input.sizes()[2..]);
    let folded = input.reshape_usize(&folded_shape)?;
    let repeat = |p: Option<&Tensor>| -> Result<Option<Tensor>> {
        match channel_param(p, channels, "weight")? {
            None => Ok(None),
            Some(v) => {
                let r: Vec<f64> = (0..batch).flat_map(|_| v.iter().copied()).collect();
                Ok(Some(from_f64(r, &[batch * channels], input.dtype())))
            }
        }
    };
    let (w, b) = (repeat(weight)?, repeat(bias)?);
    let rm = match running_mean {
        Some(t) => Some(repeat(Some(t))?.unwrap_or_else(|| t.clone())),
        None => None,
    };
    let rv = match running_var {
        Some(t) => Some(repeat(Some(t))?.unwrap_or_else(|| t.clone())),
        None => None,
    };
    let out = batch_norm(
        &folded,
        w.as_ref(),
        b.as_ref(),
        rm.as_ref(),
        rv.as_ref(),
        true,
        momentum,
        eps,
    )?;
    // Average the updated per-(sample, channel) running stats back into the real buffers.
    for (updated, target) in [(rm, running_mean), (rv, running_var)] {
        if let (Some(updated), Some(target)) = (updated, target) {
            let u = updated.to_f64_vec();
            let avg: Vec<f64> = (0..channels)
                .map(|c| (0..batch).map(|n| u[n * channels + c]).sum::<f64>() / batch as f64)
                .collect();
            update_running(target, avg)?;
        }
    }
    out.reshape_usize(input.sizes())
}
