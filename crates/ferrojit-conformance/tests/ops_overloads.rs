//! The overloads issue 20 registered beside existing operators (ferrojit-runtime's
//! `ops/{random,factory,linalg,copy}_overloads.rs` and the factory out= forms of
//! `ops/derived_variants.rs`), against the cases PyTorch computed
//! (tests/fixtures/ops_overloads, made by generate.py there): random distributions drawn
//! value for value from a seeded generator, factory out= forms in `out`'s dtype, the
//! linear-algebra internals, copy and list-out overloads, and PyTorch's refusals.
//!
//! Beyond the common case format, a case may carry `seed` (the default generator is seeded
//! before the call), `generator_seed` (the call's `generator` is a new generator with that
//! seed), `shape_only` (uninitialised memory: shape, strides and dtype only) and
//! `expected_out` (the tensors of the `out` list after the call). All cases run in one test,
//! in order, because the seeded cases share the default generator.

use std::path::Path;

use ferrojit_conformance::{
    compare, kernel_refusal, load_case_list, load_cases, repo_root, require_at_least, run_case,
    OpCase,
};
use ferrojit_runtime::ivalue::IValue;
use ferrojit_tensor::ops::random;

/// The extra fields of one case dict.
struct Extras {
    seed: Option<i64>,
    generator_seed: Option<i64>,
    shape_only: bool,
    expected_out: Option<IValue>,
}

fn extras(item: &IValue) -> Result<Extras, String> {
    let dict = item.to_dict().map_err(|e| e.to_string())?;
    let field = |name: &str| dict.get(&IValue::string(name));
    let int = |name: &str| -> Result<Option<i64>, String> {
        field(name)
            .map(|value| value.to_int().map_err(|e| e.to_string()))
            .transpose()
    };
    Ok(Extras {
        seed: int("seed")?,
        generator_seed: int("generator_seed")?,
        shape_only: matches!(field("shape_only"), Some(IValue::Bool(true))),
        expected_out: field("expected_out"),
    })
}

/// Shape, strides and dtype of a tensor result, for factories of uninitialised memory.
fn compare_layout(actual: &IValue, expected: &IValue, label: &str) -> Result<(), String> {
    let (actual, expected) = match (actual.to_tensor(), expected.to_tensor()) {
        (Ok(actual), Ok(expected)) => (actual, expected),
        _ => return Err(format!("{label}: a shape-only case needs tensor results")),
    };
    let layout =
        |t: &ferrojit_tensor::Tensor| (t.sizes().to_vec(), t.strides().to_vec(), t.dtype());
    let (ours, theirs) = (layout(&actual), layout(&expected));
    if ours == theirs {
        Ok(())
    } else {
        Err(format!(
            "{label}: (sizes, strides, dtype) {ours:?}, PyTorch's {theirs:?}"
        ))
    }
}

/// Runs one case; `Ok(true)` when PyTorch refused it and ferrojit refused it with PyTorch's
/// message.
fn run_one(case: &OpCase, extras: &Extras) -> Result<bool, String> {
    let label = format!("{} ({})", case.name, case.op);
    if let Some(seed) = extras.seed {
        random::manual_seed(seed as u64);
    }
    let mut case = case.clone();
    if let Some(seed) = extras.generator_seed {
        let generator = IValue::Generator(random::new_generator(seed as u64));
        case.kwargs.push(("generator".to_string(), generator));
    }
    let outcome = run_case(&case);
    match (&case.expected, outcome) {
        (Ok(expected), Ok(actual)) => {
            if extras.shape_only {
                compare_layout(&actual, expected, &label)?;
            } else {
                compare(&actual, expected, &label)?;
            }
            if let Some(expected_out) = &extras.expected_out {
                let out = case
                    .kwargs
                    .iter()
                    .find(|(name, _)| name == "out")
                    .map(|(_, value)| value.clone())
                    .ok_or_else(|| format!("{label}: expected_out without an out argument"))?;
                compare(&out, expected_out, &format!("{label} out"))?;
            }
            Ok(false)
        }
        (Ok(_), Err(error)) => Err(format!("{label}: ferrojit failed: {error}")),
        (Err(message), Ok(actual)) => Err(format!(
            "{label}: PyTorch raised '{message}' but ferrojit returned {}",
            actual.python_repr()
        )),
        (Err(message), Err(error)) => {
            let ours = kernel_refusal(&error).map_err(|difference| {
                format!("{label}: {difference}; PyTorch raised '{message}'")
            })?;
            if ours == *message {
                Ok(true)
            } else {
                Err(format!(
                    "{label}: message '{ours}', PyTorch's is '{message}'"
                ))
            }
        }
    }
}

#[test]
fn overloads_match_pytorch() {
    let path = repo_root().join("tests/fixtures/ops_overloads/cases.pt");
    let path: &Path = &path;
    let cases = load_cases(path).unwrap_or_else(|e| panic!("{e}"));
    let items = load_case_list(path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cases.len(), items.len());
    let mut failures = Vec::new();
    if let Err(error) = require_at_least("ops_overloads/cases.pt", cases.len(), 225) {
        failures.push(error);
    }
    let (mut refusals, mut exact) = (0, 0);
    for (case, item) in cases.iter().zip(&items) {
        let extras = match extras(item) {
            Ok(extras) => extras,
            Err(error) => {
                failures.push(format!("{}: {error}", case.name));
                continue;
            }
        };
        if case.expected.is_err() {
            refusals += 1;
        }
        match run_one(case, &extras) {
            Ok(true) => exact += 1,
            Ok(false) => {}
            Err(failure) => failures.push(failure),
        }
    }
    println!(
        "ops_overloads: {} cases, {refusals} refusals, {exact} with PyTorch's message",
        cases.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(
        exact, refusals,
        "every refusal must carry PyTorch's message"
    );
}
