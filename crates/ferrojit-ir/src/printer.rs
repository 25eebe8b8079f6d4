//! Prints a graph in PyTorch's canonical text form (`Graph::print` in PyTorch's `ir.cpp`).
//!
//! ```text
//! graph(%x.1 : Tensor,
//!       %n.1 : int):
//!   %2 : int = prim::Constant[value=1]()
//!   %y : Tensor = prim::Loop(%n.1, %3, %x.1)
//!     block0(%i.1 : int, %y.9 : Tensor):
//!       -> (%3, %y.9)
//!   return (%y)
//! ```

use std::fmt::{self, Write};

use crate::attributes::AttributeValue;
use crate::graph::{BlockId, Graph, NodeId, ValueId};

/// Nodes carrying a `Subgraph` attribute print as `KIND_N` and their subgraphs follow the
/// graph as `with KIND_N = graph(...)` sections, numbered in print order.
const SUBGRAPH_ATTRIBUTE: &str = "Subgraph";

impl Graph {
    fn write_value_list(&self, out: &mut String, values: &[ValueId], separator: &str) {
        for (index, &value) in values.iter().enumerate() {
            if index > 0 {
                out.push_str(separator);
            }
            out.push('%');
            out.push_str(&self.value_display_name(value));
        }
    }

    fn write_typed_value_list(&self, out: &mut String, values: &[ValueId], separator: &str) {
        for (index, &value) in values.iter().enumerate() {
            if index > 0 {
                out.push_str(separator);
            }
            let _ = write!(
                out,
                "%{} : {}",
                self.value_display_name(value),
                self.value_type(value)
            );
        }
    }

    fn write_attributes(&self, out: &mut String, node: NodeId, skip_subgraph: bool) {
        out.push('[');
        let mut first = true;
        for (name, value) in &self.node(node).attributes {
            if skip_subgraph && name == SUBGRAPH_ATTRIBUTE {
                continue;
            }
            if !first {
                out.push_str(", ");
            }
            first = false;
            let _ = write!(out, "{name}={}", value.to_ir_string());
        }
        out.push(']');
    }

    fn write_node<'g>(
        &'g self,
        out: &mut String,
        node: NodeId,
        level: usize,
        groups: &mut Vec<(&'g str, &'g Graph)>,
    ) {
        indent(out, level);
        let data = self.node(node);
        self.write_typed_value_list(out, &data.outputs, ", ");
        out.push_str(" = ");
        let subgraph = data
            .attributes
            .iter()
            .find(|(name, _)| name == SUBGRAPH_ATTRIBUTE)
            .and_then(|(_, value)| match value {
                AttributeValue::Graph(graph) => Some(graph.as_ref()),
                _ => None,
            });
        if let Some(subgraph) = subgraph {
            let _ = write!(out, "{}_{}", data.kind.as_str(), groups.len());
            if data.attributes.len() > 1 && !data.kind.is_prim(crate::Prim::DifferentiableGraph) {
                self.write_attributes(out, node, true);
            }
            groups.push((data.kind.as_str(), subgraph));
        } else {
            out.push_str(data.kind.as_str());
            if !data.attributes.is_empty() {
                self.write_attributes(out, node, false);
            }
        }
        out.push('(');
        self.write_value_list(out, &data.inputs, ", ");
        out.push(')');
        if let Some(scope) = &data.scope {
            let _ = write!(out, ", scope: {scope}");
        }
        if let Some(location) = &data.source_location {
            let _ = write!(
                out,
                " # {}:{}:{}",
                location.file, location.line, location.column
            );
        }
        out.push('\n');
        for (index, &block) in data.blocks.iter().enumerate() {
            self.write_block(out, block, index, level + 1, groups);
        }
    }

    fn write_block<'g>(
        &'g self,
        out: &mut String,
        block: BlockId,
        index: usize,
        level: usize,
        groups: &mut Vec<(&'g str, &'g Graph)>,
    ) {
        indent(out, level);
        let _ = write!(out, "block{index}(");
        self.write_typed_value_list(out, self.block_parameters(block), ", ");
        out.push_str("):\n");
        for node in self.block_nodes(block) {
            self.write_node(out, node, level + 1, groups);
        }
        indent(out, level + 1);
        out.push_str("-> (");
        self.write_value_list(out, self.block_outputs(block), ", ");
        out.push_str(")\n");
    }

    /// The graph in PyTorch's text form, subgraph sections included.
    pub fn to_ir_string(&self) -> String {
        let mut out = String::new();
        // Subgraphs nest as deeply as the text that built them; an explicit work list keeps
        // printing off the call stack for the graph-in-graph direction.
        let mut pending: Vec<(Option<String>, &Graph)> = vec![(None, self)];
        while let Some((header, graph)) = pending.pop() {
            if let Some(header) = header {
                out.push_str(&header);
            }
            let groups = graph.write_graph_body(&mut out);
            for (index, (kind, subgraph)) in groups.into_iter().enumerate().rev() {
                pending.push((Some(format!("with {kind}_{index} = ")), subgraph));
            }
        }
        out
    }

    /// Prints `graph(...)` up to `return (...)`; returns the subgraphs met, in order.
    fn write_graph_body<'g>(&'g self, out: &mut String) -> Vec<(&'g str, &'g Graph)> {
        let mut groups = Vec::new();
        out.push_str("graph(");
        self.write_typed_value_list(out, self.inputs(), ",\n      ");
        out.push_str("):\n");
        for node in self.block_nodes(self.top_block()) {
            self.write_node(out, node, 1, &mut groups);
        }
        out.push_str("  return (");
        self.write_value_list(out, self.outputs(), ", ");
        out.push_str(")\n");
        groups
    }
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

impl fmt::Display for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_ir_string())
    }
}

#[cfg(test)]
mod tests {
    use crate::attributes::AttributeValue;
    use crate::graph::Graph;
    use crate::types::Type;

    /// The expected text is the form PyTorch prints for
    /// `def f(x, n: int): for i in range(n): x = x + i; return x` (names as PyTorch gives).
    #[test]
    fn prints_loop_graph_in_pytorch_form() {
        let mut graph = Graph::new();
        let x = graph.add_input(Type::Tensor, Some("x.1"));
        let n = graph.add_input(Type::Int, Some("n.1"));
        let true_constant = graph.insert_constant(Some(AttributeValue::Int(1)), Type::Bool);
        let one = graph.insert_constant(Some(AttributeValue::Int(1)), Type::Int);
        let loop_node = graph.insert(
            crate::Prim::Loop.name(),
            &[n, true_constant, x],
            &[Type::Tensor],
        );
        let body = graph.add_node_block(loop_node);
        let i = graph.add_block_parameter(body, Type::Int);
        graph.set_debug_name(i, "i");
        let x_in = graph.add_block_parameter(body, Type::Tensor);
        graph.set_debug_name(x_in, "x.11");
        graph.set_insert_point(crate::graph::InsertPoint::EndOf(body));
        let add = graph.insert("aten::add", &[x_in, i, one], &[Type::Tensor]);
        let x_out = graph.node_output(add, 0);
        graph.set_debug_name(x_out, "x.5");
        graph.add_block_output(body, true_constant);
        graph.add_block_output(body, x_out);
        let result = graph.node_output(loop_node, 0);
        graph.set_debug_name(result, "x");
        graph.register_output(result);
        let expected = "graph(%x.1 : Tensor,
      %n.1 : int):
  %2 : bool = prim::Constant[value=1]()
  %3 : int = prim::Constant[value=1]()
  %x : Tensor = prim::Loop(%n.1, %2, %x.1)
    block0(%i : int, %x.11 : Tensor):
      %x.5 : Tensor = aten::add(%x.11, %i, %3)
      -> (%2, %x.5)
  return (%x)
";
        assert_eq!(graph.to_ir_string(), expected);
    }

    #[test]
    fn prints_zero_output_nodes_and_string_attributes() {
        let mut graph = Graph::new();
        let this = graph.add_input(Type::Tensor, Some("self"));
        let node = graph.insert(crate::Prim::SetAttr.name(), &[this, this], &[]);
        graph.set_attribute(node, "name", AttributeValue::Str("w".into()));
        let none = graph.insert_constant(None, Type::NoneType);
        graph.register_output(none);
        assert_eq!(
            graph.to_ir_string(),
            // Indentation, then an empty output list, then " = ": three spaces, as PyTorch prints.
            "graph(%self : Tensor):\n   = prim::SetAttr[name=\"w\"](%self, %self)\n  %1 : NoneType = prim::Constant()\n  return (%1)\n"
        );
    }
}
