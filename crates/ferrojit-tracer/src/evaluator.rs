//! The tracing evaluator: runs a compiled TorchScript graph eagerly, node by node, on
//! the example inputs, calling the registry's kernels, and records what a Python run of
//! the same function under `torch.jit.trace` records. `prim::If` takes the branch the
//! runtime value picks and `prim::Loop` unrolls, as Python control flow would; calls of
//! plain functions are inlined; calls of `@torch.jit.script` functions are kept as calls.
//!
//! Why a separate evaluator rather than an `OperatorObserver` on the interpreter: the
//! observer sees neither primitives (list and tuple construction, calls of script
//! functions) nor where a number came from, and the tracer must tell a size-derived int
//! (recorded) from a constant one (baked in), and stop at scripted calls.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ferrojit_frontend::CompilationUnit;
use ferrojit_ir::{AttributeValue, BlockId, Graph, NodeId, Type, ValueId};
use ferrojit_runtime::interpreter::code::{decode_constant, default_value};
use ferrojit_runtime::interpreter::execute::run_graph;
use ferrojit_runtime::{IValue, MethodSource, Operator, RuntimeError};

use crate::error::{Result, TraceError};
use crate::number_arithmetic::{has_traced_number, record_number_operator};
use crate::tracing_state::{Trace, Traced, TracingState};
use crate::warnings::{len_of_tensor, python_dataflow, tensor_constant, Conversion};

/// Operators whose Python bindings accept a number for a tensor argument (wrapping it),
/// from PyTorch's `should_allow_numbers_as_tensors`: `x + 1` records `aten::add.Tensor`.
const NUMBERS_AS_TENSORS: &[&str] = &[
    "aten::add",
    "aten::add_",
    "aten::sub",
    "aten::sub_",
    "aten::mul",
    "aten::mul_",
    "aten::div",
    "aten::div_",
    "aten::true_divide",
    "aten::true_divide_",
    "aten::floor_divide",
    "aten::floor_divide_",
];

/// A loop unrolled into more iterations than this is refused: the trace would be huge, and
/// a `while True` whose exit depends on nothing traced would never end.
const MAX_UNROLLED_ITERATIONS: i64 = 100_000;

/// Calls nested deeper than this are refused (a recursive source would never end).
const MAX_CALL_DEPTH: usize = 64;

type Environment = HashMap<ValueId, Traced>;

pub struct Evaluator<'a> {
    pub unit: &'a Arc<CompilationUnit>,
    pub methods: Arc<dyn MethodSource>,
    /// Qualified names of the functions decorated `@torch.jit.script` in the source.
    pub scripted: &'a HashSet<String>,
    pub state: TracingState,
    depth: usize,
}

/// Whether values of `ty` hold tensors.
pub fn holds_tensor(ty: &Type) -> bool {
    match ty {
        Type::Tensor | Type::RefinedTensor(_) => true,
        Type::Optional(inner) | Type::List(inner) => holds_tensor(inner),
        Type::Tuple(members) => members.iter().any(holds_tensor),
        Type::Dict(_, value) => holds_tensor(value),
        _ => false,
    }
}

fn location_of(graph: &Graph, node: NodeId) -> String {
    match &graph.node(node).source_location {
        Some(location) => format!(
            " at {}:{}:{}",
            location.file, location.line, location.column
        ),
        None => String::new(),
    }
}

impl<'a> Evaluator<'a> {
    pub fn new(
        unit: &'a Arc<CompilationUnit>,
        methods: Arc<dyn MethodSource>,
        scripted: &'a HashSet<String>,
        state: TracingState,
    ) -> Evaluator<'a> {
        Evaluator {
            unit,
            methods,
            scripted,
            state,
            depth: 0,
        }
    }

    /// Runs `graph` on `arguments` (one per graph input) and returns its outputs.
    pub fn run_function(&mut self, graph: &Graph, arguments: Vec<Traced>) -> Result<Vec<Traced>> {
        let mut environment = Environment::new();
        for (input, argument) in graph.inputs().iter().zip(arguments) {
            environment.insert(*input, argument);
        }
        self.run_block(graph, graph.top_block(), &mut environment)
    }

    fn run_block(
        &mut self,
        graph: &Graph,
        block: BlockId,
        environment: &mut Environment,
    ) -> Result<Vec<Traced>> {
        for node in graph.block_nodes(block) {
            self.run_node(graph, node, environment)?;
        }
        graph
            .block_outputs(block)
            .iter()
            .map(|value| lookup(graph, environment, *value))
            .collect()
    }

    fn run_node(
        &mut self,
        graph: &Graph,
        node: NodeId,
        environment: &mut Environment,
    ) -> Result<()> {
        let data = graph.node(node);
        let failed = |message: String| TraceError::Runtime {
            node: data.kind.to_string(),
            location: location_of(graph, node),
            message,
        };
        let runtime = |error: RuntimeError| failed(error.to_string());
        let inputs: Vec<Traced> = data
            .inputs
            .iter()
            .map(|value| lookup(graph, environment, *value))
            .collect::<Result<_>>()?;
        check_node_shape(graph, node)?;
        let outputs: Vec<Traced> = match data.kind.as_str() {
            "prim::Constant" => {
                let ty = graph.value_type(data.outputs[0]);
                let value = decode_constant(ty, graph.attribute(node, "value")).map_err(runtime)?;
                vec![Traced::constant(value)]
            }
            "prim::ListConstruct" => {
                let element = match graph.value_type(data.outputs[0]) {
                    Type::List(element) => element.as_ref().clone(),
                    _ => Type::Any,
                };
                let items = inputs.iter().map(|input| input.value.clone()).collect();
                vec![Traced {
                    value: IValue::list(element, items),
                    trace: Trace::Elements(inputs.iter().map(|i| i.trace.clone()).collect()),
                }]
            }
            "prim::TupleConstruct" => {
                let items = inputs.iter().map(|input| input.value.clone()).collect();
                vec![Traced {
                    value: IValue::tuple(items),
                    trace: Trace::Elements(inputs.iter().map(|i| i.trace.clone()).collect()),
                }]
            }
            "prim::ListUnpack" | "prim::TupleUnpack" => {
                let container = &inputs[0];
                let items: Vec<IValue> = match &container.value {
                    IValue::List(list) => list.to_vec(),
                    IValue::Tuple(tuple) => tuple.items.to_vec(),
                    other => return Err(failed(format!("cannot unpack a {}", other.tag_name()))),
                };
                if items.len() != data.outputs.len() {
                    return Err(failed(format!(
                        "expected {} values to unpack, found {}",
                        data.outputs.len(),
                        items.len()
                    )));
                }
                items
                    .into_iter()
                    .enumerate()
                    .map(|(index, item)| container.member(index, item))
                    .collect()
            }
            "prim::TupleIndex" => {
                let index = inputs[1].value.to_int().map_err(runtime)?;
                let IValue::Tuple(tuple) = &inputs[0].value else {
                    return Err(failed("prim::TupleIndex of a non-tuple".to_string()));
                };
                let position = usize::try_from(if index < 0 {
                    index + tuple.items.len() as i64
                } else {
                    index
                })
                .ok()
                .filter(|&p| p < tuple.items.len())
                .ok_or_else(|| failed(format!("tuple index {index} out of range")))?;
                vec![inputs[0].member(position, tuple.items[position].clone())]
            }
            "prim::DictConstruct" => {
                let (key, value) = match graph.value_type(data.outputs[0]) {
                    Type::Dict(key, value) => (key.as_ref().clone(), value.as_ref().clone()),
                    _ => (Type::Str, Type::Any),
                };
                let dict = ferrojit_runtime::DictValue::new(key, value);
                for pair in inputs.chunks(2) {
                    if let [key, value] = pair {
                        dict.insert(key.value.clone(), value.value.clone());
                    }
                }
                vec![Traced {
                    value: IValue::Dict(dict),
                    trace: Trace::Elements(inputs.iter().map(|i| i.trace.clone()).collect()),
                }]
            }
            "prim::unchecked_cast" => vec![inputs[0].clone()],
            "prim::Uninitialized" => vec![Traced::constant(IValue::Uninitialized)],
            "prim::RaiseException" => {
                let message = inputs
                    .first()
                    .and_then(|input| input.value.to_str().ok().map(|s| s.to_string()))
                    .unwrap_or_else(|| "Exception".to_string());
                return Err(failed(format!("the function raised: {message}")));
            }
            "prim::If" => {
                let condition = inputs[0].value.to_bool().map_err(runtime)?;
                let blocks = graph.node_blocks(node);
                let block = if condition { blocks[0] } else { blocks[1] };
                self.run_block(graph, block, environment)?
            }
            "prim::Loop" => self.run_loop(graph, node, &inputs, environment)?,
            "prim::CallFunction" => self.run_call(graph, node, inputs)?,
            "prim::GetAttr" => vec![self.read_attribute(graph, node, &inputs[0])?],
            "prim::CallMethod" => self.run_method(graph, node, inputs)?,
            "prim::SetAttr" => {
                return Err(TraceError::Unsupported {
                    what: "prim::SetAttr (a module writing its attributes)".to_string(),
                    location: location_of(graph, node),
                })
            }
            _ => self.run_operator(graph, node, inputs, environment)?,
        };
        if outputs.len() != data.outputs.len() {
            return Err(failed(format!(
                "produced {} values for {} outputs",
                outputs.len(),
                data.outputs.len()
            )));
        }
        for (value, output) in data.outputs.iter().zip(outputs) {
            environment.insert(*value, output);
        }
        Ok(())
    }

    /// Unrolls a `prim::Loop`: Python runs the loop, and the trace sees each iteration's
    /// operators (the trip count is read as a Python int, silently).
    fn run_loop(
        &mut self,
        graph: &Graph,
        node: NodeId,
        inputs: &[Traced],
        environment: &mut Environment,
    ) -> Result<Vec<Traced>> {
        let runtime = |error: RuntimeError| TraceError::Runtime {
            node: "prim::Loop".to_string(),
            location: location_of(graph, node),
            message: error.to_string(),
        };
        let max_trip_count = inputs[0].value.to_int().map_err(runtime)?;
        let mut condition = inputs[1].value.to_bool().map_err(runtime)?;
        let mut carried: Vec<Traced> = inputs[2..].to_vec();
        let body = graph.node_blocks(node)[0];
        let parameters = graph.block_parameters(body).to_vec();
        let mut iteration = 0i64;
        while iteration < max_trip_count && condition {
            if iteration >= MAX_UNROLLED_ITERATIONS {
                return Err(TraceError::Unsupported {
                    what: format!(
                        "a loop running more than {MAX_UNROLLED_ITERATIONS} iterations (each \
                         would be unrolled into the trace)"
                    ),
                    location: location_of(graph, node),
                });
            }
            environment.insert(parameters[0], Traced::constant(IValue::Int(iteration)));
            for (parameter, value) in parameters[1..].iter().zip(carried.iter()) {
                environment.insert(*parameter, value.clone());
            }
            let mut outputs = self.run_block(graph, body, environment)?;
            condition = outputs[0].value.to_bool().map_err(runtime)?;
            carried = outputs.split_off(1);
            iteration += 1;
        }
        Ok(carried)
    }

    /// A call of a function of the source: inlined (Python runs its body under the trace),
    /// or, for a `@torch.jit.script` function, run eagerly and recorded as one
    /// `prim::CallFunction`, which keeps its control flow.
    fn run_call(
        &mut self,
        graph: &Graph,
        node: NodeId,
        inputs: Vec<Traced>,
    ) -> Result<Vec<Traced>> {
        let location = location_of(graph, node);
        let Some(AttributeValue::Str(name)) = graph.attribute(node, "name") else {
            return Err(TraceError::Unsupported {
                what: "a prim::CallFunction without a function name".to_string(),
                location,
            });
        };
        let compile_error = |error: ferrojit_frontend::FrontendError| TraceError::Compile {
            file: name.clone(),
            message: error.to_string(),
        };
        let function = self.unit.function(name).map_err(compile_error)?;
        let callee = function.graph(self.unit).map_err(compile_error)?;
        if self.depth >= MAX_CALL_DEPTH {
            return Err(TraceError::Unsupported {
                what: format!("calls nested deeper than {MAX_CALL_DEPTH} (in {name})"),
                location,
            });
        }
        if !self.scripted.contains(name) {
            self.depth += 1;
            let outputs = self.run_function(&callee, inputs);
            self.depth -= 1;
            return outputs;
        }
        let values: Vec<IValue> = inputs.iter().map(|input| input.value.clone()).collect();
        let outputs = run_graph(&callee, values, self.methods.as_ref()).map_err(|error| {
            TraceError::Runtime {
                node: format!("the call of {name}"),
                location: location.clone(),
                message: error.to_string(),
            }
        })?;
        let schema = function.schema().clone();
        let mut arguments = Vec::with_capacity(inputs.len());
        for (index, input) in inputs.iter().enumerate() {
            let declared = schema
                .arguments
                .get(index)
                .map(|argument| argument.ty.clone())
                .unwrap_or(Type::Any);
            arguments.push(self.state.argument_value(input, &declared)?);
        }
        let output_types: Vec<Type> = schema.returns.iter().map(|r| r.ty.clone()).collect();
        let call = self
            .state
            .graph
            .insert("prim::CallFunction", &arguments, &output_types);
        self.state
            .graph
            .set_attribute(call, "name", AttributeValue::Str(name.clone()));
        let mut results = Vec::with_capacity(outputs.len());
        for (index, value) in outputs.into_iter().enumerate() {
            let output = self.state.graph.node_output(call, index);
            results.push(self.bind_output(value, output));
        }
        Ok(results)
    }

    /// `self.name`: a tensor or submodule attribute of a traced module is read in the trace
    /// (`prim::GetAttr`, as PyTorch's trace of an `nn.Module` reads parameters); other
    /// attributes (`training`, numbers) are constants.
    fn read_attribute(&mut self, graph: &Graph, node: NodeId, object: &Traced) -> Result<Traced> {
        let location = location_of(graph, node);
        let Some(AttributeValue::Str(name)) = graph.attribute(node, "name") else {
            return Err(TraceError::Unsupported {
                what: "a prim::GetAttr without a name".to_string(),
                location,
            });
        };
        let IValue::Object(instance) = &object.value else {
            return Err(TraceError::Unsupported {
                what: format!(
                    "reading attribute '{name}' of a {}",
                    object.value.tag_name()
                ),
                location,
            });
        };
        let value = instance
            .get_attr(name)
            .map_err(|error| TraceError::Runtime {
                node: "prim::GetAttr".to_string(),
                location: location.clone(),
                message: error.to_string(),
            })?;
        let Trace::Object(owner) = object.trace else {
            return Ok(Traced::constant(value));
        };
        let ty = match &value {
            IValue::Tensor(_) => Type::Tensor,
            IValue::Object(attribute) => Type::Class(attribute.class().clone()),
            // A list of parameters (an LSTM's `_flat_weights`): read, then unpacked.
            IValue::List(list) if matches!(list.element_type(), Type::Tensor) => {
                Type::list(Type::Tensor)
            }
            _ => return Ok(Traced::constant(value)),
        };
        let read = self.state.graph.insert("prim::GetAttr", &[owner], &[ty]);
        self.state
            .graph
            .set_attribute(read, "name", AttributeValue::Str(name.clone()));
        let output = self.state.graph.node_output(read, 0);
        Ok(match &value {
            IValue::Tensor(_) | IValue::List(_) => self.bind_output(value, output),
            _ => Traced {
                value,
                trace: Trace::Object(output),
            },
        })
    }

    /// A method call on a module (a submodule's `forward`): inlined, as Python runs it.
    fn run_method(
        &mut self,
        graph: &Graph,
        node: NodeId,
        inputs: Vec<Traced>,
    ) -> Result<Vec<Traced>> {
        let location = location_of(graph, node);
        let Some(AttributeValue::Str(name)) = graph.attribute(node, "name") else {
            return Err(TraceError::Unsupported {
                what: "a prim::CallMethod without a method name".to_string(),
                location,
            });
        };
        let Some(IValue::Object(instance)) = inputs.first().map(|input| &input.value) else {
            return Err(TraceError::Unsupported {
                what: format!("calling method '{name}' of a non-object"),
                location,
            });
        };
        let class = instance.class().clone();
        let compile_error = |error: ferrojit_frontend::FrontendError| TraceError::Compile {
            file: format!("{}.{name}", class.qualified_name()),
            message: error.to_string(),
        };
        let method = self.unit.method(&class, name).map_err(compile_error)?;
        let callee = method.graph(self.unit).map_err(compile_error)?;
        if self.depth >= MAX_CALL_DEPTH {
            return Err(TraceError::Unsupported {
                what: format!("calls nested deeper than {MAX_CALL_DEPTH} (in {name})"),
                location,
            });
        }
        self.depth += 1;
        let outputs = self.run_function(&callee, inputs);
        self.depth -= 1;
        outputs
    }

    /// Records that graph value `output` holds `value`: a tensor becomes that value in the
    /// trace; a list or tuple of tensors is unpacked (`prim::ListUnpack`, as PyTorch
    /// records `chunk` or `split`) and each tensor becomes its member.
    fn bind_output(&mut self, value: IValue, output: ValueId) -> Traced {
        match &value {
            IValue::Tensor(cell) => self.state.set_tensor(cell, output),
            IValue::List(list) if matches!(list.element_type(), Type::Tensor) => {
                let items = list.to_vec();
                let types = vec![Type::Tensor; items.len()];
                let unpack = self
                    .state
                    .graph
                    .insert("prim::ListUnpack", &[output], &types);
                for (index, item) in items.iter().enumerate() {
                    if let IValue::Tensor(cell) = item {
                        let member = self.state.graph.node_output(unpack, index);
                        self.state.set_tensor(cell, member);
                    }
                }
            }
            IValue::Tuple(tuple) if tuple.items.iter().all(|i| matches!(i, IValue::Tensor(_))) => {
                let types = vec![Type::Tensor; tuple.items.len()];
                let unpack = self
                    .state
                    .graph
                    .insert("prim::TupleUnpack", &[output], &types);
                for (index, item) in tuple.items.iter().enumerate() {
                    if let IValue::Tensor(cell) = item {
                        let member = self.state.graph.node_output(unpack, index);
                        self.state.set_tensor(cell, member);
                    }
                }
            }
            _ => {}
        }
        Traced::constant(value)
    }

    /// An operator call: run its kernel, then record it as PyTorch's tracer would.
    fn run_operator(
        &mut self,
        graph: &Graph,
        node: NodeId,
        mut inputs: Vec<Traced>,
        environment: &mut Environment,
    ) -> Result<Vec<Traced>> {
        let data = graph.node(node);
        let location = location_of(graph, node);
        let registry = self.state.registry;
        let operator: Option<&Operator> = match &data.schema {
            Some(schema) => registry.lookup(&schema.full_name()),
            None => {
                let types: Vec<Type> = data
                    .inputs
                    .iter()
                    .map(|value| graph.value_type(*value).clone())
                    .collect();
                registry.find_by_types(data.kind.as_str(), &types)
            }
        };
        let Some(operator) = operator else {
            return self.run_primitive(graph, node, &inputs);
        };
        let schema = operator.schema.clone();
        let failed = |message: String| TraceError::Runtime {
            node: schema.full_name(),
            location: location.clone(),
            message,
        };
        if !schema.is_vararg {
            for argument in schema.arguments.iter().skip(inputs.len()) {
                let default = argument
                    .default
                    .as_ref()
                    .ok_or_else(|| failed(format!("argument '{}' was not given", argument.name)))?;
                let value =
                    default_value(default, &argument.ty).map_err(|e| failed(e.to_string()))?;
                inputs.push(Traced::constant(value));
            }
        }
        let full_name = schema.full_name();
        let mut stack: Vec<IValue> = inputs.iter().map(|input| input.value.clone()).collect();
        (operator.kernel)(&mut stack).map_err(|error| failed(error.to_string()))?;
        let outputs = stack;

        let takes_tensor = schema.arguments.iter().any(|a| holds_tensor(&a.ty))
            || inputs.iter().any(|i| matches!(i.value, IValue::Tensor(_)));
        let returns_tensor = schema.returns.iter().any(|r| holds_tensor(&r.ty));

        // Lists whose members are traced sizes.
        match full_name.as_str() {
            "aten::__getitem__.t" => {
                let index = inputs[1]
                    .value
                    .to_int()
                    .map_err(|e| failed(e.to_string()))?;
                let length = inputs[0].value.to_list().map(|l| l.len()).unwrap_or(0) as i64;
                let position = if index < 0 { index + length } else { index };
                let mut output = Traced::constant(outputs[0].clone());
                if let Trace::Elements(elements) = &inputs[0].trace {
                    if let Some(trace) =
                        usize::try_from(position).ok().and_then(|p| elements.get(p))
                    {
                        output.trace = trace.clone();
                    }
                }
                return Ok(vec![output]);
            }
            "aten::append.t" => {
                // The list is changed in place: its trace grows with it.
                let mut elements = match &inputs[0].trace {
                    Trace::Elements(elements) => elements.clone(),
                    _ => vec![
                        Trace::Constant;
                        inputs[0]
                            .value
                            .to_list()
                            .map(|l| l.len())
                            .unwrap_or(1)
                            .saturating_sub(1)
                    ],
                };
                elements.push(inputs[1].trace.clone());
                if let Some(list) = data.inputs.first() {
                    if let Some(entry) = environment.get_mut(list) {
                        entry.trace = Trace::Elements(elements);
                    }
                }
                return Ok(outputs.into_iter().map(Traced::constant).collect());
            }
            _ => {}
        }

        if !takes_tensor && !returns_tensor {
            if has_traced_number(&inputs) && outputs.len() == 1 {
                let output = outputs.into_iter().next().unwrap_or_default();
                return Ok(vec![record_number_operator(
                    &mut self.state,
                    &schema.name,
                    &inputs,
                    output,
                )?]);
            }
            return Ok(outputs.into_iter().map(Traced::constant).collect());
        }

        match full_name.as_str() {
            "aten::size.int" => return self.record_size(&inputs, outputs),
            "aten::size" => {
                let IValue::Tensor(cell) = &inputs[0].value else {
                    return Ok(outputs.into_iter().map(Traced::constant).collect());
                };
                let sizes = outputs[0].to_list().map(|l| l.to_vec()).unwrap_or_default();
                let mut elements = Vec::with_capacity(sizes.len());
                for (dim, size) in sizes.into_iter().enumerate() {
                    let dim = Traced::constant(IValue::Int(dim as i64));
                    let tensor = Traced::constant(IValue::Tensor(cell.clone()));
                    let traced = self.record_size(&[tensor, dim], vec![size])?;
                    elements.push(traced[0].trace.clone());
                }
                return Ok(vec![Traced {
                    value: outputs[0].clone(),
                    trace: Trace::Elements(elements),
                }]);
            }
            "aten::numel" => {
                let tensor = self.state.argument_value(&inputs[0], &Type::Tensor)?;
                let numel = self.state.record("aten::numel", &[tensor])?;
                let numel = self.state.graph.node_output(numel, 0);
                return Ok(vec![self.number_to_tensor(numel, outputs[0].clone())?]);
            }
            "aten::len.Tensor" => {
                self.state.warn(len_of_tensor());
                return Ok(outputs.into_iter().map(Traced::constant).collect());
            }
            "aten::Bool.Tensor" | "aten::is_nonzero" => {
                return Ok(self.data_dependent(Conversion::Boolean, outputs));
            }
            "aten::Int.Tensor" => return Ok(self.data_dependent(Conversion::Integer, outputs)),
            "aten::Float.Tensor" => return Ok(self.data_dependent(Conversion::Float, outputs)),
            "aten::item" => return Ok(self.data_dependent(Conversion::Number, outputs)),
            _ => {}
        }
        if schema.name == "aten::tensor" || schema.name == "aten::as_tensor" {
            return self.record_tensor_literal(outputs);
        }
        if !returns_tensor {
            // Tensor facts read as Python values (`dim()`, `is_floating_point()`): constants.
            return Ok(outputs.into_iter().map(Traced::constant).collect());
        }

        // A traced size passed where the schema takes a Scalar: Python passes the size's
        // tensor, so the call resolves to the `Tensor` overload (`aten::add.Tensor`). And
        // Python's arithmetic operators pass a number as a wrapped-number tensor
        // (`x * 2.0` records `aten::mul(%x, {2.})`), for the operators PyTorch's argument
        // parser lets take numbers as tensors.
        let mut recorded = schema.clone();
        let number_as_tensor =
            schema.overload_name == "Scalar" && NUMBERS_AS_TENSORS.contains(&schema.name.as_str());
        let scalar_from_size = schema
            .arguments
            .iter()
            .zip(&inputs)
            .any(|(argument, input)| {
                matches!(argument.ty, Type::Number) && matches!(input.trace, Trace::Number(_))
            });
        if scalar_from_size || number_as_tensor {
            if let Some(tensor_overload) = registry.lookup(&format!("{}.Tensor", schema.name)) {
                if tensor_overload.schema.arguments.len() == schema.arguments.len() {
                    recorded = tensor_overload.schema.clone();
                }
            }
        }
        let decomposed = crate::decompositions::recorded_as(registry, &schema, &inputs);
        let recorded_inputs = match decomposed {
            Some((decomposition, arguments)) => {
                recorded = decomposition;
                arguments
            }
            None => inputs,
        };
        let inputs = recorded_inputs;
        let mut values = Vec::with_capacity(inputs.len());
        for (index, input) in inputs.iter().enumerate() {
            let declared = match recorded.arguments.get(index) {
                Some(argument) => argument.ty.clone(),
                None => graph.value_type(data.inputs[index]).clone(),
            };
            values.push(self.state.argument_value(input, &declared)?);
        }
        let recorded_node = self.state.graph.insert_with_schema(recorded, &values);
        let mut results = Vec::with_capacity(outputs.len());
        for (index, value) in outputs.into_iter().enumerate() {
            let output = self.state.graph.node_output(recorded_node, index);
            results.push(self.bind_output(value, output));
        }
        Ok(results)
    }

    /// `aten::size(%t, dim)` then `prim::NumToTensor`: the size as PyTorch's tracer keeps it.
    fn record_size(&mut self, inputs: &[Traced], outputs: Vec<IValue>) -> Result<Vec<Traced>> {
        let size = outputs.into_iter().next().unwrap_or_default();
        let IValue::Tensor(cell) = &inputs[0].value else {
            return Ok(vec![Traced::constant(size)]);
        };
        if self.state.traced_tensor(cell).is_none() {
            return Ok(vec![Traced::constant(size)]);
        }
        let tensor = self.state.tensor_value(cell);
        let dim = self.state.constant(&inputs[1].value, &Type::Int)?;
        let node = self.state.record("aten::size.int", &[tensor, dim])?;
        let value = self.state.graph.node_output(node, 0);
        Ok(vec![self.number_to_tensor(value, size)?])
    }

    fn number_to_tensor(&mut self, number: ValueId, value: IValue) -> Result<Traced> {
        let node = self.state.record("prim::NumToTensor.Scalar", &[number])?;
        Ok(Traced {
            value,
            trace: Trace::Number(self.state.graph.node_output(node, 0)),
        })
    }

    /// A tensor read as a Python value: a warning, and the value becomes a constant.
    fn data_dependent(&mut self, conversion: Conversion, outputs: Vec<IValue>) -> Vec<Traced> {
        self.state.warn(python_dataflow(conversion));
        outputs.into_iter().map(Traced::constant).collect()
    }

    /// `torch.tensor(...)`: PyTorch records the value as a constant, moved with
    /// `aten::to` and cut from autograd with `aten::detach`, and warns.
    fn record_tensor_literal(&mut self, outputs: Vec<IValue>) -> Result<Vec<Traced>> {
        self.state.warn(tensor_constant());
        let Some(IValue::Tensor(cell)) = outputs.first() else {
            return Ok(outputs.into_iter().map(Traced::constant).collect());
        };
        let tensor = cell.get();
        let constant = self.state.graph.insert_constant(
            Some(AttributeValue::Tensor(tensor.as_ref().clone())),
            Type::Tensor,
        );
        let device = self.state.constant(
            &IValue::Device(Box::new(ferrojit_runtime::Device::cpu())),
            &Type::Device,
        )?;
        let dtype = self
            .state
            .constant(&IValue::Int(tensor.dtype().scalar_type_index()), &Type::Int)?;
        let no = self.state.constant(&IValue::Bool(false), &Type::Bool)?;
        let no_again = self.state.constant(&IValue::Bool(false), &Type::Bool)?;
        let none = self.state.constant(&IValue::None, &Type::NoneType)?;
        let moved = self.state.record(
            "aten::to.device",
            &[constant, device, dtype, no, no_again, none],
        )?;
        let moved = self.state.graph.node_output(moved, 0);
        let detached = self.state.record("aten::detach", &[moved])?;
        let detached = self.state.graph.node_output(detached, 0);
        self.state.set_tensor(cell, detached);
        Ok(outputs.into_iter().map(Traced::constant).collect())
    }

    /// A node with no operator behind it (`aten::__is__`, `prim::min`, `prim::tolist`...):
    /// run alone in a one-node graph by the interpreter. Its results are constants.
    fn run_primitive(
        &mut self,
        graph: &Graph,
        node: NodeId,
        inputs: &[Traced],
    ) -> Result<Vec<Traced>> {
        let data = graph.node(node);
        if data.kind.as_str() == "prim::tolist" {
            self.state.warn(python_dataflow(Conversion::List));
        }
        if !data.blocks.is_empty() {
            return Err(TraceError::Unsupported {
                what: format!("{} (a node with blocks)", data.kind),
                location: location_of(graph, node),
            });
        }
        let mut single = Graph::new();
        let parameters: Vec<ValueId> = data
            .inputs
            .iter()
            .map(|value| single.add_input(graph.value_type(*value).clone(), None))
            .collect();
        let output_types: Vec<Type> = data
            .outputs
            .iter()
            .map(|value| graph.value_type(*value).clone())
            .collect();
        let copy = single.create_node(data.kind.as_str(), &parameters, &output_types);
        for (name, value) in &data.attributes {
            single.set_attribute(copy, name, value.clone());
        }
        single.set_node_schema(copy, data.schema.clone());
        single.insert_node(copy);
        for output in single.node_outputs(copy).to_vec() {
            single.register_output(output);
        }
        let values = inputs.iter().map(|input| input.value.clone()).collect();
        let outputs = run_graph(&single, values, self.methods.as_ref()).map_err(|error| {
            TraceError::Runtime {
                node: data.kind.to_string(),
                location: location_of(graph, node),
                message: error.to_string(),
            }
        })?;
        Ok(outputs.into_iter().map(Traced::constant).collect())
    }
}

/// The primitives this evaluator runs itself need at least this many inputs, outputs and
/// blocks (and a loop body its counter and condition); a graph from a hostile archive that
/// has fewer is an error here, not a panic later.
fn check_node_shape(graph: &Graph, node: NodeId) -> Result<()> {
    let data = graph.node(node);
    let (inputs, outputs, blocks) = match data.kind.as_str() {
        "prim::Constant"
        | "prim::ListConstruct"
        | "prim::TupleConstruct"
        | "prim::DictConstruct" => (0, 1, 0),
        "prim::ListUnpack" | "prim::TupleUnpack" => (1, 0, 0),
        "prim::TupleIndex" => (2, 1, 0),
        "prim::unchecked_cast" | "prim::GetAttr" => (1, 1, 0),
        "prim::If" => (1, 0, 2),
        "prim::Loop" => (2, 0, 1),
        _ => (0, 0, 0),
    };
    let loop_body_ok = data.kind.as_str() != "prim::Loop"
        || data.inputs.len() >= 2
            && data.blocks.first().is_some_and(|body| {
                let parameters = graph.block_parameters(*body).len();
                let body_outputs = graph.block_outputs(*body).len();
                parameters == data.inputs.len() - 1
                    && body_outputs == data.inputs.len() - 1
                    && data.outputs.len() == data.inputs.len() - 2
            });
    if data.inputs.len() < inputs
        || data.outputs.len() < outputs
        || data.blocks.len() < blocks
        || !loop_body_ok
    {
        return Err(TraceError::Unsupported {
            what: format!(
                "a malformed {} ({} inputs, {} outputs, {} blocks)",
                data.kind,
                data.inputs.len(),
                data.outputs.len(),
                data.blocks.len()
            ),
            location: location_of(graph, node),
        });
    }
    Ok(())
}

fn lookup(graph: &Graph, environment: &Environment, value: ValueId) -> Result<Traced> {
    environment
        .get(&value)
        .cloned()
        .ok_or_else(|| TraceError::Unsupported {
            what: format!(
                "a use of %{} before it has a value",
                graph.value_display_name(value)
            ),
            location: String::new(),
        })
}
