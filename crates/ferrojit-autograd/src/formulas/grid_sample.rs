//! Derivatives of grid sampling (`grid_sampler_2d`, `grid_sampler_3d`, `grid_sampler`) with
//! bilinear (trilinear) interpolation and zeros or border padding, after PyTorch's
//! `grid_sampler_*_backward` kernels: each output is a weighted sum of (up to) four input
//! pixels (eight voxels), so the input's gradient spreads the output gradient over them with
//! the same weights, and the grid's gradient is the change of that sum as the sampling point
//! moves. Computed directly on the values; a recorded 2-d backward (`create_graph=True`)
//! takes `grid_sample_recorded.rs`, which can be differentiated again.

use ferrojit_runtime::{IValue, Result};
use ferrojit_tensor::{DType, Tensor};

use super::support::refuse;
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call1, int};

/// A pixel coordinate from a normalized one (`[-1, 1]` spans the image), and its derivative.
fn unnormalize(coordinate: f64, size: usize, align_corners: bool) -> (f64, f64) {
    let size = size as f64;
    if align_corners {
        ((coordinate + 1.0) / 2.0 * (size - 1.0), (size - 1.0) / 2.0)
    } else {
        (((coordinate + 1.0) * size - 1.0) / 2.0, size / 2.0)
    }
}

/// Border padding clips the coordinate into the image (no movement outside).
fn clip(coordinate: f64, size: usize) -> (f64, f64) {
    let limit = size as f64 - 1.0;
    if coordinate <= 0.0 {
        (0.0, 0.0)
    } else if coordinate >= limit {
        (limit, 0.0)
    } else {
        (coordinate, 1.0)
    }
}

fn as_dtype(tensor: Tensor, dtype: DType) -> Result<IValue> {
    let value = call::fresh(tensor);
    if dtype == DType::Float64 {
        Ok(value)
    } else {
        call1(
            "aten::to.dtype",
            vec![value, int(dtype.scalar_type_index())],
        )
    }
}

/// `grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners)`.
fn grid_sampler_2d(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let grid_sizes = input.sizes(1)?;
    if sizes.len() != 4 || grid_sizes.len() != 4 || grid_sizes[3] != 2 {
        return Err(refuse(format!(
            "grid_sampler(): expected 4D input and grid with last dimension 2, but got input \
             of size {sizes:?} and grid of size {grid_sizes:?}"
        )));
    }
    let interpolation = input.int(2)?;
    let padding = input.int(3)?;
    let align_corners = input.argument(4)?.to_bool()?;
    if interpolation != 0 || padding > 1 {
        return Err(refuse(
            "the derivative for 'grid_sampler_2d' is implemented for bilinear interpolation \
             with zeros or border padding only",
        ));
    }
    if ferrojit_runtime::autograd::is_grad_enabled() {
        // A recorded backward (`create_graph=True`): differentiable again.
        return super::grid_sample_recorded::grid_sampler_2d(input);
    }
    let (batch, channels, height, width) = (sizes[0], sizes[1], sizes[2], sizes[3]);
    let points = grid_sizes[1] * grid_sizes[2];
    let values = call::tensor(input.argument(0)?)?.to_f64_vec();
    let grid = call::tensor(input.argument(1)?)?.to_f64_vec();
    let grad = call::tensor(input.grad(0)?)?.to_f64_vec();
    let mut grad_input = vec![0.0f64; values.len()];
    let mut grad_grid = vec![0.0f64; grid.len()];
    let plane = height * width;
    for n in 0..batch {
        for p in 0..points {
            let slot = (n * points + p) * 2;
            let (mut x, mut dx) = unnormalize(grid[slot], width, align_corners);
            let (mut y, mut dy) = unnormalize(grid[slot + 1], height, align_corners);
            if padding == 1 {
                let (clipped, slope) = clip(x, width);
                x = clipped;
                dx *= slope;
                let (clipped, slope) = clip(y, height);
                y = clipped;
                dy *= slope;
            }
            let (x0, y0) = (x.floor(), y.floor());
            let (fx, fy) = (x - x0, y - y0);
            // (column, row, weight, d weight / dx, d weight / dy) of the four corners.
            let corners = [
                (x0, y0, (1.0 - fx) * (1.0 - fy), -(1.0 - fy), -(1.0 - fx)),
                (x0 + 1.0, y0, fx * (1.0 - fy), 1.0 - fy, -fx),
                (x0, y0 + 1.0, (1.0 - fx) * fy, -fy, 1.0 - fx),
                (x0 + 1.0, y0 + 1.0, fx * fy, fy, fx),
            ];
            let (mut along_x, mut along_y) = (0.0, 0.0);
            for (column, row, weight, weight_dx, weight_dy) in corners {
                let inside =
                    column >= 0.0 && row >= 0.0 && column < width as f64 && row < height as f64;
                if !inside {
                    continue;
                }
                let pixel = row as usize * width + column as usize;
                for c in 0..channels {
                    let g = grad[(n * channels + c) * points + p];
                    let at = (n * channels + c) * plane + pixel;
                    grad_input[at] += g * weight;
                    along_x += g * values[at] * weight_dx;
                    along_y += g * values[at] * weight_dy;
                }
            }
            grad_grid[slot] = along_x * dx;
            grad_grid[slot + 1] = along_y * dy;
        }
    }
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(as_dtype(
            Tensor::from_vec(grad_input, &sizes)?,
            input.dtype(0)?,
        )?);
    }
    if input.needs(1) {
        out[1] = Some(as_dtype(
            Tensor::from_vec(grad_grid, &grid_sizes)?,
            input.dtype(1)?,
        )?);
    }
    Ok(out)
}

/// `grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners)`:
/// trilinear, each output a weighted sum of (up to) eight input voxels.
fn grid_sampler_3d(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let grid_sizes = input.sizes(1)?;
    if sizes.len() != 5 || grid_sizes.len() != 5 || grid_sizes[4] != 3 {
        return Err(refuse(format!(
            "grid_sampler(): expected 5D input and grid with last dimension 3, but got input \
             of size {sizes:?} and grid of size {grid_sizes:?}"
        )));
    }
    let padding = input.int(3)?;
    let align_corners = input.argument(4)?.to_bool()?;
    if input.int(2)? != 0 || padding > 1 {
        return Err(refuse(
            "the derivative for 'grid_sampler_3d' is implemented for bilinear interpolation \
             with zeros or border padding only",
        ));
    }
    let (batch, channels) = (sizes[0], sizes[1]);
    // Per axis: x along W, y along H, z along D.
    let extent = [sizes[4], sizes[3], sizes[2]];
    let points = grid_sizes[1] * grid_sizes[2] * grid_sizes[3];
    let values = call::tensor(input.argument(0)?)?.to_f64_vec();
    let grid = call::tensor(input.argument(1)?)?.to_f64_vec();
    let grad = call::tensor(input.grad(0)?)?.to_f64_vec();
    let mut grad_input = vec![0.0f64; values.len()];
    let mut grad_grid = vec![0.0f64; grid.len()];
    let volume = extent[0] * extent[1] * extent[2];
    for n in 0..batch {
        for p in 0..points {
            let slot = (n * points + p) * 3;
            let mut position = [0.0f64; 3];
            let mut slope = [0.0f64; 3];
            for axis in 0..3 {
                let (mut coordinate, mut step) =
                    unnormalize(grid[slot + axis], extent[axis], align_corners);
                if padding == 1 {
                    let (clipped, inside) = clip(coordinate, extent[axis]);
                    coordinate = clipped;
                    step *= inside;
                }
                position[axis] = coordinate;
                slope[axis] = step;
            }
            let base = position.map(f64::floor);
            let fraction = [
                position[0] - base[0],
                position[1] - base[1],
                position[2] - base[2],
            ];
            let mut along = [0.0f64; 3];
            for corner in 0..8usize {
                let offsets = [corner & 1, (corner >> 1) & 1, (corner >> 2) & 1];
                let mut coordinates = [0usize; 3];
                let mut inside = true;
                let mut factors = [0.0f64; 3];
                let mut derivatives = [0.0f64; 3];
                for axis in 0..3 {
                    let at = base[axis] + offsets[axis] as f64;
                    inside &= at >= 0.0 && at < extent[axis] as f64;
                    coordinates[axis] = at.max(0.0) as usize;
                    if offsets[axis] == 1 {
                        factors[axis] = fraction[axis];
                        derivatives[axis] = 1.0;
                    } else {
                        factors[axis] = 1.0 - fraction[axis];
                        derivatives[axis] = -1.0;
                    }
                }
                if !inside {
                    continue;
                }
                let weight = factors[0] * factors[1] * factors[2];
                let weight_derivative = [
                    derivatives[0] * factors[1] * factors[2],
                    factors[0] * derivatives[1] * factors[2],
                    factors[0] * factors[1] * derivatives[2],
                ];
                let voxel =
                    (coordinates[2] * extent[1] + coordinates[1]) * extent[0] + coordinates[0];
                for c in 0..channels {
                    let g = grad[(n * channels + c) * points + p];
                    let at = (n * channels + c) * volume + voxel;
                    grad_input[at] += g * weight;
                    for axis in 0..3 {
                        along[axis] += g * values[at] * weight_derivative[axis];
                    }
                }
            }
            for axis in 0..3 {
                grad_grid[slot + axis] = along[axis] * slope[axis];
            }
        }
    }
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(as_dtype(
            Tensor::from_vec(grad_input, &sizes)?,
            input.dtype(0)?,
        )?);
    }
    if input.needs(1) {
        out[1] = Some(as_dtype(
            Tensor::from_vec(grad_grid, &grid_sizes)?,
            input.dtype(1)?,
        )?);
    }
    Ok(out)
}

/// `grid_sampler(input, grid, ...)`: the 2-d or 3-d sampler by the input's rank.
fn grid_sampler(input: &FormulaInput) -> Result<Gradients> {
    if input.sizes(0)?.len() == 5 {
        grid_sampler_3d(input)
    } else {
        grid_sampler_2d(input)
    }
}

formula_table![
    (
        "aten::grid_sampler_2d",
        "GridSampler2DBackward0",
        grid_sampler_2d,
        &[0, 1]
    ),
    (
        "aten::grid_sampler_3d",
        "GridSampler3DBackward0",
        grid_sampler_3d,
        &[0, 1]
    ),
    (
        "aten::grid_sampler",
        "GridSampler2DBackward0",
        grid_sampler,
        &[0, 1]
    ),
];
