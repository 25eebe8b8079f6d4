//! ferrojit's torch.nn.functional prelude against real PyTorch: the cases of
//! tests/fixtures/functional_prelude/cases.pt (written by generate.py there) reach the
//! functions through `import torch.nn.functional as F`, `from torch.nn import functional as
//! Fn` and the full module path, with keyword arguments, defaults (one int for a
//! `BroadcastingList`), `boolean_dispatch` by a constant flag, and arguments PyTorch's checks
//! refuse, whose messages ferrojit must repeat.

use std::sync::Arc;

use ferrojit_conformance::opinfo::{
    check_outcome, load_opinfo_cases, OpInfoCase, RunFailure, ScriptedMethod,
};
use ferrojit_conformance::{fresh_copy, repo_root};
use ferrojit_frontend::source::SourceFile;
use ferrojit_frontend::CompilationUnit;
use ferrojit_runtime::ivalue::IValue;
use ferrojit_serialize::import::RegistrySchemas;
use ferrojit_tensor::Tensor;

/// The number of cases generate.py writes: a truncated fixture must not pass by checking less.
const CASES: usize = 28;

fn cases() -> Vec<OpInfoCase> {
    let path = repo_root().join("tests/fixtures/functional_prelude/cases.pt");
    load_opinfo_cases(&path).expect("functional_prelude/cases.pt loads")
}

/// Compiles the case's source and runs `the_method` on its inputs.
fn run_case(case: &OpInfoCase) -> Result<IValue, RunFailure> {
    let method = ScriptedMethod::compile(&case.source)?;
    method.run(case.inputs.iter().map(fresh_copy).collect())
}

#[test]
fn functional_calls_match_pytorch_values_and_messages() {
    let cases = cases();
    assert_eq!(cases.len(), CASES, "cases.pt holds {} cases", cases.len());
    let mut problems = Vec::new();
    for case in &cases {
        let outcome = run_case(case);
        if case.name.starts_with("compile_error/") {
            // PyTorch refused to script the source: ferrojit must refuse it with its message.
            let expected = case.expected.as_ref().expect_err("a refusal has a message");
            match outcome {
                Err(RunFailure::Compile(message)) if message.contains(expected.as_str()) => {}
                other => problems.push(format!(
                    "{}: expected the compile error '{expected}', got {other:?}",
                    case.name
                )),
            }
            continue;
        }
        // Where PyTorch raised, ferrojit must raise PyTorch's message.
        if let (Err(expected), Err(RunFailure::Run(ours))) = (&case.expected, &outcome) {
            if !ours.contains(expected.as_str()) {
                problems.push(format!(
                    "{}: raised '{ours}', PyTorch raised '{expected}'",
                    case.name
                ));
            }
            continue;
        }
        if let Err(failure) = check_outcome(case, outcome) {
            problems.push(format!("{}: {failure:?}", case.name));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Compiles `source` as the archive file `__torch__`, whose loader also serves
/// `__torch__.torch.nn.functional` from `functional` when given, and runs `the_method` on
/// a small tensor.
fn run_with_archive_functional(source: &str, functional: Option<&'static str>) -> Vec<f32> {
    let mut unit = CompilationUnit::new(RegistrySchemas::builtins());
    unit.set_source_loader(Box::new(move |qualifier: &str| {
        (qualifier == "__torch__.torch.nn.functional")
            .then_some(functional)
            .flatten()
            .map(|text| SourceFile::new("code/__torch__/torch/nn/functional.py", text))
    }));
    unit.define_source(SourceFile::new("code/__torch__.py", source), "__torch__")
        .expect("the file parses");
    let method = ScriptedMethod::from_unit(Arc::new(unit)).expect("the_method compiles");
    let input = IValue::from(Tensor::from_vec(vec![-2.0f32, 0.5, 7.0], &[3]).expect("a tensor"));
    let result = method.run(vec![input]).expect("the_method runs");
    let tensor = result.to_tensor().expect("a tensor");
    tensor.to_vec::<f32>().expect("float values")
}

#[test]
fn archive_definitions_of_functional_names_are_not_shadowed() {
    // An archive's own torch/nn/functional.py (here one whose relu6 adds 100, so the two
    // cannot be mistaken) keeps serving both its qualified calls and the module path.
    let archived = "def relu6(input: Tensor, inplace: bool=False) -> Tensor:\n    return torch.add(input, 100)\n";
    let by_qualified_name =
        "def the_method(x):\n    return __torch__.torch.nn.functional.relu6(x)\n";
    let by_module_path = "def the_method(x):\n    return torch.nn.functional.relu6(x)\n";
    assert_eq!(
        run_with_archive_functional(by_qualified_name, Some(archived)),
        vec![98.0, 100.5, 107.0]
    );
    assert_eq!(
        run_with_archive_functional(by_module_path, Some(archived)),
        vec![98.0, 100.5, 107.0]
    );
    // Without such a file the module path reaches the prelude (PyTorch's relu6).
    assert_eq!(
        run_with_archive_functional(by_module_path, None),
        vec![0.0, 0.5, 6.0]
    );
}
