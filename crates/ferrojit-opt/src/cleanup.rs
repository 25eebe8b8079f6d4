//! Post-emission cleanup, as PyTorch runs after `ConvertToSSA`: dead code elimination
//! (including unused `prim::If` outputs and loop-carried values) and constant pooling
//! (constants deduplicated and moved to the start of the graph).
//!
//! and output canonicalisation (PyTorch's `CanonicalizeOutputs`: the outputs of `prim::If`
//! and the carried values of `prim::Loop` ordered by their first use).
//!
//! All of it happens in one rebuild of the graph, because the IR has no API to remove or
//! reorder outputs.

use std::collections::{HashMap, HashSet};

use ferrojit_ir::{BlockId, Graph, InsertPoint, NodeId, Prim, ValueDefinition, ValueId};

/// Whether a node must be kept even when nothing uses its outputs.
fn has_side_effects(graph: &Graph, node: NodeId) -> bool {
    let kind = graph.kind(node);
    if let Some(prim) = kind.prim() {
        return prim.has_side_effects();
    }
    matches!(
        kind.as_str(),
        "aten::warn"
            // Reseeds the default generator (PyTorch's `Node::hasSideEffects` lists it too).
            | "aten::manual_seed"
            // Grad mode is global state; a fork's `wait` raises the errors of the code the
            // fork ran even when its value is never read.
            | "aten::set_grad_enabled"
            | "aten::wait"
    ) || match graph.node(node).schema.as_ref() {
        Some(schema) => schema.is_mutable(),
        // Graphs read from text carry no schemas: fall back on ATen's naming convention,
        // where a trailing underscore (`aten::relu_`, `aten::add_`) marks an in-place op.
        None => is_in_place_name(kind.as_str()),
    }
}

fn is_in_place_name(kind: &str) -> bool {
    kind.strip_prefix("aten::")
        .is_some_and(|name| name.ends_with('_') && !name.ends_with("__"))
}

enum Item {
    Value(ValueId),
    Node(NodeId),
    Carried(NodeId, usize),
}

#[derive(Default)]
struct Liveness {
    values: HashSet<ValueId>,
    nodes: HashSet<NodeId>,
    carried: HashSet<(NodeId, usize)>,
}

fn compute_liveness(graph: &Graph) -> Liveness {
    let mut live = Liveness::default();
    let mut work: Vec<Item> = graph.outputs().iter().map(|&v| Item::Value(v)).collect();
    for node in graph.all_nodes() {
        if has_side_effects(graph, node) {
            work.push(Item::Node(node));
        }
    }
    while let Some(item) = work.pop() {
        match item {
            Item::Value(value) => {
                if !live.values.insert(value) {
                    continue;
                }
                match graph.value_definition(value) {
                    ValueDefinition::NodeOutput { node, index } => {
                        work.push(Item::Node(node));
                        let kind = graph.kind(node);
                        if kind.is_prim(Prim::If) {
                            for &block in graph.node_blocks(node) {
                                if let Some(&output) = graph.block_outputs(block).get(index) {
                                    work.push(Item::Value(output));
                                }
                            }
                        } else if kind.is_prim(Prim::Loop) {
                            work.push(Item::Carried(node, index));
                        }
                    }
                    ValueDefinition::BlockParameter { block, index } => {
                        if let Some(owner) = graph.block_owning_node(block) {
                            if graph.kind(owner).is_prim(Prim::Loop) && index > 0 {
                                work.push(Item::Carried(owner, index - 1));
                            } else {
                                work.push(Item::Node(owner));
                            }
                        }
                    }
                }
            }
            Item::Node(node) => {
                if !live.nodes.insert(node) {
                    continue;
                }
                let kind = graph.kind(node).clone();
                let inputs = graph.node_inputs(node);
                if kind.is_prim(Prim::If) {
                    work.extend(inputs.iter().take(1).map(|&v| Item::Value(v)));
                } else if kind.is_prim(Prim::Loop) {
                    work.extend(inputs.iter().take(2).map(|&v| Item::Value(v)));
                    if let Some(&body) = graph.node_blocks(node).first() {
                        if let Some(&condition) = graph.block_outputs(body).first() {
                            work.push(Item::Value(condition));
                        }
                    }
                } else {
                    work.extend(inputs.iter().map(|&v| Item::Value(v)));
                }
                if let Some(block) = graph.node(node).owning_block {
                    if let Some(owner) = graph.block_owning_node(block) {
                        work.push(Item::Node(owner));
                    }
                }
            }
            Item::Carried(node, index) => {
                if !live.carried.insert((node, index)) {
                    continue;
                }
                work.push(Item::Node(node));
                if let Some(&input) = graph.node_inputs(node).get(index + 2) {
                    work.push(Item::Value(input));
                }
                if let Some(&body) = graph.node_blocks(node).first() {
                    if let Some(&output) = graph.block_outputs(body).get(index + 1) {
                        work.push(Item::Value(output));
                    }
                }
            }
        }
    }
    live
}

struct Rebuilder<'g> {
    old: &'g Graph,
    new: Graph,
    live: Liveness,
    map: HashMap<ValueId, ValueId>,
    pooled_constants: HashMap<String, ValueId>,
    /// The last generator constant hoisted to the top of the new graph.
    last_generator_constant: Option<NodeId>,
    /// Program-order position of every node, with a block's return node after its nodes.
    position: HashMap<NodeId, usize>,
    /// For return nodes whose inputs were reordered: old input index → new index.
    return_permutation: HashMap<NodeId, HashMap<usize, usize>>,
}

fn number_nodes(graph: &Graph, block: BlockId, position: &mut HashMap<NodeId, usize>) {
    for node in graph.block_nodes(block) {
        let next = position.len();
        position.insert(node, next);
        for &nested in graph.node_blocks(node) {
            number_nodes(graph, nested, position);
        }
    }
    let next = position.len();
    position.insert(graph.block_return_node(block), next);
}

impl<'g> Rebuilder<'g> {
    fn is_kept_user(&self, node: NodeId) -> bool {
        if self.live.nodes.contains(&node) {
            return true;
        }
        // Return nodes are kept with their block.
        match self.old.node(node).owning_block {
            Some(block) if self.old.block_return_node(block) == node => {
                match self.old.block_owning_node(block) {
                    Some(owner) => self.live.nodes.contains(&owner),
                    None => true,
                }
            }
            _ => false,
        }
    }

    /// Where a value is first used in the rebuilt graph (PyTorch's `firstOrLastUse`).
    fn first_use(&self, value: ValueId) -> Option<(usize, usize)> {
        self.old
            .value_uses(value)
            .iter()
            .filter(|u| self.is_kept_user(u.node))
            .map(|u| {
                let index = self
                    .return_permutation
                    .get(&u.node)
                    .and_then(|p| p.get(&u.input_index).copied())
                    .unwrap_or(u.input_index);
                (
                    self.position.get(&u.node).copied().unwrap_or(usize::MAX),
                    index,
                )
            })
            .min()
    }

    /// Orders output indices by first use; unused ones keep their order at the end.
    fn canonical_order(&self, indices: Vec<usize>, outputs: &[ValueId]) -> Vec<usize> {
        let mut keyed: Vec<(Option<(usize, usize)>, usize)> = indices
            .into_iter()
            .map(|i| (self.first_use(outputs[i]), i))
            .collect();
        keyed.sort_by(|a, b| match (a.0, b.0) {
            (None, None) => a.1.cmp(&b.1),
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some(_), None) => std::cmp::Ordering::Less,
            (Some(x), Some(y)) => x.cmp(&y).then(a.1.cmp(&b.1)),
        });
        keyed.into_iter().map(|(_, i)| i).collect()
    }

    fn mapped(&self, value: ValueId) -> ValueId {
        // Liveness guarantees every input of a copied node was copied before it.
        self.map.get(&value).copied().unwrap_or(value)
    }

    fn copy_value_info(&mut self, old_value: ValueId, new_value: ValueId) {
        if let Some(name) = self.old.debug_name(old_value) {
            let name = name.to_string();
            self.new.set_debug_name(new_value, &name);
        } else {
            // PyTorch's passes never renumber: a value keeps the number it printed with.
            self.new
                .set_value_number(new_value, self.old.value_number(old_value));
        }
        self.map.insert(old_value, new_value);
    }

    fn copy_node_data(&mut self, old_node: NodeId, new_node: NodeId) {
        let data = self.old.node(old_node);
        let attributes = data.attributes.clone();
        let schema = data.schema.clone();
        let location = data.source_location.clone();
        for (name, value) in attributes {
            self.new.set_attribute(new_node, &name, value);
        }
        self.new.set_node_schema(new_node, schema);
        self.new.set_source_location(new_node, location);
    }

    fn copy_block(
        &mut self,
        old_block: BlockId,
        new_block: BlockId,
        kept_outputs: Option<&[usize]>,
    ) {
        for node in self.old.block_nodes(old_block) {
            if !self.live.nodes.contains(&node) {
                continue;
            }
            self.new.set_insert_point(InsertPoint::EndOf(new_block));
            self.copy_node(node);
        }
        let outputs = self.old.block_outputs(old_block).to_vec();
        let selected: Vec<ValueId> = match kept_outputs {
            Some(indices) => indices
                .iter()
                .filter_map(|&i| outputs.get(i).copied())
                .collect(),
            None => outputs,
        };
        for value in selected {
            let mapped = self.mapped(value);
            self.new.add_block_output(new_block, mapped);
        }
    }

    fn copy_node(&mut self, node: NodeId) {
        let old = self.old;
        let kind = old.kind(node).clone();
        if kind.is_prim(Prim::Constant) {
            let output = old.node_output(node, 0);
            let ty = old.value_type(output).clone();
            let attribute = old.attribute(node, "value").cloned();
            // Tensor and generator constants are objects with an identity: two equal ones
            // stay two (a generator's state advances separately).
            let is_generator = ty == ferrojit_ir::Type::Generator;
            let has_identity =
                matches!(attribute, Some(ferrojit_ir::AttributeValue::Tensor(_))) || is_generator;
            let key = format!(
                "{}|{}",
                ty,
                attribute
                    .as_ref()
                    .map(|a| a.to_ir_string())
                    .unwrap_or_default()
            );
            if !has_identity {
                if let Some(&existing) = self.pooled_constants.get(&key) {
                    self.map.insert(output, existing);
                    return;
                }
            }
            let saved = self.new.insert_point();
            let top = self.new.top_block();
            // Generators keep their order (the printer names them, so a reversed order would
            // change the code from one save to the next): each goes after the one before.
            let after_previous_generator = self
                .last_generator_constant
                .filter(|_| is_generator)
                .map(|previous| self.new.next_node(previous));
            match (after_previous_generator, self.new.block_nodes(top).first()) {
                (Some(Some(next)), _) => self.new.set_insert_point(InsertPoint::Before(next)),
                (Some(None), _) => self.new.set_insert_point(InsertPoint::EndOf(top)),
                (None, Some(&first)) => self.new.set_insert_point(InsertPoint::Before(first)),
                (None, None) => self.new.set_insert_point(InsertPoint::EndOf(top)),
            }
            let new_node = self.new.insert(Prim::Constant.name(), &[], &[ty]);
            if is_generator {
                self.last_generator_constant = Some(new_node);
            }
            self.new.set_insert_point(saved);
            self.copy_node_data(node, new_node);
            let new_output = self.new.node_output(new_node, 0);
            self.copy_value_info(output, new_output);
            if !has_identity {
                self.pooled_constants.insert(key, new_output);
            }
            return;
        }
        let outputs = old.node_outputs(node).to_vec();
        let inputs = old.node_inputs(node).to_vec();
        if kind.is_prim(Prim::If) {
            let kept: Vec<usize> = (0..outputs.len())
                .filter(|&i| self.live.values.contains(&outputs[i]))
                .collect();
            let kept = self.canonical_order(kept, &outputs);
            for &old_block in old.node_blocks(node) {
                let permutation = kept
                    .iter()
                    .enumerate()
                    .map(|(new, &old_index)| (old_index, new))
                    .collect();
                self.return_permutation
                    .insert(old.block_return_node(old_block), permutation);
            }
            let types: Vec<_> = kept
                .iter()
                .map(|&i| old.value_type(outputs[i]).clone())
                .collect();
            let condition = self.mapped(inputs[0]);
            let new_node = self.new.insert(Prim::If.name(), &[condition], &types);
            self.copy_node_data(node, new_node);
            for &old_block in old.node_blocks(node) {
                let new_block = self.new.add_node_block(new_node);
                self.copy_block(old_block, new_block, Some(&kept));
            }
            for (position, &index) in kept.iter().enumerate() {
                let new_output = self.new.node_output(new_node, position);
                self.copy_value_info(outputs[index], new_output);
            }
            return;
        }
        if kind.is_prim(Prim::Loop) {
            let kept: Vec<usize> = (0..outputs.len())
                .filter(|&i| self.live.carried.contains(&(node, i)))
                .collect();
            let kept = self.canonical_order(kept, &outputs);
            if let Some(&old_body) = old.node_blocks(node).first() {
                let mut permutation: HashMap<usize, usize> = HashMap::from([(0, 0)]);
                permutation.extend(
                    kept.iter()
                        .enumerate()
                        .map(|(new, &old_index)| (old_index + 1, new + 1)),
                );
                self.return_permutation
                    .insert(old.block_return_node(old_body), permutation);
            }
            let mut new_inputs = vec![self.mapped(inputs[0]), self.mapped(inputs[1])];
            new_inputs.extend(kept.iter().map(|&i| self.mapped(inputs[i + 2])));
            let types: Vec<_> = kept
                .iter()
                .map(|&i| old.value_type(outputs[i]).clone())
                .collect();
            let new_node = self.new.insert(Prim::Loop.name(), &new_inputs, &types);
            self.copy_node_data(node, new_node);
            if let Some(&old_body) = old.node_blocks(node).first() {
                let new_body = self.new.add_node_block(new_node);
                let parameters = old.block_parameters(old_body).to_vec();
                let mut kept_parameters = vec![0usize];
                kept_parameters.extend(kept.iter().map(|&i| i + 1));
                for &index in &kept_parameters {
                    if let Some(&parameter) = parameters.get(index) {
                        let ty = old.value_type(parameter).clone();
                        let new_parameter = self.new.add_block_parameter(new_body, ty);
                        self.copy_value_info(parameter, new_parameter);
                    }
                }
                self.copy_block(old_body, new_body, Some(&kept_parameters));
            }
            for (position, &index) in kept.iter().enumerate() {
                let new_output = self.new.node_output(new_node, position);
                self.copy_value_info(outputs[index], new_output);
            }
            return;
        }
        let new_inputs: Vec<ValueId> = inputs.iter().map(|&v| self.mapped(v)).collect();
        let types: Vec<_> = outputs.iter().map(|&v| old.value_type(v).clone()).collect();
        let new_node = self.new.insert(kind.as_str(), &new_inputs, &types);
        self.copy_node_data(node, new_node);
        for (index, &output) in outputs.iter().enumerate() {
            let new_output = self.new.node_output(new_node, index);
            self.copy_value_info(output, new_output);
        }
    }
}

/// Removes dead nodes and outputs, and pools constants at the start of the graph.
pub fn eliminate_dead_code_and_pool_constants(graph: &mut Graph) {
    let live = compute_liveness(graph);
    let mut position = HashMap::new();
    number_nodes(graph, graph.top_block(), &mut position);
    let mut rebuilder = Rebuilder {
        old: graph,
        new: Graph::new(),
        live,
        map: HashMap::new(),
        pooled_constants: HashMap::new(),
        last_generator_constant: None,
        position,
        return_permutation: HashMap::new(),
    };
    for &input in graph.inputs() {
        let ty = graph.value_type(input).clone();
        let new_input = rebuilder.new.add_input(ty, None);
        rebuilder.copy_value_info(input, new_input);
    }
    let old_top = graph.top_block();
    let new_top = rebuilder.new.top_block();
    rebuilder.copy_block(old_top, new_top, None);
    let mut rebuilt = rebuilder.new;
    rebuilt.set_insert_point(InsertPoint::EndOf(new_top));
    *graph = rebuilt;
}
