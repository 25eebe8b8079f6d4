//! Matrix products: `mm`, `bmm`, `addmm`, `matmul`, `linear`. For complex `mm`, `bmm` and
//! `matmul` the other factor enters conjugated (`grad @ B^H`, `A^H @ grad`), as in PyTorch.

use ferrojit_runtime::{IValue, Result};

use super::pointwise::conjugated;
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call1, int, matmul, mm, reshape, scale, sum_to, transpose};

fn mm_formula(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(mm(grad, &conjugated(call::t(input.argument(1)?)?)?)?);
    }
    if input.needs(1) {
        out[1] = Some(mm(&conjugated(call::t(input.argument(0)?)?)?, grad)?);
    }
    Ok(out)
}

fn bmm(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let mut out = input.none();
    if input.needs(0) {
        let other = conjugated(transpose(input.argument(1)?, 1, 2)?)?;
        out[0] = Some(call1("aten::bmm", vec![grad.clone(), other])?);
    }
    if input.needs(1) {
        let this = conjugated(transpose(input.argument(0)?, 1, 2)?)?;
        out[1] = Some(call1("aten::bmm", vec![this, grad.clone()])?);
    }
    Ok(out)
}

/// `addmm(self, mat1, mat2, beta, alpha) = beta * self + alpha * mat1 @ mat2`.
fn addmm(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let beta = input.number(3)?;
    let alpha = input.number(4)?;
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(sum_to(&scale(grad, beta)?, &input.sizes(0)?)?);
    }
    if input.needs(1) {
        out[1] = Some(scale(&mm(grad, &call::t(input.argument(2)?)?)?, alpha)?);
    }
    if input.needs(2) {
        out[2] = Some(scale(&mm(&call::t(input.argument(1)?)?, grad)?, alpha)?);
    }
    Ok(out)
}

fn unsqueeze(value: &IValue, dim: i64) -> Result<IValue> {
    call1("aten::unsqueeze", vec![value.clone(), int(dim)])
}

/// `matmul` in general: 1-D operands become matrices, batch dims broadcast, and each
/// gradient is summed back to its operand's shape.
fn matmul_formula(input: &FormulaInput) -> Result<Gradients> {
    let a_sizes = input.sizes(0)?;
    let b_sizes = input.sizes(1)?;
    let a = input.argument(0)?;
    let b = input.argument(1)?;
    let mut grad = input.grad(0)?.clone();
    let a_matrix = if a_sizes.len() == 1 {
        unsqueeze(a, 0)?
    } else {
        a.clone()
    };
    let b_matrix = if b_sizes.len() == 1 {
        unsqueeze(b, 1)?
    } else {
        b.clone()
    };
    // Restore the dims matmul dropped for 1-D operands.
    if a_sizes.len() == 1 {
        grad = unsqueeze(&grad, if b_sizes.len() == 1 { 0 } else { -2 })?;
    }
    if b_sizes.len() == 1 {
        grad = unsqueeze(&grad, -1)?;
    }
    let mut out = input.none();
    if input.needs(0) {
        let full = matmul(&grad, &conjugated(transpose(&b_matrix, -1, -2)?)?)?;
        let target: Vec<usize> = call::sizes(&a_matrix)?;
        out[0] = Some(reshape(&sum_to(&full, &target)?, &a_sizes)?);
    }
    if input.needs(1) {
        let full = matmul(&conjugated(transpose(&a_matrix, -1, -2)?)?, &grad)?;
        let target: Vec<usize> = call::sizes(&b_matrix)?;
        out[1] = Some(reshape(&sum_to(&full, &target)?, &b_sizes)?);
    }
    Ok(out)
}

/// `linear(input, weight, bias) = input @ weight.T + bias`.
fn linear(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let weight_sizes = input.sizes(1)?;
    let out_features = weight_sizes.first().copied().unwrap_or(1);
    let in_features = weight_sizes.get(1).copied().unwrap_or(1);
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(matmul(grad, input.argument(1)?)?);
    }
    if input.needs(1) {
        let rows: usize = call::sizes(grad)?.iter().product::<usize>() / out_features.max(1);
        let grad_matrix = reshape(grad, &[rows, out_features])?;
        let input_matrix = reshape(input.argument(0)?, &[rows, in_features])?;
        out[1] = Some(mm(&call::t(&grad_matrix)?, &input_matrix)?);
    }
    if input.needs(2) {
        out[2] = Some(sum_to(grad, &input.sizes(2)?)?);
    }
    Ok(out)
}

pub const FORMULAS: &[(&str, Formula)] = &[
    (
        "aten::mm",
        Formula {
            name: "MmBackward0",
            saves: &[0, 1],
            apply: mm_formula,
        },
    ),
    (
        "aten::bmm",
        Formula {
            name: "BmmBackward0",
            saves: &[0, 1],
            apply: bmm,
        },
    ),
    (
        "aten::addmm",
        Formula {
            name: "AddmmBackward0",
            saves: &[1, 2],
            apply: addmm,
        },
    ),
    (
        "aten::matmul",
        Formula {
            name: "MmBackward0",
            saves: &[0, 1],
            apply: matmul_formula,
        },
    ),
    (
        "aten::linear",
        Formula {
            name: "AddmmBackward0",
            saves: &[0, 1],
            apply: linear,
        },
    ),
];
