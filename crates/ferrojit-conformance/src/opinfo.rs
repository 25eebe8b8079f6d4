//! PyTorch's OpInfo database as fixtures (issue 20, item 4): reading the cases
//! tests/fixtures/opinfo/generate.py wrote, the committed list of known gaps, and the rules
//! that make that list only shrink.
//!
//! A case is one OpInfo sample scripted the way PyTorch's JIT OpInfo test scripts it: a
//! TorchScript function `the_method` whose parameters are the sample's tensors and whose body
//! calls the operator with every other argument written as a literal. The runner (the
//! `opinfo` test) compiles the source with ferrojit's frontend, runs it on the inputs and
//! checks the result here with [`check_outcome`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ferrojit_frontend::{compile_source, CompilationUnit};
use ferrojit_ir::Graph;
use ferrojit_runtime::interpreter::run_shared_graph;
use ferrojit_runtime::ivalue::IValue;
use ferrojit_runtime::module::{coerce_call_arguments, single_result};
use ferrojit_serialize::import::{CompiledMethods, RegistrySchemas};

use crate::{compare_with, repo_root, Comparison, Tolerance};

/// The fixture folder.
pub fn opinfo_dir() -> PathBuf {
    repo_root().join("tests/fixtures/opinfo")
}

/// One scripted OpInfo sample and what PyTorch made of it.
#[derive(Debug, Clone)]
pub struct OpInfoCase {
    /// `<opinfo>/<dtype>/<sample index>`.
    pub name: String,
    /// The OpInfo's name, with `.<variant_test_name>` when it has one.
    pub opinfo: String,
    /// The sample dtype's name (`float32`, `int64`, ...).
    pub dtype: String,
    /// TorchScript source defining `the_method`.
    pub source: String,
    /// The arguments of `the_method`: tensors and lists of tensors.
    pub inputs: Vec<IValue>,
    /// Float tolerances: ours (1e-4, 1e-5), or the OpInfo's own float32 override if larger.
    pub rtol: f64,
    pub atol: f64,
    /// PyTorch's result, or the first line of the error PyTorch raised.
    pub expected: Result<IValue, String>,
}

impl OpInfoCase {
    /// The case's place in the known-gap list: an entry names either the OpInfo or
    /// `<opinfo>/<dtype>`.
    pub fn gap_keys(&self) -> [String; 2] {
        [
            self.opinfo.clone(),
            format!("{}/{}", self.opinfo, self.dtype),
        ]
    }
}

/// Reads `cases.pt`.
pub fn load_opinfo_cases(path: &Path) -> Result<Vec<OpInfoCase>, String> {
    crate::load_case_list(path)?
        .iter()
        .enumerate()
        .map(|(index, item)| read_case(index, item))
        .collect()
}

fn read_case(index: usize, item: &IValue) -> Result<OpInfoCase, String> {
    let dict = item.to_dict().map_err(|e| format!("case {index}: {e}"))?;
    let field = |name: &str| {
        dict.get(&IValue::string(name))
            .ok_or_else(|| format!("case {index}: missing '{name}'"))
    };
    let text = |name: &str| -> Result<String, String> {
        Ok(field(name)?
            .to_str()
            .map_err(|e| format!("case {index}, '{name}': {e}"))?
            .to_string())
    };
    let number = |name: &str| -> Result<f64, String> {
        field(name)?
            .to_double()
            .map_err(|e| format!("case {index}, '{name}': {e}"))
    };
    let inputs = match field("inputs")? {
        IValue::List(list) => list.to_vec(),
        IValue::Tuple(tuple) => tuple.items.to_vec(),
        other => {
            return Err(format!(
                "case {index}: inputs is a {}, not a list",
                other.tag_name()
            ))
        }
    };
    let expected = match (
        dict.get(&IValue::string("expected")),
        dict.get(&IValue::string("error")),
    ) {
        (_, Some(IValue::Str(message))) => Err(message.to_string()),
        (Some(value), _) => Ok(value),
        _ => return Err(format!("case {index}: neither 'expected' nor 'error'")),
    };
    Ok(OpInfoCase {
        name: text("name")?,
        opinfo: text("opinfo")?,
        dtype: text("dtype")?,
        source: text("source")?,
        inputs,
        rtol: number("rtol")?,
        atol: number("atol")?,
        expected,
    })
}

/// Where ferrojit's run of a case stopped, when it did not return a value.
#[derive(Debug, Clone, PartialEq)]
pub enum RunFailure {
    /// The frontend refused the source (parse, type check or operator lookup).
    Compile(String),
    /// The compiled function raised, or the run panicked.
    Run(String),
}

/// A case's `the_method`, compiled by ferrojit's frontend from the case's source.
pub struct ScriptedMethod {
    graph: Arc<Graph>,
    methods: Arc<CompiledMethods>,
}

impl ScriptedMethod {
    /// Compiles `source` (which defines `the_method`) against the builtin operators.
    pub fn compile(source: &str) -> Result<ScriptedMethod, RunFailure> {
        let unit = compile_source(source, RegistrySchemas::builtins())
            .map_err(|e| RunFailure::Compile(e.to_string()))?;
        ScriptedMethod::from_unit(Arc::new(unit))
    }

    /// `the_method` of a unit already holding its definition (an archive's, say).
    pub fn from_unit(unit: Arc<CompilationUnit>) -> Result<ScriptedMethod, RunFailure> {
        let function = unit
            .function("__torch__.the_method")
            .map_err(|e| RunFailure::Compile(e.to_string()))?;
        let graph = function
            .graph(&unit)
            .map_err(|e| RunFailure::Compile(e.to_string()))?;
        Ok(ScriptedMethod {
            graph,
            methods: CompiledMethods::new(unit),
        })
    }

    /// Runs the method on `args` (coerced to its parameter types as a call from Python is).
    pub fn run(&self, mut args: Vec<IValue>) -> Result<IValue, RunFailure> {
        coerce_call_arguments(&self.graph, &mut args);
        run_shared_graph(
            &self.graph,
            args,
            self.methods.as_ref(),
            &crate::corpus::run_options(),
        )
        .map(single_result)
        .map_err(|e| RunFailure::Run(e.to_string()))
    }
}

/// Checks ferrojit's outcome against PyTorch's. A value must match with the case's float
/// tolerances (integers, booleans, dtypes and shapes exactly; NaN only where PyTorch has
/// NaN; a tuple also matches a list). Where PyTorch raised, ferrojit's compiled function must
/// raise too (any message: PyTorch's error text is recorded for the reader); a compile error
/// is never a match.
pub fn check_outcome(
    case: &OpInfoCase,
    outcome: Result<IValue, RunFailure>,
) -> Result<(), RunFailure> {
    let how = Comparison {
        tolerance: Tolerance::Fixed {
            rtol: case.rtol,
            atol: case.atol,
        },
        tuple_for_list: true,
    };
    match (&case.expected, outcome) {
        (Ok(expected), Ok(actual)) => {
            compare_with(&actual, expected, "result", how).map_err(RunFailure::Run)
        }
        (Ok(_), Err(failure)) => Err(failure),
        (Err(message), Ok(actual)) => Err(RunFailure::Run(format!(
            "returned {} where PyTorch raised '{message}'",
            short(&actual.python_repr())
        ))),
        (Err(_), Err(RunFailure::Run(_))) => Ok(()),
        (Err(message), Err(RunFailure::Compile(ours))) => Err(RunFailure::Compile(format!(
            "{ours} (PyTorch compiled it and raised '{message}' when run)"
        ))),
    }
}

fn short(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() > 160 {
        format!("{}...", line.chars().take(160).collect::<String>())
    } else {
        line.to_string()
    }
}

/// The kind of gap a failure shows, as the known-gap list words it: "missing operator
/// aten::x" when ferrojit names an operator it lacks, "frontend: ..." for other compile
/// errors, "wrong result" when a value differs, "runtime: ..." for other run errors.
pub fn gap_reason(failure: &RunFailure) -> String {
    let message = match failure {
        RunFailure::Compile(message) | RunFailure::Run(message) => message,
    };
    if let Some(operator) = missing_operator(message) {
        return format!("missing operator {operator}");
    }
    // The frontend resolves `torch.<name>` through the registered schemas: no attribute of
    // the torch module means no registered `aten::<name>`.
    if let Some(rest) = message.strip_prefix("object has no attribute ") {
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            return format!("missing operator aten::{name}");
        }
    }
    match failure {
        RunFailure::Compile(message) => format!("frontend: {}", short(message)),
        RunFailure::Run(message)
            if message.starts_with("result") || message.starts_with("returned ") =>
        {
            "wrong result".to_string()
        }
        RunFailure::Run(message) => format!("runtime: {}", short(message)),
    }
}

/// The `aten::name` an error says is not registered or unknown, if it says so.
fn missing_operator(message: &str) -> Option<String> {
    const PHRASES: &[&str] = &[
        "Unknown builtin op: ",
        "unknown builtin op: ",
        "is not registered",
        "not registered: ",
        "no operator ",
        "Unknown operator ",
        "unknown operator ",
    ];
    if !PHRASES.iter().any(|phrase| message.contains(phrase)) {
        return None;
    }
    let start = message.find("aten::")?;
    let name: String = message[start..]
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':' || *c == '.')
        .collect();
    Some(name.trim_end_matches('.').to_string())
}

/// One line of KNOWN_GAPS.txt: `<opinfo>[/<dtype>] | <reason>`.
#[derive(Debug, Clone, PartialEq)]
pub struct KnownGap {
    pub key: String,
    pub reason: String,
    /// 1-based line number in the file, for messages.
    pub line: usize,
}

/// Parses the known-gap list: one entry a line, `#` starts a comment line, blank lines are
/// ignored; a line without a reason, or a key listed twice, is an error.
pub fn parse_known_gaps(text: &str) -> Result<Vec<KnownGap>, String> {
    let mut gaps: Vec<KnownGap> = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, reason)) = line.split_once(" | ") else {
            return Err(format!(
                "KNOWN_GAPS.txt line {}: '{line}' has no ' | <reason>'",
                index + 1
            ));
        };
        let (key, reason) = (key.trim(), reason.trim());
        if key.is_empty() || reason.is_empty() {
            return Err(format!(
                "KNOWN_GAPS.txt line {}: empty name or reason",
                index + 1
            ));
        }
        if let Some(earlier) = gaps.iter().find(|gap| gap.key == key) {
            return Err(format!(
                "KNOWN_GAPS.txt line {}: '{key}' is listed already on line {}",
                index + 1,
                earlier.line
            ));
        }
        gaps.push(KnownGap {
            key: key.to_string(),
            reason: reason.to_string(),
            line: index + 1,
        });
    }
    Ok(gaps)
}

/// What a run of every case came to, judged against the known-gap list.
#[derive(Debug, Default)]
pub struct GapReport {
    pub total: usize,
    pub passed: usize,
    /// Failing cases a gap entry covers.
    pub failed_listed: usize,
    /// Failing cases no entry covers: `(case name, reason)`.
    pub regressions: Vec<(String, String)>,
    /// Entries to delete: every case they cover passes, or they cover no case at all.
    pub stale: Vec<String>,
    /// Per gap reason (missing operator aten::x, wrong result, ...), the failing cases.
    pub failures_by_reason: BTreeMap<String, usize>,
}

/// Judges every case's result against `gaps`: a failing case must be covered by an entry
/// (its OpInfo, or its OpInfo and dtype), and each entry must cover at least one failing
/// case, so the list is exactly the gaps and only shrinks as they close.
pub fn judge(
    cases: &[OpInfoCase],
    results: &[Result<(), RunFailure>],
    gaps: &[KnownGap],
) -> GapReport {
    let mut report = GapReport {
        total: cases.len(),
        ..GapReport::default()
    };
    let mut covers_failure = vec![false; gaps.len()];
    for (case, result) in cases.iter().zip(results) {
        let keys = case.gap_keys();
        let entry = gaps.iter().position(|gap| keys.contains(&gap.key));
        match result {
            Ok(()) => report.passed += 1,
            Err(failure) => {
                let reason = gap_reason(failure);
                *report.failures_by_reason.entry(reason.clone()).or_default() += 1;
                match entry {
                    Some(index) => {
                        covers_failure[index] = true;
                        report.failed_listed += 1;
                    }
                    None => report.regressions.push((case.name.clone(), reason)),
                }
            }
        }
    }
    for (gap, covered) in gaps.iter().zip(covers_failure) {
        if !covered {
            report.stale.push(gap.key.clone());
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(opinfo: &str, dtype: &str) -> OpInfoCase {
        OpInfoCase {
            name: format!("{opinfo}/{dtype}/0"),
            opinfo: opinfo.to_string(),
            dtype: dtype.to_string(),
            source: String::new(),
            inputs: Vec::new(),
            rtol: 1e-4,
            atol: 1e-5,
            expected: Ok(IValue::Int(1)),
        }
    }

    #[test]
    fn known_gap_lines_parse_and_reject_bad_lines() {
        let gaps = parse_known_gaps("# comment\n\nabs | wrong result\nsum/int64 | frontend: x\n")
            .expect("parses");
        assert_eq!(gaps.len(), 2);
        assert_eq!(gaps[1].key, "sum/int64");
        assert_eq!(gaps[1].line, 4);
        assert!(parse_known_gaps("abs wrong result").is_err());
        assert!(parse_known_gaps("abs | a\nabs | b").is_err());
        assert!(parse_known_gaps(" | reason").is_err());
    }

    #[test]
    fn judging_finds_regressions_and_stale_entries() {
        let cases = vec![
            case("abs", "float32"),
            case("abs", "int64"),
            case("neg", "float32"),
        ];
        let failure: Result<(), RunFailure> =
            Err(RunFailure::Run("result: 1 vs PyTorch's 2".to_string()));
        let results = vec![failure.clone(), Ok(()), failure];
        let gaps = parse_known_gaps("abs/float32 | wrong result\nsum | wrong result").unwrap();
        let report = judge(&cases, &results, &gaps);
        assert_eq!(report.passed, 1);
        assert_eq!(report.failed_listed, 1);
        assert_eq!(report.regressions.len(), 1);
        assert_eq!(report.regressions[0].0, "neg/float32/0");
        assert_eq!(report.stale, vec!["sum".to_string()]);
        assert_eq!(report.failures_by_reason.get("wrong result"), Some(&2));
    }

    #[test]
    fn gap_reasons_name_the_missing_operator() {
        let missing = RunFailure::Compile("Unknown builtin op: aten::cummax.".to_string());
        assert_eq!(gap_reason(&missing), "missing operator aten::cummax");
        let frontend = RunFailure::Compile("expected an expression".to_string());
        assert_eq!(gap_reason(&frontend), "frontend: expected an expression");
        let unknown = RunFailure::Compile("object has no attribute cummax:\n  ...".to_string());
        assert_eq!(gap_reason(&unknown), "missing operator aten::cummax");
        let wrong = RunFailure::Run("result[0]: element 3 is 1, PyTorch gives 2".to_string());
        assert_eq!(gap_reason(&wrong), "wrong result");
    }

    #[test]
    fn pytorch_errors_need_a_runtime_error_from_ferrojit() {
        let mut refused = case("abs", "float32");
        refused.expected = Err("shape mismatch".to_string());
        assert!(check_outcome(&refused, Err(RunFailure::Run("boom".into()))).is_ok());
        assert!(check_outcome(&refused, Err(RunFailure::Compile("no".into()))).is_err());
        assert!(check_outcome(&refused, Ok(IValue::Int(1))).is_err());
        let fine = case("abs", "float32");
        assert!(check_outcome(&fine, Ok(IValue::Int(1))).is_ok());
        assert!(check_outcome(&fine, Ok(IValue::Int(2))).is_err());
    }
}
