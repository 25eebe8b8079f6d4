//! The `Element` trait tying Rust number types to dtypes, plus the per-type arithmetic used by kernels.

use crate::dtype::{DType, Scalar};
use crate::storage::Buffer;
use std::fmt::Debug;

pub(crate) mod sealed {
    pub trait Sealed {}
}

/// A Rust type that can be stored in a tensor: bool, u8, i8, i16, i32, i64, f16, bf16, f32, f64,
/// and the complex types of `crate::complex`.
pub trait Element:
    sealed::Sealed + Copy + PartialEq + PartialOrd + Debug + Send + Sync + 'static
{
    const DTYPE: DType;
    fn to_f64(self) -> f64;
    /// Floats truncate toward zero (saturating).
    fn to_i64(self) -> i64;
    fn is_nonzero(self) -> bool;
    fn from_f64(v: f64) -> Self;
    fn from_i64(v: i64) -> Self;
    fn from_bool(v: bool) -> Self;
    fn to_scalar(self) -> Scalar;

    /// The value as (real, imaginary) parts; real types have no imaginary part.
    fn to_complex_parts(self) -> (f64, f64) {
        (self.to_f64(), 0.0)
    }

    /// A value from (real, imaginary) parts; real types keep the real part, as c10's
    /// `static_cast` from complex does.
    fn from_complex_parts(re: f64, _im: f64) -> Self {
        Self::from_f64(re)
    }

    /// Value conversion with C++ `static_cast`-like semantics
    /// (floats to integers truncate via int64 then wrap, anything to bool is `!= 0`,
    /// complex to real keeps the real part).
    fn cast<U: Element>(self) -> U {
        if U::DTYPE == DType::Bool {
            U::from_bool(self.is_nonzero())
        } else if Self::DTYPE.is_complex() || U::DTYPE.is_complex() {
            let (re, im) = self.to_complex_parts();
            U::from_complex_parts(re, im)
        } else if Self::DTYPE.is_floating_point() {
            U::from_f64(self.to_f64())
        } else {
            U::from_i64(self.to_i64())
        }
    }

    fn from_scalar(s: &Scalar) -> Self {
        match *s {
            Scalar::Bool(b) => Self::from_bool(b),
            Scalar::Int(i) => Self::from_i64(i),
            Scalar::Float(f) => Self::from_f64(f),
        }
    }

    #[doc(hidden)]
    fn slice_of(buffer: &Buffer) -> Option<&[Self]>;
    #[doc(hidden)]
    fn slice_of_mut(buffer: &mut Buffer) -> Option<&mut [Self]>;
    #[doc(hidden)]
    fn into_buffer(values: Vec<Self>) -> Buffer;
    /// Appends the little-endian bytes of this value.
    fn write_le(self, out: &mut Vec<u8>);
    /// Reads one value from exactly `item_size` little-endian bytes (short input reads as zero).
    fn read_le(bytes: &[u8]) -> Self;
}

/// The `N` bytes of one element. Exact-size input (every storage decode) is a plain load;
/// short input is padded with zeros, as `Element::read_le` promises.
pub(crate) fn le_array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    if let Ok(raw) = <[u8; N]>::try_from(bytes) {
        return raw;
    }
    let mut raw = [0u8; N];
    for (dst, src) in raw.iter_mut().zip(bytes) {
        *dst = *src;
    }
    raw
}

macro_rules! impl_element_int {
    ($t:ty, $dtype:ident, $variant:ident) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$dtype;
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn to_i64(self) -> i64 {
                self as i64
            }
            fn is_nonzero(self) -> bool {
                self != 0
            }
            fn from_f64(v: f64) -> Self {
                (v as i64) as $t
            }
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            fn from_bool(v: bool) -> Self {
                <$t>::from(v)
            }
            fn to_scalar(self) -> Scalar {
                Scalar::Int(self as i64)
            }
            fn slice_of(buffer: &Buffer) -> Option<&[Self]> {
                match buffer {
                    Buffer::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn slice_of_mut(buffer: &mut Buffer) -> Option<&mut [Self]> {
                match buffer {
                    Buffer::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn into_buffer(values: Vec<Self>) -> Buffer {
                Buffer::$variant(values.into())
            }
            fn write_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn read_le(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(le_array(bytes))
            }
        }
    };
}

impl_element_int!(u8, UInt8, UInt8);
impl_element_int!(i8, Int8, Int8);
impl_element_int!(i16, Int16, Int16);
impl_element_int!(i32, Int32, Int32);
impl_element_int!(i64, Int64, Int64);

macro_rules! impl_element_float {
    ($t:ty, $dtype:ident, $variant:ident) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$dtype;
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn to_i64(self) -> i64 {
                self as i64
            }
            fn is_nonzero(self) -> bool {
                self != 0.0
            }
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            fn from_bool(v: bool) -> Self {
                if v {
                    1.0
                } else {
                    0.0
                }
            }
            fn to_scalar(self) -> Scalar {
                Scalar::Float(self as f64)
            }
            fn slice_of(buffer: &Buffer) -> Option<&[Self]> {
                match buffer {
                    Buffer::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn slice_of_mut(buffer: &mut Buffer) -> Option<&mut [Self]> {
                match buffer {
                    Buffer::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn into_buffer(values: Vec<Self>) -> Buffer {
                Buffer::$variant(values.into())
            }
            fn write_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn read_le(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(le_array(bytes))
            }
        }
    };
}

impl_element_float!(f32, Float32, Float32);
impl_element_float!(f64, Float64, Float64);

/// Half-precision element types: stored as 16 bits, converted through f32 like c10::Half.
macro_rules! impl_element_half {
    ($t:ty, $dtype:ident, $variant:ident) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$dtype;
            fn to_f64(self) -> f64 {
                self.to_f64()
            }
            fn to_i64(self) -> i64 {
                self.to_f32() as i64
            }
            fn is_nonzero(self) -> bool {
                self.to_f32() != 0.0
            }
            fn from_f64(v: f64) -> Self {
                // PyTorch narrows double to float first, then float to half.
                <$t>::from_f32(v as f32)
            }
            fn from_i64(v: i64) -> Self {
                <$t>::from_f32(v as f32)
            }
            fn from_bool(v: bool) -> Self {
                if v {
                    <$t>::ONE
                } else {
                    <$t>::ZERO
                }
            }
            fn to_scalar(self) -> Scalar {
                Scalar::Float(self.to_f64())
            }
            fn slice_of(buffer: &Buffer) -> Option<&[Self]> {
                match buffer {
                    Buffer::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn slice_of_mut(buffer: &mut Buffer) -> Option<&mut [Self]> {
                match buffer {
                    Buffer::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn into_buffer(values: Vec<Self>) -> Buffer {
                Buffer::$variant(values.into())
            }
            fn write_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn read_le(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(le_array(bytes))
            }
        }
    };
}

impl_element_half!(half::f16, Float16, Float16);
impl_element_half!(half::bf16, BFloat16, BFloat16);

impl sealed::Sealed for bool {}
impl Element for bool {
    const DTYPE: DType = DType::Bool;
    fn to_f64(self) -> f64 {
        f64::from(u8::from(self))
    }
    fn to_i64(self) -> i64 {
        i64::from(self)
    }
    fn is_nonzero(self) -> bool {
        self
    }
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    fn from_i64(v: i64) -> Self {
        v != 0
    }
    fn from_bool(v: bool) -> Self {
        v
    }
    fn to_scalar(self) -> Scalar {
        Scalar::Bool(self)
    }
    fn slice_of(buffer: &Buffer) -> Option<&[Self]> {
        match buffer {
            Buffer::Bool(v) => Some(v),
            _ => None,
        }
    }
    fn slice_of_mut(buffer: &mut Buffer) -> Option<&mut [Self]> {
        match buffer {
            Buffer::Bool(v) => Some(v),
            _ => None,
        }
    }
    fn into_buffer(values: Vec<Self>) -> Buffer {
        Buffer::Bool(values)
    }
    fn write_le(self, out: &mut Vec<u8>) {
        out.push(u8::from(self));
    }
    fn read_le(bytes: &[u8]) -> Self {
        bytes.first().is_some_and(|b| *b != 0)
    }
}

/// Arithmetic with PyTorch's per-type semantics (integers wrap, bool add is `or`, ...).
/// Integer division by zero must be rejected by the caller before calling the division methods.
pub(crate) trait Arith: Element {
    fn zero() -> Self;
    fn one() -> Self;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// True division (only called for floating types).
    fn div(self, o: Self) -> Self;
    fn div_trunc(self, o: Self) -> Self;
    fn div_floor(self, o: Self) -> Self;
    /// Python-style remainder: the result has the sign of the divisor.
    fn remainder(self, o: Self) -> Self;
    fn pow(self, o: Self) -> Self;
    /// NaN-propagating maximum.
    fn nan_max(self, o: Self) -> Self;
    /// NaN-propagating minimum.
    fn nan_min(self, o: Self) -> Self;
    fn neg(self) -> Self;
    fn abs(self) -> Self;
    fn is_nan(self) -> bool;
}

/// Transcendental functions for floating element types.
pub(crate) trait FloatArith: Arith {
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn sqrt(self) -> Self;
    fn tanh(self) -> Self;
    fn sigmoid(self) -> Self;
}

macro_rules! impl_arith_int {
    ($t:ty) => {
        // Sign tests are no-ops for u8 but needed for the signed types sharing this body.
        #[allow(unused_comparisons)]
        impl Arith for $t {
            fn zero() -> Self {
                0
            }
            fn one() -> Self {
                1
            }
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            fn div(self, o: Self) -> Self {
                self.div_trunc(o)
            }
            fn div_trunc(self, o: Self) -> Self {
                if o == 0 {
                    0
                } else {
                    self.wrapping_div(o)
                }
            }
            fn div_floor(self, o: Self) -> Self {
                if o == 0 {
                    return 0;
                }
                let q = self.wrapping_div(o);
                let r = self.wrapping_rem(o);
                // Truncated quotient is one too big when the signs differ and it is inexact.
                if r != 0 && ((r < 0) != (o < 0)) {
                    q.wrapping_sub(1)
                } else {
                    q
                }
            }
            fn remainder(self, o: Self) -> Self {
                if o == 0 {
                    return 0;
                }
                let r = self.wrapping_rem(o);
                if r != 0 && ((r < 0) != (o < 0)) {
                    r.wrapping_add(o)
                } else {
                    r
                }
            }
            #[allow(unused_comparisons)]
            fn pow(self, o: Self) -> Self {
                if o < 0 {
                    // Integer base to a negative power: only |base| == 1 survives.
                    #[allow(clippy::neg_multiply)]
                    return if self == 1 {
                        1
                    } else if (self as i64) == -1 {
                        if (o as i64) % 2 == 0 {
                            1
                        } else {
                            self
                        }
                    } else {
                        0
                    };
                }
                let mut result: Self = 1;
                let mut base = self;
                let mut exp = o;
                while exp > 0 {
                    if exp & 1 == 1 {
                        result = result.wrapping_mul(base);
                    }
                    base = base.wrapping_mul(base);
                    exp >>= 1;
                }
                result
            }
            fn nan_max(self, o: Self) -> Self {
                if self >= o {
                    self
                } else {
                    o
                }
            }
            fn nan_min(self, o: Self) -> Self {
                if self <= o {
                    self
                } else {
                    o
                }
            }
            fn neg(self) -> Self {
                (0 as $t).wrapping_sub(self)
            }
            #[allow(unused_comparisons)]
            fn abs(self) -> Self {
                if self < 0 {
                    self.neg()
                } else {
                    self
                }
            }
            fn is_nan(self) -> bool {
                false
            }
        }
    };
}

impl_arith_int!(u8);
impl_arith_int!(i8);
impl_arith_int!(i16);
impl_arith_int!(i32);
impl_arith_int!(i64);

macro_rules! impl_arith_float {
    ($t:ty) => {
        impl Arith for $t {
            fn zero() -> Self {
                0.0
            }
            fn one() -> Self {
                1.0
            }
            fn add(self, o: Self) -> Self {
                self + o
            }
            fn sub(self, o: Self) -> Self {
                self - o
            }
            fn mul(self, o: Self) -> Self {
                self * o
            }
            fn div(self, o: Self) -> Self {
                self / o
            }
            fn div_trunc(self, o: Self) -> Self {
                (self / o).trunc()
            }
            fn div_floor(self, o: Self) -> Self {
                if o == 0.0 {
                    return self / o;
                }
                // Python's float floor division: derived from fmod so the result is exact.
                let m = self % o;
                let mut q = (self - m) / o;
                if m != 0.0 && ((o < 0.0) != (m < 0.0)) {
                    q -= 1.0;
                }
                if q == 0.0 {
                    return (0.0 as $t).copysign(self / o);
                }
                let fq = q.floor();
                if q - fq > 0.5 {
                    fq + 1.0
                } else {
                    fq
                }
            }
            fn remainder(self, o: Self) -> Self {
                let m = self % o;
                if m != 0.0 && ((o < 0.0) != (m < 0.0)) {
                    m + o
                } else {
                    m
                }
            }
            fn pow(self, o: Self) -> Self {
                self.powf(o)
            }
            fn nan_max(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    <$t>::NAN
                } else if self >= o {
                    self
                } else {
                    o
                }
            }
            fn nan_min(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    <$t>::NAN
                } else if self <= o {
                    self
                } else {
                    o
                }
            }
            fn neg(self) -> Self {
                -self
            }
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
        }

        impl FloatArith for $t {
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            fn tanh(self) -> Self {
                <$t>::tanh(self)
            }
            fn sigmoid(self) -> Self {
                1.0 / (1.0 + <$t>::exp(-self))
            }
        }
    };
}

impl_arith_float!(f32);
impl_arith_float!(f64);

/// Half types compute in f32 (PyTorch's "opmath" type) and round once per operation.
macro_rules! impl_arith_half {
    ($t:ty) => {
        impl Arith for $t {
            fn zero() -> Self {
                <$t>::ZERO
            }
            fn one() -> Self {
                <$t>::ONE
            }
            fn add(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32() + o.to_f32())
            }
            fn sub(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32() - o.to_f32())
            }
            fn mul(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32() * o.to_f32())
            }
            fn div(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32() / o.to_f32())
            }
            fn div_trunc(self, o: Self) -> Self {
                <$t>::from_f32(Arith::div_trunc(self.to_f32(), o.to_f32()))
            }
            fn div_floor(self, o: Self) -> Self {
                <$t>::from_f32(Arith::div_floor(self.to_f32(), o.to_f32()))
            }
            fn remainder(self, o: Self) -> Self {
                <$t>::from_f32(Arith::remainder(self.to_f32(), o.to_f32()))
            }
            fn pow(self, o: Self) -> Self {
                <$t>::from_f32(self.to_f32().powf(o.to_f32()))
            }
            fn nan_max(self, o: Self) -> Self {
                <$t>::from_f32(Arith::nan_max(self.to_f32(), o.to_f32()))
            }
            fn nan_min(self, o: Self) -> Self {
                <$t>::from_f32(Arith::nan_min(self.to_f32(), o.to_f32()))
            }
            fn neg(self) -> Self {
                -self
            }
            fn abs(self) -> Self {
                <$t>::from_f32(self.to_f32().abs())
            }
            fn is_nan(self) -> bool {
                self.to_f32().is_nan()
            }
        }

        impl FloatArith for $t {
            fn exp(self) -> Self {
                <$t>::from_f32(self.to_f32().exp())
            }
            fn ln(self) -> Self {
                <$t>::from_f32(self.to_f32().ln())
            }
            fn sqrt(self) -> Self {
                <$t>::from_f32(self.to_f32().sqrt())
            }
            fn tanh(self) -> Self {
                <$t>::from_f32(self.to_f32().tanh())
            }
            fn sigmoid(self) -> Self {
                <$t>::from_f32(FloatArith::sigmoid(self.to_f32()))
            }
        }
    };
}

impl_arith_half!(half::f16);
impl_arith_half!(half::bf16);

impl Arith for bool {
    fn zero() -> Self {
        false
    }
    fn one() -> Self {
        true
    }
    fn add(self, o: Self) -> Self {
        self || o
    }
    fn sub(self, o: Self) -> Self {
        self ^ o
    }
    fn mul(self, o: Self) -> Self {
        self && o
    }
    fn div(self, o: Self) -> Self {
        self && o
    }
    fn div_trunc(self, o: Self) -> Self {
        self && o
    }
    fn div_floor(self, o: Self) -> Self {
        self && o
    }
    fn remainder(self, _o: Self) -> Self {
        false
    }
    fn pow(self, o: Self) -> Self {
        self || !o
    }
    fn nan_max(self, o: Self) -> Self {
        self || o
    }
    fn nan_min(self, o: Self) -> Self {
        self && o
    }
    fn neg(self) -> Self {
        self
    }
    fn abs(self) -> Self {
        self
    }
    fn is_nan(self) -> bool {
        false
    }
}

#[cfg(test)]
mod read_le_tests {
    use super::Element;

    #[test]
    fn exact_and_short_input() {
        assert_eq!(f32::read_le(&1.5f32.to_le_bytes()), 1.5);
        assert_eq!(i64::read_le(&(-7i64).to_le_bytes()), -7);
        // Short input reads as if padded with zero bytes.
        assert_eq!(i32::read_le(&[0x34, 0x12]), 0x1234);
        assert_eq!(half::f16::read_le(&[]), half::f16::from_f32(0.0));
    }
}
