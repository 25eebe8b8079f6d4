//! The short-time Fourier transform against cases PyTorch computed (tests/fixtures/ops_stft,
//! made by generate.py there): `aten::stft` (uncentred, as Python's `torch.stft` calls it),
//! `aten::stft.center` with every pad mode, and `aten::istft` round trips, with PyTorch's
//! values and its exact error messages.

use ferrojit_conformance::{repo_root, run_case_file, CaseFileOptions};

#[test]
fn short_time_fourier_transforms_match_pytorch() {
    let report = run_case_file(
        &repo_root().join("tests/fixtures/ops_stft/stft.pt"),
        &CaseFileOptions {
            minimum_cases: 48,
            copy_arguments: false,
            known_message_differences: &[],
            known_missing_operators: &[],
        },
    );
    report.assert_all_passed("ops_stft/stft.pt");
}
