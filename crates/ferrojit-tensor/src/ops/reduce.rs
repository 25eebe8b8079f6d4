//! Reductions: sum, mean, max and min, over all elements or over chosen dimensions.

use crate::dtype::DType;
use crate::element::Arith;
use crate::error::{Result, TensorError};
use crate::macros::{dispatch_dtype, dispatch_float};
use crate::shape::wrap_dim;
use crate::tensor::Tensor;

/// How a reduction splits a tensor: `groups` outputs, each reducing `len` consecutive values
/// of `values` (gathered with reduced dims innermost).
struct ReductionLayout {
    out_sizes: Vec<usize>,
    permuted: Tensor,
    len: usize,
}

impl Tensor {
    /// Wraps and de-duplicates `dims`; an empty list means every dimension.
    fn reduction_dims(&self, dims: &[i64]) -> Result<Vec<bool>> {
        let n = self.dim();
        let mut reduced = vec![dims.is_empty(); n];
        for &d in dims {
            let w = wrap_dim(d, n)?;
            if n == 0 {
                continue;
            }
            if reduced[w] {
                return Err(TensorError::InvalidArgument(format!(
                    "dim {w} appears multiple times in the list of dims"
                )));
            }
            reduced[w] = true;
        }
        Ok(reduced)
    }

    fn reduction_layout(&self, reduced: &[bool], keepdim: bool) -> Result<ReductionLayout> {
        let mut order: Vec<i64> = Vec::with_capacity(self.dim());
        let mut out_sizes = Vec::new();
        let mut len = 1usize;
        for (d, &r) in reduced.iter().enumerate() {
            if r {
                len *= self.sizes()[d];
                if keepdim {
                    out_sizes.push(1);
                }
            } else {
                order.push(d as i64);
                out_sizes.push(self.sizes()[d]);
            }
        }
        for (d, &r) in reduced.iter().enumerate() {
            if r {
                order.push(d as i64);
            }
        }
        Ok(ReductionLayout {
            out_sizes,
            permuted: self.permute(&order)?,
            len,
        })
    }

    /// Sum of all elements. Integral and bool inputs accumulate in int64 unless `dtype` is given.
    pub fn sum(&self, dtype: Option<DType>) -> Result<Tensor> {
        self.sum_dim(&[], false, dtype)
    }

    /// Sum over `dims` (empty = all). Integral and bool inputs give int64 unless `dtype` is given.
    pub fn sum_dim(&self, dims: &[i64], keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
        let out_dtype = dtype.unwrap_or(if self.dtype().is_integral(true) {
            DType::Int64
        } else {
            self.dtype()
        });
        let reduced = self.reduction_dims(dims)?;
        let layout = self.reduction_layout(&reduced, keepdim)?;
        Ok(dispatch_dtype!(out_dtype, T => sum_kernel::<T>(&layout)))
    }

    /// Mean of all elements; the input (or `dtype`) must be floating point.
    pub fn mean(&self, dtype: Option<DType>) -> Result<Tensor> {
        self.mean_dim(&[], false, dtype)
    }

    /// Mean over `dims` (empty = all).
    pub fn mean_dim(&self, dims: &[i64], keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
        let out_dtype = match dtype {
            Some(d) if !d.is_floating_point() => {
                return Err(TensorError::InvalidArgument(format!(
                    "mean(): could not infer output dtype. Optional dtype must be either a floating point or complex dtype. Got: {}",
                    d.scalar_type_name()
                )))
            }
            Some(d) => d,
            None if !self.dtype().is_floating_point() => {
                return Err(TensorError::InvalidArgument(format!(
                    "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
                    self.dtype().scalar_type_name()
                )))
            }
            None => self.dtype(),
        };
        let reduced = self.reduction_dims(dims)?;
        let layout = self.reduction_layout(&reduced, keepdim)?;
        dispatch_float!(out_dtype, T => Ok(mean_kernel::<T>(&layout)), _ => Err(TensorError::NotImplementedForDType { op: "mean", dtype: out_dtype }))
    }

    /// Maximum of all elements (NaN propagates); fails on empty tensors.
    pub fn max(&self) -> Result<Tensor> {
        self.extremum(true)
    }

    /// Minimum of all elements (NaN propagates); fails on empty tensors.
    pub fn min(&self) -> Result<Tensor> {
        self.extremum(false)
    }

    fn extremum(&self, is_max: bool) -> Result<Tensor> {
        let name = if is_max { "max" } else { "min" };
        if self.numel() == 0 {
            return Err(TensorError::InvalidArgument(format!(
                "{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
            )));
        }
        Ok(dispatch_dtype!(self.dtype(), T => {
            let values = self.gather::<T>();
            let mut acc = values[0];
            for &v in &values[1..] {
                acc = if is_max { acc.nan_max(v) } else { acc.nan_min(v) };
            }
            Tensor::from_values(vec![acc], &[])
        }))
    }
}

fn sum_kernel<T: Arith>(layout: &ReductionLayout) -> Tensor {
    let values = layout.permuted.gather::<T>();
    let groups: usize = layout.out_sizes.iter().product();
    let mut out = Vec::with_capacity(groups);
    for g in 0..groups {
        let chunk = &values[g * layout.len..(g + 1) * layout.len];
        let total = if T::DTYPE.is_floating_point() {
            // Accumulating in f64 keeps float32 sums close to PyTorch's cascaded summation.
            T::from_f64(chunk.iter().map(|x| x.to_f64()).sum::<f64>())
        } else {
            chunk.iter().fold(T::zero(), |acc, &x| acc.add(x))
        };
        out.push(total);
    }
    Tensor::from_values(out, &layout.out_sizes)
}

fn mean_kernel<T: Arith>(layout: &ReductionLayout) -> Tensor {
    let values = layout.permuted.gather::<T>();
    let groups: usize = layout.out_sizes.iter().product();
    let mut out = Vec::with_capacity(groups);
    for g in 0..groups {
        let chunk = &values[g * layout.len..(g + 1) * layout.len];
        let total: f64 = chunk.iter().map(|x| x.to_f64()).sum();
        out.push(T::from_f64(total / layout.len as f64));
    }
    Tensor::from_values(out, &layout.out_sizes)
}
