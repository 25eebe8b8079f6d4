//! The graph executor's optimization pipeline: how a plan's specialized graph is built from a
//! function's graph and one call's [`ArgumentSpec`] (PyTorch's `GraphExecutor` pipeline:
//! inline, specialize input types, then the shape-aware and general cleanups).
//!
//! The runtime caches and guards plans ([`ferrojit_runtime::GraphExecutor`]); this file only
//! builds them. Every pass runs through [`crate::run_pass`], so `FERROJIT_JIT_LOG` shows them
//! and the verifier checks each one in debug builds and tests.
//!
//! **Invariant:** a plan computes exactly what the general graph computes for every input
//! that matches its spec, bitwise: no pass here reorders float arithmetic. A fusion group run
//! by the interpreter runs the very kernels of the unfused nodes; one run as native code by a
//! fusion backend (ferrojit-codegen) is exact for arithmetic and within the ULP bounds that
//! crate states for its math functions. The one exception is `linear_epilogue` (on with
//! fusion): its packed GEMM sums in its own order, so a fused linear agrees with the unfused
//! one within float tolerance, not bitwise.

use std::sync::Arc;

use ferrojit_ir::{Graph, Type};
use ferrojit_runtime::interpreter::{ArgumentSpec, GraphOptimizer};
use ferrojit_runtime::MethodSource;

use crate::inliner::{inline_calls, MethodSourceCallees};

/// The passes a plan runs after inlining, input specialization and shape and dtype
/// propagation, in order: PyTorch's executor pipeline as far as ferrojit has its passes
/// (peephole with its shape-aware rewrites, constant propagation, loop unrolling, peephole
/// again on what those exposed, common subexpressions, fusion of pointwise operators, dead
/// code with alias analysis). PyTorch's executor also fuses after its other optimizations,
/// once the graph needs no gradient.
pub const PLAN_PASSES: &[&str] = &[
    "peephole",
    "constant_propagation",
    "loop_unrolling",
    "peephole",
    "cse",
    "linear_epilogue",
    "fuser",
    "dce_graph",
];

/// Choices for building plans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanOptions {
    /// Run the `fuser` pass (with the type refinement it needs first). Defaults to on
    /// unless `FERROJIT_FUSER=off`; a test compares both without touching the environment.
    pub fuse: bool,
}

impl Default for PlanOptions {
    fn default() -> PlanOptions {
        PlanOptions {
            fuse: crate::fuser::fuser_enabled_by_default(),
        }
    }
}

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

    /// An optimizer that builds plans with `options` instead of the defaults.
    pub fn with_options(options: PlanOptions) -> Arc<dyn GraphOptimizer> {
        Arc::new(ConfiguredOptimizer(options))
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

/// [`SpecializingOptimizer`] with chosen [`PlanOptions`].
#[derive(Debug, Clone, Copy)]
pub struct ConfiguredOptimizer(pub PlanOptions);

impl GraphOptimizer for ConfiguredOptimizer {
    fn optimize(
        &self,
        graph: &Graph,
        spec: &ArgumentSpec,
        methods: &dyn MethodSource,
    ) -> Result<Graph, String> {
        build_plan_graph_with_options(graph, spec, methods, self.0)
    }
}

/// The specialized graph for `spec`: a copy of `graph` with its calls inlined, its tensor
/// inputs given the spec's complete types, shapes and dtypes propagated, and
/// [`PLAN_PASSES`] run, with the default [`PlanOptions`].
pub fn build_plan_graph(
    graph: &Graph,
    spec: &ArgumentSpec,
    methods: &dyn MethodSource,
) -> Result<Graph, String> {
    build_plan_graph_with_options(graph, spec, methods, PlanOptions::default())
}

/// [`build_plan_graph`] with chosen options.
pub fn build_plan_graph_with_options(
    graph: &Graph,
    spec: &ArgumentSpec,
    methods: &dyn MethodSource,
    options: PlanOptions,
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
    // Shapes and dtypes are facts for the peephole. They are only facts if no tensor's
    // geometry changes in place; such a graph keeps its types as written. A graph the
    // analysis cannot take also keeps its types, and the other passes still run.
    let geometry_is_fixed = !changes_geometry_in_place(&plan);
    if geometry_is_fixed {
        refine_input_types(&mut plan, spec);
    }
    let mut typed = plan.clone();
    if geometry_is_fixed && crate::propagate_shapes_and_dtypes(&mut typed).is_ok() {
        plan = typed;
        if cfg!(debug_assertions) {
            ferrojit_ir::verifier::verify(&plan).map_err(|error| {
                format!("shape and dtype propagation broke an invariant: {error}")
            })?;
        }
    }
    // A call with an input that requires grad, or on a module whose parameters do (reached
    // through `prim::GetAttr`), gets differentiable graphs, as PyTorch's profiling executor
    // does on its needsGradient path; it fuses only graphs that need no gradient (a fused
    // group and the linear epilogue record no backward).
    let needs_gradient = spec.needs_gradient();
    for &name in PLAN_PASSES {
        if name == "linear_epilogue" && (!options.fuse || needs_gradient) {
            continue;
        }
        if name == "fuser" {
            if !options.fuse || needs_gradient {
                continue;
            }
            // Fusion needs complete types, which are facts only when no geometry changes
            // in place; a graph whose types cannot be refined is fused as it is typed.
            if geometry_is_fixed {
                let _ = crate::fuser::type_refinement::refine_types_for_fusion(&mut plan);
            }
        }
        crate::run_pass(name, &mut plan)?;
    }
    // `FERROJIT_AUTODIFF=off` leaves such calls to record a backward node per operator.
    if needs_gradient && crate::autodiff::autodiff_enabled_by_default() {
        crate::run_pass("create_autodiff_subgraphs_with_lists", &mut plan)?;
        crate::autodiff::attach_gradients(&mut plan);
    }
    Ok(plan)
}

/// Whether some node may change a tensor's sizes or strides in place: an operator of
/// [`GEOMETRY_WRITERS`], an `out=` overload (which may resize its `out` argument), or a
/// call the inliner left in place.
fn changes_geometry_in_place(graph: &Graph) -> bool {
    let registry = ferrojit_runtime::OperatorRegistry::global();
    graph.all_nodes().into_iter().any(|node| {
        let kind = graph.kind(node).as_str();
        if GEOMETRY_WRITERS.contains(&kind) {
            return true;
        }
        // A call left after inlining (an interface method, a forked body) runs code this
        // analysis does not see, which may resize what it is given.
        if matches!(
            kind,
            "prim::CallMethod" | "prim::CallFunction" | "prim::fork" | "aten::wait"
        ) {
            return true;
        }
        if graph.kind(node).prim().is_some() {
            return false;
        }
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
    })
}

/// Gives each plain tensor input the complete type the spec states. The caller has checked
/// that no tensor's geometry changes in place; in-place arithmetic on an input is fine, as
/// it keeps dtype, sizes and strides.
fn refine_input_types(graph: &mut Graph, spec: &ArgumentSpec) {
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
