//! Elementwise binary operations with broadcasting and type promotion, their in-place forms,
//! comparisons, `copy_` and `fill_`.

use crate::dtype::{can_cast, DType, Scalar};
use crate::element::{Arith, Element};
use crate::error::{Result, TensorError};
use crate::macros::dispatch_dtype;
use crate::promotion::result_type;
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;

/// Rounding applied by `div`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundingMode {
    Trunc,
    Floor,
}

impl RoundingMode {
    /// Parses PyTorch's `rounding_mode` argument (`None`, "trunc" or "floor").
    pub fn parse(mode: Option<&str>) -> Result<Option<RoundingMode>> {
        match mode {
            None => Ok(None),
            Some("trunc") => Ok(Some(RoundingMode::Trunc)),
            Some("floor") => Ok(Some(RoundingMode::Floor)),
            Some(other) => Err(TensorError::InvalidArgument(format!(
                "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{other}'"
            ))),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum BinaryKind {
    Add(Scalar),
    Sub(Scalar),
    Mul,
    Div(Option<RoundingMode>),
    Remainder,
    Pow,
    Maximum,
    Minimum,
    Fmod,
    Atan2,
    Fmax,
    Fmin,
    Hypot,
    LogAddExp,
    BitAnd,
    BitOr,
    BitXor,
    ShiftLeft,
    ShiftRight,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CompareKind {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LogicalAnd,
    LogicalOr,
    LogicalXor,
}

fn bitwise_name(kind: BinaryKind) -> &'static str {
    match kind {
        BinaryKind::BitAnd => "bitwise_and_cpu",
        BinaryKind::BitOr => "bitwise_or_cpu",
        BinaryKind::BitXor => "bitwise_xor_cpu",
        BinaryKind::ShiftLeft => "lshift_cpu",
        _ => "rshift_cpu",
    }
}

/// PyTorch's alpha_check for add/sub.
fn check_alpha(dtype: DType, alpha: &Scalar) -> Result<()> {
    if alpha.is_boolean() && dtype != DType::Bool {
        return Err(TensorError::InvalidArgument(
            "Boolean alpha only supported for Boolean results.".to_string(),
        ));
    }
    if !dtype.is_floating_point() && !dtype.is_complex() && !alpha.is_integral(true) {
        return Err(TensorError::InvalidArgument(
            "For integral input tensors, argument alpha must not be a floating point number."
                .to_string(),
        ));
    }
    Ok(())
}

fn check_sub(a: &Tensor, b: &Tensor) -> Result<()> {
    let (ab, bb) = (a.dtype() == DType::Bool, b.dtype() == DType::Bool);
    if ab && bb {
        return Err(TensorError::InvalidArgument(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.".to_string(),
        ));
    }
    if ab || bb {
        return Err(TensorError::InvalidArgument(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.".to_string(),
        ));
    }
    Ok(())
}

/// The complex operands' checks: add, sub, mul, true division and pow are defined for
/// complex numbers; the rest are refused with PyTorch's messages.
fn complex_binary_dtype(common: DType, kind: BinaryKind) -> Result<DType> {
    let refused = match kind {
        BinaryKind::Add(alpha) | BinaryKind::Sub(alpha) => {
            check_alpha(common, &alpha)?;
            return Ok(common);
        }
        BinaryKind::Mul | BinaryKind::Div(None) | BinaryKind::Pow => return Ok(common),
        BinaryKind::Div(Some(RoundingMode::Floor)) => "div_floor_cpu",
        BinaryKind::Div(Some(_)) => "div_trunc_cpu",
        BinaryKind::Remainder => "remainder_cpu",
        BinaryKind::Fmod => "fmod_cpu",
        BinaryKind::Atan2 => "atan2_cpu",
        BinaryKind::Hypot => "hypot_cpu",
        BinaryKind::LogAddExp => "logaddexp_cpu",
        BinaryKind::Maximum | BinaryKind::Minimum | BinaryKind::Fmax | BinaryKind::Fmin => {
            let name = match kind {
                BinaryKind::Maximum => "maximum",
                BinaryKind::Minimum => "minimum",
                BinaryKind::Fmax => "fmax",
                _ => "fmin",
            };
            return Err(TensorError::InvalidArgument(format!(
                "{name} not implemented for complex tensors."
            )));
        }
        other => bitwise_name(other),
    };
    Err(TensorError::NotImplementedForDType {
        op: refused,
        dtype: common,
    })
}

/// Applies `f` elementwise over the broadcast of `a` and `b`, both converted to `T`.
fn map2<T: Arith, R: Element>(
    a: &Tensor,
    b: &Tensor,
    shape: &[usize],
    f: impl Fn(T, T) -> R + Sync + Send,
) -> Result<Tensor> {
    use crate::ops::parallel::map_collect;
    let a = a.broadcast_to(shape)?;
    let b = b.broadcast_to(shape)?;
    if let Some(out) = crate::ops::broadcast_zip::broadcast_zip_map::<T, R>(&a, &b, &f) {
        return Ok(Tensor::from_values(out, shape));
    }
    // Operands of another dtype are converted while gathered. A single element broadcast over the shape (a scalar operand) is read once instead of
    // being expanded into a full copy.
    let out: Vec<R> = if let Some(y) = b.single_element::<T>() {
        map_collect(&a.gather::<T>(), |&x| f(x, y))
    } else if let Some(x) = a.single_element::<T>() {
        map_collect(&b.gather::<T>(), |&y| f(x, y))
    } else {
        crate::ops::parallel::zip_map_collect(&a.gather::<T>(), &b.gather::<T>(), f)
    };
    Ok(Tensor::from_values(out, shape))
}

/// Rejects integer division (or remainder) by zero the way PyTorch's CPU kernels do.
fn check_no_zero_divisor<T: Arith>(b: &Tensor) -> Result<()> {
    if T::DTYPE.is_integral(false) && b.gather::<T>().iter().any(|&x| x == T::zero()) {
        return Err(TensorError::ZeroDivision);
    }
    Ok(())
}

/// PyTorch's CPU kernels for mul and the divisions, when the result is a half type and the
/// second operand is a single element, compute in f32 with that element's *original* value
/// (before it is rounded to the half type).
fn reduced_float_scalar_kernel<T: Arith>(
    a: &Tensor,
    b: &Tensor,
    shape: &[usize],
    kind: BinaryKind,
) -> Result<Option<Tensor>> {
    if !matches!(T::DTYPE, DType::Float16 | DType::BFloat16) || b.numel() != 1 {
        return Ok(None);
    }
    let op: fn(f32, f32) -> f32 = match kind {
        BinaryKind::Mul => |x, y| x * y,
        BinaryKind::Div(None) => |x, y| x / y,
        BinaryKind::Div(Some(RoundingMode::Trunc)) => |x, y| (x / y).trunc(),
        BinaryKind::Div(Some(RoundingMode::Floor)) => Arith::div_floor,
        _ => return Ok(None),
    };
    let scalar = b.to_f64_vec().first().copied().unwrap_or(0.0) as f32;
    let values: Vec<T> = a
        .broadcast_to(shape)?
        .gather::<T>()
        .into_iter()
        .map(|x| T::from_f64(f64::from(op(x.to_f64() as f32, scalar))))
        .collect();
    Ok(Some(Tensor::from_values(values, shape)))
}

fn arith_kernel<T: Arith>(
    a: &Tensor,
    b: &Tensor,
    shape: &[usize],
    kind: BinaryKind,
) -> Result<Tensor> {
    if let Some(result) = reduced_float_scalar_kernel::<T>(a, b, shape, kind)? {
        return Ok(result);
    }
    match kind {
        BinaryKind::Add(alpha) => {
            let alpha_t = T::from_scalar(&alpha);
            if alpha_t == T::one() {
                map2::<T, T>(a, b, shape, |x, y| x.add(y))
            } else {
                map2::<T, T>(a, b, shape, |x, y| x.add(alpha_t.mul(y)))
            }
        }
        BinaryKind::Sub(alpha) => {
            let alpha_t = T::from_scalar(&alpha);
            if alpha_t == T::one() {
                map2::<T, T>(a, b, shape, |x, y| x.sub(y))
            } else {
                map2::<T, T>(a, b, shape, |x, y| x.sub(alpha_t.mul(y)))
            }
        }
        BinaryKind::Mul => map2::<T, T>(a, b, shape, |x, y| x.mul(y)),
        BinaryKind::Div(None) => map2::<T, T>(a, b, shape, |x, y| x.div(y)),
        BinaryKind::Div(Some(RoundingMode::Trunc)) => {
            check_no_zero_divisor::<T>(b)?;
            map2::<T, T>(a, b, shape, |x, y| x.div_trunc(y))
        }
        BinaryKind::Div(Some(RoundingMode::Floor)) => {
            check_no_zero_divisor::<T>(b)?;
            map2::<T, T>(a, b, shape, |x, y| x.div_floor(y))
        }
        BinaryKind::Remainder => {
            check_no_zero_divisor::<T>(b)?;
            map2::<T, T>(a, b, shape, |x, y| x.remainder(y))
        }
        BinaryKind::Pow => map2::<T, T>(a, b, shape, |x, y| x.pow(y)),
        BinaryKind::Maximum => map2::<T, T>(a, b, shape, |x, y| x.nan_max(y)),
        BinaryKind::Minimum => map2::<T, T>(a, b, shape, |x, y| x.nan_min(y)),
        BinaryKind::Fmod => {
            check_no_zero_divisor::<T>(b)?;
            if T::DTYPE.is_floating_point() {
                map2::<T, T>(a, b, shape, |x, y| T::from_f64(x.to_f64() % y.to_f64()))
            } else {
                map2::<T, T>(a, b, shape, |x, y| {
                    T::from_i64(x.to_i64().checked_rem(y.to_i64()).unwrap_or(0))
                })
            }
        }
        BinaryKind::Atan2 => map2::<T, T>(a, b, shape, |x, y| {
            T::from_f64(x.to_f64().atan2(y.to_f64()))
        }),
        BinaryKind::Hypot => map2::<T, T>(a, b, shape, |x, y| {
            T::from_f64(x.to_f64().hypot(y.to_f64()))
        }),
        // ATen's CPU kernel: equal infinities return themselves (avoiding inf - inf = NaN).
        BinaryKind::LogAddExp => map2::<T, T>(a, b, shape, |x, y| {
            let (x, y) = (x.to_f64(), y.to_f64());
            if x.is_infinite() && x == y {
                T::from_f64(x)
            } else {
                let m = if x.is_nan() || y.is_nan() {
                    f64::NAN
                } else {
                    x.max(y)
                };
                T::from_f64(m + (-(x - y).abs()).exp().ln_1p())
            }
        }),
        // fmax/fmin ignore a NaN operand (unlike maximum/minimum).
        BinaryKind::Fmax => map2::<T, T>(a, b, shape, |x, y| {
            if x.is_nan() {
                y
            } else if y.is_nan() {
                x
            } else {
                x.nan_max(y)
            }
        }),
        BinaryKind::Fmin => map2::<T, T>(a, b, shape, |x, y| {
            if x.is_nan() {
                y
            } else if y.is_nan() {
                x
            } else {
                x.nan_min(y)
            }
        }),
        BinaryKind::BitAnd => {
            map2::<T, T>(a, b, shape, |x, y| T::from_i64(x.to_i64() & y.to_i64()))
        }
        BinaryKind::BitOr => map2::<T, T>(a, b, shape, |x, y| T::from_i64(x.to_i64() | y.to_i64())),
        BinaryKind::BitXor => {
            map2::<T, T>(a, b, shape, |x, y| T::from_i64(x.to_i64() ^ y.to_i64()))
        }
        BinaryKind::ShiftLeft | BinaryKind::ShiftRight => {
            let bits = (T::DTYPE.item_size() * 8) as i64;
            let signed = !matches!(T::DTYPE, DType::UInt8 | DType::Bool);
            let left = kind == BinaryKind::ShiftLeft;
            map2::<T, T>(a, b, shape, move |x, y| {
                let (x, y) = (x.to_i64(), y.to_i64());
                // Shifting by the width or more (or by a negative amount) gives 0, or the
                // sign fill for right shifts of signed values, as PyTorch's kernels do.
                let in_range = (0..bits).contains(&y);
                let shifted = match (left, in_range) {
                    (true, true) => x.wrapping_shl(y as u32),
                    (true, false) => 0,
                    (false, true) => x >> y,
                    (false, false) => {
                        if signed && x < 0 {
                            -1
                        } else {
                            0
                        }
                    }
                };
                T::from_i64(shifted)
            })
        }
    }
}

fn compare_kernel<T: Arith>(
    a: &Tensor,
    b: &Tensor,
    shape: &[usize],
    kind: CompareKind,
) -> Result<Tensor> {
    match kind {
        CompareKind::Eq => map2::<T, bool>(a, b, shape, |x, y| x == y),
        CompareKind::Ne => map2::<T, bool>(a, b, shape, |x, y| x != y),
        CompareKind::Lt => map2::<T, bool>(a, b, shape, |x, y| x < y),
        CompareKind::Le => map2::<T, bool>(a, b, shape, |x, y| x <= y),
        CompareKind::Gt => map2::<T, bool>(a, b, shape, |x, y| x > y),
        CompareKind::Ge => map2::<T, bool>(a, b, shape, |x, y| x >= y),
        CompareKind::LogicalAnd => {
            map2::<T, bool>(a, b, shape, |x, y| x.is_nonzero() && y.is_nonzero())
        }
        CompareKind::LogicalOr => {
            map2::<T, bool>(a, b, shape, |x, y| x.is_nonzero() || y.is_nonzero())
        }
        CompareKind::LogicalXor => {
            map2::<T, bool>(a, b, shape, |x, y| x.is_nonzero() != y.is_nonzero())
        }
    }
}

/// Public names of the broadcasting binary operators, for registration tables.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BinaryOp {
    Mul,
    Remainder,
    Pow,
    Maximum,
    Minimum,
    Fmod,
    Atan2,
    Fmax,
    Fmin,
    Hypot,
    LogAddExp,
    BitwiseAnd,
    BitwiseOr,
    BitwiseXor,
    BitwiseLeftShift,
    BitwiseRightShift,
    FloorDivide,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LogicalAnd,
    LogicalOr,
    LogicalXor,
}

enum BinaryImpl {
    Arith(BinaryKind),
    Compare(CompareKind),
}

impl BinaryOp {
    fn implementation(self) -> BinaryImpl {
        use BinaryImpl::{Arith, Compare};
        match self {
            BinaryOp::Mul => Arith(BinaryKind::Mul),
            BinaryOp::Remainder => Arith(BinaryKind::Remainder),
            BinaryOp::Pow => Arith(BinaryKind::Pow),
            BinaryOp::Maximum => Arith(BinaryKind::Maximum),
            BinaryOp::Minimum => Arith(BinaryKind::Minimum),
            BinaryOp::Fmod => Arith(BinaryKind::Fmod),
            BinaryOp::Atan2 => Arith(BinaryKind::Atan2),
            BinaryOp::Fmax => Arith(BinaryKind::Fmax),
            BinaryOp::Fmin => Arith(BinaryKind::Fmin),
            BinaryOp::Hypot => Arith(BinaryKind::Hypot),
            BinaryOp::LogAddExp => Arith(BinaryKind::LogAddExp),
            BinaryOp::BitwiseAnd => Arith(BinaryKind::BitAnd),
            BinaryOp::BitwiseOr => Arith(BinaryKind::BitOr),
            BinaryOp::BitwiseXor => Arith(BinaryKind::BitXor),
            BinaryOp::BitwiseLeftShift => Arith(BinaryKind::ShiftLeft),
            BinaryOp::BitwiseRightShift => Arith(BinaryKind::ShiftRight),
            BinaryOp::FloorDivide => Arith(BinaryKind::Div(Some(RoundingMode::Floor))),
            BinaryOp::Eq => Compare(CompareKind::Eq),
            BinaryOp::Ne => Compare(CompareKind::Ne),
            BinaryOp::Lt => Compare(CompareKind::Lt),
            BinaryOp::Le => Compare(CompareKind::Le),
            BinaryOp::Gt => Compare(CompareKind::Gt),
            BinaryOp::Ge => Compare(CompareKind::Ge),
            BinaryOp::LogicalAnd => Compare(CompareKind::LogicalAnd),
            BinaryOp::LogicalOr => Compare(CompareKind::LogicalOr),
            BinaryOp::LogicalXor => Compare(CompareKind::LogicalXor),
        }
    }
}

impl Tensor {
    /// Applies a broadcasting binary operator.
    pub fn binary(&self, other: &Tensor, op: BinaryOp) -> Result<Tensor> {
        match op.implementation() {
            BinaryImpl::Arith(kind) => self.binary_op(other, kind),
            BinaryImpl::Compare(kind) => self.compare_op(other, kind),
        }
    }

    /// In-place form; comparison results are written converted to this tensor's dtype.
    pub fn binary_(&self, other: &Tensor, op: BinaryOp) -> Result<Tensor> {
        match op.implementation() {
            BinaryImpl::Arith(kind) => self.binary_op_(other, kind),
            BinaryImpl::Compare(kind) => {
                let result = self.compare_op(other, kind)?;
                if result.sizes() != self.sizes() {
                    return Err(TensorError::OutputShapeMismatch {
                        output: self.sizes().to_vec(),
                        broadcast: result.sizes().to_vec(),
                    });
                }
                self.write_from(&result)?;
                Ok(self.clone())
            }
        }
    }

    /// `out=` form.
    pub fn binary_out(&self, other: &Tensor, op: BinaryOp, out: &Tensor) -> Result<Tensor> {
        let result = self.binary(other, op)?;
        match op.implementation() {
            // Comparison results convert to any out dtype.
            BinaryImpl::Compare(_) => result.to_dtype(out.dtype()).write_into_out(out),
            BinaryImpl::Arith(_) => result.write_into_out(out),
        }
    }

    /// Validates operands and returns the dtype the computation runs in (also the result dtype).
    fn binary_compute_dtype(&self, other: &Tensor, kind: BinaryKind) -> Result<DType> {
        let common = result_type(&[self, other]);
        if common.is_complex() {
            return complex_binary_dtype(common, kind);
        }
        match kind {
            BinaryKind::Add(alpha) => check_alpha(common, &alpha)?,
            BinaryKind::Sub(alpha) => {
                check_sub(self, other)?;
                check_alpha(common, &alpha)?;
            }
            BinaryKind::Div(None) if !common.is_floating_point() => {
                return Ok(DType::default_float());
            }
            BinaryKind::Remainder | BinaryKind::Div(Some(_)) if common == DType::Bool => {
                return Err(TensorError::NotImplementedForDType {
                    op: if kind == BinaryKind::Remainder {
                        "remainder_cpu"
                    } else {
                        "div_cpu"
                    },
                    dtype: common,
                });
            }
            BinaryKind::Atan2 if !common.is_floating_point() => {
                return Ok(DType::default_float());
            }
            BinaryKind::Fmod if common == DType::Bool => {
                return Err(TensorError::NotImplementedForDType {
                    op: "fmod_cpu",
                    dtype: common,
                });
            }
            BinaryKind::Hypot if !common.is_floating_point() => {
                return Err(TensorError::NotImplementedForDType {
                    op: "hypot_cpu",
                    dtype: common,
                });
            }
            BinaryKind::LogAddExp if !common.is_floating_point() => {
                return Err(TensorError::NotImplementedForDType {
                    op: "logaddexp_cpu",
                    dtype: common,
                });
            }
            BinaryKind::ShiftLeft | BinaryKind::ShiftRight if common == DType::Bool => {
                return Err(TensorError::NotImplementedForDType {
                    op: bitwise_name(kind),
                    dtype: common,
                });
            }
            BinaryKind::BitAnd
            | BinaryKind::BitOr
            | BinaryKind::BitXor
            | BinaryKind::ShiftLeft
            | BinaryKind::ShiftRight
                if common.is_floating_point() =>
            {
                return Err(TensorError::NotImplementedForDType {
                    op: bitwise_name(kind),
                    dtype: common,
                });
            }
            BinaryKind::Pow => {
                if common == DType::Bool {
                    return Err(TensorError::NotImplementedForDType {
                        op: "pow",
                        dtype: common,
                    });
                }
                if common.is_integral(false)
                    && other.is_wrapped_number()
                    && other.item().map(|s| s.to_i64() < 0).unwrap_or(false)
                {
                    return Err(TensorError::InvalidArgument(
                        "Integers to negative integer powers are not allowed.".to_string(),
                    ));
                }
            }
            _ => {}
        }
        Ok(common)
    }

    fn binary_op(&self, other: &Tensor, kind: BinaryKind) -> Result<Tensor> {
        let dtype = self.binary_compute_dtype(other, kind)?;
        let shape = broadcast_shapes(self.sizes(), other.sizes())?;
        dispatch_dtype!(dtype, T => arith_kernel::<T>(self, other, &shape, kind))
    }

    /// Computes `kind` and writes the result into `self` (PyTorch's in-place semantics).
    fn binary_op_(&self, other: &Tensor, kind: BinaryKind) -> Result<Tensor> {
        let dtype = self.binary_compute_dtype(other, kind)?;
        if !can_cast(dtype, self.dtype()) {
            return Err(TensorError::CannotCast {
                from: dtype,
                to: self.dtype(),
            });
        }
        let shape = broadcast_shapes(self.sizes(), other.sizes())?;
        if shape != self.sizes() {
            return Err(TensorError::OutputShapeMismatch {
                output: self.sizes().to_vec(),
                broadcast: shape,
            });
        }
        let result = dispatch_dtype!(dtype, T => arith_kernel::<T>(self, other, &shape, kind))?;
        self.write_from(&result)?;
        Ok(self.clone())
    }

    fn compare_op(&self, other: &Tensor, kind: CompareKind) -> Result<Tensor> {
        let dtype = result_type(&[self, other]);
        // Complex numbers have no order: only (in)equality and the logical operators apply.
        let ordering = match kind {
            CompareKind::Lt => Some("lt_cpu"),
            CompareKind::Le => Some("le_cpu"),
            CompareKind::Gt => Some("gt_cpu"),
            CompareKind::Ge => Some("ge_cpu"),
            _ => None,
        };
        if let (true, Some(op)) = (dtype.is_complex(), ordering) {
            return Err(TensorError::NotImplementedForDType { op, dtype });
        }
        let shape = broadcast_shapes(self.sizes(), other.sizes())?;
        dispatch_dtype!(dtype, T => compare_kernel::<T>(self, other, &shape, kind))
    }

    /// Rejects writes into views where several elements alias one memory location.
    fn check_writable(&self) -> Result<()> {
        let overlapping = self
            .sizes()
            .iter()
            .zip(self.strides())
            .any(|(&size, &stride)| size > 1 && stride == 0);
        if overlapping {
            return Err(TensorError::InvalidArgument(
                "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.".to_string(),
            ));
        }
        Ok(())
    }

    /// Writes `src` (same shape) into this view, converting to this tensor's dtype.
    pub(crate) fn write_from(&self, src: &Tensor) -> Result<()> {
        self.check_writable()?;
        if self.copy_contiguous_from(src) {
            return Ok(());
        }
        dispatch_dtype!(self.dtype(), T => {
            let v = src.gather::<T>();
            // Values are fully read before the write lock is taken, so `src` may alias `self`.
            self.scatter::<T>(&v);
        });
        Ok(())
    }

    /// `self + alpha * other`.
    pub fn add(&self, other: &Tensor, alpha: &Scalar) -> Result<Tensor> {
        self.binary_op(other, BinaryKind::Add(*alpha))
    }

    /// `self - alpha * other`.
    pub fn sub(&self, other: &Tensor, alpha: &Scalar) -> Result<Tensor> {
        self.binary_op(other, BinaryKind::Sub(*alpha))
    }

    pub fn mul(&self, other: &Tensor) -> Result<Tensor> {
        self.binary_op(other, BinaryKind::Mul)
    }

    /// Division; `rounding_mode` is `None` (true division), "trunc" or "floor".
    pub fn div(&self, other: &Tensor, rounding_mode: Option<&str>) -> Result<Tensor> {
        let mode = RoundingMode::parse(rounding_mode)?;
        self.binary_op(other, BinaryKind::Div(mode))
    }

    /// Python-style modulus: the result takes the sign of the divisor.
    pub fn remainder(&self, other: &Tensor) -> Result<Tensor> {
        self.binary_op(other, BinaryKind::Remainder)
    }

    pub fn pow(&self, exponent: &Tensor) -> Result<Tensor> {
        self.binary_op(exponent, BinaryKind::Pow)
    }

    /// `pow.Tensor_Scalar`: exponents 0 and 1 fill with ones or copy (for every dtype, bool
    /// included), as PyTorch's `pow_out` does; other exponents go through the kernel.
    pub fn pow_scalar(&self, exponent: &Scalar) -> Result<Tensor> {
        let wrapped = Tensor::wrapped_scalar(*exponent);
        let dtype = result_type(&[self, &wrapped]);
        if dtype.is_integral(false) && exponent.is_integral(false) && exponent.to_i64() < 0 {
            return Err(TensorError::InvalidArgument(
                "Integers to negative integer powers are not allowed.".to_string(),
            ));
        }
        let value = exponent.to_f64();
        if value == 0.0 {
            Tensor::full(self.sizes(), Scalar::Int(1), dtype)
        } else if value == 1.0 {
            Ok(self.cast_copy(dtype))
        } else {
            self.binary_op(&wrapped, BinaryKind::Pow)
        }
    }

    /// Elementwise maximum (NaN propagates).
    pub fn maximum(&self, other: &Tensor) -> Result<Tensor> {
        self.binary_op(other, BinaryKind::Maximum)
    }

    /// Elementwise minimum (NaN propagates).
    pub fn minimum(&self, other: &Tensor) -> Result<Tensor> {
        self.binary_op(other, BinaryKind::Minimum)
    }

    pub fn eq(&self, other: &Tensor) -> Result<Tensor> {
        self.compare_op(other, CompareKind::Eq)
    }

    pub fn ne(&self, other: &Tensor) -> Result<Tensor> {
        self.compare_op(other, CompareKind::Ne)
    }

    pub fn lt(&self, other: &Tensor) -> Result<Tensor> {
        self.compare_op(other, CompareKind::Lt)
    }

    pub fn le(&self, other: &Tensor) -> Result<Tensor> {
        self.compare_op(other, CompareKind::Le)
    }

    pub fn gt(&self, other: &Tensor) -> Result<Tensor> {
        self.compare_op(other, CompareKind::Gt)
    }

    pub fn ge(&self, other: &Tensor) -> Result<Tensor> {
        self.compare_op(other, CompareKind::Ge)
    }

    /// In-place `self += alpha * other`; returns `self`.
    pub fn add_(&self, other: &Tensor, alpha: &Scalar) -> Result<Tensor> {
        self.binary_op_(other, BinaryKind::Add(*alpha))
    }

    pub fn sub_(&self, other: &Tensor, alpha: &Scalar) -> Result<Tensor> {
        self.binary_op_(other, BinaryKind::Sub(*alpha))
    }

    pub fn mul_(&self, other: &Tensor) -> Result<Tensor> {
        self.binary_op_(other, BinaryKind::Mul)
    }

    pub fn div_(&self, other: &Tensor, rounding_mode: Option<&str>) -> Result<Tensor> {
        let mode = RoundingMode::parse(rounding_mode)?;
        self.binary_op_(other, BinaryKind::Div(mode))
    }

    /// Copies `src` into `self`, broadcasting it to `self`'s shape and converting the dtype.
    pub fn copy_(&self, src: &Tensor) -> Result<Tensor> {
        let expanded = src.broadcast_to(self.sizes())?;
        self.write_from(&expanded)?;
        Ok(self.clone())
    }

    /// Fills every element with `value` converted to this tensor's dtype.
    pub fn fill_(&self, value: &Scalar) -> Result<Tensor> {
        self.check_writable()?;
        let numel = self.numel();
        dispatch_dtype!(self.dtype(), T => self.scatter::<T>(&vec![T::from_scalar(value); numel]));
        Ok(self.clone())
    }

    pub fn zero_(&self) -> Result<Tensor> {
        self.fill_(&Scalar::Int(0))
    }

    /// Writes a computed result (same shape) into this tensor, checking the dtype is castable.
    pub(crate) fn assign_result(&self, result: &Tensor) -> Result<Tensor> {
        if !can_cast(result.dtype(), self.dtype()) {
            return Err(TensorError::CannotCast {
                from: result.dtype(),
                to: self.dtype(),
            });
        }
        self.write_from(result)?;
        Ok(self.clone())
    }
}
