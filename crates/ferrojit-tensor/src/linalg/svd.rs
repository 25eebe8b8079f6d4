//! Singular value decomposition by one-sided Jacobi rotations (accurate to the last bits for
//! the singular values, simple, and free of a LAPACK dependency), and what PyTorch builds on
//! it: `svd`, `svdvals`, `pinv`, `matrix_rank` and `cond`.
//!
//! Convention (the SVD is not unique): singular values descend; each right singular vector is
//! scaled so that its entry of largest magnitude is positive (LAPACK fixes no sign, so tests
//! compare reconstructions and orthogonality, not U and V themselves); columns of U for zero
//! singular values, and the extra columns of a full U, complete an orthonormal basis.

use super::batch::{read_matrices, tensor_from_f64, transpose};
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// `(U: rows x k, S: k, V: cols x k)` of a row-major `rows x cols` matrix, `k = min`.
pub(crate) fn jacobi_svd(a: &[f64], rows: usize, cols: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    if rows < cols {
        // A^T = V S U^T.
        let (v, s, u) = jacobi_svd(&transpose(a, rows, cols), cols, rows);
        return (u, s, v);
    }
    let (m, n) = (rows, cols);
    // Work on the columns of W = A V; V accumulates the rotations. Column-major copies make
    // the column sweeps contiguous.
    let mut w: Vec<f64> = transpose(a, m, n); // n rows of length m: column j at j*m.
    let mut v = vec![0.0; n * n]; // column j at j*n.
    for j in 0..n {
        v[j * n + j] = 1.0;
    }
    for _sweep in 0..80 {
        let mut rotated = false;
        for p in 0..n {
            for q in p + 1..n {
                let (mut alpha, mut beta, mut gamma) = (0.0, 0.0, 0.0);
                for i in 0..m {
                    let (x, y) = (w[p * m + i], w[q * m + i]);
                    alpha += x * x;
                    beta += y * y;
                    gamma += x * y;
                }
                if gamma == 0.0 || gamma.abs() <= f64::EPSILON * (alpha * beta).sqrt() {
                    continue;
                }
                rotated = true;
                let zeta = (beta - alpha) / (2.0 * gamma);
                let t = zeta.signum() / (zeta.abs() + (1.0 + zeta * zeta).sqrt());
                let t = if zeta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (1.0 + t * t).sqrt();
                let s = c * t;
                for i in 0..m {
                    let (x, y) = (w[p * m + i], w[q * m + i]);
                    w[p * m + i] = c * x - s * y;
                    w[q * m + i] = s * x + c * y;
                }
                for i in 0..n {
                    let (x, y) = (v[p * n + i], v[q * n + i]);
                    v[p * n + i] = c * x - s * y;
                    v[q * n + i] = s * x + c * y;
                }
            }
        }
        if !rotated {
            break;
        }
    }
    let norms: Vec<f64> = (0..n)
        .map(|j| {
            w[j * m..(j + 1) * m]
                .iter()
                .map(|x| x * x)
                .sum::<f64>()
                .sqrt()
        })
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&x, &y| norms[y].total_cmp(&norms[x]));
    // A column of W whose norm is at rounding level carries no direction of its own (it is
    // what is left of other columns after cancellation, and may even be a copy of one of
    // them): its U column comes from the orthonormal completion instead. The cut-off is
    // LAPACK's notion of numerically zero, `max(m, n) * eps * smax`.
    let largest_norm = norms.iter().copied().fold(0.0f64, f64::max);
    let negligible = m.max(n) as f64 * f64::EPSILON * largest_norm;
    let mut u = vec![0.0; m * n];
    let mut s = vec![0.0; n];
    let mut v_out = vec![0.0; n * n];
    let mut defined = vec![false; n];
    for (k, &j) in order.iter().enumerate() {
        s[k] = norms[j];
        let column = &v[j * n..(j + 1) * n];
        let largest =
            column.iter().copied().fold(
                0.0f64,
                |best, x| if x.abs() > best.abs() { x } else { best },
            );
        let sign = if largest < 0.0 { -1.0 } else { 1.0 };
        for i in 0..n {
            v_out[i * n + k] = sign * column[i];
        }
        if norms[j] > negligible {
            let mut column: Vec<f64> = (0..m).map(|i| sign * w[j * m + i] / norms[j]).collect();
            // The columns of W are orthogonal to rounding once the sweeps converge; a column
            // of tiny norm may still lean on the larger ones, so it is made orthogonal to the
            // columns already placed (twice, as Gram-Schmidt needs), and dropped to the
            // completion if little of it is left.
            for _ in 0..2 {
                for earlier in (0..k).filter(|&e| defined[e]) {
                    let dot: f64 = (0..m).map(|i| u[i * n + earlier] * column[i]).sum();
                    for (i, value) in column.iter_mut().enumerate() {
                        *value -= dot * u[i * n + earlier];
                    }
                }
            }
            let length = column.iter().map(|x| x * x).sum::<f64>().sqrt();
            if length > 0.5 {
                defined[k] = true;
                for (i, value) in column.iter().enumerate() {
                    u[i * n + k] = value / length;
                }
            }
        }
    }
    complete_orthonormal(&mut u, m, n, &defined);
    (u, s, v_out)
}

/// Fills the columns of the row-major `rows x cols` `q` not marked `defined` so that all
/// columns are orthonormal (Gram-Schmidt, twice, on the standard basis vectors).
pub(crate) fn complete_orthonormal(q: &mut [f64], rows: usize, cols: usize, defined: &[bool]) {
    let mut have: Vec<usize> = (0..cols).filter(|&c| defined[c]).collect();
    let mut candidate = 0;
    for c in 0..cols {
        if defined[c] {
            continue;
        }
        while candidate < rows {
            let mut vector = vec![0.0; rows];
            vector[candidate] = 1.0;
            candidate += 1;
            for _ in 0..2 {
                for &h in &have {
                    let dot: f64 = (0..rows).map(|r| q[r * cols + h] * vector[r]).sum();
                    for (r, value) in vector.iter_mut().enumerate() {
                        *value -= dot * q[r * cols + h];
                    }
                }
            }
            let norm = vector.iter().map(|x| x * x).sum::<f64>().sqrt();
            if norm > 1e-8 {
                for (r, value) in vector.iter().enumerate() {
                    q[r * cols + c] = value / norm;
                }
                have.push(c);
                break;
            }
        }
    }
}

/// The singular values of a row-major matrix, descending.
pub(crate) fn singular_values_of(a: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    jacobi_svd(a, rows, cols).1
}

/// `torch.linalg.svd(A, full_matrices)`: `(U, S, Vh)` with `A = U diag(S) Vh`.
pub fn svd(a: &Tensor, full_matrices: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let matrices = read_matrices("linalg.svd", "A", a)?;
    let (m, n) = (matrices.rows, matrices.cols);
    let k = m.min(n);
    let (u_cols, vh_rows) = if full_matrices { (m, n) } else { (k, k) };
    let (mut us, mut ss, mut vhs) = (Vec::new(), Vec::new(), Vec::new());
    for index in 0..matrices.count() {
        let (u, s, v) = jacobi_svd(matrices.matrix(index), m, n);
        // Widen U (m x k) to m x u_cols and V (n x k) to n x vh_rows.
        let widen = |q: &[f64], rows: usize, wide: usize| {
            let mut out = vec![0.0; rows * wide];
            for r in 0..rows {
                out[r * wide..r * wide + k].copy_from_slice(&q[r * k..(r + 1) * k]);
            }
            let defined: Vec<bool> = (0..wide).map(|c| c < k).collect();
            complete_orthonormal(&mut out, rows, wide, &defined);
            out
        };
        us.extend(widen(&u, m, u_cols));
        ss.extend(s);
        vhs.extend(transpose(&widen(&v, n, vh_rows), n, vh_rows));
    }
    let dtype = matrices.dtype;
    Ok((
        tensor_from_f64(us, &matrices.sizes_with(&[m, u_cols]), dtype)?,
        tensor_from_f64(ss, &matrices.sizes_with(&[k]), dtype)?,
        tensor_from_f64(vhs, &matrices.sizes_with(&[vh_rows, n]), dtype)?,
    ))
}

/// `torch.linalg.svdvals(A)`: the singular values, descending.
pub fn svdvals(a: &Tensor) -> Result<Tensor> {
    let matrices = read_matrices("linalg.svdvals", "A", a)?;
    let (m, n) = (matrices.rows, matrices.cols);
    let mut values = Vec::new();
    for index in 0..matrices.count() {
        values.extend(singular_values_of(matrices.matrix(index), m, n));
    }
    tensor_from_f64(values, &matrices.sizes_with(&[m.min(n)]), matrices.dtype)
}

/// Machine epsilon of the dtype PyTorch computes in.
fn epsilon(dtype: DType) -> f64 {
    if dtype == DType::Float32 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    }
}

/// The cut-off under which singular values count as zero: `max(atol, rtol * smax)`, with
/// PyTorch's default `rtol = eps * max(m, n)` when neither tolerance is given (and 0 when only
/// `atol` is).
fn tolerance(
    dtype: DType,
    m: usize,
    n: usize,
    atol: Option<f64>,
    rtol: Option<f64>,
    largest: f64,
) -> f64 {
    let rtol = match (atol, rtol) {
        (_, Some(r)) => r,
        (Some(a), None) if a > 0.0 => 0.0,
        _ => epsilon(dtype) * m.max(n) as f64,
    };
    atol.unwrap_or(0.0).max(rtol * largest)
}

/// `torch.linalg.pinv(A, atol, rtol)`: `V diag(1/S) U^T` over the singular values above the
/// tolerance.
pub fn pinv(a: &Tensor, atol: Option<f64>, rtol: Option<f64>) -> Result<Tensor> {
    pinv_with_tolerances(a, &|_| (atol, rtol), false)
}

/// `torch.linalg.pinv` with each matrix's own (atol, rtol), from `tolerances(matrix index)`.
/// With `hermitian`, only the lower triangle is read (the upper is its mirror), as PyTorch's
/// eigendecomposition path reads it; the singular values of that symmetric matrix are the
/// magnitudes of its eigenvalues, so the cutoff is the same.
pub fn pinv_with_tolerances(
    a: &Tensor,
    tolerances: &dyn Fn(usize) -> (Option<f64>, Option<f64>),
    hermitian: bool,
) -> Result<Tensor> {
    let mut matrices = read_matrices("linalg.pinv", "A", a)?;
    let (m, n) = (matrices.rows, matrices.cols);
    if hermitian {
        if m != n {
            return Err(crate::error::TensorError::InvalidArgument(format!(
                "linalg.eigh: A must be batches of square matrices, but they are {m} by {n} matrices"
            )));
        }
        // `chunks_mut(0)` panics: 0x0 matrices have nothing to mirror.
        for matrix in matrices.values.chunks_mut((n * n).max(1)) {
            for i in 0..n {
                for j in i + 1..n {
                    matrix[i * n + j] = matrix[j * n + i];
                }
            }
        }
    }
    let k = m.min(n);
    let mut values = Vec::new();
    for index in 0..matrices.count() {
        let (u, s, v) = jacobi_svd(matrices.matrix(index), m, n);
        let (atol, rtol) = tolerances(index);
        let cut = tolerance(
            matrices.dtype,
            m,
            n,
            atol,
            rtol,
            s.first().copied().unwrap_or(0.0),
        );
        let mut out = vec![0.0; n * m];
        for (j, &sigma) in s.iter().enumerate() {
            if sigma <= cut || sigma == 0.0 {
                continue;
            }
            for r in 0..n {
                let scaled = v[r * k + j] / sigma;
                for c in 0..m {
                    out[r * m + c] += scaled * u[c * k + j];
                }
            }
        }
        values.extend(out);
    }
    tensor_from_f64(values, &matrices.sizes_with(&[n, m]), matrices.dtype)
}

/// `torch.linalg.pinv` with tensor tolerances (`atol_rtol_tensor`, and `rcond_tensor` as
/// atol 0, rtol `rcond`): the tolerances broadcast against A's batch dimensions, so the result
/// has the broadcast batch shape.
pub fn pinv_tensor_tolerances(
    a: &Tensor,
    atol: Option<&Tensor>,
    rtol: Option<&Tensor>,
    hermitian: bool,
) -> Result<Tensor> {
    let split = a.dim().checked_sub(2).ok_or_else(|| {
        crate::error::TensorError::InvalidArgument(
            "linalg.pinv: The input tensor A must have at least 2 dimensions.".to_string(),
        )
    })?;
    let matrix = &a.sizes()[split..];
    let mut batch = a.sizes()[..split].to_vec();
    for tolerance in [atol, rtol].into_iter().flatten() {
        batch = crate::shape::broadcast_shapes(&batch, tolerance.sizes())?;
    }
    if a.numel() == 0 {
        // PyTorch returns an empty pseudo-inverse of A's own shape here, whatever the
        // tolerances' shapes.
        return pinv(a, Some(0.0), Some(0.0));
    }
    let mut full: Vec<i64> = batch.iter().map(|&s| s as i64).collect();
    full.extend(matrix.iter().map(|&s| s as i64));
    let expanded = a.expand(&full)?.contiguous();
    let read = |t: Option<&Tensor>| -> Result<Option<Vec<f64>>> {
        t.map(|t| Ok(t.broadcast_to(&batch)?.to_f64_vec()))
            .transpose()
    };
    let (atol, rtol) = (read(atol)?, read(rtol)?);
    pinv_with_tolerances(
        &expanded,
        &|index| {
            (
                atol.as_ref().map(|values| values[index]),
                rtol.as_ref().map(|values| values[index]),
            )
        },
        hermitian,
    )
}

/// `torch.linalg.matrix_rank(A, atol, rtol, hermitian)`: int64 counts of the singular values
/// above the tolerance.
pub fn matrix_rank(a: &Tensor, atol: Option<f64>, rtol: Option<f64>) -> Result<Tensor> {
    let matrices = read_matrices("linalg.matrix_rank", "A", a)?;
    let (m, n) = (matrices.rows, matrices.cols);
    let mut ranks = Vec::new();
    for index in 0..matrices.count() {
        let s = singular_values_of(matrices.matrix(index), m, n);
        let cut = tolerance(
            matrices.dtype,
            m,
            n,
            atol,
            rtol,
            s.first().copied().unwrap_or(0.0),
        );
        ranks.push(s.iter().filter(|&&sigma| sigma > cut).count() as i64);
    }
    Tensor::from_vec(ranks, &matrices.batch_sizes)
}

/// `torch.linalg.cond(A, p=None)` for the 2-norm: `smax / smin` (inf for a singular matrix).
pub fn cond_2(a: &Tensor, smallest_over_largest: bool) -> Result<Tensor> {
    let matrices = read_matrices("linalg.cond", "A", a)?;
    let (m, n) = (matrices.rows, matrices.cols);
    let mut values = Vec::new();
    for index in 0..matrices.count() {
        let s = singular_values_of(matrices.matrix(index), m, n);
        let (largest, smallest) = (
            s.first().copied().unwrap_or(0.0),
            s.last().copied().unwrap_or(0.0),
        );
        values.push(if smallest_over_largest {
            smallest / largest
        } else {
            largest / smallest
        });
    }
    tensor_from_f64(values, &matrices.batch_sizes, matrices.dtype)
}
