//! The product through matrixmultiply with the epilogue as a second, vectorized pass over the
//! output: what `linear_epilogue` runs on CPUs whose best packed kernel is the AVX2 one, which
//! measured slower than matrixmultiply's own AVX2 kernel (`examples/gemm_speed.rs` with
//! `FERROJIT_GEMM_KERNEL=avx2`).

use super::{Epilogue, Kernel, StridedMatrix};
use crate::error::{Result, TensorError};

/// Output rows per task of the epilogue pass (each block is one independent epilogue tile).
const EPILOGUE_ROWS_PER_TASK: usize = 16;

/// Whether products go through matrixmultiply on this CPU: when the packed kernel in use is the
/// AVX2 one. `FERROJIT_GEMM_AVX2=packed` keeps the packed AVX2 kernel (to measure both).
/// Decided once per process.
pub fn prefers_matrixmultiply() -> bool {
    static CHOICE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CHOICE.get_or_init(|| {
        let packed_requested =
            std::env::var("FERROJIT_GEMM_AVX2").is_ok_and(|v| v.trim() == "packed");
        Kernel::best() == Kernel::Avx2Fma && !packed_requested
    })
}

/// `c = epilogue(a @ b)` for an `m x k` operand `a`, a `k x n` operand `b` and a row-major
/// `m x n` output: matrixmultiply's product (split across the intra-op threads as
/// `ops::linalg` splits it), then the epilogue over blocks of rows, vectorized for the CPU.
pub fn gemm_matrixmultiply(
    a: StridedMatrix,
    b: StridedMatrix,
    c: &mut [f32],
    epilogue: &Epilogue,
) -> Result<()> {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    if b.rows != k {
        return Err(TensorError::MatmulShape {
            op: "gemm",
            rows_a: m,
            cols_a: k,
            rows_b: b.rows,
            cols_b: n,
        });
    }
    if c.len() != m * n {
        return Err(TensorError::InvalidArgument(format!(
            "gemm: output has {} values, expected {m} x {n}",
            c.len()
        )));
    }
    epilogue.check(m, n)?;
    crate::ops::linalg::strided_gemm::<f32>(
        m,
        k,
        n,
        a.data,
        (a.row_stride, a.col_stride),
        b.data,
        (b.row_stride, b.col_stride),
        0.0,
        c,
    )?;
    if epilogue.is_identity() || m == 0 || n == 0 {
        return Ok(());
    }
    let parallel = m.saturating_mul(n) >= crate::ops::parallel::PARALLEL_THRESHOLD
        && crate::ops::parallel::num_threads() > 1;
    if parallel {
        use rayon::prelude::*;
        c.par_chunks_mut(EPILOGUE_ROWS_PER_TASK * n)
            .enumerate()
            .for_each(|(t, block)| {
                epilogue.apply_tile(block, n, t * EPILOGUE_ROWS_PER_TASK, block.len() / n, 0, n)
            });
    } else {
        epilogue.apply_tile(c, n, 0, m, 0, n);
    }
    Ok(())
}
