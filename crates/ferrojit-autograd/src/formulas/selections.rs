//! Derivatives of the selecting and cumulative operators ferrojit registers beyond the
//! basic reductions: `mode`, `nanmedian`, `cummax`/`cummin`, `aminmax`, `quantile`,
//! `combinations`, `linalg_vander`, `index_reduce`, `_segment_reduce`, `index_copy`, `put`,
//! `frexp`, and the `hsplit`/`vsplit`/`dsplit` splits (whose gradient is the pieces'
//! gradients concatenated back).

use ferrojit_runtime::{IValue, Result};

use super::statistics::{value_selecting, whole_extremum};
use super::support::{recompute, refuse};
use super::{formula_for, wrap_dim, Formula, FormulaInput, Gradients};
use crate::call::{self, call1, int, mul, tensor_list};

fn mode(input: &FormulaInput) -> Result<Gradients> {
    value_selecting(input, "aten::mode", 1, input.argument(2)?.to_bool()?)
}

fn nanmedian_dim(input: &FormulaInput) -> Result<Gradients> {
    value_selecting(
        input,
        "aten::nanmedian.dim",
        1,
        input.argument(2)?.to_bool()?,
    )
}

fn nanmedian(input: &FormulaInput) -> Result<Gradients> {
    whole_extremum(input, "aten::nanmedian")
}

/// `cummax`/`cummin(self, dim) -> (values, indices)`: each output's gradient goes to the
/// element its index names (`cummaxmin_backward`).
fn cumulative_extremum(input: &FormulaInput, name: &str) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let mut out = input.none();
    if sizes.is_empty() {
        out[0] = Some(input.grad(0)?.clone());
        return Ok(out);
    }
    let dim = wrap_dim(input.int(1)?, sizes.len()) as i64;
    let indices = recompute(name, input)?
        .into_iter()
        .nth(1)
        .ok_or_else(|| refuse(format!("autograd: {name} returned no indices")))?;
    let zeros = call::zeros(&sizes, input.dtype(0)?)?;
    out[0] = Some(call1(
        "aten::scatter_add",
        vec![zeros, int(dim), indices, input.grad(0)?.clone()],
    )?);
    Ok(out)
}

fn cummax(input: &FormulaInput) -> Result<Gradients> {
    cumulative_extremum(input, "aten::cummax")
}

fn cummin(input: &FormulaInput) -> Result<Gradients> {
    cumulative_extremum(input, "aten::cummin")
}

/// `aminmax(self, dim, keepdim) -> (min, max)`: `amin`'s and `amax`'s gradients summed.
fn aminmax(input: &FormulaInput) -> Result<Gradients> {
    let dims = match input.argument(1)? {
        IValue::None => IValue::int_list(&[]),
        IValue::Int(dim) => IValue::int_list(&[*dim]),
        other => other.clone(),
    };
    let arguments = vec![input.argument(0)?.clone(), dims, input.argument(2)?.clone()];
    let mut total: Option<IValue> = None;
    for (name, output) in [("aten::amin", 0), ("aten::amax", 1)] {
        let formula =
            formula_for(name).ok_or_else(|| refuse(format!("autograd: no formula for {name}")))?;
        let grads = vec![input.grads.get(output).cloned().flatten()];
        let inner = FormulaInput {
            arguments: &arguments,
            grads: &grads,
            needed: &[input.needs(0), false, false],
            input_meta: &input.input_meta[..1],
        };
        if let Some(Some(gradient)) = (formula.apply)(&inner)?.into_iter().next() {
            total = Some(match total {
                Some(previous) => call::add(&previous, &gradient)?,
                None => gradient,
            });
        }
    }
    let mut out = input.none();
    out[0] = total;
    Ok(out)
}

/// `index_copy(self, dim, index, source)`: `self` loses the overwritten rows; `source` gets
/// the rows it was copied to.
fn index_copy(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let (dim, index) = (input.argument(1)?, input.argument(2)?);
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(call1(
            "aten::index_fill.int_Scalar",
            vec![grad.clone(), dim.clone(), index.clone(), call::float(0.0)],
        )?);
    }
    if input.needs(3) {
        out[3] = Some(call1(
            "aten::index_select",
            vec![grad.clone(), dim.clone(), index.clone()],
        )?);
    }
    Ok(out)
}

/// `put(self, index, source, accumulate)`: `source` gets `grad.take(index)`; `self` keeps
/// the gradient except where overwritten (when not accumulating).
fn put(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let index = input.argument(1)?;
    let accumulate = input.argument(3)?.to_bool()?;
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(if accumulate {
            grad.clone()
        } else {
            let zeros = call::zeros(&input.sizes(2)?, input.dtype(0)?)?;
            call1(
                "aten::put",
                vec![grad.clone(), index.clone(), zeros, IValue::Bool(false)],
            )?
        });
    }
    if input.needs(2) {
        out[2] = Some(call1("aten::take", vec![grad.clone(), index.clone()])?);
    }
    Ok(out)
}

/// `frexp(self) -> (mantissa, exponent)`: `mantissa = self / 2^exponent`.
fn frexp(input: &FormulaInput) -> Result<Gradients> {
    let exponent = recompute("aten::frexp.Tensor", input)?
        .into_iter()
        .nth(1)
        .ok_or_else(|| refuse("autograd: frexp returned no exponent"))?;
    let scale = call1("aten::pow.Scalar", vec![call::float(2.0), exponent])?;
    let mut out = input.none();
    out[0] = Some(call::div(input.grad(0)?, &scale)?);
    Ok(out)
}

/// The gradient of a split along `dim`: the pieces' gradients concatenated.
fn concatenated(input: &FormulaInput, dim: i64) -> Result<Gradients> {
    let pieces: Vec<IValue> = input
        .grads
        .iter()
        .map(|grad| {
            grad.clone()
                .ok_or_else(|| refuse("autograd: split piece without gradient"))
        })
        .collect::<Result<_>>()?;
    let mut out = input.none();
    out[0] = Some(call1("aten::cat", vec![tensor_list(pieces), int(dim)])?);
    Ok(out)
}

/// `hsplit` splits dim 1 (dim 0 of a 1-D tensor).
fn hsplit(input: &FormulaInput) -> Result<Gradients> {
    let dim = if input.sizes(0)?.len() == 1 { 0 } else { 1 };
    concatenated(input, dim)
}

fn vsplit(input: &FormulaInput) -> Result<Gradients> {
    concatenated(input, 0)
}

fn dsplit(input: &FormulaInput) -> Result<Gradients> {
    concatenated(input, 2)
}

/// `quantile`/`nanquantile.scalar(self, q, dim, keepdim, interpolation)`: the gradient goes
/// to the one or two order statistics the interpolation reads, with their weights, and back
/// through the sort's permutation.
fn quantile(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let q = input.number(1)?;
    let whole = input.argument(2)?.is_none();
    let keepdim = input.argument(3)?.to_bool()?;
    let interpolation = match input.argument(4)? {
        IValue::Str(text) => text.to_string(),
        _ => "linear".to_string(),
    };
    let x = if whole {
        call::reshape(input.argument(0)?, &[sizes.iter().product()])?
    } else {
        input.argument(0)?.clone()
    };
    let x_sizes = call::sizes(&x)?;
    let rank = x_sizes.len().max(1);
    let dim = if whole {
        0
    } else {
        wrap_dim(input.int(2)?, rank)
    };
    let x = if x_sizes.is_empty() {
        call::reshape(&x, &[1])?
    } else {
        x
    };
    let x_sizes = call::sizes(&x)?;
    let count = x_sizes[dim];
    if count == 0 {
        return Err(refuse("quantile() input tensor must be non-empty"));
    }
    let position = q * (count - 1) as f64;
    let (low, high) = (position.floor() as usize, position.ceil() as usize);
    let fraction = position - low as f64;
    let mut weights = vec![0.0f64; count];
    match interpolation.as_str() {
        "lower" => weights[low] += 1.0,
        "higher" => weights[high] += 1.0,
        "midpoint" => {
            weights[low] += 0.5;
            weights[high] += 0.5;
        }
        "nearest" => {
            let rounded = position.round_ties_even() as usize;
            weights[rounded.min(count - 1)] += 1.0;
        }
        _ => {
            weights[low] += 1.0 - fraction;
            weights[high] += fraction;
        }
    }
    let mut shape = vec![1usize; x_sizes.len()];
    shape[dim] = count;
    let weights = call::fresh(ferrojit_tensor::Tensor::from_vec(weights, &shape)?);
    let weights = call1(
        "aten::to.dtype",
        vec![weights, int(input.dtype(0)?.scalar_type_index())],
    )?;
    let mut grad = input.grad(0)?.clone();
    if whole {
        grad = call::reshape(&grad, &vec![1usize; x_sizes.len()])?;
    } else if !keepdim && !sizes.is_empty() {
        grad = call1("aten::unsqueeze", vec![grad, int(dim as i64)])?;
    }
    let spread = mul(&grad, &weights)?;
    let order = call::call(
        "aten::sort",
        vec![x.clone(), int(dim as i64), IValue::Bool(false)],
    )?
    .into_iter()
    .nth(1)
    .ok_or_else(|| refuse("autograd: sort returned no indices"))?;
    let zeros = call::zeros(&x_sizes, input.dtype(0)?)?;
    let placed = call1(
        "aten::scatter_add",
        vec![zeros, int(dim as i64), order, spread],
    )?;
    let mut out = input.none();
    out[0] = Some(call::reshape(&placed, &sizes)?);
    Ok(out)
}

/// The element positions of `combinations(self, r, with_replacement)`'s rows, in order.
fn combination_positions(count: usize, r: usize, with_replacement: bool) -> Vec<i64> {
    let mut positions = Vec::new();
    let mut current: Vec<usize> = Vec::with_capacity(r);
    fn extend(
        start: usize,
        count: usize,
        r: usize,
        with_replacement: bool,
        current: &mut Vec<usize>,
        positions: &mut Vec<i64>,
    ) {
        if current.len() == r {
            positions.extend(current.iter().map(|&p| p as i64));
            return;
        }
        for next in start..count {
            current.push(next);
            let following = if with_replacement { next } else { next + 1 };
            extend(following, count, r, with_replacement, current, positions);
            current.pop();
        }
    }
    if r > 0 {
        extend(0, count, r, with_replacement, &mut current, &mut positions);
    }
    positions
}

/// `combinations(self, r, with_replacement)`: each output element's gradient goes to the
/// input element it copies.
fn combinations(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let count: usize = sizes.iter().product();
    let r = usize::try_from(input.int(1)?).unwrap_or(0);
    let positions = combination_positions(count, r, input.argument(2)?.to_bool()?);
    let total = positions.len();
    let grad = call::reshape(input.grad(0)?, &[total])?;
    let index = super::support::index_tensor(positions, &[total])?;
    let zeros = call::zeros(&[count], input.dtype(0)?)?;
    let summed = call1("aten::index_add", vec![zeros, int(0), index, grad])?;
    let mut out = input.none();
    out[0] = Some(call::reshape(&summed, &sizes)?);
    Ok(out)
}

/// `linalg_vander(x, N)`: `out[..., i, j] = x_i^j`, so `dx_i = sum_j j x_i^(j-1) g_ij`.
fn linalg_vander(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let powers = super::support::recompute1("aten::linalg_vander", input)?;
    let columns = *call::sizes(&powers)?.last().unwrap_or(&0);
    let mut out = input.none();
    if columns < 2 {
        out[0] = Some(call::zeros(&sizes, input.dtype(0)?)?);
        return Ok(out);
    }
    let lower = call1(
        "aten::narrow",
        vec![powers, int(-1), int(0), int(columns as i64 - 1)],
    )?;
    let grad = call1(
        "aten::narrow",
        vec![
            input.grad(0)?.clone(),
            int(-1),
            int(1),
            int(columns as i64 - 1),
        ],
    )?;
    let exponents: Vec<f64> = (1..columns).map(|j| j as f64).collect();
    let exponents = call::fresh(ferrojit_tensor::Tensor::from_vec(
        exponents,
        &[columns - 1],
    )?);
    let exponents = call1(
        "aten::to.dtype",
        vec![exponents, int(input.dtype(0)?.scalar_type_index())],
    )?;
    let summed = call::sum_dims(&mul(&mul(&grad, &lower)?, &exponents)?, &[-1], false)?;
    out[0] = Some(call::reshape(&summed, &sizes)?);
    Ok(out)
}

/// A 0-d tensor as a 1-element vector (the index operators read dim 0 of it).
fn at_least_1d(value: &IValue) -> Result<IValue> {
    if call::sizes(value)?.is_empty() {
        call::reshape(value, &[1])
    } else {
        Ok(value.clone())
    }
}

/// `index_reduce(self, dim, index, source, reduce, include_self)` for "mean", "amax",
/// "amin" and "prod", after PyTorch's `index_reduce_backward`.
fn index_reduce(input: &FormulaInput) -> Result<Gradients> {
    let self_sizes = input.sizes(0)?;
    let source_sizes = input.sizes(3)?;
    let x = at_least_1d(input.argument(0)?)?;
    let source = at_least_1d(input.argument(3)?)?;
    let grad = at_least_1d(input.grad(0)?)?;
    let (dim, index) = (input.argument(1)?.clone(), input.argument(2)?.clone());
    let reduce = match input.argument(4)? {
        IValue::Str(text) => text.to_string(),
        _ => return Err(refuse("index_reduce: reduce must be a string")),
    };
    let include_self = input.argument(5)?.to_bool()?;
    let select = |value: &IValue| {
        call1(
            "aten::index_select",
            vec![value.clone(), dim.clone(), index.clone()],
        )
    };
    let add_at = |base: IValue, value: IValue| {
        call1(
            "aten::index_add",
            vec![base, dim.clone(), index.clone(), value],
        )
    };
    let reduced = |base: &IValue, values: &IValue| {
        call1(
            "aten::index_reduce",
            vec![
                base.clone(),
                dim.clone(),
                index.clone(),
                values.clone(),
                IValue::Str(reduce.as_str().into()),
                IValue::Bool(include_self),
            ],
        )
    };
    let as_float = |mask: &IValue| call::mask_like(mask, &grad);
    let (grad_self, grad_source) = match reduce.as_str() {
        "mean" => {
            // Each slot averages its own value (when included) and the sources added to it.
            let base = call::add_scalar(
                &call::scale(&grad, 0.0)?,
                if include_self { 1.0 } else { 0.0 },
            )?;
            let ones = call::add_scalar(&call::scale(&source, 0.0)?, 1.0)?;
            let counts = add_at(base, ones)?;
            let counts = super::support::fill_where(
                &super::support::against("aten::eq.Scalar", &counts, 0.0)?,
                1.0,
                &counts,
            )?;
            (
                call::div(&grad, &counts)?,
                call::div(&select(&grad)?, &select(&counts)?)?,
            )
        }
        "amax" | "amin" => {
            let result = reduced(&x, &source)?;
            let value = select(&result)?;
            let self_hits = as_float(&super::support::binary("aten::eq.Tensor", &x, &result)?)?;
            let source_hits =
                as_float(&super::support::binary("aten::eq.Tensor", &source, &value)?)?;
            let self_hits = if include_self {
                self_hits
            } else {
                call1(
                    "aten::index_fill.int_Scalar",
                    vec![self_hits, dim.clone(), index.clone(), call::float(0.0)],
                )?
            };
            let shares = add_at(self_hits.clone(), source_hits.clone())?;
            let distributed = call::div(&grad, &shares)?;
            (
                mul(&self_hits, &distributed)?,
                mul(&source_hits, &select(&distributed)?)?,
            )
        }
        "prod" => {
            let result = reduced(&x, &source)?;
            let self_zero = super::support::against("aten::eq.Scalar", &x, 0.0)?;
            let masked_self = super::support::fill_where(&self_zero, 1.0, &x)?;
            let masked_result = reduced(&masked_self, &source)?;
            let grad_self = call::div(&mul(&grad, &masked_result)?, &masked_self)?;
            let source_zero = super::support::against("aten::eq.Scalar", &source, 0.0)?;
            let zero_counts = add_at(call::scale(&x, 0.0)?, as_float(&source_zero)?)?;
            let single = super::support::binary(
                "aten::logical_and",
                &source_zero,
                &super::support::against("aten::eq.Scalar", &select(&zero_counts)?, 1.0)?,
            )?;
            let masked_source = super::support::fill_where(&single, 1.0, &source)?;
            let masked_source_result = reduced(&x, &masked_source)?;
            let divided = call::div(
                &select(&mul(&grad, &result)?)?,
                &super::support::fill_where(&source_zero, 1.0, &source)?,
            )?;
            let grad_source = call1(
                "aten::where.self",
                vec![
                    single,
                    select(&mul(&grad, &masked_source_result)?)?,
                    divided,
                ],
            )?;
            (grad_self, grad_source)
        }
        other => {
            return Err(refuse(format!(
                "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {other}."
            )))
        }
    };
    let grad_self = if include_self {
        grad_self
    } else {
        call1(
            "aten::index_fill.int_Scalar",
            vec![grad_self, dim.clone(), index.clone(), call::float(0.0)],
        )?
    };
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(call::reshape(&grad_self, &self_sizes)?);
    }
    if input.needs(3) {
        out[3] = Some(call::reshape(&grad_source, &source_sizes)?);
    }
    Ok(out)
}

/// `_segment_reduce(data, reduce, lengths, indices, offsets, axis, unsafe, initial)` along
/// axis 0 for "sum", "mean", "max" and "min": a sum's gradient copies to every element of the
/// segment, a mean's is divided by its length, an extremum's is shared evenly by the elements
/// equal to the result (none when `initial` won), as PyTorch's `_segment_reduce_backward`.
fn segment_reduce(input: &FormulaInput) -> Result<Gradients> {
    let reduce = match input.argument(1)? {
        IValue::Str(text) => text.to_string(),
        _ => return Err(refuse("_segment_reduce: reduce must be a string")),
    };
    if input.int(5)? != 0 {
        return Err(refuse(
            "the derivative for '_segment_reduce' is implemented for axis=0 only",
        ));
    }
    let sizes = input.sizes(0)?;
    let rows = sizes.first().copied().unwrap_or(0);
    let inner: usize = sizes.iter().skip(1).product();
    // Segment boundaries from the lengths or the offsets.
    let bounds: Vec<(usize, usize)> = if !input.argument(2)?.is_none() {
        let mut start = 0usize;
        call::tensor(input.argument(2)?)?
            .to_i64_vec()
            .into_iter()
            .map(|length| {
                let length = usize::try_from(length).unwrap_or(0);
                let segment = (start, (start + length).min(rows));
                start += length;
                segment
            })
            .collect()
    } else if !input.argument(4)?.is_none() {
        let offsets = call::tensor(input.argument(4)?)?.to_i64_vec();
        offsets
            .windows(2)
            .map(|pair| {
                let start = usize::try_from(pair[0]).unwrap_or(0).min(rows);
                (
                    start,
                    usize::try_from(pair[1]).unwrap_or(0).clamp(start, rows),
                )
            })
            .collect()
    } else {
        return Err(refuse(
            "the derivative for '_segment_reduce' needs lengths or offsets",
        ));
    };
    let grad = call::tensor(input.grad(0)?)?.to_f64_vec();
    let data = call::tensor(input.argument(0)?)?.to_f64_vec();
    let output = if reduce == "max" || reduce == "min" {
        let result = super::support::recompute1("aten::_segment_reduce", input)?;
        call::tensor(&result)?.to_f64_vec()
    } else {
        Vec::new()
    };
    let mut gradient = vec![0.0f64; data.len()];
    for (segment, &(start, end)) in bounds.iter().enumerate() {
        for column in 0..inner {
            let g = grad[segment * inner + column];
            match reduce.as_str() {
                "sum" | "mean" => {
                    let share = if reduce == "mean" {
                        g / (end - start).max(1) as f64
                    } else {
                        g
                    };
                    for row in start..end {
                        gradient[row * inner + column] = share;
                    }
                }
                "max" | "min" => {
                    let target = output[segment * inner + column];
                    let hits: Vec<usize> = (start..end)
                        .filter(|&row| {
                            let value = data[row * inner + column];
                            value == target || value.is_nan()
                        })
                        .collect();
                    for &row in &hits {
                        gradient[row * inner + column] = g / hits.len() as f64;
                    }
                }
                other => {
                    return Err(refuse(format!(
                        "the derivative for '_segment_reduce' with reduce='{other}' is not implemented."
                    )))
                }
            }
        }
    }
    let mut out = input.none();
    let tensor = ferrojit_tensor::Tensor::from_vec(gradient, &sizes)?;
    out[0] = Some(call1(
        "aten::to.dtype",
        vec![
            call::fresh(tensor),
            int(input.dtype(0)?.scalar_type_index()),
        ],
    )?);
    Ok(out)
}

formula_table![
    (
        "aten::_segment_reduce",
        "SegmentReduceBackward0",
        segment_reduce,
        &[0, 2, 4]
    ),
    ("aten::mode", "ModeBackward0", mode, &[0]),
    (
        "aten::index_reduce",
        "IndexReduceBackward0",
        index_reduce,
        &[0, 2, 3]
    ),
    ("aten::combinations", "IndexBackward0", combinations, &[]),
    (
        "aten::linalg_vander",
        "LinalgVanderBackward0",
        linalg_vander,
        &[0]
    ),
    ("aten::quantile.scalar", "QuantileBackward0", quantile, &[0]),
    (
        "aten::nanquantile.scalar",
        "NanquantileBackward0",
        quantile,
        &[0]
    ),
    ("aten::nanmedian", "NanmedianBackward0", nanmedian, &[0]),
    (
        "aten::nanmedian.dim",
        "NanmedianBackward1",
        nanmedian_dim,
        &[0]
    ),
    ("aten::cummax", "CummaxBackward0", cummax, &[0]),
    ("aten::cummin", "CumminBackward0", cummin, &[0]),
    ("aten::aminmax", "AminmaxBackward0", aminmax, &[0]),
    ("aten::index_copy", "IndexCopyBackward0", index_copy, &[2]),
    ("aten::put", "PutBackward0", put, &[1]),
    ("aten::frexp.Tensor", "FrexpBackward0", frexp, &[0]),
    ("aten::hsplit.int", "SplitBackward0", hsplit, &[]),
    ("aten::hsplit.array", "SplitBackward0", hsplit, &[]),
    ("aten::vsplit.int", "SplitBackward0", vsplit, &[]),
    ("aten::vsplit.array", "SplitBackward0", vsplit, &[]),
    ("aten::dsplit.int", "SplitBackward0", dsplit, &[]),
    ("aten::dsplit.array", "SplitBackward0", dsplit, &[]),
];
