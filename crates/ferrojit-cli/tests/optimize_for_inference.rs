//! `ferrojit freeze --optimize-for-inference` (issue 19, item 3): the archive it writes loads
//! in ferrojit, its forward has every linear with a constant weight turned into a matmul with
//! the weight transposed ahead of time (PyTorch's `FrozenLinearTranspose`, the CPU pass of
//! `torch.jit.optimize_for_inference` that needs no MKLDNN), and it gives the outputs PyTorch
//! recorded for the unfrozen model (tests/fixtures/zoo/generate.py; rtol 1e-4, atol 1e-5).
//! tests/fixtures/zoo/check_frozen_in_pytorch.py checks the same archives in PyTorch.

use std::path::PathBuf;
use std::process::Command;

use ferrojit_conformance::{compare_with, repo_root, Comparison};
use ferrojit_ir::Graph;
use ferrojit_runtime::IValue;
use ferrojit_serialize::import::load_module;
use ferrojit_serialize::torch_save;

fn zoo_file(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures/zoo").join(name)
}

fn temporary(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "ferrojit-optimize-for-inference-test-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn count(graph: &Graph, kind: &str) -> usize {
    graph
        .all_nodes()
        .into_iter()
        .filter(|&node| graph.kind(node).is(kind))
        .count()
}

/// Runs `ferrojit freeze FLAG` on zoo model `name`; the reloaded archive.
fn freeze_with(name: &str, flag: &str) -> ferrojit_serialize::import::LoadedModule {
    let output = temporary(&format!("{name}{flag}.pt"));
    let run = Command::new(env!("CARGO_BIN_EXE_ferrojit"))
        .args(["freeze", flag])
        .arg(zoo_file(&format!("{name}.pt")))
        .arg("-o")
        .arg(&output)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{name} {flag}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    load_module(&output).unwrap_or_else(|e| panic!("{name}: reload: {e}"))
}

fn forward_graph(loaded: &ferrojit_serialize::import::LoadedModule) -> Graph {
    let methods = loaded.module.object().methods().clone();
    let graph = methods
        .method_graph(loaded.module.class(), "forward")
        .expect("forward has a graph");
    graph.as_ref().clone()
}

/// Optimizes zoo model `name` with the command, reloads it, and checks its forward graph and
/// results against the plain frozen one's: every linear became a matmul. Returns the number
/// of matmuls in the optimized forward.
fn optimize_and_check(name: &str) -> usize {
    let optimized = freeze_with(name, "--optimize-for-inference");
    let frozen = forward_graph(&freeze_with(name, "--eval"));
    assert!(
        optimized.module.attr("training").is_err(),
        "{name}: the optimized module is frozen"
    );
    let graph = forward_graph(&optimized);
    assert_eq!(
        count(&graph, "aten::linear"),
        0,
        "{name}: a linear with a constant weight is left:\n{}",
        graph.to_ir_string()
    );
    assert_eq!(
        count(&graph, "aten::matmul"),
        count(&frozen, "aten::matmul") + count(&frozen, "aten::linear"),
        "{name}: each linear of the frozen graph becomes one matmul"
    );
    let arguments = match torch_save::load_file(&zoo_file(&format!("{name}.inputs.pt"))).unwrap() {
        IValue::Tuple(tuple) => tuple.items.to_vec(),
        other => vec![other],
    };
    let expected = torch_save::load_file(&zoo_file(&format!("{name}.expected.pt"))).unwrap();
    let actual = optimized
        .module
        .forward(arguments)
        .unwrap_or_else(|e| panic!("{name}: forward of the optimized module: {e}"));
    if let Err(problem) = compare_with(&actual, &expected, name, Comparison::models(1e-4, 1e-5)) {
        panic!("{name}: optimized result differs from PyTorch's: {problem}");
    }
    count(&graph, "aten::matmul")
}

#[test]
fn bert_tiny_linears_become_matmuls_and_results_match() {
    assert!(optimize_and_check("bert_tiny") > 0);
}

#[test]
fn small_cnn_classifier_linear_becomes_a_matmul_and_results_match() {
    // One classifier linear, nothing else multiplies matrices.
    assert_eq!(optimize_and_check("small_cnn_scripted"), 1);
}

#[test]
fn training_mode_module_is_put_in_eval_mode_first() {
    // lstm_1layer is saved in training mode: plain `freeze` refuses it without --eval, and
    // --optimize-for-inference calls eval() itself, as PyTorch's function does.
    assert_eq!(optimize_and_check("lstm_1layer"), 0);
}
