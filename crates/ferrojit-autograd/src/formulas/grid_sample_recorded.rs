//! Grid sampling's 2-d bilinear gradient built from recorded operators, used when the backward
//! is itself recorded (`create_graph=True`) so that it can be differentiated again, as
//! PyTorch differentiates `grid_sampler_2d_backward`. The corner positions (floors), which
//! corners fall inside the image and the border clip's slope are piecewise constant and are
//! computed from the values; the fractional positions, the corner weights, the gathered pixels
//! and the output gradient stay in the graph. The first-order path (`grid_sample.rs`) reads
//! values directly and is faster.

use ferrojit_runtime::{IValue, Result};
use ferrojit_tensor::{DType, Tensor};

use super::{FormulaInput, Gradients};
use crate::call::{self, call1, float, int, mul, reshape, sub};

/// A constant `[rows, columns]` tensor (no history) in `dtype`.
fn constant(values: Vec<f64>, sizes: &[usize], dtype: DType) -> Result<IValue> {
    Ok(call::fresh(
        Tensor::from_vec(values, sizes)?.to_dtype(dtype),
    ))
}

/// Pixel coordinates `[N, P]` along one grid axis (`axis` 0: x over `size` columns, 1: y over
/// rows), clipped into the image for border padding, and the clip's slope per point.
fn pixel_coordinates(
    grid: &IValue,
    axis: i64,
    size: usize,
    align_corners: bool,
    border: bool,
) -> Result<(IValue, Vec<f64>, f64)> {
    let normalized = call1("aten::select.int", vec![grid.clone(), int(2), int(axis)])?;
    let extent = size as f64;
    let scale = if align_corners {
        (extent - 1.0) / 2.0
    } else {
        extent / 2.0
    };
    let unclipped = call::add_scalar(&call::scale(&normalized, scale)?, (extent - 1.0) / 2.0)?;
    let raw = call::tensor(&unclipped)?.to_f64_vec();
    if !border {
        return Ok((unclipped, vec![1.0; raw.len()], scale));
    }
    let limit = extent - 1.0;
    let slope = raw
        .iter()
        .map(|&value| f64::from(u8::from(value > 0.0 && value < limit)))
        .collect();
    let clipped = call1("aten::clamp", vec![unclipped, float(0.0), float(limit)])?;
    Ok((clipped, slope, scale))
}

/// `grid_sampler_2d(input, grid, 0 (bilinear), padding_mode (0 zeros, 1 border),
/// align_corners)`'s gradients, recorded.
pub(super) fn grid_sampler_2d(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let grid_sizes = input.sizes(1)?;
    let (batch, channels, height, width) = (sizes[0], sizes[1], sizes[2], sizes[3]);
    let points = grid_sizes[1] * grid_sizes[2];
    let border = input.int(3)? == 1;
    let align_corners = input.argument(4)?.to_bool()?;
    let dtype = input.dtype(0)?;
    let grid = reshape(input.argument(1)?, &[batch, points, 2])?;
    let (x, x_slope, x_scale) = pixel_coordinates(&grid, 0, width, align_corners, border)?;
    let (y, y_slope, y_scale) = pixel_coordinates(&grid, 1, height, align_corners, border)?;
    let x_floor: Vec<f64> = call::tensor(&x)?
        .to_f64_vec()
        .iter()
        .map(|v| v.floor())
        .collect();
    let y_floor: Vec<f64> = call::tensor(&y)?
        .to_f64_vec()
        .iter()
        .map(|v| v.floor())
        .collect();
    let fx = sub(&x, &constant(x_floor.clone(), &[batch, points], dtype)?)?;
    let fy = sub(&y, &constant(y_floor.clone(), &[batch, points], dtype)?)?;
    let (gx, gy) = (call::rsub_scalar(&fx, 1.0)?, call::rsub_scalar(&fy, 1.0)?);
    // (column offset, row offset, weight, d weight / d x, d weight / d y) per corner.
    let corners = [
        (0.0, 0.0, mul(&gx, &gy)?, call::neg(&gy)?, call::neg(&gx)?),
        (1.0, 0.0, mul(&fx, &gy)?, gy.clone(), call::neg(&fx)?),
        (0.0, 1.0, mul(&gx, &fy)?, call::neg(&fy)?, gx.clone()),
        (1.0, 1.0, mul(&fx, &fy)?, fy.clone(), fx.clone()),
    ];
    let values = reshape(input.argument(0)?, &[batch, channels, height * width])?;
    let grad = reshape(input.grad(0)?, &[batch, channels, points])?;
    let mut grad_input = call::zeros(&[batch, channels, height * width], dtype)?;
    let mut along_x: Option<IValue> = None;
    let mut along_y: Option<IValue> = None;
    for (dx, dy, weight, weight_dx, weight_dy) in corners {
        let mut flat = Vec::with_capacity(batch * points);
        let mut inside = Vec::with_capacity(batch * points);
        for (column, row) in x_floor.iter().zip(&y_floor) {
            let (column, row) = (column + dx, row + dy);
            let within =
                column >= 0.0 && row >= 0.0 && column < width as f64 && row < height as f64;
            inside.push(f64::from(u8::from(within)));
            flat.push(if within {
                row as i64 * width as i64 + column as i64
            } else {
                0
            });
        }
        let index = call::fresh(Tensor::from_vec(flat, &[batch, 1, points])?);
        let index = call::expand(&index, &[batch, channels, points])?;
        let inside = constant(inside, &[batch, points], dtype)?;
        if input.needs(0) {
            let kept = call1("aten::unsqueeze", vec![mul(&weight, &inside)?, int(1)])?;
            let spread = mul(&grad, &kept)?;
            grad_input = call1(
                "aten::scatter_add",
                vec![grad_input, int(2), index.clone(), spread],
            )?;
        }
        if input.needs(1) {
            let pixels = call1("aten::gather", vec![values.clone(), int(2), index])?;
            let summed = call::sum_dims(&mul(&grad, &pixels)?, &[1], false)?;
            let summed = mul(&summed, &inside)?;
            let add = |total: Option<IValue>, term: IValue| -> Result<Option<IValue>> {
                Ok(Some(match total {
                    Some(total) => call::add(&total, &term)?,
                    None => term,
                }))
            };
            along_x = add(along_x, mul(&summed, &weight_dx)?)?;
            along_y = add(along_y, mul(&summed, &weight_dy)?)?;
        }
    }
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(reshape(&grad_input, &sizes)?);
    }
    if let (true, Some(along_x), Some(along_y)) = (input.needs(1), along_x, along_y) {
        let x_chain = constant(
            x_slope.iter().map(|slope| slope * x_scale).collect(),
            &[batch, points],
            dtype,
        )?;
        let y_chain = constant(
            y_slope.iter().map(|slope| slope * y_scale).collect(),
            &[batch, points],
            dtype,
        )?;
        let columns = vec![
            call1("aten::unsqueeze", vec![mul(&along_x, &x_chain)?, int(2)])?,
            call1("aten::unsqueeze", vec![mul(&along_y, &y_chain)?, int(2)])?,
        ];
        let stacked = call1("aten::cat", vec![call::tensor_list(columns), int(2)])?;
        out[1] = Some(reshape(&stacked, &grid_sizes)?);
    }
    Ok(out)
}
