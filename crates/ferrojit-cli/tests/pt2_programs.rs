//! `ferrojit run` and `ferrojit inspect` on torch.export `.pt2` fixtures
//! (`tests/fixtures/export`, written by PyTorch): the result file reads back as PyTorch's
//! output, `--graph` prints PyTorch's text, and bad inputs give one `error:` line.

use std::path::PathBuf;
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/export")
        .join(name)
}

fn ferrojit(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferrojit"))
        .args(args)
        .output()
        .expect("ferrojit runs")
}

fn stderr_lines(output: &Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn run_writes_pytorchs_result() {
    let out = std::env::temp_dir().join(format!("ferrojit-pt2-{}.pt", std::process::id()));
    let output = ferrojit(&[
        "run".as_ref(),
        fixture("mlp.pt2").as_os_str(),
        "--inputs".as_ref(),
        fixture("mlp.call0.inputs.pt").as_os_str(),
        "--output".as_ref(),
        out.as_os_str(),
    ]);
    assert!(output.status.success(), "{:?}", stderr_lines(&output));
    let actual = ferrojit_serialize::torch_save::load_file(&out).unwrap();
    let expected =
        ferrojit_serialize::torch_save::load_file(&fixture("mlp.call0.expected.pt")).unwrap();
    let (a, e) = (actual.to_tensor().unwrap(), expected.to_tensor().unwrap());
    assert_eq!(a.sizes(), e.sizes());
    for (x, y) in a.to_f64_vec().iter().zip(e.to_f64_vec()) {
        assert!((x - y).abs() <= 1e-5 + 1e-4 * y.abs(), "{x} vs {y}");
    }
    let _ = std::fs::remove_file(out);
}

#[test]
fn inspect_graph_prints_pytorchs_text() {
    let output = ferrojit(&[
        "inspect".as_ref(),
        fixture("cond.pt2").as_os_str(),
        "--graph".as_ref(),
    ]);
    assert!(output.status.success(), "{:?}", stderr_lines(&output));
    let expected = std::fs::read_to_string(fixture("cond.graph.txt")).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim_end(),
        expected.trim_end()
    );
}

#[test]
fn a_rejected_input_is_one_error_line() {
    let output = ferrojit(&[
        "run".as_ref(),
        fixture("dynamic_batch.pt2").as_os_str(),
        "--inputs".as_ref(),
        fixture("dynamic_batch.reject_wrong_feature_size.inputs.pt").as_os_str(),
    ]);
    assert!(!output.status.success());
    let lines = stderr_lines(&output);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("error: ") && lines[0].contains("shape[1]"),
        "{lines:?}"
    );
}

#[test]
fn another_program_of_the_archive_runs_by_name() {
    let output = ferrojit(&[
        "run".as_ref(),
        fixture("two_programs.pt2").as_os_str(),
        "--model".as_ref(),
        "second".as_ref(),
        "--inputs".as_ref(),
        fixture("two_programs_second.call0.inputs.pt").as_os_str(),
    ]);
    assert!(output.status.success(), "{:?}", stderr_lines(&output));
}

#[test]
fn inspect_code_prints_pytorchs_code() {
    let output = ferrojit(&[
        "inspect".as_ref(),
        fixture("split_unbind.pt2").as_os_str(),
        "--code".as_ref(),
    ]);
    assert!(output.status.success(), "{:?}", stderr_lines(&output));
    let expected = std::fs::read_to_string(fixture("split_unbind.code.txt")).unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout), expected);
}

#[test]
fn run_reads_the_older_flat_layout() {
    let out = std::env::temp_dir().join(format!("ferrojit-pt2-flat-{}.pt", std::process::id()));
    let output = ferrojit(&[
        "run".as_ref(),
        fixture("flat_layout.pt2").as_os_str(),
        "--inputs".as_ref(),
        fixture("flat_layout.call0.inputs.pt").as_os_str(),
        "--output".as_ref(),
        out.as_os_str(),
    ]);
    assert!(output.status.success(), "{:?}", stderr_lines(&output));
    let actual = ferrojit_serialize::torch_save::load_file(&out).unwrap();
    let expected =
        ferrojit_serialize::torch_save::load_file(&fixture("flat_layout.call0.expected.pt"))
            .unwrap();
    let (a, e) = (actual.to_tensor().unwrap(), expected.to_tensor().unwrap());
    assert_eq!(a.sizes(), e.sizes());
    for (x, y) in a.to_f64_vec().iter().zip(e.to_f64_vec()) {
        assert!((x - y).abs() <= 1e-5 + 1e-4 * y.abs(), "{x} vs {y}");
    }
    let _ = std::fs::remove_file(out);
}

#[test]
fn inspect_summary_mentions_the_sample_inputs() {
    let output = ferrojit(&[
        "inspect".as_ref(),
        fixture("mlp.pt2").as_os_str(),
        "--summary".as_ref(),
    ]);
    assert!(output.status.success(), "{:?}", stderr_lines(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("sample inputs: 1 positional, 0 keyword"),
        "{text}"
    );
}
