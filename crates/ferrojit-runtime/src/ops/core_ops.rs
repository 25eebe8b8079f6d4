//! Core tensor operators registered by their native_functions.yaml schemas: pointwise unary,
//! binary and ternary math, reductions and view operators, with their in-place `_` and `.out`
//! variants. Kernels are closures over the tensor library's operator enums.

use ferrojit_ir::Type;
use ferrojit_tensor::ops::binary::BinaryOp;
use ferrojit_tensor::ops::pointwise::UnaryOp;
use ferrojit_tensor::ops::views::MemoryFormat;
use ferrojit_tensor::{DType, Scalar, Tensor};

use super::binding::{
    in_place_from_functional, out_from_functional, typed, typed_in_place, DimList, SliceKernel,
    TypedKernel, WrappedNumber,
};
use super::{optional_dtype, scalar, wrapped};
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;

pub(super) type Args = [IValue];
pub(super) type Outputs = Vec<IValue>;

/// The rows of a family built in code (a loop over an operator enum, closures over it).
pub(super) type Declarations = Vec<OperatorDeclaration>;

/// Declares `f` under `schema`; the registry pops as many values as the schema has
/// arguments and hands them to `f` as a slice.
pub(super) fn reg(
    declarations: &mut Declarations,
    schema: &str,
    f: impl Fn(&Args) -> Result<Outputs> + Send + Sync + 'static,
) {
    declarations.push(OperatorDeclaration::arguments(schema.to_string(), f));
}

pub(super) fn arg(args: &Args, index: usize) -> Result<&IValue> {
    args.get(index)
        .ok_or_else(|| RuntimeError::InvalidGraph("operand stack underflow in an operator".into()))
}

pub(super) fn tensor(args: &Args, index: usize) -> Result<std::sync::Arc<Tensor>> {
    arg(args, index)?.to_tensor()
}

pub(super) fn one(t: Tensor) -> Result<Outputs> {
    Ok(vec![IValue::from(t)])
}

fn two((a, b): (Tensor, Tensor)) -> Result<Outputs> {
    Ok(vec![IValue::from(a), IValue::from(b)])
}

pub(super) fn tensor_list(items: Vec<Tensor>) -> Result<Outputs> {
    Ok(vec![IValue::list(
        Type::Tensor,
        items.into_iter().map(IValue::from).collect(),
    )])
}

fn optional_f64(value: &IValue) -> Result<Option<f64>> {
    match value {
        IValue::None => Ok(None),
        other => Ok(Some(other.to_scalar()?.to_f64())),
    }
}

/// `int[1]? dim` or `int[1] dim`: None or an empty list means every dimension.
fn dims(value: &IValue) -> Result<Vec<i64>> {
    match value {
        IValue::None => Ok(Vec::new()),
        IValue::Int(d) => Ok(vec![*d]),
        other => other.to_int_vec(),
    }
}

fn f64_arg(args: &Args, index: usize) -> Result<f64> {
    Ok(arg(args, index)?.to_scalar()?.to_f64())
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
            Ok(tensor(arguments, 0)?.unary(op)?)
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
                Ok(tensor(arguments, 0)?.unary_(op)?)
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

type Input = std::sync::Arc<Tensor>;

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
    register_unary(
        r,
        "logit",
        "float? eps=None",
        (true, true),
        |_: Input, eps: Option<f64>| Ok(Logit(eps)),
    );
    // `round.decimals` names its overloads differently (`round.decimals_out`).
    let round = |_: Input, decimals: i64| Ok(Round(decimals));
    let round_functional = SliceKernel {
        arity: 2,
        body: move |a: &[IValue]| -> Result<Tensor> {
            Ok(tensor(a, 0)?.unary(round.call_with(a)?)?)
        },
    };
    r.push(typed(
        "aten::round.decimals(Tensor self, *, int decimals) -> Tensor",
        round_functional.clone(),
    ));
    r.push(typed_in_place(
        "aten::round_.decimals(Tensor(a!) self, *, int decimals) -> Tensor(a!)",
        move |input: Input, decimals: i64| Ok(input.unary_(Round(decimals))?),
    ));
    r.push(out_from_functional(
        "aten::round.decimals_out(Tensor self, *, int decimals, Tensor(a!) out) -> Tensor(a!)",
        round_functional,
    ));
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
fn binary<Other: std::ops::Deref<Target = Tensor>>(
    op: BinaryOp,
) -> impl Fn(Input, Other) -> Result<Tensor> + Clone + Send + Sync + 'static {
    move |input: Input, other: Other| Ok(input.binary(&other, op)?)
}

/// Its in-place form: the result is written into `self`.
fn binary_in_place<Other: std::ops::Deref<Target = Tensor>>(
    op: BinaryOp,
) -> impl Fn(Input, Other) -> Result<Tensor> + Clone + Send + Sync + 'static {
    move |input: Input, other: Other| Ok(input.binary_(&other, op)?)
}

/// Its `out=` form (comparison results convert to `out`'s dtype, see `Tensor::binary_out`).
fn binary_out<Other: std::ops::Deref<Target = Tensor>>(
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
    reg(
        r,
        "aten::where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
        |a| {
            one(Tensor::where_(
                &*tensor(a, 0)?,
                &*tensor(a, 1)?,
                &*tensor(a, 2)?,
            )?)
        },
    );
    reg(
        r,
        "aten::where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor",
        |a| {
            one(Tensor::where_(
                &*tensor(a, 0)?,
                &wrapped(arg(a, 1)?)?,
                &*tensor(a, 2)?,
            )?)
        },
    );
    reg(
        r,
        "aten::where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor",
        |a| {
            one(Tensor::where_(
                &*tensor(a, 0)?,
                &*tensor(a, 1)?,
                &wrapped(arg(a, 2)?)?,
            )?)
        },
    );
    reg(
        r,
        "aten::where.Scalar(Tensor condition, Scalar self, Scalar other) -> Tensor",
        |a| {
            one(Tensor::where_(
                &*tensor(a, 0)?,
                &wrapped(arg(a, 1)?)?,
                &wrapped(arg(a, 2)?)?,
            )?)
        },
    );
    reg(r, "aten::where.self_out(Tensor condition, Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", |a| {
        one(Tensor::where_(&*tensor(a, 0)?, &*tensor(a, 1)?, &*tensor(a, 2)?)?.write_into_out(&*tensor(a, 3)?)?)
    });
    reg(
        r,
        "aten::masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor",
        |a| one(tensor(a, 0)?.masked_fill(&*tensor(a, 1)?, &scalar(arg(a, 2)?)?)?),
    );
    reg(
        r,
        "aten::masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor",
        |a| one(tensor(a, 0)?.masked_fill_tensor(&*tensor(a, 1)?, &*tensor(a, 2)?)?),
    );
    reg(
        r,
        "aten::masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)",
        |a| {
            tensor(a, 0)?.masked_fill_(&*tensor(a, 1)?, &scalar(arg(a, 2)?)?)?;
            Ok(vec![arg(a, 0)?.clone()])
        },
    );
    reg(
        r,
        "aten::masked_fill_.Tensor(Tensor(a!) self, Tensor mask, Tensor value) -> Tensor(a!)",
        |a| {
            tensor(a, 0)?.masked_fill_tensor_(&*tensor(a, 1)?, &*tensor(a, 2)?)?;
            Ok(vec![arg(a, 0)?.clone()])
        },
    );
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

fn lerp<Weight: std::ops::Deref<Target = Tensor>>(
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

fn correction(
    a: &Args,
    unbiased_index: Option<usize>,
    correction_index: Option<usize>,
) -> Result<f64> {
    if let Some(i) = correction_index {
        return Ok(optional_f64(arg(a, i)?)?.unwrap_or(1.0));
    }
    if let Some(i) = unbiased_index {
        return Ok(if arg(a, i)?.to_bool()? { 1.0 } else { 0.0 });
    }
    Ok(1.0)
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
        reg(
            r,
            &format!("aten::{name}(Tensor self, bool unbiased=True) -> Tensor"),
            move |a| {
                one(tensor(a, 0)?.var_std(&[], correction(a, Some(1), None)?, false, take_sqrt)?)
            },
        );
        reg(r, &format!("aten::{name}.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor"), move |a| {
            one(tensor(a, 0)?.var_std(&dims(arg(a, 1)?)?, correction(a, Some(2), None)?, arg(a, 3)?.to_bool()?, take_sqrt)?)
        });
        reg(r, &format!("aten::{name}.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor"), move |a| {
            one(tensor(a, 0)?.var_std(&dims(arg(a, 1)?)?, correction(a, None, Some(2))?, arg(a, 3)?.to_bool()?, take_sqrt)?)
        });
    }
    reg(r, "aten::linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", |a| {
        one(tensor(a, 0)?.vector_norm(f64_arg(a, 1)?, &dims(arg(a, 2)?)?, arg(a, 3)?.to_bool()?, optional_dtype(arg(a, 4)?)?)?)
    });
    reg(
        r,
        "aten::norm.Scalar(Tensor self, Scalar p=2) -> Tensor",
        |a| one(tensor(a, 0)?.vector_norm(f64_arg(a, 1)?, &[], false, None)?),
    );
    reg(r, "aten::norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor", |a| {
        let p = optional_f64(arg(a, 1)?)?.unwrap_or(2.0);
        one(tensor(a, 0)?.vector_norm(p, &dims(arg(a, 2)?)?, arg(a, 3)?.to_bool()?, None)?)
    });
    reg(
        r,
        "aten::logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor",
        |a| one(tensor(a, 0)?.logsumexp(&dims(arg(a, 1)?)?, arg(a, 2)?.to_bool()?)?),
    );
    for (name, is_any) in [("any", true), ("all", false)] {
        reg(
            r,
            &format!("aten::{name}(Tensor self) -> Tensor"),
            move |a| one(tensor(a, 0)?.any_all(&[], false, is_any)?),
        );
        reg(
            r,
            &format!("aten::{name}.dim(Tensor self, int dim, bool keepdim=False) -> Tensor"),
            move |a| {
                one(tensor(a, 0)?.any_all(
                    &[arg(a, 1)?.to_int()?],
                    arg(a, 2)?.to_bool()?,
                    is_any,
                )?)
            },
        );
        reg(
            r,
            &format!(
                "aten::{name}.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor"
            ),
            move |a| {
                one(tensor(a, 0)?.any_all(&dims(arg(a, 1)?)?, arg(a, 2)?.to_bool()?, is_any)?)
            },
        );
    }
    reg(
        r,
        "aten::count_nonzero.dim_IntList(Tensor self, int[] dim) -> Tensor",
        |a| one(tensor(a, 0)?.count_nonzero(&dims(arg(a, 1)?)?)?),
    );
    reg(
        r,
        "aten::count_nonzero(Tensor self, int? dim=None) -> Tensor",
        |a| one(tensor(a, 0)?.count_nonzero(&dims(arg(a, 1)?)?)?),
    );
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
    reg(r, "aten::sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)", |a| {
        two(tensor(a, 0)?.sort(arg(a, 1)?.to_int()?, arg(a, 2)?.to_bool()?)?)
    });
    reg(r, "aten::sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)", |a| {
        let stable = arg(a, 1)?;
        let stable = !stable.is_none() && stable.to_bool()?;
        two(tensor(a, 0)?.sort_with(arg(a, 2)?.to_int()?, arg(a, 3)?.to_bool()?, stable)?)
    });
    reg(
        r,
        "aten::argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor",
        |a| {
            one(tensor(a, 0)?
                .sort(arg(a, 1)?.to_int()?, arg(a, 2)?.to_bool()?)?
                .1)
        },
    );
    reg(r, "aten::argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor", |a| {
        one(tensor(a, 0)?.sort_with(arg(a, 2)?.to_int()?, arg(a, 3)?.to_bool()?, arg(a, 1)?.to_bool()?)?.1)
    });
    reg(r, "aten::topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)", |a| {
        two(tensor(a, 0)?.topk_with(arg(a, 1)?.to_int()?, arg(a, 2)?.to_int()?, arg(a, 3)?.to_bool()?, arg(a, 4)?.to_bool()?)?)
    });
    reg(r, "aten::kthvalue(Tensor self, int k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)", |a| {
        two(tensor(a, 0)?.kthvalue(arg(a, 1)?.to_int()?, arg(a, 2)?.to_int()?, arg(a, 3)?.to_bool()?)?)
    });
    reg(r, "aten::median(Tensor self) -> Tensor", |a| {
        one(tensor(a, 0)?.median_all()?)
    });
    reg(r, "aten::median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)", |a| {
        two(tensor(a, 0)?.median_dim(arg(a, 1)?.to_int()?, arg(a, 2)?.to_bool()?)?)
    });
    reg(r, "aten::_unique2(Tensor self, bool sorted=True, bool return_inverse=False, bool return_counts=False) -> (Tensor, Tensor, Tensor)", |a| {
        let (values, inverse, counts) = tensor(a, 0)?.unique()?;
        let inverse = if arg(a, 2)?.to_bool()? { inverse } else { Tensor::zeros(&[0], DType::Int64)? };
        let counts = if arg(a, 3)?.to_bool()? { counts } else { Tensor::zeros(&[0], DType::Int64)? };
        Ok(vec![values.into(), inverse.into(), counts.into()])
    });
}

// ----- views ---------------------------------------------------------------------------

fn register_views(r: &mut Declarations) {
    reg(r, "aten::as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)", |a| {
        one(tensor(a, 0)?.as_strided(&arg(a, 1)?.to_int_vec()?, &arg(a, 2)?.to_int_vec()?, arg(a, 3)?.to_optional_int()?)?)
    });
    // The registry's alias write-back makes the new geometry `self`'s for every handle.
    reg(r, "aten::as_strided_(Tensor(a!) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a!)", |a| {
        one(tensor(a, 0)?.as_strided(&arg(a, 1)?.to_int_vec()?, &arg(a, 2)?.to_int_vec()?, arg(a, 3)?.to_optional_int()?)?)
    });
    reg(
        r,
        "aten::unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)",
        |a| one(tensor(a, 0)?.unflatten(arg(a, 1)?.to_int()?, &arg(a, 2)?.to_int_vec()?)?),
    );
    reg(
        r,
        "aten::unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]",
        |a| tensor_list(tensor(a, 0)?.unbind(arg(a, 1)?.to_int()?)?),
    );
    reg(
        r,
        "aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
        |a| tensor_list(tensor(a, 0)?.split(arg(a, 1)?.to_int()?, arg(a, 2)?.to_int()?)?),
    );
    reg(
        r,
        "aten::split.sizes(Tensor(a -> *) self, SymInt[] split_size, int dim=0) -> Tensor(a)[]",
        |a| {
            tensor_list(
                tensor(a, 0)?.split_with_sizes(&arg(a, 1)?.to_int_vec()?, arg(a, 2)?.to_int()?)?,
            )
        },
    );
    reg(r, "aten::split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]", |a| {
        tensor_list(tensor(a, 0)?.split_with_sizes(&arg(a, 1)?.to_int_vec()?, arg(a, 2)?.to_int()?)?)
    });
    reg(
        r,
        "aten::chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]",
        |a| tensor_list(tensor(a, 0)?.chunk(arg(a, 1)?.to_int()?, arg(a, 2)?.to_int()?)?),
    );
    reg(
        r,
        "aten::diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)",
        |a| {
            one(tensor(a, 0)?.diagonal(
                arg(a, 1)?.to_int()?,
                arg(a, 2)?.to_int()?,
                arg(a, 3)?.to_int()?,
            )?)
        },
    );
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
