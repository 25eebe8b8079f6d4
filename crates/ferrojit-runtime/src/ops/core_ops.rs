//! Core tensor operators registered by their native_functions.yaml schemas: pointwise unary,
//! binary and ternary math, reductions and view operators, with their in-place `_` and `.out`
//! variants, as typed kernels (`ops::binding`): plain functions, or closures over the tensor
//! library's operator enums. `out=` forms are made from the functional kernels where PyTorch
//! computes them by writing the functional result into `out`.

use std::ops::Deref;
use std::sync::Arc;

use ferrojit_tensor::ops::binary::BinaryOp;
use ferrojit_tensor::ops::pointwise::UnaryOp;
use ferrojit_tensor::ops::views::MemoryFormat;
use ferrojit_tensor::{DType, Scalar, Tensor, TensorError};

use super::binding::{
    in_place_from_functional, out_from_functional, typed, typed_in_place, DimList, FromArgument,
    SliceKernel, TypedKernel, WrappedNumber,
};
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;

/// The rows of a family built in code (a loop over an operator enum, closures over it).
type Declarations = Vec<OperatorDeclaration>;

type Input = Arc<Tensor>;

/// A `float` argument that must be a Python float, as `IValue::to_double` reads it (the
/// binding's `f64` also takes an int or a bool, as a `Scalar`). Local until the binding has it.
pub(super) struct FloatArgument(pub f64);

impl FromArgument for FloatArgument {
    fn from_argument(value: &IValue) -> Result<Self> {
        value.to_double().map(FloatArgument)
    }
}

/// The `self` tensor of a unary operator's argument slice (see [`SliceKernel`]).
fn self_tensor(arguments: &[IValue]) -> Result<Input> {
    arguments
        .first()
        .ok_or_else(|| RuntimeError::InvalidGraph("operand stack underflow in an operator".into()))?
        .to_tensor()
}

// ----- unary ---------------------------------------------------------------------------

/// Declares `name`, and where `variants` say so `name_` and `name.out`, for a unary operator
/// whose parameters come from `params` (the arguments after `self`, as one comma-separated
/// schema fragment). `build` is a typed kernel over the functional arguments that makes the
/// tensor library's `UnaryOp`; the functional form applies it, the in-place form applies it
/// where `self` lies, and the `out=` form is made from the functional form.
fn register_unary<Parameters>(
    declarations: &mut Declarations,
    name: &str,
    params: &str,
    variants: (bool, bool),
    build: impl TypedKernel<Parameters, Output = UnaryOp> + Clone,
) {
    let (sep, kw) = if params.is_empty() {
        ("", "")
    } else {
        (", ", params)
    };
    let arity = build.arity();
    let build_for_in_place = build.clone();
    let functional = SliceKernel {
        arity,
        body: move |arguments: &[IValue]| -> Result<Tensor> {
            let op = build.call_with(arguments)?;
            Ok(self_tensor(arguments)?.unary(op)?)
        },
    };
    declarations.push(typed(
        &format!("aten::{name}(Tensor self{sep}{kw}) -> Tensor"),
        functional.clone(),
    ));
    if variants.0 {
        let in_place = SliceKernel {
            arity,
            body: move |arguments: &[IValue]| -> Result<Tensor> {
                let op = build_for_in_place.call_with(arguments)?;
                Ok(self_tensor(arguments)?.unary_(op)?)
            },
        };
        declarations.push(typed_in_place(
            &format!("aten::{name}_(Tensor(a!) self{sep}{kw}) -> Tensor(a!)"),
            in_place,
        ));
    }
    if variants.1 {
        // Keyword-only parameters stay keyword-only before `out`.
        let out_schema = if kw.starts_with('*') {
            format!("aten::{name}.out(Tensor self, {kw}, Tensor(a!) out) -> Tensor(a!)")
        } else if kw.is_empty() {
            format!("aten::{name}.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)")
        } else {
            format!("aten::{name}.out(Tensor self, {kw}, *, Tensor(a!) out) -> Tensor(a!)")
        };
        declarations.push(out_from_functional(&out_schema, functional));
    }
}

fn register_unary_ops(r: &mut Declarations) {
    use UnaryOp::*;
    let plain: &[(&str, UnaryOp, (bool, bool))] = &[
        ("abs", Abs, (true, true)),
        ("neg", Neg, (true, true)),
        ("sign", Sign, (true, true)),
        ("reciprocal", Reciprocal, (true, true)),
        ("exp", Exp, (true, true)),
        ("exp2", Exp2, (true, true)),
        ("expm1", Expm1, (true, true)),
        ("log", Log, (true, true)),
        ("log2", Log2, (true, true)),
        ("log10", Log10, (true, true)),
        ("log1p", Log1p, (true, true)),
        ("sqrt", Sqrt, (true, true)),
        ("rsqrt", Rsqrt, (true, true)),
        ("sin", Sin, (true, true)),
        ("cos", Cos, (true, true)),
        ("tan", Tan, (true, true)),
        ("asin", Asin, (true, true)),
        ("acos", Acos, (true, true)),
        ("atan", Atan, (true, true)),
        ("asinh", Asinh, (true, true)),
        ("acosh", Acosh, (true, true)),
        ("atanh", Atanh, (true, true)),
        ("sinh", Sinh, (true, true)),
        ("cosh", Cosh, (true, true)),
        ("tanh", Tanh, (true, true)),
        ("sigmoid", Sigmoid, (true, true)),
        ("erf", Erf, (true, true)),
        ("erfc", Erfc, (true, true)),
        ("erfinv", Erfinv, (true, true)),
        ("floor", Floor, (true, true)),
        ("ceil", Ceil, (true, true)),
        ("round", Round(0), (true, true)),
        ("trunc", Trunc, (true, true)),
        ("frac", Frac, (true, true)),
        ("relu", Relu, (true, true)),
        ("relu6", Hardtanh(0.0, 6.0), (true, false)),
        ("selu", Selu, (true, false)),
        ("silu", Silu, (true, true)),
        ("mish", Mish, (true, true)),
        ("hardswish", Hardswish, (true, true)),
        ("hardsigmoid", Hardsigmoid, (true, true)),
        ("logical_not", LogicalNot, (true, true)),
        ("bitwise_not", BitwiseNot, (true, true)),
        ("isnan", IsNan, (false, false)),
        ("isinf", IsInf, (false, false)),
        ("isfinite", IsFinite, (false, false)),
        ("isposinf", IsPosInf, (false, true)),
        ("isneginf", IsNegInf, (false, true)),
    ];
    for &(name, op, variants) in plain {
        register_unary(r, name, "", variants, move |_: Input| Ok(op));
    }
    // `isnan.out` and `isinf.out` are generated by torchgen (`autogen:`) from the functional
    // kernels, with the generated wrapper's exact-dtype check on `out`.
    for (name, op) in [("isnan", IsNan), ("isinf", IsInf)] {
        r.push(autogenerated_out(
            &format!("aten::{name}.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)"),
            move |input: Input| Ok(input.unary(op)?),
        ));
    }
    register_unary(
        r,
        "logit",
        "float? eps=None",
        (true, true),
        |_: Input, eps: Option<f64>| Ok(Logit(eps)),
    );
    // `round.decimals` names its overloads differently (`round.decimals_out`).
    let round = |input: Input, decimals: i64| Ok(input.unary(Round(decimals))?);
    r.extend([
        typed(
            "aten::round.decimals(Tensor self, *, int decimals) -> Tensor",
            round,
        ),
        typed_in_place(
            "aten::round_.decimals(Tensor(a!) self, *, int decimals) -> Tensor(a!)",
            move |input: Input, decimals: i64| Ok(input.unary_(Round(decimals))?),
        ),
        out_from_functional(
            "aten::round.decimals_out(Tensor self, *, int decimals, Tensor(a!) out) -> Tensor(a!)",
            round,
        ),
    ]);
    register_unary(
        r,
        "leaky_relu",
        "Scalar negative_slope=0.01",
        (true, true),
        |_: Input, slope: f64| Ok(LeakyRelu(slope)),
    );
    register_unary(
        r,
        "elu",
        "Scalar alpha=1, Scalar scale=1, Scalar input_scale=1",
        (true, true),
        |_: Input, alpha: f64, scale: f64, input_scale: f64| Ok(Elu(alpha, scale, input_scale)),
    );
    register_unary(
        r,
        "celu",
        "Scalar alpha=1.0",
        (true, true),
        |_: Input, alpha: f64| Ok(Celu(alpha)),
    );
    register_unary(
        r,
        "gelu",
        "*, str approximate='none'",
        (true, true),
        |_: Input, approximate: String| match approximate.as_str() {
            "none" => Ok(Gelu(false)),
            "tanh" => Ok(Gelu(true)),
            other => Err(RuntimeError::Other(format!(
                "approximate argument must be either none or tanh. Got {other}"
            ))),
        },
    );
    register_unary(
        r,
        "hardtanh",
        "Scalar min_val=-1, Scalar max_val=1",
        (true, true),
        |_: Input, min: f64, max: f64| Ok(Hardtanh(min, max)),
    );
    register_unary(
        r,
        "softplus",
        "Scalar beta=1, Scalar threshold=20",
        (false, true),
        |_: Input, beta: f64, threshold: f64| Ok(Softplus(beta, threshold)),
    );
    register_unary(
        r,
        "nan_to_num",
        "float? nan=None, float? posinf=None, float? neginf=None",
        (true, true),
        |_: Input, nan: Option<f64>, posinf: Option<f64>, neginf: Option<f64>| {
            Ok(NanToNum(nan, posinf, neginf))
        },
    );
}

/// An `out=` form torchgen generates from a functional kernel (`autogen:` in
/// native_functions.yaml): compute, then copy into `out`, resized, which must already have the
/// result's dtype (the generated `copy_arg` refuses any other instead of casting). The last
/// argument is `out`.
fn autogenerated_out(
    schema: &str,
    functional: impl Fn(Input) -> Result<Tensor> + Send + Sync + 'static,
) -> OperatorDeclaration {
    typed(schema, move |input: Input, out: Input| {
        let result = functional(input)?;
        if result.dtype() != out.dtype() {
            return Err(TensorError::InvalidArgument(format!(
                "Expected out tensor to have dtype {}, but got {} instead",
                cpp_type_name(result.dtype()),
                cpp_type_name(out.dtype())
            ))
            .into());
        }
        Ok(result.write_into_out(&out)?)
    })
}

/// The C++ type name PyTorch prints for a dtype (`caffe2::TypeMeta::name`): in `copy_arg`'s
/// message and in `_assert_tensor_metadata`'s.
pub(super) fn cpp_type_name(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool => "bool",
        DType::UInt8 => "unsigned char",
        DType::Int8 => "signed char",
        DType::Int16 => "short int",
        DType::Int32 => "int",
        DType::Int64 => "long int",
        DType::Float16 => "c10::Half",
        DType::BFloat16 => "c10::BFloat16",
        DType::Float32 => "float",
        DType::Float64 => "double",
        DType::ComplexFloat => "c10::complex<float>",
        DType::ComplexDouble => "c10::complex<double>",
    }
}

// ----- binary --------------------------------------------------------------------------

/// Registers the overload family of a broadcasting binary operator. `other` names the second
/// argument; each flag enables one overload: (Tensor, Scalar, in-place, out, Scalar_Tensor).
#[allow(clippy::too_many_arguments)]
fn register_binary(
    r: &mut Declarations,
    name: &str,
    op: BinaryOp,
    other: &str,
    tensor_overload: &str,
    scalar_overload: Option<&str>,
    inplace: bool,
    out_overloads: (Option<&str>, Option<&str>),
    scalar_tensor: Option<&str>,
) {
    let dot = |o: &str| {
        if o.is_empty() {
            String::new()
        } else {
            format!(".{o}")
        }
    };
    r.push(typed(
        &format!(
            "aten::{name}{}(Tensor self, Tensor {other}) -> Tensor",
            dot(tensor_overload)
        ),
        binary::<Input>(op),
    ));
    if let Some(so) = scalar_overload {
        r.push(typed(
            &format!("aten::{name}.{so}(Tensor self, Scalar {other}) -> Tensor"),
            binary::<WrappedNumber>(op),
        ));
    }
    if inplace {
        let tensor_ip = if tensor_overload.is_empty() {
            ".Tensor".to_string()
        } else {
            dot(tensor_overload)
        };
        r.push(typed_in_place(
            &format!("aten::{name}_{tensor_ip}(Tensor(a!) self, Tensor {other}) -> Tensor(a!)"),
            binary_in_place::<Input>(op),
        ));
        if let Some(so) = scalar_overload {
            r.push(typed_in_place(
                &format!("aten::{name}_.{so}(Tensor(a!) self, Scalar {other}) -> Tensor(a!)"),
                binary_in_place::<WrappedNumber>(op),
            ));
        }
    }
    if let Some(to) = out_overloads.0 {
        r.push(typed(
            &format!(
                "aten::{name}.{to}(Tensor self, Tensor {other}, *, Tensor(a!) out) -> Tensor(a!)"
            ),
            binary_out::<Input>(op),
        ));
    }
    if let Some(so) = out_overloads.1 {
        r.push(typed(
            &format!(
                "aten::{name}.{so}(Tensor self, Scalar {other}, *, Tensor(a!) out) -> Tensor(a!)"
            ),
            binary_out::<WrappedNumber>(op),
        ));
    }
    if let Some(st) = scalar_tensor {
        r.push(typed(
            &format!("aten::{name}.{st}(Scalar self, Tensor {other}) -> Tensor"),
            move |number: WrappedNumber, other: Input| Ok(number.binary(&other, op)?),
        ));
    }
}

/// A broadcasting binary operator of the tensor library.
fn binary<Other: Deref<Target = Tensor>>(
    op: BinaryOp,
) -> impl Fn(Input, Other) -> Result<Tensor> + Clone + Send + Sync + 'static {
    move |input: Input, other: Other| Ok(input.binary(&other, op)?)
}

/// Its in-place form: the result is written into `self`.
fn binary_in_place<Other: Deref<Target = Tensor>>(
    op: BinaryOp,
) -> impl Fn(Input, Other) -> Result<Tensor> + Clone + Send + Sync + 'static {
    move |input: Input, other: Other| Ok(input.binary_(&other, op)?)
}

/// Its `out=` form (comparison results convert to `out`'s dtype, see `Tensor::binary_out`).
fn binary_out<Other: Deref<Target = Tensor>>(
    op: BinaryOp,
) -> impl Fn(Input, Other, Input) -> Result<Tensor> + Clone + Send + Sync + 'static {
    move |input: Input, other: Other, out: Input| Ok(input.binary_out(&other, op, &out)?)
}

fn register_binary_ops(r: &mut Declarations) {
    use BinaryOp::*;
    // Registered elsewhere: the arithmetic families (arithmetic_ops) and the comparisons
    // (comparison_ops).
    register_binary(
        r,
        "fmod",
        Fmod,
        "other",
        "Tensor",
        Some("Scalar"),
        true,
        (Some("Tensor_out"), Some("Scalar_out")),
        None,
    );
    register_binary(
        r,
        "atan2",
        Atan2,
        "other",
        "",
        None,
        false,
        (Some("out"), None),
        None,
    );
    r.push(typed_in_place(
        "aten::atan2_(Tensor(a!) self, Tensor other) -> Tensor(a!)",
        binary_in_place::<Input>(Atan2),
    ));
    register_binary(
        r,
        "hypot",
        Hypot,
        "other",
        "",
        None,
        false,
        (Some("out"), None),
        None,
    );
    r.push(typed_in_place(
        "aten::hypot_(Tensor(a!) self, Tensor other) -> Tensor(a!)",
        binary_in_place::<Input>(Hypot),
    ));
    register_binary(
        r,
        "fmax",
        Fmax,
        "other",
        "",
        None,
        false,
        (Some("out"), None),
        None,
    );
    register_binary(
        r,
        "fmin",
        Fmin,
        "other",
        "",
        None,
        false,
        (Some("out"), None),
        None,
    );
    for (name, op) in [
        ("bitwise_and", BitwiseAnd),
        ("bitwise_or", BitwiseOr),
        ("bitwise_xor", BitwiseXor),
    ] {
        register_binary(
            r,
            name,
            op,
            "other",
            "Tensor",
            Some("Scalar"),
            true,
            (Some("Tensor_out"), Some("Scalar_out")),
            Some("Scalar_Tensor"),
        );
    }
    for (name, op) in [
        ("bitwise_left_shift", BitwiseLeftShift),
        ("bitwise_right_shift", BitwiseRightShift),
    ] {
        register_binary(
            r,
            name,
            op,
            "other",
            "Tensor",
            Some("Tensor_Scalar"),
            true,
            (Some("Tensor_out"), Some("Tensor_Scalar_out")),
            Some("Scalar_Tensor"),
        );
    }
    for (name, op) in [
        ("__and__", BitwiseAnd),
        ("__or__", BitwiseOr),
        ("__xor__", BitwiseXor),
        ("__lshift__", BitwiseLeftShift),
        ("__rshift__", BitwiseRightShift),
    ] {
        register_binary(
            r,
            name,
            op,
            "other",
            "Tensor",
            Some("Scalar"),
            false,
            (None, None),
            None,
        );
        let iname = format!("__i{}", &name[2..]);
        register_binary_inplace_only(r, &iname, op);
    }
    for (name, op) in [
        ("logical_and", LogicalAnd),
        ("logical_or", LogicalOr),
        ("logical_xor", LogicalXor),
    ] {
        register_binary(
            r,
            name,
            op,
            "other",
            "",
            None,
            false,
            (Some("out"), None),
            None,
        );
        r.push(typed_in_place(
            &format!("aten::{name}_(Tensor(a!) self, Tensor other) -> Tensor(a!)"),
            binary_in_place::<Input>(op),
        ));
    }
    // The arithmetic families (add, sub, mul, div, remainder, floor_divide, pow, maximum,
    // minimum) live in arithmetic_ops, the comparisons (eq, ne, lt, le, gt, ge) in
    // comparison_ops.
    for (name, op) in [("max", Maximum), ("min", Minimum)] {
        r.push(typed(
            &format!("aten::{name}.other(Tensor self, Tensor other) -> Tensor"),
            binary::<Input>(op),
        ));
    }
}

fn register_binary_inplace_only(r: &mut Declarations, name: &str, op: BinaryOp) {
    r.extend([
        typed_in_place(
            &format!("aten::{name}.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)"),
            binary_in_place::<Input>(op),
        ),
        typed_in_place(
            &format!("aten::{name}.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)"),
            binary_in_place::<WrappedNumber>(op),
        ),
    ]);
}

// ----- ternary -------------------------------------------------------------------------

fn register_ternary_ops(r: &mut Declarations) {
    r.extend([
        typed(
            "aten::where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
            where_::<Input, Input>,
        ),
        typed(
            "aten::where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor",
            where_::<WrappedNumber, Input>,
        ),
        typed(
            "aten::where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor",
            where_::<Input, WrappedNumber>,
        ),
        typed(
            "aten::where.Scalar(Tensor condition, Scalar self, Scalar other) -> Tensor",
            where_::<WrappedNumber, WrappedNumber>,
        ),
        out_from_functional("aten::where.self_out(Tensor condition, Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", where_::<Input, Input>),
        typed(
            "aten::masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor",
            |input: Input, mask: Input, value: Scalar| Ok(input.masked_fill(&mask, &value)?),
        ),
        typed(
            "aten::masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor",
            |input: Input, mask: Input, value: Input| {
                Ok(input.masked_fill_tensor(&mask, &value)?)
            },
        ),
        // The tensor library fills the masked elements of `self` where they lie.
        typed_in_place(
            "aten::masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)",
            |input: Input, mask: Input, value: Scalar| Ok(input.masked_fill_(&mask, &value)?),
        ),
        typed_in_place(
            "aten::masked_fill_.Tensor(Tensor(a!) self, Tensor mask, Tensor value) -> Tensor(a!)",
            |input: Input, mask: Input, value: Input| {
                Ok(input.masked_fill_tensor_(&mask, &value)?)
            },
        ),
    ]);
    // The clamp, lerp and addcmul families compute in place by writing their functional
    // result into `self` (ATen's structured kernels do the same), so their in-place and
    // out= forms are made from the functional kernels.
    r.extend([
        typed(
            "aten::clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
            clamp,
        ),
        typed(
            "aten::clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor",
            clamp_by_tensors,
        ),
        in_place_from_functional(
            "aten::clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)",
            clamp,
        ),
        in_place_from_functional(
            "aten::clamp_.Tensor(Tensor(a!) self, Tensor? min=None, Tensor? max=None) -> Tensor(a!)",
            clamp_by_tensors,
        ),
    ]);
    r.push(out_from_functional("aten::clamp.out(Tensor self, Scalar? min=None, Scalar? max=None, *, Tensor(a!) out) -> Tensor(a!)", clamp));
    r.push(out_from_functional("aten::clamp.Tensor_out(Tensor self, Tensor? min=None, Tensor? max=None, *, Tensor(a!) out) -> Tensor(a!)", clamp_by_tensors));
    for (name, is_min) in [("clamp_min", true), ("clamp_max", false)] {
        let bound = if is_min { "min" } else { "max" };
        let by_scalar = move |input: Input, bound: Scalar| -> Result<Tensor> {
            Ok(if is_min {
                input.clamp(Some(&bound), None)?
            } else {
                input.clamp(None, Some(&bound))?
            })
        };
        let by_tensor = move |input: Input, bound: Input| -> Result<Tensor> {
            Ok(if is_min {
                input.clamp_tensor(Some(&bound), None)?
            } else {
                input.clamp_tensor(None, Some(&bound))?
            })
        };
        r.extend([
            typed(
                &format!("aten::{name}(Tensor self, Scalar {bound}) -> Tensor"),
                by_scalar,
            ),
            typed(
                &format!("aten::{name}.Tensor(Tensor self, Tensor {bound}) -> Tensor"),
                by_tensor,
            ),
            in_place_from_functional(
                &format!("aten::{name}_(Tensor(a!) self, Scalar {bound}) -> Tensor(a!)"),
                by_scalar,
            ),
            in_place_from_functional(
                &format!("aten::{name}_.Tensor(Tensor(a!) self, Tensor {bound}) -> Tensor(a!)"),
                by_tensor,
            ),
            out_from_functional(
                &format!(
                    "aten::{name}.out(Tensor self, Scalar {bound}, *, Tensor(a!) out) -> Tensor(a!)"
                ),
                by_scalar,
            ),
        ]);
    }
    r.extend([
        typed(
            "aten::lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor",
            lerp::<WrappedNumber>,
        ),
        typed(
            "aten::lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor",
            lerp::<Input>,
        ),
        in_place_from_functional(
            "aten::lerp_.Scalar(Tensor(a!) self, Tensor end, Scalar weight) -> Tensor(a!)",
            lerp::<WrappedNumber>,
        ),
        in_place_from_functional(
            "aten::lerp_.Tensor(Tensor(a!) self, Tensor end, Tensor weight) -> Tensor(a!)",
            lerp::<Input>,
        ),
        out_from_functional("aten::lerp.Scalar_out(Tensor self, Tensor end, Scalar weight, *, Tensor(a!) out) -> Tensor(a!)", lerp::<WrappedNumber>),
        out_from_functional("aten::lerp.Tensor_out(Tensor self, Tensor end, Tensor weight, *, Tensor(a!) out) -> Tensor(a!)", lerp::<Input>),
    ]);
    for (name, divide) in [("addcmul", false), ("addcdiv", true)] {
        let combine = move |input: Input, tensor1: Input, tensor2: Input, value: Scalar| {
            Ok(if divide {
                input.addcdiv(&tensor1, &tensor2, &value)?
            } else {
                input.addcmul(&tensor1, &tensor2, &value)?
            })
        };
        r.extend([
            typed(&format!("aten::{name}(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor"), combine),
            in_place_from_functional(&format!("aten::{name}_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)"), combine),
            out_from_functional(&format!("aten::{name}.out(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1, Tensor(a!) out) -> Tensor(a!)"), combine),
        ]);
    }
}

fn clamp(input: Input, min: Option<Scalar>, max: Option<Scalar>) -> Result<Tensor> {
    Ok(input.clamp(min.as_ref(), max.as_ref())?)
}

fn clamp_by_tensors(input: Input, min: Option<Input>, max: Option<Input>) -> Result<Tensor> {
    Ok(input.clamp_tensor(min.as_deref(), max.as_deref())?)
}

/// `where(condition, self, other)`, each of `self` and `other` a tensor or a Python number.
fn where_<Value: Deref<Target = Tensor>, Other: Deref<Target = Tensor>>(
    condition: Input,
    input: Value,
    other: Other,
) -> Result<Tensor> {
    Ok(Tensor::where_(&condition, &input, &other)?)
}

fn lerp<Weight: Deref<Target = Tensor>>(
    input: Input,
    end: Input,
    weight: Weight,
) -> Result<Tensor> {
    Ok(input.lerp(&end, &weight)?)
}

// ----- reductions ----------------------------------------------------------------------

fn sum(input: Input, dtype: Option<DType>) -> Result<Tensor> {
    Ok(input.sum(dtype)?)
}

fn sum_dims(input: Input, dims: DimList, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    Ok(input.sum_dim(&dims.0, keepdim, dtype)?)
}

fn mean(input: Input, dtype: Option<DType>) -> Result<Tensor> {
    Ok(input.mean(dtype)?)
}

fn mean_dims(input: Input, dims: DimList, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    Ok(input.mean_dim(&dims.0, keepdim, dtype)?)
}

fn prod(input: Input, dtype: Option<DType>) -> Result<Tensor> {
    Ok(input.prod_dim(&[], false, dtype)?)
}

fn prod_dim(input: Input, dim: i64, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    Ok(input.prod_dim(&[dim], keepdim, dtype)?)
}

/// `std`/`var` over `dims` with Bessel's `correction` (`take_sqrt` for `std`).
fn var_std(
    take_sqrt: bool,
) -> impl Fn(Input, DimList, f64, bool) -> Result<Tensor> + Clone + Send + Sync + 'static {
    move |input: Input, dims: DimList, correction: f64, keepdim: bool| {
        Ok(input.var_std(&dims.0, correction, keepdim, take_sqrt)?)
    }
}

/// The correction an `unbiased` flag stands for.
fn correction_of_unbiased(unbiased: bool) -> f64 {
    if unbiased {
        1.0
    } else {
        0.0
    }
}

fn register_reductions(r: &mut Declarations) {
    // The out= forms write the functional result into `out`.
    r.extend([
        typed("aten::sum(Tensor self, *, ScalarType? dtype=None) -> Tensor", sum),
        typed("aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", sum_dims),
        out_from_functional("aten::sum.IntList_out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)", sum_dims),
        typed("aten::mean(Tensor self, *, ScalarType? dtype=None) -> Tensor", mean),
        typed("aten::mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", mean_dims),
        out_from_functional("aten::mean.out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)", mean_dims),
        typed("aten::prod(Tensor self, *, ScalarType? dtype=None) -> Tensor", prod),
        typed("aten::prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", prod_dim),
        out_from_functional("aten::prod.int_out(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)", prod_dim),
    ]);
    for (name, is_max) in [("max", true), ("min", false)] {
        r.push(typed(
            &format!("aten::{name}.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"),
            move |input: Input, dim: i64, keepdim: bool| Ok(input.max_min_dim(dim, keepdim, is_max)?),
        ));
        let a_name = if is_max { "amax" } else { "amin" };
        let extreme = move |input: Input, dims: DimList, keepdim: bool| {
            Ok(input.amax(&dims.0, keepdim, is_max)?)
        };
        r.extend([
            typed(
                &format!("aten::{a_name}(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor"),
                extreme,
            ),
            out_from_functional(&format!("aten::{a_name}.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)"), extreme),
        ]);
        let arg_name = if is_max { "argmax" } else { "argmin" };
        r.push(typed(
            &format!("aten::{arg_name}(Tensor self, int? dim=None, bool keepdim=False) -> Tensor"),
            move |input: Input, dim: Option<i64>, keepdim: bool| {
                Ok(input.argmax(dim, keepdim, is_max)?)
            },
        ));
    }
    for (name, take_sqrt) in [("std", true), ("var", false)] {
        let reduce = var_std(take_sqrt);
        let over_all = reduce.clone();
        let by_unbiased = reduce.clone();
        r.extend([
            typed(
                &format!("aten::{name}(Tensor self, bool unbiased=True) -> Tensor"),
                move |input: Input, unbiased: bool| {
                    over_all(input, DimList(Vec::new()), correction_of_unbiased(unbiased), false)
                },
            ),
            typed(
                &format!("aten::{name}.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor"),
                move |input: Input, dims: DimList, unbiased: bool, keepdim: bool| {
                    by_unbiased(input, dims, correction_of_unbiased(unbiased), keepdim)
                },
            ),
            typed(
                &format!("aten::{name}.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor"),
                move |input: Input, dims: DimList, correction: Option<f64>, keepdim: bool| {
                    reduce(input, dims, correction.unwrap_or(1.0), keepdim)
                },
            ),
        ]);
    }
    r.extend([
        typed(
            "aten::linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
            |input: Input, ord: f64, dims: DimList, keepdim: bool, dtype: Option<DType>| {
                Ok(input.vector_norm(ord, &dims.0, keepdim, dtype)?)
            },
        ),
        typed(
            "aten::norm.Scalar(Tensor self, Scalar p=2) -> Tensor",
            |input: Input, p: f64| Ok(input.vector_norm(p, &[], false, None)?),
        ),
        typed(
            "aten::norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor",
            |input: Input, p: Option<f64>, dims: DimList, keepdim: bool| {
                Ok(input.vector_norm(p.unwrap_or(2.0), &dims.0, keepdim, None)?)
            },
        ),
        typed(
            "aten::logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor",
            |input: Input, dims: DimList, keepdim: bool| Ok(input.logsumexp(&dims.0, keepdim)?),
        ),
    ]);
    for (name, is_any) in [("any", true), ("all", false)] {
        r.extend([
            typed(
                &format!("aten::{name}(Tensor self) -> Tensor"),
                move |input: Input| Ok(input.any_all(&[], false, is_any)?),
            ),
            typed(
                &format!("aten::{name}.dim(Tensor self, int dim, bool keepdim=False) -> Tensor"),
                move |input: Input, dim: i64, keepdim: bool| {
                    Ok(input.any_all(&[dim], keepdim, is_any)?)
                },
            ),
            typed(
                &format!(
                    "aten::{name}.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor"
                ),
                move |input: Input, dims: DimList, keepdim: bool| {
                    Ok(input.any_all(&dims.0, keepdim, is_any)?)
                },
            ),
        ]);
    }
    // Both overloads take their dims as a list, a single int or None (every dim).
    let count_nonzero = |input: Input, dims: DimList| Ok(input.count_nonzero(&dims.0)?);
    r.extend([
        typed(
            "aten::count_nonzero.dim_IntList(Tensor self, int[] dim) -> Tensor",
            count_nonzero,
        ),
        typed(
            "aten::count_nonzero(Tensor self, int? dim=None) -> Tensor",
            count_nonzero,
        ),
    ]);
    for (name, is_product) in [("cumsum", false), ("cumprod", true)] {
        let cumulative = move |input: Input, dim: i64, dtype: Option<DType>| {
            Ok(input.cumulative(dim, dtype, is_product)?)
        };
        r.extend([
            typed(
                &format!("aten::{name}(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor"),
                cumulative,
            ),
            in_place_from_functional(
                &format!(
                    "aten::{name}_(Tensor(a!) self, int dim, *, ScalarType? dtype=None) -> Tensor(a!)"
                ),
                cumulative,
            ),
            out_from_functional(&format!("aten::{name}.out(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)"), cumulative),
        ]);
    }
    r.extend([
        typed(
            "aten::sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)",
            |input: Input, dim: i64, descending: bool| Ok(input.sort(dim, descending)?),
        ),
        typed(
            "aten::sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)",
            |input: Input, stable: Option<bool>, dim: i64, descending: bool| {
                Ok(input.sort_with(dim, descending, stable.unwrap_or(false))?)
            },
        ),
        typed(
            "aten::argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor",
            |input: Input, dim: i64, descending: bool| Ok(input.sort(dim, descending)?.1),
        ),
        typed(
            "aten::argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor",
            |input: Input, stable: bool, dim: i64, descending: bool| {
                Ok(input.sort_with(dim, descending, stable)?.1)
            },
        ),
        typed(
            "aten::topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)",
            |input: Input, k: i64, dim: i64, largest: bool, sorted: bool| {
                Ok(input.topk_with(k, dim, largest, sorted)?)
            },
        ),
        typed(
            "aten::kthvalue(Tensor self, int k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)",
            |input: Input, k: i64, dim: i64, keepdim: bool| Ok(input.kthvalue(k, dim, keepdim)?),
        ),
        typed("aten::median(Tensor self) -> Tensor", |input: Input| {
            Ok(input.median_all()?)
        }),
        typed(
            "aten::median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
            |input: Input, dim: i64, keepdim: bool| Ok(input.median_dim(dim, keepdim)?),
        ),
        typed(
            "aten::_unique2(Tensor self, bool sorted=True, bool return_inverse=False, bool return_counts=False) -> (Tensor, Tensor, Tensor)",
            unique2,
        ),
    ]);
}

/// `_unique2`: the inverse and counts are empty unless asked for (always sorted).
fn unique2(
    input: Input,
    _sorted: bool,
    return_inverse: bool,
    return_counts: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    let (values, inverse, counts) = input.unique()?;
    let inverse = if return_inverse {
        inverse
    } else {
        Tensor::zeros(&[0], DType::Int64)?
    };
    let counts = if return_counts {
        counts
    } else {
        Tensor::zeros(&[0], DType::Int64)?
    };
    Ok((values, inverse, counts))
}

// ----- views ---------------------------------------------------------------------------

fn as_strided(
    input: Input,
    size: Vec<i64>,
    stride: Vec<i64>,
    storage_offset: Option<i64>,
) -> Result<Tensor> {
    Ok(input.as_strided(&size, &stride, storage_offset)?)
}

fn split_with_sizes(input: Input, split_sizes: Vec<i64>, dim: i64) -> Result<Vec<Tensor>> {
    Ok(input.split_with_sizes(&split_sizes, dim)?)
}

fn register_views(r: &mut Declarations) {
    r.extend([
        typed("aten::as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)", as_strided),
        // A new geometry, not a write of `self`'s elements: the registry's alias write-back
        // makes the returned view `self` for every handle (so not `typed_in_place`, which
        // returns the argument unchanged).
        typed("aten::as_strided_(Tensor(a!) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a!)", as_strided),
        typed(
            "aten::unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)",
            |input: Input, dim: i64, sizes: Vec<i64>| Ok(input.unflatten(dim, &sizes)?),
        ),
        typed(
            "aten::unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]",
            |input: Input, dim: i64| Ok(input.unbind(dim)?),
        ),
        typed(
            "aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
            |input: Input, split_size: i64, dim: i64| Ok(input.split(split_size, dim)?),
        ),
        typed(
            "aten::split.sizes(Tensor(a -> *) self, SymInt[] split_size, int dim=0) -> Tensor(a)[]",
            split_with_sizes,
        ),
        typed("aten::split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]", split_with_sizes),
        typed(
            "aten::chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]",
            |input: Input, chunks: i64, dim: i64| Ok(input.chunk(chunks, dim)?),
        ),
        typed(
            "aten::diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)",
            |input: Input, offset: i64, dim1: i64, dim2: i64| {
                Ok(input.diagonal(offset, dim1, dim2)?)
            },
        ),
    ]);
}

/// `MemoryFormat?` argument (None = preserve).
pub(crate) fn memory_format(value: &IValue) -> Result<MemoryFormat> {
    match value {
        IValue::None => Ok(MemoryFormat::Preserve),
        other => Ok(MemoryFormat::from_index(other.to_int()?)?),
    }
}

/// Every operator of this file, in declaration order.
pub fn declarations() -> Vec<OperatorDeclaration> {
    let mut declarations = Declarations::new();
    register_unary_ops(&mut declarations);
    register_binary_ops(&mut declarations);
    register_ternary_ops(&mut declarations);
    register_reductions(&mut declarations);
    register_views(&mut declarations);
    declarations
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opdef::OverloadRank;
    use crate::registry::{OperatorRegistry, Stack};

    fn run(name: &str, arguments: Stack) -> Result<Stack> {
        let mut registry = OperatorRegistry::new();
        registry.register_family(OverloadRank::NativeFunction, declarations())?;
        let operator = registry.lookup(name).expect("registered");
        let mut stack = arguments;
        (operator.kernel)(&mut stack)?;
        Ok(stack)
    }

    /// `isnan.out` as PyTorch 2.15 runs it: an empty bool `out` is resized to the result
    /// (`[False, True]` for `[1.0, nan]`), and any other dtype is refused with the generated
    /// wrapper's message.
    #[test]
    fn the_generated_out_forms_require_a_bool_out() {
        let input = || IValue::from(Tensor::from_vec(vec![1.0f32, f32::NAN], &[2]).unwrap());
        let out = IValue::from(Tensor::zeros(&[0], DType::Bool).unwrap());
        let other_handle = out.clone();
        run("aten::isnan.out", vec![input(), out]).unwrap();
        let seen = other_handle.to_tensor().unwrap();
        assert_eq!(seen.sizes(), &[2]);
        assert_eq!(seen.dtype(), DType::Bool);
        assert_eq!(seen.to_i64_vec(), vec![0, 1]);
        let float_out = IValue::from(Tensor::zeros(&[2], DType::Float64).unwrap());
        let error = run("aten::isinf.out", vec![input(), float_out]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "Expected out tensor to have dtype bool, but got double instead"
        );
    }
}
