//! One float32 LSTM step as a single pass: the two gate products, the biases and the gate
//! arithmetic computed together for each hidden unit, writing only the new hidden and cell
//! states.
//!
//! The operator-by-operator form (`linear(x, w_ih, b_ih)`, `linear(h, w_hh, b_hh)`, their sum,
//! then the gates) allocates a gate tensor per product and walks the gates once per operator.
//! For the small hidden sizes of cell loops (hidden 32: 128 gates of 64 multiply-adds each)
//! that bookkeeping costs more than the arithmetic. Here each hidden unit `j` reads its four
//! gate rows (`j`, `H + j`, `2H + j`, `3H + j`) of both weights, so the work also splits across
//! threads by ranges of hidden units with no shared output.
//!
//! Each gate adds in the operator form's order (`(h . w_hh + b_hh) + (x . w_ih + b_ih)`); the
//! dot products themselves sum in eight lanes, as the one-row product of `linear` does, so
//! results agree with the operator form to rounding (a few ULP), not bitwise.

use crate::dtype::DType;
use crate::element::Arith;
use crate::error::Result;
use crate::ops::parallel::num_threads;
use crate::ops::vectorized_math::{self, VectorFunction};
use crate::tensor::Tensor;

/// The input side of a step, as tensors.
pub(super) enum StepInput<'a> {
    /// `[batch, 4 * hidden]` gates, `w_ih`'s product and bias already added.
    Gates(&'a Tensor),
    /// `[batch, features]` input rows, to multiply by `w_ih` here.
    Input(&'a Tensor),
}

/// The step's weights: `w_ih` (used with [`StepInput::Input`] only), `w_hh`, and the biases.
pub(super) struct StepWeights<'a> {
    pub input_weight: &'a Tensor,
    pub input_bias: Option<&'a Tensor>,
    pub hidden_weight: &'a Tensor,
    pub hidden_bias: Option<&'a Tensor>,
}

/// The new `(h, c)` of a float32 LSTM step without a projection, in one pass; `None` when an
/// operand is not float32 or its shape is not exactly a step's (the general form then runs,
/// and reports any error in PyTorch's words).
pub(super) fn lstm_step_in_one_pass(
    input: StepInput,
    weights: &StepWeights,
    h: &Tensor,
    c: &Tensor,
) -> Result<Option<(Tensor, Tensor)>> {
    if h.dim() != 2 || c.sizes() != h.sizes() {
        return Ok(None);
    }
    let (batch, hidden) = (h.sizes()[0], h.sizes()[1]);
    let gates = 4 * hidden;
    let is_f32 = |t: &Tensor| t.dtype() == DType::Float32;
    let bias_fits = |b: Option<&Tensor>| b.is_none_or(|b| is_f32(b) && b.sizes() == [gates]);
    let shared_fit = is_f32(h)
        && is_f32(c)
        && is_f32(weights.hidden_weight)
        && weights.hidden_weight.sizes() == [gates, hidden]
        && bias_fits(weights.hidden_bias);
    let input_fits = match input {
        StepInput::Gates(g) => is_f32(g) && g.sizes() == [batch, gates],
        StepInput::Input(x) => {
            x.dim() == 2
                && x.sizes()[0] == batch
                && is_f32(x)
                && is_f32(weights.input_weight)
                && weights.input_weight.sizes() == [gates, x.sizes()[1]]
                && bias_fits(weights.input_bias)
        }
    };
    if !(shared_fit && input_fits) || batch == 0 || hidden == 0 {
        return Ok(None);
    }
    let result = h.with_elements::<f32, _>(|hidden_state| {
        c.with_elements::<f32, _>(|cell_state| {
            weights
                .hidden_weight
                .with_elements::<f32, _>(|hidden_weight| {
                    with_optional(weights.hidden_bias, |hidden_bias| {
                        let step = |input_gates: InputGates| {
                            LstmStep {
                                input_gates,
                                hidden_state,
                                hidden_weight,
                                hidden_bias,
                                cell_state,
                                batch,
                                hidden,
                            }
                            .run()
                        };
                        match input {
                            StepInput::Gates(g) => g.with_elements::<f32, _>(|values| {
                                step(InputGates::Precomputed(values))
                            }),
                            StepInput::Input(x) => x.with_elements::<f32, _>(|rows| {
                                weights.input_weight.with_elements::<f32, _>(|weight| {
                                    with_optional(weights.input_bias, |bias| {
                                        step(InputGates::FromInput {
                                            input: rows,
                                            weight,
                                            bias,
                                            features: x.sizes()[1],
                                        })
                                    })
                                })
                            }),
                        }
                    })
                })
        })
    });
    match result {
        Some((next_hidden, next_cell)) => Ok(Some((
            Tensor::from_vec(next_hidden, &[batch, hidden])?,
            Tensor::from_vec(next_cell, &[batch, hidden])?,
        ))),
        None => Ok(None),
    }
}

fn with_optional<R>(tensor: Option<&Tensor>, f: impl FnOnce(Option<&[f32]>) -> R) -> R {
    match tensor {
        Some(tensor) => tensor.with_elements::<f32, _>(|values| f(Some(values))),
        None => f(None),
    }
}

/// Where a step's input-side gates come from.
pub(super) enum InputGates<'a> {
    /// Already computed for this step (`[batch, 4 * hidden]`, biases included): the layer
    /// form projects the whole sequence at once.
    Precomputed(&'a [f32]),
    /// Computed here from the input rows (`[batch, features]`) and `w_ih` (`[4 * hidden,
    /// features]`): the single-step cell.
    FromInput {
        input: &'a [f32],
        weight: &'a [f32],
        bias: Option<&'a [f32]>,
        features: usize,
    },
}

/// One step's operands, all contiguous float32 in PyTorch's layouts.
pub(super) struct LstmStep<'a> {
    pub input_gates: InputGates<'a>,
    /// `[batch, hidden]`.
    pub hidden_state: &'a [f32],
    /// `[4 * hidden, hidden]`.
    pub hidden_weight: &'a [f32],
    /// `[4 * hidden]`.
    pub hidden_bias: Option<&'a [f32]>,
    /// `[batch, hidden]`.
    pub cell_state: &'a [f32],
    pub batch: usize,
    pub hidden: usize,
}

/// Multiply-adds per batch row below which the step stays on the calling thread: handing a
/// range of hidden units to the pool costs a few microseconds.
const THREADED_STEP_WORK: usize = 1 << 17;

impl LstmStep<'_> {
    /// Whether every operand has the length its role and the sizes imply (the caller checked
    /// the tensors' shapes; this guards the slicing below against a mismatch).
    fn lengths_agree(&self) -> bool {
        let (batch, hidden) = (self.batch, self.hidden);
        let gates = 4 * hidden;
        let input_side = match &self.input_gates {
            InputGates::Precomputed(values) => values.len() == batch * gates,
            InputGates::FromInput {
                input,
                weight,
                bias,
                features,
            } => {
                input.len() == batch * features
                    && weight.len() == gates * features
                    && bias.is_none_or(|bias| bias.len() == gates)
            }
        };
        input_side
            && self.hidden_state.len() == batch * hidden
            && self.hidden_weight.len() == gates * hidden
            && self.hidden_bias.is_none_or(|bias| bias.len() == gates)
            && self.cell_state.len() == batch * hidden
    }

    /// The new hidden and cell states (`[batch, hidden]` each); `None` when the operand
    /// lengths do not agree with the sizes.
    pub(super) fn run(&self) -> Option<(Vec<f32>, Vec<f32>)> {
        if !self.lengths_agree() {
            return None;
        }
        let (batch, hidden) = (self.batch, self.hidden);
        let mut next_hidden = vec![0.0f32; batch * hidden];
        let mut next_cell = vec![0.0f32; batch * hidden];
        let features = match &self.input_gates {
            InputGates::Precomputed(_) => 0,
            InputGates::FromInput { features, .. } => *features,
        };
        let work_per_row = 4 * hidden * (hidden + features);
        let threads = num_threads();
        for row in 0..batch {
            let rows = row * hidden..(row + 1) * hidden;
            let hidden_out = &mut next_hidden[rows.clone()];
            let cell_out = &mut next_cell[rows];
            if threads > 1 && work_per_row >= THREADED_STEP_WORK && hidden >= 2 * threads {
                let units = hidden.div_ceil(threads);
                use rayon::prelude::*;
                hidden_out
                    .par_chunks_mut(units)
                    .zip(cell_out.par_chunks_mut(units))
                    .enumerate()
                    .for_each(|(part, (hidden_part, cell_part))| {
                        self.units(row, part * units, hidden_part, cell_part)
                    });
            } else {
                self.units(row, 0, hidden_out, cell_out);
            }
        }
        Some((next_hidden, next_cell))
    }

    /// Hidden units `first..first + hidden_out.len()` of batch row `row`.
    fn units(&self, row: usize, first: usize, hidden_out: &mut [f32], cell_out: &mut [f32]) {
        let hidden = self.hidden;
        let gates = 4 * hidden;
        let count = hidden_out.len();
        let state = &self.hidden_state[row * hidden..(row + 1) * hidden];
        // The pre-activations of this range's units, one block of `count` per gate in
        // PyTorch's chunk order (input, forget, cell, output), so that each activation runs
        // over a slice (the float32 kernels of `Tensor::sigmoid` / `tanh`, same bits).
        let mut activations = vec![0.0f32; 4 * count];
        for (block, values) in activations.chunks_exact_mut(count).enumerate() {
            for (offset, value) in values.iter_mut().enumerate() {
                let gate_row = block * hidden + first + offset;
                let from_hidden = plus_bias(
                    dot(state, &self.hidden_weight[gate_row * hidden..][..hidden]),
                    self.hidden_bias,
                    gate_row,
                );
                let from_input = match &self.input_gates {
                    InputGates::Precomputed(values) => values[row * gates + gate_row],
                    InputGates::FromInput {
                        input,
                        weight,
                        bias,
                        features,
                    } => plus_bias(
                        dot(
                            &input[row * features..][..*features],
                            &weight[gate_row * features..][..*features],
                        ),
                        *bias,
                        gate_row,
                    ),
                };
                *value = from_hidden.add(from_input);
            }
        }
        let (sigmoid_gates, rest) = activations.split_at_mut(2 * count);
        let (cell_gates, output_gates) = rest.split_at_mut(count);
        vectorized_math::apply(VectorFunction::Sigmoid, sigmoid_gates);
        vectorized_math::apply(VectorFunction::Tanh, cell_gates);
        vectorized_math::apply(VectorFunction::Sigmoid, output_gates);
        let (input_gates, forget_gates) = sigmoid_gates.split_at(count);
        let cell_state = &self.cell_state[row * hidden + first..][..count];
        for offset in 0..count {
            cell_out[offset] = forget_gates[offset]
                .mul(cell_state[offset])
                .add(input_gates[offset].mul(cell_gates[offset]));
        }
        hidden_out.copy_from_slice(cell_out);
        vectorized_math::apply(VectorFunction::Tanh, hidden_out);
        for (hidden_value, output_gate) in hidden_out.iter_mut().zip(output_gates.iter()) {
            *hidden_value = output_gate.mul(*hidden_value);
        }
    }
}

fn plus_bias(sum: f32, bias: Option<&[f32]>, at: usize) -> f32 {
    match bias {
        Some(bias) => sum + bias[at],
        None => sum,
    }
}

/// A dot product in eight independent lanes (so that it vectorizes), the lanes added
/// pairwise at the end, then the tail.
fn dot(left: &[f32], right: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let mut left_chunks = left.chunks_exact(8);
    let mut right_chunks = right.chunks_exact(8);
    for (x, y) in (&mut left_chunks).zip(&mut right_chunks) {
        for lane in 0..8 {
            lanes[lane] += x[lane] * y[lane];
        }
    }
    let mut total = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5]))
        + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
    for (x, y) in left_chunks.remainder().iter().zip(right_chunks.remainder()) {
        total += x * y;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(len: usize, seed: u32) -> Vec<f32> {
        (0..len)
            .map(|i| (((i as u32).wrapping_mul(2654435761) ^ seed) % 2001) as f32 / 1000.0 - 1.0)
            .collect()
    }

    /// The step in plain f64 arithmetic, operator by operator.
    fn reference(
        (input, w_ih, b_ih): (&[f32], &[f32], &[f32]),
        (h, w_hh, b_hh): (&[f32], &[f32], &[f32]),
        c: &[f32],
        (batch, features, hidden): (usize, usize, usize),
    ) -> (Vec<f64>, Vec<f64>) {
        let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
        let mut hy = vec![0.0; batch * hidden];
        let mut cy = vec![0.0; batch * hidden];
        for b in 0..batch {
            let gate = |g: usize| {
                let mut sum = f64::from(b_ih[g]) + f64::from(b_hh[g]);
                for f in 0..features {
                    sum += f64::from(input[b * features + f]) * f64::from(w_ih[g * features + f]);
                }
                for k in 0..hidden {
                    sum += f64::from(h[b * hidden + k]) * f64::from(w_hh[g * hidden + k]);
                }
                sum
            };
            for j in 0..hidden {
                let (i, f, g, o) = (
                    sigmoid(gate(j)),
                    sigmoid(gate(hidden + j)),
                    gate(2 * hidden + j).tanh(),
                    sigmoid(gate(3 * hidden + j)),
                );
                let cell = f * f64::from(c[b * hidden + j]) + i * g;
                cy[b * hidden + j] = cell;
                hy[b * hidden + j] = o * cell.tanh();
            }
        }
        (hy, cy)
    }

    #[test]
    fn the_fused_step_matches_the_step_operator_by_operator() {
        // Odd sizes (tails of the eight-lane dot products), several batch rows, and one size
        // large enough for the threaded split.
        for &(batch, features, hidden) in &[(1, 32, 32), (3, 5, 7), (2, 13, 9), (1, 256, 256)] {
            let gates = 4 * hidden;
            let input = values(batch * features, 1);
            let w_ih = values(gates * features, 2);
            let b_ih = values(gates, 3);
            let h = values(batch * hidden, 4);
            let w_hh = values(gates * hidden, 5);
            let b_hh = values(gates, 6);
            let c = values(batch * hidden, 7);
            let (want_h, want_c) = reference(
                (&input, &w_ih, &b_ih),
                (&h, &w_hh, &b_hh),
                &c,
                (batch, features, hidden),
            );
            // Both ways of supplying the input side.
            let mut precomputed = vec![0.0f32; batch * gates];
            for b in 0..batch {
                for g in 0..gates {
                    precomputed[b * gates + g] = dot(
                        &input[b * features..][..features],
                        &w_ih[g * features..][..features],
                    ) + b_ih[g];
                }
            }
            for input_gates in [
                InputGates::FromInput {
                    input: &input,
                    weight: &w_ih,
                    bias: Some(&b_ih),
                    features,
                },
                InputGates::Precomputed(&precomputed),
            ] {
                let step = LstmStep {
                    input_gates,
                    hidden_state: &h,
                    hidden_weight: &w_hh,
                    hidden_bias: Some(&b_hh),
                    cell_state: &c,
                    batch,
                    hidden,
                };
                let (got_h, got_c) = step.run().expect("lengths agree");
                for (got, want) in got_h.iter().zip(&want_h).chain(got_c.iter().zip(&want_c)) {
                    let error = (f64::from(*got) - want).abs();
                    assert!(
                        error <= 1e-5 * (1.0 + want.abs()),
                        "{batch}x{features}x{hidden}: {got} vs {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn operands_of_the_wrong_length_are_refused() {
        let (batch, hidden) = (2, 3);
        let h = values(batch * hidden, 1);
        let w_hh = values(4 * hidden * hidden, 2);
        let c = values(batch * hidden, 3);
        let short_gates = values(batch * 4 * hidden - 1, 4);
        let step = LstmStep {
            input_gates: InputGates::Precomputed(&short_gates),
            hidden_state: &h,
            hidden_weight: &w_hh,
            hidden_bias: None,
            cell_state: &c,
            batch,
            hidden,
        };
        assert!(step.run().is_none());
        let short_bias = values(4 * hidden - 1, 5);
        let gates = values(batch * 4 * hidden, 6);
        let step = LstmStep {
            input_gates: InputGates::Precomputed(&gates),
            hidden_state: &h,
            hidden_weight: &w_hh,
            hidden_bias: Some(&short_bias),
            cell_state: &c,
            batch,
            hidden,
        };
        assert!(step.run().is_none());
    }
}
