//! The general eigendecomposition's gradient (`linalg_eigvals`, `linalg_eig`), after
//! PyTorch's `linalg_eig_backward`: with `A = V diag(L) V^{-1}`, `gA = V^{-H} inner V^H`,
//! `inner` the eigenvalue gradient on the diagonal and the eigenvector gradient's
//! gauge-invariant part off it; its real part for a real `A`.

use ferrojit_runtime::{IValue, Result};

use super::support::refuse;
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call, call1, matmul, tensor_list};

/// The conjugate transpose, as `conj_physical(transpose)`: in a recorded backward these two
/// differentiate correctly for complex values, where `mH`'s formula is `mT`'s.
fn adjoint(value: &IValue) -> Result<IValue> {
    call::unary("aten::conj_physical", &call::transpose(value, -2, -1)?)
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

/// `V^{-H} inner V^H`, with `inner = diag(gL)` plus, when the eigenvectors have a gradient,
/// PyTorch's `linalg_eig_backward` term for it:
/// `(V^H gV - V^H V diag(Re(diag(V^H gV)))) / E` off the diagonal, with
/// `E[i, j] = conj(L[j]) - conj(L[i])`. The eigenvectors are unit vectors fixed only up to a
/// phase each, so a loss is well defined only if it does not depend on those phases; as in
/// PyTorch, a gradient whose `diag(V^H gV)` has an imaginary part beyond 1e-2 is refused.
/// The real part of the result for a real `A`.
fn eig_backward(
    input: &FormulaInput,
    grad_values: &IValue,
    grad_vectors: Option<&IValue>,
) -> Result<Gradients> {
    let a = input.argument(0)?;
    let factors = call("aten::linalg_eig", vec![a.clone()])?;
    let (values, vectors) = match factors.as_slice() {
        [values, vectors, ..] => (values, vectors),
        _ => return Err(refuse("linalg_eig returned no eigenvectors")),
    };
    let vectors_h = adjoint(vectors)?;
    let diagonal = |value: &IValue| {
        call1(
            "aten::diagonal",
            vec![
                value.clone(),
                IValue::Int(0),
                IValue::Int(-2),
                IValue::Int(-1),
            ],
        )
    };
    let as_complex = |real: &IValue| {
        let zeros = call::unary("aten::zeros_like", real)?;
        call1("aten::complex", vec![real.clone(), zeros])
    };
    let mut inner = call::unary("aten::diag_embed", &as_complex_if_real(grad_values)?)?;
    if let Some(grad_vectors) = grad_vectors {
        let projected = matmul(&vectors_h, grad_vectors)?;
        let on_diagonal = diagonal(&projected)?;
        let phase_part = call::unary("aten::imag", &on_diagonal)?;
        let largest = call1("aten::max", vec![call::unary("aten::abs", &phase_part)?])?;
        if call::tensor(&largest)?.item()?.to_f64() > 1e-2 {
            return Err(refuse(
                "linalg_eig_backward: The eigenvectors in the complex case are specified up to \
                 multiplication by e^{i phi}. The specified loss function depends on this \
                 quantity, so it is ill-defined.",
            ));
        }
        // Keeps each eigenvector's norm: removes the component along V diag(Re(diag)).
        let norm_part = as_complex(&call::unary("aten::real", &on_diagonal)?)?;
        let along = matmul(
            &vectors_h,
            &matmul(vectors, &call::unary("aten::diag_embed", &norm_part)?)?,
        )?;
        let projected = call::sub(&projected, &along)?;
        let conjugates = call::unary("aten::conj_physical", values)?;
        let unsqueeze = |value: &IValue, dim: i64| {
            call1("aten::unsqueeze", vec![value.clone(), IValue::Int(dim)])
        };
        // E with ones on its diagonal (those entries are replaced below).
        let ones = call::unary("aten::diag_embed", &call::unary("aten::ones_like", values)?)?;
        let gaps = call::add(
            &call::sub(&unsqueeze(&conjugates, -2)?, &unsqueeze(&conjugates, -1)?)?,
            &ones,
        )?;
        let quotient = call::div(&projected, &gaps)?;
        let off_diagonal = call::sub(
            &quotient,
            &call::unary("aten::diag_embed", &diagonal(&quotient)?)?,
        )?;
        inner = call::add(&inner, &off_diagonal)?;
    }
    let mut gradient = complex_solve(&vectors_h, &matmul(&inner, &vectors_h)?)?;
    if !input.dtype(0)?.is_complex() {
        gradient = call::unary("aten::real", &gradient)?;
    }
    let mut out = input.none();
    out[0] = Some(gradient);
    Ok(out)
}

/// A real eigenvalue gradient (it is complex whenever the eigenvalues are) as complex.
fn as_complex_if_real(value: &IValue) -> Result<IValue> {
    if call::tensor(value)?.dtype().is_complex() {
        return Ok(value.clone());
    }
    let zeros = call::unary("aten::zeros_like", value)?;
    call1("aten::complex", vec![value.clone(), zeros])
}

fn eigvals(input: &FormulaInput) -> Result<Gradients> {
    eig_backward(input, input.grad(0)?, None)
}

/// `linalg_eig(A) -> (L, V)`: the eigenvector gradient joins when it is not all zeros (an
/// eigenvalue-only loss leaves it zero, and the result is the same without it).
fn eig(input: &FormulaInput) -> Result<Gradients> {
    let vectors_grad = input.grad(1)?;
    let magnitude = call::unary("aten::abs", vectors_grad)?;
    let largest = call1("aten::max", vec![magnitude])?;
    let used = call::tensor(&largest)?.item()?.to_f64() != 0.0;
    eig_backward(input, input.grad(0)?, used.then_some(vectors_grad))
}

formula_table![
    ("aten::linalg_eigvals", "LinalgEigBackward0", eigvals, &[0]),
    ("aten::linalg_eig", "LinalgEigBackward0", eig, &[0]),
];
