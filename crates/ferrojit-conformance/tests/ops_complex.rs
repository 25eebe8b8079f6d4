//! Complex dtypes and Fourier transforms against the cases PyTorch computed
//! (tests/fixtures/ops_complex, made by generate.py there): complex storages load from
//! `torch.save` files, and every complex operator and torch.fft function matches PyTorch's
//! values (complex64 within rtol 1e-4, atol 1e-5 per component) or its refusal.

use ferrojit_conformance::known_difference as known;
use ferrojit_conformance::{repo_root, run_case_file, CaseFileOptions, KnownMessageDifference};

fn check(file: &str, minimum_cases: usize, differences: &[KnownMessageDifference]) {
    let path = repo_root().join("tests/fixtures/ops_complex").join(file);
    let report = run_case_file(
        &path,
        &CaseFileOptions {
            minimum_cases,
            copy_arguments: true,
            known_message_differences: differences,
            known_missing_operators: &[],
        },
    );
    println!(
        "{file}: {} cases, {} expected errors, {} with PyTorch's exact message",
        report.cases, report.error_cases, report.exact_error_messages
    );
    for failure in &report.failures {
        println!("{failure}");
    }
    assert!(
        report.failures.is_empty(),
        "{} failing cases in {file}",
        report.failures.len()
    );
}

#[test]
fn complex_operators_match_pytorch() {
    check("complex.pt", 169, &[]);
}

#[test]
fn fft_operators_match_pytorch() {
    check("fft.pt", 170, &[]);
}

#[allow(dead_code)]
fn unused() -> KnownMessageDifference {
    known("", "", "")
}
