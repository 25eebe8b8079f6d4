//! Calls one operator kernel of the global registry by its full schema name, binding the
//! arguments as the interpreter does; the one kernel-call helper of the test code (the
//! runtime's own tests include this file by path, since that crate cannot depend on this one).

use std::fmt;

use ferrojit_ir::binding::{bind_arguments, ArgumentSource};
use ferrojit_runtime::interpreter::code::default_value;
use ferrojit_runtime::ivalue::IValue;
use ferrojit_runtime::registry::OperatorRegistry;
use ferrojit_runtime::RuntimeError;

/// Why a call did not produce results, kept apart so that a test expecting the kernel to
/// raise cannot pass on a missing operator or on arguments that never reached the kernel.
#[derive(Debug, Clone)]
pub enum CallError {
    /// No operator has this full name (`aten::add.Tensor`).
    NotRegistered(String),
    /// The arguments do not fit the schema: too many, one missing without a default, or a
    /// default that cannot be built. The kernel never ran.
    Binding(String),
    /// The kernel ran and raised this error.
    Kernel(RuntimeError),
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::NotRegistered(name) => write!(f, "operator {name} is not registered"),
            CallError::Binding(message) => write!(f, "{message}"),
            CallError::Kernel(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for CallError {}

impl CallError {
    /// The kernel's error, when the kernel ran and raised.
    pub fn kernel_error(&self) -> Option<&RuntimeError> {
        match self {
            CallError::Kernel(error) => Some(error),
            _ => None,
        }
    }
}

/// Calls operator `full_name` with `args` (positional) and `kwargs` (by parameter name);
/// parameters given neither way take their schema default. A vararg schema gets every
/// argument positionally followed by the argument count, as the interpreter pushes it.
/// Returns the values the kernel left on the stack, in order.
pub fn call_operator(
    full_name: &str,
    args: Vec<IValue>,
    kwargs: &[(String, IValue)],
) -> Result<Vec<IValue>, CallError> {
    let operator = OperatorRegistry::global()
        .lookup(full_name)
        .ok_or_else(|| CallError::NotRegistered(full_name.to_string()))?;
    let schema = &operator.schema;
    let mut stack;
    if schema.is_vararg {
        if !kwargs.is_empty() {
            return Err(CallError::Binding(format!(
                "{full_name}: keyword arguments for a vararg schema"
            )));
        }
        let count = i64::try_from(args.len())
            .map_err(|_| CallError::Binding(format!("{full_name}: too many arguments")))?;
        stack = args;
        stack.push(IValue::Int(count));
    } else {
        // The same binding the compiler and the runtime's method calls use, so a case that
        // passes a keyword for a parameter also given positionally, or names none, is refused.
        // `args` are in the kernel's stack order, so a keyword-only parameter may be given
        // positionally here (the case files record calls that way); everything else binds
        // as in a call from TorchScript.
        let mut stack_order = (**schema).clone();
        for argument in &mut stack_order.arguments {
            argument.kwarg_only = false;
        }
        let keywords: Vec<&str> = kwargs.iter().map(|(name, _)| name.as_str()).collect();
        let binding = bind_arguments(&stack_order, args.len(), &keywords, |_, _| false);
        if let Some(error) = binding.error {
            return Err(CallError::Binding(format!("{full_name}: {error}")));
        }
        stack = Vec::with_capacity(binding.sources.len());
        for (argument, source) in schema.arguments.iter().zip(&binding.sources) {
            let value = match (*source, &argument.default) {
                (ArgumentSource::Positional(index), _) => args[index].clone(),
                (ArgumentSource::Keyword(index), _) => kwargs[index].1.clone(),
                (ArgumentSource::Default, Some(default)) => default_value(default, &argument.ty)
                    .map_err(|e| CallError::Binding(format!("{full_name}: {e}")))?,
                (ArgumentSource::Default, None) | (ArgumentSource::PackedPositionals(_), _) => {
                    return Err(CallError::Binding(format!(
                        "{full_name}: no value for argument '{}'",
                        argument.name
                    )))
                }
            };
            stack.push(value);
        }
    }
    (operator.kernel)(&mut stack).map_err(CallError::Kernel)?;
    Ok(stack)
}

/// The one result of a call that returns one value (`Tensor`, `int`, ...); a call leaving
/// any other number of values is a binding error.
pub fn single(full_name: &str, outputs: Vec<IValue>) -> Result<IValue, CallError> {
    let count = outputs.len();
    let mut outputs = outputs.into_iter();
    match (outputs.next(), outputs.next()) {
        (Some(value), None) => Ok(value),
        _ => Err(CallError::Binding(format!(
            "{full_name} left {count} values, not one"
        ))),
    }
}

/// The value a call's outputs make: nothing is `None`, one value is itself, several are a
/// tuple (as a multi-output operator's results reach Python).
pub fn as_value(mut outputs: Vec<IValue>) -> IValue {
    match outputs.len() {
        0 => IValue::None,
        1 => outputs.pop().unwrap_or(IValue::None),
        _ => IValue::tuple(outputs),
    }
}
