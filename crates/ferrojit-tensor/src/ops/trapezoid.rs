//! Numerical integration and differentiation of sampled values: `trapezoid`/`trapz`,
//! `cumulative_trapezoid` (with sample points `x` or a constant spacing `dx`) and `gradient`
//! (second-order central differences with first- or second-order edges). Each is composed of
//! tensor operations in the order PyTorch composes them, so dtypes promote and round as there.

use crate::dtype::{DType, Scalar};
use crate::error::{Result, TensorError};
use crate::ops::join::cat;
use crate::shape::wrap_dim;
use crate::tensor::Tensor;

fn invalid(message: impl Into<String>) -> TensorError {
    TensorError::InvalidArgument(message.into())
}

fn number(value: f64) -> Tensor {
    Tensor::wrapped_scalar(Scalar::Float(value))
}

/// `y[..., start:end, ...]` along `dim` (Python slice bounds).
fn part(y: &Tensor, dim: usize, start: Option<i64>, end: Option<i64>) -> Result<Tensor> {
    y.slice(dim as i64, start, end, 1)
}

/// `y`'s shape without `dim`, as zeros (the integral over no samples).
fn zeros_without(y: &Tensor, dim: usize) -> Result<Tensor> {
    let mut sizes = y.sizes().to_vec();
    sizes.remove(dim);
    Tensor::zeros(&sizes, y.dtype())
}

/// Which integral: the total (`trapezoid`) or the running one (`cumulative_trapezoid`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Integral {
    Total,
    Cumulative,
}

impl Integral {
    fn name(self) -> &'static str {
        match self {
            Integral::Total => "trapezoid",
            Integral::Cumulative => "cumulative_trapezoid",
        }
    }
}

fn check_dx(which: Integral, dx: &Scalar) -> Result<()> {
    if matches!(dx, Scalar::Bool(_)) {
        return Err(invalid(format!(
            "{}: Currently, we only support dx as a real number.",
            which.name()
        )));
    }
    Ok(())
}

/// `torch.trapezoid(y, dx=dx, dim)` / `torch.cumulative_trapezoid(y, dx=dx, dim)`.
pub fn trapezoid_dx(which: Integral, y: &Tensor, dx: &Scalar, dim: i64) -> Result<Tensor> {
    let d = wrap_dim(dim, y.dim())?;
    if which == Integral::Total && y.sizes()[d] == 0 {
        return zeros_without(y, d);
    }
    if y.dtype() == DType::Bool {
        return Err(invalid(format!(
            "{}: received a bool input for `y`, but bool is not supported",
            which.name()
        )));
    }
    check_dx(which, dx)?;
    let dx = dx.to_f64();
    match which {
        // dx * (sum(y) - (y_first + y_last) / 2)
        Integral::Total => {
            let ends = y
                .select(d as i64, 0)?
                .add(&y.select(d as i64, -1)?, &Scalar::Int(1))?;
            y.sum_dim(&[d as i64], false, None)?
                .sub(&ends.mul(&number(0.5))?, &Scalar::Int(1))?
                .mul(&number(dx))
        }
        Integral::Cumulative => {
            let pairs =
                part(y, d, Some(0), Some(-1))?.add(&part(y, d, Some(1), None)?, &Scalar::Int(1))?;
            number(dx / 2.0)
                .mul(&pairs)?
                .cumulative(d as i64, None, false)
        }
    }
}

/// `torch.trapezoid(y, x, dim)` / `torch.cumulative_trapezoid(y, x, dim)`: the spacing is
/// the differences of `x` (1-D along `dim`, or broadcast against `y` from the right).
pub fn trapezoid_x(which: Integral, y: &Tensor, x: &Tensor, dim: i64) -> Result<Tensor> {
    let d = wrap_dim(dim, y.dim())?;
    if which == Integral::Total && y.sizes()[d] == 0 {
        return zeros_without(y, d);
    }
    if y.dtype() == DType::Bool || x.dtype() == DType::Bool {
        return Err(invalid(format!(
            "{}: received a bool input for `x` or `y`, but bool is not supported",
            which.name()
        )));
    }
    let viewed = if x.dim() == 1 {
        if x.sizes()[0] != y.sizes()[d] {
            return Err(invalid(format!(
                "{}: There must be one `x` value for each sample point",
                which.name()
            )));
        }
        let mut shape = vec![1i64; y.dim()];
        shape[d] = x.sizes()[0] as i64;
        x.reshape(&shape)?
    } else if x.dim() < y.dim() {
        let mut shape = vec![1i64; y.dim() - x.dim()];
        shape.extend(x.sizes().iter().map(|&s| s as i64));
        x.reshape(&shape)?
    } else {
        x.clone()
    };
    let dx = part(&viewed, d, Some(1), None)?
        .sub(&part(&viewed, d, Some(0), Some(-1))?, &Scalar::Int(1))?;
    let pairs = part(y, d, Some(0), Some(-1))?.add(&part(y, d, Some(1), None)?, &Scalar::Int(1))?;
    let weighted = pairs.mul(&dx)?;
    let integrated = match which {
        Integral::Total => weighted.sum_dim(&[d as i64], false, None)?,
        Integral::Cumulative => weighted.cumulative(d as i64, None, false)?,
    };
    integrated.div(&number(2.0), None)
}

/// `torch.gradient`'s spacing: one scalar per dimension, or one coordinate tensor per
/// dimension.
pub enum GradientSpacing<'a> {
    Scalars(Vec<Scalar>),
    Coordinates(&'a [Tensor]),
}

impl GradientSpacing<'_> {
    fn len(&self) -> usize {
        match self {
            GradientSpacing::Scalars(s) => s.len(),
            GradientSpacing::Coordinates(c) => c.len(),
        }
    }
}

/// PyTorch's checks before `gradient`: dtype, spacing length, edge order and sizes.
/// `spacing_len` is None when no spacing was given; `dims` None when no dim was given.
fn check_gradient(
    input: &Tensor,
    spacing_len: Option<usize>,
    dims: Option<&[i64]>,
    edge_order: i64,
) -> Result<()> {
    if input.dtype() == DType::UInt8 {
        return Err(invalid("torch.gradient does not support uint8 input."));
    }
    match (spacing_len, dims) {
        (Some(len), None) if len != input.dim() => {
            return Err(invalid(format!(
                "torch.gradient expected spacing to be unspecified, a scalar, or a list of length equal to 'self.dim() = {}', since dim argument was not given, but got a list of length {len}",
                input.dim()
            )));
        }
        (Some(len), Some(dims)) if len != dims.len() => {
            return Err(invalid(format!(
                "torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim arguments to have the same length, but got a spacing argument of length {len} and a dim argument of length {}.",
                dims.len()
            )));
        }
        _ => {}
    }
    if edge_order != 1 && edge_order != 2 {
        return Err(invalid(
            "torch.gradient only supports edge_order=1 and edge_order=2.",
        ));
    }
    let too_small =
        || invalid("torch.gradient expected each dimension size to be at least edge_order+1");
    match dims {
        Some(dims) => {
            let mut seen = vec![false; input.dim()];
            for &dim in dims {
                let d = wrap_dim(dim, input.dim())?;
                if seen[d] {
                    return Err(invalid(format!(
                        "dim {d} appears multiple times in the list of dims"
                    )));
                }
                seen[d] = true;
            }
            for &dim in dims {
                let d = wrap_dim(dim, input.dim())?;
                if (input.sizes()[d] as i64) < edge_order + 1 {
                    return Err(too_small());
                }
            }
        }
        None => {
            if input.sizes().iter().any(|&s| (s as i64) < edge_order + 1) {
                return Err(too_small());
            }
        }
    }
    Ok(())
}

/// `torch.gradient(self, spacing, dim, edge_order)`: one tensor per dimension in `dims`
/// (every dimension when `dims` is None). `explicit_spacing` says whether the caller gave a
/// spacing (PyTorch checks its length only then).
pub fn gradient(
    input: &Tensor,
    spacing: &GradientSpacing<'_>,
    explicit_spacing: bool,
    dims: Option<&[i64]>,
    edge_order: i64,
) -> Result<Vec<Tensor>> {
    let all: Vec<i64> = (0..input.dim() as i64).collect();
    let processed = dims.unwrap_or(&all);
    check_gradient(
        input,
        explicit_spacing.then(|| spacing.len()),
        dims,
        edge_order,
    )?;
    let mut results = Vec::with_capacity(processed.len());
    for (i, &dim) in processed.iter().enumerate() {
        let d = wrap_dim(dim, input.dim())?;
        let slice = |start: Option<i64>, end: Option<i64>| part(input, d, start, end);
        let (prepend, center, append) = match spacing {
            GradientSpacing::Scalars(values) => {
                let h = Tensor::wrapped_scalar(values[i]);
                let center = slice(Some(2), None)?
                    .sub(&slice(Some(0), Some(-2))?, &Scalar::Int(1))?
                    .div(&h, None)?
                    .div(&number(2.0), None)?;
                let (prepend, append) = if edge_order == 1 {
                    (
                        slice(Some(1), Some(2))?
                            .sub(&slice(Some(0), Some(1))?, &Scalar::Int(1))?
                            .div(&h, None)?,
                        slice(Some(-1), None)?
                            .sub(&slice(Some(-2), Some(-1))?, &Scalar::Int(1))?
                            .div(&h, None)?,
                    )
                } else {
                    let combine = |terms: [(f64, Tensor); 3]| -> Result<Tensor> {
                        let [(a, x), (b, y), (c, z)] = terms;
                        number(a)
                            .mul(&x)?
                            .add(&number(b).mul(&y)?, &Scalar::Int(1))?
                            .sub(&number(c).mul(&z)?, &Scalar::Int(1))?
                            .div(&h, None)
                    };
                    (
                        combine([
                            (-1.5, slice(Some(0), Some(1))?),
                            (2.0, slice(Some(1), Some(2))?),
                            (0.5, slice(Some(2), Some(3))?),
                        ])?,
                        combine([
                            (0.5, slice(Some(-3), Some(-2))?),
                            (-2.0, slice(Some(-2), Some(-1))?),
                            (-1.5, slice(Some(-1), None)?),
                        ])?,
                    )
                };
                (prepend, center, append)
            }
            GradientSpacing::Coordinates(coordinates) => {
                let coordinate = &coordinates[i];
                if coordinate.dim() != 1 {
                    return Err(invalid(format!(
                        "torch.gradient expected each element of spacing to have one dimension, but got an element with {} dimensions!",
                        coordinate.dim()
                    )));
                }
                gradient_with_coordinates(input, coordinate, d, edge_order)?
            }
        };
        results.push(cat(&[prepend, center, append], d as i64)?);
    }
    Ok(results)
}

/// One direction of `gradient` with sample coordinates: (first edge, centre, last edge).
fn gradient_with_coordinates(
    input: &Tensor,
    coordinate: &Tensor,
    d: usize,
    edge_order: i64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let one = Scalar::Int(1);
    let slice = |start: Option<i64>, end: Option<i64>| part(input, d, start, end);
    let mut shape = vec![1i64; input.dim()];
    shape[d] = -1;
    let steps =
        part(coordinate, 0, Some(1), None)?.sub(&part(coordinate, 0, Some(0), Some(-1))?, &one)?;
    let dx1 = part(&steps, 0, Some(0), Some(-1))?;
    let dx2 = part(&steps, 0, Some(1), None)?;
    let both = dx1.add(&dx2, &one)?;
    let a = dx2.neg()?.div(&dx1.mul(&both)?, None)?.reshape(&shape)?;
    let b = dx2
        .sub(&dx1, &one)?
        .div(&dx1.mul(&dx2)?, None)?
        .reshape(&shape)?;
    let c = dx1.div(&dx2.mul(&both)?, None)?.reshape(&shape)?;
    let center = a
        .mul(&slice(Some(0), Some(-2))?)?
        .add(&b.mul(&slice(Some(1), Some(-1))?)?, &one)?
        .add(&c.mul(&slice(Some(2), None)?)?, &one)?;
    let count = steps.sizes()[0] as i64;
    let step = |index: i64| steps.select(0, if index < 0 { count + index } else { index });
    if edge_order == 1 {
        let prepend = slice(Some(1), Some(2))?
            .sub(&slice(Some(0), Some(1))?, &one)?
            .div(&step(0)?, None)?;
        let append = slice(Some(-1), None)?
            .sub(&slice(Some(-2), Some(-1))?, &one)?
            .div(&step(-1)?, None)?;
        return Ok((prepend, center, append));
    }
    let (h0, h1) = (step(0)?, step(1)?);
    let h01 = h0.add(&h1, &one)?;
    let a = number(2.0)
        .mul(&h0)?
        .add(&h1, &one)?
        .div(&h0.mul(&h01)?, None)?
        .neg()?;
    let b = h01.div(&h0.mul(&h1)?, None)?;
    let c = h0.neg()?.div(&h1.mul(&h01)?, None)?;
    let prepend = a
        .mul(&slice(Some(0), Some(1))?)?
        .add(&b.mul(&slice(Some(1), Some(2))?)?, &one)?
        .add(&c.mul(&slice(Some(2), Some(3))?)?, &one)?;
    let (last, before) = (step(-1)?, step(-2)?);
    let both = last.add(&before, &one)?;
    let a = last.div(&before.mul(&both)?, None)?;
    let b = both.div(&last.mul(&before)?, None)?.neg()?;
    let c = number(2.0)
        .mul(&last)?
        .add(&before, &one)?
        .div(&last.mul(&both)?, None)?;
    let append = a
        .mul(&slice(Some(-3), Some(-2))?)?
        .add(&b.mul(&slice(Some(-2), Some(-1))?)?, &one)?
        .add(&c.mul(&slice(Some(-1), None)?)?, &one)?;
    Ok((prepend, center, append))
}
