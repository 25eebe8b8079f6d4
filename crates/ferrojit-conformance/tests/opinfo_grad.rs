//! Gradients of PyTorch's OpInfo samples (issue 23, item 7): every case of
//! tests/fixtures/opinfo_grad/cases.pt (written by real PyTorch, see generate.py there) is a
//! TorchScript function returning `torch.autograd.grad(...)` of one operator call; ferrojit
//! compiles it, runs it with gradient recording on, and its gradients must equal PyTorch's
//! (float64, rtol 1e-6, atol 1e-9).
//!
//! Cases that do not pass yet are listed in tests/fixtures/opinfo_grad/KNOWN_GAPS.txt, which
//! only shrinks (a listed entry that covers no failing case fails the test). The operators
//! PyTorch differentiates that ferrojit registers and no passing case covers are listed in
//! UNCOVERED.txt there, which also only shrinks. Set FERROJIT_OPINFO_GRAD_OUT=<folder> to have
//! the run write both lists as it would need them (to review before committing).
//!
//! An operator counts as covered by the cases that pass and whose scripted graph runs it
//! where PyTorch differentiates it (each case's `operators`, recorded by the generator). A
//! case where PyTorch raises (a double backward it refuses) passes when ferrojit raises the
//! same message, and covers nothing.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use ferrojit_conformance::corpus::guarded;
use ferrojit_conformance::opinfo::{
    check_outcome, gap_reason, judge, parse_known_gaps, GapReport, KnownGap, OpInfoCase,
    RunFailure, ScriptedMethod,
};
use ferrojit_conformance::opinfo_grad::{
    load_grad_cases, opinfo_grad_dir, parse_operator_list, prepare_inputs, uncovered_operators,
    GradCase,
};
use ferrojit_runtime::autograd::GradModeGuard;
use ferrojit_runtime::ivalue::IValue;
use ferrojit_runtime::OperatorRegistry;

/// The fewest cases cases.pt may hold (the number the generator saved).
const MINIMUM_CASES: usize = 1063;

/// The fewest cases that must pass: set from the real run, raised as gaps close.
const MINIMUM_PASSING: usize = 1063;

/// Compiles the case's source and runs `the_method` with gradient recording on.
fn run_case(case: &GradCase) -> Result<IValue, RunFailure> {
    let method = ScriptedMethod::compile(&case.case.source)?;
    let args = prepare_inputs(case).map_err(RunFailure::Run)?;
    // As a Python process runs: grad mode on (the test thread's own setting).
    let _recording = GradModeGuard::new(true);
    method.run(args)
}

struct Run {
    /// Per case: its OpInfo, dtype and aten name.
    labels: Vec<(String, String, String)>,
    /// Per case: the operators it covers when it passes.
    operators: Vec<Vec<String>>,
    /// Per case where PyTorch raised: its name, PyTorch's message and ferrojit's outcome.
    refusals: Vec<(String, String, Result<(), String>)>,
    results: Vec<Result<(), RunFailure>>,
    gaps: Vec<KnownGap>,
    report: GapReport,
}

fn run_all() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| {
        ferrojit_autograd::register().expect("the autograd hook installs");
        let cases = load_grad_cases(&opinfo_grad_dir().join("cases.pt")).expect("cases.pt loads");
        let gap_text = std::fs::read_to_string(opinfo_grad_dir().join("KNOWN_GAPS.txt"))
            .expect("tests/fixtures/opinfo_grad/KNOWN_GAPS.txt exists");
        let gaps = parse_known_gaps(&gap_text).expect("KNOWN_GAPS.txt parses");
        let previous_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let mut refusals = Vec::new();
        let results: Vec<Result<(), RunFailure>> = cases
            .iter()
            .map(|case| {
                let mut outcome = None;
                let panicked = guarded(|| {
                    outcome = Some(run_case(case));
                    Ok(())
                });
                let outcome = match (panicked, outcome) {
                    (Err(panic), _) => Err(RunFailure::Run(panic)),
                    (Ok(()), Some(outcome)) => outcome,
                    (Ok(()), None) => Err(RunFailure::Run("the run left no outcome".into())),
                };
                if let Err(message) = &case.case.expected {
                    let ours = match &outcome {
                        Ok(_) => Err("no error".to_string()),
                        Err(RunFailure::Run(text) | RunFailure::Compile(text)) => Err(text.clone()),
                    };
                    let matched = match ours {
                        Err(text) if text.contains(message.as_str()) => Ok(()),
                        other => other,
                    };
                    refusals.push((case.case.name.clone(), message.clone(), matched));
                }
                check_outcome(&case.case, outcome)
            })
            .collect();
        std::panic::set_hook(previous_hook);
        let plain: Vec<OpInfoCase> = cases.iter().map(|case| case.case.clone()).collect();
        let report = judge(&plain, &results, &gaps);
        Run {
            labels: cases
                .iter()
                .map(|case| {
                    (
                        case.case.opinfo.clone(),
                        case.case.dtype.clone(),
                        case.aten.clone(),
                    )
                })
                .collect(),
            operators: cases.iter().map(|case| case.operators.clone()).collect(),
            refusals,
            results,
            gaps,
            report,
        }
    })
}

/// The gap list this run would need: one entry per failing OpInfo, the first failure's
/// reason.
fn suggested_gap_list(run: &Run) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut seen = BTreeSet::new();
    for ((opinfo, _, _), result) in run.labels.iter().zip(&run.results) {
        if let Err(failure) = result {
            if seen.insert(opinfo.clone()) {
                lines.push(format!("{opinfo} | {}", gap_reason(failure)));
            }
        }
    }
    lines.sort();
    lines.join("\n") + "\n"
}

/// The registered, differentiable operators without a passing case.
fn uncovered(run: &Run) -> Vec<String> {
    let text = std::fs::read_to_string(opinfo_grad_dir().join("differentiable_ops.txt"))
        .expect("differentiable_ops.txt exists");
    let differentiable = parse_operator_list(&text).expect("differentiable_ops.txt parses");
    let covered: BTreeSet<String> = run
        .operators
        .iter()
        .zip(&run.results)
        .filter(|(_, result)| result.is_ok())
        .flat_map(|(operators, _)| operators.iter().cloned())
        .collect();
    let registry = OperatorRegistry::global();
    uncovered_operators(
        &differentiable,
        |name| !registry.overloads(name).is_empty(),
        &covered,
    )
}

fn write_suggestions(run: &Run) {
    if let Ok(folder) = std::env::var("FERROJIT_OPINFO_GRAD_OUT") {
        let folder = std::path::PathBuf::from(folder);
        std::fs::write(folder.join("KNOWN_GAPS.txt"), suggested_gap_list(run))
            .expect("the gap list is written");
        std::fs::write(
            folder.join("UNCOVERED.txt"),
            uncovered(run).join("\n") + "\n",
        )
        .expect("the uncovered list is written");
    }
}

#[test]
fn opinfo_gradients_match_pytorch_or_are_listed() {
    let run = run_all();
    write_suggestions(run);
    let report = &run.report;
    let mut problems = Vec::new();
    for (name, reason) in &report.regressions {
        problems.push(format!("[FAILS, not in KNOWN_GAPS.txt] {name}: {reason}"));
    }
    for key in &report.stale {
        let line = run
            .gaps
            .iter()
            .find(|gap| &gap.key == key)
            .map_or(0, |g| g.line);
        problems.push(format!(
            "[passes now: delete line {line} of KNOWN_GAPS.txt] {key}"
        ));
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn opinfo_gradient_counts_stay_above_their_floor() {
    let run = run_all();
    let report = &run.report;
    println!(
        "OpInfo gradient cases: {} in all, {} pass, {} fail and are listed ({} entries)",
        report.total,
        report.passed,
        report.failed_listed,
        run.gaps.len()
    );
    let mut reasons: Vec<_> = report.failures_by_reason.iter().collect();
    reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (reason, count) in reasons.iter().take(40) {
        println!("  {count:5}  {reason}");
    }
    assert!(
        report.total >= MINIMUM_CASES,
        "cases.pt holds {} cases, fewer than {MINIMUM_CASES}",
        report.total
    );
    assert!(
        report.passed >= MINIMUM_PASSING,
        "{} cases pass, fewer than the floor of {MINIMUM_PASSING}",
        report.passed
    );
}

/// UNCOVERED.txt is exactly the registered operators PyTorch differentiates that no passing
/// case covers: an operator that gains a passing case must leave the list, and none may join.
#[test]
fn uncovered_operator_list_is_current() {
    let run = run_all();
    let now = uncovered(run);
    let text = std::fs::read_to_string(opinfo_grad_dir().join("UNCOVERED.txt"))
        .expect("tests/fixtures/opinfo_grad/UNCOVERED.txt exists");
    let listed = parse_operator_list(&text).expect("UNCOVERED.txt parses");
    println!(
        "registered differentiable operators without a passing gradient case: {}",
        now.len()
    );
    let joined: Vec<&String> = now.iter().filter(|name| !listed.contains(name)).collect();
    let left: Vec<&String> = listed.iter().filter(|name| !now.contains(name)).collect();
    assert!(
        joined.is_empty() && left.is_empty(),
        "UNCOVERED.txt is out of date: add {joined:?}, delete {left:?}"
    );
}

/// Where PyTorch refuses a gradient (the CTC loss's double backward), ferrojit raises
/// PyTorch's message (the runner's judging accepts any run error).
#[test]
fn refused_gradients_raise_pytorchs_message() {
    let run = run_all();
    assert!(
        run.refusals
            .iter()
            .any(|(name, _, _)| name.starts_with("ctc_loss.gradgrad/")),
        "cases.pt holds no refused CTC double backward"
    );
    let wrong: Vec<String> = run
        .refusals
        .iter()
        .filter_map(|(name, message, outcome)| {
            outcome
                .as_ref()
                .err()
                .map(|ours| format!("{name}: PyTorch raised '{message}', ferrojit: {ours}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
