//! `linear` followed by an epilogue, on float32 tensors, with the weight packed once and
//! cached: the kernel behind the runtime's `ferrojit::linear_epilogue`.
//!
//! The packed weights live in the shared cache of `weight_cache.rs`.

use std::sync::Arc;

use super::weight_cache::{cached_packing, PackLayout};
use super::{
    gemm, Activation, ChannelAxis, Epilogue, Kernel, Operand, PackedMatrix, Residual, StridedMatrix,
};
use crate::dtype::DType;
use crate::error::{Result, TensorError};
use crate::tensor::Tensor;

/// The weight (`out_features x in_features`, float32, any strides) packed for `kernel`, from
/// the cache when its values have not changed since it was packed.
pub fn packed_linear_weight(weight: &Tensor, kernel: Kernel) -> Result<Arc<Vec<PackedMatrix>>> {
    if weight.dim() != 2 || weight.dtype() != DType::Float32 {
        return Err(TensorError::InvalidArgument(format!(
            "linear_epilogue: weight must be a 2-D float tensor, got {}-D {}",
            weight.dim(),
            weight.dtype().scalar_type_name()
        )));
    }
    let (n, k) = (weight.sizes()[0], weight.sizes()[1]);
    let (rs, cs) = (weight.strides()[0], weight.strides()[1]);
    cached_packing(weight, kernel, PackLayout::LinearRight, |data| {
        // weight.T: k x n, element (p, j) = weight[j, p].
        let src = StridedMatrix::new(data, k, n, cs, rs)?;
        Ok(vec![PackedMatrix::pack(&src, super::Side::Right, kernel)])
    })
}

/// Whether [`linear_epilogue`] computes these operands itself; otherwise the caller runs the
/// unfused operators. All must be float32; the input at least 1-D with `in_features` last
/// and at least two rows;
/// the bias 1-D of `out_features`; the residual exactly the output's shape.
pub fn linear_epilogue_supported(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    residual: Option<&Tensor>,
) -> bool {
    let f32_ = |t: &Tensor| t.dtype() == DType::Float32;
    if !f32_(input) || !f32_(weight) || weight.dim() != 2 || input.dim() == 0 {
        return false;
    }
    let (n, k) = (weight.sizes()[0], weight.sizes()[1]);
    if input.sizes()[input.dim() - 1] != k {
        return false;
    }
    // One row is a matrix-vector product: packing buys nothing, and the unfused kernel sums
    // it in another order (see `ops::linalg`'s row product).
    let rows: usize = input.sizes()[..input.dim() - 1].iter().product();
    if rows < 2 {
        return false;
    }
    if let Some(b) = bias {
        if !f32_(b) || b.sizes() != [n] {
            return false;
        }
    }
    if let Some(r) = residual {
        let mut out = input.sizes().to_vec();
        *out.last_mut().expect("input is at least 1-D") = n;
        if !f32_(r) || r.sizes() != out.as_slice() {
            return false;
        }
    }
    true
}

/// `act(input @ weight.T + bias + residual)` (or `act(...) + residual`) for operands that
/// [`linear_epilogue_supported`] accepts, with the weight packed once and cached.
pub fn linear_epilogue(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    activation: Activation,
    residual: Option<&Tensor>,
    residual_after_activation: bool,
) -> Result<Tensor> {
    if !linear_epilogue_supported(input, weight, bias, residual) {
        return Err(TensorError::InvalidArgument(format!(
            "linear_epilogue: unsupported operands (input {:?} {}, weight {:?} {})",
            input.sizes(),
            input.dtype().scalar_type_name(),
            weight.sizes(),
            weight.dtype().scalar_type_name()
        )));
    }
    let (n, k) = (weight.sizes()[0], weight.sizes()[1]);
    let mut out_sizes = input.sizes().to_vec();
    *out_sizes.last_mut().expect("input is at least 1-D") = n;
    let m: usize = input.sizes()[..input.dim() - 1].iter().product();
    let packed = packed_linear_weight(weight, Kernel::best())?;
    let x = input.contiguous();
    let x_values = x.to_vec::<f32>()?;
    let bias_values = bias.map(|b| b.contiguous().to_vec::<f32>()).transpose()?;
    let residual_values = residual
        .map(|r| r.contiguous().to_vec::<f32>())
        .transpose()?;
    let epilogue = Epilogue {
        axis: ChannelAxis::Columns,
        scale: None,
        shift: bias_values.as_deref(),
        residual: residual_values.as_deref().map(|data| Residual {
            data,
            row_stride: n,
        }),
        residual_after_activation,
        activation,
    };
    let mut out = vec![0f32; m * n];
    let lhs = StridedMatrix::row_major(&x_values, m, k)?;
    gemm(
        Operand::Strided(lhs),
        Operand::Packed(&packed[0]),
        &mut out,
        &epilogue,
    )?;
    Ok(Tensor::from_values(out, &out_sizes))
}
