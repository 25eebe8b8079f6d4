//! Element types (`DType`), Python-like scalars (`Scalar`) and PyTorch's type-promotion lattice.

use crate::error::{Result, TensorError};
use std::fmt;

/// Element type of a tensor. Complex types are PyTorch's `complex64` (`ComplexFloat`, two f32)
/// and `complex128` (`ComplexDouble`, two f64); `complex32` is not supported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    Bool,
    UInt8,
    Int8,
    Int16,
    Int32,
    Int64,
    Float16,
    BFloat16,
    Float32,
    Float64,
    ComplexFloat,
    ComplexDouble,
}

/// Broad kind of a type, used by PyTorch's "higher category wins" promotion rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TypeCategory {
    Bool,
    Integral,
    Floating,
    Complex,
}

impl DType {
    /// All supported dtypes, in c10::ScalarType order of appearance.
    pub const ALL: [DType; 12] = [
        DType::UInt8,
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::Int64,
        DType::Float16,
        DType::Float32,
        DType::Float64,
        DType::ComplexFloat,
        DType::ComplexDouble,
        DType::Bool,
        DType::BFloat16,
    ];

    /// Size of one element in bytes.
    pub fn item_size(self) -> usize {
        match self {
            DType::Bool | DType::UInt8 | DType::Int8 => 1,
            DType::Int16 | DType::Float16 | DType::BFloat16 => 2,
            DType::Int32 | DType::Float32 => 4,
            DType::Int64 | DType::Float64 | DType::ComplexFloat => 8,
            DType::ComplexDouble => 16,
        }
    }

    pub fn is_floating_point(self) -> bool {
        matches!(
            self,
            DType::Float16 | DType::BFloat16 | DType::Float32 | DType::Float64
        )
    }

    /// Integral type test; `include_bool` decides whether Bool counts (as in c10::isIntegralType).
    pub fn is_integral(self, include_bool: bool) -> bool {
        match self {
            DType::Bool => include_bool,
            DType::UInt8 | DType::Int8 | DType::Int16 | DType::Int32 | DType::Int64 => true,
            DType::Float16
            | DType::BFloat16
            | DType::Float32
            | DType::Float64
            | DType::ComplexFloat
            | DType::ComplexDouble => false,
        }
    }

    /// c10::isComplexType.
    pub fn is_complex(self) -> bool {
        matches!(self, DType::ComplexFloat | DType::ComplexDouble)
    }

    /// The complex type whose components have this floating type (c10::toComplexType):
    /// float32 -> complex64, float64 -> complex128; half types widen to complex64 (ferrojit
    /// has no complex32). A complex type maps to itself; other types have none.
    pub fn to_complex(self) -> Option<DType> {
        match self {
            DType::Float16 | DType::BFloat16 | DType::Float32 | DType::ComplexFloat => {
                Some(DType::ComplexFloat)
            }
            DType::Float64 | DType::ComplexDouble => Some(DType::ComplexDouble),
            _ => None,
        }
    }

    /// The type of one component of a complex type (c10::toRealValueType): complex64 ->
    /// float32, complex128 -> float64; every other type is its own value type.
    pub fn to_real(self) -> DType {
        match self {
            DType::ComplexFloat => DType::Float32,
            DType::ComplexDouble => DType::Float64,
            other => other,
        }
    }

    pub fn category(self) -> TypeCategory {
        if self == DType::Bool {
            TypeCategory::Bool
        } else if self.is_complex() {
            TypeCategory::Complex
        } else if self.is_floating_point() {
            TypeCategory::Floating
        } else {
            TypeCategory::Integral
        }
    }

    /// PyTorch's dtype name without the `torch.` prefix, e.g. "float32".
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::UInt8 => "uint8",
            DType::Int8 => "int8",
            DType::Int16 => "int16",
            DType::Int32 => "int32",
            DType::Int64 => "int64",
            DType::Float16 => "float16",
            DType::BFloat16 => "bfloat16",
            DType::Float32 => "float32",
            DType::Float64 => "float64",
            DType::ComplexFloat => "complex64",
            DType::ComplexDouble => "complex128",
        }
    }

    /// c10::ScalarType name used in many PyTorch error messages, e.g. "Float", "Long".
    pub fn scalar_type_name(self) -> &'static str {
        match self {
            DType::Bool => "Bool",
            DType::UInt8 => "Byte",
            DType::Int8 => "Char",
            DType::Int16 => "Short",
            DType::Int32 => "Int",
            DType::Int64 => "Long",
            DType::Float16 => "Half",
            DType::BFloat16 => "BFloat16",
            DType::Float32 => "Float",
            DType::Float64 => "Double",
            DType::ComplexFloat => "ComplexFloat",
            DType::ComplexDouble => "ComplexDouble",
        }
    }

    /// Name of the legacy storage class used in TorchScript archives ("FloatStorage", ...).
    pub fn from_torch_storage_name(name: &str) -> Result<DType> {
        Ok(match name {
            "FloatStorage" => DType::Float32,
            "HalfStorage" => DType::Float16,
            "BFloat16Storage" => DType::BFloat16,
            "DoubleStorage" => DType::Float64,
            "LongStorage" => DType::Int64,
            "IntStorage" => DType::Int32,
            "ShortStorage" => DType::Int16,
            "CharStorage" => DType::Int8,
            "ByteStorage" => DType::UInt8,
            "BoolStorage" => DType::Bool,
            "ComplexFloatStorage" => DType::ComplexFloat,
            "ComplexDoubleStorage" => DType::ComplexDouble,
            other => return Err(TensorError::UnknownStorageType(other.to_string())),
        })
    }

    pub fn to_torch_storage_name(self) -> &'static str {
        match self {
            DType::Bool => "BoolStorage",
            DType::UInt8 => "ByteStorage",
            DType::Int8 => "CharStorage",
            DType::Int16 => "ShortStorage",
            DType::Int32 => "IntStorage",
            DType::Int64 => "LongStorage",
            DType::Float16 => "HalfStorage",
            DType::BFloat16 => "BFloat16Storage",
            DType::Float32 => "FloatStorage",
            DType::Float64 => "DoubleStorage",
            DType::ComplexFloat => "ComplexFloatStorage",
            DType::ComplexDouble => "ComplexDoubleStorage",
        }
    }

    /// Maps c10::ScalarType numbering (Byte=0 ... Double=7, ComplexFloat=9, ComplexDouble=10,
    /// Bool=11, BFloat16=15) to a dtype.
    pub fn from_scalar_type_index(index: i64) -> Result<DType> {
        Ok(match index {
            0 => DType::UInt8,
            1 => DType::Int8,
            2 => DType::Int16,
            3 => DType::Int32,
            4 => DType::Int64,
            5 => DType::Float16,
            6 => DType::Float32,
            7 => DType::Float64,
            9 => DType::ComplexFloat,
            10 => DType::ComplexDouble,
            11 => DType::Bool,
            15 => DType::BFloat16,
            other => return Err(TensorError::UnknownScalarType(other)),
        })
    }

    /// c10::ScalarType number of this dtype.
    pub fn scalar_type_index(self) -> i64 {
        match self {
            DType::UInt8 => 0,
            DType::Int8 => 1,
            DType::Int16 => 2,
            DType::Int32 => 3,
            DType::Int64 => 4,
            DType::Float16 => 5,
            DType::Float32 => 6,
            DType::Float64 => 7,
            DType::ComplexFloat => 9,
            DType::ComplexDouble => 10,
            DType::Bool => 11,
            DType::BFloat16 => 15,
        }
    }

    /// PyTorch's default floating dtype (`torch.get_default_dtype()`).
    pub fn default_float() -> DType {
        DType::Float32
    }
}

impl fmt::Display for DType {
    /// Prints like Python's `str(torch.float32)`: "torch.float32".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "torch.{}", self.name())
    }
}

/// c10::promoteTypes over the supported dtypes. Half and BFloat16 meet at Float32; either
/// wins over every integral type. A complex type wins over every real type, at the wider of
/// its own component type and the other (floating) type: complex64 with float64 is complex128.
pub fn promote_types(a: DType, b: DType) -> DType {
    use DType::*;
    if a == b {
        return a;
    }
    if a.is_complex() || b.is_complex() {
        let wide = |d: DType| matches!(d, ComplexDouble | Float64);
        return if wide(a) || wide(b) {
            ComplexDouble
        } else {
            ComplexFloat
        };
    }
    match (a, b) {
        (Bool, other) | (other, Bool) => other,
        (Float64, _) | (_, Float64) => Float64,
        (Float32, _) | (_, Float32) => Float32,
        (Float16, BFloat16) | (BFloat16, Float16) => Float32,
        (Float16, _) | (_, Float16) => Float16,
        (BFloat16, _) | (_, BFloat16) => BFloat16,
        // Mixed signed/unsigned 8-bit needs a wider signed type.
        (UInt8, Int8) | (Int8, UInt8) => Int16,
        _ => {
            if integral_rank(a) >= integral_rank(b) {
                a
            } else {
                b
            }
        }
    }
}

/// Width order of the integral types (floating types never reach the caller of this).
fn integral_rank(d: DType) -> u8 {
    match d {
        DType::Bool => 0,
        DType::UInt8 | DType::Int8 => 1,
        DType::Int16 => 2,
        DType::Int32 => 3,
        DType::Int64 => 4,
        DType::Float16
        | DType::BFloat16
        | DType::Float32
        | DType::Float64
        | DType::ComplexFloat
        | DType::ComplexDouble => 5,
    }
}

/// c10::canCast: whether a computation result of type `from` may be stored into `to`
/// (no complex -> real, no floating -> integral, no non-bool -> bool).
pub fn can_cast(from: DType, to: DType) -> bool {
    if from.is_complex() && !to.is_complex() {
        return false;
    }
    if from.is_floating_point() && to.is_integral(false) {
        return false;
    }
    if from != DType::Bool && to == DType::Bool {
        return false;
    }
    true
}

/// A Python-like number: TorchScript's `Scalar` (bool, int or float).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl Scalar {
    pub fn to_f64(&self) -> f64 {
        match *self {
            Scalar::Bool(b) => f64::from(u8::from(b)),
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }

    /// Truncating conversion for floats (saturating at the i64 range, NaN gives 0).
    pub fn to_i64(&self) -> i64 {
        match *self {
            Scalar::Bool(b) => i64::from(b),
            Scalar::Int(i) => i,
            Scalar::Float(f) => f as i64,
        }
    }

    pub fn to_bool(&self) -> bool {
        match *self {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i != 0,
            Scalar::Float(f) => f != 0.0,
        }
    }

    pub fn is_boolean(&self) -> bool {
        matches!(self, Scalar::Bool(_))
    }

    pub fn is_floating_point(&self) -> bool {
        matches!(self, Scalar::Float(_))
    }

    /// Integral test like c10::Scalar::isIntegral(include_bool).
    pub fn is_integral(&self, include_bool: bool) -> bool {
        match self {
            Scalar::Bool(_) => include_bool,
            Scalar::Int(_) => true,
            Scalar::Float(_) => false,
        }
    }

    pub fn category(&self) -> TypeCategory {
        match self {
            Scalar::Bool(_) => TypeCategory::Bool,
            Scalar::Int(_) => TypeCategory::Integral,
            Scalar::Float(_) => TypeCategory::Floating,
        }
    }

    /// The dtype a 0-dim tensor made from this scalar gets: Bool, Int64 or Float64.
    pub fn dtype(&self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::Int64,
            Scalar::Float(_) => DType::Float64,
        }
    }

    /// Whether this value is zero (false for bool).
    pub fn is_zero(&self) -> bool {
        !self.to_bool()
    }
}

impl From<bool> for Scalar {
    fn from(v: bool) -> Self {
        Scalar::Bool(v)
    }
}

impl From<i64> for Scalar {
    fn from(v: i64) -> Self {
        Scalar::Int(v)
    }
}

impl From<f64> for Scalar {
    fn from(v: f64) -> Self {
        Scalar::Float(v)
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(true) => write!(f, "True"),
            Scalar::Bool(false) => write!(f, "False"),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(v) => write!(f, "{v:?}"),
        }
    }
}
