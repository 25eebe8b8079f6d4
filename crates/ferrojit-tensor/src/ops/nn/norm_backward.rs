//! Gradient kernels of layer and group normalization (`native_layer_norm_backward`,
//! `native_group_norm_backward`) from the saved mean and reciprocal standard deviation, as
//! PyTorch's CPU kernels define them; sums run in f64 and each result is rounded once.

use super::{from_f64, invalid, require_float, to_sizes};
use crate::error::{format_shape, Result};
use crate::tensor::Tensor;

/// The three gradients of a normalization's backward (input, weight, bias); `None` where
/// `output_mask` did not ask for it.
pub type NormGradients = (Option<Tensor>, Option<Tensor>, Option<Tensor>);

fn check_count(what: &str, tensor: &Tensor, count: usize, op: &str) -> Result<Vec<f64>> {
    if tensor.numel() != count {
        return Err(invalid(format!(
            "{op}: expected {what} to have {count} elements, but got {what} of size {}",
            format_shape(tensor.sizes())
        )));
    }
    Ok(tensor.to_f64_vec())
}

/// `native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias,
/// output_mask)`: each of the M rows of N normalized values gets
/// `dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat))` with `g = grad_out * weight`;
/// `dweight = sum over rows of grad_out * x_hat` and `dbias = sum over rows of grad_out`.
#[allow(clippy::too_many_arguments)]
pub fn native_layer_norm_backward(
    grad_out: &Tensor,
    input: &Tensor,
    normalized_shape: &[i64],
    mean: &Tensor,
    rstd: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    output_mask: [bool; 3],
) -> Result<NormGradients> {
    let op = "native_layer_norm_backward";
    let dtype = require_float(input, "LayerNormBackwardKernelImpl")?;
    let shape = to_sizes(normalized_shape, "normalized_shape")?;
    super::norm::check_normalized_shape(input, &shape, &format!("{op}: "))?;
    if grad_out.sizes() != input.sizes() {
        return Err(invalid(format!(
            "{op}: expected grad_out of size {}, but got grad_out of size {}",
            format_shape(input.sizes()),
            format_shape(grad_out.sizes())
        )));
    }
    let n: usize = shape.iter().product();
    let m = input.numel().checked_div(n).unwrap_or(0);
    let mean = check_count("mean", mean, m, op)?;
    let rstd = check_count("rstd", rstd, m, op)?;
    let gamma = weight
        .map(|w| check_count("weight", w, n, op))
        .transpose()?;
    for (requested, given, name) in [
        (output_mask[1], weight, "weight"),
        (output_mask[2], bias, "bias"),
    ] {
        if requested && given.is_none() {
            return Err(invalid(format!(
                "{op}: the gradient of {name} was requested, but {name} is None"
            )));
        }
    }
    let x = input.to_f64_vec();
    let go = grad_out.to_f64_vec();
    let mut dx = vec![0.0; if output_mask[0] { m * n } else { 0 }];
    let mut dgamma = vec![0.0; n];
    let mut dbeta = vec![0.0; n];
    for row in 0..m {
        let xs = &x[row * n..][..n];
        let gs = &go[row * n..][..n];
        let (mu, r) = (mean[row], rstd[row]);
        for j in 0..n {
            let x_hat = (xs[j] - mu) * r;
            dgamma[j] += gs[j] * x_hat;
            dbeta[j] += gs[j];
        }
        if output_mask[0] {
            let weight_of = |j: usize| gamma.as_ref().map_or(1.0, |g| g[j]);
            let mut sum_g = 0.0;
            let mut sum_g_x_hat = 0.0;
            for j in 0..n {
                let g = gs[j] * weight_of(j);
                sum_g += g;
                sum_g_x_hat += g * (xs[j] - mu) * r;
            }
            let (mean_g, mean_g_x_hat) = (sum_g / n as f64, sum_g_x_hat / n as f64);
            for j in 0..n {
                let x_hat = (xs[j] - mu) * r;
                dx[row * n + j] = r * (gs[j] * weight_of(j) - mean_g - x_hat * mean_g_x_hat);
            }
        }
    }
    let param_sizes = |given: Option<&Tensor>| given.map_or(shape.clone(), |t| t.sizes().to_vec());
    Ok((
        output_mask[0].then(|| from_f64(dx, input.sizes(), dtype)),
        output_mask[1].then(|| from_f64(dgamma, &param_sizes(weight), dtype)),
        output_mask[2].then(|| from_f64(dbeta, &param_sizes(bias), dtype)),
    ))
}

/// `native_group_norm_backward(grad_out, input, mean, rstd, weight, N, C, HxW, group,
/// output_mask)`: within each (sample, group) of `C / group * HxW` values,
/// `dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat))` with `g = grad_out * weight[c]`;
/// `dweight[c]` sums `grad_out * x_hat` and `dbias[c]` sums `grad_out` over samples and
/// positions.
#[allow(clippy::too_many_arguments)]
pub fn native_group_norm_backward(
    grad_out: &Tensor,
    input: &Tensor,
    mean: &Tensor,
    rstd: &Tensor,
    weight: Option<&Tensor>,
    sizes: [i64; 3],
    group: i64,
    output_mask: [bool; 3],
) -> Result<NormGradients> {
    let op = "native_group_norm_backward";
    let dtype = require_float(input, "GroupNormBackwardKernelImpl")?;
    let [batch, channels, inner] = sizes;
    let [batch, channels, inner] = [
        to_sizes(&[batch], "N")?[0],
        to_sizes(&[channels], "C")?[0],
        to_sizes(&[inner], "HxW")?[0],
    ];
    if group <= 0 || !channels.is_multiple_of(group as usize) {
        return Err(invalid(format!(
            "Expected number of channels in input to be divisible by num_groups, but got input of shape {} and num_groups={group}",
            format_shape(input.sizes())
        )));
    }
    let groups = group as usize;
    let total = batch * channels * inner;
    if input.numel() != total || grad_out.numel() != total {
        return Err(invalid(format!(
            "{op}: expected input and grad_out to hold N * C * HxW = {total} elements, but got input of size {} and grad_out of size {}",
            format_shape(input.sizes()),
            format_shape(grad_out.sizes())
        )));
    }
    let mean = check_count("mean", mean, batch * groups, op)?;
    let rstd = check_count("rstd", rstd, batch * groups, op)?;
    let gamma = weight
        .map(|w| check_count("weight", w, channels, op))
        .transpose()?;
    let weight_of = |c: usize| gamma.as_ref().map_or(1.0, |g| g[c]);
    let x = input.to_f64_vec();
    let go = grad_out.to_f64_vec();
    let per_group = channels / groups;
    let group_len = (per_group * inner) as f64;
    let mut dx = vec![0.0; if output_mask[0] { total } else { 0 }];
    let mut dgamma = vec![0.0; channels];
    let mut dbeta = vec![0.0; channels];
    for n in 0..batch {
        for g in 0..groups {
            let (mu, r) = (mean[n * groups + g], rstd[n * groups + g]);
            let mut sum_g = 0.0;
            let mut sum_g_x_hat = 0.0;
            for c in g * per_group..(g + 1) * per_group {
                let base = (n * channels + c) * inner;
                for i in base..base + inner {
                    let x_hat = (x[i] - mu) * r;
                    dgamma[c] += go[i] * x_hat;
                    dbeta[c] += go[i];
                    let scaled = go[i] * weight_of(c);
                    sum_g += scaled;
                    sum_g_x_hat += scaled * x_hat;
                }
            }
            if !output_mask[0] {
                continue;
            }
            let (mean_g, mean_g_x_hat) = (sum_g / group_len, sum_g_x_hat / group_len);
            for c in g * per_group..(g + 1) * per_group {
                let base = (n * channels + c) * inner;
                for i in base..base + inner {
                    let x_hat = (x[i] - mu) * r;
                    dx[i] = r * (go[i] * weight_of(c) - mean_g - x_hat * mean_g_x_hat);
                }
            }
        }
    }
    Ok((
        output_mask[0].then(|| from_f64(dx, input.sizes(), dtype)),
        output_mask[1].then(|| from_f64(dgamma, &[channels], dtype)),
        output_mask[2].then(|| from_f64(dbeta, &[channels], dtype)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With a unit gradient the input gradient of a normalization is zero (the output's
    /// sum does not depend on the input) and the bias gradient counts the rows.
    #[test]
    fn a_constant_gradient_gives_no_input_gradient() {
        let x = Tensor::from_vec(vec![1.0f64, 4.0, 2.0, 8.0, -1.0, 0.5], &[2, 3]).unwrap();
        let go = Tensor::from_vec(vec![1.0f64; 6], &[2, 3]).unwrap();
        let stats = |row: &[f64]| {
            let mean = row.iter().sum::<f64>() / 3.0;
            let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 3.0;
            (mean, 1.0 / (var + 1e-5).sqrt())
        };
        let values = x.to_f64_vec();
        let (m0, r0) = stats(&values[..3]);
        let (m1, r1) = stats(&values[3..]);
        let mean = Tensor::from_vec(vec![m0, m1], &[2, 1]).unwrap();
        let rstd = Tensor::from_vec(vec![r0, r1], &[2, 1]).unwrap();
        let weight = Tensor::from_vec(vec![1.0f64; 3], &[3]).unwrap();
        let (dx, _, dbeta) = native_layer_norm_backward(
            &go,
            &x,
            &[3],
            &mean,
            &rstd,
            Some(&weight),
            Some(&weight),
            [true, false, true],
        )
        .unwrap();
        assert!(dx.unwrap().to_f64_vec().iter().all(|v| v.abs() < 1e-12));
        assert_eq!(dbeta.unwrap().to_f64_vec(), vec![2.0, 2.0, 2.0]);
        let wrong_mean = Tensor::from_vec(vec![0.0f64; 3], &[3]).unwrap();
        assert!(native_layer_norm_backward(
            &go,
            &x,
            &[3],
            &wrong_mean,
            &rstd,
            None,
            None,
            [true, false, false]
        )
        .is_err());
    }
}
