//! Margin and embedding losses (`margin_ranking_loss`, `hinge_embedding_loss`,
//! `soft_margin_loss`, `cosine_embedding_loss`, `poisson_nll_loss`, `triplet_margin_loss`,
//! `multi_margin_loss`, `multilabel_margin_loss` and its `_forward`), over ferrojit-tensor's
//! `ops::nn::margin_losses`.

use std::sync::Arc;

use ferrojit_tensor::ops::nn::loss::Reduction;
use ferrojit_tensor::ops::nn::margin_losses;
use ferrojit_tensor::{Scalar, Tensor};

use super::binding::typed;
use crate::error::Result;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// The composite losses reduce as ATen's `apply_loss_reduction`: 1 is the mean, 2 the sum,
/// and any other value leaves the loss unreduced (no error, as in PyTorch).
fn composite_reduction(reduction: i64) -> Reduction {
    match reduction {
        1 => Reduction::Mean,
        2 => Reduction::Sum,
        _ => Reduction::None,
    }
}

fn margin_ranking_loss(
    input1: Input,
    input2: Input,
    target: Input,
    margin: f64,
    reduction: i64,
) -> Result<Tensor> {
    Ok(margin_losses::margin_ranking_loss(
        &input1,
        &input2,
        &target,
        margin,
        composite_reduction(reduction),
    )?)
}

fn hinge_embedding_loss(
    input: Input,
    target: Input,
    margin: f64,
    reduction: i64,
) -> Result<Tensor> {
    Ok(margin_losses::hinge_embedding_loss(
        &input,
        &target,
        margin,
        composite_reduction(reduction),
    )?)
}

fn soft_margin_loss(input: Input, target: Input, reduction: Reduction) -> Result<Tensor> {
    Ok(margin_losses::soft_margin_loss(&input, &target, reduction)?)
}

fn cosine_embedding_loss(
    input1: Input,
    input2: Input,
    target: Input,
    margin: f64,
    reduction: i64,
) -> Result<Tensor> {
    Ok(margin_losses::cosine_embedding_loss(
        &input1,
        &input2,
        &target,
        margin,
        composite_reduction(reduction),
    )?)
}

fn poisson_nll_loss(
    input: Input,
    target: Input,
    log_input: bool,
    full: bool,
    eps: f64,
    reduction: i64,
) -> Result<Tensor> {
    Ok(margin_losses::poisson_nll_loss(
        &input,
        &target,
        log_input,
        full,
        eps,
        composite_reduction(reduction),
    )?)
}

#[allow(clippy::too_many_arguments)]
fn triplet_margin_loss(
    anchor: Input,
    positive: Input,
    negative: Input,
    margin: f64,
    p: f64,
    eps: f64,
    swap: bool,
    reduction: i64,
) -> Result<Tensor> {
    Ok(margin_losses::triplet_margin_loss(
        &anchor,
        &positive,
        &negative,
        margin,
        p,
        eps,
        swap,
        composite_reduction(reduction),
    )?)
}

/// `p` is a Scalar in the schema; ATen reads it as an integer (only 1 and 2 are accepted).
fn multi_margin_loss(
    input: Input,
    target: Input,
    p: Scalar,
    margin: Scalar,
    weight: Option<Input>,
    reduction: Reduction,
) -> Result<Tensor> {
    let p = p.to_f64();
    let p = if p == 1.0 || p == 2.0 { p as i64 } else { 0 };
    Ok(margin_losses::multi_margin_loss(
        &input,
        &target,
        p,
        margin.to_f64(),
        weight.as_deref(),
        reduction,
    )?)
}

fn multilabel_margin_loss(input: Input, target: Input, reduction: Reduction) -> Result<Tensor> {
    Ok(margin_losses::multilabel_margin_loss(&input, &target, reduction)?.0)
}

fn multilabel_margin_loss_forward(
    input: Input,
    target: Input,
    reduction: Reduction,
) -> Result<(Tensor, Tensor)> {
    Ok(margin_losses::multilabel_margin_loss(
        &input, &target, reduction,
    )?)
}

pub fn declarations() -> Vec<OperatorDeclaration> {
    #[rustfmt::skip]
    let declarations = vec![
        typed("aten::margin_ranking_loss(Tensor input1, Tensor input2, Tensor target, float margin=0., int reduction=1) -> Tensor", margin_ranking_loss),
        typed("aten::hinge_embedding_loss(Tensor self, Tensor target, float margin=1., int reduction=1) -> Tensor", hinge_embedding_loss),
        typed("aten::soft_margin_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", soft_margin_loss),
        typed("aten::cosine_embedding_loss(Tensor input1, Tensor input2, Tensor target, float margin=0., int reduction=1) -> Tensor", cosine_embedding_loss),
        typed("aten::poisson_nll_loss(Tensor input, Tensor target, bool log_input, bool full, float eps, int reduction) -> Tensor", poisson_nll_loss),
        typed("aten::triplet_margin_loss(Tensor anchor, Tensor positive, Tensor negative, float margin=1., float p=2., float eps=9.9999999999999995e-07, bool swap=False, int reduction=1) -> Tensor", triplet_margin_loss),
        typed("aten::multi_margin_loss(Tensor self, Tensor target, Scalar p=1, Scalar margin=1, Tensor? weight=None, int reduction=1) -> Tensor", multi_margin_loss),
        typed("aten::multilabel_margin_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", multilabel_margin_loss),
        typed("aten::multilabel_margin_loss_forward(Tensor self, Tensor target, int reduction) -> (Tensor output, Tensor is_target)", multilabel_margin_loss_forward),
    ];
    declarations
}
