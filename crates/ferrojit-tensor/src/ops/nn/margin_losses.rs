//! Margin and embedding losses: `margin_ranking_loss`, `hinge_embedding_loss`,
//! `soft_margin_loss`, `cosine_embedding_loss`, `poisson_nll_loss` and `triplet_margin_loss`
//! (PyTorch composes these from other operators; each is the same composition over this
//! library's operators, so dtypes and float rounding follow PyTorch's), and the native
//! per-sample loops `multi_margin_loss` and `multilabel_margin_loss`.

use super::loss::Reduction;
use super::{from_f64, invalid};
use crate::dtype::{DType, Scalar};
use crate::error::{format_shape, Result, TensorError};
use crate::ops::pointwise::UnaryOp;
use crate::tensor::Tensor;

/// `1e-12` as ATen's Loss.cpp declares it: a `float` constant, widened when it is added.
const COSINE_EPSILON: f64 = 1e-12_f32 as f64;

fn number(value: f64) -> Tensor {
    Tensor::wrapped_scalar(Scalar::Float(value))
}

fn integer(value: i64) -> Tensor {
    Tensor::wrapped_scalar(Scalar::Int(value))
}

fn one() -> Scalar {
    Scalar::Int(1)
}

/// ATen's `apply_loss_reduction`: the mean or the sum of every element, or the tensor itself.
fn apply_reduction(loss: Tensor, reduction: Reduction) -> Result<Tensor> {
    match reduction {
        Reduction::None => Ok(loss),
        Reduction::Mean => loss.mean(None),
        Reduction::Sum => loss.sum(None),
    }
}

/// `value - tensor` as ATen's `operator-(Scalar, Tensor)` computes it: a tensor of `value`
/// in `tensor`'s dtype (so an integer tensor truncates a fractional value) minus `tensor`.
fn scalar_minus(value: f64, tensor: &Tensor) -> Result<Tensor> {
    let filled = Tensor::full(tensor.sizes(), Scalar::Float(value), tensor.dtype())?;
    filled.sub(tensor, &one())
}

/// `margin_ranking_loss(x1, x2, y, margin)`: `max(0, -y * (x1 - x2) + margin)`, broadcast;
/// the margin (a float) makes integer inputs floating.
pub fn margin_ranking_loss(
    input1: &Tensor,
    input2: &Tensor,
    target: &Tensor,
    margin: f64,
    reduction: Reduction,
) -> Result<Tensor> {
    let difference = input1.sub(input2, &one())?;
    let unclamped = target
        .neg()?
        .mul(&difference)?
        .add(&number(margin), &one())?;
    let loss = unclamped.clamp(Some(&Scalar::Int(0)), None)?;
    apply_reduction(loss, reduction)
}

/// `hinge_embedding_loss(x, y, margin)`: `x` where `y != -1`, plus `max(0, margin - x)` where
/// `y != 1` (both where `y` is neither).
pub fn hinge_embedding_loss(
    input: &Tensor,
    target: &Tensor,
    margin: f64,
    reduction: Reduction,
) -> Result<Tensor> {
    let zeros = Tensor::zeros(input.sizes(), input.dtype())?;
    let margin_clamp = scalar_minus(margin, input)?.clamp(Some(&Scalar::Int(0)), None)?;
    let output_margin = Tensor::where_(&target.ne(&integer(1))?, &margin_clamp, &zeros)?;
    let output_self = Tensor::where_(&target.ne(&integer(-1))?, input, &zeros)?;
    apply_reduction(output_margin.add(&output_self, &one())?, reduction)
}

/// `soft_margin_loss(x, y)`: `log1p(exp(-x * y))`, written into a tensor of `x`'s shape and
/// dtype as ATen's out= kernel does (so `y` must broadcast to `x`, and an integer `x` fails).
pub fn soft_margin_loss(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    let product = input.neg()?.mul(target)?;
    if product.sizes() != input.sizes() {
        return Err(invalid(format!(
            "output with shape {} doesn't match the broadcast shape {}",
            format_shape(input.sizes()),
            format_shape(product.sizes())
        )));
    }
    if !input.dtype().is_floating_point() {
        let result_type = if product.dtype().is_floating_point() {
            product.dtype()
        } else {
            DType::default_float()
        };
        return Err(invalid(format!(
            "result type {} can't be cast to the desired output type {}",
            result_type.scalar_type_name(),
            input.dtype().scalar_type_name()
        )));
    }
    let loss = product
        .to_dtype(input.dtype())
        .unary(UnaryOp::Exp)?
        .unary(UnaryOp::Log1p)?;
    apply_reduction(loss, reduction)
}

/// `cosine_embedding_loss(x1, x2, y, margin)`: `1 - cos` where `y == 1`, `max(0, cos -
/// margin)` where `y == -1`, 0 elsewhere; `cos` over the last dim of 1-D (0-D `y`) or 2-D
/// (1-D `y`) inputs, each squared magnitude padded by 1e-12.
pub fn cosine_embedding_loss(
    input1: &Tensor,
    input2: &Tensor,
    target: &Tensor,
    margin: f64,
    reduction: Reduction,
) -> Result<Tensor> {
    let target_dim = target.dim();
    if target_dim > 1 {
        return Err(invalid(
            "0D or 1D target tensor expected, multi-target not supported",
        ));
    }
    let (expected, what) = if target_dim == 1 {
        (2, "1D target tensor expects 2D")
    } else {
        (1, "0D target tensor expects 1D")
    };
    if input1.dim() != expected {
        return Err(invalid(format!(
            "{what} input tensors, but found inputs with sizes {} and {}.",
            format_shape(input1.sizes()),
            format_shape(input2.sizes())
        )));
    }
    let dim = [target_dim as i64];
    let product_sum = input1.mul(input2)?.sum_dim(&dim, false, None)?;
    let magnitude1 = input1
        .mul(input1)?
        .sum_dim(&dim, false, None)?
        .add(&number(COSINE_EPSILON), &one())?;
    let magnitude2 = input2
        .mul(input2)?
        .sum_dim(&dim, false, None)?
        .add(&number(COSINE_EPSILON), &one())?;
    let denominator = magnitude1.mul(&magnitude2)?.unary(UnaryOp::Sqrt)?;
    let cosine = product_sum.div(&denominator, None)?;
    let zeros = Tensor::zeros(cosine.sizes(), cosine.dtype())?;
    let positive = scalar_minus(1.0, &cosine)?;
    let negative = cosine
        .sub(&number(margin), &one())?
        .clamp(Some(&Scalar::Int(0)), None)?;
    let output_positive = Tensor::where_(&target.eq(&integer(1))?, &positive, &zeros)?;
    let output_negative = Tensor::where_(&target.eq(&integer(-1))?, &negative, &zeros)?;
    apply_reduction(output_positive.add(&output_negative, &one())?, reduction)
}

/// `poisson_nll_loss(x, y, log_input, full, eps)`: `exp(x) - y * x` for log-space inputs,
/// else `x - y * log(x + eps)`; `full` adds Stirling's term where `y > 1`.
pub fn poisson_nll_loss(
    input: &Tensor,
    target: &Tensor,
    log_input: bool,
    full: bool,
    eps: f64,
    reduction: Reduction,
) -> Result<Tensor> {
    let mut loss = if log_input {
        input
            .unary(UnaryOp::Exp)?
            .sub(&target.mul(input)?, &one())?
    } else {
        let logarithm = input.add(&number(eps), &one())?.unary(UnaryOp::Log)?;
        input.sub(&target.mul(&logarithm)?, &one())?
    };
    if full {
        let two_pi_target = target.mul(&number(2.0 * std::f64::consts::PI))?;
        let stirling = target
            .mul(&target.unary(UnaryOp::Log)?)?
            .sub(target, &one())?
            .add(
                &two_pi_target.unary(UnaryOp::Log)?.mul(&number(0.5))?,
                &one(),
            )?;
        let stirling = stirling.masked_fill(&target.le(&integer(1))?, &Scalar::Int(0))?;
        // ATen adds in place, so the sum keeps the loss's dtype.
        let sum = loss.add(&stirling, &one())?;
        loss = sum.to_dtype(loss.dtype());
    }
    apply_reduction(loss, reduction)
}

/// `triplet_margin_loss(a, p, n, margin, p_norm, eps, swap)`: `max(0, margin + d(a, p) -
/// d(a, n))` with `pairwise_distance` (with `swap`, `d(a, n)` is the smaller of it and
/// `d(p, n)`).
#[allow(clippy::too_many_arguments)]
pub fn triplet_margin_loss(
    anchor: &Tensor,
    positive: &Tensor,
    negative: &Tensor,
    margin: f64,
    p: f64,
    eps: f64,
    swap: bool,
    reduction: Reduction,
) -> Result<Tensor> {
    let (a, p_dim, n) = (anchor.dim(), positive.dim(), negative.dim());
    if a != p_dim || p_dim != n {
        return Err(invalid(format!(
            "The anchor, positive, and negative tensors are expected to have the same number of dimensions, but got: anchor {a}D, positive {p_dim}D, and negative {n}D inputs"
        )));
    }
    let distance = super::misc::pairwise_distance;
    let distance_positive = distance(anchor, positive, p, eps, false)?;
    let mut distance_negative = distance(anchor, negative, p, eps, false)?;
    if swap {
        let distance_swap = distance(positive, negative, p, eps, false)?;
        distance_negative = distance_negative.minimum(&distance_swap)?;
    }
    let loss = distance_positive
        .add(&number(margin), &one())?
        .sub(&distance_negative, &one())?
        .clamp(Some(&Scalar::Int(0)), None)?;
    apply_reduction(loss, reduction)
}

/// The sample count and class count of a margin loss's input (a 0-D input is one sample of
/// one class), after ATen's check that the class dim is not empty.
fn frames_and_classes(input: &Tensor) -> Result<(usize, usize)> {
    let sizes = input.sizes();
    let valid = match sizes.len() {
        0 => true,
        1 => sizes[0] != 0,
        2 => sizes[1] != 0,
        _ => false,
    };
    if !valid {
        return Err(invalid(format!(
            "Expected non-empty vector or matrix with optional 0-dim batch size, but got: {}",
            format_shape(sizes)
        )));
    }
    Ok(match sizes.len() {
        0 => (1, 1),
        1 => (1, sizes[0]),
        _ => (sizes[0], sizes[1]),
    })
}

fn require_long_target(target: &Tensor) -> Result<()> {
    if target.dtype() == DType::Int64 {
        Ok(())
    } else {
        Err(invalid(format!(
            "expected scalar type Long but found {}",
            target.dtype().scalar_type_name()
        )))
    }
}

fn require_float_input(input: &Tensor, kernel: &'static str) -> Result<DType> {
    if input.dtype().is_floating_point() {
        Ok(input.dtype())
    } else {
        Err(TensorError::NotImplementedForDType {
            op: kernel,
            dtype: input.dtype(),
        })
    }
}

/// Each sample's loss reduced over the batch: the per-sample values (shape `[frames]`, or a
/// 0-D tensor when `scalar_shape`) or their mean or sum.
fn reduce_frames(
    per_frame: Vec<f64>,
    reduction: Reduction,
    scalar_shape: bool,
    dtype: DType,
) -> Tensor {
    match reduction {
        Reduction::None if scalar_shape => from_f64(per_frame, &[], dtype),
        Reduction::None => {
            let frames = per_frame.len();
            from_f64(per_frame, &[frames], dtype)
        }
        Reduction::Sum => from_f64(vec![per_frame.iter().sum()], &[], dtype),
        Reduction::Mean => {
            let frames = per_frame.len() as f64;
            from_f64(vec![per_frame.iter().sum::<f64>() / frames], &[], dtype)
        }
    }
}

/// `multi_margin_loss(x, y, p, margin, weight)`: per sample, the sum over classes `i != y` of
/// `max(0, margin - x[y] + x[i])^p` (times `weight[y]`), divided by the class count.
pub fn multi_margin_loss(
    input: &Tensor,
    target: &Tensor,
    p: i64,
    margin: f64,
    weight: Option<&Tensor>,
    reduction: Reduction,
) -> Result<Tensor> {
    if p != 1 && p != 2 {
        return Err(invalid("only p == 1 and p == 2 supported"));
    }
    let (frames, classes) = frames_and_classes(input)?;
    if target.dim() > 1 || target.numel() != frames {
        return Err(invalid(format!(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of input samples (batch size). Expected target size [{frames}], but got {}. Input has shape {}.",
            format_shape(target.sizes()),
            format_shape(input.sizes())
        )));
    }
    if let Some(weight) = weight {
        if weight.dim() > 1 || weight.numel() != classes {
            return Err(invalid(format!(
                "inconsistent weight size, expected {classes} but got {}",
                format_shape(weight.sizes())
            )));
        }
    }
    let dtype = require_float_input(input, "multi_margin_loss_cpu_kernel")?;
    require_long_target(target)?;
    let values = input.to_f64_vec();
    let labels = target.to_i64_vec();
    let weights = weight.map(|w| w.to_f64_vec());
    let mut per_frame = Vec::with_capacity(frames);
    for frame in 0..frames {
        let label = labels[frame];
        if label < 0 || label >= classes as i64 {
            return Err(invalid("target out of range"));
        }
        let row = &values[frame * classes..(frame + 1) * classes];
        let target_value = row[label as usize];
        let mut sum = 0.0;
        for (class, &value) in row.iter().enumerate() {
            if class == label as usize {
                continue;
            }
            let z = margin - target_value + value;
            if z > 0.0 {
                let mut h = if p == 1 { z } else { z * z };
                if let Some(weights) = &weights {
                    h *= weights[label as usize];
                }
                sum += h;
            }
        }
        per_frame.push(sum / classes as f64);
    }
    Ok(reduce_frames(
        per_frame,
        reduction,
        target.dim() == 0,
        dtype,
    ))
}

/// `multilabel_margin_loss_forward(x, y)`: each sample's targets are `y`'s entries up to the
/// first -1; the loss sums `max(0, 1 - (x[j] - x[i]))` over targets `j` and non-targets `i`,
/// divided by the class count. Returns the loss and `is_target` (1 at each target class, in
/// `x`'s dtype and `y`'s shape).
pub fn multilabel_margin_loss(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
) -> Result<(Tensor, Tensor)> {
    let (frames, classes) = frames_and_classes(input)?;
    let consistent = if input.dim() <= 1 {
        target.dim() <= 1 && target.numel() == classes
    } else {
        target.dim() == 2 && target.sizes()[0] == frames && target.sizes()[1] == classes
    };
    if !consistent {
        return Err(invalid(format!(
            "inconsistent target size: {} for input of size: {}",
            format_shape(target.sizes()),
            format_shape(input.sizes())
        )));
    }
    let dtype = require_float_input(input, "multilabel_margin_loss_forward_out_frame")?;
    require_long_target(target)?;
    let labels = target.to_i64_vec();
    if labels.iter().any(|&l| l < -1 || l >= classes as i64) {
        return Err(invalid("argument #2 'target' is out of range"));
    }
    let values = input.to_f64_vec();
    let mut is_target = vec![0.0; frames * classes];
    let mut per_frame = Vec::with_capacity(frames);
    for frame in 0..frames {
        let row = &values[frame * classes..(frame + 1) * classes];
        let frame_labels = &labels[frame * classes..(frame + 1) * classes];
        let marks = &mut is_target[frame * classes..(frame + 1) * classes];
        let targets: Vec<usize> = frame_labels
            .iter()
            .take_while(|&&l| l >= 0)
            .map(|&l| l as usize)
            .collect();
        for &t in &targets {
            marks[t] = 1.0;
        }
        let mut sum = 0.0;
        for &t in &targets {
            for (class, &value) in row.iter().enumerate() {
                if marks[class] == 0.0 {
                    let z = 1.0 - row[t] + value;
                    if z > 0.0 {
                        sum += z;
                    }
                }
            }
        }
        per_frame.push(sum / classes as f64);
    }
    let loss = reduce_frames(per_frame, reduction, target.dim() <= 1, dtype);
    Ok((loss, from_f64(is_target, target.sizes(), dtype)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One sample, target class 0 of three: the classes 1 and 2 contribute
    /// `max(0, 1 - 0.1 + 0.5) = 1.4` and `max(0, 1 - 0.1 + 0.3) = 1.2`, over 3 classes.
    #[test]
    fn multi_margin_loss_sums_the_violations_over_the_classes() {
        let input = Tensor::from_vec(vec![0.1f64, 0.5, 0.3], &[1, 3]).unwrap();
        let target = Tensor::from_vec(vec![0i64], &[1]).unwrap();
        let loss = multi_margin_loss(&input, &target, 1, 1.0, None, Reduction::Sum).unwrap();
        assert!((loss.to_f64_vec()[0] - 2.6 / 3.0).abs() < 1e-12);
        let bad = Tensor::from_vec(vec![3i64], &[1]).unwrap();
        assert!(multi_margin_loss(&input, &bad, 1, 1.0, None, Reduction::Sum).is_err());
    }
}
