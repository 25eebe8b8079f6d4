//! `inspect --graph --optimized` for a call whose input requires grad (issue 23 item 5): the
//! plan shows a `prim::DifferentiableGraph` with its subgraph printed the way PyTorch prints
//! it, as PyTorch's own optimized graph for the same call has one
//! (tests/fixtures/diffgraph/generate.py keeps PyTorch's in mlp_scripted.pytorch_optimized.txt).

use std::path::PathBuf;
use std::process::Command;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/diffgraph")
}

#[test]
fn optimized_graph_of_a_call_requiring_grad_shows_a_differentiable_graph() {
    let model = fixtures().join("mlp_scripted.pt");
    let inputs = fixtures().join("mlp_scripted.inputs.pt");
    let output = Command::new(env!("CARGO_BIN_EXE_ferrojit"))
        .args([
            "inspect",
            model.to_str().unwrap(),
            "--graph",
            "--optimized",
            "--inputs",
        ])
        .arg(&inputs)
        .output()
        .expect("the ferrojit binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let printed = String::from_utf8(output.stdout).expect("UTF-8 output");
    let pytorch = std::fs::read_to_string(fixtures().join("mlp_scripted.pytorch_optimized.txt"))
        .expect("PyTorch's optimized graph");
    for text in [&printed, &pytorch] {
        assert!(text.contains("= prim::DifferentiableGraph_0("), "{text}");
        assert!(
            text.contains("with prim::DifferentiableGraph_0 = graph("),
            "{text}"
        );
    }
    // The same operators are grouped: both linears, the relu, the tanh and the mean.
    let section = printed
        .split("with prim::DifferentiableGraph_0 = graph(")
        .nth(1)
        .expect("the subgraph section");
    for operator in ["aten::linear", "aten::relu", "aten::tanh", "aten::mean"] {
        assert!(
            section.contains(operator),
            "{operator} is not grouped:\n{printed}"
        );
    }
    assert_eq!(section.matches("aten::linear(").count(), 2, "{printed}");
}

/// `inspect --graph --optimized --grad` on a module whose parameters require grad and whose
/// input does not (the usual training case): the plan of a call that records gradients has
/// differentiable graphs, printed as PyTorch prints them, as PyTorch's own plan for the call
/// has (lstm_params.pytorch_optimized.txt), with the LSTM cell's linears, `chunk` and `cat`
/// inside.
#[test]
fn optimized_graph_with_grad_groups_a_modules_parameters() {
    let model = fixtures().join("lstm_params.pt");
    let inputs = fixtures().join("lstm_params.inputs.pt");
    let output = Command::new(env!("CARGO_BIN_EXE_ferrojit"))
        .args([
            "inspect",
            model.to_str().unwrap(),
            "--graph",
            "--optimized",
            "--grad",
            "--inputs",
        ])
        .arg(&inputs)
        .output()
        .expect("the ferrojit binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let printed = String::from_utf8(output.stdout).expect("UTF-8 output");
    let pytorch = std::fs::read_to_string(fixtures().join("lstm_params.pytorch_optimized.txt"))
        .expect("PyTorch's optimized graph");
    for text in [&printed, &pytorch] {
        assert!(text.contains("= prim::DifferentiableGraph_0("), "{text}");
        assert!(
            text.contains("with prim::DifferentiableGraph_0 = graph("),
            "{text}"
        );
    }
    let sections = printed
        .split_once("with prim::DifferentiableGraph_0 = graph(")
        .expect("the subgraph sections")
        .1;
    for operator in [
        "aten::linear(",
        "aten::chunk(",
        "aten::sigmoid(",
        "aten::cat(",
    ] {
        assert!(
            sections.contains(operator),
            "{operator} is not grouped:\n{printed}"
        );
    }
}

/// `--grad` shapes the optimized plan only.
#[test]
fn grad_without_optimized_is_refused() {
    let model = fixtures().join("lstm_params.pt");
    let output = Command::new(env!("CARGO_BIN_EXE_ferrojit"))
        .args(["inspect", model.to_str().unwrap(), "--graph", "--grad"])
        .output()
        .expect("the ferrojit binary runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--grad needs --optimized"), "{stderr}");
}
