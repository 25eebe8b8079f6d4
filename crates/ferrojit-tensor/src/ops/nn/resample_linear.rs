//! Linear and bilinear interpolation of float32 tensors, computed in f32 the way PyTorch's
//! CPU kernels compute them, so results agree to the bit.
//!
//! PyTorch has two float kernels for this and picks one by output size:
//! - the channels-last kernel (2-D outputs with height + width <= 128): per output pixel it
//!   forms the four products of the row and column weights and sums the four taps in order
//!   (`x00*w00 + x01*w01 + x10*w10 + x11*w11`); its source index is a fused multiply-add;
//! - the generic kernel (everything else): one dimension inside the other,
//!   `t0*w0 + t1*w1` at each level, with the index's multiply and subtract rounded apart.
//!
//! PyTorch's compiler contracts these expressions into fused multiply-adds; which operand
//! pairs it fused was read off PyTorch's own results (tests/fixtures/regressions), and
//! `f32::mul_add` reproduces them. Not covered (at most one ulp from PyTorch): the
//! channels-last kernel's vector lanes (8 channels or more), and PyTorch's choice of the
//! channels-last kernel for 3-channel images when it runs on one thread.

/// One output position's two source indices and weights.
#[derive(Debug, Clone, Copy)]
struct Tap {
    first: usize,
    second: usize,
    first_weight: f32,
    second_weight: f32,
}

/// PyTorch's `area_pixel_compute_scale` in f32.
fn scale_f32(input: usize, output: usize, align_corners: bool, scale: Option<f64>) -> f32 {
    if align_corners {
        if output > 1 {
            (input - 1) as f32 / (output - 1) as f32
        } else {
            0.0
        }
    } else {
        match scale {
            Some(given) if given > 0.0 => (1.0 / given) as f32,
            _ => input as f32 / output as f32,
        }
    }
}

/// PyTorch's `compute_source_index_and_lambda` for every output position, in f32; `fused`
/// says whether `scale * (o + 0.5) - 0.5` is one fused multiply-add.
fn taps(
    input: usize,
    output: usize,
    align_corners: bool,
    scale: Option<f64>,
    fused: bool,
) -> Vec<Tap> {
    let ratio = scale_f32(input, output, align_corners, scale);
    let last = input.saturating_sub(1);
    (0..output)
        .map(|o| {
            if input == output {
                return Tap {
                    first: o,
                    second: o,
                    first_weight: 1.0,
                    second_weight: 0.0,
                };
            }
            let real = if align_corners {
                ratio * o as f32
            } else {
                let centre = o as f32 + 0.5;
                let index = if fused {
                    ratio.mul_add(centre, -0.5)
                } else {
                    ratio * centre - 0.5
                };
                if index < 0.0 {
                    0.0
                } else {
                    index
                }
            };
            let first = (real.floor().max(0.0) as usize).min(last);
            let lambda = (real - first as f32).clamp(0.0, 1.0);
            let second = if first < last { first + 1 } else { first };
            Tap {
                first,
                second,
                first_weight: 1.0 - lambda,
                second_weight: lambda,
            }
        })
        .collect()
}

/// PyTorch's `t0 * w0 + t1 * w1`, as its compiler fuses it.
fn blend(t0: f32, w0: f32, t1: f32, w1: f32) -> f32 {
    t0.mul_add(w0, t1 * w1)
}

/// Interpolates the trailing `output_size.len()` (1 or 2) dims of contiguous `values` of
/// `sizes` (`[N, C, ...]`).
pub(super) fn linear_f32(
    values: &[f32],
    sizes: &[usize],
    output_size: &[usize],
    scales: &[Option<f64>],
    align_corners: bool,
) -> Vec<f32> {
    let planes: usize = sizes[..2].iter().product();
    match output_size {
        [out_w] => {
            let in_w = sizes[2];
            let width = taps(in_w, *out_w, align_corners, scales[0], false);
            let mut out = Vec::with_capacity(planes * out_w);
            for plane in values.chunks(in_w).take(planes) {
                out.extend(width.iter().map(|tap| {
                    blend(
                        plane[tap.first],
                        tap.first_weight,
                        plane[tap.second],
                        tap.second_weight,
                    )
                }));
            }
            out
        }
        [out_h, out_w] => {
            let (in_h, in_w) = (sizes[2], sizes[3]);
            if out_h + out_w <= 128 {
                channels_last_2d(values, sizes, *out_h, *out_w, scales, align_corners)
            } else {
                generic_2d(
                    values,
                    planes,
                    (in_h, in_w),
                    (*out_h, *out_w),
                    scales,
                    align_corners,
                )
            }
        }
        _ => unreachable!("linear_f32 is called for 1-D and 2-D interpolation only"),
    }
}

/// PyTorch's generic kernel: the row blend inside the column blend.
fn generic_2d(
    values: &[f32],
    planes: usize,
    (in_h, in_w): (usize, usize),
    (out_h, out_w): (usize, usize),
    scales: &[Option<f64>],
    align_corners: bool,
) -> Vec<f32> {
    let height = taps(in_h, out_h, align_corners, scales[0], false);
    let width = taps(in_w, out_w, align_corners, scales[1], false);
    let mut out = Vec::with_capacity(planes * out_h * out_w);
    for plane in values.chunks(in_h * in_w).take(planes) {
        let row = |r: usize, tap: &Tap| {
            let line = &plane[r * in_w..(r + 1) * in_w];
            blend(
                line[tap.first],
                tap.first_weight,
                line[tap.second],
                tap.second_weight,
            )
        };
        for v in &height {
            for h in &width {
                out.push(blend(
                    row(v.first, h),
                    v.first_weight,
                    row(v.second, h),
                    v.second_weight,
                ));
            }
        }
    }
    out
}

/// PyTorch's channels-last kernel: four products of weights, the taps summed in order.
fn channels_last_2d(
    values: &[f32],
    sizes: &[usize],
    out_h: usize,
    out_w: usize,
    scales: &[Option<f64>],
    align_corners: bool,
) -> Vec<f32> {
    let (batches, channels, in_h, in_w) = (sizes[0], sizes[1], sizes[2], sizes[3]);
    let height = taps(in_h, out_h, align_corners, scales[0], true);
    let width = taps(in_w, out_w, align_corners, scales[1], true);
    let plane = in_h * in_w;
    let mut out = vec![0.0f32; batches * channels * out_h * out_w];
    for n in 0..batches {
        for (oh, v) in height.iter().enumerate() {
            for (ow, h) in width.iter().enumerate() {
                let w00 = v.first_weight * h.first_weight;
                let w01 = v.first_weight * h.second_weight;
                let w10 = v.second_weight * h.first_weight;
                let w11 = v.second_weight * h.second_weight;
                for c in 0..channels {
                    let base = (n * channels + c) * plane;
                    let at = |r: usize, col: usize| values[base + r * in_w + col];
                    let (x00, x01) = (at(v.first, h.first), at(v.first, h.second));
                    let (x10, x11) = (at(v.second, h.first), at(v.second, h.second));
                    let sum = x00.mul_add(w00, x01 * w01);
                    let sum = x10.mul_add(w10, sum);
                    let sum = x11.mul_add(w11, sum);
                    out[((n * channels + c) * out_h + oh) * out_w + ow] = sum;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_size_is_a_copy() {
        let values: Vec<f32> = (0..12).map(|v| v as f32 * 0.37).collect();
        let out = linear_f32(&values, &[1, 1, 3, 4], &[3, 4], &[None, None], false);
        assert_eq!(out, values);
    }

    #[test]
    fn align_corners_keeps_the_corner_values() {
        let values: Vec<f32> = (0..10).map(|v| (v as f32).sqrt()).collect();
        for out_w in [2, 3, 4, 7, 10, 19] {
            let out = linear_f32(&values, &[1, 1, 10], &[out_w], &[None], true);
            assert_eq!(out.len(), out_w);
            assert_eq!(out[0], values[0]);
            assert_eq!(out[out_w - 1], values[9]);
        }
    }
}
