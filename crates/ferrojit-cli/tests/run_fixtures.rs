//! End-to-end: `ferrojit run` on archives saved by real PyTorch, compared with the outputs
//! PyTorch computed (tests/fixtures/e2e, made by tests/fixtures/generate.py).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{assert_matches, fixture, read_json};
use ferrojit_serialize::torch_save;

fn ferrojit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ferrojit"))
}

fn scratch_dir(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(test);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(args: &[&Path]) -> Output {
    let mut command = ferrojit();
    command.arg("run");
    command.arg(args[0]);
    if let Some(inputs) = args.get(1) {
        command.arg("--inputs").arg(inputs);
    }
    if let Some(output) = args.get(2) {
        command.arg("--output").arg(output);
    }
    command.output().expect("ferrojit binary runs")
}

/// Runs fixture `name` and checks the written output against PyTorch's result.
fn check_fixture(name: &str) {
    let model = fixture(&format!("e2e/{name}.pt"));
    let inputs = fixture(&format!("e2e/{name}.inputs.pt"));
    let output = scratch_dir("run_fixtures").join(format!("{name}.out.pt"));
    let _ = std::fs::remove_file(&output);
    let result = run(&[&model, &inputs, &output]);
    assert!(
        result.status.success(),
        "{name}: ferrojit failed: {}",
        String::from_utf8_lossy(&result.stderr)
    );
    // The output file must be a torch.save file our reader (and PyTorch's) accepts.
    let value =
        torch_save::load_file(&output).unwrap_or_else(|e| panic!("{name}: output unreadable: {e}"));
    let expected = read_json(&fixture(&format!("e2e/{name}.expected.json")));
    assert_matches(&value, &expected, name);
}

#[test]
fn scripted_function_with_loop_and_branch() {
    check_fixture("scripted_fn");
}

#[test]
fn scripted_module_with_linears_relu_buffer_and_float_argument() {
    check_fixture("scripted_module");
}

#[test]
fn traced_mlp() {
    check_fixture("traced_mlp");
}

#[test]
fn int_tensor_with_python_scalars_promotes_like_pytorch() {
    check_fixture("int_promotion");
}

#[test]
fn while_loop_with_early_return_and_lists() {
    check_fixture("while_loop");
}

#[test]
fn in_place_ops_through_views() {
    check_fixture("views_inplace");
}

#[test]
fn traced_model_with_tensor_constants() {
    check_fixture("traced_constants");
}

#[test]
fn raised_exception_prints_pytorchs_traceback_then_one_error_line() {
    let model = fixture("e2e/raises.pt");
    let result = run(&[&model, &fixture("e2e/raises.inputs.pt")]);
    assert!(!result.status.success());
    let stderr = String::from_utf8_lossy(&result.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    let error_lines = lines.iter().filter(|l| l.starts_with("error: ")).count();
    assert_eq!(error_lines, 1, "one error line: {stderr}");
    assert!(lines.last().unwrap().starts_with("error: "), "{stderr}");
    // The traceback above it is PyTorch's, "serialized code" and "original code" (from the
    // archive's .debug_pkl) sections, character for character: raises.expected_error_full.txt
    // is torch.jit's message for this call, whose last line is the message.
    let full = std::fs::read_to_string(fixture("e2e/raises.expected_error_full.txt")).unwrap();
    let start = full
        .find("Traceback of TorchScript, serialized code")
        .unwrap();
    let block = full[start..].trim_end();
    let expected_traceback = &block[..block.rfind('\n').unwrap() + 1];
    let traceback = &stderr[..stderr.rfind("error: ").unwrap()];
    assert_eq!(traceback, expected_traceback);
    let expected = std::fs::read_to_string(fixture("e2e/raises.expected_error.txt")).unwrap();
    // PyTorch's last line is "builtins.Exception: negative input"; the message must appear.
    let message = expected.trim().rsplit(": ").next().unwrap();
    assert!(
        stderr.contains(message),
        "{stderr} should contain {message}"
    );

    // The same model on inputs that do not raise gives PyTorch's value.
    let output = scratch_dir("raises").join("ok.out.pt");
    let result = run(&[&model, &fixture("e2e/raises.ok_inputs.pt"), &output]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let value = torch_save::load_file(&output).unwrap();
    assert_matches(
        &value,
        &read_json(&fixture("e2e/raises.ok_expected.json")),
        "raises.ok",
    );
}

#[test]
fn bundled_example_runs_and_prints_its_result() {
    let root = common::repo_root();
    let result = run(&[
        &root.join("examples/mlp.pt"),
        &root.join("examples/mlp_inputs.pt"),
    ]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(
        stdout.starts_with("tensor("),
        "prints the result tensor: {stdout}"
    );
}
