//! The `linear_epilogue` pass: `aten::linear` or a convolution followed by a fusible
//! epilogue chain (an activation, a residual `aten::add` before or after it) becomes one
//! `ferrojit::linear_epilogue` or `ferrojit::conv_epilogue` node, which runs
//! ferrojit-tensor's packed GEMM with the weight packed once (cached per weight storage and
//! generation) and the epilogue applied to each output tile.
//!
//! The chain is `head → [add residual] → [activation] → [add residual]` with at most one
//! add, each intermediate used only by the next node. The head is `aten::linear`,
//! `aten::conv1d/2d/3d` with explicit padding, or a non-transposed `aten::convolution` /
//! `aten::_convolution` (what a trace records). The epilogue nodes may be the in-place forms
//! (`relu_`, `add_` on the chain's value, as torchvision's ResNet writes them): the value
//! they write is the head's fresh result, used by nothing else, so computing it into a new
//! tensor instead changes nothing anyone can see. The fused node takes the place of the
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
        let mut claimed = std::collections::HashSet::new();
        collect_chains(
            graph,
            &alias_db,
            graph.top_block(),
            &mut claimed,
            &mut chains,
        );
        chains
    };
    // A later chain may read what an earlier one computed (its input, or its residual, is
    // the earlier chain's result): follow each rewritten result to its replacement.
    let mut replaced: std::collections::HashMap<ValueId, ValueId> = Default::default();
    for mut chain in chains {
        let follow = |v: ValueId| replaced.get(&v).copied().unwrap_or(v);
        for argument in &mut chain.head_arguments {
            *argument = follow(*argument);
        }
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
    /// The head (linear or convolution), then the epilogue nodes in order.
    nodes: Vec<NodeId>,
    /// The fused operator.
    fused_kind: &'static str,
    /// The fused node's leading arguments: the head's (input, weight, bias and, for a
    /// convolution, stride, padding, dilation and groups).
    head_arguments: Vec<ValueId>,
    activation: &'static str,
    residual: Option<ValueId>,
    residual_after_activation: bool,
}

/// The fused operator and its leading arguments for a head node, if it is one.
fn head_of(graph: &Graph, node: NodeId) -> Option<(&'static str, Vec<ValueId>)> {
    let kind = graph.kind(node).as_str();
    let inputs = graph.node_inputs(node);
    let not_transposed = |v: ValueId| matches!(constant_value(graph, v), Some(IValue::Bool(false)));
    match (kind, inputs.len()) {
        ("aten::linear", 3) => Some(("ferrojit::linear_epilogue", inputs.to_vec())),
        ("aten::conv1d" | "aten::conv2d" | "aten::conv3d", 7)
            if !matches!(graph.value_type(inputs[4]), Type::Str) =>
        {
            Some(("ferrojit::conv_epilogue", inputs.to_vec()))
        }
        // convolution(input, weight, bias, stride, padding, dilation, transposed,
        // output_padding, groups[, benchmark, deterministic, cudnn_enabled, allow_tf32]).
        ("aten::convolution", 9) | ("aten::_convolution", 13) if not_transposed(inputs[6]) => {
            let mut arguments = inputs[..6].to_vec();
            arguments.push(inputs[8]);
            Some(("ferrojit::conv_epilogue", arguments))
        }
        _ => None,
    }
}

/// The chains of `block` and its nested blocks, each node in at most one chain. Two heads can
/// reach the same epilogue node: in `linear(x, w_ih, b_ih) + linear(h, w_hh, b_hh)` (an
/// RNN cell written out) each linear sees the add as its epilogue with the other linear as
/// the residual. Only the first such chain is kept; fusing both would destroy the shared
/// add twice and leave the second fused node reading a value that no longer exists.
fn collect_chains(
    graph: &Graph,
    alias_db: &AliasDb,
    block: BlockId,
    claimed: &mut std::collections::HashSet<NodeId>,
    out: &mut Vec<Chain>,
) {
    for node in graph.block_nodes(block) {
        for &nested in graph.node_blocks(node) {
            collect_chains(graph, alias_db, nested, claimed, out);
        }
        if let Some(chain) = chain_at(graph, alias_db, node) {
            if chain.nodes.iter().any(|node| claimed.contains(node)) {
                continue;
            }
            claimed.extend(chain.nodes.iter().copied());
            out.push(chain);
        }
    }
}

/// The activation a node computes on its first input, if it is one the kernel has.
fn activation_of(graph: &Graph, node: NodeId) -> Option<&'static str> {
    let kind = graph.kind(node).as_str();
    let inputs = graph.node_inputs(node);
    match (kind, inputs.len()) {
        ("aten::relu" | "aten::relu_", 1) => Some("relu"),
        ("aten::silu" | "aten::silu_", 1) => Some("silu"),
        ("aten::sigmoid" | "aten::sigmoid_", 1) => Some("sigmoid"),
        ("aten::hardswish" | "aten::hardswish_", 1) => Some("hardswish"),
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
/// For the in-place `aten::add_(a, b, 1)`, only `a` may be `value` (the add writes `a`; with
/// `value` second it would write the residual).
fn residual_of(graph: &Graph, node: NodeId, value: ValueId) -> Option<ValueId> {
    let in_place = graph.kind(node).is("aten::add_");
    if !graph.kind(node).is("aten::add") && !in_place {
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
    } else if b == value && a != value && !in_place {
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
    if graph.node_outputs(linear).len() != 1 {
        return None;
    }
    let (fused_kind, head_arguments) = head_of(graph, linear)?;
    let mut chain = Chain {
        nodes: vec![linear],
        fused_kind,
        head_arguments,
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
    let read = &chain.head_arguments;
    let last = *chain.nodes.last().expect("chain has nodes");
    for &node in between {
        // Nodes after the last chain node were walked only if the chain ended early; only
        // those before it matter.
        if node == last {
            break;
        }
        if alias_db.writes_to_alias(graph, node, read) || alias_db.writes_to_wildcard(node) {
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
    let mut arguments = chain.head_arguments.clone();
    arguments.extend([activation, residual, after]);
    let fused = graph.insert(chain.fused_kind, &arguments, &[output_type]);
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
