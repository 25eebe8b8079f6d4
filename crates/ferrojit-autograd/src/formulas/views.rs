//! Rearranging operators: views and copies that move, reverse, pad, crop, repeat or reshape
//! elements (`broadcast_to`, `atleast_*d`, `constant_pad_nd`, `as_strided`, `flip`, `roll`,
//! `rot90`, `narrow`, `movedim`, `ravel`, `unflatten`, `diag`, `diagonal`, `trace`,
//! `tril`/`triu`, `unfold`, `repeat_interleave`, `fftshift`), plus the operators that are
//! the identity or a constant on real tensors (`to`, `real`, `fill`,
//! `nan_to_num`). The gradient is moved back the inverse way.

use ferrojit_runtime::{IValue, Result};

use super::pointwise::identity;
use super::support::{against, binary, index_tensor, keep_where, refuse, summed_to, zeros_of};
use super::{wrap_dim, Formula, FormulaInput, Gradients};
use crate::call::{self, call1, int, ints, reshape, sum_to};

fn only_self(input: &FormulaInput, gradient: IValue) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(gradient);
    Ok(out)
}

fn back_to_shape(input: &FormulaInput) -> Result<Gradients> {
    only_self(input, reshape(input.grad(0)?, &input.sizes(0)?)?)
}

fn summed_back(input: &FormulaInput) -> Result<Gradients> {
    only_self(input, sum_to(input.grad(0)?, &input.sizes(0)?)?)
}

fn zero(input: &FormulaInput) -> Result<Gradients> {
    only_self(input, zeros_of(input, 0)?)
}

/// `fill.Tensor(self, value)`: `value` gets the whole gradient's sum.
fn fill_tensor(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(zeros_of(input, 0)?);
    }
    if input.needs(1) {
        out[1] = Some(summed_to(input.grad(0)?, &input.sizes(1)?)?);
    }
    Ok(out)
}

/// `nan_to_num`: the gradient passes where `self` is finite.
fn nan_to_num(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    // Finite: not NaN (x == x) and not infinite.
    let finite = binary(
        "aten::logical_and",
        &binary("aten::eq.Tensor", x, x)?,
        &against(
            "aten::ne.Scalar",
            &call::unary("aten::abs", x)?,
            f64::INFINITY,
        )?,
    )?;
    only_self(input, keep_where(&finite, input.grad(0)?)?)
}

/// `constant_pad_nd(self, pad, value)`: the gradient padded by the negated amounts (a crop
/// for positive padding).
fn constant_pad_nd(input: &FormulaInput) -> Result<Gradients> {
    let pad = input.ints(1)?;
    let negated: Vec<i64> = pad.iter().map(|&amount| -amount).collect();
    let sizes = input.sizes(0)?;
    let grad = input.grad(0)?;
    if pad.iter().all(|&amount| amount >= 0) {
        // A crop: narrow each padded dimension (pairs run from the last dimension back).
        let mut cropped = grad.clone();
        for (pair, amounts) in pad.chunks(2).enumerate() {
            let Some(dim) = sizes.len().checked_sub(1 + pair) else {
                return Err(refuse(
                    "Length of pad should be no more than twice the number of dimensions of \
                     the input.",
                ));
            };
            cropped = call1(
                "aten::narrow",
                vec![
                    cropped,
                    int(dim as i64),
                    int(amounts[0]),
                    int(sizes[dim] as i64),
                ],
            )?;
        }
        return only_self(input, cropped);
    }
    only_self(
        input,
        call1(
            "aten::constant_pad_nd",
            vec![grad.clone(), ints(&negated), IValue::Double(0.0)],
        )?,
    )
}

/// `as_strided(self, size, stride, storage_offset)` of a contiguous input: each output
/// element's storage position is found by applying the same geometry to the positions
/// `0..numel`, and the gradient is accumulated there (overlapping windows add up).
fn as_strided(input: &FormulaInput) -> Result<Gradients> {
    let source = call::tensor(input.argument(0)?)?;
    if !source.is_contiguous() || source.storage_offset() != 0 {
        return Err(refuse(
            "the derivative for 'as_strided' of a non-contiguous or offset input is not \
             implemented.",
        ));
    }
    let sizes = input.sizes(0)?;
    let count: usize = sizes.iter().product();
    let positions = index_tensor((0..count as i64).collect(), &[count])?;
    let mut arguments = vec![positions];
    arguments.extend(input.arguments[1..].iter().cloned());
    let placed = call1("aten::as_strided", arguments)?;
    let grad = input.grad(0)?;
    let placed_count: usize = call::sizes(&placed)?.iter().product();
    let flat_index = reshape(&call1("aten::contiguous", vec![placed])?, &[placed_count])?;
    let flat_grad = reshape(grad, &[placed_count])?;
    let zeros = call::zeros(&[count], input.dtype(0)?)?;
    let gathered = call1(
        "aten::index_add",
        vec![zeros, int(0), flat_index, flat_grad],
    )?;
    only_self(input, reshape(&gathered, &sizes)?)
}

/// The same operator on the gradient with the listed argument replaced (`flip` is its own
/// inverse; `roll`/`rot90` take negated amounts).
fn on_grad(input: &FormulaInput, name: &str, arguments: Vec<IValue>) -> Result<Gradients> {
    let mut all = vec![input.grad(0)?.clone()];
    all.extend(arguments);
    only_self(input, call1(name, all)?)
}

fn flip(input: &FormulaInput) -> Result<Gradients> {
    on_grad(input, "aten::flip", vec![input.argument(1)?.clone()])
}

fn fliplr(input: &FormulaInput) -> Result<Gradients> {
    on_grad(input, "aten::fliplr", vec![])
}

fn flipud(input: &FormulaInput) -> Result<Gradients> {
    on_grad(input, "aten::flipud", vec![])
}

fn roll(input: &FormulaInput) -> Result<Gradients> {
    let shifts: Vec<i64> = input.ints(1)?.iter().map(|&shift| -shift).collect();
    on_grad(
        input,
        "aten::roll",
        vec![ints(&shifts), input.argument(2)?.clone()],
    )
}

fn rot90(input: &FormulaInput) -> Result<Gradients> {
    on_grad(
        input,
        "aten::rot90",
        vec![int(-input.int(1)?), input.argument(2)?.clone()],
    )
}

fn fftshift(input: &FormulaInput) -> Result<Gradients> {
    on_grad(
        input,
        "aten::fft_ifftshift",
        vec![input.argument(1)?.clone()],
    )
}

fn ifftshift(input: &FormulaInput) -> Result<Gradients> {
    on_grad(
        input,
        "aten::fft_fftshift",
        vec![input.argument(1)?.clone()],
    )
}

fn tril(input: &FormulaInput) -> Result<Gradients> {
    on_grad(input, "aten::tril", vec![int(input.int(1)?)])
}

fn triu(input: &FormulaInput) -> Result<Gradients> {
    on_grad(input, "aten::triu", vec![int(input.int(1)?)])
}

/// `narrow(self, dim, start, length)`: the gradient padded with zeros around the window.
fn narrow_from(input: &FormulaInput, start: i64) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let dim = wrap_dim(input.int(1)?, sizes.len());
    let length = input.int(3)?;
    let start = if start < 0 {
        start + sizes[dim] as i64
    } else {
        start
    };
    let after = sizes[dim] as i64 - start - length;
    if sizes.is_empty() {
        return Err(refuse("narrow() cannot be applied to a 0-dim tensor."));
    }
    // Padding pairs run from the last dimension back to `dim`.
    let mut pad = vec![0i64; 2 * (sizes.len() - dim)];
    let last = pad.len() - 2;
    pad[last] = start;
    pad[last + 1] = after;
    only_self(
        input,
        call1(
            "aten::constant_pad_nd",
            vec![input.grad(0)?.clone(), ints(&pad), IValue::Double(0.0)],
        )?,
    )
}

fn narrow(input: &FormulaInput) -> Result<Gradients> {
    narrow_from(input, input.int(2)?)
}

/// `narrow.Tensor(self, dim, start, length)`: `start` is a 0-d integer tensor.
fn narrow_tensor(input: &FormulaInput) -> Result<Gradients> {
    let start = call::tensor(input.argument(2)?)?;
    let start = start.to_i64_vec().first().copied().unwrap_or(0);
    narrow_from(input, start)
}

/// `movedim(self, source, destination)`: moved back.
fn movedim_list(input: &FormulaInput) -> Result<Gradients> {
    on_grad(
        input,
        "aten::movedim.intlist",
        vec![input.argument(2)?.clone(), input.argument(1)?.clone()],
    )
}

fn movedim_int(input: &FormulaInput) -> Result<Gradients> {
    on_grad(
        input,
        "aten::movedim.int",
        vec![int(input.int(2)?), int(input.int(1)?)],
    )
}

/// `diagonal_scatter` of `values` into zeros shaped as the input.
fn onto_diagonal(
    input: &FormulaInput,
    values: &IValue,
    offset: i64,
    dim1: i64,
    dim2: i64,
) -> Result<IValue> {
    call1(
        "aten::diagonal_scatter",
        vec![
            zeros_of(input, 0)?,
            values.clone(),
            int(offset),
            int(dim1),
            int(dim2),
        ],
    )
}

/// `diag(self, diagonal)`: a vector became a matrix (take its diagonal back) or a matrix
/// gave its diagonal (scatter it back).
fn diag(input: &FormulaInput) -> Result<Gradients> {
    let offset = input.int(1)?;
    let grad = input.grad(0)?;
    if input.sizes(0)?.len() == 1 {
        return only_self(
            input,
            call1(
                "aten::diagonal",
                vec![grad.clone(), int(offset), int(0), int(1)],
            )?,
        );
    }
    only_self(input, onto_diagonal(input, grad, offset, 0, 1)?)
}

/// `diagonal(self, offset, dim1, dim2)`.
fn diagonal(input: &FormulaInput) -> Result<Gradients> {
    let gradient = onto_diagonal(
        input,
        input.grad(0)?,
        input.int(1)?,
        input.int(2)?,
        input.int(3)?,
    )?;
    only_self(input, gradient)
}

/// `trace(self)`: the gradient on the main diagonal.
fn trace(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let length = sizes.iter().copied().min().unwrap_or(0);
    let spread = call::expand(input.grad(0)?, &[length])?;
    only_self(input, onto_diagonal(input, &spread, 0, 0, 1)?)
}

/// `unfold(self, dimension, size, step)`: every window element's gradient is added back at
/// its source position.
fn unfold(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let grad = input.grad(0)?;
    if sizes.is_empty() {
        return only_self(input, reshape(grad, &[])?);
    }
    let dim = wrap_dim(input.int(1)?, sizes.len());
    let size = input.int(2)?;
    let step = input.int(3)?;
    let windows = call::sizes(grad)?[dim] as i64;
    let positions: Vec<i64> = (0..windows)
        .flat_map(|window| (0..size).map(move |offset| window * step + offset))
        .collect();
    let count = positions.len();
    let index = index_tensor(positions, &[count])?;
    // [.., windows, .., size] -> [.., windows, size, ..] -> [.., windows * size, ..]
    let moved = call1(
        "aten::movedim.int",
        vec![grad.clone(), int(-1), int(dim as i64 + 1)],
    )?;
    let mut flat_sizes = sizes.clone();
    flat_sizes[dim] = count;
    let flat = reshape(&moved, &flat_sizes)?;
    let gathered = call1(
        "aten::index_add",
        vec![zeros_of(input, 0)?, int(dim as i64), index, flat],
    )?;
    only_self(input, gathered)
}

/// `repeat_interleave.self_int(self, repeats, dim)`: each element's copies are summed.
fn repeat_interleave(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let repeats = input.int(1)?.max(0) as usize;
    let grad = input.grad(0)?;
    let (base, dim) = match input.argument(2)? {
        IValue::None => (vec![sizes.iter().product::<usize>()], 0),
        other => {
            let dim = wrap_dim(other.to_int()?, sizes.len());
            (sizes.clone(), dim)
        }
    };
    if base.is_empty() {
        return only_self(input, reshape(&call::sum_dims(grad, &[0], false)?, &sizes)?);
    }
    let mut split = base.clone();
    split.insert(dim + 1, repeats);
    let grouped = reshape(grad, &split)?;
    let summed = call::sum_dims(&grouped, &[dim as i64 + 1], false)?;
    only_self(input, reshape(&summed, &sizes)?)
}

/// Pads `value` with one zero before (`before`) or after along `dim` (of `rank`).
fn pad_one(value: &IValue, dim: usize, rank: usize, before: bool) -> Result<IValue> {
    let mut pad = vec![0i64; 2 * (rank - dim)];
    let last = pad.len() - 2;
    pad[if before { last } else { last + 1 }] = 1;
    call1(
        "aten::constant_pad_nd",
        vec![value.clone(), ints(&pad), IValue::Double(0.0)],
    )
}

/// `diff(self, n, dim, prepend, append)`: `n` forward differences of
/// `cat([prepend, self, append])`, a linear map whose adjoint, applied `n` times, is
/// `pad_before(g) - pad_after(g)`; the result is split back into the three parts.
fn diff(input: &FormulaInput) -> Result<Gradients> {
    let rank = input.sizes(0)?.len();
    if rank == 0 {
        return Err(refuse("diff expects input to be at least one-dimensional"));
    }
    let dim = wrap_dim(input.int(2)?, rank);
    let mut grad = input.grad(0)?.clone();
    for _ in 0..input.int(1)?.max(0) {
        grad = call::sub(
            &pad_one(&grad, dim, rank, true)?,
            &pad_one(&grad, dim, rank, false)?,
        )?;
    }
    let length = |index: usize| -> Result<i64> {
        Ok(if input.argument(index)?.is_none() {
            0
        } else {
            input.sizes(index)?[dim] as i64
        })
    };
    let (before, middle, after) = (length(3)?, input.sizes(0)?[dim] as i64, length(4)?);
    let piece = |start: i64, length: i64| {
        call1(
            "aten::narrow",
            vec![grad.clone(), int(dim as i64), int(start), int(length)],
        )
    };
    let mut out = input.none();
    out[0] = Some(piece(before, middle)?);
    if input.needs(3) {
        out[3] = Some(piece(0, before)?);
    }
    if input.needs(4) {
        out[4] = Some(piece(before + middle, after)?);
    }
    Ok(out)
}

formula_table![
    ("aten::diff", "DiffBackward0", diff, &[]),
    ("aten::broadcast_to", "ExpandBackward0", summed_back, &[]),
    ("aten::atleast_1d", "ViewBackward0", back_to_shape, &[]),
    ("aten::atleast_2d", "ViewBackward0", back_to_shape, &[]),
    ("aten::atleast_3d", "ViewBackward0", back_to_shape, &[]),
    ("aten::ravel", "ViewBackward0", back_to_shape, &[]),
    ("aten::unflatten.int", "ViewBackward0", back_to_shape, &[]),
    (
        "aten::constant_pad_nd",
        "ConstantPadNdBackward0",
        constant_pad_nd,
        &[]
    ),
    ("aten::as_strided", "AsStridedBackward0", as_strided, &[0]),
    ("aten::flip", "FlipBackward0", flip, &[]),
    ("aten::fliplr", "FlipBackward0", fliplr, &[]),
    ("aten::flipud", "FlipBackward0", flipud, &[]),
    ("aten::roll", "RollBackward0", roll, &[]),
    ("aten::rot90", "Rot90Backward0", rot90, &[]),
    ("aten::fft_fftshift", "RollBackward0", fftshift, &[]),
    ("aten::fft_ifftshift", "RollBackward0", ifftshift, &[]),
    ("aten::tril", "TrilBackward0", tril, &[]),
    ("aten::triu", "TriuBackward0", triu, &[]),
    ("aten::narrow", "SliceBackward0", narrow, &[]),
    ("aten::narrow.Tensor", "SliceBackward0", narrow_tensor, &[2]),
    (
        "aten::movedim.intlist",
        "PermuteBackward0",
        movedim_list,
        &[]
    ),
    ("aten::movedim.int", "PermuteBackward0", movedim_int, &[]),
    ("aten::diag", "DiagBackward0", diag, &[]),
    ("aten::diagonal", "DiagonalBackward0", diagonal, &[]),
    ("aten::trace", "TraceBackward0", trace, &[]),
    ("aten::unfold", "UnfoldBackward0", unfold, &[]),
    (
        "aten::repeat_interleave.self_int",
        "RepeatInterleaveBackward0",
        repeat_interleave,
        &[]
    ),
    ("aten::to.device", "ToCopyBackward0", identity, &[]),
    ("aten::to.dtype_layout", "ToCopyBackward0", identity, &[]),
    ("aten::to.other", "ToCopyBackward0", identity, &[]),
    ("aten::to.prim_Device", "ToCopyBackward0", identity, &[]),
    ("aten::resolve_conj", "AliasBackward0", identity, &[]),
    ("aten::resolve_neg", "AliasBackward0", identity, &[]),
    ("aten::real", "RealBackward0", identity, &[]),
    ("aten::fill.Scalar", "FillBackward0", zero, &[]),
    ("aten::zero_", "ZeroBackward0", zero, &[]),
    ("aten::fill.Tensor", "FillBackward1", fill_tensor, &[]),
    ("aten::nan_to_num", "NanToNumBackward0", nan_to_num, &[0]),
];
