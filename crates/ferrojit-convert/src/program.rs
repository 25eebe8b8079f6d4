//! The whole conversion of one method: inline its calls, lift the module's parameters and
//! buffers and the example inputs into placeholders, walk the graph, and assemble the
//! `ExportedProgram` with its graph signature (buffer and input mutations first, then the
//! user outputs), pytree specs and state.

use std::collections::BTreeMap;
use std::sync::Arc;

use ferrojit_export::model::{
    Argument, ConstantValue, ExportedProgram, Graph as ExportGraph, GraphModule, GraphSignature,
    InputSpec, ModuleCallEntry, ModuleCallSignature, OutputSpec, SchemaVersion,
};
use ferrojit_export::LoadedProgram;
use ferrojit_ir::binding::{bind_arguments, ArgumentSource};
use ferrojit_ir::AttributeKind;
use ferrojit_opt::inliner::{inline_calls, MethodSourceCallees};
use ferrojit_runtime::interpreter::code::default_value;
use ferrojit_runtime::module::coerce_call_arguments;
use ferrojit_runtime::{IValue, Module, Object};
use serde_json::json;

use crate::converter::{cell_key, Converter, StateKind};
use crate::dynamic::{range_constraints, symbol_table, Dim, DynamicDim};
use crate::error::{ConvertError, Result};
use crate::treespec_text::{call_spec, SpecNode};

/// The name a converted program is saved under.
pub const PROGRAM_NAME: &str = "model";

/// One lifted parameter or buffer.
struct StateEntry {
    fqn: String,
    kind: StateKind,
    placeholder: String,
    owner: Arc<Object>,
    attribute: String,
}

/// A user input tensor's placeholder, for input mutations.
struct UserTensor {
    value: IValue,
    placeholder: String,
}

fn input_error(message: impl Into<String>) -> ConvertError {
    ConvertError::Input(message.into())
}

/// Converts method `method` of `module`, called with `args` (without `self`), into an
/// Export IR program, as torch.export would have exported it.
pub fn convert_method(module: &Module, method: &str, args: Vec<IValue>) -> Result<LoadedProgram> {
    convert_method_dynamic(module, method, args, &[])
}

/// [`convert_method`] with the dimensions named by `dynamic` made symbolic: their sizes
/// become symbols `s0`, `s1`, ... with the requested ranges in `range_constraints`.
pub fn convert_method_dynamic(
    module: &Module,
    method: &str,
    args: Vec<IValue>,
    dynamic: &[DynamicDim],
) -> Result<LoadedProgram> {
    let class = module.class().clone();
    let methods = module.object().methods().clone();
    let graph = methods
        .method_graph(&class, method)
        .map_err(|e| input_error(format!("method '{method}': {e}")))?;
    let mut graph = graph.as_ref().clone();
    inline_calls(&mut graph, &MethodSourceCallees(methods.as_ref()))
        .map_err(|e| input_error(format!("inlining '{method}': {e}")))?;

    // The call's inputs: self, the arguments, then the declared defaults of the rest.
    let schema = methods.method_schema(&class, method);
    let mut inputs = Vec::with_capacity(args.len() + 1);
    inputs.push(IValue::Object(module.object().clone()));
    inputs.extend(args);
    if let Some(schema) = &schema {
        if inputs.len() < schema.arguments.len() {
            let binding = bind_arguments(schema, inputs.len(), &[], |_, _| false);
            for (argument, source) in schema.arguments.iter().zip(&binding.sources) {
                if let (ArgumentSource::Default, Some(default)) = (source, &argument.default) {
                    inputs.push(
                        default_value(default, &argument.ty)
                            .map_err(|e| input_error(e.to_string()))?,
                    );
                }
            }
        }
    }
    coerce_call_arguments(&graph, &mut inputs);
    if inputs.len() != graph.inputs().len() {
        return Err(input_error(format!(
            "'{method}' takes {} arguments but {} were given",
            graph.inputs().len().saturating_sub(1),
            inputs.len() - 1
        )));
    }
    let argument_names: Vec<String> = (1..graph.inputs().len())
        .map(|index| {
            schema
                .as_ref()
                .and_then(|s| s.arguments.get(index))
                .map(|a| a.name.clone())
                .or_else(|| graph.debug_name(graph.inputs()[index]).map(str::to_string))
                .unwrap_or_else(|| format!("arg{}", index - 1))
        })
        .collect();

    let mut converter = Converter::new(&graph);
    converter.methods = Some(methods.clone());
    let symbols = symbol_table(dynamic)?;
    for dim in dynamic {
        let (_, name, range) = symbols
            .iter()
            .find(|(user, _, _)| *user == dim.symbol)
            .ok_or_else(|| input_error(format!("--dynamic: no symbol '{}'", dim.symbol)))?;
        converter
            .dynamic_inputs
            .push((dim.input.clone(), dim.dim, name.clone(), *range));
    }
    let state = lift_state(&mut converter, module)?;
    let mut state_dict = BTreeMap::new();
    for entry in &state {
        let tensor = entry
            .owner
            .get_attr(&entry.attribute)
            .and_then(|v| v.to_tensor())
            .map_err(|e| ConvertError::Program(e.to_string()))?;
        // A copy: the walk runs in-place kernels on the module's own tensors.
        state_dict.insert(entry.fqn.clone(), tensor.clone_tensor());
    }

    let mut user_inputs = Vec::new();
    let mut user_specs = Vec::new();
    let mut user_tensors = Vec::new();
    let mut argument_specs = Vec::new();
    for (name, value) in argument_names.iter().zip(&inputs[1..]) {
        argument_specs.push(flatten_input(
            &mut converter,
            name,
            value,
            &mut user_inputs,
            &mut user_specs,
            &mut user_tensors,
        )?);
    }
    for (input, ..) in &converter.dynamic_inputs {
        if !user_tensors.iter().any(|t| t.placeholder == *input) {
            return Err(input_error(format!(
                "--dynamic: '{method}' has no tensor argument named '{input}' (its arguments: {})",
                argument_names.join(", ")
            )));
        }
    }
    for (&input, value) in graph.inputs().iter().zip(&inputs) {
        converter.values.insert(input, value.clone());
    }
    converter.run_block(graph.top_block())?;

    // Outputs: mutated buffers and inputs first, then the method's result.
    let mut outputs = Vec::new();
    let mut output_specs = Vec::new();
    for entry in &state {
        let current = entry
            .owner
            .get_attr(&entry.attribute)
            .map_err(|e| ConvertError::Program(e.to_string()))?;
        let name = converter.tensor_name(&current)?;
        if name == entry.placeholder {
            continue;
        }
        match entry.kind {
            StateKind::Buffer => {
                outputs.push(Argument::Tensor(name.clone()));
                output_specs.push(OutputSpec::BufferMutation {
                    arg: name,
                    buffer_name: entry.fqn.clone(),
                });
            }
            StateKind::Parameter => {
                return Err(ConvertError::Program(format!(
                    "the program writes into parameter '{}' (export allows writes to buffers only)",
                    entry.fqn
                )))
            }
        }
    }
    for tensor in &user_tensors {
        let name = converter.tensor_name(&tensor.value)?;
        if name != tensor.placeholder {
            outputs.push(Argument::Tensor(name.clone()));
            output_specs.push(OutputSpec::UserInputMutation {
                arg: name,
                user_input_name: tensor.placeholder.clone(),
            });
        }
    }
    let results = graph.outputs().to_vec();
    let mut result_specs = Vec::new();
    for &result in &results {
        if converter.sym_values.contains_key(&result) {
            return Err(ConvertError::Program(
                "the method returns a size of a dynamic dimension (a symbolic int output)".into(),
            ));
        }
        if let Some(dependent) = converter.data_dependent.get(&result) {
            return Err(ConvertError::Program(format!(
                "the method returns a value read from tensor data by {}",
                dependent.operator
            )));
        }
        let value = converter
            .values
            .get(&result)
            .cloned()
            .ok_or_else(|| ConvertError::Program("the method's result has no value".into()))?;
        result_specs.push(flatten_output(
            &mut converter,
            &value,
            &mut outputs,
            &mut output_specs,
        )?);
    }
    let out_spec = match result_specs.len() {
        1 => result_specs.remove(0),
        _ => SpecNode::Tuple(result_specs),
    };

    // Inputs: parameters, buffers, lifted constants, then the user's.
    let mut graph_inputs = Vec::new();
    let mut input_specs = Vec::new();
    for kind in [StateKind::Parameter, StateKind::Buffer] {
        for entry in state.iter().filter(|e| e.kind == kind) {
            graph_inputs.push(Argument::Tensor(entry.placeholder.clone()));
            input_specs.push(match kind {
                StateKind::Parameter => InputSpec::Parameter {
                    arg: entry.placeholder.clone(),
                    parameter_name: entry.fqn.clone(),
                },
                StateKind::Buffer => InputSpec::Buffer {
                    arg: entry.placeholder.clone(),
                    buffer_name: entry.fqn.clone(),
                    persistent: true,
                },
            });
        }
    }
    let mut constants = BTreeMap::new();
    for constant in &converter.constants {
        graph_inputs.push(Argument::Tensor(constant.placeholder.clone()));
        input_specs.push(InputSpec::TensorConstant {
            arg: constant.placeholder.clone(),
            tensor_constant_name: constant.target.clone(),
        });
        constants.insert(constant.target.clone(), constant.value.clone());
    }
    graph_inputs.extend(user_inputs);
    input_specs.extend(user_specs);

    let top = converter.scopes.swap_remove(0);
    let mut export_graph = ExportGraph::default();
    export_graph.inputs = graph_inputs;
    // The top graph returns a tuple of outputs, as torch.export's do.
    export_graph.is_single_tensor_return = false;
    export_graph.outputs = outputs;
    export_graph.nodes = top.nodes;
    export_graph.tensor_values = top.tensor_values;
    export_graph.sym_int_values = top.sym_int_values;

    let in_spec = call_spec(argument_specs);
    let program = ExportedProgram {
        graph_module: GraphModule {
            graph: export_graph,
            signature: GraphSignature {
                input_specs,
                output_specs,
            },
            module_call_graph: vec![ModuleCallEntry {
                fqn: String::new(),
                signature: Some(ModuleCallSignature {
                    inputs: Vec::new(),
                    outputs: Vec::new(),
                    in_spec: in_spec.to_text(),
                    out_spec: out_spec.to_text(),
                    forward_arg_names: Some(argument_names),
                }),
            }],
            metadata: BTreeMap::new(),
            treespec_namedtuple_fields: BTreeMap::new(),
        },
        opset_version: BTreeMap::from([("aten".to_string(), 10)]),
        range_constraints: range_constraints(&symbols),
        schema_version: SchemaVersion {
            major: ferrojit_export::model::SUPPORTED_SCHEMA_MAJOR,
            minor: 20,
        },
        verifiers: vec!["TRAINING".to_string()],
        torch_version: "2.15.0".to_string(),
        guards_code: Vec::new(),
    };
    Ok(LoadedProgram {
        name: PROGRAM_NAME.to_string(),
        program,
        state_dict,
        constants,
    })
}

/// Every parameter and buffer of the module tree, in module order, bound to placeholders
/// `p_<fqn>` / `b_<fqn>` (dots as underscores), as torch.export names them.
fn lift_state(converter: &mut Converter, module: &Module) -> Result<Vec<StateEntry>> {
    let mut entries = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for kind in [StateKind::Parameter, StateKind::Buffer] {
        for (prefix, submodule) in module.named_modules() {
            let attribute_kind = match kind {
                StateKind::Parameter => AttributeKind::Parameter,
                StateKind::Buffer => AttributeKind::Buffer,
            };
            for (name, value) in submodule.attributes_of_kind(attribute_kind) {
                let Some(key) = cell_key(&value) else {
                    continue;
                };
                // A tensor shared by two attributes is lifted once, under its first name.
                if !seen.insert(key) {
                    continue;
                }
                let fqn = if prefix.is_empty() {
                    name.clone()
                } else {
                    format!("{prefix}.{name}")
                };
                let prefix_letter = match kind {
                    StateKind::Parameter => "p",
                    StateKind::Buffer => "b",
                };
                let placeholder =
                    converter.fresh_name(&format!("{prefix_letter}_{}", fqn.replace('.', "_")));
                converter.bind_tensor(&value, &placeholder)?;
                entries.push(StateEntry {
                    fqn,
                    kind,
                    placeholder,
                    owner: submodule.object().clone(),
                    attribute: name,
                });
            }
        }
    }
    Ok(entries)
}

/// Flattens the items of a tuple or list input, each named `NAME_INDEX`.
fn flatten_items(
    converter: &mut Converter,
    name: &str,
    items: &[IValue],
    inputs: &mut Vec<Argument>,
    specs: &mut Vec<InputSpec>,
    tensors: &mut Vec<UserTensor>,
) -> Result<Vec<SpecNode>> {
    let mut children = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let item_name = format!("{name}_{index}");
        children.push(flatten_input(
            converter, &item_name, item, inputs, specs, tensors,
        )?);
    }
    Ok(children)
}

fn flatten_input(
    converter: &mut Converter,
    name: &str,
    value: &IValue,
    inputs: &mut Vec<Argument>,
    specs: &mut Vec<InputSpec>,
    tensors: &mut Vec<UserTensor>,
) -> Result<SpecNode> {
    let constant = |constant: ConstantValue,
                    arg: Argument,
                    inputs: &mut Vec<Argument>,
                    specs: &mut Vec<InputSpec>| {
        inputs.push(arg);
        specs.push(InputSpec::ConstantInput {
            name: name.to_string(),
            value: constant,
        });
        SpecNode::Leaf
    };
    Ok(match value {
        IValue::Tensor(_) => {
            if converter.scopes[0]
                .names
                .contains_key(&cell_key(value).unwrap_or(0))
            {
                return Err(input_error(format!(
                    "input '{name}' is a tensor passed twice (or a module's own tensor)"
                )));
            }
            let placeholder = converter.fresh_name(name);
            mark_dynamic_dims(converter, name, value)?;
            converter.bind_tensor(value, &placeholder)?;
            inputs.push(Argument::Tensor(placeholder.clone()));
            specs.push(InputSpec::UserInput {
                arg: Argument::Tensor(placeholder.clone()),
            });
            tensors.push(UserTensor {
                value: value.clone(),
                placeholder,
            });
            SpecNode::Leaf
        }
        IValue::Int(v) => constant(ConstantValue::Int(*v), Argument::Int(*v), inputs, specs),
        // The runner checks a constant input by equality, which NaN never passes.
        IValue::Double(v) if v.is_nan() => {
            return Err(input_error(format!(
                "input '{name}' is NaN, which cannot be a program's constant input"
            )))
        }
        IValue::Double(v) => constant(ConstantValue::Float(*v), Argument::Float(*v), inputs, specs),
        IValue::Bool(v) => constant(ConstantValue::Bool(*v), Argument::Bool(*v), inputs, specs),
        IValue::Str(v) => constant(
            ConstantValue::String(v.to_string()),
            Argument::String(v.to_string()),
            inputs,
            specs,
        ),
        // torch's pytree keeps None as a leaf: a constant input.
        IValue::None => constant(ConstantValue::None, Argument::None, inputs, specs),
        IValue::Tuple(tuple) => SpecNode::Tuple(flatten_items(
            converter,
            name,
            &tuple.items,
            inputs,
            specs,
            tensors,
        )?),
        IValue::List(list) => SpecNode::List(flatten_items(
            converter,
            name,
            &list.to_vec(),
            inputs,
            specs,
            tensors,
        )?),
        IValue::Dict(dict) => {
            let mut keys = Vec::new();
            let mut children = Vec::new();
            for (key, item) in dict.entries() {
                let (key_json, key_text) = match &key {
                    IValue::Str(text) => (json!(text.to_string()), text.to_string()),
                    IValue::Int(number) => (json!(number), number.to_string()),
                    other => {
                        return Err(input_error(format!(
                            "input '{name}' is a dict with {} keys",
                            other.tag_name()
                        )))
                    }
                };
                keys.push(key_json);
                children.push(flatten_input(
                    converter,
                    &format!("{name}_{key_text}"),
                    &item,
                    inputs,
                    specs,
                    tensors,
                )?);
            }
            SpecNode::Dict(keys, children)
        }
        other => {
            return Err(input_error(format!(
                "input '{name}' is a {}, which an exported program cannot take",
                other.tag_name()
            )))
        }
    })
}

/// Gives the user input tensor `name` the symbolic sizes its `--dynamic` dimensions ask for,
/// after checking the example against the ranges (an example size of 0 or 1 would be
/// specialized by torch.export, so it is refused).
fn mark_dynamic_dims(converter: &mut Converter, name: &str, value: &IValue) -> Result<()> {
    let requests: Vec<_> = converter
        .dynamic_inputs
        .iter()
        .filter(|(input, ..)| input == name)
        .cloned()
        .collect();
    if requests.is_empty() {
        return Ok(());
    }
    let tensor = value.to_tensor().map_err(|e| input_error(e.to_string()))?;
    let mut dims: Vec<Dim> = tensor
        .sizes()
        .iter()
        .map(|&s| Dim::Static(s as i64))
        .collect();
    for (_, dim, symbol, range) in requests {
        let size = *tensor.sizes().get(dim).ok_or_else(|| {
            input_error(format!(
                "--dynamic: input '{name}' has {} dimensions, so it has no dimension {dim}",
                tensor.dim()
            ))
        })? as i64;
        let out_of_range = range.min_val.is_some_and(|low| size < low)
            || range.max_val.is_some_and(|high| size > high);
        if out_of_range || size < 2 {
            return Err(input_error(format!(
                "--dynamic: dimension {dim} of input '{name}' is {size} in the example, outside \
                 the range [{}, {}] (and torch.export specializes sizes 0 and 1)",
                range.min_val.map_or("0".to_string(), |v| v.to_string()),
                range.max_val.map_or("inf".to_string(), |v| v.to_string()),
            )));
        }
        // A symbol named twice must have one example value.
        for known in converter.symbolic_sizes.values().flatten().chain(&dims) {
            if let Dim::Symbolic {
                symbol: other,
                hint,
                ..
            } = known
            {
                if *other == symbol && *hint != size {
                    return Err(input_error(format!(
                        "--dynamic: dimension {dim} of input '{name}' is {size}, but the same \
                         symbol is {hint} elsewhere in the example"
                    )));
                }
            }
        }
        dims[dim] = Dim::Symbolic {
            coefficient: 1,
            symbol,
            hint: size,
        };
    }
    if let Some(key) = cell_key(value) {
        converter.symbolic_sizes.insert(key, dims);
    }
    Ok(())
}

fn flatten_output(
    converter: &mut Converter,
    value: &IValue,
    outputs: &mut Vec<Argument>,
    specs: &mut Vec<OutputSpec>,
) -> Result<SpecNode> {
    let leaf = |arg: Argument, outputs: &mut Vec<Argument>, specs: &mut Vec<OutputSpec>| {
        outputs.push(arg.clone());
        specs.push(OutputSpec::UserOutput { arg });
        SpecNode::Leaf
    };
    Ok(match value {
        IValue::Tensor(_) => {
            let name = converter.tensor_name(value)?;
            leaf(Argument::Tensor(name), outputs, specs)
        }
        IValue::Int(v) => leaf(Argument::Int(*v), outputs, specs),
        IValue::Double(v) => leaf(Argument::Float(*v), outputs, specs),
        IValue::Bool(v) => leaf(Argument::Bool(*v), outputs, specs),
        // PyTorch's reader takes no string outputs (torch.export cannot return one).
        IValue::Str(_) => {
            return Err(ConvertError::Program(
                "the method returns a str (program outputs are tensors, numbers, bools and None)"
                    .into(),
            ))
        }
        // torch's pytree keeps None as a leaf.
        IValue::None => leaf(Argument::None, outputs, specs),
        IValue::Tuple(tuple) => {
            let mut children = Vec::new();
            for item in tuple.items.iter() {
                children.push(flatten_output(converter, item, outputs, specs)?);
            }
            SpecNode::Tuple(children)
        }
        IValue::List(list) => {
            let mut children = Vec::new();
            for item in list.to_vec().iter() {
                children.push(flatten_output(converter, item, outputs, specs)?);
            }
            SpecNode::List(children)
        }
        IValue::Dict(dict) => {
            let mut keys = Vec::new();
            let mut children = Vec::new();
            for (key, item) in dict.entries() {
                if !matches!(item, IValue::Tensor(_)) {
                    return Err(ConvertError::Program(format!(
                        "the method returns a dict holding a {} (dict outputs hold tensors)",
                        item.tag_name()
                    )));
                }
                keys.push(match &key {
                    IValue::Str(text) => json!(text.to_string()),
                    IValue::Int(number) => json!(number),
                    other => {
                        return Err(ConvertError::Program(format!(
                            "the method returns a dict with {} keys",
                            other.tag_name()
                        )))
                    }
                });
                children.push(flatten_output(converter, &item, outputs, specs)?);
            }
            SpecNode::Dict(keys, children)
        }
        other => {
            return Err(ConvertError::Program(format!(
                "the method returns a {}, which an exported program cannot return",
                other.tag_name()
            )))
        }
    })
}
