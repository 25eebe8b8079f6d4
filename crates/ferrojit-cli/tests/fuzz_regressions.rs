//! Replays the fuzzing corpus without a fuzzer: every committed finding
//! (`fuzz/regressions/<target>/`) and every seed (`fuzz/seeds/<target>/`) goes through the
//! same target body as `cargo fuzz run <target>` (`fuzz/harness.rs`), so a fixed crash stays
//! fixed. A target body fails only by panicking; each file runs on its own thread with a
//! time bound, so a hang is a failure too.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

#[allow(dead_code)]
#[path = "../../../fuzz/harness.rs"]
mod harness;

/// Per input; the slowest seeds (whole archives, in a debug build) take well under this.
const TIME_LIMIT: Duration = Duration::from_secs(60);

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The target body for a folder name under `fuzz/seeds` or `fuzz/regressions`.
fn target(name: &str) -> Option<fn(&[u8])> {
    Some(match name {
        "zip_reader" => harness::fuzz_zip_reader,
        "pickle_vm" => harness::fuzz_pickle_vm,
        "archive_load" => harness::fuzz_archive_load,
        "torchscript_parse" => harness::fuzz_torchscript_parse,
        "torchscript_compile" => harness::fuzz_torchscript_compile,
        "schema_parse" => harness::fuzz_schema_parse,
        "ir_parse" => harness::fuzz_ir_parse,
        "pt2_archive" => harness::fuzz_pt2_archive,
        "pt2_program_json" => harness::fuzz_pt2_program_json,
        "sym_expression" => harness::fuzz_sym_expression,
        _ => return None,
    })
}

/// Runs every file under `fuzz/<kind>/<target>/`; returns the number of inputs run.
fn replay(kind: &str) -> usize {
    let mut folders: Vec<PathBuf> = std::fs::read_dir(fuzz_dir().join(kind))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    folders.sort();
    let mut count = 0;
    let mut failures = Vec::new();
    for folder in folders {
        let name = folder.file_name().unwrap().to_string_lossy().to_string();
        let body =
            target(&name).unwrap_or_else(|| panic!("fuzz/{kind}/{name}: no such fuzz target"));
        let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.is_file())
            .collect();
        files.sort();
        for file in files {
            let data = std::fs::read(&file).unwrap();
            let label = format!(
                "fuzz/{kind}/{name}/{}",
                file.file_name().unwrap().to_string_lossy()
            );
            let (sender, receiver) = mpsc::channel();
            std::thread::Builder::new()
                .name(label.clone())
                .spawn(move || {
                    let outcome =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&data)));
                    let _ = sender.send(outcome.is_ok());
                })
                .unwrap();
            match receiver.recv_timeout(TIME_LIMIT) {
                Ok(true) => {}
                Ok(false) => failures.push(format!("{label}: panicked")),
                Err(_) => failures.push(format!("{label}: no result within {TIME_LIMIT:?}")),
            }
            count += 1;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    count
}

#[test]
fn every_committed_fuzz_finding_replays_cleanly() {
    let count = replay("regressions");
    assert!(count >= 5, "only {count} committed findings");
}

#[test]
fn every_fuzz_seed_replays_cleanly() {
    let count = replay("seeds");
    assert!(count >= 1652, "only {count} seeds");
}
