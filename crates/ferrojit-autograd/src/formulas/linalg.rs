//! Matrix functions of (batched) square matrices, real ones except for the linear solve,
//! which takes complex ones too: inverse, determinant and its logarithms, linear solves,
//! Cholesky solves and inverses, after PyTorch's derivatives.yaml (`linalg_inv`,
//! `linalg_det_backward`, `slogdet_backward`, `linalg_solve_backward`,
//! `cholesky_solve_backward`, `cholesky_inverse_backward`). The forward result a formula
//! needs is recomputed from the saved inputs.

use ferrojit_runtime::{IValue, Result};

use super::pointwise::conjugated;
use super::support::{recompute, recompute1};
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call1, int, matmul, mul, neg, sum_to};

/// The last two dimensions swapped (`mT`; the conjugate is a no-op on real tensors).
fn transposed(value: &IValue) -> Result<IValue> {
    call::transpose(value, -2, -1)
}

/// A batch of scalars lifted to broadcast over the last two dimensions.
fn as_matrix_scale(value: &IValue) -> Result<IValue> {
    let once = call1("aten::unsqueeze", vec![value.clone(), int(-1)])?;
    call1("aten::unsqueeze", vec![once, int(-1)])
}

fn inverse_of(value: &IValue) -> Result<IValue> {
    call1("aten::linalg_inv", vec![value.clone()])
}

/// `-A^{-T} grad A^{-T}` for `inverse = A^{-1}`.
fn inverse_backward(grad: &IValue, inverse: &IValue) -> Result<IValue> {
    let inverse_t = transposed(inverse)?;
    neg(&matmul(&inverse_t, &matmul(grad, &inverse_t)?)?)
}

fn only_self(input: &FormulaInput, gradient: IValue) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(gradient);
    Ok(out)
}

/// `linalg_inv`/`inverse`/`linalg_inv_ex` (the info output is not differentiable).
fn inv(input: &FormulaInput) -> Result<Gradients> {
    let inverse = inverse_of(input.argument(0)?)?;
    only_self(input, inverse_backward(input.grad(0)?, &inverse)?)
}

/// `linalg_det(A)`: `grad * det * A^{-T}`. For 1x1 matrices `det * A^{-T}` is 1, and
/// PyTorch returns the gradient itself, broadcast, with no history back to `A` (so a second
/// derivative with respect to `A` is absent, not zero).
fn det(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    if sizes.len() >= 2 && sizes[sizes.len() - 1] == 1 && sizes[sizes.len() - 2] == 1 {
        let spread = as_matrix_scale(input.grad(0)?)?;
        return only_self(input, call::expand(&spread, &sizes)?);
    }
    let a = input.argument(0)?;
    let determinant = recompute1("aten::linalg_det", input)?;
    if ferrojit_runtime::autograd::is_grad_enabled() {
        return only_self(
            input,
            det_recorded(a, &determinant, input.grad(0)?, &sizes)?,
        );
    }
    let factor = as_matrix_scale(&mul(input.grad(0)?, &determinant)?)?;
    let inverse_t = transposed(&inverse_of(&invertible(a, &determinant, &sizes)?)?)?;
    only_self(input, mul(&factor, &inverse_t)?)
}

/// The recorded `linalg_det` gradient (`create_graph=True`), differentiable again. As
/// PyTorch's `linalg_det_backward` does under grad mode, the matrices whose determinant is
/// below 100 machine epsilons in magnitude take the adjugate itself (whose derivative is not
/// zero there, unlike `grad * det * A^{-T}`'s); the others take `grad * det * A^{-T}`.
fn det_recorded(
    a: &IValue,
    determinant: &IValue,
    grad: &IValue,
    sizes: &[usize],
) -> Result<IValue> {
    let epsilon = match call::tensor(a)?.dtype() {
        ferrojit_tensor::DType::Float32 => f64::from(f32::EPSILON),
        _ => f64::EPSILON,
    };
    let near_singular: Vec<bool> = call::tensor(determinant)?
        .to_f64_vec()
        .iter()
        .map(|value| value.abs() < 100.0 * epsilon)
        .collect();
    let regular_form = |a: &IValue, determinant: &IValue, grad: &IValue| -> Result<IValue> {
        let factor = as_matrix_scale(&mul(grad, determinant)?)?;
        mul(&factor, &transposed(&inverse_of(a)?)?)
    };
    if !near_singular.contains(&true) {
        return regular_form(a, determinant, grad);
    }
    if !near_singular.contains(&false) {
        return adjugate_by_recurrence(a, grad);
    }
    // A mixed batch: each group through its own form (the recurrence loses precision as
    // the matrices grow, the inverse does not), then the results put back in batch order.
    let n = sizes[sizes.len() - 1];
    let count = near_singular.len();
    let flat_a = call::reshape(a, &[count, n, n])?;
    let flat_determinant = call::reshape(determinant, &[count])?;
    let flat_grad = call::reshape(grad, &[count])?;
    let positions = |wanted: bool| -> Vec<i64> {
        (0..count)
            .filter(|&k| near_singular[k] == wanted)
            .map(|k| k as i64)
            .collect()
    };
    let (singular, regular) = (positions(true), positions(false));
    let pick = |value: &IValue, chosen: &[i64]| -> Result<IValue> {
        let index = call::fresh(ferrojit_tensor::Tensor::from_vec(
            chosen.to_vec(),
            &[chosen.len()],
        )?);
        call1("aten::index_select", vec![value.clone(), int(0), index])
    };
    let singular_part =
        adjugate_by_recurrence(&pick(&flat_a, &singular)?, &pick(&flat_grad, &singular)?)?;
    let regular_part = regular_form(
        &pick(&flat_a, &regular)?,
        &pick(&flat_determinant, &regular)?,
        &pick(&flat_grad, &regular)?,
    )?;
    let joined = call1(
        "aten::cat",
        vec![call::tensor_list(vec![singular_part, regular_part]), int(0)],
    )?;
    // Row k of `joined` holds batch entry `order[k]`; invert that order.
    let order: Vec<i64> = singular.iter().chain(&regular).copied().collect();
    let mut back = vec![0i64; count];
    for (row, &entry) in order.iter().enumerate() {
        back[entry as usize] = row as i64;
    }
    call::reshape(&pick(&joined, &back)?, sizes)
}

/// `grad` times the adjugate transposed (the cofactor matrix), from the Faddeev-LeVerrier
/// recurrence `M_1 = I`, `M_{k+1} = A M_k + c_{n-k} I`, `c_{n-k} = -tr(A M_k) / k`, whose
/// last term gives `adj(A) = (-1)^{n+1} M_n`: matrix products and traces only, so the
/// result is differentiable again with exact derivatives at singular matrices too.
/// PyTorch computes the same adjugate through an SVD (Higham's formula); ferrojit's SVD does
/// not return an orthogonal `U` for a matrix with a zero singular value, which that formula
/// needs, and a near-singular determinant is the only case that takes this path.
fn adjugate_by_recurrence(a: &IValue, grad: &IValue) -> Result<IValue> {
    let sizes = call::sizes(a)?;
    let n = sizes[sizes.len() - 1];
    let identity = call1(
        "aten::eye",
        vec![
            int(n as i64),
            int(call::tensor(a)?.dtype().scalar_type_index()),
        ],
    )?;
    let mut term = identity.clone();
    for k in 1..n {
        let product = matmul(a, &term)?;
        let trace = call::sum_dims(
            &call1(
                "aten::diagonal",
                vec![product.clone(), int(0), int(-2), int(-1)],
            )?,
            &[-1],
            false,
        )?;
        let coefficient = as_matrix_scale(&call::scale(&trace, -1.0 / k as f64)?)?;
        term = call::add(&product, &mul(&coefficient, &identity)?)?;
    }
    let sign = if n % 2 == 1 { 1.0 } else { -1.0 };
    let cofactors = transposed(&call::scale(&term, sign)?)?;
    mul(&as_matrix_scale(grad)?, &cofactors)
}

/// `a` with each singular matrix (zero determinant) replaced by the identity, so that the
/// inverse exists: those matrices' gradient is `grad * 0 * A^{-T}`, zero, as PyTorch's
/// first-order formula gives it (its solve there yields zeros times the zero determinant).
fn invertible(a: &IValue, determinant: &IValue, sizes: &[usize]) -> Result<IValue> {
    let singular = call1(
        "aten::eq.Scalar",
        vec![determinant.clone(), call::float(0.0)],
    )?;
    let any = call1("aten::any", vec![singular.clone()])?;
    if !call::tensor(&any)?.item()?.to_bool() {
        return Ok(a.clone());
    }
    let n = sizes[sizes.len() - 1];
    let mut values = vec![0.0f64; n * n];
    for index in 0..n {
        values[index * n + index] = 1.0;
    }
    let identity = call1(
        "aten::to.dtype",
        vec![
            call::fresh(ferrojit_tensor::Tensor::from_vec(values, &[n, n])?),
            int(call::tensor(a)?.dtype().scalar_type_index()),
        ],
    )?;
    let mask = as_matrix_scale(&singular)?;
    call1("aten::where.self", vec![mask, identity, a.clone()])
}

/// `logdet(A)`: `grad * A^{-T}`.
fn logdet(input: &FormulaInput) -> Result<Gradients> {
    let inverse_t = transposed(&inverse_of(input.argument(0)?)?)?;
    only_self(input, mul(&as_matrix_scale(input.grad(0)?)?, &inverse_t)?)
}

/// `linalg_slogdet(A) -> (sign, logabsdet)`: only `logabsdet` is differentiable for real
/// input; its gradient is `grad * A^{-T}`.
fn slogdet(input: &FormulaInput) -> Result<Gradients> {
    let inverse_t = transposed(&inverse_of(input.argument(0)?)?)?;
    only_self(input, mul(&as_matrix_scale(input.grad(1)?)?, &inverse_t)?)
}

/// `linalg_solve(A, B, *, left)` with `X = A^{-1} B`: `gB = A^{-H} grad`, `gA = -gB X^H`;
/// with `left=False`, `X = B A^{-1}`: `gB = grad A^{-H}`, `gA = -X^H gB`. A vector `B` is a
/// column (a row when not `left`).
fn solve(input: &FormulaInput, name: &str) -> Result<Gradients> {
    let a = input.argument(0)?;
    let b_sizes = input.sizes(1)?;
    let a_sizes = input.sizes(0)?;
    let left = match input.arguments.get(2) {
        Some(IValue::Bool(left)) => *left,
        _ => true,
    };
    let vector_dim = if left { -1 } else { -2 };
    let vector = b_sizes.len() == 1 || b_sizes.len() + 1 == a_sizes.len();
    let result = recompute(name, input)?
        .into_iter()
        .next()
        .ok_or_else(|| super::support::refuse(format!("autograd: {name} returned nothing")))?;
    let column = |value: &IValue| -> Result<IValue> {
        if vector {
            call1("aten::unsqueeze", vec![value.clone(), int(vector_dim)])
        } else {
            Ok(value.clone())
        }
    };
    let grad = column(input.grad(0)?)?;
    let x = column(&result)?;
    // Conjugate transposes for complex A and B.
    let grad_b = call1(
        "aten::linalg_solve",
        vec![conjugated(transposed(a)?)?, grad, IValue::Bool(left)],
    )?;
    let mut out = input.none();
    if input.needs(0) {
        let x_h = conjugated(transposed(&x)?)?;
        let product = if left {
            matmul(&grad_b, &x_h)?
        } else {
            matmul(&x_h, &grad_b)?
        };
        let grad_a = neg(&product)?;
        out[0] = Some(sum_to(&grad_a, &a_sizes)?);
    }
    if input.needs(1) {
        let grad_b = if vector {
            call1("aten::squeeze.dim", vec![grad_b, int(vector_dim)])?
        } else {
            grad_b
        };
        out[1] = Some(sum_to(&grad_b, &b_sizes)?);
    }
    Ok(out)
}

fn linalg_solve(input: &FormulaInput) -> Result<Gradients> {
    solve(input, "aten::linalg_solve")
}

fn linalg_solve_ex(input: &FormulaInput) -> Result<Gradients> {
    solve(input, "aten::linalg_solve_ex")
}

/// `cholesky_solve(B, L, upper)`, `X = (L L^T)^{-1} B`: `gB = cholesky_solve(grad, L)`;
/// `gL = -(gB X^T + X gB^T) L` (`-L (..)` when upper).
fn cholesky_solve(input: &FormulaInput) -> Result<Gradients> {
    let factor = input.argument(1)?;
    let upper = input.argument(2)?.to_bool()?;
    let result = recompute1("aten::cholesky_solve", input)?;
    let grad_b = call1(
        "aten::cholesky_solve",
        vec![input.grad(0)?.clone(), factor.clone(), IValue::Bool(upper)],
    )?;
    let mut out = input.none();
    if input.needs(1) {
        let common = matmul(&grad_b, &transposed(&result)?)?;
        let common = call::add(&common, &transposed(&common)?)?;
        let grad_l = if upper {
            neg(&matmul(factor, &common)?)?
        } else {
            neg(&matmul(&common, factor)?)?
        };
        out[1] = Some(sum_to(&grad_l, &input.sizes(1)?)?);
    }
    if input.needs(0) {
        out[0] = Some(sum_to(&grad_b, &input.sizes(0)?)?);
    }
    Ok(out)
}

/// `cholesky_inverse(L, upper)`, `R = (L L^T)^{-1}`: `gL = -R (grad + grad^T) R L`
/// (`-L R (..) R` when upper).
fn cholesky_inverse(input: &FormulaInput) -> Result<Gradients> {
    let factor = input.argument(0)?;
    let upper = input.argument(1)?.to_bool()?;
    let result = recompute1("aten::cholesky_inverse", input)?;
    let grad = input.grad(0)?;
    let symmetric = call::add(grad, &transposed(grad)?)?;
    let common = matmul(&result, &matmul(&symmetric, &result)?)?;
    let gradient = if upper {
        neg(&matmul(factor, &common)?)?
    } else {
        neg(&matmul(&common, factor)?)?
    };
    only_self(input, gradient)
}

/// `linalg_vecdot(x, y, *, dim)`: each input gets the other scaled by the (re-expanded)
/// gradient.
fn vecdot(input: &FormulaInput) -> Result<Gradients> {
    let grad = call1(
        "aten::unsqueeze",
        vec![input.grad(0)?.clone(), int(input.int(2)?)],
    )?;
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(sum_to(&mul(&grad, input.argument(1)?)?, &input.sizes(0)?)?);
    }
    if input.needs(1) {
        out[1] = Some(sum_to(&mul(&grad, input.argument(0)?)?, &input.sizes(1)?)?);
    }
    Ok(out)
}

/// `linalg_matrix_power(A, n)`, `n >= 0`: `sum_k (A^T)^k grad (A^T)^(n-1-k)`.
fn matrix_power(input: &FormulaInput) -> Result<Gradients> {
    let n = input.int(1)?;
    if n < 0 {
        return Err(super::support::refuse(
            "the derivative for 'linalg_matrix_power' with a negative exponent is not \
             implemented.",
        ));
    }
    let a_t = transposed(input.argument(0)?)?;
    let grad = input.grad(0)?;
    // powers[k] = (A^T)^k
    let mut powers = vec![call1("aten::zeros_like", vec![a_t.clone()])?];
    if n > 0 {
        let identity = call1(
            "aten::diagonal_scatter",
            vec![
                powers[0].clone(),
                call1(
                    "aten::ones_like",
                    vec![call1(
                        "aten::diagonal",
                        vec![a_t.clone(), int(0), int(-2), int(-1)],
                    )?],
                )?,
                int(0),
                int(-2),
                int(-1),
            ],
        )?;
        powers[0] = identity;
        for k in 1..n as usize {
            let next = matmul(&powers[k - 1], &a_t)?;
            powers.push(next);
        }
    }
    let mut total = call1("aten::zeros_like", vec![a_t.clone()])?;
    for k in 0..n as usize {
        let term = matmul(&matmul(&powers[k], grad)?, &powers[n as usize - 1 - k])?;
        total = call::add(&total, &term)?;
    }
    only_self(input, total)
}

/// `linalg_multi_dot(tensors)` of matrices: factor `i` gets
/// `(M_0 .. M_{i-1})^T grad (M_{i+1} .. M_last)^T`.
fn multi_dot(input: &FormulaInput) -> Result<Gradients> {
    let factors = input.argument(0)?.to_list()?.to_vec();
    if factors
        .iter()
        .any(|factor| call::sizes(factor).map_or(true, |sizes| sizes.len() != 2))
    {
        return Err(super::support::refuse(
            "the derivative for 'linalg_multi_dot' of vectors is not implemented.",
        ));
    }
    let grad = input.grad(0)?;
    let chain = |range: &[IValue]| -> Result<Option<IValue>> {
        let mut product: Option<IValue> = None;
        for factor in range {
            product = Some(match product {
                None => factor.clone(),
                Some(value) => matmul(&value, factor)?,
            });
        }
        Ok(product)
    };
    let mut pieces = Vec::with_capacity(factors.len());
    for index in 0..factors.len() {
        let mut piece = grad.clone();
        if let Some(before) = chain(&factors[..index])? {
            piece = matmul(&transposed(&before)?, &piece)?;
        }
        if let Some(after) = chain(&factors[index + 1..])? {
            piece = matmul(&piece, &transposed(&after)?)?;
        }
        pieces.push(piece);
    }
    let mut out = input.none();
    out[0] = Some(call::optional_tensor_list(pieces));
    Ok(out)
}

/// `linalg_solve_triangular(A, B, *, upper, left, unitriangular)` with `left=True`:
/// `gB = A^{-T} grad`, `gA = -gB X^T` kept on `A`'s triangle (off the diagonal when
/// unitriangular).
fn solve_triangular(input: &FormulaInput) -> Result<Gradients> {
    let a = input.argument(0)?;
    let upper = input.argument(2)?.to_bool()?;
    let left = input.argument(3)?.to_bool()?;
    let unitriangular = input.argument(4)?.to_bool()?;
    if !left {
        return Err(super::support::refuse(
            "the derivative for 'linalg_solve_triangular' with left=False is not implemented.",
        ));
    }
    let result = recompute1("aten::linalg_solve_triangular", input)?;
    let grad_b = call1(
        "aten::linalg_solve_triangular",
        vec![
            transposed(a)?,
            input.grad(0)?.clone(),
            IValue::Bool(!upper),
            IValue::Bool(true),
            IValue::Bool(unitriangular),
        ],
    )?;
    let mut out = input.none();
    if input.needs(0) {
        let full = neg(&matmul(&grad_b, &transposed(&result)?)?)?;
        let offset = i64::from(unitriangular);
        let kept = if upper {
            call1("aten::triu", vec![full, int(offset)])?
        } else {
            call1("aten::tril", vec![full, int(-offset)])?
        };
        out[0] = Some(sum_to(&kept, &input.sizes(0)?)?);
    }
    if input.needs(1) {
        out[1] = Some(sum_to(&grad_b, &input.sizes(1)?)?);
    }
    Ok(out)
}

/// `matrix_exp(A)`: the top-right block of `exp([[A^T, grad], [0, A^T]])`.
fn matrix_exp(input: &FormulaInput) -> Result<Gradients> {
    let a_t = transposed(input.argument(0)?)?;
    let grad = input.grad(0)?;
    let n = *input
        .sizes(0)?
        .last()
        .ok_or_else(|| super::support::refuse("matrix_exp expects a square matrix"))?
        as i64;
    let zeros = call1("aten::zeros_like", vec![a_t.clone()])?;
    let join =
        |items: Vec<IValue>, dim: i64| call1("aten::cat", vec![call::tensor_list(items), int(dim)]);
    let top = join(vec![a_t.clone(), grad.clone()], -1)?;
    let bottom = join(vec![zeros, a_t], -1)?;
    let block = call1("aten::matrix_exp", vec![join(vec![top, bottom], -2)?])?;
    let rows = call1("aten::narrow", vec![block, int(-2), int(0), int(n)])?;
    only_self(
        input,
        call1("aten::narrow", vec![rows, int(-1), int(n), int(n)])?,
    )
}

/// `linalg_cholesky(A, *, upper)` (`linalg_cholesky_ex` too) with `A = L L^T`:
/// `S = L^{-T} phi(L^T gL) L^{-1}` (`phi`: lower triangle, diagonal halved),
/// `gA = (S + S^T) / 2`.
fn cholesky(input: &FormulaInput, name: &str) -> Result<Gradients> {
    let upper = input.argument(1)?.to_bool()?;
    let factor = recompute1(name, input)?;
    let grad = input.grad(0)?;
    let (lower, grad) = if upper {
        (transposed(&factor)?, transposed(grad)?)
    } else {
        (factor, grad.clone())
    };
    let lower_t = transposed(&lower)?;
    let phi = call1("aten::tril", vec![matmul(&lower_t, &grad)?, int(0)])?;
    let half_diagonal = call1(
        "aten::diag_embed",
        vec![call1(
            "aten::diagonal",
            vec![phi.clone(), int(0), int(-2), int(-1)],
        )?],
    )?;
    let phi = call::sub(&phi, &call::scale(&half_diagonal, 0.5)?)?;
    let solve_upper = |b: &IValue| {
        call1(
            "aten::linalg_solve_triangular",
            vec![lower_t.clone(), b.clone(), IValue::Bool(true)],
        )
    };
    let left = solve_upper(&phi)?;
    let both = transposed(&solve_upper(&transposed(&left)?)?)?;
    let symmetric = call::scale(&call::add(&both, &transposed(&both)?)?, 0.5)?;
    only_self(input, symmetric)
}

fn linalg_cholesky(input: &FormulaInput) -> Result<Gradients> {
    cholesky(input, "aten::linalg_cholesky")
}

fn linalg_cholesky_ex(input: &FormulaInput) -> Result<Gradients> {
    cholesky(input, "aten::linalg_cholesky_ex")
}

/// `triangular_solve(B, A, upper, transpose, unitriangular) -> (X, A copy)`:
/// `gB = triangular_solve(gX, A, upper, !transpose)`, `gA = -gB X^T` (`-X gB^T` when
/// transposed) on `A`'s triangle, plus the copy's gradient.
fn triangular_solve(input: &FormulaInput) -> Result<Gradients> {
    let a = input.argument(1)?;
    let upper = input.argument(2)?.to_bool()?;
    let transpose = input.argument(3)?.to_bool()?;
    let unitriangular = input.argument(4)?.to_bool()?;
    let solution = recompute1("aten::triangular_solve", input)?;
    let grad_b = recompute(
        "aten::triangular_solve",
        &FormulaInput {
            arguments: &[
                input.grad(0)?.clone(),
                a.clone(),
                IValue::Bool(upper),
                IValue::Bool(!transpose),
                IValue::Bool(unitriangular),
            ],
            grads: input.grads,
            needed: input.needed,
            input_meta: input.input_meta,
        },
    )?
    .into_iter()
    .next()
    .ok_or_else(|| super::support::refuse("autograd: triangular_solve returned nothing"))?;
    let mut out = input.none();
    if input.needs(1) {
        let full = if transpose {
            neg(&matmul(&solution, &transposed(&grad_b)?)?)?
        } else {
            neg(&matmul(&grad_b, &transposed(&solution)?)?)?
        };
        let offset = i64::from(unitriangular);
        let kept = if upper {
            call1("aten::triu", vec![full, int(offset)])?
        } else {
            call1("aten::tril", vec![full, int(-offset)])?
        };
        let kept = call::add(&kept, input.grad(1)?)?;
        out[1] = Some(sum_to(&kept, &input.sizes(1)?)?);
    }
    if input.needs(0) {
        out[0] = Some(sum_to(&grad_b, &input.sizes(0)?)?);
    }
    Ok(out)
}

formula_table![
    (
        "aten::triangular_solve",
        "TriangularSolveBackward0",
        triangular_solve,
        &[0, 1]
    ),
    (
        "aten::matrix_exp",
        "LinalgMatrixExpBackward0",
        matrix_exp,
        &[0]
    ),
    (
        "aten::linalg_cholesky",
        "LinalgCholeskyExBackward0",
        linalg_cholesky,
        &[0]
    ),
    (
        "aten::linalg_cholesky_ex",
        "LinalgCholeskyExBackward0",
        linalg_cholesky_ex,
        &[0]
    ),
    (
        "aten::linalg_vecdot",
        "LinalgVecdotBackward0",
        vecdot,
        &[0, 1]
    ),
    (
        "aten::linalg_matrix_power",
        "LinalgMatrixPowerBackward0",
        matrix_power,
        &[0]
    ),
    (
        "aten::linalg_multi_dot",
        "LinalgMultiDotBackward0",
        multi_dot,
        &[0]
    ),
    (
        "aten::linalg_solve_triangular",
        "LinalgSolveTriangularBackward0",
        solve_triangular,
        &[0, 1]
    ),
    ("aten::linalg_inv", "LinalgInvExBackward0", inv, &[0]),
    ("aten::linalg_inv_ex", "LinalgInvExBackward0", inv, &[0]),
    ("aten::inverse", "LinalgInvExBackward0", inv, &[0]),
    ("aten::linalg_det", "LinalgDetBackward0", det, &[0]),
    // `torch.det` is `linalg_det` under another name (PyTorch records LinalgDetBackward0).
    ("aten::det", "LinalgDetBackward0", det, &[0]),
    ("aten::logdet", "LogdetBackward0", logdet, &[0]),
    (
        "aten::linalg_slogdet",
        "LinalgSlogdetBackward0",
        slogdet,
        &[0]
    ),
    (
        "aten::linalg_solve",
        "LinalgSolveExBackward0",
        linalg_solve,
        &[0, 1]
    ),
    (
        "aten::linalg_solve_ex",
        "LinalgSolveExBackward0",
        linalg_solve_ex,
        &[0, 1]
    ),
    (
        "aten::cholesky_solve",
        "CholeskySolveBackward0",
        cholesky_solve,
        &[0, 1]
    ),
    (
        "aten::cholesky_inverse",
        "CholeskyInverseBackward0",
        cholesky_inverse,
        &[0]
    ),
];
