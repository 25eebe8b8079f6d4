//! TorchScript's own builtins (the operators PyTorch registers for the JIT only, not as ATen
//! native functions): the matrix views and their `.a` spellings, the list form of `split`,
//! the scalar forms of `copy_`, `broadcast_shapes`/`Size`/`sym_size`, layout and autocast
//! queries, `_index_put_impl_.hacked_twin`, and PyTorch 1.x's `__interpolate`/`__upsample*`
//! operators, against the cases PyTorch computed (tests/fixtures/ops_jit, made by
//! generate.py there), refusals with PyTorch's messages included.

use ferrojit_conformance::{repo_root, run_case_file, CaseFileOptions};

#[test]
fn jit_builtin_operators_match_pytorch() {
    let report = run_case_file(
        &repo_root().join("tests/fixtures/ops_jit/jit_builtins.pt"),
        &CaseFileOptions {
            minimum_cases: 127,
            copy_arguments: false,
            known_message_differences: &[],
            known_missing_operators: &[],
        },
    );
    report.assert_all_passed("jit_builtins.pt");
    assert_eq!(
        report.exact_error_messages, report.error_cases,
        "every refusal must carry PyTorch's message"
    );
}
