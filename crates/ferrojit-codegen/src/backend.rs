//! The runtime's `FusionBackend` served by Cranelift: what the CLI and the library install in
//! an optimized run, so that each `prim::FusionGroup` the fuser builds runs as native code.
//!
//! One backend (and so one kernel cache) serves the whole process: group keys are unique per
//! process, and a kernel compiled for one run is reused by every later run of the same plan.

use std::sync::{Arc, OnceLock};

use ferrojit_ir::Graph;
use ferrojit_runtime::interpreter::FusionBackend;
use ferrojit_tensor::Tensor;

use crate::GroupCache;

/// Runs fusion groups through a [`GroupCache`]; groups it cannot compile go back to the
/// interpreter (`Ok(None)`).
#[derive(Default)]
pub struct CraneliftFusionBackend {
    cache: GroupCache,
}

impl CraneliftFusionBackend {
    /// The cache behind the backend (its statistics show what compiled).
    pub fn cache(&self) -> &GroupCache {
        &self.cache
    }
}

impl FusionBackend for CraneliftFusionBackend {
    fn run_group(
        &self,
        group_key: u64,
        subgraph: &Graph,
        inputs: &[Tensor],
    ) -> Result<Option<Vec<Tensor>>, String> {
        self.cache
            .run_group(group_key, subgraph, inputs)
            .map_err(|error| error.to_string())
    }
}

/// The process's backend, made on first use; what `RunOptions::fusion_backend` takes.
pub fn shared_backend() -> Arc<dyn FusionBackend> {
    shared_cranelift_backend()
}

/// The same backend, typed, for callers that read its cache statistics.
pub fn shared_cranelift_backend() -> Arc<CraneliftFusionBackend> {
    static BACKEND: OnceLock<Arc<CraneliftFusionBackend>> = OnceLock::new();
    BACKEND
        .get_or_init(|| Arc::new(CraneliftFusionBackend::default()))
        .clone()
}
