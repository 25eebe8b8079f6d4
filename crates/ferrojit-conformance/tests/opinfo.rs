//! PyTorch's OpInfo samples, scripted (issue 20, item 4): every case of
//! tests/fixtures/opinfo/cases.pt (written by real PyTorch, see generate.py there) is compiled
//! from its TorchScript source by ferrojit's frontend, run on its inputs, and compared with
//! PyTorch's result (see `ferrojit_conformance::opinfo`).
//!
//! Cases that do not pass yet are listed, with the reason, in
//! tests/fixtures/opinfo/KNOWN_GAPS.txt. The test fails when a case outside the list fails
//! and when a listed entry no longer covers a failing case, so the list only shrinks.
//! Run with `--nocapture` for the counts; set FERROJIT_OPINFO_GAPS_OUT=<file> to have the
//! run write the gap list it would need (to review before committing it).

use std::sync::OnceLock;

use ferrojit_conformance::corpus::guarded;
use ferrojit_conformance::fresh_copy;
use ferrojit_conformance::opinfo::{
    check_outcome, gap_reason, judge, load_opinfo_cases, opinfo_dir, parse_known_gaps, GapReport,
    KnownGap, OpInfoCase, RunFailure, ScriptedMethod,
};
use ferrojit_runtime::ivalue::IValue;

/// The fewest cases cases.pt may hold (the number the generator saved): an emptied or
/// truncated fixture must not pass by having nothing to check.
const MINIMUM_CASES: usize = 2664;

/// The fewest cases that must pass: set from the real run, raised as gaps close.
const MINIMUM_PASSING: usize = 2664;

/// Compiles the case's source with ferrojit's frontend and runs `the_method`.
fn run_case(case: &OpInfoCase) -> Result<IValue, RunFailure> {
    let method = ScriptedMethod::compile(&case.source)?;
    // Fresh copies: torch.save keeps tensors that share storage shared, and a case must not
    // see another's writes.
    method.run(case.inputs.iter().map(fresh_copy).collect())
}

/// What the run kept: each case's (OpInfo, dtype) and outcome (the cases themselves hold
/// tensors, which are not shared across the test threads).
struct Run {
    labels: Vec<(String, String)>,
    results: Vec<Result<(), RunFailure>>,
    gaps: Vec<KnownGap>,
    report: GapReport,
}

/// Every case run once per test binary; both tests read the same results.
fn run_all() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| {
        let cases = load_opinfo_cases(&opinfo_dir().join("cases.pt")).expect("cases.pt loads");
        let gap_text = std::fs::read_to_string(opinfo_dir().join("KNOWN_GAPS.txt"))
            .expect("tests/fixtures/opinfo/KNOWN_GAPS.txt exists");
        let gaps = parse_known_gaps(&gap_text).expect("KNOWN_GAPS.txt parses");
        // Panics are reported as failures; silence their default printout meanwhile.
        let previous_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
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
                check_outcome(case, outcome)
            })
            .collect();
        std::panic::set_hook(previous_hook);
        let report = judge(&cases, &results, &gaps);
        Run {
            labels: cases
                .iter()
                .map(|case| (case.opinfo.clone(), case.dtype.clone()))
                .collect(),
            results,
            gaps,
            report,
        }
    })
}

/// Of one OpInfo's cases of one dtype: (failing, total, the first failure's gap reason).
type DtypeTally = (usize, usize, Option<String>);

/// The gap list this run would need, in the file's format: one entry per OpInfo, or per
/// OpInfo and dtype when only some of its dtypes fail; the reason is the first failure's.
fn suggested_gap_list(run: &Run) -> String {
    use std::collections::BTreeMap;
    // opinfo -> dtype -> (failing, total, first reason)
    let mut table: BTreeMap<&str, BTreeMap<&str, DtypeTally>> = BTreeMap::new();
    for ((opinfo, dtype), result) in run.labels.iter().zip(&run.results) {
        let entry = table
            .entry(opinfo.as_str())
            .or_default()
            .entry(dtype.as_str())
            .or_default();
        entry.1 += 1;
        if let Err(failure) = result {
            entry.0 += 1;
            entry.2.get_or_insert_with(|| gap_reason(failure));
        }
    }
    let mut lines = Vec::new();
    for (opinfo, dtypes) in table {
        let failing: Vec<_> = dtypes.iter().filter(|(_, v)| v.0 > 0).collect();
        if failing.is_empty() {
            continue;
        }
        if failing.len() == dtypes.len() {
            let reason = failing[0].1 .2.clone().unwrap_or_default();
            lines.push(format!("{opinfo} | {reason}"));
        } else {
            for (dtype, (_, _, reason)) in failing {
                lines.push(format!(
                    "{opinfo}/{dtype} | {}",
                    reason.clone().unwrap_or_default()
                ));
            }
        }
    }
    lines.join("\n") + "\n"
}

#[test]
fn opinfo_cases_match_pytorch_or_are_listed() {
    let run = run_all();
    if let Ok(path) = std::env::var("FERROJIT_OPINFO_GAPS_OUT") {
        std::fs::write(&path, suggested_gap_list(run)).expect("the gap list is written");
    }
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
fn opinfo_counts_stay_above_their_floor() {
    let run = run_all();
    let report = &run.report;
    println!(
        "OpInfo cases: {} in all, {} pass, {} fail and are listed in KNOWN_GAPS.txt ({} entries)",
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
