//! Derivatives of the LU decomposition family (`linalg_lu`, `linalg_lu_factor(_ex)`,
//! `_lu_with_info`, `lu_unpack`, `linalg_lu_solve`/`lu_solve`), after PyTorch's
//! `linalg_lu_backward` and `lu_unpack_backward`: square, wide and tall matrices, through
//! triangular solves with the factors (recomputed from the saved input).

use ferrojit_runtime::{IValue, Result};

use super::support::refuse;
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call, call1, int, matmul, sub, tensor_list};

fn mt(value: &IValue) -> Result<IValue> {
    call::transpose(value, -2, -1)
}

fn tril(value: &IValue, diagonal: i64) -> Result<IValue> {
    call1("aten::tril", vec![value.clone(), int(diagonal)])
}

fn triu(value: &IValue, diagonal: i64) -> Result<IValue> {
    call1("aten::triu", vec![value.clone(), int(diagonal)])
}

fn narrow(value: &IValue, dim: i64, start: usize, length: usize) -> Result<IValue> {
    call1(
        "aten::narrow",
        vec![
            value.clone(),
            int(dim),
            int(start as i64),
            int(length as i64),
        ],
    )
}

fn cat(pieces: Vec<IValue>, dim: i64) -> Result<IValue> {
    call1("aten::cat", vec![tensor_list(pieces), int(dim)])
}

/// `linalg_solve_triangular(a, b, upper, left, unitriangular)`.
fn solve_triangular(
    a: &IValue,
    b: &IValue,
    upper: bool,
    left: bool,
    unitriangular: bool,
) -> Result<IValue> {
    call1(
        "aten::linalg_solve_triangular",
        vec![
            a.clone(),
            b.clone(),
            IValue::Bool(upper),
            IValue::Bool(left),
            IValue::Bool(unitriangular),
        ],
    )
}

fn matrix_sizes(value: &IValue) -> Result<(usize, usize)> {
    let sizes = call::sizes(value)?;
    if sizes.len() < 2 {
        return Err(refuse(format!(
            "linalg.lu: Expected tensor with 2 or more dimensions. Got size: {sizes:?} instead"
        )));
    }
    Ok((sizes[sizes.len() - 2], sizes[sizes.len() - 1]))
}

/// The gradient of `A = P L U` from those of `L` (`[m, k]`) and `U` (`[k, n]`).
fn lu_backward(
    grad_l: &IValue,
    grad_u: &IValue,
    p: &IValue,
    l: &IValue,
    u: &IValue,
    rows: usize,
    columns: usize,
) -> Result<IValue> {
    let k = rows.min(columns);
    let gradient = if rows == columns {
        // P L^-T [L^T gL o tril(-1) + gU U^T o triu] U^-T
        let inner = call::add(
            &tril(&matmul(&mt(l)?, grad_l)?, -1)?,
            &triu(&matmul(grad_u, &mt(u)?)?, 0)?,
        )?;
        let right = solve_triangular(&mt(u)?, &inner, false, false, false)?;
        solve_triangular(&mt(l)?, &right, true, true, true)?
    } else if rows < columns {
        let u1 = narrow(u, -1, 0, k)?;
        let inner = sub(
            &matmul(&mt(l)?, grad_l)?,
            &matmul(&triu(grad_u, 0)?, &mt(u)?)?,
        )?;
        let right = solve_triangular(&mt(&u1)?, &tril(&inner, -1)?, false, false, false)?;
        let grad_u1 = triu(&narrow(grad_u, -1, 0, k)?, 0)?;
        let grad_u2 = narrow(grad_u, -1, k, columns - k)?;
        let joined = cat(vec![call::add(&right, &grad_u1)?, grad_u2], -1)?;
        solve_triangular(&mt(l)?, &joined, true, true, true)?
    } else {
        let l1 = narrow(l, -2, 0, k)?;
        let inner = sub(
            &matmul(grad_u, &mt(u)?)?,
            &matmul(&mt(l)?, &tril(grad_l, -1)?)?,
        )?;
        let left = solve_triangular(&mt(&l1)?, &triu(&inner, 0)?, true, true, true)?;
        let grad_l1 = tril(&narrow(grad_l, -2, 0, k)?, -1)?;
        let grad_l2 = narrow(grad_l, -2, k, rows - k)?;
        let joined = cat(vec![call::add(&left, &grad_l1)?, grad_l2], -2)?;
        solve_triangular(&mt(u)?, &joined, false, false, false)?
    };
    matmul(p, &gradient)
}

/// `(P, L, U)` of `A`, unpacked from `linalg_lu_factor`.
fn factors(a: &IValue) -> Result<Vec<IValue>> {
    let packed = call("aten::linalg_lu_factor", vec![a.clone()])?;
    call(
        "aten::lu_unpack",
        vec![packed[0].clone(), packed[1].clone()],
    )
}

/// The factorizations returning the packed `LU` first: `L` gets its strict lower part, `U`
/// its upper part.
fn packed_factor(input: &FormulaInput) -> Result<Gradients> {
    let a = input.argument(0)?;
    let (rows, columns) = matrix_sizes(a)?;
    let k = rows.min(columns);
    let pivot = input.argument(1)?.to_bool()?;
    if !pivot {
        return Err(refuse(
            "the derivative for an LU factorization without pivoting is not implemented.",
        ));
    }
    let grad = input.grad(0)?;
    let grad_l = narrow(&tril(grad, -1)?, -1, 0, k)?;
    let grad_u = narrow(&triu(grad, 0)?, -2, 0, k)?;
    let found = factors(a)?;
    let mut out = input.none();
    out[0] = Some(lu_backward(
        &grad_l, &grad_u, &found[0], &found[1], &found[2], rows, columns,
    )?);
    Ok(out)
}

/// `linalg_lu(A, pivot) -> (P, L, U)`.
fn linalg_lu(input: &FormulaInput) -> Result<Gradients> {
    let a = input.argument(0)?;
    let (rows, columns) = matrix_sizes(a)?;
    if !input.argument(1)?.to_bool()? {
        return Err(refuse(
            "the derivative for an LU factorization without pivoting is not implemented.",
        ));
    }
    let found = factors(a)?;
    let mut out = input.none();
    out[0] = Some(lu_backward(
        input.grad(1)?,
        input.grad(2)?,
        &found[0],
        &found[1],
        &found[2],
        rows,
        columns,
    )?);
    Ok(out)
}

/// `lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots) -> (P, L, U)`: `L`'s strict
/// lower part and `U`'s upper part, placed back in the packed matrix.
fn lu_unpack(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    if sizes.len() < 2 {
        return Err(refuse("lu_unpack: LU_data must have at least 2 dimensions"));
    }
    let (rows, columns) = (sizes[sizes.len() - 2], sizes[sizes.len() - 1]);
    let k = rows.min(columns);
    let lower = tril(input.grad(1)?, -1)?;
    let upper = triu(input.grad(2)?, 0)?;
    let gradient = if rows == columns {
        call::add(&lower, &upper)?
    } else if rows < columns {
        let first = call::add(&narrow(&upper, -1, 0, k)?, &lower)?;
        cat(vec![first, narrow(&upper, -1, k, columns - k)?], -1)?
    } else {
        let first = call::add(&narrow(&lower, -2, 0, k)?, &upper)?;
        cat(vec![first, narrow(&lower, -2, k, rows - k)?], -2)?
    };
    let mut out = input.none();
    out[0] = Some(gradient);
    Ok(out)
}

fn solve(a: &IValue, b: &IValue) -> Result<IValue> {
    call1("aten::linalg_solve", vec![a.clone(), b.clone()])
}

/// The gradients of `X = op(A)^-1 B` (`left`) or `X = B op(A)^-1` with `A = P L U` given
/// packed as `LU`, `op` the transpose when `adjoint`: `B` gets the solve against the gradient
/// with the other `adjoint`; `LU` gets `-op(A)^-T`-style outer products split into `L`'s strict
/// lower and `U`'s upper parts.
fn solve_gradients(
    lu: &IValue,
    pivots: &IValue,
    result: &IValue,
    grad: &IValue,
    left: bool,
    adjoint: bool,
    wanted: (bool, bool),
) -> Result<(Option<IValue>, Option<IValue>)> {
    let grad_b = if wanted.1 {
        Some(call1(
            "aten::linalg_lu_solve",
            vec![
                lu.clone(),
                pivots.clone(),
                grad.clone(),
                IValue::Bool(left),
                IValue::Bool(!adjoint),
            ],
        )?)
    } else {
        None
    };
    if !wanted.0 {
        return Ok((None, grad_b));
    }
    let found = call("aten::lu_unpack", vec![lu.clone(), pivots.clone()])?;
    let (p, l, u) = (&found[0], &found[1], &found[2]);
    let a = matmul(p, &matmul(l, u)?)?;
    let grad_a = call::neg(&match (left, adjoint) {
        (true, false) => matmul(&solve(&mt(&a)?, grad)?, &mt(result)?)?,
        (true, true) => matmul(result, &mt(&solve(&a, grad)?)?)?,
        (false, false) => matmul(&mt(result)?, &mt(&solve(&a, &mt(grad)?)?)?)?,
        (false, true) => matmul(&solve(&mt(&a)?, &mt(grad)?)?, result)?,
    })?;
    let rotated = matmul(&mt(p)?, &grad_a)?;
    let grad_l = tril(&matmul(&rotated, &mt(u)?)?, -1)?;
    let grad_u = triu(&matmul(&mt(l)?, &rotated)?, 0)?;
    Ok((Some(call::add(&grad_l, &grad_u)?), grad_b))
}

/// `linalg_lu_solve(LU, pivots, B, left, adjoint)` (square `LU`).
fn linalg_lu_solve(input: &FormulaInput) -> Result<Gradients> {
    let (lu, pivots, b) = (input.argument(0)?, input.argument(1)?, input.argument(2)?);
    let left = input.argument(3)?.to_bool()?;
    let adjoint = input.argument(4)?.to_bool()?;
    let result = call1(
        "aten::linalg_lu_solve",
        vec![
            lu.clone(),
            pivots.clone(),
            b.clone(),
            IValue::Bool(left),
            IValue::Bool(adjoint),
        ],
    )?;
    let (grad_lu, grad_b) = solve_gradients(
        lu,
        pivots,
        &result,
        input.grad(0)?,
        left,
        adjoint,
        (input.needs(0), input.needs(2)),
    )?;
    let mut out = input.none();
    out[0] = grad_lu;
    out[2] = grad_b;
    Ok(out)
}

/// `lu_solve(self, LU_data, LU_pivots)`: `linalg_lu_solve(LU_data, LU_pivots, self)`.
fn lu_solve(input: &FormulaInput) -> Result<Gradients> {
    let (b, lu, pivots) = (input.argument(0)?, input.argument(1)?, input.argument(2)?);
    let result = call1(
        "aten::linalg_lu_solve",
        vec![lu.clone(), pivots.clone(), b.clone()],
    )?;
    let (grad_lu, grad_b) = solve_gradients(
        lu,
        pivots,
        &result,
        input.grad(0)?,
        true,
        false,
        (input.needs(1), input.needs(0)),
    )?;
    let mut out = input.none();
    out[0] = grad_b;
    out[1] = grad_lu;
    Ok(out)
}

formula_table![
    (
        "aten::linalg_lu_factor",
        "LinalgLuFactorExBackward0",
        packed_factor,
        &[0]
    ),
    (
        "aten::linalg_lu_factor_ex",
        "LinalgLuFactorExBackward0",
        packed_factor,
        &[0]
    ),
    (
        "aten::_lu_with_info",
        "LinalgLuFactorExBackward0",
        packed_factor,
        &[0]
    ),
    ("aten::linalg_lu", "LinalgLuBackward0", linalg_lu, &[0]),
    ("aten::lu_unpack", "LuUnpackBackward0", lu_unpack, &[]),
    (
        "aten::linalg_lu_solve",
        "LinalgLuSolveBackward0",
        linalg_lu_solve,
        &[0, 1, 2]
    ),
    ("aten::lu_solve", "LuSolveBackward0", lu_solve, &[0, 1, 2]),
];
