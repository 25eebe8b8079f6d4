//! The CTC loss operators (`_ctc_loss`, its backward `_ctc_loss_backward`, and `ctc_loss`,
//! each with the lengths as int lists or as tensors) over ferrojit-tensor's `nn::ctc_loss`.
//! Their out= forms are derived.

use std::sync::Arc;

use ferrojit_tensor::ops::nn::ctc_loss;
use ferrojit_tensor::{DType, Tensor};

use super::binding::typed;
use crate::error::{Result, RuntimeError};
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// The lengths given as a tensor, as ATen reads them: any integral dtype, as int64 values.
fn lengths_of(lengths: &Tensor, name: &str) -> Result<Vec<i64>> {
    if !lengths.dtype().is_integral(false) {
        return Err(RuntimeError::Other(format!("{name} must be integral")));
    }
    Ok(lengths
        .to_dtype(DType::Int64)
        .contiguous()
        .to_vec::<i64>()?)
}

fn private_int_list(
    log_probs: Input,
    targets: Input,
    input_lengths: Vec<i64>,
    target_lengths: Vec<i64>,
    blank: i64,
    _zero_infinity: bool,
) -> Result<(Tensor, Tensor)> {
    Ok(ctc_loss::ctc_loss_forward(
        &log_probs,
        &targets,
        &input_lengths,
        &target_lengths,
        blank,
    )?)
}

fn private_tensor(
    log_probs: Input,
    targets: Input,
    input_lengths: Input,
    target_lengths: Input,
    blank: i64,
    zero_infinity: bool,
) -> Result<(Tensor, Tensor)> {
    let input_lengths = lengths_of(&input_lengths, "input_lengths")?;
    let target_lengths = lengths_of(&target_lengths, "target_lengths")?;
    private_int_list(
        log_probs,
        targets,
        input_lengths,
        target_lengths,
        blank,
        zero_infinity,
    )
}

fn public_int_list(
    log_probs: Input,
    targets: Input,
    input_lengths: Vec<i64>,
    target_lengths: Vec<i64>,
    blank: i64,
    reduction: i64,
    zero_infinity: bool,
) -> Result<Tensor> {
    Ok(ctc_loss::ctc_loss(
        &log_probs,
        &targets,
        &input_lengths,
        &target_lengths,
        blank,
        reduction,
        zero_infinity,
    )?)
}

#[allow(clippy::too_many_arguments)]
fn public_tensor(
    log_probs: Input,
    targets: Input,
    input_lengths: Input,
    target_lengths: Input,
    blank: i64,
    reduction: i64,
    zero_infinity: bool,
) -> Result<Tensor> {
    let input_lengths = lengths_of(&input_lengths, "input_lengths")?;
    let target_lengths = lengths_of(&target_lengths, "target_lengths")?;
    public_int_list(
        log_probs,
        targets,
        input_lengths,
        target_lengths,
        blank,
        reduction,
        zero_infinity,
    )
}

#[allow(clippy::too_many_arguments)]
fn backward_int_list(
    grad: Input,
    log_probs: Input,
    targets: Input,
    input_lengths: Vec<i64>,
    target_lengths: Vec<i64>,
    neg_log_likelihood: Input,
    log_alpha: Input,
    blank: i64,
    zero_infinity: bool,
) -> Result<Tensor> {
    Ok(ctc_loss::ctc_loss_backward(
        &grad,
        &log_probs,
        &targets,
        &input_lengths,
        &target_lengths,
        &neg_log_likelihood,
        &log_alpha,
        blank,
        zero_infinity,
    )?)
}

#[allow(clippy::too_many_arguments)]
fn backward_tensor(
    grad: Input,
    log_probs: Input,
    targets: Input,
    input_lengths: Input,
    target_lengths: Input,
    neg_log_likelihood: Input,
    log_alpha: Input,
    blank: i64,
    zero_infinity: bool,
) -> Result<Tensor> {
    let input_lengths = lengths_of(&input_lengths, "input_lengths")?;
    let target_lengths = lengths_of(&target_lengths, "target_lengths")?;
    backward_int_list(
        grad,
        log_probs,
        targets,
        input_lengths,
        target_lengths,
        neg_log_likelihood,
        log_alpha,
        blank,
        zero_infinity,
    )
}

/// Every operator of this file, in declaration order.
pub fn declarations() -> Vec<OperatorDeclaration> {
    #[rustfmt::skip]
    let declarations = vec![
        typed("aten::_ctc_loss(Tensor log_probs, Tensor targets, int[] input_lengths, int[] target_lengths, int blank=0, bool zero_infinity=False) -> (Tensor, Tensor)", private_int_list),
        typed("aten::_ctc_loss.Tensor(Tensor log_probs, Tensor targets, Tensor input_lengths, Tensor target_lengths, int blank=0, bool zero_infinity=False) -> (Tensor, Tensor)", private_tensor),
        typed("aten::_ctc_loss_backward(Tensor grad, Tensor log_probs, Tensor targets, int[] input_lengths, int[] target_lengths, Tensor neg_log_likelihood, Tensor log_alpha, int blank, bool zero_infinity=False) -> Tensor", backward_int_list),
        typed("aten::_ctc_loss_backward.Tensor(Tensor grad, Tensor log_probs, Tensor targets, Tensor input_lengths, Tensor target_lengths, Tensor neg_log_likelihood, Tensor log_alpha, int blank, bool zero_infinity=False) -> Tensor", backward_tensor),
        typed("aten::ctc_loss.IntList(Tensor log_probs, Tensor targets, int[] input_lengths, int[] target_lengths, int blank=0, int reduction=1, bool zero_infinity=False) -> Tensor", public_int_list),
        typed("aten::ctc_loss.Tensor(Tensor log_probs, Tensor targets, Tensor input_lengths, Tensor target_lengths, int blank=0, int reduction=1, bool zero_infinity=False) -> Tensor", public_tensor),
    ];
    declarations
}
