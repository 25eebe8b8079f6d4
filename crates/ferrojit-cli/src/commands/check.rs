//! `ferrojit inspect --check MODEL.pt`: can this build run the model? Compiles every method
//! of every module in the tree and every function the archive defines into the
//! interpreter's code (running nothing), and lists the operators it calls that the registry
//! lacks, and any method that does not compile for another reason.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;
use std::sync::Arc;

use ferrojit_ir::Graph;
use ferrojit_runtime::{Module, OperatorRegistry, RuntimeError};
use ferrojit_serialize::import::{load_module, LoadedModule};

use super::not_a_model::model_load_error;
use super::pt2::write_stdout;

/// The outcome of checking a model: missing operators (each with the methods that call it
/// and how many calls each makes) and other compile failures (method, message).
#[derive(Debug, Default)]
pub struct CheckReport {
    pub methods_checked: usize,
    /// Operator → method → number of call sites in that method's compiled graph.
    pub missing_operators: BTreeMap<String, BTreeMap<String, usize>>,
    /// Methods whose compilation stopped at an operator whose schema torch 2.15's public
    /// list does not give (a custom operator): later calls in them went unchecked.
    pub stopped_early: BTreeMap<String, String>,
    pub failures: Vec<(String, String)>,
}

impl CheckReport {
    fn add_missing(&mut self, operator: &str, label: &str, calls: usize) {
        *self
            .missing_operators
            .entry(operator.to_string())
            .or_default()
            .entry(label.to_string())
            .or_default() += calls;
    }
}

/// At most this many load-and-compile rounds: each round gives one more missing operator a
/// stand-in schema, so a model calling more distinct missing operators than this reports
/// the rest as a compile stop (bounds the time spent on a hostile archive).
const MAX_CHECK_ROUNDS: usize = 256;

/// `inspect --check` for a TorchScript archive or program `program` of a `.pt2`.
pub fn check(model: &Path, program: &str) -> Result<(), String> {
    let report = if super::pt2::is_pt2(model) {
        check_pt2(model, program)?
    } else {
        check_archive(model)?
    };
    print_report(model, &report)
}

/// Compiles every method of a TorchScript archive. The compiler stops a method at the first
/// call of an operator it has no schema for, so each such operator (when torch 2.15's public
/// list has its schemas) gets stand-in registrations, whose kernels only fail, and the model
/// is loaded and compiled again (compiled methods, and their failures, are cached in the
/// loaded unit), until nothing new turns up: every missing operator is listed, with every
/// call, not only the first one in each method.
fn check_archive(model: &Path) -> Result<CheckReport, String> {
    // Operators given stand-ins (present in the registry, missing from this build), and
    // every operator tried, so that one whose schemas do not register is not tried again.
    let mut stand_ins: BTreeSet<String> = BTreeSet::new();
    let mut tried: BTreeSet<String> = BTreeSet::new();
    let mut rounds = 0;
    loop {
        let loaded = load_module(model).map_err(|e| model_load_error(model, &e))?;
        let report = check_loaded(&loaded, &stand_ins);
        rounds += 1;
        let new: BTreeSet<String> = report
            .stopped_early
            .values()
            .filter(|name| !tried.contains(*name))
            .filter(|name| !super::ops::pytorch_schemas_of(name).is_empty())
            .cloned()
            .collect();
        if new.is_empty() || rounds >= MAX_CHECK_ROUNDS {
            return Ok(report);
        }
        for name in new {
            if register_stand_ins(&name) {
                stand_ins.insert(name.clone());
            }
            tried.insert(name);
        }
    }
}

/// Registers torch 2.15's schemas of `name` with kernels that fail: the check process never
/// runs them, it only needs the compiler to get past the calls. Whether any registered (a
/// schema this build's parser cannot read is skipped).
fn register_stand_ins(name: &str) -> bool {
    let mut registered = false;
    for schema in super::ops::pytorch_schemas_of(name) {
        let operator = name.to_string();
        let kernel = move |_stack: &mut ferrojit_runtime::Stack| {
            Err(RuntimeError::UnknownOperator(format!(
                "{operator} (a stand-in registered by inspect --check)"
            )))
        };
        registered |= ferrojit_runtime::register_operator(schema, kernel).is_ok();
    }
    registered
}

/// Prints the report; an error (a non-zero exit) when anything is missing or fails.
fn print_report(model: &Path, report: &CheckReport) -> Result<(), String> {
    let mut text = String::new();
    for (operator, callers) in &report.missing_operators {
        let total: usize = callers.values().sum();
        let callers: Vec<String> = callers
            .iter()
            .map(|(method, calls)| format!("{method} {calls}"))
            .collect();
        let noun = if total == 1 { "call" } else { "calls" };
        text.push_str(&format!(
            "missing operator {operator}: {total} {noun} ({})\n",
            callers.join(", ")
        ));
    }
    // Left after the last round: operators with no known schema (custom ones).
    for (method, operator) in &report.stopped_early {
        text.push_str(&format!(
            "note: {method} stopped compiling at {operator}, whose schema is unknown here; \
             calls after it were not checked\n"
        ));
    }
    for (method, message) in &report.failures {
        text.push_str(&format!("cannot compile {method}: {message}\n"));
    }
    if report.missing_operators.is_empty() && report.failures.is_empty() {
        text.push_str(&format!(
            "ok: {} methods compile; every operator they call is in this build\n",
            report.methods_checked
        ));
        return write_stdout(&text);
    }
    write_stdout(&text)?;
    Err(format!(
        "{} operator(s) missing from this build, {} other compile failure(s) in {}",
        report.missing_operators.len(),
        report.failures.len(),
        model.display()
    ))
}

/// The operator calls of a `.pt2` program's graph (the top-level graph; the bodies of
/// higher-order operators are not walked) that the `.pt2` runner cannot run.
fn check_pt2(model: &Path, program: &str) -> Result<CheckReport, String> {
    let archive =
        ferrojit_export::Pt2Archive::open(model).map_err(|e| model_load_error(model, &e))?;
    let loaded = archive
        .program(program)
        .map_err(|e| model_load_error(model, &e))?;
    let mut report = CheckReport {
        methods_checked: 1,
        ..CheckReport::default()
    };
    for node in &loaded.graph_module.graph.nodes {
        let Some(rest) = node.target.strip_prefix("torch.ops.") else {
            continue;
        };
        let mut parts = rest.splitn(3, '.');
        let (Some(namespace), Some(name)) = (parts.next(), parts.next()) else {
            continue;
        };
        if namespace == "higher_order" {
            continue;
        }
        let full_name = match parts.next() {
            None | Some("default") => format!("{namespace}::{name}"),
            Some(overload) => format!("{namespace}::{name}.{overload}"),
        };
        if !ferrojit_export::fallback::runs_operator(&full_name) {
            report.add_missing(&full_name, &format!("program '{program}'"), 1);
        }
    }
    Ok(report)
}

/// Compiles every method and function of a loaded model, collecting what is missing.
/// `stand_ins` are operators registered by [`register_stand_ins`]: present in the registry,
/// yet missing from this build.
pub fn check_loaded(loaded: &LoadedModule, stand_ins: &BTreeSet<String>) -> CheckReport {
    let mut report = CheckReport::default();
    let registry = OperatorRegistry::global();
    let mut seen_classes = HashSet::new();
    let mut modules: Vec<Module> = vec![loaded.module.clone()];
    while let Some(module) = modules.pop() {
        modules.extend(module.named_children().into_iter().map(|(_, child)| child));
        let class = module.class().clone();
        if !seen_classes.insert(class.qualified_name().to_string()) {
            continue;
        }
        let mut names = class.method_names();
        names.sort();
        for name in names {
            let label = format!("{}.{name}", readable(class.qualified_name()));
            let graph = loaded
                .unit
                .method(&class, &name)
                .and_then(|function| function.graph(&loaded.unit));
            report.methods_checked += 1;
            match graph {
                Ok(graph) => check_graph(&graph, &label, registry, stand_ins, &mut report),
                Err(error) => record_failure(&error.to_string(), &label, &mut report),
            }
        }
    }
    for name in loaded.unit.function_names() {
        let graph = loaded
            .unit
            .function(&name)
            .and_then(|function| function.graph(&loaded.unit));
        report.methods_checked += 1;
        let label = readable(&name);
        match graph {
            Ok(graph) => check_graph(&graph, &label, registry, stand_ins, &mut report),
            Err(error) => record_failure(&error.to_string(), &label, &mut report),
        }
    }
    report
}

/// A frontend error that is an unknown builtin names the operator; anything else is a
/// failure of its own.
fn record_failure(message: &str, label: &str, report: &mut CheckReport) {
    const UNKNOWN: &str = "Unknown builtin op: ";
    if let Some(rest) = message.split(UNKNOWN).nth(1) {
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | ':' | '.'))
            .collect();
        let name = name.trim_end_matches('.').to_string();
        report.add_missing(&name, label, 1);
        report.stopped_early.insert(label.to_string(), name);
        return;
    }
    let first_line = message.lines().next().unwrap_or(message).to_string();
    report.failures.push((label.to_string(), first_line));
}

/// Every operator node of a compiled graph checked against the registry (all of them, not
/// only the first the interpreter's compiler would stop at), then the compiler itself.
fn check_graph(
    graph: &Arc<Graph>,
    label: &str,
    registry: &OperatorRegistry,
    stand_ins: &BTreeSet<String>,
    report: &mut CheckReport,
) {
    let mut found_missing = false;
    for node in graph.all_nodes() {
        let data = graph.node(node);
        let missing = match &data.schema {
            Some(schema) => {
                let full_name = schema.full_name();
                (stand_ins.contains(&schema.name) || registry.lookup(&full_name).is_none())
                    .then_some(full_name)
            }
            None if data.kind.namespace() != "prim" => {
                let name = data.kind.as_str();
                registry
                    .overloads(name)
                    .is_empty()
                    .then(|| name.to_string())
            }
            None => None,
        };
        if let Some(name) = missing {
            found_missing = true;
            report.add_missing(&name, label, 1);
        }
    }
    match ferrojit_runtime::interpreter::compile(graph) {
        Ok(_) => {}
        Err(RuntimeError::UnknownOperator(name)) => {
            let name = name.split(' ').next().unwrap_or(&name).to_string();
            report.add_missing(&name, label, 1);
        }
        // Already listed above: the compiler stopped at one of them.
        Err(_) if found_missing => {}
        Err(error) => report.failures.push((label.to_string(), error.to_string())),
    }
}

/// A class or function name as a user wrote it: without `__torch__.` and mangling parts.
fn readable(qualified: &str) -> String {
    super::inspect::readable_class_name(qualified)
}
