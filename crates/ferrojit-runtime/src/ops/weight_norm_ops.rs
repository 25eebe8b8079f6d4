//! Weight normalisation: `norm_except_dim`, `_weight_norm` and `_weight_norm_interface`, which
//! `torch.nn.utils.weight_norm` and its parametrization call (Hugging Face Wav2Vec2's
//! positional convolution, found by tests/fixtures/families).

use std::sync::Arc;

use ferrojit_tensor::{wrap_dim, Tensor};

use super::binding::typed;
use crate::error::Result;
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// The `pow`-norm of `v` over every dimension but `dim`, keeping that one (the others become
/// size 1), as ATen's `norm_except_dim`; `dim == -1` means the norm of the whole tensor, a
/// 0-dim result (ATen's special case, not the last dimension).
fn norm_except_dim(v: &Tensor, pow: f64, dim: i64) -> Result<Tensor> {
    if dim == -1 {
        return Ok(v.vector_norm(pow, &[], false, None)?);
    }
    let kept = wrap_dim(dim, v.dim())?;
    let reduced: Vec<i64> = (0..v.dim())
        .filter(|d| *d != kept)
        .map(|d| d as i64)
        .collect();
    if reduced.is_empty() {
        // A 1-D `v` normalised along its only dimension: each entry is its own norm. (An
        // empty list would mean "every dimension" to vector_norm.)
        return Ok(v.abs()?);
    }
    Ok(v.vector_norm(pow, &reduced, true, None)?)
}

/// `v * (g / norm_except_dim(v, 2, dim))` and the norm it divided by.
fn weight_norm_with_norm(v: &Tensor, g: &Tensor, dim: i64) -> Result<(Tensor, Tensor)> {
    let norm = norm_except_dim(v, 2.0, dim)?;
    let weight = v.mul(&g.div(&norm, None)?)?;
    Ok((weight, norm))
}

pub fn declarations() -> Vec<OperatorDeclaration> {
    #[rustfmt::skip]
    let declarations = vec![
        typed("aten::norm_except_dim(Tensor v, int pow=2, int dim=0) -> Tensor",
              |v: Input, pow: i64, dim: i64| norm_except_dim(&v, pow as f64, dim)),
        typed("aten::_weight_norm(Tensor v, Tensor g, int dim=0) -> Tensor",
              |v: Input, g: Input, dim: i64| Ok(weight_norm_with_norm(&v, &g, dim)?.0)),
        typed("aten::_weight_norm_interface(Tensor v, Tensor g, int dim=0) -> (Tensor, Tensor)",
              |v: Input, g: Input, dim: i64| -> Result<Vec<IValue>> {
                  let (weight, norm) = weight_norm_with_norm(&v, &g, dim)?;
                  Ok(vec![IValue::from(weight), IValue::from(norm)])
              }),
    ];
    declarations
}
