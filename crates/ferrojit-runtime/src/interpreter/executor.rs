//! `GraphExecutor`: what the runtime keeps for one function's graph between runs, owned by
//! whoever owns the function (a compilation unit's `Function`, a test's method table).
//!
//! It holds the general `Code` (the graph as written, compiled on first use) and, when a run
//! asks for optimization ([`RunOptions::optimizer`]), a small cache of specialized plans keyed
//! by each call's [`ArgumentSpec`]: PyTorch's graph executor. The optimizer that builds a
//! plan's graph lives above the runtime (ferrojit-opt) and is handed in through the run
//! options, so the runtime depends on no pass. State lives and dies with the function, and
//! nothing is looked up by pointer.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use ferrojit_ir::Graph;

use super::argument_spec::ArgumentSpec;
use super::code::{compile, Code};
use super::execute::{run_code, RunOptions};
use crate::error::Result;
use crate::ivalue::IValue;
use crate::object::MethodSource;

/// Builds the specialized graph of a plan. Implemented above the runtime (ferrojit-opt's
/// graph-executor pipeline); the runtime only caches and runs what it returns.
pub trait GraphOptimizer: Send + Sync {
    /// The optimized form of `graph` for calls whose inputs match `spec`; `methods` gives
    /// the graphs of the functions and methods it calls (for inlining). `Err` is a reason to
    /// run the general graph for this spec instead (kept for diagnostics).
    fn optimize(
        &self,
        graph: &Graph,
        spec: &ArgumentSpec,
        methods: &dyn MethodSource,
    ) -> std::result::Result<Graph, String>;
}

/// The most specialized plans one function keeps. A function called with more distinct
/// specs than this runs the general graph for the new ones, as PyTorch's executor stops
/// specializing past its bailout depth, so a model fed ever-changing shapes cannot grow the
/// cache without bound.
pub const MAX_PLANS_PER_FUNCTION: usize = 8;

/// One cached plan: the spec it was built for and what runs for it.
struct Plan {
    spec: ArgumentSpec,
    /// `Ok`: the specialized graph and its code. `Err`: why the optimizer declined, and the
    /// general graph runs for this spec.
    compiled: std::result::Result<(Arc<Graph>, Arc<Code>), String>,
}

/// Runs one function's graph: the general code compiled once, and specialized plans.
pub struct GraphExecutor {
    graph: Arc<Graph>,
    /// Set by the first successful compile. A failed compile is not kept: the next run
    /// compiles again and reports the same error.
    code: OnceLock<Arc<Code>>,
    plans: Mutex<Vec<Plan>>,
}

impl fmt::Debug for GraphExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphExecutor")
            .field("compiled", &self.code.get().is_some())
            .field("plans", &self.plan_count())
            .finish_non_exhaustive()
    }
}

impl GraphExecutor {
    pub fn new(graph: Arc<Graph>) -> GraphExecutor {
        GraphExecutor {
            graph,
            code: OnceLock::new(),
            plans: Mutex::new(Vec::new()),
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

    /// How many specialized plans (including declined specs) are cached.
    pub fn plan_count(&self) -> usize {
        self.lock_plans().len()
    }

    fn lock_plans(&self) -> std::sync::MutexGuard<'_, Vec<Plan>> {
        // A poisoned lock only means a panic elsewhere while the list was read or pushed to;
        // the list itself is always whole.
        self.plans
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Runs the graph on `inputs`; `methods` supplies the functions it calls. With an
    /// optimizer in `options`, the plan for the inputs' spec runs (built on first use).
    pub fn run(
        &self,
        inputs: Vec<IValue>,
        methods: &dyn MethodSource,
        options: &RunOptions,
    ) -> Result<Vec<IValue>> {
        let code = match &options.optimizer {
            Some(optimizer) => {
                let spec = ArgumentSpec::of(&inputs);
                match self.plan_for(&spec, optimizer.as_ref(), methods)? {
                    Some((_, code)) => code,
                    None => self.code()?,
                }
            }
            None => self.code()?,
        };
        run_code(code, inputs, methods, options)
    }

    /// The specialized graph that runs for `inputs` (PyTorch's `graph_for`), building the
    /// plan if needed; `None` when the general graph runs for them (the optimizer declined,
    /// or the plan cache is full), with the reason.
    pub fn graph_for(
        &self,
        inputs: &[IValue],
        optimizer: &dyn GraphOptimizer,
        methods: &dyn MethodSource,
    ) -> Result<std::result::Result<Arc<Graph>, String>> {
        let spec = ArgumentSpec::of(inputs);
        Ok(match self.plan_for(&spec, optimizer, methods)? {
            Some((graph, _)) => Ok(graph),
            None => Err(self
                .lock_plans()
                .iter()
                .find(|plan| plan.spec == spec)
                .and_then(|plan| plan.compiled.as_ref().err().cloned())
                .unwrap_or_else(|| {
                    format!("more than {MAX_PLANS_PER_FUNCTION} specializations already")
                })),
        })
    }

    /// The cached plan for `spec`, building it when the cache has room. `None` means: run
    /// the general code. An error compiling a specialized graph is not the caller's error
    /// (the general graph may still run), so it is recorded as a declined plan.
    fn plan_for(
        &self,
        spec: &ArgumentSpec,
        optimizer: &dyn GraphOptimizer,
        methods: &dyn MethodSource,
    ) -> Result<Option<(Arc<Graph>, Arc<Code>)>> {
        {
            let plans = self.lock_plans();
            if let Some(plan) = plans.iter().find(|plan| &plan.spec == spec) {
                return Ok(plan.compiled.as_ref().ok().cloned());
            }
            if plans.len() >= MAX_PLANS_PER_FUNCTION {
                return Ok(None);
            }
        }
        // Built outside the lock, like the general code: two threads that race on a new spec
        // both build, and the first one stored wins.
        let compiled =
            optimizer
                .optimize(&self.graph, spec, methods)
                .and_then(|graph| match compile(&graph) {
                    Ok(code) => Ok((Arc::new(graph), Arc::new(code))),
                    Err(error) => Err(format!("the optimized graph does not compile: {error}")),
                });
        let mut plans = self.lock_plans();
        if let Some(plan) = plans.iter().find(|plan| &plan.spec == spec) {
            return Ok(plan.compiled.as_ref().ok().cloned());
        }
        if plans.len() >= MAX_PLANS_PER_FUNCTION {
            return Ok(None);
        }
        let result = compiled.as_ref().ok().cloned();
        plans.push(Plan {
            spec: spec.clone(),
            compiled,
        });
        Ok(result)
    }
}
