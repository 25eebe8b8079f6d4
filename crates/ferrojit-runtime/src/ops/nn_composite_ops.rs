//! ATen operators that compose other kernels: `_masked_softmax` (kernel in
//! `ferrojit_tensor::ops::nn::masked_softmax`), `_trilinear` (what `bilinear` lowers to),
//! `glu_jvp` (the forward-mode derivative of `glu`), `batch_norm_update_stats` (a batch's
//! statistics folded into the running ones), and the small tensor queries and helpers
//! (`is_complex`, `is_same_size`, `get_device`, `_is_all_true`, `_dim_arange`, `slice_scatter`, ...),
//! `einsum.sublist` (the operand/sublist form of `einsum`, turned into an equation), and
//! `embedding_renorm_` (the max-norm rescaling `F.embedding` applies to the rows it looks up).

use std::sync::Arc;

use ferrojit_tensor::{wrap_dim, DType, Scalar, Tensor, TensorError};

use super::binding::{functional_and_out, typed, typed_in_place};
use super::pop_varargs;
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;
use crate::registry::Stack;

type Input = Arc<Tensor>;

fn invalid(message: impl Into<String>) -> RuntimeError {
    TensorError::InvalidArgument(message.into()).into()
}

fn masked_softmax(
    input: Input,
    mask: Input,
    dim: Option<i64>,
    mask_type: Option<i64>,
) -> Result<Tensor> {
    Ok(input.masked_softmax(&mask, dim, mask_type)?)
}

/// `_trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim)`: each input gets
/// size-1 dimensions inserted at its `expand` positions (so all three have the same rank),
/// they are multiplied with broadcasting, and the `sumdim` dimensions are summed away.
/// `unroll_dim` only chooses how ATen loops, not the result.
#[allow(clippy::too_many_arguments)]
fn trilinear(
    i1: Input,
    i2: Input,
    i3: Input,
    expand1: Vec<i64>,
    expand2: Vec<i64>,
    expand3: Vec<i64>,
    sumdim: Vec<i64>,
    unroll_dim: i64,
) -> Result<Tensor> {
    let total_dim = i1.dim() + expand1.len();
    if unroll_dim < 0 || unroll_dim >= total_dim as i64 {
        return Err(invalid(format!(
            "unroll_dim must be in [0,{}]",
            total_dim as i64 - 1
        )));
    }
    let expanded = |input: &Tensor, dims: &[i64], which: usize| -> Result<Tensor> {
        if input.dim() + dims.len() != total_dim {
            return Err(invalid(format!(
                "number of dimensions of i{which} ({}) plus its expanded dimensions ({}) must equal {total_dim}",
                input.dim(),
                dims.len()
            )));
        }
        let mut positions: Vec<usize> = Vec::with_capacity(dims.len());
        for &dim in dims {
            positions.push(wrap_dim(dim, total_dim)?);
        }
        positions.sort_unstable();
        let mut result = input.clone();
        for position in positions {
            result = result.unsqueeze(position as i64)?;
        }
        Ok(result)
    };
    let product = expanded(i1.as_ref(), &expand1, 1)?
        .mul(&expanded(i2.as_ref(), &expand2, 2)?)?
        .mul(&expanded(i3.as_ref(), &expand3, 3)?)?;
    if sumdim.is_empty() {
        return Ok(product);
    }
    Ok(product.sum_dim(&sumdim, false, None)?)
}

/// `glu_jvp(glu, x, dx, dim)`: with `x = [a, b]` split in half along `dim` and
/// `glu = a * sigmoid(b)`, the tangent `sigmoid(b) * da + glu * (1 - sigmoid(b)) * db`.
fn glu_jvp(glu: Input, x: Input, dx: Input, dim: i64) -> Result<Tensor> {
    let dim = wrap_dim(dim, x.dim())? as i64;
    if glu.dim() != x.dim() || dx.sizes() != x.sizes() {
        return Err(invalid("glu_jvp: glu must have x's rank and dx x's shape"));
    }
    let half = glu.sizes()[dim as usize] as i64;
    let b = x.narrow(dim, half, half)?;
    let da = dx.narrow(dim, 0, half)?;
    let db = dx.narrow(dim, half, half)?;
    let sigmoid_b = b.sigmoid()?;
    let one = Tensor::wrapped_scalar(Scalar::Int(1));
    let glu_times_complement = glu.mul(&one.sub(&sigmoid_b, &Scalar::Int(1))?)?;
    Ok(sigmoid_b
        .mul(&da)?
        .add(&glu_times_complement.mul(&db)?, &Scalar::Int(1))?)
}

/// `batch_norm_update_stats(input, running_mean, running_var, momentum)`: the batch's mean
/// and biased variance per channel (dimension 1), returned; the running statistics, when
/// given, become `momentum * batch + (1 - momentum) * running` (with the unbiased variance).
fn batch_norm_update_stats(
    input: Input,
    running_mean: Option<Input>,
    running_var: Option<Input>,
    momentum: f64,
) -> Result<(Tensor, Tensor)> {
    if input.dim() < 2 {
        return Err(invalid(format!(
            "Expected 2D+ input, but got {}D input",
            input.dim()
        )));
    }
    let reduced: Vec<i64> = (0..input.dim() as i64).filter(|&d| d != 1).collect();
    let count = input.numel() / input.sizes()[1].max(1);
    let mean = input.mean_dim(&reduced, false, None)?;
    let var = input.var_std(&reduced, 0.0, false, false)?;
    let blend = |running: &Tensor, batch: &Tensor| -> Result<()> {
        let updated = batch
            .mul(&Tensor::wrapped_scalar(Scalar::Float(momentum)))?
            .add(
                &running.mul(&Tensor::wrapped_scalar(Scalar::Float(1.0 - momentum)))?,
                &Scalar::Int(1),
            )?;
        running.copy_(&updated)?;
        Ok(())
    };
    if let Some(running_mean) = &running_mean {
        blend(running_mean.as_ref(), &mean)?;
    }
    if let Some(running_var) = &running_var {
        let unbiased = if count > 1 {
            var.mul(&Tensor::wrapped_scalar(Scalar::Float(
                count as f64 / (count as f64 - 1.0),
            )))?
        } else {
            input.var_std(&reduced, 1.0, false, false)?
        };
        blend(running_var.as_ref(), &unbiased)?;
    }
    Ok((mean, var))
}

fn is_complex(input: Input) -> Result<bool> {
    Ok(input.dtype().is_complex())
}

fn is_same_size(input: Input, other: Input) -> Result<bool> {
    Ok(input.sizes() == other.sizes())
}

/// `-1`: every ferrojit tensor is a CPU tensor.
fn get_device(_input: Input) -> Result<i64> {
    Ok(-1)
}

fn is_distributed(_input: Input) -> Result<bool> {
    Ok(false)
}

/// `is_neg`: ferrojit negates eagerly, so no tensor carries a lazy negation bit.
fn is_neg(_input: Input) -> Result<bool> {
    Ok(false)
}

/// `_is_all_true` / `_is_any_true`: `all()` / `any()` of a boolean tensor.
fn is_all_true(input: Input) -> Result<Tensor> {
    require_bool(&input, "_is_all_true")?;
    Ok(input.any_all(&[], false, false)?)
}

fn is_any_true(input: Input) -> Result<Tensor> {
    require_bool(&input, "_is_any_true")?;
    Ok(input.any_all(&[], false, true)?)
}

fn require_bool(input: &Tensor, op: &str) -> Result<()> {
    if input.dtype() != DType::Bool {
        return Err(invalid(format!(
            "{op} expects a boolean tensor, but got {}",
            input.dtype().scalar_type_name()
        )));
    }
    Ok(())
}

/// `_dim_arange(like, dim)`: `arange(like.size(dim))` as int64.
fn dim_arange(like: Input, dim: i64) -> Result<Tensor> {
    let dim = wrap_dim(dim, like.dim())?;
    Ok(Tensor::arange(
        0.0,
        like.sizes()[dim] as f64,
        1.0,
        DType::Int64,
    )?)
}

/// `_shape_as_tensor(self)`: the sizes as a 1-D int64 tensor.
fn shape_as_tensor(input: Input) -> Result<Tensor> {
    let sizes: Vec<i64> = input.sizes().iter().map(|&s| s as i64).collect();
    let count = sizes.len();
    Ok(Tensor::from_vec(sizes, &[count])?)
}

/// `slice_scatter`: a copy of `self` whose slice `[start:end:step]` along `dim` is `src`,
/// which must have the slice's shape.
fn slice_scatter(
    input: Input,
    src: Input,
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<Tensor> {
    Ok(input.slice_scatter(&src, dim, start, end, step)?)
}

/// `narrow.Tensor`: `narrow` with the start given as a 0-dim integer tensor.
fn narrow_tensor(input: Input, dim: i64, start: Input, length: i64) -> Result<Tensor> {
    if start.dim() != 0 || start.dtype().is_floating_point() || start.dtype().is_complex() {
        return Err(invalid("start must be an 0-dim integral Tensor."));
    }
    let start = match start.item()? {
        Scalar::Int(value) => value,
        Scalar::Bool(value) => i64::from(value),
        Scalar::Float(value) => value as i64,
    };
    Ok(input.narrow(dim, start, length)?)
}

/// The equation letters of the sublist at vararg position `argument`: 0-25 are `A`-`Z`,
/// 26-51 `a`-`z`.
fn subscripts(list: &IValue, argument: usize) -> Result<String> {
    list.to_int_vec()?
        .into_iter()
        .enumerate()
        .map(|(position, n)| match n {
            0..=25 => Ok(char::from(b'A' + n as u8)),
            26..=51 => Ok(char::from(b'a' + (n - 26) as u8)),
            _ => Err(invalid(format!(
                "einsum(): expected subscript {position} in argument {argument} to be within the range [0, 52), but got {n}"
            ))),
        })
        .collect()
}

/// `einsum.sublist(op1, sublist1, op2, sublist2, ..., [sublist_out])`: each operand is
/// followed by the list of its subscripts (integers), and a trailing list gives the output's;
/// the call is `einsum` of the equation the lists spell.
fn einsum_sublist(stack: &mut Stack) -> Result<()> {
    let inputs = pop_varargs(stack)?;
    let mut operands = Vec::new();
    let mut inputs_spelled = Vec::new();
    let mut output = None;
    let mut index = 0;
    while index < inputs.len() {
        match &inputs[index] {
            value @ IValue::Tensor(_) => {
                let tensor = value.to_tensor()?;
                let Some(list) = inputs.get(index + 1) else {
                    return Err(invalid(
                        "einsum(): must specify the equation string and at least one operand, or at least one operand and its subscripts list",
                    ));
                };
                operands.push(tensor.as_ref().clone());
                inputs_spelled.push(subscripts(list, index + 1)?);
                index += 2;
            }
            list if index + 1 == inputs.len() && !operands.is_empty() => {
                output = Some(subscripts(list, index)?);
                index += 1;
            }
            other => {
                return Err(invalid(format!(
                    "einsum(): expected a Tensor operand, got {}",
                    other.tag_name()
                )))
            }
        }
    }
    let mut equation = inputs_spelled.join(",");
    if let Some(output) = output {
        equation.push_str("->");
        equation.push_str(&output);
    }
    let result = ferrojit_tensor::ops::products::einsum(&equation, &operands)?;
    stack.push(IValue::from(result));
    Ok(())
}

/// The legacy tensor type name PyTorch's argument checks print (`torch.FloatTensor`).
fn legacy_type_name(dtype: DType) -> &'static str {
    match dtype {
        DType::Float32 => "torch.FloatTensor",
        DType::Float64 => "torch.DoubleTensor",
        DType::Float16 => "torch.HalfTensor",
        DType::BFloat16 => "torch.BFloat16Tensor",
        DType::Int8 => "torch.CharTensor",
        DType::UInt8 => "torch.ByteTensor",
        DType::Int16 => "torch.ShortTensor",
        DType::Int32 => "torch.IntTensor",
        DType::Int64 => "torch.LongTensor",
        DType::Bool => "torch.BoolTensor",
        DType::ComplexFloat => "torch.ComplexFloatTensor",
        DType::ComplexDouble => "torch.ComplexDoubleTensor",
    }
}

/// `embedding_renorm_(self, indices, max_norm, norm_type)`: every distinct row of `self` that
/// `indices` names, taken in increasing order, is scaled by `max_norm / (norm + 1e-7)` when
/// its `norm_type`-norm exceeds `max_norm`. `self` is written in place and returned.
fn embedding_renorm_in_place(
    weight: Input,
    indices: Input,
    max_norm: f64,
    norm_type: f64,
) -> Result<Tensor> {
    let checking = "(while checking arguments for embedding_renorm_)";
    if weight.dim() != 2 {
        return Err(invalid(format!(
            "Expected 2-dimensional tensor, but got {}-dimensional tensor for argument #1 'self' {checking}",
            weight.dim()
        )));
    }
    if !matches!(indices.dtype(), DType::Int64 | DType::Int32) {
        return Err(invalid(format!(
            "Expected tensor for argument #2 'indices' to have one of the following scalar types: Long, Int; but got {} instead {checking}",
            legacy_type_name(indices.dtype())
        )));
    }
    let mut rows = indices.to_i64_vec();
    rows.sort_unstable();
    rows.dedup();
    for index in rows {
        let row = weight.select(0, index)?;
        let norm = row
            .vector_norm(norm_type, &[], false, None)?
            .item()?
            .to_f64();
        if norm > max_norm {
            let scale = max_norm / (norm + 1e-7);
            row.copy_(&row.mul(&Tensor::wrapped_scalar(Scalar::Float(scale)))?)?;
        }
    }
    Ok(weight.as_ref().clone())
}

/// `embedding_renorm`: the same on a copy.
fn embedding_renorm(
    weight: Input,
    indices: Input,
    max_norm: f64,
    norm_type: f64,
) -> Result<Tensor> {
    embedding_renorm_in_place(
        Arc::new(weight.clone_tensor()),
        indices,
        max_norm,
        norm_type,
    )
}

pub fn declarations() -> Vec<OperatorDeclaration> {
    let mut declarations = Vec::new();
    declarations.extend(functional_and_out(
        "aten::_masked_softmax(Tensor self, Tensor mask, int? dim=None, int? mask_type=None) -> Tensor",
        "aten::_masked_softmax.out(Tensor self, Tensor mask, int? dim=None, int? mask_type=None, *, Tensor(a!) out) -> Tensor(a!)",
        masked_softmax,
    ));
    declarations.extend(functional_and_out(
        "aten::_trilinear(Tensor i1, Tensor i2, Tensor i3, int[] expand1, int[] expand2, int[] expand3, int[] sumdim, int unroll_dim=1) -> Tensor",
        "aten::_trilinear.out(Tensor i1, Tensor i2, Tensor i3, int[] expand1, int[] expand2, int[] expand3, int[] sumdim, int unroll_dim=1, *, Tensor(a!) out) -> Tensor(a!)",
        trilinear,
    ));
    declarations.extend(functional_and_out(
        "aten::glu_jvp(Tensor glu, Tensor x, Tensor dx, int dim) -> Tensor",
        "aten::glu_jvp.out(Tensor glu, Tensor x, Tensor dx, int dim, *, Tensor(a!) out) -> Tensor(a!)",
        glu_jvp,
    ));
    declarations.extend(functional_and_out(
        "aten::slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor",
        "aten::slice_scatter.out(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1, *, Tensor(a!) out) -> Tensor(a!)",
        slice_scatter,
    ));
    declarations.push(OperatorDeclaration::stack(
        "aten::einsum.sublist(Tensor a, ...) -> Tensor",
        einsum_sublist,
    ));
    declarations.extend(functional_and_out(
        "aten::embedding_renorm(Tensor self, Tensor indices, float max_norm, float norm_type) -> Tensor",
        "aten::embedding_renorm.out(Tensor self, Tensor indices, float max_norm, float norm_type, *, Tensor(a!) out) -> Tensor(a!)",
        embedding_renorm,
    ));
    declarations.push(typed_in_place(
        "aten::embedding_renorm_(Tensor(a!) self, Tensor indices, float max_norm, float norm_type) -> Tensor(a!)",
        embedding_renorm_in_place,
    ));
    declarations.extend([
        typed("aten::batch_norm_update_stats(Tensor input, Tensor? running_mean, Tensor? running_var, float momentum) -> (Tensor, Tensor)", batch_norm_update_stats),
        typed("aten::is_complex(Tensor self) -> bool", is_complex),
        typed("aten::is_same_size(Tensor self, Tensor other) -> bool", is_same_size),
        typed("aten::is_neg(Tensor self) -> bool", is_neg),
        typed("aten::is_distributed(Tensor self) -> bool", is_distributed),
        typed("aten::get_device(Tensor self) -> int", get_device),
        typed("aten::_is_all_true(Tensor self) -> Tensor", is_all_true),
        typed("aten::_is_any_true(Tensor self) -> Tensor", is_any_true),
        typed("aten::_dim_arange(Tensor like, int dim) -> Tensor", dim_arange),
        typed("aten::_shape_as_tensor(Tensor self) -> Tensor", shape_as_tensor),
        typed("aten::narrow.Tensor(Tensor(a) self, int dim, Tensor start, SymInt length) -> Tensor(a)", narrow_tensor),
    ]);
    declarations
}
