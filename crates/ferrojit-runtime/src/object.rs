//! Script objects (module instances and script-class instances) and `MethodSource`, the
//! runtime's only view of the compiler: it hands out method and function executors by name.

use std::fmt;
use std::sync::{Arc, RwLock};

use ferrojit_ir::{ClassType, FunctionSchema, Graph};

use crate::error::{Result, RuntimeError};
use crate::interpreter::GraphExecutor;
use crate::ivalue::IValue;

/// Supplies the executors (and so the graphs) of methods and free functions, typically
/// compiling them on first use. Implemented by the lead on top of the frontend's
/// CompilationUnit, so the runtime does not depend on the frontend. Keep one
/// [`GraphExecutor`] per function and hand out that same executor for repeated requests: it
/// holds the function's compiled code, which is built on its first run.
pub trait MethodSource: Send + Sync {
    /// The executor of method `name` of `class`; its graph's first input is `self`.
    fn method_executor(&self, class: &ClassType, name: &str) -> Result<Arc<GraphExecutor>>;
    /// The executor of a free function by qualified name (`__torch__.foo`).
    fn function_executor(&self, qualified_name: &str) -> Result<Arc<GraphExecutor>>;
    /// The graph of method `name` of `class`; its first input is `self`.
    fn method_graph(&self, class: &ClassType, name: &str) -> Result<Arc<Graph>> {
        Ok(self.method_executor(class, name)?.graph().clone())
    }
    /// The graph of a free function by qualified name (`__torch__.foo`).
    fn function_graph(&self, qualified_name: &str) -> Result<Arc<Graph>> {
        Ok(self.function_executor(qualified_name)?.graph().clone())
    }
    /// A shared handle to this source, for objects created while running (script-class
    /// instances need their methods). `None` when the source cannot be shared.
    fn shared(&self) -> Option<Arc<dyn MethodSource>> {
        None
    }
    /// The declared signature of method `name` of `class` (with `self`), when known: it
    /// supplies default values for arguments a caller leaves out.
    fn method_schema(&self, _class: &ClassType, _name: &str) -> Option<FunctionSchema> {
        None
    }
}

/// A `MethodSource` that knows no methods or functions: for objects that are plain data.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoMethods;

impl MethodSource for NoMethods {
    fn method_executor(&self, class: &ClassType, name: &str) -> Result<Arc<GraphExecutor>> {
        Err(RuntimeError::UnknownMethod {
            owner: class.qualified_name().to_string(),
            name: name.to_string(),
        })
    }

    fn function_executor(&self, qualified_name: &str) -> Result<Arc<GraphExecutor>> {
        Err(RuntimeError::UnknownMethod {
            owner: "<no compilation unit>".to_string(),
            name: qualified_name.to_string(),
        })
    }

    fn shared(&self) -> Option<Arc<dyn MethodSource>> {
        Some(Arc::new(NoMethods))
    }
}

/// An instance of a class type. Slots follow the class's attribute order; a slot the class
/// gained after the object was created reads as missing until it is set.
pub struct Object {
    class: Arc<ClassType>,
    slots: RwLock<Vec<IValue>>,
    methods: Arc<dyn MethodSource>,
}

impl fmt::Debug for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Slots are not printed: objects may be large (whole models) or cyclic.
        f.debug_struct("Object")
            .field("class", &self.class.qualified_name())
            .finish_non_exhaustive()
    }
}

impl Object {
    /// Creates an object whose slots are all `None`.
    pub fn new(class: Arc<ClassType>, methods: Arc<dyn MethodSource>) -> Arc<Object> {
        let count = class.attribute_count();
        Object::with_slots(class, vec![IValue::None; count], methods)
    }

    /// Creates an object from slot values in class attribute order.
    pub fn with_slots(
        class: Arc<ClassType>,
        slots: Vec<IValue>,
        methods: Arc<dyn MethodSource>,
    ) -> Arc<Object> {
        Arc::new(Object {
            class,
            slots: RwLock::new(slots),
            methods,
        })
    }

    pub fn class(&self) -> &Arc<ClassType> {
        &self.class
    }

    pub fn methods(&self) -> &Arc<dyn MethodSource> {
        &self.methods
    }

    fn unknown(&self, name: &str) -> RuntimeError {
        RuntimeError::UnknownAttribute {
            class_name: self.class.qualified_name().to_string(),
            attribute: name.to_string(),
        }
    }

    /// The slot index of attribute `name`.
    pub fn slot_index(&self, name: &str) -> Result<usize> {
        self.class
            .attribute_index(name)
            .ok_or_else(|| self.unknown(name))
    }

    pub fn get_slot(&self, index: usize) -> Option<IValue> {
        self.slots
            .read()
            .unwrap_or_else(|poison| poison.into_inner())
            .get(index)
            .cloned()
    }

    pub fn set_slot(&self, index: usize, value: IValue) {
        let mut slots = self
            .slots
            .write()
            .unwrap_or_else(|poison| poison.into_inner());
        if index >= slots.len() {
            slots.resize(index + 1, IValue::None);
        }
        slots[index] = value;
    }

    pub fn get_attr(&self, name: &str) -> Result<IValue> {
        let index = self.slot_index(name)?;
        self.get_slot(index).ok_or_else(|| self.unknown(name))
    }

    pub fn set_attr(&self, name: &str, value: IValue) -> Result<()> {
        let index = self.slot_index(name)?;
        self.set_slot(index, value);
        Ok(())
    }

    /// A snapshot of all slots in attribute order.
    pub fn slots(&self) -> Vec<IValue> {
        self.slots
            .read()
            .unwrap_or_else(|poison| poison.into_inner())
            .clone()
    }
}
