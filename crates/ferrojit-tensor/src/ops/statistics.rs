//! Order statistics and moments along a dimension: aminmax, cummax/cummin, logcumsumexp,
//! msort, argwhere, std_mean/var_mean, nanmedian, mode, quantile/nanquantile, cov and
//! corrcoef, with PyTorch's CPU results, dtype rules and refusals.

use crate::dtype::{DType, Scalar};
use crate::element::Element;
use crate::error::{Result, TensorError};
use crate::macros::dispatch_dtype;
use crate::shape::wrap_dim;
use crate::tensor::Tensor;

/// A tensor seen as rows along one dimension: that dimension moved last, so each row is
/// `len` consecutive values of [`AlongDim::values`]. A 0-dim tensor is one row of one value.
pub(crate) struct AlongDim {
    moved_sizes: Vec<usize>,
    order: Vec<i64>,
    pub(crate) dim: usize,
    pub(crate) len: usize,
    zero_dim: bool,
}

impl AlongDim {
    pub(crate) fn new(tensor: &Tensor, dim: i64) -> Result<AlongDim> {
        let n = tensor.dim();
        let d = wrap_dim(dim, n)?;
        if n == 0 {
            return Ok(AlongDim {
                moved_sizes: vec![1],
                order: vec![0],
                dim: 0,
                len: 1,
                zero_dim: true,
            });
        }
        let mut order: Vec<i64> = (0..n as i64).filter(|&i| i != d as i64).collect();
        order.push(d as i64);
        let moved_sizes = order.iter().map(|&i| tensor.sizes()[i as usize]).collect();
        Ok(AlongDim {
            moved_sizes,
            order,
            dim: d,
            len: tensor.sizes()[d],
            zero_dim: false,
        })
    }

    /// The elements, row after row.
    pub(crate) fn values<T: Element>(&self, tensor: &Tensor) -> Result<Vec<T>> {
        if self.zero_dim {
            return Ok(tensor.gather::<T>());
        }
        Ok(tensor.permute(&self.order)?.gather::<T>())
    }

    pub(crate) fn rows(&self) -> usize {
        self.moved_sizes[..self.moved_sizes.len() - 1]
            .iter()
            .product()
    }

    /// A tensor of `row_len` values per row, put back along the dimension; `keep` false
    /// removes the dimension (then `row_len` must be 1).
    pub(crate) fn assemble<R: Element>(
        &self,
        values: Vec<R>,
        row_len: usize,
        keep: bool,
    ) -> Result<Tensor> {
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

/// True for NaN only (integers are never NaN).
fn is_nan<T: Element>(value: T) -> bool {
    value.partial_cmp(&value).is_none()
}

/// NaN sorts after every number; otherwise the natural order.
fn nan_last<T: Element>(a: T, b: T) -> std::cmp::Ordering {
    match (is_nan(a), is_nan(b)) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Greater,
        (false, true) => std::cmp::Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(std::cmp::Ordering::Equal),
    }
}

fn invalid(message: impl Into<String>) -> TensorError {
    TensorError::InvalidArgument(message.into())
}

fn refuse_complex(op: &'static str, dtype: DType) -> Result<()> {
    if dtype.is_complex() {
        return Err(TensorError::NotImplementedForDType { op, dtype });
    }
    Ok(())
}

/// How `quantile` picks between the two ranks around `q * (n - 1)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantileInterpolation {
    Linear,
    Lower,
    Higher,
    Midpoint,
    Nearest,
}

impl QuantileInterpolation {
    pub fn parse(name: &str, op: &str) -> Result<QuantileInterpolation> {
        Ok(match name {
            "linear" => QuantileInterpolation::Linear,
            "lower" => QuantileInterpolation::Lower,
            "higher" => QuantileInterpolation::Higher,
            "midpoint" => QuantileInterpolation::Midpoint,
            "nearest" => QuantileInterpolation::Nearest,
            other => {
                return Err(invalid(format!(
                    "{op}() interpolation must be one of linear, lower, higher, midpoint or nearest, but got {other}"
                )))
            }
        })
    }
}

/// ATen's `lerp`: the two-sided form, exact at both ends.
fn lerp(start: f64, end: f64, weight: f64) -> f64 {
    if weight.abs() < 0.5 {
        start + weight * (end - start)
    } else {
        end - (end - start) * (1.0 - weight)
    }
}

impl Tensor {
    /// `aminmax(dim, keepdim)`: the minimum and maximum (NaN propagates), over all elements
    /// when `dim` is None (then `keepdim` keeps every dimension as 1).
    pub fn aminmax(&self, dim: Option<i64>, keepdim: bool) -> Result<(Tensor, Tensor)> {
        refuse_complex("aminmax_cpu", self.dtype())?;
        let empty_error = || {
            invalid("aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.")
        };
        let (source, row_dim) = match dim {
            Some(d) => {
                let w = wrap_dim(d, self.dim())?;
                if self.dim() > 0 && self.sizes()[w] == 0 {
                    return Err(invalid(format!(
                        "aminmax: Expected reduction dim {w} to have non-zero size."
                    )));
                }
                (self.clone(), d)
            }
            None => {
                if self.numel() == 0 {
                    return Err(empty_error());
                }
                (self.reshape(&[-1])?, 0)
            }
        };
        let rows = AlongDim::new(&source, row_dim)?;
        let keep_row = keepdim && dim.is_some();
        let (low, high) = dispatch_dtype!(self.dtype(), T => {
            let values = rows.values::<T>(&source)?;
            let mut low = Vec::with_capacity(rows.rows());
            let mut high = Vec::with_capacity(rows.rows());
            for row in values.chunks(rows.len.max(1)).take(rows.rows()) {
                let (mut min, mut max) = (row[0], row[0]);
                for &v in row {
                    if is_nan(v) {
                        min = v;
                        max = v;
                        break;
                    }
                    if v.partial_cmp(&min) == Some(std::cmp::Ordering::Less) {
                        min = v;
                    }
                    if v.partial_cmp(&max) == Some(std::cmp::Ordering::Greater) {
                        max = v;
                    }
                }
                low.push(min);
                high.push(max);
            }
            (rows.assemble(low, 1, keep_row)?, rows.assemble(high, 1, keep_row)?)
        });
        if keepdim && dim.is_none() {
            let ones = vec![1i64; self.dim()];
            return Ok((low.reshape(&ones)?, high.reshape(&ones)?));
        }
        Ok((low, high))
    }

    /// `cummax(dim)` (`is_max`) or `cummin(dim)`: running extreme and the index where it was
    /// last reached; a NaN is kept from where it first appears.
    pub fn cumulative_extreme(&self, dim: i64, is_max: bool) -> Result<(Tensor, Tensor)> {
        refuse_complex(
            if is_max { "cummax_cpu" } else { "cummin_cpu" },
            self.dtype(),
        )?;
        let rows = AlongDim::new(self, dim)?;
        dispatch_dtype!(self.dtype(), T => {
            let values = rows.values::<T>(self)?;
            let mut out = Vec::with_capacity(values.len());
            let mut indices = Vec::with_capacity(values.len());
            if rows.len > 0 {
                for row in values.chunks(rows.len) {
                    let mut best = row[0];
                    let mut best_index = 0i64;
                    for (i, &v) in row.iter().enumerate() {
                        // Ties move the index forward, as PyTorch's `>=`/`<=` test does.
                        let takes = is_nan(v)
                            || (!is_nan(best) && if is_max { v >= best } else { v <= best });
                        if takes {
                            best = v;
                            best_index = i as i64;
                        }
                        out.push(best);
                        indices.push(best_index);
                    }
                }
            }
            Ok((rows.assemble(out, rows.len, true)?, rows.assemble(indices, rows.len, true)?))
        })
    }

    /// `logcumsumexp(dim)`: floating dtypes only.
    pub fn logcumsumexp(&self, dim: i64) -> Result<Tensor> {
        if !self.dtype().is_floating_point() {
            return Err(TensorError::NotImplementedForDType {
                op: "logcumsumexp_out_cpu",
                dtype: self.dtype(),
            });
        }
        let rows = AlongDim::new(self, dim)?;
        let values = rows.values::<f64>(self)?;
        let mut out = Vec::with_capacity(values.len());
        if rows.len > 0 {
            for row in values.chunks(rows.len) {
                let mut acc = f64::NEG_INFINITY;
                for &x in row {
                    acc = log_add_exp(acc, x);
                    out.push(acc);
                }
            }
        }
        Ok(rows.assemble(out, rows.len, true)?.to_dtype(self.dtype()))
    }

    /// `msort`: sorted along the first dimension.
    pub fn msort(&self) -> Result<Tensor> {
        Ok(self.sort(0, false)?.0)
    }

    /// `argwhere`: the coordinates of the nonzero elements, `[n, ndim]` int64.
    pub fn argwhere(&self) -> Result<Tensor> {
        self.nonzero()
    }

    /// `std_mean`/`var_mean` over `dims` (empty = all): (std or var, mean).
    pub fn moments(
        &self,
        dims: &[i64],
        correction: f64,
        keepdim: bool,
        take_sqrt: bool,
    ) -> Result<(Tensor, Tensor)> {
        if !self.dtype().is_floating_point() && !self.dtype().is_complex() {
            let name = if take_sqrt { "std_mean" } else { "var_mean" };
            return Err(invalid(format!(
                "{name} only support floating point and complex dtypes"
            )));
        }
        let spread = self.var_std(dims, correction, keepdim, take_sqrt)?;
        let mean = self.mean_dim(dims, keepdim, None)?;
        Ok((spread, mean))
    }

    /// `nanmedian()`: the lower median of the non-NaN elements (NaN when all are NaN).
    pub fn nanmedian_all(&self) -> Result<Tensor> {
        if self.dtype() == DType::Bool || self.dtype().is_complex() {
            return Err(TensorError::NotImplementedForDType {
                op: "median_cpu",
                dtype: self.dtype(),
            });
        }
        if self.numel() == 0 {
            // NaN converted to an integer type gives its minimum, as in PyTorch's CPU kernel.
            let fill = match self.dtype() {
                DType::Int64 => Scalar::Int(i64::MIN),
                DType::Int32 => Scalar::Int(i64::from(i32::MIN)),
                DType::Int16 => Scalar::Int(i64::from(i16::MIN)),
                DType::Int8 => Scalar::Int(i64::from(i8::MIN)),
                DType::UInt8 => Scalar::Int(0),
                _ => Scalar::Float(f64::NAN),
            };
            return Tensor::full(&[], fill, self.dtype());
        }
        Ok(self.reshape(&[-1])?.nanmedian_dim(0, false)?.0)
    }

    /// `nanmedian(dim, keepdim)`: the lower median of each row's non-NaN values and its index;
    /// a row of NaN only gives NaN at index 0.
    pub fn nanmedian_dim(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        if self.dtype() == DType::Bool || self.dtype().is_complex() {
            return Err(TensorError::NotImplementedForDType {
                op: "median_out",
                dtype: self.dtype(),
            });
        }
        let rows = AlongDim::new(self, dim)?;
        if rows.len == 0 && self.dim() > 0 {
            return Err(invalid(format!(
                "median(): Expected reduction dim {} to have non-zero size.",
                rows.dim
            )));
        }
        dispatch_dtype!(self.dtype(), T => {
            let values = rows.values::<T>(self)?;
            let mut out = Vec::with_capacity(rows.rows());
            let mut indices = Vec::with_capacity(rows.rows());
            for row in values.chunks(rows.len.max(1)).take(rows.rows()) {
                let mut order: Vec<usize> = (0..row.len()).filter(|&i| !is_nan(row[i])).collect();
                if order.is_empty() {
                    out.push(row[0]);
                    indices.push(0i64);
                    continue;
                }
                order.sort_by(|&a, &b| nan_last(row[a], row[b]));
                let pick = order[(order.len() - 1) / 2];
                out.push(row[pick]);
                indices.push(pick as i64);
            }
            Ok((rows.assemble(out, 1, keepdim)?, rows.assemble(indices, 1, keepdim)?))
        })
    }

    /// `mode(dim, keepdim)`: each row's most frequent value (the smallest among ties) and the
    /// last index where it occurs. NaNs never equal each other, so each counts once.
    pub fn mode(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        refuse_complex("mode_cpu", self.dtype())?;
        let rows = AlongDim::new(self, dim)?;
        if rows.len == 0 && self.dim() > 0 {
            return Err(invalid(format!(
                "mode(): Expected reduction dim {} to have non-zero size.",
                rows.dim
            )));
        }
        dispatch_dtype!(self.dtype(), T => {
            let values = rows.values::<T>(self)?;
            let mut out = Vec::with_capacity(rows.rows());
            let mut indices = Vec::with_capacity(rows.rows());
            for row in values.chunks(rows.len.max(1)).take(rows.rows()) {
                let mut order: Vec<usize> = (0..row.len()).collect();
                // Equal values keep their index order, so a run ends at its last index.
                order.sort_by(|&a, &b| nan_last(row[a], row[b]).then(a.cmp(&b)));
                let (mut best_value, mut best_index, mut best_count) = (row[order[0]], order[0], 0usize);
                let mut start = 0;
                while start < order.len() {
                    let mut end = start + 1;
                    while end < order.len() && row[order[end]] == row[order[start]] {
                        end += 1;
                    }
                    if end - start > best_count {
                        best_count = end - start;
                        best_value = row[order[start]];
                        best_index = order[end - 1];
                    }
                    start = end;
                }
                out.push(best_value);
                indices.push(best_index as i64);
            }
            Ok((rows.assemble(out, 1, keepdim)?, rows.assemble(indices, 1, keepdim)?))
        })
    }

    /// `quantile`/`nanquantile(q, dim, keepdim, interpolation)`. `q` is a 0-dim or 1-dim
    /// tensor of the input's dtype (a Python float becomes a 0-dim one); a 1-dim `q` adds a
    /// leading dimension to the result. `ignore_nan` drops NaNs (nanquantile); otherwise a
    /// NaN in a row makes its quantiles NaN.
    pub fn quantile(
        &self,
        q: &Tensor,
        dim: Option<i64>,
        keepdim: bool,
        interpolation: QuantileInterpolation,
        ignore_nan: bool,
    ) -> Result<Tensor> {
        let op = if ignore_nan {
            "nanquantile"
        } else {
            "quantile"
        };
        if self.numel() == 0 {
            return Err(invalid(format!("{op}() input tensor must be non-empty")));
        }
        if q.dim() > 1 {
            return Err(invalid(format!("{op}() q must be a scalar or 1D tensor")));
        }
        if !matches!(self.dtype(), DType::Float32 | DType::Float64) {
            return Err(invalid(format!(
                "{op}() input tensor must be either float or double dtype"
            )));
        }
        if q.dtype() != self.dtype() {
            return Err(invalid(format!(
                "{op}() q tensor must be same dtype as the input tensor"
            )));
        }
        let qs = q.to_f64_vec();
        for &value in &qs {
            if !(0.0..=1.0).contains(&value) {
                return Err(invalid(format!(
                    "{op}() q values must be in the range [0, 1]"
                )));
            }
        }
        let source = match dim {
            Some(_) => self.clone(),
            None => self.reshape(&[-1])?,
        };
        let rows = AlongDim::new(&source, dim.unwrap_or(0))?;
        let values = rows.values::<f64>(&source)?;
        let row_count = rows.rows();
        // Results q-major: out[qi * row_count + r].
        let mut out = vec![0.0f64; qs.len() * row_count];
        for (r, row) in values.chunks(rows.len.max(1)).take(row_count).enumerate() {
            let mut sorted = row.to_vec();
            sorted.sort_by(|a, b| nan_last(*a, *b));
            let valid = sorted.iter().filter(|x| !x.is_nan()).count();
            for (qi, &qv) in qs.iter().enumerate() {
                let value = if (ignore_nan && valid == 0) || (!ignore_nan && valid < sorted.len()) {
                    f64::NAN
                } else {
                    // PyTorch computes the rank in the input's dtype.
                    let rank = round_like(qv * (valid as f64 - 1.0), self.dtype());
                    let below = rank.floor();
                    let above = rank.ceil();
                    let low = sorted[below as usize];
                    let high = sorted[above as usize];
                    match interpolation {
                        QuantileInterpolation::Lower => low,
                        QuantileInterpolation::Higher => high,
                        // PyTorch's float32 result here matches the rank taken before
                        // rounding to float32 (0.1f * 5 goes to rank 1, not 0).
                        QuantileInterpolation::Nearest => {
                            sorted[(qv * (valid as f64 - 1.0)).round_ties_even() as usize]
                        }
                        QuantileInterpolation::Midpoint => lerp(low, high, 0.5),
                        QuantileInterpolation::Linear => {
                            lerp(low, high, round_like(rank - below, self.dtype()))
                        }
                    }
                };
                out[qi * row_count + r] = value;
            }
        }
        // Place each q's block back as the reduced tensor, then stack the q's in front.
        let mut blocks = Vec::with_capacity(qs.len());
        for qi in 0..qs.len() {
            let block = out[qi * row_count..(qi + 1) * row_count].to_vec();
            let reduced = rows.assemble(block, 1, keepdim && dim.is_some())?;
            let reduced = if keepdim && dim.is_none() {
                reduced.reshape(&vec![1i64; self.dim()])?
            } else {
                reduced
            };
            blocks.push(reduced);
        }
        let result = if q.dim() == 0 {
            blocks.remove(0)
        } else {
            crate::ops::join::stack(&blocks, 0)?
        };
        Ok(result.to_dtype(self.dtype()))
    }

    /// `cov(correction, fweights, aweights)`: the covariance of the rows (variables) of a 1-D
    /// or 2-D input whose columns are observations.
    pub fn cov(
        &self,
        correction: i64,
        frequency_weights: Option<&Tensor>,
        analytic_weights: Option<&Tensor>,
    ) -> Result<Tensor> {
        if self.dim() > 2 {
            return Err(invalid(format!(
                "cov(): expected input to have two or fewer dimensions but got an input with {} dimensions",
                self.dim()
            )));
        }
        let input = if self.dim() < 2 {
            self.reshape(&[1, -1])?
        } else {
            self.clone()
        };
        let variables = input.sizes()[0];
        let observations = input.sizes()[1];
        let check_weights = |weights: &Tensor, name: &str| -> Result<Vec<f64>> {
            if weights.dim() > 1 {
                return Err(invalid(format!(
                    "cov(): expected {name} to have one or fewer dimensions but got {name} with {} dimensions",
                    weights.dim()
                )));
            }
            if weights.numel() != observations {
                return Err(invalid(format!(
                    "cov(): expected {name} to have the same numel as there are observations in the input but got {} != {}",
                    weights.numel(),
                    observations
                )));
            }
            Ok(weights.to_f64_vec())
        };
        let mut weights: Option<Vec<f64>> = None;
        let mut analytic: Option<Vec<f64>> = None;
        if let Some(fw) = frequency_weights {
            if !fw.dtype().is_integral(false) {
                return Err(invalid(format!(
                    "cov(): expected fweights to have integral dtype but got fweights with {} dtype",
                    fw.dtype().scalar_type_name()
                )));
            }
            let values = check_weights(fw, "fweights")?;
            if values.iter().any(|&v| v < 0.0) {
                return Err(invalid("cov(): fweights cannot be negative"));
            }
            weights = Some(values);
        }
        if let Some(aw) = analytic_weights {
            if !aw.dtype().is_floating_point() {
                return Err(invalid(format!(
                    "cov(): expected aweights to have floating point dtype but got aweights with {} dtype",
                    aw.dtype().scalar_type_name()
                )));
            }
            let values = check_weights(aw, "aweights")?;
            if values.iter().any(|&v| v < 0.0) {
                return Err(invalid("cov(): aweights cannot be negative"));
            }
            weights = Some(match weights {
                Some(w) => w.iter().zip(&values).map(|(a, b)| a * b).collect(),
                None => values.clone(),
            });
            analytic = Some(values);
        }
        let out_dtype = if self.dtype().is_floating_point() {
            self.dtype()
        } else {
            DType::default_float()
        };
        let w = weights.unwrap_or_else(|| vec![1.0; observations]);
        let w_sum: f64 = w.iter().sum();
        let data = input.to_f64_vec();
        let row = |i: usize| &data[i * observations..(i + 1) * observations];
        let means: Vec<f64> = (0..variables)
            .map(|i| row(i).iter().zip(&w).map(|(x, wi)| x * wi).sum::<f64>() / w_sum)
            .collect();
        let norm_factor = if correction == 0 {
            w_sum
        } else if let Some(a) = &analytic {
            let weighted: f64 = w.iter().zip(a).map(|(wi, ai)| wi * ai).sum();
            w_sum - correction as f64 * weighted / w_sum
        } else {
            w_sum - correction as f64
        };
        let norm_factor = if norm_factor <= 0.0 { 0.0 } else { norm_factor };
        let mut out = vec![0.0f64; variables * variables];
        for i in 0..variables {
            for j in 0..variables {
                let s: f64 = (0..observations)
                    .map(|k| (row(i)[k] - means[i]) * w[k] * (row(j)[k] - means[j]))
                    .sum();
                out[i * variables + j] = s / norm_factor;
            }
        }
        // PyTorch squeezes the result: one variable gives a 0-dim tensor.
        Ok(Tensor::from_values(out, &[variables, variables])
            .to_dtype(out_dtype)
            .squeeze())
    }

    /// `corrcoef`: Pearson's correlation of the rows, clipped to [-1, 1].
    pub fn corrcoef(&self) -> Result<Tensor> {
        if self.dim() > 2 {
            return Err(invalid(format!(
                "corrcoef(): expected input to have two or fewer dimensions but got an input with {} dimensions",
                self.dim()
            )));
        }
        let c = self.cov(1, None, None)?;
        if c.dim() == 0 {
            // A single variable: c / c, NaN for a zero or NaN variance.
            let v = c.to_f64_vec()[0];
            let ratio = if v.is_finite() && v != 0.0 {
                1.0
            } else {
                f64::NAN
            };
            return Ok(Tensor::from_values(vec![ratio], &[]).to_dtype(c.dtype()));
        }
        let n = c.sizes()[0];
        let values = c.to_f64_vec();
        let diagonal: Vec<f64> = (0..n).map(|i| values[i * n + i].sqrt()).collect();
        let mut out = vec![0.0f64; n * n];
        for i in 0..n {
            for j in 0..n {
                let r = values[i * n + j] / diagonal[i] / diagonal[j];
                out[i * n + j] = if r.is_nan() { r } else { r.clamp(-1.0, 1.0) };
            }
        }
        Ok(Tensor::from_values(out, &[n, n]).to_dtype(c.dtype()))
    }
}

/// ATen's log-add-exp step of logcumsumexp: `log(exp(x) + exp(y))`, stable for infinities.
fn log_add_exp(x: f64, y: f64) -> f64 {
    let (min, max) = if y.is_nan() {
        (y, y)
    } else {
        (x.min(y), x.max(y))
    };
    if x.is_nan() {
        return x;
    }
    if min != max || min.is_finite() {
        (min - max).exp().ln_1p() + max
    } else {
        x
    }
}

/// `value` rounded to `dtype`'s precision (float32 arithmetic where PyTorch uses it).
fn round_like(value: f64, dtype: DType) -> f64 {
    if dtype == DType::Float32 {
        value as f32 as f64
    } else {
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cummax_keeps_the_first_nan_and_moves_ties_forward() {
        let x = Tensor::from_vec(vec![1.0f32, 1.0, f32::NAN, 5.0], &[4]).unwrap();
        let (values, indices) = x.cumulative_extreme(0, true).unwrap();
        let v = values.to_f64_vec();
        assert_eq!(&v[..2], &[1.0, 1.0]);
        assert!(v[2].is_nan() && v[3].is_nan());
        assert_eq!(indices.to_i64_vec(), vec![0, 1, 2, 2]);
    }

    #[test]
    fn quantile_refuses_q_outside_the_unit_interval() {
        let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
        let q = Tensor::from_vec(vec![1.5f32], &[1]).unwrap();
        let error = x
            .quantile(&q, None, false, QuantileInterpolation::Linear, false)
            .unwrap_err();
        assert!(error.to_string().contains("[0, 1]"), "{error}");
    }
}
