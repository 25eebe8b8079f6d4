//! Loss functions with PyTorch's reductions (0 = none, 1 = mean, 2 = sum).

use super::{from_f64, invalid, require_float};
use crate::dtype::DType;
use crate::error::{format_shape, Result};
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;

/// PyTorch's `at::Reduction` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduction {
    None,
    Mean,
    Sum,
}

impl Reduction {
    pub fn from_i64(value: i64) -> crate::error::Result<Reduction> {
        match value {
            0 => Ok(Reduction::None),
            1 => Ok(Reduction::Mean),
            2 => Ok(Reduction::Sum),
            other => Err(invalid(format!(
                "{other} is not a valid value for reduction"
            ))),
        }
    }
}

fn reduce(values: Vec<f64>, sizes: &[usize], reduction: Reduction, dtype: DType) -> Tensor {
    match reduction {
        Reduction::None => from_f64(values, sizes, dtype),
        Reduction::Sum => from_f64(vec![values.iter().sum()], &[], dtype),
        Reduction::Mean => {
            let n = values.len() as f64;
            from_f64(vec![values.iter().sum::<f64>() / n], &[], dtype)
        }
    }
}

/// Broadcast pointwise loss over (input, target).
fn pointwise(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    op: &'static str,
    f: impl Fn(f64, f64) -> f64,
) -> Result<Tensor> {
    let dtype = crate::dtype::promote_types(input.dtype(), target.dtype());
    if !dtype.is_floating_point() {
        return Err(crate::error::TensorError::NotImplementedForDType { op, dtype });
    }
    let shape = broadcast_shapes(input.sizes(), target.sizes())?;
    let a = input.broadcast_to(&shape)?.to_f64_vec();
    let b = target.broadcast_to(&shape)?.to_f64_vec();
    let values = a.iter().zip(&b).map(|(&x, &y)| f(x, y)).collect();
    Ok(reduce(values, &shape, reduction, dtype))
}

pub fn mse_loss(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    pointwise(input, target, reduction, "mse_cpu", |x, y| {
        (x - y) * (x - y)
    })
}

pub fn l1_loss(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    pointwise(input, target, reduction, "abs_cpu", |x, y| (x - y).abs())
}

pub fn smooth_l1_loss(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    beta: f64,
) -> Result<Tensor> {
    if beta < 0.0 {
        return Err(invalid(
            "smooth_l1_loss does not support negative values for beta.",
        ));
    }
    pointwise(input, target, reduction, "smooth_l1_cpu", |x, y| {
        let d = (x - y).abs();
        if d < beta {
            0.5 * d * d / beta
        } else {
            d - 0.5 * beta
        }
    })
}

pub fn huber_loss(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    delta: f64,
) -> Result<Tensor> {
    pointwise(input, target, reduction, "huber_cpu", |x, y| {
        let d = (x - y).abs();
        if d < delta {
            0.5 * d * d
        } else {
            delta * (d - 0.5 * delta)
        }
    })
}

pub fn binary_cross_entropy(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
) -> Result<Tensor> {
    require_float(input, "binary_cross_entropy")?;
    if input.sizes() != target.sizes() {
        return Err(invalid(format!(
            "Using a target size ({}) that is different to the input size ({}) is deprecated. Please ensure they have the same size.",
            format_shape(target.sizes()),
            format_shape(input.sizes())
        )));
    }
    let x = input.to_f64_vec();
    if x.iter().any(|&v| !(0.0..=1.0).contains(&v)) {
        return Err(invalid("all elements of input should be between 0 and 1"));
    }
    let y = target.to_f64_vec();
    let w = match weight {
        Some(w) => Some(w.broadcast_to(input.sizes())?.to_f64_vec()),
        None => None,
    };
    let values: Vec<f64> = x
        .iter()
        .zip(&y)
        .enumerate()
        .map(|(i, (&p, &t))| {
            let l = -(t * p.ln().max(-100.0) + (1.0 - t) * (1.0 - p).ln().max(-100.0));
            w.as_ref().map_or(l, |w| l * w[i])
        })
        .collect();
    Ok(reduce(values, input.sizes(), reduction, input.dtype()))
}

pub fn binary_cross_entropy_with_logits(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    pos_weight: Option<&Tensor>,
    reduction: Reduction,
) -> Result<Tensor> {
    require_float(input, "binary_cross_entropy_with_logits")?;
    if input.sizes() != target.sizes() {
        return Err(invalid(format!(
            "Target size ({}) must be the same as input size ({})",
            format_shape(target.sizes()),
            format_shape(input.sizes())
        )));
    }
    let x = input.to_f64_vec();
    let y = target.to_f64_vec();
    let w = match weight {
        Some(w) => Some(w.broadcast_to(input.sizes())?.to_f64_vec()),
        None => None,
    };
    let pw = match pos_weight {
        Some(p) => Some(p.broadcast_to(input.sizes())?.to_f64_vec()),
        None => None,
    };
    let values: Vec<f64> = (0..x.len())
        .map(|i| {
            let (z, t) = (x[i], y[i]);
            // log(sigmoid(z)) and log(1 - sigmoid(z)) computed stably.
            let log_sig = -((-z).max(0.0) + ((-z.abs()).exp()).ln_1p());
            let log_one_minus = -(z.max(0.0) + ((-z.abs()).exp()).ln_1p());
            let l = match &pw {
                Some(pw) => -(pw[i] * t * log_sig + (1.0 - t) * log_one_minus),
                None => -(t * log_sig + (1.0 - t) * log_one_minus),
            };
            w.as_ref().map_or(l, |w| l * w[i])
        })
        .collect();
    Ok(reduce(values, input.sizes(), reduction, input.dtype()))
}

pub fn kl_div(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
    log_target: bool,
) -> Result<Tensor> {
    pointwise(input, target, reduction, "kl_div", |x, t| {
        if log_target {
            t.exp() * (t - x)
        } else if t > 0.0 {
            t * (t.ln() - x)
        } else if t == 0.0 {
            0.0
        } else {
            t * (t.ln() - x)
        }
    })
}

/// `nll_loss` over `[N, C, d1...]` (or `[C]`) log-probabilities and class targets.
pub fn nll_loss(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
    ignore_index: i64,
) -> Result<Tensor> {
    let dtype = require_float(input, "nll_loss")?;
    if input.dim() < 1 {
        return Err(invalid("input tensor should be 1D or 2D"));
    }
    if target.dtype() != DType::Int64 && target.dtype() != DType::UInt8 {
        return Err(invalid(format!(
            "expected scalar type Long but found {}",
            target.dtype().scalar_type_name()
        )));
    }
    let (batch, classes, inner, out_sizes) = if input.dim() == 1 {
        if target.dim() != 0 {
            return Err(invalid(
                "0D or 1D target tensor expected, multi-target not supported",
            ));
        }
        (1, input.sizes()[0], 1, vec![])
    } else {
        let mut expected = vec![input.sizes()[0]];
        expected.extend(&input.sizes()[2..]);
        if target.sizes() != &expected[..] {
            return Err(invalid(format!(
                "Expected input batch_size ({}) to match target batch_size ({}).",
                input.sizes()[0],
                target.sizes().first().copied().unwrap_or(0)
            )));
        }
        (
            input.sizes()[0],
            input.sizes()[1],
            input.sizes()[2..].iter().product(),
            expected,
        )
    };
    let w = match weight {
        Some(w) => {
            if w.numel() != classes {
                return Err(invalid(format!(
                    "weight tensor should be defined either for all {classes} classes or no classes but got weight tensor of shape: {}",
                    format_shape(w.sizes())
                )));
            }
            Some(w.to_f64_vec())
        }
        None => None,
    };
    let x = input.to_f64_vec();
    let t = target.to_i64_vec();
    let mut losses = Vec::with_capacity(batch * inner);
    let mut total_weight = 0.0;
    for n in 0..batch {
        for i in 0..inner {
            let c = t[n * inner + i];
            if c == ignore_index {
                losses.push(0.0);
                continue;
            }
            if c < 0 || c as usize >= classes {
                return Err(invalid(format!("Target {c} is out of bounds.")));
            }
            let wc = w.as_ref().map_or(1.0, |w| w[c as usize]);
            total_weight += wc;
            losses.push(-x[(n * classes + c as usize) * inner + i] * wc);
        }
    }
    Ok(match reduction {
        Reduction::None => from_f64(losses, &out_sizes, dtype),
        Reduction::Sum => from_f64(vec![losses.iter().sum()], &[], dtype),
        Reduction::Mean => from_f64(vec![losses.iter().sum::<f64>() / total_weight], &[], dtype),
    })
}

/// `cross_entropy` with class-index targets (int64) or class probabilities (float targets).
pub fn cross_entropy(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
    ignore_index: i64,
    label_smoothing: f64,
) -> Result<Tensor> {
    let dim = if input.dim() == 1 { 0 } else { 1 };
    let logp = input.log_softmax(dim, None)?;
    if target.dtype().is_floating_point() {
        // Probability targets: -sum_c w_c * p_c * logp_c per sample.
        if target.sizes() != input.sizes() {
            return Err(invalid(
                "Expected target size to match input size for probability targets",
            ));
        }
        let classes = input.sizes()[dim as usize];
        let inner: usize = input.sizes()[dim as usize + 1..].iter().product();
        let batch = if input.dim() == 1 {
            1
        } else {
            input.sizes()[0]
        };
        let lp = logp.to_f64_vec();
        let p = target.to_f64_vec();
        let w = weight.map(|w| w.to_f64_vec());
        let mut losses = Vec::new();
        for n in 0..batch {
            for i in 0..inner {
                let mut l = 0.0;
                for c in 0..classes {
                    let idx = (n * classes + c) * inner + i;
                    let pc = p[idx] * (1.0 - label_smoothing) + label_smoothing / classes as f64;
                    l -= w.as_ref().map_or(1.0, |w| w[c]) * pc * lp[idx];
                }
                losses.push(l);
            }
        }
        let mut out_sizes: Vec<usize> = input.sizes().to_vec();
        out_sizes.remove(dim as usize);
        return Ok(match reduction {
            Reduction::None => from_f64(losses, &out_sizes, input.dtype()),
            Reduction::Sum => from_f64(vec![losses.iter().sum()], &[], input.dtype()),
            Reduction::Mean => {
                let n = (batch * inner) as f64;
                from_f64(vec![losses.iter().sum::<f64>() / n], &[], input.dtype())
            }
        });
    }
    let nll = nll_loss(&logp, target, weight, reduction, ignore_index)?;
    if label_smoothing <= 0.0 {
        return Ok(nll);
    }
    // Smoothing term: -sum_c w_c * logp_c / C per sample, ignoring ignore_index targets.
    let classes = input.sizes()[dim as usize];
    let inner: usize = input.sizes()[dim as usize + 1..].iter().product();
    let batch = if input.dim() == 1 {
        1
    } else {
        input.sizes()[0]
    };
    let lp = logp.to_f64_vec();
    let t = target.to_i64_vec();
    let w = weight.map(|w| w.to_f64_vec());
    let mut smooth = Vec::new();
    let mut total_weight = 0.0;
    for n in 0..batch {
        for i in 0..inner {
            let c = t[n * inner + i];
            if c == ignore_index {
                smooth.push(0.0);
                continue;
            }
            total_weight += w.as_ref().map_or(1.0, |w| w[c as usize]);
            let mut s = 0.0;
            for k in 0..classes {
                s -= w.as_ref().map_or(1.0, |w| w[k]) * lp[(n * classes + k) * inner + i];
            }
            smooth.push(s);
        }
    }
    let nll_v = nll.to_f64_vec();
    let eps = label_smoothing;
    let cf = classes as f64;
    Ok(match reduction {
        Reduction::None => from_f64(
            nll_v
                .iter()
                .zip(&smooth)
                .map(|(a, s)| (1.0 - eps) * a + eps / cf * s)
                .collect(),
            nll.sizes(),
            input.dtype(),
        ),
        Reduction::Sum => from_f64(
            vec![(1.0 - eps) * nll_v[0] + eps / cf * smooth.iter().sum::<f64>()],
            &[],
            input.dtype(),
        ),
        Reduction::Mean => {
            let denom = if w.is_some() {
                total_weight
            } else {
                smooth
                    .iter()
                    .zip(&t)
                    .filter(|(_, &c)| c != ignore_index)
                    .count() as f64
            };
            from_f64(
                vec![(1.0 - eps) * nll_v[0] + eps / cf * smooth.iter().sum::<f64>() / denom],
                &[],
                input.dtype(),
            )
        }
    })
}
