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

/// `ferrojit run PROGRAM.pt2 --inputs ... --output ...` writes PyTorch's result for the
/// fixture's first call (float32 tolerance rtol 1e-4, atol 1e-5).
fn run_matches_the_first_call(program: &str) {
    let out =
        std::env::temp_dir().join(format!("ferrojit-pt2-{program}-{}.pt", std::process::id()));
    let output = ferrojit(&[
        "run".as_ref(),
        fixture(&format!("{program}.pt2")).as_os_str(),
        "--inputs".as_ref(),
        fixture(&format!("{program}.call0.inputs.pt")).as_os_str(),
        "--output".as_ref(),
        out.as_os_str(),
    ]);
    assert!(output.status.success(), "{:?}", stderr_lines(&output));
    let actual = ferrojit_serialize::torch_save::load_file(&out).unwrap();
    let expected = ferrojit_serialize::torch_save::load_file(&fixture(&format!(
        "{program}.call0.expected.pt"
    )))
    .unwrap();
    let (a, e) = (actual.to_tensor().unwrap(), expected.to_tensor().unwrap());
    assert_eq!(a.sizes(), e.sizes());
    for (x, y) in a.to_f64_vec().iter().zip(e.to_f64_vec()) {
        assert!((x - y).abs() <= 1e-5 + 1e-4 * y.abs(), "{x} vs {y}");
    }
    let _ = std::fs::remove_file(out);
}

#[test]
fn run_writes_pytorchs_result() {
    run_matches_the_first_call("mlp");
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
fn inspect_model_shows_another_program_of_the_archive() {
    for (model, expected) in [
        ("model", "two_programs_model.graph.txt"),
        ("second", "two_programs_second.graph.txt"),
    ] {
        let output = ferrojit(&[
            "inspect".as_ref(),
            fixture("two_programs.pt2").as_os_str(),
            "--graph".as_ref(),
            "--model".as_ref(),
            model.as_ref(),
        ]);
        assert!(output.status.success(), "{:?}", stderr_lines(&output));
        let expected = std::fs::read_to_string(fixture(expected)).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&output.stdout).trim_end(),
            expected.trim_end()
        );
    }
    let output = ferrojit(&[
        "inspect".as_ref(),
        fixture("two_programs.pt2").as_os_str(),
        "--summary".as_ref(),
        "--model".as_ref(),
        "third".as_ref(),
    ]);
    assert!(!output.status.success());
    let lines = stderr_lines(&output);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("third"), "{lines:?}");
}

#[test]
fn inspect_into_a_closed_pipe_ends_cleanly() {
    // `ferrojit inspect big.pt2 --graph | head -1`: the reader goes away before the output is
    // written (the graph is larger than a pipe's buffer, too), so the writes fail with EPIPE.
    for view in ["--graph", "--code", "--summary"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ferrojit"))
            .args([
                "inspect".as_ref(),
                fixture("mobilenet_v3_small.pt2").as_os_str(),
                view.as_ref(),
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("ferrojit runs");
        drop(child.stdout.take());
        let output = child.wait_with_output().expect("ferrojit ends");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked"), "{view}: {stderr}");
        assert!(output.status.success(), "{view}: {stderr}");
    }
}

#[test]
fn inspect_summary_shows_the_signature_state_and_ranges() {
    let output = ferrojit(&[
        "inspect".as_ref(),
        fixture("dynamic_batch_sequence.pt2").as_os_str(),
        "--summary".as_ref(),
    ]);
    assert!(output.status.success(), "{:?}", stderr_lines(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = text.lines().collect();
    for expected in [
        "program: model (the archive holds: model)",
        "signature: forward(x: float32[s67, s27, 8], pairs: float32[s67, 2*s27, 8]) -> (float32[s67, s27, 8], float32[s27*s67])",
        "# inputs",
        "p_proj_weight: PARAMETER target='proj.weight'",
        "p_proj_bias: PARAMETER target='proj.bias'",
        "x: USER_INPUT",
        "pairs: USER_INPUT",
        "# outputs",
        "state dict (2 tensors):",
        "  proj.bias: float32[8]",
        "  proj.weight: float32[8, 8]",
        "constants (0 tensors):",
        "range constraints:",
        "  s67: [1, 16]",
        "  s27: [2, 64]",
        "  2*s27: [4, 128]",
    ] {
        assert!(lines.contains(&expected), "no line {expected:?} in:\n{text}");
    }
    assert!(text.starts_with("program: model"), "{text}");
    assert!(
        lines.iter().any(|line| line.ends_with(": USER_OUTPUT")),
        "{text}"
    );
}

#[test]
fn ops_core_counts_the_core_aten_overloads_the_registry_holds() {
    let output = ferrojit(&["ops".as_ref(), "--core".as_ref()]);
    assert!(output.status.success(), "{:?}", stderr_lines(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    let core: Vec<String> = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/core_aten_ops.txt"),
    )
    .unwrap()
    .lines()
    .filter(|line| !line.is_empty() && !line.starts_with('#'))
    .map(str::to_string)
    .collect();
    assert_eq!(core.len(), 189, "torch 2.15 tags 189 overloads core");
    // What the .pt2 runner finds, counted here rather than trusted from the output.
    ferrojit_torchvision::register().unwrap();
    let missing: Vec<&String> = core
        .iter()
        .filter(|name| !ferrojit_export::fallback::runs_operator(name))
        .collect();
    let first = text.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        format!("core ATen: {}/189 overloads", core.len() - missing.len())
    );
    let listed: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("  "))
        .collect();
    assert_eq!(
        listed,
        missing.iter().map(|name| name.as_str()).collect::<Vec<_>>()
    );
}

#[test]
fn run_reads_the_older_flat_layout() {
    run_matches_the_first_call("flat_layout");
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
