//! The random activations ATen has as separate operators: `native_dropout` (dropout that
//! also returns its keep-mask) and `rrelu_with_noise` (randomized leaky ReLU that records the
//! slopes it drew). Both draw from the default mt19937 generator in the order and with the
//! distributions ATen's CPU kernels use, so a fixed seed gives PyTorch's values.

use crate::dtype::DType;
use crate::element::Element;
use crate::error::{Result, TensorError};
use crate::macros::dispatch_dtype;
use crate::ops::pointwise::UnaryOp;
use crate::ops::random::{bernoulli_draws, like_layout, with_default_generator};
use crate::tensor::Tensor;

use super::invalid;

/// `x * factor` computed in ATen's `opmath` type for the dtype (double for float64, float
/// for every other float type) and rounded once to the dtype.
fn scale_in_opmath<T: Element>(x: T, factor: f64, dtype: DType) -> T {
    if dtype == DType::Float64 {
        T::from_f64(x.to_f64() * factor)
    } else {
        T::from_f64(f64::from(x.to_f64() as f32 * factor as f32))
    }
}

impl Tensor {
    /// `torch.native_dropout(input, p, train)`: `(input * mask * (1 / (1 - p)), mask)` with a
    /// boolean mask (laid out like the input) drawn by `bernoulli_(1 - p)` in training (`train` true or absent); outside
    /// training the input unchanged (a copy) and an all-true mask.
    pub fn native_dropout(&self, p: f64, train: Option<bool>) -> Result<(Tensor, Tensor)> {
        if self.numel() == 0 {
            return Ok((self.clone(), Tensor::zeros(self.sizes(), self.dtype())?));
        }
        if train == Some(false) {
            let mask = Tensor::ones(self.sizes(), DType::Bool)?;
            return Ok((self.contiguous_copy(), mask));
        }
        let keep_probability = 1.0 - p;
        // `bernoulli_`'s own check, on the keep probability it is handed.
        if !(0.0..=1.0).contains(&keep_probability) {
            return Err(invalid(format!(
                "bernoulli_ expects p to be in [0, 1], but got p={keep_probability}"
            )));
        }
        if !self.dtype().is_floating_point() {
            // `input.mul(mask).mul_(scale)` cannot write a float product into an integer tensor.
            return Err(invalid(format!(
                "result type Float can't be cast to the desired output type {}",
                self.dtype().scalar_type_name()
            )));
        }
        let scale = if keep_probability == 0.0 {
            0.0
        } else {
            1.0 / keep_probability
        };
        let sizes = self.sizes().to_vec();
        // The mask is `empty_like(input)`: laid out like the input, and drawn in its memory
        // order.
        let keep = bernoulli_draws(&sizes, &like_layout(self), keep_probability);
        let dtype = self.dtype();
        let output = dispatch_dtype!(dtype, T => {
            let values: Vec<T> = self
                .gather::<T>()
                .into_iter()
                .zip(&keep)
                .map(|(x, &kept)| {
                    // x * mask is exact (a copy or a signed zero); the scaling rounds once.
                    let masked = if kept { x } else { T::from_f64(x.to_f64() * 0.0) };
                    scale_in_opmath(masked, scale, dtype)
                })
                .collect();
            Tensor::from_values(values, &sizes)
        });
        let mask = Tensor::from_values(keep, &sizes);
        Ok((output, mask))
    }

    /// A contiguous copy (what `input.clone()` returns for a dense tensor).
    fn contiguous_copy(&self) -> Tensor {
        dispatch_dtype!(self.dtype(), T => Tensor::from_values(self.gather::<T>(), self.sizes()))
    }

    /// `torch.rrelu_with_noise(self, noise, lower, upper, training)`: in training, every
    /// element `<= 0` is multiplied by a slope drawn uniformly from [lower, upper) (one 53-bit
    /// draw per such element, in order), and `noise` receives the slopes (1 where the input
    /// is positive); outside training, `leaky_relu` with the mean slope and `noise` untouched.
    /// Returns the output; `noise` is written in place.
    pub fn rrelu_with_noise(
        &self,
        noise: &Tensor,
        lower: f64,
        upper: f64,
        training: bool,
    ) -> Result<Tensor> {
        if !training {
            return self.unary(UnaryOp::LeakyRelu((lower + upper) / 2.0));
        }
        let dtype = self.dtype();
        if !dtype.is_floating_point() {
            return Err(TensorError::NotImplementedForDType {
                op: "rrelu_with_noise_out_cpu",
                dtype,
            });
        }
        if noise.numel() != self.numel() {
            return Err(invalid(format!(
                "rrelu_with_noise: noise has {} elements but the input has {}",
                noise.numel(),
                self.numel()
            )));
        }
        let sizes = self.sizes().to_vec();
        let (output, slopes) = dispatch_dtype!(dtype, T => {
            let input = self.gather::<T>();
            let mut output = Vec::with_capacity(input.len());
            let mut slopes = Vec::with_capacity(input.len());
            with_default_generator(|g| {
                for &x in &input {
                    if x.to_f64() <= 0.0 {
                        let drawn = g.uniform_f64() * (upper - lower) + lower;
                        // The slope is used in the opmath type (float below float64).
                        let slope = if dtype == DType::Float64 {
                            drawn
                        } else {
                            f64::from(drawn as f32)
                        };
                        output.push(scale_in_opmath(x, slope, dtype));
                        slopes.push(T::from_f64(slope));
                    } else {
                        output.push(x);
                        slopes.push(T::from_f64(1.0));
                    }
                }
            });
            (Tensor::from_values(output, &sizes), Tensor::from_values(slopes, &sizes))
        });
        let noise_sizes: Vec<i64> = noise.sizes().iter().map(|&s| s as i64).collect();
        noise.copy_(&slopes.to_dtype(noise.dtype()).reshape(&noise_sizes)?)?;
        Ok(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropout_outside_training_keeps_everything() {
        let x = Tensor::from_values(vec![1.0f32, -2.0, 3.0], &[3]);
        let (out, mask) = x.native_dropout(0.5, Some(false)).unwrap();
        assert_eq!(out.to_f64_vec(), vec![1.0, -2.0, 3.0]);
        assert_eq!(mask.to_f64_vec(), vec![1.0, 1.0, 1.0]);
        assert_eq!(mask.dtype(), DType::Bool);
    }

    #[test]
    fn dropout_scales_the_kept_elements() {
        let x = Tensor::from_values(vec![1.0f64; 64], &[8, 8]);
        let (out, mask) = x.native_dropout(0.25, None).unwrap();
        for (value, kept) in out.to_f64_vec().into_iter().zip(mask.to_f64_vec()) {
            let expected = if kept == 1.0 { 1.0 / 0.75 } else { 0.0 };
            assert_eq!(value, expected);
        }
    }

    #[test]
    fn rrelu_slopes_stay_in_bounds() {
        let x = Tensor::from_values(vec![-1.0f64, 2.0, -3.0, 0.0], &[4]);
        let noise = Tensor::zeros(&[4], DType::Float64).unwrap();
        let out = x.rrelu_with_noise(&noise, 0.1, 0.3, true).unwrap();
        let slopes = noise.to_f64_vec();
        assert_eq!(slopes[1], 1.0);
        for i in [0, 2, 3] {
            assert!((0.1..0.3).contains(&slopes[i]), "slope {}", slopes[i]);
        }
        assert_eq!(out.to_f64_vec()[1], 2.0);
        assert_eq!(out.to_f64_vec()[0], -slopes[0]);
    }
}
