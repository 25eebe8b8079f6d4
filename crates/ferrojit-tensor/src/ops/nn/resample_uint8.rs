//! Bilinear and bicubic resizing of uint8 images as PyTorch's CPU kernel does it: weights
//! computed in f64, turned into int16 fixed point with a per-axis precision, and each axis
//! resampled in integer arithmetic that rounds to nearest and clamps to 0..=255 (the width
//! first, then the height, each pass writing uint8).

use super::resample::{compute_scale, InterpolateMode};
use crate::error::Result;
use crate::tensor::Tensor;

/// One output position of one axis: the first input index it reads, and one fixed-point
/// weight per input it reads.
struct Taps {
    first: usize,
    weights: Vec<i32>,
}

/// An axis's resampling plan: the taps of every output position and the number of
/// fractional bits of their weights.
struct AxisPlan {
    taps: Vec<Taps>,
    precision: u32,
}

fn triangle_filter(x: f64) -> f64 {
    let x = x.abs();
    if x < 1.0 {
        1.0 - x
    } else {
        0.0
    }
}

/// The cubic convolution kernel with a = -0.75: the constant PyTorch uses without
/// antialiasing, so that this path stays close to the float one.
fn cubic_filter(x: f64) -> f64 {
    const A: f64 = -0.75;
    let x = x.abs();
    if x < 1.0 {
        ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0
    } else if x < 2.0 {
        ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A
    } else {
        0.0
    }
}

/// The taps of one axis. Taps that fall off either end of the input are folded into the
/// first or last valid input (so a border pixel repeats), and the largest weight seen while
/// folding decides the fixed-point precision: as many bits as keep twice that weight under
/// 2^15.
fn axis_plan(
    input: usize,
    output: usize,
    align_corners: bool,
    scale: Option<f64>,
    mode: InterpolateMode,
) -> AxisPlan {
    let (interp_size, filter): (i64, fn(f64) -> f64) = match mode {
        InterpolateMode::Cubic => (4, cubic_filter),
        _ => (2, triangle_filter),
    };
    let cubic = interp_size > 2;
    let scale = compute_scale(input, output, align_corners, scale);
    let input_len = input as i64;
    let support = interp_size / 2;
    let mut largest = 0.0f64;
    let mut float_taps = Vec::with_capacity(output);
    for i in 0..output {
        let mut real = if align_corners {
            scale * i as f64
        } else {
            scale * (i as f64 + 0.5) - 0.5
        };
        if !cubic && real < 0.0 {
            real = 0.0;
        }
        let index = (real.floor() as i64).min(input_len - 1);
        let lambda = (real - index as f64).clamp(0.0, 1.0);
        let unbound_min = index - support + 1;
        let unbound_max = index + support + 1;
        let first = unbound_min.max(0);
        let count = (unbound_max.min(input_len) - first).clamp(0, interp_size);
        let mut weights = vec![0.0f64; interp_size as usize];
        let mut slot: i64 = 0;
        for j in 0..interp_size {
            let w = filter((j + 1 - support) as f64 - lambda);
            if unbound_min + j <= 0 {
                slot = 0;
            } else if unbound_min + j >= input_len - 1 {
                slot = count - 1;
            }
            let at = slot.max(0) as usize;
            weights[at] += w;
            largest = largest.max(weights[at]);
            slot += 1;
        }
        weights.truncate(count as usize);
        float_taps.push((first as usize, weights));
    }
    let mut precision = 0u32;
    while precision < 22 {
        let next = (0.5 + largest * f64::from(1u32 << (precision + 1))) as i32;
        if next >= 1 << 15 {
            break;
        }
        precision += 1;
    }
    let unit = f64::from(1u32 << precision);
    let taps = float_taps
        .into_iter()
        .map(|(first, weights)| Taps {
            first,
            weights: weights
                .into_iter()
                .map(|w| {
                    let v = w * unit;
                    // Rounded half away from zero, as a C cast of v ± 0.5 truncates.
                    if v < 0.0 {
                        (v - 0.5) as i32
                    } else {
                        (v + 0.5) as i32
                    }
                })
                .collect(),
        })
        .collect();
    AxisPlan { taps, precision }
}

/// Resamples `values` (`outer` blocks of `length` x `inner`) along the middle axis.
fn resample_axis(
    values: &[u8],
    outer: usize,
    length: usize,
    inner: usize,
    plan: &AxisPlan,
) -> Vec<u8> {
    let rounding = if plan.precision == 0 {
        0
    } else {
        1i64 << (plan.precision - 1)
    };
    let mut out = Vec::with_capacity(outer * plan.taps.len() * inner);
    for block in 0..outer {
        let base = block * length * inner;
        for taps in &plan.taps {
            for column in 0..inner {
                let mut sum = rounding;
                for (k, &w) in taps.weights.iter().enumerate() {
                    let at = base + (taps.first + k) * inner + column;
                    sum += i64::from(w) * i64::from(values[at]);
                }
                out.push((sum >> plan.precision).clamp(0, 255) as u8);
            }
        }
    }
    out
}

/// Resizes the last two dims of a uint8 `[N, C, H, W]` tensor to `output_size` (bilinear or
/// bicubic, `scales` as given to the operator).
pub(super) fn resize_uint8_2d(
    input: &Tensor,
    output_size: &[usize],
    scales: &[Option<f64>],
    mode: InterpolateMode,
    align_corners: bool,
) -> Result<Tensor> {
    let sizes = input.sizes();
    let (planes, height, width) = (sizes[0] * sizes[1], sizes[2], sizes[3]);
    let (out_height, out_width) = (output_size[0], output_size[1]);
    let mut values: Vec<u8> = input.contiguous().to_vec::<u8>()?;
    if out_width != width {
        let scale = scales.get(1).copied().flatten();
        let plan = axis_plan(width, out_width, align_corners, scale, mode);
        values = resample_axis(&values, planes * height, width, 1, &plan);
    }
    if out_height != height {
        let scale = scales.first().copied().flatten();
        let plan = axis_plan(height, out_height, align_corners, scale, mode);
        values = resample_axis(&values, planes, height, out_width, &plan);
    }
    Tensor::from_vec(values, &[sizes[0], sizes[1], out_height, out_width])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_size_planes_are_unchanged() {
        let input = Tensor::from_vec((0u8..16).collect::<Vec<u8>>(), &[1, 1, 4, 4]).unwrap();
        let out = resize_uint8_2d(
            &input,
            &[4, 4],
            &[None, None],
            InterpolateMode::Linear,
            false,
        )
        .unwrap();
        assert_eq!(out.to_vec::<u8>().unwrap(), (0u8..16).collect::<Vec<u8>>());
    }

    #[test]
    fn halving_a_ramp_averages_neighbours_with_rounding() {
        // Width 4 -> 2 without corner alignment samples at 0.5 and 2.5: (0+1)/2 rounds to 1
        // (half away from zero in fixed point), (2+3)/2 to 3.
        let input = Tensor::from_vec(vec![0u8, 1, 2, 3], &[1, 1, 1, 4]).unwrap();
        let out = resize_uint8_2d(
            &input,
            &[1, 2],
            &[None, None],
            InterpolateMode::Linear,
            false,
        )
        .unwrap();
        assert_eq!(out.to_vec::<u8>().unwrap(), vec![1, 3]);
    }

    #[test]
    fn cubic_overshoot_is_clamped_to_the_byte_range() {
        let input = Tensor::from_vec(vec![0u8, 0, 255, 255], &[1, 1, 1, 4]).unwrap();
        let out =
            resize_uint8_2d(&input, &[1, 9], &[None, None], InterpolateMode::Cubic, true).unwrap();
        let values = out.to_vec::<u8>().unwrap();
        assert_eq!(values.first(), Some(&0));
        assert_eq!(values.last(), Some(&255));
    }
}
