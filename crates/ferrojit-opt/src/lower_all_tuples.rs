//! Tuple lowering, PyTorch's `LowerAllTuples` (`_jit_pass_lower_all_tuples`): every tuple
//! that is built and taken apart in the graph becomes its elements.
//!
//! - `prim::TupleUnpack`, `prim::TupleIndex` (constant index, negative counts from the end)
//!   and `prim::TupleSlice` of a `prim::TupleConstruct` read the construct's inputs instead.
//! - Tuple graph inputs and block parameters that are used, and tuple outputs of `prim::If`,
//!   `prim::Loop` and the few operators PyTorch lets forward tuples (`aten::__getitem__`,
//!   `aten::format`, `prim::Uninitialized`, `prim::PythonOp`), become one value per element,
//!   a `prim::TupleConstruct` of them standing in for the tuple until its uses are lowered.
//! - Tuples passed to a loop, returned by a block or by the graph, or passed to a forwarding
//!   operator are passed element by element. Nested tuples are flattened all the way.
//!
//! Dead code elimination (PyTorch's, without alias analysis) then removes the constructs
//! nothing reads. The pass refuses, with PyTorch's messages, an unpack, index or slice of a
//! tuple that is not a construct (`prim::TupleUnpack not matched to tuple construct`), an
//! index that is not a constant (`tuple index with non-constant index`), a tuple passed to
//! a loop, block return or forwarding operator that is not a construct (`tuple use not
//! matched to tuple construct. Instead found: KIND`), and any node output still a tuple at
//! the end (`Couldn't lower all tuples.`: a tuple kept by an operator that does not forward
//! tuples, such as `prim::ListConstruct`).
//!
//! One deliberate difference: PyTorch gives the values it adds to a loop body's parameters
//! and to an If or Loop's outputs the type `Tensor` whatever the element type (its
//! `insertInput` / `insertOutput` default), which makes graphs the verifier rejects when the
//! elements are not tensors. Here they take the element's type; for tensor elements the
//! printed result is PyTorch's.

use ferrojit_ir::{AttributeValue, BlockId, Graph, InsertPoint, NodeId, Prim, Type, ValueId};

use crate::block_dead_code_elimination::eliminate_dead_code_in_block;
use crate::constant_insertion::constant_int;

/// The operators whose tuple inputs and outputs are flattened (PyTorch's `supported_ops`).
const FORWARDS_TUPLES: &[&str] = &[
    "prim::If",
    "prim::Loop",
    "prim::Uninitialized",
    "prim::TupleUnpack",
    "prim::TupleConstruct",
    "prim::TupleIndex",
    "prim::TupleSlice",
    "prim::Param",
    "prim::Return",
    "prim::PythonOp",
    "aten::format",
    "aten::__getitem__",
];

/// Runs the pass on `graph`; `Err` carries PyTorch's message for a graph it refuses.
pub fn lower_all_tuples(graph: &mut Graph) -> Result<(), String> {
    let top = graph.top_block();
    let saved_point = graph.insert_point();
    let lowered = lower_block(graph, top);
    graph.set_insert_point(saved_point);
    lowered?;
    eliminate_dead_code_in_block(graph, top, true)
        .map_err(|error| format!("lower_all_tuples: {error}"))?;
    ensure_no_tuples(graph, top)
}

fn edit(result: Result<(), ferrojit_ir::GraphEditError>) -> Result<(), String> {
    result.map_err(|error| format!("lower_all_tuples: {error}"))
}

/// The element types of a tuple type (a named tuple is a tuple too).
fn tuple_elements(ty: &Type) -> Option<Vec<Type>> {
    match ty {
        Type::Tuple(elements) => Some(elements.clone()),
        Type::NamedTuple(named) => Some(named.fields.iter().map(|(_, ty)| ty.clone()).collect()),
        _ => None,
    }
}

/// Moves the last of `count` positions to `index`: inserting at a position with the IR's
/// append-then-permute edits.
fn move_last_to(index: usize, count: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..count - 1).collect();
    order.insert(index, count - 1);
    order
}

fn insert_node_input(
    graph: &mut Graph,
    node: NodeId,
    index: usize,
    value: ValueId,
) -> Result<(), String> {
    graph.add_node_input(node, value);
    let count = graph.node_inputs(node).len();
    edit(graph.permute_node_inputs(node, &move_last_to(index, count)))
}

/// The node that produces `value`, when it is a `prim::TupleConstruct`.
fn tuple_construct(graph: &Graph, value: ValueId) -> Option<NodeId> {
    graph
        .producer(value)
        .filter(|&producer| graph.kind(producer).is_prim(Prim::TupleConstruct))
}

/// A new `prim::TupleConstruct` of `elements` (not yet linked in), typed by its inputs.
fn create_tuple(graph: &mut Graph, elements: &[ValueId]) -> NodeId {
    let types: Vec<Type> = elements
        .iter()
        .map(|&value| graph.value_type(value).clone())
        .collect();
    graph.create_node(Prim::TupleConstruct.name(), elements, &[Type::Tuple(types)])
}

fn link_before(graph: &mut Graph, node: NodeId, anchor: NodeId) {
    graph.set_insert_point(InsertPoint::Before(anchor));
    graph.insert_node(node);
}

fn lower_block(graph: &mut Graph, block: BlockId) -> Result<(), String> {
    // A block's parameters behave like the outputs of a node before its first node.
    let first = graph
        .block_nodes(block)
        .first()
        .copied()
        .unwrap_or_else(|| graph.block_return_node(block));
    flatten_outputs(graph, OutputsOf::Parameters(block), first)?;
    let mut cursor = graph.block_nodes(block).first().copied();
    while let Some(node) = cursor {
        // Constructs inserted after this node go before the next one, and are not visited.
        let next = graph.next_node(node);
        let insert_point = next.unwrap_or_else(|| graph.block_return_node(block));
        visit_node(graph, node, insert_point)?;
        cursor = next;
    }
    let return_node = graph.block_return_node(block);
    flatten_inputs(graph, return_node)
}

fn visit_node(graph: &mut Graph, node: NodeId, insert_point: NodeId) -> Result<(), String> {
    let kind = graph.kind(node).clone();
    if kind.is_prim(Prim::TupleConstruct) {
        // Constructs die once the unpacks that read them are replaced.
        return Ok(());
    }
    if kind.is_prim(Prim::TupleUnpack)
        || kind.is_prim(Prim::TupleIndex)
        || kind.is("prim::TupleSlice")
    {
        return remove_tuple_node(graph, node);
    }
    flatten_inputs(graph, node)?;
    for block in graph.node_blocks(node).to_vec() {
        lower_block(graph, block)?;
    }
    flatten_outputs(graph, OutputsOf::Node(node), insert_point)
}

/// Replaces the uses of an unpack, index or slice of a construct by the construct's inputs.
fn remove_tuple_node(graph: &mut Graph, node: NodeId) -> Result<(), String> {
    let kind = graph.kind(node).as_str().to_string();
    let Some(&tuple) = graph.node_inputs(node).first() else {
        return Err(format!("{kind} has no tuple input"));
    };
    let Some(construct) = tuple_construct(graph, tuple) else {
        return Err(format!("{kind} not matched to tuple construct"));
    };
    let elements = graph.node_inputs(construct).to_vec();
    if graph.kind(node).is_prim(Prim::TupleUnpack) {
        for (index, output) in graph.node_outputs(node).to_vec().into_iter().enumerate() {
            if let Some(&element) = elements.get(index) {
                graph.replace_all_uses_with(output, element);
            }
        }
    } else if graph.kind(node).is_prim(Prim::TupleIndex) {
        let index = graph
            .node_inputs(node)
            .get(1)
            .and_then(|&index| constant_int(graph, index))
            .ok_or_else(|| "tuple index with non-constant index".to_string())?;
        let length = tuple_elements(graph.value_type(graph.node_output(construct, 0)))
            .map_or(elements.len(), |types| types.len());
        let index = if index < 0 {
            index + length as i64
        } else {
            index
        };
        // An index out of range is left for the runtime to report, as in PyTorch.
        if let Some(&element) = usize::try_from(index).ok().and_then(|i| elements.get(i)) {
            let output = graph.node_output(node, 0);
            graph.replace_all_uses_with(output, element);
        }
    } else {
        let bound = |name: &str| match graph.attribute(node, name) {
            Some(AttributeValue::Int(value)) => Ok(*value),
            _ => Err(format!("prim::TupleSlice has no int attribute `{name}`")),
        };
        let (begin, end) = (bound("beg")?, bound("end")?);
        let slice = usize::try_from(begin)
            .ok()
            .zip(usize::try_from(end).ok())
            .filter(|&(begin, end)| begin <= end && end <= elements.len())
            .map(|(begin, end)| elements[begin..end].to_vec())
            .ok_or_else(|| {
                format!(
                    "prim::TupleSlice[beg={begin}, end={end}] is out of range for a tuple of {}",
                    elements.len()
                )
            })?;
        let sliced = create_tuple(graph, &slice);
        graph.copy_node_metadata(node, sliced);
        link_before(graph, sliced, node);
        let output = graph.node_output(node, 0);
        graph.replace_all_uses_with(output, graph.node_output(sliced, 0));
    }
    Ok(())
}

/// `op(a, tup, b)` becomes `op(a, t0, t1, b)`; a loop's carried tuple and a block's returned
/// tuple are flattened with what they connect to.
fn flatten_inputs(graph: &mut Graph, node: NodeId) -> Result<(), String> {
    let kind = graph.kind(node).as_str().to_string();
    let mut index = 0;
    while index < graph.node_inputs(node).len() {
        let input = graph.node_inputs(node)[index];
        let Some(elements) = tuple_elements(graph.value_type(input)) else {
            index += 1;
            continue;
        };
        let Some(construct) = tuple_construct(graph, input) else {
            return Err(format!(
                "tuple use not matched to tuple construct. Instead found: {kind}"
            ));
        };
        if !FORWARDS_TUPLES.contains(&kind.as_str()) {
            // PyTorch warns and leaves it; the check at the end refuses the graph.
            index += 1;
            continue;
        }
        let parts = graph.node_inputs(construct).to_vec();
        if parts.len() != elements.len() {
            return Err(format!(
                "a prim::TupleConstruct of {} values is typed as a tuple of {}",
                parts.len(),
                elements.len()
            ));
        }
        if kind == "prim::Loop" {
            flatten_tuple_in_loop_parameters(graph, node, index, &parts, &elements)?;
        } else if kind == "prim::Return" {
            flatten_tuple_in_block_return(graph, node, index, &parts, &elements)?;
        } else {
            for (offset, &part) in parts.iter().enumerate() {
                insert_node_input(graph, node, index + 1 + offset, part)?;
            }
            edit(graph.erase_node_input(node, index))?;
        }
        // No step: the flattened values may be tuples themselves.
    }
    Ok(())
}

/// A tuple passed to a loop as the carried input `index`: the loop gets its elements, the
/// body one parameter per element, and a construct at the start of the body stands in for
/// the old parameter.
fn flatten_tuple_in_loop_parameters(
    graph: &mut Graph,
    loop_node: NodeId,
    index: usize,
    parts: &[ValueId],
    elements: &[Type],
) -> Result<(), String> {
    let Some(&body) = graph.node_blocks(loop_node).first() else {
        return Err("lower_all_tuples: a prim::Loop without a body".to_string());
    };
    let old_parameter = graph.block_parameters(body)[index - 1];
    let construct = graph.create_node(
        Prim::TupleConstruct.name(),
        &[],
        &[graph.value_type(old_parameter).clone()],
    );
    graph.copy_node_metadata(loop_node, construct);
    match graph.block_nodes(body).first() {
        Some(&first) => link_before(graph, construct, first),
        None => {
            graph.set_insert_point(InsertPoint::EndOf(body));
            graph.insert_node(construct);
        }
    }
    for (offset, (&part, element)) in parts.iter().zip(elements).enumerate() {
        let parameter = graph.add_block_parameter(body, element.clone());
        let count = graph.block_parameters(body).len();
        edit(graph.permute_block_parameters(body, &move_last_to(index + offset, count)))?;
        graph.add_node_input(construct, parameter);
        insert_node_input(graph, loop_node, index + offset + 1, part)?;
    }
    graph.replace_all_uses_with(old_parameter, graph.node_output(construct, 0));
    graph.clear_debug_name(old_parameter);
    edit(graph.erase_block_parameter(body, index - 1))?;
    edit(graph.erase_node_input(loop_node, index))
}

/// A tuple returned by a block as output `index`: the block returns its elements, and the
/// If or Loop that owns the block outputs them, a construct after it standing in for the
/// old output (done once, for the first block of an If).
fn flatten_tuple_in_block_return(
    graph: &mut Graph,
    return_node: NodeId,
    index: usize,
    parts: &[ValueId],
    elements: &[Type],
) -> Result<(), String> {
    for (offset, &part) in parts.iter().enumerate() {
        insert_node_input(graph, return_node, index + offset + 1, part)?;
    }
    edit(graph.erase_node_input(return_node, index))?;
    let Some(block) = graph.node(return_node).owning_block else {
        return Ok(());
    };
    let Some(owner) = graph.block_owning_node(block) else {
        return Ok(());
    };
    let output_index = if graph.kind(owner).is_prim(Prim::Loop) {
        index - 1
    } else {
        index
    };
    let Some(&tuple_output) = graph.node_outputs(owner).get(output_index) else {
        return Err(format!(
            "lower_all_tuples: a block returns more values than `{}` outputs",
            graph.kind(owner)
        ));
    };
    if tuple_elements(graph.value_type(tuple_output)).is_none() {
        return Ok(());
    }
    let construct = graph.create_node(
        Prim::TupleConstruct.name(),
        &[],
        &[graph.value_type(tuple_output).clone()],
    );
    graph.copy_node_metadata(owner, construct);
    graph.move_after(construct, owner);
    for (offset, element) in elements.iter().enumerate() {
        graph.add_node_output(owner, element.clone());
        let count = graph.node_outputs(owner).len();
        edit(graph.permute_node_outputs(owner, &move_last_to(output_index + offset + 1, count)))?;
        let new_output = graph.node_output(owner, output_index + offset + 1);
        graph.add_node_input(construct, new_output);
    }
    graph.replace_all_uses_with(tuple_output, graph.node_output(construct, 0));
    graph.clear_debug_name(tuple_output);
    edit(graph.erase_node_output(owner, output_index))
}

/// Where flattened outputs live: a node's outputs or a block's parameters (PyTorch's
/// `prim::Param` node).
#[derive(Clone, Copy)]
enum OutputsOf {
    Node(NodeId),
    Parameters(BlockId),
}

impl OutputsOf {
    fn values(self, graph: &Graph) -> Vec<ValueId> {
        match self {
            OutputsOf::Node(node) => graph.node_outputs(node).to_vec(),
            OutputsOf::Parameters(block) => graph.block_parameters(block).to_vec(),
        }
    }

    fn kind(self, graph: &Graph) -> String {
        match self {
            OutputsOf::Node(node) => graph.kind(node).as_str().to_string(),
            OutputsOf::Parameters(_) => "prim::Param".to_string(),
        }
    }

    fn insert(self, graph: &mut Graph, index: usize, ty: Type) -> Result<(), String> {
        match self {
            OutputsOf::Node(node) => {
                graph.add_node_output(node, ty);
                let count = graph.node_outputs(node).len();
                edit(graph.permute_node_outputs(node, &move_last_to(index, count)))
            }
            OutputsOf::Parameters(block) => {
                graph.add_block_parameter(block, ty);
                let count = graph.block_parameters(block).len();
                edit(graph.permute_block_parameters(block, &move_last_to(index, count)))
            }
        }
    }

    fn erase(self, graph: &mut Graph, index: usize) -> Result<(), String> {
        match self {
            OutputsOf::Node(node) => edit(graph.erase_node_output(node, index)),
            OutputsOf::Parameters(block) => edit(graph.erase_block_parameter(block, index)),
        }
    }
}

/// `(a, tup, c)` outputs become `(a, t0, t1, c)`, with `tup = (t0, t1)` built before
/// `insert_point` (each new construct before the previous one, so nested ones come first).
fn flatten_outputs(
    graph: &mut Graph,
    outputs: OutputsOf,
    mut insert_point: NodeId,
) -> Result<(), String> {
    let forwards = FORWARDS_TUPLES.contains(&outputs.kind(graph).as_str());
    let mut index = 0;
    while index < outputs.values(graph).len() {
        let output = outputs.values(graph)[index];
        if graph.value_uses(output).is_empty() {
            index += 1;
            continue;
        }
        let Some(elements) = tuple_elements(graph.value_type(output)) else {
            index += 1;
            continue;
        };
        if !forwards {
            index += 1;
            continue;
        }
        for (offset, element) in elements.iter().enumerate() {
            outputs.insert(graph, index + 1 + offset, element.clone())?;
        }
        let parts = outputs.values(graph)[index + 1..index + 1 + elements.len()].to_vec();
        let construct = create_tuple(graph, &parts);
        if let OutputsOf::Node(node) = outputs {
            graph.copy_node_metadata(node, construct);
        }
        link_before(graph, construct, insert_point);
        insert_point = construct;
        graph.replace_all_uses_with(output, graph.node_output(construct, 0));
        graph.clear_debug_name(output);
        outputs.erase(graph, index)?;
    }
    Ok(())
}

/// PyTorch's final check: no node output (at any depth) is a tuple.
fn ensure_no_tuples(graph: &Graph, block: BlockId) -> Result<(), String> {
    for node in graph.block_nodes(block) {
        for &nested in graph.node_blocks(node) {
            ensure_no_tuples(graph, nested)?;
        }
        if graph
            .node_outputs(node)
            .iter()
            .any(|&output| tuple_elements(graph.value_type(output)).is_some())
        {
            return Err("Couldn't lower all tuples.".to_string());
        }
    }
    Ok(())
}
