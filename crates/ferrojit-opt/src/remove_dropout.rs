//! Removal of inactive dropout, PyTorch's `removeDropout` (`_jit_pass_remove_dropout`): an
//! `aten::dropout`, `dropout_`, `feature_dropout` or `feature_dropout_` whose `train`
//! argument is the constant False is the identity, so its uses read its input and the node
//! goes. A dropout whose `train` is True, or not a constant (a module's `self.training`
//! before freezing), stays.

use ferrojit_ir::{AttributeValue, Graph, NodeId, Prim, Type};

const DROPOUT_KINDS: &[&str] = &[
    "aten::dropout",
    "aten::dropout_",
    "aten::feature_dropout",
    "aten::feature_dropout_",
];

/// Whether `node` is one of the dropouts with `train` (its third input) the constant False.
fn is_removable_dropout(graph: &Graph, node: NodeId) -> bool {
    if !DROPOUT_KINDS.contains(&graph.kind(node).as_str()) {
        return false;
    }
    let inputs = graph.node_inputs(node);
    let [_, _, train] = inputs[..] else {
        return false;
    };
    let Some(producer) = graph.producer(train) else {
        return false;
    };
    graph.kind(producer).is_prim(Prim::Constant)
        && graph.value_type(train) == &Type::Bool
        && matches!(
            graph.attribute(producer, "value"),
            Some(AttributeValue::Int(0))
        )
}

/// Removes every inactive dropout, in blocks too.
pub fn remove_dropout(graph: &mut Graph) {
    for node in graph.all_nodes() {
        if !is_removable_dropout(graph, node) {
            continue;
        }
        let (Some(&output), Some(&input)) = (
            graph.node_outputs(node).first(),
            graph.node_inputs(node).first(),
        ) else {
            continue;
        };
        graph.replace_all_uses_with(output, input);
        let destroyed = graph.destroy_node(node);
        debug_assert!(
            destroyed,
            "a dropout whose uses were all replaced has none left"
        );
    }
}
