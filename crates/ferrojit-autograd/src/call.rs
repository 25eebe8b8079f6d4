//! Calling operators from Rust through the recording path: the formulas and the engine use
//! these, so that with grad mode on (`create_graph=True`) the backward computation is itself
//! recorded and can be differentiated again.

use std::sync::Arc;

use ferrojit_ir::Type;
use ferrojit_runtime::autograd::operator_hook;
use ferrojit_runtime::interpreter::default_value;
use ferrojit_runtime::{IValue, OperatorRegistry, Result, RuntimeError, TensorCell};
use ferrojit_tensor::{DType, Tensor};

/// Runs `full_name` (`aten::mul.Tensor`) on `arguments` (the leading ones; the rest take the
/// schema's defaults) and returns its results.
pub fn call(full_name: &str, arguments: Vec<IValue>) -> Result<Vec<IValue>> {
    let operator = OperatorRegistry::global()
        .lookup(full_name)
        .ok_or_else(|| {
            RuntimeError::Other(format!("autograd: operator {full_name} is not registered"))
        })?;
    let schema = Arc::clone(&operator.schema);
    if arguments.len() > schema.arguments.len() {
        return Err(RuntimeError::Other(format!(
            "autograd: {full_name} takes {} arguments, given {}",
            schema.arguments.len(),
            arguments.len()
        )));
    }
    let mut stack = arguments;
    for argument in &schema.arguments[stack.len()..] {
        let default = argument.default.as_ref().ok_or_else(|| {
            RuntimeError::Other(format!(
                "autograd: {full_name} needs argument '{}'",
                argument.name
            ))
        })?;
        stack.push(default_value(default, &argument.ty)?);
    }
    let count = stack.len();
    let kernel = &operator.kernel;
    let run_kernel = |stack: &mut Vec<IValue>| kernel(stack);
    match operator_hook() {
        Some(hook) => hook.run_operator(&schema, count, &mut stack, &run_kernel)?,
        None => run_kernel(&mut stack)?,
    }
    Ok(stack)
}

/// [`call`] for an operator with one result.
pub fn call1(full_name: &str, arguments: Vec<IValue>) -> Result<IValue> {
    call(full_name, arguments)?
        .into_iter()
        .next()
        .ok_or_else(|| RuntimeError::Other(format!("autograd: {full_name} returned nothing")))
}

pub fn int(value: i64) -> IValue {
    IValue::Int(value)
}

pub fn float(value: f64) -> IValue {
    IValue::Double(value)
}

pub fn ints(values: &[i64]) -> IValue {
    IValue::int_list(values)
}

pub fn sizes_of(sizes: &[usize]) -> IValue {
    IValue::int_list(&sizes.iter().map(|&size| size as i64).collect::<Vec<_>>())
}

pub fn tensor_list(items: Vec<IValue>) -> IValue {
    IValue::list(Type::Tensor, items)
}

pub fn optional_tensor_list(items: Vec<IValue>) -> IValue {
    IValue::list(Type::Optional(Box::new(Type::Tensor)), items)
}

/// The tensor behind a value (a formula's argument or gradient).
pub fn tensor(value: &IValue) -> Result<Arc<Tensor>> {
    value.to_tensor()
}

pub fn sizes(value: &IValue) -> Result<Vec<usize>> {
    Ok(tensor(value)?.sizes().to_vec())
}

/// A fresh tensor value without history.
pub fn fresh(tensor: Tensor) -> IValue {
    IValue::Tensor(Arc::new(TensorCell::new(Arc::new(tensor))))
}

pub fn zeros(sizes: &[usize], dtype: DType) -> Result<IValue> {
    Ok(fresh(Tensor::zeros(sizes, dtype)?))
}

pub fn add(a: &IValue, b: &IValue) -> Result<IValue> {
    call1("aten::add.Tensor", vec![a.clone(), b.clone()])
}

pub fn sub(a: &IValue, b: &IValue) -> Result<IValue> {
    call1("aten::sub.Tensor", vec![a.clone(), b.clone()])
}

pub fn mul(a: &IValue, b: &IValue) -> Result<IValue> {
    call1("aten::mul.Tensor", vec![a.clone(), b.clone()])
}

pub fn div(a: &IValue, b: &IValue) -> Result<IValue> {
    call1("aten::div.Tensor", vec![a.clone(), b.clone()])
}

pub fn scale(a: &IValue, factor: f64) -> Result<IValue> {
    call1("aten::mul.Scalar", vec![a.clone(), float(factor)])
}

pub fn add_scalar(a: &IValue, value: f64) -> Result<IValue> {
    call1("aten::add.Scalar", vec![a.clone(), float(value)])
}

/// `value - a`.
pub fn rsub_scalar(a: &IValue, value: f64) -> Result<IValue> {
    call1("aten::rsub.Scalar", vec![a.clone(), float(value)])
}

pub fn neg(a: &IValue) -> Result<IValue> {
    call1("aten::neg", vec![a.clone()])
}

pub fn unary(name: &str, a: &IValue) -> Result<IValue> {
    call1(name, vec![a.clone()])
}

pub fn pow_scalar(a: &IValue, exponent: f64) -> Result<IValue> {
    call1("aten::pow.Tensor_Scalar", vec![a.clone(), float(exponent)])
}

pub fn sum_dims(a: &IValue, dims: &[i64], keepdim: bool) -> Result<IValue> {
    call1(
        "aten::sum.dim_IntList",
        vec![a.clone(), ints(dims), IValue::Bool(keepdim)],
    )
}

pub fn mean_dims(a: &IValue, dims: &[i64], keepdim: bool) -> Result<IValue> {
    call1(
        "aten::mean.dim",
        vec![a.clone(), ints(dims), IValue::Bool(keepdim)],
    )
}

pub fn reshape(a: &IValue, target: &[usize]) -> Result<IValue> {
    call1("aten::reshape", vec![a.clone(), sizes_of(target)])
}

pub fn expand(a: &IValue, target: &[usize]) -> Result<IValue> {
    call1("aten::expand", vec![a.clone(), sizes_of(target)])
}

pub fn transpose(a: &IValue, dim0: i64, dim1: i64) -> Result<IValue> {
    call1("aten::transpose.int", vec![a.clone(), int(dim0), int(dim1)])
}

pub fn matmul(a: &IValue, b: &IValue) -> Result<IValue> {
    call1("aten::matmul", vec![a.clone(), b.clone()])
}

pub fn mm(a: &IValue, b: &IValue) -> Result<IValue> {
    call1("aten::mm", vec![a.clone(), b.clone()])
}

pub fn t(a: &IValue) -> Result<IValue> {
    call1("aten::t", vec![a.clone()])
}

/// A boolean mask turned into `a`'s floating dtype (masks are never differentiated).
pub fn mask_like(mask: &IValue, like: &IValue) -> Result<IValue> {
    let dtype = tensor(like)?.dtype();
    call1(
        "aten::to.dtype",
        vec![mask.clone(), int(dtype.scalar_type_index())],
    )
}

pub fn compare_scalar(name: &str, a: &IValue, value: f64) -> Result<IValue> {
    call1(name, vec![a.clone(), float(value)])
}

/// Sums `grad` down to `target` sizes, undoing broadcasting (PyTorch's `sum_to_size`).
pub fn sum_to(grad: &IValue, target: &[usize]) -> Result<IValue> {
    let grad_sizes = sizes(grad)?;
    if grad_sizes == target {
        return Ok(grad.clone());
    }
    let lead = grad_sizes.len().saturating_sub(target.len());
    let mut dims: Vec<i64> = (0..lead as i64).collect();
    for (index, &size) in target.iter().enumerate() {
        if size == 1 && grad_sizes.get(lead + index).is_some_and(|&g| g != 1) {
            dims.push((lead + index) as i64);
        }
    }
    let summed = if dims.is_empty() {
        grad.clone()
    } else {
        sum_dims(grad, &dims, true)?
    };
    reshape(&summed, target)
}
