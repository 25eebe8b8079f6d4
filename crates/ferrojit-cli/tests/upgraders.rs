//! Operator upgraders: archives whose version record predates an operator change run the
//! old behaviour, as PyTorch's `torch.jit.load` does (tests/fixtures/upgraders, made by
//! its generate.py: each case saved by PyTorch 2.15 as `NAME.pt` and, with the version
//! record rewritten to an old number, as `NAME.old.pt`; both results are PyTorch's).

mod common;

use common::{assert_matches, fixture, read_json};
use ferrojit_runtime::ivalue::IValue;
use ferrojit_serialize::export::save_module_to_bytes;
use ferrojit_serialize::import::{load_module, load_module_from_bytes};
use ferrojit_serialize::torch_save;
use serde_json::Value as Json;

fn arguments(name: &str) -> Vec<IValue> {
    match torch_save::load_file(&fixture(&format!("upgraders/{name}.inputs.pt")))
        .unwrap_or_else(|e| panic!("{name}: inputs: {e}"))
    {
        IValue::Tuple(tuple) => tuple.items.to_vec(),
        other => vec![other],
    }
}

/// Loads and runs one archive: its result, or the error of loading or running it.
fn run(name: &str, archive: &str) -> Result<IValue, String> {
    let loaded =
        load_module(&fixture(&format!("upgraders/{archive}"))).map_err(|e| format!("load: {e}"))?;
    loaded
        .module
        .forward(arguments(name))
        .map_err(|e| format!("forward: {e}"))
}

/// Checks one archive against what PyTorch did with it: the same values, or an error too.
fn check(name: &str, archive: &str, outcome: &Json) {
    let result = run(name, archive);
    if let Some(expected) = outcome.get("expected") {
        let expected = read_json(&fixture(&format!(
            "upgraders/{}",
            expected.as_str().unwrap()
        )));
        match result {
            Ok(value) => assert_matches(&value, &expected, archive),
            Err(error) => panic!("{archive}: PyTorch runs it, ferrojit fails: {error}"),
        }
    } else {
        let pytorch = &outcome["error"];
        assert!(
            result.is_err(),
            "{archive}: PyTorch fails ({pytorch}), ferrojit returns {}",
            result.unwrap().python_repr()
        );
    }
}

/// The cases of upgraders/cases.json; it holds 11, and fewer fails.
fn cases() -> Vec<Json> {
    let manifest = read_json(&fixture("upgraders/cases.json"));
    let cases = manifest["cases"].as_array().unwrap().clone();
    assert!(cases.len() >= 11, "upgraders: only {} cases", cases.len());
    cases
}

fn case(name: &str) -> Json {
    cases()
        .into_iter()
        .find(|case| case["name"] == name)
        .unwrap_or_else(|| panic!("no case {name} in cases.json"))
}

fn check_both(name: &str) {
    let case = case(name);
    check(name, &format!("{name}.pt"), &case["current"]);
    check(name, &format!("{name}.old.pt"), &case["old"]);
}

#[test]
fn every_case_has_a_test() {
    let tested = [
        "div_tensor",
        "div_scalar",
        "div_inplace",
        "div_out",
        "full_int_fill",
        "linspace_logspace",
        "linspace_no_steps",
        "out_variants",
        "out_no_steps",
        "gelu",
        "gelu_tanh",
    ];
    for case in cases() {
        let name = case["name"].as_str().unwrap();
        assert!(tested.contains(&name), "case {name} has no test");
    }
}

#[test]
fn integer_tensor_division_truncates_before_version_4() {
    check_both("div_tensor");
}

#[test]
fn integer_scalar_division_truncates_before_version_4() {
    check_both("div_scalar");
}

#[test]
fn in_place_integer_division_truncates_before_version_4_and_fails_after() {
    check_both("div_inplace");
}

#[test]
fn out_integer_division_truncates_before_version_4_and_fails_after() {
    check_both("div_out");
}

#[test]
fn full_with_integer_fill_is_float_before_version_5() {
    check_both("full_int_fill");
}

#[test]
fn linspace_and_logspace_with_steps_are_unchanged() {
    check_both("linspace_logspace");
}

#[test]
fn linspace_and_logspace_without_steps_default_to_100_before_versions_8_and_9() {
    check_both("linspace_no_steps");
}

#[test]
fn out_variants_of_linspace_logspace_full_and_gelu() {
    check_both("out_variants");
}

#[test]
fn out_variants_without_steps_default_to_100_before_versions_8_and_9() {
    check_both("out_no_steps");
}

#[test]
fn gelu_before_version_10() {
    check_both("gelu");
}

#[test]
fn gelu_approximate_is_refused_before_version_10() {
    check_both("gelu_tanh");
}

/// Re-saving an old archive keeps its old behaviour: the printed code calls the upgraders,
/// which are saved with it under `__torch__.__upgraders__` (torch 2.15 loaded ferrojit's
/// re-saved copies of these cases with the same results when this test was written).
#[test]
fn resaved_old_archives_keep_the_old_behaviour() {
    for case in cases() {
        let name = case["name"].as_str().unwrap();
        let Some(expected) = case["old"].get("expected") else {
            continue;
        };
        let loaded = load_module(&fixture(&format!("upgraders/{name}.old.pt"))).unwrap();
        let bytes = save_module_to_bytes(&loaded.module, &loaded.unit, name)
            .unwrap_or_else(|e| panic!("{name}: save: {e}"));
        let reloaded =
            load_module_from_bytes(bytes).unwrap_or_else(|e| panic!("{name}: reload: {e}"));
        let value = reloaded
            .module
            .forward(arguments(name))
            .unwrap_or_else(|e| panic!("{name}: forward: {e}"));
        let expected = read_json(&fixture(&format!(
            "upgraders/{}",
            expected.as_str().unwrap()
        )));
        assert_matches(&value, &expected, &format!("{name} re-saved"));
    }
}

// --- Archives written by old PyTorch releases --------------------------------------------
//
// tests/fixtures/old_versions/torch<V>/ (made by its generate.py): each case scripted and
// saved by that real old torch (1.1.0 and 1.2.0 write the legacy `model.json` format, 1.4.0
// and 1.6.0 the zip format with version records 1 and 3 to 5, 1.8.1 with 3 to 5), with the results that torch
// computed when it loaded its own file, and what torch 2.15 does with the same file.

/// Cases whose result follows today's PyTorch rather than the old torch that wrote them,
/// because torch 2.15 gives today's result for the same file (PyTorch has no upgrader):
/// torch ≤ 1.4 made `torch.tensor([1.5, 2.5])` float64, today it is float32. (Legacy
/// `model.json` archives, which torch 2.15 refuses, keep float64: see `legacy.rs`.)
const FOLLOWS_TODAYS_PYTORCH: &[(&str, &str)] = &[("torch1.4.0", "tensor_literal")];

/// Legacy archives that neither the old torch nor ferrojit can load, with ferrojit's error.
const LEGACY_REFUSALS: &[(&str, &str, &str)] = &[(
    // torch 1.2 writes tensorId -1 for a parameter of a module with __getstate__ and then
    // fails to load its own file (an out-of-range vector index).
    "torch1.2.0",
    "getstate_tensors",
    "model.json: model.mainModule.parameters[0].tensorId: -1 is outside the tensor table (1 entries)",
)];

/// An old release's cases.json; each holds 10 cases, and fewer fails.
fn old_manifest(folder: &str) -> Json {
    let manifest = read_json(&fixture(&format!("old_versions/{folder}/cases.json")));
    let count = manifest["cases"].as_array().map_or(0, Vec::len);
    assert!(count >= 10, "{folder}: only {count} cases");
    manifest
}

fn old_arguments(folder: &str, name: &str) -> Vec<IValue> {
    let path = fixture(&format!("old_versions/{folder}/{name}.inputs.pt"));
    match torch_save::load_file(&path).unwrap_or_else(|e| panic!("{folder}/{name}: inputs: {e}")) {
        IValue::Tuple(tuple) => tuple.items.to_vec(),
        other => vec![other],
    }
}

fn run_old(folder: &str, name: &str) -> Result<IValue, String> {
    let loaded = load_module(&fixture(&format!("old_versions/{folder}/{name}.pt")))
        .map_err(|e| format!("load: {e}"))?;
    loaded
        .module
        .forward(old_arguments(folder, name))
        .map_err(|e| format!("forward: {e}"))
}

/// The JSON file ferrojit's result must equal, or `None` when ferrojit must fail.
fn old_expectation(folder: &str, case: &Json) -> Option<String> {
    let name = case["name"].as_str().unwrap();
    let old = &case["old"];
    let modern = &case["modern"];
    if FOLLOWS_TODAYS_PYTORCH.contains(&(folder, name)) {
        assert_eq!(
            modern["same_as_old"], false,
            "{folder}/{name}: torch 2.15 now agrees"
        );
        return Some(modern["expected"].as_str().unwrap().to_string());
    }
    if let Some(expected) = old.get("expected") {
        return Some(expected.as_str().unwrap().to_string());
    }
    // The old torch raised. The version record selects today's semantics for these calls
    // (e.g. torch 1.6 refused integer division at version 4; torch 2.15 divides), so
    // ferrojit follows torch 2.15 on the same file.
    modern
        .get("expected")
        .map(|expected| expected.as_str().unwrap().to_string())
}

/// Checks every case the old torch wrote; `unwritten` lists those it could not script or
/// save (recorded with its error in cases.json).
fn check_old_versions(folder: &str, unwritten: &[&str]) {
    let manifest = old_manifest(folder);
    let cases = manifest["cases"].as_array().unwrap();
    assert!(cases.len() >= 10, "{folder}: only {} cases", cases.len());
    for case in cases {
        let name = case["name"].as_str().unwrap();
        assert_eq!(
            case.get("not_written").is_some(),
            unwritten.contains(&name),
            "{folder}/{name}: {}",
            case["not_written"]
        );
        if unwritten.contains(&name) {
            continue;
        }
        let result = run_old(folder, name);
        match old_expectation(folder, case) {
            Some(expected) => {
                let expected = read_json(&fixture(&format!("old_versions/{folder}/{expected}")));
                match result {
                    Ok(value) => assert_matches(&value, &expected, &format!("{folder}/{name}")),
                    Err(error) => {
                        panic!("{folder}/{name}: PyTorch runs it, ferrojit fails: {error}")
                    }
                }
            }
            None => {
                let error = match result {
                    Ok(value) => panic!(
                        "{folder}/{name}: PyTorch fails ({}), ferrojit returns {}",
                        case["old"]["last_line"],
                        value.python_repr()
                    ),
                    Err(error) => error,
                };
                if let Some((_, _, message)) = LEGACY_REFUSALS
                    .iter()
                    .find(|(f, n, _)| *f == folder && *n == name)
                {
                    assert!(error.contains(message), "{folder}/{name}: {error}");
                } else {
                    // torch 2.15 raised too: the same message.
                    let pytorch = case["modern"]["last_line"].as_str().unwrap();
                    let pytorch = pytorch.strip_prefix("RuntimeError: ").unwrap_or(pytorch);
                    assert!(
                        error.contains(pytorch),
                        "{folder}/{name}: {error} vs {pytorch}"
                    );
                }
            }
        }
    }
}

fn check_legacy_manifest(folder: &str) {
    let manifest = old_manifest(folder);
    for case in manifest["cases"].as_array().unwrap() {
        if case.get("not_written").is_some() {
            continue;
        }
        assert_eq!(case["format"], "legacy (model.json)");
        assert_eq!(case["version_record"], 1);
        // torch 2.15 refuses the legacy format altogether.
        assert_eq!(
            case["modern"]["error"],
            "Legacy model format is not supported on mobile."
        );
    }
}

#[test]
fn torch_1_1_legacy_model_json_archives_run_with_torch_1_1_results() {
    check_legacy_manifest("torch1.1.0");
    // torch 1.1 scripts no __setstate__ (it cannot assign module attributes), no nn.Sequential
    // inside a ScriptModule and no Optional attribute.
    check_old_versions(
        "torch1.1.0",
        &["getstate_setstate", "getstate_tensors", "layers"],
    );
}

#[test]
fn torch_1_2_legacy_model_json_archives_run_with_torch_1_2_results() {
    check_legacy_manifest("torch1.2.0");
    check_old_versions("torch1.2.0", &[]);
}

#[test]
fn torch_1_4_archives_of_version_1_run_with_torch_1_4_results() {
    let manifest = old_manifest("torch1.4.0");
    for case in manifest["cases"].as_array().unwrap() {
        assert_eq!(case["format"], "zip (data.pkl)");
        assert_eq!(case["version_record"], 1);
    }
    check_old_versions("torch1.4.0", &[]);
}

#[test]
fn torch_1_6_archives_of_versions_3_to_5_run_with_torch_1_6_results() {
    check_old_versions("torch1.6.0", &[]);
}

/// torch 1.8.1 fails to load its own modules with `__setstate__` (an `nn.Module` field it
/// added, `_is_full_backward_hook`, is left uninitialized); torch 2.15 and ferrojit run them.
#[test]
fn torch_1_8_archives_run_with_torch_1_8_results() {
    let manifest = old_manifest("torch1.8.1");
    let raised: Vec<&str> = manifest["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|case| {
            case["old"].get("error").is_some() && case["modern"].get("expected").is_some()
        })
        .map(|case| case["name"].as_str().unwrap())
        .collect();
    assert_eq!(raised, ["getstate_setstate", "getstate_tensors"]);
    check_old_versions("torch1.8.1", &[]);
}

/// What the old releases computed where today's operators differ: integer division
/// truncated before version 4 and `full` with an integer fill was float before 5.
#[test]
fn old_releases_results_are_the_old_semantics() {
    let div = read_json(&fixture("old_versions/torch1.2.0/div_int.expected.json"));
    assert_eq!(
        div["tuple"][0]["tensor"]["data"],
        serde_json::json!([3, -3, 1, -1])
    );
    let full = read_json(&fixture(
        "old_versions/torch1.4.0/full_int_fill.expected.json",
    ));
    assert_eq!(full["tuple"][0]["tensor"]["dtype"], "float32");
    // The legacy file's tensor literal stays float64, as torch 1.2 made it.
    let loaded = load_module(&fixture("old_versions/torch1.2.0/tensor_literal.pt")).unwrap();
    let result = loaded
        .module
        .forward(old_arguments("torch1.2.0", "tensor_literal"))
        .unwrap();
    let IValue::Tuple(items) = result else {
        panic!("not a tuple")
    };
    assert_eq!(
        items.items[0].to_tensor().unwrap().dtype().name(),
        "float64"
    );
}

/// ferrojit re-saves every old archive it runs in today's format, with the results the old
/// torch gave for its own re-saved copy: the same, except that a module with __getstate__
/// runs __setstate__(__getstate__()) once more (`resaved_expected`). RESULTS.md records
/// torch 2.15 loading the files `ferrojit convert` writes.
#[test]
fn resaved_old_archives_keep_their_results() {
    for folder in [
        "torch1.1.0",
        "torch1.2.0",
        "torch1.4.0",
        "torch1.6.0",
        "torch1.8.1",
    ] {
        for case in old_manifest(folder)["cases"].as_array().unwrap() {
            let name = case["name"].as_str().unwrap();
            if case.get("not_written").is_some() {
                continue;
            }
            let Some(mut expected) = old_expectation(folder, case) else {
                continue;
            };
            // The re-saved copy's result comes from the torch whose result the original
            // follows: the old torch's own re-save, or torch 2.15's where the old one raised.
            let source = if case["old"].get("expected").is_some() {
                &case["old"]
            } else {
                &case["modern"]
            };
            if let Some(resaved) = source.get("resaved_expected") {
                expected = resaved.as_str().unwrap().to_string();
            }
            let path = fixture(&format!("old_versions/{folder}/{name}.pt"));
            let loaded = load_module(&path).unwrap();
            let bytes = save_module_to_bytes(&loaded.module, &loaded.unit, name)
                .unwrap_or_else(|e| panic!("{folder}/{name}: save: {e}"));
            let reloaded = load_module_from_bytes(bytes)
                .unwrap_or_else(|e| panic!("{folder}/{name}: reload: {e}"));
            let value = reloaded
                .module
                .forward(old_arguments(folder, name))
                .unwrap_or_else(|e| panic!("{folder}/{name}: forward: {e}"));
            let expected = read_json(&fixture(&format!("old_versions/{folder}/{expected}")));
            assert_matches(&value, &expected, &format!("{folder}/{name} re-saved"));
        }
    }
}

/// A copy of a legacy fixture with `model.json` passed through `edit`.
fn edited_legacy_archive(name: &str, edit: impl Fn(&mut Json)) -> Vec<u8> {
    use ferrojit_archive::zip_archive::{ArchiveReader, ArchiveWriter};
    let path = fixture(&format!("old_versions/torch1.2.0/{name}.pt"));
    let reader = ArchiveReader::from_bytes(std::fs::read(&path).unwrap()).unwrap();
    let mut writer = ArchiveWriter::in_memory(name).unwrap();
    for record in reader.record_names().to_vec() {
        let mut bytes = reader.read_record(&record).unwrap();
        if record == "model.json" {
            let mut model: Json = serde_json::from_slice(&bytes).unwrap();
            edit(&mut model);
            bytes = serde_json::to_vec(&model).unwrap();
        }
        writer.write_record(&record, &bytes).unwrap();
    }
    writer.finish_into_bytes().unwrap()
}

fn legacy_load_error(bytes: Vec<u8>) -> String {
    match load_module_from_bytes(bytes) {
        Ok(_) => panic!("the edited archive loaded"),
        Err(error) => error.to_string(),
    }
}

/// An edit of a legacy fixture's `model.json`.
type ModelEdit = Box<dyn Fn(&mut Json)>;

/// Every field of `model.json` is untrusted: a bad one is a typed error naming it.
#[test]
fn malformed_or_unsupported_legacy_fields_are_typed_errors() {
    let cases: Vec<(&str, ModelEdit, &str)> = vec![
        (
            "module_state",
            Box::new(|m| m["tensors"][0]["offset"] = Json::from("100")),
            "model.json: model.tensors[0]",
        ),
        (
            "module_state",
            Box::new(|m| m["tensors"][0]["dims"][0] = Json::from("-4")),
            "model.json: model.tensors[0].dims[0]: -4 is negative",
        ),
        (
            "module_state",
            Box::new(|m| m["tensors"][0]["strides"] = serde_json::json!(["1"])),
            "mismatch in length of strides and shape",
        ),
        (
            "module_state",
            Box::new(|m| m["tensors"][0]["isQuantized"] = Json::from(true)),
            "model.json: model.tensors[0].isQuantized: quantized tensors of the legacy format are not supported",
        ),
        (
            "module_state",
            Box::new(|m| m["tensors"][0]["dataType"] = Json::from("STRING")),
            "model.json: model.tensors[0].dataType: data type STRING is not supported",
        ),
        (
            "module_state",
            Box::new(|m| m["tensors"][0]["data"]["key"] = Json::from("tensors/99")),
            "model.json: model.tensors[0].data.key: record tensors/99 is missing",
        ),
        (
            "module_state",
            Box::new(|m| m["mainModule"]["parameters"][0]["tensorId"] = Json::from("7")),
            "model.json: model.mainModule.parameters[0].tensorId: 7 is outside the tensor table",
        ),
        (
            "module_state",
            Box::new(|m| m["mainModule"]["attributes"][1]["id"] = Json::from("99")),
            "model.json: model.mainModule.attributes[1].id: 99 is outside the attribute table",
        ),
        (
            "module_state",
            Box::new(|m| m["mainModule"]["name"] = Json::from("a-b")),
            "model.json: model.mainModule.name: module name component 'a-b' is not an identifier",
        ),
        (
            "module_state",
            Box::new(|m| m["protoVersion"] = Json::from("6")),
            "model.json: model.protoVersion: proto version 6 is not supported",
        ),
        (
            "module_state",
            Box::new(|m| m["mainModule"]["submodules"] = Json::from(3)),
            "model.json: model.mainModule.submodules: is a number, not an array",
        ),
        (
            "getstate_setstate",
            Box::new(|m| {
                m["mainModule"]
                    .as_object_mut()
                    .unwrap()
                    .remove("getStateAttributeId");
            }),
            "the field 'extra' of __torch__.getstate_setstate was left uninitialized after __setstate__",
        ),
    ];
    for (name, edit, message) in cases {
        let error = legacy_load_error(edited_legacy_archive(name, edit));
        assert!(
            error.contains(message),
            "{name}: {error}\nexpected: {message}"
        );
    }
}
