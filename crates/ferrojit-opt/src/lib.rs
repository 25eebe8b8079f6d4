//! ferrojit-opt: the optimizing half of the JIT. Graph-to-graph passes, the table that names
//! them, and the file-test runner that checks them (see [`filetest`]).
//!
//! It sits above the runtime, so passes that need to run an operator (constant propagation)
//! or to know an operator's record (purity, aliasing, shape rules) can reach the registry.
//! The TorchScript frontend uses one pass from here, [`cleanup`], which PyTorch's IR emitter
//! runs on every graph it builds; nothing here depends on the frontend.
//!
//! **Invariant:** every pass keeps every invariant of `ferrojit_ir::verifier`. [`run_pass`]
//! runs the verifier after the pass in debug builds and in tests, and a verifier error after
//! a pass is a bug in that pass.

pub mod alias_analysis;
pub mod autodiff;
pub mod block_dead_code_elimination;
pub mod canonicalize;
pub mod cleanup;
pub mod common_subexpression_elimination;
pub mod concat_combining;
pub mod constant_insertion;
pub mod constant_pooling;
pub mod constant_propagation;
pub mod dead_code_elimination;
pub mod decompose_ops;
pub mod dtype_analysis;
pub mod erase_number_types;
pub mod filetest;
pub mod freezing;
pub mod fuser;
pub mod graph_executor;
pub mod inline_fork_wait;
pub mod inliner;
pub mod jit_log;
pub mod linear_epilogue;
pub mod list_length_refinement;
pub mod literals;
pub mod loop_unrolling;
pub mod lower_all_tuples;
pub mod peephole;
pub mod peephole_alias_sensitive;
pub mod peephole_dict_idioms;
pub mod peephole_list_idioms;
pub mod peephole_non_tensor;
pub mod remove_dropout;
pub mod remove_expands;
pub mod remove_mutation;
pub mod shape_functions;
pub mod symbolic_shape_analysis;

use ferrojit_ir::Graph;

/// One pass that can be run by name: from a file test's `# RUN: pass NAME` line, or by a
/// pipeline.
pub struct PassInfo {
    /// The name file tests and pipelines use (`cleanup`).
    pub name: &'static str,
    /// What the pass does, in one sentence, for `--help` listings and error messages.
    pub description: &'static str,
    /// Runs the pass; `Err` is a message for a graph the pass refuses.
    pub run: fn(&mut Graph) -> Result<(), String>,
}

/// Every pass, by name. A new pass gets its own file and one entry here.
/// Names are PyTorch's, without `_jit_pass_`.
pub const PASSES: &[PassInfo] = &[
    PassInfo {
        name: "cleanup",
        description: "dead code elimination, constant pooling and If/Loop output \
                      canonicalisation, as PyTorch runs them after building a graph",
        run: |graph| {
            cleanup::eliminate_dead_code_and_pool_constants(graph);
            Ok(())
        },
    },
    PassInfo {
        name: "dce",
        description: "removes nodes, If outputs and loop-carried values nothing live uses",
        run: |graph| {
            dead_code_elimination::eliminate_dead_code(graph);
            Ok(())
        },
    },
    PassInfo {
        name: "canonicalize",
        description: "copies the graph in program order with fresh numbers, dropping the names \
                      of the inputs and of the top block's values (keep_unique_names=False)",
        run: canonicalize::canonicalize,
    },
    PassInfo {
        name: "constant_pooling",
        description: "merges equal constants and moves every constant to the start of the graph",
        run: |graph| {
            constant_pooling::pool_constants(graph);
            Ok(())
        },
    },
    PassInfo {
        name: "constant_propagation_immutable_types",
        description: "runs operators on constant inputs of immutable types and folds constant \
                      If conditions and loops that never run",
        run: |graph| {
            constant_propagation::propagate_constants_of_immutable_types(graph);
            Ok(())
        },
    },
    PassInfo {
        name: "erase_number_types",
        description: "turns number values and constants into zero-dimensional tensors and drops \
                      the conversions between numbers and tensors",
        run: |graph| {
            erase_number_types::erase_number_types(graph);
            Ok(())
        },
    },
    PassInfo {
        name: "inline_fork_wait",
        description: "copies each prim::fork's body in place of the fork and replaces the \
                      waits on its future with the body's result",
        run: inline_fork_wait::inline_fork_wait,
    },
    PassInfo {
        name: "remove_dropout",
        description: "removes dropouts whose train argument is the constant False",
        run: |graph| {
            remove_dropout::remove_dropout(graph);
            Ok(())
        },
    },
    PassInfo {
        name: "remove_expands",
        description: "removes aten::expand nodes marked implicit=True (inserted by broadcasting)",
        run: |graph| {
            remove_expands::remove_expands(graph);
            Ok(())
        },
    },
    // passes-a
    PassInfo {
        name: "dce_graph",
        description: "dead code elimination with alias analysis (PyTorch's EliminateDeadCode on \
                      a graph): a write stays only when it may reach a live value or memory \
                      outside the graph",
        run: |graph| {
            dead_code_elimination::eliminate_dead_code_with_alias_db(graph)
                .map_err(|error| format!("dce_graph: {error}"))
        },
    },
    PassInfo {
        name: "cse",
        description: "replaces each node by an equal earlier one (same kind, inputs and \
                      attributes) unless it has side effects, is random or touches written memory",
        run: |graph| {
            common_subexpression_elimination::eliminate_common_subexpressions(graph);
            Ok(())
        },
    },
    PassInfo {
        name: "constant_propagation",
        description: "runs operators on constant inputs (tensors included) when alias analysis \
                      shows nothing writes them, and folds constant If conditions and loops that \
                      never run",
        run: constant_propagation::propagate_constants,
    },
    PassInfo {
        name: "inline",
        description: "replaces prim::CallFunction and prim::CallMethod of functions whose graph \
                      is known by the callee's body, recursively (a bare graph knows none: see \
                      inliner::inline_calls)",
        run: inliner::inline_calls_without_callees,
    },
    // passes-b
    PassInfo {
        name: "remove_mutation",
        description: "folds appends, inserts and item sets into the list constructs they follow, \
                      and turns in-place operators on fresh, unaliased values into their \
                      functional forms",
        run: remove_mutation::remove_mutation,
    },
    // shapes
    PassInfo {
        name: "propagate_shapes_on_graph",
        description: "symbolic shape analysis: sets each operator output's sizes from its \
                      inputs' sizes with the operator's shape function",
        run: symbolic_shape_analysis::propagate_shapes_on_graph,
    },
    PassInfo {
        name: "propagate_dtype",
        description: "sets the dtype of operator outputs by PyTorch's type promotion, from \
                      inputs whose dtype and rank are known",
        run: dtype_analysis::propagate_dtype,
    },
    // peephole
    PassInfo {
        name: "peephole",
        description: "PyTorch's peephole optimizer (disable_shape_peepholes=False): tensor, \
                      list, dict, alias-sensitive and non-tensor rewrites, concat combining, \
                      then dead code elimination when anything changed",
        run: |graph| peephole::peephole(graph, false),
    },
    PassInfo {
        name: "peephole_list_idioms",
        description: "answers len, constant-index getitem, unpack, add and slice of unwritten \
                      list constructs from their elements (refine_list_len=False)",
        run: peephole_list_idioms::peephole_list_idioms,
    },
    PassInfo {
        name: "peephole_list_idioms_refine_len",
        description: "peephole_list_idioms with refine_list_len=True: also takes len(l) == k \
                      conditions as facts in the branches they guard",
        run: peephole_list_idioms::peephole_list_idioms_refine_len,
    },
    // loops
    PassInfo {
        name: "loop_unrolling",
        description: "unrolls small for-loops: fully when the trip count is a constant below \
                      64, else by 8 with an epilogue loop for the remaining iterations",
        run: loop_unrolling::unroll_loops,
    },
    PassInfo {
        name: "lower_all_tuples",
        description: "replaces tuples built and taken apart in the graph (inputs, loop-carried \
                      values, If outputs, returns) by their elements",
        run: lower_all_tuples::lower_all_tuples,
    },
    // freeze
    PassInfo {
        name: "fold_frozen_conv_bn",
        description: "folds an eval-mode batch norm into the convolution before it when both \
                      have constant parameters (frozen graphs)",
        run: |graph| freezing::fold_conv_batch_norm::fold_frozen_conv_batch_norm(graph).map(drop),
    },
    PassInfo {
        name: "fold_frozen_conv_add_or_sub",
        description: "folds an add or sub of a constant per-channel tensor or number into the \
                      bias of the convolution before it (frozen graphs)",
        run: |graph| freezing::fold_conv_add_or_sub::fold_frozen_conv_add_or_sub(graph).map(drop),
    },
    PassInfo {
        name: "fold_frozen_conv_mul_or_div",
        description: "folds a mul or div by a constant per-channel tensor or number into the \
                      weight and bias of the convolution before it (frozen graphs)",
        run: |graph| freezing::fold_conv_mul_or_div::fold_frozen_conv_mul_or_div(graph).map(drop),
    },
    PassInfo {
        name: "fold_frozen_linear_bn",
        description: "folds an eval-mode batch norm into the linear before it when both have \
                      constant parameters (frozen graphs)",
        run: |graph| {
            freezing::fold_linear_batch_norm::fold_frozen_linear_batch_norm(graph).map(drop)
        },
    },
    PassInfo {
        name: "transpose_frozen_linear",
        description: "replaces a linear with a constant weight by a matmul with the weight \
                      transposed ahead of time, plus an add of the bias",
        run: |graph| freezing::transpose_linear::transpose_frozen_linear(graph).map(drop),
    },
    PassInfo {
        name: "concat_frozen_linear",
        description: "merges linears that read the same input and have constant weights and \
                      biases into one linear whose result is sliced (frozen graphs)",
        run: |graph| freezing::concat_linear::concat_frozen_linear(graph).map(drop),
    },
    PassInfo {
        name: "optimize_frozen_graph",
        description: "PyTorch's OptimizeFrozenGraph: dropout removal, linear concatenation, \
                      then the conv and linear folds until nothing changes",
        run: |graph| freezing::optimize_frozen_graph(graph, true),
    },
    // fuser
    PassInfo {
        name: "linear_epilogue",
        description: "rewrites aten::linear followed by an activation (relu, gelu, silu, \
                      sigmoid, hardswish) and/or a residual add into one \
                      ferrojit::linear_epilogue over the packed GEMM (off when \
                      FERROJIT_FUSER=off)",
        run: linear_epilogue::linear_epilogue_pass,
    },
    PassInfo {
        name: "fuser",
        description: "groups runs of pointwise operators on tensors of complete type into \
                      prim::FusionGroup nodes, each behind a prim::TypeCheck and a prim::If \
                      whose false block runs the nodes unfused (off when FERROJIT_FUSER=off)",
        run: fuser::fuser_pass,
    },
    // autodiff
    PassInfo {
        name: "create_autodiff_subgraphs",
        description: "groups runs of operators with a symbolic gradient into \
                      prim::DifferentiableGraph nodes of at least 2 nodes, moving nodes only \
                      where alias analysis allows",
        run: autodiff::create_autodiff_subgraphs::create_autodiff_subgraphs_pass,
    },
    PassInfo {
        name: "create_autodiff_subgraphs_with_lists",
        description: "create_autodiff_subgraphs as the graph executor runs it: also groups                       chunk with its prim::ListUnpack and prim::ListConstruct with its cat                       (PyTorch's executor groups them as prim::ConstantChunk and cat)",
        run: autodiff::create_autodiff_subgraphs::create_autodiff_subgraphs_with_lists_pass,
    },
    // decompose
    PassInfo {
        name: "decompose_ops",
        description: "rewrites addmm with beta and alpha 1 as mm plus add, and batch_norm and \
                      layer_norm on a known non-CPU device as their arithmetic, then constant \
                      propagation and dead code elimination",
        run: decompose_ops::decompose_ops,
    },
];

/// Shape then dtype propagation, for the graph executor once it has refined the graph's
/// input types to complete tensor types. Shapes are propagated into loop bodies too (to a
/// fixed point of the loop-carried types), as the profiling executor would know them. Unlike
/// the `propagate_dtype` pass, nodes PyTorch's dtype pass refuses (loops, calls, `If`
/// outputs) are skipped rather than failing.
pub fn propagate_shapes_and_dtypes(graph: &mut Graph) -> Result<(), String> {
    symbolic_shape_analysis::propagate_shapes_on_graph_and_loops(graph);
    dtype_analysis::propagate_dtypes_where_possible(graph);
    Ok(())
}

/// The pass called `name`, if there is one.
pub fn find_pass(name: &str) -> Option<&'static PassInfo> {
    PASSES.iter().find(|pass| pass.name == name)
}

/// Runs the pass called `name` on `graph`, then (in debug builds) the verifier. `Err` names
/// the passes that exist when `name` is not one of them, or says which invariant the pass
/// broke.
pub fn run_pass(name: &str, graph: &mut Graph) -> Result<(), String> {
    let Some(pass) = find_pass(name) else {
        let known: Vec<&str> = PASSES.iter().map(|pass| pass.name).collect();
        return Err(format!(
            "unknown pass '{name}'; the passes are: {}",
            known.join(", ")
        ));
    };
    match jit_log::setting() {
        jit_log::LogSetting::Off => {}
        jit_log::LogSetting::ListPasses => eprintln!("[jit log] running pass {name}"),
        jit_log::LogSetting::Passes(_) => jit_log::log(name, jit_log::LogLevel::Dump, || {
            format!("Before {name}:\n{}", graph.to_ir_string())
        }),
    }
    (pass.run)(graph)?;
    jit_log::log(name, jit_log::LogLevel::Dump, || {
        format!("After {name}:\n{}", graph.to_ir_string())
    });
    if cfg!(debug_assertions) {
        ferrojit_ir::verifier::verify(graph)
            .map_err(|error| format!("pass '{name}' broke an invariant: {error}"))?;
    }
    Ok(())
}
