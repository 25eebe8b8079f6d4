//! Tracing a Rust closure: `trace(|inputs| inputs[0].matmul(&w)?.relu(), example_inputs)`.
//! The closure calls ferrojit's operators through [`TracedTensor`]'s typed methods; each
//! call runs the registry's kernel and, while a trace is active on this thread, is recorded
//! into the same [`TracingState`] the TorchScript tracer uses, so the graph reads as
//! `torch.jit.trace`'s would. Outside a trace the same methods simply run eagerly, so one
//! model definition serves both.
//!
//! [`trace_module`] traces a [`Module`] tree (see [`crate::nn`]): its parameters become the
//! traced module's attributes, read with `prim::GetAttr` from `self`, as PyTorch's trace of
//! an `nn.Module` reads them. Submodules' forwards are inlined into the one `forward`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use ferrojit_frontend::source::SourceFile;
use ferrojit_frontend::CompilationUnit;
use ferrojit_ir::{Argument, AttributeValue, FunctionSchema, Type, ValueId};
use ferrojit_runtime::{IValue, Object, OperatorRegistry};
use ferrojit_serialize::import::{CompiledMethods, LoadedModule, RegistrySchemas};
use ferrojit_tensor::Tensor;

use crate::error::{Result, TraceError};
use crate::number_arithmetic::record_number_operator;
use crate::traced_module::{output_graph_value, Origin, TracedFunction};
use crate::tracing_state::{Trace, Traced, TracingState};

thread_local! {
    /// The trace being recorded on this thread, if any. A thread-local rather than a handle
    /// threaded through every call keeps model code free of tracing plumbing, as Python's
    /// tracer keeps it in a thread-local too.
    static ACTIVE_TRACE: RefCell<Option<TracingState>> = const { RefCell::new(None) };
}

/// A tensor as model code sees it: operator methods run the kernel and, inside a trace,
/// record the call. Cloning shares the tensor (it is the same value in the trace).
#[derive(Debug, Clone)]
pub struct TracedTensor {
    value: IValue,
}

/// A size read from a tensor ([`TracedTensor::size`]) or a plain number. Inside a trace a
/// size stays connected to its tensor (`aten::size` → `prim::NumToTensor`), so a `view`
/// built from it generalizes to other batch sizes, as PyTorch's traced sizes do.
#[derive(Debug, Clone)]
pub struct TracedInt {
    value: i64,
    trace: Trace,
}

impl From<i64> for TracedInt {
    fn from(value: i64) -> TracedInt {
        TracedInt {
            value,
            trace: Trace::Constant,
        }
    }
}

impl TracedInt {
    /// The number's value in this run.
    pub fn value(&self) -> i64 {
        self.value
    }

    fn traced(&self) -> Traced {
        Traced {
            value: IValue::Int(self.value),
            trace: self.trace.clone(),
        }
    }

    fn arithmetic(&self, other: &TracedInt, name: &str, value: i64) -> Result<TracedInt> {
        let inputs = [self.traced(), other.traced()];
        let recorded = with_active_trace(|state| {
            record_number_operator(state, name, &inputs, IValue::Int(value))
        })
        .transpose()?;
        Ok(TracedInt {
            value,
            trace: recorded.map(|traced| traced.trace).unwrap_or_default(),
        })
    }

    /// `self * other`, recorded when either is a traced size.
    pub fn mul(&self, other: &TracedInt) -> Result<TracedInt> {
        let value = self.value.checked_mul(other.value).ok_or_else(|| {
            call_error(
                "aten::mul.int",
                format!("{} * {} overflows", self.value, other.value),
            )
        })?;
        self.arithmetic(other, "aten::mul", value)
    }

    /// `self + other`, recorded when either is a traced size.
    pub fn add(&self, other: &TracedInt) -> Result<TracedInt> {
        let value = self.value.checked_add(other.value).ok_or_else(|| {
            call_error(
                "aten::add.int",
                format!("{} + {} overflows", self.value, other.value),
            )
        })?;
        self.arithmetic(other, "aten::add", value)
    }
}

fn call_error(operator: &str, message: String) -> TraceError {
    TraceError::Runtime {
        node: operator.to_string(),
        location: String::new(),
        message,
    }
}

/// Runs `body` on the active trace, if there is one.
fn with_active_trace<T>(body: impl FnOnce(&mut TracingState) -> T) -> Option<T> {
    ACTIVE_TRACE.with(|active| active.borrow_mut().as_mut().map(body))
}

/// Calls operator `full_name` (`aten::add.Tensor`) on `arguments` (one per schema argument,
/// trailing defaults may be left out): runs its kernel, records the call when a trace is
/// active, and returns its single result.
fn call(full_name: &str, mut arguments: Vec<Traced>) -> Result<IValue> {
    let registry = OperatorRegistry::global();
    let operator = registry
        .lookup(full_name)
        .ok_or_else(|| TraceError::Unsupported {
            what: format!("a call of {full_name} (no such operator is registered)"),
            location: String::new(),
        })?;
    let schema = operator.schema.clone();
    if arguments.len() > schema.arguments.len() {
        return Err(call_error(
            full_name,
            format!(
                "{} arguments given, the schema takes {}",
                arguments.len(),
                schema.arguments.len()
            ),
        ));
    }
    for argument in schema.arguments.iter().skip(arguments.len()) {
        let default = argument.default.as_ref().ok_or_else(|| {
            call_error(
                full_name,
                format!("argument '{}' was not given", argument.name),
            )
        })?;
        let value = ferrojit_runtime::interpreter::code::default_value(default, &argument.ty)
            .map_err(|error| call_error(full_name, error.to_string()))?;
        arguments.push(Traced::constant(value));
    }
    let mut stack: Vec<IValue> = arguments.iter().map(|a| a.value.clone()).collect();
    (operator.kernel)(&mut stack).map_err(|error| call_error(full_name, error.to_string()))?;
    let output = match <[IValue; 1]>::try_from(stack) {
        Ok([output]) => output,
        Err(stack) => {
            return Err(call_error(
                full_name,
                format!("the kernel returned {} values, expected one", stack.len()),
            ))
        }
    };
    with_active_trace(|state| -> Result<()> {
        let (recorded, inputs) = crate::decompositions::recorded_as(registry, &schema, &arguments)
            .unwrap_or_else(|| (schema.clone(), arguments.clone()));
        let mut values = Vec::with_capacity(inputs.len());
        for (input, declared) in inputs.iter().zip(&recorded.arguments) {
            values.push(state.argument_value(input, &declared.ty)?);
        }
        let node = state.graph.insert_with_schema(recorded, &values);
        if let IValue::Tensor(cell) = &output {
            let value = state.graph.node_output(node, 0);
            state.set_tensor(cell, value);
        }
        Ok(())
    })
    .transpose()?;
    Ok(output)
}

fn ints(values: &[i64]) -> Traced {
    Traced::constant(IValue::int_list(values))
}

fn number(value: f64) -> Traced {
    Traced::constant(IValue::Double(value))
}

impl TracedTensor {
    /// Wraps a tensor. Inside a trace, a tensor the trace has not seen (neither an input,
    /// a parameter nor an operator's result) is recorded as a constant where it is used.
    pub fn new(tensor: Tensor) -> TracedTensor {
        TracedTensor {
            value: IValue::from(tensor),
        }
    }

    /// A parameter (`requires_grad`, as `nn.Parameter`).
    pub fn parameter(tensor: Tensor) -> TracedTensor {
        TracedTensor {
            value: IValue::tensor_with_requires_grad(tensor, true),
        }
    }

    fn from_output(value: IValue) -> Result<TracedTensor> {
        match value {
            IValue::Tensor(_) => Ok(TracedTensor { value }),
            other => Err(call_error(
                "operator",
                format!(
                    "returned a {} where a tensor was expected",
                    other.tag_name()
                ),
            )),
        }
    }

    /// The tensor itself.
    pub fn tensor(&self) -> Result<Arc<Tensor>> {
        self.value
            .to_tensor()
            .map_err(|error| call_error("tensor", error.to_string()))
    }

    /// The tensor as a runtime value.
    pub fn value(&self) -> &IValue {
        &self.value
    }

    fn traced(&self) -> Traced {
        Traced::constant(self.value.clone())
    }

    fn unary(&self, full_name: &str) -> Result<TracedTensor> {
        TracedTensor::from_output(call(full_name, vec![self.traced()])?)
    }

    fn binary(&self, full_name: &str, other: &TracedTensor) -> Result<TracedTensor> {
        TracedTensor::from_output(call(full_name, vec![self.traced(), other.traced()])?)
    }

    /// The number of dimensions (a Python int in PyTorch too: not recorded).
    pub fn dim(&self) -> Result<usize> {
        Ok(self.tensor()?.dim())
    }

    /// `self.size(dim)`: a traced size (negative `dim` counts from the end).
    pub fn size(&self, dim: i64) -> Result<TracedInt> {
        let tensor = self.tensor()?;
        let rank = tensor.dim() as i64;
        let position = if dim < 0 { dim + rank } else { dim };
        let size = usize::try_from(position)
            .ok()
            .and_then(|p| tensor.sizes().get(p).copied())
            .ok_or_else(|| {
                call_error(
                    "aten::size.int",
                    format!("dimension {dim} is out of range for a {rank}-dim tensor"),
                )
            })? as i64;
        let IValue::Tensor(cell) = &self.value else {
            return Ok(TracedInt::from(size));
        };
        let trace = with_active_trace(|state| -> Result<Trace> {
            if state.traced_tensor(cell).is_none() {
                return Ok(Trace::Constant);
            }
            let tensor = state.tensor_value(cell);
            let dim = state.constant(&IValue::Int(dim), &Type::Int)?;
            let node = state.record("aten::size.int", &[tensor, dim])?;
            let size = state.graph.node_output(node, 0);
            let node = state.record("prim::NumToTensor.Scalar", &[size])?;
            Ok(Trace::Number(state.graph.node_output(node, 0)))
        })
        .transpose()?
        .unwrap_or_default();
        Ok(TracedInt { value: size, trace })
    }

    fn size_list(sizes: &[TracedInt]) -> Traced {
        Traced {
            value: IValue::int_list(&sizes.iter().map(|s| s.value).collect::<Vec<_>>()),
            trace: Trace::Elements(sizes.iter().map(|s| s.trace.clone()).collect()),
        }
    }

    /// `self.view(sizes)`; sizes read with [`TracedTensor::size`] stay traced.
    pub fn view(&self, sizes: &[TracedInt]) -> Result<TracedTensor> {
        TracedTensor::from_output(call(
            "aten::view",
            vec![self.traced(), TracedTensor::size_list(sizes)],
        )?)
    }

    /// `self.reshape(sizes)`; sizes read with [`TracedTensor::size`] stay traced.
    pub fn reshape(&self, sizes: &[TracedInt]) -> Result<TracedTensor> {
        TracedTensor::from_output(call(
            "aten::reshape",
            vec![self.traced(), TracedTensor::size_list(sizes)],
        )?)
    }

    /// `torch.flatten(self, start_dim, end_dim)`.
    pub fn flatten(&self, start_dim: i64, end_dim: i64) -> Result<TracedTensor> {
        TracedTensor::from_output(call(
            "aten::flatten.using_ints",
            vec![
                self.traced(),
                Traced::constant(IValue::Int(start_dim)),
                Traced::constant(IValue::Int(end_dim)),
            ],
        )?)
    }

    /// `self @ other`.
    pub fn matmul(&self, other: &TracedTensor) -> Result<TracedTensor> {
        self.binary("aten::matmul", other)
    }

    /// `self + other` (broadcasting).
    pub fn add(&self, other: &TracedTensor) -> Result<TracedTensor> {
        TracedTensor::from_output(call(
            "aten::add.Tensor",
            vec![self.traced(), other.traced()],
        )?)
    }

    /// `self - other` (broadcasting).
    pub fn sub(&self, other: &TracedTensor) -> Result<TracedTensor> {
        TracedTensor::from_output(call(
            "aten::sub.Tensor",
            vec![self.traced(), other.traced()],
        )?)
    }

    /// `self * other` (broadcasting).
    pub fn mul(&self, other: &TracedTensor) -> Result<TracedTensor> {
        self.binary("aten::mul.Tensor", other)
    }

    /// `self / other` (true division, broadcasting).
    pub fn div(&self, other: &TracedTensor) -> Result<TracedTensor> {
        self.binary("aten::div.Tensor", other)
    }

    /// `torch.relu(self)`.
    pub fn relu(&self) -> Result<TracedTensor> {
        self.unary("aten::relu")
    }

    /// `F.gelu(self)` (the exact form, `approximate="none"`).
    pub fn gelu(&self) -> Result<TracedTensor> {
        self.unary("aten::gelu")
    }

    /// `torch.sigmoid(self)`.
    pub fn sigmoid(&self) -> Result<TracedTensor> {
        self.unary("aten::sigmoid")
    }

    /// `torch.tanh(self)`.
    pub fn tanh(&self) -> Result<TracedTensor> {
        self.unary("aten::tanh")
    }

    /// `F.softmax(self, dim)`.
    pub fn softmax(&self, dim: i64) -> Result<TracedTensor> {
        TracedTensor::from_output(call(
            "aten::softmax.int",
            vec![self.traced(), Traced::constant(IValue::Int(dim))],
        )?)
    }

    /// `F.linear(self, weight, bias)`.
    pub fn linear(
        &self,
        weight: &TracedTensor,
        bias: Option<&TracedTensor>,
    ) -> Result<TracedTensor> {
        let bias = bias.map_or(Traced::constant(IValue::None), TracedTensor::traced);
        TracedTensor::from_output(call(
            "aten::linear",
            vec![self.traced(), weight.traced(), bias],
        )?)
    }

    /// `F.conv2d(self, weight, bias, stride, padding, dilation, groups)`; recorded as
    /// `aten::_convolution`, as PyTorch's trace shows it.
    pub fn conv2d(
        &self,
        weight: &TracedTensor,
        bias: Option<&TracedTensor>,
        stride: [i64; 2],
        padding: [i64; 2],
        dilation: [i64; 2],
        groups: i64,
    ) -> Result<TracedTensor> {
        let bias = bias.map_or(Traced::constant(IValue::None), TracedTensor::traced);
        TracedTensor::from_output(call(
            "aten::conv2d",
            vec![
                self.traced(),
                weight.traced(),
                bias,
                ints(&stride),
                ints(&padding),
                ints(&dilation),
                Traced::constant(IValue::Int(groups)),
            ],
        )?)
    }

    /// `F.max_pool2d(self, kernel_size, stride, padding, dilation, ceil_mode=False)`.
    pub fn max_pool2d(
        &self,
        kernel_size: [i64; 2],
        stride: [i64; 2],
        padding: [i64; 2],
    ) -> Result<TracedTensor> {
        TracedTensor::from_output(call(
            "aten::max_pool2d",
            vec![
                self.traced(),
                ints(&kernel_size),
                ints(&stride),
                ints(&padding),
                ints(&[1, 1]),
                Traced::constant(IValue::Bool(false)),
            ],
        )?)
    }

    /// `F.adaptive_avg_pool2d(self, output_size)`.
    pub fn adaptive_avg_pool2d(&self, output_size: [i64; 2]) -> Result<TracedTensor> {
        TracedTensor::from_output(call(
            "aten::adaptive_avg_pool2d",
            vec![self.traced(), ints(&output_size)],
        )?)
    }

    /// `F.layer_norm(self, normalized_shape, weight, bias, eps)`.
    pub fn layer_norm(
        &self,
        normalized_shape: &[i64],
        weight: Option<&TracedTensor>,
        bias: Option<&TracedTensor>,
        eps: f64,
    ) -> Result<TracedTensor> {
        let optional = |tensor: Option<&TracedTensor>| {
            tensor.map_or(Traced::constant(IValue::None), TracedTensor::traced)
        };
        TracedTensor::from_output(call(
            "aten::layer_norm",
            vec![
                self.traced(),
                ints(normalized_shape),
                optional(weight),
                optional(bias),
                number(eps),
                // cudnn_enable: what `F.layer_norm` passes.
                Traced::constant(IValue::Bool(true)),
            ],
        )?)
    }

    /// `torch.cat(tensors, dim)`.
    pub fn cat(tensors: &[TracedTensor], dim: i64) -> Result<TracedTensor> {
        let list = IValue::list(
            Type::Tensor,
            tensors.iter().map(|t| t.value.clone()).collect(),
        );
        TracedTensor::from_output(call(
            "aten::cat",
            vec![Traced::constant(list), Traced::constant(IValue::Int(dim))],
        )?)
    }
}

/// A module tree whose parameters a trace reads as attributes (`nn.Module`'s role).
pub trait Module {
    /// The class's qualified name, as PyTorch names it (`__torch__.torch.nn.modules.linear.Linear`).
    fn qualified_name(&self) -> String;
    /// This module's own parameters, by attribute name, in declaration order.
    fn parameters(&self) -> Vec<(String, TracedTensor)> {
        Vec::new()
    }
    /// This module's submodules, by attribute name, in declaration order.
    fn children(&self) -> Vec<(String, &dyn Module)> {
        Vec::new()
    }
    /// The module's computation on one input.
    fn forward(&self, input: &TracedTensor) -> Result<TracedTensor>;
}

/// Every parameter of a module tree by dotted path (`features.0.weight`), as
/// `nn.Module.named_parameters` lists them.
pub fn named_parameters(module: &dyn Module) -> Vec<(String, TracedTensor)> {
    let mut all = module.parameters();
    for (name, child) in module.children() {
        for (path, parameter) in named_parameters(child) {
            all.push((format!("{name}.{path}"), parameter));
        }
    }
    all
}

/// Traces a closure over tensors. Tensors it creates become constants; use
/// [`trace_module`] for weights that should be the module's attributes.
pub fn trace(
    function: impl FnOnce(&[TracedTensor]) -> Result<TracedTensor>,
    example_inputs: Vec<Tensor>,
) -> Result<TracedFunction> {
    trace_with_root(None, function, example_inputs)
}

/// Traces `module.forward` on `example_input`: the module's parameters are its attributes.
pub fn trace_module(module: &dyn Module, example_input: Tensor) -> Result<TracedFunction> {
    trace_with_root(
        Some(module),
        |inputs| match inputs {
            [input] => module.forward(input),
            _ => Err(call_error("forward", "expects one input".to_string())),
        },
        vec![example_input],
    )
}

/// Removes the active trace when dropped, so that an error (or a panic) in the closure
/// does not leave this thread tracing.
struct ActiveTraceGuard;

impl Drop for ActiveTraceGuard {
    fn drop(&mut self) {
        ACTIVE_TRACE.with(|active| active.borrow_mut().take());
    }
}

fn trace_with_root(
    root: Option<&dyn Module>,
    function: impl FnOnce(&[TracedTensor]) -> Result<TracedTensor>,
    example_inputs: Vec<Tensor>,
) -> Result<TracedFunction> {
    if ACTIVE_TRACE.with(|active| active.borrow().is_some()) {
        return Err(TraceError::Unsupported {
            what: "a trace started while another trace is being recorded".to_string(),
            location: String::new(),
        });
    }
    let loaded = module_objects(root)?;
    let object = loaded.module.object().clone();
    let class = object.class().clone();
    let mut state = TracingState::new();
    let self_value = state
        .graph
        .add_input(Type::Class(class.clone()), Some("self"));
    if let Some(root) = root {
        read_parameters(&mut state, root, &object, self_value)?;
    }
    let names: Vec<String> = match example_inputs.len() {
        1 => vec!["x".to_string()],
        count => (0..count).map(|index| format!("x{index}")).collect(),
    };
    let inputs: Vec<TracedTensor> = example_inputs.into_iter().map(TracedTensor::new).collect();
    let mut arguments = vec![plain_argument("self", Type::Class(class))];
    for (input, name) in inputs.iter().zip(&names) {
        let value = state.graph.add_input(Type::Tensor, Some(name));
        if let IValue::Tensor(cell) = &input.value {
            state.set_tensor(cell, value);
        }
        arguments.push(plain_argument(name, Type::Tensor));
    }

    ACTIVE_TRACE.with(|active| *active.borrow_mut() = Some(state));
    let guard = ActiveTraceGuard;
    let result = function(&inputs);
    let state = ACTIVE_TRACE.with(|active| active.borrow_mut().take());
    drop(guard);
    let mut state = state.ok_or_else(|| TraceError::Unsupported {
        what: "a trace whose state was taken while it ran".to_string(),
        location: String::new(),
    })?;
    let output = result?;

    let output_value = output_graph_value(&mut state, &output.traced())?;
    // No warning for an output that depends on no input: PyTorch 2.15's tracer gives none
    // (its library holds no "does not depend on inputs" text), so neither does ferrojit.
    let return_type = state.graph.value_type(output_value).clone();
    state.graph.register_output(output_value);
    ferrojit_opt::dead_code_elimination::eliminate_dead_code_with_alias_db(&mut state.graph)
        .map_err(|error| TraceError::Unsupported {
            what: format!("the trace's dead code: {error}"),
            location: String::new(),
        })?;
    Ok(TracedFunction {
        graph: state.graph,
        warnings: state.warnings,
        example_output: output.value,
        schema: FunctionSchema {
            name: "forward".to_string(),
            overload_name: String::new(),
            arguments,
            returns: vec![plain_argument("", return_type)],
            is_vararg: false,
            is_varret: false,
        },
        loaded,
        origin: Origin::RustClosure,
    })
}

fn plain_argument(name: &str, ty: Type) -> Argument {
    Argument {
        name: name.to_string(),
        ty,
        type_spelling: String::new(),
        list_length: None,
        default: None,
        kwarg_only: false,
        alias_info: None,
    }
}

/// Reads each parameter and submodule of `module` (the object `object`, graph value
/// `owner`) with `prim::GetAttr`, so that the parameters' tensors are those reads.
fn read_parameters(
    state: &mut TracingState,
    module: &dyn Module,
    object: &Arc<Object>,
    owner: ValueId,
) -> Result<()> {
    for (name, parameter) in module.parameters() {
        let read = get_attribute(state, owner, &name, Type::Tensor);
        if let IValue::Tensor(cell) = &parameter.value {
            state.set_tensor(cell, read);
        }
    }
    for (name, child) in module.children() {
        let attribute = object
            .get_attr(&name)
            .map_err(|error| call_error("prim::GetAttr", error.to_string()))?;
        let IValue::Object(child_object) = attribute else {
            return Err(call_error(
                "prim::GetAttr",
                format!("submodule '{name}' is not an object"),
            ));
        };
        let read = get_attribute(
            state,
            owner,
            &name,
            Type::Class(child_object.class().clone()),
        );
        read_parameters(state, child, &child_object, read)?;
    }
    Ok(())
}

fn get_attribute(state: &mut TracingState, owner: ValueId, name: &str, ty: Type) -> ValueId {
    let read = state.graph.insert("prim::GetAttr", &[owner], &[ty]);
    state
        .graph
        .set_attribute(read, "name", AttributeValue::Str(name.to_string()));
    state.graph.node_output(read, 0)
}

/// Defines the classes of a module tree in a compilation unit, as TorchScript source
/// declaring the attributes (parameters, submodules, `training`), and builds its objects,
/// whose parameter attributes are the parameters' own tensors. A class name used twice
/// with different attributes is mangled, as PyTorch mangles it.
struct ClassDefiner {
    unit: Arc<CompilationUnit>,
    /// Qualified name → the attribute declarations it was defined with.
    defined: HashMap<String, String>,
    mangle_count: usize,
}

fn module_objects(root: Option<&dyn Module>) -> Result<LoadedModule> {
    let mut definer = ClassDefiner {
        unit: Arc::new(CompilationUnit::new(RegistrySchemas::builtins())),
        defined: HashMap::new(),
        mangle_count: 0,
    };
    let object = match root {
        Some(root) => definer.object(root)?,
        None => definer.object_of("__torch__.TracedClosure", &[], Vec::new())?,
    };
    Ok(LoadedModule {
        module: ferrojit_runtime::Module::new(object),
        unit: definer.unit,
    })
}

impl ClassDefiner {
    fn object(&mut self, module: &dyn Module) -> Result<Arc<Object>> {
        let mut children = Vec::new();
        for (name, child) in module.children() {
            children.push((name, self.object(child)?));
        }
        let parameters = module.parameters();
        self.object_of(&module.qualified_name(), &parameters, children)
    }

    fn object_of(
        &mut self,
        qualified_name: &str,
        parameters: &[(String, TracedTensor)],
        children: Vec<(String, Arc<Object>)>,
    ) -> Result<Arc<Object>> {
        let mut declarations = String::from("  __parameters__ = [");
        for (name, _) in parameters {
            declarations.push_str(&format!("\"{name}\", "));
        }
        declarations.push_str("]\n  __buffers__ = []\n  training : bool\n");
        for (name, _) in parameters {
            declarations.push_str(&format!("  __annotations__[\"{name}\"] = Tensor\n"));
        }
        for (name, child) in &children {
            declarations.push_str(&format!(
                "  __annotations__[\"{name}\"] = {}\n",
                child.class().qualified_name()
            ));
        }
        let (qualifier, short) = qualified_name
            .rsplit_once('.')
            .unwrap_or(("__torch__", qualified_name));
        if !short.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            || short.is_empty()
            || !qualified_name.starts_with("__torch__")
        {
            return Err(TraceError::Unsupported {
                what: format!(
                    "a module class named '{qualified_name}' (expected __torch__.NAME with \
                     NAME an identifier)"
                ),
                location: String::new(),
            });
        }
        let mut qualifier = qualifier.to_string();
        let mut qualified = qualified_name.to_string();
        let class = loop {
            match self.defined.get(&qualified) {
                Some(existing) if *existing == declarations => {
                    break self.resolve(&qualified)?;
                }
                Some(_) => {
                    qualifier = format!(
                        "{}.___torch_mangle_{}",
                        qualified_name
                            .rsplit_once('.')
                            .map_or("__torch__", |(q, _)| q),
                        self.mangle_count
                    );
                    self.mangle_count += 1;
                    qualified = format!("{qualifier}.{short}");
                }
                None => {
                    let source = format!("class {short}(Module):\n{declarations}");
                    self.unit
                        .define_source(
                            SourceFile::new(format!("<{qualified}>"), source),
                            &qualifier,
                        )
                        .map_err(|error| TraceError::Compile {
                            file: qualified.clone(),
                            message: error.to_string(),
                        })?;
                    self.defined.insert(qualified.clone(), declarations.clone());
                    break self.resolve(&qualified)?;
                }
            }
        };
        let object = Object::new(class, CompiledMethods::new(self.unit.clone()));
        let set = |name: &str, value: IValue| {
            object
                .set_attr(name, value)
                .map_err(|error| call_error("prim::SetAttr", error.to_string()))
        };
        set("training", IValue::Bool(false))?;
        for (name, parameter) in parameters {
            set(name, parameter.value.clone())?;
        }
        for (name, child) in children {
            set(&name, IValue::Object(child))?;
        }
        Ok(object)
    }

    fn resolve(&self, qualified: &str) -> Result<Arc<ferrojit_ir::ClassType>> {
        self.unit
            .resolve_class(qualified)
            .map_err(|error| TraceError::Compile {
                file: qualified.to_string(),
                message: error.to_string(),
            })
    }
}
