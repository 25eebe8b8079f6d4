//! The fuser pass (PyTorch's `FuseGraph`, graph_fuser.cpp, with the TensorExpr fuser's type
//! guards): maximal runs of pointwise operators on tensors of complete type become
//! `prim::FusionGroup` nodes, each behind a `prim::TypeCheck` and a `prim::If` whose false
//! block runs the original nodes.
//!
//! * [`fusible_ops`]: which operators, overloads and types may be fused (the one list);
//! * [`grouping`]: finding the groups, moving nodes only where AliasDb allows;
//! * [`guard`]: building each group's subgraph, type check and fallback;
//! * [`type_refinement`]: the type facts the graph executor gives a plan before fusing.
//!
//! `FERROJIT_FUSER=off` (read once per process) turns the pass into a no-op; the graph
//! executor's [`crate::graph_executor::PlanOptions`] take it as their default.

pub mod fusible_ops;
pub mod grouping;
pub mod guard;
pub mod type_refinement;

use std::sync::OnceLock;

use ferrojit_ir::Graph;

use crate::alias_analysis::{attach_registry_schemas, AliasDb};

/// Whether fusion is on by default: false when the environment variable `FERROJIT_FUSER` is
/// `off` (or `0`, `false`) when first asked.
pub fn fuser_enabled_by_default() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| {
        !std::env::var("FERROJIT_FUSER").is_ok_and(|value| {
            matches!(
                value.trim().to_ascii_lowercase().as_str(),
                "off" | "0" | "false"
            )
        })
    })
}

/// The `fuser` pass as registered: [`fuse_graph`], unless `FERROJIT_FUSER=off`.
pub fn fuser_pass(graph: &mut Graph) -> Result<(), String> {
    if fuser_enabled_by_default() {
        fuse_graph(graph)?;
    }
    Ok(())
}

/// Groups fusible nodes (in every block) into guarded `prim::FusionGroup` nodes. Returns
/// how many groups it made.
pub fn fuse_graph(graph: &mut Graph) -> Result<usize, String> {
    attach_registry_schemas(graph, ferrojit_runtime::OperatorRegistry::global());
    let alias_db = AliasDb::new(graph);
    let top = graph.top_block();
    let groups = grouping::find_groups(graph, &alias_db, top);
    for group in &groups {
        guard::guard_group(graph, group)?;
    }
    Ok(groups.len())
}
