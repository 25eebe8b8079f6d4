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

fn cases() -> Vec<Json> {
    let manifest = read_json(&fixture("upgraders/cases.json"));
    manifest["cases"].as_array().unwrap().clone()
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
