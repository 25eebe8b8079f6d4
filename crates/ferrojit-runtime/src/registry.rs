//! The operator registry: PyTorch schemas paired with kernels, looked up by full name
//! (`aten::add.Tensor`), by name for the compiler's overload matching, or by argument types.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use ferrojit_ir::{parse_schema, FunctionSchema, Type};

use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;

/// The interpreter's operand stack. A kernel pops its arguments (pushed in schema order; a
/// vararg schema gets the number of inputs pushed last, as in PyTorch) and pushes its results.
pub type Stack = Vec<IValue>;

/// A kernel: runs one operator on the stack.
pub type Kernel = Arc<dyn Fn(&mut Stack) -> Result<()> + Send + Sync>;

/// A plain-function kernel, as used in the builtin tables.
pub type KernelFn = fn(&mut Stack) -> Result<()>;

/// A registered operator.
#[derive(Clone)]
pub struct Operator {
    pub schema: Arc<FunctionSchema>,
    pub kernel: Kernel,
}

impl fmt::Debug for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Operator({})", self.schema)
    }
}

/// Operators keyed by schema.
#[derive(Default)]
pub struct OperatorRegistry {
    operators: Vec<Operator>,
    by_full_name: HashMap<String, usize>,
    by_name: HashMap<String, Vec<usize>>,
    registration_errors: Vec<String>,
}

impl fmt::Debug for OperatorRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OperatorRegistry")
            .field("operators", &self.operators.len())
            .finish()
    }
}

impl OperatorRegistry {
    /// An empty registry.
    pub fn new() -> OperatorRegistry {
        OperatorRegistry::default()
    }

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

    /// Registers a kernel under a schema string. Fails on a malformed schema or a full name
    /// that is already registered.
    pub fn register(&mut self, schema: &str, kernel: KernelFn) -> Result<()> {
        self.register_boxed(schema, Arc::new(kernel))
    }

    /// Registers a closure kernel under a schema string.
    pub fn register_boxed(&mut self, schema: &str, kernel: Kernel) -> Result<()> {
        let parsed = parse_schema(schema).map_err(|e| RuntimeError::Registration(e.to_string()))?;
        let full_name = parsed.full_name();
        if self.by_full_name.contains_key(&full_name) {
            return Err(RuntimeError::Registration(format!(
                "operator {full_name} is already registered"
            )));
        }
        let index = self.operators.len();
        self.by_name
            .entry(parsed.name.clone())
            .or_default()
            .push(index);
        self.by_full_name.insert(full_name, index);
        self.operators.push(Operator {
            schema: Arc::new(parsed),
            kernel,
        });
        Ok(())
    }

    /// Registers a table of builtins, recording (not panicking on) failures; see
    /// [`OperatorRegistry::registration_errors`].
    pub fn register_table(&mut self, table: &[(&str, KernelFn)]) {
        for (schema, kernel) in table {
            if let Err(error) = self.register(schema, *kernel) {
                self.registration_errors.push(error.to_string());
            }
        }
    }

    /// Failures recorded by `register_table` (empty for a correct builtin table).
    pub fn registration_errors(&self) -> &[String] {
        &self.registration_errors
    }

    /// The operator with this full name (`aten::add.Tensor`, or `aten::relu`).
    pub fn lookup(&self, full_name: &str) -> Option<&Operator> {
        self.by_full_name
            .get(full_name)
            .and_then(|&index| self.operators.get(index))
    }

    /// Every overload registered under `qualified_name` (`aten::add`), in registration order.
    pub fn overloads(&self, qualified_name: &str) -> Vec<Arc<FunctionSchema>> {
        self.by_name
            .get(qualified_name)
            .map(|indices| {
                indices
                    .iter()
                    .filter_map(|&i| self.operators.get(i))
                    .map(|op| op.schema.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// All operators in registration order.
    pub fn operators(&self) -> &[Operator] {
        &self.operators
    }

    /// The first overload of `name` whose arguments accept values of `types` (positionally;
    /// trailing arguments with defaults may be omitted). For nodes without a stored schema.
    pub fn find_by_types(&self, name: &str, types: &[Type]) -> Option<&Operator> {
        let indices = self.by_name.get(name)?;
        indices
            .iter()
            .filter_map(|&i| self.operators.get(i))
            .find(|op| schema_accepts(&op.schema, types))
    }
}

/// Whether `schema` accepts positional arguments of these types.
pub fn schema_accepts(schema: &FunctionSchema, types: &[Type]) -> bool {
    let arguments = &schema.arguments;
    if types.len() > arguments.len() && !schema.is_vararg {
        return false;
    }
    if types.len() < arguments.len()
        && arguments[types.len()..]
            .iter()
            .any(|argument| argument.default.is_none())
    {
        return false;
    }
    let mut bindings: HashMap<String, Type> = HashMap::new();
    arguments
        .iter()
        .zip(types)
        .all(|(argument, actual)| type_accepts(&argument.ty, actual, &mut bindings))
}

/// Whether a value of type `actual` can be passed where `formal` is declared, binding type
/// variables on first use.
fn type_accepts(formal: &Type, actual: &Type, bindings: &mut HashMap<String, Type>) -> bool {
    match (formal, actual) {
        (Type::Var(name), _) => match bindings.get(name) {
            Some(bound) => {
                let bound = bound.clone();
                actual.is_subtype_of(&bound) || bound.is_subtype_of(actual)
            }
            None => {
                bindings.insert(name.clone(), actual.clone());
                true
            }
        },
        (Type::Any, _) => true,
        (Type::Number, Type::Int | Type::Float | Type::Bool | Type::Number) => true,
        (Type::Optional(_), Type::NoneType) => true,
        (Type::Optional(inner), Type::Optional(actual_inner)) => {
            type_accepts(inner, actual_inner, bindings)
        }
        (Type::Optional(inner), other) => type_accepts(inner, other, bindings),
        (Type::List(formal_element), Type::List(actual_element)) => {
            type_accepts(formal_element, actual_element, bindings)
        }
        (Type::Tuple(formal_elements), Type::Tuple(actual_elements)) => {
            formal_elements.len() == actual_elements.len()
                && formal_elements
                    .iter()
                    .zip(actual_elements)
                    .all(|(f, a)| type_accepts(f, a, bindings))
        }
        (Type::Dict(fk, fv), Type::Dict(ak, av)) => {
            type_accepts(fk, ak, bindings) && type_accepts(fv, av, bindings)
        }
        (formal, actual) => actual.is_subtype_of(formal),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noop(_stack: &mut Stack) -> Result<()> {
        Ok(())
    }

    #[test]
    fn overloads_keep_registration_order_and_types_resolve() {
        let mut registry = OperatorRegistry::new();
        registry
            .register("aten::add.int(int a, int b) -> int", noop)
            .unwrap();
        registry
            .register("aten::add.float(float a, float b) -> float", noop)
            .unwrap();
        registry
            .register("aten::add(Scalar a, Scalar b) -> Scalar", noop)
            .unwrap();
        let names: Vec<String> = registry
            .overloads("aten::add")
            .iter()
            .map(|s| s.full_name())
            .collect();
        assert_eq!(names, vec!["aten::add.int", "aten::add.float", "aten::add"]);
        let op = registry
            .find_by_types("aten::add", &[Type::Float, Type::Float])
            .unwrap();
        assert_eq!(op.schema.full_name(), "aten::add.float");
        let op = registry
            .find_by_types("aten::add", &[Type::Int, Type::Float])
            .unwrap();
        assert_eq!(op.schema.full_name(), "aten::add");
        assert!(registry.find_by_types("aten::add", &[Type::Str]).is_none());
        assert!(registry
            .register("aten::add.int(int a, int b) -> int", noop)
            .is_err());
        assert!(registry.register("aten::add.bad(int a", noop).is_err());
    }

    #[test]
    fn type_variables_bind_once() {
        let mut registry = OperatorRegistry::new();
        registry
            .register(
                "aten::append.t(t[](a!) self, t(c -> *) el) -> t[](a!)",
                noop,
            )
            .unwrap();
        assert!(registry
            .find_by_types("aten::append", &[Type::list(Type::Int), Type::Int])
            .is_some());
        assert!(registry
            .find_by_types("aten::append", &[Type::list(Type::Int), Type::Str])
            .is_none());
    }
}
