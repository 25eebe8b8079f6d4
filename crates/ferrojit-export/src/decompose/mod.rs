//! Lowers an Export IR program to core ATen, as torch 2.15's `ExportedProgram.run_decompositions()`
//! does with its default table (`torch.export.default_decompositions()`).
//!
//! The pass walks the graph in order. An in-place ATen call (`relu_`, `add_`) becomes its
//! functional form, later readers of the mutated value read the result instead, and a
//! mutated buffer or user input gets its `buffer_mutation` / `user_input_mutation` output, as
//! functionalization makes it. Each call whose operator PyTorch's table rewrites is then
//! replaced by the same core ATen calls PyTorch's decomposition makes, in the same order and
//! with the same arguments (one file per family: [`linear_algebra`], [`convolution`],
//! [`normalization`], [`activation`], [`views`], [`reduction`], [`elementwise`],
//! [`arithmetic`], [`pooling`], [`attention`]). Every new node gets the original node's
//! metadata (stack_trace, nn_module_stack, ...) and each new value its `TensorMeta`, found by
//! running the new node on example tensors of the recorded shapes. Last, calls whose results
//! nothing reads are dropped, as PyTorch's dead-code elimination drops them.
//!
//! What is not lowered stays in the program and is listed in the [`DecomposeReport`]: an
//! operator PyTorch decomposes but ferrojit has no rule for, a rule that does not apply
//! (symbolic shapes, batch norm without running statistics, ...), or an in-place write to a
//! view. With [`DecomposeOptions::strict`] any such node is an error naming it instead.

pub mod activation;
pub mod arithmetic;
pub mod attention;
pub mod convolution;
pub mod elementwise;
pub(crate) mod emitter;
pub mod linear_algebra;
pub mod normalization;
pub mod pooling;
pub mod reduction;
pub mod views;

use crate::error::{ExportError, Result};
use crate::model::{Argument, ExportedProgram, Graph, InputSpec, Node, OutputSpec};
use emitter::{Emitter, Original};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

/// How the pass treats what it cannot lower.
#[derive(Debug, Clone, Copy, Default)]
pub struct DecomposeOptions {
    /// Refuse the program (an error naming the first node) when any operator that PyTorch's
    /// table decomposes is left in it; otherwise it stays and is reported.
    pub strict: bool,
}

/// What the pass did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DecomposeReport {
    /// Operator target → how many of its calls were rewritten into core ATen.
    pub decomposed: BTreeMap<String, usize>,
    /// In-place operator target → how many of its calls became functional.
    pub functionalized: BTreeMap<String, usize>,
    /// Nodes left as they were that PyTorch would have rewritten: (node name, target, why).
    pub not_lowered: Vec<(String, String, String)>,
    /// Calls dropped because nothing read their results.
    pub removed_unused: usize,
}

impl DecomposeReport {
    /// One line per thing left undone, for the CLI's warnings.
    pub fn warnings(&self) -> Vec<String> {
        self.not_lowered
            .iter()
            .map(|(node, target, why)| format!("node '{node}' ({target}) is not lowered: {why}"))
            .collect()
    }
}

/// One decomposition: given the emitter and the original node, emits the replacement and
/// returns, for each of the node's tensor results in order, the value that replaces it.
type Rule = fn(&mut Emitter, &Original) -> Result<Vec<String>>;

/// The aten overloads PyTorch's default table rewrites (written by the fixture generator
/// from torch 2.15).
fn pytorch_decomposed_operators() -> &'static BTreeSet<&'static str> {
    static SET: OnceLock<BTreeSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| {
        include_str!("pytorch_decomposed_ops.txt")
            .lines()
            .filter(|line| !line.starts_with('#') && !line.is_empty())
            // Size queries return ints, not tensors: torch.export keeps them.
            .filter(|line| !line.starts_with("torch.ops.aten.sym_"))
            .collect()
    })
}

/// Whether PyTorch's default table rewrites calls of `target`.
pub fn pytorch_decomposes(target: &str) -> bool {
    pytorch_decomposed_operators().contains(target)
}

fn rules() -> &'static BTreeMap<&'static str, Rule> {
    static RULES: OnceLock<BTreeMap<&'static str, Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        let mut table: BTreeMap<&'static str, Rule> = BTreeMap::new();
        linear_algebra::register(&mut table);
        convolution::register(&mut table);
        normalization::register(&mut table);
        activation::register(&mut table);
        views::register(&mut table);
        reduction::register(&mut table);
        elementwise::register(&mut table);
        arithmetic::register(&mut table);
        pooling::register(&mut table);
        attention::register(&mut table);
        table
    })
}

/// Targets ferrojit has a decomposition rule for.
pub fn decomposed_targets() -> Vec<&'static str> {
    rules().keys().copied().collect()
}

/// The functional target of an in-place aten target (`torch.ops.aten.relu_.default` →
/// `torch.ops.aten.relu.default`), when the functional overload is registered.
fn functional_form(target: &str) -> Option<String> {
    let rest = target.strip_prefix("torch.ops.aten.")?;
    let (name, overload) = rest.split_once('.')?;
    let functional = name.strip_suffix('_')?;
    if functional.is_empty() || functional.ends_with('_') || name.starts_with("__") {
        return None;
    }
    let candidate = format!("torch.ops.aten.{functional}.{overload}");
    let registry = if overload == "default" {
        format!("aten::{functional}")
    } else {
        format!("aten::{functional}.{overload}")
    };
    crate::fallback::find_operator(&registry).map(|_| candidate)
}

/// Targets whose result shares storage with their first argument: an in-place write to
/// such a result (or to its base while the view lives on) is not functionalized here.
fn is_view_target(target: &str) -> bool {
    const VIEWS: &[&str] = &[
        "view",
        "reshape",
        "transpose",
        "permute",
        "t",
        "expand",
        "expand_as",
        "slice",
        "select",
        "unsqueeze",
        "squeeze",
        "flatten",
        "unflatten",
        "narrow",
        "split",
        "split_with_sizes",
        "chunk",
        "unbind",
        "alias",
        "as_strided",
        "diagonal",
        "detach",
        "view_as",
        "unfold",
        "movedim",
        "swapaxes",
        "contiguous",
        "_reshape_alias",
        "real",
        "imag",
        "tensor_split",
    ];
    target
        .strip_prefix("torch.ops.aten.")
        .and_then(|rest| rest.split('.').next())
        .is_some_and(|name| VIEWS.contains(&name))
}

/// Calls that must stay even when nothing reads them.
fn has_side_effects(node: &Node) -> bool {
    let target = node.target.as_str();
    let Some(rest) = target.strip_prefix("torch.ops.aten.") else {
        // Higher-order operators, custom operators, symbolic operators: kept as they are.
        return !(target.starts_with("_operator.") || target.starts_with("torch.sym_"));
    };
    let name = rest.split('.').next().unwrap_or("");
    name.ends_with('_')
        || name.starts_with("_assert")
        || name.starts_with("sym_constrain_range")
        || name == "_print"
        || name.contains("copy_")
        || rest.ends_with(".out")
}

fn rename_argument(argument: &mut Argument, aliases: &BTreeMap<String, String>) {
    use crate::model::{OptionalTensorArgument, SymArgument};
    let rename = |name: &mut String| {
        if let Some(replacement) = aliases.get(name.as_str()) {
            *name = replacement.clone();
        }
    };
    match argument {
        Argument::Tensor(name) | Argument::Token(name) => rename(name),
        Argument::Tensors(names) => names.iter_mut().for_each(rename),
        Argument::NestedTensors(lists) => lists.iter_mut().flatten().for_each(rename),
        Argument::OptionalTensor(OptionalTensorArgument::Tensor(name)) => rename(name),
        Argument::OptionalTensors(items) => {
            for item in items {
                if let OptionalTensorArgument::Tensor(name) = item {
                    rename(name);
                }
            }
        }
        Argument::SymInt(SymArgument::Name(name))
        | Argument::SymBool(SymArgument::Name(name))
        | Argument::SymFloat(SymArgument::Name(name)) => rename(name),
        Argument::SymInts(items) => {
            for item in items {
                if let SymArgument::Name(name) = item {
                    rename(name);
                }
            }
        }
        Argument::StringToArgument(map) => {
            for inner in map.values_mut() {
                rename_argument(inner, aliases);
            }
        }
        _ => {}
    }
}

/// The tensor names a node's outputs define, in order.
fn output_tensor_names(node: &Node) -> Vec<String> {
    let mut names = Vec::new();
    for output in &node.outputs {
        match output {
            Argument::Tensor(name) => names.push(name.clone()),
            Argument::Tensors(list) => names.extend(list.iter().cloned()),
            _ => {}
        }
    }
    names
}

/// Every name a node defines (tensors, symbols, tokens).
fn defined_names(node: &Node) -> Vec<String> {
    let mut names = Vec::new();
    for output in &node.outputs {
        output.for_each_referenced_name(&mut |name| names.push(name.to_string()));
    }
    names
}

fn all_names(graph: &Graph) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for input in &graph.inputs {
        input.for_each_referenced_name(&mut |name| {
            names.insert(name.to_string());
        });
    }
    for node in &graph.nodes {
        names.extend(defined_names(node));
        if let Some(name) = &node.name {
            names.insert(name.clone());
        }
    }
    names.extend(graph.tensor_values.keys().cloned());
    names.extend(graph.sym_int_values.keys().cloned());
    names
}

/// Lowers `program` in place; see the module documentation.
pub fn decompose_program(
    program: &mut ExportedProgram,
    options: DecomposeOptions,
) -> Result<DecomposeReport> {
    let mut report = DecomposeReport::default();
    let signature = program.graph_module.signature.clone();
    // Which placeholder is which, for the mutations functionalization records.
    let mut mutable_inputs: BTreeMap<String, OutputSpecKind> = BTreeMap::new();
    for spec in &signature.input_specs {
        match spec {
            InputSpec::Buffer {
                arg, buffer_name, ..
            } => {
                mutable_inputs.insert(arg.clone(), OutputSpecKind::Buffer(buffer_name.clone()));
            }
            InputSpec::UserInput {
                arg: Argument::Tensor(name),
            } => {
                mutable_inputs.insert(name.clone(), OutputSpecKind::UserInput(name.clone()));
            }
            InputSpec::Parameter {
                arg,
                parameter_name,
            } => {
                mutable_inputs.insert(
                    arg.clone(),
                    OutputSpecKind::Parameter(parameter_name.clone()),
                );
            }
            _ => {}
        }
    }
    let graph = &mut program.graph_module.graph;
    let mutations = lower_graph(graph, &mutable_inputs, options, &mut report, true)?;
    // Mutation outputs come first, in placeholder order, as functionalization lists them.
    let mut new_specs = Vec::new();
    let mut new_outputs = Vec::new();
    for spec in &signature.input_specs {
        let placeholder = match spec {
            InputSpec::Buffer { arg, .. } | InputSpec::Parameter { arg, .. } => arg.clone(),
            InputSpec::UserInput {
                arg: Argument::Tensor(name),
            } => name.clone(),
            _ => continue,
        };
        let Some(final_value) = mutations.get(&placeholder) else {
            continue;
        };
        let already = program
            .graph_module
            .signature
            .output_specs
            .iter()
            .any(|existing| match existing {
                OutputSpec::BufferMutation { arg, .. }
                | OutputSpec::UserInputMutation { arg, .. }
                | OutputSpec::ParameterMutation { arg, .. } => arg == final_value,
                _ => false,
            });
        if already {
            continue;
        }
        new_specs.push(match &mutable_inputs[&placeholder] {
            OutputSpecKind::Buffer(buffer_name) => OutputSpec::BufferMutation {
                arg: final_value.clone(),
                buffer_name: buffer_name.clone(),
            },
            OutputSpecKind::UserInput(user_input_name) => OutputSpec::UserInputMutation {
                arg: final_value.clone(),
                user_input_name: user_input_name.clone(),
            },
            OutputSpecKind::Parameter(parameter_name) => OutputSpec::ParameterMutation {
                arg: final_value.clone(),
                parameter_name: parameter_name.clone(),
            },
        });
        new_outputs.push(Argument::Tensor(final_value.clone()));
    }
    if !new_specs.is_empty() {
        let signature = &mut program.graph_module.signature;
        new_specs.append(&mut signature.output_specs);
        signature.output_specs = new_specs;
        new_outputs.append(&mut graph.outputs);
        graph.outputs = new_outputs;
    }
    report.removed_unused += remove_unused(&mut program.graph_module.graph);
    let still_mutating = graph_has_in_place_calls(&program.graph_module.graph);
    if !still_mutating && report.not_lowered.is_empty() {
        program.verifiers = vec!["ATEN".to_string()];
    }
    Ok(report)
}

#[derive(Debug, Clone)]
enum OutputSpecKind {
    Buffer(String),
    UserInput(String),
    Parameter(String),
}

fn graph_has_in_place_calls(graph: &Graph) -> bool {
    graph.nodes.iter().any(|node| {
        functional_form(&node.target).is_some()
            || node.inputs.iter().any(|input| match &input.arg {
                Argument::Graph(subgraph) => graph_has_in_place_calls(&subgraph.graph),
                _ => false,
            })
    })
}

/// Lowers one graph; returns, for each mutated placeholder, the value holding its final
/// contents. Subgraphs (of cond, while_loop, ...) are lowered too, without
/// functionalization (their mutations are not part of the signature).
fn lower_graph(
    graph: &mut Graph,
    mutable_inputs: &BTreeMap<String, OutputSpecKind>,
    options: DecomposeOptions,
    report: &mut DecomposeReport,
    top_level: bool,
) -> Result<BTreeMap<String, String>> {
    let mut names = all_names(graph);
    let mut aliases: BTreeMap<String, String> = BTreeMap::new();
    // Value → the value it is a view of (its base), from view calls.
    let mut view_base: BTreeMap<String, String> = BTreeMap::new();
    // Placeholder → the value that now holds its contents.
    let mut mutations: BTreeMap<String, String> = BTreeMap::new();
    // Where each value is last read, to tell whether a view outlives a write to its base.
    let mut last_read: BTreeMap<String, usize> = BTreeMap::new();
    for (index, node) in graph.nodes.iter().enumerate() {
        for input in &node.inputs {
            input.arg.for_each_referenced_name(&mut |name| {
                last_read.insert(name.to_string(), index);
            });
        }
    }
    let old_nodes = std::mem::take(&mut graph.nodes);
    let mut new_nodes = Vec::with_capacity(old_nodes.len());
    for (index, mut node) in old_nodes.into_iter().enumerate() {
        for input in &mut node.inputs {
            rename_argument(&mut input.arg, &aliases);
            if let Argument::Graph(subgraph) = &mut input.arg {
                lower_graph(&mut subgraph.graph, mutable_inputs, options, report, false)?;
            }
        }
        // Functionalize an in-place call.
        if top_level {
            if let Some(functional) = functional_form(&node.target) {
                match functionalize(&node, &view_base, &last_read, index) {
                    Ok(mutated) => {
                        *report
                            .functionalized
                            .entry(node.target.clone())
                            .or_default() += 1;
                        let result = output_tensor_names(&node).into_iter().next();
                        rename_to_functional_formals(&mut node, &functional);
                        node.target = functional;
                        if let Some(result) = result {
                            // Later readers of the mutated value read the new one.
                            add_alias(&mut aliases, &mutated, &result);
                            let root = root_placeholder(&mutated, &mutations);
                            if let Some(root) = root {
                                if mutable_inputs.contains_key(&root) {
                                    mutations.insert(root, result.clone());
                                }
                            }
                        }
                    }
                    Err(reason) => {
                        let name = node_label(&node);
                        if options.strict {
                            return Err(ExportError::Unsupported(format!(
                                "node '{name}' ({}) cannot be functionalized: {reason}",
                                node.target
                            )));
                        }
                        report
                            .not_lowered
                            .push((name, node.target.clone(), reason.to_string()));
                        new_nodes.push(node);
                        continue;
                    }
                }
            }
        }
        if is_view_target(&node.target) {
            if let Some(base) = node.inputs.first().and_then(|input| input.arg.name()) {
                let base = view_base.get(base).cloned().unwrap_or(base.to_string());
                for output in output_tensor_names(&node) {
                    view_base.insert(output, base.clone());
                }
            }
        }
        let rule = rules().get(node.target.as_str()).copied();
        let Some(rule) = rule else {
            if pytorch_decomposes(&node.target) {
                let name = node_label(&node);
                if options.strict {
                    return Err(ExportError::Unsupported(format!(
                        "node '{name}' ({}) has no core ATen decomposition in ferrojit",
                        node.target
                    )));
                }
                report.not_lowered.push((
                    name,
                    node.target.clone(),
                    "ferrojit has no decomposition of this operator".into(),
                ));
            }
            new_nodes.push(node);
            continue;
        };
        let outcome = {
            let mut emitter = Emitter::new(&graph.tensor_values, &mut names, &node);
            let original = Original { node: &node };
            rule(&mut emitter, &original).and_then(|replacements| {
                if !emitter.writes.is_empty() && !top_level {
                    // A subgraph's writes are not part of the signature: nothing to
                    // report them through.
                    return Err(emitter::not_applicable(
                        "a decomposition that updates its inputs, inside a subgraph",
                    ));
                }
                Ok((
                    replacements,
                    emitter.nodes,
                    emitter.new_metas,
                    emitter.writes,
                ))
            })
        };
        match outcome {
            Ok((replacements, mut nodes, new_metas, writes)) => {
                let originals = output_tensor_names(&node);
                if replacements.len() != originals.len() {
                    return Err(ExportError::Unsupported(format!(
                        "internal: the decomposition of {} gave {} results for {}",
                        node.target,
                        replacements.len(),
                        originals.len()
                    )));
                }
                *report.decomposed.entry(node.target.clone()).or_default() += 1;
                for (name, meta) in new_metas {
                    graph.tensor_values.insert(name, meta);
                }
                for (original, replacement) in originals.iter().zip(&replacements) {
                    let produced_here = nodes
                        .iter()
                        .any(|new| output_tensor_names(new).contains(replacement));
                    let reused = originals.iter().filter(|o| *o == original).count() > 1;
                    if produced_here && !reused && !replacements[..].iter().any(|r| r == original) {
                        // The new value takes the original's name, so the signature and
                        // later nodes keep reading it by that name.
                        rename_in_nodes(&mut nodes, replacement, original);
                        if let Some(meta) = graph.tensor_values.remove(replacement) {
                            let keep = graph.tensor_values.get(original).cloned();
                            graph
                                .tensor_values
                                .insert(original.clone(), keep.unwrap_or(meta));
                        }
                    } else if replacement != original {
                        graph.tensor_values.remove(original);
                        add_alias(&mut aliases, original, replacement);
                    }
                }
                for (written, new_contents) in writes {
                    // Later readers of the written value read its new contents, and a
                    // written buffer or user input gets its mutation output.
                    add_alias(&mut aliases, &written, &new_contents);
                    if let Some(root) = root_placeholder(&written, &mutations) {
                        if mutable_inputs.contains_key(&root) {
                            mutations.insert(root, new_contents);
                        }
                    }
                }
                new_nodes.extend(nodes);
            }
            Err(reason) => {
                let name = node_label(&node);
                if options.strict {
                    return Err(ExportError::Unsupported(format!(
                        "node '{name}' ({}) cannot be lowered: {reason}",
                        node.target
                    )));
                }
                report
                    .not_lowered
                    .push((name, node.target.clone(), reason.to_string()));
                new_nodes.push(node);
            }
        }
    }
    graph.nodes = new_nodes;
    for output in &mut graph.outputs {
        rename_argument(output, &aliases);
    }
    if !top_level {
        // The top graph is swept by the caller once the mutation outputs are in place.
        report.removed_unused += remove_unused(graph);
    }
    Ok(mutations)
}

/// Records that readers of `from` read `to` from now on, keeping the map flat (every value
/// it gives is a live name) and free of cycles: an in-place write followed by a
/// decomposition that returns its input (`dropout_` in inference) maps back to the start.
fn add_alias(aliases: &mut BTreeMap<String, String>, from: &str, to: &str) {
    // `to` is live already: a new value, or a name the node read after renaming.
    let to = to.to_string();
    for value in aliases.values_mut() {
        if value == from {
            *value = to.clone();
        }
    }
    aliases.retain(|key, value| key != value);
    if from == to {
        aliases.remove(from);
    } else {
        aliases.insert(from.to_string(), to);
    }
}

/// Renames every use of `from` in `nodes` (outputs and inputs) to `to`.
fn rename_in_nodes(nodes: &mut [Node], from: &str, to: &str) {
    let aliases: BTreeMap<String, String> = [(from.to_string(), to.to_string())].into();
    for node in nodes {
        for output in &mut node.outputs {
            rename_argument(output, &aliases);
        }
        for input in &mut node.inputs {
            rename_argument(&mut input.arg, &aliases);
        }
        if node.name.as_deref() == Some(from) {
            node.name = Some(to.to_string());
        }
    }
}

/// The placeholder whose contents `value` holds, following earlier mutations.
fn root_placeholder(value: &str, mutations: &BTreeMap<String, String>) -> Option<String> {
    mutations
        .iter()
        .find(|(_, current)| current.as_str() == value)
        .map(|(placeholder, _)| placeholder.clone())
        .or_else(|| Some(value.to_string()))
}

/// Gives the arguments of an in-place call the names of the functional overload's formals,
/// position by position (`dropout_(self, ...)` is `dropout(input, ...)`).
fn rename_to_functional_formals(node: &mut Node, functional: &str) {
    let Some(full_name) = crate::run::classify_operator(functional) else {
        return;
    };
    let Some(operator) = crate::fallback::find_operator(&full_name) else {
        return;
    };
    let formals = &operator.schema.arguments;
    let mut in_place_formals = Vec::new();
    if let Some(in_place) = crate::run::classify_operator(&node.target)
        .and_then(|name| crate::fallback::find_operator(&name))
    {
        in_place_formals = in_place
            .schema
            .arguments
            .iter()
            .map(|formal| formal.name.clone())
            .collect();
    }
    for input in &mut node.inputs {
        if let Some(position) = in_place_formals.iter().position(|name| *name == input.name) {
            if let Some(formal) = formals.get(position) {
                input.name = formal.name.clone();
            }
        }
    }
}

/// Checks that the in-place call's target can be made functional: it writes its `self`,
/// which is no view, and no view of it is read after the write. Returns the written value.
fn functionalize(
    node: &Node,
    view_base: &BTreeMap<String, String>,
    last_read: &BTreeMap<String, usize>,
    index: usize,
) -> std::result::Result<String, String> {
    let mutated = node
        .inputs
        .first()
        .and_then(|input| match &input.arg {
            Argument::Tensor(name) => Some(name.clone()),
            _ => None,
        })
        .ok_or("its first argument is not a tensor")?;
    if view_base.contains_key(&mutated) {
        return Err(format!(
            "it writes '{mutated}', a view of '{}'",
            view_base[&mutated]
        ));
    }
    for (view, base) in view_base {
        if *base == mutated && last_read.get(view).is_some_and(|&last| last > index) {
            return Err(format!(
                "it writes '{mutated}', whose view '{view}' is read afterwards"
            ));
        }
    }
    if output_tensor_names(node).is_empty() {
        return Err("it has no result to carry the new value".into());
    }
    Ok(mutated)
}

fn node_label(node: &Node) -> String {
    node.name
        .clone()
        .or_else(|| output_tensor_names(node).into_iter().next())
        .unwrap_or_else(|| "<unnamed>".into())
}

/// Drops calls none of whose results are read (repeatedly, back to front), as PyTorch's
/// dead-code elimination does; returns how many.
fn remove_unused(graph: &mut Graph) -> usize {
    let mut read: BTreeSet<String> = BTreeSet::new();
    for output in &graph.outputs {
        output.for_each_referenced_name(&mut |name| {
            read.insert(name.to_string());
        });
    }
    let mut keep = vec![true; graph.nodes.len()];
    for (index, node) in graph.nodes.iter().enumerate().rev() {
        let defined = defined_names(node);
        let used = defined.iter().any(|name| read.contains(name));
        if !used && !has_side_effects(node) && !defined.is_empty() {
            keep[index] = false;
            continue;
        }
        for input in &node.inputs {
            input.arg.for_each_referenced_name(&mut |name| {
                read.insert(name.to_string());
            });
        }
    }
    let mut removed = 0;
    let nodes = std::mem::take(&mut graph.nodes);
    for (node, kept) in nodes.into_iter().zip(keep) {
        if kept {
            graph.nodes.push(node);
        } else {
            removed += 1;
            for name in defined_names(&node) {
                graph.tensor_values.remove(&name);
            }
        }
    }
    removed
}
