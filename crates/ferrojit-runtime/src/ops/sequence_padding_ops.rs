//! Padding and packing of tensor sequences: `pad_sequence` (what
//! `torch.nn.utils.rnn.pad_sequence` calls), `_pad_enum` (`F.pad` with its mode as
//! `at::padding_mode`'s number), and `flatten_dense_tensors` / `unflatten_dense_tensors`
//! (one flat buffer for a list of tensors, and back).

use std::sync::Arc;

use ferrojit_tensor::ops::nn::misc::{pad, PadMode};
use ferrojit_tensor::{Scalar, Tensor};

use super::binding::typed;
use crate::error::{Result, RuntimeError};
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

fn other(message: impl Into<String>) -> RuntimeError {
    RuntimeError::Other(message.into())
}

/// `pad_sequence`: the sequences (each `[length, *trailing]`) stacked along a new batch dim
/// (first with `batch_first`, else second), each padded to the longest with
/// `padding_value`, on its right or (`padding_side="left"`) its left. The result has the
/// first sequence's dtype; every sequence's trailing dims must broadcast to the first's.
fn pad_sequence(
    sequences: Vec<Tensor>,
    batch_first: bool,
    padding_value: f64,
    padding_side: String,
) -> Result<Tensor> {
    let Some(first) = sequences.first() else {
        return Err(other("received an empty list of sequences"));
    };
    let left = match padding_side.as_str() {
        "left" => true,
        "right" => false,
        side => {
            return Err(other(format!(
                "Expected padding_side to be one of left or right, but got {side}."
            )))
        }
    };
    if first.dim() == 0 {
        return Err(other("ArrayRef: invalid slice, N = 1; size = 0"));
    }
    let longest = sequences
        .iter()
        .map(|sequence| sequence.sizes().first().copied().unwrap_or(0))
        .max()
        .unwrap_or(0);
    let trailing = &first.sizes()[1..];
    let mut sizes = if batch_first {
        vec![sequences.len(), longest]
    } else {
        vec![longest, sequences.len()]
    };
    sizes.extend_from_slice(trailing);
    let out = Tensor::full(&sizes, Scalar::Float(padding_value), first.dtype())?;
    for (index, sequence) in sequences.iter().enumerate() {
        let length = sequence.sizes().first().copied().unwrap_or(0);
        let start = if left { longest - length } else { 0 } as i64;
        let slot = if batch_first {
            out.select(0, index as i64)?
                .narrow(0, start, length as i64)?
        } else {
            out.narrow(0, start, length as i64)?
                .select(1, index as i64)?
        };
        slot.copy_(sequence)?;
    }
    Ok(out)
}

/// `_pad_enum`: `pad` with the mode given as `at::padding_mode` numbers it (0 reflect,
/// 1 replicate, 2 circular, 3 constant); only the constant mode takes a value.
fn pad_enum(input: Input, padding: Vec<i64>, mode: i64, value: Option<f64>) -> Result<Tensor> {
    let (mode, name) = match mode {
        0 => (PadMode::Reflect, "reflect"),
        1 => (PadMode::Replicate, "replicate"),
        2 => (PadMode::Circular, "circular"),
        3 => (PadMode::Constant, "constant"),
        other_mode => {
            return Err(other(format!(
                "_pad_enum: unknown padding mode {other_mode} (0 reflect, 1 replicate, 2 circular, 3 constant)"
            )))
        }
    };
    if value.is_some() && mode != PadMode::Constant {
        return Err(other(format!(
            "Padding mode \"{name}\" doesn't take in value argument"
        )));
    }
    Ok(pad(&input, &padding, mode, value.unwrap_or(0.0))?)
}

/// `flatten_dense_tensors`: every tensor's elements, in order, in one 1-d tensor.
fn flatten_dense_tensors(tensors: Vec<Tensor>) -> Result<Tensor> {
    if tensors.is_empty() {
        return Err(RuntimeError::ValueError(
            "torch.cat(): expected a non-empty list of Tensors".to_string(),
        ));
    }
    let flat: Vec<Tensor> = tensors
        .iter()
        .map(|tensor| tensor.contiguous().reshape(&[-1]))
        .collect::<std::result::Result<_, _>>()?;
    Ok(ferrojit_tensor::cat(&flat, 0)?)
}

/// `unflatten_dense_tensors`: `flat` cut into consecutive pieces shaped like `tensors`.
fn unflatten_dense_tensors(flat: Input, tensors: Vec<Tensor>) -> Result<Vec<Tensor>> {
    let mut offset = 0i64;
    let mut pieces = Vec::with_capacity(tensors.len());
    for tensor in &tensors {
        let numel = tensor.numel() as i64;
        let sizes: Vec<i64> = tensor.sizes().iter().map(|&s| s as i64).collect();
        pieces.push(flat.narrow(0, offset, numel)?.view(&sizes)?);
        offset += numel;
    }
    Ok(pieces)
}

/// Every operator of this file, in declaration order.
pub fn declarations() -> Vec<OperatorDeclaration> {
    #[rustfmt::skip]
    let declarations = vec![
        typed("aten::pad_sequence(Tensor[] sequences, bool batch_first=False, float padding_value=0., str padding_side=\"right\") -> Tensor", pad_sequence),
        typed("aten::_pad_enum(Tensor self, SymInt[] pad, int mode, float? value=None) -> Tensor", pad_enum),
        typed("aten::flatten_dense_tensors(Tensor[] tensors) -> Tensor", flatten_dense_tensors),
        typed("aten::unflatten_dense_tensors(Tensor flat, Tensor[] tensors) -> Tensor[]", unflatten_dense_tensors),
    ];
    declarations
}
