//! Operators that exist for language features rather than tensor math: enum comparison,
//! `Optional` unwrapping, `wait` on futures and the grad-mode flag behind `torch.no_grad()`,
//! as typed kernels.

use std::sync::Arc;

use super::binding::typed;
use crate::autograd;
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::object::Object;
use crate::opdef::OperatorDeclaration;

/// Enum values are objects holding the member's name; two are equal when they belong to
/// the same enum class and name the same member.
fn enum_equal(a: &Arc<Object>, b: &Arc<Object>) -> Result<bool> {
    if Arc::ptr_eq(a, b) {
        return Ok(true);
    }
    if a.class().qualified_name() != b.class().qualified_name() {
        return Ok(false);
    }
    let name = |object: &Object| object.get_attr("name").map(|v| v.to_string());
    Ok(name(a)? == name(b)?)
}

fn enum_eq(value: Arc<Object>, other: Arc<Object>) -> Result<bool> {
    enum_equal(&value, &other)
}

fn enum_ne(value: Arc<Object>, other: Arc<Object>) -> Result<bool> {
    Ok(!enum_equal(&value, &other)?)
}

fn unwrap_optional(optional: IValue) -> Result<IValue> {
    if matches!(optional, IValue::None) {
        return Err(RuntimeError::Other("Unwrapping null optional".to_string()));
    }
    Ok(optional)
}

/// Grad mode itself lives in `crate::autograd` (the interpreter sets it for forked tasks);
/// these are the operators programs read and set it with.
fn is_grad_enabled() -> Result<bool> {
    Ok(autograd::is_grad_enabled())
}

fn set_grad_enabled(enabled: bool) -> Result<()> {
    autograd::set_grad_enabled(enabled);
    Ok(())
}

fn wait(future: IValue) -> Result<IValue> {
    crate::future_value::wait(&future)
}

/// Every operator of this file, in declaration order.
pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        typed("aten::wait(Future(t) self) -> t", wait),
        typed("aten::is_grad_enabled() -> bool", is_grad_enabled),
        typed("aten::set_grad_enabled(bool val) -> ()", set_grad_enabled),
        typed(
            "aten::eq.enum(AnyEnumType self, AnyEnumType other) -> bool",
            enum_eq,
        ),
        typed(
            "aten::ne.enum(AnyEnumType self, AnyEnumType other) -> bool",
            enum_ne,
        ),
        typed(
            "aten::_unwrap_optional(t(a)? optional) -> t(a)",
            unwrap_optional,
        ),
    ]
}
