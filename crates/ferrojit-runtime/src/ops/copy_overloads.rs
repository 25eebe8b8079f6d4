//! Copy and storage overloads a runtime meets in exported and functionalised graphs:
//! `_to_copy`, `_unsafe_view`, `lift`/`lift_fresh`, the functional `zero`, `copy`, `resize`,
//! `resize_as` and `set`, the sparse-only `*_copy` accessors (refused for a strided tensor
//! as PyTorch refuses them), `_assert_async`, and the split/unbind copies that write into a
//! list of `out` tensors, as typed kernels.

use std::sync::Arc;

use ferrojit_tensor::ops::views::MemoryFormat;
use ferrojit_tensor::{DType, Tensor};

use super::binding::{typed, CpuDevice};
use super::creation_ops::Unread;
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// `_to_copy`: a new tensor of `dtype` (or `self`'s), never an alias of `self`.
#[allow(clippy::too_many_arguments)]
fn to_copy(
    input: Input,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
    _non_blocking: bool,
    _memory_format: Unread,
) -> Result<Tensor> {
    let dtype = dtype.unwrap_or(input.dtype());
    if dtype == input.dtype() {
        Ok(input.clone_tensor())
    } else {
        Ok(input.to_dtype(dtype))
    }
}

/// `_unsafe_view`: `view`'s values without its stride check (a copy where the strides do
/// not allow a view).
fn unsafe_view(input: Input, size: Vec<i64>) -> Result<Tensor> {
    Ok(input.reshape(&size)?)
}

/// `lift` and `lift_fresh`: the identity outside of functionalisation.
fn lift(input: Input) -> Result<Tensor> {
    Ok(Tensor::clone(&input))
}

/// The functional `zero`: zeros of `self`'s shape and dtype.
fn zero(input: Input) -> Result<Tensor> {
    Ok(Tensor::zeros(input.sizes(), input.dtype())?)
}

/// The functional `copy`: a tensor of `self`'s shape and dtype holding `src` broadcast to it.
fn copy(input: Input, src: Input, _non_blocking: bool) -> Result<Tensor> {
    // `src` must broadcast to `self`'s shape; a mismatch fails with the broadcast message.
    ferrojit_tensor::broadcast_shapes(input.sizes(), src.sizes())?;
    let result = input.clone_tensor();
    result.copy_(&src)?;
    Ok(result)
}

/// The functional `resize`: a copy of `self` resized to `size` (its first elements kept;
/// new ones zero, where PyTorch leaves them uninitialised).
fn resize(input: Input, size: Vec<i64>, _memory_format: Unread) -> Result<Tensor> {
    Ok(input
        .contiguous()
        .clone_tensor()
        .resized(&size, MemoryFormat::Contiguous)?)
}

fn resize_as(input: Input, template: Input, memory_format: Unread) -> Result<Tensor> {
    let size: Vec<i64> = template.sizes().iter().map(|&size| size as i64).collect();
    resize(input, size, memory_format)
}

/// The functional `set`: what `self.set_()` leaves, an empty tensor of `self`'s dtype.
fn set_empty(input: Input) -> Result<Tensor> {
    Ok(Tensor::zeros(&[0], input.dtype())?)
}

/// The functional `set.source_Tensor`: what `self.set_(source)` leaves, `source`'s values
/// (in `source`'s dtype, which must be `self`'s).
fn set_source_tensor(input: Input, source: Input) -> Result<Tensor> {
    if input.dtype() != source.dtype() {
        return Err(RuntimeError::Other(format!(
            "Could not set tensor of type {} to a tensor of type {}",
            source.dtype().scalar_type_name(),
            input.dtype().scalar_type_name()
        )));
    }
    Ok(source.clone_tensor())
}

/// The accessors of sparse tensors, which a strided tensor refuses.
fn sparse_only(accessor: &'static str, layout: &'static str) -> impl Fn(Input) -> Result<Tensor> {
    move |_input: Input| {
        Err(RuntimeError::Other(format!(
            "{accessor} expected {layout} layout but got Strided"
        )))
    }
}

/// `_assert_async(self)`: fails unless the one element of `self` is nonzero.
fn assert_async_with(input: &Tensor, message: Option<&str>) -> Result<()> {
    let values = input.to_f64_vec();
    match values.as_slice() {
        [value] if *value != 0.0 => Ok(()),
        [_] => Err(RuntimeError::Other(message.map_or_else(
            || "Expected Tensor with single nonzero value, but got zero".to_string(),
            str::to_string,
        ))),
        [] => Err(RuntimeError::Other(
            "Boolean value of Tensor with no values is ambiguous".to_string(),
        )),
        _ => Err(RuntimeError::Other(
            "Boolean value of Tensor with more than one value is ambiguous".to_string(),
        )),
    }
}

fn assert_async(input: Input) -> Result<()> {
    assert_async_with(&input, None)
}

fn assert_async_msg(input: Input, message: String) -> Result<()> {
    assert_async_with(&input, Some(&message))
}

/// How a list-out overload writes its pieces: ATen's hand-written `*_copy` outs copy into
/// tensors that must already have each piece's shape (after checking the count, with the
/// operator's name in the message); the generated ones resize each `out`.
#[derive(Clone, Copy)]
enum ListOut {
    CopyInto(&'static str),
    Resize,
}

/// Writes `pieces` into the tensors of the `out` list, replacing each list entry's tensor
/// so that every handle to it sees the new geometry.
fn write_list_out(pieces: Vec<Tensor>, out: &IValue, how: ListOut) -> Result<()> {
    let outs = out.to_list()?.to_vec();
    if let ListOut::CopyInto(name) = how {
        if outs.len() != pieces.len() {
            return Err(RuntimeError::Other(format!(
                "{name} expected an out= argument of size {}, got size {}",
                pieces.len(),
                outs.len()
            )));
        }
    } else if outs.len() != pieces.len() {
        return Err(RuntimeError::Other(format!(
            "expected a list of {} out= tensors, got {}",
            pieces.len(),
            outs.len()
        )));
    }
    for (piece, out) in pieces.iter().zip(&outs) {
        let target = out.to_tensor()?;
        let written = match how {
            ListOut::CopyInto(_) => target.copy_(piece)?,
            ListOut::Resize => piece.write_into_out(&target)?,
        };
        if let IValue::Tensor(cell) = out {
            cell.set(Arc::new(written));
        }
    }
    Ok(())
}

fn split_copy_out(input: Input, split_size: i64, dim: i64, out: IValue) -> Result<()> {
    let pieces = input.split(split_size, dim)?;
    write_list_out(pieces, &out, ListOut::CopyInto("split_copy_Tensor_out()"))
}

fn split_with_sizes_copy_out(input: Input, sizes: Vec<i64>, dim: i64, out: IValue) -> Result<()> {
    let pieces = input.split_with_sizes(&sizes, dim)?;
    write_list_out(pieces, &out, ListOut::CopyInto("split_with_sizes_copy_out"))
}

fn unbind_copy_out(input: Input, dim: i64, out: IValue) -> Result<()> {
    let pieces = input.unbind(dim)?;
    write_list_out(pieces, &out, ListOut::CopyInto("unbind_copy_int_out"))
}

fn unsafe_split_out(input: Input, split_size: i64, dim: i64, out: IValue) -> Result<()> {
    let pieces = input.split(split_size, dim)?;
    write_list_out(pieces, &out, ListOut::Resize)
}

fn unsafe_split_with_sizes_out(input: Input, sizes: Vec<i64>, dim: i64, out: IValue) -> Result<()> {
    let pieces = input.split_with_sizes(&sizes, dim)?;
    write_list_out(pieces, &out, ListOut::Resize)
}

/// Every operator of this file, in declaration order (within one name, PyTorch's).
#[rustfmt::skip]
pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        typed("aten::_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor", to_copy),
        typed("aten::_unsafe_view(Tensor self, SymInt[] size) -> Tensor", unsafe_view),
        typed("aten::lift(Tensor self) -> Tensor", lift),
        typed("aten::lift_fresh(Tensor(a) self) -> Tensor(a)", lift),
        typed("aten::zero(Tensor self) -> Tensor", zero),
        typed("aten::copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor", copy),
        typed("aten::resize(Tensor self, SymInt[] size, *, MemoryFormat? memory_format=None) -> Tensor", resize),
        typed("aten::resize_as(Tensor self, Tensor the_template, *, MemoryFormat? memory_format=None) -> Tensor", resize_as),
        typed("aten::set(Tensor self) -> Tensor", set_empty),
        typed("aten::set.source_Tensor(Tensor self, Tensor source) -> Tensor", set_source_tensor),
        typed("aten::values_copy(Tensor self) -> Tensor", sparse_only("values", "sparse tensor")),
        typed("aten::indices_copy(Tensor self) -> Tensor", sparse_only("indices", "sparse coordinate tensor")),
        typed("aten::crow_indices_copy(Tensor self) -> Tensor", sparse_only("crow_indices", "sparse row compressed tensor")),
        typed("aten::col_indices_copy(Tensor self) -> Tensor", sparse_only("col_indices", "sparse row compressed tensor")),
        typed("aten::ccol_indices_copy(Tensor self) -> Tensor", sparse_only("ccol_indices", "sparse column compressed tensor")),
        typed("aten::row_indices_copy(Tensor self) -> Tensor", sparse_only("row_indices", "sparse column compressed tensor")),
        typed("aten::_assert_async(Tensor self) -> ()", assert_async),
        typed("aten::_assert_async.msg(Tensor self, str assert_msg) -> ()", assert_async_msg),
        typed("aten::split_copy.Tensor_out(Tensor self, SymInt split_size, int dim=0, *, Tensor(a!)[] out) -> ()", split_copy_out),
        typed("aten::split_with_sizes_copy.out(Tensor self, SymInt[] split_sizes, int dim=0, *, Tensor(a!)[] out) -> ()", split_with_sizes_copy_out),
        typed("aten::unbind_copy.int_out(Tensor self, int dim=0, *, Tensor(a!)[] out) -> ()", unbind_copy_out),
        typed("aten::unsafe_split.Tensor_out(Tensor self, SymInt split_size, int dim=0, *, Tensor(a!)[] out) -> ()", unsafe_split_out),
        typed("aten::unsafe_split_with_sizes.out(Tensor self, SymInt[] split_sizes, int dim=0, *, Tensor(a!)[] out) -> ()", unsafe_split_with_sizes_out),
    ]
}
