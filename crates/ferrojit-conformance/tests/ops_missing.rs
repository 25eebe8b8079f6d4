//! The last missing ATen operators and the kernels issue 20 found wrong, against cases PyTorch
//! computed (tests/fixtures/ops_missing, made by generate.py there): the Bessel functions
//! J0/J1/Y0/Y1 in float32 and float64, `_masked_softmax`, `_trilinear`, `glu_jvp`,
//! `_upsample_nearest_exact3d`, `embedding_renorm(_)`,
//! `batch_norm_update_stats` (its running statistics too), `slice_scatter`, `narrow.Tensor`,
//! the tensor queries, the metadata queries and runtime assertions (`alias`, `sym_size.int`,
//! `_assert_scalar`, `_assert_tensor_metadata`, ...), `ldexp_`/`polygamma_`/`fill_diagonal_`,
//! `_safe_softmax`, the batch-norm variants (`_native_batch_norm_legit_no_training`, ...) and
//! `_convolution_mode`, uint8 bilinear/bicubic resizing, `abs` of complex numbers (through
//! `isclose`), `_unique` with sorted=False, `view_copy.dtype`, `slice_inverse`, `is_set_to`,
//! `_test_serialization_subcmul`, `convolution_overrideable`'s CPU refusal, and the
//! random operators `native_dropout` and the `rrelu` family, whose training-mode draws must
//! match PyTorch's after the same seed; and TorchScript functions compiled by ferrojit's
//! frontend (einsum's sublist form, `1 - x`, `torch.stft`, `multilabel_soft_margin_loss`,
//! `float`/`int` of a complex number) against PyTorch running the same source.

use ferrojit_conformance::{
    compare, fresh_copy, kernel_refusal, load_cases, repo_root, require_at_least, run_case,
    run_case_file, CaseFileOptions, KnownMessageDifference, OpCase,
};
use ferrojit_runtime::ivalue::IValue;
use ferrojit_tensor::ops::random::manual_seed;

/// What generate.py seeds PyTorch with before random case `i`: this base plus `i`.
const RANDOM_SEED_BASE: u64 = 1000;

#[test]
fn missing_operators_match_pytorch() {
    let report = run_case_file(
        &repo_root().join("tests/fixtures/ops_missing/cases.pt"),
        &CaseFileOptions {
            minimum_cases: 368,
            copy_arguments: true,
            known_message_differences: &[KnownMessageDifference {
                pytorch: "\"compute_indices_weights_linear\"",
                ferrojit: "\"upsample\"",
                reason: "ATen names its linear index helper when 1-d linear resizing refuses uint8",
            }],
            known_missing_operators: &[],
        },
    );
    report.assert_all_passed("ops_missing/cases.pt");
}

/// The cases whose arguments' strides and storage offsets matter (the symbolic-shape
/// queries, `alias`, `_reshape_alias`, `fill_diagonal_` of a transposed matrix): run on the
/// arguments as loaded, views included.
#[test]
fn view_arguments_match_pytorch() {
    let report = run_case_file(
        &repo_root().join("tests/fixtures/ops_missing/views.pt"),
        &CaseFileOptions {
            minimum_cases: 41,
            copy_arguments: false,
            known_message_differences: &[],
            known_missing_operators: &[],
        },
    );
    report.assert_all_passed("ops_missing/views.pt");
}

/// Operators that write into their arguments (the running statistics of the batch-norm
/// family, the in-place forms): each case's expected value is PyTorch's (results, arguments
/// after the call), and ferrojit's is built the same way from copies of the arguments.
#[test]
fn arguments_written_in_place_match_pytorch() {
    let path = repo_root().join("tests/fixtures/ops_missing/arguments_after.pt");
    let cases = load_cases(&path).unwrap_or_else(|error| panic!("{error}"));
    require_at_least("ops_missing/arguments_after.pt", cases.len(), 16)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut failures = Vec::new();
    for case in &cases {
        let label = format!("{} ({})", case.name, case.op);
        let args: Vec<IValue> = case.args.iter().map(fresh_copy).collect();
        let kwargs: Vec<(String, IValue)> = case
            .kwargs
            .iter()
            .map(|(name, value)| (name.clone(), fresh_copy(value)))
            .collect();
        let outcome = run_case(&OpCase {
            args: args.clone(),
            kwargs,
            ..case.clone()
        });
        match (&case.expected, outcome) {
            (Ok(expected), Ok(actual)) => {
                // The copies share their tensors with what the operator was given.
                let actual = IValue::tuple(vec![actual, IValue::tuple(args)]);
                if let Err(difference) = compare(&actual, expected, &label) {
                    failures.push(difference);
                }
            }
            (Ok(_), Err(error)) => failures.push(format!("{label}: ferrojit failed: {error}")),
            (Err(message), _) => failures.push(format!("{label}: an error case ({message})")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Each random case runs right after `manual_seed(RANDOM_SEED_BASE + i)`, as PyTorch did.
/// This is the only test of this file that draws, so the default generator is not shared
/// with a concurrently running test.
#[test]
fn random_operators_match_pytorch_draw_for_draw() {
    let path = repo_root().join("tests/fixtures/ops_missing/random.pt");
    let cases = load_cases(&path).unwrap_or_else(|error| panic!("{error}"));
    require_at_least("ops_missing/random.pt", cases.len(), 19).unwrap_or_else(|e| panic!("{e}"));
    let mut failures = Vec::new();
    for (index, case) in cases.iter().enumerate() {
        manual_seed(RANDOM_SEED_BASE + index as u64);
        let label = format!("{} ({})", case.name, case.op);
        match (&case.expected, run_case(case)) {
            (Ok(expected), Ok(actual)) => {
                if let Err(difference) = compare(&actual, expected, &label) {
                    failures.push(difference);
                }
            }
            (Ok(_), Err(error)) => failures.push(format!("{label}: ferrojit failed: {error}")),
            (Err(message), Ok(actual)) => failures.push(format!(
                "{label}: PyTorch raised '{message}' but ferrojit returned {}",
                actual.python_repr()
            )),
            (Err(message), Err(error)) => match kernel_refusal(&error) {
                Ok(ours) if ours == *message => {}
                Ok(ours) => failures.push(format!(
                    "{label}: ferrojit raised '{ours}', PyTorch '{message}'"
                )),
                Err(difference) => failures.push(format!("{label}: {difference}")),
            },
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} random cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

fn dict_field(dict: &IValue, name: &str) -> Option<IValue> {
    dict.to_dict().ok()?.get(&IValue::string(name))
}

/// Each script is compiled from source by ferrojit's frontend and run on PyTorch's inputs:
/// its result must match PyTorch's, or its error end with PyTorch's message.
#[test]
fn scripts_compiled_by_the_frontend_match_pytorch() {
    use std::sync::Arc;

    use ferrojit_conformance::corpus::run_options;
    use ferrojit_conformance::load_case_list;
    use ferrojit_frontend::compile_source;
    use ferrojit_runtime::interpreter::run_shared_graph;
    use ferrojit_runtime::module::single_result;
    use ferrojit_serialize::import::{CompiledMethods, RegistrySchemas};

    let path = repo_root().join("tests/fixtures/ops_missing/scripts.pt");
    let scripts = load_case_list(&path).unwrap_or_else(|error| panic!("{error}"));
    require_at_least("ops_missing/scripts.pt", scripts.len(), 10).unwrap_or_else(|e| panic!("{e}"));
    let mut failures = Vec::new();
    for script in &scripts {
        let text = |name: &str| {
            dict_field(script, name)
                .and_then(|value| value.to_str().ok().map(str::to_string))
                .unwrap_or_else(|| panic!("a script without '{name}'"))
        };
        let (name, source, entry) = (text("name"), text("source"), text("entry"));
        let unit = match compile_source(&source, RegistrySchemas::builtins()) {
            Ok(unit) => Arc::new(unit),
            Err(error) => {
                failures.push(format!("{name}: does not compile: {error}"));
                continue;
            }
        };
        let function = unit.function(&format!("__torch__.{entry}")).unwrap();
        let graph = function.graph(&unit).unwrap();
        let methods = CompiledMethods::new(unit.clone());
        let inputs = dict_field(script, "inputs")
            .and_then(|inputs| inputs.to_list().ok().map(|list| list.to_vec()))
            .unwrap_or_default();
        let outcome =
            run_shared_graph(&graph, inputs, methods.as_ref(), &run_options()).map(single_result);
        match (
            dict_field(script, "expected"),
            dict_field(script, "error"),
            outcome,
        ) {
            (_, Some(IValue::Str(message)), Err(error)) => {
                let ours = error.root().to_string();
                if !ours.ends_with(&*message) {
                    failures.push(format!(
                        "{name}: ferrojit raised '{ours}', PyTorch '{message}'"
                    ));
                }
            }
            (_, Some(message), Ok(actual)) => failures.push(format!(
                "{name}: PyTorch raised {} but ferrojit returned {}",
                message.python_repr(),
                actual.python_repr()
            )),
            (Some(expected), None, Ok(actual)) => {
                if let Err(difference) = compare(&actual, &expected, &name) {
                    failures.push(difference);
                }
            }
            (_, _, Err(error)) => failures.push(format!("{name}: ferrojit failed: {error}")),
            (None, None, Ok(_)) => failures.push(format!("{name}: no expected value")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} scripts failed:\n{}",
        failures.len(),
        scripts.len(),
        failures.join("\n")
    );
}
