//! `ferrojit ops --missing`: the count line and the list of torch 2.15's public aten overloads
//! the registry lacks, checked against the committed list and the registry itself.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::{Command, Output};

fn ferrojit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferrojit"))
        .args(args)
        .output()
        .expect("ferrojit runs")
}

fn schemas_file(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn data_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .collect()
}

#[test]
fn missing_lists_exactly_the_public_overloads_the_registry_lacks() {
    let output = ferrojit(&["ops", "--missing"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout).to_string();

    // The expected list, computed here from the committed files and the registry.
    let public = schemas_file("pytorch_public_ops.txt");
    let left_out_text = schemas_file("left_out.txt");
    let left_out: Vec<&str> = data_lines(&left_out_text)
        .iter()
        .map(|line| line.split('\t').next().unwrap())
        .collect();
    for line in data_lines(&left_out_text) {
        let why = line.split('\t').nth(1).unwrap_or("");
        assert!(
            !why.trim().is_empty(),
            "left_out.txt gives no reason: {line}"
        );
    }
    // What the binary runs: `ferrojit ops` lists every registered schema (the binary also
    // registers autograd's and torchvision's operators at startup, which a bare registry in
    // this test process lacks).
    let listing = ferrojit(&["ops"]);
    assert!(listing.status.success());
    let listing = String::from_utf8_lossy(&listing.stdout).to_string();
    let registered: HashSet<&str> = listing
        .lines()
        .filter_map(|schema| schema.split_once('(').map(|(name, _)| name))
        .collect();
    assert!(
        registered.len() > 1000,
        "{} schemas listed",
        registered.len()
    );
    let mut in_scope = 0;
    let mut expected_missing: Vec<&str> = Vec::new();
    for line in data_lines(&public) {
        let columns: Vec<&str> = line.split('\t').collect();
        assert_eq!(columns.len(), 3, "{line}");
        let (full, availability) = (columns[0], columns[1]);
        assert!(
            ["cpu", "composite", "jit", "none"].contains(&availability),
            "{line}"
        );
        let name = full.split('.').next().unwrap();
        if availability == "none" || left_out.contains(&full) || left_out.contains(&name) {
            continue;
        }
        in_scope += 1;
        if !registered.contains(full) {
            expected_missing.push(full);
        }
    }
    assert!(
        in_scope > 2000,
        "the list holds torch 2.15's ~2,700 overloads"
    );

    let first = text.lines().next().unwrap_or_default();
    let prefix = format!(
        "missing: {} of {in_scope} overloads",
        expected_missing.len()
    );
    assert!(first.starts_with(&prefix), "{first:?} vs {prefix:?}");
    let listed: Vec<&str> = text
        .lines()
        .skip(1)
        .map(|line| line.trim().split('\t').next().unwrap())
        .collect();
    assert_eq!(listed, expected_missing);

    // A registered overload is absent. Issue 20: every public overload in scope is registered,
    // so nothing is listed; the rest are in left_out.txt with their reasons.
    assert!(registered.contains("aten::add.Tensor"));
    assert!(!listed.contains(&"aten::add.Tensor"));
    assert!(listed.is_empty(), "{first}");
    assert!(!registered.contains("aten::_fused_sdp_choice"));
    assert!(!listed.contains(&"aten::_fused_sdp_choice"));
    // Left-out operators are not listed though the registry lacks them.
    assert!(!registered.contains("aten::pin_memory"));
    assert!(!listed.contains(&"aten::pin_memory"));
}

#[test]
fn missing_conflicts_with_core() {
    let output = ferrojit(&["ops", "--missing", "--core"]);
    assert!(!output.status.success());
}
