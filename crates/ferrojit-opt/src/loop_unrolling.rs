//! Loop unrolling, PyTorch's `UnrollLoops` (`_jit_pass_loop_unrolling`).
//!
//! Only for-loops are touched: a `prim::Loop` whose initial condition and continue condition
//! are both the constant True. Its body must be small: at most 32 executed nodes, counting
//! nested blocks and one per block for its return, and not counting constants. Loops nest:
//! inner loops are unrolled first, so an outer body is measured after its inner loops grew.
//!
//! - A loop that reads its iteration counter gets a carried counter instead (initial value
//!   0, incremented with `aten::add` at the end of the body), so copies of the body can share
//!   it.
//! - A constant trip count below 64 unrolls fully: the body is repeated that many times and
//!   the copies replace the loop (zero times leaves the initial values).
//! - Any other trip count unrolls by 8: the body is repeated 8 times in the loop, which now
//!   runs `__round_to_zero_floordiv(n, 8)` times, and a copy of the original loop (the
//!   epilogue) runs the remaining `n - (n // 8) * 8` iterations.
//!
//! Side effects do not stop unrolling (the copies keep them in order), exactly as in PyTorch.
//! Each repeated body is cleaned by dead code elimination without alias analysis, and the
//! graph by the alias-aware one when anything changed.
//!
//! The value numbers, names and node order of the result are PyTorch's: every value is
//! created in the order PyTorch creates it (including one number PyTorch's operator matching
//! uses up when it inserts the `aten::mul`), and copies take names as `Value::copyMetadata`
//! does, the original being renamed `name.N`.

use std::collections::HashMap;

use ferrojit_ir::{AttributeValue, BlockId, Graph, InsertPoint, NodeId, Prim, Type, ValueId};

use crate::block_dead_code_elimination::{
    destroy_node_freeing_names, eliminate_dead_code_in_block,
};
use crate::constant_insertion::constant_int;
use crate::dead_code_elimination::eliminate_dead_code_with_alias_db;

/// How many times a partially unrolled body is repeated.
const UNROLL_FACTOR: i64 = 8;
/// The largest body (executed nodes, see the module comment) that is unrolled.
const MAX_BODY_SIZE: i64 = 32;
/// Constant trip counts below this unroll fully.
const MAX_BODY_REPEATS: i64 = 64;

/// Runs the pass on `graph`.
pub fn unroll_loops(graph: &mut Graph) -> Result<(), String> {
    let top = graph.top_block();
    let saved_point = graph.insert_point();
    let changed = unroll_loops_in_block(graph, top);
    graph.set_insert_point(saved_point);
    if changed? {
        eliminate_dead_code_with_alias_db(graph)
            .map_err(|error| format!("loop_unrolling: {error}"))?;
    }
    Ok(())
}

fn unroll_loops_in_block(graph: &mut Graph, block: BlockId) -> Result<bool, String> {
    let mut changed = false;
    let mut cursor = graph.block_nodes(block).first().copied();
    while let Some(node) = cursor {
        // Unrolling inserts nodes around this one and may destroy it: take the next first.
        cursor = graph.next_node(node);
        for nested in graph.node_blocks(node).to_vec() {
            changed |= unroll_loops_in_block(graph, nested)?;
        }
        if !is_for_loop(graph, node) || !is_small_block(graph, graph.node_blocks(node)[0]) {
            continue;
        }
        unroll(graph, node).map_err(|error| format!("loop_unrolling: {error}"))?;
        changed = true;
    }
    Ok(changed)
}

fn is_true_constant(graph: &Graph, value: ValueId) -> bool {
    let Some(producer) = graph.producer(value) else {
        return false;
    };
    graph.kind(producer).is_prim(Prim::Constant)
        && graph.value_type(value) == &Type::Bool
        && matches!(graph.attribute(producer, "value"), Some(AttributeValue::Int(v)) if *v != 0)
}

fn is_for_loop(graph: &Graph, node: NodeId) -> bool {
    if !graph.kind(node).is_prim(Prim::Loop) {
        return false;
    }
    let (Some(&start_condition), Some(&body)) = (
        graph.node_inputs(node).get(1),
        graph.node_blocks(node).first(),
    ) else {
        return false;
    };
    let Some(&continue_condition) = graph.block_outputs(body).first() else {
        return false;
    };
    is_true_constant(graph, start_condition) && is_true_constant(graph, continue_condition)
}

/// PyTorch's `limitedBlockSize`: nodes that execute (not constants or profiling nodes),
/// nested blocks included, plus one for each block's return.
fn block_size(graph: &Graph, block: BlockId) -> i64 {
    let mut size = 1;
    for node in graph.block_nodes(block) {
        for &nested in graph.node_blocks(node) {
            size += block_size(graph, nested);
        }
        let kind = graph.kind(node);
        let not_executed = kind.is_prim(Prim::Constant)
            || kind.is("prim::profile")
            || kind.is("prim::profile_ivalue");
        if !not_executed {
            size += 1;
        }
        if size > MAX_BODY_SIZE {
            return size;
        }
    }
    size
}

fn is_small_block(graph: &Graph, block: BlockId) -> bool {
    block_size(graph, block) <= MAX_BODY_SIZE
}

fn unroll(graph: &mut Graph, loop_node: NodeId) -> Result<(), String> {
    let body = graph.node_blocks(loop_node)[0];
    if !graph.value_uses(graph.block_parameters(body)[0]).is_empty() {
        replace_loop_counter(graph, loop_node)?;
    }
    let trip_count = graph.node_inputs(loop_node)[0];
    if let Some(count) = constant_int(graph, trip_count).filter(|&n| n < MAX_BODY_REPEATS) {
        // A negative count runs the body zero times (PyTorch would loop forever here).
        let times = usize::try_from(count).unwrap_or(0);
        let unrolled = graph.add_node_block(loop_node);
        repeat_body(graph, body, times, unrolled)?;
        graph
            .erase_node_block(loop_node, 0)
            .map_err(|error| error.to_string())?;
        inline_body(graph, loop_node);
        return Ok(());
    }

    graph.set_insert_point(InsertPoint::Before(loop_node));
    // The copy of the loop made before unrolling becomes the epilogue; it starts from the
    // unrolled loop's results.
    let epilogue = clone_node(graph, loop_node, &mut HashMap::new());
    graph.insert_node(epilogue);
    graph.move_after(epilogue, loop_node);
    for index in 0..graph.node_outputs(loop_node).len() {
        let output = graph.node_output(loop_node, index);
        graph.replace_all_uses_with(output, graph.node_output(epilogue, index));
        graph.replace_node_input(epilogue, index + 2, output);
    }
    let unrolled = graph.add_node_block(loop_node);
    repeat_body(graph, body, UNROLL_FACTOR as usize, unrolled)?;
    graph
        .erase_node_block(loop_node, 0)
        .map_err(|error| error.to_string())?;

    graph.set_insert_point(InsertPoint::Before(loop_node));
    let factor = insert_int_constant(graph, UNROLL_FACTOR);
    let unrolled_count = insert_int_operator(
        graph,
        "aten::__round_to_zero_floordiv",
        &[trip_count, factor],
    );
    graph.replace_node_input(loop_node, 0, unrolled_count);
    // PyTorch's operator matching for `aten::mul` materialises the constant once for an
    // overload that then fails to match: that constant is dead, but its number is used up.
    let discarded = graph.create_node(Prim::Constant.name(), &[], &[Type::Int]);
    graph.destroy_node(discarded);
    let factor_again = insert_int_constant(graph, UNROLL_FACTOR);
    let unrolled_iterations =
        insert_int_operator(graph, "aten::mul", &[unrolled_count, factor_again]);
    let remainder = insert_int_operator(graph, "aten::sub", &[trip_count, unrolled_iterations]);
    graph.replace_node_input(epilogue, 0, remainder);
    Ok(())
}

fn insert_int_constant(graph: &mut Graph, number: i64) -> ValueId {
    graph.insert_constant(Some(AttributeValue::Int(number)), Type::Int)
}

fn insert_int_operator(graph: &mut Graph, kind: &str, inputs: &[ValueId]) -> ValueId {
    let node = graph.insert(kind, inputs, &[Type::Int]);
    graph.node_output(node, 0)
}

/// Moves the last of `count` positions to `index` (for inserting at a position with the
/// IR's append-then-permute edits).
fn move_last_to(index: usize, count: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..count - 1).collect();
    order.insert(index, count - 1);
    order
}

/// Replaces the body's iteration counter with a carried `int` that starts at 0 and is
/// incremented at the end of the body.
fn replace_loop_counter(graph: &mut Graph, loop_node: NodeId) -> Result<(), String> {
    let body = graph.node_blocks(loop_node)[0];
    graph.set_insert_point(InsertPoint::Before(loop_node));
    let initial = insert_int_constant(graph, 0);
    graph.add_node_input(loop_node, initial);
    let inputs = graph.node_inputs(loop_node).len();
    let edit = |result: Result<(), ferrojit_ir::GraphEditError>| result.map_err(|e| e.to_string());
    edit(graph.permute_node_inputs(loop_node, &move_last_to(2, inputs)))?;
    graph.add_node_output(loop_node, Type::Int);
    let outputs = graph.node_outputs(loop_node).len();
    edit(graph.permute_node_outputs(loop_node, &move_last_to(0, outputs)))?;
    let counter = graph.add_block_parameter(body, Type::Int);
    let parameters = graph.block_parameters(body).len();
    edit(graph.permute_block_parameters(body, &move_last_to(1, parameters)))?;
    let builtin_counter = graph.block_parameters(body)[0];
    graph.replace_all_uses_with(builtin_counter, counter);
    graph.set_insert_point(InsertPoint::EndOf(body));
    let one = insert_int_constant(graph, 1);
    let next = insert_int_operator(graph, "aten::add", &[counter, one]);
    graph.add_block_output(body, next);
    let body_outputs = graph.block_outputs(body).len();
    edit(graph.permute_block_outputs(body, &move_last_to(1, body_outputs)))?;
    graph.set_insert_point(InsertPoint::Before(loop_node));
    Ok(())
}

/// Fills `destination` (a new block of the loop) with `times` copies of `body`, each
/// reading the previous one's carried values, then removes what the copies left dead.
fn repeat_body(
    graph: &mut Graph,
    body: BlockId,
    times: usize,
    destination: BlockId,
) -> Result<(), String> {
    let saved_point = graph.insert_point();
    graph.set_insert_point(InsertPoint::EndOf(destination));
    for parameter in graph.block_parameters(body).to_vec() {
        let copy = graph.add_block_parameter(destination, graph.value_type(parameter).clone());
        copy_name(graph, parameter, copy);
    }
    let mut carried = graph.block_parameters(destination).to_vec();
    let builtin_counter = graph.block_parameters(body)[0];
    for _ in 0..times {
        // The counter was replaced by a carried one when the body reads it, so the copies
        // may all name the original (unused) one.
        carried[0] = builtin_counter;
        carried = insert_block_copy(graph, body, &carried);
    }
    for value in carried {
        graph.add_block_output(destination, value);
    }
    graph.set_insert_point(saved_point);
    eliminate_dead_code_in_block(graph, destination, false).map_err(|error| error.to_string())
}

/// Inserts a copy of `body`'s nodes at the insertion point, its parameters read as `inputs`;
/// returns the copy's outputs.
fn insert_block_copy(graph: &mut Graph, body: BlockId, inputs: &[ValueId]) -> Vec<ValueId> {
    let mut value_map: HashMap<ValueId, ValueId> = graph
        .block_parameters(body)
        .iter()
        .copied()
        .zip(inputs.iter().copied())
        .collect();
    for node in graph.block_nodes(body) {
        let copy = clone_node(graph, node, &mut value_map);
        graph.insert_node(copy);
    }
    graph
        .block_outputs(body)
        .iter()
        .map(|value| mapped(&value_map, *value))
        .collect()
}

/// Replaces a loop known to run exactly once by a copy of its body before it.
fn inline_body(graph: &mut Graph, loop_node: NodeId) {
    let body = graph.node_blocks(loop_node)[0];
    graph.set_insert_point(InsertPoint::Before(loop_node));
    let parameters = graph.block_parameters(body).to_vec();
    let inputs = graph.node_inputs(loop_node).to_vec();
    let mut value_map: HashMap<ValueId, ValueId> = HashMap::new();
    // The loop's inputs start with (trip count, condition); its body's with the counter.
    for (&parameter, &input) in parameters.iter().skip(1).zip(inputs.iter().skip(2)) {
        value_map.insert(parameter, input);
    }
    for node in graph.block_nodes(body) {
        let copy = clone_node(graph, node, &mut value_map);
        graph.insert_node(copy);
    }
    let body_outputs = graph.block_outputs(body).to_vec();
    for index in 0..graph.node_outputs(loop_node).len() {
        let output = graph.node_output(loop_node, index);
        if let Some(&inner) = body_outputs.get(index + 1) {
            graph.replace_all_uses_with(output, mapped(&value_map, inner));
        }
    }
    let destroyed = destroy_node_freeing_names(graph, loop_node);
    debug_assert!(destroyed, "every use of the loop's outputs was replaced");
}

fn mapped(value_map: &HashMap<ValueId, ValueId>, value: ValueId) -> ValueId {
    value_map.get(&value).copied().unwrap_or(value)
}

/// PyTorch's `Value::copyMetadata` for names: the copy takes the name, and the original is
/// renamed `name.N`.
fn copy_name(graph: &mut Graph, from: ValueId, to: ValueId) {
    if let Some(name) = graph.debug_name(from).map(str::to_string) {
        graph.set_debug_name(to, &name);
    }
}

/// PyTorch's `Graph::createClone`: a new, unlinked node like `node`, its inputs mapped
/// through `value_map` (values not in it map to themselves), its blocks copied. New values
/// are created in PyTorch's order (outputs, then each block's parameters and nodes).
pub(crate) fn clone_node(
    graph: &mut Graph,
    node: NodeId,
    value_map: &mut HashMap<ValueId, ValueId>,
) -> NodeId {
    let kind = graph.kind(node).as_str().to_string();
    let copy = graph.create_node(&kind, &[], &[]);
    for output in graph.node_outputs(node).to_vec() {
        let new_output = graph.add_node_output(copy, graph.value_type(output).clone());
        copy_name(graph, output, new_output);
        value_map.insert(output, new_output);
    }
    let data = graph.node(node).clone();
    for (name, value) in &data.attributes {
        graph.set_attribute(copy, name, value.clone());
    }
    graph.set_node_schema(copy, data.schema.clone());
    graph.copy_node_metadata(node, copy);
    for &input in &data.inputs {
        graph.add_node_input(copy, mapped(value_map, input));
    }
    for &block in &data.blocks {
        let new_block = graph.add_node_block(copy);
        clone_block_into(graph, block, new_block, value_map);
    }
    copy
}

/// PyTorch's `Block::cloneFrom`. Nodes' outputs take their names twice (once in
/// `createClone`, once here), as in PyTorch, which shows in the `.N` suffixes.
fn clone_block_into(
    graph: &mut Graph,
    source: BlockId,
    destination: BlockId,
    value_map: &mut HashMap<ValueId, ValueId>,
) {
    for parameter in graph.block_parameters(source).to_vec() {
        let copy = graph.add_block_parameter(destination, graph.value_type(parameter).clone());
        copy_name(graph, parameter, copy);
        value_map.insert(parameter, copy);
    }
    for node in graph.block_nodes(source) {
        let copy = clone_node(graph, node, value_map);
        let saved_point = graph.insert_point();
        graph.set_insert_point(InsertPoint::EndOf(destination));
        graph.insert_node(copy);
        graph.set_insert_point(saved_point);
        let outputs = graph.node_outputs(node).to_vec();
        let copies = graph.node_outputs(copy).to_vec();
        for (output, output_copy) in outputs.into_iter().zip(copies) {
            copy_name(graph, output, output_copy);
        }
    }
    for output in graph.block_outputs(source).to_vec() {
        let copy = mapped(value_map, output);
        graph.add_block_output(destination, copy);
    }
}
