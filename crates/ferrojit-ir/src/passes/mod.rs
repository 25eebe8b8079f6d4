//! Graph-to-graph passes. Each pass keeps every invariant of `verifier.rs`; the file-based
//! tests in tests/fixtures/passes/ run a pass by name ([`run_pass`]) over IR text and compare
//! the result with what PyTorch's own pass printed for the same input.

pub mod cleanup;

use crate::Graph;

/// The passes that can be run by name, with what each does.
pub const PASSES: &[(&str, &str)] = &[(
    "cleanup",
    "dead code elimination, constant pooling and If/Loop output canonicalisation, \
     as PyTorch runs them after building a graph",
)];

/// Runs the pass called `name` on `graph`; `Err` names the passes that exist.
pub fn run_pass(name: &str, graph: &mut Graph) -> Result<(), String> {
    match name {
        "cleanup" => {
            cleanup::eliminate_dead_code_and_pool_constants(graph);
            Ok(())
        }
        _ => {
            let known: Vec<&str> = PASSES.iter().map(|(name, _)| *name).collect();
            Err(format!(
                "unknown pass '{name}'; the passes are: {}",
                known.join(", ")
            ))
        }
    }
}
