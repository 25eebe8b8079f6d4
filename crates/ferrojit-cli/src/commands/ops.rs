//! `ferrojit ops`: the operator schemas this build runs; `ferrojit ops --core`: how many of
//! the core ATen overloads (those tagged `torch.Tag.core`, the set `run_decompositions()`
//! lowers a `.pt2` program to) a `.pt2` program can call, and which are missing.

use std::io::Write;

use ferrojit_runtime::OperatorRegistry;

use super::pt2::write_stdout;

/// The core ATen overloads of torch 2.15, one `aten::NAME.OVERLOAD` a line (written by
/// `tests/fixtures/export/core_aten_ops.py` into `crates/ferrojit-cli/data/`, inside the crate
/// so that the packaged crate builds; `#` lines are comments).
const CORE_ATEN_OPS: &str = include_str!("../../data/core_aten_ops.txt");

/// The core ATen overload names, in the file's (sorted) order.
pub fn core_aten_overloads() -> Vec<&'static str> {
    CORE_ATEN_OPS
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect()
}

/// Every schema in the registry (torchvision's too, where registered), sorted.
pub fn list_operators() -> Result<(), String> {
    let registry = OperatorRegistry::global();
    let mut schemas: Vec<String> = registry
        .operators()
        .iter()
        .chain(registry.added_operators().iter())
        .map(|operator| operator.schema.to_string())
        .collect();
    schemas.sort();
    let mut stdout = std::io::stdout().lock();
    for schema in schemas {
        if let Err(error) = writeln!(stdout, "{schema}") {
            // A reader that stops early (`| head`) is not an error.
            if error.kind() == std::io::ErrorKind::BrokenPipe {
                return Ok(());
            }
            return Err(format!("writing the operator list: {error}"));
        }
    }
    Ok(())
}

/// `covered/total` on the first line (`core ATen: 150/189 overloads`), then each missing
/// overload on a line of its own. An overload counts when the `.pt2` runner finds it: in the
/// registry, among `ferrojit-export`'s stand-ins, or among the size and assertion operators
/// the runner evaluates itself.
pub fn core_coverage() -> Result<(), String> {
    let overloads = core_aten_overloads();
    let missing: Vec<&str> = overloads
        .iter()
        .copied()
        .filter(|name| !ferrojit_export::fallback::runs_operator(name))
        .collect();
    let mut text = format!(
        "core ATen: {}/{} overloads\n",
        overloads.len() - missing.len(),
        overloads.len()
    );
    if !missing.is_empty() {
        text.push_str(&format!("missing ({}):\n", missing.len()));
        for name in missing {
            text.push_str("  ");
            text.push_str(name);
            text.push('\n');
        }
    }
    write_stdout(&text)
}

/// torch 2.15's public `aten::` overloads in issue #20's scope, one
/// `aten::NAME.OVERLOAD<TAB>CPU<TAB>SCHEMA` a line (written by
/// `tests/fixtures/ops_schemas/list_pytorch_ops.py`; `#` lines are comments).
const PYTORCH_PUBLIC_OPS: &str = include_str!("../../data/pytorch_public_ops.txt");

/// Operators (`aten::name`, every overload) or overloads (`aten::name.overload`) deliberately
/// not implemented, each with its reason: `NAME<TAB>WHY` a line.
const LEFT_OUT_OPS: &str = include_str!("../../data/left_out.txt");

/// One overload of PyTorch's public list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicOverload {
    /// `aten::add.Tensor`, or `aten::relu` when the overload name is empty.
    pub full_name: &'static str,
    /// `cpu`, `composite`, `jit` or `none` (no kernel that runs on CPU).
    pub cpu_availability: &'static str,
}

impl PublicOverload {
    /// `aten::add` for `aten::add.Tensor`.
    pub fn operator_name(&self) -> &'static str {
        // Operator names never contain '.'; the overload follows the first one.
        self.full_name
            .split_once('.')
            .map_or(self.full_name, |(name, _)| name)
    }
}

/// Every line of PyTorch's public list, parsed: (overload, schema). The schema column is
/// empty where a line has none.
fn pytorch_public_lines() -> impl Iterator<Item = (PublicOverload, &'static str)> {
    PYTORCH_PUBLIC_OPS
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .filter_map(|line| {
            let mut columns = line.split('\t');
            let full_name = columns.next()?.trim();
            let cpu_availability = columns.next().unwrap_or("cpu").trim();
            let schema = columns.next().unwrap_or("").trim();
            Some((
                PublicOverload {
                    full_name,
                    cpu_availability,
                },
                schema,
            ))
        })
}

/// The overloads PyTorch runs on CPU (every line but those marked `none`), in file order.
pub fn pytorch_public_overloads() -> Vec<PublicOverload> {
    pytorch_public_lines()
        .map(|(overload, _)| overload)
        .filter(|overload| overload.cpu_availability != "none")
        .collect()
}

/// The schemas torch 2.15 declares for operator `name` (`aten::histc`: every overload,
/// whether or not PyTorch runs it on CPU), as schema strings. Empty for a name outside the
/// public list (a custom operator, or one outside issue #20's scope).
pub fn pytorch_schemas_of(name: &str) -> Vec<&'static str> {
    pytorch_public_lines()
        .filter(|(overload, schema)| overload.operator_name() == name && !schema.is_empty())
        .map(|(_, schema)| schema)
        .collect()
}

/// The names in `left_out.txt` (first column), each an operator or one overload.
pub fn left_out_names() -> Vec<&'static str> {
    LEFT_OUT_OPS
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .filter_map(|line| line.split('\t').next().map(str::trim))
        .collect()
}

/// What `ferrojit ops --missing` reports: the public overloads the registry lacks.
#[derive(Debug, Clone)]
pub struct MissingReport {
    /// Overloads in scope (PyTorch's CPU list less the left-out ones).
    pub overloads_in_scope: usize,
    /// Operator names in scope.
    pub names_in_scope: usize,
    /// Overloads the registry lacks, in file order.
    pub missing_overloads: Vec<PublicOverload>,
    /// Operator names with no overload at all in the registry.
    pub missing_names: Vec<&'static str>,
}

/// Compares PyTorch's public list with the registry. An overload counts as present when the
/// registry has its exact full name; an operator name counts as present when the registry has
/// any overload of it.
pub fn missing_report() -> MissingReport {
    let registry = OperatorRegistry::global();
    let left_out = left_out_names();
    let is_left_out = |overload: &PublicOverload| {
        left_out
            .iter()
            .any(|&name| name == overload.full_name || name == overload.operator_name())
    };
    let in_scope: Vec<PublicOverload> = pytorch_public_overloads()
        .into_iter()
        .filter(|overload| !is_left_out(overload))
        .collect();
    let mut names: Vec<&'static str> = in_scope.iter().map(|o| o.operator_name()).collect();
    names.dedup();
    names.sort_unstable();
    names.dedup();
    let missing_overloads: Vec<PublicOverload> = in_scope
        .iter()
        .filter(|overload| registry.lookup(overload.full_name).is_none())
        .cloned()
        .collect();
    let missing_names: Vec<&'static str> = names
        .iter()
        .copied()
        .filter(|name| registry.overloads(name).is_empty())
        .collect();
    MissingReport {
        overloads_in_scope: in_scope.len(),
        names_in_scope: names.len(),
        missing_overloads,
        missing_names,
    }
}

/// `ferrojit ops --missing`: the count on the first line, then each missing overload on a line
/// of its own, with PyTorch's CPU availability.
pub fn missing_operators() -> Result<(), String> {
    let report = missing_report();
    let mut text = format!(
        "missing: {} of {} overloads ({} of {} operator names have no overload) in torch 2.15's \
         public aten list, less left_out.txt\n",
        report.missing_overloads.len(),
        report.overloads_in_scope,
        report.missing_names.len(),
        report.names_in_scope,
    );
    for overload in &report.missing_overloads {
        text.push_str(&format!(
            "  {}\t{}\n",
            overload.full_name, overload.cpu_availability
        ));
    }
    write_stdout(&text)
}
