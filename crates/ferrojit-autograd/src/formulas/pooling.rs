//! Derivatives of the pooling operators ferrojit has no dedicated backward kernel for:
//! max pooling with indices (1-d, 3-d, adaptive) scatters the gradient back through the
//! indices; 1-d average pooling runs the 2-d backward kernels on a height-1 plane; 3-d
//! average pooling, plain or adaptive, is a 2-d pooling over (H, W) followed by a pooling over
//! D (the window weights factor per dimension), so its backward is the two 2-d backward
//! kernels in reverse order.

use ferrojit_runtime::autograd::GradModeGuard;
use ferrojit_runtime::{IValue, Result};

use super::support::refuse;
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call, call1, int, ints, reshape};

/// Leading (batch and channel) element count and the sizes of the last `spatial` dims.
fn split_sizes(sizes: &[usize], spatial: usize) -> Result<(usize, Vec<usize>)> {
    if sizes.len() < spatial + 1 {
        return Err(refuse(format!(
            "pooling backward: expected an input of at least {} dimensions, got {}",
            spatial + 1,
            sizes.len()
        )));
    }
    let split = sizes.len() - spatial;
    Ok((sizes[..split].iter().product(), sizes[split..].to_vec()))
}

/// The indices output of a max pooling, recomputed from the saved input without recording.
fn pooling_indices(name: &str, input: &FormulaInput) -> Result<IValue> {
    let _no_grad = GradModeGuard::new(false);
    call(name, input.arguments.to_vec())?
        .into_iter()
        .nth(1)
        .ok_or_else(|| refuse(format!("autograd: {name} returned no indices")))
}

/// Adds each output gradient into the input element its index names (indices are flat
/// positions within one (batch, channel) plane, as PyTorch's max pooling returns them).
fn scatter_through_indices(input: &FormulaInput, name: &str, spatial: usize) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let (planes, plane_sizes) = split_sizes(&sizes, spatial)?;
    let plane: usize = plane_sizes.iter().product();
    let indices = pooling_indices(name, input)?;
    let grad = input.grad(0)?;
    let dtype = call::tensor(grad)?.dtype();
    let outputs = call::tensor(grad)?.numel() / planes.max(1);
    let flat_grad = reshape(grad, &[planes, outputs])?;
    let flat_indices = reshape(&indices, &[planes, outputs])?;
    let summed = call1(
        "aten::scatter_add",
        vec![
            call::zeros(&[planes, plane], dtype)?,
            int(1),
            flat_indices,
            flat_grad,
        ],
    )?;
    let mut out = input.none();
    out[0] = Some(reshape(&summed, &sizes)?);
    Ok(out)
}

/// `max_pool1d(self, kernel_size, stride, padding, dilation, ceil_mode)`: the indices of
/// `max_pool1d_with_indices` on the same arguments.
fn max_pool1d(input: &FormulaInput) -> Result<Gradients> {
    scatter_through_indices(input, "aten::max_pool1d_with_indices", 1)
}

fn max_pool3d(input: &FormulaInput) -> Result<Gradients> {
    scatter_through_indices(input, "aten::max_pool3d_with_indices", 3)
}

fn max_pool1d_with_indices(input: &FormulaInput) -> Result<Gradients> {
    scatter_through_indices(input, "aten::max_pool1d_with_indices", 1)
}

/// Through `max_pool2d_with_indices_backward`, as `max_pool2d` (whose arguments it shares),
/// so that the double backward is that kernel's formula (zeros for `self`, as PyTorch's).
fn max_pool2d_with_indices(input: &FormulaInput) -> Result<Gradients> {
    super::nn::max_pool2d(input)
}

fn max_pool3d_with_indices(input: &FormulaInput) -> Result<Gradients> {
    scatter_through_indices(input, "aten::max_pool3d_with_indices", 3)
}

fn adaptive_max_pool1d(input: &FormulaInput) -> Result<Gradients> {
    scatter_through_indices(input, "aten::adaptive_max_pool1d", 1)
}

fn adaptive_max_pool2d(input: &FormulaInput) -> Result<Gradients> {
    scatter_through_indices(input, "aten::adaptive_max_pool2d", 2)
}

fn adaptive_max_pool3d(input: &FormulaInput) -> Result<Gradients> {
    scatter_through_indices(input, "aten::adaptive_max_pool3d", 3)
}

/// A per-dimension int list argument with `count` entries (a single value repeats; an empty
/// list takes `fallback`, as an empty stride means the kernel size).
fn per_dim(value: &IValue, count: usize, fallback: &[i64]) -> Result<Vec<i64>> {
    let values = match value {
        IValue::Int(single) => vec![*single],
        other => other.to_int_vec()?,
    };
    match values.len() {
        0 => Ok(fallback.to_vec()),
        1 => Ok(vec![values[0]; count]),
        n if n == count => Ok(values),
        n => Err(refuse(format!(
            "pooling backward: expected {count} values per dimension, got {n}"
        ))),
    }
}

/// `avg_pool2d_backward` on 4-D views: `grad` and `like` (whose shape is the input's) as
/// `[planes, 1, height, width]`.
#[allow(clippy::too_many_arguments)]
fn avg_pool2d_back(
    grad: &IValue,
    like: &IValue,
    kernel: [i64; 2],
    stride: [i64; 2],
    padding: [i64; 2],
    ceil_mode: &IValue,
    count_include_pad: &IValue,
    divisor_override: IValue,
) -> Result<IValue> {
    call1(
        "aten::avg_pool2d_backward",
        vec![
            grad.clone(),
            like.clone(),
            ints(&kernel),
            ints(&stride),
            ints(&padding),
            ceil_mode.clone(),
            count_include_pad.clone(),
            divisor_override,
        ],
    )
}

/// `avg_pool1d(self, kernel_size, stride, padding, ceil_mode, count_include_pad)`.
fn avg_pool1d(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let (planes, spatial) = split_sizes(&sizes, 1)?;
    let kernel = per_dim(input.argument(1)?, 1, &[])?;
    let stride = per_dim(input.argument(2)?, 1, &kernel)?;
    let padding = per_dim(input.argument(3)?, 1, &[0])?;
    let (Some(&kernel), Some(&stride), Some(&padding)) =
        (kernel.first(), stride.first(), padding.first())
    else {
        return Err(refuse("avg_pool1d: kernel_size must have one value"));
    };
    let grad = input.grad(0)?;
    let out_length = call::sizes(grad)?.last().copied().unwrap_or(1);
    let grad_plane = reshape(grad, &[planes, 1, 1, out_length])?;
    let x = reshape(input.argument(0)?, &[planes, 1, 1, spatial[0]])?;
    let result = avg_pool2d_back(
        &grad_plane,
        &x,
        [1, kernel],
        [1, stride],
        [0, padding],
        input.argument(4)?,
        input.argument(5)?,
        IValue::None,
    )?;
    let mut out = input.none();
    out[0] = Some(reshape(&result, &sizes)?);
    Ok(out)
}

/// `avg_pool3d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
/// divisor_override)`: the (H, W) stage sums (or averages) and the D stage divides, so the
/// product of the two stages' divisors is the 3-d window's.
fn avg_pool3d(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let (planes, spatial) = split_sizes(&sizes, 3)?;
    let kernel = per_dim(input.argument(1)?, 3, &[])?;
    if kernel.len() != 3 {
        return Err(refuse(
            "avg_pool3d: kernel_size must either be a single int, or a tuple of three ints",
        ));
    }
    let stride = per_dim(input.argument(2)?, 3, &kernel)?;
    let padding = per_dim(input.argument(3)?, 3, &[0, 0, 0])?;
    let ceil_mode = input.argument(4)?;
    let count_include_pad = input.argument(5)?;
    let divisor = input.argument(6)?.clone();
    let (depth, height, width) = (spatial[0], spatial[1], spatial[2]);
    let grad = input.grad(0)?;
    let grad_sizes = call::sizes(grad)?;
    let out_spatial = &grad_sizes[grad_sizes.len() - 3..];
    let (out_depth, out_plane) = (out_spatial[0], out_spatial[1] * out_spatial[2]);
    // Undo the D stage: [planes, 1, D_out, H_out * W_out] back to D.
    let grad_depth = reshape(grad, &[planes, 1, out_depth, out_plane])?;
    let depth_like = call::zeros(&[planes, 1, depth, out_plane], call::tensor(grad)?.dtype())?;
    let through_depth = avg_pool2d_back(
        &grad_depth,
        &depth_like,
        [kernel[0], 1],
        [stride[0], 1],
        [padding[0], 0],
        ceil_mode,
        count_include_pad,
        divisor.clone(),
    )?;
    // Undo the (H, W) stage, which only sums when the divisor is given.
    let grad_planes = reshape(
        &through_depth,
        &[planes * depth, 1, out_spatial[1], out_spatial[2]],
    )?;
    let x = reshape(input.argument(0)?, &[planes * depth, 1, height, width])?;
    let plane_divisor = if divisor.is_none() {
        IValue::None
    } else {
        int(1)
    };
    let result = avg_pool2d_back(
        &grad_planes,
        &x,
        [kernel[1], kernel[2]],
        [stride[1], stride[2]],
        [padding[1], padding[2]],
        ceil_mode,
        count_include_pad,
        plane_divisor,
    )?;
    let mut out = input.none();
    out[0] = Some(reshape(&result, &sizes)?);
    Ok(out)
}

fn adaptive_avg_pool2d_back(grad: &IValue, like: &IValue) -> Result<IValue> {
    call1(
        "aten::_adaptive_avg_pool2d_backward",
        vec![grad.clone(), like.clone()],
    )
}

/// `adaptive_avg_pool1d(self, output_size)`.
fn adaptive_avg_pool1d(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let (planes, spatial) = split_sizes(&sizes, 1)?;
    let grad = input.grad(0)?;
    let out_length = call::sizes(grad)?.last().copied().unwrap_or(1);
    let grad_plane = reshape(grad, &[planes, 1, 1, out_length])?;
    let x = reshape(input.argument(0)?, &[planes, 1, 1, spatial[0]])?;
    let result = adaptive_avg_pool2d_back(&grad_plane, &x)?;
    let mut out = input.none();
    out[0] = Some(reshape(&result, &sizes)?);
    Ok(out)
}

/// `adaptive_avg_pool3d(self, output_size)`: (H, W) stage, then D stage.
fn adaptive_avg_pool3d(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let (planes, spatial) = split_sizes(&sizes, 3)?;
    let grad = input.grad(0)?;
    let grad_sizes = call::sizes(grad)?;
    let out_spatial = &grad_sizes[grad_sizes.len() - 3..];
    let out_plane = out_spatial[1] * out_spatial[2];
    let grad_depth = reshape(grad, &[planes, 1, out_spatial[0], out_plane])?;
    let depth_like = call::zeros(
        &[planes, 1, spatial[0], out_plane],
        call::tensor(grad)?.dtype(),
    )?;
    let through_depth = adaptive_avg_pool2d_back(&grad_depth, &depth_like)?;
    let grad_planes = reshape(
        &through_depth,
        &[planes * spatial[0], 1, out_spatial[1], out_spatial[2]],
    )?;
    let x = reshape(
        input.argument(0)?,
        &[planes * spatial[0], 1, spatial[1], spatial[2]],
    )?;
    let result = adaptive_avg_pool2d_back(&grad_planes, &x)?;
    let mut out = input.none();
    out[0] = Some(reshape(&result, &sizes)?);
    Ok(out)
}

formula_table![
    (
        "aten::max_pool1d",
        "MaxPool1DWithIndicesBackward0",
        max_pool1d,
        &[0]
    ),
    (
        "aten::max_pool3d",
        "MaxPool3DWithIndicesBackward0",
        max_pool3d,
        &[0]
    ),
    (
        "aten::max_pool1d_with_indices",
        "MaxPool1DWithIndicesBackward0",
        max_pool1d_with_indices,
        &[0]
    ),
    (
        "aten::max_pool2d_with_indices",
        "MaxPool2DWithIndicesBackward0",
        max_pool2d_with_indices,
        &[0]
    ),
    (
        "aten::max_pool3d_with_indices",
        "MaxPool3DWithIndicesBackward0",
        max_pool3d_with_indices,
        &[0]
    ),
    (
        "aten::adaptive_max_pool1d",
        "AdaptiveMaxPool1DBackward0",
        adaptive_max_pool1d,
        &[0]
    ),
    (
        "aten::adaptive_max_pool2d",
        "AdaptiveMaxPool2DBackward0",
        adaptive_max_pool2d,
        &[0]
    ),
    (
        "aten::adaptive_max_pool3d",
        "AdaptiveMaxPool3DBackward0",
        adaptive_max_pool3d,
        &[0]
    ),
    ("aten::avg_pool1d", "AvgPool2DBackward0", avg_pool1d, &[0]),
    ("aten::avg_pool3d", "AvgPool3DBackward0", avg_pool3d, &[0]),
    (
        "aten::adaptive_avg_pool1d",
        "AdaptiveAvgPool2DBackward0",
        adaptive_avg_pool1d,
        &[0]
    ),
    (
        "aten::adaptive_avg_pool3d",
        "AdaptiveAvgPool3DBackward0",
        adaptive_avg_pool3d,
        &[0]
    ),
];
