//! Derivatives of operators that are another operator in a different form: the `*_copy`
//! forms of the views and the `unsafe_*` splits (the view's formula, same arguments),
//! `native_layer_norm`/`native_group_norm`, `var_mean`/`std_mean`, `msort`, `float_power`,
//! and a few small ones PyTorch writes as compositions (`positive`, `repeat`/`tile`,
//! `sum_to_size`, `addmv`, `addr`, `inner`, `dist`, `logaddexp2`, `copysign`, `ldexp`,
//! `diag_embed`, `diagflat`, `renorm`, `diagonal_scatter`, `nextafter`,
//! `cov`, `corrcoef`).

use ferrojit_runtime::{IValue, Result};

use super::statistics::norm_backward;
use super::support::{against, keep_where, recompute1, reduced_dims, refuse, restore_dims};
use super::{formula_for, Formula, FormulaInput, Gradients};
use crate::call::{self, call1, float, int, ints, mul, reshape, sum_to};

/// Applies `name`'s formula to this call (the two take the same arguments).
pub(super) fn same_as(input: &FormulaInput, name: &str) -> Result<Gradients> {
    let formula =
        formula_for(name).ok_or_else(|| refuse(format!("autograd: no formula for {name}")))?;
    (formula.apply)(input)
}

/// Applies `name`'s formula to `arguments` (tensor `i` of the new list is tensor
/// `origin[i]` of this call, or none), with this call's output gradients `grads`.
pub(super) fn as_call(
    input: &FormulaInput,
    name: &str,
    arguments: Vec<IValue>,
    origin: &[Option<usize>],
    grads: &[Option<IValue>],
) -> Result<Gradients> {
    let formula =
        formula_for(name).ok_or_else(|| refuse(format!("autograd: no formula for {name}")))?;
    let needed: Vec<bool> = origin
        .iter()
        .map(|from| from.is_some_and(|index| input.needs(index)))
        .collect();
    let meta: Vec<_> = origin
        .iter()
        .map(|from| {
            from.and_then(|index| input.input_meta.get(index).cloned())
                .unwrap_or_default()
        })
        .collect();
    let inner = FormulaInput {
        arguments: &arguments,
        grads,
        needed: &needed,
        input_meta: &meta,
    };
    let gradients = (formula.apply)(&inner)?;
    let mut out = input.none();
    for (gradient, from) in gradients.into_iter().zip(origin) {
        if let (Some(gradient), Some(index)) = (gradient, from) {
            out[*index] = Some(gradient);
        }
    }
    Ok(out)
}

macro_rules! same_formula {
    ($function:ident, $name:literal) => {
        fn $function(input: &FormulaInput) -> Result<Gradients> {
            same_as(input, $name)
        }
    };
}

same_formula!(alias_copy, "aten::alias");
same_formula!(as_strided_copy, "aten::as_strided");
same_formula!(diagonal_copy, "aten::diagonal");
same_formula!(linalg_diagonal, "aten::diagonal");
same_formula!(expand_copy, "aten::expand");
same_formula!(narrow_copy, "aten::narrow");
same_formula!(permute_copy, "aten::permute");
same_formula!(split_with_sizes_copy, "aten::split_with_sizes");
same_formula!(squeeze_copy, "aten::squeeze");
same_formula!(squeeze_copy_dim, "aten::squeeze.dim");
same_formula!(squeeze_copy_dims, "aten::squeeze.dims");
same_formula!(t_copy, "aten::t");
same_formula!(transpose_copy, "aten::transpose.int");
same_formula!(unbind_copy, "aten::unbind.int");
same_formula!(unfold_copy, "aten::unfold");
same_formula!(unsqueeze_copy, "aten::unsqueeze");
same_formula!(view_copy, "aten::view");
same_formula!(unsafe_chunk, "aten::chunk");
same_formula!(unsafe_split, "aten::split.Tensor");
same_formula!(unsafe_split_with_sizes, "aten::split_with_sizes");
same_formula!(to_prim_dtype, "aten::to.dtype");
same_formula!(float_power_tensor, "aten::pow.Tensor_Tensor");
same_formula!(float_power_scalar, "aten::pow.Tensor_Scalar");
same_formula!(positive, "aten::clone");

/// Adds to `self`'s gradient what reaches the saved statistics outputs (`mean`, `rstd`) of
/// a normalization over `[rows, 1, count]` views of `self`: `d mean = 1 / count`,
/// `d rstd = -rstd³ (x - mean) / count`.
fn add_statistics_gradients(
    input: &FormulaInput,
    out: &mut Gradients,
    rows: usize,
    eps: f64,
) -> Result<()> {
    if !input.needs(0) {
        return Ok(());
    }
    let sizes = input.sizes(0)?;
    let count = sizes.iter().product::<usize>() / rows.max(1);
    let grouped = reshape(input.argument(0)?, &[rows, 1, count])?;
    let mean = call::mean_dims(&grouped, &[2], true)?;
    let centered = call::sub(&grouped, &mean)?;
    let variance = call::mean_dims(&mul(&centered, &centered)?, &[2], true)?;
    let rstd = call::pow_scalar(&call::add_scalar(&variance, eps)?, -0.5)?;
    let grad_mean = reshape(input.grad(1)?, &[rows, 1, 1])?;
    let grad_rstd = reshape(input.grad(2)?, &[rows, 1, 1])?;
    let through_rstd = mul(&grad_rstd, &mul(&call::pow_scalar(&rstd, 3.0)?, &centered)?)?;
    let extra = call::scale(
        &call::sub(&grad_mean, &through_rstd)?,
        1.0 / count.max(1) as f64,
    )?;
    let extra = reshape(&extra, &sizes)?;
    out[0] = Some(match out[0].take() {
        Some(gradient) => call::add(&gradient, &extra)?,
        None => extra,
    });
    Ok(())
}

/// `native_layer_norm(input, normalized_shape, weight, bias, eps) -> (out, mean, rstd)`:
/// `layer_norm`'s formula (same leading arguments) plus the statistics' gradients.
fn native_layer_norm(input: &FormulaInput) -> Result<Gradients> {
    let mut out = same_as(input, "aten::layer_norm")?;
    let sizes = input.sizes(0)?;
    let normalized = input.ints(1)?.len().min(sizes.len());
    let rows: usize = sizes[..sizes.len() - normalized].iter().product();
    add_statistics_gradients(input, &mut out, rows, input.number(4)?)?;
    Ok(out)
}

/// `native_group_norm(input, weight, bias, N, C, HxW, group, eps) -> (out, mean, rstd)` as
/// `group_norm(input, group, weight, bias, eps)` plus the statistics' gradients.
fn native_group_norm(input: &FormulaInput) -> Result<Gradients> {
    let arguments = vec![
        input.argument(0)?.clone(),
        input.argument(6)?.clone(),
        input.argument(1)?.clone(),
        input.argument(2)?.clone(),
        input.argument(7)?.clone(),
    ];
    let grads = &input.grads[..1.min(input.grads.len())];
    let mut out = as_call(
        input,
        "aten::group_norm",
        arguments,
        &[Some(0), None, Some(1), Some(2), None],
        grads,
    )?;
    let batch = usize::try_from(input.int(3)?).unwrap_or(0);
    let groups = usize::try_from(input.int(6)?).unwrap_or(0);
    add_statistics_gradients(input, &mut out, batch * groups, input.number(7)?)?;
    Ok(out)
}

/// `msort(self)` is `sort(self, 0)`'s values.
fn msort(input: &FormulaInput) -> Result<Gradients> {
    let arguments = vec![input.argument(0)?.clone(), int(0), IValue::Bool(false)];
    let grads = vec![input.grads.first().cloned().flatten(), None];
    as_call(
        input,
        "aten::sort",
        arguments,
        &[Some(0), None, None],
        &grads,
    )
}

/// `var_mean`/`std_mean(self, unbiased)`: the first output's gradient through `var`/`std`,
/// the mean's spread evenly.
fn spread_and_mean(input: &FormulaInput, name: &str) -> Result<Gradients> {
    spread_and_mean_over(input, name, None)
}

/// The `.dim`/`.correction` overloads: `(self, dim, unbiased or correction, keepdim)`.
fn spread_and_mean_dims(input: &FormulaInput, name: &str) -> Result<Gradients> {
    let rank = input.sizes(0)?.len();
    let dims = reduced_dims(input.argument(1)?, rank)?;
    let keepdim = input.argument(3)?.to_bool()?;
    spread_and_mean_over(input, name, Some((dims, keepdim)))
}

fn var_mean_dim(input: &FormulaInput) -> Result<Gradients> {
    spread_and_mean_dims(input, "aten::var.dim")
}

fn var_mean_correction(input: &FormulaInput) -> Result<Gradients> {
    spread_and_mean_dims(input, "aten::var.correction")
}

fn std_mean_dim(input: &FormulaInput) -> Result<Gradients> {
    spread_and_mean_dims(input, "aten::std.dim")
}

fn std_mean_correction(input: &FormulaInput) -> Result<Gradients> {
    spread_and_mean_dims(input, "aten::std.correction")
}

fn spread_and_mean_over(
    input: &FormulaInput,
    name: &str,
    reduction: Option<(Vec<usize>, bool)>,
) -> Result<Gradients> {
    let first = vec![input.grads.first().cloned().flatten()];
    let mut out = as_call(
        input,
        name,
        input.arguments.to_vec(),
        &(0..input.arguments.len()).map(Some).collect::<Vec<_>>(),
        &first,
    )?;
    let sizes = input.sizes(0)?;
    let (mean_grad, count) = match &reduction {
        None => (input.grad(1)?.clone(), sizes.iter().product::<usize>()),
        Some((dims, keepdim)) => (
            restore_dims(input.grad(1)?, dims, *keepdim)?,
            dims.iter().map(|&dim| sizes[dim]).product::<usize>(),
        ),
    };
    let mean_grad = call::scale(&mean_grad, 1.0 / count.max(1) as f64)?;
    let spread = call::expand(&mean_grad, &sizes)?;
    out[0] = Some(match out[0].take() {
        Some(gradient) => call::add(&gradient, &spread)?,
        None => spread,
    });
    Ok(out)
}

fn var_mean(input: &FormulaInput) -> Result<Gradients> {
    spread_and_mean(input, "aten::var")
}

fn std_mean(input: &FormulaInput) -> Result<Gradients> {
    spread_and_mean(input, "aten::std")
}

/// `sum_to_size(self, size)`: the gradient expanded back to `self`.
fn sum_to_size(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(call::expand(input.grad(0)?, &input.sizes(0)?)?);
    Ok(out)
}

/// `repeat(self, repeats)`: the gradient of each copy summed; the leading repeats add new
/// dimensions.
fn repeat_with(input: &FormulaInput, repeats: &[i64]) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    if repeats.len() < sizes.len() {
        return Err(refuse(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor",
        ));
    }
    let lead = repeats.len() - sizes.len();
    let mut split_sizes = Vec::new();
    let mut summed = Vec::new();
    for (position, &count) in repeats.iter().enumerate() {
        let count = usize::try_from(count).unwrap_or(0);
        if position < lead {
            summed.push(split_sizes.len() as i64);
            split_sizes.push(count);
        } else {
            summed.push(split_sizes.len() as i64);
            split_sizes.push(count);
            split_sizes.push(sizes[position - lead]);
        }
    }
    let split = reshape(input.grad(0)?, &split_sizes)?;
    let total = call::sum_dims(&split, &summed, false)?;
    let mut out = input.none();
    out[0] = Some(reshape(&total, &sizes)?);
    Ok(out)
}

fn repeat(input: &FormulaInput) -> Result<Gradients> {
    repeat_with(input, &input.ints(1)?)
}

/// `tile(self, dims)`: `repeat` with `dims` padded by leading ones to the rank.
fn tile(input: &FormulaInput) -> Result<Gradients> {
    let rank = input.sizes(0)?.len();
    let dims = input.ints(1)?;
    let mut repeats = vec![1i64; rank.saturating_sub(dims.len())];
    repeats.extend(dims);
    repeat_with(input, &repeats)
}

/// `addmv(self, mat, vec, beta, alpha) = beta self + alpha mat @ vec`.
fn addmv(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let (beta, alpha) = (input.number(3)?, input.number(4)?);
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(sum_to(&call::scale(grad, beta)?, &input.sizes(0)?)?);
    }
    if input.needs(1) {
        let outer = call1(
            "aten::outer",
            vec![grad.clone(), input.argument(2)?.clone()],
        )?;
        out[1] = Some(call::scale(&outer, alpha)?);
    }
    if input.needs(2) {
        let product = call1("aten::mv", vec![call::t(input.argument(1)?)?, grad.clone()])?;
        out[2] = Some(call::scale(&product, alpha)?);
    }
    Ok(out)
}

/// `addr(self, vec1, vec2, beta, alpha) = beta self + alpha vec1 ⊗ vec2`.
fn addr(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let (beta, alpha) = (input.number(3)?, input.number(4)?);
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(sum_to(&call::scale(grad, beta)?, &input.sizes(0)?)?);
    }
    if input.needs(1) {
        let product = call1("aten::mv", vec![grad.clone(), input.argument(2)?.clone()])?;
        out[1] = Some(call::scale(&product, alpha)?);
    }
    if input.needs(2) {
        let product = call1("aten::mv", vec![call::t(grad)?, input.argument(1)?.clone()])?;
        out[2] = Some(call::scale(&product, alpha)?);
    }
    Ok(out)
}

/// `inner(self, other)`: `tensordot` over both last dims (a 0-d operand multiplies).
fn inner(input: &FormulaInput) -> Result<Gradients> {
    let (a_rank, b_rank) = (input.sizes(0)?.len(), input.sizes(1)?.len());
    if a_rank == 0 || b_rank == 0 {
        return same_as(input, "aten::mul.Tensor");
    }
    let arguments = vec![
        input.argument(0)?.clone(),
        input.argument(1)?.clone(),
        ints(&[a_rank as i64 - 1]),
        ints(&[b_rank as i64 - 1]),
    ];
    as_call(
        input,
        "aten::tensordot",
        arguments,
        &[Some(0), Some(1), None, None],
        input.grads,
    )
}

/// `dist(self, other, p) = ||self - other||_p` over all elements.
fn dist(input: &FormulaInput) -> Result<Gradients> {
    let p = input.number(2)?;
    let difference = call::sub(input.argument(0)?, input.argument(1)?)?;
    let gradient = if p == 0.0 {
        call::scale(&difference, 0.0)?
    } else {
        let norm = recompute1("aten::dist", input)?;
        let rank = call::sizes(&difference)?.len();
        let dims: Vec<usize> = (0..rank).collect();
        norm_backward(input.grad(0)?, &difference, p, &norm, &dims, false)?
    };
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(sum_to(&gradient, &input.sizes(0)?)?);
    }
    if input.needs(1) {
        out[1] = Some(sum_to(&call::neg(&gradient)?, &input.sizes(1)?)?);
    }
    Ok(out)
}

/// `logaddexp2(a, b)`: `a`'s share is `sigmoid((a - b) ln 2)`.
fn logaddexp2(input: &FormulaInput) -> Result<Gradients> {
    let (a, b) = (input.argument(0)?, input.argument(1)?);
    let grad = input.grad(0)?;
    let mut out = input.none();
    for (index, (this, other)) in [(a, b), (b, a)].into_iter().enumerate() {
        if input.needs(index) {
            let share = call::unary(
                "aten::sigmoid",
                &call::scale(&call::sub(this, other)?, std::f64::consts::LN_2)?,
            )?;
            out[index] = Some(sum_to(&mul(grad, &share)?, &input.sizes(index)?)?);
        }
    }
    Ok(out)
}

/// `copysign(self, other)`: `result / self` (0 where `self` is 0); `other` gets none.
fn copysign(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let result = recompute1("aten::copysign.Tensor", input)?;
    let ratio = call::div(&result, x)?;
    let nonzero = against("aten::ne.Scalar", x, 0.0)?;
    let mut out = input.none();
    if input.needs(0) {
        let gradient = mul(input.grad(0)?, &keep_where(&nonzero, &ratio)?)?;
        out[0] = Some(sum_to(&gradient, &input.sizes(0)?)?);
    }
    if input.needs(1) {
        out[1] = Some(call::zeros(&input.sizes(1)?, input.dtype(1)?)?);
    }
    Ok(out)
}

/// `ldexp(self, other) = self * 2^other`.
fn ldexp(input: &FormulaInput) -> Result<Gradients> {
    let (x, exponent) = (input.argument(0)?, input.argument(1)?);
    let power = call1("aten::pow.Scalar", vec![float(2.0), exponent.clone()])?;
    let grad = input.grad(0)?;
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(sum_to(&mul(grad, &power)?, &input.sizes(0)?)?);
    }
    if input.needs(1) {
        let scaled = call::scale(&mul(&mul(grad, x)?, &power)?, std::f64::consts::LN_2)?;
        out[1] = Some(sum_to(&scaled, &input.sizes(1)?)?);
    }
    Ok(out)
}

/// `diag_embed(self, offset, dim1, dim2)`: the gradient's diagonal.
fn diag_embed(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(call1(
        "aten::diagonal",
        vec![
            input.grad(0)?.clone(),
            input.argument(1)?.clone(),
            input.argument(2)?.clone(),
            input.argument(3)?.clone(),
        ],
    )?);
    Ok(out)
}

/// `diagflat(self, offset)`: the gradient's diagonal, in `self`'s shape.
fn diagflat(input: &FormulaInput) -> Result<Gradients> {
    let diagonal = call1(
        "aten::diagonal",
        vec![input.grad(0)?.clone(), input.argument(1)?.clone()],
    )?;
    let mut out = input.none();
    out[0] = Some(reshape(&diagonal, &input.sizes(0)?)?);
    Ok(out)
}

/// `renorm(self, p, dim, maxnorm)`: slices along `dim` whose p-norm exceeds `maxnorm` are
/// scaled to it (`renorm_backward`).
fn renorm(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let grad = input.grad(0)?;
    let p = input.number(1)?;
    let rank = input.sizes(0)?.len();
    let dim = super::wrap_dim(input.int(2)?, rank);
    let maxnorm = input.number(3)?;
    let reduce: Vec<usize> = (0..rank).filter(|&d| d != dim).collect();
    let reduce_values: Vec<i64> = reduce.iter().map(|&d| d as i64).collect();
    let norm = call1(
        "aten::linalg_vector_norm",
        vec![
            x.clone(),
            float(p),
            ints(&reduce_values),
            IValue::Bool(true),
        ],
    )?;
    let projected = call::sum_dims(&mul(x, grad)?, &reduce_values, true)?;
    let through_norm = norm_backward(&projected, x, p, &norm, &reduce, true)?;
    let inverse = call::unary("aten::reciprocal", &call::add_scalar(&norm, 1e-7)?)?;
    let scaled = call::scale(
        &mul(&inverse, &call::sub(grad, &mul(&inverse, &through_norm)?)?)?,
        maxnorm,
    )?;
    let over = against("aten::gt.Scalar", &norm, maxnorm)?;
    let mut out = input.none();
    out[0] = Some(call1("aten::where.self", vec![over, scaled, grad.clone()])?);
    Ok(out)
}

/// `diagonal_scatter(self, src, offset, dim1, dim2)`: `self` keeps the gradient off the
/// diagonal, `src` gets the diagonal.
fn diagonal_scatter(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let placement = [
        input.argument(2)?.clone(),
        input.argument(3)?.clone(),
        input.argument(4)?.clone(),
    ];
    let mut out = input.none();
    if input.needs(0) {
        let zeros = call::zeros(&input.sizes(1)?, input.dtype(0)?)?;
        let mut arguments = vec![grad.clone(), zeros];
        arguments.extend(placement.iter().cloned());
        out[0] = Some(call1("aten::diagonal_scatter", arguments)?);
    }
    if input.needs(1) {
        let mut arguments = vec![grad.clone()];
        arguments.extend(placement.iter().cloned());
        out[1] = Some(call1("aten::diagonal", arguments)?);
    }
    Ok(out)
}

/// `nextafter(self, other)`: the result moves with `self` (one ulp away); `other` only picks
/// the direction.
fn nextafter(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(sum_to(input.grad(0)?, &input.sizes(0)?)?);
    }
    if input.needs(1) {
        out[1] = Some(call::zeros(&input.sizes(1)?, input.dtype(1)?)?);
    }
    Ok(out)
}

/// `cov(self, correction, fweights, aweights)` without weights: `C = Xc Xc^T / (N - c)` for
/// the centred rows `Xc` (a 1-D input is one row), so `dX = (G + G^T) Xc / (N - c)`.
fn cov(input: &FormulaInput) -> Result<Gradients> {
    if !input.argument(2)?.is_none() || !input.argument(3)?.is_none() {
        return Err(refuse(
            "the derivative for 'cov' with fweights or aweights is not implemented.",
        ));
    }
    let sizes = input.sizes(0)?;
    let x = input.argument(0)?;
    let rows = if sizes.len() < 2 {
        reshape(x, &[1, sizes.iter().product()])?
    } else {
        x.clone()
    };
    let variables = call::sizes(&rows)?[0];
    let grad = reshape(input.grad(0)?, &[variables, variables])?;
    let gradient = cov_backward(&grad, &rows, input.number(1)?)?;
    let mut out = input.none();
    out[0] = Some(reshape(&gradient, &sizes)?);
    Ok(out)
}

/// The rows' gradient for `grad`, the gradient of their covariance with `correction`.
fn cov_backward(grad: &IValue, rows: &IValue, correction: f64) -> Result<IValue> {
    let observations = call::sizes(rows)?[1];
    let divisor = observations as f64 - correction;
    let centred = call::sub(rows, &call::mean_dims(rows, &[1], true)?)?;
    let symmetric = call::add(grad, &call::t(grad)?)?;
    call::scale(&call::mm(&symmetric, &centred)?, 1.0 / divisor)
}

/// `corrcoef(self) = C / (s s^T)` with `C = cov(self)`, `s = sqrt(diag(C))`, clipped to
/// [-1, 1] (no gradient where the clip acts): `dC = dR / (s s^T)` plus, on the diagonal,
/// `-sum_j (dR R)_ij + (dR R)_ji) / (2 C_ii)`.
fn corrcoef(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let x = input.argument(0)?;
    let rows = if sizes.len() < 2 {
        reshape(x, &[1, sizes.iter().product()])?
    } else {
        x.clone()
    };
    let variables = call::sizes(&rows)?[0];
    let covariance = call1("aten::cov", vec![rows.clone()])?;
    let covariance = reshape(&covariance, &[variables, variables])?;
    let variance = call1("aten::diagonal", vec![covariance.clone()])?;
    let deviation = call::unary("aten::sqrt", &variance)?;
    let scale = call1("aten::outer", vec![deviation.clone(), deviation])?;
    let correlation = call::div(&covariance, &scale)?;
    let inside = super::support::binary(
        "aten::logical_and",
        &against("aten::ge.Scalar", &correlation, -1.0)?,
        &against("aten::le.Scalar", &correlation, 1.0)?,
    )?;
    let grad = reshape(input.grad(0)?, &[variables, variables])?;
    let grad = keep_where(&inside, &grad)?;
    let weighted = mul(&grad, &correlation)?;
    let spread = call::add(
        &call::sum_dims(&weighted, &[1], false)?,
        &call::sum_dims(&weighted, &[0], false)?,
    )?;
    let diagonal = call::div(&call::scale(&spread, -0.5)?, &variance)?;
    let grad_covariance = call::add(
        &call::div(&grad, &scale)?,
        &call1("aten::diag_embed", vec![diagonal])?,
    )?;
    let gradient = cov_backward(&grad_covariance, &rows, 1.0)?;
    let mut out = input.none();
    out[0] = Some(reshape(&gradient, &sizes)?);
    Ok(out)
}

formula_table![
    ("aten::alias_copy", "AliasBackward0", alias_copy, &[0]),
    (
        "aten::as_strided_copy",
        "AsStridedBackward0",
        as_strided_copy,
        &[0]
    ),
    (
        "aten::diagonal_copy",
        "DiagonalBackward0",
        diagonal_copy,
        &[0]
    ),
    (
        "aten::linalg_diagonal",
        "DiagonalBackward0",
        linalg_diagonal,
        &[0]
    ),
    ("aten::expand_copy", "ExpandBackward0", expand_copy, &[0]),
    ("aten::narrow_copy", "NarrowBackward0", narrow_copy, &[0]),
    ("aten::permute_copy", "PermuteBackward0", permute_copy, &[0]),
    (
        "aten::split_with_sizes_copy",
        "SplitWithSizesBackward0",
        split_with_sizes_copy,
        &[0]
    ),
    ("aten::squeeze_copy", "SqueezeBackward0", squeeze_copy, &[0]),
    (
        "aten::squeeze_copy.dim",
        "SqueezeBackward1",
        squeeze_copy_dim,
        &[0]
    ),
    (
        "aten::squeeze_copy.dims",
        "SqueezeBackward2",
        squeeze_copy_dims,
        &[0]
    ),
    ("aten::t_copy", "TBackward0", t_copy, &[0]),
    (
        "aten::transpose_copy.int",
        "TransposeBackward0",
        transpose_copy,
        &[0]
    ),
    (
        "aten::unbind_copy.int",
        "UnbindBackward0",
        unbind_copy,
        &[0]
    ),
    ("aten::unfold_copy", "UnfoldBackward0", unfold_copy, &[0]),
    (
        "aten::unsqueeze_copy",
        "UnsqueezeBackward0",
        unsqueeze_copy,
        &[0]
    ),
    ("aten::view_copy", "ViewBackward0", view_copy, &[0]),
    (
        "aten::unsafe_chunk",
        "UnsafeSplitBackward0",
        unsafe_chunk,
        &[0]
    ),
    (
        "aten::unsafe_split.Tensor",
        "UnsafeSplitBackward0",
        unsafe_split,
        &[0]
    ),
    (
        "aten::unsafe_split_with_sizes",
        "UnsafeSplitWithSizesBackward0",
        unsafe_split_with_sizes,
        &[0]
    ),
    (
        "aten::to.prim_dtype",
        "ToCopyBackward0",
        to_prim_dtype,
        &[0]
    ),
    (
        "aten::native_layer_norm",
        "NativeLayerNormBackward0",
        native_layer_norm,
        &[0, 2]
    ),
    (
        "aten::native_group_norm",
        "NativeGroupNormBackward0",
        native_group_norm,
        &[0, 1]
    ),
    (
        "aten::float_power.Tensor_Tensor",
        "PowBackward1",
        float_power_tensor,
        &[0, 1]
    ),
    (
        "aten::float_power.Tensor_Scalar",
        "PowBackward0",
        float_power_scalar,
        &[0]
    ),
    ("aten::positive", "PositiveBackward0", positive, &[]),
    ("aten::msort", "SortBackward0", msort, &[0]),
    ("aten::var_mean", "VarMeanBackward0", var_mean, &[0]),
    ("aten::std_mean", "StdMeanBackward0", std_mean, &[0]),
    ("aten::var_mean.dim", "VarMeanBackward0", var_mean_dim, &[0]),
    (
        "aten::var_mean.correction",
        "VarMeanBackward0",
        var_mean_correction,
        &[0]
    ),
    ("aten::std_mean.dim", "StdMeanBackward0", std_mean_dim, &[0]),
    (
        "aten::std_mean.correction",
        "StdMeanBackward0",
        std_mean_correction,
        &[0]
    ),
    ("aten::sum_to_size", "SumToSizeBackward0", sum_to_size, &[]),
    ("aten::repeat", "RepeatBackward0", repeat, &[]),
    ("aten::tile", "RepeatBackward0", tile, &[]),
    ("aten::addmv", "AddmvBackward0", addmv, &[1, 2]),
    ("aten::addr", "AddrBackward0", addr, &[1, 2]),
    ("aten::inner", "MmBackward0", inner, &[0, 1]),
    ("aten::dist", "DistBackward0", dist, &[0, 1]),
    (
        "aten::logaddexp2",
        "Logaddexp2Backward0",
        logaddexp2,
        &[0, 1]
    ),
    (
        "aten::copysign.Tensor",
        "CopysignBackward0",
        copysign,
        &[0, 1]
    ),
    ("aten::ldexp.Tensor", "LdexpBackward0", ldexp, &[0, 1]),
    ("aten::diag_embed", "DiagEmbedBackward0", diag_embed, &[]),
    ("aten::renorm", "RenormBackward0", renorm, &[0]),
    ("aten::nextafter", "NextafterBackward0", nextafter, &[]),
    ("aten::cov", "CovBackward0", cov, &[0]),
    ("aten::corrcoef", "CorrcoefBackward0", corrcoef, &[0]),
    (
        "aten::diagonal_scatter",
        "DiagonalScatterBackward0",
        diagonal_scatter,
        &[]
    ),
    ("aten::diagflat", "DiagflatBackward0", diagflat, &[]),
];
