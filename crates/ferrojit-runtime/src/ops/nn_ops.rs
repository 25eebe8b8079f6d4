//! Neural-network operators (`torch.nn.functional` as TorchScript calls them: conv, pooling,
//! normalization, losses, embedding, padding, interpolation, attention) and the matrix
//! products beyond `mm`/`bmm`/`matmul`, registered by their native_functions.yaml schemas as
//! typed kernels. Arguments the kernels do not read (backend flags such as `cudnn_enabled`,
//! `_convolution`'s `benchmark`) bind as [`Unused`], so any value passes, as before.

use std::sync::Arc;

use ferrojit_tensor::ops::nn::conv::{convolution, ConvPadding};
use ferrojit_tensor::ops::nn::loss::{self, Reduction};
use ferrojit_tensor::ops::nn::misc::{self, PadMode};
use ferrojit_tensor::ops::nn::resample::{
    output_size_for, upsample, upsample_antialias, AntialiasFilter, InterpolateMode,
};
use ferrojit_tensor::ops::nn::{norm, pool};
use ferrojit_tensor::{DType, Scalar, Tensor, TensorError};

use super::binding::{out_from_functional, typed, typed_in_place, FromArgument, TypedKernel};
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

// ----- argument conversions this file adds to `binding` (to be hoisted there) --------------

/// An argument the kernel does not read (a backend flag, `layout`, `device`, `pin_memory`):
/// any value binds, and nothing is converted.
pub(crate) struct Unused;

impl FromArgument for Unused {
    fn from_argument(_value: &IValue) -> Result<Self> {
        Ok(Unused)
    }
}

/// A loss's `int reduction` (0 none, 1 mean, 2 sum).
impl FromArgument for Reduction {
    fn from_argument(value: &IValue) -> Result<Self> {
        Ok(Reduction::from_i64(value.to_int()?)?)
    }
}

/// A kernel of more parameters than `binding` binds (eight): `convolution`'s nine,
/// `_convolution`'s thirteen. Declared as `typed(schema, Wide(kernel))`.
#[derive(Clone)]
pub(crate) struct Wide<Kernel>(pub Kernel);

fn wide_argument(arguments: &[IValue], index: usize) -> Result<&IValue> {
    arguments.get(index).ok_or_else(|| {
        RuntimeError::InvalidGraph("operand stack underflow in an operator".to_string())
    })
}

macro_rules! wide_kernel_for_arity {
    ($arity:expr; $($parameter:ident => $index:tt),*) => {
        impl<Function, Output, $($parameter),*> TypedKernel<($($parameter,)*)> for Wide<Function>
        where
            Function: Fn($($parameter),*) -> Result<Output> + Send + Sync + 'static,
            $($parameter: FromArgument,)*
        {
            type Output = Output;
            fn arity(&self) -> usize {
                $arity
            }
            fn call_with(&self, arguments: &[IValue]) -> Result<Output> {
                (self.0)($($parameter::from_argument(wide_argument(arguments, $index)?)?),*)
            }
        }
    };
}

wide_kernel_for_arity!(9; A => 0, B => 1, C => 2, D => 3, E => 4, F => 5, G => 6, H => 7, I => 8);
wide_kernel_for_arity!(10; A => 0, B => 1, C => 2, D => 3, E => 4, F => 5, G => 6, H => 7, I => 8, J => 9);
wide_kernel_for_arity!(11; A => 0, B => 1, C => 2, D => 3, E => 4, F => 5, G => 6, H => 7, I => 8, J => 9, K => 10);
wide_kernel_for_arity!(12; A => 0, B => 1, C => 2, D => 3, E => 4, F => 5, G => 6, H => 7, I => 8, J => 9, K => 10, L => 11);
wide_kernel_for_arity!(13; A => 0, B => 1, C => 2, D => 3, E => 4, F => 5, G => 6, H => 7, I => 8, J => 9, K => 10, L => 11, M => 12);

// ----- products ---------------------------------------------------------------------------

fn addbmm(
    input: Input,
    batch1: Input,
    batch2: Input,
    beta: Scalar,
    alpha: Scalar,
) -> Result<Tensor> {
    Ok(input.addbmm(&batch1, &batch2, &beta, &alpha)?)
}

fn baddbmm(
    input: Input,
    batch1: Input,
    batch2: Input,
    beta: Scalar,
    alpha: Scalar,
) -> Result<Tensor> {
    Ok(input.baddbmm(&batch1, &batch2, &beta, &alpha)?)
}

fn outer(input: Input, vec2: Input) -> Result<Tensor> {
    Ok(input.outer(&vec2)?)
}

/// `einsum`; the contraction `path` is a performance hint and is not read.
fn einsum(equation: String, tensors: Vec<Tensor>, _path: Unused) -> Result<Tensor> {
    Ok(ferrojit_tensor::ops::products::einsum(&equation, &tensors)?)
}

fn tensordot(
    input: Input,
    other: Input,
    dims_self: Vec<i64>,
    dims_other: Vec<i64>,
) -> Result<Tensor> {
    Ok(input.tensordot(&other, &dims_self, &dims_other)?)
}

// ----- convolution ------------------------------------------------------------------------

/// `conv1d`/`conv2d`/`conv3d` with explicit padding.
fn conv_explicit(
    input: Input,
    weight: Input,
    bias: Option<Input>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    groups: i64,
) -> Result<Tensor> {
    Ok(input.conv(
        &weight,
        bias.as_deref(),
        &stride,
        &ConvPadding::Explicit(padding),
        &dilation,
        groups,
    )?)
}

/// `conv*d.padding`: padding `"same"` or `"valid"`.
pub(super) fn conv_padding_str(
    input: Input,
    weight: Input,
    bias: Option<Input>,
    stride: Vec<i64>,
    padding: String,
    dilation: Vec<i64>,
    groups: i64,
) -> Result<Tensor> {
    let padding = match padding.as_str() {
        "same" => ConvPadding::Same,
        "valid" => ConvPadding::Valid,
        other => {
            return Err(
                TensorError::InvalidArgument(format!("Invalid padding string: '{other}'")).into(),
            )
        }
    };
    Ok(input.conv(
        &weight,
        bias.as_deref(),
        &stride,
        &padding,
        &dilation,
        groups,
    )?)
}

#[allow(clippy::too_many_arguments)]
fn conv_transpose(
    input: Input,
    weight: Input,
    bias: Option<Input>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    output_padding: Vec<i64>,
    groups: i64,
    dilation: Vec<i64>,
) -> Result<Tensor> {
    Ok(input.conv_transpose(
        &weight,
        bias.as_deref(),
        &stride,
        &padding,
        &output_padding,
        groups,
        &dilation,
    )?)
}

/// `aten::convolution`, forward or transposed.
#[allow(clippy::too_many_arguments)]
fn convolution_op(
    input: Input,
    weight: Input,
    bias: Option<Input>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    transposed: bool,
    output_padding: Vec<i64>,
    groups: i64,
) -> Result<Tensor> {
    Ok(convolution(
        &input,
        &weight,
        bias.as_deref(),
        &stride,
        &ConvPadding::Explicit(padding),
        &dilation,
        transposed,
        &output_padding,
        groups,
    )?)
}

/// `_convolution`: the trailing backend flags of `_convolution` do not change the result.
#[allow(clippy::too_many_arguments)]
fn underscore_convolution(
    input: Input,
    weight: Input,
    bias: Option<Input>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    transposed: bool,
    output_padding: Vec<i64>,
    groups: i64,
    _benchmark: Unused,
    _deterministic: Unused,
    _cudnn_enabled: Unused,
    _allow_tf32: Unused,
) -> Result<Tensor> {
    convolution_op(
        input,
        weight,
        bias,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
    )
}

/// `_convolution.deprecated`: as `_convolution`, without `allow_tf32`.
#[allow(clippy::too_many_arguments)]
fn underscore_convolution_deprecated(
    input: Input,
    weight: Input,
    bias: Option<Input>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    transposed: bool,
    output_padding: Vec<i64>,
    groups: i64,
    _benchmark: Unused,
    _deterministic: Unused,
    _cudnn_enabled: Unused,
) -> Result<Tensor> {
    convolution_op(
        input,
        weight,
        bias,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
    )
}

// ----- pooling ----------------------------------------------------------------------------

/// `max_pool{SPATIAL}d`: the values only.
fn max_pool<const SPATIAL: usize>(
    input: Input,
    kernel: Vec<i64>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    ceil_mode: bool,
) -> Result<Tensor> {
    Ok(pool::max_pool_values(
        &input, SPATIAL, &kernel, &stride, &padding, &dilation, ceil_mode,
    )?)
}

/// `max_pool{SPATIAL}d_with_indices`: the values and their flat indices.
fn max_pool_with_indices<const SPATIAL: usize>(
    input: Input,
    kernel: Vec<i64>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    ceil_mode: bool,
) -> Result<(Tensor, Tensor)> {
    Ok(pool::max_pool(
        &input, SPATIAL, &kernel, &stride, &padding, &dilation, ceil_mode,
    )?)
}

/// `avg_pool1d`, which has no `divisor_override`.
fn avg_pool1d(
    input: Input,
    kernel: Vec<i64>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    ceil_mode: bool,
    count_include_pad: bool,
) -> Result<Tensor> {
    Ok(pool::avg_pool(
        &input,
        1,
        &kernel,
        &stride,
        &padding,
        ceil_mode,
        count_include_pad,
        None,
    )?)
}

/// `avg_pool2d`/`avg_pool3d`.
fn avg_pool<const SPATIAL: usize>(
    input: Input,
    kernel: Vec<i64>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<Tensor> {
    Ok(pool::avg_pool(
        &input,
        SPATIAL,
        &kernel,
        &stride,
        &padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
    )?)
}

/// `adaptive_avg_pool{SPATIAL}d`.
fn adaptive_avg_pool<const SPATIAL: usize>(input: Input, output_size: Vec<i64>) -> Result<Tensor> {
    Ok(pool::adaptive_pool(&input, SPATIAL, &output_size, false)?.0)
}

/// `adaptive_max_pool{SPATIAL}d`: the values and their flat indices.
fn adaptive_max_pool<const SPATIAL: usize>(
    input: Input,
    output_size: Vec<i64>,
) -> Result<(Tensor, Tensor)> {
    match pool::adaptive_pool(&input, SPATIAL, &output_size, true)? {
        (values, Some(indices)) => Ok((values, indices)),
        (_, None) => Err(RuntimeError::Other(format!(
            "adaptive_max_pool{SPATIAL}d: the pooling gave no indices"
        ))),
    }
}

// ----- normalization and activations ------------------------------------------------------

#[allow(clippy::too_many_arguments)]
fn batch_norm(
    input: Input,
    weight: Option<Input>,
    bias: Option<Input>,
    running_mean: Option<Input>,
    running_var: Option<Input>,
    training: bool,
    momentum: f64,
    eps: f64,
    _cudnn_enabled: Unused,
) -> Result<Tensor> {
    Ok(norm::batch_norm(
        &input,
        weight.as_deref(),
        bias.as_deref(),
        running_mean.as_deref(),
        running_var.as_deref(),
        training,
        momentum,
        eps,
    )?)
}

/// `_native_batch_norm_legit`: the output, the saved batch mean and inverse standard
/// deviation (empty in evaluation mode); training updates the running statistics in place.
#[allow(clippy::too_many_arguments)]
fn native_batch_norm_legit(
    input: Input,
    weight: Option<Input>,
    bias: Option<Input>,
    running_mean: Input,
    running_var: Input,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    Ok(norm::native_batch_norm(
        &input,
        weight.as_deref(),
        bias.as_deref(),
        Some(&running_mean),
        Some(&running_var),
        training,
        momentum,
        eps,
    )?)
}

/// `_native_batch_norm_legit.no_stats`: batch statistics only, so evaluation mode has none.
fn native_batch_norm_legit_no_stats(
    input: Input,
    weight: Option<Input>,
    bias: Option<Input>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    if !training {
        return Err(TensorError::InvalidArgument(
            "running_mean must be defined in evaluation mode".to_string(),
        )
        .into());
    }
    Ok(norm::native_batch_norm(
        &input,
        weight.as_deref(),
        bias.as_deref(),
        None,
        None,
        training,
        momentum,
        eps,
    )?)
}

#[allow(clippy::too_many_arguments)]
fn instance_norm(
    input: Input,
    weight: Option<Input>,
    bias: Option<Input>,
    running_mean: Option<Input>,
    running_var: Option<Input>,
    use_input_stats: bool,
    momentum: f64,
    eps: f64,
    _cudnn_enabled: Unused,
) -> Result<Tensor> {
    Ok(norm::instance_norm(
        &input,
        weight.as_deref(),
        bias.as_deref(),
        running_mean.as_deref(),
        running_var.as_deref(),
        use_input_stats,
        momentum,
        eps,
    )?)
}

fn layer_norm(
    input: Input,
    normalized_shape: Vec<i64>,
    weight: Option<Input>,
    bias: Option<Input>,
    eps: f64,
    _cudnn_enable: Unused,
) -> Result<Tensor> {
    Ok(norm::layer_norm(
        &input,
        &normalized_shape,
        weight.as_deref(),
        bias.as_deref(),
        eps,
    )?)
}

fn group_norm(
    input: Input,
    num_groups: i64,
    weight: Option<Input>,
    bias: Option<Input>,
    eps: f64,
    _cudnn_enabled: Unused,
) -> Result<Tensor> {
    Ok(norm::group_norm(
        &input,
        num_groups,
        weight.as_deref(),
        bias.as_deref(),
        eps,
    )?)
}

fn log_softmax(input: Input, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    Ok(input.log_softmax(dim, dtype)?)
}

fn underscore_softmax(input: Input, dim: i64, _half_to_float: Unused) -> Result<Tensor> {
    Ok(input.softmax(dim, None)?)
}

fn underscore_log_softmax(input: Input, dim: i64, _half_to_float: Unused) -> Result<Tensor> {
    Ok(input.log_softmax(dim, None)?)
}

fn dropout(input: Input, p: f64, train: bool) -> Result<Tensor> {
    Ok(input.dropout(p, train)?)
}

/// `feature_dropout`: one draw per channel.
fn feature_dropout(input: Input, p: f64, train: bool) -> Result<Tensor> {
    Ok(input.feature_dropout(p, train)?)
}

/// The in-place dropouts keep their own kernel instead of `in_place_from_functional`: in eval
/// mode (and for `p == 0`) the functional kernel returns `self` itself, and nothing is copied.
fn dropout_in_place(
    functional: fn(Input, f64, bool) -> Result<Tensor>,
) -> impl Fn(Input, f64, bool) -> Result<Tensor> + Send + Sync + 'static {
    move |input: Input, p, train| {
        let result = functional(input.clone(), p, train)?;
        if !result.is_same(&input) {
            input.copy_(&result)?;
        }
        Ok(result)
    }
}

// ----- embedding, padding, shuffles -------------------------------------------------------

/// `embedding`: rows of `weight`; the padding index and the sparse/scale flags only matter for
/// the gradient.
fn embedding(
    weight: Input,
    indices: Input,
    _padding_idx: Unused,
    _scale_grad_by_freq: Unused,
    _sparse: Unused,
) -> Result<Tensor> {
    Ok(misc::embedding(&weight, &indices)?)
}

#[allow(clippy::too_many_arguments)]
fn embedding_bag(
    weight: Input,
    indices: Input,
    offsets: Input,
    _scale_grad_by_freq: Unused,
    mode: i64,
    _sparse: Unused,
    per_sample_weights: Option<Input>,
    include_last_offset: bool,
) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    Ok(misc::embedding_bag(
        &weight,
        &indices,
        &offsets,
        mode,
        per_sample_weights.as_deref(),
        include_last_offset,
        None,
    )?)
}

#[allow(clippy::too_many_arguments)]
fn embedding_bag_padding_idx(
    weight: Input,
    indices: Input,
    offsets: Input,
    _scale_grad_by_freq: Unused,
    mode: i64,
    _sparse: Unused,
    per_sample_weights: Option<Input>,
    include_last_offset: bool,
    padding_idx: Option<i64>,
) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    Ok(misc::embedding_bag(
        &weight,
        &indices,
        &offsets,
        mode,
        per_sample_weights.as_deref(),
        include_last_offset,
        padding_idx,
    )?)
}

/// `_embedding_bag` and `_embedding_bag_forward_only`: `padding_idx` is already normalized
/// to `[0, num_weights)`, and -1 (any negative value) means none.
#[allow(clippy::too_many_arguments)]
fn underscore_embedding_bag(
    weight: Input,
    indices: Input,
    offsets: Input,
    _scale_grad_by_freq: Unused,
    mode: i64,
    _sparse: Unused,
    per_sample_weights: Option<Input>,
    include_last_offset: bool,
    padding_idx: i64,
) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    let (output, offset2bag, bag_size, last) = misc::embedding_bag(
        &weight,
        &indices,
        &offsets,
        mode,
        per_sample_weights.as_deref(),
        include_last_offset,
        (padding_idx >= 0).then_some(padding_idx),
    )?;
    // Unlike `embedding_bag`, sum mode here counts one bag size per bag, not per offset.
    if mode == 0 && include_last_offset {
        let bags = output.sizes()[0] as i64;
        let per_bag = |t: Tensor| t.slice(0, Some(0), Some(bags), 1);
        return Ok((output, offset2bag, per_bag(bag_size)?, per_bag(last)?));
    }
    Ok((output, offset2bag, bag_size, last))
}

/// `grid_sampler_3d`: a 5-D input sampled at a 5-D grid of `(x, y, z)` locations.
fn grid_sampler_3d(
    input: Input,
    grid: Input,
    interpolation_mode: i64,
    padding_mode: i64,
    align_corners: bool,
) -> Result<Tensor> {
    Ok(ferrojit_tensor::ops::nn::grid_sample_3d::grid_sampler_3d(
        &input,
        &grid,
        interpolation_mode,
        padding_mode,
        align_corners,
    )?)
}

/// `grid_sampler`: the 3-D sampler for a 5-D input, as ATen's dispatch, else the 2-D one
/// (whose checks refuse other ranks).
fn grid_sampler(
    input: Input,
    grid: Input,
    interpolation_mode: i64,
    padding_mode: i64,
    align_corners: bool,
) -> Result<Tensor> {
    if input.dim() == 5 {
        return grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners);
    }
    grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners)
}

/// `grid_sampler_2d`: a 4-D input sampled at a 4-D grid of `(x, y)` locations.
fn grid_sampler_2d(
    input: Input,
    grid: Input,
    interpolation_mode: i64,
    padding_mode: i64,
    align_corners: bool,
) -> Result<Tensor> {
    Ok(ferrojit_tensor::ops::nn::grid_sample::grid_sampler_2d(
        &input,
        &grid,
        interpolation_mode,
        padding_mode,
        align_corners,
    )?)
}

fn col2im(
    input: Input,
    output_size: Vec<i64>,
    kernel_size: Vec<i64>,
    dilation: Vec<i64>,
    padding: Vec<i64>,
    stride: Vec<i64>,
) -> Result<Tensor> {
    Ok(ferrojit_tensor::ops::nn::fold::col2im(
        &input,
        &output_size,
        &kernel_size,
        &dilation,
        &padding,
        &stride,
    )?)
}

/// `F.pad`: only the constant mode takes a fill value.
fn pad(input: Input, pad: Vec<i64>, mode: String, value: Option<f64>) -> Result<Tensor> {
    let mode = PadMode::parse(&mode)?;
    let value = value.unwrap_or(0.0);
    if mode != PadMode::Constant && value != 0.0 {
        return Err(TensorError::InvalidArgument(format!(
            "Padding mode \"{}\" doesn't take in value argument",
            match mode {
                PadMode::Reflect => "reflect",
                PadMode::Replicate => "replicate",
                _ => "circular",
            }
        ))
        .into());
    }
    Ok(misc::pad(&input, &pad, mode, value)?)
}

fn constant_pad_nd(input: Input, pad: Vec<i64>, value: Scalar) -> Result<Tensor> {
    Ok(misc::pad(&input, &pad, PadMode::Constant, value.to_f64())?)
}

/// `reflection_pad*`, `replication_pad*`, `_pad_circular`.
fn pad_with(mode: PadMode) -> impl Fn(Input, Vec<i64>) -> Result<Tensor> + Send + Sync + 'static {
    move |input, padding| Ok(misc::pad(&input, &padding, mode, 0.0)?)
}

fn pixel_shuffle(input: Input, upscale_factor: i64) -> Result<Tensor> {
    Ok(misc::pixel_shuffle(&input, upscale_factor, false)?)
}

fn pixel_unshuffle(input: Input, downscale_factor: i64) -> Result<Tensor> {
    Ok(misc::pixel_shuffle(&input, downscale_factor, true)?)
}

fn one_hot(input: Input, num_classes: i64) -> Result<Tensor> {
    Ok(misc::one_hot(&input, num_classes)?)
}

#[allow(clippy::too_many_arguments)]
fn scaled_dot_product_attention(
    query: Input,
    key: Input,
    value: Input,
    attn_mask: Option<Input>,
    dropout_p: f64,
    is_causal: bool,
    scale: Option<f64>,
    enable_gqa: bool,
) -> Result<Tensor> {
    Ok(misc::scaled_dot_product_attention(
        &query,
        &key,
        &value,
        attn_mask.as_deref(),
        dropout_p,
        is_causal,
        scale,
        enable_gqa,
    )?)
}

fn cosine_similarity(x1: Input, x2: Input, dim: i64, eps: f64) -> Result<Tensor> {
    Ok(misc::cosine_similarity(&x1, &x2, dim, eps)?)
}

fn pairwise_distance(x1: Input, x2: Input, p: f64, eps: f64, keepdim: bool) -> Result<Tensor> {
    Ok(misc::pairwise_distance(&x1, &x2, p, eps, keepdim)?)
}

// ----- losses -----------------------------------------------------------------------------

fn mse_loss(input: Input, target: Input, reduction: Reduction) -> Result<Tensor> {
    Ok(loss::mse_loss(&input, &target, reduction)?)
}

fn l1_loss(input: Input, target: Input, reduction: Reduction) -> Result<Tensor> {
    Ok(loss::l1_loss(&input, &target, reduction)?)
}

fn smooth_l1_loss(input: Input, target: Input, reduction: Reduction, beta: f64) -> Result<Tensor> {
    Ok(loss::smooth_l1_loss(&input, &target, reduction, beta)?)
}

fn huber_loss(input: Input, target: Input, reduction: Reduction, delta: f64) -> Result<Tensor> {
    Ok(loss::huber_loss(&input, &target, reduction, delta)?)
}

fn binary_cross_entropy(
    input: Input,
    target: Input,
    weight: Option<Input>,
    reduction: Reduction,
) -> Result<Tensor> {
    Ok(loss::binary_cross_entropy(
        &input,
        &target,
        weight.as_deref(),
        reduction,
    )?)
}

fn binary_cross_entropy_with_logits(
    input: Input,
    target: Input,
    weight: Option<Input>,
    pos_weight: Option<Input>,
    reduction: Reduction,
) -> Result<Tensor> {
    Ok(loss::binary_cross_entropy_with_logits(
        &input,
        &target,
        weight.as_deref(),
        pos_weight.as_deref(),
        reduction,
    )?)
}

fn kl_div(input: Input, target: Input, reduction: Reduction, log_target: bool) -> Result<Tensor> {
    Ok(loss::kl_div(&input, &target, reduction, log_target)?)
}

fn nll_loss(
    input: Input,
    target: Input,
    weight: Option<Input>,
    reduction: Reduction,
    ignore_index: i64,
) -> Result<Tensor> {
    Ok(loss::nll_loss(
        &input,
        &target,
        weight.as_deref(),
        reduction,
        ignore_index,
    )?)
}

fn cross_entropy_loss(
    input: Input,
    target: Input,
    weight: Option<Input>,
    reduction: Reduction,
    ignore_index: i64,
    label_smoothing: f64,
) -> Result<Tensor> {
    Ok(loss::cross_entropy(
        &input,
        &target,
        weight.as_deref(),
        reduction,
        ignore_index,
        label_smoothing,
    )?)
}

// ----- interpolation ----------------------------------------------------------------------

/// A `SymInt[]? output_size`.
type OutputSize = Option<Vec<i64>>;
/// A `float[]? scale_factors`.
type ScaleFactors = Option<Vec<f64>>;
/// One dimension's `float? scales_*`.
type Scale = Option<f64>;

/// The `.vec` overloads' common body: an output size or per-dimension scale factors.
fn upsample_from_list(
    input: &Tensor,
    output_size: Option<Vec<i64>>,
    scale_factors: Option<Vec<f64>>,
    spatial: usize,
    mode: InterpolateMode,
    align_corners: bool,
) -> Result<Tensor> {
    let out_size = output_size_for(
        input,
        spatial,
        output_size.as_deref(),
        scale_factors.as_deref(),
    )?;
    let per_dim: Vec<Option<f64>> = match &scale_factors {
        Some(scales) => scales.iter().map(|&scale| Some(scale)).collect(),
        None => vec![None; spatial],
    };
    Ok(upsample(input, &out_size, &per_dim, mode, align_corners)?)
}

/// `upsample_nearest*.vec`: no `align_corners`.
fn upsample_list(
    spatial: usize,
    mode: InterpolateMode,
) -> impl Fn(Input, OutputSize, ScaleFactors) -> Result<Tensor> + Send + Sync + 'static {
    move |input, output_size, scale_factors| {
        upsample_from_list(&input, output_size, scale_factors, spatial, mode, false)
    }
}

/// `upsample_{linear,bilinear,trilinear,bicubic}*.vec`.
fn upsample_list_aligned(
    spatial: usize,
    mode: InterpolateMode,
) -> impl Fn(Input, OutputSize, bool, ScaleFactors) -> Result<Tensor> + Send + Sync + 'static {
    move |input, output_size, align_corners, scale_factors| {
        upsample_from_list(
            &input,
            output_size,
            scale_factors,
            spatial,
            mode,
            align_corners,
        )
    }
}

/// The sized overloads' common body: an output size and one optional scale per dimension.
fn upsample_to_size(
    input: &Tensor,
    output_size: &[i64],
    scales: &[Option<f64>],
    mode: InterpolateMode,
    align_corners: bool,
) -> Result<Tensor> {
    let out_size = output_size_for(input, scales.len(), Some(output_size), None)?;
    Ok(upsample(input, &out_size, scales, mode, align_corners)?)
}

/// `upsample_nearest1d` and the like: one scale, no `align_corners`.
fn upsample_sized_1d(
    mode: InterpolateMode,
) -> impl Fn(Input, Vec<i64>, Scale) -> Result<Tensor> + Send + Sync + 'static {
    move |input, size, scale| upsample_to_size(&input, &size, &[scale], mode, false)
}

fn upsample_sized_2d(
    mode: InterpolateMode,
) -> impl Fn(Input, Vec<i64>, Scale, Scale) -> Result<Tensor> + Send + Sync + 'static {
    move |input, size, scale_h, scale_w| {
        upsample_to_size(&input, &size, &[scale_h, scale_w], mode, false)
    }
}

fn upsample_sized_3d(
    mode: InterpolateMode,
) -> impl Fn(Input, Vec<i64>, Scale, Scale, Scale) -> Result<Tensor> + Send + Sync + 'static {
    move |input, size, scale_d, scale_h, scale_w| {
        upsample_to_size(&input, &size, &[scale_d, scale_h, scale_w], mode, false)
    }
}

/// `upsample_linear1d` and the like: `align_corners`, then one scale per dimension.
fn upsample_sized_aligned_1d(
    mode: InterpolateMode,
) -> impl Fn(Input, Vec<i64>, bool, Scale) -> Result<Tensor> + Send + Sync + 'static {
    move |input, size, align_corners, scale| {
        upsample_to_size(&input, &size, &[scale], mode, align_corners)
    }
}

fn upsample_sized_aligned_2d(
    mode: InterpolateMode,
) -> impl Fn(Input, Vec<i64>, bool, Scale, Scale) -> Result<Tensor> + Send + Sync + 'static {
    move |input, size, align_corners, scale_h, scale_w| {
        upsample_to_size(&input, &size, &[scale_h, scale_w], mode, align_corners)
    }
}

fn upsample_sized_aligned_3d(
    mode: InterpolateMode,
) -> impl Fn(Input, Vec<i64>, bool, Scale, Scale, Scale) -> Result<Tensor> + Send + Sync + 'static {
    move |input, size, align_corners, scale_d, scale_h, scale_w| {
        upsample_to_size(
            &input,
            &size,
            &[scale_d, scale_h, scale_w],
            mode,
            align_corners,
        )
    }
}

/// `aten::_upsample_*2d_aa.vec(input, output_size?, align_corners, scale_factors?)`.
fn antialias_list(
    filter: AntialiasFilter,
) -> impl Fn(Input, OutputSize, bool, ScaleFactors) -> Result<Tensor> + Send + Sync + 'static {
    move |input, output_size, align_corners, scale_factors| {
        let out_size =
            output_size_for(&input, 2, output_size.as_deref(), scale_factors.as_deref())?;
        let per_dim: Vec<Option<f64>> = match &scale_factors {
            Some(scales) => scales.iter().map(|&scale| Some(scale)).collect(),
            None => vec![None; 2],
        };
        Ok(upsample_antialias(
            &input,
            &out_size,
            &per_dim,
            filter,
            align_corners,
        )?)
    }
}

/// `aten::_upsample_*2d_aa(self, output_size, align_corners, scales_h?, scales_w?)`.
fn antialias_sized(
    filter: AntialiasFilter,
) -> impl Fn(Input, Vec<i64>, bool, Scale, Scale) -> Result<Tensor> + Send + Sync + 'static {
    move |input, size, align_corners, scale_h, scale_w| {
        let out_size = output_size_for(&input, 2, Some(&size), None)?;
        Ok(upsample_antialias(
            &input,
            &out_size,
            &[scale_h, scale_w],
            filter,
            align_corners,
        )?)
    }
}

/// Every operator of this file, in declaration order (within one name, PyTorch's).
#[rustfmt::skip]
pub fn declarations() -> Vec<OperatorDeclaration> {
    use InterpolateMode::{Cubic, Linear, Nearest, NearestExact};
    vec![
        typed("aten::addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor", addbmm),
        typed("aten::baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor", baddbmm),
        typed("aten::outer(Tensor self, Tensor vec2) -> Tensor", outer),
        typed("aten::einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor", einsum),
        typed("aten::tensordot(Tensor self, Tensor other, int[] dims_self, int[] dims_other) -> Tensor", tensordot),
        typed("aten::conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], SymInt[1] padding=[0], SymInt[1] dilation=[1], SymInt groups=1) -> Tensor", conv_explicit),
        typed("aten::conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], str padding=\"valid\", SymInt[1] dilation=[1], SymInt groups=1) -> Tensor", conv_padding_str),
        typed("aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor", conv_explicit),
        typed("aten::conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], str padding=\"valid\", SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor", conv_padding_str),
        typed("aten::conv3d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor", conv_explicit),
        typed("aten::conv3d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], str padding=\"valid\", SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor", conv_padding_str),
        typed("aten::conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], SymInt[1] padding=[0], SymInt[1] output_padding=[0], SymInt groups=1, SymInt[1] dilation=[1]) -> Tensor", conv_transpose),
        typed("aten::conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] output_padding=[0, 0], SymInt groups=1, SymInt[2] dilation=[1, 1]) -> Tensor", conv_transpose),
        typed("aten::conv_transpose3d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], SymInt[3] output_padding=[0, 0, 0], SymInt groups=1, SymInt[3] dilation=[1, 1, 1]) -> Tensor", conv_transpose),
        typed("aten::convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor", Wide(convolution_op)),
        typed("aten::_convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, bool benchmark, bool deterministic, bool cudnn_enabled, bool allow_tf32) -> Tensor", Wide(underscore_convolution)),
        typed("aten::_convolution.deprecated(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, int[] output_padding, SymInt groups, bool benchmark, bool deterministic, bool cudnn_enabled) -> Tensor", Wide(underscore_convolution_deprecated)),
        typed("aten::max_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], int[1] dilation=[1], bool ceil_mode=False) -> Tensor", max_pool::<1>),
        typed("aten::max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor", max_pool::<2>),
        typed("aten::max_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) -> Tensor", max_pool::<3>),
        typed("aten::max_pool1d_with_indices(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], int[1] dilation=[1], bool ceil_mode=False) -> (Tensor, Tensor)", max_pool_with_indices::<1>),
        typed("aten::max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)", max_pool_with_indices::<2>),
        typed("aten::max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)", max_pool_with_indices::<3>),
        typed("aten::avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], bool ceil_mode=False, bool count_include_pad=True) -> Tensor", avg_pool1d),
        typed("aten::avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor", avg_pool::<2>),
        typed("aten::avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor", avg_pool::<3>),
        typed("aten::adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor", adaptive_avg_pool::<1>),
        typed("aten::adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor", adaptive_avg_pool::<2>),
        typed("aten::adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor", adaptive_avg_pool::<3>),
        out_from_functional("aten::adaptive_avg_pool3d.out(Tensor self, SymInt[3] output_size, *, Tensor(a!) out) -> Tensor(a!)", adaptive_avg_pool::<3>),
        typed("aten::_adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor", adaptive_avg_pool::<3>),
        out_from_functional("aten::_adaptive_avg_pool3d.out(Tensor self, SymInt[3] output_size, *, Tensor(a!) out) -> Tensor(a!)", adaptive_avg_pool::<3>),
        typed("aten::adaptive_max_pool1d(Tensor self, int[1] output_size) -> (Tensor, Tensor)", adaptive_max_pool::<1>),
        typed("aten::adaptive_max_pool2d(Tensor self, int[2] output_size) -> (Tensor, Tensor)", adaptive_max_pool::<2>),
        typed("aten::batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor", Wide(batch_norm)),
        typed("aten::_native_batch_norm_legit(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!) running_mean, Tensor(b!) running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)", native_batch_norm_legit),
        typed("aten::_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, Tensor? bias, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)", native_batch_norm_legit_no_stats),
        typed("aten::instance_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool use_input_stats, float momentum, float eps, bool cudnn_enabled) -> Tensor", Wide(instance_norm)),
        typed("aten::layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1.0000000000000001e-05, bool cudnn_enable=True) -> Tensor", layer_norm),
        typed("aten::group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1.0000000000000001e-05, bool cudnn_enabled=True) -> Tensor", group_norm),
        typed("aten::log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", log_softmax),
        typed("aten::_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", underscore_softmax),
        typed("aten::_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", underscore_log_softmax),
        typed("aten::dropout(Tensor input, float p, bool train) -> Tensor", dropout),
        typed_in_place("aten::dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)", dropout_in_place(dropout)),
        typed("aten::feature_dropout(Tensor input, float p, bool train) -> Tensor", feature_dropout),
        typed_in_place("aten::feature_dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)", dropout_in_place(feature_dropout)),
        typed("aten::embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor", embedding),
        typed("aten::embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False, int mode=0, bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False) -> (Tensor, Tensor, Tensor, Tensor)", embedding_bag),
        typed("aten::embedding_bag.padding_idx(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq, int mode, bool sparse, Tensor? per_sample_weights, bool include_last_offset, int? padding_idx) -> (Tensor, Tensor, Tensor, Tensor)", Wide(embedding_bag_padding_idx)),
        typed("aten::_embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False, int mode=0, bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False, int padding_idx=-1) -> (Tensor, Tensor, Tensor, Tensor)", Wide(underscore_embedding_bag)),
        typed("aten::_embedding_bag_forward_only(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False, int mode=0, bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False, int padding_idx=-1) -> (Tensor, Tensor, Tensor, Tensor)", Wide(underscore_embedding_bag)),
        typed("aten::grid_sampler(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners) -> Tensor", grid_sampler),
        typed("aten::grid_sampler_3d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners) -> Tensor", grid_sampler_3d),
        out_from_functional("aten::grid_sampler_3d.out(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners, *, Tensor(a!) out) -> Tensor(a!)", grid_sampler_3d),
        typed("aten::grid_sampler_2d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners) -> Tensor", grid_sampler_2d),
        out_from_functional("aten::grid_sampler_2d.out(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners, *, Tensor(a!) out) -> Tensor(a!)", grid_sampler_2d),
        typed("aten::col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor", col2im),
        out_from_functional("aten::col2im.out(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride, *, Tensor(a!) out) -> Tensor(a!)", col2im),
        typed("aten::pad(Tensor self, SymInt[] pad, str mode=\"constant\", float? value=None) -> Tensor", pad),
        typed("aten::constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor", constant_pad_nd),
        typed("aten::reflection_pad1d(Tensor self, SymInt[2] padding) -> Tensor", pad_with(PadMode::Reflect)),
        typed("aten::reflection_pad2d(Tensor self, SymInt[4] padding) -> Tensor", pad_with(PadMode::Reflect)),
        typed("aten::replication_pad1d(Tensor self, SymInt[2] padding) -> Tensor", pad_with(PadMode::Replicate)),
        typed("aten::replication_pad2d(Tensor self, SymInt[4] padding) -> Tensor", pad_with(PadMode::Replicate)),
        typed("aten::reflection_pad3d(Tensor self, SymInt[6] padding) -> Tensor", pad_with(PadMode::Reflect)),
        out_from_functional("aten::reflection_pad3d.out(Tensor self, SymInt[6] padding, *, Tensor(a!) out) -> Tensor(a!)", pad_with(PadMode::Reflect)),
        typed("aten::replication_pad3d(Tensor self, SymInt[6] padding) -> Tensor", pad_with(PadMode::Replicate)),
        out_from_functional("aten::replication_pad3d.out(Tensor self, SymInt[6] padding, *, Tensor(a!) out) -> Tensor(a!)", pad_with(PadMode::Replicate)),
        typed("aten::_pad_circular(Tensor self, SymInt[] pad) -> Tensor", pad_with(PadMode::Circular)),
        typed("aten::pixel_shuffle(Tensor self, int upscale_factor) -> Tensor", pixel_shuffle),
        typed("aten::pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor", pixel_unshuffle),
        typed("aten::one_hot(Tensor self, int num_classes=-1) -> Tensor", one_hot),
        typed("aten::scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0., bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor", scaled_dot_product_attention),
        typed("aten::cosine_similarity(Tensor x1, Tensor x2, int dim=1, float eps=1e-08) -> Tensor", cosine_similarity),
        typed("aten::pairwise_distance(Tensor x1, Tensor x2, float p=2., float eps=9.9999999999999995e-07, bool keepdim=False) -> Tensor", pairwise_distance),
        typed("aten::mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", mse_loss),
        typed("aten::l1_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", l1_loss),
        typed("aten::smooth_l1_loss(Tensor self, Tensor target, int reduction=1, float beta=1.) -> Tensor", smooth_l1_loss),
        typed("aten::huber_loss(Tensor self, Tensor target, int reduction=1, float delta=1.) -> Tensor", huber_loss),
        typed("aten::binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=1) -> Tensor", binary_cross_entropy),
        typed("aten::binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, Tensor? pos_weight=None, int reduction=1) -> Tensor", binary_cross_entropy_with_logits),
        typed("aten::kl_div(Tensor self, Tensor target, int reduction=1, *, bool log_target=False) -> Tensor", kl_div),
        typed("aten::nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, SymInt ignore_index=-100) -> Tensor", nll_loss),
        typed("aten::nll_loss_nd(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, SymInt ignore_index=-100) -> Tensor", nll_loss),
        typed("aten::nll_loss2d(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, SymInt ignore_index=-100) -> Tensor", nll_loss),
        typed("aten::cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, SymInt ignore_index=-100, float label_smoothing=0.) -> Tensor", cross_entropy_loss),
        typed("aten::upsample_nearest1d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor", upsample_list(1, Nearest)),
        typed("aten::upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor", upsample_list(2, Nearest)),
        typed("aten::upsample_nearest3d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor", upsample_list(3, Nearest)),
        typed("aten::_upsample_nearest_exact1d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor", upsample_list(1, NearestExact)),
        typed("aten::_upsample_nearest_exact2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor", upsample_list(2, NearestExact)),
        typed("aten::_upsample_nearest_exact3d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor", upsample_list(3, NearestExact)),
        typed("aten::upsample_linear1d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor", upsample_list_aligned(1, Linear)),
        typed("aten::upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor", upsample_list_aligned(2, Linear)),
        typed("aten::upsample_trilinear3d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor", upsample_list_aligned(3, Linear)),
        typed("aten::upsample_bicubic2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor", upsample_list_aligned(2, Cubic)),
        typed("aten::_upsample_bilinear2d_aa.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor", antialias_list(AntialiasFilter::Bilinear)),
        typed("aten::_upsample_bicubic2d_aa.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor", antialias_list(AntialiasFilter::Bicubic)),
        typed("aten::_upsample_lanczos2d_aa.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor", antialias_list(AntialiasFilter::Lanczos)),
        typed("aten::_upsample_bilinear2d_aa(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor", antialias_sized(AntialiasFilter::Bilinear)),
        typed("aten::_upsample_bicubic2d_aa(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor", antialias_sized(AntialiasFilter::Bicubic)),
        typed("aten::_upsample_lanczos2d_aa(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor", antialias_sized(AntialiasFilter::Lanczos)),
        typed("aten::upsample_nearest1d(Tensor self, SymInt[1] output_size, float? scales=None) -> Tensor", upsample_sized_1d(Nearest)),
        typed("aten::upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) -> Tensor", upsample_sized_2d(Nearest)),
        typed("aten::upsample_nearest3d(Tensor self, SymInt[3] output_size, float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor", upsample_sized_3d(Nearest)),
        typed("aten::_upsample_nearest_exact1d(Tensor self, SymInt[1] output_size, float? scales=None) -> Tensor", upsample_sized_1d(NearestExact)),
        typed("aten::_upsample_nearest_exact2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) -> Tensor", upsample_sized_2d(NearestExact)),
        typed("aten::_upsample_nearest_exact3d(Tensor self, SymInt[3] output_size, float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor", upsample_sized_3d(NearestExact)),
        typed("aten::upsample_linear1d(Tensor self, SymInt[1] output_size, bool align_corners, float? scales=None) -> Tensor", upsample_sized_aligned_1d(Linear)),
        typed("aten::upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor", upsample_sized_aligned_2d(Linear)),
        typed("aten::upsample_trilinear3d(Tensor self, SymInt[3] output_size, bool align_corners, float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor", upsample_sized_aligned_3d(Linear)),
        typed("aten::upsample_bicubic2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor", upsample_sized_aligned_2d(Cubic)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opdef::OverloadRank;
    use crate::registry::{OperatorRegistry, Stack};

    fn run(schema: &str, declaration: OperatorDeclaration, mut stack: Stack) -> Result<Stack> {
        let mut registry = OperatorRegistry::new();
        registry.register_family(OverloadRank::NativeFunction, vec![declaration])?;
        let name = schema.split('(').next().unwrap_or(schema);
        let operator = registry
            .lookup(name)
            .ok_or_else(|| RuntimeError::Other(format!("{name} is not registered")))?;
        (operator.kernel)(&mut stack)?;
        Ok(stack)
    }

    #[test]
    fn a_wide_kernel_binds_every_argument_and_unused_ones_take_any_value() {
        let schema = "test::batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor";
        let input = Tensor::from_vec(vec![1.0f32, 3.0], &[2, 1]).unwrap();
        let stack = vec![
            IValue::from(input),
            IValue::None,
            IValue::None,
            IValue::None,
            IValue::None,
            IValue::Bool(true),
            IValue::Double(0.1),
            IValue::Double(0.0),
            IValue::from("not a bool: never read"),
        ];
        let stack = run(schema, typed(schema, Wide(batch_norm)), stack).unwrap();
        assert_eq!(stack.len(), 1);
        assert_eq!(stack[0].to_tensor().unwrap().to_f64_vec(), vec![-1.0, 1.0]);
        // A schema with one argument fewer than the kernel takes is refused.
        let short = "test::short(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps) -> Tensor";
        assert!(run(short, typed(short, Wide(batch_norm)), Vec::new()).is_err());
    }

    #[test]
    fn in_place_dropout_in_eval_mode_leaves_self_and_returns_it() {
        let schema = "test::dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)";
        let input = IValue::from(Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap());
        let stack = vec![input.clone(), IValue::Double(0.5), IValue::Bool(false)];
        let stack = run(
            schema,
            typed_in_place(schema, dropout_in_place(dropout)),
            stack,
        )
        .unwrap();
        assert!(stack[0].is_same_identity(&input));
        assert_eq!(input.to_tensor().unwrap().to_f64_vec(), vec![1.0, 2.0]);
    }

    #[test]
    fn a_bad_reduction_is_an_error() {
        let schema = "test::mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor";
        let x = IValue::from(Tensor::from_vec(vec![1.0f32], &[1]).unwrap());
        let stack = vec![x.clone(), x, IValue::Int(7)];
        assert!(run(schema, typed(schema, mse_loss), stack).is_err());
    }
}
