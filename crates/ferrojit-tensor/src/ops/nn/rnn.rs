//! Recurrent layers (`aten::lstm`, `aten::gru`, `aten::rnn_tanh`, `aten::rnn_relu`, padded or
//! packed input, multi-layer, bidirectional, LSTM projections) and their single-step cells,
//! computed the way PyTorch's CPU `_rnn_impl` does: the input projection of a whole layer is
//! one `linear`, each step adds `linear(h, w_hh, b_hh)` and applies the gates.

use super::conv::with_elements;
use super::invalid;
use super::lstm_step::{lstm_step_in_one_pass, StepInput, StepWeights};
use crate::dtype::Scalar;
use crate::element::FloatArith;
use crate::error::{format_shape, Result};
use crate::ops::join::cat;
use crate::ops::vectorized_math::{self, VectorFunction};
use crate::tensor::Tensor;

const ONE: Scalar = Scalar::Int(1);

/// Which recurrence a layer runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RnnMode {
    Lstm,
    Gru,
    RnnTanh,
    RnnRelu,
}

impl RnnMode {
    /// Gate blocks stacked in `w_ih`/`w_hh` (4 for LSTM, 3 for GRU, 1 for plain RNNs).
    fn gates(self) -> usize {
        match self {
            RnnMode::Lstm => 4,
            RnnMode::Gru => 3,
            RnnMode::RnnTanh | RnnMode::RnnRelu => 1,
        }
    }

    fn name(self) -> &'static str {
        match self {
            RnnMode::Lstm => "lstm",
            RnnMode::Gru => "gru",
            RnnMode::RnnTanh => "rnn_tanh",
            RnnMode::RnnRelu => "rnn_relu",
        }
    }
}

/// The scalar arguments shared by every recurrent operator.
#[derive(Debug, Clone, Copy)]
pub struct RnnOptions {
    pub mode: RnnMode,
    pub has_biases: bool,
    pub num_layers: i64,
    pub dropout: f64,
    pub train: bool,
    pub bidirectional: bool,
    pub batch_first: bool,
}

/// One layer-direction's weights.
struct CellParams<'a> {
    w_ih: &'a Tensor,
    w_hh: &'a Tensor,
    b_ih: Option<&'a Tensor>,
    b_hh: Option<&'a Tensor>,
    w_hr: Option<&'a Tensor>,
}

impl CellParams<'_> {
    fn weights(&self) -> StepWeights<'_> {
        StepWeights {
            input_weight: self.w_ih,
            input_bias: self.b_ih,
            hidden_weight: self.w_hh,
            hidden_bias: self.b_hh,
        }
    }
}

/// The recurrent state of the rows still running: `h`, plus `c` for LSTMs.
#[derive(Clone)]
struct State {
    h: Tensor,
    c: Option<Tensor>,
}

impl State {
    fn narrow_rows(&self, start: usize, len: usize) -> Result<State> {
        Ok(State {
            h: self.h.narrow(0, start as i64, len as i64)?,
            c: match &self.c {
                Some(c) => Some(c.narrow(0, start as i64, len as i64)?),
                None => None,
            },
        })
    }

    fn append_rows(&self, more: &State) -> Result<State> {
        Ok(State {
            h: cat(&[self.h.clone(), more.h.clone()], 0)?,
            c: match (&self.c, &more.c) {
                (Some(a), Some(b)) => Some(cat(&[a.clone(), b.clone()], 0)?),
                _ => None,
            },
        })
    }
}

/// One recurrence step. `igates` is the precomputed `linear(x_t, w_ih, b_ih)`.
fn step(mode: RnnMode, p: &CellParams, igates: &Tensor, state: &State) -> Result<State> {
    if let (RnnMode::Lstm, Some(c), None) = (mode, &state.c, p.w_hr) {
        if let Some((h, c)) =
            lstm_step_in_one_pass(StepInput::Gates(igates), &p.weights(), &state.h, c)?
        {
            return Ok(State { h, c: Some(c) });
        }
    }
    let hgates = state.h.linear(p.w_hh, p.b_hh)?;
    match mode {
        RnnMode::Lstm => {
            let c = state
                .c
                .as_ref()
                .ok_or_else(|| invalid("lstm: missing cell state"))?;
            if let Some((hy, cy)) = lstm_gates_in_one_pass(igates, &hgates, c)? {
                let hy = match p.w_hr {
                    Some(w_hr) => hy.linear(w_hr, None)?,
                    None => hy,
                };
                return Ok(State { h: hy, c: Some(cy) });
            }
            let gates = hgates.add(igates, &ONE)?;
            let chunks = gates.chunk(4, 1)?;
            let [i, f, g, o] = <[Tensor; 4]>::try_from(chunks)
                .map_err(|_| invalid("lstm: gate chunking failed"))?;
            let (i, f, g, o) = (i.sigmoid()?, f.sigmoid()?, g.tanh()?, o.sigmoid()?);
            let cy = f.mul(c)?.add(&i.mul(&g)?, &ONE)?;
            let mut hy = o.mul(&cy.tanh()?)?;
            if let Some(w_hr) = p.w_hr {
                hy = hy.linear(w_hr, None)?;
            }
            Ok(State { h: hy, c: Some(cy) })
        }
        RnnMode::Gru => {
            let ig = igates.chunk(3, 1)?;
            let hg = hgates.chunk(3, 1)?;
            if ig.len() != 3 || hg.len() != 3 {
                return Err(invalid("gru: gate chunking failed"));
            }
            let reset = hg[0].add(&ig[0], &ONE)?.sigmoid()?;
            let update = hg[1].add(&ig[1], &ONE)?.sigmoid()?;
            let new = ig[2].add(&hg[2].mul(&reset)?, &ONE)?.tanh()?;
            let hy = state.h.sub(&new, &ONE)?.mul(&update)?.add(&new, &ONE)?;
            Ok(State { h: hy, c: None })
        }
        RnnMode::RnnTanh | RnnMode::RnnRelu => {
            let pre = hgates.add(igates, &ONE)?;
            let hy = if mode == RnnMode::RnnTanh {
                pre.tanh()?
            } else {
                pre.relu()?
            };
            Ok(State { h: hy, c: None })
        }
    }
}

/// The LSTM gate arithmetic of one step (`gates = hgates + igates`, chunked into `i, f, g, o`;
/// `cy = sigmoid(f) * c + sigmoid(i) * tanh(g)`; `hy = sigmoid(o) * tanh(cy)`) as one pass over
/// the gates for f32 and f64, writing only `hy` and `cy`. The operator-by-operator form
/// allocates and walks a tensor for each of its eleven steps, which dominates a step on small
/// batches (a hidden size of 32 is 128 gate values). Each element goes through the same
/// scalar operations in the same order as that form, so the results are bitwise equal.
/// `None` (nothing done) for other dtypes or shapes, which take the general form.
fn lstm_gates_in_one_pass(
    igates: &Tensor,
    hgates: &Tensor,
    c: &Tensor,
) -> Result<Option<(Tensor, Tensor)>> {
    let dtype = c.dtype();
    if igates.dtype() != dtype || hgates.dtype() != dtype || c.dim() != 2 {
        return Ok(None);
    }
    let (batch, hidden) = (c.sizes()[0], c.sizes()[1]);
    let gate_sizes = [batch, 4 * hidden];
    if igates.sizes() != gate_sizes || hgates.sizes() != gate_sizes {
        return Ok(None);
    }
    match dtype {
        // Float32 gates through the slice kernels of `Tensor::sigmoid` / `tanh`, so that the
        // one-pass form keeps the operator form's bits.
        crate::dtype::DType::Float32 => lstm_gates_typed::<f32>(
            igates,
            hgates,
            c,
            batch,
            hidden,
            |x| vectorized_math::apply_one(VectorFunction::Sigmoid, x),
            |x| vectorized_math::apply_one(VectorFunction::Tanh, x),
        ),
        crate::dtype::DType::Float64 => lstm_gates_typed::<f64>(
            igates,
            hgates,
            c,
            batch,
            hidden,
            <f64 as FloatArith>::sigmoid,
            <f64 as FloatArith>::tanh,
        ),
        _ => Ok(None),
    }
}

fn lstm_gates_typed<T: FloatArith>(
    igates: &Tensor,
    hgates: &Tensor,
    c: &Tensor,
    batch: usize,
    hidden: usize,
    sigmoid: impl Fn(T) -> T,
    tanh: impl Fn(T) -> T,
) -> Result<Option<(Tensor, Tensor)>> {
    let mut hy = vec![T::zero(); batch * hidden];
    let mut cy = vec![T::zero(); batch * hidden];
    with_elements::<T, _>(igates, |input_gates| {
        with_elements::<T, _>(hgates, |hidden_gates| {
            with_elements::<T, _>(c, |cell| {
                for row in 0..batch {
                    let gates = row * 4 * hidden;
                    for j in 0..hidden {
                        // PyTorch's chunk order: input, forget, cell, output gates.
                        let gate = |block: usize| {
                            let at = gates + block * hidden + j;
                            hidden_gates[at].add(input_gates[at])
                        };
                        let input_gate = sigmoid(gate(0));
                        let forget_gate = sigmoid(gate(1));
                        let cell_gate = tanh(gate(2));
                        let output_gate = sigmoid(gate(3));
                        let at = row * hidden + j;
                        let next_cell = forget_gate.mul(cell[at]).add(input_gate.mul(cell_gate));
                        cy[at] = next_cell;
                        hy[at] = output_gate.mul(tanh(next_cell));
                    }
                }
            })
        })
    });
    Ok(Some((
        Tensor::from_vec(hy, &[batch, hidden])?,
        Tensor::from_vec(cy, &[batch, hidden])?,
    )))
}

/// Runs one direction of one layer over packed rows (`data` is `[sum(batch_sizes), F]`).
/// Returns the output rows (same layout) and the final state of every sequence.
fn run_direction(
    mode: RnnMode,
    p: &CellParams,
    data: &Tensor,
    batch_sizes: &[usize],
    initial: &State,
    reverse: bool,
) -> Result<(Tensor, State)> {
    let igates = data.linear(p.w_ih, p.b_ih)?;
    let mut offsets = Vec::with_capacity(batch_sizes.len());
    let mut total = 0usize;
    for &bs in batch_sizes {
        offsets.push(total);
        total += bs;
    }
    let mut outputs: Vec<Option<Tensor>> = vec![None; batch_sizes.len()];
    let final_state;
    if !reverse {
        // Sequences end (rows drop off the bottom) as the batch size shrinks.
        let mut state = initial.clone();
        let mut rows = initial.h.sizes()[0];
        let mut finished: Vec<(usize, State)> = Vec::new();
        for (t, &bs) in batch_sizes.iter().enumerate() {
            if bs < rows {
                finished.push((bs, state.narrow_rows(bs, rows - bs)?));
                state = state.narrow_rows(0, bs)?;
                rows = bs;
            }
            let x = igates.narrow(0, offsets[t] as i64, bs as i64)?;
            state = step(mode, p, &x, &state)?;
            outputs[t] = Some(state.h.clone());
        }
        finished.push((0, state));
        finished.sort_by_key(|(start, _)| *start);
        let mut merged = finished[0].1.clone();
        for (_, part) in &finished[1..] {
            merged = merged.append_rows(part)?;
        }
        final_state = merged;
    } else {
        // Walking backwards, sequences join (rows are added) as the batch size grows.
        let first = batch_sizes.last().copied().unwrap_or(0);
        let mut state = initial.narrow_rows(0, first)?;
        let mut rows = first;
        for t in (0..batch_sizes.len()).rev() {
            let bs = batch_sizes[t];
            if bs > rows {
                state = state.append_rows(&initial.narrow_rows(rows, bs - rows)?)?;
                rows = bs;
            }
            let x = igates.narrow(0, offsets[t] as i64, bs as i64)?;
            state = step(mode, p, &x, &state)?;
            outputs[t] = Some(state.h.clone());
        }
        if rows < initial.h.sizes()[0] {
            // Sequences that never started (zero length) keep their initial state.
            let rest = initial.h.sizes()[0] - rows;
            state = state.append_rows(&initial.narrow_rows(rows, rest)?)?;
        }
        final_state = state;
    }
    let pieces: Vec<Tensor> = outputs.into_iter().flatten().collect();
    let out = if pieces.is_empty() {
        let hidden = initial.h.sizes().get(1).copied().unwrap_or(0);
        Tensor::zeros(&[0, hidden], data.dtype())?
    } else {
        cat(&pieces, 0)?
    };
    Ok((out, final_state))
}

fn check_same_dtype(what: &str, t: &Tensor, expected: &Tensor) -> Result<()> {
    if t.dtype() != expected.dtype() {
        return Err(invalid(format!(
            "{what}: expected {} but got {}",
            expected.dtype().scalar_type_name(),
            t.dtype().scalar_type_name()
        )));
    }
    Ok(())
}

/// Validated view of the flat parameter list: one `CellParams` per layer and direction.
fn split_params<'a>(
    params: &'a [Tensor],
    opts: &RnnOptions,
    input_size: usize,
) -> Result<(Vec<CellParams<'a>>, usize, Option<usize>)> {
    let dirs = if opts.bidirectional { 2 } else { 1 };
    let layers = usize::try_from(opts.num_layers)
        .ok()
        .filter(|&l| l > 0)
        .ok_or_else(|| invalid("num_layers must be positive"))?;
    let base = if opts.has_biases { 4 } else { 2 };
    let cells = layers * dirs;
    let with_proj = if params.len() == cells * base {
        false
    } else if opts.mode == RnnMode::Lstm && params.len() == cells * (base + 1) {
        true
    } else {
        return Err(invalid(format!(
            "{}: expected {} parameter tensors for {layers} layer(s), {dirs} direction(s) and has_biases={}, got {}",
            opts.mode.name(),
            cells * base,
            opts.has_biases,
            params.len()
        )));
    };
    let stride = base + usize::from(with_proj);
    let gates = opts.mode.gates();
    let w_hh0 = &params[1];
    if w_hh0.dim() != 2 || !w_hh0.sizes()[0].is_multiple_of(gates) {
        return Err(invalid(format!(
            "{}: w_hh must be 2-D with a multiple of {gates} rows, got {}",
            opts.mode.name(),
            format_shape(w_hh0.sizes())
        )));
    }
    let hidden = w_hh0.sizes()[0] / gates;
    let proj = if with_proj {
        Some(params[base].sizes().first().copied().unwrap_or(0))
    } else {
        None
    };
    let out_size = proj.unwrap_or(hidden);
    let mut cells_out = Vec::with_capacity(cells);
    for cell in 0..cells {
        let layer = cell / dirs;
        let group = &params[cell * stride..(cell + 1) * stride];
        let expected_in = if layer == 0 {
            input_size
        } else {
            out_size * dirs
        };
        let (w_ih, w_hh) = (&group[0], &group[1]);
        if w_ih.sizes() != [gates * hidden, expected_in] {
            return Err(invalid(format!(
                "{}: weight_ih of layer {layer} should have shape [{}, {expected_in}], got {}",
                opts.mode.name(),
                gates * hidden,
                format_shape(w_ih.sizes())
            )));
        }
        if w_hh.sizes() != [gates * hidden, out_size] {
            return Err(invalid(format!(
                "{}: weight_hh of layer {layer} should have shape [{}, {out_size}], got {}",
                opts.mode.name(),
                gates * hidden,
                format_shape(w_hh.sizes())
            )));
        }
        let (b_ih, b_hh) = if opts.has_biases {
            for b in &group[2..4] {
                if b.sizes() != [gates * hidden] {
                    return Err(invalid(format!(
                        "{}: bias of layer {layer} should have shape [{}], got {}",
                        opts.mode.name(),
                        gates * hidden,
                        format_shape(b.sizes())
                    )));
                }
            }
            (Some(&group[2]), Some(&group[3]))
        } else {
            (None, None)
        };
        let w_hr = if with_proj {
            let w = &group[base];
            if w.sizes() != [out_size, hidden] {
                return Err(invalid(format!(
                    "lstm: weight_hr of layer {layer} should have shape [{out_size}, {hidden}], got {}",
                    format_shape(w.sizes())
                )));
            }
            Some(w)
        } else {
            None
        };
        cells_out.push(CellParams {
            w_ih,
            w_hh,
            b_ih,
            b_hh,
            w_hr,
        });
    }
    Ok((cells_out, hidden, proj))
}

/// The general recurrent layer over packed rows: `data` `[sum(batch_sizes), F]`, states
/// `hx` (`[h0]` or, for LSTMs, `[h0, c0]`, each `[layers * dirs, B, *]`). Returns the output
/// rows `[sum(batch_sizes), dirs * H_out]` and the final states in `hx`'s layout.
fn rnn_packed(
    data: &Tensor,
    batch_sizes: &[usize],
    hx: &[Tensor],
    params: &[Tensor],
    opts: &RnnOptions,
) -> Result<(Tensor, Vec<Tensor>)> {
    let name = opts.mode.name();
    if !data.dtype().is_floating_point() {
        return Err(invalid(format!(
            "{name}: expected a floating-point input, got {}",
            data.dtype().scalar_type_name()
        )));
    }
    if !(0.0..=1.0).contains(&opts.dropout) {
        return Err(invalid(format!(
            "dropout should be a number in range [0, 1] representing the probability of an element being zeroed, got {}",
            opts.dropout
        )));
    }
    let expected_states = if opts.mode == RnnMode::Lstm { 2 } else { 1 };
    if hx.len() != expected_states {
        return Err(invalid(format!(
            "{name}: expected {expected_states} hidden state tensor(s), got {}",
            hx.len()
        )));
    }
    if data.dim() != 2 {
        return Err(invalid(format!(
            "{name}: input must have 3 dimensions (2 when packed), got {}",
            format_shape(data.sizes())
        )));
    }
    let (cells, hidden, proj) = split_params(params, opts, data.sizes()[1])?;
    for p in params {
        check_same_dtype(name, p, data)?;
    }
    let dirs = if opts.bidirectional { 2 } else { 1 };
    let layers = cells.len() / dirs;
    let batch = match batch_sizes.first() {
        Some(&b) => b,
        None => hx[0].sizes().get(1).copied().unwrap_or(0),
    };
    let out_size = proj.unwrap_or(hidden);
    let h_shape = [layers * dirs, batch, out_size];
    let c_shape = [layers * dirs, batch, hidden];
    let expect = |t: &Tensor, shape: [usize; 3], what: &str| -> Result<()> {
        if t.sizes() != shape {
            return Err(invalid(format!(
                "Expected {what} size {}, got {}",
                format_shape(&shape),
                format_shape(t.sizes())
            )));
        }
        check_same_dtype(name, t, data)
    };
    expect(&hx[0], h_shape, "hidden")?;
    if opts.mode == RnnMode::Lstm {
        expect(&hx[1], c_shape, "cell")?;
    }
    let mut layer_input = data.clone();
    let mut finals_h = Vec::with_capacity(cells.len());
    let mut finals_c = Vec::with_capacity(cells.len());
    for layer in 0..layers {
        let mut outs = Vec::with_capacity(dirs);
        for dir in 0..dirs {
            let index = (layer * dirs + dir) as i64;
            let initial = State {
                h: hx[0].select(0, index)?,
                c: if opts.mode == RnnMode::Lstm {
                    Some(hx[1].select(0, index)?)
                } else {
                    None
                },
            };
            let (out, last) = run_direction(
                opts.mode,
                &cells[layer * dirs + dir],
                &layer_input,
                batch_sizes,
                &initial,
                dir == 1,
            )?;
            outs.push(out);
            finals_h.push(last.h);
            if let Some(c) = last.c {
                finals_c.push(c);
            }
        }
        layer_input = if outs.len() == 1 {
            outs.remove(0)
        } else {
            cat(&outs, 1)?
        };
        if layer + 1 < layers && opts.train && opts.dropout > 0.0 {
            layer_input = layer_input.dropout(opts.dropout, true)?;
        }
    }
    let mut states = vec![crate::ops::join::stack(&finals_h, 0)?];
    if opts.mode == RnnMode::Lstm {
        states.push(crate::ops::join::stack(&finals_c, 0)?);
    }
    Ok((layer_input, states))
}

/// `aten::{lstm,gru,rnn_tanh,rnn_relu}.input`: padded input `[T, B, F]` (`[B, T, F]` when
/// `batch_first`). Returns the output `[T, B, dirs * H_out]` (batch first when asked) and
/// the final states.
pub fn rnn(
    input: &Tensor,
    hx: &[Tensor],
    params: &[Tensor],
    opts: &RnnOptions,
) -> Result<(Tensor, Vec<Tensor>)> {
    if input.dim() != 3 {
        return Err(invalid(format!(
            "{}: input must have 3 dimensions, got {}",
            opts.mode.name(),
            input.dim()
        )));
    }
    let seq_major = if opts.batch_first {
        input.transpose(0, 1)?
    } else {
        input.clone()
    };
    let (steps, batch, features) = (
        seq_major.sizes()[0],
        seq_major.sizes()[1],
        seq_major.sizes()[2],
    );
    let data = seq_major
        .contiguous()
        .reshape_usize(&[steps * batch, features])?;
    let batch_sizes = vec![batch; if batch == 0 { 0 } else { steps }];
    let (out, states) = if batch == 0 || steps == 0 {
        // Nothing to run: the states pass through, the output is empty.
        let dirs = if opts.bidirectional { 2 } else { 1 };
        let width = hx
            .first()
            .and_then(|h| h.sizes().get(2))
            .copied()
            .unwrap_or(0);
        split_params(params, opts, features)?;
        (
            Tensor::zeros(&[0, dirs * width], input.dtype())?,
            hx.iter().map(Tensor::clone_tensor).collect(),
        )
    } else {
        rnn_packed(&data, &batch_sizes, hx, params, opts)?
    };
    let width = out.sizes()[1];
    let out = out.reshape_usize(&[steps, batch, width])?;
    let out = if opts.batch_first {
        out.transpose(0, 1)?
    } else {
        out
    };
    Ok((out, states))
}

/// `aten::{lstm,gru,rnn_tanh,rnn_relu}.data`: a packed sequence (`data` rows grouped by
/// time step, `batch_sizes` a 1-D int64 tensor, non-increasing).
pub fn rnn_packed_sequence(
    data: &Tensor,
    batch_sizes: &Tensor,
    hx: &[Tensor],
    params: &[Tensor],
    opts: &RnnOptions,
) -> Result<(Tensor, Vec<Tensor>)> {
    if batch_sizes.dim() != 1 || batch_sizes.dtype().is_floating_point() {
        return Err(invalid("batch_sizes must be a 1-D integer tensor"));
    }
    let sizes = batch_sizes.to_i64_vec();
    let mut checked = Vec::with_capacity(sizes.len());
    let mut previous = usize::MAX;
    for &s in &sizes {
        let s = usize::try_from(s)
            .ok()
            .filter(|&s| s > 0 && s <= previous)
            .ok_or_else(|| invalid("batch_sizes must be positive and non-increasing"))?;
        checked.push(s);
        previous = s;
    }
    let total: usize = checked.iter().sum();
    if data.dim() != 2 || data.sizes()[0] != total {
        return Err(invalid(format!(
            "packed data of size {} does not match batch_sizes (total {total})",
            format_shape(data.sizes())
        )));
    }
    rnn_packed(data, &checked, hx, params, opts)
}

/// The single-step cells (`aten::lstm_cell`, `gru_cell`, `rnn_tanh_cell`, `rnn_relu_cell`):
/// input `[B, F]`, states `[B, H]`. Returns the new states.
pub fn rnn_cell(
    mode: RnnMode,
    input: &Tensor,
    hx: &[Tensor],
    w_ih: &Tensor,
    w_hh: &Tensor,
    b_ih: Option<&Tensor>,
    b_hh: Option<&Tensor>,
) -> Result<Vec<Tensor>> {
    let name = mode.name();
    // The aten cells take batches only (nn.LSTMCell & co. add the batch dim themselves).
    if input.dim() != 2 {
        return Err(invalid(format!(
            "Expected 2D input (batch x feature), but got {}D input",
            input.dim()
        )));
    }
    let expected_states = if mode == RnnMode::Lstm { 2 } else { 1 };
    if hx.len() != expected_states {
        return Err(invalid(format!(
            "{name}_cell: expected {expected_states} hidden state tensor(s), got {}",
            hx.len()
        )));
    }
    let x = input.clone();
    let gates = mode.gates();
    if w_ih.dim() != 2 || w_hh.dim() != 2 || !w_ih.sizes()[0].is_multiple_of(gates) {
        return Err(invalid(format!("{name}_cell: weights must be 2-D")));
    }
    if w_ih.sizes()[1] != x.sizes()[1] {
        return Err(invalid(format!(
            "input has inconsistent input_size: got {} expected {}",
            x.sizes()[1],
            w_ih.sizes()[1]
        )));
    }
    let hidden = w_ih.sizes()[0] / gates;
    let states: Vec<Tensor> = hx.to_vec();
    for s in &states {
        if s.sizes() != [x.sizes()[0], hidden] {
            return Err(invalid(format!(
                "{name}_cell: hidden state has shape {}, expected {}",
                format_shape(s.sizes()),
                format_shape(&[x.sizes()[0], hidden])
            )));
        }
    }
    let p = CellParams {
        w_ih,
        w_hh,
        b_ih,
        b_hh,
        w_hr: None,
    };
    if let (RnnMode::Lstm, [h, c]) = (mode, states.as_slice()) {
        if let Some((h, c)) = lstm_step_in_one_pass(StepInput::Input(&x), &p.weights(), h, c)? {
            return Ok(vec![h, c]);
        }
    }
    let igates = x.linear(w_ih, b_ih)?;
    let state = State {
        h: states[0].clone(),
        c: states.get(1).cloned(),
    };
    let next = step(mode, &p, &igates, &state)?;
    let mut out = vec![next.h];
    if let Some(c) = next.c {
        out.push(c);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    /// Deterministic values over a wide range, so that the gates saturate in places.
    fn values(sizes: &[usize], seed: f64, dtype: DType) -> Tensor {
        let count: usize = sizes.iter().product();
        let data: Vec<f64> = (0..count)
            .map(|i| ((i as f64 + seed) * 0.731).sin() * (1.0 + (i % 7) as f64))
            .collect();
        Tensor::from_vec(data, sizes)
            .expect("test tensor")
            .to_dtype(dtype)
    }

    /// The operator-by-operator form that `lstm_gates_in_one_pass` replaces.
    fn gates_operator_by_operator(
        igates: &Tensor,
        hgates: &Tensor,
        c: &Tensor,
    ) -> (Tensor, Tensor) {
        let gates = hgates.add(igates, &ONE).unwrap();
        let chunks = gates.chunk(4, 1).unwrap();
        let (i, f, g, o) = (
            chunks[0].sigmoid().unwrap(),
            chunks[1].sigmoid().unwrap(),
            chunks[2].tanh().unwrap(),
            chunks[3].sigmoid().unwrap(),
        );
        let cy = f.mul(c).unwrap().add(&i.mul(&g).unwrap(), &ONE).unwrap();
        let hy = o.mul(&cy.tanh().unwrap()).unwrap();
        (hy, cy)
    }

    #[test]
    fn one_pass_lstm_gates_equal_the_operator_form_bitwise() {
        for dtype in [DType::Float32, DType::Float64] {
            for (batch, hidden) in [(1, 32), (3, 5), (2, 1)] {
                let igates = values(&[batch, 4 * hidden], 0.0, dtype);
                let hgates = values(&[batch, 4 * hidden], 11.0, dtype);
                let c = values(&[batch, hidden], 23.0, dtype);
                let (hy, cy) = lstm_gates_in_one_pass(&igates, &hgates, &c)
                    .unwrap()
                    .expect("f32 and f64 take the one-pass form");
                let (expected_hy, expected_cy) = gates_operator_by_operator(&igates, &hgates, &c);
                assert_eq!(hy.sizes(), [batch, hidden]);
                assert_eq!(hy.dtype(), dtype);
                assert_eq!(hy.to_f64_vec(), expected_hy.to_f64_vec(), "{dtype:?} hy");
                assert_eq!(cy.to_f64_vec(), expected_cy.to_f64_vec(), "{dtype:?} cy");
            }
        }
    }

    #[test]
    fn one_pass_lstm_gates_read_non_contiguous_gates() {
        // Rows of a packed sequence's input projection are narrowed views; a transposed
        // view checks that the gates are read in logical order.
        let igates = values(&[8, 2], 0.0, DType::Float32).t().unwrap();
        let hgates = values(&[2, 8], 5.0, DType::Float32);
        let c = values(&[2, 2], 9.0, DType::Float32);
        let (hy, cy) = lstm_gates_in_one_pass(&igates, &hgates, &c)
            .unwrap()
            .expect("f32 takes the one-pass form");
        let (expected_hy, expected_cy) = gates_operator_by_operator(&igates, &hgates, &c);
        assert_eq!(hy.to_f64_vec(), expected_hy.to_f64_vec());
        assert_eq!(cy.to_f64_vec(), expected_cy.to_f64_vec());
    }

    #[test]
    fn other_dtypes_and_mismatched_shapes_take_the_general_form() {
        let half = |sizes: &[usize], seed| values(sizes, seed, DType::Float16);
        assert!(lstm_gates_in_one_pass(
            &half(&[1, 8], 0.0),
            &half(&[1, 8], 1.0),
            &half(&[1, 2], 2.0)
        )
        .unwrap()
        .is_none());
        let f = |sizes: &[usize], seed| values(sizes, seed, DType::Float32);
        // Gates that are not four times the hidden size.
        assert!(
            lstm_gates_in_one_pass(&f(&[1, 6], 0.0), &f(&[1, 6], 1.0), &f(&[1, 2], 2.0))
                .unwrap()
                .is_none()
        );
        // Mixed dtypes.
        assert!(lstm_gates_in_one_pass(
            &f(&[1, 8], 0.0),
            &values(&[1, 8], 1.0, DType::Float64),
            &f(&[1, 2], 2.0)
        )
        .unwrap()
        .is_none());
    }
}
