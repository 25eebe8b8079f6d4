//! Rearranging, diagonal, closeness, search and index-update operators (`movedim`,
//! `rot90`, `tensor_split`, `unfold`, `diag`, `trace`, `isclose`, `searchsorted`,
//! `index_add`, `index_fill`, `take_along_dim`, `rms_norm`, ...) under their
//! native_functions.yaml schemas, with the `_` and `.out` overloads PyTorch has.

use std::ops::Deref;
use std::sync::Arc;

use ferrojit_tensor::ops::binary::BinaryOp;
use ferrojit_tensor::{DType, Scalar, Tensor, TensorError};

use super::binding::{in_place_from_functional, out_from_functional, typed, WrappedNumber};
use super::core_ops::FloatArgument;
use crate::error::Result;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// View, rearranging and diagonal operators.
fn register_shape_ops(r: &mut Vec<OperatorDeclaration>) {
    r.extend([
        // `type_as` is `self.to(other.dtype())`: the same tensor when the dtype already matches.
        typed(
            "aten::type_as(Tensor self, Tensor other) -> Tensor",
            |input: Input, other: Input| Ok(input.to_dtype(other.dtype())),
        ),
        typed("aten::ravel(Tensor(a) self) -> Tensor(a)", |input: Input| {
            Ok(input.ravel()?)
        }),
        typed(
            "aten::broadcast_to(Tensor(a) self, SymInt[] size) -> Tensor(a)",
            |input: Input, size: Vec<i64>| Ok(input.expand(&size)?),
        ),
        typed(
            "aten::movedim.int(Tensor(a) self, int source, int destination) -> Tensor(a)",
            |input: Input, source: i64, destination: i64| {
                Ok(input.movedim(&[source], &[destination])?)
            },
        ),
        typed(
            "aten::movedim.intlist(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)",
            |input: Input, source: Vec<i64>, destination: Vec<i64>| {
                Ok(input.movedim(&source, &destination)?)
            },
        ),
        typed("aten::fliplr(Tensor self) -> Tensor", |input: Input| {
            Ok(input.fliplr()?)
        }),
        typed("aten::flipud(Tensor self) -> Tensor", |input: Input| {
            Ok(input.flipud()?)
        }),
        typed(
            "aten::rot90(Tensor self, int k=1, int[] dims=[0, 1]) -> Tensor",
            rot90,
        ),
        out_from_functional(
            "aten::rot90.out(Tensor self, int k=1, int[] dims=[0, 1], *, Tensor(a!) out) -> Tensor(a!)",
            rot90,
        ),
        typed(
            "aten::tensor_split.sections(Tensor(a -> *) self, SymInt sections, int dim=0) -> Tensor(a)[]",
            |input: Input, sections: i64, dim: i64| {
                Ok(input.tensor_split_sections(sections, dim)?)
            },
        ),
        typed(
            "aten::tensor_split.indices(Tensor(a -> *) self, SymInt[] indices, int dim=0) -> Tensor(a)[]",
            |input: Input, indices: Vec<i64>, dim: i64| {
                Ok(input.tensor_split_indices(&indices, dim)?)
            },
        ),
        typed(
            "aten::tensor_split.tensor_indices_or_sections(Tensor(a -> *) self, Tensor tensor_indices_or_sections, int dim=0) -> Tensor(a)[]",
            |input: Input, indices_or_sections: Input, dim: i64| {
                Ok(input.tensor_split_tensor(&indices_or_sections, dim)?)
            },
        ),
        typed(
            "aten::unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)",
            |input: Input, dimension: i64, size: i64, step: i64| {
                Ok(input.unfold(dimension, size, step)?)
            },
        ),
        typed("aten::diag(Tensor self, int diagonal=0) -> Tensor", diag),
        out_from_functional(
            "aten::diag.out(Tensor self, int diagonal=0, *, Tensor(a!) out) -> Tensor(a!)",
            diag,
        ),
        typed("aten::trace(Tensor self) -> Tensor", trace),
        out_from_functional(
            "aten::trace.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
            trace,
        ),
    ]);
}

fn rot90(input: Input, k: i64, dims: Vec<i64>) -> Result<Tensor> {
    Ok(input.rot90(k, &dims)?)
}

fn diag(input: Input, diagonal: i64) -> Result<Tensor> {
    Ok(input.diag(diagonal)?)
}

fn trace(input: Input) -> Result<Tensor> {
    Ok(input.trace()?)
}

/// Pointwise math and closeness operators.
fn register_math_ops(r: &mut Vec<OperatorDeclaration>) {
    // `square` is ATen's `pow(self, 2)`: bool squares to int64, and `square_` must be able
    // to cast that back.
    r.extend([
        typed("aten::square(Tensor self) -> Tensor", square),
        in_place_from_functional("aten::square_(Tensor(a!) self) -> Tensor(a!)", square),
        out_from_functional(
            "aten::square.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
            square,
        ),
        typed(
            "aten::logaddexp(Tensor self, Tensor other) -> Tensor",
            logaddexp,
        ),
        out_from_functional(
            "aten::logaddexp.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
            logaddexp,
        ),
        typed(
            "aten::threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor",
            threshold,
        ),
        in_place_from_functional(
            "aten::threshold_(Tensor(a!) self, Scalar threshold, Scalar value) -> Tensor(a!)",
            threshold,
        ),
        out_from_functional("aten::threshold.out(Tensor self, Scalar threshold, Scalar value, *, Tensor(a!) out) -> Tensor(a!)", threshold),
    ]);
    r.extend([
        typed("aten::isclose(Tensor self, Tensor other, float rtol=1.0000000000000001e-05, float atol=1e-08, bool equal_nan=False) -> Tensor", isclose),
        typed("aten::allclose(Tensor self, Tensor other, float rtol=1.0000000000000001e-05, float atol=1e-08, bool equal_nan=False) -> bool", allclose),
        typed(
            "aten::equal(Tensor self, Tensor other) -> bool",
            |input: Input, other: Input| Ok(input.equal(&other)?),
        ),
    ]);
}

fn isclose(
    input: Input,
    other: Input,
    rtol: FloatArgument,
    atol: FloatArgument,
    equal_nan: bool,
) -> Result<Tensor> {
    Ok(input.isclose(&other, rtol.0, atol.0, equal_nan)?)
}

fn allclose(
    input: Input,
    other: Input,
    rtol: FloatArgument,
    atol: FloatArgument,
    equal_nan: bool,
) -> Result<bool> {
    Ok(input.allclose(&other, rtol.0, atol.0, equal_nan)?)
}

/// `searchsorted`, the values a tensor or a Python number.
fn searchsorted<Values: Deref<Target = Tensor>>(
    sorted_sequence: Input,
    values: Values,
    out_int32: bool,
    right: bool,
    side: Option<String>,
    sorter: Option<Input>,
) -> Result<Tensor> {
    Ok(sorted_sequence.searchsorted(
        &values,
        out_int32,
        right,
        side.as_deref(),
        sorter.as_deref(),
    )?)
}

/// `searchsorted`'s `out=` form (see [`write_search_result`]).
fn searchsorted_out<Values: Deref<Target = Tensor>>(
    sorted_sequence: Input,
    values: Values,
    out_int32: bool,
    right: bool,
    side: Option<String>,
    sorter: Option<Input>,
    out: Input,
) -> Result<Tensor> {
    let result = searchsorted(sorted_sequence, values, out_int32, right, side, sorter)?;
    write_search_result(result, out_int32, &out)
}

/// `bucketize`, the input a tensor or a Python number.
fn bucketize<Values: Deref<Target = Tensor>>(
    input: Values,
    boundaries: Input,
    out_int32: bool,
    right: bool,
) -> Result<Tensor> {
    Ok(input.bucketize(&boundaries, out_int32, right)?)
}

/// `bucketize`'s `out=` form (see [`write_search_result`]).
fn bucketize_out<Values: Deref<Target = Tensor>>(
    input: Values,
    boundaries: Input,
    out_int32: bool,
    right: bool,
    out: Input,
) -> Result<Tensor> {
    let result = bucketize(input, boundaries, out_int32, right)?;
    write_search_result(result, out_int32, &out)
}

/// `searchsorted`/`bucketize` `out=`: ATen refuses an `out` whose dtype is not the one
/// `out_int32` asks for (int32 or int64), instead of casting into it, so these `out=` forms
/// are not made with `out_from_functional`. The check comes after the search, as ATen's.
fn write_search_result(result: Tensor, out_int32: bool, out: &Tensor) -> Result<Tensor> {
    let wanted = if out_int32 {
        DType::Int32
    } else {
        DType::Int64
    };
    if out.dtype() != wanted {
        return Err(TensorError::InvalidArgument(format!(
            "torch.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) or Long(int64) depending on whether out_int32 flag is True, but we got output tensor's dtype {} and out_int32 flag is {}",
            out.dtype().scalar_type_name(),
            if out_int32 { "True" } else { "False" }
        ))
        .into());
    }
    Ok(result.write_into_out(out)?)
}

/// Sorted-sequence search operators.
fn register_search_ops(r: &mut Vec<OperatorDeclaration>) {
    type Number = WrappedNumber;
    r.extend([
        typed("aten::searchsorted.Tensor(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, bool right=False, str? side=None, Tensor? sorter=None) -> Tensor", searchsorted::<Input>),
        typed("aten::searchsorted.Scalar(Tensor sorted_sequence, Scalar self, *, bool out_int32=False, bool right=False, str? side=None, Tensor? sorter=None) -> Tensor", searchsorted::<Number>),
        typed("aten::searchsorted.Tensor_out(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, bool right=False, str? side=None, Tensor? sorter=None, Tensor(a!) out) -> Tensor(a!)", searchsorted_out::<Input>),
        typed("aten::searchsorted.Scalar_out(Tensor sorted_sequence, Scalar self, *, bool out_int32=False, bool right=False, str? side=None, Tensor? sorter=None, Tensor(a!) out) -> Tensor(a!)", searchsorted_out::<Number>),
        typed("aten::bucketize.Tensor(Tensor self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor", bucketize::<Input>),
        typed("aten::bucketize.Scalar(Scalar self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor", bucketize::<Number>),
        typed("aten::bucketize.Tensor_out(Tensor self, Tensor boundaries, *, bool out_int32=False, bool right=False, Tensor(a!) out) -> Tensor(a!)", bucketize_out::<Input>),
        typed("aten::bucketize.Scalar_out(Scalar self, Tensor boundaries, *, bool out_int32=False, bool right=False, Tensor(a!) out) -> Tensor(a!)", bucketize_out::<Number>),
    ]);
}

/// Index-wise update, gather and normalization operators.
fn register_index_ops(r: &mut Vec<OperatorDeclaration>) {
    r.extend([
        typed("aten::index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor", index_add),
        in_place_from_functional("aten::index_add_(Tensor(a!) self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor(a!)", index_add),
        out_from_functional("aten::index_add.out(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)", index_add),
        typed(
            "aten::index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor",
            index_fill,
        ),
        typed(
            "aten::index_fill.int_Tensor(Tensor self, int dim, Tensor index, Tensor value) -> Tensor",
            index_fill_by_tensor,
        ),
        in_place_from_functional("aten::index_fill_.int_Scalar(Tensor(a!) self, int dim, Tensor index, Scalar value) -> Tensor(a!)", index_fill),
        in_place_from_functional("aten::index_fill_.int_Tensor(Tensor(a!) self, int dim, Tensor index, Tensor value) -> Tensor(a!)", index_fill_by_tensor),
        out_from_functional("aten::index_fill.int_Scalar_out(Tensor self, int dim, Tensor index, Scalar value, *, Tensor(a!) out) -> Tensor(a!)", index_fill),
        out_from_functional("aten::index_fill.int_Tensor_out(Tensor self, int dim, Tensor index, Tensor value, *, Tensor(a!) out) -> Tensor(a!)", index_fill_by_tensor),
        typed(
            "aten::take_along_dim(Tensor self, Tensor indices, int? dim=None) -> Tensor",
            take_along_dim,
        ),
        out_from_functional("aten::take_along_dim.out(Tensor self, Tensor indices, int? dim=None, *, Tensor(a!) out) -> Tensor(a!)", take_along_dim),
        typed("aten::rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor", rms_norm),
    ]);
}

fn rms_norm(
    input: Input,
    normalized_shape: Vec<i64>,
    weight: Option<Input>,
    eps: Option<FloatArgument>,
) -> Result<Tensor> {
    Ok(input.rms_norm(&normalized_shape, weight.as_deref(), eps.map(|eps| eps.0))?)
}

/// `square` is ATen's `pow(self, 2)`: bool squares to int64, and `square_` must be able to
/// cast that back.
fn square(input: Input) -> Result<Tensor> {
    Ok(input.pow_scalar(&Scalar::Int(2))?)
}

fn logaddexp(input: Input, other: Input) -> Result<Tensor> {
    Ok(input.binary(&other, BinaryOp::LogAddExp)?)
}

fn threshold(input: Input, threshold: Scalar, value: Scalar) -> Result<Tensor> {
    Ok(input.threshold(&threshold, &value)?)
}

fn index_add(input: Input, dim: i64, index: Input, source: Input, alpha: Scalar) -> Result<Tensor> {
    Ok(input.index_add(dim, &index, &source, &alpha)?)
}

fn index_fill(input: Input, dim: i64, index: Input, value: Scalar) -> Result<Tensor> {
    Ok(input.index_fill(dim, &index, &value)?)
}

fn index_fill_by_tensor(input: Input, dim: i64, index: Input, value: Input) -> Result<Tensor> {
    Ok(input.index_fill_tensor(dim, &index, &value)?)
}

fn take_along_dim(input: Input, indices: Input, dim: Option<i64>) -> Result<Tensor> {
    Ok(input.take_along_dim(&indices, dim)?)
}

/// Every operator of this file, in declaration order.
pub fn declarations() -> Vec<OperatorDeclaration> {
    let mut declarations = Vec::new();
    register_shape_ops(&mut declarations);
    register_math_ops(&mut declarations);
    register_search_ops(&mut declarations);
    register_index_ops(&mut declarations);
    declarations
}
