//! The fused transformer operators behind `nn.MultiheadAttention` and
//! `nn.TransformerEncoderLayer`'s fast paths, and the two tensor-state queries those modules'
//! TorchScript code asks before taking them (`prim::is_nested`, `aten::is_autocast_enabled`),
//! as typed kernels. The two fused operators take more arguments (13 and 20) than a typed
//! kernel does, so they read their argument slice ([`SliceKernel`]) and convert each argument
//! with its parameter type's [`FromArgument`], as a typed kernel would.

use ferrojit_tensor::ops::nn::transformer::{
    mask_left_aligned, native_multi_head_attention, nested_tensors_unsupported,
    transformer_encoder_layer, AttentionWeights, EncoderLayerParams,
};

use std::sync::Arc;

use ferrojit_tensor::Tensor;

use super::binding::{typed, FromArgument, SliceKernel};
use super::core_ops::FloatArgument;
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// One argument of a slice-reading kernel, converted per its parameter type.
fn parameter<T: FromArgument>(value: &IValue) -> Result<T> {
    T::from_argument(value)
}

fn wrong_argument_count() -> RuntimeError {
    RuntimeError::InvalidGraph("operand stack underflow in an operator".to_string())
}

/// ferrojit has no nested (jagged) tensors: every tensor is a plain strided one.
fn is_nested(_tensor: Input) -> Result<bool> {
    Ok(false)
}

/// ferrojit never runs under autocast.
fn is_autocast_enabled() -> Result<bool> {
    Ok(false)
}

/// `_native_multi_head_attention`'s thirteen arguments, more than a typed kernel takes, read
/// from the argument slice. Returns the output and the attention weights (None unless asked).
fn native_mha(arguments: &[IValue]) -> Result<Vec<IValue>> {
    let [q, k, v, embed_dim, num_heads, qkv_w, qkv_b, proj_w, proj_b, mask, need, average, mask_type] =
        arguments
    else {
        return Err(wrong_argument_count());
    };
    let (qkv_weight, qkv_bias, proj_weight, proj_bias) = (
        parameter::<Input>(qkv_w)?,
        parameter::<Input>(qkv_b)?,
        parameter::<Input>(proj_w)?,
        parameter::<Input>(proj_b)?,
    );
    let weights = AttentionWeights {
        qkv_weight: &qkv_weight,
        qkv_bias: &qkv_bias,
        proj_weight: &proj_weight,
        proj_bias: &proj_bias,
    };
    let (out, attn) = native_multi_head_attention(
        &*parameter::<Input>(q)?,
        &*parameter::<Input>(k)?,
        &*parameter::<Input>(v)?,
        parameter(embed_dim)?,
        parameter(num_heads)?,
        &weights,
        parameter::<Option<Input>>(mask)?.as_deref(),
        parameter(need)?,
        parameter(average)?,
        parameter(mask_type)?,
    )?;
    Ok(vec![
        IValue::from(out),
        attn.map_or(IValue::None, IValue::from),
    ])
}

/// `_transformer_encoder_layer_fwd`'s twenty arguments, read from the argument slice.
fn encoder_layer(arguments: &[IValue]) -> Result<Tensor> {
    let [src, embed_dim, num_heads, qkv_w, qkv_b, proj_w, proj_b, use_gelu, norm_first, eps, norm_w1, norm_b1, norm_w2, norm_b2, ffn_w1, ffn_b1, ffn_w2, ffn_b2, mask, mask_type] =
        arguments
    else {
        return Err(wrong_argument_count());
    };
    let tensor = parameter::<Input>;
    let (qkv_weight, qkv_bias, proj_weight, proj_bias) = (
        tensor(qkv_w)?,
        tensor(qkv_b)?,
        tensor(proj_w)?,
        tensor(proj_b)?,
    );
    let weights = AttentionWeights {
        qkv_weight: &qkv_weight,
        qkv_bias: &qkv_bias,
        proj_weight: &proj_weight,
        proj_bias: &proj_bias,
    };
    let (norm_w1, norm_b1, norm_w2, norm_b2) = (
        tensor(norm_w1)?,
        tensor(norm_b1)?,
        tensor(norm_w2)?,
        tensor(norm_b2)?,
    );
    let (ffn_w1, ffn_b1, ffn_w2, ffn_b2) = (
        tensor(ffn_w1)?,
        tensor(ffn_b1)?,
        tensor(ffn_w2)?,
        tensor(ffn_b2)?,
    );
    let params = EncoderLayerParams {
        use_gelu: parameter(use_gelu)?,
        norm_first: parameter(norm_first)?,
        eps: parameter::<FloatArgument>(eps)?.0,
        norm1: (&norm_w1, &norm_b1),
        norm2: (&norm_w2, &norm_b2),
        ffn1: (&ffn_w1, &ffn_b1),
        ffn2: (&ffn_w2, &ffn_b2),
    };
    Ok(transformer_encoder_layer(
        &*tensor(src)?,
        parameter(embed_dim)?,
        parameter(num_heads)?,
        &weights,
        &params,
        parameter::<Option<Input>>(mask)?.as_deref(),
        parameter(mask_type)?,
    )?)
}

fn nested_from_mask_left_aligned(tensor: Input, mask: Input) -> Result<bool> {
    Ok(mask_left_aligned(&tensor, &mask)?)
}

/// The arguments are not read: the operator is refused whatever they are.
fn nested_from_mask(_tensor: IValue, _mask: IValue, _mask_check: IValue) -> Result<Tensor> {
    Err(nested_tensors_unsupported("aten::_nested_tensor_from_mask").into())
}

/// The arguments are not read: the operator is refused whatever they are.
fn to_padded_tensor(_tensor: IValue, _padding: IValue, _output_size: IValue) -> Result<Tensor> {
    Err(nested_tensors_unsupported("aten::to_padded_tensor").into())
}

/// The transformer operators.
#[rustfmt::skip]
pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        typed("prim::is_nested(Tensor a) -> bool", is_nested),
        typed("aten::is_autocast_enabled() -> bool", is_autocast_enabled),
        typed("aten::_nested_tensor_from_mask_left_aligned(Tensor t, Tensor mask) -> bool", nested_from_mask_left_aligned),
        typed("aten::_nested_tensor_from_mask(Tensor t, Tensor mask, bool mask_check=True) -> Tensor", nested_from_mask),
        typed("aten::to_padded_tensor(Tensor self, float padding, SymInt[]? output_size=None) -> Tensor", to_padded_tensor),
        typed("aten::_native_multi_head_attention(Tensor query, Tensor key, Tensor value, int embed_dim, int num_head, Tensor qkv_weight, Tensor qkv_bias, Tensor proj_weight, Tensor proj_bias, Tensor? mask=None, bool need_weights=True, bool average_attn_weights=True, int? mask_type=None) -> (Tensor, Tensor)", SliceKernel { arity: 13, body: native_mha }),
        typed("aten::_transformer_encoder_layer_fwd(Tensor src, int embed_dim, int num_heads, Tensor qkv_weight, Tensor qkv_bias, Tensor proj_weight, Tensor proj_bias, bool use_gelu, bool norm_first, float eps, Tensor norm_weight_1, Tensor norm_bias_1, Tensor norm_weight_2, Tensor norm_bias_2, Tensor ffn_weight_1, Tensor ffn_bias_1, Tensor ffn_weight_2, Tensor ffn_bias_2, Tensor? mask=None, int? mask_type=None) -> Tensor", SliceKernel { arity: 20, body: encoder_layer }),
    ]
}
