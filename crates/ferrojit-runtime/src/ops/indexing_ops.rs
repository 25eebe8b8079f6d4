//! Indexing operators: advanced indexing, index_put_, index_select, gather, the scatter
//! family, masked_select/masked_scatter, nonzero, take and single-argument `where`, as typed
//! kernels. The in-place scatter and masked_scatter forms are made from their functional
//! kernels (the result has `self`'s shape and dtype, and is written into `self`).

use std::sync::Arc;

use ferrojit_tensor::{Scalar, Tensor};

use super::binding::{in_place_from_functional, typed, typed_in_place};
use super::creation_ops::Unread;
use crate::error::Result;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// A `Tensor?[] indices` (or the hacked twins' `Tensor[] indices`) argument, as the tensor
/// library takes it.
type Indices = Vec<Option<Input>>;

fn owned_indices(indices: Indices) -> Vec<Option<Tensor>> {
    indices
        .into_iter()
        .map(|index| index.map(Arc::unwrap_or_clone))
        .collect()
}

fn index(input: Input, indices: Indices) -> Result<Tensor> {
    Ok(input.index_tensor(&owned_indices(indices))?)
}

/// `index_put_` writes the indexed places of `self` where they lie, without a copy of the
/// whole tensor, so it binds the tensor library's in-place kernel.
fn index_put_(input: Input, indices: Indices, values: Input, accumulate: bool) -> Result<Tensor> {
    Ok(input.index_put_(&owned_indices(indices), &values, accumulate)?)
}

/// `index_put`: `index_put_` on a copy of `self`.
fn index_put(input: Input, indices: Indices, values: Input, accumulate: bool) -> Result<Tensor> {
    let copy = input.clone_tensor();
    copy.index_put_(&owned_indices(indices), &values, accumulate)?;
    Ok(copy)
}

fn index_select(input: Input, dim: i64, index: Input) -> Result<Tensor> {
    Ok(input.index_select(dim, &index)?)
}

fn gather(input: Input, dim: i64, index: Input, _sparse_grad: Unread) -> Result<Tensor> {
    Ok(input.gather_index(dim, &index)?)
}

fn scatter_src(input: Input, dim: i64, index: Input, src: Input) -> Result<Tensor> {
    Ok(input.scatter_src(dim, &index, &src, None)?)
}

fn scatter_value(input: Input, dim: i64, index: Input, value: Scalar) -> Result<Tensor> {
    Ok(input.scatter_value(dim, &index, &value, None)?)
}

fn scatter_reduce_src(
    input: Input,
    dim: i64,
    index: Input,
    src: Input,
    reduce: String,
) -> Result<Tensor> {
    Ok(input.scatter_src(dim, &index, &src, Some(&reduce))?)
}

fn scatter_reduce_value(
    input: Input,
    dim: i64,
    index: Input,
    value: Scalar,
    reduce: String,
) -> Result<Tensor> {
    Ok(input.scatter_value(dim, &index, &value, Some(&reduce))?)
}

fn scatter_add(input: Input, dim: i64, index: Input, src: Input) -> Result<Tensor> {
    Ok(input.scatter_add(dim, &index, &src)?)
}

fn scatter_reduce_two(
    input: Input,
    dim: i64,
    index: Input,
    src: Input,
    reduce: String,
    include_self: bool,
) -> Result<Tensor> {
    Ok(input.scatter_reduce(dim, &index, &src, &reduce, include_self)?)
}

fn masked_select(input: Input, mask: Input) -> Result<Tensor> {
    Ok(input.masked_select(&mask)?)
}

fn masked_scatter(input: Input, mask: Input, source: Input) -> Result<Tensor> {
    Ok(input.masked_scatter(&mask, &source)?)
}

fn nonzero(input: Input) -> Result<Tensor> {
    Ok(input.nonzero()?)
}

fn nonzero_numpy(input: Input) -> Result<Vec<Tensor>> {
    Ok(input.nonzero_tuple()?)
}

fn take(input: Input, index: Input) -> Result<Tensor> {
    Ok(input.take(&index)?)
}

/// Every operator of this file, in declaration order (within one name, PyTorch's).
#[rustfmt::skip]
pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        typed("aten::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor", index),
        typed("aten::index.Tensor_hacked_twin(Tensor self, Tensor[] indices) -> Tensor", index),
        typed_in_place("aten::index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)", index_put_),
        typed_in_place("aten::index_put_.hacked_twin(Tensor(a!) self, Tensor[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)", index_put_),
        typed("aten::index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor", index_put),
        typed("aten::index_put.hacked_twin(Tensor self, Tensor[] indices, Tensor values, bool accumulate=False) -> Tensor", index_put),
        typed("aten::index_select(Tensor self, int dim, Tensor index) -> Tensor", index_select),
        typed("aten::gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor", gather),
        typed("aten::scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", scatter_src),
        typed("aten::scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor", scatter_value),
        typed("aten::scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor", scatter_reduce_src),
        typed("aten::scatter.value_reduce(Tensor self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor", scatter_reduce_value),
        in_place_from_functional("aten::scatter_.src(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)", scatter_src),
        in_place_from_functional("aten::scatter_.value(Tensor(a!) self, int dim, Tensor index, Scalar value) -> Tensor(a!)", scatter_value),
        in_place_from_functional("aten::scatter_.reduce(Tensor(a!) self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor(a!)", scatter_reduce_src),
        in_place_from_functional("aten::scatter_.value_reduce(Tensor(a!) self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor(a!)", scatter_reduce_value),
        typed("aten::scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", scatter_add),
        in_place_from_functional("aten::scatter_add_(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)", scatter_add),
        typed("aten::scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor", scatter_reduce_two),
        in_place_from_functional("aten::scatter_reduce_.two(Tensor(a!) self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor(a!)", scatter_reduce_two),
        typed("aten::masked_select(Tensor self, Tensor mask) -> Tensor", masked_select),
        typed("aten::masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor", masked_scatter),
        in_place_from_functional("aten::masked_scatter_(Tensor(a!) self, Tensor mask, Tensor source) -> Tensor(a!)", masked_scatter),
        typed("aten::nonzero(Tensor self) -> Tensor", nonzero),
        typed("aten::nonzero_numpy(Tensor self) -> Tensor[]", nonzero_numpy),
        typed("aten::where(Tensor condition) -> Tensor[]", nonzero_numpy),
        typed("aten::take(Tensor self, Tensor index) -> Tensor", take),
    ]
}
