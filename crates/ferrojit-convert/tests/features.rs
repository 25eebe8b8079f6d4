//! One small scripted module per converter feature (tests/fixtures/generate.py writes them
//! with PyTorch's results): buffer writes become `buffer_mutation` outputs, a branch on
//! tensor data becomes `cond`, a `while` loop on tensor data becomes `while_loop`, static
//! loops and branches are specialized, and programs Export IR cannot express are refused
//! with an error naming the node and its line.

use std::path::PathBuf;

use ferrojit_conformance::{compare_with, Comparison};
use ferrojit_convert::{convert_file, ConvertError, PROGRAM_NAME};
use ferrojit_export::model::OutputSpec;
use ferrojit_export::{save_program_to_bytes, ExportedModule, LoadedProgram, Pt2Archive};
use ferrojit_runtime::IValue;
use ferrojit_serialize::torch_save;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/{name}"))
}

/// `generate.py:LINE` of the first line of the fixture generator that contains `text`.
fn generator_line(text: &str) -> String {
    let generator = std::fs::read_to_string(fixture("generate.py")).expect("generate.py reads");
    let index = generator
        .lines()
        .position(|line| line.contains(text))
        .expect("the generator has the line");
    format!("generate.py:{}", index + 1)
}

/// The argument tuples of every recorded call of `name`, read fresh.
fn calls(name: &str) -> Vec<Vec<IValue>> {
    match torch_save::load_file(&fixture(&format!("{name}.inputs.pt"))).expect("inputs load") {
        IValue::List(list) => list
            .to_vec()
            .into_iter()
            .map(|call| call.to_tuple().expect("a tuple per call").items.clone())
            .collect(),
        other => panic!("inputs are a {}", other.tag_name()),
    }
}

fn expected(name: &str) -> Vec<IValue> {
    torch_save::load_file(&fixture(&format!("{name}.expected.pt")))
        .expect("expected loads")
        .to_list()
        .expect("a list of results")
        .to_vec()
}

fn convert(name: &str) -> Result<LoadedProgram, ConvertError> {
    let example = calls(name).remove(0);
    convert_file(&fixture(&format!("{name}.pt")), "forward", example)
}

/// Saves and reloads the program (what `ferrojit export` writes), ready to run.
fn reloaded(program: &LoadedProgram) -> ExportedModule {
    let bytes = save_program_to_bytes(program, None).expect("the program saves");
    let archive = Pt2Archive::from_bytes(bytes).expect("the archive reads");
    ExportedModule::new(archive.load(PROGRAM_NAME).expect("the program loads"))
        .expect("the program prepares")
}

fn targets(program: &LoadedProgram) -> Vec<String> {
    program
        .program
        .graph_module
        .graph
        .nodes
        .iter()
        .map(|node| node.target.clone())
        .collect()
}

/// Runs every recorded call on the converted program and compares with PyTorch.
fn check_all_calls(name: &str, program: &LoadedProgram) {
    let mut module = reloaded(program);
    for (index, (call, expected)) in calls(name).into_iter().zip(expected(name)).enumerate() {
        let actual = module
            .run(call)
            .unwrap_or_else(|e| panic!("{name} call {index}: {e}"));
        compare_with(&actual, &expected, name, Comparison::models(1e-5, 1e-6))
            .unwrap_or_else(|e| panic!("{name} call {index}: {e}"));
    }
}

#[test]
fn buffer_writes_become_buffer_mutations_and_parameters_are_lifted() {
    let program = convert("buffer_counter").expect("converts");
    let signature = &program.program.graph_module.signature;
    let mutated: Vec<&str> = signature
        .output_specs
        .iter()
        .filter_map(|spec| match spec {
            OutputSpec::BufferMutation { buffer_name, .. } => Some(buffer_name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(mutated, ["count", "total"]);
    let targets = targets(&program);
    // Functional: the in-place add_ and copy_ became add and copy.
    assert!(
        targets
            .iter()
            .all(|t| !t.ends_with("_.Tensor") && !t.contains("copy_")),
        "{targets:?}"
    );
    assert!(
        targets.iter().any(|t| t == "torch.ops.aten.copy.default"),
        "{targets:?}"
    );
    assert!(program.state_dict.contains_key("linear.weight"));
    // The state dict keeps the buffers' values before the call.
    let count = program.state_dict["count"].to_vec::<f32>().unwrap();
    assert_eq!(count, [0.0]);

    let mut module = reloaded(&program);
    let call = calls("buffer_counter").remove(0);
    let actual = module.run(call).expect("runs");
    compare_with(
        &actual,
        &expected("buffer_counter")[0],
        "result",
        Comparison::models(1e-5, 1e-6),
    )
    .unwrap();
    let state = torch_save::load_file(&fixture("buffer_counter.state.pt")).unwrap();
    for (key, value) in state.to_dict().unwrap().entries() {
        let key = key.to_str().unwrap().to_string();
        let actual = module.state_value(&key).expect("the buffer exists");
        compare_with(&actual, &value, &key, Comparison::models(1e-5, 1e-6)).unwrap();
    }
}

#[test]
fn a_branch_on_tensor_data_becomes_cond_and_both_branches_run() {
    let program = convert("tensor_cond").expect("converts");
    assert!(targets(&program)
        .iter()
        .any(|t| t == "torch.ops.higher_order.cond"));
    // The example takes the true branch; the second call needs the false one.
    check_all_calls("tensor_cond", &program);
}

#[test]
fn a_while_loop_on_tensor_data_becomes_while_loop() {
    let program = convert("while_on_data").expect("converts");
    assert!(targets(&program)
        .iter()
        .any(|t| t == "torch.ops.higher_order.while_loop"));
    // The second call runs more iterations than the example.
    check_all_calls("while_on_data", &program);
}

#[test]
fn static_loops_and_branches_are_specialized() {
    let program = convert("static_loop").expect("converts");
    let targets = targets(&program);
    assert!(
        !targets.iter().any(|t| t.contains("higher_order")),
        "{targets:?}"
    );
    // Three unrolled iterations: three multiplications.
    assert_eq!(
        targets.iter().filter(|t| t.contains("aten.mul")).count(),
        3,
        "{targets:?}"
    );
    check_all_calls("static_loop", &program);
}

fn refusal(name: &str) -> String {
    match convert(name) {
        Ok(_) => panic!("{name} converted, but Export IR cannot express it"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn a_write_through_a_select_becomes_select_scatter_and_an_input_mutation() {
    let program = convert("view_write").expect("converts");
    let targets = targets(&program);
    assert!(
        targets
            .iter()
            .any(|t| t == "torch.ops.aten.select_scatter.default"),
        "{targets:?}"
    );
    let signature = &program.program.graph_module.signature;
    assert!(signature
        .output_specs
        .iter()
        .any(|spec| matches!(spec, OutputSpec::UserInputMutation { .. })));
    // The program writes into its input as PyTorch's module does.
    let mut module = reloaded(&program);
    let call = calls("view_write").remove(0);
    let input = call[0].clone();
    let actual = module.run(call).expect("runs");
    let expected = &expected("view_write")[0];
    compare_with(&actual, expected, "result", Comparison::models(1e-6, 1e-7)).unwrap();
    compare_with(&input, expected, "input", Comparison::models(1e-6, 1e-7)).unwrap();
}

#[test]
fn a_write_through_another_view_is_refused_naming_the_node_and_line() {
    let message = refusal("transposed_view_write");
    assert!(message.contains("aten::mul_"), "{message}");
    // The line of the original Python source (the archive's .debug_pkl).
    assert!(
        message.contains(&generator_line("y.mul_(2.0)")),
        "{message}"
    );
}

#[test]
fn a_string_made_from_tensor_data_is_refused() {
    let message = refusal("string_result");
    assert!(message.contains("tensor data"), "{message}");
    // The line of the original Python source (the archive's .debug_pkl).
    assert!(
        message.contains(&generator_line("return \"total=\" + str(x.sum().item())")),
        "{message}"
    );
}

#[test]
fn a_missing_method_or_wrong_argument_count_is_an_input_error() {
    let example = calls("tensor_cond").remove(0);
    let path = fixture("tensor_cond.pt");
    assert!(matches!(
        convert_file(&path, "no_such_method", example.clone()),
        Err(ConvertError::Input(_))
    ));
    let mut too_many = example;
    too_many.push(IValue::Int(1));
    assert!(matches!(
        convert_file(&path, "forward", too_many),
        Err(ConvertError::Input(_))
    ));
}
