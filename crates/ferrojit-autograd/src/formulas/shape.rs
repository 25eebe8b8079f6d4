//! View and shape operators (the gradient is reshaped, transposed or scattered back) and the
//! joining and indexing ones (`cat`, `stack`, `select`, `slice`, `index_select`).

use ferrojit_runtime::{IValue, Result};

use super::pointwise::identity;
use super::{wrap_dim, Formula, FormulaInput, Gradients};
use crate::call::{self, call1, int, reshape, sum_to, tensor_list, transpose};

fn back_to_shape(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(reshape(input.grad(0)?, &input.sizes(0)?)?);
    Ok(out)
}

fn t(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(call::t(input.grad(0)?)?);
    Ok(out)
}

fn transpose_int(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(transpose(input.grad(0)?, input.int(1)?, input.int(2)?)?);
    Ok(out)
}

fn permute(input: &FormulaInput) -> Result<Gradients> {
    let rank = input.sizes(0)?.len();
    let dims = input.ints(1)?;
    let mut inverse = vec![0i64; dims.len()];
    for (position, &dim) in dims.iter().enumerate() {
        if let Some(slot) = inverse.get_mut(wrap_dim(dim, rank)) {
            *slot = position as i64;
        }
    }
    let mut out = input.none();
    out[0] = Some(call1(
        "aten::permute",
        vec![input.grad(0)?.clone(), call::ints(&inverse)],
    )?);
    Ok(out)
}

fn expand(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(sum_to(input.grad(0)?, &input.sizes(0)?)?);
    Ok(out)
}

/// `cat(tensors, dim)`: each input gets its slice of the gradient.
fn cat(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let metas = input.input_meta.first().cloned().unwrap_or_default();
    let rank = call::sizes(grad)?.len();
    let dim = wrap_dim(input.int(1)?, rank);
    let mut offset = 0i64;
    let mut pieces = Vec::with_capacity(metas.len());
    for meta in metas.iter().flatten() {
        // Legacy: a 1-D empty tensor takes no part in cat.
        if meta.sizes == [0] && rank != 1 {
            pieces.push(IValue::None);
            continue;
        }
        let length = meta.sizes.get(dim).copied().unwrap_or(0) as i64;
        pieces.push(call1(
            "aten::narrow",
            vec![grad.clone(), int(dim as i64), int(offset), int(length)],
        )?);
        offset += length;
    }
    let mut out = input.none();
    out[0] = Some(call::optional_tensor_list(pieces));
    Ok(out)
}

fn stack(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let count = input.input_meta.first().map_or(0, Vec::len);
    let rank = call::sizes(grad)?.len();
    let dim = wrap_dim(input.int(1)?, rank) as i64;
    let mut pieces = Vec::with_capacity(count);
    for index in 0..count {
        pieces.push(call1(
            "aten::select.int",
            vec![grad.clone(), int(dim), int(index as i64)],
        )?);
    }
    let mut out = input.none();
    out[0] = Some(tensor_list(pieces));
    Ok(out)
}

fn zeros_of_input(input: &FormulaInput) -> Result<IValue> {
    call::zeros(&input.sizes(0)?, input.dtype(0)?)
}

fn select(input: &FormulaInput) -> Result<Gradients> {
    let zeros = zeros_of_input(input)?;
    let mut out = input.none();
    out[0] = Some(call1(
        "aten::select_scatter",
        vec![
            zeros,
            input.grad(0)?.clone(),
            int(input.int(1)?),
            int(input.int(2)?),
        ],
    )?);
    Ok(out)
}

/// `slice(self, dim, start, end, step)`: the gradient is added back at the sliced indices.
fn slice(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let dim = wrap_dim(input.int(1)?, sizes.len());
    let length = sizes.get(dim).copied().unwrap_or(0) as i64;
    let bound = |value: &IValue, default: i64| -> Result<i64> {
        let raw = if value.is_none() {
            default
        } else {
            value.to_int()?
        };
        let wrapped = if raw < 0 { raw + length } else { raw };
        Ok(wrapped.clamp(0, length))
    };
    let start = bound(input.argument(2)?, 0)?;
    let end = bound(input.argument(3)?, length)?.max(start);
    let step = input.int(4)?.max(1);
    let indices: Vec<i64> = (start..end).step_by(step as usize).collect();
    let index = call::fresh(ferrojit_tensor::Tensor::from_vec(
        indices.clone(),
        &[indices.len()],
    )?);
    let zeros = zeros_of_input(input)?;
    let mut out = input.none();
    out[0] = Some(call1(
        "aten::index_add",
        vec![zeros, int(dim as i64), index, input.grad(0)?.clone()],
    )?);
    Ok(out)
}

/// `slice_scatter(self, src, dim, start, end, step)`: `self` gets the gradient with the
/// written slice zeroed, `src` the gradient's slice.
fn slice_scatter(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let placement: Vec<IValue> = (2..6)
        .map(|index| input.argument(index).cloned())
        .collect::<Result<_>>()?;
    let mut out = input.none();
    if input.needs(0) {
        let zeros = call::zeros(&input.sizes(1)?, input.dtype(1)?)?;
        let mut arguments = vec![grad.clone(), zeros];
        arguments.extend(placement.iter().cloned());
        out[0] = Some(call1("aten::slice_scatter", arguments)?);
    }
    if input.needs(1) {
        let mut arguments = vec![grad.clone()];
        arguments.extend(placement);
        out[1] = Some(call1("aten::slice.Tensor", arguments)?);
    }
    Ok(out)
}

/// `mT`: the gradient transposed back over the last two dimensions.
fn matrix_transpose(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(transpose(input.grad(0)?, -2, -1)?);
    Ok(out)
}

/// `mH`: the gradient's conjugate transpose (`mH` again), which a complex input needs.
fn matrix_adjoint(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(crate::call::unary("aten::mH", input.grad(0)?)?);
    Ok(out)
}

fn index_select(input: &FormulaInput) -> Result<Gradients> {
    let zeros = zeros_of_input(input)?;
    let mut out = input.none();
    out[0] = Some(call1(
        "aten::index_add",
        vec![
            zeros,
            int(input.int(1)?),
            input.argument(2)?.clone(),
            input.grad(0)?.clone(),
        ],
    )?);
    Ok(out)
}

fn unsqueeze(input: &FormulaInput) -> Result<Gradients> {
    back_to_shape(input)
}

pub const FORMULAS: &[(&str, Formula)] = &[
    (
        "aten::view",
        Formula {
            name: "ViewBackward0",
            saves: &[],
            apply: back_to_shape,
        },
    ),
    (
        "aten::reshape",
        Formula {
            name: "ViewBackward0",
            saves: &[],
            apply: back_to_shape,
        },
    ),
    (
        "aten::flatten.using_ints",
        Formula {
            name: "ViewBackward0",
            saves: &[],
            apply: back_to_shape,
        },
    ),
    (
        "aten::_unsafe_view",
        Formula {
            name: "UnsafeViewBackward0",
            saves: &[],
            apply: back_to_shape,
        },
    ),
    (
        "aten::view_as",
        Formula {
            name: "ViewBackward0",
            saves: &[],
            apply: back_to_shape,
        },
    ),
    (
        "aten::reshape_as",
        Formula {
            name: "ViewBackward0",
            saves: &[],
            apply: back_to_shape,
        },
    ),
    (
        "aten::squeeze",
        Formula {
            name: "SqueezeBackward0",
            saves: &[],
            apply: back_to_shape,
        },
    ),
    (
        "aten::squeeze.dim",
        Formula {
            name: "SqueezeBackward1",
            saves: &[],
            apply: back_to_shape,
        },
    ),
    (
        "aten::squeeze.dims",
        Formula {
            name: "SqueezeBackward2",
            saves: &[],
            apply: back_to_shape,
        },
    ),
    (
        "aten::unsqueeze",
        Formula {
            name: "UnsqueezeBackward0",
            saves: &[],
            apply: unsqueeze,
        },
    ),
    (
        "aten::t",
        Formula {
            name: "TBackward0",
            saves: &[],
            apply: t,
        },
    ),
    (
        "aten::transpose.int",
        Formula {
            name: "TransposeBackward0",
            saves: &[],
            apply: transpose_int,
        },
    ),
    (
        "aten::permute",
        Formula {
            name: "PermuteBackward0",
            saves: &[],
            apply: permute,
        },
    ),
    (
        "aten::expand",
        Formula {
            name: "ExpandBackward0",
            saves: &[],
            apply: expand,
        },
    ),
    (
        "aten::expand_as",
        Formula {
            name: "ExpandBackward0",
            saves: &[],
            apply: expand,
        },
    ),
    (
        "aten::cat",
        Formula {
            name: "CatBackward0",
            saves: &[],
            apply: cat,
        },
    ),
    (
        "aten::stack",
        Formula {
            name: "StackBackward0",
            saves: &[],
            apply: stack,
        },
    ),
    (
        "aten::select.int",
        Formula {
            name: "SelectBackward0",
            saves: &[],
            apply: select,
        },
    ),
    (
        "aten::slice.Tensor",
        Formula {
            name: "SliceBackward0",
            saves: &[],
            apply: slice,
        },
    ),
    (
        "aten::slice_scatter",
        Formula {
            name: "SliceScatterBackward0",
            saves: &[],
            apply: slice_scatter,
        },
    ),
    (
        "aten::mT",
        Formula {
            name: "TransposeBackward0",
            saves: &[],
            apply: matrix_transpose,
        },
    ),
    (
        "aten::mT.a",
        Formula {
            name: "TransposeBackward0",
            saves: &[],
            apply: matrix_transpose,
        },
    ),
    (
        "aten::mH",
        Formula {
            name: "TransposeBackward0",
            saves: &[],
            apply: matrix_adjoint,
        },
    ),
    (
        "aten::mH.a",
        Formula {
            name: "TransposeBackward0",
            saves: &[],
            apply: matrix_adjoint,
        },
    ),
    (
        "aten::index_select",
        Formula {
            name: "IndexSelectBackward0",
            saves: &[2],
            apply: index_select,
        },
    ),
    (
        "aten::alias",
        Formula {
            name: "AliasBackward0",
            saves: &[],
            apply: identity,
        },
    ),
];
