//! `convolution_backward`: the input, weight and bias gradients of a 1-3 dimensional,
//! grouped, strided, padded, dilated and possibly transposed convolution, as ATen's
//! `convolution_backward` defines them. Non-transposed float32 and float64 convolutions run
//! as matrix products (`conv_backward_gemm`); the rest take a direct loop over every (input
//! tap, output position) pair the forward multiplied, summed in f64 and rounded once.

use super::{from_f64, invalid, require_float};
use crate::error::{format_shape, Result};
use crate::tensor::Tensor;

/// The convolution's geometry, as `convolution` takes it.
#[derive(Debug, Clone)]
pub struct ConvGeometry<'a> {
    pub stride: &'a [i64],
    pub padding: &'a [i64],
    pub dilation: &'a [i64],
    pub transposed: bool,
    pub output_padding: &'a [i64],
    pub groups: i64,
}

/// One spatial parameter list expanded to `n` values (a single value repeats).
fn spatial_param(values: &[i64], n: usize, name: &str, minimum: i64) -> Result<[i64; 3]> {
    let expanded: Vec<i64> = match values.len() {
        1 => vec![values[0]; n],
        len if len == n => values.to_vec(),
        _ => {
            return Err(invalid(format!(
                "convolution_backward: expected {name} to have {n} elements, but got {values:?}"
            )))
        }
    };
    if let Some(bad) = expanded.iter().find(|&&v| v < minimum) {
        return Err(invalid(format!(
            "convolution_backward: {name} must be at least {minimum}, but got {bad}"
        )));
    }
    let mut lifted = [0i64; 3];
    lifted[3 - n..].copy_from_slice(&expanded);
    Ok(lifted)
}

fn lift_sizes(sizes: &[usize]) -> [usize; 3] {
    let mut lifted = [1usize; 3];
    lifted[3 - sizes.len()..].copy_from_slice(sizes);
    lifted
}

/// The (input, weight, bias) gradients; `None` where `output_mask` did not ask for one.
pub type ConvGradients = (Option<Tensor>, Option<Tensor>, Option<Tensor>);

/// `convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
/// transposed, output_padding, groups, output_mask)`.
pub fn convolution_backward(
    grad_output: &Tensor,
    input: &Tensor,
    weight: &Tensor,
    geometry: &ConvGeometry,
    output_mask: [bool; 3],
) -> Result<ConvGradients> {
    let dtype = require_float(input, "convolution_backward")?;
    if grad_output.dtype() != dtype || weight.dtype() != dtype {
        return Err(invalid(format!(
            "convolution_backward: expected grad_output, input and weight to have the same dtype, but got {}, {} and {}",
            grad_output.dtype().scalar_type_name(),
            dtype.scalar_type_name(),
            weight.dtype().scalar_type_name()
        )));
    }
    let rank = weight.dim();
    if !(3..=5).contains(&rank) || input.dim() != rank || grad_output.dim() != rank {
        return Err(invalid(format!(
            "convolution_backward: expected a batched 3-D, 4-D or 5-D input, weight and grad_output of one rank, but got input of size {}, weight of size {} and grad_output of size {}",
            format_shape(input.sizes()),
            format_shape(weight.sizes()),
            format_shape(grad_output.sizes())
        )));
    }
    let spatial = rank - 2;
    let stride = spatial_param(geometry.stride, spatial, "stride", 1)?;
    let padding = spatial_param(geometry.padding, spatial, "padding", 0)?;
    let dilation = spatial_param(geometry.dilation, spatial, "dilation", 1)?;
    let output_padding = if geometry.transposed {
        spatial_param(geometry.output_padding, spatial, "output_padding", 0)?
    } else {
        [0; 3]
    };
    if geometry.groups <= 0 {
        return Err(invalid("non-positive groups is not supported"));
    }
    let groups = geometry.groups as usize;
    let batch = input.sizes()[0];
    let in_channels = input.sizes()[1];
    let (out_channels, in_per_group, out_per_group) = if geometry.transposed {
        if weight.sizes()[0] != in_channels || !in_channels.is_multiple_of(groups) {
            return Err(invalid(format!(
                "convolution_backward: a transposed weight of size {} does not fit an input of {in_channels} channels in {groups} groups",
                format_shape(weight.sizes())
            )));
        }
        let per_group = weight.sizes()[1];
        (per_group * groups, in_channels / groups, per_group)
    } else {
        let out_channels = weight.sizes()[0];
        if !out_channels.is_multiple_of(groups) || weight.sizes()[1] * groups != in_channels {
            return Err(invalid(format!(
                "convolution_backward: a weight of size {} does not fit an input of {in_channels} channels in {groups} groups",
                format_shape(weight.sizes())
            )));
        }
        (out_channels, weight.sizes()[1], out_channels / groups)
    };
    let in_sp = lift_sizes(&input.sizes()[2..]);
    let k_sp = lift_sizes(&weight.sizes()[2..]);
    // The forward's output sizes, which grad_output must have.
    let mut out_sp = [1usize; 3];
    for d in 3 - spatial..3 {
        let (i, k) = (in_sp[d] as i64, k_sp[d] as i64);
        let o = if geometry.transposed {
            (i - 1) * stride[d] - 2 * padding[d] + dilation[d] * (k - 1) + output_padding[d] + 1
        } else {
            (i + 2 * padding[d] - dilation[d] * (k - 1) - 1).div_euclid(stride[d]) + 1
        };
        out_sp[d] = usize::try_from(o).unwrap_or(0);
    }
    let mut expected = vec![batch, out_channels];
    expected.extend_from_slice(&out_sp[3 - spatial..]);
    super::backward::check_grad_shape(grad_output, &expected, 0)?;
    let want = (output_mask[0], output_mask[1]);
    if !geometry.transposed && (want.0 || want.1) {
        // Float32 and float64: the matrix-product form (`conv_backward_gemm`).
        let lifted = |v: [i64; 3]| v.map(|x| x as usize);
        let conv_geometry = super::conv::Geometry {
            in_size: in_sp,
            kernel: k_sp,
            stride: lifted(stride),
            dilation: lifted(dilation),
            pad_before: lifted(padding),
            out_size: out_sp,
        };
        let shape = super::conv_backward_gemm::BackwardShape {
            batch,
            in_channels,
            out_channels,
            groups,
            geometry: &conv_geometry,
        };
        macro_rules! gemm_backward {
            ($t:ty) => {{
                let (gi, gw) = super::conv_backward_gemm::convolution_backward_gemm::<$t>(
                    &input.gather::<$t>(),
                    &weight.gather::<$t>(),
                    &grad_output.gather::<$t>(),
                    &shape,
                    want.0,
                    want.1,
                )?;
                let grad_bias = bias_gradient(
                    grad_output,
                    batch,
                    out_channels,
                    out_len_of(&out_sp),
                    dtype,
                    output_mask[2],
                );
                return Ok((
                    want.0.then(|| Tensor::from_values(gi, input.sizes())),
                    want.1.then(|| Tensor::from_values(gw, weight.sizes())),
                    grad_bias,
                ));
            }};
        }
        match dtype {
            crate::dtype::DType::Float32 => gemm_backward!(f32),
            crate::dtype::DType::Float64 => gemm_backward!(f64),
            _ => {}
        }
    }
    let x = input.to_f64_vec();
    let w = weight.to_f64_vec();
    let go = grad_output.to_f64_vec();
    let in_len: usize = in_sp.iter().product();
    let out_len: usize = out_sp.iter().product();
    let k_len: usize = k_sp.iter().product();
    // In the forward, the "small" side is the one whose positions step by the stride: the
    // output of a convolution, the input of a transposed one; the other side is read (or
    // written) at `small * stride - padding + tap * dilation`.
    let (small_sp, big_sp) = if geometry.transposed {
        (in_sp, out_sp)
    } else {
        (out_sp, in_sp)
    };
    let mut grad_input = vec![0.0; if output_mask[0] { x.len() } else { 0 }];
    let mut grad_weight = vec![0.0; if output_mask[1] { w.len() } else { 0 }];
    if output_mask[0] || output_mask[1] {
        for n in 0..batch {
            for g in 0..groups {
                for ic in 0..in_per_group {
                    let ci = g * in_per_group + ic;
                    for oc in 0..out_per_group {
                        let co = g * out_per_group + oc;
                        let weight_base = if geometry.transposed {
                            (ci * out_per_group + oc) * k_len
                        } else {
                            (co * in_per_group + ic) * k_len
                        };
                        let input_base = (n * in_channels + ci) * in_len;
                        let output_base = (n * out_channels + co) * out_len;
                        for tap in 0..k_len {
                            let k = [
                                tap / (k_sp[1] * k_sp[2]),
                                tap / k_sp[2] % k_sp[1],
                                tap % k_sp[2],
                            ];
                            let weight_index = weight_base + tap;
                            let mut weight_sum = 0.0;
                            for small in 0..small_sp.iter().product::<usize>() {
                                let s = [
                                    small / (small_sp[1] * small_sp[2]),
                                    small / small_sp[2] % small_sp[1],
                                    small % small_sp[2],
                                ];
                                let mut big = 0usize;
                                let mut inside = true;
                                for d in 0..3 {
                                    let at = s[d] as i64 * stride[d] - padding[d]
                                        + k[d] as i64 * dilation[d];
                                    if at < 0 || at >= big_sp[d] as i64 {
                                        inside = false;
                                        break;
                                    }
                                    big = big * big_sp[d] + at as usize;
                                }
                                if !inside {
                                    continue;
                                }
                                let (input_at, output_at) = if geometry.transposed {
                                    (input_base + small, output_base + big)
                                } else {
                                    (input_base + big, output_base + small)
                                };
                                let gradient = go[output_at];
                                if output_mask[0] {
                                    grad_input[input_at] += gradient * w[weight_index];
                                }
                                weight_sum += gradient * x[input_at];
                            }
                            if output_mask[1] {
                                grad_weight[weight_index] += weight_sum;
                            }
                        }
                    }
                }
            }
        }
    }
    let grad_bias = bias_gradient(
        grad_output,
        batch,
        out_channels,
        out_len,
        dtype,
        output_mask[2],
    );
    Ok((
        output_mask[0].then(|| from_f64(grad_input, input.sizes(), dtype)),
        output_mask[1].then(|| from_f64(grad_weight, weight.sizes(), dtype)),
        grad_bias,
    ))
}

fn out_len_of(out_sp: &[usize; 3]) -> usize {
    out_sp.iter().product()
}

/// The bias gradient (the output gradient summed over the batch and positions, in float64
/// and rounded once), when asked for.
fn bias_gradient(
    grad_output: &Tensor,
    batch: usize,
    out_channels: usize,
    out_len: usize,
    dtype: crate::dtype::DType,
    wanted: bool,
) -> Option<Tensor> {
    wanted.then(|| {
        let go = grad_output.to_f64_vec();
        let mut sums = vec![0.0; out_channels];
        for n in 0..batch {
            for (co, sum) in sums.iter_mut().enumerate() {
                *sum += go[(n * out_channels + co) * out_len..][..out_len]
                    .iter()
                    .sum::<f64>();
            }
        }
        from_f64(sums, &[out_channels], dtype)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1x1 convolution's weight gradient is the sum of input times output gradient, and
    /// a grad_output of the wrong size is refused.
    #[test]
    fn pointwise_convolution_gradients() {
        let input = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[1, 1, 3]).unwrap();
        let weight = Tensor::from_vec(vec![2.0f64], &[1, 1, 1]).unwrap();
        let grad_output = Tensor::from_vec(vec![1.0f64, 0.5, -1.0], &[1, 1, 3]).unwrap();
        let geometry = ConvGeometry {
            stride: &[1],
            padding: &[0],
            dilation: &[1],
            transposed: false,
            output_padding: &[0],
            groups: 1,
        };
        let (gi, gw, gb) =
            convolution_backward(&grad_output, &input, &weight, &geometry, [true; 3]).unwrap();
        assert_eq!(gi.unwrap().to_f64_vec(), vec![2.0, 1.0, -2.0]);
        assert_eq!(gw.unwrap().to_f64_vec(), vec![1.0 + 1.0 - 3.0]);
        assert_eq!(gb.unwrap().to_f64_vec(), vec![0.5]);
        let short = Tensor::from_vec(vec![1.0f64, 0.5], &[1, 1, 2]).unwrap();
        assert!(convolution_backward(&short, &input, &weight, &geometry, [true; 3]).is_err());
    }
}
