//! Decompositions of linear algebra: `linear` (ATen's composite kernel: `addmm` for 2-d
//! input with a bias, flatten → `addmm` → `view` for contiguous input, otherwise `matmul`
//! and `add`), `matmul` (every path of PyTorch's `matmul` decomposition: `dot` as `mul` +
//! `sum`, `mm`, `mv`, folding either operand's batch into one `mm` / `mv`, and the broadcast
//! `expand` → `bmm` path), `mv`, and `baddbmm`.

use super::emitter::{not_applicable, Emitter, Original};
use super::Rule;
use crate::error::Result;
use crate::model::Argument;
use std::collections::BTreeMap;

pub(crate) fn register(table: &mut BTreeMap<&'static str, Rule>) {
    table.insert("torch.ops.aten.linear.default", linear);
    table.insert("torch.ops.aten.matmul.default", matmul_rule);
    table.insert("torch.ops.aten.mv.default", mv_rule);
    table.insert("torch.ops.aten.baddbmm.default", baddbmm);
}

/// `weight.t()`: a `permute` of the two dimensions.
fn transposed(emitter: &mut Emitter, weight: &str) -> Result<String> {
    emitter.call(
        "torch.ops.aten.permute.default",
        vec![Argument::Tensor(weight.into()), Argument::Ints(vec![1, 0])],
        vec![],
    )
}

fn linear(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("input")?;
    let weight = original.tensor("weight")?;
    let bias = original.optional_tensor("bias")?;
    let sizes = emitter.sizes(&input)?;
    let input_dim = sizes.len();
    if let Some(bias) = &bias {
        if input_dim == 2 {
            let t = transposed(emitter, &weight)?;
            let out = emitter.call(
                "torch.ops.aten.addmm.default",
                vec![
                    Argument::Tensor(bias.clone()),
                    Argument::Tensor(input),
                    Argument::Tensor(t),
                ],
                vec![],
            )?;
            return Ok(vec![out]);
        }
        let bias_dim = emitter.dim(bias)?;
        if emitter.is_contiguous(&input)? && (input_dim == 3 || bias_dim == 1) && input_dim > 0 {
            // ATen's _flatten_nd_linear: the leading dimensions flattened into one.
            let flattened: i64 = sizes[..input_dim - 1].iter().product();
            let flat = emitter.call(
                "torch.ops.aten.view.default",
                vec![
                    Argument::Tensor(input),
                    Argument::Ints(vec![flattened, sizes[input_dim - 1]]),
                ],
                vec![],
            )?;
            let t = transposed(emitter, &weight)?;
            let product = emitter.call(
                "torch.ops.aten.addmm.default",
                vec![
                    Argument::Tensor(bias.clone()),
                    Argument::Tensor(flat),
                    Argument::Tensor(t),
                ],
                vec![],
            )?;
            let out_features = emitter.sizes(&product)?[1];
            let mut out_sizes = sizes[..input_dim - 1].to_vec();
            out_sizes.push(out_features);
            let out = emitter.call(
                "torch.ops.aten.view.default",
                vec![Argument::Tensor(product), Argument::Ints(out_sizes)],
                vec![],
            )?;
            return Ok(vec![out]);
        }
    }
    let t = transposed(emitter, &weight)?;
    let mut out = matmul(emitter, &input, &t)?;
    if let Some(bias) = bias {
        out = emitter.call(
            "torch.ops.aten.add.Tensor",
            vec![Argument::Tensor(out), Argument::Tensor(bias)],
            vec![],
        )?;
    }
    Ok(vec![out])
}

fn matmul_rule(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let first = original.tensor("self")?;
    let second = original.tensor("other")?;
    Ok(vec![matmul(emitter, &first, &second)?])
}

fn mv_rule(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let matrix = original.tensor("self")?;
    let vector = original.tensor("vec")?;
    Ok(vec![mv(emitter, &matrix, &vector)?])
}

/// PyTorch's `mv` decomposition: `(self * vec).sum(1)`.
fn mv(emitter: &mut Emitter, matrix: &str, vector: &str) -> Result<String> {
    let product = emitter.call(
        "torch.ops.aten.mul.Tensor",
        vec![
            Argument::Tensor(matrix.into()),
            Argument::Tensor(vector.into()),
        ],
        vec![],
    )?;
    emitter.call(
        "torch.ops.aten.sum.dim_IntList",
        vec![Argument::Tensor(product), Argument::Ints(vec![1])],
        vec![],
    )
}

fn view(emitter: &mut Emitter, value: &str, sizes: Vec<i64>) -> Result<String> {
    emitter.call(
        "torch.ops.aten.view.default",
        vec![Argument::Tensor(value.into()), Argument::Ints(sizes)],
        vec![],
    )
}

/// PyTorch's `should_fold` (its Python decomposition, which differs from ATen's): the
/// larger operand (not transposed) is fully contiguous, ignoring dimensions of size one, so
/// its batch can be folded into the rows of one `mm` / `mv`; or the smaller operand
/// requires grad (a parameter), where PyTorch folds even at the cost of a copy.
fn should_fold(emitter: &Emitter, first: &str, second: &str) -> Result<bool> {
    let (dim1, dim2) = (emitter.dim(first)?, emitter.dim(second)?);
    let (larger, smaller) = if dim1 >= dim2 {
        (first, second)
    } else {
        (second, first)
    };
    if !(emitter.dim(larger)? >= 3 && emitter.dim(smaller)? <= 2) {
        return Ok(false);
    }
    if emitter.meta(smaller)?.requires_grad {
        return Ok(true);
    }
    if dim1 == 2 {
        return Ok(false);
    }
    let sizes = emitter.sizes(larger)?;
    if sizes.contains(&0) {
        return Ok(true);
    }
    let strides = emitter.strides(larger)?;
    let expected = super::emitter::contiguous_strides(&sizes);
    Ok(sizes
        .iter()
        .zip(strides.iter().zip(&expected))
        .all(|(size, (stride, want))| *size == 1 || stride == want))
}

/// The last two dimensions swapped (`.mT`), as PyTorch writes it: one `permute`.
fn swap_last_two(emitter: &mut Emitter, value: &str) -> Result<String> {
    let rank = emitter.dim(value)? as i64;
    let mut order: Vec<i64> = (0..rank).collect();
    order.swap(rank as usize - 1, rank as usize - 2);
    emitter.call(
        "torch.ops.aten.permute.default",
        vec![Argument::Tensor(value.into()), Argument::Ints(order)],
        vec![],
    )
}

/// The folded path of PyTorch's `matmul`: the larger operand (transposed when it is the
/// second) reshaped to rows × columns, one `mm` or `mv`, viewed back (and transposed back,
/// contiguous, when the second operand was folded against a matrix).
fn folded_matmul(emitter: &mut Emitter, first: &str, second: &str) -> Result<String> {
    let tensor = |name: &str| Argument::Tensor(name.to_string());
    let (dim1, dim2) = (emitter.dim(first)?, emitter.dim(second)?);
    let transpose = dim2 > dim1;
    let (larger, smaller) = if transpose {
        let larger = swap_last_two(emitter, second)?;
        let smaller = if dim1 == 2 {
            emitter.call(
                "torch.ops.aten.permute.default",
                vec![tensor(first), Argument::Ints(vec![1, 0])],
                vec![],
            )?
        } else {
            first.to_string()
        };
        (larger, smaller)
    } else {
        (first.to_string(), second.to_string())
    };
    let sizes = emitter.sizes(&larger)?;
    let mut output_shape = sizes[..sizes.len() - 1].to_vec();
    let rows: i64 = output_shape.iter().product();
    let folded = reshape_to(emitter, &larger, vec![rows, sizes[sizes.len() - 1]])?;
    if emitter.dim(&smaller)? == 2 {
        output_shape.push(emitter.sizes(&smaller)?[1]);
        let product = emitter.call(
            "torch.ops.aten.mm.default",
            vec![tensor(&folded), tensor(&smaller)],
            vec![],
        )?;
        let output = view(emitter, &product, output_shape)?;
        if !transpose {
            return Ok(output);
        }
        let swapped = swap_last_two(emitter, &output)?;
        if emitter.is_contiguous(&swapped)? {
            return Ok(swapped);
        }
        return emitter.call(
            "torch.ops.aten.clone.default",
            vec![tensor(&swapped)],
            vec![(
                "memory_format",
                Argument::MemoryFormat(super::emitter::MEMORY_FORMAT_CONTIGUOUS),
            )],
        );
    }
    let product = mv(emitter, &folded, &smaller)?;
    view(emitter, &product, output_shape)
}

/// Broadcast shape of two batch shapes.
fn broadcast(first: &[i64], second: &[i64]) -> Result<Vec<i64>> {
    let length = first.len().max(second.len());
    let mut out = vec![0; length];
    for i in 0..length {
        let a = if i + first.len() >= length {
            first[i + first.len() - length]
        } else {
            1
        };
        let b = if i + second.len() >= length {
            second[i + second.len() - length]
        } else {
            1
        };
        out[i] = if a == b || b == 1 {
            a
        } else if a == 1 {
            b
        } else {
            return Err(not_applicable(format!(
                "matmul batch shapes {first:?} and {second:?} do not broadcast"
            )));
        };
    }
    Ok(out)
}

/// ATen's `matmul`, path by path, written with core ATen calls.
pub(crate) fn matmul(emitter: &mut Emitter, first: &str, second: &str) -> Result<String> {
    let sizes1 = emitter.sizes(first)?;
    let sizes2 = emitter.sizes(second)?;
    let (dim1, dim2) = (sizes1.len(), sizes2.len());
    let tensor = |name: &str| Argument::Tensor(name.to_string());
    match (dim1, dim2) {
        (1, 1) => {
            // PyTorch's `dot` decomposition: `(self * other).sum()` over no dimensions.
            let product = emitter.call(
                "torch.ops.aten.mul.Tensor",
                vec![tensor(first), tensor(second)],
                vec![],
            )?;
            return emitter.call(
                "torch.ops.aten.sum.dim_IntList",
                vec![Argument::Tensor(product), Argument::Ints(vec![])],
                vec![],
            );
        }
        (2, 1) => return mv(emitter, first, second),
        (1, 2) => {
            let row = emitter.call(
                "torch.ops.aten.unsqueeze.default",
                vec![tensor(first), Argument::Int(0)],
                vec![],
            )?;
            let product = emitter.call(
                "torch.ops.aten.mm.default",
                vec![tensor(&row), tensor(second)],
                vec![],
            )?;
            return emitter.call(
                "torch.ops.aten.squeeze.dims",
                vec![tensor(&product), Argument::Ints(vec![0])],
                vec![],
            );
        }
        (2, 2) => {
            return emitter.call(
                "torch.ops.aten.mm.default",
                vec![tensor(first), tensor(second)],
                vec![],
            );
        }
        _ => {}
    }
    if should_fold(emitter, first, second)? {
        return folded_matmul(emitter, first, second);
    }
    // The broadcast path: expand both to one batch, bmm, view back.
    let n = if dim1 > 1 { sizes1[dim1 - 2] } else { 1 };
    let m1 = sizes1[dim1 - 1];
    let batch1 = &sizes1[..dim1.saturating_sub(2)];
    let m2 = if dim2 > 1 {
        sizes2[dim2 - 2]
    } else {
        sizes2[0]
    };
    let p = if dim2 > 1 { sizes2[dim2 - 1] } else { 1 };
    let batch2 = &sizes2[..dim2.saturating_sub(2)];
    let output_batch = broadcast(batch1, batch2)?;
    let batch_product: i64 = output_batch.iter().product();
    let mut expand1 = output_batch.clone();
    expand1.extend([n, m1]);
    let expanded1 = emitter.call(
        "torch.ops.aten.expand.default",
        vec![tensor(first), Argument::Ints(expand1)],
        vec![],
    )?;
    let reshaped1 = reshape_to(emitter, &expanded1, vec![batch_product, n, m1])?;
    let vector_rhs = dim2 == 1;
    let mut expand2 = output_batch.clone();
    if vector_rhs {
        expand2.push(m2);
    } else {
        expand2.extend([m2, p]);
    }
    let expanded2 = emitter.call(
        "torch.ops.aten.expand.default",
        vec![tensor(second), Argument::Ints(expand2)],
        vec![],
    )?;
    let reshaped2 = if vector_rhs {
        emitter.call(
            "torch.ops.aten.unsqueeze.default",
            vec![tensor(&expanded2), Argument::Int(-1)],
            vec![],
        )?
    } else {
        reshape_to(emitter, &expanded2, vec![batch_product, m2, p])?
    };
    let mut output_shape = output_batch;
    if dim1 > 1 {
        output_shape.push(n);
    }
    if dim2 > 1 {
        output_shape.push(p);
    }
    let mut product = emitter.call(
        "torch.ops.aten.bmm.default",
        vec![tensor(&reshaped1), tensor(&reshaped2)],
        vec![],
    )?;
    if vector_rhs {
        product = emitter.call(
            "torch.ops.aten.squeeze.dims",
            vec![tensor(&product), Argument::Ints(vec![-1])],
            vec![],
        )?;
    }
    view(emitter, &product, output_shape)
}

/// `reshape` as its decomposition writes it: a `view` when the strides allow one, else a
/// contiguous `clone` and a `view`.
pub(crate) fn reshape_to(emitter: &mut Emitter, value: &str, sizes: Vec<i64>) -> Result<String> {
    let old_sizes = emitter.sizes(value)?;
    let old_strides = emitter.strides(value)?;
    let numel = old_sizes
        .iter()
        .try_fold(1i64, |total, &size| total.checked_mul(size))
        .ok_or_else(|| not_applicable(format!("value '{value}' has too many elements")))?;
    let resolved = super::views::infer_size(&sizes, numel)?;
    // ATen's `computeStride` decides between a view and a copy; ferrojit-tensor has it.
    let as_dims = |values: &[i64]| {
        values
            .iter()
            .map(|&value| usize::try_from(value).ok())
            .collect::<Option<Vec<usize>>>()
    };
    let viewable = match (
        as_dims(&old_sizes),
        as_dims(&old_strides),
        as_dims(&resolved),
    ) {
        (Some(old_sizes), Some(old_strides), Some(new_sizes)) => {
            ferrojit_tensor::shape::view_strides(&old_sizes, &old_strides, &new_sizes).is_some()
        }
        _ => {
            return Err(not_applicable(format!(
                "value '{value}' has a negative size or stride"
            )))
        }
    };
    if viewable {
        return view(emitter, value, sizes);
    }
    let copy = emitter.call(
        "torch.ops.aten.clone.default",
        vec![Argument::Tensor(value.into())],
        vec![(
            "memory_format",
            Argument::MemoryFormat(super::emitter::MEMORY_FORMAT_CONTIGUOUS),
        )],
    )?;
    view(emitter, &copy, sizes)
}

/// PyTorch's `baddbmm` decomposition: `bmm`, times alpha unless 1, plus beta * self unless
/// beta is 0.
fn baddbmm(emitter: &mut Emitter, original: &Original) -> Result<Vec<String>> {
    let input = original.tensor("self")?;
    let batch1 = original.tensor("batch1")?;
    let batch2 = original.tensor("batch2")?;
    let beta = original.arg_or("beta", Argument::Int(1));
    let alpha = original.arg_or("alpha", Argument::Int(1));
    let is_one = |a: &Argument| {
        matches!(a, Argument::Int(1)) || matches!(a, Argument::Float(v) if *v == 1.0)
    };
    let is_zero = |a: &Argument| {
        matches!(a, Argument::Int(0)) || matches!(a, Argument::Float(v) if *v == 0.0)
    };
    let mut result = emitter.call(
        "torch.ops.aten.bmm.default",
        vec![Argument::Tensor(batch1), Argument::Tensor(batch2)],
        vec![],
    )?;
    if !is_one(&alpha) {
        result = emitter.call(
            "torch.ops.aten.mul.Tensor",
            vec![Argument::Tensor(result), alpha],
            vec![],
        )?;
    }
    if is_zero(&beta) {
        return Ok(vec![result]);
    }
    let mut scaled = input;
    if !is_one(&beta) {
        scaled = emitter.call(
            "torch.ops.aten.mul.Tensor",
            vec![Argument::Tensor(scaled), beta],
            vec![],
        )?;
    }
    let out = emitter.call(
        "torch.ops.aten.add.Tensor",
        vec![Argument::Tensor(scaled), Argument::Tensor(result)],
        vec![],
    )?;
    Ok(vec![out])
}
