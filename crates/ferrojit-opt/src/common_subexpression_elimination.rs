//! Common subexpression elimination, PyTorch's `EliminateCommonSubexpression`
//! (`_jit_pass_cse`): a node equal to an earlier one in its block, or in a block around it,
//! is replaced by that earlier node.
//!
//! Two nodes are equal (PyTorch's `EqualNode`) when they have the same kind, the same output
//! types, the very same inputs in order, and equal attributes (the same names; values equal
//! by kind; a subgraph attribute is never equal). Constants are nodes like any other, so
//! equal constants merge too. Blocks are walked in program order; a node in a nested block
//! may reuse a node of an enclosing block that came before the block's owner.
//!
//! Never merged: nodes with side effects, nondeterministic operators (random ones;
//! `aten::dropout` only with a constant `train=False`), `prim::profile`, nodes with blocks
//! (their blocks are searched instead), and nodes any of whose inputs or outputs some node
//! writes ([`AliasDb::has_writers`]). Merging with an enclosing block's node also needs
//! PyTorch's `safeToChangeAliasingRelationship` (neither side written, not both escaping
//! the graph), and two nodes of one block whose outputs both may be contained in the
//! graph's outputs stay apart, so that no new aliasing appears among the outputs.

use std::collections::HashMap;

use ferrojit_ir::{AttributeValue, BlockId, Graph, NodeId, ValueId};
use ferrojit_runtime::OperatorRegistry;
use ferrojit_tensor::Tensor;

use crate::alias_analysis::{attach_registry_schemas, has_side_effects, AliasDb};

/// The nodes seen so far in one block, by kind and inputs (then compared in full).
type Scope = HashMap<(String, Vec<ValueId>), Vec<NodeId>>;

/// Runs the pass on `graph`. Nodes without schemas (graphs read from text) get the
/// registry's first, as the interpreter would resolve them.
pub fn eliminate_common_subexpressions(graph: &mut Graph) {
    let registry = OperatorRegistry::global();
    attach_registry_schemas(graph, registry);
    let alias_db = AliasDb::new(graph);
    let mut eliminator = Eliminator {
        alias_db: &alias_db,
        registry,
        scopes: Vec::new(),
    };
    let top = graph.top_block();
    eliminator.block(graph, top);
}

struct Eliminator<'a> {
    alias_db: &'a AliasDb,
    registry: &'a OperatorRegistry,
    /// The scope of each block being walked, outermost first.
    scopes: Vec<Scope>,
}

impl Eliminator<'_> {
    fn block(&mut self, graph: &mut Graph, block: BlockId) {
        self.scopes.push(Scope::new());
        for node in graph.block_nodes(block) {
            self.node(graph, node);
        }
        self.scopes.pop();
    }

    fn node(&mut self, graph: &mut Graph, node: NodeId) {
        if graph.kind(node).as_str() == "prim::profile"
            || has_side_effects(graph, node)
            || is_nondeterministic(self.registry, graph, node)
        {
            return;
        }
        if !graph.node_blocks(node).is_empty() {
            for block in graph.node_blocks(node).to_vec() {
                self.block(graph, block);
            }
            return;
        }
        if self.has_writers(graph, node) {
            return;
        }
        let key = (
            graph.kind(node).as_str().to_string(),
            graph.node_inputs(node).to_vec(),
        );
        let depth = self.scopes.len() - 1;
        let in_enclosing = self.scopes[..depth]
            .iter()
            .rev()
            .find_map(|scope| find_equal(graph, scope, &key, node));
        if let Some(existing) = in_enclosing {
            if self.safe_to_change_aliasing(graph, node, existing) {
                replace(graph, node, existing);
            }
            return;
        }
        match find_equal(graph, &self.scopes[depth], &key, node) {
            None => self.scopes[depth].entry(key).or_default().push(node),
            Some(existing) => {
                let outputs = graph.outputs();
                let both_returned = self
                    .alias_db
                    .may_contain_alias_any(graph.node_outputs(node), outputs)
                    && self
                        .alias_db
                        .may_contain_alias_any(graph.node_outputs(existing), outputs);
                if !both_returned {
                    replace(graph, node, existing);
                }
            }
        }
    }

    /// PyTorch's `AliasDb::hasWriters(Node*)`: some node writes an input or an output.
    fn has_writers(&self, graph: &Graph, node: NodeId) -> bool {
        graph
            .node_inputs(node)
            .iter()
            .chain(graph.node_outputs(node))
            .any(|&value| self.alias_db.has_writers(value))
    }

    /// PyTorch's `safeToChangeAliasingRelationship`: nothing writes either side, and they do
    /// not both escape the graph's scope.
    fn safe_to_change_aliasing(&self, graph: &Graph, node: NodeId, existing: NodeId) -> bool {
        let (a, b) = (graph.node_outputs(node), graph.node_outputs(existing));
        let written = a.iter().chain(b).any(|&v| self.alias_db.has_writers(v));
        let both_escape =
            self.alias_db.escapes_scope(graph, a) && self.alias_db.escapes_scope(graph, b);
        !(written || both_escape)
    }
}

/// PyTorch's `Node::isNondeterministic`: an `aten` operator tagged as drawing random
/// numbers, except `aten::dropout` whose `train` argument is the constant False.
pub fn is_nondeterministic(registry: &OperatorRegistry, graph: &Graph, node: NodeId) -> bool {
    let data = graph.node(node);
    if data.kind.namespace() != "aten" {
        return false;
    }
    let Some(schema) = data.schema.as_ref() else {
        return false;
    };
    if schema.full_name() == "aten::dropout" {
        let train = schema
            .arguments
            .iter()
            .position(|argument| argument.name == "train")
            .and_then(|index| data.inputs.get(index))
            .and_then(|&value| constant_bool(graph, value));
        if train == Some(false) {
            return false;
        }
    }
    registry
        .lookup(&schema.full_name())
        .is_some_and(|operator| operator.flags.nondeterministic_seeded)
}

fn replace(graph: &mut Graph, node: NodeId, existing: NodeId) {
    crate::jit_log::log("cse", crate::jit_log::LogLevel::Update, || {
        format!(
            "Replacing {} with the equal node before it",
            graph.kind(node).as_str()
        )
    });
    let outputs = graph.node_outputs(node).to_vec();
    for (index, output) in outputs.into_iter().enumerate() {
        let replacement = graph.node_output(existing, index);
        graph.replace_all_uses_with(output, replacement);
    }
    graph.destroy_node(node);
}

fn find_equal(
    graph: &Graph,
    scope: &Scope,
    key: &(String, Vec<ValueId>),
    node: NodeId,
) -> Option<NodeId> {
    scope
        .get(key)?
        .iter()
        .copied()
        .find(|&candidate| nodes_equal(graph, candidate, node))
}

/// PyTorch's `EqualNode` for two nodes with the same kind and inputs: the same output types
/// and equal attributes.
fn nodes_equal(graph: &Graph, a: NodeId, b: NodeId) -> bool {
    let (outputs_a, outputs_b) = (graph.node_outputs(a), graph.node_outputs(b));
    outputs_a.len() == outputs_b.len()
        && outputs_a
            .iter()
            .zip(outputs_b)
            .all(|(&x, &y)| graph.value_type(x) == graph.value_type(y))
        && attributes_equal(&graph.node(a).attributes, &graph.node(b).attributes)
}

fn attributes_equal(a: &[(String, AttributeValue)], b: &[(String, AttributeValue)]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut a: Vec<_> = a.iter().collect();
    let mut b: Vec<_> = b.iter().collect();
    a.sort_by(|x, y| x.0.cmp(&y.0));
    b.sort_by(|x, y| x.0.cmp(&y.0));
    a.iter()
        .zip(&b)
        .all(|(x, y)| x.0 == y.0 && attribute_values_equal(&x.1, &y.1))
}

/// Equal values of the same attribute kind; floats compare as numbers (NaN is unequal),
/// tensors by dtype, sizes and elements, and subgraphs never.
fn attribute_values_equal(a: &AttributeValue, b: &AttributeValue) -> bool {
    use AttributeValue as A;
    match (a, b) {
        (A::Int(x), A::Int(y)) => x == y,
        (A::Float(x), A::Float(y)) => x == y,
        (A::Str(x), A::Str(y)) => x == y,
        (A::Ints(x), A::Ints(y)) => x == y,
        (A::Floats(x), A::Floats(y)) => x == y,
        (A::Strs(x), A::Strs(y)) => x == y,
        (A::Type(x), A::Type(y)) => x == y,
        (A::Types(x), A::Types(y)) => x == y,
        (A::Complex(xr, xi), A::Complex(yr, yi)) => xr == yr && xi == yi,
        (A::Tensor(x), A::Tensor(y)) => tensors_equal(x, y),
        (A::Tensors(x), A::Tensors(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| tensors_equal(p, q))
        }
        _ => false,
    }
}

fn tensors_equal(a: &Tensor, b: &Tensor) -> bool {
    a.dtype() == b.dtype() && a.sizes() == b.sizes() && a.to_f64_vec() == b.to_f64_vec()
}

/// The value of a `bool` constant.
fn constant_bool(graph: &Graph, value: ValueId) -> Option<bool> {
    let producer = graph.producer(value)?;
    if !graph.kind(producer).is_prim(ferrojit_ir::Prim::Constant) {
        return None;
    }
    match graph.attribute(producer, "value")? {
        AttributeValue::Int(value) => Some(*value != 0),
        _ => None,
    }
}
