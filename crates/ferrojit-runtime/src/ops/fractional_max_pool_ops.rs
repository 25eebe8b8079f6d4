//! `fractional_max_pool2d` / `fractional_max_pool3d` over ferrojit-tensor's
//! `nn::fractional_max_pool` (their `.output` forms are derived). The samples are an argument: the Python
//! functional draws them (`torch.rand`) when the caller gives none.

use std::sync::Arc;

use ferrojit_tensor::ops::nn::fractional_max_pool::fractional_max_pool;
use ferrojit_tensor::Tensor;

use super::binding::typed;
use crate::error::Result;
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

/// Every operator of this file, in declaration order.
pub fn declarations() -> Vec<OperatorDeclaration> {
    #[rustfmt::skip]
    let declarations = vec![
        typed("aten::fractional_max_pool2d(Tensor self, int[2] kernel_size, int[2] output_size, Tensor random_samples) -> (Tensor, Tensor)", pool::<2>),
        typed("aten::fractional_max_pool3d(Tensor self, int[3] kernel_size, int[3] output_size, Tensor random_samples) -> (Tensor, Tensor)", pool::<3>),
    ];
    declarations
}
