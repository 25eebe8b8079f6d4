//! `%`-formatting of strings (`aten::percentFormat`, PyTorch's vararg_functions.cpp) and the
//! builtins converting between ints and text: `ord`, `chr`, `hex`, `oct`, `bin`.

use super::binding::typed;
use super::pop_varargs;
use super::str_ops::{too_long, SharedStr, MAX_STRING_CHARS};
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;
use crate::registry::Stack;

/// `ord(c)`: PyTorch requires exactly one byte.
fn ord(text: SharedStr) -> Result<i64> {
    match text.as_bytes() {
        [byte] => Ok(i64::from(*byte)),
        bytes => Err(RuntimeError::Other(format!(
            "String for ord() must be 1 character, found {}",
            bytes.len()
        ))),
    }
}

/// `chr(i)`: PyTorch writes the single byte `char(i)`, so only ASCII codes give a valid
/// (UTF-8) string; any other code in range is an error here, where PyTorch fails once the
/// string reaches Python.
fn chr(code: i64) -> Result<String> {
    if !(0..1_114_111).contains(&code) {
        return Err(RuntimeError::Other(format!(
            "chr() arg not in range(0x110000), found {code}"
        )));
    }
    let byte = u8::try_from(code).ok().filter(u8::is_ascii).ok_or_else(|| {
        RuntimeError::Other(format!(
            "chr({code}): TorchScript makes the single byte {}, which is not valid UTF-8 on its own",
            code & 0xff
        ))
    })?;
    Ok(char::from(byte).to_string())
}

/// `value` written in a base, with Python's sign and prefix (`-0x1f`).
fn in_base(value: i64, prefix: &str, digits: fn(u64) -> String) -> String {
    let sign = if value < 0 { "-" } else { "" };
    format!("{sign}{prefix}{}", digits(value.unsigned_abs()))
}

fn hex(value: i64) -> Result<String> {
    Ok(in_base(value, "0x", |v| format!("{v:x}")))
}

fn oct(value: i64) -> Result<String> {
    Ok(in_base(value, "0o", |v| format!("{v:o}")))
}

fn bin(value: i64) -> Result<String> {
    Ok(in_base(value, "0b", |v| format!("{v:b}")))
}

// ----- % formatting ----------------------------------------------------------------------

/// C's `%e` exponent form: at least two exponent digits with a sign.
fn c_scientific(value: f64, upper: bool) -> String {
    if !value.is_finite() {
        return c_special(value, upper);
    }
    let text = format!("{value:.6e}");
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let sign = if exponent < 0 { '-' } else { '+' };
    let out = format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs());
    if upper {
        out.to_uppercase()
    } else {
        out
    }
}

fn c_special(value: f64, upper: bool) -> String {
    let text = if value.is_nan() {
        "nan"
    } else if value > 0.0 {
        "inf"
    } else {
        "-inf"
    };
    if upper {
        text.to_uppercase()
    } else {
        text.to_string()
    }
}

fn number_for_format(key: char, value: &IValue) -> Result<f64> {
    match value {
        IValue::Int(v) => Ok(*v as f64),
        IValue::Double(v) => Ok(*v),
        IValue::Bool(b) => Ok(f64::from(u8::from(*b))),
        other => Err(RuntimeError::Other(format!(
            "%{key} requires a number for formatting, but got {}",
            other.tag_name()
        ))),
    }
}

/// One `%key` conversion (PyTorch's `addFormattedArg`; floats go through C `float`).
fn format_argument(key: char, value: &IValue, out: &mut String) -> Result<()> {
    match key {
        'd' | 'i' => match value {
            IValue::Int(v) => out.push_str(&v.to_string()),
            other => {
                let number = number_for_format(key, other)?;
                // C++ `static_cast<int>`: truncation toward zero into 32 bits.
                out.push_str(&(number as i32).to_string());
            }
        },
        'e' | 'E' => {
            let number = number_for_format(key, value)? as f32;
            out.push_str(&c_scientific(f64::from(number), key == 'E'));
        }
        'f' | 'F' => {
            let number = number_for_format(key, value)? as f32;
            if number.is_finite() {
                out.push_str(&format!("{number:.6}"));
            } else {
                out.push_str(&c_special(f64::from(number), key == 'F'));
            }
        }
        'c' => match value {
            IValue::Int(v) => {
                let byte = *v as u8;
                out.push(char::from(byte));
            }
            // One byte, as PyTorch checks the `std::string`'s size.
            IValue::Str(text) if text.len() == 1 => out.push_str(text),
            other => {
                return Err(RuntimeError::Other(format!(
                    "%c requires an int or char for formatting, but got {}",
                    other.tag_name()
                )))
            }
        },
        's' => match value {
            IValue::Str(text) => out.push_str(text),
            other => out.push_str(&other.to_string()),
        },
        other => {
            return Err(RuntimeError::Other(format!(
                "The specifier %{other} is not supported in TorchScript format strings"
            )))
        }
    }
    Ok(())
}

/// `"..." % args`: `args` is a tuple of the values, or the single value itself.
pub fn percent_format(template: &str, args: &IValue) -> Result<String> {
    let values: Vec<IValue> = match args {
        IValue::Tuple(tuple) => tuple.items.clone(),
        other => vec![other.clone()],
    };
    let mut out = String::new();
    let mut used = 0usize;
    let mut chars = template.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let key = chars
            .next()
            .ok_or_else(|| RuntimeError::Other("Incomplete format specifier".to_string()))?;
        if key == '%' {
            out.push('%');
            continue;
        }
        let value = values.get(used).ok_or_else(|| {
            RuntimeError::Other("Too few arguments for format string".to_string())
        })?;
        format_argument(key, value, &mut out)?;
        used += 1;
        if out.len() > MAX_STRING_CHARS {
            return Err(too_long("% formatting"));
        }
    }
    if used != values.len() {
        return Err(RuntimeError::Other(
            "Too many arguments for format string".to_string(),
        ));
    }
    Ok(out)
}

/// `aten::percentFormat`'s stack kernel. It stays on the raw stack because its schema is a
/// vararg one (`str self, ...`): the interpreter pushes the inputs and then their count.
fn percent_format_kernel(stack: &mut Stack) -> Result<()> {
    let inputs = pop_varargs(stack)?;
    let (template, args) = match inputs.as_slice() {
        [template, args] => (template, args),
        _ => {
            return Err(RuntimeError::InvalidGraph(
                "aten::percentFormat takes a format string and one argument".to_string(),
            ))
        }
    };
    let text = percent_format(template.to_str()?, args)?;
    stack.push(IValue::from(text));
    Ok(())
}

/// Every operator of this file, in PyTorch's registration order within each name.
pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        typed("aten::ord(str string) -> int", ord),
        // Vararg schema (`...`): read with `pop_varargs`, so it stays a stack kernel.
        OperatorDeclaration::stack(
            "aten::percentFormat(str self, ...) -> str",
            percent_format_kernel,
        ),
        typed("aten::hex(int i) -> str", hex),
        typed("aten::oct(int i) -> str", oct),
        typed("aten::bin(int i) -> str", bin),
        typed("aten::chr(int i) -> str", chr),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> IValue {
        IValue::from(text)
    }

    #[test]
    fn conversions_and_percent_format() {
        assert_eq!(hex(-10).unwrap(), "-0xa");
        assert_eq!(bin(0).unwrap(), "0b0");
        assert_eq!(oct(i64::MIN).unwrap(), "-0o1000000000000000000000");
        assert_eq!(ord(SharedStr("A".into())).unwrap(), 65);
        assert!(ord(SharedStr("AB".into())).is_err());
        assert!(chr(-1).is_err());
        assert_eq!(chr(65).unwrap(), "A");
        let args = IValue::tuple(vec![IValue::Int(5), s("x"), IValue::Double(2.5)]);
        assert_eq!(
            percent_format("%d and %s, %f %e %%", &args)
                .unwrap_err()
                .to_string(),
            "Too few arguments for format string"
        );
        let args = IValue::tuple(vec![
            IValue::Int(5),
            s("x"),
            IValue::Double(2.5),
            IValue::Double(12345.678),
        ]);
        assert_eq!(
            percent_format("%d and %s, %f %e %%", &args).unwrap(),
            "5 and x, 2.500000 1.234568e+04 %"
        );
        assert_eq!(
            percent_format("value: %s", &IValue::Double(2.5)).unwrap(),
            "value: 2.5"
        );
        assert!(percent_format("%", &IValue::Int(1)).is_err());
        assert!(percent_format("none", &IValue::Int(1)).is_err());
    }

    #[test]
    fn percent_format_reads_its_varargs_from_the_stack() {
        let mut stack: Stack = vec![s("%d!"), IValue::Int(7), IValue::Int(2)];
        percent_format_kernel(&mut stack).unwrap();
        assert_eq!(stack.len(), 1);
        assert_eq!(stack[0].to_str().unwrap(), "7!");
    }
}
