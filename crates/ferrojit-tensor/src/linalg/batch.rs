//! Shared checks and the batch walk: a `(..., m, n)` tensor read as f64 matrices, and results
//! written back in the input's dtype.

use crate::dtype::DType;
use crate::error::{Result, TensorError};
use crate::tensor::Tensor;

/// A `(..., rows, cols)` tensor's matrices as one row-major f64 buffer.
pub(crate) struct Matrices {
    /// The leading (batch) sizes.
    pub batch_sizes: Vec<usize>,
    pub rows: usize,
    pub cols: usize,
    /// `batch * rows * cols` values, matrix after matrix.
    pub values: Vec<f64>,
    /// The input's dtype, which results keep.
    pub dtype: DType,
}

impl Matrices {
    /// How many matrices.
    pub fn count(&self) -> usize {
        self.batch_sizes.iter().product()
    }

    /// Matrix `index` as a row-major slice.
    pub fn matrix(&self, index: usize) -> &[f64] {
        let size = self.rows * self.cols;
        &self.values[index * size..(index + 1) * size]
    }

    /// The sizes of a result of `rows x cols` matrices with the same batch.
    pub fn sizes_with(&self, trailing: &[usize]) -> Vec<usize> {
        let mut sizes = self.batch_sizes.clone();
        sizes.extend_from_slice(trailing);
        sizes
    }
}

/// PyTorch's check that `op` got a floating tensor: integer and bool inputs are refused with
/// its words; complex ones are refused because ferrojit's linalg is real-only for now.
pub(crate) fn check_floating(op: &str, tensor: &Tensor) -> Result<()> {
    match tensor.dtype() {
        DType::Float32 | DType::Float64 => Ok(()),
        DType::ComplexFloat | DType::ComplexDouble => Err(TensorError::InvalidArgument(format!(
            "{op}: complex inputs are not supported by ferrojit yet (got {})",
            tensor.dtype().scalar_type_name()
        ))),
        other => Err(TensorError::InvalidArgument(format!(
            "{op}: Expected a floating point or complex tensor as input. Got {}",
            other.scalar_type_name()
        ))),
    }
}

/// Reads `tensor` (named `name` in errors) as matrices, checking it has two or more dims.
pub(crate) fn read_matrices(op: &str, name: &str, tensor: &Tensor) -> Result<Matrices> {
    check_floating(op, tensor)?;
    let sizes = tensor.sizes();
    if sizes.len() < 2 {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: The input tensor {name} must have at least 2 dimensions."
        )));
    }
    let (batch, matrix) = sizes.split_at(sizes.len() - 2);
    Ok(Matrices {
        batch_sizes: batch.to_vec(),
        rows: matrix[0],
        cols: matrix[1],
        values: tensor.to_f64_vec(),
        dtype: tensor.dtype(),
    })
}

/// As [`read_matrices`], and the matrices must be square.
pub(crate) fn read_square(op: &str, name: &str, tensor: &Tensor) -> Result<Matrices> {
    let matrices = read_matrices(op, name, tensor)?;
    if matrices.rows != matrices.cols {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: {name} must be batches of square matrices, but they are {} by {} matrices",
            matrices.rows, matrices.cols
        )));
    }
    Ok(matrices)
}

/// A tensor of `dtype` (f32 or f64) from f64 values.
pub(crate) fn tensor_from_f64(values: Vec<f64>, sizes: &[usize], dtype: DType) -> Result<Tensor> {
    match dtype {
        DType::Float32 => Tensor::from_vec(values.into_iter().map(|v| v as f32).collect(), sizes),
        _ => Tensor::from_vec(values, sizes),
    }
}

/// `(Batch element 3): ` in front of a failure of one matrix of a batch, as PyTorch writes it;
/// nothing for an unbatched input.
pub(crate) fn batch_prefix(batched: bool, index: usize) -> String {
    if batched {
        format!("(Batch element {index}): ")
    } else {
        String::new()
    }
}

/// Transposes a row-major `rows x cols` matrix.
pub(crate) fn transpose(matrix: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut out = vec![0.0; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = matrix[r * cols + c];
        }
    }
    out
}

/// Broadcasts two batch shapes (PyTorch's rule), naming `op` in the error.
pub(crate) fn broadcast_batch(op: &str, a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    crate::shape::broadcast_shapes(a, b).map_err(|_| {
        TensorError::InvalidArgument(format!(
            "{op}: the batch dimensions {} and {} cannot be broadcast",
            crate::error::format_shape(a),
            crate::error::format_shape(b)
        ))
    })
}

/// The flat index, in a batch of shape `from`, of element `index` of the broadcast batch
/// shape `to` (`from` broadcasts to `to`).
pub(crate) fn broadcast_source_index(index: usize, to: &[usize], from: &[usize]) -> usize {
    let mut remaining = index;
    let mut source = 0;
    let mut stride = 1;
    // Walk dims from the last; `from` is right-aligned inside `to`.
    for (position, &size) in to.iter().enumerate().rev() {
        let coordinate = remaining % size.max(1);
        remaining /= size.max(1);
        let offset = to.len() - position;
        if offset <= from.len() {
            let from_size = from[from.len() - offset];
            if from_size != 1 {
                source += coordinate * stride;
            }
            stride *= from_size;
        }
    }
    source
}
