//! Decompositions of element-wise operators and factories: the clamp spellings
//! (`clamp_min`, `clamp_max`, `clip`), dtype conversions (`to.dtype`, `type_as` →
//! `_to_copy`, or nothing when the dtype does not change), `rsub`, `floor_divide`,
//! `square`, `true_divide`, the `*_like` and `new_*` factories and `zeros`/`ones`
//! (`full`/`full_like`/`empty_permuted`), `fill`, `arange` (`arange.start_step`),
//! `lift_fresh_copy` (`clone`), `detach` (nothing) and `masked_fill` with a number
//! (`where(mask, scalar_tensor(value), self)`).

use super::emitter::{cpu, Emitter, Original, LAYOUT_STRIDED, MEMORY_FORMAT_PRESERVE};
use super::Rule;
use crate::error::Result;
use crate::model::Argument;
use std::collections::BTreeMap;

pub(crate) fn register(table: &mut BTreeMap<&'static str, Rule>) {
    table.insert("torch.ops.aten.clamp_min.default", |e, o| {
        clamp(e, o, Some("min"), None)
    });
    table.insert("torch.ops.aten.clamp_max.default", |e, o| {
        clamp(e, o, None, Some("max"))
    });
    table.insert("torch.ops.aten.clip.default", |e, o| {
        clamp(e, o, Some("min"), Some("max"))
    });
    table.insert("torch.ops.aten.clip.Tensor", clip_tensor);
    table.insert("torch.ops.aten.to.dtype", to_dtype);
    // TorchScript's overload, which ferrojit-convert carries over from the archive.
    table.insert("torch.ops.aten.to.prim_dtype", to_dtype);
    table.insert("torch.ops.aten.masked_fill.Scalar", masked_fill);
    table.insert("torch.ops.aten.type_as.default", type_as);
    table.insert("torch.ops.aten.rsub.Scalar", rsub);
    table.insert("torch.ops.aten.rsub.Tensor", rsub);
    table.insert("torch.ops.aten.floor_divide.default", floor_divide);
    table.insert("torch.ops.aten.floor_divide.Scalar", floor_divide);
    table.insert("torch.ops.aten.square.default", square);
    table.insert("torch.ops.aten.true_divide.Tensor", true_divide);
    table.insert("torch.ops.aten.zeros_like.default", |e, o| {
        like(e, o, Argument::Int(0))
    });
    table.insert("torch.ops.aten.ones_like.default", |e, o| {
        like(e, o, Argument::Int(1))
    });
    table.insert("torch.ops.aten.empty_like.default", empty_like);
    table.insert("torch.ops.aten.fill.Scalar", fill);
    table.insert("torch.ops.aten.zeros.default", |e, o| {
        factory(e, o, Argument::Int(0))
    });
    table.insert("torch.ops.aten.ones.default", |e, o| {
        factory(e, o, Argument::Int(1))
    });
    table.insert("torch.ops.aten.new_zeros.default", |e, o| {
        new_factory(e, o, Argument::Int(0))
    });
    table.insert("torch.ops.aten.new_ones.default", |e, o| {
        new_factory(e, o, Argument::Int(1))
    });
    table.insert("torch.ops.aten.arange.default", arange);
    table.insert("torch.ops.aten.arange.start", arange);
    table.insert("torch.ops.aten.lift_fresh_copy.default", lift_fresh_copy);
    table.insert("torch.ops.aten.detach.default", |_, o| {
        Ok(vec![o.tensor("self")?])
    });
}

fn tensor(name: &str) -> Argument {
    Argument::Tensor(name.to_string())
}

fn clamp(
    emitter: &mut Emitter,
    original: &Original,
    min: Option<&str>,
    max: Option<&str>,
) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let min = min.map_or(Argument::None, |name| original.arg_or(name, Argument::None));
    let max = max.map_or(Argument::None, |name| original.arg_or(name, Argument::None));
    let mut positional = vec![tensor(&input), min];
    if !matches!(max, Argument::None) {
        positional.push(max);
    }
    Ok(vec![emitter.call(
        "torch.ops.aten.clamp.default",
        positional,
        vec![],
    )?])
}

fn clip_tensor(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let min = original.arg_or("min", Argument::None);
    let max = original.arg_or("max", Argument::None);
    Ok(vec![emitter.call(
        "torch.ops.aten.clamp.Tensor",
        vec![tensor(&input), min, max],
        vec![],
    )?])
}

fn to_dtype(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let dtype = match original.required("dtype")? {
        Argument::ScalarType(dtype) => *dtype,
        _ => return Err(super::emitter::not_applicable("to.dtype without a dtype")),
    };
    if emitter.dtype(&input)? == dtype && !original.bool_or("copy", false)? {
        return Ok(vec![input]);
    }
    Ok(vec![emitter.call(
        "torch.ops.aten._to_copy.default",
        vec![tensor(&input)],
        vec![("dtype", Argument::ScalarType(dtype))],
    )?])
}

fn type_as(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let other = original.tensor("other")?;
    let dtype = emitter.dtype(&other)?;
    if emitter.dtype(&input)? == dtype {
        return Ok(vec![input]);
    }
    Ok(vec![emitter.call(
        "torch.ops.aten._to_copy.default",
        vec![tensor(&input)],
        vec![
            ("dtype", Argument::ScalarType(dtype)),
            ("layout", Argument::Layout(LAYOUT_STRIDED)),
            ("device", cpu()),
        ],
    )?])
}

fn rsub(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let other = original.required("other")?.clone();
    let mut keywords = Vec::new();
    if let Some(alpha) = original.get("alpha") {
        if !matches!(alpha, Argument::Int(1)) {
            keywords.push(("alpha", alpha.clone()));
        }
    }
    Ok(vec![emitter.call(
        "torch.ops.aten.sub.Tensor",
        vec![other, tensor(&input)],
        keywords,
    )?])
}

fn floor_divide(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let other = original.required("other")?.clone();
    Ok(vec![emitter.call(
        "torch.ops.aten.div.Tensor_mode",
        vec![tensor(&input), other],
        vec![("rounding_mode", Argument::String("floor".into()))],
    )?])
}

fn square(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    Ok(vec![emitter.call(
        "torch.ops.aten.pow.Tensor_Scalar",
        vec![tensor(&input), Argument::Int(2)],
        vec![],
    )?])
}

fn true_divide(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let other = original.required("other")?.clone();
    Ok(vec![emitter.call(
        "torch.ops.aten.div.Tensor",
        vec![tensor(&input), other],
        vec![],
    )?])
}

/// The factory keywords given on the original node (dtype, layout, device), in order.
fn given_options(original: &Original) -> Vec<(&'static str, Argument)> {
    let mut options = Vec::new();
    for name in ["dtype", "layout", "device"] {
        if let Some(value) = original.get(name) {
            if !matches!(value, Argument::None) {
                options.push((name, value.clone()));
            }
        }
    }
    options
}

fn like(emitter: &mut Emitter, original: &Original, value: Argument) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let mut keywords = given_options(original);
    keywords.push(("pin_memory", Argument::Bool(false)));
    keywords.push((
        "memory_format",
        original.arg_or(
            "memory_format",
            Argument::MemoryFormat(MEMORY_FORMAT_PRESERVE),
        ),
    ));
    Ok(vec![emitter.call(
        "torch.ops.aten.full_like.default",
        vec![tensor(&input), value],
        keywords,
    )?])
}

fn empty_like(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let sizes = emitter.sizes(&input)?;
    let strides = emitter.strides(&input)?;
    // The dimensions from outermost to innermost by stride, as empty_like preserves them.
    let mut order: Vec<i64> = (0..sizes.len() as i64).collect();
    order.sort_by(|&a, &b| {
        strides[b as usize]
            .cmp(&strides[a as usize])
            .then(a.cmp(&b))
    });
    let dtype = match original.get("dtype") {
        Some(Argument::ScalarType(dtype)) => *dtype,
        _ => emitter.dtype(&input)?,
    };
    Ok(vec![emitter.call(
        "torch.ops.aten.empty_permuted.default",
        vec![Argument::Ints(sizes), Argument::Ints(order)],
        vec![
            ("dtype", Argument::ScalarType(dtype)),
            ("layout", Argument::Layout(LAYOUT_STRIDED)),
            ("device", cpu()),
            ("pin_memory", Argument::Bool(false)),
        ],
    )?])
}

fn fill(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let value = original.required("value")?.clone();
    Ok(vec![emitter.call(
        "torch.ops.aten.full_like.default",
        vec![tensor(&input), value],
        vec![("pin_memory", Argument::Bool(false))],
    )?])
}

/// The dtype/layout/device/pin_memory keywords of a factory, with PyTorch's defaults.
fn factory_options(original: &Original, dtype: i64) -> Vec<(&'static str, Argument)> {
    let dtype = match original.get("dtype") {
        Some(Argument::ScalarType(given)) => *given,
        _ => dtype,
    };
    vec![
        ("dtype", Argument::ScalarType(dtype)),
        ("layout", Argument::Layout(LAYOUT_STRIDED)),
        ("device", cpu()),
        ("pin_memory", Argument::Bool(false)),
    ]
}

fn factory(emitter: &mut Emitter, original: &Original, value: Argument) -> Result<Vec<String>> {
    let size = original.required("size")?.clone();
    // float32, the default dtype.
    let keywords = factory_options(original, 7);
    Ok(vec![emitter.call(
        "torch.ops.aten.full.default",
        vec![size, value],
        keywords,
    )?])
}

fn new_factory(emitter: &mut Emitter, original: &Original, value: Argument) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let size = original.required("size")?.clone();
    let keywords = factory_options(original, emitter.dtype(&input)?);
    Ok(vec![emitter.call(
        "torch.ops.aten.full.default",
        vec![size, value],
        keywords,
    )?])
}

fn arange(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let start = original.arg_or("start", Argument::Int(0));
    let end = original.required("end")?.clone();
    let mut keywords = Vec::new();
    if let Some(dtype @ Argument::ScalarType(_)) = original.get("dtype") {
        keywords.push(("dtype", dtype.clone()));
    }
    keywords.push(("layout", Argument::Layout(LAYOUT_STRIDED)));
    keywords.push(("device", cpu()));
    keywords.push(("pin_memory", Argument::Bool(false)));
    Ok(vec![emitter.call(
        "torch.ops.aten.arange.start_step",
        vec![start, end],
        keywords,
    )?])
}

fn lift_fresh_copy(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    Ok(vec![emitter.call(
        "torch.ops.aten.clone.default",
        vec![tensor(&input)],
        vec![],
    )?])
}

fn masked_fill(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let mask = original.tensor("mask")?;
    let value = original.required("value")?.clone();
    let dtype = emitter.dtype(&input)?;
    let filler = emitter.call(
        "torch.ops.aten.scalar_tensor.default",
        vec![value],
        vec![
            ("dtype", Argument::ScalarType(dtype)),
            ("layout", Argument::Layout(LAYOUT_STRIDED)),
            ("device", cpu()),
        ],
    )?;
    let mut out = emitter.call(
        "torch.ops.aten.where.self",
        vec![tensor(&mask), tensor(&filler), tensor(&input)],
        vec![],
    )?;
    // masked_fill always returns a contiguous tensor.
    if !emitter.is_contiguous(&out)? {
        out = emitter.call(
            "torch.ops.aten.clone.default",
            vec![tensor(&out)],
            vec![(
                "memory_format",
                Argument::MemoryFormat(super::emitter::MEMORY_FORMAT_CONTIGUOUS),
            )],
        )?;
    }
    Ok(vec![out])
}
