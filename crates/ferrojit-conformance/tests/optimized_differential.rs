//! Differential check of the optimizing graph executor (issue 19, item 6): every program of
//! the language corpus that runs from its archive runs twice, once with each graph as
//! written and once through the optimizing executor (inlining, input specialization and
//! PyTorch's passes), and the two runs must agree exactly: the same values (floats compared
//! for equality, NaN matching NaN), the same errors, and the same changes to mutable
//! arguments. Each call runs twice in a row on both sides (so stateful modules see the same
//! sequence), which checks a cached plan as well as a freshly built one.
//!
//! The optimized side runs three ways (issue 22: the corpus passes with fusion on and off):
//! with the fuser off; with it on and its groups interpreted; and with it on and its groups
//! compiled by Cranelift. The first two must agree exactly. Compiled code may round
//! differently from the interpreter's kernels (its math is within a few ULP), so a program
//! whose run compiled a kernel is compared within the zoo's tolerances, and exactly otherwise.

use std::path::Path;

use ferrojit_conformance::corpus::{call_arguments, guarded, lang_dir, run_options};
use std::sync::Arc;

use ferrojit_codegen::CraneliftFusionBackend;
use ferrojit_conformance::{compare_with, require_at_least, Comparison};
use ferrojit_opt::graph_executor::{PlanOptions, SpecializingOptimizer};
use ferrojit_runtime::interpreter::RunOptions;
use ferrojit_runtime::ivalue::IValue;
use ferrojit_serialize::import::load_module;
use serde_json::Value as Json;

/// Exact agreement: no tolerance, tuples and lists as written.
const EXACT: Comparison = Comparison::models(0.0, 0.0);

/// The zoo's float32 tolerances, for programs that ran Cranelift-compiled kernels.
const COMPILED: Comparison = Comparison::models(1e-4, 1e-5);

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

fn compare_outcomes(
    plain: &Outcome,
    optimized: &Outcome,
    label: &str,
    comparison: Comparison,
) -> Result<(), String> {
    match (&plain.0, &optimized.0) {
        (Ok(a), Ok(b)) => compare_with(b, a, &format!("{label} result"), comparison)?,
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
            comparison,
        )?;
    }
    Ok(())
}

/// One way of running the optimized side.
struct Configuration {
    label: &'static str,
    options: RunOptions,
    /// The Cranelift backend, when the fuser's groups run as compiled code.
    backend: Option<Arc<CraneliftFusionBackend>>,
}

fn configurations() -> Vec<Configuration> {
    let optimized = |fuse: bool| RunOptions {
        optimizer: Some(SpecializingOptimizer::with_options(PlanOptions { fuse })),
        ..run_options()
    };
    let backend = Arc::new(CraneliftFusionBackend::default());
    vec![
        Configuration {
            label: "fusion off",
            options: optimized(false),
            backend: None,
        },
        Configuration {
            label: "fusion on, groups interpreted",
            options: optimized(true),
            backend: None,
        },
        Configuration {
            label: "fusion on, groups compiled by Cranelift",
            options: RunOptions {
                fusion_backend: Some(backend.clone()),
                ..optimized(true)
            },
            backend: Some(backend),
        },
    ]
}

/// What one program's check found under one configuration.
struct ProgramCheck {
    /// `Err(reason)` when the first call ran the general graph (the optimizer declined).
    planned: Result<(), String>,
    /// Kernels Cranelift compiled while this program ran.
    compiled_kernels: usize,
}

/// Checks one program under `configuration` against `plain`, the runs of the graph as
/// written.
fn check_program(
    program: &Json,
    plain: &[Outcome],
    configuration: &Configuration,
) -> Result<ProgramCheck, String> {
    let name = program["name"].as_str().unwrap_or("");
    let method = program["method"].as_str().unwrap_or("forward");
    let calls = program["calls"].as_array().map_or(0, Vec::len);
    let compiled_before = configuration
        .backend
        .as_ref()
        .map_or(0, |backend| backend.cache().stats().compiled);
    let (optimized, planned) = run_calls(name, method, calls, &configuration.options, 2)?;
    let compiled_kernels = configuration
        .backend
        .as_ref()
        .map_or(0, |backend| backend.cache().stats().compiled)
        - compiled_before;
    let comparison = if compiled_kernels == 0 {
        EXACT
    } else {
        COMPILED
    };
    for (position, (plain_outcome, optimized_outcome)) in plain.iter().zip(&optimized).enumerate() {
        let label = format!("call {} (run {})", position / 2, position % 2 + 1);
        compare_outcomes(plain_outcome, optimized_outcome, &label, comparison)?;
    }
    Ok(ProgramCheck {
        planned,
        compiled_kernels,
    })
}

#[test]
fn corpus_runs_the_same_optimized_and_as_written() {
    let corpus_text = std::fs::read_to_string(lang_dir().join("corpus.json"))
        .expect("tests/fixtures/lang/corpus.json exists");
    let corpus: Json = serde_json::from_str(&corpus_text).expect("corpus.json is JSON");
    let programs = corpus["programs"].as_array().expect("a program list");
    let configurations = configurations();
    let previous_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut checked = 0;
    let mut failures = Vec::new();
    let mut declined: Vec<Vec<String>> = vec![Vec::new(); configurations.len()];
    let mut programs_with_compiled_kernels = 0;
    for program in programs {
        if !matches!(program["kind"].as_str(), Some("function" | "module")) {
            continue;
        }
        let name = program["name"].as_str().unwrap_or("?");
        checked += 1;
        let result = guarded(|| {
            let method = program["method"].as_str().unwrap_or("forward");
            let calls = program["calls"].as_array().map_or(0, Vec::len);
            let (plain, _) = run_calls(name, method, calls, &run_options(), 2)?;
            let mut problems = Vec::new();
            for (index, configuration) in configurations.iter().enumerate() {
                match check_program(program, &plain, configuration) {
                    Ok(check) => {
                        if let Err(reason) = check.planned {
                            declined[index].push(format!("{name}: {reason}"));
                        }
                        if check.compiled_kernels > 0 {
                            programs_with_compiled_kernels += 1;
                        }
                    }
                    Err(problem) => problems.push(format!("{}: {problem}", configuration.label)),
                }
            }
            if problems.is_empty() {
                Ok(())
            } else {
                Err(problems.join("; "))
            }
        });
        if let Err(problem) = result {
            failures.push(format!("{name}: {problem}"));
        }
    }
    std::panic::set_hook(previous_hook);
    require_at_least("corpus programs run from archives", checked, 300).unwrap();
    println!(
        "optimized differential: {checked} programs, {} differ, \
         {programs_with_compiled_kernels} ran Cranelift-compiled kernels",
        failures.len()
    );
    for (configuration, declined) in configurations.iter().zip(&declined) {
        println!(
            "  {}: {} ran the general graph:",
            configuration.label,
            declined.len()
        );
        for line in declined {
            println!("    {line}");
        }
        // The optimizer builds a plan for every program but those it must decline; a
        // pipeline that silently declined everything would make this check vacuous.
        assert!(
            declined.len() * 20 <= checked,
            "{}: the optimizer declined {} of {checked} programs:\n{}",
            configuration.label,
            declined.len(),
            declined.join("\n")
        );
    }
    // The compiled configuration must really compile something, or it checks nothing that
    // the interpreted one does not.
    require_at_least(
        "corpus programs that ran Cranelift-compiled kernels",
        programs_with_compiled_kernels,
        1,
    )
    .unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
