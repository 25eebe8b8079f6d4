//! The file-test runner for passes and the interpreter (Cranelift's `filetests`, PyTorch's
//! FileCheck tests). A test file is directives, then one graph in PyTorch's text form:
//!
//! ```text
//! # RUN: pass cleanup[, other_pass…]   run passes, print, FileCheck the output
//! # RUN: interpret                     run the graph on each ARGS, compare with EXPECT
//! # RUN: differential cleanup[, …]     run the graph before and after the passes on
//! #                                    each ARGS; outputs and inputs must agree bit for bit
//! # ARGS: 3, tensor([1.0, 2.0])        one run's positional inputs (see `literals`)
//! # EXPECT: tensor([4.0, 5.0])         that run's outputs (a tuple when several)
//! # CHECK…: …                          FileCheck directives, run on the printed output
//! graph(…)
//! # CALLEE: NAME                       (any number) the graph that follows is callee NAME,
//! graph(…)                             which `inline` may inline: a function by the name
//!                                      its call gives, a method as `CLASS.METHOD`
//! ```
//!
//! Every graph is verified before and after each pass, and the printed output must parse and
//! print back identically. A `pass` test's output must also equal, byte for byte, one exact
//! expectation when present: `NAME.expected.ir` (what PyTorch's own pass printed, written by
//! `tests/fixtures/passes/generate.py`; the runner never writes these) or `NAME.blessed.ir`
//! (for passes PyTorch has no counterpart of: a reviewed expectation that running with
//! `FERROJIT_BLESS=1` rewrites from the current output).

use std::path::Path;

use ferrojit_ir::filecheck::run_directives;
use ferrojit_ir::{parse_graph, verifier::verify, Graph};
use ferrojit_runtime::{run_graph, IValue, NoMethods};

use crate::literals::{deep_copy, identical, parse_literals};

/// What a test file asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestKind {
    /// Run these passes and check the printed result.
    Pass(Vec<String>),
    /// Run the graph and compare its outputs with the `# EXPECT:` lines.
    Interpret,
    /// Run the graph before and after these passes and compare the two runs.
    Differential(Vec<String>),
}

/// A parsed test file.
#[derive(Debug)]
pub struct TestFile {
    pub kind: TestKind,
    /// The FileCheck directives (`# CHECK…` lines), as one text.
    pub directives: String,
    /// Each `# ARGS:` line's values.
    pub runs: Vec<Vec<IValue>>,
    /// Each `# EXPECT:` line's values, in the order of the runs.
    pub expected: Vec<Vec<IValue>>,
    pub graph: Graph,
    /// The `# CALLEE:` graphs, by name, for the `inline` pass.
    pub callees: crate::inliner::CalleeTable,
}

/// Parses a test file's text.
pub fn parse_test_file(text: &str) -> Result<TestFile, String> {
    let mut kind = None;
    let mut directives = String::new();
    let mut runs = Vec::new();
    let mut expected = Vec::new();
    let mut graph_lines = Vec::new();
    let (text, callee_sections) = crate::inliner::split_callee_sections(text);
    for line in text.lines() {
        if let Some(run) = line.strip_prefix("# RUN:") {
            if kind.is_some() {
                return Err("more than one `# RUN:` line".to_string());
            }
            kind = Some(parse_kind(run.trim())?);
        } else if let Some(args) = line.strip_prefix("# ARGS:") {
            runs.push(parse_literals(args).map_err(|e| format!("# ARGS: {e}"))?);
        } else if let Some(outputs) = line.strip_prefix("# EXPECT:") {
            expected.push(parse_literals(outputs).map_err(|e| format!("# EXPECT: {e}"))?);
        } else if line.starts_with('#') {
            directives.push_str(line);
            directives.push('\n');
        } else {
            graph_lines.push(line);
        }
    }
    let kind = kind.ok_or("no `# RUN:` line")?;
    match &kind {
        TestKind::Pass(_) if !runs.is_empty() || !expected.is_empty() => {
            return Err("a `pass` test takes no ARGS or EXPECT lines".to_string())
        }
        TestKind::Interpret if runs.is_empty() || runs.len() != expected.len() => {
            return Err(format!(
                "an `interpret` test needs one EXPECT line per ARGS line ({} ARGS, {} EXPECT)",
                runs.len(),
                expected.len()
            ))
        }
        TestKind::Differential(_) if runs.is_empty() || !expected.is_empty() => {
            return Err("a `differential` test needs ARGS lines and no EXPECT lines".to_string())
        }
        _ => {}
    }
    let graph = parse_graph(&(graph_lines.join("\n") + "\n"))
        .map_err(|e| format!("input does not parse: {e}"))?;
    verify(&graph).map_err(|e| format!("input does not verify: {e}"))?;
    let callees = crate::inliner::CalleeTable::parse_sections(&callee_sections)?;
    Ok(TestFile {
        kind,
        directives,
        runs,
        expected,
        graph,
        callees,
    })
}

fn parse_kind(text: &str) -> Result<TestKind, String> {
    let (word, rest) = text.split_once(' ').unwrap_or((text, ""));
    let passes = || -> Result<Vec<String>, String> {
        let names: Vec<String> = rest
            .split(',')
            .map(|name| name.trim().to_string())
            .filter(|name| !name.is_empty())
            .collect();
        if names.is_empty() {
            return Err(format!("`# RUN: {word}` names no pass"));
        }
        for name in &names {
            if crate::find_pass(name).is_none() {
                let known: Vec<&str> = crate::PASSES.iter().map(|pass| pass.name).collect();
                return Err(format!(
                    "unknown pass '{name}'; the passes are: {}",
                    known.join(", ")
                ));
            }
        }
        Ok(names)
    };
    match word {
        "pass" => Ok(TestKind::Pass(passes()?)),
        "differential" => Ok(TestKind::Differential(passes()?)),
        "interpret" if rest.trim().is_empty() => Ok(TestKind::Interpret),
        _ => Err(format!(
            "unknown test kind `{text}`: expected `pass NAMES`, `interpret` or `differential NAMES`"
        )),
    }
}

/// Runs `passes` in order, verifying the graph after each one whatever the build. `inline`
/// inlines the test's `# CALLEE:` graphs.
fn run_passes(
    passes: &[String],
    graph: &mut Graph,
    callees: &crate::inliner::CalleeTable,
) -> Result<(), String> {
    for name in passes {
        crate::inliner::run_pass_with_callees(name, graph, callees)?;
        verify(graph).map_err(|e| format!("{name} broke an invariant: {e}"))?;
    }
    Ok(())
}

/// Runs `graph` on copies of `inputs`, returning the outputs and the inputs as the run left
/// them (so that a pass that changes what a graph writes into its inputs is caught).
fn interpret(graph: &Graph, inputs: &[IValue]) -> Result<(Vec<IValue>, Vec<IValue>), String> {
    let copies: Vec<IValue> = inputs.iter().map(deep_copy).collect::<Result<_, _>>()?;
    let outputs =
        run_graph(graph, copies.clone(), &NoMethods).map_err(|error| error.to_string())?;
    Ok((outputs, copies))
}

/// Runs the test file at `path`. With `bless`, a `pass` test without a PyTorch expectation
/// (re)writes its `NAME.blessed.ir` from the output instead of comparing with it.
pub fn run_test_file(path: &Path, bless: bool) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut test = parse_test_file(&text)?;
    match test.kind.clone() {
        TestKind::Interpret => {
            for (index, (inputs, expected)) in test.runs.iter().zip(&test.expected).enumerate() {
                let (outputs, _) = interpret(&test.graph, inputs)?;
                let outputs = IValue::tuple(outputs);
                let expected = IValue::tuple(expected.clone());
                identical(&outputs, &expected, &format!("run {index} outputs"))?;
            }
            Ok(())
        }
        TestKind::Differential(passes) => {
            let before: Vec<_> = test
                .runs
                .iter()
                .map(|inputs| interpret(&test.graph, inputs))
                .collect::<Result<_, _>>()?;
            run_passes(&passes, &mut test.graph, &test.callees)?;
            check_printed_output(&test.graph, &test.directives)?;
            for (index, (inputs, (outputs, inputs_after))) in
                test.runs.iter().zip(before).enumerate()
            {
                let (optimized, optimized_inputs) = interpret(&test.graph, inputs)?;
                identical(
                    &IValue::tuple(optimized),
                    &IValue::tuple(outputs),
                    &format!("run {index} outputs (optimized against unoptimized)"),
                )?;
                identical(
                    &IValue::tuple(optimized_inputs),
                    &IValue::tuple(inputs_after),
                    &format!("run {index} inputs after the run"),
                )?;
            }
            Ok(())
        }
        TestKind::Pass(passes) => {
            run_passes(&passes, &mut test.graph, &test.callees)?;
            let output = check_printed_output(&test.graph, &test.directives)?;
            let has_expectation = path.with_extension("expected.ir").exists()
                || path.with_extension("blessed.ir").exists();
            if test.directives.is_empty() && !has_expectation && !bless {
                return Err(
                    "a `pass` test checks nothing: it has no CHECK directives and no \
                            NAME.expected.ir or NAME.blessed.ir"
                        .to_string(),
                );
            }
            compare_with_expectation(path, &output, bless)
        }
    }
}

/// Prints `graph`, checks that the text parses and prints back identically, runs the
/// FileCheck directives on it, and returns it.
fn check_printed_output(graph: &Graph, directives: &str) -> Result<String, String> {
    let output = graph.to_ir_string();
    let reparsed = parse_graph(&output).map_err(|e| format!("output does not parse: {e}"))?;
    if reparsed.to_ir_string() != output {
        return Err("output does not print back identically".to_string());
    }
    if !directives.is_empty() {
        run_directives(directives, &output).map_err(|e| e.message)?;
    }
    Ok(output)
}

fn compare_with_expectation(path: &Path, output: &str, bless: bool) -> Result<(), String> {
    let expected = path.with_extension("expected.ir");
    let blessed = path.with_extension("blessed.ir");
    if expected.exists() {
        let expected = std::fs::read_to_string(&expected).map_err(|e| e.to_string())?;
        if output != expected {
            return Err(format!(
                "differs from PyTorch's output\n--- PyTorch\n{expected}--- ferrojit\n{output}"
            ));
        }
    } else if bless {
        std::fs::write(&blessed, output).map_err(|e| e.to_string())?;
    } else if blessed.exists() {
        let blessed_text = std::fs::read_to_string(&blessed).map_err(|e| e.to_string())?;
        if output != blessed_text {
            return Err(format!(
                "differs from {} (rerun with FERROJIT_BLESS=1 if the change is intended)\n\
                 --- blessed\n{blessed_text}--- now\n{output}",
                blessed.display()
            ));
        }
    }
    Ok(())
}
