//! README.md's "Use it as a library" snippets, tested: the ```rust block is byte for byte
//! `examples/readme/snippet.rs` and runs from the repository root; the ```toml block names
//! this crate's path and features; each `cargo run … --example run_any_model -- ARGS` line
//! runs the example's own `run` on those arguments.

#[path = "support/readme_fences.rs"]
mod readme_fences;

use std::path::{Path, PathBuf};

// The example program's code, compiled into this test so its functions can be called.
#[allow(dead_code)]
#[path = "../../../examples/run_any_model.rs"]
mod run_any_model;

// Defines the README's `fn main` here (the test harness keeps its own entry point).
include!("../examples/readme/snippet.rs");

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The fenced blocks of README.md: (info string, body), in order.
fn readme_blocks() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(repo().join("README.md")).expect("README.md reads");
    readme_fences::fenced_blocks(&text)
}

fn blocks_of(language: &str) -> Vec<String> {
    readme_blocks()
        .into_iter()
        .filter(|(info, _)| info == language)
        .map(|(_, body)| body)
        .collect()
}

#[test]
fn the_readme_rust_block_is_the_example_file() {
    let rust = blocks_of("rust");
    assert_eq!(
        rust.len(),
        1,
        "README.md should have exactly one ```rust block"
    );
    let snippet = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/readme/snippet.rs"),
    )
    .unwrap();
    assert_eq!(
        rust[0], snippet,
        "README.md's ```rust block differs from crates/ferrojit/examples/readme/snippet.rs"
    );
}

#[test]
fn the_readme_rust_block_runs_from_the_repository_root() {
    // The snippet's paths are relative to the repository root, as a reader runs it. This is
    // the only test here that changes the directory; the others use absolute paths.
    std::env::set_current_dir(repo()).unwrap();
    main().expect("README's library example runs");
}

#[test]
fn the_readme_toml_block_names_this_crate_and_its_features() {
    let toml = blocks_of("toml");
    assert_eq!(
        toml.len(),
        1,
        "README.md should have exactly one ```toml block"
    );
    let line = toml[0]
        .lines()
        .find(|line| line.starts_with("ferrojit = "))
        .expect("a `ferrojit = { … }` dependency line");
    let path = line
        .split("path = \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the dependency gives a path");
    let manifest = std::fs::read_to_string(repo().join(path).join("Cargo.toml"))
        .unwrap_or_else(|e| panic!("{path}/Cargo.toml: {e}"));
    assert!(
        manifest.contains("name = \"ferrojit\""),
        "{path} is not the ferrojit crate"
    );
    let features = line
        .split("features = [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .unwrap_or("");
    let features_table = manifest
        .split("[features]")
        .nth(1)
        .expect("the crate declares features");
    for feature in features.split(',').map(|f| f.trim().trim_matches('"')) {
        if feature.is_empty() {
            continue;
        }
        assert!(
            features_table
                .lines()
                .any(|line| line.starts_with(&format!("{feature} = "))),
            "README asks for feature {feature}, which {path}/Cargo.toml lacks"
        );
    }
}

#[test]
fn the_readme_run_any_model_lines_run() {
    const PREFIX: &str = "cargo run -p ferrojit --example run_any_model -- ";
    let lines: Vec<String> = blocks_of("sh")
        .iter()
        .flat_map(|body| body.lines().map(str::to_string).collect::<Vec<_>>())
        .filter(|line| line.starts_with(PREFIX))
        .collect();
    assert!(lines.len() >= 2, "README shows both formats: {lines:?}");
    for line in &lines {
        let arguments = line[PREFIX.len()..].split('#').next().unwrap();
        let arguments: Vec<String> = arguments
            .split_whitespace()
            .map(|path| repo().join(path).to_string_lossy().into_owned())
            .collect();
        assert!((1..=2).contains(&arguments.len()), "{line}: MODEL [INPUTS]");
        run_any_model::run(&arguments[0], arguments.get(1))
            .unwrap_or_else(|e| panic!("{line}: {e}"));
    }
}
