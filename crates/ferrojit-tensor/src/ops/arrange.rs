//! Rearranging and diagonal operators built on views: `movedim`, `ravel`, `unfold`,
//! `fliplr`/`flipud`, `rot90`, `tensor_split`, `diag` and `trace`, each following ATen's
//! composite implementation (TensorShape.cpp, TensorTransformations.cpp, ReduceOps.cpp) so
//! that view-ness, result dtypes and error messages match PyTorch's.

use crate::dtype::DType;
use crate::error::{Result, TensorError};
use crate::shape::wrap_dim;
use crate::tensor::Tensor;

/// A `RuntimeError` with PyTorch's message.
fn invalid(message: String) -> TensorError {
    TensorError::InvalidArgument(message)
}

/// Formats an int list as PyTorch's `IntArrayRef` printer does (`[0, 1]`).
fn format_list(values: &[i64]) -> String {
    let items: Vec<String> = values.iter().map(i64::to_string).collect();
    format!("[{}]", items.join(", "))
}

impl Tensor {
    /// `movedim.intlist`: a permutation view. Dims named in `source` land at `destination`;
    /// the others keep their relative order in the remaining slots (ATen's `movedim`).
    pub fn movedim(&self, source: &[i64], destination: &[i64]) -> Result<Tensor> {
        let n = self.dim();
        if source.len() != destination.len() {
            return Err(invalid(format!(
                "movedim: Invalid source or destination dims: source ({} dims) should contain the same number of dims as destination ({} dims)",
                format_list(source),
                format_list(destination)
            )));
        }
        let wrap_all =
            |dims: &[i64]| -> Result<Vec<usize>> { dims.iter().map(|&d| wrap_dim(d, n)).collect() };
        let src = wrap_all(source)?;
        let dst = wrap_all(destination)?;
        let has_repeat = |dims: &[usize]| {
            let mut seen = vec![false; n.max(1)];
            dims.iter().any(|&d| std::mem::replace(&mut seen[d], true))
        };
        if has_repeat(&src) {
            return Err(invalid(format!(
                "movedim: repeated dim in `source` ({})",
                format_list(source)
            )));
        }
        if has_repeat(&dst) {
            return Err(invalid(format!(
                "movedim: repeated dim in `destination` ({})",
                format_list(destination)
            )));
        }
        if n == 0 {
            // A 0-dim tensor accepts dim 0 / -1 and is returned as a view of itself.
            return Ok(self.clone());
        }
        let mut order: Vec<Option<usize>> = vec![None; n];
        for (&s, &d) in src.iter().zip(&dst) {
            order[d] = Some(s);
        }
        let rest_src = (0..n).filter(|d| !src.contains(d));
        let free_slots: Vec<usize> = (0..n).filter(|d| !dst.contains(d)).collect();
        for (slot, s) in free_slots.into_iter().zip(rest_src) {
            order[slot] = Some(s);
        }
        let perm: Vec<i64> = order.into_iter().map(|d| d.unwrap_or(0) as i64).collect();
        self.permute(&perm)
    }

    /// `ravel`: `contiguous().view(-1)`, so a view exactly when the input is contiguous.
    pub fn ravel(&self) -> Result<Tensor> {
        self.contiguous().view(&[-1])
    }

    /// `Tensor.unfold(dimension, size, step)`: a strided view with a new trailing dim of
    /// length `size` holding every `step`-th window along `dimension`.
    pub fn unfold(&self, dimension: i64, size: i64, step: i64) -> Result<Tensor> {
        let n = self.dim();
        let d = wrap_dim(dimension, n)?;
        let max_size = if n == 0 { 1 } else { self.sizes()[d] as i64 };
        if size > max_size {
            return Err(invalid(format!(
                "maximum size for tensor at dimension {d} is {max_size} but size is {size}"
            )));
        }
        if size < 0 {
            return Err(invalid(format!("size is {size} but must be >= 0")));
        }
        if step <= 0 {
            return Err(invalid(format!("step is {step} but must be > 0")));
        }
        let mut sizes = self.sizes().to_vec();
        let mut strides = self.strides().to_vec();
        if n > 0 {
            sizes[d] = ((max_size - size) / step + 1) as usize;
            // A huge step must be an error, not an overflowing stride.
            strides[d] = usize::try_from(step)
                .ok()
                .and_then(|step| self.strides()[d].checked_mul(step))
                .ok_or(TensorError::SizeOverflow)?;
        }
        sizes.push(size as usize);
        strides.push(if n == 0 { 1 } else { self.strides()[d] });
        Ok(self.with_geometry(sizes, strides, self.storage_offset()))
    }

    /// `fliplr`: a copy flipped along dim 1 (ATen checks the rank first).
    pub fn fliplr(&self) -> Result<Tensor> {
        if self.dim() < 2 {
            return Err(invalid("Input must be >= 2-d.".into()));
        }
        self.flip(&[1])
    }

    /// `flipud`: a copy flipped along dim 0.
    pub fn flipud(&self) -> Result<Tensor> {
        if self.dim() < 1 {
            return Err(invalid("Input must be >= 1-d.".into()));
        }
        self.flip(&[0])
    }

    /// `rot90(k, dims)`: ATen composes flips and a transpose, so for odd `k` the result is
    /// a transposed (non-contiguous) view of a flipped copy, as PyTorch's is.
    pub fn rot90(&self, k: i64, dims: &[i64]) -> Result<Tensor> {
        let total = self.dim() as i64;
        if dims.len() != 2 {
            return Err(invalid(format!(
                "expected total rotation dims == 2, but got dims = {}",
                dims.len()
            )));
        }
        if total < 2 {
            return Err(invalid(format!(
                "expected total dims >= 2, but got total dims = {total}"
            )));
        }
        let (d0, d1) = (dims[0], dims[1]);
        // Dims are range-checked (the standard message) before they are compared, and the
        // comparison message shows them as given.
        if wrap_dim(d0, self.dim())? == wrap_dim(d1, self.dim())? {
            return Err(invalid(format!(
                "expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}"
            )));
        }
        match k.rem_euclid(4) {
            1 => self.flip(&[d1])?.transpose(d0, d1),
            2 => self.flip(dims),
            3 => self.flip(&[d0])?.transpose(d0, d1),
            _ => Ok(self.clone_tensor()),
        }
    }

    /// `tensor_split` needs at least one dimension to split along.
    fn check_tensor_split_rank(&self) -> Result<()> {
        if self.dim() == 0 {
            return Err(invalid(format!(
                "tensor_split expected at least a 1-dimensional tensor, but got a tensor with {} dims",
                self.dim()
            )));
        }
        Ok(())
    }

    /// `tensor_split.sections`: `sections` views; the first `size % sections` get one extra.
    pub fn tensor_split_sections(&self, sections: i64, dim: i64) -> Result<Vec<Tensor>> {
        self.check_tensor_split_rank()?;
        if sections <= 0 {
            return Err(invalid(format!(
                "number of sections must be larger than 0, got {sections}"
            )));
        }
        let d = wrap_dim(dim, self.dim())?;
        let size = self.sizes()[d] as i64;
        let (min_split, extra) = (size / sections, size % sections);
        let mut start = 0;
        // No preallocation: `sections` is caller-controlled and may be far above the size.
        let mut parts = Vec::new();
        for index in 0..sections {
            let len = if index < extra {
                min_split + 1
            } else {
                min_split
            };
            parts.push(self.slice(d as i64, Some(start), Some(start + len), 1)?);
            start += len;
        }
        Ok(parts)
    }

    /// `tensor_split.indices`: views between consecutive split points (clamped like slicing).
    pub fn tensor_split_indices(&self, indices: &[i64], dim: i64) -> Result<Vec<Tensor>> {
        self.check_tensor_split_rank()?;
        let d = wrap_dim(dim, self.dim())? as i64;
        let mut start = 0;
        let mut parts = Vec::with_capacity(indices.len() + 1);
        for &end in indices {
            parts.push(self.slice(d, Some(start), Some(end), 1)?);
            start = end;
        }
        parts.push(self.slice(d, Some(start), Some(self.sizes()[d as usize] as i64), 1)?);
        Ok(parts)
    }

    /// `tensor_split.tensor_indices_or_sections`: a 0-dim long tensor is a section count,
    /// a 1-dim one a list of split indices.
    pub fn tensor_split_tensor(&self, split: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
        self.check_tensor_split_rank()?;
        if split.dtype() != DType::Int64 {
            return Err(invalid(format!(
                "tensor_split expected tensor_indices_or_sections to have dtype of long, but got {}",
                split.dtype().scalar_type_name()
            )));
        }
        match split.dim() {
            0 => self.tensor_split_sections(split.to_i64_vec()[0], dim),
            1 => self.tensor_split_indices(&split.to_i64_vec(), dim),
            n => Err(invalid(format!(
                "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or one-dimensional tensor, but got a tensor with {n} dims"
            ))),
        }
    }

    /// `diag`: a 1-D input becomes a square matrix with it on diagonal `diagonal`; a 2-D
    /// input gives a contiguous copy of that diagonal.
    pub fn diag(&self, diagonal: i64) -> Result<Tensor> {
        match self.dim() {
            1 => {
                let n = self.numel() + diagonal.unsigned_abs() as usize;
                let result = Tensor::zeros(&[n, n], self.dtype())?;
                result.diagonal(diagonal, 0, 1)?.copy_(self)?;
                Ok(result)
            }
            2 => Ok(self.diagonal(diagonal, 0, 1)?.clone_tensor()),
            n => Err(invalid(format!(
                "diag(): Supports 1D or 2D tensors. Got {n}D"
            ))),
        }
    }

    /// `trace`: the sum of the main diagonal of a matrix; integral inputs sum to int64 and
    /// bool is refused (ATen dispatches over ALL_TYPES only).
    pub fn trace(&self) -> Result<Tensor> {
        if self.dim() != 2 {
            return Err(invalid(format!(
                "trace: expected a matrix, but got tensor with dim {}",
                self.dim()
            )));
        }
        if self.dtype() == DType::Bool {
            return Err(TensorError::NotImplementedForDType {
                op: "trace",
                dtype: DType::Bool,
            });
        }
        let dtype = if self.dtype().is_integral(false) {
            Some(DType::Int64)
        } else {
            None
        };
        self.diagonal(0, 0, 1)?.sum(dtype)
    }
}
