//! torch.special against the cases PyTorch computed (tests/fixtures/ops_special, made by
//! generate.py there), over each function's domain: zeros, poles, infinities and NaN
//! included. Tolerances: float32 rtol 1e-5 / atol 1e-6 (ferrojit evaluates in f64 and rounds
//! once; PyTorch's float32 kernels round at every step), float64 rtol 1e-9 / atol 1e-12.

use ferrojit_conformance::{
    compare_with, load_cases, repo_root, run_case, Comparison, OpCase, Tolerance,
};
use ferrojit_runtime::ivalue::IValue;
use ferrojit_tensor::DType;

/// Functions whose float64 kernels in PyTorch are less accurate than float64.
const LOW_PRECISION_IN_PYTORCH: &[&str] = &[
    "special_bessel_j0",
    "special_bessel_j1",
    "special_bessel_y0",
    "special_bessel_y1",
    "special_airy_ai",
    // igamma(30, 25): PyTorch gives 0.18210391575658647, mpmath at 30 digits
    // 0.182103915977455110, ferrojit 0.18210391597745607 (PyTorch is 1.2e-9 off).
    "igamma",
    "special_gammainc",
];

fn result_dtype(case: &OpCase) -> DType {
    match &case.expected {
        Ok(IValue::Tensor(t)) => t.get().dtype(),
        _ => DType::Float32,
    }
}

#[test]
fn special_functions_match_pytorch() {
    let path = repo_root().join("tests/fixtures/ops_special/special.pt");
    let cases = load_cases(&path).expect("special.pt loads");
    assert!(cases.len() >= 317, "special.pt holds {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let label = format!("{} ({})", case.name, case.op);
        let (rtol, atol) = match result_dtype(case) {
            // PyTorch's float64 J0/J1/Y0/Y1 and Ai are accurate to only about 1e-7 absolute
            // (checked against mpmath at 30 digits: ferrojit's values agree with mpmath to
            // 1e-15 where PyTorch's differ by up to 4e-7, e.g. Y1(5.5)).
            DType::Float64
                if LOW_PRECISION_IN_PYTORCH
                    .iter()
                    .any(|op| case.op.contains(op)) =>
            {
                (1e-6, 1e-6)
            }
            DType::Float64 => (1e-9, 1e-12),
            // The same functions in float32: PyTorch's float32 Ai(-30.5) is -0.0043352749,
            // mpmath's -0.0043336373 (ferrojit -0.0043336372), 1.6e-6 off; the issue's
            // float32 tolerance (rtol 1e-4, atol 1e-5) applies to them.
            DType::Float32
                if LOW_PRECISION_IN_PYTORCH
                    .iter()
                    .any(|op| case.op.contains(op)) =>
            {
                (1e-4, 1e-5)
            }
            _ => (1e-5, 1e-6),
        };
        let how = Comparison {
            tolerance: Tolerance::Fixed { rtol, atol },
            tuple_for_list: false,
        };
        match (&case.expected, run_case(case)) {
            (Ok(expected), Ok(actual)) => {
                if let Err(difference) = compare_with(&actual, expected, &label, how) {
                    failures.push(difference);
                }
            }
            (Ok(_), Err(error)) => failures.push(format!("{label}: ferrojit failed: {error}")),
            (Err(message), outcome) => failures.push(format!(
                "{label}: PyTorch raised '{message}', ferrojit gave {:?}",
                outcome.map(|value| value.python_repr())
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The window functions: every overload, symmetric and periodic, against PyTorch's values
/// (float32 rtol 1e-5 / atol 1e-6; float64 rtol 1e-12 / atol 1e-14 except kaiser, whose i0
/// ratio is compared at rtol 1e-9) and its message for a negative length.
#[test]
fn window_functions_match_pytorch() {
    let path = repo_root().join("tests/fixtures/ops_special/windows.pt");
    let cases = load_cases(&path).expect("windows.pt loads");
    assert!(cases.len() >= 163, "windows.pt holds {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let label = format!("{} ({})", case.name, case.op);
        let (rtol, atol) = match result_dtype(case) {
            DType::Float64 if case.op.contains("kaiser") => (1e-9, 1e-12),
            DType::Float64 => (1e-12, 1e-14),
            _ => (1e-5, 1e-6),
        };
        let how = Comparison {
            tolerance: Tolerance::Fixed { rtol, atol },
            tuple_for_list: false,
        };
        match (&case.expected, run_case(case)) {
            (Ok(expected), Ok(actual)) => {
                if let Err(difference) = compare_with(&actual, expected, &label, how) {
                    failures.push(difference);
                }
            }
            (Ok(_), Err(error)) => failures.push(format!("{label}: ferrojit failed: {error}")),
            (Err(message), Ok(_)) => failures.push(format!(
                "{label}: PyTorch raised '{message}', ferrojit did not"
            )),
            (Err(message), Err(error)) => match ferrojit_conformance::kernel_refusal(&error) {
                Ok(ours) if &ours == message => {}
                other => failures.push(format!("{label}: {other:?} vs PyTorch's '{message}'")),
            },
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
