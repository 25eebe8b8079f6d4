//! Generic operators: identity tests, `str`/`format`, warnings, devices, as typed kernels
//! (`format`, whose arguments are varargs, stays a stack kernel).

use super::binding::typed;
use super::pop_varargs;
use crate::error::{Result, RuntimeError};
use crate::ivalue::{Device, IValue};
use crate::opdef::OperatorDeclaration;
use crate::registry::Stack;

/// Python's `is`.
fn is(value: IValue, other: IValue) -> Result<bool> {
    Ok(value.is_same_identity(&other))
}

fn is_not(value: IValue, other: IValue) -> Result<bool> {
    Ok(!value.is_same_identity(&other))
}

/// `str(x)`: TorchScript's printing of the value.
fn to_str(value: IValue) -> Result<String> {
    Ok(value.to_string())
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

/// A stack kernel: `aten::format` takes varargs, whose count the interpreter pushes last.
fn format(stack: &mut Stack) -> Result<()> {
    let inputs = pop_varargs(stack)?;
    let (template, args) = inputs.split_first().ok_or_else(|| {
        RuntimeError::InvalidGraph("aten::format needs a format string".to_string())
    })?;
    let text = format_template(template.to_str()?, args)?;
    stack.push(IValue::from(text));
    Ok(())
}

fn warn(message: String, _stacklevel: i64) -> Result<()> {
    eprintln!("UserWarning: {message}");
    Ok(())
}

fn device_from_str(text: String) -> Result<IValue> {
    Ok(IValue::from(Device::parse(&text)?))
}

fn device_type(device: Device) -> Result<String> {
    Ok(device.device_type)
}

/// A type refinement with no run-time effect (PyTorch does not check it either): the value
/// itself, the very handle it was given.
fn unchecked_unwrap_optional(optional: IValue) -> Result<IValue> {
    Ok(optional)
}

/// Every operator of this file, in declaration order.
pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        typed("aten::__is__(t1 self, t2 obj) -> bool", is),
        typed("aten::__isnot__(t1 self, t2 obj) -> bool", is_not),
        typed("aten::str(t elem) -> str", to_str),
        // Varargs (`...`): the argument count is on the stack, so this one reads the stack.
        OperatorDeclaration::stack("aten::format(str self, ...) -> str", format),
        typed("aten::warn(str message, int stacklevel=2) -> ()", warn),
        typed("aten::device(str a) -> Device", device_from_str),
        typed("prim::type(Device self) -> str", device_type),
        typed(
            "prim::unchecked_unwrap_optional(t(a)? optional) -> t(a)",
            unchecked_unwrap_optional,
        ),
    ]
}

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
