//! Save → load round trips of every PyTorch-written TorchScript fixture: ferrojit re-saves the
//! archive with its own printer and pickler, loads what it wrote, and must get the same results
//! as before (and as PyTorch, where the fixture records PyTorch's output); a second save of the
//! reloaded module must be byte-identical to the first, record by record (no jitter).
//!
//! Archives written by old PyTorch releases (tests/fixtures/old_versions, torch 1.1 to 1.8,
//! legacy `model.json` included) and at old operator versions (tests/fixtures/upgraders) make
//! the trip too.
//!
//! The language corpus (tests/fixtures/lang/cases/NAME.pt, one program each) makes the same
//! trip: every call recorded in NAME.inputs.pt (a list of argument tuples) must give the same
//! value, or raise PyTorch's message, after the save as before it.
//!
//! Archives that cannot make the trip yet are listed, with the reason, in `KNOWN_GAPS` (fixture
//! archives) and `KNOWN_LANG_GAPS` (language corpus); a listed archive that starts passing fails
//! the test, so the lists only shrink.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use ferrojit_archive::zip_archive::ArchiveReader;
use ferrojit_conformance::corpus::{call_arguments, guarded, lang_dir, run_options};
use ferrojit_conformance::{compare, repo_root};
use ferrojit_runtime::ivalue::IValue;
use ferrojit_serialize::export::save_module_to_bytes;
use ferrojit_serialize::import::{load_module, load_module_from_bytes, LoadedModule};
use ferrojit_serialize::torch_save;
use serde_json::Value as Json;

/// Fixture archives (file stems) that do not survive the round trip yet, with why.
const KNOWN_GAPS: &[(&str, &str)] = &[];

/// Language corpus programs (file stems) that do not survive the round trip yet, with why.
const KNOWN_LANG_GAPS: &[(&str, &str)] = &[];

/// The serialization id is the one record allowed to differ between two saves.
const SERIALIZATION_ID: &str = ".data/serialization_id";

fn fixture_archives() -> Vec<PathBuf> {
    let mut archives = Vec::new();
    for folder in ["tests/fixtures/e2e", "tests/fixtures/serialization"] {
        let directory = repo_root().join(folder);
        let entries = std::fs::read_dir(&directory)
            .unwrap_or_else(|e| panic!("{}: {e}", directory.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            // NAME.pt only: NAME.inputs.pt / NAME.expected.pt are torch.save files.
            if name.ends_with(".pt") && name.matches('.').count() == 1 {
                archives.push(path);
            }
        }
    }
    archives.sort();
    assert!(
        archives.len() >= 21,
        "only {} fixture archives",
        archives.len()
    );
    archives
}

fn sibling(archive: &Path, suffix: &str) -> PathBuf {
    let stem = archive.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    archive.with_file_name(format!("{stem}{suffix}"))
}

fn arguments(path: &Path) -> Result<Vec<IValue>, String> {
    match torch_save::load_file(path).map_err(|e| format!("inputs: {e}"))? {
        IValue::Tuple(tuple) => Ok(tuple.items.to_vec()),
        other => Ok(vec![other]),
    }
}

/// Runs `forward` on freshly loaded inputs (some fixtures mutate their arguments in place).
fn run(loaded: &LoadedModule, inputs: &Path) -> Result<IValue, String> {
    loaded
        .module
        .forward(arguments(inputs)?)
        .map_err(|e| format!("forward: {e}"))
}

fn records(bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>, String> {
    let archive = ArchiveReader::from_bytes(bytes.to_vec()).map_err(|e| e.to_string())?;
    let mut records = Vec::new();
    for name in archive.record_names() {
        if name == SERIALIZATION_ID {
            continue;
        }
        let data = archive.read_record(name).map_err(|e| e.to_string())?;
        records.push((name.clone(), data));
    }
    Ok(records)
}

/// Saves the reloaded module again: every record must be byte-identical to the first save.
fn check_no_jitter(first_save: &[u8], reloaded: &LoadedModule) -> Result<(), String> {
    check_no_jitter_except(first_save, reloaded, |_| false)
}

/// As [`check_no_jitter`], except that the records `may_differ` names may change.
fn check_no_jitter_except(
    first_save: &[u8],
    reloaded: &LoadedModule,
    may_differ: fn(&str) -> bool,
) -> Result<(), String> {
    let second_save = save_module_to_bytes(&reloaded.module, &reloaded.unit, "archive")
        .map_err(|e| format!("second save: {e}"))?;
    let first = records(first_save)?;
    let second = records(&second_save)?;
    let first_names: Vec<&str> = first.iter().map(|(name, _)| name.as_str()).collect();
    let second_names: Vec<&str> = second.iter().map(|(name, _)| name.as_str()).collect();
    if first_names != second_names {
        return Err(format!(
            "second save has other records: {first_names:?} vs {second_names:?}"
        ));
    }
    for ((name, a), (_, b)) in first.iter().zip(&second) {
        if a != b && !may_differ(name) {
            return Err(format!("record {name} changed between two saves (jitter)"));
        }
    }
    Ok(())
}

fn round_trip(archive: &Path) -> Result<(), String> {
    // Every input file of the fixture: the main one and, for `raises`, the non-raising one.
    let inputs = [
        (".inputs.pt", ".expected.pt"),
        (".ok_inputs.pt", ".ok_expected.pt"),
    ]
    .map(|(inputs, expected)| (sibling(archive, inputs), sibling(archive, expected)));
    round_trip_with_inputs(archive, &inputs, true)
}

/// The round trip of `archive`, run on each `(inputs, PyTorch's expected output)` pair whose
/// inputs file exists (the expected file is compared when it exists). With `same_results`
/// false the re-saved module may compute other values and hold other state (a module whose
/// `__setstate__` changes its state runs it once more when re-saved, in PyTorch too); both
/// must still succeed or both fail, and the code must not jitter.
fn round_trip_with_inputs(
    archive: &Path,
    inputs: &[(PathBuf, PathBuf)],
    same_results: bool,
) -> Result<(), String> {
    let original = load_module(archive).map_err(|e| format!("load: {e}"))?;
    let first_save = save_module_to_bytes(&original.module, &original.unit, "archive")
        .map_err(|e| format!("save: {e}"))?;
    let reloaded =
        load_module_from_bytes(first_save.clone()).map_err(|e| format!("reload: {e}"))?;

    let mut runs = 0;
    for (inputs, expected) in inputs {
        if !inputs.exists() {
            continue;
        }
        runs += 1;
        let before = run(&original, inputs);
        let after = run(&reloaded, inputs);
        match (before, after) {
            (Ok(_), Ok(_)) if !same_results => {}
            (Ok(before), Ok(after)) => {
                compare(&after, &before, "re-saved vs original")?;
                if expected.exists() {
                    let pytorch =
                        torch_save::load_file(expected).map_err(|e| format!("expected: {e}"))?;
                    compare(&after, &pytorch, "re-saved vs PyTorch")?;
                }
            }
            (Err(before), Err(after)) => {
                if before != after {
                    return Err(format!(
                        "errors differ after the round trip: '{before}' vs '{after}'"
                    ));
                }
            }
            (Ok(_), Err(after)) => return Err(format!("only the re-saved module fails: {after}")),
            (Err(before), Ok(_)) => {
                return Err(format!("only the original fails: {before}"));
            }
        }
    }
    if runs == 0 {
        return Err("no inputs file next to the archive".to_string());
    }
    if same_results {
        check_no_jitter(&first_save, &reloaded)
    } else {
        // Each load runs `__setstate__`, which changes these modules' state, so the pickled
        // state (and its tensors) differ from save to save, as in PyTorch; the code and
        // constants must not.
        check_no_jitter_except(&first_save, &reloaded, |name| {
            name == "data.pkl" || name.starts_with("data/")
        })
    }
}

#[test]
fn pytorch_archives_survive_save_and_reload_without_jitter() {
    let known: BTreeSet<&str> = KNOWN_GAPS.iter().map(|(name, _)| *name).collect();
    let mut problems = Vec::new();
    let mut passed = 0;
    for archive in fixture_archives() {
        let name = archive
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("")
            .to_string();
        match (round_trip(&archive), known.contains(name.as_str())) {
            (Ok(()), false) => passed += 1,
            (Ok(()), true) => {
                problems.push(format!("{name} passes now: remove it from KNOWN_GAPS"))
            }
            (Err(error), false) => problems.push(format!("{name}: {error}")),
            (Err(error), true) => println!("known gap {name}: {error}"),
        }
    }
    println!("{passed} archives round-trip; {} known gaps", known.len());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Archives written by old PyTorch releases (tests/fixtures/old_versions/torch*/, including
/// the legacy `model.json` format) and by today's PyTorch at old operator versions
/// (tests/fixtures/upgraders/NAME.old.pt, with its NAME.pt twin): ferrojit re-saves them in
/// today's format, and a second save must be byte-identical.
#[test]
fn old_version_archives_survive_save_and_reload_without_jitter() {
    // Archives ferrojit must refuse to load or to save, as PyTorch does (their own tests
    // check the errors): (folder, stem, why).
    const REFUSED: &[(&str, &str, &str)] = &[
        (
            "old_versions/torch1.2.0",
            "getstate_tensors",
            "torch 1.2 wrote tensor id -1 and cannot load it either",
        ),
        (
            "upgraders",
            "gelu_tanh.old",
            "gelu(approximate=) before version 10: PyTorch refuses the call too",
        ),
        (
            "upgraders",
            "linspace_no_steps",
            "linspace without steps at today's version: PyTorch refuses it too",
        ),
        (
            "upgraders",
            "out_no_steps",
            "linspace.out without steps at today's version: PyTorch refuses it too",
        ),
    ];
    let mut archives: Vec<(String, PathBuf, PathBuf)> = Vec::new();
    let root = repo_root().join("tests/fixtures");
    let mut folders: Vec<String> = std::fs::read_dir(root.join("old_versions"))
        .expect("tests/fixtures/old_versions")
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.starts_with("torch"))
        .map(|name| format!("old_versions/{name}"))
        .collect();
    folders.sort();
    assert!(folders.len() >= 5, "old_versions folders: {folders:?}");
    // Cases whose re-saved copy computes other values in PyTorch (`resaved_expected` in
    // cases.json; tests/upgraders.rs checks those values).
    let mut resaved_differently = BTreeSet::new();
    for folder in &folders {
        let manifest: Json = serde_json::from_slice(
            &std::fs::read(root.join(folder).join("cases.json")).expect("cases.json"),
        )
        .expect("cases.json parses");
        for case in manifest["cases"].as_array().expect("cases") {
            if case["old"].get("resaved_expected").is_some()
                || case["modern"].get("resaved_expected").is_some()
            {
                let name = case["name"].as_str().unwrap_or("");
                resaved_differently.insert(format!("{folder}/{name}"));
            }
        }
    }
    assert!(resaved_differently.len() >= 6);
    folders.push("upgraders".to_string());
    for folder in &folders {
        let mut names: Vec<String> = std::fs::read_dir(root.join(folder))
            .expect("fixture folder")
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter(|name| {
                name.ends_with(".pt")
                    && !name.ends_with(".inputs.pt")
                    && !name.ends_with(".expected.pt")
            })
            .collect();
        names.sort();
        for name in names {
            let stem = name.trim_end_matches(".pt").to_string();
            let case = stem.trim_end_matches(".old");
            let inputs = root.join(folder).join(format!("{case}.inputs.pt"));
            archives.push((
                format!("{folder}/{stem}"),
                root.join(folder).join(&name),
                inputs,
            ));
        }
    }
    assert!(
        archives.len() >= 69,
        "only {} old-version and upgrader archives",
        archives.len()
    );
    let mut problems = Vec::new();
    let (mut passed, mut refused) = (0, 0);
    for (label, archive, inputs) in &archives {
        let expected_refusal = REFUSED
            .iter()
            .any(|(folder, stem, _)| label == &format!("{folder}/{stem}"));
        let same_results = !resaved_differently.contains(label);
        let result =
            round_trip_with_inputs(archive, &[(inputs.clone(), PathBuf::new())], same_results);
        match (result, expected_refusal) {
            (Ok(()), false) => passed += 1,
            (Err(error), true) if error.starts_with("load:") || error.starts_with("save:") => {
                refused += 1
            }
            (Ok(()), true) => {
                problems.push(format!("{label} round-trips now: remove it from REFUSED"))
            }
            (Err(error), _) => problems.push(format!("{label}: {error}")),
        }
    }
    println!("{passed} old-version archives round-trip; {refused} refused as PyTorch refuses them");
    assert!(passed >= 65, "only {passed} archives round-tripped");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn lang_call(
    loaded: &LoadedModule,
    method: &str,
    name: &str,
    index: usize,
) -> Result<Result<IValue, String>, String> {
    let args = call_arguments(name, index)?;
    Ok(loaded
        .module
        .run_method_with_options(method, args, &run_options())
        .map_err(|e| e.to_string()))
}

/// One corpus program: save, reload, run every recorded call on both modules, save again.
fn lang_round_trip(program: &Json) -> Result<(), String> {
    let name = program["name"].as_str().unwrap_or("");
    let method = program["method"].as_str().unwrap_or("forward");
    let archive = lang_dir().join(format!("cases/{name}.pt"));
    let original = load_module(&archive).map_err(|e| format!("load: {e}"))?;
    let first_save = save_module_to_bytes(&original.module, &original.unit, "archive")
        .map_err(|e| format!("save: {e}"))?;
    let reloaded =
        load_module_from_bytes(first_save.clone()).map_err(|e| format!("reload: {e}"))?;
    // Saved before the calls run: some programs mutate their module's attributes.
    check_no_jitter(&first_save, &reloaded)?;
    let calls = program["calls"].as_array().map_or(&[][..], Vec::as_slice);
    for (index, expected) in calls.iter().enumerate() {
        let before = lang_call(&original, method, name, index)?;
        let after = lang_call(&reloaded, method, name, index)?;
        match (before, after) {
            (Ok(before), Ok(after)) => compare(&after, &before, "re-saved vs original")
                .map_err(|e| format!("call {index}: {e}"))?,
            (Err(before), Err(after)) => {
                // Messages may differ in their traceback (the code was re-printed), never in
                // the message PyTorch raised.
                let wanted = expected["error"]["message"].as_str().unwrap_or("");
                if before.contains(wanted) && !after.contains(wanted) {
                    return Err(format!(
                        "call {index}: the re-saved module raises '{}' instead of '{wanted}'",
                        after.lines().next().unwrap_or("")
                    ));
                }
            }
            (Ok(_), Err(after)) => {
                return Err(format!(
                    "call {index}: only the re-saved module fails: {}",
                    after.lines().next().unwrap_or("")
                ))
            }
            (Err(before), Ok(_)) => {
                return Err(format!(
                    "call {index}: only the original fails: {}",
                    before.lines().next().unwrap_or("")
                ))
            }
        }
    }
    Ok(())
}

#[test]
fn language_corpus_archives_survive_save_and_reload_without_jitter() {
    let corpus_text = std::fs::read_to_string(lang_dir().join("corpus.json"))
        .expect("tests/fixtures/lang/corpus.json exists");
    let corpus: Json = serde_json::from_str(&corpus_text).expect("corpus.json is JSON");
    let programs = corpus["programs"].as_array().expect("a program list");
    let known: BTreeSet<&str> = KNOWN_LANG_GAPS.iter().map(|(name, _)| *name).collect();
    let mut problems = Vec::new();
    let mut passed = 0;
    let mut ran = 0;
    let previous_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for program in programs {
        let name = program["name"].as_str().expect("a name");
        if !lang_dir().join(format!("cases/{name}.pt")).exists() {
            continue;
        }
        ran += 1;
        match (guarded(|| lang_round_trip(program)), known.contains(name)) {
            (Ok(()), false) => passed += 1,
            (Ok(()), true) => {
                problems.push(format!("{name} passes now: remove it from KNOWN_LANG_GAPS"))
            }
            (Err(error), false) => problems.push(format!(
                "{name}: {}",
                error.chars().take(400).collect::<String>()
            )),
            (Err(error), true) => println!("known gap {name}: {error}"),
        }
    }
    std::panic::set_hook(previous_hook);
    assert!(ran >= 324, "only {ran} language corpus archives");
    println!(
        "language corpus: {passed} of {ran} archives round-trip; {} known gaps",
        known.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
