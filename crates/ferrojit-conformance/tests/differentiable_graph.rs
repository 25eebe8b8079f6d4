//! Differential tests of the JIT's symbolic autodiff (issue 23 item 5): programs run with
//! inputs that require grad, once as written (every operator records its own backward node
//! in the runtime engine) and once through the graph executor's plan, whose
//! `prim::DifferentiableGraph` nodes run their forward graphs and record one
//! `DifferentiableGraphBackward` node each, whose backward is the symbolic backward graph.
//! The gradients must agree bit for bit: the backward graphs are written in the engine's
//! arithmetic order and run the same kernels (the broadcast sums, matrix products and the
//! mean's scaling included). PyTorch's own gradient, for the scripted MLP, is matched within
//! 1e-6 relative.

use std::sync::Arc;

use ferrojit_autograd::{grad, GradOptions};
use ferrojit_ir::{parse_graph, AttributeValue, Graph};
use ferrojit_opt::autodiff::differentiate::differentiate;
use ferrojit_opt::graph_executor::build_plan_graph;
use ferrojit_runtime::autograd::GradModeGuard;
use ferrojit_runtime::interpreter::ArgumentSpec;
use ferrojit_runtime::{run_graph, IValue, NoMethods, TensorCell};
use ferrojit_tensor::Tensor;

/// Deterministic values in [-1, 1) (a linear congruential sequence), so that no test
/// depends on a random generator.
fn values(count: usize, seed: u64) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..count)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as f32 / (1u64 << 31) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Fresh leaf tensors that require grad, one per shape.
fn leaves(shapes: &[&[usize]], offset: f32) -> Vec<IValue> {
    shapes
        .iter()
        .enumerate()
        .map(|(index, shape)| {
            let count = shape.iter().product();
            let data: Vec<f32> = values(count, index as u64 + 1)
                .into_iter()
                .map(|value| value + offset)
                .collect();
            let tensor = Tensor::from_vec(data, shape).expect("tensor");
            IValue::tensor_with_requires_grad(tensor, true)
        })
        .collect()
}

fn cells(values: &[IValue]) -> Vec<Arc<TensorCell>> {
    values
        .iter()
        .map(|value| value.to_tensor_cell().expect("a tensor").clone())
        .collect()
}

fn data(value: &IValue) -> Vec<f32> {
    value
        .to_tensor()
        .expect("a tensor")
        .to_vec::<f32>()
        .expect("float data")
}

/// Runs `graph` on `inputs` with grad mode on; returns its outputs and the gradients of the
/// first output (a scalar loss) with respect to every input.
fn run_and_differentiate(graph: &Graph, inputs: Vec<IValue>) -> (Vec<IValue>, Vec<Vec<f32>>) {
    ferrojit_autograd::register().expect("autograd");
    let _grad_mode = GradModeGuard::new(true);
    let leaves = cells(&inputs);
    let outputs = run_graph(graph, inputs, &NoMethods).expect("the graph runs");
    let loss = outputs[0].to_tensor_cell().expect("a tensor loss").clone();
    let gradients = grad(&[loss], &leaves, &[None], GradOptions::default(), false)
        .expect("gradients")
        .into_iter()
        .map(|gradient| data(&gradient.expect("every input is used")))
        .collect();
    (outputs, gradients)
}

/// The graph executor's plan for `inputs`, checked to hold `groups` differentiable graphs,
/// each with a symbolic gradient attached.
fn plan_with_groups(graph: &Graph, inputs: &[IValue], groups: usize) -> Graph {
    ferrojit_autograd::register().expect("autograd");
    let plan = build_plan_graph(graph, &ArgumentSpec::of(inputs), &NoMethods).expect("a plan");
    let differentiable: Vec<_> = plan
        .all_nodes()
        .into_iter()
        .filter(|&node| plan.kind(node).as_str() == "prim::DifferentiableGraph")
        .collect();
    let text = plan.to_ir_string();
    assert_eq!(differentiable.len(), groups, "{text}");
    for node in differentiable {
        assert!(
            matches!(
                plan.attribute(node, "backward"),
                Some(AttributeValue::Graph(_))
            ),
            "a group has no symbolic gradient:\n{text}"
        );
    }
    assert!(
        text.contains("with prim::DifferentiableGraph_0 = graph("),
        "{text}"
    );
    plan
}

/// Relative agreement within `tolerance` (with an absolute floor for values near zero).
fn assert_close(expected: &[Vec<f32>], symbolic: &[Vec<f32>], tolerance: f32) {
    assert_eq!(expected.len(), symbolic.len());
    for (input, (a, b)) in expected.iter().zip(symbolic).enumerate() {
        assert_eq!(a.len(), b.len(), "input {input}: gradient sizes differ");
        for (index, (x, y)) in a.iter().zip(b).enumerate() {
            let scale = x.abs().max(y.abs()).max(1e-3);
            assert!(
                (x - y).abs() <= tolerance * scale,
                "input {input}, element {index}: expected {x}, symbolic {y}"
            );
        }
    }
}

fn assert_bitwise(engine: &[Vec<f32>], symbolic: &[Vec<f32>]) {
    assert_eq!(engine.len(), symbolic.len());
    for (input, (a, b)) in engine.iter().zip(symbolic).enumerate() {
        let a_bits: Vec<u32> = a.iter().map(|x| x.to_bits()).collect();
        let b_bits: Vec<u32> = b.iter().map(|x| x.to_bits()).collect();
        assert_eq!(
            a_bits, b_bits,
            "input {input}: engine {a:?}, symbolic {b:?}"
        );
    }
}

/// The loss of the symbolic run comes from a differentiable graph's one backward node.
fn assert_recorded_by_group(outputs: &[IValue]) {
    let loss = outputs[0].to_tensor_cell().expect("a tensor");
    assert_eq!(
        ferrojit_autograd::grad_fn_name(loss).as_deref(),
        Some("DifferentiableGraphBackward")
    );
}

const POINTWISE: &str = "graph(%a : Tensor, %b : Tensor, %c : Tensor):
  %one : int = prim::Constant[value=1]()
  %two : float = prim::Constant[value=2.5]()
  %none : NoneType = prim::Constant()
  %x : Tensor = aten::mul(%a, %b)
  %y : Tensor = aten::add(%x, %c, %one)
  %z : Tensor = aten::sigmoid(%y)
  %e : Tensor = aten::exp(%z)
  %t : Tensor = aten::tanh(%e)
  %d : Tensor = aten::div(%t, %e)
  %n : Tensor = aten::neg(%d)
  %s : Tensor = aten::sub(%n, %a, %two)
  %m : Tensor = aten::mul(%s, %two)
  %r : Tensor = aten::relu(%m)
  %l : Tensor = aten::log(%e)
  %q : Tensor = aten::add(%r, %l, %one)
  %loss : Tensor = aten::mean(%q, %none)
  return (%loss)
";

/// A pointwise chain with broadcasting (`%c` is a row): the same kernels in the same order
/// on both sides, so the gradients are equal bit for bit.
#[test]
fn pointwise_chain_gradients_equal_the_engine_bitwise() {
    let graph = parse_graph(POINTWISE).expect("graph");
    let shapes: &[&[usize]] = &[&[4, 3], &[4, 3], &[3]];
    let (_, engine) = run_and_differentiate(&graph, leaves(shapes, 0.0));
    let inputs = leaves(shapes, 0.0);
    let plan = plan_with_groups(&graph, &inputs, 1);
    let (outputs, symbolic) = run_and_differentiate(&plan, inputs);
    assert_recorded_by_group(&outputs);
    assert_bitwise(&engine, &symbolic);
}

const MLP: &str = "graph(%x : Tensor, %w1 : Tensor, %b1 : Tensor, %w2 : Tensor, %b2 : Tensor):
  %none : NoneType = prim::Constant()
  %h : Tensor = aten::linear(%x, %w1, %b1)
  %r : Tensor = aten::relu(%h)
  %o : Tensor = aten::linear(%r, %w2, %b2)
  %t : Tensor = aten::tanh(%o)
  %loss : Tensor = aten::mean(%t, %none)
  return (%loss)
";

/// A two-layer MLP: one group for the whole program.
#[test]
fn mlp_gradients_equal_the_engine() {
    let graph = parse_graph(MLP).expect("graph");
    let shapes: &[&[usize]] = &[&[6, 4], &[5, 4], &[5], &[3, 5], &[3]];
    let (_, engine) = run_and_differentiate(&graph, leaves(shapes, 0.0));
    let inputs = leaves(shapes, 0.0);
    let plan = plan_with_groups(&graph, &inputs, 1);
    let (outputs, symbolic) = run_and_differentiate(&plan, inputs);
    assert_recorded_by_group(&outputs);
    assert_bitwise(&engine, &symbolic);
}

const LSTM_CELL: &str = "graph(%x : Tensor, %h : Tensor, %c : Tensor, %wi : Tensor, %wh : Tensor, %bi : Tensor, %bh : Tensor):
  %one : int = prim::Constant[value=1]()
  %four : int = prim::Constant[value=4]()
  %none : NoneType = prim::Constant()
  %xt : Tensor = aten::t(%wi)
  %gi : Tensor = aten::mm(%x, %xt)
  %ht : Tensor = aten::t(%wh)
  %gh : Tensor = aten::mm(%h, %ht)
  %g0 : Tensor = aten::add(%gi, %gh, %one)
  %g1 : Tensor = aten::add(%g0, %bi, %one)
  %g : Tensor = aten::add(%g1, %bh, %one)
  %chunks : Tensor[] = aten::chunk(%g, %four, %one)
  %i0 : Tensor, %f0 : Tensor, %c0 : Tensor, %o0 : Tensor = prim::ListUnpack(%chunks)
  %i : Tensor = aten::sigmoid(%i0)
  %f : Tensor = aten::sigmoid(%f0)
  %cc : Tensor = aten::tanh(%c0)
  %o : Tensor = aten::sigmoid(%o0)
  %fc : Tensor = aten::mul(%f, %c)
  %ic : Tensor = aten::mul(%i, %cc)
  %cy : Tensor = aten::add(%fc, %ic, %one)
  %tc : Tensor = aten::tanh(%cy)
  %hy : Tensor = aten::mul(%o, %tc)
  %both : Tensor = aten::add(%hy, %cy, %one)
  %loss : Tensor = aten::mean(%both, %none)
  return (%loss, %hy, %cy)
";

/// An LSTM cell: the gate matmuls, the `chunk` with its `prim::ListUnpack` (the pair
/// PyTorch's fuser makes one `prim::ConstantChunk`) and the cell arithmetic form one group,
/// whose backward joins the pieces' gradients with `cat` as the engine's chunk node does.
#[test]
fn lstm_cell_gradients_equal_the_engine() {
    let graph = parse_graph(LSTM_CELL).expect("graph");
    let shapes: &[&[usize]] = &[&[2, 3], &[2, 4], &[2, 4], &[16, 3], &[16, 4], &[16], &[16]];
    let (engine_outputs, engine) = run_and_differentiate(&graph, leaves(shapes, 0.0));
    let inputs = leaves(shapes, 0.0);
    let plan = plan_with_groups(&graph, &inputs, 1);
    let (outputs, symbolic) = run_and_differentiate(&plan, inputs);
    assert_recorded_by_group(&outputs);
    for (a, b) in engine_outputs.iter().zip(&outputs) {
        assert_eq!(data(a), data(b), "forward values differ");
    }
    assert_bitwise(&engine, &symbolic);
}

/// With grad mode off, a group runs its subgraph: the same values, and no history.
#[test]
fn grad_mode_off_runs_the_plain_subgraph() {
    let graph = parse_graph(MLP).expect("graph");
    let shapes: &[&[usize]] = &[&[6, 4], &[5, 4], &[5], &[3, 5], &[3]];
    let inputs = leaves(shapes, 0.0);
    let plan = plan_with_groups(&graph, &inputs, 1);
    let _grad_mode = GradModeGuard::new(false);
    let outputs = run_graph(&plan, inputs, &NoMethods).expect("the plan runs");
    let expected = run_graph(&graph, leaves(shapes, 0.0), &NoMethods).expect("the graph runs");
    assert_eq!(data(&outputs[0]), data(&expected[0]));
    let loss = outputs[0].to_tensor_cell().expect("a tensor");
    assert!(ferrojit_autograd::grad_fn_name(loss).is_none());
}

/// Inputs that do not require grad get no differentiable graphs.
#[test]
fn inputs_without_grad_get_no_groups() {
    let graph = parse_graph(MLP).expect("graph");
    let inputs: Vec<IValue> = [&[6usize, 4][..], &[5, 4], &[5], &[3, 5], &[3]]
        .iter()
        .enumerate()
        .map(|(index, shape)| {
            let count = shape.iter().product();
            IValue::from(Tensor::from_vec(values(count, index as u64), shape).expect("tensor"))
        })
        .collect();
    let plan = build_plan_graph(&graph, &ArgumentSpec::of(&inputs), &NoMethods).expect("plan");
    assert!(!plan.to_ir_string().contains("prim::DifferentiableGraph"));
}

/// Under `no_grad`, inputs that require grad get the plan of a call that records nothing:
/// no differentiable graphs, while the inputs' types keep `requires_grad=1` (what a fused
/// group's type check compares with the tensors it is given).
#[test]
fn no_grad_calls_get_no_groups() {
    let graph = parse_graph(MLP).expect("graph");
    let shapes: &[&[usize]] = &[&[6, 4], &[5, 4], &[5], &[3, 5], &[3]];
    let inputs = leaves(shapes, 0.0);
    let _grad_mode = GradModeGuard::new(false);
    let spec = ArgumentSpec::of(&inputs);
    assert!(!spec.needs_gradient());
    let plan = build_plan_graph(&graph, &spec, &NoMethods).expect("plan");
    let text = plan.to_ir_string();
    assert!(!text.contains("prim::DifferentiableGraph"), "{text}");
    assert!(text.contains("requires_grad=1"), "{text}");
}

/// The Gradient of a subgraph: the forward graph returns the outputs then the saved values;
/// the backward graph takes one gradient per output then the saved values, and returns one
/// gradient per input.
#[test]
fn differentiate_builds_forward_and_backward_graphs() {
    let subgraph = parse_graph(
        "graph(%a : Tensor, %b : Tensor):
  %x : Tensor = aten::mul(%a, %b)
  %y : Tensor = aten::sigmoid(%x)
  return (%y, %x)
",
    )
    .expect("graph");
    let gradient = differentiate(&subgraph).expect("a gradient");
    assert_eq!(gradient.num_outputs, 2);
    assert_eq!(
        gradient.forward.outputs().len(),
        gradient.num_outputs + gradient.num_saved
    );
    // sigmoid saves its output; mul saves both operands, and the backward reads the sizes
    // to sum back to off them (no saved sizes).
    assert_eq!(gradient.num_saved, 3);
    assert_eq!(
        gradient.backward.inputs().len(),
        gradient.num_outputs + gradient.num_saved
    );
    assert_eq!(gradient.backward.outputs().len(), 2);
    let backward = gradient.backward.to_ir_string();
    assert!(backward.contains("aten::rsub"), "{backward}");
    assert!(backward.contains("aten::sum_to_size"), "{backward}");
    assert!(backward.contains("aten::size"), "{backward}");
    assert!(
        !gradient.forward.to_ir_string().contains("aten::size"),
        "{}",
        gradient.forward.to_ir_string()
    );
}

/// An operator overload without a formula is refused with an error naming it.
#[test]
fn differentiate_refuses_unknown_overloads() {
    let subgraph = parse_graph(
        "graph(%a : Tensor, %b : Tensor):
  %x : Tensor = aten::matmul(%a, %b)
  return (%x)
",
    )
    .expect("graph");
    let error = differentiate(&subgraph).expect_err("matmul of unknown ranks");
    assert!(error.contains("aten::matmul"), "{error}");
}

/// A scripted MLP loaded from its archive (tests/fixtures/diffgraph/generate.py), called
/// through the optimizing executor with an input that requires grad: the loss comes from a
/// differentiable graph's backward node, and its gradient with respect to the input equals
/// PyTorch's (float32, within 1e-6 relative) and the engine's (the same call run as written,
/// bit for bit).
#[test]
fn scripted_mlp_gradient_through_the_executor_equals_pytorchs() {
    use ferrojit_opt::graph_executor::SpecializingOptimizer;
    use ferrojit_runtime::interpreter::RunOptions;

    ferrojit_autograd::register().expect("autograd");
    let folder =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/diffgraph");
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("mlp_scripted.expected.json")).expect("fixture"),
    )
    .expect("JSON");
    let floats = |value: &serde_json::Value| -> Vec<f32> {
        value
            .as_array()
            .expect("a list")
            .iter()
            .map(|item| item.as_f64().expect("a number") as f32)
            .collect()
    };
    let shape: Vec<usize> = expected["x"]["shape"]
        .as_array()
        .expect("a shape")
        .iter()
        .map(|size| size.as_u64().expect("a size") as usize)
        .collect();
    let input = || {
        let tensor = Tensor::from_vec(floats(&expected["x"]["data"]), &shape).expect("tensor");
        IValue::tensor_with_requires_grad(tensor, true)
    };
    let loaded = ferrojit_serialize::import::load_module(&folder.join("mlp_scripted.pt"))
        .expect("the archive loads");
    let gradient_of = |options: &RunOptions| -> (Vec<IValue>, Vec<f32>) {
        let _grad_mode = GradModeGuard::new(true);
        let x = input();
        let leaf = x.to_tensor_cell().expect("a tensor").clone();
        let loss = loaded
            .module
            .run_method_with_options("forward", vec![x], options)
            .expect("forward runs");
        let loss_cell = loss.to_tensor_cell().expect("a tensor loss").clone();
        let gradients = grad(
            &[loss_cell],
            &[leaf],
            &[None],
            GradOptions::default(),
            false,
        )
        .expect("the gradient");
        let gradient = data(gradients[0].as_ref().expect("x is used"));
        (vec![loss], gradient)
    };
    let optimized = RunOptions {
        optimizer: Some(SpecializingOptimizer::shared()),
        ..RunOptions::default()
    };
    let (outputs, symbolic) = gradient_of(&optimized);
    assert_recorded_by_group(&outputs);
    let (_, engine) = gradient_of(&RunOptions::default());
    let pytorch = floats(&expected["grad_x"]);
    assert_close(
        std::slice::from_ref(&pytorch),
        std::slice::from_ref(&symbolic),
        1e-6,
    );
    assert_bitwise(&[engine], &[symbolic]);
    let loss = data(&outputs[0])[0];
    let wanted = expected["loss"].as_f64().expect("the loss") as f32;
    assert!(
        (loss - wanted).abs() <= 1e-6 * wanted.abs().max(1e-3),
        "loss {loss}, PyTorch {wanted}"
    );
}

/// A group's saved output written in place before the backward: PyTorch's error for a
/// modified saved tensor, as the engine gives for its own nodes.
#[test]
fn writing_a_saved_output_in_place_is_detected() {
    let graph = parse_graph(
        "graph(%a : Tensor, %b : Tensor):
  %x : Tensor = aten::mul(%a, %b)
  %y : Tensor = aten::sigmoid(%x)
  return (%y)
",
    )
    .expect("graph");
    let shapes: &[&[usize]] = &[&[2, 3], &[2, 3]];
    let inputs = leaves(shapes, 0.0);
    let plan = plan_with_groups(&graph, &inputs, 1);
    let _grad_mode = GradModeGuard::new(true);
    let leaf_cells = cells(&inputs);
    let outputs = run_graph(&plan, inputs, &NoMethods).expect("the plan runs");
    assert_recorded_by_group(&outputs);
    let one = IValue::from(Tensor::from_vec(vec![1.0f32], &[1]).expect("tensor"));
    ferrojit_autograd::call::call1(
        "aten::add_.Tensor",
        vec![outputs[0].clone(), one, IValue::Int(1)],
    )
    .expect("the in-place add runs");
    let output = outputs[0].to_tensor_cell().expect("a tensor").clone();
    let ones = IValue::from(Tensor::from_vec(vec![1.0f32; 6], &[2, 3]).expect("tensor"));
    let error = grad(
        &[output],
        &leaf_cells,
        &[Some(ones)],
        GradOptions::default(),
        false,
    )
    .expect_err("a saved tensor was modified");
    assert!(
        error
            .to_string()
            .contains("one of the variables needed for gradient computation has been modified by an inplace operation"),
        "{error}"
    );
}

/// Double backward through a group (`create_graph=True`, then a gradient of a gradient):
/// the group's backward recomputes with recording, so the second-order gradient equals the
/// engine's, bit for bit.
#[test]
fn double_backward_through_a_group_equals_the_engine() {
    let graph = parse_graph(
        "graph(%x : Tensor, %w : Tensor):
  %none : NoneType = prim::Constant()
  %p : Tensor = aten::mul(%x, %w)
  %t : Tensor = aten::tanh(%p)
  %y : Tensor = aten::mul(%t, %x)
  %loss : Tensor = aten::mean(%y, %none)
  return (%loss)
",
    )
    .expect("graph");
    ferrojit_autograd::register().expect("autograd");
    let shapes: &[&[usize]] = &[&[5], &[5]];
    let second_order = |graph: &Graph, inputs: Vec<IValue>| -> (Vec<IValue>, Vec<f32>) {
        let _grad_mode = GradModeGuard::new(true);
        let leaves = cells(&inputs);
        let outputs = run_graph(graph, inputs, &NoMethods).expect("the graph runs");
        let loss = outputs[0].to_tensor_cell().expect("a tensor").clone();
        let options = GradOptions {
            retain_graph: Some(true),
            create_graph: true,
        };
        let first = grad(&[loss], &leaves, &[None], options, false).expect("first order");
        let gx = first[0].clone().expect("x is used");
        let summed =
            ferrojit_autograd::call::call1("aten::sum", vec![gx, IValue::None]).expect("sum");
        let summed = summed.to_tensor_cell().expect("a tensor").clone();
        let second = grad(
            &[summed],
            &leaves[1..],
            &[None],
            GradOptions::default(),
            false,
        )
        .expect("second order");
        (outputs, data(second[0].as_ref().expect("w is used")))
    };
    let (_, engine) = second_order(&graph, leaves(shapes, 0.0));
    let inputs = leaves(shapes, 0.0);
    let plan = plan_with_groups(&graph, &inputs, 1);
    let (outputs, symbolic) = second_order(&plan, inputs);
    assert_recorded_by_group(&outputs);
    assert_bitwise(&[engine], &[symbolic]);
}

/// The diffgraph fixtures' folder (tests/fixtures/diffgraph/generate.py).
fn diffgraph_fixtures() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/diffgraph")
}

fn json_floats(value: &serde_json::Value) -> Vec<f32> {
    value
        .as_array()
        .expect("a list")
        .iter()
        .map(|item| item.as_f64().expect("a number") as f32)
        .collect()
}

/// The handle of the module's parameter `dotted` (`ih.weight`), as `prim::GetAttr` reads it.
fn parameter_cell(module: &ferrojit_runtime::Module, dotted: &str) -> Arc<TensorCell> {
    let mut object = module.object().clone();
    let mut parts: Vec<&str> = dotted.split('.').collect();
    let last = parts.pop().expect("a name");
    for part in parts {
        object = object
            .get_attr(part)
            .expect("the submodule")
            .to_object()
            .expect("an object")
            .clone();
    }
    object
        .get_attr(last)
        .expect("the parameter")
        .to_tensor_cell()
        .expect("a tensor")
        .clone()
}

/// The `lstm_params` fixture: a scripted LSTM cell loop whose input does not require grad and
/// whose parameters do (reached through `prim::GetAttr`, the usual training case), loaded,
/// with PyTorch's expected values and the input.
fn lstm_params() -> (ferrojit_runtime::Module, serde_json::Value, IValue) {
    ferrojit_autograd::register().expect("autograd");
    let folder = diffgraph_fixtures();
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("lstm_params.expected.json")).expect("fixture"),
    )
    .expect("JSON");
    let shape: Vec<usize> = expected["xs"]["shape"]
        .as_array()
        .expect("a shape")
        .iter()
        .map(|size| size.as_u64().expect("a size") as usize)
        .collect();
    let xs = Tensor::from_vec(json_floats(&expected["xs"]["data"]), &shape).expect("tensor");
    let loaded = ferrojit_serialize::import::load_module(&folder.join("lstm_params.pt"))
        .expect("the archive loads");
    (loaded.module, expected, IValue::from(xs))
}

fn differentiable_graph_count(graph: &Graph) -> usize {
    graph
        .all_nodes()
        .into_iter()
        .filter(|&node| graph.kind(node).as_str() == "prim::DifferentiableGraph")
        .count()
}

/// A module whose parameters require grad, called with grad mode on and an input that does
/// not: the plan has differentiable graphs, printed as PyTorch prints them
/// (`prim::DifferentiableGraph_0`; PyTorch's own plan for the call has them too), holding the
/// linears, the `chunk` and the `cat`. The parameters' gradients through the groups equal
/// the engine's (the method run as written, each operator recording its node) within float
/// rounding (the groups sum a parameter's uses in their own order) and PyTorch's.
#[test]
fn module_parameters_requiring_grad_get_differentiable_graphs() {
    use ferrojit_opt::graph_executor::SpecializingOptimizer;
    use ferrojit_runtime::interpreter::RunOptions;

    let (module, expected, xs) = lstm_params();
    let _grad_mode = GradModeGuard::new(true);
    let plan = module
        .graph_for("forward", vec![xs.clone()], &SpecializingOptimizer)
        .expect("the call is valid")
        .expect("a plan");
    let text = plan.to_ir_string();
    let pytorch =
        std::fs::read_to_string(diffgraph_fixtures().join("lstm_params.pytorch_optimized.txt"))
            .expect("PyTorch's optimized graph");
    for printed in [&text, &pytorch] {
        assert!(
            printed.contains("= prim::DifferentiableGraph_0("),
            "{printed}"
        );
        assert!(
            printed.contains("with prim::DifferentiableGraph_0 = graph("),
            "{printed}"
        );
    }
    let subgraphs = text
        .split_once("with prim::DifferentiableGraph_0 = graph(")
        .expect("the subgraph sections")
        .1;
    for operator in [
        "aten::linear(",
        "aten::chunk(",
        "prim::ListUnpack(",
        "aten::cat(",
    ] {
        assert!(
            subgraphs.contains(operator),
            "{operator} is not grouped:\n{text}"
        );
    }
    // Outside the groups, only what PyTorch leaves out too: no operator with a formula here.
    let top = text
        .split("with prim::DifferentiableGraph_")
        .next()
        .expect("the plan");
    for operator in [
        "aten::linear(",
        "aten::sigmoid(",
        "aten::tanh(",
        "aten::chunk(",
    ] {
        assert!(
            !top.contains(operator),
            "{operator} runs outside the groups:\n{text}"
        );
    }

    let names: Vec<String> = expected["parameters"]
        .as_array()
        .expect("names")
        .iter()
        .map(|name| name.as_str().expect("a name").to_string())
        .collect();
    let gradients_of = |options: &RunOptions| -> (IValue, Vec<Vec<f32>>) {
        let cells: Vec<_> = names
            .iter()
            .map(|name| parameter_cell(&module, name))
            .collect();
        let loss = module
            .run_method_with_options("forward", vec![xs.clone()], options)
            .expect("forward runs");
        let loss_cell = loss.to_tensor_cell().expect("a tensor loss").clone();
        let gradients = grad(&[loss_cell], &cells, &[None], GradOptions::default(), false)
            .expect("the gradients")
            .iter()
            .map(|gradient| data(gradient.as_ref().expect("every parameter is used")))
            .collect();
        (loss, gradients)
    };
    let optimized = RunOptions {
        optimizer: Some(SpecializingOptimizer::shared()),
        ..RunOptions::default()
    };
    let (loss, symbolic) = gradients_of(&optimized);
    assert_recorded_by_group(std::slice::from_ref(&loss));
    let (engine_loss, engine) = gradients_of(&RunOptions::default());
    assert_eq!(data(&loss), data(&engine_loss));
    assert_close(&engine, &symbolic, 1e-5);
    let pytorch: Vec<Vec<f32>> = names
        .iter()
        .map(|name| json_floats(&expected["grads"][name.as_str()]))
        .collect();
    assert_close(&pytorch, &symbolic, 1e-4);
    let wanted = expected["loss"].as_f64().expect("the loss") as f32;
    let found = data(&loss)[0];
    assert!(
        (found - wanted).abs() <= 1e-5 * wanted.abs().max(1e-3),
        "loss {found}, PyTorch {wanted}"
    );
}

/// The plan key holds the parameters' grad bit: with grad mode off, or with the parameters
/// frozen, the same call gets a plan without differentiable graphs (not the cached one
/// with them), and unfreezing gets the groups back.
/// (Fusion is off here: this is about the plan key, and the inference plan's fusion
/// passes are tested elsewhere.)
#[test]
fn grad_mode_and_frozen_parameters_get_plans_of_their_own() {
    use ferrojit_opt::graph_executor::{ConfiguredOptimizer, PlanOptions};

    let (module, expected, xs) = lstm_params();
    let optimizer = ConfiguredOptimizer(PlanOptions { fuse: false });
    let plan_groups = |grad_enabled: bool| {
        let _grad_mode = GradModeGuard::new(grad_enabled);
        let plan = module
            .graph_for("forward", vec![xs.clone()], &optimizer)
            .expect("the call is valid")
            .expect("a plan");
        differentiable_graph_count(&plan)
    };
    let recording = plan_groups(true);
    assert!(recording > 0, "no groups for parameters that require grad");
    assert_eq!(
        plan_groups(false),
        0,
        "grad mode off reused the recording plan"
    );
    let cells: Vec<_> = expected["parameters"]
        .as_array()
        .expect("names")
        .iter()
        .map(|name| parameter_cell(&module, name.as_str().expect("a name")))
        .collect();
    for cell in &cells {
        cell.set_requires_grad(false);
    }
    assert_eq!(
        plan_groups(true),
        0,
        "frozen parameters reused the recording plan"
    );
    for cell in &cells {
        cell.set_requires_grad(true);
    }
    assert_eq!(plan_groups(true), recording);
}
