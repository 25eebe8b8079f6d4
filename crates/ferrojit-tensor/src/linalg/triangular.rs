//! Triangular solves: `torch.linalg.solve_triangular` and the old `torch.triangular_solve`.
//! As LAPACK's `trsm`, a zero on the diagonal gives inf/NaN, not an error.

use super::batch::{
    broadcast_batch, broadcast_source_index, read_matrices, read_square, tensor_from_f64, transpose,
};
use crate::error::{Result, TensorError};
use crate::tensor::Tensor;

/// Solves `T X = B` in place for a row-major `n x n` triangular `T` (only its `upper` or
/// lower triangle is read) and a row-major `n x k` `B`.
fn substitute(t: &[f64], n: usize, upper: bool, unit: bool, b: &mut [f64], k: usize) {
    let solve_row = |i: usize, b: &mut [f64]| {
        let others: Box<dyn Iterator<Item = usize>> = if upper {
            Box::new(i + 1..n)
        } else {
            Box::new(0..i)
        };
        for j in others {
            let factor = t[i * n + j];
            if factor != 0.0 {
                for c in 0..k {
                    b[i * k + c] -= factor * b[j * k + c];
                }
            }
        }
        if !unit {
            let diagonal = t[i * n + i];
            for c in 0..k {
                b[i * k + c] /= diagonal;
            }
        }
    };
    if upper {
        for i in (0..n).rev() {
            solve_row(i, b);
        }
    } else {
        for i in 0..n {
            solve_row(i, b);
        }
    }
}

/// `torch.linalg.solve_triangular(A, B, upper, left, unitriangular)`: `X` with `A X = B`, or
/// `X A = B` when not `left`. Batches broadcast.
pub fn solve_triangular(
    a: &Tensor,
    b: &Tensor,
    upper: bool,
    left: bool,
    unitriangular: bool,
) -> Result<Tensor> {
    let op = "linalg.solve_triangular";
    let rhs = read_matrices(op, "B", b)?;
    let matrices = read_square(op, "A", a)?;
    if a.dtype() != b.dtype() {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: Expected A and B to have the same dtype, but found A of type {} and B of type {} instead",
            a.dtype().scalar_type_name(),
            b.dtype().scalar_type_name()
        )));
    }
    let n = matrices.rows;
    let shared = if left { rhs.rows } else { rhs.cols };
    if shared != n {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: Incompatible shapes of A and B for the equation {} ({n}x{n} and {}x{})",
            if left { "AX = B" } else { "XA = B" },
            rhs.rows,
            rhs.cols
        )));
    }
    let batch = broadcast_batch(op, &matrices.batch_sizes, &rhs.batch_sizes)?;
    let count: usize = batch.iter().product();
    let mut values = Vec::with_capacity(count * rhs.rows * rhs.cols);
    for index in 0..count {
        let t = matrices.matrix(broadcast_source_index(index, &batch, &matrices.batch_sizes));
        let block = rhs.matrix(broadcast_source_index(index, &batch, &rhs.batch_sizes));
        if left {
            let mut x = block.to_vec();
            substitute(t, n, upper, unitriangular, &mut x, rhs.cols);
            values.extend(x);
        } else {
            // X A = B  <=>  A^T X^T = B^T, and A^T is triangular the other way.
            let t_transposed = transpose(t, n, n);
            let mut x = transpose(block, rhs.rows, rhs.cols);
            substitute(&t_transposed, n, !upper, unitriangular, &mut x, rhs.rows);
            values.extend(transpose(&x, rhs.cols, rhs.rows));
        }
    }
    let mut sizes = batch;
    sizes.extend([rhs.rows, rhs.cols]);
    tensor_from_f64(values, &sizes, matrices.dtype)
}

/// The old `torch.triangular_solve(b, A, upper, transpose, unitriangular)`: `(X, A.clone())`
/// with `op(A) X = b`.
pub fn triangular_solve(
    b: &Tensor,
    a: &Tensor,
    upper: bool,
    transpose_a: bool,
    unitriangular: bool,
) -> Result<(Tensor, Tensor)> {
    let coefficient = if transpose_a {
        a.transpose(-2, -1)?.contiguous()
    } else {
        a.clone()
    };
    // Transposing A swaps which triangle holds it.
    let upper_after = upper != transpose_a;
    let solution = solve_triangular(&coefficient, b, upper_after, true, unitriangular)?;
    let batch = solution.sizes()[..solution.dim() - 2].to_vec();
    let mut clone_sizes: Vec<i64> = batch.iter().map(|&s| s as i64).collect();
    clone_sizes.extend(a.sizes()[a.dim() - 2..].iter().map(|&s| s as i64));
    Ok((solution, a.expand(&clone_sizes)?.clone_tensor()))
}
