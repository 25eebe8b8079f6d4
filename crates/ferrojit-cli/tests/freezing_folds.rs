//! The frozen-graph folds change float results only within rounding: each fold file test in
//! tests/fixtures/passes/ (`fold_frozen_*`, `transpose_frozen_*`, `concat_frozen_*`) is run
//! on the same input before and after its passes, and the results must agree within
//! rtol 1e-5 / atol 1e-6 (the file tests themselves check the rewritten graph's form). A
//! fold that computed a wrong weight (a missing rsqrt, a bias left out) fails here.

use std::path::PathBuf;

use ferrojit_opt::filetest::{parse_test_file, TestKind};
use ferrojit_runtime::{run_graph, IValue, NoMethods};
use ferrojit_tensor::Tensor;

fn fold_files() -> Vec<PathBuf> {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/passes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
        .expect("passes folder")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            // A batch norm in training mode writes its running statistics (the graph's
            // constants) on every run, so two runs of that file differ by design.
            name != "fold_frozen_conv_bn_keeps_shared_or_training.ir"
                && name.matches('.').count() == 1
                && name.ends_with(".ir")
                && ["fold_frozen_", "transpose_frozen_", "concat_frozen_"]
                    .iter()
                    .any(|prefix| name.starts_with(prefix))
        })
        .collect();
    files.sort();
    files
}

/// A fixed input: `[1, 2, 3, 3]` for convolutions, `[3, 2]` for linears.
fn input_for(text: &str) -> Tensor {
    let sizes: &[usize] = if text.contains("aten::conv2d") {
        &[1, 2, 3, 3]
    } else {
        &[3, 2]
    };
    let count: usize = sizes.iter().product();
    let values: Vec<f32> = (0..count)
        .map(|i| ((i * 7 % 11) as f32 - 5.0) * 0.3)
        .collect();
    Tensor::from_vec(values, sizes).expect("input tensor")
}

fn tensors(values: Vec<IValue>) -> Vec<Vec<f64>> {
    values
        .into_iter()
        .map(|value| value.to_tensor().expect("a tensor output").to_f64_vec())
        .collect()
}

#[test]
fn folds_keep_results_within_rounding() {
    let files = fold_files();
    assert!(files.len() >= 6, "only {} fold file tests", files.len());
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let test = parse_test_file(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let TestKind::Pass(passes) = &test.kind else {
            panic!("{name}: not a pass test");
        };
        let input = input_for(&text);
        let before = tensors(
            run_graph(&test.graph, vec![IValue::from(input.clone())], &NoMethods)
                .unwrap_or_else(|e| panic!("{name}: before: {e}")),
        );
        let mut graph = test.graph.clone();
        for pass in passes {
            ferrojit_opt::run_pass(pass, &mut graph).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let after = tensors(
            run_graph(&graph, vec![IValue::from(input)], &NoMethods)
                .unwrap_or_else(|e| panic!("{name}: after: {e}")),
        );
        assert_eq!(before.len(), after.len(), "{name}");
        for (b, a) in before.iter().zip(&after) {
            assert_eq!(b.len(), a.len(), "{name}");
            for (x, y) in b.iter().zip(a) {
                assert!(
                    (x - y).abs() <= 1e-6 + 1e-5 * x.abs(),
                    "{name}: {x} before the folds, {y} after\n{}",
                    graph.to_ir_string()
                );
            }
        }
    }
}
