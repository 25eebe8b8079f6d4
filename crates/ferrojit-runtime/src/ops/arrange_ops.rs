//! Rearranging, diagonal, closeness, search and index-update operators (`movedim`,
//! `rot90`, `tensor_split`, `unfold`, `diag`, `trace`, `isclose`, `searchsorted`,
//! `index_add`, `index_fill`, `take_along_dim`, `rms_norm`, ...) under their
//! native_functions.yaml schemas, with the `_` and `.out` overloads PyTorch has.

use std::sync::Arc;

use ferrojit_tensor::ops::binary::BinaryOp;
use ferrojit_tensor::{DType, Scalar, Tensor, TensorError};

use super::binding::{in_place_from_functional, out_from_functional, typed};
use super::core_ops::{arg, one, reg, tensor, tensor_list, Args, Declarations, Outputs};
use super::{optional_str, optional_tensor, wrapped};
use crate::error::Result;
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;

/// Writes a functional result into the `out=` argument at `index` (resizing it as ATen's
/// `resize_output` does) and returns it.
fn out(a: &Args, index: usize, result: Tensor) -> Result<Outputs> {
    one(result.write_into_out(&*tensor(a, index)?)?)
}

/// The bool argument at `index`.
fn flag(a: &Args, index: usize) -> Result<bool> {
    arg(a, index)?.to_bool()
}

/// The int argument at `index`.
fn int(a: &Args, index: usize) -> Result<i64> {
    arg(a, index)?.to_int()
}

/// The float argument at `index`.
fn float(a: &Args, index: usize) -> Result<f64> {
    arg(a, index)?.to_double()
}

/// View, rearranging and diagonal operators.
fn register_shape_ops(r: &mut Declarations) {
    // `type_as` is `self.to(other.dtype())`: the same tensor when the dtype already matches.
    reg(
        r,
        "aten::type_as(Tensor self, Tensor other) -> Tensor",
        |a| one(tensor(a, 0)?.to_dtype(tensor(a, 1)?.dtype())),
    );
    reg(r, "aten::ravel(Tensor(a) self) -> Tensor(a)", |a| {
        one(tensor(a, 0)?.ravel()?)
    });
    reg(
        r,
        "aten::broadcast_to(Tensor(a) self, SymInt[] size) -> Tensor(a)",
        |a| one(tensor(a, 0)?.expand(&arg(a, 1)?.to_int_vec()?)?),
    );
    reg(
        r,
        "aten::movedim.int(Tensor(a) self, int source, int destination) -> Tensor(a)",
        |a| one(tensor(a, 0)?.movedim(&[int(a, 1)?], &[int(a, 2)?])?),
    );
    reg(
        r,
        "aten::movedim.intlist(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)",
        |a| one(tensor(a, 0)?.movedim(&arg(a, 1)?.to_int_vec()?, &arg(a, 2)?.to_int_vec()?)?),
    );
    reg(r, "aten::fliplr(Tensor self) -> Tensor", |a| {
        one(tensor(a, 0)?.fliplr()?)
    });
    reg(r, "aten::flipud(Tensor self) -> Tensor", |a| {
        one(tensor(a, 0)?.flipud()?)
    });
    let rot90 = |a: &Args| -> Result<Tensor> {
        Ok(tensor(a, 0)?.rot90(int(a, 1)?, &arg(a, 2)?.to_int_vec()?)?)
    };
    reg(
        r,
        "aten::rot90(Tensor self, int k=1, int[] dims=[0, 1]) -> Tensor",
        move |a| one(rot90(a)?),
    );
    reg(
        r,
        "aten::rot90.out(Tensor self, int k=1, int[] dims=[0, 1], *, Tensor(a!) out) -> Tensor(a!)",
        move |a| out(a, 3, rot90(a)?),
    );
    reg(r, "aten::tensor_split.sections(Tensor(a -> *) self, SymInt sections, int dim=0) -> Tensor(a)[]", |a| {
        tensor_list(tensor(a, 0)?.tensor_split_sections(int(a, 1)?, int(a, 2)?)?)
    });
    reg(r, "aten::tensor_split.indices(Tensor(a -> *) self, SymInt[] indices, int dim=0) -> Tensor(a)[]", |a| {
        tensor_list(tensor(a, 0)?.tensor_split_indices(&arg(a, 1)?.to_int_vec()?, int(a, 2)?)?)
    });
    reg(r, "aten::tensor_split.tensor_indices_or_sections(Tensor(a -> *) self, Tensor tensor_indices_or_sections, int dim=0) -> Tensor(a)[]", |a| {
        tensor_list(tensor(a, 0)?.tensor_split_tensor(&*tensor(a, 1)?, int(a, 2)?)?)
    });
    reg(
        r,
        "aten::unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)",
        |a| one(tensor(a, 0)?.unfold(int(a, 1)?, int(a, 2)?, int(a, 3)?)?),
    );
    reg(
        r,
        "aten::diag(Tensor self, int diagonal=0) -> Tensor",
        |a| one(tensor(a, 0)?.diag(int(a, 1)?)?),
    );
    reg(
        r,
        "aten::diag.out(Tensor self, int diagonal=0, *, Tensor(a!) out) -> Tensor(a!)",
        |a| out(a, 2, tensor(a, 0)?.diag(int(a, 1)?)?),
    );
    reg(r, "aten::trace(Tensor self) -> Tensor", |a| {
        one(tensor(a, 0)?.trace()?)
    });
    reg(
        r,
        "aten::trace.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
        |a| out(a, 1, tensor(a, 0)?.trace()?),
    );
}

/// Pointwise math and closeness operators.
fn register_math_ops(r: &mut Declarations) {
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
    reg(r, "aten::isclose(Tensor self, Tensor other, float rtol=1.0000000000000001e-05, float atol=1e-08, bool equal_nan=False) -> Tensor", |a| {
        one(tensor(a, 0)?.isclose(&*tensor(a, 1)?, float(a, 2)?, float(a, 3)?, flag(a, 4)?)?)
    });
    reg(r, "aten::allclose(Tensor self, Tensor other, float rtol=1.0000000000000001e-05, float atol=1e-08, bool equal_nan=False) -> bool", |a| {
        let close = tensor(a, 0)?.allclose(&*tensor(a, 1)?, float(a, 2)?, float(a, 3)?, flag(a, 4)?)?;
        Ok(vec![IValue::from(close)])
    });
    reg(r, "aten::equal(Tensor self, Tensor other) -> bool", |a| {
        Ok(vec![IValue::from(tensor(a, 0)?.equal(&*tensor(a, 1)?)?)])
    });
}

/// `searchsorted` with the values (tensor or scalar) already turned into a tensor.
fn searchsorted(a: &Args, values: &Tensor) -> Result<Tensor> {
    let sorter = optional_tensor(arg(a, 5)?)?;
    Ok(tensor(a, 0)?.searchsorted(
        values,
        flag(a, 2)?,
        flag(a, 3)?,
        optional_str(arg(a, 4)?)?,
        sorter.as_deref(),
    )?)
}

/// `searchsorted`/`bucketize` `out=`: ATen refuses an `out` whose dtype is not the one
/// `out_int32` asks for (int32 or int64), instead of casting into it.
fn search_out(a: &Args, out_index: usize, out_int32: bool, result: Tensor) -> Result<Outputs> {
    let target = tensor(a, out_index)?;
    let wanted = if out_int32 {
        DType::Int32
    } else {
        DType::Int64
    };
    if target.dtype() != wanted {
        return Err(TensorError::InvalidArgument(format!(
            "torch.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) or Long(int64) depending on whether out_int32 flag is True, but we got output tensor's dtype {} and out_int32 flag is {}",
            target.dtype().scalar_type_name(),
            if out_int32 { "True" } else { "False" }
        ))
        .into());
    }
    out(a, out_index, result)
}

/// `bucketize` with the input (tensor or scalar) already turned into a tensor.
fn bucketize(a: &Args, input: &Tensor) -> Result<Tensor> {
    Ok(input.bucketize(&*tensor(a, 1)?, flag(a, 2)?, flag(a, 3)?)?)
}

/// Sorted-sequence search operators.
fn register_search_ops(r: &mut Declarations) {
    reg(r, "aten::searchsorted.Tensor(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, bool right=False, str? side=None, Tensor? sorter=None) -> Tensor", |a| {
        one(searchsorted(a, &*tensor(a, 1)?)?)
    });
    reg(r, "aten::searchsorted.Scalar(Tensor sorted_sequence, Scalar self, *, bool out_int32=False, bool right=False, str? side=None, Tensor? sorter=None) -> Tensor", |a| {
        one(searchsorted(a, &wrapped(arg(a, 1)?)?)?)
    });
    reg(r, "aten::searchsorted.Tensor_out(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, bool right=False, str? side=None, Tensor? sorter=None, Tensor(a!) out) -> Tensor(a!)", |a| {
        search_out(a, 6, flag(a, 2)?, searchsorted(a, &*tensor(a, 1)?)?)
    });
    reg(r, "aten::searchsorted.Scalar_out(Tensor sorted_sequence, Scalar self, *, bool out_int32=False, bool right=False, str? side=None, Tensor? sorter=None, Tensor(a!) out) -> Tensor(a!)", |a| {
        search_out(a, 6, flag(a, 2)?, searchsorted(a, &wrapped(arg(a, 1)?)?)?)
    });
    reg(r, "aten::bucketize.Tensor(Tensor self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor", |a| {
        one(bucketize(a, &*tensor(a, 0)?)?)
    });
    reg(r, "aten::bucketize.Scalar(Scalar self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor", |a| {
        one(bucketize(a, &wrapped(arg(a, 0)?)?)?)
    });
    reg(r, "aten::bucketize.Tensor_out(Tensor self, Tensor boundaries, *, bool out_int32=False, bool right=False, Tensor(a!) out) -> Tensor(a!)", |a| {
        search_out(a, 4, flag(a, 2)?, bucketize(a, &*tensor(a, 0)?)?)
    });
    reg(r, "aten::bucketize.Scalar_out(Scalar self, Tensor boundaries, *, bool out_int32=False, bool right=False, Tensor(a!) out) -> Tensor(a!)", |a| {
        search_out(a, 4, flag(a, 2)?, bucketize(a, &wrapped(arg(a, 0)?)?)?)
    });
}

/// Index-wise update, gather and normalization operators.
fn register_index_ops(r: &mut Declarations) {
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
    ]);
    reg(r, "aten::rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor", |a| {
        let weight = optional_tensor(arg(a, 2)?)?;
        let eps = match arg(a, 3)? {
            IValue::None => None,
            other => Some(other.to_double()?),
        };
        one(tensor(a, 0)?.rms_norm(&arg(a, 1)?.to_int_vec()?, weight.as_deref(), eps)?)
    });
}

type Input = Arc<Tensor>;

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
    let mut declarations = Declarations::new();
    register_shape_ops(&mut declarations);
    register_math_ops(&mut declarations);
    register_search_ops(&mut declarations);
    register_index_ops(&mut declarations);
    declarations
}
