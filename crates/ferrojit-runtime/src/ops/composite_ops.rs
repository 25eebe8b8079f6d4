//! Operators PyTorch defines by composing other ATen operators (CompositeImplicit kernels):
//! each kernel here is the same composition over the tensor library, so it rounds as PyTorch's
//! does. `deg2rad`, `xlogy`, `heaviside`, `hardshrink`, `nansum`/`nanmean`, `diff`, `atleast_*`,
//! the triangle index builders and small tensor predicates.

use ferrojit_ir::Type;
use ferrojit_tensor::ops::binary::BinaryOp;
use ferrojit_tensor::ops::pointwise::UnaryOp;
use ferrojit_tensor::{DType, Scalar, Tensor, TensorError};

use super::{optional_dtype, optional_tensor, pop_array, push, scalar, wrapped, KernelTableEntry};
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::registry::Stack;

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

fn deg2rad(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    push(
        stack,
        scale_angle(&*a.to_tensor()?, DEGREES_TO_RADIANS, "deg2rad")?,
    )
}

fn rad2deg(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    push(
        stack,
        scale_angle(&*a.to_tensor()?, RADIANS_TO_DEGREES, "rad2deg")?,
    )
}

/// The in-place forms: computed in `self`'s own (floating) dtype and written back.
fn in_place(stack: &mut Stack, factor: f64, name: &str) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    let tensor = a.to_tensor()?;
    if !tensor.dtype().is_floating_point() {
        return Err(RuntimeError::Other(format!(
            "{name}_(): result type Float can't be cast to the desired output type {}",
            tensor.dtype().name()
        )));
    }
    let result = scale_angle(&tensor, factor, name)?;
    push(stack, result.write_into_out(&tensor)?)
}

fn deg2rad_(stack: &mut Stack) -> Result<()> {
    in_place(stack, DEGREES_TO_RADIANS, "deg2rad")
}

fn rad2deg_(stack: &mut Stack) -> Result<()> {
    in_place(stack, RADIANS_TO_DEGREES, "rad2deg")
}

/// `xlogy(x, y)`: `x * log(y)`, 0 where `x == 0`, NaN where `y` is NaN (that test comes first),
/// in the promoted floating dtype.
fn xlogy_tensors(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let product = x.mul(&y.unary(UnaryOp::Log)?)?;
    let zero = Tensor::wrapped_scalar(Scalar::Float(0.0));
    let product = Tensor::where_(&x.eq(&zero)?, &zero, &product)?;
    let nan = Tensor::wrapped_scalar(Scalar::Float(f64::NAN));
    Ok(Tensor::where_(&y.unary(UnaryOp::IsNan)?, &nan, &product)?)
}

fn xlogy(stack: &mut Stack) -> Result<()> {
    let [x, y] = pop_array::<2>(stack)?;
    let as_tensor = |value: &IValue| -> Result<Tensor> {
        match value {
            IValue::Tensor(_) => Ok(Tensor::clone(&*value.to_tensor()?)),
            other => wrapped(other),
        }
    };
    push(stack, xlogy_tensors(&as_tensor(&x)?, &as_tensor(&y)?)?)
}

fn xlogy_(stack: &mut Stack) -> Result<()> {
    let [x, y] = pop_array::<2>(stack)?;
    let target = x.to_tensor()?;
    let other = match &y {
        IValue::Tensor(_) => Tensor::clone(&*y.to_tensor()?),
        number => wrapped(number)?,
    };
    push(
        stack,
        xlogy_tensors(&target, &other)?.write_into_out(&target)?,
    )
}

/// `heaviside(x, values)`: `values` where `x == 0`, else `x > 0`; both must share a dtype.
fn heaviside_tensors(input: &Tensor, values: &Tensor) -> Result<Tensor> {
    if input.dtype() != values.dtype() {
        return Err(RuntimeError::Other(
            "heaviside is not yet implemented for tensors with different dtypes".to_string(),
        ));
    }
    let zero = Tensor::wrapped_scalar(Scalar::Int(0));
    let positive = input.gt(&zero)?.to_dtype(input.dtype());
    Ok(Tensor::where_(&input.eq(&zero)?, values, &positive)?)
}

fn heaviside(stack: &mut Stack) -> Result<()> {
    let [a, values] = pop_array::<2>(stack)?;
    push(
        stack,
        heaviside_tensors(&*a.to_tensor()?, &*values.to_tensor()?)?,
    )
}

fn heaviside_(stack: &mut Stack) -> Result<()> {
    let [a, values] = pop_array::<2>(stack)?;
    let target = a.to_tensor()?;
    let result = heaviside_tensors(&target, &*values.to_tensor()?)?;
    push(stack, result.write_into_out(&target)?)
}

/// `hardshrink(x, lambd)`: 0 where `-lambd <= x <= lambd`, else `x` (NaN stays NaN).
fn hardshrink(stack: &mut Stack) -> Result<()> {
    let [a, lambd] = pop_array::<2>(stack)?;
    let input = a.to_tensor()?;
    let lambd = scalar(&lambd)?;
    let negated = match lambd {
        Scalar::Bool(b) => Scalar::Int(-i64::from(b)),
        Scalar::Int(i) => Scalar::Int(i.saturating_neg()),
        Scalar::Float(f) => Scalar::Float(-f),
    };
    let inside = input.ge(&Tensor::wrapped_scalar(negated))?.binary(
        &input.le(&Tensor::wrapped_scalar(lambd))?,
        BinaryOp::LogicalAnd,
    )?;
    push(stack, input.masked_fill(&inside, &Scalar::Int(0))?)
}

/// The dims of an `int[1]?` argument (None: every dim).
fn dims_of(value: &IValue) -> Result<Vec<i64>> {
    match value {
        IValue::None => Ok(Vec::new()),
        other => other.to_int_vec(),
    }
}

/// `x` with NaNs replaced by zero, as ATen's `nansum` skips them.
fn without_nans(input: &Tensor) -> Result<Tensor> {
    if !input.dtype().is_floating_point() {
        return Ok(input.clone());
    }
    Ok(input.masked_fill(&input.unary(UnaryOp::IsNan)?, &Scalar::Int(0))?)
}

fn nansum(stack: &mut Stack) -> Result<()> {
    let [a, dim, keepdim, dtype] = pop_array::<4>(stack)?;
    let input = without_nans(&*a.to_tensor()?)?;
    let result = input.sum_dim(&dims_of(&dim)?, keepdim.to_bool()?, optional_dtype(&dtype)?)?;
    push(stack, result)
}

/// `nanmean`: ATen's `nansum(...) / (number of non-NaN elements)`; floating inputs only.
fn nanmean(stack: &mut Stack) -> Result<()> {
    let [a, dim, keepdim, dtype] = pop_array::<4>(stack)?;
    let input = a.to_tensor()?;
    if !input.dtype().is_floating_point() {
        return Err(RuntimeError::Other(format!(
            "nanmean(): expected input to have floating point dtype but got {}",
            input.dtype().name()
        )));
    }
    let (dims, keepdim) = (dims_of(&dim)?, keepdim.to_bool()?);
    let total = without_nans(&input)?.sum_dim(&dims, keepdim, optional_dtype(&dtype)?)?;
    let present = input
        .unary(UnaryOp::IsNan)?
        .unary(UnaryOp::LogicalNot)?
        .sum_dim(&dims, keepdim, None)?;
    push(stack, total.div(&present, None)?)
}

/// `diff(n, dim, prepend, append)`: `n` rounds of `x[1:] - x[:-1]` along `dim` (`!=` for bool).
fn diff(stack: &mut Stack) -> Result<()> {
    let [a, n, dim, prepend, append] = pop_array::<5>(stack)?;
    let input = a.to_tensor()?;
    let n = n.to_int()?;
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
    let dim = dim.to_int()?;
    let mut pieces = Vec::new();
    if let Some(before) = optional_tensor(&prepend)? {
        pieces.push(Tensor::clone(&before));
    }
    pieces.push(Tensor::clone(&input));
    if let Some(after) = optional_tensor(&append)? {
        pieces.push(Tensor::clone(&after));
    }
    let mut current = if pieces.len() == 1 {
        pieces.pop().unwrap_or_else(|| Tensor::clone(&input))
    } else {
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
    push(stack, current)
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

fn at_least_kernel(stack: &mut Stack, rank: usize) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    push(stack, at_least(&*a.to_tensor()?, rank)?)
}

fn at_least_list(stack: &mut Stack, rank: usize) -> Result<()> {
    let [list] = pop_array::<1>(stack)?;
    let tensors = list
        .to_tensor_vec()?
        .iter()
        .map(|tensor| at_least(tensor, rank).map(IValue::from))
        .collect::<Result<Vec<IValue>>>()?;
    push(stack, IValue::list(Type::Tensor, tensors))
}

fn atleast_1d(stack: &mut Stack) -> Result<()> {
    at_least_kernel(stack, 1)
}
fn atleast_2d(stack: &mut Stack) -> Result<()> {
    at_least_kernel(stack, 2)
}
fn atleast_3d(stack: &mut Stack) -> Result<()> {
    at_least_kernel(stack, 3)
}
fn atleast_1d_list(stack: &mut Stack) -> Result<()> {
    at_least_list(stack, 1)
}
fn atleast_2d_list(stack: &mut Stack) -> Result<()> {
    at_least_list(stack, 2)
}
fn atleast_3d_list(stack: &mut Stack) -> Result<()> {
    at_least_list(stack, 3)
}

/// The `2 x N` coordinates of a `row x col` matrix's lower (or upper) triangle at `offset`,
/// row by row, as ATen's `tril_indices`/`triu_indices`.
fn triangle_indices(stack: &mut Stack, lower: bool) -> Result<()> {
    let [row, col, offset, dtype, _layout, _device, _pin] = pop_array::<7>(stack)?;
    let (row, col, offset) = (row.to_int()?, col.to_int()?, offset.to_int()?);
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
    let dtype = optional_dtype(&dtype)?.unwrap_or(DType::Int64);
    push(stack, indices.to_dtype(dtype))
}

fn tril_indices(stack: &mut Stack) -> Result<()> {
    triangle_indices(stack, true)
}

fn triu_indices(stack: &mut Stack) -> Result<()> {
    triangle_indices(stack, false)
}

/// `scalar_tensor(s, dtype)`: a 0-dim tensor, of the default float dtype unless given.
fn scalar_tensor(stack: &mut Stack) -> Result<()> {
    let [value, dtype, _layout, _device, _pin] = pop_array::<5>(stack)?;
    let dtype = optional_dtype(&dtype)?.unwrap_or(DType::default_float());
    push(stack, Tensor::scalar_tensor(scalar(&value)?, dtype))
}

/// `is_nonzero`: the truth of a one-element tensor.
fn is_nonzero(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    let tensor = a.to_tensor()?;
    match tensor.numel() {
        1 => push(
            stack,
            tensor.to_f64_vec().first().is_some_and(|&v| v != 0.0),
        ),
        0 => Err(RuntimeError::Other(
            "Boolean value of Tensor with no values is ambiguous".to_string(),
        )),
        _ => Err(RuntimeError::Other(
            "Boolean value of Tensor with more than one value is ambiguous".to_string(),
        )),
    }
}

fn is_signed(stack: &mut Stack) -> Result<()> {
    let [a] = pop_array::<1>(stack)?;
    let dtype = a.to_tensor()?.dtype();
    push(stack, !matches!(dtype, DType::Bool | DType::UInt8))
}

/// `empty_strided(size, stride)`: zeros (PyTorch leaves them uninitialised) in a storage just
/// large enough for the strided geometry.
fn empty_strided(stack: &mut Stack) -> Result<()> {
    let [size, stride, dtype, _layout, _device, _pin] = pop_array::<6>(stack)?;
    let dtype = optional_dtype(&dtype)?.unwrap_or(DType::default_float());
    push(
        stack,
        strided_zeros(&size.to_int_vec()?, &stride.to_int_vec()?, dtype)?,
    )
}

fn new_empty_strided(stack: &mut Stack) -> Result<()> {
    let [a, size, stride, dtype, _layout, _device, _pin] = pop_array::<7>(stack)?;
    let dtype = optional_dtype(&dtype)?.unwrap_or(a.to_tensor()?.dtype());
    push(
        stack,
        strided_zeros(&size.to_int_vec()?, &stride.to_int_vec()?, dtype)?,
    )
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

pub const TABLE: &[KernelTableEntry] = &[
    ("aten::deg2rad(Tensor self) -> Tensor", deg2rad),
    ("aten::deg2rad_(Tensor(a!) self) -> Tensor(a!)", deg2rad_),
    ("aten::rad2deg(Tensor self) -> Tensor", rad2deg),
    ("aten::rad2deg_(Tensor(a!) self) -> Tensor(a!)", rad2deg_),
    ("aten::xlogy.Tensor(Tensor self, Tensor other) -> Tensor", xlogy),
    ("aten::xlogy.Scalar_Self(Scalar self, Tensor other) -> Tensor", xlogy),
    ("aten::xlogy.Scalar_Other(Tensor self, Scalar other) -> Tensor", xlogy),
    ("aten::xlogy_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", xlogy_),
    ("aten::xlogy_.Scalar_Other(Tensor(a!) self, Scalar other) -> Tensor(a!)", xlogy_),
    ("aten::heaviside(Tensor self, Tensor values) -> Tensor", heaviside),
    ("aten::heaviside_(Tensor(a!) self, Tensor values) -> Tensor(a!)", heaviside_),
    ("aten::hardshrink(Tensor self, Scalar lambd=0.5) -> Tensor", hardshrink),
    ("aten::nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", nansum),
    ("aten::nanmean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", nanmean),
    ("aten::diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) -> Tensor", diff),
    ("aten::atleast_1d(Tensor self) -> Tensor", atleast_1d),
    ("aten::atleast_1d.Sequence(Tensor[] tensors) -> Tensor[]", atleast_1d_list),
    ("aten::atleast_2d(Tensor self) -> Tensor", atleast_2d),
    ("aten::atleast_2d.Sequence(Tensor[] tensors) -> Tensor[]", atleast_2d_list),
    ("aten::atleast_3d(Tensor self) -> Tensor", atleast_3d),
    ("aten::atleast_3d.Sequence(Tensor[] tensors) -> Tensor[]", atleast_3d_list),
    ("aten::tril_indices(int row, int col, int offset=0, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", tril_indices),
    ("aten::triu_indices(int row, int col, int offset=0, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", triu_indices),
    ("aten::scalar_tensor(Scalar s, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", scalar_tensor),
    ("aten::is_nonzero(Tensor self) -> bool", is_nonzero),
    ("aten::is_signed(Tensor self) -> bool", is_signed),
    ("aten::empty_strided(SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", empty_strided),
    ("aten::new_empty_strided(Tensor self, SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", new_empty_strided),
];
