//! The `.pt2` fast path (batch norms folded into convolutions, linear and convolution
//! epilogues fused onto the packed GEMM) against the plain interpreter: every fixture
//! program, prepared both ways, gives the same outputs, mutated inputs and buffers, call after
//! call, and rejects the same inputs.

mod common;

use common::{compare, fixture_dir, fixture_programs, load_torch_save};
use ferrojit_export::{ExportedModule, Pt2Archive, DEFAULT_MODEL_NAME};
use ferrojit_runtime::IValue;

fn arguments(name: &str) -> Vec<IValue> {
    match load_torch_save(name) {
        IValue::Tuple(tuple) => tuple.items.clone(),
        other => vec![other],
    }
}

/// The program of a manifest entry, prepared with the fast path and without it.
fn both_ways(entry: &serde_json::Value) -> (ExportedModule, ExportedModule) {
    let name = entry["name"].as_str().unwrap();
    let archive = entry["archive"].as_str().unwrap_or(name);
    let model = entry["model"].as_str().unwrap_or(DEFAULT_MODEL_NAME);
    let archive = Pt2Archive::open(fixture_dir().join(format!("{archive}.pt2"))).unwrap();
    let fast = ExportedModule::new(archive.load(model).unwrap()).unwrap();
    let plain = ExportedModule::new_plain(archive.load(model).unwrap()).unwrap();
    (fast, plain)
}

/// Runs the entry's calls and rejects on both; the first difference, if any.
fn differences(
    entry: &serde_json::Value,
    fast: &mut ExportedModule,
    plain: &mut ExportedModule,
) -> Result<(), String> {
    let name = entry["name"].as_str().unwrap();
    for call in 0..entry["calls"].as_u64().unwrap() {
        let file = format!("{name}.call{call}.inputs.pt");
        // Separate copies: a program may write its inputs.
        let (fast_inputs, plain_inputs) = (arguments(&file), arguments(&file));
        let expected = plain
            .run(plain_inputs.clone())
            .map_err(|e| format!("call {call}, plain: {e}"))?;
        let output = fast
            .run(fast_inputs.clone())
            .map_err(|e| format!("call {call}, fast path: {e}"))?;
        compare(&output, &expected, &format!("call {call} output"))?;
        compare(
            &IValue::tuple(fast_inputs),
            &IValue::tuple(plain_inputs),
            &format!("call {call} inputs after the call"),
        )?;
    }
    for (state_name, _) in plain.loaded().state_dict.iter() {
        let (ours, theirs) = (fast.state_value(state_name), plain.state_value(state_name));
        compare(
            &ours.unwrap(),
            &theirs.unwrap(),
            &format!("state {state_name}"),
        )?;
    }
    for reject in entry["rejects"].as_array().unwrap() {
        let inputs = arguments(reject["inputs"].as_str().unwrap());
        match (fast.run(inputs.clone()), plain.run(inputs)) {
            (Err(ours), Err(theirs)) if ours.to_string() == theirs.to_string() => {}
            (ours, theirs) => {
                return Err(format!(
                    "reject {}: fast path {:?}, plain {:?}",
                    reject["name"],
                    ours.err().map(|e| e.to_string()),
                    theirs.err().map(|e| e.to_string())
                ))
            }
        }
    }
    Ok(())
}

#[test]
fn the_fast_path_gives_the_plain_interpreters_results_on_every_fixture_program() {
    ferrojit_torchvision::register().unwrap();
    let mut failures = Vec::new();
    let mut rewritten = Vec::new();
    for entry in &fixture_programs() {
        let name = entry["name"].as_str().unwrap();
        let (mut fast, mut plain) = both_ways(entry);
        if fast.fast_path_rewrites() != (0, 0) {
            rewritten.push(name.to_string());
        }
        assert_eq!(
            plain.fast_path_rewrites(),
            (0, 0),
            "{name}: new_plain rewrote"
        );
        if let Err(difference) = differences(entry, &mut fast, &mut plain) {
            failures.push(format!("{name}: {difference}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The comparison means something only where the fast path rewrote the program.
    for expected in [
        "mlp",
        "convnet",
        "resnet18",
        "mobilenet_v3_small",
        "transformer_encoder",
    ] {
        assert!(
            rewritten.iter().any(|name| name == expected),
            "{expected} was not rewritten; rewritten: {rewritten:?}"
        );
    }
}

fn fixture_module(name: &str) -> ExportedModule {
    let archive = Pt2Archive::open(fixture_dir().join(format!("{name}.pt2"))).unwrap();
    ExportedModule::new(archive.load(DEFAULT_MODEL_NAME).unwrap()).unwrap()
}

/// resnet18: every batch norm follows its convolution and folds (20). Fused (15): the stem's
/// convolution with its relu, each of the 8 blocks' first convolution with its relu, the
/// second with the residual add and relu in the 5 blocks without downsampling, and the
/// classifier's linear (for its packed weight). In the 3 downsampling blocks the
/// downsampling convolution runs between the second convolution and the add, and the
/// in-place add writes the second convolution's result, so neither chain is fused.
#[test]
fn resnet18_folds_every_batch_norm_and_fuses_its_blocks() {
    assert_eq!(fixture_module("resnet18").fast_path_rewrites(), (20, 15));
}

/// A batch norm in training mode updates its running statistics: nothing folds.
#[test]
fn a_training_batch_norm_does_not_fold() {
    for name in ["batchnorm_train", "batchnorm_train_decomposed"] {
        assert_eq!(fixture_module(name).fast_path_rewrites().0, 0, "{name}");
    }
}
