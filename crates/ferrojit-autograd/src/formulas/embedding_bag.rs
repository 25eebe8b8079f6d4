//! Derivative of `embedding_bag` (1-d indices with offsets; sum and mean modes): each bag's
//! output gradient goes back to the weight rows its indices name, scaled by the per-sample
//! weight (sum) or the bag size (mean), skipping `padding_idx`; a per-sample weight's
//! gradient is its row's dot product with the bag's output gradient.

use ferrojit_runtime::{IValue, Result};

use super::support::{index_tensor, refuse};
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call1, int, mul, reshape};

/// `embedding_bag` and `embedding_bag.padding_idx`: a negative `padding_idx` counts from the
/// end.
fn embedding_bag(input: &FormulaInput) -> Result<Gradients> {
    embedding_bag_with(input, false)
}

/// `_embedding_bag`: its caller has wrapped `padding_idx` already, and -1 means none.
fn embedding_bag_wrapped(input: &FormulaInput) -> Result<Gradients> {
    embedding_bag_with(input, true)
}

/// Argument layout shared by the overloads: `(weight, indices, offsets, scale_grad_by_freq,
/// mode, sparse, per_sample_weights, include_last_offset[, padding_idx])`.
fn embedding_bag_with(input: &FormulaInput, negative_padding_is_none: bool) -> Result<Gradients> {
    let weight = input.argument(0)?;
    let indices = call::tensor(input.argument(1)?)?.to_i64_vec();
    let offsets = call::tensor(input.argument(2)?)?.to_i64_vec();
    if call::tensor(input.argument(1)?)?.sizes().len() != 1 {
        return Err(refuse(
            "the derivative for 'embedding_bag' is implemented for 1-D indices with offsets",
        ));
    }
    if input.argument(3)?.to_bool()? {
        return Err(refuse(
            "the derivative for 'embedding_bag' with scale_grad_by_freq is not implemented.",
        ));
    }
    let mode = input.int(4)?;
    if mode == 2 {
        return Err(refuse(
            "the derivative for 'embedding_bag' in max mode is not implemented.",
        ));
    }
    let include_last_offset = input.argument(7)?.to_bool()?;
    let weight_sizes = input.sizes(0)?;
    let rows = weight_sizes.first().copied().unwrap_or(0) as i64;
    let padding = match input.arguments.get(8) {
        Some(IValue::Int(value)) if *value < 0 && negative_padding_is_none => None,
        Some(IValue::Int(value)) => Some(if *value < 0 { value + rows } else { *value }),
        _ => None,
    };
    let count = indices.len();
    let bags = if include_last_offset {
        offsets.len().saturating_sub(1)
    } else {
        offsets.len()
    };
    // The bag of each index position, and each bag's size.
    let mut bag_of = vec![0i64; count];
    let mut bag_sizes = vec![0usize; bags.max(1)];
    for bag in 0..bags {
        let start = usize::try_from(offsets[bag]).unwrap_or(0).min(count);
        // The last bag runs to the end of `indices`, also when `include_last_offset` names
        // an earlier end: PyTorch's backward counts those indices into it.
        let end = if bag + 1 < bags {
            usize::try_from(offsets[bag + 1])
                .unwrap_or(count)
                .min(count)
        } else {
            count
        };
        for position in start..end.max(start) {
            bag_of[position] = bag as i64;
            bag_sizes[bag] += usize::from(Some(indices[position]) != padding);
        }
    }
    let kept: Vec<f64> = indices
        .iter()
        .zip(&bag_of)
        .map(|(&index, &bag)| {
            if Some(index) == padding {
                0.0
            } else if mode == 1 {
                1.0 / bag_sizes[bag as usize].max(1) as f64
            } else {
                1.0
            }
        })
        .collect();
    let dtype = input.dtype(0)?;
    let kept = call::fresh(ferrojit_tensor::Tensor::from_vec(kept, &[count, 1])?);
    let kept = call1("aten::to.dtype", vec![kept, int(dtype.scalar_type_index())])?;
    let bag_index = index_tensor(bag_of, &[count])?;
    let index = index_tensor(indices, &[count])?;
    let gathered = call1(
        "aten::index_select",
        vec![input.grad(0)?.clone(), int(0), bag_index],
    )?;
    let gathered = mul(&gathered, &kept)?;
    let per_sample = input.argument(6)?;
    let mut out = input.none();
    if input.needs(0) {
        let spread = if per_sample.is_none() {
            gathered.clone()
        } else {
            mul(&gathered, &reshape(per_sample, &[count, 1])?)?
        };
        let zeros = call::zeros(&weight_sizes, dtype)?;
        out[0] = Some(call1(
            "aten::index_add",
            vec![zeros, int(0), index.clone(), spread],
        )?);
    }
    if input.needs(6) && !per_sample.is_none() {
        let rows = call1("aten::index_select", vec![weight.clone(), int(0), index])?;
        out[6] = Some(call::sum_dims(&mul(&rows, &gathered)?, &[1], false)?);
    }
    Ok(out)
}

formula_table![
    (
        "aten::embedding_bag",
        "EmbeddingBagBackward0",
        embedding_bag,
        &[0, 1, 2, 6]
    ),
    (
        "aten::embedding_bag.padding_idx",
        "EmbeddingBagBackward0",
        embedding_bag,
        &[0, 1, 2, 6]
    ),
    (
        "aten::_embedding_bag",
        "EmbeddingBagBackward0",
        embedding_bag_wrapped,
        &[0, 1, 2, 6]
    ),
];
