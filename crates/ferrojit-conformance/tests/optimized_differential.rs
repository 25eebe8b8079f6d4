//! Differential check of the optimizing graph executor (issue 19, item 6): every program of
//! the language corpus that runs from its archive runs twice, once with each graph as
//! written and once through the optimizing executor (inlining, input specialization and
//! PyTorch's passes), and the two runs must agree exactly: the same values (floats compared
//! for equality, NaN matching NaN), the same errors, and the same changes to mutable
//! arguments. Each call runs twice in a row on both sides (so stateful modules see the same
//! sequence), which checks a cached plan as well as a freshly built one.

use std::path::Path;

use ferrojit_conformance::corpus::{call_arguments, guarded, lang_dir, run_options};
use ferrojit_conformance::{compare_with, require_at_least, Comparison};
use ferrojit_opt::graph_executor::SpecializingOptimizer;
use ferrojit_runtime::interpreter::RunOptions;
use ferrojit_runtime::ivalue::IValue;
use ferrojit_serialize::import::load_module;
use serde_json::Value as Json;

/// Exact agreement: no tolerance, tuples and lists as written.
const EXACT: Comparison = Comparison::models(0.0, 0.0);

/// One call's result and its arguments afterwards (programs may mutate them).
type Outcome = (Result<IValue, String>, Vec<IValue>);

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

/// Runs every call of program `name` (each `repeat` times in a row) on one load of its
/// archive. With an optimizer, also says whether the first call's inputs got a specialized
/// plan (`Ok`) or ran the general graph (`Err` with the optimizer's reason).
fn run_calls(
    name: &str,
    method: &str,
    calls: usize,
    options: &RunOptions,
    repeat: usize,
) -> Result<(Vec<Outcome>, Result<(), String>), String> {
    let path: &Path = &lang_dir().join(format!("cases/{name}.pt"));
    let loaded = load_module(path).map_err(|e| format!("load failed: {e}"))?;
    let planned = match (&options.optimizer, calls) {
        (Some(optimizer), 1..) => {
            match loaded
                .module
                .graph_for(method, call_arguments(name, 0)?, optimizer.as_ref())
            {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(reason)) => Err(reason),
                // Inputs the method refuses (a corpus case of a wrong call): no plan to build.
                Err(_) => Ok(()),
            }
        }
        _ => Ok(()),
    };
    let mut outcomes = Vec::new();
    for index in 0..calls {
        for _ in 0..repeat {
            let args = call_arguments(name, index)?;
            let kept: Vec<IValue> = args.clone();
            let result = loaded
                .module
                .run_method_with_options(method, args, options)
                .map_err(|e| e.to_string());
            outcomes.push((result, kept));
        }
    }
    Ok((outcomes, planned))
}

fn compare_outcomes(plain: &Outcome, optimized: &Outcome, label: &str) -> Result<(), String> {
    match (&plain.0, &optimized.0) {
        (Ok(a), Ok(b)) => compare_with(b, a, &format!("{label} result"), EXACT)?,
        (Err(a), Err(b)) => {
            if first_line(a) != first_line(b) {
                return Err(format!(
                    "{label}: errors differ: optimized '{}' vs as written '{}'",
                    first_line(b),
                    first_line(a)
                ));
            }
        }
        (Ok(a), Err(b)) => {
            return Err(format!(
                "{label}: optimized run failed ('{}') where the graph as written returned {}",
                first_line(b),
                a.python_repr()
            ))
        }
        (Err(a), Ok(b)) => {
            return Err(format!(
                "{label}: optimized run returned {} where the graph as written failed ('{}')",
                b.python_repr(),
                first_line(a)
            ))
        }
    }
    for (position, (a, b)) in plain.1.iter().zip(&optimized.1).enumerate() {
        compare_with(
            b,
            a,
            &format!("{label} argument {position} afterwards"),
            EXACT,
        )?;
    }
    Ok(())
}

/// Checks one program; `Ok(Err(reason))` when it agrees but its first call ran the general
/// graph because the optimizer declined to build a plan.
fn check_program(program: &Json) -> Result<Result<(), String>, String> {
    let name = program["name"].as_str().unwrap_or("");
    let method = program["method"].as_str().unwrap_or("forward");
    let calls = program["calls"].as_array().map_or(0, Vec::len);
    let (plain, _) = run_calls(name, method, calls, &run_options(), 2)?;
    let optimized_options = RunOptions {
        optimizer: Some(SpecializingOptimizer::shared()),
        ..run_options()
    };
    let (optimized, planned) = run_calls(name, method, calls, &optimized_options, 2)?;
    for (position, (plain_outcome, optimized_outcome)) in plain.iter().zip(&optimized).enumerate() {
        let label = format!("call {} (run {})", position / 2, position % 2 + 1);
        compare_outcomes(plain_outcome, optimized_outcome, &label)?;
    }
    Ok(planned)
}

#[test]
fn corpus_runs_the_same_optimized_and_as_written() {
    let corpus_text = std::fs::read_to_string(lang_dir().join("corpus.json"))
        .expect("tests/fixtures/lang/corpus.json exists");
    let corpus: Json = serde_json::from_str(&corpus_text).expect("corpus.json is JSON");
    let programs = corpus["programs"].as_array().expect("a program list");
    let previous_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut checked = 0;
    let mut failures = Vec::new();
    let mut declined = Vec::new();
    for program in programs {
        if !matches!(program["kind"].as_str(), Some("function" | "module")) {
            continue;
        }
        let name = program["name"].as_str().unwrap_or("?");
        checked += 1;
        let mut planned = Ok(());
        if let Err(problem) = guarded(|| {
            planned = check_program(program)?;
            Ok(())
        }) {
            failures.push(format!("{name}: {problem}"));
        }
        if let Err(reason) = planned {
            declined.push(format!("{name}: {reason}"));
        }
    }
    std::panic::set_hook(previous_hook);
    require_at_least("corpus programs run from archives", checked, 300).unwrap();
    println!(
        "optimized differential: {checked} programs, {} differ, {} ran the general graph:",
        failures.len(),
        declined.len()
    );
    for line in &declined {
        println!("  {line}");
    }
    // The optimizer builds a plan for every program but those it must decline; a pipeline
    // that silently declined everything would make this check vacuous.
    assert!(
        declined.len() * 20 <= checked,
        "the optimizer declined {} of {checked} programs:\n{}",
        declined.len(),
        declined.join("\n")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
