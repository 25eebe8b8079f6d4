//! Decompositions of the normalization front-ends: `batch_norm` in inference
//! (`_native_batch_norm_legit_no_training`) and in training with running statistics
//! (`_native_batch_norm_legit_functional`, the new statistics written back), `layer_norm`
//! (`native_layer_norm`), `group_norm` (`native_group_norm` with N, C, HxW spelled out) and
//! `instance_norm` (the batch folded into the channels, `_native_batch_norm_legit.no_stats`, viewed
//! back). Only the first result of each native call is read; the others keep their `_unused` names.

use super::emitter::{not_applicable, Emitter, Original};
use super::Rule;
use crate::error::Result;
use crate::model::Argument;
use std::collections::BTreeMap;

pub(crate) fn register(table: &mut BTreeMap<&'static str, Rule>) {
    table.insert("torch.ops.aten.batch_norm.default", batch_norm);
    table.insert("torch.ops.aten.layer_norm.default", layer_norm);
    table.insert("torch.ops.aten.group_norm.default", group_norm);
    table.insert("torch.ops.aten.instance_norm.default", instance_norm);
}

fn optional(name: Option<String>) -> Argument {
    name.map(Argument::Tensor).unwrap_or(Argument::None)
}

fn batch_norm(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    if original.bool_or("training", false)? {
        return training_batch_norm(emitter, original);
    }
    let input = original.tensor("input")?;
    let running_mean = original.optional_tensor("running_mean")?;
    let running_var = original.optional_tensor("running_var")?;
    let (Some(running_mean), Some(running_var)) = (running_mean, running_var) else {
        return Err(not_applicable(
            "inference batch_norm without running statistics",
        ));
    };
    let outputs = emitter.call_several(
        "torch.ops.aten._native_batch_norm_legit_no_training.default",
        vec![
            Argument::Tensor(input),
            optional(original.optional_tensor("weight")?),
            optional(original.optional_tensor("bias")?),
            Argument::Tensor(running_mean),
            Argument::Tensor(running_var),
            Argument::Float(original.float_or("momentum", 0.1)?),
            Argument::Float(original.float_or("eps", 1e-5)?),
        ],
        vec![],
        None,
    )?;
    Ok(vec![outputs[0].clone()])
}

/// Training batch norm with running statistics, as PyTorch lowers it:
/// `_native_batch_norm_legit_functional`, whose fourth and fifth results are the updated
/// running mean and variance; the pass turns those into mutation outputs of the buffers.
fn training_batch_norm(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("input")?;
    let running_mean = original.optional_tensor("running_mean")?;
    let running_var = original.optional_tensor("running_var")?;
    let (Some(running_mean), Some(running_var)) = (running_mean, running_var) else {
        return Err(not_applicable(
            "training batch_norm without running statistics (no_stats) is not decomposed yet",
        ));
    };
    let outputs = emitter.call_several(
        "torch.ops.aten._native_batch_norm_legit_functional.default",
        vec![
            Argument::Tensor(input),
            optional(original.optional_tensor("weight")?),
            optional(original.optional_tensor("bias")?),
            Argument::Tensor(running_mean.clone()),
            Argument::Tensor(running_var.clone()),
            Argument::Bool(true),
            Argument::Float(original.float_or("momentum", 0.1)?),
            Argument::Float(original.float_or("eps", 1e-5)?),
        ],
        vec![],
        None,
    )?;
    if outputs.len() != 5 {
        return Err(not_applicable(format!(
            "_native_batch_norm_legit_functional gave {} results, not 5",
            outputs.len()
        )));
    }
    emitter.writes.push((running_mean, outputs[3].clone()));
    emitter.writes.push((running_var, outputs[4].clone()));
    Ok(vec![outputs[0].clone()])
}

fn layer_norm(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let outputs = emitter.call_several(
        "torch.ops.aten.native_layer_norm.default",
        vec![
            Argument::Tensor(original.tensor("input")?),
            Argument::Ints(original.ints_or("normalized_shape", &[])?),
            optional(original.optional_tensor("weight")?),
            optional(original.optional_tensor("bias")?),
            Argument::Float(original.float_or("eps", 1e-5)?),
        ],
        vec![],
        None,
    )?;
    Ok(vec![outputs[0].clone()])
}

fn group_norm(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("input")?;
    let sizes = emitter.sizes(&input)?;
    if sizes.len() < 2 {
        return Err(not_applicable(
            "group_norm of a tensor with fewer than 2 dimensions",
        ));
    }
    let hxw: i64 = sizes[2..].iter().product();
    let outputs = emitter.call_several(
        "torch.ops.aten.native_group_norm.default",
        vec![
            Argument::Tensor(input),
            optional(original.optional_tensor("weight")?),
            optional(original.optional_tensor("bias")?),
            Argument::Int(sizes[0]),
            Argument::Int(sizes[1]),
            Argument::Int(hxw),
            Argument::Int(original.int_or("num_groups", 1)?),
            Argument::Float(original.float_or("eps", 1e-5)?),
        ],
        vec![],
        None,
    )?;
    Ok(vec![outputs[0].clone()])
}

fn instance_norm(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    if !original.bool_or("use_input_stats", true)?
        || !original.is_none("running_mean")
        || !original.is_none("running_var")
    {
        return Err(not_applicable("instance_norm with running statistics"));
    }
    let input = original.tensor("input")?;
    let sizes = emitter.sizes(&input)?;
    if sizes.len() < 2 {
        return Err(not_applicable(
            "instance_norm of a tensor with fewer than 2 dimensions",
        ));
    }
    let batch = sizes[0];
    let repeat = |emitter: &mut Emitter, name: Option<String>| -> Result<Argument> {
        Ok(match name {
            Some(name) => Argument::Tensor(emitter.call(
                "torch.ops.aten.repeat.default",
                vec![Argument::Tensor(name), Argument::Ints(vec![batch])],
                vec![],
            )?),
            None => Argument::None,
        })
    };
    let weight = repeat(emitter, original.optional_tensor("weight")?)?;
    let bias = repeat(emitter, original.optional_tensor("bias")?)?;
    let mut folded_shape = vec![1, batch * sizes[1]];
    folded_shape.extend_from_slice(&sizes[2..]);
    let folded = emitter.call(
        "torch.ops.aten.view.default",
        vec![Argument::Tensor(input), Argument::Ints(folded_shape)],
        vec![],
    )?;
    let outputs = emitter.call_several(
        "torch.ops.aten._native_batch_norm_legit.no_stats",
        vec![
            Argument::Tensor(folded),
            weight,
            bias,
            Argument::Bool(true),
            Argument::Float(original.float_or("momentum", 0.1)?),
            Argument::Float(original.float_or("eps", 1e-5)?),
        ],
        vec![],
        None,
    )?;
    let out = emitter.call(
        "torch.ops.aten.view.default",
        vec![Argument::Tensor(outputs[0].clone()), Argument::Ints(sizes)],
        vec![],
    )?;
    Ok(vec![out])
}
