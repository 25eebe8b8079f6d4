//! Complex dtypes and Fourier transforms against the cases PyTorch computed
//! (tests/fixtures/ops_complex, made by generate.py there): complex storages load from
//! `torch.save` files, and every complex operator and torch.fft function matches PyTorch's
//! values (complex64 within rtol 1e-4, atol 1e-5 per component) or its refusal.

use ferrojit_conformance::{
    compare, repo_root, run_case_file, CaseFileOptions, KnownMessageDifference,
};
use ferrojit_serialize::torch_save;

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
    report.assert_all_passed(file);
}

#[test]
fn complex_operators_match_pytorch() {
    check("complex.pt", 190, &[]);
}

#[test]
fn fft_operators_match_pytorch() {
    check("fft.pt", 170, &[]);
}

/// PyTorch's files hold complex64 and complex128 storages (interleaved re/im); ferrojit's
/// `torch.save` writer must write them back as `torch.ComplexFloatStorage` /
/// `ComplexDoubleStorage` records that load to the same values. With
/// `FERROJIT_COMPLEX_SAVE_TO=PATH` the written file is kept, for loading in PyTorch
/// (`tests/fixtures/ops_complex/check_ferrojit_save.py`).
#[test]
fn complex_tensors_survive_a_ferrojit_save() {
    let path = repo_root().join("tests/fixtures/ops_complex/complex.pt");
    let original = torch_save::load_file(&path).expect("complex.pt loads");
    let bytes = torch_save::save_to_bytes(&original, "archive").expect("ferrojit saves it");
    for class in [&b"ComplexFloatStorage"[..], &b"ComplexDoubleStorage"[..]] {
        assert!(
            bytes.windows(class.len()).any(|window| window == class),
            "the saved pickle names {}",
            String::from_utf8_lossy(class)
        );
    }
    if let Some(target) = std::env::var_os("FERROJIT_COMPLEX_SAVE_TO") {
        std::fs::write(&target, &bytes).expect("write the saved file");
    }
    let reloaded = torch_save::load_bytes(bytes).expect("ferrojit reloads its own file");
    compare(&reloaded, &original, "complex.pt").expect("the same values after the trip");
}
