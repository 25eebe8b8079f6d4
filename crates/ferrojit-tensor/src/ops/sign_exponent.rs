//! Tensor forms of the sign and exponent functions that ferrojit had only for Python numbers:
//! `copysign`, `ldexp`, `frexp` and `gcd`. Each follows PyTorch's dtype rule: `copysign`
//! computes in the promoted dtype (the default float for integers), `ldexp` is
//! `self * 2 ** other`, `frexp` takes floating inputs only and gives int32 exponents, `gcd`
//! takes integers only.

use crate::dtype::{DType, Scalar};
use crate::error::{Result, TensorError};
use crate::promotion::result_type;
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;

fn invalid(message: impl Into<String>) -> TensorError {
    TensorError::InvalidArgument(message.into())
}

/// Both operands broadcast to their common shape.
fn broadcast_pair(a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor, Vec<usize>)> {
    let shape = broadcast_shapes(a.sizes(), b.sizes())?;
    Ok((a.broadcast_to(&shape)?, b.broadcast_to(&shape)?, shape))
}

/// Splits `value` into a mantissa in [0.5, 1) (with the sign of `value`) and a power of two,
/// as C's `frexp`: zeros, infinities and NaN keep their value with exponent 0.
pub fn frexp_f64(value: f64) -> (f64, i32) {
    if value == 0.0 || !value.is_finite() {
        return (value, 0);
    }
    let bits = value.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    if biased == 0 {
        // Subnormal: scale into the normal range first (2^64), then correct the exponent.
        let (mantissa, exponent) = frexp_f64(value * f64::from_bits(0x43f0_0000_0000_0000));
        return (mantissa, exponent - 64);
    }
    let exponent = biased - 1022;
    let mantissa = f64::from_bits((bits & !(0x7ff << 52)) | (1022u64 << 52));
    (mantissa, exponent)
}

impl Tensor {
    /// `torch.copysign(self, other)`: the magnitude of `self` with the sign of `other`.
    pub fn copysign(&self, other: &Tensor) -> Result<Tensor> {
        let promoted = result_type(&[self, other]);
        let dtype = if promoted.is_floating_point() || promoted.is_complex() {
            promoted
        } else {
            DType::default_float()
        };
        let (a, b, shape) = broadcast_pair(self, other)?;
        let values: Vec<f64> = a
            .to_f64_vec()
            .into_iter()
            .zip(b.to_f64_vec())
            .map(|(x, y)| x.copysign(y))
            .collect();
        Ok(Tensor::from_vec(values, &shape)?.to_dtype(dtype))
    }

    /// `torch.ldexp(self, other)`: `self * 2 ** other`, composed as PyTorch composes it.
    pub fn ldexp(&self, other: &Tensor) -> Result<Tensor> {
        let powers = Tensor::wrapped_scalar(Scalar::Float(2.0)).pow(other)?;
        self.mul(&powers)
    }

    /// `torch.frexp(self)`: (mantissa, exponent) with `self = mantissa * 2 ** exponent`.
    pub fn frexp(&self) -> Result<(Tensor, Tensor)> {
        if !self.dtype().is_floating_point() {
            return Err(invalid("torch.frexp() only supports floating-point dtypes"));
        }
        let (mantissas, exponents): (Vec<f64>, Vec<i32>) =
            self.to_f64_vec().into_iter().map(frexp_f64).unzip();
        Ok((
            Tensor::from_vec(mantissas, self.sizes())?.to_dtype(self.dtype()),
            Tensor::from_vec(exponents, self.sizes())?,
        ))
    }

    /// `torch.gcd(self, other)`: the non-negative greatest common divisor of integers (with
    /// two's-complement wrap: gcd(i64::MIN, 0) is i64::MIN, as in PyTorch).
    pub fn gcd(&self, other: &Tensor) -> Result<Tensor> {
        let dtype = result_type(&[self, other]);
        if !dtype.is_integral(false) {
            return Err(invalid(format!(
                "\"gcd_cpu\" not implemented for '{}'",
                dtype.scalar_type_name()
            )));
        }
        let (a, b, shape) = broadcast_pair(self, other)?;
        let values: Vec<i64> = a
            .to_dtype(dtype)
            .to_i64_vec()
            .into_iter()
            .zip(b.to_dtype(dtype).to_i64_vec())
            .map(|(mut x, mut y)| {
                while y != 0 {
                    let rest = x.wrapping_rem(y);
                    x = y;
                    y = rest;
                }
                x.wrapping_abs()
            })
            .collect();
        Ok(Tensor::from_vec(values, &shape)?.to_dtype(dtype))
    }
}

#[cfg(test)]
mod tests {
    use super::frexp_f64;

    #[test]
    fn frexp_splits_normal_subnormal_and_special_values() {
        assert_eq!(frexp_f64(8.0), (0.5, 4));
        assert_eq!(frexp_f64(-3.5), (-0.875, 2));
        let (m, e) = frexp_f64(1e-310);
        assert!((0.5..1.0).contains(&m));
        // 2^e alone underflows (powi(-1029) is 1 / inf): scale in two exact steps.
        assert_eq!(m * 2f64.powi(e + 64) * 2f64.powi(-64), 1e-310);
        assert_eq!(frexp_f64(f64::INFINITY), (f64::INFINITY, 0));
        assert!(frexp_f64(f64::NAN).0.is_nan());
        assert_eq!(frexp_f64(-0.0).1, 0);
    }
}
