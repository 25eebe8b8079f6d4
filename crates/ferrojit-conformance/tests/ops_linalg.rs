//! torch.linalg against the cases PyTorch computed (tests/fixtures/ops_linalg, made by
//! generate.py there). Tolerances: float32 rtol 1e-4 / atol 1e-5 (ferrojit factors in f64,
//! PyTorch's LAPACK in f32), float64 rtol 1e-9 / atol 1e-10. Error cases must carry PyTorch's
//! message. SVD and eigh are not unique: in invariants.pt the singular values or eigenvalues
//! match PyTorch's, and U, V are checked by reconstruction and orthogonality; eigh and eig,
//! which follow LAPACK's steps, also have value cases in linalg.pt.

use ferrojit_conformance::{
    compare_with, kernel_refusal, load_cases, repo_root, run_case, Comparison, OpCase, Tolerance,
};
use ferrojit_runtime::ivalue::IValue;
use ferrojit_tensor::{DType, Tensor};

fn cases(file: &str) -> Vec<OpCase> {
    load_cases(&repo_root().join("tests/fixtures/ops_linalg").join(file)).expect("cases load")
}

/// The dtype of the case's first tensor argument (or of the first in a list).
fn case_dtype(case: &OpCase) -> DType {
    for arg in &case.args {
        match arg {
            IValue::Tensor(t) => return t.get().dtype(),
            IValue::List(list) => {
                if let Some(IValue::Tensor(t)) = list.to_vec().first() {
                    return t.get().dtype();
                }
            }
            _ => {}
        }
    }
    DType::Float32
}

fn comparison_for(dtype: DType) -> Comparison {
    let (rtol, atol) = if dtype == DType::Float64 {
        (1e-9, 1e-10)
    } else {
        (1e-4, 1e-5)
    };
    Comparison {
        tolerance: Tolerance::Fixed { rtol, atol },
        tuple_for_list: false,
    }
}

#[test]
fn linalg_operators_match_pytorch() {
    let cases = cases("linalg.pt");
    assert!(cases.len() >= 754, "linalg.pt holds {} cases", cases.len());
    let mut failures = Vec::new();
    let mut error_cases = 0;
    for case in &cases {
        let label = format!("{} ({})", case.name, case.op);
        match (&case.expected, run_case(case)) {
            (Ok(expected), Ok(actual)) => {
                if let Err(difference) =
                    compare_with(&actual, expected, &label, comparison_for(case_dtype(case)))
                {
                    failures.push(difference);
                }
            }
            (Ok(_), Err(error)) => failures.push(format!("{label}: ferrojit failed: {error}")),
            (Err(message), Ok(_)) => failures.push(format!(
                "{label}: PyTorch raised '{message}', ferrojit did not"
            )),
            (Err(message), Err(error)) => {
                error_cases += 1;
                match kernel_refusal(&error) {
                    Ok(ours) if &ours == message => {}
                    Ok(ours) => {
                        failures.push(format!("{label}: '{ours}' vs PyTorch's '{message}'"))
                    }
                    Err(difference) => failures.push(format!("{label}: {difference}")),
                }
            }
        }
    }
    assert!(error_cases >= 32, "{error_cases} error cases");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Row-major f64 matrices of a `(..., rows, cols)` tensor.
fn matrices(t: &Tensor) -> (Vec<Vec<f64>>, usize, usize) {
    let sizes = t.sizes();
    let (rows, cols) = (sizes[sizes.len() - 2], sizes[sizes.len() - 1]);
    let values = t.to_f64_vec();
    let size = rows * cols;
    let count = values.len().checked_div(size).unwrap_or(0);
    (
        (0..count)
            .map(|i| values[i * size..(i + 1) * size].to_vec())
            .collect(),
        rows,
        cols,
    )
}

fn vectors(t: &Tensor) -> Vec<Vec<f64>> {
    let n = *t.sizes().last().unwrap();
    t.to_f64_vec().chunks(n).map(<[f64]>::to_vec).collect()
}

fn close(x: f64, y: f64, dtype: DType, scale: f64) -> bool {
    let (rtol, atol) = if dtype == DType::Float64 {
        (1e-9, 1e-10)
    } else {
        (1e-4, 1e-5)
    };
    (x - y).abs() <= atol * scale.max(1.0) + rtol * y.abs()
}

fn tensor_at(value: &IValue, index: usize) -> Tensor {
    match value {
        IValue::Tuple(tuple) => tuple.items[index].to_tensor().unwrap().as_ref().clone(),
        other => panic!("expected a tuple, got {}", other.python_repr()),
    }
}

/// `Q^T Q = I` for the columns of each matrix.
fn check_orthonormal_columns(label: &str, q: &Tensor, dtype: DType) {
    let (qs, rows, cols) = matrices(q);
    for (b, m) in qs.iter().enumerate() {
        for i in 0..cols {
            for j in 0..cols {
                let dot: f64 = (0..rows).map(|r| m[r * cols + i] * m[r * cols + j]).sum();
                let want = if i == j { 1.0 } else { 0.0 };
                assert!(
                    close(dot, want, dtype, 1.0),
                    "{label}: batch {b} columns {i},{j}: {dot}"
                );
            }
        }
    }
}

#[test]
fn svd_and_eigh_reconstruct_their_input_with_pytorchs_values() {
    let cases = cases("invariants.pt");
    assert!(
        cases.len() >= 98,
        "invariants.pt holds {} cases",
        cases.len()
    );
    for case in &cases {
        let label = format!("{} ({})", case.name, case.op);
        let dtype = case_dtype(case);
        let expected = case.expected.as_ref().expect("PyTorch computed it");
        let actual = run_case(case).unwrap_or_else(|e| panic!("{label}: {e}"));
        let a = case.args[0].to_tensor().unwrap();
        let (inputs, rows, cols) = matrices(&a);
        let scale = a.to_f64_vec().iter().fold(0.0f64, |m, x| m.max(x.abs()));
        if case.op.contains("svd") {
            // Singular values: PyTorch's.
            let s = tensor_at(&actual, 1);
            compare_with(
                &IValue::from(s.clone()),
                &IValue::from(tensor_at(expected, 1)),
                &label,
                comparison_for(dtype),
            )
            .unwrap();
            let u = tensor_at(&actual, 0);
            let third = tensor_at(&actual, 2);
            // The old svd returns V; the new one Vh.
            let vh = if case.op == "aten::svd" {
                third.transpose(-2, -1).unwrap().contiguous()
            } else {
                third
            };
            let expected_u = tensor_at(expected, 0);
            let expected_third = tensor_at(expected, 2);
            assert_eq!(u.sizes(), expected_u.sizes(), "{label}: U's shape");
            assert_eq!(
                vh.sizes().len(),
                expected_third.sizes().len(),
                "{label}: V's rank"
            );
            check_orthonormal_columns(&label, &u, dtype);
            check_orthonormal_columns(&label, &vh.transpose(-2, -1).unwrap().contiguous(), dtype);
            let (us, _, u_cols) = matrices(&u);
            let (vhs, vh_rows, _) = matrices(&vh);
            let svals = vectors(&s);
            let k = rows.min(cols);
            for (b, m) in inputs.iter().enumerate() {
                for r in 0..rows {
                    for c in 0..cols {
                        let value: f64 = (0..k)
                            .map(|j| us[b][r * u_cols + j] * svals[b][j] * vhs[b][j * cols + c])
                            .sum();
                        assert!(
                            close(value, m[r * cols + c], dtype, scale),
                            "{label}: batch {b} ({r},{c}): {value} vs {}",
                            m[r * cols + c]
                        );
                    }
                }
                assert!(vh_rows >= k);
            }
        } else {
            // eigh: eigenvalues are PyTorch's; A V = V diag(w) and V^T V = I.
            let w = tensor_at(&actual, 0);
            compare_with(
                &IValue::from(w.clone()),
                &IValue::from(tensor_at(expected, 0)),
                &label,
                comparison_for(dtype),
            )
            .unwrap();
            let v = tensor_at(&actual, 1);
            check_orthonormal_columns(&label, &v, dtype);
            let (vs, n, _) = matrices(&v);
            let ws = vectors(&w);
            for (b, m) in inputs.iter().enumerate() {
                for r in 0..n {
                    for c in 0..n {
                        let av: f64 = (0..n).map(|j| m[r * n + j] * vs[b][j * n + c]).sum();
                        let vw = vs[b][r * n + c] * ws[b][c];
                        assert!(
                            close(av, vw, dtype, scale),
                            "{label}: batch {b} ({r},{c}): {av} vs {vw}"
                        );
                    }
                }
            }
        }
    }
}
