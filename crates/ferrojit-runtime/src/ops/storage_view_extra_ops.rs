//! The storage and view operators issue 20 found missing (`view_copy.dtype`,
//! `slice_inverse`, `is_set_to`), PyTorch's serialization test operator
//! `_test_serialization_subcmul`, and `convolution_overrideable`, the hook for out-of-tree
//! backends, which raises on CPU as PyTorch's does.

use std::sync::Arc;

use ferrojit_tensor::{DType, Scalar, Tensor};

use super::binding::typed;
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// `view_copy.dtype`: the bytes of `self` read as `dtype`, in a new tensor.
fn view_copy_dtype(input: Input, dtype: DType) -> Result<Tensor> {
    Ok(input.view_dtype_copy(dtype)?)
}

/// `slice_inverse(self, src, ...)`: `self`'s storage seen with `src`'s geometry (the view
/// `slice` was taken from). The slice arguments only serve the autograd formula.
fn slice_inverse(
    input: Input,
    source: Input,
    _dim: i64,
    _start: Option<i64>,
    _end: Option<i64>,
    _step: i64,
) -> Result<Tensor> {
    let to_i64 = |values: &[usize]| values.iter().map(|&v| v as i64).collect::<Vec<i64>>();
    Ok(input.as_strided(
        &to_i64(source.sizes()),
        &to_i64(source.strides()),
        Some(source.storage_offset() as i64),
    )?)
}

/// `is_set_to`: whether both tensors view the same storage with the same offset, sizes and
/// strides.
fn is_set_to(input: Input, other: Input) -> Result<bool> {
    Ok(input.is_same(&other))
}

/// `_test_serialization_subcmul`: `self - other * alpha`, the product rounded first.
fn serialization_subcmul(input: Input, other: Input, alpha: Scalar) -> Result<Tensor> {
    let product = other.mul(&Tensor::wrapped_scalar(alpha))?;
    Ok(input.sub(&product, &Scalar::Int(1))?)
}

/// PyTorch registers `convolution_overrideable` for backends other than CPU/CUDA/MKLDNN to
/// override; on CPU it refuses with this message (its trailing space included).
const CONVOLUTION_OVERRIDEABLE_REFUSAL: &str = "convolution_overrideable not implemented. You are \
     likely triggering this with tensor backend other than CPU/CUDA/MKLDNN, if this is \
     intended, please use TORCH_LIBRARY_IMPL to override this function ";

fn convolution_overrideable(_arguments: &[IValue]) -> Result<Vec<IValue>> {
    Err(RuntimeError::Other(
        CONVOLUTION_OVERRIDEABLE_REFUSAL.to_string(),
    ))
}

/// Every operator of this file, in declaration order.
pub fn declarations() -> Vec<OperatorDeclaration> {
    #[rustfmt::skip]
    let declarations = vec![
        typed("aten::view_copy.dtype(Tensor self, ScalarType dtype) -> Tensor", view_copy_dtype),
        typed("aten::slice_inverse(Tensor(a) self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)", slice_inverse),
        typed("aten::is_set_to(Tensor self, Tensor tensor) -> bool", is_set_to),
        typed("aten::_test_serialization_subcmul(Tensor self, Tensor other, Scalar alpha=1) -> Tensor", serialization_subcmul),
        OperatorDeclaration::arguments("aten::convolution_overrideable(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor", convolution_overrideable).with_arity(9),
    ];
    declarations
}
