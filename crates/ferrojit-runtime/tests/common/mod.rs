//! Helpers shared by the integration tests: building graphs node by node.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ferrojit_ir::{parse_schema, AttributeValue, ClassType, Graph, NodeId, Type, ValueId};
use ferrojit_runtime::{GraphExecutor, MethodSource, RuntimeError};
use ferrojit_tensor::Tensor;

/// Inserts an operator node carrying its parsed schema; outputs get the given types.
pub fn op(graph: &mut Graph, schema: &str, inputs: &[ValueId], outputs: &[Type]) -> Vec<ValueId> {
    let node = op_node(graph, schema, inputs, outputs);
    graph.node_outputs(node).to_vec()
}

pub fn op_node(graph: &mut Graph, schema: &str, inputs: &[ValueId], outputs: &[Type]) -> NodeId {
    let schema = parse_schema(schema).expect("test schema parses");
    let node = graph.insert(&schema.name, inputs, outputs);
    graph.set_node_schema(node, Some(Arc::new(schema)));
    node
}

/// A single-output operator.
pub fn op1(graph: &mut Graph, schema: &str, inputs: &[ValueId], output: Type) -> ValueId {
    op(graph, schema, inputs, &[output])[0]
}

pub fn int(graph: &mut Graph, value: i64) -> ValueId {
    graph.insert_constant(Some(AttributeValue::Int(value)), Type::Int)
}

pub fn float(graph: &mut Graph, value: f64) -> ValueId {
    graph.insert_constant(Some(AttributeValue::Float(value)), Type::Float)
}

pub fn boolean(graph: &mut Graph, value: bool) -> ValueId {
    graph.insert_constant(Some(AttributeValue::Int(value as i64)), Type::Bool)
}

pub fn string(graph: &mut Graph, value: &str) -> ValueId {
    graph.insert_constant(Some(AttributeValue::Str(value.to_string())), Type::Str)
}

pub fn none(graph: &mut Graph) -> ValueId {
    graph.insert_constant(None, Type::NoneType)
}

pub fn prim(graph: &mut Graph, kind: &str, inputs: &[ValueId], outputs: &[Type]) -> NodeId {
    graph.insert(kind, inputs, outputs)
}

pub fn tensor_f32(values: &[f32], sizes: &[usize]) -> Tensor {
    Tensor::from_vec(values.to_vec(), sizes).expect("valid test tensor")
}

pub fn values_f32(tensor: &Tensor) -> Vec<f32> {
    tensor.to_vec::<f32>().expect("float32 tensor")
}

/// A method source over hand-built graphs: methods by (class, name), functions by name,
/// each with its executor (so each is compiled once, as a compilation unit's are).
#[derive(Default)]
pub struct TestMethods {
    pub methods: Mutex<HashMap<(String, String), Arc<GraphExecutor>>>,
    pub functions: Mutex<HashMap<String, Arc<GraphExecutor>>>,
}

impl TestMethods {
    pub fn add_method(&self, class: &ClassType, name: &str, graph: Graph) {
        self.methods.lock().unwrap().insert(
            (class.qualified_name().to_string(), name.to_string()),
            Arc::new(GraphExecutor::new(Arc::new(graph))),
        );
    }

    pub fn add_function(&self, name: &str, graph: Graph) {
        self.functions.lock().unwrap().insert(
            name.to_string(),
            Arc::new(GraphExecutor::new(Arc::new(graph))),
        );
    }
}

impl MethodSource for TestMethods {
    fn method_executor(
        &self,
        class: &ClassType,
        name: &str,
    ) -> Result<Arc<GraphExecutor>, RuntimeError> {
        self.methods
            .lock()
            .unwrap()
            .get(&(class.qualified_name().to_string(), name.to_string()))
            .cloned()
            .ok_or_else(|| RuntimeError::UnknownMethod {
                owner: class.qualified_name().to_string(),
                name: name.to_string(),
            })
    }

    fn function_executor(&self, qualified_name: &str) -> Result<Arc<GraphExecutor>, RuntimeError> {
        self.functions
            .lock()
            .unwrap()
            .get(qualified_name)
            .cloned()
            .ok_or_else(|| RuntimeError::UnknownMethod {
                owner: "test".to_string(),
                name: qualified_name.to_string(),
            })
    }
}

/// `fork(subgraph)` with no inputs, returning the `Future[int]`.
pub fn fork(graph: &mut Graph, subgraph: Graph) -> ValueId {
    let node = graph.insert("prim::fork", &[], &[Type::Future(Box::new(Type::Int))]);
    graph.set_attribute(node, "Subgraph", AttributeValue::Graph(Box::new(subgraph)));
    graph.node_output(node, 0)
}

/// `aten::wait(future)`, an int.
pub fn wait(graph: &mut Graph, future: ValueId) -> ValueId {
    let node = graph.insert("aten::wait", &[future], &[Type::Int]);
    graph.node_output(node, 0)
}

/// `operator(constant)` for an operator from int to int.
pub fn call_int(graph: &mut Graph, operator: &str, constant: i64) -> ValueId {
    let argument = int(graph, constant);
    let node = graph.insert(operator, &[argument], &[Type::Int]);
    graph.node_output(node, 0)
}

/// A graph of no inputs that calls `operator(constant)` and returns its int.
pub fn calls(operator: &str, constant: i64) -> Graph {
    let mut graph = Graph::new();
    let output = call_int(&mut graph, operator, constant);
    graph.register_output(output);
    graph
}
