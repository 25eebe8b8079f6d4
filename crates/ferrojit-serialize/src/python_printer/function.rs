//! Prints one compiled graph (a method or free function) as the body of a Python `def`, the
//! way PyTorch's `python_print.cpp` does: author's names from debug names, single-use pure
//! expressions inlined where evaluation order allows, `torch.X(...)` calls for `aten::` ops,
//! `ops.ns.X(...)` for other namespaces, and `if`/`while`/`for` for `prim::If`/`prim::Loop`.

use std::collections::{HashMap, HashSet};

use ferrojit_ir::attributes::{format_float, quote_string};
use ferrojit_ir::{AttributeValue, BlockId, DefaultValue, Graph, NodeId, Prim, Type, ValueId};

use super::PrintContext;
use crate::load_error::LoadError;

/// `while` loops carry this trip count (no limit).
const NO_TRIP_LIMIT: i64 = i64::MAX;

/// Names a printed value may never take: Python keywords and the globals that PyTorch's
/// importer defines for `code/` files.
const RESERVED_NAMES: &[&str] = &[
    "_",
    "and",
    "as",
    "assert",
    "async",
    "await",
    "break",
    "class",
    "continue",
    "def",
    "del",
    "elif",
    "else",
    "except",
    "False",
    "finally",
    "for",
    "from",
    "global",
    "if",
    "import",
    "in",
    "is",
    "lambda",
    "None",
    "nonlocal",
    "not",
    "or",
    "pass",
    "raise",
    "return",
    "True",
    "try",
    "while",
    "with",
    "yield",
    "__torch__",
    "annotate",
    "aten",
    "attribute",
    "bool",
    "CONSTANTS",
    "dict",
    "float",
    "fork",
    "getattr",
    "inf",
    "int",
    "isinstance",
    "len",
    "list",
    "math",
    "nan",
    "ops",
    "print",
    "range",
    "setattr",
    "str",
    "torch",
    "tuple",
    "unchecked_cast",
    "uninitialized",
    "Tensor",
    "List",
    "Dict",
    "Optional",
    "Tuple",
    "Final",
    "Module",
    "Any",
    "Device",
    "NoneType",
    "number",
];

/// Prints the statements of one function body.
pub(crate) struct FunctionPrinter<'g, 'c> {
    graph: &'g Graph,
    context: &'c mut PrintContext,
    names: HashMap<ValueId, String>,
    used_names: HashSet<String>,
    next_suffix: HashMap<String, usize>,
    inlined: HashSet<NodeId>,
    /// Optional and Union values whose type annotation is printed already: PyTorch's
    /// printer annotates such a value at its first assignment only.
    annotated: HashSet<ValueId>,
    out: String,
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The base of a debug name: `x.3` → `x`; names that are not identifiers give `_`.
fn base_name(name: &str) -> String {
    let base = match name.rsplit_once('.') {
        Some((head, tail)) if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) => head,
        _ => name,
    };
    let cleaned: String = base
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if is_identifier(&cleaned) {
        cleaned
    } else {
        "_".to_string()
    }
}

/// A Python literal for a float, as PyTorch prints it (`1.`, `0.10000000000000001`, `inf`).
pub(crate) fn float_literal(value: f64) -> String {
    format_float(value)
}

impl<'g, 'c> FunctionPrinter<'g, 'c> {
    pub(crate) fn new(graph: &'g Graph, context: &'c mut PrintContext) -> Self {
        FunctionPrinter {
            graph,
            context,
            names: HashMap::new(),
            used_names: HashSet::new(),
            next_suffix: HashMap::new(),
            inlined: HashSet::new(),
            annotated: HashSet::new(),
            out: String::new(),
        }
    }

    fn fresh_name(&mut self, candidate: &str) -> String {
        let mut name = candidate.to_string();
        while self.used_names.contains(&name) || RESERVED_NAMES.contains(&name.as_str()) {
            let counter = self.next_suffix.entry(candidate.to_string()).or_insert(0);
            name = format!("{candidate}{counter}");
            *counter += 1;
        }
        self.used_names.insert(name.clone());
        name
    }

    /// Gives graph input `value` exactly `name` (a parameter name from the signature).
    pub(crate) fn name_input(&mut self, value: ValueId, name: &str) {
        self.used_names.insert(name.to_string());
        self.names.insert(value, name.to_string());
    }

    fn name_of(&mut self, value: ValueId) -> String {
        if let Some(name) = self.names.get(&value) {
            return name.clone();
        }
        let candidate = match self.graph.debug_name(value) {
            Some(debug) => base_name(debug),
            None => "_".to_string(),
        };
        let name = self.fresh_name(&candidate);
        self.names.insert(value, name.clone());
        name
    }

    /// Gives `alias` the same name as `target` (loop-carried block parameters).
    fn alias(&mut self, alias: ValueId, target: ValueId) {
        let name = self.name_of(target);
        self.names.insert(alias, name);
    }

    // ----- inlining decisions (PyTorch's scanBlock / scanNode / scanValue) -----------------

    /// Constants print inline at each use, except a generator: each `torch.Generator(...)`
    /// in the text compiles to a generator of its own, so one used twice gets a name.
    fn is_constant_like(&self, node: NodeId) -> bool {
        self.graph.kind(node).is_prim(Prim::Constant)
            && !self
                .graph
                .node_outputs(node)
                .first()
                .is_some_and(|&output| *self.graph.value_type(output) == Type::Generator)
    }

    fn can_inline(&self, value: ValueId) -> bool {
        let Some(node) = self.graph.producer(value) else {
            return false;
        };
        let data = self.graph.node(node);
        if data.outputs.len() != 1 || !data.blocks.is_empty() {
            return false;
        }
        let uses = self.graph.value_uses(value);
        let [only_use] = uses else {
            return false;
        };
        let user_kind = self.graph.kind(only_use.node);
        if self.graph.debug_name(value).is_some() && !user_kind.is_prim(Prim::Return) {
            return false;
        }
        if user_kind.is_prim(Prim::Loop) && only_use.input_index >= 2 {
            return false;
        }
        // A forked closure reads its inputs by name: an inlined expression would run later.
        if user_kind.is_prim(Prim::Fork) {
            return false;
        }
        // A one-element unpack has no expression form: inlined, it would print the container
        // itself (`f([x])` for `x, = xs; f([x])`), so it stays a statement `x, = xs`.
        if self.is_unpack(node) {
            return false;
        }
        !matches!(
            data.kind.prim(),
            Some(
                Prim::IsInstance
                    | Prim::Uninitialized
                    | Prim::SetAttr
                    | Prim::Fork
                    | Prim::Enter
                    | Prim::Exit
            )
        )
    }

    fn previous_non_constant(&self, node: NodeId) -> Option<NodeId> {
        // A block's return node sits outside the node list; its predecessor is the last node.
        let mut current = match self.graph.node(node).owning_block {
            Some(block) if self.graph.block_return_node(block) == node => {
                self.graph.block_nodes(block).last().copied()
            }
            _ => self.graph.previous_node(node),
        };
        while let Some(candidate) = current {
            if !self.is_constant_like(candidate) {
                return Some(candidate);
            }
            current = self.graph.previous_node(candidate);
        }
        None
    }

    fn scan_block(&mut self, block: BlockId) {
        self.scan_node(self.graph.block_return_node(block));
        let nodes = self.graph.block_nodes(block);
        for &node in nodes.iter().rev() {
            self.scan_node(node);
        }
    }

    fn scan_node(&mut self, node: NodeId) -> Option<NodeId> {
        if self.inlined.contains(&node) {
            return Some(node);
        }
        for &block in self.graph.node_blocks(node) {
            self.scan_block(block);
        }
        let mut point = self.previous_non_constant(node);
        let inputs = self.graph.node_inputs(node).to_vec();
        for &input in inputs.iter().rev() {
            point = self.scan_value(point, input);
        }
        point
    }

    fn scan_value(&mut self, point: Option<NodeId>, value: ValueId) -> Option<NodeId> {
        let Some(producer) = self.graph.producer(value) else {
            return point;
        };
        if Some(producer) == point && self.can_inline(value) {
            let next_point = self.scan_node(producer);
            self.inlined.insert(producer);
            return next_point;
        }
        if self.is_constant_like(producer) {
            self.inlined.insert(producer);
        }
        point
    }

    // ----- printing --------------------------------------------------------------------

    fn line(&mut self, indent: usize, text: &str) {
        for _ in 0..indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    /// Prints the body of the top block at `indent` and returns the text.
    pub(crate) fn print_body(mut self, indent: usize) -> Result<String, LoadError> {
        let top = self.graph.top_block();
        self.scan_block(top);
        self.print_block_nodes(top, indent)?;
        let outputs = self.graph.block_outputs(top).to_vec();
        let returned = match outputs.as_slice() {
            [] => "None".to_string(),
            [single] => self.use_of(*single)?,
            many => {
                let parts = many
                    .iter()
                    .map(|&v| self.use_of(v))
                    .collect::<Result<Vec<_>, _>>()?;
                format!("({})", parts.join(", "))
            }
        };
        self.line(indent, &format!("return {returned}"));
        Ok(self.out)
    }

    /// Prints the nodes of `block`. `prim::Enter` opens a `with` statement whose body is every
    /// node up to the matching `prim::Exit`, as PyTorch prints them.
    fn print_block_nodes(&mut self, block: BlockId, indent: usize) -> Result<usize, LoadError> {
        let mut printed = 0;
        let mut depth = 0;
        let mut after_enter = false;
        for node in self.graph.block_nodes(block) {
            if self.inlined.contains(&node) {
                continue;
            }
            match self.graph.kind(node).prim() {
                Some(Prim::Enter) => {
                    let header = self.with_header(node)?;
                    self.line(indent + depth, &header);
                    depth += 1;
                    after_enter = true;
                }
                Some(Prim::Exit) => {
                    if depth == 0 {
                        return Err(self.malformed(node, "Exit without an Enter"));
                    }
                    if after_enter {
                        self.line(indent + depth, "pass");
                    }
                    depth -= 1;
                    after_enter = false;
                }
                _ => {
                    self.print_node(node, indent + depth)?;
                    after_enter = false;
                }
            }
            printed += 1;
        }
        if depth != 0 {
            return Err(LoadError::format(
                "code",
                "cannot print a block whose with statement has no prim::Exit",
            ));
        }
        Ok(printed)
    }

    /// `with manager:` or `with manager as name:` (when the entered value is used).
    fn with_header(&mut self, node: NodeId) -> Result<String, LoadError> {
        let inputs = self.graph.node_inputs(node).to_vec();
        let manager = self.single_input(node, &inputs)?;
        let manager = self.use_of(manager)?;
        let outputs = self.graph.node_outputs(node).to_vec();
        let used = outputs.first().filter(|&&output| {
            self.graph
                .value_uses(output)
                .iter()
                .any(|u| !self.graph.kind(u.node).is_prim(Prim::Exit))
        });
        Ok(match used {
            Some(&output) => format!("with {manager} as {}:", self.name_of(output)),
            None => format!("with {manager}:"),
        })
    }

    /// Prints a nested block followed by `outputs = block outputs`; `pass` if empty.
    fn print_sub_block(
        &mut self,
        block: BlockId,
        indent: usize,
        targets: &[ValueId],
    ) -> Result<(), LoadError> {
        let mut printed = self.print_block_nodes(block, indent)?;
        let sources = self.graph.block_outputs(block).to_vec();
        if self.print_assignment(indent, targets, &sources)? {
            printed += 1;
        }
        if printed == 0 {
            self.line(indent, "pass");
        }
        Ok(())
    }

    fn print_assignment(
        &mut self,
        indent: usize,
        targets: &[ValueId],
        sources: &[ValueId],
    ) -> Result<bool, LoadError> {
        if targets.is_empty() {
            return Ok(false);
        }
        let mut left = targets.iter().map(|&v| self.name_of(v)).collect::<Vec<_>>();
        let right = sources
            .iter()
            .map(|&v| self.use_of(v))
            .collect::<Result<Vec<_>, _>>()?;
        // As PyTorch's printer: a lone Optional or Union target keeps its type at its first
        // assignment (`x0 : Optional[int] = i`); without it, reading the code back types
        // the variable by this one value (NoneType, int) and a later assignment of the
        // other kind is refused. Tuple targets cannot carry annotations in Python.
        if let [target] = targets {
            if let Some(annotation) = self.first_annotation(*target) {
                left[0] = format!("{} : {annotation}", left[0]);
            }
        }
        self.line(
            indent,
            &format!("{} = {}", left.join(", "), right.join(", ")),
        );
        Ok(true)
    }

    /// The annotation `value` needs at its first assignment (it is Optional or a Union
    /// and has not been annotated yet), marking it annotated.
    fn first_annotation(&mut self, value: ValueId) -> Option<String> {
        let ty = self.graph.value_type(value);
        if !matches!(ty, Type::Optional(_) | Type::Union(_)) || self.annotated.contains(&value) {
            return None;
        }
        let annotation = ty.annotation_str();
        self.annotated.insert(value);
        Some(annotation)
    }

    /// A loop's initial assignment of its carried values: PyTorch prints the Optional and
    /// Union ones each on a line of its own with their type (`x: Optional[int] = None`),
    /// after the others.
    fn print_loop_entry(
        &mut self,
        indent: usize,
        targets: &[ValueId],
        sources: &[ValueId],
    ) -> Result<(), LoadError> {
        let mut plain = (Vec::new(), Vec::new());
        let mut annotated = Vec::new();
        for (&target, &source) in targets.iter().zip(sources) {
            match self.first_annotation(target) {
                Some(annotation) => annotated.push((target, source, annotation)),
                None => {
                    plain.0.push(target);
                    plain.1.push(source);
                }
            }
        }
        self.print_assignment(indent, &plain.0, &plain.1)?;
        for (target, source, annotation) in annotated {
            let name = self.name_of(target);
            let value = self.use_of(source)?;
            self.line(indent, &format!("{name}: {annotation} = {value}"));
        }
        Ok(())
    }

    fn print_node(&mut self, node: NodeId, indent: usize) -> Result<(), LoadError> {
        match self.graph.kind(node).prim() {
            Some(Prim::If) => self.print_if(node, indent),
            Some(Prim::Loop) => self.print_loop(node, indent),
            Some(Prim::Fork) => self.print_fork(node, indent),
            Some(Prim::SetAttr) => {
                let inputs = self.graph.node_inputs(node).to_vec();
                let [object, value] = inputs.as_slice() else {
                    return Err(self.malformed(node, "SetAttr needs two inputs"));
                };
                let name = self.string_attribute(node, "name")?;
                let object = self.use_of(*object)?;
                let value = self.use_of(*value)?;
                let text = if is_identifier(&name) {
                    format!("{object}.{name} = {value}")
                } else {
                    format!("setattr({object}, {}, {value})", quote_string(&name))
                };
                self.line(indent, &text);
                Ok(())
            }
            _ => {
                let expression = self.expression(node)?;
                let outputs = self.graph.node_outputs(node).to_vec();
                if outputs.is_empty() {
                    self.line(indent, &expression);
                } else {
                    let names: Vec<String> = outputs.iter().map(|&v| self.name_of(v)).collect();
                    let left = if names.len() == 1 && self.is_unpack(node) {
                        format!("{},", names[0])
                    } else {
                        names.join(", ")
                    };
                    self.line(indent, &format!("{left} = {expression}"));
                }
                Ok(())
            }
        }
    }

    /// `prim::fork`: the subgraph is printed as a nested `def __forked_function():` whose
    /// inputs read the values the fork node takes (by name, as a closure), then
    /// `fut = fork(__forked_function)`, as PyTorch prints it.
    fn print_fork(&mut self, node: NodeId, indent: usize) -> Result<(), LoadError> {
        let graph: &'g Graph = self.graph;
        let Some(AttributeValue::Graph(subgraph)) = graph.attribute(node, "Subgraph") else {
            return Err(self.malformed(node, "fork without a Subgraph"));
        };
        let subgraph: &Graph = subgraph;
        self.context.min_version = self
            .context
            .min_version
            .max(super::graph_min_version(subgraph));
        let inputs = self.graph.node_inputs(node).to_vec();
        if subgraph.inputs().len() != inputs.len() {
            return Err(self.malformed(node, "fork inputs do not match its Subgraph"));
        }
        let captured = self.uses_of(&inputs)?;
        let function_name = self.fresh_name("__forked_function");
        self.line(indent, &format!("def {function_name}():"));
        let body = {
            let mut nested = FunctionPrinter::new(subgraph, &mut *self.context);
            // Names of the enclosing function stay taken: the closure must not shadow them.
            nested.used_names = self.used_names.clone();
            for (&input, text) in subgraph.inputs().iter().zip(&captured) {
                nested.names.insert(input, text.clone());
            }
            nested.print_body(indent + 1)?
        };
        self.out.push_str(&body);
        let outputs = self.graph.node_outputs(node).to_vec();
        let call = format!("fork({function_name})");
        match outputs.as_slice() {
            [] => self.line(indent, &call),
            _ => {
                let names: Vec<String> = outputs.iter().map(|&v| self.name_of(v)).collect();
                self.line(indent, &format!("{} = {call}", names.join(", ")));
            }
        }
        Ok(())
    }

    fn is_unpack(&self, node: NodeId) -> bool {
        matches!(
            self.graph.kind(node).prim(),
            Some(Prim::TupleUnpack | Prim::ListUnpack)
        )
    }

    fn print_if(&mut self, node: NodeId, indent: usize) -> Result<(), LoadError> {
        let condition = self
            .graph
            .node_inputs(node)
            .first()
            .copied()
            .ok_or_else(|| self.malformed(node, "If without a condition"))?;
        let blocks = self.graph.node_blocks(node).to_vec();
        let [then_block, else_block] = blocks.as_slice() else {
            return Err(self.malformed(node, "If needs two blocks"));
        };
        let outputs = self.graph.node_outputs(node).to_vec();
        for &output in &outputs {
            self.name_of(output);
        }
        let condition = self.use_of(condition)?;
        self.line(indent, &format!("if {condition}:"));
        self.print_sub_block(*then_block, indent + 1, &outputs)?;
        let else_empty = self.graph.block_nodes(*else_block).is_empty();
        if !else_empty || !outputs.is_empty() {
            self.line(indent, "else:");
            self.print_sub_block(*else_block, indent + 1, &outputs)?;
        }
        Ok(())
    }

    fn constant_int(&self, value: ValueId) -> Option<i64> {
        let node = self.graph.producer(value)?;
        if !self.is_constant_like(node) {
            return None;
        }
        match self.graph.attribute(node, "value") {
            Some(AttributeValue::Int(v)) => Some(*v),
            _ => None,
        }
    }

    fn is_constant_true(&self, value: ValueId) -> bool {
        *self.graph.value_type(value) == Type::Bool && self.constant_int(value) == Some(1)
    }

    fn print_loop(&mut self, node: NodeId, indent: usize) -> Result<(), LoadError> {
        let inputs = self.graph.node_inputs(node).to_vec();
        let [trip_count, start_condition, carried_inputs @ ..] = inputs.as_slice() else {
            return Err(self.malformed(node, "Loop needs a trip count and a condition"));
        };
        let blocks = self.graph.node_blocks(node).to_vec();
        let [body] = blocks.as_slice() else {
            return Err(self.malformed(node, "Loop needs one block"));
        };
        let parameters = self.graph.block_parameters(*body).to_vec();
        let body_outputs = self.graph.block_outputs(*body).to_vec();
        let outputs = self.graph.node_outputs(node).to_vec();
        if parameters.len() != outputs.len() + 1 || body_outputs.len() != outputs.len() + 1 {
            return Err(self.malformed(node, "Loop block does not match its carried values"));
        }
        let iteration = parameters[0];
        let next_condition = body_outputs[0];
        for &output in &outputs {
            self.name_of(output);
        }
        for (&parameter, &output) in parameters[1..].iter().zip(&outputs) {
            self.alias(parameter, output);
        }
        self.print_loop_entry(indent, &outputs, carried_inputs)?;
        let limited = self.constant_int(*trip_count) != Some(NO_TRIP_LIMIT);
        let always_true =
            self.is_constant_true(*start_condition) && self.is_constant_true(next_condition);
        if limited && always_true {
            let counter = self.name_of(iteration);
            let limit = self.use_of(*trip_count)?;
            self.line(indent, &format!("for {counter} in range({limit}):"));
            let mut printed = self.print_block_nodes(*body, indent + 1)?;
            if self.print_assignment(indent + 1, &outputs, &body_outputs[1..])? {
                printed += 1;
            }
            if printed == 0 {
                self.line(indent + 1, "pass");
            }
            return Ok(());
        }
        // A `while` loop; the condition (and a trip limit) live in variables of their own,
        // evaluated once and in input order.
        let limit = if limited {
            let expression = self.use_of(*trip_count)?;
            let name = self.fresh_name("_");
            self.line(indent, &format!("{name} = {expression}"));
            Some(name)
        } else {
            None
        };
        let condition = self.fresh_name("_");
        let start = self.use_of(*start_condition)?;
        self.line(indent, &format!("{condition} = {start}"));
        let counter_used = !self.graph.value_uses(iteration).is_empty();
        let header = if let Some(limit) = limit {
            let counter = self.name_of(iteration);
            self.line(indent, &format!("{counter} = 0"));
            format!("while {condition} and torch.lt({counter}, {limit}):")
        } else {
            if counter_used {
                let counter = self.name_of(iteration);
                self.line(indent, &format!("{counter} = 0"));
            }
            format!("while {condition}:")
        };
        self.line(indent, &header);
        let inner = indent + 1;
        self.print_block_nodes(*body, inner)?;
        let carried_sources = body_outputs[1..].to_vec();
        let mut targets: Vec<String> = outputs.iter().map(|&v| self.name_of(v)).collect();
        let mut sources = carried_sources
            .iter()
            .map(|&v| self.use_of(v))
            .collect::<Result<Vec<_>, _>>()?;
        targets.insert(0, condition.clone());
        sources.insert(0, self.use_of(next_condition)?);
        self.line(
            inner,
            &format!("{} = {}", targets.join(", "), sources.join(", ")),
        );
        if limited || counter_used {
            let counter = self.name_of(iteration);
            self.line(inner, &format!("{counter} = torch.add({counter}, 1)"));
        }
        Ok(())
    }

    fn malformed(&self, node: NodeId, message: &str) -> LoadError {
        LoadError::format(
            "code",
            format!("cannot print {}: {message}", self.graph.kind(node)),
        )
    }

    fn string_attribute(&self, node: NodeId, name: &str) -> Result<String, LoadError> {
        match self.graph.attribute(node, name) {
            Some(AttributeValue::Str(text)) => Ok(text.clone()),
            _ => Err(self.malformed(node, &format!("missing string attribute {name}"))),
        }
    }

    /// The text standing for `value` at a use: its name, or its inlined expression.
    fn use_of(&mut self, value: ValueId) -> Result<String, LoadError> {
        if let Some(node) = self.graph.producer(value) {
            if self.inlined.contains(&node) {
                return self.expression(node);
            }
        }
        Ok(self.name_of(value))
    }

    fn uses_of(&mut self, values: &[ValueId]) -> Result<Vec<String>, LoadError> {
        values.iter().map(|&v| self.use_of(v)).collect()
    }

    fn constant_literal(&mut self, node: NodeId) -> Result<String, LoadError> {
        let output = self.graph.node_output(node, 0);
        let ty = self.graph.value_type(output).clone();
        let attribute = self.graph.attribute(node, "value").cloned();
        Ok(match (attribute, &ty) {
            (None, _) => "None".to_string(),
            (Some(AttributeValue::Int(v)), Type::Bool) => {
                if v != 0 { "True" } else { "False" }.to_string()
            }
            (Some(AttributeValue::Int(seed)), Type::Generator) => {
                format!("torch.Generator(device=\"cpu\", seed={seed})")
            }
            (Some(AttributeValue::Int(v)), _) => v.to_string(),
            (Some(AttributeValue::Float(v)), _) => float_literal(v),
            // PyTorch writes `1.+2.j`, which Python reads as float + imaginary literal.
            (Some(complex @ AttributeValue::Complex(..)), _) => complex.to_ir_string(),
            (Some(AttributeValue::Str(text)), Type::Device) => {
                format!("torch.device({})", quote_string(&text))
            }
            (Some(AttributeValue::Str(text)), _) if !text.is_ascii() => {
                let index = self
                    .context
                    .string_constant(ferrojit_runtime::IValue::from(text.as_str()));
                format!("CONSTANTS.c{index}")
            }
            (Some(AttributeValue::Str(text)), _) => quote_string(&text),
            (Some(AttributeValue::Ints(values)), _) => {
                let parts: Vec<String> = values.iter().map(|v| v.to_string()).collect();
                list_literal(&parts)
            }
            (Some(AttributeValue::Floats(values)), _) => {
                let parts: Vec<String> = values.iter().map(|v| float_literal(*v)).collect();
                list_literal(&parts)
            }
            (Some(AttributeValue::Strs(values)), _) if values.iter().any(|v| !v.is_ascii()) => {
                let items = values
                    .iter()
                    .map(|v| ferrojit_runtime::IValue::from(v.as_str()))
                    .collect();
                let list = ferrojit_runtime::IValue::list(Type::Str, items);
                let index = self.context.string_constant(list);
                format!("CONSTANTS.c{index}")
            }
            (Some(AttributeValue::Strs(values)), _) => {
                let parts: Vec<String> = values.iter().map(|v| quote_string(v)).collect();
                list_literal(&parts)
            }
            (Some(AttributeValue::Tensor(tensor)), _) => {
                let index = self.context.tensor_constant(&tensor);
                format!("CONSTANTS.c{index}")
            }
            (Some(_), _) => {
                return Err(self.malformed(node, "this constant kind cannot be printed"))
            }
        })
    }

    /// The right-hand side of a node's assignment (or the statement for zero outputs).
    fn expression(&mut self, node: NodeId) -> Result<String, LoadError> {
        let kind = self.graph.kind(node).clone();
        let inputs = self.graph.node_inputs(node).to_vec();
        let outputs = self.graph.node_outputs(node).to_vec();
        for &output in &outputs {
            self.context.note_type(self.graph.value_type(output));
        }
        Ok(match (kind.prim(), kind.as_str()) {
            (Some(Prim::Constant), _) => self.constant_literal(node)?,
            (Some(Prim::GetAttr), _) => {
                let name = self.string_attribute(node, "name")?;
                let object = self.single_input(node, &inputs)?;
                let object = self.use_of(object)?;
                if is_identifier(&name) {
                    format!("{object}.{name}")
                } else {
                    format!("getattr({object}, {})", quote_string(&name))
                }
            }
            (Some(Prim::CallMethod), _) => {
                let name = self.string_attribute(node, "name")?;
                let (object, rest) = inputs
                    .split_first()
                    .ok_or_else(|| self.malformed(node, "CallMethod without an object"))?;
                if let Type::Class(class) = self.graph.value_type(*object) {
                    self.context.note_class(class.qualified_name());
                }
                let object = self.use_of(*object)?;
                let arguments = self.uses_of(rest)?;
                format!("({object}).{name}({})", trailing_comma_list(&arguments))
            }
            (Some(Prim::CallFunction), _) => {
                let name = self.string_attribute(node, "name")?;
                self.context.note_function(&name);
                let mut arguments = self.uses_of(&inputs)?;
                for (index, argument) in arguments.iter_mut().enumerate() {
                    if let Some(keyword) = self.context.callee_keyword(&name, index) {
                        *argument = format!("{keyword}={argument}");
                    }
                }
                format!("{name}({})", trailing_comma_list(&arguments))
            }
            (Some(Prim::TupleConstruct), _) => {
                let items = self.uses_of(&inputs)?;
                let named = outputs
                    .first()
                    .and_then(|&v| match self.graph.value_type(v) {
                        Type::NamedTuple(tuple) => tuple.name.clone(),
                        _ => None,
                    });
                match (named, items.as_slice()) {
                    (Some(name), _) => format!("{name}({})", items.join(", ")),
                    (None, [single]) => format!("({single},)"),
                    (None, _) => format!("({})", items.join(", ")),
                }
            }
            (Some(Prim::CreateObject), _) => {
                let ty = outputs
                    .first()
                    .map(|&v| self.graph.value_type(v).clone())
                    .unwrap_or(Type::Any);
                let Type::Class(class) = &ty else {
                    return Err(self.malformed(node, "CreateObject of a non-class type"));
                };
                let name = class.qualified_name();
                self.context.note_class(name);
                format!("{name}.__new__({name})")
            }
            (Some(Prim::EnumConstant), _) => {
                let member = self.string_attribute(node, "name")?;
                let ty = outputs
                    .first()
                    .map(|&v| self.graph.value_type(v).clone())
                    .unwrap_or(Type::Any);
                let Type::Enum(enum_name) = &ty else {
                    return Err(self.malformed(node, "EnumConstant of a non-enum type"));
                };
                format!("{enum_name}.{member}")
            }
            (Some(Prim::EnumName), _) | (Some(Prim::EnumValue), _) => {
                let object = self.single_input(node, &inputs)?;
                let object = self.use_of(object)?;
                let field = if kind.is_prim(Prim::EnumName) {
                    "name"
                } else {
                    "value"
                };
                format!("({object}).{field}")
            }
            (Some(Prim::IsInstance), _) => {
                let object = self.single_input(node, &inputs)?;
                let object = self.use_of(object)?;
                let Some(AttributeValue::Types(types)) = self.graph.attribute(node, "types") else {
                    return Err(self.malformed(node, "isinstance without types"));
                };
                let types = types.clone();
                for ty in &types {
                    self.context.note_type(ty);
                }
                let names: Vec<String> = types.iter().map(Type::annotation_str).collect();
                match names.as_slice() {
                    [single] => format!("isinstance({object}, {single})"),
                    _ => format!("isinstance({object}, ({}))", names.join(", ")),
                }
            }
            (_, "prim::tolist") => {
                let Some(&tensor) = inputs.first() else {
                    return Err(self.malformed(node, "tolist without a tensor"));
                };
                let tensor = self.use_of(tensor)?;
                let ty = outputs
                    .first()
                    .map(|&v| self.graph.value_type(v).annotation_str())
                    .unwrap_or_else(|| "Any".to_string());
                format!("annotate({ty}, {tensor}.tolist())")
            }
            (Some(Prim::TupleUnpack), _) | (Some(Prim::ListUnpack), _) => {
                let source = self.single_input(node, &inputs)?;
                self.use_of(source)?
            }
            (Some(Prim::TupleIndex), _) | (_, "aten::__getitem__") => {
                let [container, index] = inputs.as_slice() else {
                    return Err(self.malformed(node, "indexing needs two inputs"));
                };
                let container = self.use_of(*container)?;
                let index = self.use_of(*index)?;
                format!("{container}[{index}]")
            }
            (Some(Prim::ListConstruct), _) => {
                let list_type = outputs
                    .first()
                    .map(|&v| self.graph.value_type(v).clone())
                    .unwrap_or(Type::Any);
                let element = match &list_type {
                    Type::List(element) => (**element).clone(),
                    _ => Type::Any,
                };
                let items = self.uses_of(&inputs)?;
                let literal = list_literal_plain(&items);
                let inferable = !inputs.is_empty()
                    && element_type_is_inferable(&element)
                    && inputs.iter().all(|&v| *self.graph.value_type(v) == element);
                if inferable {
                    literal
                } else {
                    format!("annotate({}, {literal})", list_type.annotation_str())
                }
            }
            (Some(Prim::DictConstruct), _) => {
                let dict_type = outputs
                    .first()
                    .map(|&v| self.graph.value_type(v).clone())
                    .unwrap_or(Type::Any);
                let items = self.uses_of(&inputs)?;
                let pairs: Vec<String> = items.chunks(2).map(|pair| pair.join(": ")).collect();
                let literal = format!("{{{}}}", pairs.join(", "));
                let inferable = match &dict_type {
                    Type::Dict(key, value) => {
                        !inputs.is_empty()
                            && element_type_is_inferable(value)
                            && inputs.chunks(2).all(|pair| {
                                pair.len() == 2
                                    && *self.graph.value_type(pair[0]) == **key
                                    && *self.graph.value_type(pair[1]) == **value
                            })
                    }
                    _ => false,
                };
                if inferable {
                    literal
                } else {
                    format!("annotate({}, {literal})", dict_type.annotation_str())
                }
            }
            (Some(Prim::RaiseException), _) => {
                let arguments = self.uses_of(&inputs)?;
                format!("ops.prim.RaiseException({})", arguments.join(", "))
            }
            (Some(Prim::Uninitialized), _) => {
                let ty = outputs
                    .first()
                    .map(|&v| self.graph.value_type(v).annotation_str())
                    .unwrap_or_else(|| "Any".to_string());
                format!("uninitialized({ty})")
            }
            (Some(Prim::UncheckedCast), _) => {
                let source = self.single_input(node, &inputs)?;
                let ty = outputs
                    .first()
                    .map(|&v| self.graph.value_type(v).annotation_str())
                    .unwrap_or_else(|| "Any".to_string());
                format!("unchecked_cast({ty}, {})", self.use_of(source)?)
            }
            (Some(Prim::Print), _) => {
                let arguments = self.uses_of(&inputs)?;
                format!("print({})", arguments.join(", "))
            }
            (_, "aten::Int") | (_, "aten::Float") | (_, "aten::Bool") | (_, "aten::str")
                if inputs.len() == 1 && self.graph.node(node).schema.is_some() =>
            {
                let function = match kind.as_str() {
                    "aten::Int" => "int",
                    "aten::Float" => "float",
                    "aten::Bool" => "bool",
                    _ => "str",
                };
                format!("{function}({})", self.use_of(inputs[0])?)
            }
            _ => self.operator_call(node, &inputs)?,
        })
    }

    fn single_input(&self, node: NodeId, inputs: &[ValueId]) -> Result<ValueId, LoadError> {
        match inputs {
            [single] => Ok(*single),
            _ => Err(self.malformed(node, "expected exactly one input")),
        }
    }

    /// `torch.name(args, kw=value)` for `aten::`, `ops.ns.name(...)` otherwise. Trailing
    /// arguments equal to their schema defaults are left out, as PyTorch does.
    fn operator_call(&mut self, node: NodeId, inputs: &[ValueId]) -> Result<String, LoadError> {
        let kind = self.graph.kind(node).clone();
        let namespace = kind.namespace().to_string();
        let name = kind.unqualified().to_string();
        if namespace != "aten"
            && namespace != "prim"
            && (!self.graph.node(node).blocks.is_empty() || kind.as_str().is_empty())
        {
            return Err(self.malformed(node, "this node kind has no Python form"));
        }
        let prefix = if namespace == "aten" {
            "torch".to_string()
        } else {
            format!("ops.{namespace}")
        };
        let schema = self.graph.node(node).schema.clone();
        let mut count = inputs.len();
        if let Some(schema) = &schema {
            if !schema.is_vararg && schema.arguments.len() == inputs.len() {
                while count > 0 {
                    let argument = &schema.arguments[count - 1];
                    let Some(default) = &argument.default else {
                        break;
                    };
                    if !self.constant_equals_default(inputs[count - 1], default) {
                        break;
                    }
                    count -= 1;
                }
            }
        }
        let mut parts = Vec::with_capacity(count);
        for (index, &input) in inputs[..count].iter().enumerate() {
            let text = self.use_of(input)?;
            let keyword = schema
                .as_ref()
                .filter(|s| !s.is_vararg && s.arguments.len() == inputs.len())
                .and_then(|s| s.arguments.get(index))
                .filter(|a| a.kwarg_only)
                .map(|a| a.name.clone());
            match keyword {
                Some(keyword) => parts.push(format!("{keyword}={text}")),
                None => parts.push(text),
            }
        }
        Ok(format!("{prefix}.{name}({})", parts.join(", ")))
    }

    fn constant_equals_default(&self, value: ValueId, default: &DefaultValue) -> bool {
        let Some(node) = self.graph.producer(value) else {
            return false;
        };
        if !self.is_constant_like(node) {
            return false;
        }
        let ty = self.graph.value_type(value);
        let attribute = self.graph.attribute(node, "value");
        match (default, attribute) {
            (DefaultValue::None, None) => *ty == Type::NoneType,
            (DefaultValue::Bool(b), Some(AttributeValue::Int(v))) => {
                *ty == Type::Bool && (*v != 0) == *b
            }
            (DefaultValue::Int(i), Some(AttributeValue::Int(v))) => *ty == Type::Int && v == i,
            (DefaultValue::Float(f), Some(AttributeValue::Float(v))) => v.to_bits() == f.to_bits(),
            (DefaultValue::Str(s), Some(AttributeValue::Str(v))) => *ty == Type::Str && v == s,
            (DefaultValue::IntList(list), Some(AttributeValue::Ints(v))) => v == list,
            (DefaultValue::FloatList(list), Some(AttributeValue::Floats(v))) => {
                v.len() == list.len() && v.iter().zip(list).all(|(a, b)| a.to_bits() == b.to_bits())
            }
            _ => false,
        }
    }
}

fn list_literal(parts: &[String]) -> String {
    list_literal_plain(parts)
}

fn list_literal_plain(parts: &[String]) -> String {
    format!("[{}]", parts.join(", "))
}

/// `a, b, ` as PyTorch prints arguments of method and function calls.
fn trailing_comma_list(parts: &[String]) -> String {
    let mut text = String::new();
    for part in parts {
        text.push_str(part);
        text.push_str(", ");
    }
    text
}

/// Whether a list or dict literal of elements of this type reads back with this type.
fn element_type_is_inferable(element: &Type) -> bool {
    !matches!(
        element,
        Type::Optional(_) | Type::Any | Type::Number | Type::NoneType
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrojit_ir::parse_graph;

    fn body_of(ir: &str) -> String {
        let graph = parse_graph(ir).expect("IR parses");
        let mut context = PrintContext::default();
        let mut printer = FunctionPrinter::new(&graph, &mut context);
        for (index, &input) in graph.inputs().iter().enumerate() {
            printer.name_input(input, &format!("a{index}"));
        }
        printer.print_body(1).expect("prints")
    }

    #[test]
    fn enter_and_exit_print_as_a_with_statement() {
        let text = body_of(
            "graph(%m : Any, %x : Tensor):
  %e : Any = prim::Enter(%m)
  %y : Tensor = aten::neg(%x)
  %z : Any = prim::Exit(%m)
  return (%y)
",
        );
        assert_eq!(text, "  with a0:\n    y = torch.neg(a1)\n  return y\n");
    }

    #[test]
    fn an_empty_with_block_prints_pass_and_a_used_value_gets_a_name() {
        let text = body_of(
            "graph(%m : Any):
  %e : Any = prim::Enter(%m)
  %z : Any = prim::Exit(%m)
  return (%e)
",
        );
        assert_eq!(text, "  with a0 as e:\n    pass\n  return e\n");
    }
}
