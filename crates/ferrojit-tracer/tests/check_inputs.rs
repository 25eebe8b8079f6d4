//! `check_trace` (PyTorch's `check_inputs`) against PyTorch's own results for the same
//! functions and input sets (tests/fixtures/trace/cases.json, "checks"): a trace that
//! diverges is a `TracingCheckError` with PyTorch's message layout and constant comparison,
//! a trace that generalizes passes, and the TracerWarnings (the retrace's, then the output
//! mismatches with their largest differences) are PyTorch's word for word.

use std::path::{Path, PathBuf};

use ferrojit_runtime::IValue;
use ferrojit_serialize::torch_save;
use ferrojit_tracer::{check_trace, trace_source};

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/trace")
}

fn positional(path: &Path) -> Vec<IValue> {
    match torch_save::load_file(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())) {
        IValue::Tuple(tuple) => tuple.items.to_vec(),
        other => vec![other],
    }
}

/// The lines of a TracingCheckError message that do not depend on how graphs print
/// (PyTorch's carry source locations and Python variable names): the headers, and the
/// constant comparison's scalar lines. "First diverging operator" is left out: PyTorch
/// finds one even where the nodes differ only in their Python variable names (`%y` and
/// `%y.5` in an unrolled loop), which ferrojit's graphs do not have.
fn structure(message: &str) -> Vec<String> {
    message
        .lines()
        .map(|line| line.trim_start_matches('\t'))
        .filter(|line| {
            line.starts_with("Tracing failed")
                || line.starts_with("ERROR:")
                || line.starts_with("Graph diff:")
                || line.starts_with("Comparison exception:")
                || line.starts_with("Expected ")
                || line.starts_with("Absolute difference:")
                || line.starts_with("Relative difference:")
                || line.starts_with("Scalars are not close")
        })
        .map(|line| {
            line.trim_start_matches("Comparison exception: ")
                .trim()
                .to_string()
        })
        .collect()
}

#[test]
fn check_inputs_report_as_pytorch_reports() {
    let dir = fixture_dir();
    let source = std::fs::read_to_string(dir.join("functions.py")).expect("functions.py");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).expect("cases"))
            .expect("cases.json parses");
    let checks = manifest["checks"].as_array().expect("checks");
    assert!(checks.len() >= 5);
    let mut failures = Vec::new();
    let mut errors_seen = 0;
    for check in checks {
        let name = check["name"].as_str().expect("name");
        let set = check["check_set"].as_u64().expect("set");
        let example = positional(&dir.join(format!("data/{name}.inputs.pt")));
        let check_set = positional(&dir.join(format!("data/{name}.other{set}.pt")));
        let traced = trace_source(&source, "functions.py", name, example).expect("traces");
        let expected_warnings: Vec<String> = check["warnings"]
            .as_array()
            .expect("warnings")
            .iter()
            .map(|w| w.as_str().expect("text").to_string())
            .collect();
        let mut warnings = traced.warnings.clone();
        let report = check_trace(&traced, &[check_set]).expect("the check runs");
        warnings.extend(report.warnings);
        match (report.error, check["error"].as_str()) {
            (None, None) => {}
            (Some(message), Some(expected)) => {
                errors_seen += 1;
                if structure(&message) != structure(expected) {
                    failures.push(format!(
                        "{name}: report\n{message}\ndiffers in structure from PyTorch's\n{expected}\n({:?} vs {:?})",
                        structure(&message),
                        structure(expected)
                    ));
                }
            }
            (None, Some(_)) => failures.push(format!("{name}: PyTorch's check fails, ours passes")),
            (Some(message), None) => failures.push(format!("{name}: our check fails:\n{message}")),
        }
        if warnings != expected_warnings {
            failures.push(format!(
                "{name}: warnings {warnings:#?} != PyTorch's {expected_warnings:#?}"
            ));
        }
    }
    assert!(errors_seen >= 3, "only {errors_seen} diverging checks");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
