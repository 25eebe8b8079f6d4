//! The inliner's behaviour beyond PyTorch's file tests: calls whose callee is unknown stay,
//! the form of `prim::CallFunction` ferrojit's frontend emits (`name` on the call) inlines,
//! and callees that do not fit their call or call themselves are errors, not panics.

use ferrojit_ir::{parse_graph, verifier::verify, Graph};
use ferrojit_opt::inliner::{inline_calls, CalleeTable};
use ferrojit_opt::run_pass;

fn graph(text: &str) -> Graph {
    parse_graph(text).unwrap_or_else(|error| panic!("{error}\n{text}"))
}

const DOUBLE: &str = "graph(%x : Tensor):
  %two : int = prim::Constant[value=2]()
  %y : Tensor = aten::mul(%x, %two)
  return (%y)
";

#[test]
fn calls_with_unknown_callees_stay() {
    let text = "graph(%x : Tensor):
  %f : Function = prim::Constant[name=\"double\"]()
  %y : Tensor = prim::CallFunction(%f, %x)
  return (%y)
";
    let mut bare = graph(text);
    run_pass("inline", &mut bare).unwrap();
    assert!(bare.to_ir_string().contains("prim::CallFunction"));
    let mut with_callee = graph(text);
    let mut callees = CalleeTable::default();
    callees.graphs.insert("double".to_string(), graph(DOUBLE));
    inline_calls(&mut with_callee, &callees).unwrap();
    verify(&with_callee).unwrap();
    let printed = with_callee.to_ir_string();
    assert!(!printed.contains("prim::CallFunction"), "{printed}");
    assert!(printed.contains("aten::mul(%x"), "{printed}");
    // The function constant stays, as in PyTorch.
    assert!(printed.contains("Function = prim::Constant"), "{printed}");
}

#[test]
fn frontend_calls_name_their_callee() {
    let mut caller = graph(
        "graph(%x : Tensor):
  %y : Tensor = prim::CallFunction[name=\"__torch__.double\"](%x)
  %z : Tensor = aten::relu(%y)
  return (%z)
",
    );
    let mut callees = CalleeTable::default();
    callees
        .graphs
        .insert("__torch__.double".to_string(), graph(DOUBLE));
    inline_calls(&mut caller, &callees).unwrap();
    verify(&caller).unwrap();
    let printed = caller.to_ir_string();
    assert!(!printed.contains("prim::CallFunction"), "{printed}");
    // The call's output passes its name on (uniqued as PyTorch's `setDebugName` does).
    assert!(
        printed.contains(" : Tensor = aten::mul(%x, %two)"),
        "{printed}"
    );
    assert!(printed.contains("aten::relu(%y"), "{printed}");
}

#[test]
fn mismatched_and_recursive_callees_are_errors() {
    let text = "graph(%x : Tensor):
  %y : Tensor = prim::CallFunction[name=\"f\"](%x, %x)
  return (%y)
";
    let mut callees = CalleeTable::default();
    callees.graphs.insert("f".to_string(), graph(DOUBLE));
    let error = inline_calls(&mut graph(text), &callees).unwrap_err();
    assert!(error.contains("'f' takes 1 inputs"), "{error}");

    let recursive = "graph(%x : Tensor):
  %y : Tensor = prim::CallFunction[name=\"g\"](%x)
  return (%y)
";
    let mut callees = CalleeTable::default();
    callees.graphs.insert("g".to_string(), graph(recursive));
    let error = inline_calls(&mut graph(recursive), &callees).unwrap_err();
    assert!(error.contains("'g' calls itself"), "{error}");
}
