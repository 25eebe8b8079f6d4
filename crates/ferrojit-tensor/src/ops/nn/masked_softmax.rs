//! `torch._masked_softmax`: the softmax the fast transformer path uses, where `mask` is true
//! at the positions to leave out. A row whose every position is masked gives NaN, as PyTorch's
//! CPU kernel does (its running maximum stays -inf).

use crate::dtype::{DType, Scalar};
use crate::error::{Result, TensorError};
use crate::shape::wrap_dim;
use crate::tensor::Tensor;

use super::invalid;

impl Tensor {
    /// `torch._masked_softmax(self, mask, dim, mask_type)`. `mask_type` says how a 2-D mask
    /// applies to a 4-D (batch, heads, length, length) input: 0 an attention mask (L, L), 1 a
    /// key padding mask (B, L); any other mask (type 2) has the input's shape.
    pub fn masked_softmax(
        &self,
        mask: &Tensor,
        dim: Option<i64>,
        mask_type: Option<i64>,
    ) -> Result<Tensor> {
        if mask.dtype() != DType::Bool {
            return Err(invalid("Mask should be a boolean tensor"));
        }
        // Types 0 and 1 only mean something for a 2-D mask on a 4-D input.
        let mask_type = if mask.dim() != 2 || self.dim() != 4 {
            Some(2)
        } else {
            mask_type
        };
        let sizes = self.sizes().to_vec();
        let expanded_sizes: Vec<i64> = sizes.iter().map(|&s| s as i64).collect();
        let expanded = match mask_type {
            Some(2) => {
                if mask.sizes() != sizes.as_slice() {
                    return Err(invalid(
                        "For mask_type == 2 mask shape should match input shape",
                    ));
                }
                mask.clone()
            }
            Some(1) => {
                if sizes[0] != mask.sizes()[0] || sizes[2] != mask.sizes()[1] {
                    return Err(invalid("For mask_type == 1 mask shape should be (B, L)"));
                }
                // Element (b, h, i, j) reads mask[b, j].
                mask.view(&[sizes[0] as i64, 1, 1, sizes[2] as i64])?
                    .expand(&expanded_sizes)?
            }
            Some(0) => {
                if sizes[2] != mask.sizes()[0] || sizes[2] != mask.sizes()[1] {
                    return Err(invalid("For mask_type == 0 mask shape should be (L, L)"));
                }
                // Element (b, h, i, j) reads mask[i, j].
                mask.expand(&expanded_sizes)?
            }
            None => return Err(invalid("Mask Type should be defined")),
            Some(_) => return Err(invalid(
                "Mask Type should be 0 (src_mask) or 1 (src_key_padding_mask), or 2 (default_mask)",
            )),
        };
        if !self.dtype().is_floating_point() {
            return Err(TensorError::NotImplementedForDType {
                op: "masked_softmax",
                dtype: self.dtype(),
            });
        }
        let dim = match dim {
            Some(dim) => dim,
            None => self.dim() as i64 - 1,
        };
        let rank = self.dim().max(1);
        let dim = wrap_dim(dim, rank)? as i64;
        // Masked positions become -inf: they get weight exp(-inf) = 0, and a fully masked row
        // computes exp(-inf - -inf) = NaN throughout.
        let filled = self.masked_fill(&expanded, &Scalar::Float(f64::NEG_INFINITY))?;
        filled.softmax(dim, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_positions_get_no_weight() {
        let x = Tensor::from_values(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2]);
        let mask = Tensor::from_values(vec![true, false, true, true], &[2, 2]);
        let out = x.masked_softmax(&mask, Some(1), None).unwrap().to_f64_vec();
        assert_eq!(out[0], 0.0);
        assert_eq!(out[1], 1.0);
        assert!(out[2].is_nan() && out[3].is_nan());
    }
}
