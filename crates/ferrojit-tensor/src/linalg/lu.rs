//! LU factorization with partial pivoting (LAPACK `getrf`'s pivot rule: the first entry of
//! largest magnitude), and what PyTorch builds on it: `inv`, `det`, `slogdet`, `logdet`,
//! `solve`, `lu_factor`, `lu` and `lu_solve`, with their `_ex` forms.

use super::batch::{
    batch_prefix, broadcast_batch, broadcast_source_index, read_matrices, read_square,
    tensor_from_f64, transpose, Matrices,
};
use crate::dtype::DType;
use crate::error::{Result, TensorError};
use crate::tensor::Tensor;

/// One factored `rows x cols` matrix: `L` (unit diagonal, not stored) and `U` packed in
/// `packed`, 0-based row swaps `pivots` (row `i` was swapped with `pivots[i]`), and LAPACK's
/// `info`: the 1-based index of the first zero on U's diagonal, 0 when there is none.
pub(crate) struct LuFactors {
    pub packed: Vec<f64>,
    pub pivots: Vec<usize>,
    pub info: usize,
}

/// Factors a row-major `rows x cols` matrix. Like LAPACK, a zero pivot column is recorded in
/// `info` and skipped (no division), and the factorization goes on.
pub(crate) fn lu_decompose(matrix: &[f64], rows: usize, cols: usize) -> LuFactors {
    let mut a = matrix.to_vec();
    let steps = rows.min(cols);
    let mut pivots = Vec::with_capacity(steps);
    let mut info = 0;
    for j in 0..steps {
        // The first row of largest magnitude in column j, at or below the diagonal.
        let mut pivot_row = j;
        let mut largest = a[j * cols + j].abs();
        for r in j + 1..rows {
            let magnitude = a[r * cols + j].abs();
            if magnitude > largest {
                largest = magnitude;
                pivot_row = r;
            }
        }
        pivots.push(pivot_row);
        if a[pivot_row * cols + j] != 0.0 {
            if pivot_row != j {
                for c in 0..cols {
                    a.swap(j * cols + c, pivot_row * cols + c);
                }
            }
            let pivot = a[j * cols + j];
            for r in j + 1..rows {
                a[r * cols + j] /= pivot;
            }
        } else if info == 0 {
            info = j + 1;
        }
        for r in j + 1..rows {
            let factor = a[r * cols + j];
            if factor != 0.0 {
                for c in j + 1..cols {
                    a[r * cols + c] -= factor * a[j * cols + c];
                }
            }
        }
    }
    LuFactors {
        packed: a,
        pivots,
        info,
    }
}

/// Solves `A X = B` in place for a square `n x n` factored `A` and row-major `n x k` `B`.
pub(crate) fn lu_substitute(factors: &LuFactors, n: usize, b: &mut [f64], k: usize) {
    let lu = &factors.packed;
    for (i, &p) in factors.pivots.iter().enumerate() {
        if p != i {
            for c in 0..k {
                b.swap(i * k + c, p * k + c);
            }
        }
    }
    for i in 0..n {
        for j in 0..i {
            let factor = lu[i * n + j];
            if factor != 0.0 {
                for c in 0..k {
                    b[i * k + c] -= factor * b[j * k + c];
                }
            }
        }
    }
    for i in (0..n).rev() {
        for j in i + 1..n {
            let factor = lu[i * n + j];
            if factor != 0.0 {
                for c in 0..k {
                    b[i * k + c] -= factor * b[j * k + c];
                }
            }
        }
        let diagonal = lu[i * n + i];
        for c in 0..k {
            b[i * k + c] /= diagonal;
        }
    }
}

/// Solves `A^T X = B` in place with `A`'s factors (`P A = L U`, so `A^T = U^T L^T P`).
fn lu_substitute_transposed(factors: &LuFactors, n: usize, b: &mut [f64], k: usize) {
    let lu = &factors.packed;
    // U^T y = b (forward), L^T z = y (backward), then undo the row swaps in reverse.
    for i in 0..n {
        for j in 0..i {
            let factor = lu[j * n + i];
            if factor != 0.0 {
                for c in 0..k {
                    b[i * k + c] -= factor * b[j * k + c];
                }
            }
        }
        let diagonal = lu[i * n + i];
        for c in 0..k {
            b[i * k + c] /= diagonal;
        }
    }
    for i in (0..n).rev() {
        for j in i + 1..n {
            let factor = lu[j * n + i];
            if factor != 0.0 {
                for c in 0..k {
                    b[i * k + c] -= factor * b[j * k + c];
                }
            }
        }
    }
    for (i, &p) in factors.pivots.iter().enumerate().rev() {
        if p != i {
            for c in 0..k {
                b.swap(i * k + c, p * k + c);
            }
        }
    }
}

fn identity(n: usize) -> Vec<f64> {
    let mut out = vec![0.0; n * n];
    for i in 0..n {
        out[i * n + i] = 1.0;
    }
    out
}

fn info_tensor(infos: Vec<i32>, batch_sizes: &[usize]) -> Result<Tensor> {
    Tensor::from_vec(infos, batch_sizes)
}

/// `torch.linalg.inv_ex(A)`: the inverse and LAPACK's `info` per matrix. With
/// `check_errors`, a singular matrix is an error with PyTorch's message.
pub fn inv_ex(a: &Tensor, check_errors: bool) -> Result<(Tensor, Tensor)> {
    inv_impl("linalg.inv_ex", a, check_errors)
}

fn inv_impl(op: &str, a: &Tensor, check_errors: bool) -> Result<(Tensor, Tensor)> {
    let matrices = read_square(op, "A", a)?;
    let n = matrices.rows;
    let batched = !matrices.batch_sizes.is_empty();
    let mut values = Vec::with_capacity(matrices.values.len());
    let mut infos = Vec::with_capacity(matrices.count());
    for index in 0..matrices.count() {
        let factors = lu_decompose(matrices.matrix(index), n, n);
        if factors.info != 0 && check_errors {
            return Err(TensorError::InvalidArgument(format!(
                "{op}: {}The diagonal element {} is zero, the inversion could not be completed \
                 because the input matrix is singular.",
                batch_prefix(batched, index),
                factors.info
            )));
        }
        let mut inverse = identity(n);
        lu_substitute(&factors, n, &mut inverse, n);
        values.extend(inverse);
        infos.push(factors.info as i32);
    }
    Ok((
        tensor_from_f64(values, a.sizes(), matrices.dtype)?,
        info_tensor(infos, &matrices.batch_sizes)?,
    ))
}

/// `torch.linalg.inv(A)` (and `torch.inverse`).
pub fn inv(a: &Tensor) -> Result<Tensor> {
    Ok(inv_impl("linalg.inv", a, true)?.0)
}

/// `(sign, log|det|)` of each matrix from its LU factors.
fn sign_and_log_abs(matrices: &Matrices) -> (Vec<f64>, Vec<f64>) {
    let n = matrices.rows;
    let mut signs = Vec::with_capacity(matrices.count());
    let mut logs = Vec::with_capacity(matrices.count());
    for index in 0..matrices.count() {
        let factors = lu_decompose(matrices.matrix(index), n, n);
        let mut sign = 1.0;
        let mut log_abs = 0.0;
        for (i, &p) in factors.pivots.iter().enumerate() {
            if p != i {
                sign = -sign;
            }
            let diagonal = factors.packed[i * n + i];
            sign *= diagonal.signum();
            log_abs += diagonal.abs().ln();
        }
        if factors.info != 0 {
            // PyTorch's sign of a singular matrix is the product with the zero in it (0, or
            // -0 when the other factors are negative).
            sign *= 0.0;
            log_abs = f64::NEG_INFINITY;
        }
        signs.push(sign);
        logs.push(log_abs);
    }
    (signs, logs)
}

/// `torch.linalg.det(A)`: the product of U's diagonal with the permutation's sign.
pub fn det(a: &Tensor) -> Result<Tensor> {
    let matrices = read_square("linalg.det", "A", a)?;
    let n = matrices.rows;
    let mut values = Vec::with_capacity(matrices.count());
    for index in 0..matrices.count() {
        let factors = lu_decompose(matrices.matrix(index), n, n);
        let mut product = 1.0;
        for (i, &p) in factors.pivots.iter().enumerate() {
            product *= factors.packed[i * n + i];
            if p != i {
                product = -product;
            }
        }
        values.push(product);
    }
    tensor_from_f64(values, &matrices.batch_sizes, matrices.dtype)
}

/// `torch.linalg.slogdet(A)`: `(sign, logabsdet)`.
pub fn slogdet(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let matrices = read_square("linalg.slogdet", "A", a)?;
    let (signs, logs) = sign_and_log_abs(&matrices);
    Ok((
        tensor_from_f64(signs, &matrices.batch_sizes, matrices.dtype)?,
        tensor_from_f64(logs, &matrices.batch_sizes, matrices.dtype)?,
    ))
}

/// `torch.logdet(A)`: `log(det)`, NaN for a negative determinant, -inf for a zero one.
pub fn logdet(a: &Tensor) -> Result<Tensor> {
    let matrices = read_square("logdet", "A", a)?;
    let (signs, logs) = sign_and_log_abs(&matrices);
    let values = signs
        .iter()
        .zip(logs)
        .map(|(&sign, log)| if sign < 0.0 { f64::NAN } else { log })
        .collect();
    tensor_from_f64(values, &matrices.batch_sizes, matrices.dtype)
}

/// `torch.linalg.solve_ex(A, B, left, check_errors)`: `X` with `A X = B` (`X A = B` when not
/// `left`) and the per-matrix `info`. `B` is a batch of vectors when it is 1-D or has the
/// shape of `A` less its last dimension; otherwise a batch of matrices. Batches broadcast.
pub fn solve_ex(
    a: &Tensor,
    b: &Tensor,
    left: bool,
    check_errors: bool,
) -> Result<(Tensor, Tensor)> {
    solve_impl("linalg.solve_ex", a, b, left, check_errors)
}

/// `torch.linalg.solve(A, B, left)`.
pub fn solve(a: &Tensor, b: &Tensor, left: bool) -> Result<Tensor> {
    Ok(solve_impl("linalg.solve", a, b, left, true)?.0)
}

fn solve_impl(
    op: &str,
    a: &Tensor,
    b: &Tensor,
    left: bool,
    check_errors: bool,
) -> Result<(Tensor, Tensor)> {
    let matrices = read_square(op, "A", a)?;
    super::batch::check_floating(op, b)?;
    if b.dtype() != a.dtype() {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: Expected A and B to have the same dtype, but found A of type {} and B of type {} instead",
            a.dtype().scalar_type_name(),
            b.dtype().scalar_type_name()
        )));
    }
    let n = matrices.rows;
    let a_sizes = a.sizes();
    let vector_case =
        b.dim() == 1 || (b.dim() + 1 == a.dim() && b.sizes() == &a_sizes[..a_sizes.len() - 1]);
    // B as a batch of matrices `(..., rows, cols)`; a vector is one column (one row when
    // solving from the right).
    let (b_batch, b_rows, b_cols) = if vector_case {
        let (batch, last) = b.sizes().split_at(b.dim() - 1);
        if left {
            (batch.to_vec(), last[0], 1)
        } else {
            (batch.to_vec(), 1, last[0])
        }
    } else {
        if b.dim() < 2 {
            return Err(TensorError::InvalidArgument(format!(
                "{op}: The input tensor B must have at least 2 dimensions."
            )));
        }
        let (batch, matrix) = b.sizes().split_at(b.dim() - 2);
        (batch.to_vec(), matrix[0], matrix[1])
    };
    let shared = if left { b_rows } else { b_cols };
    if shared != n {
        let equation = if left { "AX = B" } else { "XA = B" };
        return Err(TensorError::InvalidArgument(format!(
            "linalg.solve: Incompatible shapes of A and B for the equation {equation} ({n}x{n} and {b_rows}x{b_cols})"
        )));
    }
    let batch = broadcast_batch(op, &matrices.batch_sizes, &b_batch)?;
    let count: usize = batch.iter().product();
    let b_values = b.to_f64_vec();
    let b_size = b_rows * b_cols;
    let mut values = Vec::with_capacity(count * b_size);
    let mut infos = Vec::with_capacity(count);
    let batched = !batch.is_empty();
    for index in 0..count {
        let a_index = broadcast_source_index(index, &batch, &matrices.batch_sizes);
        let b_index = broadcast_source_index(index, &batch, &b_batch);
        let factors = lu_decompose(matrices.matrix(a_index), n, n);
        if factors.info != 0 && check_errors {
            return Err(TensorError::InvalidArgument(format!(
                "torch.linalg.solve: {}The solver failed because the input matrix is singular.",
                batch_prefix(batched, index)
            )));
        }
        let block = &b_values[b_index * b_size..(b_index + 1) * b_size];
        if left {
            let mut x = block.to_vec();
            lu_substitute(&factors, n, &mut x, b_cols);
            values.extend(x);
        } else {
            // X A = B  <=>  A^T X^T = B^T.
            let mut x = transpose(block, b_rows, b_cols);
            lu_substitute_transposed(&factors, n, &mut x, b_rows);
            values.extend(transpose(&x, b_cols, b_rows));
        }
        infos.push(factors.info as i32);
    }
    let mut sizes = batch.clone();
    if vector_case {
        sizes.push(n);
    } else {
        sizes.extend([b_rows, b_cols]);
    }
    Ok((
        tensor_from_f64(values, &sizes, matrices.dtype)?,
        info_tensor(infos, &batch)?,
    ))
}

/// `torch.linalg.lu_factor_ex(A, pivot, check_errors)`: packed `LU`, 1-based int32 `pivots`
/// and `info`. Rectangular matrices are allowed.
pub fn lu_factor_ex(
    a: &Tensor,
    pivot: bool,
    check_errors: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    lu_factor_impl("torch.linalg.lu_factor_ex", a, pivot, check_errors)
}

/// `torch.linalg.lu_factor(A, pivot)`: a zero on U's diagonal is an error, as in PyTorch.
pub fn lu_factor(a: &Tensor, pivot: bool) -> Result<(Tensor, Tensor)> {
    let (lu, pivots, _) = lu_factor_impl("torch.linalg.lu_factor", a, pivot, true)?;
    Ok((lu, pivots))
}

fn lu_factor_impl(
    op: &str,
    a: &Tensor,
    pivot: bool,
    check_errors: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    let matrices = read_matrices(op, "A", a)?;
    if !pivot {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: LU without pivoting is not implemented on the CPU"
        )));
    }
    let (rows, cols) = (matrices.rows, matrices.cols);
    let steps = rows.min(cols);
    let mut packed = Vec::with_capacity(matrices.values.len());
    let mut pivots = Vec::with_capacity(matrices.count() * steps);
    let mut infos = Vec::with_capacity(matrices.count());
    for index in 0..matrices.count() {
        let factors = lu_decompose(matrices.matrix(index), rows, cols);
        if factors.info != 0 && check_errors {
            return Err(TensorError::InvalidArgument(format!(
                "{op}: U[{0},{0}] is zero and using it on lu_solve would result in a division by \
                 zero. If you still want to perform the factorization, consider calling \
                 linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)",
                factors.info
            )));
        }
        pivots.extend(factors.pivots.iter().map(|&p| p as i32 + 1));
        infos.push(factors.info as i32);
        packed.extend(factors.packed);
    }
    Ok((
        tensor_from_f64(packed, a.sizes(), matrices.dtype)?,
        Tensor::from_vec(pivots, &matrices.sizes_with(&[steps]))?,
        info_tensor(infos, &matrices.batch_sizes)?,
    ))
}

/// `torch.linalg.lu(A, pivot)`: `(P, L, U)` with `A = P L U`; `L` is `m x k` with a unit
/// diagonal and `U` is `k x n`, `k = min(m, n)`.
pub fn lu(a: &Tensor, pivot: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let op = "linalg.lu";
    let matrices = read_matrices(op, "A", a)?;
    if !pivot {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: LU without pivoting is not implemented on the CPU"
        )));
    }
    let (rows, cols) = (matrices.rows, matrices.cols);
    let steps = rows.min(cols);
    let (mut p_values, mut l_values, mut u_values) = (Vec::new(), Vec::new(), Vec::new());
    for index in 0..matrices.count() {
        let factors = lu_decompose(matrices.matrix(index), rows, cols);
        // Row i of L U is row permutation[i] of A.
        let mut permutation: Vec<usize> = (0..rows).collect();
        for (i, &p) in factors.pivots.iter().enumerate() {
            permutation.swap(i, p);
        }
        let mut p_matrix = vec![0.0; rows * rows];
        for (i, &source) in permutation.iter().enumerate() {
            p_matrix[source * rows + i] = 1.0;
        }
        p_values.extend(p_matrix);
        for r in 0..rows {
            for c in 0..steps {
                l_values.push(match r.cmp(&c) {
                    std::cmp::Ordering::Greater => factors.packed[r * cols + c],
                    std::cmp::Ordering::Equal => 1.0,
                    std::cmp::Ordering::Less => 0.0,
                });
            }
        }
        for r in 0..steps {
            for c in 0..cols {
                u_values.push(if c >= r {
                    factors.packed[r * cols + c]
                } else {
                    0.0
                });
            }
        }
    }
    let dtype = matrices.dtype;
    Ok((
        tensor_from_f64(p_values, &matrices.sizes_with(&[rows, rows]), dtype)?,
        tensor_from_f64(l_values, &matrices.sizes_with(&[rows, steps]), dtype)?,
        tensor_from_f64(u_values, &matrices.sizes_with(&[steps, cols]), dtype)?,
    ))
}

/// `torch.linalg.lu_solve(LU, pivots, B, left, adjoint)`: solves with factors from
/// `lu_factor`. Batches of `LU` and `B` broadcast.
pub fn lu_solve(
    lu: &Tensor,
    pivots: &Tensor,
    b: &Tensor,
    left: bool,
    adjoint: bool,
) -> Result<Tensor> {
    let op = "linalg.lu_solve";
    let factors_in = read_square(op, "LU", lu)?;
    let rhs = read_matrices(op, "B", b)?;
    if pivots.dtype() != DType::Int32 {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: pivots should be a Tensor of scalar type torch.int32"
        )));
    }
    let n = factors_in.rows;
    let shared = if left { rhs.rows } else { rhs.cols };
    if shared != n {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: Incompatible shapes of A and B for the equation {} ({n}x{n} and {}x{})",
            if left { "AX = B" } else { "XA = B" },
            rhs.rows,
            rhs.cols
        )));
    }
    let expected_pivots = factors_in.sizes_with(&[n]);
    if pivots.sizes() != expected_pivots.as_slice() {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: Expected LU.shape[:-1] and pivots.shape to be the same, but got pivots with shape {} instead",
            crate::error::format_shape(pivots.sizes())
        )));
    }
    let pivot_values = pivots.to_i64_vec();
    let batch = broadcast_batch(op, &factors_in.batch_sizes, &rhs.batch_sizes)?;
    let count: usize = batch.iter().product();
    let b_size = rhs.rows * rhs.cols;
    let mut values = Vec::with_capacity(count * b_size);
    for index in 0..count {
        let lu_index = broadcast_source_index(index, &batch, &factors_in.batch_sizes);
        let b_index = broadcast_source_index(index, &batch, &rhs.batch_sizes);
        let mut swaps = Vec::with_capacity(n);
        for (i, &p) in pivot_values[lu_index * n..(lu_index + 1) * n]
            .iter()
            .enumerate()
        {
            if p < 1 || p as usize > n {
                return Err(TensorError::InvalidArgument(format!(
                    "{op}: pivot {p} at position {i} is out of range 1..={n}"
                )));
            }
            swaps.push(p as usize - 1);
        }
        let factors = LuFactors {
            packed: factors_in.matrix(lu_index).to_vec(),
            pivots: swaps,
            info: 0,
        };
        let block = rhs.matrix(b_index);
        // Left: op(A) X = B. Right: X op(A) = B  <=>  op(A)^T X^T = B^T. For real matrices
        // the adjoint is the transpose, so A^T is solved with exactly when adjoint == left.
        let transposed_system = adjoint == left;
        let (mut x, k) = if left {
            (block.to_vec(), rhs.cols)
        } else {
            (transpose(block, rhs.rows, rhs.cols), rhs.rows)
        };
        if transposed_system {
            lu_substitute_transposed(&factors, n, &mut x, k);
        } else {
            lu_substitute(&factors, n, &mut x, k);
        }
        if left {
            values.extend(x);
        } else {
            values.extend(transpose(&x, rhs.cols, rhs.rows));
        }
    }
    let mut sizes = batch;
    sizes.extend([rhs.rows, rhs.cols]);
    tensor_from_f64(values, &sizes, factors_in.dtype)
}
