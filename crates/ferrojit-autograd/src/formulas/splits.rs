//! Operators that return a list of tensors (`chunk`, `split`, `split_with_sizes`,
//! `tensor_split`, `unbind`, `broadcast_tensors`, `meshgrid`, the `atleast_*d` sequence
//! forms) and the joining ones built on lists (`hstack`, `vstack`, `column_stack`, `dstack`,
//! `block_diag`, `cartesian_prod`). Each element of a returned list is its own output of the node (PyTorch's
//! `output_nr`), so the formula gets one gradient per element, zeros where none reached it.

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

/// `column_stack`/`dstack(tensors)`: each input's slice of the gradient along dim 1 (inputs
/// of rank 0 or 1 joined as one column) or dim 2 (inputs promoted to 3-d), reshaped back.
fn stacked_at(input: &FormulaInput, dim: usize) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let sizes = list_sizes(input, 0)?;
    let mut offset = 0i64;
    let mut pieces = Vec::with_capacity(sizes.len());
    for sizes in &sizes {
        let length = if sizes.len() <= dim { 1 } else { sizes[dim] } as i64;
        let piece = call1(
            "aten::narrow",
            vec![grad.clone(), int(dim as i64), int(offset), int(length)],
        )?;
        offset += length;
        pieces.push(reshape(&piece, sizes)?);
    }
    let mut out = input.none();
    out[0] = Some(call::optional_tensor_list(pieces));
    Ok(out)
}

fn column_stack(input: &FormulaInput) -> Result<Gradients> {
    stacked_at(input, 1)
}

fn dstack(input: &FormulaInput) -> Result<Gradients> {
    stacked_at(input, 2)
}

/// `block_diag(tensors)`: each input's block of the gradient (a 0-d input is 1x1, a 1-d one
/// a single row).
fn block_diag(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let sizes = list_sizes(input, 0)?;
    let (mut row, mut column) = (0i64, 0i64);
    let mut pieces = Vec::with_capacity(sizes.len());
    for sizes in &sizes {
        let (rows, columns) = match sizes.len() {
            0 => (1, 1),
            1 => (1, sizes[0]),
            _ => (sizes[0], sizes[1]),
        };
        let band = call1(
            "aten::narrow",
            vec![grad.clone(), int(0), int(row), int(rows as i64)],
        )?;
        let block = call1(
            "aten::narrow",
            vec![band, int(1), int(column), int(columns as i64)],
        )?;
        row += rows as i64;
        column += columns as i64;
        pieces.push(reshape(&block, sizes)?);
    }
    let mut out = input.none();
    out[0] = Some(call::optional_tensor_list(pieces));
    Ok(out)
}

/// `cartesian_prod(tensors)`: column `i` of the gradient, laid out on the grid of the
/// inputs, summed over every other input's axis.
fn cartesian_prod(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let sizes = list_sizes(input, 0)?;
    let grid: Vec<usize> = sizes.iter().map(|s| s.iter().product()).collect();
    let mut pieces = Vec::with_capacity(sizes.len());
    if sizes.len() == 1 {
        pieces.push(reshape(grad, &sizes[0])?);
    }
    for (position, own) in sizes.iter().enumerate().filter(|_| sizes.len() > 1) {
        let column = call1(
            "aten::select.int",
            vec![grad.clone(), int(1), int(position as i64)],
        )?;
        let laid_out = reshape(&column, &grid)?;
        let others: Vec<i64> = (0..grid.len() as i64)
            .filter(|&dim| dim != position as i64)
            .collect();
        let summed = call::sum_dims(&laid_out, &others, false)?;
        pieces.push(reshape(&summed, own)?);
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
    ("aten::column_stack", "CatBackward0", column_stack, &[]),
    ("aten::dstack", "CatBackward0", dstack, &[]),
    ("aten::block_diag", "BlockDiagBackward0", block_diag, &[]),
    (
        "aten::cartesian_prod",
        "StackBackward0",
        cartesian_prod,
        &[]
    ),
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
