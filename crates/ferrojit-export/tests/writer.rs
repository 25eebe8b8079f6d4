//! The `.pt2` writer, checked against the part-1 fixtures PyTorch wrote: every program
//! re-saved by ferrojit loads back and gives PyTorch's recorded outputs; saving is
//! deterministic; the re-save's records are the ones PyTorch writes; its JSON equals
//! PyTorch's as a value; and bad programs give typed errors.

mod common;

use common::{compare, fixture_dir, fixture_programs, load_torch_save};
use ferrojit_export::model::{Argument, InputSpec};
use ferrojit_export::{
    save_program_to_bytes, save_programs_to_bytes, ExportError, ExportedModule, Pt2Archive,
    Pt2Layout,
};
use ferrojit_runtime::IValue;
use std::collections::BTreeSet;

/// The builder example (`examples/build_pt2.rs`), whose program the tests
/// build again here.
#[allow(dead_code)]
#[path = "../../../examples/build_pt2.rs"]
mod build_pt2;

fn arguments(name: &str) -> Vec<IValue> {
    match load_torch_save(name) {
        IValue::Tuple(tuple) => tuple.items.clone(),
        other => vec![other],
    }
}

/// The fixture archives (each once), by file stem.
fn fixture_archives() -> Vec<String> {
    let mut archives = BTreeSet::new();
    for entry in fixture_programs() {
        let name = entry["name"].as_str().unwrap();
        archives.insert(entry["archive"].as_str().unwrap_or(name).to_string());
    }
    archives.into_iter().collect()
}

/// Re-saves every program of the archive `stem` in memory, as `ferrojit convert` does.
fn resave(archive: &Pt2Archive) -> Result<Vec<u8>, ExportError> {
    let mut programs = Vec::new();
    for name in archive.model_names() {
        programs.push((archive.load(name)?, archive.sample_inputs(name)?));
    }
    let borrowed: Vec<_> = programs
        .iter()
        .map(|(program, inputs)| (program, inputs.as_ref()))
        .collect();
    save_programs_to_bytes(&borrowed, "archive")
}

fn open_fixture(stem: &str) -> Pt2Archive {
    Pt2Archive::open(fixture_dir().join(format!("{stem}.pt2"))).unwrap()
}

/// The record names below the root folder, in the order they are stored.
fn member_list(bytes: &[u8]) -> Vec<String> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes.to_vec())).unwrap();
    (0..zip.len())
        .map(|index| {
            let name = zip.by_index(index).unwrap().name().to_string();
            name.split_once('/').unwrap().1.to_string()
        })
        .collect()
}

#[test]
fn every_fixture_program_resaved_runs_with_pytorchs_results() {
    ferrojit_torchvision::register().unwrap();
    let mut failures = Vec::new();
    let programs = fixture_programs();
    let mut resaved = std::collections::BTreeMap::new();
    for stem in fixture_archives() {
        match resave(&open_fixture(&stem)) {
            Ok(bytes) => {
                resaved.insert(stem, bytes);
            }
            Err(error) => failures.push(format!("{stem}: re-save: {error}")),
        }
    }
    let mut passed = 0;
    for entry in &programs {
        let name = entry["name"].as_str().unwrap();
        let stem = entry["archive"].as_str().unwrap_or(name);
        let model = entry["model"].as_str().unwrap_or("model");
        let Some(bytes) = resaved.get(stem) else {
            continue;
        };
        let result = (|| -> Result<(), String> {
            let archive = Pt2Archive::from_bytes(bytes.clone()).map_err(|e| e.to_string())?;
            let mut module = ExportedModule::new(archive.load(model).map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?;
            for call in 0..entry["calls"].as_u64().unwrap() {
                let output = module
                    .run(arguments(&format!("{name}.call{call}.inputs.pt")))
                    .map_err(|e| format!("call {call}: {e}"))?;
                let expected = load_torch_save(&format!("{name}.call{call}.expected.pt"));
                compare(&output, &expected, &format!("call {call} output"))?;
            }
            Ok(())
        })();
        match result {
            Ok(()) => passed += 1,
            Err(error) => failures.push(format!("{name}: {error}")),
        }
    }
    eprintln!(
        "{passed} of {} re-saved programs match PyTorch",
        programs.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn saving_is_deterministic_and_a_resave_of_a_resave_is_identical() {
    for stem in fixture_archives() {
        let first = resave(&open_fixture(&stem)).unwrap();
        let second = resave(&open_fixture(&stem)).unwrap();
        assert!(first == second, "{stem}: two saves differ");
        let again = resave(&Pt2Archive::from_bytes(first.clone()).unwrap()).unwrap();
        assert!(first == again, "{stem}: the re-save of the re-save differs");
    }
}

/// Archives the fixture generator rewrote after `torch.export.save` (its `save=` option),
/// so PyTorch's writer is not the reference for their records.
const NOT_WRITTEN_BY_TORCH_EXPORT_SAVE: &[(&str, &str)] = &[
    (
        "flat_layout",
        "the older flat layout, written entry by entry",
    ),
    (
        "pickled_weight",
        "one weight moved by hand into an extra weight_pickled_0 record",
    ),
];

#[test]
fn a_resave_has_the_records_pytorch_wrote_in_the_same_order() {
    let mut compared = 0;
    for stem in fixture_archives() {
        let archive = open_fixture(&stem);
        if NOT_WRITTEN_BY_TORCH_EXPORT_SAVE
            .iter()
            .any(|(name, _)| *name == stem)
        {
            assert!(
                stem != "flat_layout" || archive.layout() == Pt2Layout::Flat,
                "flat_layout is flat"
            );
            continue;
        }
        let original = std::fs::read(fixture_dir().join(format!("{stem}.pt2"))).unwrap();
        let resaved = resave(&archive).unwrap();
        assert_eq!(member_list(&resaved), member_list(&original), "{stem}");
        compared += 1;
    }
    assert!(compared > 40, "only {compared} archives compared");
}

#[test]
fn a_resaved_programs_json_equals_pytorchs_as_a_value() {
    for stem in fixture_archives() {
        let archive = open_fixture(&stem);
        let original = std::fs::read(fixture_dir().join(format!("{stem}.pt2"))).unwrap();
        let resaved = resave(&archive).unwrap();
        let read = |bytes: &[u8], record: &str| -> Option<serde_json::Value> {
            let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes.to_vec())).unwrap();
            let name = zip
                .file_names()
                .find(|name| name.split_once('/').map(|(_, rest)| rest) == Some(record))?
                .to_string();
            let mut text = String::new();
            std::io::Read::read_to_string(&mut zip.by_name(&name).unwrap(), &mut text).unwrap();
            Some(serde_json::from_str(&text).unwrap())
        };
        for model in archive.model_names() {
            let record = format!("models/{model}.json");
            let Some(theirs) = read(&original, &record) else {
                continue; // the flat layout names its JSON differently
            };
            let ours = read(&resaved, &record).unwrap();
            assert!(ours == theirs, "{stem}: {record} differs from PyTorch's");
        }
    }
}

#[test]
fn weights_sharing_a_storage_are_written_once() {
    let archive = open_fixture("shared_storage");
    let bytes = resave(&archive).unwrap();
    let weights: Vec<_> = member_list(&bytes)
        .into_iter()
        .filter(|name| name.starts_with("data/weights/weight_"))
        .collect();
    assert_eq!(weights, vec!["data/weights/weight_0".to_string()]);
    let reloaded = Pt2Archive::from_bytes(bytes)
        .unwrap()
        .load("model")
        .unwrap();
    assert!(reloaded.state_dict["w"].shares_storage(&reloaded.state_dict["w_t"]));
}

#[test]
fn missing_tensors_and_metadata_are_typed_errors() {
    let loaded = open_fixture("convnet").load("model").unwrap();

    let mut no_weight = loaded.clone();
    let parameter = no_weight
        .program
        .graph_module
        .signature
        .input_specs
        .iter()
        .find_map(|spec| match spec {
            InputSpec::Parameter { parameter_name, .. } => Some(parameter_name.clone()),
            _ => None,
        })
        .unwrap();
    no_weight.state_dict.remove(&parameter);
    match save_program_to_bytes(&no_weight, None) {
        Err(ExportError::MissingReference { name, .. }) => assert_eq!(name, parameter),
        other => panic!("expected a missing reference, got {other:?}"),
    }

    let mut no_meta = loaded.clone();
    let graph = &mut no_meta.program.graph_module.graph;
    let output = graph.nodes[0].outputs[0].clone();
    let Argument::Tensor(output_name) = output else {
        panic!("the first node returns a tensor");
    };
    graph.tensor_values.remove(&output_name);
    match save_program_to_bytes(&no_meta, None) {
        Err(ExportError::MissingReference { name, .. }) => assert_eq!(name, output_name),
        other => panic!("expected a missing reference, got {other:?}"),
    }

    let mut bad_name = loaded;
    bad_name.name = "../evil".into();
    assert!(matches!(
        save_program_to_bytes(&bad_name, None),
        Err(ExportError::Unsupported(_))
    ));
}

#[test]
fn the_builder_examples_program_is_the_committed_file_and_runs_as_pytorch_ran_it() {
    let (program, sample_inputs) = build_pt2::build_program().unwrap();
    let path = std::env::temp_dir().join(format!("built_in_rust-{}.pt2", std::process::id()));
    ferrojit_export::save_program(&program, Some(&sample_inputs), &path).unwrap();
    let ours = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let committed = std::fs::read(fixture_dir().join("built_in_rust.pt2")).unwrap();
    // The root folder is the file stem; the committed file was saved as built_in_rust.pt2.
    let renamed =
        save_programs_to_bytes(&[(&program, Some(&sample_inputs))], "built_in_rust").unwrap();
    assert!(
        renamed == committed,
        "the example's program no longer gives the committed bytes"
    );
    assert_eq!(member_list(&ours), member_list(&committed));

    // PyTorch's output on the inputs it loaded from the file (recorded by
    // check_resaved_in_pytorch.py) equals ferrojit's run of the re-loaded file.
    let archive = Pt2Archive::from_bytes(committed).unwrap();
    let mut module = ExportedModule::new(archive.load("model").unwrap()).unwrap();
    let output = module.run(arguments("built_in_rust.inputs.pt")).unwrap();
    compare(
        &output,
        &load_torch_save("built_in_rust.expected.pt"),
        "output",
    )
    .unwrap();
    // The inputs PyTorch recorded are the sample inputs the builder saved.
    let saved = archive.sample_inputs("model").unwrap().unwrap();
    compare(
        &IValue::tuple(saved.args),
        &IValue::tuple(arguments("built_in_rust.inputs.pt")),
        "sample inputs",
    )
    .unwrap();
}

#[test]
fn the_builder_checks_names_and_arguments_against_the_schema() {
    use ferrojit_export::writer::builder::ProgramBuilder;
    let x_value = ferrojit_tensor::Tensor::from_vec(vec![1.0_f32, -2.0], &[2]).unwrap();
    let mut builder = ProgramBuilder::new();
    let x = builder.add_user_input("x", x_value.clone()).unwrap();
    // A name the schema does not have.
    match builder.call("aten::relu", vec![("input", x.arg())]) {
        Err(ExportError::Unsupported(message)) => assert!(message.contains("'input'"), "{message}"),
        other => panic!("expected an error, got {other:?}"),
    }
    // A required argument left out.
    assert!(builder
        .call("aten::add.Tensor", vec![("self", x.arg())])
        .is_err());
    // An unknown operator, and a value the graph does not have.
    assert!(builder.call("aten::no_such_op", vec![]).is_err());
    match builder.call(
        "aten::relu",
        vec![("self", Argument::Tensor("ghost".into()))],
    ) {
        Err(ExportError::MissingReference { name, .. }) => assert_eq!(name, "ghost"),
        other => panic!("expected a missing reference, got {other:?}"),
    }
    // Duplicate names and state.
    assert!(builder.add_user_input("x", x_value.clone()).is_err());
    builder.add_buffer("b", x_value.clone(), true).unwrap();
    assert!(builder.add_parameter("b", x_value.clone()).is_err());
    // A good call after the failed ones: its value is named after the operator and has the
    // metadata of what it computed.
    let relu = builder.call("aten::relu", vec![("self", x.arg())]).unwrap();
    assert_eq!(relu.name(), "relu");
    let again = builder
        .call("aten::relu", vec![("self", relu.arg())])
        .unwrap();
    assert_eq!(again.name(), "relu_1");
    // No outputs yet: building is an error.
    let (program, _) = {
        let mut finished = ProgramBuilder::new();
        let y = finished.add_user_input("y", x_value).unwrap();
        assert!(ProgramBuilder::new().build("model").is_err());
        let negated = finished.call("aten::neg", vec![("self", y.arg())]).unwrap();
        finished.set_outputs(&[negated]).unwrap();
        finished.build("model").unwrap()
    };
    let mut module = ExportedModule::new(program).unwrap();
    let input = ferrojit_tensor::Tensor::from_vec(vec![3.0_f32, -4.0], &[2]).unwrap();
    let output = module.run(vec![IValue::from(input)]).unwrap();
    assert_eq!(output.to_tensor().unwrap().to_f64_vec(), vec![-3.0, 4.0]);
}
