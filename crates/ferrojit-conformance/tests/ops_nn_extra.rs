//! The further torch.nn operators against cases PyTorch computed (tests/fixtures/ops_nn_extra,
//! made by generate.py there): the margin and embedding losses, `log_sigmoid`, `softshrink`,
//! `glu`, `prelu`, max unpooling, `channel_shuffle`, `bilinear`, `im2col` and
//! `adaptive_max_pool3d`, with dtypes and shapes beyond the OpInfo samples, PyTorch's values
//! and its exact error messages.

use ferrojit_conformance::{repo_root, run_case_file, CaseFileOptions};

#[test]
fn further_nn_operators_match_pytorch() {
    let report = run_case_file(
        &repo_root().join("tests/fixtures/ops_nn_extra/cases.pt"),
        &CaseFileOptions {
            minimum_cases: 193,
            copy_arguments: true,
            known_message_differences: &[],
            known_missing_operators: &[],
        },
    );
    report.assert_all_passed("ops_nn_extra/cases.pt");
}
