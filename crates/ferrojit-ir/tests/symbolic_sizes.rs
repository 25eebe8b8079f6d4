//! Symbolic sizes in tensor types (`SS(-2)`), which PyTorch prints at its symbolic type
//! verbosity and its IR parser reads: ferrojit reads them as unknown sizes.

use ferrojit_ir::{parse_graph, parse_type};

#[test]
fn symbolic_sizes_read_as_unknown_sizes() {
    let ty = parse_type("Float(SS(-2), 3, SS(-7))").expect("symbolic sizes parse");
    assert_eq!(ty.to_string(), "Float(*, 3, *)");
    let graph = parse_graph(
        "graph(%x : Float(SS(-3), 4, requires_grad=0, device=cpu)):
  return (%x)
",
    )
    .expect("graph with a symbolic size parses");
    assert_eq!(
        graph.to_ir_string(),
        "graph(%x : Float(*, 4, requires_grad=0, device=cpu)):\n  return (%x)\n"
    );
}

#[test]
fn a_symbolic_size_is_a_negative_integer() {
    for bad in ["Float(SS(2), 3)", "Float(SS(-2.5))", "Float(SS(-2)"] {
        assert!(parse_type(bad).is_err(), "{bad} should be refused");
    }
}
