//! Symmetric eigendecomposition: `torch.linalg.eigh` and `eigvalsh`. Eigenvalues ascend, as
//! LAPACK's `syevd` returns them. `eigh`'s eigenvectors (unique only in sign) follow
//! `syevd`'s steps (`symmetric_qr.rs`), which gives PyTorch's signs. `eigvalsh` and the
//! matrix functions built on eigenvalues use cyclic Jacobi rotations, whose eigenvectors are
//! scaled so that their entry of largest magnitude is positive.

use super::batch::{batch_prefix, read_square, tensor_from_f64};
use super::symmetric_qr::lapack_eigh;
use crate::dtype::DType;
use crate::error::{Result, TensorError};
use crate::tensor::Tensor;

/// `(eigenvalues ascending, eigenvectors as the columns of a row-major n x n)` of the
/// symmetric matrix whose lower triangle (`upper`: upper triangle) `a` holds.
pub(crate) fn jacobi_eigh(a: &[f64], n: usize, upper: bool) -> (Vec<f64>, Vec<f64>) {
    let mut m = vec![0.0; n * n];
    for r in 0..n {
        for c in 0..n {
            let from_lower = if r >= c { a[r * n + c] } else { a[c * n + r] };
            let from_upper = if r <= c { a[r * n + c] } else { a[c * n + r] };
            m[r * n + c] = if upper { from_upper } else { from_lower };
        }
    }
    let mut v = vec![0.0; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    for _sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|r| (0..n).filter(move |&c| c != r).map(move |c| (r, c)))
            .map(|(r, c)| m[r * n + c] * m[r * n + c])
            .sum();
        let scale: f64 = m.iter().map(|x| x * x).sum();
        if off <= f64::EPSILON * f64::EPSILON * scale || off == 0.0 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = m[p * n + q];
                if apq == 0.0 {
                    continue;
                }
                let theta = (m[q * n + q] - m[p * n + p]) / (2.0 * apq);
                let t = if theta == 0.0 {
                    1.0
                } else {
                    theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt())
                };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                // M <- J^T M J with the rotation J in the (p, q) plane.
                for k in 0..n {
                    let (mkp, mkq) = (m[k * n + p], m[k * n + q]);
                    m[k * n + p] = c * mkp - s * mkq;
                    m[k * n + q] = s * mkp + c * mkq;
                }
                for k in 0..n {
                    let (mpk, mqk) = (m[p * n + k], m[q * n + k]);
                    m[p * n + k] = c * mpk - s * mqk;
                    m[q * n + k] = s * mpk + c * mqk;
                }
                for k in 0..n {
                    let (vkp, vkq) = (v[k * n + p], v[k * n + q]);
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&x, &y| m[x * n + x].total_cmp(&m[y * n + y]));
    let values: Vec<f64> = order.iter().map(|&i| m[i * n + i]).collect();
    let mut vectors = vec![0.0; n * n];
    for (k, &j) in order.iter().enumerate() {
        let largest =
            (0..n).map(|r| v[r * n + j]).fold(
                0.0f64,
                |best, x| if x.abs() > best.abs() { x } else { best },
            );
        let sign = if largest < 0.0 { -1.0 } else { 1.0 };
        for r in 0..n {
            vectors[r * n + k] = sign * v[r * n + j];
        }
    }
    (values, vectors)
}

fn upper_from_uplo(op: &str, uplo: &str) -> Result<bool> {
    match uplo {
        "L" | "l" => Ok(false),
        "U" | "u" => Ok(true),
        _ => Err(TensorError::InvalidArgument(format!(
            "{op}: Expected UPLO argument to be 'L' or 'U', but got {uplo}"
        ))),
    }
}

/// `torch.linalg.eigh(A, UPLO)`: `(eigenvalues, eigenvectors)`.
pub fn eigh(a: &Tensor, uplo: &str) -> Result<(Tensor, Tensor)> {
    let op = "linalg.eigh";
    let upper = upper_from_uplo(op, uplo)?;
    let matrices = read_square(op, "A", a)?;
    let n = matrices.rows;
    let single = matrices.dtype == DType::Float32;
    let (mut values, mut vectors) = (Vec::new(), Vec::new());
    for index in 0..matrices.count() {
        let (w, v) = lapack_eigh(matrices.matrix(index), n, upper, single).ok_or_else(|| {
            TensorError::InvalidArgument(format!(
                "{op}: {}The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated eigenvalues (error code: {n}).",
                batch_prefix(!matrices.batch_sizes.is_empty(), index)
            ))
        })?;
        values.extend(w);
        vectors.extend(v);
    }
    Ok((
        tensor_from_f64(values, &matrices.sizes_with(&[n]), matrices.dtype)?,
        tensor_from_f64(vectors, a.sizes(), matrices.dtype)?,
    ))
}

/// `torch.linalg.eigvalsh(A, UPLO)`.
pub fn eigvalsh(a: &Tensor, uplo: &str) -> Result<Tensor> {
    let op = "linalg.eigvalsh";
    let upper = upper_from_uplo(op, uplo)?;
    let matrices = read_square(op, "A", a)?;
    let n = matrices.rows;
    let mut values = Vec::new();
    for index in 0..matrices.count() {
        values.extend(jacobi_eigh(matrices.matrix(index), n, upper).0);
    }
    tensor_from_f64(values, &matrices.sizes_with(&[n]), matrices.dtype)
}
