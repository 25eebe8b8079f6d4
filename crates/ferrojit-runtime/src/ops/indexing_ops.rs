//! Indexing operators: advanced indexing, index_put_, index_select, gather, the scatter
//! family, masked_select/masked_scatter, nonzero, take and single-argument `where`.

use ferrojit_tensor::Tensor;

use super::nn_ops::tensor_list;
use super::{optional_str, pop_array, push, scalar, KernelTableEntry};
use crate::error::Result;
use crate::ivalue::IValue;
use crate::registry::Stack;

/// A `Tensor?[]` argument.
fn optional_tensor_list(value: &IValue) -> Result<Vec<Option<Tensor>>> {
    value
        .to_list()?
        .to_vec()
        .into_iter()
        .map(|v| match v {
            IValue::None => Ok(None),
            other => other.into_tensor().map(Some),
        })
        .collect()
}

fn index(stack: &mut Stack) -> Result<()> {
    let [s, indices] = pop_array::<2>(stack)?;
    let r = s
        .to_tensor()?
        .index_tensor(&optional_tensor_list(&indices)?)?;
    push(stack, r)
}

fn index_put_(stack: &mut Stack) -> Result<()> {
    let [s, indices, values, accumulate] = pop_array::<4>(stack)?;
    s.to_tensor()?.index_put_(
        &optional_tensor_list(&indices)?,
        &*values.to_tensor()?,
        accumulate.to_bool()?,
    )?;
    push(stack, s)
}

fn index_put(stack: &mut Stack) -> Result<()> {
    let [s, indices, values, accumulate] = pop_array::<4>(stack)?;
    let copy = s.to_tensor()?.clone_tensor();
    copy.index_put_(
        &optional_tensor_list(&indices)?,
        &*values.to_tensor()?,
        accumulate.to_bool()?,
    )?;
    push(stack, copy)
}

fn index_select(stack: &mut Stack) -> Result<()> {
    let [s, dim, idx] = pop_array::<3>(stack)?;
    push(
        stack,
        s.to_tensor()?
            .index_select(dim.to_int()?, &*idx.to_tensor()?)?,
    )
}

fn gather(stack: &mut Stack) -> Result<()> {
    let [s, dim, idx, _sparse_grad] = pop_array::<4>(stack)?;
    push(
        stack,
        s.to_tensor()?
            .gather_index(dim.to_int()?, &*idx.to_tensor()?)?,
    )
}

fn scatter_src(stack: &mut Stack) -> Result<()> {
    let [s, dim, idx, src] = pop_array::<4>(stack)?;
    push(
        stack,
        s.to_tensor()?
            .scatter_src(dim.to_int()?, &*idx.to_tensor()?, &*src.to_tensor()?, None)?,
    )
}

fn scatter_value(stack: &mut Stack) -> Result<()> {
    let [s, dim, idx, value] = pop_array::<4>(stack)?;
    push(
        stack,
        s.to_tensor()?
            .scatter_value(dim.to_int()?, &*idx.to_tensor()?, &scalar(&value)?, None)?,
    )
}

fn scatter_reduce_src(stack: &mut Stack) -> Result<()> {
    let [s, dim, idx, src, reduce] = pop_array::<5>(stack)?;
    let r = s.to_tensor()?.scatter_src(
        dim.to_int()?,
        &*idx.to_tensor()?,
        &*src.to_tensor()?,
        optional_str(&reduce)?,
    )?;
    push(stack, r)
}

fn scatter_reduce_value(stack: &mut Stack) -> Result<()> {
    let [s, dim, idx, value, reduce] = pop_array::<5>(stack)?;
    let r = s.to_tensor()?.scatter_value(
        dim.to_int()?,
        &*idx.to_tensor()?,
        &scalar(&value)?,
        optional_str(&reduce)?,
    )?;
    push(stack, r)
}

/// Runs an out-of-place kernel and copies its result into `self` (the first argument).
fn in_place(stack: &mut Stack, kernel: fn(&mut Stack) -> Result<()>, arity: usize) -> Result<()> {
    let target = stack
        .len()
        .checked_sub(arity)
        .and_then(|i| stack.get(i).cloned())
        .ok_or_else(|| {
            crate::error::RuntimeError::InvalidGraph("operand stack underflow".into())
        })?;
    kernel(stack)?;
    let [result] = pop_array::<1>(stack)?;
    target.to_tensor()?.copy_(&*result.to_tensor()?)?;
    push(stack, target)
}

fn scatter_src_(stack: &mut Stack) -> Result<()> {
    in_place(stack, scatter_src, 4)
}
fn scatter_value_(stack: &mut Stack) -> Result<()> {
    in_place(stack, scatter_value, 4)
}
fn scatter_reduce_src_(stack: &mut Stack) -> Result<()> {
    in_place(stack, scatter_reduce_src, 5)
}
fn scatter_reduce_value_(stack: &mut Stack) -> Result<()> {
    in_place(stack, scatter_reduce_value, 5)
}

fn scatter_add(stack: &mut Stack) -> Result<()> {
    let [s, dim, idx, src] = pop_array::<4>(stack)?;
    push(
        stack,
        s.to_tensor()?
            .scatter_add(dim.to_int()?, &*idx.to_tensor()?, &*src.to_tensor()?)?,
    )
}

fn scatter_add_(stack: &mut Stack) -> Result<()> {
    in_place(stack, scatter_add, 4)
}

fn scatter_reduce_two(stack: &mut Stack) -> Result<()> {
    let [s, dim, idx, src, reduce, include_self] = pop_array::<6>(stack)?;
    let r = s.to_tensor()?.scatter_reduce(
        dim.to_int()?,
        &*idx.to_tensor()?,
        &*src.to_tensor()?,
        reduce.to_str()?,
        include_self.to_bool()?,
    )?;
    push(stack, r)
}

fn scatter_reduce_two_(stack: &mut Stack) -> Result<()> {
    in_place(stack, scatter_reduce_two, 6)
}

fn masked_select(stack: &mut Stack) -> Result<()> {
    let [s, mask] = pop_array::<2>(stack)?;
    push(stack, s.to_tensor()?.masked_select(&*mask.to_tensor()?)?)
}

fn masked_scatter(stack: &mut Stack) -> Result<()> {
    let [s, mask, source] = pop_array::<3>(stack)?;
    push(
        stack,
        s.to_tensor()?
            .masked_scatter(&*mask.to_tensor()?, &*source.to_tensor()?)?,
    )
}

fn masked_scatter_(stack: &mut Stack) -> Result<()> {
    let [s, mask, source] = pop_array::<3>(stack)?;
    let t = s.to_tensor()?;
    let r = t.masked_scatter(&*mask.to_tensor()?, &*source.to_tensor()?)?;
    if r.sizes() != t.sizes() {
        return Err(ferrojit_tensor::TensorError::OutputShapeMismatch {
            output: t.sizes().to_vec(),
            broadcast: r.sizes().to_vec(),
        }
        .into());
    }
    t.copy_(&r)?;
    push(stack, s)
}

fn nonzero(stack: &mut Stack) -> Result<()> {
    let [s] = pop_array::<1>(stack)?;
    push(stack, s.to_tensor()?.nonzero()?)
}

fn nonzero_numpy(stack: &mut Stack) -> Result<()> {
    let [s] = pop_array::<1>(stack)?;
    push(stack, tensor_list(s.to_tensor()?.nonzero_tuple()?))
}

fn take(stack: &mut Stack) -> Result<()> {
    let [s, idx] = pop_array::<2>(stack)?;
    push(stack, s.to_tensor()?.take(&*idx.to_tensor()?)?)
}

#[rustfmt::skip]
pub const TABLE: &[KernelTableEntry] = &[
    ("aten::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor", index),
    ("aten::index.Tensor_hacked_twin(Tensor self, Tensor[] indices) -> Tensor", index),
    ("aten::index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)", index_put_),
    ("aten::index_put_.hacked_twin(Tensor(a!) self, Tensor[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)", index_put_),
    ("aten::index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor", index_put),
    ("aten::index_put.hacked_twin(Tensor self, Tensor[] indices, Tensor values, bool accumulate=False) -> Tensor", index_put),
    ("aten::index_select(Tensor self, int dim, Tensor index) -> Tensor", index_select),
    ("aten::gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor", gather),
    ("aten::scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", scatter_src),
    ("aten::scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor", scatter_value),
    ("aten::scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor", scatter_reduce_src),
    ("aten::scatter.value_reduce(Tensor self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor", scatter_reduce_value),
    ("aten::scatter_.src(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)", scatter_src_),
    ("aten::scatter_.value(Tensor(a!) self, int dim, Tensor index, Scalar value) -> Tensor(a!)", scatter_value_),
    ("aten::scatter_.reduce(Tensor(a!) self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor(a!)", scatter_reduce_src_),
    ("aten::scatter_.value_reduce(Tensor(a!) self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor(a!)", scatter_reduce_value_),
    ("aten::scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", scatter_add),
    ("aten::scatter_add_(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)", scatter_add_),
    ("aten::scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor", scatter_reduce_two),
    ("aten::scatter_reduce_.two(Tensor(a!) self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor(a!)", scatter_reduce_two_),
    ("aten::masked_select(Tensor self, Tensor mask) -> Tensor", masked_select),
    ("aten::masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor", masked_scatter),
    ("aten::masked_scatter_(Tensor(a!) self, Tensor mask, Tensor source) -> Tensor(a!)", masked_scatter_),
    ("aten::nonzero(Tensor self) -> Tensor", nonzero),
    ("aten::nonzero_numpy(Tensor self) -> Tensor[]", nonzero_numpy),
    ("aten::where(Tensor condition) -> Tensor[]", nonzero_numpy),
    ("aten::take(Tensor self, Tensor index) -> Tensor", take),
];
