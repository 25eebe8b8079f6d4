//! Gradients from Rust: PyTorch's autograd API (`backward`, `torch.autograd.grad`, `no_grad`,
//! `requires_grad_`, `.grad`) over the [`IValue`]s that models take and return.
//!
//! Recording is off in a process until [`crate::enable_autograd`] installs it, and grad mode
//! is per thread and off by default (an inference run): a thread that trains turns it on with
//! [`enable_grad`] (or [`crate::set_grad_enabled`]). While it is on, every operator a model or
//! [`call_operator`] runs on tensors that require grad records a backward node; [`backward`]
//! then accumulates into the `.grad` of the leaves ([`grad_of`]), and [`grad`] hands the
//! gradients back instead. Updates to parameters belong under [`no_grad`], as in PyTorch.
//!
//! ```
//! # fn main() -> Result<(), ferrojit::Error> {
//! use ferrojit::autograd::{self, GradOptions};
//! use ferrojit::{IValue, Tensor};
//!
//! ferrojit::enable_autograd()?;
//! let _recording = autograd::enable_grad();
//! let x = IValue::from(Tensor::from_vec(vec![1.0_f32, -2.0, 3.0], &[3])?);
//! autograd::set_requires_grad(&x, true)?;
//! // loss = (x * x).sum(), so d loss / dx = 2x.
//! let squared = autograd::call_operator("aten::mul.Tensor", vec![x.clone(), x.clone()])?;
//! let loss = autograd::call_operator("aten::sum", vec![squared])?;
//! autograd::backward(&[loss], GradOptions::default())?;
//! let gradient = autograd::grad_of(&x)?.expect("x is a leaf that requires grad");
//! assert_eq!(gradient.to_tensor()?.to_vec::<f32>()?, vec![2.0, -4.0, 6.0]);
//!
//! // `torch.autograd.grad` leaves `.grad` alone and returns the gradients instead; the
//! // graph was freed by the backward above, so record it again.
//! let squared = autograd::call_operator("aten::mul.Tensor", vec![x.clone(), x.clone()])?;
//! let loss = autograd::call_operator("aten::sum", vec![squared])?;
//! let gradients = autograd::grad(&[loss], &[x.clone()], GradOptions::default())?;
//! assert_eq!(gradients[0].to_tensor()?.to_vec::<f32>()?, vec![2.0, -4.0, 6.0]);
//!
//! // An SGD step, not recorded: `with torch.no_grad(): x -= 0.5 * x.grad`.
//! {
//!     let _no_grad = autograd::no_grad();
//!     let step = IValue::Double(0.5);
//!     autograd::call_operator("aten::sub_.Tensor", vec![x.clone(), gradient, step])?;
//! }
//! assert_eq!(x.to_tensor()?.to_vec::<f32>()?, vec![0.0, 0.0, 0.0]);
//! autograd::set_grad(&x, None)?; // `optimizer.zero_grad(set_to_none=True)`
//! assert!(autograd::grad_of(&x)?.is_none());
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;

use ferrojit_runtime::{IValue, TensorCell};

use crate::Result;

pub use ferrojit_autograd::{GradModeGuard, GradOptions};

/// A scope without gradient recording on this thread (`with torch.no_grad():`); the previous
/// mode comes back when the guard drops.
pub fn no_grad() -> GradModeGuard {
    ferrojit_autograd::no_grad()
}

/// A scope with gradient recording on this thread (`with torch.enable_grad():`); the previous
/// mode comes back when the guard drops. Recording also needs [`crate::enable_autograd`].
pub fn enable_grad() -> GradModeGuard {
    ferrojit_autograd::enable_grad()
}

fn cells(values: &[IValue]) -> Result<Vec<Arc<TensorCell>>> {
    values
        .iter()
        .map(|value| Ok(Arc::clone(value.to_tensor_cell()?)))
        .collect()
}

/// `torch.autograd.backward(tensors)` (`loss.backward()` for one scalar `loss`): accumulates
/// the gradients of `tensors` into the `.grad` of every leaf they depend on. Each tensor must
/// hold one element; [`backward_with`] takes explicit gradients.
pub fn backward(tensors: &[IValue], options: GradOptions) -> Result<()> {
    backward_with(tensors, &[], options)
}

/// `torch.autograd.backward(tensors, grad_tensors)`: as [`backward`], seeded with
/// `grad_tensors` (one per tensor, `None` for ones of a one-element tensor; empty: all `None`).
pub fn backward_with(
    tensors: &[IValue],
    grad_tensors: &[Option<IValue>],
    options: GradOptions,
) -> Result<()> {
    let seeds = if grad_tensors.is_empty() {
        vec![None; tensors.len()]
    } else {
        grad_tensors.to_vec()
    };
    ferrojit_autograd::backward(&cells(tensors)?, &seeds, options)?;
    Ok(())
}

/// `torch.autograd.grad(outputs, inputs)`: the gradients of `outputs` (one-element tensors)
/// with respect to each of `inputs`, leaving `.grad` untouched. An input that `outputs` do
/// not depend on is an error, as PyTorch's `allow_unused=False`; [`grad_with`] takes the
/// other arguments.
pub fn grad(outputs: &[IValue], inputs: &[IValue], options: GradOptions) -> Result<Vec<IValue>> {
    let gradients = grad_with(outputs, inputs, &[], options, false)?;
    // With `allow_unused` off every input has a gradient; `None` cannot come back.
    Ok(gradients.into_iter().flatten().collect())
}

/// `torch.autograd.grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
/// allow_unused)`: one entry per input, `None` for an unused one when `allow_unused`.
/// `grad_outputs` empty means `None` for every output.
pub fn grad_with(
    outputs: &[IValue],
    inputs: &[IValue],
    grad_outputs: &[Option<IValue>],
    options: GradOptions,
    allow_unused: bool,
) -> Result<Vec<Option<IValue>>> {
    let seeds = if grad_outputs.is_empty() {
        vec![None; outputs.len()]
    } else {
        grad_outputs.to_vec()
    };
    Ok(ferrojit_autograd::grad(
        &cells(outputs)?,
        &cells(inputs)?,
        &seeds,
        options,
        allow_unused,
    )?)
}

/// `tensor.requires_grad_(requires_grad)`: every handle to the tensor (a module's parameter
/// and the value read from it) sees the change.
pub fn set_requires_grad(tensor: &IValue, requires_grad: bool) -> Result<()> {
    tensor.to_tensor_cell()?.set_requires_grad(requires_grad);
    Ok(())
}

/// `tensor.requires_grad`.
pub fn requires_grad(tensor: &IValue) -> Result<bool> {
    Ok(tensor.to_tensor_cell()?.requires_grad())
}

/// `tensor.is_leaf`: true for a tensor without a `grad_fn` (made by the user, a parameter,
/// or anything computed without recording).
pub fn is_leaf(tensor: &IValue) -> Result<bool> {
    Ok(tensor.to_tensor_cell()?.autograd().is_leaf())
}

/// `tensor.grad`: what [`backward`] accumulated (`None` before any, or after [`set_grad`]
/// with `None`).
pub fn grad_of(tensor: &IValue) -> Result<Option<IValue>> {
    Ok(tensor
        .to_tensor_cell()?
        .autograd()
        .grad()
        .map(IValue::Tensor))
}

/// `tensor.grad = gradient` (`None`: `optimizer.zero_grad(set_to_none=True)`).
pub fn set_grad(tensor: &IValue, gradient: Option<IValue>) -> Result<()> {
    let gradient = match gradient {
        Some(value) => Some(Arc::clone(value.to_tensor_cell()?)),
        None => None,
    };
    tensor.to_tensor_cell()?.autograd().set_grad(gradient);
    Ok(())
}

/// `tensor.grad_fn`'s name (`MulBackward0`), `None` for a leaf.
pub fn grad_fn_name(tensor: &IValue) -> Result<Option<String>> {
    Ok(ferrojit_autograd::grad_fn_name(tensor.to_tensor_cell()?))
}

/// Runs the operator `full_name` (`aten::mse_loss`, `aten::sub_.Tensor`) on the leading
/// arguments given, the rest taking the schema's defaults, and returns its first result.
/// It goes through the recording path, so with grad mode on the call is differentiated like
/// one inside a model: losses and updates written in Rust.
pub fn call_operator(full_name: &str, arguments: Vec<IValue>) -> Result<IValue> {
    Ok(ferrojit_autograd::call::call1(full_name, arguments)?)
}

/// [`call_operator`] for operators with several results (`aten::max.dim`): all of them.
pub fn call_operator_all(full_name: &str, arguments: Vec<IValue>) -> Result<Vec<IValue>> {
    Ok(ferrojit_autograd::call::call(full_name, arguments)?)
}
