//! Operators PyTorch defines by composing other ATen operators (CompositeImplicit kernels):
//! each kernel here is the same composition over the tensor library, so it rounds as PyTorch's
//! does. `deg2rad`, `xlogy`, `heaviside`, `hardshrink`, `nansum`/`nanmean`, `diff`, `atleast_*`,
//! the triangle index builders, `sum_to_size` and small tensor predicates, as typed kernels; the in-place
//! forms are made from the functional kernels (compute, then write into `self`), as ATen's are.

use std::ops::Deref;
use std::sync::Arc;

use ferrojit_tensor::ops::binary::BinaryOp;
use ferrojit_tensor::ops::pointwise::UnaryOp;
use ferrojit_tensor::{DType, Scalar, Tensor, TensorError};

use super::binding::{in_place_from_functional, typed, DimList, WrappedNumber};
use super::nn_ops::Unused;
use crate::error::{Result, RuntimeError};
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// π/180 as ATen writes it (`M_PI_180` in UnaryOps.cpp), applied as a wrapped number.
const DEGREES_TO_RADIANS: f64 = 0.017_453_292_519_943_295;
/// 180/π (`M_180_PI`).
const RADIANS_TO_DEGREES: f64 = 57.295_779_513_082_32;

/// `deg2rad`/`rad2deg`: integer and bool inputs are first converted to the default float
/// dtype, then multiplied by the constant in the tensor's dtype.
fn scale_angle(tensor: &Tensor, factor: f64, name: &str) -> Result<Tensor> {
    let floating = if tensor.dtype().is_floating_point() {
        tensor.clone()
    } else {
        tensor.to_dtype(DType::default_float())
    };
    floating
        .mul(&Tensor::wrapped_scalar(Scalar::Float(factor)))
        .map_err(|error| RuntimeError::Other(format!("{name}: {error}")))
}

fn deg2rad(input: Input) -> Result<Tensor> {
    scale_angle(&input, DEGREES_TO_RADIANS, "deg2rad")
}

fn rad2deg(input: Input) -> Result<Tensor> {
    scale_angle(&input, RADIANS_TO_DEGREES, "rad2deg")
}

/// The functional kernel of an in-place angle conversion: `self` must already be floating
/// (the functional form would promote an integer tensor, which cannot be written back).
fn floating_only(
    functional: fn(Input) -> Result<Tensor>,
    name: &'static str,
) -> impl Fn(Input) -> Result<Tensor> + Send + Sync + 'static {
    move |input: Input| {
        if !input.dtype().is_floating_point() {
            return Err(RuntimeError::Other(format!(
                "{name}_(): result type Float can't be cast to the desired output type {}",
                input.dtype().name()
            )));
        }
        functional(input)
    }
}

/// `xlogy(x, y)`: `x * log(y)`, 0 where `x == 0`, NaN where `y` is NaN (that test comes first),
/// in the promoted floating dtype. Either operand may be a Python number (a wrapped number).
fn xlogy<X: Deref<Target = Tensor>, Y: Deref<Target = Tensor>>(x: X, y: Y) -> Result<Tensor> {
    let product = x.mul(&y.unary(UnaryOp::Log)?)?;
    let zero = Tensor::wrapped_scalar(Scalar::Float(0.0));
    let product = Tensor::where_(&x.eq(&zero)?, &zero, &product)?;
    let nan = Tensor::wrapped_scalar(Scalar::Float(f64::NAN));
    Ok(Tensor::where_(&y.unary(UnaryOp::IsNan)?, &nan, &product)?)
}

/// `heaviside(x, values)`: `values` where `x == 0`, else `x > 0`; both must share a dtype.
fn heaviside(input: Input, values: Input) -> Result<Tensor> {
    if input.dtype() != values.dtype() {
        return Err(RuntimeError::Other(
            "heaviside is not yet implemented for tensors with different dtypes".to_string(),
        ));
    }
    let zero = Tensor::wrapped_scalar(Scalar::Int(0));
    let positive = input.gt(&zero)?.to_dtype(input.dtype());
    Ok(Tensor::where_(&input.eq(&zero)?, &values, &positive)?)
}

/// `hardshrink(x, lambd)`: 0 where `-lambd <= x <= lambd`, else `x` (NaN stays NaN).
fn hardshrink(input: Input, lambd: Scalar) -> Result<Tensor> {
    let negated = match lambd {
        Scalar::Bool(b) => Scalar::Int(-i64::from(b)),
        Scalar::Int(i) => Scalar::Int(i.saturating_neg()),
        Scalar::Float(f) => Scalar::Float(-f),
    };
    let inside = input.ge(&Tensor::wrapped_scalar(negated))?.binary(
        &input.le(&Tensor::wrapped_scalar(lambd))?,
        BinaryOp::LogicalAnd,
    )?;
    Ok(input.masked_fill(&inside, &Scalar::Int(0))?)
}

/// `x` with NaNs replaced by zero, as ATen's `nansum` skips them.
fn without_nans(input: &Tensor) -> Result<Tensor> {
    if !input.dtype().is_floating_point() {
        return Ok(input.clone());
    }
    Ok(input.masked_fill(&input.unary(UnaryOp::IsNan)?, &Scalar::Int(0))?)
}

fn nansum(input: Input, dim: DimList, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    Ok(without_nans(&input)?.sum_dim(&dim.0, keepdim, dtype)?)
}

/// `nanmean`: ATen's `nansum(...) / (number of non-NaN elements)`; floating inputs only.
fn nanmean(input: Input, dim: DimList, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    if !input.dtype().is_floating_point() {
        return Err(RuntimeError::Other(format!(
            "nanmean(): expected input to have floating point dtype but got {}",
            input.dtype().name()
        )));
    }
    let dims = dim.0;
    let total = without_nans(&input)?.sum_dim(&dims, keepdim, dtype)?;
    let present = input
        .unary(UnaryOp::IsNan)?
        .unary(UnaryOp::LogicalNot)?
        .sum_dim(&dims, keepdim, None)?;
    Ok(total.div(&present, None)?)
}

/// `diff(n, dim, prepend, append)`: `n` rounds of `x[1:] - x[:-1]` along `dim` (`!=` for bool).
fn diff(
    input: Input,
    n: i64,
    dim: i64,
    prepend: Option<Input>,
    append: Option<Input>,
) -> Result<Tensor> {
    if input.dim() == 0 {
        return Err(RuntimeError::Other(
            "diff expects input to be at least one-dimensional".to_string(),
        ));
    }
    if n < 0 {
        return Err(RuntimeError::Other(format!(
            "order must be non-negative but got {n}"
        )));
    }
    let mut current = if prepend.is_none() && append.is_none() {
        Tensor::clone(&input)
    } else {
        let pieces: Vec<Tensor> = prepend
            .iter()
            .chain(std::iter::once(&input))
            .chain(append.iter())
            .map(|piece| Tensor::clone(piece))
            .collect();
        ferrojit_tensor::cat(&pieces, dim)?
    };
    let axis = ferrojit_tensor::wrap_dim(dim, current.dim())?;
    for _ in 0..n {
        let length = current.sizes()[axis] as i64;
        if length == 0 {
            break;
        }
        let later = current.narrow(dim, 1, length - 1)?;
        let earlier = current.narrow(dim, 0, length - 1)?;
        current = if current.dtype() == DType::Bool {
            later.binary(&earlier, BinaryOp::LogicalXor)?
        } else {
            later.sub(&earlier, &Scalar::Int(1))?
        };
    }
    Ok(current)
}

/// `atleast_{1,2,3}d`: PyTorch's reshapes (a vector becomes `[1, n]`, then `[1, n, 1]`).
fn at_least(tensor: &Tensor, rank: usize) -> Result<Tensor> {
    let sizes: Vec<i64> = tensor.sizes().iter().map(|&s| s as i64).collect();
    let shape: Vec<i64> = match (rank, sizes.as_slice()) {
        (_, _) if sizes.len() >= rank => return Ok(tensor.clone()),
        (1, []) => vec![1],
        (2, []) => vec![1, 1],
        (2, [n]) => vec![1, *n],
        (3, []) => vec![1, 1, 1],
        (3, [n]) => vec![1, *n, 1],
        (3, [m, n]) => vec![*m, *n, 1],
        _ => return Ok(tensor.clone()),
    };
    Ok(tensor.view(&shape).or_else(|_| tensor.reshape(&shape))?)
}

/// `atleast_{rank}d` of one tensor.
fn at_least_one(rank: usize) -> impl Fn(Input) -> Result<Tensor> + Send + Sync + 'static {
    move |input: Input| at_least(&input, rank)
}

/// `atleast_{rank}d.Sequence`: each tensor of the list.
fn at_least_each(
    rank: usize,
) -> impl Fn(Vec<Tensor>) -> Result<Vec<Tensor>> + Send + Sync + 'static {
    move |tensors: Vec<Tensor>| {
        tensors
            .iter()
            .map(|tensor| at_least(tensor, rank))
            .collect()
    }
}

/// The `2 x N` coordinates of a `row x col` matrix's lower (or upper) triangle at `offset`,
/// row by row, as ATen's `tril_indices`/`triu_indices`; layout, device and pin_memory are not
/// read.
fn triangle_indices(
    lower: bool,
) -> impl Fn(i64, i64, i64, Option<DType>, Unused, Unused, Unused) -> Result<Tensor>
       + Send
       + Sync
       + 'static {
    move |row, col, offset, dtype, _layout, _device, _pin_memory| {
        let name = if lower {
            "tril_indices"
        } else {
            "triu_indices"
        };
        if row < 0 || col < 0 {
            return Err(RuntimeError::Other(format!(
                "{name}: row must be non-negative, got {row}, and col must be non-negative, got {col}"
            )));
        }
        // Far more coordinates than any model needs would exhaust memory; ATen would try.
        let cells = row.saturating_mul(col);
        if cells > 1 << 28 {
            return Err(RuntimeError::Other(format!(
                "{name}: {row} x {col} is too large"
            )));
        }
        let (mut rows, mut cols) = (Vec::new(), Vec::new());
        for r in 0..row {
            for c in 0..col {
                let keep = if lower {
                    c - r <= offset
                } else {
                    c - r >= offset
                };
                if keep {
                    rows.push(r);
                    cols.push(c);
                }
            }
        }
        let count = rows.len();
        rows.extend(cols);
        let indices = Tensor::from_vec(rows, &[2, count])?;
        Ok(indices.to_dtype(dtype.unwrap_or(DType::Int64)))
    }
}

/// `scalar_tensor(s, dtype)`: a 0-dim tensor, of the default float dtype unless given.
fn scalar_tensor(
    value: Scalar,
    dtype: Option<DType>,
    _layout: Unused,
    _device: Unused,
    _pin_memory: Unused,
) -> Result<Tensor> {
    Ok(Tensor::scalar_tensor(
        value,
        dtype.unwrap_or(DType::default_float()),
    ))
}

/// `is_nonzero`: the truth of a one-element tensor.
fn is_nonzero(input: Input) -> Result<bool> {
    match input.numel() {
        1 => Ok(input.to_f64_vec().first().is_some_and(|&v| v != 0.0)),
        0 => Err(RuntimeError::Other(
            "Boolean value of Tensor with no values is ambiguous".to_string(),
        )),
        _ => Err(RuntimeError::Other(
            "Boolean value of Tensor with more than one value is ambiguous".to_string(),
        )),
    }
}

fn is_signed(input: Input) -> Result<bool> {
    Ok(!matches!(input.dtype(), DType::Bool | DType::UInt8))
}

/// `empty_strided(size, stride)`: zeros (PyTorch leaves them uninitialised) in a storage just
/// large enough for the strided geometry.
fn empty_strided(
    size: Vec<i64>,
    stride: Vec<i64>,
    dtype: Option<DType>,
    _layout: Unused,
    _device: Unused,
    _pin_memory: Unused,
) -> Result<Tensor> {
    strided_zeros(&size, &stride, dtype.unwrap_or(DType::default_float()))
}

/// `new_empty_strided`: as `empty_strided`, of `self`'s dtype unless given.
fn new_empty_strided(
    input: Input,
    size: Vec<i64>,
    stride: Vec<i64>,
    dtype: Option<DType>,
    _layout: Unused,
    _device: Unused,
    _pin_memory: Unused,
) -> Result<Tensor> {
    strided_zeros(&size, &stride, dtype.unwrap_or(input.dtype()))
}

fn strided_zeros(sizes: &[i64], strides: &[i64], dtype: DType) -> Result<Tensor> {
    if sizes.len() != strides.len() {
        return Err(TensorError::InvalidArgument(format!(
            "mismatch in length of strides and shape: {} vs {}",
            strides.len(),
            sizes.len()
        ))
        .into());
    }
    let mut extent: i64 = 1;
    for (&size, &stride) in sizes.iter().zip(strides) {
        if size < 0 || stride < 0 {
            return Err(RuntimeError::Other(format!(
                "empty_strided: negative size {size} or stride {stride}"
            )));
        }
        if size == 0 {
            extent = 0;
            break;
        }
        extent = extent
            .checked_add((size - 1).checked_mul(stride).unwrap_or(i64::MAX))
            .ok_or_else(|| RuntimeError::Other("empty_strided: storage size overflows".into()))?;
    }
    let storage_len = usize::try_from(extent)
        .map_err(|_| RuntimeError::Other("empty_strided: storage size overflows".into()))?;
    let storage = Tensor::zeros(&[storage_len], dtype)?;
    Ok(storage.as_strided(sizes, strides, Some(0))?)
}

type Number = WrappedNumber;

/// Every operator of this file, each in-place form beside its functional one.
#[rustfmt::skip]
/// `x.sum_to_size(size)`: sums `x` down to `size`, which must broadcast to `x`'s shape (the
/// reduction autograd applies to an input that was broadcast). ATen's `sum_to`: the leading
/// dimensions `size` lacks and those where it has 1 and `x` does not are summed (kept, then
/// the leading ones viewed away); an empty `size` sums everything to a 0-d tensor; when
/// nothing needs summing `x` itself comes back.
fn sum_to_size(input: Input, size: Vec<i64>) -> Result<Tensor> {
    let sizes = input.sizes().to_vec();
    let expandable = size.len() <= sizes.len()
        && size
            .iter()
            .rev()
            .zip(sizes.iter().rev())
            .all(|(&wanted, &have)| wanted == have as i64 || wanted == 1);
    if !expandable {
        let list = |values: Vec<String>| format!("[{}]", values.join(", "));
        return Err(RuntimeError::Other(format!(
            "size {{{}}} is not expandable to size {{{}}}.",
            list(size.iter().map(i64::to_string).collect()),
            list(sizes.iter().map(usize::to_string).collect())
        )));
    }
    if size.is_empty() {
        return Ok(input.sum(None)?);
    }
    let leading = sizes.len() - size.len();
    let mut reduced: Vec<i64> = (0..leading as i64).collect();
    for (index, &wanted) in size.iter().enumerate() {
        if wanted == 1 && sizes[leading + index] != 1 {
            reduced.push((leading + index) as i64);
        }
    }
    let mut result = input.as_ref().clone();
    if !reduced.is_empty() {
        result = result.sum_dim(&reduced, true, None)?;
    }
    if leading > 0 {
        result = result.view(&size)?;
    }
    Ok(result)
}

pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        typed("aten::deg2rad(Tensor self) -> Tensor", deg2rad),
        in_place_from_functional("aten::deg2rad_(Tensor(a!) self) -> Tensor(a!)", floating_only(deg2rad, "deg2rad")),
        typed("aten::rad2deg(Tensor self) -> Tensor", rad2deg),
        in_place_from_functional("aten::rad2deg_(Tensor(a!) self) -> Tensor(a!)", floating_only(rad2deg, "rad2deg")),
        typed("aten::xlogy.Tensor(Tensor self, Tensor other) -> Tensor", xlogy::<Input, Input>),
        typed("aten::xlogy.Scalar_Self(Scalar self, Tensor other) -> Tensor", xlogy::<Number, Input>),
        typed("aten::xlogy.Scalar_Other(Tensor self, Scalar other) -> Tensor", xlogy::<Input, Number>),
        in_place_from_functional("aten::xlogy_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", xlogy::<Input, Input>),
        in_place_from_functional("aten::xlogy_.Scalar_Other(Tensor(a!) self, Scalar other) -> Tensor(a!)", xlogy::<Input, Number>),
        typed("aten::heaviside(Tensor self, Tensor values) -> Tensor", heaviside),
        in_place_from_functional("aten::heaviside_(Tensor(a!) self, Tensor values) -> Tensor(a!)", heaviside),
        typed("aten::hardshrink(Tensor self, Scalar lambd=0.5) -> Tensor", hardshrink),
        typed("aten::nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", nansum),
        typed("aten::nanmean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", nanmean),
        typed("aten::diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) -> Tensor", diff),
        typed("aten::atleast_1d(Tensor self) -> Tensor", at_least_one(1)),
        typed("aten::atleast_1d.Sequence(Tensor[] tensors) -> Tensor[]", at_least_each(1)),
        typed("aten::atleast_2d(Tensor self) -> Tensor", at_least_one(2)),
        typed("aten::atleast_2d.Sequence(Tensor[] tensors) -> Tensor[]", at_least_each(2)),
        typed("aten::atleast_3d(Tensor self) -> Tensor", at_least_one(3)),
        typed("aten::atleast_3d.Sequence(Tensor[] tensors) -> Tensor[]", at_least_each(3)),
        typed("aten::tril_indices(int row, int col, int offset=0, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", triangle_indices(true)),
        typed("aten::triu_indices(int row, int col, int offset=0, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", triangle_indices(false)),
        typed("aten::scalar_tensor(Scalar s, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", scalar_tensor),
        typed("aten::is_nonzero(Tensor self) -> bool", is_nonzero),
        typed("aten::is_signed(Tensor self) -> bool", is_signed),
        typed("aten::empty_strided(SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", empty_strided),
        typed("aten::sum_to_size(Tensor self, SymInt[] size) -> Tensor", sum_to_size),
        typed("aten::new_empty_strided(Tensor self, SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", new_empty_strided),
    ]
}
