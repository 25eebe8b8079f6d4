//! Decompositions of reductions: `sum` of everything (`sum.dim_IntList` over `[]`), the
//! `var`/`std`/`var_mean` overloads taking `unbiased` (`var.correction` with correction 1 or
//! 0; `std` adds `sqrt`), `std.correction`, and `linalg_vector_norm` of an even order
//! (`pow`, `sum`, `pow(1/ord)`).

use super::emitter::{not_applicable, Emitter, Original};
use super::Rule;
use crate::error::Result;
use crate::model::Argument;
use std::collections::BTreeMap;

pub(crate) fn register(table: &mut BTreeMap<&'static str, Rule>) {
    table.insert("torch.ops.aten.sum.default", sum_all);
    table.insert("torch.ops.aten.var.dim", |e, o| variance(e, o, true, false));
    table.insert("torch.ops.aten.var.default", |e, o| {
        variance(e, o, false, false)
    });
    table.insert("torch.ops.aten.std.dim", |e, o| variance(e, o, true, true));
    table.insert("torch.ops.aten.std.default", |e, o| {
        variance(e, o, false, true)
    });
    table.insert("torch.ops.aten.std.correction", std_correction);
    table.insert("torch.ops.aten.var_mean.dim", var_mean);
    table.insert("torch.ops.aten.linalg_vector_norm.default", vector_norm);
}

fn tensor(name: &str) -> Argument {
    Argument::Tensor(name.to_string())
}

fn sum_all(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let mut keywords = Vec::new();
    if let Some(dtype @ Argument::ScalarType(_)) = original.get("dtype") {
        keywords.push(("dtype", dtype.clone()));
    }
    Ok(vec![emitter.call(
        "torch.ops.aten.sum.dim_IntList",
        vec![tensor(&input), Argument::Ints(vec![])],
        keywords,
    )?])
}

/// `var.correction(self, dim, correction=…, keepdim=…)` from the `unbiased` overloads.
fn correction_call(
    emitter: &mut Emitter,
    original: &Original,
    target: &str,
    with_dim: bool,
    several: bool,
) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let correction = i64::from(original.bool_or("unbiased", true)?);
    let mut positional = vec![tensor(&input)];
    if with_dim {
        positional.push(original.arg_or("dim", Argument::None));
    }
    let mut keywords = vec![("correction", Argument::Int(correction))];
    if original.bool_or("keepdim", false)? {
        keywords.push(("keepdim", Argument::Bool(true)));
    }
    if several {
        emitter.call_several(target, positional, keywords, None)
    } else {
        Ok(vec![emitter.call(target, positional, keywords)?])
    }
}

fn variance(
    emitter: &mut Emitter,
    original: &Original,
    with_dim: bool,
    root: bool,
) -> Result<Vec<String>> {
    let var = correction_call(
        emitter,
        original,
        "torch.ops.aten.var.correction",
        with_dim,
        false,
    )?;
    if !root {
        return Ok(var);
    }
    Ok(vec![emitter.call(
        "torch.ops.aten.sqrt.default",
        vec![tensor(&var[0])],
        vec![],
    )?])
}

fn std_correction(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let mut positional = vec![tensor(&input)];
    if let Some(dim) = original.get("dim") {
        positional.push(dim.clone());
    }
    let mut keywords = Vec::new();
    if let Some(correction) = original.get("correction") {
        keywords.push(("correction", correction.clone()));
    }
    if original.bool_or("keepdim", false)? {
        keywords.push(("keepdim", Argument::Bool(true)));
    }
    let var = emitter.call("torch.ops.aten.var.correction", positional, keywords)?;
    Ok(vec![emitter.call(
        "torch.ops.aten.sqrt.default",
        vec![tensor(&var)],
        vec![],
    )?])
}

fn var_mean(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    correction_call(
        emitter,
        original,
        "torch.ops.aten.var_mean.correction",
        true,
        true,
    )
}

fn vector_norm(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let order = original.float_or("ord", 2.0)?;
    if !(order > 0.0 && order.fract() == 0.0 && (order as i64) % 2 == 0) {
        return Err(not_applicable(format!(
            "linalg_vector_norm of order {order} (only even orders are decomposed)"
        )));
    }
    if original
        .get("dtype")
        .is_some_and(|d| !matches!(d, Argument::None))
    {
        return Err(not_applicable("linalg_vector_norm with a dtype"));
    }
    let power = if order == 2.0 {
        Argument::Int(2)
    } else {
        Argument::Float(order)
    };
    let powered = emitter.call(
        "torch.ops.aten.pow.Tensor_Scalar",
        vec![tensor(&input), power],
        vec![],
    )?;
    let mut positional = vec![tensor(&powered), original.arg_or("dim", Argument::None)];
    if original.bool_or("keepdim", false)? {
        positional.push(Argument::Bool(true));
    }
    let summed = emitter.call("torch.ops.aten.sum.dim_IntList", positional, vec![])?;
    Ok(vec![emitter.call(
        "torch.ops.aten.pow.Tensor_Scalar",
        vec![tensor(&summed), Argument::Float(1.0 / order)],
        vec![],
    )?])
}
