//! Interpolation (`aten::upsample_*`): nearest, nearest-exact, (bi/tri)linear and bicubic,
//! applied one spatial dim at a time (all these kernels are separable).

use super::{from_f64, invalid, Opmath};
use crate::dtype::DType;
use crate::error::{format_shape, Result, TensorError};
use crate::tensor::Tensor;

/// Interpolation kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterpolateMode {
    Nearest,
    NearestExact,
    Linear,
    Cubic,
}

/// PyTorch's `area_pixel_compute_scale`.
pub(super) fn compute_scale(
    input: usize,
    output: usize,
    align_corners: bool,
    scale: Option<f64>,
) -> f64 {
    if align_corners {
        if output > 1 {
            (input as f64 - 1.0) / (output as f64 - 1.0)
        } else {
            0.0
        }
    } else {
        match scale {
            Some(s) if s > 0.0 => 1.0 / s,
            _ => input as f64 / output as f64,
        }
    }
}

fn cubic_weights(t: f64) -> [f64; 4] {
    const A: f64 = -0.75;
    let c1 = |x: f64| ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    let c2 = |x: f64| ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
    [c2(t + 1.0), c1(t), c1(1.0 - t), c2(2.0 - t)]
}

/// Resamples `x` (contiguous values of `sizes`) along `dim` to `out_len`.
fn resample_dim(
    x: &[f64],
    sizes: &[usize],
    dim: usize,
    out_len: usize,
    mode: InterpolateMode,
    align_corners: bool,
    scale: Option<f64>,
) -> Vec<f64> {
    let in_len = sizes[dim];
    let outer: usize = sizes[..dim].iter().product();
    let inner: usize = sizes[dim + 1..].iter().product();
    let s = match mode {
        InterpolateMode::Nearest | InterpolateMode::NearestExact => {
            compute_scale(in_len, out_len, false, scale)
        }
        _ => compute_scale(in_len, out_len, align_corners, scale),
    };
    // Per output position: (source index, weight) taps.
    let taps: Vec<Vec<(usize, f64)>> = (0..out_len)
        .map(|o| {
            let last = in_len.saturating_sub(1);
            match mode {
                InterpolateMode::Nearest => {
                    vec![(nearest_index(o, s, false).min(last), 1.0)]
                }
                InterpolateMode::NearestExact => vec![(nearest_index(o, s, true).min(last), 1.0)],
                InterpolateMode::Linear => {
                    let real = if align_corners {
                        o as f64 * s
                    } else {
                        ((o as f64 + 0.5) * s - 0.5).max(0.0)
                    };
                    let i0 = (real.floor() as usize).min(last);
                    let i1 = (i0 + 1).min(last);
                    let l = real - i0 as f64;
                    vec![(i0, 1.0 - l), (i1, l)]
                }
                InterpolateMode::Cubic => {
                    let real = if align_corners {
                        o as f64 * s
                    } else {
                        (o as f64 + 0.5) * s - 0.5
                    };
                    let base = real.floor();
                    let t = real - base;
                    let w = cubic_weights(t);
                    (0..4)
                        .map(|k| {
                            let idx = (base as i64 - 1 + k as i64).clamp(0, last as i64) as usize;
                            (idx, w[k])
                        })
                        .collect()
                }
            }
        })
        .collect();
    let mut out = Vec::with_capacity(outer * out_len * inner);
    for o in 0..outer {
        for tap in &taps {
            for i in 0..inner {
                let v: f64 = tap
                    .iter()
                    .map(|&(src, w)| w * x[(o * in_len + src) * inner + i])
                    .sum();
                out.push(v);
            }
        }
    }
    out
}

/// Bicubic resampling of one dim in f32, as PyTorch's CPU kernel computes it for float:
/// f32 scale, source index and coefficients, and a fused multiply-add accumulation.
fn cubic_dim_f32(
    x: &[f32],
    sizes: &[usize],
    dim: usize,
    out_len: usize,
    align_corners: bool,
    scale: Option<f64>,
) -> Vec<f32> {
    const A: f32 = -0.75;
    let in_len = sizes[dim];
    let outer: usize = sizes[..dim].iter().product();
    let inner: usize = sizes[dim + 1..].iter().product();
    let s: f32 = if align_corners {
        if out_len > 1 {
            (in_len as f32 - 1.0) / (out_len as f32 - 1.0)
        } else {
            0.0
        }
    } else {
        match scale {
            Some(v) if v > 0.0 => (1.0 / v) as f32,
            _ => in_len as f32 / out_len as f32,
        }
    };
    let c1 = |x: f32| ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    let c2 = |x: f32| ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
    let last = in_len as i64 - 1;
    let taps: Vec<[(usize, f32); 4]> = (0..out_len)
        .map(|o| {
            let real = if align_corners {
                s * o as f32
            } else {
                s * (o as f32 + 0.5) - 0.5
            };
            let base = real.floor();
            let t = real - base;
            let w = [c2(t + 1.0), c1(t), c1(1.0 - t), c2(2.0 - t)];
            let mut tap = [(0usize, 0.0f32); 4];
            for (k, slot) in tap.iter_mut().enumerate() {
                let idx = (base as i64 - 1 + k as i64).clamp(0, last.max(0)) as usize;
                *slot = (idx, w[k]);
            }
            tap
        })
        .collect();
    let mut out = Vec::with_capacity(outer * out_len * inner);
    for o in 0..outer {
        for tap in &taps {
            for i in 0..inner {
                let at = |src: usize| x[(o * in_len + src) * inner + i];
                let mut acc = at(tap[0].0) * tap[0].1;
                for &(src, w) in &tap[1..] {
                    acc = at(src).mul_add(w, acc);
                }
                out.push(acc);
            }
        }
    }
    out
}

/// PyTorch's nearest source index, computed in float like its CPU kernel.
fn nearest_index(o: usize, scale: f64, exact: bool) -> usize {
    let s = scale as f32;
    let v = if exact {
        (o as f32 + 0.5) * s
    } else {
        o as f32 * s
    };
    v.floor().max(0.0) as usize
}

/// Interpolates the trailing `output_size.len()` dims of `input` (`[N, C, ...]`).
pub fn upsample(
    input: &Tensor,
    output_size: &[usize],
    scales: &[Option<f64>],
    mode: InterpolateMode,
    align_corners: bool,
) -> Result<Tensor> {
    let spatial = output_size.len();
    if input.dim() != spatial + 2 {
        return Err(invalid(format!(
            "Expected {}D input, but got input of size {}",
            spatial + 2,
            format_shape(input.sizes())
        )));
    }
    // uint8 images have their own fixed-point kernel in PyTorch (2-d only: the 1-d and 3-d
    // linear kernels refuse uint8). The size checks below come first, as in ATen.
    let uint8_image = input.dtype() == DType::UInt8
        && spatial == 2
        && matches!(mode, InterpolateMode::Linear | InterpolateMode::Cubic);
    if mode != InterpolateMode::Nearest
        && mode != InterpolateMode::NearestExact
        && !input.dtype().is_floating_point()
        && !uint8_image
    {
        return Err(TensorError::NotImplementedForDType {
            op: "upsample",
            dtype: input.dtype(),
        });
    }
    if input.sizes()[2..].contains(&0) || output_size.contains(&0) {
        return Err(invalid(format!(
            "Input and output sizes should be greater than 0, but got input ({}) and output ({})",
            format_shape(&input.sizes()[2..]),
            format_shape(output_size)
        )));
    }
    if uint8_image {
        return super::resample_uint8::resize_uint8_2d(
            input,
            output_size,
            scales,
            mode,
            align_corners,
        );
    }
    let mut sizes = input.sizes().to_vec();
    if mode == InterpolateMode::Cubic && input.dtype() != DType::Float64 {
        // PyTorch's kernel works in f32 here; near-cancelling outputs only match when the
        // same f32 operations run in the same order (innermost dim first).
        let mut values: Vec<f32> = input.to_f64_vec().into_iter().map(|v| v as f32).collect();
        for k in (0..spatial).rev() {
            let d = 2 + k;
            let scale = scales.get(k).copied().flatten();
            values = cubic_dim_f32(&values, &sizes, d, output_size[k], align_corners, scale);
            sizes[d] = output_size[k];
        }
        let wide = values.into_iter().map(f64::from).collect();
        return Ok(from_f64(wide, &sizes, input.dtype()));
    }
    if mode == InterpolateMode::Linear && input.dtype() == DType::Float32 && spatial <= 2 {
        // PyTorch's float kernels compute the scale, the source index and the weights in
        // f32: with a recomputed scale (in / out) the f32 rounding of the scale moves the
        // source index of far outputs by ~1e-5, so f64 math differs by that much.
        let values: Vec<f32> = input.to_f64_vec().into_iter().map(|v| v as f32).collect();
        let scales: Vec<Option<f64>> = (0..spatial)
            .map(|k| scales.get(k).copied().flatten())
            .collect();
        let out = super::resample_linear::linear_f32(
            &values,
            input.sizes(),
            output_size,
            &scales,
            align_corners,
        );
        let mut out_sizes = input.sizes()[..2].to_vec();
        out_sizes.extend_from_slice(output_size);
        let wide = out.into_iter().map(f64::from).collect();
        return Ok(from_f64(wide, &out_sizes, input.dtype()));
    }
    let mut values = input.to_f64_vec();
    for (k, &size) in output_size.iter().enumerate() {
        let d = 2 + k;
        values = resample_dim(
            &values,
            &sizes,
            d,
            size,
            mode,
            align_corners,
            scales.get(k).copied().flatten(),
        );
        sizes[d] = size;
    }
    Ok(from_f64(values, &sizes, input.dtype()))
}

/// Output size from `output_size` or `scale_factors` (exactly one must be given).
pub fn output_size_for(
    input: &Tensor,
    spatial: usize,
    output_size: Option<&[i64]>,
    scale_factors: Option<&[f64]>,
) -> Result<Vec<usize>> {
    if input.dim() < spatial {
        return Err(invalid(
            "input has too few dimensions for this interpolation",
        ));
    }
    let in_sp = &input.sizes()[input.dim() - spatial..];
    match (output_size, scale_factors) {
        (Some(o), None) => {
            if o.len() != spatial {
                return Err(invalid(format!(
                    "It is expected output_size equals to {spatial}, but got size {}",
                    o.len()
                )));
            }
            super::to_sizes(o, "output_size")
        }
        (None, Some(s)) => {
            if s.len() != spatial {
                return Err(invalid(format!(
                    "It is expected scale_factors equals to {spatial}, but got size {}",
                    s.len()
                )));
            }
            Ok(in_sp
                .iter()
                .zip(s)
                .map(|(&i, &f)| (i as f64 * f).floor() as usize)
                .collect())
        }
        (Some(_), Some(_)) => Err(invalid(
            "Must specify exactly one of output_size and scale_factors",
        )),
        (None, None) => Err(invalid(
            "Must specify exactly one of output_size and scale_factors",
        )),
    }
}

/// Antialiased interpolation filters (`aten::_upsample_*2d_aa`), as in PIL's resampling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AntialiasFilter {
    Bilinear,
    Bicubic,
    Lanczos,
}

impl AntialiasFilter {
    /// Taps of the filter at scale 1.
    fn interp_size(self) -> usize {
        match self {
            AntialiasFilter::Bilinear => 2,
            AntialiasFilter::Bicubic => 4,
            AntialiasFilter::Lanczos => 6,
        }
    }

    fn weight<P: Opmath + PartialOrd>(self, x: P) -> P {
        let zero = P::of(0.0);
        let one = P::of(1.0);
        let x = if x < zero { zero - x } else { x };
        match self {
            AntialiasFilter::Bilinear => {
                if x < one {
                    one - x
                } else {
                    zero
                }
            }
            AntialiasFilter::Bicubic => {
                // Keys' cubic with a = -0.5 (PIL's choice for antialiasing).
                let a = P::of(-0.5);
                if x < one {
                    ((a + P::of(2.0)) * x - (a + P::of(3.0))) * x * x + one
                } else if x < P::of(2.0) {
                    (((x - P::of(5.0)) * x + P::of(8.0)) * x - P::of(4.0)) * a
                } else {
                    zero
                }
            }
            AntialiasFilter::Lanczos => {
                let sinc = |v: f64| {
                    if v == 0.0 {
                        1.0
                    } else {
                        let v = v * std::f64::consts::PI;
                        v.sin() / v
                    }
                };
                let v = x.wide();
                if v < 3.0 {
                    P::of(sinc(v) * sinc(v / 3.0))
                } else {
                    zero
                }
            }
        }
    }
}

/// One antialiased pass along `dim`: PyTorch's `_compute_indices_min_size_weights_aa`
/// (support widened by the downscale factor, weights normalized to sum 1).
fn antialias_dim<P: Opmath + PartialOrd>(
    x: &[P],
    sizes: &[usize],
    dim: usize,
    out_len: usize,
    filter: AntialiasFilter,
    align_corners: bool,
    scale: Option<f64>,
) -> Vec<P> {
    let in_len = sizes[dim];
    let outer: usize = sizes[..dim].iter().product();
    let inner: usize = sizes[dim + 1..].iter().product();
    let s: P = if align_corners {
        if out_len > 1 {
            P::of(in_len as f64 - 1.0) / P::of(out_len as f64 - 1.0)
        } else {
            P::of(0.0)
        }
    } else {
        match scale {
            Some(v) if v > 0.0 => P::of(1.0 / v),
            _ => P::of(in_len as f64) / P::of(out_len as f64),
        }
    };
    let half = P::of(filter.interp_size() as f64 * 0.5);
    let upscale = s.wide() < 1.0;
    let support = if upscale { half } else { half * s };
    let max_taps = (support.wide().ceil() as usize) * 2 + 1;
    let invscale = if upscale {
        P::of(1.0)
    } else {
        P::of(1.0 / s.wide())
    };
    let taps: Vec<(usize, Vec<P>)> = (0..out_len)
        .map(|i| {
            let center = P::of(s.wide() * (i as f64 + 0.5));
            let xmin = ((center - support).wide() + 0.5).max(0.0) as usize;
            let xmax = (((center + support).wide() + 0.5) as usize).min(in_len);
            let count = xmax.saturating_sub(xmin).min(max_taps);
            let mut weights: Vec<P> = (0..count)
                .map(|j| {
                    let offset = P::of((j + xmin) as f64) - center;
                    filter.weight(P::of((offset.wide() + 0.5) * invscale.wide()))
                })
                .collect();
            let total = weights.iter().fold(P::of(0.0), |acc, &w| acc + w);
            if total.wide() != 0.0 {
                weights.iter_mut().for_each(|w| *w = *w / total);
            }
            (xmin, weights)
        })
        .collect();
    let mut out = Vec::with_capacity(outer * out_len * inner);
    for o in 0..outer {
        for (xmin, weights) in &taps {
            for i in 0..inner {
                let at = |j: usize| x[(o * in_len + xmin + j) * inner + i];
                let mut acc = P::of(0.0);
                for (j, &w) in weights.iter().enumerate() {
                    acc = if j == 0 {
                        at(0) * w
                    } else {
                        at(j).fused(w, acc)
                    };
                }
                out.push(acc);
            }
        }
    }
    out
}

fn antialias_in<P: Opmath + PartialOrd>(
    input: &Tensor,
    output_size: &[usize],
    scales: &[Option<f64>],
    filter: AntialiasFilter,
    align_corners: bool,
) -> Vec<f64> {
    let mut sizes = input.sizes().to_vec();
    let mut values: Vec<P> = input.to_f64_vec().into_iter().map(P::of).collect();
    // Horizontal (last) dim first, as PyTorch's separable kernel.
    for k in (0..output_size.len()).rev() {
        let d = 2 + k;
        let scale = scales.get(k).copied().flatten();
        values = antialias_dim(
            &values,
            &sizes,
            d,
            output_size[k],
            filter,
            align_corners,
            scale,
        );
        sizes[d] = output_size[k];
    }
    values.into_iter().map(P::wide).collect()
}

/// `aten::_upsample_{bilinear,bicubic,lanczos}2d_aa`: antialiased resize of `[N, C, H, W]`.
pub fn upsample_antialias(
    input: &Tensor,
    output_size: &[usize],
    scales: &[Option<f64>],
    filter: AntialiasFilter,
    align_corners: bool,
) -> Result<Tensor> {
    if input.dim() != 4 || output_size.len() != 2 {
        return Err(invalid(format!(
            "Expected 4D input with 2 output sizes for antialiased interpolation, but got input of size {}",
            format_shape(input.sizes())
        )));
    }
    if !input.dtype().is_floating_point() {
        return Err(TensorError::NotImplementedForDType {
            op: "upsample_aa",
            dtype: input.dtype(),
        });
    }
    if input.sizes()[2..].contains(&0) || output_size.contains(&0) {
        return Err(invalid(format!(
            "Input and output sizes should be greater than 0, but got input ({}) and output ({})",
            format_shape(&input.sizes()[2..]),
            format_shape(output_size)
        )));
    }
    let values = if input.dtype() == DType::Float64 {
        antialias_in::<f64>(input, output_size, scales, filter, align_corners)
    } else {
        antialias_in::<f32>(input, output_size, scales, filter, align_corners)
    };
    let mut sizes = input.sizes().to_vec();
    sizes[2..].copy_from_slice(output_size);
    Ok(from_f64(values, &sizes, input.dtype()))
}
