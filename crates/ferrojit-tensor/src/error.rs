//! The single error type of the tensor library, with PyTorch-like messages.

use crate::dtype::DType;

/// Every failure the tensor library can report. Messages follow PyTorch's wording where one exists.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TensorError {
    #[error("Dimension out of range (expected to be in range of [{min}, {max}], but got {dim})")]
    DimOutOfRange { dim: i64, min: i64, max: i64 },

    #[error("The size of tensor a ({size_a}) must match the size of tensor b ({size_b}) at non-singleton dimension {dim}")]
    BroadcastMismatch {
        size_a: usize,
        size_b: usize,
        dim: usize,
    },

    #[error("result type {} can't be cast to the desired output type {}", .from.scalar_type_name(), .to.scalar_type_name())]
    CannotCast { from: DType, to: DType },

    #[error("output with shape {} doesn't match the broadcast shape {}", format_shape(.output), format_shape(.broadcast))]
    OutputShapeMismatch {
        output: Vec<usize>,
        broadcast: Vec<usize>,
    },

    #[error("shape '{}' is invalid for input of size {numel}", format_shape_i64(.shape))]
    InvalidShape { shape: Vec<i64>, numel: usize },

    #[error("view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.")]
    ViewNotCompatible,

    #[error("{op}(): index {index} out of range for tensor of size {} at dimension {dim}", format_shape(.sizes))]
    IndexOutOfRange {
        op: &'static str,
        index: i64,
        dim: usize,
        sizes: Vec<usize>,
    },

    #[error(
        "{op}: mat1 and mat2 shapes cannot be multiplied ({rows_a}x{cols_a} and {rows_b}x{cols_b})"
    )]
    MatmulShape {
        op: &'static str,
        rows_a: usize,
        cols_a: usize,
        rows_b: usize,
        cols_b: usize,
    },

    #[error("sizes {}, strides {}, storage offset {offset}, and itemsize {item_size} requiring a storage size of {required_bytes} are out of bounds for storage of size {storage_bytes}", format_shape(.sizes), format_shape(.strides))]
    StorageOutOfBounds {
        sizes: Vec<usize>,
        strides: Vec<usize>,
        offset: usize,
        item_size: usize,
        required_bytes: u128,
        storage_bytes: usize,
    },

    #[error("byte range {start}..{end} lies outside the {len} bytes that hold it")]
    ByteRangeOutOfBounds {
        start: usize,
        end: usize,
        len: usize,
    },

    #[error("byte length {len} is not a multiple of the item size {item_size} of {}", .dtype.name())]
    ByteLengthNotMultiple {
        len: usize,
        item_size: usize,
        dtype: DType,
    },

    #[error("\"{op}\" not implemented for '{}'", .dtype.scalar_type_name())]
    NotImplementedForDType { op: &'static str, dtype: DType },

    #[error("unsupported storage type '{0}'")]
    UnknownStorageType(String),

    #[error("unsupported scalar type index {0}")]
    UnknownScalarType(i64),

    #[error("expected scalar type {} but found {}", .expected.scalar_type_name(), .actual.scalar_type_name())]
    TypeMismatch { expected: DType, actual: DType },

    #[error("a Tensor with {numel} elements cannot be converted to Scalar")]
    NotASingleElement { numel: usize },

    #[error("{numel} values cannot fill a tensor of shape {}", format_shape(.sizes))]
    ElementCountMismatch { numel: usize, sizes: Vec<usize> },

    #[error("ZeroDivisionError")]
    ZeroDivision,

    #[error("tensor size computation overflowed")]
    SizeOverflow,

    /// Any other invalid argument; the text is the full PyTorch-like message.
    #[error("{0}")]
    InvalidArgument(String),
}

/// Shorthand result type of the tensor library.
pub type Result<T> = std::result::Result<T, TensorError>;

/// Formats a shape like PyTorch's `IntArrayRef` printing: `[2, 3]`.
pub fn format_shape(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(|s| s.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// Same as [`format_shape`] for signed sizes (requested shapes may contain -1).
pub fn format_shape_i64(shape: &[i64]) -> String {
    let parts: Vec<String> = shape.iter().map(|s| s.to_string()).collect();
    format!("[{}]", parts.join(", "))
}
