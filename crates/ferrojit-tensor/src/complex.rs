//! Complex element types: `Complex64` (torch.complex64, two f32) and `Complex128`
//! (torch.complex128, two f64), stored as interleaved (re, im) pairs like c10::complex.
//!
//! They are plain `#[repr(C)]` pairs rather than `num_complex::Complex` because `Element`
//! needs `PartialOrd`, which a foreign type cannot be given. The derived order (real part,
//! then imaginary part) only satisfies generic kernels' bounds: every operator that orders
//! values refuses complex inputs before it reaches a kernel, as PyTorch does.

use crate::dtype::{DType, Scalar};
use crate::element::{le_array, sealed, Arith, Element, FloatArith};
use crate::storage::Buffer;
use rustfft::num_complex::Complex;

macro_rules! complex_type {
    ($name:ident, $part:ty, $dtype:ident, $bytes:expr, $doc:expr) => {
        #[doc = $doc]
        #[repr(C)]
        #[derive(
            Debug, Clone, Copy, PartialEq, PartialOrd, Default, bytemuck::Pod, bytemuck::Zeroable,
        )]
        pub struct $name {
            pub re: $part,
            pub im: $part,
        }

        impl $name {
            pub const fn new(re: $part, im: $part) -> Self {
                $name { re, im }
            }

            /// The same value as `num_complex`'s type, for rustfft and the math functions.
            pub fn to_num(self) -> Complex<$part> {
                Complex::new(self.re, self.im)
            }

            pub fn from_num(value: Complex<$part>) -> Self {
                $name::new(value.re, value.im)
            }

            /// |z|, computed without overflow in the squares (hypot).
            pub fn norm(self) -> $part {
                self.re.hypot(self.im)
            }

            /// arg(z) in (-pi, pi], as `atan2(im, re)`.
            pub fn arg(self) -> $part {
                self.im.atan2(self.re)
            }

            pub fn conj(self) -> Self {
                $name::new(self.re, -self.im)
            }

            /// Division by Smith's scaling, which avoids overflow in `c*c + d*d`; a zero
            /// divisor gives infinities or NaN componentwise, as c10::complex does.
            fn divide(self, divisor: Self) -> Self {
                let (a, b, c, d) = (self.re, self.im, divisor.re, divisor.im);
                if c.abs() >= d.abs() {
                    if c == 0.0 && d == 0.0 {
                        return $name::new(a / c.abs(), b / d.abs());
                    }
                    let ratio = d / c;
                    let scale = 1.0 / (c + d * ratio);
                    $name::new((a + b * ratio) * scale, (b - a * ratio) * scale)
                } else {
                    let ratio = c / d;
                    let scale = 1.0 / (d + c * ratio);
                    $name::new((a * ratio + b) * scale, (b * ratio - a) * scale)
                }
            }
        }

        impl sealed::Sealed for $name {}

        impl Element for $name {
            const DTYPE: DType = DType::$dtype;
            /// The real part, as c10's `static_cast` of a complex to a real type.
            fn to_f64(self) -> f64 {
                f64::from(self.re)
            }
            fn to_i64(self) -> i64 {
                self.re as i64
            }
            fn is_nonzero(self) -> bool {
                self.re != 0.0 || self.im != 0.0
            }
            fn from_f64(v: f64) -> Self {
                $name::new(v as $part, 0.0)
            }
            fn from_i64(v: i64) -> Self {
                $name::new(v as $part, 0.0)
            }
            fn from_bool(v: bool) -> Self {
                $name::new(if v { 1.0 } else { 0.0 }, 0.0)
            }
            /// ferrojit's `Scalar` has no complex variant: the real part stands for the value.
            fn to_scalar(self) -> Scalar {
                Scalar::Float(f64::from(self.re))
            }
            fn to_complex_parts(self) -> (f64, f64) {
                (f64::from(self.re), f64::from(self.im))
            }
            fn from_complex_parts(re: f64, im: f64) -> Self {
                $name::new(re as $part, im as $part)
            }
            fn slice_of(buffer: &Buffer) -> Option<&[Self]> {
                match buffer {
                    Buffer::$dtype(v) => Some(v),
                    _ => None,
                }
            }
            fn slice_of_mut(buffer: &mut Buffer) -> Option<&mut [Self]> {
                match buffer {
                    Buffer::$dtype(v) => Some(v),
                    _ => None,
                }
            }
            fn into_buffer(values: Vec<Self>) -> Buffer {
                Buffer::$dtype(values.into())
            }
            fn write_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.re.to_le_bytes());
                out.extend_from_slice(&self.im.to_le_bytes());
            }
            fn read_le(bytes: &[u8]) -> Self {
                let raw: [u8; $bytes] = le_array(bytes);
                let half = $bytes / 2;
                $name::new(
                    <$part>::from_le_bytes(le_array(&raw[..half])),
                    <$part>::from_le_bytes(le_array(&raw[half..])),
                )
            }
        }

        impl Arith for $name {
            fn zero() -> Self {
                $name::new(0.0, 0.0)
            }
            fn one() -> Self {
                $name::new(1.0, 0.0)
            }
            fn add(self, o: Self) -> Self {
                $name::new(self.re + o.re, self.im + o.im)
            }
            fn sub(self, o: Self) -> Self {
                $name::new(self.re - o.re, self.im - o.im)
            }
            fn mul(self, o: Self) -> Self {
                $name::new(
                    self.re * o.re - self.im * o.im,
                    self.re * o.im + self.im * o.re,
                )
            }
            fn div(self, o: Self) -> Self {
                self.divide(o)
            }
            // Rounded division, remainder and ordering are refused for complex operands
            // before a kernel runs (PyTorch has none); these give NaN should one slip through.
            fn div_trunc(self, _o: Self) -> Self {
                $name::new(<$part>::NAN, <$part>::NAN)
            }
            fn div_floor(self, _o: Self) -> Self {
                $name::new(<$part>::NAN, <$part>::NAN)
            }
            fn remainder(self, _o: Self) -> Self {
                $name::new(<$part>::NAN, <$part>::NAN)
            }
            fn pow(self, o: Self) -> Self {
                if o.re == 0.0 && o.im == 0.0 {
                    return Self::one();
                }
                if self.re == 0.0 && self.im == 0.0 && o.im == 0.0 && o.re > 0.0 {
                    return Self::zero();
                }
                $name::from_num(self.to_num().powc(o.to_num()))
            }
            fn nan_max(self, _o: Self) -> Self {
                $name::new(<$part>::NAN, <$part>::NAN)
            }
            fn nan_min(self, _o: Self) -> Self {
                $name::new(<$part>::NAN, <$part>::NAN)
            }
            fn neg(self) -> Self {
                $name::new(-self.re, -self.im)
            }
            /// |z| as a complex number with no imaginary part; `abs` of a complex tensor
            /// itself returns a real tensor (`ops::complex`).
            fn abs(self) -> Self {
                $name::new(self.norm(), 0.0)
            }
            fn is_nan(self) -> bool {
                self.re.is_nan() || self.im.is_nan()
            }
        }

        impl FloatArith for $name {
            fn exp(self) -> Self {
                $name::from_num(self.to_num().exp())
            }
            fn ln(self) -> Self {
                $name::from_num(self.to_num().ln())
            }
            fn sqrt(self) -> Self {
                $name::from_num(self.to_num().sqrt())
            }
            fn tanh(self) -> Self {
                $name::from_num(self.to_num().tanh())
            }
            fn sigmoid(self) -> Self {
                let denominator = Complex::new(1.0, 0.0) + (-self.to_num()).exp();
                $name::from_num(Complex::new(1.0, 0.0) / denominator)
            }
        }
    };
}

complex_type!(
    Complex64,
    f32,
    ComplexFloat,
    8,
    "torch.complex64: a complex number of two f32 parts."
);
complex_type!(
    Complex128,
    f64,
    ComplexDouble,
    16,
    "torch.complex128: a complex number of two f64 parts."
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_interleaved_little_endian_parts() {
        let value = Complex64::new(1.5, -2.25);
        let mut bytes = Vec::new();
        value.write_le(&mut bytes);
        assert_eq!(&bytes[..4], &1.5f32.to_le_bytes());
        assert_eq!(&bytes[4..], &(-2.25f32).to_le_bytes());
        assert_eq!(Complex64::read_le(&bytes), value);
        let wide = Complex128::new(-0.5, 3.0);
        let mut bytes = Vec::new();
        wide.write_le(&mut bytes);
        assert_eq!(bytes.len(), 16);
        assert_eq!(Complex128::read_le(&bytes), wide);
    }

    #[test]
    fn division_matches_the_textbook_formula_and_survives_large_parts() {
        let a = Complex128::new(3.0, 4.0);
        let b = Complex128::new(1.0, -2.0);
        // (3+4i)/(1-2i) = (3+4i)(1+2i)/5 = (-5+10i)/5
        assert_eq!(Arith::div(a, b), Complex128::new(-1.0, 2.0));
        let big = Complex128::new(1e300, 1e300);
        let quotient = Arith::div(big, big);
        assert!((quotient.re - 1.0).abs() < 1e-12 && quotient.im.abs() < 1e-12);
        let by_zero = Arith::div(Complex128::new(1.0, 0.0), Complex128::zero());
        assert!(by_zero.re.is_infinite() && by_zero.im.is_nan());
    }

    /// The strings are PyTorch 2.15's `repr` of the same tensors.
    #[test]
    fn complex_tensors_print_like_pytorch() {
        use crate::tensor::Tensor;
        let values = vec![
            Complex64::new(1.0, 2.0),
            Complex64::new(-3.5, -0.25),
            Complex64::new(0.0, 0.1),
        ];
        let vector = Tensor::from_vec(values.clone(), &[3]).unwrap();
        assert_eq!(
            vector.to_string(),
            "tensor([ 1.0000+2.0000j, -3.5000-0.2500j,  0.0000+0.1000j])"
        );
        assert_eq!(
            vector.to_dtype(DType::ComplexDouble).to_string(),
            "tensor([ 1.0000+2.0000j, -3.5000-0.2500j,  0.0000+0.1000j],\n       dtype=torch.complex128)"
        );
        let scalar = Tensor::from_vec(vec![Complex64::new(1.0, -2.0)], &[]).unwrap();
        assert_eq!(scalar.to_string(), "tensor(1.-2.j)");
        let mixed = Tensor::from_vec(
            vec![
                Complex64::new(1e5, 1.0),
                Complex64::new(2.0, 0.0),
                Complex64::new(3.0, 0.0),
                Complex64::new(4.0, 0.0),
            ],
            &[2, 2],
        )
        .unwrap();
        assert_eq!(
            mixed.to_string(),
            "tensor([[1.0000e+05+1.j, 2.0000e+00+0.j],\n        [3.0000e+00+0.j, 4.0000e+00+0.j]])"
        );
    }

    #[test]
    fn casts_keep_or_drop_the_imaginary_part_like_static_cast() {
        let z = Complex64::new(2.5, -1.0);
        assert_eq!(z.cast::<f64>(), 2.5);
        assert_eq!(z.cast::<i64>(), 2);
        assert!(Complex64::new(0.0, 1.0).cast::<bool>());
        assert_eq!(z.cast::<Complex128>(), Complex128::new(2.5, -1.0));
        assert_eq!(7i64.cast::<Complex64>(), Complex64::new(7.0, 0.0));
    }
}
