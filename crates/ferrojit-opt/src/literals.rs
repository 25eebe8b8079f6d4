//! Value literals for file tests (`# ARGS:` and `# EXPECT:` lines), and the exact comparison
//! that differential runs use.
//!
//! The syntax is Python's for the values a graph takes: `None`, `True`, `False`, ints, floats
//! (`1.5`, `-2e3`, `inf`, `nan`), strings in single or double quotes, lists `[...]`, tuples
//! `(...)`, and tensors `tensor([[1., 2.], [3., 4.]], dtype=float32)` (the dtype defaults
//! to float32 when an element is written as a float, int64 otherwise). Nesting is bounded.

use ferrojit_ir::Type;
use ferrojit_runtime::IValue;
use ferrojit_tensor::{DType, Tensor};

/// How deeply literals may nest (lists in lists), so a test file cannot overflow the stack.
const MAX_NESTING: usize = 32;

/// Parses a comma-separated list of literals (the text after `# ARGS:`).
pub fn parse_literals(text: &str) -> Result<Vec<IValue>, String> {
    let mut parser = LiteralParser {
        text: text.as_bytes(),
        position: 0,
    };
    let mut values = Vec::new();
    parser.skip_spaces();
    if parser.at_end() {
        return Ok(values);
    }
    loop {
        values.push(parser.value(0)?.into_value()?);
        parser.skip_spaces();
        if parser.at_end() {
            return Ok(values);
        }
        parser.expect(b',')?;
    }
}

/// A parsed literal before it becomes a value: numbers stay apart from tensors' elements so
/// that a tensor's nested list can be turned into one flat buffer.
enum Literal {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Literal>),
    Tuple(Vec<Literal>),
    Tensor(Tensor),
}

impl Literal {
    fn into_value(self) -> Result<IValue, String> {
        Ok(match self {
            Literal::None => IValue::None,
            Literal::Bool(value) => IValue::Bool(value),
            Literal::Int(value) => IValue::Int(value),
            Literal::Float(value) => IValue::Double(value),
            Literal::Str(text) => IValue::string(&text),
            Literal::Tensor(tensor) => IValue::from(tensor),
            Literal::Tuple(items) => IValue::tuple(
                items
                    .into_iter()
                    .map(Literal::into_value)
                    .collect::<Result<_, _>>()?,
            ),
            Literal::List(items) => {
                let values: Vec<IValue> = items
                    .into_iter()
                    .map(Literal::into_value)
                    .collect::<Result<_, _>>()?;
                let element_type = match values.first() {
                    Some(first) => first.type_of(),
                    None => Type::Tensor,
                };
                if values.iter().any(|value| value.type_of() != element_type) {
                    return Err("a list literal mixes element types".to_string());
                }
                IValue::list(element_type, values)
            }
        })
    }
}

struct LiteralParser<'a> {
    text: &'a [u8],
    position: usize,
}

impl LiteralParser<'_> {
    fn at_end(&self) -> bool {
        self.position >= self.text.len()
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.position).copied()
    }

    fn skip_spaces(&mut self) {
        while self.peek().is_some_and(|byte| byte.is_ascii_whitespace()) {
            self.position += 1;
        }
    }

    fn error(&self, message: &str) -> String {
        format!("literal at byte {}: {message}", self.position)
    }

    fn expect(&mut self, byte: u8) -> Result<(), String> {
        self.skip_spaces();
        if self.peek() == Some(byte) {
            self.position += 1;
            Ok(())
        } else {
            Err(self.error(&format!("expected '{}'", byte as char)))
        }
    }

    fn word(&mut self) -> &str {
        let start = self.position;
        while self
            .peek()
            .is_some_and(|byte| byte.is_ascii_alphanumeric() || b"_.+-".contains(&byte))
        {
            self.position += 1;
        }
        std::str::from_utf8(&self.text[start..self.position]).unwrap_or("")
    }

    fn value(&mut self, depth: usize) -> Result<Literal, String> {
        if depth > MAX_NESTING {
            return Err(self.error("literals nest too deeply"));
        }
        self.skip_spaces();
        match self.peek() {
            None => Err(self.error("expected a value")),
            Some(b'[') => {
                self.position += 1;
                Ok(Literal::List(self.sequence(b']', depth)?))
            }
            Some(b'(') => {
                self.position += 1;
                Ok(Literal::Tuple(self.sequence(b')', depth)?))
            }
            Some(quote @ (b'\'' | b'"')) => {
                self.position += 1;
                let start = self.position;
                while self.peek().is_some_and(|byte| byte != quote) {
                    self.position += 1;
                }
                let text = std::str::from_utf8(&self.text[start..self.position])
                    .map_err(|_| self.error("a string is not UTF-8"))?
                    .to_string();
                self.expect(quote)?;
                Ok(Literal::Str(text))
            }
            Some(_) => {
                let word = self.word().to_string();
                match word.as_str() {
                    "" => Err(self.error("expected a value")),
                    "None" => Ok(Literal::None),
                    "True" => Ok(Literal::Bool(true)),
                    "False" => Ok(Literal::Bool(false)),
                    "tensor" => self.tensor(depth),
                    _ => number(&word).ok_or_else(|| self.error(&format!("bad value '{word}'"))),
                }
            }
        }
    }

    /// Comma-separated values up to `close` (already past the opening bracket).
    fn sequence(&mut self, close: u8, depth: usize) -> Result<Vec<Literal>, String> {
        let mut items = Vec::new();
        loop {
            self.skip_spaces();
            if self.peek() == Some(close) {
                self.position += 1;
                return Ok(items);
            }
            items.push(self.value(depth + 1)?);
            self.skip_spaces();
            if self.peek() == Some(b',') {
                self.position += 1;
            } else {
                self.expect(close)?;
                return Ok(items);
            }
        }
    }

    /// `tensor(<nested list or number>[, dtype=NAME])`, after the word `tensor`.
    fn tensor(&mut self, depth: usize) -> Result<Literal, String> {
        self.expect(b'(')?;
        let data = self.value(depth + 1)?;
        let mut sizes = Vec::new();
        let mut elements = Vec::new();
        flatten(&data, 0, &mut sizes, &mut elements).map_err(|message| self.error(&message))?;
        self.skip_spaces();
        let any_float = elements.iter().any(|(_, is_float)| *is_float);
        let mut dtype = if any_float {
            DType::Float32
        } else {
            DType::Int64
        };
        if self.peek() == Some(b',') {
            self.position += 1;
            self.skip_spaces();
            let keyword = self.word().to_string();
            if keyword != "dtype" {
                return Err(self.error(&format!("unknown tensor keyword '{keyword}'")));
            }
            self.expect(b'=')?;
            self.skip_spaces();
            let name = self.word().to_string();
            let name = name.strip_prefix("torch.").unwrap_or(&name).to_string();
            dtype =
                dtype_named(&name).ok_or_else(|| self.error(&format!("unknown dtype '{name}'")))?;
        }
        self.expect(b')')?;
        let values: Vec<f64> = elements.iter().map(|(value, _)| *value).collect();
        let tensor = Tensor::from_vec(values, &sizes)
            .map_err(|error| self.error(&error.to_string()))?
            .to_dtype(dtype);
        Ok(Literal::Tensor(tensor))
    }
}

fn number(word: &str) -> Option<Literal> {
    if let Ok(value) = word.parse::<i64>() {
        return Some(Literal::Int(value));
    }
    match word {
        "inf" => Some(Literal::Float(f64::INFINITY)),
        "-inf" => Some(Literal::Float(f64::NEG_INFINITY)),
        "nan" => Some(Literal::Float(f64::NAN)),
        _ => word.parse::<f64>().ok().map(Literal::Float),
    }
}

fn dtype_named(name: &str) -> Option<DType> {
    Some(match name {
        "float32" | "float" => DType::Float32,
        "float64" | "double" => DType::Float64,
        "float16" | "half" => DType::Float16,
        "bfloat16" => DType::BFloat16,
        "int64" | "long" => DType::Int64,
        "int32" | "int" => DType::Int32,
        "int16" | "short" => DType::Int16,
        "int8" => DType::Int8,
        "uint8" => DType::UInt8,
        "bool" => DType::Bool,
        _ => return None,
    })
}

/// Flattens a tensor literal's nested lists into row-major elements `(value, written as a
/// float)`, recording the sizes and checking that the nesting is rectangular.
fn flatten(
    literal: &Literal,
    dim: usize,
    sizes: &mut Vec<usize>,
    elements: &mut Vec<(f64, bool)>,
) -> Result<(), String> {
    match literal {
        Literal::List(items) => {
            if sizes.len() == dim {
                sizes.push(items.len());
            } else if sizes.get(dim) != Some(&items.len()) {
                return Err("a tensor literal is not rectangular".to_string());
            }
            for item in items {
                flatten(item, dim + 1, sizes, elements)?;
            }
            Ok(())
        }
        _ if dim < sizes.len() => Err("a tensor literal is not rectangular".to_string()),
        Literal::Int(value) => {
            elements.push((*value as f64, false));
            Ok(())
        }
        Literal::Float(value) => {
            elements.push((*value, true));
            Ok(())
        }
        Literal::Bool(value) => {
            elements.push((f64::from(u8::from(*value)), false));
            Ok(())
        }
        _ => Err("a tensor literal holds something other than numbers".to_string()),
    }
}

/// Deep-copies a value, so that two runs of a graph that mutates its inputs start from equal,
/// unshared inputs.
pub fn deep_copy(value: &IValue) -> Result<IValue, String> {
    Ok(match value {
        IValue::Tensor(_) => {
            let tensor = value.to_tensor().map_err(|error| error.to_string())?;
            IValue::from(tensor.clone_tensor())
        }
        IValue::List(list) => IValue::list(
            list.element_type().clone(),
            list.to_vec()
                .iter()
                .map(deep_copy)
                .collect::<Result<_, _>>()?,
        ),
        IValue::Tuple(tuple) => IValue::tuple(
            tuple
                .items
                .iter()
                .map(deep_copy)
                .collect::<Result<_, _>>()?,
        ),
        other => other.clone(),
    })
}

/// Whether two values are identical: the same kind, and for tensors the same dtype, sizes and
/// element bits (NaN equals NaN). `Err` says where they first differ; `path` names the value.
pub fn identical(actual: &IValue, expected: &IValue, path: &str) -> Result<(), String> {
    match (actual, expected) {
        (IValue::Tensor(_), IValue::Tensor(_)) => {
            let (a, b) = (
                actual.to_tensor().map_err(|e| e.to_string())?,
                expected.to_tensor().map_err(|e| e.to_string())?,
            );
            if a.dtype() != b.dtype() || a.sizes() != b.sizes() {
                return Err(format!(
                    "{path}: {:?}{:?} against {:?}{:?}",
                    a.dtype(),
                    a.sizes(),
                    b.dtype(),
                    b.sizes()
                ));
            }
            let equal = if a.dtype().is_floating_point() {
                let (x, y) = (a.to_f64_vec(), b.to_f64_vec());
                x.iter()
                    .zip(&y)
                    .all(|(p, q)| p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan()))
            } else {
                a.to_i64_vec() == b.to_i64_vec()
            };
            if equal {
                Ok(())
            } else {
                Err(format!("{path}: tensor elements differ"))
            }
        }
        (IValue::Double(a), IValue::Double(b)) => {
            if a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()) {
                Ok(())
            } else {
                Err(format!("{path}: {a} against {b}"))
            }
        }
        (IValue::List(_), IValue::List(_)) | (IValue::Tuple(_), IValue::Tuple(_)) => {
            let items = |value: &IValue| -> Vec<IValue> {
                match value {
                    IValue::List(list) => list.to_vec(),
                    IValue::Tuple(tuple) => tuple.items.to_vec(),
                    _ => Vec::new(),
                }
            };
            let (a, b) = (items(actual), items(expected));
            if a.len() != b.len() {
                return Err(format!("{path}: {} items against {}", a.len(), b.len()));
            }
            for (index, (x, y)) in a.iter().zip(&b).enumerate() {
                identical(x, y, &format!("{path}[{index}]"))?;
            }
            Ok(())
        }
        _ => {
            if actual.tag_name() == expected.tag_name()
                && actual.python_repr() == expected.python_repr()
            {
                Ok(())
            } else {
                Err(format!(
                    "{path}: {} against {}",
                    actual.python_repr(),
                    expected.python_repr()
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_lists_tuples_and_tensors_parse() {
        let values = parse_literals("1, -2.5, True, None, 'a b', [1, 2], (3, 4.0)").unwrap();
        assert_eq!(values.len(), 7);
        assert!(matches!(values[0], IValue::Int(1)));
        assert!(matches!(values[1], IValue::Double(v) if v == -2.5));
        assert_eq!(values[4].to_str().unwrap(), "a b");
        assert_eq!(values[5].to_int_vec().unwrap(), vec![1, 2]);
        let tensor = parse_literals("tensor([[1., 2.], [3., 4.]], dtype=float64)").unwrap();
        let tensor = tensor[0].to_tensor().unwrap();
        assert_eq!(tensor.dtype(), DType::Float64);
        assert_eq!(tensor.sizes(), &[2, 2]);
        assert_eq!(tensor.to_f64_vec(), vec![1.0, 2.0, 3.0, 4.0]);
        let ints = parse_literals("tensor([1, 2, 3])").unwrap();
        assert_eq!(ints[0].to_tensor().unwrap().dtype(), DType::Int64);
    }

    #[test]
    fn malformed_literals_are_errors() {
        for bad in [
            "tensor([[1], [2, 3]])",
            "[1, 2.0]",
            "tensor([1.0], dtype=complex7)",
            "1 2",
            "'unterminated",
            "frobnicate",
        ] {
            assert!(parse_literals(bad).is_err(), "{bad} should not parse");
        }
        let deep = "[".repeat(100) + &"]".repeat(100);
        assert!(parse_literals(&deep).unwrap_err().contains("nest"));
    }

    #[test]
    fn identical_tells_bits_apart() {
        let a = parse_literals("tensor([1.0, nan])").unwrap();
        let b = parse_literals("tensor([1.0, nan])").unwrap();
        let c = parse_literals("tensor([1.0, 2.0])").unwrap();
        assert!(identical(&a[0], &b[0], "x").is_ok());
        assert!(identical(&a[0], &c[0], "x").is_err());
        let d = parse_literals("tensor([1.0, 2.0], dtype=float64)").unwrap();
        assert!(identical(&c[0], &d[0], "x").is_err());
    }
}
