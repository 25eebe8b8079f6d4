//! `histogramdd`: the N-dimensional histogram of an `[..., N]` input read as points in N
//! dimensions, with a bin count per dimension (evenly spaced edges between the data's, or
//! `range`'s, extremes) or explicit edges per dimension, optional weights and density.
//! PyTorch's CPU kernel: each coordinate finds its bin in the input's own precision (as
//! `histogram`'s do, see `histogram.rs`), a point outside any dimension's edges (or NaN) is
//! skipped, and the last bin of each dimension includes its right edge.

use super::histogram::{
    bin_position, check_floating, cxx_double, cxx_type_name, round_to, BinSearch,
};
use crate::dtype::DType;
use crate::error::{format_shape, Result, TensorError};
use crate::ops::creation::linspace;
use crate::tensor::Tensor;

fn invalid(message: impl Into<String>) -> TensorError {
    TensorError::InvalidArgument(message.into())
}

/// The input as `M` points of `N` coordinates (row-major values) and `N`.
fn points(input: &Tensor) -> Result<(Vec<f64>, usize)> {
    if input.dim() < 2 {
        return Err(invalid(
            "torch.histogramdd: input tensor should have at least 2 dimensions",
        ));
    }
    check_floating("histogramdd", input.dtype())?;
    Ok((input.to_f64_vec(), input.sizes()[input.dim() - 1]))
}

/// `select_outer_bin_edges`: each dimension's leftmost and rightmost edge, from `range` or
/// the data's extremes (0 and 1 without data), widened by 0.5 on each side when equal.
fn outer_edges(values: &[f64], n: usize, range: Option<&[f64]>) -> Result<Vec<(f64, f64)>> {
    let mut edges = vec![(0.0, 1.0); n];
    if let Some(range) = range {
        if range.len() != 2 * n {
            return Err(invalid(format!(
                "torch.histogramdd: for a {n}-dimensional histogram range should have {} elements, but got {}",
                2 * n,
                range.len()
            )));
        }
        for (dim, edge) in edges.iter_mut().enumerate() {
            *edge = (range[2 * dim], range[2 * dim + 1]);
        }
    } else if !values.is_empty() && n > 0 {
        for (dim, edge) in edges.iter_mut().enumerate() {
            let column = values.iter().skip(dim).step_by(n);
            // aminmax: NaN wins.
            let low = column.clone().fold(f64::INFINITY, |a, &b| {
                if a.is_nan() || b.is_nan() {
                    f64::NAN
                } else {
                    a.min(b)
                }
            });
            let high = column.fold(f64::NEG_INFINITY, |a, &b| {
                if a.is_nan() || b.is_nan() {
                    f64::NAN
                } else {
                    a.max(b)
                }
            });
            *edge = (low, high);
        }
    }
    for (dim, (left, right)) in edges.iter_mut().enumerate() {
        if !left.is_finite() || !right.is_finite() {
            return Err(invalid(format!(
                "torch.histogramdd: dimension {dim}'s range [{}, {}] is not finite",
                cxx_double(*left),
                cxx_double(*right)
            )));
        }
        if *left > *right {
            return Err(invalid(format!(
                "torch.histogramdd: min should not exceed max, but got min {} max {} for dimension {dim}",
                cxx_double(*left),
                cxx_double(*right)
            )));
        }
        if *left == *right {
            *left -= 0.5;
            *right += 0.5;
        }
    }
    Ok(edges)
}

/// `histogramdd_check_inputs`'s weight checks: the weight's values when given.
fn weight_values(input: &Tensor, weight: Option<&Tensor>) -> Result<Option<Vec<f64>>> {
    let Some(weight) = weight else {
        return Ok(None);
    };
    if weight.dtype() != input.dtype() {
        return Err(invalid(format!(
            "torch.histogramdd: if weight tensor is provided, input tensor and weight tensor should have the same dtype, but got input({}), and weight({})",
            cxx_type_name(input.dtype()),
            cxx_type_name(weight.dtype())
        )));
    }
    let expected = &input.sizes()[..input.dim() - 1];
    let sizes: &[usize] = if weight.dim() == 0 {
        &[1]
    } else {
        weight.sizes()
    };
    if sizes != expected {
        return Err(invalid(format!(
            "torch.histogramdd: if weight tensor is provided it should have the same shape as the input tensor excluding its innermost dimension, but got input with shape {} and weight with shape {}",
            format_shape(input.sizes()),
            format_shape(weight.sizes())
        )));
    }
    Ok(Some(weight.to_f64_vec()))
}

/// Counts the points into the bins of `edges` (one increasing list per dimension).
fn count(
    values: &[f64],
    weights: Option<&[f64]>,
    edges: &[Vec<f64>],
    dtype: DType,
    search: BinSearch,
    density: bool,
) -> Tensor {
    let n = edges.len();
    let bins: Vec<usize> = edges.iter().map(|e| e.len() - 1).collect();
    let mut strides = vec![1usize; n];
    for dim in (0..n.saturating_sub(1)).rev() {
        strides[dim] = strides[dim + 1] * bins[dim + 1];
    }
    let mut hist = vec![0.0f64; bins.iter().product()];
    if n > 0 {
        'points: for (point, coordinates) in values.chunks(n).enumerate() {
            let mut index = 0;
            for (dim, &x) in coordinates.iter().enumerate() {
                match bin_position(x, &edges[dim], dtype, search) {
                    Some(position) => index += position * strides[dim],
                    None => continue 'points,
                }
            }
            let weight = weights.map_or(1.0, |w| w[point]);
            hist[index] = round_to(hist[index] + weight, dtype);
        }
    }
    if density {
        // Divided by the total, then by each dimension's bin widths in turn.
        let total = round_to(hist.iter().sum::<f64>(), dtype);
        for h in hist.iter_mut() {
            *h = round_to(*h / total, dtype);
        }
        for dim in 0..n {
            for (flat, h) in hist.iter_mut().enumerate() {
                let b = (flat / strides[dim]) % bins[dim];
                let width = round_to(edges[dim][b + 1] - edges[dim][b], dtype);
                *h = round_to(*h / width, dtype);
            }
        }
    }
    crate::ops::nn::from_f64(hist, &bins, dtype)
}

impl Tensor {
    /// `histogramdd(bins, range, weight, density)` with a bin count per dimension:
    /// (hist, bin_edges), the edges evenly spaced between each dimension's outer edges.
    pub fn histogramdd_bin_counts(
        &self,
        bins: &[i64],
        range: Option<&[f64]>,
        weight: Option<&Tensor>,
        density: bool,
    ) -> Result<(Tensor, Vec<Tensor>)> {
        let (values, n) = points(self)?;
        let outer = outer_edges(&values, n, range)?;
        if bins.len() != n {
            return Err(invalid(
                "histogramdd: The size of bins must be equal to the innermost dimension of the input.",
            ));
        }
        let weights = weight_values(self, weight)?;
        let mut edge_tensors = Vec::with_capacity(n);
        for (dim, (&count, &(left, right))) in bins.iter().zip(&outer).enumerate() {
            if count <= 0 {
                return Err(invalid(format!(
                    "torch.histogram(): bins must be > 0, but got {count} for dimension {dim}"
                )));
            }
            edge_tensors.push(linspace(left, right, count + 1, self.dtype())?);
        }
        let edges: Vec<Vec<f64>> = edge_tensors.iter().map(Tensor::to_f64_vec).collect();
        let hist = count(
            &values,
            weights.as_deref(),
            &edges,
            self.dtype(),
            BinSearch::LinearChecked,
            density,
        );
        Ok((hist, edge_tensors))
    }

    /// `histogramdd(bins, weight, density)` with explicit increasing edges per dimension.
    pub fn histogramdd_bin_tensors(
        &self,
        bins: &[Tensor],
        weight: Option<&Tensor>,
        density: bool,
    ) -> Result<(Tensor, Vec<Tensor>)> {
        let (values, n) = points(self)?;
        if bins.len() != n {
            return Err(invalid(format!(
                "torch.histogramdd: expected {n} sequences of bin edges for a {n}-dimensional histogram but got {}",
                bins.len()
            )));
        }
        for (dim, edges) in bins.iter().enumerate() {
            if edges.dtype() != self.dtype() {
                return Err(invalid(format!(
                    "torch.histogramdd: input tensor and bins tensors should have the same dtype, but got input with dtype {} and bins for dimension {dim} with dtype {}",
                    cxx_type_name(self.dtype()),
                    cxx_type_name(edges.dtype())
                )));
            }
            if edges.dim() != 1 {
                return Err(invalid(format!(
                    "torch.histogramdd: bins tensor should have one dimension, but got {} dimensions in the bins tensor for dimension {dim}",
                    edges.dim()
                )));
            }
            if edges.numel() == 0 {
                return Err(invalid(format!(
                    "torch.histogramdd: bins tensor should have at least 1 element, but got 0 elements in the bins tensor for dimension {dim}"
                )));
            }
        }
        let weights = weight_values(self, weight)?;
        for (dim, edges) in bins.iter().enumerate() {
            if edges.numel() < 2 {
                return Err(invalid(format!(
                    "torch.histogram(): bins must be > 0, but got 0 for dimension {dim}"
                )));
            }
        }
        let edge_tensors: Vec<Tensor> = bins
            .iter()
            .map(|edges| edges.contiguous().clone_tensor())
            .collect();
        let edges: Vec<Vec<f64>> = edge_tensors.iter().map(Tensor::to_f64_vec).collect();
        let hist = count(
            &values,
            weights.as_deref(),
            &edges,
            self.dtype(),
            BinSearch::Binary,
            density,
        );
        Ok((hist, edge_tensors))
    }
}
