//! `Display` for tensors, approximating Python's `print(tensor)` (torch/_tensor_str.py defaults:
//! precision 4, linewidth 80, threshold 1000, edgeitems 3).

use crate::dtype::DType;
use crate::tensor::Tensor;
use std::fmt;

const PRECISION: usize = 4;
const LINEWIDTH: usize = 80;
const THRESHOLD: usize = 1000;
const EDGEITEMS: usize = 3;

/// Element values in logical order, in the widest type of their kind.
enum Values {
    Float(Vec<f64>),
    Int(Vec<i64>),
    Bool(Vec<bool>),
}

/// Python's `'{:.4e}'` formatting ("1.0000e+05"); non-finite values print as Python does.
fn format_sci(v: f64) -> String {
    if !v.is_finite() {
        return format_nonfinite(v);
    }
    let raw = format!("{:.*e}", PRECISION, v);
    match raw.split_once('e') {
        Some((mantissa, exp)) => {
            let exp: i32 = exp.parse().unwrap_or(0);
            let sign = if exp < 0 { '-' } else { '+' };
            format!("{mantissa}e{sign}{:02}", exp.abs())
        }
        None => raw,
    }
}

fn format_nonfinite(v: f64) -> String {
    if v.is_nan() {
        "nan".to_string()
    } else if v > 0.0 {
        "inf".to_string()
    } else {
        "-inf".to_string()
    }
}

fn format_fixed(v: f64, digits: usize) -> String {
    if !v.is_finite() {
        return format_nonfinite(v);
    }
    format!("{:.*}", digits, v)
}

/// Mirrors torch's `_Formatter`: decides int/sci mode and the common element width.
struct Formatter {
    floating: bool,
    int_mode: bool,
    sci_mode: bool,
    max_width: usize,
}

impl Formatter {
    fn new(values: &Values) -> Formatter {
        let mut f = Formatter {
            floating: false,
            int_mode: true,
            sci_mode: false,
            max_width: 1,
        };
        match values {
            Values::Int(v) => {
                for x in v {
                    f.max_width = f.max_width.max(x.to_string().len());
                }
            }
            Values::Bool(v) => {
                for &x in v {
                    f.max_width = f.max_width.max(if x { 4 } else { 5 });
                }
            }
            Values::Float(v) => {
                f.floating = true;
                let finite: Vec<f64> = v
                    .iter()
                    .copied()
                    .filter(|x| x.is_finite() && *x != 0.0)
                    .collect();
                if finite.is_empty() {
                    return f;
                }
                let abs_min = finite.iter().fold(f64::INFINITY, |a, x| a.min(x.abs()));
                let abs_max = finite.iter().fold(0.0f64, |a, x| a.max(x.abs()));
                f.int_mode = finite.iter().all(|x| *x == x.ceil());
                let wide_range = abs_max / abs_min > 1000.0 || abs_max > 1.0e8;
                if f.int_mode {
                    if wide_range {
                        f.sci_mode = true;
                        for &x in &finite {
                            f.max_width = f.max_width.max(format_sci(x).len());
                        }
                    } else {
                        for &x in &finite {
                            f.max_width = f.max_width.max(format_fixed(x, 0).len() + 1);
                        }
                    }
                } else if wide_range || abs_min < 1.0e-4 {
                    f.sci_mode = true;
                    for &x in &finite {
                        f.max_width = f.max_width.max(format_sci(x).len());
                    }
                } else {
                    for &x in &finite {
                        f.max_width = f.max_width.max(format_fixed(x, PRECISION).len());
                    }
                }
            }
        }
        f
    }

    fn format(&self, values: &Values, index: usize) -> String {
        let raw = match values {
            Values::Int(v) => v.get(index).map(|x| x.to_string()).unwrap_or_default(),
            Values::Bool(v) => match v.get(index) {
                Some(true) => "True".to_string(),
                Some(false) => "False".to_string(),
                None => String::new(),
            },
            Values::Float(v) => {
                let x = v.get(index).copied().unwrap_or(0.0);
                if self.sci_mode {
                    format_sci(x)
                } else if self.int_mode {
                    let mut s = format_fixed(x, 0);
                    if x.is_finite() {
                        s.push('.');
                    }
                    s
                } else {
                    format_fixed(x, PRECISION)
                }
            }
        };
        let _ = self.floating;
        let pad = self.max_width.saturating_sub(raw.len());
        format!("{}{}", " ".repeat(pad), raw)
    }
}

/// Indices kept along a dimension of size `n` when summarizing.
fn kept_indices(n: usize, summarize: bool) -> Vec<usize> {
    if summarize && n > 2 * EDGEITEMS {
        (0..EDGEITEMS).chain(n - EDGEITEMS..n).collect()
    } else {
        (0..n).collect()
    }
}

struct Printer<'a> {
    values: &'a Values,
    /// The imaginary parts of a complex tensor and their own formatter (torch's
    /// `formatter2`); the real parts are `values`.
    imaginary: Option<(&'a Values, Formatter)>,
    sizes: &'a [usize],
    strides: Vec<usize>,
    formatter: Formatter,
    summarize: bool,
}

/// One complex element as torch's `_val_formatter` writes it: the padded real part, then the
/// imaginary part with its padding removed, its sign (or `+`) and `j`.
fn format_complex(
    real: (&Formatter, &Values),
    imaginary: (&Formatter, &Values),
    index: usize,
) -> String {
    let real_text = real.0.format(real.1, index);
    let imaginary_text = imaginary.0.format(imaginary.1, index);
    let imaginary_text = imaginary_text.trim_start();
    if imaginary_text.starts_with('-') || imaginary_text.starts_with('+') {
        format!("{real_text}{imaginary_text}j")
    } else {
        format!("{real_text}+{imaginary_text}j")
    }
}

impl Printer<'_> {
    fn format(&self, index: usize) -> String {
        match &self.imaginary {
            Some((imaginary, imaginary_formatter)) => format_complex(
                (&self.formatter, self.values),
                (imaginary_formatter, imaginary),
                index,
            ),
            None => self.formatter.format(self.values, index),
        }
    }
}

impl Printer<'_> {
    /// Formats the sub-tensor starting at flat index `base` covering dims `depth..`.
    fn render(&self, depth: usize, base: usize, indent: usize) -> String {
        let ndim = self.sizes.len();
        let n = self.sizes[depth];
        let stride = self.strides[depth];
        let summarized = self.summarize && n > 2 * EDGEITEMS;
        if depth + 1 == ndim {
            let mut element_length = self.formatter.max_width + 2;
            if let Some((_, imaginary_formatter)) = &self.imaginary {
                // The imaginary part's width and its `j`.
                element_length += imaginary_formatter.max_width + 1;
            }
            let per_line = (LINEWIDTH.saturating_sub(indent) / element_length).max(1);
            let mut data: Vec<String> = Vec::new();
            for (pos, i) in kept_indices(n, self.summarize).into_iter().enumerate() {
                if summarized && pos == EDGEITEMS {
                    data.push(" ...".to_string());
                }
                data.push(self.format(base + i * stride));
            }
            let lines: Vec<String> = data.chunks(per_line).map(|c| c.join(", ")).collect();
            let sep = format!(",\n{}", " ".repeat(indent + 1));
            return format!("[{}]", lines.join(&sep));
        }
        let mut slices: Vec<String> = Vec::new();
        for (pos, i) in kept_indices(n, self.summarize).into_iter().enumerate() {
            if summarized && pos == EDGEITEMS {
                slices.push("...".to_string());
            }
            slices.push(self.render(depth + 1, base + i * stride, indent + 1));
        }
        let sep = format!(
            ",{}{}",
            "\n".repeat(ndim - depth - 1),
            " ".repeat(indent + 1)
        );
        format!("[{}]", slices.join(&sep))
    }
}

/// Values restricted to the summarized index set (what torch's formatter measures).
fn summarized_values(values: &Values, sizes: &[usize], summarize: bool) -> Values {
    if !summarize {
        return match values {
            Values::Float(v) => Values::Float(v.clone()),
            Values::Int(v) => Values::Int(v.clone()),
            Values::Bool(v) => Values::Bool(v.clone()),
        };
    }
    let strides = crate::shape::contiguous_strides(sizes);
    let mut flat: Vec<usize> = vec![0];
    for (d, &n) in sizes.iter().enumerate() {
        let kept = kept_indices(n, true);
        let stride = strides[d];
        flat = flat
            .iter()
            .flat_map(|&b| kept.iter().map(move |&i| b + i * stride))
            .collect();
    }
    match values {
        Values::Float(v) => Values::Float(flat.iter().filter_map(|&i| v.get(i).copied()).collect()),
        Values::Int(v) => Values::Int(flat.iter().filter_map(|&i| v.get(i).copied()).collect()),
        Values::Bool(v) => Values::Bool(flat.iter().filter_map(|&i| v.get(i).copied()).collect()),
    }
}

fn python_tuple(sizes: &[usize]) -> String {
    match sizes {
        [one] => format!("({one},)"),
        _ => {
            let parts: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
            format!("({})", parts.join(", "))
        }
    }
}

/// A tensor printed as PyTorch prints a handle to it: the values, then the suffixes
/// (`size=`, `dtype=`, `requires_grad=True`). The autograd flag belongs to the handle (the
/// runtime's `TensorCell`, PyTorch's `TensorImpl`), not to the tensor value, so the caller
/// passes it; `Display for Tensor` prints a tensor that does not require grad.
pub struct TensorDisplay<'a> {
    tensor: &'a Tensor,
    requires_grad: bool,
}

impl Tensor {
    /// This tensor as PyTorch prints a handle to it whose `requires_grad` is as given.
    pub fn display_with_requires_grad(&self, requires_grad: bool) -> TensorDisplay<'_> {
        TensorDisplay {
            tensor: self,
            requires_grad,
        }
    }
}

impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.display_with_requires_grad(false).fmt(f)
    }
}

impl fmt::Display for TensorDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tensor = self.tensor;
        let prefix = "tensor(";
        let indent = prefix.len();
        let mut suffixes: Vec<String> = Vec::new();
        let body = if tensor.numel() == 0 {
            if tensor.dim() != 1 {
                suffixes.push(format!("size={}", python_tuple(tensor.sizes())));
            }
            if tensor.dtype() != DType::default_float() {
                suffixes.push(format!("dtype={}", tensor.dtype()));
            }
            "[]".to_string()
        } else {
            // complex64 is the default complex dtype, printed without a suffix.
            if !matches!(
                tensor.dtype(),
                DType::Float32 | DType::Int64 | DType::Bool | DType::ComplexFloat
            ) {
                suffixes.push(format!("dtype={}", tensor.dtype()));
            }
            let mut imaginary_values = None;
            let values = match tensor.dtype() {
                dtype if dtype.is_floating_point() => Values::Float(tensor.gather::<f64>()),
                dtype if dtype.is_complex() => {
                    let parts = tensor.gather::<crate::complex::Complex128>();
                    imaginary_values = Some(Values::Float(parts.iter().map(|z| z.im).collect()));
                    Values::Float(parts.iter().map(|z| z.re).collect())
                }
                DType::Bool => Values::Bool(tensor.gather::<bool>()),
                _ => Values::Int(tensor.gather::<i64>()),
            };
            let summarize = tensor.numel() > THRESHOLD;
            let formatter = Formatter::new(&summarized_values(&values, tensor.sizes(), summarize));
            let imaginary = imaginary_values.as_ref().map(|imaginary| {
                let formatter =
                    Formatter::new(&summarized_values(imaginary, tensor.sizes(), summarize));
                (imaginary, formatter)
            });
            if tensor.dim() == 0 {
                match &imaginary {
                    Some((imaginary, imaginary_formatter)) => {
                        format_complex((&formatter, &values), (imaginary_formatter, imaginary), 0)
                    }
                    None => formatter.format(&values, 0),
                }
            } else {
                let printer = Printer {
                    values: &values,
                    imaginary,
                    sizes: tensor.sizes(),
                    strides: crate::shape::contiguous_strides(tensor.sizes()),
                    formatter,
                    summarize,
                };
                printer.render(0, 0, indent)
            }
        };
        if self.requires_grad {
            suffixes.push("requires_grad=True".to_string());
        }
        let mut out = format!("{prefix}{body}");
        let mut last_line_len = match out.rfind('\n') {
            Some(p) => out.len() - p + 1,
            None => out.len() + 2,
        };
        for suffix in suffixes {
            if last_line_len + suffix.len() + 2 > LINEWIDTH {
                out.push_str(",\n");
                out.push_str(&" ".repeat(indent));
                out.push_str(&suffix);
                last_line_len = indent + suffix.len();
            } else {
                out.push_str(", ");
                out.push_str(&suffix);
                last_line_len += suffix.len() + 2;
            }
        }
        out.push(')');
        f.write_str(&out)
    }
}

/// C's `%.{precision}g`; with precision 6 it is C++'s `ostream << double`, as PyTorch's
/// messages and `str()` of a float list print a double.
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
