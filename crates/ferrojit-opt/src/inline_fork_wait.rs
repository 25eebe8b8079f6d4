//! Inlining of forks, PyTorch's `InlineForkWait` (`_jit_pass_inline_fork_wait`): the body of
//! each `prim::fork` (its `Subgraph`) is copied in place of the fork, and each `aten::wait` on
//! that fork's future is replaced by the copied body's result, so the forked work runs inline,
//! in order. A wait on a future that no fork in the graph made (an `rpc_async`, a future
//! passed in) stays, since its producer may have side effects.
//!
//! As in PyTorch, forks are inlined one block at a time (the block's forks, then its waits,
//! then the nested blocks), and every use of a fork's future left after its waits are gone
//! reads the body's result instead.

use std::collections::HashMap;

use ferrojit_ir::{AttributeValue, BlockId, Graph, InsertPoint, Prim, ValueId};

/// Runs the pass on `graph`. Fails on a fork with no `Subgraph` or whose body cannot be
/// copied (a malformed graph the verifier would refuse).
pub fn inline_fork_wait(graph: &mut Graph) -> Result<(), String> {
    let mut future_results = HashMap::new();
    let top = graph.top_block();
    inline_block(graph, top, &mut future_results)?;
    graph.set_insert_point(InsertPoint::EndOf(top));
    Ok(())
}

fn inline_block(
    graph: &mut Graph,
    block: BlockId,
    future_results: &mut HashMap<ValueId, ValueId>,
) -> Result<(), String> {
    // The block's forks: each body copied right before its fork.
    for node in graph.block_nodes(block) {
        if !graph.kind(node).is_prim(Prim::Fork) {
            continue;
        }
        let Some(AttributeValue::Graph(body)) = graph.attribute(node, "Subgraph").cloned() else {
            return Err("inline_fork_wait: a prim::fork has no Subgraph".to_string());
        };
        let arguments = graph.node_inputs(node).to_vec();
        if arguments.len() != body.inputs().len() {
            return Err(format!(
                "inline_fork_wait: a prim::fork passes {} values to a body that takes {}",
                arguments.len(),
                body.inputs().len()
            ));
        }
        let mut value_map: HashMap<ValueId, ValueId> =
            body.inputs().iter().copied().zip(arguments).collect();
        graph.set_insert_point(InsertPoint::Before(node));
        let results = graph
            .copy_block_from(&body, body.top_block(), &mut value_map)
            .map_err(|error| format!("inline_fork_wait: {error}"))?;
        let (Some(&future), Some(&result)) = (graph.node_outputs(node).first(), results.first())
        else {
            return Err("inline_fork_wait: a prim::fork has no result".to_string());
        };
        future_results.insert(future, result);
    }
    // Then, last to first, the waits on those futures and the forks themselves.
    for node in graph.block_nodes(block).into_iter().rev() {
        let kind = graph.kind(node);
        let is_fork = kind.is_prim(Prim::Fork);
        if !is_fork && !kind.is("aten::wait") {
            continue;
        }
        let key = if is_fork {
            graph.node_outputs(node).first().copied()
        } else {
            graph.node_inputs(node).first().copied()
        };
        let Some(&result) = key.and_then(|key| future_results.get(&key)) else {
            continue;
        };
        // Text IR may give a wait no output; such a node is left alone.
        let Some(&output) = graph.node_outputs(node).first() else {
            continue;
        };
        graph.replace_all_uses_with(output, result);
        let destroyed = graph.destroy_node(node);
        debug_assert!(destroyed, "a replaced fork or wait has no uses left");
    }
    for node in graph.block_nodes(block) {
        for nested in graph.node_blocks(node).to_vec() {
            inline_block(graph, nested, future_results)?;
        }
    }
    Ok(())
}
