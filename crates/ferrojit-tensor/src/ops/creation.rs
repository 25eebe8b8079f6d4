//! Creation and shape-building ops: eye, linspace/logspace, tril/triu, repeat/tile,
//! repeat_interleave, flip, roll, meshgrid, broadcast_tensors, hstack/vstack. Random tensors
//! live in [`crate::ops::random`] (PyTorch's generator and kernels, value for value) and are
//! re-exported here for existing callers.

pub use crate::ops::random::{
    initial_seed, manual_seed, rand, rand_like, randint, randn, randn_like, randperm,
    with_default_generator, Generator,
};

use crate::dtype::{DType, Scalar};
use crate::error::{format_shape, Result, TensorError};
use crate::macros::dispatch_dtype;
use crate::ops::join::cat;
use crate::shape::{broadcast_shapes, check_allocation, checked_numel, wrap_dim};
use crate::tensor::Tensor;

fn invalid(message: impl Into<String>) -> TensorError {
    TensorError::InvalidArgument(message.into())
}

// ----- deterministic creation -------------------------------------------------------------

/// `torch.eye(n, m)`.
pub fn eye(n: i64, m: Option<i64>, dtype: DType) -> Result<Tensor> {
    let m = m.unwrap_or(n);
    if n < 0 {
        return Err(invalid(format!("n must be greater or equal to 0, got {n}")));
    }
    if m < 0 {
        return Err(invalid(format!("m must be greater or equal to 0, got {m}")));
    }
    let (n, m) = (n as usize, m as usize);
    let out = Tensor::zeros(&[n, m], dtype)?;
    let values: Vec<f64> = (0..n * m)
        .map(|i| f64::from(u8::from(i / m.max(1) == i % m.max(1))))
        .collect();
    out.copy_(&crate::ops::nn::from_f64(values, &[n, m], dtype))?;
    Ok(out)
}

/// `torch.linspace(start, end, steps)`, with PyTorch's symmetric fill (from both ends).
pub fn linspace(start: f64, end: f64, steps: i64, dtype: DType) -> Result<Tensor> {
    if steps < 0 {
        return Err(invalid("number of steps must be non-negative"));
    }
    let steps = steps as usize;
    check_allocation(steps, dtype)?;
    let (start, end) = if dtype.is_floating_point() {
        (start, end)
    } else {
        // PyTorch converts the endpoints to the integral dtype first (truncating, and
        // wrapping like a C cast), then steps between them in double.
        (wrap_integral(start, dtype), wrap_integral(end, dtype))
    };
    let values = linspace_values(start, end, steps, dtype.is_floating_point());
    Ok(crate::ops::nn::from_f64(values, &[steps], dtype))
}

/// `value` truncated and wrapped into an integral dtype's range, as c10's scalar conversion.
fn wrap_integral(value: f64, dtype: DType) -> f64 {
    let whole = value.trunc() as i64;
    match dtype {
        DType::UInt8 => f64::from(whole as u8),
        DType::Int8 => f64::from(whole as i8),
        DType::Int16 => f64::from(whole as i16),
        DType::Int32 => f64::from(whole as i32),
        DType::Bool => f64::from(u8::from(value != 0.0)),
        _ => whole as f64,
    }
}

fn linspace_values(start: f64, end: f64, steps: usize, floating: bool) -> Vec<f64> {
    if steps == 0 {
        return Vec::new();
    }
    if steps == 1 {
        return vec![start];
    }
    let step = (end - start) / (steps - 1) as f64;
    let half = steps / 2;
    (0..steps)
        .map(|i| {
            let v = if i < half {
                start + step * i as f64
            } else {
                end - step * (steps - 1 - i) as f64
            };
            if floating {
                v
            } else {
                v.trunc()
            }
        })
        .collect()
}

/// `torch.logspace(start, end, steps, base)`.
pub fn logspace(start: f64, end: f64, steps: i64, base: f64, dtype: DType) -> Result<Tensor> {
    if steps < 0 {
        return Err(invalid("number of steps must be non-negative"));
    }
    let steps = steps as usize;
    check_allocation(steps, dtype)?;
    let values: Vec<f64> = linspace_values(start, end, steps, true)
        .into_iter()
        .map(|e| {
            let v = base.powf(e);
            if dtype.is_floating_point() {
                v
            } else {
                v.trunc()
            }
        })
        .collect();
    Ok(crate::ops::nn::from_f64(values, &[steps], dtype))
}

impl Tensor {
    /// `torch.tril(self, diagonal)` (`upper == false`) or `torch.triu`.
    fn triangle(&self, diagonal: i64, upper: bool) -> Result<Tensor> {
        if self.dim() < 2 {
            return Err(invalid(format!(
                "{}: input tensor must have at least 2 dimensions",
                if upper { "triu" } else { "tril" }
            )));
        }
        let (rows, cols) = (self.sizes()[self.dim() - 2], self.sizes()[self.dim() - 1]);
        let src = self.contiguous();
        dispatch_dtype!(self.dtype(), T => {
            let mut values = src.gather::<T>();
            let zero: T = crate::element::Element::from_i64(0);
            for (i, v) in values.iter_mut().enumerate() {
                let r = ((i / cols.max(1)) % rows.max(1)) as i64;
                let c = (i % cols.max(1)) as i64;
                let keep = if upper { c - r >= diagonal } else { c - r <= diagonal };
                if !keep {
                    *v = zero;
                }
            }
            Ok(Tensor::from_values(values, self.sizes()))
        })
    }

    pub fn tril(&self, diagonal: i64) -> Result<Tensor> {
        self.triangle(diagonal, false)
    }

    pub fn triu(&self, diagonal: i64) -> Result<Tensor> {
        self.triangle(diagonal, true)
    }

    /// `Tensor.repeat(repeats)`.
    pub fn repeat(&self, repeats: &[i64]) -> Result<Tensor> {
        if repeats.len() < self.dim() {
            return Err(invalid(
                "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor",
            ));
        }
        let reps = crate::ops::nn::to_sizes(repeats, "repeats")?;
        let lead = reps.len() - self.dim();
        let mut padded = vec![1usize; lead];
        padded.extend(self.sizes());
        // View as [1, s0, 1, s1, ...], expand to [r0, s0, r1, s1, ...], then merge pairs.
        let mut view_shape = Vec::new();
        let mut expand_shape = Vec::new();
        let mut out_shape = Vec::new();
        for (&r, &s) in reps.iter().zip(&padded) {
            view_shape.extend([1, s]);
            expand_shape.extend([r, s]);
            out_shape.push(r.checked_mul(s).ok_or(TensorError::SizeOverflow)?);
        }
        checked_numel(&out_shape)?;
        let viewed = self.reshape_usize(&view_shape)?;
        viewed
            .broadcast_to(&expand_shape)?
            .contiguous()
            .reshape_usize(&out_shape)
    }

    /// `torch.tile(self, dims)`: `repeat` with dims padded with leading ones.
    pub fn tile(&self, dims: &[i64]) -> Result<Tensor> {
        let mut reps = vec![1i64; self.dim().saturating_sub(dims.len())];
        reps.extend(dims);
        self.repeat(&reps)
    }

    /// `torch.flip(self, dims)`.
    pub fn flip(&self, dims: &[i64]) -> Result<Tensor> {
        let mut flipped = vec![false; self.dim()];
        for &d in dims {
            let d = wrap_dim(d, self.dim())?;
            if flipped[d] {
                return Err(invalid(format!(
                    "dims has duplicates, original flip dims size={}, but unique flip dims size=",
                    dims.len()
                )));
            }
            flipped[d] = true;
        }
        let sizes = self.sizes().to_vec();
        let src_index = |out: usize| -> usize {
            let mut rem = out;
            let mut idx = 0;
            let mut mult = 1;
            let mut coords = vec![0; sizes.len()];
            for d in (0..sizes.len()).rev() {
                coords[d] = rem % sizes[d];
                rem /= sizes[d];
            }
            for d in (0..sizes.len()).rev() {
                let c = if flipped[d] {
                    sizes[d] - 1 - coords[d]
                } else {
                    coords[d]
                };
                idx += c * mult;
                mult *= sizes[d];
            }
            idx
        };
        dispatch_dtype!(self.dtype(), T => {
            let values = self.gather::<T>();
            let out: Vec<T> = (0..values.len()).map(|i| values[src_index(i)]).collect();
            Ok(Tensor::from_values(out, self.sizes()))
        })
    }

    /// `torch.roll(self, shifts, dims)`; with no dims the flattened tensor is rolled.
    pub fn roll(&self, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
        if dims.is_empty() {
            if shifts.len() != 1 {
                return Err(invalid(format!(
                    "shifts and dimensions must align. shifts: {}, dims:0",
                    shifts.len()
                )));
            }
            return self
                .flatten(0, -1)?
                .roll(shifts, &[0])?
                .reshape_usize(self.sizes());
        }
        if shifts.len() != dims.len() {
            return Err(invalid(format!(
                "shifts and dimensions must align. shifts: {}, dims:{}",
                shifts.len(),
                dims.len()
            )));
        }
        let mut result = self.contiguous();
        for (&shift, &dim) in shifts.iter().zip(dims) {
            let d = wrap_dim(dim, self.dim())?;
            let size = result.sizes()[d] as i64;
            if size == 0 {
                continue;
            }
            let s = shift.rem_euclid(size);
            if s == 0 {
                continue;
            }
            let tail = result.narrow(d as i64, size - s, s)?;
            let head = result.narrow(d as i64, 0, size - s)?;
            result = cat(&[tail, head], d as i64)?;
        }
        Ok(result)
    }

    /// `torch.repeat_interleave(self, repeats, dim)` with a tensor (or broadcast scalar) of repeats.
    pub fn repeat_interleave(&self, repeats: &Tensor, dim: Option<i64>) -> Result<Tensor> {
        let (input, d) = match dim {
            None => (self.flatten(0, -1)?, 0),
            Some(d) => (self.clone(), wrap_dim(d, self.dim())?),
        };
        let len = input.sizes().get(d).copied().unwrap_or(1);
        if repeats.dim() > 1
            || repeats.dtype().is_floating_point()
            || repeats.dtype() == DType::Bool
        {
            return Err(invalid("repeats must be 0-dim or 1-dim tensor"));
        }
        let reps = repeats.to_i64_vec();
        let reps: Vec<i64> = if reps.len() == 1 && repeats.dim() == 0 || reps.len() == 1 && len != 1
        {
            vec![reps[0]; len]
        } else {
            reps
        };
        if reps.len() != len {
            return Err(invalid(
                "repeats must have the same size as input along dim",
            ));
        }
        if reps.iter().any(|&r| r < 0) {
            return Err(invalid("repeats can not be negative"));
        }
        let index: Vec<i64> = reps
            .iter()
            .enumerate()
            .flat_map(|(i, &r)| std::iter::repeat_n(i as i64, r as usize))
            .collect();
        let n = index.len();
        input.index_select(d as i64, &Tensor::from_values(index, &[n]))
    }

    /// `torch.repeat_interleave(repeats)` on a 1-D repeats tensor: `[0]*r0 + [1]*r1 + ...`.
    pub fn repeat_interleave_self_tensor(&self) -> Result<Tensor> {
        if self.dim() != 1 || !self.dtype().is_integral(false) {
            return Err(invalid("repeat_interleave only accept 1D vector as repeat"));
        }
        let reps = self.to_i64_vec();
        if reps.iter().any(|&r| r < 0) {
            return Err(invalid("repeats can not be negative"));
        }
        let out: Vec<i64> = reps
            .iter()
            .enumerate()
            .flat_map(|(i, &r)| std::iter::repeat_n(i as i64, r as usize))
            .collect();
        let n = out.len();
        Ok(Tensor::from_values(out, &[n]).to_dtype(self.dtype()))
    }
}

/// `torch.meshgrid(tensors, indexing)`: `indexing` is "ij" or "xy".
pub fn meshgrid(tensors: &[Tensor], indexing: &str) -> Result<Vec<Tensor>> {
    if tensors.is_empty() {
        return Err(invalid("meshgrid expects a non-empty TensorList"));
    }
    let swap = match indexing {
        "ij" => false,
        "xy" => true,
        other => {
            return Err(invalid(format!(
                "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {other}"
            )))
        }
    };
    for t in tensors {
        if t.dim() > 1 {
            return Err(invalid(format!(
                "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {}",
                format_shape(t.sizes())
            )));
        }
    }
    let dtype = tensors[0].dtype();
    if tensors.iter().any(|t| t.dtype() != dtype) {
        return Err(invalid(
            "meshgrid expects all tensors to have the same dtype",
        ));
    }
    let mut order: Vec<usize> = (0..tensors.len()).collect();
    if swap && tensors.len() >= 2 {
        order.swap(0, 1);
    }
    let shape: Vec<usize> = order.iter().map(|&i| tensors[i].numel()).collect();
    let mut out = Vec::with_capacity(tensors.len());
    for (i, t) in tensors.iter().enumerate() {
        let pos = order.iter().position(|&o| o == i).unwrap_or(i);
        let mut view = vec![1usize; shape.len()];
        view[pos] = t.numel();
        out.push(t.reshape_usize(&view)?.broadcast_to(&shape)?);
    }
    Ok(out)
}

/// `torch.broadcast_tensors(tensors)`: expanded views to the common shape.
pub fn broadcast_tensors(tensors: &[Tensor]) -> Result<Vec<Tensor>> {
    let mut shape: Vec<usize> = Vec::new();
    for t in tensors {
        shape = broadcast_shapes(&shape, t.sizes())?;
    }
    tensors.iter().map(|t| t.broadcast_to(&shape)).collect()
}

/// `torch.hstack`: cat along dim 1 (dim 0 for 1-D inputs), after `atleast_1d`.
pub fn hstack(tensors: &[Tensor]) -> Result<Tensor> {
    let ts: Vec<Tensor> = tensors
        .iter()
        .map(|t| {
            if t.dim() == 0 {
                t.reshape_usize(&[1])
            } else {
                Ok(t.clone())
            }
        })
        .collect::<Result<_>>()?;
    if ts.is_empty() {
        return Err(invalid("hstack expects a non-empty TensorList"));
    }
    let dim = if ts[0].dim() == 1 { 0 } else { 1 };
    cat(&ts, dim)
}

/// `torch.vstack`: cat along dim 0 after `atleast_2d`.
pub fn vstack(tensors: &[Tensor]) -> Result<Tensor> {
    if tensors.is_empty() {
        return Err(invalid("vstack expects a non-empty TensorList"));
    }
    let ts: Vec<Tensor> = tensors
        .iter()
        .map(|t| match t.dim() {
            0 => t.reshape_usize(&[1, 1]),
            1 => t.unsqueeze(0),
            _ => Ok(t.clone()),
        })
        .collect::<Result<_>>()?;
    cat(&ts, 0)
}

/// A tensor of `sizes` filled with `value` cast to `dtype` (alias used by `new_full`, `full_like`).
pub fn full_of(sizes: &[usize], value: Scalar, dtype: DType) -> Result<Tensor> {
    Tensor::full(sizes, value, dtype)
}
