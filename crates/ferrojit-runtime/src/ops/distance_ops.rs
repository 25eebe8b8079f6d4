//! Pairwise distances: `cdist` and `_cdist_forward` (rows of two batched matrices), `pdist`
//! and `_pdist_forward` (rows of one matrix), over ferrojit-tensor's `ops::nn::distance`.

use std::sync::Arc;

use ferrojit_tensor::ops::nn::distance;
use ferrojit_tensor::Tensor;

use super::binding::{out_from_functional, typed};
use crate::error::Result;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

fn cdist(x1: Input, x2: Input, p: f64, compute_mode: Option<i64>) -> Result<Tensor> {
    Ok(distance::cdist(&x1, &x2, p, compute_mode)?)
}

/// `pdist` reads any layout (ATen makes the input contiguous first).
fn pdist(input: Input, p: f64) -> Result<Tensor> {
    Ok(distance::pdist(&input, p, false)?)
}

/// `_pdist_forward` refuses a non-contiguous input, as ATen's does.
fn pdist_forward(input: Input, p: f64) -> Result<Tensor> {
    Ok(distance::pdist(&input, p, true)?)
}

pub fn declarations() -> Vec<OperatorDeclaration> {
    #[rustfmt::skip]
    let declarations = vec![
        typed("aten::cdist(Tensor x1, Tensor x2, float p=2., int? compute_mode=None) -> Tensor", cdist),
        typed("aten::_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor", cdist),
        out_from_functional("aten::_cdist_forward.out(Tensor x1, Tensor x2, float p, int? compute_mode, *, Tensor(a!) out) -> Tensor(a!)", cdist),
        typed("aten::pdist(Tensor self, float p=2.) -> Tensor", pdist),
        typed("aten::_pdist_forward(Tensor self, float p=2.) -> Tensor", pdist_forward),
        out_from_functional("aten::_pdist_forward.out(Tensor self, float p=2., *, Tensor(a!) out) -> Tensor(a!)", pdist_forward),
    ];
    declarations
}
