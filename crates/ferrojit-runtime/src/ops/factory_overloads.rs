//! Factory and dtype-query overloads beside the common ones: `linspace`/`logspace` with
//! 0-dim tensor bounds, the deprecated inclusive `range`, `empty_permuted`, and
//! `result_type`, `can_cast` and `promote_types`, as typed kernels. Their out= overloads come
//! from these through `derived_variants.rs` (computed in `out`'s dtype).

use std::sync::Arc;

use ferrojit_tensor::ops::creation;
use ferrojit_tensor::{DType, Scalar, Tensor};

use super::binding::{typed, CpuDevice};
use super::creation_ops::Unread;
use crate::error::{Result, RuntimeError};
use crate::opdef::OperatorDeclaration;

type Input = Arc<Tensor>;

/// Refuses `start` or `end` tensors (those given) with dimensions, with PyTorch's message.
fn bound_value(op: &str, start: Option<&Tensor>, end: Option<&Tensor>) -> Result<()> {
    let start_dim = start.map_or(0, |tensor| tensor.dim());
    let end_dim = end.map_or(0, |tensor| tensor.dim());
    if start_dim == 0 && end_dim == 0 {
        return Ok(());
    }
    let detail = match (start, end) {
        (Some(_), Some(_)) => {
            format!("start with {start_dim} dimension(s) and end with {end_dim} dimension(s)")
        }
        (Some(_), None) => format!("start with {start_dim} dimension(s)"),
        _ => format!("end with {end_dim} dimension(s)"),
    };
    Err(RuntimeError::Other(format!(
        "{op} only supports 0-dimensional start and end tensors, but got {detail}."
    )))
}

fn item(tensor: &Tensor) -> f64 {
    tensor.to_f64_vec().first().copied().unwrap_or(0.0)
}

fn default_float(dtype: Option<DType>) -> DType {
    dtype.unwrap_or(DType::default_float())
}

fn linspace_tensor_tensor(
    start: Input,
    end: Input,
    steps: i64,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    bound_value("linspace", Some(&start), Some(&end))?;
    Ok(creation::linspace(
        item(&start),
        item(&end),
        steps,
        default_float(dtype),
    )?)
}

fn linspace_tensor_scalar(
    start: Input,
    end: f64,
    steps: i64,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    bound_value("linspace", Some(&start), None)?;
    Ok(creation::linspace(
        item(&start),
        end,
        steps,
        default_float(dtype),
    )?)
}

fn linspace_scalar_tensor(
    start: f64,
    end: Input,
    steps: i64,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    bound_value("linspace", None, Some(&end))?;
    Ok(creation::linspace(
        start,
        item(&end),
        steps,
        default_float(dtype),
    )?)
}

#[allow(clippy::too_many_arguments)]
fn logspace_tensor_tensor(
    start: Input,
    end: Input,
    steps: i64,
    base: f64,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    bound_value("logspace", Some(&start), Some(&end))?;
    Ok(creation::logspace(
        item(&start),
        item(&end),
        steps,
        base,
        default_float(dtype),
    )?)
}

#[allow(clippy::too_many_arguments)]
fn logspace_tensor_scalar(
    start: Input,
    end: f64,
    steps: i64,
    base: f64,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    bound_value("logspace", Some(&start), None)?;
    Ok(creation::logspace(
        item(&start),
        end,
        steps,
        base,
        default_float(dtype),
    )?)
}

#[allow(clippy::too_many_arguments)]
fn logspace_scalar_tensor(
    start: f64,
    end: Input,
    steps: i64,
    base: f64,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    bound_value("logspace", None, Some(&end))?;
    Ok(creation::logspace(
        start,
        item(&end),
        steps,
        base,
        default_float(dtype),
    )?)
}

/// `torch.range(start, end, step)`: `start + i * step` up to and including `end`, in the
/// dtype's accumulate type (int64 for the integer dtypes, double for the floating ones), with
/// `(end - start) / step + 1` elements, truncated, as ATen's `range_out`.
fn range_values(start: Scalar, end: Scalar, step: Scalar, dtype: DType) -> Result<Tensor> {
    let integral = !dtype.is_floating_point() && !dtype.is_complex();
    let (start_f, end_f, step_f) = if integral {
        (
            start.to_f64().trunc(),
            end.to_f64().trunc(),
            step.to_f64().trunc(),
        )
    } else {
        (start.to_f64(), end.to_f64(), step.to_f64())
    };
    if step_f == 0.0 || step_f.is_nan() {
        return Err(RuntimeError::Other("step must be nonzero".to_string()));
    }
    if !start_f.is_finite() || !end_f.is_finite() {
        return Err(RuntimeError::Other(format!(
            "unsupported range: {start_f} -> {end_f}"
        )));
    }
    if !((step_f > 0.0 && end_f >= start_f) || (step_f < 0.0 && end_f <= start_f)) {
        return Err(RuntimeError::Other(
            "upper bound and lower bound inconsistent with step sign".to_string(),
        ));
    }
    let values: Vec<f64> = if integral {
        let (start_i, end_i, step_i) = (start_f as i64, end_f as i64, step_f as i64);
        let count = (end_i - start_i) / step_i + 1;
        (0..count)
            .map(|index| (start_i + index * step_i) as f64)
            .collect()
    } else {
        let count = ((end_f - start_f) / step_f + 1.0) as i64;
        (0..count)
            .map(|index| start_f + index as f64 * step_f)
            .collect()
    };
    let count = values.len();
    let result = Tensor::from_vec(values, &[count])?;
    Ok(result.to_dtype(dtype))
}

fn range(
    start: Scalar,
    end: Scalar,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    range_values(start, end, Scalar::Int(1), default_float(dtype))
}

fn range_step(
    start: Scalar,
    end: Scalar,
    step: Scalar,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    range_values(start, end, step, default_float(dtype))
}

/// `torch.empty_permuted(size, physical_layout)`: a tensor of `size` whose memory holds its
/// dimensions in the order `physical_layout` lists them (outermost first). ferrojit's
/// "uninitialised" memory is zeros.
fn empty_permuted(
    size: Vec<i64>,
    physical_layout: Vec<i64>,
    dtype: Option<DType>,
    _layout: Unread,
    _device: CpuDevice,
    _pin_memory: Unread,
) -> Result<Tensor> {
    if size.len() != physical_layout.len() {
        return Err(RuntimeError::Other(format!(
            "Number of dimensions in size does not match the length of the physical_layout; \
             i.e. len(size) = {} is not equal to len(physical_layout) = {}",
            size.len(),
            physical_layout.len()
        )));
    }
    let rank = size.len();
    let mut seen = vec![false; rank];
    let mut physical_sizes = Vec::with_capacity(rank);
    for &dim in &physical_layout {
        let index = ferrojit_tensor::wrap_dim(dim, rank)?;
        if seen[index] {
            return Err(RuntimeError::Other("Duplicate dim not allowed".to_string()));
        }
        seen[index] = true;
        let extent = usize::try_from(size[index]).map_err(|_| {
            RuntimeError::Other(format!(
                "Trying to create tensor with negative dimension {}: {size:?}",
                size[index]
            ))
        })?;
        physical_sizes.push(extent);
    }
    let physical = Tensor::zeros(&physical_sizes, default_float(dtype))?;
    // Logical dim d sits at position `inverse[d]` of the physical tensor.
    let mut inverse = vec![0i64; rank];
    for (position, &dim) in physical_layout.iter().enumerate() {
        inverse[ferrojit_tensor::wrap_dim(dim, rank)?] = position as i64;
    }
    Ok(physical.permute(&inverse)?)
}

fn result_type_tensor(tensor: Input, other: Input) -> Result<i64> {
    Ok(ferrojit_tensor::result_type(&[&tensor, &other]).scalar_type_index())
}

fn result_type_scalar(tensor: Input, other: Scalar) -> Result<i64> {
    let other = Tensor::wrapped_scalar(other);
    Ok(ferrojit_tensor::result_type(&[&tensor, &other]).scalar_type_index())
}

fn result_type_scalar_tensor(scalar: Scalar, tensor: Input) -> Result<i64> {
    let scalar = Tensor::wrapped_scalar(scalar);
    Ok(ferrojit_tensor::result_type(&[&scalar, &tensor]).scalar_type_index())
}

fn result_type_scalar_scalar(scalar1: Scalar, scalar2: Scalar) -> Result<i64> {
    let first = Tensor::wrapped_scalar(scalar1);
    let second = Tensor::wrapped_scalar(scalar2);
    Ok(ferrojit_tensor::result_type(&[&first, &second]).scalar_type_index())
}

fn can_cast(from: DType, to: DType) -> Result<bool> {
    Ok(ferrojit_tensor::can_cast(from, to))
}

fn promote_types(type1: DType, type2: DType) -> Result<i64> {
    Ok(ferrojit_tensor::promote_types(type1, type2).scalar_type_index())
}

/// Every operator of this file, in declaration order (within one name, PyTorch's).
#[rustfmt::skip]
pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        typed("aten::linspace.Tensor_Tensor(Tensor start, Tensor end, int steps, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", linspace_tensor_tensor),
        typed("aten::linspace.Tensor_Scalar(Tensor start, Scalar end, int steps, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", linspace_tensor_scalar),
        typed("aten::linspace.Scalar_Tensor(Scalar start, Tensor end, int steps, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", linspace_scalar_tensor),
        typed("aten::logspace.Tensor_Tensor(Tensor start, Tensor end, int steps, float base=10., *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", logspace_tensor_tensor),
        typed("aten::logspace.Tensor_Scalar(Tensor start, Scalar end, int steps, float base=10., *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", logspace_tensor_scalar),
        typed("aten::logspace.Scalar_Tensor(Scalar start, Tensor end, int steps, float base=10., *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", logspace_scalar_tensor),
        typed("aten::range.step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", range_step),
        typed("aten::range(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", range),
        typed("aten::empty_permuted(SymInt[] size, int[] physical_layout, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", empty_permuted),
        typed("aten::result_type.Tensor(Tensor tensor, Tensor other) -> ScalarType", result_type_tensor),
        typed("aten::result_type.Scalar(Tensor tensor, Scalar other) -> ScalarType", result_type_scalar),
        typed("aten::result_type.Scalar_Tensor(Scalar scalar, Tensor tensor) -> ScalarType", result_type_scalar_tensor),
        typed("aten::result_type.Scalar_Scalar(Scalar scalar1, Scalar scalar2) -> ScalarType", result_type_scalar_scalar),
        typed("aten::can_cast(ScalarType from_, ScalarType to) -> bool", can_cast),
        typed("aten::promote_types(ScalarType type1, ScalarType type2) -> ScalarType", promote_types),
    ]
}
