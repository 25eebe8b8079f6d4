//! Convolution (`conv1d/2d/3d`, `conv_transpose1d/2d/3d`, `aten::convolution`) by im2col (or
//! col2im for transposed) plus the threaded GEMM. 1-D and 2-D problems are lifted to 3-D with
//! size-1 leading spatial dims so one kernel serves every rank.

use rayon::prelude::*;

use super::{expand_param, invalid, require_float};
use crate::dtype::DType;
use crate::error::{format_shape, Result};
use crate::ops::linalg::{strided_gemm, FloatGemm};
use crate::tensor::Tensor;

/// The `padding` argument of a convolution: explicit sizes or one of the string modes.
#[derive(Debug, Clone, PartialEq)]
pub enum ConvPadding {
    Explicit(Vec<i64>),
    Same,
    Valid,
}

/// Geometry of one (lifted to 3-D) convolution.
#[derive(Debug, Clone)]
struct Geometry {
    in_size: [usize; 3],
    kernel: [usize; 3],
    stride: [usize; 3],
    dilation: [usize; 3],
    pad_before: [usize; 3],
    out_size: [usize; 3],
}

impl Geometry {
    fn kernel_len(&self) -> usize {
        self.kernel.iter().product()
    }
    fn out_len(&self) -> usize {
        self.out_size.iter().product()
    }
    fn in_len(&self) -> usize {
        self.in_size.iter().product()
    }
}

fn lift(values: &[usize], fill: usize) -> [usize; 3] {
    let mut out = [fill; 3];
    let offset = 3 - values.len();
    out[offset..].copy_from_slice(values);
    out
}

/// im2col for one image and one group: `cols[(c, kd, kh, kw), (od, oh, ow)]`.
fn im2col<T: FloatGemm>(input: &[T], channels: usize, g: &Geometry, cols: &mut [T]) {
    let k_len = g.kernel_len();
    let out_len = g.out_len();
    let in_len = g.in_len();
    let [id_, ih_, iw_] = g.in_size;
    let [kd_, kh_, kw_] = g.kernel;
    let [od_, oh_, ow_] = g.out_size;
    let fill_row = |row: usize, dst: &mut [T]| {
        let c = row / k_len;
        let k = row % k_len;
        let (kd, kh, kw) = (k / (kh_ * kw_), (k / kw_) % kh_, k % kw_);
        let src = &input[c * in_len..(c + 1) * in_len];
        for od in 0..od_ {
            let id = (od * g.stride[0] + kd * g.dilation[0]) as isize - g.pad_before[0] as isize;
            for oh in 0..oh_ {
                let ih =
                    (oh * g.stride[1] + kh * g.dilation[1]) as isize - g.pad_before[1] as isize;
                let base = (od * oh_ + oh) * ow_;
                let out_row = &mut dst[base..base + ow_];
                if id < 0 || id >= id_ as isize || ih < 0 || ih >= ih_ as isize {
                    out_row.fill(T::ZERO);
                    continue;
                }
                let plane = (id as usize * ih_ + ih as usize) * iw_;
                let line = &src[plane..plane + iw_];
                let start = kw * g.dilation[2];
                if g.stride[2] == 1 && g.pad_before[2] == 0 && start + ow_ <= iw_ {
                    out_row.copy_from_slice(&line[start..start + ow_]);
                    continue;
                }
                for (ow, dst) in out_row.iter_mut().enumerate() {
                    let iw = (ow * g.stride[2] + start) as isize - g.pad_before[2] as isize;
                    *dst = if iw >= 0 && (iw as usize) < iw_ {
                        line[iw as usize]
                    } else {
                        T::ZERO
                    };
                }
            }
        }
        let _ = kd_;
    };
    let rows = channels * k_len;
    if rows * out_len >= crate::ops::parallel::PARALLEL_THRESHOLD && out_len > 0 {
        cols[..rows * out_len]
            .par_chunks_mut(out_len)
            .enumerate()
            .for_each(|(row, dst)| fill_row(row, dst));
    } else if out_len > 0 {
        for (row, dst) in cols[..rows * out_len].chunks_mut(out_len).enumerate() {
            fill_row(row, dst);
        }
    }
}

/// col2im for transposed convolution: adds `cols[(c, k), input position]` into `out[c, ...]`.
/// Here `g.in_size` is the transposed conv's output (the scatter target) and `g.out_size` its
/// input (the positions the columns are indexed by).
fn col2im<T: FloatGemm + std::ops::AddAssign>(
    cols: &[T],
    channels: usize,
    g: &Geometry,
    out: &mut [T],
) {
    let k_len = g.kernel_len();
    let pos_len = g.out_len();
    let img_len = g.in_len();
    let [id_, ih_, iw_] = g.in_size;
    let [_, kh_, kw_] = g.kernel;
    let [pd_, ph_, pw_] = g.out_size;
    for c in 0..channels {
        let dst = &mut out[c * img_len..(c + 1) * img_len];
        for k in 0..k_len {
            let (kd, kh, kw) = (k / (kh_ * kw_), (k / kw_) % kh_, k % kw_);
            let src = &cols[(c * k_len + k) * pos_len..(c * k_len + k + 1) * pos_len];
            for pd in 0..pd_ {
                let od =
                    (pd * g.stride[0] + kd * g.dilation[0]) as isize - g.pad_before[0] as isize;
                if od < 0 || od >= id_ as isize {
                    continue;
                }
                for ph in 0..ph_ {
                    let oh =
                        (ph * g.stride[1] + kh * g.dilation[1]) as isize - g.pad_before[1] as isize;
                    if oh < 0 || oh >= ih_ as isize {
                        continue;
                    }
                    let base = (od as usize * ih_ + oh as usize) * iw_;
                    for pw in 0..pw_ {
                        let ow = (pw * g.stride[2] + kw * g.dilation[2]) as isize
                            - g.pad_before[2] as isize;
                        if ow >= 0 && (ow as usize) < iw_ {
                            dst[base + ow as usize] += src[(pd * ph_ + ph) * pw_ + pw];
                        }
                    }
                }
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn conv_forward<T: FloatGemm + std::ops::AddAssign + crate::element::Element>(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    batch: usize,
    in_channels: usize,
    out_channels: usize,
    groups: usize,
    g: &Geometry,
) -> Result<Vec<T>> {
    let x: Vec<T> = input.gather::<T>();
    let w: Vec<T> = weight.gather::<T>();
    let b: Option<Vec<T>> = bias.map(|b| b.gather::<T>());
    let (cin_g, cout_g) = (in_channels / groups, out_channels / groups);
    let k_len = g.kernel_len();
    let (in_len, out_len) = (g.in_len(), g.out_len());
    let mut out = vec![T::ZERO; batch * out_channels * out_len];
    let pointwise = g.kernel == [1, 1, 1]
        && g.stride == [1, 1, 1]
        && g.pad_before == [0, 0, 0]
        && g.in_size == g.out_size;
    let mut cols = if pointwise {
        Vec::new()
    } else {
        vec![T::ZERO; cin_g * k_len * out_len]
    };
    for n in 0..batch {
        for grp in 0..groups {
            let x_off = (n * in_channels + grp * cin_g) * in_len;
            let x_img = &x[x_off..x_off + cin_g * in_len];
            let rhs: &[T] = if pointwise {
                x_img
            } else {
                im2col(x_img, cin_g, g, &mut cols);
                &cols
            };
            let w_g = &w[grp * cout_g * cin_g * k_len..(grp + 1) * cout_g * cin_g * k_len];
            let o_off = (n * out_channels + grp * cout_g) * out_len;
            let o = &mut out[o_off..o_off + cout_g * out_len];
            if let Some(b) = &b {
                for (co, row) in o.chunks_mut(out_len.max(1)).enumerate() {
                    row.fill(b[grp * cout_g + co]);
                }
            }
            let beta = if b.is_some() {
                T::from_f64(1.0)
            } else {
                T::ZERO
            };
            strided_gemm(
                cout_g,
                cin_g * k_len,
                out_len,
                w_g,
                (cin_g * k_len, 1),
                rhs,
                (out_len, 1),
                beta,
                o,
            )?;
        }
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn conv_transpose_forward<T: FloatGemm + std::ops::AddAssign + crate::element::Element>(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    batch: usize,
    in_channels: usize,
    out_channels: usize,
    groups: usize,
    g: &Geometry,
) -> Result<Vec<T>> {
    // Here g.in_size is the OUTPUT image and g.out_size the INPUT positions (see col2im).
    let x: Vec<T> = input.gather::<T>();
    let w: Vec<T> = weight.gather::<T>();
    let (cin_g, cout_g) = (in_channels / groups, out_channels / groups);
    let k_len = g.kernel_len();
    let (img_len, pos_len) = (g.in_len(), g.out_len());
    let mut out = vec![T::ZERO; batch * out_channels * img_len];
    let mut cols = vec![T::ZERO; cout_g * k_len * pos_len];
    for n in 0..batch {
        for grp in 0..groups {
            let x_off = (n * in_channels + grp * cin_g) * pos_len;
            let x_img = &x[x_off..x_off + cin_g * pos_len];
            // weight[grp]: [cin_g, cout_g * k_len]; we need its transpose times x.
            let w_g = &w[grp * cin_g * cout_g * k_len..(grp + 1) * cin_g * cout_g * k_len];
            strided_gemm(
                cout_g * k_len,
                cin_g,
                pos_len,
                w_g,
                (1, cout_g * k_len),
                x_img,
                (pos_len, 1),
                T::ZERO,
                &mut cols,
            )?;
            let o_off = (n * out_channels + grp * cout_g) * img_len;
            col2im(&cols, cout_g, g, &mut out[o_off..o_off + cout_g * img_len]);
        }
    }
    if let Some(bias) = bias {
        let b: Vec<T> = bias.gather::<T>();
        for (i, chunk) in out.chunks_mut(img_len.max(1)).enumerate() {
            let bv = b[i % out_channels];
            for v in chunk {
                *v += bv;
            }
        }
    }
    Ok(out)
}

/// `aten::convolution` / `aten::_convolution`: the general entry point.
#[allow(clippy::too_many_arguments)]
pub fn convolution(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &ConvPadding,
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
    groups: i64,
) -> Result<Tensor> {
    let spatial = weight.dim().saturating_sub(2);
    if !(1..=3).contains(&spatial) {
        return Err(invalid(format!(
            "Expected 3D, 4D or 5D weight for convolution, but got weight of size {}",
            format_shape(weight.sizes())
        )));
    }
    // Unbatched input: add the batch dim and drop it again at the end.
    let unbatched = input.dim() == spatial + 1;
    if input.dim() != spatial + 2 && !unbatched {
        return Err(invalid(format!(
            "Expected {}D (unbatched) or {}D (batched) input to conv{}d, but got input of size: {}",
            spatial + 1,
            spatial + 2,
            spatial,
            format_shape(input.sizes())
        )));
    }
    let input = if unbatched {
        input.unsqueeze(0)?
    } else {
        input.clone()
    };
    if input.dtype() != weight.dtype() {
        return Err(invalid(format!(
            "Input type ({}) and weight type ({}) should be the same",
            input.dtype().scalar_type_name(),
            weight.dtype().scalar_type_name()
        )));
    }
    if let Some(b) = bias {
        if b.dtype() != input.dtype() {
            return Err(invalid(format!(
                "Input type ({}) and bias type ({}) should be the same",
                input.dtype().scalar_type_name(),
                b.dtype().scalar_type_name()
            )));
        }
    }
    // PyTorch's slow (im2col) 1-D/2-D kernel also takes integer tensors; they are computed
    // here in f64, exact while the products and sums stay below 2^53.
    let integral = !transposed && spatial <= 2 && input.dtype().is_integral(false);
    let dtype = if integral {
        input.dtype()
    } else {
        require_float(&input, "slow_conv2d_cpu")?
    };
    if groups <= 0 {
        return Err(invalid("non-positive groups is not supported"));
    }
    let groups = groups as usize;
    let stride = expand_param(stride, spatial, "stride", false)?;
    let dilation = expand_param(dilation, spatial, "dilation", false)?;
    let batch = input.sizes()[0];
    let in_channels = input.sizes()[1];
    let in_spatial = &input.sizes()[2..];
    let kernel = &weight.sizes()[2..];
    let (out_channels, weight_in) = if transposed {
        (weight.sizes()[1] * groups, weight.sizes()[0])
    } else {
        (weight.sizes()[0], weight.sizes()[1] * groups)
    };
    if in_channels != weight_in || (!transposed && out_channels % groups != 0) {
        return Err(invalid(format!(
            "Given groups={groups}, weight of size {}, expected input{} to have {} channels, but got {in_channels} channels instead",
            format_shape(weight.sizes()),
            format_shape(input.sizes()),
            weight_in
        )));
    }
    if in_channels % groups != 0 {
        return Err(invalid(format!(
            "Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got weight of size {} instead",
            format_shape(weight.sizes())
        )));
    }
    if let Some(b) = bias {
        if b.dim() != 1 || b.sizes()[0] != out_channels {
            return Err(invalid(format!(
                "Given weight of size {}, expected bias to be 1-dimensional with {out_channels} elements, but got bias of size {} instead",
                format_shape(weight.sizes()),
                format_shape(b.sizes())
            )));
        }
    }
    let (pad_before, pad_after): (Vec<usize>, Vec<usize>) = match padding {
        ConvPadding::Explicit(p) => {
            let p = expand_param(p, spatial, "padding", true)?;
            (p.clone(), p)
        }
        ConvPadding::Valid => (vec![0; spatial], vec![0; spatial]),
        ConvPadding::Same => {
            if transposed {
                return Err(invalid(
                    "padding='same' is not supported for transposed convolution",
                ));
            }
            if stride.iter().any(|&s| s != 1) {
                return Err(invalid(
                    "padding='same' is not supported for strided convolutions",
                ));
            }
            let total: Vec<usize> = (0..spatial)
                .map(|i| dilation[i] * (kernel[i] - 1))
                .collect();
            (
                total.iter().map(|t| t / 2).collect(),
                total.iter().map(|t| t - t / 2).collect(),
            )
        }
    };
    let mut out_spatial = Vec::with_capacity(spatial);
    if transposed {
        let output_padding = expand_param(output_padding, spatial, "output_padding", true)?;
        for i in 0..spatial {
            if output_padding[i] >= stride[i] && output_padding[i] >= dilation[i] {
                return Err(invalid(
                    "output padding must be smaller than either stride or dilation",
                ));
            }
            let full = (in_spatial[i].saturating_sub(1)) * stride[i]
                + dilation[i] * (kernel[i].saturating_sub(1))
                + output_padding[i]
                + 1;
            if full < pad_before[i] + pad_after[i] + 1 || in_spatial[i] == 0 {
                return Err(invalid(format!(
                    "Given input size per channel: {}. Calculated output size per channel is too small",
                    format_shape(in_spatial)
                )));
            }
            out_spatial.push(full - pad_before[i] - pad_after[i]);
        }
    } else {
        for i in 0..spatial {
            let padded = in_spatial[i] + pad_before[i] + pad_after[i];
            let extent = dilation[i] * (kernel[i].saturating_sub(1)) + 1;
            if padded < extent {
                return Err(invalid(format!(
                    "Calculated padded input size per channel: ({}). Kernel size: ({}). Kernel size can't be greater than actual input size",
                    (0..spatial)
                        .map(|d| (in_spatial[d] + pad_before[d] + pad_after[d]).to_string())
                        .collect::<Vec<_>>()
                        .join(" x "),
                    kernel.iter().map(|k| k.to_string()).collect::<Vec<_>>().join(" x ")
                )));
            }
            out_spatial.push((padded - extent) / stride[i] + 1);
        }
    }
    let geometry = if transposed {
        Geometry {
            in_size: lift(&out_spatial, 1),
            kernel: lift(kernel, 1),
            stride: lift(&stride, 1),
            dilation: lift(&dilation, 1),
            pad_before: lift(&pad_before, 0),
            out_size: lift(in_spatial, 1),
        }
    } else {
        Geometry {
            in_size: lift(in_spatial, 1),
            kernel: lift(kernel, 1),
            stride: lift(&stride, 1),
            dilation: lift(&dilation, 1),
            pad_before: lift(&pad_before, 0),
            out_size: lift(&out_spatial, 1),
        }
    };
    let mut out_sizes = vec![batch, out_channels];
    out_sizes.extend(&out_spatial);
    crate::shape::checked_numel(&out_sizes)?;
    let run = |t: &Tensor, w: &Tensor, b: Option<&Tensor>, as_f64: bool| -> Result<Tensor> {
        if as_f64 {
            let v: Vec<f64> = if transposed {
                conv_transpose_forward(
                    t,
                    w,
                    b,
                    batch,
                    in_channels,
                    out_channels,
                    groups,
                    &geometry,
                )?
            } else {
                conv_forward(t, w, b, batch, in_channels, out_channels, groups, &geometry)?
            };
            Ok(Tensor::from_values(v, &out_sizes))
        } else {
            let v: Vec<f32> = if transposed {
                conv_transpose_forward(
                    t,
                    w,
                    b,
                    batch,
                    in_channels,
                    out_channels,
                    groups,
                    &geometry,
                )?
            } else {
                conv_forward(t, w, b, batch, in_channels, out_channels, groups, &geometry)?
            };
            Ok(Tensor::from_values(v, &out_sizes))
        }
    };
    // Half types compute in f32 and round once at the end.
    let out = if integral {
        let b = bias.map(|b| b.to_dtype(DType::Float64));
        run(
            &input.to_dtype(DType::Float64),
            &weight.to_dtype(DType::Float64),
            b.as_ref(),
            true,
        )?
        .to_dtype(dtype)
    } else {
        run(&input, weight, bias, dtype == DType::Float64)?.to_dtype(dtype)
    };
    if unbatched {
        out.squeeze_dim(0)
    } else {
        Ok(out)
    }
}

impl Tensor {
    /// `torch.nn.functional.conv{1,2,3}d` (the spatial rank comes from the weight).
    pub fn conv(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: &[i64],
        padding: &ConvPadding,
        dilation: &[i64],
        groups: i64,
    ) -> Result<Tensor> {
        convolution(
            self,
            weight,
            bias,
            stride,
            padding,
            dilation,
            false,
            &[0],
            groups,
        )
    }

    /// `torch.nn.functional.conv_transpose{1,2,3}d`.
    #[allow(clippy::too_many_arguments)]
    pub fn conv_transpose(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: &[i64],
        padding: &[i64],
        output_padding: &[i64],
        groups: i64,
        dilation: &[i64],
    ) -> Result<Tensor> {
        convolution(
            self,
            weight,
            bias,
            stride,
            &ConvPadding::Explicit(padding.to_vec()),
            dilation,
            true,
            output_padding,
            groups,
        )
    }
}
