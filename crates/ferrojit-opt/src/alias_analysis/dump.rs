//! The text dump of an [`AliasDb`], in the layout of PyTorch's `AliasDb::toString`: the
//! graph, then each element's points-to and contains edges, then each node's writes.
//! Elements are listed in creation order (PyTorch's order is its hash map's), so the dump is
//! stable from run to run.

use std::fmt::Write;

use ferrojit_ir::{Graph, NodeId};

use super::memory_locations::ElementId;
use super::AliasDb;

impl AliasDb {
    /// The graph, the alias DAG and the writes, for debugging.
    pub fn dump(&self, graph: &Graph) -> String {
        let mut out = String::new();
        out.push_str("\n===1. GRAPH===\n");
        out.push_str(&graph.to_ir_string());
        out.push_str("\n===2. ALIAS DB===\n");
        let dag = self.memory_dag();
        for index in 0..dag.len() {
            let id = ElementId(index as u32);
            let element = dag.element(id);
            if element.values.is_empty() {
                // Wildcards are listed only where something names them.
                continue;
            }
            if !element.points_to.is_empty() {
                let names: Vec<String> = element
                    .points_to
                    .iter()
                    .map(|&target| self.element_name(graph, target))
                    .collect();
                let _ = writeln!(
                    out,
                    "{} points to: {}",
                    self.element_name(graph, id),
                    names.join(", ")
                );
            }
            if !element.contained.is_empty() {
                let names: Vec<String> = element
                    .contained
                    .iter()
                    .map(|&target| self.element_name(graph, target))
                    .collect();
                let _ = writeln!(
                    out,
                    "{} contains: {}",
                    self.element_name(graph, id),
                    names.join(", ")
                );
            }
        }
        out.push_str("\n===3. Writes===\n");
        let mut writers: Vec<(&NodeId, _)> = self.writes.iter().collect();
        writers.sort_by_key(|(node, _)| **node);
        for (&node, locations) in writers {
            // PyTorch prints the whole node, then the locations on an indented line.
            let outputs: Vec<String> = graph
                .node_outputs(node)
                .iter()
                .map(|&v| format!("%{} : {}", graph.value_display_name(v), graph.value_type(v)))
                .collect();
            let inputs: Vec<String> = graph
                .node_inputs(node)
                .iter()
                .map(|&v| format!("%{}", graph.value_display_name(v)))
                .collect();
            let _ = writeln!(
                out,
                "{} = {}({})",
                outputs.join(", "),
                graph.kind(node),
                inputs.join(", ")
            );
            out.push_str("  ");
            for location in locations.iter() {
                let _ = write!(out, "{}, ", self.element_name(graph, location));
            }
            out.push('\n');
        }
        out.push('\n');
        out
    }

    /// `%name` for a value's element, `WILDCARD for type T` for a wildcard.
    fn element_name(&self, graph: &Graph, element: ElementId) -> String {
        if let Some(name) = self.subgraph_value_names.get(&element) {
            return format!("%{name}");
        }
        let values = &self.memory_dag().element(element).values;
        match values.as_slice() {
            [] => match self
                .wildcard_index
                .iter()
                .find(|(_, wildcard)| *wildcard == element)
            {
                Some((ty, _)) => format!("WILDCARD for type {ty}"),
                None => "WILDCARD".to_string(),
            },
            [value] => format!("%{}", graph.value_display_name(*value)),
            many => {
                let names: Vec<String> = many
                    .iter()
                    .map(|&v| format!("%{}, ", graph.value_display_name(v)))
                    .collect();
                format!("({})", names.concat())
            }
        }
    }
}
