//! The derivative of `scaled_dot_product_attention(query, key, value, attn_mask, dropout_p,
//! is_causal, *, scale, enable_gqa)`, as PyTorch's math path computes it:
//! `P = safe_softmax(scale * Q K^T + mask)`, `out = P V`. Then `dV = P^T g`,
//! `dP = g V^T`, `dS = P (dP - sum(dP P, -1))`, `dQ = scale dS K`, `dK = scale dS^T Q`, and a
//! floating mask gets `dS` (each summed back over broadcast batch dims).

use ferrojit_runtime::{IValue, Result, RuntimeError};
use ferrojit_tensor::DType;

use super::support::{against, index_tensor, logical_not};
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call1, float, int, matmul, mul, scale, sub, sum_dims, sum_to};

/// `value` with `-inf` where `keep` is false.
fn masked_out(value: &IValue, keep: &IValue) -> Result<IValue> {
    call1(
        "aten::masked_fill.Scalar",
        vec![value.clone(), logical_not(keep)?, float(f64::NEG_INFINITY)],
    )
}

/// The lower-triangular `[rows, columns]` mask of a causal attention.
fn causal_mask(rows: usize, columns: usize) -> Result<IValue> {
    let values = (0..rows)
        .flat_map(|row| (0..columns).map(move |column| i64::from(column <= row)))
        .collect();
    against(
        "aten::eq.Scalar",
        &index_tensor(values, &[rows, columns])?,
        1.0,
    )
}

fn transposed(value: &IValue) -> Result<IValue> {
    call::transpose(value, -2, -1)
}

fn scaled_dot_product_attention(input: &FormulaInput) -> Result<Gradients> {
    let query = input.argument(0)?;
    let key = input.argument(1)?;
    let value = input.argument(2)?;
    let mask = input.argument(3)?;
    if input.number(4)? > 0.0 {
        return Err(RuntimeError::Other(
            "the derivative for 'scaled_dot_product_attention' with dropout_p > 0 is not \
             implemented."
                .into(),
        ));
    }
    let is_causal = input.argument(5)?.to_bool()?;
    let query_sizes = input.sizes(0)?;
    let key_sizes = input.sizes(1)?;
    let grouped = matches!(input.arguments.get(7), Some(IValue::Bool(true)));
    let heads = |sizes: &[usize]| sizes.len().checked_sub(3).map(|dim| sizes[dim]);
    if grouped && heads(&query_sizes) != heads(&key_sizes) {
        return Err(RuntimeError::Other(
            "the derivative for 'scaled_dot_product_attention' with enable_gqa and grouped \
             heads is not implemented."
                .into(),
        ));
    }
    let (Some(&depth), Some(&rows)) = (query_sizes.last(), query_sizes.iter().rev().nth(1)) else {
        return Err(RuntimeError::Other(
            "scaled_dot_product_attention: query must have at least 2 dims".into(),
        ));
    };
    let Some(&columns) = key_sizes.iter().rev().nth(1) else {
        return Err(RuntimeError::Other(
            "scaled_dot_product_attention: key must have at least 2 dims".into(),
        ));
    };
    let factor = match input.argument(6)? {
        IValue::None => 1.0 / (depth as f64).sqrt(),
        other => other.to_double()?,
    };
    let mut scores = scale(&matmul(query, &transposed(key)?)?, factor)?;
    if is_causal {
        scores = masked_out(&scores, &causal_mask(rows, columns)?)?;
    }
    let float_mask = match mask {
        IValue::None => false,
        mask if call::tensor(mask)?.dtype() == DType::Bool => {
            scores = masked_out(&scores, mask)?;
            false
        }
        mask => {
            scores = call::add(&scores, mask)?;
            true
        }
    };
    let probabilities = call1("aten::_safe_softmax", vec![scores, int(-1)])?;
    let grad = input.grad(0)?;
    let mut out = input.none();
    if input.needs(2) {
        let gradient = matmul(&transposed(&probabilities)?, grad)?;
        out[2] = Some(sum_to(&gradient, &input.sizes(2)?)?);
    }
    if !(input.needs(0) || input.needs(1) || (float_mask && input.needs(3))) {
        return Ok(out);
    }
    let through_probabilities = matmul(grad, &transposed(value)?)?;
    let inner = sum_dims(&mul(&through_probabilities, &probabilities)?, &[-1], true)?;
    let through_scores = mul(&probabilities, &sub(&through_probabilities, &inner)?)?;
    if input.needs(0) {
        let gradient = scale(&matmul(&through_scores, key)?, factor)?;
        out[0] = Some(sum_to(&gradient, &query_sizes)?);
    }
    if input.needs(1) {
        let gradient = scale(&matmul(&transposed(&through_scores)?, query)?, factor)?;
        out[1] = Some(sum_to(&gradient, &key_sizes)?);
    }
    if float_mask && input.needs(3) {
        out[3] = Some(sum_to(&through_scores, &input.sizes(3)?)?);
    }
    Ok(out)
}

formula_table![(
    "aten::scaled_dot_product_attention",
    "ScaledDotProductAttentionBackward0",
    scaled_dot_product_attention,
    &[0, 1, 2, 3]
),];
