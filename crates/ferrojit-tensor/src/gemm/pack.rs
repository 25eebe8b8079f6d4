//! Packing into the micro-kernels' panel layout, once for a constant operand
//! ([`PackedMatrix`]) or per block for the other operand.
//!
//! Layout, for each block of `KC` steps of the shared dimension `k` (block `p0..p0 + kc`):
//! a left (`A`, `m x k`) matrix is cut into panels of `MR` rows, each stored as `kc` columns
//! of `MR` values; a right (`B`, `k x n`) matrix into panels of `NR` columns, each stored as
//! `kc` rows of `NR` values. The last panel is padded with zeros, so the kernels always
//! compute full tiles.

use super::kernel::Kernel;
use crate::error::{Result, TensorError};

/// Steps of the shared dimension per block: a block's `B` panel (`KC x NR`) is meant to stay
/// in the L1 cache while the kernel walks the `A` panels. 256 is also matrixmultiply's
/// float32 block: each output element is then summed in the same order as the unfused
/// `linear` sums it (a fused-multiply-add chain per block, the blocks added in turn), so on
/// CPUs where matrixmultiply runs an FMA kernel the two agree bit for bit.
pub(crate) fn kc_for(_kernel: Kernel) -> usize {
    256
}

/// Which operand of `C = A @ B` a packed matrix is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// `A` (`m x k`): panels of `MR` rows.
    Left,
    /// `B` (`k x n`): panels of `NR` columns.
    Right,
}

/// A strided float32 matrix: element `(r, c)` at `data[r * row_stride + c * col_stride]`.
#[derive(Debug, Clone, Copy)]
pub struct StridedMatrix<'a> {
    /// The values.
    pub data: &'a [f32],
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
    /// Distance between rows.
    pub row_stride: usize,
    /// Distance between columns.
    pub col_stride: usize,
}

impl<'a> StridedMatrix<'a> {
    /// A row-major contiguous `rows x cols` matrix.
    pub fn row_major(data: &'a [f32], rows: usize, cols: usize) -> Result<Self> {
        Self::new(data, rows, cols, cols, 1)
    }

    /// Checks that every element lies inside `data`.
    pub fn new(
        data: &'a [f32],
        rows: usize,
        cols: usize,
        row_stride: usize,
        col_stride: usize,
    ) -> Result<Self> {
        let fits = rows == 0
            || cols == 0
            || (rows - 1)
                .checked_mul(row_stride)
                .and_then(|r| {
                    (cols - 1)
                        .checked_mul(col_stride)
                        .and_then(|c| r.checked_add(c))
                })
                .is_some_and(|last| last < data.len());
        if !fits {
            return Err(TensorError::InvalidArgument(format!(
                "gemm: a {rows} x {cols} matrix with strides ({row_stride}, {col_stride}) does \
                 not fit in {} values",
                data.len()
            )));
        }
        Ok(StridedMatrix {
            data,
            rows,
            cols,
            row_stride,
            col_stride,
        })
    }

    #[inline]
    fn at(&self, r: usize, c: usize) -> f32 {
        self.data[r * self.row_stride + c * self.col_stride]
    }
}

/// Packs rows `r0..r0 + rows` and steps `p0..p0 + kc` of a left matrix into `dst` as
/// `ceil(rows / mr)` panels (zero-padded).
pub(crate) fn pack_left_block(
    src: &StridedMatrix,
    r0: usize,
    rows: usize,
    p0: usize,
    kc: usize,
    mr: usize,
    dst: &mut Vec<f32>,
) {
    let panels = rows.div_ceil(mr);
    dst.clear();
    dst.resize(panels * kc * mr, 0.0);
    for (panel, out) in dst.chunks_exact_mut(kc * mr).enumerate() {
        let first = panel * mr;
        let height = mr.min(rows - first);
        for (p, step) in out.chunks_exact_mut(mr).enumerate() {
            for (i, v) in step[..height].iter_mut().enumerate() {
                *v = src.at(r0 + first + i, p0 + p);
            }
        }
    }
}

/// Packs steps `p0..p0 + kc` and columns `c0..c0 + cols` of a right matrix into `dst` as
/// `ceil(cols / nr)` panels (zero-padded).
pub(crate) fn pack_right_block(
    src: &StridedMatrix,
    p0: usize,
    kc: usize,
    c0: usize,
    cols: usize,
    nr: usize,
    dst: &mut Vec<f32>,
) {
    let panels = cols.div_ceil(nr);
    dst.clear();
    dst.resize(panels * kc * nr, 0.0);
    for (panel, out) in dst.chunks_exact_mut(kc * nr).enumerate() {
        let first = panel * nr;
        let width = nr.min(cols - first);
        for (p, step) in out.chunks_exact_mut(nr).enumerate() {
            let row = p0 + p;
            if src.col_stride == 1 {
                let start = row * src.row_stride + c0 + first;
                step[..width].copy_from_slice(&src.data[start..start + width]);
            } else {
                for (j, v) in step[..width].iter_mut().enumerate() {
                    *v = src.at(row, c0 + first + j);
                }
            }
        }
    }
}

/// Where each value of a right operand (`rows x cols`) lives in its packed buffer, for a
/// producer that writes the panels directly (the Winograd convolution's input transform
/// writes sixteen operands at once, one value of each per input tap, with no row copies).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RightPanelLayout {
    rows: usize,
    cols: usize,
    nr: usize,
    kc_max: usize,
    panels: usize,
}

impl RightPanelLayout {
    pub(crate) fn new(rows: usize, cols: usize, kernel: Kernel) -> RightPanelLayout {
        let nr = kernel.nr();
        RightPanelLayout {
            rows,
            cols,
            nr,
            kc_max: kc_for(kernel),
            panels: cols.div_ceil(nr),
        }
    }

    /// Values in the packed buffer (the last panel padded to the kernel's width).
    pub(crate) fn len(&self) -> usize {
        self.panels * self.nr * self.rows
    }

    /// Where row `r`'s values start, as `(offset of column 0, panel stride)`: column `c` of
    /// row `r` is at `start + (c / nr) * panel_stride + c % nr`.
    pub(crate) fn row_start(&self, r: usize) -> (usize, usize) {
        let p0 = r - r % self.kc_max;
        let kc = self.kc_max.min(self.rows - p0);
        (
            p0 * self.panels * self.nr + (r - p0) * self.nr,
            kc * self.nr,
        )
    }

    /// The kernel's panel width.
    pub(crate) fn nr(&self) -> usize {
        self.nr
    }
}

/// A constant operand packed once into a kernel's panel layout.
#[derive(Debug, Clone)]
pub struct PackedMatrix {
    side: Side,
    kernel: Kernel,
    rows: usize,
    cols: usize,
    data: Vec<f32>,
}

impl PackedMatrix {
    /// Packs `src` as the given operand for `kernel`.
    pub fn pack(src: &StridedMatrix, side: Side, kernel: Kernel) -> PackedMatrix {
        let kc_max = kc_for(kernel);
        let (k, other, width) = match side {
            Side::Left => (src.cols, src.rows, kernel.mr()),
            Side::Right => (src.rows, src.cols, kernel.nr()),
        };
        let padded = other.div_ceil(width) * width;
        let mut data = Vec::with_capacity(padded * k);
        let mut block = Vec::new();
        for p0 in (0..k).step_by(kc_max) {
            let kc = kc_max.min(k - p0);
            match side {
                Side::Left => pack_left_block(src, 0, other, p0, kc, width, &mut block),
                Side::Right => pack_right_block(src, p0, kc, 0, other, width, &mut block),
            }
            data.extend_from_slice(&block);
        }
        PackedMatrix {
            side,
            kernel,
            rows: src.rows,
            cols: src.cols,
            data,
        }
    }

    /// A right operand (`rows x cols`) packed from its rows, which `fill_row(r, dst)` writes
    /// (`dst` holds `cols` values), into `buffer` (reused between calls: see
    /// [`PackedMatrix::into_buffer`]). `row` is scratch for one row. A convolution's im2col
    /// block is packed this way straight from the input, with no im2col matrix in between.
    pub(crate) fn pack_right_from_rows(
        rows: usize,
        cols: usize,
        kernel: Kernel,
        mut buffer: Vec<f32>,
        row: &mut Vec<f32>,
        mut fill_row: impl FnMut(usize, &mut [f32]),
    ) -> PackedMatrix {
        let (kc_max, nr) = (kc_for(kernel), kernel.nr());
        let panels = cols.div_ceil(nr);
        buffer.clear();
        buffer.resize(panels * nr * rows, 0.0);
        row.clear();
        row.resize(cols, 0.0);
        for r in 0..rows {
            fill_row(r, row);
            let p0 = r - r % kc_max;
            let kc = kc_max.min(rows - p0);
            let block = &mut buffer[p0 * panels * nr..(p0 + kc) * panels * nr];
            let step = r - p0;
            for (panel, values) in row.chunks(nr).enumerate() {
                let at = panel * kc * nr + step * nr;
                block[at..at + values.len()].copy_from_slice(values);
            }
        }
        PackedMatrix {
            side: Side::Right,
            kernel,
            rows,
            cols,
            data: buffer,
        }
    }

    /// A right operand whose panels a producer wrote into `data` following `layout` (see
    /// [`RightPanelLayout`]); `data` must hold exactly `layout.len()` values.
    pub(crate) fn right_from_panels(
        layout: &RightPanelLayout,
        kernel: Kernel,
        data: Vec<f32>,
    ) -> Result<PackedMatrix> {
        if data.len() != layout.len() || layout.nr != kernel.nr() {
            return Err(TensorError::InvalidArgument(format!(
                "gemm: {} packed values for a {} x {} right operand laid out for {kernel:?} (width {})",
                data.len(),
                layout.rows,
                layout.cols,
                layout.nr
            )));
        }
        Ok(PackedMatrix {
            side: Side::Right,
            kernel,
            rows: layout.rows,
            cols: layout.cols,
            data,
        })
    }

    /// The packed values' buffer, for reuse by the next [`PackedMatrix::pack_right_from_rows`].
    pub(crate) fn into_buffer(self) -> Vec<f32> {
        self.data
    }

    /// A linear layer's weight (`out_features x in_features`, row-major) packed as the right
    /// operand `weight.T` of `input @ weight.T`.
    pub fn pack_linear_weight(
        weight: &[f32],
        out_features: usize,
        in_features: usize,
        kernel: Kernel,
    ) -> Result<PackedMatrix> {
        // weight.T is in_features x out_features with strides (1, in_features).
        let src = StridedMatrix::new(weight, in_features, out_features, 1, in_features)?;
        Ok(PackedMatrix::pack(&src, Side::Right, kernel))
    }

    /// Which operand it is.
    pub fn side(&self) -> Side {
        self.side
    }

    /// The kernel whose layout it has.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Rows of the unpacked matrix.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns of the unpacked matrix.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Bytes held by the packed values.
    pub fn byte_len(&self) -> usize {
        self.data.len() * std::mem::size_of::<f32>()
    }

    /// The packed panels of block `p0..p0 + kc` (whose first step is `p0`, a multiple of the
    /// kernel's block size), starting at panel `first_panel`.
    pub(crate) fn block(&self, p0: usize, kc: usize, first_panel: usize) -> &[f32] {
        let (other, width) = match self.side {
            Side::Left => (self.rows, self.kernel.mr()),
            Side::Right => (self.cols, self.kernel.nr()),
        };
        let panels = other.div_ceil(width);
        let start = p0 * panels * width;
        &self.data[start + first_panel * kc * width..start + panels * kc * width]
    }
}
