//! The `.pt2` runner frees each intermediate value after its last reader, as the TorchScript
//! interpreter does: a long chain holds a few values at once, not one per node, while the
//! values a later node, a graph output or the next run still needs survive.

use ferrojit_export::writer::builder::{ProgramBuilder, Value};
use ferrojit_export::ExportedModule;
use ferrojit_runtime::IValue;
use ferrojit_tensor::Tensor;

/// Chain length of the programs below.
const CHAIN: usize = 20;

/// The input: small halves, so every sum below is exact in float32.
fn input_values() -> Vec<f32> {
    (0..6).map(|i| i as f32 * 0.5 - 1.25).collect()
}

fn input() -> Tensor {
    Tensor::from_vec(input_values(), &[2, 3]).unwrap()
}

/// `y = x; y = y + x` [`CHAIN`] times; the outputs are the last `y` (21·x) and, when
/// `keep_early` is set, the value after the fifth addition (6·x), which must outlive the
/// rest of the chain.
fn chain_program(keep_early: bool) -> ExportedModule {
    let mut builder = ProgramBuilder::new();
    let x = builder.add_user_input("x", input()).unwrap();
    let mut y: Value = x.clone();
    let mut early = None;
    for step in 0..CHAIN {
        y = builder
            .call(
                "aten::add.Tensor",
                vec![("self", y.arg()), ("other", x.arg())],
            )
            .unwrap();
        if step == 4 {
            early = Some(y.clone());
        }
    }
    let outputs = match (keep_early, early) {
        (true, Some(early)) => vec![y, early],
        _ => vec![y],
    };
    builder.set_outputs(&outputs).unwrap();
    let (program, _) = builder.build("model").unwrap();
    ExportedModule::new(program).unwrap()
}

fn values(value: &IValue) -> Vec<f64> {
    value.to_tensor().unwrap().to_f64_vec()
}

fn multiples(factor: f32) -> Vec<f64> {
    input_values()
        .iter()
        .map(|v| f64::from(v * factor))
        .collect()
}

#[test]
fn a_chain_of_twenty_operators_holds_a_few_values_at_once() {
    let mut module = chain_program(false);
    assert_eq!(
        module.loaded().program.graph_module.graph.nodes.len(),
        CHAIN
    );
    let output = module.run(vec![IValue::from(input())]).unwrap();
    assert_eq!(values(&output), multiples(21.0));
    // After each node: the input x (read by every node), the previous sum (its last reader
    // just ran) and the new sum. Keeping everything would hold 21.
    let peak = module.peak_live_values();
    assert!(
        peak <= 3,
        "peak of {peak} live values for a {CHAIN}-node chain"
    );
    assert!(peak >= 2, "peak of {peak}: the statistic counts nothing");
}

#[test]
fn an_early_value_the_output_returns_survives_the_rest_of_the_chain() {
    let mut module = chain_program(true);
    let output = module.run(vec![IValue::from(input())]).unwrap();
    let IValue::Tuple(tuple) = &output else {
        panic!(
            "two outputs should come back as a tuple, got {}",
            output.tag_name()
        );
    };
    assert_eq!(values(&tuple.items[0]), multiples(21.0));
    assert_eq!(values(&tuple.items[1]), multiples(6.0));
    let peak = module.peak_live_values();
    assert!(peak <= 4, "peak of {peak} live values with one value kept");
}

#[test]
fn a_second_run_sees_the_same_program_after_values_were_freed() {
    let mut module = chain_program(false);
    let first = values(&module.run(vec![IValue::from(input())]).unwrap());
    let doubled =
        Tensor::from_vec(input_values().iter().map(|v| v * 2.0).collect(), &[2, 3]).unwrap();
    let second = values(&module.run(vec![IValue::from(doubled)]).unwrap());
    assert_eq!(first, multiples(21.0));
    assert_eq!(second, multiples(42.0));
}

#[test]
fn the_caller_keeps_its_input_after_the_run() {
    let mut module = chain_program(false);
    let x = input();
    module.run(vec![IValue::from(x.clone())]).unwrap();
    // The runner dropped its own handle on x after the last node; the caller's is intact.
    let kept: Vec<f64> = input_values().iter().map(|v| f64::from(*v)).collect();
    assert_eq!(x.to_f64_vec(), kept);
}
