//! A canonical form of a trace graph, to compare ferrojit's traces with PyTorch's without
//! caring about value names, types, constant values or where constants sit.
//!
//! Every node except `prim::Constant`, in graph order, becomes `kind(args)`, each argument
//! being `in<k>` (the k-th traced input; the module's `self` is not counted), `const` (a
//! constant) or `n<j>.<o>` (output `o` of the `j`-th non-constant node); a last line is
//! `return(args)`. PyTorch's `prim::CallFunction` takes the function as a constant first
//! input where ferrojit names it in an attribute, so ferrojit's calls get a leading
//! `const`. tests/fixtures/trace/generate.py computes the same form of PyTorch's graphs.

use std::collections::HashMap;

use ferrojit_ir::{Graph, ValueId};

/// The canonical lines of a trace graph whose first input is `self`.
pub fn canonical_form(graph: &Graph) -> Vec<String> {
    let mut names: HashMap<ValueId, String> = HashMap::new();
    for (index, input) in graph.inputs().iter().skip(1).enumerate() {
        names.insert(*input, format!("in{index}"));
    }
    let name_of = |names: &HashMap<ValueId, String>, value: &ValueId| {
        names.get(value).cloned().unwrap_or_else(|| "?".to_string())
    };
    let mut lines = Vec::new();
    let mut index = 0;
    for node in graph.block_nodes(graph.top_block()) {
        let kind = graph.kind(node).as_str().to_string();
        if kind == "prim::Constant" {
            for output in graph.node_outputs(node) {
                names.insert(*output, "const".to_string());
            }
            continue;
        }
        let mut arguments: Vec<String> = graph
            .node_inputs(node)
            .iter()
            .map(|value| name_of(&names, value))
            .collect();
        if kind == "prim::CallFunction" {
            arguments.insert(0, "const".to_string());
        }
        lines.push(format!("{kind}({})", arguments.join(", ")));
        for (position, output) in graph.node_outputs(node).iter().enumerate() {
            names.insert(*output, format!("n{index}.{position}"));
        }
        index += 1;
    }
    let outputs: Vec<String> = graph
        .outputs()
        .iter()
        .map(|value| name_of(&names, value))
        .collect();
    lines.push(format!("return({})", outputs.join(", ")));
    lines
}

/// Only the node kinds of a canonical form (the looser comparison).
pub fn kinds_of(canonical: &[String]) -> Vec<String> {
    canonical
        .iter()
        .map(|line| line.split('(').next().unwrap_or("").to_string())
        .collect()
}
