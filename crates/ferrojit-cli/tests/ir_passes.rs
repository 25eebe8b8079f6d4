//! `ferrojit ir FILE --pass NAME` as a user runs it: for every pass test file whose expected
//! output PyTorch printed (tests/fixtures/passes/NAME.expected.ir, from generate.py), the
//! command prints exactly that text; an unknown pass name is one `error:` line listing the
//! passes.

use std::path::PathBuf;
use std::process::{Command, Output};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn ferrojit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferrojit"))
        .args(args)
        .output()
        .expect("the ferrojit binary runs")
}

/// The pass names of a file's `# RUN: pass A B` line.
fn pass_names(text: &str) -> Option<Vec<String>> {
    let line = text.lines().find(|l| l.starts_with("# RUN: pass "))?;
    Some(
        line["# RUN: pass ".len()..]
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|name| !name.is_empty())
            .map(str::to_string)
            .collect(),
    )
}

#[test]
fn ir_command_runs_passes_like_pytorch() {
    let folder = repo_root().join("tests/fixtures/passes");
    let mut checked = 0;
    let mut failures = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .expect("passes folder")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| {
            path.extension().is_some_and(|e| e == "ir")
                && !path.to_string_lossy().ends_with(".expected.ir")
        })
        .collect();
    files.sort();
    for file in files {
        let expected_path = file.with_extension("expected.ir");
        let Ok(expected) = std::fs::read_to_string(&expected_path) else {
            continue;
        };
        let text = std::fs::read_to_string(&file).expect("readable test file");
        let names = pass_names(&text).expect("a pass test names its passes");
        let mut args = vec!["ir".to_string(), file.to_string_lossy().into_owned()];
        for name in &names {
            args.push("--pass".to_string());
            args.push(name.clone());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = ferrojit(&args);
        let printed = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() || printed != expected {
            failures.push(format!(
                "{}: {}\n{printed}",
                file.display(),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        checked += 1;
    }
    assert!(
        checked >= 15,
        "only {checked} pass files with PyTorch's output"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn an_unknown_pass_is_one_error_line_listing_the_passes() {
    let file = repo_root().join("tests/fixtures/passes/dce_chain_of_dead_nodes.ir");
    let output = ferrojit(&["ir", file.to_str().expect("UTF-8 path"), "--pass", "fuse"]);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: unknown pass 'fuse'"), "{stderr}");
    assert!(
        stderr.contains("dce") && stderr.contains("constant_pooling"),
        "{stderr}"
    );
}

fn stderr_with_log(setting: Option<&str>) -> String {
    let file = repo_root().join("tests/fixtures/passes/dce_chain_of_dead_nodes.ir");
    let mut command = Command::new(env!("CARGO_BIN_EXE_ferrojit"));
    command.args(["ir", file.to_str().expect("UTF-8 path"), "--pass", "dce"]);
    match setting {
        Some(value) => command.env("FERROJIT_JIT_LOG", value),
        None => command.env_remove("FERROJIT_JIT_LOG"),
    };
    let output = command.output().expect("the ferrojit binary runs");
    assert!(output.status.success());
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn jit_log_dumps_lists_and_reports_updates_as_asked() {
    assert_eq!(stderr_with_log(None), "");
    assert_eq!(stderr_with_log(Some("")), "[jit log] running pass dce\n");
    let dump = stderr_with_log(Some("dce"));
    assert!(
        dump.starts_with("[DUMP dce] Before dce:\ngraph(%x : Tensor):"),
        "{dump}"
    );
    assert!(
        dump.contains("[DUMP dce] After dce:\ngraph(%x : Tensor):"),
        "{dump}"
    );
    assert!(!dump.contains("[UPDATE"), "{dump}");
    let updates = stderr_with_log(Some(">dce"));
    assert!(
        updates.contains("[UPDATE dce] Node aten::relu will be removed"),
        "{updates}"
    );
    // A pass not named logs nothing.
    assert_eq!(stderr_with_log(Some("constant_pooling")), "");
}
