//! The graph verifier. A verifier error always means a bug in whatever built or transformed
//! the graph, never bad user input.
//!
//! Invariants checked:
//! 1. **Linking**: every node in a block's list names that block as its owner, is not
//!    destroyed, and every block's return node is `prim::Return` with no outputs.
//! 2. **Uses**: for every node input `i` of node `n` reading value `v`, `v`'s uses contain
//!    `(n, i)`; every recorded use points at a live node whose input slot holds that value.
//! 3. **SSA scoping and dominance**: a value is used only after its definition, in the same
//!    block or a block nested inside the defining one (block parameters are visible in their
//!    block and nested blocks).
//! 4. **Definitions**: each output / block parameter records the node or block and index
//!    that defines it.
//! 5. **Control flow arity and types**: `prim::If` has one `bool` input and two blocks
//!    without parameters, each returning as many values as the node has outputs;
//!    `prim::Loop` has inputs `(max_trip_count : int, start_condition : bool, carried...)`,
//!    one block with parameters `(iteration : int, carried...)` and outputs
//!    `(continue_condition : bool, carried...)`, and as many outputs as carried values.
//! 6. **Block outputs type-check**: If/Loop block outputs are subtypes of the node's
//!    output types (after unification by the compiler).
//! 7. **Schema conformance**: a node carrying an operator schema has the schema's name as
//!    its kind and no more inputs than the schema takes (unless it ends in `...`); every node
//!    carrying a schema (calls of script functions and methods included) has exactly as many outputs as the schema returns (unless `...` returns), and each
//!    output type is a subtype of the declared return type where that type has no type
//!    variables.
//! 8. **Prim arity**: a node whose kind is in the prim table (`crate::prims::PRIMS`) has the
//!    number of inputs, outputs and blocks its record allows.

use std::collections::HashSet;

use crate::graph::{BlockId, Graph, NodeId, ValueDefinition, ValueId};
use crate::prims::{Arity, Prim, PrimInfo};
use crate::types::Type;

/// A violated invariant, with the offending node printed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("IR verification failed: {message}")]
pub struct VerifyError {
    pub message: String,
}

fn fail<T>(message: String) -> Result<T, VerifyError> {
    Err(VerifyError { message })
}

/// Checks every invariant listed in the module documentation.
pub fn verify(graph: &Graph) -> Result<(), VerifyError> {
    let mut visible: Vec<HashSet<ValueId>> = Vec::new();
    verify_block(graph, graph.top_block(), &mut visible)
}

fn describe(graph: &Graph, node: NodeId) -> String {
    let outputs: Vec<String> = graph
        .node_outputs(node)
        .iter()
        .map(|&v| format!("%{}", graph.value_display_name(v)))
        .collect();
    format!("{} = {}", outputs.join(", "), graph.kind(node))
}

fn is_visible(visible: &[HashSet<ValueId>], value: ValueId) -> bool {
    visible.iter().any(|scope| scope.contains(&value))
}

// Blocks nest with the source program, which the parser bounds in depth, so recursion here
// is bounded by the frontend's nesting limit.
fn verify_block(
    graph: &Graph,
    block: BlockId,
    visible: &mut Vec<HashSet<ValueId>>,
) -> Result<(), VerifyError> {
    let mut scope = HashSet::new();
    for (index, &parameter) in graph.block_parameters(block).iter().enumerate() {
        if graph.value_definition(parameter) != (ValueDefinition::BlockParameter { block, index }) {
            return fail(format!(
                "block parameter %{} has a wrong definition record",
                graph.value_display_name(parameter)
            ));
        }
        scope.insert(parameter);
    }
    visible.push(scope);
    for node in graph.block_nodes(block) {
        verify_node(graph, node, block, visible)?;
        let last = visible.len() - 1;
        for &output in graph.node_outputs(node) {
            visible[last].insert(output);
        }
    }
    let return_node = graph.block_return_node(block);
    if !graph.kind(return_node).is_prim(Prim::Return) || !graph.node_outputs(return_node).is_empty()
    {
        return fail(format!(
            "{block} does not end in a prim::Return without outputs"
        ));
    }
    verify_inputs(graph, return_node, visible)?;
    visible.pop();
    Ok(())
}

fn verify_inputs(
    graph: &Graph,
    node: NodeId,
    visible: &[HashSet<ValueId>],
) -> Result<(), VerifyError> {
    for (input_index, &input) in graph.node_inputs(node).iter().enumerate() {
        if !is_visible(visible, input) {
            return fail(format!(
                "input %{} of `{}` is used before its definition or outside its scope",
                graph.value_display_name(input),
                describe(graph, node)
            ));
        }
        if !graph
            .value_uses(input)
            .iter()
            .any(|u| u.node == node && u.input_index == input_index)
        {
            return fail(format!(
                "uses of %{} do not record input {input_index} of `{}`",
                graph.value_display_name(input),
                describe(graph, node)
            ));
        }
    }
    for &output in graph.node_outputs(node) {
        for use_site in graph.value_uses(output) {
            if graph.is_destroyed(use_site.node)
                || graph.node_inputs(use_site.node).get(use_site.input_index) != Some(&output)
            {
                return fail(format!(
                    "a recorded use of %{} is stale",
                    graph.value_display_name(output)
                ));
            }
        }
    }
    Ok(())
}

fn verify_node(
    graph: &Graph,
    node: NodeId,
    block: BlockId,
    visible: &mut Vec<HashSet<ValueId>>,
) -> Result<(), VerifyError> {
    if graph.is_destroyed(node) {
        return fail(format!(
            "destroyed node `{}` is still linked",
            describe(graph, node)
        ));
    }
    if graph.node(node).owning_block != Some(block) {
        return fail(format!(
            "`{}` is linked into {block} but records another owner",
            describe(graph, node)
        ));
    }
    for (index, &output) in graph.node_outputs(node).iter().enumerate() {
        if graph.value_definition(output) != (ValueDefinition::NodeOutput { node, index }) {
            return fail(format!(
                "output {index} of `{}` has a wrong definition record",
                describe(graph, node)
            ));
        }
    }
    verify_inputs(graph, node, visible)?;
    verify_schema(graph, node)?;
    match graph.kind(node).prim() {
        Some(Prim::If) => verify_if(graph, node)?,
        Some(Prim::Loop) => verify_loop(graph, node)?,
        _ => {}
    }
    if let Some(prim) = graph.kind(node).prim() {
        verify_prim_arity(graph, node, prim.info())?;
    }
    for &nested in graph.node_blocks(node) {
        if graph.block_owning_node(nested) != Some(node) {
            return fail(format!(
                "a block of `{}` records another owner",
                describe(graph, node)
            ));
        }
        verify_block(graph, nested, visible)?;
    }
    Ok(())
}

fn verify_prim_arity(graph: &Graph, node: NodeId, info: &PrimInfo) -> Result<(), VerifyError> {
    let counts = [
        ("inputs", info.inputs, graph.node_inputs(node).len()),
        ("outputs", info.outputs, graph.node_outputs(node).len()),
        (
            "blocks",
            Arity::Exactly(info.blocks),
            graph.node_blocks(node).len(),
        ),
    ];
    for (what, allowed, count) in counts {
        if !allowed.allows(count) {
            return fail(format!(
                "`{}` has {count} {what}; {} takes {allowed} {what}",
                describe(graph, node),
                info.name
            ));
        }
    }
    Ok(())
}

fn verify_schema(graph: &Graph, node: NodeId) -> Result<(), VerifyError> {
    let Some(schema) = graph.node(node).schema.as_ref() else {
        return Ok(());
    };
    // Calls of script functions and methods carry the callee's schema; their inputs also
    // hold the callee (a function value) or `self`, so only the outputs are compared.
    let is_call = matches!(
        graph.kind(node).prim(),
        Some(Prim::CallFunction | Prim::CallMethod)
    );
    if !is_call && graph.kind(node).as_str() != schema.name {
        return fail(format!(
            "`{}` carries the schema of {}",
            describe(graph, node),
            schema.full_name()
        ));
    }
    let inputs = graph.node_inputs(node).len();
    let arguments = schema.arguments.len();
    if !is_call && inputs > arguments && !schema.is_vararg {
        return fail(format!(
            "`{}` has {inputs} inputs but {} takes {arguments}",
            describe(graph, node),
            schema.full_name()
        ));
    }
    let outputs = graph.node_outputs(node);
    if !schema.is_varret && outputs.len() != schema.returns.len() {
        return fail(format!(
            "`{}` has {} outputs but {} returns {}",
            describe(graph, node),
            outputs.len(),
            schema.full_name(),
            schema.returns.len()
        ));
    }
    for (&output, declared) in outputs.iter().zip(&schema.returns) {
        let actual = graph.value_type(output);
        if !declared.ty.has_free_variables() && !actual.is_subtype_of(&declared.ty) {
            return fail(format!(
                "`{}` outputs {actual} where {} returns {}",
                describe(graph, node),
                schema.full_name(),
                declared.ty
            ));
        }
    }
    Ok(())
}

fn verify_block_outputs_match(
    graph: &Graph,
    node: NodeId,
    block: BlockId,
    skip: usize,
) -> Result<(), VerifyError> {
    let outputs = graph.block_outputs(block);
    let node_outputs = graph.node_outputs(node);
    if outputs.len() != node_outputs.len() + skip {
        return fail(format!(
            "`{}` has {} outputs but its block returns {}",
            describe(graph, node),
            node_outputs.len(),
            outputs.len().saturating_sub(skip)
        ));
    }
    for (&block_output, &node_output) in outputs[skip..].iter().zip(node_outputs) {
        if !graph
            .value_type(block_output)
            .is_subtype_of(graph.value_type(node_output))
        {
            return fail(format!(
                "`{}` outputs {} but its block returns {}",
                describe(graph, node),
                graph.value_type(node_output),
                graph.value_type(block_output)
            ));
        }
    }
    Ok(())
}

fn verify_if(graph: &Graph, node: NodeId) -> Result<(), VerifyError> {
    let inputs = graph.node_inputs(node);
    if inputs.len() != 1 || !is_condition_type(graph.value_type(inputs[0])) {
        return fail(format!(
            "`{}` must have exactly one bool input",
            describe(graph, node)
        ));
    }
    let blocks = graph.node_blocks(node);
    if blocks.len() != 2 {
        return fail(format!("`{}` must have two blocks", describe(graph, node)));
    }
    for &block in blocks {
        if !graph.block_parameters(block).is_empty() {
            return fail(format!(
                "a block of `{}` has parameters",
                describe(graph, node)
            ));
        }
        verify_block_outputs_match(graph, node, block, 0)?;
    }
    Ok(())
}

fn verify_loop(graph: &Graph, node: NodeId) -> Result<(), VerifyError> {
    let inputs = graph.node_inputs(node);
    if inputs.len() < 2
        || *graph.value_type(inputs[0]) != Type::Int
        || !is_condition_type(graph.value_type(inputs[1]))
    {
        return fail(format!(
            "`{}` must start with (int max_trip_count, bool condition)",
            describe(graph, node)
        ));
    }
    let carried = inputs.len() - 2;
    if graph.node_outputs(node).len() != carried {
        return fail(format!(
            "`{}` must output its {carried} carried values",
            describe(graph, node)
        ));
    }
    let blocks = graph.node_blocks(node);
    if blocks.len() != 1 {
        return fail(format!(
            "`{}` must have one body block",
            describe(graph, node)
        ));
    }
    let body = blocks[0];
    let parameters = graph.block_parameters(body);
    if parameters.len() != carried + 1 || *graph.value_type(parameters[0]) != Type::Int {
        return fail(format!(
            "the body of `{}` must take (int iteration, carried...)",
            describe(graph, node)
        ));
    }
    let outputs = graph.block_outputs(body);
    if outputs.is_empty() || !is_condition_type(graph.value_type(outputs[0])) {
        return fail(format!(
            "the body of `{}` must return (bool condition, carried...)",
            describe(graph, node)
        ));
    }
    verify_block_outputs_match(graph, node, body, 1)
}

/// The type of an If or Loop condition: `bool`, or the zero-dimensional `Bool` tensor that
/// PyTorch's `erase_number_types` (run before ONNX export) makes of one.
fn is_condition_type(ty: &Type) -> bool {
    match ty {
        Type::Bool => true,
        Type::RefinedTensor(refinement) => {
            refinement.scalar_type.as_deref() == Some("Bool")
                && refinement.sizes.as_ref().is_some_and(Vec::is_empty)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attributes::AttributeValue;
    use crate::graph::InsertPoint;
    use crate::graph::Symbol;

    fn relu_schema() -> std::sync::Arc<crate::schema::FunctionSchema> {
        std::sync::Arc::new(
            crate::schema::parse_schema("aten::relu(Tensor self) -> Tensor").unwrap(),
        )
    }

    /// `%y = aten::relu(%x); return (%y)`, the node, and its output.
    fn relu_graph() -> (Graph, NodeId, ValueId, ValueId) {
        let mut graph = Graph::new();
        let x = graph.add_input(Type::Tensor, Some("x"));
        let relu = graph.insert("aten::relu", &[x], &[Type::Tensor]);
        let y = graph.node_output(relu, 0);
        graph.register_output(y);
        verify(&graph).unwrap();
        (graph, relu, x, y)
    }

    fn message(graph: &Graph) -> String {
        verify(graph).unwrap_err().message
    }

    #[test]
    fn linking_invariant_is_checked() {
        let (mut graph, relu, _, _) = relu_graph();
        graph.node_mut(relu).owning_block = None;
        assert!(
            message(&graph).contains("records another owner"),
            "{}",
            message(&graph)
        );

        let (mut graph, _, _, _) = relu_graph();
        let top = graph.top_block();
        let return_node = graph.block_return_node(top);
        graph.node_mut(return_node).kind = Symbol::new("aten::relu");
        assert!(
            message(&graph).contains("does not end in a prim::Return"),
            "{}",
            message(&graph)
        );
    }

    #[test]
    fn use_lists_must_agree_with_inputs() {
        let (mut graph, relu, x, _) = relu_graph();
        graph.value_mut(x).uses.retain(|u| u.node != relu);
        assert!(
            message(&graph).contains("uses of %x do not record input 0"),
            "{}",
            message(&graph)
        );

        let (mut graph, relu, _, y) = relu_graph();
        // A use of %y by relu's input slot 0, which holds %x: stale.
        graph.value_mut(y).uses.push(crate::graph::Use {
            node: relu,
            input_index: 0,
        });
        assert!(message(&graph).contains("is stale"), "{}", message(&graph));
    }

    #[test]
    fn definition_records_are_checked() {
        let (mut graph, relu, _, y) = relu_graph();
        graph.value_mut(y).definition = ValueDefinition::NodeOutput {
            node: relu,
            index: 1,
        };
        assert!(
            message(&graph).contains("wrong definition record"),
            "{}",
            message(&graph)
        );
    }

    #[test]
    fn schema_nodes_must_match_their_schema() {
        let mut graph = Graph::new();
        let x = graph.add_input(Type::Tensor, Some("x"));
        let relu = graph.insert_with_schema(relu_schema(), &[x]);
        let out = graph.node_output(relu, 0);
        graph.register_output(out);
        verify(&graph).unwrap();

        // An output retyped against the schema's return type.
        graph.set_value_type(out, Type::Int);
        let error = verify(&graph).unwrap_err();
        assert!(
            error
                .message
                .contains("outputs int where aten::relu returns Tensor"),
            "{error}"
        );
        graph.set_value_type(out, Type::Tensor);

        // An extra input the schema does not take.
        let mut graph = Graph::new();
        let x = graph.add_input(Type::Tensor, Some("x"));
        let y = graph.add_input(Type::Tensor, Some("y"));
        let relu = graph.insert_with_schema(relu_schema(), &[x, y]);
        let out = graph.node_output(relu, 0);
        graph.register_output(out);
        let error = verify(&graph).unwrap_err();
        assert!(
            error
                .message
                .contains("has 2 inputs but aten::relu takes 1"),
            "{error}"
        );
    }

    #[test]
    fn accepts_well_formed_if() {
        let mut graph = Graph::new();
        let condition = graph.add_input(Type::Bool, Some("c"));
        let x = graph.add_input(Type::Tensor, Some("x"));
        let if_node = graph.insert(crate::Prim::If.name(), &[condition], &[Type::Tensor]);
        let then_block = graph.add_node_block(if_node);
        let else_block = graph.add_node_block(if_node);
        graph.add_block_output(then_block, x);
        graph.set_insert_point(InsertPoint::EndOf(else_block));
        let relu = graph.insert("aten::relu", &[x], &[Type::Tensor]);
        let relu_out = graph.node_output(relu, 0);
        graph.add_block_output(else_block, relu_out);
        graph.set_insert_point(InsertPoint::EndOf(graph.top_block()));
        let out = graph.node_output(if_node, 0);
        graph.register_output(out);
        verify(&graph).unwrap();
    }

    #[test]
    fn rejects_use_outside_scope_and_bad_arity() {
        let mut graph = Graph::new();
        let condition = graph.add_input(Type::Bool, Some("c"));
        let x = graph.add_input(Type::Tensor, Some("x"));
        let if_node = graph.insert(crate::Prim::If.name(), &[condition], &[Type::Tensor]);
        let then_block = graph.add_node_block(if_node);
        let else_block = graph.add_node_block(if_node);
        graph.set_insert_point(InsertPoint::EndOf(then_block));
        let relu = graph.insert("aten::relu", &[x], &[Type::Tensor]);
        let inner = graph.node_output(relu, 0);
        graph.add_block_output(then_block, inner);
        graph.add_block_output(else_block, x);
        graph.set_insert_point(InsertPoint::EndOf(graph.top_block()));
        // Using a value defined inside the branch outside it breaks scoping.
        graph.register_output(inner);
        let error = verify(&graph).unwrap_err();
        assert!(error.message.contains("outside its scope"), "{error}");

        let mut graph = Graph::new();
        let condition = graph.add_input(Type::Bool, None);
        let if_node = graph.insert(crate::Prim::If.name(), &[condition], &[Type::Int]);
        graph.add_node_block(if_node);
        graph.add_node_block(if_node);
        let error = verify(&graph).unwrap_err();
        assert!(
            error.message.contains("1 outputs but its block returns 0"),
            "{error}"
        );
    }

    #[test]
    fn rejects_loop_without_condition_output() {
        let mut graph = Graph::new();
        let n = graph.add_input(Type::Int, None);
        let truth = graph.insert_constant(Some(AttributeValue::Int(1)), Type::Bool);
        let loop_node = graph.insert(crate::Prim::Loop.name(), &[n, truth], &[]);
        let body = graph.add_node_block(loop_node);
        graph.add_block_parameter(body, Type::Int);
        let error = verify(&graph).unwrap_err();
        assert!(error.message.contains("(bool condition"), "{error}");
    }
}
