//! ferrojit-opt: the optimizing half of the JIT. Graph-to-graph passes, the table that names
//! them, and the file-test runner that checks them (see [`filetest`]).
//!
//! It sits above the runtime, so passes that need to run an operator (constant propagation)
//! or to know an operator's record (purity, aliasing, shape rules) can reach the registry.
//! The TorchScript frontend uses one pass from here, [`cleanup`], which PyTorch's IR emitter
//! runs on every graph it builds; nothing here depends on the frontend.
//!
//! **Invariant:** every pass keeps every invariant of `ferrojit_ir::verifier`. [`run_pass`]
//! runs the verifier after the pass in debug builds and in tests, and a verifier error after
//! a pass is a bug in that pass.

pub mod alias_analysis;
pub mod cleanup;
pub mod filetest;
pub mod literals;

use ferrojit_ir::Graph;

/// One pass that can be run by name: from a file test's `# RUN: pass NAME` line, or by a
/// pipeline.
pub struct PassInfo {
    /// The name file tests and pipelines use (`cleanup`).
    pub name: &'static str,
    /// What the pass does, in one sentence, for `--help` listings and error messages.
    pub description: &'static str,
    /// Runs the pass; `Err` is a message for a graph the pass refuses.
    pub run: fn(&mut Graph) -> Result<(), String>,
}

/// Every pass, by name. A new pass gets its own file and one entry here.
pub const PASSES: &[PassInfo] = &[PassInfo {
    name: "cleanup",
    description: "dead code elimination, constant pooling and If/Loop output canonicalisation, \
                  as PyTorch runs them after building a graph",
    run: |graph| {
        cleanup::eliminate_dead_code_and_pool_constants(graph);
        Ok(())
    },
}];

/// The pass called `name`, if there is one.
pub fn find_pass(name: &str) -> Option<&'static PassInfo> {
    PASSES.iter().find(|pass| pass.name == name)
}

/// Runs the pass called `name` on `graph`, then (in debug builds) the verifier. `Err` names
/// the passes that exist when `name` is not one of them, or says which invariant the pass
/// broke.
pub fn run_pass(name: &str, graph: &mut Graph) -> Result<(), String> {
    let Some(pass) = find_pass(name) else {
        let known: Vec<&str> = PASSES.iter().map(|pass| pass.name).collect();
        return Err(format!(
            "unknown pass '{name}'; the passes are: {}",
            known.join(", ")
        ));
    };
    (pass.run)(graph)?;
    if cfg!(debug_assertions) {
        ferrojit_ir::verifier::verify(graph)
            .map_err(|error| format!("pass '{name}' broke an invariant: {error}"))?;
    }
    Ok(())
}
