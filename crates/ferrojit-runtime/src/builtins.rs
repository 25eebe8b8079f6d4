//! The builtin registry: `OperatorRegistry`'s constructors that fill it with every builtin
//! operator family of `ops/`. They live here, not in `registry.rs`, so that the registry (a
//! data structure the operator files register into) does not depend on the operator files.

use std::sync::OnceLock;

use crate::error::Result;
use crate::registry::OperatorRegistry;

impl OperatorRegistry {
    /// A fresh registry with every builtin operator (see `ops/`).
    pub fn with_builtins() -> OperatorRegistry {
        let mut registry = OperatorRegistry::new();
        crate::ops::register_builtins(&mut registry);
        registry
    }

    /// The shared builtin registry, built on first use. The interpreter uses this one.
    pub fn global() -> &'static OperatorRegistry {
        static GLOBAL: OnceLock<OperatorRegistry> = OnceLock::new();
        GLOBAL.get_or_init(OperatorRegistry::with_builtins)
    }

    /// A fresh registry with every builtin operator, failing on the first builtin that cannot
    /// be registered (a malformed schema, a full name declared twice, a rule for an operator
    /// that does not exist). [`OperatorRegistry::with_builtins`] records such failures in
    /// [`OperatorRegistry::registration_errors`] instead, because the global registry cannot
    /// fail; a test keeps both empty.
    pub fn try_with_builtins() -> Result<OperatorRegistry> {
        let mut registry = OperatorRegistry::new();
        crate::ops::try_register_builtins(&mut registry)?;
        Ok(registry)
    }
}
