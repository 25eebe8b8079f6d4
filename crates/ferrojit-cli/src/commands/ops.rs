//! `ferrojit ops`: the operator schemas this build runs; `ferrojit ops --core`: how many of
//! the core ATen overloads (those tagged `torch.Tag.core`, the set `run_decompositions()`
//! lowers a `.pt2` program to) a `.pt2` program can call, and which are missing.

use std::io::Write;

use ferrojit_runtime::OperatorRegistry;

use super::pt2::write_stdout;

/// The core ATen overloads of torch 2.15, one `aten::NAME.OVERLOAD` a line (written by
/// `tests/fixtures/export/core_aten_ops.py`; `#` lines are comments).
const CORE_ATEN_OPS: &str = include_str!("../../../../tests/fixtures/export/core_aten_ops.txt");

/// The core ATen overload names, in the file's (sorted) order.
pub fn core_aten_overloads() -> Vec<&'static str> {
    CORE_ATEN_OPS
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect()
}

/// Every schema in the registry (torchvision's too, where registered), sorted.
pub fn list_operators() -> Result<(), String> {
    let registry = OperatorRegistry::global();
    let mut schemas: Vec<String> = registry
        .operators()
        .iter()
        .chain(registry.added_operators().iter())
        .map(|operator| operator.schema.to_string())
        .collect();
    schemas.sort();
    let mut stdout = std::io::stdout().lock();
    for schema in schemas {
        if let Err(error) = writeln!(stdout, "{schema}") {
            // A reader that stops early (`| head`) is not an error.
            if error.kind() == std::io::ErrorKind::BrokenPipe {
                return Ok(());
            }
            return Err(format!("writing the operator list: {error}"));
        }
    }
    Ok(())
}

/// `covered/total` on the first line (`core ATen: 150/189 overloads`), then each missing
/// overload on a line of its own. An overload counts when the `.pt2` runner finds it: in the
/// registry, among `ferrojit-export`'s stand-ins, or among the size and assertion operators
/// the runner evaluates itself.
pub fn core_coverage() -> Result<(), String> {
    let overloads = core_aten_overloads();
    let missing: Vec<&str> = overloads
        .iter()
        .copied()
        .filter(|name| !ferrojit_export::fallback::runs_operator(name))
        .collect();
    let mut text = format!(
        "core ATen: {}/{} overloads\n",
        overloads.len() - missing.len(),
        overloads.len()
    );
    if !missing.is_empty() {
        text.push_str(&format!("missing ({}):\n", missing.len()));
        for name in missing {
            text.push_str("  ");
            text.push_str(name);
            text.push('\n');
        }
    }
    write_stdout(&text)
}
