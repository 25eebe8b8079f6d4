//! PyTorch's `LowerSimpleTuples`, which freezing runs after folding attributes: a
//! `prim::TupleUnpack`, or a `prim::TupleIndex` with a constant index, of a
//! `prim::TupleConstruct` reads the construct's inputs instead. Freezing builds tuple
//! attributes as constructs of constants, so indexing into a frozen tuple becomes the
//! constant it picks, as indexing into PyTorch's tuple constant folds. Unlike
//! `lower_all_tuples`, nothing is refused: tuples that are not taken apart this way stay.
//! The rewritten nodes are removed; the constructs left unused are for dead code
//! elimination to remove.

use ferrojit_ir::{Graph, Prim, ValueId};

use crate::constant_insertion::constant_value;

/// Runs the rewrite on every block of `graph`; returns whether anything changed.
pub fn lower_simple_tuples(graph: &mut Graph) -> bool {
    let mut changed = false;
    // `all_nodes` is in order, so an index of an index sees the inner one rewritten.
    for node in graph.all_nodes() {
        let kind = graph.kind(node);
        let unpack = kind.is_prim(Prim::TupleUnpack);
        if !unpack && !kind.is_prim(Prim::TupleIndex) {
            continue;
        }
        let Some(&tuple) = graph.node_inputs(node).first() else {
            continue;
        };
        let Some(construct) = graph.producer(tuple) else {
            continue;
        };
        if !graph.kind(construct).is_prim(Prim::TupleConstruct) {
            continue;
        }
        let elements: Vec<ValueId> = graph.node_inputs(construct).to_vec();
        if unpack {
            let outputs = graph.node_outputs(node).to_vec();
            if outputs.len() != elements.len() {
                continue;
            }
            for (output, element) in outputs.into_iter().zip(elements) {
                graph.replace_all_uses_with(output, element);
            }
            graph.destroy_node(node);
            changed = true;
            continue;
        }
        let index = graph
            .node_inputs(node)
            .get(1)
            .and_then(|&index| constant_value(graph, index))
            .and_then(|index| index.to_int().ok());
        let Some(index) = index else {
            continue;
        };
        let position = if index < 0 {
            index + elements.len() as i64
        } else {
            index
        };
        // An index out of range is left for the runtime to report.
        let Some(&element) = usize::try_from(position)
            .ok()
            .and_then(|position| elements.get(position))
        else {
            continue;
        };
        let output = graph.node_output(node, 0);
        graph.replace_all_uses_with(output, element);
        graph.destroy_node(node);
        changed = true;
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::lower_simple_tuples;

    #[test]
    fn indexes_and_unpacks_of_constructs_read_the_elements() {
        let mut graph = ferrojit_ir::parse_graph(
            "graph(%x : Tensor, %i : int):
  %zero : int = prim::Constant[value=0]()
  %m1 : int = prim::Constant[value=-1]()
  %t : (Tensor, int) = prim::TupleConstruct(%x, %i)
  %a : Tensor = prim::TupleIndex(%t, %zero)
  %b : int = prim::TupleIndex(%t, %m1)
  %c : Tensor, %d : int = prim::TupleUnpack(%t)
  %e : Tensor = prim::TupleIndex(%t, %i)
  return (%a, %b, %c, %d, %e)
",
        )
        .unwrap();
        assert!(lower_simple_tuples(&mut graph));
        let outputs = graph.outputs().to_vec();
        let inputs = graph.inputs().to_vec();
        assert_eq!(&outputs[..4], &[inputs[0], inputs[1], inputs[0], inputs[1]]);
        // A non-constant index stays.
        assert_ne!(outputs[4], inputs[0]);
        assert!(!lower_simple_tuples(&mut graph));
    }
}
