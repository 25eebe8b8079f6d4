//! Decompositions of activations and (log-)softmax as PyTorch's table writes them: `silu`
//! (`x * sigmoid(x)`), `hardswish`/`hardsigmoid` (`clamp(clamp(x + 3, 0), None, 6)`),
//! `softplus` and `mish` (`where(x > threshold, x, log1p(exp(x)))`), `relu6` (`hardtanh`),
//! `selu` (`elu` with its constants), `log_sigmoid` (`min(0, x) - log1p(exp(-|x|))`),
//! `softmax`/`log_softmax` (`_softmax`/`_log_softmax`, after `_to_copy` when a dtype is
//! given) and `dropout` in inference (the input itself).

use super::emitter::{cpu, not_applicable, Emitter, Original, LAYOUT_STRIDED};
use super::Rule;
use crate::error::Result;
use crate::model::Argument;
use std::collections::BTreeMap;

pub(crate) fn register(table: &mut BTreeMap<&'static str, Rule>) {
    table.insert("torch.ops.aten.silu.default", silu);
    table.insert("torch.ops.aten.hardswish.default", hardswish);
    table.insert("torch.ops.aten.hardsigmoid.default", hardsigmoid);
    table.insert("torch.ops.aten.softplus.default", softplus_rule);
    table.insert("torch.ops.aten.mish.default", mish);
    table.insert("torch.ops.aten.relu6.default", relu6);
    table.insert("torch.ops.aten.selu.default", selu);
    table.insert("torch.ops.aten.log_sigmoid.default", log_sigmoid);
    table.insert("torch.ops.aten.softmax.int", |e, o| {
        softmax(e, o, "torch.ops.aten._softmax.default")
    });
    table.insert("torch.ops.aten.log_softmax.int", |e, o| {
        softmax(e, o, "torch.ops.aten._log_softmax.default")
    });
    table.insert("torch.ops.aten.dropout.default", dropout);
    table.insert("torch.ops.aten.feature_dropout.default", dropout);
    table.insert("torch.ops.aten.alpha_dropout.default", dropout);
}

fn tensor(name: &str) -> Argument {
    Argument::Tensor(name.to_string())
}

fn unary(emitter: &mut Emitter, target: &str, input: &str) -> Result<String> {
    emitter.call(target, vec![tensor(input)], vec![])
}

fn binary(emitter: &mut Emitter, target: &str, first: &str, second: Argument) -> Result<String> {
    emitter.call(target, vec![tensor(first), second], vec![])
}

fn silu(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let sigmoid = unary(emitter, "torch.ops.aten.sigmoid.default", &input)?;
    Ok(vec![binary(
        emitter,
        "torch.ops.aten.mul.Tensor",
        &input,
        tensor(&sigmoid),
    )?])
}

/// `clamp(clamp(x + 3, min=0), max=6)`.
fn relu6_of_shifted(emitter: &mut Emitter, input: &str) -> Result<String> {
    let shifted = binary(
        emitter,
        "torch.ops.aten.add.Tensor",
        input,
        Argument::Int(3),
    )?;
    let low = binary(
        emitter,
        "torch.ops.aten.clamp.default",
        &shifted,
        Argument::Int(0),
    )?;
    emitter.call(
        "torch.ops.aten.clamp.default",
        vec![tensor(&low), Argument::None, Argument::Int(6)],
        vec![],
    )
}

fn hardswish(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let clamped = relu6_of_shifted(emitter, &input)?;
    let product = binary(
        emitter,
        "torch.ops.aten.mul.Tensor",
        &input,
        tensor(&clamped),
    )?;
    Ok(vec![binary(
        emitter,
        "torch.ops.aten.div.Tensor",
        &product,
        Argument::Int(6),
    )?])
}

fn hardsigmoid(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let clamped = relu6_of_shifted(emitter, &input)?;
    Ok(vec![binary(
        emitter,
        "torch.ops.aten.div.Tensor",
        &clamped,
        Argument::Int(6),
    )?])
}

fn is_one(argument: &Argument) -> bool {
    matches!(argument, Argument::Int(1)) || matches!(argument, Argument::Float(v) if *v == 1.0)
}

/// `where(x * beta > threshold, x, log1p(exp(x * beta)) / beta)`, without the scaling when
/// beta is 1.
fn softplus(
    emitter: &mut Emitter,
    input: &str,
    beta: Argument,
    threshold: Argument,
) -> Result<String> {
    let scaled = if is_one(&beta) {
        input.to_string()
    } else {
        binary(emitter, "torch.ops.aten.mul.Tensor", input, beta.clone())?
    };
    let exp = unary(emitter, "torch.ops.aten.exp.default", &scaled)?;
    let mut rhs = unary(emitter, "torch.ops.aten.log1p.default", &exp)?;
    if !is_one(&beta) {
        rhs = binary(emitter, "torch.ops.aten.div.Tensor", &rhs, beta)?;
    }
    let above = binary(emitter, "torch.ops.aten.gt.Scalar", &scaled, threshold)?;
    emitter.call(
        "torch.ops.aten.where.self",
        vec![tensor(&above), tensor(input), tensor(&rhs)],
        vec![],
    )
}

fn softplus_rule(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let beta = original.arg_or("beta", Argument::Int(1));
    let threshold = original.arg_or("threshold", Argument::Int(20));
    Ok(vec![softplus(emitter, &input, beta, threshold)?])
}

fn mish(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let soft = softplus(emitter, &input, Argument::Int(1), Argument::Int(20))?;
    let tanh = unary(emitter, "torch.ops.aten.tanh.default", &soft)?;
    Ok(vec![binary(
        emitter,
        "torch.ops.aten.mul.Tensor",
        &input,
        tensor(&tanh),
    )?])
}

fn relu6(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    Ok(vec![emitter.call(
        "torch.ops.aten.hardtanh.default",
        vec![tensor(&input), Argument::Int(0), Argument::Int(6)],
        vec![],
    )?])
}

fn selu(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    Ok(vec![emitter.call(
        "torch.ops.aten.elu.default",
        vec![
            tensor(&input),
            Argument::Float(1.6732632423543772),
            Argument::Float(1.0507009873554805),
        ],
        vec![],
    )?])
}

fn log_sigmoid(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let dtype = emitter.dtype(&input)?;
    let zero = emitter.call(
        "torch.ops.aten.full.default",
        vec![Argument::Ints(vec![]), Argument::Int(0)],
        vec![
            ("dtype", Argument::ScalarType(dtype)),
            ("layout", Argument::Layout(LAYOUT_STRIDED)),
            ("device", cpu()),
            ("pin_memory", Argument::Bool(false)),
        ],
    )?;
    let minimum = binary(
        emitter,
        "torch.ops.aten.minimum.default",
        &zero,
        tensor(&input),
    )?;
    let abs = unary(emitter, "torch.ops.aten.abs.default", &input)?;
    let neg = unary(emitter, "torch.ops.aten.neg.default", &abs)?;
    let exp = unary(emitter, "torch.ops.aten.exp.default", &neg)?;
    let log1p = unary(emitter, "torch.ops.aten.log1p.default", &exp)?;
    Ok(vec![binary(
        emitter,
        "torch.ops.aten.sub.Tensor",
        &minimum,
        tensor(&log1p),
    )?])
}

fn softmax(emitter: &mut Emitter, original: &Original, target: &str) -> Result<Vec<String>> {
    let mut input = original.tensor("self")?;
    let dim = original.int_or("dim", 0)?;
    if let Some(Argument::ScalarType(dtype)) = original.get("dtype") {
        input = emitter.call(
            "torch.ops.aten._to_copy.default",
            vec![tensor(&input)],
            vec![
                ("dtype", Argument::ScalarType(*dtype)),
                ("layout", Argument::Layout(LAYOUT_STRIDED)),
                ("device", cpu()),
            ],
        )?;
    }
    Ok(vec![emitter.call(
        target,
        vec![tensor(&input), Argument::Int(dim), Argument::Bool(false)],
        vec![],
    )?])
}

fn dropout(_emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    if original.bool_or("train", false)? {
        let p = original.float_or("p", 0.5)?;
        if p != 0.0 {
            return Err(not_applicable(
                "dropout in training mode (it draws random numbers)",
            ));
        }
    }
    Ok(vec![original.tensor("input")?])
}
