//! `fx_text::print_graph` of each fixture program against what PyTorch printed for
//! `print(torch.export.load(path).graph)`.

mod common;

use common::{fixture_dir, fixture_programs};
use ferrojit_export::fx_text::{print_code, print_graph};
use ferrojit_export::{Pt2Archive, DEFAULT_MODEL_NAME};

/// Programs whose `print(graph)` text does not match yet, with the reason; a listed program
/// that matches fails the test, so the list only shrinks.
const KNOWN_GAPS: &[(&str, &str)] = &[];

/// Programs whose `graph_module.code` does not match yet, with the reason.
const KNOWN_CODE_GAPS: &[(&str, &str)] = &[];

/// Prints every fixture program with `print` and compares with PyTorch's text in
/// `NAME.SUFFIX`; `gaps` lists the programs that may still differ.
fn check_every_program(
    suffix: &str,
    gaps: &[(&str, &str)],
    print: fn(&ferrojit_export::ExportedProgram) -> String,
    same: fn(&str, &str) -> bool,
) {
    let mut failures = Vec::new();
    let mut matched = 0;
    for entry in fixture_programs() {
        let name = entry["name"].as_str().unwrap();
        let expected =
            std::fs::read_to_string(fixture_dir().join(format!("{name}.{suffix}"))).unwrap();
        let file = entry["archive"].as_str().unwrap_or(name);
        let model = entry["model"].as_str().unwrap_or(DEFAULT_MODEL_NAME);
        let archive = Pt2Archive::open(fixture_dir().join(format!("{file}.pt2"))).unwrap();
        let actual = print(&archive.program(model).unwrap());
        let known = gaps.iter().any(|(gap, _)| *gap == name);
        match (same(&actual, &expected), known) {
            (true, false) => matched += 1,
            (true, true) => failures.push(format!("{name}: matches now; remove it from its gaps")),
            (false, true) => {}
            (false, false) => failures.push(format!(
                "{name}:\n--- PyTorch\n{expected}\n--- ferrojit\n{actual}"
            )),
        }
    }
    eprintln!("{matched} programs' {suffix} match PyTorch's");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_fixture_graph_prints_as_pytorch_prints_it() {
    // PyTorch's file has no final newline; `print` adds one.
    check_every_program("graph.txt", KNOWN_GAPS, print_graph, |actual, expected| {
        actual.trim_end() == expected.trim_end()
    });
}

#[test]
fn every_fixture_program_code_is_pytorchs() {
    check_every_program(
        "code.txt",
        KNOWN_CODE_GAPS,
        print_code,
        |actual, expected| actual == expected,
    );
}
