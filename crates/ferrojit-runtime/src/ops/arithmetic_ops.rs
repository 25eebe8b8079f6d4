//! The arithmetic operator families (`add`, `sub`, `rsub`, `mul`, `div`, `floor_divide`,
//! `remainder`, `pow`, `maximum`, `minimum`): each family's functional, in-place and `out=`
//! forms side by side, as typed kernels. Each `out=` form is made from its functional kernel
//! (compute, then write into `out`); the in-place forms keep their own kernels, which update
//! `self` where it lies instead of allocating a result.
//!
//! A `Scalar other` is a wrapped number ([`WrappedNumber`]), so that it promotes with the
//! lowest priority, as PyTorch's Python numbers do; one generic kernel serves both overloads.

use std::ops::Deref;
use std::sync::Arc;

use ferrojit_tensor::ops::binary::BinaryOp;
use ferrojit_tensor::{Scalar, Tensor};

use super::binding::{out_from_functional, typed, typed_in_place, WrappedNumber};
use crate::error::Result;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

fn add<Other: Deref<Target = Tensor>>(input: Input, other: Other, alpha: Scalar) -> Result<Tensor> {
    Ok(input.add(&other, &alpha)?)
}

fn add_<Other: Deref<Target = Tensor>>(
    input: Input,
    other: Other,
    alpha: Scalar,
) -> Result<Tensor> {
    Ok(input.add_(&other, &alpha)?)
}

fn sub<Other: Deref<Target = Tensor>>(input: Input, other: Other, alpha: Scalar) -> Result<Tensor> {
    Ok(input.sub(&other, &alpha)?)
}

fn sub_<Other: Deref<Target = Tensor>>(
    input: Input,
    other: Other,
    alpha: Scalar,
) -> Result<Tensor> {
    Ok(input.sub_(&other, &alpha)?)
}

/// `other - alpha * self`.
fn rsub<Other: Deref<Target = Tensor>>(
    input: Input,
    other: Other,
    alpha: Scalar,
) -> Result<Tensor> {
    Ok(other.sub(&input, &alpha)?)
}

fn mul<Other: Deref<Target = Tensor>>(input: Input, other: Other) -> Result<Tensor> {
    Ok(input.mul(&other)?)
}

fn mul_<Other: Deref<Target = Tensor>>(input: Input, other: Other) -> Result<Tensor> {
    Ok(input.mul_(&other)?)
}

/// True division.
fn div<Other: Deref<Target = Tensor>>(input: Input, other: Other) -> Result<Tensor> {
    Ok(input.div(&other, None)?)
}

fn div_<Other: Deref<Target = Tensor>>(input: Input, other: Other) -> Result<Tensor> {
    Ok(input.div_(&other, None)?)
}

/// Division with `rounding_mode` None (true division), "trunc" or "floor".
fn div_mode<Other: Deref<Target = Tensor>>(
    input: Input,
    other: Other,
    rounding_mode: Option<String>,
) -> Result<Tensor> {
    Ok(input.div(&other, rounding_mode.as_deref())?)
}

fn div_mode_<Other: Deref<Target = Tensor>>(
    input: Input,
    other: Other,
    rounding_mode: Option<String>,
) -> Result<Tensor> {
    Ok(input.div_(&other, rounding_mode.as_deref())?)
}

fn floor_divide<Other: Deref<Target = Tensor>>(input: Input, other: Other) -> Result<Tensor> {
    Ok(input.div(&other, Some("floor"))?)
}

/// A broadcasting binary operator of the tensor library, applied in place.
fn binary_in_place<Other: Deref<Target = Tensor>>(
    op: BinaryOp,
) -> impl Fn(Input, Other) -> Result<Tensor> + Clone + Send + Sync + 'static {
    move |input: Input, other: Other| Ok(input.binary_(&other, op)?)
}

/// A broadcasting binary operator of the tensor library.
fn binary<Other: Deref<Target = Tensor>>(
    op: BinaryOp,
) -> impl Fn(Input, Other) -> Result<Tensor> + Clone + Send + Sync + 'static {
    move |input: Input, other: Other| Ok(input.binary(&other, op)?)
}

fn remainder<Other: Deref<Target = Tensor>>(input: Input, other: Other) -> Result<Tensor> {
    Ok(input.remainder(&other)?)
}

/// `remainder.Scalar_Tensor`: a Python number divided by a tensor.
fn remainder_of_number(number: WrappedNumber, other: Input) -> Result<Tensor> {
    Ok(number.binary(&other, BinaryOp::Remainder)?)
}

fn pow<Other: Deref<Target = Tensor>>(input: Input, exponent: Other) -> Result<Tensor> {
    Ok(input.pow(&exponent)?)
}

/// `pow.Tensor_Scalar`, whose exponents 0 and 1 fill or copy (see `Tensor::pow_scalar`).
fn pow_scalar(input: Input, exponent: Scalar) -> Result<Tensor> {
    Ok(input.pow_scalar(&exponent)?)
}

/// `pow.Scalar`: a Python number to tensor powers.
fn pow_of_number(number: WrappedNumber, exponent: Input) -> Result<Tensor> {
    Ok(number.pow(&exponent)?)
}

fn maximum(input: Input, other: Input) -> Result<Tensor> {
    Ok(input.maximum(&other)?)
}

fn minimum(input: Input, other: Input) -> Result<Tensor> {
    Ok(input.minimum(&other)?)
}

type Number = WrappedNumber;

/// Every operator of this file, in declaration order (within one name, PyTorch's).
#[rustfmt::skip]
pub fn declarations() -> Vec<OperatorDeclaration> {
    use BinaryOp::{FloorDivide, Pow, Remainder};
    vec![
        // add
        typed("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", add::<Input>),
        typed_in_place("aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)", add_::<Input>),
        out_from_functional("aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)", add::<Input>),
        typed("aten::add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", add::<Number>),
        typed_in_place("aten::add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)", add_::<Number>),
        out_from_functional("aten::add.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out) -> Tensor(a!)", add::<Number>),
        // sub
        typed("aten::sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", sub::<Input>),
        typed_in_place("aten::sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)", sub_::<Input>),
        out_from_functional("aten::sub.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)", sub::<Input>),
        typed("aten::sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", sub::<Number>),
        typed_in_place("aten::sub_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)", sub_::<Number>),
        out_from_functional("aten::sub.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out) -> Tensor(a!)", sub::<Number>),
        // rsub
        typed("aten::rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", rsub::<Input>),
        typed("aten::rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", rsub::<Number>),
        // mul
        typed("aten::mul.Tensor(Tensor self, Tensor other) -> Tensor", mul::<Input>),
        typed_in_place("aten::mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", mul_::<Input>),
        out_from_functional("aten::mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", mul::<Input>),
        typed("aten::mul.Scalar(Tensor self, Scalar other) -> Tensor", mul::<Number>),
        typed_in_place("aten::mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)", mul_::<Number>),
        out_from_functional("aten::mul.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)", mul::<Number>),
        // div
        typed("aten::div.Tensor(Tensor self, Tensor other) -> Tensor", div::<Input>),
        typed_in_place("aten::div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", div_::<Input>),
        out_from_functional("aten::div.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", div::<Input>),
        typed("aten::div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor", div_mode::<Input>),
        typed_in_place("aten::div_.Tensor_mode(Tensor(a!) self, Tensor other, *, str? rounding_mode) -> Tensor(a!)", div_mode_::<Input>),
        out_from_functional("aten::div.out_mode(Tensor self, Tensor other, *, str? rounding_mode, Tensor(a!) out) -> Tensor(a!)", div_mode::<Input>),
        typed("aten::div.Scalar(Tensor self, Scalar other) -> Tensor", div::<Number>),
        typed_in_place("aten::div_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)", div_::<Number>),
        out_from_functional("aten::div.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)", div::<Number>),
        typed("aten::div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor", div_mode::<Number>),
        typed_in_place("aten::div_.Scalar_mode(Tensor(a!) self, Scalar other, *, str? rounding_mode) -> Tensor(a!)", div_mode_::<Number>),
        out_from_functional("aten::div.Scalar_mode_out(Tensor self, Scalar other, *, str? rounding_mode, Tensor(a!) out) -> Tensor(a!)", div_mode::<Number>),
        // floor_divide
        typed("aten::floor_divide(Tensor self, Tensor other) -> Tensor", floor_divide::<Input>),
        typed_in_place("aten::floor_divide_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", binary_in_place::<Input>(FloorDivide)),
        out_from_functional("aten::floor_divide.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", floor_divide::<Input>),
        typed("aten::floor_divide.Scalar(Tensor self, Scalar other) -> Tensor", floor_divide::<Number>),
        typed_in_place("aten::floor_divide_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)", binary_in_place::<Number>(FloorDivide)),
        // remainder
        typed("aten::remainder.Scalar(Tensor self, Scalar other) -> Tensor", remainder::<Number>),
        typed("aten::remainder.Tensor(Tensor self, Tensor other) -> Tensor", remainder::<Input>),
        typed_in_place("aten::remainder_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", binary_in_place::<Input>(Remainder)),
        typed_in_place("aten::remainder_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)", binary_in_place::<Number>(Remainder)),
        out_from_functional("aten::remainder.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", remainder::<Input>),
        typed("aten::remainder.Scalar_Tensor(Scalar self, Tensor other) -> Tensor", remainder_of_number),
        // pow
        typed("aten::pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor", pow::<Input>),
        out_from_functional("aten::pow.Tensor_Tensor_out(Tensor self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)", pow::<Input>),
        typed("aten::pow.Scalar(Scalar self, Tensor exponent) -> Tensor", pow_of_number),
        typed("aten::pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor", pow_scalar),
        typed_in_place("aten::pow_.Scalar(Tensor(a!) self, Scalar exponent) -> Tensor(a!)", binary_in_place::<Number>(Pow)),
        typed_in_place("aten::pow_.Tensor(Tensor(a!) self, Tensor exponent) -> Tensor(a!)", binary_in_place::<Input>(Pow)),
        // The out= form computes through the kernel for every exponent (no fill for 0 or
        // copy for 1), as before: the functional `pow_scalar` is not its functional form.
        out_from_functional("aten::pow.Tensor_Scalar_out(Tensor self, Scalar exponent, *, Tensor(a!) out) -> Tensor(a!)", binary::<Number>(Pow)),
        // maximum, minimum
        typed("aten::maximum(Tensor self, Tensor other) -> Tensor", maximum),
        out_from_functional("aten::maximum.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", maximum),
        typed("aten::minimum(Tensor self, Tensor other) -> Tensor", minimum),
        out_from_functional("aten::minimum.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", minimum),
    ]
}
