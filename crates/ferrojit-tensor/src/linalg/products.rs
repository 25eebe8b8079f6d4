//! Products built from the tensor library's own arithmetic (so every dtype PyTorch allows
//! works): `linalg.cross`, `linalg.vecdot`, `linalg.matrix_power` and `linalg.multi_dot`.

use crate::dtype::Scalar;
use crate::error::{Result, TensorError};
use crate::ops::creation::eye;
use crate::ops::join::stack;
use crate::shape::{broadcast_shapes, wrap_dim};
use crate::tensor::Tensor;

/// `torch.linalg.cross(input, other, dim)`: inputs broadcast; `dim` must have size 3 in both.
pub fn cross(input: &Tensor, other: &Tensor, dim: i64) -> Result<Tensor> {
    let op = "linalg.cross";
    if input.dim() != other.dim() {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: inputs must have the same number of dimensions."
        )));
    }
    let rank = input.dim();
    let d = wrap_dim(dim, rank)?;
    if input.sizes()[d] != 3 || other.sizes()[d] != 3 {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: inputs dimension {dim} must have length 3. Got {} and {}",
            input.sizes()[d],
            other.sizes()[d]
        )));
    }
    let shape: Vec<i64> = broadcast_shapes(input.sizes(), other.sizes())?
        .iter()
        .map(|&s| s as i64)
        .collect();
    let a = input.expand(&shape)?;
    let b = other.expand(&shape)?;
    let one = Scalar::Int(1);
    let part = |t: &Tensor, i: i64| t.select(d as i64, i);
    let component = |i: i64, j: i64| -> Result<Tensor> {
        part(&a, i)?
            .mul(&part(&b, j)?)?
            .sub(&part(&a, j)?.mul(&part(&b, i)?)?, &one)
    };
    stack(
        &[component(1, 2)?, component(2, 0)?, component(0, 1)?],
        d as i64,
    )
}

/// `torch.linalg.vecdot(x, y, dim)`: `sum(x * y, dim)` (real inputs, so no conjugate).
pub fn vecdot(x: &Tensor, y: &Tensor, dim: i64) -> Result<Tensor> {
    if x.dtype() != y.dtype() {
        return Err(TensorError::InvalidArgument(format!(
            "linalg.vecdot: Expected x and y to have the same dtype, but found x of type {} and y of type {} instead",
            x.dtype().scalar_type_name(),
            y.dtype().scalar_type_name()
        )));
    }
    x.mul(y)?.sum_dim(&[dim], false, None)
}

/// `torch.linalg.matrix_power(A, n)`: repeated squaring; a negative `n` inverts first.
pub fn matrix_power(a: &Tensor, n: i64) -> Result<Tensor> {
    let op = "linalg.matrix_power";
    if a.dim() < 2 {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: The input tensor A must have at least 2 dimensions."
        )));
    }
    let size = a.sizes()[a.dim() - 1];
    if a.sizes()[a.dim() - 2] != size {
        return Err(TensorError::InvalidArgument(format!(
            "{op}: A must be batches of square matrices, but they are {} by {size} matrices",
            a.sizes()[a.dim() - 2]
        )));
    }
    if n == 0 {
        let shape: Vec<i64> = a.sizes().iter().map(|&s| s as i64).collect();
        return Ok(eye(size as i64, None, a.dtype())?
            .expand(&shape)?
            .clone_tensor());
    }
    let mut base = if n < 0 { super::lu::inv(a)? } else { a.clone() };
    let mut exponent = n.unsigned_abs();
    let mut result: Option<Tensor> = None;
    while exponent > 0 {
        if exponent & 1 == 1 {
            result = Some(match result {
                None => base.clone(),
                Some(r) => r.matmul(&base)?,
            });
        }
        exponent >>= 1;
        if exponent > 0 {
            base = base.matmul(&base)?;
        }
    }
    // n != 0, so at least one factor was taken; a fresh tensor either way.
    Ok(result.map(|r| r.clone_tensor()).unwrap_or(base))
}

/// `torch.linalg.multi_dot(tensors)`: the first may be 1-D (a row), the last 1-D (a column),
/// the others 2-D. Multiplied left to right (PyTorch picks the cheapest order; the value is
/// the same up to rounding).
pub fn multi_dot(tensors: &[Tensor]) -> Result<Tensor> {
    let op = "multi_dot";
    let count = tensors.len();
    if count < 2 {
        return Err(TensorError::InvalidArgument(format!(
            "{op}(): expected at least 2 tensors but got {count}"
        )));
    }
    for (i, t) in tensors.iter().enumerate() {
        let allowed_1d = i == 0 || i == count - 1;
        if t.dim() != 2 && !(allowed_1d && t.dim() == 1) {
            let which = if i == 0 {
                "first"
            } else if i == count - 1 {
                "last"
            } else {
                ""
            };
            let message = if which.is_empty() {
                format!("{op}(): tensor {i} must be 2D but got {}D", t.dim())
            } else {
                format!(
                    "{op}(): the {which} tensor must be 1D or 2D but got {}D",
                    t.dim()
                )
            };
            return Err(TensorError::InvalidArgument(message));
        }
    }
    let mut result = tensors[0].clone();
    for t in &tensors[1..] {
        result = result.matmul(t)?;
    }
    Ok(result)
}
