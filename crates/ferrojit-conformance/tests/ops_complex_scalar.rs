//! TorchScript's `complex` scalar (issue 20) against what PyTorch computed
//! (tests/fixtures/ops_complex_scalar, made by generate.py there):
//! (a) the jit operators on complex numbers, called as torch.ops called them, refusals with
//! PyTorch's messages included (operators.pt);
//! (b) small programs using complex literals, arithmetic, `cmath`, `str`, lists, dicts with
//! complex keys and complex module attributes, each loaded from PyTorch's `torch.jit.save`
//! archive and, for functions, compiled from its source text too and parsed from PyTorch's
//! IR text, which must print back as PyTorch printed it (programs.pt);
//! (c) a module with complex attributes saved by ferrojit and loaded again.

use std::sync::Arc;

use ferrojit_conformance::corpus::{guarded, run_options};
use ferrojit_conformance::{compare, repo_root, run_case_file, CaseFileOptions};
use ferrojit_frontend::compile_source;
use ferrojit_ir::parse_graph;
use ferrojit_runtime::interpreter::{run_graph_with_options, run_shared_graph};
use ferrojit_runtime::ivalue::{DictValue, IValue};
use ferrojit_runtime::module::{coerce_call_arguments, single_result};
use ferrojit_runtime::object::NoMethods;
use ferrojit_serialize::export::save_module_to_bytes;
use ferrojit_serialize::import::{
    load_module, load_module_from_bytes, CompiledMethods, RegistrySchemas,
};
use ferrojit_serialize::torch_save;

fn fixture_dir() -> std::path::PathBuf {
    repo_root().join("tests/fixtures/ops_complex_scalar")
}

#[test]
fn complex_scalar_operators_match_pytorch() {
    let report = run_case_file(
        &fixture_dir().join("operators.pt"),
        &CaseFileOptions {
            minimum_cases: 200,
            copy_arguments: false,
            known_message_differences: &[],
            known_missing_operators: &[],
        },
    );
    report.assert_all_passed("operators.pt");
    assert_eq!(
        report.exact_error_messages, report.error_cases,
        "every refusal must carry PyTorch's message"
    );
}

fn field(record: &DictValue, name: &str) -> Result<IValue, String> {
    record
        .get(&IValue::string(name))
        .ok_or_else(|| format!("the record has no `{name}`"))
}

/// One recorded call: its arguments, and PyTorch's result or the last line of its error.
struct Call {
    args: Vec<IValue>,
    expected: Result<IValue, String>,
}

fn calls_of(record: &DictValue) -> Result<Vec<Call>, String> {
    let calls = field(record, "calls")?;
    let calls = calls.to_list().map_err(|e| e.to_string())?;
    let mut result = Vec::new();
    for call in calls.to_vec() {
        let call = call.to_dict().map_err(|e| e.to_string())?.clone();
        let args = field(&call, "args")?
            .to_tuple()
            .map_err(|e| e.to_string())?
            .items
            .clone();
        let expected = match call.get(&IValue::string("expected")) {
            Some(value) => Ok(value),
            None => Err(field(&call, "error")?
                .to_str()
                .map_err(|e| e.to_string())?
                .to_string()),
        };
        result.push(Call { args, expected });
    }
    Ok(result)
}

/// PyTorch's error line is `Kind: message`; ferrojit's error must contain the message.
fn check(outcome: Result<IValue, String>, expected: &Result<IValue, String>) -> Result<(), String> {
    match (outcome, expected) {
        (Ok(actual), Ok(expected)) => compare(&actual, expected, "result"),
        (Err(error), Ok(_)) => Err(format!("ferrojit failed: {error}")),
        (Ok(actual), Err(message)) => Err(format!(
            "PyTorch raised '{message}' but ferrojit returned {}",
            actual.python_repr()
        )),
        (Err(error), Err(message)) => {
            let wanted = message
                .split_once(": ")
                .map_or(message.as_str(), |(_, m)| m);
            if error.contains(wanted) {
                Ok(())
            } else {
                Err(format!("ferrojit raised '{error}', PyTorch '{message}'"))
            }
        }
    }
}

fn run_from_archive(name: &str, calls: &[Call]) -> Result<(), String> {
    let path = fixture_dir().join(format!("programs/{name}.pt"));
    let loaded = load_module(&path).map_err(|e| format!("load failed: {e}"))?;
    for (index, call) in calls.iter().enumerate() {
        let outcome = loaded
            .module
            .run_method_with_options("forward", call.args.clone(), &run_options())
            .map_err(|e| e.to_string());
        check(outcome, &call.expected).map_err(|e| format!("call {index}: {e}"))?;
    }
    Ok(())
}

fn run_from_source(source: &str, calls: &[Call]) -> Result<(), String> {
    let unit = compile_source(source, RegistrySchemas::builtins())
        .map_err(|e| format!("compile failed: {e}"))?;
    let unit = Arc::new(unit);
    let function = unit
        .function("__torch__.fn")
        .map_err(|e| format!("compile failed: {e}"))?;
    let graph = function
        .graph(&unit)
        .map_err(|e| format!("compile failed: {e}"))?;
    let methods = CompiledMethods::new(unit.clone());
    for (index, call) in calls.iter().enumerate() {
        let mut args = call.args.clone();
        coerce_call_arguments(&graph, &mut args);
        let outcome = run_shared_graph(&graph, args, methods.as_ref(), &run_options())
            .map(single_result)
            .map_err(|e| e.to_string());
        check(outcome, &call.expected).map_err(|e| format!("call {index}: {e}"))?;
    }
    Ok(())
}

/// PyTorch's graph parsed by ferrojit prints back line for line (complex constants as
/// `prim::Constant[value=1.+2.j]()`), and runs to PyTorch's results.
fn run_from_ir(text: &str, calls: &[Call]) -> Result<(), String> {
    let graph = parse_graph(text).map_err(|e| format!("parse failed: {e}"))?;
    let printed = graph.to_string();
    for (ours, theirs) in printed.lines().zip(text.lines()) {
        if ours.trim_end() != theirs.trim_end() {
            return Err(format!("prints `{ours}`, PyTorch `{theirs}`"));
        }
    }
    for (index, call) in calls.iter().enumerate() {
        let mut args = call.args.clone();
        coerce_call_arguments(&graph, &mut args);
        let outcome = run_graph_with_options(&graph, args, &NoMethods, &run_options())
            .map(single_result)
            .map_err(|e| e.to_string());
        check(outcome, &call.expected).map_err(|e| format!("call {index}: {e}"))?;
    }
    Ok(())
}

#[test]
fn complex_programs_run_like_pytorch() {
    let records = torch_save::load_file(&fixture_dir().join("programs.pt")).expect("programs.pt");
    let records = records.to_list().expect("a list of programs").to_vec();
    assert!(records.len() >= 20, "only {} programs", records.len());
    let mut failures = Vec::new();
    let mut from_source = 0;
    for record in &records {
        let record = record.to_dict().expect("a program record").clone();
        let name = field(&record, "name")
            .and_then(|n| n.to_str().map(str::to_string).map_err(|e| e.to_string()))
            .expect("a program name");
        let calls = match calls_of(&record) {
            Ok(calls) => calls,
            Err(error) => {
                failures.push(format!("{name}: {error}"));
                continue;
            }
        };
        if let Err(error) = guarded(|| run_from_archive(&name, &calls)) {
            failures.push(format!("{name} (archive): {error}"));
        }
        if let Ok(IValue::Str(text)) = field(&record, "graph") {
            if let Err(error) = guarded(|| run_from_ir(&text, &calls)) {
                failures.push(format!("{name} (IR text): {error}"));
            }
        }
        if let Ok(IValue::Str(source)) = field(&record, "source") {
            from_source += 1;
            if let Err(error) = guarded(|| run_from_source(&source, &calls)) {
                failures.push(format!("{name} (source): {error}"));
            }
        }
    }
    assert!(from_source >= 19, "only {from_source} programs have source");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// ferrojit writes complex attributes as Python pickles them (`builtins.complex(re, im)`)
/// and reads its own archive back to the same values and results.
#[test]
fn complex_attributes_survive_a_ferrojit_save() {
    let path = fixture_dir().join("programs/complex_attribute.pt");
    let original = load_module(&path).expect("PyTorch's archive loads");
    let bytes = save_module_to_bytes(&original.module, &original.unit, "archive")
        .expect("ferrojit saves the module");
    let reloaded = load_module_from_bytes(bytes).expect("ferrojit's archive loads");
    for name in ["c", "values"] {
        let before = original.module.object().get_attr(name).expect("attribute");
        let after = reloaded.module.object().get_attr(name).expect("attribute");
        assert!(
            after.equals(&before).unwrap_or(false),
            "{name}: {} after the save, {} before",
            after.python_repr(),
            before.python_repr()
        );
    }
    let args = vec![IValue::Double(2.0)];
    let before = original
        .module
        .run_method("forward", args.clone())
        .expect("runs");
    let after = reloaded.module.run_method("forward", args).expect("runs");
    compare(&after, &before, "forward").expect("the same result after the save");
}

/// Programs PyTorch refuses to compile (no implicit int/float to complex conversion inside
/// TorchScript): ferrojit refuses them with PyTorch's message.
#[test]
fn complex_conversions_are_refused_as_pytorch_refuses_them() {
    let records = torch_save::load_file(&fixture_dir().join("rejected.pt")).expect("rejected.pt");
    let records = records.to_list().expect("a list of programs").to_vec();
    assert!(records.len() >= 5, "only {} programs", records.len());
    let mut failures = Vec::new();
    for record in &records {
        let record = record.to_dict().expect("a program record").clone();
        let text = |key: &str| {
            field(&record, key)
                .and_then(|v| v.to_str().map(str::to_string).map_err(|e| e.to_string()))
                .expect("a string field")
        };
        let (name, source, message) = (text("name"), text("source"), text("rejected"));
        let outcome = compile_source(&source, RegistrySchemas::builtins()).and_then(|unit| {
            let function = unit.function("__torch__.fn")?;
            function.graph(&unit).map(|_| ())
        });
        match outcome {
            Ok(()) => failures.push(format!("{name}: compiled, PyTorch refuses: {message}")),
            Err(error) if error.to_string().contains(&message) => {}
            Err(error) => failures.push(format!("{name}: '{error}', PyTorch '{message}'")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
