//! Decompositions of pooling: `adaptive_avg_pool2d` (`mean` over the spatial dimensions for
//! a 1×1 output, else `_adaptive_avg_pool2d`), `adaptive_avg_pool1d` and `max_pool1d`
//! (through their 2-d forms on an unsqueezed input), and `max_pool2d`/`max_pool3d`
//! (`max_pool*_with_indices`, first result).

use super::emitter::{not_applicable, Emitter, Original};
use super::Rule;
use crate::error::Result;
use crate::model::Argument;
use std::collections::BTreeMap;

pub(crate) fn register(table: &mut BTreeMap<&'static str, Rule>) {
    table.insert(
        "torch.ops.aten.adaptive_avg_pool2d.default",
        adaptive_avg_pool2d,
    );
    table.insert(
        "torch.ops.aten.adaptive_avg_pool1d.default",
        adaptive_avg_pool1d,
    );
    table.insert("torch.ops.aten.max_pool2d.default", |e, o| {
        max_pool(e, o, "torch.ops.aten.max_pool2d_with_indices.default")
    });
    table.insert("torch.ops.aten.max_pool3d.default", |e, o| {
        max_pool(e, o, "torch.ops.aten.max_pool3d_with_indices.default")
    });
    table.insert("torch.ops.aten.max_pool1d.default", max_pool1d);
}

fn tensor(name: &str) -> Argument {
    Argument::Tensor(name.to_string())
}

fn adaptive_avg_pool2d(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let output_size = original.ints_or("output_size", &[])?;
    let output_size = match output_size.len() {
        1 => vec![output_size[0]; 2],
        2 => output_size,
        _ => return Err(not_applicable("adaptive_avg_pool2d output size is not 2-d")),
    };
    if output_size == [1, 1] {
        return Ok(vec![emitter.call(
            "torch.ops.aten.mean.dim",
            vec![
                tensor(&input),
                Argument::Ints(vec![-1, -2]),
                Argument::Bool(true),
            ],
            vec![],
        )?]);
    }
    Ok(vec![emitter.call(
        "torch.ops.aten._adaptive_avg_pool2d.default",
        vec![tensor(&input), Argument::Ints(output_size)],
        vec![],
    )?])
}

fn adaptive_avg_pool1d(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let output_size = original.ints_or("output_size", &[])?;
    if output_size.len() != 1 {
        return Err(not_applicable("adaptive_avg_pool1d output size is not 1-d"));
    }
    let unsqueezed = emitter.call(
        "torch.ops.aten.unsqueeze.default",
        vec![tensor(&input), Argument::Int(-2)],
        vec![],
    )?;
    let pooled = emitter.call(
        "torch.ops.aten._adaptive_avg_pool2d.default",
        vec![tensor(&unsqueezed), Argument::Ints(vec![1, output_size[0]])],
        vec![],
    )?;
    Ok(vec![emitter.call(
        "torch.ops.aten.squeeze.dims",
        vec![tensor(&pooled), Argument::Ints(vec![-2])],
        vec![],
    )?])
}

fn max_pool(emitter: &mut Emitter, original: &Original, target: &str) -> Result<Vec<String>> {
    // The arguments carry over as given (the with_indices overload has the same ones).
    let mut positional = vec![tensor(&original.tensor("self")?)];
    let names = ["kernel_size", "stride", "padding", "dilation", "ceil_mode"];
    let given = names
        .iter()
        .rposition(|name| original.get(name).is_some())
        .map_or(0, |last| last + 1);
    let defaults = [
        Argument::Ints(vec![]),
        Argument::Ints(vec![]),
        Argument::Ints(vec![0]),
        Argument::Ints(vec![1]),
        Argument::Bool(false),
    ];
    for (name, default) in names.iter().zip(defaults).take(given) {
        positional.push(original.arg_or(name, default));
    }
    let outputs = emitter.call_several(target, positional, vec![], None)?;
    Ok(vec![outputs[0].clone()])
}

fn max_pool1d(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let first = |values: Vec<i64>, what: &str| -> Result<Option<i64>> {
        match values.len() {
            0 => Ok(None),
            1 => Ok(Some(values[0])),
            _ => Err(not_applicable(format!(
                "max_pool1d {what} has several values"
            ))),
        }
    };
    let kernel = first(original.ints_or("kernel_size", &[])?, "kernel_size")?
        .ok_or_else(|| not_applicable("max_pool1d without a kernel size"))?;
    let stride = first(original.ints_or("stride", &[])?, "stride")?.unwrap_or(kernel);
    let padding = first(original.ints_or("padding", &[0])?, "padding")?.unwrap_or(0);
    let dilation = first(original.ints_or("dilation", &[1])?, "dilation")?.unwrap_or(1);
    let ceil_mode = original.bool_or("ceil_mode", false)?;
    let unsqueezed = emitter.call(
        "torch.ops.aten.unsqueeze.default",
        vec![tensor(&input), Argument::Int(-2)],
        vec![],
    )?;
    let mut positional = vec![
        tensor(&unsqueezed),
        Argument::Ints(vec![1, kernel]),
        Argument::Ints(vec![1, stride]),
    ];
    if padding != 0 || dilation != 1 || ceil_mode {
        positional.push(Argument::Ints(vec![0, padding]));
    }
    if dilation != 1 || ceil_mode {
        positional.push(Argument::Ints(vec![1, dilation]));
    }
    if ceil_mode {
        positional.push(Argument::Bool(true));
    }
    let outputs = emitter.call_several(
        "torch.ops.aten.max_pool2d_with_indices.default",
        positional,
        vec![],
        None,
    )?;
    Ok(vec![emitter.call(
        "torch.ops.aten.squeeze.dims",
        vec![tensor(&outputs[0]), Argument::Ints(vec![-2])],
        vec![],
    )?])
}
