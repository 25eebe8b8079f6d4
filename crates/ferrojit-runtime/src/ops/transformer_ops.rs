//! The fused transformer operators behind `nn.MultiheadAttention` and
//! `nn.TransformerEncoderLayer`'s fast paths, and the two tensor-state queries those modules'
//! TorchScript code asks before taking them (`prim::is_nested`, `aten::is_autocast_enabled`).

use ferrojit_tensor::ops::nn::transformer::{
    mask_left_aligned, native_multi_head_attention, nested_tensors_unsupported,
    transformer_encoder_layer, AttentionWeights, EncoderLayerParams,
};

use super::{optional_tensor, pop_array, pop_vec, push, KernelTableEntry};
use crate::error::Result;
use crate::ivalue::IValue;
use crate::registry::Stack;

/// ferrojit has no nested (jagged) tensors: every tensor is a plain strided one.
fn is_nested(stack: &mut Stack) -> Result<()> {
    let [tensor] = pop_array::<1>(stack)?;
    tensor.to_tensor()?;
    push(stack, false)
}

/// ferrojit never runs under autocast.
fn is_autocast_enabled(stack: &mut Stack) -> Result<()> {
    push(stack, false)
}

fn native_mha(stack: &mut Stack) -> Result<()> {
    let [q, k, v, embed_dim, num_heads, qkv_w, qkv_b, proj_w, proj_b, mask, need, average, mask_type] =
        pop_array::<13>(stack)?;
    let weights = AttentionWeights {
        qkv_weight: &*qkv_w.to_tensor()?,
        qkv_bias: &*qkv_b.to_tensor()?,
        proj_weight: &*proj_w.to_tensor()?,
        proj_bias: &*proj_b.to_tensor()?,
    };
    let (out, attn) = native_multi_head_attention(
        &*q.to_tensor()?,
        &*k.to_tensor()?,
        &*v.to_tensor()?,
        embed_dim.to_int()?,
        num_heads.to_int()?,
        &weights,
        optional_tensor(&mask)?.as_deref(),
        need.to_bool()?,
        average.to_bool()?,
        mask_type.to_optional_int()?,
    )?;
    push(stack, out)?;
    match attn {
        Some(weights) => push(stack, weights),
        None => push(stack, IValue::None),
    }
}

fn encoder_layer(stack: &mut Stack) -> Result<()> {
    let args = pop_vec(stack, 20)?;
    let tensor = |i: usize| args[i].to_tensor();
    let weights = AttentionWeights {
        qkv_weight: &*tensor(3)?,
        qkv_bias: &*tensor(4)?,
        proj_weight: &*tensor(5)?,
        proj_bias: &*tensor(6)?,
    };
    let params = EncoderLayerParams {
        use_gelu: args[7].to_bool()?,
        norm_first: args[8].to_bool()?,
        eps: args[9].to_double()?,
        norm1: (&*tensor(10)?, &*tensor(11)?),
        norm2: (&*tensor(12)?, &*tensor(13)?),
        ffn1: (&*tensor(14)?, &*tensor(15)?),
        ffn2: (&*tensor(16)?, &*tensor(17)?),
    };
    let out = transformer_encoder_layer(
        &*tensor(0)?,
        args[1].to_int()?,
        args[2].to_int()?,
        &weights,
        &params,
        optional_tensor(&args[18])?.as_deref(),
        args[19].to_optional_int()?,
    )?;
    push(stack, out)
}

fn nested_from_mask_left_aligned(stack: &mut Stack) -> Result<()> {
    let [t, mask] = pop_array::<2>(stack)?;
    push(
        stack,
        mask_left_aligned(&*t.to_tensor()?, &*mask.to_tensor()?)?,
    )
}

fn nested_from_mask(stack: &mut Stack) -> Result<()> {
    let [_t, _mask, _check] = pop_array::<3>(stack)?;
    Err(nested_tensors_unsupported("aten::_nested_tensor_from_mask").into())
}

fn to_padded_tensor(stack: &mut Stack) -> Result<()> {
    let [_t, _padding, _size] = pop_array::<3>(stack)?;
    Err(nested_tensors_unsupported("aten::to_padded_tensor").into())
}

/// The transformer operators' table.
pub const TABLE: &[KernelTableEntry] = &[
    ("prim::is_nested(Tensor a) -> bool", is_nested),
    ("aten::is_autocast_enabled() -> bool", is_autocast_enabled),
    ("aten::_nested_tensor_from_mask_left_aligned(Tensor t, Tensor mask) -> bool", nested_from_mask_left_aligned),
    ("aten::_nested_tensor_from_mask(Tensor t, Tensor mask, bool mask_check=True) -> Tensor", nested_from_mask),
    ("aten::to_padded_tensor(Tensor self, float padding, SymInt[]? output_size=None) -> Tensor", to_padded_tensor),
    ("aten::_native_multi_head_attention(Tensor query, Tensor key, Tensor value, int embed_dim, int num_head, Tensor qkv_weight, Tensor qkv_bias, Tensor proj_weight, Tensor proj_bias, Tensor? mask=None, bool need_weights=True, bool average_attn_weights=True, int? mask_type=None) -> (Tensor, Tensor)", native_mha),
    ("aten::_transformer_encoder_layer_fwd(Tensor src, int embed_dim, int num_heads, Tensor qkv_weight, Tensor qkv_bias, Tensor proj_weight, Tensor proj_bias, bool use_gelu, bool norm_first, float eps, Tensor norm_weight_1, Tensor norm_bias_1, Tensor norm_weight_2, Tensor norm_bias_2, Tensor ffn_weight_1, Tensor ffn_bias_1, Tensor ffn_weight_2, Tensor ffn_bias_2, Tensor? mask=None, int? mask_type=None) -> Tensor", encoder_layer),
];
