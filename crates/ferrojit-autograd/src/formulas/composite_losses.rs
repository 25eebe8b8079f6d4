//! Derivatives of the losses PyTorch composes from other operators and ferrojit runs as
//! single kernels: `cosine_embedding_loss` (cosine similarity with a `1e-12` guard on each
//! squared magnitude), `triplet_margin_loss` (two or three `pairwise_distance`s under a
//! `clamp_min`) and `poisson_nll_loss`. Each formula is the chain rule through PyTorch's
//! composition, so the branch taken at a tie or a hinge is PyTorch's.

use ferrojit_runtime::{IValue, Result};

use super::distances::norm_gradient;
use super::margin_losses::{broadcast_sizes, per_term};
use super::support::{against, binary, broadcast_shape, keep_where, refuse, zero_where};
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call1, int, mul, sub, sum_to};

/// PyTorch's guard added to each squared magnitude of `cosine_embedding_loss`.
const COSINE_EPSILON: f64 = 1e-12;

fn unsqueeze(value: &IValue, dim: usize) -> Result<IValue> {
    call1("aten::unsqueeze", vec![value.clone(), int(dim as i64)])
}

/// `cosine_embedding_loss(x1, x2, target, margin, reduction)`: with `cos` over the dimension
/// `target.dim()`, `1 - cos` where `target == 1` and `clamp_min(cos - margin, 0)` where
/// `target == -1`; `d cos / d x1 = x2 / |x1||x2| - cos x1 / |x1|²` (magnitudes guarded).
fn cosine_embedding_loss(input: &FormulaInput) -> Result<Gradients> {
    let (x1, x2, target) = (input.argument(0)?, input.argument(1)?, input.argument(2)?);
    let margin = input.number(3)?;
    let dim = input.sizes(2)?.len();
    let square_sum = |a: &IValue, b: &IValue| -> Result<IValue> {
        call::sum_dims(&mul(a, b)?, &[dim as i64], false)
    };
    let magnitude1 = call::add_scalar(&square_sum(x1, x1)?, COSINE_EPSILON)?;
    let magnitude2 = call::add_scalar(&square_sum(x2, x2)?, COSINE_EPSILON)?;
    let denominator = call::unary("aten::sqrt", &mul(&magnitude1, &magnitude2)?)?;
    let cos = call::div(&square_sum(x1, x2)?, &denominator)?;
    let shape = broadcast_shape(&call::sizes(&cos)?, &input.sizes(2)?)?;
    let grad = per_term(input, 4, shape.iter().product())?;
    let similar = against("aten::eq.Scalar", target, 1.0)?;
    let dissimilar = binary(
        "aten::logical_and",
        &against("aten::eq.Scalar", target, -1.0)?,
        &against("aten::ge.Scalar", &call::add_scalar(&cos, -margin)?, 0.0)?,
    )?;
    let grad_cos = sub(
        &keep_where(&dissimilar, &grad)?,
        &keep_where(&similar, &grad)?,
    )?;
    let grad_cos = unsqueeze(&sum_to(&grad_cos, &call::sizes(&cos)?)?, dim)?;
    let (cos, denominator) = (unsqueeze(&cos, dim)?, unsqueeze(&denominator, dim)?);
    let partial = |this: &IValue, other: &IValue, magnitude: &IValue| -> Result<IValue> {
        let along_other = call::div(other, &denominator)?;
        let along_self = call::div(&mul(&cos, this)?, &unsqueeze(magnitude, dim)?)?;
        mul(&grad_cos, &sub(&along_other, &along_self)?)
    };
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(sum_to(&partial(x1, x2, &magnitude1)?, &input.sizes(0)?)?);
    }
    if input.needs(1) {
        out[1] = Some(sum_to(&partial(x2, x1, &magnitude2)?, &input.sizes(1)?)?);
    }
    Ok(out)
}

/// `pairwise_distance(a, b, p, eps)` over `dim`, and the difference it is the norm of.
fn distance(a: &IValue, b: &IValue, p: f64, eps: f64, dim: usize) -> Result<(IValue, IValue)> {
    let difference = call::add_scalar(&sub(a, b)?, eps)?;
    let norm = call1(
        "aten::linalg_vector_norm",
        vec![
            difference.clone(),
            call::float(p),
            call::ints(&[dim as i64]),
            IValue::Bool(false),
        ],
    )?;
    Ok((norm, difference))
}

/// `min(a, b)`'s gradient to `a`: all of it where `a < b`, half at a tie (PyTorch's
/// `minimum` backward).
fn minimum_share(grad: &IValue, a: &IValue, b: &IValue) -> Result<IValue> {
    let tie = binary("aten::eq.Tensor", a, b)?;
    let shared = call1(
        "aten::where.self",
        vec![tie, call::scale(grad, 0.5)?, grad.clone()],
    )?;
    zero_where(&binary("aten::gt.Tensor", a, b)?, &shared)
}

/// `triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction) =
/// clamp_min(margin + d(a, p) - d(a, n), 0)`, `d(a, n)` replaced by `min(d(a, n), d(p, n))`
/// with `swap`.
fn triplet_margin_loss(input: &FormulaInput) -> Result<Gradients> {
    let (anchor, positive, negative) = (input.argument(0)?, input.argument(1)?, input.argument(2)?);
    let margin = input.number(3)?;
    let p = input.number(4)?;
    let eps = input.number(5)?;
    let swap = input.argument(6)?.to_bool()?;
    let rank = (0..3)
        .map(|index| input.sizes(index).map(|sizes| sizes.len()))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .max()
        .unwrap_or(0);
    if rank == 0 {
        return Err(refuse(
            "The anchor, positive, and negative tensors are expected to have at least 1 dimension",
        ));
    }
    let dim = rank - 1;
    let (to_positive, positive_difference) = distance(anchor, positive, p, eps, dim)?;
    let (to_negative, negative_difference) = distance(anchor, negative, p, eps, dim)?;
    let swapped = if swap {
        Some(distance(positive, negative, p, eps, dim)?)
    } else {
        None
    };
    let nearest_negative = match &swapped {
        Some((between, _)) => call1("aten::minimum", vec![to_negative.clone(), between.clone()])?,
        None => to_negative.clone(),
    };
    let hinge = call::add_scalar(&sub(&to_positive, &nearest_negative)?, margin)?;
    let count: usize = call::sizes(&hinge)?.iter().product();
    let grad = per_term(input, 7, count)?;
    let active = keep_where(&against("aten::ge.Scalar", &hinge, 0.0)?, &grad)?;
    let active = sum_to(&active, &call::sizes(&hinge)?)?;
    let against_negative = call::neg(&active)?;
    let (grad_negative, grad_swapped) = match &swapped {
        Some((between, _)) => (
            minimum_share(&against_negative, &to_negative, between)?,
            Some(minimum_share(&against_negative, between, &to_negative)?),
        ),
        None => (against_negative, None),
    };
    // Gradients of the three differences (anchor - positive, anchor - negative,
    // positive - negative), each a norm's gradient.
    let along_positive = norm_gradient(&active, &positive_difference, p, dim)?;
    let along_negative = norm_gradient(&grad_negative, &negative_difference, p, dim)?;
    let along_swapped = match (&swapped, &grad_swapped) {
        (Some((_, difference)), Some(grad)) => Some(norm_gradient(grad, difference, p, dim)?),
        _ => None,
    };
    let mut out = input.none();
    if input.needs(0) {
        let gradient = call::add(&along_positive, &along_negative)?;
        out[0] = Some(sum_to(&gradient, &input.sizes(0)?)?);
    }
    if input.needs(1) {
        let mut gradient = call::neg(&along_positive)?;
        if let Some(swapped) = &along_swapped {
            gradient = call::add(&gradient, swapped)?;
        }
        out[1] = Some(sum_to(&gradient, &input.sizes(1)?)?);
    }
    if input.needs(2) {
        let mut gradient = call::neg(&along_negative)?;
        if let Some(swapped) = &along_swapped {
            gradient = sub(&gradient, swapped)?;
        }
        out[2] = Some(sum_to(&gradient, &input.sizes(2)?)?);
    }
    Ok(out)
}

/// `poisson_nll_loss(input, target, log_input, full, eps, reduction)`: `exp(x) - t x` or
/// `x - t log(x + eps)`, plus with `full` the Stirling term `t log t - t + log(2 pi t) / 2`
/// where `t > 1`.
fn poisson_nll_loss(input: &FormulaInput) -> Result<Gradients> {
    let (x, target) = (input.argument(0)?, input.argument(1)?);
    let log_input = input.argument(2)?.to_bool()?;
    let full = input.argument(3)?.to_bool()?;
    let eps = input.number(4)?;
    let shape = broadcast_sizes(input, &[0, 1])?;
    let grad = per_term(input, 5, shape.iter().product())?;
    let mut out = input.none();
    if input.needs(0) {
        let derivative = if log_input {
            sub(&call::unary("aten::exp", x)?, target)?
        } else {
            call::rsub_scalar(&call::div(target, &call::add_scalar(x, eps)?)?, 1.0)?
        };
        out[0] = Some(sum_to(&mul(&derivative, &grad)?, &input.sizes(0)?)?);
    }
    if input.needs(1) {
        let mut derivative = if log_input {
            call::neg(x)?
        } else {
            call::neg(&call::unary("aten::log", &call::add_scalar(x, eps)?)?)?
        };
        if full {
            let half_reciprocal = call::scale(&call::unary("aten::reciprocal", target)?, 0.5)?;
            let slope = call::add(&call::unary("aten::log", target)?, &half_reciprocal)?;
            let counted = against("aten::gt.Scalar", target, 1.0)?;
            derivative = call::add(&derivative, &keep_where(&counted, &slope)?)?;
        }
        out[1] = Some(sum_to(&mul(&derivative, &grad)?, &input.sizes(1)?)?);
    }
    Ok(out)
}

formula_table![
    (
        "aten::cosine_embedding_loss",
        "CosineEmbeddingLossBackward0",
        cosine_embedding_loss,
        &[0, 1, 2]
    ),
    (
        "aten::triplet_margin_loss",
        "TripletMarginLossBackward0",
        triplet_margin_loss,
        &[0, 1, 2]
    ),
    (
        "aten::poisson_nll_loss",
        "PoissonNllLossBackward0",
        poisson_nll_loss,
        &[0, 1]
    ),
];
