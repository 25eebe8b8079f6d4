//! ATen's native forms that return more than the public function (or take what it computes
//! for itself): `native_layer_norm` and `native_group_norm` (the output with the saved mean
//! and inverse standard deviation), the matrix-vector and outer-product updates `addmv` and
//! `addr`, `lu_unpack` (P, L and U from `lu_factor`'s packed result) and `linalg.vander`.

use crate::dtype::{DType, Scalar};
use crate::error::{format_shape, Result, TensorError};
use crate::ops::nn::norm;
use crate::ops::products::combine_scaled;
use crate::tensor::Tensor;

fn invalid(message: impl Into<String>) -> TensorError {
    TensorError::InvalidArgument(message.into())
}

/// Mean and inverse standard deviation `1 / sqrt(biased var + eps)` of each run of `len`
/// consecutive values, accumulated in f64.
fn run_statistics(values: &[f64], len: usize, eps: f64) -> (Vec<f64>, Vec<f64>) {
    if len == 0 {
        return (Vec::new(), Vec::new());
    }
    values
        .chunks(len)
        .map(|run| {
            let n = run.len() as f64;
            let mean = run.iter().sum::<f64>() / n;
            let var = run.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
            (mean, 1.0 / (var + eps).sqrt())
        })
        .unzip()
}

fn statistics_tensor(values: Vec<f64>, sizes: &[usize], dtype: DType) -> Result<Tensor> {
    Ok(Tensor::from_vec(values, sizes)?.to_dtype(dtype))
}

/// `torch.native_layer_norm(input, normalized_shape, weight, bias, eps)`: `layer_norm`'s
/// output, and each row's mean and rstd with the normalized dims kept as size 1.
pub fn native_layer_norm(
    input: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let output = norm::layer_norm(input, normalized_shape, weight, bias, eps)?;
    let kept = input.dim() - normalized_shape.len();
    let len: usize = input.sizes()[kept..].iter().product();
    let (mean, rstd) = run_statistics(&input.contiguous().to_f64_vec(), len, eps);
    let mut sizes = input.sizes()[..kept].to_vec();
    sizes.extend(std::iter::repeat_n(1, normalized_shape.len()));
    if len == 0 {
        // Rows of no values: PyTorch's mean is 0 and its rstd NaN.
        let count: usize = sizes.iter().product();
        return Ok((
            output,
            statistics_tensor(vec![0.0; count], &sizes, input.dtype())?,
            statistics_tensor(vec![f64::NAN; count], &sizes, input.dtype())?,
        ));
    }
    Ok((
        output,
        statistics_tensor(mean, &sizes, input.dtype())?,
        statistics_tensor(rstd, &sizes, input.dtype())?,
    ))
}

/// `torch.native_group_norm(input, weight, bias, N, C, HxW, group, eps)`: `group_norm`'s
/// output and each (sample, group)'s mean and rstd as `[N, group]`.
#[allow(clippy::too_many_arguments)]
pub fn native_group_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    batch: i64,
    channels: i64,
    spatial: i64,
    groups: i64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    if batch
        .checked_mul(channels)
        .and_then(|v| v.checked_mul(spatial))
        != Some(input.numel() as i64)
    {
        return Err(invalid(
            "Expected X.numel() == N * C * HxW to be true, but got false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)",
        ));
    }
    let output = norm::group_norm(input, groups, weight, bias, eps)?;
    let (batch, groups_usize) = (batch as usize, groups as usize);
    let len = input.numel().checked_div(batch * groups_usize).unwrap_or(0);
    let (mean, rstd) = run_statistics(&input.contiguous().to_f64_vec(), len, eps);
    let sizes = [batch, groups_usize];
    Ok((
        output,
        statistics_tensor(mean, &sizes, input.dtype())?,
        statistics_tensor(rstd, &sizes, input.dtype())?,
    ))
}

/// PyTorch refuses a floating beta or alpha for integer `addr`/`addmv` inputs only in `addr`;
/// this is that check.
fn check_integral_coefficients(dtype: DType, beta: &Scalar, alpha: &Scalar) -> Result<()> {
    if dtype.is_integral(true) {
        for (name, value) in [("beta", beta), ("alpha", alpha)] {
            if value.is_floating_point() {
                return Err(invalid(format!(
                    "For integral input tensors, argument {name} must not be a floating point number."
                )));
            }
        }
    }
    Ok(())
}

impl Tensor {
    /// `torch.addmv(self, mat, vec, beta, alpha)`: `beta * self + alpha * (mat @ vec)`.
    pub fn addmv(
        &self,
        mat: &Tensor,
        vec: &Tensor,
        beta: &Scalar,
        alpha: &Scalar,
    ) -> Result<Tensor> {
        let fits = mat.dim() == 2
            && vec.dim() == 1
            && mat.sizes()[1] == vec.sizes()[0]
            && (self.dim() == 0
                || (self.dim() == 1
                    && (self.sizes()[0] == mat.sizes()[0] || self.sizes()[0] == 1)));
        if !fits {
            let shape = |t: &Tensor| {
                t.sizes()
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join("x")
            };
            return Err(invalid(format!(
                "size mismatch, got input ({}), mat ({}), vec ({})",
                shape(self),
                shape(mat),
                shape(vec)
            )));
        }
        let product = mat.mv(vec)?;
        combine_scaled(self, &product, beta, alpha)
    }

    /// `torch.addr(self, vec1, vec2, beta, alpha)`: `beta * self + alpha * outer(vec1, vec2)`.
    pub fn addr(
        &self,
        vec1: &Tensor,
        vec2: &Tensor,
        beta: &Scalar,
        alpha: &Scalar,
    ) -> Result<Tensor> {
        for (name, v) in [("vec1", vec1), ("vec2", vec2)] {
            if v.dim() != 1 {
                return Err(invalid(format!(
                    "addr: Expected 1-D argument {name}, but got {}-D",
                    v.dim()
                )));
            }
        }
        let product = vec1.outer(vec2)?;
        check_integral_coefficients(product.dtype(), beta, alpha)?;
        let target = [vec1.sizes()[0] as i64, vec2.sizes()[0] as i64];
        let bias = self.expand(&target)?;
        combine_scaled(&bias, &product, beta, alpha)
    }
}

/// `torch.lu_unpack(LU, pivots, unpack_data, unpack_pivots)`: the permutation P and the
/// unit-lower L and upper U factors with `A = P L U`; what is not unpacked is an empty
/// tensor.
pub fn lu_unpack(
    lu: &Tensor,
    pivots: &Tensor,
    unpack_data: bool,
    unpack_pivots: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    if lu.dim() < 2 {
        return Err(invalid(format!(
            "torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: {} instead",
            format_shape(lu.sizes())
        )));
    }
    let rank = lu.dim();
    let (m, n) = (lu.sizes()[rank - 2], lu.sizes()[rank - 1]);
    let k = m.min(n);
    let empty = || Tensor::zeros(&[0], lu.dtype());
    let (l, u) = if unpack_data {
        let lower = lu.tril(-1)?.narrow(-1, 0, k as i64)?;
        let identity = crate::ops::creation::eye(m as i64, Some(k as i64), lu.dtype())?;
        let l = lower.add(&identity, &Scalar::Int(1))?;
        let u = lu.triu(0)?.narrow(-2, 0, k as i64)?.contiguous();
        (l, u)
    } else {
        (empty()?, empty()?)
    };
    if !unpack_pivots {
        return Ok((empty()?, l, u));
    }
    if pivots.dtype() != DType::Int32 {
        return Err(invalid(
            "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.",
        ));
    }
    let mut expected = lu.sizes()[..rank - 2].to_vec();
    expected.push(k);
    if pivots.sizes() != expected.as_slice() {
        return Err(invalid(format!(
            "Expected LU_pivots to have shape {} but got {} instead.",
            format_shape(&expected),
            format_shape(pivots.sizes())
        )));
    }
    let batch: usize = lu.sizes()[..rank - 2].iter().product();
    let pivot_values = pivots.contiguous().to_i64_vec();
    let mut permutation_values = vec![0.0f64; batch * m * m];
    for b in 0..batch {
        let mut order: Vec<usize> = (0..m).collect();
        for i in 0..k {
            let p = pivot_values[b * k + i];
            if p < 1 || p as usize > m {
                return Err(invalid(
                    "pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive.Did you properly pass the result of lu_factor?",
                ));
            }
            order.swap(i, p as usize - 1);
        }
        // Row `order[i]` of A is row `i` of L U, so P has a one at (order[i], i).
        for (i, &row) in order.iter().enumerate() {
            permutation_values[b * m * m + row * m + i] = 1.0;
        }
    }
    let mut sizes = lu.sizes()[..rank - 2].to_vec();
    sizes.extend([m, m]);
    let permutation = Tensor::from_vec(permutation_values, &sizes)?.to_dtype(lu.dtype());
    Ok((permutation, l, u))
}

/// `torch.linalg.vander(x, N)`: the powers `x^0 .. x^(N-1)` of each element along a new last
/// dimension (a running product, so integers stay exact as in PyTorch's cumprod).
pub fn vander(x: &Tensor, n: Option<i64>) -> Result<Tensor> {
    if x.dtype() == DType::Bool {
        return Err(invalid(
            "linalg.vander supports floating point, complex, and integer tensors, but got Bool",
        ));
    }
    // A 0-dim input is one sample (PyTorch's result is 1 x N).
    let x = if x.dim() == 0 {
        x.reshape(&[1])?
    } else {
        x.clone()
    };
    let count = n.unwrap_or(*x.sizes().last().unwrap_or(&1) as i64);
    if count <= 1 {
        return Err(invalid("N must be greater than 1."));
    }
    let mut shape: Vec<i64> = x.sizes().iter().map(|&s| s as i64).collect();
    shape.push(count - 1);
    let powers = x.unsqueeze(-1)?.expand(&shape)?;
    let mut ones_shape: Vec<usize> = x.sizes().to_vec();
    ones_shape.push(1);
    let ones = Tensor::ones(&ones_shape, x.dtype())?;
    crate::ops::join::cat(&[ones, powers], -1)?.cumulative(-1, None, true)
}
