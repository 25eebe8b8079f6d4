//! Layers that mix features across channels or inputs: `channel_shuffle` (a reshape,
//! transpose and reshape of the channel dim) and `bilinear` (`x1^T W x2 + b` per output
//! feature), with ATen's checks and messages.

use super::{from_f64, invalid};
use crate::error::{format_shape, Result};
use crate::tensor::Tensor;

/// `channel_shuffle(x, groups)`: `[N, C, *]` viewed as `[N, groups, C / groups, *]`, the two
/// group dims swapped, and flattened back to `[N, C, *]` (a new contiguous tensor).
pub fn channel_shuffle(input: &Tensor, groups: i64) -> Result<Tensor> {
    if input.dim() <= 2 {
        return Err(invalid(format!(
            "channel_shuffle expects input with > 2 dims, but got input with sizes {}",
            format_shape(input.sizes())
        )));
    }
    if groups <= 0 {
        return Err(invalid(format!(
            "Number of groups to divide channels in must be positive. Value of groups:{groups}"
        )));
    }
    let channels = input.sizes()[1] as i64;
    if channels % groups != 0 {
        return Err(invalid(format!(
            "Number of channels must be divisible by groups. Got {channels} channels and {groups} groups."
        )));
    }
    if input.numel() == 0 {
        return Ok(input.contiguous().clone_tensor());
    }
    let sizes: Vec<i64> = input.sizes().iter().map(|&s| s as i64).collect();
    let mut grouped = vec![sizes[0], groups, channels / groups];
    grouped.extend_from_slice(&sizes[2..]);
    let shuffled = input.reshape(&grouped)?.transpose(1, 2)?.contiguous();
    shuffled.reshape(&sizes)
}

/// `bilinear(x1, x2, weight, bias)`: `y[..., o] = sum_ij x1[..., i] weight[o, i, j]
/// x2[..., j] (+ bias[o])`; every tensor must share one dtype. Sums run in f64 (integers
/// exactly), each result rounded once.
pub fn bilinear(
    input1: &Tensor,
    input2: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
) -> Result<Tensor> {
    let dtype = input1.dtype();
    let same = input2.dtype() == dtype
        && weight.dtype() == dtype
        && bias.is_none_or(|b| b.dtype() == dtype);
    if !same {
        // ATen prints the C++ element type names here.
        let name = crate::ops::histogram::cxx_type_name;
        let mut message = format!(
            "All tensors must have the same dtype, got input1: {}, input2: {}, weight: {}",
            name(dtype),
            name(input2.dtype()),
            name(weight.dtype())
        );
        if let Some(bias) = bias {
            message.push_str(&format!(", bias: {}", name(bias.dtype())));
        }
        return Err(invalid(message));
    }
    if input1.dim() != input2.dim() {
        return Err(invalid(format!(
            "bilinear(): input dimensions do not match: got {} and {}",
            input1.dim(),
            input2.dim()
        )));
    }
    if input1.dim() == 0 {
        return Err(invalid(
            "bilinear(): input1 must have at least one dimension",
        ));
    }
    let last = input1.dim() - 1;
    for dim in 0..last {
        if input1.sizes()[dim] != input2.sizes()[dim] {
            return Err(invalid(format!(
                "bilinear(): input batch dimensions do not match at dim {dim}: got {} and {}",
                input1.sizes()[dim],
                input2.sizes()[dim]
            )));
        }
    }
    if weight.dim() != 3 {
        return Err(invalid(format!(
            "bilinear(): weight must be 3-D, but got {}-D",
            weight.dim()
        )));
    }
    let (outputs, left, right) = (weight.sizes()[0], weight.sizes()[1], weight.sizes()[2]);
    if input1.sizes()[last] != left {
        return Err(invalid(format!(
            "bilinear(): input1 size does not match weight size: got {} but expected {left}",
            input1.sizes()[last]
        )));
    }
    if input2.sizes()[last] != right {
        return Err(invalid(format!(
            "bilinear(): input2 size does not match weight size: got {} but expected {right}",
            input2.sizes()[last]
        )));
    }
    if let Some(bias) = bias {
        if bias.dim() == 0 || bias.sizes()[0] != outputs {
            return Err(invalid(format!(
                "bilinear(): bias size does not match weight size: got {} but expected {outputs}",
                bias.sizes().first().copied().unwrap_or(1)
            )));
        }
    }
    let rows: usize = input1.sizes()[..last].iter().product();
    let x1 = input1.to_f64_vec();
    let x2 = input2.to_f64_vec();
    let w = weight.to_f64_vec();
    let b = bias.map(|b| b.to_f64_vec());
    let mut out = Vec::with_capacity(rows * outputs);
    for row in 0..rows {
        let a = &x1[row * left..(row + 1) * left];
        let c = &x2[row * right..(row + 1) * right];
        for o in 0..outputs {
            let mut sum = 0.0;
            for (i, &ai) in a.iter().enumerate() {
                let w_row = &w[(o * left + i) * right..(o * left + i + 1) * right];
                let inner: f64 = w_row.iter().zip(c).map(|(wv, cv)| wv * cv).sum();
                sum += ai * inner;
            }
            if let Some(b) = &b {
                sum += b[o];
            }
            out.push(sum);
        }
    }
    let mut out_sizes = input1.sizes()[..last].to_vec();
    out_sizes.push(outputs);
    Ok(from_f64(out, &out_sizes, dtype))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four channels in two groups: [0, 1 | 2, 3] interleave to [0, 2, 1, 3].
    #[test]
    fn channel_shuffle_interleaves_the_groups() {
        let input = Tensor::from_vec(vec![0.0f32, 1.0, 2.0, 3.0], &[1, 4, 1]).unwrap();
        let out = channel_shuffle(&input, 2).unwrap();
        assert_eq!(out.to_f64_vec(), vec![0.0, 2.0, 1.0, 3.0]);
        assert!(channel_shuffle(&input, 3).is_err());
    }
}
