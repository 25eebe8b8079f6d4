//! `col2im` (`torch.nn.functional.fold`): sums the columns of sliding blocks back into an
//! image; `im2col` (`torch.nn.functional.unfold`): copies each sliding block of an image into
//! a column. Both with PyTorch's shape checks and messages.

use super::{from_f64, invalid, require_float};
use crate::error::Result;
use crate::tensor::Tensor;

fn pair(values: &[i64], name: &str) -> Result<[i64; 2]> {
    match values {
        [v] => Ok([*v, *v]),
        [a, b] => Ok([*a, *b]),
        _ => Err(invalid(format!(
            "It is expected {name} equals to 2, but got size {}",
            values.len()
        ))),
    }
}

fn sizes_text(sizes: &[usize]) -> String {
    format!(
        "[{}]",
        sizes
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// `col2im(self, output_size, kernel_size, dilation, padding, stride)`: `self` is
/// `[N, C * kh * kw, L]` (or unbatched `[C * kh * kw, L]`), L the number of sliding blocks;
/// the result is `[N, C, output_h, output_w]`, overlapping blocks summed.
pub fn col2im(
    input: &Tensor,
    output_size: &[i64],
    kernel_size: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
) -> Result<Tensor> {
    let [out_h, out_w] = pair(output_size, "output_size")?;
    let [kh, kw] = pair(kernel_size, "kernel_size")?;
    let [dh, dw] = pair(dilation, "dilation")?;
    let [ph, pw] = pair(padding, "padding")?;
    let [sh, sw] = pair(stride, "stride")?;
    if kh <= 0 || kw <= 0 {
        return Err(invalid(format!(
            "kernel size should be greater than zero, but got kernel_height: {kh} kernel_width: {kw}"
        )));
    }
    if sh <= 0 || sw <= 0 {
        return Err(invalid(format!(
            "stride should be greater than zero, but got stride_height: {sh} stride_width: {sw}"
        )));
    }
    if dh <= 0 || dw <= 0 {
        return Err(invalid(format!(
            "dilation should be greater than zero, but got dilation_height: {dh} dilation_width: {dw}"
        )));
    }
    if ph < 0 || pw < 0 {
        return Err(invalid(format!(
            "padding should be non-negative, but got pad_height: {ph} pad_width: {pw}"
        )));
    }
    let dims = input.dim();
    let sizes = input.sizes();
    let valid = (dims == 2 && sizes[0] != 0 && sizes[1] != 0)
        || (dims == 3 && sizes[1] != 0 && sizes[2] != 0);
    if !valid {
        return Err(invalid(format!(
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for input, but got: {}",
            sizes_text(sizes)
        )));
    }
    let dtype = require_float(input, "col2im_out_cpu")?;
    let batched = dims == 3;
    let (batch, rows, length) = if batched {
        (sizes[0], sizes[1], sizes[2])
    } else {
        (1, sizes[0], sizes[1])
    };
    let kernel = (kh * kw) as usize;
    if !rows.is_multiple_of(kernel) {
        return Err(invalid(format!(
            "Expected size of input's dimension {} to be divisible by the product of kernel_size, but got input.size({})={rows} and kernel_size=({kh}, {kw}).",
            usize::from(batched),
            usize::from(batched)
        )));
    }
    let blocks = |size: i64, pad: i64, dil: i64, k: i64, s: i64| {
        (size + 2 * pad - (dil * (k - 1) + 1)) / s + 1
    };
    let blocks_h = blocks(out_h, ph, dh, kh, sh);
    let blocks_w = blocks(out_w, pw, dw, kw, sw);
    if length as i64 != blocks_h * blocks_w {
        return Err(invalid(format!(
            "Given output_size=({out_h}, {out_w}), kernel_size=({kh}, {kw}), dilation=({dh}, {dw}), padding=({ph}, {pw}), stride=({sh}, {sw}), expected size of input's dimension {} to match the calculated number of sliding blocks {blocks_h} * {blocks_w} = {}, but got input.size({})={length}.",
            1 + usize::from(batched),
            blocks_h * blocks_w,
            1 + usize::from(batched)
        )));
    }
    if blocks_h < 1 || blocks_w < 1 {
        return Err(invalid(format!(
            "Given output_size=({out_h}, {out_w}), kernel_size=({kh}, {kw}), dilation=({dh}, {dw}), padding=({ph}, {pw}), stride=({sh}, {sw}), calculated shape of the array of sliding blocks as ({blocks_h}, {blocks_w}), which is too small (non-positive)"
        )));
    }
    if out_h < 1 || out_w < 1 {
        return Err(invalid(format!(
            "Expected output spatial size to be positive, but got: output_size=({out_h}, {out_w})."
        )));
    }
    let channels = rows / kernel;
    let (oh, ow) = (out_h as usize, out_w as usize);
    let columns = input.to_f64_vec();
    let mut image = vec![0.0; batch * channels * oh * ow];
    for n in 0..batch {
        for row in 0..rows {
            let (c, tap) = (row / kernel, row % kernel);
            let (ki, kj) = ((tap / kw as usize) as i64, (tap % kw as usize) as i64);
            for block in 0..length {
                let (bi, bj) = ((block as i64) / blocks_w, (block as i64) % blocks_w);
                let h = bi * sh - ph + ki * dh;
                let w = bj * sw - pw + kj * dw;
                if h < 0 || w < 0 || h >= out_h || w >= out_w {
                    continue;
                }
                image[((n * channels + c) * oh + h as usize) * ow + w as usize] +=
                    columns[(n * rows + row) * length + block];
            }
        }
    }
    let out_sizes = if batched {
        vec![batch, channels, oh, ow]
    } else {
        vec![channels, oh, ow]
    };
    Ok(from_f64(image, &out_sizes, dtype))
}

/// `im2col(self, kernel_size, dilation, padding, stride)`: `self` is `[N, C, H, W]` (or
/// unbatched `[C, H, W]`); the result is `[N, C * kh * kw, L]`, column `l` holding the block
/// at sliding position `l` (zeros where it covers the padding). Floating, complex and bool
/// inputs, as ATen's CPU kernel dispatches.
pub fn im2col(
    input: &Tensor,
    kernel_size: &[i64],
    dilation: &[i64],
    padding: &[i64],
    stride: &[i64],
) -> Result<Tensor> {
    // im2col takes exactly two values for each (col2im also widens a single value).
    let exact_pair = |values: &[i64], name: &str| -> Result<[i64; 2]> {
        match values {
            [a, b] => Ok([*a, *b]),
            _ => Err(invalid(format!(
                "It is expected {name} equals to 2, but got size {}",
                values.len()
            ))),
        }
    };
    let [kh, kw] = exact_pair(kernel_size, "kernel_size")?;
    let [dh, dw] = exact_pair(dilation, "dilation")?;
    let [ph, pw] = exact_pair(padding, "padding")?;
    let [sh, sw] = exact_pair(stride, "stride")?;
    if kh <= 0 || kw <= 0 {
        return Err(invalid(format!(
            "kernel size should be greater than zero, but got kernel_height: {kh} kernel_width: {kw}"
        )));
    }
    if dh <= 0 || dw <= 0 {
        return Err(invalid(format!(
            "dilation should be greater than zero, but got dilation_height: {dh} dilation_width: {dw}"
        )));
    }
    if ph < 0 || pw < 0 {
        return Err(invalid(format!(
            "padding should be non-negative, but got pad_height: {ph} pad_width: {pw}"
        )));
    }
    if sh <= 0 || sw <= 0 {
        return Err(invalid(format!(
            "stride should be greater than zero, but got stride_height: {sh} stride_width: {sw}"
        )));
    }
    let dims = input.dim();
    // ATen reads dims 1 and 2 (relative to a batch dim) before it checks the rank.
    let batch_offset: i64 = if dims == 3 { -1 } else { 0 };
    for index in [batch_offset + 1, batch_offset + 2] {
        crate::shape::wrap_dim(index, dims)?;
    }
    let sizes = input.sizes();
    let valid = (dims == 3 || dims == 4)
        && sizes[dims - 3] != 0
        && sizes[dims - 2] != 0
        && sizes[dims - 1] != 0;
    if !valid {
        return Err(invalid(format!(
            "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: {}",
            sizes_text(sizes)
        )));
    }
    let (height, width) = (sizes[dims - 2] as i64, sizes[dims - 1] as i64);
    let blocks = |size: i64, pad: i64, dil: i64, k: i64, s: i64| {
        (size + 2 * pad - (dil * (k - 1) + 1)) / s + 1
    };
    let blocks_h = blocks(height, ph, dh, kh, sh);
    let blocks_w = blocks(width, pw, dw, kw, sw);
    if blocks_h < 1 || blocks_w < 1 {
        return Err(invalid(format!(
            "Given input with spatial size ({height}, {width}), kernel_size=({kh}, {kw}), dilation=({dh}, {dw}), padding=({ph}, {pw}), calculated shape of the array of sliding blocks as ({blocks_h}, {blocks_w}), but its components must be at least one."
        )));
    }
    let dtype = input.dtype();
    if !(dtype.is_floating_point() || dtype.is_complex() || dtype == crate::dtype::DType::Bool) {
        return Err(crate::error::TensorError::NotImplementedForDType {
            op: "im2col_out_cpu",
            dtype,
        });
    }
    let batched = dims == 4;
    let batch = if batched { sizes[0] } else { 1 };
    let channels = sizes[dims - 3];
    let (h, w) = (height as usize, width as usize);
    let kernel = (kh * kw) as usize;
    let length = (blocks_h * blocks_w) as usize;
    let rows = channels * kernel;
    let out_sizes = if batched {
        vec![batch, rows, length]
    } else {
        vec![rows, length]
    };
    crate::macros::dispatch_dtype!(dtype, T => {
        let image = input.gather::<T>();
        let zero = <T as crate::element::Element>::from_f64(0.0);
        let mut columns = vec![zero; batch * rows * length];
        for n in 0..batch {
            for row in 0..rows {
                let (c, tap) = (row / kernel, row % kernel);
                let (ki, kj) = ((tap / kw as usize) as i64, (tap % kw as usize) as i64);
                for block in 0..length {
                    let (bi, bj) = ((block as i64) / blocks_w, (block as i64) % blocks_w);
                    let y = bi * sh - ph + ki * dh;
                    let x = bj * sw - pw + kj * dw;
                    if y < 0 || x < 0 || y >= height || x >= width {
                        continue;
                    }
                    columns[(n * rows + row) * length + block] =
                        image[((n * channels + c) * h + y as usize) * w + x as usize];
                }
            }
        }
        Ok(Tensor::from_values(columns, &out_sizes))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Folding the 2x2 blocks of a 3x3 image (stride 1) counts how many blocks cover each
    /// pixel: 1 at the corners, 2 on the edges, 4 in the centre.
    #[test]
    fn folding_ones_counts_the_covering_blocks() {
        let ones = Tensor::from_vec(vec![1.0f64; 4 * 4], &[1, 4, 4]).unwrap();
        let image = col2im(&ones, &[3, 3], &[2, 2], &[1], &[0], &[1]).unwrap();
        assert_eq!(image.sizes(), &[1, 1, 3, 3]);
        assert_eq!(
            image.to_f64_vec(),
            vec![1.0, 2.0, 1.0, 2.0, 4.0, 2.0, 1.0, 2.0, 1.0]
        );
        assert!(col2im(&ones, &[4, 4], &[2, 2], &[1], &[0], &[1]).is_err());
    }

    /// Unfolding then folding a 3x3 image with 2x2 blocks multiplies each pixel by the
    /// number of blocks covering it.
    #[test]
    fn unfolding_then_folding_scales_by_the_cover_count() {
        let image =
            Tensor::from_vec((1..=9).map(f64::from).collect::<Vec<_>>(), &[1, 1, 3, 3]).unwrap();
        let columns = im2col(&image, &[2, 2], &[1, 1], &[0, 0], &[1, 1]).unwrap();
        assert_eq!(columns.sizes(), &[1, 4, 4]);
        let folded = col2im(&columns, &[3, 3], &[2, 2], &[1], &[0], &[1]).unwrap();
        let covers = [1.0, 2.0, 1.0, 2.0, 4.0, 2.0, 1.0, 2.0, 1.0];
        let expected: Vec<f64> = (1..=9).zip(covers).map(|(v, c)| f64::from(v) * c).collect();
        assert_eq!(folded.to_f64_vec(), expected);
    }
}
