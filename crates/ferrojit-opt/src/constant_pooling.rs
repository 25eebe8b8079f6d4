//! Constant pooling, PyTorch's `ConstantPooling` (`_jit_pass_constant_pooling`): equal
//! constants are merged into one, and every constant moves to the start of the graph, each
//! before the ones met earlier, as PyTorch's pass leaves them.
//!
//! Tensor and generator constants are objects with an identity and are not merged: two equal
//! generators advance separately, and PyTorch merges equal tensor constants only when alias
//! analysis proves nothing writes either (not done here yet). Generator constants keep their
//! order, because the printer names them and a reversed order would change the saved code from
//! one save to the next.

use std::collections::HashMap;

use ferrojit_ir::{Graph, NodeId, Prim, ValueId};

/// Merges equal constants and moves each to the start of the graph (see the module comment).
pub fn pool_constants(graph: &mut Graph) {
    let mut pooled: HashMap<String, ValueId> = HashMap::new();
    let mut last_generator: Option<NodeId> = None;
    let top = graph.top_block();
    for node in graph.all_nodes() {
        if !graph.kind(node).is_prim(Prim::Constant) {
            continue;
        }
        let output = graph.node_output(node, 0);
        let ty = graph.value_type(output).clone();
        let attribute = graph.attribute(node, "value");
        let is_generator = ty == ferrojit_ir::Type::Generator;
        let has_identity =
            matches!(attribute, Some(ferrojit_ir::AttributeValue::Tensor(_))) || is_generator;
        if !has_identity {
            let key = format!(
                "{}|{}",
                ty,
                attribute.map(|a| a.to_ir_string()).unwrap_or_default()
            );
            if let Some(&existing) = pooled.get(&key) {
                graph.replace_all_uses_with(output, existing);
                let destroyed = graph.destroy_node(node);
                debug_assert!(destroyed, "a replaced constant has no uses left");
                continue;
            }
            pooled.insert(key, output);
        }
        match (
            last_generator.filter(|_| is_generator),
            graph.block_nodes(top).first(),
        ) {
            (Some(previous), _) if previous != node => graph.move_after(node, previous),
            (Some(_), _) => {}
            (None, Some(&first)) if first != node => graph.move_before(node, first),
            _ => {}
        }
        if is_generator {
            last_generator = Some(node);
        }
    }
}
