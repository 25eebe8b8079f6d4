//! File-based pass tests (tests/fixtures/passes/). A case `NAME.ir` is:
//!
//! ```text
//! # RUN: <pass name>            (see ferrojit_ir::passes::PASSES)
//! # CHECK…: …                   (FileCheck directives run on the output)
//! graph(…)                      (the input graph)
//! ```
//!
//! The output must also equal, byte for byte, one exact expectation when present:
//! - `NAME.expected.ir`: what PyTorch's own passes printed for the same input, written by
//!   tests/fixtures/passes/generate.py; the test never writes these.
//! - `NAME.blessed.ir`: for passes PyTorch has no counterpart of, an expectation a developer
//!   reviewed and accepted by running the test with `FERROJIT_BLESS=1`, which (re)writes these
//!   files from the current output.
//!
//! Every output is verified, and printing then parsing it again must give the same text.

use std::path::{Path, PathBuf};

use ferrojit_ir::filecheck::run_directives;
use ferrojit_ir::passes::run_pass;
use ferrojit_ir::{parse_graph, verifier::verify};

fn cases_folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/passes")
}

fn run_case(path: &Path, bless: bool) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut pass_name = None;
    let mut directives = String::new();
    let mut graph_lines = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("# RUN: ") {
            pass_name = Some(name.trim().to_string());
        } else if line.starts_with('#') {
            directives.push_str(line);
            directives.push('\n');
        } else {
            graph_lines.push(line);
        }
    }
    let pass_name = pass_name.ok_or("no `# RUN: <pass>` line")?;
    let mut graph = parse_graph(&(graph_lines.join("\n") + "\n"))
        .map_err(|e| format!("input does not parse: {e}"))?;
    verify(&graph).map_err(|e| format!("input does not verify: {e}"))?;
    run_pass(&pass_name, &mut graph)?;
    verify(&graph).map_err(|e| format!("{pass_name} broke an invariant: {e}"))?;
    let output = graph.to_ir_string();
    let reparsed = parse_graph(&output).map_err(|e| format!("output does not parse: {e}"))?;
    if reparsed.to_ir_string() != output {
        return Err("output does not print back identically".to_string());
    }
    if !directives.is_empty() {
        run_directives(&directives, &output).map_err(|e| e.message)?;
    }
    let expected = path.with_extension("expected.ir");
    let blessed = path.with_extension("blessed.ir");
    if expected.exists() {
        let expected = std::fs::read_to_string(&expected).map_err(|e| e.to_string())?;
        if output != expected {
            return Err(format!(
                "differs from PyTorch's output\n--- PyTorch\n{expected}--- ferrojit\n{output}"
            ));
        }
    } else if bless {
        std::fs::write(&blessed, &output).map_err(|e| e.to_string())?;
    } else if blessed.exists() {
        let blessed_text = std::fs::read_to_string(&blessed).map_err(|e| e.to_string())?;
        if output != blessed_text {
            return Err(format!(
                "differs from {} (rerun with FERROJIT_BLESS=1 if the change is intended)\n\
                 --- blessed\n{blessed_text}--- now\n{output}",
                blessed.display()
            ));
        }
    }
    Ok(())
}

#[test]
fn pass_cases_match_pytorch_and_their_directives() {
    let bless = std::env::var_os("FERROJIT_BLESS").is_some();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(cases_folder())
        .expect("passes folder")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.ends_with(".ir") && name.matches('.').count() == 1
        })
        .collect();
    cases.sort();
    assert!(cases.len() >= 4, "too few pass cases: {}", cases.len());
    let problems: Vec<String> = cases
        .iter()
        .filter_map(|path| {
            run_case(path, bless).err().map(|e| {
                format!(
                    "{}: {e}",
                    path.file_name().and_then(|n| n.to_str()).unwrap_or("?")
                )
            })
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn unknown_pass_names_are_errors_listing_the_passes() {
    let mut graph = parse_graph("graph(%x : int):\n  return (%x)\n").unwrap();
    let error = run_pass("no_such_pass", &mut graph).unwrap_err();
    assert!(error.contains("unknown pass 'no_such_pass'"), "{error}");
    assert!(error.contains("cleanup"), "{error}");
}
