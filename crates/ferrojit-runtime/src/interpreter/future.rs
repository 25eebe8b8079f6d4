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

#[cfg(test)]
mod tests {
    use ferrojit_ir::{AttributeValue, Graph, Type};

    use crate::interpreter::run_graph;
    use crate::ivalue::IValue;
    use crate::object::NoMethods;

    /// `fut = fork(<raise "bad">)`, then `wait(fut)` only when `wait` is set.
    fn forking_graph(wait: bool) -> Graph {
        let mut forked = Graph::new();
        let message = forked.insert_constant(Some(AttributeValue::Str("bad".into())), Type::Str);
        let class = forked.insert_constant(
            Some(AttributeValue::Str("builtins.ValueError".into())),
            Type::Str,
        );
        forked.insert("prim::RaiseException", &[message, class], &[]);
        let never = forked.insert("prim::Uninitialized", &[], &[Type::Int]);
        let output = forked.node_output(never, 0);
        forked.register_output(output);

        let mut graph = Graph::new();
        let fork = graph.insert("prim::fork", &[], &[Type::Future(Box::new(Type::Int))]);
        graph.set_attribute(fork, "Subgraph", AttributeValue::Graph(Box::new(forked)));
        let future = graph.node_output(fork, 0);
        let output = if wait {
            let waited = graph.insert("aten::wait", &[future], &[Type::Int]);
            graph.node_output(waited, 0)
        } else {
            graph.insert_constant(Some(AttributeValue::Int(7)), Type::Int)
        };
        graph.register_output(output);
        graph
    }

    #[test]
    fn errors_of_forked_code_surface_at_wait() {
        let outputs = run_graph(&forking_graph(false), Vec::new(), &NoMethods).unwrap();
        assert!(matches!(outputs.as_slice(), [IValue::Int(7)]));
        let error = run_graph(&forking_graph(true), Vec::new(), &NoMethods).unwrap_err();
        assert!(error.to_string().contains("bad"), "{error}");
    }
}
