//! The fuser end to end (issue 22, item 1): frozen models saved by PyTorch
//! (tests/fixtures/fusion/generate.py) run through the optimizing executor with fusion on
//! and off, which must agree bit for bit (fused groups without a backend run the very
//! kernels the unfused graph runs), and agree with PyTorch within the zoo's tolerances. A
//! stand-in fusion backend shows the runtime offers it every group and falls back to the
//! interpreter when it declines.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ferrojit_conformance::{compare_with, repo_root, Comparison};
use ferrojit_ir::Graph;
use ferrojit_opt::graph_executor::{PlanOptions, SpecializingOptimizer};
use ferrojit_runtime::interpreter::{FusionBackend, RunOptions};
use ferrojit_runtime::{run_graph, IValue, NoMethods};
use ferrojit_serialize::import::load_module;
use ferrojit_serialize::torch_save;
use ferrojit_tensor::Tensor;

const RTOL: f64 = 1e-4;
const ATOL: f64 = 1e-5;

fn fixture(name: &str, suffix: &str) -> PathBuf {
    repo_root().join(format!("tests/fixtures/fusion/{name}{suffix}"))
}

fn arguments(name: &str) -> Vec<IValue> {
    match torch_save::load_file(&fixture(name, ".inputs.pt")).expect("inputs load") {
        IValue::Tuple(tuple) => tuple.items.to_vec(),
        other => vec![other],
    }
}

fn options(fuse: bool, backend: Option<Arc<dyn FusionBackend>>) -> RunOptions {
    RunOptions {
        optimizer: Some(SpecializingOptimizer::with_options(PlanOptions { fuse })),
        fusion_backend: backend,
        ..RunOptions::default()
    }
}

/// Runs `forward` of a fresh load of `name` twice (a new plan, then the cached one) and
/// returns the second result, after checking the two agree.
fn run(name: &str, options: &RunOptions) -> IValue {
    let loaded = load_module(&fixture(name, ".pt")).expect("model loads");
    let first = loaded
        .module
        .run_method_with_options("forward", arguments(name), options)
        .expect("forward runs");
    let second = loaded
        .module
        .run_method_with_options("forward", arguments(name), options)
        .expect("forward runs again");
    compare_with(&second, &first, name, Comparison::models(0.0, 0.0))
        .unwrap_or_else(|problem| panic!("{name}: the cached plan differs: {problem}"));
    second
}

/// The plan graph the executor builds for `name`'s inputs.
fn plan_graph(name: &str, fuse: bool) -> Arc<Graph> {
    let loaded = load_module(&fixture(name, ".pt")).expect("model loads");
    let optimizer = ferrojit_opt::graph_executor::ConfiguredOptimizer(PlanOptions { fuse });
    loaded
        .module
        .graph_for("forward", arguments(name), &optimizer)
        .expect("forward takes the inputs")
        .expect("a plan is built")
}

fn count_kind(graph: &Graph, kind: &str) -> usize {
    graph
        .all_nodes()
        .into_iter()
        .filter(|&node| graph.kind(node).as_str() == kind)
        .count()
}

fn fused_equals_unfused(name: &str) {
    let fused = run(name, &options(true, None));
    let unfused = run(name, &options(false, None));
    compare_with(&fused, &unfused, name, Comparison::models(0.0, 0.0))
        .unwrap_or_else(|problem| panic!("{name}: fused and unfused differ: {problem}"));
    let expected = torch_save::load_file(&fixture(name, ".expected.pt")).expect("expected loads");
    compare_with(&fused, &expected, name, Comparison::models(RTOL, ATOL))
        .unwrap_or_else(|problem| panic!("{name}: differs from PyTorch: {problem}"));
}

#[test]
fn lstm_cell_loop_fused_and_unfused_agree_bitwise() {
    let graph = plan_graph("lstm_cell_loop", true);
    // One group per unrolled step (12), each with its guard.
    let groups = count_kind(&graph, "prim::FusionGroup");
    assert!(
        groups >= 12,
        "only {groups} fusion groups:\n{}",
        graph.to_ir_string()
    );
    assert_eq!(count_kind(&graph, "prim::TypeCheck"), groups);
    let unfused = plan_graph("lstm_cell_loop", false);
    assert_eq!(count_kind(&unfused, "prim::FusionGroup"), 0);
    fused_equals_unfused("lstm_cell_loop");
}

/// The encoder's linears run as `ferrojit::linear_epilogue` when fused (packed GEMM, its
/// own summation order), so fused and unfused agree within tolerance, not bitwise.
#[test]
fn bert_encoder_fused_and_unfused_agree() {
    let fused = run("bert_encoder", &options(true, None));
    let unfused = run("bert_encoder", &options(false, None));
    compare_with(
        &fused,
        &unfused,
        "bert_encoder",
        Comparison::models(RTOL, ATOL),
    )
    .unwrap_or_else(|problem| panic!("bert_encoder: fused and unfused differ: {problem}"));
    let expected =
        torch_save::load_file(&fixture("bert_encoder", ".expected.pt")).expect("expected loads");
    for (what, result) in [("fused", &fused), ("unfused", &unfused)] {
        compare_with(
            result,
            &expected,
            "bert_encoder",
            Comparison::models(RTOL, ATOL),
        )
        .unwrap_or_else(|problem| panic!("bert_encoder {what}: differs from PyTorch: {problem}"));
    }
}

#[test]
fn inspect_optimized_shows_the_lstm_loops_fusion_groups() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_ferrojit"))
        .arg("inspect")
        .arg("--graph")
        .arg("--optimized")
        .arg("--inputs")
        .arg(fixture("lstm_cell_loop", ".inputs.pt"))
        .arg(fixture("lstm_cell_loop", ".pt"))
        .env_remove("FERROJIT_FUSER")
        .output()
        .expect("ferrojit runs");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(text.contains("= prim::FusionGroup_0("), "{text}");
    assert!(text.contains("with prim::FusionGroup_0 = graph("), "{text}");
    assert!(text.contains("prim::TypeCheck[types=["), "{text}");
    // FERROJIT_FUSER=off turns the pass off.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_ferrojit"))
        .arg("inspect")
        .arg("--graph")
        .arg("--optimized")
        .arg("--inputs")
        .arg(fixture("lstm_cell_loop", ".inputs.pt"))
        .arg(fixture("lstm_cell_loop", ".pt"))
        .env("FERROJIT_FUSER", "off")
        .output()
        .expect("ferrojit runs");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!text.contains("prim::FusionGroup"), "{text}");
}

/// A stand-in backend: counts the groups offered, and either declines them or runs the
/// subgraph itself in the interpreter (as a code generator would run compiled code).
struct CountingBackend {
    calls: AtomicUsize,
    keys: std::sync::Mutex<std::collections::HashSet<u64>>,
    runs_groups: bool,
}

impl FusionBackend for CountingBackend {
    fn run_group(
        &self,
        group_key: u64,
        subgraph: &Graph,
        inputs: &[Tensor],
    ) -> Result<Option<Vec<Tensor>>, String> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.keys.lock().unwrap().insert(group_key);
        if !self.runs_groups {
            return Ok(None);
        }
        let inputs = inputs.iter().cloned().map(IValue::from).collect();
        let outputs = run_graph(subgraph, inputs, &NoMethods).map_err(|e| e.to_string())?;
        outputs
            .iter()
            .map(|value| {
                value
                    .to_tensor()
                    .map(|t| (*t).clone())
                    .map_err(|e| e.to_string())
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}

#[test]
fn the_backend_is_offered_each_group_and_a_declined_group_is_interpreted() {
    let unfused = run("lstm_cell_loop", &options(false, None));
    for runs_groups in [false, true] {
        let backend = Arc::new(CountingBackend {
            calls: AtomicUsize::new(0),
            keys: Default::default(),
            runs_groups,
        });
        let result = run("lstm_cell_loop", &options(true, Some(backend.clone())));
        compare_with(
            &result,
            &unfused,
            "lstm_cell_loop",
            Comparison::models(0.0, 0.0),
        )
        .unwrap_or_else(|problem| panic!("backend runs_groups={runs_groups}: {problem}"));
        let calls = backend.calls.load(Ordering::Relaxed);
        let keys = backend.keys.lock().unwrap().len();
        // Two runs of one plan: each group node is offered once per run, under one key.
        assert!(keys >= 12, "{keys} distinct group keys");
        assert_eq!(calls, 2 * keys, "each group offered once per run");
    }
}

/// A backend that returns the wrong number of outputs is an error, not a panic.
struct BrokenBackend;

impl FusionBackend for BrokenBackend {
    fn run_group(&self, _: u64, _: &Graph, _: &[Tensor]) -> Result<Option<Vec<Tensor>>, String> {
        Ok(Some(Vec::new()))
    }
}

#[test]
fn a_backend_returning_the_wrong_outputs_is_an_error() {
    let loaded = load_module(&fixture("lstm_cell_loop", ".pt")).expect("model loads");
    let error = loaded
        .module
        .run_method_with_options(
            "forward",
            arguments("lstm_cell_loop"),
            &options(true, Some(Arc::new(BrokenBackend))),
        )
        .expect_err("the backend's answer is refused");
    assert!(
        error.to_string().contains("returned 0 output(s)"),
        "{error}"
    );
}

/// With the Cranelift backend, the LSTM loop's groups run as native code (every group
/// compiles: f32, flat or strided inputs) and the result stays within the zoo's tolerances of
/// PyTorch's and of the interpreter's.
#[test]
fn lstm_cell_loop_runs_its_groups_as_cranelift_code() {
    let backend = Arc::new(ferrojit_codegen::CraneliftFusionBackend::default());
    let compiled = run(
        "lstm_cell_loop",
        &options(true, Some(backend.clone() as Arc<dyn FusionBackend>)),
    );
    let stats = backend.cache().stats();
    assert!(
        stats.compiled >= 12,
        "only {} groups compiled ({} declined)",
        stats.compiled,
        stats.unsupported
    );
    let interpreted = run("lstm_cell_loop", &options(false, None));
    compare_with(
        &compiled,
        &interpreted,
        "lstm_cell_loop",
        Comparison::models(RTOL, ATOL),
    )
    .unwrap_or_else(|problem| panic!("compiled and interpreted differ: {problem}"));
    let expected =
        torch_save::load_file(&fixture("lstm_cell_loop", ".expected.pt")).expect("expected loads");
    compare_with(
        &compiled,
        &expected,
        "lstm_cell_loop",
        Comparison::models(RTOL, ATOL),
    )
    .unwrap_or_else(|problem| panic!("compiled run differs from PyTorch: {problem}"));
}

/// Epilogue fusion in the encoder (issue 22, item 3 of the GEMM work): each layer's
/// feed-forward `linear → gelu` and its two residual adds after a linear become
/// `ferrojit::linear_epilogue` nodes in the optimized graph, and none with fusion off.
#[test]
fn bert_encoder_plan_has_linear_epilogues() {
    let graph = plan_graph("bert_encoder", true);
    let fused = count_kind(&graph, "ferrojit::linear_epilogue");
    // Two layers, each: ff1 + gelu, out + residual, ff2 + residual.
    assert!(
        fused >= 6,
        "only {fused} linear epilogues:\n{}",
        graph.to_ir_string()
    );
    assert_eq!(
        count_kind(&graph, "aten::gelu"),
        0,
        "a gelu was left unfused"
    );
    let unfused = plan_graph("bert_encoder", false);
    assert_eq!(count_kind(&unfused, "ferrojit::linear_epilogue"), 0);
    assert!(count_kind(&unfused, "aten::linear") >= 6);
}

/// Issue 22, item 1's trailing reduction in the encoder: each layer's attention scores
/// (`matmul → div by sqrt(d) → softmax(-1)`) end in a `prim::FusionGroup` whose subgraph
/// holds the div and the softmax, one group per layer. With the Cranelift backend the groups
/// compile to row kernels, and the result stays within the zoo's tolerances of PyTorch's.
/// `FERROJIT_FUSER=off` (PlanOptions { fuse: false }) forms none.
#[test]
fn bert_encoder_attention_scores_fuse_with_their_softmax() {
    let graph = plan_graph("bert_encoder", true);
    let groups = count_kind(&graph, "prim::FusionGroup");
    assert!(
        groups >= 2,
        "only {groups} fusion groups:\n{}",
        graph.to_ir_string()
    );
    let softmax_groups = graph
        .all_nodes()
        .into_iter()
        .filter(|&node| graph.kind(node).as_str() == "prim::FusionGroup")
        .filter(|&node| match graph.attribute(node, "Subgraph") {
            Some(ferrojit_ir::AttributeValue::Graph(subgraph)) => {
                count_kind(subgraph, "aten::softmax") == 1 && count_kind(subgraph, "aten::div") == 1
            }
            _ => false,
        })
        .count();
    assert!(
        softmax_groups >= 2,
        "{softmax_groups} groups end with the scores' softmax:\n{}",
        graph.to_ir_string()
    );
    let unfused = plan_graph("bert_encoder", false);
    assert_eq!(count_kind(&unfused, "prim::FusionGroup"), 0);

    let backend = Arc::new(ferrojit_codegen::CraneliftFusionBackend::default());
    let compiled = run(
        "bert_encoder",
        &options(true, Some(backend.clone() as Arc<dyn FusionBackend>)),
    );
    let stats = backend.cache().stats();
    assert!(
        stats.compiled >= 2 && stats.unsupported == 0,
        "{} groups compiled, {} declined",
        stats.compiled,
        stats.unsupported
    );
    let expected =
        torch_save::load_file(&fixture("bert_encoder", ".expected.pt")).expect("expected loads");
    compare_with(
        &compiled,
        &expected,
        "bert_encoder",
        Comparison::models(RTOL, ATOL),
    )
    .unwrap_or_else(|problem| panic!("compiled encoder differs from PyTorch: {problem}"));
}
