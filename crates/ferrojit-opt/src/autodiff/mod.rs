//! The JIT's symbolic autodiff (PyTorch's `create_autodiff_subgraphs` and `differentiate`):
//! which operators have a symbolic gradient here, the pass that groups them into
//! `prim::DifferentiableGraph` nodes, and the differentiation of one such subgraph into a
//! forward graph (with saved values) and a backward graph.
//!
//! * [`create_autodiff_subgraphs`]: the grouping pass;
//! * [`differentiate`]: the forward and backward graphs of a group's subgraph.

pub mod create_autodiff_subgraphs;
pub mod differentiate;

use ferrojit_ir::{Graph, NodeId, Type};

/// The node kind a group becomes.
pub const DIFFERENTIABLE_GRAPH: &str = "prim::DifferentiableGraph";

/// The operators with a symbolic gradient here, each with the numbers of inputs its
/// differentiated overloads take. Each is also differentiable in PyTorch's autodiff (checked
/// against `torch._C._jit_pass_create_autodiff_subgraphs` by the pass fixtures); PyTorch
/// differentiates more (softmax, pow, unsqueeze, ...), which stay outside groups here.
/// PyTorch leaves `sum`, `view` and `reshape` to the runtime autograd too.
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
        let Ok(gradient) = differentiate::differentiate(subgraph) else {
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
