//! Norms: `torch.linalg.vector_norm`, `matrix_norm` (numeric and string orders) and the
//! dispatching `torch.linalg.norm`, accumulated in f64.

use super::batch::{check_floating, tensor_from_f64};
use super::svd::singular_values_of;
use crate::dtype::DType;
use crate::error::{Result, TensorError};
use crate::shape::wrap_dim;
use crate::tensor::Tensor;

/// `input` with `dims` moved last and made contiguous, as f64 groups of `group` values, and
/// the sizes of the result (`keepdim` keeps the reduced dims as 1).
fn grouped(input: &Tensor, dims: &[usize], keepdim: bool) -> Result<(Vec<f64>, usize, Vec<usize>)> {
    let rank = input.dim();
    let kept: Vec<usize> = (0..rank).filter(|d| !dims.contains(d)).collect();
    let order: Vec<i64> = kept.iter().chain(dims.iter()).map(|&d| d as i64).collect();
    let moved = input.permute(&order)?;
    let group: usize = dims.iter().map(|&d| input.sizes()[d]).product();
    let sizes: Vec<usize> = if keepdim {
        (0..rank)
            .map(|d| {
                if dims.contains(&d) {
                    1
                } else {
                    input.sizes()[d]
                }
            })
            .collect()
    } else {
        kept.iter().map(|&d| input.sizes()[d]).collect()
    };
    Ok((moved.to_f64_vec(), group, sizes))
}

fn wrap_dims(op: &str, dims: &[i64], rank: usize) -> Result<Vec<usize>> {
    let mut wrapped = Vec::with_capacity(dims.len());
    for &dim in dims {
        let d = wrap_dim(dim, rank)?;
        if wrapped.contains(&d) {
            return Err(TensorError::InvalidArgument(format!(
                "{op}: dim {d} appears multiple times in the list of dims"
            )));
        }
        wrapped.push(d);
    }
    Ok(wrapped)
}

/// The result dtype: `dtype` when given (it must be floating), else the input's.
fn result_dtype(op: &str, input: &Tensor, dtype: Option<DType>) -> Result<DType> {
    match dtype {
        None => Ok(input.dtype()),
        Some(d @ (DType::Float32 | DType::Float64)) => Ok(d),
        Some(other) => Err(TensorError::InvalidArgument(format!(
            "{op}: dtype should be floating point or complex, but got {}",
            other.scalar_type_name()
        ))),
    }
}

fn p_norm(values: &[f64], ord: f64) -> f64 {
    if ord == f64::INFINITY {
        values.iter().fold(0.0f64, |m, v| {
            if v.abs() > m || v.is_nan() {
                v.abs()
            } else {
                m
            }
        })
    } else if ord == f64::NEG_INFINITY {
        values.iter().fold(f64::INFINITY, |m, v| {
            if v.abs() < m || v.is_nan() {
                v.abs()
            } else {
                m
            }
        })
    } else if ord == 0.0 {
        values.iter().filter(|v| **v != 0.0).count() as f64
    } else if ord == 1.0 {
        values.iter().map(|v| v.abs()).sum()
    } else if ord == 2.0 {
        values.iter().map(|v| v * v).sum::<f64>().sqrt()
    } else {
        values
            .iter()
            .map(|v| v.abs().powf(ord))
            .sum::<f64>()
            .powf(1.0 / ord)
    }
}

/// `torch.linalg.vector_norm(x, ord, dim, keepdim, dtype)`; `dim` None (or empty) reduces
/// every dimension.
pub fn vector_norm(
    input: &Tensor,
    ord: f64,
    dim: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    let op = "linalg.vector_norm";
    check_floating(op, input)?;
    let out_dtype = result_dtype(op, input, dtype)?;
    let dims: Vec<usize> = match dim {
        Some(list) if !list.is_empty() => wrap_dims(op, list, input.dim())?,
        _ => (0..input.dim()).collect(),
    };
    if ord < 0.0 || ord == f64::INFINITY {
        if let Some(&empty) = dims.iter().find(|&&d| input.sizes()[d] == 0) {
            return Err(TensorError::InvalidArgument(format!(
                "{op}: Expected a non-empty tensor at dim {empty} to compute the norm of order {ord}"
            )));
        }
    }
    let (values, group, sizes) = grouped(input, &dims, keepdim)?;
    let results: Vec<f64> = if group == 0 {
        vec![0.0; sizes.iter().product()]
    } else {
        values
            .chunks(group)
            .map(|chunk| p_norm(chunk, ord))
            .collect()
    };
    tensor_from_f64(results, &sizes, out_dtype)
}

/// `torch.linalg.matrix_norm(A, ord, dim, keepdim, dtype)` for a numeric order: 1, -1 (column
/// sums), inf, -inf (row sums), 2, -2 (largest / smallest singular value).
pub fn matrix_norm(
    input: &Tensor,
    ord: f64,
    dim: &[i64],
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    let op = "linalg.matrix_norm";
    check_floating(op, input)?;
    let out_dtype = result_dtype(op, input, dtype)?;
    let dims = matrix_dims(op, input, dim)?;
    if ![1.0, -1.0, 2.0, -2.0, f64::INFINITY, f64::NEG_INFINITY].contains(&ord) {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: Order {ord} not supported."
        )));
    }
    let (values, _, sizes) = grouped(input, &dims, keepdim)?;
    let (rows, cols) = (input.sizes()[dims[0]], input.sizes()[dims[1]]);
    let size = rows * cols;
    let count: usize = sizes.iter().product();
    let mut results = Vec::with_capacity(count);
    for index in 0..count {
        let m = &values[index * size..(index + 1) * size];
        let value = if ord.abs() == 2.0 {
            let singular = singular_values_of(m, rows, cols);
            if ord > 0.0 {
                singular.first().copied().unwrap_or(0.0)
            } else {
                singular.last().copied().unwrap_or(0.0)
            }
        } else {
            // |ord| 1: sums down each column; |ord| inf: sums along each row.
            let sums: Vec<f64> = if ord.abs() == 1.0 {
                (0..cols)
                    .map(|c| (0..rows).map(|r| m[r * cols + c].abs()).sum())
                    .collect()
            } else {
                (0..rows)
                    .map(|r| (0..cols).map(|c| m[r * cols + c].abs()).sum())
                    .collect()
            };
            if ord > 0.0 {
                sums.iter().copied().fold(f64::NEG_INFINITY, f64::max)
            } else {
                sums.iter().copied().fold(f64::INFINITY, f64::min)
            }
        };
        results.push(value);
    }
    tensor_from_f64(results, &sizes, out_dtype)
}

fn matrix_dims(op: &str, input: &Tensor, dim: &[i64]) -> Result<Vec<usize>> {
    if input.dim() < 2 {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: The input tensor A must have at least 2 dimensions."
        )));
    }
    if dim.len() != 2 {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: dim must be a 2-tuple. Got {}",
            dim.len()
        )));
    }
    wrap_dims(op, dim, input.dim())
}

/// `torch.linalg.matrix_norm(A, ord='fro' | 'nuc', ...)`.
pub fn matrix_norm_str(
    input: &Tensor,
    ord: &str,
    dim: &[i64],
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    let op = "linalg.matrix_norm";
    check_floating(op, input)?;
    let dims = matrix_dims(op, input, dim)?;
    match ord {
        "fro" => vector_norm(input, 2.0, Some(dim), keepdim, dtype),
        "nuc" => {
            let out_dtype = result_dtype(op, input, dtype)?;
            let (values, _, sizes) = grouped(input, &dims, keepdim)?;
            let (rows, cols) = (input.sizes()[dims[0]], input.sizes()[dims[1]]);
            let size = rows * cols;
            let results: Vec<f64> = (0..sizes.iter().product::<usize>())
                .map(|i| {
                    singular_values_of(&values[i * size..(i + 1) * size], rows, cols)
                        .iter()
                        .sum()
                })
                .collect();
            tensor_from_f64(results, &sizes, out_dtype)
        }
        other => Err(TensorError::InvalidArgument(format!(
            "{op}: Order {other} not supported."
        ))),
    }
}
