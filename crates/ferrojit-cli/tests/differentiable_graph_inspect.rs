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
