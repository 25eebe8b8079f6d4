//! Pairwise p-norm distances: `cdist` (between the rows of two batched matrices, with
//! PyTorch's choice of the matrix-product form for Euclidean distances) and `pdist` (between
//! the rows of one matrix, upper triangle). Sums run in f64; each result is rounded once.

use super::{from_f64, invalid};
use crate::error::{format_shape, Result};
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;

/// The p-norm of the differences of two rows: p = 0 counts the differing entries, p = inf
/// takes the largest difference, and p = 1 and 2 are computed without `powf`, as PyTorch's
/// kernels special-case them.
fn row_distance(a: &[f64], b: &[f64], p: f64) -> f64 {
    let differences = a.iter().zip(b).map(|(x, y)| (x - y).abs());
    if p == 0.0 {
        differences.filter(|d| *d != 0.0).count() as f64
    } else if p == 1.0 {
        differences.sum()
    } else if p == 2.0 {
        differences.map(|d| d * d).sum::<f64>().sqrt()
    } else if p.is_infinite() {
        differences.fold(0.0, f64::max)
    } else {
        differences.map(|d| d.powf(p)).sum::<f64>().powf(1.0 / p)
    }
}

/// Euclidean distance as `_euclidean_dist` computes it: `|a|^2 + |b|^2 - 2 a.b`, clamped at
/// zero before the square root (so nearly equal rows may differ from the direct form).
fn euclidean_by_products(a: &[f64], b: &[f64]) -> f64 {
    let norm_a: f64 = a.iter().map(|v| v * v).sum();
    let norm_b: f64 = b.iter().map(|v| v * v).sum();
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    (-2.0 * dot + norm_a + norm_b).max(0.0).sqrt()
}

fn check_float(tensor: &Tensor, op: &str, name: &str) -> Result<()> {
    if tensor.dtype().is_floating_point() {
        Ok(())
    } else {
        Err(invalid(format!(
            "{op} only supports floating-point dtypes, {name} got: {}",
            tensor.dtype().scalar_type_name()
        )))
    }
}

/// `cdist(x1, x2, p, compute_mode)` (and `_cdist_forward`): `x1 [*, P, M]`, `x2 [*, R, M]`
/// give `[*, P, R]` over the broadcast batch dims. `compute_mode` 0 (or None) uses the
/// matrix-product form for p = 2 when either side has more than 25 rows, 1 always, 2 never.
pub fn cdist(x1: &Tensor, x2: &Tensor, p: f64, compute_mode: Option<i64>) -> Result<Tensor> {
    for (tensor, name) in [(x1, "X1"), (x2, "X2")] {
        if tensor.dim() < 2 {
            return Err(invalid(format!(
                "cdist only supports at least 2D tensors, {name} got: {}D",
                tensor.dim()
            )));
        }
    }
    let columns = x1.sizes()[x1.dim() - 1];
    if columns != x2.sizes()[x2.dim() - 1] {
        return Err(invalid(format!(
            "X1 and X2 must have the same number of columns. X1: {columns} X2: {}",
            x2.sizes()[x2.dim() - 1]
        )));
    }
    check_float(x1, "cdist", "X1")?;
    check_float(x2, "cdist", "X2")?;
    if x1.dtype() != x2.dtype() {
        return Err(invalid(format!(
            "cdist: X1 and X2 must have the same dtype, but got {} and {}",
            x1.dtype().scalar_type_name(),
            x2.dtype().scalar_type_name()
        )));
    }
    if p.is_nan() || p < 0.0 {
        return Err(invalid("cdist only supports non-negative p values"));
    }
    let mode = compute_mode.unwrap_or(0);
    if !(0..=2).contains(&mode) {
        return Err(invalid(format!("possible modes: 0, 1, 2, but was: {mode}")));
    }
    let rows1 = x1.sizes()[x1.dim() - 2];
    let rows2 = x2.sizes()[x2.dim() - 2];
    let batch = broadcast_shapes(&x1.sizes()[..x1.dim() - 2], &x2.sizes()[..x2.dim() - 2])?;
    let mut expanded1 = batch.clone();
    expanded1.extend([rows1, columns]);
    let mut expanded2 = batch.clone();
    expanded2.extend([rows2, columns]);
    let as_i64 = |sizes: &[usize]| sizes.iter().map(|&s| s as i64).collect::<Vec<i64>>();
    let a = x1.expand(&as_i64(&expanded1))?.to_f64_vec();
    let b = x2.expand(&as_i64(&expanded2))?.to_f64_vec();
    let batches: usize = batch.iter().product();
    let by_products = p == 2.0 && (mode == 1 || (mode == 0 && (rows1 > 25 || rows2 > 25)));
    let mut out = Vec::with_capacity(batches * rows1 * rows2);
    for n in 0..batches {
        for i in 0..rows1 {
            let row1 = &a[(n * rows1 + i) * columns..][..columns];
            for j in 0..rows2 {
                let row2 = &b[(n * rows2 + j) * columns..][..columns];
                out.push(if columns == 0 {
                    0.0
                } else if by_products {
                    euclidean_by_products(row1, row2)
                } else {
                    row_distance(row1, row2, p)
                });
            }
        }
    }
    let mut sizes = batch;
    sizes.extend([rows1, rows2]);
    Ok(from_f64(out, &sizes, x1.dtype()))
}

/// `pdist(input, p)` (and `_pdist_forward`, which also requires a contiguous input): the
/// distances between rows `i < j` of an `[N, M]` matrix, in row-major order of the pairs.
pub fn pdist(input: &Tensor, p: f64, require_contiguous: bool) -> Result<Tensor> {
    if require_contiguous && !input.is_contiguous() {
        return Err(invalid("_pdist_forward requires contiguous input"));
    }
    if input.dim() != 2 {
        return Err(invalid(format!(
            "pdist only supports 2D tensors, got: {}D",
            input.dim()
        )));
    }
    if !input.dtype().is_floating_point() {
        return Err(invalid(format!(
            "pdist only supports floating-point dtypes, got: {}",
            input.dtype().scalar_type_name()
        )));
    }
    if p.is_nan() || p < 0.0 {
        return Err(invalid("pdist only supports non-negative p values"));
    }
    let (rows, columns) = (input.sizes()[0], input.sizes()[1]);
    let x = input.to_f64_vec();
    let pairs = rows * rows.saturating_sub(1) / 2;
    let mut out = Vec::with_capacity(pairs);
    for i in 0..rows {
        for j in i + 1..rows {
            out.push(row_distance(
                &x[i * columns..][..columns],
                &x[j * columns..][..columns],
                p,
            ));
        }
    }
    debug_assert_eq!(out.len(), pairs, "{}", format_shape(input.sizes()));
    Ok(from_f64(out, &[pairs], input.dtype()))
}

/// `_euclidean_dist(x1, x2)`: ATen's matrix-product form of the Euclidean distances between
/// the rows of `x1 [*, P, M]` and `x2 [*, R, M]`: `[-2 x1, |x1|^2, 1] @ [x2, 1, |x2|^2]^T`,
/// clamped below at 1e-30 before the square root, composed of the same operators.
pub fn euclidean_dist(x1: &Tensor, x2: &Tensor) -> Result<Tensor> {
    use crate::dtype::Scalar;
    let two = Scalar::Int(2);
    let norm1 = x1.pow_scalar(&two)?.sum_dim(&[-1], true, None)?;
    let pad1 = Tensor::ones(norm1.sizes(), norm1.dtype())?;
    let norm2 = x2.pow_scalar(&two)?.sum_dim(&[-1], true, None)?;
    let pad2 = Tensor::ones(norm2.sizes(), norm2.dtype())?;
    let scaled1 = x1.mul(&Tensor::wrapped_scalar(Scalar::Int(-2)))?;
    let left = crate::ops::join::cat(&[scaled1, norm1, pad1], -1)?;
    let right = crate::ops::join::cat(&[x2.clone(), pad2, norm2], -1)?;
    let product = left.matmul(&right.transpose(-2, -1)?)?;
    product
        .clamp(Some(&Scalar::Float(1e-30)), None)?
        .unary(crate::ops::pointwise::UnaryOp::Sqrt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_of_a_right_triangle() {
        let x = Tensor::from_vec(vec![0.0f64, 0.0, 3.0, 0.0, 3.0, 4.0], &[3, 2]).unwrap();
        assert_eq!(
            pdist(&x, 2.0, true).unwrap().to_f64_vec(),
            vec![3.0, 5.0, 4.0]
        );
        assert_eq!(
            pdist(&x, 1.0, true).unwrap().to_f64_vec(),
            vec![3.0, 7.0, 4.0]
        );
        let d = cdist(&x, &x, f64::INFINITY, None).unwrap();
        assert_eq!(d.sizes(), &[3, 3]);
        assert_eq!(d.to_f64_vec()[2], 4.0);
        let products = cdist(&x, &x, 2.0, Some(1)).unwrap().to_f64_vec();
        assert!((products[2] - 5.0).abs() < 1e-12);
        assert!(cdist(&x, &x, -1.0, None).is_err());
        assert!(pdist(&x.t().unwrap(), 2.0, true).is_err());
    }
}
