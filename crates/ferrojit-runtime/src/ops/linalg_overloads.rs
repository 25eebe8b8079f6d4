//! Linear-algebra overloads PyTorch builds its public functions from: the structured
//! internals that also return their LU factorisation (`_linalg_det`, `_linalg_slogdet`,
//! `_linalg_solve_ex`) or skip the eigenvectors (`_linalg_eigh`), `linalg_matrix_rank` with
//! tensor tolerances, `linalg_matmul`, `kron`, `vander`, the deprecated `_aminmax` and the
//! `norm` overloads with a dtype, as typed kernels over ferrojit-tensor's `linalg`. Their
//! out= overloads come from these through `derived_variants.rs`.

use std::sync::Arc;

use ferrojit_tensor::linalg as la;
use ferrojit_tensor::{promote_types, DType, Tensor};

use super::binding::{typed, DimList};
use crate::error::{Result, RuntimeError};
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// The LU factorisation ATen's structured determinant kernels return: of `A^T` when `A` is
/// contiguous and real (`det(A^T) = det(A)`, and `lu_factor` then needs no copy), of `A`
/// otherwise. (`_linalg_solve_ex` returns the factorisation of `A` itself.)
fn structured_lu(a: &Tensor) -> Result<(Tensor, Tensor)> {
    if a.dim() >= 2 && a.is_contiguous() && !a.dtype().is_complex() {
        Ok(la::lu_factor(&a.transpose(-2, -1)?, true)?)
    } else {
        Ok(la::lu_factor(a, true)?)
    }
}

fn linalg_det(a: Input) -> Result<(Tensor, Tensor, Tensor)> {
    let det = la::det(&a)?;
    let (lu, pivots) = structured_lu(&a)?;
    Ok((det, lu, pivots))
}

fn linalg_slogdet(a: Input) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    let (sign, logabsdet) = la::slogdet(&a)?;
    let (lu, pivots) = structured_lu(&a)?;
    Ok((sign, logabsdet, lu, pivots))
}

fn linalg_solve_ex(
    a: Input,
    b: Input,
    left: bool,
    check_errors: bool,
) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    let (result, info) = la::solve_ex(&a, &b, left, check_errors)?;
    let (lu, pivots) = la::lu_factor(&a, true)?;
    Ok((result, lu, pivots, info))
}

/// `_linalg_eigh(A, UPLO, compute_v)`: without `compute_v`, the eigenvectors are an empty
/// tensor.
fn linalg_eigh(a: Input, uplo: String, compute_v: bool) -> Result<(Tensor, Tensor)> {
    let (values, vectors) = la::eigh(&a, &uplo)?;
    if compute_v {
        Ok((values, vectors))
    } else {
        Ok((values, Tensor::zeros(&[0], vectors.dtype())?))
    }
}

/// A tolerance given as a tensor: ferrojit's rank kernel takes one value for the whole
/// batch, so a tolerance tensor must hold a single element.
fn single_tolerance(name: &str, tolerance: &Tensor) -> Result<f64> {
    match tolerance.to_f64_vec().as_slice() {
        [value] => Ok(*value),
        values => Err(RuntimeError::Other(format!(
            "linalg.matrix_rank: ferrojit takes a single {name} value, got a tensor of {} \
             elements",
            values.len()
        ))),
    }
}

fn matrix_rank_tol_tensor(input: Input, tol: Input, _hermitian: bool) -> Result<Tensor> {
    let tol = single_tolerance("tol", &tol)?;
    Ok(la::matrix_rank(&input, Some(tol), Some(0.0))?)
}

fn matrix_rank_atol_rtol_tensor(
    input: Input,
    atol: Option<Input>,
    rtol: Option<Input>,
    _hermitian: bool,
) -> Result<Tensor> {
    let atol = atol
        .map(|atol| single_tolerance("atol", &atol))
        .transpose()?;
    let rtol = rtol
        .map(|rtol| single_tolerance("rtol", &rtol))
        .transpose()?;
    Ok(la::matrix_rank(&input, atol, rtol)?)
}

fn linalg_matmul(input: Input, other: Input) -> Result<Tensor> {
    Ok(input.matmul(&other)?)
}

/// `torch.kron`: both operands padded to one rank, `self` spread over the even dims and
/// `other` over the odd ones of a doubled shape, multiplied (with type promotion) and folded
/// back, as ATen's `KronImpl`.
fn kron(input: Input, other: Input) -> Result<Tensor> {
    let rank = input.dim().max(other.dim());
    let pad_input = rank - input.dim();
    let pad_other = rank - other.dim();
    let mut input_shape = Vec::with_capacity(2 * rank);
    let mut other_shape = Vec::with_capacity(2 * rank);
    let mut result_shape = Vec::with_capacity(rank);
    for index in 0..rank {
        let input_size = if index >= pad_input {
            input.sizes()[index - pad_input]
        } else {
            1
        };
        let other_size = if index >= pad_other {
            other.sizes()[index - pad_other]
        } else {
            1
        };
        input_shape.extend([input_size as i64, 1]);
        other_shape.extend([1, other_size as i64]);
        result_shape.push((input_size * other_size) as i64);
    }
    let product = input
        .reshape(&input_shape)?
        .mul(&other.reshape(&other_shape)?)?;
    Ok(product.reshape(&result_shape)?)
}

/// `torch.vander(x, N, increasing)`: columns `x^0, x^1, ...` (a running product, in double
/// for the floating dtypes as ATen's `cumprod` accumulates, in int64 for the integer ones,
/// which promote to int64), reversed unless `increasing`.
fn vander(x: Input, n: Option<i64>, increasing: bool) -> Result<Tensor> {
    if x.dim() != 1 {
        return Err(RuntimeError::Other(
            "x must be a one-dimensional tensor.".to_string(),
        ));
    }
    let rows = x.sizes()[0];
    let columns = match n {
        Some(n) if n < 0 => return Err(RuntimeError::Other("N must be non-negative.".to_string())),
        Some(n) => n as usize,
        None => rows,
    };
    if x.dtype().is_complex() {
        return Err(RuntimeError::Other(
            "vander: ferrojit does not take complex inputs".to_string(),
        ));
    }
    let dtype = promote_types(x.dtype(), DType::Int64);
    let integral = !dtype.is_floating_point();
    let values = x.to_f64_vec();
    let mut powers = Vec::with_capacity(rows * columns);
    for &value in &values {
        let mut row = Vec::with_capacity(columns);
        if integral {
            let mut running: i64 = 1;
            for column in 0..columns {
                if column > 0 {
                    running = running.wrapping_mul(value as i64);
                }
                row.push(running as f64);
            }
        } else {
            let mut running = 1.0;
            for column in 0..columns {
                if column > 0 {
                    running *= value;
                }
                row.push(running);
            }
        }
        if !increasing {
            row.reverse();
        }
        powers.extend(row);
    }
    Ok(Tensor::from_vec(powers, &[rows, columns])?.to_dtype(dtype))
}

fn aminmax_all(input: Input) -> Result<(Tensor, Tensor)> {
    Ok(input.aminmax(None, false)?)
}

fn aminmax_dim(input: Input, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    Ok(input.aminmax(Some(dim), keepdim)?)
}

fn norm_dtype(input: Input, p: Option<f64>, dtype: DType) -> Result<Tensor> {
    Ok(input.vector_norm(p.unwrap_or(2.0), &[], false, Some(dtype))?)
}

fn norm_dim_dtype(
    input: Input,
    p: Option<f64>,
    dims: DimList,
    keepdim: bool,
    dtype: DType,
) -> Result<Tensor> {
    Ok(input.vector_norm(p.unwrap_or(2.0), &dims.0, keepdim, Some(dtype))?)
}

/// Every operator of this file, in declaration order (within one name, PyTorch's).
#[rustfmt::skip]
pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        typed("aten::_linalg_det(Tensor A) -> (Tensor result, Tensor LU, Tensor pivots)", linalg_det),
        typed("aten::_linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet, Tensor LU, Tensor pivots)", linalg_slogdet),
        typed("aten::_linalg_solve_ex(Tensor A, Tensor B, *, bool left=True, bool check_errors=False) -> (Tensor result, Tensor LU, Tensor pivots, Tensor info)", linalg_solve_ex),
        typed("aten::_linalg_eigh(Tensor A, str UPLO=\"L\", bool compute_v=True) -> (Tensor eigenvalues, Tensor eigenvectors)", linalg_eigh),
        typed("aten::linalg_matrix_rank.tol_tensor(Tensor input, Tensor tol, bool hermitian=False) -> Tensor", matrix_rank_tol_tensor),
        typed("aten::linalg_matrix_rank.atol_rtol_tensor(Tensor input, *, Tensor? atol=None, Tensor? rtol=None, bool hermitian=False) -> Tensor", matrix_rank_atol_rtol_tensor),
        typed("aten::linalg_matmul(Tensor self, Tensor other) -> Tensor", linalg_matmul),
        typed("aten::kron(Tensor self, Tensor other) -> Tensor", kron),
        typed("aten::vander(Tensor x, int? N=None, bool increasing=False) -> Tensor", vander),
        typed("aten::_aminmax(Tensor self) -> (Tensor, Tensor)", aminmax_all),
        typed("aten::_aminmax.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor, Tensor)", aminmax_dim),
        typed("aten::norm.ScalarOpt_dtype(Tensor self, Scalar? p, *, ScalarType dtype) -> Tensor", norm_dtype),
        typed("aten::norm.ScalarOpt_dim_dtype(Tensor self, Scalar? p, int[1] dim, bool keepdim, *, ScalarType dtype) -> Tensor", norm_dim_dtype),
    ]
}
