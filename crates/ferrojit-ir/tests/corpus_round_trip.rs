//! Every graph text PyTorch printed (tests/fixtures/ir/corpus, made by generate.py) parses and
//! prints back byte for byte, names, numbers, subgraphs and source comments included.

use std::path::PathBuf;

use ferrojit_ir::{parse_graph, verifier::verify};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/ir/corpus")
}

#[test]
fn pytorch_printed_graphs_round_trip_exactly() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("corpus directory")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "ir"))
        .collect();
    files.sort();
    assert!(files.len() >= 51, "corpus too small: {}", files.len());
    let mut failures = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("readable corpus file");
        match parse_graph(&text) {
            Ok(graph) => {
                let printed = graph.to_ir_string();
                if printed != text {
                    let line = printed
                        .lines()
                        .zip(text.lines())
                        .position(|(a, b)| a != b)
                        .unwrap_or(0);
                    failures.push(format!(
                        "{}: differs at line {}:\n  expected: {}\n  printed:  {}",
                        path.display(),
                        line + 1,
                        text.lines().nth(line).unwrap_or(""),
                        printed.lines().nth(line).unwrap_or("")
                    ));
                } else if let Err(error) = verify(&graph) {
                    failures.push(format!("{}: {error}", path.display()));
                }
            }
            Err(error) => failures.push(format!("{}: {error}", path.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
