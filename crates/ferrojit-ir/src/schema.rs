//! Function schemas (`aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`):
//! data types, a parser for PyTorch's schema language, and the canonical printer.

use std::fmt;

use crate::attributes::format_float;
use crate::types::Type;

/// The largest `N` accepted in a fixed-size list type `int[N]`.
const MAX_FIXED_LIST_LENGTH: usize = 4096;

/// Alias annotation on an argument or return: `Tensor(a!)`, `Tensor(a -> *)`, `Tensor(*)`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AliasInfo {
    pub before_sets: Vec<String>,
    pub after_sets: Vec<String>,
    pub is_write: bool,
    /// Annotations on contained types, e.g. `Tensor(a)[]`'s element.
    pub contained: Vec<AliasInfo>,
}

impl fmt::Display for AliasInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(")?;
        write!(f, "{}", self.before_sets.join("|"))?;
        if self.after_sets != self.before_sets {
            write!(f, " -> {}", self.after_sets.join("|"))?;
        }
        if self.is_write {
            write!(f, "!")?;
        }
        write!(f, ")")
    }
}

/// A default value written in a schema.
#[derive(Debug, Clone, PartialEq)]
pub enum DefaultValue {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    IntList(Vec<i64>),
    FloatList(Vec<f64>),
    BoolList(Vec<bool>),
    /// `[]` for a list of a type with no literal form (e.g. `Tensor[] x=[]`).
    EmptyList,
    /// A named enum-ish constant such as `contiguous_format` or `Mean`.
    Named(String),
}

impl fmt::Display for DefaultValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn list<T>(
            f: &mut fmt::Formatter<'_>,
            items: &[T],
            show: impl Fn(&T) -> String,
        ) -> fmt::Result {
            let parts: Vec<String> = items.iter().map(show).collect();
            write!(f, "[{}]", parts.join(", "))
        }
        match self {
            DefaultValue::None => write!(f, "None"),
            DefaultValue::Bool(value) => write!(f, "{}", if *value { "True" } else { "False" }),
            DefaultValue::Int(value) => write!(f, "{value}"),
            DefaultValue::Float(value) => write!(f, "{}", format_float(*value)),
            // PyTorch's quoting (`printQuotedString`), which the schema parser reads back.
            DefaultValue::Str(value) => write!(f, "{}", crate::attributes::quote_string(value)),
            DefaultValue::IntList(values) => list(f, values, |v| v.to_string()),
            DefaultValue::FloatList(values) => list(f, values, |v| format_float(*v)),
            DefaultValue::BoolList(values) => {
                list(
                    f,
                    values,
                    |v| if *v { "True".into() } else { "False".into() },
                )
            }
            DefaultValue::EmptyList => write!(f, "[]"),
            DefaultValue::Named(name) => write!(f, "{name}"),
        }
    }
}

/// One argument or return of a schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Argument {
    pub name: String,
    pub ty: Type,
    /// The spelling used in the schema (`ScalarType?`, `int[2]`, `SymInt`), for printing.
    pub type_spelling: String,
    /// Fixed list length from `int[2]`; a single int is then broadcast to the list.
    pub list_length: Option<usize>,
    pub default: Option<DefaultValue>,
    pub kwarg_only: bool,
    pub alias_info: Option<AliasInfo>,
}

/// A parsed operator schema.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionSchema {
    /// Qualified name, e.g. `aten::add`.
    pub name: String,
    /// Overload name, e.g. `Tensor` (empty when there is none).
    pub overload_name: String,
    pub arguments: Vec<Argument>,
    pub returns: Vec<Argument>,
    /// `...` at the end of the arguments.
    pub is_vararg: bool,
    /// `...` at the end of the returns.
    pub is_varret: bool,
}

impl FunctionSchema {
    /// `aten::add.Tensor`, or `aten::relu` when there is no overload name.
    pub fn full_name(&self) -> String {
        if self.overload_name.is_empty() {
            self.name.clone()
        } else {
            format!("{}.{}", self.name, self.overload_name)
        }
    }

    /// True when any argument is written in place (`Tensor(a!)`).
    pub fn is_mutable(&self) -> bool {
        self.arguments
            .iter()
            .any(|a| a.alias_info.as_ref().is_some_and(|info| info.is_write))
    }
}

impl fmt::Display for Argument {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.alias_info {
            Some(info) => {
                // The annotation is a tree with one level per `[]` suffix, outermost first:
                // `Tensor(a)[]` annotates the element, `t[](a!)` the list, and nested lists
                // (`t(a)[][](b)`) one level each. The parser wraps each `[]` level in an
                // empty annotation when none is written, so empty levels print nothing.
                let spelling = &self.type_spelling;
                let base_end = spelling.find(['[', '?']).unwrap_or(spelling.len());
                let suffix = &spelling[base_end..];
                let list_levels = suffix.matches("[]").count();
                let mut levels = Vec::with_capacity(list_levels + 1);
                let mut level = Some(info);
                for _ in 0..=list_levels {
                    levels.push(level);
                    level = level.and_then(|info| info.contained.first());
                }
                // `levels[0]` is the outermost list's annotation, `levels[list_levels]` the
                // base type's.
                fn written(info: Option<&AliasInfo>) -> Option<&AliasInfo> {
                    info.filter(|info| {
                        !info.before_sets.is_empty() || !info.after_sets.is_empty() || info.is_write
                    })
                }
                write!(f, "{}", &spelling[..base_end])?;
                if let Some(annotation) = written(levels[list_levels]) {
                    write!(f, "{annotation}")?;
                }
                let mut rest = suffix;
                let mut remaining = list_levels;
                while !rest.is_empty() {
                    if let Some(after) = rest.strip_prefix("[]") {
                        remaining -= 1;
                        write!(f, "[]")?;
                        if let Some(annotation) = written(levels[remaining]) {
                            write!(f, "{annotation}")?;
                        }
                        rest = after;
                    } else {
                        let next = rest[1..].find(['[', '?']).map_or(rest.len(), |at| at + 1);
                        write!(f, "{}", &rest[..next])?;
                        rest = &rest[next..];
                    }
                }
            }
            None => write!(f, "{}", self.type_spelling)?,
        }
        if !self.name.is_empty() {
            write!(f, " {}", self.name)?;
        }
        if let Some(default) = &self.default {
            write!(f, "={default}")?;
        }
        Ok(())
    }
}

impl fmt::Display for FunctionSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(", self.full_name())?;
        let mut printed_star = false;
        for (index, argument) in self.arguments.iter().enumerate() {
            if index > 0 {
                write!(f, ", ")?;
            }
            if argument.kwarg_only && !printed_star {
                write!(f, "*, ")?;
                printed_star = true;
            }
            write!(f, "{argument}")?;
        }
        if self.is_vararg {
            if !self.arguments.is_empty() {
                write!(f, ", ")?;
            }
            write!(f, "...")?;
        }
        write!(f, ") -> ")?;
        if self.returns.is_empty() && self.is_varret {
            return write!(f, "...");
        }
        // A lone tuple return keeps its own parentheses: `-> ((str, t))`.
        let single_unnamed = self.returns.len() == 1
            && !self.is_varret
            && self.returns[0].name.is_empty()
            && !matches!(self.returns[0].ty, Type::Tuple(_));
        // A lone return whose type itself starts with a parenthesis (`(str, t)[]`) is
        // wrapped too, or it would read back as a list of returns.
        let printed_single = self.returns.first().map(|ret| ret.to_string());
        if single_unnamed
            && !printed_single
                .as_deref()
                .is_some_and(|p| p.starts_with('('))
        {
            write!(f, "{}", printed_single.unwrap_or_default())
        } else if single_unnamed {
            write!(f, "({})", printed_single.unwrap_or_default())
        } else {
            write!(f, "(")?;
            for (index, ret) in self.returns.iter().enumerate() {
                if index > 0 {
                    write!(f, ", ")?;
                }
                write!(f, "{ret}")?;
            }
            if self.is_varret {
                if !self.returns.is_empty() {
                    write!(f, ", ")?;
                }
                write!(f, "...")?;
            }
            write!(f, ")")
        }
    }
}

/// A schema that failed to parse, with the byte offset of the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid schema at offset {offset}: {message}\n  {schema}")]
pub struct SchemaParseError {
    pub message: String,
    pub offset: usize,
    pub schema: String,
}

/// Parses a schema string.
pub fn parse_schema(text: &str) -> Result<FunctionSchema, SchemaParseError> {
    let mut parser = SchemaParser { text, position: 0 };
    let schema = parser.parse_schema()?;
    parser.skip_whitespace();
    if parser.position != text.len() {
        return Err(parser.error("unexpected text after the schema"));
    }
    Ok(schema)
}

/// Parses a schema type spelling (`int[]?`, `Tensor(a!)`) into a type; for tests and tools.
pub fn parse_schema_type(text: &str) -> Result<Type, SchemaParseError> {
    let mut parser = SchemaParser { text, position: 0 };
    let (ty, _, _, _) = parser.parse_type()?;
    Ok(ty)
}

struct SchemaParser<'a> {
    text: &'a str,
    position: usize,
}

impl<'a> SchemaParser<'a> {
    fn error(&self, message: &str) -> SchemaParseError {
        SchemaParseError {
            message: message.to_string(),
            offset: self.position,
            schema: self.text.to_string(),
        }
    }

    fn rest(&self) -> &'a str {
        &self.text[self.position..]
    }

    fn skip_whitespace(&mut self) {
        while let Some(c) = self.rest().chars().next() {
            if c.is_whitespace() {
                self.position += c.len_utf8();
            } else {
                break;
            }
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_whitespace();
        self.rest().chars().next()
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

    fn expect(&mut self, token: &str) -> Result<(), SchemaParseError> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(self.error(&format!("expected '{token}'")))
        }
    }

    fn identifier(&mut self) -> Result<&'a str, SchemaParseError> {
        self.skip_whitespace();
        let rest = self.rest();
        let length = rest
            .char_indices()
            .find(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '_'))
            .map(|(i, _)| i)
            .unwrap_or(rest.len());
        if length == 0 || rest.as_bytes()[0].is_ascii_digit() {
            return Err(self.error("expected an identifier"));
        }
        self.position += length;
        Ok(&rest[..length])
    }

    fn parse_schema(&mut self) -> Result<FunctionSchema, SchemaParseError> {
        let mut name = self.identifier()?.to_string();
        if self.eat("::") {
            name.push_str("::");
            name.push_str(self.identifier()?);
        }
        let mut overload_name = String::new();
        if self.eat(".") {
            overload_name = self.identifier()?.to_string();
        }
        self.expect("(")?;
        let (arguments, is_vararg) = self.parse_argument_list(")", true)?;
        self.expect("->")?;
        let (returns, is_varret) = if self.eat("...") {
            (Vec::new(), true)
        } else if self.peek() == Some('(') {
            self.expect("(")?;
            self.parse_argument_list(")", false)?
        } else {
            (vec![self.parse_argument(false, false)?], false)
        };
        Ok(FunctionSchema {
            name,
            overload_name,
            arguments,
            returns,
            is_vararg,
            is_varret,
        })
    }

    fn parse_argument_list(
        &mut self,
        close: &str,
        is_arguments: bool,
    ) -> Result<(Vec<Argument>, bool), SchemaParseError> {
        let mut arguments = Vec::new();
        let mut kwarg_only = false;
        let mut vararg = false;
        if self.eat(close) {
            return Ok((arguments, false));
        }
        loop {
            if vararg {
                return Err(self.error("'...' must be the last element"));
            }
            if self.eat("...") {
                vararg = true;
            } else if is_arguments && self.eat("*") {
                if kwarg_only {
                    return Err(self.error("'*' appears twice"));
                }
                kwarg_only = true;
            } else {
                arguments.push(self.parse_argument(is_arguments, kwarg_only)?);
            }
            if self.eat(close) {
                break;
            }
            self.expect(",")?;
        }
        Ok((arguments, vararg))
    }

    fn parse_argument(
        &mut self,
        is_argument: bool,
        kwarg_only: bool,
    ) -> Result<Argument, SchemaParseError> {
        let (ty, list_length, alias_info, spelling_without_alias) = self.parse_type()?;
        let mut name = String::new();
        let mut default = None;
        if let Some(c) = self.peek() {
            if c.is_ascii_alphabetic() || c == '_' {
                name = self.identifier()?.to_string();
            }
        }
        if is_argument && self.eat("=") {
            default = Some(self.parse_default(&ty, list_length)?);
        }
        Ok(Argument {
            name,
            ty,
            type_spelling: spelling_without_alias,
            list_length,
            default,
            kwarg_only,
            alias_info,
        })
    }

    /// Returns (type, fixed list length, alias info, spelling without the alias annotation).
    fn parse_type(
        &mut self,
    ) -> Result<(Type, Option<usize>, Option<AliasInfo>, String), SchemaParseError> {
        self.skip_whitespace();
        let mut spelling = String::new();
        let mut ty = if self.peek() == Some('(') {
            // Tuple type: (Tensor, Tensor)
            self.expect("(")?;
            let mut elements = Vec::new();
            let mut parts = Vec::new();
            if !self.eat(")") {
                loop {
                    let (element, _, _, element_spelling) = self.parse_type()?;
                    elements.push(element);
                    parts.push(element_spelling);
                    if self.eat(")") {
                        break;
                    }
                    self.expect(",")?;
                }
            }
            spelling = format!("({})", parts.join(", "));
            Type::Tuple(elements)
        } else {
            let base = self.identifier()?;
            spelling.push_str(base);
            match base {
                "Dict" => {
                    self.expect("(")?;
                    let (key, _, _, key_spelling) = self.parse_type()?;
                    self.expect(",")?;
                    let (value, _, _, value_spelling) = self.parse_type()?;
                    self.expect(")")?;
                    spelling = format!("Dict({key_spelling}, {value_spelling})");
                    Type::dict(key, value)
                }
                "Future" | "Await" | "RRef" => {
                    self.expect("(")?;
                    let (inner, _, _, inner_spelling) = self.parse_type()?;
                    self.expect(")")?;
                    spelling = format!("{base}({inner_spelling})");
                    // Futures are not modelled yet (issue 4); the element type is dropped.
                    let _ = inner;
                    Type::Any
                }
                other => base_type(other)
                    .ok_or_else(|| self.error(&format!("unknown type '{other}'")))?,
            }
        };
        let mut alias_info = None;
        // Alias annotation directly after the base type: Tensor(a!)
        if self.rest().starts_with('(') {
            alias_info = Some(self.parse_alias_annotation()?);
        }
        let mut list_length = None;
        loop {
            if self.rest().starts_with("[]") {
                self.position += 2;
                spelling.push_str("[]");
                ty = Type::list(ty);
                if let Some(inner) = alias_info.take() {
                    alias_info = Some(AliasInfo {
                        contained: vec![inner],
                        ..AliasInfo::default()
                    });
                }
                if self.rest().starts_with('(') {
                    let outer = self.parse_alias_annotation()?;
                    let contained = alias_info.map(|a| a.contained).unwrap_or_default();
                    alias_info = Some(AliasInfo { contained, ..outer });
                }
            } else if self.rest().starts_with('[') {
                self.position += 1;
                let digits: String = self
                    .rest()
                    .chars()
                    .take_while(|c| c.is_ascii_digit())
                    .collect();
                if digits.is_empty() {
                    return Err(self.error("expected a list length or ']'"));
                }
                self.position += digits.len();
                // A scalar default fills the whole list (`int[2] stride=1`), so the length
                // sizes an allocation: real schemas use single digits.
                let length: usize = digits
                    .parse()
                    .ok()
                    .filter(|&length| length <= MAX_FIXED_LIST_LENGTH)
                    .ok_or_else(|| self.error("list length too large"))?;
                if !self.rest().starts_with(']') {
                    return Err(self.error("expected ']'"));
                }
                self.position += 1;
                spelling.push_str(&format!("[{length}]"));
                list_length = Some(length);
                ty = Type::list(ty);
            } else if self.rest().starts_with('?') {
                self.position += 1;
                spelling.push('?');
                ty = Type::optional(ty);
            } else {
                break;
            }
        }
        Ok((ty, list_length, alias_info, spelling))
    }

    fn parse_alias_annotation(&mut self) -> Result<AliasInfo, SchemaParseError> {
        self.expect("(")?;
        let mut info = AliasInfo::default();
        let parse_sets = |parser: &mut Self| -> Result<Vec<String>, SchemaParseError> {
            let mut sets = Vec::new();
            loop {
                if parser.eat("*") {
                    sets.push("*".to_string());
                } else {
                    sets.push(parser.identifier()?.to_string());
                }
                if !parser.eat("|") {
                    break;
                }
            }
            Ok(sets)
        };
        info.before_sets = parse_sets(self)?;
        if self.eat("->") {
            info.after_sets = parse_sets(self)?;
        } else {
            info.after_sets = info.before_sets.clone();
        }
        if self.eat("!") {
            info.is_write = true;
        }
        self.expect(")")?;
        Ok(info)
    }

    fn parse_default(
        &mut self,
        ty: &Type,
        list_length: Option<usize>,
    ) -> Result<DefaultValue, SchemaParseError> {
        self.skip_whitespace();
        let element_type = match ty {
            Type::Optional(inner) => inner.as_ref(),
            other => other,
        };
        if self.eat("None") {
            return Ok(DefaultValue::None);
        }
        if self.peek() == Some('[') {
            self.expect("[")?;
            let mut items = Vec::new();
            if !self.eat("]") {
                loop {
                    items.push(self.parse_scalar_literal()?);
                    if self.eat("]") {
                        break;
                    }
                    self.expect(",")?;
                }
            }
            return list_default(items, element_type)
                .ok_or_else(|| self.error("invalid list default"));
        }
        let literal = self.parse_scalar_literal()?;
        // `int[2] stride=1` means [1, 1].
        if let (Type::List(_), Some(length)) = (element_type, list_length) {
            return list_default(vec![literal; length], element_type)
                .ok_or_else(|| self.error("invalid list default"));
        }
        Ok(match (element_type, literal) {
            (Type::Float, DefaultValue::Int(v)) => DefaultValue::Float(v as f64),
            (_, literal) => literal,
        })
    }

    fn parse_scalar_literal(&mut self) -> Result<DefaultValue, SchemaParseError> {
        self.skip_whitespace();
        let rest = self.rest();
        if let Some(quote) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') {
            // Bytes, because octal escapes (`\303\251`, as PyTorch prints non-ASCII text)
            // spell UTF-8 one byte at a time.
            let mut value: Vec<u8> = Vec::new();
            let mut chars = rest.char_indices().skip(1).peekable();
            while let Some((index, c)) = chars.next() {
                if c == quote {
                    self.position += index + 1;
                    return match String::from_utf8(value) {
                        Ok(text) => Ok(DefaultValue::Str(text)),
                        Err(_) => Err(self.error("string default is not valid UTF-8")),
                    };
                }
                if c != '\\' {
                    let mut buffer = [0u8; 4];
                    value.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
                    continue;
                }
                let Some((_, escaped)) = chars.next() else {
                    break;
                };
                match escaped {
                    'n' => value.push(b'\n'),
                    't' => value.push(b'\t'),
                    'r' => value.push(b'\r'),
                    'a' => value.push(0x07),
                    'b' => value.push(0x08),
                    'f' => value.push(0x0c),
                    'v' => value.push(0x0b),
                    '0'..='7' => {
                        let mut code = escaped as u32 - '0' as u32;
                        for _ in 0..2 {
                            match chars.peek() {
                                Some(&(_, digit @ '0'..='7')) => {
                                    code = code * 8 + (digit as u32 - '0' as u32);
                                    chars.next();
                                }
                                _ => break,
                            }
                        }
                        let byte = u8::try_from(code)
                            .map_err(|_| self.error("octal escape out of range"))?;
                        value.push(byte);
                    }
                    other => {
                        let mut buffer = [0u8; 4];
                        value.extend_from_slice(other.encode_utf8(&mut buffer).as_bytes());
                    }
                }
            }
            return Err(self.error("unterminated string"));
        }
        if self.eat("True") {
            return Ok(DefaultValue::Bool(true));
        }
        if self.eat("False") {
            return Ok(DefaultValue::Bool(false));
        }
        let number: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '.' | '_'))
            .collect();
        if number.is_empty() {
            return Err(self.error("expected a default value"));
        }
        self.position += number.len();
        if let Ok(value) = number.parse::<i64>() {
            return Ok(DefaultValue::Int(value));
        }
        if let Ok(value) = number.parse::<f64>() {
            return Ok(DefaultValue::Float(value));
        }
        match number.as_str() {
            "inf" => Ok(DefaultValue::Float(f64::INFINITY)),
            "-inf" => Ok(DefaultValue::Float(f64::NEG_INFINITY)),
            name if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
                Ok(DefaultValue::Named(name.to_string()))
            }
            _ => Err(self.error(&format!("invalid default value '{number}'"))),
        }
    }
}

fn list_default(items: Vec<DefaultValue>, list_type: &Type) -> Option<DefaultValue> {
    let element = match list_type {
        Type::List(element) => element.as_ref(),
        _ => return None,
    };
    if items.is_empty() {
        return Some(match element {
            Type::Int => DefaultValue::IntList(Vec::new()),
            Type::Float => DefaultValue::FloatList(Vec::new()),
            Type::Bool => DefaultValue::BoolList(Vec::new()),
            _ => DefaultValue::EmptyList,
        });
    }
    match element {
        Type::Int => items
            .into_iter()
            .map(|i| match i {
                DefaultValue::Int(v) => Some(v),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()
            .map(DefaultValue::IntList),
        Type::Float => items
            .into_iter()
            .map(|i| match i {
                DefaultValue::Int(v) => Some(v as f64),
                DefaultValue::Float(v) => Some(v),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()
            .map(DefaultValue::FloatList),
        Type::Bool => items
            .into_iter()
            .map(|i| match i {
                DefaultValue::Bool(v) => Some(v),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()
            .map(DefaultValue::BoolList),
        _ => None,
    }
}

/// Maps a schema base type name to a type. ScalarType, Layout and MemoryFormat are ints at
/// run time in TorchScript, as in PyTorch.
fn base_type(name: &str) -> Option<Type> {
    Some(match name {
        "Tensor" => Type::Tensor,
        "int" | "SymInt" | "ScalarType" | "Layout" | "MemoryFormat" | "QScheme" => Type::Int,
        "float" | "SymFloat" => Type::Float,
        "bool" | "SymBool" => Type::Bool,
        "complex" => Type::Complex,
        "str" | "Dimname" => Type::Str,
        "Scalar" | "number" => Type::Number,
        "Device" | "DeviceIndex" => Type::Device,
        "Generator" => Type::Generator,
        "NoneType" => Type::NoneType,
        "Any" | "Storage" | "Stream" | "AnyClassType" | "AnyEnumType" | "Capsule" => Type::Any,
        "t" | "t1" | "t2" | "tVal" | "K" | "V" => Type::Var(name.to_string()),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) {
        let schema = parse_schema(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(schema.to_string(), text);
    }

    #[test]
    fn parses_and_prints_common_schemas() {
        round_trip("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
        round_trip("aten::add.complex(complex a, complex b) -> complex");
        round_trip(
            "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
        );
        round_trip("aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor");
        round_trip("aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor");
        round_trip("aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
        round_trip(
            "aten::div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
        );
        round_trip(
            "aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
        );
        round_trip("prim::TupleUnpack(Any tup) -> ...");
        round_trip("aten::format(str self, ...) -> str");
        round_trip("aten::append.t(t[](a!) self, t(c -> *) el) -> t[](a!)");
        round_trip("aten::popitem.str(Dict(str, t)(a!) self) -> ((str, t))");
    }

    #[test]
    fn huge_fixed_list_lengths_are_refused_before_allocating() {
        let error = parse_schema("f(int[7777777777777773] padding=0) -> ()").unwrap_err();
        assert!(
            error.to_string().contains("list length too large"),
            "{error}"
        );
        assert!(parse_schema("f(int[4096] padding=0) -> ()").is_ok());
    }

    #[test]
    fn nested_list_annotations_print_at_their_level() {
        for text in [
            "f(t[](a!)[] x) -> int",
            "f(Tensor(a!)[][] x) -> Tensor[](a)[]",
            "f(Tensor(a)[](b)[](c!) x) -> Tensor(a)[3]",
            "f(Tensor(a)?[] x) -> Tensor(b)[]?",
        ] {
            let printed = parse_schema(text).unwrap().to_string();
            assert_eq!(printed, text);
            assert_eq!(parse_schema(&printed).unwrap(), parse_schema(text).unwrap());
        }
    }

    #[test]
    fn reads_defaults_and_alias_sets() {
        let schema = parse_schema(
            "aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, int[2] padding=0, int[2] dilation=1, int groups=1) -> Tensor",
        )
        .unwrap();
        assert_eq!(
            schema.arguments[3].default,
            Some(DefaultValue::IntList(vec![1, 1]))
        );
        assert_eq!(schema.arguments[3].list_length, Some(2));
        assert_eq!(schema.arguments[2].ty, Type::optional(Type::Tensor));
        let schema = parse_schema(
            "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
        )
        .unwrap();
        assert!(schema.is_mutable());
        assert!(schema.arguments[2].kwarg_only);
        let alias = schema.arguments[0].alias_info.as_ref().unwrap();
        assert_eq!(alias.before_sets, vec!["a".to_string()]);
        assert!(alias.is_write);
        let schema = parse_schema(
            "aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
        )
        .unwrap();
        let alias = schema.arguments[0].alias_info.as_ref().unwrap();
        assert_eq!(alias.after_sets, vec!["*".to_string()]);
        assert_eq!(schema.returns[0].ty, Type::list(Type::Tensor));
        assert_eq!(
            schema.returns[0]
                .alias_info
                .as_ref()
                .unwrap()
                .contained
                .len(),
            1
        );
    }

    #[test]
    fn string_defaults_use_pytorch_escapes_both_ways() {
        let schema = parse_schema(r"aten::strip(str self, str chars=' \n\t\f\v') -> str").unwrap();
        assert_eq!(
            schema.arguments[1].default,
            Some(DefaultValue::Str(" \n\t\u{c}\u{b}".to_string()))
        );
        let printed = schema.to_string();
        assert_eq!(
            printed,
            r#"aten::strip(str self, str chars=" \n\t\f\v") -> str"#
        );
        assert_eq!(parse_schema(&printed).unwrap(), schema);
        // Non-ASCII text prints as octal UTF-8 bytes, as PyTorch's printQuotedString does.
        let accented = parse_schema("my::f(str s='\\303\\251') -> str").unwrap();
        assert_eq!(
            accented.arguments[0].default,
            Some(DefaultValue::Str("é".to_string()))
        );
        assert!(parse_schema("my::f(str s='\\377') -> str").is_err());
    }

    #[test]
    fn lone_list_of_tuples_return_keeps_its_parentheses() {
        let schema = parse_schema("aten::items.str(Dict(str, t) self) -> ((str, t)[])").unwrap();
        assert_eq!(
            schema.to_string(),
            "aten::items.str(Dict(str, t) self) -> ((str, t)[])"
        );
    }

    #[test]
    fn malformed_schemas_are_errors() {
        assert!(parse_schema("aten::add(Tensor self").is_err());
        assert!(parse_schema("aten::add(Blob self) -> Tensor").is_err());
        assert!(parse_schema("aten::add(Tensor self) -> Tensor trailing junk").is_err());
        assert!(parse_schema("").is_err());
    }
}
