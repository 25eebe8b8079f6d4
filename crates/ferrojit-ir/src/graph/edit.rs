//! Editing operations for passes: erase and permute a node's inputs and outputs, a block's
//! parameters and outputs, each keeping use lists and definition records consistent.
//!
//! Every operation checks its preconditions and returns a [`GraphEditError`] instead of
//! leaving a broken graph: a value can be erased only when nothing uses it, and a permutation
//! must name every position once. After any sequence of these, `verifier::verify` holds if it
//! held before (the tests below check exactly that).

use super::{BlockId, Graph, NodeId, Use, ValueDefinition, ValueId};

/// Why an edit was refused. Each one is a bug in the pass that asked for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphEditError {
    #[error("{what} {index} is out of range ({count} there)")]
    OutOfRange {
        what: &'static str,
        index: usize,
        count: usize,
    },
    #[error("{what} {index} ({value}) still has {uses} use(s)")]
    StillUsed {
        what: &'static str,
        index: usize,
        value: ValueId,
        uses: usize,
    },
    #[error("the order {order:?} is not a permutation of 0..{count}")]
    NotAPermutation { order: Vec<usize>, count: usize },
}

fn check_index(what: &'static str, index: usize, count: usize) -> Result<(), GraphEditError> {
    if index < count {
        Ok(())
    } else {
        Err(GraphEditError::OutOfRange { what, index, count })
    }
}

fn check_permutation(order: &[usize], count: usize) -> Result<(), GraphEditError> {
    let mut seen = vec![false; count];
    let valid = order.len() == count
        && order
            .iter()
            .all(|&index| index < count && !std::mem::replace(&mut seen[index], true));
    if valid {
        Ok(())
    } else {
        Err(GraphEditError::NotAPermutation {
            order: order.to_vec(),
            count,
        })
    }
}

impl Graph {
    fn check_unused(
        &self,
        what: &'static str,
        index: usize,
        value: ValueId,
    ) -> Result<(), GraphEditError> {
        let uses = self.values[value.index()].uses.len();
        if uses == 0 {
            Ok(())
        } else {
            Err(GraphEditError::StillUsed {
                what,
                index,
                value,
                uses,
            })
        }
    }

    /// Rebuilds the use records of `node`'s inputs after the input list changed: every use
    /// by `node` of a value it read before is dropped, then one is recorded per input now.
    /// (Renumbering in place would confuse two inputs that read the same value.)
    fn relink_inputs(&mut self, node: NodeId, old_inputs: &[ValueId]) {
        for &value in old_inputs {
            self.values[value.index()].uses.retain(|u| u.node != node);
        }
        let inputs = self.nodes[node.index()].inputs.clone();
        for (input_index, value) in inputs.into_iter().enumerate() {
            self.values[value.index()]
                .uses
                .push(Use { node, input_index });
        }
    }

    /// Removes input `index` of `node`; later inputs move down by one.
    pub fn erase_node_input(&mut self, node: NodeId, index: usize) -> Result<(), GraphEditError> {
        let old_inputs = self.nodes[node.index()].inputs.clone();
        check_index("input", index, old_inputs.len())?;
        self.nodes[node.index()].inputs.remove(index);
        self.relink_inputs(node, &old_inputs);
        Ok(())
    }

    /// Reorders `node`'s inputs: input `i` becomes the old input `order[i]`.
    pub fn permute_node_inputs(
        &mut self,
        node: NodeId,
        order: &[usize],
    ) -> Result<(), GraphEditError> {
        let old_inputs = self.nodes[node.index()].inputs.clone();
        check_permutation(order, old_inputs.len())?;
        self.nodes[node.index()].inputs = order.iter().map(|&old| old_inputs[old]).collect();
        self.relink_inputs(node, &old_inputs);
        Ok(())
    }

    /// Removes output `index` of `node`, which nothing may use; later outputs move down.
    pub fn erase_node_output(&mut self, node: NodeId, index: usize) -> Result<(), GraphEditError> {
        let outputs = &self.nodes[node.index()].outputs;
        check_index("output", index, outputs.len())?;
        self.check_unused("output", index, outputs[index])?;
        self.nodes[node.index()].outputs.remove(index);
        self.renumber_output_definitions(node);
        Ok(())
    }

    /// Reorders `node`'s outputs: output `i` becomes the old output `order[i]`.
    pub fn permute_node_outputs(
        &mut self,
        node: NodeId,
        order: &[usize],
    ) -> Result<(), GraphEditError> {
        let old = self.nodes[node.index()].outputs.clone();
        check_permutation(order, old.len())?;
        self.nodes[node.index()].outputs = order.iter().map(|&index| old[index]).collect();
        self.renumber_output_definitions(node);
        Ok(())
    }

    fn renumber_output_definitions(&mut self, node: NodeId) {
        let outputs = self.nodes[node.index()].outputs.clone();
        for (index, output) in outputs.into_iter().enumerate() {
            self.values[output.index()].definition = ValueDefinition::NodeOutput { node, index };
        }
    }

    /// Removes output `index` of `block` (an input of its return node).
    pub fn erase_block_output(
        &mut self,
        block: BlockId,
        index: usize,
    ) -> Result<(), GraphEditError> {
        let return_node = self.blocks[block.index()].return_node;
        self.erase_node_input(return_node, index)
    }

    /// Reorders `block`'s outputs: output `i` becomes the old output `order[i]`.
    pub fn permute_block_outputs(
        &mut self,
        block: BlockId,
        order: &[usize],
    ) -> Result<(), GraphEditError> {
        let return_node = self.blocks[block.index()].return_node;
        self.permute_node_inputs(return_node, order)
    }

    /// Removes parameter `index` of `block`, which nothing may use; later ones move down.
    pub fn erase_block_parameter(
        &mut self,
        block: BlockId,
        index: usize,
    ) -> Result<(), GraphEditError> {
        let parameters = &self.blocks[block.index()].parameters;
        check_index("parameter", index, parameters.len())?;
        self.check_unused("parameter", index, parameters[index])?;
        self.blocks[block.index()].parameters.remove(index);
        self.renumber_parameter_definitions(block);
        Ok(())
    }

    /// Reorders `block`'s parameters: parameter `i` becomes the old parameter `order[i]`.
    pub fn permute_block_parameters(
        &mut self,
        block: BlockId,
        order: &[usize],
    ) -> Result<(), GraphEditError> {
        let old = self.blocks[block.index()].parameters.clone();
        check_permutation(order, old.len())?;
        self.blocks[block.index()].parameters = order.iter().map(|&index| old[index]).collect();
        self.renumber_parameter_definitions(block);
        Ok(())
    }

    /// Removes block `index` of `node` with everything in it (PyTorch's `Node::eraseBlock`).
    /// Every value the block defines, at any depth, must be unused outside it; those values
    /// lose their debug names, as PyTorch frees them, so later values may take the names.
    pub fn erase_node_block(&mut self, node: NodeId, index: usize) -> Result<(), GraphEditError> {
        let blocks = &self.nodes[node.index()].blocks;
        check_index("block", index, blocks.len())?;
        let block = blocks[index];
        let defined = self.values_defined_in_block(block);
        let inside: std::collections::HashSet<NodeId> = self.nodes_in_block(block);
        for (position, &value) in defined.iter().enumerate() {
            let outside = self.values[value.index()]
                .uses
                .iter()
                .filter(|use_site| !inside.contains(&use_site.node))
                .count();
            if outside > 0 {
                return Err(GraphEditError::StillUsed {
                    what: "value defined in the erased block",
                    index: position,
                    value,
                    uses: outside,
                });
            }
        }
        for value in defined {
            self.clear_debug_name(value);
        }
        let return_node = self.blocks[block.index()].return_node;
        self.drop_inputs(return_node);
        for inner in self.block_nodes(block).into_iter().rev() {
            let destroyed = self.destroy_node(inner);
            debug_assert!(destroyed, "users inside the block were destroyed first");
        }
        self.nodes[return_node.index()].destroyed = true;
        self.nodes[node.index()].blocks.remove(index);
        self.blocks[block.index()].owning_node = None;
        Ok(())
    }

    /// The parameters of `block` and the outputs of every node in it, nested blocks included.
    fn values_defined_in_block(&self, block: BlockId) -> Vec<ValueId> {
        let mut values = Vec::new();
        let mut pending = vec![block];
        while let Some(current) = pending.pop() {
            values.extend_from_slice(&self.blocks[current.index()].parameters);
            for inner in self.block_nodes(current) {
                values.extend_from_slice(&self.nodes[inner.index()].outputs);
                pending.extend_from_slice(&self.nodes[inner.index()].blocks);
            }
        }
        values
    }

    /// The nodes of `block` at any depth, return nodes included.
    fn nodes_in_block(&self, block: BlockId) -> std::collections::HashSet<NodeId> {
        let mut nodes = std::collections::HashSet::new();
        let mut pending = vec![block];
        while let Some(current) = pending.pop() {
            nodes.insert(self.blocks[current.index()].return_node);
            for inner in self.block_nodes(current) {
                nodes.insert(inner);
                pending.extend_from_slice(&self.nodes[inner.index()].blocks);
            }
        }
        nodes
    }

    fn renumber_parameter_definitions(&mut self, block: BlockId) {
        let parameters = self.blocks[block.index()].parameters.clone();
        for (index, parameter) in parameters.into_iter().enumerate() {
            self.values[parameter.index()].definition =
                ValueDefinition::BlockParameter { block, index };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Type;
    use crate::verifier::verify;
    use crate::{parse_graph, InsertPoint};

    fn verified(graph: &Graph) {
        if let Err(error) = verify(graph) {
            panic!("{error}\n{}", graph.to_ir_string());
        }
    }

    #[test]
    fn erasing_and_permuting_node_inputs_keeps_uses() {
        let mut graph = parse_graph(
            "graph(%a : int, %b : int):\n  %c : int[] = prim::ListConstruct(%a, %b, %a)\n  return (%c)\n",
        )
        .unwrap();
        let node = graph.block_nodes(graph.top_block())[0];
        let (a, b) = (graph.inputs()[0], graph.inputs()[1]);
        graph.permute_node_inputs(node, &[2, 0, 1]).unwrap();
        assert_eq!(graph.node_inputs(node), &[a, a, b]);
        verified(&graph);
        graph.erase_node_input(node, 0).unwrap();
        assert_eq!(graph.node_inputs(node), &[a, b]);
        assert_eq!(graph.value_uses(a).len(), 1);
        verified(&graph);
        assert!(graph.erase_node_input(node, 5).is_err());
        assert!(matches!(
            graph.permute_node_inputs(node, &[0, 0]),
            Err(GraphEditError::NotAPermutation { .. })
        ));
        verified(&graph);
    }

    #[test]
    fn outputs_can_be_erased_only_when_unused_and_permuted() {
        let mut graph = parse_graph(
            "graph(%t : (int, int, int)):\n  %x : int, %y : int, %z : int = prim::TupleUnpack(%t)\n  return (%y)\n",
        )
        .unwrap();
        let node = graph.block_nodes(graph.top_block())[0];
        assert!(matches!(
            graph.erase_node_output(node, 1),
            Err(GraphEditError::StillUsed { .. })
        ));
        graph.permute_node_outputs(node, &[2, 1, 0]).unwrap();
        verified(&graph);
        graph.erase_node_output(node, 0).unwrap();
        graph.erase_node_output(node, 1).unwrap();
        assert_eq!(graph.node_outputs(node).len(), 1);
        verified(&graph);
        assert_eq!(
            graph.to_ir_string(),
            "graph(%t : (int, int, int)):\n  %y : int = prim::TupleUnpack(%t)\n  return (%y)\n"
        );
    }

    #[test]
    fn loop_carried_values_can_be_erased_in_step() {
        // Erase the second carried value of a loop: node input, block parameter, block
        // output and node output, in the order a pass would.
        let mut graph = parse_graph(
            "graph(%n : int, %x : int, %y : int):\n  %t : bool = prim::Constant[value=1]()\n  %r : int, %s : int = prim::Loop(%n, %t, %x, %y)\n    block0(%i : int, %p : int, %q : int):\n      -> (%t, %p, %q)\n  return (%r)\n",
        )
        .unwrap();
        let loop_node = graph.block_nodes(graph.top_block())[1];
        let body = graph.node_blocks(loop_node)[0];
        graph.erase_node_output(loop_node, 1).unwrap();
        graph.erase_block_output(body, 2).unwrap();
        graph.erase_block_parameter(body, 2).unwrap();
        graph.erase_node_input(loop_node, 3).unwrap();
        verified(&graph);
        assert!(!graph.to_ir_string().contains("%q"));
        assert!(!graph.to_ir_string().contains("%s"));
    }

    #[test]
    fn erasing_a_block_frees_its_values_and_names() {
        let mut graph = parse_graph(
            "graph(%n : int, %x : int):\n  %t : bool = prim::Constant[value=1]()\n  %r : int = prim::Loop(%n, %t, %x)\n    block0(%i : int, %p : int):\n      %q : int = aten::add(%p, %i)\n      -> (%t, %q)\n  return (%r)\n",
        )
        .unwrap();
        let loop_node = graph.block_nodes(graph.top_block())[1];
        let old_body = graph.node_blocks(loop_node)[0];
        let new_body = graph.add_node_block(loop_node);
        let counter = graph.add_block_parameter(new_body, Type::Int);
        let carried = graph.add_block_parameter(new_body, Type::Int);
        graph.set_debug_name(counter, "i");
        assert_eq!(graph.value_by_name("i"), Some(counter));
        let t = graph.value_by_name("t").unwrap();
        graph.add_block_output(new_body, t);
        graph.add_block_output(new_body, carried);
        assert!(graph.erase_node_block(loop_node, 2).is_err());
        graph.erase_node_block(loop_node, 0).unwrap();
        assert_eq!(graph.node_blocks(loop_node), &[new_body]);
        assert_eq!(
            graph.value_by_name("q"),
            None,
            "freed values lose their names"
        );
        assert!(graph.value_uses(graph.inputs()[1]).len() == 1);
        verified(&graph);
        let _ = old_body;
    }

    #[test]
    fn a_block_whose_values_are_used_outside_is_not_erased() {
        let mut graph = parse_graph(
            "graph(%c : bool, %x : int):\n  %r : int = prim::If(%c)\n    block0():\n      -> (%x)\n    block1():\n      -> (%x)\n  return (%r)\n",
        )
        .unwrap();
        let if_node = graph.block_nodes(graph.top_block())[0];
        let first = graph.node_blocks(if_node)[0];
        graph.set_insert_point(InsertPoint::EndOf(first));
        let inner = graph.insert("aten::neg", &[graph.inputs()[1]], &[Type::Int]);
        let inner_value = graph.node_output(inner, 0);
        graph.register_output(inner_value);
        assert!(matches!(
            graph.erase_node_block(if_node, 0),
            Err(GraphEditError::StillUsed { .. })
        ));
        assert_eq!(graph.node_blocks(if_node).len(), 2);
    }

    #[test]
    fn block_outputs_and_parameters_permute_together() {
        let mut graph = Graph::new();
        let x = graph.add_input(Type::Int, Some("x"));
        let y = graph.add_input(Type::Float, Some("y"));
        let top = graph.top_block();
        graph.register_output(x);
        graph.register_output(y);
        graph.permute_block_outputs(top, &[1, 0]).unwrap();
        assert_eq!(graph.outputs(), &[y, x]);
        verified(&graph);
        graph.set_insert_point(InsertPoint::EndOf(top));
        assert!(
            graph.erase_block_parameter(top, 0).is_err(),
            "x is still used"
        );
        graph.permute_block_parameters(top, &[1, 0]).unwrap();
        assert_eq!(graph.inputs(), &[y, x]);
        verified(&graph);
    }
}
