//! The input and weight gradients of a non-transposed float32 or float64 convolution as
//! matrix products, per image and group: with `cols = im2col(input)` (`in/groups x taps` rows
//! by output positions), the weight gradient is `grad_output @ cols^T` summed over the batch,
//! and the input gradient is `col2im(weight^T @ grad_output)`, several images side by side in
//! each product. The products run on the
//! threaded GEMM, so a training step's convolutions cost about what their forwards do, where
//! the direct loop of `conv_backward` visits every (tap, position) pair one at a time.
//!
//! The sums run in the input's own dtype in the GEMM's order (as PyTorch's CPU kernels do),
//! so they differ from the direct loop's float64 sum by rounding only.

use super::conv::{col2im, im2col_row, Geometry};
use crate::error::Result;
use crate::ops::linalg::{strided_gemm, FloatGemm};

/// The sizes of one non-transposed convolution, as the backward needs them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BackwardShape<'a> {
    pub batch: usize,
    pub in_channels: usize,
    pub out_channels: usize,
    pub groups: usize,
    pub geometry: &'a Geometry,
}

/// The most elements the column buffers of one block of images hold (16 MiB of float32).
const IMAGE_BLOCK_ELEMENTS: usize = 1 << 22;

/// `(grad_input, grad_weight)` of a non-transposed convolution, each only when asked for,
/// from contiguous `x` (`batch x in x spatial`), `w` (`out x in/groups x kernel`) and
/// `grad_output` (`batch x out x output spatial`).
pub(crate) fn convolution_backward_gemm<T>(
    x: &[T],
    w: &[T],
    grad_output: &[T],
    shape: &BackwardShape,
    want_input: bool,
    want_weight: bool,
) -> Result<(Vec<T>, Vec<T>)>
where
    T: FloatGemm + std::ops::AddAssign,
{
    let g = shape.geometry;
    let (batch, groups) = (shape.batch, shape.groups);
    let (cin_g, cout_g) = (shape.in_channels / groups, shape.out_channels / groups);
    let k = cin_g * g.kernel_len();
    let (in_len, out_len) = (g.in_len(), g.out_len());
    let mut grad_input = vec![T::ZERO; if want_input { x.len() } else { 0 }];
    let mut grad_weight = vec![T::ZERO; if want_weight { w.len() } else { 0 }];
    // Several images go through one product (their positions side by side), as many as keep
    // the column buffer under IMAGE_BLOCK_ELEMENTS: a small convolution's per-image products
    // are too small for the GEMM to run at speed.
    let block = (IMAGE_BLOCK_ELEMENTS / (k * out_len).max(1)).clamp(1, batch.max(1));
    let width = block * out_len;
    let mut cols = vec![T::ZERO; if want_weight { k * width } else { 0 }];
    let mut grad_cols = vec![T::ZERO; if want_input { k * width } else { 0 }];
    let mut image_cols = vec![T::ZERO; if want_input { k * out_len } else { 0 }];
    let mut go_block = vec![T::ZERO; cout_g * width];
    for first in (0..batch).step_by(block) {
        let images = block.min(batch - first);
        let used = images * out_len;
        for grp in 0..groups {
            // The images' output gradients side by side: (cout_g x images * positions).
            for image in 0..images {
                let n = first + image;
                let go = &grad_output[(n * shape.out_channels + grp * cout_g) * out_len..]
                    [..cout_g * out_len];
                for (channel, row) in go.chunks_exact(out_len.max(1)).enumerate() {
                    go_block[channel * used + image * out_len..][..out_len].copy_from_slice(row);
                }
            }
            if want_weight {
                for image in 0..images {
                    let n = first + image;
                    let x_img =
                        &x[(n * shape.in_channels + grp * cin_g) * in_len..][..cin_g * in_len];
                    for row in 0..k {
                        let dst = &mut cols[row * used + image * out_len..][..out_len];
                        im2col_row(x_img, g, row, 0, dst);
                    }
                }
                // (cout_g x positions) @ (positions x k), cols read transposed, added to the
                // sum over the earlier blocks.
                strided_gemm(
                    cout_g,
                    used,
                    k,
                    &go_block[..cout_g * used],
                    (used, 1),
                    &cols[..k * used],
                    (1, used),
                    T::ONE,
                    &mut grad_weight[grp * cout_g * k..][..cout_g * k],
                )?;
            }
            if want_input {
                let w_g = &w[grp * cout_g * k..][..cout_g * k];
                // (k x cout_g) @ (cout_g x positions): the weight read transposed.
                strided_gemm(
                    k,
                    cout_g,
                    used,
                    w_g,
                    (1, k),
                    &go_block[..cout_g * used],
                    (used, 1),
                    T::ZERO,
                    &mut grad_cols[..k * used],
                )?;
                for image in 0..images {
                    let n = first + image;
                    for (row, dst) in image_cols.chunks_exact_mut(out_len.max(1)).enumerate() {
                        dst.copy_from_slice(&grad_cols[row * used + image * out_len..][..out_len]);
                    }
                    let dst = &mut grad_input[(n * shape.in_channels + grp * cin_g) * in_len..]
                        [..cin_g * in_len];
                    col2im(&image_cols, cin_g, g, dst);
                }
            }
        }
    }
    Ok((grad_input, grad_weight))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packed convolution tests' deterministic values in [-1, 1), widened.
    fn values(len: usize, seed: u64) -> Vec<f64> {
        crate::ops::nn::conv_packed::tests::values(len, seed)
            .into_iter()
            .map(f64::from)
            .collect()
    }

    /// The gradients by their definition: every (output position, tap) pair the forward
    /// multiplied, one at a time.
    fn by_definition(
        x: &[f64],
        w: &[f64],
        go: &[f64],
        shape: &BackwardShape,
    ) -> (Vec<f64>, Vec<f64>) {
        let g = shape.geometry;
        let (cin_g, cout_g) = (
            shape.in_channels / shape.groups,
            shape.out_channels / shape.groups,
        );
        let (in_len, out_len, k_len) = (g.in_len(), g.out_len(), g.kernel_len());
        let mut gi = vec![0.0; x.len()];
        let mut gw = vec![0.0; w.len()];
        for n in 0..shape.batch {
            for co in 0..shape.out_channels {
                let grp = co / cout_g;
                for ic in 0..cin_g {
                    let ci = grp * cin_g + ic;
                    for tap in 0..k_len {
                        let kk = [
                            tap / (g.kernel[1] * g.kernel[2]),
                            tap / g.kernel[2] % g.kernel[1],
                            tap % g.kernel[2],
                        ];
                        for pos in 0..out_len {
                            let p = [
                                pos / (g.out_size[1] * g.out_size[2]),
                                pos / g.out_size[2] % g.out_size[1],
                                pos % g.out_size[2],
                            ];
                            let mut at = 0usize;
                            let mut inside = true;
                            for d in 0..3 {
                                let i = (p[d] * g.stride[d] + kk[d] * g.dilation[d]) as isize
                                    - g.pad_before[d] as isize;
                                if i < 0 || i >= g.in_size[d] as isize {
                                    inside = false;
                                }
                                at = at * g.in_size[d] + i.max(0) as usize;
                            }
                            if !inside {
                                continue;
                            }
                            let xi = (n * shape.in_channels + ci) * in_len + at;
                            let wi = (co * cin_g + ic) * k_len + tap;
                            let gv = go[(n * shape.out_channels + co) * out_len + pos];
                            gi[xi] += gv * w[wi];
                            gw[wi] += gv * x[xi];
                        }
                    }
                }
            }
        }
        (gi, gw)
    }

    #[test]
    fn gemm_gradients_equal_the_definition() {
        // (batch, in, out, groups, in_size, kernel, stride, dilation, padding, out_size)
        let cases = [
            (
                2,
                3,
                4,
                1,
                [1, 7, 6],
                [1, 3, 3],
                [1, 1, 1],
                [1, 1, 1],
                [0, 1, 1],
                [1, 7, 6],
            ),
            (
                1,
                4,
                6,
                2,
                [1, 9, 8],
                [1, 3, 2],
                [1, 2, 3],
                [1, 2, 1],
                [0, 2, 0],
                [1, 5, 3],
            ),
            (
                2,
                2,
                3,
                1,
                [4, 5, 5],
                [2, 2, 3],
                [1, 2, 1],
                [1, 1, 2],
                [1, 0, 2],
                [5, 2, 5],
            ),
            (
                3,
                4,
                4,
                4,
                [1, 1, 11],
                [1, 1, 3],
                [1, 1, 2],
                [1, 1, 1],
                [0, 0, 1],
                [1, 1, 6],
            ),
        ];
        for (i, (batch, cin, cout, groups, in_size, kernel, stride, dilation, pad, out_size)) in
            cases.into_iter().enumerate()
        {
            let g = Geometry {
                in_size,
                kernel,
                stride,
                dilation,
                pad_before: pad,
                out_size,
            };
            let shape = BackwardShape {
                batch,
                in_channels: cin,
                out_channels: cout,
                groups,
                geometry: &g,
            };
            let x = values(batch * cin * g.in_len(), 1);
            let w = values(cout * cin / groups * g.kernel_len(), 2);
            let go = values(batch * cout * g.out_len(), 3);
            let (want_i, want_w) = by_definition(&x, &w, &go, &shape);
            let (gi, gw) = convolution_backward_gemm(&x, &w, &go, &shape, true, true).unwrap();
            for (got, want, what) in [(&gi, &want_i, "input"), (&gw, &want_w, "weight")] {
                assert_eq!(got.len(), want.len());
                for (j, (a, b)) in got.iter().zip(want.iter()).enumerate() {
                    assert!((a - b).abs() < 1e-12, "case {i} {what} {j}: {a} vs {b}");
                }
            }
            // Float32 within float tolerance, and only what was asked for.
            let f = |v: &[f64]| v.iter().map(|&v| v as f32).collect::<Vec<f32>>();
            let (gi32, gw32) =
                convolution_backward_gemm(&f(&x), &f(&w), &f(&go), &shape, false, true).unwrap();
            assert!(gi32.is_empty());
            for (a, b) in gw32.iter().zip(&want_w) {
                assert!(
                    (f64::from(*a) - b).abs() < 1e-4 * (1.0 + b.abs()),
                    "case {i}"
                );
            }
        }
    }
}
