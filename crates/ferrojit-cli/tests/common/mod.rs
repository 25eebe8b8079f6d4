//! Shared helpers for the file-based tests: fixture paths and comparison of runtime values
//! against the JSON that the PyTorch generator wrote (tests/fixtures/generate.py).

#![allow(dead_code)]

use std::path::PathBuf;

use ferrojit_conformance::json::compare_json;
pub use ferrojit_conformance::repo_root;
use ferrojit_runtime::ivalue::IValue;
use serde_json::Value as Json;

pub fn fixture(relative: &str) -> PathBuf {
    repo_root().join("tests/fixtures").join(relative)
}

pub fn read_json(path: &std::path::Path) -> Json {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Asserts that `actual` equals the value encoded in `expected`, with the JSON fixtures'
/// float tolerance ([`ferrojit_conformance::json::compare_json`]). `path` names the position
/// inside the value for failure messages.
pub fn assert_matches(actual: &IValue, expected: &Json, path: &str) {
    if let Err(difference) = compare_json(actual, expected, path) {
        panic!("{difference}");
    }
}
