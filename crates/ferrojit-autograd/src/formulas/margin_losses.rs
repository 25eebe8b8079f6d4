//! Derivatives of the margin losses ferrojit runs as single kernels (`margin_ranking_loss`,
//! `hinge_embedding_loss`, `soft_margin_loss`, `multi_margin_loss`,
//! `multilabel_margin_loss`): PyTorch composes the first two from `clamp_min` and `where`
//! (so a hinge at exactly zero passes the gradient, as `clamp_min`'s does) and has backward
//! kernels for the others, whose per-element terms these follow.

use ferrojit_runtime::{IValue, Result};
use ferrojit_tensor::Tensor;

use super::support::{against, binary, broadcast_shape, index_tensor, keep_where, refuse};
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call1, int, mul, reshape, sub, sum_dims, sum_to};

/// The output gradient as each loss term receives it: the mean of `count` terms divides it
/// by `count` (reduction 0 none, 1 mean, 2 sum).
pub(super) fn per_term(
    input: &FormulaInput,
    reduction_index: usize,
    count: usize,
) -> Result<IValue> {
    let grad = input.grad(0)?;
    if input.int(reduction_index)? == 1 {
        call::scale(grad, 1.0 / count.max(1) as f64)
    } else {
        Ok(grad.clone())
    }
}

/// The sizes the given tensor arguments broadcast to.
pub(super) fn broadcast_sizes(input: &FormulaInput, indices: &[usize]) -> Result<Vec<usize>> {
    let mut shape = Vec::new();
    for &index in indices {
        shape = broadcast_shape(&shape, &input.sizes(index)?)?;
    }
    Ok(shape)
}

/// `margin_ranking_loss(x1, x2, target, margin, reduction) =
/// clamp_min(margin - target * (x1 - x2), 0)`.
fn margin_ranking_loss(input: &FormulaInput) -> Result<Gradients> {
    let (x1, x2, target) = (input.argument(0)?, input.argument(1)?, input.argument(2)?);
    let margin = input.number(3)?;
    let shape = broadcast_sizes(input, &[0, 1, 2])?;
    let grad = per_term(input, 4, shape.iter().product())?;
    let difference = sub(x1, x2)?;
    let hinge = call::rsub_scalar(&mul(target, &difference)?, margin)?;
    let active = keep_where(&against("aten::ge.Scalar", &hinge, 0.0)?, &grad)?;
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(sum_to(
            &call::neg(&mul(target, &active)?)?,
            &input.sizes(0)?,
        )?);
    }
    if input.needs(1) {
        out[1] = Some(sum_to(&mul(target, &active)?, &input.sizes(1)?)?);
    }
    if input.needs(2) {
        out[2] = Some(sum_to(
            &call::neg(&mul(&difference, &active)?)?,
            &input.sizes(2)?,
        )?);
    }
    Ok(out)
}

/// `hinge_embedding_loss(self, target, margin, reduction)`: `self` where `target != -1`
/// plus `clamp_min(margin - self, 0)` where `target != 1`; the target only selects.
fn hinge_embedding_loss(input: &FormulaInput) -> Result<Gradients> {
    let (x, target) = (input.argument(0)?, input.argument(1)?);
    let margin = input.number(2)?;
    let shape = broadcast_sizes(input, &[0, 1])?;
    let grad = per_term(input, 3, shape.iter().product())?;
    let mut out = input.none();
    if input.needs(0) {
        let linear = against("aten::ne.Scalar", target, -1.0)?;
        let hinge_side = against("aten::ne.Scalar", target, 1.0)?;
        let inside = against("aten::ge.Scalar", &call::rsub_scalar(x, margin)?, 0.0)?;
        let hinge = binary("aten::logical_and", &hinge_side, &inside)?;
        let gradient = sub(&keep_where(&linear, &grad)?, &keep_where(&hinge, &grad)?)?;
        out[0] = Some(sum_to(&gradient, &input.sizes(0)?)?);
    }
    Ok(out)
}

/// `soft_margin_loss(self, target, reduction) = log(1 + exp(-target * self))`: `self`'s
/// gradient is `-target * sigmoid(-target * self)` (PyTorch differentiates only `self`).
fn soft_margin_loss(input: &FormulaInput) -> Result<Gradients> {
    let (x, target) = (input.argument(0)?, input.argument(1)?);
    let shape = broadcast_sizes(input, &[0, 1])?;
    let grad = per_term(input, 2, shape.iter().product())?;
    let mut out = input.none();
    if input.needs(0) {
        let negated = call::neg(target)?;
        let weight = call::unary("aten::sigmoid", &mul(&negated, x)?)?;
        let gradient = mul(&mul(&negated, &weight)?, &grad)?;
        out[0] = Some(sum_to(&gradient, &input.sizes(0)?)?);
    }
    Ok(out)
}

/// Rows and classes of a margin loss input: `[N, C]`, `[C]` (one row) or 0-d (one class).
fn rows_and_classes(sizes: &[usize]) -> Result<(usize, usize)> {
    match sizes {
        [] => Ok((1, 1)),
        [classes] => Ok((1, *classes)),
        [rows, classes] => Ok((*rows, *classes)),
        _ => Err(refuse(format!(
            "Expected non-empty vector or matrix with optional 0-dim batch size, but got: {sizes:?}"
        ))),
    }
}

/// The output gradient per row, `[N, 1]`, over `C` classes (both losses divide each row's
/// sum by the class count; a mean also by the row count).
fn per_row(
    input: &FormulaInput,
    reduction_index: usize,
    rows: usize,
    classes: usize,
) -> Result<IValue> {
    let grad = per_term(input, reduction_index, rows)?;
    let grad = if input.int(reduction_index)? == 0 {
        reshape(&grad, &[rows, 1])?
    } else {
        grad
    };
    call::scale(&grad, 1.0 / classes.max(1) as f64)
}

/// `multi_margin_loss(self, target, p, margin, weight, reduction)`: per row `n` with class
/// `y`, each other class `i` with `z = margin - x[y] + x[i] > 0` adds `w[y] z^p / C`; its
/// gradient is `w[y] (1 or 2 z) / C` at `i` and minus their sum at `y`.
fn multi_margin_loss(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    if !input.needs(0) {
        return Ok(out);
    }
    let sizes = input.sizes(0)?;
    let (rows, classes) = rows_and_classes(&sizes)?;
    let p = input.number(2)?;
    if p != 1.0 && p != 2.0 {
        return Err(refuse("only p == 1 and p == 2 supported"));
    }
    let margin = input.number(3)?;
    let x = reshape(input.argument(0)?, &[rows, classes])?;
    let target = reshape(input.argument(1)?, &[rows, 1])?;
    let chosen = call1("aten::gather", vec![x.clone(), int(1), target.clone()])?;
    let hinge = call::add_scalar(&sub(&x, &chosen)?, margin)?;
    let class_ids = index_tensor((0..classes as i64).collect(), &[1, classes])?;
    let is_target = binary("aten::eq.Tensor", &class_ids, &target)?;
    let active = binary(
        "aten::logical_and",
        &against("aten::gt.Scalar", &hinge, 0.0)?,
        &call::unary("aten::logical_not", &is_target)?,
    )?;
    let slope = if p == 1.0 {
        call::mask_like(&active, &x)?
    } else {
        keep_where(&active, &call::scale(&hinge, 2.0)?)?
    };
    let weight = input.argument(4)?;
    let slope = if weight.is_none() {
        slope
    } else {
        let flat_target = reshape(&target, &[rows])?;
        let chosen_weight = call1(
            "aten::index_select",
            vec![weight.clone(), int(0), flat_target],
        )?;
        mul(&slope, &reshape(&chosen_weight, &[rows, 1])?)?
    };
    let terms = mul(&slope, &per_row(input, 5, rows, classes)?)?;
    let at_target = keep_where(&is_target, &sum_dims(&terms, &[1], true)?)?;
    out[0] = Some(reshape(&sub(&terms, &at_target)?, &sizes)?);
    Ok(out)
}

/// The per-element slope counts of `multilabel_margin_loss` for one row: each listed label
/// `y` (up to the first `-1`, repeats counting again) against each unlisted class `i` with
/// `1 - (x[y] - x[i]) > 0` adds one at `i` and subtracts one at `y`.
fn multilabel_counts(values: &[f64], labels: &[i64]) -> Result<Vec<f64>> {
    let classes = values.len();
    let listed: Vec<usize> = labels
        .iter()
        .take_while(|&&label| label >= 0)
        .map(|&label| {
            usize::try_from(label)
                .ok()
                .filter(|&label| label < classes)
                .ok_or_else(|| refuse(format!("target index {label} is out of bounds")))
        })
        .collect::<Result<_>>()?;
    let mut is_target = vec![false; classes];
    for &label in &listed {
        is_target[label] = true;
    }
    let mut counts = vec![0.0; classes];
    for &label in &listed {
        for class in (0..classes).filter(|&class| !is_target[class]) {
            if 1.0 - (values[label] - values[class]) > 0.0 {
                counts[class] += 1.0;
                counts[label] -= 1.0;
            }
        }
    }
    Ok(counts)
}

/// `multilabel_margin_loss(self, target, reduction)`: the gradient is piecewise constant in
/// `self`, the slope counts (computed from the values, without history) times the row's
/// output gradient over `C`.
fn multilabel_margin_loss(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    if !input.needs(0) {
        return Ok(out);
    }
    let sizes = input.sizes(0)?;
    let (rows, classes) = rows_and_classes(&sizes)?;
    let values = call::tensor(input.argument(0)?)?.to_f64_vec();
    let labels = call::tensor(input.argument(1)?)?.to_i64_vec();
    if values.len() != rows * classes || labels.len() != rows * classes {
        return Err(refuse(format!(
            "inconsistent target size: {:?} for input of size: {sizes:?}",
            call::sizes(input.argument(1)?)?
        )));
    }
    let mut counts = Vec::with_capacity(rows * classes);
    for row in 0..rows {
        let span = row * classes..(row + 1) * classes;
        counts.extend(multilabel_counts(&values[span.clone()], &labels[span])?);
    }
    let dtype = call::tensor(input.argument(0)?)?.dtype();
    let counts = Tensor::from_vec(counts, &[rows, classes])?.to_dtype(dtype);
    let gradient = mul(&call::fresh(counts), &per_row(input, 2, rows, classes)?)?;
    out[0] = Some(reshape(&gradient, &sizes)?);
    Ok(out)
}

formula_table![
    (
        "aten::margin_ranking_loss",
        "MarginRankingLossBackward0",
        margin_ranking_loss,
        &[0, 1, 2]
    ),
    (
        "aten::hinge_embedding_loss",
        "HingeEmbeddingLossBackward0",
        hinge_embedding_loss,
        &[0, 1]
    ),
    (
        "aten::soft_margin_loss",
        "SoftMarginLossBackward0",
        soft_margin_loss,
        &[0, 1]
    ),
    (
        "aten::multi_margin_loss",
        "MultiMarginLossBackward0",
        multi_margin_loss,
        &[0, 1, 4]
    ),
    (
        "aten::multilabel_margin_loss",
        "MultilabelMarginLossBackward0",
        multilabel_margin_loss,
        &[0, 1]
    ),
];
