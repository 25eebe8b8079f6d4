//! Recurrent operators (`aten::lstm`, `aten::gru`, `aten::rnn_tanh`, `aten::rnn_relu` on padded
//! and packed input, and their single-step cells), registered by their native_functions.yaml
//! schemas as typed kernels and computed by `ferrojit_tensor::ops::nn::rnn`.
//!
//! The padded and packed forms take nine arguments, one more than the binding's typed kernels
//! take, so they read their argument slice ([`SliceKernel`]) and convert each argument with its
//! parameter type's [`FromArgument`], as a typed kernel would.

use std::sync::Arc;

use ferrojit_tensor::ops::nn::rnn::{self, RnnMode, RnnOptions};
use ferrojit_tensor::Tensor;

use super::binding::{typed, FromArgument, SliceKernel};
use super::core_ops::FloatArgument;
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// The `hx` argument: a tensor list for LSTMs (`Tensor[] hx`), one tensor otherwise.
struct RnnStates(Vec<Tensor>);

impl FromArgument for RnnStates {
    fn from_argument(value: &IValue) -> Result<Self> {
        match value {
            IValue::Tensor(t) => Ok(RnnStates(vec![Tensor::clone(&t.get())])),
            other => other.to_tensor_vec().map(RnnStates),
        }
    }
}

/// One argument of a slice-reading kernel, converted per its parameter type.
fn parameter<T: FromArgument>(value: &IValue) -> Result<T> {
    T::from_argument(value)
}

fn wrong_argument_count() -> RuntimeError {
    RuntimeError::InvalidGraph("operand stack underflow in an operator".to_string())
}

/// Reads `has_biases, num_layers, dropout, train, bidirectional` (and `batch_first`).
fn options(mode: RnnMode, flags: &[IValue; 5], batch_first: Option<&IValue>) -> Result<RnnOptions> {
    let [has_biases, num_layers, dropout, train, bidirectional] = flags;
    Ok(RnnOptions {
        mode,
        has_biases: parameter(has_biases)?,
        num_layers: parameter(num_layers)?,
        dropout: parameter::<FloatArgument>(dropout)?.0,
        train: parameter(train)?,
        bidirectional: parameter(bidirectional)?,
        batch_first: match batch_first {
            Some(value) => parameter(value)?,
            None => false,
        },
    })
}

/// One result per schema return: the output, then each final state.
fn results(output: Tensor, finals: Vec<Tensor>) -> Vec<IValue> {
    std::iter::once(output)
        .chain(finals)
        .map(IValue::from)
        .collect()
}

/// `aten::{lstm,gru,rnn_tanh,rnn_relu}.input`: `(input, hx, params, has_biases, num_layers,
/// dropout, train, bidirectional, batch_first)`.
fn padded(
    mode: RnnMode,
) -> SliceKernel<impl Fn(&[IValue]) -> Result<Vec<IValue>> + Clone + Send + Sync + 'static> {
    SliceKernel {
        arity: 9,
        body: move |arguments: &[IValue]| {
            let [input, hx, params, flags @ .., batch_first] = arguments else {
                return Err(wrong_argument_count());
            };
            let flags: &[IValue; 5] = flags.try_into().map_err(|_| wrong_argument_count())?;
            let opts = options(mode, flags, Some(batch_first))?;
            let (output, finals) = rnn::rnn(
                &*parameter::<Input>(input)?,
                &parameter::<RnnStates>(hx)?.0,
                &parameter::<Vec<Tensor>>(params)?,
                &opts,
            )?;
            Ok(results(output, finals))
        },
    }
}

/// `aten::{lstm,gru,rnn_tanh,rnn_relu}.data`: `(data, batch_sizes, hx, params, has_biases,
/// num_layers, dropout, train, bidirectional)`.
fn packed(
    mode: RnnMode,
) -> SliceKernel<impl Fn(&[IValue]) -> Result<Vec<IValue>> + Clone + Send + Sync + 'static> {
    SliceKernel {
        arity: 9,
        body: move |arguments: &[IValue]| {
            let [data, batch_sizes, hx, params, flags @ ..] = arguments else {
                return Err(wrong_argument_count());
            };
            let flags: &[IValue; 5] = flags.try_into().map_err(|_| wrong_argument_count())?;
            let opts = options(mode, flags, None)?;
            let (output, finals) = rnn::rnn_packed_sequence(
                &*parameter::<Input>(data)?,
                &*parameter::<Input>(batch_sizes)?,
                &parameter::<RnnStates>(hx)?.0,
                &parameter::<Vec<Tensor>>(params)?,
                &opts,
            )?;
            Ok(results(output, finals))
        },
    }
}

/// A single-step cell: `(h, c)` for the LSTM cell, `h` otherwise.
fn cell(
    mode: RnnMode,
) -> impl Fn(Input, RnnStates, Input, Input, Option<Input>, Option<Input>) -> Result<Vec<IValue>>
       + Clone
       + Send
       + Sync
       + 'static {
    move |input, hx, w_ih, w_hh, b_ih, b_hh| {
        let states = rnn::rnn_cell(
            mode,
            &input,
            &hx.0,
            &w_ih,
            &w_hh,
            b_ih.as_deref(),
            b_hh.as_deref(),
        )?;
        Ok(states.into_iter().map(IValue::from).collect())
    }
}

/// Every recurrent operator.
#[rustfmt::skip]
pub fn declarations() -> Vec<OperatorDeclaration> {
    use RnnMode::{Gru, Lstm, RnnRelu, RnnTanh};
    vec![
        typed("aten::lstm.input(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor, Tensor)", padded(Lstm)),
        typed("aten::lstm.data(Tensor data, Tensor batch_sizes, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional) -> (Tensor, Tensor, Tensor)", packed(Lstm)),
        typed("aten::gru.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)", padded(Gru)),
        typed("aten::gru.data(Tensor data, Tensor batch_sizes, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional) -> (Tensor, Tensor)", packed(Gru)),
        typed("aten::rnn_tanh.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)", padded(RnnTanh)),
        typed("aten::rnn_tanh.data(Tensor data, Tensor batch_sizes, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional) -> (Tensor, Tensor)", packed(RnnTanh)),
        typed("aten::rnn_relu.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)", padded(RnnRelu)),
        typed("aten::rnn_relu.data(Tensor data, Tensor batch_sizes, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional) -> (Tensor, Tensor)", packed(RnnRelu)),
        typed("aten::lstm_cell(Tensor input, Tensor[] hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> (Tensor, Tensor)", cell(Lstm)),
        typed("aten::gru_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> Tensor", cell(Gru)),
        typed("aten::rnn_tanh_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> Tensor", cell(RnnTanh)),
        typed("aten::rnn_relu_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> Tensor", cell(RnnRelu)),
    ]
}
