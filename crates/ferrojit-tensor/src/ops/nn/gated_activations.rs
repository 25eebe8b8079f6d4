//! Activations with a parameter or a gate: `log_sigmoid` (and `log_sigmoid_forward`'s
//! buffer), `softshrink`, `glu` and `prelu` (`_prelu_kernel`), with PyTorch's checks, dtype
//! rules and messages. All of them take floating inputs only, as ATen's CPU kernels do.

use super::{invalid, require_float};
use crate::dtype::{DType, Scalar};
use crate::error::{Result, TensorError};
use crate::ops::pointwise::UnaryOp;
use crate::tensor::Tensor;
use crate::Element;

/// Maps every element of a floating tensor through `f` in f64, one rounding to its dtype.
fn map_floats(input: &Tensor, f: impl Fn(f64) -> f64) -> Tensor {
    crate::macros::dispatch_dtype!(input.dtype(), T => {
        let values: Vec<T> = input.gather::<T>().into_iter().map(|v| T::from_f64(f(v.to_f64()))).collect();
        Tensor::from_values(values, input.sizes())
    })
}

/// `log_sigmoid_forward(x)`: `min(0, x) - log1p(exp(-|x|))`, and the buffer `exp(-|x|)` the
/// CPU backward reads.
pub fn log_sigmoid_forward(input: &Tensor) -> Result<(Tensor, Tensor)> {
    require_float(input, "log_sigmoid_cpu")?;
    let output = map_floats(input, |x| x.min(0.0) - (-x.abs()).exp().ln_1p());
    let buffer = map_floats(input, |x| (-x.abs()).exp());
    Ok((output, buffer))
}

/// `log_sigmoid(x)`: the output of [`log_sigmoid_forward`].
pub fn log_sigmoid(input: &Tensor) -> Result<Tensor> {
    Ok(log_sigmoid_forward(input)?.0)
}

/// The largest finite value of a floating dtype as C++ streams print it (six significant
/// digits), for `softshrink`'s range message.
fn largest_finite_text(dtype: DType) -> &'static str {
    match dtype {
        DType::Float16 => "65504",
        DType::BFloat16 => "3.38953e+38",
        DType::Float64 => "1.79769e+308",
        _ => "3.40282e+38",
    }
}

fn largest_finite(dtype: DType) -> f64 {
    match dtype {
        DType::Float16 => 65504.0,
        DType::BFloat16 => 3.389_531_389_251_535_5e38,
        DType::Float64 => f64::MAX,
        _ => f64::from(f32::MAX),
    }
}

/// `softshrink(x, lambd)`: `x - lambd` above `lambd`, `x + lambd` below `-lambd`, else 0
/// (`x * 0`, so NaN stays NaN); `lambd` must lie in `[0, max of the dtype]`.
pub fn softshrink(input: &Tensor, lambd: &Scalar) -> Result<Tensor> {
    let dtype = require_float(input, "softshrink_check")?;
    let lambd = lambd.to_f64();
    if !(0.0..=largest_finite(dtype)).contains(&lambd) {
        return Err(invalid(format!(
            "lambda must be in range [0, {}] for input dtype {}, but found {lambd}",
            largest_finite_text(dtype),
            dtype.scalar_type_name()
        )));
    }
    // The kernel compares and subtracts in the input's dtype.
    let lambd = crate::macros::dispatch_dtype!(dtype, T => T::from_f64(lambd).to_f64());
    Ok(map_floats(input, |x| {
        if x > lambd {
            x - lambd
        } else if x < -lambd {
            x + lambd
        } else {
            x * 0.0
        }
    }))
}

/// `glu(x, dim)`: the first half of `dim` times the sigmoid of the second half.
pub fn glu(input: &Tensor, dim: i64) -> Result<Tensor> {
    if input.dim() == 0 {
        return Err(invalid("glu does not support 0-dimensional tensors"));
    }
    let wrapped = crate::shape::wrap_dim(dim, input.dim())?;
    let size = input.sizes()[wrapped];
    if !size.is_multiple_of(2) {
        return Err(invalid(format!(
            "Halving dimension must be even, but dimension {wrapped} is size {size}"
        )));
    }
    require_float(input, "glu_cpu")?;
    let half = (size / 2) as i64;
    let first = input.narrow(wrapped as i64, 0, half)?;
    let second = input.narrow(wrapped as i64, half, half)?;
    first.mul(&second.unary(UnaryOp::Sigmoid)?)
}

/// `prelu(x, weight)`: `x` where positive, else `weight * x`; a weight of more than one
/// element holds one slope per channel (dim 1, or the only dim of a 1-D input).
pub fn prelu(input: &Tensor, weight: &Tensor) -> Result<Tensor> {
    if input.dtype() != weight.dtype() {
        return Err(invalid(format!(
            "prelu: Type promoting not supported. Got {} and {}",
            input.dtype().scalar_type_name(),
            weight.dtype().scalar_type_name()
        )));
    }
    let input_dim = input.dim();
    if weight.numel() != 1 {
        if input_dim == 0 {
            return Err(invalid("Not allow zero-dim input tensor."));
        }
        let channels = if input_dim > 1 { input.sizes()[1] } else { 1 };
        if channels != weight.numel() {
            return Err(invalid(format!(
                "Mismatch of parameter numbers and input channel size. Found parameter numbers = {} and channel size = {channels}.",
                weight.numel()
            )));
        }
    }
    if weight.dim() > 1 {
        return Err(invalid(format!(
            "prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {}",
            weight.dim()
        )));
    }
    let weight = if input_dim != weight.dim() {
        let mut shape = vec![1i64; input_dim];
        if input_dim > 1 {
            shape[1] = weight.numel() as i64;
        }
        weight.reshape(&shape)?
    } else {
        weight.clone()
    };
    prelu_kernel(input, &weight)
}

/// `_prelu_kernel(x, weight)`: `where(x > 0, x, weight * x)`, broadcast.
pub fn prelu_kernel(input: &Tensor, weight: &Tensor) -> Result<Tensor> {
    if !input.dtype().is_floating_point() {
        return Err(TensorError::NotImplementedForDType {
            op: "prelu_cpu",
            dtype: input.dtype(),
        });
    }
    let zero = Tensor::wrapped_scalar(Scalar::Int(0));
    let scaled = weight.mul(input)?;
    let positive = input.gt(&zero)?;
    Tensor::where_(&positive, input, &scaled)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `log_sigmoid(0) = -ln 2`, and large negative inputs follow the input itself.
    #[test]
    fn log_sigmoid_is_stable_at_both_ends() {
        let input = Tensor::from_vec(vec![0.0f64, -50.0, 50.0], &[3]).unwrap();
        let out = log_sigmoid(&input).unwrap().to_f64_vec();
        assert!((out[0] + std::f64::consts::LN_2).abs() < 1e-15);
        assert!((out[1] + 50.0).abs() < 1e-12);
        assert!(out[2].abs() < 1e-20);
    }
}
