//! Running an exported program: inputs flattened by the in-spec and checked against the
//! placeholders' metadata and the range constraints, `call_function` nodes run through the
//! runtime's operator registry (arguments the serializer left out filled from the schema's
//! defaults with `ferrojit_ir::binding`), symbolic integer nodes run as scalar operations,
//! higher-order `cond`/`while_loop`/`map_impl`/`scan` run their subgraphs (and
//! `invoke_subgraph`, `with_effects` and `auto_functionalized(_v2)` run in
//! [`crate::higher_order`]), outputs unflattened by the
//! out-spec, and buffer and input mutations written back.

use crate::archive::LoadedProgram;
use crate::error::{ExportError, Result};
use crate::fallback::find_operator;
use crate::input_check::SizeUnifier;
use crate::model::{
    scalar_type_name, scalar_type_to_dtype, Argument, ConstantValue, Graph, InputSpec, Node,
    OptionalTensorArgument, OutputSpec, SymArgument, SymInt,
};
use crate::symbolic::SymbolicValue;
use crate::treespec::TreeSpec;
use ferrojit_ir::binding::{bind_arguments, ArgumentSource};
use ferrojit_ir::Type;
use ferrojit_runtime::interpreter::code::default_value;
use ferrojit_runtime::{
    Device, DictValue, IValue, ListValue, Operator, OperatorRegistry, TupleValue,
};
use ferrojit_tensor::{Scalar, Tensor};
use std::collections::HashMap;

/// The most iterations a `while_loop` may run before the run is stopped.
pub const MAX_WHILE_LOOP_ITERATIONS: usize = 10_000_000;

/// A loaded program, ready to run; it keeps its state (buffers) between runs.
pub struct ExportedModule {
    loaded: LoadedProgram,
    in_spec: Option<TreeSpec>,
    out_spec: Option<TreeSpec>,
    /// The names of `forward`'s parameters, for messages about inputs.
    forward_arg_names: Vec<String>,
    /// Parameters, buffers and constants as values, by their state-dict names.
    state: HashMap<String, IValue>,
    /// The most values the top-level graph held at once during the last run (a debug
    /// statistic: with each value dropped after its last reader it stays small).
    last_peak_live_values: usize,
    /// Whether runs use the fast path ([`ExportedModule::new`]) or not
    /// ([`ExportedModule::new_plain`]).
    fast_path_enabled: bool,
    /// The top-level graph with batch norms folded and epilogues fused
    /// ([`crate::fast_path`]), run instead of the program's graph: prepared on the first
    /// run (folding reads every convolution weight, which loading does not), as the
    /// optimizing executor builds a TorchScript method's plan on its first call. `None`
    /// inside runs the program as written (nothing to rewrite).
    fast_plan: std::sync::OnceLock<Option<crate::fast_path::FastPlan>>,
}

impl std::fmt::Debug for ExportedModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportedModule")
            .field("name", &self.loaded.name)
            .finish_non_exhaustive()
    }
}

/// Values by name while a graph runs.
pub(crate) type Environment = HashMap<String, IValue>;

fn missing(kind: &'static str, name: &str) -> ExportError {
    ExportError::MissingReference {
        kind,
        name: name.to_string(),
    }
}

fn lookup(environment: &Environment, name: &str) -> Result<IValue> {
    environment
        .get(name)
        .cloned()
        .ok_or_else(|| missing("value", name))
}

impl ExportedModule {
    /// Prepares a loaded program to run: reads its pytree specs and checks that every
    /// operator it calls is known. Its first run also prepares the fast path
    /// ([`crate::fast_path`]: batch norms folded into convolutions, linear and convolution
    /// epilogues fused onto the packed GEMM) where the program has something for it.
    pub fn new(loaded: LoadedProgram) -> Result<ExportedModule> {
        let mut module = ExportedModule::new_plain(loaded)?;
        module.fast_path_enabled = true;
        Ok(module)
    }

    /// The fast path's plan, prepared on first use; `None` runs the program as written.
    fn fast_plan(&self) -> Option<&crate::fast_path::FastPlan> {
        if !self.fast_path_enabled {
            return None;
        }
        self.fast_plan
            .get_or_init(|| {
                let program = &self.loaded.program.graph_module;
                // A program the rewrite cannot prepare (folding fails on malformed state), or
                // whose rewritten graph does not check (an epilogue operator missing from a
                // custom registry), runs as written, where the plain run reports any error.
                crate::fast_path::prepare(&program.graph, &program.signature, &self.state)
                    .ok()
                    .flatten()
                    .filter(|plan| check_graph(&plan.graph, 0).is_ok())
            })
            .as_ref()
    }

    /// [`ExportedModule::new`] without the fast path: every node runs as written, one
    /// operator call each (the reference the fast path is tested against).
    pub fn new_plain(loaded: LoadedProgram) -> Result<ExportedModule> {
        let module = &loaded.program.graph_module;
        let root_signature = module
            .module_call_graph
            .iter()
            .find(|entry| entry.fqn.is_empty())
            .and_then(|entry| entry.signature.as_ref());
        let fields = &module.treespec_namedtuple_fields;
        let (in_spec, out_spec) = match root_signature {
            Some(signature) => (
                Some(TreeSpec::parse(&signature.in_spec, fields)?),
                Some(TreeSpec::parse(&signature.out_spec, fields)?),
            ),
            None => (None, None),
        };
        let forward_arg_names = root_signature
            .and_then(|signature| signature.forward_arg_names.clone())
            .unwrap_or_default();
        let mut state = HashMap::new();
        for (name, tensor) in loaded.state_dict.iter().chain(loaded.constants.iter()) {
            state.insert(name.clone(), IValue::from(tensor.clone()));
        }
        check_graph(&module.graph, 0)?;
        Ok(ExportedModule {
            loaded,
            in_spec,
            out_spec,
            forward_arg_names,
            state,
            last_peak_live_values: 0,
            fast_path_enabled: false,
            fast_plan: std::sync::OnceLock::new(),
        })
    }

    /// The most named values (tensors, scalars, lists) the top-level graph held at once
    /// during the last run, counted after each node runs and before the values it was the
    /// last reader of are dropped. Values are freed at their last use, so a chain of 20
    /// operators peaks at 2 or 3, not 20; a debug statistic for memory questions (a
    /// subgraph's own values are not counted).
    pub fn peak_live_values(&self) -> usize {
        self.last_peak_live_values
    }

    /// What the fast path rewrote: (batch norms folded, linear/convolution chains fused);
    /// (0, 0) when the program runs as written. Prepares the fast path if no run has yet.
    pub fn fast_path_rewrites(&self) -> (usize, usize) {
        self.fast_plan()
            .map_or((0, 0), |plan| (plan.folded_batch_norms, plan.fused_chains))
    }

    /// The program as read.
    pub fn loaded(&self) -> &LoadedProgram {
        &self.loaded
    }

    /// A parameter or buffer's current value (after any buffer mutations).
    pub fn state_value(&self, name: &str) -> Option<IValue> {
        self.state.get(name).cloned()
    }

    /// Runs the program on positional arguments, as `ep.module()(*args)` does.
    pub fn run(&mut self, args: Vec<IValue>) -> Result<IValue> {
        self.run_with_keywords(args, Vec::new())
    }

    /// Runs the program on positional and keyword arguments.
    pub fn run_with_keywords(
        &mut self,
        args: Vec<IValue>,
        kwargs: Vec<(String, IValue)>,
    ) -> Result<IValue> {
        let leaves = self.flatten_inputs(args, kwargs)?;
        let program = &self.loaded.program;
        let graph = &program.graph_module.graph;
        let signature = &program.graph_module.signature;
        if signature.input_specs.len() != graph.inputs.len() {
            return Err(ExportError::Schema {
                path: "graph_module.signature.input_specs".into(),
                message: format!(
                    "{} input specs for {} graph inputs",
                    signature.input_specs.len(),
                    graph.inputs.len()
                ),
            });
        }
        let mut sizes = SizeUnifier::new(&program.range_constraints)?;
        let mut user_leaves = leaves.into_iter();
        let mut inputs = Vec::with_capacity(graph.inputs.len());
        let mut user_inputs_by_name: HashMap<String, IValue> = HashMap::new();
        for spec in &signature.input_specs {
            let value = match spec {
                InputSpec::Parameter {
                    parameter_name: name,
                    ..
                }
                | InputSpec::Buffer {
                    buffer_name: name, ..
                }
                | InputSpec::TensorConstant {
                    tensor_constant_name: name,
                    ..
                } => self
                    .state
                    .get(name)
                    .cloned()
                    .ok_or_else(|| missing("state-dict entry", name))?,
                InputSpec::Token { .. } => IValue::None,
                InputSpec::CustomObj {
                    custom_obj_name, ..
                } => {
                    return Err(ExportError::Unsupported(format!(
                        "custom object '{custom_obj_name}' (torchbind objects are not loaded)"
                    )))
                }
                InputSpec::ConstantInput { name, value } => {
                    let expected = constant_value(value);
                    let (path, given) = user_leaves.next().ok_or_else(|| {
                        input_error(name, "missing: fewer inputs than the program takes")
                    })?;
                    if !given.equals(&expected).unwrap_or(false) {
                        return Err(input_error(
                            &path,
                            format!(
                                "expected the constant {}, but got {}",
                                expected.python_repr(),
                                given.python_repr()
                            ),
                        ));
                    }
                    expected
                }
                InputSpec::UserInput { arg } => {
                    let (path, given) = user_leaves.next().ok_or_else(|| {
                        input_error("*args", "fewer inputs than the program takes")
                    })?;
                    check_user_input(graph, arg, &path, &given, &mut sizes)?;
                    if let Some(name) = arg.name() {
                        user_inputs_by_name.insert(name.to_string(), given.clone());
                    }
                    given
                }
            };
            inputs.push(value);
        }
        if user_leaves.next().is_some() {
            return Err(input_error("*args", "more inputs than the program takes"));
        }
        // The fast path's graph takes the same inputs, some state replaced by folded tensors.
        let run_graph = match self.fast_plan() {
            Some(plan) => {
                for (position, value) in &plan.replaced_inputs {
                    inputs[*position] = value.clone();
                }
                &plan.graph
            }
            None => graph,
        };
        let mut peak_live_values = 0;
        let outputs = run_graph_counting(run_graph, inputs, 0, &mut peak_live_values)?;
        self.last_peak_live_values = peak_live_values;
        if outputs.len() != signature.output_specs.len() {
            return Err(ExportError::Schema {
                path: "graph_module.signature.output_specs".into(),
                message: format!(
                    "{} output specs for {} outputs",
                    signature.output_specs.len(),
                    outputs.len()
                ),
            });
        }
        let mut user_outputs = Vec::new();
        for (spec, value) in signature.output_specs.iter().zip(outputs) {
            match spec {
                OutputSpec::UserOutput { .. } | OutputSpec::LossOutput { .. } => {
                    user_outputs.push(value)
                }
                OutputSpec::BufferMutation {
                    buffer_name: name, ..
                }
                | OutputSpec::ParameterMutation {
                    parameter_name: name,
                    ..
                } => {
                    // Write into the buffer's own tensor, so handles on it see the change.
                    match self.state.get(name) {
                        Some(current) => copy_into(current, &value)?,
                        None => return Err(missing("buffer", name)),
                    }
                }
                OutputSpec::UserInputMutation {
                    user_input_name, ..
                } => {
                    let target = user_inputs_by_name
                        .get(user_input_name)
                        .ok_or_else(|| missing("user input", user_input_name))?;
                    copy_into(target, &value)?;
                }
                OutputSpec::Token { .. } => {}
                OutputSpec::GradientToParameter { .. } | OutputSpec::GradientToUserInput { .. } => {
                    return Err(ExportError::Unsupported(
                        "joint (training) graphs with gradient outputs".into(),
                    ))
                }
            }
        }
        match &self.out_spec {
            Some(spec) => {
                if spec.leaf_count() != user_outputs.len() {
                    return Err(ExportError::TreeSpec(format!(
                        "the out-spec has {} leaves but the graph returned {} user outputs",
                        spec.leaf_count(),
                        user_outputs.len()
                    )));
                }
                spec.unflatten(&mut user_outputs.into_iter())
            }
            None => Ok(match user_outputs.len() {
                1 => user_outputs.remove(0),
                _ => IValue::tuple(user_outputs),
            }),
        }
    }

    fn flatten_inputs(
        &self,
        args: Vec<IValue>,
        kwargs: Vec<(String, IValue)>,
    ) -> Result<Vec<(String, IValue)>> {
        let mut leaves = Vec::new();
        match &self.in_spec {
            Some(TreeSpec::Tuple(parts)) if parts.len() == 2 => {
                match &parts[0] {
                    // Each positional argument under its parameter's name, as PyTorch's
                    // guards name them (`x.size()[0]`).
                    TreeSpec::Tuple(children) if children.len() == args.len() => {
                        for (position, (child, arg)) in children.iter().zip(&args).enumerate() {
                            let name = self
                                .forward_arg_names
                                .get(position)
                                .cloned()
                                .unwrap_or_else(|| format!("*args[{position}]"));
                            child.flatten(arg, &name, &mut leaves)?;
                        }
                    }
                    spec => spec.flatten(&IValue::tuple(args), "*args", &mut leaves)?,
                }
                let dict = DictValue::new(Type::Str, Type::Any);
                for (key, value) in kwargs {
                    dict.insert(IValue::string(&key), value);
                }
                parts[1].flatten(&IValue::Dict(dict), "**kwargs", &mut leaves)?;
            }
            Some(other) => other.flatten(&IValue::tuple(args), "*args", &mut leaves)?,
            None => {
                for (position, value) in args.into_iter().enumerate() {
                    leaves.push((format!("*args[{position}]"), value));
                }
            }
        }
        Ok(leaves)
    }
}

fn input_error(input: &str, message: impl Into<String>) -> ExportError {
    ExportError::Input {
        input: input.to_string(),
        message: message.into(),
    }
}

fn constant_value(value: &ConstantValue) -> IValue {
    match value {
        ConstantValue::None => IValue::None,
        ConstantValue::Int(v) => IValue::Int(*v),
        ConstantValue::Float(v) => IValue::Double(*v),
        ConstantValue::String(v) => IValue::string(v),
        ConstantValue::Bool(v) => IValue::Bool(*v),
    }
}

/// Writes `value` into `target`'s tensor in place (`target.copy_(value)`).
fn copy_into(target: &IValue, value: &IValue) -> Result<()> {
    if target.is_same_identity(value) {
        return Ok(());
    }
    let operator = OperatorRegistry::global()
        .lookup("aten::copy_")
        .ok_or_else(|| ExportError::Unsupported("aten::copy_ is not registered".into()))?;
    let mut stack = vec![target.clone(), value.clone(), IValue::Bool(false)];
    (operator.kernel)(&mut stack)?;
    Ok(())
}

/// Checks one user input against its placeholder: a tensor's dtype, rank and sizes (static
/// sizes now, plain symbols bound, other expressions queued for after all are bound).
fn check_user_input(
    graph: &Graph,
    arg: &Argument,
    path: &str,
    given: &IValue,
    sizes: &mut SizeUnifier,
) -> Result<()> {
    match arg {
        Argument::Tensor(name) => {
            let IValue::Tensor(_) = given else {
                return Err(input_error(
                    path,
                    format!("expected a Tensor, but got {}", given.tag_name()),
                ));
            };
            let tensor = given.to_tensor()?;
            let meta = graph
                .tensor_values
                .get(name)
                .ok_or_else(|| missing("tensor metadata", name))?;
            match scalar_type_to_dtype(meta.dtype) {
                Some(dtype) if dtype == tensor.dtype() => {}
                _ => {
                    return Err(input_error(
                        &format!("{path}.dtype"),
                        format!(
                            "expected torch.{}, but got torch.{}",
                            scalar_type_name(meta.dtype),
                            tensor.dtype().name()
                        ),
                    ))
                }
            }
            if meta.sizes.len() != tensor.dim() {
                return Err(input_error(
                    path,
                    format!(
                        "expected a tensor of rank {}, but got rank {}",
                        meta.sizes.len(),
                        tensor.dim()
                    ),
                ));
            }
            for (dim, (size, actual)) in meta.sizes.iter().zip(tensor.sizes()).enumerate() {
                let actual = *actual as i64;
                match size {
                    SymInt::Int(expected) => {
                        if *expected != actual {
                            return Err(input_error(
                                &format!("{path}.shape[{dim}]"),
                                format!("expected to be equal to {expected}, but got {actual}"),
                            ));
                        }
                    }
                    SymInt::Expr(expression) => {
                        sizes.check(
                            &expression.expr_str,
                            actual,
                            &format!("{path}.shape[{dim}]"),
                        )?;
                    }
                }
            }
            Ok(())
        }
        Argument::SymInt(SymArgument::Name(name)) => {
            let value = given.to_int().map_err(|_| {
                input_error(
                    path,
                    format!("expected an int, but got {}", given.tag_name()),
                )
            })?;
            if let Some(SymInt::Expr(expression)) = graph.sym_int_values.get(name) {
                sizes.check(&expression.expr_str, value, path)?;
            }
            Ok(())
        }
        Argument::Int(expected) | Argument::SymInt(SymArgument::Literal(expected)) => match given {
            IValue::Int(actual) if actual == expected => Ok(()),
            other => Err(input_error(
                path,
                format!(
                    "expected the int {expected}, but got {}",
                    other.python_repr()
                ),
            )),
        },
        _ => Ok(()),
    }
}

/// Checks that every node's target is known and its arguments bind, before any run.
fn check_graph(graph: &Graph, depth: usize) -> Result<()> {
    if depth > 32 {
        return Err(ExportError::Unsupported(
            "subgraphs nested more than 32 deep".into(),
        ));
    }
    // Which values die after each node is worked out here, once per graph (subgraphs
    // included, through the recursion below), so no run pays for it.
    graph
        .values_dead_after
        .get_or_init(|| values_dead_after_each_node(graph));
    for node in &graph.nodes {
        let context = |error: ExportError| ExportError::Node {
            node: node_label(node),
            target: node.target.clone(),
            source: Box::new(error),
        };
        match classify(&node.target) {
            Target::Operator(full_name) => {
                if !is_builtin_symbolic_operator(&full_name) {
                    let operator = find_operator(&full_name).ok_or_else(|| {
                        context(ExportError::Unsupported(format!(
                            "operator {full_name} is not registered"
                        )))
                    })?;
                    bind_node(operator, node).map_err(context)?;
                }
            }
            Target::Symbolic(_) => {}
            Target::HigherOrder(name) => {
                if !is_known_higher_order(&name) {
                    return Err(context(ExportError::Unsupported(format!(
                        "higher-order operator '{name}'"
                    ))));
                }
                for (position, input) in node.inputs.iter().enumerate() {
                    match &input.arg {
                        Argument::Graph(subgraph) => {
                            check_graph(&subgraph.graph, depth + 1).map_err(context)?;
                        }
                        Argument::Operator(_) => {
                            crate::higher_order::operator_argument(node, position)
                                .map_err(context)?;
                        }
                        _ => {}
                    }
                }
            }
            Target::Unknown => {
                return Err(context(ExportError::Unsupported(format!(
                    "call target '{}'",
                    node.target
                ))))
            }
        }
    }
    Ok(())
}

fn node_label(node: &Node) -> String {
    if let Some(name) = &node.name {
        return name.clone();
    }
    node.outputs
        .iter()
        .find_map(|output| match output {
            Argument::Tensors(names) => names.first().cloned(),
            other => other.name().map(str::to_string),
        })
        .unwrap_or_else(|| "?".to_string())
}

enum Target {
    /// `aten::add.Tensor`
    Operator(String),
    /// `mul` for `_operator.mul`, `sym_max` for `torch.sym_max`, `ceil` for `math.ceil`
    Symbolic(String),
    /// `cond`, `while_loop`, `map_impl`
    HigherOrder(String),
    Unknown,
}

fn classify(target: &str) -> Target {
    if let Some(rest) = target.strip_prefix("torch.ops.higher_order.") {
        return Target::HigherOrder(rest.to_string());
    }
    if let Some(rest) = target.strip_prefix("torch.ops.") {
        let mut parts = rest.splitn(3, '.');
        let (Some(namespace), Some(name)) = (parts.next(), parts.next()) else {
            return Target::Unknown;
        };
        return Target::Operator(match parts.next() {
            None | Some("default") => format!("{namespace}::{name}"),
            Some(overload) => format!("{namespace}::{name}.{overload}"),
        });
    }
    for prefix in ["_operator.", "operator.", "math.", "torch."] {
        if let Some(rest) = target.strip_prefix(prefix) {
            return Target::Symbolic(format!(
                "{}{rest}",
                if prefix == "math." { "math." } else { "" }
            ));
        }
    }
    Target::Unknown
}

/// The registry name (`mylib::op.overload`) of an operator target (`torch.ops.mylib.op.overload`).
pub(crate) fn classify_operator(target: &str) -> Option<String> {
    match classify(target) {
        Target::Operator(full_name) => Some(full_name),
        _ => None,
    }
}

/// The higher-order operators the runner knows.
fn is_known_higher_order(name: &str) -> bool {
    matches!(name, "cond" | "while_loop" | "map_impl" | "scan")
        || crate::higher_order::CALLING_HIGHER_ORDER_OPERATORS.contains(&name)
}

/// The serialized inputs bound to the schema's formals: `Some(index)` into `node.inputs`,
/// or `None` for the schema's default.
fn bind_node(operator: &Operator, node: &Node) -> Result<Vec<Option<usize>>> {
    let schema = &operator.schema;
    let keywords: Vec<&str> = node
        .inputs
        .iter()
        .map(|input| input.name.as_str())
        .collect();
    let binding = bind_arguments(schema, 0, &keywords, |_, _| false);
    if let Some(error) = binding.error {
        return Err(ExportError::Unsupported(format!(
            "arguments do not fit {schema}: {error}"
        )));
    }
    binding
        .sources
        .iter()
        .map(|source| match source {
            ArgumentSource::Keyword(index) => Ok(Some(*index)),
            ArgumentSource::Default => Ok(None),
            other => Err(ExportError::Unsupported(format!(
                "unexpected binding {other:?}"
            ))),
        })
        .collect()
}

/// Runs `graph` on its inputs (in `graph.inputs` order) and returns its outputs.
pub fn run_graph(graph: &Graph, inputs: Vec<IValue>) -> Result<Vec<IValue>> {
    run_graph_at_depth(graph, inputs, 0)
}

pub(crate) fn run_graph_at_depth(
    graph: &Graph,
    inputs: Vec<IValue>,
    depth: usize,
) -> Result<Vec<IValue>> {
    let mut peak_live_values = 0;
    run_graph_counting(graph, inputs, depth, &mut peak_live_values)
}

/// Runs `graph` as [`run_graph_at_depth`] does and raises `peak_live_values` to the most
/// values its environment held at once.
fn run_graph_counting(
    graph: &Graph,
    inputs: Vec<IValue>,
    depth: usize,
    peak_live_values: &mut usize,
) -> Result<Vec<IValue>> {
    if depth > 32 {
        return Err(ExportError::Unsupported(
            "subgraphs nested more than 32 deep".into(),
        ));
    }
    if inputs.len() != graph.inputs.len() {
        return Err(ExportError::Schema {
            path: "graph.inputs".into(),
            message: format!(
                "the graph takes {} inputs but was given {}",
                graph.inputs.len(),
                inputs.len()
            ),
        });
    }
    let mut environment: Environment = HashMap::with_capacity(graph.nodes.len() + inputs.len());
    for (argument, value) in graph.inputs.iter().zip(inputs) {
        if let Some(name) = argument.name() {
            environment.insert(name.to_string(), value);
        }
    }
    let dead_after = graph
        .values_dead_after
        .get_or_init(|| values_dead_after_each_node(graph));
    for (node, dead) in graph.nodes.iter().zip(dead_after) {
        run_node(node, &mut environment, depth).map_err(|error| match error {
            ExportError::Node { .. } => error,
            other => ExportError::Node {
                node: node_label(node),
                target: node.target.clone(),
                source: Box::new(other),
            },
        })?;
        *peak_live_values = (*peak_live_values).max(environment.len());
        // Drop each value after its last reader, so a tensor's memory goes back as soon as
        // nothing needs it (a deep network then holds a few activations, not all of them).
        for name in dead {
            environment.remove(name);
        }
    }
    graph
        .outputs
        .iter()
        .map(|output| argument_value(output, None, &environment))
        .collect()
}

/// For each node, the names of the values that no later node and no graph output reads, so
/// the runner can drop them once that node has run. A value nothing reads is dropped right
/// after the node that makes it. Graph inputs are included: the caller's own handles keep
/// the inputs it still needs.
fn values_dead_after_each_node(graph: &Graph) -> Vec<Vec<String>> {
    let mut last_reader: HashMap<&str, usize> = HashMap::new();
    let mut kept: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for output in &graph.outputs {
        output.for_each_referenced_name(&mut |name| {
            kept.insert(name);
        });
    }
    let mut dead_after = vec![Vec::new(); graph.nodes.len()];
    for (index, node) in graph.nodes.iter().enumerate() {
        for input in &node.inputs {
            input.arg.for_each_referenced_name(&mut |name| {
                last_reader.insert(name, index);
            });
        }
        for output in &node.outputs {
            output.for_each_referenced_name(&mut |name| {
                last_reader.entry(name).or_insert(index);
            });
        }
    }
    for (name, index) in last_reader {
        if !kept.contains(name) {
            dead_after[index].push(name.to_string());
        }
    }
    dead_after
}

fn run_node(node: &Node, environment: &mut Environment, depth: usize) -> Result<()> {
    match classify(&node.target) {
        Target::Operator(full_name) => {
            if is_builtin_symbolic_operator(&full_name) {
                let values = node
                    .inputs
                    .iter()
                    .map(|input| argument_value(&input.arg, None, environment))
                    .collect::<Result<Vec<_>>>()?;
                let names: Vec<&str> = node
                    .inputs
                    .iter()
                    .map(|input| input.name.as_str())
                    .collect();
                let result = builtin_symbolic_operator(&full_name, &names, &values)?;
                return bind_outputs(node, vec![result], environment);
            }
            let operator = find_operator(&full_name).ok_or_else(|| {
                ExportError::Unsupported(format!("operator {full_name} is not registered"))
            })?;
            let sources = bind_node(operator, node)?;
            let mut stack = Vec::with_capacity(sources.len());
            for (formal, source) in operator.schema.arguments.iter().zip(&sources) {
                let value = match source {
                    Some(index) => wrap_number_for_tensor(
                        argument_value(&node.inputs[*index].arg, Some(&formal.ty), environment)?,
                        &formal.ty,
                    ),
                    None => match &formal.default {
                        Some(default) => default_value(default, &formal.ty)?,
                        None => {
                            return Err(ExportError::Unsupported(format!(
                                "no value for '{}'",
                                formal.name
                            )))
                        }
                    },
                };
                stack.push(value);
            }
            (operator.kernel)(&mut stack)?;
            bind_outputs(node, stack, environment)
        }
        Target::Symbolic(name) => {
            let values = node
                .inputs
                .iter()
                .map(|input| argument_value(&input.arg, None, environment))
                .collect::<Result<Vec<_>>>()?;
            let result = symbolic_operation(&name, &values)?;
            bind_outputs(node, vec![result], environment)
        }
        Target::HigherOrder(name) => {
            let results = higher_order(&name, node, environment, depth)?;
            bind_outputs(node, results, environment)
        }
        Target::Unknown => Err(ExportError::Unsupported(format!(
            "call target '{}'",
            node.target
        ))),
    }
}

/// A number passed where the schema takes a tensor (`aten.mul.Tensor(x, 2)`, or a symbolic
/// size) becomes a wrapped-number tensor, as PyTorch's argument parser makes it.
pub(crate) fn wrap_number_for_tensor(value: IValue, formal: &Type) -> IValue {
    let takes_tensor = match formal {
        Type::Tensor => true,
        Type::Optional(inner) => matches!(inner.as_ref(), Type::Tensor),
        _ => false,
    };
    let scalar = match &value {
        IValue::Int(v) => Scalar::Int(*v),
        IValue::Double(v) => Scalar::Float(*v),
        IValue::Bool(v) => Scalar::Bool(*v),
        _ => return value,
    };
    if takes_tensor {
        IValue::from(Tensor::wrapped_scalar(scalar))
    } else {
        value
    }
}

/// Binds an operator's results to the node's output names.
fn bind_outputs(node: &Node, results: Vec<IValue>, environment: &mut Environment) -> Result<()> {
    // A node whose result nobody may use (an assertion, `-> ()`) declares no outputs.
    if node.outputs.is_empty() {
        return Ok(());
    }
    if node.outputs.len() == results.len() {
        for (output, value) in node.outputs.iter().zip(results) {
            bind_output(output, value, environment)?;
        }
        return Ok(());
    }
    // One tuple or list result for several outputs (a higher-order operator's).
    if let [single] = results.as_slice() {
        let items = match single {
            IValue::Tuple(tuple) => Some(tuple.items.clone()),
            IValue::List(list) => Some(list.to_vec()),
            _ => None,
        };
        if let Some(items) = items.filter(|items| items.len() == node.outputs.len()) {
            for (output, value) in node.outputs.iter().zip(items) {
                bind_output(output, value, environment)?;
            }
            return Ok(());
        }
    }
    Err(ExportError::Schema {
        path: format!("node {}", node_label(node)),
        message: format!(
            "{} outputs declared but the operator returned {}",
            node.outputs.len(),
            results.len()
        ),
    })
}

fn bind_output(output: &Argument, value: IValue, environment: &mut Environment) -> Result<()> {
    match output {
        Argument::Tensors(names) => {
            let items = match &value {
                IValue::List(list) => list.to_vec(),
                IValue::Tuple(tuple) => tuple.items.clone(),
                other => {
                    return Err(ExportError::Unsupported(format!(
                        "a list output got {}",
                        other.tag_name()
                    )))
                }
            };
            if items.len() != names.len() {
                return Err(ExportError::Schema {
                    path: "node.outputs".into(),
                    message: format!(
                        "{} names for a list of {} tensors",
                        names.len(),
                        items.len()
                    ),
                });
            }
            for (name, item) in names.iter().zip(items) {
                environment.insert(name.clone(), item);
            }
        }
        Argument::None => {}
        other => {
            if let Some(name) = other.name() {
                environment.insert(name.to_string(), value);
            }
        }
    }
    Ok(())
}

/// The value of a serialized argument; `formal` is the schema type it fills, when known (an
/// int literal for a `float` formal becomes a float, as Python would pass it).
pub(crate) fn argument_value(
    argument: &Argument,
    formal: Option<&Type>,
    environment: &Environment,
) -> Result<IValue> {
    let element = match formal {
        Some(Type::Optional(inner)) => Some(inner.as_ref()),
        other => other,
    };
    let tensor_list = |names: &[String]| -> Result<IValue> {
        let items = names
            .iter()
            .map(|name| lookup(environment, name))
            .collect::<Result<Vec<_>>>()?;
        Ok(IValue::list(Type::Tensor, items))
    };
    Ok(match argument {
        Argument::None => IValue::None,
        Argument::Tensor(name) | Argument::Token(name) => lookup(environment, name)?,
        Argument::Tensors(names) => tensor_list(names)?,
        Argument::Int(value) => match element {
            Some(Type::Float) => IValue::Double(*value as f64),
            _ => IValue::Int(*value),
        },
        Argument::Ints(values) => IValue::int_list(values),
        Argument::Float(value) => IValue::Double(*value),
        Argument::Floats(values) => IValue::list(
            Type::Float,
            values.iter().map(|v| IValue::Double(*v)).collect(),
        ),
        Argument::String(text) => IValue::string(text),
        Argument::Strings(texts) => {
            IValue::list(Type::Str, texts.iter().map(|t| IValue::string(t)).collect())
        }
        Argument::Bool(value) => IValue::Bool(*value),
        Argument::Bools(values) => IValue::list(
            Type::Bool,
            values.iter().map(|v| IValue::Bool(*v)).collect(),
        ),
        Argument::SymInt(symbol) => sym_value(symbol, environment, |v| IValue::Int(*v))?,
        Argument::SymBool(symbol) => sym_value(symbol, environment, |v| IValue::Bool(*v))?,
        Argument::SymFloat(symbol) => sym_value(symbol, environment, |v| IValue::Double(*v))?,
        Argument::SymInts(symbols) => {
            sym_list(symbols, Type::Int, environment, |v| IValue::Int(*v))?
        }
        Argument::SymBools(symbols) => {
            sym_list(symbols, Type::Bool, environment, |v| IValue::Bool(*v))?
        }
        Argument::SymFloats(symbols) => {
            sym_list(symbols, Type::Float, environment, |v| IValue::Double(*v))?
        }
        Argument::ScalarType(code) => {
            let dtype = scalar_type_to_dtype(*code).ok_or_else(|| {
                ExportError::Unsupported(format!("dtype {}", scalar_type_name(*code)))
            })?;
            IValue::Int(dtype.scalar_type_index())
        }
        // c10's MemoryFormat: Contiguous 0, Preserve 1, ChannelsLast 2, ChannelsLast3d 3.
        Argument::MemoryFormat(code) => IValue::Int(match code {
            1 => 0,
            2 => 2,
            3 => 3,
            4 => 1,
            other => return Err(ExportError::Unsupported(format!("memory format {other}"))),
        }),
        Argument::Layout(code) => match code {
            7 => IValue::Int(0),
            other => return Err(ExportError::Unsupported(format!("layout {other}"))),
        },
        Argument::Device(device) => {
            let text = match device.index {
                Some(index) => format!("{}:{index}", device.device_type),
                None => device.device_type.clone(),
            };
            IValue::from(Device::parse(&text)?)
        }
        Argument::OptionalTensors(items) => IValue::list(
            Type::Optional(Box::new(Type::Tensor)),
            items
                .iter()
                .map(|item| match item {
                    OptionalTensorArgument::Tensor(name) => lookup(environment, name),
                    OptionalTensorArgument::None => Ok(IValue::None),
                })
                .collect::<Result<_>>()?,
        ),
        Argument::OptionalTensor(item) => match item {
            OptionalTensorArgument::Tensor(name) => lookup(environment, name)?,
            OptionalTensorArgument::None => IValue::None,
        },
        Argument::IntLists(lists) => IValue::list(
            Type::List(Box::new(Type::Int)),
            lists.iter().map(|list| IValue::int_list(list)).collect(),
        ),
        Argument::FloatLists(lists) => IValue::list(
            Type::List(Box::new(Type::Float)),
            lists
                .iter()
                .map(|list| {
                    IValue::list(
                        Type::Float,
                        list.iter().map(|v| IValue::Double(*v)).collect(),
                    )
                })
                .collect(),
        ),
        Argument::NestedTensors(lists) => IValue::list(
            Type::List(Box::new(Type::Tensor)),
            lists
                .iter()
                .map(|names| tensor_list(names))
                .collect::<Result<_>>()?,
        ),
        Argument::Graph(_)
        | Argument::CustomObj(_)
        | Argument::Operator(_)
        | Argument::Complex { .. }
        | Argument::StringToArgument(_) => {
            return Err(ExportError::Unsupported(format!(
                "argument {argument:?} as an operator input"
            )))
        }
    })
}

fn sym_value<T>(
    symbol: &SymArgument<T>,
    environment: &Environment,
    literal: impl Fn(&T) -> IValue,
) -> Result<IValue> {
    match symbol {
        SymArgument::Name(name) => lookup(environment, name),
        SymArgument::Literal(value) => Ok(literal(value)),
    }
}

/// A list argument of symbolic values (`SymInt[]` and its kin), each looked up or literal.
fn sym_list<T>(
    symbols: &[SymArgument<T>],
    element_type: Type,
    environment: &Environment,
    literal: impl Fn(&T) -> IValue,
) -> Result<IValue> {
    let items = symbols
        .iter()
        .map(|symbol| sym_value(symbol, environment, &literal))
        .collect::<Result<_>>()?;
    Ok(IValue::list(element_type, items))
}

/// ATen's symbolic-shape operators, which work on sizes rather than data: run here.
pub(crate) fn is_builtin_symbolic_operator(full_name: &str) -> bool {
    matches!(
        full_name,
        "aten::sym_size.int"
            | "aten::sym_size"
            | "aten::sym_numel"
            | "aten::sym_stride.int"
            | "aten::sym_storage_offset"
            | "aten::_assert_scalar"
            | "aten::_assert_tensor_metadata"
            | "aten::sym_constrain_range_for_size"
            | "aten::sym_constrain_range"
            | "aten::_assert_async.msg"
    )
}

fn builtin_symbolic_operator(full_name: &str, names: &[&str], values: &[IValue]) -> Result<IValue> {
    let get = |name: &str, position: usize| -> Result<&IValue> {
        names
            .iter()
            .position(|n| *n == name)
            .and_then(|index| values.get(index))
            .or_else(|| {
                values
                    .get(position)
                    .filter(|_| names.iter().all(|n| n.is_empty()))
            })
            .ok_or_else(|| ExportError::Unsupported(format!("{full_name} without '{name}'")))
    };
    let dim_of = |tensor: &Tensor, dim: i64| -> Result<usize> {
        let rank = tensor.dim() as i64;
        let wrapped = if dim < 0 { dim + rank } else { dim };
        usize::try_from(wrapped)
            .ok()
            .filter(|d| *d < tensor.dim())
            .ok_or_else(|| {
                ExportError::Unsupported(format!("dimension {dim} out of range for rank {rank}"))
            })
    };
    Ok(match full_name {
        "aten::sym_size.int" => {
            let tensor = get("self", 0)?.to_tensor()?;
            let dim = dim_of(&tensor, get("dim", 1)?.to_int()?)?;
            IValue::Int(tensor.sizes()[dim] as i64)
        }
        "aten::sym_size" => {
            let tensor = get("self", 0)?.to_tensor()?;
            IValue::int_list(&tensor.sizes().iter().map(|s| *s as i64).collect::<Vec<_>>())
        }
        "aten::sym_numel" => IValue::Int(get("self", 0)?.to_tensor()?.numel() as i64),
        "aten::sym_stride.int" => {
            let tensor = get("self", 0)?.to_tensor()?;
            let dim = dim_of(&tensor, get("dim", 1)?.to_int()?)?;
            IValue::Int(tensor.strides()[dim] as i64)
        }
        "aten::sym_storage_offset" => {
            IValue::Int(get("self", 0)?.to_tensor()?.storage_offset() as i64)
        }
        "aten::_assert_scalar" | "aten::_assert_async.msg" => {
            let condition = get("self", 0)?;
            let holds = match condition {
                IValue::Bool(value) => *value,
                IValue::Int(value) => *value != 0,
                IValue::Double(value) => *value != 0.0,
                IValue::Tensor(_) => condition
                    .to_tensor()?
                    .item()
                    .map(|s| s.to_bool())
                    .unwrap_or(false),
                _ => false,
            };
            if !holds {
                let message = get("assert_msg", 1)
                    .ok()
                    .and_then(|m| m.to_str().ok().map(str::to_string));
                return Err(ExportError::Input {
                    input: "runtime assertion".into(),
                    message: message.unwrap_or_else(|| "assertion failed".into()),
                });
            }
            IValue::None
        }
        "aten::sym_constrain_range_for_size" | "aten::sym_constrain_range" => {
            let value = get("size", 0)?.to_int()?;
            if let Ok(minimum) = get("min", 1).and_then(|m| Ok(m.to_optional_int()?)) {
                if minimum.is_some_and(|minimum| value < minimum) {
                    return Err(input_error(
                        "data-dependent size",
                        format!("{value} is below its range"),
                    ));
                }
            }
            if let Ok(maximum) = get("max", 2).and_then(|m| Ok(m.to_optional_int()?)) {
                if maximum.is_some_and(|maximum| value > maximum) {
                    return Err(input_error(
                        "data-dependent size",
                        format!("{value} is above its range"),
                    ));
                }
            }
            IValue::None
        }
        // The metadata assertion guards a value the export already checked on entry.
        _ => IValue::None,
    })
}

/// `operator.*`, `math.*` and `torch.sym_*` on ints, floats and bools.
fn symbolic_operation(name: &str, values: &[IValue]) -> Result<IValue> {
    let number = |value: &IValue| -> Result<SymbolicValue> {
        Ok(match value {
            IValue::Int(v) => SymbolicValue::Int(*v),
            IValue::Double(v) => SymbolicValue::Float(*v),
            IValue::Bool(v) => SymbolicValue::Bool(*v),
            IValue::Tensor(_) => match value.to_tensor()?.item()? {
                scalar if scalar.is_floating_point() => SymbolicValue::Float(scalar.to_f64()),
                scalar if scalar.is_boolean() => SymbolicValue::Bool(scalar.to_bool()),
                scalar => SymbolicValue::Int(scalar.to_i64()),
            },
            other => {
                return Err(ExportError::Unsupported(format!(
                    "{name} of a {}",
                    other.tag_name()
                )))
            }
        })
    };
    let to_value = |value: SymbolicValue| match value {
        SymbolicValue::Int(v) => IValue::Int(v),
        SymbolicValue::Float(v) => IValue::Double(v),
        SymbolicValue::Bool(v) => IValue::Bool(v),
    };
    let numbers = values.iter().map(number).collect::<Result<Vec<_>>>()?;
    let binary = |operator: &str| -> Result<IValue> {
        let [a, b] = numbers.as_slice() else {
            return Err(ExportError::Unsupported(format!(
                "{name} takes two operands"
            )));
        };
        let expression = crate::symbolic::Expression::Binary(
            match operator {
                "+" => crate::symbolic::BinaryOperator::Add,
                "-" => crate::symbolic::BinaryOperator::Subtract,
                "*" => crate::symbolic::BinaryOperator::Multiply,
                "/" => crate::symbolic::BinaryOperator::TrueDivide,
                "//" => crate::symbolic::BinaryOperator::FloorDivide,
                "%" => crate::symbolic::BinaryOperator::Modulo,
                "**" => crate::symbolic::BinaryOperator::Power,
                "==" => crate::symbolic::BinaryOperator::Equal,
                "!=" => crate::symbolic::BinaryOperator::NotEqual,
                "<" => crate::symbolic::BinaryOperator::Less,
                "<=" => crate::symbolic::BinaryOperator::LessEqual,
                ">" => crate::symbolic::BinaryOperator::Greater,
                ">=" => crate::symbolic::BinaryOperator::GreaterEqual,
                "and" => crate::symbolic::BinaryOperator::And,
                _ => crate::symbolic::BinaryOperator::Or,
            },
            Box::new(literal(*a)),
            Box::new(literal(*b)),
        );
        match expression.evaluate(&HashMap::new())? {
            Some(value) => Ok(to_value(value)),
            None => Err(ExportError::Unsupported(name.to_string())),
        }
    };
    let single = || -> Result<SymbolicValue> {
        match numbers.as_slice() {
            [a] => Ok(*a),
            _ => Err(ExportError::Unsupported(format!(
                "{name} takes one operand"
            ))),
        }
    };
    let as_f64 = |value: SymbolicValue| match value {
        SymbolicValue::Int(v) => v as f64,
        SymbolicValue::Float(v) => v,
        SymbolicValue::Bool(v) => f64::from(u8::from(v)),
    };
    let to_int = |value: f64| -> Result<IValue> {
        if value.is_finite() && value.abs() < 9.2e18 {
            Ok(IValue::Int(value as i64))
        } else {
            Err(ExportError::Unsupported(format!("{name} of {value}")))
        }
    };
    match name {
        "add" => binary("+"),
        "sub" => binary("-"),
        "mul" => binary("*"),
        "truediv" => binary("/"),
        "floordiv" => binary("//"),
        "mod" => binary("%"),
        "pow" => binary("**"),
        "eq" => binary("=="),
        "ne" => binary("!="),
        "lt" => binary("<"),
        "le" => binary("<="),
        "gt" => binary(">"),
        "ge" => binary(">="),
        "and_" => binary("and"),
        "or_" => binary("or"),
        "neg" => Ok(match single()? {
            SymbolicValue::Int(v) => IValue::Int(
                v.checked_neg()
                    .ok_or_else(|| ExportError::Unsupported("overflow".into()))?,
            ),
            other => IValue::Double(-as_f64(other)),
        }),
        "not_" | "sym_not" => Ok(IValue::Bool(as_f64(single()?) == 0.0)),
        "sym_max" | "sym_min" => {
            let [a, b] = numbers.as_slice() else {
                return Err(ExportError::Unsupported(format!(
                    "{name} takes two operands"
                )));
            };
            let pick_first = if name == "sym_max" {
                as_f64(*a) >= as_f64(*b)
            } else {
                as_f64(*a) <= as_f64(*b)
            };
            Ok(to_value(if pick_first { *a } else { *b }))
        }
        "sym_float" => Ok(IValue::Double(as_f64(single()?))),
        "sym_int" => to_int(as_f64(single()?).trunc()),
        "sym_sqrt" | "_sym_sqrt" | "math.sqrt" => Ok(IValue::Double(as_f64(single()?).sqrt())),
        "math.ceil" => to_int(as_f64(single()?).ceil()),
        "math.floor" => to_int(as_f64(single()?).floor()),
        "math.trunc" => to_int(as_f64(single()?).trunc()),
        "sym_ite" => match values {
            [condition, a, b] => Ok(if condition.to_bool()? {
                a.clone()
            } else {
                b.clone()
            }),
            _ => Err(ExportError::Unsupported(
                "sym_ite takes three operands".into(),
            )),
        },
        other => Err(ExportError::Unsupported(format!(
            "symbolic operation '{other}'"
        ))),
    }
}

fn literal(value: SymbolicValue) -> crate::symbolic::Expression {
    match value {
        SymbolicValue::Int(v) => crate::symbolic::Expression::Integer(v),
        SymbolicValue::Float(v) => crate::symbolic::Expression::Float(v),
        SymbolicValue::Bool(v) => crate::symbolic::Expression::Boolean(v),
    }
}

/// `cond`, `while_loop` and `map_impl`.
fn higher_order(
    name: &str,
    node: &Node,
    environment: &Environment,
    depth: usize,
) -> Result<Vec<IValue>> {
    let positional: Vec<&Argument> = node.inputs.iter().map(|input| &input.arg).collect();
    let subgraph = |position: usize| -> Result<&Graph> {
        match positional.get(position) {
            Some(Argument::Graph(graph)) => Ok(&graph.graph),
            _ => Err(missing("subgraph argument", &format!("{name} #{position}"))),
        }
    };
    let values = |position: usize| -> Result<Vec<IValue>> {
        match positional.get(position) {
            None => Ok(Vec::new()),
            Some(argument) => match argument_value(argument, None, environment)? {
                IValue::List(list) => Ok(list.to_vec()),
                IValue::Tuple(tuple) => Ok(tuple.items.clone()),
                single => Ok(vec![single]),
            },
        }
    };
    match name {
        "cond" => {
            let predicate = match positional.first() {
                Some(argument) => argument_value(argument, None, environment)?,
                None => return Err(missing("cond predicate", &node_label(node))),
            };
            let holds = match &predicate {
                IValue::Bool(value) => *value,
                IValue::Int(value) => *value != 0,
                IValue::Tensor(_) => predicate.to_tensor()?.item()?.to_bool(),
                other => {
                    return Err(ExportError::Unsupported(format!(
                        "cond on a {}",
                        other.tag_name()
                    )))
                }
            };
            let branch = if holds { subgraph(1)? } else { subgraph(2)? };
            run_graph_at_depth(branch, values(3)?, depth + 1)
        }
        "while_loop" => {
            let (condition, body) = (subgraph(0)?, subgraph(1)?);
            let mut carried = values(2)?;
            let additional = values(3)?;
            for _ in 0..MAX_WHILE_LOOP_ITERATIONS {
                let mut inputs = carried.clone();
                inputs.extend(additional.iter().cloned());
                let result = run_graph_at_depth(condition, inputs, depth + 1)?;
                let holds = match result.first() {
                    Some(IValue::Bool(value)) => *value,
                    Some(value @ IValue::Tensor(_)) => value.to_tensor()?.item()?.to_bool(),
                    _ => {
                        return Err(ExportError::Unsupported(
                            "while_loop condition result".into(),
                        ))
                    }
                };
                if !holds {
                    return Ok(carried);
                }
                let mut inputs = carried;
                inputs.extend(additional.iter().cloned());
                carried = run_graph_at_depth(body, inputs, depth + 1)?;
            }
            Err(ExportError::Unsupported(format!(
                "while_loop ran more than {MAX_WHILE_LOOP_ITERATIONS} iterations"
            )))
        }
        "map_impl" => {
            let body = subgraph(0)?;
            let mapped = values(1)?;
            let additional = values(2)?;
            let Some(first) = mapped.first() else {
                return Err(ExportError::Unsupported("map over no tensors".into()));
            };
            let count = first.to_tensor()?.sizes().first().copied().unwrap_or(0);
            let select = OperatorRegistry::global()
                .lookup("aten::select.int")
                .ok_or_else(|| ExportError::Unsupported("aten::select.int".into()))?;
            let stack_operator = OperatorRegistry::global()
                .lookup("aten::stack")
                .ok_or_else(|| ExportError::Unsupported("aten::stack".into()))?;
            let mut per_output: Vec<Vec<IValue>> = Vec::new();
            for index in 0..count {
                let mut inputs = Vec::new();
                for tensor in &mapped {
                    let mut stack = vec![tensor.clone(), IValue::Int(0), IValue::Int(index as i64)];
                    (select.kernel)(&mut stack)?;
                    inputs.push(
                        stack
                            .pop()
                            .ok_or_else(|| ExportError::Unsupported("select".into()))?,
                    );
                }
                inputs.extend(additional.iter().cloned());
                let outputs = run_graph_at_depth(body, inputs, depth + 1)?;
                per_output.resize(outputs.len(), Vec::new());
                for (slot, value) in per_output.iter_mut().zip(outputs) {
                    slot.push(value);
                }
            }
            per_output
                .into_iter()
                .map(|items| {
                    let mut stack = vec![IValue::list(Type::Tensor, items), IValue::Int(0)];
                    (stack_operator.kernel)(&mut stack)?;
                    stack
                        .pop()
                        .ok_or_else(|| ExportError::Unsupported("stack".into()))
                })
                .collect()
        }
        "scan" => scan(&subgraph, &values, depth),
        "invoke_subgraph" => crate::higher_order::invoke_subgraph(node, environment, depth),
        "with_effects" => crate::higher_order::with_effects(node, environment),
        "auto_functionalized" => crate::higher_order::auto_functionalized(node, environment),
        "auto_functionalized_v2" => crate::higher_order::auto_functionalized_v2(node, environment),
        other => Err(ExportError::Unsupported(format!(
            "higher-order operator '{other}'"
        ))),
    }
}

/// Wraps an owned list of values as a tuple value (used by callers building inputs).
pub fn tuple_of(items: Vec<IValue>) -> IValue {
    IValue::Tuple(TupleValue::new(items))
}

/// A list of tensors as a value.
pub fn tensor_list(items: Vec<Tensor>) -> IValue {
    IValue::List(ListValue::new(
        Type::Tensor,
        items.into_iter().map(IValue::from).collect(),
    ))
}

/// `scan(combine, init, xs, additional)`: the carries thread through the steps over xs'
/// first dimension; each step's other outputs are stacked along a new first dimension.
fn scan<'a>(
    subgraph: &dyn Fn(usize) -> Result<&'a Graph>,
    values: &dyn Fn(usize) -> Result<Vec<IValue>>,
    depth: usize,
) -> Result<Vec<IValue>> {
    let combine = subgraph(0)?;
    let mut carries = values(1)?;
    let sequences = values(2)?;
    let additional = values(3)?;
    let Some(first) = sequences.first() else {
        return Err(ExportError::Unsupported("scan over no tensors".into()));
    };
    let length = first.to_tensor()?.sizes().first().copied().unwrap_or(0);
    let select = find_operator("aten::select.int")
        .ok_or_else(|| ExportError::Unsupported("aten::select.int".into()))?;
    let stack_operator = find_operator("aten::stack")
        .ok_or_else(|| ExportError::Unsupported("aten::stack".into()))?;
    let mut per_output: Vec<Vec<IValue>> = Vec::new();
    for index in 0..length {
        let mut inputs = carries.clone();
        for tensor in &sequences {
            let mut stack = vec![tensor.clone(), IValue::Int(0), IValue::Int(index as i64)];
            (select.kernel)(&mut stack)?;
            inputs.push(
                stack
                    .pop()
                    .ok_or_else(|| ExportError::Unsupported("select".into()))?,
            );
        }
        inputs.extend(additional.iter().cloned());
        let mut outputs = run_graph_at_depth(combine, inputs, depth + 1)?;
        if outputs.len() < carries.len() {
            return Err(ExportError::Unsupported(
                "scan step returned fewer values than its carries".into(),
            ));
        }
        let step_outputs = outputs.split_off(carries.len());
        carries = outputs;
        per_output.resize(step_outputs.len(), Vec::new());
        for (slot, value) in per_output.iter_mut().zip(step_outputs) {
            slot.push(value);
        }
    }
    let mut results = carries;
    for items in per_output {
        let mut stack = vec![IValue::list(Type::Tensor, items), IValue::Int(0)];
        (stack_operator.kernel)(&mut stack)?;
        results.push(
            stack
                .pop()
                .ok_or_else(|| ExportError::Unsupported("stack".into()))?,
        );
    }
    Ok(results)
}
