//! Operators that exist for complex tensors: `view_as_real`/`view_as_complex`, `real`, `imag`,
//! `conj`, `abs`/`angle` (complex -> real), `polar`, `complex`, and the unary operators and
//! reductions whose complex forms differ from the real ones.
//!
//! ferrojit's storages are typed, so a float tensor cannot be a view of a complex storage:
//! `view_as_real`, `view_as_complex`, `real` and `imag` return copies (equal values; writes
//! through them do not reach the source), and `conj` is computed at once (PyTorch's lazy
//! conjugate bit does not exist here, so `resolve_conj` has nothing to resolve).

use crate::complex::{Complex128, Complex64};
use crate::dtype::DType;
use crate::element::{Arith, Element, FloatArith};
use crate::error::{Result, TensorError};
use crate::ops::pointwise::UnaryOp;
use crate::tensor::Tensor;

fn invalid(message: impl Into<String>) -> TensorError {
    TensorError::InvalidArgument(message.into())
}

/// Applies `f` to every element of a complex tensor, read as `Complex128`, and builds a
/// tensor of `R` with the same sizes.
fn map_complex<R: Element>(input: &Tensor, f: impl Fn(Complex128) -> R) -> Tensor {
    let values: Vec<R> = input.gather::<Complex128>().into_iter().map(f).collect();
    Tensor::from_values(values, input.sizes())
}

/// A complex tensor of `dtype` (complex64 or complex128) from parts computed in f64.
fn complex_from_parts(parts: Vec<Complex128>, sizes: &[usize], dtype: DType) -> Tensor {
    if dtype == DType::ComplexFloat {
        let narrow: Vec<Complex64> = parts
            .into_iter()
            .map(|z| Complex64::new(z.re as f32, z.im as f32))
            .collect();
        Tensor::from_values(narrow, sizes)
    } else {
        Tensor::from_values(parts, sizes)
    }
}

/// A real tensor of `dtype` (float32 or float64) from values computed in f64.
fn real_from_values(values: Vec<f64>, sizes: &[usize], dtype: DType) -> Tensor {
    if dtype == DType::Float32 {
        Tensor::from_values(values.into_iter().map(|x| x as f32).collect(), sizes)
    } else {
        Tensor::from_values(values, sizes)
    }
}

/// Applies a complex function elementwise in the input's own precision.
fn map_same_precision(
    input: &Tensor,
    f32_op: fn(Complex64) -> Complex64,
    f64_op: fn(Complex128) -> Complex128,
) -> Tensor {
    if input.dtype() == DType::ComplexFloat {
        let values: Vec<Complex64> = input
            .gather::<Complex64>()
            .into_iter()
            .map(f32_op)
            .collect();
        Tensor::from_values(values, input.sizes())
    } else {
        let values: Vec<Complex128> = input
            .gather::<Complex128>()
            .into_iter()
            .map(f64_op)
            .collect();
        Tensor::from_values(values, input.sizes())
    }
}

/// The complex dtype a real float tensor's values become (complex64 for float32, ...).
fn complex_of(dtype: DType, op: &str) -> Result<DType> {
    match dtype {
        DType::Float32 => Ok(DType::ComplexFloat),
        DType::Float64 => Ok(DType::ComplexDouble),
        other => Err(invalid(format!(
            "{op}: expected a float or double tensor, but got {}",
            other.scalar_type_name()
        ))),
    }
}

impl Tensor {
    /// `torch.view_as_real`: a complex tensor as a real one with a trailing dimension of 2
    /// (real, imaginary). A copy here (see the module note).
    pub fn view_as_real(&self) -> Result<Tensor> {
        if !self.dtype().is_complex() {
            return Err(invalid(
                "view_as_real is only supported for complex tensors",
            ));
        }
        let mut sizes = self.sizes().to_vec();
        sizes.push(2);
        let parts: Vec<f64> = self
            .gather::<Complex128>()
            .into_iter()
            .flat_map(|z| [z.re, z.im])
            .collect();
        Ok(real_from_values(parts, &sizes, self.dtype().to_real()))
    }

    /// `torch.view_as_complex`: a float or double tensor whose last dimension is 2 (real,
    /// imaginary) with stride 1, as a complex tensor without that dimension.
    pub fn view_as_complex(&self) -> Result<Tensor> {
        let dtype = self.dtype();
        if !matches!(dtype, DType::Float32 | DType::Float64 | DType::Float16) {
            return Err(invalid(format!(
                "view_as_complex is only supported for half, float and double tensors, but got a tensor of scalar type: {}",
                dtype.scalar_type_name()
            )));
        }
        if dtype == DType::Float16 {
            return Err(TensorError::NotImplementedForDType {
                op: "view_as_complex (complex32 is not supported)",
                dtype,
            });
        }
        if self.sizes().last() != Some(&2) {
            return Err(invalid("Tensor must have a last dimension of size 2"));
        }
        if self.strides().last() != Some(&1) {
            return Err(invalid("Tensor must have a last dimension with stride 1"));
        }
        let values = self.gather::<f64>();
        let sizes = &self.sizes()[..self.dim() - 1];
        let parts: Vec<Complex128> = values
            .chunks_exact(2)
            .map(|pair| Complex128::new(pair[0], pair[1]))
            .collect();
        Ok(complex_from_parts(
            parts,
            sizes,
            complex_of(dtype, "view_as_complex")?,
        ))
    }

    /// `torch.real`: the real parts of a complex tensor; a real tensor is returned as it is.
    pub fn real_part(&self) -> Result<Tensor> {
        if !self.dtype().is_complex() {
            return Ok(self.clone());
        }
        let values = self
            .gather::<Complex128>()
            .into_iter()
            .map(|z| z.re)
            .collect();
        Ok(real_from_values(
            values,
            self.sizes(),
            self.dtype().to_real(),
        ))
    }

    /// `torch.imag`: the imaginary parts of a complex tensor.
    pub fn imaginary_part(&self) -> Result<Tensor> {
        if !self.dtype().is_complex() {
            return Err(invalid(
                "imag is not implemented for tensors with non-complex dtypes.",
            ));
        }
        let values = self
            .gather::<Complex128>()
            .into_iter()
            .map(|z| z.im)
            .collect();
        Ok(real_from_values(
            values,
            self.sizes(),
            self.dtype().to_real(),
        ))
    }

    /// `torch.conj` / `conj_physical`: the complex conjugate; real tensors are their own
    /// conjugate and are returned as they are.
    pub fn conj(&self) -> Result<Tensor> {
        if !self.dtype().is_complex() {
            return Ok(self.clone());
        }
        Ok(map_same_precision(self, Complex64::conj, Complex128::conj))
    }

    /// `abs` of a complex tensor: |z| as a real tensor of the component type.
    pub fn complex_abs(&self) -> Result<Tensor> {
        let values = map_complex::<f64>(self, Complex128::norm);
        Ok(values.to_dtype(self.dtype().to_real()))
    }

    /// `torch.angle`: arg(z) of a complex tensor; for real tensors pi where negative, NaN
    /// where NaN, 0 elsewhere (integers give the default float dtype).
    pub fn angle(&self) -> Result<Tensor> {
        let dtype = self.dtype();
        if dtype.is_complex() {
            let values = map_complex::<f64>(self, Complex128::arg);
            return Ok(values.to_dtype(dtype.to_real()));
        }
        let out_dtype = if dtype.is_floating_point() {
            dtype
        } else {
            DType::default_float()
        };
        let values: Vec<f64> = self
            .gather::<f64>()
            .into_iter()
            .map(|x| {
                if x.is_nan() {
                    x
                } else if x < 0.0 {
                    std::f64::consts::PI
                } else {
                    0.0
                }
            })
            .collect();
        Ok(Tensor::from_values(values, self.sizes()).to_dtype(out_dtype))
    }

    /// `torch.polar(abs, angle)`: `abs * (cos(angle) + i sin(angle))`, broadcast; both must
    /// be float or both double.
    pub fn polar(magnitude: &Tensor, angle: &Tensor) -> Result<Tensor> {
        Tensor::combine_parts(magnitude, angle, |r, theta| {
            Complex128::new(r * theta.cos(), r * theta.sin())
        })
    }

    /// `torch.complex(real, imag)`, broadcast; both must be float or both double.
    pub fn complex(real: &Tensor, imaginary: &Tensor) -> Result<Tensor> {
        Tensor::combine_parts(real, imaginary, Complex128::new)
    }

    fn combine_parts(
        first: &Tensor,
        second: &Tensor,
        f: fn(f64, f64) -> Complex128,
    ) -> Result<Tensor> {
        let (a, b) = (first.dtype(), second.dtype());
        if !matches!(a, DType::Float32 | DType::Float64 | DType::Float16)
            || !matches!(b, DType::Float32 | DType::Float64 | DType::Float16)
        {
            return Err(invalid(format!(
                "Expected both inputs to be Half, Float or Double tensors but got {} and {}",
                a.scalar_type_name(),
                b.scalar_type_name()
            )));
        }
        if a != b {
            return Err(invalid(format!(
                "Expected object of scalar type {} but got scalar type {} for second argument",
                a.scalar_type_name(),
                b.scalar_type_name()
            )));
        }
        let dtype = complex_of(a, "complex")?;
        let shape = crate::shape::broadcast_shapes(first.sizes(), second.sizes())?;
        let first = first.broadcast_to(&shape)?.gather::<f64>();
        let second = second.broadcast_to(&shape)?.gather::<f64>();
        let parts = first
            .into_iter()
            .zip(second)
            .map(|(x, y)| f(x, y))
            .collect();
        Ok(complex_from_parts(parts, &shape, dtype))
    }

    /// The pointwise unary operators on a complex tensor: those PyTorch defines for complex
    /// numbers are computed in the input's precision, `abs` gives a real tensor, the
    /// predicates look at both parts, and the rest are refused with PyTorch's messages.
    pub(crate) fn complex_unary(&self, op: UnaryOp) -> Result<Tensor> {
        fn predicate(input: &Tensor, test: impl Fn(f64) -> bool, any_part: bool) -> Tensor {
            map_complex::<bool>(input, |z| {
                if any_part {
                    test(z.re) || test(z.im)
                } else {
                    test(z.re) && test(z.im)
                }
            })
        }
        Ok(match op {
            UnaryOp::Abs => return self.complex_abs(),
            UnaryOp::Neg => map_same_precision(self, Arith::neg, Arith::neg),
            UnaryOp::Exp => map_same_precision(self, FloatArith::exp, FloatArith::exp),
            UnaryOp::Log => map_same_precision(self, FloatArith::ln, FloatArith::ln),
            UnaryOp::Sqrt => map_same_precision(self, FloatArith::sqrt, FloatArith::sqrt),
            UnaryOp::Tanh => map_same_precision(self, FloatArith::tanh, FloatArith::tanh),
            UnaryOp::Sigmoid => map_same_precision(self, FloatArith::sigmoid, FloatArith::sigmoid),
            // The circular and hyperbolic functions of a complex argument (num_complex's, as
            // std::complex's in PyTorch), and rsqrt as 1 / sqrt(z), as PyTorch computes it.
            UnaryOp::Sin => map_same_precision(
                self,
                |z| Complex64::from_num(z.to_num().sin()),
                |z| Complex128::from_num(z.to_num().sin()),
            ),
            UnaryOp::Cos => map_same_precision(
                self,
                |z| Complex64::from_num(z.to_num().cos()),
                |z| Complex128::from_num(z.to_num().cos()),
            ),
            UnaryOp::Tan => map_same_precision(
                self,
                |z| Complex64::from_num(z.to_num().tan()),
                |z| Complex128::from_num(z.to_num().tan()),
            ),
            UnaryOp::Sinh => map_same_precision(
                self,
                |z| Complex64::from_num(z.to_num().sinh()),
                |z| Complex128::from_num(z.to_num().sinh()),
            ),
            UnaryOp::Cosh => map_same_precision(
                self,
                |z| Complex64::from_num(z.to_num().cosh()),
                |z| Complex128::from_num(z.to_num().cosh()),
            ),
            UnaryOp::Rsqrt => map_same_precision(
                self,
                |z| Arith::div(Complex64::one(), FloatArith::sqrt(z)),
                |z| Arith::div(Complex128::one(), FloatArith::sqrt(z)),
            ),
            UnaryOp::Reciprocal => map_same_precision(
                self,
                |z| Arith::div(Complex64::one(), z),
                |z| Arith::div(Complex128::one(), z),
            ),
            UnaryOp::IsNan => predicate(self, f64::is_nan, true),
            UnaryOp::IsInf => predicate(self, f64::is_infinite, true),
            UnaryOp::IsFinite => predicate(self, f64::is_finite, false),
            UnaryOp::LogicalNot => map_complex::<bool>(self, |z| !z.is_nonzero()),
            UnaryOp::Sign => {
                return Err(invalid(
                    "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use torch.sgn instead.",
                ))
            }
            UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round(_) | UnaryOp::Trunc | UnaryOp::Frac => {
                return Err(invalid(format!(
                    "{} is not supported for complex inputs",
                    op.name()
                )))
            }
            other => {
                return Err(TensorError::NotImplementedForDType {
                    op: other.name(),
                    dtype: self.dtype(),
                })
            }
        })
    }

    /// `mean` of a complex tensor: the sum divided by the number of reduced elements.
    pub(crate) fn complex_mean_dim(
        &self,
        dims: &[i64],
        keepdim: bool,
        dtype: DType,
    ) -> Result<Tensor> {
        let input = self.to_dtype(dtype);
        let sum = input.sum_dim(dims, keepdim, Some(dtype))?;
        let count = if self.numel() == 0 {
            0
        } else {
            self.numel() / sum.numel().max(1)
        };
        let count = count as f64;
        let values: Vec<Complex128> = sum
            .gather::<Complex128>()
            .into_iter()
            .map(|z| Complex128::new(z.re / count, z.im / count))
            .collect();
        Ok(complex_from_parts(values, sum.sizes(), dtype))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Tensor {
        Tensor::from_vec(
            vec![Complex64::new(3.0, 4.0), Complex64::new(-1.0, 0.0)],
            &[2],
        )
        .unwrap()
    }

    #[test]
    fn real_views_round_trip_and_refuse_bad_shapes() {
        let z = sample();
        let parts = z.view_as_real().unwrap();
        assert_eq!(parts.sizes(), &[2, 2]);
        assert_eq!(parts.to_vec::<f32>().unwrap(), vec![3.0, 4.0, -1.0, 0.0]);
        let back = parts.view_as_complex().unwrap();
        assert_eq!(
            back.to_vec::<Complex64>().unwrap(),
            z.to_vec::<Complex64>().unwrap()
        );
        let odd = Tensor::zeros(&[3], DType::Float32).unwrap();
        assert!(odd.view_as_complex().is_err());
        assert!(odd.view_as_real().is_err());
        assert!(odd.imaginary_part().is_err());
    }

    #[test]
    fn abs_angle_conj_give_the_textbook_values() {
        let z = sample();
        assert_eq!(
            z.complex_abs().unwrap().to_vec::<f32>().unwrap(),
            vec![5.0, 1.0]
        );
        let angle = z.angle().unwrap().to_vec::<f32>().unwrap();
        assert!((angle[0] - (4.0f32).atan2(3.0)).abs() < 1e-6);
        assert!((angle[1] - std::f32::consts::PI).abs() < 1e-6);
        let conj = z.conj().unwrap().to_vec::<Complex64>().unwrap();
        assert_eq!(conj[0], Complex64::new(3.0, -4.0));
    }

    #[test]
    fn complex_requires_matching_float_parts() {
        let re = Tensor::zeros(&[2], DType::Float32).unwrap();
        let im = Tensor::zeros(&[2], DType::Float64).unwrap();
        assert!(Tensor::complex(&re, &im).is_err());
        let ints = Tensor::zeros(&[2], DType::Int64).unwrap();
        assert!(Tensor::polar(&ints, &ints).is_err());
        let ok = Tensor::complex(&re, &re).unwrap();
        assert_eq!(ok.dtype(), DType::ComplexFloat);
    }
}
