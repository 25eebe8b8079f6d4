//! Convolution (`conv1d/2d/3d`, `conv_transpose1d/2d/3d`, `aten::convolution`) by im2col (or
//! col2im for transposed) plus the threaded GEMM. 1-D and 2-D problems are lifted to 3-D with
//! size-1 leading spatial dims so one kernel serves every rank.

use rayon::prelude::*;

use super::{expand_param, invalid, require_float};
use crate::dtype::DType;
use crate::error::{format_shape, Result};
use crate::ops::linalg::{strided_gemm, FloatGemm};
use crate::tensor::Tensor;

/// The `padding` argument of a convolution: explicit sizes or one of the string modes.
#[derive(Debug, Clone, PartialEq)]
pub enum ConvPadding {
    Explicit(Vec<i64>),
    Same,
    Valid,
}

/// Geometry of one (lifted to 3-D) convolution.
#[derive(Debug, Clone)]
pub(crate) struct Geometry {
    pub(crate) in_size: [usize; 3],
    pub(crate) kernel: [usize; 3],
    pub(crate) stride: [usize; 3],
    pub(crate) dilation: [usize; 3],
    pub(crate) pad_before: [usize; 3],
    pub(crate) out_size: [usize; 3],
}

impl Geometry {
    pub(crate) fn kernel_len(&self) -> usize {
        self.kernel.iter().product()
    }
    pub(crate) fn out_len(&self) -> usize {
        self.out_size.iter().product()
    }
    pub(crate) fn in_len(&self) -> usize {
        self.in_size.iter().product()
    }
}

fn lift(values: &[usize], fill: usize) -> [usize; 3] {
    let mut out = [fill; 3];
    let offset = 3 - values.len();
    out[offset..].copy_from_slice(values);
    out
}

/// Fills one im2col row (input channel `c` at kernel offset `(kd, kh, kw)`, numbered `row`)
/// for the output positions `j0..j0 + dst.len()`: zeros where the tap falls in the padding, a
/// copy (or strided gather) of the input line elsewhere.
pub(crate) fn im2col_row<T: FloatGemm>(
    input: &[T],
    g: &Geometry,
    row: usize,
    j0: usize,
    dst: &mut [T],
) {
    let k_len = g.kernel_len();
    let in_len = g.in_len();
    let [id_, ih_, iw_] = g.in_size;
    let [_, kh_, kw_] = g.kernel;
    let [_, oh_, ow_] = g.out_size;
    let (c, k) = (row / k_len, row % k_len);
    let (kd, kh, kw) = (k / (kh_ * kw_), (k / kw_) % kh_, k % kw_);
    let src = &input[c * in_len..(c + 1) * in_len];
    // Output columns ow whose input column ow * s + off - p lies inside 0..iw_ form lo..hi.
    let (s, off, p) = (g.stride[2], kw * g.dilation[2], g.pad_before[2]);
    let lo = if off >= p { 0 } else { (p - off).div_ceil(s) }.min(ow_);
    let hi = if iw_ + p > off {
        ((iw_ + p - off - 1) / s + 1).min(ow_)
    } else {
        0
    }
    .max(lo);
    let end = j0 + dst.len();
    let mut j = j0;
    while j < end {
        let (r, ow0) = (j / ow_, j % ow_);
        let (od, oh) = (r / oh_, r % oh_);
        let run = (ow_ - ow0).min(end - j);
        let seg = &mut dst[j - j0..j - j0 + run];
        j += run;
        let id = (od * g.stride[0] + kd * g.dilation[0]) as isize - g.pad_before[0] as isize;
        let ih = (oh * g.stride[1] + kh * g.dilation[1]) as isize - g.pad_before[1] as isize;
        if id < 0 || id >= id_ as isize || ih < 0 || ih >= ih_ as isize {
            seg.fill(T::ZERO);
            continue;
        }
        let plane = (id as usize * ih_ + ih as usize) * iw_;
        let line = &src[plane..plane + iw_];
        let (a, b) = (
            lo.clamp(ow0, ow0 + run) - ow0,
            hi.clamp(ow0, ow0 + run) - ow0,
        );
        seg[..a].fill(T::ZERO);
        seg[b.max(a)..].fill(T::ZERO);
        if a < b {
            let first = (a + ow0) * s + off - p;
            let mid = &mut seg[a..b];
            if s == 1 {
                mid.copy_from_slice(&line[first..first + mid.len()]);
            } else {
                for (i, v) in mid.iter_mut().enumerate() {
                    *v = line[first + i * s];
                }
            }
        }
    }
}

/// im2col of the output positions `j0..j1` for one image and one group:
/// `cols[(c, kd, kh, kw), j - j0]`, rows `j1 - j0` long.
fn im2col_tile<T: FloatGemm>(
    input: &[T],
    channels: usize,
    g: &Geometry,
    j0: usize,
    j1: usize,
    cols: &mut [T],
) {
    let nt = j1 - j0;
    if nt == 0 {
        return;
    }
    let rows = channels * g.kernel_len();
    for (row, dst) in cols[..rows * nt].chunks_mut(nt).enumerate() {
        im2col_row(input, g, row, j0, dst);
    }
}

/// im2col for one image and one group: `cols[(c, kd, kh, kw), (od, oh, ow)]`.
fn im2col<T: FloatGemm>(input: &[T], channels: usize, g: &Geometry, cols: &mut [T]) {
    let out_len = g.out_len();
    let rows = channels * g.kernel_len();
    if out_len == 0 {
        return;
    }
    if rows * out_len >= crate::ops::parallel::PARALLEL_THRESHOLD {
        cols[..rows * out_len]
            .par_chunks_mut(out_len)
            .enumerate()
            .for_each(|(row, dst)| im2col_row(input, g, row, 0, dst));
    } else {
        im2col_tile(input, channels, g, 0, out_len, cols);
    }
}

/// col2im for transposed convolution: adds `cols[(c, k), input position]` into `out[c, ...]`.
/// Here `g.in_size` is the transposed conv's output (the scatter target) and `g.out_size` its
/// input (the positions the columns are indexed by).
pub(super) fn col2im<T: FloatGemm + std::ops::AddAssign>(
    cols: &[T],
    channels: usize,
    g: &Geometry,
    out: &mut [T],
) {
    let k_len = g.kernel_len();
    let pos_len = g.out_len();
    let img_len = g.in_len();
    let [id_, ih_, iw_] = g.in_size;
    let [_, kh_, kw_] = g.kernel;
    let [pd_, ph_, pw_] = g.out_size;
    for c in 0..channels {
        let dst = &mut out[c * img_len..(c + 1) * img_len];
        for k in 0..k_len {
            let (kd, kh, kw) = (k / (kh_ * kw_), (k / kw_) % kh_, k % kw_);
            let src = &cols[(c * k_len + k) * pos_len..(c * k_len + k + 1) * pos_len];
            for pd in 0..pd_ {
                let od =
                    (pd * g.stride[0] + kd * g.dilation[0]) as isize - g.pad_before[0] as isize;
                if od < 0 || od >= id_ as isize {
                    continue;
                }
                for ph in 0..ph_ {
                    let oh =
                        (ph * g.stride[1] + kh * g.dilation[1]) as isize - g.pad_before[1] as isize;
                    if oh < 0 || oh >= ih_ as isize {
                        continue;
                    }
                    let base = (od as usize * ih_ + oh as usize) * iw_;
                    for pw in 0..pw_ {
                        let ow = (pw * g.stride[2] + kw * g.dilation[2]) as isize
                            - g.pad_before[2] as isize;
                        if ow >= 0 && (ow as usize) < iw_ {
                            dst[base + ow as usize] += src[(pd * ph_ + ph) * pw_ + pw];
                        }
                    }
                }
            }
        }
    }
}

/// Calls `f` with the tensor's elements in logical order as `T` ([`Tensor::with_elements`]).
pub(super) fn with_elements<T: crate::element::Element, R>(
    t: &Tensor,
    f: impl FnOnce(&[T]) -> R,
) -> R {
    t.with_elements(f)
}

/// Output columns (positions) per GEMM tile: the im2col tile of `k` rows stays around 512 KiB
/// so it is still cached when the GEMM packs it.
fn tile_columns(k: usize, out_len: usize, threads: usize) -> usize {
    let target = ((1usize << 17) / k.max(1)).clamp(64, 1024);
    // Split into a multiple of the thread count so the tiles share out evenly.
    let rounds = out_len.div_ceil(target * threads).max(1);
    out_len
        .div_ceil(rounds * threads)
        .next_multiple_of(8)
        .max(8)
}

/// A raw output pointer shared by tasks that write disjoint parts of one buffer.
#[derive(Clone, Copy)]
struct SharedOut<T>(*mut T);
// SAFETY: the pointer is only dereferenced (through `raw_gemm`) by tasks writing pairwise
// disjoint elements of a buffer that outlives them (see `conv_tiled`).
unsafe impl<T: Send> Send for SharedOut<T> {}
// SAFETY: as above; no task reads what another writes.
unsafe impl<T: Send> Sync for SharedOut<T> {}

/// Convolution with the output columns cut into tiles: each task builds the im2col block of one
/// (image, group, tile) and multiplies it straight into that block of the output. Each thread
/// packs only its own columns, which pays off when there are more positions than filters.
#[allow(clippy::too_many_arguments)]
fn conv_tiled<T: FloatGemm + std::ops::AddAssign>(
    x: &[T],
    w: &[T],
    b: Option<&[T]>,
    batch: usize,
    in_channels: usize,
    out_channels: usize,
    groups: usize,
    g: &Geometry,
    pointwise: bool,
    tile: usize,
    out: &mut [T],
) {
    let (cin_g, cout_g) = (in_channels / groups, out_channels / groups);
    let k = cin_g * g.kernel_len();
    let (in_len, out_len) = (g.in_len(), g.out_len());
    let tiles = out_len.div_ceil(tile);
    let items = batch * groups * tiles;
    assert!(x.len() >= batch * in_channels * in_len && w.len() >= out_channels * k);
    assert!(out.len() == batch * out_channels * out_len);
    let out_ptr = SharedOut(out.as_mut_ptr());
    let run = |cols: &mut Vec<T>, item: usize| {
        let (img, t) = (item / tiles, item % tiles);
        let (n, grp) = (img / groups, img % groups);
        let (j0, j1) = (t * tile, ((t + 1) * tile).min(out_len));
        let nt = j1 - j0;
        let x_img = &x[(n * in_channels + grp * cin_g) * in_len..][..cin_g * in_len];
        let (rhs, rhs_rs): (&[T], usize) = if pointwise {
            (&x_img[j0..], in_len)
        } else {
            cols.resize(k * nt, T::ZERO);
            im2col_tile(x_img, cin_g, g, j0, j1, cols);
            (&cols[..], nt)
        };
        let w_g = &w[grp * cout_g * k..][..cout_g * k];
        let c_off = (n * out_channels + grp * cout_g) * out_len + j0;
        // Bounds, checked here because the GEMM only sees pointers: the last element read from
        // `rhs` is ((k - 1) * rhs_rs + nt - 1), and the last written is c_off + (cout_g - 1) *
        // out_len + nt - 1 < batch * out_channels * out_len.
        assert!(k == 0 || (k - 1) * rhs_rs + nt <= rhs.len());
        assert!(c_off + (cout_g - 1) * out_len + nt <= batch * out_channels * out_len);
        let c = out_ptr;
        // SAFETY: the asserts above keep every access inside `w_g`, `rhs` and `out`. Items are
        // distinct (image, group, column range) triples, so each writes a disjoint set of
        // output elements (rows of its group, columns j0..j1), and nothing else reads `out`
        // while the tasks run; `rhs` and `w_g` are never written.
        unsafe {
            T::raw_gemm(
                cout_g,
                k,
                nt,
                w_g.as_ptr(),
                k as isize,
                1,
                rhs.as_ptr(),
                rhs_rs as isize,
                1,
                T::ZERO,
                c.0.add(c_off),
                out_len as isize,
            );
        }
        if let Some(b) = b {
            for co in 0..cout_g {
                let bias = b[grp * cout_g + co];
                let row = c_off + co * out_len;
                // SAFETY: row..row + nt lies inside this item's disjoint output block (asserted
                // above), which only this task touches.
                let row = unsafe { std::slice::from_raw_parts_mut(c.0.add(row), nt) };
                for v in row {
                    *v += bias;
                }
            }
        }
    };
    let threads = crate::ops::parallel::num_threads();
    let work = batch * out_channels * out_len * k;
    if threads > 1 && items > 1 && work >= crate::ops::parallel::PARALLEL_THRESHOLD {
        (0..items)
            .into_par_iter()
            .for_each_init(Vec::new, |cols, item| run(cols, item));
    } else {
        let mut cols = Vec::new();
        for item in 0..items {
            run(&mut cols, item);
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn conv_forward<T: FloatGemm + std::ops::AddAssign + crate::element::Element>(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    batch: usize,
    in_channels: usize,
    out_channels: usize,
    groups: usize,
    g: &Geometry,
) -> Result<Vec<T>> {
    let mut out = vec![T::ZERO; batch * out_channels * g.out_len()];
    if out.is_empty() {
        return Ok(out);
    }
    let b: Option<Vec<T>> = bias.map(|b| b.gather::<T>());
    let pointwise = g.kernel == [1, 1, 1]
        && g.stride == [1, 1, 1]
        && g.pad_before == [0, 0, 0]
        && g.in_size == g.out_size;
    let (cin_g, cout_g) = (in_channels / groups, out_channels / groups);
    let k = cin_g * g.kernel_len();
    let threads = crate::ops::parallel::num_threads();
    with_elements(input, |x: &[T]| {
        let mut run = |w: &[T]| -> Result<()> {
            if g.out_len() >= cout_g || threads == 1 {
                let tile = tile_columns(k, g.out_len(), threads);
                conv_tiled(
                    x,
                    w,
                    b.as_deref(),
                    batch,
                    in_channels,
                    out_channels,
                    groups,
                    g,
                    pointwise,
                    tile,
                    &mut out,
                );
                Ok(())
            } else {
                conv_by_rows(
                    x,
                    w,
                    b.as_deref(),
                    batch,
                    in_channels,
                    out_channels,
                    groups,
                    g,
                    pointwise,
                    &mut out,
                )
            }
        };
        // Two read guards on one lock could deadlock against a waiting writer.
        if weight.shares_storage(input) {
            run(&weight.gather::<T>())
        } else {
            with_elements(weight, run)
        }
    })?;
    Ok(out)
}

/// Convolution as one full im2col per (image, group) and a GEMM split by output channels:
/// better than tiling positions when there are fewer positions than filters (deep layers).
#[allow(clippy::too_many_arguments)]
fn conv_by_rows<T: FloatGemm + std::ops::AddAssign + crate::element::Element>(
    x: &[T],
    w: &[T],
    b: Option<&[T]>,
    batch: usize,
    in_channels: usize,
    out_channels: usize,
    groups: usize,
    g: &Geometry,
    pointwise: bool,
    out: &mut [T],
) -> Result<()> {
    let (cin_g, cout_g) = (in_channels / groups, out_channels / groups);
    let k_len = g.kernel_len();
    let (in_len, out_len) = (g.in_len(), g.out_len());
    let mut cols = if pointwise {
        Vec::new()
    } else {
        vec![T::ZERO; cin_g * k_len * out_len]
    };
    for n in 0..batch {
        for grp in 0..groups {
            let x_off = (n * in_channels + grp * cin_g) * in_len;
            let x_img = &x[x_off..x_off + cin_g * in_len];
            let rhs: &[T] = if pointwise {
                x_img
            } else {
                im2col(x_img, cin_g, g, &mut cols);
                &cols
            };
            let w_g = &w[grp * cout_g * cin_g * k_len..(grp + 1) * cout_g * cin_g * k_len];
            let o_off = (n * out_channels + grp * cout_g) * out_len;
            let o = &mut out[o_off..o_off + cout_g * out_len];
            if let Some(b) = b {
                for (co, row) in o.chunks_mut(out_len.max(1)).enumerate() {
                    row.fill(b[grp * cout_g + co]);
                }
            }
            let beta = if b.is_some() {
                T::from_f64(1.0)
            } else {
                T::ZERO
            };
            strided_gemm(
                cout_g,
                cin_g * k_len,
                out_len,
                w_g,
                (cin_g * k_len, 1),
                rhs,
                (out_len, 1),
                beta,
                o,
            )?;
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn conv_transpose_forward<T: FloatGemm + std::ops::AddAssign + crate::element::Element>(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    batch: usize,
    in_channels: usize,
    out_channels: usize,
    groups: usize,
    g: &Geometry,
) -> Result<Vec<T>> {
    // Here g.in_size is the OUTPUT image and g.out_size the INPUT positions (see col2im).
    let x: Vec<T> = input.gather::<T>();
    let w: Vec<T> = weight.gather::<T>();
    let (cin_g, cout_g) = (in_channels / groups, out_channels / groups);
    let k_len = g.kernel_len();
    let (img_len, pos_len) = (g.in_len(), g.out_len());
    let mut out = vec![T::ZERO; batch * out_channels * img_len];
    let mut cols = vec![T::ZERO; cout_g * k_len * pos_len];
    for n in 0..batch {
        for grp in 0..groups {
            let x_off = (n * in_channels + grp * cin_g) * pos_len;
            let x_img = &x[x_off..x_off + cin_g * pos_len];
            // weight[grp]: [cin_g, cout_g * k_len]; we need its transpose times x.
            let w_g = &w[grp * cin_g * cout_g * k_len..(grp + 1) * cin_g * cout_g * k_len];
            strided_gemm(
                cout_g * k_len,
                cin_g,
                pos_len,
                w_g,
                (1, cout_g * k_len),
                x_img,
                (pos_len, 1),
                T::ZERO,
                &mut cols,
            )?;
            let o_off = (n * out_channels + grp * cout_g) * img_len;
            col2im(&cols, cout_g, g, &mut out[o_off..o_off + cout_g * img_len]);
        }
    }
    if let Some(bias) = bias {
        let b: Vec<T> = bias.gather::<T>();
        for (i, chunk) in out.chunks_mut(img_len.max(1)).enumerate() {
            let bv = b[i % out_channels];
            for v in chunk {
                *v += bv;
            }
        }
    }
    Ok(out)
}

/// `aten::convolution` / `aten::_convolution`: the general entry point.
#[allow(clippy::too_many_arguments)]
pub fn convolution(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &ConvPadding,
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
    groups: i64,
) -> Result<Tensor> {
    let out = convolution_with_epilogue(
        input,
        weight,
        bias,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
        &TensorEpilogue::NONE,
    )?;
    Ok(out.expect("a convolution without an epilogue always runs"))
}

/// What follows a convolution in [`convolution_epilogue`]: an activation, and a residual
/// added before it (`act(conv + r)`) or after it (`act(conv) + r`).
#[derive(Debug, Clone, Copy)]
pub struct TensorEpilogue<'a> {
    pub activation: crate::gemm::Activation,
    pub residual: Option<&'a Tensor>,
    pub residual_after_activation: bool,
}

impl TensorEpilogue<'_> {
    /// Nothing after the convolution.
    pub const NONE: TensorEpilogue<'static> = TensorEpilogue {
        activation: crate::gemm::Activation::Identity,
        residual: None,
        residual_after_activation: false,
    };

    fn is_none(&self) -> bool {
        self.activation == crate::gemm::Activation::Identity && self.residual.is_none()
    }
}

/// `epilogue(convolution(...))` computed in one pass over each output tile (the packed
/// float32 path), or `Ok(None)` when that path does not take these operands (another dtype,
/// a transposed convolution, a residual that is not float32 of exactly the output's shape,
/// or `FERROJIT_PACKED_CONV=off`): the caller then runs the operators one by one. Argument
/// errors are the convolution's own.
#[allow(clippy::too_many_arguments)]
pub fn convolution_epilogue(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &ConvPadding,
    dilation: &[i64],
    groups: i64,
    epilogue: &TensorEpilogue,
) -> Result<Option<Tensor>> {
    if !super::conv_packed::packed_conv_supported(input, weight)
        || epilogue
            .residual
            .is_some_and(|r| r.dtype() != DType::Float32)
    {
        return Ok(None);
    }
    convolution_with_epilogue(
        input,
        weight,
        bias,
        stride,
        padding,
        dilation,
        false,
        &[0],
        groups,
        epilogue,
    )
}

#[allow(clippy::too_many_arguments)]
fn convolution_with_epilogue(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &ConvPadding,
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
    groups: i64,
    epilogue: &TensorEpilogue,
) -> Result<Option<Tensor>> {
    let spatial = weight.dim().saturating_sub(2);
    if !(1..=3).contains(&spatial) {
        return Err(invalid(format!(
            "Expected 3D, 4D or 5D weight for convolution, but got weight of size {}",
            format_shape(weight.sizes())
        )));
    }
    // Unbatched input: add the batch dim and drop it again at the end.
    let unbatched = input.dim() == spatial + 1;
    if input.dim() != spatial + 2 && !unbatched {
        return Err(invalid(format!(
            "Expected {}D (unbatched) or {}D (batched) input to conv{}d, but got input of size: {}",
            spatial + 1,
            spatial + 2,
            spatial,
            format_shape(input.sizes())
        )));
    }
    let input = if unbatched {
        input.unsqueeze(0)?
    } else {
        input.clone()
    };
    if input.dtype() != weight.dtype() {
        return Err(invalid(format!(
            "Input type ({}) and weight type ({}) should be the same",
            input.dtype().scalar_type_name(),
            weight.dtype().scalar_type_name()
        )));
    }
    if let Some(b) = bias {
        if b.dtype() != input.dtype() {
            return Err(invalid(format!(
                "Input type ({}) and bias type ({}) should be the same",
                input.dtype().scalar_type_name(),
                b.dtype().scalar_type_name()
            )));
        }
    }
    // PyTorch's slow (im2col/vol2col) kernels also take integer tensors: every integer
    // dtype forward, only int64 transposed. They are computed here in f64, exact while the
    // products and sums stay below 2^53.
    let integral =
        input.dtype().is_integral(false) && (!transposed || input.dtype() == DType::Int64);
    let dtype = if integral {
        input.dtype()
    } else {
        let kernel_name = match (transposed, spatial) {
            (true, 3) => "slow_conv_transpose3d_out_cpu",
            (true, _) => "slow_conv_transpose2d_out_cpu",
            (false, 3) => "compute_columns3d",
            (false, _) => "slow_conv2d_cpu",
        };
        require_float(&input, kernel_name)?
    };
    if groups <= 0 {
        return Err(invalid("non-positive groups is not supported"));
    }
    let groups = groups as usize;
    let stride = expand_param(stride, spatial, "stride", false)?;
    let dilation = expand_param(dilation, spatial, "dilation", false)?;
    let batch = input.sizes()[0];
    let in_channels = input.sizes()[1];
    let in_spatial = &input.sizes()[2..];
    let kernel = &weight.sizes()[2..];
    let (out_channels, weight_in) = if transposed {
        (weight.sizes()[1] * groups, weight.sizes()[0])
    } else {
        (weight.sizes()[0], weight.sizes()[1] * groups)
    };
    if in_channels != weight_in || (!transposed && out_channels % groups != 0) {
        return Err(invalid(format!(
            "Given groups={groups}, weight of size {}, expected input{} to have {} channels, but got {in_channels} channels instead",
            format_shape(weight.sizes()),
            format_shape(input.sizes()),
            weight_in
        )));
    }
    if in_channels % groups != 0 {
        return Err(invalid(format!(
            "Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got weight of size {} instead",
            format_shape(weight.sizes())
        )));
    }
    if let Some(b) = bias {
        if b.dim() != 1 || b.sizes()[0] != out_channels {
            return Err(invalid(format!(
                "Given weight of size {}, expected bias to be 1-dimensional with {out_channels} elements, but got bias of size {} instead",
                format_shape(weight.sizes()),
                format_shape(b.sizes())
            )));
        }
    }
    let (pad_before, pad_after): (Vec<usize>, Vec<usize>) = match padding {
        ConvPadding::Explicit(p) => {
            let p = expand_param(p, spatial, "padding", true)?;
            (p.clone(), p)
        }
        ConvPadding::Valid => (vec![0; spatial], vec![0; spatial]),
        ConvPadding::Same => {
            if transposed {
                return Err(invalid(
                    "padding='same' is not supported for transposed convolution",
                ));
            }
            if stride.iter().any(|&s| s != 1) {
                return Err(invalid(
                    "padding='same' is not supported for strided convolutions",
                ));
            }
            let total: Vec<usize> = (0..spatial)
                .map(|i| dilation[i] * (kernel[i] - 1))
                .collect();
            (
                total.iter().map(|t| t / 2).collect(),
                total.iter().map(|t| t - t / 2).collect(),
            )
        }
    };
    let mut out_spatial = Vec::with_capacity(spatial);
    if transposed {
        let output_padding = expand_param(output_padding, spatial, "output_padding", true)?;
        for i in 0..spatial {
            if output_padding[i] >= stride[i] && output_padding[i] >= dilation[i] {
                return Err(invalid(
                    "output padding must be smaller than either stride or dilation",
                ));
            }
            let full = (in_spatial[i].saturating_sub(1)) * stride[i]
                + dilation[i] * (kernel[i].saturating_sub(1))
                + output_padding[i]
                + 1;
            if full < pad_before[i] + pad_after[i] + 1 || in_spatial[i] == 0 {
                return Err(invalid(format!(
                    "Given input size per channel: {}. Calculated output size per channel is too small",
                    format_shape(in_spatial)
                )));
            }
            out_spatial.push(full - pad_before[i] - pad_after[i]);
        }
    } else {
        for i in 0..spatial {
            let padded = in_spatial[i] + pad_before[i] + pad_after[i];
            let extent = dilation[i] * (kernel[i].saturating_sub(1)) + 1;
            if padded < extent {
                return Err(invalid(format!(
                    "Calculated padded input size per channel: ({}). Kernel size: ({}). Kernel size can't be greater than actual input size",
                    (0..spatial)
                        .map(|d| (in_spatial[d] + pad_before[d] + pad_after[d]).to_string())
                        .collect::<Vec<_>>()
                        .join(" x "),
                    kernel.iter().map(|k| k.to_string()).collect::<Vec<_>>().join(" x ")
                )));
            }
            out_spatial.push((padded - extent) / stride[i] + 1);
        }
    }
    let geometry = if transposed {
        Geometry {
            in_size: lift(&out_spatial, 1),
            kernel: lift(kernel, 1),
            stride: lift(&stride, 1),
            dilation: lift(&dilation, 1),
            pad_before: lift(&pad_before, 0),
            out_size: lift(in_spatial, 1),
        }
    } else {
        Geometry {
            in_size: lift(in_spatial, 1),
            kernel: lift(kernel, 1),
            stride: lift(&stride, 1),
            dilation: lift(&dilation, 1),
            pad_before: lift(&pad_before, 0),
            out_size: lift(&out_spatial, 1),
        }
    };
    let mut out_sizes = vec![batch, out_channels];
    out_sizes.extend(&out_spatial);
    crate::shape::checked_numel(&out_sizes)?;
    let run =
        |t: &Tensor, w: &Tensor, b: Option<&Tensor>, as_f64: bool| -> Result<Option<Tensor>> {
            if !as_f64 && !epilogue.is_none() && !super::conv_packed::packed_conv_supported(t, w) {
                return Ok(None);
            }
            if as_f64 {
                if !epilogue.is_none() {
                    return Ok(None);
                }
                let v: Vec<f64> = if transposed {
                    conv_transpose_forward(
                        t,
                        w,
                        b,
                        batch,
                        in_channels,
                        out_channels,
                        groups,
                        &geometry,
                    )?
                } else {
                    conv_forward(t, w, b, batch, in_channels, out_channels, groups, &geometry)?
                };
                Ok(Some(Tensor::from_values(v, &out_sizes)))
            } else {
                let v: Vec<f32> = if transposed {
                    conv_transpose_forward(
                        t,
                        w,
                        b,
                        batch,
                        in_channels,
                        out_channels,
                        groups,
                        &geometry,
                    )?
                } else if super::conv_packed::packed_conv_supported(t, w) {
                    let bias = b.map(|b| b.gather::<f32>());
                    let shape = super::conv_packed::ConvShape {
                        batch,
                        in_channels,
                        out_channels,
                        groups,
                        geometry: &geometry,
                    };
                    let run_packed = |residual: Option<&[f32]>| {
                        super::conv_packed::conv_forward_packed(
                            t,
                            w,
                            &shape,
                            &super::conv_packed::ConvEpilogue {
                                bias: bias.as_deref(),
                                activation: epilogue.activation,
                                residual,
                                residual_after_activation: epilogue.residual_after_activation,
                            },
                        )
                    };
                    match epilogue.residual {
                        // The output's shape (without the batch dim for an unbatched input),
                        // read in place when it is contiguous float32.
                        Some(r) if r.sizes() == &out_sizes[usize::from(unbatched)..] => {
                            if r.dtype() != DType::Float32 {
                                return Ok(None);
                            }
                            with_elements::<f32, _>(r, |r| run_packed(Some(r)))?
                        }
                        Some(_) => return Ok(None),
                        None => run_packed(None)?,
                    }
                } else if !epilogue.is_none() {
                    return Ok(None);
                } else {
                    conv_forward(t, w, b, batch, in_channels, out_channels, groups, &geometry)?
                };
                Ok(Some(Tensor::from_values(v, &out_sizes)))
            }
        };
    // Half types compute in f32 and round once at the end.
    let out = if integral {
        let b = bias.map(|b| b.to_dtype(DType::Float64));
        run(
            &input.to_dtype(DType::Float64),
            &weight.to_dtype(DType::Float64),
            b.as_ref(),
            true,
        )?
    } else {
        run(&input, weight, bias, dtype == DType::Float64)?
    };
    let Some(out) = out else {
        return Ok(None);
    };
    let out = out.to_dtype(dtype);
    if unbatched {
        out.squeeze_dim(0).map(Some)
    } else {
        Ok(Some(out))
    }
}

impl Tensor {
    /// `torch.nn.functional.conv{1,2,3}d` (the spatial rank comes from the weight).
    pub fn conv(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: &[i64],
        padding: &ConvPadding,
        dilation: &[i64],
        groups: i64,
    ) -> Result<Tensor> {
        convolution(
            self,
            weight,
            bias,
            stride,
            padding,
            dilation,
            false,
            &[0],
            groups,
        )
    }

    /// `torch.nn.functional.conv_transpose{1,2,3}d`.
    #[allow(clippy::too_many_arguments)]
    pub fn conv_transpose(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: &[i64],
        padding: &[i64],
        output_padding: &[i64],
        groups: i64,
        dilation: &[i64],
    ) -> Result<Tensor> {
        convolution(
            self,
            weight,
            bias,
            stride,
            &ConvPadding::Explicit(padding.to_vec()),
            dilation,
            true,
            output_padding,
            groups,
        )
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Deterministic values in [-1, 1).
    fn values(len: usize, seed: u64) -> Vec<f64> {
        let mut state = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..len)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
            })
            .collect()
    }

    /// A geometry with the same padding on both sides of each dim (shared with
    /// `conv_packed`'s tests).
    pub(crate) fn geometry(
        in_size: [usize; 3],
        kernel: [usize; 3],
        stride: [usize; 3],
        dilation: [usize; 3],
        pad: [usize; 3],
    ) -> Geometry {
        let out_size = std::array::from_fn(|d| {
            (in_size[d] + 2 * pad[d] - dilation[d] * (kernel[d] - 1) - 1) / stride[d] + 1
        });
        Geometry {
            in_size,
            kernel,
            stride,
            dilation,
            pad_before: pad,
            out_size,
        }
    }

    /// Direct convolution, one output at a time.
    #[allow(clippy::too_many_arguments)]
    fn naive(
        x: &[f64],
        w: &[f64],
        b: Option<&[f64]>,
        batch: usize,
        cin: usize,
        cout: usize,
        groups: usize,
        g: &Geometry,
    ) -> Vec<f64> {
        let (cin_g, cout_g) = (cin / groups, cout / groups);
        let mut out = Vec::new();
        for n in 0..batch {
            for co in 0..cout {
                let grp = co / cout_g;
                for o in 0..g.out_len() {
                    let pos = [
                        o / (g.out_size[1] * g.out_size[2]),
                        (o / g.out_size[2]) % g.out_size[1],
                        o % g.out_size[2],
                    ];
                    let mut acc = b.map_or(0.0, |b| b[co]);
                    for ci in 0..cin_g {
                        for k in 0..g.kernel_len() {
                            let kpos = [
                                k / (g.kernel[1] * g.kernel[2]),
                                (k / g.kernel[2]) % g.kernel[1],
                                k % g.kernel[2],
                            ];
                            let mut at = [0usize; 3];
                            let inside = (0..3).all(|d| {
                                let i = (pos[d] * g.stride[d] + kpos[d] * g.dilation[d]) as isize
                                    - g.pad_before[d] as isize;
                                at[d] = i.max(0) as usize;
                                i >= 0 && (i as usize) < g.in_size[d]
                            });
                            if inside {
                                let xi = (n * cin + grp * cin_g + ci) * g.in_len()
                                    + (at[0] * g.in_size[1] + at[1]) * g.in_size[2]
                                    + at[2];
                                acc += x[xi] * w[(co * cin_g + ci) * g.kernel_len() + k];
                            }
                        }
                    }
                    out.push(acc);
                }
            }
        }
        out
    }

    #[test]
    fn tiled_and_row_split_match_direct_convolution() {
        let cases = [
            // (batch, cin, cout, groups, geometry)
            (
                1,
                3,
                5,
                1,
                geometry([1, 9, 11], [1, 3, 3], [1, 1, 1], [1, 1, 1], [0, 1, 1]),
            ),
            (
                2,
                4,
                6,
                2,
                geometry([1, 7, 8], [1, 3, 2], [1, 2, 3], [1, 1, 1], [0, 1, 1]),
            ),
            (
                1,
                2,
                3,
                1,
                geometry([1, 6, 13], [1, 1, 3], [1, 1, 2], [1, 1, 2], [0, 0, 2]),
            ),
            (
                2,
                3,
                4,
                1,
                geometry([1, 5, 5], [1, 1, 1], [1, 1, 1], [1, 1, 1], [0, 0, 0]),
            ),
            (
                1,
                4,
                4,
                4,
                geometry([3, 4, 5], [2, 2, 2], [1, 1, 1], [1, 1, 1], [1, 1, 1]),
            ),
            (
                1,
                2,
                2,
                1,
                geometry([1, 1, 4], [1, 1, 3], [1, 1, 1], [1, 1, 1], [0, 0, 2]),
            ),
        ];
        for (batch, cin, cout, groups, g) in cases {
            let k = cin / groups * g.kernel_len();
            let x = values(batch * cin * g.in_len(), 1);
            let w = values(cout * k, 2);
            let b = values(cout, 3);
            let pointwise = g.kernel == [1, 1, 1] && g.stride == [1, 1, 1];
            for bias in [None, Some(&b[..])] {
                let expected = naive(&x, &w, bias, batch, cin, cout, groups, &g);
                // Tiles that do and do not divide the positions, down to a single column.
                for tile in [1, 3, 8, g.out_len(), g.out_len() + 5] {
                    let mut out = vec![0.0; expected.len()];
                    conv_tiled(
                        &x, &w, bias, batch, cin, cout, groups, &g, pointwise, tile, &mut out,
                    );
                    for (a, e) in out.iter().zip(&expected) {
                        assert!((a - e).abs() < 1e-12, "tile {tile}: {a} vs {e}");
                    }
                }
                let mut out = vec![0.0; expected.len()];
                conv_by_rows(
                    &x, &w, bias, batch, cin, cout, groups, &g, pointwise, &mut out,
                )
                .unwrap();
                for (a, e) in out.iter().zip(&expected) {
                    assert!((a - e).abs() < 1e-12, "rows: {a} vs {e}");
                }
            }
        }
    }

    #[test]
    fn tile_columns_cover_positions() {
        for k in [1, 9, 576, 4608, 1 << 20] {
            for out_len in [1, 7, 49, 196, 3136, 12544] {
                for threads in [1, 2, 3, 16] {
                    let tile = tile_columns(k, out_len, threads);
                    assert!(tile >= 1 && tile.is_multiple_of(8));
                    assert!(out_len.div_ceil(tile) * tile >= out_len);
                }
            }
        }
    }
}
