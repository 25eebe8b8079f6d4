//! QR by Householder reflections built as LAPACK's `dlarfg` builds them (`beta =
//! -sign(alpha) * norm`), so R's diagonal signs match PyTorch's LAPACK results:
//! `torch.linalg.qr` (modes `reduced`, `complete`, `r`), `geqrf` and `householder_product`.

use super::batch::{read_matrices, tensor_from_f64};
use crate::error::{Result, TensorError};
use crate::tensor::Tensor;

/// `geqrf` of a row-major `rows x cols` matrix: R on and above the diagonal, the reflectors'
/// tails below it (their leading 1 implied), and `tau`.
fn householder_qr(a: &[f64], rows: usize, cols: usize) -> (Vec<f64>, Vec<f64>) {
    let mut a = a.to_vec();
    let steps = rows.min(cols);
    let mut taus = Vec::with_capacity(steps);
    for j in 0..steps {
        let alpha = a[j * cols + j];
        let tail_norm = (j + 1..rows)
            .map(|r| a[r * cols + j] * a[r * cols + j])
            .sum::<f64>()
            .sqrt();
        if tail_norm == 0.0 {
            taus.push(0.0);
            continue;
        }
        let beta = -alpha.signum() * alpha.hypot(tail_norm);
        // signum(0) is 1 in Rust, and LAPACK's SIGN(x, 0) is +x: both give beta = -norm.
        let tau = (beta - alpha) / beta;
        let scale = 1.0 / (alpha - beta);
        for r in j + 1..rows {
            a[r * cols + j] *= scale;
        }
        a[j * cols + j] = beta;
        // Apply H = I - tau v v^T to the trailing columns.
        for c in j + 1..cols {
            let mut dot = a[j * cols + c];
            for r in j + 1..rows {
                dot += a[r * cols + j] * a[r * cols + c];
            }
            let factor = tau * dot;
            a[j * cols + c] -= factor;
            for r in j + 1..rows {
                a[r * cols + c] -= factor * a[r * cols + j];
            }
        }
        taus.push(tau);
    }
    (a, taus)
}

/// The first `q_cols` columns of `H_1 ... H_k` (row-major `rows x q_cols`) from reflectors
/// stored below the diagonal of the row-major `rows x cols` `packed`.
fn form_q(packed: &[f64], rows: usize, cols: usize, taus: &[f64], q_cols: usize) -> Vec<f64> {
    let mut q = vec![0.0; rows * q_cols];
    for i in 0..rows.min(q_cols) {
        q[i * q_cols + i] = 1.0;
    }
    // Q = H_1 (H_2 (... H_k I)): apply the reflectors from the last.
    for (j, &tau) in taus.iter().enumerate().rev() {
        if tau == 0.0 {
            continue;
        }
        for c in 0..q_cols {
            let mut dot = q[j * q_cols + c];
            for r in j + 1..rows {
                dot += packed[r * cols + j] * q[r * q_cols + c];
            }
            let factor = tau * dot;
            q[j * q_cols + c] -= factor;
            for r in j + 1..rows {
                q[r * q_cols + c] -= factor * packed[r * cols + j];
            }
        }
    }
    q
}

/// `torch.linalg.qr(A, mode)`: `(Q, R)`; mode `r` returns an empty Q.
pub fn qr(a: &Tensor, mode: &str) -> Result<(Tensor, Tensor)> {
    let op = "linalg.qr";
    let matrices = read_matrices(op, "A", a)?;
    let (m, n) = (matrices.rows, matrices.cols);
    let k = m.min(n);
    let (q_cols, r_rows, want_q) = match mode {
        "reduced" => (k, k, true),
        "complete" => (m, m, true),
        "r" => (0, k, false),
        other => {
            return Err(TensorError::InvalidArgument(format!(
                "qr received unrecognized mode '{other}' but expected one of 'reduced' (default), 'r', or 'complete'"
            )))
        }
    };
    let (mut qs, mut rs) = (Vec::new(), Vec::new());
    for index in 0..matrices.count() {
        let (packed, taus) = householder_qr(matrices.matrix(index), m, n);
        if want_q {
            qs.extend(form_q(&packed, m, n, &taus, q_cols));
        }
        for r in 0..r_rows {
            for c in 0..n {
                rs.push(if c >= r && r < m {
                    packed[r * n + c]
                } else {
                    0.0
                });
            }
        }
    }
    let dtype = matrices.dtype;
    let q = if want_q {
        tensor_from_f64(qs, &matrices.sizes_with(&[m, q_cols]), dtype)?
    } else {
        tensor_from_f64(Vec::new(), &[0], dtype)?
    };
    Ok((
        q,
        tensor_from_f64(rs, &matrices.sizes_with(&[r_rows, n]), dtype)?,
    ))
}

/// `torch.geqrf(A)`: `(packed reflectors and R, tau)`.
pub fn geqrf(a: &Tensor) -> Result<(Tensor, Tensor)> {
    let matrices = read_matrices("geqrf", "A", a)?;
    let (m, n) = (matrices.rows, matrices.cols);
    let (mut packed_all, mut taus_all) = (Vec::new(), Vec::new());
    for index in 0..matrices.count() {
        let (packed, taus) = householder_qr(matrices.matrix(index), m, n);
        packed_all.extend(packed);
        taus_all.extend(taus);
    }
    Ok((
        tensor_from_f64(packed_all, a.sizes(), matrices.dtype)?,
        tensor_from_f64(taus_all, &matrices.sizes_with(&[m.min(n)]), matrices.dtype)?,
    ))
}

/// `torch.linalg.householder_product(A, tau)`: the first `n` columns of `H_1 ... H_k`.
pub fn householder_product(a: &Tensor, tau: &Tensor) -> Result<Tensor> {
    let op = "torch.linalg.householder_product";
    let matrices = read_matrices(op, "input", a)?;
    let (m, n) = (matrices.rows, matrices.cols);
    if m < n {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: input.shape[-2] must be greater than or equal to input.shape[-1]"
        )));
    }
    let k = tau.sizes().last().copied().unwrap_or(0);
    if k > n || tau.sizes()[..tau.dim().saturating_sub(1)] != matrices.batch_sizes[..] {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: tau must have the batch shape of input and at most input.shape[-1] entries, got {}",
            crate::error::format_shape(tau.sizes())
        )));
    }
    let tau_values = tau.to_f64_vec();
    let mut values = Vec::new();
    for index in 0..matrices.count() {
        values.extend(form_q(
            matrices.matrix(index),
            m,
            n,
            &tau_values[index * k..(index + 1) * k],
            n,
        ));
    }
    tensor_from_f64(values, a.sizes(), matrices.dtype)
}

/// `torch.ormqr(input, tau, other, left, transpose)`: `other` multiplied by the Q (or Q^T)
/// whose reflectors `geqrf` stored in `input` and `tau`, from the left or the right,
/// without forming Q.
pub fn ormqr(
    input: &Tensor,
    tau: &Tensor,
    other: &Tensor,
    left: bool,
    transpose: bool,
) -> Result<Tensor> {
    let op = "torch.ormqr";
    let fail = |message: String| Err(TensorError::InvalidArgument(format!("{op}: {message}")));
    if input.dim() < 2 {
        return fail("input must have at least 2 dimensions.".into());
    }
    if other.dim() < 2 {
        return fail("other must have at least 2 dimensions.".into());
    }
    let side = if left { -2 } else { -1 };
    let other_side = other.sizes()[(other.dim() as i64 + side) as usize];
    let input_rows = input.sizes()[input.dim() - 2];
    let input_cols = input.sizes()[input.dim() - 1];
    if other_side != input_rows {
        return fail(format!(
            "other.shape[{side}] must be equal to input.shape[-2]"
        ));
    }
    if tau.dim() + 1 != input.dim() {
        return fail(format!(
            "Expected tau to have one dimension less than input, but got tau.ndim equal to {} and input.ndim is equal to {}",
            tau.dim(),
            input.dim()
        ));
    }
    let reflectors = tau.sizes().last().copied().unwrap_or(0);
    if reflectors > other_side.min(input_cols) {
        return fail(format!(
            "tau.shape[-1] must be equal to min(other.shape[{side}], input.shape[-1])"
        ));
    }
    if reflectors > input_cols {
        return fail("tau.shape[-1] must be less than or equal to input.shape[-1]".into());
    }
    if input.dim() != other.dim() {
        return fail(format!(
            "Expected other to have the same number of dimensions as input, but got other.ndim equal to {} and input.ndim is equal to {}",
            other.dim(),
            input.dim()
        ));
    }
    for (name, dtype) in [("tau", tau.dtype()), ("other", other.dtype())] {
        if dtype != input.dtype() {
            return fail(format!(
                "Expected input and {name} to have the same dtype, but input has dtype{} and {name} has dtype {}",
                input.dtype().scalar_type_name(),
                dtype.scalar_type_name()
            ));
        }
    }
    let packed = read_matrices(op, "input", input)?;
    let targets = read_matrices(op, "other", other)?;
    let batch = &packed.batch_sizes;
    if targets.batch_sizes != *batch || tau.sizes()[..tau.dim() - 1] != batch[..] {
        return fail(format!(
            "Expected batch dimensions of input, tau and other to be equal, got input {}, tau {} and other {}",
            crate::error::format_shape(input.sizes()),
            crate::error::format_shape(tau.sizes()),
            crate::error::format_shape(other.sizes())
        ));
    }
    let (m, n) = (packed.rows, packed.cols);
    let (rows, cols) = (targets.rows, targets.cols);
    let tau_values = tau.to_f64_vec();
    let mut values = Vec::with_capacity(targets.values.len());
    for index in 0..packed.count() {
        let a = packed.matrix(index);
        let taus = &tau_values[index * reflectors..(index + 1) * reflectors];
        let mut c = targets.matrix(index).to_vec();
        // Q = H_1 ... H_k. Q C applies H_k first; Q^T C applies H_1 first; C Q applies H_1
        // first (from the right); C Q^T applies H_k first.
        let forward = left == transpose;
        let order: Vec<usize> = if forward {
            (0..reflectors).collect()
        } else {
            (0..reflectors).rev().collect()
        };
        for j in order {
            let tau_j = taus[j];
            if tau_j == 0.0 {
                continue;
            }
            // v = e_j + the stored tail below row j of column j.
            let v = |r: usize| -> f64 {
                if r == j {
                    1.0
                } else {
                    a[r * n + j]
                }
            };
            if left {
                for col in 0..cols {
                    let dot: f64 = (j..m).map(|r| v(r) * c[r * cols + col]).sum();
                    for r in j..m {
                        c[r * cols + col] -= tau_j * dot * v(r);
                    }
                }
            } else {
                for row in 0..rows {
                    let dot: f64 = (j..m).map(|k| c[row * cols + k] * v(k)).sum();
                    for k in j..m {
                        c[row * cols + k] -= tau_j * dot * v(k);
                    }
                }
            }
        }
        values.extend(c);
    }
    tensor_from_f64(values, other.sizes(), packed.dtype)
}
