//! `_sobol_engine_draw`: the next points of a Sobol sequence (Gray-code order, as
//! `torch.quasirandom.SobolEngine` draws them) from the engine's direction numbers and its
//! current point, both passed in.

use crate::dtype::DType;
use crate::error::{Result, TensorError};
use crate::tensor::Tensor;

/// The bits of an integer point: a drawn value is the point over 2^30.
const SOBOL_BITS: u32 = 30;

fn refusal(message: String) -> TensorError {
    TensorError::InvalidArgument(message)
}

/// `_sobol_engine_draw(quasi, n, sobolstate, dimension, num_generated, dtype)`: `n` points of
/// `dimension` coordinates (`[n, dimension]`, float32 unless `dtype` says otherwise) and the
/// engine's point after them. Point `num_generated + i` flips, in each coordinate, the bits of
/// the direction number indexed by the position of the lowest zero bit of `num_generated + i`.
pub fn sobol_engine_draw(
    quasi: &Tensor,
    n: i64,
    sobolstate: &Tensor,
    dimension: i64,
    num_generated: i64,
    dtype: Option<DType>,
) -> Result<(Tensor, Tensor)> {
    if sobolstate.dtype() != DType::Int64 {
        return Err(refusal("sobolstate needs to be of type Long".to_string()));
    }
    if quasi.dtype() != DType::Int64 {
        return Err(refusal("quasi needs to be of type Long".to_string()));
    }
    let result_dtype = dtype.unwrap_or(DType::Float32);
    if !matches!(result_dtype, DType::Float32 | DType::Float64) {
        return Err(TensorError::NotImplementedForDType {
            op: "_sobol_engine_draw",
            dtype: result_dtype,
        });
    }
    let (Ok(count), Ok(dims), Ok(start)) = (
        usize::try_from(n),
        usize::try_from(dimension),
        u64::try_from(num_generated),
    ) else {
        return Err(refusal(format!(
            "_sobol_engine_draw: n ({n}), dimension ({dimension}) and num_generated \
             ({num_generated}) must be non-negative"
        )));
    };
    if quasi.dim() != 1 || quasi.sizes()[0] < dims {
        return Err(refusal(format!(
            "_sobol_engine_draw: quasi must be a vector of at least {dims} entries, got size {:?}",
            quasi.sizes()
        )));
    }
    if sobolstate.dim() != 2 || sobolstate.sizes()[0] < dims {
        return Err(refusal(format!(
            "_sobol_engine_draw: sobolstate must be a matrix of at least {dims} rows, got size \
             {:?}",
            sobolstate.sizes()
        )));
    }
    let columns = sobolstate.sizes()[1];
    let directions: Vec<i64> = sobolstate.contiguous().to_vec()?;
    let mut point: Vec<i64> = quasi.contiguous().to_vec()?;
    let mut values = Vec::with_capacity(count * dims);
    for i in 0..count as u64 {
        let lowest_zero = (start + i).trailing_ones() as usize;
        if lowest_zero >= columns {
            return Err(refusal(format!(
                "_sobol_engine_draw: point {} needs direction number {lowest_zero}, but \
                 sobolstate has {columns}",
                start + i
            )));
        }
        for (j, coordinate) in point.iter_mut().take(dims).enumerate() {
            *coordinate ^= directions[j * columns + lowest_zero];
            values.push(*coordinate);
        }
    }
    // The integer point is stored in the result dtype, then scaled by 2^-30 (exact).
    let scale = 1.0 / f64::from(1u32 << SOBOL_BITS);
    let drawn: Tensor = if result_dtype == DType::Float32 {
        let scale = scale as f32;
        let scaled: Vec<f32> = values.iter().map(|&v| v as f32 * scale).collect();
        Tensor::from_vec(scaled, &[count, dims])?
    } else {
        let scaled: Vec<f64> = values.iter().map(|&v| v as f64 * scale).collect();
        Tensor::from_vec(scaled, &[count, dims])?
    };
    let state = Tensor::from_vec(point, &[quasi.sizes()[0]])?;
    Ok((drawn, state))
}
