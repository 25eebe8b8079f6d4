//! Elementwise unary operations.

use crate::dtype::DType;
use crate::element::{Arith, Element, FloatArith};
use crate::error::{Result, TensorError};
use crate::macros::{dispatch_dtype, dispatch_float};
use crate::ops::vectorized_math::{self, VectorFunction};
use crate::tensor::Tensor;

fn map1<T: Element, R: Element>(t: &Tensor, f: impl Fn(T) -> R + Sync + Send) -> Tensor {
    let values: Vec<R> = crate::ops::parallel::map_collect(&t.gather::<T>(), |&x| f(x));
    Tensor::from_values(values, t.sizes())
}

#[derive(Debug, Clone, Copy)]
enum FloatUnary {
    Exp,
    Log,
    Sqrt,
    Tanh,
    Sigmoid,
}

fn float_kernel<T: FloatArith>(t: &Tensor, kind: FloatUnary) -> Tensor {
    let vectorized = match kind {
        FloatUnary::Exp => Some(VectorFunction::Exp),
        FloatUnary::Tanh => Some(VectorFunction::Tanh),
        FloatUnary::Sigmoid => Some(VectorFunction::Sigmoid),
        FloatUnary::Log | FloatUnary::Sqrt => None,
    };
    // Float32 results in float32 arithmetic over whole slices, as PyTorch's vectorized CPU
    // kernels compute them (float64 stays on the exact path below).
    if let (Some(function), DType::Float32) = (vectorized, T::DTYPE) {
        let mut values = t.gather::<f32>();
        vectorized_math::apply_parallel(function, &mut values);
        return Tensor::from_values(values, t.sizes());
    }
    match kind {
        FloatUnary::Exp => map1::<T, T>(t, |x| x.exp()),
        FloatUnary::Log => map1::<T, T>(t, |x| x.ln()),
        FloatUnary::Sqrt => map1::<T, T>(t, |x| x.sqrt()),
        FloatUnary::Tanh => map1::<T, T>(t, |x| x.tanh()),
        FloatUnary::Sigmoid => map1::<T, T>(t, |x| x.sigmoid()),
    }
}

fn relu_kernel<T: Arith>(t: &Tensor) -> Tensor {
    map1::<T, T>(t, |x| {
        if x.is_nan() || x > T::zero() {
            x
        } else {
            T::zero()
        }
    })
}

/// `relu_` written where a contiguous tensor lies; false when it is not contiguous.
fn relu_in_place<T: Arith>(t: &Tensor) -> bool {
    t.map_contiguous_in_place::<T>(|x| {
        if x.is_nan() || x > T::zero() {
            x
        } else {
            T::zero()
        }
    })
}

impl Tensor {
    /// Integer and bool inputs compute in the default float dtype, as PyTorch's unary float ops do.
    fn float_unary(&self, kind: FloatUnary) -> Tensor {
        let dtype = if self.dtype().is_floating_point() {
            self.dtype()
        } else {
            DType::default_float()
        };
        dispatch_float!(dtype, T => float_kernel::<T>(self, kind), _ => float_kernel::<f32>(self, kind))
    }

    pub fn neg(&self) -> Result<Tensor> {
        if self.dtype() == DType::Bool {
            return Err(TensorError::InvalidArgument(
                "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.".to_string(),
            ));
        }
        Ok(dispatch_dtype!(self.dtype(), T => map1::<T, T>(self, |x| x.neg())))
    }

    pub fn abs(&self) -> Result<Tensor> {
        // |z| of a complex number is real: PyTorch gives float/double, not complex.
        if self.dtype().is_complex() {
            return self.complex_abs();
        }
        Ok(dispatch_dtype!(self.dtype(), T => map1::<T, T>(self, |x| x.abs())))
    }

    pub fn relu(&self) -> Result<Tensor> {
        if self.dtype() == DType::Bool {
            return Err(TensorError::NotImplementedForDType {
                op: "clamp_min_scalar_cpu",
                dtype: DType::Bool,
            });
        }
        Ok(dispatch_dtype!(self.dtype(), T => relu_kernel::<T>(self)))
    }

    /// In-place relu; returns `self`. A contiguous tensor is updated where it lies (one pass
    /// over memory instead of compute, gather and scatter).
    pub fn relu_(&self) -> Result<Tensor> {
        let done = self.dtype() != DType::Bool
            && dispatch_dtype!(self.dtype(), T => relu_in_place::<T>(self));
        if done {
            return Ok(self.clone());
        }
        let result = self.relu()?;
        self.assign_result(&result)
    }

    pub fn exp(&self) -> Result<Tensor> {
        Ok(self.float_unary(FloatUnary::Exp))
    }

    /// Natural logarithm.
    pub fn log(&self) -> Result<Tensor> {
        Ok(self.float_unary(FloatUnary::Log))
    }

    pub fn sqrt(&self) -> Result<Tensor> {
        Ok(self.float_unary(FloatUnary::Sqrt))
    }

    pub fn tanh(&self) -> Result<Tensor> {
        Ok(self.float_unary(FloatUnary::Tanh))
    }

    pub fn sigmoid(&self) -> Result<Tensor> {
        Ok(self.float_unary(FloatUnary::Sigmoid))
    }
}
