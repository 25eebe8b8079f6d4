//! Shape functions of the operators that rearrange a tensor's dimensions: views, squeezes,
//! slices, selects, concatenation and expansion.

use super::sizes::{add, dim_at, floor_div, mul, product, wrap_dim};
use super::{Shape, ShapeArgument, SymInt};

pub(super) fn squeeze_all(input: &Shape) -> Shape {
    let mut out = Vec::new();
    for &size in input.as_ref()? {
        match size {
            SymInt::Static(1) => {}
            SymInt::Static(_) => out.push(size),
            // Whether the size is 1 is undecided, and so is the output's rank.
            _ => return None,
        }
    }
    Some(out)
}

pub(super) fn squeeze_dim(input: &Shape, dim: SymInt) -> Shape {
    let sizes = input.as_ref()?;
    let dim = wrap_dim(dim, sizes.len())?;
    let mut out = Vec::new();
    for (index, &size) in sizes.iter().enumerate() {
        if index == dim {
            match size {
                SymInt::Static(1) => {}
                SymInt::Static(_) => out.push(size),
                _ => return None,
            }
        } else {
            out.push(size);
        }
    }
    Some(out)
}

pub(super) fn squeeze_dims(input: &Shape, dims: Option<Vec<SymInt>>) -> Shape {
    let sizes = input.as_ref()?;
    let dims = dims?;
    if dims.is_empty() {
        // The function returns its input list itself, which is a list only when the sizes
        // were all constants.
        return sizes
            .iter()
            .all(|size| size.known().is_some())
            .then(|| sizes.clone());
    }
    for &dim in &dims {
        wrap_dim(dim, sizes.len())?;
    }
    // A size of 1 is kept only when its index is `not in` the dims, a test partial
    // evaluation leaves undecided; so is `size == 1` for a size that is not constant. Only
    // inputs without such sizes get a ranked output, which is then the input's sizes.
    if sizes
        .iter()
        .any(|size| !matches!(size, SymInt::Static(value) if *value != 1))
    {
        return None;
    }
    Some(sizes.clone())
}

pub(super) fn unsqueeze(input: &Shape, dim: SymInt) -> Shape {
    let sizes = input.as_ref()?;
    let dim = wrap_dim(dim, sizes.len() + 1)?;
    let mut out = sizes.clone();
    out.insert(dim, SymInt::Static(1));
    Some(out)
}

pub(super) fn slice(
    input: &Shape,
    dim: SymInt,
    start: Option<Option<SymInt>>,
    end: Option<Option<SymInt>>,
    step: SymInt,
) -> Shape {
    let sizes = input.as_ref()?;
    if sizes.is_empty() {
        return None;
    }
    let dim = wrap_dim(dim, sizes.len())?;
    let mut out = sizes.clone();
    out[dim] = slice_length(sizes[dim], start, end, step);
    Some(out)
}

/// The length `slice` gives a dimension of size `size`, when every part is a constant.
pub(super) fn slice_length(
    size: SymInt,
    start: Option<Option<SymInt>>,
    end: Option<Option<SymInt>>,
    step: SymInt,
) -> SymInt {
    const MAX_INT: i64 = i64::MAX;
    let (Some(size), Some(step)) = (size.known(), step.known()) else {
        return SymInt::Unknown;
    };
    let start = match start {
        Some(None) => 0,
        Some(Some(SymInt::Static(value))) => value,
        _ => return SymInt::Unknown,
    };
    let end = match end {
        Some(None) => MAX_INT,
        Some(Some(SymInt::Static(value))) => value,
        _ => return SymInt::Unknown,
    };
    if step <= 0 {
        return SymInt::Unknown;
    }
    let mut start = if start == MAX_INT { 0 } else { start };
    let mut end = end;
    if start < 0 {
        start += size;
    }
    if end < 0 {
        end += size;
    }
    if start < 0 {
        start = 0;
    } else if start > size {
        start = size;
    }
    if end < start {
        end = start;
    } else if end >= size {
        end = size;
    }
    floor_div(SymInt::Static(end - start + step - 1), SymInt::Static(step))
}

pub(super) fn select(input: &Shape, dim: SymInt) -> Shape {
    let sizes = input.as_ref()?;
    if sizes.is_empty() {
        return None;
    }
    let dim = wrap_dim(dim, sizes.len())?;
    let mut out = sizes.clone();
    out.remove(dim);
    Some(out)
}

pub(super) fn index_select(input: &Shape, dim: SymInt, index: &Shape) -> Shape {
    let sizes = input.as_ref()?;
    let dim = wrap_dim(dim, sizes.len())?;
    let count = match index {
        Some(index) => product(index),
        None => SymInt::Unknown,
    };
    let mut out = sizes.clone();
    if dim < out.len() {
        out[dim] = count;
    }
    Some(out)
}

pub(super) fn embedding(weight: &Shape, indices: &Shape) -> Shape {
    let indices = indices.as_ref()?;
    if indices.len() == 1 {
        return index_select(weight, SymInt::Static(0), &Some(indices.clone()));
    }
    let mut out = indices.clone();
    out.push(dim_at(weight, 1));
    Some(out)
}

/// PyTorch's `t`: a rank-2 shape reversed, ranks 0 and 1 kept.
pub(super) fn transpose_2d(input: &Shape) -> Shape {
    let sizes = input.as_ref()?;
    match sizes.len() {
        0 | 1 => Some(sizes.clone()),
        2 => Some(vec![sizes[1], sizes[0]]),
        _ => None,
    }
}

pub(super) fn transpose(input: &Shape, dim0: SymInt, dim1: SymInt) -> Shape {
    let sizes = input.as_ref()?;
    let dim0 = wrap_dim(dim0, sizes.len())?;
    let dim1 = wrap_dim(dim1, sizes.len())?;
    let mut out = sizes.clone();
    if dim0 < out.len() && dim1 < out.len() {
        out.swap(dim0, dim1);
    }
    Some(out)
}

pub(super) fn flatten(input: &Shape, start: SymInt, end: SymInt) -> Shape {
    let sizes = input.as_ref()?;
    let start = wrap_dim(start, sizes.len())?;
    let end = wrap_dim(end, sizes.len())?;
    if start > end {
        return None;
    }
    if sizes.is_empty() {
        return Some(vec![SymInt::Static(1)]);
    }
    if start == end {
        return Some(sizes.clone());
    }
    let mut out = sizes[..start].to_vec();
    out.push(product(&sizes[start..=end]));
    out.extend_from_slice(&sizes[end + 1..]);
    Some(out)
}

/// `numel(sizes) == 0 and len(sizes) == 1`: a legacy empty tensor that `cat` skips.
pub(super) fn should_skip(sizes: &[SymInt]) -> Option<bool> {
    if sizes.len() != 1 {
        return Some(false);
    }
    sizes[0].known().map(|size| size == 0)
}

pub(super) fn cat_shapes(tensors: &[Shape], dim: SymInt) -> Shape {
    let tensors: Vec<&Vec<SymInt>> = tensors
        .iter()
        .map(|shape| shape.as_ref())
        .collect::<Option<_>>()?;
    if tensors.iter().any(|sizes| sizes.is_empty()) {
        return None;
    }
    // legacy_cat_wrap_dim: the first tensor that is not a legacy empty one wraps `dim`.
    let mut wrapped = None;
    for sizes in &tensors {
        let legacy_empty = match (sizes.len(), sizes.first()) {
            (1, Some(size)) => size.known().map(|size| size == 0)?,
            _ => false,
        };
        if !legacy_empty && wrapped.is_none() {
            wrapped = Some(wrap_dim(dim, sizes.len())?);
        }
    }
    let dim = match wrapped {
        Some(dim) => dim,
        None => usize::try_from(dim.known()?).ok()?,
    };
    let mut last_kept = None;
    for sizes in &tensors {
        if !should_skip(sizes)? {
            last_kept = Some(*sizes);
        }
    }
    let Some(kept) = last_kept else {
        return Some(vec![SymInt::Static(0)]);
    };
    let mut cat_size = SymInt::Static(0);
    for sizes in &tensors {
        if !should_skip(sizes)? {
            cat_size = add(cat_size, sizes.get(dim).copied().unwrap_or(SymInt::Unknown));
        }
    }
    let mut out = kept.clone();
    if dim >= out.len() {
        return None;
    }
    out[dim] = cat_size;
    Some(out)
}

pub(super) fn cat(tensors: &ShapeArgument, dim: SymInt) -> Shape {
    match tensors {
        ShapeArgument::TensorList(Some(tensors)) => cat_shapes(tensors, dim),
        _ => None,
    }
}

pub(super) fn stack(tensors: &ShapeArgument, dim: SymInt) -> Shape {
    let ShapeArgument::TensorList(Some(tensors)) = tensors else {
        return None;
    };
    let unsqueezed: Vec<Shape> = tensors.iter().map(|shape| unsqueeze(shape, dim)).collect();
    cat_shapes(&unsqueezed, dim)
}

pub(super) fn permute(input: &Shape, dims: Option<Vec<SymInt>>) -> Shape {
    let dims = dims?;
    let rank = dims.len();
    let mut out = Vec::with_capacity(rank);
    for &dim in &dims {
        let dim = wrap_dim(dim, rank)?;
        out.push(dim_at(input, dim as i64));
    }
    Some(out)
}

pub(super) fn movedim(
    input: &Shape,
    source: Option<Vec<SymInt>>,
    destination: Option<Vec<SymInt>>,
) -> Shape {
    let sizes = input.as_ref()?;
    let rank = sizes.len();
    if rank <= 1 {
        return sizes
            .iter()
            .all(|size| size.known().is_some())
            .then(|| sizes.clone());
    }
    let (source, destination) = (source?, destination?);
    if source.len() != destination.len() {
        return None;
    }
    let source: Vec<usize> = source
        .iter()
        .map(|&dim| wrap_dim(dim, rank))
        .collect::<Option<_>>()?;
    let destination: Vec<usize> = destination
        .iter()
        .map(|&dim| wrap_dim(dim, rank))
        .collect::<Option<_>>()?;
    let mut order: Vec<Option<usize>> = vec![None; rank];
    let mut free_sources: Vec<bool> = vec![true; rank];
    let mut free_destinations: Vec<bool> = vec![true; rank];
    for (&src, &dst) in source.iter().zip(&destination) {
        order[dst] = Some(src);
        free_sources[src] = false;
        free_destinations[dst] = false;
    }
    let rest_sources: Vec<usize> = (0..rank).filter(|&i| free_sources[i]).collect();
    let rest_destinations: Vec<usize> = (0..rank).filter(|&i| free_destinations[i]).collect();
    for (&src, &dst) in rest_sources.iter().zip(&rest_destinations) {
        order[dst] = Some(src);
    }
    let order: Vec<SymInt> = order
        .into_iter()
        .map(|dim| dim.map(|dim| SymInt::Static(dim as i64)))
        .collect::<Option<_>>()?;
    permute(input, Some(order))
}

pub(super) fn view(input: &Shape, sizes: Option<Vec<SymInt>>) -> Shape {
    let sizes = sizes?;
    let numel = match input {
        Some(input) => product(input),
        None => SymInt::Unknown,
    };
    let mut new_size = SymInt::Static(1);
    let mut inferred = None;
    for (index, &size) in sizes.iter().enumerate() {
        if size.is_minus_one()? {
            if inferred.is_some() {
                return None;
            }
            inferred = Some(index);
        } else if size.is_non_negative()? {
            new_size = mul(new_size, size);
        } else {
            return None;
        }
    }
    let mut out = sizes;
    if let Some(index) = inferred {
        out[index] = floor_div(numel, new_size);
    }
    Some(out)
}

/// One output size of `expand`, as partial evaluation decides it: -1 and a constant input
/// size other than 1 keep the input size; otherwise a constant target is the output, whatever
/// the input size (integer refinement makes both branches that constant).
pub(super) fn expand_size(size: SymInt, target: SymInt) -> SymInt {
    if target.is_minus_one() == Some(true) {
        return size;
    }
    match (size, target) {
        // `size != target` leads to a branch that raises unless the size is 1, so the value
        // that survives is the size itself (even when the branch is certain to raise).
        (SymInt::Static(value), _) if value != 1 => size,
        (_, SymInt::Static(_)) => target,
        _ if size == target && size != SymInt::Unknown => size,
        _ => SymInt::Unknown,
    }
}

pub(super) fn expand(input: &Shape, sizes: Option<Vec<SymInt>>) -> Shape {
    let sizes = sizes?;
    if sizes.is_empty() {
        return Some(sizes);
    }
    let rank = sizes.len();
    let mut out = Vec::with_capacity(rank);
    for (i, &target) in sizes.iter().enumerate() {
        let offset = rank - 1 - i;
        let size = match input {
            Some(input) if offset < input.len() => input[input.len() - 1 - offset],
            Some(_) => SymInt::Static(1),
            None => SymInt::Unknown,
        };
        out.push(expand_size(size, target));
    }
    Some(out)
}
