//! Further `torch.nn.functional` layers: gated activations (`log_sigmoid`, `softshrink`,
//! `glu`, `prelu`), max unpooling, `channel_shuffle`, `bilinear`, `im2col` (`F.unfold`) and
//! `adaptive_max_pool3d`, over ferrojit-tensor's `ops::nn` kernels.

use std::sync::Arc;

use ferrojit_tensor::ops::nn::{channel_mixing, fold, gated_activations, pool, unpool};
use ferrojit_tensor::{Scalar, Tensor};

use super::binding::typed;
use crate::error::{Result, RuntimeError};
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

fn log_sigmoid(input: Input) -> Result<Tensor> {
    Ok(gated_activations::log_sigmoid(&input)?)
}

fn log_sigmoid_forward(input: Input) -> Result<(Tensor, Tensor)> {
    Ok(gated_activations::log_sigmoid_forward(&input)?)
}

fn softshrink(input: Input, lambd: Scalar) -> Result<Tensor> {
    Ok(gated_activations::softshrink(&input, &lambd)?)
}

fn glu(input: Input, dim: i64) -> Result<Tensor> {
    Ok(gated_activations::glu(&input, dim)?)
}

fn prelu(input: Input, weight: Input) -> Result<Tensor> {
    Ok(gated_activations::prelu(&input, &weight)?)
}

fn prelu_kernel(input: Input, weight: Input) -> Result<Tensor> {
    Ok(gated_activations::prelu_kernel(&input, &weight)?)
}

fn max_unpool2d(input: Input, indices: Input, output_size: Vec<i64>) -> Result<Tensor> {
    Ok(unpool::max_unpool2d(&input, &indices, &output_size)?)
}

fn max_unpool3d(
    input: Input,
    indices: Input,
    output_size: Vec<i64>,
    stride: Vec<i64>,
    padding: Vec<i64>,
) -> Result<Tensor> {
    Ok(unpool::max_unpool3d(
        &input,
        &indices,
        &output_size,
        &stride,
        &padding,
    )?)
}

fn channel_shuffle(input: Input, groups: i64) -> Result<Tensor> {
    Ok(channel_mixing::channel_shuffle(&input, groups)?)
}

fn bilinear(input1: Input, input2: Input, weight: Input, bias: Option<Input>) -> Result<Tensor> {
    Ok(channel_mixing::bilinear(
        &input1,
        &input2,
        &weight,
        bias.as_deref(),
    )?)
}

fn im2col(
    input: Input,
    kernel_size: Vec<i64>,
    dilation: Vec<i64>,
    padding: Vec<i64>,
    stride: Vec<i64>,
) -> Result<Tensor> {
    Ok(fold::im2col(
        &input,
        &kernel_size,
        &dilation,
        &padding,
        &stride,
    )?)
}

/// `adaptive_max_pool3d`: the values and their flat indices within each output volume.
fn adaptive_max_pool3d(input: Input, output_size: Vec<i64>) -> Result<(Tensor, Tensor)> {
    match pool::adaptive_pool(&input, 3, &output_size, true)? {
        (values, Some(indices)) => Ok((values, indices)),
        (_, None) => Err(RuntimeError::Other(
            "adaptive_max_pool3d: the pooling gave no indices".to_string(),
        )),
    }
}

pub fn declarations() -> Vec<OperatorDeclaration> {
    #[rustfmt::skip]
    let declarations = vec![
        typed("aten::log_sigmoid(Tensor self) -> Tensor", log_sigmoid),
        typed("aten::log_sigmoid_forward(Tensor self) -> (Tensor output, Tensor buffer)", log_sigmoid_forward),
        typed("aten::softshrink(Tensor self, Scalar lambd=0.5) -> Tensor", softshrink),
        typed("aten::glu(Tensor self, int dim=-1) -> Tensor", glu),
        typed("aten::prelu(Tensor self, Tensor weight) -> Tensor", prelu),
        typed("aten::_prelu_kernel(Tensor self, Tensor weight) -> Tensor", prelu_kernel),
        typed("aten::max_unpool2d(Tensor self, Tensor indices, SymInt[2] output_size) -> Tensor", max_unpool2d),
        typed("aten::max_unpool3d(Tensor self, Tensor indices, SymInt[3] output_size, int[3] stride, int[3] padding) -> Tensor", max_unpool3d),
        typed("aten::channel_shuffle(Tensor self, SymInt groups) -> Tensor", channel_shuffle),
        typed("aten::native_channel_shuffle(Tensor self, SymInt groups) -> Tensor", channel_shuffle),
        typed("aten::bilinear(Tensor input1, Tensor input2, Tensor weight, Tensor? bias=None) -> Tensor", bilinear),
        typed("aten::im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor", im2col),
        typed("aten::adaptive_max_pool3d(Tensor self, int[3] output_size) -> (Tensor, Tensor)", adaptive_max_pool3d),
    ];
    declarations
}
