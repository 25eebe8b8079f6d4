//! Derivatives of the operators PyTorch dispatches below a public one (`_softmax` under
//! `softmax`, `_to_copy` under `to`, `_linalg_det` under `linalg_det`, `_fft_r2c` under
//! `fft_rfftn`, `nll_loss_forward` under `nll_loss`, ...): an exported program or a graph
//! that names them directly runs these. Most are the public operator's formula, with the
//! arguments rearranged where the two schemas differ; `_safe_softmax` and `_trilinear`
//! have their own.

use ferrojit_runtime::{IValue, Result};

use super::support::refuse;
use super::variants::{as_call, same_as};
use super::{wrap_dim, Formula, FormulaInput, Gradients};
use crate::call::{self, call1, int, ints, mul, sub, sum_dims};

macro_rules! same_formula {
    ($function:ident, $name:literal) => {
        fn $function(input: &FormulaInput) -> Result<Gradients> {
            same_as(input, $name)
        }
    };
}

same_formula!(adaptive_avg_pool2d, "aten::adaptive_avg_pool2d");
same_formula!(adaptive_avg_pool3d, "aten::adaptive_avg_pool3d");
same_formula!(cdist_forward, "aten::cdist");
same_formula!(pdist_forward, "aten::pdist");
same_formula!(conj, "aten::conj");
same_formula!(conj_physical, "aten::conj_physical");
same_formula!(to_copy, "aten::to.dtype");
// `half_to_float` (argument 2) only widens a half input; the formulas read `self` and `dim`.
same_formula!(softmax, "aten::softmax.int");
same_formula!(log_softmax, "aten::log_softmax.int");
// The extra results (LU factors, pivots, info) are not differentiable: the public
// formulas read the gradients of the leading results only.
same_formula!(linalg_det, "aten::linalg_det");
same_formula!(linalg_slogdet, "aten::linalg_slogdet");
same_formula!(linalg_solve_ex, "aten::linalg_solve_ex");
// The `(output, total_weight)` / `(output, is_target)` forms of the losses.
same_formula!(nll_loss_forward, "aten::nll_loss");
same_formula!(
    multilabel_margin_loss_forward,
    "aten::multilabel_margin_loss"
);

/// `_linalg_svd(A, full_matrices, compute_uv, *, driver)` as
/// `linalg_svd(A, full_matrices, *, driver)`.
fn linalg_svd(input: &FormulaInput) -> Result<Gradients> {
    let arguments = vec![
        input.argument(0)?.clone(),
        input.argument(1)?.clone(),
        input.argument(3)?.clone(),
    ];
    as_call(
        input,
        "aten::linalg_svd",
        arguments,
        &[Some(0), None, None],
        input.grads,
    )
}

/// `_linalg_eigh(A, UPLO, compute_v)` as `linalg_eigh(A, UPLO)` (`compute_v` only decides
/// whether the vectors are returned).
fn linalg_eigh(input: &FormulaInput) -> Result<Gradients> {
    let arguments = vec![input.argument(0)?.clone(), input.argument(1)?.clone()];
    as_call(
        input,
        "aten::linalg_eigh",
        arguments,
        &[Some(0), None],
        input.grads,
    )
}

/// The `norm` string of a transform from the kernels' `normalization` number (0: no
/// scaling, 1: `1/sqrt(n)`, 2: `1/n`): a forward transform's default (`"backward"`) is no
/// scaling, an inverse transform's is `1/n`.
fn norm_name(normalization: i64, forward: bool) -> Result<&'static str> {
    match (normalization, forward) {
        (0, true) | (2, false) => Ok("backward"),
        (2, true) | (0, false) => Ok("forward"),
        (1, _) => Ok("ortho"),
        (other, _) => Err(refuse(format!(
            "fft: normalization must be 0, 1 or 2, got {other}"
        ))),
    }
}

/// The transformed dims of an `_fft_*` call, wrapped against the input's rank.
fn fft_dims(input: &FormulaInput) -> Result<Vec<i64>> {
    let rank = input.sizes(0)?.len();
    Ok(input
        .ints(1)?
        .into_iter()
        .map(|dim| wrap_dim(dim, rank) as i64)
        .collect())
}

/// Applies the `fft_*n(self, s, dim, norm)` formula `name` to this `_fft_*` call.
fn as_fft(input: &FormulaInput, name: &str, s: IValue, forward: bool) -> Result<Gradients> {
    let norm = norm_name(input.int(2)?, forward)?;
    let arguments = vec![
        input.argument(0)?.clone(),
        s,
        ints(&fft_dims(input)?),
        IValue::Str(norm.into()),
    ];
    as_call(
        input,
        name,
        arguments,
        &[Some(0), None, None, None],
        input.grads,
    )
}

/// `_fft_r2c(self, dim, normalization, onesided)`: `fft_rfftn`, or `fft_fftn` of the real
/// input when two-sided.
fn fft_r2c(input: &FormulaInput) -> Result<Gradients> {
    let onesided = input.argument(3)?.to_bool()?;
    let name = if onesided {
        "aten::fft_rfftn"
    } else {
        "aten::fft_fftn"
    };
    as_fft(input, name, IValue::None, true)
}

/// `_fft_c2c(self, dim, normalization, forward)`: `fft_fftn` or `fft_ifftn`.
fn fft_c2c(input: &FormulaInput) -> Result<Gradients> {
    let forward = input.argument(3)?.to_bool()?;
    let name = if forward {
        "aten::fft_fftn"
    } else {
        "aten::fft_ifftn"
    };
    as_fft(input, name, IValue::None, forward)
}

/// `_fft_c2r(self, dim, normalization, last_dim_size)`: `fft_irfftn` with the lengths the
/// input has along `dim`, the last one `last_dim_size`.
fn fft_c2r(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let dims = fft_dims(input)?;
    let mut lengths: Vec<i64> = dims.iter().map(|&dim| sizes[dim as usize] as i64).collect();
    if let Some(last) = lengths.last_mut() {
        *last = input.int(3)?;
    }
    as_fft(input, "aten::fft_irfftn", ints(&lengths), false)
}

/// `_safe_softmax(self, dim, dtype)`: softmax's `y * (grad - sum(grad * y, dim))` with the
/// safe result, which is zero (and so gives zero gradient) on rows that are all `-inf`.
fn safe_softmax(input: &FormulaInput) -> Result<Gradients> {
    let dim = input.int(1)?;
    let y = call1(
        "aten::_safe_softmax",
        vec![
            input.argument(0)?.clone(),
            int(dim),
            input.argument(2)?.clone(),
        ],
    )?;
    let grad = input.grad(0)?;
    let y = call::mask_like(&y, grad)?;
    let inner = sum_dims(&mul(grad, &y)?, &[dim], true)?;
    let mut gradient = mul(&y, &sub(grad, &inner)?)?;
    let dtype = input.dtype(0)?;
    if call::tensor(&gradient)?.dtype() != dtype {
        gradient = call1(
            "aten::to.dtype",
            vec![gradient, int(dtype.scalar_type_index())],
        )?;
    }
    let mut out = input.none();
    out[0] = Some(gradient);
    Ok(out)
}

/// `_trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim)`: each input's
/// gradient is the same product with the output gradient in its place, the gradient
/// expanded where the output summed (`sumdim`) and summed where the input was expanded.
fn trilinear(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let expands = [input.argument(3)?, input.argument(4)?, input.argument(5)?];
    let sumdim = input.argument(6)?;
    let mut out = input.none();
    for (position, slot) in out.iter_mut().enumerate().take(3) {
        if !input.needs(position) {
            continue;
        }
        let mut factors = Vec::with_capacity(3);
        let mut dims = Vec::with_capacity(4);
        for (other, expand) in expands.iter().enumerate() {
            if other == position {
                factors.push(grad.clone());
                dims.push(sumdim.clone());
            } else {
                factors.push(input.argument(other)?.clone());
                dims.push((*expand).clone());
            }
        }
        dims.push(expands[position].clone());
        let mut arguments = factors;
        arguments.extend(dims);
        *slot = Some(call1("aten::_trilinear", arguments)?);
    }
    Ok(out)
}

formula_table![
    (
        "aten::_adaptive_avg_pool2d",
        "AdaptiveAvgPool2DBackward0",
        adaptive_avg_pool2d,
        &[0]
    ),
    (
        "aten::_adaptive_avg_pool3d",
        "AdaptiveAvgPool3DBackward0",
        adaptive_avg_pool3d,
        &[0]
    ),
    (
        "aten::_cdist_forward",
        "CdistBackward0",
        cdist_forward,
        &[0, 1]
    ),
    (
        "aten::_pdist_forward",
        "PdistBackward0",
        pdist_forward,
        &[0]
    ),
    ("aten::_conj", "ConjBackward0", conj, &[]),
    (
        "aten::_conj_physical",
        "ConjPhysicalBackward0",
        conj_physical,
        &[]
    ),
    ("aten::_to_copy", "ToCopyBackward0", to_copy, &[]),
    ("aten::_softmax", "SoftmaxBackward0", softmax, &[0]),
    (
        "aten::_log_softmax",
        "LogSoftmaxBackward0",
        log_softmax,
        &[0]
    ),
    (
        "aten::_safe_softmax",
        "SafeSoftmaxBackward0",
        safe_softmax,
        &[0]
    ),
    ("aten::_linalg_det", "LinalgDetBackward0", linalg_det, &[0]),
    (
        "aten::_linalg_slogdet",
        "LinalgSlogdetBackward0",
        linalg_slogdet,
        &[0]
    ),
    (
        "aten::_linalg_solve_ex",
        "LinalgSolveExBackward0",
        linalg_solve_ex,
        &[0, 1]
    ),
    (
        "aten::_linalg_eigh",
        "LinalgEighBackward0",
        linalg_eigh,
        &[0]
    ),
    ("aten::_linalg_svd", "LinalgSvdBackward0", linalg_svd, &[0]),
    ("aten::_fft_r2c", "FftR2CBackward0", fft_r2c, &[]),
    ("aten::_fft_c2c", "FftC2CBackward0", fft_c2c, &[]),
    ("aten::_fft_c2r", "FftC2RBackward0", fft_c2r, &[]),
    (
        "aten::_trilinear",
        "TrilinearBackward0",
        trilinear,
        &[0, 1, 2]
    ),
    (
        "aten::nll_loss_forward",
        "NllLossBackward0",
        nll_loss_forward,
        &[1, 2]
    ),
    (
        "aten::nll_loss2d_forward",
        "NllLoss2DBackward0",
        nll_loss_forward,
        &[1, 2]
    ),
    (
        "aten::multilabel_margin_loss_forward",
        "MultilabelMarginLossBackward0",
        multilabel_margin_loss_forward,
        &[0, 1]
    ),
];
