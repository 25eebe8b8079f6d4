//! FileCheck against PyTorch's own verdicts: every case in tests/fixtures/filecheck/cases.json
//! (written by generate.py there, which ran `torch.testing.FileCheck`) must pass or fail as it
//! did in PyTorch, with PyTorch's failure message.
//!
//! Two kinds of PyTorch failure are not messages a user is meant to read: an internal assert
//! (`CHECK-COUNT-0:` as a directive) and a bare C++ exception text (`stoll` for a count that is
//! not a number). For those ferrojit must fail too, with its own clear message. The cases in
//! `CLEARER_THAN_PYTORCH` fail in both, but ferrojit's message deliberately differs.

use std::path::PathBuf;

use ferrojit_ir::filecheck::run_directives;
use serde_json::Value;

/// Cases where ferrojit fails as PyTorch does but words the message differently, and why.
const CLEARER_THAN_PYTORCH: &[(&str, &str)] = &[(
    "no_checks",
    "PyTorch's message runs two words together (\"instance ofFilecheck!\")",
)];

fn cases() -> Vec<Value> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/filecheck/cases.json");
    let text = std::fs::read_to_string(&path).expect("cases.json is committed");
    let json: Value = serde_json::from_str(&text).expect("cases.json is JSON");
    json["cases"].as_array().expect("a case list").clone()
}

#[test]
fn every_directive_behaves_as_in_pytorch() {
    let cases = cases();
    assert!(
        cases.len() >= 40,
        "too few FileCheck cases: {}",
        cases.len()
    );
    let mut problems = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().expect("name");
        let checks = case["checks"].as_str().expect("checks");
        let text = case["text"].as_str().expect("text");
        let outcome = run_directives(checks, text);
        match (case["error"].as_str(), outcome) {
            (None, Ok(())) => {}
            (None, Err(error)) => {
                problems.push(format!("{name}: PyTorch passes, ferrojit: {error}"))
            }
            (Some(expected), Ok(())) => problems.push(format!(
                "{name}: PyTorch fails ({expected:?}), ferrojit passes"
            )),
            (Some(expected), Err(error)) => {
                let clearer = CLEARER_THAN_PYTORCH.iter().any(|(case, _)| *case == name);
                let not_for_users = expected.contains("INTERNAL ASSERT")
                    || case["error_type"].as_str() == Some("ValueError")
                    || clearer;
                if clearer && error.message == expected {
                    problems.push(format!(
                        "{name}: the message is PyTorch's now; remove it from CLEARER_THAN_PYTORCH"
                    ));
                } else if not_for_users {
                    if error.message.is_empty() {
                        problems.push(format!("{name}: empty error message"));
                    }
                } else if error.message != expected {
                    problems.push(format!(
                        "{name}: message differs\n--- PyTorch\n{expected}\n--- ferrojit\n{}",
                        error.message
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}
