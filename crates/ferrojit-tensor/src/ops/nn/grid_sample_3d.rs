//! `grid_sampler_3d`: samples an `[N, C, D, H, W]` input at the normalized `(x, y, z)`
//! locations of an `[N, Do, Ho, Wo, 3]` grid, with trilinear or nearest interpolation and
//! zeros, border or reflection padding. PyTorch has no bicubic 3-D sampling: its CPU kernel
//! returns the output unwritten, so ferrojit refuses it with the message of ATen's
//! `check_grid_sampler_3d` (and refuses unknown modes too, as its 2-D sampler does). This is
//! PyTorch's scalar CPU kernel (`_grid_sampler_3d_cpu_impl`): each coordinate is unnormalized,
//! padded and weighted in the input's own float type with the same formulas, and the eight
//! corner terms are added in the same order.

use super::grid_sample::{check_grid_sampler_common, GridFloat};
use super::invalid;
use crate::dtype::DType;
use crate::error::{Result, TensorError};
use crate::tensor::Tensor;

/// ATen's `grid_sampler_compute_source_index` along one axis of `size` entries.
struct SourceAxis {
    size: i64,
    align_corners: bool,
    /// 0 zeros, 1 border, 2 reflection.
    padding_mode: i64,
}

impl SourceAxis {
    fn unnormalize<T: GridFloat>(&self, coordinate: T) -> T {
        let size = T::of(self.size as f64);
        if self.align_corners {
            ((coordinate + T::of(1.0)) / T::of(2.0)) * (size - T::of(1.0))
        } else {
            ((coordinate + T::of(1.0)) * size - T::of(1.0)) / T::of(2.0)
        }
    }

    fn clip<T: GridFloat>(&self, coordinate: T) -> T {
        T::of((self.size - 1) as f64).min_of(coordinate.max_of(T::of(0.0)))
    }

    /// Reflects into `[twice_low / 2, twice_high / 2]`.
    fn reflect<T: GridFloat>(coordinate: T, twice_low: i64, twice_high: i64) -> T {
        if twice_low == twice_high {
            return T::of(0.0);
        }
        let low = T::of(twice_low as f64) / T::of(2.0);
        let span = T::of((twice_high - twice_low) as f64) / T::of(2.0);
        let distance = (coordinate - low).abs();
        let extra = distance.remainder(span);
        let flips = (distance / span).floor().to_index();
        if flips % 2 == 0 {
            extra + low
        } else {
            span - extra + low
        }
    }

    fn source_index<T: GridFloat>(&self, coordinate: T) -> T {
        let mut coordinate = self.unnormalize(coordinate);
        match self.padding_mode {
            1 => coordinate = self.clip(coordinate),
            2 => {
                coordinate = if self.align_corners {
                    Self::reflect(coordinate, 0, 2 * (self.size - 1))
                } else {
                    Self::reflect(coordinate, -1, 2 * self.size - 1)
                };
                coordinate = self.clip(coordinate);
            }
            _ => {}
        }
        // `safe_downgrade_to_int_range`: NaN and values past the int range become -100,
        // which every bounds check rejects.
        if coordinate.is_nan_value() || coordinate.abs() > T::of(2_147_483_647.0) {
            T::of(-100.0)
        } else {
            coordinate
        }
    }

    fn contains(&self, index: i64) -> bool {
        index >= 0 && index < self.size
    }
}

/// `grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners)`:
/// interpolation 0 trilinear, 1 nearest; padding 0 zeros, 1 border, 2 reflection.
pub fn grid_sampler_3d(
    input: &Tensor,
    grid: &Tensor,
    interpolation_mode: i64,
    padding_mode: i64,
    align_corners: bool,
) -> Result<Tensor> {
    check_grid_sampler_common(input, grid, 5)?;
    match interpolation_mode {
        0 | 1 => {}
        2 => {
            return Err(invalid(
                "grid_sampler(): bicubic interpolation only supports 4D input",
            ))
        }
        other => {
            return Err(invalid(format!(
            "grid_sampler(): unknown interpolation mode {other} (0 bilinear, 1 nearest, 2 bicubic)"
        )))
        }
    }
    if !(0..=2).contains(&padding_mode) {
        return Err(invalid(format!(
            "grid_sampler(): unknown padding mode {padding_mode} (0 zeros, 1 border, 2 reflection)"
        )));
    }
    let nearest = interpolation_mode == 1;
    match input.dtype() {
        DType::Float32 => Ok(sample::<f32>(
            input,
            grid,
            nearest,
            padding_mode,
            align_corners,
        )),
        DType::Float64 => Ok(sample::<f64>(
            input,
            grid,
            nearest,
            padding_mode,
            align_corners,
        )),
        dtype => Err(TensorError::NotImplementedForDType {
            op: "grid_sampler_3d_cpu",
            dtype,
        }),
    }
}

fn sample<T: GridFloat>(
    input: &Tensor,
    grid: &Tensor,
    nearest: bool,
    padding_mode: i64,
    align_corners: bool,
) -> Tensor {
    let sizes = input.sizes();
    let (batch, channels, depth, height, width) =
        (sizes[0], sizes[1], sizes[2], sizes[3], sizes[4]);
    let (out_d, out_h, out_w) = (grid.sizes()[1], grid.sizes()[2], grid.sizes()[3]);
    let positions = out_d * out_h * out_w;
    let x = input.gather::<T>();
    let g = grid.gather::<T>();
    let axis = |size: usize| SourceAxis {
        size: size as i64,
        align_corners,
        padding_mode,
    };
    let (axis_w, axis_h, axis_d) = (axis(width), axis(height), axis(depth));
    let volume = depth * height * width;
    let mut out = vec![T::of(0.0); batch * channels * positions];
    for n in 0..batch {
        for position in 0..positions {
            let at = (n * positions + position) * 3;
            let ix = axis_w.source_index(g[at]);
            let iy = axis_h.source_index(g[at + 1]);
            let iz = axis_d.source_index(g[at + 2]);
            // Channel `c`'s value at an integer position, or None outside the input.
            let read = |c: usize, z: i64, y: i64, x_index: i64| -> Option<T> {
                (axis_d.contains(z) && axis_h.contains(y) && axis_w.contains(x_index)).then(|| {
                    x[(n * channels + c) * volume
                        + (z as usize * height + y as usize) * width
                        + x_index as usize]
                })
            };
            let out_at = |c: usize| (n * channels + c) * positions + position;
            if nearest {
                let (col, row, slice) = (
                    ix.round_even().to_index(),
                    iy.round_even().to_index(),
                    iz.round_even().to_index(),
                );
                for c in 0..channels {
                    out[out_at(c)] = read(c, slice, row, col).unwrap_or(T::of(0.0));
                }
                continue;
            }
            // The corners: top/bottom along z, north/south along y, west/east along x.
            let (west, north, top) = (ix.floor(), iy.floor(), iz.floor());
            let one = T::of(1.0);
            let (east, south, bottom) = (west + one, north + one, top + one);
            let weights = [
                (east - ix) * (south - iy) * (bottom - iz),
                (ix - west) * (south - iy) * (bottom - iz),
                (east - ix) * (iy - north) * (bottom - iz),
                (ix - west) * (iy - north) * (bottom - iz),
                (east - ix) * (south - iy) * (iz - top),
                (ix - west) * (south - iy) * (iz - top),
                (east - ix) * (iy - north) * (iz - top),
                (ix - west) * (iy - north) * (iz - top),
            ];
            let (w0, n0, t0) = (west.to_index(), north.to_index(), top.to_index());
            let corners = [
                (t0, n0, w0),
                (t0, n0, w0 + 1),
                (t0, n0 + 1, w0),
                (t0, n0 + 1, w0 + 1),
                (t0 + 1, n0, w0),
                (t0 + 1, n0, w0 + 1),
                (t0 + 1, n0 + 1, w0),
                (t0 + 1, n0 + 1, w0 + 1),
            ];
            for c in 0..channels {
                let mut value = T::of(0.0);
                for (&(z, y, x_index), &weight) in corners.iter().zip(&weights) {
                    if let Some(corner) = read(c, z, y, x_index) {
                        value = value + corner * weight;
                    }
                }
                out[out_at(c)] = value;
            }
        }
    }
    Tensor::from_values(out, &[batch, channels, out_d, out_h, out_w])
}
