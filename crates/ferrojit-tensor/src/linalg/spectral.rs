//! Matrix functions read off a spectral decomposition: `torch.linalg.polar` (from the SVD,
//! as PyTorch's CPU path computes it) and `torch.linalg.matrix_sqrth` (from `eigh`).

use super::batch::{read_matrices, read_square, tensor_from_f64};
use super::eigh::jacobi_eigh;
use super::svd::jacobi_svd;
use crate::error::{Result, TensorError};
use crate::tensor::Tensor;

/// `torch.linalg.polar(A)`: `(U, H)` with `A = U H`, U with orthonormal columns and H
/// symmetric positive semi-definite. With `A = W S V^T`: `U = W V^T`, `H = V S V^T`.
pub fn polar(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let op = "linalg.polar";
    let matrices = read_matrices(op, "A", a)?;
    let (m, n) = (matrices.rows, matrices.cols);
    if m < n {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: input must have at least as many rows as columns, but got {m} by {n} matrices"
        )));
    }
    let (mut unitary, mut positive) = (Vec::new(), Vec::new());
    for index in 0..matrices.count() {
        // m >= n, so W is m x n, S has n values and V is n x n.
        let (w, s, v) = jacobi_svd(matrices.matrix(index), m, n);
        for r in 0..m {
            for c in 0..n {
                unitary.push((0..n).map(|k| w[r * n + k] * v[c * n + k]).sum::<f64>());
            }
        }
        for r in 0..n {
            for c in 0..n {
                positive.push(
                    (0..n)
                        .map(|k| v[r * n + k] * s[k] * v[c * n + k])
                        .sum::<f64>(),
                );
            }
        }
    }
    Ok((
        tensor_from_f64(unitary, a.sizes(), matrices.dtype)?,
        tensor_from_f64(positive, &matrices.sizes_with(&[n, n]), matrices.dtype)?,
    ))
}

/// `torch.linalg.matrix_sqrth(A)`: `V sqrt(W) V^T` from the eigendecomposition of the
/// symmetric matrix A's lower triangle; eigenvalues below zero count as zero (what PyTorch
/// returns for them).
pub fn matrix_sqrth(a: &Tensor) -> Result<Tensor> {
    let matrices = read_square("linalg.matrix_sqrth", "A", a)?;
    let n = matrices.rows;
    let mut values = Vec::with_capacity(matrices.values.len());
    for index in 0..matrices.count() {
        let (w, v) = jacobi_eigh(matrices.matrix(index), n, false);
        let roots: Vec<f64> = w.iter().map(|x| x.max(0.0).sqrt()).collect();
        for r in 0..n {
            for c in 0..n {
                values.push(
                    (0..n)
                        .map(|k| v[r * n + k] * roots[k] * v[c * n + k])
                        .sum::<f64>(),
                );
            }
        }
    }
    tensor_from_f64(values, a.sizes(), matrices.dtype)
}
