//! Decompositions of point-wise arithmetic that PyTorch writes out with core ATen calls:
//! `addcmul` / `addcdiv` (`self + value * t1 * t2`, `self + value * t1 / t2`), `lerp` with a
//! number or tensor weight (the two-sided form PyTorch uses for precision), `frac`
//! (`x - trunc(x)`) and `nan_to_num` (three `where`s over `isnan` / `== -inf` / `== inf`).

use super::emitter::{cpu, not_applicable, Emitter, Original, LAYOUT_STRIDED};
use super::Rule;
use crate::error::Result;
use crate::model::Argument;
use std::collections::BTreeMap;

/// Export's ScalarType numbers for the floating dtypes whose limits `nan_to_num` needs.
const SCALAR_TYPE_FLOAT: i64 = 7;
const SCALAR_TYPE_DOUBLE: i64 = 8;

pub(crate) fn register(table: &mut BTreeMap<&'static str, Rule>) {
    table.insert("torch.ops.aten.addcmul.default", |e, o| {
        add_combined(e, o, "torch.ops.aten.mul.Tensor")
    });
    table.insert("torch.ops.aten.addcdiv.default", |e, o| {
        add_combined(e, o, "torch.ops.aten.div.Tensor")
    });
    table.insert("torch.ops.aten.lerp.Scalar", lerp);
    table.insert("torch.ops.aten.lerp.Tensor", lerp);
    table.insert("torch.ops.aten.frac.default", frac);
    table.insert("torch.ops.aten.nan_to_num.default", nan_to_num);
}

fn tensor(name: &str) -> Argument {
    Argument::Tensor(name.to_string())
}

fn is_floating(dtype: i64) -> bool {
    // HALF, FLOAT, DOUBLE, BFLOAT16 in export's ScalarType numbering.
    matches!(dtype, 6 | 7 | 8 | 13)
}

/// `addcmul` and `addcdiv` on floating tensors: PyTorch multiplies `tensor1` by `value`
/// first, then combines it with `tensor2`, then adds `self`. (Integer inputs take another
/// order in PyTorch, so they are left for the report.)
fn add_combined(emitter: &mut Emitter, original: &Original, combine: &str) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let first = original.tensor("tensor1")?;
    let second = original.tensor("tensor2")?;
    if !is_floating(emitter.dtype(&input)?) {
        return Err(not_applicable(
            "addcmul/addcdiv on an integer tensor is not decomposed yet",
        ));
    }
    let value = original.arg_or("value", Argument::Int(1));
    let scaled = emitter.call(
        "torch.ops.aten.mul.Tensor",
        vec![tensor(&first), value],
        vec![],
    )?;
    let combined = emitter.call(combine, vec![tensor(&scaled), tensor(&second)], vec![])?;
    Ok(vec![emitter.call(
        "torch.ops.aten.add.Tensor",
        vec![tensor(&input), tensor(&combined)],
        vec![],
    )?])
}

/// PyTorch's `lerp`: with `mask = |w| >= 0.5`,
/// `where(mask, w - 1, w) * (end - start) + where(mask, end, start)`; a number weight first
/// becomes a 0-d tensor of `start`'s dtype (`new_full`).
fn lerp(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let start = original.tensor("self")?;
    let end = original.tensor("end")?;
    let weight = match original.required("weight")? {
        Argument::Tensor(name) => name.clone(),
        number @ (Argument::Float(_) | Argument::Int(_)) => {
            let dtype = emitter.dtype(&start)?;
            emitter.call(
                "torch.ops.aten.full.default",
                vec![Argument::Ints(vec![]), number.clone()],
                vec![
                    ("dtype", Argument::ScalarType(dtype)),
                    ("layout", Argument::Layout(LAYOUT_STRIDED)),
                    ("device", cpu()),
                    ("pin_memory", Argument::Bool(false)),
                ],
            )?
        }
        _ => {
            return Err(not_applicable(
                "lerp weight is neither a tensor nor a number",
            ))
        }
    };
    let magnitude = emitter.call("torch.ops.aten.abs.default", vec![tensor(&weight)], vec![])?;
    let mask = emitter.call(
        "torch.ops.aten.ge.Scalar",
        vec![tensor(&magnitude), Argument::Float(0.5)],
        vec![],
    )?;
    let weight_minus_one = emitter.call(
        "torch.ops.aten.sub.Tensor",
        vec![tensor(&weight), Argument::Int(1)],
        vec![],
    )?;
    let coefficient = emitter.call(
        "torch.ops.aten.where.self",
        vec![tensor(&mask), tensor(&weight_minus_one), tensor(&weight)],
        vec![],
    )?;
    let base = emitter.call(
        "torch.ops.aten.where.self",
        vec![tensor(&mask), tensor(&end), tensor(&start)],
        vec![],
    )?;
    let difference = emitter.call(
        "torch.ops.aten.sub.Tensor",
        vec![tensor(&end), tensor(&start)],
        vec![],
    )?;
    let scaled = emitter.call(
        "torch.ops.aten.mul.Tensor",
        vec![tensor(&coefficient), tensor(&difference)],
        vec![],
    )?;
    Ok(vec![emitter.call(
        "torch.ops.aten.add.Tensor",
        vec![tensor(&scaled), tensor(&base)],
        vec![],
    )?])
}

fn frac(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let truncated = emitter.call("torch.ops.aten.trunc.default", vec![tensor(&input)], vec![])?;
    Ok(vec![emitter.call(
        "torch.ops.aten.sub.Tensor",
        vec![tensor(&input), tensor(&truncated)],
        vec![],
    )?])
}

/// A number argument of `nan_to_num`, or `default` when it is left out or None.
fn number_or(original: &Original, name: &str, default: f64) -> Result<f64> {
    match original.get(name) {
        None | Some(Argument::None) => Ok(default),
        Some(Argument::Float(value)) => Ok(*value),
        Some(Argument::Int(value)) => Ok(*value as f64),
        Some(_) => Err(not_applicable(format!(
            "nan_to_num argument '{name}' is not a number"
        ))),
    }
}

/// `where(cond, scalar_tensor(value), current)` with the input's dtype.
fn replace_where(
    emitter: &mut Emitter,
    condition: &str,
    value: f64,
    dtype: i64,
    current: &str,
) -> Result<String> {
    let filler = emitter.call(
        "torch.ops.aten.scalar_tensor.default",
        vec![Argument::Float(value)],
        vec![
            ("dtype", Argument::ScalarType(dtype)),
            ("layout", Argument::Layout(LAYOUT_STRIDED)),
            ("device", cpu()),
        ],
    )?;
    emitter.call(
        "torch.ops.aten.where.self",
        vec![tensor(condition), tensor(&filler), tensor(current)],
        vec![],
    )
}

fn nan_to_num(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let dtype = emitter.dtype(&input)?;
    // The limits PyTorch fills in are the dtype's finfo max/min.
    let largest = match dtype {
        SCALAR_TYPE_FLOAT => f64::from(f32::MAX),
        SCALAR_TYPE_DOUBLE => f64::MAX,
        _ => {
            return Err(not_applicable(
                "nan_to_num is decomposed for float32 and float64 only",
            ))
        }
    };
    let nan = number_or(original, "nan", 0.0)?;
    let positive = number_or(original, "posinf", largest)?;
    let negative = number_or(original, "neginf", -largest)?;
    let is_nan = emitter.call("torch.ops.aten.isnan.default", vec![tensor(&input)], vec![])?;
    let mut result = replace_where(emitter, &is_nan, nan, dtype, &input)?;
    for (infinity, replacement) in [(f64::NEG_INFINITY, negative), (f64::INFINITY, positive)] {
        let is_infinite = emitter.call(
            "torch.ops.aten.eq.Scalar",
            vec![tensor(&input), Argument::Float(infinity)],
            vec![],
        )?;
        result = replace_where(emitter, &is_infinite, replacement, dtype, &result)?;
    }
    Ok(vec![result])
}
