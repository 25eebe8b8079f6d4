//! Fractional max pooling (`fractional_max_pool2d` / `3d`, Graham 2014): windows of a fixed
//! size whose starts follow a pseudo-random increasing sequence, one per spatial dim and per
//! plane, derived from the caller's samples in [0, 1) as ATen's CPU kernel derives them.

use super::{from_f64, invalid};
use crate::dtype::DType;
use crate::error::{format_shape, Result, TensorError};
use crate::tensor::Tensor;

/// Rounds a value computed in f64 to the precision of `dtype`, so that each step of the
/// window-start formula rounds as it does in the kernel's scalar type.
fn round_to(dtype: DType, value: f64) -> f64 {
    match dtype {
        DType::Float64 => value,
        DType::Float16 => f64::from(half::f16::from_f64(value)),
        DType::BFloat16 => f64::from(half::bf16::from_f64(value)),
        _ => f64::from(value as f32),
    }
}

/// The window starts along one dim: `floor((i + sample) * alpha) - floor(sample * alpha)`
/// with `alpha = (input - pool) / (output - 1)`, the last window ending at the input's end.
/// A sample outside [0, 1) can move a window off the input, which ATen's kernel asserts
/// against; that is refused here.
fn window_starts(
    dtype: DType,
    sample: f64,
    input: usize,
    output: usize,
    pool: usize,
) -> Result<Vec<usize>> {
    let mut starts = vec![input - pool; output];
    if output > 1 {
        let alpha = round_to(dtype, (input - pool) as f64 / (output - 1) as f64);
        let base = round_to(dtype, sample * alpha) as i64;
        for (i, start) in starts.iter_mut().enumerate().take(output - 1) {
            let position = round_to(dtype, round_to(dtype, i as f64 + sample) * alpha) as i64;
            let first = position - base;
            if first < 0 || first as usize + pool > input {
                return Err(invalid(format!(
                    "fractional max pooling: the random sample {sample} puts a window of size \
                     {pool} at {first}, outside an input of size {input} (samples must lie in \
                     [0, 1))"
                )));
            }
            *start = first as usize;
        }
    }
    Ok(starts)
}

/// `fractional_max_pool{2,3}d(input, kernel_size, output_size, random_samples)`: the maxima
/// and their flat indices within each plane. `input` is `[N, C, *spatial]` or `[C, *spatial]`
/// with `spatial` 2 or 3 dims; `random_samples` is `[N', C, spatial]` (N' at least N).
pub fn fractional_max_pool(
    input: &Tensor,
    kernel_size: &[i64],
    output_size: &[i64],
    random_samples: &Tensor,
    spatial: usize,
) -> Result<(Tensor, Tensor)> {
    let (name, checked) = if spatial == 2 {
        ("fractional_max_pool2d", "fractional_max_pool2d()")
    } else {
        ("fractional_max_pool3d", "fractional_max_pool3d_out()")
    };
    if kernel_size.len() != spatial {
        return Err(invalid(format!(
            "{name}: kernel_size must either be a single Int or tuple of Ints"
        )));
    }
    if output_size.len() != spatial {
        return Err(invalid(format!(
            "{name}: output_size must either be a single Int or tuple of Ints"
        )));
    }
    let dims = input.dim();
    if dims != spatial + 1 && dims != spatial + 2 {
        return Err(invalid(format!(
            "{checked}: Expected {}D or {}D tensor, but got: {}",
            spatial + 1,
            spatial + 2,
            format_shape(input.sizes())
        )));
    }
    if let Some(empty) = (1..dims).find(|&d| input.sizes()[d] == 0) {
        return Err(invalid(format!(
            "{checked}: Expected input to have non-zero size for non-batch dimensions, but \
             got{} with dimension {empty} being empty.",
            format_shape(input.sizes())
        )));
    }
    let batched = dims == spatial + 2;
    let (batch, planes) = if batched {
        (input.sizes()[0], input.sizes()[1])
    } else {
        (1, input.sizes()[0])
    };
    let in_sizes = &input.sizes()[dims - spatial..];
    let dim_names: &[&str] = if spatial == 2 {
        &["height", "width"]
    } else {
        &["time", "height", "width"]
    };
    let mut pools = Vec::with_capacity(spatial);
    let mut outs = Vec::with_capacity(spatial);
    for d in 0..spatial {
        let (pool, out) = (kernel_size[d], output_size[d]);
        if pool <= 0 || out < 0 {
            return Err(invalid(format!(
                "{name}: kernel_size must be positive and output_size non-negative, got {} and {}",
                format_shape(
                    &kernel_size
                        .iter()
                        .map(|&v| v.max(0) as usize)
                        .collect::<Vec<_>>()
                ),
                format_shape(
                    &output_size
                        .iter()
                        .map(|&v| v.max(0) as usize)
                        .collect::<Vec<_>>()
                )
            )));
        }
        // The 3-d kernel wants the windows to stop short of the input's end (a strict
        // bound); the 2-d one lets the last window end there.
        let reach = out + pool - 1;
        let too_large = if spatial == 2 {
            reach > in_sizes[d] as i64
        } else {
            reach >= in_sizes[d] as i64
        };
        if too_large {
            return Err(invalid(format!(
                "{checked}: pool {} {pool} too large relative to input {} {}",
                dim_names[d], dim_names[d], in_sizes[d]
            )));
        }
        pools.push(pool as usize);
        outs.push(out as usize);
    }
    if random_samples.dim() != 3 {
        return Err(invalid(format!(
            "Expect _random_samples to have 3 dimensions, got {}",
            random_samples.dim()
        )));
    }
    if random_samples.dtype() != input.dtype() {
        return Err(invalid(
            "Expect _random_samples to have the same dtype as input",
        ));
    }
    let samples_sizes = random_samples.sizes();
    if samples_sizes[0] < batch {
        return Err(invalid(
            "Expect _random_samples.size(0) no less then input batch size.",
        ));
    }
    if samples_sizes[1] != planes {
        return Err(invalid(
            "Expect _random_samples.size(1) equals to input channel size.",
        ));
    }
    if samples_sizes[2] != spatial {
        return Err(invalid(format!(
            "Expect _random_samples.size(2) equals to {spatial}; got {}.",
            samples_sizes[2]
        )));
    }
    let dtype = input.dtype();
    if !dtype.is_floating_point() {
        return Err(TensorError::NotImplementedForDType {
            op: "fractional_max_pool2d_out_frame",
            dtype,
        });
    }
    let values = input.contiguous().to_f64_vec();
    let samples = random_samples.contiguous().to_f64_vec();
    let plane_in: usize = in_sizes.iter().product();
    let plane_out: usize = outs.iter().product();
    let mut maxima = Vec::with_capacity(batch * planes * plane_out);
    let mut indices = Vec::with_capacity(batch * planes * plane_out);
    for b in 0..batch {
        for p in 0..planes {
            let plane = (b * planes + p) * plane_in;
            let sample_at = (b * planes + p) * spatial;
            // A plane's 2-d samples are (width, height); its 3-d samples (time, height,
            // width).
            let starts = (0..spatial)
                .map(|d| {
                    let which = if spatial == 2 { 1 - d } else { d };
                    let sample = samples[sample_at + which];
                    window_starts(dtype, sample, in_sizes[d], outs[d], pools[d])
                })
                .collect::<Result<Vec<Vec<usize>>>>()?;
            pool_plane(
                &values[plane..plane + plane_in],
                in_sizes,
                &starts,
                &pools,
                &mut maxima,
                &mut indices,
            );
        }
    }
    let mut sizes = input.sizes()[..dims - spatial].to_vec();
    sizes.extend_from_slice(&outs);
    let indices = Tensor::from_vec(indices, &sizes)?;
    Ok((from_f64(maxima, &sizes, dtype), indices))
}

/// The maximum of every window of one plane (row-major over the output positions), a NaN
/// winning over any number, with its flat index in the plane.
fn pool_plane(
    plane: &[f64],
    in_sizes: &[usize],
    starts: &[Vec<usize>],
    pools: &[usize],
    maxima: &mut Vec<f64>,
    indices: &mut Vec<i64>,
) {
    let spatial = in_sizes.len();
    let out_sizes: Vec<usize> = starts.iter().map(Vec::len).collect();
    let count: usize = out_sizes.iter().product();
    let window: usize = pools.iter().product();
    let mut position = vec![0usize; spatial];
    for _ in 0..count {
        let origin: Vec<usize> = (0..spatial).map(|d| starts[d][position[d]]).collect();
        let flat = |offset: &[usize]| {
            (0..spatial).fold(0usize, |acc, d| acc * in_sizes[d] + origin[d] + offset[d])
        };
        let mut best = f64::NEG_INFINITY;
        let mut best_index = flat(&vec![0; spatial]);
        let mut offset = vec![0usize; spatial];
        for _ in 0..window {
            let index = flat(&offset);
            let value = plane[index];
            if value > best || value.is_nan() {
                best = value;
                best_index = index;
            }
            advance(&mut offset, pools);
        }
        maxima.push(best);
        indices.push(best_index as i64);
        advance(&mut position, &out_sizes);
    }
}

/// Steps a row-major multi-index within `limits` (wrapping to zero after the last).
fn advance(index: &mut [usize], limits: &[usize]) {
    for d in (0..index.len()).rev() {
        index[d] += 1;
        if index[d] < limits[d] {
            return;
        }
        index[d] = 0;
    }
}
