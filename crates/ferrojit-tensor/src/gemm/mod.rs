//! Float32 GEMM over pre-packed operands with fused epilogues: `C = epilogue(A @ B)`, where a
//! constant operand (a layer's weight) is packed once into the micro-kernel's panel layout
//! ([`PackedMatrix`]) and the epilogue (bias or batch-norm scale and shift, residual add,
//! activation) runs on each output tile right after its last block of products, while the
//! tile is still in cache.
//!
//! Invariants: a [`PackedMatrix`] is laid out for one [`Kernel`] and is only ever run by that
//! kernel; it is a copy, so later writes to the tensor it was packed from do not reach it
//! (whoever caches one must key it on something that changes when the weight does).

mod epilogue;
mod kernel;
mod linear;
mod pack;
pub(crate) mod weight_cache;

pub use epilogue::{Activation, ChannelAxis, Epilogue, Residual};
pub use kernel::Kernel;
pub use linear::{linear_epilogue, linear_epilogue_supported, packed_linear_weight};
pub(crate) use pack::RightPanelLayout;
pub use pack::{PackedMatrix, Side, StridedMatrix};
pub use weight_cache::cached_weight_count;

use crate::error::{Result, TensorError};
use pack::{kc_for, pack_left_block, pack_right_block};

/// One operand of the product: packed once, or strided and packed block by block.
#[derive(Debug, Clone, Copy)]
pub enum Operand<'a> {
    /// Packed ahead of time.
    Packed(&'a PackedMatrix),
    /// Packed by the product itself.
    Strided(StridedMatrix<'a>),
}

impl Operand<'_> {
    fn packed(&self) -> Option<&PackedMatrix> {
        match self {
            Operand::Packed(p) => Some(p),
            Operand::Strided(_) => None,
        }
    }
}

/// Output columns per block when the right operand is packed on the fly: its block
/// (`KC x NC`) is meant to stay in the L2 cache.
const NC: usize = 512;

/// `(m, k, n, kernel)` of `a @ b`: the operands' sides, shared size and kernels checked.
fn product_shape(a: Operand, b: Operand) -> Result<(usize, usize, usize, Kernel)> {
    let (m, k) = match a {
        Operand::Packed(p) if p.side() == Side::Left => (p.rows(), p.cols()),
        Operand::Strided(s) => (s.rows, s.cols),
        Operand::Packed(_) => {
            return Err(TensorError::InvalidArgument(
                "gemm: the left operand was packed as a right operand".into(),
            ))
        }
    };
    let (k2, n) = match b {
        Operand::Packed(p) if p.side() == Side::Right => (p.rows(), p.cols()),
        Operand::Strided(s) => (s.rows, s.cols),
        Operand::Packed(_) => {
            return Err(TensorError::InvalidArgument(
                "gemm: the right operand was packed as a left operand".into(),
            ))
        }
    };
    if k != k2 {
        return Err(TensorError::MatmulShape {
            op: "gemm",
            rows_a: m,
            cols_a: k,
            rows_b: k2,
            cols_b: n,
        });
    }
    let kernel = match (a.packed(), b.packed()) {
        (Some(pa), Some(pb)) if pa.kernel() != pb.kernel() => {
            return Err(TensorError::InvalidArgument(format!(
                "gemm: operands packed for different kernels ({:?} and {:?})",
                pa.kernel(),
                pb.kernel()
            )))
        }
        (Some(p), _) | (None, Some(p)) => p.kernel(),
        (None, None) => Kernel::best(),
    };
    if !kernel.is_available() {
        return Err(TensorError::InvalidArgument(format!(
            "gemm: operand packed for {kernel:?}, which this CPU lacks"
        )));
    }
    Ok((m, k, n, kernel))
}

/// `c = epilogue(a @ b)` for an `m x k` left operand, a `k x n` right operand and a row-major
/// `m x n` output `c`. Work above the pool threshold is split across the intra-op threads
/// (by rows when there are enough, otherwise by columns); every element is computed by the
/// same kernel over the same `k` order either way.
pub fn gemm(a: Operand, b: Operand, c: &mut [f32], epilogue: &Epilogue) -> Result<()> {
    let (m, k, n, kernel) = product_shape(a, b)?;
    if c.len() != m * n {
        return Err(TensorError::InvalidArgument(format!(
            "gemm: output has {} values, expected {m} x {n}",
            c.len()
        )));
    }
    epilogue.check(m, n)?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    let (mr, nr) = (kernel.mr(), kernel.nr());
    let work = m.saturating_mul(n).saturating_mul(k.max(1));
    let threads = if work >= crate::ops::parallel::PARALLEL_THRESHOLD {
        crate::ops::parallel::num_threads()
    } else {
        1
    };
    let job = Job {
        kernel,
        a,
        b,
        k,
        epilogue,
    };
    if threads <= 1 {
        job.run(0..m, 0..n, c, n);
        return Ok(());
    }
    use rayon::prelude::*;
    if m >= threads * mr * 2 {
        // Rows: contiguous chunks of `c`, aligned to the kernel's tile height.
        let rows_per_task = m.div_ceil(threads).div_ceil(mr) * mr;
        c.par_chunks_mut(rows_per_task * n)
            .enumerate()
            .for_each(|(t, chunk)| {
                let r0 = t * rows_per_task;
                job.run(r0..r0 + chunk.len() / n, 0..n, chunk, n);
            });
    } else {
        // Few rows: each task computes a block of columns into its own buffer.
        let cols_per_task = n.div_ceil(threads).div_ceil(nr) * nr;
        let blocks: Vec<(usize, Vec<f32>)> = (0..n.div_ceil(cols_per_task))
            .into_par_iter()
            .map(|t| {
                let c0 = t * cols_per_task;
                let width = cols_per_task.min(n - c0);
                let mut out = vec![0f32; m * width];
                job.run(0..m, c0..c0 + width, &mut out, width);
                (c0, out)
            })
            .collect();
        for (c0, out) in blocks {
            let width = out.len() / m;
            for (dst, src) in c.chunks_exact_mut(n).zip(out.chunks_exact(width)) {
                dst[c0..c0 + width].copy_from_slice(src);
            }
        }
    }
    Ok(())
}

/// Rows `rows` of `epilogue(a @ b)` on the calling thread, written into a block of a larger
/// output: row `i`, column `j` of the product goes to
/// `out[(i - rows.start) * out_stride + j]`. Tasks that each own a disjoint block of one
/// buffer (a convolution's tiles of output positions, or its bands of output channels) call
/// it side by side. The epilogue's row numbers are the product's (`rows.start` on), its
/// column numbers start at 0.
///
/// # Safety
/// `out` points to `rows.len()` rows of `n` writable values `out_stride` apart
/// (`out_stride >= n`), which nothing else reads or writes during the call.
pub(crate) unsafe fn gemm_block_raw(
    a: Operand,
    b: Operand,
    rows: std::ops::Range<usize>,
    out: *mut f32,
    out_stride: usize,
    epilogue: &Epilogue,
) -> Result<()> {
    let (m, k, n, kernel) = product_shape(a, b)?;
    if n > out_stride || rows.end > m || !rows.start.is_multiple_of(kernel.mr()) {
        return Err(TensorError::InvalidArgument(format!(
            "gemm: block of rows {rows:?} of {m} (tile height {}) and {n} columns at row \
             stride {out_stride} is not a valid output block",
            kernel.mr()
        )));
    }
    epilogue.check(m, n)?;
    if rows.is_empty() || n == 0 {
        return Ok(());
    }
    let job = Job {
        kernel,
        a,
        b,
        k,
        epilogue,
    };
    // SAFETY: forwarded from the caller's contract: `rows.len()` rows of `n` columns at
    // `out_stride`.
    unsafe { job.run_raw(rows, 0..n, out, out_stride) };
    Ok(())
}

/// The operands and epilogue of one product, shared by its tasks.
struct Job<'a> {
    kernel: Kernel,
    a: Operand<'a>,
    b: Operand<'a>,
    k: usize,
    epilogue: &'a Epilogue<'a>,
}

impl Job<'_> {
    /// Computes the output rows `rows` and columns `cols` into `out`
    /// (`out[(i - rows.start) * out_stride + (j - cols.start)]`). `rows.start` is a multiple
    /// of MR and `cols.start` of NR, so packed panels line up.
    fn run(
        &self,
        rows: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
        out: &mut [f32],
        out_stride: usize,
    ) {
        let (m_len, n_len) = (rows.len(), cols.len());
        assert!(
            m_len == 0
                || n_len == 0
                || (out_stride >= n_len && out.len() >= (m_len - 1) * out_stride + n_len),
            "gemm: output block out of bounds"
        );
        // SAFETY: the assert covers every element of the block (rows below `m_len`, columns
        // below `n_len` at `out_stride`), and `out` is borrowed exclusively for the call.
        unsafe { self.run_raw(rows, cols, out.as_mut_ptr(), out_stride) }
    }

    /// [`Job::run`] through a raw output pointer, so that tasks can write disjoint column
    /// blocks of the same rows (no task forms a reference to another's elements).
    ///
    /// # Safety
    /// `out` points to `rows.len()` rows of `cols.len()` writable values `out_stride` apart
    /// (`out_stride >= cols.len()`), which nothing else reads or writes during the call.
    unsafe fn run_raw(
        &self,
        rows: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
        out: *mut f32,
        out_stride: usize,
    ) {
        let kernel = self.kernel;
        let (mr, nr) = (kernel.mr(), kernel.nr());
        let (m_len, n_len) = (rows.len(), cols.len());
        // One row segment of the block. SAFETY (for every caller below): `r < m_len` and
        // `c0 + width <= n_len`, so the segment lies inside the block the caller vouches for,
        // and segments of different (row, column range) pairs never overlap.
        let segment = |r: usize, c0: usize, width: usize| unsafe {
            std::slice::from_raw_parts_mut(out.add(r * out_stride + c0), width)
        };
        if self.k == 0 {
            for r in 0..m_len {
                let row = segment(r, 0, n_len);
                row.fill(0.0);
                self.epilogue
                    .apply_tile(row, out_stride, rows.start + r, 1, cols.start, n_len);
            }
            return;
        }
        let kc_max = kc_for(kernel);
        let mc_max = mr * 24;
        let mut a_buf = Vec::new();
        let mut b_buf = Vec::new();
        let mut edge = [0f32; 8 * 32];
        for j0 in (0..n_len).step_by(NC) {
            let nc = NC.min(n_len - j0);
            for p0 in (0..self.k).step_by(kc_max) {
                let kc = kc_max.min(self.k - p0);
                let accumulate = p0 > 0;
                let last = p0 + kc == self.k;
                let b_block: &[f32] = match self.b {
                    Operand::Packed(p) => p.block(p0, kc, (cols.start + j0) / nr),
                    Operand::Strided(s) => {
                        pack_right_block(&s, p0, kc, cols.start + j0, nc, nr, &mut b_buf);
                        &b_buf
                    }
                };
                for i0 in (0..m_len).step_by(mc_max) {
                    let mc = mc_max.min(m_len - i0);
                    let a_block: &[f32] = match self.a {
                        Operand::Packed(p) => p.block(p0, kc, (rows.start + i0) / mr),
                        Operand::Strided(s) => {
                            pack_left_block(&s, rows.start + i0, mc, p0, kc, mr, &mut a_buf);
                            &a_buf
                        }
                    };
                    for jp in 0..nc.div_ceil(nr) {
                        let b_panel = &b_block[jp * kc * nr..(jp + 1) * kc * nr];
                        let j = j0 + jp * nr;
                        let width = nr.min(n_len - j);
                        for ip in 0..mc.div_ceil(mr) {
                            let a_panel = &a_block[ip * kc * mr..(ip + 1) * kc * mr];
                            let i = i0 + ip * mr;
                            let height = mr.min(m_len - i);
                            if width == nr && height == mr {
                                // SAFETY: a full tile: rows i..i + mr and columns j..j + nr
                                // lie inside the block (i + mr <= m_len, j + nr <= n_len).
                                unsafe {
                                    kernel.tile_raw(
                                        kc,
                                        a_panel,
                                        b_panel,
                                        out.add(i * out_stride + j),
                                        out_stride,
                                        accumulate,
                                    )
                                };
                            } else {
                                kernel.tile(kc, a_panel, b_panel, &mut edge, nr, false);
                                for r in 0..height {
                                    let dst = segment(i + r, j, width);
                                    let src = &edge[r * nr..r * nr + width];
                                    if accumulate {
                                        dst.iter_mut().zip(src).for_each(|(d, s)| *d += s);
                                    } else {
                                        dst.copy_from_slice(src);
                                    }
                                }
                            }
                            if last && !self.epilogue.is_identity() {
                                for r in 0..height {
                                    self.epilogue.apply_tile(
                                        segment(i + r, j, width),
                                        out_stride,
                                        rows.start + i + r,
                                        1,
                                        cols.start + j,
                                        width,
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
