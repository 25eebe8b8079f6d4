//! Removal of implicit expands, PyTorch's `RemoveExpands` (`_jit_pass_remove_expands`): an
//! `aten::expand` whose `implicit` argument is the constant `True` was inserted by broadcasting
//! and is redundant for operators that broadcast themselves, so its uses read the unexpanded
//! tensor and the node goes. An expand with `implicit=False`, or a non-constant flag, stays.

use ferrojit_ir::{AttributeValue, Graph, NodeId, Prim, Type};

/// Whether `node` is `aten::expand(self, size, implicit)` with `implicit` the constant True.
fn is_implicit_expand(graph: &Graph, node: NodeId) -> bool {
    if !graph.kind(node).is("aten::expand") {
        return false;
    }
    let Some(&implicit) = graph.node_inputs(node).get(2) else {
        return false;
    };
    let Some(producer) = graph.producer(implicit) else {
        return false;
    };
    graph.kind(producer).is_prim(Prim::Constant)
        && graph.value_type(implicit) == &Type::Bool
        && matches!(
            graph.attribute(producer, "value"),
            Some(AttributeValue::Int(1))
        )
}

/// Removes every implicit `aten::expand`, in blocks too.
pub fn remove_expands(graph: &mut Graph) {
    for node in graph.all_nodes() {
        if !is_implicit_expand(graph, node) {
            continue;
        }
        let (Some(&expanded), Some(&original)) = (
            graph.node_outputs(node).first(),
            graph.node_inputs(node).first(),
        ) else {
            continue;
        };
        graph.replace_all_uses_with(expanded, original);
        let destroyed = graph.destroy_node(node);
        debug_assert!(
            destroyed,
            "an expand whose uses were all replaced has none left"
        );
    }
}
