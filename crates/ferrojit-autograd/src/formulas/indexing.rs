//! Gathering and scattering operators: `gather`, `scatter` (src/value), `scatter_add`,
//! `scatter_reduce`, `index_add`, `index_fill`, `index_put`, `masked_fill`,
//! `masked_scatter`, `masked_select`, `take`, `take_along_dim`, `select_scatter`. Index and
//! mask arguments are never differentiated; the gradient is gathered where values were
//! read and scattered where they were written, after PyTorch's derivatives.yaml.

use ferrojit_runtime::{IValue, Result};

use super::support::{
    against, binary, broadcast_shape, keep_where, recompute1, refuse, summed_to, zero_where,
    zeros_of,
};
use super::{wrap_dim, Formula, FormulaInput, Gradients};
use crate::call::{self, call1, div, expand, float, int, mask_like, mul, reshape, sum_to};

fn gather_call(grad: &IValue, dim: i64, index: &IValue) -> Result<IValue> {
    call1("aten::gather", vec![grad.clone(), int(dim), index.clone()])
}

fn scatter_value(value: &IValue, dim: i64, index: &IValue, number: f64) -> Result<IValue> {
    call1(
        "aten::scatter.value",
        vec![value.clone(), int(dim), index.clone(), float(number)],
    )
}

fn scatter_add_call(base: &IValue, dim: i64, index: &IValue, src: &IValue) -> Result<IValue> {
    call1(
        "aten::scatter_add",
        vec![base.clone(), int(dim), index.clone(), src.clone()],
    )
}

/// `gather(self, dim, index)`: the gradient is added back at the gathered positions.
fn gather(input: &FormulaInput) -> Result<Gradients> {
    let dim = input.int(1)?;
    let mut out = input.none();
    out[0] = Some(scatter_add_call(
        &zeros_of(input, 0)?,
        dim,
        input.argument(2)?,
        input.grad(0)?,
    )?);
    Ok(out)
}

/// `scatter.src(self, dim, index, src)`: overwritten positions of `self` get none, `src`
/// gets the gradient of the positions it wrote.
fn scatter_src(input: &FormulaInput) -> Result<Gradients> {
    let dim = input.int(1)?;
    let index = input.argument(2)?;
    let grad = input.grad(0)?;
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(scatter_value(grad, dim, index, 0.0)?);
    }
    if input.needs(3) {
        out[3] = Some(gather_call(grad, dim, index)?);
    }
    Ok(out)
}

fn scatter_value_formula(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(scatter_value(
        input.grad(0)?,
        input.int(1)?,
        input.argument(2)?,
        0.0,
    )?);
    Ok(out)
}

/// `scatter_add(self, dim, index, src)`.
fn scatter_add(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(grad.clone());
    }
    if input.needs(3) {
        out[3] = Some(gather_call(grad, input.int(1)?, input.argument(2)?)?);
    }
    Ok(out)
}

/// `scatter_reduce.two(self, dim, index, src, reduce, *, include_self)`
/// (`scatter_reduce_backward`).
fn scatter_reduce(input: &FormulaInput) -> Result<Gradients> {
    let x = input.argument(0)?;
    let dim = input.int(1)?;
    let index = input.argument(2)?;
    let src = input.argument(3)?;
    let reduce = input.argument(4)?.to_str()?.to_string();
    let include_self = input.argument(5)?.to_bool()?;
    let grad = input.grad(0)?;
    let (grad_self, grad_src) = match reduce.as_str() {
        "sum" => (grad.clone(), gather_call(grad, dim, index)?),
        "mean" => {
            let base = if include_self {
                call1("aten::ones_like", vec![grad.clone()])?
            } else {
                call1("aten::zeros_like", vec![grad.clone()])?
            };
            let ones = call1("aten::ones_like", vec![src.clone()])?;
            let counts = scatter_add_call(&base, dim, index, &ones)?;
            let counts = call1(
                "aten::masked_fill.Scalar",
                vec![
                    counts.clone(),
                    against("aten::eq.Scalar", &counts, 0.0)?,
                    float(1.0),
                ],
            )?;
            let grad_self = div(grad, &counts)?;
            let grad_src = div(
                &gather_call(grad, dim, index)?,
                &gather_call(&counts, dim, index)?,
            )?;
            (grad_self, grad_src)
        }
        "amax" | "amin" => {
            let result = recompute1("aten::scatter_reduce.two", input)?;
            let value = gather_call(&result, dim, index)?;
            let self_hits = mask_like(&binary("aten::eq.Tensor", x, &result)?, x)?;
            let src_hits = mask_like(&binary("aten::eq.Tensor", src, &value)?, src)?;
            let shares = scatter_add_call(&self_hits, dim, index, &src_hits)?;
            let distributed = div(grad, &shares)?;
            let grad_self = mul(&self_hits, &distributed)?;
            let grad_src = mul(&src_hits, &gather_call(&distributed, dim, index)?)?;
            (grad_self, grad_src)
        }
        "prod" => scatter_prod_backward(input, grad, dim, include_self)?,
        other => {
            return Err(refuse(format!(
                "reduce argument must be either sum, prod, mean, amax or amin, got {other}"
            )))
        }
    };
    let grad_self = if include_self {
        grad_self
    } else {
        scatter_value(&grad_self, dim, index, 0.0)?
    };
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(grad_self);
    }
    if input.needs(3) {
        out[3] = Some(grad_src);
    }
    Ok(out)
}

/// The `prod` reduction: no division by a zero factor; a position with a single zero
/// source takes the product of the others.
fn scatter_prod_backward(
    input: &FormulaInput,
    grad: &IValue,
    dim: i64,
    include_self: bool,
) -> Result<(IValue, IValue)> {
    let x = input.argument(0)?;
    let index = input.argument(2)?;
    let src = input.argument(3)?;
    let reduce = IValue::string("prod");
    let scatter_prod = |base: &IValue, source: &IValue| {
        call1(
            "aten::scatter_reduce.two",
            vec![
                base.clone(),
                int(dim),
                index.clone(),
                source.clone(),
                reduce.clone(),
                IValue::Bool(include_self),
            ],
        )
    };
    let result = scatter_prod(x, src)?;
    let self_zero = against("aten::eq.Scalar", x, 0.0)?;
    let masked_self = call1(
        "aten::masked_fill.Scalar",
        vec![x.clone(), self_zero, float(1.0)],
    )?;
    let masked_self_result = scatter_prod(&masked_self, src)?;
    let grad_self = div(&mul(grad, &masked_self_result)?, &masked_self)?;
    let src_zero = against("aten::eq.Scalar", src, 0.0)?;
    let zero_counts = scatter_add_call(
        &call1("aten::zeros_like", vec![x.clone()])?,
        dim,
        index,
        &mask_like(&src_zero, src)?,
    )?;
    let zero_counts = gather_call(&zero_counts, dim, index)?;
    let single_zero = binary(
        "aten::logical_and",
        &src_zero,
        &against("aten::eq.Scalar", &zero_counts, 1.0)?,
    )?;
    let masked_src = call1(
        "aten::masked_fill.Scalar",
        vec![src.clone(), single_zero.clone(), float(1.0)],
    )?;
    let masked_src_result = scatter_prod(x, &masked_src)?;
    let from_single_zero = gather_call(&mul(grad, &masked_src_result)?, dim, index)?;
    let safe_src = call1(
        "aten::masked_fill.Scalar",
        vec![src.clone(), src_zero, float(1.0)],
    )?;
    let plain = div(&gather_call(&mul(grad, &result)?, dim, index)?, &safe_src)?;
    let grad_src = call1(
        "aten::where.self",
        vec![single_zero, from_single_zero, plain],
    )?;
    Ok((grad_self, grad_src))
}

/// `index_add(self, dim, index, source, *, alpha)`.
fn index_add(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let alpha = input.number(4)?;
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(grad.clone());
    }
    if input.needs(3) {
        let source_sizes = input.sizes(3)?;
        let rank = call::sizes(grad)?.len();
        let picked = if rank == 0 {
            grad.clone()
        } else {
            let dim = wrap_dim(input.int(1)?, rank) as i64;
            call1(
                "aten::index_select",
                vec![grad.clone(), int(dim), input.argument(2)?.clone()],
            )?
        };
        let picked = call::scale(&picked, alpha)?;
        out[3] = Some(if call::sizes(&picked)? == source_sizes {
            picked
        } else {
            reshape(&picked, &source_sizes)?
        });
    }
    Ok(out)
}

fn index_fill_zero(input: &FormulaInput) -> Result<IValue> {
    call1(
        "aten::index_fill.int_Scalar",
        vec![
            input.grad(0)?.clone(),
            int(input.int(1)?),
            input.argument(2)?.clone(),
            float(0.0),
        ],
    )
}

/// `index_fill.int_Scalar(self, dim, index, value)`: filled positions get no gradient.
fn index_fill_scalar(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(index_fill_zero(input)?);
    Ok(out)
}

/// `index_fill.int_Tensor(self, dim, index, value)`: `value` gets the gradient summed over
/// the filled positions (each counted once, as PyTorch's unique indices).
fn index_fill_tensor(input: &FormulaInput) -> Result<Gradients> {
    let filled_out = index_fill_zero(input)?;
    let mut out = input.none();
    if input.needs(3) {
        let grad = input.grad(0)?;
        let filled = call::sub(grad, &filled_out)?;
        out[3] = Some(summed_to(&filled, &input.sizes(3)?)?);
    }
    if input.needs(0) {
        out[0] = Some(filled_out);
    }
    Ok(out)
}

/// `index_put(self, indices, values, accumulate)`: `values` gets the gradient at the
/// indexed positions; `self` keeps it except where overwritten.
fn index_put(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let indices = input.argument(1)?;
    let accumulate = input.argument(3)?.to_bool()?;
    let indices = call::optional_tensor_list(indices.to_list()?.to_vec());
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(if accumulate {
            grad.clone()
        } else {
            let zeros = zeros_of(input, 2)?;
            call1(
                "aten::index_put",
                vec![grad.clone(), indices.clone(), zeros, IValue::Bool(false)],
            )?
        });
    }
    if input.needs(2) {
        let picked = call1("aten::index.Tensor", vec![grad.clone(), indices])?;
        out[2] = Some(sum_to(&picked, &input.sizes(2)?)?);
    }
    Ok(out)
}

/// `index.Tensor(self, indices)`: the gradient accumulated back into zeros at the indexed
/// positions (an index named twice gets both gradients).
fn index(input: &FormulaInput) -> Result<Gradients> {
    let indices = call::optional_tensor_list(input.argument(1)?.to_list()?.to_vec());
    let mut out = input.none();
    out[0] = Some(call1(
        "aten::index_put",
        vec![
            zeros_of(input, 0)?,
            indices,
            input.grad(0)?.clone(),
            IValue::Bool(true),
        ],
    )?);
    Ok(out)
}

/// `masked_fill.Scalar(self, mask, value)`.
fn masked_fill_scalar(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(sum_to(
        &zero_where(input.argument(1)?, input.grad(0)?)?,
        &input.sizes(0)?,
    )?);
    Ok(out)
}

/// `masked_fill.Tensor(self, mask, value)`: `value` gets the masked positions' sum.
fn masked_fill_tensor(input: &FormulaInput) -> Result<Gradients> {
    let mask = input.argument(1)?;
    let grad = input.grad(0)?;
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(sum_to(&zero_where(mask, grad)?, &input.sizes(0)?)?);
    }
    if input.needs(2) {
        out[2] = Some(summed_to(&keep_where(mask, grad)?, &input.sizes(2)?)?);
    }
    Ok(out)
}

/// `masked_scatter(self, mask, source)`: `source` gets the masked positions' gradient in
/// order, padded with zeros to its size.
fn masked_scatter(input: &FormulaInput) -> Result<Gradients> {
    let mask = input.argument(1)?;
    let grad = input.grad(0)?;
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(sum_to(&zero_where(mask, grad)?, &input.sizes(0)?)?);
    }
    if input.needs(2) {
        let source_sizes = input.sizes(2)?;
        let selected = call1("aten::masked_select", vec![grad.clone(), mask.clone()])?;
        let count: usize = source_sizes.iter().product();
        let taken = call::sizes(&selected)?[0];
        let padded = if count > taken {
            let zeros = call::zeros(&[count - taken], input.dtype(2)?)?;
            call1(
                "aten::cat",
                vec![call::tensor_list(vec![selected, zeros]), int(0)],
            )?
        } else {
            selected
        };
        out[2] = Some(reshape(&padded, &source_sizes)?);
    }
    Ok(out)
}

/// `masked_select(self, mask)`: the gradient is scattered back into the masked positions
/// of the broadcast shape, then summed to `self`'s.
fn masked_select(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let shape = broadcast_shape(&sizes, &input.sizes(1)?)?;
    let zeros = call::zeros(&shape, input.dtype(0)?)?;
    let scattered = call1(
        "aten::masked_scatter",
        vec![zeros, input.argument(1)?.clone(), input.grad(0)?.clone()],
    )?;
    let mut out = input.none();
    out[0] = Some(sum_to(&scattered, &sizes)?);
    Ok(out)
}

/// `take(self, index)`: `zeros.put_(index, grad, accumulate=True)`.
fn take(input: &FormulaInput) -> Result<Gradients> {
    let mut out = input.none();
    out[0] = Some(call1(
        "aten::put",
        vec![
            zeros_of(input, 0)?,
            input.argument(1)?.clone(),
            input.grad(0)?.clone(),
            IValue::Bool(true),
        ],
    )?);
    Ok(out)
}

/// `take_along_dim(self, indices, dim)`: scatter-add into the broadcast input, then sum
/// back to `self`'s shape; without `dim`, along the flattened input.
fn take_along_dim(input: &FormulaInput) -> Result<Gradients> {
    let sizes = input.sizes(0)?;
    let index_sizes = input.sizes(1)?;
    let indices = input.argument(1)?;
    let grad = input.grad(0)?;
    let mut out = input.none();
    if input.argument(2)?.is_none() {
        let count: usize = sizes.iter().product();
        let flat_grad = reshape(grad, &[call::sizes(grad)?.iter().product()])?;
        let flat_index = reshape(indices, &[index_sizes.iter().product()])?;
        let zeros = call::zeros(&[count], input.dtype(0)?)?;
        let scattered = scatter_add_call(&zeros, 0, &flat_index, &flat_grad)?;
        out[0] = Some(reshape(&scattered, &sizes)?);
        return Ok(out);
    }
    if index_sizes.len() != sizes.len() {
        return Err(refuse(format!(
            "torch.take_along_dim(): input and indices should have the same number of \
             dimensions, but got {} dimensions for input, and {} dimensions for indices",
            sizes.len(),
            index_sizes.len()
        )));
    }
    let dim = wrap_dim(input.int(2)?, sizes.len());
    let mut stretched = index_sizes.clone();
    stretched[dim] = sizes[dim];
    let shape = broadcast_shape(&stretched, &sizes)?;
    let mut index_shape = shape.clone();
    index_shape[dim] = index_sizes[dim];
    let indices = expand(indices, &index_shape)?;
    let zeros = call::zeros(&shape, input.dtype(0)?)?;
    let scattered = scatter_add_call(&zeros, dim as i64, &indices, grad)?;
    out[0] = Some(sum_to(&scattered, &sizes)?);
    Ok(out)
}

/// `select_scatter(self, src, dim, index)`.
fn select_scatter(input: &FormulaInput) -> Result<Gradients> {
    let grad = input.grad(0)?;
    let dim = input.int(2)?;
    let position = input.int(3)?;
    let mut out = input.none();
    if input.needs(0) {
        out[0] = Some(call1(
            "aten::select_scatter",
            vec![grad.clone(), zeros_of(input, 1)?, int(dim), int(position)],
        )?);
    }
    if input.needs(1) {
        out[1] = Some(call1(
            "aten::select.int",
            vec![grad.clone(), int(dim), int(position)],
        )?);
    }
    Ok(out)
}

formula_table![
    ("aten::gather", "GatherBackward0", gather, &[2]),
    ("aten::scatter.src", "ScatterBackward0", scatter_src, &[2]),
    (
        "aten::scatter.value",
        "ScatterBackward1",
        scatter_value_formula,
        &[2]
    ),
    (
        "aten::scatter_add",
        "ScatterAddBackward0",
        scatter_add,
        &[2]
    ),
    (
        "aten::scatter_reduce.two",
        "ScatterReduceBackward0",
        scatter_reduce,
        &[0, 2, 3]
    ),
    ("aten::index_add", "IndexAddBackward0", index_add, &[2]),
    (
        "aten::index_fill.int_Scalar",
        "IndexFillBackward0",
        index_fill_scalar,
        &[2]
    ),
    (
        "aten::index_fill.int_Tensor",
        "IndexFillBackward1",
        index_fill_tensor,
        &[2]
    ),
    ("aten::index.Tensor", "IndexBackward0", index, &[1]),
    (
        "aten::index.Tensor_hacked_twin",
        "IndexBackward0",
        index,
        &[1]
    ),
    ("aten::index_put", "IndexPutBackward0", index_put, &[1]),
    (
        "aten::index_put.hacked_twin",
        "IndexPutBackward0",
        index_put,
        &[1]
    ),
    (
        "aten::masked_fill.Scalar",
        "MaskedFillBackward0",
        masked_fill_scalar,
        &[1]
    ),
    (
        "aten::masked_fill.Tensor",
        "MaskedFillBackward1",
        masked_fill_tensor,
        &[1]
    ),
    (
        "aten::masked_scatter",
        "MaskedScatterBackward0",
        masked_scatter,
        &[1]
    ),
    (
        "aten::masked_select",
        "MaskedSelectBackward0",
        masked_select,
        &[1]
    ),
    ("aten::take", "TakeBackward0", take, &[1]),
    (
        "aten::take_along_dim",
        "TakeAlongDimBackward0",
        take_along_dim,
        &[1]
    ),
    (
        "aten::select_scatter",
        "SelectScatterBackward0",
        select_scatter,
        &[]
    ),
];
