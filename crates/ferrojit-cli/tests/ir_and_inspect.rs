//! `ferrojit ir` and `ferrojit inspect` as a user runs them: every graph PyTorch printed
//! (tests/fixtures/ir/corpus) comes back byte for byte from `ferrojit ir`; invalid IR gets one
//! located `error:` line; `inspect` shows a PyTorch-saved module's tree, graph and code.
//! Expected shapes and names come from the fixture's definition in tests/fixtures/generate.py
//! (`Linear(4, 8)`, `ReLU()`, `Linear(8, 3)`, buffer `offset` of 3 elements).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ferrojit_ir::filecheck::run_directives;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn ferrojit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferrojit"))
        .args(args)
        .output()
        .expect("the ferrojit binary runs")
}

fn stdout_of(args: &[&str]) -> String {
    let output = ferrojit(args);
    assert!(
        output.status.success(),
        "ferrojit {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

#[test]
fn ir_command_prints_every_pytorch_graph_back_identically() {
    let corpus = repo_root().join("tests/fixtures/ir/corpus");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .expect("corpus folder")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "ir"))
        .collect();
    files.sort();
    assert!(files.len() >= 48, "corpus too small: {}", files.len());
    let mut differing = Vec::new();
    for file in &files {
        let printed = stdout_of(&["ir", file.to_str().expect("UTF-8 path")]);
        let original = std::fs::read_to_string(file).expect("readable corpus file");
        if printed != original {
            differing.push(file.display().to_string());
        }
    }
    assert!(differing.is_empty(), "printed differently: {differing:?}");
}

#[test]
fn ir_command_reports_the_line_and_column_of_bad_text() {
    let directory = std::env::temp_dir().join(format!("ferrojit-ir-test-{}", std::process::id()));
    std::fs::create_dir_all(&directory).expect("temporary folder");
    let file = directory.join("bad.ir");
    std::fs::write(
        &file,
        "graph(%x : int):\n  %3 : int = aten::add(%x, %y)\n  return (%3)\n",
    )
    .expect("write the case");
    let output = ferrojit(&["ir", file.to_str().expect("UTF-8 path")]);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    std::fs::remove_dir_all(&directory).ok();
    assert!(!output.status.success());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains("bad.ir:2:"), "no line number: {stderr}");
    assert!(stderr.contains("%y is not defined"), "{stderr}");
}

fn scripted_module() -> String {
    repo_root()
        .join("tests/fixtures/e2e/scripted_module.pt")
        .to_str()
        .expect("UTF-8 path")
        .to_string()
}

fn check(directives: &str, text: &str) {
    if let Err(error) = run_directives(directives, text) {
        panic!("{error}\n--- output was:\n{text}");
    }
}

#[test]
fn inspect_summary_lists_submodules_parameters_and_buffers_with_shapes() {
    let summary = stdout_of(&["inspect", &scripted_module(), "--summary"]);
    check(
        "# CHECK: all 4 modules: training=False
         # CHECK-NEXT: <root>: ScriptedModule
         # CHECK-DAG: buffer offset: Tensor torch.float32 [3]
         # CHECK: fc1: torch.nn.modules.linear.Linear
         # CHECK-NEXT: parameter weight: Tensor torch.float32 [8, 4]
         # CHECK-NEXT: parameter bias: Tensor torch.float32 [8]
         # CHECK: relu: torch.nn.modules.activation.ReLU
         # CHECK: fc2:
         # CHECK-NEXT: parameter weight: Tensor torch.float32 [3, 8]",
        &summary,
    );
    // Attributes every nn.Module has are shown once, on the first line, not on every module.
    assert_eq!(summary.matches("training").count(), 1, "{summary}");
    assert!(!summary.contains("_is_full_backward_hook"), "{summary}");
    assert!(!summary.contains("___torch_mangle"), "{summary}");
}

#[test]
fn inspect_graph_and_code_show_the_forward_method() {
    let model = scripted_module();
    let graph = stdout_of(&["inspect", &model, "--graph"]);
    check(
        "# CHECK: graph(%self : __torch__.ScriptedModule,
         # CHECK: %scale : float
         # CHECK-COUNT-3: prim::CallMethod[name=\"forward\"]
         # CHECK: aten::mul
         # CHECK: prim::GetAttr[name=\"offset\"]
         # CHECK: aten::add
         # CHECK: return",
        &graph,
    );
    let code = stdout_of(&["inspect", &model, "--code"]);
    check(
        "# CHECK: class ScriptedModule(Module):
         # CHECK: __buffers__ = [\"offset\", ]
         # CHECK: def forward(self: __torch__.ScriptedModule,
         # CHECK: return torch.add(",
        &code,
    );
}

#[test]
fn inspect_names_the_methods_when_one_is_missing() {
    let output = ferrojit(&["inspect", &scripted_module(), "--graph", "--method", "nope"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("has no method 'nope'"), "{stderr}");
    assert!(stderr.contains("forward"), "{stderr}");
    assert!(Path::new(&scripted_module()).exists());
}

#[test]
fn inspect_with_no_view_shows_the_summary() {
    let model = scripted_module();
    let summary = stdout_of(&["inspect", &model, "--summary"]);
    assert!(!summary.is_empty());
    assert_eq!(stdout_of(&["inspect", &model]), summary);
    let program = repo_root().join("examples/mlp.pt2").display().to_string();
    let summary = stdout_of(&["inspect", &program, "--summary"]);
    assert_eq!(stdout_of(&["inspect", &program]), summary);
}

/// `inspect --graph --optimized --inputs` prints the plan the optimizing executor runs for
/// those inputs (PyTorch's `graph_for`): calls inlined, the input's complete type from the
/// inputs (SmallCNN's input in tests/fixtures/zoo/generate.py is `randn(2, 3, 16, 16)`), and
/// the batch-norm rank checks folded away by shape propagation and the peephole.
#[test]
fn inspect_optimized_graph_shows_the_specialized_plan() {
    let zoo = repo_root().join("tests/fixtures/zoo");
    let model = zoo.join("small_cnn_scripted.pt");
    let inputs = zoo.join("small_cnn_scripted.inputs.pt");
    let (model, inputs) = (model.to_str().unwrap(), inputs.to_str().unwrap());
    let written = stdout_of(&["inspect", model, "--graph"]);
    assert!(written.contains("prim::CallMethod"), "{written}");
    let optimized = stdout_of(&[
        "inspect",
        model,
        "--graph",
        "--optimized",
        "--inputs",
        inputs,
    ]);
    check(
        "# CHECK: %x : Float(2, 3, 16, 16, strides=[768, 256, 16, 1], requires_grad=0, device=cpu)
# CHECK-NOT: prim::CallMethod
# CHECK: aten::conv2d
# CHECK-NOT: aten::dim",
        &optimized,
    );
    let output = ferrojit(&["inspect", model, "--graph", "--optimized"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--inputs"), "{stderr}");
}

/// `run --no-optimize` and the default optimized run print the same result.
#[test]
fn run_gives_the_same_result_with_and_without_the_optimizer() {
    let zoo = repo_root().join("tests/fixtures/zoo");
    for name in ["small_cnn_scripted", "bert_tiny", "lstm_1layer"] {
        let model = zoo.join(format!("{name}.pt"));
        let inputs = zoo.join(format!("{name}.inputs.pt"));
        let (model, inputs) = (model.to_str().unwrap(), inputs.to_str().unwrap());
        let optimized = stdout_of(&["run", model, "--inputs", inputs]);
        let plain = stdout_of(&["run", model, "--inputs", inputs, "--no-optimize"]);
        assert_eq!(optimized, plain, "{name}");
    }
}
