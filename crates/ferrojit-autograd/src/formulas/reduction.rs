//! Reductions (`sum`, `mean`) and the normalizing ones (`softmax`, `log_softmax`): the
//! gradient is broadcast back over the reduced dimensions.

use ferrojit_runtime::{IValue, Result};

use super::{wrap_dim, Formula, FormulaInput, Gradients};
use crate::call::{self, call1, expand, int, mul, scale, sub, sum_dims};

/// The reduced dimensions of a `dim` argument (`None` or `[]`: all of them), sorted.
fn reduced_dims(value: &IValue, rank: usize) -> Result<Vec<usize>> {
    let dims = if value.is_none() {
        Vec::new()
    } else {
        value.to_int_vec()?
    };
    let mut dims: Vec<usize> = if dims.is_empty() {
        (0..rank).collect()
    } else {
        dims.into_iter().map(|dim| wrap_dim(dim, rank)).collect()
    };
    dims.sort_unstable();
    dims.dedup();
    Ok(dims)
}

/// Brings a reduced gradient back to `sizes`: re-inserts the dropped dims, then expands.
fn unreduce(grad: &IValue, sizes: &[usize], dims: &[usize], keepdim: bool) -> Result<IValue> {
    let mut grad = grad.clone();
    if !keepdim {
        for &dim in dims {
            grad = call1("aten::unsqueeze", vec![grad, int(dim as i64)])?;
        }
    }
    expand(&grad, sizes)
}

fn sum_all(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(expand(input.grad(0)?, &input.sizes(0)?)?);
    Ok(out)
}

fn sum_dim(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let dims = reduced_dims(input.argument(1)?, sizes.len())?;
    let keepdim = input.argument(2)?.to_bool()?;
    let mut out = input.none();
    out[0] = Some(unreduce(
        input.grad(0)?,
        &sizes,
        &dims,
        keepdim || sizes.is_empty(),
    )?);
    Ok(out)
}

fn mean_all(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let count: usize = sizes.iter().product();
    let mut out = input.none();
    out[0] = Some(scale(&expand(input.grad(0)?, &sizes)?, 1.0 / count as f64)?);
    Ok(out)
}

fn mean_dim(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let dims = reduced_dims(input.argument(1)?, sizes.len())?;
    let keepdim = input.argument(2)?.to_bool()?;
    let count: usize = dims
        .iter()
        .map(|&dim| sizes.get(dim).copied().unwrap_or(1))
        .product();
    let spread = unreduce(input.grad(0)?, &sizes, &dims, keepdim || sizes.is_empty())?;
    let mut out = input.none();
    out[0] = Some(scale(&spread, 1.0 / count as f64)?);
    Ok(out)
}

/// `y * (grad - sum(grad * y, dim))`, `y = softmax(self, dim)`.
fn softmax(input: &FormulaInput) -> Result<Gradients> {
    let dim = input.int(1)?;
    let y = call1(
        "aten::softmax.int",
        vec![input.argument(0)?.clone(), int(dim)],
    )?;
    let grad = input.grad(0)?;
    let y = call::mask_like(&y, grad)?;
    let inner = sum_dims(&mul(grad, &y)?, &[dim], true)?;
    let mut out = input.none();
    out[0] = Some(mul(&y, &sub(grad, &inner)?)?);
    Ok(out)
}

/// `grad - exp(y) * sum(grad, dim)`, `y = log_softmax(self, dim)`.
pub fn log_softmax_backward(x: &IValue, grad: &IValue, dim: i64) -> Result<IValue> {
    let probabilities = call1("aten::softmax.int", vec![x.clone(), int(dim)])?;
    let probabilities = call::mask_like(&probabilities, grad)?;
    let total = sum_dims(grad, &[dim], true)?;
    sub(grad, &mul(&probabilities, &total)?)
}

fn log_softmax(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(log_softmax_backward(
        input.argument(0)?,
        input.grad(0)?,
        input.int(1)?,
    )?);
    Ok(out)
}

pub const FORMULAS: &[(&str, Formula)] = &[
    (
        "aten::sum",
        Formula {
            name: "SumBackward0",
            saves: &[],
            apply: sum_all,
        },
    ),
    (
        "aten::sum.dim_IntList",
        Formula {
            name: "SumBackward1",
            saves: &[],
            apply: sum_dim,
        },
    ),
    (
        "aten::mean",
        Formula {
            name: "MeanBackward0",
            saves: &[],
            apply: mean_all,
        },
    ),
    (
        "aten::mean.dim",
        Formula {
            name: "MeanBackward1",
            saves: &[],
            apply: mean_dim,
        },
    ),
    (
        "aten::softmax.int",
        Formula {
            name: "SoftmaxBackward0",
            saves: &[0],
            apply: softmax,
        },
    ),
    (
        "aten::log_softmax.int",
        Formula {
            name: "LogSoftmaxBackward0",
            saves: &[0],
            apply: log_softmax,
        },
    ),
];
