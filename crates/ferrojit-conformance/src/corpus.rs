//! The language corpus (tests/fixtures/lang, made by generate.py there): where it lives, how a
//! program's recorded calls are read, and how the corpus tests run programs, shared by the
//! `lang` and `save_round_trip` tests.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Arc;

use ferrojit_runtime::interpreter::RunOptions;
use ferrojit_runtime::ivalue::IValue;
use ferrojit_serialize::torch_save;

use crate::repo_root;

/// A step budget no corpus program comes near; a runaway program fails instead of hanging.
pub const MAX_STEPS: u64 = 50_000_000;

/// The corpus folder.
pub fn lang_dir() -> PathBuf {
    repo_root().join("tests/fixtures/lang")
}

/// The argument tuple of call `index` of program `name`, read fresh each time: programs may
/// mutate their arguments.
pub fn call_arguments(name: &str, index: usize) -> Result<Vec<IValue>, String> {
    let path = lang_dir().join(format!("cases/{name}.inputs.pt"));
    let calls = torch_save::load_file(&path).map_err(|e| format!("inputs unreadable: {e}"))?;
    let call = match &calls {
        IValue::List(list) => list.get(index),
        _ => None,
    }
    .ok_or_else(|| format!("inputs have no call {index}"))?;
    match call {
        IValue::Tuple(tuple) => Ok(tuple.items.clone()),
        other => Err(format!("call {index} is a {}", other.tag_name())),
    }
}

/// Run options for corpus programs: the step budget above, and `print` output discarded.
pub fn run_options() -> RunOptions {
    RunOptions {
        max_steps: Some(MAX_STEPS),
        print: Some(Arc::new(|_: &str| {})),
        ..RunOptions::default()
    }
}

/// Runs `body`, turning a panic into an error so one bad program cannot stop the corpus.
pub fn guarded(body: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result,
        Err(panic) => Err(format!(
            "PANIC: {}",
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        )),
    }
}
