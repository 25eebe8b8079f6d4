//! The gradient kernel of batch normalization (what ATen's `native_batch_norm_backward`
//! computes, for the autograd formulas of the batch norm operators): per channel,
//! one pass for the sums of `grad_out` and `(x - mean) * grad_out`, one for the input's
//! gradient, read in place from float storages. Sums run in f64 and each result is rounded
//! once to the input's dtype.

use super::norm_backward::NormGradients;
use super::{from_f64, invalid, require_float};
use crate::element::Element;
use crate::error::{format_shape, Result};
use crate::macros::dispatch_dtype;
use crate::ops::parallel::{num_threads, PARALLEL_THRESHOLD};
use crate::tensor::Tensor;

/// The statistics a backward normalizes with: per channel (mean, 1 / sqrt(var + eps)).
pub enum BatchNormStatistics<'a> {
    /// Training: the batch's statistics, computed again from the input as the forward
    /// computed them (the autograd formulas of the batch norm operators save none).
    FromInput,
    /// Evaluation: the running statistics.
    Running {
        mean: &'a Tensor,
        variance: &'a Tensor,
    },
}

/// The gradients of `batch_norm(input, weight, ...)` for `grad_out`, with the statistics
/// `statistics` names, as PyTorch's CPU kernel defines them: in training,
/// `dx = (g - mean(g) - (x - mean) * invstd^2 * mean((x - mean) * g)) * invstd * weight`
/// over each channel's batch and positions; in evaluation, `dx = g * invstd * weight`; and
/// `dweight = sum((x - mean) * g) * invstd`, `dbias = sum(g)` per channel (each with
/// `[channels]` elements).
pub fn batch_norm_backward(
    grad_out: &Tensor,
    input: &Tensor,
    weight: Option<&Tensor>,
    statistics: BatchNormStatistics,
    eps: f64,
    output_mask: [bool; 3],
) -> Result<NormGradients> {
    let op = "native_batch_norm_backward";
    let dtype = require_float(input, "batch_norm_backward_cpu")?;
    if input.dim() < 2 {
        return Err(invalid(format!(
            "{op}: expected 2D or higher input, but got input of size {}",
            format_shape(input.sizes())
        )));
    }
    if grad_out.sizes() != input.sizes() {
        return Err(invalid(format!(
            "{op}: expected grad_out of size {}, but got grad_out of size {}",
            format_shape(input.sizes()),
            format_shape(grad_out.sizes())
        )));
    }
    let layout = Layout {
        batch: input.sizes()[0],
        channels: input.sizes()[1],
        inner: input.sizes()[2..].iter().product(),
    };
    let per_channel = |tensor: &Tensor, what: &str| -> Result<Vec<f64>> {
        if tensor.numel() != layout.channels {
            return Err(invalid(format!(
                "{op}: expected {what} to have {} elements, but got {what} of size {}",
                layout.channels,
                format_shape(tensor.sizes())
            )));
        }
        Ok(tensor.to_f64_vec())
    };
    let weight = weight.map(|w| per_channel(w, "weight")).transpose()?;
    let (stats, train) = match statistics {
        BatchNormStatistics::Running { mean, variance } => {
            let means = per_channel(mean, "running_mean")?;
            let variances = per_channel(variance, "running_var")?;
            let stats = means
                .into_iter()
                .zip(variances)
                .map(|(m, v)| (m, 1.0 / (v + eps).sqrt()))
                .collect();
            (stats, false)
        }
        BatchNormStatistics::FromInput => (Vec::new(), true),
    };
    let request = Request {
        stats,
        weight,
        train,
        eps,
        output_mask,
    };
    let (grad_input, grad_weight, grad_bias) = dispatch_dtype!(dtype, T => {
        input.with_elements::<T, _>(|x| {
            grad_out.with_elements::<T, _>(|g| {
                let (grad_input, grad_weight, grad_bias) = request.run(&layout, x, g);
                (grad_input.map(|values| Tensor::from_values(values, input.sizes())), grad_weight, grad_bias)
            })
        })
    });
    let channels = [layout.channels];
    Ok((
        grad_input,
        output_mask[1].then(|| from_f64(grad_weight, &channels, dtype)),
        output_mask[2].then(|| from_f64(grad_bias, &channels, dtype)),
    ))
}

/// How a `[batch, channels, inner...]` tensor is laid out: channel `c` of sample `n` is the
/// contiguous plane `(n * channels + c) * inner ..` of length `inner`.
struct Layout {
    batch: usize,
    channels: usize,
    inner: usize,
}

impl Layout {
    fn planes_of_channel(
        &self,
        channel: usize,
    ) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
        (0..self.batch).map(move |n| {
            let start = (n * self.channels + channel) * self.inner;
            start..start + self.inner
        })
    }

    fn count(&self) -> usize {
        self.batch * self.inner
    }
}

struct Request {
    /// (mean, invstd) per channel; empty when they are to be computed from the input.
    stats: Vec<(f64, f64)>,
    weight: Option<Vec<f64>>,
    train: bool,
    eps: f64,
    output_mask: [bool; 3],
}

/// One channel's sums: (mean, invstd, sum of g, sum of (x - mean) * g).
type ChannelSums = (f64, f64, f64, f64);

impl Request {
    fn run<T: Element>(
        &self,
        layout: &Layout,
        x: &[T],
        g: &[T],
    ) -> (Option<Vec<T>>, Vec<f64>, Vec<f64>) {
        let parallel = x.len() >= PARALLEL_THRESHOLD && num_threads() > 1;
        let sums: Vec<ChannelSums> = if parallel {
            use rayon::prelude::*;
            (0..layout.channels)
                .into_par_iter()
                .map(|c| self.channel_sums(layout, c, x, g))
                .collect()
        } else {
            (0..layout.channels)
                .map(|c| self.channel_sums(layout, c, x, g))
                .collect()
        };
        let grad_weight = sums.iter().map(|s| s.3 * s.1).collect();
        let grad_bias = sums.iter().map(|s| s.2).collect();
        if !self.output_mask[0] {
            return (None, grad_weight, grad_bias);
        }
        let count = layout.count() as f64;
        // dx = g * a + x * b + c per channel, the training formula expanded:
        // (g - sum_g / N - (x - mean) * invstd^2 * dotp / N) * invstd * w.
        let coefficients: Vec<(f64, f64, f64)> = sums
            .iter()
            .enumerate()
            .map(|(c, &(mean, invstd, sum_g, dotp))| {
                let scale = invstd * self.weight.as_ref().map_or(1.0, |w| w[c]);
                if self.train {
                    let k = dotp * invstd * invstd / count;
                    (scale, -k * scale, (mean * k - sum_g / count) * scale)
                } else {
                    (scale, 0.0, 0.0)
                }
            })
            .collect();
        let mut grad_input = vec![T::from_f64(0.0); x.len()];
        let plane = |index: usize, out: &mut [T]| {
            let (a, b, c) = coefficients[index % layout.channels];
            let start = index * layout.inner;
            let (xs, gs) = (&x[start..][..layout.inner], &g[start..][..layout.inner]);
            for ((slot, &xv), &gv) in out.iter_mut().zip(xs).zip(gs) {
                *slot = T::from_f64(gv.to_f64() * a + xv.to_f64() * b + c);
            }
        };
        if layout.inner > 0 {
            if parallel {
                use rayon::prelude::*;
                grad_input
                    .par_chunks_mut(layout.inner)
                    .enumerate()
                    .for_each(|(index, out)| plane(index, out));
            } else {
                for (index, out) in grad_input.chunks_mut(layout.inner).enumerate() {
                    plane(index, out);
                }
            }
        }
        (Some(grad_input), grad_weight, grad_bias)
    }

    /// Channel `c`'s statistics and sums; the statistics (when not given) two-pass in f64, as
    /// the forward computes them.
    fn channel_sums<T: Element>(&self, layout: &Layout, c: usize, x: &[T], g: &[T]) -> ChannelSums {
        let (mean, invstd) = match self.stats.get(c) {
            Some(&stats) => stats,
            None => {
                let count = layout.count() as f64;
                let sum: f64 = layout
                    .planes_of_channel(c)
                    .map(|p| x[p].iter().map(|v| v.to_f64()).sum::<f64>())
                    .sum();
                let mean = sum / count;
                let squares: f64 = layout
                    .planes_of_channel(c)
                    .map(|p| {
                        x[p].iter()
                            .map(|v| (v.to_f64() - mean) * (v.to_f64() - mean))
                            .sum::<f64>()
                    })
                    .sum();
                (mean, 1.0 / (squares / count + self.eps).sqrt())
            }
        };
        let (mut sum_g, mut dotp) = (0.0, 0.0);
        for p in layout.planes_of_channel(c) {
            for (&xv, &gv) in x[p.clone()].iter().zip(&g[p]) {
                let gv = gv.to_f64();
                sum_g += gv;
                dotp += (xv.to_f64() - mean) * gv;
            }
        }
        (mean, invstd, sum_g, dotp)
    }
}

#[cfg(test)]
mod tests {
    use super::{batch_norm_backward, BatchNormStatistics};
    use crate::tensor::Tensor;

    fn values(count: usize, seed: f64) -> Vec<f64> {
        (0..count)
            .map(|i| ((i as f64 + seed) * 0.731).sin() * 2.0 + 0.3)
            .collect()
    }

    /// The training formula, written element by element the long way (batch mean and
    /// variance, x_hat, the three means), against the kernel.
    #[test]
    fn training_gradients_match_the_textbook_formula() {
        let (batch, channels, inner) = (3, 4, 5);
        let count = batch * inner;
        let x = values(batch * channels * inner, 0.0);
        let g = values(batch * channels * inner, 17.0);
        let w = [0.5, -1.5, 2.0, 1.0];
        let eps = 1e-5;
        let input = Tensor::from_values(x.clone(), &[batch, channels, inner]);
        let grad = Tensor::from_values(g.clone(), &[batch, channels, inner]);
        let weight = Tensor::from_values(w.to_vec(), &[channels]);
        let (dx, dw, db) = batch_norm_backward(
            &grad,
            &input,
            Some(&weight),
            BatchNormStatistics::FromInput,
            eps,
            [true, true, true],
        )
        .unwrap();
        let (dx, dw, db) = (
            dx.unwrap().to_f64_vec(),
            dw.unwrap().to_f64_vec(),
            db.unwrap().to_f64_vec(),
        );
        for c in 0..channels {
            let at = |n: usize, i: usize| (n * channels + c) * inner + i;
            let positions: Vec<usize> = (0..batch)
                .flat_map(|n| (0..inner).map(move |i| at(n, i)))
                .collect();
            let mean = positions.iter().map(|&p| x[p]).sum::<f64>() / count as f64;
            let var = positions
                .iter()
                .map(|&p| (x[p] - mean).powi(2))
                .sum::<f64>()
                / count as f64;
            let invstd = 1.0 / (var + eps).sqrt();
            let x_hat = |p: usize| (x[p] - mean) * invstd;
            let mean_g = positions.iter().map(|&p| g[p] * w[c]).sum::<f64>() / count as f64;
            let mean_gx = positions
                .iter()
                .map(|&p| g[p] * w[c] * x_hat(p))
                .sum::<f64>()
                / count as f64;
            for &p in &positions {
                let expected = invstd * (g[p] * w[c] - mean_g - x_hat(p) * mean_gx);
                assert!((dx[p] - expected).abs() < 1e-12, "dx at {p}");
            }
            let expected_dw: f64 = positions.iter().map(|&p| g[p] * x_hat(p)).sum();
            assert!((dw[c] - expected_dw).abs() < 1e-12);
            let expected_db: f64 = positions.iter().map(|&p| g[p]).sum();
            assert!((db[c] - expected_db).abs() < 1e-12);
        }
    }

    /// Evaluation scales by the running invstd only; mismatched shapes are errors, not
    /// panics.
    #[test]
    fn running_statistics_and_refused_shapes() {
        let x = Tensor::from_values(values(2 * 3 * 4, 1.0), &[2, 3, 4]);
        let g = Tensor::from_values(values(2 * 3 * 4, 5.0), &[2, 3, 4]);
        let running_mean = Tensor::from_values(vec![0.1, 0.2, 0.3], &[3]);
        let running_var = Tensor::from_values(vec![1.0, 4.0, 0.25], &[3]);
        let statistics = BatchNormStatistics::Running {
            mean: &running_mean,
            variance: &running_var,
        };
        let (dx, _, _) =
            batch_norm_backward(&g, &x, None, statistics, 0.0, [true, false, false]).unwrap();
        let dx = dx.unwrap().to_f64_vec();
        let gs = g.to_f64_vec();
        for (p, value) in dx.iter().enumerate() {
            let scale = [1.0, 0.5, 2.0][(p / 4) % 3];
            assert!((value - gs[p] * scale).abs() < 1e-12);
        }

        let short = Tensor::from_values(vec![1.0; 2], &[2]);
        assert!(batch_norm_backward(
            &g,
            &x,
            Some(&short),
            BatchNormStatistics::FromInput,
            1e-5,
            [true, true, true]
        )
        .is_err());
        let wrong = Tensor::from_values(vec![1.0; 6], &[2, 3]);
        assert!(batch_norm_backward(
            &wrong,
            &x,
            None,
            BatchNormStatistics::FromInput,
            1e-5,
            [true, true, true]
        )
        .is_err());
    }
}
