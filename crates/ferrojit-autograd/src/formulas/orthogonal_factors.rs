//! Derivatives of the orthogonal-factor operators (`linalg_householder_product`, `ormqr`,
//! `linalg_polar`, `linalg_matrix_sqrth`), each taken through a composition of operators
//! that have formulas ([`super::composition`]): the product of Householder reflectors
//! `H_i = I - tau_i v_i v_iᵀ` built with `matmul`, the polar factors from the thin SVD
//! (`U = W Vh`, `H = Vhᵀ diag(S) Vh`) and the square root of a symmetric matrix from its
//! eigendecomposition (`V diag(sqrt(L)) Vᵀ`). First order only.

use ferrojit_runtime::{IValue, Result};
use ferrojit_tensor::{DType, Tensor};

use super::composition::through_composition;
use super::support::refuse;
use super::{Formula, FormulaInput, Gradients};
use crate::call::{self, call, call1, int, matmul, mul, sub};

/// A constant vector of `size` entries (no history) in `dtype`.
fn constant_vector(values: Vec<f64>, dtype: DType) -> Result<IValue> {
    let size = values.len();
    Ok(call::fresh(
        Tensor::from_vec(values, &[size])?.to_dtype(dtype),
    ))
}

fn identity(size: usize, dtype: DType) -> Result<IValue> {
    let mut values = vec![0.0; size * size];
    for diagonal in 0..size {
        values[diagonal * size + diagonal] = 1.0;
    }
    Ok(call::fresh(
        Tensor::from_vec(values, &[size, size])?.to_dtype(dtype),
    ))
}

fn unsqueeze(value: &IValue, dim: i64) -> Result<IValue> {
    call1("aten::unsqueeze", vec![value.clone(), int(dim)])
}

/// `H_1 H_2 ... H_k` (all `m` columns) for reflectors stored below the diagonal of the
/// columns of `reflectors` (`[..., m, n]`) with factors `tau` (`[..., k]`).
fn reflector_product(reflectors: &IValue, tau: &IValue) -> Result<IValue> {
    let sizes = call::sizes(reflectors)?;
    let tau_sizes = call::sizes(tau)?;
    let (Some(&rows), Some(&count)) = (sizes.iter().rev().nth(1), tau_sizes.last()) else {
        return Err(refuse(
            "torch.linalg.householder_product: input must have at least 2 dimensions.",
        ));
    };
    let columns = sizes[sizes.len() - 1];
    if count > columns {
        return Err(refuse(
            "torch.linalg.householder_product: input.shape[-1] must be greater than or equal \
             to tau.shape[-1]",
        ));
    }
    let dtype = call::tensor(reflectors)?.dtype();
    let mut product = identity(rows, dtype)?;
    for step in 0..count {
        let below: Vec<f64> = (0..rows)
            .map(|row| f64::from(u8::from(row > step)))
            .collect();
        let unit: Vec<f64> = (0..rows)
            .map(|row| f64::from(u8::from(row == step)))
            .collect();
        let column = call1(
            "aten::select.int",
            vec![reflectors.clone(), int(-1), int(step as i64)],
        )?;
        let vector = call::add(
            &mul(&column, &constant_vector(below, dtype)?)?,
            &constant_vector(unit, dtype)?,
        )?;
        let factor = call1(
            "aten::select.int",
            vec![tau.clone(), int(-1), int(step as i64)],
        )?;
        let factor = unsqueeze(&unsqueeze(&factor, -1)?, -1)?;
        let outer = mul(&unsqueeze(&vector, -1)?, &unsqueeze(&vector, -2)?)?;
        let reflector = sub(&identity(rows, dtype)?, &mul(&factor, &outer)?)?;
        product = matmul(&product, &reflector)?;
    }
    Ok(product)
}

/// `linalg_householder_product(input, tau)`: the first `n` columns of the product.
fn householder_product(input: &FormulaInput) -> Result<Gradients> {
    through_composition(input, &[0, 1], |arguments| {
        let columns = *call::sizes(&arguments[0])?
            .last()
            .ok_or_else(|| refuse("householder_product: a 0-d input"))?;
        let product = reflector_product(&arguments[0], &arguments[1])?;
        Ok(vec![call1(
            "aten::narrow",
            vec![product, int(-1), int(0), int(columns as i64)],
        )?])
    })
}

/// `ormqr(self, tau, other, left, transpose)`: `op(Q) other` or `other op(Q)` with the full
/// reflector product `Q` and `op` a transposition when asked.
fn ormqr(input: &FormulaInput) -> Result<Gradients> {
    let left = input.argument(3)?.to_bool()?;
    let transpose = input.argument(4)?.to_bool()?;
    through_composition(input, &[0, 1, 2], |arguments| {
        let mut product = reflector_product(&arguments[0], &arguments[1])?;
        if transpose {
            product = call1("aten::transpose.int", vec![product, int(-2), int(-1)])?;
        }
        let result = if left {
            matmul(&product, &arguments[2])?
        } else {
            matmul(&arguments[2], &product)?
        };
        Ok(vec![result])
    })
}

/// `linalg_polar(A) -> (U, H)` from the thin SVD `A = W diag(S) Vh`.
fn polar(input: &FormulaInput) -> Result<Gradients> {
    through_composition(input, &[0], |arguments| {
        let factors = call(
            "aten::linalg_svd",
            vec![arguments[0].clone(), IValue::Bool(false)],
        )?;
        let [left, singular, right] = &factors[..] else {
            return Err(refuse(
                "autograd: linalg_svd returned other than three results",
            ));
        };
        let unitary = matmul(left, right)?;
        let right_t = call1("aten::transpose.int", vec![right.clone(), int(-2), int(-1)])?;
        let scaled = matmul(&call1("aten::diag_embed", vec![singular.clone()])?, right)?;
        Ok(vec![unitary, matmul(&right_t, &scaled)?])
    })
}

/// `linalg_matrix_sqrth(A)` from the eigendecomposition of the symmetric `A`.
fn matrix_sqrth(input: &FormulaInput) -> Result<Gradients> {
    if input.sizes(0)?.iter().product::<usize>() == 0 {
        let mut out = input.none();
        out[0] = Some(super::support::zeros_of(input, 0)?);
        return Ok(out);
    }
    through_composition(input, &[0], |arguments| {
        let factors = call("aten::linalg_eigh", vec![arguments[0].clone()])?;
        let [values, vectors] = &factors[..] else {
            return Err(refuse(
                "autograd: linalg_eigh returned other than two results",
            ));
        };
        let roots = call::unary("aten::sqrt", values)?;
        let vectors_t = call1(
            "aten::transpose.int",
            vec![vectors.clone(), int(-2), int(-1)],
        )?;
        let scaled = matmul(&call1("aten::diag_embed", vec![roots])?, &vectors_t)?;
        Ok(vec![matmul(vectors, &scaled)?])
    })
}

formula_table![
    (
        "aten::linalg_householder_product",
        "LinalgHouseholderProductBackward0",
        householder_product,
        &[0, 1]
    ),
    ("aten::ormqr", "OrmqrBackward0", ormqr, &[0, 1, 2]),
    ("aten::linalg_polar", "LinalgPolarBackward0", polar, &[0]),
    (
        "aten::linalg_matrix_sqrth",
        "LinalgMatrixSqrthBackward0",
        matrix_sqrth,
        &[0]
    ),
];
