//! `torch.linalg` and the older linear-algebra operators (`inverse`, `det`, `cholesky`,
//! `triangular_solve`, `svd`, `qr`, ...): schemas and argument binding. The kernels are
//! `ferrojit_tensor::linalg`. Multi-output `out=` overloads are not registered yet.

use std::sync::Arc;

use ferrojit_tensor::linalg as la;
use ferrojit_tensor::{DType, Scalar, Tensor, TensorError};

use super::binding::{out_from_functional, typed};
use crate::error::Result;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

fn inv(a: Input) -> Result<Tensor> {
    Ok(la::inv(&a)?)
}

fn inverse(a: Input) -> Result<Tensor> {
    Ok(la::inv(&a)?)
}

fn inv_ex(a: Input, check_errors: bool) -> Result<(Tensor, Tensor)> {
    Ok(la::inv_ex(&a, check_errors)?)
}

fn det(a: Input) -> Result<Tensor> {
    Ok(la::det(&a)?)
}

fn slogdet(a: Input) -> Result<(Tensor, Tensor)> {
    Ok(la::slogdet(&a)?)
}

fn logdet(a: Input) -> Result<Tensor> {
    Ok(la::logdet(&a)?)
}

fn solve(a: Input, b: Input, left: bool) -> Result<Tensor> {
    if a.dtype().is_complex() && a.dtype() == b.dtype() {
        return Ok(complex_solve_ex(&a, &b, left, true)?.0);
    }
    Ok(la::solve(&a, &b, left)?)
}

fn solve_ex(a: Input, b: Input, left: bool, check_errors: bool) -> Result<(Tensor, Tensor)> {
    if a.dtype().is_complex() && a.dtype() == b.dtype() {
        return complex_solve_ex(&a, &b, left, check_errors);
    }
    Ok(la::solve_ex(&a, &b, left, check_errors)?)
}

/// Complex `A X = B` (`X A = B` when not `left`) through the real system of twice the size,
/// `[[P, -Q], [Q, P]] [Xr; Xi] = [Br; Bi]` for `A = P + iQ`, which the real LU kernel
/// solves; a singular `A` makes that system singular too, so the kernel's errors carry over.
fn complex_solve_ex(
    a: &Tensor,
    b: &Tensor,
    left: bool,
    check_errors: bool,
) -> Result<(Tensor, Tensor)> {
    let a_sizes = a.sizes().to_vec();
    if a_sizes.len() < 2 {
        // The kernel names the problem.
        return Ok(la::solve_ex(a, b, left, check_errors)?);
    }
    let n = a_sizes[a_sizes.len() - 1] as i64;
    let vector = b.dim() == 1 || (b.dim() + 1 == a.dim() && b.sizes() == &a_sizes[..a.dim() - 1]);
    // X A = B is A^T X^T = B^T (a vector is the same either way).
    let (a, b) = if left {
        (a.clone(), b.clone())
    } else if vector {
        (a.transpose(-2, -1)?.contiguous(), b.clone())
    } else {
        (
            a.transpose(-2, -1)?.contiguous(),
            b.transpose(-2, -1)?.contiguous(),
        )
    };
    let (p, q) = (a.real_part()?, a.imaginary_part()?);
    let top = ferrojit_tensor::cat(&[p.clone(), q.neg()?], -1)?;
    let bottom = ferrojit_tensor::cat(&[q, p], -1)?;
    let system = ferrojit_tensor::cat(&[top, bottom], -2)?;
    let rows = if vector { -1 } else { -2 };
    let rhs = ferrojit_tensor::cat(&[b.real_part()?, b.imaginary_part()?], rows)?;
    let (solution, info) = la::solve_ex(&system, &rhs, true, check_errors)?;
    let x = Tensor::complex(
        &solution.narrow(rows, 0, n)?.contiguous(),
        &solution.narrow(rows, n, n)?.contiguous(),
    )?;
    let x = if left || vector {
        x
    } else {
        x.transpose(-2, -1)?.contiguous()
    };
    Ok((x, info))
}

fn linalg_cholesky(a: Input, upper: bool) -> Result<Tensor> {
    Ok(la::cholesky("linalg.cholesky", &a, upper)?)
}

fn cholesky(a: Input, upper: bool) -> Result<Tensor> {
    Ok(la::cholesky("cholesky", &a, upper)?)
}

fn cholesky_ex(a: Input, upper: bool, check_errors: bool) -> Result<(Tensor, Tensor)> {
    Ok(la::cholesky_ex(&a, upper, check_errors)?)
}

/// `torch.cholesky_solve(B, L, upper)`: `A X = B` with `A = L L^T` (or `U^T U`).
fn cholesky_solve(b: Input, factor: Input, upper: bool) -> Result<Tensor> {
    let (first, second) = if upper {
        (factor.transpose(-2, -1)?.contiguous(), (*factor).clone())
    } else {
        ((*factor).clone(), factor.transpose(-2, -1)?.contiguous())
    };
    let y = la::solve_triangular(&first, &b, false, true, false)?;
    Ok(la::solve_triangular(&second, &y, true, true, false)?)
}

/// `torch.cholesky_inverse(L, upper)`: `(L L^T)^-1`.
fn cholesky_inverse(factor: Input, upper: bool) -> Result<Tensor> {
    let n = *factor.sizes().last().unwrap_or(&0) as i64;
    let mut shape: Vec<i64> = factor.sizes().iter().map(|&s| s as i64).collect();
    if shape.len() < 2 {
        return Err(TensorError::InvalidArgument(
            "cholesky_inverse: The input tensor A must have at least 2 dimensions.".to_string(),
        )
        .into());
    }
    let last = shape.len() - 1;
    shape[last] = n;
    let identity = ferrojit_tensor::ops::creation::eye(n, None, factor.dtype())?
        .expand(&shape)?
        .contiguous();
    cholesky_solve(Arc::new(identity), factor, upper)
}

fn lu_factor(a: Input, pivot: bool) -> Result<(Tensor, Tensor)> {
    Ok(la::lu_factor(&a, pivot)?)
}

fn lu_factor_ex(a: Input, pivot: bool, check_errors: bool) -> Result<(Tensor, Tensor, Tensor)> {
    Ok(la::lu_factor_ex(&a, pivot, check_errors)?)
}

fn lu(a: Input, pivot: bool) -> Result<(Tensor, Tensor, Tensor)> {
    Ok(la::lu(&a, pivot)?)
}

fn linalg_lu_solve(
    lu: Input,
    pivots: Input,
    b: Input,
    left: bool,
    adjoint: bool,
) -> Result<Tensor> {
    Ok(la::lu_solve(&lu, &pivots, &b, left, adjoint)?)
}

fn lu_solve(b: Input, lu: Input, pivots: Input) -> Result<Tensor> {
    Ok(la::lu_solve(&lu, &pivots, &b, true, false)?)
}

fn solve_triangular(
    a: Input,
    b: Input,
    upper: bool,
    left: bool,
    unitriangular: bool,
) -> Result<Tensor> {
    Ok(la::solve_triangular(&a, &b, upper, left, unitriangular)?)
}

fn triangular_solve(
    b: Input,
    a: Input,
    upper: bool,
    transpose: bool,
    unitriangular: bool,
) -> Result<(Tensor, Tensor)> {
    Ok(la::triangular_solve(
        &b,
        &a,
        upper,
        transpose,
        unitriangular,
    )?)
}

fn qr(a: Input, mode: String) -> Result<(Tensor, Tensor)> {
    Ok(la::qr(&a, &mode)?)
}

/// The old `torch.qr(A, some)`: reduced or complete.
fn qr_old(a: Input, some: bool) -> Result<(Tensor, Tensor)> {
    Ok(la::qr(&a, if some { "reduced" } else { "complete" })?)
}

fn geqrf(a: Input) -> Result<(Tensor, Tensor)> {
    Ok(la::geqrf(&a)?)
}

fn householder_product(a: Input, tau: Input) -> Result<Tensor> {
    Ok(la::householder_product(&a, &tau)?)
}

fn svd(a: Input, full_matrices: bool, _driver: Option<String>) -> Result<(Tensor, Tensor, Tensor)> {
    Ok(la::svd(&a, full_matrices)?)
}

/// The old `torch.svd(A, some, compute_uv)`: V rather than Vh; zero U and V without
/// `compute_uv` (PyTorch's documented behaviour).
fn svd_old(a: Input, some: bool, compute_uv: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let (u, s, vh) = la::svd(&a, !some)?;
    let v = vh.transpose(-2, -1)?.contiguous();
    if compute_uv {
        Ok((u, s, v))
    } else {
        Ok((
            Tensor::zeros(u.sizes(), u.dtype())?,
            s,
            Tensor::zeros(v.sizes(), v.dtype())?,
        ))
    }
}

fn svdvals(a: Input, _driver: Option<String>) -> Result<Tensor> {
    Ok(la::svdvals(&a)?)
}

fn eigh(a: Input, uplo: String) -> Result<(Tensor, Tensor)> {
    Ok(la::eigh(&a, &uplo)?)
}

fn eig(a: Input) -> Result<(Tensor, Tensor)> {
    Ok(la::eig(&a)?)
}

fn eigvals(a: Input) -> Result<Tensor> {
    Ok(la::eigvals(&a)?)
}

fn ldl_factor(a: Input, hermitian: bool) -> Result<(Tensor, Tensor)> {
    Ok(la::ldl_factor(&a, hermitian)?)
}

fn ldl_factor_ex(
    a: Input,
    hermitian: bool,
    check_errors: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    Ok(la::ldl_factor_ex(&a, hermitian, check_errors)?)
}

fn ldl_solve(ld: Input, pivots: Input, b: Input, hermitian: bool) -> Result<Tensor> {
    Ok(la::ldl_solve(&ld, &pivots, &b, hermitian)?)
}

fn ormqr(input: Input, tau: Input, other: Input, left: bool, transpose: bool) -> Result<Tensor> {
    Ok(la::ormqr(&input, &tau, &other, left, transpose)?)
}

fn polar(a: Input) -> Result<(Tensor, Tensor)> {
    Ok(la::polar(&a)?)
}

fn matrix_sqrth(a: Input) -> Result<Tensor> {
    Ok(la::matrix_sqrth(&a)?)
}

fn eigvalsh(a: Input, uplo: String) -> Result<Tensor> {
    Ok(la::eigvalsh(&a, &uplo)?)
}

fn pinv_atol_rtol(
    a: Input,
    atol: Option<f64>,
    rtol: Option<f64>,
    hermitian: bool,
) -> Result<Tensor> {
    Ok(la::pinv_with_tolerances(&a, &|_| (atol, rtol), hermitian)?)
}

fn pinv_rcond(a: Input, rcond: f64, hermitian: bool) -> Result<Tensor> {
    Ok(la::pinv_with_tolerances(
        &a,
        &|_| (Some(0.0), Some(rcond)),
        hermitian,
    )?)
}

fn pinverse(a: Input, rcond: f64) -> Result<Tensor> {
    Ok(la::pinv(&a, Some(0.0), Some(rcond))?)
}

fn matrix_rank_atol_rtol(
    a: Input,
    atol: Option<f64>,
    rtol: Option<f64>,
    _hermitian: bool,
) -> Result<Tensor> {
    Ok(la::matrix_rank(&a, atol, rtol)?)
}

fn matrix_rank_tol(a: Input, tol: f64, _hermitian: bool) -> Result<Tensor> {
    Ok(la::matrix_rank(&a, Some(tol), Some(0.0))?)
}

fn lstsq(
    a: Input,
    b: Input,
    rcond: Option<f64>,
    driver: Option<String>,
) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    Ok(la::lstsq(&a, &b, rcond, driver.as_deref())?)
}

fn matrix_exp(a: Input) -> Result<Tensor> {
    Ok(la::matrix_exp(&a)?)
}

fn matrix_power(a: Input, n: i64) -> Result<Tensor> {
    Ok(la::matrix_power(&a, n)?)
}

fn linalg_cross(a: Input, b: Input, dim: i64) -> Result<Tensor> {
    Ok(la::cross(&a, &b, dim)?)
}

/// The old `torch.cross(a, b, dim=None)`: without `dim`, the first dimension of size 3.
fn cross(a: Input, b: Input, dim: Option<i64>) -> Result<Tensor> {
    let dim = match dim {
        Some(d) => d,
        None => a.sizes().iter().position(|&s| s == 3).ok_or_else(|| {
            TensorError::InvalidArgument(format!(
                "no dimension of size 3 in input, shape {}",
                ferrojit_tensor::error::format_shape(a.sizes())
            ))
        })? as i64,
    };
    Ok(la::cross(&a, &b, dim)?)
}

fn vecdot(x: Input, y: Input, dim: i64) -> Result<Tensor> {
    Ok(la::vecdot(&x, &y, dim)?)
}

fn multi_dot(tensors: Vec<Tensor>) -> Result<Tensor> {
    Ok(la::multi_dot(&tensors)?)
}

fn chain_matmul(tensors: Vec<Tensor>) -> Result<Tensor> {
    if tensors.len() == 1 {
        return Ok(tensors[0].clone_tensor());
    }
    Ok(la::multi_dot(&tensors)?)
}

fn vdot(a: Input, b: Input) -> Result<Tensor> {
    if a.dim() != 1 || b.dim() != 1 {
        return Err(TensorError::InvalidArgument(format!(
            "1D tensors expected, but got {}D and {}D tensors",
            a.dim(),
            b.dim()
        ))
        .into());
    }
    Ok(a.dot(&b)?)
}

fn ger(a: Input, b: Input) -> Result<Tensor> {
    Ok(a.unsqueeze(-1)?.mul(&b.unsqueeze(0)?)?)
}

fn matrix_norm(
    a: Input,
    ord: Scalar,
    dim: Vec<i64>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    Ok(la::matrix_norm(&a, ord.to_f64(), &dim, keepdim, dtype)?)
}

fn matrix_norm_str(
    a: Input,
    ord: String,
    dim: Vec<i64>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    Ok(la::matrix_norm_str(&a, &ord, &dim, keepdim, dtype)?)
}

/// `torch.linalg.norm`: with no `ord`, the 2-norm of the flattened input (or of `dim`); with
/// an `ord`, a vector norm over one dim or a matrix norm over two (1-D/2-D inputs when `dim`
/// is None).
fn norm(
    a: Input,
    ord: Option<Scalar>,
    dim: Option<Vec<i64>>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    let dims = dim.unwrap_or_default();
    match ord {
        None => {
            if dims.len() == 2 {
                Ok(la::matrix_norm_str(&a, "fro", &dims, keepdim, dtype)?)
            } else {
                let d = if dims.is_empty() {
                    None
                } else {
                    Some(dims.as_slice())
                };
                Ok(la::vector_norm(&a, 2.0, d, keepdim, dtype)?)
            }
        }
        Some(ord) => {
            let ord = ord.to_f64();
            let matrix = dims.len() == 2 || (dims.is_empty() && a.dim() == 2);
            if dims.is_empty() && a.dim() != 1 && a.dim() != 2 {
                return Err(TensorError::InvalidArgument(format!(
                    "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {}D.",
                    a.dim()
                ))
                .into());
            }
            if matrix {
                let dims = if dims.is_empty() { vec![-2, -1] } else { dims };
                Ok(la::matrix_norm(&a, ord, &dims, keepdim, dtype)?)
            } else {
                let d = if dims.is_empty() {
                    None
                } else {
                    Some(dims.as_slice())
                };
                Ok(la::vector_norm(&a, ord, d, keepdim, dtype)?)
            }
        }
    }
}

fn norm_str(
    a: Input,
    ord: String,
    dim: Option<Vec<i64>>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    let dims = match dim {
        Some(d) if !d.is_empty() => d,
        _ if a.dim() == 2 => vec![-2, -1],
        _ => {
            return Err(TensorError::InvalidArgument(format!(
            "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {}D.",
            a.dim()
        ))
            .into())
        }
    };
    Ok(la::matrix_norm_str(&a, &ord, &dims, keepdim, dtype)?)
}

fn frobenius_norm(a: Input, dim: Vec<i64>, keepdim: bool) -> Result<Tensor> {
    Ok(la::vector_norm(&a, 2.0, Some(&dim), keepdim, None)?)
}

fn nuclear_norm(a: Input, keepdim: bool) -> Result<Tensor> {
    Ok(la::matrix_norm_str(&a, "nuc", &[-2, -1], keepdim, None)?)
}

fn nuclear_norm_dim(a: Input, dim: Vec<i64>, keepdim: bool) -> Result<Tensor> {
    Ok(la::matrix_norm_str(&a, "nuc", &dim, keepdim, None)?)
}

/// `torch.linalg.cond(A, p)`: the 2-norm ratio from singular values (p None, 2, -2); the
/// other orders as `norm(A) * norm(inv(A))` on square matrices.
fn cond(a: Input, p: Option<Scalar>) -> Result<Tensor> {
    let p = p.map(|s| s.to_f64()).unwrap_or(2.0);
    if p.abs() == 2.0 {
        return Ok(la::cond_2(&a, p < 0.0)?);
    }
    la::check_square_for_cond(&a)?;
    Ok(la::cond_by_inverse(&a, la::CondOrder::Number(p))?)
}

fn cond_str(a: Input, p: String) -> Result<Tensor> {
    la::check_square_for_cond(&a)?;
    Ok(la::cond_by_inverse(&a, la::CondOrder::Name(&p))?)
}

fn tensorinv(a: Input, ind: i64) -> Result<Tensor> {
    Ok(la::tensorinv(&a, ind)?)
}

fn tensorsolve(a: Input, b: Input, dims: Option<Vec<i64>>) -> Result<Tensor> {
    Ok(la::tensorsolve(&a, &b, dims.as_deref())?)
}

pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        typed("aten::linalg_inv(Tensor A) -> Tensor", inv),
        out_from_functional("aten::linalg_inv.out(Tensor A, *, Tensor(a!) out) -> Tensor(a!)", inv),
        typed("aten::inverse(Tensor self) -> Tensor", inverse),
        out_from_functional("aten::inverse.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", inverse),
        typed("aten::linalg_inv_ex(Tensor A, *, bool check_errors=False) -> (Tensor inverse, Tensor info)", inv_ex),
        typed("aten::linalg_det(Tensor A) -> Tensor", det),
        out_from_functional("aten::linalg_det.out(Tensor A, *, Tensor(a!) out) -> Tensor(a!)", det),
        typed("aten::det(Tensor self) -> Tensor", det),
        typed("aten::linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)", slogdet),
        typed("aten::slogdet(Tensor self) -> (Tensor sign, Tensor logabsdet)", slogdet),
        typed("aten::logdet(Tensor self) -> Tensor", logdet),
        typed("aten::linalg_solve(Tensor A, Tensor B, *, bool left=True) -> Tensor", solve),
        out_from_functional("aten::linalg_solve.out(Tensor A, Tensor B, *, bool left=True, Tensor(a!) out) -> Tensor(a!)", solve),
        typed("aten::linalg_solve_ex(Tensor A, Tensor B, *, bool left=True, bool check_errors=False) -> (Tensor result, Tensor info)", solve_ex),
        typed("aten::linalg_cholesky(Tensor self, *, bool upper=False) -> Tensor", linalg_cholesky),
        out_from_functional("aten::linalg_cholesky.out(Tensor self, *, bool upper=False, Tensor(a!) out) -> Tensor(a!)", linalg_cholesky),
        // `aten::cholesky` and `aten::qr` left torch's operator list in 2.15 (Python wrappers
        // now), but archives saved by older versions still call them.
        typed("aten::cholesky(Tensor self, bool upper=False) -> Tensor", cholesky),
        out_from_functional("aten::cholesky.out(Tensor self, bool upper=False, *, Tensor(a!) out) -> Tensor(a!)", cholesky),
        typed("aten::linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> (Tensor L, Tensor info)", cholesky_ex),
        typed("aten::cholesky_solve(Tensor self, Tensor input2, bool upper=False) -> Tensor", cholesky_solve),
        out_from_functional("aten::cholesky_solve.out(Tensor self, Tensor input2, bool upper=False, *, Tensor(a!) out) -> Tensor(a!)", cholesky_solve),
        typed("aten::cholesky_inverse(Tensor self, bool upper=False) -> Tensor", cholesky_inverse),
        out_from_functional("aten::cholesky_inverse.out(Tensor self, bool upper=False, *, Tensor(a!) out) -> Tensor(a!)", cholesky_inverse),
        typed("aten::linalg_lu_factor(Tensor A, *, bool pivot=True) -> (Tensor LU, Tensor pivots)", lu_factor),
        typed("aten::linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False) -> (Tensor LU, Tensor pivots, Tensor info)", lu_factor_ex),
        typed("aten::linalg_lu(Tensor A, *, bool pivot=True) -> (Tensor P, Tensor L, Tensor U)", lu),
        typed("aten::linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool left=True, bool adjoint=False) -> Tensor", linalg_lu_solve),
        out_from_functional("aten::linalg_lu_solve.out(Tensor LU, Tensor pivots, Tensor B, *, bool left=True, bool adjoint=False, Tensor(a!) out) -> Tensor(a!)", linalg_lu_solve),
        typed("aten::lu_solve(Tensor self, Tensor LU_data, Tensor LU_pivots) -> Tensor", lu_solve),
        out_from_functional("aten::lu_solve.out(Tensor self, Tensor LU_data, Tensor LU_pivots, *, Tensor(a!) out) -> Tensor(a!)", lu_solve),
        typed("aten::linalg_solve_triangular(Tensor self, Tensor B, *, bool upper, bool left=True, bool unitriangular=False) -> Tensor", solve_triangular),
        out_from_functional("aten::linalg_solve_triangular.out(Tensor self, Tensor B, *, bool upper, bool left=True, bool unitriangular=False, Tensor(a!) out) -> Tensor(a!)", solve_triangular),
        typed("aten::triangular_solve(Tensor self, Tensor A, bool upper=True, bool transpose=False, bool unitriangular=False) -> (Tensor solution, Tensor cloned_coefficient)", triangular_solve),
        typed("aten::linalg_qr(Tensor A, str mode=\"reduced\") -> (Tensor Q, Tensor R)", qr),
        typed("aten::qr(Tensor self, bool some=True) -> (Tensor Q, Tensor R)", qr_old),
        typed("aten::geqrf(Tensor self) -> (Tensor a, Tensor tau)", geqrf),
        typed("aten::linalg_householder_product(Tensor input, Tensor tau) -> Tensor", householder_product),
        out_from_functional("aten::linalg_householder_product.out(Tensor input, Tensor tau, *, Tensor(a!) out) -> Tensor(a!)", householder_product),
        typed("aten::orgqr(Tensor self, Tensor input2) -> Tensor", householder_product),
        out_from_functional("aten::orgqr.out(Tensor self, Tensor input2, *, Tensor(a!) out) -> Tensor(a!)", householder_product),
        typed("aten::linalg_svd(Tensor A, bool full_matrices=True, *, str? driver=None) -> (Tensor U, Tensor S, Tensor Vh)", svd),
        typed("aten::_linalg_svd(Tensor A, bool full_matrices=False, bool compute_uv=True, *, str? driver=None) -> (Tensor U, Tensor S, Tensor Vh)", linalg_svd_private),
        typed("aten::svd(Tensor self, bool some=True, bool compute_uv=True) -> (Tensor U, Tensor S, Tensor V)", svd_old),
        typed("aten::linalg_svdvals(Tensor A, *, str? driver=None) -> Tensor", svdvals),
        out_from_functional("aten::linalg_svdvals.out(Tensor A, *, str? driver=None, Tensor(a!) out) -> Tensor(a!)", svdvals),
        typed("aten::linalg_eigh(Tensor self, str UPLO=\"L\") -> (Tensor eigenvalues, Tensor eigenvectors)", eigh),
        typed("aten::linalg_eigvalsh(Tensor self, str UPLO=\"L\") -> Tensor", eigvalsh),
        typed("aten::linalg_eig(Tensor self) -> (Tensor eigenvalues, Tensor eigenvectors)", eig),
        typed("aten::linalg_eigvals(Tensor self) -> Tensor", eigvals),
        out_from_functional("aten::linalg_eigvals.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", eigvals),
        typed("aten::_linalg_eigvals(Tensor self) -> Tensor", eigvals),
        typed("aten::linalg_ldl_factor(Tensor self, *, bool hermitian=False) -> (Tensor LD, Tensor pivots)", ldl_factor),
        typed("aten::linalg_ldl_factor_ex(Tensor self, *, bool hermitian=False, bool check_errors=False) -> (Tensor LD, Tensor pivots, Tensor info)", ldl_factor_ex),
        typed("aten::linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B, *, bool hermitian=False) -> Tensor", ldl_solve),
        out_from_functional("aten::linalg_ldl_solve.out(Tensor LD, Tensor pivots, Tensor B, *, bool hermitian=False, Tensor(a!) out) -> Tensor(a!)", ldl_solve),
        typed("aten::ormqr(Tensor self, Tensor input2, Tensor input3, bool left=True, bool transpose=False) -> Tensor", ormqr),
        out_from_functional("aten::ormqr.out(Tensor self, Tensor input2, Tensor input3, bool left=True, bool transpose=False, *, Tensor(a!) out) -> Tensor(a!)", ormqr),
        typed("aten::linalg_polar(Tensor A) -> (Tensor U, Tensor H)", polar),
        typed("aten::linalg_matrix_sqrth(Tensor self) -> Tensor", matrix_sqrth),
        out_from_functional("aten::linalg_matrix_sqrth.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", matrix_sqrth),
        out_from_functional("aten::linalg_matrix_exp.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", matrix_exp),
        out_from_functional("aten::linalg_eigvalsh.out(Tensor self, str UPLO=\"L\", *, Tensor(a!) out) -> Tensor(a!)", eigvalsh),
        typed("aten::linalg_pinv.atol_rtol_float(Tensor self, *, float? atol=None, float? rtol=None, bool hermitian=False) -> Tensor", pinv_atol_rtol),
        typed("aten::linalg_pinv(Tensor self, float rcond, bool hermitian=False) -> Tensor", pinv_rcond),
        typed("aten::pinverse(Tensor self, float rcond=1.0000000000000001e-15) -> Tensor", pinverse),
        typed("aten::linalg_matrix_rank.atol_rtol_float(Tensor self, *, float? atol=None, float? rtol=None, bool hermitian=False) -> Tensor", matrix_rank_atol_rtol),
        typed("aten::linalg_matrix_rank(Tensor self, float tol, bool hermitian=False) -> Tensor", matrix_rank_tol),
        typed("aten::linalg_lstsq(Tensor self, Tensor b, float? rcond=None, *, str? driver=None) -> (Tensor solution, Tensor residuals, Tensor rank, Tensor singular_values)", lstsq),
        typed("aten::linalg_matrix_exp(Tensor self) -> Tensor", matrix_exp),
        typed("aten::matrix_exp(Tensor self) -> Tensor", matrix_exp),
        typed("aten::linalg_matrix_power(Tensor self, int n) -> Tensor", matrix_power),
        out_from_functional("aten::linalg_matrix_power.out(Tensor self, int n, *, Tensor(a!) out) -> Tensor(a!)", matrix_power),
        typed("aten::matrix_power(Tensor self, int n) -> Tensor", matrix_power),
        out_from_functional("aten::matrix_power.out(Tensor self, int n, *, Tensor(a!) out) -> Tensor(a!)", matrix_power),
        typed("aten::linalg_cross(Tensor self, Tensor other, *, int dim=-1) -> Tensor", linalg_cross),
        out_from_functional("aten::linalg_cross.out(Tensor self, Tensor other, *, int dim=-1, Tensor(a!) out) -> Tensor(a!)", linalg_cross),
        typed("aten::cross(Tensor self, Tensor other, int? dim=None) -> Tensor", cross),
        out_from_functional("aten::cross.out(Tensor self, Tensor other, int? dim=None, *, Tensor(a!) out) -> Tensor(a!)", cross),
        typed("aten::linalg_vecdot(Tensor x, Tensor y, *, int dim=-1) -> Tensor", vecdot),
        out_from_functional("aten::linalg_vecdot.out(Tensor x, Tensor y, *, int dim=-1, Tensor(a!) out) -> Tensor(a!)", vecdot),
        typed("aten::linalg_multi_dot(Tensor[] tensors) -> Tensor", multi_dot),
        out_from_functional("aten::linalg_multi_dot.out(Tensor[] tensors, *, Tensor(a!) out) -> Tensor(a!)", multi_dot),
        typed("aten::chain_matmul(Tensor[] matrices) -> Tensor", chain_matmul),
        out_from_functional("aten::chain_matmul.out(Tensor[] matrices, *, Tensor(a!) out) -> Tensor(a!)", chain_matmul),
        typed("aten::vdot(Tensor self, Tensor other) -> Tensor", vdot),
        out_from_functional("aten::vdot.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", vdot),
        typed("aten::ger(Tensor self, Tensor vec2) -> Tensor", ger),
        out_from_functional("aten::ger.out(Tensor self, Tensor vec2, *, Tensor(a!) out) -> Tensor(a!)", ger),
        typed("aten::linalg_matrix_norm(Tensor self, Scalar ord, int[] dim=[-2, -1], bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", matrix_norm),
        out_from_functional("aten::linalg_matrix_norm.out(Tensor self, Scalar ord, int[] dim=[-2, -1], bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)", matrix_norm),
        typed("aten::linalg_matrix_norm.str_ord(Tensor self, str ord=\"fro\", int[] dim=[-2, -1], bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", matrix_norm_str),
        out_from_functional("aten::linalg_matrix_norm.str_ord_out(Tensor self, str ord=\"fro\", int[] dim=[-2, -1], bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)", matrix_norm_str),
        typed("aten::linalg_norm(Tensor self, Scalar? ord=None, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", norm),
        out_from_functional("aten::linalg_norm.out(Tensor self, Scalar? ord=None, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)", norm),
        typed("aten::linalg_norm.ord_str(Tensor self, str ord, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", norm_str),
        out_from_functional("aten::linalg_norm.ord_str_out(Tensor self, str ord, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)", norm_str),
        typed("aten::frobenius_norm.dim(Tensor self, int[1] dim, bool keepdim=False) -> Tensor", frobenius_norm),
        out_from_functional("aten::frobenius_norm.out(Tensor self, int[1] dim, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)", frobenius_norm),
        typed("aten::nuclear_norm(Tensor self, bool keepdim=False) -> Tensor", nuclear_norm),
        out_from_functional("aten::nuclear_norm.out(Tensor self, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)", nuclear_norm),
        typed("aten::nuclear_norm.dim(Tensor self, int[2] dim, bool keepdim=False) -> Tensor", nuclear_norm_dim),
        out_from_functional("aten::nuclear_norm.dim_out(Tensor self, int[2] dim, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)", nuclear_norm_dim),
        typed("aten::linalg_cond(Tensor self, Scalar? p=None) -> Tensor", cond),
        out_from_functional("aten::linalg_cond.out(Tensor self, Scalar? p=None, *, Tensor(a!) out) -> Tensor(a!)", cond),
        typed("aten::linalg_cond.p_str(Tensor self, str p) -> Tensor", cond_str),
        out_from_functional("aten::linalg_cond.p_str_out(Tensor self, str p, *, Tensor(a!) out) -> Tensor(a!)", cond_str),
        typed("aten::linalg_tensorinv(Tensor self, int ind=2) -> Tensor", tensorinv),
        out_from_functional("aten::linalg_tensorinv.out(Tensor self, int ind=2, *, Tensor(a!) out) -> Tensor(a!)", tensorinv),
        typed("aten::linalg_tensorsolve(Tensor self, Tensor other, int[]? dims=None) -> Tensor", tensorsolve),
        out_from_functional("aten::linalg_tensorsolve.out(Tensor self, Tensor other, int[]? dims=None, *, Tensor(a!) out) -> Tensor(a!)", tensorsolve),
    ]
}

/// `_linalg_svd` (what `linalg.svd` decomposes to): without `compute_uv`, U and Vh are empty.
fn linalg_svd_private(
    a: Input,
    full_matrices: bool,
    compute_uv: bool,
    _driver: Option<String>,
) -> Result<(Tensor, Tensor, Tensor)> {
    if compute_uv {
        return Ok(la::svd(&a, full_matrices)?);
    }
    let s = la::svdvals(&a)?;
    let empty = Tensor::zeros(&[0], a.dtype())?;
    Ok((empty.clone(), s, empty))
}
