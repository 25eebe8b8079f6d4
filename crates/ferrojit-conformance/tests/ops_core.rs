//! Core operator conformance: unary, binary/ternary, reduction and view operators against
//! cases PyTorch computed (tests/fixtures/ops_core, made by generate.py there), and the order
//! of equal elements in sort/topk/kthvalue (tests/fixtures/tie_order).

use ferrojit_conformance::{repo_root, run_case_file};

fn check(file: &str) {
    check_in("tests/fixtures/ops_core", file);
}

fn check_in(dir: &str, file: &str) {
    let path = repo_root().join(dir).join(file);
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

/// Ties come out in PyTorch's CPU order: `sort` (stable=False) as libstdc++'s `std::sort`,
/// `topk` as its `std::partial_sort` / `std::nth_element` + `std::sort`, `kthvalue` as
/// PyTorch's quickselect; indices are compared exactly.
#[test]
fn tie_order_matches_pytorch() {
    check_in("tests/fixtures/tie_order", "ops.pt");
}
