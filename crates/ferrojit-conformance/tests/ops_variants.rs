//! The in-place and out= overloads ferrojit registers from their functional kernels
//! (ferrojit-runtime's `ops/derived_variants.rs`): in-place unary, binary and matrix-product
//! forms, out= forms with one output (resized from empty or written in place) and with
//! several (values and indices), and PyTorch's refusals for a wrong shape or dtype, against
//! the cases PyTorch computed (tests/fixtures/ops_variants, made by generate.py there).

use ferrojit_conformance::{repo_root, run_case_file, CaseFileOptions};

#[test]
fn derived_in_place_and_out_variants_match_pytorch() {
    let report = run_case_file(
        &repo_root().join("tests/fixtures/ops_variants/variants.pt"),
        &CaseFileOptions {
            minimum_cases: 53,
            copy_arguments: false,
            known_message_differences: &[],
            known_missing_operators: &[],
        },
    );
    report.assert_all_passed("variants.pt");
    assert_eq!(
        report.exact_error_messages, report.error_cases,
        "every refusal must carry PyTorch's message"
    );
}
