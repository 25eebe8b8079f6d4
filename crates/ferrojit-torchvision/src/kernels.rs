//! The operator kernels on ferrojit tensors, following torchvision's CPU kernels: the same
//! argument checks, the same sampling rules and the same arithmetic in the input's precision.

use ferrojit_tensor::{DType, Tensor};

use crate::error::TorchvisionError;
use crate::real::Real;

type Result<T> = std::result::Result<T, TorchvisionError>;

fn shape_error(message: impl Into<String>) -> TorchvisionError {
    TorchvisionError::Shape(message.into())
}

/// Converts a non-negative `i64` argument to `usize`.
fn non_negative(name: &str, value: i64) -> Result<usize> {
    usize::try_from(value).map_err(|_| {
        TorchvisionError::Argument(format!("{name} must be non-negative, got {value}"))
    })
}

fn positive(name: &str, value: i64) -> Result<usize> {
    match usize::try_from(value) {
        Ok(v) if v > 0 => Ok(v),
        _ => Err(TorchvisionError::Argument(format!(
            "{name} must be positive, got {value}"
        ))),
    }
}

fn floating_dtype(argument: &'static str, tensor: &Tensor) -> Result<DType> {
    match tensor.dtype() {
        dtype @ (DType::Float32 | DType::Float64) => Ok(dtype),
        dtype => Err(TorchvisionError::DType {
            argument,
            dtype,
            requirement: "float32 or float64",
        }),
    }
}

fn same_dtype(argument: &'static str, tensor: &Tensor, dtype: DType) -> Result<()> {
    if tensor.dtype() == dtype {
        Ok(())
    } else {
        Err(TorchvisionError::DType {
            argument,
            dtype: tensor.dtype(),
            requirement: "must match the input's dtype",
        })
    }
}

/// `x` rounded toward negative infinity, in `T`.
fn floor<T: Real>(x: T) -> T {
    T::from_f64(x.to_f64().floor())
}

/// C++'s `(int)x`: truncation toward zero.
fn truncate<T: Real>(x: T) -> i64 {
    x.to_f64().trunc() as i64
}

fn max<T: Real>(a: T, b: T) -> T {
    if a < b {
        b
    } else {
        a
    }
}

fn min<T: Real>(a: T, b: T) -> T {
    if b < a {
        b
    } else {
        a
    }
}

/// The rois argument: `[K, 5]` rows of (batch index, x1, y1, x2, y2).
fn check_rois(rois: &Tensor) -> Result<usize> {
    if rois.dim() != 2 || rois.sizes()[1] != 5 {
        return Err(shape_error(format!(
            "Tensor rois should have shape as Tensor[K, 5], got {:?}",
            rois.sizes()
        )));
    }
    Ok(rois.sizes()[0])
}

fn check_input_4d(input: &Tensor) -> Result<[usize; 4]> {
    match input.sizes() {
        &[n, c, h, w] => Ok([n, c, h, w]),
        other => Err(shape_error(format!(
            "input must be a 4-D tensor [N, C, H, W], got {other:?}"
        ))),
    }
}

/// The batch index of a roi row, checked against the batch size.
fn batch_index<T: Real>(value: T, batch: usize) -> Result<usize> {
    let index = truncate(value);
    usize::try_from(index)
        .ok()
        .filter(|&i| i < batch)
        .ok_or_else(|| {
            shape_error(format!(
                "roi batch index {index} is out of range for a batch of {batch}"
            ))
        })
}

/// `torchvision::nms`: indices of the boxes kept by greedy non-maximum suppression, in
/// decreasing score order (ties keep their original order, as with a stable sort).
pub fn nms(dets: &Tensor, scores: &Tensor, iou_threshold: f64) -> Result<Tensor> {
    if dets.dim() != 2 {
        return Err(shape_error(format!(
            "boxes should be a 2d tensor, got {}D",
            dets.dim()
        )));
    }
    if dets.sizes()[1] != 4 {
        return Err(shape_error(format!(
            "boxes should have 4 elements in dimension 1, got {}",
            dets.sizes()[1]
        )));
    }
    if scores.dim() != 1 {
        return Err(shape_error(format!(
            "scores should be a 1d tensor, got {}D",
            scores.dim()
        )));
    }
    if dets.sizes()[0] != scores.sizes()[0] {
        return Err(shape_error(format!(
            "boxes and scores should have same number of elements in dimension 0, got {} and {}",
            dets.sizes()[0],
            scores.sizes()[0]
        )));
    }
    let dtype = floating_dtype("dets", dets)?;
    same_dtype("scores", scores, dtype)?;
    let keep = match dtype {
        DType::Float32 => nms_typed::<f32>(dets, scores, iou_threshold)?,
        _ => nms_typed::<f64>(dets, scores, iou_threshold)?,
    };
    let count = keep.len();
    Ok(Tensor::from_vec(keep, &[count])?)
}

fn nms_typed<T: Real>(dets: &Tensor, scores: &Tensor, iou_threshold: f64) -> Result<Vec<i64>> {
    let boxes: Vec<T> = dets.to_vec()?;
    let scores: Vec<T> = scores.to_vec()?;
    let count = scores.len();
    let mut order: Vec<usize> = (0..count).collect();
    // Descending and stable; NaN sorts first, as torch.sort(descending=True) puts it.
    order.sort_by(|&a, &b| {
        let (sa, sb) = (scores[a], scores[b]);
        // Only NaN is unordered with itself.
        let is_nan = |v: T| v.partial_cmp(&v).is_none();
        match (is_nan(sa), is_nan(sb)) {
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) => std::cmp::Ordering::Less,
            (false, true) => std::cmp::Ordering::Greater,
            (false, false) => sb.partial_cmp(&sa).unwrap_or(std::cmp::Ordering::Equal),
        }
    });
    let corner = |i: usize, k: usize| boxes.get(i * 4 + k).copied().unwrap_or(T::ZERO);
    let areas: Vec<T> = (0..count)
        .map(|i| (corner(i, 2) - corner(i, 0)) * (corner(i, 3) - corner(i, 1)))
        .collect();
    let mut suppressed = vec![false; count];
    let mut keep = Vec::new();
    for (position, &i) in order.iter().enumerate() {
        if suppressed[i] {
            continue;
        }
        keep.push(i as i64);
        let (ix1, iy1, ix2, iy2) = (corner(i, 0), corner(i, 1), corner(i, 2), corner(i, 3));
        let area_i = areas[i];
        for &j in &order[position + 1..] {
            if suppressed[j] {
                continue;
            }
            let xx1 = max(ix1, corner(j, 0));
            let yy1 = max(iy1, corner(j, 1));
            let xx2 = min(ix2, corner(j, 2));
            let yy2 = min(iy2, corner(j, 3));
            let w = max(T::ZERO, xx2 - xx1);
            let h = max(T::ZERO, yy2 - yy1);
            let intersection = w * h;
            let overlap = intersection / (area_i + areas[j] - intersection);
            if overlap.to_f64() > iou_threshold {
                suppressed[j] = true;
            }
        }
    }
    Ok(keep)
}

/// Bilinear sample of one `height × width` plane at (y, x) with roi_align's border rules:
/// outside [-1, size] is zero, coordinates below zero clamp to zero, the last row/column
/// repeats. Returns the four (flat index, weight) pairs.
fn bilinear_weights<T: Real>(height: usize, width: usize, y: T, x: T) -> Option<[(usize, T); 4]> {
    let (height_t, width_t) = (T::from_i64(height as i64), T::from_i64(width as i64));
    let minus_one = T::ZERO - T::ONE;
    // Written as "not in range" so NaN coordinates count as outside.
    let inside = y >= minus_one && y <= height_t && x >= minus_one && x <= width_t;
    if !inside || height == 0 || width == 0 {
        return None;
    }
    let mut y = if y <= T::ZERO { T::ZERO } else { y };
    let mut x = if x <= T::ZERO { T::ZERO } else { x };
    let mut y_low = truncate(y).max(0) as usize;
    let mut x_low = truncate(x).max(0) as usize;
    let y_high;
    let x_high;
    if y_low >= height - 1 {
        y_low = height - 1;
        y_high = height - 1;
        y = T::from_i64(y_low as i64);
    } else {
        y_high = y_low + 1;
    }
    if x_low >= width - 1 {
        x_low = width - 1;
        x_high = width - 1;
        x = T::from_i64(x_low as i64);
    } else {
        x_high = x_low + 1;
    }
    let ly = y - T::from_i64(y_low as i64);
    let lx = x - T::from_i64(x_low as i64);
    let hy = T::ONE - ly;
    let hx = T::ONE - lx;
    Some([
        (y_low * width + x_low, hy * hx),
        (y_low * width + x_high, hy * lx),
        (y_high * width + x_low, ly * hx),
        (y_high * width + x_high, ly * lx),
    ])
}

fn sample<T: Real>(plane: &[T], weights: &[(usize, T); 4]) -> T {
    let value = |k: usize| {
        let (index, weight) = weights[k];
        weight * plane.get(index).copied().unwrap_or(T::ZERO)
    };
    value(0) + value(1) + value(2) + value(3)
}

/// Number of samples per bin side: `sampling_ratio` when positive, else
/// `ceil(roi_size / pooled)` truncated to an integer as C++ does.
fn grid_size<T: Real>(sampling_ratio: i64, roi_size: T, pooled: usize) -> i64 {
    if sampling_ratio > 0 {
        sampling_ratio
    } else {
        (roi_size / T::from_i64(pooled as i64)).to_f64().ceil() as i64
    }
}

/// `torchvision::roi_align`: average of bilinear samples over each of the
/// `pooled_height × pooled_width` bins of every roi. Output `[K, C, PH, PW]`.
pub fn roi_align(
    input: &Tensor,
    rois: &Tensor,
    spatial_scale: f64,
    pooled_height: i64,
    pooled_width: i64,
    sampling_ratio: i64,
    aligned: bool,
) -> Result<Tensor> {
    let dtype = floating_dtype("input", input)?;
    same_dtype("rois", rois, dtype)?;
    let shape = check_input_4d(input)?;
    let num_rois = check_rois(rois)?;
    let pooled = (
        non_negative("pooled_height", pooled_height)?,
        non_negative("pooled_width", pooled_width)?,
    );
    match dtype {
        DType::Float32 => roi_align_typed::<f32>(
            input,
            rois,
            shape,
            num_rois,
            spatial_scale,
            pooled,
            sampling_ratio,
            aligned,
        ),
        _ => roi_align_typed::<f64>(
            input,
            rois,
            shape,
            num_rois,
            spatial_scale,
            pooled,
            sampling_ratio,
            aligned,
        ),
    }
}

/// A roi row scaled to feature-map coordinates: (batch, start_w, start_h, end_w, end_h).
fn scaled_roi<T: Real>(
    rois: &[T],
    n: usize,
    batch: usize,
    scale: T,
    offset: T,
) -> Result<(usize, T, T, T, T)> {
    let row = rois
        .get(n * 5..n * 5 + 5)
        .ok_or_else(|| shape_error("rois has fewer rows than its shape says"))?;
    Ok((
        batch_index(row[0], batch)?,
        row[1] * scale - offset,
        row[2] * scale - offset,
        row[3] * scale - offset,
        row[4] * scale - offset,
    ))
}

#[allow(clippy::too_many_arguments)]
fn roi_align_typed<T: Real>(
    input: &Tensor,
    rois: &Tensor,
    [batch, channels, height, width]: [usize; 4],
    num_rois: usize,
    spatial_scale: f64,
    (pooled_height, pooled_width): (usize, usize),
    sampling_ratio: i64,
    aligned: bool,
) -> Result<Tensor> {
    let data: Vec<T> = input.to_vec()?;
    let rois: Vec<T> = rois.to_vec()?;
    let scale = T::from_f64(spatial_scale);
    let offset = if aligned { T::from_f64(0.5) } else { T::ZERO };
    let plane_size = height * width;
    let bins = pooled_height * pooled_width;
    let mut output = vec![T::ZERO; num_rois * channels * bins];
    for n in 0..num_rois {
        let (b, start_w, start_h, end_w, end_h) = scaled_roi(&rois, n, batch, scale, offset)?;
        let mut roi_width = end_w - start_w;
        let mut roi_height = end_h - start_h;
        if !aligned {
            // Malformed rois are forced to 1x1.
            roi_width = max(roi_width, T::ONE);
            roi_height = max(roi_height, T::ONE);
        }
        let bin_h = roi_height / T::from_i64(pooled_height as i64);
        let bin_w = roi_width / T::from_i64(pooled_width as i64);
        let grid_h = grid_size(sampling_ratio, roi_height, pooled_height);
        let grid_w = grid_size(sampling_ratio, roi_width, pooled_width);
        let count = T::from_i64((grid_h * grid_w).max(1));
        // Sample positions and weights for every bin, shared by all channels.
        let mut samples: Vec<Option<[(usize, T); 4]>> = Vec::new();
        for ph in 0..pooled_height {
            for pw in 0..pooled_width {
                for iy in 0..grid_h.max(0) {
                    let y = start_h
                        + T::from_i64(ph as i64) * bin_h
                        + T::from_f64(iy as f64 + 0.5) * bin_h / T::from_i64(grid_h);
                    for ix in 0..grid_w.max(0) {
                        let x = start_w
                            + T::from_i64(pw as i64) * bin_w
                            + T::from_f64(ix as f64 + 0.5) * bin_w / T::from_i64(grid_w);
                        samples.push(bilinear_weights(height, width, y, x));
                    }
                }
            }
        }
        let per_bin = (grid_h.max(0) * grid_w.max(0)) as usize;
        for c in 0..channels {
            let plane_start = (b * channels + c) * plane_size;
            let plane = data
                .get(plane_start..plane_start + plane_size)
                .unwrap_or(&[]);
            for bin in 0..bins {
                let mut total = T::ZERO;
                for weights in samples[bin * per_bin..(bin + 1) * per_bin].iter().flatten() {
                    total += sample(plane, weights);
                }
                output[(n * channels + c) * bins + bin] = total / count;
            }
        }
    }
    Ok(Tensor::from_vec(
        output,
        &[num_rois, channels, pooled_height, pooled_width],
    )?)
}

/// `torchvision::roi_pool`: max over each bin of every roi (corners rounded to the grid).
/// Returns the output `[K, C, PH, PW]` and the int32 argmax (flat index in the plane, or -1
/// for an empty bin).
pub fn roi_pool(
    input: &Tensor,
    rois: &Tensor,
    spatial_scale: f64,
    pooled_height: i64,
    pooled_width: i64,
) -> Result<(Tensor, Tensor)> {
    let dtype = floating_dtype("input", input)?;
    same_dtype("rois", rois, dtype)?;
    let shape = check_input_4d(input)?;
    let num_rois = check_rois(rois)?;
    let pooled = (
        non_negative("pooled_height", pooled_height)?,
        non_negative("pooled_width", pooled_width)?,
    );
    match dtype {
        DType::Float32 => {
            roi_pool_typed::<f32>(input, rois, shape, num_rois, spatial_scale, pooled)
        }
        _ => roi_pool_typed::<f64>(input, rois, shape, num_rois, spatial_scale, pooled),
    }
}

fn roi_pool_typed<T: Real>(
    input: &Tensor,
    rois: &Tensor,
    [batch, channels, height, width]: [usize; 4],
    num_rois: usize,
    spatial_scale: f64,
    (pooled_height, pooled_width): (usize, usize),
) -> Result<(Tensor, Tensor)> {
    let data: Vec<T> = input.to_vec()?;
    let rois: Vec<T> = rois.to_vec()?;
    let scale = T::from_f64(spatial_scale);
    let plane_size = height * width;
    let bins = pooled_height * pooled_width;
    let mut output = vec![T::ZERO; num_rois * channels * bins];
    let mut argmax = vec![0i32; num_rois * channels * bins];
    // C++ std::round: halves away from zero, which f64::round also does.
    let round = |v: T| v.to_f64().round() as i64;
    for n in 0..num_rois {
        let (b, start_w, start_h, end_w, end_h) = scaled_roi(&rois, n, batch, scale, T::ZERO)?;
        let (start_w, start_h, end_w, end_h) =
            (round(start_w), round(start_h), round(end_w), round(end_h));
        let roi_width = (end_w - start_w + 1).max(1);
        let roi_height = (end_h - start_h + 1).max(1);
        let bin_h = T::from_i64(roi_height) / T::from_i64(pooled_height as i64);
        let bin_w = T::from_i64(roi_width) / T::from_i64(pooled_width as i64);
        let clip = |v: i64, limit: usize| v.clamp(0, limit as i64) as usize;
        for ph in 0..pooled_height {
            for pw in 0..pooled_width {
                let h_start = floor(T::from_i64(ph as i64) * bin_h).to_f64() as i64;
                let w_start = floor(T::from_i64(pw as i64) * bin_w).to_f64() as i64;
                let h_end = (T::from_i64(ph as i64 + 1) * bin_h).to_f64().ceil() as i64;
                let w_end = (T::from_i64(pw as i64 + 1) * bin_w).to_f64().ceil() as i64;
                let h_start = clip(h_start + start_h, height);
                let h_end = clip(h_end + start_h, height);
                let w_start = clip(w_start + start_w, width);
                let w_end = clip(w_end + start_w, width);
                let is_empty = h_end <= h_start || w_end <= w_start;
                for c in 0..channels {
                    let plane_start = (b * channels + c) * plane_size;
                    let plane = data
                        .get(plane_start..plane_start + plane_size)
                        .unwrap_or(&[]);
                    let mut best = if is_empty { T::ZERO } else { T::LOWEST_FLOAT };
                    let mut best_index: i32 = -1;
                    for h in h_start..h_end {
                        for w in w_start..w_end {
                            let index = h * width + w;
                            if let Some(&value) = plane.get(index) {
                                if value > best {
                                    best = value;
                                    best_index = i32::try_from(index).unwrap_or(i32::MAX);
                                }
                            }
                        }
                    }
                    let out = ((n * channels + c) * pooled_height + ph) * pooled_width + pw;
                    output[out] = best;
                    argmax[out] = best_index;
                }
            }
        }
    }
    let sizes = [num_rois, channels, pooled_height, pooled_width];
    Ok((
        Tensor::from_vec(output, &sizes)?,
        Tensor::from_vec(argmax, &sizes)?,
    ))
}

/// `torchvision::ps_roi_pool`: position-sensitive average pooling; output channel `c` of bin
/// (ph, pw) averages input channel `(c * PH + ph) * PW + pw` over the bin (corners rounded to
/// the grid, bins clipped to the last row and column). Returns the output
/// `[K, C / (PH*PW), PH, PW]` and the int32 channel mapping.
pub fn ps_roi_pool(
    input: &Tensor,
    rois: &Tensor,
    spatial_scale: f64,
    pooled_height: i64,
    pooled_width: i64,
) -> Result<(Tensor, Tensor)> {
    let dtype = floating_dtype("input", input)?;
    same_dtype("rois", rois, dtype)?;
    let shape = check_input_4d(input)?;
    let num_rois = check_rois(rois)?;
    let pooled = (
        positive("pooled_height", pooled_height)?,
        positive("pooled_width", pooled_width)?,
    );
    if shape[1] % (pooled.0 * pooled.1) != 0 {
        return Err(shape_error(
            "input channels must be a multiple of pooling height * pooling width",
        ));
    }
    match dtype {
        DType::Float32 => {
            ps_roi_pool_typed::<f32>(input, rois, shape, num_rois, spatial_scale, pooled)
        }
        _ => ps_roi_pool_typed::<f64>(input, rois, shape, num_rois, spatial_scale, pooled),
    }
}

fn ps_roi_pool_typed<T: Real>(
    input: &Tensor,
    rois: &Tensor,
    [batch, channels, height, width]: [usize; 4],
    num_rois: usize,
    spatial_scale: f64,
    (pooled_height, pooled_width): (usize, usize),
) -> Result<(Tensor, Tensor)> {
    let data: Vec<T> = input.to_vec()?;
    let rois: Vec<T> = rois.to_vec()?;
    let scale = T::from_f64(spatial_scale);
    let channels_out = channels / (pooled_height * pooled_width);
    let plane_size = height * width;
    let total = num_rois * channels_out * pooled_height * pooled_width;
    let mut output = vec![T::ZERO; total];
    let mut mapping = vec![0i32; total];
    // C++ std::round: halves away from zero, which f64::round also does.
    let round = |v: T| v.to_f64().round() as i64;
    // Unlike roi_pool, the bins are clipped to the last index (height - 1), not to height.
    let clip = |v: i64, size: usize| v.max(0).min(size as i64 - 1);
    for n in 0..num_rois {
        let (b, start_w, start_h, end_w, end_h) = scaled_roi(&rois, n, batch, scale, T::ZERO)?;
        let (start_w, start_h, end_w, end_h) =
            (round(start_w), round(start_h), round(end_w), round(end_h));
        // Too small rois are forced to 1x1.
        let roi_width = (end_w - start_w).max(1);
        let roi_height = (end_h - start_h).max(1);
        let bin_h = T::from_i64(roi_height) / T::from_i64(pooled_height as i64);
        let bin_w = T::from_i64(roi_width) / T::from_i64(pooled_width as i64);
        let mut c_in = 0usize;
        for c_out in 0..channels_out {
            for ph in 0..pooled_height {
                for pw in 0..pooled_width {
                    let h_start = floor(T::from_i64(ph as i64) * bin_h).to_f64() as i64;
                    let w_start = floor(T::from_i64(pw as i64) * bin_w).to_f64() as i64;
                    let h_end = (T::from_i64(ph as i64 + 1) * bin_h).to_f64().ceil() as i64;
                    let w_end = (T::from_i64(pw as i64 + 1) * bin_w).to_f64().ceil() as i64;
                    let h_start = clip(h_start + start_h, height);
                    let h_end = clip(h_end + start_h, height);
                    let w_start = clip(w_start + start_w, width);
                    let w_end = clip(w_end + start_w, width);
                    let index =
                        ((n * channels_out + c_out) * pooled_height + ph) * pooled_width + pw;
                    mapping[index] = i32::try_from(c_in).unwrap_or(i32::MAX);
                    let plane_start = (b * channels + c_in) * plane_size;
                    c_in += 1;
                    if h_end <= h_start || w_end <= w_start {
                        continue;
                    }
                    // Both ranges are now inside [0, size - 1], so the casts are lossless.
                    let (h_start, h_end) = (h_start as usize, h_end as usize);
                    let (w_start, w_end) = (w_start as usize, w_end as usize);
                    let plane = data
                        .get(plane_start..plane_start + plane_size)
                        .unwrap_or(&[]);
                    let mut sum = T::ZERO;
                    for h in h_start..h_end {
                        for w in w_start..w_end {
                            if let Some(&value) = plane.get(h * width + w) {
                                sum += value;
                            }
                        }
                    }
                    let area = T::from_i64(((h_end - h_start) * (w_end - w_start)) as i64);
                    output[index] = sum / area;
                }
            }
        }
    }
    let sizes = [num_rois, channels_out, pooled_height, pooled_width];
    Ok((
        Tensor::from_vec(output, &sizes)?,
        Tensor::from_vec(mapping, &sizes)?,
    ))
}

/// `torchvision::ps_roi_align`: position-sensitive roi_align (always half-pixel aligned);
/// output channel `c` of bin (ph, pw) reads input channel `(c * PH + ph) * PW + pw`.
/// Returns the output `[K, C / (PH*PW), PH, PW]` and the int32 channel mapping.
pub fn ps_roi_align(
    input: &Tensor,
    rois: &Tensor,
    spatial_scale: f64,
    pooled_height: i64,
    pooled_width: i64,
    sampling_ratio: i64,
) -> Result<(Tensor, Tensor)> {
    let dtype = floating_dtype("input", input)?;
    same_dtype("rois", rois, dtype)?;
    let shape = check_input_4d(input)?;
    let num_rois = check_rois(rois)?;
    let pooled = (
        positive("pooled_height", pooled_height)?,
        positive("pooled_width", pooled_width)?,
    );
    if shape[1] % (pooled.0 * pooled.1) != 0 {
        return Err(shape_error(
            "input channels must be a multiple of pooling height * pooling width",
        ));
    }
    match dtype {
        DType::Float32 => ps_roi_align_typed::<f32>(
            input,
            rois,
            shape,
            num_rois,
            spatial_scale,
            pooled,
            sampling_ratio,
        ),
        _ => ps_roi_align_typed::<f64>(
            input,
            rois,
            shape,
            num_rois,
            spatial_scale,
            pooled,
            sampling_ratio,
        ),
    }
}

fn ps_roi_align_typed<T: Real>(
    input: &Tensor,
    rois: &Tensor,
    [batch, channels, height, width]: [usize; 4],
    num_rois: usize,
    spatial_scale: f64,
    (pooled_height, pooled_width): (usize, usize),
    sampling_ratio: i64,
) -> Result<(Tensor, Tensor)> {
    let data: Vec<T> = input.to_vec()?;
    let rois: Vec<T> = rois.to_vec()?;
    let scale = T::from_f64(spatial_scale);
    let channels_out = channels / (pooled_height * pooled_width);
    let plane_size = height * width;
    let total = num_rois * channels_out * pooled_height * pooled_width;
    let mut output = vec![T::ZERO; total];
    let mut mapping = vec![0i32; total];
    for n in 0..num_rois {
        let (b, start_w, start_h, end_w, end_h) =
            scaled_roi(&rois, n, batch, scale, T::from_f64(0.5))?;
        let roi_width = end_w - start_w;
        let roi_height = end_h - start_h;
        let bin_h = roi_height / T::from_i64(pooled_height as i64);
        let bin_w = roi_width / T::from_i64(pooled_width as i64);
        let grid_h = grid_size(sampling_ratio, roi_height, pooled_height);
        let grid_w = grid_size(sampling_ratio, roi_width, pooled_width);
        // No clamp to 1 here (unlike roi_align): an empty grid divides by zero, as in torchvision.
        let count = T::from_i64(grid_h * grid_w);
        let mut c_in = 0usize;
        for c_out in 0..channels_out {
            for ph in 0..pooled_height {
                for pw in 0..pooled_width {
                    let index =
                        ((n * channels_out + c_out) * pooled_height + ph) * pooled_width + pw;
                    let h_start = T::from_i64(ph as i64) * bin_h + start_h;
                    let w_start = T::from_i64(pw as i64) * bin_w + start_w;
                    let plane_start = (b * channels + c_in) * plane_size;
                    let plane = data
                        .get(plane_start..plane_start + plane_size)
                        .unwrap_or(&[]);
                    let mut sum = T::ZERO;
                    for iy in 0..grid_h.max(0) {
                        let y =
                            h_start + T::from_f64(iy as f64 + 0.5) * bin_h / T::from_i64(grid_h);
                        for ix in 0..grid_w.max(0) {
                            let x = w_start
                                + T::from_f64(ix as f64 + 0.5) * bin_w / T::from_i64(grid_w);
                            if let Some(weights) = bilinear_weights(height, width, y, x) {
                                sum += sample(plane, &weights);
                            }
                        }
                    }
                    output[index] = sum / count;
                    mapping[index] = i32::try_from(c_in).unwrap_or(i32::MAX);
                    c_in += 1;
                }
            }
        }
    }
    let sizes = [num_rois, channels_out, pooled_height, pooled_width];
    Ok((
        Tensor::from_vec(output, &sizes)?,
        Tensor::from_vec(mapping, &sizes)?,
    ))
}

/// The integer arguments of `deform_conv2d`, as (height, width) pairs.
#[derive(Debug, Clone, PartialEq)]
pub struct DeformConvParameters {
    pub stride: (i64, i64),
    pub padding: (i64, i64),
    pub dilation: (i64, i64),
    pub groups: i64,
    pub offset_groups: i64,
    pub use_mask: bool,
}

/// Bilinear sample for deformable convolution: zero outside (-1, size), and corners that
/// fall outside the plane read as zero.
fn deform_sample<T: Real>(plane: &[T], height: usize, width: usize, h: T, w: T) -> T {
    let (height_t, width_t) = (T::from_i64(height as i64), T::from_i64(width as i64));
    let minus_one = T::ZERO - T::ONE;
    if !(h > minus_one && h < height_t && w > minus_one && w < width_t) {
        return T::ZERO;
    }
    let h_low_t = floor(h);
    let w_low_t = floor(w);
    let h_low = h_low_t.to_f64() as i64;
    let w_low = w_low_t.to_f64() as i64;
    let (h_high, w_high) = (h_low + 1, w_low + 1);
    let lh = h - h_low_t;
    let lw = w - w_low_t;
    let hh = T::ONE - lh;
    let hw = T::ONE - lw;
    let read = |y: i64, x: i64| -> T {
        if y >= 0 && x >= 0 && y < height as i64 && x < width as i64 {
            plane
                .get(y as usize * width + x as usize)
                .copied()
                .unwrap_or(T::ZERO)
        } else {
            T::ZERO
        }
    };
    let v1 = read(h_low, w_low);
    let v2 = read(h_low, w_high);
    let v3 = read(h_high, w_low);
    let v4 = read(h_high, w_high);
    hh * hw * v1 + hh * lw * v2 + lh * hw * v3 + lh * lw * v4
}

/// `torchvision::deform_conv2d`: convolution whose kernel taps are moved by learned offsets
/// (and scaled by a mask when `use_mask`). Output `[B, C_out, H_out, W_out]`.
pub fn deform_conv2d(
    input: &Tensor,
    weight: &Tensor,
    offset: &Tensor,
    mask: &Tensor,
    bias: &Tensor,
    parameters: &DeformConvParameters,
) -> Result<Tensor> {
    let dtype = floating_dtype("input", input)?;
    same_dtype("weight", weight, dtype)?;
    same_dtype("offset", offset, dtype)?;
    same_dtype("bias", bias, dtype)?;
    if parameters.use_mask {
        same_dtype("mask", mask, dtype)?;
    }
    match dtype {
        DType::Float32 => deform_conv2d_typed::<f32>(input, weight, offset, mask, bias, parameters),
        _ => deform_conv2d_typed::<f64>(input, weight, offset, mask, bias, parameters),
    }
}

fn deform_conv2d_typed<T: Real>(
    input: &Tensor,
    weight: &Tensor,
    offset: &Tensor,
    mask: &Tensor,
    bias: &Tensor,
    parameters: &DeformConvParameters,
) -> Result<Tensor> {
    let [batch, in_channels, height, width] = check_input_4d(input)?;
    let [out_channels, weight_in, kernel_h, kernel_w] = match weight.sizes() {
        &[a, b, c, d] => [a, b, c, d],
        other => return Err(shape_error(format!("weight must be 4-D, got {other:?}"))),
    };
    let stride_h = positive("stride_h", parameters.stride.0)?;
    let stride_w = positive("stride_w", parameters.stride.1)?;
    let pad_h = non_negative("pad_h", parameters.padding.0)?;
    let pad_w = non_negative("pad_w", parameters.padding.1)?;
    let dilation_h = positive("dilation_h", parameters.dilation.0)?;
    let dilation_w = positive("dilation_w", parameters.dilation.1)?;
    let groups = positive("groups", parameters.groups)?;
    let offset_groups = positive("offset_groups", parameters.offset_groups)?;
    if kernel_h == 0 || kernel_w == 0 {
        return Err(shape_error("weight must have a non-empty kernel"));
    }
    if in_channels % offset_groups != 0 {
        return Err(shape_error(format!(
            "input.size(1) ({in_channels}) must be divisible by offset_groups ({offset_groups})"
        )));
    }
    if in_channels % groups != 0 || out_channels % groups != 0 || weight_in * groups != in_channels
    {
        return Err(shape_error(format!(
            "weight of shape {:?} does not fit {in_channels} input channels in {groups} groups",
            weight.sizes()
        )));
    }
    let effective_h = dilation_h * (kernel_h - 1) + 1;
    let effective_w = dilation_w * (kernel_w - 1) + 1;
    if height + 2 * pad_h < effective_h || width + 2 * pad_w < effective_w {
        return Err(shape_error("the padded input is smaller than the kernel"));
    }
    let out_h = (height + 2 * pad_h - effective_h) / stride_h + 1;
    let out_w = (width + 2 * pad_w - effective_w) / stride_w + 1;
    let taps = kernel_h * kernel_w;
    let expected_offset = [batch, offset_groups * 2 * taps, out_h, out_w];
    if offset.sizes() != expected_offset {
        return Err(shape_error(format!(
            "offset should have shape {expected_offset:?}, got {:?}",
            offset.sizes()
        )));
    }
    let expected_mask = [batch, offset_groups * taps, out_h, out_w];
    if parameters.use_mask && mask.sizes() != expected_mask {
        return Err(shape_error(format!(
            "mask should have shape {expected_mask:?}, got {:?}",
            mask.sizes()
        )));
    }
    if bias.sizes() != [out_channels] {
        return Err(shape_error(format!(
            "bias should have shape [{out_channels}], got {:?}",
            bias.sizes()
        )));
    }
    let data: Vec<T> = input.to_vec()?;
    let weights: Vec<T> = weight.to_vec()?;
    let offsets: Vec<T> = offset.to_vec()?;
    let masks: Vec<T> = if parameters.use_mask {
        mask.to_vec()?
    } else {
        Vec::new()
    };
    let biases: Vec<T> = bias.to_vec()?;
    let out_plane = out_h * out_w;
    let channels_per_offset_group = in_channels / offset_groups;
    let in_per_group = in_channels / groups;
    let out_per_group = out_channels / groups;
    // Deformed samples ("columns"): [in_channels * taps, out_h * out_w] for one image.
    let mut columns = vec![T::ZERO; in_channels * taps * out_plane];
    let mut output = vec![T::ZERO; batch * out_channels * out_plane];
    let at = |values: &[T], index: usize| values.get(index).copied().unwrap_or(T::ZERO);
    for b in 0..batch {
        for c in 0..in_channels {
            let group = c / channels_per_offset_group;
            let plane_start = (b * in_channels + c) * height * width;
            let plane = data
                .get(plane_start..plane_start + height * width)
                .unwrap_or(&[]);
            for i in 0..kernel_h {
                for j in 0..kernel_w {
                    let tap = i * kernel_w + j;
                    let offset_channel = b * offset_groups * 2 * taps + group * 2 * taps + 2 * tap;
                    let mask_channel = b * offset_groups * taps + group * taps + tap;
                    for oy in 0..out_h {
                        for ox in 0..out_w {
                            let position = oy * out_w + ox;
                            let offset_h = at(&offsets, offset_channel * out_plane + position);
                            let offset_w =
                                at(&offsets, (offset_channel + 1) * out_plane + position);
                            let mask_value = if parameters.use_mask {
                                at(&masks, mask_channel * out_plane + position)
                            } else {
                                T::ONE
                            };
                            let y = T::from_i64(
                                (oy * stride_h) as i64 - pad_h as i64 + (i * dilation_h) as i64,
                            ) + offset_h;
                            let x = T::from_i64(
                                (ox * stride_w) as i64 - pad_w as i64 + (j * dilation_w) as i64,
                            ) + offset_w;
                            columns[(c * taps + tap) * out_plane + position] =
                                mask_value * deform_sample(plane, height, width, y, x);
                        }
                    }
                }
            }
        }
        for g in 0..groups {
            for oc in g * out_per_group..(g + 1) * out_per_group {
                let out_start = (b * out_channels + oc) * out_plane;
                let bias_value = at(&biases, oc);
                for position in 0..out_plane {
                    let mut total = T::ZERO;
                    for ic in 0..in_per_group {
                        let c = g * in_per_group + ic;
                        for tap in 0..taps {
                            total += at(&weights, (oc * in_per_group + ic) * taps + tap)
                                * columns[(c * taps + tap) * out_plane + position];
                        }
                    }
                    output[out_start + position] = total + bias_value;
                }
            }
        }
    }
    Ok(Tensor::from_vec(
        output,
        &[batch, out_channels, out_h, out_w],
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nms_keeps_the_best_of_overlapping_boxes() {
        // Boxes 0 and 1 overlap with IoU 81/119 ≈ 0.68; box 2 is apart.
        let boxes = Tensor::from_vec(
            vec![
                0.0f32, 0.0, 10.0, 10.0, 1.0, 1.0, 11.0, 11.0, 20.0, 20.0, 30.0, 30.0,
            ],
            &[3, 4],
        )
        .unwrap();
        let scores = Tensor::from_vec(vec![0.5f32, 0.9, 0.7], &[3]).unwrap();
        let keep = nms(&boxes, &scores, 0.5).unwrap();
        assert_eq!(keep.to_vec::<i64>().unwrap(), vec![1, 2]);
        let keep = nms(&boxes, &scores, 0.7).unwrap();
        assert_eq!(keep.to_vec::<i64>().unwrap(), vec![1, 2, 0]);
    }

    #[test]
    fn bad_shapes_are_errors() {
        let boxes = Tensor::from_vec(vec![0.0f32; 6], &[2, 3]).unwrap();
        let scores = Tensor::from_vec(vec![0.0f32; 2], &[2]).unwrap();
        assert!(nms(&boxes, &scores, 0.5).is_err());
        let input = Tensor::from_vec(vec![0.0f32; 4], &[1, 1, 2, 2]).unwrap();
        let rois = Tensor::from_vec(vec![5.0f32, 0.0, 0.0, 1.0, 1.0], &[1, 5]).unwrap();
        // Batch index 5 for a batch of 1.
        assert!(roi_align(&input, &rois, 1.0, 2, 2, 2, false).is_err());
        assert!(roi_pool(&input, &rois.to_dtype(DType::Float64), 1.0, 2, 2).is_err());
    }

    #[test]
    fn roi_align_of_a_constant_plane_is_that_constant() {
        let input = Tensor::from_vec(vec![3.0f64; 16], &[1, 1, 4, 4]).unwrap();
        let rois = Tensor::from_vec(vec![0.0f64, 0.5, 0.5, 2.5, 2.5], &[1, 5]).unwrap();
        let output = roi_align(&input, &rois, 1.0, 2, 2, 2, true).unwrap();
        assert_eq!(output.sizes(), &[1, 1, 2, 2]);
        assert_eq!(output.to_vec::<f64>().unwrap(), vec![3.0; 4]);
    }
}
