//! Node attributes (`value=1`, `name="weight"`) and how PyTorch prints them.

use ferrojit_tensor::{DType, Tensor};

use crate::graph::Graph;
use crate::types::Type;

/// A node attribute. Kinds follow PyTorch's `AttributeKind` (i, f, c, s, t, g, ty and the
/// list forms is, fs, ss, ts, gs, tys).
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
    /// A complex number (real, imaginary).
    Complex(f64, f64),
    Tensors(Vec<Tensor>),
    Types(Vec<Type>),
    /// A subgraph (`prim::FusionGroup`, `prim::DifferentiableGraph`, `prim::fork`): the
    /// `Subgraph` attribute prints as a `with KIND_N = graph(...)` section after the graph.
    Graph(Box<Graph>),
    Graphs(Vec<Graph>),
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
            AttributeValue::Complex(real, imaginary) => format_complex(*real, *imaginary),
            AttributeValue::Tensors(_) => "[<Tensors>]".to_string(),
            AttributeValue::Types(types) => format_list(types.iter().map(|t| t.to_string())),
            AttributeValue::Graph(_) => "<Graph>".to_string(),
            AttributeValue::Graphs(_) => "[<Graphs>]".to_string(),
        }
    }

    /// PyTorch's one-letter attribute kind name (`i`, `fs`, `g`...).
    pub fn kind_name(&self) -> &'static str {
        match self {
            AttributeValue::Int(_) => "i",
            AttributeValue::Float(_) => "f",
            AttributeValue::Str(_) => "s",
            AttributeValue::Tensor(_) => "t",
            AttributeValue::Ints(_) => "is",
            AttributeValue::Floats(_) => "fs",
            AttributeValue::Strs(_) => "ss",
            AttributeValue::Type(_) => "ty",
            AttributeValue::Complex(..) => "c",
            AttributeValue::Tensors(_) => "ts",
            AttributeValue::Types(_) => "tys",
            AttributeValue::Graph(_) => "g",
            AttributeValue::Graphs(_) => "gs",
        }
    }
}

/// A complex constant as PyTorch's graph printer writes it (c10's `printComplex`): the real
/// part, the imaginary part's sign and magnitude, then `j` (`1.+2.j`, `0.-1.5j`). A NaN
/// imaginary part is not `>= 0` and prints with `-`, as in c10.
fn format_complex(real: f64, imaginary: f64) -> String {
    let sign = if imaginary >= 0.0 { '+' } else { '-' };
    format!(
        "{}{sign}{}j",
        format_float(real),
        format_float(imaginary.abs())
    )
}

/// Tensors with at most this many elements print their values (PyTorch's
/// `max_tensor_display_size`).
pub const MAX_TENSOR_DISPLAY_SIZE: usize = 10;

/// The `CPU…Type` name PyTorch prints after a tensor's values.
pub fn tensor_type_name(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool => "CPUBoolType",
        DType::UInt8 => "CPUByteType",
        DType::Int8 => "CPUCharType",
        DType::Int16 => "CPUShortType",
        DType::Int32 => "CPUIntType",
        DType::Int64 => "CPULongType",
        DType::Float16 => "CPUHalfType",
        DType::BFloat16 => "CPUBFloat16Type",
        DType::Float32 => "CPUFloatType",
        DType::Float64 => "CPUDoubleType",
        DType::ComplexFloat => "CPUComplexFloatType",
        DType::ComplexDouble => "CPUComplexDoubleType",
    }
}

/// The dtype for a `CPU…Type` name.
pub fn dtype_from_tensor_type_name(name: &str) -> Option<DType> {
    [
        DType::Bool,
        DType::UInt8,
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::Int64,
        DType::Float16,
        DType::BFloat16,
        DType::Float32,
        DType::Float64,
    ]
    .into_iter()
    .find(|&dtype| tensor_type_name(dtype) == name)
}

/// How at::print lays out every element of one tensor: width, precision, scale, notation.
struct ElementFormat {
    width: usize,
    precision: usize,
    scale: f64,
    scientific: bool,
}

/// PyTorch's `__printFormat`: choose width and notation from the magnitudes of the values.
fn element_format(values: &[f64]) -> ElementFormat {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let int_mode = finite.iter().all(|v| v.ceil() == *v);
    let (mut exp_min, mut exp_max) = (1i64, 1i64);
    if let Some(first) = finite.first() {
        let mut low = first.abs();
        let mut high = first.abs();
        for value in &finite {
            low = low.min(value.abs());
            high = high.max(value.abs());
        }
        exp_min = if low != 0.0 {
            low.log10().floor() as i64 + 1
        } else {
            1
        };
        exp_max = if high != 0.0 {
            high.log10().floor() as i64 + 1
        } else {
            1
        };
    }
    let fixed = |width: usize, precision: usize, scale: f64| ElementFormat {
        width,
        precision,
        scale,
        scientific: false,
    };
    if int_mode {
        if exp_max > 9 {
            ElementFormat {
                width: 11,
                precision: 4,
                scale: 1.0,
                scientific: true,
            }
        } else {
            fixed(exp_max.max(0) as usize + 1, 0, 1.0)
        }
    } else if exp_max - exp_min > 4 {
        let width = if exp_max.abs() > 99 || exp_min.abs() > 99 {
            12
        } else {
            11
        };
        ElementFormat {
            width,
            precision: 4,
            scale: 1.0,
            scientific: true,
        }
    } else if !(0..=5).contains(&exp_max) {
        fixed(7, 4, 10f64.powi((exp_max - 1) as i32))
    } else if exp_max == 0 {
        fixed(7, 4, 1.0)
    } else {
        fixed(exp_max as usize + 6, 4, 1.0)
    }
}

fn format_element(value: f64, format: &ElementFormat) -> String {
    let value = value / format.scale;
    let text = if value.is_nan() {
        "nan".to_string()
    } else if value.is_infinite() {
        if value > 0.0 { "inf" } else { "-inf" }.to_string()
    } else if format.scientific {
        let raw = format!("{:.*e}", format.precision, value);
        match raw.split_once('e') {
            Some((mantissa, exponent)) => {
                let exponent: i32 = exponent.parse().unwrap_or(0);
                let sign = if exponent < 0 { '-' } else { '+' };
                format!("{mantissa}e{sign}{:02}", exponent.abs())
            }
            None => raw,
        }
    } else {
        format!("{:.*}", format.precision, value)
    };
    format!("{text:>width$}", width = format.width)
}

/// at::print for a tensor of rank 1 or 2 (rank > 2 gives `None`), newlines and all.
fn print_small_tensor(tensor: &Tensor) -> Option<String> {
    let values = tensor.to_f64_vec();
    let sizes = tensor.sizes();
    if sizes.is_empty() || sizes.len() > 2 {
        return None;
    }
    let mut out = String::new();
    if !values.is_empty() {
        let format = element_format(&values);
        if format.scale != 1.0 {
            out.push_str(&format_g(format.scale, 6));
            out.push_str(" *\n");
        }
        let columns = if sizes.len() == 2 { sizes[1] } else { 1 };
        for row in values.chunks(columns.max(1)) {
            let cells: Vec<String> = row.iter().map(|v| format_element(*v, &format)).collect();
            out.push_str(&cells.join(" "));
            out.push('\n');
        }
    }
    let dims: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
    out.push_str(&format!(
        "[ {}{{{}}} ]",
        tensor_type_name(tensor.dtype()),
        dims.join(",")
    ));
    Some(out)
}

fn format_list(items: impl Iterator<Item = String>) -> String {
    let parts: Vec<String> = items.collect();
    format!("[{}]", parts.join(", "))
}

/// PyTorch prints one-element tensor attributes as `{value}`, tensors of up to ten elements
/// with their values on one line (at::print with newlines turned into spaces), and larger ones
/// as `<Tensor>`.
fn format_tensor_attribute(tensor: &Tensor) -> String {
    if tensor.numel() != 1 && tensor.numel() <= MAX_TENSOR_DISPLAY_SIZE {
        if let Some(text) = print_small_tensor(tensor) {
            return text.replace('\n', " ");
        }
    }
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

/// C's `%.{precision}g` (kept in the tensor crate, which prints tensors and messages with it).
pub use ferrojit_tensor::display::format_g;

/// Quotes a string as PyTorch's `printQuotedString`: double quotes, C escapes (a single quote
/// too), and three-character escapes for other bytes. PyTorch computes those from the byte as
/// a C `char`, which is signed: a byte below 0x20 prints as octal (`\001`), and a byte of
/// 0x80 or more (any non-ASCII text) as '0' plus negative digits (0xC3 prints as `\0)+`).
/// The IR parser reads both forms back.
pub fn quote_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for byte in value.bytes() {
        match byte {
            b'\\' => out.push_str("\\\\"),
            b'\'' => out.push_str("\\'"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            0x0b => out.push_str("\\v"),
            0x20..=0x7e => out.push(byte as char),
            other => push_char_escape(&mut out, other),
        }
    }
    out.push('"');
    out
}

/// The three-character escape PyTorch prints for `byte`: C's `/` and `%` truncate toward
/// zero, so a negative (signed) byte gives "digits" below '0'.
fn push_char_escape(out: &mut String, byte: u8) {
    let mut signed = i32::from(byte as i8);
    let mut digits = [0i32; 3];
    digits[2] = signed % 8;
    signed /= 8;
    digits[1] = signed % 8;
    signed /= 8;
    digits[0] = signed;
    out.push('\\');
    for digit in digits {
        // '0' + digit stays within ')'..='7' because |digit| <= 7.
        out.push(char::from((i32::from(b'0') + digit) as u8));
    }
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
        // As torch 2.15 prints `"don't"` and `"é"` (0xC3 0xA9).
        assert_eq!(quote_string("don't"), "\"don\\'t\"");
        assert_eq!(quote_string("\u{e9}"), "\"\\0)+\\/.)\"");
        assert_eq!(quote_string("\u{1}\u{1f}"), "\"\\001\\037\"");
    }
}
