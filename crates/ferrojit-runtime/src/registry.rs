//! The operator registry: PyTorch schemas paired with kernels, looked up by full name
//! (`aten::add.Tensor`), by name for the compiler's overload matching, or by argument types.
//!
//! Besides the builtin tables, operators can be added at any time through a shared reference
//! ([`OperatorRegistry::add_operator`], or [`register_operator`] for the global registry):
//! this is the public custom-operator API (`mylib::op(Tensor x, int k) -> Tensor`). An archive
//! calling `ops.mylib.op(...)` compiles and runs once the operator is registered, as long as
//! registration happens before the method using it is first called (methods compile lazily).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};

use ferrojit_ir::{parse_schema, FunctionSchema, Type};

use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::opdef::{
    argument_kernel_on_stack, DeclaredKernel, OperatorDeclaration, OperatorDefinition,
    OverloadRank, ShapeRule,
};

/// The interpreter's operand stack. A kernel pops its arguments (pushed in schema order; a
/// vararg schema gets the number of inputs pushed last, as in PyTorch) and pushes its results.
pub type Stack = Vec<IValue>;

/// A kernel: runs one operator on the stack.
pub type Kernel = Arc<dyn Fn(&mut Stack) -> Result<()> + Send + Sync>;

/// A plain-function kernel, as used in the builtin tables.
pub type KernelFn = fn(&mut Stack) -> Result<()>;

/// A registered operator: the record of one overload (see [`OperatorDefinition`]). The
/// interpreter reads its `schema` and `kernel`; passes read its flags and rules.
pub type Operator = OperatorDefinition;

/// Operator definitions keyed by full name and by name. Within one name, overloads are kept
/// in [`OverloadRank`] order, then in the order they were registered.
#[derive(Default)]
pub struct OperatorRegistry {
    operators: Vec<Operator>,
    by_full_name: HashMap<String, usize>,
    /// Indices into `operators`, sorted by (rank, index).
    by_name: HashMap<String, Vec<usize>>,
    registration_errors: Vec<String>,
    /// Operators added through `&self` (custom operators), after the registry may be shared.
    added: RwLock<AddedOperators>,
}

/// Operators registered through [`OperatorRegistry::add_operator`]. Each one is leaked so that
/// lookups can hand out plain references while other threads keep registering: custom
/// operators live as long as the process, like PyTorch's `TORCH_LIBRARY` registrations.
#[derive(Default)]
struct AddedOperators {
    in_order: Vec<&'static Operator>,
    by_full_name: HashMap<String, &'static Operator>,
    by_name: HashMap<String, Vec<&'static Operator>>,
}

impl fmt::Debug for OperatorRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OperatorRegistry")
            .field("operators", &self.operators.len())
            .field("added_operators", &self.read_added().in_order.len())
            .finish()
    }
}

/// Registers a custom operator in the global registry (the one the interpreter and the
/// archive loader use): `schema` is a PyTorch schema string such as
/// `mylib::op(Tensor x, int k) -> Tensor`, and `kernel` pops the arguments (pushed in schema
/// order, defaults filled in) and pushes the results. Fails on a malformed schema or a full
/// name (`mylib::op`, `mylib::op.overload`) that is already registered.
///
/// ```
/// use ferrojit_runtime::{register_operator, IValue, Stack};
/// register_operator("doc_example::twice(int x) -> int", |stack: &mut Stack| {
///     let [x] = ferrojit_runtime::registry::pop_arguments::<1>(stack)?;
///     stack.push(IValue::Int(x.to_int()? * 2));
///     Ok(())
/// })
/// .unwrap();
/// ```
pub fn register_operator<F>(schema: &str, kernel: F) -> Result<()>
where
    F: Fn(&mut Stack) -> Result<()> + Send + Sync + 'static,
{
    OperatorRegistry::global().add_operator(schema, Arc::new(kernel))
}

/// Pops a kernel's `N` arguments, returned in schema order (first argument first). Fails
/// (instead of panicking) when the stack holds fewer values.
pub fn pop_arguments<const N: usize>(stack: &mut Stack) -> Result<[IValue; N]> {
    if stack.len() < N {
        return Err(RuntimeError::InvalidGraph(format!(
            "operator expected {N} arguments on the stack but found {}",
            stack.len()
        )));
    }
    // No allocation: the values are moved straight from the stack into the array (the
    // length was checked above, so the drain yields exactly `N` values).
    let mut values = stack.drain(stack.len() - N..);
    Ok(std::array::from_fn(|_| values.next().unwrap_or_default()))
}

/// `(argument index, return index)` for each tensor argument the operator writes and
/// returns under the same alias set (`Tensor(a!) self ... -> Tensor(a!)`, `*, Tensor(a!) out`).
fn written_and_returned(schema: &FunctionSchema) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    for (argument_index, argument) in schema.arguments.iter().enumerate() {
        let Some(alias) = argument.alias_info.as_ref().filter(|alias| alias.is_write) else {
            continue;
        };
        let is_tensor = match &argument.ty {
            Type::Tensor => true,
            Type::Optional(inner) => matches!(**inner, Type::Tensor),
            _ => false,
        };
        let returned = schema.returns.iter().position(|ret| {
            ret.alias_info
                .as_ref()
                .is_some_and(|info| info.before_sets == alias.before_sets)
        });
        if let (true, Some(return_index)) = (is_tensor, returned) {
            pairs.push((argument_index, return_index));
        }
    }
    pairs
}

/// Wraps the kernel of an operator that writes a tensor argument and returns it (an in-place
/// op, an `out=` variant) so that the argument's tensor becomes what the kernel returned and
/// the returned value is the argument itself. PyTorch changes that one `TensorImpl` when it
/// resizes `out=` or changes `self`'s geometry (`unsqueeze_`, `resize_`), so every handle to
/// it (a caller's variable, a list element) sees the change; ferrojit's kernels return the
/// changed tensor, and the [`crate::ivalue::TensorCell`] shared by those handles takes it.
fn with_alias_write_back(schema: &FunctionSchema, kernel: Kernel) -> Kernel {
    let pairs = written_and_returned(schema);
    if pairs.is_empty() || schema.is_vararg || schema.is_varret {
        return kernel;
    }
    let arguments = schema.arguments.len();
    let returns = schema.returns.len();
    Arc::new(move |stack: &mut Stack| {
        let base = stack.len().checked_sub(arguments).ok_or_else(|| {
            RuntimeError::InvalidGraph(format!(
                "operator expected {arguments} arguments on the stack but found {}",
                stack.len()
            ))
        })?;
        let written: Vec<(IValue, usize)> = pairs
            .iter()
            .map(|&(argument, ret)| (stack[base + argument].clone(), ret))
            .collect();
        kernel(stack)?;
        let Some(returned_base) = stack.len().checked_sub(returns) else {
            return Ok(());
        };
        for (argument, ret) in written {
            let IValue::Tensor(cell) = &argument else {
                continue;
            };
            let slot = &mut stack[returned_base + ret];
            let IValue::Tensor(result) = slot else {
                continue;
            };
            if !Arc::ptr_eq(result, cell) {
                let tensor = result.get();
                if !Arc::ptr_eq(&tensor, &cell.get()) {
                    cell.set(tensor);
                }
            }
            *slot = argument;
        }
        Ok(())
    })
}

impl OperatorRegistry {
    /// An empty registry.
    pub fn new() -> OperatorRegistry {
        OperatorRegistry::default()
    }

    /// Registers a kernel under a schema string. Fails on a malformed schema or a full name
    /// that is already registered.
    pub fn register(&mut self, schema: &str, kernel: KernelFn) -> Result<()> {
        self.register_boxed(schema, Arc::new(kernel))
    }

    /// Registers a closure kernel under a schema string.
    pub fn register_boxed(&mut self, schema: &str, kernel: Kernel) -> Result<()> {
        self.register_declaration(
            OverloadRank::Builtin,
            OperatorDeclaration {
                schema: schema.to_string().into(),
                kernel: DeclaredKernel::Stack(kernel),
                shape_rule: None,
                fuser_category: None,
                arity: None,
            },
        )
    }

    /// Registers one declared operator with this overload rank. Fails on a malformed schema
    /// or a full name that is already registered.
    pub fn register_declaration(
        &mut self,
        rank: OverloadRank,
        declaration: OperatorDeclaration,
    ) -> Result<()> {
        let parsed = parse_schema(&declaration.schema).map_err(|error| {
            RuntimeError::Registration(format!("{}: {error}", declaration.schema))
        })?;
        if let Some(arity) = declaration.arity {
            if arity != parsed.arguments.len() || parsed.is_vararg {
                return Err(RuntimeError::Registration(format!(
                    "{}: the schema declares {} arguments but its kernel takes {arity}",
                    declaration.schema,
                    parsed.arguments.len()
                )));
            }
        }
        let kernel = match declaration.kernel {
            DeclaredKernel::Stack(kernel) => kernel,
            DeclaredKernel::Arguments(kernel) => {
                argument_kernel_on_stack(parsed.arguments.len(), kernel)
            }
        };
        let mut definition = OperatorDefinition::new(parsed, kernel, rank);
        definition.shape_rule = declaration.shape_rule;
        definition.fuser_category = declaration.fuser_category;
        self.insert_definition(definition)
    }

    /// Registers a family of declarations, all with one overload rank, stopping at the first
    /// that fails.
    pub fn register_family(
        &mut self,
        rank: OverloadRank,
        declarations: impl IntoIterator<Item = OperatorDeclaration>,
    ) -> Result<()> {
        for declaration in declarations {
            self.register_declaration(rank, declaration)?;
        }
        Ok(())
    }

    /// Stores a definition whose kernel is not yet wrapped for alias write-back.
    fn insert_definition(&mut self, mut definition: OperatorDefinition) -> Result<()> {
        let full_name = definition.schema.full_name();
        if self.by_full_name.contains_key(&full_name)
            || self.read_added().by_full_name.contains_key(&full_name)
        {
            return Err(RuntimeError::Registration(format!(
                "operator {full_name} is already registered"
            )));
        }
        definition.kernel = with_alias_write_back(&definition.schema, definition.kernel);
        let index = self.operators.len();
        let rank = definition.overload_rank;
        let name = definition.schema.name.clone();
        self.operators.push(definition);
        let overloads = self.by_name.entry(name).or_default();
        // Keep (rank, index) order: a later index goes after every overload of a lower or
        // equal rank.
        let operators = &self.operators;
        let position = overloads.partition_point(|&other| {
            operators
                .get(other)
                .is_some_and(|operator| operator.overload_rank <= rank)
        });
        overloads.insert(position, index);
        self.by_full_name.insert(full_name, index);
        Ok(())
    }

    /// Registers `definition`'s record again under another name (an operator alias such as
    /// `aten::subtract`), sharing its kernel, flags and rules.
    pub(crate) fn register_renamed(
        &mut self,
        definition: &OperatorDefinition,
        name: &str,
    ) -> Result<()> {
        let mut schema = (*definition.schema).clone();
        schema.name = name.to_string();
        let mut renamed = definition.clone();
        renamed.schema = Arc::new(schema);
        // The kernel is already wrapped; storing it directly avoids a second wrapper.
        let full_name = renamed.schema.full_name();
        if self.by_full_name.contains_key(&full_name)
            || self.read_added().by_full_name.contains_key(&full_name)
        {
            return Err(RuntimeError::Registration(format!(
                "operator {full_name} is already registered"
            )));
        }
        let index = self.operators.len();
        self.by_name
            .entry(name.to_string())
            .or_default()
            .push(index);
        self.by_full_name.insert(full_name, index);
        self.operators.push(renamed);
        Ok(())
    }

    /// The builtin operator `full_name`, to fill in one of its record's slots; `what` names
    /// the slot's value for the error when no such operator is registered.
    fn builtin_mut(&mut self, full_name: &str, what: &str) -> Result<&mut Operator> {
        self.by_full_name
            .get(full_name)
            .and_then(|&index| self.operators.get_mut(index))
            .ok_or_else(|| {
                RuntimeError::Registration(format!(
                    "{what} names {full_name}, which is not registered"
                ))
            })
    }

    /// Gives the builtin operator `full_name` a shape-and-dtype rule. Fails when no such
    /// operator is registered, so a rule never silently names a missing overload.
    pub fn set_shape_rule(&mut self, full_name: &str, rule: ShapeRule) -> Result<()> {
        self.builtin_mut(full_name, "a shape rule")?.shape_rule = Some(rule);
        Ok(())
    }

    /// Gives the builtin operator `full_name` a fuser category; fails like
    /// [`OperatorRegistry::set_shape_rule`].
    pub fn set_fuser_category(
        &mut self,
        full_name: &str,
        category: crate::opdef::FuserCategory,
    ) -> Result<()> {
        self.builtin_mut(full_name, "a fuser category")?
            .fuser_category = Some(category);
        Ok(())
    }

    /// Adds an operator through a shared reference, so it works on the global registry while
    /// it is in use (see [`register_operator`]). Same checks as [`OperatorRegistry::register`].
    pub fn add_operator(&self, schema: &str, kernel: Kernel) -> Result<()> {
        let parsed = parse_schema(schema).map_err(|e| RuntimeError::Registration(e.to_string()))?;
        self.add_definition(OperatorDefinition::new(
            parsed,
            kernel,
            OverloadRank::Custom,
        ))
    }

    /// Adds a custom operator's whole record (flags, shape rule, derivative, fuser category
    /// filled in by its author) through a shared reference. Its kernel is wrapped for alias
    /// write-back here, as every registered kernel is.
    pub fn add_definition(&self, mut definition: OperatorDefinition) -> Result<()> {
        let full_name = definition.schema.full_name();
        let mut added = self.added.write().unwrap_or_else(PoisonError::into_inner);
        if self.by_full_name.contains_key(&full_name) || added.by_full_name.contains_key(&full_name)
        {
            return Err(RuntimeError::Registration(format!(
                "operator {full_name} is already registered"
            )));
        }
        let name = definition.schema.name.clone();
        definition.kernel = with_alias_write_back(&definition.schema, definition.kernel);
        let operator: &'static Operator = Box::leak(Box::new(definition));
        added.in_order.push(operator);
        added.by_full_name.insert(full_name, operator);
        added.by_name.entry(name).or_default().push(operator);
        Ok(())
    }

    /// Operators added with [`OperatorRegistry::add_operator`], in registration order.
    pub fn added_operators(&self) -> Vec<Operator> {
        self.read_added()
            .in_order
            .iter()
            .map(|&operator| operator.clone())
            .collect()
    }

    fn read_added(&self) -> std::sync::RwLockReadGuard<'_, AddedOperators> {
        self.added.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a failed builtin registration; see [`OperatorRegistry::registration_errors`].
    pub(crate) fn push_registration_error(&mut self, error: String) {
        self.registration_errors.push(error);
    }

    /// Registers a table of plain-function kernels, recording (not panicking on) failures;
    /// see [`OperatorRegistry::registration_errors`]. The builtins go through
    /// [`OperatorRegistry::register_family`] instead, which stops at the first failure.
    pub fn register_table(&mut self, table: &[(&str, KernelFn)]) {
        for (schema, kernel) in table {
            if let Err(error) = self.register(schema, *kernel) {
                self.registration_errors.push(error.to_string());
            }
        }
    }

    /// Failures recorded by `register_table` and by [`OperatorRegistry::with_builtins`] (empty
    /// for correct builtin tables).
    pub fn registration_errors(&self) -> &[String] {
        &self.registration_errors
    }

    /// The operator with this full name (`aten::add.Tensor`, or `aten::relu`).
    pub fn lookup(&self, full_name: &str) -> Option<&Operator> {
        if let Some(operator) = self
            .by_full_name
            .get(full_name)
            .and_then(|&index| self.operators.get(index))
        {
            return Some(operator);
        }
        let added: Option<&'static Operator> =
            self.read_added().by_full_name.get(full_name).copied();
        added
    }

    /// Every overload registered under `qualified_name` (`aten::add`), in [`OverloadRank`]
    /// order, then registration order (builtins first, then custom operators).
    pub fn overloads(&self, qualified_name: &str) -> Vec<Arc<FunctionSchema>> {
        let mut schemas: Vec<Arc<FunctionSchema>> = self
            .by_name
            .get(qualified_name)
            .map(|indices| {
                indices
                    .iter()
                    .filter_map(|&i| self.operators.get(i))
                    .map(|op| op.schema.clone())
                    .collect()
            })
            .unwrap_or_default();
        if let Some(added) = self.read_added().by_name.get(qualified_name) {
            schemas.extend(added.iter().map(|op| op.schema.clone()));
        }
        schemas
    }

    /// Operators registered with `&mut self` (the builtin families), in registration order; see
    /// [`OperatorRegistry::added_operators`] for the others.
    pub fn operators(&self) -> &[Operator] {
        &self.operators
    }

    /// The first overload of `name` whose arguments accept values of `types` (positionally;
    /// trailing arguments with defaults may be omitted). For nodes without a stored schema.
    pub fn find_by_types(&self, name: &str, types: &[Type]) -> Option<&Operator> {
        let builtin = self.by_name.get(name).and_then(|indices| {
            indices
                .iter()
                .filter_map(|&i| self.operators.get(i))
                .find(|op| schema_accepts(&op.schema, types))
        });
        if builtin.is_some() {
            return builtin;
        }
        let added: Option<&'static Operator> =
            self.read_added().by_name.get(name).and_then(|ops| {
                ops.iter()
                    .copied()
                    .find(|op| schema_accepts(&op.schema, types))
            });
        added
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

    fn push_seven(stack: &mut Stack) -> Result<()> {
        stack.push(IValue::Int(7));
        Ok(())
    }

    #[test]
    fn operators_added_through_a_shared_reference_are_found() {
        let mut registry = OperatorRegistry::new();
        registry
            .register("mylib::op.int(int a) -> int", noop)
            .unwrap();
        let shared = &registry;
        shared
            .add_operator("mylib::op(Tensor x, int k) -> Tensor", Arc::new(push_seven))
            .unwrap();
        // Duplicates are refused whichever way they were registered first.
        assert!(shared
            .add_operator("mylib::op(Tensor x) -> Tensor", Arc::new(noop))
            .is_err());
        assert!(shared
            .add_operator("mylib::op.int(int a) -> int", Arc::new(noop))
            .is_err());
        assert!(registry.register("mylib::op(int a) -> int", noop).is_err());
        assert!(registry
            .add_operator("mylib::broken(Tensor x", Arc::new(noop))
            .is_err());
        let names: Vec<String> = registry
            .overloads("mylib::op")
            .iter()
            .map(|s| s.full_name())
            .collect();
        assert_eq!(names, vec!["mylib::op.int", "mylib::op"]);
        let operator = registry.lookup("mylib::op").unwrap();
        let mut stack = Stack::new();
        (operator.kernel)(&mut stack).unwrap();
        assert!(matches!(stack.as_slice(), [IValue::Int(7)]));
        let found = registry
            .find_by_types("mylib::op", &[Type::Tensor, Type::Int])
            .unwrap();
        assert_eq!(found.schema.full_name(), "mylib::op");
        assert_eq!(registry.added_operators().len(), 1);
    }

    #[test]
    fn pop_arguments_refuses_a_short_stack() {
        let mut stack: Stack = vec![IValue::Int(1), IValue::Int(2)];
        assert!(pop_arguments::<3>(&mut stack).is_err());
        let [a, b] = pop_arguments::<2>(&mut stack).unwrap();
        assert!(matches!((a, b), (IValue::Int(1), IValue::Int(2))));
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
    #[test]
    fn the_builtins_register_without_a_single_error() {
        let registry = OperatorRegistry::try_with_builtins();
        assert!(registry.is_ok(), "{:?}", registry.err());
        assert!(OperatorRegistry::with_builtins()
            .registration_errors()
            .is_empty());
    }

    #[test]
    fn a_malformed_or_duplicate_declaration_is_a_hard_error() {
        let mut registry = OperatorRegistry::new();
        let duplicate = [
            OperatorDeclaration::stack("mylib::twice(int x) -> int", noop),
            OperatorDeclaration::stack("mylib::twice(int y) -> int", noop),
        ];
        let error = registry
            .register_family(OverloadRank::Builtin, duplicate)
            .unwrap_err();
        assert!(error.to_string().contains("already registered"), "{error}");
        let malformed = [OperatorDeclaration::stack("mylib::broken(int x", noop)];
        let error = registry
            .register_family(OverloadRank::Builtin, malformed)
            .unwrap_err();
        assert!(error.to_string().contains("mylib::broken(int x"), "{error}");
        assert!(registry
            .set_shape_rule("mylib::missing", ShapeRule::Functional(|_| Ok(Vec::new())))
            .is_err());
    }

    #[test]
    fn overloads_are_ordered_by_rank_before_registration_order() {
        let mut registry = OperatorRegistry::new();
        registry
            .register_declaration(
                OverloadRank::Builtin,
                OperatorDeclaration::stack("aten::neg.int(int a) -> int", noop),
            )
            .unwrap();
        registry
            .register_declaration(
                OverloadRank::NativeFunction,
                OperatorDeclaration::stack("aten::neg(Tensor self) -> Tensor", noop),
            )
            .unwrap();
        registry
            .register_declaration(
                OverloadRank::Builtin,
                OperatorDeclaration::stack("aten::neg.float(float a) -> float", noop),
            )
            .unwrap();
        let names: Vec<String> = registry
            .overloads("aten::neg")
            .iter()
            .map(|s| s.full_name())
            .collect();
        assert_eq!(names, vec!["aten::neg", "aten::neg.int", "aten::neg.float"]);
    }

    /// The family list registers every rank's families before the next rank's, so the ranks
    /// give exactly the order in which the families are listed: within every name, no
    /// overload of a lower rank was registered after one of a higher rank.
    #[test]
    fn the_family_list_agrees_with_the_overload_ranks() {
        let registry = OperatorRegistry::with_builtins();
        let mut last_rank: HashMap<&str, OverloadRank> = HashMap::new();
        for operator in registry.operators() {
            let name = operator.schema.name.as_str();
            if let Some(&previous) = last_rank.get(name) {
                assert!(
                    previous <= operator.overload_rank,
                    "{} ({:?}) is registered after a {previous:?} overload",
                    operator.schema.full_name(),
                    operator.overload_rank
                );
            }
            last_rank.insert(name, operator.overload_rank);
        }
    }

    #[test]
    fn flags_follow_the_schema_and_the_name() {
        let registry = OperatorRegistry::global();
        let flags = |name: &str| registry.lookup(name).unwrap().flags;
        use crate::opdef::Aliasing;
        assert!(flags("aten::add.Tensor").is_pure());
        assert_eq!(flags("aten::add.Tensor").aliasing, Aliasing::Fresh);
        assert_eq!(
            flags("aten::add_.Tensor").aliasing,
            Aliasing::WritesArgument
        );
        assert_eq!(flags("aten::add.out").aliasing, Aliasing::WritesArgument);
        assert!(!flags("aten::add_.Tensor").is_pure());
        assert_eq!(
            flags("aten::transpose.int").aliasing,
            Aliasing::ReturnsAlias
        );
        assert!(flags("aten::transpose.int").is_pure());
        assert!(flags("aten::bernoulli").nondeterministic_seeded);
        assert!(flags("aten::randn").nondeterministic_seeded);
        assert!(!flags("aten::randn").has_side_effects);
        assert!(flags("aten::warn").has_side_effects);
        assert!(flags("aten::manual_seed").has_side_effects);
        assert!(!flags("aten::manual_seed.generator").nondeterministic_seeded);
        assert!(!flags("aten::warn").is_pure());
    }
}
