//! Futures made by `prim::fork`. Forked code runs to completion at the fork, so a future is
//! always complete: an object holding either the value or the error, which `aten::wait`
//! raises, as PyTorch raises a forked task's exception at `wait`.

use std::sync::Arc;

use ferrojit_ir::{AttributeKind, ClassType, Type};

use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::object::{NoMethods, Object};

/// The qualified name of the run-time class of futures.
pub const FUTURE_CLASS: &str = "__torch__.torch.jit.Future";

fn future_class() -> Arc<ClassType> {
    let class = ClassType::new(FUTURE_CLASS, false);
    for name in ["value", "error_class", "error"] {
        class.add_attribute(name, Type::Any, AttributeKind::Regular);
    }
    class
}

/// A completed future holding `result`.
pub fn completed(result: Result<IValue>) -> IValue {
    let slots = match result {
        Ok(value) => vec![value, IValue::None, IValue::None],
        Err(RuntimeError::Exception {
            class_name,
            message,
        }) => vec![
            IValue::None,
            IValue::Str(Arc::from(class_name.as_str())),
            IValue::Str(Arc::from(message.as_str())),
        ],
        Err(other) => vec![
            IValue::None,
            IValue::None,
            IValue::Str(Arc::from(other.to_string().as_str())),
        ],
    };
    IValue::Object(Object::with_slots(
        future_class(),
        slots,
        Arc::new(NoMethods),
    ))
}

/// `wait(future)`: the value, or the error the forked code raised.
pub fn wait(future: &IValue) -> Result<IValue> {
    let object = future.to_object()?;
    if object.class().qualified_name() != FUTURE_CLASS {
        return Err(RuntimeError::Argument(format!(
            "wait() expects a Future, not an object of class {}",
            object.class().qualified_name()
        )));
    }
    let message = object.get_attr("error")?;
    if let IValue::Str(message) = message {
        return Err(match object.get_attr("error_class")? {
            IValue::Str(class_name) => RuntimeError::Exception {
                class_name: class_name.to_string(),
                message: message.to_string(),
            },
            _ => RuntimeError::Other(message.to_string()),
        });
    }
    object.get_attr("value")
}
