//! `_sobol_engine_draw`, the step `torch.quasirandom.SobolEngine.draw` takes, over
//! ferrojit-tensor's `quasirandom`.

use std::sync::Arc;

use ferrojit_tensor::ops::quasirandom::sobol_engine_draw;
use ferrojit_tensor::{DType, Tensor};

use super::binding::typed;
use crate::error::Result;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

fn draw(
    quasi: Input,
    n: i64,
    sobolstate: Input,
    dimension: i64,
    num_generated: i64,
    dtype: Option<DType>,
) -> Result<(Tensor, Tensor)> {
    Ok(sobol_engine_draw(
        &quasi,
        n,
        &sobolstate,
        dimension,
        num_generated,
        dtype,
    )?)
}

/// Every operator of this file, in declaration order.
pub fn declarations() -> Vec<OperatorDeclaration> {
    #[rustfmt::skip]
    let declarations = vec![
        typed("aten::_sobol_engine_draw(Tensor quasi, int n, Tensor sobolstate, int dimension, int num_generated, ScalarType? dtype) -> (Tensor, Tensor)", draw),
    ];
    declarations
}
