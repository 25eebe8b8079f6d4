//! Integer arithmetic on sizes that may be unknown, and the broadcasting rule, as the shape
//! functions use them.

use super::{Shape, SymInt};

/// `sizes[index]` (Python indexing, negative from the end) when the rank is known and the
/// index is in range; unknown otherwise.
pub(super) fn dim_at(shape: &Shape, index: i64) -> SymInt {
    let Some(sizes) = shape else {
        return SymInt::Unknown;
    };
    let position = if index < 0 {
        index + sizes.len() as i64
    } else {
        index
    };
    usize::try_from(position)
        .ok()
        .and_then(|position| sizes.get(position).copied())
        .unwrap_or(SymInt::Unknown)
}

pub(super) fn list_at(list: &Option<Vec<SymInt>>, index: usize) -> SymInt {
    list.as_ref()
        .and_then(|list| list.get(index).copied())
        .unwrap_or(SymInt::Unknown)
}

pub(super) fn add(a: SymInt, b: SymInt) -> SymInt {
    match (a.known(), b.known()) {
        (Some(a), Some(b)) => a.checked_add(b).map_or(SymInt::Unknown, SymInt::Static),
        _ => SymInt::Unknown,
    }
}

pub(super) fn sub(a: SymInt, b: SymInt) -> SymInt {
    match (a.known(), b.known()) {
        (Some(a), Some(b)) => a.checked_sub(b).map_or(SymInt::Unknown, SymInt::Static),
        _ => SymInt::Unknown,
    }
}

pub(super) fn mul(a: SymInt, b: SymInt) -> SymInt {
    match (a.known(), b.known()) {
        (Some(a), Some(b)) => a.checked_mul(b).map_or(SymInt::Unknown, SymInt::Static),
        _ => SymInt::Unknown,
    }
}

/// Python's `a // b` (rounding towards negative infinity).
pub(super) fn floor_div(a: SymInt, b: SymInt) -> SymInt {
    match (a.known(), b.known()) {
        (Some(a), Some(b)) if b != 0 => match a.checked_div(b) {
            // Truncating division rounds towards zero; Python rounds down.
            Some(quotient) if a % b != 0 && ((a < 0) != (b < 0)) => SymInt::Static(quotient - 1),
            Some(quotient) => SymInt::Static(quotient),
            None => SymInt::Unknown,
        },
        _ => SymInt::Unknown,
    }
}

/// The product of `sizes` (PyTorch's `numel`/`multiply_integers`).
pub(super) fn product(sizes: &[SymInt]) -> SymInt {
    sizes
        .iter()
        .fold(SymInt::Static(1), |acc, &size| mul(acc, size))
}

/// `maybe_wrap_dim(dim, rank)`: the dimension counted from the front, when it is a constant
/// in range (a scalar counts as rank 1).
pub(super) fn wrap_dim(dim: SymInt, rank: usize) -> Option<usize> {
    let dim = dim.known()?;
    let rank = rank.max(1) as i64;
    if dim < -rank || dim >= rank {
        return None;
    }
    Some(if dim < 0 { dim + rank } else { dim } as usize)
}

/// One output size of `broadcast(a, b)`: `sizeB if sizeA == 1 else sizeA`.
pub(super) fn broadcast_size(a: SymInt, b: SymInt) -> SymInt {
    match a {
        SymInt::Static(1) => b,
        SymInt::Static(_) => a,
        // Equal symbols become the same value, so both branches give it.
        _ if a == b && a != SymInt::Unknown => a,
        _ => SymInt::Unknown,
    }
}

pub(super) fn broadcast(a: &Shape, b: &Shape) -> Shape {
    let (a, b) = (a.as_ref()?, b.as_ref()?);
    let rank = a.len().max(b.len());
    let size = |sizes: &Vec<SymInt>, i: usize| {
        let offset = rank - i;
        if offset <= sizes.len() {
            sizes[sizes.len() - offset]
        } else {
            SymInt::Static(1)
        }
    };
    Some(
        (0..rank)
            .map(|i| broadcast_size(size(a, i), size(b, i)))
            .collect(),
    )
}
