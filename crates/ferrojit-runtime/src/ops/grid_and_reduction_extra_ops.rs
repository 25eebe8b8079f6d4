//! `affine_grid_generator` (what `F.affine_grid` calls: the sampling grid of an affine
//! transform, for `grid_sample`), `_unique` (the sorted unique values and the inverse
//! indices) and `linalg__powsum` (the sum of |x|^ord that the vector norms reduce with).

use std::sync::Arc;

use ferrojit_tensor::{DType, Scalar, Tensor, TensorError};

use super::binding::typed;
use crate::error::{Result, RuntimeError};
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// `steps` evenly spaced coordinates over [-1, 1] (the pixel corners with `align_corners`);
/// without it the range shrinks by (steps - 1) / steps, onto the pixel centres. A single
/// step is the centre, 0.
fn normalized_coordinates(steps: usize, align_corners: bool) -> Vec<f64> {
    if steps <= 1 {
        return vec![0.0; steps];
    }
    let shrink = if align_corners {
        1.0
    } else {
        (steps - 1) as f64 / steps as f64
    };
    (0..steps)
        .map(|i| (-1.0 + 2.0 * i as f64 / (steps - 1) as f64) * shrink)
        .collect()
}

/// `affine_grid_generator`: for `size` [N, C, H, W] (or [N, C, D, H, W]) and `theta`
/// [N, 2, 3] ([N, 3, 4]), each output point is theta applied to its normalized (x, y, 1)
/// ((x, y, z, 1)), x running along W; the grid is [N, H, W, 2] ([N, D, H, W, 3]).
fn affine_grid_generator(theta: Input, size: Vec<i64>, align_corners: bool) -> Result<Tensor> {
    if size.len() != 4 && size.len() != 5 {
        return Err(RuntimeError::Other(
            "AffineGridGenerator needs 4d (spatial) or 5d (volumetric) inputs.".to_string(),
        ));
    }
    let spatial = size.len() - 2;
    let sizes: Vec<usize> = size
        .iter()
        .map(|&s| usize::try_from(s))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| TensorError::InvalidArgument(format!("negative size in {size:?}")))?;
    let batch = sizes[0];
    // theta must be [N, spatial, spatial + 1], as the batched product ATen uses requires.
    let expected = [batch, spatial, spatial + 1];
    if theta.sizes() != expected {
        let got = theta.sizes();
        if theta.dim() == 3 && got[0] != batch {
            return Err(RuntimeError::Other(format!(
                "Expected size for first two dimensions of batch2 tensor to be: [{batch}, {}] but got: [{}, {}].",
                spatial + 1,
                got[0],
                got[2]
            )));
        }
        return Err(TensorError::InvalidArgument(format!(
            "affine_grid_generator: expected theta of size {expected:?}, but got {got:?}"
        ))
        .into());
    }
    if !theta.dtype().is_floating_point() {
        return Err(TensorError::NotImplementedForDType {
            op: "affine_grid_generator",
            dtype: theta.dtype(),
        }
        .into());
    }
    // Coordinates per output dim, outermost (depth) first; x varies fastest.
    let axes: Vec<Vec<f64>> = sizes[2..]
        .iter()
        .map(|&steps| normalized_coordinates(steps, align_corners))
        .collect();
    let points: usize = sizes[2..].iter().product();
    let theta_values = theta.contiguous().to_f64_vec();
    let columns = spatial + 1;
    let mut grid: Vec<f64> = Vec::with_capacity(batch * points * spatial);
    for n in 0..batch {
        let matrix = &theta_values[n * spatial * columns..(n + 1) * spatial * columns];
        for point in 0..points {
            // The point's (x, y[, z], 1): x from the last dim, y the one before, ...
            let mut coordinates = vec![1.0; columns];
            let mut rest = point;
            for (axis, values) in axes.iter().enumerate().rev() {
                let steps = values.len();
                coordinates[spatial - 1 - axis] = values[rest % steps];
                rest /= steps;
            }
            for row in matrix.chunks(columns) {
                grid.push(row.iter().zip(&coordinates).map(|(a, b)| a * b).sum());
            }
        }
    }
    let mut out_sizes = vec![batch];
    out_sizes.extend_from_slice(&sizes[2..]);
    out_sizes.push(spatial);
    Ok(Tensor::from_vec(grid, &out_sizes)?.to_dtype(theta.dtype()))
}

/// `_unique`: the sorted distinct values and, with `return_inverse`, each element's index
/// among them (shaped like the input; empty otherwise). ferrojit sorts even when `sorted`
/// is false, which PyTorch allows (the order is then unspecified).
fn unique(input: Input, _sorted: bool, return_inverse: bool) -> Result<(Tensor, Tensor)> {
    let (values, inverse, _counts) = input.unique()?;
    let inverse = if return_inverse {
        inverse
    } else {
        Tensor::zeros(&[0], DType::Int64)?
    };
    Ok((values, inverse))
}

/// `linalg__powsum`: the sum of |x|^ord over `dim` (every dim when absent or empty), in
/// `dtype` when given; |0|^0 counts 1, a negative or infinite order follows `pow`.
fn powsum(
    input: Input,
    ord: Scalar,
    dim: Option<Vec<i64>>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    if !input.dtype().is_floating_point() && !input.dtype().is_complex() {
        return Err(RuntimeError::Other(format!(
            "\"powsum_cpu\" not implemented for '{}'",
            input.dtype().scalar_type_name()
        )));
    }
    let input = match dtype {
        Some(dtype) if !input.dtype().is_complex() => input.to_dtype(dtype),
        _ => Tensor::clone(&input),
    };
    // |z| of a complex tensor, as its real type (ferrojit's `abs` keeps the complex type
    // with a zero imaginary part).
    let magnitudes = match input.dtype() {
        DType::ComplexFloat => input.abs()?.to_dtype(DType::Float32),
        DType::ComplexDouble => input.abs()?.to_dtype(DType::Float64),
        _ => input.abs()?,
    };
    let powers = magnitudes.pow_scalar(&ord)?;
    let dims = dim.unwrap_or_default();
    if dims.is_empty() {
        let all: Vec<i64> = (0..powers.dim() as i64).collect();
        return Ok(powers.sum_dim(&all, keepdim, None)?);
    }
    Ok(powers.sum_dim(&dims, keepdim, None)?)
}

/// Every operator of this file, in declaration order.
pub fn declarations() -> Vec<OperatorDeclaration> {
    #[rustfmt::skip]
    let declarations = vec![
        typed("aten::affine_grid_generator(Tensor theta, SymInt[] size, bool align_corners) -> Tensor", affine_grid_generator),
        typed("aten::_unique(Tensor self, bool sorted=True, bool return_inverse=False) -> (Tensor, Tensor)", unique),
        typed("aten::linalg__powsum(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", powsum),
    ];
    declarations
}
