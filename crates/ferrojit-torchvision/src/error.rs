//! Errors of the torchvision operators: bad shapes, dtypes and arguments, with torchvision's
//! wording where it has one.

use ferrojit_tensor::{DType, TensorError};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TorchvisionError {
    /// A tensor argument has the wrong shape.
    #[error("{0}")]
    Shape(String),
    /// A tensor argument has a dtype the operator does not support, or dtypes disagree.
    #[error("{argument}: unsupported dtype {dtype:?} ({requirement})")]
    DType {
        argument: &'static str,
        dtype: DType,
        requirement: &'static str,
    },
    /// A scalar argument is out of range.
    #[error("{0}")]
    Argument(String),
    /// The tensor library refused to build a result.
    #[error(transparent)]
    Tensor(#[from] TensorError),
}
