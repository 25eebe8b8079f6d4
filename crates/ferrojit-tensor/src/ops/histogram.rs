//! Counting into bins: histc, histogram (a bin count or explicit edges, with weights and
//! density) and bincount, following PyTorch's CPU kernels: bins are found in the input's
//! own precision, elements outside the edges (and NaN) are skipped, and the last bin
//! includes its right edge.

use crate::dtype::DType;
use crate::error::{Result, TensorError};
use crate::ops::creation::linspace;
use crate::tensor::Tensor;

fn invalid(message: impl Into<String>) -> TensorError {
    TensorError::InvalidArgument(message.into())
}

/// `value` rounded to `dtype`'s precision: one float32 operation done in f64 and rounded
/// once is exactly float32's own result.
pub(super) fn round_to(value: f64, dtype: DType) -> f64 {
    match dtype {
        DType::Float32 => value as f32 as f64,
        DType::Float16 => half::f16::from_f64(value).to_f64(),
        DType::BFloat16 => half::bf16::from_f64(value).to_f64(),
        _ => value,
    }
}

/// How an element finds its bin.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum BinSearch {
    /// Evenly spaced edges, position by division (histc).
    Linear,
    /// Evenly spaced edges, position by division, then corrected against the edges
    /// (histogram with a bin count, whose edges are returned too).
    LinearChecked,
    /// Any increasing edges, found by binary search.
    Binary,
}

/// The bin of `x` among `edges` (in `dtype`'s precision), or None when `x` lies outside
/// them or is NaN. The last bin includes its right edge.
pub(super) fn bin_position(
    x: f64,
    edges: &[f64],
    dtype: DType,
    search: BinSearch,
) -> Option<usize> {
    let bins = edges.len() - 1;
    let (left, right) = (edges[0], edges[bins]);
    if !(x >= left && x <= right) {
        return None;
    }
    let upper_bound = |from: usize, to: usize| -> usize {
        // First position in edges[from..to] whose edge is greater than x.
        from + edges[from..to].partition_point(|&e| e <= x)
    };
    let mut position = match search {
        BinSearch::Binary => upper_bound(0, edges.len()) as i64 - 1,
        BinSearch::Linear | BinSearch::LinearChecked => {
            let offset = round_to(x - left, dtype);
            let scaled = round_to(offset * bins as f64, dtype);
            let p = round_to(scaled / round_to(right - left, dtype), dtype) as i64;
            if search == BinSearch::LinearChecked {
                let from = (p - 1).max(0) as usize;
                let to = ((p + 2).max(0) as usize).min(edges.len());
                upper_bound(from, to.max(from)) as i64 - 1
            } else {
                p
            }
        }
    };
    if position == bins as i64 {
        position -= 1;
    }
    (position >= 0 && position < bins as i64).then_some(position as usize)
}

/// The histogram of `values` over `edges` (in `dtype`'s precision), with optional weights.
fn count_into_bins(
    values: &[f64],
    weights: Option<&[f64]>,
    edges: &[f64],
    dtype: DType,
    search: BinSearch,
) -> Vec<f64> {
    let mut hist = vec![0.0f64; edges.len() - 1];
    for (i, &x) in values.iter().enumerate() {
        if let Some(position) = bin_position(x, edges, dtype, search) {
            let weight = weights.map_or(1.0, |w| w[i]);
            hist[position] = round_to(hist[position] + weight, dtype);
        }
    }
    hist
}

pub(super) fn check_floating(op: &'static str, dtype: DType) -> Result<()> {
    if !dtype.is_floating_point() {
        return Err(TensorError::NotImplementedForDType { op, dtype });
    }
    Ok(())
}

impl Tensor {
    /// `histc(bins, min, max)`: counts over `bins` equal bins between min and max (the data's
    /// extremes when min == max), as a tensor of the input's dtype.
    pub fn histc(&self, bins: i64, min: f64, max: f64) -> Result<Tensor> {
        check_floating("histogram_cpu", self.dtype())?;
        if bins <= 0 {
            return Err(invalid(format!(
                "torch.histogram(): bins must be > 0, but got {bins} for dimension 0"
            )));
        }
        let values = self.to_f64_vec();
        let (mut left, mut right) = (min, max);
        if left == right && !values.is_empty() {
            let (low, high) = self.aminmax(None, false)?;
            left = low.to_f64_vec()[0];
            right = high.to_f64_vec()[0];
        }
        if left == right {
            left -= 1.0;
            right += 1.0;
        }
        if !left.is_finite() || !right.is_finite() {
            return Err(invalid(format!(
                "torch.histc: range of [{}, {}] is not finite",
                cxx_double(left),
                cxx_double(right)
            )));
        }
        if left >= right {
            return Err(invalid("torch.histc: max must be larger than min"));
        }
        let edges = linspace(left, right, bins + 1, self.dtype())?.to_f64_vec();
        let hist = count_into_bins(&values, None, &edges, self.dtype(), BinSearch::Linear);
        Ok(crate::ops::nn::from_f64(
            hist,
            &[bins as usize],
            self.dtype(),
        ))
    }

    /// `histogram(bins, range, weight, density)` with a bin count: (hist, bin_edges).
    pub fn histogram_bin_count(
        &self,
        bins: i64,
        range: Option<&[f64]>,
        weight: Option<&Tensor>,
        density: bool,
    ) -> Result<(Tensor, Tensor)> {
        check_floating("histogramdd", self.dtype())?;
        if bins <= 0 {
            return Err(invalid(format!(
                "torch.histogramdd(): bins must be > 0, but got {bins} for dimension 0"
            )));
        }
        let (mut left, mut right) = match range {
            Some(range) => {
                if range.len() != 2 {
                    return Err(invalid(format!(
                        "torch.histogramdd: for a 1-dimensional input, range must have 2 entries, but got {}",
                        range.len()
                    )));
                }
                (range[0], range[1])
            }
            None if self.numel() > 0 => {
                let (low, high) = self.aminmax(None, false)?;
                (low.to_f64_vec()[0], high.to_f64_vec()[0])
            }
            None => (0.0, 1.0),
        };
        if !left.is_finite() || !right.is_finite() {
            return Err(invalid(format!(
                "torch.histogramdd: dimension 0's range [{}, {}] is not finite",
                cxx_double(left),
                cxx_double(right)
            )));
        }
        if left > right {
            return Err(invalid(format!(
                "torch.histogramdd: min should not exceed max, but got min {} max {} for dimension 0",
                cxx_double(left),
                cxx_double(right)
            )));
        }
        if left == right {
            left -= 0.5;
            right += 0.5;
        }
        let edges = linspace(left, right, bins + 1, self.dtype())?;
        let hist = self.histogram_over(&edges, weight, density, BinSearch::LinearChecked)?;
        Ok((hist, edges))
    }

    /// `histogram(bins, weight, density)` with explicit increasing edges: (hist, bin_edges).
    pub fn histogram_bin_edges(
        &self,
        bins: &Tensor,
        weight: Option<&Tensor>,
        density: bool,
    ) -> Result<(Tensor, Tensor)> {
        check_floating("histogramdd", self.dtype())?;
        if bins.dtype() != self.dtype() {
            return Err(invalid(format!(
                "torch.histogramdd: input tensor and bins tensors should have the same dtype, but got input with dtype {} and bins for dimension 0 with dtype {}",
                cxx_type_name(self.dtype()),
                cxx_type_name(bins.dtype())
            )));
        }
        if bins.dim() != 1 {
            return Err(invalid(format!(
                "torch.histogramdd: bins tensor should have one dimension, but got {} dimensions in the bins tensor for dimension 0",
                bins.dim()
            )));
        }
        if bins.numel() == 0 {
            return Err(invalid(
                "torch.histogramdd: bins tensor should have at least 1 element, but got 0 elements in the bins tensor for dimension 0",
            ));
        }
        let edges = bins.contiguous().clone_tensor();
        let hist = self.histogram_over(&edges, weight, density, BinSearch::Binary)?;
        Ok((hist, edges))
    }

    fn histogram_over(
        &self,
        edges: &Tensor,
        weight: Option<&Tensor>,
        density: bool,
        search: BinSearch,
    ) -> Result<Tensor> {
        let dtype = self.dtype();
        let weights = match weight {
            Some(w) => {
                if w.dtype() != dtype {
                    return Err(invalid(format!(
                        "torch.histogramdd: if weight tensor is provided, it should have the same dtype as the input tensor, but got input with dtype {} and weight with dtype {}",
                        cxx_type_name(dtype),
                        cxx_type_name(w.dtype())
                    )));
                }
                if w.sizes() != self.sizes() {
                    return Err(invalid(
                        "torch.histogramdd: if weight tensor is provided it should have the same shape as the input tensor excluding its innermost dimension",
                    ));
                }
                Some(w.to_f64_vec())
            }
            None => None,
        };
        let edge_values = edges.to_f64_vec();
        let bins = edge_values.len() - 1;
        let mut hist = count_into_bins(
            &self.to_f64_vec(),
            weights.as_deref(),
            &edge_values,
            dtype,
            search,
        );
        if density {
            let total = round_to(hist.iter().sum::<f64>(), dtype);
            for (b, h) in hist.iter_mut().enumerate() {
                let width = round_to(edge_values[b + 1] - edge_values[b], dtype);
                *h = round_to(round_to(*h / total, dtype) / width, dtype);
            }
        }
        Ok(crate::ops::nn::from_f64(hist, &[bins], dtype))
    }

    /// `bincount(weights, minlength)`: occurrences of each value of a 1-D non-negative
    /// integral tensor (int64), or the sums of their weights (float32 weights give float32,
    /// any other weights float64).
    pub fn bincount(&self, weights: Option<&Tensor>, minlength: i64) -> Result<Tensor> {
        if !self.dtype().is_integral(false) {
            return Err(TensorError::NotImplementedForDType {
                op: "bincount_cpu",
                dtype: self.dtype(),
            });
        }
        if minlength < 0 {
            return Err(invalid("minlength should be >= 0"));
        }
        let values = self.to_i64_vec();
        if self.dim() == 1 && values.is_empty() {
            let dtype = weights.map_or(DType::Int64, |w| bincount_weight_dtype(w.dtype()));
            return Tensor::zeros(&[minlength as usize], dtype);
        }
        if self.dim() != 1 || values.iter().any(|&v| v < 0) {
            return Err(invalid(
                "bincount only supports 1-d non-negative integral inputs.",
            ));
        }
        if let Some(w) = weights {
            if w.dim() != 1 || w.numel() != values.len() {
                return Err(invalid(
                    "weights should be 1-d and have the same length as input",
                ));
            }
        }
        let largest = values.iter().copied().max().unwrap_or(0);
        let length = (largest + 1).max(minlength) as usize;
        match weights {
            None => {
                let mut counts = vec![0i64; length];
                for &v in &values {
                    counts[v as usize] += 1;
                }
                Ok(Tensor::from_values(counts, &[length]))
            }
            Some(w) => {
                let dtype = bincount_weight_dtype(w.dtype());
                let mut sums = vec![0.0f64; length];
                for (&v, weight) in values.iter().zip(w.to_f64_vec()) {
                    sums[v as usize] = round_to(sums[v as usize] + weight, dtype);
                }
                Ok(crate::ops::nn::from_f64(sums, &[length], dtype))
            }
        }
    }
}

fn bincount_weight_dtype(weights: DType) -> DType {
    if weights == DType::Float32 {
        DType::Float32
    } else {
        DType::Float64
    }
}

/// The C++ name PyTorch's messages give a dtype (its caffe2 TypeMeta name).
pub(super) fn cxx_type_name(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool => "bool",
        DType::UInt8 => "unsigned char",
        DType::Int8 => "signed char",
        DType::Int16 => "short int",
        DType::Int32 => "int",
        DType::Int64 => "long int",
        DType::Float16 => "c10::Half",
        DType::BFloat16 => "c10::BFloat16",
        DType::Float32 => "float",
        DType::Float64 => "double",
        DType::ComplexFloat => "c10::complex<float>",
        DType::ComplexDouble => "c10::complex<double>",
    }
}

/// A double as C++'s stream prints it in PyTorch's messages (`inf`, `nan`, shortest form).
pub(super) fn cxx_double(value: f64) -> String {
    if value.is_nan() {
        "nan".to_string()
    } else if value.is_infinite() {
        if value > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format!("{value}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_bin_includes_its_right_edge_and_outside_values_are_skipped() {
        let x = Tensor::from_vec(vec![0.0f32, 1.0, 2.0, 5.0, -1.0], &[5]).unwrap();
        let hist = x.histc(2, 0.0, 2.0).unwrap();
        assert_eq!(hist.to_f64_vec(), vec![1.0, 2.0]);
        assert_eq!(hist.dtype(), DType::Float32);
    }

    #[test]
    fn bincount_refuses_negative_values() {
        let x = Tensor::from_vec(vec![0i64, -1], &[2]).unwrap();
        assert!(x.bincount(None, 0).is_err());
    }
}
