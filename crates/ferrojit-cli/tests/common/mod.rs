//! Shared helpers for the file-based tests: fixture paths and comparison of runtime values
//! against the JSON that the PyTorch generator wrote (tests/fixtures/generate.py).

#![allow(dead_code)]

use std::path::PathBuf;

use ferrojit_runtime::ivalue::IValue;
use serde_json::Value as Json;

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn fixture(relative: &str) -> PathBuf {
    repo_root().join("tests/fixtures").join(relative)
}

pub fn read_json(path: &std::path::Path) -> Json {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Float tolerances of the acceptance check (float32: rtol 1e-5, atol 1e-6).
pub const RTOL: f64 = 1e-5;
pub const ATOL: f64 = 1e-6;

fn json_float(value: &Json) -> f64 {
    match value {
        Json::Number(n) => n.as_f64().expect("number"),
        Json::String(s) if s == "nan" => f64::NAN,
        Json::String(s) if s == "inf" => f64::INFINITY,
        Json::String(s) if s == "-inf" => f64::NEG_INFINITY,
        Json::Bool(b) => f64::from(u8::from(*b)),
        other => panic!("not a number in expected JSON: {other}"),
    }
}

fn close(actual: f64, expected: f64) -> bool {
    if expected.is_nan() {
        return actual.is_nan();
    }
    if expected.is_infinite() {
        return actual == expected;
    }
    (actual - expected).abs() <= ATOL + RTOL * expected.abs()
}

/// Asserts that `actual` equals the value encoded in `expected`, with the float tolerance.
/// `path` names the position inside the value for failure messages.
pub fn assert_matches(actual: &IValue, expected: &Json, path: &str) {
    let object = expected
        .as_object()
        .unwrap_or_else(|| panic!("{path}: bad expected JSON {expected}"));
    let (tag, body) = object
        .iter()
        .next()
        .unwrap_or_else(|| panic!("{path}: empty expected JSON"));
    match (tag.as_str(), actual) {
        ("none", IValue::None) => {}
        ("bool", IValue::Bool(b)) => assert_eq!(Some(*b), body.as_bool(), "{path}"),
        ("int", IValue::Int(i)) => assert_eq!(Some(*i), body.as_i64(), "{path}"),
        ("float", IValue::Double(f)) => {
            assert!(close(*f, json_float(body)), "{path}: {f} vs {body}")
        }
        ("str", IValue::Str(s)) => assert_eq!(Some(&**s), body.as_str(), "{path}"),
        ("tuple", IValue::Tuple(tuple)) => assert_items(&tuple.items, body, path),
        ("list", IValue::List(list)) => assert_items(&list.to_vec(), body, path),
        ("dict", IValue::Dict(dict)) => {
            let expected_entries = body.as_array().expect("dict entries");
            let entries = dict.entries();
            assert_eq!(entries.len(), expected_entries.len(), "{path}: dict length");
            for (index, ((key, value), pair)) in entries.iter().zip(expected_entries).enumerate() {
                assert_matches(key, &pair[0], &format!("{path}.key{index}"));
                assert_matches(value, &pair[1], &format!("{path}[{index}]"));
            }
        }
        ("tensor", IValue::Tensor(tensor)) => {
            let tensor = tensor.get();
            assert_eq!(
                tensor.dtype().name(),
                body["dtype"].as_str().unwrap(),
                "{path}: dtype"
            );
            let shape: Vec<usize> = body["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap() as usize)
                .collect();
            assert_eq!(tensor.sizes(), shape.as_slice(), "{path}: shape");
            if let Some(stride) = body.get("stride") {
                let stride: Vec<usize> = stride
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d.as_u64().unwrap() as usize)
                    .collect();
                assert_eq!(tensor.strides(), stride.as_slice(), "{path}: stride");
            }
            if let Some(offset) = body.get("storage_offset") {
                assert_eq!(
                    tensor.storage_offset() as u64,
                    offset.as_u64().unwrap(),
                    "{path}: storage_offset"
                );
            }
            let data = body["data"].as_array().unwrap();
            let actual_values = tensor.to_f64_vec();
            assert_eq!(actual_values.len(), data.len(), "{path}: element count");
            let exact = !tensor.dtype().is_floating_point();
            for (index, (a, e)) in actual_values.iter().zip(data).enumerate() {
                let e = json_float(e);
                if exact {
                    assert_eq!(*a, e, "{path}: element {index}");
                } else {
                    assert!(
                        close(*a, e),
                        "{path}: element {index}: got {a}, expected {e}"
                    );
                }
            }
        }
        (tag, actual) => panic!("{path}: expected a {tag}, got {}", actual.python_repr()),
    }
}

fn assert_items(actual: &[IValue], expected: &Json, path: &str) {
    let expected = expected
        .as_array()
        .unwrap_or_else(|| panic!("{path}: bad expected items"));
    assert_eq!(actual.len(), expected.len(), "{path}: length");
    for (index, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert_matches(a, e, &format!("{path}[{index}]"));
    }
}
