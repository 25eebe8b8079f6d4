//! Internal dtype dispatch macros: the single `match` point that turns a runtime dtype into a Rust type.

/// Binds the type alias `$T` to the Rust element type of `$dtype` and evaluates `$body`.
macro_rules! dispatch_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::DType::Bool => {
                type $T = bool;
                $body
            }
            $crate::dtype::DType::UInt8 => {
                type $T = u8;
                $body
            }
            $crate::dtype::DType::Int8 => {
                type $T = i8;
                $body
            }
            $crate::dtype::DType::Int16 => {
                type $T = i16;
                $body
            }
            $crate::dtype::DType::Int32 => {
                type $T = i32;
                $body
            }
            $crate::dtype::DType::Int64 => {
                type $T = i64;
                $body
            }
            $crate::dtype::DType::Float16 => {
                type $T = half::f16;
                $body
            }
            $crate::dtype::DType::BFloat16 => {
                type $T = half::bf16;
                $body
            }
            $crate::dtype::DType::Float32 => {
                type $T = f32;
                $body
            }
            $crate::dtype::DType::Float64 => {
                type $T = f64;
                $body
            }
            $crate::dtype::DType::ComplexFloat => {
                type $T = $crate::complex::Complex64;
                $body
            }
            $crate::dtype::DType::ComplexDouble => {
                type $T = $crate::complex::Complex128;
                $body
            }
        }
    };
}
pub(crate) use dispatch_dtype;

/// Like `dispatch_dtype!` but only for floating dtypes; any other dtype evaluates `$other`.
macro_rules! dispatch_float {
    ($dtype:expr, $T:ident => $body:expr, _ => $other:expr) => {
        match $dtype {
            $crate::dtype::DType::Float16 => {
                type $T = half::f16;
                $body
            }
            $crate::dtype::DType::BFloat16 => {
                type $T = half::bf16;
                $body
            }
            $crate::dtype::DType::Float32 => {
                type $T = f32;
                $body
            }
            $crate::dtype::DType::Float64 => {
                type $T = f64;
                $body
            }
            _ => $other,
        }
    };
}
pub(crate) use dispatch_float;
