//! Winograd F(2x2, 3x3) float32 convolution for 3x3, stride-1, undilated, ungrouped 2-D
//! convolutions (the body of ResNet and VGG): each 2x2 block of outputs is
//! `A^T [(G g G^T) * (B^T d B)] A` over a 4x4 input tile `d`, so a layer becomes sixteen
//! products of `out_channels x in_channels` by `in_channels x tiles` on the packed GEMM:
//! 16 multiplies per 4 outputs where the direct form needs 36.
//!
//! Three phases per image, each split across the intra-op threads: the input transform
//! (by input channels) writes the sixteen right operands straight into the GEMM kernel's
//! panel layout; the sixteen products (by tap); the output transform with the bias,
//! activation and residual (by output channels).
//!
//! The transforms add and subtract up to four inputs and the filter transform halves, so
//! the rounding differs from a direct sum of 9 x in_channels products: results agree with
//! the im2col path and a float64 reference within float tolerance (the tests check that),
//! not bit for bit. Optimized and unoptimized runs take the same path, so they agree bit for
//! bit. `FERROJIT_WINOGRAD=off` turns it off, for side-by-side timing.

use std::cell::RefCell;

use rayon::prelude::*;

use super::conv_packed::{ConvEpilogue, ConvShape};
use crate::error::{Result, TensorError};
use crate::gemm::weight_cache::{cached_packing, PackLayout};
use crate::gemm::{
    gemm, Activation, Epilogue, Kernel, Operand, PackedMatrix, RightPanelLayout, Side,
    StridedMatrix,
};
use crate::tensor::Tensor;

/// Values of a transformed 4x4 tile, one GEMM per value.
const TAPS: usize = 16;

/// Whether `FERROJIT_WINOGRAD` (read once) leaves the Winograd path on.
fn winograd_enabled() -> bool {
    static ENABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var("FERROJIT_WINOGRAD").map_or(true, |v| v.trim() != "off"))
}

/// Tiles (2x2 blocks of outputs) down and across one image.
fn tile_grid(out_h: usize, out_w: usize) -> (usize, usize) {
    (out_h.div_ceil(2), out_w.div_ceil(2))
}

/// Whether the Winograd path takes this convolution: a 2-D 3x3 filter at stride 1 without
/// dilation or groups, enough channels that the transforms cost little next to the
/// products, and enough tiles that padding them to the kernel's panel width does not eat
/// the saving (a 7x7 output has 16 tiles, padded to 32: no faster than the direct form).
pub(super) fn winograd_applies(shape: &ConvShape, kernel: Kernel) -> bool {
    let g = shape.geometry;
    let planar_3x3 = g.kernel == [1, 3, 3]
        && g.stride == [1; 3]
        && g.dilation == [1; 3]
        && g.in_size[0] == 1
        && g.out_size[0] == 1
        && g.pad_before[0] == 0;
    if !winograd_enabled() || !planar_3x3 || shape.groups != 1 {
        return false;
    }
    if shape.in_channels < 16 || shape.out_channels < 16 {
        return false;
    }
    let (tiles_h, tiles_w) = tile_grid(g.out_size[1], g.out_size[2]);
    let padded_tiles = (tiles_h * tiles_w).next_multiple_of(kernel.nr());
    let padded_positions = g.out_len().next_multiple_of(kernel.nr());
    // Multiplies per output channel and input channel: 16 per (padded) tile against 9 per
    // (padded) position; take Winograd where it saves at least a quarter, which leaves room
    // for the transforms.
    16 * padded_tiles * 4 <= 9 * padded_positions * 3
}

/// The filters' transforms `G g G^T` as sixteen packed `out_channels x in_channels` left
/// operands (one per tap), from the cache when the weight has not changed. Read through the
/// weight's strides, so a non-contiguous weight is not copied first.
fn transformed_weight(
    weight: &Tensor,
    in_channels: usize,
    out_channels: usize,
    kernel: Kernel,
) -> Result<std::sync::Arc<Vec<PackedMatrix>>> {
    let (sizes, strides) = (weight.sizes(), weight.strides());
    let n = sizes.len();
    let shaped = n >= 4
        && sizes[0] == out_channels
        && sizes[1] == in_channels
        && sizes[n - 2] == 3
        && sizes[n - 1] == 3
        && sizes[2..n - 2].iter().all(|&s| s == 1);
    if !shaped {
        return Err(TensorError::InvalidArgument(format!(
            "winograd convolution: weight of sizes {sizes:?} is not {out_channels} x \
             {in_channels} x 3 x 3"
        )));
    }
    let (so, sc, sy, sx) = (strides[0], strides[1], strides[n - 2], strides[n - 1]);
    cached_packing(weight, kernel, PackLayout::WinogradLeft, |data| {
        let last = (out_channels - 1) * so + (in_channels - 1) * sc + 2 * sy + 2 * sx;
        if last >= data.len() {
            return Err(TensorError::InvalidArgument(format!(
                "winograd convolution: weight view reaches value {last} of a storage of {}",
                data.len()
            )));
        }
        let plane = out_channels * in_channels;
        let mut transformed = vec![0f32; TAPS * plane];
        for o in 0..out_channels {
            for c in 0..in_channels {
                let at = |i: usize, j: usize| f64::from(data[o * so + c * sc + i * sy + j * sx]);
                // G g (4 x 3), column by column, then (G g) G^T (4 x 4), row by row; in
                // float64 so the only rounding is the final one.
                let g_columns: [[f64; 4]; 3] = std::array::from_fn(|j| {
                    let (g0, g1, g2) = (at(0, j), at(1, j), at(2, j));
                    [g0, 0.5 * (g0 + g1 + g2), 0.5 * (g0 - g1 + g2), g2]
                });
                let g_rows: [[f64; 3]; 4] =
                    std::array::from_fn(|i| std::array::from_fn(|j| g_columns[j][i]));
                for (i, [r0, r1, r2]) in g_rows.into_iter().enumerate() {
                    let row = [r0, 0.5 * (r0 + r1 + r2), 0.5 * (r0 - r1 + r2), r2];
                    for (j, value) in row.into_iter().enumerate() {
                        transformed[(4 * i + j) * plane + o * in_channels + c] = value as f32;
                    }
                }
            }
        }
        transformed
            .chunks_exact(plane)
            .map(|tap| {
                let src = StridedMatrix::row_major(tap, out_channels, in_channels)?;
                Ok(PackedMatrix::pack(&src, Side::Left, kernel))
            })
            .collect()
    })
}

/// The sizes one image's transforms work with.
#[derive(Debug, Clone, Copy)]
struct Plane {
    height: usize,
    width: usize,
    pad_y: usize,
    pad_x: usize,
    tiles_h: usize,
    tiles_w: usize,
}

impl Plane {
    /// Values of one padded input line: the tiles of a row read columns `-pad_x` to
    /// `2 * tiles_w + 1 - pad_x`.
    fn line_len(&self) -> usize {
        2 * self.tiles_w + 2
    }
}

/// `B^T d B` for every tile of one input channel, a row of tiles at a time and vectorized
/// across the tiles of a row: the vertical half combines four whole input lines, the
/// horizontal half works on each combined line split into its even and odd columns. The
/// sixteen rows of each tile row's results go to `emit(tap, first tile, values)`. The
/// arithmetic is the textbook per-tile form's (the tests' `input_tile_transform`),
/// operation for operation.
fn transform_input_channel(
    channel: &[f32],
    plane: &Plane,
    scratch: &mut Vec<f32>,
    mut emit: impl FnMut(usize, usize, &[f32]),
) {
    let (len, tiles_w) = (plane.line_len(), plane.tiles_w);
    let half = tiles_w + 1;
    scratch.clear();
    scratch.resize(8 * len + 2 * half + TAPS * tiles_w, 0.0);
    let (lines, rest) = scratch.split_at_mut(4 * len);
    let (combined, rest) = rest.split_at_mut(4 * len);
    let (even_odd, taps) = rest.split_at_mut(2 * half);
    let (even, odd) = even_odd.split_at_mut(half);
    // Input columns pad_x.. of the line hold the channel's row; the rest is padding.
    let columns = plane.pad_x.min(len)..(plane.pad_x + plane.width).min(len);
    for ty in 0..plane.tiles_h {
        for (i, line) in lines.chunks_exact_mut(len).enumerate() {
            line.fill(0.0);
            let y = (2 * ty + i) as isize - plane.pad_y as isize;
            if y >= 0 && (y as usize) < plane.height && !columns.is_empty() {
                let row = &channel[y as usize * plane.width..][..plane.width];
                line[columns.clone()].copy_from_slice(&row[..columns.len()]);
            }
        }
        let (l0, l1, l2, l3) = (
            &lines[..len],
            &lines[len..2 * len],
            &lines[2 * len..3 * len],
            &lines[3 * len..],
        );
        let (e0, rest) = combined.split_at_mut(len);
        let (e1, rest) = rest.split_at_mut(len);
        let (e2, e3) = rest.split_at_mut(len);
        for x in 0..len {
            e0[x] = l0[x] - l2[x];
            e1[x] = l1[x] + l2[x];
            e2[x] = l2[x] - l1[x];
            e3[x] = l1[x] - l3[x];
        }
        for (i, e) in combined.chunks_exact(len).enumerate() {
            for k in 0..half {
                even[k] = e[2 * k];
                odd[k] = e[2 * k + 1];
            }
            let (v0, rest) = taps[4 * i * tiles_w..(4 * i + 4) * tiles_w].split_at_mut(tiles_w);
            let (v1, rest) = rest.split_at_mut(tiles_w);
            let (v2, v3) = rest.split_at_mut(tiles_w);
            for tx in 0..tiles_w {
                let (e_0, e_1, e_2, e_3) = (even[tx], odd[tx], even[tx + 1], odd[tx + 1]);
                v0[tx] = e_0 - e_2;
                v1[tx] = e_1 + e_2;
                v2[tx] = e_2 - e_1;
                v3[tx] = e_1 - e_3;
            }
        }
        for (tap, values) in taps.chunks_exact(tiles_w).enumerate() {
            emit(tap, ty * tiles_w, values);
        }
    }
}

/// Sixteen packed right operands under construction, written by the input transform from
/// several threads at once (each thread its own input channels, so its own rows).
struct SharedTaps {
    pointers: [*mut f32; TAPS],
    len: usize,
}
// SAFETY: the tasks that share it write pairwise disjoint elements (the rows of distinct
// input channels), every write is bounds-checked against `len`, and the buffers outlive the
// tasks (see `input_transform`).
unsafe impl Sync for SharedTaps {}

impl SharedTaps {
    /// Copies `values` to `at..at + values.len()` of tap `tap`'s buffer.
    #[inline(always)]
    fn write(&self, tap: usize, at: usize, values: &[f32]) {
        // A failed check is a bug in the layout arithmetic; stop before writing out of bounds.
        assert!(
            at.checked_add(values.len())
                .is_some_and(|end| end <= self.len),
            "winograd: packed values {at}..+{} of {}",
            values.len(),
            self.len
        );
        // SAFETY: `at + values.len() <= len`, the length of every tap buffer; no other task
        // writes these elements (they belong to this task's channel's row) and nobody reads
        // them until all tasks end. `values` is scratch of this task, so they do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(values.as_ptr(), self.pointers[tap].add(at), values.len())
        };
    }
}

/// The input transform of one image (`in_channels x height x width`), written into the
/// sixteen tap buffers in the layout of `layout` (rows: input channels, columns: tiles).
fn input_transform(
    image: &[f32],
    in_channels: usize,
    plane: &Plane,
    layout: &RightPanelLayout,
    taps: &mut [Vec<f32>; TAPS],
) {
    let len = layout.len();
    assert!(taps.iter().all(|t| t.len() == len));
    let shared = SharedTaps {
        pointers: std::array::from_fn(|tap| taps[tap].as_mut_ptr()),
        len,
    };
    let nr = layout.nr();
    let channel_len = plane.height * plane.width;
    let transform_channel = |scratch: &mut Vec<f32>, c: usize| {
        let channel = &image[c * channel_len..][..channel_len];
        let (start, panel_stride) = layout.row_start(c);
        transform_input_channel(channel, plane, scratch, |tap, first, values| {
            // Runs of consecutive tiles within one kernel panel are contiguous.
            let mut done = 0;
            while done < values.len() {
                let t = first + done;
                let run = (nr - t % nr).min(values.len() - done);
                let at = start + (t / nr) * panel_stride + t % nr;
                shared.write(tap, at, &values[done..done + run]);
                done += run;
            }
        });
    };
    let tiles = plane.tiles_h * plane.tiles_w;
    if crate::ops::parallel::num_threads() > 1 && in_channels * tiles >= 4096 {
        (0..in_channels)
            .into_par_iter()
            .for_each_init(Vec::new, transform_channel);
    } else {
        let mut scratch = Vec::new();
        (0..in_channels).for_each(|c| transform_channel(&mut scratch, c));
    }
}

/// `A^T m A` for every tile of one output channel, a row of tiles at a time and vectorized
/// across the tiles of a row (the arithmetic is the per-tile form's, the tests'
/// `output_tile_transform`, operation for operation), then the epilogue on each finished output line. `products(tap)` is the
/// channel's row of tap `tap`'s product (one value per tile); `residual` is the channel's
/// plane of the residual.
#[allow(clippy::too_many_arguments)]
fn transform_output_channel<'p>(
    products: impl Fn(usize) -> &'p [f32],
    out: &mut [f32],
    [out_h, out_w]: [usize; 2],
    tiles_w: usize,
    bias: Option<f32>,
    residual: Option<&[f32]>,
    epilogue: &ConvEpilogue,
    scratch: &mut Vec<f32>,
) {
    scratch.clear();
    scratch.resize(12 * tiles_w, 0.0);
    let (sums, corners) = scratch.split_at_mut(8 * tiles_w);
    for ty in 0..out_h.div_ceil(2) {
        let m = |tap: usize| &products(tap)[ty * tiles_w..][..tiles_w];
        for j in 0..4 {
            let (m0, m1, m2, m3) = (m(j), m(4 + j), m(8 + j), m(12 + j));
            let (s0, s1) = sums.split_at_mut(4 * tiles_w);
            let (s0, s1) = (
                &mut s0[j * tiles_w..][..tiles_w],
                &mut s1[j * tiles_w..][..tiles_w],
            );
            for t in 0..tiles_w {
                s0[t] = m0[t] + m1[t] + m2[t];
                s1[t] = m1[t] - m2[t] - m3[t];
            }
        }
        for (half, row) in sums.chunks_exact(4 * tiles_w).enumerate() {
            let (s0, s1, s2, s3) = (
                &row[..tiles_w],
                &row[tiles_w..2 * tiles_w],
                &row[2 * tiles_w..3 * tiles_w],
                &row[3 * tiles_w..],
            );
            let (left, right) = corners[2 * half * tiles_w..][..2 * tiles_w].split_at_mut(tiles_w);
            for t in 0..tiles_w {
                left[t] = s0[t] + s1[t] + s2[t];
                right[t] = s1[t] - s2[t] - s3[t];
            }
        }
        for half in 0..2 {
            let oy = 2 * ty + half;
            if oy >= out_h {
                break;
            }
            let line = &mut out[oy * out_w..][..out_w];
            let (left, right) = corners[2 * half * tiles_w..][..2 * tiles_w].split_at(tiles_w);
            for (pair, (&l, &r)) in line.chunks_mut(2).zip(left.iter().zip(right)) {
                pair[0] = l;
                if let Some(second) = pair.get_mut(1) {
                    *second = r;
                }
            }
            // The packed path's order: bias, residual before or after the activation. No
            // bias adds nothing (adding 0 would turn -0 into 0).
            if let Some(b) = bias {
                line.iter_mut().for_each(|v| *v += b);
            }
            let residual_line = residual.map(|r| &r[oy * out_w..][..out_w]);
            if let (Some(r), false) = (residual_line, epilogue.residual_after_activation) {
                line.iter_mut().zip(r).for_each(|(v, &r)| *v += r);
            }
            match epilogue.activation {
                Activation::Identity => {}
                // A select vectorizes; NaN stays NaN, as in PyTorch's relu.
                Activation::Relu => line
                    .iter_mut()
                    .for_each(|v| *v = if *v < 0.0 { 0.0 } else { *v }),
                act => line.iter_mut().for_each(|v| *v = act.apply(*v)),
            }
            if let (Some(r), true) = (residual_line, epilogue.residual_after_activation) {
                line.iter_mut().zip(r).for_each(|(v, &r)| *v += r);
            }
        }
    }
}

/// Buffers reused from call to call on the calling thread (a model runs its convolutions
/// one after another), so a layer does not fault in fresh pages for them each time.
#[derive(Default)]
struct Scratch {
    taps: [Vec<f32>; TAPS],
    products: Vec<f32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// `epilogue(conv(input, weight))` through Winograd F(2x2, 3x3) into `out` (`batch x
/// out_channels x out_h x out_w`, contiguous), for a convolution that
/// [`winograd_applies`] to; `x` is the contiguous input. The caller checked the bias's and
/// residual's lengths.
pub(super) fn conv_forward_winograd(
    x: &[f32],
    weight: &Tensor,
    shape: &ConvShape,
    epilogue: &ConvEpilogue,
    kernel: Kernel,
    out: &mut [f32],
) -> Result<()> {
    let g = shape.geometry;
    let (batch, cin, cout) = (shape.batch, shape.in_channels, shape.out_channels);
    let [_, height, width] = g.in_size;
    let [_, out_h, out_w] = g.out_size;
    let (in_len, out_len) = (height * width, out_h * out_w);
    if x.len() < batch * cin * in_len || out.len() != batch * cout * out_len {
        return Err(TensorError::InvalidArgument(format!(
            "winograd convolution: input of {} values or output of {} values does not match \
             {batch} x {cin} x {height} x {width} -> {cout} x {out_h} x {out_w}",
            x.len(),
            out.len()
        )));
    }
    let weights = transformed_weight(weight, cin, cout, kernel)?;
    let (tiles_h, tiles_w) = tile_grid(out_h, out_w);
    let tiles = tiles_h * tiles_w;
    let layout = RightPanelLayout::new(cin, tiles, kernel);
    let plane = Plane {
        height,
        width,
        pad_y: g.pad_before[1],
        pad_x: g.pad_before[2],
        tiles_h,
        tiles_w,
    };
    let parallel = crate::ops::parallel::num_threads() > 1;
    let mut run = |scratch: &mut Scratch| -> Result<()> {
        for tap in scratch.taps.iter_mut() {
            tap.resize(layout.len(), 0.0);
        }
        scratch.products.resize(TAPS * cout * tiles, 0.0);
        for img in 0..batch {
            input_transform(
                &x[img * cin * in_len..][..cin * in_len],
                cin,
                &plane,
                &layout,
                &mut scratch.taps,
            );
            // The sixteen products, one per tap.
            let packed: Vec<PackedMatrix> = scratch
                .taps
                .iter_mut()
                .map(|tap| PackedMatrix::right_from_panels(&layout, kernel, std::mem::take(tap)))
                .collect::<Result<_>>()?;
            let product = |(tap, m): (usize, &mut [f32])| {
                gemm(
                    Operand::Packed(&weights[tap]),
                    Operand::Packed(&packed[tap]),
                    m,
                    &Epilogue::NONE,
                )
            };
            if parallel {
                scratch
                    .products
                    .par_chunks_mut(cout * tiles)
                    .enumerate()
                    .try_for_each(product)?;
            } else {
                scratch
                    .products
                    .chunks_mut(cout * tiles)
                    .enumerate()
                    .try_for_each(product)?;
            }
            for (tap, matrix) in packed.into_iter().enumerate() {
                scratch.taps[tap] = matrix.into_buffer();
            }
            // The output transform and epilogue, one output channel per task.
            let image_out = &mut out[img * cout * out_len..][..cout * out_len];
            let residual = epilogue
                .residual
                .map(|r| &r[img * cout * out_len..][..cout * out_len]);
            let products = &scratch.products;
            let finish_channel = |lines: &mut Vec<f32>, (o, plane_out): (usize, &mut [f32])| {
                transform_output_channel(
                    |tap| &products[(tap * cout + o) * tiles..][..tiles],
                    plane_out,
                    [out_h, out_w],
                    tiles_w,
                    epilogue.bias.map(|b| b[o]),
                    residual.map(|r| &r[o * out_len..][..out_len]),
                    epilogue,
                    lines,
                );
            };
            if parallel {
                image_out
                    .par_chunks_mut(out_len)
                    .enumerate()
                    .for_each_init(Vec::new, finish_channel);
            } else {
                let mut lines = Vec::new();
                image_out
                    .chunks_mut(out_len)
                    .enumerate()
                    .for_each(|item| finish_channel(&mut lines, item));
            }
        }
        Ok(())
    };
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => run(&mut scratch),
        // Already in use on this thread: a convolution called from inside another one's
        // parallel section (a pool worker that picked up other work while waiting), which
        // gets buffers of its own instead of a borrow panic.
        Err(_) => run(&mut Scratch::default()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::ops::nn::conv::conv_forward;
    use crate::ops::nn::conv::tests::geometry;
    use crate::ops::nn::conv_packed::tests::values;

    /// `B^T d B` of a 4x4 input tile (row-major), row-major.
    fn input_tile_transform(d: &[f32; 16]) -> [f32; 16] {
        // Rows: B^T d.
        let mut e = [0f32; 16];
        for j in 0..4 {
            let (d0, d1, d2, d3) = (d[j], d[4 + j], d[8 + j], d[12 + j]);
            e[j] = d0 - d2;
            e[4 + j] = d1 + d2;
            e[8 + j] = d2 - d1;
            e[12 + j] = d1 - d3;
        }
        // Columns: (B^T d) B.
        let mut v = [0f32; 16];
        for i in 0..4 {
            let (e0, e1, e2, e3) = (e[4 * i], e[4 * i + 1], e[4 * i + 2], e[4 * i + 3]);
            v[4 * i] = e0 - e2;
            v[4 * i + 1] = e1 + e2;
            v[4 * i + 2] = e2 - e1;
            v[4 * i + 3] = e1 - e3;
        }
        v
    }

    /// `A^T m A` of a 4x4 product tile: the 2x2 outputs, row-major.
    fn output_tile_transform(m: &[f32; 16]) -> [f32; 4] {
        // Rows: A^T m (2 x 4).
        let mut s = [0f32; 8];
        for j in 0..4 {
            let (m0, m1, m2, m3) = (m[j], m[4 + j], m[8 + j], m[12 + j]);
            s[j] = m0 + m1 + m2;
            s[4 + j] = m1 - m2 - m3;
        }
        [
            s[0] + s[1] + s[2],
            s[1] - s[2] - s[3],
            s[4] + s[5] + s[6],
            s[5] - s[6] - s[7],
        ]
    }

    /// The 4x4 input tile whose top-left corner is at row `y0`, column `x0` of a `height x
    /// width` channel (negative or past the end in the padding, which reads as zeros).
    fn load_tile(channel: &[f32], width: usize, height: usize, y0: isize, x0: isize) -> [f32; 16] {
        let mut d = [0f32; 16];
        let inside = y0 >= 0 && x0 >= 0 && y0 as usize + 4 <= height && x0 as usize + 4 <= width;
        if inside {
            let (y0, x0) = (y0 as usize, x0 as usize);
            for i in 0..4 {
                d[4 * i..4 * i + 4].copy_from_slice(&channel[(y0 + i) * width + x0..][..4]);
            }
        } else {
            for i in 0..4 {
                let y = y0 + i as isize;
                if y < 0 || y as usize >= height {
                    continue;
                }
                for j in 0..4 {
                    let x = x0 + j as isize;
                    if x >= 0 && (x as usize) < width {
                        d[4 * i + j] = channel[y as usize * width + x as usize];
                    }
                }
            }
        }
        d
    }

    #[test]
    fn tile_transforms_match_the_direct_3x3_correlation() {
        // One 4x4 tile, one filter: A^T[(G g G^T) * (B^T d B)]A equals the four 3x3 dot
        // products of the valid correlation.
        let d: [f32; 16] = std::array::from_fn(|i| (i as f32 * 0.37).sin());
        let filter: [f32; 9] = std::array::from_fn(|i| (i as f32 * 0.91 + 0.2).cos());
        // A 16-channel weight so the layout check passes; channel 0 holds the filter.
        let mut many = vec![0f32; 16 * 16 * 9];
        many[..9].copy_from_slice(&filter);
        let many = Tensor::from_values(many, &[16, 16, 3, 3]);
        let kernel = Kernel::Portable;
        let packed = transformed_weight(&many, 16, 16, kernel).unwrap();
        assert_eq!(packed.len(), TAPS);
        // Recover G g G^T of filter (0, 0) by multiplying each tap by a unit column.
        let unit: Vec<f32> = (0..16).map(|c| if c == 0 { 1.0 } else { 0.0 }).collect();
        let unit = StridedMatrix::row_major(&unit, 16, 1).unwrap();
        let u: [f32; 16] = std::array::from_fn(|tap| {
            let mut c = vec![0f32; 16];
            gemm(
                Operand::Packed(&packed[tap]),
                Operand::Strided(unit),
                &mut c,
                &Epilogue::NONE,
            )
            .unwrap();
            c[0]
        });
        let v = input_tile_transform(&d);
        let m: [f32; 16] = std::array::from_fn(|i| u[i] * v[i]);
        let y = output_tile_transform(&m);
        for (k, &got) in y.iter().enumerate() {
            let (oy, ox) = (k / 2, k % 2);
            let want: f64 = (0..9)
                .map(|t| f64::from(filter[t]) * f64::from(d[(oy + t / 3) * 4 + ox + t % 3]))
                .sum();
            assert!(
                (f64::from(got) - want).abs() < 1e-5,
                "output {k}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn row_transforms_equal_the_per_tile_transforms_bit_for_bit() {
        // Odd sizes and uneven padding, so tiles hang over every edge.
        for (height, width, pad_y, pad_x) in [(7, 9, 1, 1), (6, 5, 0, 2), (3, 4, 2, 0)] {
            let out_h = height + 2 * pad_y - 2;
            let out_w = width + 2 * pad_x - 2;
            let (tiles_h, tiles_w) = tile_grid(out_h, out_w);
            let plane = Plane {
                height,
                width,
                pad_y,
                pad_x,
                tiles_h,
                tiles_w,
            };
            let channel = values(height * width, 31);
            let tiles = tiles_h * tiles_w;
            let mut rows = vec![f32::NAN; TAPS * tiles];
            let mut scratch = Vec::new();
            transform_input_channel(&channel, &plane, &mut scratch, |tap, first, values| {
                rows[tap * tiles + first..][..values.len()].copy_from_slice(values);
            });
            for t in 0..tiles {
                let (ty, tx) = (t / tiles_w, t % tiles_w);
                let y0 = (2 * ty) as isize - pad_y as isize;
                let x0 = (2 * tx) as isize - pad_x as isize;
                let want = input_tile_transform(&load_tile(&channel, width, height, y0, x0));
                for tap in 0..TAPS {
                    assert_eq!(
                        rows[tap * tiles + t].to_bits(),
                        want[tap].to_bits(),
                        "input {height}x{width} pad {pad_y},{pad_x}: tile {t} tap {tap}"
                    );
                }
            }
            // The output transform of the same-sized products, no epilogue.
            let products = values(TAPS * tiles, 32);
            let mut out = vec![f32::NAN; out_h * out_w];
            transform_output_channel(
                |tap| &products[tap * tiles..][..tiles],
                &mut out,
                [out_h, out_w],
                tiles_w,
                None,
                None,
                &ConvEpilogue::NONE,
                &mut scratch,
            );
            for t in 0..tiles {
                let (ty, tx) = (t / tiles_w, t % tiles_w);
                let m: [f32; TAPS] = std::array::from_fn(|tap| products[tap * tiles + t]);
                let y = output_tile_transform(&m);
                for (k, &want) in y.iter().enumerate() {
                    let (oy, ox) = (2 * ty + k / 2, 2 * tx + k % 2);
                    if oy < out_h && ox < out_w {
                        assert_eq!(
                            out[oy * out_w + ox].to_bits(),
                            want.to_bits(),
                            "output {oy},{ox}"
                        );
                    }
                }
            }
        }
    }

    struct Case {
        batch: usize,
        cin: usize,
        cout: usize,
        size: [usize; 2],
        pad: usize,
    }

    fn run_case(
        case: &Case,
        bias: bool,
        activation: Activation,
        residual: Option<&[f32]>,
        after: bool,
    ) -> (Vec<f32>, Vec<f64>) {
        let [h, w] = case.size;
        let g = geometry(
            [1, h, w],
            [1, 3, 3],
            [1; 3],
            [1; 3],
            [0, case.pad, case.pad],
        );
        let xs = values(case.batch * case.cin * h * w, 11);
        let ws = values(case.cout * case.cin * 9, 12);
        let bs = values(case.cout, 13);
        let x = Tensor::from_values(xs.clone(), &[case.batch, case.cin, 1, h, w]);
        let weight = Tensor::from_values(ws, &[case.cout, case.cin, 1, 3, 3]);
        let b = Tensor::from_values(bs.clone(), &[case.cout]);
        let shape = ConvShape {
            batch: case.batch,
            in_channels: case.cin,
            out_channels: case.cout,
            groups: 1,
            geometry: &g,
        };
        let epilogue = ConvEpilogue {
            bias: bias.then_some(&bs[..]),
            activation,
            residual,
            residual_after_activation: after,
        };
        let mut out = vec![f32::NAN; case.batch * case.cout * g.out_len()];
        conv_forward_winograd(&xs, &weight, &shape, &epilogue, Kernel::best(), &mut out).unwrap();
        let reference: Vec<f64> = conv_forward(
            &x.to_dtype(DType::Float64),
            &weight.to_dtype(DType::Float64),
            bias.then(|| b.to_dtype(DType::Float64)).as_ref(),
            case.batch,
            case.cin,
            case.cout,
            1,
            &g,
        )
        .unwrap();
        (out, reference)
    }

    fn cases() -> Vec<Case> {
        vec![
            // Odd sizes (the last tile row and column hang over), same padding.
            Case {
                batch: 1,
                cin: 16,
                cout: 24,
                size: [9, 7],
                pad: 1,
            },
            // No padding, batch 2, more tiles than one panel.
            Case {
                batch: 2,
                cin: 20,
                cout: 16,
                size: [14, 12],
                pad: 0,
            },
            // Above one 256-step block of input channels, wide padding.
            Case {
                batch: 1,
                cin: 272,
                cout: 32,
                size: [6, 6],
                pad: 2,
            },
        ]
    }

    fn assert_close(got: &[f32], want: &[f64], what: &str) {
        assert_eq!(got.len(), want.len(), "{what}: length");
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            // Looser than the direct path's 1e-4: the transforms add up to four values of
            // the input and filter before multiplying.
            assert!(
                (f64::from(g) - w).abs() <= 3e-4 * (1.0 + w.abs()),
                "{what}: element {i} is {g}, expected {w}"
            );
        }
    }

    #[test]
    fn winograd_matches_a_float64_direct_convolution() {
        for (i, case) in cases().iter().enumerate() {
            for bias in [false, true] {
                let (got, want) = run_case(case, bias, Activation::Identity, None, false);
                assert_close(&got, &want, &format!("case {i}, bias {bias}"));
            }
        }
    }

    #[test]
    fn a_call_while_this_threads_scratch_is_in_use_gets_its_own() {
        let case = &cases()[0];
        SCRATCH.with(|cell| {
            let _held = cell.borrow_mut();
            let (got, want) = run_case(case, true, Activation::Identity, None, false);
            assert_close(&got, &want, "nested call");
        });
    }

    #[test]
    fn winograd_applies_bias_activation_and_residual() {
        for (i, case) in cases().iter().enumerate() {
            let g_out = {
                let [h, w] = case.size;
                (h + 2 * case.pad - 2) * (w + 2 * case.pad - 2)
            };
            let residual = values(case.batch * case.cout * g_out, 14);
            for after in [false, true] {
                let (got, reference) =
                    run_case(case, true, Activation::Relu, Some(&residual), after);
                let want: Vec<f64> = reference
                    .iter()
                    .zip(&residual)
                    .map(|(&v, &r)| {
                        if after {
                            v.max(0.0) + f64::from(r)
                        } else {
                            (v + f64::from(r)).max(0.0)
                        }
                    })
                    .collect();
                assert_close(&got, &want, &format!("case {i}, residual after {after}"));
            }
        }
    }

    #[test]
    fn winograd_reads_a_non_contiguous_weight_through_its_strides() {
        let case = &cases()[0];
        let [h, w] = case.size;
        let g = geometry([1, h, w], [1, 3, 3], [1; 3], [1; 3], [0, 1, 1]);
        let xs = values(case.cin * h * w, 21);
        // The weight stored as in x out x 3 x 3 and viewed transposed.
        let stored = Tensor::from_values(
            values(case.cin * case.cout * 9, 22),
            &[case.cin, case.cout, 3, 3],
        );
        let weight = stored.transpose(0, 1).unwrap();
        assert!(!weight.is_contiguous());
        let shape = ConvShape {
            batch: 1,
            in_channels: case.cin,
            out_channels: case.cout,
            groups: 1,
            geometry: &g,
        };
        let mut got = vec![0f32; case.cout * g.out_len()];
        conv_forward_winograd(
            &xs,
            &weight,
            &shape,
            &ConvEpilogue::NONE,
            Kernel::best(),
            &mut got,
        )
        .unwrap();
        let x = Tensor::from_values(xs, &[1, case.cin, h, w]).to_dtype(DType::Float64);
        let want: Vec<f64> = conv_forward(
            &x,
            &weight.contiguous().to_dtype(DType::Float64),
            None,
            1,
            case.cin,
            case.cout,
            1,
            &g,
        )
        .unwrap();
        assert_close(&got, &want, "transposed weight");
    }

    #[test]
    fn winograd_refuses_a_weight_that_is_not_3x3_or_an_input_too_short() {
        let g = geometry([1, 6, 6], [1, 3, 3], [1; 3], [1; 3], [0, 1, 1]);
        let shape = ConvShape {
            batch: 1,
            in_channels: 16,
            out_channels: 16,
            groups: 1,
            geometry: &g,
        };
        let wrong = Tensor::from_values(vec![0f32; 16 * 16 * 4], &[16, 16, 2, 2]);
        let mut out = vec![0f32; 16 * 36];
        let x = vec![0f32; 16 * 36];
        let err = conv_forward_winograd(
            &x,
            &wrong,
            &shape,
            &ConvEpilogue::NONE,
            Kernel::best(),
            &mut out,
        )
        .unwrap_err();
        assert!(err.to_string().contains("is not 16 x 16 x 3 x 3"), "{err}");
        let weight = Tensor::from_values(vec![0f32; 16 * 16 * 9], &[16, 16, 3, 3]);
        let err = conv_forward_winograd(
            &x[..10],
            &weight,
            &shape,
            &ConvEpilogue::NONE,
            Kernel::best(),
            &mut out,
        )
        .unwrap_err();
        assert!(err.to_string().contains("does not match"), "{err}");
    }

    #[test]
    fn winograd_is_chosen_only_where_it_saves_multiplies() {
        let shape_for = |size: usize, cin: usize, stride: usize, groups: usize| {
            let g = geometry(
                [1, size, size],
                [1, 3, 3],
                [1, stride, stride],
                [1; 3],
                [0, 1, 1],
            );
            (g, cin, groups)
        };
        let kernel = Kernel::Avx2Fma;
        let applies = |(g, cin, groups): (crate::ops::nn::conv::Geometry, usize, usize)| {
            winograd_applies(
                &ConvShape {
                    batch: 1,
                    in_channels: cin,
                    out_channels: cin,
                    groups,
                    geometry: &g,
                },
                kernel,
            )
        };
        assert!(applies(shape_for(56, 64, 1, 1)));
        assert!(applies(shape_for(14, 256, 1, 1)));
        // ResNet's last stage: 16 tiles padded to the panel width save nothing.
        assert!(!applies(shape_for(3, 512, 1, 1)));
        assert!(!applies(shape_for(56, 64, 2, 1)));
        assert!(!applies(shape_for(56, 64, 1, 2)));
        assert!(!applies(shape_for(56, 8, 1, 1)));
    }
}
