//! Building blocks shared by the newer derivative formulas: comparisons and masking through
//! `where`, re-inserting reduced dimensions, broadcast shapes, and recomputing a forward
//! result the formula needs (the node keeps inputs, not outputs).

use ferrojit_runtime::{IValue, Result, RuntimeError};
use ferrojit_tensor::Tensor;

use super::{wrap_dim, FormulaInput, Gradients};
use crate::call::{self, call1, float, int};

/// A formula that cannot proceed, with PyTorch's wording where it has one.
pub fn refuse(message: impl Into<String>) -> RuntimeError {
    RuntimeError::Other(message.into())
}

/// A comparison or logical operator on two tensors (`aten::eq.Tensor`, `aten::logical_and`).
pub fn binary(name: &str, a: &IValue, b: &IValue) -> Result<IValue> {
    call1(name, vec![a.clone(), b.clone()])
}

/// A comparison of a tensor with a number (`aten::eq.Scalar`).
pub fn against(name: &str, a: &IValue, value: f64) -> Result<IValue> {
    call1(name, vec![a.clone(), float(value)])
}

pub fn logical_not(mask: &IValue) -> Result<IValue> {
    call1("aten::logical_not", vec![mask.clone()])
}

/// `value` where `mask` holds, zero elsewhere (PyTorch's `where(mask, value, 0)`; unlike a
/// multiplication by the mask, a NaN or infinity outside the mask does not leak).
pub fn keep_where(mask: &IValue, value: &IValue) -> Result<IValue> {
    call1(
        "aten::where.ScalarOther",
        vec![mask.clone(), value.clone(), float(0.0)],
    )
}

/// `value` with zeros where `mask` holds (`value.masked_fill(mask, 0)`, broadcasting).
pub fn zero_where(mask: &IValue, value: &IValue) -> Result<IValue> {
    keep_where(&logical_not(mask)?, value)
}

/// `number` where `mask` holds, `value` elsewhere.
pub fn fill_where(mask: &IValue, number: f64, value: &IValue) -> Result<IValue> {
    call1(
        "aten::where.ScalarSelf",
        vec![mask.clone(), float(number), value.clone()],
    )
}

/// `x != x`, without relying on an `isnan` overload.
pub fn is_nan(x: &IValue) -> Result<IValue> {
    binary("aten::ne.Tensor", x, x)
}

/// The dimensions a reduction's `dim` argument names (`None` or `[]`: all), sorted and
/// deduplicated; a 0-d input has none.
pub fn reduced_dims(value: &IValue, rank: usize) -> Result<Vec<usize>> {
    if rank == 0 {
        return Ok(Vec::new());
    }
    let dims = match value {
        IValue::None => Vec::new(),
        IValue::Int(dim) => vec![*dim],
        other => other.to_int_vec()?,
    };
    let mut dims: Vec<usize> = if dims.is_empty() {
        (0..rank).collect()
    } else {
        dims.into_iter().map(|dim| wrap_dim(dim, rank)).collect()
    };
    dims.sort_unstable();
    dims.dedup();
    Ok(dims)
}

/// Re-inserts the dimensions a reduction dropped (`keepdim=False`) as size-1 dimensions, so
/// that the value broadcasts against the input.
pub fn restore_dims(value: &IValue, dims: &[usize], keepdim: bool) -> Result<IValue> {
    let mut value = value.clone();
    if !keepdim {
        for &dim in dims {
            value = call1("aten::unsqueeze", vec![value, int(dim as i64)])?;
        }
    }
    Ok(value)
}

/// Sums over `dims` keeping them; a 0-d value is its own sum.
pub fn sum_kept(value: &IValue, dims: &[usize]) -> Result<IValue> {
    if dims.is_empty() {
        return Ok(value.clone());
    }
    let dims: Vec<i64> = dims.iter().map(|&dim| dim as i64).collect();
    call::sum_dims(value, &dims, true)
}

/// Runs the operator again on the node's saved arguments: every tensor argument the
/// computation reads must be in the formula's `saves`.
pub fn recompute(name: &str, input: &FormulaInput) -> Result<Vec<IValue>> {
    call::call(name, input.arguments.to_vec())
}

pub fn recompute1(name: &str, input: &FormulaInput) -> Result<IValue> {
    recompute(name, input)?
        .into_iter()
        .next()
        .ok_or_else(|| refuse(format!("autograd: {name} returned nothing")))
}

/// Zeros shaped and typed as tensor argument `index` was.
pub fn zeros_of(input: &FormulaInput, index: usize) -> Result<IValue> {
    call::zeros(&input.sizes(index)?, input.dtype(index)?)
}

/// The shape two shapes broadcast to (PyTorch's `infer_size`).
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let rank = a.len().max(b.len());
    let mut shape = vec![1; rank];
    for (position, slot) in shape.iter_mut().enumerate() {
        let pick = |sizes: &[usize]| {
            let lead = rank - sizes.len();
            if position < lead {
                1
            } else {
                sizes[position - lead]
            }
        };
        let (x, y) = (pick(a), pick(b));
        *slot = match (x, y) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(refuse(format!(
                    "The size of tensor a ({x}) must match the size of tensor b ({y}) at \
                     non-singleton dimension {position}"
                )))
            }
        };
    }
    Ok(shape)
}

/// An int64 tensor without history, for index arithmetic.
pub fn index_tensor(values: Vec<i64>, sizes: &[usize]) -> Result<IValue> {
    Ok(call::fresh(Tensor::from_vec(values, sizes)?))
}

/// The gradient of a number argument given as a 0-d tensor: `sum(grad)` shaped as it.
pub fn summed_to(grad: &IValue, sizes: &[usize]) -> Result<IValue> {
    let total = call1("aten::sum", vec![grad.clone()])?;
    call::reshape(&total, sizes)
}

/// Sets `out[index]` to `gradient` summed to argument `index`'s shape (undoing a broadcast),
/// computing it only when that argument needs a gradient.
pub fn give_summed(
    input: &FormulaInput,
    out: &mut Gradients,
    index: usize,
    gradient: impl FnOnce() -> Result<IValue>,
) -> Result<()> {
    if input.needs(index) {
        out[index] = Some(call::sum_to(&gradient()?, &input.sizes(index)?)?);
    }
    Ok(())
}

/// `value` plus zeros that depend on `x` with a zero derivative, when the backward is being
/// recorded (`create_graph=True`): PyTorch's backward kernels (`threshold_backward`,
/// `softshrink_backward`, `leaky_relu_backward`, ...) give their input a zero gradient in a
/// double backward, where a mask from a comparison alone would leave it none. The zeros come
/// from `where(true, 0, x)`, which is 0 even where `x` is NaN or infinite.
pub fn connected_to(value: IValue, x: &IValue) -> Result<IValue> {
    if !ferrojit_runtime::autograd::is_grad_enabled() {
        return Ok(value);
    }
    let sizes = call::sizes(x)?;
    let everywhere = call::fresh(Tensor::ones(&sizes, ferrojit_tensor::DType::Bool)?);
    let zeros = call1(
        "aten::where.ScalarSelf",
        vec![everywhere, float(0.0), x.clone()],
    )?;
    call::add(&value, &zeros)
}
