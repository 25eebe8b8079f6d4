//! Recurrent operators (`aten::lstm`, `aten::gru`, `aten::rnn_tanh`, `aten::rnn_relu` on padded
//! and packed input, and their single-step cells), registered by their native_functions.yaml
//! schemas and computed by `ferrojit_tensor::ops::nn::rnn`.

use ferrojit_tensor::ops::nn::rnn::{self, RnnMode, RnnOptions};
use ferrojit_tensor::Tensor;

use super::{optional_tensor, pop_array, push, KernelTableEntry};
use crate::error::Result;
use crate::ivalue::IValue;
use crate::registry::Stack;

/// Reads `has_biases, num_layers, dropout, train, bidirectional` (and `batch_first`).
fn options(mode: RnnMode, flags: &[IValue], batch_first: Option<&IValue>) -> Result<RnnOptions> {
    Ok(RnnOptions {
        mode,
        has_biases: flags[0].to_bool()?,
        num_layers: flags[1].to_int()?,
        dropout: flags[2].to_double()?,
        train: flags[3].to_bool()?,
        bidirectional: flags[4].to_bool()?,
        batch_first: match batch_first {
            Some(value) => value.to_bool()?,
            None => false,
        },
    })
}

/// The `hx` argument: a tensor list for LSTMs, one tensor otherwise.
fn states(value: &IValue) -> Result<Vec<Tensor>> {
    match value {
        IValue::Tensor(t) => Ok(vec![Tensor::clone(&t.get())]),
        other => other.to_tensor_vec(),
    }
}

fn push_result(stack: &mut Stack, output: Tensor, finals: Vec<Tensor>) -> Result<()> {
    push(stack, output)?;
    for state in finals {
        push(stack, state)?;
    }
    Ok(())
}

fn padded(mode: RnnMode, stack: &mut Stack) -> Result<()> {
    let [input, hx, params, b, l, d, t, bi, bf] = pop_array::<9>(stack)?;
    let opts = options(mode, &[b, l, d, t, bi], Some(&bf))?;
    let (output, finals) = rnn::rnn(
        &*input.to_tensor()?,
        &states(&hx)?,
        &params.to_tensor_vec()?,
        &opts,
    )?;
    push_result(stack, output, finals)
}

fn packed(mode: RnnMode, stack: &mut Stack) -> Result<()> {
    let [data, batch_sizes, hx, params, b, l, d, t, bi] = pop_array::<9>(stack)?;
    let opts = options(mode, &[b, l, d, t, bi], None)?;
    let (output, finals) = rnn::rnn_packed_sequence(
        &*data.to_tensor()?,
        &*batch_sizes.to_tensor()?,
        &states(&hx)?,
        &params.to_tensor_vec()?,
        &opts,
    )?;
    push_result(stack, output, finals)
}

fn cell(mode: RnnMode, stack: &mut Stack) -> Result<()> {
    let [input, hx, w_ih, w_hh, b_ih, b_hh] = pop_array::<6>(stack)?;
    let mut out = rnn::rnn_cell(
        mode,
        &*input.to_tensor()?,
        &states(&hx)?,
        &*w_ih.to_tensor()?,
        &*w_hh.to_tensor()?,
        optional_tensor(&b_ih)?.as_deref(),
        optional_tensor(&b_hh)?.as_deref(),
    )?;
    // One stack value per schema return: (h, c) for the LSTM cell, h otherwise.
    stack.extend(out.drain(..).map(IValue::from));
    Ok(())
}

fn lstm_input(stack: &mut Stack) -> Result<()> {
    padded(RnnMode::Lstm, stack)
}

fn gru_input(stack: &mut Stack) -> Result<()> {
    padded(RnnMode::Gru, stack)
}

fn rnn_tanh_input(stack: &mut Stack) -> Result<()> {
    padded(RnnMode::RnnTanh, stack)
}

fn rnn_relu_input(stack: &mut Stack) -> Result<()> {
    padded(RnnMode::RnnRelu, stack)
}

fn lstm_data(stack: &mut Stack) -> Result<()> {
    packed(RnnMode::Lstm, stack)
}

fn gru_data(stack: &mut Stack) -> Result<()> {
    packed(RnnMode::Gru, stack)
}

fn rnn_tanh_data(stack: &mut Stack) -> Result<()> {
    packed(RnnMode::RnnTanh, stack)
}

fn rnn_relu_data(stack: &mut Stack) -> Result<()> {
    packed(RnnMode::RnnRelu, stack)
}

fn lstm_cell(stack: &mut Stack) -> Result<()> {
    cell(RnnMode::Lstm, stack)
}

fn gru_cell(stack: &mut Stack) -> Result<()> {
    cell(RnnMode::Gru, stack)
}

fn rnn_tanh_cell(stack: &mut Stack) -> Result<()> {
    cell(RnnMode::RnnTanh, stack)
}

fn rnn_relu_cell(stack: &mut Stack) -> Result<()> {
    cell(RnnMode::RnnRelu, stack)
}

/// The recurrent operators' table.
pub const TABLE: &[KernelTableEntry] = &[
    ("aten::lstm.input(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor, Tensor)", lstm_input),
    ("aten::lstm.data(Tensor data, Tensor batch_sizes, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional) -> (Tensor, Tensor, Tensor)", lstm_data),
    ("aten::gru.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)", gru_input),
    ("aten::gru.data(Tensor data, Tensor batch_sizes, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional) -> (Tensor, Tensor)", gru_data),
    ("aten::rnn_tanh.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)", rnn_tanh_input),
    ("aten::rnn_tanh.data(Tensor data, Tensor batch_sizes, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional) -> (Tensor, Tensor)", rnn_tanh_data),
    ("aten::rnn_relu.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)", rnn_relu_input),
    ("aten::rnn_relu.data(Tensor data, Tensor batch_sizes, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional) -> (Tensor, Tensor)", rnn_relu_data),
    ("aten::lstm_cell(Tensor input, Tensor[] hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> (Tensor, Tensor)", lstm_cell),
    ("aten::gru_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> Tensor", gru_cell),
    ("aten::rnn_tanh_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> Tensor", rnn_tanh_cell),
    ("aten::rnn_relu_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> Tensor", rnn_relu_cell),
];
