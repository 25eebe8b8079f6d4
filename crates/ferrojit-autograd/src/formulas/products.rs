//! Products of several tensors: the fused pointwise ones (`addcmul`, `addcdiv`), the
//! batched matrix ones (`addbmm`, `baddbmm`), vector products (`dot`, `vdot`, `mv`,
//! `outer`/`ger`), the cross product and `kron`, after PyTorch's derivatives.yaml.

use ferrojit_runtime::{IValue, Result};

use super::support::give_summed;
use super::{wrap_dim, Formula, FormulaInput, Gradients};
use crate::call::{self, call1, div, expand, int, mul, neg, reshape, scale, transpose};

/// `grad * factor`, skipping the multiplication by 1.
fn times(value: &IValue, factor: f64) -> Result<IValue> {
    if factor == 1.0 {
        Ok(value.clone())
    } else {
        scale(value, factor)
    }
}

/// `addcmul(self, tensor1, tensor2, *, value)`.
fn addcmul(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let value = input.number(3)?;
    let mut out = input.none();
    give_summed(input, &mut out, 0, || Ok(grad.clone()))?;
    give_summed(input, &mut out, 1, || {
        times(&mul(grad, input.argument(2)?)?, value)
    })?;
    give_summed(input, &mut out, 2, || {
        times(&mul(grad, input.argument(1)?)?, value)
    })?;
    Ok(out)
}

/// `addcdiv(self, tensor1, tensor2, *, value)`.
fn addcdiv(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let value = input.number(3)?;
    let numerator = input.argument(1)?;
    let denominator = input.argument(2)?;
    let mut out = input.none();
    give_summed(input, &mut out, 0, || Ok(grad.clone()))?;
    give_summed(input, &mut out, 1, || {
        times(&div(grad, denominator)?, value)
    })?;
    give_summed(input, &mut out, 2, || {
        let squared = mul(denominator, denominator)?;
        times(&neg(&div(&mul(grad, numerator)?, &squared)?)?, value)
    })?;
    Ok(out)
}

fn bmm(a: &IValue, b: &IValue) -> Result<IValue> {
    call1("aten::bmm", vec![a.clone(), b.clone()])
}

/// `baddbmm(self, batch1, batch2, *, beta, alpha)`.
fn baddbmm(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let beta = input.number(3)?;
    let alpha = input.number(4)?;
    let mut out = input.none();
    give_summed(input, &mut out, 0, || times(grad, beta))?;
    give_summed(input, &mut out, 1, || {
        times(&bmm(grad, &transpose(input.argument(2)?, 1, 2)?)?, alpha)
    })?;
    give_summed(input, &mut out, 2, || {
        times(&bmm(&transpose(input.argument(1)?, 1, 2)?, grad)?, alpha)
    })?;
    Ok(out)
}

/// `addbmm(self, batch1, batch2, *, beta, alpha)`: the batch sum's gradient is the
/// gradient repeated over the batch.
fn addbmm(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let beta = input.number(3)?;
    let alpha = input.number(4)?;
    let first = input.sizes(1)?;
    let second = input.sizes(2)?;
    let per_batch = || -> Result<IValue> {
        let lifted = call1("aten::unsqueeze", vec![grad.clone(), int(0)])?;
        expand(&lifted, &[first[0], first[1], second[2]])
    };
    let mut out = input.none();
    give_summed(input, &mut out, 0, || times(grad, beta))?;
    give_summed(input, &mut out, 1, || {
        times(
            &bmm(&per_batch()?, &transpose(input.argument(2)?, 1, 2)?)?,
            alpha,
        )
    })?;
    give_summed(input, &mut out, 2, || {
        times(
            &bmm(&transpose(input.argument(1)?, 1, 2)?, &per_batch()?)?,
            alpha,
        )
    })?;
    Ok(out)
}

/// `dot`/`vdot(self, other)` of real vectors.
fn dot(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let mut out = input.none();
    give_summed(input, &mut out, 0, || mul(grad, input.argument(1)?))?;
    give_summed(input, &mut out, 1, || mul(grad, input.argument(0)?))?;
    Ok(out)
}

fn mv_call(matrix: &IValue, vector: &IValue) -> Result<IValue> {
    call1("aten::mv", vec![matrix.clone(), vector.clone()])
}

fn outer_call(a: &IValue, b: &IValue) -> Result<IValue> {
    call1("aten::outer", vec![a.clone(), b.clone()])
}

/// `mv(self, vec)`: `outer(grad, vec)` and `self^T grad`.
fn mv(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let mut out = input.none();
    give_summed(input, &mut out, 0, || outer_call(grad, input.argument(1)?))?;
    give_summed(input, &mut out, 1, || {
        mv_call(&call::t(input.argument(0)?)?, grad)
    })?;
    Ok(out)
}

/// `outer(self, vec2)`: `grad vec2` and `grad^T self`.
fn outer(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let mut out = input.none();
    give_summed(input, &mut out, 0, || mv_call(grad, input.argument(1)?))?;
    give_summed(input, &mut out, 1, || {
        mv_call(&call::t(grad)?, input.argument(0)?)
    })?;
    Ok(out)
}

fn linalg_cross(a: &IValue, b: &IValue, dim: i64) -> Result<IValue> {
    call1("aten::linalg_cross", vec![a.clone(), b.clone(), int(dim)])
}

/// The cross product's gradients along `dim`: `other x grad` and `grad x self`.
fn cross_along(input: &FormulaInput, dim: i64) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let x = input.argument(0)?;
    let y = input.argument(1)?;
    let mut out = input.none();
    give_summed(input, &mut out, 0, || linalg_cross(y, grad, dim))?;
    give_summed(input, &mut out, 1, || linalg_cross(grad, x, dim))?;
    Ok(out)
}

/// `cross(self, other, dim=None)`: without `dim`, the first dimension of size 3.
fn cross(input: &FormulaInput) -> Result<Gradients> {
    let sizes = call::sizes(input.grad(0)?)?;
    let dim = match input.argument(2)? {
        IValue::None => sizes.iter().position(|&size| size == 3).unwrap_or(0) as i64,
        other => wrap_dim(other.to_int()?, sizes.len()) as i64,
    };
    cross_along(input, dim)
}

/// `linalg_cross(self, other, *, dim=-1)`.
fn cross_linalg(input: &FormulaInput) -> Result<Gradients> {
    let rank = call::sizes(input.grad(0)?)?.len();
    let dim = wrap_dim(input.int(2)?, rank) as i64;
    cross_along(input, dim)
}

/// `kron(a, b)`: with both padded to one rank, `out[i * B + j] = a[i] * b[j]` along each
/// dimension, so the gradient viewed as (a0, b0, a1, b1, ...) is multiplied by the other
/// factor and summed over that factor's dimensions.
fn kron(input: &FormulaInput) -> Result<Gradients> {
    let a_sizes = input.sizes(0)?;
    let b_sizes = input.sizes(1)?;
    let rank = a_sizes.len().max(b_sizes.len());
    let padded = |sizes: &[usize]| -> Vec<usize> {
        let mut full = vec![1; rank - sizes.len()];
        full.extend_from_slice(sizes);
        full
    };
    let (a_full, b_full) = (padded(&a_sizes), padded(&b_sizes));
    let interleaved: Vec<usize> = a_full
        .iter()
        .zip(&b_full)
        .flat_map(|(&a, &b)| [a, b])
        .collect();
    let grad = reshape(input.grad(0)?, &interleaved)?;
    let a_dims: Vec<i64> = (0..rank).map(|dim| 2 * dim as i64).collect();
    let b_dims: Vec<i64> = (0..rank).map(|dim| 2 * dim as i64 + 1).collect();
    let mut out = input.none();
    if input.needs(0) {
        let b_spread: Vec<usize> = b_full.iter().flat_map(|&b| [1, b]).collect();
        let b = reshape(input.argument(1)?, &b_spread)?;
        let summed = call::sum_dims(&mul(&grad, &b)?, &b_dims, false)?;
        out[0] = Some(reshape(&summed, &a_sizes)?);
    }
    if input.needs(1) {
        let a_spread: Vec<usize> = a_full.iter().flat_map(|&a| [a, 1]).collect();
        let a = reshape(input.argument(0)?, &a_spread)?;
        let summed = call::sum_dims(&mul(&grad, &a)?, &a_dims, false)?;
        out[1] = Some(reshape(&summed, &b_sizes)?);
    }
    Ok(out)
}

formula_table![
    ("aten::kron", "KronBackward0", kron, &[0, 1]),
    ("aten::addcmul", "AddcmulBackward0", addcmul, &[1, 2]),
    ("aten::addcdiv", "AddcdivBackward0", addcdiv, &[1, 2]),
    ("aten::baddbmm", "BaddbmmBackward0", baddbmm, &[1, 2]),
    ("aten::addbmm", "AddbmmBackward0", addbmm, &[1, 2]),
    ("aten::dot", "DotBackward0", dot, &[0, 1]),
    ("aten::vdot", "VdotBackward0", dot, &[0, 1]),
    ("aten::mv", "MvBackward0", mv, &[0, 1]),
    ("aten::outer", "MulBackward0", outer, &[0, 1]),
    ("aten::ger", "MulBackward0", outer, &[0, 1]),
    ("aten::cross", "LinalgCrossBackward0", cross, &[0, 1]),
    (
        "aten::linalg_cross",
        "LinalgCrossBackward0",
        cross_linalg,
        &[0, 1]
    ),
];
