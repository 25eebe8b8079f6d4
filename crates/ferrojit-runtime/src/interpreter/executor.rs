//! `GraphExecutor`: what the runtime keeps for one function's graph between runs, owned by
//! whoever owns the function (a compilation unit's `Function`, a test's method table).
//!
//! Today it holds the compiled `Code`, built on the first run. It is the place for any
//! later per-function state of an optimizing executor (profiles, specialized plans), which
//! is why it is a value held next to each graph rather than a process-wide cache: its state
//! lives and dies with the function, and nothing is looked up by pointer.

use std::fmt;
use std::sync::{Arc, OnceLock};

use ferrojit_ir::Graph;

use super::code::{compile, Code};
use super::execute::{run_code, RunOptions};
use crate::error::Result;
use crate::ivalue::IValue;
use crate::object::MethodSource;

/// Runs one function's graph, compiling it to `Code` once, on first use.
pub struct GraphExecutor {
    graph: Arc<Graph>,
    /// Set by the first successful compile. A failed compile is not kept: the next run
    /// compiles again and reports the same error, as the process-wide cache this replaces
    /// did.
    code: OnceLock<Arc<Code>>,
}

impl fmt::Debug for GraphExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphExecutor")
            .field("compiled", &self.code.get().is_some())
            .finish_non_exhaustive()
    }
}

impl GraphExecutor {
    pub fn new(graph: Arc<Graph>) -> GraphExecutor {
        GraphExecutor {
            graph,
            code: OnceLock::new(),
        }
    }

    /// The graph this executor runs.
    pub fn graph(&self) -> &Arc<Graph> {
        &self.graph
    }

    /// The compiled code, compiling the graph on the first call. Two threads that make the
    /// first call together may both compile; one result is kept and both use it. Compiling
    /// outside any lock keeps a large graph's compile from blocking other functions' runs.
    pub fn code(&self) -> Result<Arc<Code>> {
        if let Some(code) = self.code.get() {
            return Ok(code.clone());
        }
        let compiled = Arc::new(compile(&self.graph)?);
        Ok(self.code.get_or_init(|| compiled).clone())
    }

    /// Whether the graph has been compiled (for tests and diagnostics).
    pub fn is_compiled(&self) -> bool {
        self.code.get().is_some()
    }

    /// Runs the graph on `inputs`; `methods` supplies the functions it calls.
    pub fn run(
        &self,
        inputs: Vec<IValue>,
        methods: &dyn MethodSource,
        options: &RunOptions,
    ) -> Result<Vec<IValue>> {
        run_code(self.code()?, inputs, methods, options)
    }
}
