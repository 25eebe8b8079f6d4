//! `decompose_ops`, PyTorch's `DecomposeOps` (`_jit_pass_decompose_ops`, decompose_ops.cpp):
//! rewrites a few composite operators into simpler ones so that later passes (batched
//! matmul, fusers) can see through them.
//!
//! - `aten::addmm(self, mat1, mat2, beta, alpha)` whose `beta` and `alpha` are constants
//!   equal to 1 becomes `self + mat1.mm(mat2)`. Any other `beta` or `alpha` stays.
//! - `aten::batch_norm` and `aten::layer_norm` become their arithmetic (mean, inverse
//!   standard deviation, then weight and bias) only when the input's type names a device
//!   that is not the CPU (PyTorch decomposes them for GPU fusion only), and only when it is
//!   known statically whether the weight and the bias are present (a `Tensor` or a `None`
//!   constant; an `Optional[Tensor]` value leaves the node alone).
//!
//! Each decomposition is the graph TorchScript compiles from PyTorch's definition of it (the
//! texts below, with the source positions PyTorch's compiler records, `<string>:LINE:COL`),
//! copied in before the node. When anything was decomposed in the graph's own block, PyTorch
//! then runs input-shape propagation, constant propagation and dead code elimination; a
//! decomposition inside a nested block alone does not trigger them (PyTorch drops the nested
//! result), and neither does it here.
//!
//! Shape propagation is PyTorch's legacy `PropagateInputShapes`. Here only its rules for the
//! kinds of node a decomposition inserts, and for unary pointwise operators, are applied (see
//! [`refine_inserted_types`]); PyTorch's pass refines every other node of the graph too.

use ferrojit_ir::{
    parse_graph, AttributeValue, BlockId, Graph, InsertPoint, NodeId, Prim, TensorRefinement, Type,
    ValueId,
};
use ferrojit_runtime::IValue;
use std::collections::{HashMap, HashSet};

use crate::constant_insertion::constant_value;

/// `def addmm(self, mat1, mat2, beta: number = 1.0, alpha: number = 1.0): return self +
/// mat1.mm(mat2)`, as TorchScript compiles it.
const ADDMM_DECOMPOSITION: &str = "graph(%self.1 : Tensor,
      %mat1.1 : Tensor,
      %mat2.1 : Tensor,
      %beta : Scalar,
      %alpha : Scalar):
  %9 : int = prim::Constant[value=1]()
  %8 : Tensor = aten::mm(%mat1.1, %mat2.1) # <string>:3:24
  %10 : Tensor = aten::add(%self.1, %8, %9) # <string>:3:17
  return (%10)
";

/// Batch norm without weight and bias: the running statistics in eval mode (or the batch's,
/// updating the running ones, in training mode), broadcast over the channel dimension.
const BATCH_NORM_DECOMPOSITION: &str = "graph(%input.1 : Tensor,
      %running_mean.1 : Tensor?,
      %running_var.1 : Tensor?,
      %training.1 : bool,
      %momentum.1 : float,
      %eps.1 : float):
  %35 : int = prim::Constant[value=1]() # <string>:13:24
  %norm_mean : Tensor, %norm_var : Tensor = prim::If(%training.1) # <string>:6:10
    block0():
      %norm_mean.1 : Tensor, %norm_var.1 : Tensor = aten::batch_norm_update_stats(%input.1, %running_mean.1, %running_var.1, %momentum.1) # <string>:7:36
      -> (%norm_mean.1, %norm_var.1)
    block1():
      %norm_mean.3 : Tensor = aten::_unwrap_optional(%running_mean.1) # <string>:9:26
      %norm_var.3 : Tensor = aten::_unwrap_optional(%running_var.1) # <string>:10:25
      -> (%norm_mean.3, %norm_var.3)
  %29 : int = aten::dim(%input.1) # <string>:11:54
  %norm_mean.15 : Tensor = aten::_ncf_unsqueeze(%norm_mean, %29) # <string>:11:22
  %33 : int = aten::dim(%input.1) # <string>:12:52
  %norm_var.15 : Tensor = aten::_ncf_unsqueeze(%norm_var, %33) # <string>:12:21
  %39 : Tensor = aten::add(%norm_var.15, %eps.1, %35) # <string>:13:40
  %40 : Tensor = aten::sqrt(%39) # <string>:13:29
  %41 : Tensor = aten::reciprocal(%40) # <string>:13:9
  %norm_invstd.1 : Tensor = aten::mul(%41, %35) # <string>:13:9
  %46 : Tensor = aten::sub(%input.1, %norm_mean.15, %35) # <string>:14:19
  %48 : Tensor = aten::mul(%46, %norm_invstd.1) # <string>:14:19
  return (%48)
";

/// Layer norm without weight and bias: the statistics of each normalized slice, computed as
/// a batch norm's over the input viewed as `(1, n, -1)`.
const LAYER_NORM_DECOMPOSITION: &str = "graph(%input.1 : Tensor,
      %normalized_shape.1 : int[],
      %eps.1 : float,
      %cudnn_enable : bool):
  %23 : int = prim::Constant[value=0]()
  %14 : bool = prim::Constant[value=1]() # <string>:20:10
  %n.1 : int = prim::Constant[value=1]() # <string>:19:14
  %26 : int = prim::Constant[value=-1]() # <string>:22:57
  %input_ndim.1 : int = aten::dim(%input.1) # <string>:17:23
  %normalized_ndim.1 : int = aten::len(%normalized_shape.1) # <string>:18:28
  %11 : int = aten::sub(%input_ndim.1, %normalized_ndim.1) # <string>:20:25
  %n : int = prim::Loop(%11, %14, %n.1) # <string>:20:10
    block0(%i.1 : int, %n.11 : int):
      %19 : int = aten::size(%input.1, %i.1) # <string>:21:19
      %n.5 : int = aten::mul(%n.11, %19) # <string>:21:14
      -> (%14, %n.5)
  %24 : Tensor = aten::contiguous(%input.1, %23) # <string>:22:26
  %27 : int[] = prim::ListConstruct(%n.1, %n, %26)
  %input_reshape.1 : Tensor = aten::view(%24, %27) # <string>:22:26
  %mean.1 : Tensor, %invstd.1 : Tensor = aten::batch_norm_stats(%input_reshape.1, %eps.1) # <string>:23:25
  %input_shape.1 : int[] = aten::size(%input.1) # <string>:24:24
  %mean.5 : Tensor = aten::_ncf_view(%mean.1, %input_shape.1, %normalized_ndim.1) # <string>:25:17
  %invstd.5 : Tensor = aten::_ncf_view(%invstd.1, %input_shape.1, %normalized_ndim.1) # <string>:26:19
  %47 : Tensor = aten::sub(%input.1, %mean.5, %n.1) # <string>:28:18
  %49 : Tensor = aten::mul(%47, %invstd.5) # <string>:28:18
  return (%49)
";

/// Runs the pass on `graph`.
pub fn decompose_ops(graph: &mut Graph) -> Result<(), String> {
    let first_new_node = graph.node_capacity();
    let top = graph.top_block();
    let decomposed = decompose_in_block(graph, top)?;
    let top = graph.top_block();
    graph.set_insert_point(InsertPoint::EndOf(top));
    if decomposed {
        refine_inserted_types(graph, first_new_node);
        crate::constant_propagation::propagate_constants(graph)?;
        crate::dead_code_elimination::eliminate_dead_code_with_alias_db(graph)
            .map_err(|error| format!("decompose_ops: {error}"))?;
    }
    Ok(())
}

/// Decomposes the nodes of `block`; whether anything in `block` itself (not in its nested
/// blocks: PyTorch ignores their result) was decomposed.
fn decompose_in_block(graph: &mut Graph, block: BlockId) -> Result<bool, String> {
    let mut decomposed = false;
    for node in graph.block_nodes(block) {
        for nested in graph.node_blocks(node).to_vec() {
            decompose_in_block(graph, nested)?;
        }
        let kind = graph.kind(node).as_str().to_string();
        decomposed |= match kind.as_str() {
            "aten::addmm" => decompose_addmm(graph, node)?,
            "aten::batch_norm" => decompose_batch_norm(graph, node)?,
            "aten::layer_norm" => decompose_layer_norm(graph, node)?,
            _ => false,
        };
    }
    Ok(decomposed)
}

fn is_tensor(graph: &Graph, value: ValueId) -> bool {
    graph.value_type(value).is_tensor()
}

/// Whether `value` can be passed as `Tensor?`.
fn is_optional_tensor(graph: &Graph, value: ValueId) -> bool {
    match graph.value_type(value) {
        Type::NoneType => true,
        Type::Optional(element) => element.is_tensor(),
        other => other.is_tensor(),
    }
}

/// PyTorch's `mustBeNone`: a value that can only be None.
fn must_be_none(graph: &Graph, value: ValueId) -> bool {
    if graph.value_type(value) == &Type::NoneType {
        return true;
    }
    let Some(producer) = graph.producer(value) else {
        return false;
    };
    let kind = graph.kind(producer);
    kind.is("prim::AutogradZero")
        || (kind.is_prim(Prim::Constant)
            && graph.attribute(producer, "value").is_none()
            && matches!(graph.value_type(value), Type::Optional(_)))
}

/// PyTorch's `isDefined`: `Some(true)` for a tensor, `Some(false)` for a value that must be
/// None, `None` when it cannot be told statically.
fn is_defined(graph: &Graph, value: ValueId) -> Option<bool> {
    if is_tensor(graph, value) {
        Some(true)
    } else if must_be_none(graph, value) {
        Some(false)
    } else {
        None
    }
}

/// The addmm's `beta` or `alpha`, when it is a constant number equal to 1.
fn is_constant_one(graph: &Graph, value: ValueId) -> bool {
    match constant_value(graph, value) {
        Some(IValue::Int(number)) => number == 1,
        Some(IValue::Double(number)) => number == 1.0,
        _ => false,
    }
}

fn decompose_addmm(graph: &mut Graph, node: NodeId) -> Result<bool, String> {
    let inputs = graph.node_inputs(node).to_vec();
    let [this, mat1, mat2, beta, alpha] = inputs[..] else {
        return Ok(false);
    };
    if graph.node_outputs(node).len() != 1
        || ![this, mat1, mat2].iter().all(|&v| is_tensor(graph, v))
        || !is_constant_one(graph, beta)
        || !is_constant_one(graph, alpha)
    {
        return Ok(false);
    }
    graph.set_insert_point(InsertPoint::Before(node));
    let result = insert_decomposition(graph, ADDMM_DECOMPOSITION, &inputs)?;
    let output = graph.node_output(node, 0);
    // PyTorch keeps the addmm's output type on the add that replaces it.
    let output_type = graph.value_type(output).clone();
    graph.set_value_type(result, output_type);
    replace_node(graph, node, result);
    Ok(true)
}

/// PyTorch's `isDecomposableNorm`: the input's device is known and not the CPU, and whether
/// weight and bias are present is known.
fn is_decomposable_norm(graph: &Graph, input: ValueId, weight: ValueId, bias: ValueId) -> bool {
    let Type::RefinedTensor(refinement) = graph.value_type(input) else {
        return false;
    };
    match refinement.device.as_deref() {
        None | Some("cpu") => false,
        Some(_) => is_defined(graph, weight).is_some() && is_defined(graph, bias).is_some(),
    }
}

fn decompose_batch_norm(graph: &mut Graph, node: NodeId) -> Result<bool, String> {
    let inputs = graph.node_inputs(node).to_vec();
    let [input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn] =
        inputs[..]
    else {
        return Ok(false);
    };
    let schema_matches = is_tensor(graph, input)
        && [weight, bias, running_mean, running_var]
            .iter()
            .all(|&v| is_optional_tensor(graph, v))
        && graph.value_type(training) == &Type::Bool
        && graph.value_type(momentum) == &Type::Float
        && graph.value_type(eps) == &Type::Float
        && graph.value_type(cudnn) == &Type::Bool
        && graph.node_outputs(node).len() == 1;
    if !schema_matches || !is_decomposable_norm(graph, input, weight, bias) {
        return Ok(false);
    }
    graph.set_insert_point(InsertPoint::Before(node));
    let input_dim = graph.insert("aten::dim", &[input], &[Type::Int]);
    let input_dim = graph.node_output(input_dim, 0);
    let mut result = insert_decomposition(
        graph,
        BATCH_NORM_DECOMPOSITION,
        &[input, running_mean, running_var, training, momentum, eps],
    )?;
    if is_defined(graph, weight) == Some(true) {
        let expanded = insert_tensor_node(graph, "aten::_ncf_unsqueeze", &[weight, input_dim]);
        result = insert_tensor_node(graph, "aten::mul", &[result, expanded]);
    }
    if is_defined(graph, bias) == Some(true) {
        let expanded = insert_tensor_node(graph, "aten::_ncf_unsqueeze", &[bias, input_dim]);
        result = insert_add(graph, result, expanded);
    }
    replace_node(graph, node, result);
    Ok(true)
}

fn decompose_layer_norm(graph: &mut Graph, node: NodeId) -> Result<bool, String> {
    let inputs = graph.node_inputs(node).to_vec();
    let [input, normalized_shape, weight, bias, eps, cudnn] = inputs[..] else {
        return Ok(false);
    };
    let schema_matches = is_tensor(graph, input)
        && graph.value_type(normalized_shape) == &Type::List(Box::new(Type::Int))
        && is_optional_tensor(graph, weight)
        && is_optional_tensor(graph, bias)
        && graph.value_type(eps) == &Type::Float
        && graph.value_type(cudnn) == &Type::Bool
        && graph.node_outputs(node).len() == 1;
    if !schema_matches || !is_decomposable_norm(graph, input, weight, bias) {
        return Ok(false);
    }
    graph.set_insert_point(InsertPoint::Before(node));
    let mut result = insert_decomposition(
        graph,
        LAYER_NORM_DECOMPOSITION,
        &[input, normalized_shape, eps, cudnn],
    )?;
    if is_defined(graph, weight) == Some(true) {
        result = insert_tensor_node(graph, "aten::mul", &[result, weight]);
    }
    if is_defined(graph, bias) == Some(true) {
        result = insert_add(graph, result, bias);
    }
    replace_node(graph, node, result);
    Ok(true)
}

/// Copies the decomposition `text` in at the insertion point, its inputs bound to
/// `arguments`; its result.
fn insert_decomposition(
    graph: &mut Graph,
    text: &str,
    arguments: &[ValueId],
) -> Result<ValueId, String> {
    let decomposition = parse_graph(text)
        .map_err(|error| format!("decompose_ops: a decomposition does not parse: {error}"))?;
    let mut value_map: HashMap<ValueId, ValueId> = decomposition
        .inputs()
        .iter()
        .copied()
        .zip(arguments.iter().copied())
        .collect();
    let outputs = graph
        .copy_block_from(&decomposition, decomposition.top_block(), &mut value_map)
        .map_err(|error| format!("decompose_ops: cannot copy a decomposition: {error:?}"))?;
    outputs
        .first()
        .copied()
        .ok_or_else(|| "decompose_ops: a decomposition has no result".to_string())
}

fn insert_tensor_node(graph: &mut Graph, kind: &str, inputs: &[ValueId]) -> ValueId {
    let node = graph.insert(kind, inputs, &[Type::Tensor]);
    graph.node_output(node, 0)
}

/// `aten::add(a, b)` as PyTorch's `graph->insert` builds it: the default `alpha=1` becomes a
/// constant just before the add.
fn insert_add(graph: &mut Graph, a: ValueId, b: ValueId) -> ValueId {
    let one = graph.insert_constant(Some(AttributeValue::Int(1)), Type::Int);
    insert_tensor_node(graph, "aten::add", &[a, b, one])
}

fn replace_node(graph: &mut Graph, node: NodeId, replacement: ValueId) {
    let output = graph.node_output(node, 0);
    graph.replace_all_uses_with(output, replacement);
    graph.destroy_node(node);
}

/// The refinement of a tensor type, if it has one.
fn refinement(ty: &Type) -> Option<&TensorRefinement> {
    match ty {
        Type::RefinedTensor(refinement) => Some(refinement),
        _ => None,
    }
}

fn refined(refinement: TensorRefinement) -> Type {
    if refinement == TensorRefinement::default() {
        Type::Tensor
    } else {
        Type::RefinedTensor(Box::new(refinement))
    }
}

/// The rules of PyTorch's legacy shape propagation (`PropagateInputShapes`) for the kinds of
/// node the decompositions insert, applied in graph order to the top-level nodes created
/// since `first_new_node`:
///
/// - arithmetic with several tensor operands, one of which has no known dtype or rank
///   (always the case here: the statistics come from `_ncf_unsqueeze`/`_ncf_view`, whose
///   results are plain tensors): a tensor on the first operand's device, nothing else known;
/// - `contiguous`: the input's type, with contiguous strides when its sizes are known;
/// - `view` by a list of `k` sizes built in the graph: the input's dtype and device, rank `k`;
/// - `batch_norm_stats`: two vectors of the input's dtype (Float for Half) on its device.
///
/// Every other node keeps its type.
fn refine_inserted_types(graph: &mut Graph, first_new_node: usize) {
    let top = graph.top_block();
    // Values whose type a rule set: a node of the original graph that reads one is
    // refined too. PyTorch's propagation runs over the whole graph; here the other nodes of
    // the original graph are refined only by the unary rule, and keep their types otherwise.
    let mut refined_values: HashSet<ValueId> = HashSet::new();
    for node in graph.block_nodes(top) {
        let inputs = graph.node_inputs(node).to_vec();
        let is_new = node.index() >= first_new_node;
        let unary = UNARY_POINTWISE.contains(&graph.kind(node).as_str());
        if !is_new && !unary && !inputs.iter().any(|v| refined_values.contains(v)) {
            continue;
        }
        let before: Vec<Type> = graph
            .node_outputs(node)
            .iter()
            .map(|&v| graph.value_type(v).clone())
            .collect();
        refine_node_type(graph, node);
        for (index, old_type) in before.iter().enumerate() {
            let output = graph.node_output(node, index);
            if graph.value_type(output) != old_type {
                refined_values.insert(output);
            }
        }
    }
}

/// Unary pointwise operators: the result is a tensor like the input.
const UNARY_POINTWISE: &[&str] = &[
    "aten::relu",
    "aten::sigmoid",
    "aten::tanh",
    "aten::neg",
    "aten::abs",
    "aten::exp",
    "aten::log",
    "aten::sqrt",
    "aten::rsqrt",
    "aten::reciprocal",
];

/// One node's rule (see [`refine_inserted_types`]).
fn refine_node_type(graph: &mut Graph, node: NodeId) {
    {
        let inputs = graph.node_inputs(node).to_vec();
        let input_type = |index: usize| -> Option<Type> {
            inputs.get(index).map(|&v| graph.value_type(v).clone())
        };
        let kind = graph.kind(node).as_str().to_string();
        match kind.as_str() {
            "aten::add" | "aten::sub" | "aten::mul" | "aten::div" => {
                let tensor_types: Vec<Type> = inputs
                    .iter()
                    .map(|&v| graph.value_type(v).clone())
                    .filter(Type::is_tensor)
                    .collect();
                let unknown = |ty: &Type| {
                    refinement(ty).is_none_or(|r| r.scalar_type.is_none() || r.sizes.is_none())
                };
                if tensor_types.len() >= 2 && tensor_types.iter().any(unknown) {
                    let device = refinement(&tensor_types[0]).and_then(|r| r.device.clone());
                    let output = graph.node_output(node, 0);
                    graph.set_value_type(
                        output,
                        refined(TensorRefinement {
                            device,
                            ..TensorRefinement::default()
                        }),
                    );
                }
            }
            kind if UNARY_POINTWISE.contains(&kind) => {
                // An input not completely known (some size unknown) gives a result with the
                // same facts but strides (PyTorch's unary formula keeps the dtype, rank and
                // device); a complete input is left to the type the node has.
                if let Some(Type::RefinedTensor(input)) = input_type(0) {
                    let complete = input
                        .sizes
                        .as_ref()
                        .is_some_and(|sizes| sizes.iter().all(Option::is_some));
                    if !complete {
                        let output = graph.node_output(node, 0);
                        graph.set_value_type(
                            output,
                            refined(TensorRefinement {
                                strides: None,
                                ..(*input).clone()
                            }),
                        );
                    }
                }
            }
            "aten::contiguous" => {
                if let Some(Type::RefinedTensor(input)) = input_type(0) {
                    let mut output_type = (*input).clone();
                    output_type.strides = output_type
                        .sizes
                        .as_ref()
                        .and_then(|sizes| contiguous_strides(sizes));
                    let output = graph.node_output(node, 0);
                    graph.set_value_type(output, refined(output_type));
                }
            }
            "aten::view" => {
                let Some(Type::RefinedTensor(input)) = input_type(0) else {
                    return;
                };
                let Some(rank) = inputs
                    .get(1)
                    .and_then(|&list| graph.producer(list))
                    .filter(|&producer| graph.kind(producer).is("prim::ListConstruct"))
                    .map(|producer| graph.node_inputs(producer).len())
                else {
                    return;
                };
                let output = graph.node_output(node, 0);
                graph.set_value_type(
                    output,
                    refined(TensorRefinement {
                        scalar_type: input.scalar_type.clone(),
                        sizes: Some(vec![None; rank]),
                        device: input.device.clone(),
                        ..TensorRefinement::default()
                    }),
                );
            }
            "aten::batch_norm_stats" => {
                let Some(Type::RefinedTensor(input)) = input_type(0) else {
                    return;
                };
                // Half statistics are accumulated, and typed, as Float.
                let scalar_type = match input.scalar_type.as_deref() {
                    Some("Half") => Some("Float".to_string()),
                    other => other.map(str::to_string),
                };
                let statistics = refined(TensorRefinement {
                    scalar_type,
                    sizes: Some(vec![None]),
                    device: input.device.clone(),
                    ..TensorRefinement::default()
                });
                for output in graph.node_outputs(node).to_vec() {
                    graph.set_value_type(output, statistics.clone());
                }
            }
            _ => {}
        }
    }
}

/// The strides of a contiguous tensor of `sizes`, when every size is known.
fn contiguous_strides(sizes: &[Option<i64>]) -> Option<Vec<Option<i64>>> {
    let mut strides = vec![None; sizes.len()];
    let mut stride = 1i64;
    for (index, size) in sizes.iter().enumerate().rev() {
        strides[index] = Some(stride);
        stride = stride.checked_mul((*size)?.max(1))?;
    }
    Some(strides)
}
