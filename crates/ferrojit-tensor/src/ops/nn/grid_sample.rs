//! `grid_sampler_2d`: samples an `[N, C, H, W]` input at the normalized `(x, y)` locations of
//! an `[N, Ho, Wo, 2]` grid, with bilinear, nearest or bicubic interpolation and zeros,
//! border or reflection padding. Coordinates and weights are computed in the input's own
//! float type, step by step as PyTorch's CPU kernel does, so that a location on a rounding
//! boundary (a nearest-neighbour tie, a reflection edge) lands where PyTorch's does.

use super::invalid;
use crate::dtype::DType;
use crate::element::Element;
use crate::error::{format_shape, Result, TensorError};
use crate::tensor::Tensor;

/// `interpolation_mode`: 0 bilinear, 1 nearest, 2 bicubic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GridInterpolation {
    Bilinear,
    Nearest,
    Bicubic,
}

/// `padding_mode`: 0 zeros, 1 border, 2 reflection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GridPadding {
    Zeros,
    Border,
    Reflection,
}

impl GridInterpolation {
    pub fn from_i64(mode: i64) -> Result<GridInterpolation> {
        match mode {
            0 => Ok(GridInterpolation::Bilinear),
            1 => Ok(GridInterpolation::Nearest),
            2 => Ok(GridInterpolation::Bicubic),
            other => Err(invalid(format!(
                "grid_sampler(): unknown interpolation mode {other} (0 bilinear, 1 nearest, 2 bicubic)"
            ))),
        }
    }
}

impl GridPadding {
    pub fn from_i64(mode: i64) -> Result<GridPadding> {
        match mode {
            0 => Ok(GridPadding::Zeros),
            1 => Ok(GridPadding::Border),
            2 => Ok(GridPadding::Reflection),
            other => Err(invalid(format!(
                "grid_sampler(): unknown padding mode {other} (0 zeros, 1 border, 2 reflection)"
            ))),
        }
    }
}

/// The float operations the kernel needs, in the element type itself.
pub(super) trait GridFloat:
    Element
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
{
    fn of(value: f64) -> Self;
    fn floor(self) -> Self;
    fn trunc(self) -> Self;
    fn abs(self) -> Self;
    fn round_even(self) -> Self;
    fn min_of(self, other: Self) -> Self;
    fn max_of(self, other: Self) -> Self;
    /// C's `fmod`.
    fn remainder(self, other: Self) -> Self;
    fn is_nan_value(self) -> bool;
    /// Truncation to an integer as the CPU's conversion does; NaN and values out of range
    /// become `i64::MIN`, which every bounds check rejects.
    fn to_index(self) -> i64;
}

macro_rules! grid_float {
    ($t:ty) => {
        impl GridFloat for $t {
            fn of(value: f64) -> Self {
                value as $t
            }
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            fn trunc(self) -> Self {
                <$t>::trunc(self)
            }
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            fn round_even(self) -> Self {
                <$t>::round_ties_even(self)
            }
            fn min_of(self, other: Self) -> Self {
                <$t>::min(self, other)
            }
            fn max_of(self, other: Self) -> Self {
                <$t>::max(self, other)
            }
            fn remainder(self, other: Self) -> Self {
                self % other
            }
            fn is_nan_value(self) -> bool {
                self.is_nan()
            }
            fn to_index(self) -> i64 {
                if self.is_nan() || self.abs() >= 2_147_483_648.0 {
                    i64::MIN
                } else {
                    self as i64
                }
            }
        }
    };
}

grid_float!(f32);
grid_float!(f64);

/// One axis of the input: unnormalization and padding of a coordinate along it.
struct Axis<T> {
    size: i64,
    max_value: T,
    scaling: T,
    low: T,
    twice_span: T,
    empty: bool,
    align_corners: bool,
    padding: GridPadding,
}

impl<T: GridFloat> Axis<T> {
    fn new(size: usize, align_corners: bool, padding: GridPadding) -> Axis<T> {
        let size = size as i64;
        if align_corners {
            Axis {
                size,
                max_value: T::of((size - 1) as f64),
                scaling: T::of((size - 1) as f64) / T::of(2.0),
                low: T::of(0.0),
                twice_span: T::of((size - 1) as f64) * T::of(2.0),
                empty: size <= 1,
                align_corners,
                padding,
            }
        } else {
            Axis {
                size,
                max_value: T::of((size - 1) as f64),
                scaling: T::of(size as f64) / T::of(2.0),
                low: T::of(-0.5),
                twice_span: T::of(size as f64) * T::of(2.0),
                empty: size <= 0,
                align_corners,
                padding,
            }
        }
    }

    fn unnormalize(&self, coordinate: T) -> T {
        if self.align_corners {
            (coordinate + T::of(1.0)) * self.scaling
        } else {
            (coordinate + T::of(1.0)) * self.scaling - T::of(0.5)
        }
    }

    /// Clamps to `[0, size - 1]`; NaN becomes 0.
    fn clip(&self, coordinate: T) -> T {
        self.max_value.min_of(T::of(0.0).max_of(coordinate))
    }

    fn reflect(&self, coordinate: T) -> T {
        if self.align_corners && self.empty {
            return T::of(0.0);
        }
        let shifted = (coordinate - self.low).abs();
        let double_flips = (shifted / self.twice_span).trunc();
        let extra = shifted - double_flips * self.twice_span;
        extra.min_of(self.twice_span - extra) + self.low
    }

    /// The padding mode applied to an unnormalized coordinate.
    fn pad(&self, coordinate: T) -> T {
        match self.padding {
            GridPadding::Zeros => coordinate,
            GridPadding::Border => self.clip(coordinate),
            GridPadding::Reflection => self.clip(self.reflect(coordinate)),
        }
    }

    fn contains(&self, index: i64) -> bool {
        index >= 0 && index < self.size
    }
}

/// The cubic convolution weights (A = -0.75) of the four taps around a fraction `t`.
fn cubic_coefficients<T: GridFloat>(t: T) -> [T; 4] {
    let a = T::of(-0.75);
    let outer = |x: T| ((a * x - T::of(5.0) * a) * x + T::of(8.0) * a) * x - T::of(4.0) * a;
    let inner = |x: T| ((a + T::of(2.0)) * x - (a + T::of(3.0))) * x * x + T::of(1.0);
    [
        outer(t + T::of(1.0)),
        inner(t),
        inner(T::of(1.0) - t),
        outer(T::of(2.0) - t),
    ]
}

/// `grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners)`.
pub fn grid_sampler_2d(
    input: &Tensor,
    grid: &Tensor,
    interpolation_mode: i64,
    padding_mode: i64,
    align_corners: bool,
) -> Result<Tensor> {
    check_grid_sampler_2d(input, grid)?;
    let interpolation = GridInterpolation::from_i64(interpolation_mode)?;
    let padding = GridPadding::from_i64(padding_mode)?;
    match input.dtype() {
        DType::Float32 => Ok(sample::<f32>(
            input,
            grid,
            interpolation,
            padding,
            align_corners,
        )),
        DType::Float64 => Ok(sample::<f64>(
            input,
            grid,
            interpolation,
            padding,
            align_corners,
        )),
        dtype => Err(TensorError::NotImplementedForDType {
            op: "grid_sampler_2d_cpu",
            dtype,
        }),
    }
}

/// PyTorch's argument checks, in its order and words.
fn check_grid_sampler_2d(input: &Tensor, grid: &Tensor) -> Result<()> {
    check_grid_sampler_common(input, grid, 4)
}

/// The checks PyTorch's 2-D and 3-D samplers share, then the `dims`-D shape check.
pub(super) fn check_grid_sampler_common(input: &Tensor, grid: &Tensor, dims: usize) -> Result<()> {
    if input.dtype() != grid.dtype() {
        // PyTorch's CPU kernel reads the grid as the input's type and fails with this.
        return Err(invalid(format!(
            "expected scalar type {} but found {}",
            input.dtype().scalar_type_name(),
            grid.dtype().scalar_type_name()
        )));
    }
    if input.dim() == 0 || grid.dim() == 0 {
        return Err(invalid(format!(
            "grid_sampler(): expected {dims}D input and grid with same number of dimensions, but got input with sizes {} and grid with sizes {}",
            format_shape(input.sizes()),
            format_shape(grid.sizes())
        )));
    }
    if input.sizes()[0] != grid.sizes()[0] {
        return Err(invalid(format!(
            "grid_sampler(): expected grid and input to have same batch size, but got input with sizes {} and grid with sizes {}",
            format_shape(input.sizes()),
            format_shape(grid.sizes())
        )));
    }
    let spatial = input.dim() as i64 - 2;
    if grid.sizes()[grid.dim() - 1] as i64 != spatial {
        return Err(invalid(format!(
            "grid_sampler(): expected grid to have size {spatial} in last dimension, but got grid with sizes {}",
            format_shape(grid.sizes())
        )));
    }
    for d in 2..input.dim() {
        if input.sizes()[d] == 0 {
            return Err(invalid(format!(
                "grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes {} with dimension {d} being empty",
                format_shape(input.sizes())
            )));
        }
    }
    if input.dim() != dims || grid.dim() != dims {
        return Err(invalid(format!(
            "grid_sampler(): expected {dims}D input and grid with same number of dimensions, but got input with sizes {} and grid with sizes {}",
            format_shape(input.sizes()),
            format_shape(grid.sizes())
        )));
    }
    Ok(())
}

fn sample<T: GridFloat>(
    input: &Tensor,
    grid: &Tensor,
    interpolation: GridInterpolation,
    padding: GridPadding,
    align_corners: bool,
) -> Tensor {
    let [batch, channels, height, width] = [
        input.sizes()[0],
        input.sizes()[1],
        input.sizes()[2],
        input.sizes()[3],
    ];
    let (out_h, out_w) = (grid.sizes()[1], grid.sizes()[2]);
    let x = input.gather::<T>();
    let g = grid.gather::<T>();
    let axis_w = Axis::<T>::new(width, align_corners, padding);
    let axis_h = Axis::<T>::new(height, align_corners, padding);
    let zero = T::of(0.0);
    let plane = height * width;
    let mut out = vec![zero; batch * channels * out_h * out_w];
    for n in 0..batch {
        for position in 0..out_h * out_w {
            let grid_x = g[(n * out_h * out_w + position) * 2];
            let grid_y = g[(n * out_h * out_w + position) * 2 + 1];
            // The value of channel `c` at integer input position (iy, ix), zero outside.
            let read = |c: usize, iy: i64, ix: i64| -> T {
                if axis_h.contains(iy) && axis_w.contains(ix) {
                    x[((n * channels + c) * plane) + iy as usize * width + ix as usize]
                } else {
                    zero
                }
            };
            let out_at = |c: usize| ((n * channels + c) * out_h * out_w) + position;
            match interpolation {
                GridInterpolation::Bilinear => {
                    let ix = axis_w.pad(axis_w.unnormalize(grid_x));
                    let iy = axis_h.pad(axis_h.unnormalize(grid_y));
                    let (x_w, y_n) = (ix.floor(), iy.floor());
                    let w = ix - x_w;
                    let e = T::of(1.0) - w;
                    let nn = iy - y_n;
                    let s = T::of(1.0) - nn;
                    let (nw, ne, sw, se) = (s * e, s * w, nn * e, nn * w);
                    let (left, top) = (x_w.to_index(), y_n.to_index());
                    let (right, bottom) = (left.saturating_add(1), top.saturating_add(1));
                    for c in 0..channels {
                        out[out_at(c)] = read(c, top, left) * nw
                            + read(c, top, right) * ne
                            + read(c, bottom, left) * sw
                            + read(c, bottom, right) * se;
                    }
                }
                GridInterpolation::Nearest => {
                    let ix = axis_w.pad(axis_w.unnormalize(grid_x)).round_even();
                    let iy = axis_h.pad(axis_h.unnormalize(grid_y)).round_even();
                    let (col, row) = (ix.to_index(), iy.to_index());
                    for c in 0..channels {
                        out[out_at(c)] = read(c, row, col);
                    }
                }
                GridInterpolation::Bicubic => {
                    let ix = axis_w.unnormalize(grid_x);
                    let iy = axis_h.unnormalize(grid_y);
                    let (x0, y0) = (ix.floor(), iy.floor());
                    let coeff_x = cubic_coefficients(ix - x0);
                    let coeff_y = cubic_coefficients(iy - y0);
                    // Each tap's coordinate is padded on its own, as PyTorch's
                    // `get_value_bounded` does.
                    let tap = |c: usize, dx: f64, dy: f64| {
                        let px = axis_w.pad(x0 + T::of(dx)).to_index();
                        let py = axis_h.pad(y0 + T::of(dy)).to_index();
                        read(c, py, px)
                    };
                    for c in 0..channels {
                        let mut rows = [zero; 4];
                        for (i, row) in rows.iter_mut().enumerate() {
                            let dy = i as f64 - 1.0;
                            *row = coeff_x[0] * tap(c, -1.0, dy)
                                + coeff_x[1] * tap(c, 0.0, dy)
                                + coeff_x[2] * tap(c, 1.0, dy)
                                + coeff_x[3] * tap(c, 2.0, dy);
                        }
                        out[out_at(c)] = coeff_y[0] * rows[0]
                            + coeff_y[1] * rows[1]
                            + coeff_y[2] * rows[2]
                            + coeff_y[3] * rows[3];
                    }
                }
            }
        }
    }
    Tensor::from_values(out, &[batch, channels, out_h, out_w])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With align_corners, the corners of the grid land on the corners of the input.
    #[test]
    fn corner_grid_points_read_the_input_corners() {
        let input = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[1, 1, 2, 2]).unwrap();
        let grid = Tensor::from_vec(vec![-1.0f32, -1.0, 1.0, 1.0], &[1, 1, 2, 2]).unwrap();
        for mode in 0..3 {
            let out = grid_sampler_2d(&input, &grid, mode, 0, true).unwrap();
            assert_eq!(out.to_f64_vec(), vec![1.0, 4.0], "mode {mode}");
        }
        let wrong = Tensor::from_vec(vec![0.0f32; 3], &[1, 1, 1, 3]).unwrap();
        assert!(grid_sampler_2d(&input, &wrong, 0, 0, true).is_err());
        assert!(grid_sampler_2d(&input, &grid, 3, 0, true).is_err());
    }
}
