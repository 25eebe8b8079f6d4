//! Derivatives of the CTC loss. `_ctc_loss` gives `log_probs` what ATen's backward kernel
//! `_ctc_loss_backward` gives, which is not the plain derivative: the kernel assumes
//! `log_probs` came from a log-softmax. The `ctc_loss` composite first takes its reduction
//! (and `zero_infinity` mask) back to one gradient per batch entry, then runs that kernel.
//! The kernel itself has no derivative, as in PyTorch, so a double backward raises.

use ferrojit_runtime::autograd::GradModeGuard;
use ferrojit_runtime::{IValue, Result};
use ferrojit_tensor::DType;

use super::support::{against, refuse, zero_where};
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call, call1, expand, reshape};

/// `_ctc_loss`'s two outputs (the losses and the log alphas), recomputed without recording.
fn losses_and_log_alpha(name: &str, arguments: Vec<IValue>) -> Result<(IValue, IValue)> {
    let _no_grad = GradModeGuard::new(false);
    let mut outputs = call(name, arguments)?.into_iter();
    match (outputs.next(), outputs.next()) {
        (Some(losses), Some(log_alpha)) => Ok((losses, log_alpha)),
        _ => Err(refuse(format!(
            "autograd: {name} returned fewer than two outputs"
        ))),
    }
}

/// `_ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity)`, with
/// the lengths as int lists (`forward` `aten::_ctc_loss`) or tensors (`.Tensor`).
fn private_ctc_loss(input: &FormulaInput, forward: &str, backward: &str) -> Result<Gradients> {
    let mut out = input.none();
    if !input.needs(0) {
        return Ok(out);
    }
    let arguments = input.arguments;
    if arguments.len() < 6 {
        return Err(refuse("autograd: _ctc_loss takes six arguments"));
    }
    let (losses, log_alpha) = losses_and_log_alpha(forward, arguments[..6].to_vec())?;
    out[0] = Some(call1(
        backward,
        vec![
            input.grad(0)?.clone(),
            arguments[0].clone(),
            arguments[1].clone(),
            arguments[2].clone(),
            arguments[3].clone(),
            losses,
            log_alpha,
            arguments[4].clone(),
            arguments[5].clone(),
        ],
    )?);
    Ok(out)
}

fn private_int_list(input: &FormulaInput) -> Result<Gradients> {
    private_ctc_loss(input, "aten::_ctc_loss", "aten::_ctc_loss_backward")
}

fn private_tensor(input: &FormulaInput) -> Result<Gradients> {
    private_ctc_loss(
        input,
        "aten::_ctc_loss.Tensor",
        "aten::_ctc_loss_backward.Tensor",
    )
}

/// The target lengths, given as an int list or as an integral tensor.
fn lengths(value: &IValue) -> Result<Vec<i64>> {
    match value {
        IValue::Tensor(_) => Ok(call::tensor(value)?
            .to_dtype(DType::Int64)
            .contiguous()
            .to_vec::<i64>()?),
        other => other.to_int_vec(),
    }
}

/// `ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction,
/// zero_infinity)`: ATen's composite is `_ctc_loss` on `log_probs` (a 2-D one gets a batch
/// dim of 1), its infinite losses zeroed when `zero_infinity`, then the mean of the losses
/// divided by the target lengths (at least 1), their sum, or the losses themselves.
fn public_ctc_loss(input: &FormulaInput, forward: &str, backward: &str) -> Result<Gradients> {
    let mut out = input.none();
    if !input.needs(0) {
        return Ok(out);
    }
    let arguments = input.arguments;
    if arguments.len() < 7 {
        return Err(refuse("autograd: ctc_loss takes seven arguments"));
    }
    let sizes = input.sizes(0)?;
    let batched = sizes.len() == 3;
    let log_probs = if batched {
        arguments[0].clone()
    } else {
        call1("aten::unsqueeze", vec![arguments[0].clone(), call::int(1)])?
    };
    let zero_infinity = arguments[6].clone();
    let (losses, log_alpha) = losses_and_log_alpha(
        forward,
        vec![
            log_probs.clone(),
            arguments[1].clone(),
            arguments[2].clone(),
            arguments[3].clone(),
            arguments[4].clone(),
            zero_infinity.clone(),
        ],
    )?;
    let batch = call::sizes(&losses)?.first().copied().unwrap_or(0);
    let grad = input.grad(0)?;
    // The gradient of each batch entry's loss.
    let mut grad_losses = match arguments[5].to_int()? {
        1 => {
            // mean(losses / clamp_min(target_lengths, 1)): a 1/N share of the output's
            // gradient, divided by the entry's target length.
            let divisors: Vec<f64> = lengths(&arguments[3])?
                .iter()
                .map(|&length| length.max(1) as f64)
                .collect();
            let dtype = call::tensor(&losses)?.dtype();
            let divisors =
                call::fresh(ferrojit_tensor::Tensor::from_vec(divisors, &[batch])?.to_dtype(dtype));
            let share = call::scale(&expand(grad, &[batch])?, 1.0 / batch.max(1) as f64)?;
            call::div(&share, &divisors)?
        }
        2 => expand(grad, &[batch])?,
        _ if batched => grad.clone(),
        _ => reshape(grad, &[batch])?,
    };
    if zero_infinity.to_bool()? {
        let infinite = against("aten::eq.Scalar", &losses, f64::INFINITY)?;
        grad_losses = zero_where(&infinite, &grad_losses)?;
    }
    let gradient = call1(
        backward,
        vec![
            grad_losses,
            log_probs,
            arguments[1].clone(),
            arguments[2].clone(),
            arguments[3].clone(),
            losses,
            log_alpha,
            arguments[4].clone(),
            zero_infinity,
        ],
    )?;
    out[0] = Some(if batched {
        gradient
    } else {
        reshape(&gradient, &sizes)?
    });
    Ok(out)
}

fn public_int_list(input: &FormulaInput) -> Result<Gradients> {
    public_ctc_loss(input, "aten::_ctc_loss", "aten::_ctc_loss_backward")
}

fn public_tensor(input: &FormulaInput) -> Result<Gradients> {
    public_ctc_loss(
        input,
        "aten::_ctc_loss.Tensor",
        "aten::_ctc_loss_backward.Tensor",
    )
}

/// `_ctc_loss_backward` (both forms): PyTorch has no derivative for it, so differentiating
/// the CTC loss twice raises PyTorch's error.
fn backward_kernel(_input: &FormulaInput) -> Result<Gradients> {
    Err(refuse(
        "derivative for aten::_ctc_loss_backward is not implemented",
    ))
}

formula_table![
    (
        "aten::_ctc_loss_backward",
        "NotImplemented",
        backward_kernel,
        &[]
    ),
    (
        "aten::_ctc_loss_backward.Tensor",
        "NotImplemented",
        backward_kernel,
        &[]
    ),
    (
        "aten::_ctc_loss",
        "CtcLossBackward0",
        private_int_list,
        &[0, 1]
    ),
    (
        "aten::_ctc_loss.Tensor",
        "CtcLossBackward1",
        private_tensor,
        &[0, 1, 2, 3]
    ),
    (
        "aten::ctc_loss.IntList",
        "CtcLossBackward0",
        public_int_list,
        &[0, 1]
    ),
    (
        "aten::ctc_loss.Tensor",
        "CtcLossBackward1",
        public_tensor,
        &[0, 1, 2, 3]
    ),
];
