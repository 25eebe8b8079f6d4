//! Pointwise operators with three operands or optional bounds: where, masked_fill, clamp,
//! lerp, addcmul and addcdiv, with broadcasting and PyTorch's promotion.

use crate::dtype::{DType, Scalar};
use crate::element::{Arith, Element};
use crate::error::{Result, TensorError};
use crate::macros::dispatch_dtype;
use crate::promotion::result_type;
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;

/// Applies `f` over the broadcast of three tensors, all read as `T`.
fn map3<T: Element, R: Element>(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    shape: &[usize],
    f: impl Fn(T, T, T) -> R,
) -> Result<Tensor> {
    let av = a.broadcast_to(shape)?.gather::<T>();
    let bv = b.broadcast_to(shape)?.gather::<T>();
    let cv = c.broadcast_to(shape)?.gather::<T>();
    let out: Vec<R> = av
        .into_iter()
        .zip(bv)
        .zip(cv)
        .map(|((x, y), z)| f(x, y, z))
        .collect();
    Ok(Tensor::from_values(out, shape))
}

fn broadcast3(a: &Tensor, b: &Tensor, c: &Tensor) -> Result<Vec<usize>> {
    broadcast_shapes(&broadcast_shapes(a.sizes(), b.sizes())?, c.sizes())
}

/// NaN-propagating clamp; a NaN bound also propagates, and `low > high` yields `high`.
fn clamp_value<T: Arith>(x: T, low: Option<T>, high: Option<T>) -> T {
    if x.is_nan() {
        return x;
    }
    let mut v = x;
    if let Some(l) = low {
        if l.is_nan() {
            return l;
        }
        if v < l {
            v = l;
        }
    }
    if let Some(h) = high {
        if h.is_nan() {
            return h;
        }
        if v > h {
            v = h;
        }
    }
    v
}

fn lerp_value(start: f64, end: f64, weight: f64) -> f64 {
    // PyTorch's formula: exact at both ends of the weight range.
    if weight.abs() < 0.5 {
        start + weight * (end - start)
    } else {
        end - (end - start) * (1.0 - weight)
    }
}

impl Tensor {
    /// `torch.where(condition, self, other)`.
    pub fn where_(condition: &Tensor, input: &Tensor, other: &Tensor) -> Result<Tensor> {
        if condition.dtype() != DType::Bool && condition.dtype() != DType::UInt8 {
            return Err(TensorError::InvalidArgument(format!(
                "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
                condition.dtype().scalar_type_name()
            )));
        }
        let dtype = result_type(&[input, other]);
        let shape = broadcast3(condition, input, other)?;
        let cond = condition.broadcast_to(&shape)?.gather::<bool>();
        dispatch_dtype!(dtype, T => {
            let a = input.broadcast_to(&shape)?.gather::<T>();
            let b = other.broadcast_to(&shape)?.gather::<T>();
            let out: Vec<T> = cond
                .iter()
                .zip(a.into_iter().zip(b))
                .map(|(&c, (x, y))| if c { x } else { y })
                .collect();
            Ok(Tensor::from_values(out, &shape))
        })
    }

    fn check_mask(mask: &Tensor, value: Option<&Tensor>) -> Result<()> {
        if mask.dtype() != DType::Bool {
            return Err(TensorError::InvalidArgument(format!(
                "masked_fill_ only supports boolean masks, but got mask with dtype {}",
                mask.dtype().name()
            )));
        }
        if let Some(v) = value {
            if v.dim() != 0 {
                return Err(TensorError::InvalidArgument(format!(
                    "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                    v.dim()
                )));
            }
        }
        Ok(())
    }

    fn masked_fill_impl(&self, mask: &Tensor, value: &Scalar) -> Result<Tensor> {
        let shape = broadcast_shapes(self.sizes(), mask.sizes())?;
        let m = mask.broadcast_to(&shape)?.gather::<bool>();
        dispatch_dtype!(self.dtype(), T => {
            let fill = T::from_scalar(value);
            let input = self.broadcast_to(&shape)?.gather::<T>();
            let out: Vec<T> = input
                .into_iter()
                .zip(m)
                .map(|(x, c)| if c { fill } else { x })
                .collect();
            Ok(Tensor::from_values(out, &shape))
        })
    }

    /// `masked_fill(mask, value)`; the result has the broadcast shape of self and mask.
    pub fn masked_fill(&self, mask: &Tensor, value: &Scalar) -> Result<Tensor> {
        Tensor::check_mask(mask, None)?;
        self.masked_fill_impl(mask, value)
    }

    /// `masked_fill(mask, value_tensor)` with a 0-dim value.
    pub fn masked_fill_tensor(&self, mask: &Tensor, value: &Tensor) -> Result<Tensor> {
        Tensor::check_mask(mask, Some(value))?;
        self.masked_fill_impl(mask, &value.item()?)
    }

    /// In-place `masked_fill_`: the mask must broadcast to self's shape.
    pub fn masked_fill_(&self, mask: &Tensor, value: &Scalar) -> Result<Tensor> {
        Tensor::check_mask(mask, None)?;
        let result = self.masked_fill_impl(mask, value)?;
        self.write_same_shape(&result)
    }

    pub fn masked_fill_tensor_(&self, mask: &Tensor, value: &Tensor) -> Result<Tensor> {
        Tensor::check_mask(mask, Some(value))?;
        let result = self.masked_fill_impl(mask, &value.item()?)?;
        self.write_same_shape(&result)
    }

    /// Writes an in-place result whose shape must equal self's.
    pub(crate) fn write_same_shape(&self, result: &Tensor) -> Result<Tensor> {
        if result.sizes() != self.sizes() {
            return Err(TensorError::OutputShapeMismatch {
                output: self.sizes().to_vec(),
                broadcast: result.sizes().to_vec(),
            });
        }
        self.assign_result(result)
    }

    /// `clamp(min, max)` with scalar bounds (either may be missing, not both).
    pub fn clamp(&self, min: Option<&Scalar>, max: Option<&Scalar>) -> Result<Tensor> {
        let low = min.map(|s| Tensor::wrapped_scalar(*s));
        let high = max.map(|s| Tensor::wrapped_scalar(*s));
        self.clamp_tensor(low.as_ref(), high.as_ref())
    }

    /// `clamp(min, max)` with tensor bounds, broadcasting all three.
    pub fn clamp_tensor(&self, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<Tensor> {
        if min.is_none() && max.is_none() {
            return Err(TensorError::InvalidArgument(
                "torch.clamp: At least one of 'min' or 'max' must not be None".to_string(),
            ));
        }
        let mut operands: Vec<&Tensor> = vec![self];
        operands.extend(min);
        operands.extend(max);
        let dtype = result_type(&operands);
        // Missing bounds stand in as the input itself and are ignored.
        let low = min.unwrap_or(self);
        let high = max.unwrap_or(self);
        let shape = broadcast3(self, low, high)?;
        let (has_low, has_high) = (min.is_some(), max.is_some());
        dispatch_dtype!(dtype, T => map3::<T, T>(self, low, high, &shape, |x, l, h| {
            clamp_value(x, has_low.then_some(l), has_high.then_some(h))
        }))
    }

    /// `lerp(end, weight)`: `self + weight * (end - self)`; floating dtypes only.
    pub fn lerp(&self, end: &Tensor, weight: &Tensor) -> Result<Tensor> {
        if self.dtype() != end.dtype() {
            return Err(TensorError::InvalidArgument(format!(
                "expected dtype {} for `end` but got dtype {}",
                self.dtype().name(),
                end.dtype().name()
            )));
        }
        if !weight.is_wrapped_number() && weight.dtype() != self.dtype() {
            return Err(TensorError::InvalidArgument(format!(
                "expected dtype {} for `weight` but got dtype {}",
                self.dtype().name(),
                weight.dtype().name()
            )));
        }
        let dtype = self.dtype();
        if !dtype.is_floating_point() {
            return Err(TensorError::NotImplementedForDType {
                op: "lerp_kernel_scalar",
                dtype,
            });
        }
        let shape = broadcast3(self, end, weight)?;
        dispatch_dtype!(dtype, T => map3::<T, T>(self, end, weight, &shape, |s, e, w| {
            T::from_f64(lerp_value(s.to_f64(), e.to_f64(), w.to_f64()))
        }))
    }

    /// `addcmul(tensor1, tensor2, value)`: `self + value * tensor1 * tensor2`.
    pub fn addcmul(&self, tensor1: &Tensor, tensor2: &Tensor, value: &Scalar) -> Result<Tensor> {
        self.addc(tensor1, tensor2, value, false)
    }

    /// `addcdiv(tensor1, tensor2, value)`: `self + value * tensor1 / tensor2`.
    pub fn addcdiv(&self, tensor1: &Tensor, tensor2: &Tensor, value: &Scalar) -> Result<Tensor> {
        self.addc(tensor1, tensor2, value, true)
    }

    fn addc(&self, t1: &Tensor, t2: &Tensor, value: &Scalar, divide: bool) -> Result<Tensor> {
        if divide && t1.dtype().is_integral(true) && t2.dtype().is_integral(true) {
            // "future  release" with two spaces, as PyTorch's message has it.
            return Err(TensorError::InvalidArgument(
                "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes.".to_string(),
            ));
        }
        let dtype = result_type(&[self, t1, t2]);
        if dtype == DType::Bool {
            return Err(TensorError::NotImplementedForDType {
                op: if divide {
                    "addcdiv_cpu_out"
                } else {
                    "addcmul_cpu_out"
                },
                dtype,
            });
        }
        let shape = broadcast3(self, t1, t2)?;
        dispatch_dtype!(dtype, T => {
            let v = T::from_scalar(value);
            if divide {
                map3::<T, T>(self, t1, t2, &shape, |s, a, b| s.add(v.mul(a.div(b))))
            } else {
                map3::<T, T>(self, t1, t2, &shape, |s, a, b| s.add(v.mul(a.mul(b))))
            }
        })
    }
}
