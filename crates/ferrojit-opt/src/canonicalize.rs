//! Canonicalization, PyTorch's `Canonicalize` (`_jit_pass_canonicalize`) with
//! `keep_unique_names=False`: the graph is copied into a fresh one in program order, so that
//! structurally equal graphs print with the same numbers. The inputs and the outputs of the
//! top block's nodes lose their names and print as numbers; values inside blocks keep theirs,
//! as in PyTorch (which clears only the names of the values it creates at the top level).
//! Subgraph attributes are canonicalized the same way.

use std::collections::HashMap;

use ferrojit_ir::{AttributeValue, Graph, InsertPoint};

/// Replaces `graph` with its canonical copy. Fails only on a graph whose nodes use a value
/// defined nowhere before them, which the verifier already refuses.
pub fn canonicalize(graph: &mut Graph) -> Result<(), String> {
    *graph = canonical_copy(graph)?;
    Ok(())
}

fn canonical_copy(graph: &Graph) -> Result<Graph, String> {
    let mut copy = Graph::new();
    let mut value_map = HashMap::new();
    for &input in graph.inputs() {
        let new_input = copy.add_input(graph.value_type(input).clone(), None);
        value_map.insert(input, new_input);
    }
    let top = copy.top_block();
    copy.set_insert_point(InsertPoint::EndOf(top));
    let outputs = copy
        .copy_block_from(graph, graph.top_block(), &mut value_map)
        .map_err(|error| format!("canonicalize: {error}"))?;
    for output in outputs {
        copy.register_output(output);
    }
    for node in copy.block_nodes(top) {
        for output in copy.node_outputs(node).to_vec() {
            copy.clear_debug_name(output);
        }
        if let Some(AttributeValue::Graph(subgraph)) = copy.attribute(node, "Subgraph") {
            let canonical = canonical_copy(subgraph)?;
            copy.set_attribute(node, "Subgraph", AttributeValue::Graph(Box::new(canonical)));
        }
    }
    Ok(copy)
}
