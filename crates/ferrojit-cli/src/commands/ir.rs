//! `ferrojit ir FILE`: parse IR text in PyTorch's format, verify it, and print it back
//! canonically (the same text for anything PyTorch printed).

use std::path::Path;

use ferrojit_ir::{parse_graph, verifier::verify};

/// Reads, parses, verifies and prints one graph. Errors name the file, line and column.
pub fn print_canonical_ir(file: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let text = ir_text_without_directives(&text);
    let graph = parse_graph(&text)
        .map_err(|e| format!("{}:{}:{}: {}", file.display(), e.line, e.column, e.message))?;
    verify(&graph).map_err(|e| format!("{}: {e}", file.display()))?;
    print!("{}", graph.to_ir_string());
    Ok(())
}

/// FileCheck test files keep their directives on `#` comment lines of their own; those lines
/// are not IR. They are blanked (not removed) so error line numbers still match the file.
fn ir_text_without_directives(text: &str) -> String {
    text.lines()
        .map(|line| {
            if line.trim_start().starts_with('#') {
                ""
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}
