//! Writes and reductions into chosen positions: index_reduce (prod, mean, amax, amin, with
//! or without the existing values), index_copy, put (flat positions, optionally
//! accumulating) and segment_reduce (runs of consecutive values given by lengths or
//! offsets).

use crate::dtype::{DType, Scalar};
use crate::error::{Result, TensorError};
use crate::shape::wrap_dim;
use crate::tensor::Tensor;

fn invalid(message: impl Into<String>) -> TensorError {
    TensorError::InvalidArgument(message.into())
}

/// A tensor with one dimension moved first, viewed as `count` slices of `width` values.
struct Slices {
    /// Sizes after the move (the chosen dimension first).
    moved_sizes: Vec<usize>,
    /// The permutation that moved it.
    order: Vec<i64>,
    count: usize,
    width: usize,
}

impl Slices {
    fn new(tensor: &Tensor, dim: usize) -> Slices {
        let order: Vec<i64> = if tensor.dim() == 0 {
            Vec::new()
        } else {
            std::iter::once(dim as i64)
                .chain((0..tensor.dim() as i64).filter(|&i| i != dim as i64))
                .collect()
        };
        let moved_sizes: Vec<usize> = order.iter().map(|&i| tensor.sizes()[i as usize]).collect();
        let count = moved_sizes.first().copied().unwrap_or(1);
        let width = moved_sizes.iter().skip(1).product();
        Slices {
            moved_sizes,
            order,
            count,
            width,
        }
    }

    fn gather(&self, tensor: &Tensor) -> Result<Vec<f64>> {
        if self.order.is_empty() {
            return Ok(tensor.to_f64_vec());
        }
        Ok(tensor.permute(&self.order)?.to_f64_vec())
    }

    fn gather_i64(&self, tensor: &Tensor) -> Result<Vec<i64>> {
        if self.order.is_empty() {
            return Ok(tensor.to_i64_vec());
        }
        Ok(tensor.permute(&self.order)?.to_i64_vec())
    }

    /// Values laid out as the moved tensor, put back in the original order.
    fn scatter_back(&self, values: Vec<f64>, dtype: DType) -> Result<Tensor> {
        let moved = crate::ops::nn::from_f64(values, &self.moved_sizes, dtype);
        self.restore(moved)
    }

    fn scatter_back_i64(&self, values: Vec<i64>, dtype: DType) -> Result<Tensor> {
        let moved = Tensor::from_values(values, &self.moved_sizes).to_dtype(dtype);
        self.restore(moved)
    }

    fn restore(&self, moved: Tensor) -> Result<Tensor> {
        if self.order.is_empty() {
            return Ok(moved);
        }
        let mut inverse = vec![0i64; self.order.len()];
        for (position, &source) in self.order.iter().enumerate() {
            inverse[source as usize] = position as i64;
        }
        Ok(moved.permute(&inverse)?.contiguous())
    }
}

/// The reductions of `index_reduce`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexReduction {
    Prod,
    Mean,
    Amax,
    Amin,
}

impl IndexReduction {
    pub fn parse(name: &str) -> Result<IndexReduction> {
        Ok(match name {
            "prod" => IndexReduction::Prod,
            "mean" => IndexReduction::Mean,
            "amax" => IndexReduction::Amax,
            "amin" => IndexReduction::Amin,
            other => {
                return Err(invalid(format!(
                    "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {other}."
                )))
            }
        })
    }
}

/// The reductions of `segment_reduce`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentReduction {
    Sum,
    Mean,
    Max,
    Min,
    Prod,
}

impl SegmentReduction {
    pub fn parse(name: &str) -> Result<SegmentReduction> {
        Ok(match name {
            "sum" => SegmentReduction::Sum,
            "mean" => SegmentReduction::Mean,
            "max" => SegmentReduction::Max,
            "min" => SegmentReduction::Min,
            "prod" => SegmentReduction::Prod,
            other => {
                return Err(invalid(format!(
                    "reduce argument must be either sum, prod, mean, amax or amin, got {other}"
                )))
            }
        })
    }
}

/// Checks an index tensor of `op` and returns its entries wrapped into `0..size`.
fn checked_positions(op: &str, index: &Tensor, size: usize, dim: usize) -> Result<Vec<usize>> {
    index
        .to_i64_vec()
        .into_iter()
        .map(|i| {
            let wrapped = if i < 0 { i + size as i64 } else { i };
            if wrapped < 0 || wrapped >= size as i64 {
                Err(invalid(format!(
                    "{op}(): index {i} is out of bounds for dimension {dim} with size {size}"
                )))
            } else {
                Ok(wrapped as usize)
            }
        })
        .collect()
}

/// The source of `index_copy`/`index_reduce` must be shaped like `self` except at `dim`,
/// where it has one slice per index.
fn check_source_shape(
    op: &str,
    target: &Tensor,
    source: &Tensor,
    dim: usize,
    n: usize,
) -> Result<()> {
    let mut expected: Vec<usize> = target.sizes().to_vec();
    if !expected.is_empty() {
        expected[dim] = n;
    }
    let source_sizes: Vec<usize> = source.sizes().to_vec();
    let matches = source_sizes == expected
        || (source.dim() == 0 && n == 1 && target.dim() <= 1)
        || (target.dim() == 0 && source.numel() == n);
    if !matches {
        return Err(invalid(format!(
            "{op}(): Source/destination tensor must have same slice shapes. Destination slice shape: {:?} at dimension {dim} and source slice shape: {:?} at dimension 0.",
            target.sizes(),
            source.sizes()
        )));
    }
    Ok(())
}

impl Tensor {
    /// `index_reduce(dim, index, source, reduce, include_self)`: combines each slice
    /// `source[i]` into `self[index[i]]` along `dim` with `reduce`; without `include_self`
    /// the indexed slices of `self` do not take part.
    pub fn index_reduce(
        &self,
        dim: i64,
        index: &Tensor,
        source: &Tensor,
        reduce: IndexReduction,
        include_self: bool,
    ) -> Result<Tensor> {
        let d = wrap_dim(dim, self.dim())?;
        if !matches!(index.dtype(), DType::Int64 | DType::Int32) {
            return Err(invalid(format!(
                "index_reduce_(): Expected dtype int32/int64 for index but got: {}",
                index.dtype().scalar_type_name()
            )));
        }
        if index.dim() > 1 {
            return Err(invalid("index_reduce_(): Index is supposed to be a vector"));
        }
        if self.dtype() != source.dtype() {
            return Err(invalid(format!(
                "index_reduce_(): self ({}) and source ({}) must have the same scalar type",
                self.dtype().scalar_type_name(),
                source.dtype().scalar_type_name()
            )));
        }
        if self.dtype() == DType::Bool || self.dtype().is_complex() {
            return Err(TensorError::NotImplementedForDType {
                op: "index_reduce_func_exclude_input_init",
                dtype: self.dtype(),
            });
        }
        let n = index.numel();
        check_source_shape("index_reduce_", self, source, d, n)?;
        let target = Slices::new(self, d);
        let positions = checked_positions("index_reduce_", index, target.count, d)?;
        let from = Slices::new(&source.reshape_like_slices(self, d, n)?, d);
        let width = target.width;
        let mut values = target.gather(self)?;
        let incoming = from.gather(&source.reshape_like_slices(self, d, n)?)?;
        let floating = self.dtype().is_floating_point();
        let (lowest, highest) = if floating {
            (f64::NEG_INFINITY, f64::INFINITY)
        } else {
            integer_limits(self.dtype())
        };
        if !include_self {
            let identity = match reduce {
                IndexReduction::Prod => 1.0,
                IndexReduction::Mean => 0.0,
                IndexReduction::Amax => lowest,
                IndexReduction::Amin => highest,
            };
            for &p in &positions {
                values[p * width..(p + 1) * width].fill(identity);
            }
        }
        let mut counts = vec![if include_self { 1.0 } else { 0.0 }; target.count];
        for (i, &p) in positions.iter().enumerate() {
            counts[p] += 1.0;
            for k in 0..width {
                let slot = &mut values[p * width + k];
                let x = incoming[i * width + k];
                *slot = match reduce {
                    IndexReduction::Prod => round_product(*slot * x, self.dtype()),
                    IndexReduction::Mean => *slot + x,
                    IndexReduction::Amax => {
                        if slot.is_nan() || x.is_nan() {
                            f64::NAN
                        } else {
                            slot.max(x)
                        }
                    }
                    IndexReduction::Amin => {
                        if slot.is_nan() || x.is_nan() {
                            f64::NAN
                        } else {
                            slot.min(x)
                        }
                    }
                };
            }
        }
        if reduce == IndexReduction::Mean {
            for (p, &count) in counts.iter().enumerate() {
                let count = if count == 0.0 { 1.0 } else { count };
                for slot in &mut values[p * width..(p + 1) * width] {
                    *slot = if floating {
                        *slot / count
                    } else {
                        (*slot / count).floor()
                    };
                }
            }
        }
        target.scatter_back(values, self.dtype())
    }

    /// `source` seen with the geometry `index_reduce`/`index_copy` expect (a 0-dim source of
    /// a 0/1-dim self becomes one slice).
    fn reshape_like_slices(&self, target: &Tensor, dim: usize, n: usize) -> Result<Tensor> {
        if target.dim() == 0 {
            return Ok(self.reshape(&[])?.clone());
        }
        if self.dim() == 0 {
            let mut sizes: Vec<i64> = target.sizes().iter().map(|&s| s as i64).collect();
            sizes[dim] = n as i64;
            return self.reshape(&sizes);
        }
        Ok(self.clone())
    }

    /// `index_copy(dim, index, source)`: `self` with slice `index[i]` along `dim` replaced
    /// by `source[i]` (the last write wins for a repeated index).
    pub fn index_copy(&self, dim: i64, index: &Tensor, source: &Tensor) -> Result<Tensor> {
        let d = wrap_dim(dim, self.dim())?;
        if index.dim() > 1 {
            return Err(invalid(format!(
                "index_copy_(): Index should have dimension 1 or 0 (got {})",
                index.dim()
            )));
        }
        if index.dtype() != DType::Int64 {
            return Err(invalid(format!(
                "index_copy_(): Expected a long tensor for index, but got {}",
                index.dtype().scalar_type_name()
            )));
        }
        if self.dtype() != source.dtype() {
            return Err(invalid(format!(
                "index_copy_(): self and source expected to have the same dtype, but got (self) {} and (source) {}",
                self.dtype().scalar_type_name(),
                source.dtype().scalar_type_name()
            )));
        }
        let n = index.numel();
        check_source_shape("index_copy_", self, source, d, n)?;
        let target = Slices::new(self, d);
        let positions = checked_positions("index_copy_", index, target.count, d)?;
        let source = source.reshape_like_slices(self, d, n)?;
        let from = Slices::new(&source, d);
        let width = target.width;
        // Integers travel as i64 so that int64 values beyond 2^53 stay exact.
        if self.dtype().is_floating_point() {
            let mut values = target.gather(self)?;
            let incoming = from.gather(&source)?;
            for (i, &p) in positions.iter().enumerate() {
                values[p * width..(p + 1) * width]
                    .copy_from_slice(&incoming[i * width..(i + 1) * width]);
            }
            target.scatter_back(values, self.dtype())
        } else if self.dtype().is_complex() {
            Err(TensorError::NotImplementedForDType {
                op: "index_copy_cpu",
                dtype: self.dtype(),
            })
        } else {
            let mut values = target.gather_i64(self)?;
            let incoming = from.gather_i64(&source)?;
            for (i, &p) in positions.iter().enumerate() {
                values[p * width..(p + 1) * width]
                    .copy_from_slice(&incoming[i * width..(i + 1) * width]);
            }
            target.scatter_back_i64(values, self.dtype())
        }
    }

    /// `put(index, source, accumulate)`: `self` seen flat, with `self[index[k]]` set to (or,
    /// accumulating, increased by) `source[k]`; negative indices count from the end.
    pub fn put(&self, index: &Tensor, source: &Tensor, accumulate: bool) -> Result<Tensor> {
        if index.dtype() != DType::Int64 {
            return Err(invalid(format!(
                "put_(): Expected a long tensor for index, but got {}",
                index.dtype().scalar_type_name()
            )));
        }
        if self.dtype() != source.dtype() {
            return Err(invalid(format!(
                "put_(): self and source expected to have the same dtype, but got self.dtype = {} and source.dtype = {}",
                self.dtype().scalar_type_name(),
                source.dtype().scalar_type_name()
            )));
        }
        if index.numel() != source.numel() {
            return Err(invalid(format!(
                "put_(): Expected source and index to have the same number of elements, but got source.numel() = {}, index.numel() = {}",
                source.numel(),
                index.numel()
            )));
        }
        if self.numel() == 0 && index.numel() > 0 {
            return Err(invalid(
                "put_(): Tried to put elements into an empty tensor",
            ));
        }
        let numel = self.numel() as i64;
        let positions: Vec<usize> = index
            .to_i64_vec()
            .into_iter()
            .map(|i| {
                if i < -numel || i >= numel {
                    Err(invalid(format!(
                        "out of range: tried to access index {i} on a tensor of {numel} elements."
                    )))
                } else {
                    Ok(if i < 0 { i + numel } else { i } as usize)
                }
            })
            .collect::<Result<_>>()?;
        if self.dtype().is_floating_point() || self.dtype() == DType::Bool {
            let mut values = self.to_f64_vec();
            for (k, x) in source.to_f64_vec().into_iter().enumerate() {
                let slot = &mut values[positions[k]];
                *slot = if accumulate { *slot + x } else { x };
            }
            if self.dtype() == DType::Bool {
                let flags: Vec<bool> = values.into_iter().map(|v| v != 0.0).collect();
                return Ok(Tensor::from_values(flags, self.sizes()));
            }
            Ok(crate::ops::nn::from_f64(values, self.sizes(), self.dtype()))
        } else if self.dtype().is_complex() {
            Err(TensorError::NotImplementedForDType {
                op: "put_cpu",
                dtype: self.dtype(),
            })
        } else {
            let mut values = self.to_i64_vec();
            for (k, x) in source.to_i64_vec().into_iter().enumerate() {
                let slot = &mut values[positions[k]];
                *slot = if accumulate { slot.wrapping_add(x) } else { x };
            }
            Ok(Tensor::from_values(values, self.sizes()).to_dtype(self.dtype()))
        }
    }

    /// `segment_reduce(data, reduce, lengths | offsets, axis, initial)`: reduces consecutive
    /// runs along `axis` whose lengths are given (or the differences of `offsets`); an
    /// empty run gives `initial`, or the reduction's identity (NaN for mean).
    pub fn segment_reduce(
        &self,
        reduce: SegmentReduction,
        lengths: Option<&Tensor>,
        offsets: Option<&Tensor>,
        axis: i64,
        unsafe_lengths: bool,
        initial: Option<&Scalar>,
    ) -> Result<Tensor> {
        let axis = wrap_dim(axis, self.dim())?;
        if !self.dtype().is_floating_point() {
            return Err(TensorError::NotImplementedForDType {
                op: "_segment_reduce_cpu",
                dtype: self.dtype(),
            });
        }
        // Per leading row (the dims before axis), the segment lengths.
        let (segment_lengths, segments): (Vec<Vec<i64>>, usize) = match (lengths, offsets) {
            (Some(lengths), _) => {
                if lengths.dim() != axis + 1 {
                    return Err(invalid(
                        "Expected lengths to have one more dimension than the dims before axis",
                    ));
                }
                let s = lengths.sizes()[axis];
                let all = lengths.to_i64_vec();
                (all.chunks(s.max(1)).map(<[i64]>::to_vec).collect(), s)
            }
            (None, Some(offsets)) => {
                if offsets.dim() != axis + 1 || offsets.sizes()[axis] == 0 {
                    return Err(invalid(
                        "Expected offsets to have one more dimension than the dims before axis",
                    ));
                }
                let s = offsets.sizes()[axis] - 1;
                let all = offsets.to_i64_vec();
                (
                    all.chunks(s + 1)
                        .map(|row| row.windows(2).map(|w| w[1] - w[0]).collect())
                        .collect(),
                    s,
                )
            }
            (None, None) => {
                return Err(invalid(
                    "segment_reduce(): Either lengths or offsets must be defined",
                ))
            }
        };
        let outer: usize = self.sizes()[..axis].iter().product();
        let len = self.sizes()[axis];
        let inner: usize = self.sizes()[axis + 1..].iter().product();
        for row in &segment_lengths {
            if row.iter().any(|&l| l < 0) {
                return Err(invalid("lengths contains negative value!"));
            }
            if !unsafe_lengths && row.iter().sum::<i64>() != len as i64 {
                return Err(invalid(
                    "segment_reduce(): Expected all rows of lengths along axis to sum to data.size(lengths.dim()-1) when !unsafe.",
                ));
            }
        }
        let data = self.to_f64_vec();
        let dtype = self.dtype();
        let mut out = vec![0.0f64; outer * segments * inner];
        for o in 0..outer {
            let mut start = 0usize;
            for (s, &length) in segment_lengths[o].iter().enumerate() {
                let end = start + length as usize;
                for j in 0..inner {
                    let mut acc = match (initial, reduce) {
                        (Some(value), _) => round_product(value.to_f64(), dtype),
                        (None, SegmentReduction::Max) => f64::NEG_INFINITY,
                        (None, SegmentReduction::Min) => f64::INFINITY,
                        (None, SegmentReduction::Prod) => 1.0,
                        (None, _) => 0.0,
                    };
                    for k in start..end.min(len) {
                        let x = data[(o * len + k) * inner + j];
                        acc = match reduce {
                            SegmentReduction::Max => {
                                if x.is_nan() || acc.is_nan() {
                                    f64::NAN
                                } else {
                                    acc.max(x)
                                }
                            }
                            SegmentReduction::Min => {
                                if x.is_nan() || acc.is_nan() {
                                    f64::NAN
                                } else {
                                    acc.min(x)
                                }
                            }
                            SegmentReduction::Sum | SegmentReduction::Mean => {
                                round_product(acc + x, dtype)
                            }
                            SegmentReduction::Prod => round_product(acc * x, dtype),
                        };
                    }
                    if reduce == SegmentReduction::Mean {
                        if length > 0 && !acc.is_nan() {
                            acc /= length as f64;
                        } else if initial.is_none() {
                            acc = f64::NAN;
                        }
                    }
                    out[(o * segments + s) * inner + j] = acc;
                }
                start = end;
            }
        }
        let mut sizes = self.sizes().to_vec();
        sizes[axis] = segments;
        Ok(crate::ops::nn::from_f64(out, &sizes, dtype))
    }
}

/// A running product or sum rounded to the dtype's precision at each step, as PyTorch's
/// float32 kernels accumulate.
fn round_product(value: f64, dtype: DType) -> f64 {
    if dtype == DType::Float32 {
        value as f32 as f64
    } else {
        value
    }
}

/// The lowest and highest values of an integral dtype, as f64.
fn integer_limits(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::UInt8 => (0.0, 255.0),
        DType::Int8 => (-128.0, 127.0),
        DType::Int16 => (-32768.0, 32767.0),
        DType::Int32 => (f64::from(i32::MIN), f64::from(i32::MAX)),
        _ => (i64::MIN as f64, i64::MAX as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_reduce_amax_without_self_ignores_the_old_values() {
        let x = Tensor::from_vec(vec![10.0f32, 10.0, 10.0], &[3]).unwrap();
        let index = Tensor::from_vec(vec![0i64, 0, 2], &[3]).unwrap();
        let source = Tensor::from_vec(vec![1.0f32, 3.0, 2.0], &[3]).unwrap();
        let out = x
            .index_reduce(0, &index, &source, IndexReduction::Amax, false)
            .unwrap();
        assert_eq!(out.to_f64_vec(), vec![3.0, 10.0, 2.0]);
        let out = x
            .index_reduce(0, &index, &source, IndexReduction::Amax, true)
            .unwrap();
        assert_eq!(out.to_f64_vec(), vec![10.0, 10.0, 10.0]);
    }

    #[test]
    fn put_refuses_an_index_past_the_end() {
        let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
        let index = Tensor::from_vec(vec![2i64], &[1]).unwrap();
        let source = Tensor::from_vec(vec![5.0f32], &[1]).unwrap();
        assert!(x.put(&index, &source, false).is_err());
        let index = Tensor::from_vec(vec![-1i64], &[1]).unwrap();
        assert_eq!(
            x.put(&index, &source, true).unwrap().to_f64_vec(),
            vec![1.0, 7.0]
        );
    }
}
