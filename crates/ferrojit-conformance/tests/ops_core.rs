//! Core operator conformance: unary, binary/ternary, reduction and view operators against
//! cases PyTorch computed (tests/fixtures/ops_core, made by generate.py there).

use ferrojit_conformance::{repo_root, run_case_file};

fn check(file: &str) {
    let path = repo_root().join("tests/fixtures/ops_core").join(file);
    let failures = run_case_file(&path);
    for failure in &failures {
        println!("{failure}");
    }
    assert!(
        failures.is_empty(),
        "{} failing cases in {file}",
        failures.len()
    );
}

#[test]
fn unary_operators_match_pytorch() {
    check("unary.pt");
}

#[test]
fn binary_and_ternary_operators_match_pytorch() {
    check("binary.pt");
}

#[test]
fn reductions_match_pytorch() {
    check("reductions.pt");
}

#[test]
fn views_match_pytorch() {
    check("views.pt");
}
