//! The in-place forms ATen writes by hand (`ldexp_`, `polygamma_`, `fill_diagonal_`,
//! `_index_put_impl_`) and
//! `_safe_softmax`, the softmax of the attention math path that gives 0 for a row whose
//! inputs are all -inf.

use std::sync::Arc;

use ferrojit_tensor::dtype::can_cast;
use ferrojit_tensor::special_functions::{gamma, map_unary};
use ferrojit_tensor::{Scalar, Tensor, TensorError};

use super::binding::{in_place_from_functional, typed, typed_in_place};
use crate::error::{Result, RuntimeError};
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// `ldexp_`: `self * 2**other` written into `self`, whose dtype must hold the result (ATen
/// checks the cast itself, naming `ldexp`, before the write checks the shape).
fn ldexp(input: Input, other: Input) -> Result<Tensor> {
    let result = input.ldexp(&other)?;
    if !can_cast(result.dtype(), input.dtype()) {
        return Err(RuntimeError::Other(format!(
            "ldexp can't be cast to the desired output type {}",
            input.dtype().scalar_type_name()
        )));
    }
    Ok(result)
}

/// `polygamma_(self, n)`: `polygamma(n, self)` written into `self`.
fn polygamma(input: Input, n: i64) -> Result<Tensor> {
    if n < 0 {
        return Err(TensorError::InvalidArgument(
            "polygamma(n, x) does not support negative n.".to_string(),
        )
        .into());
    }
    Ok(map_unary("polygamma", &input, |x| gamma::polygamma(n, x))?)
}

/// `fill_diagonal_`: fills the main diagonal (the elements whose indices are all equal) of a
/// tensor of two or more dims, every dim of equal length beyond two. With `wrap`, a tall
/// matrix's diagonal restarts every `width + 1` rows, as numpy's `fill_diagonal` does.
fn fill_diagonal(input: Input, fill_value: Scalar, wrap: bool) -> Result<Tensor> {
    let dims = input.dim();
    if dims < 2 {
        return Err(RuntimeError::Other(
            "dimensions must larger than 1".to_string(),
        ));
    }
    let sizes = input.sizes();
    let (height, width) = (sizes[0], sizes[1]);
    if dims > 2 && sizes.iter().any(|&size| size != height) {
        return Err(RuntimeError::Other(
            "all dimensions of input must be of equal length".to_string(),
        ));
    }
    let offset = input.storage_offset() as i64;
    // Stepping every index by one moves by the sum of the strides.
    let diagonal_stride: i64 = input.strides().iter().map(|&s| s as i64).sum();
    let length = height.min(width) as i64;
    input
        .as_strided(&[length], &[diagonal_stride], Some(offset))?
        .fill_(&fill_value)?;
    if wrap && dims == 2 && height > width + 1 {
        let step = width + 1;
        let wrapped_length = input.numel().div_ceil(step) as i64 - length;
        let wrapped_offset = offset + input.strides()[0] as i64 * step as i64;
        input
            .as_strided(&[wrapped_length], &[diagonal_stride], Some(wrapped_offset))?
            .fill_(&fill_value)?;
    }
    Ok(Tensor::clone(&input))
}

/// `_index_put_impl_`: `index_put_` (the `unsafe` flag only skips checks on other devices).
fn index_put_impl(
    input: Input,
    indices: Vec<Option<Input>>,
    values: Input,
    accumulate: bool,
    _unsafe: bool,
) -> Result<Tensor> {
    let indices: Vec<Option<Tensor>> = indices
        .into_iter()
        .map(|index| index.map(|tensor| Tensor::clone(&tensor)))
        .collect();
    Ok(input.index_put_(&indices, &values, accumulate)?)
}

/// `_safe_softmax`: `softmax`, with 0 wherever the whole row along `dim` is -inf (where
/// softmax gives NaN).
pub(super) fn safe_softmax(
    input: Input,
    dim: i64,
    dtype: Option<ferrojit_tensor::DType>,
) -> Result<Tensor> {
    let out = input.softmax(dim, dtype)?;
    let minus_infinity = Tensor::scalar_tensor(Scalar::Float(f64::NEG_INFINITY), input.dtype());
    let masked = input.eq(&minus_infinity)?;
    let masked_rows = masked.any_all(&[dim], true, false)?;
    let zeros = Tensor::zeros(out.sizes(), out.dtype())?;
    Ok(Tensor::where_(&masked_rows, &zeros, &out)?)
}

/// Every operator of this file, in declaration order.
pub fn declarations() -> Vec<OperatorDeclaration> {
    #[rustfmt::skip]
    let declarations = vec![
        in_place_from_functional("aten::ldexp_(Tensor(a!) self, Tensor other) -> Tensor(a!)", ldexp),
        in_place_from_functional("aten::polygamma_(Tensor(a!) self, int n) -> Tensor(a!)", polygamma),
        typed_in_place("aten::fill_diagonal_(Tensor(a!) self, Scalar fill_value, bool wrap=False) -> Tensor(a!)", fill_diagonal),
        typed_in_place("aten::_index_put_impl_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False, bool unsafe=False) -> Tensor(a!)", index_put_impl),
        typed("aten::_safe_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", safe_softmax),
    ];
    declarations
}
