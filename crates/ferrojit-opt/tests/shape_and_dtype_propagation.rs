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
    // Neither pass looks inside loops, so the loop's output keeps its type.
    assert_eq!(type_of(&g, "next"), "Tensor");
    assert_eq!(type_of(&g, "l"), "Tensor");
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
