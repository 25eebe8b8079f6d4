//! Statistics, histogram, set, pointwise and indexed-reduction operators of issue 20 (part
//! A: aminmax, cummax/cummin, logcumsumexp, msort, argwhere, std_mean/var_mean, nanmedian,
//! mode, quantile/nanquantile, histc, histogram, bincount, isin, unique_consecutive, cov,
//! corrcoef, float_power, lcm, logaddexp2, nextafter, signbit, sgn, positive, isreal,
//! resolve_neg, renorm, dist, index_reduce, index_copy, put, segment_reduce) against the
//! cases PyTorch computed (tests/fixtures/ops_stats, made by generate.py there): NaN,
//! infinities, empty tensors, dim=None, keepdim, every interpolation, integer dtypes, and
//! PyTorch's refusals with its messages.

use ferrojit_conformance::known_difference as known;
use ferrojit_conformance::{repo_root, run_case_file, CaseFileOptions, KnownMessageDifference};

/// Error cases whose message is not PyTorch's word for word. Each entry must explain a case.
fn differences() -> Vec<KnownMessageDifference> {
    vec![known(
        "range of [-nan, -nan]",
        "range of [nan, nan]",
        "C++ streams print the NaN that PyTorch's vectorised aminmax returns with its sign bit \
         set; ferrojit keeps the input's NaN, whose sign bit is clear",
    )]
}

#[test]
fn statistics_operators_match_pytorch() {
    let differences = differences();
    let report = run_case_file(
        &repo_root().join("tests/fixtures/ops_stats/stats.pt"),
        &CaseFileOptions {
            minimum_cases: 498,
            copy_arguments: true,
            known_message_differences: &differences,
            known_missing_operators: &[],
        },
    );
    report.assert_all_passed("stats.pt");
    // Most refusals must carry PyTorch's exact message, not only fail.
    assert!(
        report.exact_error_messages + 1 >= report.error_cases,
        "{} of {} error cases have PyTorch's message",
        report.exact_error_messages,
        report.error_cases
    );
}
