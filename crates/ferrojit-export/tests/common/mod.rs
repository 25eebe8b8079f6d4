//! Helpers shared by the fixture tests: paths, reading torch.save files, comparing values.

#![allow(dead_code)]

use ferrojit_conformance::Comparison;
use ferrojit_runtime::IValue;
use std::path::PathBuf;

pub fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/export")
}

pub fn load_torch_save(name: &str) -> IValue {
    let path = fixture_dir().join(name);
    ferrojit_serialize::torch_save::load_file(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()))
}

/// Compares `actual` with PyTorch's `expected` as the other model tests do
/// (`ferrojit-conformance`'s one comparator): float tensors and floats with rtol 1e-4 and
/// atol 1e-5 (NaN matches NaN), everything else exactly; containers element by element.
pub fn compare(actual: &IValue, expected: &IValue, path: &str) -> Result<(), String> {
    ferrojit_conformance::compare_with(actual, expected, path, Comparison::models(1e-4, 1e-5))
}

/// How many programs `generate.py` writes today; fewer means a lost or truncated manifest.
const MINIMUM_PROGRAMS: usize = 77;

/// The fixture programs listed in `manifest.json`, at least [`MINIMUM_PROGRAMS`] of them.
pub fn fixture_programs() -> Vec<serde_json::Value> {
    register_fixture_operators();
    let text = std::fs::read_to_string(fixture_dir().join("manifest.json")).expect("manifest.json");
    let manifest: serde_json::Value = serde_json::from_str(&text).expect("manifest parses");
    let programs = manifest["programs"]
        .as_array()
        .expect("manifest lists programs")
        .clone();
    assert!(
        programs.len() >= MINIMUM_PROGRAMS,
        "only {} fixture programs, expected at least {MINIMUM_PROGRAMS}",
        programs.len()
    );
    programs
}

/// The labels `fjtest::record` was called with, in call order.
pub static RECORDED_LABELS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Registers the custom operators the fixture generator defines with
/// `torch.library.custom_op`, through the public custom-operator API as a user's crate
/// would: `fjtest::scale_add_` (mutates `out`) and `fjtest::record` (effectful).
pub fn register_fixture_operators() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        use ferrojit_runtime::registry::pop_arguments;
        ferrojit_runtime::register_operator(
            "fjtest::scale_add_(Tensor(a!) out, Tensor x, float alpha) -> ()",
            |stack| {
                let [out, x, alpha] = pop_arguments::<3>(stack)?;
                let add = ferrojit_runtime::OperatorRegistry::global()
                    .lookup("aten::add_.Tensor")
                    .expect("aten::add_.Tensor is registered");
                let mut inner = vec![out, x, alpha];
                (add.kernel)(&mut inner)
            },
        )
        .expect("fjtest::scale_add_ registers");
        ferrojit_runtime::register_operator("fjtest::record(Tensor x, str label) -> ()", |stack| {
            let [_, label] = pop_arguments::<2>(stack)?;
            RECORDED_LABELS
                .lock()
                .expect("the label log is not poisoned")
                .push(label.to_str()?.to_string());
            Ok(())
        })
        .expect("fjtest::record registers");
    });
}
