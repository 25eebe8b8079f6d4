//! Operators that exist for language features rather than tensor math: enum comparison,
//! `Optional` unwrapping, `wait` on futures and the grad-mode flag behind `torch.no_grad()`.

use std::sync::Arc;

use super::{pop_array, push, KernelTableEntry};
use crate::autograd;
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::registry::Stack;

/// Enum values are objects holding the member's name; two are equal when they belong to
/// the same enum class and name the same member.
fn enum_equal(a: &IValue, b: &IValue) -> Result<bool> {
    let (a, b) = (a.to_object()?, b.to_object()?);
    if Arc::ptr_eq(a, b) {
        return Ok(true);
    }
    if a.class().qualified_name() != b.class().qualified_name() {
        return Ok(false);
    }
    let name = |object: &crate::object::Object| object.get_attr("name").map(|v| v.to_string());
    Ok(name(a)? == name(b)?)
}

fn enum_eq(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array(stack)?;
    push(stack, enum_equal(&a, &b)?)
}

fn enum_ne(stack: &mut Stack) -> Result<()> {
    let [a, b] = pop_array(stack)?;
    push(stack, !enum_equal(&a, &b)?)
}

fn unwrap_optional(stack: &mut Stack) -> Result<()> {
    let [value] = pop_array(stack)?;
    if matches!(value, IValue::None) {
        return Err(RuntimeError::Other("Unwrapping null optional".to_string()));
    }
    stack.push(value);
    Ok(())
}

/// Grad mode itself lives in `crate::autograd` (the interpreter sets it for forked tasks);
/// these are the operators programs read and set it with.
fn is_grad_enabled(stack: &mut Stack) -> Result<()> {
    push(stack, autograd::is_grad_enabled())
}

fn set_grad_enabled(stack: &mut Stack) -> Result<()> {
    let [enabled] = pop_array(stack)?;
    autograd::set_grad_enabled(enabled.to_bool()?);
    Ok(())
}

fn wait(stack: &mut Stack) -> Result<()> {
    let [future] = pop_array(stack)?;
    let value = crate::future_value::wait(&future)?;
    stack.push(value);
    Ok(())
}

pub const TABLE: &[KernelTableEntry] = &[
    ("aten::wait(Future(t) self) -> t", wait),
    ("aten::is_grad_enabled() -> bool", is_grad_enabled),
    ("aten::set_grad_enabled(bool val) -> ()", set_grad_enabled),
    (
        "aten::eq.enum(AnyEnumType self, AnyEnumType other) -> bool",
        enum_eq,
    ),
    (
        "aten::ne.enum(AnyEnumType self, AnyEnumType other) -> bool",
        enum_ne,
    ),
    (
        "aten::_unwrap_optional(t(a)? optional) -> t(a)",
        unwrap_optional,
    ),
];
