//! A graph builder: makes an `ExportedProgram` with its state (parameters, buffers,
//! constants) from Rust, ready for [`crate::save_program`]. Calls name their operator and
//! their arguments by the runtime registry's schema, which checks the argument names and
//! fills in each argument's kind; each call runs on example values as it is added, so every
//! value gets its tensor metadata, as `torch.export` records it from its fake run.

use crate::archive::{LoadedProgram, SampleInputs};
use crate::error::{ExportError, Result};
use crate::fallback::find_operator;
use crate::model::{
    Argument, ArgumentKind, ExportedProgram, Graph, GraphModule, GraphSignature, InputSpec,
    ModuleCallEntry, ModuleCallSignature, NamedArgument, Node, OutputSpec, SchemaVersion,
    TensorMeta,
};
use crate::run::run_graph;
use crate::writer::payload::concrete_tensor_meta;
use ferrojit_ir::Type;
use ferrojit_runtime::IValue;
use ferrojit_tensor::Tensor;
use std::collections::{BTreeMap, BTreeSet};

/// The export schema version ferrojit writes (torch 2.15's).
pub const WRITTEN_SCHEMA_VERSION: SchemaVersion = SchemaVersion {
    major: 8,
    minor: 20,
};

/// The ATen opset version torch 2.15 records.
pub const ATEN_OPSET_VERSION: i64 = 10;

/// The torch version a built program says it was made for.
pub const BUILT_FOR_TORCH_VERSION: &str = "2.15.0";

/// A value of the graph being built: a placeholder or a call's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Value {
    name: String,
}

impl Value {
    /// The graph's name for the value.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The value as a tensor argument of a call.
    pub fn arg(&self) -> Argument {
        Argument::Tensor(self.name.clone())
    }
}

/// What a placeholder stands for.
enum Placeholder {
    Parameter(String),
    Buffer(String, bool),
    Constant(String),
    User,
}

/// Builds one program; see the module documentation.
pub struct ProgramBuilder {
    placeholders: Vec<(String, Placeholder)>,
    nodes: Vec<Node>,
    tensor_values: BTreeMap<String, TensorMeta>,
    /// Each value's example: the weights themselves, the user's example inputs, and what
    /// each call gave on them.
    examples: BTreeMap<String, IValue>,
    names: BTreeSet<String>,
    state_dict: BTreeMap<String, Tensor>,
    constants: BTreeMap<String, Tensor>,
    outputs: Vec<OutputSpec>,
    user_input_examples: Vec<IValue>,
}

impl Default for ProgramBuilder {
    fn default() -> Self {
        ProgramBuilder::new()
    }
}

/// A state name made into a graph name as torch.export makes it: `fc1.weight` with prefix
/// `p_` is `p_fc1_weight`.
fn placeholder_name(prefix: &str, fqn: &str) -> String {
    let mut name = String::from(prefix);
    for character in fqn.chars() {
        name.push(if character.is_ascii_alphanumeric() {
            character
        } else {
            '_'
        });
    }
    name
}

/// `aten::add.Tensor`, `aten::relu` or `torch.ops.aten.add.Tensor` as the registry's name
/// (`aten::add.Tensor`, `aten::relu`) and the target the schema writes
/// (`torch.ops.aten.add.Tensor`, `torch.ops.aten.relu.default`).
fn operator_names(target: &str) -> Result<(String, String)> {
    let bad = || {
        ExportError::Unsupported(format!(
        "'{target}' is not an operator name (write it as aten::add.Tensor or torch.ops.aten.add.Tensor)"
    ))
    };
    let (namespace, rest) = match target.strip_prefix("torch.ops.") {
        Some(rest) => rest.split_once('.').ok_or_else(bad)?,
        None => target.split_once("::").ok_or_else(bad)?,
    };
    let (name, overload) = match rest.split_once('.') {
        Some((name, "default")) => (name, ""),
        Some((name, overload)) => (name, overload),
        None => (rest, ""),
    };
    let valid = |part: &str| {
        !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    if !valid(namespace) || !valid(name) || !(overload.is_empty() || valid(overload)) {
        return Err(bad());
    }
    let registry_name = if overload.is_empty() {
        format!("{namespace}::{name}")
    } else {
        format!("{namespace}::{name}.{overload}")
    };
    let written_overload = if overload.is_empty() {
        "default"
    } else {
        overload
    };
    Ok((
        registry_name,
        format!("torch.ops.{namespace}.{name}.{written_overload}"),
    ))
}

impl ProgramBuilder {
    pub fn new() -> ProgramBuilder {
        ProgramBuilder {
            placeholders: Vec::new(),
            nodes: Vec::new(),
            tensor_values: BTreeMap::new(),
            examples: BTreeMap::new(),
            names: BTreeSet::new(),
            state_dict: BTreeMap::new(),
            constants: BTreeMap::new(),
            outputs: Vec::new(),
            user_input_examples: Vec::new(),
        }
    }

    /// A fresh graph name: `base`, or `base_1`, `base_2`, ... as FX names repeats.
    fn fresh_name(&mut self, base: &str) -> String {
        let mut name = base.to_string();
        let mut count = 0;
        while self.names.contains(&name) {
            count += 1;
            name = format!("{base}_{count}");
        }
        self.names.insert(name.clone());
        name
    }

    fn add_placeholder(
        &mut self,
        name: String,
        kind: Placeholder,
        tensor: Tensor,
        requires_grad: bool,
    ) -> Result<Value> {
        if self.names.contains(&name) {
            return Err(ExportError::Unsupported(format!(
                "the graph already has a value named '{name}'"
            )));
        }
        self.names.insert(name.clone());
        self.tensor_values
            .insert(name.clone(), concrete_tensor_meta(&tensor, requires_grad));
        self.examples.insert(name.clone(), IValue::from(tensor));
        self.placeholders.push((name.clone(), kind));
        Ok(Value { name })
    }

    fn check_state_name(&self, fqn: &str) -> Result<()> {
        let valid = !fqn.is_empty()
            && fqn.split('.').all(|part| {
                !part.is_empty() && part.chars().all(|c| c.is_alphanumeric() || c == '_')
            });
        if !valid {
            return Err(ExportError::Unsupported(format!(
                "'{fqn}' is not a state name (dotted identifiers, like fc1.weight)"
            )));
        }
        if self.state_dict.contains_key(fqn) || self.constants.contains_key(fqn) {
            return Err(ExportError::Unsupported(format!(
                "the program already has state named '{fqn}'"
            )));
        }
        Ok(())
    }

    /// A user input, with the example value the calls run on (and the sample input saved).
    pub fn add_user_input(&mut self, name: &str, example: Tensor) -> Result<Value> {
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_alphanumeric() || c == '_');
        if !valid {
            return Err(ExportError::Unsupported(format!(
                "'{name}' is not an identifier, so it cannot name a user input"
            )));
        }
        self.user_input_examples.push(IValue::from(example.clone()));
        self.add_placeholder(name.to_string(), Placeholder::User, example, false)
    }

    /// A parameter (saved in the state dict, `requires_grad` as `nn.Parameter` has it).
    pub fn add_parameter(&mut self, fqn: &str, tensor: Tensor) -> Result<Value> {
        self.check_state_name(fqn)?;
        self.state_dict.insert(fqn.to_string(), tensor.clone());
        let name = placeholder_name("p_", fqn);
        self.add_placeholder(name, Placeholder::Parameter(fqn.to_string()), tensor, true)
    }

    /// A buffer: persistent ones go in the state dict, the others with the constants.
    pub fn add_buffer(&mut self, fqn: &str, tensor: Tensor, persistent: bool) -> Result<Value> {
        self.check_state_name(fqn)?;
        if persistent {
            self.state_dict.insert(fqn.to_string(), tensor.clone());
        } else {
            self.constants.insert(fqn.to_string(), tensor.clone());
        }
        let name = placeholder_name("b_", fqn);
        let kind = Placeholder::Buffer(fqn.to_string(), persistent);
        self.add_placeholder(name, kind, tensor, false)
    }

    /// A tensor constant (lifted, as torch.export lifts a tensor attribute).
    pub fn add_constant(&mut self, fqn: &str, tensor: Tensor) -> Result<Value> {
        self.check_state_name(fqn)?;
        self.constants.insert(fqn.to_string(), tensor.clone());
        let name = placeholder_name("c_", fqn);
        self.add_placeholder(name, Placeholder::Constant(fqn.to_string()), tensor, false)
    }

    /// Adds a call of `target` (`aten::linear`, `aten::add.Tensor`, or the written form
    /// `torch.ops.aten.add.Tensor`) with arguments named as its schema names them, and
    /// returns its one tensor result. Arguments left out take the schema's defaults.
    pub fn call(&mut self, target: &str, arguments: Vec<(&str, Argument)>) -> Result<Value> {
        let mut results = self.call_returning_several(target, arguments)?;
        if results.len() != 1 {
            return Err(ExportError::Unsupported(format!(
                "{target} returns {} tensors; use call_returning_several",
                results.len()
            )));
        }
        Ok(results.remove(0))
    }

    /// As [`ProgramBuilder::call`], for an operator returning several tensors.
    pub fn call_returning_several(
        &mut self,
        target: &str,
        arguments: Vec<(&str, Argument)>,
    ) -> Result<Vec<Value>> {
        let (registry_name, written_target) = operator_names(target)?;
        let operator = find_operator(&registry_name).ok_or_else(|| {
            ExportError::Unsupported(format!("operator {registry_name} is not registered"))
        })?;
        let schema = &operator.schema;
        // Each given argument must be a formal of the schema; they are written in the
        // schema's order, as torch.export writes them.
        let mut given: BTreeMap<&str, Argument> = BTreeMap::new();
        for (name, argument) in arguments {
            if !schema.arguments.iter().any(|formal| formal.name == name) {
                let formals: Vec<&str> = schema.arguments.iter().map(|f| f.name.as_str()).collect();
                return Err(ExportError::Unsupported(format!(
                    "{registry_name} has no argument '{name}' (it takes {})",
                    formals.join(", ")
                )));
            }
            if given.insert(name, argument).is_some() {
                return Err(ExportError::Unsupported(format!(
                    "argument '{name}' of {registry_name} is given twice"
                )));
            }
        }
        let mut inputs = Vec::new();
        for formal in &schema.arguments {
            match given.remove(formal.name.as_str()) {
                Some(arg) => {
                    let mut missing = None;
                    arg.for_each_referenced_name(&mut |name| {
                        if missing.is_none() && !self.examples.contains_key(name) {
                            missing = Some(name.to_string());
                        }
                    });
                    if let Some(name) = missing {
                        return Err(ExportError::MissingReference {
                            kind: "value",
                            name,
                        });
                    }
                    inputs.push(NamedArgument {
                        name: formal.name.clone(),
                        arg,
                        kind: Some(if formal.kwarg_only {
                            ArgumentKind::Keyword
                        } else {
                            ArgumentKind::Positional
                        }),
                    });
                }
                None if formal.default.is_none() => {
                    return Err(ExportError::Unsupported(format!(
                        "{registry_name} needs argument '{}'",
                        formal.name
                    )))
                }
                None => {}
            }
        }
        let mut result_names = Vec::new();
        let base = schema
            .name
            .rsplit("::")
            .next()
            .unwrap_or(&schema.name)
            .to_string();
        for returned in &schema.returns {
            if !matches!(returned.ty, Type::Tensor) {
                return Err(ExportError::Unsupported(format!(
                    "{registry_name} returns a {}, and the builder makes only tensor results",
                    returned.type_spelling
                )));
            }
            result_names.push(self.fresh_name(&base));
        }
        let node = Node {
            target: written_target,
            inputs,
            outputs: result_names
                .iter()
                .map(|name| Argument::Tensor(name.clone()))
                .collect(),
            metadata: BTreeMap::new(),
            is_hop_single_tensor_return: None,
            name: result_names.first().cloned(),
        };
        let results = self.run_on_examples(&node).inspect_err(|_| {
            for name in &result_names {
                self.names.remove(name);
            }
        })?;
        for (name, value) in result_names.iter().zip(results) {
            let tensor = value.to_tensor().map_err(ExportError::from)?;
            self.tensor_values
                .insert(name.clone(), concrete_tensor_meta(&tensor, false));
            self.examples.insert(name.clone(), value);
        }
        self.nodes.push(node);
        Ok(result_names
            .into_iter()
            .map(|name| Value { name })
            .collect())
    }

    /// Runs one node on the example values of what it reads, in a graph of its own.
    fn run_on_examples(&self, node: &Node) -> Result<Vec<IValue>> {
        let mut read = BTreeSet::new();
        for input in &node.inputs {
            input.arg.for_each_referenced_name(&mut |name| {
                read.insert(name.to_string());
            });
        }
        let graph = Graph {
            inputs: read
                .iter()
                .map(|name| Argument::Tensor(name.clone()))
                .collect(),
            outputs: node.outputs.clone(),
            nodes: vec![node.clone()],
            ..Graph::default()
        };
        let values = read
            .iter()
            .map(|name| self.examples[name].clone())
            .collect();
        run_graph(&graph, values)
    }

    /// The program's user outputs, in order.
    pub fn set_outputs(&mut self, outputs: &[Value]) -> Result<()> {
        for output in outputs {
            if !self.examples.contains_key(&output.name) {
                return Err(ExportError::MissingReference {
                    kind: "value",
                    name: output.name.clone(),
                });
            }
        }
        self.outputs
            .retain(|spec| !matches!(spec, OutputSpec::UserOutput { .. }));
        self.outputs.extend(
            outputs
                .iter()
                .map(|output| OutputSpec::UserOutput { arg: output.arg() }),
        );
        Ok(())
    }

    /// Records that a run leaves `new_value` in buffer `fqn` (a `buffer_mutation` output,
    /// written before the user outputs as torch.export orders them).
    pub fn add_buffer_mutation(&mut self, fqn: &str, new_value: &Value) -> Result<()> {
        let is_buffer = self
            .placeholders
            .iter()
            .any(|(_, kind)| matches!(kind, Placeholder::Buffer(name, _) if name == fqn));
        if !is_buffer {
            return Err(ExportError::MissingReference {
                kind: "buffer",
                name: fqn.to_string(),
            });
        }
        if !self.examples.contains_key(&new_value.name) {
            return Err(ExportError::MissingReference {
                kind: "value",
                name: new_value.name.clone(),
            });
        }
        let mutations = self
            .outputs
            .iter()
            .filter(|spec| matches!(spec, OutputSpec::BufferMutation { .. }))
            .count();
        self.outputs.insert(
            mutations,
            OutputSpec::BufferMutation {
                arg: new_value.name.clone(),
                buffer_name: fqn.to_string(),
            },
        );
        Ok(())
    }

    /// The program named `name`, with its state, and the example user inputs as its sample
    /// inputs. Placeholders are ordered as torch.export orders them: parameters, buffers,
    /// constants, then user inputs.
    pub fn build(self, name: &str) -> Result<(LoadedProgram, SampleInputs)> {
        let user_outputs: Vec<&Argument> = self
            .outputs
            .iter()
            .filter_map(|spec| match spec {
                OutputSpec::UserOutput { arg } => Some(arg),
                _ => None,
            })
            .collect();
        if user_outputs.is_empty() {
            return Err(ExportError::Unsupported(
                "the program has no outputs (call set_outputs)".into(),
            ));
        }
        let rank = |kind: &Placeholder| match kind {
            Placeholder::Parameter(_) => 0,
            Placeholder::Buffer(..) => 1,
            Placeholder::Constant(_) => 2,
            Placeholder::User => 3,
        };
        let mut placeholders: Vec<&(String, Placeholder)> = self.placeholders.iter().collect();
        placeholders.sort_by_key(|(_, kind)| rank(kind));
        let mut input_specs = Vec::new();
        let mut user_inputs = Vec::new();
        for (arg, kind) in &placeholders {
            let arg = arg.clone();
            input_specs.push(match kind {
                Placeholder::Parameter(fqn) => InputSpec::Parameter {
                    arg,
                    parameter_name: fqn.clone(),
                },
                Placeholder::Buffer(fqn, persistent) => InputSpec::Buffer {
                    arg,
                    buffer_name: fqn.clone(),
                    persistent: *persistent,
                },
                Placeholder::Constant(fqn) => InputSpec::TensorConstant {
                    arg,
                    tensor_constant_name: fqn.clone(),
                },
                Placeholder::User => {
                    user_inputs.push(arg.clone());
                    InputSpec::UserInput {
                        arg: Argument::Tensor(arg),
                    }
                }
            });
        }
        let graph_outputs: Vec<Argument> = self
            .outputs
            .iter()
            .map(|spec| match spec {
                OutputSpec::UserOutput { arg } => arg.clone(),
                OutputSpec::BufferMutation { arg, .. } => Argument::Tensor(arg.clone()),
                _ => Argument::None,
            })
            .collect();
        let graph = Graph {
            inputs: placeholders
                .iter()
                .map(|(name, _)| Argument::Tensor(name.clone()))
                .collect(),
            outputs: graph_outputs,
            nodes: self.nodes,
            tensor_values: self.tensor_values,
            ..Graph::default()
        };
        let module_call_graph = vec![ModuleCallEntry {
            fqn: String::new(),
            signature: Some(ModuleCallSignature {
                inputs: Vec::new(),
                outputs: Vec::new(),
                in_spec: inputs_spec(user_inputs.len()),
                out_spec: outputs_spec(user_outputs.len()),
                forward_arg_names: Some(user_inputs),
            }),
        }];
        let program = ExportedProgram {
            graph_module: GraphModule {
                graph,
                signature: GraphSignature {
                    input_specs,
                    output_specs: self.outputs,
                },
                module_call_graph,
                metadata: BTreeMap::new(),
                treespec_namedtuple_fields: BTreeMap::new(),
            },
            opset_version: BTreeMap::from([("aten".to_string(), ATEN_OPSET_VERSION)]),
            range_constraints: BTreeMap::new(),
            schema_version: WRITTEN_SCHEMA_VERSION,
            verifiers: vec!["TRAINING".into()],
            torch_version: BUILT_FOR_TORCH_VERSION.into(),
            guards_code: Vec::new(),
        };
        let loaded = LoadedProgram {
            name: name.to_string(),
            program,
            state_dict: self.state_dict,
            constants: self.constants,
        };
        crate::writer::check_program(&loaded)?;
        Ok((
            loaded,
            SampleInputs {
                args: self.user_input_examples,
                kwargs: Vec::new(),
            },
        ))
    }
}

/// A pytree leaf, in the serialized form (protocol 1) PyTorch's `treespec_dumps` writes.
const LEAF_SPEC: &str = r#"{"type": null, "context": null, "children_spec": []}"#;

fn tuple_spec(children: &[String]) -> String {
    format!(
        r#"{{"type": "builtins.tuple", "context": "null", "children_spec": [{}]}}"#,
        children.join(", ")
    )
}

/// `((x, y, ...), {})`: the spec of positional tensor inputs and no keyword inputs.
fn inputs_spec(count: usize) -> String {
    let args = tuple_spec(&vec![LEAF_SPEC.to_string(); count]);
    let kwargs = r#"{"type": "builtins.dict", "context": "[]", "children_spec": []}"#;
    format!("[1, {}]", tuple_spec(&[args, kwargs.to_string()]))
}

/// One output is a leaf; several are a tuple, as a `forward` returning them gives.
fn outputs_spec(count: usize) -> String {
    if count == 1 {
        format!("[1, {LEAF_SPEC}]")
    } else {
        format!("[1, {}]", tuple_spec(&vec![LEAF_SPEC.to_string(); count]))
    }
}
