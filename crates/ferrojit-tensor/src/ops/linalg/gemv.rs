//! One row times a matrix (GEMV): `c = a @ b + beta * c` for a single row `a`, with the matrix
//! read in place, once, and never packed: a linear layer or a recurrent step at batch 1, where a
//! blocked GEMM's packing of the weight would cost as much as the product itself.
//!
//! Two layouts are read directly: contiguous columns (`b = weight.T` of an `[N, K]` linear
//! weight: `N` contiguous dot products) and contiguous rows (a `[K, N]` matrix: scaled rows
//! added into the sums); any other strides take a plain loop. Large products are split across
//! the pool by output columns; every output is computed the same way whatever the split.

use super::FloatGemm;

/// Independent partial sums per dot product: two 256-bit registers of float32, so the
/// multiply-adds do not wait on each other.
const LANES: usize = 16;

/// Output columns computed together in the dot-product layout, sharing each load of the row.
const GROUP: usize = 4;

/// Columns summed together in the row layout: their partial sums stay in the L1 cache.
const ROW_LAYOUT_BLOCK: usize = 512;

/// Products below this many multiply-adds stay on the calling thread (the pool hand-off
/// costs more than it saves).
const THREADED_PRODUCT: usize = 2 * crate::ops::parallel::PARALLEL_THRESHOLD;

/// `c = a @ b + beta * c` for one row `a` (`k` elements at stride `a_cs`), a `k x n` matrix `b`
/// with (row, column) strides `b_strides`, and `n` outputs `c`, on up to `threads` pool
/// threads. The caller has checked that every index formed from the sizes and strides lies
/// inside the slices. With `beta == 0`, `c` is not read (as in BLAS).
#[allow(clippy::too_many_arguments)]
pub(super) fn row_times_matrix<T: FloatGemm>(
    k: usize,
    n: usize,
    a: &[T],
    a_cs: usize,
    b: &[T],
    b_strides: (usize, usize),
    beta: T,
    c: &mut [T],
    threads: usize,
) {
    let gathered: Vec<T>;
    let row: &[T] = if a_cs == 1 {
        &a[..k]
    } else {
        gathered = (0..k).map(|p| a[p * a_cs]).collect();
        &gathered
    };
    let c = &mut c[..n];
    if k == 0 {
        // An empty sum: `b` may be empty, so no column of it is formed.
        c.iter_mut().for_each(|slot| store(slot, T::ZERO, beta));
        return;
    }
    let threads = if k.saturating_mul(n) >= THREADED_PRODUCT {
        threads.min(n.div_ceil(LANES))
    } else {
        1
    };
    if threads <= 1 {
        columns(row, b, b_strides, 0, c, beta);
        return;
    }
    use rayon::prelude::*;
    // Whole groups of columns per task, so that tasks split no group.
    let per_task = n.div_ceil(threads).div_ceil(LANES) * LANES;
    c.par_chunks_mut(per_task)
        .enumerate()
        .for_each(|(task, out)| columns(row, b, b_strides, task * per_task, out, beta));
}

/// Outputs `first .. first + out.len()` of `row @ b`, with the best instructions this CPU has.
fn columns<T: FloatGemm>(
    row: &[T],
    b: &[T],
    b_strides: (usize, usize),
    first: usize,
    out: &mut [T],
    beta: T,
) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU supports AVX2 and FMA, the features the function is compiled for
        // (checked just above); it is otherwise ordinary safe code.
        unsafe { columns_avx2_fma(row, b, b_strides, first, out, beta) };
        return;
    }
    columns_with::<T, false>(row, b, b_strides, first, out, beta);
}

/// [`columns_with`] compiled for AVX2 with fused multiply-adds.
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn columns_avx2_fma<T: FloatGemm>(
    row: &[T],
    b: &[T],
    b_strides: (usize, usize),
    first: usize,
    out: &mut [T],
    beta: T,
) {
    columns_with::<T, true>(row, b, b_strides, first, out, beta);
}

/// `acc + x * y`, rounded once when `FUSED` (only where the CPU has the instruction: without
/// it, `mul_add` is a slow library call).
#[inline(always)]
fn multiply_add<T: FloatGemm, const FUSED: bool>(x: T, y: T, acc: T) -> T {
    if FUSED {
        x.fused_multiply_add(y, acc)
    } else {
        acc + x * y
    }
}

/// Stores one finished sum: `sum + beta * old`, or `sum` alone when beta is 0.
#[inline(always)]
fn store<T: FloatGemm>(slot: &mut T, sum: T, beta: T) {
    *slot = if beta == T::ZERO {
        sum
    } else {
        sum + beta * *slot
    };
}

/// The layout-specific loops, inlined into each instruction-set variant.
#[inline(always)]
fn columns_with<T: FloatGemm, const FUSED: bool>(
    row: &[T],
    b: &[T],
    (b_rs, b_cs): (usize, usize),
    first: usize,
    out: &mut [T],
    beta: T,
) {
    if b_rs == 1 && (b_cs != 1 || out.len() == 1) {
        dot_columns::<T, FUSED>(row, b, b_cs, first, out, beta);
    } else if b_cs == 1 {
        row_layout::<T, FUSED>(row, b, b_rs, first, out, beta);
    } else {
        for (j, slot) in out.iter_mut().enumerate() {
            let start = (first + j) * b_cs;
            let mut total = T::ZERO;
            for (p, &x) in row.iter().enumerate() {
                total = multiply_add::<T, FUSED>(x, b[start + p * b_rs], total);
            }
            store(slot, total, beta);
        }
    }
}

/// The sum of the partial sums, as a balanced tree.
#[inline(always)]
fn lane_total<T: FloatGemm>(lanes: &[T; LANES]) -> T {
    let mut half = [T::ZERO; LANES / 2];
    for (l, h) in half.iter_mut().enumerate() {
        *h = lanes[l] + lanes[l + LANES / 2];
    }
    let quarter: [T; 4] = std::array::from_fn(|l| half[l] + half[l + 4]);
    (quarter[0] + quarter[2]) + (quarter[1] + quarter[3])
}

/// Dot products of `row` with columns `first ..` of `b`, each column `row.len()` contiguous
/// values starting at `column * b_cs`.
#[inline(always)]
fn dot_columns<T: FloatGemm, const FUSED: bool>(
    row: &[T],
    b: &[T],
    b_cs: usize,
    first: usize,
    out: &mut [T],
    beta: T,
) {
    let k = row.len();
    let full = k / LANES * LANES;
    let column = |j: usize| &b[(first + j) * b_cs..(first + j) * b_cs + k];
    let mut groups = out.chunks_exact_mut(GROUP);
    let mut j = 0;
    for slots in &mut groups {
        let cols: [&[T]; GROUP] = std::array::from_fn(|g| column(j + g));
        let mut acc = [[T::ZERO; LANES]; GROUP];
        for (x, chunks) in row[..full].chunks_exact(LANES).zip(0..) {
            let p = chunks * LANES;
            for (lanes, col) in acc.iter_mut().zip(&cols) {
                let w = &col[p..p + LANES];
                for l in 0..LANES {
                    lanes[l] = multiply_add::<T, FUSED>(x[l], w[l], lanes[l]);
                }
            }
        }
        for ((slot, lanes), col) in slots.iter_mut().zip(&acc).zip(&cols) {
            let mut total = lane_total(lanes);
            for (&x, &w) in row[full..].iter().zip(&col[full..]) {
                total = multiply_add::<T, FUSED>(x, w, total);
            }
            store(slot, total, beta);
        }
        j += GROUP;
    }
    for (g, slot) in groups.into_remainder().iter_mut().enumerate() {
        let col = column(j + g);
        let mut lanes = [T::ZERO; LANES];
        for (x, w) in row[..full]
            .chunks_exact(LANES)
            .zip(col[..full].chunks_exact(LANES))
        {
            for l in 0..LANES {
                lanes[l] = multiply_add::<T, FUSED>(x[l], w[l], lanes[l]);
            }
        }
        let mut total = lane_total(&lanes);
        for (&x, &w) in row[full..].iter().zip(&col[full..]) {
            total = multiply_add::<T, FUSED>(x, w, total);
        }
        store(slot, total, beta);
    }
}

/// `row @ b` for columns `first ..` of a `b` whose rows are contiguous (`b_rs` apart): each row
/// of `b`, scaled by its coefficient, is added into a block of sums (in row order).
#[inline(always)]
fn row_layout<T: FloatGemm, const FUSED: bool>(
    row: &[T],
    b: &[T],
    b_rs: usize,
    first: usize,
    out: &mut [T],
    beta: T,
) {
    let mut sums = [T::ZERO; ROW_LAYOUT_BLOCK];
    for (block, slots) in out.chunks_mut(ROW_LAYOUT_BLOCK).enumerate() {
        let start = first + block * ROW_LAYOUT_BLOCK;
        let width = slots.len();
        let sums = &mut sums[..width];
        sums.fill(T::ZERO);
        for (p, &coefficient) in row.iter().enumerate() {
            let values = &b[p * b_rs + start..p * b_rs + start + width];
            for (sum, &value) in sums.iter_mut().zip(values) {
                *sum = multiply_add::<T, FUSED>(coefficient, value, *sum);
            }
        }
        for (slot, &sum) in slots.iter_mut().zip(sums.iter()) {
            store(slot, sum, beta);
        }
    }
}
