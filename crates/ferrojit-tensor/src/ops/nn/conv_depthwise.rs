//! Float32 depthwise convolution (`groups == in_channels`, each input channel feeding
//! `out_channels / in_channels` filters of its own) by direct loops over output rows, the
//! kernel taps of a row unrolled for the 3- and 5-wide kernels of MobileNet and EfficientNet.
//!
//! The im2col + GEMM path runs one tiny product per channel (`1 x taps` times `taps x
//! positions`), where packing costs more than the arithmetic. Here each channel's input is
//! copied once into a zero-padded scratch volume whose rows are split into `stride` phases
//! (columns `r, r + s, r + 2s, ...` stored together), so that for every stride the input
//! values a kernel tap meets along an output row are one contiguous slice: each tap is a
//! multiply-add of a slice into the output row, which the compiler vectorizes (compiled
//! again with AVX2 + FMA and picked at run time). The bias, residual and activation then run
//! on the finished output plane through the GEMM's own epilogue, so fused graphs keep their
//! fusion and the same epilogue semantics.

use rayon::prelude::*;

use super::conv_packed::{ConvEpilogue, ConvShape};
use crate::error::{Result, TensorError};
use crate::gemm::{ChannelAxis, Epilogue, Residual};
use crate::tensor::Tensor;

/// Whether the depthwise kernel takes this convolution: every group has one input channel
/// and a whole number of filters, unless `FERROJIT_DEPTHWISE_CONV=off` (read once) asks for
/// the packed GEMM path, for side-by-side timing.
pub(crate) fn depthwise_applies(shape: &ConvShape) -> bool {
    static ENABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let enabled = *ENABLED.get_or_init(|| {
        std::env::var("FERROJIT_DEPTHWISE_CONV").map_or(true, |v| v.trim() != "off")
    });
    // A kernel with a zero-size dim has no taps: the generic path gives its zeros.
    enabled
        && shape.geometry.kernel_len() > 0
        && shape.groups > 1
        && shape.groups == shape.in_channels
        && shape.out_channels.is_multiple_of(shape.groups)
}

/// The padded, phase-split copy of one input channel: `depth x height` rows, each stored as
/// `stride` phases of `phase_width` values (phase `r` holds padded columns `r, r + s, ...`).
#[derive(Debug, Clone, Copy)]
struct PaddedLayout {
    depth: usize,
    height: usize,
    stride: usize,
    phase_width: usize,
}

impl PaddedLayout {
    /// The layout for one convolution: tall and wide enough for every tap of every output
    /// position, whatever the padding after the input (the geometry keeps only the padding
    /// before it; the output size implies the rest).
    fn new(shape: &ConvShape) -> PaddedLayout {
        let g = shape.geometry;
        let extent = |d: usize| {
            let needed = (g.out_size[d] - 1) * g.stride[d] + (g.kernel[d] - 1) * g.dilation[d] + 1;
            needed.max(g.in_size[d] + g.pad_before[d])
        };
        let stride = g.stride[2];
        PaddedLayout {
            depth: extent(0),
            height: extent(1),
            stride,
            phase_width: extent(2).div_ceil(stride),
        }
    }

    fn row_len(&self) -> usize {
        self.stride * self.phase_width
    }

    fn len(&self) -> usize {
        self.depth * self.height * self.row_len()
    }

    /// The offset of padded row `(z, y)`.
    fn row_start(&self, z: usize, y: usize) -> usize {
        (z * self.height + y) * self.row_len()
    }
}

/// Copies the input channel `x_channel` (`in_size` values, row-major) into `scratch`
/// (resized to the layout and zeroed first), shifted by the padding before it.
fn fill_padded(
    x_channel: &[f32],
    shape: &ConvShape,
    layout: &PaddedLayout,
    scratch: &mut Vec<f32>,
) {
    let g = shape.geometry;
    let [id, ih, iw] = g.in_size;
    let [pd, ph, pw] = g.pad_before;
    scratch.clear();
    scratch.resize(layout.len(), 0.0);
    let s = layout.stride;
    for z in 0..id {
        for y in 0..ih {
            let src = &x_channel[(z * ih + y) * iw..][..iw];
            let row_start = layout.row_start(z + pd, y + ph);
            let row = &mut scratch[row_start..row_start + layout.row_len()];
            if s == 1 {
                row[pw..pw + iw].copy_from_slice(src);
            } else {
                for (ix, &v) in src.iter().enumerate() {
                    let col = ix + pw;
                    row[(col % s) * layout.phase_width + col / s] = v;
                }
            }
        }
    }
}

/// `out[i] += sum over t of weights[t] * sources[t][i]`, the taps summed in order into the
/// running value, with one rounding per tap when `FMA`.
#[inline(always)]
fn accumulate_taps<const N: usize, const FMA: bool>(
    out: &mut [f32],
    sources: [&[f32]; N],
    weights: [f32; N],
) {
    let len = out.len();
    // Each source cut to the row's length, so the indexing below needs no checks.
    let sources = sources.map(|s| &s[..len]);
    for (i, o) in out.iter_mut().enumerate() {
        let mut sum = *o;
        for (source, &weight) in sources.iter().zip(&weights) {
            sum = if FMA {
                source[i].mul_add(weight, sum)
            } else {
                source[i] * weight + sum
            };
        }
        *o = sum;
    }
}

/// One output channel's plane (`out_size` values, zeroed) from the padded input channel and
/// the channel's `kernel_len` weights.
#[inline(always)]
fn channel_plane<const FMA: bool>(
    padded: &[f32],
    layout: &PaddedLayout,
    shape: &ConvShape,
    weights: &[f32],
    plane: &mut [f32],
) {
    let g = shape.geometry;
    let [od, oh, ow] = g.out_size;
    let [kd, kh, kw] = g.kernel;
    let [sd, sh, sw] = g.stride;
    let [dd, dh, dw] = g.dilation;
    // The slice of padded row `(z, y)` that tap column `tx` meets along an output row.
    let tap = |row_start: usize, tx: usize| -> &[f32] {
        let col = tx * dw;
        let start = row_start + (col % sw) * layout.phase_width + col / sw;
        &padded[start..start + ow]
    };
    for z_out in 0..od {
        for y_out in 0..oh {
            let out_row = &mut plane[(z_out * oh + y_out) * ow..][..ow];
            for tz in 0..kd {
                let z = z_out * sd + tz * dd;
                let row_of = |ty: usize| layout.row_start(z, y_out * sh + ty * dh);
                let w_row = |ty: usize| &weights[(tz * kh + ty) * kw..][..kw];
                match (kh, kw) {
                    (3, 3) => {
                        let (r0, r1, r2) = (row_of(0), row_of(1), row_of(2));
                        let w = &weights[tz * 9..][..9];
                        accumulate_taps::<9, FMA>(
                            out_row,
                            [
                                tap(r0, 0),
                                tap(r0, 1),
                                tap(r0, 2),
                                tap(r1, 0),
                                tap(r1, 1),
                                tap(r1, 2),
                                tap(r2, 0),
                                tap(r2, 1),
                                tap(r2, 2),
                            ],
                            [w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8]],
                        );
                    }
                    (_, 5) => {
                        for ty in 0..kh {
                            let (r, w) = (row_of(ty), w_row(ty));
                            accumulate_taps::<5, FMA>(
                                out_row,
                                [tap(r, 0), tap(r, 1), tap(r, 2), tap(r, 3), tap(r, 4)],
                                [w[0], w[1], w[2], w[3], w[4]],
                            );
                        }
                    }
                    (_, 3) => {
                        for ty in 0..kh {
                            let (r, w) = (row_of(ty), w_row(ty));
                            accumulate_taps::<3, FMA>(
                                out_row,
                                [tap(r, 0), tap(r, 1), tap(r, 2)],
                                [w[0], w[1], w[2]],
                            );
                        }
                    }
                    _ => {
                        for ty in 0..kh {
                            let (r, w) = (row_of(ty), w_row(ty));
                            for (tx, &wv) in w.iter().enumerate() {
                                accumulate_taps::<1, FMA>(out_row, [tap(r, tx)], [wv]);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// [`channel_plane`] compiled for AVX2 + FMA.
///
/// # Safety
/// The CPU must have the AVX2 and FMA instructions.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn channel_plane_avx2(
    padded: &[f32],
    layout: &PaddedLayout,
    shape: &ConvShape,
    weights: &[f32],
    plane: &mut [f32],
) {
    channel_plane::<true>(padded, layout, shape, weights, plane);
}

/// Whether this CPU runs [`channel_plane_avx2`] (detected once).
fn has_avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static DETECTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *DETECTED.get_or_init(|| {
            std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// [`channel_plane`] with fused multiply-adds in AVX2 when `avx2` (which the caller sets
/// only from [`has_avx2_fma`]), in portable code otherwise.
fn plane_for_cpu(
    avx2: bool,
    padded: &[f32],
    layout: &PaddedLayout,
    shape: &ConvShape,
    weights: &[f32],
    plane: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: `avx2` is true only when the CPU reported AVX2 and FMA (`has_avx2_fma`),
        // the instructions `channel_plane_avx2` is compiled for. It indexes only through
        // checked slices, every one inside the padded copy (whose layout covers the last
        // tap of the last output position: `PaddedLayout::new`, and the test
        // `the_padded_copy_covers_every_tap_of_the_last_output`).
        unsafe { channel_plane_avx2(padded, layout, shape, weights, plane) };
        return;
    }
    let _ = avx2;
    channel_plane::<false>(padded, layout, shape, weights, plane);
}

/// `epilogue(conv(x, weight))` for a depthwise convolution (see [`depthwise_applies`]) over
/// the contiguous input `x` (`batch x in_channels x in_len`), written into the zeroed
/// contiguous `out` (`batch x out_channels x out_len`). The caller has checked the bias and
/// residual lengths and that `x` holds the whole input.
pub(crate) fn conv_forward_depthwise(
    x: &[f32],
    weight: &Tensor,
    shape: &ConvShape,
    epilogue: &ConvEpilogue,
    out: &mut [f32],
) -> Result<()> {
    let g = shape.geometry;
    let (in_len, out_len, taps) = (g.in_len(), g.out_len(), g.kernel_len());
    let multiplier = shape.out_channels / shape.groups;
    let weights = weight.gather::<f32>();
    if weights.len() != shape.out_channels * taps {
        return Err(TensorError::InvalidArgument(format!(
            "depthwise convolution: weight holds {} values, expected {} x {taps}",
            weights.len(),
            shape.out_channels
        )));
    }
    if out.len() != shape.batch * shape.out_channels * out_len
        || x.len() < shape.batch * shape.in_channels * in_len
    {
        return Err(TensorError::InvalidArgument(
            "depthwise convolution: input or output buffer of the wrong size".into(),
        ));
    }
    if out_len == 0 {
        return Ok(());
    }
    let layout = PaddedLayout::new(shape);
    let avx2 = has_avx2_fma();
    // One task per (image, output channel) plane; consecutive planes of one input channel
    // (a channel multiplier above 1) share its padded copy.
    let run = |scratch: &mut (Vec<f32>, Option<usize>),
               (plane_index, plane): (usize, &mut [f32])| {
        let (img, oc) = (
            plane_index / shape.out_channels,
            plane_index % shape.out_channels,
        );
        let input_channel = img * shape.in_channels + oc / multiplier;
        if scratch.1 != Some(input_channel) {
            let x_channel = &x[input_channel * in_len..][..in_len];
            fill_padded(x_channel, shape, &layout, &mut scratch.0);
            scratch.1 = Some(input_channel);
        }
        let w = &weights[oc * taps..][..taps];
        plane_for_cpu(avx2, &scratch.0, &layout, shape, w, plane);
        let plane_epilogue = Epilogue {
            axis: ChannelAxis::Rows,
            scale: None,
            shift: epilogue.bias.map(|b| &b[oc..oc + 1]),
            residual: epilogue.residual.map(|r| Residual {
                data: &r[plane_index * out_len..][..out_len],
                row_stride: out_len,
            }),
            residual_after_activation: epilogue.residual_after_activation,
            activation: epilogue.activation,
        };
        plane_epilogue.apply_tile(plane, out_len, 0, 1, 0, out_len);
    };
    let threads = crate::ops::parallel::num_threads();
    let work = out.len().saturating_mul(taps);
    if threads > 1 && work >= crate::ops::parallel::PARALLEL_THRESHOLD {
        out.par_chunks_mut(out_len)
            .enumerate()
            .for_each_init(|| (Vec::new(), None), run);
    } else {
        let mut scratch = (Vec::new(), None);
        out.chunks_mut(out_len)
            .enumerate()
            .for_each(|item| run(&mut scratch, item));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::gemm::Activation;
    use crate::ops::nn::conv::conv_forward;
    use crate::ops::nn::conv::tests::geometry;
    use crate::ops::nn::conv::Geometry;
    use crate::ops::nn::conv_packed::tests::values;

    struct Case {
        batch: usize,
        channels: usize,
        multiplier: usize,
        g: Geometry,
    }

    fn case(batch: usize, channels: usize, multiplier: usize, g: Geometry) -> Case {
        Case {
            batch,
            channels,
            multiplier,
            g,
        }
    }

    /// Depthwise shapes: the models' 3x3 and 5x5 at strides 1 and 2, odd sizes, dilation,
    /// asymmetric padding, a channel multiplier, other kernel widths, 1-D and 3-D.
    fn cases() -> Vec<Case> {
        vec![
            case(
                1,
                8,
                1,
                geometry([1, 12, 12], [1, 3, 3], [1; 3], [1; 3], [0, 1, 1]),
            ),
            case(
                2,
                5,
                1,
                geometry([1, 13, 11], [1, 3, 3], [1, 2, 2], [1; 3], [0, 1, 1]),
            ),
            case(
                1,
                4,
                1,
                geometry([1, 9, 17], [1, 5, 5], [1; 3], [1; 3], [0, 2, 2]),
            ),
            case(
                3,
                3,
                1,
                geometry([1, 15, 14], [1, 5, 5], [1, 2, 2], [1; 3], [0, 2, 2]),
            ),
            case(
                1,
                6,
                2,
                geometry([1, 10, 9], [1, 3, 3], [1; 3], [1, 2, 2], [0, 2, 2]),
            ),
            case(
                2,
                3,
                3,
                geometry([1, 7, 8], [1, 3, 5], [1, 3, 1], [1, 1, 2], [0, 0, 3]),
            ),
            case(
                1,
                4,
                1,
                geometry([1, 6, 7], [1, 2, 4], [1, 1, 3], [1; 3], [0, 1, 0]),
            ),
            case(
                1,
                5,
                1,
                geometry([1, 7, 7], [1, 7, 7], [1, 2, 2], [1; 3], [0, 3, 3]),
            ),
            case(
                2,
                4,
                1,
                geometry([1, 1, 33], [1, 1, 3], [1; 3], [1; 3], [0, 0, 1]),
            ),
            case(
                1,
                3,
                2,
                geometry([4, 5, 6], [3, 3, 3], [1, 1, 2], [1; 3], [1, 1, 1]),
            ),
            case(
                1,
                2,
                1,
                geometry([1, 3, 3], [1, 3, 3], [1; 3], [1; 3], [0, 0, 0]),
            ),
            // Large enough to split across the pool.
            case(
                2,
                32,
                1,
                geometry([1, 28, 28], [1, 3, 3], [1; 3], [1; 3], [0, 1, 1]),
            ),
        ]
    }

    fn shape_of(c: &Case) -> ConvShape<'_> {
        ConvShape {
            batch: c.batch,
            in_channels: c.channels,
            out_channels: c.channels * c.multiplier,
            groups: c.channels,
            geometry: &c.g,
        }
    }

    fn tensors(c: &Case) -> (Tensor, Tensor, Vec<f32>) {
        let g = &c.g;
        let cout = c.channels * c.multiplier;
        let mut x_sizes = vec![c.batch, c.channels];
        x_sizes.extend(g.in_size);
        let mut w_sizes = vec![cout, 1];
        w_sizes.extend(g.kernel);
        let x = Tensor::from_values(values(c.batch * c.channels * g.in_len(), 11), &x_sizes);
        let w = Tensor::from_values(values(cout * g.kernel_len(), 12), &w_sizes);
        (x, w, values(cout, 13))
    }

    fn depthwise(c: &Case, x: &Tensor, w: &Tensor, epilogue: &ConvEpilogue) -> Vec<f32> {
        let shape = shape_of(c);
        assert!(depthwise_applies(&shape));
        let mut out = vec![0f32; c.batch * shape.out_channels * c.g.out_len()];
        x.with_elements::<f32, _>(|xs| conv_forward_depthwise(xs, w, &shape, epilogue, &mut out))
            .unwrap();
        out
    }

    /// The float64 im2col convolution of the same values.
    fn reference(c: &Case, x: &Tensor, w: &Tensor, bias: Option<&[f32]>) -> Vec<f64> {
        let b = bias.map(|b| Tensor::from_values(b.to_vec(), &[b.len()]).to_dtype(DType::Float64));
        conv_forward(
            &x.to_dtype(DType::Float64),
            &w.to_dtype(DType::Float64),
            b.as_ref(),
            c.batch,
            c.channels,
            c.channels * c.multiplier,
            c.channels,
            &c.g,
        )
        .unwrap()
    }

    fn assert_close(got: &[f32], want: &[f64], what: &str) {
        assert_eq!(got.len(), want.len(), "{what}: length");
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()),
                "{what}: element {i} is {g}, expected {w}"
            );
        }
    }

    #[test]
    fn depthwise_matches_the_generic_convolution() {
        for (i, c) in cases().iter().enumerate() {
            let (x, w, b) = tensors(c);
            for bias in [false, true] {
                let epilogue = ConvEpilogue {
                    bias: bias.then_some(&b[..]),
                    ..ConvEpilogue::NONE
                };
                let got = depthwise(c, &x, &w, &epilogue);
                let want = reference(c, &x, &w, bias.then_some(&b[..]));
                assert_close(&got, &want, &format!("case {i}, bias {bias}"));
                // The float32 im2col path too (the one taken before this kernel).
                let bt = Tensor::from_values(b.clone(), &[b.len()]);
                let im2col: Vec<f32> = conv_forward(
                    &x,
                    &w,
                    bias.then_some(&bt),
                    c.batch,
                    c.channels,
                    c.channels * c.multiplier,
                    c.channels,
                    &c.g,
                )
                .unwrap();
                let im2col: Vec<f64> = im2col.iter().map(|&v| v as f64).collect();
                assert_close(&got, &im2col, &format!("case {i}, bias {bias}, im2col"));
            }
        }
    }

    #[test]
    fn depthwise_applies_the_fused_epilogue() {
        for (i, c) in cases().iter().enumerate() {
            let (x, w, b) = tensors(c);
            let total = c.batch * c.channels * c.multiplier * c.g.out_len();
            let residual: Vec<f32> = values(total, 14);
            let want = reference(c, &x, &w, Some(&b));
            for activation in [
                Activation::Relu,
                Activation::Hardswish,
                Activation::Silu,
                Activation::Sigmoid,
            ] {
                for (with_residual, after) in [(false, false), (true, false), (true, true)] {
                    let epilogue = ConvEpilogue {
                        bias: Some(&b),
                        activation,
                        residual: with_residual.then_some(&residual[..]),
                        residual_after_activation: after,
                    };
                    let got = depthwise(c, &x, &w, &epilogue);
                    let act = |v: f64| activation.apply(v as f32) as f64;
                    let expected: Vec<f64> = want
                        .iter()
                        .zip(&residual)
                        .map(|(&v, &r)| match (with_residual, after) {
                            (false, _) => act(v),
                            (true, false) => act(v + r as f64),
                            (true, true) => act(v) + r as f64,
                        })
                        .collect();
                    assert_close(
                        &got,
                        &expected,
                        &format!("case {i}, {activation:?}, residual {with_residual} {after}"),
                    );
                }
            }
        }
    }

    #[test]
    fn the_padded_copy_covers_every_tap_of_the_last_output() {
        // The bounds the unsafe AVX2 call relies on: the slice of the last tap of the last
        // output row ends inside the padded copy, for every case (including the padding
        // after the input that the geometry does not store).
        for (i, c) in cases().iter().enumerate() {
            let shape = shape_of(c);
            let layout = PaddedLayout::new(&shape);
            let g = &c.g;
            let last_row = layout.row_start(
                (g.out_size[0] - 1) * g.stride[0] + (g.kernel[0] - 1) * g.dilation[0],
                (g.out_size[1] - 1) * g.stride[1] + (g.kernel[1] - 1) * g.dilation[1],
            );
            let col = (g.kernel[2] - 1) * g.dilation[2];
            let end = last_row
                + (col % layout.stride) * layout.phase_width
                + col / layout.stride
                + g.out_size[2];
            assert!(end <= layout.len(), "case {i}: {end} > {}", layout.len());
        }
    }

    #[test]
    fn the_fused_and_unfused_planes_agree() {
        // The fused multiply-add body (the one compiled for AVX2 + FMA) differs from the
        // portable one only by rounding, and the run-time choice gives one of the two.
        for c in cases() {
            let shape = shape_of(&c);
            let layout = PaddedLayout::new(&shape);
            let (x, w, _) = tensors(&c);
            let xs = x.gather::<f32>();
            let ws = w.gather::<f32>();
            let mut padded = Vec::new();
            fill_padded(&xs[..c.g.in_len()], &shape, &layout, &mut padded);
            let taps = c.g.kernel_len();
            let mut portable = vec![0f32; c.g.out_len()];
            channel_plane::<false>(&padded, &layout, &shape, &ws[..taps], &mut portable);
            let mut fused = vec![0f32; c.g.out_len()];
            channel_plane::<true>(&padded, &layout, &shape, &ws[..taps], &mut fused);
            let mut dispatched = vec![0f32; c.g.out_len()];
            plane_for_cpu(
                has_avx2_fma(),
                &padded,
                &layout,
                &shape,
                &ws[..taps],
                &mut dispatched,
            );
            let expected = if has_avx2_fma() { &fused } else { &portable };
            assert_eq!(&dispatched, expected);
            for (p, f) in portable.iter().zip(&fused) {
                assert!((p - f).abs() <= 1e-5 * (1.0 + p.abs()), "{p} vs {f}");
            }
        }
    }

    #[test]
    fn a_weight_of_the_wrong_size_is_an_error() {
        let c = &cases()[0];
        let (x, _, _) = tensors(c);
        let w = Tensor::from_values(values(8 * 4, 1), &[8, 1, 1, 2, 2]);
        let shape = shape_of(c);
        let mut out = vec![0f32; c.channels * c.g.out_len()];
        let err = x
            .with_elements::<f32, _>(|xs| {
                conv_forward_depthwise(xs, &w, &shape, &ConvEpilogue::NONE, &mut out)
            })
            .unwrap_err();
        assert!(err.to_string().contains("weight holds 32 values"), "{err}");
    }
}
