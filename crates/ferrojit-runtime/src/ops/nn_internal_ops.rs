//! ATen's internal forms of nn operators that traced and exported graphs record: the slow
//! convolution kernels (`thnn_conv2d`, `slow_conv3d`, `slow_conv_dilated2d/3d`,
//! `slow_conv_transpose2d/3d`), `conv_tbc`, `nll_loss_forward` / `nll_loss2d_forward` (the
//! loss with its total weight), `_euclidean_dist` and `_adaptive_avg_pool2d`
//! (`_unsafe_view` is in `copy_overloads.rs`).

use std::sync::Arc;

use ferrojit_tensor::ops::nn::conv::{convolution, ConvPadding};
use ferrojit_tensor::ops::nn::loss::Reduction;
use ferrojit_tensor::ops::nn::{distance, nll_forward, pool};
use ferrojit_tensor::{Tensor, TensorError};

use super::binding::typed;
use crate::error::Result;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

fn list_text(values: &[i64]) -> String {
    let parts: Vec<String> = values.iter().map(|v| v.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// The slow kernels take the kernel size again; it must be the weight's spatial sizes.
fn check_kernel_size(weight: &Tensor, kernel_size: &[i64]) -> Result<()> {
    let spatial: Vec<i64> = weight.sizes().iter().skip(2).map(|&s| s as i64).collect();
    if spatial != kernel_size {
        return Err(TensorError::InvalidArgument(format!(
            "weight[2:] shape {} must be equal to kernel_size {}",
            list_text(&spatial),
            list_text(kernel_size)
        ))
        .into());
    }
    Ok(())
}

/// `thnn_conv2d`, `slow_conv3d(_forward)` and `slow_conv_dilated{2,3}d`: a forward
/// convolution of one group.
fn slow_convolution(
    input: Input,
    weight: Input,
    kernel_size: Vec<i64>,
    bias: Option<Input>,
    stride: Vec<i64>,
    padding: Vec<i64>,
) -> Result<Tensor> {
    slow_dilated_convolution(input, weight, kernel_size, bias, stride, padding, vec![1])
}

fn slow_dilated_convolution(
    input: Input,
    weight: Input,
    kernel_size: Vec<i64>,
    bias: Option<Input>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
) -> Result<Tensor> {
    check_kernel_size(&weight, &kernel_size)?;
    Ok(convolution(
        &input,
        &weight,
        bias.as_deref(),
        &stride,
        &ConvPadding::Explicit(padding),
        &dilation,
        false,
        &[0],
        1,
    )?)
}

/// `slow_conv_transpose{2,3}d`: a transposed convolution of one group (ATen's kernel reads
/// the kernel size from the weight).
#[allow(clippy::too_many_arguments)]
fn slow_transposed_convolution(
    input: Input,
    weight: Input,
    _kernel_size: Vec<i64>,
    bias: Option<Input>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    output_padding: Vec<i64>,
    dilation: Vec<i64>,
) -> Result<Tensor> {
    Ok(convolution(
        &input,
        &weight,
        bias.as_deref(),
        &stride,
        &ConvPadding::Explicit(padding),
        &dilation,
        true,
        &output_padding,
        1,
    )?)
}

/// `conv_tbc(input [time, batch, in], weight [width, in, out], bias [out], pad)`: a 1-D
/// convolution along time, laid out time-major.
fn conv_tbc(input: Input, weight: Input, bias: Input, pad: i64) -> Result<Tensor> {
    let invalid = |message: &str| -> crate::error::RuntimeError {
        TensorError::InvalidArgument(message.to_string()).into()
    };
    if input.dim() != 3 {
        return Err(invalid("Input must have 3 dims: time, batch, in_channel"));
    }
    if weight.dim() != 3 {
        return Err(invalid(
            "Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.",
        ));
    }
    if bias.dim() != 1 {
        return Err(invalid("Bias must be 1-D"));
    }
    if input.sizes()[2] != weight.sizes()[1] {
        return Err(invalid(
            "Input dim 2 (input channels) is not == dim 1 in the weight tensor",
        ));
    }
    if weight.sizes()[2] != bias.sizes()[0] {
        return Err(invalid(
            "Bias size must equal dim 2 in the weight tensor (output channels).",
        ));
    }
    let batch_major = input.permute(&[1, 2, 0])?;
    let kernel = weight.permute(&[2, 1, 0])?;
    let output = convolution(
        &batch_major,
        &kernel,
        Some(&bias),
        &[1],
        &ConvPadding::Explicit(vec![pad]),
        &[1],
        false,
        &[0],
        1,
    )?;
    Ok(output.permute(&[2, 0, 1])?.contiguous())
}

fn nll_loss_forward(
    input: Input,
    target: Input,
    weight: Option<Input>,
    reduction: Reduction,
    ignore_index: i64,
) -> Result<(Tensor, Tensor)> {
    Ok(nll_forward::nll_loss_forward(
        &input,
        &target,
        weight.as_deref(),
        reduction,
        ignore_index,
    )?)
}

fn euclidean_dist(x1: Input, x2: Input) -> Result<Tensor> {
    Ok(distance::euclidean_dist(&x1, &x2)?)
}

fn adaptive_avg_pool2d(input: Input, output_size: Vec<i64>) -> Result<Tensor> {
    Ok(pool::adaptive_pool(&input, 2, &output_size, false)?.0)
}

pub fn declarations() -> Vec<OperatorDeclaration> {
    #[rustfmt::skip]
    let declarations = vec![
        typed("aten::thnn_conv2d(Tensor self, Tensor weight, SymInt[2] kernel_size, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0]) -> Tensor", slow_convolution),
        typed("aten::slow_conv3d(Tensor self, Tensor weight, SymInt[3] kernel_size, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0]) -> Tensor", slow_convolution),
        typed("aten::slow_conv3d_forward(Tensor self, Tensor weight, SymInt[3] kernel_size, Tensor? bias, SymInt[3] stride, SymInt[3] padding) -> Tensor", slow_convolution),
        typed("aten::slow_conv_dilated2d(Tensor self, Tensor weight, SymInt[2] kernel_size, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] dilation=[1, 1]) -> Tensor", slow_dilated_convolution),
        typed("aten::slow_conv_dilated3d(Tensor self, Tensor weight, SymInt[3] kernel_size, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], SymInt[3] dilation=[1, 1, 1]) -> Tensor", slow_dilated_convolution),
        typed("aten::slow_conv_transpose2d(Tensor self, Tensor weight, SymInt[2] kernel_size, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] output_padding=[0, 0], SymInt[2] dilation=[1, 1]) -> Tensor", slow_transposed_convolution),
        typed("aten::slow_conv_transpose3d(Tensor self, Tensor weight, SymInt[3] kernel_size, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], SymInt[3] output_padding=[0, 0, 0], SymInt[3] dilation=[1, 1, 1]) -> Tensor", slow_transposed_convolution),
        typed("aten::conv_tbc(Tensor self, Tensor weight, Tensor bias, int pad=0) -> Tensor", conv_tbc),
        typed("aten::nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index) -> (Tensor output, Tensor total_weight)", nll_loss_forward),
        typed("aten::nll_loss2d_forward(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index) -> (Tensor output, Tensor total_weight)", nll_loss_forward),
        typed("aten::_euclidean_dist(Tensor x1, Tensor x2) -> Tensor", euclidean_dist),
        typed("aten::_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor", adaptive_avg_pool2d),
    ];
    declarations
}
