//! LDL^T factorisation of symmetric matrices with Bunch-Kaufman pivoting, as LAPACK's
//! `sytrf`/`sytrs` with UPLO 'L' compute it: `torch.linalg.ldl_factor`, `ldl_factor_ex` and
//! `ldl_solve`.
//!
//! The compact result is LAPACK's: L's multipliers below the diagonal, the 1x1 and 2x2
//! blocks of D on (and, for a 2x2 block, just below) the diagonal, and 1-based pivots, `k`
//! for a 1x1 block whose row was swapped with row `k`, `-k` (on both rows) for a 2x2 block.
//! PyTorch zeroes the strict upper triangle, so this does too. Only the lower triangle of
//! the input is read.

use super::batch::{
    batch_prefix, broadcast_batch, broadcast_source_index, read_matrices, read_square,
    tensor_from_f64,
};
use crate::error::{Result, TensorError};
use crate::tensor::Tensor;

/// Column-major view helpers for the row-major buffer: `at(r, c)` is row r, column c.
struct Lower<'a> {
    n: usize,
    values: &'a mut [f64],
}

impl Lower<'_> {
    fn at(&self, r: usize, c: usize) -> f64 {
        self.values[r * self.n + c]
    }

    fn set(&mut self, r: usize, c: usize, value: f64) {
        self.values[r * self.n + c] = value;
    }

    fn swap(&mut self, a: (usize, usize), b: (usize, usize)) {
        self.values.swap(a.0 * self.n + a.1, b.0 * self.n + b.1);
    }
}

/// The index (from `start`) of the entry of largest magnitude among `values`, the first on
/// ties, as BLAS `iamax` picks it.
fn largest(values: impl Iterator<Item = f64>) -> (usize, f64) {
    let mut best = (0, -1.0);
    for (i, v) in values.enumerate() {
        if v.abs() > best.1 {
            best = (i, v.abs());
        }
    }
    best
}

/// `sytf2` with UPLO 'L' on one row-major `n x n` matrix in place: returns the 1-based
/// pivots and LAPACK's `info` (0, or the 1-based index of the first exactly zero block of D).
fn factor(matrix: &mut [f64], n: usize) -> (Vec<i32>, i32) {
    let alpha = (1.0 + 17f64.sqrt()) / 8.0;
    let mut a = Lower { n, values: matrix };
    let mut pivots = vec![0i32; n];
    let mut info = 0;
    let mut k = 0;
    while k < n {
        let mut step = 1;
        let diagonal = a.at(k, k).abs();
        let (below_index, column_max) = if k + 1 < n {
            let (i, v) = largest((k + 1..n).map(|r| a.at(r, k)));
            (k + 1 + i, v)
        } else {
            (k, 0.0)
        };
        let pivot;
        if diagonal.max(column_max) == 0.0 || diagonal.is_nan() {
            // A zero column: D(k) is zero and nothing is eliminated.
            if info == 0 {
                info = k as i32 + 1;
            }
            pivot = k;
        } else {
            if diagonal >= alpha * column_max {
                pivot = k;
            } else {
                // The largest off-diagonal entry in row/column `below_index`.
                let (_, mut row_max) = largest((k..below_index).map(|c| a.at(below_index, c)));
                if below_index + 1 < n {
                    let (_, v) = largest((below_index + 1..n).map(|r| a.at(r, below_index)));
                    row_max = row_max.max(v);
                }
                if diagonal >= alpha * column_max * (column_max / row_max) {
                    pivot = k;
                } else if a.at(below_index, below_index).abs() >= alpha * row_max {
                    pivot = below_index;
                } else {
                    pivot = below_index;
                    step = 2;
                }
            }
            let kk = k + step - 1;
            if pivot != kk {
                // Swap rows and columns kk and pivot of the trailing lower triangle.
                for r in pivot + 1..n {
                    a.swap((r, kk), (r, pivot));
                }
                for j in kk + 1..pivot {
                    a.swap((j, kk), (pivot, j));
                }
                a.swap((kk, kk), (pivot, pivot));
                if step == 2 {
                    a.swap((k + 1, k), (pivot, k));
                }
            }
            if step == 1 {
                if k + 1 < n {
                    // Rank-1 update of the trailing matrix, then scale the column by 1/D(k).
                    let inverse = 1.0 / a.at(k, k);
                    for j in k + 1..n {
                        let factor = inverse * a.at(j, k);
                        for i in j..n {
                            let value = a.at(i, j) - a.at(i, k) * factor;
                            a.set(i, j, value);
                        }
                    }
                    for r in k + 1..n {
                        let value = a.at(r, k) * inverse;
                        a.set(r, k, value);
                    }
                }
            } else if k + 2 < n {
                // Rank-2 update with the inverse of the 2x2 block D(k..k+2).
                let d21 = a.at(k + 1, k);
                let d11 = a.at(k + 1, k + 1) / d21;
                let d22 = a.at(k, k) / d21;
                let t = 1.0 / (d11 * d22 - 1.0);
                let d21 = t / d21;
                for j in k + 2..n {
                    let wk = d21 * (d11 * a.at(j, k) - a.at(j, k + 1));
                    let wk1 = d21 * (d22 * a.at(j, k + 1) - a.at(j, k));
                    for i in j..n {
                        let value = a.at(i, j) - (a.at(i, k) * wk + a.at(i, k + 1) * wk1);
                        a.set(i, j, value);
                    }
                    a.set(j, k, wk);
                    a.set(j, k + 1, wk1);
                }
            }
        }
        if step == 1 {
            pivots[k] = pivot as i32 + 1;
        } else {
            pivots[k] = -(pivot as i32 + 1);
            pivots[k + 1] = -(pivot as i32 + 1);
        }
        k += step;
    }
    // PyTorch returns only the lower triangle.
    for r in 0..n {
        for c in r + 1..n {
            a.set(r, c, 0.0);
        }
    }
    (pivots, info)
}

/// `(LD, pivots, info)` for every matrix of `a`.
fn factor_all(op: &str, a: &Tensor) -> Result<(Tensor, Tensor, Tensor, Vec<i32>)> {
    let matrices = read_square(op, "A", a)?;
    let n = matrices.rows;
    let mut values = matrices.values.clone();
    let mut pivots = Vec::with_capacity(matrices.count() * n);
    let mut infos = Vec::with_capacity(matrices.count());
    for index in 0..matrices.count() {
        let (p, info) = factor(&mut values[index * n * n..(index + 1) * n * n], n);
        pivots.extend(p);
        infos.push(info);
    }
    Ok((
        tensor_from_f64(values, a.sizes(), matrices.dtype)?,
        Tensor::from_vec(pivots, &matrices.sizes_with(&[n]))?,
        Tensor::from_vec(infos.clone(), &matrices.batch_sizes)?,
        infos,
    ))
}

/// `torch.linalg.ldl_factor_ex(A, hermitian, check_errors)`: `(LD, pivots, info)`.
/// `hermitian` changes nothing for real matrices.
pub fn ldl_factor_ex(
    a: &Tensor,
    _hermitian: bool,
    check_errors: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    let op = "torch.linalg.ldl_factor_ex";
    let (ld, pivots, info, infos) = factor_all(op, a)?;
    if check_errors {
        check_infos(op, a, &infos)?;
    }
    Ok((ld, pivots, info))
}

/// `torch.linalg.ldl_factor(A, hermitian)`: `(LD, pivots)`; a singular D is an error.
pub fn ldl_factor(a: &Tensor, _hermitian: bool) -> Result<(Tensor, Tensor)> {
    let (ld, pivots, _, infos) = factor_all("torch.linalg.ldl_factor_ex", a)?;
    check_infos("torch.linalg.ldl_factor", a, &infos)?;
    Ok((ld, pivots))
}

/// PyTorch has no message of its own for a positive `sytrf` info (it fails an internal
/// assertion that names the code); this keeps its words.
fn check_infos(op: &str, a: &Tensor, infos: &[i32]) -> Result<()> {
    let batched = a.dim() > 2;
    for (index, &info) in infos.iter().enumerate() {
        if info != 0 {
            return Err(TensorError::InvalidArgument(format!(
                "{op}: {}Unknown error code: {info}.",
                batch_prefix(batched, index)
            )));
        }
    }
    Ok(())
}

/// `sytrs` with UPLO 'L': solves `A X = B` for one factored matrix, `B` row-major `n x k`.
fn solve_one(ld: &[f64], pivots: &[i64], b: &mut [f64], n: usize, k: usize) {
    let l = |r: usize, c: usize| ld[r * n + c];
    let swap_rows = |b: &mut [f64], x: usize, y: usize| {
        if x != y {
            for c in 0..k {
                b.swap(x * k + c, y * k + c);
            }
        }
    };
    // L D Y = B, forward.
    let mut i = 0;
    while i < n {
        if pivots[i] > 0 {
            swap_rows(b, i, pivots[i] as usize - 1);
            for r in i + 1..n {
                for c in 0..k {
                    b[r * k + c] -= l(r, i) * b[i * k + c];
                }
            }
            for c in 0..k {
                b[i * k + c] /= l(i, i);
            }
            i += 1;
        } else {
            swap_rows(b, i + 1, (-pivots[i]) as usize - 1);
            for r in i + 2..n {
                for c in 0..k {
                    b[r * k + c] -= l(r, i) * b[i * k + c] + l(r, i + 1) * b[(i + 1) * k + c];
                }
            }
            let off = l(i + 1, i);
            let first = l(i, i) / off;
            let second = l(i + 1, i + 1) / off;
            let denominator = first * second - 1.0;
            for c in 0..k {
                let x = b[i * k + c] / off;
                let y = b[(i + 1) * k + c] / off;
                b[i * k + c] = (second * x - y) / denominator;
                b[(i + 1) * k + c] = (first * y - x) / denominator;
            }
            i += 2;
        }
    }
    // L^T X = Y, backward.
    let mut i = n;
    while i > 0 {
        let row = i - 1;
        if pivots[row] > 0 {
            for c in 0..k {
                let dot: f64 = (row + 1..n).map(|r| l(r, row) * b[r * k + c]).sum();
                b[row * k + c] -= dot;
            }
            swap_rows(b, row, pivots[row] as usize - 1);
            i -= 1;
        } else {
            for c in 0..k {
                let dot: f64 = (row + 1..n).map(|r| l(r, row) * b[r * k + c]).sum();
                let dot_previous: f64 = (row + 1..n).map(|r| l(r, row - 1) * b[r * k + c]).sum();
                b[row * k + c] -= dot;
                b[(row - 1) * k + c] -= dot_previous;
            }
            swap_rows(b, row, (-pivots[row]) as usize - 1);
            i -= 2;
        }
    }
}

/// `torch.linalg.ldl_solve(LD, pivots, B, hermitian)`: X with `A X = B` for the A whose
/// factorisation `ldl_factor` returned. Batch dimensions broadcast.
pub fn ldl_solve(ld: &Tensor, pivots: &Tensor, b: &Tensor, _hermitian: bool) -> Result<Tensor> {
    let op = "torch.linalg.ldl_solve";
    let factors = read_square(op, "LD", ld)?;
    if b.dim() < 2 {
        return Err(TensorError::InvalidArgument(format!(
            "Dimension out of range (expected to be in range of [-{0}, {1}], but got -2)",
            b.dim().max(1),
            b.dim().max(1) - 1
        )));
    }
    let rhs = read_matrices(op, "B", b)?;
    let n = factors.rows;
    if !pivots.dtype().is_integral(false) {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: Expected pivots to be integers. Got {}",
            pivots.dtype().scalar_type_name()
        )));
    }
    if ld.dtype() != b.dtype() {
        return Err(TensorError::InvalidArgument(format!(
            "Expected b and A to have the same dtype, but found b of type {} and A of type {} instead.",
            b.dtype().scalar_type_name(),
            ld.dtype().scalar_type_name()
        )));
    }
    let pivot_sizes = pivots.sizes();
    if pivot_sizes.is_empty()
        || pivot_sizes[pivot_sizes.len() - 1] != n
        || pivot_sizes[..pivot_sizes.len() - 1] != factors.batch_sizes[..]
    {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots with shape {} instead",
            crate::error::format_shape(pivot_sizes)
        )));
    }
    if rhs.rows != n {
        return Err(TensorError::InvalidArgument(format!(
            "Incompatible matrix sizes for {op}: each A matrix is {n} by {n} but each b matrix is {} by {}",
            rhs.rows, rhs.cols
        )));
    }
    let pivot_values: Vec<i64> = pivots.to_f64_vec().into_iter().map(|v| v as i64).collect();
    if pivot_values.iter().any(|p| p.unsigned_abs() < 1) {
        return Err(TensorError::InvalidArgument(
            "Pivots given to ldl_solve must all satisfy |pivot| >= 1. Did you properly pass the result of ldl_factor?".to_string(),
        ));
    }
    if pivot_values.iter().any(|p| p.unsigned_abs() as usize > n) {
        return Err(TensorError::InvalidArgument(
            "Pivots given to ldl_solve must all satisfy |pivot| <= LD.size(-2). Did you properly pass the result of ldl_factor?".to_string(),
        ));
    }
    // A 2x2 block's negative pivot must not start on the last row (sytrs would read past it).
    for matrix_pivots in pivot_values.chunks(n.max(1)) {
        let mut i = 0;
        while i < matrix_pivots.len() {
            if matrix_pivots[i] < 0 && i + 1 == n {
                return Err(TensorError::InvalidArgument(format!(
                    "{op}: a negative pivot (a 2x2 block of D) starts on the last row"
                )));
            }
            i += if matrix_pivots[i] < 0 { 2 } else { 1 };
        }
    }
    let batch = broadcast_batch(op, &factors.batch_sizes, &rhs.batch_sizes)?;
    let count: usize = batch.iter().product();
    let k = rhs.cols;
    let mut values = Vec::with_capacity(count * n * k);
    for index in 0..count {
        let f = broadcast_source_index(index, &batch, &factors.batch_sizes);
        let r = broadcast_source_index(index, &batch, &rhs.batch_sizes);
        let mut x = rhs.matrix(r).to_vec();
        solve_one(
            factors.matrix(f),
            &pivot_values[f * n..(f + 1) * n],
            &mut x,
            n,
            k,
        );
        values.extend(x);
    }
    let mut sizes = batch;
    sizes.extend_from_slice(&[n, k]);
    tensor_from_f64(values, &sizes, factors.dtype)
}
