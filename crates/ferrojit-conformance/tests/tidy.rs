//! Tidy checks over the source tree: every Rust file under `crates/` (libraries, binaries,
//! tests and their helpers) and every fuzz target and `fuzz/harness.rs` starts with a `//!`
//! line saying what it is for.

use std::path::{Path, PathBuf};

use ferrojit_conformance::{repo_root, require_at_least};

/// Every `.rs` file under `folder`, recursively (build output folders left out).
fn rust_files(folder: &Path, files: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = std::fs::read_dir(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    for entry in entries {
        let path = entry
            .map_err(|e| format!("{}: {e}", folder.display()))?
            .path();
        if path.is_dir() {
            if path.file_name().is_some_and(|name| name == "target") {
                continue;
            }
            rust_files(&path, files)?;
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path);
        }
    }
    Ok(())
}

/// Files that may not start with a `//!` line, each with the reason.
const EXEMPT_FROM_DOC_LINE: &[(&str, &str)] = &[(
    "crates/ferrojit/examples/readme/snippet.rs",
    "byte for byte the README's rust block (tests/readme_example.rs checks it); \
     its `//!` line is in main.rs, which include!s it",
)];

#[test]
fn every_rust_file_starts_with_a_module_doc_line() {
    let root = repo_root();
    let mut files = Vec::new();
    for folder in ["crates", "fuzz/fuzz_targets"] {
        if let Err(error) = rust_files(&root.join(folder), &mut files) {
            panic!("{error}");
        }
    }
    files.push(root.join("fuzz/harness.rs"));
    files.sort();
    // 187 files when this test was written: far fewer means the walk lost its way.
    if let Err(error) = require_at_least("Rust files", files.len(), 180) {
        panic!("{error}");
    }
    for (exempt, reason) in EXEMPT_FROM_DOC_LINE {
        assert!(
            files.contains(&root.join(exempt)),
            "{exempt} is exempt ({reason}) but no longer exists: drop it from the list"
        );
    }
    let mut undocumented = Vec::new();
    for file in &files {
        if EXEMPT_FROM_DOC_LINE
            .iter()
            .any(|(exempt, _)| file == &root.join(exempt))
        {
            continue;
        }
        let text = std::fs::read_to_string(file)
            .unwrap_or_else(|error| panic!("{}: {error}", file.display()));
        let first_line = text.lines().next().unwrap_or("");
        if !first_line.starts_with("//!") || first_line.trim_end() == "//!" {
            let relative = file.strip_prefix(&root).unwrap_or(file);
            undocumented.push(relative.display().to_string());
        }
    }
    assert!(
        undocumented.is_empty(),
        "{} file(s) do not start with a `//!` line saying what they are for:\n{}",
        undocumented.len(),
        undocumented.join("\n")
    );
}
