//! List idioms, PyTorch's `PeepholeOptimizeListIdioms`
//! (`_jit_pass_peephole_list_idioms`, also run by `_jit_pass_peephole`): operations on a
//! list built by `prim::ListConstruct` that nothing writes are answered from the construct.
//!
//! * `len(l)` is the number of elements;
//! * `l[i]` with a constant `i` inside the list is that element;
//! * `prim::ListUnpack(l)` with as many outputs as elements gives the elements;
//! * `l + m` of two such lists is one construct of both element lists;
//! * `l[a:b:c]` with constant (or None) bounds and step is a construct of those elements.
//!
//! A list counts as written when alias analysis finds any writer to it (an `append`, a
//! `_set_item`, anything it escapes to). With `refine_list_len`, `len(l)` inside branches
//! guarded by `len(l) == k` also becomes `k` ([`crate::list_length_refinement`]).

use std::collections::HashSet;

use ferrojit_ir::{AttributeValue, BlockId, Graph, InsertPoint, NodeId, Prim, Type, ValueId};
use ferrojit_runtime::registry::OperatorRegistry;
use ferrojit_runtime::IValue;

use crate::alias_analysis::{attach_registry_schemas, AliasDb};
use crate::constant_insertion::constant_value;
use crate::list_length_refinement::refine_list_lengths;
use crate::peephole::insert_constant_before;

/// The pass as `_jit_pass_peephole_list_idioms(graph, refine_list_len=False)` runs it.
pub fn peephole_list_idioms(graph: &mut Graph) -> Result<(), String> {
    attach_registry_schemas(graph, OperatorRegistry::global());
    optimize_list_idioms(graph, false)?;
    Ok(())
}

/// The pass as `_jit_pass_peephole_list_idioms(graph, refine_list_len=True)` runs it.
pub fn peephole_list_idioms_refine_len(graph: &mut Graph) -> Result<(), String> {
    attach_registry_schemas(graph, OperatorRegistry::global());
    optimize_list_idioms(graph, true)?;
    Ok(())
}

/// Runs the list idioms on `graph` (whose nodes should carry their schemas), then, with
/// `refine_list_len`, the length refinement; whether anything changed.
pub fn optimize_list_idioms(graph: &mut Graph, refine_list_len: bool) -> Result<bool, String> {
    let alias_db = AliasDb::new(graph);
    let mut optimizer = ListIdiomOptimizer {
        mutated_lists: HashSet::new(),
    };
    let top = graph.top_block();
    optimizer.collect_mutated_lists(graph, &alias_db, top);
    let mut changed = optimizer.run_block(graph, top)?;
    if refine_list_len {
        changed |= refine_list_lengths(graph, &optimizer.mutated_lists);
    }
    graph.set_insert_point(InsertPoint::EndOf(top));
    Ok(changed)
}

struct ListIdiomOptimizer {
    /// Lists some node may write; never optimized.
    mutated_lists: HashSet<ValueId>,
}

/// An index normalized into `0..length` (negative indices count from the end).
fn normalize_index(index: i64, length: usize) -> Option<usize> {
    let length = length as i64;
    let index = if index < 0 { index + length } else { index };
    (0..length).contains(&index).then_some(index as usize)
}

/// Python's slice index adjustment (PyTorch's `slice_indices_adjust`): `start` and `end`
/// (with `i64::MAX` meaning "not given") clamped into the list, and the element count.
fn adjust_slice_indices(length: i64, start: &mut i64, end: &mut i64, step: i64) -> i64 {
    if *start == i64::MAX {
        *start = if step < 0 { i64::MAX } else { 0 };
    }
    if *end == i64::MAX {
        *end = if step < 0 { i64::MIN } else { i64::MAX };
    }
    let clamp = |bound: &mut i64| {
        if *bound < 0 {
            *bound = bound.saturating_add(length);
            if *bound < 0 {
                *bound = if step < 0 { -1 } else { 0 };
            }
        } else if *bound >= length {
            *bound = if step < 0 { length - 1 } else { length };
        }
    };
    clamp(start);
    clamp(end);
    if step < 0 {
        if *end < *start {
            return (*start - *end - 1) / (-step) + 1;
        }
    } else if *start < *end {
        return (*end - *start - 1) / step + 1;
    }
    0
}

impl ListIdiomOptimizer {
    fn note_if_mutated(&mut self, graph: &Graph, alias_db: &AliasDb, value: ValueId) {
        if matches!(graph.value_type(value), Type::List(_)) && alias_db.has_writers(value) {
            self.mutated_lists.insert(value);
        }
    }

    fn collect_mutated_lists(&mut self, graph: &Graph, alias_db: &AliasDb, block: BlockId) {
        let parameters: Vec<ValueId> = if block == graph.top_block() {
            graph.inputs().to_vec()
        } else {
            graph.block_parameters(block).to_vec()
        };
        for value in parameters {
            self.note_if_mutated(graph, alias_db, value);
        }
        for node in graph.block_nodes(block) {
            for &output in graph.node_outputs(node) {
                self.note_if_mutated(graph, alias_db, output);
            }
            for &nested in graph.node_blocks(node) {
                self.collect_mutated_lists(graph, alias_db, nested);
            }
        }
    }

    fn run_block(&mut self, graph: &mut Graph, block: BlockId) -> Result<bool, String> {
        let mut changed = false;
        for node in graph.block_nodes(block) {
            for nested in graph.node_blocks(node).to_vec() {
                changed |= self.run_block(graph, nested)?;
            }
            changed |= self.optimize_node(graph, node)?;
        }
        Ok(changed)
    }

    /// The `prim::ListConstruct` behind an unwritten list value.
    fn unwritten_construct(&self, graph: &Graph, list: ValueId) -> Option<NodeId> {
        if !matches!(graph.value_type(list), Type::List(_)) || self.mutated_lists.contains(&list) {
            return None;
        }
        let producer = graph.producer(list)?;
        graph
            .kind(producer)
            .is_prim(Prim::ListConstruct)
            .then_some(producer)
    }

    fn optimize_node(&mut self, graph: &mut Graph, node: NodeId) -> Result<bool, String> {
        let inputs = graph.node_inputs(node).to_vec();
        let Some(&list) = inputs.first() else {
            return Ok(false);
        };
        let Some(construct) = self.unwritten_construct(graph, list) else {
            return Ok(false);
        };
        let elements = graph.node_inputs(construct).to_vec();
        let kind = graph.kind(node).as_str().to_string();
        let outputs = graph.node_outputs(node).to_vec();
        Ok(match kind.as_str() {
            "aten::len" => {
                let Some(&output) = outputs.first() else {
                    return Ok(false);
                };
                let length = insert_constant_before(
                    graph,
                    node,
                    Some(AttributeValue::Int(elements.len() as i64)),
                    Type::Int,
                );
                graph.replace_all_uses_with(output, length);
                true
            }
            "aten::__getitem__" => {
                let (Some(&index), Some(&output)) = (inputs.get(1), outputs.first()) else {
                    return Ok(false);
                };
                let Some(IValue::Int(index)) = constant_value(graph, index) else {
                    return Ok(false);
                };
                let Some(position) = normalize_index(index, elements.len()) else {
                    return Ok(false);
                };
                graph.replace_all_uses_with(output, elements[position]);
                true
            }
            "prim::ListUnpack" => {
                // A size mismatch is a runtime error, which must stay.
                if elements.len() != outputs.len() {
                    return Ok(false);
                }
                for (&output, &element) in outputs.iter().zip(&elements) {
                    graph.replace_all_uses_with(output, element);
                }
                !outputs.is_empty()
            }
            "aten::add" => {
                let (2, Some(&output)) = (inputs.len(), outputs.first()) else {
                    return Ok(false);
                };
                let Some(second) = self.unwritten_construct(graph, inputs[1]) else {
                    return Ok(false);
                };
                let mut joined = elements;
                joined.extend_from_slice(graph.node_inputs(second));
                self.replace_with_construct(graph, node, output, &joined);
                true
            }
            "aten::slice" => self.optimize_slice(graph, node, &inputs, &outputs, &elements)?,
            _ => false,
        })
    }

    /// Inserts a `prim::ListConstruct` of `elements` before `node`, typed as `output`, and
    /// makes `output`'s uses read it.
    fn replace_with_construct(
        &mut self,
        graph: &mut Graph,
        node: NodeId,
        output: ValueId,
        elements: &[ValueId],
    ) {
        let ty = graph.value_type(output).clone();
        let saved = graph.insert_point();
        graph.set_insert_point(InsertPoint::Before(node));
        let construct = graph.insert(Prim::ListConstruct.name(), elements, &[ty]);
        graph.set_insert_point(saved);
        let new_list = graph.node_output(construct, 0);
        graph.replace_all_uses_with(output, new_list);
        if self.mutated_lists.contains(&output) {
            self.mutated_lists.insert(new_list);
        }
    }

    fn optimize_slice(
        &mut self,
        graph: &mut Graph,
        node: NodeId,
        inputs: &[ValueId],
        outputs: &[ValueId],
        elements: &[ValueId],
    ) -> Result<bool, String> {
        let ([_, start, end, step], [output]) = (inputs, outputs) else {
            return Ok(false);
        };
        let bound = |value: ValueId| -> Option<Option<i64>> {
            match constant_value(graph, value)? {
                IValue::Int(v) => Some(Some(v)),
                _ => Some(None),
            }
        };
        let (Some(start), Some(end), Some(step)) = (bound(*start), bound(*end), bound(*step))
        else {
            return Ok(false);
        };
        let mut start = start.unwrap_or(i64::MAX);
        let mut end = end.unwrap_or(i64::MAX);
        let step = step.unwrap_or(1);
        if step == 0 {
            return Err("peephole_list_idioms: List slice should have non-zero step".to_string());
        }
        if step == i64::MIN {
            return Err("peephole_list_idioms: List slice step is out of bounds".to_string());
        }
        let count = adjust_slice_indices(elements.len() as i64, &mut start, &mut end, step);
        let mut sliced = Vec::with_capacity(count as usize);
        let mut position = start;
        for _ in 0..count {
            let Some(&element) = usize::try_from(position).ok().and_then(|p| elements.get(p))
            else {
                return Ok(false);
            };
            sliced.push(element);
            position += step;
        }
        self.replace_with_construct(graph, node, *output, &sliced);
        Ok(true)
    }
}
