//! Bounded JSON reading: size and nesting caps, and typed accessors that name the path of
//! the field that is missing or of the wrong kind.

use crate::error::{schema_error, ExportError, Result};
use serde_json::Value;

/// The largest JSON record the reader parses (a program's JSON is kilobytes to a few MB;
/// parsed values take several times the text's size, so this also bounds memory).
pub const MAX_JSON_BYTES: usize = 64 * 1024 * 1024;
/// The deepest nesting the reader accepts (serde_json itself stops at 128).
pub const MAX_JSON_DEPTH: usize = 100;

/// Parses `bytes` (from record `record`) as JSON, within [`MAX_JSON_BYTES`] and
/// [`MAX_JSON_DEPTH`].
pub fn parse_json(record: &str, bytes: &[u8]) -> Result<Value> {
    let error = |message: String| ExportError::Json {
        record: record.to_string(),
        message,
    };
    if bytes.len() > MAX_JSON_BYTES {
        return Err(error(format!(
            "{} bytes is more than the {MAX_JSON_BYTES} bytes allowed",
            bytes.len()
        )));
    }
    check_depth(bytes).map_err(error)?;
    serde_json::from_slice(bytes).map_err(|e| error(e.to_string()))
}

/// Scans the raw bytes for bracket nesting deeper than [`MAX_JSON_DEPTH`], before parsing,
/// so that no recursive step (parsing, converting, dropping) ever sees a deep value.
fn check_depth(bytes: &[u8]) -> std::result::Result<(), String> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &byte in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_JSON_DEPTH {
                    return Err(format!("nesting deeper than {MAX_JSON_DEPTH} levels"));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// A JSON value with the path that led to it, for error messages.
#[derive(Clone)]
pub struct Node<'a> {
    pub value: &'a Value,
    pub path: String,
}

impl<'a> Node<'a> {
    pub fn new(value: &'a Value, path: impl Into<String>) -> Node<'a> {
        Node {
            value,
            path: path.into(),
        }
    }

    pub fn error(&self, message: impl Into<String>) -> ExportError {
        schema_error(&self.path, message)
    }

    fn object(&self) -> Result<&'a serde_json::Map<String, Value>> {
        self.value
            .as_object()
            .ok_or_else(|| self.error(format!("expected an object, found {}", kind(self.value))))
    }

    /// The elements of a list.
    pub fn items(&self) -> Result<Vec<Node<'a>>> {
        let items = self
            .value
            .as_array()
            .ok_or_else(|| self.error(format!("expected a list, found {}", kind(self.value))))?;
        Ok(items
            .iter()
            .enumerate()
            .map(|(position, value)| Node::new(value, format!("{}[{position}]", self.path)))
            .collect())
    }

    /// The entries of an object, in file order.
    pub fn entries(&self) -> Result<Vec<(String, Node<'a>)>> {
        Ok(self
            .object()?
            .iter()
            .map(|(key, value)| {
                (
                    key.clone(),
                    Node::new(value, format!("{}.{key}", self.path)),
                )
            })
            .collect())
    }

    /// A required field.
    pub fn get(&self, name: &str) -> Result<Node<'a>> {
        self.object()?
            .get(name)
            .map(|value| Node::new(value, format!("{}.{name}", self.path)))
            .ok_or_else(|| self.error(format!("missing field '{name}'")))
    }

    /// An optional field (absent or null gives `None`).
    pub fn get_optional(&self, name: &str) -> Result<Option<Node<'a>>> {
        Ok(self
            .object()?
            .get(name)
            .filter(|value| !value.is_null())
            .map(|value| Node::new(value, format!("{}.{name}", self.path))))
    }

    pub fn is_null(&self) -> bool {
        self.value.is_null()
    }

    pub fn int(&self) -> Result<i64> {
        self.value
            .as_i64()
            .ok_or_else(|| self.error(format!("expected an integer, found {}", kind(self.value))))
    }

    pub fn float(&self) -> Result<f64> {
        match self.value {
            Value::Number(number) => number
                .as_f64()
                .ok_or_else(|| self.error("number out of range")),
            // JSON has no inf/nan; the export serializer writes them as these strings.
            Value::String(text) => match text.as_str() {
                "Infinity" | "inf" => Ok(f64::INFINITY),
                "-Infinity" | "-inf" => Ok(f64::NEG_INFINITY),
                "NaN" | "nan" => Ok(f64::NAN),
                _ => Err(self.error(format!("expected a number, found string '{text}'"))),
            },
            other => Err(self.error(format!("expected a number, found {}", kind(other)))),
        }
    }

    pub fn boolean(&self) -> Result<bool> {
        self.value
            .as_bool()
            .ok_or_else(|| self.error(format!("expected a bool, found {}", kind(self.value))))
    }

    pub fn string(&self) -> Result<String> {
        self.value
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| self.error(format!("expected a string, found {}", kind(self.value))))
    }

    /// The single member of a union object: its name and its value.
    pub fn union(&self) -> Result<(String, Node<'a>)> {
        let object = self.object()?;
        let mut entries = object.iter().filter(|(_, value)| !value.is_null());
        match (entries.next(), entries.next()) {
            (Some((key, value)), None) => Ok((
                key.clone(),
                Node::new(value, format!("{}.{key}", self.path)),
            )),
            // `as_none` is written as `{"as_none": true}`; a union whose only member is
            // null is as good as none set.
            (None, _) => Err(self.error("a union with no member set")),
            (Some(_), Some(_)) => Err(self.error(format!(
                "a union with more than one member set ({})",
                object.keys().cloned().collect::<Vec<_>>().join(", ")
            ))),
        }
    }
}

/// A word for the kind of a JSON value, for messages.
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
