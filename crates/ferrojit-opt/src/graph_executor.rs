//! The graph executor's optimization pipeline: how a plan's specialized graph is built from a
//! function's graph and one call's [`ArgumentSpec`] (PyTorch's `GraphExecutor` pipeline:
//! inline, specialize input types, then the shape-aware and general cleanups).
//!
//! The runtime caches and guards plans ([`ferrojit_runtime::GraphExecutor`]); this file only
//! builds them. Every pass runs through [`crate::run_pass`], so `FERROJIT_JIT_LOG` shows them
//! and the verifier checks each one in debug builds and tests.
//!
//! **Invariant:** a plan computes exactly what the general graph computes for every input
//! that matches its spec, bitwise: no pass here reorders float arithmetic.

use std::sync::Arc;

use ferrojit_ir::{Graph, Type};
use ferrojit_runtime::interpreter::{ArgumentSpec, GraphOptimizer};
use ferrojit_runtime::MethodSource;

use crate::inliner::{inline_calls, MethodSourceCallees};

/// The passes a plan runs after inlining and input specialization, in order. Passes not
/// registered in this build are skipped, so the pipeline grows as passes land.
pub const PLAN_PASSES: &[&str] = &[
    "propagate_shapes_on_graph",
    "propagate_dtype",
    "peephole",
    "constant_propagation",
    "peephole",
    "cse",
    "dce_graph",
];

/// In-place operators that change a tensor's sizes or strides. A graph that uses one (or an
/// `out=` overload, which may resize its output) is not given refined input types: a type
/// refined at entry could be wrong after such a write. Other in-place operators keep their
/// operand's dtype, sizes and strides, so they do not invalidate a refined type.
const GEOMETRY_WRITERS: &[&str] = &[
    "aten::resize_",
    "aten::resize_as_",
    "aten::unsqueeze_",
    "aten::squeeze_",
    "aten::t_",
    "aten::transpose_",
    "aten::swapdims_",
    "aten::swapaxes_",
    "aten::as_strided_",
    "aten::set_",
    "aten::requires_grad_",
    "aten::detach_",
];

/// PyTorch's default optimizing executor for ferrojit: inline, specialize, optimize.
#[derive(Debug, Default, Clone, Copy)]
pub struct SpecializingOptimizer;

impl SpecializingOptimizer {
    /// The optimizer as the run options take it.
    pub fn shared() -> Arc<dyn GraphOptimizer> {
        Arc::new(SpecializingOptimizer)
    }
}

impl GraphOptimizer for SpecializingOptimizer {
    fn optimize(
        &self,
        graph: &Graph,
        spec: &ArgumentSpec,
        methods: &dyn MethodSource,
    ) -> Result<Graph, String> {
        build_plan_graph(graph, spec, methods)
    }
}

/// The specialized graph for `spec`: a copy of `graph` with its calls inlined, the tensor
/// inputs nothing writes given the spec's complete types, and [`PLAN_PASSES`] run.
pub fn build_plan_graph(
    graph: &Graph,
    spec: &ArgumentSpec,
    methods: &dyn MethodSource,
) -> Result<Graph, String> {
    if spec.inputs.len() != graph.inputs().len() {
        return Err(format!(
            "the spec has {} inputs but the graph takes {}",
            spec.inputs.len(),
            graph.inputs().len()
        ));
    }
    let mut plan = graph.clone();
    inline_calls(&mut plan, &MethodSourceCallees(methods))?;
    if cfg!(debug_assertions) {
        ferrojit_ir::verifier::verify(&plan)
            .map_err(|error| format!("pass 'inline' broke an invariant: {error}"))?;
    }
    refine_input_types(&mut plan, spec);
    for name in PLAN_PASSES {
        if crate::find_pass(name).is_some() {
            crate::run_pass(name, &mut plan)?;
        }
    }
    Ok(plan)
}

/// Gives each plain tensor input the complete type the spec states, unless the graph may
/// change some tensor's geometry in place (then a type known at entry may not hold later).
/// In-place arithmetic on an input is fine: it keeps dtype, sizes and strides.
fn refine_input_types(graph: &mut Graph, spec: &ArgumentSpec) {
    let registry = ferrojit_runtime::OperatorRegistry::global();
    let changes_geometry = graph.all_nodes().into_iter().any(|node| {
        let kind = graph.kind(node).as_str();
        if GEOMETRY_WRITERS.contains(&kind) {
            return true;
        }
        if graph.kind(node).prim().is_some() {
            return false;
        }
        // An `out=` overload writes (and may resize) its `out` argument.
        let types: Vec<Type> = graph
            .node_inputs(node)
            .iter()
            .map(|&value| graph.value_type(value).clone())
            .collect();
        let schema = match &graph.node(node).schema {
            Some(schema) => Some(schema.clone()),
            None => registry
                .find_by_types(kind, &types)
                .map(|operator| operator.schema.clone()),
        };
        schema.is_some_and(|schema| {
            schema.arguments.iter().any(|argument| {
                argument.kwarg_only
                    && argument
                        .alias_info
                        .as_ref()
                        .is_some_and(|alias| alias.is_write)
            })
        })
    });
    if changes_geometry {
        return;
    }
    let inputs: Vec<_> = graph.inputs().to_vec();
    for (index, input) in inputs.into_iter().enumerate() {
        let Some(refined) = spec.refined_type(index) else {
            continue;
        };
        if matches!(graph.value_type(input), Type::Tensor) {
            graph.set_value_type(input, refined);
        }
    }
}
