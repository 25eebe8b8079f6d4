//! Operator upgraders: old archives keep the behaviour of the operators they were saved with.
//!
//! An archive's `version` record says which operator semantics its code was written against.
//! When PyTorch changed an operator incompatibly it bumped that number and kept an
//! *upgrader*, a TorchScript function that reproduces the old behaviour with today's
//! operators. Loading an archive older than an operator's bump, PyTorch matches calls to
//! the operator against its *old* schema (the current overload is not offered) and
//! replaces each such call with the upgrader.
//!
//! ferrojit does the same at compile time: a unit given the archive's version
//! ([`CompilationUnit::set_operator_version`]) offers the old schemas below in place of the
//! current overloads they replace, and a call that matches one becomes a
//! `prim::CallFunction` of the upgrader, defined (from [`UPGRADERS_SOURCE`]) under the
//! reserved qualifier [`UPGRADERS_QUALIFIER`], whose own bodies compile with today's
//! operators. The changes covered (PyTorch's `version_map.cpp`):
//!
//! - before 4, `aten::div` / `div_` / `div.out` of two integer operands truncated;
//! - before 5, `aten::full` with an integer fill value and no dtype made a float tensor;
//! - before 8 (`linspace`) and 9 (`logspace`), `steps` was optional, defaulting to 100;
//! - before 10, `aten::gelu` had no `approximate` argument (so a call passing it is refused).
//!
//! Overloads whose old behaviour equals today's (`div` with `rounding_mode`, `full.out`) need
//! no replacement; variants ferrojit does not register (`linspace.out`, `logspace.out`,
//! `full.names`) are left out.

use std::sync::{Arc, OnceLock};

use ferrojit_ir::{parse_schema, FunctionSchema};

use crate::compilation_unit::CompilationUnit;
use crate::error::FrontendError;
use crate::source::SourceFile;

/// The qualifier the upgrader functions are defined under. It lies inside `__torch__` so
/// that an archive re-saved by ferrojit (which prints the calls and the functions) still
/// loads in PyTorch. PyTorch's archives do not use it (that would take a Python module
/// named `__upgraders__`).
pub const UPGRADERS_QUALIFIER: &str = "__torch__.__upgraders__";

/// One operator change: calls to `old_schema` in archives older than `bumped_at` run
/// `function` (a function of [`UPGRADERS_SOURCE`]).
struct Entry {
    bumped_at: u64,
    old_schema: &'static str,
    function: &'static str,
}

const ENTRIES: &[Entry] = &[
    Entry {
        bumped_at: 4,
        old_schema: "aten::div.Tensor(Tensor self, Tensor other) -> Tensor",
        function: "div_tensor_before_4",
    },
    Entry {
        bumped_at: 4,
        old_schema: "aten::div.Scalar(Tensor self, Scalar other) -> Tensor",
        function: "div_scalar_before_4",
    },
    Entry {
        bumped_at: 4,
        old_schema: "aten::div.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        function: "div_out_before_4",
    },
    Entry {
        bumped_at: 4,
        old_schema: "aten::div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
        function: "div__tensor_before_4",
    },
    Entry {
        bumped_at: 4,
        old_schema: "aten::div_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)",
        function: "div__scalar_before_4",
    },
    Entry {
        bumped_at: 5,
        old_schema: "aten::full(int[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
        function: "full_before_5",
    },
    Entry {
        bumped_at: 5,
        old_schema: "aten::full.out(int[] size, Scalar fill_value, *, Tensor(a!) out) -> Tensor(a!)",
        function: "full_out_before_5",
    },
    Entry {
        bumped_at: 8,
        old_schema: "aten::linspace.out(Scalar start, Scalar end, int? steps=None, *, Tensor(a!) out) -> Tensor(a!)",
        function: "linspace_out_before_8",
    },
    Entry {
        bumped_at: 9,
        old_schema: "aten::logspace.out(Scalar start, Scalar end, int? steps=None, float base=10.0, *, Tensor(a!) out) -> Tensor(a!)",
        function: "logspace_out_before_9",
    },
    Entry {
        bumped_at: 8,
        old_schema: "aten::linspace(Scalar start, Scalar end, int? steps=None, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
        function: "linspace_before_8",
    },
    Entry {
        bumped_at: 9,
        old_schema: "aten::logspace(Scalar start, Scalar end, int? steps=None, float base=10.0, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
        function: "logspace_before_9",
    },
    Entry {
        bumped_at: 10,
        old_schema: "aten::gelu(Tensor self) -> Tensor",
        function: "gelu_before_10",
    },
    Entry {
        bumped_at: 10,
        old_schema: "aten::gelu.out(Tensor self, *, Tensor(a!) out) -> Tensor",
        function: "gelu_out_before_10",
    },
];

/// The upgraders, written against today's operators. Parameter names follow the old
/// schemas, so keyword arguments of the original call still match. Whether a `number` is a
/// float is read from the dtype `torch.full` gives it (a static `isinstance` on `number`
/// cannot tell).
pub const UPGRADERS_SOURCE: &str = r#"
def div_tensor_before_4(self: Tensor, other: Tensor) -> Tensor:
    if self.is_floating_point() or other.is_floating_point():
        return torch.div(self, other)
    return torch.div(self, other, rounding_mode="trunc")

def div_scalar_before_4(self: Tensor, other: number) -> Tensor:
    if self.is_floating_point() or torch.full([], other).is_floating_point():
        return torch.div(self, other)
    return torch.div(self, other, rounding_mode="trunc")

def div_out_before_4(self: Tensor, other: Tensor, out: Tensor) -> Tensor:
    if self.is_floating_point() or other.is_floating_point() or out.is_floating_point():
        return torch.div(self, other, out=out)
    return torch.div(self, other, rounding_mode="trunc", out=out)

def div__tensor_before_4(self: Tensor, other: Tensor) -> Tensor:
    if self.is_floating_point() or other.is_floating_point():
        return self.div_(other)
    return self.div_(other, rounding_mode="trunc")

def div__scalar_before_4(self: Tensor, other: number) -> Tensor:
    if self.is_floating_point() or torch.full([], other).is_floating_point():
        return self.div_(other)
    return self.div_(other, rounding_mode="trunc")

def full_before_5(size: List[int], fill_value: number, dtype: Optional[int] = None, layout: Optional[int] = None, device: Optional[Device] = None, pin_memory: Optional[bool] = None) -> Tensor:
    if dtype is None:
        return torch.full(size, float(fill_value), layout=layout, device=device, pin_memory=pin_memory)
    return torch.full(size, fill_value, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory)

def linspace_before_8(start: number, end: number, steps: Optional[int] = None, dtype: Optional[int] = None, layout: Optional[int] = None, device: Optional[Device] = None, pin_memory: Optional[bool] = None) -> Tensor:
    if steps is None:
        return torch.linspace(start, end, 100, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory)
    return torch.linspace(start, end, steps, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory)

def logspace_before_9(start: number, end: number, steps: Optional[int] = None, base: float = 10.0, dtype: Optional[int] = None, layout: Optional[int] = None, device: Optional[Device] = None, pin_memory: Optional[bool] = None) -> Tensor:
    if steps is None:
        return torch.logspace(start, end, 100, base, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory)
    return torch.logspace(start, end, steps, base, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory)

def full_out_before_5(size: List[int], fill_value: number, *, out: Tensor) -> Tensor:
    return torch.full(size, fill_value, out=out)

def linspace_out_before_8(start: number, end: number, steps: Optional[int] = None, *, out: Tensor) -> Tensor:
    if steps is None:
        return torch.linspace(start, end, 100, out=out)
    return torch.linspace(start, end, steps, out=out)

def logspace_out_before_9(start: number, end: number, steps: Optional[int] = None, base: float = 10.0, *, out: Tensor) -> Tensor:
    if steps is None:
        return torch.logspace(start, end, 100, base, out=out)
    return torch.logspace(start, end, steps, base, out=out)

def gelu_before_10(self: Tensor) -> Tensor:
    return torch.gelu(self, approximate="none")

def gelu_out_before_10(self: Tensor, out: Tensor) -> Tensor:
    return torch.gelu(self, approximate="none", out=out)
"#;

/// An old schema in force for the unit's version, and the upgrader that implements it.
pub(crate) struct Upgrader {
    pub schema: Arc<FunctionSchema>,
    pub function: String,
}

fn parsed_entries() -> &'static [(Arc<FunctionSchema>, &'static Entry)] {
    static PARSED: OnceLock<Vec<(Arc<FunctionSchema>, &'static Entry)>> = OnceLock::new();
    PARSED.get_or_init(|| {
        ENTRIES
            .iter()
            .map(|entry| {
                let schema = parse_schema(entry.old_schema)
                    .unwrap_or_else(|e| panic!("upgrader schema {}: {e}", entry.old_schema));
                (Arc::new(schema), entry)
            })
            .collect()
    })
}

/// The upgraders that apply to calls of `operator` (e.g. `aten::div`) in code of the given
/// archive version.
pub(crate) fn for_operator(operator: &str, version: u64) -> Vec<Upgrader> {
    parsed_entries()
        .iter()
        .filter(|(schema, entry)| schema.name == operator && version < entry.bumped_at)
        .map(|(schema, entry)| Upgrader {
            schema: schema.clone(),
            function: format!("{UPGRADERS_QUALIFIER}.{}", entry.function),
        })
        .collect()
}

/// Whether any upgrader applies to code of this archive version.
pub fn any_apply(version: u64) -> bool {
    ENTRIES.iter().any(|entry| version < entry.bumped_at)
}

/// Gives `unit` the archive's version. The upgrader functions themselves are defined the first
/// time a call needs one ([`define_in`]): most archives of today's torch carry version 3, old
/// enough for the `div` upgraders, yet never call `div` with integer inputs, and parsing the
/// upgraders' source on every load cost a tenth of resnet18's load time.
pub fn configure(unit: &mut CompilationUnit, version: u64) -> Result<(), FrontendError> {
    unit.set_operator_version(Some(version));
    Ok(())
}

/// Defines the upgrader functions in `unit`, once.
pub(crate) fn define_in(unit: &CompilationUnit) -> Result<(), FrontendError> {
    unit.define_source_once(UPGRADERS_QUALIFIER, || {
        SourceFile::new(format!("<{UPGRADERS_QUALIFIER}>"), UPGRADERS_SOURCE)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_old_schema_parses_and_versions_select_entries() {
        assert_eq!(parsed_entries().len(), ENTRIES.len());
        assert_eq!(for_operator("aten::div", 3).len(), 3);
        assert_eq!(for_operator("aten::div_", 3).len(), 2);
        assert!(for_operator("aten::div", 4).is_empty());
        assert_eq!(for_operator("aten::gelu", 9).len(), 2);
        assert!(for_operator("aten::gelu", 10).is_empty());
        assert!(any_apply(9));
        assert!(!any_apply(10));
    }
}
