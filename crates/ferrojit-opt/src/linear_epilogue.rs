//! The `linear_epilogue` pass: `aten::linear` followed by a fusible epilogue chain (an
//! activation, a residual `aten::add` before or after it) becomes one
//! `ferrojit::linear_epilogue` node, which runs ferrojit-tensor's packed GEMM with the weight
//! packed once (cached per weight storage and generation) and the epilogue applied to each
//! output tile.
//!
//! The chain is `linear → [add residual] → [activation] → [add residual]` with at most one
//! add, each intermediate used only by the next node. The fused node takes the place of the
//! chain's last node, so the linear's work moves later: the pass refuses when a node in
//! between may write to memory the linear reads (AliasDb), as PyTorch's fusers refuse to move
//! a node across a write to its inputs. The operator checks its operands at run time and runs
//! the unfused operators for anything the kernel does not take, so no type guard is needed.
//! The packed product sums in another order than the unfused one: results agree within float
//! tolerance, not bitwise. Off with `FERROJIT_FUSER=off`, like the fuser.

use ferrojit_ir::{AttributeValue, BlockId, Graph, InsertPoint, NodeId, Type, ValueId};
use ferrojit_runtime::IValue;

use crate::alias_analysis::{attach_registry_schemas, AliasDb};
use crate::constant_insertion::constant_value;

/// The pass as registered: [`fuse_linear_epilogues`] unless `FERROJIT_FUSER=off`.
pub fn linear_epilogue_pass(graph: &mut Graph) -> Result<(), String> {
    if crate::fuser::fuser_enabled_by_default() {
        fuse_linear_epilogues(graph)?;
    }
    Ok(())
}

/// Rewrites every fusible chain (in every block); returns how many it rewrote.
pub fn fuse_linear_epilogues(graph: &mut Graph) -> Result<usize, String> {
    attach_registry_schemas(graph, ferrojit_runtime::OperatorRegistry::global());
    let mut fused = 0;
    // Chains are found against one alias analysis, then rewritten; rewriting one chain never
    // touches the nodes of another (each node belongs to at most one chain).
    let chains = {
        let alias_db = AliasDb::new(graph);
        let mut chains = Vec::new();
        collect_chains(graph, &alias_db, graph.top_block(), &mut chains);
        chains
    };
    // A later chain may read what an earlier one computed (its input, or its residual, is
    // the earlier chain's result): follow each rewritten result to its replacement.
    let mut replaced: std::collections::HashMap<ValueId, ValueId> = Default::default();
    for mut chain in chains {
        let follow = |v: ValueId| replaced.get(&v).copied().unwrap_or(v);
        chain.input = follow(chain.input);
        chain.weight = follow(chain.weight);
        chain.bias = follow(chain.bias);
        chain.residual = chain.residual.map(follow);
        let (old, new) = rewrite(graph, &chain);
        replaced.insert(old, new);
        fused += 1;
    }
    let top = graph.top_block();
    graph.set_insert_point(InsertPoint::EndOf(top));
    Ok(fused)
}

/// One chain to fuse.
struct Chain {
    /// The linear, then the epilogue nodes in order.
    nodes: Vec<NodeId>,
    input: ValueId,
    weight: ValueId,
    bias: ValueId,
    activation: &'static str,
    residual: Option<ValueId>,
    residual_after_activation: bool,
}

fn collect_chains(graph: &Graph, alias_db: &AliasDb, block: BlockId, out: &mut Vec<Chain>) {
    for node in graph.block_nodes(block) {
        for &nested in graph.node_blocks(node) {
            collect_chains(graph, alias_db, nested, out);
        }
        if let Some(chain) = chain_at(graph, alias_db, node) {
            out.push(chain);
        }
    }
}

/// The activation a node computes on its first input, if it is one the kernel has.
fn activation_of(graph: &Graph, node: NodeId) -> Option<&'static str> {
    let kind = graph.kind(node).as_str();
    let inputs = graph.node_inputs(node);
    match (kind, inputs.len()) {
        ("aten::relu", 1) => Some("relu"),
        ("aten::silu", 1) => Some("silu"),
        ("aten::sigmoid", 1) => Some("sigmoid"),
        ("aten::hardswish", 1) => Some("hardswish"),
        ("aten::gelu", 1) => Some("gelu"),
        ("aten::gelu", 2) => match constant_value(graph, inputs[1]) {
            Some(IValue::Str(s)) if &*s == "none" => Some("gelu"),
            Some(IValue::Str(s)) if &*s == "tanh" => Some("gelu_tanh"),
            _ => None,
        },
        _ => None,
    }
}

/// For `aten::add(a, b, 1)` with `a` or `b` being `value` and the other a tensor: the other.
fn residual_of(graph: &Graph, node: NodeId, value: ValueId) -> Option<ValueId> {
    if !graph.kind(node).is("aten::add") {
        return None;
    }
    let [a, b, alpha] = graph.node_inputs(node)[..] else {
        return None;
    };
    if !matches!(constant_value(graph, alpha), Some(IValue::Int(1))) {
        return None;
    }
    let other = if a == value && b != value {
        b
    } else if b == value && a != value {
        a
    } else {
        return None;
    };
    graph.value_type(other).is_tensor().then_some(other)
}

/// The only node using `value`, if it has exactly one use.
fn single_user(graph: &Graph, value: ValueId) -> Option<NodeId> {
    match graph.value_uses(value) {
        [only] => Some(only.node),
        _ => None,
    }
}

fn chain_at(graph: &Graph, alias_db: &AliasDb, linear: NodeId) -> Option<Chain> {
    if !graph.kind(linear).is("aten::linear") || graph.node_outputs(linear).len() != 1 {
        return None;
    }
    let [input, weight, bias] = graph.node_inputs(linear)[..] else {
        return None;
    };
    let mut chain = Chain {
        nodes: vec![linear],
        input,
        weight,
        bias,
        activation: "none",
        residual: None,
        residual_after_activation: false,
    };
    let mut current = graph.node_output(linear, 0);
    // The nodes after the linear in its block, up to the chain's end.
    let mut between = Vec::new();
    let mut cursor = graph.next_node(linear);
    while let Some(user) = single_user(graph, current) {
        let step = if chain.activation == "none" {
            activation_of(graph, user).map(|a| (Some(a), None))
        } else {
            None
        };
        let step = step.or_else(|| {
            if chain.residual.is_some() {
                return None;
            }
            residual_of(graph, user, current).map(|r| (None, Some(r)))
        });
        let Some((activation, residual)) = step else {
            break;
        };
        // The user must come later in the same block.
        let mut walked = Vec::new();
        loop {
            match cursor {
                Some(node) if node == user => break,
                Some(node) => {
                    walked.push(node);
                    cursor = graph.next_node(node);
                }
                None => return finish(graph, alias_db, chain, &between),
            }
        }
        cursor = graph.next_node(user);
        between.extend(walked);
        if let Some(a) = activation {
            chain.activation = a;
        }
        if let Some(r) = residual {
            chain.residual = Some(r);
            chain.residual_after_activation = chain.activation != "none";
        }
        chain.nodes.push(user);
        if graph.node_outputs(user).len() != 1 {
            return None;
        }
        current = graph.node_output(user, 0);
    }
    finish(graph, alias_db, chain, &between)
}

/// The chain if it has an epilogue and nothing between its nodes may write what the linear
/// reads (the linear runs at the chain's end once fused).
fn finish(graph: &Graph, alias_db: &AliasDb, chain: Chain, between: &[NodeId]) -> Option<Chain> {
    if chain.nodes.len() < 2 {
        return None;
    }
    let read = [chain.input, chain.weight, chain.bias];
    let last = *chain.nodes.last().expect("chain has nodes");
    for &node in between {
        // Nodes after the last chain node were walked only if the chain ended early; only
        // those before it matter.
        if node == last {
            break;
        }
        if alias_db.writes_to_alias(graph, node, &read) || alias_db.writes_to_wildcard(node) {
            return None;
        }
    }
    Some(chain)
}

/// Replaces the chain by one fused node; returns the chain's old result and the new one.
fn rewrite(graph: &mut Graph, chain: &Chain) -> (ValueId, ValueId) {
    let last = *chain.nodes.last().expect("chain has nodes");
    graph.set_insert_point(InsertPoint::Before(last));
    let activation = graph.insert_constant(
        Some(AttributeValue::Str(chain.activation.to_string())),
        Type::Str,
    );
    let residual = match chain.residual {
        Some(r) => r,
        None => graph.insert_constant(None, Type::NoneType),
    };
    let after = graph.insert_constant(
        Some(AttributeValue::Int(i64::from(
            chain.residual_after_activation,
        ))),
        Type::Bool,
    );
    let output = graph.node_output(last, 0);
    let output_type = graph.value_type(output).clone();
    let fused = graph.insert(
        "ferrojit::linear_epilogue",
        &[
            chain.input,
            chain.weight,
            chain.bias,
            activation,
            residual,
            after,
        ],
        &[output_type],
    );
    let result = graph.node_output(fused, 0);
    if let Some(name) = graph.debug_name(output).map(str::to_string) {
        graph.set_debug_name(result, &name);
    }
    graph.replace_all_uses_with(output, result);
    for &node in chain.nodes.iter().rev() {
        graph.destroy_node(node);
    }
    (output, result)
}
