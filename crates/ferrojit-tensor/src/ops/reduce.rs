//! Reductions: sum, mean, max and min, over all elements or over chosen dimensions.

use crate::dtype::DType;
use crate::element::{Arith, Element};
use crate::error::{Result, TensorError};
use crate::macros::{dispatch_dtype, dispatch_float};
use crate::ops::cxx_order;
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
        match dtype {
            Some(d) if d.is_complex() => return self.complex_mean_dim(dims, keepdim, d),
            None if self.dtype().is_complex() => {
                return self.complex_mean_dim(dims, keepdim, self.dtype())
            }
            _ => {}
        }
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
        if self.dtype().is_complex() {
            return Err(TensorError::NotImplementedForDType {
                op: if is_max { "max_all" } else { "min_all" },
                dtype: self.dtype(),
            });
        }
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

/// Rows of a tensor along one dimension (that dimension moved innermost), and how to put a
/// per-row result back in place.
struct DimRows {
    /// Sizes of the tensor with the chosen dim moved last (a 0-dim tensor counts as `[1]`).
    moved_sizes: Vec<usize>,
    /// Permutation that moves the dim last.
    order: Vec<i64>,
    dim: usize,
    len: usize,
    zero_dim: bool,
}

impl DimRows {
    fn new(t: &Tensor, dim: i64) -> Result<DimRows> {
        let n = t.dim();
        let d = wrap_dim(dim, n)?;
        if n == 0 {
            return Ok(DimRows {
                moved_sizes: vec![1],
                order: vec![0],
                dim: 0,
                len: 1,
                zero_dim: true,
            });
        }
        let mut order: Vec<i64> = (0..n as i64).filter(|&i| i != d as i64).collect();
        order.push(d as i64);
        let moved_sizes = order.iter().map(|&i| t.sizes()[i as usize]).collect();
        Ok(DimRows {
            moved_sizes,
            order,
            dim: d,
            len: t.sizes()[d],
            zero_dim: false,
        })
    }

    fn values<T: Element>(&self, t: &Tensor) -> Result<Vec<T>> {
        if self.zero_dim {
            return Ok(t.gather::<T>());
        }
        Ok(t.permute(&self.order)?.gather::<T>())
    }

    fn rows(&self) -> usize {
        self.moved_sizes[..self.moved_sizes.len() - 1]
            .iter()
            .product()
    }

    /// Builds a result holding `row_len` values per row, placed back along the dim.
    /// `keep` false removes the dim (row_len must then be 1).
    fn assemble<R: Element>(&self, values: Vec<R>, row_len: usize, keep: bool) -> Result<Tensor> {
        if self.zero_dim {
            return Ok(Tensor::from_values(values, &[]));
        }
        let mut sizes = self.moved_sizes.clone();
        let last = sizes.len() - 1;
        sizes[last] = row_len;
        let moved = Tensor::from_values(values, &sizes);
        let mut inverse = vec![0i64; self.order.len()];
        for (position, &source) in self.order.iter().enumerate() {
            inverse[source as usize] = position as i64;
        }
        let placed = moved.permute(&inverse)?.contiguous();
        if keep {
            Ok(placed)
        } else {
            placed.squeeze_dim(self.dim as i64)
        }
    }
}

/// Total order used by sort/topk/median: NaN is larger than every number.
fn nan_last_cmp(a: f64, b: f64) -> std::cmp::Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Greater,
        (false, true) => std::cmp::Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(std::cmp::Ordering::Equal),
    }
}

/// NaN test that also works for integer elements (only NaN is unordered with itself).
fn is_nan<T: Element>(v: T) -> bool {
    v.partial_cmp(&v).is_none()
}

/// PyTorch's ascending comparator on (value, index) pairs (`KeyValueCompAsc`, topk's
/// smallest): `(!isnan(x) && isnan(y)) || x < y`, so NaN counts as the largest value.
fn pair_less<T: Element>(x: &(T, usize), y: &(T, usize)) -> bool {
    (!is_nan(x.0) && is_nan(y.0)) || x.0 < y.0
}

/// PyTorch's descending comparator (`KeyValueCompDesc`, topk's largest, kthvalue's
/// `gt_or_nan`): `(isnan(x) && !isnan(y)) || x > y`.
fn pair_greater<T: Element>(x: &(T, usize), y: &(T, usize)) -> bool {
    (is_nan(x.0) && !is_nan(y.0)) || x.0 > y.0
}

/// The (value, index) pairs of one row, as PyTorch's kernels build them.
fn row_pairs<T: Element>(row: &[T], pairs: &mut Vec<(T, usize)>) {
    pairs.clear();
    pairs.extend(row.iter().copied().zip(0..));
}

/// How `sort` orders one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SortOrder {
    /// Any stable sort (PyTorch: `std::stable_sort`, or fbgemm's radix sort).
    Stable,
    /// Indices left as 0..n: the input's stride along dim is 0, so every value is equal.
    Identity,
    /// libstdc++'s `std::sort` on (value, index) pairs comparing values only.
    Introsort,
}

/// Sorted indices of one row (stable), ascending or descending.
fn sorted_indices<T: Element>(row: &[T], descending: bool) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..row.len()).collect();
    let key = |i: usize| row[i].to_f64();
    if T::DTYPE.is_floating_point() {
        if descending {
            idx.sort_by(|&a, &b| nan_last_cmp(key(b), key(a)));
        } else {
            idx.sort_by(|&a, &b| nan_last_cmp(key(a), key(b)));
        }
    } else {
        let ikey = |i: usize| row[i].to_i64();
        if descending {
            idx.sort_by_key(|&b| std::cmp::Reverse(ikey(b)));
        } else {
            idx.sort_by_key(|&a| ikey(a));
        }
    }
    idx
}

/// Puts the first `k` of `pairs` in PyTorch's topk order under `before` (its comparator).
fn top_k_order<T: Copy, F: FnMut(&T, &T) -> bool>(
    pairs: &mut [T],
    k: usize,
    sorted: bool,
    before: &mut F,
) {
    if k == 0 {
        return;
    }
    if k.saturating_mul(64) <= pairs.len() {
        cxx_order::partial_sort(pairs, k, before);
    } else {
        cxx_order::nth_element(pairs, k - 1, before);
        if sorted {
            cxx_order::sort(&mut pairs[..k - 1], before);
        }
    }
}

/// Which value-and-index reduction to run along a dim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArgReduce {
    Max,
    Min,
}

fn arg_extreme<T: Arith>(row: &[T], kind: ArgReduce) -> usize {
    let mut best = 0usize;
    for (i, &v) in row.iter().enumerate().skip(1) {
        let current = row[best];
        if current.is_nan() {
            break;
        }
        let better = v.is_nan()
            || match kind {
                ArgReduce::Max => v > current,
                ArgReduce::Min => v < current,
            };
        if better {
            best = i;
        }
    }
    best
}

fn float_only(op: &str, dtype: DType) -> Result<()> {
    if !dtype.is_floating_point() {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: Expected a floating point or complex tensor as input. Got {}",
            dtype.scalar_type_name()
        )));
    }
    Ok(())
}

impl Tensor {
    /// Runs `f` over each reduced group (as f64 values) and returns an `out_dtype` tensor.
    fn reduce_groups_f64(
        &self,
        dims: &[i64],
        keepdim: bool,
        out_dtype: DType,
        f: impl Fn(&[f64]) -> f64,
    ) -> Result<Tensor> {
        let reduced = self.reduction_dims(dims)?;
        let layout = self.reduction_layout(&reduced, keepdim)?;
        let values = layout.permuted.gather::<f64>();
        let groups: usize = layout.out_sizes.iter().product();
        let out: Vec<f64> = (0..groups)
            .map(|g| f(&values[g * layout.len..(g + 1) * layout.len]))
            .collect();
        Ok(Tensor::from_values(out, &layout.out_sizes).to_dtype(out_dtype))
    }

    fn check_nonempty_reduction(&self, op: &str, dims: &[i64]) -> Result<()> {
        if self.numel() == 0 {
            let reduced = self.reduction_dims(dims)?;
            for (d, &r) in reduced.iter().enumerate() {
                if r && self.sizes()[d] == 0 {
                    return Err(TensorError::InvalidArgument(format!(
                        "{op}(): Expected reduction dim {d} to have non-zero size."
                    )));
                }
            }
            if self.dim() == 0 || dims.is_empty() {
                return Err(TensorError::InvalidArgument(format!(
                    "{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
                )));
            }
        }
        Ok(())
    }

    /// Product over `dims` (empty = all). Integral and bool inputs give int64 unless `dtype` is given.
    pub fn prod_dim(&self, dims: &[i64], keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
        let out_dtype = dtype.unwrap_or(if self.dtype().is_integral(true) {
            DType::Int64
        } else {
            self.dtype()
        });
        let source = self.to_dtype(out_dtype);
        let reduced = source.reduction_dims(dims)?;
        let layout = source.reduction_layout(&reduced, keepdim)?;
        // Half types round after every multiplication, so the order matters: a full
        // reduction runs in memory order, as PyTorch's TensorIterator does.
        let memory_order =
            matches!(out_dtype, DType::Float16 | DType::BFloat16) && reduced.iter().all(|&r| r);
        Ok(dispatch_dtype!(out_dtype, T => {
            let values = if memory_order {
                let mut pairs: Vec<(usize, T)> =
                    source.offsets().zip(source.gather::<T>()).collect();
                pairs.sort_by_key(|&(offset, _)| offset);
                pairs.into_iter().map(|(_, v)| v).collect()
            } else {
                layout.permuted.gather::<T>()
            };
            let groups: usize = layout.out_sizes.iter().product();
            let out: Vec<T> = (0..groups)
                .map(|g| {
                    let chunk = &values[g * layout.len..(g + 1) * layout.len];
                    if matches!(T::DTYPE, DType::Float16 | DType::BFloat16) {
                        // PyTorch's CPU kernel accumulates half types in the half type,
                        // rounding after every multiplication.
                        chunk.iter().fold(T::one(), |acc, &x| acc.mul(x))
                    } else if T::DTYPE.is_floating_point() {
                        // Floating products accumulate in f64 and round once.
                        T::from_f64(chunk.iter().map(|x| x.to_f64()).product::<f64>())
                    } else {
                        chunk.iter().fold(T::one(), |acc, &x| acc.mul(x))
                    }
                })
                .collect();
            Tensor::from_values(out, &layout.out_sizes)
        }))
    }

    /// `amax`/`amin` over `dims` (empty = all), NaN propagating.
    pub fn amax(&self, dims: &[i64], keepdim: bool, is_max: bool) -> Result<Tensor> {
        self.check_nonempty_reduction(if is_max { "amax" } else { "amin" }, dims)?;
        let reduced = self.reduction_dims(dims)?;
        let layout = self.reduction_layout(&reduced, keepdim)?;
        Ok(dispatch_dtype!(self.dtype(), T => {
            let values = layout.permuted.gather::<T>();
            let groups: usize = layout.out_sizes.iter().product();
            let out: Vec<T> = (0..groups)
                .map(|g| {
                    let chunk = &values[g * layout.len..(g + 1) * layout.len];
                    let mut acc = chunk[0];
                    for &v in &chunk[1..] {
                        acc = if is_max { acc.nan_max(v) } else { acc.nan_min(v) };
                    }
                    acc
                })
                .collect();
            Tensor::from_values(out, &layout.out_sizes)
        }))
    }

    /// `max(dim)`/`min(dim)`: values and int64 indices of the first extreme (NaN wins).
    pub fn max_min_dim(&self, dim: i64, keepdim: bool, is_max: bool) -> Result<(Tensor, Tensor)> {
        let name = if is_max { "max" } else { "min" };
        let rows = DimRows::new(self, dim)?;
        if rows.len == 0 {
            return Err(TensorError::InvalidArgument(format!(
                "{name}(): Expected reduction dim {} to have non-zero size.",
                rows.dim
            )));
        }
        let kind = if is_max {
            ArgReduce::Max
        } else {
            ArgReduce::Min
        };
        dispatch_dtype!(self.dtype(), T => {
            let values = rows.values::<T>(self)?;
            let mut out_v = Vec::with_capacity(rows.rows());
            let mut out_i = Vec::with_capacity(rows.rows());
            for r in 0..rows.rows() {
                let row = &values[r * rows.len..(r + 1) * rows.len];
                let i = arg_extreme(row, kind);
                out_v.push(row[i]);
                out_i.push(i as i64);
            }
            Ok((rows.assemble(out_v, 1, keepdim)?, rows.assemble(out_i, 1, keepdim)?))
        })
    }

    /// `argmax`/`argmin`; without a dim the tensor is flattened first.
    pub fn argmax(&self, dim: Option<i64>, keepdim: bool, is_max: bool) -> Result<Tensor> {
        let name = if is_max { "argmax" } else { "argmin" };
        if self.dtype() == DType::Bool {
            return Err(TensorError::InvalidArgument(format!(
                "{name}(): does not support bool input"
            )));
        }
        match dim {
            Some(d) => {
                let rows = DimRows::new(self, d)?;
                if rows.len == 0 {
                    return Err(TensorError::InvalidArgument(format!(
                        "{name}(): Expected reduction dim {} to have non-zero size.",
                        rows.dim
                    )));
                }
                Ok(self.max_min_dim(d, keepdim, is_max)?.1)
            }
            None => {
                if self.numel() == 0 {
                    return Err(TensorError::InvalidArgument(format!(
                        "{name}(): Expected reduction dim to be specified for input.numel() == 0."
                    )));
                }
                let flat = self.reshape(&[-1])?;
                let index = flat.max_min_dim(0, false, is_max)?.1;
                if keepdim {
                    index.reshape(&vec![1; self.dim()])
                } else {
                    Ok(index)
                }
            }
        }
    }

    /// `var`/`std` over `dims` (empty = all) with Bessel-style `correction`.
    pub fn var_std(
        &self,
        dims: &[i64],
        correction: f64,
        keepdim: bool,
        take_sqrt: bool,
    ) -> Result<Tensor> {
        if !self.dtype().is_floating_point() {
            return Err(TensorError::InvalidArgument(
                "std and var only support floating point and complex dtypes".to_string(),
            ));
        }
        self.reduce_groups_f64(dims, keepdim, self.dtype(), |chunk| {
            let n = chunk.len() as f64;
            let mean = chunk.iter().sum::<f64>() / n;
            let squares: f64 = chunk.iter().map(|x| (x - mean) * (x - mean)).sum();
            let var = squares / (n - correction).max(0.0);
            if take_sqrt {
                var.sqrt()
            } else {
                var
            }
        })
    }

    /// `linalg.vector_norm(ord, dim, keepdim, dtype)`.
    pub fn vector_norm(
        &self,
        ord: f64,
        dims: &[i64],
        keepdim: bool,
        dtype: Option<DType>,
    ) -> Result<Tensor> {
        float_only("linalg.vector_norm", dtype.unwrap_or(self.dtype()))?;
        if self.numel() == 0 && (ord < 0.0 || ord == f64::INFINITY) {
            self.check_nonempty_reduction("linalg.vector_norm", dims)?;
        }
        let out_dtype = dtype.unwrap_or(self.dtype());
        self.reduce_groups_f64(dims, keepdim, out_dtype, |chunk| {
            if ord == f64::INFINITY {
                chunk.iter().fold(0.0f64, |m, x| {
                    if x.is_nan() || m.is_nan() {
                        f64::NAN
                    } else {
                        m.max(x.abs())
                    }
                })
            } else if ord == f64::NEG_INFINITY {
                chunk.iter().fold(f64::INFINITY, |m, x| {
                    if x.is_nan() || m.is_nan() {
                        f64::NAN
                    } else {
                        m.min(x.abs())
                    }
                })
            } else if ord == 0.0 {
                chunk.iter().filter(|x| **x != 0.0).count() as f64
            } else if ord == 1.0 {
                chunk.iter().map(|x| x.abs()).sum()
            } else if ord == 2.0 {
                chunk.iter().map(|x| x * x).sum::<f64>().sqrt()
            } else {
                chunk
                    .iter()
                    .map(|x| x.abs().powf(ord))
                    .sum::<f64>()
                    .powf(1.0 / ord)
            }
        })
    }

    /// `logsumexp(dims, keepdim)`; integral inputs give the default float dtype.
    pub fn logsumexp(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let out_dtype = if self.dtype().is_floating_point() {
            self.dtype()
        } else {
            DType::default_float()
        };
        self.reduce_groups_f64(dims, keepdim, out_dtype, |chunk| {
            let max = chunk.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x));
            if chunk.iter().any(|x| x.is_nan()) {
                return f64::NAN;
            }
            if max.is_infinite() {
                return max;
            }
            max + chunk.iter().map(|x| (x - max).exp()).sum::<f64>().ln()
        })
    }

    /// `any`/`all` over `dims` (empty = all); bool result (uint8 inputs give uint8).
    pub fn any_all(&self, dims: &[i64], keepdim: bool, is_any: bool) -> Result<Tensor> {
        let out_dtype = if self.dtype() == DType::UInt8 {
            DType::UInt8
        } else {
            DType::Bool
        };
        let reduced = self.reduction_dims(dims)?;
        let layout = self.reduction_layout(&reduced, keepdim)?;
        let values = layout.permuted.gather::<bool>();
        let groups: usize = layout.out_sizes.iter().product();
        let out: Vec<bool> = (0..groups)
            .map(|g| {
                let chunk = &values[g * layout.len..(g + 1) * layout.len];
                if is_any {
                    chunk.iter().any(|&b| b)
                } else {
                    chunk.iter().all(|&b| b)
                }
            })
            .collect();
        Ok(Tensor::from_values(out, &layout.out_sizes).to_dtype(out_dtype))
    }

    /// `count_nonzero(dims)`: int64 counts.
    pub fn count_nonzero(&self, dims: &[i64]) -> Result<Tensor> {
        let reduced = self.reduction_dims(dims)?;
        let layout = self.reduction_layout(&reduced, false)?;
        let values = layout.permuted.gather::<bool>();
        let groups: usize = layout.out_sizes.iter().product();
        let out: Vec<i64> = (0..groups)
            .map(|g| {
                values[g * layout.len..(g + 1) * layout.len]
                    .iter()
                    .filter(|&&b| b)
                    .count() as i64
            })
            .collect();
        Ok(Tensor::from_values(out, &layout.out_sizes))
    }

    /// `cumsum`/`cumprod` along `dim`; integral and bool inputs give int64 unless `dtype` is given.
    pub fn cumulative(&self, dim: i64, dtype: Option<DType>, is_product: bool) -> Result<Tensor> {
        let out_dtype = dtype.unwrap_or(if self.dtype().is_integral(true) {
            DType::Int64
        } else {
            self.dtype()
        });
        let rows = DimRows::new(self, dim)?;
        dispatch_dtype!(out_dtype, T => {
            let values = rows.values::<T>(self)?;
            let mut out = Vec::with_capacity(values.len());
            for r in 0..rows.rows() {
                let mut acc = if is_product { T::one() } else { T::zero() };
                for &v in &values[r * rows.len..(r + 1) * rows.len] {
                    acc = if is_product { acc.mul(v) } else { acc.add(v) };
                    out.push(acc);
                }
            }
            rows.assemble(out, rows.len, true)
        })
    }

    /// `sort(dim, descending)` with PyTorch's default `stable=False`: see [`Tensor::sort_with`].
    pub fn sort(&self, dim: i64, descending: bool) -> Result<(Tensor, Tensor)> {
        self.sort_with(dim, descending, false)
    }

    /// `sort(dim, descending, stable)`: sorted values and int64 indices; NaN counts as the
    /// largest value. Equal values come out in PyTorch 2.15's CPU order: index order when
    /// `stable`; otherwise as its `sort_kernel` leaves them (cpu/SortingKernel.cpp): the
    /// identity when the input's stride along `dim` is 0, fbgemm's (stable) radix sort for a
    /// 1-d ascending integer tensor of at least 32768 (`GRAIN_SIZE`) elements, and else
    /// libstdc++'s `std::sort` of (value, index) pairs comparing values only.
    pub fn sort_with(&self, dim: i64, descending: bool, stable: bool) -> Result<(Tensor, Tensor)> {
        let rows = DimRows::new(self, dim)?;
        let order = if !rows.zero_dim && self.strides()[rows.dim] == 0 {
            SortOrder::Identity
        } else if stable
            || (self.dim() == 1
                && !descending
                && self.dtype().is_integral(false)
                && self.numel() >= 32768)
        {
            SortOrder::Stable
        } else {
            SortOrder::Introsort
        };
        dispatch_dtype!(self.dtype(), T => {
            let values = rows.values::<T>(self)?;
            let mut out_v = Vec::with_capacity(values.len());
            let mut out_i = Vec::with_capacity(values.len());
            let mut pairs = Vec::with_capacity(rows.len);
            for r in 0..rows.rows() {
                let row = &values[r * rows.len..(r + 1) * rows.len];
                match order {
                    SortOrder::Stable => {
                        for i in sorted_indices(row, descending) {
                            out_v.push(row[i]);
                            out_i.push(i as i64);
                        }
                    }
                    SortOrder::Identity => {
                        out_v.extend_from_slice(row);
                        out_i.extend(0..row.len() as i64);
                    }
                    SortOrder::Introsort => {
                        row_pairs(row, &mut pairs);
                        if descending {
                            cxx_order::sort(&mut pairs, &mut pair_greater::<T>);
                        } else {
                            cxx_order::sort(&mut pairs, &mut pair_less::<T>);
                        }
                        for &(v, i) in &pairs {
                            out_v.push(v);
                            out_i.push(i as i64);
                        }
                    }
                }
            }
            Ok((rows.assemble(out_v, rows.len, true)?, rows.assemble(out_i, rows.len, true)?))
        })
    }

    /// `topk(k, dim, largest, sorted=True)`: see [`Tensor::topk_with`].
    pub fn topk(&self, k: i64, dim: i64, largest: bool) -> Result<(Tensor, Tensor)> {
        self.topk_with(k, dim, largest, true)
    }

    /// `topk(k, dim, largest, sorted)`: the k largest (or smallest) values and their indices,
    /// NaN counting as the largest value. Ties (and, unsorted, the order) are PyTorch 2.15's
    /// (`topk_impl_loop` in TopKImpl.h): over (value, index) pairs, libstdc++'s
    /// `std::partial_sort` of the first k when `k * 64 <= n`, else `std::nth_element` at k-1
    /// followed, when sorted, by `std::sort` of the first k-1.
    pub fn topk_with(
        &self,
        k: i64,
        dim: i64,
        largest: bool,
        sorted: bool,
    ) -> Result<(Tensor, Tensor)> {
        if self.dtype() == DType::Bool {
            return Err(TensorError::InvalidArgument(
                "topk does not support bool dtypes on CPU".to_string(),
            ));
        }
        let rows = DimRows::new(self, dim)?;
        if k < 0 || k as usize > rows.len {
            return Err(TensorError::InvalidArgument(
                "selected index k out of range".to_string(),
            ));
        }
        let k = k as usize;
        dispatch_dtype!(self.dtype(), T => {
            let values = rows.values::<T>(self)?;
            let mut out_v = Vec::new();
            let mut out_i = Vec::new();
            let mut pairs = Vec::with_capacity(rows.len);
            for r in 0..rows.rows() {
                let row = &values[r * rows.len..(r + 1) * rows.len];
                row_pairs(row, &mut pairs);
                if largest {
                    top_k_order(&mut pairs, k, sorted, &mut pair_greater::<T>);
                } else {
                    top_k_order(&mut pairs, k, sorted, &mut pair_less::<T>);
                }
                for &(v, i) in &pairs[..k] {
                    out_v.push(v);
                    out_i.push(i as i64);
                }
            }
            Ok((rows.assemble(out_v, k, true)?, rows.assemble(out_i, k, true)?))
        })
    }

    /// `kthvalue(k, dim, keepdim)`: the k-th smallest value (1-based) and its index.
    pub fn kthvalue(&self, k: i64, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let rows = DimRows::new(self, dim)?;
        if k < 1 || k as usize > rows.len {
            return Err(TensorError::InvalidArgument(format!(
                "kthvalue(): selected number k out of range for dimension {}",
                rows.dim
            )));
        }
        if self.dim() == 0 {
            // PyTorch copies a 0-dim input before any dtype dispatch (bool included).
            return Ok((self.clone_tensor(), Tensor::zeros(&[], DType::Int64)?));
        }
        if self.dtype() == DType::Bool {
            return Err(TensorError::NotImplementedForDType {
                op: "kthvalue_cpu",
                dtype: DType::Bool,
            });
        }
        // PyTorch's quickselect (Sorting.cpp) on (value, index) pairs decides which of equal
        // values is reported; NaN counts as the largest value.
        let k = (k - 1) as usize;
        dispatch_dtype!(self.dtype(), T => {
            let values = rows.values::<T>(self)?;
            let mut out_v = Vec::with_capacity(rows.rows());
            let mut out_i = Vec::with_capacity(rows.rows());
            let mut pairs = Vec::with_capacity(rows.len);
            for r in 0..rows.rows() {
                row_pairs(&values[r * rows.len..(r + 1) * rows.len], &mut pairs);
                cxx_order::quick_select(&mut pairs, k, &mut pair_greater::<T>);
                let (v, i) = pairs[k];
                out_v.push(v);
                out_i.push(i as i64);
            }
            Ok((rows.assemble(out_v, 1, keepdim)?, rows.assemble(out_i, 1, keepdim)?))
        })
    }

    /// `median(dim, keepdim)`: the lower median and its index (NaN propagates).
    pub fn median_dim(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let rows = DimRows::new(self, dim)?;
        if rows.len == 0 {
            return Err(TensorError::InvalidArgument(format!(
                "median(): Expected reduction dim {} to have non-zero size.",
                rows.dim
            )));
        }
        self.select_ranked(&rows, keepdim, |len| (len - 1) / 2)
    }

    /// `median()` of all elements.
    pub fn median_all(&self) -> Result<Tensor> {
        if self.dtype() == DType::Bool {
            return Err(TensorError::NotImplementedForDType {
                op: "median_cpu",
                dtype: DType::Bool,
            });
        }
        if self.numel() == 0 {
            // NaN converted to an integer type gives its minimum, as in PyTorch's CPU kernel.
            let fill = match self.dtype() {
                DType::Int64 => crate::dtype::Scalar::Int(i64::MIN),
                DType::Int32 => crate::dtype::Scalar::Int(i64::from(i32::MIN)),
                _ => crate::dtype::Scalar::Float(f64::NAN),
            };
            return Tensor::full(&[], fill, self.dtype());
        }
        Ok(self.reshape(&[-1])?.median_dim(0, false)?.0)
    }

    fn select_ranked(
        &self,
        rows: &DimRows,
        keepdim: bool,
        rank: impl Fn(usize) -> usize,
    ) -> Result<(Tensor, Tensor)> {
        if self.dtype() == DType::Bool {
            return Err(TensorError::NotImplementedForDType {
                op: "median_out",
                dtype: DType::Bool,
            });
        }
        dispatch_dtype!(self.dtype(), T => {
            let values = rows.values::<T>(self)?;
            let mut out_v = Vec::new();
            let mut out_i = Vec::new();
            for r in 0..rows.rows() {
                let row = &values[r * rows.len..(r + 1) * rows.len];
                let order = sorted_indices(row, false);
                // A NaN anywhere makes the result NaN (it sorts last; report the first NaN).
                let nan = row.iter().position(|x| x.to_f64().is_nan());
                let i = match nan {
                    Some(p) => p,
                    None => order[rank(row.len())],
                };
                out_v.push(row[i]);
                out_i.push(i as i64);
            }
            Ok((rows.assemble(out_v, 1, keepdim)?, rows.assemble(out_i, 1, keepdim)?))
        })
    }

    /// `torch.unique(sorted, return_inverse, return_counts)` over all elements:
    /// (values, inverse indices shaped like self, counts).
    pub fn unique(&self) -> Result<(Tensor, Tensor, Tensor)> {
        dispatch_dtype!(self.dtype(), T => {
            let values = self.gather::<T>();
            let order = sorted_indices(&values, false);
            let mut uniq: Vec<T> = Vec::new();
            let mut counts: Vec<i64> = Vec::new();
            let mut inverse = vec![0i64; values.len()];
            for i in order {
                let v = values[i];
                let same = uniq.last().is_some_and(|&u| u == v);
                if !same {
                    uniq.push(v);
                    counts.push(0);
                }
                let last = counts.len() - 1;
                counts[last] += 1;
                inverse[i] = last as i64;
            }
            let n = uniq.len();
            Ok((
                Tensor::from_values(uniq, &[n]),
                Tensor::from_values(inverse, self.sizes()),
                Tensor::from_values(counts, &[n]),
            ))
        })
    }

    /// `torch.unique_dim(dim, ...)`: the distinct slices along `dim`, sorted
    /// lexicographically, with the inverse indices `[size(dim)]` and the counts. PyTorch's
    /// CPU kernel ignores `sorted`, `return_inverse` and `return_counts` here: it always
    /// sorts and always returns both.
    pub fn unique_dim(&self, dim: i64) -> Result<(Tensor, Tensor, Tensor)> {
        let d = crate::shape::wrap_dim(dim, self.dim().max(1))?;
        if self.dim() == 0 {
            return Err(TensorError::InvalidArgument(
                "unique_dim(): expected a tensor with at least one dimension".to_string(),
            ));
        }
        let len = self.sizes()[d];
        let moved: Vec<i64> = std::iter::once(d as i64)
            .chain((0..self.dim() as i64).filter(|&i| i != d as i64))
            .collect();
        let rows = self.permute(&moved)?.contiguous();
        let width = rows.numel().checked_div(len).unwrap_or(0);
        let values = rows.to_f64_vec();
        let slice = |i: usize| &values[i * width..(i + 1) * width];
        let mut order: Vec<usize> = (0..len).collect();
        order.sort_by(|&a, &b| {
            slice(a)
                .iter()
                .zip(slice(b))
                .map(|(&x, &y)| nan_last_cmp(x, y))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        let mut kept: Vec<i64> = Vec::new();
        let mut counts: Vec<i64> = Vec::new();
        let mut inverse = vec![0i64; len];
        let mut previous: Option<usize> = None;
        for &i in &order {
            let same = previous.is_some_and(|p| slice(p) == slice(i));
            if !same {
                kept.push(i as i64);
                counts.push(0);
                previous = Some(i);
            }
            let last = counts.len() - 1;
            counts[last] += 1;
            inverse[i] = last as i64;
        }
        let n = kept.len();
        let output = self.index_select(d as i64, &Tensor::from_values(kept, &[n]))?;
        Ok((
            output,
            Tensor::from_values(inverse, &[len]),
            Tensor::from_values(counts, &[n]),
        ))
    }
}
