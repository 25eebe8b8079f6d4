//! Function inlining, PyTorch's `Inline` (`_jit_pass_inline`): each `prim::CallFunction` and
//! `prim::CallMethod` whose callee's graph is known is replaced by a copy of that graph's
//! body, with the call's arguments for its inputs.
//!
//! What is copied is the callee's optimized graph, as PyTorch's `GraphFunction::
//! optimized_graph` makes it: a copy of the callee's graph with its own calls inlined, then
//! peephole optimization (when that pass exists), constant propagation over immutable types
//! and constant pooling. Each callee is prepared once per run. The copied values keep the
//! callee's debug names (uniqued in the caller), and each call's named outputs pass their
//! names to the values that replace them. A `prim::CallFunction` of PyTorch's form takes the
//! function as a `Function` constant in input 0 (which stays, unused); the form ferrojit's
//! frontend emits names the function in its `name` attribute. Nested blocks are searched;
//! the copied body is not searched again (its calls were inlined when it was prepared).
//!
//! A bare graph knows no callees: PyTorch finds them through the function constant's type
//! and the class type of a method's receiver. Here a [`Callees`] supplies them: a loaded
//! module's [`MethodSource`], or a [`CalleeTable`] of graphs (what file tests give).

use std::collections::{HashMap, HashSet};

use ferrojit_ir::{AttributeValue, BlockId, ClassType, Graph, InsertPoint, NodeId, Prim, Type};
use ferrojit_runtime::MethodSource;

/// Where the inliner finds the graphs of called functions and methods.
pub trait Callees {
    /// The graph of the free function a call names (`helper`, `__torch__.helper`).
    fn function_graph(&self, name: &str) -> Option<Graph>;
    /// The graph of method `method` of `class`; its first input is `self`.
    fn method_graph(&self, class: &ClassType, method: &str) -> Option<Graph>;
}

/// Callee graphs by name: a function by the name its call gives, a method as
/// `CLASS.METHOD` with the class's qualified name (`__torch__.Sub.forward`).
#[derive(Debug, Default)]
pub struct CalleeTable {
    pub graphs: HashMap<String, Graph>,
}

impl Callees for CalleeTable {
    fn function_graph(&self, name: &str) -> Option<Graph> {
        self.graphs.get(name).cloned()
    }

    fn method_graph(&self, class: &ClassType, method: &str) -> Option<Graph> {
        self.graphs
            .get(&format!("{}.{method}", class.qualified_name()))
            .cloned()
    }
}

impl CalleeTable {
    /// Parses the callee sections of an IR text (see [`split_callee_sections`]); `Err`
    /// names the callee whose graph does not parse.
    pub fn parse_sections(sections: &[(String, String)]) -> Result<CalleeTable, String> {
        let mut table = CalleeTable::default();
        for (name, text) in sections {
            let graph = ferrojit_ir::parse_graph(text)
                .map_err(|e| format!("callee {name} does not parse: {e}"))?;
            ferrojit_ir::verifier::verify(&graph)
                .map_err(|e| format!("callee {name} does not verify: {e}"))?;
            table.graphs.insert(name.clone(), graph);
        }
        Ok(table)
    }
}

/// Splits an IR text at its `# CALLEE: NAME` lines: the text before the first one (the
/// graph a test or a command runs on), then each callee's name and graph text. Other `#`
/// lines inside a callee section are left out of it.
pub fn split_callee_sections(text: &str) -> (String, Vec<(String, String)>) {
    let mut main = String::new();
    let mut sections: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("# CALLEE:") {
            sections.push((name.trim().to_string(), String::new()));
            continue;
        }
        match sections.last_mut() {
            Some((_, section)) if !line.starts_with('#') => {
                section.push_str(line);
                section.push('\n');
            }
            Some(_) => {}
            None => {
                main.push_str(line);
                main.push('\n');
            }
        }
    }
    (main, sections)
}

/// Runs the pass called `name`, with `callees` for `inline` (every other pass ignores
/// them), then the verifier in debug builds, as [`crate::run_pass`] does.
pub fn run_pass_with_callees(
    name: &str,
    graph: &mut Graph,
    callees: &CalleeTable,
) -> Result<(), String> {
    if name != "inline" {
        return crate::run_pass(name, graph);
    }
    inline_calls(graph, callees)?;
    if cfg!(debug_assertions) {
        ferrojit_ir::verifier::verify(graph)
            .map_err(|error| format!("pass 'inline' broke an invariant: {error}"))?;
    }
    Ok(())
}

/// The functions and methods of a loaded module or compilation unit.
pub struct MethodSourceCallees<'a>(pub &'a dyn MethodSource);

impl Callees for MethodSourceCallees<'_> {
    fn function_graph(&self, name: &str) -> Option<Graph> {
        let graph = self.0.function_graph(name).ok()?;
        Some(graph.as_ref().clone())
    }

    fn method_graph(&self, class: &ClassType, method: &str) -> Option<Graph> {
        let graph = self.0.method_graph(class, method).ok()?;
        Some(graph.as_ref().clone())
    }
}

/// The `inline` pass on a bare graph, which knows no callees: every call stays. Registered
/// so that pipelines and the command line accept the name; file tests and modules use
/// [`inline_calls`] with their callees.
pub fn inline_calls_without_callees(graph: &mut Graph) -> Result<(), String> {
    inline_calls(graph, &CalleeTable::default())
}

/// Inlines every call in `graph` whose callee `callees` knows. `Err` names a callee whose
/// graph does not fit its call (a different number of inputs or outputs), or a callee that
/// calls itself.
pub fn inline_calls(graph: &mut Graph, callees: &dyn Callees) -> Result<(), String> {
    let mut inliner = Inliner {
        callees,
        prepared: HashMap::new(),
        preparing: HashSet::new(),
    };
    let top = graph.top_block();
    inliner.block(graph, top)?;
    graph.set_insert_point(InsertPoint::EndOf(top));
    Ok(())
}

/// Which callee a call node calls, and where its arguments start.
enum Call {
    Function {
        name: String,
        first_argument: usize,
    },
    Method {
        class: std::sync::Arc<ClassType>,
        name: String,
    },
}

impl Call {
    fn key(&self) -> String {
        match self {
            Call::Function { name, .. } => name.clone(),
            Call::Method { class, name } => format!("{}.{name}", class.qualified_name()),
        }
    }
}

struct Inliner<'c> {
    callees: &'c dyn Callees,
    /// Optimized callee graphs by key; `None` for a callee that is not known.
    prepared: HashMap<String, Option<Graph>>,
    /// Callees being prepared, to refuse recursion.
    preparing: HashSet<String>,
}

impl Inliner<'_> {
    fn block(&mut self, graph: &mut Graph, block: BlockId) -> Result<(), String> {
        for node in graph.block_nodes(block) {
            match call_of(graph, node) {
                Some(call) => {
                    if let Some(callee) = self.prepare(&call)? {
                        let first_argument = match &call {
                            Call::Function { first_argument, .. } => *first_argument,
                            Call::Method { .. } => 0,
                        };
                        inline_call_to(graph, node, &callee, first_argument, &call.key())?;
                    }
                }
                None => {
                    for nested in graph.node_blocks(node).to_vec() {
                        self.block(graph, nested)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The callee's optimized graph (PyTorch's `optimized_graph`), made once.
    fn prepare(&mut self, call: &Call) -> Result<Option<Graph>, String> {
        let key = call.key();
        if let Some(prepared) = self.prepared.get(&key) {
            return Ok(prepared.clone());
        }
        let raw = match call {
            Call::Function { name, .. } => self.callees.function_graph(name),
            Call::Method { class, name } => self.callees.method_graph(class, name),
        };
        let Some(mut callee) = raw else {
            self.prepared.insert(key, None);
            return Ok(None);
        };
        if !self.preparing.insert(key.clone()) {
            return Err(format!("inline: '{key}' calls itself"));
        }
        let top = callee.top_block();
        self.block(&mut callee, top)?;
        self.preparing.remove(&key);
        callee.set_insert_point(InsertPoint::EndOf(top));
        if crate::find_pass("peephole").is_some() {
            crate::run_pass("peephole", &mut callee)?;
        }
        crate::constant_propagation::propagate_constants_of_immutable_types(&mut callee);
        crate::constant_pooling::pool_constants(&mut callee);
        self.prepared.insert(key, Some(callee.clone()));
        Ok(Some(callee))
    }
}

/// The call `node` makes, if it is a call whose callee can be named.
fn call_of(graph: &Graph, node: NodeId) -> Option<Call> {
    let kind = graph.kind(node);
    if kind.is_prim(Prim::CallMethod) {
        let Some(AttributeValue::Str(name)) = graph.attribute(node, "name") else {
            return None;
        };
        let receiver = *graph.node_inputs(node).first()?;
        let Type::Class(class) = graph.value_type(receiver) else {
            return None;
        };
        return Some(Call::Method {
            class: class.clone(),
            name: name.clone(),
        });
    }
    if !kind.is_prim(Prim::CallFunction) {
        return None;
    }
    // ferrojit's frontend names the function on the call itself.
    if let Some(AttributeValue::Str(name)) = graph.attribute(node, "name") {
        return Some(Call::Function {
            name: name.clone(),
            first_argument: 0,
        });
    }
    // PyTorch's form: input 0 is the function, a constant.
    let function = *graph.node_inputs(node).first()?;
    let constant = graph.producer(function)?;
    if !graph.kind(constant).is_prim(Prim::Constant) {
        return None;
    }
    let name = match (
        graph.attribute(constant, "name"),
        graph.value_type(function),
    ) {
        (Some(AttributeValue::Str(name)), _) => name.clone(),
        (_, Type::Function(Some(name))) => name.clone(),
        _ => return None,
    };
    Some(Call::Function {
        name,
        first_argument: 1,
    })
}

/// Replaces `node` by a copy of `callee`'s body (PyTorch's `inlineCallTo`).
fn inline_call_to(
    graph: &mut Graph,
    node: NodeId,
    callee: &Graph,
    first_argument: usize,
    key: &str,
) -> Result<(), String> {
    let arguments =
        graph.node_inputs(node)[first_argument.min(graph.node_inputs(node).len())..].to_vec();
    if arguments.len() != callee.inputs().len()
        || graph.node_outputs(node).len() != callee.outputs().len()
    {
        return Err(format!(
            "inline: '{key}' takes {} inputs and gives {} outputs, but its call passes {} and \
             expects {}",
            callee.inputs().len(),
            callee.outputs().len(),
            arguments.len(),
            graph.node_outputs(node).len()
        ));
    }
    crate::jit_log::log("inline", crate::jit_log::LogLevel::Update, || {
        format!("Inlining '{key}'")
    });
    let mut value_map: HashMap<_, _> = callee.inputs().iter().copied().zip(arguments).collect();
    graph.set_insert_point(InsertPoint::Before(node));
    let results = graph
        .copy_block_from(callee, callee.top_block(), &mut value_map)
        .map_err(|error| format!("inline: copying '{key}': {error}"))?;
    let outputs = graph.node_outputs(node).to_vec();
    for (&old, &new) in outputs.iter().zip(&results) {
        if let Some(name) = graph.debug_name(old).map(str::to_string) {
            graph.set_debug_name(new, &name);
        }
        graph.replace_all_uses_with(old, new);
    }
    graph.destroy_node(node);
    // A destroyed value's name is free again, as in PyTorch, where the value's destructor
    // releases it.
    for old in outputs {
        graph.clear_debug_name(old);
    }
    Ok(())
}
