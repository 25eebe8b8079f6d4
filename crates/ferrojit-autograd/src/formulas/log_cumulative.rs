//! The derivative of `logcumsumexp`: output `j` is `log sum_{i <= j} exp(x_i)`, so input `i`
//! receives `sum_{j >= i} grad_j exp(x_i - out_j)`, a reversed cumulative sum. As PyTorch's
//! `logcumsumexp_backward` does, the sum is taken in log space, separately for the positive
//! and the negative parts of the gradient (`exp(x_i + log sum_{j >= i} exp(log g_j - out_j))`),
//! so that large inputs (`exp(10000)`) neither overflow nor lose the result.

use ferrojit_runtime::autograd::GradModeGuard;
use ferrojit_runtime::{IValue, Result};

use super::support::{recompute1, zeros_of};
use super::{wrap_dim, Formula, FormulaInput, Gradients};
use crate::call::{self, call1, float, int, ints, mul, sub};

/// `exp(x_i + log sum_{j >= i} exp(log(max(part_j, 0)) - out_j))` along `dim`.
fn log_space_suffix(part: &IValue, x: &IValue, result: &IValue, dim: i64) -> Result<IValue> {
    let flip = |value: IValue| call1("aten::flip", vec![value, ints(&[dim])]);
    let positive = call1("aten::clamp_min", vec![part.clone(), float(0.0)])?;
    // log(0) = -inf marks the terms that add nothing.
    let logged = sub(&call::unary("aten::log", &positive)?, result)?;
    let scanned = call1("aten::logcumsumexp", vec![flip(logged)?, int(dim)])?;
    call::unary("aten::exp", &call::add(&flip(scanned)?, x)?)
}

/// The recorded form (`create_graph=True`), smooth so that it differentiates again:
/// `exp(x_i - m) * sum_{j >= i} grad_j exp(m - out_j)` with `m` the maximum along `dim`, a
/// constant (it cancels), which keeps both exponentials in range unless a prefix's scan lies
/// more than ~700 below that maximum.
fn shifted_suffix(grad: &IValue, x: &IValue, result: &IValue, dim: i64) -> Result<IValue> {
    let shift = {
        let _constant = GradModeGuard::new(false);
        call1(
            "aten::amax",
            vec![x.clone(), ints(&[dim]), IValue::Bool(true)],
        )?
    };
    let flip = |value: IValue| call1("aten::flip", vec![value, ints(&[dim])]);
    let weighted = mul(grad, &call::unary("aten::exp", &sub(&shift, result)?)?)?;
    let suffix = flip(call1("aten::cumsum", vec![flip(weighted)?, int(dim)])?)?;
    mul(&call::unary("aten::exp", &sub(x, &shift)?)?, &suffix)
}

/// `logcumsumexp(self, dim)`.
fn logcumsumexp(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let mut out = input.none();
    let grad = input.grad(0)?;
    if sizes.is_empty() {
        // A 0-d input is its own single-element scan: the identity.
        out[0] = Some(grad.clone());
        return Ok(out);
    }
    if sizes.iter().product::<usize>() == 0 {
        out[0] = Some(zeros_of(input, 0)?);
        return Ok(out);
    }
    let x = input.argument(0)?;
    let dim = wrap_dim(input.int(1)?, sizes.len()) as i64;
    let result = recompute1("aten::logcumsumexp", input)?;
    if ferrojit_runtime::autograd::is_grad_enabled() {
        out[0] = Some(shifted_suffix(grad, x, &result, dim)?);
        return Ok(out);
    }
    let from_positive = log_space_suffix(grad, x, &result, dim)?;
    let from_negative = log_space_suffix(&call::neg(grad)?, x, &result, dim)?;
    out[0] = Some(sub(&from_positive, &from_negative)?);
    Ok(out)
}

formula_table![(
    "aten::logcumsumexp",
    "LogcumsumexpBackward0",
    logcumsumexp,
    &[0]
)];
