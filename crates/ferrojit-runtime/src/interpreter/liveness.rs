//! Last-use analysis over a graph's nested blocks: decides which register reads can move the
//! value out (so refcounts drop as early as in PyTorch) and which registers can be cleared
//! where a value dies on only one path (the other If branch, after a loop).

use std::collections::HashMap;

use ferrojit_ir::{BlockId, Graph, NodeId, Prim, ValueDefinition, ValueId};

pub(crate) struct Liveness<'g> {
    graph: &'g Graph,
    /// Position of every node (return nodes included, last) within its block.
    positions: HashMap<NodeId, usize>,
}

impl<'g> Liveness<'g> {
    pub(crate) fn new(graph: &'g Graph) -> Liveness<'g> {
        let mut positions = HashMap::new();
        let mut pending = vec![graph.top_block()];
        while let Some(block) = pending.pop() {
            let nodes = graph.block_nodes(block);
            for (index, &node) in nodes.iter().enumerate() {
                positions.insert(node, index);
                pending.extend(graph.node_blocks(node).iter().copied());
            }
            positions.insert(graph.block_return_node(block), nodes.len());
        }
        Liveness { graph, positions }
    }

    fn owning_block(&self, node: NodeId) -> Option<BlockId> {
        self.graph.node(node).owning_block
    }

    /// (block, node of that block on the path) from the top block down to `node` itself.
    fn chain(&self, node: NodeId) -> Vec<(BlockId, NodeId)> {
        let mut chain = Vec::new();
        let mut current = node;
        // Nesting depth is bounded by the node count; the bound guards against a cyclic
        // (corrupt) parent structure.
        for _ in 0..=self.graph.node_capacity() {
            let Some(block) = self.owning_block(current) else {
                break;
            };
            chain.push((block, current));
            match self.graph.block_owning_node(block) {
                Some(owner) => current = owner,
                None => break,
            }
        }
        chain.reverse();
        chain
    }

    fn position(&self, node: NodeId) -> usize {
        self.positions.get(&node).copied().unwrap_or(0)
    }

    /// Whether `node` sits (at any depth) inside the blocks of `container`.
    pub(crate) fn is_inside(&self, node: NodeId, container: NodeId) -> bool {
        node != container && self.chain(node).iter().any(|&(_, n)| n == container)
    }

    /// Whether the use (`later_node`, `later_input`) runs after (`node`, `input`) within one
    /// pass over the code (loop repetition is handled separately).
    fn runs_after(
        &self,
        later_node: NodeId,
        later_input: usize,
        node: NodeId,
        input: usize,
    ) -> bool {
        if later_node == node {
            return later_input > input;
        }
        let chain_now = self.chain(node);
        let chain_later = self.chain(later_node);
        for level in 0.. {
            let (Some(&(block_now, node_now)), Some(&(block_later, node_later))) =
                (chain_now.get(level), chain_later.get(level))
            else {
                return false;
            };
            if block_now != block_later {
                // Different branches of the same If: never both run.
                return false;
            }
            if node_now != node_later {
                return self.position(node_later) > self.position(node_now);
            }
            if level + 1 == chain_now.len() {
                // `later_node` is inside the blocks of `node`, which run after its inputs.
                return true;
            }
            if level + 1 == chain_later.len() {
                // `node` is inside the blocks of `later_node`, whose inputs ran first.
                return false;
            }
        }
        false
    }

    fn definition_block(&self, value: ValueId) -> Option<BlockId> {
        match self.graph.value_definition(value) {
            ValueDefinition::NodeOutput { node, .. } => self.owning_block(node),
            ValueDefinition::BlockParameter { block, .. } => Some(block),
        }
    }

    /// Whether `inner` is `outer` or nested inside it.
    fn block_within(&self, inner: BlockId, outer: BlockId) -> bool {
        let mut block = inner;
        for _ in 0..=self.graph.block_capacity() {
            if block == outer {
                return true;
            }
            let Some(owner) = self.graph.block_owning_node(block) else {
                return false;
            };
            let Some(parent) = self.owning_block(owner) else {
                return false;
            };
            block = parent;
        }
        false
    }

    /// Whether `node` runs inside a loop body that `value` was defined outside of: every
    /// iteration reads the value again, so no read inside may move it.
    pub(crate) fn repeats_in_loop(&self, value: ValueId, node: NodeId) -> bool {
        let Some(definition) = self.definition_block(value) else {
            return true;
        };
        let chain = self.chain(node);
        for level in 0..chain.len().saturating_sub(1) {
            let (_, ancestor) = chain[level];
            if self.graph.kind(ancestor).is_prim(Prim::Loop) {
                let (body, _) = chain[level + 1];
                if !self.block_within(definition, body) {
                    return true;
                }
            }
        }
        false
    }

    /// Whether reading `value` as input `input` of `node` is its last read.
    pub(crate) fn is_last_use(&self, value: ValueId, node: NodeId, input: usize) -> bool {
        if self.repeats_in_loop(value, node) {
            return false;
        }
        !self.graph.value_uses(value).iter().any(|u| {
            !(u.node == node && u.input_index == input)
                && self.runs_after(u.node, u.input_index, node, input)
        })
    }

    /// Whether `value` is read after `node` has finished (reads inside `node` excluded), or
    /// `node` repeats in a loop that `value` lives outside of.
    pub(crate) fn used_after(&self, value: ValueId, node: NodeId) -> bool {
        if self.repeats_in_loop(value, node) {
            return true;
        }
        self.graph.value_uses(value).iter().any(|u| {
            u.node != node
                && !self.is_inside(u.node, node)
                && self.runs_after(u.node, u.input_index, node, usize::MAX)
        })
    }

    /// Values read inside `node`'s blocks (at any depth) but defined outside `node`.
    pub(crate) fn values_from_outside(&self, node: NodeId) -> Vec<ValueId> {
        let mut found = Vec::new();
        let mut pending: Vec<BlockId> = self.graph.node_blocks(node).to_vec();
        while let Some(block) = pending.pop() {
            let mut nodes = self.graph.block_nodes(block);
            nodes.push(self.graph.block_return_node(block));
            for inner in nodes {
                for &input in self.graph.node_inputs(inner) {
                    let outside = match self.definition_block(input) {
                        Some(definition) => !self
                            .graph
                            .node_blocks(node)
                            .iter()
                            .any(|&b| self.block_within(definition, b)),
                        None => false,
                    };
                    if outside && !found.contains(&input) {
                        found.push(input);
                    }
                }
                pending.extend(self.graph.node_blocks(inner).iter().copied());
            }
        }
        found
    }

    /// Whether `value` is read anywhere inside `block` (at any depth).
    pub(crate) fn used_in_block(&self, value: ValueId, block: BlockId) -> bool {
        self.graph.value_uses(value).iter().any(|u| {
            self.owning_block(u.node)
                .is_some_and(|b| self.block_within(b, block))
        })
    }
}
