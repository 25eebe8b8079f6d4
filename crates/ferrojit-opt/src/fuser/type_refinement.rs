//! The type facts a plan's graph needs before fusing: the fuser only fuses tensors whose
//! dtype and sizes are known, and a plan's first shape propagation ran before loop unrolling
//! and leaves two gaps this file fills.
//!
//! * A tensor constant (a frozen weight) is typed as plain `Tensor` in a loaded archive; its
//!   value gives its complete type.
//! * `aten::chunk` returns a list, so the tensors `prim::ListUnpack` takes out of it have no
//!   sizes, and nothing after them does either. Their sizes follow from the chunked tensor's
//!   (PyTorch's fuser turns this pair into `prim::ConstantChunk` for the same reason).
//!
//! * `aten::reshape` has no shape function, and `ferrojit::linear_epilogue` (made after the
//!   first propagation) none either, so everything after them is untyped: the encoder's
//!   second layer. Their sizes follow from their inputs ([`type_reshapes_and_epilogues`]).
//!   Once they are typed, the `aten::size` calls on them are facts, so the peephole and
//!   constant propagation run again to fold them (the view sizes a layer computes from its
//!   input's sizes become constant lists, which shape propagation can read).
//!
//! Shape and dtype propagation then runs again, until the unpacked chunks stop gaining
//! types (each round can type the chunks of the next unrolled iteration).

use ferrojit_ir::{AttributeValue, Graph, NodeId, Prim, TensorRefinement, Type};

use super::fusible_ops::{complete_tensor_type, is_constant};

/// The most rounds of propagation; an LSTM unrolled 64 times needs 64.
const MAX_ROUNDS: usize = 64;

/// Gives tensor constants their values' complete types, then alternates shape and dtype
/// propagation with typing unpacked chunks until nothing changes. The caller has checked
/// that no tensor's geometry changes in place. `Err` leaves `graph` as it was.
pub fn refine_types_for_fusion(graph: &mut Graph) -> Result<(), String> {
    let mut typed = graph.clone();
    type_tensor_constants(&mut typed);
    for _ in 0..MAX_ROUNDS {
        crate::propagate_shapes_and_dtypes(&mut typed)?;
        let dtypes_filled = fill_kept_dtypes(&mut typed);
        let shapes_filled = type_reshapes_and_epilogues(&mut typed);
        if shapes_filled || dtypes_filled {
            // Newly typed tensors make their `aten::size` calls foldable (a layer norm's
            // output gets its sizes from propagation and its dtype here).
            crate::run_pass("peephole", &mut typed)?;
            crate::run_pass("constant_propagation", &mut typed)?;
        }
        if !type_unpacked_chunks(&mut typed) && !dtypes_filled && !shapes_filled {
            break;
        }
    }
    *graph = typed;
    Ok(())
}

/// Types each `prim::Constant` tensor typed plain `Tensor` from its value.
fn type_tensor_constants(graph: &mut Graph) {
    for node in graph.all_nodes() {
        if !graph.kind(node).is_prim(Prim::Constant) {
            continue;
        }
        let [output] = graph.node_outputs(node)[..] else {
            continue;
        };
        if *graph.value_type(output) != Type::Tensor {
            continue;
        }
        let Some(AttributeValue::Tensor(tensor)) = graph.attribute(node, "value") else {
            continue;
        };
        let refinement = TensorRefinement {
            scalar_type: Some(tensor.dtype().scalar_type_name().to_string()),
            sizes: Some(
                tensor
                    .sizes()
                    .iter()
                    .map(|&size| Some(size as i64))
                    .collect(),
            ),
            strides: Some(
                tensor
                    .strides()
                    .iter()
                    .map(|&stride| Some(stride as i64))
                    .collect(),
            ),
            requires_grad: Some(false),
            device: Some("cpu".to_string()),
            undefined: None,
        };
        graph.set_value_type(output, Type::RefinedTensor(Box::new(refinement)));
    }
}

/// Operators whose tensor output has the dtype of their tensor inputs when those all share
/// one floating dtype (views, matrix products, and the fusible arithmetic).
const DTYPE_KEEPING_OPERATORS: &[&str] = &[
    "aten::select",
    "aten::t",
    "aten::transpose",
    "aten::view",
    "aten::reshape",
    "aten::permute",
    "aten::contiguous",
    "aten::mm",
    "aten::matmul",
    "aten::add",
    "aten::sub",
    "aten::mul",
    "aten::div",
    "aten::neg",
    "aten::relu",
    "aten::sigmoid",
    "aten::tanh",
    "aten::exp",
    "aten::log",
    "aten::sqrt",
    "aten::rsqrt",
    "aten::abs",
    "aten::reciprocal",
    "aten::gelu",
    "aten::silu",
    "aten::erf",
    // Input, weight and bias of one floating dtype give that dtype (the check below); the
    // encoder's second layer hangs off a layer norm whose output had sizes but no dtype.
    "aten::layer_norm",
    // Their dtype argument is checked to be None below.
    "aten::softmax",
    "aten::log_softmax",
];

/// Gives a dtype to the single tensor output of a [`DTYPE_KEEPING_OPERATORS`] node that has
/// sizes but no dtype, when every tensor input has the same floating dtype (dtype
/// propagation leaves some of these untyped after loop unrolling). Returns whether any
/// output gained one.
fn fill_kept_dtypes(graph: &mut Graph) -> bool {
    let mut changed = false;
    for node in graph.all_nodes() {
        if !DTYPE_KEEPING_OPERATORS.contains(&graph.kind(node).as_str()) {
            continue;
        }
        let [output] = graph.node_outputs(node)[..] else {
            continue;
        };
        let Type::RefinedTensor(refinement) = graph.value_type(output) else {
            continue;
        };
        if refinement.scalar_type.is_some() {
            continue;
        }
        // softmax(x, dim, dtype) keeps x's dtype only when dtype is None.
        if matches!(
            graph.kind(node).as_str(),
            "aten::softmax" | "aten::log_softmax"
        ) && graph
            .node_inputs(node)
            .get(2)
            .is_none_or(|&dtype| *graph.value_type(dtype) != Type::NoneType)
        {
            continue;
        }
        let mut dtypes = graph
            .node_inputs(node)
            .iter()
            .filter(|&&input| graph.value_type(input).is_tensor())
            .map(|&input| match graph.value_type(input) {
                Type::RefinedTensor(input_type) => input_type.scalar_type.clone(),
                _ => None,
            });
        let Some(Some(first)) = dtypes.next() else {
            continue;
        };
        if !matches!(first.as_str(), "Float" | "Double")
            || !dtypes.all(|dtype| dtype.as_deref() == Some(first.as_str()))
        {
            continue;
        }
        let mut refined = (**refinement).clone();
        refined.scalar_type = Some(first);
        graph.set_value_type(output, Type::RefinedTensor(Box::new(refined)));
        changed = true;
    }
    changed
}

/// Whether `ty` is a tensor type without known sizes (which this file may fill).
fn lacks_sizes(ty: &Type) -> bool {
    match ty {
        Type::Tensor => true,
        Type::RefinedTensor(refinement) => refinement
            .sizes
            .as_ref()
            .is_none_or(|sizes| sizes.iter().any(Option::is_none)),
        _ => false,
    }
}

/// A contiguous-size tensor type (strides left unknown) of `dtype` and `sizes`.
fn sized_tensor_type(like: &TensorRefinement, sizes: Vec<i64>) -> Type {
    Type::RefinedTensor(Box::new(TensorRefinement {
        scalar_type: like.scalar_type.clone(),
        sizes: Some(sizes.into_iter().map(Some).collect()),
        strides: None,
        requires_grad: like.requires_grad,
        device: like.device.clone(),
        undefined: None,
    }))
}

/// The constant int list `value` holds, if a `prim::Constant` makes it.
fn constant_int_list(graph: &Graph, value: ferrojit_ir::ValueId) -> Option<Vec<i64>> {
    if !is_constant(graph, value) {
        return None;
    }
    match graph.attribute(graph.producer(value)?, "value") {
        Some(AttributeValue::Ints(numbers)) => Some(numbers.clone()),
        _ => None,
    }
}

/// `aten::reshape`'s output sizes: `shape` with a -1 resolved against `numel`; `None` when
/// it does not describe `numel` elements.
fn reshape_sizes(numel: i64, shape: &[i64]) -> Option<Vec<i64>> {
    let inferred: Vec<usize> = (0..shape.len()).filter(|&i| shape[i] == -1).collect();
    let known: i64 = shape.iter().filter(|&&size| size != -1).product();
    if shape.iter().any(|&size| size < -1) || inferred.len() > 1 {
        return None;
    }
    let mut sizes = shape.to_vec();
    if let [index] = inferred[..] {
        if known == 0 || numel % known != 0 {
            return None;
        }
        sizes[index] = numel / known;
    } else if known != numel {
        return None;
    }
    Some(sizes)
}

/// Types the outputs of `aten::reshape(t, constant shape)` and of
/// `ferrojit::linear_epilogue(input, weight, ...)` (the input's sizes with the last one
/// replaced by the weight's rows, as `aten::linear`) when their tensor inputs have complete
/// types and the output has no sizes. Returns whether any output gained a type.
fn type_reshapes_and_epilogues(graph: &mut Graph) -> bool {
    let mut changed = false;
    for node in graph.all_nodes() {
        let kind = graph.kind(node).as_str();
        if kind != "aten::reshape" && kind != "ferrojit::linear_epilogue" {
            continue;
        }
        let [output] = graph.node_outputs(node)[..] else {
            continue;
        };
        if !lacks_sizes(graph.value_type(output)) {
            continue;
        }
        let inputs = graph.node_inputs(node).to_vec();
        let Some(input) = inputs
            .first()
            .and_then(|&input| complete_tensor_type(graph.value_type(input)))
        else {
            continue;
        };
        let input_sizes: Vec<i64> = input
            .sizes
            .as_ref()
            .map(|sizes| sizes.iter().map(|size| size.unwrap_or(0)).collect())
            .unwrap_or_default();
        let sizes = if kind == "aten::reshape" {
            let Some(shape) = inputs
                .get(1)
                .and_then(|&list| constant_int_list(graph, list))
            else {
                continue;
            };
            match reshape_sizes(input_sizes.iter().product(), &shape) {
                Some(sizes) => sizes,
                None => continue,
            }
        } else {
            let Some(weight) = inputs
                .get(1)
                .and_then(|&weight| complete_tensor_type(graph.value_type(weight)))
            else {
                continue;
            };
            let weight_sizes: Vec<i64> = weight
                .sizes
                .as_ref()
                .map(|sizes| sizes.iter().map(|size| size.unwrap_or(0)).collect())
                .unwrap_or_default();
            let (Some(&rows), Some(_)) = (weight_sizes.first(), input_sizes.last()) else {
                continue;
            };
            if weight_sizes.len() != 2 || weight_sizes[1] != *input_sizes.last().unwrap_or(&-1) {
                continue;
            }
            let mut sizes = input_sizes.clone();
            if let Some(last) = sizes.last_mut() {
                *last = rows;
            }
            sizes
        };
        let ty = sized_tensor_type(input, sizes);
        graph.set_value_type(output, ty);
        changed = true;
    }
    changed
}

/// The constant int `value` holds, if a `prim::Constant` makes it.
fn constant_int(graph: &Graph, value: ferrojit_ir::ValueId) -> Option<i64> {
    if !is_constant(graph, value) || *graph.value_type(value) != Type::Int {
        return None;
    }
    match graph.attribute(graph.producer(value)?, "value") {
        Some(AttributeValue::Int(number)) => Some(*number),
        _ => None,
    }
}

/// Types the outputs of each `prim::ListUnpack` of an `aten::chunk(t, chunks, dim)` with
/// constant `chunks` and `dim`, when `t`'s sizes are known and the chunk makes exactly as
/// many parts as the unpack takes. Returns whether any output gained a type.
fn type_unpacked_chunks(graph: &mut Graph) -> bool {
    let mut changed = false;
    for node in graph.all_nodes() {
        if !graph.kind(node).is_prim(Prim::ListUnpack) {
            continue;
        }
        let Some(parts) = chunk_part_types(graph, node) else {
            continue;
        };
        for (output, part) in graph.node_outputs(node).to_vec().into_iter().zip(parts) {
            if *graph.value_type(output) == Type::Tensor {
                graph.set_value_type(output, part);
                changed = true;
            }
        }
    }
    changed
}

/// The types of the parts the `prim::ListUnpack` `unpack` takes from an `aten::chunk`.
fn chunk_part_types(graph: &Graph, unpack: NodeId) -> Option<Vec<Type>> {
    let list = *graph.node_inputs(unpack).first()?;
    let chunk = graph.producer(list)?;
    if graph.kind(chunk).as_str() != "aten::chunk" || graph.value_uses(list).len() != 1 {
        return None;
    }
    let [tensor, chunks, dim] = graph.node_inputs(chunk)[..] else {
        return None;
    };
    let refinement = complete_tensor_type(graph.value_type(tensor))?;
    let sizes: Vec<i64> = refinement
        .sizes
        .as_ref()?
        .iter()
        .map(|s| s.unwrap_or(0))
        .collect();
    let chunks = constant_int(graph, chunks)?;
    let rank = sizes.len() as i64;
    let dim = constant_int(graph, dim)?;
    let dim = if dim < 0 { dim + rank } else { dim };
    if chunks <= 0 || !(0..rank).contains(&dim) {
        return None;
    }
    let length = sizes[dim as usize];
    // torch.chunk: parts of ceil(length / chunks), the last one shorter.
    let part = (length + chunks - 1) / chunks;
    let count = if part == 0 {
        1
    } else {
        (length + part - 1) / part
    };
    if count != graph.node_outputs(unpack).len() as i64 {
        return None;
    }
    Some(
        (0..count)
            .map(|index| {
                let mut part_sizes = sizes.clone();
                part_sizes[dim as usize] = part.min(length - index * part);
                Type::RefinedTensor(Box::new(TensorRefinement {
                    scalar_type: refinement.scalar_type.clone(),
                    sizes: Some(part_sizes.into_iter().map(Some).collect()),
                    strides: None,
                    requires_grad: refinement.requires_grad,
                    device: refinement.device.clone(),
                    undefined: None,
                }))
            })
            .collect(),
    )
}
