//! The Rust tracing example (`examples/trace_cnn.rs`) in CI: the traced module it saves is
//! the committed `tests/fixtures/trace/rust_cnn.pt`, and its results on both input batches
//! (the traced one and a larger one) equal what PyTorch computed from that file
//! (`rust_cnn.expected.pt`, written by `check_rust_example.py`), not ferrojit's own output.

#[path = "../../../examples/trace_cnn.rs"]
mod trace_cnn;

use std::path::PathBuf;

use ferrojit::IValue;
use ferrojit_conformance::compare;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/trace")
}

fn members(value: IValue) -> Vec<IValue> {
    match value {
        IValue::Tuple(tuple) => tuple.items.to_vec(),
        other => panic!("expected a tuple, found a {}", other.tag_name()),
    }
}

fn committed_inputs() -> Vec<IValue> {
    members(ferrojit::load_values(fixtures().join("rust_cnn.inputs.pt")).unwrap())
}

fn pytorch_outputs() -> Vec<IValue> {
    members(ferrojit::load_values(fixtures().join("rust_cnn.expected.pt")).unwrap())
}

#[test]
fn the_example_makes_the_committed_inputs_and_archive() {
    let inputs = trace_cnn::example_inputs().unwrap();
    let committed = committed_inputs();
    assert_eq!(inputs.len(), committed.len());
    for (index, (made, saved)) in inputs.iter().zip(&committed).enumerate() {
        compare(&made.clone().into(), saved, &format!("input {index}")).unwrap();
    }
    let model = trace_cnn::SmallCnn::new().unwrap();
    let traced = trace_cnn::trace_model(&model, &inputs).unwrap();
    let bytes = traced.save_to_bytes("rust_cnn").unwrap();
    let saved = std::fs::read(fixtures().join("rust_cnn.pt")).unwrap();
    assert!(
        bytes == saved,
        "the example's archive differs from the committed rust_cnn.pt that PyTorch checked: \
         rerun `cargo run -p ferrojit --example trace_cnn` and check_rust_example.py"
    );
}

#[test]
fn the_trace_matches_pytorchs_run_of_the_archive_on_both_batch_sizes() {
    let model = trace_cnn::SmallCnn::new().unwrap();
    let inputs = trace_cnn::example_inputs().unwrap();
    let traced = trace_cnn::trace_model(&model, &inputs).unwrap();
    let expected = pytorch_outputs();
    let committed = committed_inputs();
    assert_eq!(expected.len(), 2);
    for (index, (input, expected)) in committed.into_iter().zip(&expected).enumerate() {
        let output = traced.run(vec![input]).unwrap();
        compare(&output, expected, &format!("batch {index}")).unwrap();
    }
    // The batch of 5 differs in its leading size from the traced batch of 2: the view's
    // batch size is read from the input, not baked in.
    let sizes: Vec<Vec<usize>> = expected
        .iter()
        .map(|value| value.to_tensor().unwrap().sizes().to_vec())
        .collect();
    assert_eq!(sizes, vec![vec![2, 10], vec![5, 10]]);
}

#[test]
fn the_saved_archive_loads_and_runs_in_ferrojit_as_in_pytorch() {
    let model = ferrojit::load(fixtures().join("rust_cnn.pt")).unwrap();
    for (index, (input, expected)) in committed_inputs()
        .into_iter()
        .zip(&pytorch_outputs())
        .enumerate()
    {
        let output = model.run(vec![input]).unwrap();
        compare(&output, expected, &format!("batch {index}")).unwrap();
    }
}

#[test]
fn parameters_are_read_as_attributes_not_baked_in() {
    let model = trace_cnn::SmallCnn::new().unwrap();
    let inputs = trace_cnn::example_inputs().unwrap();
    let traced = trace_cnn::trace_model(&model, &inputs).unwrap();
    let text = traced.graph_text();
    // Two convolutions, the layer norm and the linear head each read weight and bias.
    assert_eq!(text.matches("prim::GetAttr[name=\"weight\"]").count(), 4);
    assert_eq!(text.matches("prim::GetAttr[name=\"bias\"]").count(), 4);
    assert!(!text.contains(": Tensor = prim::Constant"), "{text}");
    assert!(text.contains("aten::size(%"), "{text}");
    assert_eq!(text.matches("aten::_convolution(").count(), 2);
    assert!(traced.warnings.is_empty(), "{:?}", traced.warnings);
}
