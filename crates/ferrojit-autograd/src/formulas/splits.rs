//! Operators that return a list of tensors (`chunk`, `split`, `split_with_sizes`,
//! `tensor_split`, `unbind`, `broadcast_tensors`, `meshgrid`, the `atleast_*d` sequence
//! forms) and the joining ones built on lists (`hstack`, `vstack`). Each element of a
//! returned list is its own output of the node (PyTorch's `output_nr`), so the formula gets
//! one gradient per element, zeros where none reached it.

use ferrojit_runtime::{IValue, Result};

use super::{wrap_dim, Formula, FormulaInput, Gradients};
use crate::call::{self, call1, int, reshape, sum_to, tensor_list};

/// The gradients of every output, in order.
fn output_grads(input: &FormulaInput) -> Result<Vec<IValue>> {
    (0..input.grads.len())
        .map(|index| input.grad(index).cloned())
        .collect()
}

/// The split pieces lie one after another along `dim`: the gradient is their concatenation.
fn joined_along(input: &FormulaInput, dim_argument: usize) -> Result<Gradients> {
    let rank = input.sizes(0)?.len();
    let dim = wrap_dim(input.int(dim_argument)?, rank) as i64;
    let mut out = input.none();
    out[0] = Some(call1(
        "aten::cat",
        vec![tensor_list(output_grads(input)?), int(dim)],
    )?);
    Ok(out)
}

/// `chunk(self, chunks, dim)`, `split(self, size(s), dim)`, `tensor_split(self, ..., dim)`.
fn split_like(input: &FormulaInput) -> Result<Gradients> {
    joined_along(input, 2)
}

/// `unbind(self, dim)`: the pieces are stacked back.
fn unbind(input: &FormulaInput) -> Result<Gradients> {
    let rank = input.sizes(0)?.len();
    let dim = wrap_dim(input.int(1)?, rank) as i64;
    let mut out = input.none();
    out[0] = Some(call1(
        "aten::stack",
        vec![tensor_list(output_grads(input)?), int(dim)],
    )?);
    Ok(out)
}

/// The sizes of each element of tensor-list argument `index`.
fn list_sizes(input: &FormulaInput, index: usize) -> Result<Vec<Vec<usize>>> {
    let metas = input.input_meta.get(index).cloned().unwrap_or_default();
    metas
        .into_iter()
        .map(|meta| {
            meta.map(|meta| meta.sizes).ok_or_else(|| {
                ferrojit_runtime::RuntimeError::Other(
                    "autograd formula: missing input shape".to_string(),
                )
            })
        })
        .collect()
}

/// `broadcast_tensors(tensors)`: each output's gradient summed back to its input's shape.
fn broadcast_tensors(input: &FormulaInput) -> Result<Gradients> {
    let grads = output_grads(input)?;
    let mut pieces = Vec::with_capacity(grads.len());
    for (grad, sizes) in grads.iter().zip(list_sizes(input, 0)?) {
        pieces.push(sum_to(grad, &sizes)?);
    }
    let mut out = input.none();
    out[0] = Some(call::optional_tensor_list(pieces));
    Ok(out)
}

/// `meshgrid(tensors, indexing)`: input `i` varies along one dimension of every output
/// (`i`, or with `xy` indexing the first two swapped); its gradient sums output `i`'s over
/// the others.
fn meshgrid_with(input: &FormulaInput, cartesian: bool) -> Result<Gradients> {
    let grads = output_grads(input)?;
    let sizes = list_sizes(input, 0)?;
    let count = sizes.len();
    let mut pieces = Vec::with_capacity(count);
    for (position, (grad, sizes)) in grads.iter().zip(&sizes).enumerate() {
        let rank = call::sizes(grad)?.len();
        let axis = match position {
            0 | 1 if cartesian && count >= 2 => 1 - position,
            other => other,
        };
        let others: Vec<i64> = (0..rank as i64).filter(|&dim| dim != axis as i64).collect();
        let summed = if others.is_empty() {
            grad.clone()
        } else {
            call::sum_dims(grad, &others, false)?
        };
        pieces.push(reshape(&summed, sizes)?);
    }
    let mut out = input.none();
    out[0] = Some(call::optional_tensor_list(pieces));
    Ok(out)
}

fn meshgrid(input: &FormulaInput) -> Result<Gradients> {
    meshgrid_with(input, false)
}

/// `meshgrid.indexing(tensors, *, indexing)`.
fn meshgrid_indexing(input: &FormulaInput) -> Result<Gradients> {
    let cartesian = input.argument(1)?.to_str()? == "xy";
    meshgrid_with(input, cartesian)
}

/// `atleast_Nd.Sequence(tensors)`: each gradient reshaped to its input.
fn atleast_sequence(input: &FormulaInput) -> Result<Gradients> {
    let grads = output_grads(input)?;
    let mut pieces = Vec::with_capacity(grads.len());
    for (grad, sizes) in grads.iter().zip(list_sizes(input, 0)?) {
        pieces.push(reshape(grad, &sizes)?);
    }
    let mut out = input.none();
    out[0] = Some(call::optional_tensor_list(pieces));
    Ok(out)
}

/// `hstack`/`vstack(tensors)`: each input's slice of the gradient along the joining
/// dimension, reshaped to the input (the `atleast_*d` promotion undone).
fn stacked_along(input: &FormulaInput, vertical: bool) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let sizes = list_sizes(input, 0)?;
    let rank = call::sizes(grad)?.len();
    let dim: i64 = if vertical || rank == 1 { 0 } else { 1 };
    let mut offset = 0i64;
    let mut pieces = Vec::with_capacity(sizes.len());
    for sizes in &sizes {
        // The input as it was joined: at least 1-d (hstack) or 2-d (vstack).
        let length = match (vertical, sizes.len()) {
            (true, 0 | 1) => 1,
            (false, 0) => 1,
            (_, _) => sizes[dim as usize],
        } as i64;
        let piece = call1(
            "aten::narrow",
            vec![grad.clone(), int(dim), int(offset), int(length)],
        )?;
        offset += length;
        pieces.push(reshape(&piece, sizes)?);
    }
    let mut out = input.none();
    out[0] = Some(call::optional_tensor_list(pieces));
    Ok(out)
}

fn hstack(input: &FormulaInput) -> Result<Gradients> {
    stacked_along(input, false)
}

fn vstack(input: &FormulaInput) -> Result<Gradients> {
    stacked_along(input, true)
}

formula_table![
    ("aten::chunk", "SplitBackward0", split_like, &[]),
    ("aten::split.Tensor", "SplitBackward0", split_like, &[]),
    (
        "aten::split.sizes",
        "SplitWithSizesBackward0",
        split_like,
        &[]
    ),
    (
        "aten::split_with_sizes",
        "SplitWithSizesBackward0",
        split_like,
        &[]
    ),
    (
        "aten::tensor_split.sections",
        "SplitBackward0",
        split_like,
        &[]
    ),
    (
        "aten::tensor_split.indices",
        "SplitWithSizesBackward0",
        split_like,
        &[]
    ),
    (
        "aten::tensor_split.tensor_indices_or_sections",
        "SplitWithSizesBackward0",
        split_like,
        &[]
    ),
    ("aten::unbind.int", "UnbindBackward0", unbind, &[]),
    (
        "aten::broadcast_tensors",
        "ExpandBackward0",
        broadcast_tensors,
        &[]
    ),
    ("aten::meshgrid", "ExpandBackward0", meshgrid, &[]),
    (
        "aten::meshgrid.indexing",
        "ExpandBackward0",
        meshgrid_indexing,
        &[]
    ),
    (
        "aten::atleast_1d.Sequence",
        "ViewBackward0",
        atleast_sequence,
        &[]
    ),
    (
        "aten::atleast_2d.Sequence",
        "ViewBackward0",
        atleast_sequence,
        &[]
    ),
    (
        "aten::atleast_3d.Sequence",
        "ViewBackward0",
        atleast_sequence,
        &[]
    ),
    ("aten::hstack", "CatBackward0", hstack, &[]),
    ("aten::vstack", "CatBackward0", vstack, &[]),
];
