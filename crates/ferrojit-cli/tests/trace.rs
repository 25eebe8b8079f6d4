//! `ferrojit trace`: traces a fixture function (tests/fixtures/trace), prints PyTorch's
//! TracerWarning text on stderr, writes an archive ferrojit loads and runs with PyTorch's
//! trace results, and fails with one `error:` line on what it cannot trace.

use std::path::PathBuf;
use std::process::Command;

use ferrojit_runtime::IValue;
use ferrojit_serialize::import::load_module;
use ferrojit_serialize::torch_save;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/trace")
        .join(name)
}

fn trace(entry: &str, inputs: &str, output: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ferrojit"))
        .arg("trace")
        .arg(fixture("functions.py"))
        .args(["--entry", entry, "--inputs"])
        .arg(fixture(inputs))
        .arg("-o")
        .arg(output)
        .output()
        .expect("ferrojit runs")
}

fn max_difference(actual: &IValue, expected: &IValue) -> f64 {
    let actual = actual.to_tensor().expect("tensor").to_f64_vec();
    let expected = expected.to_tensor().expect("tensor").to_f64_vec();
    assert_eq!(actual.len(), expected.len());
    actual
        .iter()
        .zip(&expected)
        .map(|(a, e)| (a - e).abs())
        .fold(0.0, f64::max)
}

#[test]
fn traces_a_function_with_a_frozen_branch_and_prints_the_warning() {
    let dir = std::env::temp_dir().join(format!("ferrojit-trace-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let output = dir.join("branch_on_float.pt");
    let result = trace("branch_on_float", "data/branch_on_float.inputs.pt", &output);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("warning: TracerWarning: "))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].contains("Converting a tensor to a Python float"));

    let loaded = load_module(&output).expect("the trace loads");
    let inputs = match torch_save::load_file(&fixture("data/branch_on_float.other1.pt")).unwrap() {
        IValue::Tuple(tuple) => tuple.items.to_vec(),
        other => vec![other],
    };
    let expected = torch_save::load_file(&fixture("data/branch_on_float.expected1.pt")).unwrap();
    let actual = loaded.module.run_method("forward", inputs).expect("runs");
    assert!(max_difference(&actual, &expected) < 1e-6);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_unknown_entry_is_one_error_line() {
    let output =
        std::env::temp_dir().join(format!("ferrojit-trace-none-{}.pt", std::process::id()));
    let result = trace("no_such_function", "data/view_batch.inputs.pt", &output);
    assert!(!result.status.success());
    let stderr = String::from_utf8_lossy(&result.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with("error: ") && lines[0].contains("no_such_function"),
        "{stderr}"
    );
    assert!(!output.exists());
}

#[test]
fn check_inputs_refuse_a_trace_that_diverges_and_accept_one_that_generalizes() {
    let dir = std::env::temp_dir().join(format!("ferrojit-trace-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let run = |entry: &str, check: &str, output: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_ferrojit"))
            .arg("trace")
            .arg(fixture("functions.py"))
            .args(["--entry", entry, "--inputs"])
            .arg(fixture(&format!("data/{entry}.inputs.pt")))
            .arg("--check-inputs")
            .arg(fixture(check))
            .arg("-o")
            .arg(output)
            .output()
            .expect("ferrojit runs")
    };
    let diverging = dir.join("branch_on_sum.pt");
    let result = run("branch_on_sum", "data/branch_on_sum.other1.pt", &diverging);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(!result.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "Tracing failed sanity checks!\nERROR: Graphs differed across invocations!\n"
        ),
        "{stderr}"
    );
    let last = stderr.lines().last().unwrap_or("");
    assert!(
        last.starts_with("error: torch.jit.TracingCheckError"),
        "{stderr}"
    );
    assert!(!diverging.exists());

    let general = dir.join("view_batch.pt");
    let result = run("view_batch", "data/view_batch.other2.pt", &general);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    assert!(general.exists());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn retraces_a_scripted_module_archive() {
    let zoo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/zoo");
    let output = std::env::temp_dir().join(format!("ferrojit-retrace-{}.pt", std::process::id()));
    let result = Command::new(env!("CARGO_BIN_EXE_ferrojit"))
        .arg("trace")
        .arg(zoo.join("small_cnn_scripted.pt"))
        .arg("--inputs")
        .arg(zoo.join("small_cnn_scripted.inputs.pt"))
        .arg("-o")
        .arg(&output)
        .output()
        .expect("ferrojit runs");
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let loaded = load_module(&output).expect("the trace loads");
    let inputs = match torch_save::load_file(&zoo.join("small_cnn_scripted.inputs.pt")).unwrap() {
        IValue::Tuple(tuple) => tuple.items.to_vec(),
        other => vec![other],
    };
    let expected = torch_save::load_file(&zoo.join("small_cnn_scripted.expected.pt")).unwrap();
    let actual = loaded.module.run_method("forward", inputs).expect("runs");
    assert!(max_difference(&actual, &expected) < 1e-4);
    std::fs::remove_file(&output).ok();
}
