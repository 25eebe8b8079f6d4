//! Bad inputs get a non-zero exit and exactly one `error:` line, never a panic.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::fixture;

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bad_inputs");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Runs ferrojit and returns its single stderr line, asserting failure without a panic.
fn fails_with(args: &[&std::ffi::OsStr]) -> String {
    let result = Command::new(env!("CARGO_BIN_EXE_ferrojit"))
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr).to_string();
    assert!(!result.status.success(), "should fail: {stderr}");
    assert_ne!(result.status.code(), Some(101), "panicked: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "exactly one line: {stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    stderr
}

#[test]
fn missing_model_file() {
    let missing = scratch("does_not_exist.pt");
    let line = fails_with(&["run".as_ref(), missing.as_os_str()]);
    assert!(line.contains("does_not_exist.pt"), "{line}");
}

#[test]
fn model_that_is_not_a_zip() {
    let path = scratch("not_a_zip.pt");
    std::fs::write(&path, b"this is plain text, not a zip archive\n").unwrap();
    let line = fails_with(&["run".as_ref(), path.as_os_str()]);
    assert!(line.contains("zip"), "{line}");
}

#[test]
fn archive_without_data_pkl() {
    let path = scratch("no_data_pkl.pt");
    let mut writer =
        ferrojit_archive::zip_archive::ArchiveWriter::create(&path, "no_data_pkl").unwrap();
    writer.write_record("version", b"3\n").unwrap();
    writer.write_record("code/__torch__.py", b"").unwrap();
    writer.finish().unwrap();
    let line = fails_with(&["run".as_ref(), path.as_os_str()]);
    assert!(line.contains("data.pkl"), "{line}");
}

#[test]
fn wrong_number_of_arguments() {
    // scripted_module.forward takes (x, scale); pass only x.
    let inputs = scratch("one_argument.pt");
    let full = ferrojit_serialize::torch_save::load_file(&fixture("e2e/scripted_module.inputs.pt"))
        .unwrap();
    let first = match full {
        ferrojit_runtime::ivalue::IValue::Tuple(t) => t.items[0].clone(),
        other => panic!("inputs are a tuple, got {}", other.python_repr()),
    };
    let one = ferrojit_runtime::ivalue::IValue::tuple(vec![first]);
    ferrojit_serialize::torch_save::save_file(&one, &inputs).unwrap();
    let model = fixture("e2e/scripted_module.pt");
    let line = fails_with(&[
        "run".as_ref(),
        model.as_os_str(),
        "--inputs".as_ref(),
        inputs.as_os_str(),
    ]);
    assert!(
        line.contains("forward()") && line.contains("argument"),
        "{line}"
    );
}

#[test]
fn inputs_file_that_is_missing() {
    let model = fixture("e2e/scripted_module.pt");
    let missing = scratch("missing_inputs.pt");
    let line = fails_with(&[
        "run".as_ref(),
        model.as_os_str(),
        "--inputs".as_ref(),
        missing.as_os_str(),
    ]);
    assert!(line.contains("missing_inputs.pt"), "{line}");
}

#[test]
fn unknown_cli_option() {
    let line = fails_with(&["run".as_ref(), "model.pt".as_ref(), "--bogus".as_ref()]);
    assert!(line.contains("--bogus"), "{line}");
}

#[test]
fn unknown_method() {
    let model = fixture("e2e/scripted_module.pt");
    let line = fails_with(&[
        "run".as_ref(),
        model.as_os_str(),
        "--method".as_ref(),
        "nope".as_ref(),
    ]);
    assert!(line.contains("nope"), "{line}");
}

/// Files that are not models (tests/fixtures/not_models, written by PyTorch) say what they
/// are and how to save a model, for `run` and `inspect` alike.
#[test]
fn torch_save_files_say_what_they_are_and_how_to_save_a_model() {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/not_models");
    for (file, what) in [
        ("state_dict.pt", "a state dict (4 named tensors"),
        (
            "pickled_module.pt",
            "a pickled Python object of class torch.nn.modules.container.Sequential",
        ),
        ("tensor_tuple.pt", "a Tuple (values, not a program)"),
    ] {
        let path = folder.join(file);
        for command in ["run", "inspect"] {
            let mut args = vec![command.as_ref(), path.as_os_str()];
            if command == "inspect" {
                args.push("--summary".as_ref());
            }
            let line = fails_with(&args);
            assert!(line.contains("this is a torch.save file holding"), "{line}");
            assert!(line.contains(what), "{file}: {line}");
            assert!(line.contains("torch.jit.script(model).save"), "{line}");
            assert!(line.contains("torch.export.save"), "{line}");
        }
    }
}
