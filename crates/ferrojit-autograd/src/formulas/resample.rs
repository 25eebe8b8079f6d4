//! Derivatives of the operators that move or blend input elements by position: padding (all
//! modes), nearest-neighbour upsampling and pixel (un)shuffle copy elements, so the gradient
//! is added back to the element each output came from; linear, bilinear, bicubic and
//! trilinear upsampling blend along each spatial dimension independently, so the gradient is
//! the transpose of each dimension's interpolation matrix applied in turn.
//!
//! Both read what the forward kernel does instead of re-deriving its index arithmetic (scale
//! factors, `align_corners`, reflection rules): the copy operators are run once on the element
//! positions, the blending ones once per dimension on a one-hot basis of that dimension.

use ferrojit_runtime::autograd::GradModeGuard;
use ferrojit_runtime::{IValue, Result};
use ferrojit_tensor::{DType, Tensor};

use super::support::refuse;
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call1, int, reshape};

/// Runs `name` on the saved arguments with `self` replaced by `probe`, without recording.
fn run_on(
    name: &str,
    input: &FormulaInput,
    probe: Tensor,
    replace: &[(usize, IValue)],
) -> Result<Tensor> {
    let _no_grad = GradModeGuard::new(false);
    let mut arguments = input.arguments.to_vec();
    arguments[0] = call::fresh(probe);
    for (index, value) in replace {
        if let Some(slot) = arguments.get_mut(*index) {
            if !slot.is_none() {
                *slot = value.clone();
            }
        }
    }
    let result = call1(name, arguments)?;
    Ok(call::tensor(&result)?.as_ref().clone())
}

/// The gradient of an operator whose every output element is a copy of one input element
/// (or a constant): the operator runs on `1..=n` (constants made 0) to learn each output's
/// source, and the output gradients are summed into their sources.
fn copied_back(
    input: &FormulaInput,
    name: &str,
    constant_index: Option<usize>,
) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let count: usize = sizes.iter().product();
    let positions: Vec<f64> = (1..=count).map(|position| position as f64).collect();
    let replace: Vec<(usize, IValue)> = constant_index
        .map(|index| (index, IValue::Double(0.0)))
        .into_iter()
        .collect();
    let sources = run_on(name, input, Tensor::from_vec(positions, &sizes)?, &replace)?;
    let source_index: Vec<i64> = sources
        .to_f64_vec()
        .into_iter()
        .map(|position| position as i64)
        .collect();
    let source_count = source_index.len();
    let index = call::fresh(Tensor::from_vec(source_index, &[source_count])?);
    let grad = input.grad(0)?;
    let dtype = call::tensor(grad)?.dtype();
    let flat_grad = reshape(grad, &[source_count])?;
    // Slot 0 collects what came from constants and is dropped.
    let summed = call1(
        "aten::index_add",
        vec![call::zeros(&[count + 1], dtype)?, int(0), index, flat_grad],
    )?;
    let kept = call1(
        "aten::narrow",
        vec![summed, int(0), int(1), int(count as i64)],
    )?;
    let mut out = input.none();
    out[0] = Some(reshape(&kept, &sizes)?);
    Ok(out)
}

/// `pad(self, pad, mode, value)`.
fn pad(input: &FormulaInput) -> Result<Gradients> {
    copied_back(input, "aten::pad", Some(3))
}

macro_rules! copy_formula {
    ($function:ident, $name:literal) => {
        fn $function(input: &FormulaInput) -> Result<Gradients> {
            copied_back(input, $name, None)
        }
    };
}

copy_formula!(reflection_pad1d, "aten::reflection_pad1d");
copy_formula!(reflection_pad2d, "aten::reflection_pad2d");
copy_formula!(reflection_pad3d, "aten::reflection_pad3d");
copy_formula!(replication_pad1d, "aten::replication_pad1d");
copy_formula!(replication_pad2d, "aten::replication_pad2d");
copy_formula!(replication_pad3d, "aten::replication_pad3d");
copy_formula!(pad_circular, "aten::_pad_circular");
copy_formula!(pixel_shuffle, "aten::pixel_shuffle");
copy_formula!(pixel_unshuffle, "aten::pixel_unshuffle");
copy_formula!(upsample_nearest1d_vec, "aten::upsample_nearest1d.vec");
copy_formula!(upsample_nearest2d_vec, "aten::upsample_nearest2d.vec");
copy_formula!(upsample_nearest3d_vec, "aten::upsample_nearest3d.vec");
copy_formula!(
    upsample_nearest_exact1d_vec,
    "aten::_upsample_nearest_exact1d.vec"
);
copy_formula!(
    upsample_nearest_exact2d_vec,
    "aten::_upsample_nearest_exact2d.vec"
);
copy_formula!(
    upsample_nearest_exact3d_vec,
    "aten::_upsample_nearest_exact3d.vec"
);
copy_formula!(upsample_nearest1d, "aten::upsample_nearest1d");
copy_formula!(upsample_nearest2d, "aten::upsample_nearest2d");
copy_formula!(upsample_nearest3d, "aten::upsample_nearest3d");

/// The scale factors of an `upsample_*.vec` call (`None` when the output size is given).
fn scale_factors(value: &IValue) -> Result<Option<Vec<f64>>> {
    match value {
        IValue::None => Ok(None),
        other => Ok(Some(other.to_double_vec()?)),
    }
}

/// The interpolation matrix of spatial dimension `dim` of an `upsample_*.vec(input,
/// output_size, align_corners, scale_factors)` call, transposed: `[out, in]`, entry `(o, i)`
/// the weight of input position `i` in output position `o`. The other spatial dimensions are
/// shrunk to one element where that leaves this dimension's weights unchanged (their weights
/// sum to one, and position 0 of them is read).
fn interpolation_matrix(input: &FormulaInput, name: &str, dim: usize) -> Result<Tensor> {
    let sizes = input.sizes(0)?;
    let spatial = &sizes[2..];
    let length = spatial[dim];
    let output_size = input.argument(1)?;
    let scales = scale_factors(input.argument(3)?)?;
    let mut probe_sizes = vec![length, 1];
    let mut replace = Vec::new();
    match &scales {
        None => {
            let mut wanted = output_size.to_int_vec()?;
            for (other, slot) in wanted.iter_mut().enumerate() {
                if other != dim {
                    *slot = 1;
                }
            }
            probe_sizes.extend(
                spatial
                    .iter()
                    .enumerate()
                    .map(|(other, &size)| if other == dim { size } else { 1 }),
            );
            replace.push((1, IValue::int_list(&wanted)));
        }
        Some(factors) => {
            // A dimension shrunk by its scale keeps its size, so that it keeps an element.
            probe_sizes.extend(spatial.iter().enumerate().map(|(other, &size)| {
                let factor = factors.get(other).copied().unwrap_or(1.0);
                if other == dim || factor < 1.0 {
                    size
                } else {
                    1
                }
            }));
        }
    }
    let plane: usize = probe_sizes[2..].iter().product();
    let mut basis = vec![0.0f64; length * plane];
    // One-hot along `dim`, constant along the others.
    let inner: usize = probe_sizes[2 + dim + 1..].iter().product();
    for (position, value) in basis.iter_mut().enumerate() {
        let sample = position / plane;
        let within = position % plane;
        if (within / inner) % length == sample {
            *value = 1.0;
        }
    }
    let result = run_on(
        name,
        input,
        Tensor::from_vec(basis, &probe_sizes)?,
        &replace,
    )?;
    let result_sizes = result.sizes().to_vec();
    let values = result.to_f64_vec();
    let out_spatial = &result_sizes[2..];
    let out_length = out_spatial[dim];
    let out_plane: usize = out_spatial.iter().product();
    let out_inner: usize = out_spatial[dim + 1..].iter().product();
    let mut matrix = vec![0.0f64; out_length * length];
    for sample in 0..length {
        for position in 0..out_length {
            matrix[position * length + sample] = values[sample * out_plane + position * out_inner];
        }
    }
    Ok(Tensor::from_vec(matrix, &[out_length, length])?)
}

/// The gradient of a separable interpolation: each spatial dimension's transposed weights
/// applied to the gradient in turn.
fn interpolated_back(input: &FormulaInput, name: &str) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    if sizes.len() < 3 {
        return Err(refuse(format!(
            "{name}: expected a batched input of rank 3 or more, got rank {}",
            sizes.len()
        )));
    }
    let mut grad = input.grad(0)?.clone();
    let dtype = call::tensor(&grad)?.dtype();
    for dim in 0..sizes.len() - 2 {
        let mut matrix = call::fresh(interpolation_matrix(input, name, dim)?);
        if dtype != DType::Float64 {
            matrix = call1(
                "aten::to.dtype",
                vec![matrix, int(dtype.scalar_type_index())],
            )?;
        }
        let axis = (dim + 2) as i64;
        let last = call1("aten::movedim.int", vec![grad, int(axis), int(-1)])?;
        let blended = call::matmul(&last, &matrix)?;
        grad = call1("aten::movedim.int", vec![blended, int(-1), int(axis)])?;
    }
    let mut out = input.none();
    out[0] = Some(grad);
    Ok(out)
}

macro_rules! interpolation_formula {
    ($function:ident, $name:literal) => {
        fn $function(input: &FormulaInput) -> Result<Gradients> {
            interpolated_back(input, $name)
        }
    };
}

interpolation_formula!(upsample_linear1d_vec, "aten::upsample_linear1d.vec");
interpolation_formula!(upsample_bilinear2d_vec, "aten::upsample_bilinear2d.vec");
interpolation_formula!(upsample_bicubic2d_vec, "aten::upsample_bicubic2d.vec");
interpolation_formula!(upsample_trilinear3d_vec, "aten::upsample_trilinear3d.vec");

formula_table![
    ("aten::pad", "PadBackward0", pad, &[]),
    (
        "aten::reflection_pad1d",
        "ReflectionPad1DBackward0",
        reflection_pad1d,
        &[]
    ),
    (
        "aten::reflection_pad2d",
        "ReflectionPad2DBackward0",
        reflection_pad2d,
        &[]
    ),
    (
        "aten::reflection_pad3d",
        "ReflectionPad3DBackward0",
        reflection_pad3d,
        &[]
    ),
    (
        "aten::replication_pad1d",
        "ReplicationPad1DBackward0",
        replication_pad1d,
        &[]
    ),
    (
        "aten::replication_pad2d",
        "ReplicationPad2DBackward0",
        replication_pad2d,
        &[]
    ),
    (
        "aten::replication_pad3d",
        "ReplicationPad3DBackward0",
        replication_pad3d,
        &[]
    ),
    (
        "aten::_pad_circular",
        "PadCircularBackward0",
        pad_circular,
        &[]
    ),
    (
        "aten::pixel_shuffle",
        "PixelShuffleBackward0",
        pixel_shuffle,
        &[]
    ),
    (
        "aten::pixel_unshuffle",
        "PixelUnshuffleBackward0",
        pixel_unshuffle,
        &[]
    ),
    (
        "aten::upsample_nearest1d.vec",
        "UpsampleNearest1DBackward0",
        upsample_nearest1d_vec,
        &[]
    ),
    (
        "aten::upsample_nearest2d.vec",
        "UpsampleNearest2DBackward0",
        upsample_nearest2d_vec,
        &[]
    ),
    (
        "aten::upsample_nearest3d.vec",
        "UpsampleNearest3DBackward0",
        upsample_nearest3d_vec,
        &[]
    ),
    (
        "aten::_upsample_nearest_exact1d.vec",
        "UpsampleNearestExact1DBackward0",
        upsample_nearest_exact1d_vec,
        &[]
    ),
    (
        "aten::_upsample_nearest_exact2d.vec",
        "UpsampleNearestExact2DBackward0",
        upsample_nearest_exact2d_vec,
        &[]
    ),
    (
        "aten::_upsample_nearest_exact3d.vec",
        "UpsampleNearestExact3DBackward0",
        upsample_nearest_exact3d_vec,
        &[]
    ),
    (
        "aten::upsample_nearest1d",
        "UpsampleNearest1DBackward0",
        upsample_nearest1d,
        &[]
    ),
    (
        "aten::upsample_nearest2d",
        "UpsampleNearest2DBackward0",
        upsample_nearest2d,
        &[]
    ),
    (
        "aten::upsample_nearest3d",
        "UpsampleNearest3DBackward0",
        upsample_nearest3d,
        &[]
    ),
    (
        "aten::upsample_linear1d.vec",
        "UpsampleLinear1DBackward0",
        upsample_linear1d_vec,
        &[]
    ),
    (
        "aten::upsample_bilinear2d.vec",
        "UpsampleBilinear2DBackward0",
        upsample_bilinear2d_vec,
        &[]
    ),
    (
        "aten::upsample_bicubic2d.vec",
        "UpsampleBicubic2DBackward0",
        upsample_bicubic2d_vec,
        &[]
    ),
    (
        "aten::upsample_trilinear3d.vec",
        "UpsampleTrilinear3DBackward0",
        upsample_trilinear3d_vec,
        &[]
    ),
];
