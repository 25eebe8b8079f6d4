//! View operations: new geometry over the same storage, never copying (except `reshape` fallback).

use crate::error::{format_shape, format_shape_i64, Result, TensorError};
use crate::shape::{checked_numel, contiguous_strides, infer_size, view_strides, wrap_dim};
use crate::tensor::Tensor;

impl Tensor {
    /// `Tensor.view(shape)`: one `-1` is inferred; fails when the strides do not allow a view.
    pub fn view(&self, shape: &[i64]) -> Result<Tensor> {
        let sizes = infer_size(shape, self.numel())?;
        let strides = view_strides(self.sizes(), self.strides(), &sizes)
            .ok_or(TensorError::ViewNotCompatible)?;
        Ok(self.with_geometry(sizes, strides, self.storage_offset()))
    }

    /// `Tensor.reshape(shape)`: a view when possible, otherwise a contiguous copy.
    pub fn reshape(&self, shape: &[i64]) -> Result<Tensor> {
        let sizes = infer_size(shape, self.numel())?;
        match view_strides(self.sizes(), self.strides(), &sizes) {
            Some(strides) => Ok(self.with_geometry(sizes, strides, self.storage_offset())),
            None => {
                let copy = self.clone_tensor();
                let strides = contiguous_strides(&sizes);
                Ok(copy.with_geometry(sizes, strides, 0))
            }
        }
    }

    /// Reshape to unsigned sizes (internal convenience).
    pub(crate) fn reshape_usize(&self, sizes: &[usize]) -> Result<Tensor> {
        let shape: Vec<i64> = sizes.iter().map(|&s| s as i64).collect();
        self.reshape(&shape)
    }

    /// `Tensor.t()`: transpose of a tensor with at most 2 dims.
    pub fn t(&self) -> Result<Tensor> {
        if self.dim() > 2 {
            return Err(TensorError::InvalidArgument(format!(
                "t() expects a tensor with <= 2 dimensions, but self is {}D",
                self.dim()
            )));
        }
        if self.dim() < 2 {
            return Ok(self.with_geometry(
                self.sizes().to_vec(),
                self.strides().to_vec(),
                self.storage_offset(),
            ));
        }
        self.transpose(0, 1)
    }

    pub fn transpose(&self, dim0: i64, dim1: i64) -> Result<Tensor> {
        let n = self.dim();
        let a = wrap_dim(dim0, n)?;
        let b = wrap_dim(dim1, n)?;
        let mut sizes = self.sizes().to_vec();
        let mut strides = self.strides().to_vec();
        if n > 0 {
            sizes.swap(a, b);
            strides.swap(a, b);
        }
        Ok(self.with_geometry(sizes, strides, self.storage_offset()))
    }

    pub fn permute(&self, dims: &[i64]) -> Result<Tensor> {
        let n = self.dim();
        if dims.len() != n {
            return Err(TensorError::InvalidArgument(format!(
                "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {} is not equal to len(dims) = {}",
                n,
                dims.len()
            )));
        }
        let mut seen = vec![false; n];
        let mut sizes = Vec::with_capacity(n);
        let mut strides = Vec::with_capacity(n);
        for &d in dims {
            let w = wrap_dim(d, n)?;
            if seen[w] {
                return Err(TensorError::InvalidArgument(
                    "permute(): duplicate dims are not allowed.".to_string(),
                ));
            }
            seen[w] = true;
            sizes.push(self.sizes()[w]);
            strides.push(self.strides()[w]);
        }
        Ok(self.with_geometry(sizes, strides, self.storage_offset()))
    }

    /// `Tensor.select(dim, index)`: removes `dim`, keeping slice `index` (negative wraps).
    pub fn select(&self, dim: i64, index: i64) -> Result<Tensor> {
        if self.dim() == 0 {
            return Err(TensorError::InvalidArgument(
                "select() cannot be applied to a 0-dim tensor.".to_string(),
            ));
        }
        let d = wrap_dim(dim, self.dim())?;
        let size = self.sizes()[d] as i64;
        if index < -size || index >= size {
            return Err(TensorError::IndexOutOfRange {
                op: "select",
                index,
                dim: d,
                sizes: self.sizes().to_vec(),
            });
        }
        let index = if index < 0 { index + size } else { index } as usize;
        let mut sizes = self.sizes().to_vec();
        let mut strides = self.strides().to_vec();
        let offset = self.storage_offset() + index * strides[d];
        sizes.remove(d);
        strides.remove(d);
        Ok(self.with_geometry(sizes, strides, offset))
    }

    /// `aten::slice`: Python slicing `[start:end:step]` along `dim`, with clamping; `step` must be positive.
    pub fn slice(
        &self,
        dim: i64,
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    ) -> Result<Tensor> {
        if self.dim() == 0 {
            return Err(TensorError::InvalidArgument(
                "slice() cannot be applied to a 0-dim tensor.".to_string(),
            ));
        }
        if step <= 0 {
            return Err(TensorError::InvalidArgument(
                "slice step must be positive".to_string(),
            ));
        }
        let d = wrap_dim(dim, self.dim())?;
        let size = self.sizes()[d] as i64;
        let mut start = start.unwrap_or(0);
        let mut end = end.unwrap_or(i64::MAX);
        if start < 0 {
            start = start.saturating_add(size);
        }
        if end < 0 {
            end = end.saturating_add(size);
        }
        let start = start.clamp(0, size);
        let end = end.clamp(start, size);
        // Written to avoid overflow for huge steps.
        let len = if end <= start {
            0
        } else {
            (end - start - 1) / step + 1
        };
        let mut sizes = self.sizes().to_vec();
        let mut strides = self.strides().to_vec();
        let offset = self.storage_offset() + start as usize * strides[d];
        sizes[d] = len as usize;
        // With at most one element the stride is irrelevant; otherwise step < size keeps it in range.
        if len > 1 {
            strides[d] *= step as usize;
        }
        Ok(self.with_geometry(sizes, strides, offset))
    }

    /// `Tensor.narrow(dim, start, length)`.
    pub fn narrow(&self, dim: i64, start: i64, length: i64) -> Result<Tensor> {
        if self.dim() == 0 {
            return Err(TensorError::InvalidArgument(
                "narrow() cannot be applied to a 0-dim tensor.".to_string(),
            ));
        }
        if length < 0 {
            return Err(TensorError::InvalidArgument(
                "narrow(): length must be non-negative.".to_string(),
            ));
        }
        let d = wrap_dim(dim, self.dim())?;
        let size = self.sizes()[d] as i64;
        if start < -size || start > size {
            return Err(TensorError::InvalidArgument(format!(
                "start out of range (expected to be in range of [{}, {}], but got {})",
                -size, size, start
            )));
        }
        let start = if start < 0 { start + size } else { start };
        if start.saturating_add(length) > size {
            return Err(TensorError::InvalidArgument(format!(
                "start ({start}) + length ({length}) exceeds dimension size ({size})."
            )));
        }
        self.slice(d as i64, Some(start), Some(start + length), 1)
    }

    pub fn unsqueeze(&self, dim: i64) -> Result<Tensor> {
        let d = wrap_dim(dim, self.dim() + 1)?;
        let mut sizes = self.sizes().to_vec();
        let mut strides = self.strides().to_vec();
        let stride = if d >= self.dim() {
            1
        } else {
            sizes[d] * strides[d]
        };
        sizes.insert(d, 1);
        strides.insert(d, stride);
        Ok(self.with_geometry(sizes, strides, self.storage_offset()))
    }

    /// Removes `dim` when its size is 1; otherwise returns the same view.
    pub fn squeeze_dim(&self, dim: i64) -> Result<Tensor> {
        let d = wrap_dim(dim, self.dim())?;
        let mut sizes = self.sizes().to_vec();
        let mut strides = self.strides().to_vec();
        if self.dim() > 0 && sizes[d] == 1 {
            sizes.remove(d);
            strides.remove(d);
        }
        Ok(self.with_geometry(sizes, strides, self.storage_offset()))
    }

    /// Removes every size-1 dim.
    pub fn squeeze(&self) -> Tensor {
        let (sizes, strides): (Vec<usize>, Vec<usize>) = self
            .sizes()
            .iter()
            .zip(self.strides())
            .filter(|(&s, _)| s != 1)
            .map(|(&s, &st)| (s, st))
            .unzip();
        self.with_geometry(sizes, strides, self.storage_offset())
    }

    /// `Tensor.expand(sizes)`: size-1 dims repeat with stride 0; `-1` keeps a size.
    pub fn expand(&self, sizes: &[i64]) -> Result<Tensor> {
        let n = self.dim();
        if sizes.len() < n {
            return Err(TensorError::InvalidArgument(format!(
                "expand({}{{{}}}, size={}): the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
                legacy_type_name(self),
                format_shape(self.sizes()),
                format_shape_i64(sizes),
                sizes.len(),
                n
            )));
        }
        let lead = sizes.len() - n;
        let mut out_sizes = Vec::with_capacity(sizes.len());
        let mut out_strides = Vec::with_capacity(sizes.len());
        for (i, &target) in sizes.iter().enumerate() {
            if i < lead {
                if target < 0 {
                    return Err(TensorError::InvalidArgument(format!(
                        "The expanded size of the tensor ({target}) isn't allowed in a leading, non-existing dimension {i}"
                    )));
                }
                out_sizes.push(target as usize);
                out_strides.push(0);
                continue;
            }
            let size = self.sizes()[i - lead];
            let stride = self.strides()[i - lead];
            if target == -1 || target == size as i64 {
                out_sizes.push(size);
                out_strides.push(stride);
            } else if size == 1 && target >= 0 {
                out_sizes.push(target as usize);
                out_strides.push(0);
            } else {
                return Err(TensorError::InvalidArgument(format!(
                    "The expanded size of the tensor ({}) must match the existing size ({}) at non-singleton dimension {}.  Target sizes: {}.  Tensor sizes: {}",
                    target,
                    size,
                    i,
                    format_shape_i64(sizes),
                    format_shape(self.sizes())
                )));
            }
        }
        checked_numel(&out_sizes)?;
        Ok(self.with_geometry(out_sizes, out_strides, self.storage_offset()))
    }

    /// Expands to a broadcast shape (sizes must be broadcast-compatible).
    pub fn broadcast_to(&self, sizes: &[usize]) -> Result<Tensor> {
        if self.sizes() == sizes {
            return Ok(self.clone());
        }
        let shape: Vec<i64> = sizes.iter().map(|&s| s as i64).collect();
        self.expand(&shape)
    }

    /// `torch.flatten(start_dim, end_dim)`; a 0-dim tensor becomes shape `[1]`.
    pub fn flatten(&self, start_dim: i64, end_dim: i64) -> Result<Tensor> {
        let n = self.dim();
        let s = wrap_dim(start_dim, n)?;
        let e = wrap_dim(end_dim, n)?;
        if s > e {
            return Err(TensorError::InvalidArgument(
                "flatten() has invalid args: start_dim cannot come after end_dim".to_string(),
            ));
        }
        if n == 0 {
            return self.reshape(&[1]);
        }
        if s == e {
            return Ok(self.clone());
        }
        let mut shape: Vec<i64> = Vec::with_capacity(n - (e - s));
        for (i, &size) in self.sizes().iter().enumerate() {
            if i < s || i > e {
                shape.push(size as i64);
            } else if i == s {
                let merged: usize = self.sizes()[s..=e].iter().product();
                shape.push(merged as i64);
            }
        }
        self.reshape(&shape)
    }
}

/// PyTorch's legacy type string used in a few messages ("torch.FloatTensor").
pub(crate) fn legacy_type_name(t: &Tensor) -> String {
    let storage = t.dtype().to_torch_storage_name();
    format!("torch.{}Tensor", storage.trim_end_matches("Storage"))
}

/// `memory_format` argument of `clone`/`contiguous` (c10::MemoryFormat numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryFormat {
    Contiguous,
    Preserve,
    ChannelsLast,
    ChannelsLast3d,
}

impl MemoryFormat {
    /// From c10's enum index: Contiguous=0, Preserve=1, ChannelsLast=2, ChannelsLast3d=3.
    pub fn from_index(index: i64) -> Result<MemoryFormat> {
        Ok(match index {
            0 => MemoryFormat::Contiguous,
            1 => MemoryFormat::Preserve,
            2 => MemoryFormat::ChannelsLast,
            3 => MemoryFormat::ChannelsLast3d,
            other => {
                return Err(TensorError::InvalidArgument(format!(
                    "unknown memory format {other}"
                )))
            }
        })
    }
}

/// Strides for a dim order listed from outermost to innermost.
fn strides_for_order(sizes: &[usize], order: &[usize]) -> Vec<usize> {
    let mut strides = vec![0usize; sizes.len()];
    let mut acc = 1usize;
    for &d in order.iter().rev() {
        strides[d] = acc;
        acc = acc.saturating_mul(sizes[d].max(1));
    }
    strides
}

impl Tensor {
    /// PyTorch's `resize_`: `sizes` with contiguous strides (channels-last ones for
    /// `ChannelsLast`/`ChannelsLast3d`) at the same storage offset, over the same storage when
    /// it is large enough, so other views of it see what is written through the result. A
    /// storage too small grows in place ([`crate::storage::Storage::grow_to`]), as PyTorch's does, so other
    /// views of it see the same larger buffer. The new elements are zero (PyTorch leaves them
    /// uninitialised).
    pub fn resized(&self, sizes: &[i64], format: MemoryFormat) -> Result<Tensor> {
        let sizes = sizes
            .iter()
            .map(|&size| {
                usize::try_from(size).map_err(|_| {
                    TensorError::InvalidArgument(format!(
                        "Trying to create tensor with negative dimension {size}: {}",
                        format_shape_i64(sizes)
                    ))
                })
            })
            .collect::<Result<Vec<usize>>>()?;
        let strides = match (format, sizes.len()) {
            (MemoryFormat::ChannelsLast, 4) => strides_for_order(&sizes, &[0, 2, 3, 1]),
            (MemoryFormat::ChannelsLast3d, 5) => strides_for_order(&sizes, &[0, 2, 3, 4, 1]),
            (MemoryFormat::ChannelsLast | MemoryFormat::ChannelsLast3d, rank) => {
                return Err(TensorError::InvalidArgument(format!(
                    "required rank {} tensor to use channels_last format, got {rank}",
                    if format == MemoryFormat::ChannelsLast {
                        4
                    } else {
                        5
                    }
                )))
            }
            _ => contiguous_strides(&sizes),
        };
        let numel = checked_numel(&sizes)?;
        let offset = self.storage_offset();
        let needed = offset.checked_add(numel).ok_or_else(|| {
            TensorError::InvalidArgument(format!(
                "resize_: {} elements at offset {offset} overflow",
                format_shape(&sizes)
            ))
        })?;
        let storage = self.storage();
        if numel == 0 || needed <= storage.len_elements() {
            return Tensor::from_storage(storage.clone(), offset, sizes, strides);
        }
        crate::shape::check_allocation(needed, self.dtype())?;
        storage.grow_to(needed);
        Tensor::from_storage(storage.clone(), offset, sizes, strides)
    }

    /// `as_strided(size, stride, storage_offset)`: any geometry inside the storage.
    pub fn as_strided(
        &self,
        sizes: &[i64],
        strides: &[i64],
        offset: Option<i64>,
    ) -> Result<Tensor> {
        if sizes.len() != strides.len() {
            return Err(TensorError::InvalidArgument(format!(
                "mismatch in length of strides and shape: {} vs {}",
                strides.len(),
                sizes.len()
            )));
        }
        let to_usize = |v: i64, what: &str| {
            usize::try_from(v).map_err(|_| {
                TensorError::InvalidArgument(format!(
                    "as_strided: Negative {what} are not supported, got {v}"
                ))
            })
        };
        let sizes = sizes
            .iter()
            .map(|&s| to_usize(s, "sizes"))
            .collect::<Result<Vec<_>>>()?;
        let strides = strides
            .iter()
            .map(|&s| to_usize(s, "strides"))
            .collect::<Result<Vec<_>>>()?;
        let offset = match offset {
            None => self.storage_offset(),
            Some(o) => usize::try_from(o).map_err(|_| {
                TensorError::InvalidArgument(format!("Tensor: invalid storage offset {o}"))
            })?,
        };
        Tensor::from_storage(self.storage().clone(), offset, sizes, strides)
    }

    /// `expand_as(other)`.
    pub fn expand_as(&self, other: &Tensor) -> Result<Tensor> {
        let shape: Vec<i64> = other.sizes().iter().map(|&s| s as i64).collect();
        self.expand(&shape)
    }

    /// `unflatten(dim, sizes)`: splits one dim into several (one `-1` allowed).
    pub fn unflatten(&self, dim: i64, sizes: &[i64]) -> Result<Tensor> {
        let d = wrap_dim(dim, self.dim())?;
        if sizes.is_empty() {
            return Err(TensorError::InvalidArgument(
                "unflatten: sizes must be non-empty".to_string(),
            ));
        }
        let current = self.sizes().get(d).copied().unwrap_or(1);
        let inner = infer_size(sizes, current).map_err(|_| {
            TensorError::InvalidArgument(format!(
                "unflatten: Provided sizes {} don't multiply up to the size of dim {} ({}) in the input tensor",
                format_shape_i64(sizes),
                dim,
                current
            ))
        })?;
        let mut shape: Vec<i64> = Vec::new();
        for (i, &s) in self.sizes().iter().enumerate() {
            if i == d {
                shape.extend(inner.iter().map(|&x| x as i64));
            } else {
                shape.push(s as i64);
            }
        }
        self.view(&shape)
    }

    /// `unbind(dim)`: the slices along `dim`, as views.
    pub fn unbind(&self, dim: i64) -> Result<Vec<Tensor>> {
        if self.dim() == 0 {
            return Err(TensorError::InvalidArgument(
                "Dimension specified as 0 but tensor has no dimensions".to_string(),
            ));
        }
        let d = wrap_dim(dim, self.dim())?;
        (0..self.sizes()[d])
            .map(|i| self.select(d as i64, i as i64))
            .collect()
    }

    /// `split(split_size, dim)`: views of `split_size` (the last may be shorter).
    pub fn split(&self, split_size: i64, dim: i64) -> Result<Vec<Tensor>> {
        if self.dim() == 0 {
            return Err(TensorError::InvalidArgument(
                "split expects at least a 1-dimensional tensor".to_string(),
            ));
        }
        if split_size < 0 {
            return Err(TensorError::InvalidArgument(format!(
                "split expects split_size be non-negative, but got split_size={split_size}"
            )));
        }
        let d = wrap_dim(dim, self.dim())?;
        let size = self.sizes()[d] as i64;
        if split_size == 0 && size != 0 {
            return Err(TensorError::InvalidArgument(format!(
                "split_size can only be 0 if dimension size is 0, but got dimension size of {size}"
            )));
        }
        let count = if split_size == 0 {
            1
        } else {
            ((size + split_size - 1) / split_size).max(1)
        };
        (0..count)
            .map(|i| {
                let start = i * split_size;
                let len = split_size.min(size - start);
                self.narrow(d as i64, start, len)
            })
            .collect()
    }

    /// `split_with_sizes(split_sizes, dim)`.
    pub fn split_with_sizes(&self, split_sizes: &[i64], dim: i64) -> Result<Vec<Tensor>> {
        let d = wrap_dim(dim, self.dim())?;
        let size = self.sizes().get(d).copied().unwrap_or(0) as i64;
        let total: i64 = split_sizes.iter().sum();
        if total != size || split_sizes.iter().any(|&s| s < 0) {
            return Err(TensorError::InvalidArgument(format!(
                "split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size at dimension {dim}), but got split_sizes={}",
                format_shape_i64(split_sizes)
            )));
        }
        let mut start = 0;
        let mut out = Vec::with_capacity(split_sizes.len());
        for &len in split_sizes {
            out.push(self.narrow(d as i64, start, len)?);
            start += len;
        }
        Ok(out)
    }

    /// `chunk(chunks, dim)`: at most `chunks` views of equal size (ceil division).
    pub fn chunk(&self, chunks: i64, dim: i64) -> Result<Vec<Tensor>> {
        if self.dim() == 0 {
            return Err(TensorError::InvalidArgument(
                "chunk expects at least a 1-dimensional tensor".to_string(),
            ));
        }
        if chunks <= 0 {
            return Err(TensorError::InvalidArgument(
                "chunk expects `chunks` to be greater than 0, got: ".to_string()
                    + &chunks.to_string(),
            ));
        }
        let d = wrap_dim(dim, self.dim())?;
        let size = self.sizes()[d] as i64;
        let split_size = (size + chunks - 1) / chunks;
        if split_size == 0 && size == 0 {
            let sizes = vec![0i64; chunks as usize];
            return self.split_with_sizes(&sizes, dim);
        }
        self.split(split_size, dim)
    }

    /// `diagonal(offset, dim1, dim2)`: a view of the diagonal, appended as the last dim.
    pub fn diagonal(&self, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
        let n = self.dim();
        if n < 2 {
            return Err(TensorError::InvalidArgument(format!(
                "diagonal dimensions requires ndim larger than 1, but got {n}"
            )));
        }
        let a = wrap_dim(dim1, n)?;
        let b = wrap_dim(dim2, n)?;
        if a == b {
            return Err(TensorError::InvalidArgument(format!(
                "diagonal dimensions cannot be identical {dim1}, {dim2}"
            )));
        }
        let (size_a, size_b) = (self.sizes()[a] as i64, self.sizes()[b] as i64);
        let len = if offset >= 0 {
            size_a.min(size_b - offset).max(0)
        } else {
            (size_a + offset).min(size_b).max(0)
        };
        let mut storage_offset = self.storage_offset();
        if len > 0 {
            storage_offset += if offset >= 0 {
                offset as usize * self.strides()[b]
            } else {
                offset.unsigned_abs() as usize * self.strides()[a]
            };
        }
        let mut sizes = Vec::with_capacity(n - 1);
        let mut strides = Vec::with_capacity(n - 1);
        for d in 0..n {
            if d != a && d != b {
                sizes.push(self.sizes()[d]);
                strides.push(self.strides()[d]);
            }
        }
        sizes.push(len as usize);
        strides.push(self.strides()[a] + self.strides()[b]);
        Ok(self.with_geometry(sizes, strides, storage_offset))
    }

    /// `clone(memory_format)`: a deep copy laid out as requested (`Preserve` keeps a dense
    /// non-overlapping layout's strides, otherwise row-major).
    pub fn clone_with_format(&self, format: MemoryFormat) -> Result<Tensor> {
        let order: Vec<usize> = match format {
            MemoryFormat::Contiguous => (0..self.dim()).collect(),
            MemoryFormat::ChannelsLast | MemoryFormat::ChannelsLast3d => {
                let expected = if format == MemoryFormat::ChannelsLast {
                    4
                } else {
                    5
                };
                if self.dim() != expected {
                    return Err(TensorError::InvalidArgument(format!(
                        "required rank {expected} tensor to use {} format",
                        if expected == 4 {
                            "channels_last"
                        } else {
                            "channels_last_3d"
                        }
                    )));
                }
                let mut order = vec![0];
                order.extend(2..self.dim());
                order.push(1);
                order
            }
            MemoryFormat::Preserve => {
                // Outermost = largest stride; ties keep the original order.
                let mut order: Vec<usize> = (0..self.dim()).collect();
                order.sort_by(|&x, &y| self.strides()[y].cmp(&self.strides()[x]));
                let strides = strides_for_order(self.sizes(), &order);
                let dense = strides == self.strides() || self.is_contiguous();
                if dense {
                    order
                } else {
                    (0..self.dim()).collect()
                }
            }
        };
        let strides = strides_for_order(self.sizes(), &order);
        let copy = self.clone_tensor();
        let out = Tensor::zeros(&[copy.numel()], self.dtype())?;
        let shaped = out.with_geometry(self.sizes().to_vec(), strides, 0);
        shaped.write_from(&copy)?;
        Ok(shaped)
    }
}
