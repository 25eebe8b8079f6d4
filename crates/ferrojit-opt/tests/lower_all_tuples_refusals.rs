//! The graphs PyTorch's `_jit_pass_lower_all_tuples` refuses: ferrojit's pass must refuse
//! them too, with PyTorch's message (the last line of it; PyTorch puts a source excerpt
//! before some). The cases and messages are written by
//! tests/fixtures/passes/cases_loops.py from torch itself.

use std::path::PathBuf;

use ferrojit_ir::parse_graph;
use ferrojit_opt::run_pass;

#[test]
fn refusals_match_pytorch() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/passes/lower_all_tuples_refusals.json");
    let text = std::fs::read_to_string(&path).expect("refusal cases");
    let cases: Vec<serde_json::Value> = serde_json::from_str(&text).expect("JSON list");
    assert!(cases.len() >= 3, "only {} refusal cases", cases.len());
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let source = case["graph"].as_str().expect("graph");
        let expected = case["error"].as_str().expect("error");
        let mut graph = parse_graph(source).unwrap_or_else(|e| panic!("{name}: {e}"));
        let error = run_pass("lower_all_tuples", &mut graph)
            .expect_err(&format!("{name}: PyTorch refuses this graph"));
        assert_eq!(error, expected, "{name}");
    }
}

/// PyTorch types the loop parameters and outputs it adds as `Tensor` whatever the element
/// type; ferrojit keeps the element types, so the result still verifies.
#[test]
fn loop_carried_int_tuples_keep_their_element_types() {
    let mut graph = parse_graph(
        "graph(%x : int,\n      %n : int):\n  %t : bool = prim::Constant[value=1]()\n  %init : (int, int) = prim::TupleConstruct(%x, %n)\n  %r : (int, int) = prim::Loop(%n, %t, %init)\n    block0(%i : int, %p : (int, int)):\n      %a : int, %b : int = prim::TupleUnpack(%p)\n      %s : int = aten::add(%a, %i)\n      %np : (int, int) = prim::TupleConstruct(%b, %s)\n      -> (%t, %np)\n  %u : int, %v : int = prim::TupleUnpack(%r)\n  %w : int = aten::mul(%u, %v)\n  return (%w)\n",
    )
    .unwrap();
    run_pass("lower_all_tuples", &mut graph).unwrap();
    let printed = graph.to_ir_string();
    assert!(!printed.contains("Tuple"), "{printed}");
    assert!(!printed.contains("Tensor"), "{printed}");
    assert!(
        printed.contains("%18 : int, %19 : int = prim::Loop(%n, %t, %x, %n)"),
        "{printed}"
    );
}
