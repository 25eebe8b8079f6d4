//! `fractional_max_pool2d` / `fractional_max_pool3d` over ferrojit-tensor's
//! `nn::fractional_max_pool` (their `.output` forms are derived), and their backward kernels.
//! The samples are an argument: the Python functional draws them (`torch.rand`) when the
//! caller gives none.

use std::sync::Arc;

use ferrojit_tensor::ops::nn::fractional_max_pool::fractional_max_pool;
use ferrojit_tensor::Tensor;

use super::binding::typed;
use crate::error::{Result, RuntimeError};
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// Both operators: `DIMS` spatial dims (2 or 3).
fn pool<const DIMS: usize>(
    input: Input,
    kernel_size: Vec<i64>,
    output_size: Vec<i64>,
    samples: Input,
) -> Result<(Tensor, Tensor)> {
    Ok(fractional_max_pool(
        &input,
        &kernel_size,
        &output_size,
        &samples,
        DIMS,
    )?)
}

/// Both backward kernels: each element of `grad_output` is added into the input element its
/// index names (a flat position within its (batch, channel) plane), as the forward's maxima
/// came from there.
fn pool_backward<const DIMS: usize>(
    grad_output: Input,
    input: Input,
    _kernel_size: Vec<i64>,
    output_size: Vec<i64>,
    indices: Input,
) -> Result<Tensor> {
    let name = format!("fractional_max_pool{DIMS}d_backward");
    let sizes = input.sizes();
    if sizes.len() < DIMS + 1 || output_size.len() != DIMS {
        return Err(RuntimeError::Other(format!(
            "{name}: expected an input of {} or {} dimensions and {DIMS} output sizes",
            DIMS + 1,
            DIMS + 2
        )));
    }
    let split = sizes.len() - DIMS;
    let mut expected: Vec<i64> = sizes[..split].iter().map(|&size| size as i64).collect();
    expected.extend(&output_size);
    let actual: Vec<i64> = grad_output.sizes().iter().map(|&s| s as i64).collect();
    if actual != expected || indices.sizes() != grad_output.sizes() {
        return Err(RuntimeError::Other(format!(
            "{name}: expected grad_output and indices of shape {expected:?}, got {actual:?} \
             and {:?}",
            indices.sizes()
        )));
    }
    let planes: usize = sizes[..split].iter().product();
    let plane: usize = sizes[split..].iter().product();
    let outputs: usize = output_size
        .iter()
        .map(|&size| size.max(0) as usize)
        .product();
    let shape = |rows: usize, columns: usize| [rows as i64, columns as i64];
    let grad = grad_output.contiguous().reshape(&shape(planes, outputs))?;
    let indices = indices.contiguous().reshape(&shape(planes, outputs))?;
    let summed = Tensor::zeros(&[planes, plane], grad.dtype())?.scatter_add(1, &indices, &grad)?;
    let target: Vec<i64> = sizes.iter().map(|&size| size as i64).collect();
    Ok(summed.reshape(&target)?)
}

/// Every operator of this file, in declaration order.
pub fn declarations() -> Vec<OperatorDeclaration> {
    #[rustfmt::skip]
    let declarations = vec![
        typed("aten::fractional_max_pool2d(Tensor self, int[2] kernel_size, int[2] output_size, Tensor random_samples) -> (Tensor, Tensor)", pool::<2>),
        typed("aten::fractional_max_pool3d(Tensor self, int[3] kernel_size, int[3] output_size, Tensor random_samples) -> (Tensor, Tensor)", pool::<3>),
        typed("aten::fractional_max_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] output_size, Tensor indices) -> Tensor", pool_backward::<2>),
        typed("aten::fractional_max_pool3d_backward(Tensor grad_output, Tensor self, int[3] kernel_size, int[3] output_size, Tensor indices) -> Tensor", pool_backward::<3>),
    ];
    declarations
}
