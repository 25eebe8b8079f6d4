//! Runs every fixture program (written by `tests/fixtures/export/generate.py` with PyTorch)
//! on its recorded inputs and compares with PyTorch's outputs; calls run in order on one
//! module, so buffer mutations carry over. Inputs PyTorch rejected must be rejected too.

mod common;

use common::{compare, fixture_dir, fixture_programs, load_torch_save};
use ferrojit_export::{load_module, ExportError, DEFAULT_MODEL_NAME};
use ferrojit_runtime::IValue;

/// Programs that do not run yet, with the reason. A listed program that passes fails the
/// test, so this list only shrinks.
const KNOWN_GAPS: &[(&str, &str)] = &[];

fn arguments(name: &str) -> Vec<IValue> {
    match load_torch_save(name) {
        IValue::Tuple(tuple) => tuple.items.clone(),
        other => vec![other],
    }
}

fn run_program(entry: &serde_json::Value) -> Result<(), String> {
    let name = entry["name"].as_str().unwrap();
    let archive = entry["archive"].as_str().unwrap_or(name);
    let model = entry["model"].as_str().unwrap_or(DEFAULT_MODEL_NAME);
    let path = fixture_dir().join(format!("{archive}.pt2"));
    let mut module = load_module(&path, model).map_err(|e| format!("load: {e}"))?;
    let calls = entry["calls"].as_u64().unwrap();
    for call in 0..calls {
        let inputs = arguments(&format!("{name}.call{call}.inputs.pt"));
        let output = module
            .run(inputs.clone())
            .map_err(|e| format!("call {call}: {e}"))?;
        let expected = load_torch_save(&format!("{name}.call{call}.expected.pt"));
        compare(&output, &expected, &format!("call {call} output"))?;
        let mutated = fixture_dir().join(format!("{name}.call{call}.mutated_inputs.pt"));
        if mutated.exists() {
            let expected_inputs =
                IValue::tuple(arguments(&format!("{name}.call{call}.mutated_inputs.pt")));
            compare(
                &IValue::tuple(inputs),
                &expected_inputs,
                &format!("call {call} inputs after the call"),
            )?;
        }
    }
    for reject in entry["rejects"].as_array().unwrap() {
        let inputs = arguments(reject["inputs"].as_str().unwrap());
        match module.run(inputs) {
            Err(ExportError::Input { .. }) => {}
            Err(other) => {
                return Err(format!(
                    "reject {}: wrong error kind: {other}",
                    reject["name"]
                ))
            }
            Ok(_) => {
                return Err(format!(
                    "reject {}: accepted an input PyTorch rejects",
                    reject["name"]
                ))
            }
        }
    }
    Ok(())
}

#[test]
fn every_fixture_program_matches_pytorch() {
    // The torchvision_ops program calls torchvision::nms and roi_align: registered the way a
    // user of the .pt loader registers them, and found by the .pt2 runner in the same registry.
    ferrojit_torchvision::register().unwrap();
    let programs = fixture_programs();
    let mut failures = Vec::new();
    let mut passed = 0;
    for entry in &programs {
        let name = entry["name"].as_str().unwrap();
        let known = KNOWN_GAPS.iter().find(|(gap, _)| *gap == name);
        match (run_program(entry), known) {
            (Ok(()), None) => passed += 1,
            (Ok(()), Some(_)) => {
                failures.push(format!("{name}: passes now; remove it from KNOWN_GAPS"))
            }
            (Err(_), Some(_)) => {}
            (Err(error), None) => failures.push(format!("{name}: {error}")),
        }
    }
    eprintln!(
        "{passed} of {} fixture programs match PyTorch",
        programs.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn tensors_saved_over_one_storage_share_it() {
    let archive =
        ferrojit_export::Pt2Archive::open(fixture_dir().join("shared_storage.pt2")).unwrap();
    let loaded = archive.load(DEFAULT_MODEL_NAME).unwrap();
    let weight = &loaded.state_dict["w"];
    let transposed = &loaded.state_dict["w_t"];
    assert!(weight.shares_storage(transposed));
    assert_eq!(transposed.sizes(), &[6, 4]);
    assert_eq!(transposed.strides(), &[1, 6]);
}

#[test]
fn a_buffer_mutation_is_seen_by_the_next_call_and_in_the_state() {
    let path = fixture_dir().join("buffer_counter_decomposed.pt2");
    let mut module = load_module(&path, DEFAULT_MODEL_NAME).unwrap();
    for call in 0..3 {
        module
            .run(arguments(&format!(
                "buffer_counter_decomposed.call{call}.inputs.pt"
            )))
            .unwrap();
    }
    let count = module.state_value("count").unwrap().to_tensor().unwrap();
    assert_eq!(count.to_f64_vec(), vec![3.0]);
}

/// torchvision's resnet18 at full size (the generator's low-entropy random weights): the
/// manifest lists it, it matches PyTorch, and the runner holds few activations at once.
#[test]
fn resnet18_runs_and_frees_its_activations() {
    let programs = fixture_programs();
    let entry = programs
        .iter()
        .find(|entry| entry["name"] == "resnet18")
        .expect("manifest.json lists resnet18");
    run_program(entry).unwrap();
    let mut module = load_module(fixture_dir().join("resnet18.pt2"), DEFAULT_MODEL_NAME).unwrap();
    let graph = &module.loaded().program.graph_module.graph;
    let (inputs, nodes) = (graph.inputs.len(), graph.nodes.len());
    assert_eq!(
        module.loaded().state_dict.len() + 1,
        inputs,
        "every parameter and buffer is a placeholder, plus the image"
    );
    module.run(arguments("resnet18.call0.inputs.pt")).unwrap();
    // Parameters and buffers are placeholders (each dropped after its one reader); of the
    // activations only a block's input, its running value and a new one live at once.
    // Keeping every value would hold all placeholders and every node's result.
    let peak = module.peak_live_values();
    assert!(
        peak <= inputs + 4,
        "peak of {peak} live values, {inputs} placeholders, {nodes} nodes"
    );
}
