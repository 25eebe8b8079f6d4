//! Derivatives of the distance and similarity operators (`pairwise_distance`, `pdist`,
//! `cdist`, `cosine_similarity`) and of `tensordot`: each distance is a p-norm of
//! differences, so its gradient is the norm's gradient on those differences, added back to
//! the rows they came from.

use ferrojit_runtime::{IValue, Result};

use super::statistics::norm_backward;
use super::support::{broadcast_shape, index_tensor, refuse};
use super::{wrap_dim, Formula, FormulaInput, Gradients};
use crate::call::{self, call1, float, int, ints, mul, reshape, sub, sum_to};

/// `linalg_vector_norm(value, p, [dim], keepdim)`.
fn vector_norm(value: &IValue, p: f64, dim: i64, keepdim: bool) -> Result<IValue> {
    call1(
        "aten::linalg_vector_norm",
        vec![value.clone(), float(p), ints(&[dim]), IValue::Bool(keepdim)],
    )
}

/// The gradient of `||difference||_p` along `dim` for the output gradient `grad` (PyTorch
/// leaves the 0-"norm", a count, without gradient).
pub(super) fn norm_gradient(
    grad: &IValue,
    difference: &IValue,
    p: f64,
    dim: usize,
) -> Result<IValue> {
    if p == 0.0 {
        return call::scale(difference, 0.0);
    }
    let norm = vector_norm(difference, p, dim as i64, false)?;
    norm_backward(grad, difference, p, &norm, &[dim], false)
}

/// `pairwise_distance(x1, x2, p, eps, keepdim) = ||x1 - x2 + eps||_p` over the last dim.
fn pairwise_distance(input: &FormulaInput) -> Result<Gradients> {
    let (x1, x2) = (input.argument(0)?, input.argument(1)?);
    let p = input.number(2)?;
    let eps = input.number(3)?;
    let keepdim = input.argument(4)?.to_bool()?;
    let difference = call::add_scalar(&sub(x1, x2)?, eps)?;
    let rank = call::sizes(&difference)?.len();
    let dim = rank.saturating_sub(1);
    let mut grad = input.grad(0)?.clone();
    if keepdim && rank > 0 {
        grad = call1("aten::squeeze.dim", vec![grad, int(dim as i64)])?;
    }
    let gradient = norm_gradient(&grad, &difference, p, dim)?;
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(sum_to(&gradient, &input.sizes(0)?)?);
    }
    if input.needs(1) {
        out[1] = Some(sum_to(&call::neg(&gradient)?, &input.sizes(1)?)?);
    }
    Ok(out)
}

/// `pdist(self, p)`: the distances of rows `i < j`, in row-major pair order.
fn pdist(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let sizes = input.sizes(0)?;
    if sizes.len() != 2 {
        return Err(refuse(format!(
            "pdist only supports 2D tensors, got: {}D",
            sizes.len()
        )));
    }
    let rows = sizes[0];
    let (mut first, mut second) = (Vec::new(), Vec::new());
    for i in 0..rows {
        for j in i + 1..rows {
            first.push(i as i64);
            second.push(j as i64);
        }
    }
    let pairs = first.len();
    let first = index_tensor(first, &[pairs])?;
    let second = index_tensor(second, &[pairs])?;
    let difference = sub(
        &call1("aten::index_select", vec![x.clone(), int(0), first.clone()])?,
        &call1(
            "aten::index_select",
            vec![x.clone(), int(0), second.clone()],
        )?,
    )?;
    let gradient = norm_gradient(input.grad(0)?, &difference, input.number(1)?, 1)?;
    let zeros = call::zeros(&sizes, input.dtype(0)?)?;
    let added = call1(
        "aten::index_add",
        vec![zeros, int(0), first, gradient.clone()],
    )?;
    let mut out = input.none();
    out[0] = Some(call1(
        "aten::index_add",
        vec![added, int(0), second, call::neg(&gradient)?],
    )?);
    Ok(out)
}

/// `cdist(x1, x2, p, compute_mode)`: `[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_p`.
fn cdist(input: &FormulaInput) -> Result<Gradients> {
    let (x1, x2) = (input.argument(0)?, input.argument(1)?);
    let p = input.number(2)?;
    let difference = sub(
        &call1("aten::unsqueeze", vec![x1.clone(), int(-2)])?,
        &call1("aten::unsqueeze", vec![x2.clone(), int(-3)])?,
    )?;
    let rank = call::sizes(&difference)?.len();
    let gradient = norm_gradient(input.grad(0)?, &difference, p, rank - 1)?;
    let mut out = input.none();
    if input.needs(0) {
        let summed = call::sum_dims(&gradient, &[-2], false)?;
        out[0] = Some(sum_to(&summed, &input.sizes(0)?)?);
    }
    if input.needs(1) {
        let summed = call::sum_dims(&gradient, &[-3], false)?;
        out[1] = Some(sum_to(&call::neg(&summed)?, &input.sizes(1)?)?);
    }
    Ok(out)
}

/// `cosine_similarity(x1, x2, dim, eps)`, which PyTorch computes as
/// `sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps), dim)` with the clamp outside the graph:
/// the norms' gradients flow as if unclamped.
fn cosine_similarity(input: &FormulaInput) -> Result<Gradients> {
    let sizes = broadcast_shape(&input.sizes(0)?, &input.sizes(1)?)?;
    let x1 = call::expand(input.argument(0)?, &sizes)?;
    let x2 = call::expand(input.argument(1)?, &sizes)?;
    let dim = wrap_dim(input.int(2)?, sizes.len());
    let eps = input.number(3)?;
    let norms: Vec<(IValue, IValue)> = [&x1, &x2]
        .iter()
        .map(|x| {
            let norm = vector_norm(x, 2.0, dim as i64, true)?;
            let clamped = call1("aten::clamp_min", vec![norm.clone(), float(eps)])?;
            Ok((norm, clamped))
        })
        .collect::<Result<_>>()?;
    let grad = call1(
        "aten::unsqueeze",
        vec![input.grad(0)?.clone(), int(dim as i64)],
    )?;
    let mut out = input.none();
    for (index, (x, other)) in [(&x1, &x2), (&x2, &x1)].into_iter().enumerate() {
        if !input.needs(index) {
            continue;
        }
        let (norm, clamped) = &norms[index];
        let other_clamped = &norms[1 - index].1;
        // The gradient reaching x / max(||x||, eps).
        let unit_grad = mul(&grad, &call::div(other, other_clamped)?)?;
        let direct = call::div(&unit_grad, clamped)?;
        let through_norm = call::neg(&call::div(
            &call::sum_dims(&mul(&unit_grad, x)?, &[dim as i64], true)?,
            &mul(clamped, clamped)?,
        )?)?;
        let via_norm = norm_backward(&through_norm, x, 2.0, norm, &[dim], true)?;
        out[index] = Some(sum_to(
            &call::add(&direct, &via_norm)?,
            &input.sizes(index)?,
        )?);
    }
    Ok(out)
}

/// The permutation that undoes `permutation`.
fn inverse(permutation: &[usize]) -> Vec<i64> {
    let mut result = vec![0i64; permutation.len()];
    for (position, &dim) in permutation.iter().enumerate() {
        result[dim] = position as i64;
    }
    result
}

fn permute(value: &IValue, permutation: &[usize]) -> Result<IValue> {
    let dims: Vec<i64> = permutation.iter().map(|&dim| dim as i64).collect();
    call1("aten::permute", vec![value.clone(), ints(&dims)])
}

/// `tensordot(self, other, dims_self, dims_other)`: a matrix product of `self` with its
/// contracted dims moved last and `other` with its contracted dims moved first.
fn tensordot(input: &FormulaInput) -> Result<Gradients> {
    let (a, b) = (input.argument(0)?, input.argument(1)?);
    let (a_sizes, b_sizes) = (input.sizes(0)?, input.sizes(1)?);
    let a_dims: Vec<usize> = input
        .ints(2)?
        .into_iter()
        .map(|dim| wrap_dim(dim, a_sizes.len()))
        .collect();
    let b_dims: Vec<usize> = input
        .ints(3)?
        .into_iter()
        .map(|dim| wrap_dim(dim, b_sizes.len()))
        .collect();
    let a_free: Vec<usize> = (0..a_sizes.len()).filter(|d| !a_dims.contains(d)).collect();
    let b_free: Vec<usize> = (0..b_sizes.len()).filter(|d| !b_dims.contains(d)).collect();
    let a_order: Vec<usize> = a_free.iter().chain(&a_dims).copied().collect();
    let b_order: Vec<usize> = b_dims.iter().chain(&b_free).copied().collect();
    let rows: usize = a_free.iter().map(|&d| a_sizes[d]).product();
    let inner: usize = a_dims.iter().map(|&d| a_sizes[d]).product();
    let columns: usize = b_free.iter().map(|&d| b_sizes[d]).product();
    let grad = reshape(input.grad(0)?, &[rows, columns])?;
    let mut out = input.none();
    if input.needs(0) {
        let b_matrix = reshape(&permute(b, &b_order)?, &[inner, columns])?;
        let product = call::mm(&grad, &call::t(&b_matrix)?)?;
        let permuted_sizes: Vec<usize> = a_order.iter().map(|&d| a_sizes[d]).collect();
        let shaped = reshape(&product, &permuted_sizes)?;
        out[0] = Some(call1(
            "aten::permute",
            vec![shaped, ints(&inverse(&a_order))],
        )?);
    }
    if input.needs(1) {
        let a_matrix = reshape(&permute(a, &a_order)?, &[rows, inner])?;
        let product = call::mm(&call::t(&a_matrix)?, &grad)?;
        let permuted_sizes: Vec<usize> = b_order.iter().map(|&d| b_sizes[d]).collect();
        let shaped = reshape(&product, &permuted_sizes)?;
        out[1] = Some(call1(
            "aten::permute",
            vec![shaped, ints(&inverse(&b_order))],
        )?);
    }
    Ok(out)
}

formula_table![
    (
        "aten::pairwise_distance",
        "NormBackward1",
        pairwise_distance,
        &[0, 1]
    ),
    ("aten::pdist", "PdistBackward0", pdist, &[0]),
    ("aten::cdist", "CdistBackward0", cdist, &[0, 1]),
    (
        "aten::cosine_similarity",
        "SumBackward1",
        cosine_similarity,
        &[0, 1]
    ),
    ("aten::tensordot", "MmBackward0", tensordot, &[0, 1]),
];
