//! `ferrojit::linear_epilogue` and `ferrojit::conv_epilogue`: `aten::linear` or a
//! convolution followed by an activation and a residual add, as one operator over
//! ferrojit-tensor's packed GEMM (the weight packed once and cached, the epilogue applied to
//! each output tile). ferrojit-opt's `linear_epilogue` pass writes them.
//!
//! Operands the packed kernel does not take (another dtype, a broadcast residual), and any
//! call that autograd must record (grad mode on and an operand requiring grad), run the
//! unfused operators instead, through the registry, so results and gradients are theirs.

use std::sync::Arc;

use ferrojit_tensor::gemm::{self, Activation};
use ferrojit_tensor::ops::nn::conv::{convolution_epilogue, ConvPadding, TensorEpilogue};
use ferrojit_tensor::Tensor;

use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;
use crate::registry::OperatorRegistry;

/// The operator's schema.
pub const LINEAR_EPILOGUE_SCHEMA: &str = "ferrojit::linear_epilogue(Tensor input, Tensor weight, Tensor? bias, str activation, Tensor? residual, bool residual_after_activation) -> Tensor";

/// The convolution's: `aten::convolution`'s non-transposed arguments, then the epilogue's.
pub const CONV_EPILOGUE_SCHEMA: &str = "ferrojit::conv_epilogue(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] dilation, int groups, str activation, Tensor? residual, bool residual_after_activation) -> Tensor";

fn tensor_or_none(value: &IValue) -> Result<Option<Arc<Tensor>>> {
    if value.is_none() {
        Ok(None)
    } else {
        value.to_tensor().map(Some)
    }
}

/// Whether autograd would record this call: a hook is installed (the ferrojit-autograd
/// crate), grad mode is on and an operand requires grad. Without a hook nothing records, so
/// the fused kernel computes all there is.
fn needs_grad(values: &[&IValue]) -> bool {
    crate::autograd::operator_hook().is_some()
        && crate::autograd::is_grad_enabled()
        && values.iter().any(|v| {
            v.to_tensor_cell()
                .map(|cell| cell.requires_grad())
                .unwrap_or(false)
        })
}

/// Runs a registered operator on `arguments` (through autograd's hook when one is installed,
/// as the interpreter runs it) and returns its one result.
fn call_registered(full_name: &str, arguments: Vec<IValue>) -> Result<IValue> {
    let registry = OperatorRegistry::global();
    let operator = registry.lookup(full_name).ok_or_else(|| {
        RuntimeError::UnknownOperator(format!("linear_epilogue needs {full_name}"))
    })?;
    let count = arguments.len();
    let mut stack = arguments;
    match crate::autograd::operator_hook() {
        Some(hook) => hook.run_operator(&operator.schema, count, &mut stack, &|s| {
            (operator.kernel)(s)
        })?,
        None => (operator.kernel)(&mut stack)?,
    }
    stack.pop().ok_or_else(|| {
        RuntimeError::Other(format!("linear_epilogue: {full_name} returned nothing"))
    })
}

/// The unfused operators the fused one stands for, in their order: `head` (the linear or
/// the convolution, already computed), then the residual add and the activation.
fn unfused(head: IValue, activation: Activation, residual: &IValue, after: bool) -> Result<IValue> {
    let add = |x: IValue| -> Result<IValue> {
        call_registered(
            "aten::add.Tensor",
            vec![x, residual.clone(), IValue::Int(1)],
        )
    };
    let mut y = head;
    if !residual.is_none() && !after {
        y = add(y)?;
    }
    y = match activation {
        Activation::Identity => y,
        Activation::Relu => call_registered("aten::relu", vec![y])?,
        Activation::Gelu => {
            call_registered("aten::gelu", vec![y, IValue::from("none".to_string())])?
        }
        Activation::GeluTanh => {
            call_registered("aten::gelu", vec![y, IValue::from("tanh".to_string())])?
        }
        Activation::Silu => call_registered("aten::silu", vec![y])?,
        Activation::Sigmoid => call_registered("aten::sigmoid", vec![y])?,
        Activation::Hardswish => call_registered("aten::hardswish", vec![y])?,
    };
    if !residual.is_none() && after {
        y = add(y)?;
    }
    Ok(y)
}

fn linear_epilogue(arguments: &[IValue]) -> Result<Vec<IValue>> {
    let [input, weight, bias, activation, residual, after] = arguments else {
        return Err(RuntimeError::Other(format!(
            "linear_epilogue takes 6 arguments, got {}",
            arguments.len()
        )));
    };
    let activation = Activation::from_name(activation.to_str()?)?;
    let after = after.to_bool()?;
    let x = input.to_tensor()?;
    let w = weight.to_tensor()?;
    let b = tensor_or_none(bias)?;
    let r = tensor_or_none(residual)?;
    let fast = gemm::linear_epilogue_supported(&x, &w, b.as_deref(), r.as_deref())
        && !needs_grad(&[input, weight, bias, residual]);
    if !fast {
        let head = call_registered(
            "aten::linear",
            vec![input.clone(), weight.clone(), bias.clone()],
        )?;
        return Ok(vec![unfused(head, activation, residual, after)?]);
    }
    let out = gemm::linear_epilogue(&x, &w, b.as_deref(), activation, r.as_deref(), after)?;
    Ok(vec![IValue::from(out)])
}

fn conv_epilogue(arguments: &[IValue]) -> Result<Vec<IValue>> {
    let [input, weight, bias, stride, padding, dilation, groups, activation, residual, after] =
        arguments
    else {
        return Err(RuntimeError::Other(format!(
            "conv_epilogue takes 10 arguments, got {}",
            arguments.len()
        )));
    };
    let activation = Activation::from_name(activation.to_str()?)?;
    let after = after.to_bool()?;
    let r = tensor_or_none(residual)?;
    if !needs_grad(&[input, weight, bias, residual]) {
        let x = input.to_tensor()?;
        let w = weight.to_tensor()?;
        let b = tensor_or_none(bias)?;
        let fused = convolution_epilogue(
            &x,
            &w,
            b.as_deref(),
            &stride.to_int_vec()?,
            &ConvPadding::Explicit(padding.to_int_vec()?),
            &dilation.to_int_vec()?,
            groups.to_int()?,
            &TensorEpilogue {
                activation,
                residual: r.as_deref(),
                residual_after_activation: after,
            },
        )?;
        if let Some(out) = fused {
            return Ok(vec![IValue::from(out)]);
        }
    }
    let head = call_registered(
        "aten::convolution",
        vec![
            input.clone(),
            weight.clone(),
            bias.clone(),
            stride.clone(),
            padding.clone(),
            dilation.clone(),
            IValue::Bool(false),
            IValue::int_list(&[0]),
            groups.clone(),
        ],
    )?;
    Ok(vec![unfused(head, activation, residual, after)?])
}

pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        OperatorDeclaration::arguments(LINEAR_EPILOGUE_SCHEMA, linear_epilogue),
        OperatorDeclaration::arguments(CONV_EPILOGUE_SCHEMA, conv_epilogue),
    ]
}
