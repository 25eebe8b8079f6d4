//! Every pass, on every graph the parser and verifier accept (the IR corpus PyTorch printed,
//! and hand-written graphs with odd node shapes), ends with Ok or an error, never a panic,
//! and leaves a graph the verifier accepts.

use std::path::PathBuf;

use ferrojit_ir::{parse_graph, verifier::verify, Graph};
use ferrojit_opt::{run_pass, PASSES};

fn corpus_graphs() -> Vec<(String, String)> {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/ir/corpus");
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
        .expect("corpus folder")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "ir"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("readable corpus file");
            (path.display().to_string(), text)
        })
        .collect()
}

/// Nodes the passes look for, with no outputs or too few inputs: text IR allows them.
const ODD_SHAPES: &str = "graph(%x : Tensor,
      %s : int[],
      %f : Future[Tensor]):
  %t : bool = prim::Constant[value=1]()
  %p : float = prim::Constant[value=0.5]()
   = aten::wait(%f)
   = aten::expand(%x, %s, %t)
  %d : Tensor = aten::dropout(%x, %p)
   = aten::dropout(%x, %p, %t)
  %y : Tensor = aten::neg(%x)
  return (%y)
";

#[test]
fn every_pass_on_every_accepted_graph_ends_without_a_panic() {
    let mut graphs = corpus_graphs();
    assert!(graphs.len() >= 51, "corpus too small: {}", graphs.len());
    graphs.push(("odd shapes".to_string(), ODD_SHAPES.to_string()));
    let mut runs = 0;
    for (name, text) in &graphs {
        let parsed: Graph = parse_graph(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        verify(&parsed).unwrap_or_else(|e| panic!("{name}: {e}"));
        for pass in PASSES {
            let mut graph = parse_graph(text).expect("parses again");
            // An error is an answer; only a panic (which fails the test) is not.
            if run_pass(pass.name, &mut graph).is_ok() {
                verify(&graph).unwrap_or_else(|e| panic!("{name}, after {}: {e}", pass.name));
            }
            runs += 1;
        }
    }
    assert!(runs >= 52 * 9, "only {runs} pass runs");
}
