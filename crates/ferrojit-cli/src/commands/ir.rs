//! `ferrojit ir FILE [--pass NAME]...`: parse IR text in PyTorch's format, verify it, run the
//! named passes in order (each followed by the verifier), and print it back canonically (the
//! same text for anything PyTorch printed).

use std::path::Path;

use ferrojit_ir::{parse_graph, verifier::verify};

/// Reads, parses and verifies one graph, runs `passes` on it in order, and prints it. Errors
/// name the file, line and column, or the pass and what it refused.
pub fn print_ir_after_passes(file: &Path, passes: &[String]) -> Result<(), String> {
    // An unknown name is reported before the file is read, with the list of passes.
    for name in passes {
        if ferrojit_opt::find_pass(name).is_none() {
            let known: Vec<&str> = ferrojit_opt::PASSES.iter().map(|pass| pass.name).collect();
            return Err(format!(
                "unknown pass '{name}'; the passes are: {}",
                known.join(", ")
            ));
        }
    }
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    // `# CALLEE: NAME` sections after the graph hold the graphs `inline` may inline.
    let (text, callee_sections) = ferrojit_opt::inliner::split_callee_sections(&text);
    let callees = ferrojit_opt::inliner::CalleeTable::parse_sections(&callee_sections)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let text = ir_text_without_directives(&text);
    let mut graph = parse_graph(&text)
        .map_err(|e| format!("{}:{}:{}: {}", file.display(), e.line, e.column, e.message))?;
    verify(&graph).map_err(|e| format!("{}: {e}", file.display()))?;
    for name in passes {
        ferrojit_opt::inliner::run_pass_with_callees(name, &mut graph, &callees)
            .map_err(|e| format!("{}: {e}", file.display()))?;
        // The verifier after every pass, in release builds too: a broken graph is never printed.
        verify(&graph)
            .map_err(|e| format!("{}: pass '{name}' broke an invariant: {e}", file.display()))?;
    }
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
