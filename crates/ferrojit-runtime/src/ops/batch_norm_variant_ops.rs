//! The batch-norm entry points the export and decomposition paths call, over ferrojit-tensor's
//! `native_batch_norm`: `_native_batch_norm_legit_no_training`, the functional form that
//! returns the updated running statistics instead of writing them,
//! `_native_batch_norm_legit.out`, `_batch_norm_impl_index`, and `_convolution_mode` (a
//! convolution with `"same"`/`"valid"` padding, what `conv*d.padding` calls).

use std::sync::Arc;

use ferrojit_tensor::ops::nn::norm;
use ferrojit_tensor::{DType, Tensor};

use super::binding::typed;
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// Evaluation mode: the running statistics normalize; the saved statistics are empty.
fn no_training(
    input: Input,
    weight: Option<Input>,
    bias: Option<Input>,
    running_mean: Input,
    running_var: Input,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    Ok(norm::native_batch_norm(
        &input,
        weight.as_deref(),
        bias.as_deref(),
        Some(&running_mean),
        Some(&running_var),
        false,
        momentum,
        eps,
    )?)
}

/// `_native_batch_norm_legit_functional`: as `_native_batch_norm_legit`, but the running
/// statistics are left alone and their updated values (the inputs themselves in evaluation
/// mode) are returned as two more results.
#[allow(clippy::too_many_arguments)]
fn functional(
    input: Input,
    weight: Option<Input>,
    bias: Option<Input>,
    running_mean: Input,
    running_var: Input,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<Vec<IValue>> {
    let (mean_out, var_out) = (running_mean.clone_tensor(), running_var.clone_tensor());
    let (out, save_mean, save_invstd) = norm::native_batch_norm(
        &input,
        weight.as_deref(),
        bias.as_deref(),
        Some(&mean_out),
        Some(&var_out),
        training,
        momentum,
        eps,
    )?;
    Ok([out, save_mean, save_invstd, mean_out, var_out]
        .into_iter()
        .map(IValue::from)
        .collect())
}

/// `_native_batch_norm_legit.out`: the results written into `out`, `save_mean` and
/// `save_invstd` (each resized), the running statistics updated in place when training.
fn legit_out(arguments: &[IValue]) -> Result<Vec<IValue>> {
    let [input, weight, bias, running_mean, running_var, training, momentum, eps, out, save_mean, save_invstd] =
        arguments
    else {
        return Err(RuntimeError::InvalidGraph(
            "_native_batch_norm_legit.out takes 11 arguments".to_string(),
        ));
    };
    let optional = |value: &IValue| -> Result<Option<Arc<Tensor>>> {
        match value {
            IValue::None => Ok(None),
            other => Ok(Some(other.to_tensor()?)),
        }
    };
    let (weight, bias) = (optional(weight)?, optional(bias)?);
    let training = training.to_bool()?;
    let results = norm::native_batch_norm(
        &*input.to_tensor()?,
        weight.as_deref(),
        bias.as_deref(),
        Some(&*running_mean.to_tensor()?),
        Some(&*running_var.to_tensor()?),
        training,
        momentum.to_double()?,
        eps.to_double()?,
    )?;
    let out = IValue::from(results.0.write_into_out(&*out.to_tensor()?)?);
    if !training {
        // Evaluation mode saves no statistics: ATen leaves those outputs as they were.
        return Ok(vec![out, save_mean.clone(), save_invstd.clone()]);
    }
    Ok(vec![
        out,
        IValue::from(results.1.write_into_out(&*save_mean.to_tensor()?)?),
        IValue::from(results.2.write_into_out(&*save_invstd.to_tensor()?)?),
    ])
}

/// `_batch_norm_impl_index`: `native_batch_norm`'s results with the empty reserve buffer and
/// the index (0) of the CPU implementation, which `batch_norm`'s backward reads.
#[allow(clippy::too_many_arguments)]
fn impl_index(
    input: Input,
    weight: Option<Input>,
    bias: Option<Input>,
    running_mean: Option<Input>,
    running_var: Option<Input>,
    training: bool,
    momentum: f64,
    eps: f64,
    _cudnn_enabled: bool,
) -> Result<Vec<IValue>> {
    let (out, save_mean, save_invstd) = norm::native_batch_norm(
        &input,
        weight.as_deref(),
        bias.as_deref(),
        running_mean.as_deref(),
        running_var.as_deref(),
        training,
        momentum,
        eps,
    )?;
    let reserve = Tensor::zeros(&[0], DType::UInt8)?;
    Ok(vec![
        IValue::from(out),
        IValue::from(save_mean),
        IValue::from(save_invstd),
        IValue::from(reserve),
        IValue::Int(0),
    ])
}

/// Every operator of this file, in declaration order.
pub fn declarations() -> Vec<OperatorDeclaration> {
    #[rustfmt::skip]
    let declarations = vec![
        typed("aten::_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)", no_training),
        typed("aten::_native_batch_norm_legit_functional(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor running_mean_out, Tensor running_var_out)", functional),
        OperatorDeclaration::arguments("aten::_native_batch_norm_legit.out(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!) running_mean, Tensor(b!) running_var, bool training, float momentum, float eps, *, Tensor(d!) out, Tensor(e!) save_mean, Tensor(f!) save_invstd) -> (Tensor(d!), Tensor(e!), Tensor(f!))", legit_out).with_arity(11),
        typed("aten::_batch_norm_impl_index(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> (Tensor, Tensor, Tensor, Tensor, int)", impl_index),
        typed("aten::_convolution_mode(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, str padding, SymInt[] dilation, SymInt groups) -> Tensor", super::nn_ops::conv_padding_str),
    ];
    declarations
}
