//! Compiles each `data/graphs/NAME.py` and compares the graph with the one PyTorch printed
//! for the same source (`NAME.expected.txt`), after `compile_support::normalize`.

#[path = "compile_support.rs"]
mod compile_support;

use compile_support::{data_dir, normalize, operators};
use ferrojit_frontend::compile_source;

fn compile_and_print(name: &str) -> Result<String, String> {
    let source = std::fs::read_to_string(data_dir().join("graphs").join(format!("{name}.py")))
        .map_err(|e| e.to_string())?;
    let unit = compile_source(&source, operators()).map_err(|e| e.to_string())?;
    let function = unit.function("__torch__.f").map_err(|e| e.to_string())?;
    let graph = function.graph(&unit).map_err(|e| e.to_string())?;
    ferrojit_ir::verifier::verify(&graph).map_err(|e| e.to_string())?;
    Ok(graph.to_ir_string())
}

fn check(name: &str) {
    let expected = std::fs::read_to_string(
        data_dir()
            .join("graphs")
            .join(format!("{name}.expected.txt")),
    )
    .unwrap();
    let ours = match compile_and_print(name) {
        Ok(text) => text,
        Err(error) => panic!("{name} failed to compile:\n{error}"),
    };
    let (ours_normalized, expected_normalized) = (normalize(&ours), normalize(&expected));
    assert_eq!(
        ours_normalized, expected_normalized,
        "{name}: graphs differ\n--- ours ---\n{ours}\n--- PyTorch ---\n{expected}"
    );
}

macro_rules! graph_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                check(stringify!($name));
            }
        )*
    };
}

graph_tests!(
    annotate_list,
    arithmetic,
    asserts,
    builtins_casts,
    carried_order,
    early_return,
    guard_return,
    loop_if,
    loops,
    optional_refinement,
    raise_branch,
    return_branches,
    tensor_indexing,
    ternary,
    tuples_lists,
);
