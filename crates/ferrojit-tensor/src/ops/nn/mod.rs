//! Neural-network kernels (`torch.nn.functional`): convolution, pooling, normalization,
//! activations with reductions, losses, embedding, padding, resampling and attention, plus the
//! small helpers they share.

pub mod activation;
pub mod backward;
pub mod batch_norm_backward;
pub mod channel_mixing;
pub mod conv;
pub mod conv_backward;
mod conv_backward_gemm;
mod conv_depthwise;
pub(crate) mod conv_packed;
mod conv_winograd;
pub mod ctc_loss;
pub mod distance;
pub mod fold;
pub mod fractional_max_pool;
pub mod gated_activations;
pub mod grid_sample;
pub mod grid_sample_3d;
pub mod loss;
mod lstm_step;
pub mod margin_losses;
pub mod masked_softmax;
pub mod misc;
pub mod nll_forward;
pub mod norm;
pub mod norm_backward;
pub mod pool;
pub mod random_activations;
pub mod resample;
mod resample_linear;
mod resample_uint8;
pub mod rnn;
pub mod transformer;
pub mod unpool;

use crate::dtype::DType;
use crate::error::{Result, TensorError};
use crate::macros::dispatch_dtype;
use crate::tensor::Tensor;

pub(crate) fn invalid(message: impl Into<String>) -> TensorError {
    TensorError::InvalidArgument(message.into())
}

/// A contiguous tensor of `dtype` from f64 values (logical order).
pub(crate) fn from_f64(values: Vec<f64>, sizes: &[usize], dtype: DType) -> Tensor {
    dispatch_dtype!(dtype, T => {
        use crate::element::Element;
        Tensor::from_values(values.into_iter().map(<T as Element>::from_f64).collect::<Vec<T>>(), sizes)
    })
}

/// Maps each run of `len` consecutive logical elements of a float tensor through `f` (input
/// and output rows in f64), returning a contiguous tensor of the same dtype and shape. Rows
/// are split across the global pool when there are enough elements.
pub(crate) fn map_rows(
    input: &Tensor,
    len: usize,
    f: impl Fn(&[f64], &mut [f64]) + Sync,
) -> Tensor {
    dispatch_dtype!(input.dtype(), T => Tensor::from_values(map_rows_typed::<T>(input, len, &f), input.sizes()))
}

fn map_rows_typed<T: crate::element::Element>(
    input: &Tensor,
    len: usize,
    f: &(impl Fn(&[f64], &mut [f64]) + Sync),
) -> Vec<T> {
    use crate::element::Element;
    let mut values = input.gather::<T>();
    if len == 0 || values.is_empty() {
        return values;
    }
    let rows = values.len() / len;
    let threads = if values.len() >= crate::ops::parallel::PARALLEL_THRESHOLD {
        crate::ops::parallel::num_threads().min(rows)
    } else {
        1
    };
    let rows_per_task = rows.div_ceil(threads.max(1));
    let run = |chunk: &mut [T]| {
        let mut row_in = vec![0.0; len];
        let mut row_out = vec![0.0; len];
        for row in chunk.chunks_mut(len) {
            for (dst, src) in row_in.iter_mut().zip(row.iter()) {
                *dst = src.to_f64();
            }
            f(&row_in, &mut row_out);
            for (dst, &src) in row.iter_mut().zip(&row_out) {
                *dst = <T as Element>::from_f64(src);
            }
        }
    };
    if threads <= 1 {
        run(&mut values);
    } else {
        use rayon::prelude::*;
        values.par_chunks_mut(rows_per_task * len).for_each(run);
    }
    values
}

/// Fails unless `t` has a floating dtype (the message names the op like PyTorch's dispatch).
pub(crate) fn require_float(t: &Tensor, op: &'static str) -> Result<DType> {
    if t.dtype().is_floating_point() {
        Ok(t.dtype())
    } else {
        Err(TensorError::NotImplementedForDType {
            op,
            dtype: t.dtype(),
        })
    }
}

/// Expands an `int[N]` argument given as one value or N values, checking signs.
pub(crate) fn expand_param(
    values: &[i64],
    n: usize,
    name: &str,
    allow_zero: bool,
) -> Result<Vec<usize>> {
    let expanded: Vec<i64> = match values.len() {
        1 => vec![values[0]; n],
        len if len == n => values.to_vec(),
        len => {
            return Err(invalid(format!(
                "expected {name} to be a single integer value or a list of {n} values to match the convolution dimensions, but got {name}={values:?} (length {len})"
            )))
        }
    };
    expanded
        .iter()
        .map(|&v| {
            if v < 0 || (v == 0 && !allow_zero) {
                Err(invalid(format!("non-positive {name} is not supported")))
            } else {
                Ok(v as usize)
            }
        })
        .collect()
}

/// Converts a list of non-negative ints to sizes.
pub(crate) fn to_sizes(values: &[i64], what: &str) -> Result<Vec<usize>> {
    values
        .iter()
        .map(|&v| {
            usize::try_from(v).map_err(|_| invalid(format!("{what} must be non-negative, got {v}")))
        })
        .collect()
}

/// The arithmetic type a CPU kernel works in (PyTorch's opmath type: f32 for the half
/// types and f32, f64 for f64), for kernels whose results depend on that rounding.
pub(crate) trait Opmath:
    Copy
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
{
    fn of(v: f64) -> Self;
    fn wide(self) -> f64;
    fn sqrt(self) -> Self;
    fn fused(self, a: Self, b: Self) -> Self;
}

impl Opmath for f32 {
    fn of(v: f64) -> Self {
        v as f32
    }
    fn wide(self) -> f64 {
        f64::from(self)
    }
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
    fn fused(self, a: Self, b: Self) -> Self {
        self.mul_add(a, b)
    }
}

impl Opmath for f64 {
    fn of(v: f64) -> Self {
        v
    }
    fn wide(self) -> f64 {
        self
    }
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    fn fused(self, a: Self, b: Self) -> Self {
        self.mul_add(a, b)
    }
}
