//! Indexing ops: advanced indexing (`aten::index.Tensor`) with PyTorch's result layout,
//! `index_put_` (accumulate), index_select, gather, scatter/scatter_add/scatter_reduce,
//! masked_select, masked_scatter, nonzero and take.

use crate::dtype::{DType, Scalar};
use crate::element::{Arith, Element};
use crate::error::{format_shape, Result, TensorError};
use crate::macros::dispatch_dtype;
use crate::shape::{broadcast_shapes, contiguous_strides, wrap_dim};
use crate::tensor::Tensor;

fn invalid(message: impl Into<String>) -> TensorError {
    TensorError::InvalidArgument(message.into())
}

fn require_long(index: &Tensor, op: &str) -> Result<()> {
    if index.dtype() != DType::Int64 {
        return Err(invalid(format!("{op}(): Expected dtype int64 for index")));
    }
    Ok(())
}

/// Wraps a possibly negative index into `0..size` or fails like PyTorch.
fn wrap_index(
    index: i64,
    size: usize,
    dim: usize,
    op: &'static str,
    sizes: &[usize],
) -> Result<usize> {
    let s = size as i64;
    let wrapped = if index < 0 { index + s } else { index };
    if wrapped < 0 || wrapped >= s {
        return Err(TensorError::IndexOutOfRange {
            op,
            index,
            dim,
            sizes: sizes.to_vec(),
        });
    }
    Ok(wrapped as usize)
}

/// Multi-index (row-major) of a linear position.
fn unravel(mut linear: usize, sizes: &[usize], out: &mut [usize]) {
    for d in (0..sizes.len()).rev() {
        let s = sizes[d].max(1);
        out[d] = linear % s;
        linear /= s;
    }
}

/// Resolved advanced index: for each output element, the linear (contiguous) source position.
struct AdvancedIndex {
    out_sizes: Vec<usize>,
    positions: Vec<usize>,
}

/// Expands bool masks into long indices and resolves PyTorch's result layout.
fn resolve_index(source: &Tensor, indices: &[Option<Tensor>]) -> Result<AdvancedIndex> {
    // Expand masks: a k-dim mask becomes k long index tensors (its nonzero coordinates).
    let mut expanded: Vec<Option<Tensor>> = Vec::new();
    for idx in indices {
        match idx {
            Some(t) if t.dtype() == DType::Bool || t.dtype() == DType::UInt8 => {
                let start = expanded.len();
                for (k, &s) in t.sizes().iter().enumerate() {
                    let self_size = source.sizes().get(start + k).copied();
                    if self_size != Some(s) {
                        return Err(invalid(format!(
                            "The shape of the mask {} at index {k} does not match the shape of the indexed tensor {} at index {}",
                            format_shape(t.sizes()),
                            format_shape(source.sizes()),
                            start + k
                        )));
                    }
                }
                let nz = t.nonzero()?;
                if t.dim() == 0 {
                    // A 0-dim mask adds a dim of size 0 or 1 (handled as unsqueeze + index).
                    return Err(invalid("0-dim boolean masks are not supported"));
                }
                for k in 0..t.dim() {
                    expanded.push(Some(nz.select(1, k as i64)?));
                }
            }
            Some(t) => {
                if t.dtype().is_floating_point() || t.dtype() == DType::Bool {
                    return Err(invalid(
                        "tensors used as indices must be long, int, byte or bool tensors",
                    ));
                }
                expanded.push(Some(t.clone()));
            }
            None => expanded.push(None),
        }
    }
    if expanded.len() > source.dim() {
        return Err(invalid(format!(
            "too many indices for tensor of dimension {} (got {})",
            source.dim(),
            expanded.len()
        )));
    }
    expanded.resize(source.dim(), None);
    let indexed: Vec<usize> = (0..expanded.len())
        .filter(|&d| expanded[d].is_some())
        .collect();
    let mut bshape: Vec<usize> = Vec::new();
    for d in &indexed {
        if let Some(t) = &expanded[*d] {
            bshape = broadcast_shapes(&bshape, t.sizes()).map_err(|_| {
                invalid(format!(
                    "shape mismatch: indexing tensors could not be broadcast together with shapes {}",
                    indexed
                        .iter()
                        .filter_map(|&i| expanded[i].as_ref().map(|t| format_shape(t.sizes())))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
        }
    }
    let bnumel: usize = bshape.iter().product();
    let mut index_values: Vec<Vec<usize>> = Vec::new();
    for &d in &indexed {
        let Some(t) = &expanded[d] else { continue };
        let values = t.broadcast_to(&bshape)?.to_i64_vec();
        let wrapped = values
            .iter()
            .map(|&v| {
                wrap_index(v, source.sizes()[d], d, "index", source.sizes()).map_err(|_| {
                    invalid(format!(
                        "index {v} is out of bounds for dimension {d} with size {}",
                        source.sizes()[d]
                    ))
                })
            })
            .collect::<Result<Vec<usize>>>()?;
        index_values.push(wrapped);
    }
    let adjacent = indexed.windows(2).all(|w| w[1] == w[0] + 1);
    let rest: Vec<usize> = (0..source.dim()).filter(|d| !indexed.contains(d)).collect();
    // Output dims: a sequence of Either(rest dim) / the broadcast block.
    let first = indexed.first().copied().unwrap_or(0);
    let mut layout: Vec<Option<usize>> = Vec::new(); // Some(d) = rest dim, None = block
    if adjacent && !indexed.is_empty() {
        layout.extend(rest.iter().filter(|&&d| d < first).map(|&d| Some(d)));
        layout.push(None);
        layout.extend(rest.iter().filter(|&&d| d > first).map(|&d| Some(d)));
    } else {
        layout.push(None);
        layout.extend(rest.iter().map(|&d| Some(d)));
    }
    let mut out_sizes = Vec::new();
    for item in &layout {
        match item {
            Some(d) => out_sizes.push(source.sizes()[*d]),
            None => out_sizes.extend(&bshape),
        }
    }
    let numel = crate::shape::checked_numel(&out_sizes)?;
    let src_strides = contiguous_strides(source.sizes());
    let rest_sizes: Vec<usize> = rest.iter().map(|&d| source.sizes()[d]).collect();
    let rest_numel: usize = rest_sizes.iter().product();
    let mut positions = Vec::with_capacity(numel);
    let mut rest_coords = vec![0usize; rest.len()];
    // Iterate output in row-major order: decompose into (outer rest, block, inner rest).
    let block_at = layout.iter().position(|x| x.is_none()).unwrap_or(0);
    let outer: usize = layout[..block_at]
        .iter()
        .map(|x| x.map_or(1, |d| source.sizes()[d]))
        .product();
    let inner = rest_numel / outer.max(1);
    for o in 0..outer {
        for b in 0..bnumel {
            let base: usize = indexed
                .iter()
                .zip(&index_values)
                .map(|(&d, values)| values[b] * src_strides[d])
                .sum();
            for i in 0..inner {
                unravel(o * inner + i, &rest_sizes, &mut rest_coords);
                let mut pos = base;
                for (k, &d) in rest.iter().enumerate() {
                    pos += rest_coords[k] * src_strides[d];
                }
                positions.push(pos);
            }
        }
    }
    if rest_numel == 0 || bnumel == 0 {
        positions.clear();
    }
    Ok(AdvancedIndex {
        out_sizes,
        positions,
    })
}

impl Tensor {
    /// `aten::index.Tensor`: advanced indexing; `None` entries keep a dim whole.
    pub fn index_tensor(&self, indices: &[Option<Tensor>]) -> Result<Tensor> {
        let resolved = resolve_index(self, indices)?;
        dispatch_dtype!(self.dtype(), T => {
            let values = self.gather::<T>();
            let out: Vec<T> = resolved.positions.iter().map(|&p| values[p]).collect();
            Ok(Tensor::from_values(out, &resolved.out_sizes))
        })
    }

    /// `aten::index_put_`: writes (or, with `accumulate`, adds) `values` at the indexed places.
    pub fn index_put_(
        &self,
        indices: &[Option<Tensor>],
        values: &Tensor,
        accumulate: bool,
    ) -> Result<Tensor> {
        let resolved = resolve_index(self, indices)?;
        let vals = values.broadcast_to(&resolved.out_sizes).map_err(|_| {
            invalid(format!(
                "shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
                format_shape(values.sizes()),
                format_shape(&resolved.out_sizes)
            ))
        })?;
        if values.dtype() != self.dtype() {
            return Err(invalid(format!(
                "Index put requires the source and destination dtypes match, got {} for the destination and {} for the source.",
                self.dtype().scalar_type_name(),
                values.dtype().scalar_type_name()
            )));
        }
        dispatch_dtype!(self.dtype(), T => {
            let mut data = self.gather::<T>();
            let src = vals.gather::<T>();
            for (&p, &v) in resolved.positions.iter().zip(&src) {
                data[p] = if accumulate { data[p].add(v) } else { v };
            }
            self.copy_(&Tensor::from_values(data, self.sizes()))
        })
    }

    /// `torch.index_select(self, dim, index)`.
    pub fn index_select(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        if index.dim() > 1 {
            return Err(invalid("index_select(): Index is supposed to be a vector"));
        }
        if !matches!(index.dtype(), DType::Int64 | DType::Int32) {
            return Err(invalid(
                "index_select(): Expected dtype int32 or int64 for index",
            ));
        }
        let ndim = self.dim().max(1);
        let d = wrap_dim(dim, ndim)?;
        let sizes: Vec<usize> = if self.dim() == 0 {
            vec![1]
        } else {
            self.sizes().to_vec()
        };
        let idx = index.to_i64_vec();
        let picks = idx
            .iter()
            .map(|&i| {
                let s = sizes[d] as i64;
                if i < -s || i >= s {
                    Err(invalid("index out of range in self".to_string()))
                } else {
                    Ok(if i < 0 { (i + s) as usize } else { i as usize })
                }
            })
            .collect::<Result<Vec<usize>>>()?;
        let outer: usize = sizes[..d].iter().product();
        let inner: usize = sizes[d + 1..].iter().product();
        let mut out_sizes = sizes.clone();
        out_sizes[d] = picks.len();
        if self.dim() == 0 {
            // PyTorch keeps a 0-dim input's shape (the index holds a single 0).
            out_sizes = vec![];
        }
        // The input is read in place when contiguous: an embedding lookup picks a few rows
        // of a large table, which must not be copied whole on every call.
        dispatch_dtype!(self.dtype(), T => {
            let out = self.with_elements::<T, _>(|values| {
                let mut out = Vec::with_capacity(outer * picks.len() * inner);
                for o in 0..outer {
                    for &p in &picks {
                        let base = (o * sizes[d] + p) * inner;
                        out.extend_from_slice(&values[base..base + inner]);
                    }
                }
                out
            });
            Ok(Tensor::from_values(out, &out_sizes))
        })
    }

    /// Checks gather/scatter shapes and returns (dim, index values wrapped per element).
    fn check_scatter_gather(
        &self,
        dim: i64,
        index: &Tensor,
        src: Option<&Tensor>,
        op: &'static str,
    ) -> Result<usize> {
        // PyTorch 2.15 takes int32 as well as int64 indices here; its message names the
        // scatter family by `scatter()` whichever member refused.
        if !matches!(index.dtype(), DType::Int64 | DType::Int32) {
            let family = if op == "gather" { "gather" } else { "scatter" };
            return Err(invalid(format!(
                "{family}(): Expected dtype int32/int64 for index"
            )));
        }
        let d = wrap_dim(dim, self.dim().max(1))?;
        let self_dims = self.dim().max(1);
        let index_dims = index.dim().max(1);
        if index.numel() > 0 && index_dims != self_dims {
            return Err(invalid(format!(
                "Index tensor must have the same number of dimensions as {} tensor",
                if op == "gather" { "input" } else { "self" }
            )));
        }
        if index.numel() == 0 {
            return Ok(d);
        }
        let self_sizes: Vec<usize> = if self.dim() == 0 {
            vec![1]
        } else {
            self.sizes().to_vec()
        };
        let index_sizes: Vec<usize> = if index.dim() == 0 {
            vec![1]
        } else {
            index.sizes().to_vec()
        };
        for k in 0..self_dims {
            if k != d && index_sizes[k] > self_sizes[k] {
                return Err(invalid(format!(
                    "Size does not match at dimension {k} expected index {} to be no larger than self {} apart from dimension {d}",
                    format_shape(index.sizes()),
                    format_shape(self.sizes())
                )));
            }
        }
        if let Some(src) = src {
            let src_sizes: Vec<usize> = if src.dim() == 0 {
                vec![1]
            } else {
                src.sizes().to_vec()
            };
            if src_sizes.len() != index_sizes.len()
                || index_sizes.iter().zip(&src_sizes).any(|(i, s)| i > s)
            {
                return Err(invalid(format!(
                    "Expected index {} to be no larger than self {} apart from dimension {d} and to be no larger size than src {}",
                    format_shape(index.sizes()),
                    format_shape(self.sizes()),
                    format_shape(src.sizes())
                )));
            }
        }
        Ok(d)
    }

    /// `torch.gather(self, dim, index)`.
    pub fn gather_index(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        let d = self.check_scatter_gather(dim, index, None, "gather")?;
        let self_sizes: Vec<usize> = if self.dim() == 0 {
            vec![1]
        } else {
            self.sizes().to_vec()
        };
        let self_strides = contiguous_strides(&self_sizes);
        let idx_sizes: Vec<usize> = if index.dim() == 0 {
            vec![1]
        } else {
            index.sizes().to_vec()
        };
        let idx = index.to_i64_vec();
        let mut coords = vec![0usize; idx_sizes.len()];
        dispatch_dtype!(self.dtype(), T => {
            let values = self.gather::<T>();
            let mut out = Vec::with_capacity(idx.len());
            for (linear, &i) in idx.iter().enumerate() {
                unravel(linear, &idx_sizes, &mut coords);
                let p = wrap_index(i, self_sizes[d], d, "gather", self.sizes())
                    .map_err(|_| invalid(format!("index {i} is out of bounds for dimension {d} with size {}", self_sizes[d])))?;
                let mut pos = 0;
                for (k, &c) in coords.iter().enumerate() {
                    pos += if k == d { p } else { c } * self_strides[k];
                }
                out.push(values[pos]);
            }
            Ok(Tensor::from_values(out, index.sizes()))
        })
    }

    /// Shared body of the scatter family: calls `combine(current, incoming, first_hit)` for
    /// each index element and then `finish(value, hits)` for touched positions.
    #[allow(clippy::too_many_arguments)]
    fn scatter_with<T: Arith>(
        &self,
        dim: i64,
        index: &Tensor,
        src: &[T],
        src_sizes: &[usize],
        op: &'static str,
        mut combine: impl FnMut(T, T, usize) -> T,
        finish: impl Fn(T, usize) -> T,
    ) -> Result<Tensor> {
        let d = wrap_dim(dim, self.dim().max(1))?;
        let self_sizes: Vec<usize> = if self.dim() == 0 {
            vec![1]
        } else {
            self.sizes().to_vec()
        };
        let self_strides = contiguous_strides(&self_sizes);
        let src_strides = contiguous_strides(src_sizes);
        let idx_sizes: Vec<usize> = if index.dim() == 0 {
            vec![1]
        } else {
            index.sizes().to_vec()
        };
        let idx = index.to_i64_vec();
        let mut data = self.gather::<T>();
        let mut hits = vec![0usize; data.len()];
        let mut coords = vec![0usize; idx_sizes.len()];
        for (linear, &i) in idx.iter().enumerate() {
            unravel(linear, &idx_sizes, &mut coords);
            let p = wrap_index(i, self_sizes[d], d, op, self.sizes()).map_err(|_| {
                invalid(format!(
                    "index {i} is out of bounds for dimension {d} with size {}",
                    self_sizes[d]
                ))
            })?;
            let mut pos = 0;
            let mut spos = 0;
            for (k, &c) in coords.iter().enumerate() {
                pos += if k == d { p } else { c } * self_strides[k];
                spos += c * src_strides.get(k).copied().unwrap_or(0);
            }
            let incoming = src.get(spos).copied().unwrap_or_else(|| src[0]);
            data[pos] = combine(data[pos], incoming, hits[pos]);
            hits[pos] += 1;
        }
        for (v, &h) in data.iter_mut().zip(&hits) {
            if h > 0 {
                *v = finish(*v, h);
            }
        }
        Ok(Tensor::from_values(data, self.sizes()))
    }

    /// `torch.scatter(self, dim, index, src)` (out of place); `reduce` is "add" or "multiply".
    pub fn scatter_src(
        &self,
        dim: i64,
        index: &Tensor,
        src: &Tensor,
        reduce: Option<&str>,
    ) -> Result<Tensor> {
        self.check_scatter_gather(dim, index, Some(src), "scatter")?;
        if src.dtype() != self.dtype() {
            return Err(invalid(
                "scatter(): Expected self.dtype to be equal to src.dtype".to_string(),
            ));
        }
        let src_sizes: Vec<usize> = if src.dim() == 0 {
            vec![1]
        } else {
            src.sizes().to_vec()
        };
        dispatch_dtype!(self.dtype(), T => {
            let s = src.gather::<T>();
            self.scatter_reduce_legacy::<T>(dim, index, &s, &src_sizes, reduce)
        })
    }

    /// `torch.scatter(self, dim, index, value)` with a scalar value.
    pub fn scatter_value(
        &self,
        dim: i64,
        index: &Tensor,
        value: &Scalar,
        reduce: Option<&str>,
    ) -> Result<Tensor> {
        self.check_scatter_gather(dim, index, None, "scatter")?;
        dispatch_dtype!(self.dtype(), T => {
            let s = vec![T::from_scalar(value)];
            self.scatter_reduce_legacy::<T>(dim, index, &s, &[], reduce)
        })
    }

    fn scatter_reduce_legacy<T: Arith>(
        &self,
        dim: i64,
        index: &Tensor,
        src: &[T],
        src_sizes: &[usize],
        reduce: Option<&str>,
    ) -> Result<Tensor> {
        match reduce {
            None => self.scatter_with(dim, index, src, src_sizes, "scatter", |_, v, _| v, |v, _| v),
            Some("add") => self.scatter_with(
                dim,
                index,
                src,
                src_sizes,
                "scatter",
                |a, v, _| a.add(v),
                |v, _| v,
            ),
            Some("multiply") => self.scatter_with(
                dim,
                index,
                src,
                src_sizes,
                "scatter",
                |a, v, _| a.mul(v),
                |v, _| v,
            ),
            Some(other) => Err(invalid(format!(
                "reduce argument must be either add or multiply. Got {other}"
            ))),
        }
    }

    /// `torch.scatter_add(self, dim, index, src)`.
    pub fn scatter_add(&self, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        self.scatter_src(dim, index, src, Some("add"))
    }

    /// `torch.scatter_reduce(self, dim, index, src, reduce, include_self)`.
    pub fn scatter_reduce(
        &self,
        dim: i64,
        index: &Tensor,
        src: &Tensor,
        reduce: &str,
        include_self: bool,
    ) -> Result<Tensor> {
        self.check_scatter_gather(dim, index, Some(src), "scatter_reduce")?;
        if src.dtype() != self.dtype() {
            return Err(invalid(
                "scatter_reduce(): Expected self.dtype to be equal to src.dtype",
            ));
        }
        let src_sizes: Vec<usize> = if src.dim() == 0 {
            vec![1]
        } else {
            src.sizes().to_vec()
        };
        let floating = self.dtype().is_floating_point();
        dispatch_dtype!(self.dtype(), T => {
            let s = src.gather::<T>();
            let start = move |a: T, v: T, hits: usize| if hits == 0 && !include_self { None } else { Some((a, v)) };
            match reduce {
                "sum" => self.scatter_with(dim, index, &s, &src_sizes, "scatter_reduce", |a, v, h| match start(a, v, h) { None => v, Some((a, v)) => a.add(v) }, |v, _| v),
                "prod" => self.scatter_with(dim, index, &s, &src_sizes, "scatter_reduce", |a, v, h| match start(a, v, h) { None => v, Some((a, v)) => a.mul(v) }, |v, _| v),
                // This PyTorch version also accepts "max" and "min" for amax and amin.
                "amax" | "max" => self.scatter_with(dim, index, &s, &src_sizes, "scatter_reduce", |a, v, h| match start(a, v, h) { None => v, Some((a, v)) => a.nan_max(v) }, |v, _| v),
                "amin" | "min" => self.scatter_with(dim, index, &s, &src_sizes, "scatter_reduce", |a, v, h| match start(a, v, h) { None => v, Some((a, v)) => a.nan_min(v) }, |v, _| v),
                "mean" => self.scatter_with(dim, index, &s, &src_sizes, "scatter_reduce", |a, v, h| match start(a, v, h) { None => v, Some((a, v)) => a.add(v) }, |v, h| {
                    let n = T::from_i64((h + usize::from(include_self)) as i64);
                    if floating { Arith::div(v, n) } else { Arith::div_floor(v, n) }
                }),
                other => Err(invalid(format!("reduce argument must be either sum, prod, mean, amax or amin, got {other}"))),
            }
        })
    }

    /// `torch.masked_select(self, mask)`: 1-D tensor of the elements where the broadcast mask is true.
    pub fn masked_select(&self, mask: &Tensor) -> Result<Tensor> {
        if mask.dtype() != DType::Bool {
            return Err(invalid(
                "masked_select: expected BoolTensor for mask".to_string(),
            ));
        }
        let shape = broadcast_shapes(self.sizes(), mask.sizes())?;
        let m = mask.broadcast_to(&shape)?.to_i64_vec();
        let src = self.broadcast_to(&shape)?;
        dispatch_dtype!(self.dtype(), T => {
            let values = src.gather::<T>();
            let out: Vec<T> = values.into_iter().zip(m).filter(|(_, k)| *k != 0).map(|(v, _)| v).collect();
            let n = out.len();
            Ok(Tensor::from_values(out, &[n]))
        })
    }

    /// `torch.masked_scatter(self, mask, source)`: fills true positions with consecutive source elements.
    pub fn masked_scatter(&self, mask: &Tensor, source: &Tensor) -> Result<Tensor> {
        if mask.dtype() != DType::Bool {
            return Err(invalid(
                "masked_scatter_ only supports boolean masks, but got mask with dtype ",
            ));
        }
        if source.dtype() != self.dtype() {
            return Err(invalid(format!(
                "masked_scatter_: expected self and source to have same dtypes but got{} and {}",
                self.dtype().scalar_type_name(),
                source.dtype().scalar_type_name()
            )));
        }
        let shape = broadcast_shapes(self.sizes(), mask.sizes())?;
        let m = mask.broadcast_to(&shape)?.to_i64_vec();
        dispatch_dtype!(self.dtype(), T => {
            let mut values = self.broadcast_to(&shape)?.gather::<T>();
            let src = source.gather::<T>();
            let mut next = 0;
            for (v, k) in values.iter_mut().zip(m) {
                if k != 0 {
                    let Some(&s) = src.get(next) else {
                        return Err(invalid("masked_scatter: expected source to have at least as many elements as ones in mask"));
                    };
                    *v = s;
                    next += 1;
                }
            }
            Ok(Tensor::from_values(values, &shape))
        })
    }

    /// `torch.nonzero(self)`: `[n, ndim]` int64 coordinates of nonzero elements, row-major.
    pub fn nonzero(&self) -> Result<Tensor> {
        let values = self.to_f64_vec();
        let ndim = self.dim();
        let mut coords = vec![0usize; ndim];
        let mut out = Vec::new();
        let mut count = 0;
        for (i, v) in values.iter().enumerate() {
            if *v != 0.0 {
                unravel(i, self.sizes(), &mut coords);
                out.extend(coords.iter().map(|&c| c as i64));
                count += 1;
            }
        }
        Ok(Tensor::from_values(out, &[count, ndim]))
    }

    /// `torch.nonzero(self, as_tuple=True)` / `torch.where(cond)`: one 1-D index tensor per dim.
    pub fn nonzero_tuple(&self) -> Result<Vec<Tensor>> {
        if self.dim() == 0 {
            return Ok(vec![self
                .reshape_usize(&[1])?
                .nonzero()?
                .select(1, 0)?
                .contiguous()]);
        }
        let nz = self.nonzero()?;
        (0..self.dim())
            .map(|k| Ok(nz.select(1, k as i64)?.contiguous()))
            .collect()
    }

    /// `torch.take(self, index)`: indexes the flattened tensor; result has the index's shape.
    pub fn take(&self, index: &Tensor) -> Result<Tensor> {
        require_long(index, "take")?;
        let n = self.numel();
        dispatch_dtype!(self.dtype(), T => {
            let values = self.gather::<T>();
            let out = index
                .to_i64_vec()
                .into_iter()
                .map(|i| {
                    let s = n as i64;
                    if i < -s || i >= s {
                        Err(invalid(format!("out of range: tried to access index {i} on a tensor of {n} elements.")))
                    } else {
                        Ok(values[if i < 0 { (i + s) as usize } else { i as usize }])
                    }
                })
                .collect::<Result<Vec<T>>>()?;
            Ok(Tensor::from_values(out, index.sizes()))
        })
    }
}
