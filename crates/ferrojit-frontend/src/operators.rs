//! The compiler's view of the operator registry: schemas by name, nothing about kernels.

use std::sync::Arc;

use ferrojit_ir::FunctionSchema;

/// Supplies the schemas of registered operators to the compiler. The runtime's registry
/// implements it; tests can implement it over a handful of parsed schema strings.
pub trait OperatorSchemas: Send + Sync {
    /// Every overload registered under `qualified_name` (e.g. `aten::add`), in registration
    /// order. An unknown name gives an empty list.
    fn overloads(&self, qualified_name: &str) -> Vec<Arc<FunctionSchema>>;
}
