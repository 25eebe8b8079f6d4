//! Elementwise unary operators (math, rounding, activations, predicates) with PyTorch's dtype
//! rules, their in-place forms and `out=` forms. One generic kernel, one dtype dispatch point.

use crate::dtype::{can_cast, DType};
use crate::element::Element;
use crate::error::{Result, TensorError};
use crate::macros::dispatch_dtype;
use crate::ops::special::{erf, erf_fast, erfc, erfinv, gelu_fast};
use crate::ops::vectorized_math::{self, VectorFunction};
use crate::tensor::Tensor;

/// A pointwise unary operator with its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum UnaryOp {
    Abs,
    Neg,
    Sign,
    Reciprocal,
    Exp,
    Exp2,
    Expm1,
    Log,
    Log2,
    Log10,
    Log1p,
    Sqrt,
    Rsqrt,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Asinh,
    Acosh,
    Atanh,
    Sinh,
    Cosh,
    Tanh,
    Sigmoid,
    /// `logit(eps)`: inputs are clamped to `[eps, 1 - eps]` when `eps` is given.
    Logit(Option<f64>),
    Erf,
    Erfc,
    Erfinv,
    Floor,
    Ceil,
    /// `round(decimals)`: half to even.
    Round(i64),
    Trunc,
    Frac,
    Relu,
    LeakyRelu(f64),
    /// `elu(alpha, scale, input_scale)`.
    Elu(f64, f64, f64),
    Selu,
    Celu(f64),
    /// `gelu`; `true` selects the tanh approximation.
    Gelu(bool),
    Silu,
    Mish,
    Hardswish,
    Hardsigmoid,
    /// `hardtanh(min_val, max_val)`; relu6 is `Hardtanh(0, 6)`.
    Hardtanh(f64, f64),
    /// `softplus(beta, threshold)`.
    Softplus(f64, f64),
    LogicalNot,
    BitwiseNot,
    IsNan,
    IsInf,
    IsPosInf,
    IsNegInf,
    IsFinite,
    /// `nan_to_num(nan, posinf, neginf)`; missing values use 0 and the dtype's extremes.
    NanToNum(Option<f64>, Option<f64>, Option<f64>),
}

/// How an operator treats dtypes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UnaryKind {
    /// Floating result; integral and bool inputs compute in the default float dtype.
    FloatResult,
    /// Same dtype as the input, integers allowed; bool is rejected.
    Numeric,
    /// Same dtype as the input, every dtype allowed.
    AnyDtype,
    /// Floating inputs only.
    FloatOnly,
    /// Bool result from any input.
    Predicate,
    /// Integral and bool inputs only.
    IntegralOnly,
}

const SELU_ALPHA: f64 = 1.673_263_242_354_377_3;
const SELU_SCALE: f64 = 1.050_700_987_355_480_5;

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn softplus(x: f64, beta: f64, threshold: f64) -> f64 {
    if x * beta > threshold {
        x
    } else {
        (x * beta).exp().ln_1p() / beta
    }
}

fn round_decimals(x: f64, decimals: i64) -> f64 {
    if decimals == 0 {
        return x.round_ties_even();
    }
    let ten_pow = 10f64.powi(decimals.unsigned_abs().min(400) as i32);
    if decimals > 0 {
        (x * ten_pow).round_ties_even() / ten_pow
    } else {
        (x / ten_pow).round_ties_even() * ten_pow
    }
}

/// The largest finite value of a floating dtype (nan_to_num's default for +inf).
fn float_max(dtype: DType) -> f64 {
    match dtype {
        DType::Float16 => 65504.0,
        DType::BFloat16 => half::bf16::MAX.to_f64(),
        DType::Float32 => f64::from(f32::MAX),
        _ => f64::MAX,
    }
}

impl UnaryOp {
    /// PyTorch's operator name, used in error messages.
    pub fn name(&self) -> &'static str {
        use UnaryOp::*;
        match self {
            Abs => "abs",
            Neg => "neg",
            Sign => "sign",
            Reciprocal => "reciprocal",
            Exp => "exp",
            Exp2 => "exp2",
            Expm1 => "expm1",
            Log => "log",
            Log2 => "log2",
            Log10 => "log10",
            Log1p => "log1p",
            Sqrt => "sqrt",
            Rsqrt => "rsqrt",
            Sin => "sin",
            Cos => "cos",
            Tan => "tan",
            Asin => "asin",
            Acos => "acos",
            Atan => "atan",
            Asinh => "asinh",
            Acosh => "acosh",
            Atanh => "atanh",
            Sinh => "sinh",
            Cosh => "cosh",
            Tanh => "tanh",
            Sigmoid => "sigmoid",
            Logit(_) => "logit",
            Erf => "erf",
            Erfc => "erfc",
            Erfinv => "erfinv",
            Floor => "floor",
            Ceil => "ceil",
            Round(_) => "round",
            Trunc => "trunc",
            Frac => "frac",
            Relu => "relu",
            LeakyRelu(_) => "leaky_relu",
            Elu(..) => "elu",
            Selu => "selu",
            Celu(_) => "celu",
            Gelu(_) => "gelu",
            Silu => "silu",
            Mish => "mish",
            Hardswish => "hardswish",
            Hardsigmoid => "hardsigmoid",
            Hardtanh(..) => "hardtanh",
            Softplus(..) => "softplus",
            LogicalNot => "logical_not",
            BitwiseNot => "bitwise_not",
            IsNan => "isnan",
            IsInf => "isinf",
            IsPosInf => "isposinf",
            IsNegInf => "isneginf",
            IsFinite => "isfinite",
            NanToNum(..) => "nan_to_num",
        }
    }

    fn kind(&self) -> UnaryKind {
        use UnaryOp::*;
        match self {
            Abs | Neg | Sign | Floor | Ceil | Trunc | Relu | Hardtanh(..) => UnaryKind::Numeric,
            Round(d) if *d != 0 => UnaryKind::FloatOnly,
            Round(_) => UnaryKind::Numeric,
            NanToNum(..) => UnaryKind::AnyDtype,
            Frac | LeakyRelu(_) | Elu(..) | Selu | Celu(_) | Gelu(_) | Silu | Mish | Hardswish
            | Hardsigmoid | Softplus(..) => UnaryKind::FloatOnly,
            LogicalNot | IsNan | IsInf | IsPosInf | IsNegInf | IsFinite => UnaryKind::Predicate,
            BitwiseNot => UnaryKind::IntegralOnly,
            _ => UnaryKind::FloatResult,
        }
    }

    /// The function on floating values (computed in f64, rounded once to the dtype).
    fn apply_float(&self, x: f64, dtype: DType) -> f64 {
        use UnaryOp::*;
        match *self {
            Abs => x.abs(),
            Neg => -x,
            Sign => {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            }
            Reciprocal => 1.0 / x,
            Exp => x.exp(),
            Exp2 => x.exp2(),
            Expm1 => x.exp_m1(),
            Log => x.ln(),
            Log2 => x.log2(),
            Log10 => x.log10(),
            Log1p => x.ln_1p(),
            Sqrt => x.sqrt(),
            Rsqrt => 1.0 / x.sqrt(),
            Sin => x.sin(),
            Cos => x.cos(),
            Tan => x.tan(),
            Asin => x.asin(),
            Acos => x.acos(),
            Atan => x.atan(),
            Asinh => x.asinh(),
            Acosh => x.acosh(),
            Atanh => x.atanh(),
            Sinh => x.sinh(),
            Cosh => x.cosh(),
            Tanh => x.tanh(),
            Sigmoid => sigmoid(x),
            Logit(eps) => {
                let z = match eps {
                    Some(e) if !x.is_nan() => x.clamp(e, 1.0 - e),
                    _ => x,
                };
                (z / (1.0 - z)).ln()
            }
            // Narrower results need no full-precision series (PyTorch's own f32 erf is an
            // approximation); float64 keeps it.
            Erf if dtype != DType::Float64 => erf_fast(x),
            Erf => erf(x),
            Erfc => erfc(x),
            Erfinv => erfinv(x),
            Floor => x.floor(),
            Ceil => x.ceil(),
            Round(d) => round_decimals(x, d),
            Trunc => x.trunc(),
            Frac => x - x.trunc(),
            Relu => {
                if x.is_nan() || x > 0.0 {
                    x
                } else {
                    0.0
                }
            }
            LeakyRelu(slope) => {
                if x > 0.0 {
                    x
                } else {
                    x * slope
                }
            }
            Elu(alpha, scale, input_scale) => {
                if x > 0.0 {
                    x * scale
                } else {
                    (x * input_scale).exp_m1() * alpha * scale
                }
            }
            Selu => {
                if x > 0.0 {
                    x * SELU_SCALE
                } else {
                    x.exp_m1() * SELU_ALPHA * SELU_SCALE
                }
            }
            Celu(alpha) => {
                if x > 0.0 {
                    x
                } else {
                    (x / alpha).exp_m1() * alpha
                }
            }
            // PyTorch's CPU kernel gives NaN for both infinities (its vectorized erf
            // computes inf * 0 internally); match it.
            Gelu(false) if x.is_infinite() => f64::NAN,
            Gelu(false) if dtype != DType::Float64 => gelu_fast(x),
            Gelu(false) => x * 0.5 * (1.0 + erf(x * std::f64::consts::FRAC_1_SQRT_2)),
            Gelu(true) => {
                let inner = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
                0.5 * x * (1.0 + inner.tanh())
            }
            Silu => x * sigmoid(x),
            Mish => x * softplus(x, 1.0, 20.0).tanh(),
            Hardswish => x * (x + 3.0).clamp(0.0, 6.0) / 6.0,
            Hardsigmoid => (x + 3.0).clamp(0.0, 6.0) / 6.0,
            Hardtanh(low, high) => {
                if x.is_nan() {
                    x
                } else {
                    x.max(low).min(high)
                }
            }
            Softplus(beta, threshold) => softplus(x, beta, threshold),
            NanToNum(nan, posinf, neginf) => {
                if x.is_nan() {
                    nan.unwrap_or(0.0)
                } else if x == f64::INFINITY {
                    posinf.unwrap_or(float_max(dtype))
                } else if x == f64::NEG_INFINITY {
                    neginf.unwrap_or(-float_max(dtype))
                } else {
                    x
                }
            }
            LogicalNot | BitwiseNot | IsNan | IsInf | IsPosInf | IsNegInf | IsFinite => x,
        }
    }

    /// The function on integral values (wrapping like C++ arithmetic after the cast back).
    fn apply_int(&self, x: i64) -> i64 {
        use UnaryOp::*;
        match *self {
            Abs => x.wrapping_abs(),
            Neg => x.wrapping_neg(),
            Sign => x.signum(),
            Relu => x.max(0),
            Hardtanh(low, high) => {
                // PyTorch casts the bounds to the integral type first.
                x.max(low as i64).min(high as i64)
            }
            BitwiseNot => !x,
            _ => x,
        }
    }

    fn predicate(&self, x: f64) -> bool {
        use UnaryOp::*;
        match *self {
            LogicalNot => x == 0.0,
            IsNan => x.is_nan(),
            IsInf => x.is_infinite(),
            IsPosInf => x == f64::INFINITY,
            IsNegInf => x == f64::NEG_INFINITY,
            _ => x.is_finite(),
        }
    }

    /// The result dtype for an input dtype, or PyTorch's error.
    fn result_dtype(&self, input: DType) -> Result<DType> {
        let not_implemented = || TensorError::NotImplementedForDType {
            op: self.name(),
            dtype: input,
        };
        match self.kind() {
            UnaryKind::FloatResult => Ok(if input.is_floating_point() {
                input
            } else {
                DType::default_float()
            }),
            UnaryKind::Numeric => {
                if input == DType::Bool {
                    return Err(match self {
                        UnaryOp::Neg => TensorError::InvalidArgument(
                            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.".to_string(),
                        ),
                        UnaryOp::Sign => return Ok(input),
                        _ => not_implemented(),
                    });
                }
                Ok(input)
            }
            UnaryKind::AnyDtype => Ok(input),
            UnaryKind::FloatOnly => {
                if input.is_floating_point() {
                    Ok(input)
                } else {
                    Err(not_implemented())
                }
            }
            UnaryKind::Predicate => Ok(DType::Bool),
            UnaryKind::IntegralOnly => {
                if input.is_integral(true) {
                    Ok(input)
                } else {
                    Err(not_implemented())
                }
            }
        }
    }
}

/// The float32 slice kernel of `op`, where there is one (see `ops::vectorized_math`).
fn vector_function(op: UnaryOp) -> Option<VectorFunction> {
    Some(match op {
        UnaryOp::Exp => VectorFunction::Exp,
        UnaryOp::Sigmoid => VectorFunction::Sigmoid,
        UnaryOp::Silu => VectorFunction::Silu,
        UnaryOp::Tanh => VectorFunction::Tanh,
        UnaryOp::Hardswish => VectorFunction::Hardswish,
        UnaryOp::Hardsigmoid => VectorFunction::Hardsigmoid,
        _ => return None,
    })
}

fn unary_kernel<T: Element>(input: &Tensor, op: UnaryOp) -> Tensor {
    // Float32 results in float32 arithmetic over whole slices, as PyTorch's vectorized CPU
    // kernels compute them (float64 stays on the exact path below).
    if let (Some(function), DType::Float32) = (vector_function(op), T::DTYPE) {
        let mut values = input.gather::<f32>();
        vectorized_math::apply_parallel(function, &mut values);
        return Tensor::from_values(values, input.sizes());
    }
    let values = input.gather::<T>();
    let out: Vec<T> = if T::DTYPE.is_floating_point() {
        let mut values = values;
        crate::ops::parallel::for_each_chunk_mut(&mut values, |chunk| {
            for x in chunk {
                *x = T::from_f64(op.apply_float(x.to_f64(), T::DTYPE));
            }
        });
        values
    } else if T::DTYPE == DType::Bool {
        // Only sign, abs, nan_to_num, round-like identities and bitwise_not reach bool.
        values
            .into_iter()
            .map(|x| {
                if op == UnaryOp::BitwiseNot {
                    T::from_bool(!x.is_nonzero())
                } else {
                    x
                }
            })
            .collect()
    } else {
        values
            .into_iter()
            .map(|x| T::from_i64(op.apply_int(x.to_i64())))
            .collect()
    };
    Tensor::from_values(out, input.sizes())
}

fn predicate_kernel<T: Element>(input: &Tensor, op: UnaryOp) -> Tensor {
    let out: Vec<bool> = input
        .gather::<T>()
        .into_iter()
        .map(|x| {
            if T::DTYPE == DType::Bool && op == UnaryOp::LogicalNot {
                !x.is_nonzero()
            } else {
                op.predicate(x.to_f64())
            }
        })
        .collect();
    Tensor::from_values(out, input.sizes())
}

impl Tensor {
    /// Applies a pointwise unary operator, returning a new tensor.
    pub fn unary(&self, op: UnaryOp) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return self.complex_unary(op);
        }
        let dtype = op.result_dtype(self.dtype())?;
        if op.kind() == UnaryKind::Predicate {
            return Ok(dispatch_dtype!(self.dtype(), T => predicate_kernel::<T>(self, op)));
        }
        Ok(dispatch_dtype!(dtype, T => unary_kernel::<T>(self, op)))
    }

    /// In-place form (`exp_`): the result must be castable to this tensor's dtype.
    /// A contiguous float tensor whose dtype the op keeps is updated where it lies (one pass
    /// over memory instead of gather, compute and scatter).
    pub fn unary_(&self, op: UnaryOp) -> Result<Tensor> {
        if self.dtype().is_complex() {
            let result = self.complex_unary(op)?;
            return self.assign_result(&result);
        }
        let dtype = op.result_dtype(self.dtype())?;
        if op == UnaryOp::Relu && dtype == self.dtype() {
            return self.relu_();
        }
        if op.kind() != UnaryKind::Predicate && dtype == self.dtype() {
            let in_place = |t: &Tensor| match dtype {
                DType::Float32 => match vector_function(op) {
                    // The out-of-place kernel over whole slices (the same bits).
                    Some(function) => t.map_contiguous_chunks_in_place::<f32>(|chunk| {
                        vectorized_math::apply(function, chunk)
                    }),
                    None => t.map_contiguous_in_place::<f32>(|x| {
                        f32::from_f64(op.apply_float(x.to_f64(), dtype))
                    }),
                },
                DType::Float64 => t.map_contiguous_in_place::<f64>(|x| op.apply_float(x, dtype)),
                _ => false,
            };
            if in_place(self) {
                return Ok(self.clone());
            }
        }
        let result = self.unary(op)?;
        self.assign_result(&result)
    }

    /// `out=` form: writes into `out`, see [`Tensor::write_into_out`].
    pub fn unary_out(&self, op: UnaryOp, out: &Tensor) -> Result<Tensor> {
        let result = self.unary(op)?;
        result.write_into_out(out)
    }

    /// Stores a computed result into an `out=` tensor the way PyTorch does: the result
    /// dtype must be castable to `out`'s dtype; a same-shaped `out` is written in place;
    /// another shape is resized first ([`Tensor::resized`]) and the returned tensor is `out`
    /// with its new geometry (the runtime makes every handle to `out` see it).
    pub fn write_into_out(&self, out: &Tensor) -> Result<Tensor> {
        if !can_cast(self.dtype(), out.dtype()) {
            return Err(TensorError::CannotCast {
                from: self.dtype(),
                to: out.dtype(),
            });
        }
        if out.sizes() == self.sizes() {
            return out.assign_result(self);
        }
        let sizes: Vec<i64> = self.sizes().iter().map(|&size| size as i64).collect();
        out.resized(&sizes, crate::ops::views::MemoryFormat::Contiguous)?
            .assign_result(self)
    }
}
