//! List length refinement, PyTorch's `ListLenRefiner` (the `refine_list_len=True` part of
//! `_jit_pass_peephole_list_idioms`), with the value refinement rules of PyTorch's
//! `value_refinement_utils`.
//!
//! A comparison `len(l) == k` (or `!=`) with a constant `k` carries a fact for each of its
//! boolean values: when true (or false), `l` has length `k`. An `If` on such a condition
//! gives its then-branch (or else-branch) the fact, and `len(l)` there becomes `k`. Facts
//! flow through `not`, through `==`/`!=` with a bool constant, and out of `If` nodes: when
//! one branch always raises, the other branch's facts hold after the `If`; a bool output
//! that is a constant in one branch takes the other branch's facts; otherwise the facts both
//! branches agree on.
//!
//! Only lists that nothing writes and whose length is taken at least twice are refined, and
//! only the blocks of `If` nodes are entered (loop bodies are not), as in PyTorch.

use std::collections::{HashMap, HashSet};

use ferrojit_ir::{AttributeValue, BlockId, Graph, NodeId, Prim, Type, ValueId};
use ferrojit_runtime::IValue;

use crate::constant_insertion::constant_value;
use crate::peephole::insert_constant_before;

/// Known list lengths.
type ListRefinement = HashMap<ValueId, i64>;

/// The facts a boolean value carries for each of its values.
#[derive(Debug, Clone, Default)]
struct BooleanRefinement {
    when_true: ListRefinement,
    when_false: ListRefinement,
}

impl BooleanRefinement {
    fn when_true(facts: ListRefinement) -> BooleanRefinement {
        BooleanRefinement {
            when_true: facts,
            when_false: ListRefinement::new(),
        }
    }

    fn when_false(facts: ListRefinement) -> BooleanRefinement {
        BooleanRefinement {
            when_true: ListRefinement::new(),
            when_false: facts,
        }
    }

    fn negated(&self) -> BooleanRefinement {
        BooleanRefinement {
            when_true: self.when_false.clone(),
            when_false: self.when_true.clone(),
        }
    }

    fn intersect(&self, other: &BooleanRefinement) -> BooleanRefinement {
        BooleanRefinement {
            when_true: intersect(&self.when_true, &other.when_true),
            when_false: intersect(&self.when_false, &other.when_false),
        }
    }
}

/// The facts present in both, with the same length.
fn intersect(a: &ListRefinement, b: &ListRefinement) -> ListRefinement {
    a.iter()
        .filter(|(list, length)| b.get(list) == Some(length))
        .map(|(&list, &length)| (list, length))
        .collect()
}

/// Every fact of either, `a`'s first (two facts on one list cannot both hold on a path
/// that runs).
fn union(a: &ListRefinement, b: &ListRefinement) -> ListRefinement {
    let mut out = a.clone();
    for (&list, &length) in b {
        out.entry(list).or_insert(length);
    }
    out
}

/// The constant bool `value` holds.
fn constant_bool(graph: &Graph, value: ValueId) -> Option<bool> {
    match constant_value(graph, value)? {
        IValue::Bool(v) => Some(v),
        _ => None,
    }
}

/// Refines `len` of the lists that are not in `mutated_lists`; whether any `len` changed.
pub(crate) fn refine_list_lengths(graph: &mut Graph, mutated_lists: &HashSet<ValueId>) -> bool {
    let mut refiner = ListLengthRefiner {
        lists_to_refine: HashSet::new(),
        active: Vec::new(),
        boolean_refinements: HashMap::new(),
        throwing_blocks: HashSet::new(),
        changed: false,
    };
    let top = graph.top_block();
    let mut with_one_len = HashSet::new();
    refiner.collect_lists_to_refine(graph, top, mutated_lists, &mut with_one_len);
    if refiner.lists_to_refine.is_empty() {
        return false;
    }
    refiner.refine_block(graph, top, ListRefinement::new());
    refiner.changed
}

struct ListLengthRefiner {
    /// Unwritten lists whose length is taken more than once.
    lists_to_refine: HashSet<ValueId>,
    /// The facts of each block being refined, outermost first.
    active: Vec<ListRefinement>,
    boolean_refinements: HashMap<ValueId, BooleanRefinement>,
    /// Blocks that always raise.
    throwing_blocks: HashSet<BlockId>,
    changed: bool,
}

impl ListLengthRefiner {
    fn collect_lists_to_refine(
        &mut self,
        graph: &Graph,
        block: BlockId,
        mutated_lists: &HashSet<ValueId>,
        with_one_len: &mut HashSet<ValueId>,
    ) {
        for node in graph.block_nodes(block) {
            for &nested in graph.node_blocks(node) {
                self.collect_lists_to_refine(graph, nested, mutated_lists, with_one_len);
            }
            if !graph.kind(node).is("aten::len") {
                continue;
            }
            let Some(&list) = graph.node_inputs(node).first() else {
                continue;
            };
            // The second `len` of an unwritten list makes it worth refining.
            if matches!(graph.value_type(list), Type::List(_))
                && !mutated_lists.contains(&list)
                && !with_one_len.insert(list)
            {
                self.lists_to_refine.insert(list);
            }
        }
    }

    /// The facts recorded for a boolean value, recording empty ones when there were none
    /// (PyTorch's map indexing does so, and later membership tests see the entry).
    fn facts_of(&mut self, value: ValueId) -> BooleanRefinement {
        self.boolean_refinements.entry(value).or_default().clone()
    }

    fn find_length(&self, list: ValueId) -> Option<i64> {
        self.active
            .iter()
            .find_map(|facts| facts.get(&list).copied())
    }

    fn refine_block(
        &mut self,
        graph: &mut Graph,
        block: BlockId,
        facts: ListRefinement,
    ) -> ListRefinement {
        self.active.push(facts);
        for node in graph.block_nodes(block) {
            self.refine_node(graph, block, node);
        }
        self.active.pop().unwrap_or_default()
    }

    fn refine_node(&mut self, graph: &mut Graph, block: BlockId, node: NodeId) {
        let kind = graph.kind(node).as_str().to_string();
        let inputs = graph.node_inputs(node).to_vec();
        let outputs = graph.node_outputs(node).to_vec();
        let int_comparison = (kind == "aten::eq" || kind == "aten::ne")
            && inputs.len() == 2
            && inputs.iter().all(|&v| graph.value_type(v) == &Type::Int);
        if int_comparison {
            let Some(&output) = outputs.first() else {
                return;
            };
            for constant_index in [0, 1] {
                let Some(IValue::Int(length)) = constant_value(graph, inputs[constant_index])
                else {
                    continue;
                };
                let Some(len_node) = graph.producer(inputs[1 - constant_index]) else {
                    continue;
                };
                let len_inputs = graph.node_inputs(len_node);
                if !graph.kind(len_node).is("aten::len")
                    || len_inputs.len() != 1
                    || !matches!(graph.value_type(len_inputs[0]), Type::List(_))
                    || !self.lists_to_refine.contains(&len_inputs[0])
                {
                    continue;
                }
                let facts = ListRefinement::from([(len_inputs[0], length)]);
                let refinement = if kind == "aten::eq" {
                    BooleanRefinement::when_true(facts)
                } else {
                    BooleanRefinement::when_false(facts)
                };
                self.boolean_refinements.insert(output, refinement);
            }
        } else if kind == "aten::len" {
            let (Some(&list), Some(&output)) = (inputs.first(), outputs.first()) else {
                return;
            };
            if let Some(length) = self.find_length(list) {
                self.changed = true;
                let constant = insert_constant_before(
                    graph,
                    node,
                    Some(AttributeValue::Int(length)),
                    Type::Int,
                );
                graph.replace_all_uses_with(output, constant);
            }
        } else if graph.kind(node).is_prim(Prim::If) {
            self.refine_if(graph, node);
        } else {
            self.handle_common_operators(graph, block, node);
        }
    }

    fn refine_if(&mut self, graph: &mut Graph, node: NodeId) {
        let blocks = graph.node_blocks(node).to_vec();
        let (Some(&then_block), Some(&else_block), Some(&condition)) = (
            blocks.first(),
            blocks.get(1),
            graph.node_inputs(node).first(),
        ) else {
            return;
        };
        let condition_facts = if self.boolean_refinements.contains_key(&condition) {
            self.facts_of(condition)
        } else {
            BooleanRefinement::default()
        };
        let then_facts = self.refine_block(graph, then_block, condition_facts.when_true);
        let else_facts = self.refine_block(graph, else_block, condition_facts.when_false);
        self.join_if(graph, node, then_facts, else_facts);
    }

    /// PyTorch's `joinIfRefinements`.
    fn join_if(
        &mut self,
        graph: &Graph,
        node: NodeId,
        then_facts: ListRefinement,
        else_facts: ListRefinement,
    ) {
        let blocks = graph.node_blocks(node).to_vec();
        let (then_block, else_block) = (blocks[0], blocks[1]);
        let then_throws = self.throwing_blocks.contains(&then_block);
        let else_throws = self.throwing_blocks.contains(&else_block);
        let outputs = graph.node_outputs(node).to_vec();
        if then_throws || else_throws {
            if then_throws && else_throws {
                if let Some(owner) = graph.node(node).owning_block {
                    self.throwing_blocks.insert(owner);
                }
                return;
            }
            let (surviving_facts, surviving_block) = if then_throws {
                (else_facts, else_block)
            } else {
                (then_facts, then_block)
            };
            if let Some(current) = self.active.last_mut() {
                for (list, length) in surviving_facts {
                    current.entry(list).or_insert(length);
                }
            }
            let block_outputs = graph.block_outputs(surviving_block).to_vec();
            for (&output, &block_output) in outputs.iter().zip(&block_outputs) {
                if self.boolean_refinements.contains_key(&block_output) {
                    let facts = self.facts_of(block_output);
                    self.boolean_refinements.insert(output, facts);
                }
            }
            return;
        }
        let then_outputs = graph.block_outputs(then_block).to_vec();
        let else_outputs = graph.block_outputs(else_block).to_vec();
        for (index, &output) in outputs.iter().enumerate() {
            if graph.value_type(output) != &Type::Bool {
                return;
            }
            let (Some(&then_value), Some(&else_value)) =
                (then_outputs.get(index), else_outputs.get(index))
            else {
                return;
            };
            let then_constant = constant_bool(graph, then_value);
            let else_constant = constant_bool(graph, else_value);
            if !self.boolean_refinements.contains_key(&then_value)
                && !self.boolean_refinements.contains_key(&else_value)
                && then_constant.is_none()
                && else_constant.is_none()
            {
                return;
            }
            let joined = if let Some(then_constant) = then_constant {
                // The output's other value can only come from the else branch.
                let facts = self.facts_of(else_value);
                if then_constant {
                    BooleanRefinement::when_false(union(&facts.when_false, &else_facts))
                } else {
                    BooleanRefinement::when_true(union(&facts.when_true, &else_facts))
                }
            } else if let Some(else_constant) = else_constant {
                let facts = self.facts_of(then_value);
                if else_constant {
                    BooleanRefinement::when_false(union(&facts.when_false, &then_facts))
                } else {
                    BooleanRefinement::when_true(union(&facts.when_true, &then_facts))
                }
            } else if self.boolean_refinements.contains_key(&then_value)
                && self.boolean_refinements.contains_key(&else_value)
            {
                self.facts_of(then_value)
                    .intersect(&self.facts_of(else_value))
            } else {
                BooleanRefinement::default()
            };
            self.boolean_refinements.insert(output, joined);
        }
    }

    /// PyTorch's `handleCommonRefinentOperators`.
    fn handle_common_operators(&mut self, graph: &Graph, block: BlockId, node: NodeId) {
        let kind = graph.kind(node).as_str().to_string();
        let inputs = graph.node_inputs(node).to_vec();
        let output = graph.node_outputs(node).first().copied();
        if kind == "prim::RaiseException" {
            self.throwing_blocks.insert(block);
            return;
        }
        if kind == "aten::__not__" {
            let (Some(&input), Some(output)) = (inputs.first(), output) else {
                return;
            };
            if graph.value_type(input) == &Type::Bool
                && self.boolean_refinements.contains_key(&input)
            {
                let negated = self.facts_of(input).negated();
                self.boolean_refinements.insert(output, negated);
            }
            return;
        }
        let bool_comparison = (kind == "aten::eq" || kind == "aten::ne")
            && inputs.len() == 2
            && inputs.iter().all(|&v| graph.value_type(v) == &Type::Bool);
        let Some(output) = output.filter(|_| bool_comparison) else {
            return;
        };
        for constant_index in [0, 1] {
            let is_constant = graph
                .producer(inputs[constant_index])
                .is_some_and(|producer| graph.kind(producer).is_prim(Prim::Constant));
            if !is_constant {
                continue;
            }
            let Some(constant) = constant_bool(graph, inputs[constant_index]) else {
                continue;
            };
            let other = inputs[1 - constant_index];
            if !self.boolean_refinements.contains_key(&other) {
                continue;
            }
            // `v == False` and `v != True` are `not v`; `v == True` and `v != False` are `v`.
            let facts = self.facts_of(other);
            let negates = (!constant && kind == "aten::eq") || (constant && kind == "aten::ne");
            let mapped = if negates { facts.negated() } else { facts };
            self.boolean_refinements.insert(output, mapped);
        }
    }
}
