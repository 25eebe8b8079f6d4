//! `fx_text::print_graph` of each fixture program against what PyTorch printed for
//! `print(torch.export.load(path).graph)`.

mod common;

use common::fixture_dir;
use ferrojit_export::{fx_text::print_graph, Pt2Archive, DEFAULT_MODEL_NAME};

/// Programs whose text does not match yet, with the reason; a listed program that matches
/// fails the test, so the list only shrinks.
const KNOWN_GAPS: &[(&str, &str)] = &[];

#[test]
fn every_fixture_graph_prints_as_pytorch_prints_it() {
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture_dir().join("manifest.json")).unwrap(),
    )
    .unwrap();
    let mut failures = Vec::new();
    let mut matched = 0;
    for entry in manifest["programs"].as_array().unwrap() {
        let name = entry["name"].as_str().unwrap();
        let expected =
            std::fs::read_to_string(fixture_dir().join(format!("{name}.graph.txt"))).unwrap();
        let file = entry["archive"].as_str().unwrap_or(name);
        let model = entry["model"].as_str().unwrap_or(DEFAULT_MODEL_NAME);
        let archive = Pt2Archive::open(fixture_dir().join(format!("{file}.pt2"))).unwrap();
        let actual = print_graph(&archive.program(model).unwrap());
        let known = KNOWN_GAPS.iter().any(|(gap, _)| *gap == name);
        match (actual.trim_end() == expected.trim_end(), known) {
            (true, false) => matched += 1,
            (true, true) => {
                failures.push(format!("{name}: matches now; remove it from KNOWN_GAPS"))
            }
            (false, true) => {}
            (false, false) => failures.push(format!(
                "{name}:\n--- PyTorch\n{expected}\n--- ferrojit\n{actual}"
            )),
        }
    }
    eprintln!("{matched} graphs print as PyTorch prints them");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Programs whose code does not match yet, with the reason.
const KNOWN_CODE_GAPS: &[(&str, &str)] = &[];

#[test]
fn every_fixture_program_code_is_pytorchs() {
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture_dir().join("manifest.json")).unwrap(),
    )
    .unwrap();
    let mut failures = Vec::new();
    let mut matched = 0;
    for entry in manifest["programs"].as_array().unwrap() {
        let name = entry["name"].as_str().unwrap();
        let expected =
            std::fs::read_to_string(fixture_dir().join(format!("{name}.code.txt"))).unwrap();
        let file = entry["archive"].as_str().unwrap_or(name);
        let model = entry["model"].as_str().unwrap_or(DEFAULT_MODEL_NAME);
        let archive = Pt2Archive::open(fixture_dir().join(format!("{file}.pt2"))).unwrap();
        let actual = ferrojit_export::fx_text::print_code(&archive.program(model).unwrap());
        let known = KNOWN_CODE_GAPS.iter().any(|(gap, _)| *gap == name);
        match (actual == expected, known) {
            (true, false) => matched += 1,
            (true, true) => failures.push(format!(
                "{name}: matches now; remove it from KNOWN_CODE_GAPS"
            )),
            (false, true) => {}
            (false, false) => failures.push(format!(
                "{name}:\n--- PyTorch\n{expected}\n--- ferrojit\n{actual}"
            )),
        }
    }
    eprintln!("{matched} programs' code matches PyTorch's");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
