//! Decompositions of the convolution front-ends (`conv1d/2d/3d`, `conv_transpose1d/2d/3d`)
//! into the one core `convolution` call, with every list argument spelled out per spatial
//! dimension as ATen's composite kernels pass them.

use super::emitter::{not_applicable, Emitter, Original};
use super::Rule;
use crate::error::Result;
use crate::model::Argument;
use std::collections::BTreeMap;

pub(crate) fn register(table: &mut BTreeMap<&'static str, Rule>) {
    table.insert("torch.ops.aten.conv1d.default", |e, o| {
        convolution(e, o, 1, false)
    });
    table.insert("torch.ops.aten.conv2d.default", |e, o| {
        convolution(e, o, 2, false)
    });
    table.insert("torch.ops.aten.conv3d.default", |e, o| {
        convolution(e, o, 3, false)
    });
    table.insert("torch.ops.aten.conv_transpose1d.default", |e, o| {
        convolution(e, o, 1, true)
    });
    table.insert("torch.ops.aten.conv_transpose2d.input", |e, o| {
        convolution(e, o, 2, true)
    });
    table.insert("torch.ops.aten.conv_transpose3d.input", |e, o| {
        convolution(e, o, 3, true)
    });
}

/// An int-list argument as `spatial` values (a single value repeated).
fn per_dimension(
    original: &Original,
    name: &str,
    default: i64,
    spatial: usize,
) -> Result<Vec<i64>> {
    let values = original.ints_or(name, &[default])?;
    match values.len() {
        1 => Ok(vec![values[0]; spatial]),
        n if n == spatial => Ok(values),
        n => Err(not_applicable(format!(
            "argument '{name}' has {n} values for {spatial} spatial dimensions"
        ))),
    }
}

fn convolution(
    emitter: &mut Emitter,
    original: &Original,
    spatial: usize,
    transposed: bool,
) -> Result<Vec<String>> {
    let input = original.tensor("input")?;
    if emitter.dim(&input)? != spatial + 2 {
        return Err(not_applicable(
            "an unbatched convolution input (ATen adds and removes the batch dimension)",
        ));
    }
    let weight = original.tensor("weight")?;
    let bias = match original.optional_tensor("bias")? {
        Some(name) => Argument::Tensor(name),
        None => Argument::None,
    };
    let stride = per_dimension(original, "stride", 1, spatial)?;
    let padding = match original.get("padding") {
        Some(Argument::String(_)) => {
            return Err(not_applicable("string padding ('same'/'valid')"));
        }
        _ => per_dimension(original, "padding", 0, spatial)?,
    };
    let dilation = per_dimension(original, "dilation", 1, spatial)?;
    let output_padding = if transposed {
        per_dimension(original, "output_padding", 0, spatial)?
    } else {
        vec![0; spatial]
    };
    let groups = original.int_or("groups", 1)?;
    let out = emitter.call(
        "torch.ops.aten.convolution.default",
        vec![
            Argument::Tensor(input),
            Argument::Tensor(weight),
            bias,
            Argument::Ints(stride),
            Argument::Ints(padding),
            Argument::Ints(dilation),
            Argument::Bool(transposed),
            Argument::Ints(output_padding),
            Argument::Int(groups),
        ],
        vec![],
    )?;
    Ok(vec![out])
}
