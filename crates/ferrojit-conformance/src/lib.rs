//! Conformance harness: runs ferrojit against cases PyTorch computed. Operator cases are
//! stored as `torch.save` files written by the generators under `tests/fixtures/ops*/`.
//!
//! An operator case file holds a list of dicts, one per case:
//! `{"name": str, "op": "aten::add.Tensor", "args": [...], "kwargs": {name: value},
//!   "expected": value}` or, for cases PyTorch rejects, `"error": "PyTorch's message"` instead
//! of `expected`. `op` is the full schema name (name plus overload) of a registered
//! operator; arguments not given are filled from the schema's defaults. A case PyTorch
//! rejects passes only when ferrojit's kernel raises too, with PyTorch's message (see
//! [`run_case_file`]); every case file must hold at least the number of cases its test
//! states, so an emptied or truncated file fails.

pub mod corpus;
pub mod json;
pub mod kernel_call;
pub mod opinfo;
pub mod opinfo_grad;

use std::path::{Path, PathBuf};

use ferrojit_runtime::ivalue::IValue;
use ferrojit_runtime::RuntimeError;

pub use kernel_call::{as_value, call_operator, single, CallError};

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One operator call and what PyTorch made of it.
#[derive(Debug, Clone)]
pub struct OpCase {
    pub name: String,
    pub op: String,
    pub args: Vec<IValue>,
    pub kwargs: Vec<(String, IValue)>,
    /// PyTorch's result, or `Err(message)` when PyTorch raised.
    pub expected: Result<IValue, String>,
}

/// The list a fixture generator `torch.save`d (one entry per case), unparsed: the common
/// first step of every case loader in this crate.
pub fn load_case_list(path: &Path) -> Result<Vec<IValue>, String> {
    let value = ferrojit_serialize::torch_save::load_file(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(value
        .to_list()
        .map_err(|e| format!("{}: {e}", path.display()))?
        .to_vec())
}

/// Reads a case file written by a fixture generator.
pub fn load_cases(path: &Path) -> Result<Vec<OpCase>, String> {
    let list = load_case_list(path)?;
    let mut cases = Vec::with_capacity(list.len());
    for (index, item) in list.iter().enumerate() {
        let dict = item.to_dict().map_err(|e| format!("case {index}: {e}"))?;
        let field = |name: &str| dict.get(&IValue::string(name));
        let text = |name: &str| -> Result<String, String> {
            Ok(field(name)
                .ok_or_else(|| format!("case {index}: missing '{name}'"))?
                .to_str()
                .map_err(|e| format!("case {index}: {e}"))?
                .to_string())
        };
        let args = match field("args") {
            Some(IValue::List(list)) => list.to_vec(),
            Some(IValue::Tuple(tuple)) => tuple.items.to_vec(),
            Some(other) => return Err(format!("case {index}: args is a {}", other.tag_name())),
            None => Vec::new(),
        };
        let mut kwargs = Vec::new();
        if let Some(IValue::Dict(map)) = field("kwargs") {
            for (key, value) in map.entries() {
                kwargs.push((
                    key.to_str()
                        .map_err(|e| format!("case {index}: {e}"))?
                        .to_string(),
                    value,
                ));
            }
        }
        let expected = match (field("expected"), field("error")) {
            (_, Some(IValue::Str(message))) => Err(message.to_string()),
            (Some(value), _) => Ok(value),
            (None, _) => return Err(format!("case {index}: neither 'expected' nor 'error'")),
        };
        cases.push(OpCase {
            name: text("name").unwrap_or_else(|_| format!("case {index}")),
            op: text("op")?,
            args,
            kwargs,
            expected,
        });
    }
    Ok(cases)
}

/// Calls the case's operator through the global registry, as the interpreter would.
pub fn run_case(case: &OpCase) -> Result<IValue, CallError> {
    call_operator(&case.op, case.args.clone(), &case.kwargs).map(as_value)
}

/// Tolerances for comparing floating results: (relative, absolute).
pub fn tolerance_for(dtype: ferrojit_tensor::DType) -> (f64, f64) {
    use ferrojit_tensor::DType;
    match dtype {
        DType::Float64 | DType::ComplexDouble => (1e-10, 1e-12),
        DType::Float32 => (1e-5, 1e-6),
        // Per component; PyTorch's single-precision FFT rounds more than ferrojit's.
        DType::ComplexFloat => (1e-4, 1e-5),
        // About two units in the last place of each half type (as torch.testing does).
        DType::Float16 => (1e-3, 1e-5),
        DType::BFloat16 => (1.6e-2, 1e-5),
        _ => (0.0, 0.0),
    }
}

/// How floating values may differ from PyTorch's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tolerance {
    /// One operator call: [`tolerance_for`] the tensor's dtype; Python floats within 1e-9
    /// relative (1e-12 absolute).
    ByDtype,
    /// A whole model, whose rounding differences add up over many operators: the same
    /// bounds for every floating tensor and Python float.
    Fixed { rtol: f64, atol: f64 },
}

/// What [`compare_with`] accepts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    pub tolerance: Tolerance,
    /// Whether a tuple matches a list PyTorch returned (a list always matches a tuple).
    /// For model outputs, where named tuples and lists may come back as either.
    pub tuple_for_list: bool,
}

impl Comparison {
    /// Operator results: dtype tolerances, a tuple only where PyTorch gave a tuple.
    pub const OPERATORS: Comparison = Comparison {
        tolerance: Tolerance::ByDtype,
        tuple_for_list: false,
    };

    /// Model outputs: fixed tolerances, tuples and lists interchangeable.
    pub const fn models(rtol: f64, atol: f64) -> Comparison {
        Comparison {
            tolerance: Tolerance::Fixed { rtol, atol },
            tuple_for_list: true,
        }
    }
}

/// Whether float `x` matches PyTorch's `y` within (rtol, atol): NaN matches only NaN, an
/// infinity only the same infinity, and with no tolerance only the same value.
fn floats_match(x: f64, y: f64, (rtol, atol): (f64, f64)) -> bool {
    if y.is_nan() {
        x.is_nan()
    } else if y.is_infinite() || (rtol == 0.0 && atol == 0.0) {
        x == y
    } else {
        (x - y).abs() <= atol + rtol * y.abs()
    }
}

/// Compares an operator's result with PyTorch's ([`Comparison::OPERATORS`]); `Err`
/// describes the first difference.
pub fn compare(actual: &IValue, expected: &IValue, path: &str) -> Result<(), String> {
    compare_with(actual, expected, path, Comparison::OPERATORS)
}

/// Compares a result with PyTorch's; `Err` describes the first difference, `path` names its
/// position inside the value. Dtypes, shapes, integers, booleans and strings must be equal;
/// floats within `how.tolerance`. The one value comparator of the test code.
pub fn compare_with(
    actual: &IValue,
    expected: &IValue,
    path: &str,
    how: Comparison,
) -> Result<(), String> {
    match (actual, expected) {
        (IValue::Tensor(a), IValue::Tensor(e)) => {
            let (a, e) = (a.get(), e.get());
            if a.dtype() != e.dtype() {
                return Err(format!(
                    "{path}: dtype {} vs PyTorch's {}",
                    a.dtype().name(),
                    e.dtype().name()
                ));
            }
            if a.sizes() != e.sizes() {
                return Err(format!(
                    "{path}: shape {:?} vs PyTorch's {:?}",
                    a.sizes(),
                    e.sizes()
                ));
            }
            let bounds = match how.tolerance {
                Tolerance::ByDtype => tolerance_for(e.dtype()),
                Tolerance::Fixed { rtol, atol }
                    if e.dtype().is_floating_point() || e.dtype().is_complex() =>
                {
                    (rtol, atol)
                }
                Tolerance::Fixed { .. } => (0.0, 0.0),
            };
            // Complex values compare per component: (re, im) pairs, interleaved.
            let values = |t: &ferrojit_tensor::Tensor| {
                if t.dtype().is_complex() {
                    t.view_as_real().map(|parts| parts.to_f64_vec())
                } else {
                    Ok(t.to_f64_vec())
                }
            };
            let (actual_values, expected_values) = match (values(&a), values(&e)) {
                (Ok(x), Ok(y)) => (x, y),
                _ => return Err(format!("{path}: cannot read the complex values")),
            };
            for (index, (x, y)) in actual_values.iter().zip(expected_values).enumerate() {
                if !floats_match(*x, y, bounds) {
                    return Err(format!("{path}: element {index} is {x}, PyTorch gives {y}"));
                }
            }
            Ok(())
        }
        (IValue::Double(a), IValue::Double(e)) => {
            let bounds = match how.tolerance {
                Tolerance::ByDtype => (1e-9, 1e-12),
                Tolerance::Fixed { rtol, atol } => (rtol, atol),
            };
            if floats_match(*a, *e, bounds) {
                Ok(())
            } else {
                Err(format!("{path}: {a} vs PyTorch's {e}"))
            }
        }
        // Per part, with the float tolerance.
        (IValue::Complex(a), IValue::Complex(e)) => {
            let bounds = match how.tolerance {
                Tolerance::ByDtype => (1e-9, 1e-12),
                Tolerance::Fixed { rtol, atol } => (rtol, atol),
            };
            if floats_match(a.re, e.re, bounds) && floats_match(a.im, e.im, bounds) {
                Ok(())
            } else {
                Err(format!(
                    "{path}: {} vs PyTorch's {}",
                    actual.python_repr(),
                    expected.python_repr()
                ))
            }
        }
        (IValue::Tuple(a), IValue::Tuple(e)) => compare_items(&a.items, &e.items, path, how),
        (IValue::List(a), IValue::List(e)) => compare_items(&a.to_vec(), &e.to_vec(), path, how),
        (IValue::List(a), IValue::Tuple(e)) => compare_items(&a.to_vec(), &e.items, path, how),
        (IValue::Tuple(a), IValue::List(e)) if how.tuple_for_list => {
            compare_items(&a.items, &e.to_vec(), path, how)
        }
        // Entry by entry, so dicts holding tensors compare by value, not by identity.
        (IValue::Dict(a), IValue::Dict(e)) => {
            let (a, e) = (a.entries(), e.entries());
            if a.len() != e.len() {
                return Err(format!(
                    "{path}: {} entries vs PyTorch's {}",
                    a.len(),
                    e.len()
                ));
            }
            for (index, ((ka, va), (ke, ve))) in a.iter().zip(e.iter()).enumerate() {
                compare_with(ka, ke, &format!("{path}.key{index}"), how)?;
                compare_with(va, ve, &format!("{path}[{index}]"), how)?;
            }
            Ok(())
        }
        (a, e) => match a.equals(e) {
            Ok(true) => Ok(()),
            _ => Err(format!(
                "{path}: {} vs PyTorch's {}",
                a.python_repr(),
                e.python_repr()
            )),
        },
    }
}

fn compare_items(
    actual: &[IValue],
    expected: &[IValue],
    path: &str,
    how: Comparison,
) -> Result<(), String> {
    if actual.len() != expected.len() {
        return Err(format!(
            "{path}: {} items vs PyTorch's {}",
            actual.len(),
            expected.len()
        ));
    }
    for (index, (a, e)) in actual.iter().zip(expected).enumerate() {
        compare_with(a, e, &format!("{path}[{index}]"), how)?;
    }
    Ok(())
}

/// Fails when a case file, folder or list yielded fewer than `minimum` items: a truncated
/// or emptied fixture must not pass by having nothing to check.
pub fn require_at_least(what: &str, found: usize, minimum: usize) -> Result<(), String> {
    if found < minimum {
        Err(format!(
            "{what}: {found} found, fewer than the {minimum} its test requires"
        ))
    } else {
        Ok(())
    }
}

/// Checks that ferrojit refused a case the way PyTorch's kernel did: the kernel itself ran
/// and raised an error of a kind Python code sees from a kernel (RuntimeError, IndexError,
/// ValueError, KeyError, ZeroDivisionError, an argument check's message). A missing
/// operator, arguments that do not bind to the schema, an invalid graph or a value of the
/// wrong type for the kernel are ferrojit failures, never a match. Returns the kernel's
/// message, first line only (the generators record the first line of PyTorch's).
pub fn kernel_refusal(outcome: &CallError) -> Result<String, String> {
    let Some(error) = outcome.kernel_error() else {
        return Err(format!("the kernel did not run: {outcome}"));
    };
    match error.root() {
        RuntimeError::Tensor { .. }
        | RuntimeError::Other(_)
        | RuntimeError::Argument(_)
        | RuntimeError::IndexError(_)
        | RuntimeError::KeyError(_)
        | RuntimeError::ValueError(_)
        | RuntimeError::ZeroDivision(_)
        | RuntimeError::Exception { .. } => {
            let message = error.root().to_string();
            Ok(message.lines().next().unwrap_or("").to_string())
        }
        other => Err(format!("not an error a kernel raises: {other:?}")),
    }
}

/// A known, explained difference between PyTorch's error message and ferrojit's. It
/// explains a case when PyTorch's message, with the first occurrence of `pytorch` replaced
/// by `ferrojit`, is ferrojit's message exactly; in both, `{}` stands for one word (no
/// whitespace) that PyTorch's message has there and ferrojit's repeats. An entry that
/// explains no case of its file fails the test, so the list only shrinks as messages are
/// fixed; the case must still fail in the kernel ([`kernel_refusal`]).
#[derive(Debug, Clone, Copy)]
pub struct KnownMessageDifference {
    /// The part of PyTorch's message that differs.
    pub pytorch: &'static str,
    /// What ferrojit says in its place.
    pub ferrojit: &'static str,
    /// Why the messages differ.
    pub reason: &'static str,
}

/// The difference where PyTorch says `pytorch` and ferrojit says `ferrojit`, for `reason`
/// (the case-file tests' tables are lists of these).
pub const fn known_difference(
    pytorch: &'static str,
    ferrojit: &'static str,
    reason: &'static str,
) -> KnownMessageDifference {
    KnownMessageDifference {
        pytorch,
        ferrojit,
        reason,
    }
}

impl KnownMessageDifference {
    /// ferrojit's message as this difference predicts it from PyTorch's, when `pytorch`
    /// occurs in it.
    pub fn predict(&self, pytorch_message: &str) -> Option<String> {
        let Some((before, after)) = self.pytorch.split_once("{}") else {
            return pytorch_message
                .contains(self.pytorch)
                .then(|| pytorch_message.replacen(self.pytorch, self.ferrojit, 1));
        };
        let start = pytorch_message.find(before)?;
        let rest = &pytorch_message[start + before.len()..];
        let word_length = if after.is_empty() {
            rest.len()
        } else {
            rest.find(after)?
        };
        let word = &rest[..word_length];
        if word.is_empty() || word.contains(char::is_whitespace) {
            return None;
        }
        Some(format!(
            "{}{}{}",
            &pytorch_message[..start],
            self.ferrojit.replace("{}", word),
            &rest[word_length + after.len()..]
        ))
    }
}

/// An operator PyTorch has and ferrojit does not register yet: its error cases (the only
/// ones a missing operator can pass) are accepted only while it is listed, and an entry whose
/// operator is registered fails the test.
#[derive(Debug, Clone, Copy)]
pub struct KnownMissingOperator {
    /// The full schema name (`aten::isnan.out`).
    pub op: &'static str,
    /// Why it is missing.
    pub reason: &'static str,
}

/// How [`run_case_file`] runs a file.
#[derive(Debug, Clone, Copy)]
pub struct CaseFileOptions<'a> {
    /// The fewest cases the file may hold.
    pub minimum_cases: usize,
    /// Run each case on deep copies of its arguments (for files where `torch.save` kept a
    /// tensor shared by several cases as one storage and in-place cases would disturb the
    /// others).
    pub copy_arguments: bool,
    /// Error cases whose message may differ from PyTorch's; see [`KnownMessageDifference`].
    pub known_message_differences: &'a [KnownMessageDifference],
    /// Operators not registered yet; see [`KnownMissingOperator`].
    pub known_missing_operators: &'a [KnownMissingOperator],
}

/// What [`run_case_file`] found.
#[derive(Debug, Default)]
pub struct CaseFileReport {
    /// Cases in the file.
    pub cases: usize,
    /// Cases PyTorch rejected.
    pub error_cases: usize,
    /// Of those, the ones ferrojit's kernel rejects with PyTorch's exact message.
    pub exact_error_messages: usize,
    /// One line per failure (empty when the file passes).
    pub failures: Vec<String>,
}

impl CaseFileReport {
    /// Prints the counts for `file` and panics, listing every failure, unless all passed.
    pub fn assert_all_passed(&self, file: &str) {
        println!(
            "{file}: {} cases, {} expected errors, {} with PyTorch's exact message",
            self.cases, self.error_cases, self.exact_error_messages
        );
        assert!(
            self.failures.is_empty(),
            "{} failing case(s) in {file}:\n{}",
            self.failures.len(),
            self.failures.join("\n")
        );
    }
}

/// A deep copy of an argument (tensors cloned into storages of their own).
pub fn fresh_copy(value: &IValue) -> IValue {
    match value {
        IValue::Tensor(t) => IValue::from(t.get().clone_tensor()),
        IValue::List(list) => IValue::list(
            list.element_type().clone(),
            list.to_vec().iter().map(fresh_copy).collect(),
        ),
        IValue::Tuple(tuple) => IValue::tuple(tuple.items.iter().map(fresh_copy).collect()),
        other => other.clone(),
    }
}

/// Runs every case of a file: a value must match PyTorch's ([`compare`]); an error case must
/// fail in the kernel ([`kernel_refusal`]) with PyTorch's message, or with the message one of
/// `options.known_message_differences` predicts from it. Fails when the file holds fewer than
/// `options.minimum_cases` cases, and on a listed difference or missing operator that no case
/// of the file needs.
pub fn run_case_file(path: &Path, options: &CaseFileOptions) -> CaseFileReport {
    let mut report = CaseFileReport::default();
    let cases = match load_cases(path) {
        Ok(cases) => cases,
        Err(error) => {
            report.failures.push(error);
            return report;
        }
    };
    report.cases = cases.len();
    if let Err(error) = require_at_least(
        &path.display().to_string(),
        cases.len(),
        options.minimum_cases,
    ) {
        report.failures.push(error);
    }
    let mut differences_used = vec![false; options.known_message_differences.len()];
    let mut missing_used = vec![false; options.known_missing_operators.len()];
    for case in &cases {
        let label = format!("{} ({})", case.name, case.op);
        let outcome = if options.copy_arguments {
            run_case(&OpCase {
                args: case.args.iter().map(fresh_copy).collect(),
                kwargs: case
                    .kwargs
                    .iter()
                    .map(|(name, value)| (name.clone(), fresh_copy(value)))
                    .collect(),
                ..case.clone()
            })
        } else {
            run_case(case)
        };
        let message = match (&case.expected, outcome) {
            (Ok(expected), Ok(actual)) => {
                if let Err(difference) = compare(&actual, expected, &label) {
                    report.failures.push(difference);
                }
                continue;
            }
            (Ok(_), Err(error)) => {
                report
                    .failures
                    .push(format!("{label}: ferrojit failed: {error}"));
                continue;
            }
            (Err(message), Ok(actual)) => {
                report.failures.push(format!(
                    "{label}: PyTorch raised '{message}' but ferrojit returned {}",
                    actual.python_repr()
                ));
                continue;
            }
            (Err(message), Err(error)) => {
                report.error_cases += 1;
                match kernel_refusal(&error) {
                    Ok(ours) => (ours, message),
                    Err(difference) => {
                        let missing = options
                            .known_missing_operators
                            .iter()
                            .position(|known| known.op == case.op);
                        match (&error, missing) {
                            (CallError::NotRegistered(_), Some(index)) => {
                                missing_used[index] = true;
                            }
                            _ => report
                                .failures
                                .push(format!("{label}: {difference}; PyTorch raised '{message}'")),
                        }
                        continue;
                    }
                }
            }
        };
        let (ours, theirs) = message;
        if ours == *theirs {
            report.exact_error_messages += 1;
            continue;
        }
        let explained = options
            .known_message_differences
            .iter()
            .position(|known| known.predict(theirs).as_deref() == Some(ours.as_str()));
        match explained {
            Some(index) => differences_used[index] = true,
            None => report.failures.push(format!(
                "{label}: message '{ours}', PyTorch's is '{theirs}'"
            )),
        }
    }
    for (known, used) in options
        .known_message_differences
        .iter()
        .zip(&differences_used)
    {
        if !used {
            report.failures.push(format!(
                "{}: no case differs by '{}' -> '{}' any more: remove it from the known \
                 message differences",
                path.display(),
                known.pytorch,
                known.ferrojit
            ));
        }
    }
    for (known, used) in options.known_missing_operators.iter().zip(&missing_used) {
        if !used {
            report.failures.push(format!(
                "{}: no case needs {} to be missing: remove it from the known missing operators",
                path.display(),
                known.op
            ));
        }
    }
    report
}
