//! Closeness tests, `threshold`, sorted-sequence search (`searchsorted`, `bucketize`),
//! index-wise updates (`index_add`, `index_fill`), `take_along_dim` and `rms_norm`. They
//! follow ATen's implementations (TensorCompare.cpp, Activation.cpp, Bucketization.cpp,
//! TensorAdvancedIndexing.cpp, layer_norm.cpp): the same check order, messages and dtypes.

use std::cmp::Ordering;

use crate::dtype::{DType, Scalar};
use crate::error::{format_shape, Result, TensorError};
use crate::ops::binary::BinaryOp;
use crate::ops::pointwise::UnaryOp;
use crate::shape::{broadcast_shapes, wrap_dim};
use crate::tensor::Tensor;

/// A `RuntimeError` with PyTorch's message.
fn invalid(message: String) -> TensorError {
    TensorError::InvalidArgument(message)
}

/// Formats a double as C++'s default stream output does for the values users pass as
/// tolerances (`-1`, `0.5`, `1e-05`): shortest form, integers without a fraction.
fn cxx_double(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e6 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

/// The sorted-sequence search of one element, as ATen's `cus_lower_bound` /
/// `cus_upper_bound`: the negated predicates make NaN placement identical.
fn bound<T: Copy + PartialOrd>(row: &[T], sorter: Option<&[i64]>, value: T, right: bool) -> i64 {
    let (mut start, mut end) = (0usize, row.len());
    while start < end {
        let mid = start + ((end - start) >> 1);
        let mid_value = match sorter {
            Some(order) => row[order[mid] as usize],
            None => row[mid],
        };
        // `!(mid > value)` / `!(mid >= value)`: an incomparable (NaN) pair goes right.
        let go_right = match mid_value.partial_cmp(&value) {
            Some(Ordering::Greater) => false,
            Some(Ordering::Equal) => right,
            _ => true,
        };
        if go_right {
            start = mid + 1;
        } else {
            end = mid;
        }
    }
    start as i64
}

impl Tensor {
    /// `isclose`: `|self - other| <= atol + rtol * |other|` (or exact equality, or both NaN
    /// with `equal_nan`), computed with tensor ops in the operands' dtype as ATen does.
    pub fn isclose(&self, other: &Tensor, rtol: f64, atol: f64, equal_nan: bool) -> Result<Tensor> {
        if self.dtype() != other.dtype() {
            return Err(invalid(format!(
                "{} did not match {}",
                self.dtype().scalar_type_name(),
                other.dtype().scalar_type_name()
            )));
        }
        if rtol < 0.0 {
            return Err(invalid(format!(
                "rtol must be greater than or equal to zero, but got {}",
                cxx_double(rtol)
            )));
        }
        if atol < 0.0 {
            return Err(invalid(format!(
                "atol must be greater than or equal to zero, but got {}",
                cxx_double(atol)
            )));
        }
        let mut close = self.eq(other)?;
        if equal_nan && self.dtype().is_floating_point() {
            let both_nan = self
                .ne(self)?
                .binary(&other.ne(other)?, BinaryOp::LogicalAnd)?;
            close = close.binary(&both_nan, BinaryOp::LogicalOr)?;
        }
        if rtol == 0.0 && atol == 0.0 {
            return Ok(close);
        }
        let as_number = |t: &Tensor| {
            if t.dtype() == DType::Bool {
                t.to_dtype(DType::default_float())
            } else {
                t.clone()
            }
        };
        let (cast_self, cast_other) = (as_number(self), as_number(other));
        let allowed = Tensor::wrapped_scalar(Scalar::Float(rtol))
            .mul(&cast_other)?
            .abs()?
            .add(
                &Tensor::wrapped_scalar(Scalar::Float(atol)),
                &Scalar::Int(1),
            )?;
        let actual = cast_self.sub(&cast_other, &Scalar::Int(1))?.abs()?;
        // x - x is 0 exactly when x is finite (NaN and ±inf give NaN).
        let finite = actual
            .sub(&actual, &Scalar::Int(1))?
            .eq(&Tensor::wrapped_scalar(Scalar::Int(0)))?;
        let within = finite.binary(&actual.le(&allowed)?, BinaryOp::LogicalAnd)?;
        close.binary(&within, BinaryOp::LogicalOr)
    }

    /// `allclose`: every element `isclose`.
    pub fn allclose(&self, other: &Tensor, rtol: f64, atol: f64, equal_nan: bool) -> Result<bool> {
        let close = self.isclose(other, rtol, atol, equal_nan)?;
        Ok(close.to_i64_vec().iter().all(|&v| v != 0))
    }

    /// `equal`: same sizes and every element equal (values compared after promotion, so
    /// NaN is never equal to itself).
    pub fn equal(&self, other: &Tensor) -> Result<bool> {
        if self.sizes() != other.sizes() {
            return Ok(false);
        }
        let same = self.eq(other)?;
        Ok(same.to_i64_vec().iter().all(|&v| v != 0))
    }

    /// `threshold`: `value` where `self <= threshold`, else `self`; both scalars are
    /// converted to the input's dtype first and the result keeps it.
    pub fn threshold(&self, threshold: &Scalar, value: &Scalar) -> Result<Tensor> {
        if self.dtype() == DType::Bool {
            return Err(TensorError::NotImplementedForDType {
                op: "threshold_cpu",
                dtype: DType::Bool,
            });
        }
        let limit = Tensor::scalar_tensor(*threshold, self.dtype());
        let fill = Tensor::scalar_tensor(*value, self.dtype());
        let mask = self.le(&limit)?;
        Tensor::where_(&mask, &fill, self)
    }

    /// `searchsorted`: for every element of `values`, its insertion index in the matching
    /// row of `self` (the sorted sequence), optionally through `sorter`. Comparisons run in
    /// the promoted dtype of the two tensors; the result is int64 (or int32).
    pub fn searchsorted(
        &self,
        values: &Tensor,
        out_int32: bool,
        right: bool,
        side: Option<&str>,
        sorter: Option<&Tensor>,
    ) -> Result<Tensor> {
        let boundaries = self;
        let mut right = right;
        if let Some(side) = side {
            if side != "left" && side != "right" {
                return Err(invalid(format!(
                    "torch.searchsorted(): side can only be 'left' or 'right' but got {side}"
                )));
            }
            if right && side != "right" {
                return Err(invalid(format!(
                    "torch.searchsorted(): side and right can't be set to opposites, got side of {side} while right was True"
                )));
            }
            right = side == "right";
        }
        let mut order = None;
        if let Some(sorter) = sorter {
            if sorter.sizes() != boundaries.sizes() {
                return Err(invalid(format!(
                    "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor {}and got sorter tensor {}",
                    format_shape(boundaries.sizes()),
                    format_shape(sorter.sizes())
                )));
            }
            if sorter.dtype() != DType::Int64 {
                return Err(invalid(format!(
                    "torch.searchsorted(): sorter must be a tensor of long dtype but got dtype {}",
                    sorter.dtype().scalar_type_name()
                )));
            }
            let indices = sorter.to_i64_vec();
            let last = boundaries.sizes().last().copied().unwrap_or(1) as i64;
            if indices.iter().any(|&i| i < 0 || i >= last) {
                return Err(invalid(
                    "torch.searchsorted(): sorter index out of range".into(),
                ));
            }
            order = Some(indices);
        }
        if !(values.dim() > 0 || (values.numel() == 1 && boundaries.dim() == 1)) {
            return Err(invalid(format!(
                "torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension is 1, but we got boundaries tensor dim({}) and input value's dim({}) numel({})",
                boundaries.dim(),
                values.dim(),
                values.numel()
            )));
        }
        if boundaries.dim() == 0 {
            return Err(invalid(
                "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension".into(),
            ));
        }
        let leading_match = boundaries.dim() == values.dim()
            && boundaries.sizes()[..boundaries.dim() - 1] == values.sizes()[..values.dim() - 1];
        if boundaries.dim() != 1 && !leading_match {
            return Err(invalid(format!(
                "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor {} and input value tensor {}",
                format_shape(boundaries.sizes()),
                format_shape(values.sizes())
            )));
        }
        let common = crate::promotion::result_type(&[boundaries, values]);
        let row_len = boundaries.sizes().last().copied().unwrap_or(1);
        let value_row = if boundaries.dim() == 1 {
            usize::MAX
        } else {
            values.sizes().last().copied().unwrap_or(1).max(1)
        };
        let row_of = |i: usize| {
            if value_row == usize::MAX {
                0
            } else {
                i / value_row
            }
        };
        let found: Vec<i64> = if common.is_floating_point() {
            let bd = boundaries.to_dtype(common).to_f64_vec();
            let vs = values.to_dtype(common).to_f64_vec();
            search_rows(&bd, &vs, row_len, order.as_deref(), right, row_of)
        } else {
            let bd = boundaries.to_dtype(common).to_i64_vec();
            let vs = values.to_dtype(common).to_i64_vec();
            search_rows(&bd, &vs, row_len, order.as_deref(), right, row_of)
        };
        let result = Tensor::from_vec(found, values.sizes())?;
        Ok(if out_int32 {
            result.to_dtype(DType::Int32)
        } else {
            result
        })
    }

    /// `bucketize`: `searchsorted` with the arguments swapped and 1-D boundaries only.
    pub fn bucketize(&self, boundaries: &Tensor, out_int32: bool, right: bool) -> Result<Tensor> {
        if boundaries.dim() != 1 {
            return Err(invalid(format!(
                "boundaries tensor must be 1 dimension, but got dim({})",
                boundaries.dim()
            )));
        }
        boundaries.searchsorted(self, out_int32, right, None, None)
    }

    /// `index_add`: a copy of `self` with `alpha * source[i]` added to slice `index[i]`
    /// along `dim` (indices must be in range, negative ones too are refused).
    pub fn index_add(
        &self,
        dim: i64,
        index: &Tensor,
        source: &Tensor,
        alpha: &Scalar,
    ) -> Result<Tensor> {
        let d = wrap_dim(dim, self.dim())?;
        let numel = index.numel();
        if index.dim() > 1 {
            return Err(invalid(
                "index_add_(): Index is supposed to be a vector".into(),
            ));
        }
        if index.dtype() != DType::Int64 && index.dtype() != DType::Int32 {
            return Err(invalid(format!(
                "index_add_(): Expected dtype int32/int64 for index but got: {}",
                index.dtype().scalar_type_name()
            )));
        }
        if self.dtype() != source.dtype() {
            return Err(invalid(format!(
                "index_add_(): self ({}) and source ({}) must have the same scalar type",
                self.dtype().scalar_type_name(),
                source.dtype().scalar_type_name()
            )));
        }
        if !(d == 0 || d < source.dim()) {
            return Err(invalid(format!(
                "index_add_(): Indexing dim {d} is out of bounds of the source tensor with dim {}",
                source.dim()
            )));
        }
        let source_len = if source.dim() == 0 {
            1
        } else {
            source.sizes()[d]
        };
        if numel != source_len {
            return Err(invalid(format!(
                "index_add_(): Number of indices ({numel}) should be equal to source.size(dim): ({source_len}), for dim: {d}"
            )));
        }
        let (mut self_sizes, mut source_sizes) = (self.sizes().to_vec(), source.sizes().to_vec());
        if self.dim() != 0 && source.dim() != 0 {
            self_sizes.remove(d);
            source_sizes.remove(d);
        }
        if self_sizes != source_sizes && !(self.dim() == 0 || source.dim() == 0) {
            return Err(invalid(format!(
                "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = {} source.shape = {}",
                format_shape(self.sizes()),
                format_shape(source.sizes())
            )));
        }
        let result = self.clone_tensor();
        let target = if result.dim() == 0 {
            result.view(&[1])?
        } else {
            result.clone()
        };
        let source = if source.dim() == 0 {
            source.view(&[1])?
        } else {
            source.clone()
        };
        let limit = target.sizes()[d] as i64;
        for (i, idx) in index.to_i64_vec().into_iter().enumerate() {
            if idx < 0 || idx >= limit {
                return Err(invalid("index out of range in self".into()));
            }
            target
                .select(d as i64, idx)?
                .add_(&source.select(d as i64, i as i64)?, alpha)?;
        }
        Ok(result)
    }

    /// `index_fill`: a copy of `self` with every slice `index[i]` along `dim` set to `value`
    /// (negative indices count from the end).
    pub fn index_fill(&self, dim: i64, index: &Tensor, value: &Scalar) -> Result<Tensor> {
        if index.dtype() != DType::Int64 {
            return Err(invalid(
                "index_fill_(): Expected dtype int64 for index.".into(),
            ));
        }
        let d = wrap_dim(dim, self.dim())?;
        if index.dim() > 1 {
            return Err(invalid("Index has to be a vector/scalar".into()));
        }
        let result = self.clone_tensor();
        let target = if result.dim() == 0 {
            result.view(&[1])?
        } else {
            result.clone()
        };
        let size = target.sizes()[d] as i64;
        for idx in index.to_i64_vec() {
            if idx < -size || idx >= size {
                return Err(invalid(format!(
                    "index {idx} is out of bounds for dimension {d} with size {size}"
                )));
            }
            let idx = if idx < 0 { idx + size } else { idx };
            target.select(d as i64, idx)?.fill_(value)?;
        }
        Ok(result)
    }

    /// `index_fill.int_Tensor`: the value must be a 0-dim tensor; its item is the fill.
    pub fn index_fill_tensor(&self, dim: i64, index: &Tensor, value: &Tensor) -> Result<Tensor> {
        if value.dim() != 0 {
            return Err(invalid(format!(
                "index_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                value.dim()
            )));
        }
        self.index_fill(dim, index, &value.item()?)
    }

    /// `take_along_dim`: `gather` after broadcasting `self` and `indices` against each
    /// other except along `dim`; without a dim, both are flattened (`self` by `view`).
    pub fn take_along_dim(&self, indices: &Tensor, dim: Option<i64>) -> Result<Tensor> {
        if indices.dtype() != DType::Int64 {
            return Err(invalid(format!(
                "torch.take_along_dim(): dtype of indices should be Long but got {}",
                indices.dtype().scalar_type_name()
            )));
        }
        let Some(dim) = dim else {
            return self.view(&[-1])?.gather_index(0, &indices.reshape(&[-1])?);
        };
        if self.dim() != indices.dim() {
            return Err(invalid(format!(
                "torch.take_along_dim(): input and indices should have the same number of dimensions, but got {} dimensions for input, and {} dimensions for indices",
                self.dim(),
                indices.dim()
            )));
        }
        let d = wrap_dim(dim, self.dim())?;
        if self.dim() == 0 {
            return self.gather_index(0, indices);
        }
        let mut self_sizes = self.sizes().to_vec();
        self_sizes[d] = indices.sizes()[d];
        let shape = broadcast_shapes(&self_sizes, indices.sizes())?;
        let indices_b = indices.broadcast_to(&shape)?;
        let mut indices_sizes = indices.sizes().to_vec();
        indices_sizes[d] = self.sizes()[d];
        let shape = broadcast_shapes(&indices_sizes, self.sizes())?;
        let self_b = self.broadcast_to(&shape)?;
        self_b.gather_index(d as i64, &indices_b)
    }

    /// `rms_norm`: `x * rsqrt(mean(x^2 over the trailing normalized dims) + eps)` in the
    /// op-math dtype (float for half types), cast back, then times `weight`. The default
    /// eps is the op-math dtype's machine epsilon.
    pub fn rms_norm(
        &self,
        normalized_shape: &[i64],
        weight: Option<&Tensor>,
        eps: Option<f64>,
    ) -> Result<Tensor> {
        let shape_text = |s: &[i64]| {
            let items: Vec<String> = s.iter().map(i64::to_string).collect();
            items.join(", ")
        };
        if normalized_shape.is_empty() {
            return Err(invalid(format!(
                "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = [{}]",
                shape_text(normalized_shape)
            )));
        }
        if let Some(weight) = weight {
            let matches = weight.dim() == normalized_shape.len()
                && weight
                    .sizes()
                    .iter()
                    .zip(normalized_shape)
                    .all(|(&a, &b)| a as i64 == b);
            if !matches {
                return Err(invalid(format!(
                    "Expected weight to be of same shape as normalized_shape, but got weight of shape {} and normalized_shape = [{}]",
                    format_shape(weight.sizes()),
                    shape_text(normalized_shape)
                )));
            }
        }
        let n = self.dim();
        let k = normalized_shape.len();
        let tail_matches = n >= k
            && self.sizes()[n - k..]
                .iter()
                .zip(normalized_shape)
                .all(|(&a, &b)| a as i64 == b);
        if !tail_matches {
            return Err(invalid(format!(
                "Given normalized_shape=[{0}], expected input with shape [*{0}], but got input of size{1}",
                shape_text(normalized_shape),
                format_shape(self.sizes())
            )));
        }
        let opmath = match self.dtype() {
            DType::Float64 => DType::Float64,
            DType::Float32 | DType::Float16 | DType::BFloat16 => DType::Float32,
            other => {
                return Err(TensorError::NotImplementedForDType {
                    op: "rms_norm",
                    dtype: other,
                })
            }
        };
        // eps is stored in the input's scalar type before it is added (ATen's `scalar_t`).
        let eps = match eps {
            Some(e) => e,
            None if opmath == DType::Float64 => f64::EPSILON,
            None => f32::EPSILON as f64,
        };
        let eps = Tensor::scalar_tensor(Scalar::Float(eps), self.dtype()).to_f64_vec()[0];
        let dims: Vec<i64> = (0..k).map(|i| (n - i - 1) as i64).collect();
        let x = self.to_dtype(opmath);
        let mean = x
            .pow_scalar(&Scalar::Int(2))?
            .mean_dim(&dims, true, None)?
            .add(&Tensor::wrapped_scalar(Scalar::Float(eps)), &Scalar::Int(1))?;
        let result = x.mul(&mean.unary(UnaryOp::Rsqrt)?)?.to_dtype(self.dtype());
        match weight {
            Some(weight) => result.mul(weight),
            None => Ok(result),
        }
    }
}

/// Runs the bound search of every value against its row of the flattened boundaries.
fn search_rows<T: Copy + PartialOrd>(
    boundaries: &[T],
    values: &[T],
    row_len: usize,
    sorter: Option<&[i64]>,
    right: bool,
    row_of: impl Fn(usize) -> usize,
) -> Vec<i64> {
    values
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let row = row_of(i);
            let range = row * row_len..(row + 1) * row_len;
            let order = sorter.map(|s| &s[range.clone()]);
            bound(&boundaries[range], order, v, right)
        })
        .collect()
}
