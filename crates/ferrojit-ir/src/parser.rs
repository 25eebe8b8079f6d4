//! Reads graphs in PyTorch's IR text form (what `printer.rs` and PyTorch's `Graph::print`
//! write) back into a `Graph`.
//!
//! Unlike PyTorch's own `parse_ir`, the round trip is exact: value names and unnamed value
//! numbers are kept as written, class types that are not known are kept as named class types,
//! zero-output nodes, `, scope:` suffixes, ` # file:line:col` comments and
//! `with KIND_N = graph(...)` subgraph sections are all read. Malformed text gives a
//! [`IrParseError`] with the line and column of the problem.

use std::collections::HashMap;
use std::sync::Arc;

use ferrojit_tensor::{DType, Tensor};

use crate::attributes::{dtype_from_tensor_type_name, AttributeValue, MAX_TENSOR_DISPLAY_SIZE};
use crate::graph::{BlockId, Graph, InsertPoint, NodeId, SourceLocation, ValueId};
use crate::types::{ClassType, NamedTupleType, TensorRefinement, Type, SCALAR_TYPE_NAMES};

/// Blocks and types nest at most this deep, so no input can overflow the stack.
const MAX_NESTING: usize = 256;

/// Malformed IR text, located by 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct IrParseError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Looks up class types by qualified name, so parsed graphs can share the caller's classes.
pub type ClassResolver<'a> = &'a dyn Fn(&str) -> Option<Type>;

/// Parses one graph (with its `with` subgraph sections). Unknown class names become fresh
/// named class types.
pub fn parse_graph(text: &str) -> Result<Graph, IrParseError> {
    parse_graph_with_classes(text, &|_| None)
}

/// Like [`parse_graph`], resolving qualified names through `classes` first.
pub fn parse_graph_with_classes(
    text: &str,
    classes: ClassResolver<'_>,
) -> Result<Graph, IrParseError> {
    let mut parser = Parser::new(text, classes);
    let graph = parser.parse_graph_section(0)?;
    parser.skip_whitespace();
    if !parser.at_end() {
        if parser.rest().starts_with("with") {
            return Err(parser.error("`with` section names no node of the graph above"));
        }
        return Err(parser.error("unexpected text after the graph"));
    }
    Ok(graph)
}

/// Parses a type in IR style (`int[]`, `Dict(str, Tensor)`, `Float(2, 3, strides=[3, 1])`)
/// or annotation style (`List[int]`, `Optional[Tensor]`, `Tuple[int, str]`).
pub fn parse_type(text: &str) -> Result<Type, IrParseError> {
    let mut parser = Parser::new(text, &|_| None);
    let ty = parser.parse_type(0)?;
    parser.skip_whitespace();
    if !parser.at_end() {
        return Err(parser.error("unexpected text after the type"));
    }
    Ok(ty)
}

/// A node whose printed kind ends in `_N`: it may own the subgraph of a later `with` section.
struct GroupCandidate {
    node: NodeId,
    printed_kind: String,
    base_kind: String,
}

struct Parser<'a> {
    text: &'a str,
    position: usize,
    classes: ClassResolver<'a>,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str, classes: ClassResolver<'a>) -> Parser<'a> {
        Parser {
            text,
            position: 0,
            classes,
        }
    }

    // ----- cursor ----------------------------------------------------------------------

    fn rest(&self) -> &'a str {
        &self.text[self.position..]
    }

    fn at_end(&self) -> bool {
        self.position >= self.text.len()
    }

    fn peek_char(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn location(&self, position: usize) -> (usize, usize) {
        let before = &self.text[..position.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
        let column = before[line_start..].chars().count() + 1;
        (line, column)
    }

    fn error(&self, message: &str) -> IrParseError {
        self.error_at(self.position, message)
    }

    fn error_at(&self, position: usize, message: &str) -> IrParseError {
        let (line, column) = self.location(position);
        let found = match self.text[position.min(self.text.len())..].chars().next() {
            Some(c) if !message.contains("found") => format!(" (found {c:?})"),
            None if !message.contains("found") => " (found end of input)".to_string(),
            _ => String::new(),
        };
        IrParseError {
            line,
            column,
            message: format!("{message}{found}"),
        }
    }

    /// Skips spaces, tabs and newlines.
    fn skip_whitespace(&mut self) {
        let skipped = self
            .rest()
            .find(|c: char| !c.is_whitespace())
            .unwrap_or(self.rest().len());
        self.position += skipped;
    }

    /// Skips spaces and tabs only.
    fn skip_spaces(&mut self) {
        let skipped = self
            .rest()
            .find(|c: char| c != ' ' && c != '\t')
            .unwrap_or(self.rest().len());
        self.position += skipped;
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_whitespace();
        if self.rest().starts_with(token) {
            self.position += token.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, token: &str) -> Result<(), IrParseError> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(self.error(&format!("expected `{token}`")))
        }
    }

    /// A word of identifier characters (letters, digits, `_`).
    fn word(&mut self) -> &'a str {
        self.skip_whitespace();
        let rest = self.rest();
        let length = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        self.position += length;
        &rest[..length]
    }

    fn identifier(&mut self, what: &str) -> Result<&'a str, IrParseError> {
        let start = self.position;
        let word = self.word();
        if word.is_empty() || word.as_bytes()[0].is_ascii_digit() {
            self.position = start;
            self.skip_whitespace();
            return Err(self.error(&format!("expected {what}")));
        }
        Ok(word)
    }

    /// A dotted name such as `__torch__.foo.Bar`.
    fn qualified_name(&mut self) -> Result<String, IrParseError> {
        let mut name = self.identifier("a type name")?.to_string();
        while self.rest().starts_with('.') {
            self.position += 1;
            name.push('.');
            let start = self.position;
            let part = self.rest();
            let length = part
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(part.len());
            if length == 0 {
                return Err(self.error_at(start, "expected a name after `.`"));
            }
            name.push_str(&part[..length]);
            self.position += length;
        }
        Ok(name)
    }

    // ----- graphs ----------------------------------------------------------------------

    /// `graph(%a : T, ...): NODES return (...)` followed by the `with` sections it owns.
    fn parse_graph_section(&mut self, depth: usize) -> Result<Graph, IrParseError> {
        if depth > MAX_NESTING {
            return Err(self.error("subgraphs nest too deeply"));
        }
        self.skip_whitespace();
        let start = self.position;
        if self.word() != "graph" {
            return Err(self.error_at(start, "expected `graph`"));
        }
        let mut graph = Graph::new();
        let top = graph.top_block();
        let mut names: HashMap<String, ValueId> = HashMap::new();
        self.expect("(")?;
        self.parse_parameters(&mut graph, top, &mut names, depth)?;
        self.expect(":")?;
        let mut candidates = Vec::new();
        self.parse_nodes(&mut graph, top, &mut names, &mut candidates, depth)?;
        self.skip_whitespace();
        let start = self.position;
        if self.word() != "return" {
            return Err(self.error_at(start, "expected a node or `return`"));
        }
        self.expect("(")?;
        for value in self.parse_value_uses(&names)? {
            graph.register_output(value);
        }
        // `with` sections: while the next one names a still-unclaimed group node of this
        // graph, it is this graph's (PyTorch prints nested sections before later outer ones).
        let mut next_candidate = 0;
        loop {
            let save = self.position;
            self.skip_whitespace();
            if !self.rest().starts_with("with ") {
                self.position = save;
                break;
            }
            self.position += 4;
            self.skip_whitespace();
            let kind_start = self.position;
            let kind = self.parse_kind()?;
            let Some(candidate) = candidates[next_candidate..]
                .iter()
                .position(|c: &GroupCandidate| c.printed_kind == kind)
            else {
                if depth == 0 {
                    return Err(self.error_at(
                        kind_start,
                        &format!("`with {kind}` names no node of the graph above"),
                    ));
                }
                self.position = save;
                break;
            };
            let candidate = &candidates[next_candidate + candidate];
            next_candidate += 1;
            self.expect("=")?;
            let subgraph = self.parse_graph_section(depth + 1)?;
            let node = candidate.node;
            graph.node_mut(node).kind = crate::graph::Symbol::new(&candidate.base_kind);
            graph.node_mut(node).attributes.insert(
                0,
                (
                    "Subgraph".to_string(),
                    AttributeValue::Graph(Box::new(subgraph)),
                ),
            );
        }
        Ok(graph)
    }

    fn parse_parameters(
        &mut self,
        graph: &mut Graph,
        block: BlockId,
        names: &mut HashMap<String, ValueId>,
        depth: usize,
    ) -> Result<(), IrParseError> {
        if self.eat(")") {
            return Ok(());
        }
        loop {
            let (name, name_position) = self.parse_value_name()?;
            self.expect(":")?;
            let ty = self.parse_type(depth)?;
            let value = graph.add_block_parameter(block, ty);
            self.define(graph, names, value, &name, name_position)?;
            if self.eat(")") {
                return Ok(());
            }
            self.expect(",")?;
        }
    }

    /// `%name` → (name, position of `%`).
    fn parse_value_name(&mut self) -> Result<(String, usize), IrParseError> {
        self.skip_whitespace();
        let start = self.position;
        if !self.rest().starts_with('%') {
            return Err(self.error("expected a value (`%name`)"));
        }
        self.position += 1;
        let rest = self.rest();
        let length = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(rest.len());
        if length == 0 {
            return Err(self.error("expected a value name after `%`"));
        }
        self.position += length;
        let name = &rest[..length];
        // A numbered value prints as its number, so `%02` and `%2` are the same value.
        if name.bytes().all(|b| b.is_ascii_digit()) {
            let trimmed = name.trim_start_matches('0');
            return Ok((
                if trimmed.is_empty() { "0" } else { trimmed }.to_string(),
                start,
            ));
        }
        Ok((name.to_string(), start))
    }

    fn define(
        &self,
        graph: &mut Graph,
        names: &mut HashMap<String, ValueId>,
        value: ValueId,
        name: &str,
        position: usize,
    ) -> Result<(), IrParseError> {
        if names.contains_key(name) {
            return Err(self.error_at(position, &format!("value %{name} is defined twice")));
        }
        if !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit()) {
            let number: u64 = name
                .parse()
                .map_err(|_| self.error_at(position, "value number too large"))?;
            graph.set_value_number(value, number);
        } else if !graph.set_debug_name_exact(value, name) {
            return Err(self.error_at(position, &format!("value %{name} is defined twice")));
        }
        names.insert(name.to_string(), value);
        Ok(())
    }

    /// `%a, %b)` (the opening parenthesis already read).
    fn parse_value_uses(
        &mut self,
        names: &HashMap<String, ValueId>,
    ) -> Result<Vec<ValueId>, IrParseError> {
        let mut values = Vec::new();
        if self.eat(")") {
            return Ok(values);
        }
        loop {
            let (name, position) = self.parse_value_name()?;
            let value = names
                .get(&name)
                .copied()
                .ok_or_else(|| self.error_at(position, &format!("value %{name} is not defined")))?;
            values.push(value);
            if self.eat(")") {
                return Ok(values);
            }
            self.expect(",")?;
        }
    }

    /// Nodes until `return` or `->`.
    fn parse_nodes(
        &mut self,
        graph: &mut Graph,
        block: BlockId,
        names: &mut HashMap<String, ValueId>,
        candidates: &mut Vec<GroupCandidate>,
        depth: usize,
    ) -> Result<(), IrParseError> {
        loop {
            self.skip_whitespace();
            let rest = self.rest();
            if rest.starts_with('%') || rest.starts_with('=') {
                self.parse_node(graph, block, names, candidates, depth)?;
            } else {
                return Ok(());
            }
        }
    }

    fn parse_kind(&mut self) -> Result<String, IrParseError> {
        self.skip_whitespace();
        let namespace = self.identifier("a node kind such as `aten::add`")?;
        if !self.rest().starts_with("::") {
            return Err(self.error("expected `::` in the node kind"));
        }
        self.position += 2;
        let rest = self.rest();
        let length = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(rest.len());
        if length == 0 {
            return Err(self.error("expected the name after `::`"));
        }
        self.position += length;
        Ok(format!("{namespace}::{}", &rest[..length]))
    }

    fn parse_node(
        &mut self,
        graph: &mut Graph,
        block: BlockId,
        names: &mut HashMap<String, ValueId>,
        candidates: &mut Vec<GroupCandidate>,
        depth: usize,
    ) -> Result<(), IrParseError> {
        if depth > MAX_NESTING {
            return Err(self.error("blocks nest too deeply"));
        }
        let mut outputs: Vec<(String, usize, Type)> = Vec::new();
        self.skip_whitespace();
        if self.rest().starts_with('%') {
            loop {
                let (name, position) = self.parse_value_name()?;
                self.expect(":")?;
                let ty = self.parse_type(depth)?;
                outputs.push((name, position, ty));
                if !self.eat(",") {
                    break;
                }
            }
        }
        self.expect("=")?;
        let kind = self.parse_kind()?;
        let output_types: Vec<Type> = outputs.iter().map(|(_, _, t)| t.clone()).collect();
        let node = graph.create_node(&kind, &[], &output_types);
        if self.rest().starts_with('[') {
            self.position += 1;
            let first_type = output_types.first();
            self.parse_attributes(graph, node, first_type, depth)?;
        }
        self.expect("(")?;
        for value in self.parse_value_uses(names)? {
            graph.add_node_input(node, value);
        }
        // Outputs become visible after the inputs are read.
        for (index, (name, position, _)) in outputs.iter().enumerate() {
            let value = graph.node_output(node, index);
            self.define(graph, names, value, name, *position)?;
        }
        self.parse_line_suffix(graph, node)?;
        graph.set_insert_point(InsertPoint::EndOf(block));
        graph.insert_node(node);
        if let Some((base, digits)) = kind.rsplit_once('_') {
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                candidates.push(GroupCandidate {
                    node,
                    printed_kind: kind.clone(),
                    base_kind: base.to_string(),
                });
            }
        }
        // Blocks: `blockN(%p : T): NODES -> (...)`.
        loop {
            let save = self.position;
            self.skip_whitespace();
            if !self.rest().starts_with("block") {
                self.position = save;
                break;
            }
            let label_start = self.position;
            let label = self.word();
            let expected = format!("block{}", graph.node_blocks(node).len());
            if label != expected {
                return Err(self.error_at(label_start, &format!("expected `{expected}`")));
            }
            let nested = graph.add_node_block(node);
            self.expect("(")?;
            self.parse_parameters(graph, nested, names, depth)?;
            self.expect(":")?;
            self.parse_nodes(graph, nested, names, candidates, depth + 1)?;
            self.expect("->")?;
            self.expect("(")?;
            for value in self.parse_value_uses(names)? {
                graph.add_block_output(nested, value);
            }
        }
        Ok(())
    }

    /// `, scope: NAME` and ` # file:line:col` after a node's inputs, up to the end of line.
    fn parse_line_suffix(&mut self, graph: &mut Graph, node: NodeId) -> Result<(), IrParseError> {
        self.skip_spaces();
        if self.rest().starts_with(", scope: ") {
            self.position += ", scope: ".len();
            let rest = self.rest();
            let end = rest
                .find(" # ")
                .into_iter()
                .chain(rest.find('\n'))
                .min()
                .unwrap_or(rest.len());
            graph.node_mut(node).scope = Some(rest[..end].to_string());
            self.position += end;
            self.skip_spaces();
        }
        if self.rest().starts_with('#') {
            let start = self.position;
            let rest = self.rest();
            let end = rest.find('\n').unwrap_or(rest.len());
            let comment = rest[1..end].trim();
            self.position += end;
            let mut parts = comment.rsplitn(3, ':');
            let column = parts.next().and_then(|c| c.parse::<u32>().ok());
            let line = parts.next().and_then(|l| l.parse::<u32>().ok());
            let file = parts.next();
            match (file, line, column) {
                (Some(file), Some(line), Some(column)) => {
                    graph.node_mut(node).source_location = Some(SourceLocation {
                        file: Arc::from(file),
                        line,
                        column,
                        range: None,
                    });
                }
                _ => {
                    return Err(
                        self.error_at(start, "expected a source comment `# file:line:column`")
                    )
                }
            }
        }
        let rest = self.rest();
        if !(rest.is_empty() || rest.starts_with('\n') || rest.starts_with("\r\n")) {
            return Err(self.error("expected the end of the line"));
        }
        Ok(())
    }

    // ----- attributes ------------------------------------------------------------------

    fn parse_attributes(
        &mut self,
        graph: &mut Graph,
        node: NodeId,
        output_type: Option<&Type>,
        depth: usize,
    ) -> Result<(), IrParseError> {
        if self.eat("]") {
            return Ok(());
        }
        loop {
            let name = self.identifier("an attribute name")?.to_string();
            if !self.rest().starts_with('=') {
                return Err(self.error("expected `=` after the attribute name"));
            }
            self.position += 1;
            let value = self.parse_attribute_value(output_type, depth)?;
            if graph.attribute(node, &name).is_some() {
                return Err(self.error(&format!("attribute `{name}` is given twice")));
            }
            graph.set_attribute(node, &name, value);
            if self.eat("]") {
                return Ok(());
            }
            self.expect(",")?;
        }
    }

    fn parse_attribute_value(
        &mut self,
        output_type: Option<&Type>,
        depth: usize,
    ) -> Result<AttributeValue, IrParseError> {
        if let Some(tensor) = self.try_parse_printed_tensor()? {
            return Ok(AttributeValue::Tensor(tensor));
        }
        self.skip_whitespace();
        let rest = self.rest();
        if rest.starts_with('"') {
            return Ok(AttributeValue::Str(self.parse_string()?));
        }
        if rest.starts_with('{') {
            return self.parse_scalar_tensor(output_type);
        }
        if rest.starts_with("<Tensor>") {
            self.position += "<Tensor>".len();
            return Ok(AttributeValue::Tensor(placeholder_tensor(output_type)));
        }
        if rest.starts_with("[<Tensors>]") {
            self.position += "[<Tensors>]".len();
            return Ok(AttributeValue::Tensors(Vec::new()));
        }
        if rest.starts_with("<Graph>") || rest.starts_with("[<Graphs>]") {
            return Err(self.error("graph attributes are written as `with` sections"));
        }
        if rest.starts_with('[') {
            self.position += 1;
            return self.parse_attribute_list(depth);
        }
        if starts_number(rest) {
            let number = self.parse_number()?;
            if let Some(imaginary) = self.parse_imaginary_part()? {
                let real = match number {
                    Number::Int(value) => value as f64,
                    Number::Float(value) => value,
                };
                return Ok(AttributeValue::Complex(real, imaginary));
            }
            return Ok(match number {
                Number::Int(value) => AttributeValue::Int(value),
                Number::Float(value) => AttributeValue::Float(value),
            });
        }
        Ok(AttributeValue::Type(self.parse_type(depth)?))
    }

    fn parse_attribute_list(&mut self, depth: usize) -> Result<AttributeValue, IrParseError> {
        if self.eat("]") {
            return Ok(AttributeValue::Ints(Vec::new()));
        }
        self.skip_whitespace();
        let rest = self.rest();
        if rest.starts_with('"') {
            let mut items = Vec::new();
            loop {
                items.push(self.parse_string()?);
                if self.eat("]") {
                    return Ok(AttributeValue::Strs(items));
                }
                self.expect(",")?;
                self.skip_whitespace();
            }
        }
        if starts_number(rest) {
            let mut items = Vec::new();
            loop {
                items.push(self.parse_number()?);
                if self.eat("]") {
                    break;
                }
                self.expect(",")?;
            }
            let all_ints = items.iter().all(|n| matches!(n, Number::Int(_)));
            return Ok(if all_ints {
                AttributeValue::Ints(
                    items
                        .into_iter()
                        .map(|n| match n {
                            Number::Int(v) => v,
                            Number::Float(v) => v as i64,
                        })
                        .collect(),
                )
            } else {
                AttributeValue::Floats(
                    items
                        .into_iter()
                        .map(|n| match n {
                            Number::Int(v) => v as f64,
                            Number::Float(v) => v,
                        })
                        .collect(),
                )
            });
        }
        let mut types = Vec::new();
        loop {
            types.push(self.parse_type(depth)?);
            if self.eat("]") {
                return Ok(AttributeValue::Types(types));
            }
            self.expect(",")?;
        }
    }

    /// `"..."` with C escapes (`\n`, `\"`, `\\`, `\a`, octal `\123`...).
    fn parse_string(&mut self) -> Result<String, IrParseError> {
        self.skip_whitespace();
        let start = self.position;
        if !self.rest().starts_with('"') {
            return Err(self.error("expected a string"));
        }
        self.position += 1;
        let mut bytes = Vec::new();
        loop {
            let Some(c) = self.peek_char() else {
                return Err(self.error_at(start, "unterminated string"));
            };
            self.position += c.len_utf8();
            match c {
                '"' => break,
                '\n' => return Err(self.error_at(start, "unterminated string")),
                '\\' => {
                    let Some(escaped) = self.peek_char() else {
                        return Err(self.error_at(start, "unterminated string"));
                    };
                    self.position += escaped.len_utf8();
                    match escaped {
                        'n' => bytes.push(b'\n'),
                        't' => bytes.push(b'\t'),
                        'r' => bytes.push(b'\r'),
                        'a' => bytes.push(0x07),
                        'b' => bytes.push(0x08),
                        'f' => bytes.push(0x0c),
                        'v' => bytes.push(0x0b),
                        '\\' => bytes.push(b'\\'),
                        '"' => bytes.push(b'"'),
                        '\'' => bytes.push(b'\''),
                        '?' => bytes.push(b'?'),
                        _ if is_signed_escape(escaped, self.rest()) => {
                            let mut value = escaped as i32 - '0' as i32;
                            for _ in 0..2 {
                                let Some(digit @ ')'..='0') = self.peek_char() else {
                                    return Err(self.error("incomplete signed octal escape"));
                                };
                                value = value * 8 + (digit as i32 - '0' as i32);
                                self.position += 1;
                            }
                            let byte = i8::try_from(value)
                                .map_err(|_| self.error("signed octal escape out of range"))?;
                            bytes.push(byte as u8);
                        }
                        '0'..='7' => {
                            let mut value = escaped as u32 - '0' as u32;
                            for _ in 0..2 {
                                match self.peek_char() {
                                    Some(d @ '0'..='7') => {
                                        value = value * 8 + (d as u32 - '0' as u32);
                                        self.position += 1;
                                    }
                                    _ => break,
                                }
                            }
                            let byte = u8::try_from(value)
                                .map_err(|_| self.error("octal escape out of range"))?;
                            bytes.push(byte);
                        }
                        other => {
                            return Err(self.error(&format!("unknown escape `\\{other}`")));
                        }
                    }
                }
                other => {
                    let mut buffer = [0u8; 4];
                    bytes.extend_from_slice(other.encode_utf8(&mut buffer).as_bytes());
                }
            }
        }
        String::from_utf8(bytes).map_err(|_| self.error_at(start, "string is not valid UTF-8"))
    }

    /// The `+2.j` / `-0.25j` / `+infj` after a complex constant's real part (PyTorch prints
    /// `prim::Constant[value=1.+2.j]`), or `None` when no imaginary part follows.
    fn parse_imaginary_part(&mut self) -> Result<Option<f64>, IrParseError> {
        let rest = self.rest();
        let sign = match rest.as_bytes().first() {
            Some(b'+') => 1.0,
            Some(b'-') => -1.0,
            _ => return Ok(None),
        };
        let body = &rest[1..];
        for (word, value) in [("infj", f64::INFINITY), ("nanj", f64::NAN)] {
            if body.starts_with(word) {
                self.position += 1 + word.len();
                return Ok(Some(sign * value));
            }
        }
        if !body.starts_with(|c: char| c.is_ascii_digit()) {
            return Ok(None);
        }
        self.position += 1;
        let magnitude = match self.parse_number()? {
            Number::Int(value) => value as f64,
            Number::Float(value) => value,
        };
        if !self.eat("j") {
            return Err(self.error("a complex constant's imaginary part must end in `j`"));
        }
        Ok(Some(sign * magnitude))
    }

    fn parse_number(&mut self) -> Result<Number, IrParseError> {
        self.skip_whitespace();
        let start = self.position;
        let rest = self.rest();
        let (sign, body) = match rest.strip_prefix('-') {
            Some(body) => (-1.0, body),
            None => (1.0, rest),
        };
        let sign_length = rest.len() - body.len();
        for word in ["inf", "nan"] {
            if body.starts_with(word)
                && !body[word.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            {
                self.position += sign_length + word.len();
                let value = if word == "inf" {
                    f64::INFINITY
                } else {
                    f64::NAN
                };
                return Ok(Number::Float(sign * value));
            }
        }
        let bytes = body.as_bytes();
        let mut length = 0;
        let mut is_float = false;
        while length < bytes.len() {
            let b = bytes[length];
            if b.is_ascii_digit() {
                length += 1;
            } else if b == b'.' {
                is_float = true;
                length += 1;
            } else if (b == b'e' || b == b'E') && length > 0 {
                is_float = true;
                length += 1;
                if length < bytes.len() && (bytes[length] == b'+' || bytes[length] == b'-') {
                    length += 1;
                }
            } else {
                break;
            }
        }
        let digits = &rest[..sign_length + length];
        self.position += sign_length + length;
        if length == 0 {
            return Err(self.error_at(start, "expected a number"));
        }
        if is_float {
            digits
                .parse::<f64>()
                .map(Number::Float)
                .map_err(|_| self.error_at(start, &format!("invalid number `{digits}`")))
        } else {
            digits
                .parse::<i64>()
                .map(Number::Int)
                .map_err(|_| self.error_at(start, &format!("invalid integer `{digits}`")))
        }
    }

    /// `{5.5}` / `{3}`: a one-element tensor, typed by the output when it says.
    fn parse_scalar_tensor(
        &mut self,
        output_type: Option<&Type>,
    ) -> Result<AttributeValue, IrParseError> {
        self.expect("{")?;
        let number = self.parse_number()?;
        self.expect("}")?;
        let declared = declared_dtype(output_type);
        let tensor = match number {
            Number::Int(value) => Tensor::from_vec(vec![value], &[]).map(|t| match declared {
                Some(dtype) if dtype != DType::Int64 => t.to_dtype(dtype),
                _ => t,
            }),
            Number::Float(value) => Tensor::from_vec(vec![value], &[])
                .map(|t| t.to_dtype(declared.unwrap_or(DType::Float32))),
        }
        .map_err(|e| self.error(&format!("bad tensor constant: {e}")))?;
        Ok(AttributeValue::Tensor(tensor))
    }

    /// A small tensor as at::print writes it on one line:
    /// ` 1  2  3 [ CPUFloatType{3} ]`. Returns `None` (consuming nothing) when the text at
    /// the cursor is not of that form.
    fn try_parse_printed_tensor(&mut self) -> Result<Option<Tensor>, IrParseError> {
        let start = self.position;
        let rest = self.rest();
        let line_end = rest.find('\n').unwrap_or(rest.len());
        let Some(marker) = rest[..line_end].find("[ CPU") else {
            return Ok(None);
        };
        let values_text = &rest[..marker];
        let mut tokens: Vec<&str> = values_text.split_whitespace().collect();
        let mut scale = 1.0;
        if tokens.len() >= 2 && tokens[1] == "*" {
            match tokens[0].parse::<f64>() {
                Ok(value) => scale = value,
                Err(_) => return Ok(None),
            }
            tokens.drain(..2);
        }
        let mut values = Vec::with_capacity(tokens.len());
        for token in &tokens {
            match token.parse::<f64>() {
                Ok(value) => values.push(value * scale),
                Err(_) => return Ok(None),
            }
        }
        let after = &rest[marker + 2..];
        let Some(close) = after.find(" ]") else {
            return Ok(None);
        };
        let descriptor = &after[..close];
        let Some((type_name, dims)) = descriptor.split_once('{') else {
            return Ok(None);
        };
        let Some(dims) = dims.strip_suffix('}') else {
            return Ok(None);
        };
        let Some(dtype) = dtype_from_tensor_type_name(type_name) else {
            return Err(self.error_at(
                start + marker,
                &format!("unknown tensor type `{type_name}`"),
            ));
        };
        let mut sizes = Vec::new();
        for dim in dims.split(',').filter(|d| !d.is_empty()) {
            sizes.push(
                dim.trim()
                    .parse::<usize>()
                    .map_err(|_| self.error_at(start + marker, "bad tensor size"))?,
            );
        }
        let numel = sizes.iter().try_fold(1usize, |acc, &s| acc.checked_mul(s));
        if numel != Some(values.len()) || values.len() > MAX_TENSOR_DISPLAY_SIZE {
            return Err(self.error_at(start, "tensor values do not match the printed sizes"));
        }
        let tensor = Tensor::from_vec(values, &sizes)
            .map_err(|e| self.error_at(start, &format!("bad tensor constant: {e}")))?
            .to_dtype(dtype);
        self.position += marker + 2 + close + 2;
        Ok(Some(tensor))
    }

    // ----- types -----------------------------------------------------------------------

    fn parse_type(&mut self, depth: usize) -> Result<Type, IrParseError> {
        if depth > MAX_NESTING {
            return Err(self.error("types nest too deeply"));
        }
        self.skip_whitespace();
        let mut ty = if self.rest().starts_with('(') {
            self.position += 1;
            Type::Tuple(self.parse_type_list(")", depth)?)
        } else {
            self.parse_named_type(depth)?
        };
        loop {
            if self.rest().starts_with("[]") {
                self.position += 2;
                ty = Type::list(ty);
            } else if self.rest().starts_with('?') {
                self.position += 1;
                ty = Type::Optional(Box::new(ty));
            } else {
                return Ok(ty);
            }
        }
    }

    /// Types separated by commas up to `close` (the opening bracket already read).
    fn parse_type_list(&mut self, close: &str, depth: usize) -> Result<Vec<Type>, IrParseError> {
        let mut types = Vec::new();
        if self.eat(close) {
            return Ok(types);
        }
        loop {
            types.push(self.parse_type(depth + 1)?);
            if self.eat(close) {
                return Ok(types);
            }
            self.expect(",")?;
        }
    }

    fn parse_single_contained(&mut self, depth: usize) -> Result<Type, IrParseError> {
        let close = if self.rest().starts_with('[') {
            "]"
        } else {
            ")"
        };
        self.position += 1;
        let inner = self.parse_type(depth + 1)?;
        self.expect(close)?;
        Ok(inner)
    }

    fn parse_named_type(&mut self, depth: usize) -> Result<Type, IrParseError> {
        let start = self.position;
        let name = self.qualified_name()?;
        let opens = self.rest().starts_with('(') || self.rest().starts_with('[');
        let ty = match name.as_str() {
            "Dict" if opens => {
                let close = if self.rest().starts_with('[') {
                    "]"
                } else {
                    ")"
                };
                self.position += 1;
                let key = self.parse_type(depth + 1)?;
                self.expect(",")?;
                let value = self.parse_type(depth + 1)?;
                self.expect(close)?;
                Type::dict(key, value)
            }
            "List" if opens => Type::list(self.parse_single_contained(depth)?),
            "Optional" if opens => Type::Optional(Box::new(self.parse_single_contained(depth)?)),
            "Future" if opens => Type::Future(Box::new(self.parse_single_contained(depth)?)),
            "Await" if opens => Type::Await(Box::new(self.parse_single_contained(depth)?)),
            "RRef" if opens => Type::RRef(Box::new(self.parse_single_contained(depth)?)),
            "Tuple" if opens => {
                let close = if self.rest().starts_with('[') {
                    "]"
                } else {
                    ")"
                };
                self.position += 1;
                // `Tuple[()]` is the empty tuple in annotation style.
                if self.eat("()") {
                    self.expect(close)?;
                    Type::Tuple(Vec::new())
                } else {
                    Type::Tuple(self.parse_type_list(close, depth)?)
                }
            }
            "Union" if opens => {
                let close = if self.rest().starts_with('[') {
                    "]"
                } else {
                    ")"
                };
                self.position += 1;
                Type::Union(self.parse_type_list(close, depth)?)
            }
            "NamedTuple" if self.rest().starts_with('(') => {
                self.position += 1;
                let mut fields = Vec::new();
                if !self.eat(")") {
                    loop {
                        let field = self.identifier("a field name")?.to_string();
                        self.expect(":")?;
                        let ty = self.parse_type(depth + 1)?;
                        fields.push((field, ty));
                        if self.eat(")") {
                            break;
                        }
                        self.expect(",")?;
                    }
                }
                Type::NamedTuple(Arc::new(NamedTupleType { name: None, fields }))
            }
            "Enum" if self.rest().starts_with('<') => {
                self.position += 1;
                let inner = self.qualified_name()?;
                self.expect(">")?;
                Type::Enum(inner)
            }
            "InterfaceType" if self.rest().starts_with('<') => {
                self.position += 1;
                let inner = self.qualified_name()?;
                self.expect(">")?;
                Type::Interface(inner)
            }
            "Tensor" if self.rest().starts_with('(') => self.parse_tensor_refinement(None)?,
            "Tensor" => Type::Tensor,
            "int" | "SymInt" => Type::Int,
            "float" | "SymFloat" => Type::Float,
            "bool" | "SymBool" => Type::Bool,
            "str" => Type::Str,
            "NoneType" | "None" => Type::NoneType,
            "Device" => Type::Device,
            "Generator" => Type::Generator,
            "Scalar" | "number" => Type::Number,
            "complex" => Type::Complex,
            "Layout" => Type::Layout,
            "ScalarType" => Type::ScalarType,
            "MemoryFormat" => Type::MemoryFormat,
            "QScheme" => Type::QScheme,
            "Storage" => Type::Storage,
            "Stream" => Type::Stream,
            "Capsule" => Type::Capsule,
            "Any" => Type::Any,
            "list" | "AnyList" => Type::AnyList,
            "tuple" | "AnyTuple" => Type::AnyTuple,
            "AnyClassType" => Type::AnyClass,
            "AnyEnumType" => Type::AnyEnum,
            "Function" => Type::Function(None),
            other => {
                if let Some(scalar) = scalar_type_prefix(other) {
                    let has_tensor_suffix = other.len() > scalar.len();
                    if has_tensor_suffix || self.rest().starts_with('(') {
                        let refined = if self.rest().starts_with('(') {
                            self.parse_tensor_refinement(Some(scalar))?
                        } else {
                            Type::RefinedTensor(Box::new(TensorRefinement {
                                scalar_type: Some(scalar.to_string()),
                                ..TensorRefinement::default()
                            }))
                        };
                        // `FloatTensor(...)` means rank unknown; `Float(...)` rank known.
                        if let Type::RefinedTensor(mut refinement) = refined {
                            if has_tensor_suffix {
                                refinement.sizes = None;
                                refinement.strides = None;
                            } else if refinement.sizes.is_none() {
                                refinement.sizes = Some(Vec::new());
                            }
                            return Ok(Type::RefinedTensor(refinement));
                        }
                        return Ok(refined);
                    }
                }
                if !other.contains('.') {
                    return Err(self.error_at(start, &format!("unknown type `{other}`")));
                }
                match (self.classes)(other) {
                    Some(ty) => ty,
                    None => Type::Class(ClassType::new(other, false)),
                }
            }
        };
        Ok(ty)
    }

    /// `(2, *, strides=[3, 1], requires_grad=0, device=cpu)` after a tensor type name.
    fn parse_tensor_refinement(&mut self, scalar_type: Option<&str>) -> Result<Type, IrParseError> {
        self.expect("(")?;
        let mut refinement = TensorRefinement {
            scalar_type: scalar_type.map(str::to_string),
            ..TensorRefinement::default()
        };
        let mut sizes = Vec::new();
        let mut saw_sizes_section = false;
        if !self.eat(")") {
            loop {
                self.skip_whitespace();
                let rest = self.rest();
                if rest.starts_with('*') {
                    self.position += 1;
                    sizes.push(None);
                    saw_sizes_section = true;
                } else if rest.starts_with("SS(") {
                    // A symbolic size (`SS(-2)`, PyTorch's symbolic type verbosity): unknown,
                    // so it reads as `*`; which symbols are equal is not kept.
                    self.position += 3;
                    match self.parse_number()? {
                        Number::Int(symbol) if symbol < 0 => sizes.push(None),
                        _ => return Err(self.error("a symbolic size is a negative integer")),
                    }
                    self.expect(")")?;
                    saw_sizes_section = true;
                } else if rest.starts_with(|c: char| c.is_ascii_digit()) {
                    match self.parse_number()? {
                        Number::Int(size) => sizes.push(Some(size)),
                        Number::Float(_) => return Err(self.error("sizes are integers")),
                    }
                    saw_sizes_section = true;
                } else {
                    let key =
                        self.identifier("a size, `strides=`, `requires_grad=` or `device=`")?;
                    self.expect("=")?;
                    match key {
                        "strides" => {
                            self.expect("[")?;
                            let mut strides = Vec::new();
                            if !self.eat("]") {
                                loop {
                                    if self.eat("*") {
                                        strides.push(None);
                                    } else {
                                        match self.parse_number()? {
                                            Number::Int(s) => strides.push(Some(s)),
                                            Number::Float(_) => {
                                                return Err(self.error("strides are integers"))
                                            }
                                        }
                                    }
                                    if self.eat("]") {
                                        break;
                                    }
                                    self.expect(",")?;
                                }
                            }
                            refinement.strides = Some(strides);
                        }
                        "requires_grad" => match self.parse_number()? {
                            Number::Int(0) => refinement.requires_grad = Some(false),
                            Number::Int(1) => refinement.requires_grad = Some(true),
                            _ => return Err(self.error("requires_grad is 0 or 1")),
                        },
                        "device" => {
                            self.skip_whitespace();
                            let rest = self.rest();
                            let length = rest
                                .find(|c: char| {
                                    !(c.is_ascii_alphanumeric() || c == ':' || c == '_')
                                })
                                .unwrap_or(rest.len());
                            if length == 0 {
                                return Err(self.error("expected a device"));
                            }
                            refinement.device = Some(rest[..length].to_string());
                            self.position += length;
                        }
                        other => {
                            return Err(self.error(&format!("unknown tensor type field `{other}`")))
                        }
                    }
                }
                if self.eat(")") {
                    break;
                }
                self.expect(",")?;
            }
        }
        // `Float(requires_grad=0)` is rank 0: the parentheses mean the rank is known.
        let _ = saw_sizes_section;
        refinement.sizes = Some(sizes);
        Ok(Type::RefinedTensor(Box::new(refinement)))
    }
}

enum Number {
    Int(i64),
    Float(f64),
}

fn starts_number(text: &str) -> bool {
    let body = text.strip_prefix('-').unwrap_or(text);
    body.starts_with(|c: char| c.is_ascii_digit())
        || ((body.starts_with("inf") || body.starts_with("nan"))
            && !body[3..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
}

/// `Float` in `Float` / `FloatTensor`.
fn scalar_type_prefix(name: &str) -> Option<&'static str> {
    SCALAR_TYPE_NAMES
        .iter()
        .copied()
        .find(|&scalar| name == scalar || name.strip_prefix(scalar) == Some("Tensor"))
}

fn declared_dtype(output_type: Option<&Type>) -> Option<DType> {
    let Some(Type::RefinedTensor(refinement)) = output_type else {
        return None;
    };
    Some(match refinement.scalar_type.as_deref()? {
        "Float" => DType::Float32,
        "Double" => DType::Float64,
        "Half" => DType::Float16,
        "BFloat16" => DType::BFloat16,
        "Long" => DType::Int64,
        "Int" => DType::Int32,
        "Short" => DType::Int16,
        "Char" => DType::Int8,
        "Byte" => DType::UInt8,
        "Bool" => DType::Bool,
        _ => return None,
    })
}

/// `<Tensor>` carries no values: a zero tensor shaped and typed as the output declares (or
/// eleven float zeros, the smallest tensor that prints as `<Tensor>`).
fn placeholder_tensor(output_type: Option<&Type>) -> Tensor {
    let dtype = declared_dtype(output_type).unwrap_or(DType::Float32);
    let sizes: Option<Vec<usize>> = match output_type {
        Some(Type::RefinedTensor(refinement)) => refinement.sizes.as_ref().and_then(|sizes| {
            sizes
                .iter()
                .map(|s| s.and_then(|s| usize::try_from(s).ok()))
                .collect()
        }),
        _ => None,
    };
    let sizes = sizes
        .filter(|s| {
            s.iter()
                .try_fold(1usize, |acc, &d| acc.checked_mul(d))
                .is_some_and(|n| n > MAX_TENSOR_DISPLAY_SIZE && n <= 1 << 24)
        })
        .unwrap_or_else(|| vec![MAX_TENSOR_DISPLAY_SIZE + 1]);
    Tensor::zeros(&sizes, dtype)
        .unwrap_or_else(|_| Tensor::scalar_tensor(ferrojit_tensor::Scalar::Float(0.0), dtype))
}

/// Whether the escape starting with `first` (then `rest`) is PyTorch's escape of a byte of
/// 0x80 or more, printed as a signed char: three "digits", each '0' plus a value in -7..=0,
/// at least one of them below '0' (`\0)+` for 0xC3). Plain octal never has one.
fn is_signed_escape(first: char, rest: &str) -> bool {
    let is_negative = |c: char| (')'..='/').contains(&c);
    // The three characters an escape may span, as far as they are digits of either kind.
    let mut window = std::iter::once(first)
        .chain(rest.chars())
        .take(3)
        .take_while(|c| (')'..='7').contains(c));
    (')'..='0').contains(&first) && window.any(is_negative)
}
