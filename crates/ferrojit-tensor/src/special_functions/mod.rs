//! `torch.special` in f64: the gamma family, the normal distribution's functions, Bessel and
//! Airy functions, orthogonal polynomials and the small elementwise helpers (`entr`, `sinc`),
//! with tensor wrappers that apply them elementwise in PyTorch's result dtype (integer and
//! bool inputs compute in the default float dtype).

pub mod bessel;
pub mod bessel_rational;
pub mod gamma;
pub mod normal;
pub mod polynomials;

use crate::dtype::DType;
use crate::error::{Result, TensorError};
use crate::promotion::result_type;
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;

/// The dtype a special function returns for `dtype`: floating types stay, integers and bool
/// become the default float; complex inputs are refused (PyTorch has no complex kernels for
/// these either).
fn float_result_dtype(op: &str, dtype: DType) -> Result<DType> {
    if dtype.is_complex() {
        return Err(TensorError::InvalidArgument(format!(
            "\"{op}\" not implemented for '{}'",
            dtype.scalar_type_name()
        )));
    }
    Ok(if dtype.is_floating_point() {
        dtype
    } else {
        DType::default_float()
    })
}

/// `f` applied to every element, in the float result dtype of `input`.
pub fn map_unary(op: &str, input: &Tensor, f: impl Fn(f64) -> f64) -> Result<Tensor> {
    let dtype = float_result_dtype(op, input.dtype())?;
    let values: Vec<f64> = input.to_f64_vec().into_iter().map(f).collect();
    Ok(Tensor::from_vec(values, input.sizes())?.to_dtype(dtype))
}

/// As [`map_unary`], but a float32 result is computed in f32 by `single` (PyTorch's kernels
/// for these functions evaluate their formulas in the tensor's own precision, and the f32
/// rounding shows in the results).
pub fn map_unary_with_single(
    op: &str,
    input: &Tensor,
    double: impl Fn(f64) -> f64,
    single: impl Fn(f32) -> f32,
) -> Result<Tensor> {
    let dtype = float_result_dtype(op, input.dtype())?;
    if dtype != DType::Float32 {
        return map_unary(op, input, double);
    }
    let values: Vec<f32> = input
        .to_f64_vec()
        .into_iter()
        .map(|x| single(x as f32))
        .collect();
    Tensor::from_vec(values, input.sizes())
}

/// `f` applied elementwise to broadcast `a` and `b`, in their promoted float dtype (wrapped
/// Python numbers promote with the lowest priority, as in PyTorch).
pub fn map_binary(op: &str, a: &Tensor, b: &Tensor, f: impl Fn(f64, f64) -> f64) -> Result<Tensor> {
    let dtype = float_result_dtype(op, result_type(&[a, b]))?;
    let shape = broadcast_shapes(a.sizes(), b.sizes())?;
    let expand = |t: &Tensor| -> Result<Vec<f64>> {
        let sizes: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
        Ok(t.expand(&sizes)?.to_f64_vec())
    };
    let (xs, ys) = (expand(a)?, expand(b)?);
    let values: Vec<f64> = xs.into_iter().zip(ys).map(|(x, y)| f(x, y)).collect();
    Ok(Tensor::from_vec(values, &shape)?.to_dtype(dtype))
}

/// -x ln x for x > 0, 0 at 0, -inf below 0 (NaN stays NaN).
pub fn entr(x: f64) -> f64 {
    if x.is_nan() {
        x
    } else if x > 0.0 {
        -x * x.ln()
    } else if x == 0.0 {
        0.0
    } else {
        f64::NEG_INFINITY
    }
}

/// sin(πx) / (πx), 1 at 0.
pub fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        let product = std::f64::consts::PI * x;
        product.sin() / product
    }
}

/// x log1p(y), 0 where x == 0 unless y is NaN.
pub fn xlog1py(x: f64, y: f64) -> f64 {
    if y.is_nan() {
        f64::NAN
    } else if x == 0.0 {
        0.0
    } else {
        x * y.ln_1p()
    }
}

/// x log(y), 0 where x == 0 unless y is NaN.
pub fn xlogy(x: f64, y: f64) -> f64 {
    if y.is_nan() {
        f64::NAN
    } else if x == 0.0 {
        0.0
    } else {
        x * y.ln()
    }
}
