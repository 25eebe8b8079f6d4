//! The general eigendecomposition's gradient through its eigenvalues (`linalg_eigvals`, and
//! `linalg_eig` when only the eigenvalues reach the loss): with `A = V diag(L) V^{-1}`,
//! `gA = V^{-H} diag(gL) V^H` (PyTorch's `linalg_eig_backward` with no eigenvector
//! gradient), its real part for a real `A`.

use ferrojit_runtime::{IValue, Result};

use super::support::refuse;
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call, call1, matmul, tensor_list};

fn adjoint(value: &IValue) -> Result<IValue> {
    call::unary("aten::mH", value)
}

/// `A^{-1} B` for complex `A` and `B` through the real system of twice the size
/// (`[[P, -Q], [Q, P]] [Xr; Xi] = [Br; Bi]` for `A = P + iQ`): ferrojit's solver is real.
fn complex_solve(a: &IValue, b: &IValue) -> Result<IValue> {
    let (p, q) = (call::unary("aten::real", a)?, call::unary("aten::imag", a)?);
    let join = |items: Vec<IValue>, dim: i64| {
        call1("aten::cat", vec![tensor_list(items), IValue::Int(dim)])
    };
    let top = join(vec![p.clone(), call::neg(&q)?], -1)?;
    let bottom = join(vec![q, p], -1)?;
    let system = join(vec![top, bottom], -2)?;
    let rhs = join(
        vec![call::unary("aten::real", b)?, call::unary("aten::imag", b)?],
        -2,
    )?;
    let solution = call1("aten::linalg_solve", vec![system, rhs, IValue::Bool(true)])?;
    let rows = *call::sizes(a)?
        .last()
        .ok_or_else(|| refuse("linalg_eig: a 0-d input"))? as i64;
    let part = |start: i64| {
        call1(
            "aten::narrow",
            vec![
                solution.clone(),
                IValue::Int(-2),
                IValue::Int(start),
                IValue::Int(rows),
            ],
        )
    };
    call1("aten::complex", vec![part(0)?, part(rows)?])
}

/// `V^{-H} diag(gL) V^H` for the eigenvectors of `a` (recomputed) and the eigenvalue
/// gradient `grad`.
fn through_eigenvalues(input: &FormulaInput, grad: &IValue) -> Result<Gradients> {
    let a = input.argument(0)?;
    let factors = call("aten::linalg_eig", vec![a.clone()])?;
    let vectors = factors
        .get(1)
        .ok_or_else(|| refuse("linalg_eig returned no eigenvectors"))?;
    let vectors_h = adjoint(vectors)?;
    let scaled = matmul(&call::unary("aten::diag_embed", grad)?, &vectors_h)?;
    let mut gradient = complex_solve(&vectors_h, &scaled)?;
    if !input.dtype(0)?.is_complex() {
        gradient = call::unary("aten::real", &gradient)?;
    }
    let mut out = input.none();
    out[0] = Some(gradient);
    Ok(out)
}

fn eigvals(input: &FormulaInput) -> Result<Gradients> {
    through_eigenvalues(input, input.grad(0)?)
}

/// `linalg_eig(A) -> (L, V)`: the eigenvectors' phase is arbitrary, so only a loss that
/// reaches them through gauge-invariant functions is meaningful; PyTorch checks that, and
/// ferrojit supports the eigenvalue gradient only (a nonzero eigenvector gradient is refused).
fn eig(input: &FormulaInput) -> Result<Gradients> {
    let vectors_grad = input.grad(1)?;
    let magnitude = call::unary("aten::abs", vectors_grad)?;
    let largest = call1("aten::max", vec![magnitude])?;
    if call::tensor(&largest)?.item()?.to_f64() != 0.0 {
        return Err(refuse(
            "linalg_eig: the gradient through the eigenvectors is not supported",
        ));
    }
    through_eigenvalues(input, input.grad(0)?)
}

formula_table![
    ("aten::linalg_eigvals", "LinalgEigBackward0", eigvals, &[0]),
    ("aten::linalg_eig", "LinalgEigBackward0", eig, &[0]),
];
