//! Converts every TorchScript archive of the repo's zoo (tests/fixtures/zoo) and language
//! corpus (tests/fixtures/lang) to Export IR and runs the result in ferrojit's `.pt2` runner:
//! every program that converts must give PyTorch's recorded result, a program that does not
//! convert must be refused with a `ConvertError` (never a panic), and the number converted
//! must not fall below the floors below. Run with `--nocapture` for the list of refusals.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ferrojit_conformance::corpus::{call_arguments, guarded, lang_dir};
use ferrojit_conformance::json::compare_json;
use ferrojit_conformance::{compare_with, repo_root, Comparison};
use ferrojit_convert::{convert_file, read_example_inputs, PROGRAM_NAME};
use ferrojit_export::{save_program_to_bytes, ExportedModule, Pt2Archive};
use ferrojit_runtime::registry::{pop_arguments, Stack};
use ferrojit_runtime::{register_operator, IValue, RuntimeError};
use ferrojit_serialize::torch_save;
use ferrojit_tensor::Tensor;

/// Zoo models that must convert and run correctly (a floor: raise it as the converter grows).
const ZOO_FLOOR: usize = 8;
/// Corpus programs that must convert and run correctly.
const LANG_FLOOR: usize = 229;

/// `mylib::op(Tensor x, int k) -> Tensor` computing `x * k + 1`, as the zoo's generator
/// defines it with torch.library.
fn register_test_operators() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let _ = register_operator(
            "mylib::op(Tensor x, int k) -> Tensor",
            |stack: &mut Stack| {
                let [x, k] = pop_arguments::<2>(stack)?;
                let tensor = x.to_tensor()?;
                let k = k.to_int()? as f32;
                let values: Vec<f32> = tensor
                    .to_vec::<f32>()
                    .map_err(|e| RuntimeError::Other(e.to_string()))?
                    .into_iter()
                    .map(|v| v * k + 1.0)
                    .collect();
                let result = Tensor::from_vec(values, tensor.sizes())
                    .map_err(|e| RuntimeError::Other(e.to_string()))?;
                stack.push(IValue::from(result));
                Ok(())
            },
        );
    });
}

/// The outcome of one archive.
enum Outcome {
    /// Converted, and the program's result equals PyTorch's.
    Correct,
    /// Refused with a ConvertError (the message).
    Refused(String),
    /// Anything else: a panic, a program that does not run, a wrong result.
    Broken(String),
}

fn zoo_dir() -> PathBuf {
    repo_root().join("tests/fixtures/zoo")
}

fn convert_and_run(
    archive: &Path,
    method: &str,
    read_args: &dyn Fn() -> Result<Vec<IValue>, String>,
    check: &dyn Fn(&IValue) -> Result<(), String>,
) -> Outcome {
    let mut refused = None;
    let result = guarded(|| {
        let args = read_args()?;
        let program = match convert_file(archive, method, args) {
            Ok(program) => program,
            Err(error) => {
                refused = Some(error.to_string());
                return Ok(());
            }
        };
        // Through the writer and the reader: what `ferrojit export` saves is what runs.
        let bytes = save_program_to_bytes(&program, None).map_err(|e| format!("save: {e}"))?;
        // FERROJIT_CONVERT_SAVE_TO=DIR keeps each file (DIR/NAME.pt2), to load in PyTorch.
        if let Some(folder) = std::env::var_os("FERROJIT_CONVERT_SAVE_TO") {
            let stem = archive.file_stem().unwrap_or_default();
            let path = Path::new(&folder).join(stem).with_extension("pt2");
            std::fs::write(&path, &bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        let reloaded = Pt2Archive::from_bytes(bytes)
            .and_then(|archive| archive.load(PROGRAM_NAME))
            .map_err(|e| format!("reload: {e}"))?;
        let mut module = ExportedModule::new(reloaded).map_err(|e| format!("prepare: {e}"))?;
        let actual = module.run(read_args()?).map_err(|e| format!("run: {e}"))?;
        check(&actual)
    });
    match (result, refused) {
        (Err(message), _) => Outcome::Broken(message),
        (Ok(()), Some(message)) => Outcome::Refused(message),
        (Ok(()), None) => Outcome::Correct,
    }
}

struct Tally {
    correct: Vec<String>,
    refused: Vec<(String, String)>,
    broken: Vec<(String, String)>,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            correct: Vec::new(),
            refused: Vec::new(),
            broken: Vec::new(),
        }
    }

    fn add(&mut self, name: String, outcome: Outcome) {
        match outcome {
            Outcome::Correct => self.correct.push(name),
            Outcome::Refused(message) => self.refused.push((name, message)),
            Outcome::Broken(message) => self.broken.push((name, message)),
        }
    }

    fn report(&self, what: &str, floor: usize) {
        for (name, message) in &self.refused {
            println!("{what}: refused {name}: {message}");
        }
        println!(
            "{what}: {} converted and correct, {} refused, {} broken",
            self.correct.len(),
            self.refused.len(),
            self.broken.len()
        );
        let broken: Vec<String> = self
            .broken
            .iter()
            .map(|(name, message)| format!("{name}: {message}"))
            .collect();
        assert!(
            broken.is_empty(),
            "{what}: broken conversions:\n{}",
            broken.join("\n")
        );
        assert!(
            self.correct.len() >= floor,
            "{what}: {} converted correctly, below the floor of {floor}",
            self.correct.len()
        );
    }
}

#[test]
fn zoo_models_convert_and_give_pytorchs_results() {
    register_test_operators();
    let mut names: Vec<String> = std::fs::read_dir(zoo_dir())
        .expect("the zoo folder exists")
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            let stem = name.strip_suffix(".pt")?;
            (!stem.contains('.')).then(|| stem.to_string())
        })
        .filter(|stem| zoo_dir().join(format!("{stem}.expected.pt")).exists())
        .collect();
    names.sort();
    assert!(names.len() >= 10, "the zoo has {} models", names.len());
    let mut tally = Tally::new();
    for name in names {
        let file = |suffix: &str| zoo_dir().join(format!("{name}{suffix}"));
        let inputs = file(".inputs.pt");
        let read_args = || read_example_inputs(&inputs).map_err(|e| e.to_string());
        let expected = torch_save::load_file(&file(".expected.pt")).expect("expected loads");
        let check = |actual: &IValue| {
            compare_with(actual, &expected, &name, Comparison::models(1e-4, 1e-5))
        };
        let outcome = convert_and_run(&file(".pt"), "forward", &read_args, &check);
        tally.add(name.clone(), outcome);
    }
    tally.report("zoo", ZOO_FLOOR);
}

#[test]
fn language_corpus_programs_convert_and_give_pytorchs_results() {
    let corpus: serde_json::Value = serde_json::from_slice(
        &std::fs::read(lang_dir().join("corpus.json")).expect("corpus.json reads"),
    )
    .expect("corpus.json parses");
    let programs = corpus["programs"].as_array().expect("a program list");
    let mut tally = Tally::new();
    let mut archives = 0;
    for program in programs {
        let name = program["name"].as_str().unwrap_or("").to_string();
        let archive = lang_dir().join(format!("cases/{name}.pt"));
        let Some(first_call) = program["calls"].as_array().and_then(|c| c.first()) else {
            continue;
        };
        if !archive.exists() {
            continue;
        }
        archives += 1;
        let method = program["method"].as_str().unwrap_or("forward");
        let read_args = || call_arguments(&name, 0);
        let outcome = match first_call.get("value") {
            Some(expected) => {
                let check = |actual: &IValue| compare_json(actual, expected, "result");
                convert_and_run(&archive, method, &read_args, &check)
            }
            // PyTorch raised on this call: the converter must refuse, not convert.
            None => match guarded(|| {
                let args = read_args()?;
                match convert_file(&archive, method, args) {
                    Ok(_) => Err("converted a call on which PyTorch raised".to_string()),
                    Err(error) => Err(format!("refused: {error}")),
                }
            }) {
                Err(message) if message.starts_with("refused: ") => {
                    Outcome::Refused(message["refused: ".len()..].to_string())
                }
                Err(message) => Outcome::Broken(message),
                Ok(()) => Outcome::Broken("no outcome".into()),
            },
        };
        tally.add(name, outcome);
    }
    assert!(archives >= 100, "the corpus has {archives} archives");
    tally.report("lang", LANG_FLOOR);
}
