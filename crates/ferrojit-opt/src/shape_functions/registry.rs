//! Which shape function PyTorch 2.15 registers for which operator schema
//! (`symbolic_shape_registry.cpp` and `torch/jit/_shape_functions.py`).

use super::ShapeFunction;

/// The shape function PyTorch 2.15 registers for the operator with this full schema name
/// (`aten::add.Tensor`), if any.
pub fn shape_function_for(full_name: &str) -> Option<ShapeFunction> {
    use ShapeFunction::*;
    let function = match full_name {
        "aten::__and__.Tensor"
        | "aten::__or__.Tensor"
        | "aten::__xor__.Tensor"
        | "aten::__lshift__.Tensor"
        | "aten::__rshift__.Tensor"
        | "aten::add.Tensor"
        | "aten::sub.Tensor"
        | "aten::mul.Tensor"
        | "aten::div.Tensor"
        | "aten::eq.Tensor"
        | "aten::ne.Tensor"
        | "aten::ge.Tensor"
        | "aten::gt.Tensor"
        | "aten::le.Tensor"
        | "aten::lt.Tensor"
        | "aten::atan2"
        | "aten::fmod.Tensor"
        | "aten::remainder.Tensor"
        | "aten::min.other"
        | "aten::max.other"
        | "aten::lerp.Scalar"
        | "aten::where.ScalarOther" => Broadcast,
        "aten::lerp.Tensor" | "aten::addcmul" | "aten::where.self" => BroadcastThree,
        "aten::where.ScalarSelf" => BroadcastOneThree,
        "aten::add_.Tensor"
        | "aten::sub_.Tensor"
        | "aten::mul_.Tensor"
        | "aten::div_.Tensor"
        | "aten::eq_.Tensor"
        | "aten::ne_.Tensor"
        | "aten::ge_.Tensor"
        | "aten::gt_.Tensor"
        | "aten::le_.Tensor"
        | "aten::lt_.Tensor"
        | "aten::atan2_"
        | "aten::fmod_.Tensor"
        | "aten::remainder_.Tensor"
        | "aten::lerp_.Scalar" => BroadcastInplace,
        "aten::__and__.Scalar"
        | "aten::__or__.Scalar"
        | "aten::__xor__.Scalar"
        | "aten::__lshift__.Scalar"
        | "aten::__rshift__.Scalar"
        | "aten::_autocast_to_full_precision"
        | "aten::_autocast_to_reduced_precision"
        | "aten::_cast_Float"
        | "aten::_no_grad_embedding_renorm_"
        | "aten::embedding_renorm_"
        | "aten::add.Scalar"
        | "aten::add_.Scalar"
        | "aten::sub.Scalar"
        | "aten::sub_.Scalar"
        | "aten::mul.Scalar"
        | "aten::mul_.Scalar"
        | "aten::div.Scalar"
        | "aten::div_.Scalar"
        | "aten::eq.Scalar"
        | "aten::eq_.Scalar"
        | "aten::ne.Scalar"
        | "aten::ne_.Scalar"
        | "aten::ge.Scalar"
        | "aten::ge_.Scalar"
        | "aten::gt.Scalar"
        | "aten::gt_.Scalar"
        | "aten::le.Scalar"
        | "aten::le_.Scalar"
        | "aten::lt.Scalar"
        | "aten::lt_.Scalar"
        | "aten::fmod.Scalar"
        | "aten::fmod_.Scalar"
        | "aten::pow.Tensor_Scalar"
        | "aten::pow_.Scalar"
        | "aten::rsub.Scalar"
        | "aten::where.Scalar"
        | "aten::clamp"
        | "aten::clamp_"
        | "aten::contiguous"
        | "aten::dequantize.self"
        | "aten::dropout"
        | "aten::elu"
        | "aten::elu_"
        | "aten::gelu"
        | "aten::gelu_"
        | "aten::hardshrink"
        | "aten::hardsigmoid"
        | "aten::hardsigmoid_"
        | "aten::hardswish"
        | "aten::hardswish_"
        | "aten::hardtanh"
        | "aten::hardtanh_"
        | "aten::isnan"
        | "aten::layer_norm"
        | "aten::leaky_relu"
        | "aten::leaky_relu_"
        | "aten::mish"
        | "aten::mish_"
        | "aten::quantize_per_tensor"
        | "aten::quantize_per_tensor.tensor_qparams"
        | "aten::relu"
        | "aten::relu_"
        | "aten::relu6"
        | "aten::relu6_"
        | "aten::silu"
        | "aten::silu_"
        | "aten::softmax.int"
        | "aten::softplus"
        | "aten::threshold"
        | "aten::threshold_"
        | "aten::to.device"
        | "aten::to.dtype"
        | "aten::to.dtype_layout"
        | "aten::to.prim_Device"
        | "aten::to.prim_dtype"
        | "aten::type_as"
        | "aten::zeros"
        | "aten::abs"
        | "aten::abs_"
        | "aten::acos"
        | "aten::acos_"
        | "aten::asin"
        | "aten::asin_"
        | "aten::atan"
        | "aten::atan_"
        | "aten::ceil"
        | "aten::ceil_"
        | "aten::cos"
        | "aten::cos_"
        | "aten::cosh"
        | "aten::cosh_"
        | "aten::erf"
        | "aten::erf_"
        | "aten::erfc"
        | "aten::erfc_"
        | "aten::exp"
        | "aten::exp_"
        | "aten::expm1"
        | "aten::expm1_"
        | "aten::floor"
        | "aten::floor_"
        | "aten::frac"
        | "aten::frac_"
        | "aten::lgamma"
        | "aten::lgamma_"
        | "aten::log"
        | "aten::log_"
        | "aten::log10"
        | "aten::log10_"
        | "aten::log1p"
        | "aten::log1p_"
        | "aten::log2"
        | "aten::log2_"
        | "aten::neg"
        | "aten::neg_"
        | "aten::reciprocal"
        | "aten::reciprocal_"
        | "aten::round"
        | "aten::round_"
        | "aten::rsqrt"
        | "aten::rsqrt_"
        | "aten::sigmoid"
        | "aten::sigmoid_"
        | "aten::sin"
        | "aten::sin_"
        | "aten::sinh"
        | "aten::sinh_"
        | "aten::sqrt"
        | "aten::sqrt_"
        | "aten::tan"
        | "aten::tan_"
        | "aten::tanh"
        | "aten::tanh_"
        | "aten::trunc"
        | "aten::trunc_" => Unary,
        "aten::mean" | "aten::sum" | "prim::NumToTensor.Scalar" | "prim::NumToTensor.bool" => {
            ZeroDimTensor
        }
        "aten::adaptive_avg_pool2d" => AdaptiveAvgPool2d,
        "aten::arange" => ArangeEnd,
        "aten::arange.start" => ArangeStart,
        "aten::arange.start_step" => ArangeStartStep,
        "aten::squeeze" => SqueezeNoDim,
        "aten::squeeze.dim" => Squeeze,
        "aten::squeeze.dims" => SqueezeDims,
        "aten::unsqueeze" => Unsqueeze,
        "aten::slice.Tensor" => Slice,
        "aten::select.int" => Select,
        "aten::index_select" => IndexSelect,
        "aten::embedding" => Embedding,
        "aten::mm" => Mm,
        "aten::dot" => Dot,
        "aten::mv" => Mv,
        "aten::matmul" => Matmul,
        "aten::linear" => Linear,
        "aten::max_pool2d" => MaxPool2d,
        "aten::max_pool2d_with_indices" => MaxPool2dWithIndices,
        "aten::t" => T,
        "aten::transpose.int" => Transpose,
        "aten::conv1d" => Conv1d,
        "aten::conv2d" => Conv2d,
        "aten::conv3d" => Conv3d,
        "aten::convolution_backward" => ConvBackwards,
        "aten::convolution" => ConvForwards,
        "aten::_convolution" => ConvForwardsUnderscore,
        "aten::conv_transpose2d.input" => ConvTranspose2dInput,
        "aten::batch_norm" => BatchNorm,
        "aten::flatten.using_ints" => Flatten,
        "aten::cat" => Cat,
        "aten::stack" => Stack,
        "aten::permute" => Permute,
        "aten::movedim.intlist" => Movedim,
        "aten::view" => View,
        "aten::expand_as" => ExpandAs,
        "aten::expand" => Expand,
        "aten::mean.dim" | "aten::sum.dim_IntList" => SumMeanDim,
        "aten::max.dim" => MaxDim,
        "aten::addmm" => Addmm,
        "aten::upsample_nearest2d.vec" => UpsampleNearest2d,
        "aten::argmax" => Argmax,
        "aten::bmm" => Bmm,
        "aten::_shape_as_tensor" => ShapeAsTensor,
        "aten::topk" => Topk,
        "aten::nll_loss_forward" => NllLossForward,
        "aten::native_layer_norm" => NativeLayerNorm,
        "aten::native_batch_norm"
        | "aten::_native_batch_norm_legit"
        | "aten::_native_batch_norm_legit.no_stats" => NativeBatchNorm,
        "aten::_batch_norm_with_update" => BatchNormWithUpdate,
        "aten::cross_entropy_loss" => CrossEntropyLoss,
        _ => return None,
    };
    Some(function)
}
