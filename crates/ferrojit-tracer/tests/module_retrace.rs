//! Retracing a scripted module's forward (`trace_module`): zoo models saved by PyTorch are
//! traced on their inputs; the traced archive keeps the parameters as attributes (read by
//! `prim::GetAttr`, submodule calls inlined) and gives the outputs PyTorch recorded for
//! the original module (tests/fixtures/zoo/generate.py; rtol 1e-4, atol 1e-5).

use std::path::{Path, PathBuf};

use ferrojit_runtime::IValue;
use ferrojit_serialize::import::{load_module, load_module_from_bytes};
use ferrojit_serialize::torch_save;
use ferrojit_tracer::{trace_module, TraceError};

fn zoo(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/zoo")
        .join(name)
}

fn tensors(value: &IValue) -> Vec<Vec<f64>> {
    match value {
        IValue::Tuple(tuple) => tuple.items.iter().flat_map(tensors).collect(),
        IValue::List(list) => list.to_vec().iter().flat_map(tensors).collect(),
        other => other
            .to_tensor()
            .map(|t| vec![t.to_f64_vec()])
            .unwrap_or_default(),
    }
}

#[test]
fn retraced_zoo_modules_keep_their_parameters_and_pytorchs_results() {
    for name in [
        "small_cnn_scripted",
        "nn_layers_tiny",
        "encoder_layer_tiny",
        "bert_tiny",
        "lstm_1layer",
    ] {
        let loaded = load_module(&zoo(&format!("{name}.pt"))).expect("zoo model loads");
        let inputs = match torch_save::load_file(&zoo(&format!("{name}.inputs.pt"))).unwrap() {
            IValue::Tuple(tuple) => tuple.items.to_vec(),
            other => vec![other],
        };
        let expected = torch_save::load_file(&zoo(&format!("{name}.expected.pt"))).unwrap();
        let traced = trace_module(loaded, inputs.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let kinds: Vec<String> = traced
            .graph
            .block_nodes(traced.graph.top_block())
            .into_iter()
            .map(|node| traced.graph.kind(node).as_str().to_string())
            .collect();
        assert!(
            kinds.iter().any(|k| k == "prim::GetAttr"),
            "{name}: no attribute reads"
        );
        assert!(
            !kinds
                .iter()
                .any(|k| k == "prim::CallMethod" || k == "prim::If" || k == "prim::Loop"),
            "{name}: not straight-line: {kinds:?}"
        );
        let bytes = traced.save_to_bytes(name).expect("saves");
        let reloaded = load_module_from_bytes(bytes).expect("the trace loads");
        let actual = reloaded.module.run_method("forward", inputs).expect("runs");
        let (actual, expected) = (tensors(&actual), tensors(&expected));
        assert_eq!(actual.len(), expected.len(), "{name}");
        for (a, e) in actual.iter().zip(&expected) {
            assert_eq!(a.len(), e.len(), "{name}");
            for (x, y) in a.iter().zip(e) {
                assert!((x - y).abs() <= 1e-5 + 1e-4 * y.abs(), "{name}: {x} != {y}");
            }
        }
    }
}

#[test]
fn a_module_taking_a_number_is_refused() {
    let loaded = load_module(&zoo("gpt_loop_tiny.pt")).expect("loads");
    let inputs = match torch_save::load_file(&zoo("gpt_loop_tiny.inputs.pt")).unwrap() {
        IValue::Tuple(tuple) => tuple.items.to_vec(),
        other => vec![other],
    };
    let error = trace_module(loaded, inputs)
        .err()
        .expect("an int input is refused");
    assert!(
        matches!(error, TraceError::UntraceableInput { index: 1, .. }),
        "{error}"
    );
}
