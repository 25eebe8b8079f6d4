//! Numerical gradient checks of the JIT's symbolic gradients (issue 23 item 7), in float64
//! as `torch.autograd.gradcheck` does them: each program runs through the graph executor's
//! plan, whose `prim::DifferentiableGraph` records one node whose backward is the symbolic
//! backward graph, and every element of that gradient is compared with the central
//! difference `(f(x + eps) - f(x - eps)) / 2 eps` of the program run as written, within
//! gradcheck's default tolerances (atol 1e-5, rtol 1e-3).
//!
//! The programs cover the formulas for the operators that pass tensors through lists
//! (`chunk` and `unsafe_chunk` taken apart by `prim::ListUnpack`, including a piece that gets
//! no gradient and an uneven last piece; `cat` of a `prim::ListConstruct`, at a positive and
//! a negative dim) and the matrix products (`linear`, `addmm` with its scalings, `mm`, `t`),
//! with some pointwise formulas (`sigmoid`, `tanh`, `mul`, `div`, `log`, `exp`, `sub`).

use ferrojit_autograd::{grad, GradOptions};
use ferrojit_ir::{parse_graph, AttributeValue, Graph};
use ferrojit_opt::graph_executor::build_plan_graph;
use ferrojit_runtime::autograd::GradModeGuard;
use ferrojit_runtime::interpreter::ArgumentSpec;
use ferrojit_runtime::{run_graph, IValue, NoMethods};
use ferrojit_tensor::Tensor;

const EPS: f64 = 1e-6;
const ATOL: f64 = 1e-5;
const RTOL: f64 = 1e-3;

/// Deterministic values in [-1, 1) (a linear congruential sequence).
fn values(count: usize, seed: u64) -> Vec<f64> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..count)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// One input of a checked program: its shape, the offset added to its values (to keep a
/// divisor away from zero) and whether the gradient is checked for it.
struct Input {
    shape: &'static [usize],
    offset: f64,
    checked: bool,
}

const fn checked(shape: &'static [usize]) -> Input {
    Input {
        shape,
        offset: 0.0,
        checked: true,
    }
}

/// The program's float64 inputs, each from its own part of the sequence.
fn input_data(inputs: &[Input]) -> Vec<Vec<f64>> {
    inputs
        .iter()
        .enumerate()
        .map(|(index, input)| {
            let count = input.shape.iter().product();
            values(count, index as u64 + 11)
                .into_iter()
                .map(|value| value + input.offset)
                .collect()
        })
        .collect()
}

fn to_ivalues(inputs: &[Input], data: &[Vec<f64>]) -> Vec<IValue> {
    inputs
        .iter()
        .zip(data)
        .map(|(input, values)| {
            let tensor = Tensor::from_vec(values.clone(), input.shape).expect("tensor");
            IValue::tensor_with_requires_grad(tensor, input.checked)
        })
        .collect()
}

fn scalar(value: &IValue) -> f64 {
    value
        .to_tensor()
        .expect("a tensor")
        .to_vec::<f64>()
        .expect("float64")[0]
}

/// The program's loss (its first output) run as written, recording nothing.
fn loss_of(graph: &Graph, inputs: &[Input], data: &[Vec<f64>]) -> f64 {
    let _no_grad = GradModeGuard::new(false);
    let outputs = run_graph(graph, to_ivalues(inputs, data), &NoMethods).expect("the graph runs");
    scalar(&outputs[0])
}

/// The gradients of the loss for the checked inputs, through the plan's differentiable
/// graphs (`groups` of them, each with a symbolic gradient).
fn symbolic_gradients(
    graph: &Graph,
    inputs: &[Input],
    data: &[Vec<f64>],
    groups: usize,
) -> Vec<Vec<f64>> {
    ferrojit_autograd::register().expect("autograd");
    let _grad_mode = GradModeGuard::new(true);
    let values = to_ivalues(inputs, data);
    let plan = build_plan_graph(graph, &ArgumentSpec::of(&values), &NoMethods).expect("a plan");
    let text = plan.to_ir_string();
    let differentiable: Vec<_> = plan
        .all_nodes()
        .into_iter()
        .filter(|&node| plan.kind(node).as_str() == "prim::DifferentiableGraph")
        .collect();
    assert_eq!(differentiable.len(), groups, "{text}");
    for &node in &differentiable {
        assert!(
            matches!(
                plan.attribute(node, "backward"),
                Some(AttributeValue::Graph(_))
            ),
            "a group has no symbolic gradient:\n{text}"
        );
    }
    let leaves: Vec<_> = values
        .iter()
        .zip(inputs)
        .filter(|(_, input)| input.checked)
        .map(|(value, _)| value.to_tensor_cell().expect("a tensor").clone())
        .collect();
    let outputs = run_graph(&plan, values, &NoMethods).expect("the plan runs");
    let loss = outputs[0].to_tensor_cell().expect("a tensor loss").clone();
    assert_eq!(
        ferrojit_autograd::grad_fn_name(&loss).as_deref(),
        Some("DifferentiableGraphBackward"),
        "the loss is not recorded by a group:\n{text}"
    );
    grad(&[loss], &leaves, &[None], GradOptions::default(), false)
        .expect("gradients")
        .into_iter()
        .map(|gradient| {
            gradient
                .expect("every checked input is used")
                .to_tensor()
                .expect("a tensor")
                .to_vec::<f64>()
                .expect("a float64 gradient")
        })
        .collect()
}

/// Compares every symbolic gradient element with its central difference.
fn gradcheck(ir: &str, inputs: &[Input], groups: usize) {
    let graph = parse_graph(ir).expect("graph");
    let data = input_data(inputs);
    let symbolic = symbolic_gradients(&graph, inputs, &data, groups);
    let checked_inputs = inputs.iter().enumerate().filter(|(_, input)| input.checked);
    for ((index, _), analytic) in checked_inputs.zip(&symbolic) {
        assert_eq!(
            analytic.len(),
            data[index].len(),
            "input {index}: gradient size"
        );
        for element in 0..data[index].len() {
            let mut plus = data.clone();
            plus[index][element] += EPS;
            let mut minus = data.clone();
            minus[index][element] -= EPS;
            let numerical =
                (loss_of(&graph, inputs, &plus) - loss_of(&graph, inputs, &minus)) / (2.0 * EPS);
            let found = analytic[element];
            assert!(
                (found - numerical).abs() <= ATOL + RTOL * numerical.abs(),
                "input {index}, element {element}: symbolic {found}, numerical {numerical}"
            );
        }
    }
}

/// `chunk` into four, one piece unused (its gradient is zeros), the others through sigmoid,
/// tanh and mul, joined again by `cat` along dim 1; the chunked tensor comes from `linear`.
#[test]
fn chunk_and_cat_after_linear_match_central_differences() {
    gradcheck(
        "graph(%x : Tensor, %w : Tensor, %b : Tensor, %k : Tensor):
  %one : int = prim::Constant[value=1]()
  %four : int = prim::Constant[value=4]()
  %none : NoneType = prim::Constant()
  %g : Tensor = aten::linear(%x, %w, %b)
  %chunks : Tensor[] = aten::chunk(%g, %four, %one)
  %i : Tensor, %f : Tensor, %c : Tensor, %o : Tensor = prim::ListUnpack(%chunks)
  %si : Tensor = aten::sigmoid(%i)
  %tf : Tensor = aten::tanh(%f)
  %m : Tensor = aten::mul(%si, %c)
  %list : Tensor[] = prim::ListConstruct(%m, %tf, %si)
  %joined : Tensor = aten::cat(%list, %one)
  %p : Tensor = aten::mul(%joined, %k)
  %loss : Tensor = aten::mean(%p, %none)
  return (%loss)
",
        &[
            checked(&[2, 3]),
            checked(&[8, 3]),
            checked(&[8]),
            Input {
                shape: &[2, 6],
                offset: 0.0,
                checked: false,
            },
        ],
        1,
    );
}

/// `unsafe_chunk` into three uneven pieces (3, 3, 2 rows), `cat` at dim -2 in a new order,
/// after `mm` and `t`, then `exp` and `log`.
#[test]
fn uneven_unsafe_chunk_and_negative_dim_cat_match_central_differences() {
    gradcheck(
        "graph(%a : Tensor, %b : Tensor, %k : Tensor):
  %zero : int = prim::Constant[value=0]()
  %three : int = prim::Constant[value=3]()
  %minus_two : int = prim::Constant[value=-2]()
  %none : NoneType = prim::Constant()
  %bt : Tensor = aten::t(%b)
  %y : Tensor = aten::mm(%a, %bt)
  %pieces : Tensor[] = aten::unsafe_chunk(%y, %three, %zero)
  %p0 : Tensor, %p1 : Tensor, %p2 : Tensor = prim::ListUnpack(%pieces)
  %e : Tensor = aten::exp(%p2)
  %s : Tensor = aten::sigmoid(%p0)
  %l : Tensor = aten::log(%s)
  %list : Tensor[] = prim::ListConstruct(%e, %p1, %l, %p1)
  %joined : Tensor = aten::cat(%list, %minus_two)
  %p : Tensor = aten::mul(%joined, %k)
  %loss : Tensor = aten::mean(%p, %none)
  return (%loss)
",
        &[
            checked(&[8, 4]),
            checked(&[3, 4]),
            Input {
                shape: &[11, 3],
                offset: 0.0,
                checked: false,
            },
        ],
        1,
    );
}

/// `addmm` with constant scalings and a broadcast bias, then `div` by a tensor kept away
/// from zero and `sub` with an alpha.
#[test]
fn addmm_div_and_sub_match_central_differences() {
    gradcheck(
        "graph(%bias : Tensor, %m1 : Tensor, %m2 : Tensor, %d : Tensor, %k : Tensor):
  %half : float = prim::Constant[value=0.5]()
  %two : int = prim::Constant[value=2]()
  %alpha : float = prim::Constant[value=1.5]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::addmm(%bias, %m1, %m2, %half, %two)
  %t : Tensor = aten::tanh(%y)
  %q : Tensor = aten::div(%t, %d)
  %r : Tensor = aten::sub(%q, %m1, %alpha)
  %p : Tensor = aten::mul(%r, %k)
  %loss : Tensor = aten::mean(%p, %none)
  return (%loss)
",
        &[
            checked(&[4]),
            checked(&[4, 4]),
            checked(&[4, 4]),
            Input {
                shape: &[4, 4],
                offset: 2.0,
                checked: true,
            },
            Input {
                shape: &[4, 4],
                offset: 0.0,
                checked: false,
            },
        ],
        1,
    );
}
