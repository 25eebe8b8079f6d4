//! The Export IR data model (`torch/_export/serde/schema.py`, schema version 8): the
//! exported program, its graph module, graph, nodes, the `Argument` union, tensor metadata,
//! symbolic values, range constraints and the graph signature, read from the JSON with
//! typed errors.

use crate::error::Result;
use crate::json::Node as Json;
use std::collections::BTreeMap;

/// The schema major version this reader reads.
pub const SUPPORTED_SCHEMA_MAJOR: i64 = 8;

/// A whole exported program (`ExportedProgram` in the schema).
#[derive(Debug, Clone)]
pub struct ExportedProgram {
    pub graph_module: GraphModule,
    pub opset_version: BTreeMap<String, i64>,
    pub range_constraints: BTreeMap<String, RangeConstraint>,
    pub schema_version: SchemaVersion,
    /// The dialects the program was verified against (`TRAINING`, `ATEN`, ...).
    pub verifiers: Vec<String>,
    pub torch_version: String,
    /// Python guard strings; kept as text, never evaluated.
    pub guards_code: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaVersion {
    pub major: i64,
    pub minor: i64,
}

/// The bounds of one symbol; `None` is unbounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeConstraint {
    pub min_val: Option<i64>,
    pub max_val: Option<i64>,
}

#[derive(Debug, Clone)]
pub struct GraphModule {
    pub graph: Graph,
    pub signature: GraphSignature,
    pub module_call_graph: Vec<ModuleCallEntry>,
    pub metadata: BTreeMap<String, String>,
    /// Namedtuple type name → field names.
    pub treespec_namedtuple_fields: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Clone)]
pub struct ModuleCallEntry {
    pub fqn: String,
    pub signature: Option<ModuleCallSignature>,
}

#[derive(Debug, Clone)]
pub struct ModuleCallSignature {
    pub inputs: Vec<Argument>,
    pub outputs: Vec<Argument>,
    /// Pytree specs as the JSON text the serializer wrote.
    pub in_spec: String,
    pub out_spec: String,
    pub forward_arg_names: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub inputs: Vec<Argument>,
    pub outputs: Vec<Argument>,
    pub nodes: Vec<Node>,
    pub tensor_values: BTreeMap<String, TensorMeta>,
    pub sym_int_values: BTreeMap<String, SymInt>,
    pub sym_bool_values: BTreeMap<String, SymBool>,
    pub sym_float_values: BTreeMap<String, SymFloat>,
    pub custom_obj_values: BTreeMap<String, CustomObjArgument>,
    pub is_single_tensor_return: bool,
    /// For each node, the values the runner may drop once it has run (nothing later reads
    /// them): worked out once when the program is prepared (`ExportedModule::new`, for every
    /// subgraph too; a graph run on its own works it out on its first run) and kept, so no
    /// run, and no loop iteration, analyses the graph again.
    pub(crate) values_dead_after: std::sync::OnceLock<Vec<Vec<String>>>,
}

#[derive(Debug, Clone)]
pub struct Node {
    /// `torch.ops.aten.add.Tensor`, `_operator.mul`, `torch.ops.higher_order.cond`, ...
    pub target: String,
    pub inputs: Vec<NamedArgument>,
    pub outputs: Vec<Argument>,
    pub metadata: BTreeMap<String, String>,
    pub is_hop_single_tensor_return: Option<bool>,
    pub name: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgumentKind {
    Unknown,
    Positional,
    Keyword,
}

#[derive(Debug, Clone)]
pub struct NamedArgument {
    pub name: String,
    pub arg: Argument,
    pub kind: Option<ArgumentKind>,
}

/// A device: `cpu`, `cuda` with an optional index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    pub device_type: String,
    pub index: Option<i64>,
}

/// A name, or a literal in a list that mixes symbols and literals.
#[derive(Debug, Clone, PartialEq)]
pub enum SymArgument<T> {
    Name(String),
    Literal(T),
}

/// A tensor in an `Optional[Tensor]` position.
#[derive(Debug, Clone, PartialEq)]
pub enum OptionalTensorArgument {
    Tensor(String),
    None,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CustomObjArgument {
    pub name: String,
    pub class_fqn: String,
}

/// A subgraph of a higher-order operator, inline.
#[derive(Debug, Clone)]
pub struct GraphArgument {
    pub name: String,
    pub graph: Box<Graph>,
}

/// The schema's `Argument` union: every variant.
#[derive(Debug, Clone)]
pub enum Argument {
    None,
    Tensor(String),
    Tensors(Vec<String>),
    Int(i64),
    Ints(Vec<i64>),
    Float(f64),
    Floats(Vec<f64>),
    String(String),
    Strings(Vec<String>),
    SymInt(SymArgument<i64>),
    SymInts(Vec<SymArgument<i64>>),
    /// The export schema's ScalarType number (7 is float32).
    ScalarType(i64),
    /// The export schema's MemoryFormat number.
    MemoryFormat(i64),
    /// The export schema's Layout number (7 is strided).
    Layout(i64),
    Device(Device),
    Bool(bool),
    Bools(Vec<bool>),
    SymBool(SymArgument<bool>),
    SymBools(Vec<SymArgument<bool>>),
    Graph(GraphArgument),
    OptionalTensors(Vec<OptionalTensorArgument>),
    CustomObj(CustomObjArgument),
    Operator(String),
    SymFloat(SymArgument<f64>),
    SymFloats(Vec<SymArgument<f64>>),
    OptionalTensor(OptionalTensorArgument),
    Complex {
        real: f64,
        imag: f64,
    },
    NestedTensors(Vec<Vec<String>>),
    IntLists(Vec<Vec<i64>>),
    FloatLists(Vec<Vec<f64>>),
    StringToArgument(BTreeMap<String, Argument>),
    /// A token of an effectful operator (`with_effects`).
    Token(String),
}

/// A symbolic expression as written (`expr_str`) with its example value.
#[derive(Debug, Clone, PartialEq)]
pub struct SymExpr {
    pub expr_str: String,
    pub hint: Option<SymHint>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SymHint {
    Int(i64),
    Bool(bool),
    Float(f64),
}

#[derive(Debug, Clone, PartialEq)]
pub enum SymInt {
    Expr(SymExpr),
    Int(i64),
}

#[derive(Debug, Clone, PartialEq)]
pub enum SymFloat {
    Expr(SymExpr),
    Float(f64),
}

#[derive(Debug, Clone, PartialEq)]
pub enum SymBool {
    Expr(SymExpr),
    Bool(bool),
}

/// A tensor's metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorMeta {
    /// The export schema's ScalarType number.
    pub dtype: i64,
    pub sizes: Vec<SymInt>,
    pub requires_grad: bool,
    pub device: Device,
    pub strides: Vec<SymInt>,
    pub storage_offset: SymInt,
    pub layout: i64,
}

#[derive(Debug, Clone, Default)]
pub struct GraphSignature {
    pub input_specs: Vec<InputSpec>,
    pub output_specs: Vec<OutputSpec>,
}

/// A constant given as a user input (`constant_input`).
#[derive(Debug, Clone, PartialEq)]
pub enum ConstantValue {
    None,
    Int(i64),
    Float(f64),
    String(String),
    Bool(bool),
}

/// What each graph input is.
#[derive(Debug, Clone)]
pub enum InputSpec {
    UserInput {
        arg: Argument,
    },
    Parameter {
        arg: String,
        parameter_name: String,
    },
    Buffer {
        arg: String,
        buffer_name: String,
        persistent: bool,
    },
    TensorConstant {
        arg: String,
        tensor_constant_name: String,
    },
    CustomObj {
        arg: CustomObjArgument,
        custom_obj_name: String,
    },
    Token {
        arg: String,
    },
    ConstantInput {
        name: String,
        value: ConstantValue,
    },
}

/// What each graph output is.
#[derive(Debug, Clone)]
pub enum OutputSpec {
    UserOutput {
        arg: Argument,
    },
    LossOutput {
        arg: String,
    },
    BufferMutation {
        arg: String,
        buffer_name: String,
    },
    ParameterMutation {
        arg: String,
        parameter_name: String,
    },
    GradientToParameter {
        arg: String,
        parameter_name: String,
    },
    GradientToUserInput {
        arg: String,
        user_input_name: String,
    },
    UserInputMutation {
        arg: String,
        user_input_name: String,
    },
    Token {
        arg: String,
    },
}

/// A payload entry of a weights or constants config.
#[derive(Debug, Clone)]
pub struct PayloadMeta {
    pub path_name: String,
    pub is_param: bool,
    pub use_pickle: bool,
    pub tensor_meta: Option<TensorMeta>,
}

// ---- reading from JSON ----

fn string_map(json: &Json) -> Result<BTreeMap<String, String>> {
    json.entries()?
        .into_iter()
        .map(|(key, value)| Ok((key, value.string()?)))
        .collect()
}

fn strings(json: &Json) -> Result<Vec<String>> {
    json.items()?.iter().map(|v| v.string()).collect()
}

fn optional_map<T>(
    json: &Json,
    field: &str,
    read: impl Fn(&Json) -> Result<T>,
) -> Result<BTreeMap<String, T>> {
    match json.get_optional(field)? {
        None => Ok(BTreeMap::new()),
        Some(map) => map
            .entries()?
            .into_iter()
            .map(|(key, value)| Ok((key, read(&value)?)))
            .collect(),
    }
}

impl ExportedProgram {
    /// Reads a program from its parsed `models/NAME.json`, refusing other schema majors.
    pub fn from_json(json: &Json) -> Result<ExportedProgram> {
        let version = json.get("schema_version")?;
        let schema_version = SchemaVersion {
            major: version.get("major")?.int()?,
            minor: version.get("minor")?.int()?,
        };
        if schema_version.major != SUPPORTED_SCHEMA_MAJOR {
            return Err(crate::ExportError::SchemaVersion {
                found_major: schema_version.major,
                found_minor: schema_version.minor,
                supported_major: SUPPORTED_SCHEMA_MAJOR,
            });
        }
        let range_constraints = optional_map(json, "range_constraints", |value| {
            let bound = |name: &str| -> Result<Option<i64>> {
                match value.get_optional(name)? {
                    None => Ok(None),
                    Some(bound) => match bound.value {
                        // Python's int_oo may be written as a huge number or a float.
                        serde_json::Value::Number(number) if number.as_i64().is_none() => Ok(None),
                        _ => bound.int().map(Some),
                    },
                }
            };
            Ok(RangeConstraint {
                min_val: bound("min_val")?,
                max_val: bound("max_val")?,
            })
        })?;
        Ok(ExportedProgram {
            graph_module: GraphModule::from_json(&json.get("graph_module")?)?,
            opset_version: optional_map(json, "opset_version", |v: &Json| v.int())?,
            range_constraints,
            schema_version,
            verifiers: match json.get_optional("verifiers")? {
                Some(list) => strings(&list)?,
                None => Vec::new(),
            },
            torch_version: match json.get_optional("torch_version")? {
                Some(text) => text.string()?,
                None => "<=2.4".to_string(),
            },
            guards_code: match json.get_optional("guards_code")? {
                Some(list) => strings(&list)?,
                None => Vec::new(),
            },
        })
    }

    /// The dialect the program was verified against (`TRAINING` when none is named).
    pub fn dialect(&self) -> &str {
        self.verifiers.first().map(String::as_str).unwrap_or("ATEN")
    }
}

impl GraphModule {
    fn from_json(json: &Json) -> Result<GraphModule> {
        let module_call_graph = match json.get_optional("module_call_graph")? {
            None => Vec::new(),
            Some(list) => list
                .items()?
                .iter()
                .map(ModuleCallEntry::from_json)
                .collect::<Result<_>>()?,
        };
        Ok(GraphModule {
            graph: Graph::from_json(&json.get("graph")?)?,
            signature: GraphSignature::from_json(&json.get("signature")?)?,
            module_call_graph,
            metadata: match json.get_optional("metadata")? {
                Some(map) => string_map(&map)?,
                None => BTreeMap::new(),
            },
            treespec_namedtuple_fields: optional_map(json, "treespec_namedtuple_fields", |d| {
                strings(&d.get("field_names")?)
            })?,
        })
    }
}

impl ModuleCallEntry {
    fn from_json(json: &Json) -> Result<ModuleCallEntry> {
        let signature = match json.get_optional("signature")? {
            None => None,
            Some(signature) => Some(ModuleCallSignature {
                inputs: arguments(&signature.get("inputs")?)?,
                outputs: arguments(&signature.get("outputs")?)?,
                in_spec: signature.get("in_spec")?.string()?,
                out_spec: signature.get("out_spec")?.string()?,
                forward_arg_names: match signature.get_optional("forward_arg_names")? {
                    Some(names) => Some(strings(&names)?),
                    None => None,
                },
            }),
        };
        Ok(ModuleCallEntry {
            fqn: json.get("fqn")?.string()?,
            signature,
        })
    }
}

fn arguments(json: &Json) -> Result<Vec<Argument>> {
    json.items()?.iter().map(Argument::from_json).collect()
}

impl Graph {
    pub(crate) fn from_json(json: &Json) -> Result<Graph> {
        Ok(Graph {
            inputs: arguments(&json.get("inputs")?)?,
            outputs: arguments(&json.get("outputs")?)?,
            nodes: json
                .get("nodes")?
                .items()?
                .iter()
                .map(Node::from_json)
                .collect::<Result<_>>()?,
            tensor_values: optional_map(json, "tensor_values", TensorMeta::from_json)?,
            sym_int_values: optional_map(json, "sym_int_values", SymInt::from_json)?,
            sym_bool_values: optional_map(json, "sym_bool_values", SymBool::from_json)?,
            sym_float_values: optional_map(json, "sym_float_values", SymFloat::from_json)?,
            custom_obj_values: optional_map(json, "custom_obj_values", custom_obj)?,
            is_single_tensor_return: match json.get_optional("is_single_tensor_return")? {
                Some(flag) => flag.boolean()?,
                None => false,
            },
            values_dead_after: std::sync::OnceLock::new(),
        })
    }
}

impl Node {
    fn from_json(json: &Json) -> Result<Node> {
        let inputs = json
            .get("inputs")?
            .items()?
            .iter()
            .map(|input| {
                let kind = match input.get_optional("kind")? {
                    None => None,
                    Some(kind) => Some(match kind.int()? {
                        1 => ArgumentKind::Positional,
                        2 => ArgumentKind::Keyword,
                        _ => ArgumentKind::Unknown,
                    }),
                };
                Ok(NamedArgument {
                    name: input.get("name")?.string()?,
                    arg: Argument::from_json(&input.get("arg")?)?,
                    kind,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Node {
            target: json.get("target")?.string()?,
            inputs,
            outputs: arguments(&json.get("outputs")?)?,
            metadata: match json.get_optional("metadata")? {
                Some(map) => string_map(&map)?,
                None => BTreeMap::new(),
            },
            is_hop_single_tensor_return: match json.get_optional("is_hop_single_tensor_return")? {
                Some(flag) => Some(flag.boolean()?),
                None => None,
            },
            name: match json.get_optional("name")? {
                Some(name) => Some(name.string()?),
                None => None,
            },
        })
    }
}

fn tensor_name(json: &Json) -> Result<String> {
    json.get("name")?.string()
}

fn custom_obj(json: &Json) -> Result<CustomObjArgument> {
    Ok(CustomObjArgument {
        name: json.get("name")?.string()?,
        class_fqn: json.get("class_fqn")?.string()?,
    })
}

fn device(json: &Json) -> Result<Device> {
    Ok(Device {
        device_type: json.get("type")?.string()?,
        index: match json.get_optional("index")? {
            Some(index) => Some(index.int()?),
            None => None,
        },
    })
}

fn sym_argument<T>(
    json: &Json,
    literal: &str,
    read: impl Fn(&Json) -> Result<T>,
) -> Result<SymArgument<T>> {
    let (member, value) = json.union()?;
    if member == "as_name" {
        Ok(SymArgument::Name(value.string()?))
    } else if member == literal {
        Ok(SymArgument::Literal(read(&value)?))
    } else {
        Err(json.error(format!("unknown member '{member}'")))
    }
}

fn optional_tensor(json: &Json) -> Result<OptionalTensorArgument> {
    let (member, value) = json.union()?;
    match member.as_str() {
        "as_tensor" => Ok(OptionalTensorArgument::Tensor(tensor_name(&value)?)),
        "as_none" => Ok(OptionalTensorArgument::None),
        other => Err(json.error(format!("unknown member '{other}'"))),
    }
}

fn list<T>(json: &Json, read: impl Fn(&Json) -> Result<T>) -> Result<Vec<T>> {
    json.items()?.iter().map(read).collect()
}

impl Argument {
    pub(crate) fn from_json(json: &Json) -> Result<Argument> {
        // `{"as_none": true}` (or null) is None.
        if json.entries()?.iter().any(|(key, _)| key == "as_none") {
            return Ok(Argument::None);
        }
        let (member, value) = json.union()?;
        let value = &value;
        Ok(match member.as_str() {
            "as_none" => Argument::None,
            "as_tensor" => Argument::Tensor(tensor_name(value)?),
            "as_tensors" => Argument::Tensors(list(value, tensor_name)?),
            "as_int" => Argument::Int(value.int()?),
            "as_ints" => Argument::Ints(list(value, |v: &Json| v.int())?),
            "as_float" => Argument::Float(value.float()?),
            "as_floats" => Argument::Floats(list(value, |v: &Json| v.float())?),
            "as_string" => Argument::String(value.string()?),
            "as_strings" => Argument::Strings(list(value, |v: &Json| v.string())?),
            "as_sym_int" => Argument::SymInt(sym_argument(value, "as_int", |v: &Json| v.int())?),
            "as_sym_ints" => Argument::SymInts(list(value, |v| {
                sym_argument(v, "as_int", |v: &Json| v.int())
            })?),
            "as_scalar_type" => Argument::ScalarType(value.int()?),
            "as_memory_format" => Argument::MemoryFormat(value.int()?),
            "as_layout" => Argument::Layout(value.int()?),
            "as_device" => Argument::Device(device(value)?),
            "as_bool" => Argument::Bool(value.boolean()?),
            "as_bools" => Argument::Bools(list(value, |v: &Json| v.boolean())?),
            "as_sym_bool" => {
                Argument::SymBool(sym_argument(value, "as_bool", |v: &Json| v.boolean())?)
            }
            "as_sym_bools" => Argument::SymBools(list(value, |v| {
                sym_argument(v, "as_bool", |v: &Json| v.boolean())
            })?),
            "as_graph" => Argument::Graph(GraphArgument {
                name: value.get("name")?.string()?,
                graph: Box::new(Graph::from_json(&value.get("graph")?)?),
            }),
            "as_optional_tensors" => Argument::OptionalTensors(list(value, optional_tensor)?),
            "as_custom_obj" => Argument::CustomObj(custom_obj(value)?),
            "as_operator" => Argument::Operator(value.string()?),
            "as_sym_float" => {
                Argument::SymFloat(sym_argument(value, "as_float", |v: &Json| v.float())?)
            }
            "as_sym_floats" => Argument::SymFloats(list(value, |v| {
                sym_argument(v, "as_float", |v: &Json| v.float())
            })?),
            "as_optional_tensor" => Argument::OptionalTensor(optional_tensor(value)?),
            "as_complex" => Argument::Complex {
                real: value.get("real")?.float()?,
                imag: value.get("imag")?.float()?,
            },
            "as_nested_tensors" => {
                Argument::NestedTensors(list(value, |inner| list(inner, tensor_name))?)
            }
            "as_int_lists" => {
                Argument::IntLists(list(value, |inner| list(inner, |v: &Json| v.int()))?)
            }
            "as_float_lists" => {
                Argument::FloatLists(list(value, |inner| list(inner, |v: &Json| v.float()))?)
            }
            "as_string_to_argument" => Argument::StringToArgument(
                value
                    .entries()?
                    .into_iter()
                    .map(|(key, inner)| Ok((key, Argument::from_json(&inner)?)))
                    .collect::<Result<_>>()?,
            ),
            "as_token" => Argument::Token(tensor_name(value)?),
            other => return Err(json.error(format!("unknown Argument member '{other}'"))),
        })
    }

    /// Calls `visit` with every value name this argument reads: single names, the names in
    /// lists (tensors, symbols, optional tensors, nested lists) and in string-keyed maps.
    /// A subgraph reads only its own inputs, so it names nothing here.
    pub fn for_each_referenced_name<'a>(&'a self, visit: &mut impl FnMut(&'a str)) {
        fn symbols<'a, T>(items: &'a [SymArgument<T>], visit: &mut impl FnMut(&'a str)) {
            for item in items {
                if let SymArgument::Name(name) = item {
                    visit(name);
                }
            }
        }
        match self {
            Argument::Tensors(names) => names.iter().for_each(|name| visit(name)),
            Argument::NestedTensors(lists) => {
                lists.iter().flatten().for_each(|name| visit(name.as_str()))
            }
            Argument::SymInts(items) => symbols(items, visit),
            Argument::SymBools(items) => symbols(items, visit),
            Argument::SymFloats(items) => symbols(items, visit),
            Argument::OptionalTensors(items) => {
                for item in items {
                    if let OptionalTensorArgument::Tensor(name) = item {
                        visit(name);
                    }
                }
            }
            Argument::OptionalTensor(OptionalTensorArgument::Tensor(name)) => visit(name),
            Argument::StringToArgument(map) => {
                for inner in map.values() {
                    inner.for_each_referenced_name(visit);
                }
            }
            other => {
                if let Some(name) = other.name() {
                    visit(name);
                }
            }
        }
    }

    /// The value name this argument refers to, for the single-name variants.
    pub fn name(&self) -> Option<&str> {
        match self {
            Argument::Tensor(name) | Argument::Token(name) => Some(name),
            Argument::SymInt(SymArgument::Name(name))
            | Argument::SymBool(SymArgument::Name(name))
            | Argument::SymFloat(SymArgument::Name(name)) => Some(name),
            Argument::CustomObj(object) => Some(&object.name),
            _ => None,
        }
    }
}

fn sym_expr(json: &Json) -> Result<SymExpr> {
    let hint = match json.get_optional("hint")? {
        None => None,
        Some(hint) => {
            let (member, value) = hint.union()?;
            Some(match member.as_str() {
                "as_int" => SymHint::Int(value.int()?),
                "as_bool" => SymHint::Bool(value.boolean()?),
                "as_float" => SymHint::Float(value.float()?),
                other => return Err(hint.error(format!("unknown hint member '{other}'"))),
            })
        }
    };
    Ok(SymExpr {
        expr_str: json.get("expr_str")?.string()?,
        hint,
    })
}

impl SymInt {
    pub(crate) fn from_json(json: &Json) -> Result<SymInt> {
        let (member, value) = json.union()?;
        match member.as_str() {
            "as_expr" => Ok(SymInt::Expr(sym_expr(&value)?)),
            "as_int" => Ok(SymInt::Int(value.int()?)),
            other => Err(json.error(format!("unknown SymInt member '{other}'"))),
        }
    }

    /// The value when it is a literal.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            SymInt::Int(value) => Some(*value),
            SymInt::Expr(_) => None,
        }
    }
}

impl SymFloat {
    fn from_json(json: &Json) -> Result<SymFloat> {
        let (member, value) = json.union()?;
        match member.as_str() {
            "as_expr" => Ok(SymFloat::Expr(sym_expr(&value)?)),
            "as_float" => Ok(SymFloat::Float(value.float()?)),
            other => Err(json.error(format!("unknown SymFloat member '{other}'"))),
        }
    }
}

impl SymBool {
    fn from_json(json: &Json) -> Result<SymBool> {
        let (member, value) = json.union()?;
        match member.as_str() {
            "as_expr" => Ok(SymBool::Expr(sym_expr(&value)?)),
            "as_bool" => Ok(SymBool::Bool(value.boolean()?)),
            other => Err(json.error(format!("unknown SymBool member '{other}'"))),
        }
    }
}

impl TensorMeta {
    pub(crate) fn from_json(json: &Json) -> Result<TensorMeta> {
        Ok(TensorMeta {
            dtype: json.get("dtype")?.int()?,
            sizes: list(&json.get("sizes")?, SymInt::from_json)?,
            requires_grad: match json.get_optional("requires_grad")? {
                Some(flag) => flag.boolean()?,
                None => false,
            },
            device: device(&json.get("device")?)?,
            strides: list(&json.get("strides")?, SymInt::from_json)?,
            storage_offset: SymInt::from_json(&json.get("storage_offset")?)?,
            layout: json.get("layout")?.int()?,
        })
    }
}

impl GraphSignature {
    fn from_json(json: &Json) -> Result<GraphSignature> {
        Ok(GraphSignature {
            input_specs: list(&json.get("input_specs")?, input_spec)?,
            output_specs: list(&json.get("output_specs")?, output_spec)?,
        })
    }
}

fn input_spec(json: &Json) -> Result<InputSpec> {
    let (member, spec) = json.union()?;
    let arg_name = || tensor_name(&spec.get("arg")?);
    let text = |field: &str| spec.get(field)?.string();
    Ok(match member.as_str() {
        "user_input" => InputSpec::UserInput {
            arg: Argument::from_json(&spec.get("arg")?)?,
        },
        "parameter" => InputSpec::Parameter {
            arg: arg_name()?,
            parameter_name: text("parameter_name")?,
        },
        "buffer" => InputSpec::Buffer {
            arg: arg_name()?,
            buffer_name: text("buffer_name")?,
            persistent: match spec.get_optional("persistent")? {
                Some(flag) => flag.boolean()?,
                None => true,
            },
        },
        "tensor_constant" => InputSpec::TensorConstant {
            arg: arg_name()?,
            tensor_constant_name: text("tensor_constant_name")?,
        },
        "custom_obj" => InputSpec::CustomObj {
            arg: custom_obj(&spec.get("arg")?)?,
            custom_obj_name: text("custom_obj_name")?,
        },
        "token" => InputSpec::Token { arg: arg_name()? },
        "constant_input" => {
            let value = spec.get("value")?;
            let (kind, inner) = value.union()?;
            InputSpec::ConstantInput {
                name: text("name")?,
                value: match kind.as_str() {
                    "as_none" => ConstantValue::None,
                    "as_int" => ConstantValue::Int(inner.int()?),
                    "as_float" => ConstantValue::Float(inner.float()?),
                    "as_string" => ConstantValue::String(inner.string()?),
                    "as_bool" => ConstantValue::Bool(inner.boolean()?),
                    other => return Err(value.error(format!("unknown constant '{other}'"))),
                },
            }
        }
        other => return Err(json.error(format!("unknown input spec '{other}'"))),
    })
}

fn output_spec(json: &Json) -> Result<OutputSpec> {
    let (member, spec) = json.union()?;
    let arg_name = || tensor_name(&spec.get("arg")?);
    let text = |field: &str| spec.get(field)?.string();
    Ok(match member.as_str() {
        "user_output" => OutputSpec::UserOutput {
            arg: Argument::from_json(&spec.get("arg")?)?,
        },
        "loss_output" => OutputSpec::LossOutput { arg: arg_name()? },
        "buffer_mutation" => OutputSpec::BufferMutation {
            arg: arg_name()?,
            buffer_name: text("buffer_name")?,
        },
        "parameter_mutation" => OutputSpec::ParameterMutation {
            arg: arg_name()?,
            parameter_name: text("parameter_name")?,
        },
        "gradient_to_parameter" => OutputSpec::GradientToParameter {
            arg: arg_name()?,
            parameter_name: text("parameter_name")?,
        },
        "gradient_to_user_input" => OutputSpec::GradientToUserInput {
            arg: arg_name()?,
            user_input_name: text("user_input_name")?,
        },
        "user_input_mutation" => OutputSpec::UserInputMutation {
            arg: arg_name()?,
            user_input_name: text("user_input_name")?,
        },
        "token" => OutputSpec::Token { arg: arg_name()? },
        other => return Err(json.error(format!("unknown output spec '{other}'"))),
    })
}

impl PayloadMeta {
    pub(crate) fn from_json(json: &Json) -> Result<PayloadMeta> {
        Ok(PayloadMeta {
            path_name: json.get("path_name")?.string()?,
            is_param: match json.get_optional("is_param")? {
                Some(flag) => flag.boolean()?,
                None => false,
            },
            use_pickle: match json.get_optional("use_pickle")? {
                Some(flag) => flag.boolean()?,
                None => false,
            },
            tensor_meta: match json.get_optional("tensor_meta")? {
                Some(meta) => Some(TensorMeta::from_json(&meta)?),
                None => None,
            },
        })
    }
}

/// The ferrojit dtype of an export-schema ScalarType number.
pub fn scalar_type_to_dtype(code: i64) -> Option<ferrojit_tensor::DType> {
    use ferrojit_tensor::DType;
    Some(match code {
        1 => DType::UInt8,
        2 => DType::Int8,
        3 => DType::Int16,
        4 => DType::Int32,
        5 => DType::Int64,
        6 => DType::Float16,
        7 => DType::Float32,
        8 => DType::Float64,
        10 => DType::ComplexFloat,
        11 => DType::ComplexDouble,
        12 => DType::Bool,
        13 => DType::BFloat16,
        _ => return None,
    })
}

/// The export schema's name of a ScalarType number, for messages and printing.
pub fn scalar_type_name(code: i64) -> String {
    match code {
        0 => "UNKNOWN".into(),
        1 => "uint8".into(),
        2 => "int8".into(),
        3 => "int16".into(),
        4 => "int32".into(),
        5 => "int64".into(),
        6 => "float16".into(),
        7 => "float32".into(),
        8 => "float64".into(),
        9 => "complex32".into(),
        10 => "complex64".into(),
        11 => "complex128".into(),
        12 => "bool".into(),
        13 => "bfloat16".into(),
        28 => "uint16".into(),
        29 => "float8_e4m3fn".into(),
        30 => "float8_e5m2".into(),
        31 => "float8_e4m3fnuz".into(),
        32 => "float8_e5m2fnuz".into(),
        other => format!("ScalarType({other})"),
    }
}
