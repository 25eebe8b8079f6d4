//! Accuracy of the generated math against PyTorch 2.15's f32 results
//! (tests/fixtures/codegen, written by generate.py): the worst ULP error per function over
//! edge values (0, -0, inf, NaN, subnormals, extreme magnitudes) and dense sweeps.

mod common;

use common::{run_unary_group, ulp_distance};
use ferrojit_tensor::Tensor;
use std::path::PathBuf;

fn fixture(name: &str) -> Vec<f32> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/codegen")
        .join(format!("{name}.f32"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(bytes.len() % 4, 0, "{} is not a whole number of f32", path.display());
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// (fixture name, group body, stated worst-case ULP error against PyTorch).
const CASES: &[(&str, &str, u64)] = &[
    ("exp", "%y : Tensor = aten::exp(%x)", 2),
    ("log", "%y : Tensor = aten::log(%x)", 2),
    ("tanh", "%y : Tensor = aten::tanh(%x)", 3),
    ("sigmoid", "%y : Tensor = aten::sigmoid(%x)", 3),
    ("silu", "%y : Tensor = aten::silu(%x)", 3),
    ("erf", "%y : Tensor = aten::erf(%x)", 2),
    (
        "gelu",
        "%a : str = prim::Constant[value=\"none\"]()\n  %y : Tensor = aten::gelu(%x, %a)",
        3,
    ),
    (
        "gelu_tanh",
        "%a : str = prim::Constant[value=\"tanh\"]()\n  %y : Tensor = aten::gelu(%x, %a)",
        3,
    ),
    (
        "pow_2_5",
        "%e : float = prim::Constant[value=2.5]()\n  %y : Tensor = aten::pow(%x, %e)",
        2,
    ),
    (
        "pow_neg_1_3",
        "%e : float = prim::Constant[value=-1.3]()\n  %y : Tensor = aten::pow(%x, %e)",
        2,
    ),
    ("sqrt", "%y : Tensor = aten::sqrt(%x)", 0),
    ("rsqrt", "%y : Tensor = aten::rsqrt(%x)", 1),
    ("reciprocal", "%y : Tensor = aten::reciprocal(%x)", 0),
];

#[test]
fn math_functions_are_within_their_stated_ulp_bounds_of_pytorch() {
    let inputs = fixture("inputs");
    let input = Tensor::from_slice(&inputs, &[inputs.len()]).expect("input tensor");
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for &(name, body, bound) in CASES {
        let expected = fixture(name);
        assert_eq!(expected.len(), inputs.len(), "{name}: fixture length");
        let text = format!("graph(%x : Tensor):\n  {body}\n  return (%y)\n");
        let actual = run_unary_group(&text, &input);
        let (worst, at) = actual
            .iter()
            .zip(&expected)
            .map(|(&a, &e)| ulp_distance(a, e))
            .enumerate()
            .map(|(i, d)| (d, i))
            .max()
            .expect("non-empty fixture");
        report.push(format!(
            "{name}: max {worst} ulp at x={:e} (got {:e}, torch {:e})",
            inputs[at], actual[at], expected[at]
        ));
        if worst > bound {
            failures.push(format!("{name}: {worst} ulp > stated {bound}"));
        }
    }
    eprintln!("{}", report.join("\n"));
    assert!(failures.is_empty(), "{}\n{}", failures.join("\n"), report.join("\n"));
}
