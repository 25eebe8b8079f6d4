//! Derivatives of the real matrix decompositions and what is built on them: `linalg_svd`/
//! `svd`/`linalg_svdvals` (PyTorch's `svd_backward`), `linalg_eigh`/`linalg_eigvalsh`
//! (`linalg_eig_backward`, Hermitian case), `linalg_qr`, the pseudo-inverse
//! (`pinv_backward`, also behind `lstsq`), `cond`, `tensorinv`/`tensorsolve` and the
//! Frobenius and nuclear matrix norms. The decomposition a formula needs is recomputed from
//! the saved input.

use ferrojit_runtime::{IValue, Result};

use super::statistics::norm_backward;
use super::support::{recompute, recompute1, refuse};
use super::{wrap_dim, Formula, FormulaInput, Gradients};
use crate::call::{self, call, call1, int, ints, matmul, mul, sub};

fn mt(value: &IValue) -> Result<IValue> {
    call::transpose(value, -2, -1)
}

fn unsqueeze(value: &IValue, dim: i64) -> Result<IValue> {
    call1("aten::unsqueeze", vec![value.clone(), int(dim)])
}

fn diag_embed(value: &IValue) -> Result<IValue> {
    call1("aten::diag_embed", vec![value.clone()])
}

fn narrow(value: &IValue, dim: i64, length: usize) -> Result<IValue> {
    call1(
        "aten::narrow",
        vec![value.clone(), int(dim), int(0), int(length as i64)],
    )
}

/// `X - X^T`.
fn skew(value: &IValue) -> Result<IValue> {
    sub(value, &mt(value)?)
}

/// `values[j] - values[i]` at `(i, j)`, with ones on the diagonal (the divisor of the
/// off-diagonal terms of the spectral derivatives).
fn differences(values: &IValue) -> Result<IValue> {
    let table = sub(&unsqueeze(values, -2)?, &unsqueeze(values, -1)?)?;
    let count = *call::sizes(values)?.last().unwrap_or(&0);
    let dtype = call::tensor(values)?.dtype();
    let identity = call1(
        "aten::eye",
        vec![int(count as i64), int(dtype.scalar_type_index())],
    )?;
    call::add(&table, &identity)
}

/// PyTorch's `svd_backward` for real `A = U diag(S) Vh` (`full_matrices` results are cut to
/// the reduced ones first).
#[allow(clippy::too_many_arguments)]
fn svd_backward(
    grad_u: &IValue,
    grad_s: &IValue,
    grad_vh: &IValue,
    u: &IValue,
    s: &IValue,
    vh: &IValue,
    rows: usize,
    columns: usize,
) -> Result<IValue> {
    let k = rows.min(columns);
    let (u, grad_u) = (narrow(u, -1, k)?, narrow(grad_u, -1, k)?);
    let (vh, grad_vh) = (narrow(vh, -2, k)?, narrow(grad_vh, -2, k)?);
    let (v, grad_v) = (mt(&vh)?, mt(&grad_vh)?);
    let uhgu = skew(&matmul(&mt(&u)?, &grad_u)?)?;
    let vhgv = skew(&matmul(&mt(&v)?, &grad_v)?)?;
    let e = differences(&mul(s, s)?)?;
    let core = call::div(
        &call::add(
            &mul(&uhgu, &unsqueeze(s, -2)?)?,
            &mul(&unsqueeze(s, -1)?, &vhgv)?,
        )?,
        &e,
    )?;
    let core = call::add(&core, &diag_embed(grad_s)?)?;
    if rows > columns {
        // [U core + (I - U U^T) gU S^-1] Vh
        let spread = matmul(&u, &core)?;
        let grad_u_scaled = call::div(&grad_u, &unsqueeze(s, -2)?)?;
        let projected = sub(
            &grad_u_scaled,
            &matmul(&u, &matmul(&mt(&u)?, &grad_u_scaled)?)?,
        )?;
        matmul(&call::add(&spread, &projected)?, &vh)
    } else if rows < columns {
        // U [core Vh + S^-1 gVh (I - V Vh)]
        let spread = matmul(&core, &vh)?;
        let scaled_grad_vh = call::div(&grad_vh, &unsqueeze(s, -1)?)?;
        let projected = sub(
            &scaled_grad_vh,
            &matmul(&matmul(&scaled_grad_vh, &v)?, &vh)?,
        )?;
        matmul(&u, &call::add(&spread, &projected)?)
    } else {
        matmul(&u, &matmul(&core, &vh)?)
    }
}

fn matrix_sizes(input: &FormulaInput) -> Result<(usize, usize)> {
    let sizes = input.sizes(0)?;
    if sizes.len() < 2 {
        return Err(refuse(format!(
            "linalg.svd: The input tensor A must have at least 2 dimensions, but got {}",
            sizes.len()
        )));
    }
    Ok((sizes[sizes.len() - 2], sizes[sizes.len() - 1]))
}

/// `linalg_svd(A, full_matrices, driver) -> (U, S, Vh)`.
fn linalg_svd(input: &FormulaInput) -> Result<Gradients> {
    let (rows, columns) = matrix_sizes(input)?;
    let results = recompute("aten::linalg_svd", input)?;
    let gradient = svd_backward(
        input.grad(0)?,
        input.grad(1)?,
        input.grad(2)?,
        &results[0],
        &results[1],
        &results[2],
        rows,
        columns,
    )?;
    let mut out = input.none();
    out[0] = Some(gradient);
    Ok(out)
}

/// `svd(self, some, compute_uv) -> (U, S, V)`: `linalg_svd` with `V` for `Vh`.
fn svd(input: &FormulaInput) -> Result<Gradients> {
    let (rows, columns) = matrix_sizes(input)?;
    let some = input.argument(1)?.to_bool()?;
    let results = call(
        "aten::linalg_svd",
        vec![input.argument(0)?.clone(), IValue::Bool(!some)],
    )?;
    let gradient = svd_backward(
        input.grad(0)?,
        input.grad(1)?,
        &mt(input.grad(2)?)?,
        &results[0],
        &results[1],
        &results[2],
        rows,
        columns,
    )?;
    let mut out = input.none();
    out[0] = Some(gradient);
    Ok(out)
}

/// `linalg_svdvals(A)`: `U diag(gS) Vh` of the reduced SVD.
fn linalg_svdvals(input: &FormulaInput) -> Result<Gradients> {
    let results = call(
        "aten::linalg_svd",
        vec![input.argument(0)?.clone(), IValue::Bool(false)],
    )?;
    let scaled = mul(&results[0], &unsqueeze(input.grad(0)?, -2)?)?;
    let mut out = input.none();
    out[0] = Some(matmul(&scaled, &results[2])?);
    Ok(out)
}

/// `V (diag(gL) + skew(V^T gV) / 2 / E) V^T` with `E[i, j] = L[j] - L[i]`.
fn eigh_backward(
    grad_l: &IValue,
    grad_v: Option<&IValue>,
    l: &IValue,
    v: &IValue,
) -> Result<IValue> {
    let mut core = diag_embed(grad_l)?;
    if let Some(grad_v) = grad_v {
        let rotated = call::scale(&skew(&matmul(&mt(v)?, grad_v)?)?, 0.5)?;
        core = call::add(&core, &call::div(&rotated, &differences(l)?)?)?;
    }
    matmul(v, &matmul(&core, &mt(v)?)?)
}

/// `linalg_eigh(self, UPLO) -> (L, V)`.
fn linalg_eigh(input: &FormulaInput) -> Result<Gradients> {
    let results = recompute("aten::linalg_eigh", input)?;
    let mut out = input.none();
    out[0] = Some(eigh_backward(
        input.grad(0)?,
        Some(input.grad(1)?),
        &results[0],
        &results[1],
    )?);
    Ok(out)
}

/// `linalg_eigvalsh(self, UPLO)`.
fn linalg_eigvalsh(input: &FormulaInput) -> Result<Gradients> {
    let results = call(
        "aten::linalg_eigh",
        vec![input.argument(0)?.clone(), input.argument(1)?.clone()],
    )?;
    let mut out = input.none();
    out[0] = Some(eigh_backward(
        input.grad(0)?,
        None,
        &results[0],
        &results[1],
    )?);
    Ok(out)
}

/// PyTorch's `pinv_backward(grad, pinvA, A)`.
fn pinv_backward(grad: &IValue, pinv: &IValue, a: &IValue) -> Result<IValue> {
    let sizes = call::sizes(a)?;
    let (rows, columns) = (sizes[sizes.len() - 2], sizes[sizes.len() - 1]);
    let pinv_t = mt(pinv)?;
    let grad_t = mt(grad)?;
    if rows <= columns {
        let k = matmul(&grad_t, pinv)?;
        let k_pinv_t = matmul(&k, &pinv_t)?;
        let first = call::neg(&mt(&matmul(pinv, &k)?)?)?;
        let third = matmul(&matmul(a, pinv)?, &k_pinv_t)?;
        let fourth = matmul(&matmul(&pinv_t, pinv)?, &sub(&grad_t, &matmul(&k, a)?)?)?;
        call::add(&sub(&call::add(&first, &k_pinv_t)?, &third)?, &fourth)
    } else {
        let k = matmul(pinv, &grad_t)?;
        let pinv_t_k = matmul(&pinv_t, &k)?;
        let first = call::neg(&mt(&matmul(&k, pinv)?)?)?;
        let second = matmul(&matmul(&sub(&grad_t, &matmul(a, &k)?)?, pinv)?, &pinv_t)?;
        let fourth = matmul(&matmul(&pinv_t_k, pinv)?, a)?;
        sub(
            &call::add(&call::add(&first, &second)?, &pinv_t_k)?,
            &fourth,
        )
    }
}

fn pinv_with(input: &FormulaInput, name: &str) -> Result<Gradients> {
    let pinv = recompute1(name, input)?;
    let mut out = input.none();
    out[0] = Some(pinv_backward(input.grad(0)?, &pinv, input.argument(0)?)?);
    Ok(out)
}

fn linalg_pinv_float(input: &FormulaInput) -> Result<Gradients> {
    pinv_with(input, "aten::linalg_pinv.atol_rtol_float")
}

fn linalg_pinv_rcond(input: &FormulaInput) -> Result<Gradients> {
    pinv_with(input, "aten::linalg_pinv")
}

fn pinverse(input: &FormulaInput) -> Result<Gradients> {
    pinv_with(input, "aten::pinverse")
}

/// `linalg_matrix_norm.str_ord(self, ord, dim, keepdim, dtype)`: "fro" is the 2-norm of the
/// entries; "nuc" (sum of singular values) has gradient `U Vh` of the reduced SVD.
fn matrix_norm_str(input: &FormulaInput) -> Result<Gradients> {
    let order = match input.argument(1)? {
        IValue::Str(text) => text.to_string(),
        _ => "fro".to_string(),
    };
    let rank = input.sizes(0)?.len();
    let dims: Vec<usize> = input
        .ints(2)?
        .into_iter()
        .map(|dim| wrap_dim(dim, rank))
        .collect();
    if dims.len() != 2 || dims[0] == dims[1] {
        return Err(refuse(
            "linalg.matrix_norm: dim must be a 2-tuple of distinct ints",
        ));
    }
    let keepdim = input.argument(3)?.to_bool()?;
    let x = input.argument(0)?;
    let gradient = match order.as_str() {
        "fro" => {
            let norm = recompute1("aten::linalg_matrix_norm.str_ord", input)?;
            let mut sorted = dims.clone();
            sorted.sort_unstable();
            norm_backward(input.grad(0)?, x, 2.0, &norm, &sorted, keepdim)?
        }
        "nuc" => {
            let moved = call1(
                "aten::movedim.intlist",
                vec![
                    x.clone(),
                    ints(&[dims[0] as i64, dims[1] as i64]),
                    ints(&[-2, -1]),
                ],
            )?;
            let results = call("aten::linalg_svd", vec![moved, IValue::Bool(false)])?;
            let direction = matmul(&results[0], &results[2])?;
            let mut grad = input.grad(0)?.clone();
            if keepdim {
                let mut sorted = dims.clone();
                sorted.sort_unstable();
                for &dim in sorted.iter().rev() {
                    grad = call1("aten::squeeze.dim", vec![grad, int(dim as i64)])?;
                }
            }
            let scaled = mul(&direction, &unsqueeze(&unsqueeze(&grad, -1)?, -1)?)?;
            call1(
                "aten::movedim.intlist",
                vec![
                    scaled,
                    ints(&[-2, -1]),
                    ints(&[dims[0] as i64, dims[1] as i64]),
                ],
            )?
        }
        other => {
            return Err(refuse(format!(
                "linalg.matrix_norm: Order {other} not supported."
            )))
        }
    };
    let mut out = input.none();
    out[0] = Some(gradient);
    Ok(out)
}

/// `linalg_lstsq(self, b, rcond, driver)`: the solution's gradient as PyTorch's
/// `linalg_lstsq_backward`, through the pseudo-inverse (the other outputs carry none).
fn linalg_lstsq(input: &FormulaInput) -> Result<Gradients> {
    let (a, b) = (input.argument(0)?, input.argument(1)?);
    let grad = input.grad(0)?;
    let pinv = call1("aten::linalg_pinv.atol_rtol_float", vec![a.clone()])?;
    let vector = call::sizes(b)?.len() + 1 == input.sizes(0)?.len();
    let (b, grad) = if vector {
        (unsqueeze(b, -1)?, unsqueeze(grad, -1)?)
    } else {
        (b.clone(), grad.clone())
    };
    let mut out = input.none();
    if input.needs(0) {
        let pinv_grad = matmul(&grad, &mt(&b)?)?;
        out[0] = Some(pinv_backward(&pinv_grad, &pinv, a)?);
    }
    if input.needs(1) {
        let gradient = matmul(&mt(&pinv)?, &grad)?;
        out[1] = Some(if vector {
            call1("aten::squeeze.dim", vec![gradient, int(-1)])?
        } else {
            gradient
        });
    }
    Ok(out)
}

/// `linalg_cond(self, p)` for the 2-norm (`p` None or ±2 uses the singular values):
/// `sigma_max / sigma_min` (or its inverse for -2).
fn linalg_cond(input: &FormulaInput) -> Result<Gradients> {
    let order = match input.argument(1)? {
        IValue::None => 2.0,
        IValue::Int(value) => *value as f64,
        other => other.to_double()?,
    };
    if order.abs() != 2.0 {
        return Err(refuse(format!(
            "the derivative for 'linalg_cond' with p={order} is not implemented."
        )));
    }
    let results = call(
        "aten::linalg_svd",
        vec![input.argument(0)?.clone(), IValue::Bool(false)],
    )?;
    let s = &results[1];
    let k = *call::sizes(s)?.last().unwrap_or(&0);
    if k == 0 {
        return Err(refuse("linalg.cond: the input has no singular values"));
    }
    let largest = narrow(s, -1, 1)?;
    let smallest = call1(
        "aten::narrow",
        vec![s.clone(), int(-1), int(k as i64 - 1), int(1)],
    )?;
    let (top, bottom) = if order > 0.0 {
        (largest, smallest)
    } else {
        (smallest, largest)
    };
    let dtype = input.dtype(0)?;
    let one_hot = |position: usize| -> Result<IValue> {
        let values: Vec<f64> = (0..k)
            .map(|i| if i == position { 1.0 } else { 0.0 })
            .collect();
        let tensor = call::fresh(ferrojit_tensor::Tensor::from_vec(values, &[k])?);
        call1(
            "aten::to.dtype",
            vec![tensor, int(dtype.scalar_type_index())],
        )
    };
    let (top_at, bottom_at) = if order > 0.0 { (0, k - 1) } else { (k - 1, 0) };
    // d(top / bottom) = d top / bottom - top d bottom / bottom²
    let grad_s = sub(
        &call::div(&one_hot(top_at)?, &bottom)?,
        &mul(
            &one_hot(bottom_at)?,
            &call::div(&top, &mul(&bottom, &bottom)?)?,
        )?,
    )?;
    let grad_s = mul(&grad_s, &unsqueeze(input.grad(0)?, -1)?)?;
    let scaled = mul(&results[0], &unsqueeze(&grad_s, -2)?)?;
    let mut out = input.none();
    out[0] = Some(matmul(&scaled, &results[2])?);
    Ok(out)
}

/// `linalg_tensorinv(self, ind)`: the inverse of `self` as a `[prod(front), prod(back)]`
/// matrix, reshaped; its gradient is the matrix inverse's, reshaped back.
fn linalg_tensorinv(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let ind = usize::try_from(input.int(1)?).unwrap_or(0).min(sizes.len());
    let rows: usize = sizes[..ind].iter().product();
    let columns: usize = sizes[ind..].iter().product();
    let matrix = call::reshape(input.argument(0)?, &[rows, columns])?;
    let inverse = call1("aten::linalg_inv", vec![matrix])?;
    let grad = call::reshape(input.grad(0)?, &[columns, rows])?;
    let inverse_t = mt(&inverse)?;
    let gradient = call::neg(&matmul(&inverse_t, &matmul(&grad, &inverse_t)?)?)?;
    let mut out = input.none();
    out[0] = Some(call::reshape(&gradient, &sizes)?);
    Ok(out)
}

/// `linalg_tensorsolve(self, other, dims)`: `self` (its `dims` moved last) as a
/// `[numel(other), rest]` matrix solved against `other` flattened.
fn linalg_tensorsolve(input: &FormulaInput) -> Result<Gradients> {
    let a_sizes = input.sizes(0)?;
    let b_sizes = input.sizes(1)?;
    let rank = a_sizes.len();
    let moved_from: Vec<i64> = match input.argument(2)? {
        IValue::None => Vec::new(),
        other => other.to_int_vec()?,
    };
    let moved_to: Vec<i64> = (rank - moved_from.len().min(rank)..rank)
        .map(|dim| dim as i64)
        .collect();
    let mut a = input.argument(0)?.clone();
    if !moved_from.is_empty() {
        a = call1(
            "aten::movedim.intlist",
            vec![a, ints(&moved_from), ints(&moved_to)],
        )?;
    }
    let moved_sizes = call::sizes(&a)?;
    let equations: usize = b_sizes.iter().product();
    let unknowns: usize = moved_sizes[b_sizes.len().min(rank)..].iter().product();
    let matrix = call::reshape(&a, &[equations, unknowns])?;
    let solution = call::reshape(&recompute1("aten::linalg_tensorsolve", input)?, &[unknowns])?;
    let grad = call::reshape(input.grad(0)?, &[unknowns])?;
    let grad_b = call1("aten::linalg_solve", vec![mt(&matrix)?, grad])?;
    let mut out = input.none();
    if input.needs(0) {
        let outer = call1("aten::outer", vec![grad_b.clone(), solution])?;
        let mut gradient = call::reshape(&call::neg(&outer)?, &moved_sizes)?;
        if !moved_from.is_empty() {
            gradient = call1(
                "aten::movedim.intlist",
                vec![gradient, ints(&moved_to), ints(&moved_from)],
            )?;
        }
        out[0] = Some(gradient);
    }
    if input.needs(1) {
        out[1] = Some(call::reshape(&grad_b, &b_sizes)?);
    }
    Ok(out)
}

/// `linalg_qr(A, mode)` for `"reduced"` (or `"complete"` on a square or tall input with the
/// square `Q`) when `m >= n`: `gA = [gQ + Q copyltu(M)] R^-T` with `M = R gR^T - gQ^T Q` and
/// `copyltu` the symmetric matrix of `M`'s lower triangle.
fn linalg_qr(input: &FormulaInput) -> Result<Gradients> {
    let (rows, columns) = matrix_sizes(input)?;
    let mode = match input.argument(1)? {
        IValue::Str(text) => text.to_string(),
        _ => "reduced".to_string(),
    };
    if rows < columns || mode == "r" || (mode == "complete" && rows != columns) {
        return Err(refuse(format!(
            "The derivative of linalg.qr depends on Q, which is not computed when mode='{mode}' \
             or is not unique for wide inputs; it is implemented for m >= n with mode='reduced'"
        )));
    }
    let results = recompute("aten::linalg_qr", input)?;
    let (q, r) = (&results[0], &results[1]);
    let (grad_q, grad_r) = (input.grad(0)?, input.grad(1)?);
    let m = sub(&matmul(r, &mt(grad_r)?)?, &matmul(&mt(grad_q)?, q)?)?;
    let lower = call1("aten::tril", vec![m.clone(), int(-1)])?;
    let diagonal = call1("aten::diagonal", vec![m, int(0), int(-2), int(-1)])?;
    let symmetric = call::add(&call::add(&lower, &mt(&lower)?)?, &diag_embed(&diagonal)?)?;
    let combined = call::add(grad_q, &matmul(q, &symmetric)?)?;
    let gradient = call1(
        "aten::linalg_solve_triangular",
        vec![
            mt(r)?,
            combined,
            IValue::Bool(false),
            IValue::Bool(false),
            IValue::Bool(false),
        ],
    )?;
    let mut out = input.none();
    out[0] = Some(gradient);
    Ok(out)
}

formula_table![
    ("aten::linalg_svd", "LinalgSvdBackward0", linalg_svd, &[0]),
    ("aten::svd", "SvdBackward0", svd, &[0]),
    (
        "aten::linalg_svdvals",
        "LinalgSvdBackward0",
        linalg_svdvals,
        &[0]
    ),
    (
        "aten::linalg_eigh",
        "LinalgEighBackward0",
        linalg_eigh,
        &[0]
    ),
    (
        "aten::linalg_eigvalsh",
        "LinalgEighBackward0",
        linalg_eigvalsh,
        &[0]
    ),
    (
        "aten::linalg_pinv.atol_rtol_float",
        "LinalgPinvBackward0",
        linalg_pinv_float,
        &[0]
    ),
    (
        "aten::linalg_pinv",
        "LinalgPinvBackward0",
        linalg_pinv_rcond,
        &[0]
    ),
    ("aten::pinverse", "PinverseBackward0", pinverse, &[0]),
    ("aten::linalg_qr", "LinalgQrBackward0", linalg_qr, &[0]),
    (
        "aten::linalg_lstsq",
        "LinalgLstsqBackward0",
        linalg_lstsq,
        &[0, 1]
    ),
    (
        "aten::linalg_cond",
        "LinalgCondBackward0",
        linalg_cond,
        &[0]
    ),
    (
        "aten::linalg_tensorinv",
        "LinalgTensorinvBackward0",
        linalg_tensorinv,
        &[0]
    ),
    (
        "aten::linalg_tensorsolve",
        "LinalgTensorsolveBackward0",
        linalg_tensorsolve,
        &[0, 1]
    ),
    (
        "aten::linalg_matrix_norm.str_ord",
        "LinalgMatrixNormBackward0",
        matrix_norm_str,
        &[0]
    ),
];
