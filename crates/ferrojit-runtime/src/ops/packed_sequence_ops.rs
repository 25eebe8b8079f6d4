//! Packed sequences, what `torch.nn.utils.rnn.pack_padded_sequence` and
//! `pad_packed_sequence` call: `_pack_padded_sequence` keeps, time step by time step, the
//! batch entries still running (lengths sorted longest first), and `_pad_packed_sequence`
//! lays them back out padded.

use std::sync::Arc;

use ferrojit_tensor::{DType, Scalar, Tensor};

use super::binding::typed;
use crate::error::{Result, RuntimeError};
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

fn other(message: impl Into<String>) -> RuntimeError {
    RuntimeError::Other(message.into())
}

/// `_pack_padded_sequence(input, lengths, batch_first)`: input is [T, B, *] ([B, T, *] with
/// `batch_first`); lengths a 1-d int64 tensor of B decreasing positive lengths. Returns the
/// packed steps (for each time t, the first `batch_sizes[t]` batch entries) and
/// `batch_sizes`, the number of sequences longer than t.
fn pack_padded_sequence(
    input: Input,
    lengths: Input,
    batch_first: bool,
) -> Result<(Tensor, Tensor)> {
    if lengths.dim() != 1 || lengths.dtype() != DType::Int64 {
        return Err(other(format!(
            "'lengths' argument should be a 1D CPU int64 tensor, but got {}D cpu {} tensor",
            lengths.dim(),
            lengths.dtype().scalar_type_name()
        )));
    }
    let input = if batch_first {
        input.transpose(0, 1)?
    } else {
        Tensor::clone(&input)
    };
    let lengths = lengths.contiguous().to_i64_vec();
    let batch = input.sizes().get(1).copied().unwrap_or(0);
    if lengths.len() != batch {
        return Err(other(format!(
            "Expected `len(lengths)` to be equal to batch_size, but got {} (batch_size={batch})",
            lengths.len()
        )));
    }
    if lengths.last().is_some_and(|&last| last <= 0) {
        return Err(other("Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0"));
    }
    if lengths.windows(2).any(|pair| pair[1] > pair[0]) {
        return Err(other("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement if you do not need ONNX exportability."));
    }
    let steps = lengths.first().copied().unwrap_or(0);
    let time = input.sizes().first().copied().unwrap_or(0) as i64;
    if steps > time {
        return Err(other(format!(
            "_pack_padded_sequence: the longest length ({steps}) exceeds the input's {time} time steps"
        )));
    }
    let mut batch_sizes = Vec::with_capacity(steps as usize);
    let mut pieces = Vec::with_capacity(steps as usize);
    for t in 0..steps {
        let running = lengths.iter().filter(|&&length| length > t).count() as i64;
        batch_sizes.push(running);
        pieces.push(input.select(0, t)?.narrow(0, 0, running)?);
    }
    let data = ferrojit_tensor::cat(&pieces, 0)?;
    let count = batch_sizes.len();
    Ok((data, Tensor::from_vec(batch_sizes, &[count])?))
}

/// `_pad_packed_sequence(data, batch_sizes, batch_first, padding_value, total_length)`: the
/// packed steps back in a [T, B, *] tensor ([B, T, *] with `batch_first`) filled with
/// `padding_value`, T being `total_length` when positive, and each sequence's length.
fn pad_packed_sequence(
    data: Input,
    batch_sizes: Input,
    batch_first: bool,
    padding_value: Scalar,
    total_length: i64,
) -> Result<(Tensor, Tensor)> {
    let sizes = batch_sizes.contiguous().to_i64_vec();
    let longest = sizes.len() as i64;
    let batch = sizes.first().copied().unwrap_or(0).max(0) as usize;
    let steps = if total_length > 0 {
        if total_length < longest {
            return Err(other(format!(
                "Expected total_length to be at least the length of the longest sequence in input, but got total_length={total_length} and max sequence length being {longest}"
            )));
        }
        total_length
    } else {
        longest
    };
    let mut out_sizes = vec![steps as usize, batch];
    out_sizes.extend_from_slice(&data.sizes()[1..]);
    let out = Tensor::full(&out_sizes, padding_value, data.dtype())?;
    let mut offset = 0i64;
    for (t, &running) in sizes.iter().enumerate() {
        out.select(0, t as i64)?
            .narrow(0, 0, running)?
            .copy_(&data.narrow(0, offset, running)?)?;
        offset += running;
    }
    let lengths: Vec<i64> = (0..batch as i64)
        .map(|entry| sizes.iter().filter(|&&running| running > entry).count() as i64)
        .collect();
    let out = if batch_first {
        out.transpose(0, 1)?
    } else {
        out
    };
    Ok((out, Tensor::from_vec(lengths, &[batch])?))
}

/// Every operator of this file, in declaration order.
pub fn declarations() -> Vec<OperatorDeclaration> {
    #[rustfmt::skip]
    let declarations = vec![
        typed("aten::_pack_padded_sequence(Tensor input, Tensor lengths, bool batch_first) -> (Tensor, Tensor)", pack_padded_sequence),
        typed("aten::_pad_packed_sequence(Tensor data, Tensor batch_sizes, bool batch_first, Scalar padding_value, int total_length) -> (Tensor, Tensor)", pad_packed_sequence),
    ];
    declarations
}
