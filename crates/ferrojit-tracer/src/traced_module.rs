//! Tracing an entry function of a source file into a module, and saving it: the module's
//! `forward(self, inputs...)` is the trace graph, and `@torch.jit.script` helpers it calls
//! are saved as functions beside it, as `torch.jit.save` of a PyTorch trace saves them.

use std::path::Path;
use std::sync::Arc;

use ferrojit_ir::{Argument, FunctionSchema, Graph, Type, ValueId};
use ferrojit_runtime::interpreter::code::default_value;
use ferrojit_runtime::interpreter::execute::run_graph;
use ferrojit_runtime::IValue;
use ferrojit_serialize::export::{module_from_source, save_module_with_graph_classes_to_bytes};
use ferrojit_serialize::import::{CompiledMethods, LoadedModule};
use ferrojit_serialize::python_printer::{GraphClass, GraphMethod};

use crate::error::{Result, TraceError};
use crate::evaluator::Evaluator;
use crate::scripted_functions::scripted_functions;
use crate::tracing_state::{Traced, TracingState};

/// A finished trace.
pub struct TracedFunction {
    /// The trace: `self` first, then one input per example input.
    pub graph: Graph,
    /// The `TracerWarning` texts, in the order they were given.
    pub warnings: Vec<String>,
    /// What the function returned on the example inputs (run eagerly).
    pub example_output: IValue,
    /// `forward`'s signature: `self`, the traced inputs, the return type.
    pub schema: FunctionSchema,
    pub(crate) loaded: LoadedModule,
    pub(crate) origin: Origin,
}

/// What was traced, to trace it again (`check_trace`) or run it eagerly.
pub(crate) enum Origin {
    /// Function `entry` of a source file.
    Source {
        source: String,
        file_name: String,
        entry: String,
    },
    /// The `forward` of a loaded module (`loaded` is the module).
    Module,
    /// A Rust closure ([`crate::closure_trace`]): it was consumed by the trace, so it can be
    /// neither traced again nor run eagerly from here.
    RustClosure,
}

/// Traces function `entry` of TorchScript-subset `source` on `inputs` (positional).
pub fn trace_source(
    source: &str,
    file_name: &str,
    entry: &str,
    inputs: Vec<IValue>,
) -> Result<TracedFunction> {
    let compile_error = |message: String| TraceError::Compile {
        file: file_name.to_string(),
        message,
    };
    let functions = scripted_functions(source, file_name)?;
    if !functions.defined.iter().any(|name| name == entry) {
        return Err(TraceError::NoEntry {
            name: entry.to_string(),
            defined: functions.defined.join(", "),
        });
    }
    let scripted = functions.scripted;
    // The module `ferrojit compile` makes (a class whose forward calls the entry) gives the
    // traced module its class and compilation unit; its forward is replaced by the trace.
    let loaded = module_from_source(source, file_name, Some(entry))
        .map_err(|error| compile_error(error.to_string()))?;
    let unit = loaded.unit.clone();
    let qualified = format!("__torch__.{entry}");
    let function = unit
        .function(&qualified)
        .map_err(|error| compile_error(error.to_string()))?;
    let entry_graph = function
        .graph(&unit)
        .map_err(|error| compile_error(error.to_string()))?;
    let entry_schema = function.schema().clone();
    if inputs.len() > entry_schema.arguments.len() {
        return Err(TraceError::ArgumentCount {
            entry: entry.to_string(),
            expected: entry_schema.arguments.len(),
            given: inputs.len(),
        });
    }

    let class = loaded.module.object().class().clone();
    let mut state = TracingState::new();
    state
        .graph
        .add_input(Type::Class(class.clone()), Some("self"));
    let mut arguments = Vec::with_capacity(entry_schema.arguments.len());
    let mut schema_arguments = vec![Argument {
        name: "self".to_string(),
        ty: Type::Class(class.clone()),
        type_spelling: String::new(),
        list_length: None,
        default: None,
        kwarg_only: false,
        alias_info: None,
    }];
    for (index, (input, parameter)) in inputs.iter().zip(&entry_schema.arguments).enumerate() {
        let ty = traceable_type(input).ok_or_else(|| TraceError::UntraceableInput {
            index,
            name: parameter.name.clone(),
            type_name: input.type_of().annotation_str(),
        })?;
        let value = state.graph.add_input(ty.clone(), Some(&parameter.name));
        bind_input(&mut state, input, value);
        arguments.push(Traced::constant(input.clone()));
        let mut argument = parameter.clone();
        argument.ty = ty;
        argument.default = None;
        schema_arguments.push(argument);
    }
    let all_arguments = with_defaults(&entry_schema, entry, inputs.clone())?;
    for value in all_arguments.into_iter().skip(inputs.len()) {
        arguments.push(Traced::constant(value));
    }

    let methods = CompiledMethods::new(unit.clone());
    let mut evaluator = Evaluator::new(&unit, methods, &scripted, state);
    let outputs = evaluator.run_function(&entry_graph, arguments)?;
    let mut state = evaluator.state;
    let output = outputs
        .into_iter()
        .next()
        .ok_or_else(|| TraceError::Unsupported {
            what: format!("{entry}() returning nothing"),
            location: String::new(),
        })?;
    let output_value = output_graph_value(&mut state, &output)?;
    let return_type = state.graph.value_type(output_value).clone();
    state.graph.register_output(output_value);
    ferrojit_opt::dead_code_elimination::eliminate_dead_code_with_alias_db(&mut state.graph)
        .map_err(|error| TraceError::Unsupported {
            what: format!("the trace's dead code: {error}"),
            location: String::new(),
        })?;
    let schema = FunctionSchema {
        name: "forward".to_string(),
        overload_name: String::new(),
        arguments: schema_arguments,
        returns: vec![Argument {
            name: String::new(),
            ty: return_type,
            type_spelling: String::new(),
            list_length: None,
            default: None,
            kwarg_only: false,
            alias_info: None,
        }],
        is_vararg: false,
        is_varret: false,
    };
    Ok(TracedFunction {
        graph: state.graph,
        warnings: state.warnings,
        example_output: output.value,
        schema,
        loaded,
        origin: Origin::Source {
            source: source.to_string(),
            file_name: file_name.to_string(),
            entry: entry.to_string(),
        },
    })
}

/// The entry's arguments: `inputs`, then the defaults of the parameters they leave out.
fn with_defaults(schema: &FunctionSchema, entry: &str, inputs: Vec<IValue>) -> Result<Vec<IValue>> {
    let given = inputs.len();
    let mut arguments = inputs;
    for parameter in schema.arguments.iter().skip(given) {
        let default = parameter
            .default
            .as_ref()
            .ok_or_else(|| TraceError::ArgumentCount {
                entry: entry.to_string(),
                expected: schema.arguments.len(),
                given,
            })?;
        let value = default_value(default, &parameter.ty).map_err(|error| TraceError::Runtime {
            node: format!("the default of '{}'", parameter.name),
            location: String::new(),
            message: error.to_string(),
        })?;
        arguments.push(value);
    }
    Ok(arguments)
}

/// The graph type of a traceable input: a tensor, or tuples and lists of them (PyTorch
/// refuses numbers and strings as trace inputs).
pub(crate) fn traceable_type(value: &IValue) -> Option<Type> {
    match value {
        IValue::Tensor(_) => Some(Type::Tensor),
        IValue::Tuple(tuple) => Some(Type::Tuple(
            tuple
                .items
                .iter()
                .map(traceable_type)
                .collect::<Option<_>>()?,
        )),
        IValue::List(list) => {
            for item in list.to_vec() {
                traceable_type(&item)?;
            }
            matches!(list.element_type(), Type::Tensor).then(|| Type::list(Type::Tensor))
        }
        _ => None,
    }
}

/// Makes the tensors of an input the graph input's values (members of a tuple or list
/// input through `prim::TupleUnpack` / `prim::ListUnpack`).
pub(crate) fn bind_input(state: &mut TracingState, input: &IValue, value: ValueId) {
    match input {
        IValue::Tensor(cell) => state.set_tensor(cell, value),
        IValue::Tuple(tuple) => {
            let types: Vec<Type> = tuple
                .items
                .iter()
                .map(|item| traceable_type(item).unwrap_or(Type::Any))
                .collect();
            let unpack = state.graph.insert("prim::TupleUnpack", &[value], &types);
            for (index, item) in tuple.items.iter().enumerate() {
                let member = state.graph.node_output(unpack, index);
                bind_input(state, item, member);
            }
        }
        IValue::List(list) => {
            let items = list.to_vec();
            let types = vec![Type::Tensor; items.len()];
            let unpack = state.graph.insert("prim::ListUnpack", &[value], &types);
            for (index, item) in items.iter().enumerate() {
                let member = state.graph.node_output(unpack, index);
                bind_input(state, item, member);
            }
        }
        _ => {}
    }
}

/// The graph value of the function's result: tensors, and tuples, lists and dicts of them
/// (as `torch.jit.trace(..., strict=False)` records them).
pub(crate) fn output_graph_value(state: &mut TracingState, output: &Traced) -> Result<ValueId> {
    match &output.value {
        IValue::Tensor(cell) => Ok(state.tensor_value(cell)),
        IValue::Tuple(tuple) => {
            let mut values = Vec::new();
            let mut types = Vec::new();
            for (index, item) in tuple.items.iter().enumerate() {
                let value = output_graph_value(state, &output.member(index, item.clone()))?;
                types.push(state.graph.value_type(value).clone());
                values.push(value);
            }
            let node = state
                .graph
                .insert("prim::TupleConstruct", &values, &[Type::Tuple(types)]);
            Ok(state.graph.node_output(node, 0))
        }
        IValue::List(list) => {
            let items = list.to_vec();
            let mut values = Vec::new();
            let mut element = Type::Tensor;
            for (index, item) in items.iter().enumerate() {
                let value = output_graph_value(state, &output.member(index, item.clone()))?;
                element = state.graph.value_type(value).clone();
                values.push(value);
            }
            let node = state
                .graph
                .insert("prim::ListConstruct", &values, &[Type::list(element)]);
            Ok(state.graph.node_output(node, 0))
        }
        IValue::Dict(dict) => {
            let mut values = Vec::new();
            for (key, value) in dict.entries() {
                values.push(state.constant(&key, dict.key_type())?);
                values.push(output_graph_value(state, &Traced::constant(value))?);
            }
            let ty = Type::dict(dict.key_type().clone(), Type::Tensor);
            let node = state.graph.insert("prim::DictConstruct", &values, &[ty]);
            Ok(state.graph.node_output(node, 0))
        }
        other => Err(TraceError::Unsupported {
            what: format!(
                "an output of type {}: only tensors, and lists, tuples and dicts of tensors, \
                 can be output from traced functions",
                other.type_of().annotation_str()
            ),
            location: String::new(),
        }),
    }
}

impl TracedFunction {
    /// The module archive (`torch.jit.save` format) whose `forward` is the trace.
    pub fn save_to_bytes(&self, root_name: &str) -> Result<Vec<u8>> {
        let class = self.loaded.module.object().class().clone();
        let graph_class = GraphClass {
            class,
            methods: vec![GraphMethod {
                name: "forward".to_string(),
                schema: self.schema.clone(),
                graph: Arc::new(self.graph.clone()),
            }],
        };
        save_module_with_graph_classes_to_bytes(
            &self.loaded.module,
            &self.loaded.unit,
            &[graph_class],
            root_name,
        )
        .map_err(|error| TraceError::Save(error.to_string()))
    }

    /// Saves the module archive to `path` (its root folder is the file's stem, as PyTorch).
    pub fn save(&self, path: &Path) -> Result<()> {
        let root_name = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .filter(|stem| !stem.is_empty())
            .unwrap_or("archive");
        let bytes = self.save_to_bytes(root_name)?;
        std::fs::write(path, bytes)
            .map_err(|error| TraceError::Save(format!("{}: {error}", path.display())))
    }

    /// Traces the same function or module again on other inputs.
    pub fn retrace(&self, inputs: Vec<IValue>) -> Result<TracedFunction> {
        match &self.origin {
            Origin::Source {
                source,
                file_name,
                entry,
            } => trace_source(source, file_name, entry, inputs),
            Origin::Module => crate::module_trace::trace_module(
                LoadedModule {
                    module: ferrojit_runtime::Module::new(self.loaded.module.object().clone()),
                    unit: self.loaded.unit.clone(),
                },
                inputs,
            ),
            Origin::RustClosure => Err(TraceError::Unsupported {
                what: "a Rust closure again from its trace (call ferrojit::trace again)"
                    .to_string(),
                location: String::new(),
            }),
        }
    }

    /// Runs the trace on `inputs` (positional, without `self`); the error is its message.
    pub fn run(&self, inputs: Vec<IValue>) -> std::result::Result<IValue, String> {
        let mut arguments = vec![IValue::Object(self.loaded.module.object().clone())];
        arguments.extend(inputs);
        let methods = CompiledMethods::new(self.loaded.unit.clone());
        let mut outputs = run_graph(&self.graph, arguments, methods.as_ref())
            .map_err(|error| error.to_string())?;
        outputs
            .pop()
            .ok_or_else(|| "the trace returned nothing".to_string())
    }

    /// Runs the traced function itself (not the trace) on `inputs`: what Python's eager
    /// call is to PyTorch's trace check.
    pub fn run_eagerly(&self, inputs: Vec<IValue>) -> std::result::Result<IValue, String> {
        if matches!(self.origin, Origin::RustClosure) {
            return Err("a traced Rust closure cannot be run eagerly from its trace".to_string());
        }
        let Origin::Source { entry, .. } = &self.origin else {
            return self
                .loaded
                .module
                .run_method("forward", inputs)
                .map_err(|error| error.to_string());
        };
        let unit = &self.loaded.unit;
        let function = unit
            .function(&format!("__torch__.{entry}"))
            .map_err(|error| error.to_string())?;
        let graph = function.graph(unit).map_err(|error| error.to_string())?;
        let arguments =
            with_defaults(function.schema(), entry, inputs).map_err(|error| error.to_string())?;
        let methods = CompiledMethods::new(unit.clone());
        let mut outputs =
            run_graph(&graph, arguments, methods.as_ref()).map_err(|error| error.to_string())?;
        outputs
            .pop()
            .ok_or_else(|| "the function returned nothing".to_string())
    }

    /// The trace as PyTorch prints a graph.
    pub fn graph_text(&self) -> String {
        self.graph.to_string()
    }
}
