//! Node attributes (`value=1`, `name="weight"`) and how PyTorch prints them.

use ferrojit_tensor::Tensor;

use crate::types::Type;

/// A node attribute. Kinds follow PyTorch's `AttributeKind` (i, f, s, t, is, fs, ss, ty).
#[derive(Debug, Clone)]
pub enum AttributeValue {
    Int(i64),
    Float(f64),
    Str(String),
    Tensor(Tensor),
    Ints(Vec<i64>),
    Floats(Vec<f64>),
    Strs(Vec<String>),
    Type(Type),
}

impl AttributeValue {
    /// The text after `name=` in a node's attribute list.
    pub fn to_ir_string(&self) -> String {
        match self {
            AttributeValue::Int(value) => value.to_string(),
            AttributeValue::Float(value) => format_float(*value),
            AttributeValue::Str(value) => quote_string(value),
            AttributeValue::Tensor(tensor) => format_tensor_attribute(tensor),
            AttributeValue::Ints(values) => format_list(values.iter().map(|v| v.to_string())),
            AttributeValue::Floats(values) => format_list(values.iter().map(|v| format_float(*v))),
            AttributeValue::Strs(values) => format_list(values.iter().map(|v| quote_string(v))),
            AttributeValue::Type(ty) => ty.to_string(),
        }
    }
}

fn format_list(items: impl Iterator<Item = String>) -> String {
    let parts: Vec<String> = items.collect();
    format!("[{}]", parts.join(", "))
}

/// PyTorch prints one-element tensor attributes as `{value}` and others as `<Tensor>`.
fn format_tensor_attribute(tensor: &Tensor) -> String {
    if tensor.numel() == 1 {
        if let Ok(scalar) = tensor.item() {
            return match scalar {
                ferrojit_tensor::Scalar::Float(value) => format!("{{{}}}", format_c_double(value)),
                ferrojit_tensor::Scalar::Int(value) => format!("{{{value}}}"),
                ferrojit_tensor::Scalar::Bool(value) => format!("{{{}}}", value as i64),
            };
        }
    }
    "<Tensor>".to_string()
}

/// Formats like C++ `ostream << double` with default precision 6 (`%g`), as PyTorch does
/// inside tensor attribute braces.
fn format_c_double(value: f64) -> String {
    format_g(value, 6)
}

/// Formats a float attribute as PyTorch's IR printer does: `%.17g`-style digits, with a
/// trailing `.` when the text would otherwise read as an integer (`1.`, `2.5`,
/// `0.10000000000000001`).
pub fn format_float(value: f64) -> String {
    if value.is_nan() {
        return "nan".to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    let mut text = format_g(value, 17);
    if !text.contains(['.', 'e', 'n', 'i']) {
        text.push('.');
    }
    text
}

/// C's `%.{precision}g`.
pub fn format_g(value: f64, precision: usize) -> String {
    if value.is_nan() {
        return "nan".to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let precision = precision.max(1);
    let scientific = format!("{:.*e}", precision - 1, value);
    let (mantissa, exponent) = scientific
        .split_once('e')
        .unwrap_or((scientific.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if exponent < -4 || exponent >= precision as i32 {
        let mantissa = strip_trailing_zeros(mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        let decimals = (precision as i32 - 1 - exponent).max(0) as usize;
        strip_trailing_zeros(&format!("{:.*}", decimals, value))
    }
}

fn strip_trailing_zeros(text: &str) -> String {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text.to_string()
    }
}

/// Quotes a string as PyTorch's `printQuotedString`: double quotes, C escapes, and octal
/// escapes for other non-printable bytes.
pub fn quote_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for byte in value.bytes() {
        match byte {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            0x0b => out.push_str("\\v"),
            0x20..=0x7e => out.push(byte as char),
            other => out.push_str(&format!("\\{other:03o}")),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_pytorch() {
        assert_eq!(format_float(1.0), "1.");
        assert_eq!(format_float(2.5), "2.5");
        assert_eq!(format_float(0.1), "0.10000000000000001");
        assert_eq!(format_float(-3.0), "-3.");
        assert_eq!(format_float(1e-5), "1.0000000000000001e-05");
        assert_eq!(format_g(0.5, 6), "0.5");
        assert_eq!(format_g(100000.0, 6), "100000");
        assert_eq!(format_g(1000000.0, 6), "1e+06");
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(quote_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
    }
}
