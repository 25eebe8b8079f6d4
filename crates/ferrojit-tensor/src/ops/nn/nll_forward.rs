//! `nll_loss_forward` / `nll_loss2d_forward`: the negative log-likelihood loss together with
//! the total weight of the counted targets, the pair ATen's forward kernels return (and
//! traced or exported graphs record).

use super::from_f64;
use super::loss::{nll_loss, Reduction};
use crate::error::Result;
use crate::tensor::Tensor;

/// The loss as [`nll_loss`] computes it, and the sum of the class weights (1 each without a
/// weight) of the targets not equal to `ignore_index`. With no reduction over a batch, ATen
/// leaves the total weight 0.
pub fn nll_loss_forward(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
    ignore_index: i64,
) -> Result<(Tensor, Tensor)> {
    let output = nll_loss(input, target, weight, reduction, ignore_index)?;
    let dtype = output.dtype();
    if reduction == Reduction::None && input.dim() >= 2 {
        return Ok((output, from_f64(vec![0.0], &[], dtype)));
    }
    let weights = weight.map(|w| w.to_f64_vec());
    let total: f64 = target
        .to_i64_vec()
        .into_iter()
        .filter(|&class| class != ignore_index)
        .map(|class| weights.as_ref().map_or(1.0, |w| w[class as usize]))
        .sum();
    Ok((output, from_f64(vec![total], &[], dtype)))
}
