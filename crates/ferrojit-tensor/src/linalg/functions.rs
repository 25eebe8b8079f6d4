//! Solvers built on the factorizations: `lstsq` (minimum-norm solution through the SVD),
//! `cond` for the non-2 orders, `tensorinv` and `tensorsolve`.

use super::batch::{read_matrices, read_square, tensor_from_f64};
use super::svd::jacobi_svd;
use crate::dtype::DType;
use crate::error::{Result, TensorError};
use crate::tensor::Tensor;

/// `torch.linalg.lstsq(A, B, rcond, driver)`: `(solution, residuals, rank, singular_values)`.
/// The solution is the minimum-norm one (what `gelsd` returns; `gelsy`, PyTorch's CPU
/// default, agrees whenever A has full rank). As in PyTorch: residuals only when m > n,
/// every matrix has full rank and the driver is not `gelsy`; the rank for every driver but
/// `gels`; singular values only for
/// `gelsd` and `gelss`.
pub fn lstsq(
    a: &Tensor,
    b: &Tensor,
    rcond: Option<f64>,
    driver: Option<&str>,
) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    let op = "torch.linalg.lstsq";
    let driver = driver.unwrap_or("gelsy");
    if !["gels", "gelsy", "gelsd", "gelss"].contains(&driver) {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)"
        )));
    }
    let matrices = read_matrices(op, "A", a)?;
    let vector_case = b.dim() + 1 == a.dim();
    let b_matrix = if vector_case {
        b.unsqueeze(-1)?
    } else {
        b.clone()
    };
    let rhs = read_matrices(op, "B", &b_matrix)?;
    if a.dtype() != b.dtype() {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: Expected input and other to have the same dtype, but got input's dtype {} and other's dtype {}",
            a.dtype().scalar_type_name(),
            b.dtype().scalar_type_name()
        )));
    }
    let (m, n, k) = (matrices.rows, matrices.cols, rhs.cols);
    if rhs.rows != m || rhs.batch_sizes != matrices.batch_sizes {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: input.size(-2) should match other.size(-2) and the batch dimensions should match, got A {} and B {}",
            crate::error::format_shape(a.sizes()),
            crate::error::format_shape(b.sizes())
        )));
    }
    let epsilon = if matrices.dtype == DType::Float32 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    };
    let rcond = match rcond {
        Some(r) if r > 0.0 => r,
        _ => epsilon * m.max(n) as f64,
    };
    let r = m.min(n);
    let (mut solutions, mut ranks, mut singular_all, mut residuals) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut all_full_rank = true;
    for index in 0..matrices.count() {
        let am = matrices.matrix(index);
        let bm = rhs.matrix(index);
        let (u, s, v) = jacobi_svd(am, m, n);
        let cut = rcond * s.first().copied().unwrap_or(0.0);
        let rank = s.iter().filter(|&&sigma| sigma > cut).count();
        all_full_rank &= rank == r;
        // X = V diag(1/s) U^T B over the kept singular values.
        let mut x = vec![0.0; n * k];
        for (j, &sigma) in s.iter().enumerate().take(rank) {
            for c in 0..k {
                let projection: f64 = (0..m).map(|i| u[i * r + j] * bm[i * k + c]).sum();
                let coefficient = projection / sigma;
                for row in 0..n {
                    x[row * k + c] += v[row * r + j] * coefficient;
                }
            }
        }
        if m > n {
            for c in 0..k {
                let sum: f64 = (0..m)
                    .map(|i| {
                        let fitted: f64 = (0..n).map(|j| am[i * n + j] * x[j * k + c]).sum();
                        (fitted - bm[i * k + c]).powi(2)
                    })
                    .sum();
                residuals.push(sum);
            }
        }
        solutions.extend(x);
        ranks.push(rank as i64);
        singular_all.extend(s);
    }
    let dtype = matrices.dtype;
    let solution_sizes = if vector_case {
        matrices.sizes_with(&[n])
    } else {
        matrices.sizes_with(&[n, k])
    };
    // LAPACK's gelsy leaves the residuals out; PyTorch returns them empty then.
    let residuals = if m > n && all_full_rank && driver != "gelsy" {
        let sizes = if vector_case {
            matrices.batch_sizes.clone()
        } else {
            matrices.sizes_with(&[k])
        };
        tensor_from_f64(residuals, &sizes, dtype)?
    } else {
        tensor_from_f64(Vec::new(), &[0], dtype)?
    };
    let rank = if driver == "gels" {
        Tensor::from_vec(Vec::<i64>::new(), &[0])?
    } else {
        Tensor::from_vec(ranks, &matrices.batch_sizes)?
    };
    let singular = if driver == "gelsd" || driver == "gelss" {
        tensor_from_f64(singular_all, &matrices.sizes_with(&[r]), dtype)?
    } else {
        tensor_from_f64(Vec::new(), &[0], dtype)?
    };
    Ok((
        tensor_from_f64(solutions, &solution_sizes, dtype)?,
        residuals,
        rank,
        singular,
    ))
}

/// `torch.linalg.cond(A, p)` for `p` in 1, -1, inf, -inf, 'fro', 'nuc': `norm(A) *
/// norm(inv(A))`.
pub fn cond_by_inverse(a: &Tensor, p: CondOrder<'_>) -> Result<Tensor> {
    let inverse = super::lu::inv(a)?;
    let dims = [-2i64, -1];
    let norm = |t: &Tensor| match p {
        CondOrder::Number(ord) => super::norms::matrix_norm(t, ord, &dims, false, None),
        CondOrder::Name(ord) => super::norms::matrix_norm_str(t, ord, &dims, false, None),
    };
    norm(a)?.mul(&norm(&inverse)?)
}

/// An order for [`cond_by_inverse`].
#[derive(Debug, Clone, Copy)]
pub enum CondOrder<'a> {
    Number(f64),
    Name(&'a str),
}

/// `torch.linalg.tensorinv(A, ind)`: the inverse of A read as a matrix of
/// `prod(shape[:ind]) x prod(shape[ind:])`, shaped `shape[ind:] + shape[:ind]`.
pub fn tensorinv(a: &Tensor, ind: i64) -> Result<Tensor> {
    let op = "linalg.tensorinv";
    if ind <= 0 || ind as usize > a.dim() {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: Expected a strictly positive integer for 'ind', but got {ind}"
        )));
    }
    let (front, back) = a.sizes().split_at(ind as usize);
    let rows: usize = front.iter().product();
    let cols: usize = back.iter().product();
    if rows != cols {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: Expected self to satisfy the requirement prod(self.shape[ind:]) == prod(self.shape[:ind]), but got {cols} != {rows}"
        )));
    }
    let matrix = a.reshape(&[rows as i64, cols as i64])?;
    let inverse = super::lu::inv(&matrix)?;
    let shape: Vec<i64> = back.iter().chain(front).map(|&s| s as i64).collect();
    inverse.reshape(&shape)
}

/// `torch.linalg.tensorsolve(A, B, dims)`: X with `tensordot(A, X, X.ndim) = B`.
pub fn tensorsolve(a: &Tensor, b: &Tensor, dims: Option<&[i64]>) -> Result<Tensor> {
    let op = "linalg.tensorsolve";
    let moved = match dims {
        Some(list) if !list.is_empty() => {
            let destination: Vec<i64> = (0..list.len())
                .map(|i| a.dim() as i64 - list.len() as i64 + i as i64)
                .collect();
            a.movedim(list, &destination)?
        }
        _ => a.clone(),
    };
    let rows = b.numel();
    if b.dim() > moved.dim() {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: B has more dimensions than A"
        )));
    }
    let x_shape: Vec<i64> = moved.sizes()[b.dim()..].iter().map(|&s| s as i64).collect();
    let cols: usize = moved.sizes()[b.dim()..].iter().product();
    if rows != cols {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), but got {cols} != {rows}"
        )));
    }
    let matrix = moved.reshape(&[rows as i64, cols as i64])?;
    let solution = super::lu::solve(&matrix, &b.reshape(&[rows as i64])?, true)?;
    solution.reshape(&x_shape)
}

/// Checks `A` is square for `cond`'s inverse-based orders (PyTorch's wording).
pub fn check_square_for_cond(a: &Tensor) -> Result<()> {
    read_square("linalg.cond", "A", a).map(|_| ())
}
