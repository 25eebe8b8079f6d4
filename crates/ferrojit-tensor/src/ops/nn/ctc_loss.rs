//! Connectionist temporal classification loss (`_ctc_loss` and the `ctc_loss` composite):
//! the forward variables alpha of Graves et al. (2006) in log space, computed in the input's
//! precision as ATen's CPU kernel does, with its checks and messages.

use super::{from_f64, invalid};
use crate::dtype::{DType, Scalar};
use crate::error::{Result, TensorError};
use crate::tensor::Tensor;

/// Where ATen's argument checks say they ran.
const CHECKED_FROM: &str = "ctc_loss_allocate_outputs";

/// The float types the CPU kernel runs in (f32 for float, f64 for double).
trait LogSpace:
    Copy
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
{
    const NEG_INFINITY: Self;
    const ZERO: Self;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn of(value: f64) -> Self;
    fn wide(self) -> f64;
}

impl LogSpace for f32 {
    const NEG_INFINITY: Self = f32::NEG_INFINITY;
    const ZERO: Self = 0.0;
    fn exp(self) -> Self {
        f32::exp(self)
    }
    fn ln(self) -> Self {
        f32::ln(self)
    }
    fn of(value: f64) -> Self {
        value as f32
    }
    fn wide(self) -> f64 {
        f64::from(self)
    }
}

impl LogSpace for f64 {
    const NEG_INFINITY: Self = f64::NEG_INFINITY;
    const ZERO: Self = 0.0;
    fn exp(self) -> Self {
        f64::exp(self)
    }
    fn ln(self) -> Self {
        f64::ln(self)
    }
    fn of(value: f64) -> Self {
        value
    }
    fn wide(self) -> f64 {
        self
    }
}

fn max<T: LogSpace>(a: T, b: T) -> T {
    if b > a {
        b
    } else {
        a
    }
}

/// The legacy type name ATen's argument checks print (`torch.FloatTensor`).
fn legacy_type_name(dtype: DType) -> String {
    format!("torch.{}Tensor", dtype.scalar_type_name())
}

/// The checked geometry of the targets: for each batch entry, where its labels start (in
/// elements of the contiguous target values) and the step between labels.
struct TargetLayout {
    offsets: Vec<usize>,
    stride: usize,
    max_target_length: usize,
}

fn check_lengths(name: &str, lengths: &[i64], at_most: Option<usize>) -> Result<()> {
    for &length in lengths {
        if length < 0 {
            return Err(invalid(format!(
                "Expected {name} to have value at least 0, but got value {length} (while \
                 checking arguments for {CHECKED_FROM})"
            )));
        }
        if let Some(limit) = at_most {
            if length as usize > limit {
                return Err(invalid(format!(
                    "Expected {name} to have value at most {limit}, but got value {length} \
                     (while checking arguments for {CHECKED_FROM})"
                )));
            }
        }
    }
    Ok(())
}

fn target_layout(targets: &Tensor, target_lengths: &[i64], batch: usize) -> Result<TargetLayout> {
    check_lengths("target_lengths", target_lengths, None)?;
    let max_target_length = target_lengths.iter().copied().max().unwrap_or(0) as usize;
    let size_refusal = |expected: usize, dim: usize| {
        invalid(format!(
            "Expected tensor to have size {expected} at dimension {dim}, but got size {} for \
             argument #2 'targets' (while checking arguments for {CHECKED_FROM})",
            targets.sizes()[dim]
        ))
    };
    if targets.dim() == 1 {
        // Concatenated targets: entry b's labels follow those of the entries before it.
        let mut offsets = Vec::with_capacity(batch);
        let mut position = 0usize;
        for &length in target_lengths {
            offsets.push(position);
            position += length as usize;
        }
        if targets.sizes()[0] != position {
            return Err(size_refusal(position, 0));
        }
        return Ok(TargetLayout {
            offsets,
            stride: 1,
            max_target_length,
        });
    }
    // Padded targets, one row per batch entry.
    if targets.sizes()[0] != batch {
        return Err(size_refusal(batch, 0));
    }
    let width = targets.sizes()[1];
    if width < max_target_length {
        return Err(invalid(format!(
            "Expected tensor to have size at least {max_target_length} at dimension 1, but got \
             size {width} for argument #2 'targets' (while checking arguments for \
             {CHECKED_FROM})"
        )));
    }
    Ok(TargetLayout {
        offsets: (0..batch).map(|b| b * width).collect(),
        stride: 1,
        max_target_length,
    })
}

/// The checked arguments of `_ctc_loss` and its backward: the sizes of `log_probs`, the
/// target layout and the target labels as int64 values.
struct CheckedArguments {
    max_input_length: usize,
    batch: usize,
    labels: usize,
    layout: TargetLayout,
    target_values: Vec<i64>,
}

/// ATen's argument checks of `_ctc_loss` (`log_probs` `[T, N, C]` float, `targets` int64 or
/// int32, one length per batch entry, every label in range).
fn check_arguments(
    log_probs: &Tensor,
    targets: &Tensor,
    input_lengths: &[i64],
    target_lengths: &[i64],
    blank: i64,
) -> Result<CheckedArguments> {
    if !matches!(log_probs.dtype(), DType::Float32 | DType::Float64) {
        return Err(TensorError::NotImplementedForDType {
            op: "ctc_loss_cpu",
            dtype: log_probs.dtype(),
        });
    }
    if !matches!(targets.dtype(), DType::Int64 | DType::Int32) {
        return Err(invalid(format!(
            "Expected tensor for argument #2 'targets' to have scalar type Int; but got {} \
             instead (while checking arguments for {CHECKED_FROM})",
            legacy_type_name(targets.dtype())
        )));
    }
    if log_probs.dim() != 3 {
        return Err(invalid(format!(
            "Expected 3-dimensional tensor, but got {}-dimensional tensor for argument #1 \
             'log_probs' (while checking arguments for {CHECKED_FROM})",
            log_probs.dim()
        )));
    }
    if !(1..3).contains(&targets.dim()) {
        return Err(invalid(format!(
            "Expected 1 to 2 dimensions, but got {}-dimensional tensor for argument #2 \
             'targets' (while checking arguments for {CHECKED_FROM})",
            targets.dim()
        )));
    }
    let (max_input_length, batch, labels) = (
        log_probs.sizes()[0],
        log_probs.sizes()[1],
        log_probs.sizes()[2],
    );
    if blank < 0 || blank as usize >= labels {
        return Err(invalid("blank must be in label range"));
    }
    if input_lengths.len() != batch {
        return Err(invalid("input_lengths must be of size batch_size"));
    }
    if target_lengths.len() != batch {
        return Err(invalid("target_lengths must be of size batch_size"));
    }
    let layout = target_layout(targets, target_lengths, batch)?;
    check_lengths("input_lengths", input_lengths, Some(max_input_length))?;
    let target_values: Vec<i64> = targets.to_dtype(DType::Int64).contiguous().to_vec()?;
    for (b, &length) in target_lengths.iter().enumerate() {
        let start = layout.offsets[b];
        for k in 0..length as usize {
            let label = target_values[start + k * layout.stride];
            // ATen reads out of bounds here; ferrojit refuses instead.
            if label < 0 || label as usize >= labels {
                return Err(invalid(format!(
                    "ctc_loss: target label {label} of batch entry {b} is outside [0, {labels})"
                )));
            }
        }
    }
    Ok(CheckedArguments {
        max_input_length,
        batch,
        labels,
        layout,
        target_values,
    })
}

/// `_ctc_loss`: the negative log likelihood of each batch entry (`[N]`) and the log alphas
/// (`[N, T, 2 * max_target_length + 1]`). `log_probs` is `[T, N, C]` log-softmax output,
/// `targets` `[N, S]` padded or 1-D concatenated labels (int64 or int32).
pub fn ctc_loss_forward(
    log_probs: &Tensor,
    targets: &Tensor,
    input_lengths: &[i64],
    target_lengths: &[i64],
    blank: i64,
) -> Result<(Tensor, Tensor)> {
    let checked = check_arguments(log_probs, targets, input_lengths, target_lengths, blank)?;
    let (max_input_length, batch) = (checked.max_input_length, checked.batch);
    let probabilities = log_probs.to_dtype(DType::Float64).contiguous().to_f64_vec();
    let problem = CtcProblem {
        log_probs: &probabilities,
        max_input_length,
        batch,
        labels: checked.labels,
        targets: &checked.target_values,
        layout: &checked.layout,
        input_lengths,
        target_lengths,
        blank: blank as usize,
    };
    let (losses, alphas) = if log_probs.dtype() == DType::Float32 {
        problem.solve::<f32>()
    } else {
        problem.solve::<f64>()
    };
    let width = 2 * checked.layout.max_target_length + 1;
    Ok((
        from_f64(losses, &[batch], log_probs.dtype()),
        from_f64(alphas, &[batch, max_input_length, width], log_probs.dtype()),
    ))
}

/// `_ctc_loss_backward`: the gradient ATen's CPU kernel gives `log_probs` from the gradient
/// of the losses (`grad`, `[N]`) and the forward's outputs (`neg_log_likelihood`, `log_alpha`).
/// It is not the derivative of the loss with respect to `log_probs`: it assumes `log_probs`
/// came from a log-softmax and gives `(exp(log_probs) - posterior) * grad`, the posterior of
/// each label at each step from the forward (alpha) and backward (beta) variables. Steps past
/// an entry's input length get zeros, and so does an entry with an infinite loss when
/// `zero_infinity`.
#[allow(clippy::too_many_arguments)]
pub fn ctc_loss_backward(
    grad: &Tensor,
    log_probs: &Tensor,
    targets: &Tensor,
    input_lengths: &[i64],
    target_lengths: &[i64],
    neg_log_likelihood: &Tensor,
    log_alpha: &Tensor,
    blank: i64,
    zero_infinity: bool,
) -> Result<Tensor> {
    let checked = check_arguments(log_probs, targets, input_lengths, target_lengths, blank)?;
    let (max_input_length, batch) = (checked.max_input_length, checked.batch);
    let width = 2 * checked.layout.max_target_length + 1;
    let expect_sizes = |tensor: &Tensor, name: &str, sizes: &[usize]| {
        if tensor.sizes() == sizes {
            Ok(())
        } else {
            Err(invalid(format!(
                "_ctc_loss_backward: expected {name} of shape {}, got {}",
                crate::error::format_shape(sizes),
                crate::error::format_shape(tensor.sizes())
            )))
        }
    };
    expect_sizes(grad, "grad", &[batch])?;
    expect_sizes(neg_log_likelihood, "neg_log_likelihood", &[batch])?;
    expect_sizes(log_alpha, "log_alpha", &[batch, max_input_length, width])?;
    let probabilities = log_probs.to_dtype(DType::Float64).contiguous().to_f64_vec();
    let problem = CtcProblem {
        log_probs: &probabilities,
        max_input_length,
        batch,
        labels: checked.labels,
        targets: &checked.target_values,
        layout: &checked.layout,
        input_lengths,
        target_lengths,
        blank: blank as usize,
    };
    let forward = ForwardResults {
        grad: &grad.to_dtype(DType::Float64).contiguous().to_f64_vec(),
        neg_log_likelihood: &neg_log_likelihood
            .to_dtype(DType::Float64)
            .contiguous()
            .to_f64_vec(),
        log_alpha: &log_alpha.to_dtype(DType::Float64).contiguous().to_f64_vec(),
        zero_infinity,
    };
    let gradient = if log_probs.dtype() == DType::Float32 {
        problem.gradient::<f32>(&forward)
    } else {
        problem.gradient::<f64>(&forward)
    };
    Ok(from_f64(
        gradient,
        &[max_input_length, batch, checked.labels],
        log_probs.dtype(),
    ))
}

/// What the backward reads besides the problem, widened to f64.
struct ForwardResults<'a> {
    grad: &'a [f64],
    neg_log_likelihood: &'a [f64],
    log_alpha: &'a [f64],
    zero_infinity: bool,
}

struct CtcProblem<'a> {
    log_probs: &'a [f64],
    max_input_length: usize,
    batch: usize,
    labels: usize,
    targets: &'a [i64],
    layout: &'a TargetLayout,
    input_lengths: &'a [i64],
    target_lengths: &'a [i64],
    blank: usize,
}

impl CtcProblem<'_> {
    /// The losses and the alphas, widened to f64 (their values are those of `T`).
    fn solve<T: LogSpace>(&self) -> (Vec<f64>, Vec<f64>) {
        let width = 2 * self.layout.max_target_length + 1;
        let steps = self.max_input_length;
        // ATen fills the first time step with -inf; the entries no step reaches read 0.
        let mut alphas = vec![T::ZERO; self.batch * steps * width];
        let mut losses = Vec::with_capacity(self.batch);
        let log_prob = |t: usize, b: usize, c: usize| -> T {
            T::of(self.log_probs[(t * self.batch + b) * self.labels + c])
        };
        for b in 0..self.batch {
            let input_length = self.input_lengths[b] as usize;
            let target_length = self.target_lengths[b] as usize;
            let start = self.layout.offsets[b];
            // The extended label sequence: blanks around and between the target labels.
            let prime = |s: usize| -> usize {
                if s.is_multiple_of(2) {
                    self.blank
                } else {
                    self.targets[start + (s / 2) * self.layout.stride] as usize
                }
            };
            let alpha = &mut alphas[b * steps * width..(b + 1) * steps * width];
            if steps > 0 {
                alpha[..width].fill(T::NEG_INFINITY);
                alpha[0] = log_prob(0, b, self.blank);
                if target_length > 0 {
                    alpha[1] = log_prob(0, b, prime(1));
                }
            }
            for t in 1..input_length {
                for s in 0..2 * target_length + 1 {
                    let current = prime(s);
                    let previous = &alpha[(t - 1) * width..t * width];
                    let la1 = previous[s];
                    let mut largest = la1;
                    let la2 = if s > 0 {
                        largest = max(largest, previous[s - 1]);
                        previous[s - 1]
                    } else {
                        T::NEG_INFINITY
                    };
                    let la3 = if s > 1 && prime(s - 2) != current {
                        largest = max(largest, previous[s - 2]);
                        previous[s - 2]
                    } else {
                        T::NEG_INFINITY
                    };
                    if largest == T::NEG_INFINITY {
                        largest = T::ZERO;
                    }
                    let sum = (la1 - largest).exp() + (la2 - largest).exp() + (la3 - largest).exp();
                    alpha[t * width + s] = sum.ln() + largest + log_prob(t, b, current);
                }
            }
            let loss = if input_length == 0 {
                // No frames: only the empty target is possible.
                if target_length == 0 {
                    T::ZERO
                } else {
                    T::of(f64::INFINITY)
                }
            } else {
                let last = &alpha[(input_length - 1) * width..input_length * width];
                let l1 = last[2 * target_length];
                let l2 = if target_length > 0 {
                    last[2 * target_length - 1]
                } else {
                    T::NEG_INFINITY
                };
                let mut m = max(l1, l2);
                if m == T::NEG_INFINITY {
                    m = T::ZERO;
                }
                let likelihood = ((l1 - m).exp() + (l2 - m).exp()).ln() + m;
                T::of(-likelihood.wide())
            };
            losses.push(loss.wide());
        }
        (losses, alphas.into_iter().map(LogSpace::wide).collect())
    }

    /// The extended label sequence of entry `b`: blanks around and between its labels.
    fn prime(&self, b: usize, s: usize) -> usize {
        if s.is_multiple_of(2) {
            self.blank
        } else {
            self.targets[self.layout.offsets[b] + (s / 2) * self.layout.stride] as usize
        }
    }

    /// `_ctc_loss_backward`'s values (`[T, N, C]`, widened to f64), computed in `T` as the
    /// CPU kernel does: the backward variables beta in log space (Graves et al., eqs. 10-11),
    /// the log of the summed alpha * beta of each (step, label), then eq. 16 with the
    /// log-softmax folded in.
    fn gradient<T: LogSpace>(&self, forward: &ForwardResults) -> Vec<f64> {
        let width = 2 * self.layout.max_target_length + 1;
        let steps = self.max_input_length;
        let labels = self.labels;
        // Before the last loop: the log of the collected alpha * beta (an empty sum is -inf).
        let mut grad = vec![T::NEG_INFINITY; steps * self.batch * labels];
        let mut beta = vec![T::NEG_INFINITY; steps * width];
        let at = |t: usize, b: usize, c: usize| (t * self.batch + b) * labels + c;
        let log_prob = |t: usize, b: usize, c: usize| -> T { T::of(self.log_probs[at(t, b, c)]) };
        let infinity = T::of(f64::INFINITY);
        for b in 0..self.batch {
            let nll = T::of(forward.neg_log_likelihood[b]);
            if forward.zero_infinity && nll == infinity {
                for t in 0..steps {
                    grad[at(t, b, 0)..at(t, b, 0) + labels].fill(T::ZERO);
                }
                continue;
            }
            let alpha =
                |t: usize, s: usize| -> T { T::of(forward.log_alpha[(b * steps + t) * width + s]) };
            let input_length = self.input_lengths[b] as usize;
            let target_length = self.target_lengths[b] as usize;
            let last_state = 2 * target_length;
            beta.fill(T::NEG_INFINITY);
            if input_length > 0 {
                let t = input_length - 1;
                beta[t * width + last_state] = log_prob(t, b, self.blank);
                grad[at(t, b, self.blank)] = alpha(t, last_state) + beta[t * width + last_state];
                if target_length > 0 {
                    // A blank and a label: different classes, so no log-sum is needed.
                    let label = self.prime(b, last_state - 1);
                    beta[t * width + last_state - 1] = log_prob(t, b, label);
                    grad[at(t, b, label)] =
                        alpha(t, last_state - 1) + beta[t * width + last_state - 1];
                }
            }
            for t in (0..input_length.saturating_sub(1)).rev() {
                for s in (0..=last_state).rev() {
                    let current = self.prime(b, s);
                    let next = &beta[(t + 1) * width..(t + 2) * width];
                    let lb1 = next[s];
                    let mut largest = lb1;
                    let lb2 = if s < last_state {
                        largest = max(largest, next[s + 1]);
                        next[s + 1]
                    } else {
                        T::NEG_INFINITY
                    };
                    let lb3 = if s + 1 < last_state && self.prime(b, s + 2) != current {
                        largest = max(largest, next[s + 2]);
                        next[s + 2]
                    } else {
                        T::NEG_INFINITY
                    };
                    if largest == T::NEG_INFINITY {
                        largest = T::ZERO;
                    }
                    let sum = (lb1 - largest).exp() + (lb2 - largest).exp() + (lb3 - largest).exp();
                    let value = sum.ln() + largest + log_prob(t, b, current);
                    beta[t * width + s] = value;
                    // collected[t, label] log-plus= alpha[t, s] + beta[t, s]
                    let log_alpha_beta = alpha(t, s) + value;
                    let collected = &mut grad[at(t, b, current)];
                    if *collected == T::NEG_INFINITY {
                        *collected = log_alpha_beta;
                    } else {
                        let m = max(*collected, log_alpha_beta);
                        *collected = ((*collected - m).exp() + (log_alpha_beta - m).exp()).ln() + m;
                    }
                }
            }
            let scale = T::of(forward.grad[b]);
            for t in 0..input_length {
                for c in 0..labels {
                    let lp = log_prob(t, b, c);
                    let slot = &mut grad[at(t, b, c)];
                    *slot = (lp.exp() - (*slot + nll - lp).exp()) * scale;
                }
            }
            for t in input_length..steps {
                grad[at(t, b, 0)..at(t, b, 0) + labels].fill(T::ZERO);
            }
        }
        grad.into_iter().map(LogSpace::wide).collect()
    }
}

/// `ctc_loss`: `_ctc_loss`'s losses with infinities zeroed when `zero_infinity`, then the
/// mean of the losses divided by the target lengths (at least 1), their sum, or the losses
/// (reduction 0, or any other value, as ATen takes it). A 2-D `log_probs` is one unbatched
/// sequence.
pub fn ctc_loss(
    log_probs: &Tensor,
    targets: &Tensor,
    input_lengths: &[i64],
    target_lengths: &[i64],
    blank: i64,
    reduction: i64,
    zero_infinity: bool,
) -> Result<Tensor> {
    let batched = log_probs.dim() == 3;
    let log_probs = if batched {
        log_probs.clone()
    } else {
        log_probs.unsqueeze(1)?
    };
    let targets = targets.to_dtype(DType::Int64);
    let (mut losses, _) =
        ctc_loss_forward(&log_probs, &targets, input_lengths, target_lengths, blank)?;
    if zero_infinity {
        let infinite = losses.eq(&Tensor::wrapped_scalar(Scalar::Float(f64::INFINITY)))?;
        let zero = Tensor::zeros(&[], losses.dtype())?;
        losses = Tensor::where_(&infinite, &zero, &losses)?;
    }
    match reduction {
        1 => {
            let lengths: Vec<f64> = target_lengths.iter().map(|&l| l.max(1) as f64).collect();
            let lengths = from_f64(lengths, &[target_lengths.len()], losses.dtype());
            losses.div(&lengths, None)?.mean(None)
        }
        2 => losses.sum(None),
        _ if batched => Ok(losses),
        _ => losses.squeeze_dim(0),
    }
}
