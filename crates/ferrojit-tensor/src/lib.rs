//! ferrojit-tensor: a small CPU tensor library with PyTorch semantics (dtypes, type promotion,
//! broadcasting, strided views over shared storage) for the ferrojit TorchScript runtime.

mod macros;

pub mod complex;
pub mod display;
pub mod dtype;
pub mod element;
pub mod error;
pub mod gemm;
pub mod linalg;
pub mod ops;
pub mod promotion;
pub mod shape;
pub mod special_functions;
pub mod spectral;
pub mod storage;
pub mod tensor;

pub use complex::{Complex128, Complex64};
pub use dtype::{can_cast, promote_types, DType, Scalar, TypeCategory};
pub use element::Element;
pub use error::{Result, TensorError};
pub use ops::binary::RoundingMode;
pub use ops::join::{cat, stack};
pub use ops::linalg::linear;
pub use promotion::{result_type, ResultTypeState};
pub use shape::{broadcast_shapes, contiguous_strides, wrap_dim};
pub use storage::{Buffer, Elements, SharedBytes, Storage};
pub use tensor::Tensor;
