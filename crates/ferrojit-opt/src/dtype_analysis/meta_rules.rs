//! The dtype each operator gives on PyTorch's meta run (see the parent module): tensors of
//! shape `[1] * rank` and every number argument 1 (or 1.0). The rules are the operators'
//! dtype rules, with the refusals that run makes: a dimension argument of 1 needs a tensor
//! of at least two dimensions, an index of 1 is out of range for a dimension of size 1, an
//! operator defined for floating types only refuses integers. Each rule was checked
//! against `torch._C._jit_pass_propagate_dtype` (tests/fixtures/passes/dtype_*.ir).

use super::{promote_types, result_type, Dtype, Operand};

/// Operators whose result is a float even for integral inputs (PyTorch's "int to float"
/// unary functions).
const FLOAT_FUNCTIONS: &[&str] = &[
    "aten::sin",
    "aten::cos",
    "aten::tan",
    "aten::asin",
    "aten::acos",
    "aten::atan",
    "aten::sinh",
    "aten::cosh",
    "aten::tanh",
    "aten::exp",
    "aten::exp2",
    "aten::expm1",
    "aten::log",
    "aten::log2",
    "aten::log10",
    "aten::log1p",
    "aten::sqrt",
    "aten::rsqrt",
    "aten::sigmoid",
    "aten::erf",
    "aten::erfc",
    "aten::erfinv",
    "aten::reciprocal",
    "aten::lgamma",
    "aten::digamma",
    "aten::deg2rad",
    "aten::rad2deg",
    "aten::angle",
];

/// Operators that keep their input's dtype and refuse `Bool`.
const SAME_DTYPE_NOT_BOOL: &[&str] = &[
    "aten::relu6",
    "aten::neg",
    "aten::hardtanh",
    "aten::log_sigmoid",
];

/// Operators that keep their input's dtype for any dtype (the meta kernels of several
/// activations do not check for floating inputs, so `silu` of a Long is a Long there).
const SAME_DTYPE: &[&str] = &[
    "aten::relu",
    "aten::abs",
    "aten::sign",
    "aten::sgn",
    "aten::floor",
    "aten::ceil",
    "aten::round",
    "aten::trunc",
    "aten::frac",
    "aten::t",
    "aten::detach",
    "aten::alias",
    "aten::contiguous",
    "aten::expand_as",
    "aten::view_as",
    "aten::reshape_as",
    "aten::silu",
    "aten::mish",
    "aten::hardswish",
    "aten::hardsigmoid",
    "aten::softplus",
    "aten::celu",
    "aten::threshold",
    "aten::atleast_1d",
    "aten::atleast_2d",
    "aten::atleast_3d",
    "aten::ravel",
    "aten::positive",
    "aten::conj",
    "aten::bitwise_not",
    "aten::max",
    "aten::min",
    "aten::prelu",
];

/// Operators defined only for floating inputs, which keep their dtype.
const FLOAT_ONLY: &[&str] = &["aten::elu", "aten::selu", "aten::leaky_relu"];

/// Operators that give `Bool` for any input.
const PREDICATES: &[&str] = &[
    "aten::all",
    "aten::any",
    "aten::logical_not",
    "aten::isnan",
    "aten::isinf",
    "aten::isfinite",
    "aten::signbit",
    "aten::logical_and",
    "aten::logical_or",
    "aten::logical_xor",
];

/// Binary operators whose result is the promoted type of their first two operands.
const PROMOTING_BINARY: &[&str] = &[
    "aten::add.Tensor",
    "aten::add.Scalar",
    "aten::sub.Tensor",
    "aten::sub.Scalar",
    "aten::rsub.Tensor",
    "aten::rsub.Scalar",
    "aten::mul.Tensor",
    "aten::mul.Scalar",
    "aten::remainder.Tensor",
    "aten::remainder.Scalar",
    "aten::remainder.Scalar_Tensor",
    "aten::fmod.Tensor",
    "aten::fmod.Scalar",
    "aten::maximum",
    "aten::minimum",
    "aten::max.other",
    "aten::min.other",
    "aten::fmax",
    "aten::fmin",
    "aten::heaviside",
    "aten::hypot",
    "aten::pow.Tensor_Tensor",
    "aten::pow.Tensor_Scalar",
    "aten::pow.Scalar",
    "aten::floor_divide",
    "aten::floor_divide.Scalar",
];

/// Binary operators whose result is the promoted type, made floating when it is not.
const FLOAT_BINARY: &[&str] = &[
    "aten::div.Tensor",
    "aten::div.Scalar",
    "aten::true_divide.Tensor",
    "aten::true_divide.Scalar",
    "aten::atan2",
    "aten::xlogy.Tensor",
    "aten::copysign.Tensor",
];

const COMPARISONS: &[&str] = &[
    "aten::eq.Tensor",
    "aten::eq.Scalar",
    "aten::ne.Tensor",
    "aten::ne.Scalar",
    "aten::lt.Tensor",
    "aten::lt.Scalar",
    "aten::le.Tensor",
    "aten::le.Scalar",
    "aten::gt.Tensor",
    "aten::gt.Scalar",
    "aten::ge.Tensor",
    "aten::ge.Scalar",
];

const BITWISE: &[&str] = &[
    "aten::__and__.Tensor",
    "aten::__and__.Scalar",
    "aten::__or__.Tensor",
    "aten::__or__.Scalar",
    "aten::__xor__.Tensor",
    "aten::__xor__.Scalar",
    "aten::bitwise_and.Tensor",
    "aten::bitwise_or.Tensor",
    "aten::bitwise_xor.Tensor",
    "aten::__lshift__.Tensor",
    "aten::__lshift__.Scalar",
    "aten::__rshift__.Tensor",
    "aten::__rshift__.Scalar",
    "aten::bitwise_left_shift.Tensor",
    "aten::bitwise_right_shift.Tensor",
];

/// Operators that keep their input's dtype and need at least this many dimensions (their
/// dimension arguments are passed as 1).
const SAME_DTYPE_MIN_RANK: &[(&str, usize)] = &[
    ("aten::transpose.int", 2),
    ("aten::squeeze.dim", 2),
    ("aten::flatten.using_ints", 2),
    ("aten::slice.Tensor", 2),
    ("aten::unfold", 2),
    ("aten::triu", 2),
    ("aten::tril", 2),
    ("aten::fliplr", 2),
    ("aten::pixel_shuffle", 3),
    ("aten::unsqueeze", 1),
    ("aten::flipud", 1),
    ("aten::squeeze", 0),
];

/// The dtype of the result of operator `full_name` on `operands`, or `None` when the
/// operator has no rule here or would fail on the meta arguments PyTorch passes.
pub(super) fn result_dtype(full_name: &str, operands: &[Operand]) -> Option<Dtype> {
    let tensor = |index: usize| match operands.get(index) {
        Some(Operand::Tensor { dtype, rank }) => Some((*dtype, *rank)),
        _ => None,
    };
    let name = full_name;
    let floating = |dtype: Dtype| {
        if dtype.is_floating() || dtype.is_complex() {
            dtype
        } else {
            Dtype::Float
        }
    };
    if FLOAT_FUNCTIONS.contains(&name) {
        return tensor(0).map(|(dtype, _)| floating(dtype));
    }
    if SAME_DTYPE_NOT_BOOL.contains(&name) {
        let (dtype, _) = tensor(0)?;
        return (dtype != Dtype::Bool).then_some(dtype);
    }
    if SAME_DTYPE.contains(&name) {
        return tensor(0).map(|(dtype, _)| dtype);
    }
    if FLOAT_ONLY.contains(&name) {
        let (dtype, _) = tensor(0)?;
        return dtype.is_floating().then_some(dtype);
    }
    if PREDICATES.contains(&name) {
        tensor(0)?;
        return Some(Dtype::Bool);
    }
    if let Some(&(_, rank)) = SAME_DTYPE_MIN_RANK.iter().find(|(n, _)| *n == name) {
        let (dtype, actual) = tensor(0)?;
        return (actual >= rank).then_some(dtype);
    }
    if PROMOTING_BINARY.contains(&name) {
        let promoted = result_type(operands.get(..2)?);
        // Subtraction refuses two bools (add/sub take an `alpha`, passed as 1).
        let subtracts = name.starts_with("aten::sub") || name.starts_with("aten::rsub");
        if subtracts && promoted == Dtype::Bool {
            return None;
        }
        return Some(promoted);
    }
    if FLOAT_BINARY.contains(&name) {
        let promoted = result_type(operands.get(..2)?);
        return Some(floating(promoted));
    }
    if COMPARISONS.contains(&name) {
        operands.get(..2)?;
        return Some(Dtype::Bool);
    }
    if BITWISE.contains(&name) {
        let promoted = result_type(operands.get(..2)?);
        return (promoted.is_integral() || promoted == Dtype::Bool).then_some(promoted);
    }
    match name {
        "aten::where.self" | "aten::where.ScalarOther" | "aten::where.ScalarSelf" => {
            Some(result_type(operands.get(1..3)?))
        }
        "aten::type_as" => tensor(1).map(|(dtype, _)| dtype),
        "aten::index_select" => {
            let (dtype, rank) = tensor(0)?;
            let (index_dtype, index_rank) = tensor(2)?;
            (rank >= 2 && matches!(index_dtype, Dtype::Long | Dtype::Int) && index_rank <= 1)
                .then_some(dtype)
        }
        // The meta kernels of the matrix products keep the first operand's dtype.
        "aten::mm" | "aten::bmm" | "aten::matmul" | "aten::linear" | "aten::addmm" | "aten::mv" => {
            let (dtype, rank) = tensor(0)?;
            let (_, other_rank) = tensor(1)?;
            let ranks_fit = match name {
                "aten::mm" => rank == 2 && other_rank == 2,
                "aten::bmm" => rank == 3 && other_rank == 3,
                "aten::mv" => rank == 2 && other_rank == 1,
                "aten::addmm" => tensor(2).is_some_and(|(_, r)| r == 2) && other_rank == 2,
                _ => rank >= 1 && other_rank >= 1,
            };
            ranks_fit.then_some(dtype)
        }
        // Three batched matrices of one dtype.
        "aten::baddbmm" => {
            let (dtype, rank) = tensor(0)?;
            let same = (1..3).all(|i| tensor(i).is_some_and(|(d, r)| d == dtype && r == 3));
            (rank == 3 && same).then_some(dtype)
        }
        "aten::dot" => {
            let (dtype, rank) = tensor(0)?;
            let (other, other_rank) = tensor(1)?;
            (rank == 1 && other_rank == 1 && dtype == other).then_some(dtype)
        }
        "aten::outer" | "aten::ger" => {
            let (dtype, rank) = tensor(0)?;
            let (other, other_rank) = tensor(1)?;
            (rank == 1 && other_rank == 1).then_some(promote_types(dtype, other))
        }
        "aten::diag" => {
            let (dtype, rank) = tensor(0)?;
            (rank == 1 || rank == 2).then_some(dtype)
        }
        // Integers and bools sum into a Long.
        "aten::trace" => {
            let (dtype, rank) = tensor(0)?;
            let summed = if dtype.is_integral() || dtype == Dtype::Bool {
                Dtype::Long
            } else {
                dtype
            };
            (rank == 2).then_some(summed)
        }
        // `where(|x| <= lambd, 0, x)`: an int scalar against the input.
        "aten::hardshrink" => {
            let (dtype, rank) = tensor(0)?;
            Some(result_type(&[
                Operand::Tensor { dtype, rank },
                Operand::Int,
            ]))
        }
        // `pow(x, 2)`.
        "aten::square" => {
            let (dtype, rank) = tensor(0)?;
            Some(result_type(&[
                Operand::Tensor { dtype, rank },
                Operand::Int,
            ]))
        }
        "aten::float_power.Tensor_Tensor"
        | "aten::float_power.Tensor_Scalar"
        | "aten::float_power.Scalar" => {
            let complex = operands
                .iter()
                .any(|o| matches!(o, Operand::Tensor { dtype, .. } if dtype.is_complex()));
            Some(if complex {
                Dtype::ComplexDouble
            } else {
                Dtype::Double
            })
        }
        // The bounds take part in promotion.
        "aten::clamp" | "aten::clamp_min" | "aten::clamp_max" => {
            tensor(0)?;
            Some(result_type(operands))
        }
        "aten::logaddexp" => {
            let promoted = result_type(operands.get(..2)?);
            (promoted != Dtype::Bool).then_some(promoted)
        }
        "aten::addcmul" => Some(result_type(operands.get(..3)?)),
        "aten::addcdiv" => {
            let promoted = result_type(operands.get(..3)?);
            (promoted.is_floating() || promoted.is_complex()).then_some(promoted)
        }
        "aten::lerp.Scalar" | "aten::lerp.Tensor" => {
            let (dtype, _) = tensor(0)?;
            let (end, _) = tensor(1)?;
            (dtype == end).then_some(dtype)
        }
        "aten::norm.Scalar" | "aten::dist" => {
            let (dtype, _) = tensor(0)?;
            (dtype.is_floating() || dtype.is_complex()).then_some(dtype)
        }
        // The mask must be Bool; a tensor fill value must have no dimensions.
        "aten::masked_fill.Scalar" | "aten::masked_fill.Tensor" => {
            let (dtype, _) = tensor(0)?;
            let (mask, _) = tensor(1)?;
            let value_fits = match operands.get(2)? {
                Operand::Tensor { rank, .. } => *rank == 0,
                _ => true,
            };
            (mask == Dtype::Bool && value_fits).then_some(dtype)
        }
        _ => None,
    }
}
