//! Pooling: max (with indices, dilation, ceil_mode), average (count_include_pad,
//! divisor_override) and adaptive average/max, for 1-3 spatial dims over `[N, C, ...]` or
//! unbatched `[C, ...]` inputs.

use super::{expand_param, from_f64, invalid, require_float};
use rayon::prelude::*;

use crate::dtype::DType;
use crate::element::Element;
use crate::error::{format_shape, Result};
use crate::tensor::Tensor;

/// Splits an input into (planes, spatial sizes) after validating its rank.
pub(super) fn planes(input: &Tensor, spatial: usize, op: &str) -> Result<(usize, Vec<usize>)> {
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

pub(super) fn pooled_size(
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

pub(super) struct PoolParams {
    pub(super) kernel: Vec<usize>,
    pub(super) stride: Vec<usize>,
    pub(super) padding: Vec<usize>,
    pub(super) dilation: Vec<usize>,
}

pub(super) fn pool_params(
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

pub(super) fn lift(values: &[usize], fill: usize) -> [usize; 3] {
    let mut out = [fill; 3];
    out[3 - values.len()..].copy_from_slice(values);
    out
}

fn out_shape(input: &Tensor, spatial: usize, out_spatial: &[usize]) -> Vec<usize> {
    let mut s = input.sizes()[..input.dim() - spatial].to_vec();
    s.extend(out_spatial);
    s
}

/// Max-pooling geometry lifted to 3-D.
struct Window {
    input: [usize; 3],
    output: [usize; 3],
    kernel: [usize; 3],
    stride: [usize; 3],
    padding: [usize; 3],
    dilation: [usize; 3],
}

/// Float types max-pooled in their own precision.
trait PoolFloat: Element + PartialOrd {
    fn nan(self) -> bool;
}

impl PoolFloat for f32 {
    fn nan(self) -> bool {
        self.is_nan()
    }
}

impl PoolFloat for f64 {
    fn nan(self) -> bool {
        self.is_nan()
    }
}

/// Max-pools one plane into `values`/`indices` (one output plane each). Taps are visited in
/// (d, h, w) order and the first maximum wins; NaN beats everything, as in PyTorch. Like
/// `max_pool_plane_values`, each output row keeps its running maxima (and where they came
/// from) while the input rows of its window pass over it, so that the taps of one input row
/// are read in order; every output still meets its taps in (d, h, w) order.
fn max_pool_plane<T: PoolFloat>(src: &[T], w: &Window, values: &mut [T], indices: &mut [i64]) {
    let [id_, ih_, iw_] = w.input;
    let [od_, oh_, ow_] = w.output;
    let w_taps: Vec<(usize, usize)> = (0..ow_).map(|ow| window_taps(w, ow, 2, iw_)).collect();
    let rows = values
        .chunks_mut(ow_.max(1))
        .zip(indices.chunks_mut(ow_.max(1)));
    for (row_index, (dst, dst_index)) in rows.enumerate() {
        let (od, oh) = (row_index / oh_, row_index % oh_);
        debug_assert!(od < od_);
        let (kd0, kdn) = window_taps(w, od, 0, id_);
        let (kh0, khn) = window_taps(w, oh, 1, ih_);
        let input_row = |kd: usize, kh: usize| {
            let d = od * w.stride[0] + kd * w.dilation[0] - w.padding[0];
            let h = oh * w.stride[1] + kh * w.dilation[1] - w.padding[1];
            (d * ih_ + h) * iw_
        };
        // Each output starts from its first tap; an empty window gives -inf at index 0.
        for (ow, (&(kw0, kwn), (slot, slot_index))) in w_taps
            .iter()
            .zip(dst.iter_mut().zip(dst_index.iter_mut()))
            .enumerate()
        {
            if kdn * khn * kwn == 0 {
                *slot = T::from_f64(f64::NEG_INFINITY);
                *slot_index = 0;
            } else {
                let first =
                    input_row(kd0, kh0) + ow * w.stride[2] + kw0 * w.dilation[2] - w.padding[2];
                *slot = src[first];
                *slot_index = first as i64;
            }
        }
        for kd in kd0..kd0 + kdn {
            for kh in kh0..kh0 + khn {
                let start = input_row(kd, kh);
                let row = &src[start..][..iw_];
                let outputs = w_taps.iter().zip(dst.iter_mut().zip(dst_index.iter_mut()));
                for (ow, (&(kw0, kwn), (slot, slot_index))) in outputs.enumerate() {
                    let first = ow * w.stride[2] + kw0 * w.dilation[2] - w.padding[2];
                    let (mut best, mut best_index) = (*slot, *slot_index);
                    // Non-short-circuit operators: whether `v > best` is data dependent, and
                    // a mispredicted branch costs more than the select.
                    for tap in 0..kwn {
                        let column = first + tap * w.dilation[2];
                        let v = row[column];
                        let take = (v > best) | (v.nan() & !best.nan());
                        best = if take { v } else { best };
                        best_index = if take {
                            (start + column) as i64
                        } else {
                            best_index
                        };
                    }
                    *slot = best;
                    *slot_index = best_index;
                }
            }
        }
    }
}

/// Max-pools one plane into `values` only (`max_pool2d` and friends, which return no indices).
/// Each output row keeps a running maximum that every input row of its window updates in
/// turn; taps are still met in (d, h, w) order, and a NaN tap always replaces the maximum, so
/// the result is `max_pool_plane`'s value (and PyTorch's) without tracking where it came from.
fn max_pool_plane_values<T: PoolFloat>(src: &[T], w: &Window, values: &mut [T]) {
    let [id_, ih_, iw_] = w.input;
    let [od_, oh_, ow_] = w.output;
    let w_taps: Vec<(usize, usize)> = (0..ow_).map(|ow| window_taps(w, ow, 2, iw_)).collect();
    let lowest = T::from_f64(f64::NEG_INFINITY);
    for (row_index, dst) in values.chunks_mut(ow_.max(1)).enumerate() {
        let (od, oh) = (row_index / oh_, row_index % oh_);
        debug_assert!(od < od_);
        dst.fill(lowest);
        let (kd0, kdn) = window_taps(w, od, 0, id_);
        let (kh0, khn) = window_taps(w, oh, 1, ih_);
        for kd in kd0..kd0 + kdn {
            let d = od * w.stride[0] + kd * w.dilation[0] - w.padding[0];
            for kh in kh0..kh0 + khn {
                let h = oh * w.stride[1] + kh * w.dilation[1] - w.padding[1];
                let row = &src[(d * ih_ + h) * iw_..][..iw_];
                for (ow, (&(kw0, kwn), slot)) in w_taps.iter().zip(dst.iter_mut()).enumerate() {
                    let first = ow * w.stride[2] + kw0 * w.dilation[2] - w.padding[2];
                    let mut best = *slot;
                    for tap in 0..kwn {
                        let v = row[first + tap * w.dilation[2]];
                        let take = (v > best) | v.nan();
                        best = if take { v } else { best };
                    }
                    *slot = best;
                }
            }
        }
    }
}

/// Taps of the window of output `o` along `axis` that land inside an input of `len`, as
/// (first tap, count).
fn window_taps(w: &Window, o: usize, axis: usize, len: usize) -> (usize, usize) {
    let start = (o * w.stride[axis]) as isize - w.padding[axis] as isize;
    let dil = w.dilation[axis] as isize;
    let mut first = 0;
    while first < w.kernel[axis] && start + first as isize * dil < 0 {
        first += 1;
    }
    let mut last = first;
    while last < w.kernel[axis] && start + (last as isize) * dil < len as isize {
        last += 1;
    }
    (first, last - first)
}

/// Max pooling computed in the input's own float type, planes split across the pool. The
/// indices are computed only when asked for.
fn max_pool_native<T: PoolFloat>(
    input: &Tensor,
    count: usize,
    w: &Window,
    shape: &[usize],
    with_indices: bool,
) -> (Tensor, Option<Tensor>) {
    let in_len: usize = w.input.iter().product();
    let out_len: usize = w.output.iter().product();
    let mut values = vec![T::from_f64(0.0); count * out_len];
    let mut indices = vec![0i64; if with_indices { count * out_len } else { 0 }];
    let mut run = |x: &[T]| {
        let work = count * out_len * w.kernel.iter().product::<usize>();
        let parallel = work >= crate::ops::parallel::PARALLEL_THRESHOLD
            && crate::ops::parallel::num_threads() > 1;
        let plane_input = |plane: usize| &x[plane * in_len..][..in_len];
        match (with_indices, parallel) {
            (true, true) => values
                .par_chunks_mut(out_len)
                .zip(indices.par_chunks_mut(out_len))
                .enumerate()
                .for_each(|(plane, (v, i))| max_pool_plane(plane_input(plane), w, v, i)),
            (true, false) => {
                for (plane, (v, i)) in values
                    .chunks_mut(out_len)
                    .zip(indices.chunks_mut(out_len))
                    .enumerate()
                {
                    max_pool_plane(plane_input(plane), w, v, i);
                }
            }
            (false, true) => values
                .par_chunks_mut(out_len)
                .enumerate()
                .for_each(|(plane, v)| max_pool_plane_values(plane_input(plane), w, v)),
            (false, false) => {
                for (plane, v) in values.chunks_mut(out_len).enumerate() {
                    max_pool_plane_values(plane_input(plane), w, v);
                }
            }
        }
    };
    let numel = input.numel();
    let guard = input.storage().read();
    match T::slice_of(&guard) {
        Some(buf) if input.is_contiguous() => {
            let start = input.storage_offset();
            run(&buf[start..start + numel]);
        }
        _ => {
            drop(guard);
            run(&input.gather::<T>());
        }
    }
    (
        Tensor::from_values(values, shape),
        with_indices.then(|| Tensor::from_values(indices, shape)),
    )
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
    let (values, indices) = max_pool_with(
        input, spatial, kernel, stride, padding, dilation, ceil_mode, true,
    )?;
    let indices = indices.ok_or_else(|| invalid("max_pool: indices were not computed"))?;
    Ok((values, indices))
}

/// Max pooling's values alone (`max_pool1d/2d/3d`), which skips tracking the indices.
pub fn max_pool_values(
    input: &Tensor,
    spatial: usize,
    kernel: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<Tensor> {
    let (values, _) = max_pool_with(
        input, spatial, kernel, stride, padding, dilation, ceil_mode, false,
    )?;
    Ok(values)
}

#[allow(clippy::too_many_arguments)]
fn max_pool_with(
    input: &Tensor,
    spatial: usize,
    kernel: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
    with_indices: bool,
) -> Result<(Tensor, Option<Tensor>)> {
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
    let shape = out_shape(input, spatial, &out_sp);
    let window = Window {
        input: i3,
        output: o3,
        kernel: k3,
        stride: s3,
        padding: p3,
        dilation: d3,
    };
    match input.dtype() {
        DType::Float32 | DType::Float64 => {
            let (values, indices) = if input.dtype() == DType::Float32 {
                max_pool_native::<f32>(input, count, &window, &shape, with_indices)
            } else {
                max_pool_native::<f64>(input, count, &window, &shape, with_indices)
            };
            return Ok((values, indices));
        }
        _ => {}
    }
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
    Ok((
        from_f64(values, &shape, input.dtype()),
        with_indices.then(|| Tensor::from_values(indices, &shape)),
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
pub(super) fn adaptive_window(o: usize, input: usize, output: usize) -> (usize, usize) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Integer-valued data with many ties, so the float path (computed natively) and the
    /// integer path (computed in f64) must agree exactly, indices included.
    #[test]
    fn native_max_pool_matches_generic_path() {
        let sizes = [2, 3, 9, 10];
        let numel: usize = sizes.iter().product();
        let data: Vec<i32> = (0..numel as i32).map(|i| (i * 7919) % 13 - 6).collect();
        let ints = Tensor::from_vec(data.clone(), &sizes).unwrap();
        let floats =
            Tensor::from_vec(data.iter().map(|&v| v as f32).collect::<Vec<_>>(), &sizes).unwrap();
        // Kernel, stride, padding, dilation, ceil_mode.
        type PoolCase<'a> = (&'a [i64], &'a [i64], &'a [i64], &'a [i64], bool);
        let cases: [PoolCase; 4] = [
            (&[3], &[2], &[1], &[1], false),
            (&[3, 2], &[2, 3], &[1, 0], &[1], true),
            (&[2], &[1], &[0], &[2], false),
            (&[3], &[3], &[1], &[1], true),
        ];
        for (k, s, p, d, ceil) in cases {
            let (vi, ii) = max_pool(&ints, 2, k, s, p, d, ceil).unwrap();
            let (vf, fi) = max_pool(&floats, 2, k, s, p, d, ceil).unwrap();
            assert_eq!(vf.to_f64_vec(), vi.to_f64_vec());
            assert_eq!(fi.to_i64_vec(), ii.to_i64_vec());
        }
    }

    /// The values-only kernel gives exactly the values of the kernel that tracks indices, in
    /// 1, 2 and 3 dimensions, with padding, dilation, ceil mode, NaN and -inf in the input.
    #[test]
    fn values_only_max_pool_matches_indexed_values() {
        let input = |sizes: &[usize]| {
            let numel: usize = sizes.iter().product();
            let data: Vec<f32> = (0..numel)
                .map(|i| match i % 37 {
                    5 => f32::NAN,
                    11 => f32::NEG_INFINITY,
                    _ => ((i * 7919) % 101) as f32 - 50.0,
                })
                .collect();
            Tensor::from_vec(data, sizes).unwrap()
        };
        type PoolCase<'a> = (usize, &'a [i64], &'a [i64], &'a [i64], &'a [i64], bool);
        let cases: [PoolCase; 6] = [
            (2, &[3], &[2], &[1], &[1], false),
            (2, &[3, 2], &[2, 3], &[1, 0], &[1], true),
            (2, &[2], &[1], &[0], &[2], false),
            (1, &[3], &[2], &[1], &[2], true),
            (3, &[2, 3, 3], &[2, 2, 1], &[1, 1, 1], &[1], true),
            (3, &[3], &[3], &[1], &[1], false),
        ];
        for (spatial, k, s, p, d, ceil) in cases {
            let x = input(&[&[2, 3][..], &[7, 9, 8][3 - spatial..]].concat());
            let (indexed, _) = max_pool(&x, spatial, k, s, p, d, ceil).unwrap();
            let alone = max_pool_values(&x, spatial, k, s, p, d, ceil).unwrap();
            assert_eq!(alone.sizes(), indexed.sizes());
            let bits = |t: &Tensor| {
                t.to_f64_vec()
                    .iter()
                    .map(|v| v.to_bits())
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                bits(&alone),
                bits(&indexed),
                "case {k:?} {s:?} {p:?} {d:?} {ceil}"
            );
        }
    }

    #[test]
    fn native_max_pool_propagates_nan() {
        let x = Tensor::from_vec(vec![1.0f64, f64::NAN, 3.0, 2.0], &[1, 4]).unwrap();
        let (v, i) = max_pool(&x, 1, &[2], &[2], &[0], &[1], false).unwrap();
        let v = v.to_f64_vec();
        assert!(v[0].is_nan() && v[1] == 3.0);
        assert_eq!(i.to_i64_vec(), vec![1, 2]);
    }
}
