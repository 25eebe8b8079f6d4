//! Neural-network operators (`torch.nn.functional` as TorchScript calls them: conv, pooling,
//! normalization, losses, embedding, padding, interpolation, attention) and the matrix
//! products beyond `mm`/`bmm`/`matmul`, registered by their native_functions.yaml schemas.

use ferrojit_ir::Type;
use ferrojit_tensor::ops::nn::conv::{convolution, ConvPadding};
use ferrojit_tensor::ops::nn::loss::{self, Reduction};
use ferrojit_tensor::ops::nn::misc::{self, PadMode};
use ferrojit_tensor::ops::nn::resample::{
    output_size_for, upsample, upsample_antialias, AntialiasFilter, InterpolateMode,
};
use ferrojit_tensor::ops::nn::{norm, pool};
use ferrojit_tensor::Tensor;

use super::{optional_dtype, optional_tensor, pop_array, push, scalar, KernelTableEntry};
use crate::error::Result;
use crate::ivalue::IValue;
use crate::registry::Stack;

/// Pushes the results of a multi-return schema, one stack value per return (as the
/// interpreter's `store_outputs` reads them).
fn push_all(stack: &mut Stack, items: Vec<Tensor>) -> Result<()> {
    stack.extend(items.into_iter().map(IValue::from));
    Ok(())
}

fn reduction(value: &IValue) -> Result<Reduction> {
    Ok(Reduction::from_i64(value.to_int()?)?)
}

// ----- products ---------------------------------------------------------------------------

fn addbmm(stack: &mut Stack) -> Result<()> {
    let [s, b1, b2, beta, alpha] = pop_array::<5>(stack)?;
    let r = s.to_tensor()?.addbmm(
        &*b1.to_tensor()?,
        &*b2.to_tensor()?,
        &scalar(&beta)?,
        &scalar(&alpha)?,
    )?;
    push(stack, r)
}

fn baddbmm(stack: &mut Stack) -> Result<()> {
    let [s, b1, b2, beta, alpha] = pop_array::<5>(stack)?;
    let r = s.to_tensor()?.baddbmm(
        &*b1.to_tensor()?,
        &*b2.to_tensor()?,
        &scalar(&beta)?,
        &scalar(&alpha)?,
    )?;
    push(stack, r)
}

fn outer(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    push(stack, a.to_tensor()?.outer(&*b.to_tensor()?)?)
}

fn einsum(stack: &mut Stack) -> Result<()> {
    let [eq, tensors, _path] = pop_array::<3>(stack)?;
    let r = ferrojit_tensor::ops::products::einsum(eq.to_str()?, &tensors.to_tensor_vec()?)?;
    push(stack, r)
}

fn tensordot(stack: &mut Stack) -> Result<()> {
    let [a, b, da, db] = pop_array::<4>(stack)?;
    let r = a
        .to_tensor()?
        .tensordot(&*b.to_tensor()?, &da.to_int_vec()?, &db.to_int_vec()?)?;
    push(stack, r)
}

// ----- convolution ------------------------------------------------------------------------

fn conv_explicit(stack: &mut Stack) -> Result<()> {
    let [x, w, b, stride, padding, dilation, groups] = pop_array::<7>(stack)?;
    let r = x.to_tensor()?.conv(
        &*w.to_tensor()?,
        optional_tensor(&b)?.as_deref(),
        &stride.to_int_vec()?,
        &ConvPadding::Explicit(padding.to_int_vec()?),
        &dilation.to_int_vec()?,
        groups.to_int()?,
    )?;
    push(stack, r)
}

fn conv_padding_str(stack: &mut Stack) -> Result<()> {
    let [x, w, b, stride, padding, dilation, groups] = pop_array::<7>(stack)?;
    let padding = match padding.to_str()? {
        "same" => ConvPadding::Same,
        "valid" => ConvPadding::Valid,
        other => {
            return Err(ferrojit_tensor::TensorError::InvalidArgument(format!(
                "Invalid padding string: '{other}'"
            ))
            .into())
        }
    };
    let r = x.to_tensor()?.conv(
        &*w.to_tensor()?,
        optional_tensor(&b)?.as_deref(),
        &stride.to_int_vec()?,
        &padding,
        &dilation.to_int_vec()?,
        groups.to_int()?,
    )?;
    push(stack, r)
}

fn conv_transpose(stack: &mut Stack) -> Result<()> {
    let [x, w, b, stride, padding, output_padding, groups, dilation] = pop_array::<8>(stack)?;
    let r = x.to_tensor()?.conv_transpose(
        &*w.to_tensor()?,
        optional_tensor(&b)?.as_deref(),
        &stride.to_int_vec()?,
        &padding.to_int_vec()?,
        &output_padding.to_int_vec()?,
        groups.to_int()?,
        &dilation.to_int_vec()?,
    )?;
    push(stack, r)
}

fn convolution_general(stack: &mut Stack, extra: usize) -> Result<()> {
    // The trailing backend flags of `_convolution` do not change the result.
    let tail = super::pop_vec(stack, extra)?;
    drop(tail);
    let [x, w, b, stride, padding, dilation, transposed, output_padding, groups] =
        pop_array::<9>(stack)?;
    let r = convolution(
        &*x.to_tensor()?,
        &*w.to_tensor()?,
        optional_tensor(&b)?.as_deref(),
        &stride.to_int_vec()?,
        &ConvPadding::Explicit(padding.to_int_vec()?),
        &dilation.to_int_vec()?,
        transposed.to_bool()?,
        &output_padding.to_int_vec()?,
        groups.to_int()?,
    )?;
    push(stack, r)
}

fn convolution_op(stack: &mut Stack) -> Result<()> {
    convolution_general(stack, 0)
}

fn underscore_convolution(stack: &mut Stack) -> Result<()> {
    convolution_general(stack, 4)
}

fn underscore_convolution_deprecated(stack: &mut Stack) -> Result<()> {
    convolution_general(stack, 3)
}

// ----- pooling ----------------------------------------------------------------------------

fn max_pool_values(stack: &mut Stack, spatial: usize, with_indices: bool) -> Result<()> {
    let [x, k, s, p, d, ceil] = pop_array::<6>(stack)?;
    let (x, ceil) = (x.to_tensor()?, ceil.to_bool()?);
    let (k, s, p, d) = (
        k.to_int_vec()?,
        s.to_int_vec()?,
        p.to_int_vec()?,
        d.to_int_vec()?,
    );
    if with_indices {
        let (values, indices) = pool::max_pool(&x, spatial, &k, &s, &p, &d, ceil)?;
        push_all(stack, vec![values, indices])
    } else {
        push(
            stack,
            pool::max_pool_values(&x, spatial, &k, &s, &p, &d, ceil)?,
        )
    }
}

fn max_pool1d(stack: &mut Stack) -> Result<()> {
    max_pool_values(stack, 1, false)
}
fn max_pool2d(stack: &mut Stack) -> Result<()> {
    max_pool_values(stack, 2, false)
}
fn max_pool3d(stack: &mut Stack) -> Result<()> {
    max_pool_values(stack, 3, false)
}
fn max_pool1d_with_indices(stack: &mut Stack) -> Result<()> {
    max_pool_values(stack, 1, true)
}
fn max_pool2d_with_indices(stack: &mut Stack) -> Result<()> {
    max_pool_values(stack, 2, true)
}

fn avg_pool1d(stack: &mut Stack) -> Result<()> {
    let [x, k, s, p, ceil, include] = pop_array::<6>(stack)?;
    let r = pool::avg_pool(
        &*x.to_tensor()?,
        1,
        &k.to_int_vec()?,
        &s.to_int_vec()?,
        &p.to_int_vec()?,
        ceil.to_bool()?,
        include.to_bool()?,
        None,
    )?;
    push(stack, r)
}

fn avg_pool_nd(stack: &mut Stack, spatial: usize) -> Result<()> {
    let [x, k, s, p, ceil, include, divisor] = pop_array::<7>(stack)?;
    let r = pool::avg_pool(
        &*x.to_tensor()?,
        spatial,
        &k.to_int_vec()?,
        &s.to_int_vec()?,
        &p.to_int_vec()?,
        ceil.to_bool()?,
        include.to_bool()?,
        divisor.to_optional_int()?,
    )?;
    push(stack, r)
}

fn avg_pool2d(stack: &mut Stack) -> Result<()> {
    avg_pool_nd(stack, 2)
}
fn avg_pool3d(stack: &mut Stack) -> Result<()> {
    avg_pool_nd(stack, 3)
}

fn adaptive(stack: &mut Stack, spatial: usize, max: bool) -> Result<()> {
    let [x, size] = pop_array::<2>(stack)?;
    let (values, indices) =
        pool::adaptive_pool(&*x.to_tensor()?, spatial, &size.to_int_vec()?, max)?;
    match indices {
        Some(i) if max => push_all(stack, vec![values, i]),
        _ => push(stack, values),
    }
}

fn adaptive_avg_pool1d(stack: &mut Stack) -> Result<()> {
    adaptive(stack, 1, false)
}
fn adaptive_avg_pool2d(stack: &mut Stack) -> Result<()> {
    adaptive(stack, 2, false)
}
fn adaptive_avg_pool3d(stack: &mut Stack) -> Result<()> {
    adaptive(stack, 3, false)
}
fn adaptive_max_pool1d(stack: &mut Stack) -> Result<()> {
    adaptive(stack, 1, true)
}
fn adaptive_max_pool2d(stack: &mut Stack) -> Result<()> {
    adaptive(stack, 2, true)
}

// ----- normalization and activations ------------------------------------------------------

fn batch_norm(stack: &mut Stack) -> Result<()> {
    let [x, w, b, rm, rv, training, momentum, eps, _cudnn] = pop_array::<9>(stack)?;
    let r = norm::batch_norm(
        &*x.to_tensor()?,
        optional_tensor(&w)?.as_deref(),
        optional_tensor(&b)?.as_deref(),
        optional_tensor(&rm)?.as_deref(),
        optional_tensor(&rv)?.as_deref(),
        training.to_bool()?,
        momentum.to_double()?,
        eps.to_double()?,
    )?;
    push(stack, r)
}

fn instance_norm(stack: &mut Stack) -> Result<()> {
    let [x, w, b, rm, rv, use_input_stats, momentum, eps, _cudnn] = pop_array::<9>(stack)?;
    let r = norm::instance_norm(
        &*x.to_tensor()?,
        optional_tensor(&w)?.as_deref(),
        optional_tensor(&b)?.as_deref(),
        optional_tensor(&rm)?.as_deref(),
        optional_tensor(&rv)?.as_deref(),
        use_input_stats.to_bool()?,
        momentum.to_double()?,
        eps.to_double()?,
    )?;
    push(stack, r)
}

fn layer_norm(stack: &mut Stack) -> Result<()> {
    let [x, shape, w, b, eps, _cudnn] = pop_array::<6>(stack)?;
    let r = norm::layer_norm(
        &*x.to_tensor()?,
        &shape.to_int_vec()?,
        optional_tensor(&w)?.as_deref(),
        optional_tensor(&b)?.as_deref(),
        eps.to_double()?,
    )?;
    push(stack, r)
}

fn group_norm(stack: &mut Stack) -> Result<()> {
    let [x, groups, w, b, eps, _cudnn] = pop_array::<6>(stack)?;
    let r = norm::group_norm(
        &*x.to_tensor()?,
        groups.to_int()?,
        optional_tensor(&w)?.as_deref(),
        optional_tensor(&b)?.as_deref(),
        eps.to_double()?,
    )?;
    push(stack, r)
}

fn log_softmax(stack: &mut Stack) -> Result<()> {
    let [x, dim, dtype] = pop_array::<3>(stack)?;
    push(
        stack,
        x.to_tensor()?
            .log_softmax(dim.to_int()?, optional_dtype(&dtype)?)?,
    )
}

fn underscore_softmax(stack: &mut Stack) -> Result<()> {
    let [x, dim, _half_to_float] = pop_array::<3>(stack)?;
    push(stack, x.to_tensor()?.softmax(dim.to_int()?, None)?)
}

fn underscore_log_softmax(stack: &mut Stack) -> Result<()> {
    let [x, dim, _half_to_float] = pop_array::<3>(stack)?;
    push(stack, x.to_tensor()?.log_softmax(dim.to_int()?, None)?)
}

/// `dropout` and `feature_dropout` (one draw per channel), functional or in place.
fn dropout_kernel(stack: &mut Stack, feature: bool, in_place: bool) -> Result<()> {
    let [x, p, train] = pop_array::<3>(stack)?;
    let t = x.to_tensor()?;
    let (p, train) = (p.to_double()?, train.to_bool()?);
    let r = if feature {
        t.feature_dropout(p, train)?
    } else {
        t.dropout(p, train)?
    };
    if !in_place {
        return push(stack, r);
    }
    if !r.is_same(&t) {
        t.copy_(&r)?;
    }
    push(stack, x)
}

fn dropout(stack: &mut Stack) -> Result<()> {
    dropout_kernel(stack, false, false)
}

fn feature_dropout(stack: &mut Stack) -> Result<()> {
    dropout_kernel(stack, true, false)
}

fn dropout_(stack: &mut Stack) -> Result<()> {
    dropout_kernel(stack, false, true)
}

fn feature_dropout_(stack: &mut Stack) -> Result<()> {
    dropout_kernel(stack, true, true)
}

// ----- embedding, padding, shuffles -------------------------------------------------------

fn embedding(stack: &mut Stack) -> Result<()> {
    let [w, idx, _padding_idx, _scale, _sparse] = pop_array::<5>(stack)?;
    push(
        stack,
        misc::embedding(&*w.to_tensor()?, &*idx.to_tensor()?)?,
    )
}

fn embedding_bag_common(
    w: &IValue,
    idx: &IValue,
    offsets: &IValue,
    mode: &IValue,
    psw: &IValue,
    include_last: &IValue,
    padding_idx: Option<i64>,
) -> Result<Vec<Tensor>> {
    let (a, b, c, d) = misc::embedding_bag(
        &*w.to_tensor()?,
        &*idx.to_tensor()?,
        &*offsets.to_tensor()?,
        mode.to_int()?,
        optional_tensor(psw)?.as_deref(),
        include_last.to_bool()?,
        padding_idx,
    )?;
    Ok(vec![a, b, c, d])
}

fn embedding_bag(stack: &mut Stack) -> Result<()> {
    let [w, idx, off, _scale, mode, _sparse, psw, last] = pop_array::<8>(stack)?;
    let r = embedding_bag_common(&w, &idx, &off, &mode, &psw, &last, None)?;
    push_all(stack, r)
}

fn embedding_bag_padding_idx(stack: &mut Stack) -> Result<()> {
    let [w, idx, off, _scale, mode, _sparse, psw, last, pad] = pop_array::<9>(stack)?;
    let r = embedding_bag_common(&w, &idx, &off, &mode, &psw, &last, pad.to_optional_int()?)?;
    push_all(stack, r)
}

fn pad(stack: &mut Stack) -> Result<()> {
    let [x, pads, mode, value] = pop_array::<4>(stack)?;
    let mode = PadMode::parse(mode.to_str()?)?;
    let value = match value {
        IValue::None => 0.0,
        v => v.to_double()?,
    };
    if mode != PadMode::Constant && value != 0.0 {
        return Err(ferrojit_tensor::TensorError::InvalidArgument(format!(
            "Padding mode \"{}\" doesn't take in value argument",
            match mode {
                PadMode::Reflect => "reflect",
                PadMode::Replicate => "replicate",
                _ => "circular",
            }
        ))
        .into());
    }
    push(
        stack,
        misc::pad(&*x.to_tensor()?, &pads.to_int_vec()?, mode, value)?,
    )
}

fn constant_pad_nd(stack: &mut Stack) -> Result<()> {
    let [x, pads, value] = pop_array::<3>(stack)?;
    let r = misc::pad(
        &*x.to_tensor()?,
        &pads.to_int_vec()?,
        PadMode::Constant,
        scalar(&value)?.to_f64(),
    )?;
    push(stack, r)
}

fn pad_mode(stack: &mut Stack, mode: PadMode) -> Result<()> {
    let [x, pads] = pop_array::<2>(stack)?;
    push(
        stack,
        misc::pad(&*x.to_tensor()?, &pads.to_int_vec()?, mode, 0.0)?,
    )
}

fn reflection_pad(stack: &mut Stack) -> Result<()> {
    pad_mode(stack, PadMode::Reflect)
}
fn replication_pad(stack: &mut Stack) -> Result<()> {
    pad_mode(stack, PadMode::Replicate)
}
fn circular_pad(stack: &mut Stack) -> Result<()> {
    pad_mode(stack, PadMode::Circular)
}

fn pixel_shuffle(stack: &mut Stack) -> Result<()> {
    let [x, r] = pop_array::<2>(stack)?;
    push(
        stack,
        misc::pixel_shuffle(&*x.to_tensor()?, r.to_int()?, false)?,
    )
}

fn pixel_unshuffle(stack: &mut Stack) -> Result<()> {
    let [x, r] = pop_array::<2>(stack)?;
    push(
        stack,
        misc::pixel_shuffle(&*x.to_tensor()?, r.to_int()?, true)?,
    )
}

fn one_hot(stack: &mut Stack) -> Result<()> {
    let [x, n] = pop_array::<2>(stack)?;
    push(stack, misc::one_hot(&*x.to_tensor()?, n.to_int()?)?)
}

fn sdpa(stack: &mut Stack) -> Result<()> {
    let [q, k, v, mask, dropout_p, causal, scale, gqa] = pop_array::<8>(stack)?;
    let scale = match scale {
        IValue::None => None,
        s => Some(s.to_double()?),
    };
    let r = misc::scaled_dot_product_attention(
        &*q.to_tensor()?,
        &*k.to_tensor()?,
        &*v.to_tensor()?,
        optional_tensor(&mask)?.as_deref(),
        dropout_p.to_double()?,
        causal.to_bool()?,
        scale,
        gqa.to_bool()?,
    )?;
    push(stack, r)
}

fn cosine_similarity(stack: &mut Stack) -> Result<()> {
    let [a, b, dim, eps] = pop_array::<4>(stack)?;
    let r = misc::cosine_similarity(
        &*a.to_tensor()?,
        &*b.to_tensor()?,
        dim.to_int()?,
        eps.to_double()?,
    )?;
    push(stack, r)
}

fn pairwise_distance(stack: &mut Stack) -> Result<()> {
    let [a, b, p, eps, keepdim] = pop_array::<5>(stack)?;
    let r = misc::pairwise_distance(
        &*a.to_tensor()?,
        &*b.to_tensor()?,
        p.to_double()?,
        eps.to_double()?,
        keepdim.to_bool()?,
    )?;
    push(stack, r)
}

// ----- losses -----------------------------------------------------------------------------

fn mse_loss(stack: &mut Stack) -> Result<()> {
    let [a, b, r] = pop_array::<3>(stack)?;
    push(
        stack,
        loss::mse_loss(&*a.to_tensor()?, &*b.to_tensor()?, reduction(&r)?)?,
    )
}

fn l1_loss(stack: &mut Stack) -> Result<()> {
    let [a, b, r] = pop_array::<3>(stack)?;
    push(
        stack,
        loss::l1_loss(&*a.to_tensor()?, &*b.to_tensor()?, reduction(&r)?)?,
    )
}

fn smooth_l1_loss(stack: &mut Stack) -> Result<()> {
    let [a, b, r, beta] = pop_array::<4>(stack)?;
    let out = loss::smooth_l1_loss(
        &*a.to_tensor()?,
        &*b.to_tensor()?,
        reduction(&r)?,
        beta.to_double()?,
    )?;
    push(stack, out)
}

fn huber_loss(stack: &mut Stack) -> Result<()> {
    let [a, b, r, delta] = pop_array::<4>(stack)?;
    let out = loss::huber_loss(
        &*a.to_tensor()?,
        &*b.to_tensor()?,
        reduction(&r)?,
        delta.to_double()?,
    )?;
    push(stack, out)
}

fn bce(stack: &mut Stack) -> Result<()> {
    let [a, b, w, r] = pop_array::<4>(stack)?;
    let out = loss::binary_cross_entropy(
        &*a.to_tensor()?,
        &*b.to_tensor()?,
        optional_tensor(&w)?.as_deref(),
        reduction(&r)?,
    )?;
    push(stack, out)
}

fn bce_logits(stack: &mut Stack) -> Result<()> {
    let [a, b, w, pw, r] = pop_array::<5>(stack)?;
    let out = loss::binary_cross_entropy_with_logits(
        &*a.to_tensor()?,
        &*b.to_tensor()?,
        optional_tensor(&w)?.as_deref(),
        optional_tensor(&pw)?.as_deref(),
        reduction(&r)?,
    )?;
    push(stack, out)
}

fn kl_div(stack: &mut Stack) -> Result<()> {
    let [a, b, r, log_target] = pop_array::<4>(stack)?;
    let out = loss::kl_div(
        &*a.to_tensor()?,
        &*b.to_tensor()?,
        reduction(&r)?,
        log_target.to_bool()?,
    )?;
    push(stack, out)
}

fn nll_loss(stack: &mut Stack) -> Result<()> {
    let [a, t, w, r, ignore] = pop_array::<5>(stack)?;
    let out = loss::nll_loss(
        &*a.to_tensor()?,
        &*t.to_tensor()?,
        optional_tensor(&w)?.as_deref(),
        reduction(&r)?,
        ignore.to_int()?,
    )?;
    push(stack, out)
}

fn cross_entropy_loss(stack: &mut Stack) -> Result<()> {
    let [a, t, w, r, ignore, smoothing] = pop_array::<6>(stack)?;
    let out = loss::cross_entropy(
        &*a.to_tensor()?,
        &*t.to_tensor()?,
        optional_tensor(&w)?.as_deref(),
        reduction(&r)?,
        ignore.to_int()?,
        smoothing.to_double()?,
    )?;
    push(stack, out)
}

// ----- interpolation ----------------------------------------------------------------------

fn optional_doubles(value: &IValue) -> Result<Option<Vec<f64>>> {
    match value {
        IValue::None => Ok(None),
        v => Ok(Some(v.to_double_vec()?)),
    }
}

fn optional_ints(value: &IValue) -> Result<Option<Vec<i64>>> {
    match value {
        IValue::None => Ok(None),
        v => Ok(Some(v.to_int_vec()?)),
    }
}

fn upsample_vec(
    stack: &mut Stack,
    spatial: usize,
    mode: InterpolateMode,
    has_align: bool,
) -> Result<()> {
    let align = if has_align {
        let [scales] = pop_array::<1>(stack)?;
        let [x, size, align] = pop_array::<3>(stack)?;
        stack.push(x);
        stack.push(size);
        stack.push(scales);
        align.to_bool()?
    } else {
        false
    };
    let [x, size, scales] = pop_array::<3>(stack)?;
    let input = x.to_tensor()?;
    let scales = optional_doubles(&scales)?;
    let out_size = output_size_for(
        &input,
        spatial,
        optional_ints(&size)?.as_deref(),
        scales.as_deref(),
    )?;
    let per_dim: Vec<Option<f64>> = match &scales {
        Some(s) => s.iter().map(|&v| Some(v)).collect(),
        None => vec![None; spatial],
    };
    push(stack, upsample(&input, &out_size, &per_dim, mode, align)?)
}

fn upsample_sized(
    stack: &mut Stack,
    spatial: usize,
    mode: InterpolateMode,
    has_align: bool,
) -> Result<()> {
    let scales = super::pop_vec(stack, spatial)?;
    let align = if has_align {
        let [a] = pop_array::<1>(stack)?;
        a.to_bool()?
    } else {
        false
    };
    let [x, size] = pop_array::<2>(stack)?;
    let per_dim: Vec<Option<f64>> = scales
        .iter()
        .map(|s| match s {
            IValue::None => Ok(None),
            v => v.to_double().map(Some),
        })
        .collect::<Result<_>>()?;
    let input = x.to_tensor()?;
    let out_size = output_size_for(&input, spatial, Some(&size.to_int_vec()?), None)?;
    push(stack, upsample(&input, &out_size, &per_dim, mode, align)?)
}

/// `aten::_upsample_*2d_aa.vec(input, output_size?, align_corners, scale_factors?)`.
fn antialias_vec(stack: &mut Stack, filter: AntialiasFilter) -> Result<()> {
    let [x, size, align, scales] = pop_array::<4>(stack)?;
    let input = x.to_tensor()?;
    let scales = optional_doubles(&scales)?;
    let out_size = output_size_for(
        &input,
        2,
        optional_ints(&size)?.as_deref(),
        scales.as_deref(),
    )?;
    let per_dim: Vec<Option<f64>> = match &scales {
        Some(s) => s.iter().map(|&v| Some(v)).collect(),
        None => vec![None; 2],
    };
    let r = upsample_antialias(&input, &out_size, &per_dim, filter, align.to_bool()?)?;
    push(stack, r)
}

/// `aten::_upsample_*2d_aa(self, output_size, align_corners, scales_h?, scales_w?)`.
fn antialias_sized(stack: &mut Stack, filter: AntialiasFilter) -> Result<()> {
    let [x, size, align, scale_h, scale_w] = pop_array::<5>(stack)?;
    let per_dim = [scale_h, scale_w]
        .iter()
        .map(|s| match s {
            IValue::None => Ok(None),
            v => v.to_double().map(Some),
        })
        .collect::<Result<Vec<_>>>()?;
    let input = x.to_tensor()?;
    let out_size = output_size_for(&input, 2, Some(&size.to_int_vec()?), None)?;
    let r = upsample_antialias(&input, &out_size, &per_dim, filter, align.to_bool()?)?;
    push(stack, r)
}

fn bilinear2d_aa_vec(stack: &mut Stack) -> Result<()> {
    antialias_vec(stack, AntialiasFilter::Bilinear)
}

fn bicubic2d_aa_vec(stack: &mut Stack) -> Result<()> {
    antialias_vec(stack, AntialiasFilter::Bicubic)
}

fn lanczos2d_aa_vec(stack: &mut Stack) -> Result<()> {
    antialias_vec(stack, AntialiasFilter::Lanczos)
}

fn bilinear2d_aa(stack: &mut Stack) -> Result<()> {
    antialias_sized(stack, AntialiasFilter::Bilinear)
}

fn bicubic2d_aa(stack: &mut Stack) -> Result<()> {
    antialias_sized(stack, AntialiasFilter::Bicubic)
}

fn lanczos2d_aa(stack: &mut Stack) -> Result<()> {
    antialias_sized(stack, AntialiasFilter::Lanczos)
}

macro_rules! upsample_kernels {
    ($($name:ident => $f:ident($spatial:expr, $mode:ident, $align:expr);)*) => {
        $(fn $name(stack: &mut Stack) -> Result<()> {
            $f(stack, $spatial, InterpolateMode::$mode, $align)
        })*
    };
}

upsample_kernels! {
    nearest1d_vec => upsample_vec(1, Nearest, false);
    nearest2d_vec => upsample_vec(2, Nearest, false);
    nearest3d_vec => upsample_vec(3, Nearest, false);
    nearest_exact1d_vec => upsample_vec(1, NearestExact, false);
    nearest_exact2d_vec => upsample_vec(2, NearestExact, false);
    nearest_exact3d_vec => upsample_vec(3, NearestExact, false);
    linear1d_vec => upsample_vec(1, Linear, true);
    bilinear2d_vec => upsample_vec(2, Linear, true);
    trilinear3d_vec => upsample_vec(3, Linear, true);
    bicubic2d_vec => upsample_vec(2, Cubic, true);
    nearest1d => upsample_sized(1, Nearest, false);
    nearest2d => upsample_sized(2, Nearest, false);
    nearest3d => upsample_sized(3, Nearest, false);
    nearest_exact1d => upsample_sized(1, NearestExact, false);
    nearest_exact2d => upsample_sized(2, NearestExact, false);
    linear1d => upsample_sized(1, Linear, true);
    bilinear2d => upsample_sized(2, Linear, true);
    trilinear3d => upsample_sized(3, Linear, true);
    bicubic2d => upsample_sized(2, Cubic, true);
}

#[rustfmt::skip]
pub const TABLE: &[KernelTableEntry] = &[
    ("aten::addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor", addbmm),
    ("aten::baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor", baddbmm),
    ("aten::outer(Tensor self, Tensor vec2) -> Tensor", outer),
    ("aten::einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor", einsum),
    ("aten::tensordot(Tensor self, Tensor other, int[] dims_self, int[] dims_other) -> Tensor", tensordot),
    ("aten::conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], SymInt[1] padding=[0], SymInt[1] dilation=[1], SymInt groups=1) -> Tensor", conv_explicit),
    ("aten::conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], str padding=\"valid\", SymInt[1] dilation=[1], SymInt groups=1) -> Tensor", conv_padding_str),
    ("aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor", conv_explicit),
    ("aten::conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], str padding=\"valid\", SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor", conv_padding_str),
    ("aten::conv3d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor", conv_explicit),
    ("aten::conv3d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], str padding=\"valid\", SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor", conv_padding_str),
    ("aten::conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], SymInt[1] padding=[0], SymInt[1] output_padding=[0], SymInt groups=1, SymInt[1] dilation=[1]) -> Tensor", conv_transpose),
    ("aten::conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] output_padding=[0, 0], SymInt groups=1, SymInt[2] dilation=[1, 1]) -> Tensor", conv_transpose),
    ("aten::conv_transpose3d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], SymInt[3] output_padding=[0, 0, 0], SymInt groups=1, SymInt[3] dilation=[1, 1, 1]) -> Tensor", conv_transpose),
    ("aten::convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor", convolution_op),
    ("aten::_convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, bool benchmark, bool deterministic, bool cudnn_enabled, bool allow_tf32) -> Tensor", underscore_convolution),
    ("aten::_convolution.deprecated(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, int[] output_padding, SymInt groups, bool benchmark, bool deterministic, bool cudnn_enabled) -> Tensor", underscore_convolution_deprecated),
    ("aten::max_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], int[1] dilation=[1], bool ceil_mode=False) -> Tensor", max_pool1d),
    ("aten::max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor", max_pool2d),
    ("aten::max_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) -> Tensor", max_pool3d),
    ("aten::max_pool1d_with_indices(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], int[1] dilation=[1], bool ceil_mode=False) -> (Tensor, Tensor)", max_pool1d_with_indices),
    ("aten::max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)", max_pool2d_with_indices),
    ("aten::avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], bool ceil_mode=False, bool count_include_pad=True) -> Tensor", avg_pool1d),
    ("aten::avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor", avg_pool2d),
    ("aten::avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor", avg_pool3d),
    ("aten::adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor", adaptive_avg_pool1d),
    ("aten::adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor", adaptive_avg_pool2d),
    ("aten::adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor", adaptive_avg_pool3d),
    ("aten::adaptive_max_pool1d(Tensor self, int[1] output_size) -> (Tensor, Tensor)", adaptive_max_pool1d),
    ("aten::adaptive_max_pool2d(Tensor self, int[2] output_size) -> (Tensor, Tensor)", adaptive_max_pool2d),
    ("aten::batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor", batch_norm),
    ("aten::instance_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool use_input_stats, float momentum, float eps, bool cudnn_enabled) -> Tensor", instance_norm),
    ("aten::layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1.0000000000000001e-05, bool cudnn_enable=True) -> Tensor", layer_norm),
    ("aten::group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1.0000000000000001e-05, bool cudnn_enabled=True) -> Tensor", group_norm),
    ("aten::log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", log_softmax),
    ("aten::_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", underscore_softmax),
    ("aten::_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", underscore_log_softmax),
    ("aten::dropout(Tensor input, float p, bool train) -> Tensor", dropout),
    ("aten::dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)", dropout_),
    ("aten::feature_dropout(Tensor input, float p, bool train) -> Tensor", feature_dropout),
    ("aten::feature_dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)", feature_dropout_),
    ("aten::embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor", embedding),
    ("aten::embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False, int mode=0, bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False) -> (Tensor, Tensor, Tensor, Tensor)", embedding_bag),
    ("aten::embedding_bag.padding_idx(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq, int mode, bool sparse, Tensor? per_sample_weights, bool include_last_offset, int? padding_idx) -> (Tensor, Tensor, Tensor, Tensor)", embedding_bag_padding_idx),
    ("aten::pad(Tensor self, SymInt[] pad, str mode=\"constant\", float? value=None) -> Tensor", pad),
    ("aten::constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor", constant_pad_nd),
    ("aten::reflection_pad1d(Tensor self, SymInt[2] padding) -> Tensor", reflection_pad),
    ("aten::reflection_pad2d(Tensor self, SymInt[4] padding) -> Tensor", reflection_pad),
    ("aten::replication_pad1d(Tensor self, SymInt[2] padding) -> Tensor", replication_pad),
    ("aten::replication_pad2d(Tensor self, SymInt[4] padding) -> Tensor", replication_pad),
    ("aten::_pad_circular(Tensor self, SymInt[] pad) -> Tensor", circular_pad),
    ("aten::pixel_shuffle(Tensor self, int upscale_factor) -> Tensor", pixel_shuffle),
    ("aten::pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor", pixel_unshuffle),
    ("aten::one_hot(Tensor self, int num_classes=-1) -> Tensor", one_hot),
    ("aten::scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0., bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor", sdpa),
    ("aten::cosine_similarity(Tensor x1, Tensor x2, int dim=1, float eps=1e-08) -> Tensor", cosine_similarity),
    ("aten::pairwise_distance(Tensor x1, Tensor x2, float p=2., float eps=9.9999999999999995e-07, bool keepdim=False) -> Tensor", pairwise_distance),
    ("aten::mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", mse_loss),
    ("aten::l1_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", l1_loss),
    ("aten::smooth_l1_loss(Tensor self, Tensor target, int reduction=1, float beta=1.) -> Tensor", smooth_l1_loss),
    ("aten::huber_loss(Tensor self, Tensor target, int reduction=1, float delta=1.) -> Tensor", huber_loss),
    ("aten::binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=1) -> Tensor", bce),
    ("aten::binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, Tensor? pos_weight=None, int reduction=1) -> Tensor", bce_logits),
    ("aten::kl_div(Tensor self, Tensor target, int reduction=1, *, bool log_target=False) -> Tensor", kl_div),
    ("aten::nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, SymInt ignore_index=-100) -> Tensor", nll_loss),
    ("aten::nll_loss_nd(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, SymInt ignore_index=-100) -> Tensor", nll_loss),
    ("aten::nll_loss2d(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, SymInt ignore_index=-100) -> Tensor", nll_loss),
    ("aten::cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, SymInt ignore_index=-100, float label_smoothing=0.) -> Tensor", cross_entropy_loss),
    ("aten::upsample_nearest1d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor", nearest1d_vec),
    ("aten::upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor", nearest2d_vec),
    ("aten::upsample_nearest3d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor", nearest3d_vec),
    ("aten::_upsample_nearest_exact1d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor", nearest_exact1d_vec),
    ("aten::_upsample_nearest_exact2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor", nearest_exact2d_vec),
    ("aten::_upsample_nearest_exact3d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor", nearest_exact3d_vec),
    ("aten::upsample_linear1d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor", linear1d_vec),
    ("aten::upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor", bilinear2d_vec),
    ("aten::upsample_trilinear3d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor", trilinear3d_vec),
    ("aten::upsample_bicubic2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor", bicubic2d_vec),
    ("aten::_upsample_bilinear2d_aa.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor", bilinear2d_aa_vec),
    ("aten::_upsample_bicubic2d_aa.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor", bicubic2d_aa_vec),
    ("aten::_upsample_lanczos2d_aa.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor", lanczos2d_aa_vec),
    ("aten::_upsample_bilinear2d_aa(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor", bilinear2d_aa),
    ("aten::_upsample_bicubic2d_aa(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor", bicubic2d_aa),
    ("aten::_upsample_lanczos2d_aa(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor", lanczos2d_aa),
    ("aten::upsample_nearest1d(Tensor self, SymInt[1] output_size, float? scales=None) -> Tensor", nearest1d),
    ("aten::upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) -> Tensor", nearest2d),
    ("aten::upsample_nearest3d(Tensor self, SymInt[3] output_size, float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor", nearest3d),
    ("aten::_upsample_nearest_exact1d(Tensor self, SymInt[1] output_size, float? scales=None) -> Tensor", nearest_exact1d),
    ("aten::_upsample_nearest_exact2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) -> Tensor", nearest_exact2d),
    ("aten::upsample_linear1d(Tensor self, SymInt[1] output_size, bool align_corners, float? scales=None) -> Tensor", linear1d),
    ("aten::upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor", bilinear2d),
    ("aten::upsample_trilinear3d(Tensor self, SymInt[3] output_size, bool align_corners, float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor", trilinear3d),
    ("aten::upsample_bicubic2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor", bicubic2d),
];

/// The list type used for `Tensor[]` results.
pub(crate) fn tensor_list(items: Vec<Tensor>) -> IValue {
    IValue::list(Type::Tensor, items.into_iter().map(IValue::from).collect())
}
