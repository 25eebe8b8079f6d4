//! The peephole rewrites that need alias analysis, PyTorch's
//! `PeepholeOptimizeAliasSensitive` (part of `_jit_pass_peephole`):
//!
//! * `dim()` of the output of `aten::conv1d`/`conv2d`/`conv3d` is 3, 4 or 5: at once when
//!   nothing writes the convolution's output, otherwise only where the convolution can be
//!   moved after the `dim` node (and it is moved there);
//! * `x + 0`, `x - 0` (alpha 1), `x * 1` and `x / 1` on a tensor and constant scalars are
//!   `x`, when dropping the node cannot change the result's dtype (the tensor is known to be
//!   floating point, or the scalars are ints and the op is not a division) and replacing
//!   the output by the input cannot change what aliases what: neither is written, they do
//!   not both escape the graph, and neither aliases a value an earlier rewrite changed.
//!
//! As in PyTorch the alias database is built once and not updated: values touched by a
//! rewrite are remembered as stale, and later rewrites stay away from their aliases.

use ferrojit_ir::{AttributeValue, BlockId, Graph, NodeId, Type, ValueId};

use crate::alias_analysis::AliasDb;
use crate::peephole::{
    constant_scalar, insert_constant_before, is_floating_scalar_type, is_scalar_type,
    known_scalar_type, single_output,
};

/// Runs the alias-sensitive rewrites on `graph` (whose nodes should carry their schemas);
/// whether any applied.
pub fn optimize_alias_sensitive(graph: &mut Graph, shape_peepholes: bool) -> bool {
    let mut optimizer = AliasSensitiveOptimizer {
        alias_db: AliasDb::new(graph),
        shape_peepholes,
        stale_values: Vec::new(),
    };
    let top = graph.top_block();
    optimizer.run_block(graph, top)
}

struct AliasSensitiveOptimizer {
    alias_db: AliasDb,
    shape_peepholes: bool,
    /// Values whose aliasing changed since the database was built.
    stale_values: Vec<ValueId>,
}

impl AliasSensitiveOptimizer {
    fn run_block(&mut self, graph: &mut Graph, block: BlockId) -> bool {
        let mut changed = false;
        for node in graph.block_nodes(block) {
            for nested in graph.node_blocks(node).to_vec() {
                changed |= self.run_block(graph, nested);
            }
            changed |= self.optimize_node(graph, node);
        }
        changed
    }

    /// Whether the value is a tensor whose dtype is known to be floating point.
    fn is_floating_point(&self, graph: &Graph, value: ValueId) -> bool {
        self.shape_peepholes
            && known_scalar_type(graph.value_type(value))
                .is_some_and(|dtype| is_floating_scalar_type(&dtype))
    }

    fn optimize_node(&mut self, graph: &mut Graph, node: NodeId) -> bool {
        let kind = graph.kind(node).as_str().to_string();
        let inputs = graph.node_inputs(node).to_vec();
        let Some(output) = single_output(graph, node) else {
            return false;
        };
        match kind.as_str() {
            "aten::conv1d" | "aten::conv2d" | "aten::conv3d" => {
                self.fold_convolution_dims(graph, node, output, &kind)
            }
            "aten::add" | "aten::sub"
                if inputs.len() == 3
                    && graph.value_type(inputs[0]).is_tensor()
                    && is_scalar_type(graph.value_type(inputs[1]))
                    && is_scalar_type(graph.value_type(inputs[2])) =>
            {
                let (Some(other), Some(alpha)) = (
                    constant_scalar(graph, inputs[1]),
                    constant_scalar(graph, inputs[2]),
                ) else {
                    return false;
                };
                // With a float scalar and a tensor not known to be floating point, the node
                // may promote the dtype, so it must stay.
                if !self.is_floating_point(graph, inputs[0])
                    && (graph.value_type(inputs[1]) != &Type::Int
                        || graph.value_type(inputs[2]) != &Type::Int)
                {
                    return false;
                }
                alpha == 1.0 && other == 0.0 && self.try_replace_output(graph, inputs[0], output)
            }
            "aten::mul" | "aten::div"
                if inputs.len() == 2
                    && graph.value_type(inputs[0]).is_tensor()
                    && is_scalar_type(graph.value_type(inputs[1])) =>
            {
                let Some(other) = constant_scalar(graph, inputs[1]) else {
                    return false;
                };
                if !self.is_floating_point(graph, inputs[0])
                    && (kind == "aten::div" || graph.value_type(inputs[1]) != &Type::Int)
                {
                    return false;
                }
                other == 1.0 && self.try_replace_output(graph, inputs[0], output)
            }
            _ => false,
        }
    }

    /// `dim()` of a convolution's output is the convolution's output rank.
    fn fold_convolution_dims(
        &mut self,
        graph: &mut Graph,
        convolution: NodeId,
        output: ValueId,
        kind: &str,
    ) -> bool {
        let dim_users: Vec<NodeId> = graph
            .value_uses(output)
            .iter()
            .map(|use_site| use_site.node)
            .filter(|&user| graph.kind(user).is("aten::dim"))
            .collect();
        if dim_users.is_empty() {
            return false;
        }
        let rank = match kind {
            "aten::conv1d" => 3,
            "aten::conv2d" => 4,
            _ => 5,
        };
        let unwritten = !self.alias_db.has_writers(output);
        let mut changed = false;
        for user in dim_users {
            // A `resize_` could change the rank; then the dim must be taken right after the
            // convolution, which is where the convolution is moved.
            let foldable = unwritten
                || (graph.node(user).owning_block == graph.node(convolution).owning_block
                    && self
                        .alias_db
                        .move_after_topologically_valid(graph, convolution, user));
            if !foldable {
                continue;
            }
            if let Some(dim_output) = single_output(graph, user) {
                let constant =
                    insert_constant_before(graph, user, Some(AttributeValue::Int(rank)), Type::Int);
                graph.replace_all_uses_with(dim_output, constant);
            }
            changed = true;
        }
        changed
    }

    /// PyTorch's `tryToReplaceOutputWithInput`.
    fn try_replace_output(&mut self, graph: &mut Graph, input: ValueId, output: ValueId) -> bool {
        let written = self.alias_db.has_writers(input) || self.alias_db.has_writers(output);
        let both_escape = self.alias_db.escapes_scope(graph, &[input])
            && self.alias_db.escapes_scope(graph, &[output]);
        if written || both_escape {
            return false;
        }
        if self
            .alias_db
            .may_alias_any(&[input, output], &self.stale_values)
        {
            return false;
        }
        graph.replace_all_uses_with(output, input);
        self.stale_values.push(input);
        self.stale_values.push(output);
        true
    }
}
