//! The Python printer: turns the classes and functions of a `CompilationUnit` back into the
//! `code/` files of a TorchScript archive, printed from their compiled IR (never copied from
//! the source they were compiled from), in the style of PyTorch's `python_print.cpp`.
//!
//! Each code object goes to the file of its qualifier (`__torch__.a.b.C` → `code/__torch__/a/b.py`).
//! Classes print their attribute declarations (`__parameters__`, `__buffers__`, `name : T`,
//! `__annotations__["0"] = T`), their `Final` constants and their methods; free functions
//! print as `def`s. Tensor constants become `CONSTANTS.cN` entries of `constants.pkl`.

mod function;

use ferrojit_ir::Prim;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;

use ferrojit_frontend::compilation_unit::{CompilationUnit, ConstantValue};
use ferrojit_frontend::Function;
use ferrojit_ir::attributes::quote_string;
use ferrojit_ir::{
    AttributeKind, AttributeValue, ClassType, DefaultValue, FunctionSchema, Graph, NamedTupleType,
    Type,
};
use ferrojit_tensor::{Storage, Tensor};

use crate::load_error::LoadError;
use function::{float_literal, FunctionPrinter};

/// The file format version PyTorch writes when no operator needs a newer one.
pub const BASE_FILE_VERSION: u64 = 3;

/// State shared by all code objects of one archive: the constant table and the code
/// objects still to print.
#[derive(Default)]
pub(crate) struct PrintContext {
    constants: Vec<ferrojit_runtime::IValue>,
    queue: VecDeque<CodeObject>,
    seen: HashSet<CodeObject>,
    named_tuples: HashMap<String, Arc<NamedTupleType>>,
    min_version: u64,
    /// Per called function, each parameter's name when it is keyword-only (after `*`).
    callee_keywords: HashMap<String, Vec<Option<String>>>,
    /// Classes whose methods come as graphs (see [`GraphClass`]), by qualified name.
    graph_classes: HashMap<String, GraphClass>,
}

/// A class whose methods are given as graphs instead of being compiled from source in the
/// unit: what freezing makes (a new class that holds only the attributes the frozen graphs
/// still read, with those graphs as its methods). The class need not be known to the unit.
#[derive(Debug, Clone)]
pub struct GraphClass {
    pub class: Arc<ClassType>,
    pub methods: Vec<GraphMethod>,
}

/// One method of a [`GraphClass`]: its name, its declared signature (with `self`, whose
/// type is the class) and its graph (whose first input is `self`).
#[derive(Debug, Clone)]
pub struct GraphMethod {
    pub name: String,
    pub schema: FunctionSchema,
    pub graph: Arc<Graph>,
}

#[derive(Clone, PartialEq, Eq, Hash)]
enum CodeObject {
    Class(String),
    Function(String),
    Enum(String),
    NamedTuple(String),
}

impl PrintContext {
    /// The keyword a call to `function` must name its `index`th argument with, if any.
    pub(crate) fn callee_keyword(&self, function: &str, index: usize) -> Option<&str> {
        self.callee_keywords.get(function)?.get(index)?.as_deref()
    }

    /// The index of `tensor` in the constant table; the same view of the same storage
    /// always gets the same index.
    pub(crate) fn tensor_constant(&mut self, tensor: &Tensor) -> usize {
        if let Some(index) = self.constants.iter().position(|known| {
            let ferrojit_runtime::IValue::Tensor(known) = known else {
                return false;
            };
            let known = known.get();
            Storage::ptr_eq(known.storage(), tensor.storage())
                && known.storage_offset() == tensor.storage_offset()
                && known.sizes() == tensor.sizes()
                && known.strides() == tensor.strides()
        }) {
            return index;
        }
        self.constants
            .push(ferrojit_runtime::IValue::from(tensor.clone()));
        self.constants.len() - 1
    }

    /// The index of a string constant (or list of strings) in the constant table. PyTorch's
    /// printer puts every constant holding a non-ASCII string there (`containsNonASCIIString`)
    /// rather than in the code, whose octal escapes its lexer reads back as single bytes.
    pub(crate) fn string_constant(&mut self, value: ferrojit_runtime::IValue) -> usize {
        if let Some(index) = self
            .constants
            .iter()
            .position(|known| known.equals(&value).unwrap_or(false))
        {
            return index;
        }
        self.constants.push(value);
        self.constants.len() - 1
    }

    fn enqueue(&mut self, object: CodeObject) {
        if self.seen.insert(object.clone()) {
            self.queue.push_back(object);
        }
    }

    pub(crate) fn note_class(&mut self, qualified_name: &str) {
        self.enqueue(CodeObject::Class(qualified_name.to_string()));
    }

    pub(crate) fn note_function(&mut self, qualified_name: &str) {
        self.enqueue(CodeObject::Function(qualified_name.to_string()));
    }

    /// Queues every class, enum and named tuple a type mentions.
    pub(crate) fn note_type(&mut self, ty: &Type) {
        match ty {
            Type::Class(class) => self.note_class(class.qualified_name()),
            Type::Interface(name) => self.note_class(name),
            Type::Enum(name) => self.enqueue(CodeObject::Enum(name.clone())),
            Type::NamedTuple(tuple) => {
                if let Some(name) = &tuple.name {
                    if !self.named_tuples.contains_key(name) {
                        self.named_tuples.insert(name.clone(), tuple.clone());
                        self.enqueue(CodeObject::NamedTuple(name.clone()));
                    }
                }
                for (_, field) in &tuple.fields {
                    self.note_type(field);
                }
            }
            Type::List(inner)
            | Type::Optional(inner)
            | Type::Future(inner)
            | Type::Await(inner)
            | Type::RRef(inner) => self.note_type(inner),
            Type::Union(items) | Type::Tuple(items) => {
                for item in items {
                    self.note_type(item);
                }
            }
            Type::Dict(key, value) => {
                self.note_type(key);
                self.note_type(value);
            }
            _ => {}
        }
    }
}

/// The printed `code/` files and what goes with them.
#[derive(Debug, Default)]
pub struct PrintedProgram {
    /// `qualifier → source text`, e.g. `__torch__.torch.nn.modules.linear → "class Linear(Module):…"`.
    pub files: BTreeMap<String, String>,
    /// The `CONSTANTS.cN` table, written to `constants.pkl`: tensors, and strings that are
    /// not ASCII.
    pub constants: Vec<ferrojit_runtime::IValue>,
    /// The archive `version` the printed operators need (PyTorch's operator version map).
    pub min_version: u64,
}

/// The `code/` record of a qualifier: `__torch__.a.b` → `code/__torch__/a/b.py`.
pub fn code_record_name(qualifier: &str) -> String {
    format!("code/{}.py", qualifier.replace('.', "/"))
}

/// The version an operator needs: PyTorch bumps the file version when a graph uses an
/// operator whose semantics changed (so old files get upgraders and new ones do not).
fn operator_min_version(kind: &str) -> u64 {
    match kind {
        "aten::div" | "aten::div_" => 4,
        "aten::full" => 5,
        "aten::linspace" => 8,
        "aten::logspace" => 9,
        "aten::gelu" | "aten::gelu_" => 10,
        _ => BASE_FILE_VERSION,
    }
}

fn split_qualified(name: &str) -> (&str, &str) {
    name.rsplit_once('.').unwrap_or(("__torch__", name))
}

/// Prints `classes` and `functions` (qualified names) and everything they depend on.
pub fn print_program(
    unit: &CompilationUnit,
    classes: &[String],
    functions: &[String],
) -> Result<PrintedProgram, LoadError> {
    print_program_with_graph_classes(unit, classes, functions, &[])
}

/// [`print_program`], where the classes named in `graph_classes` print from the graphs given
/// there rather than from the unit.
pub fn print_program_with_graph_classes(
    unit: &CompilationUnit,
    classes: &[String],
    functions: &[String],
    graph_classes: &[GraphClass],
) -> Result<PrintedProgram, LoadError> {
    let mut context = PrintContext {
        min_version: BASE_FILE_VERSION,
        graph_classes: graph_classes
            .iter()
            .map(|class| (class.class.qualified_name().to_string(), class.clone()))
            .collect(),
        ..PrintContext::default()
    };
    for class in classes {
        context.note_class(class);
    }
    for function in functions {
        context.note_function(function);
    }
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    while let Some(object) = context.queue.pop_front() {
        let (qualified, text) = match &object {
            CodeObject::Class(name) => (name.clone(), print_class(unit, name, &mut context)?),
            CodeObject::Function(name) => {
                let function = unit.function(name)?;
                let text = print_function(unit, &function, 0, &mut context)?;
                (name.clone(), text)
            }
            CodeObject::Enum(name) => (name.clone(), print_enum(unit, name)?),
            CodeObject::NamedTuple(name) => {
                let tuple = context.named_tuples.get(name).cloned().ok_or_else(|| {
                    LoadError::format("code", format!("named tuple {name} is unknown"))
                })?;
                (name.clone(), print_named_tuple(name, &tuple, &mut context))
            }
        };
        let (qualifier, _) = split_qualified(&qualified);
        let file = files.entry(qualifier.to_string()).or_default();
        if !file.is_empty() && !file.ends_with("\n\n") {
            file.push('\n');
        }
        file.push_str(&text);
    }
    Ok(PrintedProgram {
        files,
        constants: context.constants,
        min_version: context.min_version,
    })
}

fn graph_min_version(graph: &Graph) -> u64 {
    graph
        .all_nodes()
        .into_iter()
        .map(|node| operator_min_version(graph.kind(node).as_str()))
        .max()
        .unwrap_or(BASE_FILE_VERSION)
}

fn print_class(
    unit: &CompilationUnit,
    qualified_name: &str,
    context: &mut PrintContext,
) -> Result<String, LoadError> {
    let graph_class = context.graph_classes.get(qualified_name).cloned();
    let class: Arc<ClassType> = match &graph_class {
        Some(graph_class) => graph_class.class.clone(),
        None => unit.resolve_class(qualified_name)?,
    };
    if let Some(graph_class) = graph_class {
        return print_graph_class(unit, &graph_class, context);
    }
    if let Some(base) = unit.interface_base(qualified_name) {
        return print_interface(unit, &class, base, context);
    }
    let mut out = print_class_header_and_attributes(&class, context);
    let mut members = class.attributes().len() + if class.is_module() { 2 } else { 0 };
    for (name, constant) in unit.class_constants(qualified_name) {
        let literal = constant_literal(&constant).ok_or_else(|| {
            LoadError::format(
                "code",
                format!("class constant {qualified_name}.{name} cannot be printed"),
            )
        })?;
        out.push_str(&format!(
            "  {name} : Final[{}] = {literal}\n",
            constant.ty().annotation_str()
        ));
        members += 1;
    }
    for method in class.method_names() {
        let function = unit.method(&class, &method)?;
        out.push_str(&print_function(unit, &function, 1, context)?);
        members += 1;
    }
    if members == 0 {
        out.push_str("  pass\n");
    }
    Ok(out)
}

/// A [`GraphClass`]: its attributes, then each method printed from its graph.
fn print_graph_class(
    unit: &CompilationUnit,
    graph_class: &GraphClass,
    context: &mut PrintContext,
) -> Result<String, LoadError> {
    let class = &graph_class.class;
    let mut out = print_class_header_and_attributes(class, context);
    let mut members = class.attributes().len() + if class.is_module() { 2 } else { 0 };
    for method in &graph_class.methods {
        let qualified = format!("{}.{}", class.qualified_name(), method.name);
        out.push_str(&print_graph_function(
            unit,
            &qualified,
            &method.name,
            &method.schema,
            &method.graph,
            1,
            context,
        )?);
        members += 1;
    }
    if members == 0 {
        out.push_str("  pass\n");
    }
    Ok(out)
}

/// `class N(Module):` and the attribute declarations (`__parameters__`, `__buffers__`,
/// `name : T`).
fn print_class_header_and_attributes(class: &ClassType, context: &mut PrintContext) -> String {
    let mut out = String::new();
    let short = class.short_name();
    if class.is_module() {
        out.push_str(&format!("class {short}(Module):\n"));
    } else {
        out.push_str(&format!("class {short}:\n"));
    }
    let attributes = class.attributes();
    if class.is_module() {
        for (label, kind) in [
            ("__parameters__", AttributeKind::Parameter),
            ("__buffers__", AttributeKind::Buffer),
        ] {
            let names: Vec<String> = attributes
                .iter()
                .filter(|a| a.kind == kind)
                .map(|a| format!("{}, ", quote_string(&a.name)))
                .collect();
            out.push_str(&format!("  {label} = [{}]\n", names.concat()));
        }
    }
    for attribute in &attributes {
        context.note_type(&attribute.ty);
        let ty = attribute.ty.annotation_str();
        if is_plain_identifier(&attribute.name) {
            out.push_str(&format!("  {} : {ty}\n", attribute.name));
        } else {
            out.push_str(&format!(
                "  __annotations__[{}] = {ty}\n",
                quote_string(&attribute.name)
            ));
        }
    }
    out
}

/// An interface as PyTorch prints it: `class N(ModuleInterface):` (or `(Interface):`), then
/// each method's signature (`self` unannotated, the rest `name: T`) with `pass` for a body.
fn print_interface(
    unit: &CompilationUnit,
    class: &ClassType,
    base: &str,
    context: &mut PrintContext,
) -> Result<String, LoadError> {
    let mut out = format!("class {}({base}):\n", class.short_name());
    let methods = class.method_names();
    for method in &methods {
        let function = unit.method(class, method)?;
        let schema = function.schema();
        let mut parameters = vec!["self".to_string()];
        for argument in schema.arguments.iter().skip(1) {
            context.note_type(&argument.ty);
            parameters.push(format!(
                "{}: {}",
                argument.name,
                argument.ty.annotation_str()
            ));
        }
        let return_type = schema
            .returns
            .first()
            .map(|r| r.ty.clone())
            .unwrap_or(Type::NoneType);
        context.note_type(&return_type);
        out.push_str(&format!(
            "  def {method}({}) -> {}:\n    pass\n",
            parameters.join(", "),
            return_type.annotation_str()
        ));
    }
    if methods.is_empty() {
        out.push_str("  pass\n");
    }
    Ok(out)
}

/// `class Color(Enum):` with one `NAME = value` line per member, as PyTorch prints enums.
fn print_enum(unit: &CompilationUnit, qualified_name: &str) -> Result<String, LoadError> {
    let info = unit
        .try_resolve_enum(qualified_name)?
        .ok_or_else(|| LoadError::format("code", format!("enum {qualified_name} is unknown")))?;
    let (_, short) = split_qualified(qualified_name);
    let mut out = format!("class {short}(Enum):\n");
    for (name, value) in &info.members {
        let literal = constant_literal(value).ok_or_else(|| {
            LoadError::format(
                "code",
                format!("enum member {qualified_name}.{name} cannot be printed"),
            )
        })?;
        out.push_str(&format!("  {name} = {literal}\n"));
    }
    if info.members.is_empty() {
        out.push_str("  pass\n");
    }
    Ok(out)
}

/// `class P(NamedTuple):` with one `field : T` line per field, as PyTorch prints them.
fn print_named_tuple(
    qualified_name: &str,
    tuple: &NamedTupleType,
    context: &mut PrintContext,
) -> String {
    let (_, short) = split_qualified(qualified_name);
    let mut out = format!("class {short}(NamedTuple):\n");
    for (name, ty) in &tuple.fields {
        context.note_type(ty);
        out.push_str(&format!("  {name} : {}\n", ty.annotation_str()));
    }
    if tuple.fields.is_empty() {
        out.push_str("  pass\n");
    }
    out
}

fn is_plain_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn constant_literal(constant: &ConstantValue) -> Option<String> {
    Some(match constant {
        ConstantValue::Scalar(None, _) => "None".to_string(),
        ConstantValue::Scalar(Some(AttributeValue::Int(v)), Type::Bool) => {
            if *v != 0 { "True" } else { "False" }.to_string()
        }
        ConstantValue::Scalar(Some(AttributeValue::Int(v)), _) => v.to_string(),
        ConstantValue::Scalar(Some(AttributeValue::Float(v)), _) => float_literal(*v),
        ConstantValue::Scalar(Some(complex @ AttributeValue::Complex(..)), _) => {
            complex.to_ir_string()
        }
        ConstantValue::Scalar(Some(AttributeValue::Str(s)), _) => quote_string(s),
        ConstantValue::Scalar(Some(AttributeValue::Ints(v)), _) => format!(
            "[{}]",
            v.iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ConstantValue::Scalar(Some(AttributeValue::Floats(v)), _) => format!(
            "[{}]",
            v.iter()
                .map(|f| float_literal(*f))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ConstantValue::Tuple(items) => {
            let parts = items
                .iter()
                .map(constant_literal)
                .collect::<Option<Vec<_>>>()?;
            if parts.len() == 1 {
                format!("({},)", parts[0])
            } else {
                format!("({})", parts.join(", "))
            }
        }
        _ => return None,
    })
}

fn default_literal(default: &DefaultValue) -> String {
    match default {
        DefaultValue::None => "None".to_string(),
        DefaultValue::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        DefaultValue::Int(i) => i.to_string(),
        DefaultValue::Float(f) => float_literal(*f),
        DefaultValue::Str(s) => quote_string(s),
        DefaultValue::IntList(v) => format!(
            "[{}]",
            v.iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        DefaultValue::FloatList(v) => format!(
            "[{}]",
            v.iter()
                .map(|f| float_literal(*f))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        DefaultValue::BoolList(v) => format!(
            "[{}]",
            v.iter()
                .map(|b| if *b { "True" } else { "False" })
                .collect::<Vec<_>>()
                .join(", ")
        ),
        DefaultValue::EmptyList => "[]".to_string(),
        DefaultValue::Named(name) => name.clone(),
    }
}

/// Records which parameters of the functions `graph` calls are keyword-only, so that the
/// calls print those arguments as `name=value` (no positional argument can reach them).
fn note_callee_keywords(unit: &CompilationUnit, graph: &Graph, context: &mut PrintContext) {
    for node in graph.all_nodes() {
        if !graph.kind(node).is_prim(Prim::CallFunction) {
            continue;
        }
        let Some(AttributeValue::Str(name)) = graph.attribute(node, "name") else {
            continue;
        };
        if context.callee_keywords.contains_key(name) {
            continue;
        }
        if let Ok(function) = unit.function(name) {
            let keywords = function
                .schema()
                .arguments
                .iter()
                .map(|argument| argument.kwarg_only.then(|| argument.name.clone()))
                .collect();
            context.callee_keywords.insert(name.clone(), keywords);
        }
    }
}

/// Prints `def name(args) -> T:` and the body; `level` is 0 for free functions and 1 for
/// methods (two spaces per level, as PyTorch).
fn print_function(
    unit: &CompilationUnit,
    function: &Function,
    level: usize,
    context: &mut PrintContext,
) -> Result<String, LoadError> {
    let graph = function.graph(unit)?;
    print_graph_function(
        unit,
        function.qualified_name(),
        function.name(),
        function.schema(),
        &graph,
        level,
        context,
    )
}

/// Prints a function named `name` with signature `schema` from `graph`.
fn print_graph_function(
    unit: &CompilationUnit,
    qualified_name: &str,
    name: &str,
    schema: &FunctionSchema,
    graph: &Graph,
    level: usize,
    context: &mut PrintContext,
) -> Result<String, LoadError> {
    context.min_version = context.min_version.max(graph_min_version(graph));
    let indent = "  ".repeat(level);
    let mut parameters = Vec::new();
    for argument in &schema.arguments {
        // Keyword-only parameters (after `*`) may follow defaulted ones; without the star
        // the signature would not parse.
        if argument.kwarg_only && !parameters.iter().any(|p: &String| p == "*") {
            parameters.push("*".to_string());
        }
        context.note_type(&argument.ty);
        let mut text = format!("{}: {}", argument.name, argument.ty.annotation_str());
        if let Some(default) = &argument.default {
            text.push('=');
            text.push_str(&default_literal(default));
        }
        parameters.push(text);
    }
    let return_type = schema
        .returns
        .first()
        .map(|r| r.ty.clone())
        .unwrap_or(Type::NoneType);
    context.note_type(&return_type);
    let mut out = format!(
        "{indent}def {name}({}) -> {}:\n",
        parameters.join(",\n    "),
        return_type.annotation_str()
    );
    if graph.inputs().len() != schema.arguments.len() {
        return Err(LoadError::format(
            "code",
            format!(
                "{qualified_name}: the graph has {} inputs but the signature {} parameters",
                graph.inputs().len(),
                schema.arguments.len()
            ),
        ));
    }
    note_callee_keywords(unit, graph, context);
    let mut printer = FunctionPrinter::new(graph, context);
    for (&input, argument) in graph.inputs().iter().zip(&schema.arguments) {
        printer.name_input(input, &argument.name);
    }
    out.push_str(&printer.print_body(level + 1)?);
    Ok(out)
}
