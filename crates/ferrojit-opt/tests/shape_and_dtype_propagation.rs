//! What the shape and dtype passes do beyond the file tests: the graphs PyTorch's dtype pass
//! refuses, and `propagate_shapes_and_dtypes`, which the graph executor runs on graphs whose
//! inputs have complete tensor types.

use ferrojit_ir::{parse_graph, Graph};
use ferrojit_opt::{propagate_shapes_and_dtypes, run_pass};

fn graph(text: &str) -> Graph {
    parse_graph(text).expect("test graph parses")
}

/// The printed type of the value called `name`.
fn type_of(graph: &Graph, name: &str) -> String {
    let value = graph.value_by_name(name).expect("named value");
    graph.value_type(value).to_string()
}

const LOOP_AND_IF: &str = "graph(%x : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu),
      %n : int,
      %c : bool):
  %t : bool = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::mul(%x, %x)
  %r : Tensor = prim::If(%c)
    block0():
      %b : Tensor = aten::relu(%a)
      -> (%b)
    block1():
      -> (%a)
  %l : Tensor = prim::Loop(%n, %t, %r)
    block0(%i : int, %acc : Tensor):
      %next : Tensor = aten::add(%acc, %x, %one)
      -> (%t, %next)
  %s : Tensor = aten::sigmoid(%r)
  return (%l, %s)
";

#[test]
fn dtype_pass_refuses_if_outputs_and_loops_as_pytorch_does() {
    let mut with_if = graph(LOOP_AND_IF);
    let error = run_pass("propagate_dtype", &mut with_if).expect_err("If outputs are refused");
    assert!(error.contains("prim::If"), "{error}");

    let mut with_loop = graph(
        "graph(%x : Float(2), %n : int):
  %t : bool = prim::Constant[value=1]()
  %r : Tensor = prim::Loop(%n, %t, %x)
    block0(%i : int, %acc : Tensor):
      %y : Tensor = aten::relu(%acc)
      -> (%t, %y)
  return (%r)
",
    );
    let error = run_pass("propagate_dtype", &mut with_loop).expect_err("loops are refused");
    assert!(error.contains("prim::Loop"), "{error}");

    let mut with_prim = graph(
        "graph(%k : int):
  %t : Tensor = prim::NumToTensor(%k)
  return (%t)
",
    );
    let error = run_pass("propagate_dtype", &mut with_prim).expect_err("prim nodes are refused");
    assert!(error.contains("prim::NumToTensor"), "{error}");
}

#[test]
fn executor_propagation_skips_what_the_dtype_pass_refuses() {
    let mut g = graph(LOOP_AND_IF);
    propagate_shapes_and_dtypes(&mut g).expect("propagation succeeds");
    // Shapes and dtypes before the loop; the If merges both branches' facts.
    assert_eq!(type_of(&g, "a"), "Float(2, 3)");
    assert_eq!(type_of(&g, "b"), "Float(2, 3)");
    assert_eq!(type_of(&g, "r"), "Tensor(2, 3)");
    // The executor's shape propagation goes inside loops (the dtype pass does not): the
    // carried value keeps sizes (2, 3) through every iteration, so the body and the loop's
    // output get them.
    assert_eq!(type_of(&g, "acc"), "Tensor(2, 3)");
    assert_eq!(type_of(&g, "next"), "Tensor(2, 3)");
    assert_eq!(type_of(&g, "l"), "Tensor(2, 3)");
    // The If output has no dtype (the dtype pass does not merge branches), so sigmoid gets
    // its sizes only.
    assert_eq!(type_of(&g, "s"), "Tensor(2, 3)");
    ferrojit_ir::verifier::verify(&g).expect("graph stays valid");
}

#[test]
fn shapes_then_dtypes_chain_through_known_ranks() {
    let mut g = graph(
        "graph(%x : Long(4, 1), %y : Float(1, 5)):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %y, %one)
  %b : Tensor = aten::gt(%a, %x)
  %c : Tensor = aten::div(%x, %x)
  %d : Tensor = aten::mul(%c, %b)
  return (%d)
",
    );
    propagate_shapes_and_dtypes(&mut g).expect("propagation succeeds");
    assert_eq!(type_of(&g, "a"), "Float(4, 5)");
    assert_eq!(type_of(&g, "b"), "Bool(4, 5)");
    assert_eq!(type_of(&g, "c"), "Float(4, 1)");
    assert_eq!(type_of(&g, "d"), "Float(4, 5)");
}

#[test]
fn loop_carried_sizes_reach_a_fixed_point_and_the_named_pass_skips_loops() {
    // The carried tensor grows by a row each iteration: its first size is not a fact, its
    // rank and second size are.
    let text = "graph(%x : Float(1, 3), %n : int):
  %t : bool = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %l : Tensor = prim::Loop(%n, %t, %x)
    block0(%i : int, %acc : Tensor):
      %parts : Tensor[] = prim::ListConstruct(%acc, %x)
      %next : Tensor = aten::cat(%parts, %zero)
      %rank : int = aten::dim(%next)
      -> (%t, %next)
  %r : Tensor = aten::relu(%l)
  return (%r)
";
    let mut g = graph(text);
    propagate_shapes_and_dtypes(&mut g).expect("propagation succeeds");
    assert_eq!(type_of(&g, "acc"), "Tensor(*, 3)");
    assert_eq!(type_of(&g, "next"), "Tensor(*, 3)");
    assert_eq!(type_of(&g, "l"), "Tensor(*, 3)");
    assert_eq!(type_of(&g, "r"), "Tensor(*, 3)");
    ferrojit_ir::verifier::verify(&g).expect("graph stays valid");

    // PyTorch's `_jit_pass_propagate_shapes_on_graph` leaves loop bodies alone, and so does
    // the named pass.
    let mut named = graph(text);
    run_pass("propagate_shapes_on_graph", &mut named).expect("the pass runs");
    assert_eq!(type_of(&named, "next"), "Tensor");
    assert_eq!(type_of(&named, "l"), "Tensor");
}

#[test]
fn a_loop_that_changes_a_carried_rank_leaves_it_unranked() {
    let mut g = graph(
        "graph(%x : Float(2, 3), %n : int):
  %t : bool = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %l : Tensor = prim::Loop(%n, %t, %x)
    block0(%i : int, %acc : Tensor):
      %next : Tensor = aten::unsqueeze(%acc, %zero)
      -> (%t, %next)
  return (%l)
",
    );
    propagate_shapes_and_dtypes(&mut g).expect("propagation succeeds");
    // unsqueeze adds a dimension each iteration, so no rank holds for every iteration.
    assert_eq!(type_of(&g, "acc"), "Tensor");
    assert_eq!(type_of(&g, "l"), "Tensor");
    assert_eq!(type_of(&g, "next"), "Tensor");
}

#[test]
fn an_rnn_cells_rank_checks_fold_once_the_loop_is_typed() {
    // The shape of nn.LSTMCell's scripted forward: the carried state goes through a tuple,
    // and each step checks the ranks of the input and of both states.
    let mut g = graph(
        "graph(%xs : Float(5, 1, 3), %h : Float(1, 3), %c : Float(1, 3), %n : int):
  %t : bool = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %hs : Tensor, %cs : Tensor = prim::Loop(%n, %t, %h, %c)
    block0(%i : int, %h.1 : Tensor, %c.1 : Tensor):
      %x : Tensor = aten::select(%xs, %zero, %i)
      %state : (Tensor, Tensor) = prim::TupleConstruct(%h.1, %c.1)
      %h.2 : Tensor, %c.2 : Tensor = prim::TupleUnpack(%state)
      %x_rank : int = aten::dim(%x)
      %h_rank : int = aten::dim(%h.2)
      %sum : Tensor = aten::add(%x, %h.2, %one)
      %next_c : Tensor = aten::mul(%c.2, %sum)
      -> (%t, %sum, %next_c)
  return (%hs, %cs)
",
    );
    propagate_shapes_and_dtypes(&mut g).expect("propagation succeeds");
    assert_eq!(type_of(&g, "x"), "Tensor(1, 3)");
    assert_eq!(type_of(&g, "h.2"), "Tensor(1, 3)");
    assert_eq!(type_of(&g, "c.2"), "Tensor(1, 3)");
    assert_eq!(type_of(&g, "hs"), "Tensor(1, 3)");
    run_pass("peephole", &mut g).expect("peephole runs");
    let text = g.to_ir_string();
    assert!(
        !text.contains("aten::dim"),
        "rank checks should fold:\n{text}"
    );
    ferrojit_ir::verifier::verify(&g).expect("graph stays valid");
}

#[test]
fn an_lstm_cell_loop_carries_the_state_sizes() {
    // PyTorch has no shape function for the recurrent cells; the executor's form knows that
    // their new states have the first state's sizes, so the carried state keeps its rank and
    // the cell's rank checks on it can fold.
    let text = "graph(%xs : Float(5, 1, 3), %h : Float(1, 4), %c : Float(1, 4), %w_ih : Float(16, 3), %w_hh : Float(16, 4), %n : int):
  %t : bool = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %hs : Tensor, %cs : Tensor = prim::Loop(%n, %t, %h, %c)
    block0(%i : int, %h.1 : Tensor, %c.1 : Tensor):
      %x : Tensor = aten::select(%xs, %zero, %i)
      %h_rank : int = aten::dim(%h.1)
      %states : Tensor[] = prim::ListConstruct(%h.1, %c.1)
      %h.2 : Tensor, %c.2 : Tensor = aten::lstm_cell(%x, %states, %w_ih, %w_hh, %none, %none)
      -> (%t, %h.2, %c.2)
  return (%hs, %cs)
";
    let mut g = graph(text);
    propagate_shapes_and_dtypes(&mut g).expect("propagation succeeds");
    assert_eq!(type_of(&g, "h.1"), "Tensor(1, 4)");
    assert_eq!(type_of(&g, "h.2"), "Tensor(1, 4)");
    assert_eq!(type_of(&g, "c.2"), "Tensor(1, 4)");
    assert_eq!(type_of(&g, "cs"), "Tensor(1, 4)");
    run_pass("peephole", &mut g).expect("peephole runs");
    assert!(!g.to_ir_string().contains("aten::dim"));

    // The named pass, like PyTorch's, has no shape for the cell.
    let mut named = graph(text);
    run_pass("propagate_shapes_on_graph", &mut named).expect("the pass runs");
    assert_eq!(type_of(&named, "h.2"), "Tensor");
}
