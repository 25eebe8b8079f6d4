//! Float32 convolution over the packed GEMM (`crate::gemm`): the weight is packed once into
//! the micro-kernel's panels and cached (one left operand per group), each block of output
//! positions is packed straight from the input into the kernel's panels (an implicit im2col:
//! no im2col matrix is built and then packed again), and the bias, an activation and a
//! residual are applied to each output tile while it is still in cache.
//!
//! Each output element is a fused-multiply-add chain per block of 256 input taps, the blocks
//! added in turn, and the bias added after the last block. The im2col + matrixmultiply path
//! sums in its own kernel's order, so the two agree within float tolerance (the tests check
//! that), not necessarily bit for bit; optimized and unoptimized runs both take this path,
//! so they agree bit for bit.

use rayon::prelude::*;

use super::conv::{im2col_row, with_elements, Geometry};
use super::{conv_depthwise, conv_winograd};
use crate::dtype::DType;
use crate::error::{Result, TensorError};
use crate::gemm::weight_cache::{cached_packing, PackLayout};
use crate::gemm::{
    gemm_block_raw, Activation, ChannelAxis, Epilogue, Kernel, Operand, PackedMatrix, Residual,
    Side, StridedMatrix,
};
use crate::tensor::Tensor;

/// The sizes of one convolution.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConvShape<'a> {
    pub batch: usize,
    pub in_channels: usize,
    pub out_channels: usize,
    pub groups: usize,
    pub geometry: &'a Geometry,
}

/// What runs on each output tile after the product: the bias, then the residual before or
/// after the activation (ResNet's `relu(bn(conv(x)) + identity)` is a residual before a
/// relu).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConvEpilogue<'a> {
    pub bias: Option<&'a [f32]>,
    pub activation: Activation,
    /// A tensor of the output's shape, contiguous.
    pub residual: Option<&'a [f32]>,
    pub residual_after_activation: bool,
}

impl ConvEpilogue<'_> {
    /// Nothing after the product.
    #[cfg(test)]
    pub const NONE: ConvEpilogue<'static> = ConvEpilogue {
        bias: None,
        activation: Activation::Identity,
        residual: None,
        residual_after_activation: false,
    };
}

/// A raw output pointer shared by tasks that write disjoint blocks of one buffer.
#[derive(Clone, Copy)]
struct SharedOut(*mut f32);
// SAFETY: tasks only write through it (in `gemm_block_raw`) to pairwise disjoint blocks of a
// buffer that outlives them; see `conv_forward_packed`.
unsafe impl Send for SharedOut {}
// SAFETY: as above; no task reads what another writes.
unsafe impl Sync for SharedOut {}

/// Whether the packed path takes this convolution: float32 input and weight (any CPU; the
/// portable kernel runs where no vector one does), unless `FERROJIT_PACKED_CONV=off` (read
/// once) asks for the im2col + matrixmultiply path, for side-by-side timing.
pub(crate) fn packed_conv_supported(input: &Tensor, weight: &Tensor) -> bool {
    static ENABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let enabled = *ENABLED
        .get_or_init(|| std::env::var("FERROJIT_PACKED_CONV").map_or(true, |v| v.trim() != "off"));
    enabled && input.dtype() == DType::Float32 && weight.dtype() == DType::Float32
}

/// The weight (`out x in/groups x kernel...`) packed as `groups` left operands for `kernel`,
/// from the cache when it has not changed. A non-contiguous weight (a transposed or sliced
/// view) is read through its strides, so its cache entry is keyed on the view itself and a
/// later call finds it (a contiguous copy would be a new storage each call).
fn packed_weight(
    weight: &Tensor,
    shape: &ConvShape,
    kernel: Kernel,
) -> Result<std::sync::Arc<Vec<PackedMatrix>>> {
    let groups = shape.groups;
    let cout_g = shape.out_channels / groups;
    let k = shape.in_channels / groups * shape.geometry.kernel_len();
    let contiguous = weight.is_contiguous();
    cached_packing(weight, kernel, PackLayout::ConvLeft { groups }, |data| {
        let gathered;
        let data = if contiguous {
            data
        } else {
            gathered = gather_strided(data, weight.sizes(), weight.strides())?;
            &gathered[..]
        };
        (0..groups)
            .map(|grp| {
                let start = grp * cout_g * k;
                let rows = data.get(start..start + cout_g * k).ok_or_else(|| {
                    TensorError::InvalidArgument(format!(
                        "convolution: weight holds {} values, fewer than {} x {k}",
                        data.len(),
                        shape.out_channels
                    ))
                })?;
                let src = StridedMatrix::row_major(rows, cout_g, k)?;
                Ok(PackedMatrix::pack(&src, Side::Left, kernel))
            })
            .collect()
    })
}

/// The values of the view (`sizes`, `strides`) of `data` in logical order. Every offset is
/// checked against `data` first: the view comes from a model file.
fn gather_strided(data: &[f32], sizes: &[usize], strides: &[usize]) -> Result<Vec<f32>> {
    let numel: usize = sizes.iter().product();
    if numel == 0 {
        return Ok(Vec::new());
    }
    let last = sizes.iter().zip(strides).try_fold(0usize, |acc, (&n, &s)| {
        (n - 1).checked_mul(s).and_then(|x| acc.checked_add(x))
    });
    if last.is_none_or(|last| last >= data.len()) {
        return Err(TensorError::InvalidArgument(format!(
            "convolution: weight view of sizes {sizes:?} and strides {strides:?} reaches past \
             its storage of {} values",
            data.len()
        )));
    }
    let mut out = Vec::with_capacity(numel);
    let mut index = vec![0usize; sizes.len()];
    let mut offset = 0usize;
    for _ in 0..numel {
        out.push(data[offset]);
        // Advance the multi-index (last dim fastest), keeping the offset in step.
        for d in (0..sizes.len()).rev() {
            // Wrapping: a size-1 dim may carry any stride, and stepping past its end and
            // back must not overflow; every offset actually read fits (checked above).
            index[d] += 1;
            offset = offset.wrapping_add(strides[d]);
            if index[d] < sizes[d] {
                break;
            }
            offset = offset.wrapping_sub(strides[d].wrapping_mul(sizes[d]));
            index[d] = 0;
        }
    }
    Ok(out)
}

/// Output positions per task when positions are cut into tiles: the packed block of `k`
/// rows stays around 512 KiB, and the count is a multiple of the kernel's tile width.
fn tile_positions(k: usize, out_len: usize, threads: usize, nr: usize) -> usize {
    let target = ((1usize << 17) / k.max(1)).clamp(64, 1024);
    let rounds = out_len.div_ceil(target * threads).max(1);
    out_len
        .div_ceil(rounds * threads)
        .next_multiple_of(nr)
        .max(nr)
}

/// `epilogue(conv(input, weight))` for float32 operands, as a contiguous `batch x
/// out_channels x positions` buffer.
pub(crate) fn conv_forward_packed(
    input: &Tensor,
    weight: &Tensor,
    shape: &ConvShape,
    epilogue: &ConvEpilogue,
) -> Result<Vec<f32>> {
    let g = shape.geometry;
    let batch = shape.batch;
    let (in_len, out_len) = (g.in_len(), g.out_len());
    let total = batch * shape.out_channels * out_len;
    let mut out = vec![0f32; total];
    if total == 0 {
        return Ok(out);
    }
    if let Some(r) = epilogue.residual {
        if r.len() != total {
            return Err(TensorError::InvalidArgument(format!(
                "convolution epilogue: residual holds {} values, the output {total}",
                r.len()
            )));
        }
    }
    if let Some(b) = epilogue.bias {
        if b.len() != shape.out_channels {
            return Err(TensorError::InvalidArgument(format!(
                "convolution: bias holds {} values for {} output channels",
                b.len(),
                shape.out_channels
            )));
        }
    }
    let kernel = Kernel::best();
    if input.dtype() != DType::Float32 {
        return Err(TensorError::TypeMismatch {
            expected: DType::Float32,
            actual: input.dtype(),
        });
    }
    // The input is read in place when it is contiguous (no copy of a whole activation).
    with_elements::<f32, _>(input, |x| {
        if x.len() < batch * shape.in_channels * in_len {
            return Err(TensorError::InvalidArgument(
                "convolution: input holds fewer values than its sizes say".into(),
            ));
        }
        if conv_depthwise::depthwise_applies(shape) {
            conv_depthwise::conv_forward_depthwise(x, weight, shape, epilogue, &mut out)?;
            return Ok(out);
        }
        if conv_winograd::winograd_applies(shape, kernel) {
            conv_winograd::conv_forward_winograd(x, weight, shape, epilogue, kernel, &mut out)?;
            return Ok(out);
        }
        conv_forward_im2col_packed(x, weight, shape, epilogue, kernel, out)
    })
}

/// The implicit-im2col form of [`conv_forward_packed`], over the contiguous input `x`, into
/// the zeroed `out`.
fn conv_forward_im2col_packed(
    x: &[f32],
    weight: &Tensor,
    shape: &ConvShape,
    epilogue: &ConvEpilogue,
    kernel: Kernel,
    mut out: Vec<f32>,
) -> Result<Vec<f32>> {
    let g = shape.geometry;
    let (batch, groups) = (shape.batch, shape.groups);
    let (cin_g, cout_g) = (shape.in_channels / groups, shape.out_channels / groups);
    let k = cin_g * g.kernel_len();
    let (in_len, out_len) = (g.in_len(), g.out_len());
    let total = batch * shape.out_channels * out_len;
    let packed = packed_weight(weight, shape, kernel)?;
    let pointwise = g.kernel == [1, 1, 1]
        && g.stride == [1, 1, 1]
        && g.pad_before == [0, 0, 0]
        && g.in_size == g.out_size;
    // Packs positions j0..j0 + width of one (image, group) as the right operand.
    let pack_block =
        |x_img: &[f32], j0: usize, width: usize, buffer: Vec<f32>, row: &mut Vec<f32>| {
            PackedMatrix::pack_right_from_rows(k, width, kernel, buffer, row, |r, dst| {
                if pointwise {
                    dst.copy_from_slice(&x_img[r * in_len + j0..][..width]);
                } else {
                    im2col_row(x_img, g, r, j0, dst);
                }
            })
        };
    // The epilogue of the block at (image, group), positions j0..j0 + width.
    let block_epilogue = |img: usize, grp: usize, j0: usize| -> Epilogue {
        let c_off = (img * shape.out_channels + grp * cout_g) * out_len + j0;
        Epilogue {
            axis: ChannelAxis::Rows,
            scale: None,
            shift: epilogue.bias.map(|b| &b[grp * cout_g..(grp + 1) * cout_g]),
            residual: epilogue.residual.map(|r| Residual {
                data: &r[c_off..],
                row_stride: out_len,
            }),
            residual_after_activation: epilogue.residual_after_activation,
            activation: epilogue.activation,
        }
    };
    let out_ptr = SharedOut(out.as_mut_ptr());
    let threads = crate::ops::parallel::num_threads();
    let work = total.saturating_mul(k);
    let parallel = threads > 1 && work >= crate::ops::parallel::PARALLEL_THRESHOLD;
    if out_len >= cout_g || !parallel {
        // Tiles of positions: each task packs its own block and computes all its group's
        // output channels for it.
        let tile = tile_positions(k, out_len, if parallel { threads } else { 1 }, kernel.nr());
        let tiles = out_len.div_ceil(tile);
        let items = batch * groups * tiles;
        let run = |scratch: &mut (Vec<f32>, Vec<f32>), item: usize| -> Result<()> {
            let (img_grp, t) = (item / tiles, item % tiles);
            let (img, grp) = (img_grp / groups, img_grp % groups);
            let (j0, j1) = (t * tile, ((t + 1) * tile).min(out_len));
            let x_img = &x[(img * shape.in_channels + grp * cin_g) * in_len..][..cin_g * in_len];
            let buffer = std::mem::take(&mut scratch.0);
            let block = pack_block(x_img, j0, j1 - j0, buffer, &mut scratch.1);
            let c_off = (img * shape.out_channels + grp * cout_g) * out_len + j0;
            let out = out_ptr;
            // SAFETY: rows 0..cout_g at stride out_len from c_off, columns 0..j1 - j0: the
            // last element is c_off + (cout_g - 1) * out_len + (j1 - j0) - 1 < total, inside
            // `out`, which lives until all tasks end. Items are distinct (image, group, tile)
            // triples, so their blocks are disjoint, and nothing else touches `out` meanwhile.
            let result = unsafe {
                gemm_block_raw(
                    Operand::Packed(&packed[grp]),
                    Operand::Packed(&block),
                    0..cout_g,
                    out.0.add(c_off),
                    out_len,
                    &block_epilogue(img, grp, j0),
                )
            };
            scratch.0 = block.into_buffer();
            result
        };
        if parallel && items > 1 {
            (0..items)
                .into_par_iter()
                .try_for_each_init(|| (Vec::new(), Vec::new()), run)?;
        } else {
            let mut scratch = (Vec::new(), Vec::new());
            for item in 0..items {
                run(&mut scratch, item)?;
            }
        }
        return Ok(out);
    }
    // Fewer positions than filters (deep layers): pack all positions of an (image, group)
    // once and split its output channels across the threads, in whole kernel tiles.
    let mr = kernel.mr();
    let rows_per_task = cout_g.div_ceil(threads).next_multiple_of(mr);
    let row_tasks = cout_g.div_ceil(rows_per_task);
    let mut row = Vec::new();
    let mut buffer = Vec::new();
    for img in 0..batch {
        for grp in 0..groups {
            let x_img = &x[(img * shape.in_channels + grp * cin_g) * in_len..][..cin_g * in_len];
            let block = pack_block(x_img, 0, out_len, std::mem::take(&mut buffer), &mut row);
            let weights = &packed[grp];
            (0..row_tasks).into_par_iter().try_for_each(|task| {
                let r0 = task * rows_per_task;
                let rows = rows_per_task.min(cout_g - r0);
                let c_off = (img * shape.out_channels + grp * cout_g + r0) * out_len;
                let out = out_ptr;
                // SAFETY: rows r0..r0 + rows of this (image, group) at stride out_len, all
                // out_len columns: inside `out` (c_off + rows * out_len <= total). Tasks take
                // disjoint row ranges, and nothing else touches `out` meanwhile.
                unsafe {
                    gemm_block_raw(
                        Operand::Packed(weights),
                        Operand::Packed(&block),
                        r0..r0 + rows,
                        out.0.add(c_off),
                        out_len,
                        &block_epilogue(img, grp, 0),
                    )
                }
            })?;
            buffer = block.into_buffer();
        }
    }
    Ok(out)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::ops::nn::conv::conv_forward;
    use crate::ops::nn::conv::tests::geometry;

    /// Deterministic values in [-1, 1) (shared by the sibling convolution modules' tests).
    pub(in crate::ops::nn) fn values(len: usize, seed: u64) -> Vec<f32> {
        let mut state = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        (0..len)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    struct Case {
        batch: usize,
        cin: usize,
        cout: usize,
        groups: usize,
        g: Geometry,
    }

    fn cases() -> Vec<Case> {
        let case = |batch, cin, cout, groups, g| Case {
            batch,
            cin,
            cout,
            groups,
            g,
        };
        vec![
            // 3x3 same padding (ResNet's body), more positions than filters: tiles.
            case(
                1,
                8,
                16,
                1,
                geometry([1, 12, 12], [1, 3, 3], [1; 3], [1; 3], [0, 1, 1]),
            ),
            // Stride 2, 7x7 (a stem), batch 2.
            case(
                2,
                3,
                8,
                1,
                geometry([1, 17, 15], [1, 7, 7], [1, 2, 2], [1; 3], [0, 3, 3]),
            ),
            // Fewer positions than filters, k above one 256-tap block: bands of channels.
            case(
                1,
                40,
                72,
                1,
                geometry([1, 3, 3], [1, 3, 3], [1; 3], [1; 3], [0, 1, 1]),
            ),
            // 1x1 stride 1 (read straight from the input) and 1x1 stride 2.
            case(
                2,
                16,
                24,
                1,
                geometry([1, 5, 7], [1; 3], [1; 3], [1; 3], [0; 3]),
            ),
            case(
                1,
                16,
                24,
                1,
                geometry([1, 6, 6], [1; 3], [1, 2, 2], [1; 3], [0; 3]),
            ),
            // Groups, depthwise, dilation, 3-D and 1-D.
            case(
                2,
                6,
                9,
                3,
                geometry([1, 9, 8], [1, 3, 3], [1; 3], [1, 2, 2], [0, 2, 1]),
            ),
            case(
                1,
                8,
                8,
                8,
                geometry([1, 10, 10], [1, 3, 3], [1; 3], [1; 3], [0, 1, 1]),
            ),
            case(
                1,
                3,
                5,
                1,
                geometry([4, 5, 6], [2, 3, 3], [1, 2, 1], [1; 3], [1, 1, 0]),
            ),
            case(
                3,
                4,
                6,
                2,
                geometry([1, 1, 33], [1, 1, 5], [1, 1, 3], [1, 1, 2], [0, 0, 4]),
            ),
        ]
    }

    fn run(
        case: &Case,
        bias: bool,
        activation: Activation,
        residual: Option<&[f32]>,
        residual_after_activation: bool,
    ) -> (Vec<f32>, Vec<f64>, Vec<f32>) {
        let g = &case.g;
        let k = case.cin / case.groups * g.kernel_len();
        let x = values(case.batch * case.cin * g.in_len(), 1);
        let w = values(case.cout * k, 2);
        let b = values(case.cout, 3);
        let mut w_sizes = vec![case.cout, case.cin / case.groups];
        w_sizes.extend(g.kernel);
        let mut x_sizes = vec![case.batch, case.cin];
        x_sizes.extend(g.in_size);
        let xt = Tensor::from_values(x, &x_sizes);
        let wt = Tensor::from_values(w, &w_sizes);
        let bt = Tensor::from_values(b.clone(), &[case.cout]);
        let shape = ConvShape {
            batch: case.batch,
            in_channels: case.cin,
            out_channels: case.cout,
            groups: case.groups,
            geometry: g,
        };
        let bias_values = bias.then_some(&b[..]);
        let epilogue = ConvEpilogue {
            bias: bias_values,
            activation,
            residual,
            residual_after_activation,
        };
        let packed = conv_forward_packed(&xt, &wt, &shape, &epilogue).unwrap();
        let (x64, w64) = (xt.to_dtype(DType::Float64), wt.to_dtype(DType::Float64));
        let b64 = bt.to_dtype(DType::Float64);
        let reference: Vec<f64> = conv_forward(
            &x64,
            &w64,
            bias.then_some(&b64),
            case.batch,
            case.cin,
            case.cout,
            case.groups,
            g,
        )
        .unwrap();
        let im2col: Vec<f32> = conv_forward(
            &xt,
            &wt,
            bias.then_some(&bt),
            case.batch,
            case.cin,
            case.cout,
            case.groups,
            g,
        )
        .unwrap();
        (packed, reference, im2col)
    }

    fn assert_close(got: &[f32], want: &[f64], what: &str) {
        assert_eq!(got.len(), want.len(), "{what}: length");
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g as f64 - w).abs() <= 1e-4 * (1.0 + w.abs()),
                "{what}: element {i} is {g}, expected {w}"
            );
        }
    }

    #[test]
    fn packed_convolution_matches_the_im2col_path_and_a_float64_reference() {
        // The pool has the machine's threads: the larger cases split across them, the
        // smaller ones (below the pool threshold) run on the calling thread.
        for (i, case) in cases().iter().enumerate() {
            for bias in [false, true] {
                let (packed, reference, im2col) =
                    run(case, bias, Activation::Identity, None, false);
                let what = format!("case {i}, bias {bias}");
                assert_close(&packed, &reference, &what);
                let im2col: Vec<f64> = im2col.iter().map(|&v| v as f64).collect();
                assert_close(&packed, &im2col, &what);
            }
        }
    }

    #[test]
    fn packed_convolution_applies_activation_and_residual_per_tile() {
        for (i, case) in cases().iter().enumerate() {
            let out_len = case.batch * case.cout * case.g.out_len();
            let residual = values(out_len, 4);
            for after in [false, true] {
                let (packed, reference, _) =
                    run(case, true, Activation::Relu, Some(&residual), after);
                let want: Vec<f64> = reference
                    .iter()
                    .zip(&residual)
                    .map(|(&v, &r)| {
                        if after {
                            v.max(0.0) + r as f64
                        } else {
                            (v + r as f64).max(0.0)
                        }
                    })
                    .collect();
                assert_close(&packed, &want, &format!("case {i}, residual after {after}"));
            }
        }
    }

    #[test]
    fn a_non_contiguous_weight_is_read_through_its_strides_and_packed_once() {
        let case = &cases()[0];
        let g = &case.g;
        let x = Tensor::from_values(values(case.cin * g.in_len(), 1), &[1, case.cin, 1, 12, 12]);
        // Stored as in x out x 3 x 3, used transposed.
        let stored = Tensor::from_values(
            values(case.cout * case.cin * 9, 2),
            &[case.cin, case.cout, 1, 3, 3],
        );
        let weight = stored.transpose(0, 1).unwrap();
        assert!(!weight.is_contiguous());
        let shape = ConvShape {
            batch: 1,
            in_channels: case.cin,
            out_channels: case.cout,
            groups: 1,
            geometry: g,
        };
        let kernel = Kernel::best();
        let first = packed_weight(&weight, &shape, kernel).unwrap();
        let second = packed_weight(&weight, &shape, kernel).unwrap();
        assert!(
            std::sync::Arc::ptr_eq(&first, &second),
            "the second call packs again"
        );
        let got = conv_forward_packed(&x, &weight, &shape, &ConvEpilogue::NONE).unwrap();
        let want: Vec<f64> = conv_forward(
            &x.to_dtype(DType::Float64),
            &weight.contiguous().to_dtype(DType::Float64),
            None,
            1,
            case.cin,
            case.cout,
            1,
            g,
        )
        .unwrap();
        assert_close(&got, &want, "transposed weight");
    }

    #[test]
    fn gather_strided_refuses_a_view_past_its_storage() {
        let data = [0f32, 1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(
            gather_strided(&data, &[3, 2], &[1, 3]).unwrap(),
            vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
        );
        let err = gather_strided(&data, &[3, 2], &[2, 3]).unwrap_err();
        assert!(err.to_string().contains("reaches past"), "{err}");
        let err = gather_strided(&data, &[2, 2], &[usize::MAX, 1]).unwrap_err();
        assert!(err.to_string().contains("reaches past"), "{err}");
        // A size-1 dim with a huge stride reads nothing past its first element.
        assert_eq!(
            gather_strided(&data, &[1, 2], &[usize::MAX, 5]).unwrap(),
            vec![0.0, 5.0]
        );
    }

    #[test]
    fn packed_convolution_refuses_a_residual_or_bias_of_the_wrong_size() {
        let case = &cases()[0];
        let residual = vec![0f32; 3];
        let x = Tensor::from_values(
            values(case.cin * case.g.in_len(), 1),
            &[1, case.cin, 1, 12, 12],
        );
        let w = Tensor::from_values(
            values(case.cout * case.cin * 9, 2),
            &[case.cout, case.cin, 1, 3, 3],
        );
        let shape = ConvShape {
            batch: 1,
            in_channels: case.cin,
            out_channels: case.cout,
            groups: 1,
            geometry: &case.g,
        };
        let with_residual = ConvEpilogue {
            residual: Some(&residual),
            ..ConvEpilogue::NONE
        };
        let err = conv_forward_packed(&x, &w, &shape, &with_residual).unwrap_err();
        assert!(err.to_string().contains("residual holds 3 values"), "{err}");
        let bias = vec![0f32; 2];
        let with_bias = ConvEpilogue {
            bias: Some(&bias),
            ..ConvEpilogue::NONE
        };
        let err = conv_forward_packed(&x, &w, &shape, &with_bias).unwrap_err();
        assert!(err.to_string().contains("bias holds 2 values"), "{err}");
    }
}
