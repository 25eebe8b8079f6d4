//! PyTorch's fused transformer kernels: `aten::_native_multi_head_attention` (the fast path of
//! `nn.MultiheadAttention`) and `aten::_transformer_encoder_layer_fwd` (the fast path of
//! `nn.TransformerEncoderLayer`), composed from the linear, softmax and layer_norm kernels.

use super::invalid;
use super::norm::layer_norm;
use crate::dtype::{DType, Scalar};
use crate::error::{format_shape, Result};
use crate::ops::pointwise::UnaryOp;
use crate::tensor::Tensor;

const ONE: Scalar = Scalar::Int(1);

/// Weights of one attention block: packed input projection `[3E, E]`/`[3E]`, output
/// projection `[E, E]`/`[E]`.
#[derive(Debug, Clone, Copy)]
pub struct AttentionWeights<'a> {
    pub qkv_weight: &'a Tensor,
    pub qkv_bias: &'a Tensor,
    pub proj_weight: &'a Tensor,
    pub proj_bias: &'a Tensor,
}

/// Splits `[B, T, E]` into heads: `[B, H, T, D]`.
fn split_heads(x: &Tensor, heads: usize, head_dim: usize) -> Result<Tensor> {
    let (b, t) = (x.sizes()[0], x.sizes()[1]);
    x.reshape(&[b as i64, t as i64, heads as i64, head_dim as i64])?
        .transpose(1, 2)
}

/// The additive mask for scores `[B, H, L, S]`: bool masks are true where attention is not
/// allowed; float masks are added as they are. `mask_type` 1 is a key-padding mask `[B, S]`.
fn additive_mask(mask: &Tensor, mask_type: Option<i64>, shape: [usize; 4]) -> Result<Tensor> {
    let [b, _, _, s] = shape;
    let mask = if mask_type == Some(1) {
        if mask.sizes() != [b, s] {
            return Err(invalid(format!(
                "key padding mask should have shape [{b}, {s}], got {}",
                format_shape(mask.sizes())
            )));
        }
        mask.reshape(&[b as i64, 1, 1, s as i64])?
    } else {
        mask.clone()
    };
    let additive = if mask.dtype() == DType::Bool {
        let values: Vec<f64> = mask
            .to_i64_vec()
            .into_iter()
            .map(|m| if m != 0 { f64::NEG_INFINITY } else { 0.0 })
            .collect();
        Tensor::from_vec(values, mask.sizes())?
    } else if mask.dtype().is_floating_point() {
        mask.to_dtype(DType::Float64)
    } else {
        return Err(invalid(format!(
            "attention mask must be bool or floating point, got {}",
            mask.dtype().scalar_type_name()
        )));
    };
    additive.broadcast_to(&shape)
}

/// Softmax over the last dim that gives 0 (not NaN) for rows that are entirely masked, as
/// PyTorch's masked softmax does.
fn masked_softmax(scores: &Tensor) -> Result<Tensor> {
    let soft = scores.softmax(-1, None)?;
    let values: Vec<f64> = soft
        .to_f64_vec()
        .into_iter()
        .map(|v| if v.is_nan() { 0.0 } else { v })
        .collect();
    Tensor::from_vec(values, soft.sizes())
}

/// `aten::_native_multi_head_attention`: batch-first `query [B, L, E]`, `key`/`value
/// [B, S, E]`. Returns the output `[B, L, E]` and, when `need_weights`, the attention
/// weights (`[B, L, S]` averaged over heads, or `[B, H, L, S]`); otherwise `None` (PyTorch
/// returns an undefined tensor).
#[allow(clippy::too_many_arguments)]
pub fn native_multi_head_attention(
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    embed_dim: i64,
    num_heads: i64,
    weights: &AttentionWeights,
    mask: Option<&Tensor>,
    need_weights: bool,
    average_attn_weights: bool,
    mask_type: Option<i64>,
) -> Result<(Tensor, Option<Tensor>)> {
    let dtype = query.dtype();
    if !dtype.is_floating_point() {
        return Err(invalid(format!(
            "_native_multi_head_attention: expected a floating-point query, got {}",
            dtype.scalar_type_name()
        )));
    }
    if query.dim() != 3 || key.dim() != 3 || value.dim() != 3 {
        return Err(invalid(format!(
            "expected `query`/`key`/`value` to be 3-D, got {}-D, {}-D and {}-D tensors",
            query.dim(),
            key.dim(),
            value.dim()
        )));
    }
    let e = usize::try_from(embed_dim)
        .ok()
        .filter(|&e| e > 0)
        .ok_or_else(|| invalid("embed_dim must be positive"))?;
    let h = usize::try_from(num_heads)
        .ok()
        .filter(|&h| h > 0 && e % h == 0)
        .ok_or_else(|| invalid("embed_dim must be divisible by num_heads"))?;
    if key.sizes() != query.sizes() || value.sizes() != query.sizes() {
        return Err(invalid("expected `query`/`key`/`value` shapes to match"));
    }
    let (b, l) = (query.sizes()[0], query.sizes()[1]);
    let s = key.sizes()[1];
    if query.sizes()[2] != e {
        return Err(invalid(format!(
            "_native_multi_head_attention: query {} does not fit embed_dim {e}",
            format_shape(query.sizes())
        )));
    }
    if weights.qkv_weight.sizes() != [3 * e, e] || weights.qkv_bias.sizes() != [3 * e] {
        return Err(invalid(format!(
            "_native_multi_head_attention: qkv projection should be [{}, {e}] and [{}], got {} and {}",
            3 * e,
            3 * e,
            format_shape(weights.qkv_weight.sizes()),
            format_shape(weights.qkv_bias.sizes())
        )));
    }
    let d = e / h;
    let projection = |x: &Tensor, part: usize| -> Result<Tensor> {
        let w = weights.qkv_weight.narrow(0, (part * e) as i64, e as i64)?;
        let bias = weights.qkv_bias.narrow(0, (part * e) as i64, e as i64)?;
        x.linear(&w, Some(&bias))
    };
    let q = split_heads(&projection(query, 0)?, h, d)?;
    let k = split_heads(&projection(key, 1)?, h, d)?;
    let v = split_heads(&projection(value, 2)?, h, d)?;
    let scale = Tensor::wrapped_scalar(Scalar::Float(1.0 / (d as f64).sqrt()));
    let q = q.mul(&scale)?;
    let mut scores = q.matmul(&k.transpose(-2, -1)?)?.to_dtype(DType::Float64);
    if let Some(mask) = mask {
        scores = scores.add(&additive_mask(mask, mask_type, [b, h, l, s])?, &ONE)?;
    }
    let attn = masked_softmax(&scores)?.to_dtype(dtype);
    let context = attn
        .matmul(&v)?
        .transpose(1, 2)?
        .reshape(&[b as i64, l as i64, e as i64])?;
    let out = context.linear(weights.proj_weight, Some(weights.proj_bias))?;
    let returned = if !need_weights {
        None
    } else if average_attn_weights {
        Some(
            attn.sum_dim(&[1], false, None)?
                .div(&Tensor::wrapped_scalar(Scalar::Int(h as i64)), None)?,
        )
    } else {
        Some(attn)
    };
    Ok((out, returned))
}

/// Parameters of `_transformer_encoder_layer_fwd` besides the attention weights.
#[derive(Debug, Clone, Copy)]
pub struct EncoderLayerParams<'a> {
    pub use_gelu: bool,
    pub norm_first: bool,
    pub eps: f64,
    pub norm1: (&'a Tensor, &'a Tensor),
    pub norm2: (&'a Tensor, &'a Tensor),
    pub ffn1: (&'a Tensor, &'a Tensor),
    pub ffn2: (&'a Tensor, &'a Tensor),
}

/// `aten::_transformer_encoder_layer_fwd`: self-attention and feed-forward blocks with
/// residuals and layer norms (post-norm unless `norm_first`), on batch-first `src`.
pub fn transformer_encoder_layer(
    src: &Tensor,
    embed_dim: i64,
    num_heads: i64,
    attention: &AttentionWeights,
    params: &EncoderLayerParams,
    mask: Option<&Tensor>,
    mask_type: Option<i64>,
) -> Result<Tensor> {
    let shape = [embed_dim];
    let norm = |x: &Tensor, (w, b): (&Tensor, &Tensor)| -> Result<Tensor> {
        layer_norm(x, &shape, Some(w), Some(b), params.eps)
    };
    let mut x = src.clone();
    if params.norm_first {
        x = norm(&x, params.norm1)?;
    }
    let (attended, _) = native_multi_head_attention(
        &x, &x, &x, embed_dim, num_heads, attention, mask, false, true, mask_type,
    )?;
    x = attended.add(src, &ONE)?;
    if !params.norm_first {
        x = norm(&x, params.norm1)?;
    }
    let residual = x.clone();
    if params.norm_first {
        x = norm(&x, params.norm2)?;
    }
    let hidden = x.linear(params.ffn1.0, Some(params.ffn1.1))?;
    let hidden = if params.use_gelu {
        hidden.unary(UnaryOp::Gelu(false))?
    } else {
        hidden.relu()?
    };
    x = hidden
        .linear(params.ffn2.0, Some(params.ffn2.1))?
        .add(&residual, &ONE)?;
    if !params.norm_first {
        x = norm(&x, params.norm2)?;
    }
    Ok(x)
}

/// `aten::_nested_tensor_from_mask_left_aligned(t, mask)`: whether every row of the bool
/// `mask` (`[B, S]`, true = token present) is a run of trues followed by falses, the layout
/// `nn.TransformerEncoder` needs before it packs its input into a nested tensor.
pub fn mask_left_aligned(t: &Tensor, mask: &Tensor) -> Result<bool> {
    if mask.dtype() != DType::Bool {
        return Err(invalid(format!(
            "Expected mask to be of ScalarType Bool, but got {} instead.",
            mask.dtype().scalar_type_name()
        )));
    }
    if mask.dim() != 2 || t.dim() < 2 || t.sizes()[..2] != mask.sizes()[..] {
        return Err(invalid(format!(
            "Expected mask of shape [batch, seq] matching the first two dims of {}, got {}",
            format_shape(t.sizes()),
            format_shape(mask.sizes())
        )));
    }
    let (rows, len) = (mask.sizes()[0], mask.sizes()[1]);
    let values = mask.to_i64_vec();
    Ok((0..rows).all(|r| {
        let row = &values[r * len..(r + 1) * len];
        let present = row.iter().take_while(|&&v| v != 0).count();
        row[present..].iter().all(|&v| v == 0)
    }))
}

/// Nested (jagged) tensors do not exist in ferrojit; the ops that would make or unpack one
/// fail with this error (reached only on PyTorch's no-grad fast paths with padding masks).
pub fn nested_tensors_unsupported(op: &str) -> crate::error::TensorError {
    invalid(format!(
        "{op}: nested tensors are not supported by ferrojit"
    ))
}
