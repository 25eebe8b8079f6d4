//! A TorchScript `while` loop whose condition is read from tensor data becomes
//! `torch.ops.higher_order.while_loop`. The loop's condition travels as a carried boolean
//! tensor: the condition subgraph returns it, and the body subgraph (the loop body converted
//! once) returns the next condition with the next carried tensors. The example result is
//! computed by running the new node with ferrojit's `.pt2` runner.

use std::collections::HashSet;

use ferrojit_export::model::{
    Argument, ArgumentKind, Graph as ExportGraph, GraphArgument, NamedArgument, Node,
};
use ferrojit_ir::NodeId;
use ferrojit_runtime::IValue;

use crate::converter::{cell_key, Converter, DataDependent, Scope};
use crate::error::Result;

/// TorchScript's trip count of a `while` loop (no bound).
const UNBOUNDED_TRIPS: i64 = i64::MAX;

impl Converter<'_> {
    pub(crate) fn convert_while_loop(
        &mut self,
        node: NodeId,
        condition: DataDependent,
    ) -> Result<()> {
        let inputs = self.graph.node_inputs(node).to_vec();
        let block = self.graph.node_blocks(node)[0];
        let trips = self.value(node, inputs[0])?;
        if !matches!(trips, IValue::Int(UNBOUNDED_TRIPS))
            || self.data_dependent.contains_key(&inputs[0])
        {
            return Err(self.node_error(
                node,
                "a for loop that stops on tensor data (only while loops become while_loop)",
            ));
        }
        let parameters = self.graph.block_parameters(block).to_vec();
        let results = self.graph.block_outputs(block).to_vec();
        if !self.graph.value_uses(parameters[0]).is_empty() {
            return Err(self.node_error(node, "a data-dependent loop that reads its trip counter"));
        }
        let mut carried = Vec::new();
        for &input in &inputs[2..] {
            if self.data_dependent.contains_key(&input) {
                return Err(self.node_error(
                    node,
                    "a data-dependent loop carries a value read from tensor data",
                ));
            }
            let value = self.value(node, input)?;
            if !matches!(value, IValue::Tensor(_)) {
                return Err(self.node_error(
                    node,
                    format!(
                        "a data-dependent loop carries a {} (while_loop carries tensors)",
                        value.tag_name()
                    ),
                ));
            }
            carried.push(value);
        }
        let first_predicate = self.predicate(node, &condition)?;
        let mut carried_names = vec![first_predicate];
        for value in &carried {
            carried_names.push(self.tensor_name(value)?);
        }

        // The body, converted once, in its own scope: its parameters are the carried values.
        self.scopes.push(Scope::default());
        let body = self.convert_loop_body(node, &parameters, &results, &carried);
        let scope = self.scopes.pop().unwrap_or_default();
        let (body_inputs, body_outputs) = body?;
        // Outer tensors the body reads become additional inputs.
        let mut additional = Vec::new();
        let mut additional_inner = Vec::new();
        let carried_keys: HashSet<usize> = carried.iter().filter_map(cell_key).collect();
        for (value, inner) in &scope.captures {
            if cell_key(value).is_some_and(|k| carried_keys.contains(&k)) {
                continue;
            }
            additional.push(self.tensor_name(value)?);
            additional_inner.push(inner.clone());
        }
        let mut body_graph = ExportGraph::default();
        body_graph.inputs = body_inputs
            .iter()
            .chain(&additional_inner)
            .map(|name| Argument::Tensor(name.clone()))
            .collect();
        body_graph.outputs = body_outputs
            .iter()
            .map(|n| Argument::Tensor(n.clone()))
            .collect();
        body_graph.nodes = scope.nodes;
        body_graph.tensor_values = scope.tensor_values.clone();

        // The condition returns the carried predicate.
        let mut condition_graph = ExportGraph::default();
        let mut condition_inputs = Vec::new();
        for name in body_inputs.iter().chain(&additional_inner) {
            let fresh = self.fresh_name(name);
            if let Some(meta) = scope.tensor_values.get(name) {
                condition_graph
                    .tensor_values
                    .insert(fresh.clone(), meta.clone());
            }
            condition_inputs.push(fresh);
        }
        condition_graph.inputs = condition_inputs
            .iter()
            .map(|n| Argument::Tensor(n.clone()))
            .collect();
        condition_graph.outputs = vec![Argument::Tensor(condition_inputs[0].clone())];
        // PyTorch's while_loop wants the condition's predicate itself, not a 1-tuple.
        condition_graph.is_single_tensor_return = true;

        let output_names: Vec<String> = (0..carried_names.len())
            .map(|_| self.fresh_name("getitem"))
            .collect();
        let positional = |arg| NamedArgument {
            name: String::new(),
            arg,
            kind: Some(ArgumentKind::Positional),
        };
        let index = self.subgraph_count;
        self.subgraph_count += 1;
        let loop_node = Node {
            target: "torch.ops.higher_order.while_loop".to_string(),
            inputs: vec![
                positional(Argument::Graph(GraphArgument {
                    name: format!("while_loop_cond_graph_{index}"),
                    graph: Box::new(condition_graph),
                })),
                positional(Argument::Graph(GraphArgument {
                    name: format!("while_loop_body_graph_{index}"),
                    graph: Box::new(body_graph),
                })),
                positional(Argument::Tensors(carried_names.clone())),
                positional(Argument::Tensors(additional.clone())),
            ],
            outputs: output_names
                .iter()
                .map(|n| Argument::Tensor(n.clone()))
                .collect(),
            metadata: self.node_metadata(node),
            is_hop_single_tensor_return: Some(false),
            name: Some(self.fresh_name("while_loop")),
        };
        // The example result: run the new node on the example values.
        let mut probe = ExportGraph::default();
        let mut probe_inputs = Vec::new();
        for name in carried_names.iter().chain(&additional) {
            probe.inputs.push(Argument::Tensor(name.clone()));
            probe_inputs.push(
                self.example_of(name).ok_or_else(|| {
                    self.node_error(node, format!("no example value for '{name}'"))
                })?,
            );
        }
        probe.nodes = vec![loop_node.clone()];
        probe.outputs = loop_node.outputs.clone();
        let values = ferrojit_export::run::run_graph(&probe, probe_inputs)
            .map_err(|e| self.node_error(node, format!("the converted loop failed: {e}")))?;
        for (index, (value, name)) in values.iter().zip(&output_names).enumerate() {
            // A carried value keeps its sizes through the loop (while_loop requires it), and
            // so its dynamic ones (the first value is the predicate).
            if let Some(before) = index.checked_sub(1).and_then(|i| carried.get(i)) {
                self.copy_symbolic_sizes(before, value);
            }
            self.bind_tensor(value, name)?;
        }
        self.push_node(loop_node);
        let outputs = self.graph.node_outputs(node).to_vec();
        if outputs.len() + 1 != values.len() {
            return Err(self.node_error(node, "a loop with the wrong number of results"));
        }
        self.set_outputs(node, values[1..].to_vec())
    }

    /// The example value of a tensor name of the current scope.
    fn example_of(&self, name: &str) -> Option<IValue> {
        self.scopes
            .last()?
            .names
            .values()
            .find(|(n, _)| n == name)
            .map(|(_, value)| value.clone())
    }

    /// Walks the loop body once with the carried example values; returns the body's input
    /// names (predicate first) and output names (next predicate first).
    fn convert_loop_body(
        &mut self,
        node: NodeId,
        parameters: &[ferrojit_ir::ValueId],
        results: &[ferrojit_ir::ValueId],
        carried: &[IValue],
    ) -> Result<(Vec<String>, Vec<String>)> {
        let mut inputs = vec![self.fresh_name("pred")];
        // The predicate placeholder has the metadata of a boolean scalar.
        let flag = IValue::from(
            ferrojit_tensor::Tensor::from_vec(vec![true], &[])
                .map_err(|e| self.node_error(node, e.to_string()))?,
        );
        self.bind_tensor(&flag, &inputs[0])?;
        for (&parameter, value) in parameters[1..].iter().zip(carried) {
            // A fresh cell: inside the body the carried value is the body's input.
            let inner = IValue::Tensor(std::sync::Arc::new(ferrojit_runtime::TensorCell::new(
                value
                    .to_tensor()
                    .map_err(|e| self.node_error(node, e.to_string()))?,
            )));
            let name = self.fresh_name("carried");
            self.copy_symbolic_sizes(value, &inner);
            self.bind_tensor(&inner, &name)?;
            inputs.push(name);
            self.values.insert(parameter, inner);
            self.data_dependent.remove(&parameter);
        }
        self.values.insert(parameters[0], IValue::Int(0));
        self.run_block(self.graph.node_blocks(node)[0])?;
        let next = self
            .data_dependent
            .get(&results[0])
            .cloned()
            .ok_or_else(|| self.node_error(node, "a loop whose condition becomes static"))?;
        let mut outputs = vec![self.predicate(node, &next)?];
        let mut named = HashSet::new();
        named.insert(outputs[0].clone());
        for &result in &results[1..] {
            if self.data_dependent.contains_key(&result) {
                return Err(
                    self.node_error(node, "a loop body returns a value read from tensor data")
                );
            }
            let value = self.value(node, result)?;
            if !matches!(value, IValue::Tensor(_)) {
                return Err(
                    self.node_error(node, "a loop body returns a value that is not a tensor")
                );
            }
            let mut name = self.tensor_name(&value)?;
            if inputs.contains(&name) || !named.insert(name.clone()) {
                let copy = self.emit_simple(node, "aten::clone", vec![value, IValue::None])?;
                name = self.tensor_name(&copy)?;
                named.insert(name.clone());
            }
            outputs.push(name);
        }
        Ok((inputs, outputs))
    }
}
