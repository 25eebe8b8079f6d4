//! JSON text written the way Python's `json.dumps` writes it with its default settings
//! (`", "` and `": "` separators, `ensure_ascii`, floats as Python's `repr`), so that the
//! records ferrojit writes read like the ones `torch.export.save` writes. Objects keep the
//! order their keys were added in, as Python dicts do.

/// A JSON value whose objects keep their key order.
#[derive(Debug, Clone, PartialEq)]
pub enum JsonValue {
    Null,
    Bool(bool),
    Int(i64),
    /// Written as Python's `repr`; infinities and NaN become the strings PyTorch's
    /// serializer writes for them (`"Infinity"`, `"-Infinity"`, `"NaN"`).
    Float(f64),
    String(String),
    List(Vec<JsonValue>),
    Object(Vec<(String, JsonValue)>),
}

impl JsonValue {
    /// An object from `(key, value)` pairs, in order.
    pub fn object<K: Into<String>>(entries: impl IntoIterator<Item = (K, JsonValue)>) -> Self {
        JsonValue::Object(
            entries
                .into_iter()
                .map(|(key, value)| (key.into(), value))
                .collect(),
        )
    }

    /// An object with one member: the form of every union in the export schema.
    pub fn union(member: &str, value: JsonValue) -> Self {
        JsonValue::Object(vec![(member.to_string(), value)])
    }

    pub fn string(text: &str) -> Self {
        JsonValue::String(text.to_string())
    }

    /// `Some` as its value, `None` as null.
    pub fn optional<T>(value: Option<T>, write: impl FnOnce(T) -> JsonValue) -> Self {
        value.map(write).unwrap_or(JsonValue::Null)
    }

    /// The text `json.dumps` gives for this value.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            JsonValue::Null => out.push_str("null"),
            JsonValue::Bool(true) => out.push_str("true"),
            JsonValue::Bool(false) => out.push_str("false"),
            JsonValue::Int(value) => out.push_str(&value.to_string()),
            JsonValue::Float(value) => {
                if value.is_nan() {
                    write_string("NaN", out);
                } else if value.is_infinite() {
                    write_string(
                        if *value > 0.0 {
                            "Infinity"
                        } else {
                            "-Infinity"
                        },
                        out,
                    );
                } else {
                    out.push_str(&python_float_repr(*value));
                }
            }
            JsonValue::String(text) => write_string(text, out),
            JsonValue::List(items) => {
                out.push('[');
                for (position, item) in items.iter().enumerate() {
                    if position > 0 {
                        out.push_str(", ");
                    }
                    item.write(out);
                }
                out.push(']');
            }
            JsonValue::Object(entries) => {
                out.push('{');
                for (position, (key, value)) in entries.iter().enumerate() {
                    if position > 0 {
                        out.push_str(", ");
                    }
                    write_string(key, out);
                    out.push_str(": ");
                    value.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// A string as `json.dumps` writes it with `ensure_ascii=True`: the short escapes for
/// quote, backslash and the common control characters, `\u00XX` for the other controls,
/// and `\uXXXX` (surrogate pairs above the basic plane) for everything beyond ASCII.
fn write_string(text: &str, out: &mut String) {
    out.push('"');
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            ' '..='~' => out.push(character),
            other => {
                let mut units = [0u16; 2];
                for unit in other.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

/// Python's `repr` of a finite float: the shortest digits that read back to the same value,
/// in positional notation when the decimal exponent is in -4..16 and in scientific notation
/// (`1e-05`, `1.5e+16`) otherwise.
pub fn python_float_repr(value: f64) -> String {
    // Rust's `{:e}` gives the same shortest round-trip digits, as `D.DDDDeN`.
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("`{:e}` always writes an exponent");
    let exponent: i32 = exponent.parse().expect("`{:e}` writes an integer exponent");
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let mut text = String::from(sign);
    if (-4..16).contains(&exponent) {
        if exponent < 0 {
            text.push_str("0.");
            text.push_str(&"0".repeat((-exponent - 1) as usize));
            text.push_str(&digits);
        } else {
            let integer_len = exponent as usize + 1;
            if digits.len() <= integer_len {
                text.push_str(&digits);
                text.push_str(&"0".repeat(integer_len - digits.len()));
                text.push_str(".0");
            } else {
                text.push_str(&digits[..integer_len]);
                text.push('.');
                text.push_str(&digits[integer_len..]);
            }
        }
    } else {
        text.push_str(&digits[..1]);
        if digits.len() > 1 {
            text.push('.');
            text.push_str(&digits[1..]);
        }
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        text.push_str(&format!("e{exponent_sign}{:02}", exponent.abs()));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_read_as_python_writes_them() {
        for (value, expected) in [
            (1.0, "1.0"),
            (-0.0, "-0.0"),
            (0.1, "0.1"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1.5e16, "1.5e+16"),
            (1e15, "1000000000000000.0"),
            (123.456, "123.456"),
            (-2.5e-7, "-2.5e-07"),
            (1e100, "1e+100"),
            (0.30000000000000004, "0.30000000000000004"),
        ] {
            assert_eq!(python_float_repr(value), expected, "{value}");
        }
    }

    #[test]
    fn strings_and_objects_read_as_python_writes_them() {
        let value = JsonValue::object([
            ("a", JsonValue::string("x\"\\\n\u{1}é😀")),
            (
                "b",
                JsonValue::List(vec![JsonValue::Int(-3), JsonValue::Null]),
            ),
            ("c", JsonValue::Float(f64::INFINITY)),
        ]);
        assert_eq!(
            value.to_text(),
            r#"{"a": "x\"\\\n\u0001\u00e9\ud83d\ude00", "b": [-3, null], "c": "Infinity"}"#
        );
    }
}
