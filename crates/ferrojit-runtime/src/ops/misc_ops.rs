//! Generic operators: identity tests, `str`/`format`, warnings, devices.

use super::{pop_array, pop_varargs, push, KernelTableEntry};
use crate::error::{Result, RuntimeError};
use crate::ivalue::{Device, IValue};
use crate::registry::Stack;

fn is(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    push(stack, a.is_same_identity(&b))
}

fn is_not(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array::<2>(stack)?;
    push(stack, !a.is_same_identity(&b))
}

/// `str(x)`: TorchScript's printing of the value.
fn to_str(stack: &mut Stack) -> Result<()> {
    let [value] = pop_array::<1>(stack)?;
    push(stack, value.to_string())
}

/// Replaces each `{}` in `template` with the next argument, as PyTorch's `aten::format`
/// (no other format specifications are understood).
pub fn format_template(template: &str, args: &[IValue]) -> Result<String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    let mut used = 0;
    while let Some(position) = rest.find("{}") {
        out.push_str(&rest[..position]);
        let arg = args.get(used).ok_or_else(|| {
            RuntimeError::Other(format!("Too few arguments for format string: {template}"))
        })?;
        out.push_str(&arg.to_string());
        used += 1;
        rest = &rest[position + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

fn format(stack: &mut Stack) -> Result<()> {
    let inputs = pop_varargs(stack)?;
    let (template, args) = inputs.split_first().ok_or_else(|| {
        RuntimeError::InvalidGraph("aten::format needs a format string".to_string())
    })?;
    let text = format_template(template.to_str()?, args)?;
    push(stack, text)
}

fn warn(stack: &mut Stack) -> Result<()> {
    let [message, _stack_level] = pop_array::<2>(stack)?;
    eprintln!("UserWarning: {}", message.to_str()?);
    Ok(())
}

fn device_from_str(stack: &mut Stack) -> Result<()> {
    let [text] = pop_array::<1>(stack)?;
    let device = Device::parse(text.to_str()?)?;
    push(stack, device)
}

fn device_type(stack: &mut Stack) -> Result<()> {
    let [device] = pop_array::<1>(stack)?;
    let kind = device.to_device()?.device_type.clone();
    push(stack, kind)
}

/// A type refinement with no run-time effect (PyTorch does not check it either).
fn unwrap_optional(_stack: &mut Stack) -> Result<()> {
    Ok(())
}

pub const TABLE: &[KernelTableEntry] = &[
    ("aten::__is__(t1 self, t2 obj) -> bool", is),
    ("aten::__isnot__(t1 self, t2 obj) -> bool", is_not),
    ("aten::str(t elem) -> str", to_str),
    ("aten::format(str self, ...) -> str", format),
    ("aten::warn(str message, int stacklevel=2) -> ()", warn),
    ("aten::device(str a) -> Device", device_from_str),
    ("prim::type(Device self) -> str", device_type),
    (
        "prim::unchecked_unwrap_optional(t(a)? optional) -> t(a)",
        unwrap_optional,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_replaces_placeholders_in_order() {
        let text = format_template("{} and {}!", &[IValue::Int(1), IValue::Double(2.0)]).unwrap();
        assert_eq!(text, "1 and 2.!");
        assert!(format_template("{} {}", &[IValue::Int(1)]).is_err());
        assert_eq!(format_template("none", &[]).unwrap(), "none");
    }
}
