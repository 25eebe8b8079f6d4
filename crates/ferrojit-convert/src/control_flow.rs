//! Branches and loops. A branch or loop decided by static values is specialized: only the
//! taken branch is walked, and a loop is unrolled for as many iterations as the example
//! inputs run. A branch on a value read from tensor data becomes `torch.ops.higher_order.cond`
//! with both branches converted into subgraphs that take the outer tensors they read.

use std::collections::HashSet;

use ferrojit_export::model::{
    Argument, ArgumentKind, Graph as ExportGraph, GraphArgument, NamedArgument, Node,
};
use ferrojit_ir::{BlockId, NodeId};
use ferrojit_runtime::{IValue, TensorCell};
use ferrojit_tensor::DType;
use std::sync::Arc;

use crate::converter::{cell_key, Converter, DataDependent, Scope, MAX_UNROLLED_ITERATIONS};
use crate::error::Result;

/// A branch converted into a subgraph.
struct Branch {
    scope: Scope,
    outputs: Vec<IValue>,
    output_names: Vec<String>,
}

impl Converter<'_> {
    pub(crate) fn run_if(&mut self, node: NodeId) -> Result<()> {
        let condition = self.graph.node_inputs(node)[0];
        let blocks = self.graph.node_blocks(node).to_vec();
        if blocks.len() != 2 {
            return Err(self.node_error(node, "an if without two blocks"));
        }
        if let Some(dependent) = self.data_dependent.get(&condition).cloned() {
            return self.convert_cond(node, dependent, &blocks);
        }
        let taken = match self.value(node, condition)? {
            IValue::Bool(flag) => flag,
            other => {
                return Err(self.node_error(
                    node,
                    format!("the condition is a {}, not a bool", other.tag_name()),
                ))
            }
        };
        let block = if taken { blocks[0] } else { blocks[1] };
        self.run_block(block)?;
        self.block_output_values(node, block)
    }

    pub(crate) fn run_loop(&mut self, node: NodeId) -> Result<()> {
        let inputs = self.graph.node_inputs(node).to_vec();
        let block = *self
            .graph
            .node_blocks(node)
            .first()
            .ok_or_else(|| self.node_error(node, "a loop without a body"))?;
        if inputs.len() < 2 {
            return Err(self.node_error(node, "a loop without a trip count and condition"));
        }
        let data_dependent_condition = |converter: &Self, value| {
            converter
                .data_dependent
                .get(&value)
                .map(|d| d.operator.clone())
        };
        if let (None, Some(condition)) = (
            data_dependent_condition(self, inputs[0]),
            self.data_dependent.get(&inputs[1]).cloned(),
        ) {
            return self.convert_while_loop(node, condition);
        }
        if let Some(operator) = data_dependent_condition(self, inputs[0])
            .or_else(|| data_dependent_condition(self, inputs[1]))
        {
            return Err(self.node_error(
                node,
                format!(
                    "a loop whose trip count or condition is read from tensor data (by \
                     {operator})"
                ),
            ));
        }
        let max_trips = self
            .value(node, inputs[0])?
            .to_int()
            .map_err(|e| self.node_error(node, e.to_string()))?;
        let mut running = self
            .value(node, inputs[1])?
            .to_bool()
            .map_err(|e| self.node_error(node, e.to_string()))?;
        let parameters = self.graph.block_parameters(block).to_vec();
        let results = self.graph.block_outputs(block).to_vec();
        if parameters.len() != inputs.len() - 1 || results.len() != inputs.len() - 1 {
            return Err(self.node_error(node, "a loop body with the wrong number of values"));
        }
        // The carried values enter the body through its parameters (after the counter).
        for (&parameter, &input) in parameters[1..].iter().zip(&inputs[2..]) {
            self.forward_value(node, input, parameter)?;
        }
        let mut trip = 0i64;
        while running && trip < max_trips {
            self.unrolled += 1;
            if self.unrolled > MAX_UNROLLED_ITERATIONS {
                return Err(self.node_error(
                    node,
                    format!("unrolling loops past {MAX_UNROLLED_ITERATIONS} iterations"),
                ));
            }
            self.values.insert(parameters[0], IValue::Int(trip));
            self.data_dependent.remove(&parameters[0]);
            self.run_block(block)?;
            if let Some(dependent) = self.data_dependent.get(&results[0]) {
                return Err(self.node_error(
                    node,
                    format!(
                        "a loop whose condition is read from tensor data (by {})",
                        dependent.operator
                    ),
                ));
            }
            running = self
                .value(node, results[0])?
                .to_bool()
                .map_err(|e| self.node_error(node, e.to_string()))?;
            for (&parameter, &result) in parameters[1..].iter().zip(&results[1..]) {
                self.forward_value(node, result, parameter)?;
            }
            trip += 1;
        }
        let outputs = self.graph.node_outputs(node).to_vec();
        for (&output, &parameter) in outputs.iter().zip(&parameters[1..]) {
            self.forward_value(node, parameter, output)?;
        }
        Ok(())
    }

    /// The boolean tensor a data-dependent condition was read from (a `ne(t, 0)` node when
    /// the tensor is not boolean).
    pub(crate) fn predicate(&mut self, node: NodeId, dependent: &DataDependent) -> Result<String> {
        let tensor = dependent
            .tensor
            .to_tensor()
            .map_err(|e| self.node_error(node, e.to_string()))?;
        let is_truth = matches!(
            dependent.operator.as_str(),
            "aten::Bool.Tensor" | "aten::is_nonzero" | "aten::Bool"
        );
        if !is_truth || tensor.numel() != 1 {
            return Err(self.node_error(
                node,
                format!(
                    "a branch on a value read from tensor data by {} (only bool(t) of a \
                     one-element tensor becomes cond)",
                    dependent.operator
                ),
            ));
        }
        let name = self.tensor_name(&dependent.tensor)?;
        if tensor.dtype() == DType::Bool && tensor.dim() == 0 {
            return Ok(name);
        }
        // cond wants a boolean scalar: `ne(t, 0)`, reshaped to no dimensions.
        let not_zero = self.emit_simple(
            node,
            "aten::ne.Scalar",
            vec![dependent.tensor.clone(), IValue::Int(0)],
        )?;
        let not_zero = if tensor.dim() == 0 {
            not_zero
        } else {
            self.emit_simple(node, "aten::reshape", vec![not_zero, IValue::int_list(&[])])?
        };
        self.tensor_name(&not_zero)
    }

    fn convert_branch(&mut self, node: NodeId, block: BlockId) -> Result<Branch> {
        self.scopes.push(Scope::default());
        let walked = self.run_block(block);
        let outputs = match walked {
            Ok(()) => self.branch_outputs(node, block),
            Err(error) => Err(error),
        };
        let outputs = match outputs {
            Ok(outputs) => outputs,
            Err(error) => {
                self.scopes.pop();
                return Err(error);
            }
        };
        let mut output_names = Vec::new();
        let mut named = HashSet::new();
        for value in &outputs {
            let mut name = self.tensor_name(value)?;
            // A branch may not return one of its inputs, nor one value twice: copy it.
            let is_input = self
                .scopes
                .last()
                .is_some_and(|scope| scope.captures.iter().any(|(_, n)| *n == name));
            if is_input || !named.insert(name.clone()) {
                let copy =
                    self.emit_simple(node, "aten::clone", vec![value.clone(), IValue::None])?;
                name = self.tensor_name(&copy)?;
                named.insert(name.clone());
            }
            output_names.push(name);
        }
        let scope = self.scopes.pop().unwrap_or_default();
        Ok(Branch {
            scope,
            outputs,
            output_names,
        })
    }

    fn branch_outputs(&mut self, node: NodeId, block: BlockId) -> Result<Vec<IValue>> {
        let mut outputs = Vec::new();
        for &value in self.graph.block_outputs(block) {
            if self.data_dependent.contains_key(&value) {
                return Err(self.node_error(
                    node,
                    "a data-dependent branch returns a value read from tensor data",
                ));
            }
            let example = self.value(node, value)?;
            if !matches!(example, IValue::Tensor(_)) {
                return Err(self.node_error(
                    node,
                    format!(
                        "a data-dependent branch returns a {} (cond branches return tensors)",
                        example.tag_name()
                    ),
                ));
            }
            outputs.push(example);
        }
        Ok(outputs)
    }

    fn convert_cond(
        &mut self,
        node: NodeId,
        dependent: DataDependent,
        blocks: &[BlockId],
    ) -> Result<()> {
        let predicate = self.predicate(node, &dependent)?;
        let tensor = dependent
            .tensor
            .to_tensor()
            .map_err(|e| self.node_error(node, e.to_string()))?;
        let taken = tensor
            .item()
            .map_err(|e| self.node_error(node, e.to_string()))?
            .to_f64()
            != 0.0;
        let true_branch = self.convert_branch(node, blocks[0])?;
        let false_branch = self.convert_branch(node, blocks[1])?;
        // The operands: every outer tensor either branch reads, in first-read order.
        let mut operands: Vec<IValue> = Vec::new();
        let mut seen = HashSet::new();
        for (value, _) in true_branch
            .scope
            .captures
            .iter()
            .chain(&false_branch.scope.captures)
        {
            if let Some(key) = cell_key(value) {
                if seen.insert(key) {
                    operands.push(value.clone());
                }
            }
        }
        let mut operand_names = Vec::new();
        for value in &operands {
            operand_names.push(self.tensor_name(value)?);
        }
        let true_graph = self.subgraph(&true_branch, &operands, &operand_names);
        let false_graph = self.subgraph(&false_branch, &operands, &operand_names);
        let taken_outputs = if taken {
            &true_branch.outputs
        } else {
            &false_branch.outputs
        };
        // Fresh cells: the result is not the taken branch's tensor once the program runs.
        let results: Vec<IValue> = taken_outputs
            .iter()
            .map(|value| match value {
                IValue::Tensor(cell) => IValue::Tensor(Arc::new(TensorCell::new(cell.get()))),
                other => other.clone(),
            })
            .collect();
        // Both branches must give the same (symbolic) sizes; the result takes them.
        for (index, ((true_value, false_value), result)) in true_branch
            .outputs
            .iter()
            .zip(&false_branch.outputs)
            .zip(&results)
            .enumerate()
        {
            if matches!(result, IValue::Tensor(_)) {
                if self.dims_of(true_value) != self.dims_of(false_value) {
                    return Err(self.node_error(
                        node,
                        format!(
                            "the branches give result {index} different sizes when a dimension \
                             is dynamic ({:?} and {:?})",
                            self.dims_of(true_value)
                                .map(|d| d.iter().map(|d| d.expression()).collect::<Vec<_>>()),
                            self.dims_of(false_value)
                                .map(|d| d.iter().map(|d| d.expression()).collect::<Vec<_>>()),
                        ),
                    ));
                }
                self.copy_symbolic_sizes(true_value, result);
            }
        }
        let mut output_names = Vec::new();
        for value in &results {
            let name = self.fresh_name("getitem");
            self.bind_tensor(value, &name)?;
            output_names.push(Argument::Tensor(name));
        }
        let positional = |arg| NamedArgument {
            name: String::new(),
            arg,
            kind: Some(ArgumentKind::Positional),
        };
        let true_name = format!("true_graph_{}", self.subgraph_count);
        let false_name = format!("false_graph_{}", self.subgraph_count);
        self.subgraph_count += 1;
        let name = self.fresh_name("cond");
        let metadata = self.node_metadata(node);
        self.push_node(Node {
            target: "torch.ops.higher_order.cond".to_string(),
            inputs: vec![
                positional(Argument::Tensor(predicate)),
                positional(Argument::Graph(GraphArgument {
                    name: true_name,
                    graph: Box::new(true_graph),
                })),
                positional(Argument::Graph(GraphArgument {
                    name: false_name,
                    graph: Box::new(false_graph),
                })),
                positional(Argument::Tensors(operand_names)),
            ],
            outputs: output_names,
            metadata,
            is_hop_single_tensor_return: Some(false),
            name: Some(name),
        });
        self.set_outputs(node, results)
    }

    /// A branch's subgraph: it takes every operand (the ones it does not read under fresh
    /// names) and returns the branch's outputs.
    fn subgraph(
        &mut self,
        branch: &Branch,
        operands: &[IValue],
        outer_names: &[String],
    ) -> ExportGraph {
        let mut tensor_values = branch.scope.tensor_values.clone();
        let mut inputs = Vec::new();
        for (value, outer) in operands.iter().zip(outer_names) {
            let key = cell_key(value);
            let captured = branch
                .scope
                .captures
                .iter()
                .find(|(captured, _)| cell_key(captured) == key)
                .map(|(_, name)| name.clone());
            let name = match captured {
                Some(name) => name,
                None => {
                    let name = self.fresh_name(outer);
                    if let Some(meta) = self.scopes.last().and_then(|s| s.tensor_values.get(outer))
                    {
                        tensor_values.insert(name.clone(), meta.clone());
                    }
                    name
                }
            };
            inputs.push(Argument::Tensor(name));
        }
        let mut graph = ExportGraph::default();
        graph.inputs = inputs;
        graph.outputs = branch
            .output_names
            .iter()
            .map(|name| Argument::Tensor(name.clone()))
            .collect();
        graph.nodes = branch.scope.nodes.clone();
        graph.tensor_values = tensor_values;
        graph
    }
}
