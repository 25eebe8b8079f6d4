//! Verifier negative cases: each graph text in tests/fixtures/ir/verifier/ breaks one invariant
//! of `verifier.rs` and names, on its first line (`# ERROR: …`), the error the verifier must
//! report. A use of a value before its definition is already refused by the parser, which
//! resolves names as it reads; that case says `# PARSE-ERROR: …` instead. Invariants that text cannot express (use lists, definition records,
//! block linking, schema conformance) are covered by the unit tests in `verifier.rs`.

use std::path::PathBuf;

use ferrojit_ir::{parse_graph, verifier::verify};

#[test]
fn each_broken_invariant_is_reported() {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/ir/verifier");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .expect("verifier cases folder")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "ir"))
        .collect();
    files.sort();
    assert!(files.len() >= 13, "too few verifier cases: {}", files.len());
    let mut problems = Vec::new();
    for path in &files {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        let text = std::fs::read_to_string(path).expect("readable case");
        let (first_line, graph_text) = text.split_once('\n').expect("a header line");
        if let Some(expected) = first_line.strip_prefix("# PARSE-ERROR: ") {
            match parse_graph(graph_text) {
                Ok(_) => problems.push(format!("{name}: parser accepted it")),
                Err(error) if error.to_string().contains(expected) => {}
                Err(error) => problems.push(format!(
                    "{name}: expected a parse error containing\n  {expected}\ngot\n  {error}"
                )),
            }
            continue;
        }
        let expected = first_line
            .strip_prefix("# ERROR: ")
            .unwrap_or_else(|| panic!("{name}: first line must be `# ERROR: …`"));
        let graph = match parse_graph(graph_text) {
            Ok(graph) => graph,
            Err(error) => {
                problems.push(format!("{name}: does not parse: {error}"));
                continue;
            }
        };
        match verify(&graph) {
            Ok(()) => problems.push(format!("{name}: verifier accepted it")),
            Err(error) if error.message.contains(expected) => {}
            Err(error) => problems.push(format!(
                "{name}: expected an error containing\n  {expected}\ngot\n  {}",
                error.message
            )),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
