//! The reader's other layouts and payload kinds, and the higher-order operators that call an
//! operator: each behaviour checked on a fixture PyTorch wrote (and read back), each refusal
//! on an archive built here from a fixture's records with one thing changed.

mod common;

use common::{fixture_dir, register_fixture_operators, RECORDED_LABELS};
use ferrojit_archive::pickle_value::PickleValue;
use ferrojit_archive::zip_archive::{ArchiveReader, ArchiveWriter};
use ferrojit_export::{
    load_module, ExportError, ExportedModule, Pt2Archive, Pt2Layout, DEFAULT_MODEL_NAME,
};
use ferrojit_runtime::IValue;
use ferrojit_tensor::{DType, Tensor};
use serde_json::Value;
use std::io::Write;

fn fixture_bytes(name: &str) -> Vec<u8> {
    std::fs::read(fixture_dir().join(name)).unwrap_or_else(|_| panic!("{name}"))
}

/// The records of a fixture archive, in order (a flat archive's names are its entry names).
fn records(name: &str) -> Vec<(String, Vec<u8>)> {
    let reader = ArchiveReader::from_bytes_allowing_flat(fixture_bytes(name)).unwrap();
    reader
        .record_names()
        .iter()
        .map(|record| (record.clone(), reader.read_record(record).unwrap()))
        .collect()
}

/// A zip with a root folder, as PyTorch's writer makes it.
fn write_packaged(records: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut writer = ArchiveWriter::in_memory("archive").unwrap();
    for (name, data) in records {
        writer.write_record(name, data).unwrap();
    }
    writer.finish_into_bytes().unwrap()
}

/// A zip with no folder, as Python's `zipfile` wrote the older flat layout.
fn write_flat(records: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, data) in records {
        zip.start_file(name.as_str(), options).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

fn replace(records: &mut [(String, Vec<u8>)], name: &str, data: Vec<u8>) {
    let entry = records
        .iter_mut()
        .find(|(record, _)| record == name)
        .unwrap_or_else(|| panic!("no record {name}"));
    entry.1 = data;
}

fn edit_json(records: &mut [(String, Vec<u8>)], name: &str, edit: impl Fn(&mut Value)) {
    let entry = records
        .iter_mut()
        .find(|(record, _)| record == name)
        .unwrap_or_else(|| panic!("no record {name}"));
    let mut json: Value = serde_json::from_slice(&entry.1).unwrap();
    edit(&mut json);
    entry.1 = serde_json::to_vec(&json).unwrap();
}

fn load(bytes: Vec<u8>) -> Result<ExportedModule, ExportError> {
    let archive = Pt2Archive::from_bytes(bytes)?;
    ExportedModule::new(archive.load(DEFAULT_MODEL_NAME)?)
}

/// A `torch.save` file whose pickle is `value` (storages none).
fn torch_save_of(value: &PickleValue) -> Vec<u8> {
    let pickle = ferrojit_archive::pickler::pickle(value).unwrap();
    let mut writer = ArchiveWriter::in_memory("archive").unwrap();
    writer.write_record("data.pkl", &pickle).unwrap();
    writer.write_record("byteorder", b"little").unwrap();
    writer.finish_into_bytes().unwrap()
}

// ---- the older flat layout ----

#[test]
fn the_flat_layout_is_read_as_torch_export_load_reads_it() {
    let archive = Pt2Archive::open(fixture_dir().join("flat_layout.pt2")).unwrap();
    assert_eq!(archive.layout(), Pt2Layout::Flat);
    assert_eq!(archive.model_names(), &[DEFAULT_MODEL_NAME.to_string()]);
    let loaded = archive.load(DEFAULT_MODEL_NAME).unwrap();
    // Parameters and persistent buffers in the state dict; the non-persistent buffer and
    // the tensor constant among the constants, as serialize() split them.
    let state: Vec<&str> = loaded.state_dict.keys().map(String::as_str).collect();
    assert_eq!(state, ["fc.bias", "fc.weight", "scale"]);
    assert!(
        loaded.constants.contains_key("offset"),
        "{:?}",
        loaded.constants.keys()
    );
    assert_eq!(loaded.constants.len(), 2, "{:?}", loaded.constants.keys());
    let samples = archive.sample_inputs(DEFAULT_MODEL_NAME).unwrap().unwrap();
    assert_eq!(samples.args.len(), 1);
    assert!(samples.kwargs.is_empty());
    assert_eq!(samples.args[0].to_tensor().unwrap().sizes(), &[2, 3]);
}

#[test]
fn a_flat_archive_of_another_schema_major_is_refused_naming_both_versions() {
    let mut records = records("flat_layout.pt2");
    replace(&mut records, "version", b"7.3".to_vec());
    let error = load(write_flat(&records)).unwrap_err();
    assert!(
        matches!(
            error,
            ExportError::SchemaVersion {
                found_major: 7,
                found_minor: 3,
                supported_major: 8
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("7.3"), "{error}");
}

#[test]
fn a_flat_archive_without_its_version_or_artifacts_is_refused() {
    for missing in ["version", "serialized_constants.pt"] {
        let records: Vec<_> = records("flat_layout.pt2")
            .into_iter()
            .filter(|(name, _)| name != missing)
            .collect();
        let error = load(write_flat(&records)).unwrap_err();
        assert!(
            matches!(error, ExportError::NotPt2(_)),
            "{missing}: {error}"
        );
        assert!(error.to_string().contains(missing), "{error}");
    }
}

#[test]
fn a_flat_archive_with_empty_artifacts_has_no_state() {
    // serialize(..., serialize_state_dict=False) writes empty records; a program with no
    // weights then loads with an empty state dict.
    let mut records = records("flat_layout.pt2");
    replace(&mut records, "serialized_example_inputs.pt", Vec::new());
    let archive = Pt2Archive::from_bytes(write_flat(&records)).unwrap();
    assert!(archive.sample_inputs(DEFAULT_MODEL_NAME).unwrap().is_none());
}

#[test]
fn a_flat_state_dict_holding_an_object_is_refused_naming_its_class() {
    let mut records = records("flat_layout.pt2");
    let object = PickleValue::dict(vec![(
        PickleValue::str("fc.weight"),
        PickleValue::reduce(
            PickleValue::global("mylib.tensors", "QuantizedWeight"),
            vec![],
        ),
    )]);
    replace(
        &mut records,
        "serialized_state_dict.pt",
        torch_save_of(&object),
    );
    let error = load(write_flat(&records)).unwrap_err();
    assert!(
        error.to_string().contains("mylib.tensors.QuantizedWeight"),
        "{error}"
    );
}

// ---- payloads: use_pickle, constants, sample inputs, dtype views ----

#[test]
fn a_pickled_weight_is_read_through_the_torch_save_reader() {
    let archive = Pt2Archive::open(fixture_dir().join("pickled_weight.pt2")).unwrap();
    let loaded = archive.load(DEFAULT_MODEL_NAME).unwrap();
    let weight = &loaded.state_dict["fc1.weight"];
    assert_eq!(weight.sizes(), &[16, 8]);
    assert_eq!(weight.dtype(), DType::Float32);
    // Its values are checked where the program runs: every_fixture_program_matches_pytorch
    // compares pickled_weight's output with what torch.export.load made of this archive.
}

fn pickled_weight_records() -> (Vec<(String, Vec<u8>)>, String) {
    let records = records("pickled_weight.pt2");
    let config = "data/weights/model_weights_config.json".to_string();
    assert!(records.iter().any(|(name, _)| *name == config));
    (records, config)
}

#[test]
fn a_pickled_weight_that_disagrees_with_its_metadata_is_refused() {
    let (mut records, config) = pickled_weight_records();
    edit_json(&mut records, &config, |json| {
        json["config"]["fc1.weight"]["tensor_meta"]["sizes"] =
            serde_json::json!([{"as_int": 8}, {"as_int": 16}]);
    });
    let error = load(write_packaged(&records)).unwrap_err();
    assert!(
        matches!(error, ExportError::Tensor { .. }) && error.to_string().contains("tensor_meta"),
        "{error}"
    );
}

#[test]
fn a_pickled_tensor_subclass_is_refused_naming_its_class() {
    let (mut records, _) = pickled_weight_records();
    let subclass = PickleValue::reduce(
        PickleValue::global("torchao.dtypes", "AffineQuantizedTensor"),
        vec![],
    );
    replace(
        &mut records,
        "data/weights/weight_pickled_0",
        torch_save_of(&subclass),
    );
    let error = load(write_packaged(&records)).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("torchao.dtypes.AffineQuantizedTensor") && text.contains("does not load"),
        "{text}"
    );
}

#[test]
fn a_custom_object_constant_is_refused_clearly() {
    let mut records = records("tensor_constants.pt2");
    let config = "data/constants/model_constants_config.json";
    edit_json(&mut records, config, |json| {
        let entries = json["config"].as_object_mut().unwrap();
        let first = entries.keys().next().unwrap().clone();
        entries[&first]["path_name"] = Value::from("custom_obj_0");
    });
    records.push((
        "data/constants/custom_obj_0".to_string(),
        b"\x80\x02N.".to_vec(),
    ));
    let error = load(write_packaged(&records)).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("custom object") && text.contains("does not load"),
        "{text}"
    );
}

#[test]
fn sample_inputs_are_read_on_request() {
    let archive = Pt2Archive::open(fixture_dir().join("mlp.pt2")).unwrap();
    let samples = archive.sample_inputs(DEFAULT_MODEL_NAME).unwrap().unwrap();
    assert_eq!(samples.args.len(), 1);
    assert_eq!(samples.args[0].to_tensor().unwrap().sizes(), &[3, 8]);
    // They run as the program's inputs.
    let mut module = load_module(fixture_dir().join("mlp.pt2"), DEFAULT_MODEL_NAME).unwrap();
    module.run(samples.args).unwrap();
}

#[test]
fn views_of_one_storage_with_other_dtypes_read_as_pytorch_reads_them() {
    let loaded = Pt2Archive::open(fixture_dir().join("storage_dtype_views.pt2"))
        .unwrap()
        .load(DEFAULT_MODEL_NAME)
        .unwrap();
    let bits = &loaded.state_dict["bits"];
    assert_eq!(bits.dtype(), DType::Int32);
    // 0.5f32 is 0x3f000000: torch.export.load gives 1056964608 first.
    assert_eq!(bits.to_f64_vec()[0], 1_056_964_608.0);
    let halves = &loaded.state_dict["halves"];
    assert_eq!(halves.dtype(), DType::Int16);
    assert_eq!(halves.storage_offset(), 4);
    assert_eq!(
        halves.to_f64_vec(),
        vec![0.0, 16416.0, 0.0, 16480.0, 0.0, 16528.0, 0.0, 16560.0]
    );
    assert_eq!(loaded.state_dict["empty"].sizes(), &[0]);
}

#[test]
fn a_zero_byte_storage_file_stands_for_zeros() {
    let mut records = records("mlp.pt2");
    let config: Value = serde_json::from_slice(
        &records
            .iter()
            .find(|(name, _)| name == "data/weights/model_weights_config.json")
            .unwrap()
            .1,
    )
    .unwrap();
    let path = config["config"]["fc1.bias"]["path_name"]
        .as_str()
        .unwrap()
        .to_string();
    replace(&mut records, &format!("data/weights/{path}"), Vec::new());
    let loaded = Pt2Archive::from_bytes(write_packaged(&records))
        .unwrap()
        .load(DEFAULT_MODEL_NAME)
        .unwrap();
    assert_eq!(loaded.state_dict["fc1.bias"].to_f64_vec(), vec![0.0; 16]);
}

// ---- higher-order operators ----

#[test]
fn with_effects_runs_the_effectful_calls_in_token_order() {
    register_fixture_operators();
    let mut module =
        load_module(fixture_dir().join("with_effects.pt2"), DEFAULT_MODEL_NAME).unwrap();
    let input = Tensor::from_vec(vec![0.5f32, 1.0, 2.0], &[3]).unwrap();
    let labels_before = RECORDED_LABELS.lock().unwrap().len();
    module.run(vec![IValue::from(input)]).unwrap();
    let labels = RECORDED_LABELS.lock().unwrap()[labels_before..].to_vec();
    // Other tests may record concurrently; this run's two calls keep their order.
    let first = labels.iter().position(|label| label == "first").unwrap();
    let second = labels.iter().position(|label| label == "second").unwrap();
    assert!(first < second, "{labels:?}");
}

#[test]
fn an_unregistered_operator_inside_a_higher_order_operator_is_refused_at_load() {
    let mut records = records("auto_functionalized_v2.pt2");
    let program = "models/model.json";
    edit_json(&mut records, program, |json| {
        for node in json["graph_module"]["graph"]["nodes"]
            .as_array_mut()
            .unwrap()
        {
            if node["target"] == "torch.ops.higher_order.auto_functionalized_v2" {
                node["inputs"][0]["arg"]["as_operator"] =
                    Value::from("torch.ops.nowhere.missing_.default");
            }
        }
    });
    register_fixture_operators();
    let error = load(write_packaged(&records)).unwrap_err();
    assert!(error.to_string().contains("nowhere::missing_"), "{error}");
}

#[test]
fn an_unknown_higher_order_operator_is_refused_at_load() {
    let mut records = records("invoke_subgraph.pt2");
    edit_json(&mut records, "models/model.json", |json| {
        for node in json["graph_module"]["graph"]["nodes"]
            .as_array_mut()
            .unwrap()
        {
            if node["target"] == "torch.ops.higher_order.invoke_subgraph" {
                node["target"] = Value::from("torch.ops.higher_order.run_const_graph");
            }
        }
    });
    let error = load(write_packaged(&records)).unwrap_err();
    assert!(error.to_string().contains("run_const_graph"), "{error}");
}

#[test]
fn an_archive_with_aot_inductor_files_and_a_program_json_loads_the_program() {
    // torch.export.load reads the exported program of such a package and leaves its
    // compiled code alone; ferrojit does the same (an archive with only the compiled code is
    // refused, see adversarial.rs).
    let mut records = records("mlp.pt2");
    records.push((
        "data/aotinductor/model/model.wrapper.so".to_string(),
        vec![0x7f, b'E', b'L', b'F'],
    ));
    load(write_packaged(&records)).unwrap();
}
