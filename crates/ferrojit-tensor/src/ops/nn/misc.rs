//! Embedding, embedding_bag, pad, pixel_shuffle/unshuffle, one_hot, scaled dot-product
//! attention, cosine_similarity, pairwise_distance and normalize.

use super::{from_f64, invalid, require_float};
use crate::dtype::DType;
use crate::element::Element;
use crate::error::{format_shape, Result, TensorError};
use crate::macros::dispatch_dtype;
use crate::shape::{broadcast_shapes, contiguous_strides, wrap_dim};
use crate::tensor::Tensor;

/// `torch.embedding(weight, indices, padding_idx)`: rows of `weight` picked by `indices`.
pub fn embedding(weight: &Tensor, indices: &Tensor) -> Result<Tensor> {
    if weight.dim() != 2 {
        return Err(invalid("'weight' must be 2-D"));
    }
    if !matches!(indices.dtype(), DType::Int64 | DType::Int32) {
        return Err(invalid(format!(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got {} instead",
            legacy_name(indices.dtype())
        )));
    }
    let flat = indices.reshape_usize(&[indices.numel()])?;
    let rows = weight.index_select(0, &flat)?;
    let mut out = indices.sizes().to_vec();
    out.push(weight.sizes()[1]);
    rows.reshape_usize(&out)
}

pub(super) fn legacy_name(d: DType) -> String {
    format!(
        "torch.{}Tensor",
        d.to_torch_storage_name().trim_end_matches("Storage")
    )
}

/// `torch.embedding_bag` (mode 0 = sum, 1 = mean, 2 = max). Returns
/// (output, offset2bag, bag_size, max_indices) like `aten::embedding_bag`.
#[allow(clippy::too_many_arguments)]
pub fn embedding_bag(
    weight: &Tensor,
    indices: &Tensor,
    offsets: &Tensor,
    mode: i64,
    per_sample_weights: Option<&Tensor>,
    include_last_offset: bool,
    padding_idx: Option<i64>,
) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    let dtype = require_float(weight, "embedding_bag")?;
    if weight.dim() != 2 {
        return Err(invalid("weight has to be a 2D Tensor"));
    }
    let (num, dim) = (weight.sizes()[0], weight.sizes()[1]);
    let (idx, offs): (Vec<i64>, Vec<i64>) = if indices.dim() == 2 {
        let (b, l) = (indices.sizes()[0], indices.sizes()[1]);
        (
            indices.to_i64_vec(),
            (0..b).map(|i| (i * l) as i64).collect(),
        )
    } else if indices.dim() == 1 {
        if offsets.dim() != 1 {
            return Err(invalid("offsets has to be a 1D Tensor"));
        }
        (indices.to_i64_vec(), offsets.to_i64_vec())
    } else {
        return Err(invalid("input has to be 1D or 2D Tensor"));
    };
    let mut bags: Vec<(usize, usize)> = Vec::new();
    let count = if include_last_offset {
        offs.len().saturating_sub(1)
    } else {
        offs.len()
    };
    for b in 0..count {
        let start = offs[b].max(0) as usize;
        let end = if b + 1 < offs.len() {
            offs[b + 1].max(0) as usize
        } else {
            idx.len()
        };
        if start > end || end > idx.len() {
            return Err(invalid(
                "offsets must be monotonically increasing and within the input",
            ));
        }
        bags.push((start, end));
    }
    if mode == 2 && per_sample_weights.is_some() {
        return Err(invalid("embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum'"));
    }
    let pad = padding_idx.map(|p| if p < 0 { p + num as i64 } else { p });
    let w = weight.to_f64_vec();
    let psw = per_sample_weights.map(|p| p.to_f64_vec());
    let mut out = Vec::with_capacity(bags.len() * dim);
    let mut bag_size = Vec::new();
    let mut max_idx = Vec::new();
    for &(s, e) in &bags {
        let mut acc = vec![if mode == 2 { f64::NEG_INFINITY } else { 0.0 }; dim];
        let mut arg = vec![-1i64; dim];
        let mut n = 0usize;
        for (k, &i) in idx[s..e].iter().enumerate() {
            if i < 0 || i as usize >= num {
                return Err(invalid(format!("embedding_bag: index {i} out of range")));
            }
            if Some(i) == pad {
                continue;
            }
            n += 1;
            let scale = psw.as_ref().map_or(1.0, |p| p[s + k]);
            for d in 0..dim {
                let v = w[i as usize * dim + d];
                if mode == 2 {
                    if arg[d] < 0 || v > acc[d] {
                        acc[d] = v;
                        arg[d] = i;
                    }
                } else {
                    acc[d] += v * scale;
                }
            }
        }
        if mode == 1 && n > 0 {
            acc.iter_mut().for_each(|v| *v /= n as f64);
        }
        if n == 0 {
            acc.fill(0.0);
        }
        out.extend(acc);
        bag_size.push(n as i64);
        max_idx.extend(arg.iter().map(|&a| a.max(0)));
    }
    let nb = bags.len();
    // PyTorch's sum fast path (float/half weights with unit inner stride, no padding_idx)
    // never fills offset2bag; every other path numbers each index with its bag, counting
    // the offsets at or before it (so indices after an unused last offset join the last bag).
    let fast_path_sum = mode == 0
        && matches!(dtype, DType::Float32 | DType::Float16 | DType::BFloat16)
        && (weight.strides()[1] == 1 || dim <= 1)
        && pad.is_none();
    let offset2bag = if fast_path_sum {
        Vec::new()
    } else {
        let mut marks = vec![0i64; idx.len() + 1];
        for &o in &offs[..count] {
            if let Some(slot) = usize::try_from(o).ok().and_then(|o| marks.get_mut(o)) {
                *slot += 1;
            }
        }
        marks[0] -= 1;
        let mut running = 0i64;
        let mut numbered: Vec<i64> = marks
            .iter()
            .map(|m| {
                running += m;
                running
            })
            .collect();
        numbered.truncate(idx.len());
        numbered
    };
    // Sum mode reports zeros (one per offset); mean and max report non-padding counts.
    let bag_size = if mode == 0 {
        vec![0i64; if indices.dim() == 2 { nb } else { offs.len() }]
    } else {
        bag_size
    };
    let bag_len = bag_size.len();
    // The index outputs take the indices' type when indices and offsets are both int32
    // (PyTorch promotes the two to a common index type).
    let index_type = if indices.dtype() == DType::Int32
        && (offsets.dtype() == DType::Int32 || indices.dim() == 2)
    {
        DType::Int32
    } else {
        DType::Int64
    };
    let index_tensor =
        |values: Vec<i64>, sizes: &[usize]| Tensor::from_values(values, sizes).to_dtype(index_type);
    Ok((
        from_f64(out, &[nb, dim], dtype),
        index_tensor(offset2bag.clone(), &[offset2bag.len()]),
        index_tensor(bag_size.clone(), &[bag_len]),
        if mode == 2 {
            index_tensor(max_idx, &[nb, dim])
        } else {
            index_tensor(bag_size, &[bag_len])
        },
    ))
}

/// Padding modes of `torch.nn.functional.pad`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PadMode {
    Constant,
    Reflect,
    Replicate,
    Circular,
}

impl PadMode {
    pub fn parse(mode: &str) -> Result<PadMode> {
        match mode {
            "constant" => Ok(PadMode::Constant),
            "reflect" => Ok(PadMode::Reflect),
            "replicate" => Ok(PadMode::Replicate),
            "circular" => Ok(PadMode::Circular),
            other => Err(invalid(format!("Unrecognised padding mode {other}"))),
        }
    }
}

/// `torch.nn.functional.pad(input, pad, mode, value)`: `pad` lists (before, after) pairs from
/// the last dim backwards; negative constant padding crops.
pub fn pad(input: &Tensor, pad: &[i64], mode: PadMode, value: f64) -> Result<Tensor> {
    if !pad.len().is_multiple_of(2) {
        return Err(invalid("Padding length must be divisible by 2"));
    }
    let n = pad.len() / 2;
    if n > input.dim() {
        return Err(invalid("Padding length should be less than or equal to two times the input dimension but got padding length ".to_string() + &pad.len().to_string() + " and input of dimension " + &input.dim().to_string()));
    }
    if mode != PadMode::Constant {
        let batch_dims = input.dim() - n;
        if !(1..=2).contains(&batch_dims) || n > 3 {
            return Err(invalid(
                "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now"
                    .to_string(),
            ));
        }
    }
    let nd = input.dim();
    let mut before = vec![0i64; nd];
    let mut after = vec![0i64; nd];
    for k in 0..n {
        before[nd - 1 - k] = pad[2 * k];
        after[nd - 1 - k] = pad[2 * k + 1];
    }
    let mut out_sizes = Vec::with_capacity(nd);
    for d in 0..nd {
        let s = input.sizes()[d] as i64 + before[d] + after[d];
        // Reflect and replicate refuse an empty padded dim; a batch dim may be empty, and
        // circular padding may shrink a dim to nothing, as PyTorch's kernels allow.
        let padded_dim = d >= nd - n;
        let empty_refused =
            matches!(mode, PadMode::Reflect | PadMode::Replicate) && padded_dim && s <= 0;
        if s < 0 || empty_refused {
            return Err(invalid(format!(
                "The input size {}, plus negative padding {} and {} resulted in a negative output size, which is invalid. Check dimension {d} of your input.",
                input.sizes()[d], before[d], after[d]
            )));
        }
        let size = input.sizes()[d] as i64;
        match mode {
            PadMode::Reflect if before[d] >= size.max(1) || after[d] >= size.max(1) => {
                return Err(invalid(format!(
                    "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding ({}, {}) at dimension {d} of input {}",
                    before[d], after[d], format_shape(input.sizes())
                )));
            }
            PadMode::Circular if before[d] > size || after[d] > size => {
                return Err(invalid(
                    "Padding value causes wrapping around more than once.",
                ));
            }
            PadMode::Replicate | PadMode::Circular | PadMode::Reflect
                if size == 0 && (before[d] != 0 || after[d] != 0) =>
            {
                return Err(invalid(format!(
                    "Expected input's non-batch dimensions to have positive length, but input has a shape of {}",
                    format_shape(input.sizes())
                )));
            }
            _ => {}
        }
        out_sizes.push(s as usize);
    }
    let in_sizes = input.sizes().to_vec();
    let in_strides = contiguous_strides(&in_sizes);
    let numel = crate::shape::checked_numel(&out_sizes)?;
    let mut coords = vec![0usize; nd];
    dispatch_dtype!(input.dtype(), T => {
        let x = input.gather::<T>();
        let fill = T::from_f64(value);
        let mut out = Vec::with_capacity(numel);
        for linear in 0..numel {
            let mut rem = linear;
            for d in (0..nd).rev() {
                coords[d] = rem % out_sizes[d].max(1);
                rem /= out_sizes[d].max(1);
            }
            let mut pos = 0usize;
            let mut inside = true;
            for d in 0..nd {
                let size = in_sizes[d] as i64;
                let mut c = coords[d] as i64 - before[d];
                if c < 0 || c >= size {
                    match mode {
                        PadMode::Constant => {
                            inside = false;
                            break;
                        }
                        PadMode::Replicate => c = c.clamp(0, size - 1),
                        PadMode::Reflect => {
                            if c < 0 {
                                c = -c;
                            } else {
                                c = 2 * (size - 1) - c;
                            }
                        }
                        PadMode::Circular => c = c.rem_euclid(size),
                    }
                }
                pos += c as usize * in_strides[d];
            }
            out.push(if inside { x[pos] } else { fill });
        }
        Ok(Tensor::from_values(out, &out_sizes))
    })
}

/// `torch.pixel_shuffle` (`factor` upscale) or, with `inverse`, `pixel_unshuffle`.
pub fn pixel_shuffle(input: &Tensor, factor: i64, inverse: bool) -> Result<Tensor> {
    let name = if inverse {
        "pixel_unshuffle"
    } else {
        "pixel_shuffle"
    };
    if input.dim() < 3 {
        return Err(invalid(format!(
            "{name} expects input to have at least 3 dimensions, but got input with {} dimension(s)",
            input.dim()
        )));
    }
    if factor <= 0 {
        return Err(invalid(format!(
            "{name} expects a positive {}, but got {factor}",
            if inverse {
                "downscale_factor"
            } else {
                "upscale_factor"
            }
        )));
    }
    let r = factor as usize;
    let nd = input.dim();
    let lead: Vec<usize> = input.sizes()[..nd - 3].to_vec();
    let (c, h, w) = (
        input.sizes()[nd - 3],
        input.sizes()[nd - 2],
        input.sizes()[nd - 1],
    );
    let mut shape: Vec<usize> = lead.clone();
    let lead_len = lead.len() as i64;
    let l = |i: i64| lead_len + i;
    let mut perm: Vec<i64> = (0..lead_len).collect();
    let out: Vec<usize> = if !inverse {
        if c % (r * r) != 0 {
            return Err(invalid(format!(
                "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but input.size(-3)={c} is not divisible by {}",
                r * r
            )));
        }
        shape.extend([c / (r * r), r, r, h, w]);
        perm.extend([l(0), l(3), l(1), l(4), l(2)]);
        lead.iter()
            .copied()
            .chain([c / (r * r), h * r, w * r])
            .collect()
    } else {
        if h % r != 0 || w % r != 0 {
            return Err(invalid(format!(
                "pixel_unshuffle expects {} dimension to be divisible by downscale_factor, but input.size({})={} is not divisible by {r}",
                if h % r != 0 { "height" } else { "width" },
                if h % r != 0 { -2 } else { -1 },
                if h % r != 0 { h } else { w }
            )));
        }
        shape.extend([c, h / r, r, w / r, r]);
        perm.extend([l(0), l(2), l(4), l(1), l(3)]);
        lead.iter()
            .copied()
            .chain([c * r * r, h / r, w / r])
            .collect()
    };
    input
        .reshape_usize(&shape)?
        .permute(&perm)?
        .contiguous()
        .reshape_usize(&out)
}

/// `torch.nn.functional.one_hot(tensor, num_classes)` (`-1` infers `max + 1`).
pub fn one_hot(input: &Tensor, num_classes: i64) -> Result<Tensor> {
    if input.dtype() != DType::Int64 {
        return Err(invalid(
            "one_hot is only applicable to index tensor of type LongTensor.",
        ));
    }
    let values = input.to_i64_vec();
    let classes = if num_classes == -1 {
        if values.is_empty() {
            return Err(invalid(
                "Can not infer total number of classes from empty tensor.",
            ));
        }
        values.iter().copied().max().unwrap_or(0) + 1
    } else {
        num_classes
    };
    if values.iter().any(|&v| v < 0) {
        return Err(invalid("Class values must be non-negative."));
    }
    if values.iter().any(|&v| v >= classes) {
        return Err(invalid("Class values must be smaller than num_classes."));
    }
    if classes < 0 {
        return Err(invalid("num_classes should be positive"));
    }
    let k = classes as usize;
    let mut out = vec![0i64; values.len() * k];
    for (i, &v) in values.iter().enumerate() {
        out[i * k + v as usize] = 1;
    }
    let mut sizes = input.sizes().to_vec();
    sizes.push(k);
    Ok(Tensor::from_values(out, &sizes))
}

/// `torch.nn.functional.scaled_dot_product_attention`.
#[allow(clippy::too_many_arguments)]
pub fn scaled_dot_product_attention(
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    attn_mask: Option<&Tensor>,
    dropout_p: f64,
    is_causal: bool,
    scale: Option<f64>,
    enable_gqa: bool,
) -> Result<Tensor> {
    let dtype = require_float(query, "scaled_dot_product_attention")?;
    if key.dtype() != dtype || value.dtype() != dtype {
        return Err(invalid(format!(
            "Expected query, key, and value to have the same dtype, but got query.dtype: {} key.dtype: {} and value.dtype: {} instead.",
            dtype.name(), key.dtype().name(), value.dtype().name()
        )));
    }
    if query.dim() < 2 || key.dim() < 2 || value.dim() < 2 {
        return Err(invalid(
            "scaled_dot_product_attention: expected query, key and value to be at least 2-D",
        ));
    }
    let e = query.sizes()[query.dim() - 1];
    let l = query.sizes()[query.dim() - 2];
    let s = key.sizes()[key.dim() - 2];
    let scale = scale.unwrap_or(1.0 / (e as f64).sqrt());
    let (mut key, mut value) = (key.clone(), value.clone());
    if enable_gqa && query.dim() >= 3 && key.dim() >= 3 {
        let hq = query.sizes()[query.dim() - 3];
        let hk = key.sizes()[key.dim() - 3];
        if hk > 0 && hq.is_multiple_of(hk) && hq != hk {
            let reps =
                Tensor::scalar_tensor(crate::dtype::Scalar::Int((hq / hk) as i64), DType::Int64);
            key = key.repeat_interleave(&reps, Some(-3))?;
            value = value.repeat_interleave(&reps, Some(-3))?;
        }
    }
    let q = query.to_dtype(DType::Float64);
    let k = key.to_dtype(DType::Float64);
    let v = value.to_dtype(DType::Float64);
    let scores = q.matmul(&k.transpose(-2, -1)?)?;
    let scores = scores.mul(&Tensor::wrapped_scalar(crate::dtype::Scalar::Float(scale)))?;
    let mut bias = vec![0.0f64; l * s];
    if is_causal {
        if attn_mask.is_some() {
            return Err(invalid("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True"));
        }
        for i in 0..l {
            for j in 0..s {
                if j > i {
                    bias[i * s + j] = f64::NEG_INFINITY;
                }
            }
        }
    }
    let mut scores = scores.add(
        &Tensor::from_values(bias, &[l, s]),
        &crate::dtype::Scalar::Int(1),
    )?;
    if let Some(mask) = attn_mask {
        let m = if mask.dtype() == DType::Bool {
            let mv: Vec<f64> = mask
                .to_i64_vec()
                .iter()
                .map(|&b| if b != 0 { 0.0 } else { f64::NEG_INFINITY })
                .collect();
            Tensor::from_values(mv, mask.sizes())
        } else {
            mask.to_dtype(DType::Float64)
        };
        let shape = broadcast_shapes(scores.sizes(), m.sizes())?;
        scores = scores
            .broadcast_to(&shape)?
            .add(&m, &crate::dtype::Scalar::Int(1))?;
    }
    let weights = zero_fully_masked_rows(&scores, &scores.softmax(-1, None)?)?;
    let weights = weights.dropout(dropout_p, dropout_p > 0.0)?;
    Ok(weights.matmul(&v)?.to_dtype(dtype))
}

/// PyTorch's attention (the math path's `_safe_softmax` and the flash kernel alike) gives 0
/// for a query row whose scores are all -inf, where a plain softmax gives 0/0 = NaN: a
/// left-padded sequence's leading rows see no key at all under a causal mask.
fn zero_fully_masked_rows(scores: &Tensor, weights: &Tensor) -> Result<Tensor> {
    let row = scores.sizes().last().copied().unwrap_or(1);
    if row == 0 {
        return Ok(weights.clone());
    }
    let scores = scores.to_f64_vec();
    let mut values = weights.to_f64_vec();
    for (score_row, weight_row) in scores.chunks(row).zip(values.chunks_mut(row)) {
        if score_row.iter().all(|&score| score == f64::NEG_INFINITY) {
            weight_row.fill(0.0);
        }
    }
    Ok(Tensor::from_values(values, weights.sizes()))
}

/// `torch.cosine_similarity(x1, x2, dim, eps)`.
pub fn cosine_similarity(x1: &Tensor, x2: &Tensor, dim: i64, eps: f64) -> Result<Tensor> {
    let dtype = crate::dtype::promote_types(x1.dtype(), x2.dtype());
    if !dtype.is_floating_point() {
        return Err(TensorError::NotImplementedForDType {
            op: "cosine_similarity",
            dtype,
        });
    }
    let shape = broadcast_shapes(x1.sizes(), x2.sizes())?;
    let d = wrap_dim(dim, shape.len().max(1))?;
    let a = x1.broadcast_to(&shape)?;
    let b = x2.broadcast_to(&shape)?;
    let (x, y) = (a.to_f64_vec(), b.to_f64_vec());
    let len = shape.get(d).copied().unwrap_or(1);
    let inner: usize = shape.get(d + 1..).map_or(1, |s| s.iter().product());
    let outer = x.len().checked_div(len * inner).unwrap_or_else(|| {
        shape
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != d)
            .map(|(_, s)| s)
            .product()
    });
    let mut out = Vec::new();
    let outer_real = if len * inner == 0 { 0 } else { outer };
    for o in 0..outer_real {
        for i in 0..inner {
            let (mut dot, mut na, mut nb) = (0.0, 0.0, 0.0);
            for k in 0..len {
                let idx = (o * len + k) * inner + i;
                dot += x[idx] * y[idx];
                na += x[idx] * x[idx];
                nb += y[idx] * y[idx];
            }
            let denom = (na.sqrt().max(eps)) * (nb.sqrt().max(eps));
            out.push(dot / denom);
        }
    }
    let mut out_sizes = shape.clone();
    if !out_sizes.is_empty() {
        out_sizes.remove(d);
    }
    if len == 0 {
        let n: usize = out_sizes.iter().product();
        out = vec![0.0; n];
    }
    Ok(from_f64(out, &out_sizes, dtype))
}

/// `torch.pairwise_distance(x1, x2, p, eps, keepdim)`: p-norm of `x1 - x2 + eps` over the last dim.
pub fn pairwise_distance(
    x1: &Tensor,
    x2: &Tensor,
    p: f64,
    eps: f64,
    keepdim: bool,
) -> Result<Tensor> {
    let dtype = crate::dtype::promote_types(x1.dtype(), x2.dtype());
    if !dtype.is_floating_point() && !dtype.is_complex() {
        // ATen computes `norm(x1 - x2 + eps)`: integers subtract in their own dtype (uint8
        // wraps), and adding the float eps makes the difference floating.
        let eps_tensor = Tensor::wrapped_scalar(crate::dtype::Scalar::Float(eps));
        let shifted = x1
            .sub(x2, &crate::dtype::Scalar::Int(1))?
            .add(&eps_tensor, &crate::dtype::Scalar::Int(1))?;
        let zero = Tensor::scalar_tensor(crate::dtype::Scalar::Int(0), shifted.dtype());
        return pairwise_distance(&shifted, &zero, p, 0.0, keepdim);
    }
    let shape = broadcast_shapes(x1.sizes(), x2.sizes())?;
    let dims = shape.len();
    let (x, y) = (
        x1.broadcast_to(&shape)?.to_f64_vec(),
        x2.broadcast_to(&shape)?.to_f64_vec(),
    );
    let len = if dims == 0 { 1 } else { shape[dims - 1] };
    let rows = x
        .len()
        .checked_div(len)
        .unwrap_or_else(|| shape[..dims.saturating_sub(1)].iter().product());
    let mut out = Vec::with_capacity(rows);
    for r in 0..rows {
        let diffs = (0..len).map(|k| (x[r * len + k] - y[r * len + k] + eps).abs());
        out.push(p_norm(diffs, p));
    }
    let mut out_sizes = shape.clone();
    if dims > 0 {
        if keepdim {
            out_sizes[dims - 1] = 1;
        } else {
            out_sizes.pop();
        }
    }
    let out_dtype = if dtype.is_floating_point() {
        dtype
    } else {
        DType::default_float()
    };
    if !dtype.is_floating_point() {
        return Err(TensorError::NotImplementedForDType { op: "norm", dtype });
    }
    Ok(from_f64(out, &out_sizes, out_dtype))
}

fn p_norm(values: impl Iterator<Item = f64>, p: f64) -> f64 {
    if p == f64::INFINITY {
        values.fold(0.0, f64::max)
    } else if p == f64::NEG_INFINITY {
        values.fold(f64::INFINITY, f64::min)
    } else if p == 0.0 {
        values.filter(|v| *v != 0.0).count() as f64
    } else if p == 1.0 {
        values.sum()
    } else if p == 2.0 {
        values.map(|v| v * v).sum::<f64>().sqrt()
    } else {
        values.map(|v| v.powf(p)).sum::<f64>().powf(1.0 / p)
    }
}

/// `torch.nn.functional.normalize(input, p, dim, eps)`.
pub fn normalize(input: &Tensor, p: f64, dim: i64, eps: f64) -> Result<Tensor> {
    let dtype = require_float(input, "normalize")?;
    let d = wrap_dim(dim, input.dim().max(1))?;
    let out = super::activation::along_dim(input, d, |run, res| {
        let n = p_norm(run.iter().map(|v| v.abs()), p).max(eps);
        for (r, v) in res.iter_mut().zip(run) {
            *r = v / n;
        }
    });
    Ok(from_f64(out, input.sizes(), dtype))
}
