//! The JIT's symbolic autodiff (PyTorch's `create_autodiff_subgraphs` and `differentiate`):
//! which operators have a symbolic gradient here, the pass that groups them into
//! `prim::DifferentiableGraph` nodes, and the differentiation of one such subgraph into a
//! forward graph (with saved values) and a backward graph.
//!
//! * [`create_autodiff_subgraphs`]: the grouping pass;
//! * [`differentiate`]: the forward and backward graphs of a group's subgraph.

pub mod create_autodiff_subgraphs;
pub mod differentiate;

use ferrojit_ir::{Graph, NodeId, Type, ValueId};

/// The node kind a group becomes.
pub const DIFFERENTIABLE_GRAPH: &str = "prim::DifferentiableGraph";

/// The operators with a symbolic gradient here, each with the numbers of inputs its
/// differentiated overloads take. Each is also differentiable in PyTorch's autodiff (checked
/// against `torch._C._jit_pass_create_autodiff_subgraphs` by the pass fixtures); PyTorch
/// differentiates more (softmax, pow, unsqueeze, ...), which stay outside groups here.
/// PyTorch leaves `sum`, `view` and `reshape` to the runtime autograd too. The operators
/// that take or make lists of tensors (`chunk`, `cat`) are grouped in pairs by the graph
/// executor only, see [`is_differentiable_with_lists`].
pub const SYMBOLIC_OPERATORS: &[(&str, &[usize])] = &[
    ("aten::add", &[3]),
    ("aten::sub", &[3]),
    ("aten::mul", &[2]),
    ("aten::div", &[2]),
    ("aten::neg", &[1]),
    ("aten::matmul", &[2]),
    ("aten::mm", &[2]),
    ("aten::addmm", &[5]),
    ("aten::linear", &[3]),
    ("aten::relu", &[1]),
    ("aten::sigmoid", &[1]),
    ("aten::tanh", &[1]),
    ("aten::exp", &[1]),
    ("aten::log", &[1]),
    ("aten::mean", &[2, 4]),
    ("aten::t", &[1]),
];

/// Whether `node` has a symbolic gradient: an operator of [`SYMBOLIC_OPERATORS`] with one of
/// its input counts, a tensor first input, tensor outputs, and no input typed `Scalar`
/// (PyTorch's formulas take only floating-point or integer scalars; a `Number` input falls
/// back to the runtime autograd there too). Tensor-valued overloads only: `aten::add` on two
/// ints is not one.
pub fn is_differentiable(graph: &Graph, node: NodeId) -> bool {
    let kind = graph.kind(node).as_str();
    let Some((_, arities)) = SYMBOLIC_OPERATORS.iter().find(|(name, _)| *name == kind) else {
        return false;
    };
    let inputs = graph.node_inputs(node);
    if !arities.contains(&inputs.len()) || !graph.node_blocks(node).is_empty() {
        return false;
    }
    let first_is_tensor = inputs
        .first()
        .is_some_and(|&input| graph.value_type(input).is_tensor());
    let no_number_input = inputs
        .iter()
        .all(|&input| !matches!(graph.value_type(input), Type::Number));
    let outputs = graph.node_outputs(node);
    let tensor_outputs = !outputs.is_empty()
        && outputs
            .iter()
            .all(|&output| graph.value_type(output).is_tensor());
    first_is_tensor && no_number_input && tensor_outputs
}

/// [`is_differentiable`], and also the operators that pass tensors through lists, in pairs
/// (see [`list_pair_is_differentiable`]): what the graph executor groups. PyTorch's
/// `create_autodiff_subgraphs` pass alone leaves `aten::chunk` out, but its executor first
/// turns `chunk` with its `prim::ListUnpack` into `prim::ConstantChunk`, which it groups,
/// and groups `cat` of a `prim::ListConstruct` (see its plans in tests/fixtures/diffgraph).
pub fn is_differentiable_with_lists(graph: &Graph, node: NodeId) -> bool {
    list_pair_is_differentiable(graph, node).unwrap_or_else(|| is_differentiable(graph, node))
}

/// The operators whose tensors pass through a list, differentiated as a pair with the node
/// on the list's other side: `chunk`/`unsafe_chunk` taken apart by a `prim::ListUnpack`
/// (PyTorch's fuser makes the pair one `prim::ConstantChunk`, which its autodiff
/// differentiates), and `cat` of a list a `prim::ListConstruct` builds (PyTorch's symbolic
/// script for `cat`). Each side is differentiable only when the list has that one use and
/// holds tensors, so a group holds both sides or neither is differentiated symbolically.
/// `None` for other nodes.
fn list_pair_is_differentiable(graph: &Graph, node: NodeId) -> Option<bool> {
    let kind = graph.kind(node).as_str();
    let single_use_by = |value: ValueId, user_kind: &str| {
        let uses = graph.value_uses(value);
        uses.len() == 1 && graph.kind(uses[0].node).as_str() == user_kind
    };
    let is_tensor_list = |value: ValueId| matches!(graph.value_type(value), Type::List(element) if element.is_tensor());
    let all_tensors = |values: &[ValueId]| {
        values
            .iter()
            .all(|&value| graph.value_type(value).is_tensor())
    };
    let inputs = graph.node_inputs(node);
    let outputs = graph.node_outputs(node);
    let chunk_is_differentiable = |chunk: NodeId| {
        let inputs = graph.node_inputs(chunk);
        let outputs = graph.node_outputs(chunk);
        inputs.len() == 3
            && graph.value_type(inputs[0]).is_tensor()
            && matches!(graph.value_type(inputs[1]), Type::Int)
            && matches!(graph.value_type(inputs[2]), Type::Int)
            && outputs.len() == 1
            && is_tensor_list(outputs[0])
            && single_use_by(outputs[0], "prim::ListUnpack")
    };
    match kind {
        "aten::chunk" | "aten::unsafe_chunk" => Some(chunk_is_differentiable(node)),
        "prim::ListUnpack" => Some(
            inputs.len() == 1
                && all_tensors(outputs)
                && graph.producer(inputs[0]).is_some_and(|producer| {
                    matches!(
                        graph.kind(producer).as_str(),
                        "aten::chunk" | "aten::unsafe_chunk"
                    ) && chunk_is_differentiable(producer)
                }),
        ),
        "aten::cat" => Some(
            inputs.len() == 2
                && matches!(graph.value_type(inputs[1]), Type::Int)
                && outputs.len() == 1
                && graph.value_type(outputs[0]).is_tensor()
                && graph.producer(inputs[0]).is_some_and(|producer| {
                    graph.kind(producer).as_str() == "prim::ListConstruct"
                        && all_tensors(graph.node_inputs(producer))
                        && single_use_by(inputs[0], "aten::cat")
                }),
        ),
        "prim::ListConstruct" => Some(
            outputs.len() == 1
                && is_tensor_list(outputs[0])
                && all_tensors(inputs)
                && single_use_by(outputs[0], "aten::cat"),
        ),
        _ => None,
    }
}

/// Whether the graph executor builds differentiable graphs for calls with inputs that
/// require grad: false when the environment variable `FERROJIT_AUTODIFF` is `off` (or `0`,
/// `false`) when first asked.
pub fn autodiff_enabled_by_default() -> bool {
    static ENABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ENABLED.get_or_init(|| {
        !std::env::var("FERROJIT_AUTODIFF").is_ok_and(|value| {
            matches!(
                value.trim().to_ascii_lowercase().as_str(),
                "off" | "0" | "false"
            )
        })
    })
}

/// Operators whose output requires grad only when their first input does (views and
/// reshapes of it): a group input made by one of them from a tensor that certainly requires
/// no grad needs no gradient either (`xs[t]` of an input that does not require grad).
const GRADIENT_FOLLOWS_FIRST_INPUT: &[&str] = &[
    "aten::select",
    "aten::slice",
    "aten::narrow",
    "aten::view",
    "aten::reshape",
    "aten::flatten",
    "aten::unsqueeze",
    "aten::squeeze",
    "aten::transpose",
    "aten::t",
    "aten::contiguous",
];

/// Whether tensor `value` of the plan certainly does not require grad: its type says so (a
/// plan's input types come from the call's spec, which the executor checks before running
/// the plan), or a view-like operator of [`GRADIENT_FOLLOWS_FIRST_INPUT`] made it from such
/// a tensor. Anything else (parameters read by `prim::GetAttr`, loop-carried values) may.
fn certainly_requires_no_grad(graph: &Graph, value: ValueId) -> bool {
    let mut value = value;
    loop {
        if let Type::RefinedTensor(refinement) = graph.value_type(value) {
            if refinement.requires_grad == Some(false) {
                return true;
            }
        }
        let Some(producer) = graph.producer(value) else {
            return false;
        };
        if !GRADIENT_FOLLOWS_FIRST_INPUT.contains(&graph.kind(producer).as_str()) {
            return false;
        }
        match graph.node_inputs(producer).first() {
            Some(&first) => value = first,
            None => return false,
        }
    }
}

/// Attaches a symbolic gradient (the `forward` and `backward` graph attributes the
/// interpreter reads) to every `prim::DifferentiableGraph` node of `graph` whose subgraph
/// [`differentiate::differentiate`] takes. A group it refuses keeps only its subgraph and
/// records a backward node per operator at run time. Returns how many it attached.
pub fn attach_gradients(graph: &mut Graph) -> usize {
    use ferrojit_ir::AttributeValue;
    use ferrojit_runtime::interpreter::differentiable_graph::{
        BACKWARD_ATTRIBUTE, FORWARD_ATTRIBUTE,
    };
    let mut attached = 0;
    for node in graph.all_nodes() {
        if graph.kind(node).as_str() != DIFFERENTIABLE_GRAPH {
            continue;
        }
        let Some(AttributeValue::Graph(subgraph)) = graph.attribute(node, "Subgraph") else {
            continue;
        };
        let needs_gradient: Vec<bool> = graph
            .node_inputs(node)
            .iter()
            .map(|&input| !certainly_requires_no_grad(graph, input))
            .collect();
        let Ok(gradient) = differentiate::differentiate_for(subgraph, &needs_gradient) else {
            continue;
        };
        graph.set_attribute(
            node,
            FORWARD_ATTRIBUTE,
            AttributeValue::Graph(Box::new(gradient.forward)),
        );
        graph.set_attribute(
            node,
            BACKWARD_ATTRIBUTE,
            AttributeValue::Graph(Box::new(gradient.backward)),
        );
        attached += 1;
    }
    attached
}
