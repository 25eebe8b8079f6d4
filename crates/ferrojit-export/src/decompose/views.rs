//! Decompositions of shape and view operators into `view`, `permute`, `expand`, `squeeze.dims`,
//! `slice`, `split_with_sizes`, `cat` and `clone`: `flatten`, `reshape`, `unflatten`, `contiguous`,
//! `transpose`, `t`, `expand_as`, `view_as`, `squeeze.dim`, `chunk`, `split`, `unbind`, `stack`,
//! `pixel_shuffle` and `pixel_unshuffle`. An operator that returns its input unchanged
//! (`contiguous` of a contiguous tensor, a `flatten` that changes nothing) leaves no node.

use super::emitter::{not_applicable, Emitter, Original, MEMORY_FORMAT_CONTIGUOUS};
use super::linear_algebra::reshape_to;
use super::Rule;
use crate::error::Result;
use crate::model::Argument;
use std::collections::BTreeMap;

pub(crate) fn register(table: &mut BTreeMap<&'static str, Rule>) {
    table.insert("torch.ops.aten.flatten.using_ints", flatten);
    table.insert("torch.ops.aten.reshape.default", reshape);
    table.insert("torch.ops.aten.unflatten.int", unflatten);
    table.insert("torch.ops.aten.contiguous.default", contiguous);
    table.insert("torch.ops.aten.transpose.int", transpose);
    table.insert("torch.ops.aten.t.default", t);
    table.insert("torch.ops.aten.expand_as.default", expand_as);
    table.insert("torch.ops.aten.view_as.default", view_as);
    table.insert("torch.ops.aten.squeeze.dim", squeeze_dim);
    table.insert("torch.ops.aten.squeeze.default", squeeze_all);
    table.insert("torch.ops.aten.chunk.default", chunk);
    table.insert("torch.ops.aten.split.Tensor", split);
    table.insert("torch.ops.aten.unbind.int", unbind);
    table.insert("torch.ops.aten.stack.default", stack);
    table.insert("torch.ops.aten.pixel_shuffle.default", |e, o| {
        pixel_shuffle(e, o, true)
    });
    table.insert("torch.ops.aten.pixel_unshuffle.default", |e, o| {
        pixel_shuffle(e, o, false)
    });
}

/// A dimension index wrapped into `0..rank`.
pub(crate) fn wrap_dim(dim: i64, rank: usize) -> Result<usize> {
    let rank_i = rank.max(1) as i64;
    let wrapped = if dim < 0 { dim + rank_i } else { dim };
    if wrapped < 0 || wrapped >= rank_i {
        return Err(not_applicable(format!(
            "dimension {dim} is out of range for rank {rank}"
        )));
    }
    Ok(wrapped as usize)
}

/// `shape` with its one `-1` resolved for `numel` elements.
pub(crate) fn infer_size(shape: &[i64], numel: i64) -> Result<Vec<i64>> {
    let mut out = shape.to_vec();
    // Sizes come from the file: a product that overflows is refused, never wrapped.
    let product = |sizes: &[i64]| {
        sizes
            .iter()
            .filter(|&&size| size != -1)
            .try_fold(1i64, |total, &size| total.checked_mul(size))
            .ok_or_else(|| not_applicable(format!("shape {shape:?} has too many elements")))
    };
    let known = product(shape)?;
    if let Some(position) = shape.iter().position(|&s| s == -1) {
        if known == 0 {
            return Err(not_applicable("cannot infer -1 in a shape with a zero"));
        }
        out[position] = numel / known;
    }
    if out.contains(&-1) || product(&out)? != numel {
        return Err(not_applicable(format!(
            "shape {shape:?} does not hold {numel} elements"
        )));
    }
    Ok(out)
}

fn tensor(name: &str) -> Argument {
    Argument::Tensor(name.to_string())
}

fn flatten(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let sizes = emitter.sizes(&input)?;
    if sizes.is_empty() {
        return Ok(vec![reshape_to(emitter, &input, vec![1])?]);
    }
    let start = wrap_dim(original.int_or("start_dim", 0)?, sizes.len())?;
    let end = wrap_dim(original.int_or("end_dim", -1)?, sizes.len())?;
    if start == end {
        return Ok(vec![input]);
    }
    let mut shape = sizes[..start].to_vec();
    shape.push(sizes[start..=end].iter().product());
    shape.extend_from_slice(&sizes[end + 1..]);
    Ok(vec![reshape_to(emitter, &input, shape)?])
}

fn reshape(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let shape = original.ints_or("shape", &[])?;
    Ok(vec![reshape_to(emitter, &input, shape)?])
}

fn unflatten(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let sizes = emitter.sizes(&input)?;
    let dim = wrap_dim(original.int_or("dim", 0)?, sizes.len())?;
    let pieces = infer_size(&original.ints_or("sizes", &[])?, sizes[dim])?;
    let mut shape = sizes[..dim].to_vec();
    shape.extend(pieces);
    shape.extend_from_slice(&sizes[dim + 1..]);
    Ok(vec![reshape_to(emitter, &input, shape)?])
}

fn contiguous(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    if let Some(format) = original.get("memory_format") {
        if !matches!(format, Argument::MemoryFormat(MEMORY_FORMAT_CONTIGUOUS)) {
            return Err(not_applicable(
                "contiguous to a memory format other than contiguous_format",
            ));
        }
    }
    if emitter.is_contiguous(&input)? {
        return Ok(vec![input]);
    }
    let copy = emitter.call(
        "torch.ops.aten.clone.default",
        vec![tensor(&input)],
        vec![(
            "memory_format",
            Argument::MemoryFormat(MEMORY_FORMAT_CONTIGUOUS),
        )],
    )?;
    Ok(vec![copy])
}

fn permute(emitter: &mut Emitter, input: &str, order: Vec<i64>) -> Result<String> {
    emitter.call(
        "torch.ops.aten.permute.default",
        vec![tensor(input), Argument::Ints(order)],
        vec![],
    )
}

fn transpose(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let rank = emitter.dim(&input)?;
    if rank == 0 {
        return Ok(vec![input]);
    }
    let first = wrap_dim(original.int_or("dim0", 0)?, rank)?;
    let second = wrap_dim(original.int_or("dim1", 0)?, rank)?;
    let mut order: Vec<i64> = (0..rank as i64).collect();
    order.swap(first, second);
    Ok(vec![permute(emitter, &input, order)?])
}

fn t(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    if emitter.dim(&input)? < 2 {
        return Ok(vec![input]);
    }
    Ok(vec![permute(emitter, &input, vec![1, 0])?])
}

fn expand_as(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let other = original.tensor("other")?;
    let sizes = emitter.sizes(&other)?;
    let out = emitter.call(
        "torch.ops.aten.expand.default",
        vec![tensor(&input), Argument::Ints(sizes)],
        vec![],
    )?;
    Ok(vec![out])
}

fn view_as(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let other = original.tensor("other")?;
    let sizes = emitter.sizes(&other)?;
    let out = emitter.call(
        "torch.ops.aten.view.default",
        vec![tensor(&input), Argument::Ints(sizes)],
        vec![],
    )?;
    Ok(vec![out])
}

fn squeeze_dim(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let dim = original.int_or("dim", 0)?;
    let out = emitter.call(
        "torch.ops.aten.squeeze.dims",
        vec![tensor(&input), Argument::Ints(vec![dim])],
        vec![],
    )?;
    Ok(vec![out])
}

fn squeeze_all(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let dims: Vec<i64> = emitter
        .sizes(&input)?
        .iter()
        .enumerate()
        .filter(|(_, &size)| size == 1)
        .map(|(index, _)| index as i64)
        .collect();
    let out = emitter.call(
        "torch.ops.aten.squeeze.dims",
        vec![tensor(&input), Argument::Ints(dims)],
        vec![],
    )?;
    Ok(vec![out])
}

/// `split_with_sizes` with the dimension written only when it is not 0, as PyTorch's
/// decomposition passes it on.
fn split_with_sizes(
    emitter: &mut Emitter,
    input: &str,
    sizes: Vec<i64>,
    dim: i64,
) -> Result<Vec<String>> {
    let count = sizes.len();
    let mut positional = vec![tensor(input), Argument::Ints(sizes)];
    if dim != 0 {
        positional.push(Argument::Int(dim));
    }
    emitter.call_several(
        "torch.ops.aten.split_with_sizes.default",
        positional,
        vec![],
        Some(count),
    )
}

/// The pieces `split(split_size)` makes of a dimension of `length`.
fn split_sizes(length: i64, split_size: i64) -> Result<Vec<i64>> {
    if split_size <= 0 {
        return Err(not_applicable("split size must be positive"));
    }
    let count = ((length + split_size - 1) / split_size).max(1);
    Ok((0..count)
        .map(|index| split_size.min(length - index * split_size))
        .collect())
}

fn chunk(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let chunks = original.int_or("chunks", 1)?;
    let dim = original.int_or("dim", 0)?;
    let sizes = emitter.sizes(&input)?;
    let length = sizes[wrap_dim(dim, sizes.len())?];
    if chunks <= 0 {
        return Err(not_applicable("chunk count must be positive"));
    }
    let split_size = (length + chunks - 1) / chunks;
    let pieces = split_sizes(length, split_size.max(1))?;
    if pieces.len()
        != original
            .node
            .outputs
            .iter()
            .map(output_count)
            .sum::<usize>()
    {
        return Err(not_applicable(
            "chunk's result count differs from its split",
        ));
    }
    split_with_sizes(emitter, &input, pieces, dim)
}

fn output_count(output: &Argument) -> usize {
    match output {
        Argument::Tensors(names) => names.len(),
        Argument::Tensor(_) => 1,
        _ => 0,
    }
}

fn split(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let split_size = original.int_or("split_size", 1)?;
    let dim = original.int_or("dim", 0)?;
    let sizes = emitter.sizes(&input)?;
    let length = sizes[wrap_dim(dim, sizes.len())?];
    let pieces = split_sizes(length, split_size)?;
    split_with_sizes(emitter, &input, pieces, dim)
}

/// `unbind` as `tensor_split` into one-wide slices (all made first), each squeezed.
fn unbind(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let sizes = emitter.sizes(&input)?;
    let dim = wrap_dim(original.int_or("dim", 0)?, sizes.len())? as i64;
    let mut slices = Vec::new();
    for index in 0..sizes[dim as usize] {
        slices.push(emitter.call(
            "torch.ops.aten.slice.Tensor",
            vec![
                tensor(&input),
                Argument::Int(dim),
                Argument::Int(index),
                Argument::Int(index + 1),
            ],
            vec![],
        )?);
    }
    let mut out = Vec::new();
    for slice in slices {
        out.push(emitter.call(
            "torch.ops.aten.squeeze.dims",
            vec![tensor(&slice), Argument::Ints(vec![dim])],
            vec![],
        )?);
    }
    Ok(out)
}

/// `stack` as the reference writes it: `cat` along the dimension and a `view` inserting it,
/// or, for a new last dimension, `cat` of unsqueezed tensors.
fn stack(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let tensors = match original.required("tensors")? {
        Argument::Tensors(names) => names.clone(),
        other => return Err(not_applicable(format!("stack of {other:?}"))),
    };
    let first = tensors
        .first()
        .ok_or_else(|| not_applicable("stack of no tensors"))?;
    let sizes = emitter.sizes(first)?;
    let dim = wrap_dim(original.int_or("dim", 0)?, sizes.len() + 1)?;
    for other in &tensors {
        if emitter.sizes(other)? != sizes {
            return Err(not_applicable("stack of tensors of different shapes"));
        }
    }
    let cat_arguments = |list: Vec<String>, dim: usize| {
        let mut positional = vec![Argument::Tensors(list)];
        if dim != 0 {
            positional.push(Argument::Int(dim as i64));
        }
        positional
    };
    if dim < sizes.len() {
        let joined = emitter.call(
            "torch.ops.aten.cat.default",
            cat_arguments(tensors.clone(), dim),
            vec![],
        )?;
        let mut shape = sizes.clone();
        shape.insert(dim, tensors.len() as i64);
        let out = emitter.call(
            "torch.ops.aten.view.default",
            vec![tensor(&joined), Argument::Ints(shape)],
            vec![],
        )?;
        return Ok(vec![out]);
    }
    let mut unsqueezed = Vec::new();
    for name in &tensors {
        unsqueezed.push(emitter.call(
            "torch.ops.aten.unsqueeze.default",
            vec![tensor(name), Argument::Int(dim as i64)],
            vec![],
        )?);
    }
    let out = emitter.call(
        "torch.ops.aten.cat.default",
        cat_arguments(unsqueezed, dim),
        vec![],
    )?;
    Ok(vec![out])
}

/// PyTorch's `pixel_shuffle` / `pixel_unshuffle`: split the channels (or the height and
/// width) by the factor, permute, `reshape` to the new shape, and a final contiguous `clone`
/// (PyTorch's reference always returns a fresh tensor).
fn pixel_shuffle(emitter: &mut Emitter, original: &Original, shuffle: bool) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let factor = if shuffle {
        original.int_or("upscale_factor", 0)?
    } else {
        original.int_or("downscale_factor", 0)?
    };
    let sizes = emitter.sizes(&input)?;
    if sizes.len() < 3 || factor <= 0 {
        return Err(not_applicable(format!(
            "pixel_shuffle of a {}-d tensor by {factor}",
            sizes.len()
        )));
    }
    if !emitter.is_contiguous(&input)? {
        // PyTorch keeps the input's memory format (channels_last) for the result.
        return Err(not_applicable(
            "pixel_shuffle of a non-contiguous input is not decomposed yet",
        ));
    }
    let lead = sizes.len() - 3;
    let (channels, height, width) = (sizes[lead], sizes[lead + 1], sizes[lead + 2]);
    let batch = &sizes[..lead];
    let base = lead as i64;
    let (split, order, joined) = if shuffle {
        let square = factor * factor;
        if channels % square != 0 {
            return Err(not_applicable(
                "pixel_shuffle channels not divisible by factor²",
            ));
        }
        let split = [channels / square, factor, factor, height, width];
        let order = [0, 3, 1, 4, 2];
        let joined = [channels / square, height * factor, width * factor];
        (split, order, joined)
    } else {
        if height % factor != 0 || width % factor != 0 {
            return Err(not_applicable(
                "pixel_unshuffle size not divisible by factor",
            ));
        }
        let split = [channels, height / factor, factor, width / factor, factor];
        let order = [0, 2, 4, 1, 3];
        let joined = [channels * factor * factor, height / factor, width / factor];
        (split, order, joined)
    };
    let mut split_sizes = batch.to_vec();
    split_sizes.extend(split);
    let mut permutation: Vec<i64> = (0..base).collect();
    permutation.extend(order.iter().map(|axis| base + axis));
    let mut joined_sizes = batch.to_vec();
    joined_sizes.extend(joined);
    let viewed = emitter.call(
        "torch.ops.aten.view.default",
        vec![tensor(&input), Argument::Ints(split_sizes)],
        vec![],
    )?;
    let permuted = permute(emitter, &viewed, permutation)?;
    let reshaped = reshape_to(emitter, &permuted, joined_sizes)?;
    Ok(vec![emitter.call(
        "torch.ops.aten.clone.default",
        vec![tensor(&reshaped)],
        vec![(
            "memory_format",
            Argument::MemoryFormat(MEMORY_FORMAT_CONTIGUOUS),
        )],
    )?])
}

#[cfg(test)]
mod tests {
    use super::infer_size;

    #[test]
    fn infer_size_resolves_one_minus_one() {
        assert_eq!(infer_size(&[2, -1], 12).unwrap(), vec![2, 6]);
        assert!(infer_size(&[5, -1], 12).is_err());
        assert!(infer_size(&[-1, -1], 12).is_err());
        assert!(infer_size(&[0, -1], 0).is_err());
    }

    #[test]
    fn infer_size_refuses_sizes_whose_product_overflows() {
        // A hostile file's view arguments: refused with an error, never a wrapped product.
        let error = infer_size(&[i64::MAX, 4], 8).unwrap_err();
        assert!(error.to_string().contains("too many elements"), "{error}");
        assert!(infer_size(&[1 << 40, 1 << 40, -1], 1).is_err());
    }
}
