//! Broken and hostile `.pt2` files: each must give a typed error, never a panic. The cases
//! start from a real fixture (the MLP torch.export saved) and break one thing.

mod common;

use common::fixture_dir;
use ferrojit_archive::zip_archive::{ArchiveLimits, ArchiveReader, ArchiveWriter};
use ferrojit_export::{ExportError, ExportedModule, Pt2Archive, DEFAULT_MODEL_NAME};
use ferrojit_runtime::IValue;
use ferrojit_tensor::Tensor;
use serde_json::Value;

fn fixture_bytes() -> Vec<u8> {
    std::fs::read(fixture_dir().join("mlp.pt2")).expect("mlp.pt2")
}

/// The records of the MLP fixture, in order.
fn records() -> Vec<(String, Vec<u8>)> {
    let reader = ArchiveReader::from_bytes(fixture_bytes()).unwrap();
    reader
        .record_names()
        .iter()
        .map(|name| (name.clone(), reader.read_record(name).unwrap()))
        .collect()
}

fn write(records: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut writer = ArchiveWriter::in_memory("mlp").unwrap();
    for (name, data) in records {
        writer.write_record(name, data).unwrap();
    }
    writer.finish_into_bytes().unwrap()
}

/// The fixture with `record`'s JSON changed by `edit`.
fn with_json(record: &str, edit: impl Fn(&mut Value)) -> Vec<u8> {
    let mut records = records();
    let entry = records.iter_mut().find(|(name, _)| name == record).unwrap();
    let mut json: Value = serde_json::from_slice(&entry.1).unwrap();
    edit(&mut json);
    entry.1 = serde_json::to_vec(&json).unwrap();
    write(&records)
}

fn load(bytes: Vec<u8>) -> Result<ExportedModule, ExportError> {
    let archive = Pt2Archive::from_bytes(bytes)?;
    ExportedModule::new(archive.load(DEFAULT_MODEL_NAME)?)
}

fn load_and_run(bytes: Vec<u8>) -> Result<IValue, ExportError> {
    let mut module = load(bytes)?;
    let input = Tensor::from_vec(vec![0.5f32; 24], &[3, 8]).unwrap();
    module.run(vec![IValue::from(input)])
}

#[test]
fn the_untouched_fixture_loads_and_runs() {
    load_and_run(write(&records())).unwrap();
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = fixture_bytes();
    let step = (bytes.len() / 97).max(1);
    for length in (0..bytes.len()).step_by(step) {
        let result = load_and_run(bytes[..length].to_vec());
        assert!(result.is_err(), "truncated to {length} bytes but loaded");
    }
}

#[test]
fn bad_json_is_a_json_error() {
    let mut records = records();
    let entry = records
        .iter_mut()
        .find(|(name, _)| name == "models/model.json")
        .unwrap();
    entry.1.truncate(entry.1.len() / 2);
    let error = load(write(&records)).unwrap_err();
    assert!(matches!(error, ExportError::Json { .. }), "{error}");
}

#[test]
fn deeply_nested_json_is_refused_before_parsing() {
    let mut records = records();
    let entry = records
        .iter_mut()
        .find(|(name, _)| name == "models/model.json")
        .unwrap();
    entry.1 = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000)).into_bytes();
    let error = load(write(&records)).unwrap_err();
    assert!(error.to_string().contains("nesting"), "{error}");
}

#[test]
fn another_schema_major_is_refused_naming_both_versions() {
    let bytes = with_json("models/model.json", |json| {
        json["schema_version"]["major"] = Value::from(9);
        json["schema_version"]["minor"] = Value::from(1);
    });
    let error = load(bytes).unwrap_err();
    assert!(
        matches!(error, ExportError::SchemaVersion { found_major: 9, .. }),
        "{error}"
    );
    let message = error.to_string();
    assert!(
        message.contains("9.1") && message.contains("8.x"),
        "{message}"
    );
}

#[test]
fn a_missing_field_names_its_path() {
    let bytes = with_json("models/model.json", |json| {
        json["graph_module"]["graph"]
            .as_object_mut()
            .unwrap()
            .remove("nodes");
    });
    let error = load(bytes).unwrap_err();
    assert!(error.to_string().contains("graph_module.graph"), "{error}");
}

#[test]
fn tensor_meta_past_the_storage_end_is_refused() {
    let bytes = with_json("data/weights/model_weights_config.json", |json| {
        for (_, entry) in json["config"].as_object_mut().unwrap() {
            entry["tensor_meta"]["storage_offset"] = serde_json::json!({"as_int": 1000});
        }
    });
    let error = load(bytes).unwrap_err();
    assert!(matches!(error, ExportError::Tensor { .. }), "{error}");
}

#[test]
fn huge_sizes_overflow_without_allocating() {
    let bytes = with_json("data/weights/model_weights_config.json", |json| {
        for (_, entry) in json["config"].as_object_mut().unwrap() {
            entry["tensor_meta"]["sizes"] =
                serde_json::json!([{"as_int": i64::MAX}, {"as_int": i64::MAX}]);
            entry["tensor_meta"]["strides"] = serde_json::json!([{"as_int": 1}, {"as_int": 1}]);
        }
    });
    let error = load(bytes).unwrap_err();
    assert!(matches!(error, ExportError::Tensor { .. }), "{error}");
}

#[test]
fn a_wrong_dtype_for_the_storage_length_is_refused() {
    let bytes = with_json("data/weights/model_weights_config.json", |json| {
        for (_, entry) in json["config"].as_object_mut().unwrap() {
            entry["tensor_meta"]["dtype"] = Value::from(8); // float64: twice the bytes
        }
    });
    assert!(load(bytes).is_err());
}

#[test]
fn a_missing_storage_file_is_refused() {
    let mut records = records();
    records.retain(|(name, _)| !name.starts_with("data/weights/weight_"));
    let error = load(write(&records)).unwrap_err();
    assert!(error.to_string().contains("weight_"), "{error}");
}

#[test]
fn a_node_naming_a_missing_value_is_a_missing_reference() {
    let bytes = with_json("models/model.json", |json| {
        let node = &mut json["graph_module"]["graph"]["nodes"][0];
        node["inputs"][0]["arg"] = serde_json::json!({"as_tensor": {"name": "no_such_value"}});
    });
    let error = load_and_run(bytes).unwrap_err();
    let ExportError::Node { source, .. } = &error else {
        panic!("expected a node error, got {error}");
    };
    assert!(
        matches!(**source, ExportError::MissingReference { .. }),
        "{error}"
    );
}

#[test]
fn an_unknown_operator_is_refused_at_load() {
    let bytes = with_json("models/model.json", |json| {
        json["graph_module"]["graph"]["nodes"][0]["target"] =
            Value::from("torch.ops.evil.system.default");
    });
    let error = load(bytes).unwrap_err();
    assert!(error.to_string().contains("evil::system"), "{error}");
}

#[test]
fn a_hostile_symbolic_size_is_a_typed_error() {
    let bytes = with_json("models/model.json", |json| {
        let values = json["graph_module"]["graph"]["tensor_values"]
            .as_object_mut()
            .unwrap();
        for (_, meta) in values.iter_mut() {
            meta["sizes"][0] = serde_json::json!({"as_expr": {"expr_str": "__import__('os').system('true')", "hint": null}});
        }
    });
    let error = load_and_run(bytes).unwrap_err();
    assert!(
        matches!(error, ExportError::SymbolicExpression { .. }),
        "{error}"
    );
}

#[test]
fn an_aot_inductor_package_is_refused_as_native_code() {
    let records = vec![
        ("archive_format".to_string(), b"pt2".to_vec()),
        (
            "data/aotinductor/model/model.wrapper.so".to_string(),
            vec![0x7f, b'E', b'L', b'F'],
        ),
        (
            "data/aotinductor/model/model.wrapper.cpp".to_string(),
            b"// code".to_vec(),
        ),
    ];
    let error = Pt2Archive::from_bytes(write(&records)).unwrap_err();
    assert!(matches!(error, ExportError::AotInductor(_)), "{error}");
    assert!(
        error.to_string().contains("compiled native code"),
        "{error}"
    );
}

#[test]
fn a_missing_model_names_the_ones_there() {
    let archive = Pt2Archive::from_bytes(fixture_bytes()).unwrap();
    let error = archive.load("other").unwrap_err();
    assert!(error.to_string().contains("model"), "{error}");
}

#[test]
fn a_torchscript_archive_is_not_a_pt2() {
    let records = vec![("data.pkl".to_string(), b"\x80\x02N.".to_vec())];
    let error = Pt2Archive::from_bytes(write(&records)).unwrap_err();
    assert!(matches!(error, ExportError::NotPt2(_)), "{error}");
}

#[test]
fn random_byte_flips_never_panic() {
    let original = fixture_bytes();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..300 {
        let mut bytes = original.clone();
        for _ in 0..4 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let position = (state % bytes.len() as u64) as usize;
            bytes[position] ^= (state >> 32) as u8 | 1;
        }
        let _ = load_and_run(bytes);
    }
}

// ---- the caller's archive limits apply to a .pt2 archive and the pickles inside it ----

/// A cap on a pickle's values far below what any `torch.save` file of a tensor needs.
const TINY_PICKLE_MEMORY: u64 = 64;

fn tiny_pickle_limits() -> ArchiveLimits {
    ArchiveLimits {
        max_pickle_value_bytes: Some(TINY_PICKLE_MEMORY),
        ..ArchiveLimits::default()
    }
}

#[test]
fn a_pickled_weight_over_the_pickle_memory_cap_is_one_error_naming_its_record() {
    let bytes = std::fs::read(fixture_dir().join("pickled_weight.pt2")).unwrap();
    // Under the default limits the use_pickle weight loads.
    Pt2Archive::from_bytes(bytes.clone())
        .unwrap()
        .load(DEFAULT_MODEL_NAME)
        .unwrap();
    let archive = Pt2Archive::from_bytes_with_limits(bytes, tiny_pickle_limits()).unwrap();
    let error = archive.load(DEFAULT_MODEL_NAME).unwrap_err();
    let ExportError::Tensor { name, message } = &error else {
        panic!("expected a tensor error, got {error}");
    };
    assert_eq!(name, "data/weights/weight_pickled_0", "{error}");
    assert!(message.contains("data.pkl"), "{error}");
    assert_eq!(error.to_string().lines().count(), 1, "{error}");
}

#[test]
fn sample_inputs_over_the_pickle_memory_cap_name_their_record() {
    let archive =
        Pt2Archive::from_bytes_with_limits(fixture_bytes(), tiny_pickle_limits()).unwrap();
    // The program has no pickles of its own: it loads under the cap.
    archive.load(DEFAULT_MODEL_NAME).unwrap();
    let error = archive.sample_inputs(DEFAULT_MODEL_NAME).unwrap_err();
    let ExportError::Tensor { name, .. } = &error else {
        panic!("expected a tensor error, got {error}");
    };
    assert_eq!(name, "data/sample_inputs/model.pt", "{error}");
    // The same file under the default limits reads.
    let archive = Pt2Archive::from_bytes(fixture_bytes()).unwrap();
    assert!(archive.sample_inputs(DEFAULT_MODEL_NAME).unwrap().is_some());
}

#[test]
fn the_flat_layouts_state_dict_pickle_is_read_under_the_cap() {
    let path = fixture_dir().join("flat_layout.pt2");
    let bytes = std::fs::read(path).unwrap();
    Pt2Archive::from_bytes(bytes.clone())
        .unwrap()
        .load(DEFAULT_MODEL_NAME)
        .unwrap();
    let archive = Pt2Archive::from_bytes_with_limits(bytes, tiny_pickle_limits()).unwrap();
    let error = archive.load(DEFAULT_MODEL_NAME).unwrap_err();
    assert!(
        error.to_string().contains("serialized_state_dict.pt"),
        "{error}"
    );
}

#[test]
fn too_many_entries_for_the_limit_is_refused_at_open() {
    let entries = ArchiveReader::from_bytes(fixture_bytes())
        .unwrap()
        .record_names()
        .len();
    let limits = ArchiveLimits {
        max_entries: entries - 1,
        ..ArchiveLimits::default()
    };
    let error = Pt2Archive::from_bytes_with_limits(fixture_bytes(), limits).unwrap_err();
    assert!(matches!(error, ExportError::Archive(_)), "{error}");
    let limits = ArchiveLimits {
        max_entries: entries + 1,
        ..ArchiveLimits::default()
    };
    Pt2Archive::from_bytes_with_limits(fixture_bytes(), limits).unwrap();
}

/// The bytes `load` reads that are not weight storages: the program, the configs and the
/// small text records the reader checks.
fn bytes_read_besides_weights(reader: &ArchiveReader) -> u64 {
    reader
        .record_names()
        .iter()
        .filter(|name| {
            !name.starts_with("data/weights/weight_")
                && !name.starts_with("data/sample_inputs/")
                && !name.starts_with(".data/")
        })
        .map(|name| reader.record_size(name).unwrap())
        .sum()
}

#[test]
fn weight_storages_borrowed_from_the_file_count_against_the_total() {
    let reader = ArchiveReader::from_bytes(fixture_bytes()).unwrap();
    let besides = bytes_read_besides_weights(&reader);
    let weights: u64 = reader
        .record_names()
        .iter()
        .filter(|name| name.starts_with("data/weights/weight_"))
        .map(|name| reader.record_size(name).unwrap())
        .sum();
    let smallest_weight = reader
        .record_names()
        .iter()
        .filter(|name| name.starts_with("data/weights/weight_"))
        .map(|name| reader.record_size(name).unwrap())
        .min()
        .unwrap();
    // Room for everything but the weights, plus less than the smallest weight: the first
    // storage read goes over.
    let limits = ArchiveLimits {
        max_total_bytes: besides + smallest_weight - 1,
        ..ArchiveLimits::default()
    };
    let archive = Pt2Archive::from_bytes_with_limits(fixture_bytes(), limits).unwrap();
    let error = archive.load(DEFAULT_MODEL_NAME).unwrap_err();
    assert!(error.to_string().contains("over the cap"), "{error}");
    assert!(
        error.to_string().contains("data/weights/weight_"),
        "{error}"
    );
    // Room for all of it: the program loads.
    let limits = ArchiveLimits {
        max_total_bytes: besides + weights,
        ..ArchiveLimits::default()
    };
    let archive = Pt2Archive::from_bytes_with_limits(fixture_bytes(), limits).unwrap();
    archive.load(DEFAULT_MODEL_NAME).unwrap();
}

#[test]
fn a_weight_storage_over_the_record_limit_names_its_tensor() {
    let reader = ArchiveReader::from_bytes(fixture_bytes()).unwrap();
    let largest_other = reader
        .record_names()
        .iter()
        .filter(|name| !name.starts_with("data/weights/weight_"))
        .map(|name| reader.record_size(name).unwrap())
        .max()
        .unwrap();
    // The MLP's program JSON is larger than its weights: grow one storage past every other
    // record, so that only the storage can trip the record limit. A storage may be longer
    // than its view, so the program still loads under the default limits.
    let record = "data/weights/weight_0";
    let mut records = records();
    let padded = records.iter_mut().find(|(name, _)| name == record).unwrap();
    padded.1.resize(largest_other as usize * 2, 0);
    let bytes = write(&records);
    Pt2Archive::from_bytes(bytes.clone())
        .unwrap()
        .load(DEFAULT_MODEL_NAME)
        .unwrap();
    let limits = ArchiveLimits {
        max_record_bytes: largest_other,
        ..ArchiveLimits::default()
    };
    let archive = Pt2Archive::from_bytes_with_limits(bytes, limits).unwrap();
    let error = archive.load(DEFAULT_MODEL_NAME).unwrap_err();
    let ExportError::Tensor { message, .. } = &error else {
        panic!("expected a tensor error, got {error}");
    };
    assert!(message.contains(record), "{error}");
    assert!(message.contains("over the cap"), "{error}");
}
