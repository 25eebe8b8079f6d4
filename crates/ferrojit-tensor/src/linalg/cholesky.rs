//! Cholesky factorization (LAPACK `potrf`'s column order, so the reported leading minor is the
//! one PyTorch reports): `torch.linalg.cholesky`, `cholesky_ex` and the old `torch.cholesky`.

use super::batch::{batch_prefix, read_square, tensor_from_f64, transpose};
use crate::error::{Result, TensorError};
use crate::tensor::Tensor;

/// The lower factor of a row-major `n x n` matrix, read from its lower triangle; on failure
/// the 1-based order of the first leading minor that is not positive-definite (the factor is
/// then only partly written, as LAPACK leaves it).
fn cholesky_lower(matrix: &[f64], n: usize) -> (Vec<f64>, usize) {
    let mut l = vec![0.0; n * n];
    for j in 0..n {
        let mut diagonal = matrix[j * n + j];
        for k in 0..j {
            diagonal -= l[j * n + k] * l[j * n + k];
        }
        // `!(x > 0)` also catches NaN, which LAPACK reports the same way.
        if diagonal.is_nan() || diagonal <= 0.0 {
            l[j * n + j] = diagonal;
            return (l, j + 1);
        }
        let root = diagonal.sqrt();
        l[j * n + j] = root;
        for i in j + 1..n {
            let mut value = matrix[i * n + j];
            for k in 0..j {
                value -= l[i * n + k] * l[j * n + k];
            }
            l[i * n + j] = value / root;
        }
    }
    (l, 0)
}

fn cholesky_impl(
    op: &str,
    a: &Tensor,
    upper: bool,
    check_errors: bool,
) -> Result<(Tensor, Tensor)> {
    let matrices = read_square(op, "A", a)?;
    let n = matrices.rows;
    let batched = !matrices.batch_sizes.is_empty();
    let mut values = Vec::with_capacity(matrices.values.len());
    let mut infos = Vec::with_capacity(matrices.count());
    for index in 0..matrices.count() {
        // The upper factor reads the upper triangle: U = L(A^T)^T.
        let source = if upper {
            transpose(matrices.matrix(index), n, n)
        } else {
            matrices.matrix(index).to_vec()
        };
        let (factor, info) = cholesky_lower(&source, n);
        if info != 0 && check_errors {
            return Err(TensorError::InvalidArgument(format!(
                "{op}: {}The factorization could not be completed because the input is not \
                 positive-definite (the leading minor of order {info} is not positive-definite).",
                batch_prefix(batched, index)
            )));
        }
        values.extend(if upper {
            transpose(&factor, n, n)
        } else {
            factor
        });
        infos.push(info as i32);
    }
    Ok((
        tensor_from_f64(values, a.sizes(), matrices.dtype)?,
        Tensor::from_vec(infos, &matrices.batch_sizes)?,
    ))
}

/// `torch.linalg.cholesky(A, upper)`; `op` names the caller in errors (`linalg.cholesky`, or
/// `cholesky` for the old `torch.cholesky`).
pub fn cholesky(op: &str, a: &Tensor, upper: bool) -> Result<Tensor> {
    Ok(cholesky_impl(op, a, upper, true)?.0)
}

/// `torch.linalg.cholesky_ex(A, upper, check_errors)`: the factor and `info`.
pub fn cholesky_ex(a: &Tensor, upper: bool, check_errors: bool) -> Result<(Tensor, Tensor)> {
    cholesky_impl("linalg.cholesky_ex", a, upper, check_errors)
}
