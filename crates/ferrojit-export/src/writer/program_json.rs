//! An `ExportedProgram` as the JSON value torch 2.15's `torch/_export/serde/serialize.py`
//! writes to `models/NAME.json`: every dataclass field, in the schema's field order, each
//! union as a one-member object.

use super::json_text::JsonValue;
use crate::model::{
    Argument, ArgumentKind, ConstantValue, CustomObjArgument, Device, ExportedProgram, Graph,
    GraphModule, GraphSignature, InputSpec, ModuleCallEntry, NamedArgument, Node,
    OptionalTensorArgument, OutputSpec, PayloadMeta, RangeConstraint, SymArgument, SymBool,
    SymExpr, SymFloat, SymHint, SymInt, TensorMeta,
};
use std::collections::BTreeMap;

fn string_list(items: &[String]) -> JsonValue {
    JsonValue::List(items.iter().map(|item| JsonValue::string(item)).collect())
}

fn map<T>(entries: &BTreeMap<String, T>, write: impl Fn(&T) -> JsonValue) -> JsonValue {
    JsonValue::object(
        entries
            .iter()
            .map(|(key, value)| (key.clone(), write(value))),
    )
}

fn string_map(entries: &BTreeMap<String, String>) -> JsonValue {
    map(entries, |value| JsonValue::string(value))
}

/// `{"name": NAME}`: a `TensorArgument` or `TokenArgument`.
fn named(name: &str) -> JsonValue {
    JsonValue::object([("name", JsonValue::string(name))])
}

/// The whole program.
pub fn exported_program(program: &ExportedProgram) -> JsonValue {
    JsonValue::object([
        ("graph_module", graph_module(&program.graph_module)),
        (
            "opset_version",
            map(&program.opset_version, |version| JsonValue::Int(*version)),
        ),
        (
            "range_constraints",
            map(&program.range_constraints, range_constraint),
        ),
        (
            "schema_version",
            JsonValue::object([
                ("major", JsonValue::Int(program.schema_version.major)),
                ("minor", JsonValue::Int(program.schema_version.minor)),
            ]),
        ),
        ("verifiers", string_list(&program.verifiers)),
        ("torch_version", JsonValue::string(&program.torch_version)),
        ("guards_code", string_list(&program.guards_code)),
    ])
}

fn range_constraint(range: &RangeConstraint) -> JsonValue {
    JsonValue::object([
        (
            "min_val",
            JsonValue::optional(range.min_val, JsonValue::Int),
        ),
        (
            "max_val",
            JsonValue::optional(range.max_val, JsonValue::Int),
        ),
    ])
}

fn graph_module(module: &GraphModule) -> JsonValue {
    JsonValue::object([
        ("graph", graph(&module.graph)),
        ("signature", signature(&module.signature)),
        (
            "module_call_graph",
            JsonValue::List(
                module
                    .module_call_graph
                    .iter()
                    .map(module_call_entry)
                    .collect(),
            ),
        ),
        ("metadata", string_map(&module.metadata)),
        (
            "treespec_namedtuple_fields",
            map(&module.treespec_namedtuple_fields, |fields| {
                JsonValue::object([("field_names", string_list(fields))])
            }),
        ),
    ])
}

fn module_call_entry(entry: &ModuleCallEntry) -> JsonValue {
    let signature = JsonValue::optional(entry.signature.as_ref(), |signature| {
        JsonValue::object([
            ("inputs", arguments(&signature.inputs)),
            ("outputs", arguments(&signature.outputs)),
            ("in_spec", JsonValue::string(&signature.in_spec)),
            ("out_spec", JsonValue::string(&signature.out_spec)),
            (
                "forward_arg_names",
                JsonValue::optional(signature.forward_arg_names.as_deref(), string_list),
            ),
        ])
    });
    JsonValue::object([
        ("fqn", JsonValue::string(&entry.fqn)),
        ("signature", signature),
    ])
}

fn arguments(items: &[Argument]) -> JsonValue {
    JsonValue::List(items.iter().map(argument).collect())
}

/// A graph (the program's, or a higher-order operator's subgraph).
pub fn graph(graph: &Graph) -> JsonValue {
    JsonValue::object([
        ("inputs", arguments(&graph.inputs)),
        ("outputs", arguments(&graph.outputs)),
        (
            "nodes",
            JsonValue::List(graph.nodes.iter().map(node).collect()),
        ),
        ("tensor_values", map(&graph.tensor_values, tensor_meta)),
        ("sym_int_values", map(&graph.sym_int_values, sym_int)),
        ("sym_bool_values", map(&graph.sym_bool_values, sym_bool)),
        (
            "is_single_tensor_return",
            JsonValue::Bool(graph.is_single_tensor_return),
        ),
        (
            "custom_obj_values",
            map(&graph.custom_obj_values, custom_obj),
        ),
        ("sym_float_values", map(&graph.sym_float_values, sym_float)),
    ])
}

fn node(node: &Node) -> JsonValue {
    JsonValue::object([
        ("target", JsonValue::string(&node.target)),
        (
            "inputs",
            JsonValue::List(node.inputs.iter().map(named_argument).collect()),
        ),
        ("outputs", arguments(&node.outputs)),
        ("metadata", string_map(&node.metadata)),
        (
            "is_hop_single_tensor_return",
            JsonValue::optional(node.is_hop_single_tensor_return, JsonValue::Bool),
        ),
        (
            "name",
            JsonValue::optional(node.name.as_deref(), JsonValue::string),
        ),
    ])
}

fn named_argument(input: &NamedArgument) -> JsonValue {
    let kind = input.kind.map(|kind| {
        JsonValue::Int(match kind {
            ArgumentKind::Unknown => 0,
            ArgumentKind::Positional => 1,
            ArgumentKind::Keyword => 2,
        })
    });
    JsonValue::object([
        ("name", JsonValue::string(&input.name)),
        ("arg", argument(&input.arg)),
        ("kind", kind.unwrap_or(JsonValue::Null)),
    ])
}

fn device(device: &Device) -> JsonValue {
    JsonValue::object([
        ("type", JsonValue::string(&device.device_type)),
        ("index", JsonValue::optional(device.index, JsonValue::Int)),
    ])
}

fn custom_obj(object: &CustomObjArgument) -> JsonValue {
    JsonValue::object([
        ("name", JsonValue::string(&object.name)),
        ("class_fqn", JsonValue::string(&object.class_fqn)),
    ])
}

fn sym_argument<T: Copy>(
    value: &SymArgument<T>,
    literal_member: &str,
    literal: impl Fn(T) -> JsonValue,
) -> JsonValue {
    match value {
        SymArgument::Name(name) => JsonValue::union("as_name", JsonValue::string(name)),
        SymArgument::Literal(value) => JsonValue::union(literal_member, literal(*value)),
    }
}

fn optional_tensor(value: &OptionalTensorArgument) -> JsonValue {
    match value {
        OptionalTensorArgument::Tensor(name) => JsonValue::union("as_tensor", named(name)),
        OptionalTensorArgument::None => JsonValue::union("as_none", JsonValue::Bool(true)),
    }
}

fn ints(values: &[i64]) -> JsonValue {
    JsonValue::List(values.iter().map(|value| JsonValue::Int(*value)).collect())
}

fn floats(values: &[f64]) -> JsonValue {
    JsonValue::List(
        values
            .iter()
            .map(|value| JsonValue::Float(*value))
            .collect(),
    )
}

/// One member of the schema's `Argument` union.
pub fn argument(argument: &Argument) -> JsonValue {
    let (member, value) = match argument {
        Argument::None => ("as_none", JsonValue::Bool(true)),
        Argument::Tensor(name) => ("as_tensor", named(name)),
        Argument::Tensors(names) => (
            "as_tensors",
            JsonValue::List(names.iter().map(|name| named(name)).collect()),
        ),
        Argument::Int(value) => ("as_int", JsonValue::Int(*value)),
        Argument::Ints(values) => ("as_ints", ints(values)),
        Argument::Float(value) => ("as_float", JsonValue::Float(*value)),
        Argument::Floats(values) => ("as_floats", floats(values)),
        Argument::String(text) => ("as_string", JsonValue::string(text)),
        Argument::Strings(texts) => ("as_strings", string_list(texts)),
        Argument::SymInt(value) => ("as_sym_int", sym_argument(value, "as_int", JsonValue::Int)),
        Argument::SymInts(values) => (
            "as_sym_ints",
            JsonValue::List(
                values
                    .iter()
                    .map(|value| sym_argument(value, "as_int", JsonValue::Int))
                    .collect(),
            ),
        ),
        Argument::ScalarType(code) => ("as_scalar_type", JsonValue::Int(*code)),
        Argument::MemoryFormat(code) => ("as_memory_format", JsonValue::Int(*code)),
        Argument::Layout(code) => ("as_layout", JsonValue::Int(*code)),
        Argument::Device(value) => ("as_device", device(value)),
        Argument::Bool(value) => ("as_bool", JsonValue::Bool(*value)),
        Argument::Bools(values) => (
            "as_bools",
            JsonValue::List(values.iter().map(|value| JsonValue::Bool(*value)).collect()),
        ),
        Argument::SymBool(value) => (
            "as_sym_bool",
            sym_argument(value, "as_bool", JsonValue::Bool),
        ),
        Argument::SymBools(values) => (
            "as_sym_bools",
            JsonValue::List(
                values
                    .iter()
                    .map(|value| sym_argument(value, "as_bool", JsonValue::Bool))
                    .collect(),
            ),
        ),
        Argument::Graph(subgraph) => (
            "as_graph",
            JsonValue::object([
                ("name", JsonValue::string(&subgraph.name)),
                ("graph", graph(&subgraph.graph)),
            ]),
        ),
        Argument::OptionalTensors(values) => (
            "as_optional_tensors",
            JsonValue::List(values.iter().map(optional_tensor).collect()),
        ),
        Argument::CustomObj(object) => ("as_custom_obj", custom_obj(object)),
        Argument::Operator(name) => ("as_operator", JsonValue::string(name)),
        Argument::SymFloat(value) => (
            "as_sym_float",
            sym_argument(value, "as_float", JsonValue::Float),
        ),
        Argument::SymFloats(values) => (
            "as_sym_floats",
            JsonValue::List(
                values
                    .iter()
                    .map(|value| sym_argument(value, "as_float", JsonValue::Float))
                    .collect(),
            ),
        ),
        Argument::OptionalTensor(value) => ("as_optional_tensor", optional_tensor(value)),
        Argument::Complex { real, imag } => (
            "as_complex",
            JsonValue::object([
                ("real", JsonValue::Float(*real)),
                ("imag", JsonValue::Float(*imag)),
            ]),
        ),
        Argument::NestedTensors(lists) => (
            "as_nested_tensors",
            JsonValue::List(
                lists
                    .iter()
                    .map(|names| JsonValue::List(names.iter().map(|name| named(name)).collect()))
                    .collect(),
            ),
        ),
        Argument::IntLists(lists) => (
            "as_int_lists",
            JsonValue::List(lists.iter().map(|values| ints(values)).collect()),
        ),
        Argument::FloatLists(lists) => (
            "as_float_lists",
            JsonValue::List(lists.iter().map(|values| floats(values)).collect()),
        ),
        Argument::StringToArgument(entries) => {
            ("as_string_to_argument", map(entries, self::argument))
        }
        // Not a member of the 2.15 schema's union; written back as it was read.
        Argument::Token(name) => ("as_token", named(name)),
    };
    JsonValue::union(member, value)
}

fn sym_expr(expression: &SymExpr) -> JsonValue {
    let hint = JsonValue::optional(expression.hint, |hint| match hint {
        SymHint::Int(value) => JsonValue::union("as_int", JsonValue::Int(value)),
        SymHint::Bool(value) => JsonValue::union("as_bool", JsonValue::Bool(value)),
        SymHint::Float(value) => JsonValue::union("as_float", JsonValue::Float(value)),
    });
    JsonValue::object([
        ("expr_str", JsonValue::string(&expression.expr_str)),
        ("hint", hint),
    ])
}

fn sym_int(value: &SymInt) -> JsonValue {
    match value {
        SymInt::Expr(expression) => JsonValue::union("as_expr", sym_expr(expression)),
        SymInt::Int(value) => JsonValue::union("as_int", JsonValue::Int(*value)),
    }
}

fn sym_float(value: &SymFloat) -> JsonValue {
    match value {
        SymFloat::Expr(expression) => JsonValue::union("as_expr", sym_expr(expression)),
        SymFloat::Float(value) => JsonValue::union("as_float", JsonValue::Float(*value)),
    }
}

fn sym_bool(value: &SymBool) -> JsonValue {
    match value {
        SymBool::Expr(expression) => JsonValue::union("as_expr", sym_expr(expression)),
        SymBool::Bool(value) => JsonValue::union("as_bool", JsonValue::Bool(*value)),
    }
}

/// A tensor's metadata.
pub fn tensor_meta(meta: &TensorMeta) -> JsonValue {
    JsonValue::object([
        ("dtype", JsonValue::Int(meta.dtype)),
        (
            "sizes",
            JsonValue::List(meta.sizes.iter().map(sym_int).collect()),
        ),
        ("requires_grad", JsonValue::Bool(meta.requires_grad)),
        ("device", device(&meta.device)),
        (
            "strides",
            JsonValue::List(meta.strides.iter().map(sym_int).collect()),
        ),
        ("storage_offset", sym_int(&meta.storage_offset)),
        ("layout", JsonValue::Int(meta.layout)),
    ])
}

fn signature(signature: &GraphSignature) -> JsonValue {
    JsonValue::object([
        (
            "input_specs",
            JsonValue::List(signature.input_specs.iter().map(input_spec).collect()),
        ),
        (
            "output_specs",
            JsonValue::List(signature.output_specs.iter().map(output_spec).collect()),
        ),
    ])
}

fn input_spec(spec: &InputSpec) -> JsonValue {
    let text = JsonValue::string;
    match spec {
        InputSpec::UserInput { arg } => {
            JsonValue::union("user_input", JsonValue::object([("arg", argument(arg))]))
        }
        InputSpec::Parameter {
            arg,
            parameter_name,
        } => JsonValue::union(
            "parameter",
            JsonValue::object([
                ("arg", named(arg)),
                ("parameter_name", text(parameter_name)),
            ]),
        ),
        InputSpec::Buffer {
            arg,
            buffer_name,
            persistent,
        } => JsonValue::union(
            "buffer",
            JsonValue::object([
                ("arg", named(arg)),
                ("buffer_name", text(buffer_name)),
                ("persistent", JsonValue::Bool(*persistent)),
            ]),
        ),
        InputSpec::TensorConstant {
            arg,
            tensor_constant_name,
        } => JsonValue::union(
            "tensor_constant",
            JsonValue::object([
                ("arg", named(arg)),
                ("tensor_constant_name", text(tensor_constant_name)),
            ]),
        ),
        InputSpec::CustomObj {
            arg,
            custom_obj_name,
        } => JsonValue::union(
            "custom_obj",
            JsonValue::object([
                ("arg", custom_obj(arg)),
                ("custom_obj_name", text(custom_obj_name)),
            ]),
        ),
        InputSpec::Token { arg } => {
            JsonValue::union("token", JsonValue::object([("arg", named(arg))]))
        }
        InputSpec::ConstantInput { name, value } => {
            let value = match value {
                ConstantValue::None => JsonValue::union("as_none", JsonValue::Bool(true)),
                ConstantValue::Int(value) => JsonValue::union("as_int", JsonValue::Int(*value)),
                ConstantValue::Float(value) => {
                    JsonValue::union("as_float", JsonValue::Float(*value))
                }
                ConstantValue::String(value) => JsonValue::union("as_string", text(value)),
                ConstantValue::Bool(value) => JsonValue::union("as_bool", JsonValue::Bool(*value)),
            };
            JsonValue::union(
                "constant_input",
                JsonValue::object([("name", text(name)), ("value", value)]),
            )
        }
    }
}

fn output_spec(spec: &OutputSpec) -> JsonValue {
    let with_name = |member: &str, arg: &str, field: &str, name: &str| {
        JsonValue::union(
            member,
            JsonValue::object([("arg", named(arg)), (field, JsonValue::string(name))]),
        )
    };
    match spec {
        OutputSpec::UserOutput { arg } => {
            JsonValue::union("user_output", JsonValue::object([("arg", argument(arg))]))
        }
        OutputSpec::LossOutput { arg } => {
            JsonValue::union("loss_output", JsonValue::object([("arg", named(arg))]))
        }
        OutputSpec::BufferMutation { arg, buffer_name } => {
            with_name("buffer_mutation", arg, "buffer_name", buffer_name)
        }
        OutputSpec::ParameterMutation {
            arg,
            parameter_name,
        } => with_name("parameter_mutation", arg, "parameter_name", parameter_name),
        OutputSpec::GradientToParameter {
            arg,
            parameter_name,
        } => with_name(
            "gradient_to_parameter",
            arg,
            "parameter_name",
            parameter_name,
        ),
        OutputSpec::GradientToUserInput {
            arg,
            user_input_name,
        } => with_name(
            "gradient_to_user_input",
            arg,
            "user_input_name",
            user_input_name,
        ),
        OutputSpec::UserInputMutation {
            arg,
            user_input_name,
        } => with_name(
            "user_input_mutation",
            arg,
            "user_input_name",
            user_input_name,
        ),
        OutputSpec::Token { arg } => {
            JsonValue::union("token", JsonValue::object([("arg", named(arg))]))
        }
    }
}

/// One entry of a weights or constants config.
pub fn payload_meta(payload: &PayloadMeta) -> JsonValue {
    JsonValue::object([
        ("path_name", JsonValue::string(&payload.path_name)),
        ("is_param", JsonValue::Bool(payload.is_param)),
        ("use_pickle", JsonValue::Bool(payload.use_pickle)),
        (
            "tensor_meta",
            JsonValue::optional(payload.tensor_meta.as_ref(), tensor_meta),
        ),
    ])
}
