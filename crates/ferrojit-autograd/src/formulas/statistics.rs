//! Reductions beyond `sum`/`mean`: variance and standard deviation, norms, the extrema
//! (`amax`, `max`, `max.dim`, `median`, `kthvalue`, `sort`, `topk`), products and cumulative
//! products and sums, `logsumexp`, `nansum`/`nanmean`. Formulas follow PyTorch's
//! derivatives.yaml (`var_backward`, `std_backward`, `norm_backward`,
//! `evenly_distribute_backward`, `value_selecting_reduction_backward`, `cumprod_backward`,
//! `prod_backward`); where they need the forward result they recompute it.

use ferrojit_runtime::{IValue, Result};

use super::support::{
    against, binary, fill_where, index_tensor, is_nan, keep_where, logical_not, recompute,
    recompute1, reduced_dims, refuse, restore_dims, sum_kept, zero_where, zeros_of,
};
use super::{wrap_dim, Formula, FormulaInput, Gradients};
use crate::call::{self, call1, div, expand, int, ints, mask_like, mul, scale, sub};

fn only_self(input: &FormulaInput, gradient: IValue) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(gradient);
    Ok(out)
}

/// `var_backward`: `2 / (n - correction) * grad * (self - mean)`, `n` the reduced count.
fn variance_backward(
    grad: &IValue,
    x: &IValue,
    sizes: &[usize],
    dims: Option<Vec<usize>>,
    correction: f64,
    keepdim: bool,
) -> Result<IValue> {
    // PyTorch's split: a 0-d input or no `dim` reduces everything.
    let dims = match dims {
        Some(dims) if !sizes.is_empty() => Some(dims),
        _ => None,
    };
    match dims {
        Some(dims) => {
            let count: usize = dims.iter().map(|&dim| sizes[dim]).product();
            let grad = if keepdim || sizes.len() <= 1 {
                grad.clone()
            } else {
                restore_dims(grad, &dims, false)?
            };
            let dims_i64: Vec<i64> = dims.iter().map(|&dim| dim as i64).collect();
            let centered = sub(x, &call::mean_dims(x, &dims_i64, true)?)?;
            let factor = 2.0 / (count as f64 - correction);
            scale(&mul(&grad, &centered)?, factor)
        }
        None => {
            let count: usize = sizes.iter().product();
            let dof = count as f64 - correction;
            let mean = call1("aten::mean", vec![x.clone()])?;
            if dof <= 0.0 {
                // 2 / 0: NaN where self equals the mean (inf * 0), infinity elsewhere.
                let at_mean = binary("aten::eq.Tensor", x, &mean)?;
                let factor = call1(
                    "aten::where.Scalar",
                    vec![
                        at_mean,
                        IValue::Double(f64::NAN),
                        IValue::Double(f64::INFINITY),
                    ],
                )?;
                let factor = call1(
                    "aten::to.dtype",
                    vec![factor, int(call::tensor(x)?.dtype().scalar_type_index())],
                )?;
                return mul(grad, &factor);
            }
            scale(&mul(grad, &sub(x, &mean)?)?, 2.0 / dof)
        }
    }
}

/// Which overload: `(dim argument, correction, keepdim)` read from the call.
struct VarianceCall {
    dims: Option<Vec<usize>>,
    correction: f64,
    keepdim: bool,
}

fn variance_call(input: &FormulaInput, overload: Overload) -> Result<VarianceCall> {
    let rank = input.sizes(0)?.len();
    let dims_of = |value: &IValue| -> Result<Option<Vec<usize>>> {
        let named = match value {
            IValue::None => false,
            IValue::Int(_) => true,
            other => !other.to_int_vec()?.is_empty(),
        };
        Ok(if named {
            Some(reduced_dims(value, rank)?)
        } else {
            None
        })
    };
    let bias = |unbiased: bool| if unbiased { 1.0 } else { 0.0 };
    Ok(match overload {
        // (self, unbiased)
        Overload::Plain => VarianceCall {
            dims: None,
            correction: bias(input.argument(1)?.to_bool()?),
            keepdim: false,
        },
        // (self, dim, unbiased, keepdim)
        Overload::Dim => VarianceCall {
            dims: dims_of(input.argument(1)?)?,
            correction: bias(input.argument(2)?.to_bool()?),
            keepdim: input.argument(3)?.to_bool()?,
        },
        // (self, dim, *, correction, keepdim)
        Overload::Correction => VarianceCall {
            dims: dims_of(input.argument(1)?)?,
            correction: match input.argument(2)? {
                IValue::None => 1.0,
                _ => input.number(2)?,
            },
            keepdim: input.argument(3)?.to_bool()?,
        },
    })
}

#[derive(Clone, Copy)]
enum Overload {
    Plain,
    Dim,
    Correction,
}

fn variance(input: &FormulaInput, overload: Overload) -> Result<Gradients> {
    let spec = variance_call(input, overload)?;
    let sizes = input.sizes(0)?;
    let gradient = variance_backward(
        input.grad(0)?,
        input.argument(0)?,
        &sizes,
        spec.dims,
        spec.correction,
        spec.keepdim,
    )?;
    only_self(input, gradient)
}

/// `std_backward`: the variance's gradient of `grad / (2 * std)`, zero where `std == 0`.
fn deviation(input: &FormulaInput, overload: Overload, name: &str) -> Result<Gradients> {
    let spec = variance_call(input, overload)?;
    let sizes = input.sizes(0)?;
    let result = recompute1(name, input)?;
    let halved = div(input.grad(0)?, &scale(&result, 2.0)?)?;
    let grad = zero_where(&against("aten::eq.Scalar", &result, 0.0)?, &halved)?;
    let gradient = variance_backward(
        &grad,
        input.argument(0)?,
        &sizes,
        spec.dims,
        spec.correction,
        spec.keepdim,
    )?;
    only_self(input, gradient)
}

fn var_plain(input: &FormulaInput) -> Result<Gradients> {
    variance(input, Overload::Plain)
}
fn var_dim(input: &FormulaInput) -> Result<Gradients> {
    variance(input, Overload::Dim)
}
fn var_correction(input: &FormulaInput) -> Result<Gradients> {
    variance(input, Overload::Correction)
}
fn std_plain(input: &FormulaInput) -> Result<Gradients> {
    deviation(input, Overload::Plain, "aten::std")
}
fn std_dim(input: &FormulaInput) -> Result<Gradients> {
    deviation(input, Overload::Dim, "aten::std.dim")
}
fn std_correction(input: &FormulaInput) -> Result<Gradients> {
    deviation(input, Overload::Correction, "aten::std.correction")
}

/// `norm_backward(grad, self, p, norm, dim, keepdim)`.
pub(super) fn norm_backward(
    grad: &IValue,
    x: &IValue,
    p: f64,
    norm: &IValue,
    dims: &[usize],
    keepdim: bool,
) -> Result<IValue> {
    let grad = restore_dims(grad, dims, keepdim)?;
    let norm = restore_dims(norm, dims, keepdim)?;
    let sign = call::unary("aten::sgn", x)?;
    let norm_is_zero = against("aten::eq.Scalar", &norm, 0.0)?;
    if p == 1.0 {
        return mul(&sign, &grad);
    }
    if p == 2.0 {
        return mul(&grad, &zero_where(&norm_is_zero, &div(x, &norm)?)?);
    }
    let magnitude = call::unary("aten::abs", x)?;
    if p.is_infinite() {
        // The gradient is shared evenly among the entries that reach the norm.
        let both_nan = binary("aten::logical_and", &is_nan(x)?, &is_nan(&norm)?)?;
        let reaching = binary(
            "aten::logical_or",
            &binary("aten::eq.Tensor", &magnitude, &norm)?,
            &both_nan,
        )?;
        let reaching = mask_like(&reaching, x)?;
        let count = sum_kept(&reaching, dims)?;
        return mul(&mul(&sign, &reaching)?, &div(&grad, &count)?);
    }
    if p < 1.0 {
        let powered = call::pow_scalar(&magnitude, p - 1.0)?;
        let x_is_zero = against("aten::eq.Scalar", x, 0.0)?;
        let scaled_self = mul(&sign, &zero_where(&x_is_zero, &powered)?)?;
        return mul(
            &mul(&scaled_self, &grad)?,
            &call::pow_scalar(&norm, 1.0 - p)?,
        );
    }
    let scaled_self = if p < 2.0 {
        mul(&sign, &call::pow_scalar(&magnitude, p - 1.0)?)?
    } else {
        mul(x, &call::pow_scalar(&magnitude, p - 2.0)?)?
    };
    let scale_value = zero_where(
        &norm_is_zero,
        &div(&grad, &call::pow_scalar(&norm, p - 1.0)?)?,
    )?;
    mul(&scaled_self, &scale_value)
}

/// A norm's order argument: `None` is 2.
fn order(value: &IValue) -> Result<f64> {
    match value {
        IValue::None => Ok(2.0),
        IValue::Int(value) => Ok(*value as f64),
        other => other.to_double(),
    }
}

fn norm_with(
    input: &FormulaInput,
    name: &str,
    p: f64,
    dims: &IValue,
    keepdim: bool,
) -> Result<Gradients> {
    // PyTorch leaves the gradient of the 0-"norm" (a count) undefined.
    if p == 0.0 {
        return Ok(input.none());
    }
    let rank = input.sizes(0)?.len();
    let dims = reduced_dims(dims, rank)?;
    let result = recompute1(name, input)?;
    let gradient = norm_backward(
        input.grad(0)?,
        input.argument(0)?,
        p,
        &result,
        &dims,
        keepdim,
    )?;
    only_self(input, gradient)
}

/// `norm.Scalar(self, p)`.
fn norm_scalar(input: &FormulaInput) -> Result<Gradients> {
    norm_with(
        input,
        "aten::norm.Scalar",
        order(input.argument(1)?)?,
        &IValue::None,
        false,
    )
}

/// `norm.ScalarOpt_dim(self, p, dim, keepdim)`.
fn norm_dim(input: &FormulaInput) -> Result<Gradients> {
    let keepdim = input.argument(3)?.to_bool()?;
    norm_with(
        input,
        "aten::norm.ScalarOpt_dim",
        order(input.argument(1)?)?,
        &input.argument(2)?.clone(),
        keepdim,
    )
}

/// `linalg_vector_norm(self, ord, dim, keepdim, *, dtype)`.
fn vector_norm(input: &FormulaInput) -> Result<Gradients> {
    let keepdim = input.argument(3)?.to_bool()?;
    norm_with(
        input,
        "aten::linalg_vector_norm",
        order(input.argument(1)?)?,
        &input.argument(2)?.clone(),
        keepdim,
    )
}

/// `linalg_norm(self, ord, dim, keepdim, *, dtype)`: a vector norm unless `ord` asks for a
/// matrix norm (a 2-d reduction with an order).
fn linalg_norm(input: &FormulaInput) -> Result<Gradients> {
    let rank = input.sizes(0)?.len();
    let ord = input.argument(1)?;
    let dims = input.argument(2)?;
    let reduced = match dims {
        IValue::None => rank,
        other => other.to_int_vec()?.len(),
    };
    if !ord.is_none() && reduced == 2 {
        return Err(refuse(
            "the derivative for 'linalg_norm' with a matrix norm is not implemented.",
        ));
    }
    let keepdim = input.argument(3)?.to_bool()?;
    norm_with(
        input,
        "aten::linalg_norm",
        order(ord)?,
        &dims.clone(),
        keepdim,
    )
}

/// `grad` spread evenly over the entries equal to the (reduced) result.
fn evenly_distribute(
    input: &FormulaInput,
    name: &str,
    dims: &[usize],
    keepdim: bool,
) -> Result<Gradients> {
    let x = input.argument(0)?;
    let result = restore_dims(&recompute1(name, input)?, dims, keepdim)?;
    let grad = restore_dims(input.grad(0)?, dims, keepdim)?;
    let hits = mask_like(&binary("aten::eq.Tensor", x, &result)?, x)?;
    let count = sum_kept(&hits, dims)?;
    only_self(input, mul(&hits, &div(&grad, &count)?)?)
}

/// `amax`/`amin(self, dim, keepdim)`.
fn extremum_dims(input: &FormulaInput, name: &str) -> Result<Gradients> {
    let rank = input.sizes(0)?.len();
    let dims = reduced_dims(input.argument(1)?, rank)?;
    let keepdim = input.argument(2)?.to_bool()?;
    evenly_distribute(input, name, &dims, keepdim)
}

fn amax(input: &FormulaInput) -> Result<Gradients> {
    extremum_dims(input, "aten::amax")
}
fn amin(input: &FormulaInput) -> Result<Gradients> {
    extremum_dims(input, "aten::amin")
}

/// `max`/`min`/`median(self)`: every entry equal to the result shares the gradient.
pub(super) fn whole_extremum(input: &FormulaInput, name: &str) -> Result<Gradients> {
    let x = input.argument(0)?;
    let result = recompute1(name, input)?;
    let hits = mask_like(&binary("aten::eq.Tensor", x, &result)?, x)?;
    let count = call1("aten::sum", vec![hits.clone()])?;
    only_self(input, mul(&hits, &div(input.grad(0)?, &count)?)?)
}

fn max_all(input: &FormulaInput) -> Result<Gradients> {
    whole_extremum(input, "aten::max")
}
fn min_all(input: &FormulaInput) -> Result<Gradients> {
    whole_extremum(input, "aten::min")
}
fn median_all(input: &FormulaInput) -> Result<Gradients> {
    whole_extremum(input, "aten::median")
}

/// `value_selecting_reduction_backward`: the gradient goes back to the positions the
/// recomputed indices (the operator's second output) name.
pub(super) fn value_selecting(
    input: &FormulaInput,
    name: &str,
    dim_argument: usize,
    keepdim: bool,
) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let grad = input.grad(0)?;
    if sizes.is_empty() {
        return only_self(input, call::reshape(grad, &[])?);
    }
    let dim = wrap_dim(input.int(dim_argument)?, sizes.len()) as i64;
    let indices = recompute(name, input)?
        .into_iter()
        .nth(1)
        .ok_or_else(|| refuse(format!("autograd: {name} returned no indices")))?;
    let (grad, indices) = if keepdim {
        (grad.clone(), indices)
    } else {
        (
            call1("aten::unsqueeze", vec![grad.clone(), int(dim)])?,
            call1("aten::unsqueeze", vec![indices, int(dim)])?,
        )
    };
    let zeros = zeros_of(input, 0)?;
    only_self(
        input,
        call1("aten::scatter.src", vec![zeros, int(dim), indices, grad])?,
    )
}

fn keepdim_at(input: &FormulaInput, index: usize) -> Result<bool> {
    input.argument(index)?.to_bool()
}

fn max_dim(input: &FormulaInput) -> Result<Gradients> {
    value_selecting(input, "aten::max.dim", 1, keepdim_at(input, 2)?)
}
fn min_dim(input: &FormulaInput) -> Result<Gradients> {
    value_selecting(input, "aten::min.dim", 1, keepdim_at(input, 2)?)
}
fn median_dim(input: &FormulaInput) -> Result<Gradients> {
    value_selecting(input, "aten::median.dim", 1, keepdim_at(input, 2)?)
}
/// `kthvalue(self, k, dim, keepdim)`.
fn kthvalue(input: &FormulaInput) -> Result<Gradients> {
    value_selecting(input, "aten::kthvalue", 2, keepdim_at(input, 3)?)
}
/// `sort(self, dim, descending)`.
fn sort(input: &FormulaInput) -> Result<Gradients> {
    value_selecting(input, "aten::sort", 1, true)
}
/// `sort.stable(self, *, stable, dim, descending)`.
fn sort_stable(input: &FormulaInput) -> Result<Gradients> {
    value_selecting(input, "aten::sort.stable", 2, true)
}
/// `topk(self, k, dim, largest, sorted)`.
fn topk(input: &FormulaInput) -> Result<Gradients> {
    value_selecting(input, "aten::topk", 2, true)
}

/// `cumsum(self, dim)`: the reversed cumulative sum of the gradient.
fn cumsum(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let grad = input.grad(0)?;
    if sizes.is_empty() {
        return only_self(input, grad.clone());
    }
    let dim = wrap_dim(input.int(1)?, sizes.len()) as i64;
    let flipped = call1("aten::flip", vec![grad.clone(), ints(&[dim])])?;
    let summed = call1("aten::cumsum", vec![flipped, int(dim)])?;
    only_self(input, call1("aten::flip", vec![summed, ints(&[dim])])?)
}

/// `[i, k]` masks over a length-`n` dimension: `k <= i` and `k >= i`.
fn triangle_masks(n: usize) -> Result<(IValue, IValue)> {
    let positions: Vec<i64> = (0..n as i64).collect();
    let along_k = index_tensor(positions.clone(), &[1, n])?;
    let along_i = index_tensor(positions, &[n, 1])?;
    Ok((
        binary("aten::le.Tensor", &along_k, &along_i)?,
        binary("aten::ge.Tensor", &along_k, &along_i)?,
    ))
}

/// `cumprod` along the last dimension, differentiated without dividing by the input (zeros
/// are exact): `d_i = prod_{k<i} x_k * sum_{j>=i} g_j prod_{i<k<=j} x_k`, built from an
/// `[.., i, k]` expansion (quadratic in the length, as PyTorch's own zero-safe path).
fn cumprod_last(x: &IValue, grad: &IValue, n: usize) -> Result<IValue> {
    let (at_or_before, at_or_after) = triangle_masks(n)?;
    let rows = call1("aten::unsqueeze", vec![x.clone(), int(-2)])?;
    let mut expanded = call::sizes(x)?;
    expanded.insert(expanded.len() - 1, n);
    let rows = expand(&rows, &expanded)?;
    // prod_{i<k<=j} x_k at [.., i, j] (1 for j <= i).
    let tail = call1(
        "aten::cumprod",
        vec![fill_where(&at_or_before, 1.0, &rows)?, int(-1)],
    )?;
    let grads = call1("aten::unsqueeze", vec![grad.clone(), int(-2)])?;
    let weighted = keep_where(&at_or_after, &mul(&tail, &grads)?)?;
    let following = call::sum_dims(&weighted, &[-1], false)?;
    // prod_{k<i} x_k.
    let leading = call1(
        "aten::prod.dim_int",
        vec![
            fill_where(&at_or_after, 1.0, &rows)?,
            int(-1),
            IValue::Bool(false),
        ],
    )?;
    mul(&leading, &following)
}

fn movedim(value: &IValue, from: i64, to: i64) -> Result<IValue> {
    call1("aten::movedim.int", vec![value.clone(), int(from), int(to)])
}

fn cumprod(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let grad = input.grad(0)?;
    if sizes.is_empty() {
        return only_self(input, grad.clone());
    }
    let dim = wrap_dim(input.int(1)?, sizes.len());
    let n = sizes[dim];
    if n == 0 || sizes.iter().product::<usize>() == 0 {
        return only_self(input, zeros_of(input, 0)?);
    }
    let x = movedim(input.argument(0)?, dim as i64, -1)?;
    let g = movedim(grad, dim as i64, -1)?;
    let result = cumprod_last(&x, &g, n)?;
    only_self(input, movedim(&result, -1, dim as i64)?)
}

/// Per position along the last dimension, the product of all the other entries (no
/// division, so zeros are exact).
fn product_of_others(x: &IValue, n: usize) -> Result<IValue> {
    let (at_or_before, at_or_after) = triangle_masks(n)?;
    let rows = call1("aten::unsqueeze", vec![x.clone(), int(-2)])?;
    let mut expanded = call::sizes(x)?;
    expanded.insert(expanded.len() - 1, n);
    let rows = expand(&rows, &expanded)?;
    // Row i keeps every k except k == i.
    let diagonal = binary("aten::logical_and", &at_or_before, &at_or_after)?;
    call1(
        "aten::prod.dim_int",
        vec![
            fill_where(&diagonal, 1.0, &rows)?,
            int(-1),
            IValue::Bool(false),
        ],
    )
}

/// `prod(self)`.
fn prod_all(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let grad = input.grad(0)?;
    let count: usize = sizes.iter().product();
    if sizes.is_empty() {
        return only_self(input, grad.clone());
    }
    if count == 0 {
        return only_self(input, zeros_of(input, 0)?);
    }
    let flat = call::reshape(input.argument(0)?, &[count])?;
    let others = call::reshape(&product_of_others(&flat, count)?, &sizes)?;
    only_self(input, mul(grad, &others)?)
}

/// `prod.dim_int(self, dim, keepdim)`.
fn prod_dim(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let grad = input.grad(0)?;
    if sizes.is_empty() {
        return only_self(input, call::reshape(grad, &[])?);
    }
    let dim = wrap_dim(input.int(1)?, sizes.len());
    if sizes.iter().product::<usize>() == 0 {
        return only_self(input, zeros_of(input, 0)?);
    }
    let keepdim = input.argument(2)?.to_bool()?;
    let grad = restore_dims(grad, &[dim], keepdim)?;
    let x = movedim(input.argument(0)?, dim as i64, -1)?;
    let others = movedim(&product_of_others(&x, sizes[dim])?, -1, dim as i64)?;
    only_self(input, mul(&grad, &others)?)
}

/// `logsumexp(self, dim, keepdim)`: `grad * exp(self - result)`.
fn logsumexp(input: &FormulaInput) -> Result<Gradients> {
    let rank = input.sizes(0)?.len();
    let dims = reduced_dims(input.argument(1)?, rank)?;
    let keepdim = input.argument(2)?.to_bool()?;
    let result = restore_dims(&recompute1("aten::logsumexp", input)?, &dims, keepdim)?;
    let grad = restore_dims(input.grad(0)?, &dims, keepdim)?;
    let weights = call::unary("aten::exp", &sub(input.argument(0)?, &result)?)?;
    only_self(input, mul(&grad, &weights)?)
}

/// `nansum(self, dim, keepdim)`: the sum's gradient, zero at NaN entries.
fn nansum(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let dims = reduced_dims(input.argument(1)?, sizes.len())?;
    let keepdim = input.argument(2)?.to_bool()?;
    let spread = expand(&restore_dims(input.grad(0)?, &dims, keepdim)?, &sizes)?;
    only_self(input, zero_where(&is_nan(input.argument(0)?)?, &spread)?)
}

/// `nanmean(self, dim, keepdim)`: `nansum / count of non-NaN`, differentiated.
fn nanmean(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let sizes = input.sizes(0)?;
    let dims = reduced_dims(input.argument(1)?, sizes.len())?;
    let keepdim = input.argument(2)?.to_bool()?;
    let present = logical_not(&is_nan(x)?)?;
    let count = sum_kept(&mask_like(&present, x)?, &dims)?;
    let spread = div(&restore_dims(input.grad(0)?, &dims, keepdim)?, &count)?;
    let spread = expand(&spread, &sizes)?;
    only_self(input, keep_where(&present, &spread)?)
}

formula_table![
    ("aten::var", "VarBackward0", var_plain, &[0]),
    ("aten::var.dim", "VarBackward0", var_dim, &[0]),
    ("aten::var.correction", "VarBackward0", var_correction, &[0]),
    ("aten::std", "StdBackward0", std_plain, &[0]),
    ("aten::std.dim", "StdBackward0", std_dim, &[0]),
    ("aten::std.correction", "StdBackward0", std_correction, &[0]),
    ("aten::norm.Scalar", "NormBackward0", norm_scalar, &[0]),
    ("aten::norm.ScalarOpt_dim", "NormBackward1", norm_dim, &[0]),
    (
        "aten::linalg_vector_norm",
        "LinalgVectorNormBackward0",
        vector_norm,
        &[0]
    ),
    (
        "aten::linalg_norm",
        "LinalgVectorNormBackward0",
        linalg_norm,
        &[0]
    ),
    ("aten::amax", "AmaxBackward0", amax, &[0]),
    ("aten::amin", "AminBackward0", amin, &[0]),
    ("aten::max", "MaxBackward1", max_all, &[0]),
    ("aten::min", "MinBackward1", min_all, &[0]),
    ("aten::median", "MedianBackward0", median_all, &[0]),
    ("aten::max.dim", "MaxBackward0", max_dim, &[0]),
    ("aten::min.dim", "MinBackward0", min_dim, &[0]),
    ("aten::median.dim", "MedianBackward1", median_dim, &[0]),
    ("aten::kthvalue", "KthvalueBackward0", kthvalue, &[0]),
    ("aten::sort", "SortBackward0", sort, &[0]),
    ("aten::sort.stable", "SortBackward1", sort_stable, &[0]),
    ("aten::topk", "TopkBackward0", topk, &[0]),
    ("aten::cumsum", "CumsumBackward0", cumsum, &[]),
    ("aten::cumprod", "CumprodBackward0", cumprod, &[0]),
    ("aten::prod", "ProdBackward0", prod_all, &[0]),
    ("aten::prod.dim_int", "ProdBackward1", prod_dim, &[0]),
    ("aten::logsumexp", "LogsumexpBackward0", logsumexp, &[0]),
    ("aten::nansum", "NansumBackward0", nansum, &[0]),
    ("aten::nanmean", "NanmeanBackward0", nanmean, &[0]),
];
