//! `_scaled_dot_product_attention_math`: attention's reference path, which returns the
//! attention weights with the output (`softmax(q k^T * scale + mask) v`), the weights of a
//! query row that sees no key being 0 (`_safe_softmax`), and a given dropout mask applied
//! as ATen's tests use it.

use std::sync::Arc;

use ferrojit_tensor::{DType, Scalar, Tensor};

use super::binding::typed;
use super::in_place_extra_ops::safe_softmax;
use crate::error::{Result, RuntimeError};
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

fn other(message: impl Into<String>) -> RuntimeError {
    RuntimeError::Other(message.into())
}

/// A boolean mask as the additive bias it stands for: 0 where attending, -inf elsewhere.
fn additive_mask(mask: &Tensor) -> Result<Tensor> {
    let zero = Tensor::scalar_tensor(Scalar::Float(0.0), DType::Float64);
    let minus_infinity = Tensor::scalar_tensor(Scalar::Float(f64::NEG_INFINITY), DType::Float64);
    Ok(Tensor::where_(mask, &zero, &minus_infinity)?)
}

#[allow(clippy::too_many_arguments)]
fn attention_math(
    query: Input,
    key: Input,
    value: Input,
    attn_mask: Option<Input>,
    dropout_p: f64,
    is_causal: bool,
    dropout_mask: Option<Input>,
    scale: Option<f64>,
    enable_gqa: bool,
) -> Result<(Tensor, Tensor)> {
    let dtype = query.dtype();
    for tensor in [&key, &value] {
        if tensor.dtype() != dtype {
            return Err(other(format!(
                "expected scalar type {} but found {}",
                dtype.scalar_type_name(),
                tensor.dtype().scalar_type_name()
            )));
        }
    }
    if !dtype.is_floating_point() {
        return Err(other(format!(
            "_scaled_dot_product_attention_math: expected floating query, key and value, but got {}",
            dtype.scalar_type_name()
        )));
    }
    if query.dim() < 2 || key.dim() < 2 || value.dim() < 2 {
        return Err(other(
            "_scaled_dot_product_attention_math: expected query, key and value to be at least 2-D",
        ));
    }
    if is_causal && attn_mask.is_some() {
        return Err(other(
            "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True",
        ));
    }
    let embedding = query.sizes()[query.dim() - 1];
    let (queries, keys) = (query.sizes()[query.dim() - 2], key.sizes()[key.dim() - 2]);
    let scale = scale.unwrap_or(1.0 / (embedding as f64).sqrt());
    let (mut key, mut value) = (Tensor::clone(&key), Tensor::clone(&value));
    // Grouped-query attention: each key/value head serves hq / hk query heads.
    if enable_gqa && query.dim() >= 3 && key.dim() >= 3 {
        let (query_heads, key_heads) = (query.sizes()[query.dim() - 3], key.sizes()[key.dim() - 3]);
        if key_heads > 0 && query_heads != key_heads && query_heads % key_heads == 0 {
            let repeats =
                Tensor::scalar_tensor(Scalar::Int((query_heads / key_heads) as i64), DType::Int64);
            key = key.repeat_interleave(&repeats, Some(-3))?;
            value = value.repeat_interleave(&repeats, Some(-3))?;
        }
    }
    // Computed in float64 and rounded once at the end.
    let query = query.to_dtype(DType::Float64);
    let key = key.to_dtype(DType::Float64);
    let value = value.to_dtype(DType::Float64);
    let mut scores = query
        .matmul(&key.transpose(-2, -1)?)?
        .mul(&Tensor::wrapped_scalar(Scalar::Float(scale)))?;
    if is_causal {
        let causal: Vec<bool> = (0..queries)
            .flat_map(|i| (0..keys).map(move |j| j <= i))
            .collect();
        let causal = Tensor::from_vec(causal, &[queries, keys])?;
        scores = scores.add(&additive_mask(&causal)?, &Scalar::Int(1))?;
    }
    // This operator adds the mask as given: a boolean mask adds 1 where true (the dispatcher
    // converts boolean masks to -inf biases before it calls the math path; only the causal
    // mask is converted here).
    if let Some(mask) = attn_mask {
        scores = scores.add(&mask.to_dtype(DType::Float64), &Scalar::Int(1))?;
    }
    let mut weights = safe_softmax(Arc::new(scores), -1, None)?;
    let mut value = value;
    if dropout_p > 0.0 {
        match dropout_mask {
            // The kept weights stay as they are; the values carry the 1 / (1 - p) scaling.
            Some(mask) => {
                let zeros = Tensor::zeros(&[], DType::Float64)?;
                weights = Tensor::where_(&mask.to_dtype(DType::Bool), &weights, &zeros)?;
                value = value.mul(&Tensor::wrapped_scalar(Scalar::Float(
                    1.0 / (1.0 - dropout_p),
                )))?;
            }
            None => weights = weights.dropout(dropout_p, true)?,
        }
    }
    let output = weights.matmul(&value)?;
    Ok((output.to_dtype(dtype), weights.to_dtype(dtype)))
}

/// Every operator of this file, in declaration order.
pub fn declarations() -> Vec<OperatorDeclaration> {
    #[rustfmt::skip]
    let declarations = vec![
        typed("aten::_scaled_dot_product_attention_math(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0., bool is_causal=False, Tensor? dropout_mask=None, *, float? scale=None, bool enable_gqa=False) -> (Tensor, Tensor)", attention_math),
    ];
    declarations
}
