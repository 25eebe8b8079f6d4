//! The tracer's behaviours one at a time, on small sources: what becomes a constant, how
//! sizes are kept, what a scripted helper keeps, the warnings, and the errors.

use ferrojit_ir::Graph;
use ferrojit_runtime::IValue;
use ferrojit_serialize::import::load_module_from_bytes;
use ferrojit_tensor::Tensor;
use ferrojit_tracer::{trace_source, TraceError, TracedFunction};

fn tensor(values: &[f32], sizes: &[usize]) -> IValue {
    IValue::from(Tensor::from_vec(values.to_vec(), sizes).expect("tensor"))
}

fn counting(count: usize, sizes: &[usize]) -> IValue {
    let values: Vec<f32> = (0..count).map(|v| v as f32 - 2.0).collect();
    tensor(&values, sizes)
}

fn trace(source: &str, entry: &str, inputs: Vec<IValue>) -> TracedFunction {
    trace_source(source, "test.py", entry, inputs).unwrap_or_else(|e| panic!("trace: {e}"))
}

/// Saves the trace, loads it back and runs its forward.
fn run_saved(traced: &TracedFunction, inputs: Vec<IValue>) -> IValue {
    let bytes = traced.save_to_bytes("trace").expect("save");
    let loaded = load_module_from_bytes(bytes).expect("load");
    loaded.module.run_method("forward", inputs).expect("run")
}

fn kinds(graph: &Graph) -> Vec<String> {
    graph
        .block_nodes(graph.top_block())
        .into_iter()
        .map(|node| graph.kind(node).as_str().to_string())
        .filter(|kind| kind != "prim::Constant")
        .collect()
}

fn sizes_of(value: &IValue) -> Vec<usize> {
    value.to_tensor().expect("tensor output").sizes().to_vec()
}

fn values_of(value: &IValue) -> Vec<f64> {
    value.to_tensor().expect("tensor output").to_f64_vec()
}

#[test]
fn a_size_used_in_view_is_recorded_and_generalizes_to_other_batches() {
    let source = "def f(x: Tensor) -> Tensor:\n    return x.view(x.size(0), -1)\n";
    let traced = trace(source, "f", vec![counting(12, &[2, 3, 2])]);
    assert_eq!(
        kinds(&traced.graph),
        [
            "aten::size",
            "prim::NumToTensor",
            "aten::Int",
            "prim::ListConstruct",
            "aten::view"
        ]
    );
    let output = run_saved(&traced, vec![counting(30, &[5, 3, 2])]);
    assert_eq!(sizes_of(&output), [5, 6]);
}

#[test]
fn a_loop_over_a_size_is_unrolled_at_the_example_size() {
    let source = "def f(x: Tensor) -> Tensor:\n    y = x[0] * 0.0\n    for i in range(x.size(0)):\n        y = y + x[i]\n    return y\n";
    let traced = trace(source, "f", vec![counting(4, &[2, 2])]);
    assert!(traced.warnings.is_empty(), "{:?}", traced.warnings);
    // Traced with 2 rows: a 3-row input still sums only the first 2.
    let output = run_saved(
        &traced,
        vec![tensor(&[1.0, 2.0, 10.0, 20.0, 100.0, 200.0], &[3, 2])],
    );
    assert_eq!(values_of(&output), [11.0, 22.0]);
}

#[test]
fn a_branch_on_tensor_data_is_frozen_with_pytorchs_warning() {
    let source = "def f(x: Tensor) -> Tensor:\n    if bool(x.sum() > 0):\n        return x * 2.0\n    return x - 1.0\n";
    let traced = trace(source, "f", vec![tensor(&[1.0, 2.0], &[2])]);
    assert_eq!(traced.warnings.len(), 1);
    assert!(traced.warnings[0].starts_with(
        "Converting a tensor to a Python boolean might cause the trace to be incorrect."
    ));
    assert_eq!(kinds(&traced.graph), ["aten::mul"]);
    // The negative input takes the branch the example took.
    let output = run_saved(&traced, vec![tensor(&[-1.0, -2.0], &[2])]);
    assert_eq!(values_of(&output), [-2.0, -4.0]);
}

#[test]
fn a_scripted_helper_is_kept_as_a_call_with_its_control_flow() {
    let source = "import torch\n@torch.jit.script\ndef helper(x: Tensor) -> Tensor:\n    if bool(x.sum() > 0):\n        return x * 2.0\n    return x - 1.0\n\ndef f(x: Tensor) -> Tensor:\n    return helper(x) + 1.0\n";
    let traced = trace(source, "f", vec![tensor(&[1.0, 2.0], &[2])]);
    assert!(traced.warnings.is_empty(), "{:?}", traced.warnings);
    assert_eq!(kinds(&traced.graph), ["prim::CallFunction", "aten::add"]);
    let output = run_saved(&traced, vec![tensor(&[-1.0, -2.0], &[2])]);
    assert_eq!(values_of(&output), [-1.0, -2.0]);
}

#[test]
fn a_plain_helper_is_inlined() {
    let source = "def helper(x: Tensor) -> Tensor:\n    return x * 2.0\n\ndef f(x: Tensor) -> Tensor:\n    return helper(x) + 1.0\n";
    let traced = trace(source, "f", vec![tensor(&[1.0, 2.0], &[2])]);
    assert_eq!(kinds(&traced.graph), ["aten::mul", "aten::add"]);
}

#[test]
fn an_item_becomes_a_constant_with_a_warning() {
    let source = "def f(x: Tensor) -> Tensor:\n    return x * x.max().item()\n";
    let traced = trace(source, "f", vec![tensor(&[1.0, 3.0], &[2])]);
    assert_eq!(traced.warnings.len(), 1);
    assert!(traced.warnings[0].starts_with("Converting a tensor to a Python number"));
    // The example's max (3) is baked in.
    let output = run_saved(&traced, vec![tensor(&[1.0, 10.0], &[2])]);
    assert_eq!(values_of(&output), [3.0, 30.0]);
}

#[test]
fn an_in_place_operation_updates_the_traced_tensor() {
    let source = "def f(x: Tensor) -> Tensor:\n    y = x.clone()\n    y.add_(1.0)\n    return y\n";
    let traced = trace(source, "f", vec![tensor(&[1.0, 2.0], &[2])]);
    assert_eq!(kinds(&traced.graph), ["aten::clone", "aten::add_"]);
    let add = traced
        .graph
        .block_nodes(traced.graph.top_block())
        .into_iter()
        .find(|node| traced.graph.kind(*node).as_str() == "aten::add_")
        .expect("add_");
    assert_eq!(traced.graph.outputs(), traced.graph.node_outputs(add));
}

#[test]
fn a_number_input_is_refused_as_pytorch_refuses_it() {
    let source = "def f(x: Tensor, n: int) -> Tensor:\n    return x * n\n";
    let error = trace_source(
        source,
        "test.py",
        "f",
        vec![tensor(&[1.0], &[1]), IValue::Int(3)],
    )
    .err()
    .expect("an int input is refused");
    assert!(
        matches!(error, TraceError::UntraceableInput { index: 1, .. }),
        "{error}"
    );
    assert!(
        error.to_string().contains("Type 'int' cannot be traced"),
        "{error}"
    );
}

#[test]
fn errors_name_the_problem() {
    let source = "def f(x: Tensor) -> Tensor:\n    return x\n";
    let missing = trace_source(source, "test.py", "g", vec![tensor(&[1.0], &[1])])
        .err()
        .expect("no function g");
    assert!(
        matches!(&missing, TraceError::NoEntry { name, defined } if name == "g" && defined == "f"),
        "{missing}"
    );

    let too_many = trace_source(
        source,
        "test.py",
        "f",
        vec![tensor(&[1.0], &[1]), tensor(&[1.0], &[1])],
    )
    .err()
    .expect("two inputs for one parameter");
    assert!(matches!(
        too_many,
        TraceError::ArgumentCount {
            expected: 1,
            given: 2,
            ..
        }
    ));

    let raising = "def f(x: Tensor) -> Tensor:\n    if bool(x.sum() > 0):\n        raise ValueError(\"positive\")\n    return x\n";
    let raised = trace_source(raising, "test.py", "f", vec![tensor(&[1.0], &[1])])
        .err()
        .expect("raises");
    assert!(raised.to_string().contains("positive"), "{raised}");

    let number = "def f(x: Tensor) -> int:\n    return x.size(0)\n";
    let output = trace_source(number, "test.py", "f", vec![tensor(&[1.0], &[1])])
        .err()
        .expect("an int output is refused");
    assert!(matches!(output, TraceError::Unsupported { .. }), "{output}");
}

#[test]
fn an_endless_loop_is_refused_instead_of_unrolled_forever() {
    let source =
        "def f(x: Tensor) -> Tensor:\n    while True:\n        x = x + 1.0\n    return x\n";
    let error = trace_source(source, "test.py", "f", vec![tensor(&[1.0], &[1])])
        .err()
        .expect("refused");
    assert!(error.to_string().contains("100000 iterations"), "{error}");
}
