//! The compilation unit: every class and function defined from TorchScript source (hand-written
//! or the `code/` files of a saved archive), loaded on demand and compiled on first use.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use ferrojit_ir::{
    Argument, AttributeKind, AttributeValue, ClassType, DefaultValue, FunctionSchema, Graph,
    NamedTupleType, Type,
};

use crate::ast::{ClassDef, Def, Expr, ExprKind, ParamKind, Stmt, StmtKind, UnaryOpKind};
use crate::compiler::types::TypeResolver;
use crate::compiler::{compile_function, CompileContext, Parameter};
use crate::error::FrontendError;
use crate::operators::OperatorSchemas;
use crate::source::SourceFile;

/// Gives the source of the file defining `qualifier` (`__torch__.torch.nn.modules.linear` →
/// `code/__torch__/torch/nn/modules/linear.py`), or `None`.
pub type SourceLoader = Box<dyn Fn(&str) -> Option<Arc<SourceFile>> + Send + Sync>;

/// A compile-time constant: a class constant (`in_features : Final[int] = 4`).
#[derive(Debug, Clone)]
pub enum ConstantValue {
    Scalar(Option<AttributeValue>, Type),
    Tuple(Vec<ConstantValue>),
}

impl ConstantValue {
    pub fn ty(&self) -> Type {
        match self {
            ConstantValue::Scalar(_, ty) => ty.clone(),
            ConstantValue::Tuple(items) => {
                Type::Tuple(items.iter().map(ConstantValue::ty).collect())
            }
        }
    }
}

struct ClassEntry {
    ty: Arc<ClassType>,
    definition: ClassDef,
    qualifier: String,
    /// `@property` getters: reading the attribute calls the method of the same name.
    properties: HashSet<String>,
    /// `ModuleInterface` or `Interface` for an interface type (its methods are declarations,
    /// never compiled); `None` for an ordinary class.
    interface: Option<&'static str>,
}

/// A `class P(NamedTuple)` definition; field types are resolved on first use.
struct NamedTupleEntry {
    definition: ClassDef,
    qualifier: String,
}

/// A TorchScript enum class (`class Color(Enum)`), with its members in declaration order.
#[derive(Debug, Clone)]
pub struct EnumInfo {
    pub qualified_name: String,
    pub members: Vec<(String, ConstantValue)>,
    pub value_type: Type,
}

/// What a class-like definition turned out to be.
enum ClassKind {
    Regular,
    NamedTuple,
    Enum,
}

fn base_names(class: &ClassDef) -> Vec<String> {
    class.bases.iter().filter_map(Expr::dotted_name).collect()
}

fn class_kind(class: &ClassDef) -> ClassKind {
    let bases = base_names(class);
    let has = |names: &[&str]| bases.iter().any(|b| names.contains(&b.as_str()));
    if has(&["NamedTuple", "typing.NamedTuple"]) {
        ClassKind::NamedTuple
    } else if has(&["Enum", "enum.Enum", "IntEnum", "enum.IntEnum"]) {
        ClassKind::Enum
    } else {
        ClassKind::Regular
    }
}

/// The interface kind a class declares: PyTorch prints module interfaces as
/// `class N(ModuleInterface):` and class interfaces as `class N(Interface):`; in source they
/// are classes decorated with `@torch.jit.interface` (module interfaces derive from
/// `nn.Module`).
fn interface_base(class: &ClassDef) -> Option<&'static str> {
    let bases = base_names(class);
    let has = |names: &[&str]| bases.iter().any(|b| names.contains(&b.as_str()));
    if has(&["ModuleInterface"]) {
        return Some("ModuleInterface");
    }
    if has(&["Interface"]) {
        return Some("Interface");
    }
    let decorated = class.decorators.iter().any(|decorator| {
        decorator
            .dotted_name()
            .is_some_and(|name| matches!(name.as_str(), "torch.jit.interface" | "jit.interface"))
    });
    if !decorated {
        return None;
    }
    if class.bases.iter().any(is_module_base) {
        Some("ModuleInterface")
    } else {
        Some("Interface")
    }
}

fn has_decorator(def: &Def, names: &[&str]) -> bool {
    def.decorators.iter().any(|decorator| {
        decorator
            .dotted_name()
            .is_some_and(|name| names.contains(&name.as_str()))
    })
}

fn is_static_method(def: &Def) -> bool {
    has_decorator(def, &["staticmethod"])
}

fn is_property(def: &Def) -> bool {
    has_decorator(def, &["property"])
}

struct FunctionEntry {
    definition: Arc<Def>,
    qualifier: String,
}

#[derive(Default)]
struct UnitState {
    classes: HashMap<String, Arc<ClassEntry>>,
    named_tuple_entries: HashMap<String, Arc<NamedTupleEntry>>,
    named_tuples: HashMap<String, Arc<NamedTupleType>>,
    enums: HashMap<String, Arc<EnumInfo>>,
    module_constants: HashMap<String, ConstantValue>,
    /// `import torch.nn.functional as F` at a file's top level: `<qualifier>.F` names the
    /// module `torch.nn.functional`.
    module_aliases: HashMap<String, String>,
    functions: HashMap<String, Arc<FunctionEntry>>,
    function_order: Vec<String>,
    compiled_functions: HashMap<String, Arc<Function>>,
    methods: HashMap<(String, String), Arc<Function>>,
    loaded_qualifiers: HashSet<String>,
    /// Qualifiers defined through `define_source_once`.
    defined_once: HashSet<String>,
    resolving_classes: HashSet<String>,
    resolved_classes: HashSet<String>,
    class_constants: HashMap<String, HashMap<String, ConstantValue>>,
    /// Functions being created; only the thread holding the compile lock adds to it, so
    /// meeting a name already here is recursion.
    creating_functions: HashSet<String>,
}

/// All TorchScript classes and functions known to one program. `Send + Sync`; share it
/// through an `Arc`.
pub struct CompilationUnit {
    operators: Arc<dyn OperatorSchemas>,
    loader: Option<SourceLoader>,
    constants: Vec<(Option<AttributeValue>, Type)>,
    /// The archive's version record, when the code comes from one (see `upgraders`).
    operator_version: Option<u64>,
    /// Code from a legacy-format archive: `torch.tensor` of floats is float64.
    legacy_tensor_literals: bool,
    state: Mutex<UnitState>,
    /// Held (re-entrantly) while files load, classes resolve and functions compile, so
    /// another thread never sees a half-defined qualifier or class.
    compile_lock: CompileLock,
}

/// A re-entrant lock: compiling one function compiles its callees on the same thread,
/// so the owner may take it again; other threads wait until the owner lets go.
#[derive(Default)]
struct CompileLock {
    owner: Mutex<(Option<std::thread::ThreadId>, usize)>,
    released: std::sync::Condvar,
}

struct CompileLockGuard<'a>(&'a CompileLock);

impl CompileLock {
    fn acquire(&self) -> CompileLockGuard<'_> {
        let me = std::thread::current().id();
        let mut owner = self.owner.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            match owner.0 {
                None => {
                    *owner = (Some(me), 1);
                    break;
                }
                Some(holder) if holder == me => {
                    owner.1 += 1;
                    break;
                }
                Some(_) => {
                    owner = self.released.wait(owner).unwrap_or_else(|p| p.into_inner());
                }
            }
        }
        CompileLockGuard(self)
    }
}

impl Drop for CompileLockGuard<'_> {
    fn drop(&mut self) {
        let mut owner = self.0.owner.lock().unwrap_or_else(|p| p.into_inner());
        owner.1 -= 1;
        if owner.1 == 0 {
            owner.0 = None;
            self.0.released.notify_all();
        }
    }
}

/// A TorchScript function or method: its schema from the signature, and its graph compiled
/// on first use.
pub struct Function {
    qualified_name: String,
    name: String,
    schema: FunctionSchema,
    definition: Arc<Def>,
    qualifier: String,
    owner: Option<Arc<ClassType>>,
    parameters: Vec<Parameter>,
    declared_return: Option<Type>,
    /// A method of an interface: a declaration with no body to compile.
    declaration: bool,
    graph: OnceLock<Result<Arc<Graph>, FrontendError>>,
    /// What the runtime keeps to run this function (see [`Function::executor`]), so that it
    /// lives and dies with the function. Typed `Any` because the frontend does not know the
    /// runtime.
    executor: OnceLock<Arc<dyn std::any::Any + Send + Sync>>,
}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Function")
            .field("qualified_name", &self.qualified_name)
            .finish()
    }
}

impl Function {
    pub fn qualified_name(&self) -> &str {
        &self.qualified_name
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The class a method belongs to (`None` for free functions).
    pub fn owner_class(&self) -> Option<&Arc<ClassType>> {
        self.owner.as_ref()
    }

    /// The schema from the `def`'s signature; methods include `self`.
    pub fn schema(&self) -> &FunctionSchema {
        &self.schema
    }

    /// The compiled graph (compiled once, on first use; errors are cached too).
    pub fn graph(&self, unit: &CompilationUnit) -> Result<Arc<Graph>, FrontendError> {
        if let Some(graph) = self.graph.get() {
            return graph.clone();
        }
        let _compiling = unit.compile_lock.acquire();
        self.graph
            .get_or_init(|| self.compile(unit).map(Arc::new))
            .clone()
    }

    /// The runtime's executor for this function (compiled code, and any per-function state
    /// a runtime keeps), made by `make` the first time it is asked for and the same value
    /// after that. `None` when the slot already holds a value of another type: one runtime
    /// type per function is the only use.
    pub fn executor<T: std::any::Any + Send + Sync>(
        &self,
        make: impl FnOnce() -> T,
    ) -> Option<Arc<T>> {
        let slot = self.executor.get_or_init(|| Arc::new(make()));
        slot.clone().downcast::<T>().ok()
    }

    /// Whether this is an interface method: a signature only, whose calls dispatch on the
    /// class of the object at run time.
    pub fn is_declaration(&self) -> bool {
        self.declaration
    }

    fn compile(&self, unit: &CompilationUnit) -> Result<Graph, FrontendError> {
        if self.declaration {
            return Err(FrontendError::new(
                format!(
                    "{} is an interface method: it has no body to compile",
                    self.qualified_name
                ),
                self.definition.name.range.clone(),
            ));
        }
        let context = CompileContext {
            unit,
            qualifier: &self.qualifier,
            owner: self.owner.clone(),
            function_name: &self.name,
        };
        compile_function(
            context,
            &self.definition,
            &self.parameters,
            self.declared_return.clone(),
        )
    }
}

fn lock(state: &Mutex<UnitState>) -> MutexGuard<'_, UnitState> {
    // A poisoned lock only means a panic elsewhere; the maps stay consistent because every
    // update is a single insert or remove.
    state.lock().unwrap_or_else(|poison| poison.into_inner())
}

fn is_module_base(base: &Expr) -> bool {
    matches!(
        base.dotted_name().as_deref(),
        Some("Module")
            | Some("torch.nn.Module")
            | Some("nn.Module")
            | Some("torch.nn.modules.module.Module")
    )
}

/// Reads a literal used as a default value or class constant.
fn literal_constant(expr: &Expr) -> Option<ConstantValue> {
    Some(match &expr.kind {
        ExprKind::Int(v) => ConstantValue::Scalar(
            Some(AttributeValue::Int(i64::try_from(*v).ok()?)),
            Type::Int,
        ),
        ExprKind::Float(v) => ConstantValue::Scalar(Some(AttributeValue::Float(*v)), Type::Float),
        ExprKind::Imaginary(v) => {
            ConstantValue::Scalar(Some(AttributeValue::Complex(0.0, *v)), Type::Complex)
        }
        ExprKind::Bool(v) => {
            ConstantValue::Scalar(Some(AttributeValue::Int(*v as i64)), Type::Bool)
        }
        ExprKind::Str(s) => ConstantValue::Scalar(Some(AttributeValue::Str(s.clone())), Type::Str),
        ExprKind::None => ConstantValue::Scalar(None, Type::NoneType),
        ExprKind::UnaryOp {
            op: UnaryOpKind::Neg,
            operand,
        } => match &operand.kind {
            ExprKind::Int(v) => {
                let value = if *v == (i64::MAX as u64) + 1 {
                    i64::MIN
                } else {
                    -i64::try_from(*v).ok()?
                };
                ConstantValue::Scalar(Some(AttributeValue::Int(value)), Type::Int)
            }
            ExprKind::Float(v) => {
                ConstantValue::Scalar(Some(AttributeValue::Float(-v)), Type::Float)
            }
            ExprKind::Imaginary(v) => {
                ConstantValue::Scalar(Some(AttributeValue::Complex(0.0, -v)), Type::Complex)
            }
            _ => return None,
        },
        ExprKind::Tuple(items) => {
            ConstantValue::Tuple(items.iter().map(literal_constant).collect::<Option<_>>()?)
        }
        ExprKind::List(items) => {
            let values: Vec<ConstantValue> =
                items.iter().map(literal_constant).collect::<Option<_>>()?;
            let ints: Option<Vec<i64>> = values
                .iter()
                .map(|v| match v {
                    ConstantValue::Scalar(Some(AttributeValue::Int(i)), Type::Int) => Some(*i),
                    _ => None,
                })
                .collect();
            if let Some(ints) = ints {
                return Some(ConstantValue::Scalar(
                    Some(AttributeValue::Ints(ints)),
                    Type::list(Type::Int),
                ));
            }
            let floats: Option<Vec<f64>> = values
                .iter()
                .map(|v| match v {
                    ConstantValue::Scalar(Some(AttributeValue::Float(f)), Type::Float) => Some(*f),
                    _ => None,
                })
                .collect();
            ConstantValue::Scalar(
                Some(AttributeValue::Floats(floats?)),
                Type::list(Type::Float),
            )
        }
        _ => return None,
    })
}

/// A literal default value for a parameter of type `ty`.
fn literal_default(expr: &Expr, ty: &Type) -> Option<DefaultValue> {
    let constant = literal_constant(expr)?;
    Some(match constant {
        ConstantValue::Scalar(None, _) => DefaultValue::None,
        ConstantValue::Scalar(Some(AttributeValue::Int(v)), Type::Bool) => {
            DefaultValue::Bool(v != 0)
        }
        ConstantValue::Scalar(Some(AttributeValue::Int(v)), _) => match ty {
            Type::Float => DefaultValue::Float(v as f64),
            _ => DefaultValue::Int(v),
        },
        ConstantValue::Scalar(Some(AttributeValue::Float(v)), _) => DefaultValue::Float(v),
        ConstantValue::Scalar(Some(AttributeValue::Str(s)), _) => DefaultValue::Str(s),
        ConstantValue::Scalar(Some(AttributeValue::Ints(v)), _) => DefaultValue::IntList(v),
        ConstantValue::Scalar(Some(AttributeValue::Floats(v)), _) => DefaultValue::FloatList(v),
        _ => return None,
    })
}

fn string_list(expr: &Expr) -> Option<Vec<String>> {
    match &expr.kind {
        ExprKind::List(items) | ExprKind::Tuple(items) => items
            .iter()
            .map(|item| match &item.kind {
                ExprKind::Str(s) => Some(s.clone()),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

fn is_final_annotation(expr: &Expr) -> bool {
    match &expr.kind {
        ExprKind::Subscript { value, .. } => {
            matches!(
                value.dotted_name().as_deref(),
                Some("Final") | Some("typing.Final")
            )
        }
        _ => matches!(
            expr.dotted_name().as_deref(),
            Some("Final") | Some("typing.Final")
        ),
    }
}

/// Reads the members of an enum class (`RED = 1`).
fn enum_info(class: &ClassDef, qualifier: &str) -> Result<EnumInfo, FrontendError> {
    let qualified_name = format!("{qualifier}.{}", class.name.name);
    let mut members = Vec::new();
    for stmt in &class.body {
        match &stmt.kind {
            StmtKind::Assign(assign) => {
                let ([target], Some(value)) = (assign.targets.as_slice(), &assign.value) else {
                    continue;
                };
                let ExprKind::Name(name) = &target.kind else {
                    continue;
                };
                let constant = literal_constant(value).ok_or_else(|| {
                    FrontendError::new(
                        "enum values must be int, float or str literals",
                        value.range.clone(),
                    )
                })?;
                members.push((name.clone(), constant));
            }
            StmtKind::Pass | StmtKind::Expr(_) => {}
            _ => {
                return Err(FrontendError::new(
                    "only member assignments are supported in enum classes",
                    stmt.range.clone(),
                ))
            }
        }
    }
    let value_type = members
        .first()
        .map(|(_, value)| value.ty())
        .unwrap_or(Type::Int);
    for (name, value) in &members {
        if value.ty() != value_type {
            return Err(FrontendError::new(
                format!(
                    "Enum class with varying value types are not supported: {name} is a {} but the first member is a {}",
                    value.ty().annotation_str(),
                    value_type.annotation_str()
                ),
                class.name.range.clone(),
            ));
        }
    }
    Ok(EnumInfo {
        qualified_name,
        members,
        value_type,
    })
}

impl CompilationUnit {
    pub fn new(operators: Arc<dyn OperatorSchemas>) -> CompilationUnit {
        CompilationUnit {
            operators,
            loader: None,
            constants: Vec::new(),
            operator_version: None,
            legacy_tensor_literals: false,
            state: Mutex::new(UnitState::default()),
            compile_lock: CompileLock::default(),
        }
    }

    /// Sets how files of other qualifiers are found (archives: `code/` members).
    pub fn set_source_loader(&mut self, loader: SourceLoader) {
        self.loader = Some(loader);
    }

    /// The `CONSTANTS.cN` table (from an archive's `constants.pkl`).
    pub fn set_constants(&mut self, constants: Vec<(Option<AttributeValue>, Type)>) {
        self.constants = constants;
    }

    /// The archive version the code was saved with: calls to operators changed since then
    /// compile to their upgraders (`crate::upgraders::configure` sets it).
    pub fn set_operator_version(&mut self, version: Option<u64>) {
        self.operator_version = version;
    }

    pub fn operator_version(&self) -> Option<u64> {
        self.operator_version
    }

    /// For code of legacy-format archives (PyTorch ≤ 1.2): `torch.tensor` of float data with
    /// no dtype makes a float64 tensor, as it did then (today: the default dtype). PyTorch
    /// has no upgrader for this change, and archives of the zip format keep today's rule,
    /// as PyTorch's own loader gives them.
    pub fn set_legacy_tensor_literals(&mut self, legacy: bool) {
        self.legacy_tensor_literals = legacy;
    }

    pub fn legacy_tensor_literals(&self) -> bool {
        self.legacy_tensor_literals
    }

    /// Whether the code comes from an archive's `code/` files (PyTorch's importer) rather
    /// than hand-written source (PyTorch's Python frontend); a few messages differ.
    pub(crate) fn compiles_archive_code(&self) -> bool {
        self.loader.is_some()
    }

    pub(crate) fn operators(&self) -> &dyn OperatorSchemas {
        self.operators.as_ref()
    }

    pub(crate) fn constant(&self, index: usize) -> Option<(Option<AttributeValue>, Type)> {
        self.constants.get(index).cloned()
    }

    pub(crate) fn class_constant(&self, class: &str, name: &str) -> Option<ConstantValue> {
        lock(&self.state)
            .class_constants
            .get(class)
            .and_then(|c| c.get(name))
            .cloned()
    }

    /// Parses `file` and defines its classes and functions under `qualifier`. Bodies are
    /// compiled later, on first use.
    pub fn define_source(
        &self,
        file: Arc<SourceFile>,
        qualifier: &str,
    ) -> Result<(), FrontendError> {
        let module = crate::parser::parse_file(file)?;
        let mut classes = Vec::new();
        let mut functions = Vec::new();
        let mut named_tuples = Vec::new();
        let mut enums = Vec::new();
        let mut constants = Vec::new();
        let mut aliases = Vec::new();
        // Statements are moved into their entries: cloning a class's definition copied every
        // method body's syntax tree, a large part of loading a model's code.
        for stmt in module.body {
            let range = stmt.range;
            match stmt.kind {
                StmtKind::ClassDef(class) => {
                    let name = format!("{qualifier}.{}", class.name.name);
                    match class_kind(&class) {
                        ClassKind::NamedTuple => {
                            named_tuples.push((
                                name,
                                Arc::new(NamedTupleEntry {
                                    definition: class,
                                    qualifier: qualifier.to_string(),
                                }),
                            ));
                            continue;
                        }
                        ClassKind::Enum => {
                            enums.push((name, enum_info(&class, qualifier)?));
                            continue;
                        }
                        ClassKind::Regular => {}
                    }
                    let is_module = class.bases.iter().any(is_module_base);
                    let ty = if interface_base(&class).is_some() {
                        ClassType::new_interface(name.clone(), is_module)
                    } else {
                        ClassType::new(name.clone(), is_module)
                    };
                    let mut properties = HashSet::new();
                    for member in &class.body {
                        if let StmtKind::Def(def) = &member.kind {
                            if is_static_method(def) {
                                // Static methods are free functions named after the class
                                // (rare, so this one copy costs little).
                                functions.push((
                                    format!("{name}.{}", def.name.name),
                                    Arc::new(FunctionEntry {
                                        definition: Arc::new(def.clone()),
                                        qualifier: qualifier.to_string(),
                                    }),
                                    member.range.clone(),
                                ));
                                continue;
                            }
                            if is_property(def) {
                                properties.insert(def.name.name.clone());
                            }
                            ty.add_method_name(&def.name.name);
                        }
                    }
                    classes.push((
                        name,
                        Arc::new(ClassEntry {
                            ty,
                            qualifier: qualifier.to_string(),
                            properties,
                            interface: interface_base(&class),
                            definition: class,
                        }),
                        range,
                    ));
                }
                StmtKind::Def(def) => {
                    let name = format!("{qualifier}.{}", def.name.name);
                    functions.push((
                        name,
                        Arc::new(FunctionEntry {
                            definition: Arc::new(def),
                            qualifier: qualifier.to_string(),
                        }),
                        range,
                    ));
                }
                StmtKind::Import(imports) => {
                    for import in imports {
                        if let Some(alias) = &import.alias {
                            aliases.push((format!("{qualifier}.{}", alias.name), import.name));
                        }
                    }
                }
                // `from torch.nn import functional as F`
                StmtKind::ImportFrom(from) if from.level == 0 && !from.module.is_empty() => {
                    for import in from.names {
                        let local = import.alias.map_or(import.name.clone(), |a| a.name);
                        let module = format!("{}.{}", from.module, import.name);
                        aliases.push((format!("{qualifier}.{local}"), module));
                    }
                }
                StmtKind::ImportFrom(_) | StmtKind::Pass => {}
                StmtKind::Expr(expr) if matches!(expr.kind, ExprKind::Str(_)) => {}
                // `LIMIT: Final[int] = 3`: a module-level constant functions may read.
                StmtKind::Assign(assign)
                    if assign.targets.len() == 1
                        && assign.value.as_ref().and_then(literal_constant).is_some() =>
                {
                    if let (ExprKind::Name(name), Some(constant)) = (
                        &assign.targets[0].kind,
                        assign.value.as_ref().and_then(literal_constant),
                    ) {
                        constants.push((format!("{qualifier}.{name}"), constant));
                    }
                }
                _ => {
                    return Err(FrontendError::new(
                        "only class and function definitions are supported at the top level",
                        range,
                    ))
                }
            }
        }
        let mut state = lock(&self.state);
        for (name, _, range) in &classes {
            if state.classes.contains_key(name) {
                return Err(FrontendError::new(
                    format!("class {name} is defined twice"),
                    range.clone(),
                ));
            }
        }
        for (name, _, range) in &functions {
            if state.functions.contains_key(name) {
                return Err(FrontendError::new(
                    format!("function {name} is defined twice"),
                    range.clone(),
                ));
            }
        }
        state.loaded_qualifiers.insert(qualifier.to_string());
        for (name, entry, _) in classes {
            state.classes.insert(name, entry);
        }
        for (name, entry, _) in functions {
            state.function_order.push(name.clone());
            state.functions.insert(name, entry);
        }
        for (name, entry) in named_tuples {
            state.named_tuple_entries.insert(name, entry);
        }
        for (name, info) in enums {
            state.enums.insert(name, Arc::new(info));
        }
        for (name, constant) in constants {
            state.module_constants.insert(name, constant);
        }
        state.module_aliases.extend(aliases);
        Ok(())
    }

    /// Defines module class `class` (its attributes already added by the caller) with the
    /// top-level `def`s of `file` as its methods: the layout of the legacy format's per-module
    /// code files (PyTorch ≤ 1.2: `op_version_set = N`, imports, then `def m(self, ...)`).
    /// Names in the bodies resolve as in a file of the class's qualifier.
    pub fn define_module_class(
        &self,
        class: Arc<ClassType>,
        file: Arc<SourceFile>,
    ) -> Result<(), FrontendError> {
        let module = crate::parser::parse_file(file)?;
        let mut methods = Vec::new();
        for stmt in module.body {
            match &stmt.kind {
                StmtKind::Def(def) => {
                    if methods.iter().any(|m: &Stmt| {
                        matches!(&m.kind, StmtKind::Def(d) if d.name.name == def.name.name)
                    }) {
                        return Err(FrontendError::new(
                            format!("method {} is defined twice", def.name.name),
                            stmt.range.clone(),
                        ));
                    }
                    methods.push(stmt);
                }
                StmtKind::Import(_) | StmtKind::ImportFrom(_) | StmtKind::Pass => {}
                StmtKind::Expr(expr) if matches!(expr.kind, ExprKind::Str(_)) => {}
                StmtKind::Assign(assign)
                    if assign.targets.len() == 1
                        && matches!(&assign.targets[0].kind, ExprKind::Name(n) if n == "op_version_set") =>
                    {}
                _ => {
                    return Err(FrontendError::new(
                        "a module's code file may only define methods",
                        stmt.range.clone(),
                    ))
                }
            }
        }
        let qualified_name = class.qualified_name().to_string();
        let qualifier = qualified_name
            .rsplit_once('.')
            .map_or("__torch__", |(qualifier, _)| qualifier)
            .to_string();
        for method in &methods {
            if let StmtKind::Def(def) = &method.kind {
                class.add_method_name(&def.name.name);
            }
        }
        let definition = ClassDef {
            name: crate::ast::Ident {
                name: class.short_name().to_string(),
                range: module.range.clone(),
            },
            bases: Vec::new(),
            keywords: Vec::new(),
            body: methods,
            decorators: Vec::new(),
        };
        let mut state = lock(&self.state);
        if state.classes.contains_key(&qualified_name) {
            return Err(FrontendError::new(
                format!("class {qualified_name} is defined twice"),
                module.range,
            ));
        }
        state.classes.insert(
            qualified_name.clone(),
            Arc::new(ClassEntry {
                ty: class,
                definition,
                qualifier,
                properties: HashSet::new(),
                interface: None,
            }),
        );
        state.resolved_classes.insert(qualified_name.clone());
        state.class_constants.insert(qualified_name, HashMap::new());
        Ok(())
    }

    /// Resolves a type written as annotation text (`List[str]`, `Dict[str, int]`,
    /// `Optional[Tensor]`, `__torch__.Foo`), loading class files on demand; `what` names the
    /// text in errors.
    pub fn resolve_type_text(&self, what: &str, text: &str) -> Result<Type, FrontendError> {
        let _compiling = self.compile_lock.acquire();
        let expr = crate::parser::parse_expression_str(what, text)?;
        TypeResolver {
            unit: self,
            qualifier: "__torch__",
        }
        .resolve(&expr)
    }

    /// Loads the file defining `qualified_name` (everything before its last `.`) through the
    /// source loader, once.
    fn load_defining_file(&self, qualified_name: &str) -> Result<(), FrontendError> {
        let Some(loader) = &self.loader else {
            return Ok(());
        };
        let _compiling = self.compile_lock.acquire();
        let Some((qualifier, _)) = qualified_name.rsplit_once('.') else {
            return Ok(());
        };
        {
            let mut state = lock(&self.state);
            if state.classes.contains_key(qualified_name)
                || state.functions.contains_key(qualified_name)
                || state.named_tuple_entries.contains_key(qualified_name)
                || state.enums.contains_key(qualified_name)
            {
                return Ok(());
            }
            if !state.loaded_qualifiers.insert(qualifier.to_string()) {
                return Ok(());
            }
        }
        match loader(qualifier) {
            // The qualifier stays marked as loaded even if this fails, so a broken file is
            // reported once per lookup instead of being re-read in a loop.
            Some(file) => self.define_source(file, qualifier),
            None => Ok(()),
        }
    }

    /// Defines the source `make` returns under `qualifier`, unless a file was already defined
    /// or loaded for that qualifier.
    pub(crate) fn define_source_once(
        &self,
        qualifier: &str,
        make: impl FnOnce() -> Arc<SourceFile>,
    ) -> Result<(), FrontendError> {
        let _compiling = self.compile_lock.acquire();
        if !lock(&self.state).defined_once.insert(qualifier.to_string()) {
            return Ok(());
        }
        self.define_source(make(), qualifier)
    }

    /// Finds a class (loading its file on demand) and resolves its attribute types.
    pub fn resolve_class(&self, qualified_name: &str) -> Result<Arc<ClassType>, FrontendError> {
        self.try_resolve_class(qualified_name)?
            .ok_or_else(|| FrontendError::new(format!("Unknown class {qualified_name}"), None))
    }

    pub(crate) fn try_resolve_class(
        &self,
        qualified_name: &str,
    ) -> Result<Option<Arc<ClassType>>, FrontendError> {
        let _compiling = self.compile_lock.acquire();
        self.load_defining_file(qualified_name)?;
        let entry = {
            let mut state = lock(&self.state);
            let Some(entry) = state.classes.get(qualified_name).cloned() else {
                return Ok(None);
            };
            if state.resolved_classes.contains(qualified_name)
                || state.resolving_classes.contains(qualified_name)
            {
                return Ok(Some(entry.ty.clone()));
            }
            state.resolving_classes.insert(qualified_name.to_string());
            entry
        };
        let result = self.resolve_class_body(&entry);
        let mut state = lock(&self.state);
        state.resolving_classes.remove(qualified_name);
        match result {
            Ok(constants) => {
                state.resolved_classes.insert(qualified_name.to_string());
                state
                    .class_constants
                    .insert(qualified_name.to_string(), constants);
                drop(state);
                // Script classes get their attributes from the assignments in `__init__`
                // (PyTorch's inference); compiling it now adds them before any other method
                // reads them. A broken `__init__` reports its error when it is called.
                if !entry.ty.is_module()
                    && entry.interface.is_none()
                    && entry.ty.has_method("__init__")
                {
                    if let Ok(init) = self.method(&entry.ty, "__init__") {
                        let _ = init.graph(self);
                    }
                }
                Ok(Some(entry.ty.clone()))
            }
            Err(error) => Err(error),
        }
    }

    fn resolve_class_body(
        &self,
        entry: &ClassEntry,
    ) -> Result<HashMap<String, ConstantValue>, FrontendError> {
        let resolver = TypeResolver {
            unit: self,
            qualifier: &entry.qualifier,
        };
        let class = &entry.ty;
        let mut parameters = Vec::new();
        let mut buffers = Vec::new();
        let mut constants = HashMap::new();
        for stmt in &entry.definition.body {
            let StmtKind::Assign(assign) = &stmt.kind else {
                continue;
            };
            let [target] = assign.targets.as_slice() else {
                continue;
            };
            match (&target.kind, &assign.annotation, &assign.value) {
                (ExprKind::Name(name), None, Some(value))
                    if name == "__parameters__" || name == "__buffers__" =>
                {
                    let names = string_list(value).ok_or_else(|| {
                        FrontendError::new(
                            format!("{name} must be a list of strings"),
                            value.range.clone(),
                        )
                    })?;
                    if name == "__parameters__" {
                        parameters = names;
                    } else {
                        buffers = names;
                    }
                }
                (ExprKind::Name(name), None, Some(value)) if name == "__constants__" => {
                    for constant in string_list(value).unwrap_or_default() {
                        class.add_constant_name(&constant);
                    }
                }
                (ExprKind::Name(name), Some(annotation), value) => {
                    if is_final_annotation(annotation) {
                        if let Some(value) = value {
                            let constant = literal_constant(value).ok_or_else(|| {
                                FrontendError::new(
                                    "unsupported class constant value",
                                    value.range.clone(),
                                )
                            })?;
                            class.add_constant_name(name);
                            constants.insert(name.clone(), constant);
                            continue;
                        }
                    }
                    let ty = resolver.resolve(annotation)?;
                    class.add_attribute(name, ty, AttributeKind::Regular);
                }
                (ExprKind::Subscript { value: base, index }, None, Some(annotation)) if matches!(&base.kind, ExprKind::Name(n) if n == "__annotations__") =>
                {
                    let ExprKind::Str(name) = &index.kind else {
                        return Err(FrontendError::new(
                            "__annotations__ keys must be strings",
                            index.range.clone(),
                        ));
                    };
                    let ty = resolver.resolve(annotation)?;
                    class.add_attribute(name, ty, AttributeKind::Regular);
                }
                (ExprKind::Name(name), None, Some(value)) => {
                    if let Some(constant) = literal_constant(value) {
                        constants.insert(name.clone(), constant);
                    }
                }
                _ => {}
            }
        }
        for name in &parameters {
            class.set_attribute_kind(name, AttributeKind::Parameter);
        }
        for name in &buffers {
            class.set_attribute_kind(name, AttributeKind::Buffer);
        }
        Ok(constants)
    }

    /// `Some("ModuleInterface")` or `Some("Interface")` when `qualified_name` is an interface
    /// type (its methods are declarations: see `Function::is_declaration`), `None` otherwise.
    pub fn interface_base(&self, qualified_name: &str) -> Option<&'static str> {
        lock(&self.state)
            .classes
            .get(qualified_name)
            .and_then(|entry| entry.interface)
    }

    /// The class constants of a resolved class (`name : Final[T] = value`, or names listed in
    /// `__constants__`), in declaration order. Used by the Python printer when saving.
    pub fn class_constants(&self, qualified_name: &str) -> Vec<(String, ConstantValue)> {
        let state = lock(&self.state);
        let (Some(entry), Some(constants)) = (
            state.classes.get(qualified_name),
            state.class_constants.get(qualified_name),
        ) else {
            return Vec::new();
        };
        let mut listed = Vec::new();
        for stmt in &entry.definition.body {
            if let StmtKind::Assign(assign) = &stmt.kind {
                if let ([target], Some(value)) = (assign.targets.as_slice(), &assign.value) {
                    if matches!(&target.kind, ExprKind::Name(n) if n == "__constants__") {
                        listed.extend(string_list(value).unwrap_or_default());
                    }
                }
            }
        }
        let mut ordered: Vec<(String, ConstantValue)> = Vec::new();
        for stmt in &entry.definition.body {
            let StmtKind::Assign(assign) = &stmt.kind else {
                continue;
            };
            let [target] = assign.targets.as_slice() else {
                continue;
            };
            let ExprKind::Name(name) = &target.kind else {
                continue;
            };
            let is_final = assign.annotation.as_ref().is_some_and(is_final_annotation);
            if !is_final && !listed.contains(name) {
                continue;
            }
            if let Some(constant) = constants.get(name) {
                if !ordered.iter().any(|(n, _)| n == name) {
                    ordered.push((name.clone(), constant.clone()));
                }
            }
        }
        ordered
    }

    /// A NamedTuple class by qualified name (loading its file on demand).
    pub fn try_resolve_named_tuple(
        &self,
        qualified_name: &str,
    ) -> Result<Option<Arc<NamedTupleType>>, FrontendError> {
        self.load_defining_file(qualified_name)?;
        let entry = {
            let state = lock(&self.state);
            if let Some(resolved) = state.named_tuples.get(qualified_name) {
                return Ok(Some(resolved.clone()));
            }
            let Some(entry) = state.named_tuple_entries.get(qualified_name).cloned() else {
                return Ok(None);
            };
            entry
        };
        let resolver = TypeResolver {
            unit: self,
            qualifier: &entry.qualifier,
        };
        let mut fields = Vec::new();
        for stmt in &entry.definition.body {
            match &stmt.kind {
                StmtKind::Assign(assign) => {
                    let ([target], Some(annotation)) =
                        (assign.targets.as_slice(), &assign.annotation)
                    else {
                        continue;
                    };
                    let ExprKind::Name(name) = &target.kind else {
                        continue;
                    };
                    if assign.value.is_some() {
                        return Err(FrontendError::new(
                            "default values of NamedTuple fields are not supported",
                            stmt.range.clone(),
                        ));
                    }
                    fields.push((name.clone(), resolver.resolve(annotation)?));
                }
                StmtKind::Pass | StmtKind::Expr(_) => {}
                _ => {
                    return Err(FrontendError::new(
                        "only annotated fields are supported in NamedTuple classes",
                        stmt.range.clone(),
                    ))
                }
            }
        }
        let resolved = Arc::new(NamedTupleType {
            name: Some(qualified_name.to_string()),
            fields,
        });
        Ok(Some(
            lock(&self.state)
                .named_tuples
                .entry(qualified_name.to_string())
                .or_insert(resolved)
                .clone(),
        ))
    }

    /// An enum class by qualified name (loading its file on demand).
    pub fn try_resolve_enum(
        &self,
        qualified_name: &str,
    ) -> Result<Option<Arc<EnumInfo>>, FrontendError> {
        self.load_defining_file(qualified_name)?;
        Ok(lock(&self.state).enums.get(qualified_name).cloned())
    }

    /// A module-level constant by qualified name (`__torch__.LIMIT`).
    pub(crate) fn module_constant(&self, qualified_name: &str) -> Option<ConstantValue> {
        lock(&self.state)
            .module_constants
            .get(qualified_name)
            .cloned()
    }

    /// Whether `name` is a `@property` of the class.
    /// The module a top-level `import ... as NAME` of the file of `qualifier` bound NAME to.
    pub(crate) fn module_alias(&self, qualifier: &str, name: &str) -> Option<String> {
        lock(&self.state)
            .module_aliases
            .get(&format!("{qualifier}.{name}"))
            .cloned()
    }

    pub(crate) fn is_property(&self, class: &str, name: &str) -> bool {
        lock(&self.state)
            .classes
            .get(class)
            .is_some_and(|entry| entry.properties.contains(name))
    }

    pub(crate) fn has_function(&self, qualified_name: &str) -> Result<bool, FrontendError> {
        self.load_defining_file(qualified_name)?;
        Ok(lock(&self.state).functions.contains_key(qualified_name))
    }

    /// A free function by qualified name, loaded on demand.
    pub fn function(&self, qualified_name: &str) -> Result<Arc<Function>, FrontendError> {
        if let Some(function) = lock(&self.state).compiled_functions.get(qualified_name) {
            return Ok(function.clone());
        }
        let _compiling = self.compile_lock.acquire();
        self.load_defining_file(qualified_name)?;
        let entry = {
            let mut state = lock(&self.state);
            if let Some(function) = state.compiled_functions.get(qualified_name) {
                return Ok(function.clone());
            }
            let Some(entry) = state.functions.get(qualified_name).cloned() else {
                return Err(FrontendError::new(
                    format!("Unknown function {qualified_name}"),
                    None,
                ));
            };
            if !state.creating_functions.insert(qualified_name.to_string()) {
                return Err(FrontendError::new(
                    format!("{qualified_name} is called recursively; recursion is not supported in TorchScript"),
                    entry.definition.name.range.clone(),
                ));
            }
            entry
        };
        let name = entry.definition.name.name.clone();
        let result = self.create_function(
            qualified_name,
            &name,
            entry.definition.clone(),
            &entry.qualifier,
            None,
        );
        let mut state = lock(&self.state);
        state.creating_functions.remove(qualified_name);
        let function = result?;
        Ok(state
            .compiled_functions
            .entry(qualified_name.to_string())
            .or_insert(Arc::new(function))
            .clone())
    }

    /// A method of a class defined in this unit.
    pub fn method(&self, class: &ClassType, name: &str) -> Result<Arc<Function>, FrontendError> {
        let key = (class.qualified_name().to_string(), name.to_string());
        if let Some(function) = lock(&self.state).methods.get(&key) {
            return Ok(function.clone());
        }
        let _compiling = self.compile_lock.acquire();
        let class_type = self.resolve_class(class.qualified_name())?;
        let entry = lock(&self.state)
            .classes
            .get(class.qualified_name())
            .cloned()
            .ok_or_else(|| {
                FrontendError::new(format!("Unknown class {}", class.qualified_name()), None)
            })?;
        let definition = entry
            .definition
            .body
            .iter()
            .find_map(|stmt| match &stmt.kind {
                StmtKind::Def(def) if def.name.name == name => Some(Arc::new(def.clone())),
                _ => None,
            })
            .ok_or_else(|| {
                FrontendError::new(
                    format!("Class {} has no method {name}", class.qualified_name()),
                    entry.definition.name.range.clone(),
                )
            })?;
        let qualified = format!("{}.{name}", class.qualified_name());
        let guard_key = format!("method {qualified}");
        if !lock(&self.state)
            .creating_functions
            .insert(guard_key.clone())
        {
            return Err(FrontendError::new(
                format!(
                    "{qualified} is called recursively; recursion is not supported in TorchScript"
                ),
                definition.name.range.clone(),
            ));
        }
        let result = self.create_function(
            &qualified,
            name,
            definition,
            &entry.qualifier,
            Some(class_type),
        );
        let mut state = lock(&self.state);
        state.creating_functions.remove(&guard_key);
        let function = result?;
        Ok(state
            .methods
            .entry(key)
            .or_insert(Arc::new(function))
            .clone())
    }

    /// Qualified names of all free functions defined so far, in definition order.
    pub fn function_names(&self) -> Vec<String> {
        lock(&self.state).function_order.clone()
    }

    fn create_function(
        &self,
        qualified_name: &str,
        name: &str,
        definition: Arc<Def>,
        qualifier: &str,
        owner: Option<Arc<ClassType>>,
    ) -> Result<Function, FrontendError> {
        let declaration = owner
            .as_ref()
            .is_some_and(|class| self.interface_base(class.qualified_name()).is_some());
        let resolver = TypeResolver {
            unit: self,
            qualifier,
        };
        let mut arguments = Vec::new();
        let mut parameters = Vec::new();
        let (comment_params, comment_return) = match &definition.type_comment {
            Some(comment) => parse_type_comment(comment)?,
            None => (None, None),
        };
        // A method's type comment leaves out `self`.
        let comment_offset = match (&comment_params, &owner) {
            (Some(types), Some(_)) if types.len() + 1 == definition.params.len() => 1,
            _ => 0,
        };
        for (index, param) in definition.params.iter().enumerate() {
            let kwarg_only = match param.kind {
                ParamKind::Normal | ParamKind::PositionalOnly => false,
                ParamKind::KeywordOnly => true,
                ParamKind::VarPositional | ParamKind::VarKeyword => {
                    return Err(FrontendError::new(
                        "*args and **kwargs are not supported in TorchScript",
                        param.range.clone(),
                    ))
                }
            };
            let from_comment = comment_params
                .as_ref()
                .and_then(|types| index.checked_sub(comment_offset).and_then(|i| types.get(i)));
            let ty = match (param.annotation.as_ref().or(from_comment), &owner) {
                (Some(annotation), _) => resolver.resolve(annotation)?,
                (None, Some(class)) if index == 0 => Type::Class(class.clone()),
                (None, _) => Type::Tensor,
            };
            let list_length = param
                .annotation
                .as_ref()
                .and_then(crate::compiler::types::broadcasting_list_length);
            let default = match &param.default {
                Some(expr) => Some(literal_default(expr, &ty).ok_or_else(|| {
                    FrontendError::new(
                        "only literal default values are supported",
                        expr.range.clone(),
                    )
                })?),
                None => None,
            };
            // `padding: BroadcastingList2[int] = 0` means [0, 0].
            let default = match (list_length, default) {
                (Some(length), Some(DefaultValue::Int(value))) => {
                    Some(DefaultValue::IntList(vec![value; length]))
                }
                (Some(length), Some(DefaultValue::Float(value))) => {
                    Some(DefaultValue::FloatList(vec![value; length]))
                }
                (_, default) => default,
            };
            arguments.push(Argument {
                name: param.name.name.clone(),
                ty: ty.clone(),
                type_spelling: ty.to_string(),
                list_length,
                default,
                kwarg_only,
                alias_info: None,
            });
            parameters.push(Parameter {
                name: param.name.name.clone(),
                ty,
            });
        }
        let declared_return = match (&definition.returns, &comment_return) {
            (Some(annotation), _) => Some(resolver.resolve(annotation)?),
            (None, Some(annotation)) => Some(resolver.resolve(annotation)?),
            (None, None) => None,
        };
        let mut function = Function {
            qualified_name: qualified_name.to_string(),
            name: name.to_string(),
            schema: FunctionSchema {
                name: if owner.is_some() {
                    name.to_string()
                } else {
                    qualified_name.to_string()
                },
                overload_name: String::new(),
                arguments,
                returns: Vec::new(),
                is_vararg: false,
                is_varret: false,
            },
            definition,
            qualifier: qualifier.to_string(),
            owner,
            parameters,
            declared_return: declared_return.clone(),
            declaration,
            graph: OnceLock::new(),
            executor: OnceLock::new(),
        };
        let return_type = match declared_return {
            Some(ty) => ty,
            None if declaration => Type::NoneType,
            None => {
                // No annotation: the body decides, so compile it now.
                let graph = function.compile(self)?;
                let ty = graph
                    .outputs()
                    .first()
                    .map(|&v| graph.value_type(v).clone())
                    .unwrap_or(Type::NoneType);
                let _ = function.graph.set(Ok(Arc::new(graph)));
                ty
            }
        };
        function.schema.returns.push(Argument {
            name: String::new(),
            ty: return_type.clone(),
            type_spelling: return_type.to_string(),
            list_length: None,
            default: None,
            kwarg_only: false,
            alias_info: None,
        });
        Ok(function)
    }
}

/// Reads a `# type: (int, List[int]) -> int` comment into parameter and return annotations.
fn parse_type_comment(
    comment: &crate::ast::TypeComment,
) -> Result<(Option<Vec<Expr>>, Option<Expr>), FrontendError> {
    let text = comment.text.trim();
    let text = text.strip_prefix("type:").unwrap_or(text).trim();
    let bad = || FrontendError::new("malformed type comment", comment.range.clone());
    let (params, returns) = text.split_once("->").ok_or_else(bad)?;
    let params = params.trim();
    let inner = params
        .strip_prefix('(')
        .and_then(|p| p.strip_suffix(')'))
        .ok_or_else(bad)?;
    let parameter_types = if inner.trim().is_empty() {
        Vec::new()
    } else {
        // Parsed as a tuple so that commas inside brackets are handled by the parser.
        let tuple = crate::parser::parse_expression_str("<type comment>", &format!("({inner},)"))?;
        match tuple.kind {
            ExprKind::Tuple(items) => items,
            _ => return Err(bad()),
        }
    };
    let return_type = crate::parser::parse_expression_str("<type comment>", returns.trim())?;
    Ok((Some(parameter_types), Some(return_type)))
}

/// Compiles hand-written TorchScript source: defines everything under `__torch__`.
pub fn compile_source(
    source: &str,
    operators: Arc<dyn OperatorSchemas>,
) -> Result<CompilationUnit, FrontendError> {
    let unit = CompilationUnit::new(operators);
    unit.define_source(SourceFile::new("<string>", source), "__torch__")?;
    Ok(unit)
}

#[cfg(test)]
mod interface_tests {
    use super::*;

    struct NoOperators;

    impl OperatorSchemas for NoOperators {
        fn overloads(&self, _: &str) -> Vec<Arc<FunctionSchema>> {
            Vec::new()
        }
    }

    const SOURCE: &str = "\
class Scaler(ModuleInterface):
  def forward(self, x: Tensor) -> Tensor:
    pass
class Shape(Interface):
  def area(self) -> float:
    pass
class User(Module):
  impl : __torch__.Scaler
  def forward(self, x: Tensor) -> Tensor:
    impl = self.impl
    return (impl).forward(x, )
";

    #[test]
    fn interface_methods_are_declarations_and_calls_on_them_compile() {
        let unit = CompilationUnit::new(Arc::new(NoOperators));
        unit.define_source(
            SourceFile::new("code/__torch__.py", SOURCE.to_string()),
            "__torch__",
        )
        .unwrap();
        assert_eq!(
            unit.interface_base("__torch__.Scaler"),
            Some("ModuleInterface")
        );
        assert_eq!(unit.interface_base("__torch__.Shape"), Some("Interface"));
        assert_eq!(unit.interface_base("__torch__.User"), None);

        let scaler = unit.resolve_class("__torch__.Scaler").unwrap();
        let forward = unit.method(&scaler, "forward").unwrap();
        assert!(forward.is_declaration());
        assert_eq!(forward.schema().returns[0].ty, Type::Tensor);
        let error = forward.graph(&unit).unwrap_err().to_string();
        assert!(error.contains("is an interface method"), "{error}");

        let user = unit.resolve_class("__torch__.User").unwrap();
        let caller = unit.method(&user, "forward").unwrap();
        assert!(!caller.is_declaration());
        caller
            .graph(&unit)
            .expect("a call on an interface value compiles");
    }
}
