//! Schemas and argument binding for the copy forms of the view operators (`*_copy`), the
//! scatter-into-a-view operators, diagonal embedding, the composite joins and splits,
//! integration and `gradient`, the native normalization forms, `addmv`/`addr`, `lu_unpack`,
//! `linalg.vander`/`linalg.diagonal`, and the tensor overloads of `copysign`, `ldexp`,
//! `frexp`, `gcd` and `linalg.pinv` (tensor tolerances). Kernels: `ferrojit_tensor::ops::
//! {shape_copy, trapezoid, native_composites, sign_exponent}`.

use std::sync::Arc;

use ferrojit_tensor::linalg as la;
use ferrojit_tensor::ops::native_composites as natives;
use ferrojit_tensor::ops::nn::norm;
use ferrojit_tensor::ops::shape_copy::{self as shapes, SplitDirection};
use ferrojit_tensor::ops::trapezoid::{self as integrate, GradientSpacing, Integral};
use ferrojit_tensor::{DType, Scalar, Tensor};

use super::binding::{out_from_functional, typed, WrappedNumber};
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// A fresh contiguous copy: what every `*_copy` operator returns instead of the view.
fn copied(view: ferrojit_tensor::Result<Tensor>) -> Result<Tensor> {
    Ok(view?.clone_tensor())
}

fn copied_all(views: ferrojit_tensor::Result<Vec<Tensor>>) -> Result<Vec<Tensor>> {
    Ok(views?.iter().map(Tensor::clone_tensor).collect())
}

fn alias_copy(input: Input) -> Result<Tensor> {
    Ok(input.clone_tensor())
}

fn as_strided_copy(
    input: Input,
    size: Vec<i64>,
    stride: Vec<i64>,
    offset: Option<i64>,
) -> Result<Tensor> {
    copied(input.as_strided(&size, &stride, offset))
}

fn diagonal_copy(input: Input, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    copied(input.diagonal(offset, dim1, dim2))
}

fn expand_copy(input: Input, size: Vec<i64>, _implicit: bool) -> Result<Tensor> {
    copied(input.expand(&size))
}

fn narrow_copy(input: Input, dim: i64, start: i64, length: i64) -> Result<Tensor> {
    copied(input.narrow(dim, start, length))
}

fn permute_copy(input: Input, dims: Vec<i64>) -> Result<Tensor> {
    copied(input.permute(&dims))
}

fn select_copy(input: Input, dim: i64, index: i64) -> Result<Tensor> {
    copied(input.select(dim, index))
}

fn slice_copy(
    input: Input,
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<Tensor> {
    copied(input.slice(dim, start, end, step))
}

fn squeeze_copy(input: Input) -> Result<Tensor> {
    Ok(input.squeeze().clone_tensor())
}

fn squeeze_copy_dim(input: Input, dim: i64) -> Result<Tensor> {
    copied(input.squeeze_dim(dim))
}

/// `squeeze.dims`: each listed dim of size 1 goes (the others stay), highest first so the
/// lower positions keep their meaning.
fn squeeze_copy_dims(input: Input, dims: Vec<i64>) -> Result<Tensor> {
    let rank = input.dim().max(1);
    let mut wrapped = dims
        .into_iter()
        .map(|dim| ferrojit_tensor::wrap_dim(dim, rank))
        .collect::<std::result::Result<Vec<usize>, _>>()?;
    wrapped.sort_unstable();
    wrapped.dedup();
    let mut result = Tensor::clone(&input);
    for dim in wrapped.into_iter().rev() {
        if input.dim() > 0 {
            result = result.squeeze_dim(dim as i64)?;
        }
    }
    Ok(result.clone_tensor())
}

fn t_copy(input: Input) -> Result<Tensor> {
    copied(input.t())
}

fn transpose_copy(input: Input, dim0: i64, dim1: i64) -> Result<Tensor> {
    copied(input.transpose(dim0, dim1))
}

fn unbind_copy(input: Input, dim: i64) -> Result<Vec<Tensor>> {
    copied_all(input.unbind(dim))
}

fn unfold_copy(input: Input, dimension: i64, size: i64, step: i64) -> Result<Tensor> {
    copied(input.unfold(dimension, size, step))
}

fn unsqueeze_copy(input: Input, dim: i64) -> Result<Tensor> {
    copied(input.unsqueeze(dim))
}

fn view_copy(input: Input, size: Vec<i64>) -> Result<Tensor> {
    copied(input.view(&size))
}

fn view_as_real_copy(input: Input) -> Result<Tensor> {
    copied(input.view_as_real())
}

fn view_as_complex_copy(input: Input) -> Result<Tensor> {
    copied(input.view_as_complex())
}

fn split_copy(input: Input, split_size: i64, dim: i64) -> Result<Vec<Tensor>> {
    copied_all(input.split(split_size, dim))
}

fn split_with_sizes_copy(input: Input, sizes: Vec<i64>, dim: i64) -> Result<Vec<Tensor>> {
    copied_all(input.split_with_sizes(&sizes, dim))
}

/// The `unsafe_` splits are PyTorch's splits without view tracking; their values are the
/// split's.
fn unsafe_split(input: Input, split_size: i64, dim: i64) -> Result<Vec<Tensor>> {
    Ok(input.split(split_size, dim)?)
}

fn unsafe_split_with_sizes(input: Input, sizes: Vec<i64>, dim: i64) -> Result<Vec<Tensor>> {
    Ok(input.split_with_sizes(&sizes, dim)?)
}

fn unsafe_chunk(input: Input, chunks: i64, dim: i64) -> Result<Vec<Tensor>> {
    Ok(input.chunk(chunks, dim)?)
}

fn as_strided_scatter(
    input: Input,
    src: Input,
    size: Vec<i64>,
    stride: Vec<i64>,
    offset: Option<i64>,
) -> Result<Tensor> {
    Ok(input.as_strided_scatter(&src, &size, &stride, offset)?)
}

fn diagonal_scatter(input: Input, src: Input, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    Ok(input.diagonal_scatter(&src, offset, dim1, dim2)?)
}

fn diag_embed(input: Input, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    Ok(input.diag_embed(offset, dim1, dim2)?)
}

fn diagflat(input: Input, offset: i64) -> Result<Tensor> {
    Ok(input.diagflat(offset)?)
}

fn block_diag(tensors: Vec<Tensor>) -> Result<Tensor> {
    Ok(shapes::block_diag(&tensors)?)
}

fn cartesian_prod(tensors: Vec<Tensor>) -> Result<Tensor> {
    Ok(shapes::cartesian_prod(&tensors)?)
}

fn combinations(input: Input, r: i64, with_replacement: bool) -> Result<Tensor> {
    Ok(shapes::combinations(&input, r, with_replacement)?)
}

fn column_stack(tensors: Vec<Tensor>) -> Result<Tensor> {
    Ok(shapes::column_stack(&tensors)?)
}

fn dstack(tensors: Vec<Tensor>) -> Result<Tensor> {
    Ok(shapes::dstack(&tensors)?)
}

fn inner(input: Input, other: Input) -> Result<Tensor> {
    Ok(input.inner(&other)?)
}

fn chunk_cat(tensors: Vec<Tensor>, dim: i64, num_chunks: i64) -> Result<Tensor> {
    Ok(shapes::chunk_cat(&tensors, dim, num_chunks)?)
}

fn nonzero_static(input: Input, size: i64, fill_value: i64) -> Result<Tensor> {
    Ok(input.nonzero_static(size, fill_value)?)
}

fn split_sections(
    which: SplitDirection,
) -> impl Fn(Input, i64) -> Result<Vec<Tensor>> + Clone + Send + Sync + 'static {
    move |input: Input, sections: i64| Ok(input.directional_split_sections(which, sections)?)
}

fn split_indices(
    which: SplitDirection,
) -> impl Fn(Input, Vec<i64>) -> Result<Vec<Tensor>> + Clone + Send + Sync + 'static {
    move |input: Input, indices: Vec<i64>| Ok(input.directional_split_indices(which, &indices)?)
}

fn trapezoid_x(y: Input, x: Input, dim: i64) -> Result<Tensor> {
    Ok(integrate::trapezoid_x(Integral::Total, &y, &x, dim)?)
}

fn trapezoid_dx(y: Input, dx: Scalar, dim: i64) -> Result<Tensor> {
    Ok(integrate::trapezoid_dx(Integral::Total, &y, &dx, dim)?)
}

fn trapz_dx(y: Input, dx: f64, dim: i64) -> Result<Tensor> {
    Ok(integrate::trapezoid_dx(
        Integral::Total,
        &y,
        &Scalar::Float(dx),
        dim,
    )?)
}

fn cumulative_trapezoid_x(y: Input, x: Input, dim: i64) -> Result<Tensor> {
    Ok(integrate::trapezoid_x(Integral::Cumulative, &y, &x, dim)?)
}

fn cumulative_trapezoid_dx(y: Input, dx: Scalar, dim: i64) -> Result<Tensor> {
    Ok(integrate::trapezoid_dx(Integral::Cumulative, &y, &dx, dim)?)
}

/// A `Scalar[]` argument.
fn scalar_list(value: &IValue) -> Result<Vec<Scalar>> {
    value
        .to_list()?
        .to_vec()
        .iter()
        .map(IValue::to_scalar)
        .collect::<Result<Vec<_>>>()
}

/// `gradient.scalarint(self, *, Scalar? spacing=None, int? dim=None, edge_order=1)`.
fn gradient_scalar_int(
    input: Input,
    spacing: Option<Scalar>,
    dim: Option<i64>,
    edge_order: i64,
) -> Result<Vec<Tensor>> {
    let count = if dim.is_some() { 1 } else { input.dim() };
    let unit = spacing.unwrap_or(Scalar::Float(1.0));
    let dims = dim.map(|d| vec![d]);
    Ok(integrate::gradient(
        &input,
        &GradientSpacing::Scalars(vec![unit; count]),
        spacing.is_some(),
        dims.as_deref(),
        edge_order,
    )?)
}

/// `gradient.scalararray(self, *, Scalar spacing, int[] dim, edge_order=1)`.
fn gradient_scalar_array(
    input: Input,
    spacing: Scalar,
    dim: Vec<i64>,
    edge_order: i64,
) -> Result<Vec<Tensor>> {
    Ok(integrate::gradient(
        &input,
        &GradientSpacing::Scalars(vec![spacing; dim.len()]),
        true,
        Some(&dim),
        edge_order,
    )?)
}

/// `gradient.array(self, *, int[] dim, edge_order=1)`: unit spacing.
fn gradient_array(input: Input, dim: Vec<i64>, edge_order: i64) -> Result<Vec<Tensor>> {
    Ok(integrate::gradient(
        &input,
        &GradientSpacing::Scalars(vec![Scalar::Float(1.0); dim.len()]),
        true,
        Some(&dim),
        edge_order,
    )?)
}

/// `gradient.scalarrayint(self, *, Scalar[] spacing, int? dim=None, edge_order=1)`.
fn gradient_scalars_int(
    input: Input,
    spacing: IValue,
    dim: Option<i64>,
    edge_order: i64,
) -> Result<Vec<Tensor>> {
    let dims = dim.map(|d| vec![d]);
    Ok(integrate::gradient(
        &input,
        &GradientSpacing::Scalars(scalar_list(&spacing)?),
        true,
        dims.as_deref(),
        edge_order,
    )?)
}

/// `gradient.scalarrayarray(self, *, Scalar[] spacing, int[] dim, edge_order=1)`.
fn gradient_scalars_array(
    input: Input,
    spacing: IValue,
    dim: Vec<i64>,
    edge_order: i64,
) -> Result<Vec<Tensor>> {
    Ok(integrate::gradient(
        &input,
        &GradientSpacing::Scalars(scalar_list(&spacing)?),
        true,
        Some(&dim),
        edge_order,
    )?)
}

/// `gradient.tensorarrayint(self, *, Tensor[] spacing, int? dim=None, edge_order=1)`.
fn gradient_tensors_int(
    input: Input,
    spacing: Vec<Tensor>,
    dim: Option<i64>,
    edge_order: i64,
) -> Result<Vec<Tensor>> {
    let dims = dim.map(|d| vec![d]);
    Ok(integrate::gradient(
        &input,
        &GradientSpacing::Coordinates(&spacing),
        true,
        dims.as_deref(),
        edge_order,
    )?)
}

/// `gradient.tensorarray(self, *, Tensor[] spacing, int[] dim, edge_order=1)`.
fn gradient_tensors_array(
    input: Input,
    spacing: Vec<Tensor>,
    dim: Vec<i64>,
    edge_order: i64,
) -> Result<Vec<Tensor>> {
    Ok(integrate::gradient(
        &input,
        &GradientSpacing::Coordinates(&spacing),
        true,
        Some(&dim),
        edge_order,
    )?)
}

fn addmv(input: Input, mat: Input, vec: Input, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
    Ok(input.addmv(&mat, &vec, &beta, &alpha)?)
}

fn addr(input: Input, vec1: Input, vec2: Input, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
    Ok(input.addr(&vec1, &vec2, &beta, &alpha)?)
}

fn native_layer_norm(
    input: Input,
    normalized_shape: Vec<i64>,
    weight: Option<Input>,
    bias: Option<Input>,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    Ok(natives::native_layer_norm(
        &input,
        &normalized_shape,
        weight.as_deref(),
        bias.as_deref(),
        eps,
    )?)
}

#[allow(clippy::too_many_arguments)]
fn native_group_norm(
    input: Input,
    weight: Option<Input>,
    bias: Option<Input>,
    batch: i64,
    channels: i64,
    spatial: i64,
    groups: i64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    Ok(natives::native_group_norm(
        &input,
        weight.as_deref(),
        bias.as_deref(),
        batch,
        channels,
        spatial,
        groups,
        eps,
    )?)
}

/// `native_batch_norm`: training uses (and updates, when given) the running statistics as
/// `batch_norm` does and returns the batch mean and inverse standard deviation; evaluation
/// needs the running statistics and returns empty saved statistics.
#[allow(clippy::too_many_arguments)]
fn native_batch_norm(
    input: Input,
    weight: Option<Input>,
    bias: Option<Input>,
    running_mean: Option<Input>,
    running_var: Option<Input>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    if !training {
        for (tensor, name) in [
            (&running_mean, "running_mean"),
            (&running_var, "running_var"),
        ] {
            if tensor.is_none() {
                return Err(RuntimeError::Other(format!(
                    "{name} must be defined in evaluation mode"
                )));
            }
        }
    }
    Ok(norm::native_batch_norm(
        &input,
        weight.as_deref(),
        bias.as_deref(),
        running_mean.as_deref(),
        running_var.as_deref(),
        training,
        momentum,
        eps,
    )?)
}

fn lu_unpack(
    lu: Input,
    pivots: Input,
    unpack_data: bool,
    unpack_pivots: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    Ok(natives::lu_unpack(
        &lu,
        &pivots,
        unpack_data,
        unpack_pivots,
    )?)
}

/// `_lu_with_info` (what `torch.lu` calls): `linalg.lu_factor_ex`'s results; a singular
/// matrix is reported in `info`, never raised, whatever `check_errors` says (as in PyTorch).
fn lu_with_info(a: Input, pivot: bool, _check_errors: bool) -> Result<(Tensor, Tensor, Tensor)> {
    Ok(la::lu_factor_ex(&a, pivot, false)?)
}

fn linalg_vander(x: Input, n: Option<i64>) -> Result<Tensor> {
    Ok(natives::vander(&x, n)?)
}

fn linalg_diagonal(a: Input, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    Ok(a.diagonal(offset, dim1, dim2)?)
}

fn copysign(input: Input, other: Input) -> Result<Tensor> {
    Ok(input.copysign(&other)?)
}

fn copysign_scalar(input: Input, other: WrappedNumber) -> Result<Tensor> {
    Ok(input.copysign(&other)?)
}

fn ldexp(input: Input, other: Input) -> Result<Tensor> {
    Ok(input.ldexp(&other)?)
}

fn frexp(input: Input) -> Result<(Tensor, Tensor)> {
    Ok(input.frexp()?)
}

fn gcd(input: Input, other: Input) -> Result<Tensor> {
    Ok(input.gcd(&other)?)
}

fn pinv_tensor_tolerances(
    a: Input,
    atol: Option<Input>,
    rtol: Option<Input>,
    hermitian: bool,
) -> Result<Tensor> {
    Ok(la::pinv_tensor_tolerances(
        &a,
        atol.as_deref(),
        rtol.as_deref(),
        hermitian,
    )?)
}

/// `linalg_pinv.rcond_tensor`: atol 0 and rtol `rcond`, per matrix.
fn pinv_rcond_tensor(a: Input, rcond: Input, hermitian: bool) -> Result<Tensor> {
    let zeros = Tensor::zeros(rcond.sizes(), DType::Float64)?;
    Ok(la::pinv_tensor_tolerances(
        &a,
        Some(&zeros),
        Some(&rcond),
        hermitian,
    )?)
}

pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        // The copy forms of the views.
        typed("aten::alias_copy(Tensor self) -> Tensor", alias_copy),
        out_from_functional("aten::alias_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", alias_copy),
        typed("aten::detach_copy(Tensor self) -> Tensor", alias_copy),
        out_from_functional("aten::detach_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", alias_copy),
        typed("aten::lift_fresh_copy(Tensor self) -> Tensor", alias_copy),
        out_from_functional("aten::lift_fresh_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", alias_copy),
        typed("aten::as_strided_copy(Tensor self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor", as_strided_copy),
        out_from_functional("aten::as_strided_copy.out(Tensor self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None, *, Tensor(a!) out) -> Tensor(a!)", as_strided_copy),
        typed("aten::diagonal_copy(Tensor self, int offset=0, int dim1=0, int dim2=1) -> Tensor", diagonal_copy),
        out_from_functional("aten::diagonal_copy.out(Tensor self, int offset=0, int dim1=0, int dim2=1, *, Tensor(a!) out) -> Tensor(a!)", diagonal_copy),
        typed("aten::expand_copy(Tensor self, SymInt[] size, *, bool implicit=False) -> Tensor", expand_copy),
        out_from_functional("aten::expand_copy.out(Tensor self, SymInt[] size, *, bool implicit=False, Tensor(a!) out) -> Tensor(a!)", expand_copy),
        typed("aten::narrow_copy(Tensor self, int dim, SymInt start, SymInt length) -> Tensor", narrow_copy),
        out_from_functional("aten::narrow_copy.out(Tensor self, int dim, SymInt start, SymInt length, *, Tensor(a!) out) -> Tensor(a!)", narrow_copy),
        typed("aten::permute_copy(Tensor self, int[] dims) -> Tensor", permute_copy),
        out_from_functional("aten::permute_copy.out(Tensor self, int[] dims, *, Tensor(a!) out) -> Tensor(a!)", permute_copy),
        typed("aten::select_copy.int(Tensor self, int dim, SymInt index) -> Tensor", select_copy),
        out_from_functional("aten::select_copy.int_out(Tensor self, int dim, SymInt index, *, Tensor(a!) out) -> Tensor(a!)", select_copy),
        typed("aten::slice_copy.Tensor(Tensor self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor", slice_copy),
        out_from_functional("aten::slice_copy.Tensor_out(Tensor self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1, *, Tensor(a!) out) -> Tensor(a!)", slice_copy),
        typed("aten::squeeze_copy(Tensor self) -> Tensor", squeeze_copy),
        out_from_functional("aten::squeeze_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", squeeze_copy),
        typed("aten::squeeze_copy.dim(Tensor self, int dim) -> Tensor", squeeze_copy_dim),
        out_from_functional("aten::squeeze_copy.dim_out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)", squeeze_copy_dim),
        typed("aten::squeeze_copy.dims(Tensor self, int[] dim) -> Tensor", squeeze_copy_dims),
        out_from_functional("aten::squeeze_copy.dims_out(Tensor self, int[] dim, *, Tensor(a!) out) -> Tensor(a!)", squeeze_copy_dims),
        typed("aten::t_copy(Tensor self) -> Tensor", t_copy),
        out_from_functional("aten::t_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", t_copy),
        typed("aten::transpose_copy.int(Tensor self, int dim0, int dim1) -> Tensor", transpose_copy),
        out_from_functional("aten::transpose_copy.int_out(Tensor self, int dim0, int dim1, *, Tensor(a!) out) -> Tensor(a!)", transpose_copy),
        typed("aten::unbind_copy.int(Tensor self, int dim=0) -> Tensor[]", unbind_copy),
        typed("aten::unfold_copy(Tensor self, int dimension, int size, int step) -> Tensor", unfold_copy),
        out_from_functional("aten::unfold_copy.out(Tensor self, int dimension, int size, int step, *, Tensor(a!) out) -> Tensor(a!)", unfold_copy),
        typed("aten::unsqueeze_copy(Tensor self, int dim) -> Tensor", unsqueeze_copy),
        out_from_functional("aten::unsqueeze_copy.out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)", unsqueeze_copy),
        typed("aten::view_copy(Tensor self, SymInt[] size) -> Tensor", view_copy),
        out_from_functional("aten::view_copy.out(Tensor self, SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)", view_copy),
        typed("aten::view_as_real_copy(Tensor self) -> Tensor", view_as_real_copy),
        out_from_functional("aten::view_as_real_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", view_as_real_copy),
        typed("aten::view_as_complex_copy(Tensor self) -> Tensor", view_as_complex_copy),
        out_from_functional("aten::view_as_complex_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)", view_as_complex_copy),
        typed("aten::split_copy.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]", split_copy),
        typed("aten::split_with_sizes_copy(Tensor self, SymInt[] split_sizes, int dim=0) -> Tensor[]", split_with_sizes_copy),
        typed("aten::unsafe_split.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]", unsafe_split),
        typed("aten::unsafe_split_with_sizes(Tensor self, SymInt[] split_sizes, int dim=0) -> Tensor[]", unsafe_split_with_sizes),
        typed("aten::unsafe_chunk(Tensor self, int chunks, int dim=0) -> Tensor[]", unsafe_chunk),
        // Writing into a view of a copy, and diagonal embedding.
        typed("aten::as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor", as_strided_scatter),
        out_from_functional("aten::as_strided_scatter.out(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None, *, Tensor(a!) out) -> Tensor(a!)", as_strided_scatter),
        typed("aten::diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> Tensor", diagonal_scatter),
        out_from_functional("aten::diagonal_scatter.out(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1, *, Tensor(a!) out) -> Tensor(a!)", diagonal_scatter),
        typed("aten::diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> Tensor", diag_embed),
        out_from_functional("aten::diag_embed.out(Tensor self, int offset=0, int dim1=-2, int dim2=-1, *, Tensor(a!) out) -> Tensor(a!)", diag_embed),
        typed("aten::diagflat(Tensor self, int offset=0) -> Tensor", diagflat),
        // Joins and splits.
        typed("aten::block_diag(Tensor[] tensors) -> Tensor", block_diag),
        out_from_functional("aten::block_diag.out(Tensor[] tensors, *, Tensor(a!) out) -> Tensor(a!)", block_diag),
        typed("aten::cartesian_prod(Tensor[] tensors) -> Tensor", cartesian_prod),
        typed("aten::combinations(Tensor self, int r=2, bool with_replacement=False) -> Tensor", combinations),
        typed("aten::column_stack(Tensor[] tensors) -> Tensor", column_stack),
        out_from_functional("aten::column_stack.out(Tensor[] tensors, *, Tensor(a!) out) -> Tensor(a!)", column_stack),
        typed("aten::dstack(Tensor[] tensors) -> Tensor", dstack),
        out_from_functional("aten::dstack.out(Tensor[] tensors, *, Tensor(a!) out) -> Tensor(a!)", dstack),
        typed("aten::hsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]", split_sections(SplitDirection::Horizontal)),
        typed("aten::hsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]", split_indices(SplitDirection::Horizontal)),
        typed("aten::vsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]", split_sections(SplitDirection::Vertical)),
        typed("aten::vsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]", split_indices(SplitDirection::Vertical)),
        typed("aten::dsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]", split_sections(SplitDirection::Depth)),
        typed("aten::dsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]", split_indices(SplitDirection::Depth)),
        typed("aten::inner(Tensor self, Tensor other) -> Tensor", inner),
        out_from_functional("aten::inner.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", inner),
        typed("aten::_chunk_cat(Tensor[] tensors, int dim, int num_chunks) -> Tensor", chunk_cat),
        out_from_functional("aten::_chunk_cat.out(Tensor[] tensors, int dim, int num_chunks, *, Tensor(a!) out) -> Tensor(a!)", chunk_cat),
        typed("aten::nonzero_static(Tensor self, *, SymInt size, int fill_value=-1) -> Tensor", nonzero_static),
        out_from_functional("aten::nonzero_static.out(Tensor self, *, SymInt size, int fill_value=-1, Tensor(a!) out) -> Tensor(a!)", nonzero_static),
        // Integration and differentiation of samples.
        typed("aten::trapezoid.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor", trapezoid_x),
        typed("aten::trapezoid.dx(Tensor y, *, Scalar dx=1, int dim=-1) -> Tensor", trapezoid_dx),
        typed("aten::trapz.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor", trapezoid_x),
        typed("aten::trapz.dx(Tensor y, *, float dx=1., int dim=-1) -> Tensor", trapz_dx),
        typed("aten::cumulative_trapezoid.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor", cumulative_trapezoid_x),
        typed("aten::cumulative_trapezoid.dx(Tensor y, *, Scalar dx=1, int dim=-1) -> Tensor", cumulative_trapezoid_dx),
        typed("aten::gradient.scalarint(Tensor self, *, Scalar? spacing=None, int? dim=None, int edge_order=1) -> Tensor[]", gradient_scalar_int),
        typed("aten::gradient.scalararray(Tensor self, *, Scalar spacing, int[] dim, int edge_order=1) -> Tensor[]", gradient_scalar_array),
        typed("aten::gradient.array(Tensor self, *, int[] dim, int edge_order=1) -> Tensor[]", gradient_array),
        typed("aten::gradient.scalarrayint(Tensor self, *, Scalar[] spacing, int? dim=None, int edge_order=1) -> Tensor[]", gradient_scalars_int),
        typed("aten::gradient.scalarrayarray(Tensor self, *, Scalar[] spacing, int[] dim, int edge_order=1) -> Tensor[]", gradient_scalars_array),
        typed("aten::gradient.tensorarrayint(Tensor self, *, Tensor[] spacing, int? dim=None, int edge_order=1) -> Tensor[]", gradient_tensors_int),
        typed("aten::gradient.tensorarray(Tensor self, *, Tensor[] spacing, int[] dim, int edge_order=1) -> Tensor[]", gradient_tensors_array),
        // Products, native normalization forms, decompositions.
        typed("aten::addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor", addmv),
        out_from_functional("aten::addmv.out(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)", addmv),
        typed("aten::addr(Tensor self, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1) -> Tensor", addr),
        out_from_functional("aten::addr.out(Tensor self, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)", addr),
        typed("aten::native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)", native_layer_norm),
        typed("aten::native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, float eps) -> (Tensor, Tensor, Tensor)", native_group_norm),
        typed("aten::native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)", native_batch_norm),
        typed("aten::lu_unpack(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, bool unpack_pivots=True) -> (Tensor P, Tensor L, Tensor U)", lu_unpack),
        typed("aten::_lu_with_info(Tensor self, bool pivot=True, bool check_errors=True) -> (Tensor LU, Tensor pivots, Tensor info)", lu_with_info),
        typed("aten::linalg_vander(Tensor x, *, SymInt? N=None) -> Tensor", linalg_vander),
        typed("aten::linalg_diagonal(Tensor(a) A, *, int offset=0, int dim1=-2, int dim2=-1) -> Tensor(a)", linalg_diagonal),
        typed("aten::linalg_pinv.atol_rtol_tensor(Tensor self, *, Tensor? atol=None, Tensor? rtol=None, bool hermitian=False) -> Tensor", pinv_tensor_tolerances),
        out_from_functional("aten::linalg_pinv.atol_rtol_tensor_out(Tensor self, *, Tensor? atol=None, Tensor? rtol=None, bool hermitian=False, Tensor(a!) out) -> Tensor(a!)", pinv_tensor_tolerances),
        typed("aten::linalg_pinv.rcond_tensor(Tensor self, Tensor rcond, bool hermitian=False) -> Tensor", pinv_rcond_tensor),
        out_from_functional("aten::linalg_pinv.out_rcond_tensor(Tensor self, Tensor rcond, bool hermitian=False, *, Tensor(a!) out) -> Tensor(a!)", pinv_rcond_tensor),
        // Tensor forms of the sign and exponent functions.
        typed("aten::copysign.Tensor(Tensor self, Tensor other) -> Tensor", copysign),
        out_from_functional("aten::copysign.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", copysign),
        typed("aten::copysign.Scalar(Tensor self, Scalar other) -> Tensor", copysign_scalar),
        out_from_functional("aten::copysign.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)", copysign_scalar),
        typed("aten::ldexp.Tensor(Tensor self, Tensor other) -> Tensor", ldexp),
        out_from_functional("aten::ldexp.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", ldexp),
        typed("aten::frexp.Tensor(Tensor self) -> (Tensor mantissa, Tensor exponent)", frexp),
        typed("aten::gcd(Tensor self, Tensor other) -> Tensor", gcd),
        out_from_functional("aten::gcd.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", gcd),
    ]
}
