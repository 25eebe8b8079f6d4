//! Elementwise functions outside the shared unary/binary tables: float_power, lcm,
//! logaddexp2, nextafter, signbit, sgn, positive, isreal, and the per-slice renorm and the
//! p-norm distance `dist`, each with PyTorch's dtype rules and refusals.

use crate::dtype::{DType, Scalar};
use crate::element::Element;
use crate::error::{Result, TensorError};
use crate::macros::dispatch_dtype;
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;

fn invalid(message: impl Into<String>) -> TensorError {
    TensorError::InvalidArgument(message.into())
}

/// Both operands broadcast to their common shape, as logical-order element lists.
fn broadcast_pair(a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor, Vec<usize>)> {
    let shape = broadcast_shapes(a.sizes(), b.sizes())?;
    Ok((a.broadcast_to(&shape)?, b.broadcast_to(&shape)?, shape))
}

/// The dtype a binary op computes in: the promoted dtype, where 0-dim tensors and wrapped
/// numbers count only when they are of a higher category (PyTorch's result_type).
fn binary_result_dtype(a: &Tensor, b: &Tensor) -> DType {
    crate::promotion::result_type(&[a, b])
}

/// `value` (an integer computed in i64) wrapped into `dtype`'s width, as a C++ cast does.
fn wrap_integer(value: i64, dtype: DType) -> i64 {
    match dtype {
        DType::UInt8 => i64::from(value as u8),
        DType::Int8 => i64::from(value as i8),
        DType::Int16 => i64::from(value as i16),
        DType::Int32 => i64::from(value as i32),
        _ => value,
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a as i64
}

/// The next representable float32 after `from` toward `to` (C's `nextafterf`).
fn next_after_f32(from: f32, to: f32) -> f32 {
    if from.is_nan() || to.is_nan() {
        return f32::NAN;
    }
    if from == to {
        return to;
    }
    if from == 0.0 {
        let tiny = f32::from_bits(1);
        return if to > 0.0 { tiny } else { -tiny };
    }
    let bits = from.to_bits();
    let away_from_zero = (to > from) == (from > 0.0);
    f32::from_bits(if away_from_zero { bits + 1 } else { bits - 1 })
}

/// The next representable double after `from` toward `to` (C's `nextafter`).
fn next_after_f64(from: f64, to: f64) -> f64 {
    if from.is_nan() || to.is_nan() {
        return f64::NAN;
    }
    if from == to {
        return to;
    }
    if from == 0.0 {
        let tiny = f64::from_bits(1);
        return if to > 0.0 { tiny } else { -tiny };
    }
    let bits = from.to_bits();
    let away_from_zero = (to > from) == (from > 0.0);
    f64::from_bits(if away_from_zero { bits + 1 } else { bits - 1 })
}

/// ATen's logaddexp2: `log2(2^a + 2^b)`, exact when both are the same infinity.
fn log_add_exp2(a: f64, b: f64) -> f64 {
    if a.is_infinite() && a == b {
        return a;
    }
    let m = a.max(b);
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    m + (-(a - b).abs()).exp2().ln_1p() * std::f64::consts::LOG2_E
}

impl Tensor {
    /// `float_power(self, exponent)`: the power computed in double precision (complex128
    /// when either side is complex).
    pub fn float_power(&self, exponent: &Tensor) -> Result<Tensor> {
        let dtype = if self.dtype().is_complex() || exponent.dtype().is_complex() {
            DType::ComplexDouble
        } else {
            DType::Float64
        };
        self.to_dtype(dtype).pow(&exponent.to_dtype(dtype))
    }

    /// `float_power(self, exponent)` with a Python number exponent.
    pub fn float_power_scalar(&self, exponent: &Scalar) -> Result<Tensor> {
        let dtype = if self.dtype().is_complex() {
            DType::ComplexDouble
        } else {
            DType::Float64
        };
        let exponent = Tensor::scalar_tensor(Scalar::Float(exponent.to_f64()), DType::Float64);
        self.to_dtype(dtype).pow(&exponent.to_dtype(dtype))
    }

    /// `lcm(self, other)`: integral dtypes only; the result has the promoted dtype and
    /// wraps as C++ integer arithmetic does.
    pub fn lcm(&self, other: &Tensor) -> Result<Tensor> {
        let dtype = binary_result_dtype(self, other);
        if !dtype.is_integral(false) {
            return Err(TensorError::NotImplementedForDType {
                op: "lcm_cpu",
                dtype,
            });
        }
        let (a, b, shape) = broadcast_pair(self, other)?;
        let out: Vec<i64> = a
            .to_i64_vec()
            .into_iter()
            .zip(b.to_i64_vec())
            .map(|(x, y)| {
                let (x, y) = (wrap_integer(x, dtype), wrap_integer(y, dtype));
                let g = gcd(x, y);
                if g == 0 {
                    0
                } else {
                    wrap_integer(
                        wrap_integer((x / g).wrapping_mul(y), dtype).wrapping_abs(),
                        dtype,
                    )
                }
            })
            .collect();
        Ok(Tensor::from_values(out, &shape).to_dtype(dtype))
    }

    /// `logaddexp2(self, other)`: floating dtypes only.
    pub fn logaddexp2(&self, other: &Tensor) -> Result<Tensor> {
        let dtype = binary_result_dtype(self, other);
        if !dtype.is_floating_point() {
            return Err(TensorError::NotImplementedForDType {
                op: "logaddexp2_cpu",
                dtype,
            });
        }
        let (a, b, shape) = broadcast_pair(&self.to_dtype(dtype), &other.to_dtype(dtype))?;
        let out: Vec<f64> = a
            .to_f64_vec()
            .into_iter()
            .zip(b.to_f64_vec())
            .map(|(x, y)| log_add_exp2(x, y))
            .collect();
        Ok(crate::ops::nn::from_f64(out, &shape, dtype))
    }

    /// `nextafter(self, other)`: the next value of the (float32 or float64) dtype after each
    /// element toward the other.
    pub fn nextafter(&self, other: &Tensor) -> Result<Tensor> {
        let dtype = binary_result_dtype(self, other);
        if !matches!(dtype, DType::Float32 | DType::Float64) {
            return Err(TensorError::NotImplementedForDType {
                op: "nextafter_cpu",
                dtype,
            });
        }
        let (a, b, shape) = broadcast_pair(&self.to_dtype(dtype), &other.to_dtype(dtype))?;
        if dtype == DType::Float32 {
            let out: Vec<f32> = a
                .to_vec::<f32>()?
                .into_iter()
                .zip(b.to_vec::<f32>()?)
                .map(|(x, y)| next_after_f32(x, y))
                .collect();
            Ok(Tensor::from_values(out, &shape))
        } else {
            let out: Vec<f64> = a
                .to_f64_vec()
                .into_iter()
                .zip(b.to_f64_vec())
                .map(|(x, y)| next_after_f64(x, y))
                .collect();
            Ok(Tensor::from_values(out, &shape))
        }
    }

    /// `signbit`: whether the sign bit is set (so -0.0 and -NaN count); never for bool.
    pub fn signbit(&self) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return Err(invalid("signbit is not implemented for complex tensors."));
        }
        let out: Vec<bool> = if self.dtype().is_floating_point() {
            self.to_f64_vec()
                .into_iter()
                .map(|v| v.is_sign_negative())
                .collect()
        } else {
            self.to_i64_vec().into_iter().map(|v| v < 0).collect()
        };
        Ok(Tensor::from_values(out, self.sizes()))
    }

    /// `sgn`: `sign` for real dtypes, `z / |z|` (0 at 0) for complex ones.
    pub fn sgn(&self) -> Result<Tensor> {
        if !self.dtype().is_complex() {
            return self.unary(crate::ops::pointwise::UnaryOp::Sign);
        }
        dispatch_dtype!(self.dtype(), T => {
            let values: Vec<T> = self
                .gather::<T>()
                .into_iter()
                .map(|z| {
                    let (re, im) = z.to_complex_parts();
                    let magnitude = re.hypot(im);
                    if magnitude == 0.0 {
                        T::from_complex_parts(0.0, 0.0)
                    } else {
                        T::from_complex_parts(re / magnitude, im / magnitude)
                    }
                })
                .collect();
            Ok(Tensor::from_values(values, self.sizes()))
        })
    }

    /// `positive`: the tensor itself; PyTorch refuses bool.
    pub fn positive(&self) -> Result<Tensor> {
        if self.dtype() == DType::Bool {
            return Err(invalid(
                "The `+` operator, on a bool tensor is not supported.",
            ));
        }
        Ok(self.clone())
    }

    /// `isreal`: true where the imaginary part is zero (everywhere for real dtypes).
    pub fn isreal(&self) -> Result<Tensor> {
        if !self.dtype().is_complex() {
            return Tensor::full(self.sizes(), Scalar::Bool(true), DType::Bool);
        }
        let out: Vec<bool> = dispatch_dtype!(self.dtype(), T => {
            self.gather::<T>()
                .into_iter()
                .map(|z| z.to_complex_parts().1 == 0.0)
                .collect()
        });
        Ok(Tensor::from_values(out, self.sizes()))
    }

    /// `renorm(p, dim, maxnorm)`: each slice along `dim` whose p-norm exceeds `maxnorm` is
    /// scaled to `maxnorm` (by `maxnorm / (norm + 1e-7)`).
    pub fn renorm(&self, p: f64, dim: i64, maxnorm: f64) -> Result<Tensor> {
        if p.is_nan() || p <= 0.0 {
            return Err(invalid("renorm: non-positive-norm not supported"));
        }
        if maxnorm < 0.0 {
            return Err(invalid(format!(
                "renorm: expected maxnorm to be >= 0 but got {maxnorm}"
            )));
        }
        if self.dim() <= 1 {
            return Err(invalid(format!(
                "renorm: input needs at least 2 dimensions, got {} dimensions",
                self.dim()
            )));
        }
        if !self.dtype().is_floating_point() {
            return Err(TensorError::NotImplementedForDType {
                op: "renorm_out",
                dtype: self.dtype(),
            });
        }
        let d = crate::shape::wrap_dim(dim, self.dim())?;
        // Rows along `d` are the wrong way round: move `d` first, so each slice is one row.
        let moved: Vec<i64> = std::iter::once(d as i64)
            .chain((0..self.dim() as i64).filter(|&i| i != d as i64))
            .collect();
        let slices = self.permute(&moved)?.contiguous();
        let count = self.sizes()[d];
        let width = slices.numel().checked_div(count).unwrap_or(0);
        let mut values = slices.to_f64_vec();
        for slice in values.chunks_mut(width.max(1)).take(count) {
            let norm = if p == f64::INFINITY {
                slice.iter().fold(0.0f64, |m, x| m.max(x.abs()))
            } else {
                slice
                    .iter()
                    .map(|x| x.abs().powf(p))
                    .sum::<f64>()
                    .powf(1.0 / p)
            };
            if norm > maxnorm {
                let factor = maxnorm / (norm + 1e-7);
                for x in slice.iter_mut() {
                    *x *= factor;
                }
            }
        }
        let mut sizes = vec![count];
        sizes.extend((0..self.dim()).filter(|&i| i != d).map(|i| self.sizes()[i]));
        let moved_back = crate::ops::nn::from_f64(values, &sizes, self.dtype());
        let mut inverse = vec![0i64; moved.len()];
        for (position, &source) in moved.iter().enumerate() {
            inverse[source as usize] = position as i64;
        }
        Ok(moved_back.permute(&inverse)?.contiguous())
    }

    /// `dist(self, other, p)`: the p-norm of the broadcast difference.
    pub fn dist(&self, other: &Tensor, p: f64) -> Result<Tensor> {
        let difference = self.sub(other, &Scalar::Int(1))?;
        if !difference.dtype().is_floating_point() && !difference.dtype().is_complex() {
            return Err(invalid(format!(
                "norm(): input dtype should be either floating point or complex. Got {} instead.",
                difference.dtype().scalar_type_name()
            )));
        }
        difference.vector_norm(p, &[], false, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nextafter_steps_one_float32_ulp() {
        let a = Tensor::from_vec(vec![1.0f32, 0.0, -1.0], &[3]).unwrap();
        let b = Tensor::from_vec(vec![2.0f32, -1.0, -1.0], &[3]).unwrap();
        let out = a.nextafter(&b).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(out[0], f32::from_bits(1.0f32.to_bits() + 1));
        assert_eq!(out[1], -f32::from_bits(1));
        assert_eq!(out[2], -1.0);
    }

    #[test]
    fn lcm_refuses_floats_and_handles_zero() {
        let a = Tensor::from_vec(vec![4i64, 0, -6], &[3]).unwrap();
        let b = Tensor::from_vec(vec![6i64, 5, 4], &[3]).unwrap();
        assert_eq!(a.lcm(&b).unwrap().to_i64_vec(), vec![12, 0, 12]);
        let f = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
        assert!(f.lcm(&f).is_err());
    }
}
