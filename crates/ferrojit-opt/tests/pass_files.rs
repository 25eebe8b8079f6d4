//! Runs every file test in tests/fixtures/passes/ (see `ferrojit_opt::filetest` for the
//! format): pass tests against PyTorch's own pass output, interpreter tests against
//! expected values, and differential runs of graphs before and after passes.

use std::path::PathBuf;

use ferrojit_ir::parse_graph;
use ferrojit_opt::filetest::{parse_test_file, run_test_file, TestKind};
use ferrojit_opt::run_pass;

fn cases_folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/passes")
}

/// The test files (`NAME.ir`, not `NAME.expected.ir` or `NAME.blessed.ir`).
fn test_files() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(cases_folder())
        .expect("passes folder")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.ends_with(".ir") && name.matches('.').count() == 1
        })
        .collect();
    cases.sort();
    cases
}

#[test]
fn every_file_test_passes() {
    let bless = std::env::var_os("FERROJIT_BLESS").is_some();
    let cases = test_files();
    let mut kinds = [0usize; 3];
    let problems: Vec<String> = cases
        .iter()
        .filter_map(|path| {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("?");
            let text = std::fs::read_to_string(path).expect("readable test file");
            match parse_test_file(&text).map(|test| test.kind) {
                Ok(TestKind::Pass(_)) => kinds[0] += 1,
                Ok(TestKind::Interpret) => kinds[1] += 1,
                Ok(TestKind::Differential(_)) => kinds[2] += 1,
                Err(_) => {}
            }
            run_test_file(path, bless)
                .err()
                .map(|e| format!("{name}: {e}"))
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    // Minimum counts per kind, so that a lost or emptied folder cannot pass.
    assert!(kinds[0] >= 4, "only {} pass tests", kinds[0]);
    assert!(kinds[1] >= 3, "only {} interpret tests", kinds[1]);
    assert!(kinds[2] >= 3, "only {} differential tests", kinds[2]);
}

#[test]
fn unknown_pass_names_are_errors_listing_the_passes() {
    let mut graph = parse_graph("graph(%x : int):\n  return (%x)\n").unwrap();
    let error = run_pass("no_such_pass", &mut graph).unwrap_err();
    assert!(error.contains("unknown pass 'no_such_pass'"), "{error}");
    assert!(error.contains("cleanup"), "{error}");
    let error =
        parse_test_file("# RUN: pass no_such_pass\ngraph(%x : int):\n  return (%x)\n").unwrap_err();
    assert!(error.contains("unknown pass 'no_such_pass'"), "{error}");
}

#[test]
fn malformed_test_files_are_refused() {
    let graph = "graph(%x : int):\n  return (%x)\n";
    for (header, expected) in [
        ("", "no `# RUN:` line"),
        ("# RUN: frobnicate\n", "unknown test kind"),
        ("# RUN: interpret\n", "one EXPECT line per ARGS line"),
        (
            "# RUN: interpret\n# ARGS: 1\n",
            "one EXPECT line per ARGS line",
        ),
        ("# RUN: differential cleanup\n", "needs ARGS lines"),
        ("# RUN: pass cleanup\n# ARGS: 1\n", "takes no ARGS"),
        ("# RUN: pass cleanup\n# RUN: interpret\n", "more than one"),
    ] {
        let error = parse_test_file(&format!("{header}{graph}")).unwrap_err();
        assert!(error.contains(expected), "{header:?}: {error}");
    }
}

#[test]
fn an_interpret_test_fails_on_a_wrong_expectation() {
    let folder = std::env::temp_dir().join(format!("ferrojit_filetest_{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join("wrong.ir");
    std::fs::write(
        &path,
        "# RUN: interpret\n# ARGS: 2\n# EXPECT: 5\ngraph(%x : int):\n  %y : int = aten::mul(%x, %x)\n  return (%y)\n",
    )
    .unwrap();
    let error = run_test_file(&path, false).unwrap_err();
    assert!(error.contains("4 against 5"), "{error}");
    std::fs::write(
        &path,
        "# RUN: interpret\n# ARGS: 2\n# EXPECT: 4\ngraph(%x : int):\n  %y : int = aten::mul(%x, %x)\n  return (%y)\n",
    )
    .unwrap();
    run_test_file(&path, false).unwrap();
    std::fs::remove_dir_all(&folder).unwrap();
}
