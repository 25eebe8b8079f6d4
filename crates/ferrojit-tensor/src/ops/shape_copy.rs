//! Operators built from views: writing a tensor into a view of a copy (`as_strided_scatter`,
//! `diagonal_scatter`), diagonal embedding (`diag_embed`, `diagflat`) and the joins and splits
//! of PyTorch's composite layer (`block_diag`, `cartesian_prod`, `combinations`,
//! `column_stack`, `dstack`, `hsplit`/`vsplit`/`dsplit`, `inner`, `_chunk_cat`,
//! `nonzero_static`). The `*_copy` forms of the view operators are the view followed by
//! [`Tensor::clone_tensor`], so they never alias their input.

use crate::dtype::DType;
use crate::error::{format_shape, Result, TensorError};
use crate::ops::creation::meshgrid;
use crate::ops::join::cat;
use crate::promotion::result_type;
use crate::shape::wrap_dim;
use crate::tensor::Tensor;

fn invalid(message: impl Into<String>) -> TensorError {
    TensorError::InvalidArgument(message.into())
}

fn sizes_i64(sizes: &[usize]) -> Vec<i64> {
    sizes.iter().map(|&s| s as i64).collect()
}

/// PyTorch's message when `src` does not have the shape of the view it is written into.
fn check_slice_shape(slice: &Tensor, src: &Tensor) -> Result<()> {
    if slice.sizes() != src.sizes() {
        let text = |sizes: &[usize]| {
            sizes
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(invalid(format!(
            "expected src to have a size equal to the slice of self. src size = [{}], slice size = [{}]",
            text(src.sizes()),
            text(slice.sizes())
        )));
    }
    Ok(())
}

impl Tensor {
    /// `torch.as_strided_scatter(self, src, size, stride, storage_offset)`: a contiguous copy
    /// of `self` with `src` written into its `as_strided` view.
    pub fn as_strided_scatter(
        &self,
        src: &Tensor,
        sizes: &[i64],
        strides: &[i64],
        storage_offset: Option<i64>,
    ) -> Result<Tensor> {
        let copy = self.clone_tensor();
        let slice = copy.as_strided(sizes, strides, storage_offset)?;
        check_slice_shape(&slice, src)?;
        slice.copy_(src)?;
        Ok(copy)
    }

    /// `torch.slice_scatter(self, src, dim, start, end, step)`: a copy of `self` whose slice
    /// `[start:end:step]` along `dim` is `src`, which must have the slice's shape.
    pub fn slice_scatter(
        &self,
        src: &Tensor,
        dim: i64,
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    ) -> Result<Tensor> {
        let copy = self.clone_tensor();
        let slice = copy.slice(dim, start, end, step)?;
        check_slice_shape(&slice, src)?;
        slice.copy_(src)?;
        Ok(copy)
    }

    /// `torch.diagonal_scatter(self, src, offset, dim1, dim2)`: a copy of `self` with `src`
    /// written along the diagonal.
    pub fn diagonal_scatter(
        &self,
        src: &Tensor,
        offset: i64,
        dim1: i64,
        dim2: i64,
    ) -> Result<Tensor> {
        let copy = self.clone_tensor();
        let slice = copy.diagonal(offset, dim1, dim2)?;
        check_slice_shape(&slice, src)?;
        slice.copy_(src)?;
        Ok(copy)
    }

    /// `torch.diag_embed(self, offset, dim1, dim2)`: the last dimension of `self` becomes the
    /// `offset` diagonal of new square planes at `dim1` and `dim2` of the result.
    pub fn diag_embed(&self, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
        let rank = self.dim() + 1;
        let first = wrap_dim(dim1, rank)?;
        let second = wrap_dim(dim2, rank)?;
        if first == second {
            return Err(invalid(format!(
                "diagonal dimensions cannot be identical {dim1}, {dim2}"
            )));
        }
        let last = if self.dim() == 0 {
            1
        } else {
            self.sizes()[self.dim() - 1]
        };
        let side = last + offset.unsigned_abs() as usize;
        let mut batch: Vec<usize> = if self.dim() == 0 {
            Vec::new()
        } else {
            self.sizes()[..self.dim() - 1].to_vec()
        };
        // Insert the two new dims in increasing position order.
        let (low, high) = (first.min(second), first.max(second));
        batch.insert(low, side);
        batch.insert(high, side);
        let result = Tensor::zeros(&batch, self.dtype())?;
        result.diagonal(offset, dim1, dim2)?.copy_(self)?;
        Ok(result)
    }

    /// `torch.diagflat(self, offset)`: the flattened input on the `offset` diagonal of a
    /// square matrix.
    pub fn diagflat(&self, offset: i64) -> Result<Tensor> {
        self.contiguous().reshape(&[-1])?.diag(offset)
    }

    /// `torch.inner(self, other)`: the sum of products over the last dimensions (a product
    /// when either is 0-dim).
    pub fn inner(&self, other: &Tensor) -> Result<Tensor> {
        if self.dim() == 0 || other.dim() == 0 {
            return self.mul(other);
        }
        let (a, b) = (self.sizes(), other.sizes());
        if a[a.len() - 1] != b[b.len() - 1] {
            return Err(invalid(format!(
                "inner() the last dimension must match on both input tensors but got shapes {} and {}",
                format_shape(a),
                format_shape(b)
            )));
        }
        self.tensordot(other, &[-1], &[-1])
    }

    /// `torch.nonzero_static(self, size, fill_value)`: `nonzero()` cut or padded (with
    /// `fill_value` rows) to exactly `size` rows.
    pub fn nonzero_static(&self, size: i64, fill_value: i64) -> Result<Tensor> {
        let size = usize::try_from(size)
            .map_err(|_| invalid("nonzero_static: 'size' must be an non-negative integer"))?;
        let found = self.nonzero()?;
        let ndim = self.dim();
        let coordinates = found.to_i64_vec();
        let kept = found.sizes()[0].min(size);
        let mut values = coordinates[..kept * ndim].to_vec();
        values.resize(size * ndim, fill_value);
        Tensor::from_vec(values, &[size, ndim])
    }

    /// `torch.hsplit`, `torch.vsplit` and `torch.dsplit` with a number of sections: equal
    /// parts along dimension 1 (0 for 1-D input), 0 and 2.
    pub fn directional_split_sections(
        &self,
        which: SplitDirection,
        sections: i64,
    ) -> Result<Vec<Tensor>> {
        let dim = which.check(self)?;
        let size = self.sizes()[dim] as i64;
        if sections == 0 || size % sections != 0 {
            return Err(invalid(format!(
                "torch.{} attempted to split along dimension {dim}, but the size of the dimension {size} is not divisible by the split_size {sections}!",
                which.name()
            )));
        }
        self.tensor_split_sections(sections, dim as i64)
    }

    /// `torch.hsplit`/`vsplit`/`dsplit` at a list of indices.
    pub fn directional_split_indices(
        &self,
        which: SplitDirection,
        indices: &[i64],
    ) -> Result<Vec<Tensor>> {
        let dim = which.check(self)?;
        self.tensor_split_indices(indices, dim as i64)
    }
}

/// Which of `hsplit`, `vsplit` and `dsplit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitDirection {
    Horizontal,
    Vertical,
    Depth,
}

impl SplitDirection {
    fn name(self) -> &'static str {
        match self {
            SplitDirection::Horizontal => "hsplit",
            SplitDirection::Vertical => "vsplit",
            SplitDirection::Depth => "dsplit",
        }
    }

    /// The rank the split needs and the dimension it splits, after checking the rank.
    fn check(self, tensor: &Tensor) -> Result<usize> {
        let (rank, dim) = match self {
            SplitDirection::Horizontal => (1, if tensor.dim() == 1 { 0 } else { 1 }),
            SplitDirection::Vertical => (2, 0),
            SplitDirection::Depth => (3, 2),
        };
        if tensor.dim() < rank {
            return Err(invalid(format!(
                "torch.{} requires a tensor with at least {rank} dimension, but got a tensor with {} dimensions!",
                self.name(),
                tensor.dim()
            )));
        }
        Ok(dim)
    }
}

/// `torch.block_diag(*tensors)`: the inputs (0-D as 1x1, 1-D as one row) along the diagonal
/// of one matrix of their promoted dtype.
pub fn block_diag(tensors: &[Tensor]) -> Result<Tensor> {
    let mut blocks = Vec::with_capacity(tensors.len());
    for (index, tensor) in tensors.iter().enumerate() {
        let block = match tensor.dim() {
            0 => tensor.reshape(&[1, 1])?,
            1 => tensor.reshape(&[1, -1])?,
            2 => tensor.clone(),
            rank => {
                return Err(invalid(format!(
                    "torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {index} has {rank} dimensions"
                )))
            }
        };
        blocks.push(block);
    }
    let dtype = if blocks.is_empty() {
        DType::Float32
    } else {
        result_type(&blocks.iter().collect::<Vec<_>>())
    };
    let rows: usize = blocks.iter().map(|b| b.sizes()[0]).sum();
    let cols: usize = blocks.iter().map(|b| b.sizes()[1]).sum();
    // PyTorch's empty call gives a 1x0 matrix.
    let rows = if blocks.is_empty() { 1 } else { rows };
    let result = Tensor::zeros(&[rows, cols], dtype)?;
    let (mut row, mut col) = (0i64, 0i64);
    for block in &blocks {
        let (r, c) = (block.sizes()[0] as i64, block.sizes()[1] as i64);
        result
            .narrow(0, row, r)?
            .narrow(1, col, c)?
            .copy_(&block.to_dtype(dtype))?;
        row += r;
        col += c;
    }
    Ok(result)
}

fn require_vector(tensor: &Tensor) -> Result<()> {
    if tensor.dim() != 1 {
        return Err(invalid(format!(
            "Expect a 1D vector, but got shape {}",
            format_shape(tensor.sizes())
        )));
    }
    Ok(())
}

/// `torch.cartesian_prod(*tensors)`: every combination of one element of each 1-D input, one
/// row each (a single input is returned as it is).
pub fn cartesian_prod(tensors: &[Tensor]) -> Result<Tensor> {
    for tensor in tensors {
        require_vector(tensor)?;
    }
    if tensors.len() == 1 {
        return Ok(tensors[0].clone());
    }
    let grids = meshgrid(tensors, "ij")?;
    let columns = grids
        .iter()
        .map(|grid| grid.reshape(&[-1]))
        .collect::<Result<Vec<_>>>()?;
    crate::ops::join::stack(&columns, 1)
}

/// `torch.combinations(self, r, with_replacement)`: the length-`r` combinations of the
/// elements of a 1-D tensor, in lexicographic order of their positions.
pub fn combinations(input: &Tensor, r: i64, with_replacement: bool) -> Result<Tensor> {
    require_vector(input)?;
    let r = usize::try_from(r)
        .map_err(|_| invalid(format!("Expect a non-negative number, but got {r}")))?;
    if r == 0 {
        return Tensor::zeros(&[0], input.dtype());
    }
    let n = input.numel();
    let mut positions: Vec<i64> = Vec::new();
    let mut current = vec![0usize; r];
    // Walks the non-decreasing (with replacement) or increasing index tuples in order.
    fn visit(
        depth: usize,
        start: usize,
        n: usize,
        with_replacement: bool,
        current: &mut Vec<usize>,
        out: &mut Vec<i64>,
    ) {
        if depth == current.len() {
            out.extend(current.iter().map(|&i| i as i64));
            return;
        }
        for i in start..n {
            current[depth] = i;
            let next = if with_replacement { i } else { i + 1 };
            visit(depth + 1, next, n, with_replacement, current, out);
        }
    }
    visit(0, 0, n, with_replacement, &mut current, &mut positions);
    let count = positions.len() / r;
    let index = Tensor::from_vec(positions, &[count * r])?;
    input
        .index_select(0, &index)?
        .reshape(&[count as i64, r as i64])
}

/// `torch.column_stack(tensors)`: 0-D and 1-D inputs as columns, then `hstack`.
pub fn column_stack(tensors: &[Tensor]) -> Result<Tensor> {
    if tensors.is_empty() {
        return Err(invalid("column_stack expects a non-empty TensorList"));
    }
    let columns = tensors
        .iter()
        .map(|t| {
            if t.dim() <= 1 {
                t.reshape(&[t.numel() as i64, 1])
            } else {
                Ok(t.clone())
            }
        })
        .collect::<Result<Vec<_>>>()?;
    crate::ops::creation::hstack(&columns)
}

/// `torch.dstack(tensors)`: `atleast_3d` of each, joined along dimension 2.
pub fn dstack(tensors: &[Tensor]) -> Result<Tensor> {
    if tensors.is_empty() {
        return Err(invalid("dstack expects a non-empty TensorList"));
    }
    let planes = tensors
        .iter()
        .map(|t| {
            let sizes = sizes_i64(t.sizes());
            match sizes.as_slice() {
                [] => t.reshape(&[1, 1, 1]),
                [n] => t.reshape(&[1, *n, 1]),
                [m, n] => t.reshape(&[*m, *n, 1]),
                _ => Ok(t.clone()),
            }
        })
        .collect::<Result<Vec<_>>>()?;
    cat(&planes, 2)
}

/// `torch._chunk_cat(tensors, dim, num_chunks)`: each input cut into `num_chunks` equal
/// chunks along `dim` (zero-padded to a multiple), each chunk flattened past `dim`, and chunk
/// `i` of every input joined into row `i` of a new dimension `dim`.
pub fn chunk_cat(tensors: &[Tensor], dim: i64, num_chunks: i64) -> Result<Tensor> {
    let Some(first) = tensors.first() else {
        return Err(invalid("_chunk_cat expects a non-empty input tensor list"));
    };
    if num_chunks < 1 {
        return Err(invalid("_chunk_cat expects positive num_chunks"));
    }
    let d = wrap_dim(dim, first.dim())?;
    let chunks = num_chunks as usize;
    for tensor in tensors {
        if tensor.dtype() != first.dtype() {
            return Err(invalid(
                "_chunk_cat expects all input tensors with the same dtype",
            ));
        }
        if tensor.dim() != first.dim() || tensor.sizes()[..d] != first.sizes()[..d] {
            return Err(invalid(
                "_chunk_cat expects same sizes of 0,...,dim-1 dimensions for all tensors",
            ));
        }
    }
    let leading = &first.sizes()[..d];
    let mut parts = Vec::with_capacity(tensors.len());
    for tensor in tensors {
        let size = tensor.sizes()[d];
        let chunk = size.div_ceil(chunks);
        let trailing: usize = tensor.sizes()[d + 1..].iter().product();
        let mut padded_sizes = tensor.sizes().to_vec();
        padded_sizes[d] = chunk * chunks;
        let padded = Tensor::zeros(&padded_sizes, tensor.dtype())?;
        padded.narrow(d as i64, 0, size as i64)?.copy_(tensor)?;
        let mut shape = sizes_i64(leading);
        shape.push(chunks as i64);
        shape.push((chunk * trailing) as i64);
        parts.push(padded.reshape(&shape)?);
    }
    cat(&parts, d as i64 + 1)
}
