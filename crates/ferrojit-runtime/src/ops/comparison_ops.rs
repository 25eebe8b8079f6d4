//! The comparison families (`eq`, `ne`, `lt`, `le`, `gt`, `ge`): each one's functional,
//! in-place and `out=` forms for a tensor and for a Python-number `other`, as typed kernels.
//! Results are bool; the in-place forms write them converted to `self`'s dtype and the `out=`
//! forms converted to `out`'s (`Tensor::binary_out`), as PyTorch's comparison kernels do.

use std::ops::Deref;
use std::sync::Arc;

use ferrojit_tensor::ops::binary::BinaryOp;
use ferrojit_tensor::Tensor;

use super::binding::{typed, typed_in_place, WrappedNumber};
use crate::error::Result;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

fn compare<Other: Deref<Target = Tensor>>(
    op: BinaryOp,
) -> impl Fn(Input, Other) -> Result<Tensor> + Clone + Send + Sync + 'static {
    move |input: Input, other: Other| Ok(input.binary(&other, op)?)
}

fn compare_in_place<Other: Deref<Target = Tensor>>(
    op: BinaryOp,
) -> impl Fn(Input, Other) -> Result<Tensor> + Clone + Send + Sync + 'static {
    move |input: Input, other: Other| Ok(input.binary_(&other, op)?)
}

fn compare_out<Other: Deref<Target = Tensor>>(
    op: BinaryOp,
) -> impl Fn(Input, Other, Input) -> Result<Tensor> + Clone + Send + Sync + 'static {
    move |input: Input, other: Other, out: Input| Ok(input.binary_out(&other, op, &out)?)
}

/// Every operator of this file: per comparison, the functional forms (Scalar first, as
/// before), then the in-place and `out=` forms of the Tensor and of the Scalar overload.
pub fn declarations() -> Vec<OperatorDeclaration> {
    use BinaryOp::{Eq, Ge, Gt, Le, Lt, Ne};
    let mut declarations = Vec::new();
    for (name, op) in [
        ("eq", Eq),
        ("ne", Ne),
        ("lt", Lt),
        ("le", Le),
        ("gt", Gt),
        ("ge", Ge),
    ] {
        declarations.extend([
            typed(
                &format!("aten::{name}.Scalar(Tensor self, Scalar other) -> Tensor"),
                compare::<WrappedNumber>(op),
            ),
            typed(
                &format!("aten::{name}.Tensor(Tensor self, Tensor other) -> Tensor"),
                compare::<Input>(op),
            ),
            typed_in_place(
                &format!("aten::{name}_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)"),
                compare_in_place::<Input>(op),
            ),
            typed(
                &format!(
                    "aten::{name}.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)"
                ),
                compare_out::<Input>(op),
            ),
            typed_in_place(
                &format!("aten::{name}_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)"),
                compare_in_place::<WrappedNumber>(op),
            ),
            typed(
                &format!(
                    "aten::{name}.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)"
                ),
                compare_out::<WrappedNumber>(op),
            ),
        ]);
    }
    declarations
}
