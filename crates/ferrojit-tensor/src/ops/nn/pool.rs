//! Pooling: max (with indices, dilation, ceil_mode), average (count_include_pad,
//! divisor_override) and adaptive average/max, for 1-3 spatial dims over `[N, C, ...]` or
//! unbatched `[C, ...]` inputs.

use super::{expand_param, from_f64, invalid, require_float};
use crate::dtype::DType;
use crate::error::{format_shape, Result};
use crate::tensor::Tensor;

/// Splits an input into (planes, spatial sizes) after validating its rank.
fn planes(input: &Tensor, spatial: usize, op: &str) -> Result<(usize, Vec<usize>)> {
    if input.dim() != spatial + 1 && input.dim() != spatial + 2 {
        return Err(invalid(format!(
            "{op}: Expected {}D or {}D input tensor, but got {}",
            spatial + 1,
            spatial + 2,
            format_shape(input.sizes())
        )));
    }
    let lead = input.dim() - spatial;
    let sizes = input.sizes()[lead..].to_vec();
    if input.sizes()[..lead]
        .iter()
        .skip(usize::from(lead == 2))
        .any(|&s| s == 0)
        || sizes.contains(&0)
    {
        return Err(invalid(format!(
            "{op}: Expected input's non-batch dimensions to have positive length, but input has a shape of {}",
            format_shape(input.sizes())
        )));
    }
    Ok((input.sizes()[..lead].iter().product(), sizes))
}

fn pooled_size(
    input: usize,
    kernel: usize,
    pad: usize,
    stride: usize,
    dilation: usize,
    ceil: bool,
) -> Result<usize> {
    let span = input as i64 + 2 * pad as i64 - (dilation * (kernel - 1)) as i64 - 1;
    let stride_i = stride as i64;
    let mut out = if ceil {
        (span + stride_i - 1).div_euclid(stride_i) + 1
    } else {
        span.div_euclid(stride_i) + 1
    };
    if ceil && (out - 1) * stride_i >= input as i64 + pad as i64 {
        out -= 1;
    }
    if out <= 0 {
        return Err(invalid(format!(
            "Given input size: ({input}). Calculated output size: ({out}). Output size is too small"
        )));
    }
    Ok(out as usize)
}

struct PoolParams {
    kernel: Vec<usize>,
    stride: Vec<usize>,
    padding: Vec<usize>,
    dilation: Vec<usize>,
}

fn pool_params(
    spatial: usize,
    kernel: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
) -> Result<PoolParams> {
    let kernel = expand_param(kernel, spatial, "kernel_size", false)?;
    let stride = if stride.is_empty() {
        kernel.clone()
    } else {
        expand_param(stride, spatial, "stride", false)?
    };
    let padding = expand_param(padding, spatial, "padding", true)?;
    let dilation = expand_param(dilation, spatial, "dilation", false)?;
    for i in 0..spatial {
        if padding[i] > kernel[i] / 2 {
            return Err(invalid(format!(
                "pad should be at most half of effective kernel size, but got pad={}, kernel_size={} and dilation={}",
                padding[i], kernel[i], dilation[i]
            )));
        }
    }
    Ok(PoolParams {
        kernel,
        stride,
        padding,
        dilation,
    })
}

fn lift(values: &[usize], fill: usize) -> [usize; 3] {
    let mut out = [fill; 3];
    out[3 - values.len()..].copy_from_slice(values);
    out
}

fn out_shape(input: &Tensor, spatial: usize, out_spatial: &[usize]) -> Vec<usize> {
    let mut s = input.sizes()[..input.dim() - spatial].to_vec();
    s.extend(out_spatial);
    s
}

/// Max pooling; returns (values, int64 indices into each flattened input plane).
pub fn max_pool(
    input: &Tensor,
    spatial: usize,
    kernel: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<(Tensor, Tensor)> {
    let op = match spatial {
        1 => "max_pool1d",
        2 => "max_pool2d",
        _ => "max_pool3d",
    };
    if input.dtype() == DType::Bool {
        return Err(crate::error::TensorError::NotImplementedForDType {
            op,
            dtype: DType::Bool,
        });
    }
    let p = pool_params(spatial, kernel, stride, padding, dilation)?;
    let (count, in_sp) = planes(input, spatial, op)?;
    let out_sp = (0..spatial)
        .map(|i| {
            pooled_size(
                in_sp[i],
                p.kernel[i],
                p.padding[i],
                p.stride[i],
                p.dilation[i],
                ceil_mode,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let (i3, o3, k3, s3, p3, d3) = (
        lift(&in_sp, 1),
        lift(&out_sp, 1),
        lift(&p.kernel, 1),
        lift(&p.stride, 1),
        lift(&p.padding, 0),
        lift(&p.dilation, 1),
    );
    let x = input.to_f64_vec();
    let in_len: usize = i3.iter().product();
    let out_len: usize = o3.iter().product();
    let mut values = Vec::with_capacity(count * out_len);
    let mut indices = Vec::with_capacity(count * out_len);
    for plane in 0..count {
        let src = &x[plane * in_len..(plane + 1) * in_len];
        for od in 0..o3[0] {
            for oh in 0..o3[1] {
                for ow in 0..o3[2] {
                    let mut best = f64::NEG_INFINITY;
                    let mut best_index: i64 = -1;
                    for kd in 0..k3[0] {
                        let id = (od * s3[0] + kd * d3[0]) as i64 - p3[0] as i64;
                        if id < 0 || id >= i3[0] as i64 {
                            continue;
                        }
                        for kh in 0..k3[1] {
                            let ih = (oh * s3[1] + kh * d3[1]) as i64 - p3[1] as i64;
                            if ih < 0 || ih >= i3[1] as i64 {
                                continue;
                            }
                            for kw in 0..k3[2] {
                                let iw = (ow * s3[2] + kw * d3[2]) as i64 - p3[2] as i64;
                                if iw < 0 || iw >= i3[2] as i64 {
                                    continue;
                                }
                                let flat =
                                    ((id as usize * i3[1] + ih as usize) * i3[2]) + iw as usize;
                                let v = src[flat];
                                if best_index < 0 || v > best || v.is_nan() && !best.is_nan() {
                                    best = v;
                                    best_index = flat as i64;
                                }
                            }
                        }
                    }
                    values.push(best);
                    indices.push(best_index.max(0));
                }
            }
        }
    }
    let shape = out_shape(input, spatial, &out_sp);
    Ok((
        from_f64(values, &shape, input.dtype()),
        Tensor::from_values(indices, &shape),
    ))
}

/// Average pooling.
#[allow(clippy::too_many_arguments)]
pub fn avg_pool(
    input: &Tensor,
    spatial: usize,
    kernel: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<Tensor> {
    let op = match spatial {
        1 => "avg_pool1d",
        2 => "avg_pool2d",
        _ => "avg_pool3d",
    };
    if input.dtype() == DType::Bool {
        return Err(crate::error::TensorError::NotImplementedForDType {
            op,
            dtype: DType::Bool,
        });
    }
    if divisor_override == Some(0) {
        return Err(invalid("divisor must be not zero"));
    }
    let p = pool_params(spatial, kernel, stride, padding, &[1])?;
    let (count, in_sp) = planes(input, spatial, op)?;
    let out_sp = (0..spatial)
        .map(|i| {
            pooled_size(
                in_sp[i],
                p.kernel[i],
                p.padding[i],
                p.stride[i],
                1,
                ceil_mode,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let (i3, o3, k3, s3, p3) = (
        lift(&in_sp, 1),
        lift(&out_sp, 1),
        lift(&p.kernel, 1),
        lift(&p.stride, 1),
        lift(&p.padding, 0),
    );
    let x = input.to_f64_vec();
    let in_len: usize = i3.iter().product();
    let out_len: usize = o3.iter().product();
    let integral = !input.dtype().is_floating_point();
    let mut values = Vec::with_capacity(count * out_len);
    let window = |o: usize, d: usize| -> (i64, i64, i64, i64) {
        let start = (o * s3[d]) as i64 - p3[d] as i64;
        let end = (start + k3[d] as i64).min((i3[d] + p3[d]) as i64);
        let padded_len = end - start;
        (start.max(0), end.min(i3[d] as i64), padded_len, 0)
    };
    for plane in 0..count {
        let src = &x[plane * in_len..(plane + 1) * in_len];
        for od in 0..o3[0] {
            let (d0, d1, dl, _) = window(od, 0);
            for oh in 0..o3[1] {
                let (h0, h1, hl, _) = window(oh, 1);
                for ow in 0..o3[2] {
                    let (w0, w1, wl, _) = window(ow, 2);
                    let mut sum = 0.0;
                    for id in d0..d1 {
                        for ih in h0..h1 {
                            for iw in w0..w1 {
                                sum += src
                                    [((id as usize * i3[1] + ih as usize) * i3[2]) + iw as usize];
                            }
                        }
                    }
                    let divisor = match divisor_override {
                        Some(d) => d as f64,
                        None if count_include_pad => (dl * hl * wl) as f64,
                        None => ((d1 - d0) * (h1 - h0) * (w1 - w0)) as f64,
                    };
                    let v = sum / divisor;
                    values.push(if integral { v.trunc() } else { v });
                }
            }
        }
    }
    Ok(from_f64(
        values,
        &out_shape(input, spatial, &out_sp),
        input.dtype(),
    ))
}

/// Adaptive pooling windows: `[floor(o*in/out), ceil((o+1)*in/out))`.
fn adaptive_window(o: usize, input: usize, output: usize) -> (usize, usize) {
    let start = (o * input) / output;
    let end = ((o + 1) * input).div_ceil(output);
    (start, end)
}

/// Adaptive average (`max == false`) or max pooling; indices are returned for max.
pub fn adaptive_pool(
    input: &Tensor,
    spatial: usize,
    output_size: &[i64],
    max: bool,
) -> Result<(Tensor, Option<Tensor>)> {
    let op = match (spatial, max) {
        (1, false) => "adaptive_avg_pool1d",
        (2, false) => "adaptive_avg_pool2d",
        (_, false) => "adaptive_avg_pool3d",
        (1, true) => "adaptive_max_pool1d",
        (2, true) => "adaptive_max_pool2d",
        (_, true) => "adaptive_max_pool3d",
    };
    if max {
        require_float(input, op)?;
    } else if input.dtype() == DType::Bool {
        return Err(crate::error::TensorError::NotImplementedForDType {
            op,
            dtype: DType::Bool,
        });
    }
    if output_size.len() != spatial {
        return Err(invalid(format!("{op}: output_size must be {spatial}")));
    }
    let out_sp = super::to_sizes(output_size, "output_size")?;
    let (count, in_sp) = planes(input, spatial, op)?;
    let (i3, o3) = (lift(&in_sp, 1), lift(&out_sp, 1));
    let x = input.to_f64_vec();
    let in_len: usize = i3.iter().product();
    let out_len: usize = o3.iter().product();
    let mut values = Vec::with_capacity(count * out_len);
    let mut indices = Vec::with_capacity(count * out_len);
    for plane in 0..count {
        let src = &x[plane * in_len..(plane + 1) * in_len];
        for od in 0..o3[0] {
            let (d0, d1) = adaptive_window(od, i3[0], o3[0]);
            for oh in 0..o3[1] {
                let (h0, h1) = adaptive_window(oh, i3[1], o3[1]);
                for ow in 0..o3[2] {
                    let (w0, w1) = adaptive_window(ow, i3[2], o3[2]);
                    let mut sum = 0.0;
                    let mut best = f64::NEG_INFINITY;
                    let mut best_index: i64 = -1;
                    for id in d0..d1 {
                        for ih in h0..h1 {
                            for iw in w0..w1 {
                                let flat = (id * i3[1] + ih) * i3[2] + iw;
                                let v = src[flat];
                                sum += v;
                                if best_index < 0 || v > best || v.is_nan() && !best.is_nan() {
                                    best = v;
                                    best_index = flat as i64;
                                }
                            }
                        }
                    }
                    if max {
                        values.push(best);
                        indices.push(best_index.max(0));
                    } else {
                        let n = ((d1 - d0) * (h1 - h0) * (w1 - w0)) as f64;
                        values.push(sum / n);
                    }
                }
            }
        }
    }
    let shape = out_shape(input, spatial, &out_sp);
    let values = from_f64(values, &shape, input.dtype());
    Ok(if max {
        (values, Some(Tensor::from_values(indices, &shape)))
    } else {
        (values, None)
    })
}
