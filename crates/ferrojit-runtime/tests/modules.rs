//! Modules and calls: CallMethod/CallFunction through a MethodSource, attributes,
//! parameters, PyTorch's argument errors, recursion limits.

mod common;

use std::sync::Arc;

use common::*;
use ferrojit_ir::{AttributeKind, AttributeValue, ClassType, Graph, Type};
use ferrojit_runtime::{IValue, Module, Object, RunOptions, RuntimeError};

struct Fixture {
    module: Module,
    child_class: Arc<ClassType>,
}

/// class Child(nn.Module): bias: Tensor (buffer)
/// class M(nn.Module):
///     weight: Tensor (parameter); scale: float; child: Child; calls: int
///     def forward(self, x: Tensor, scale: float) -> Tensor:
///         self.calls = self.calls + 1
///         return __torch__.double(self.helper(x)) * scale
///     def helper(self, x: Tensor) -> Tensor:
///         return x + self.weight + self.child.bias
/// def double(x: Tensor) -> Tensor: return x * 2
fn fixture() -> Fixture {
    let child_class = ClassType::new("__torch__.Child", true);
    child_class.add_attribute("bias", Type::Tensor, AttributeKind::Buffer);
    let class = ClassType::new("__torch__.M", true);
    class.add_attribute("weight", Type::Tensor, AttributeKind::Parameter);
    class.add_attribute("scale", Type::Float, AttributeKind::Regular);
    class.add_attribute(
        "child",
        Type::Class(child_class.clone()),
        AttributeKind::Regular,
    );
    class.add_attribute("calls", Type::Int, AttributeKind::Regular);

    let methods = Arc::new(TestMethods::default());

    let mut forward = Graph::new();
    let this = forward.add_input(Type::Class(class.clone()), Some("self"));
    let x = forward.add_input(Type::Tensor, Some("x.1"));
    let scale = forward.add_input(Type::Float, Some("scale"));
    let calls = prim(&mut forward, "prim::GetAttr", &[this], &[Type::Int]);
    forward.set_attribute(calls, "name", AttributeValue::Str("calls".into()));
    let one = int(&mut forward, 1);
    let calls = forward.node_output(calls, 0);
    let more = op1(
        &mut forward,
        "aten::add.int(int a, int b) -> int",
        &[calls, one],
        Type::Int,
    );
    let set = prim(&mut forward, "prim::SetAttr", &[this, more], &[]);
    forward.set_attribute(set, "name", AttributeValue::Str("calls".into()));
    let call = prim(
        &mut forward,
        "prim::CallMethod",
        &[this, x],
        &[Type::Tensor],
    );
    forward.set_attribute(call, "name", AttributeValue::Str("helper".into()));
    let helped = forward.node_output(call, 0);
    let doubled = prim(
        &mut forward,
        "prim::CallFunction",
        &[helped],
        &[Type::Tensor],
    );
    forward.set_attribute(
        doubled,
        "name",
        AttributeValue::Str("__torch__.double".into()),
    );
    let doubled = forward.node_output(doubled, 0);
    let result = op1(
        &mut forward,
        "aten::mul.Scalar(Tensor self, Scalar other) -> Tensor",
        &[doubled, scale],
        Type::Tensor,
    );
    forward.register_output(result);
    methods.add_method(&class, "forward", forward);

    let mut helper = Graph::new();
    let this = helper.add_input(Type::Class(class.clone()), Some("self"));
    let x = helper.add_input(Type::Tensor, Some("x"));
    let weight = prim(&mut helper, "prim::GetAttr", &[this], &[Type::Tensor]);
    helper.set_attribute(weight, "name", AttributeValue::Str("weight".into()));
    let child = prim(
        &mut helper,
        "prim::GetAttr",
        &[this],
        &[Type::Class(child_class.clone())],
    );
    helper.set_attribute(child, "name", AttributeValue::Str("child".into()));
    let child = helper.node_output(child, 0);
    let bias = prim(&mut helper, "prim::GetAttr", &[child], &[Type::Tensor]);
    helper.set_attribute(bias, "name", AttributeValue::Str("bias".into()));
    let add = "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor";
    let one = int(&mut helper, 1);
    let weight = helper.node_output(weight, 0);
    let partial = op1(&mut helper, add, &[x, weight, one], Type::Tensor);
    let bias = helper.node_output(bias, 0);
    let total = op1(&mut helper, add, &[partial, bias, one], Type::Tensor);
    helper.register_output(total);
    methods.add_method(&class, "helper", helper);

    let mut double = Graph::new();
    let x = double.add_input(Type::Tensor, Some("x"));
    let two = int(&mut double, 2);
    let y = op1(
        &mut double,
        "aten::mul.Scalar(Tensor self, Scalar other) -> Tensor",
        &[x, two],
        Type::Tensor,
    );
    double.register_output(y);
    methods.add_function("__torch__.double", double);

    let child = Object::with_slots(
        child_class.clone(),
        vec![IValue::from(tensor_f32(&[0.5, 0.5], &[2]))],
        methods.clone(),
    );
    let object = Object::with_slots(
        class,
        vec![
            IValue::from(tensor_f32(&[1.0, 2.0], &[2])),
            IValue::Double(3.0),
            IValue::Object(child),
            IValue::Int(0),
        ],
        methods,
    );
    Fixture {
        module: Module::new(object),
        child_class,
    }
}

#[test]
fn forward_calls_methods_functions_and_updates_attributes() {
    let Fixture { module, .. } = fixture();
    let x = tensor_f32(&[1.0, -1.0], &[2]);
    // ((x + weight + bias) * 2) * scale = ([2.5, 1.5] * 2) * 3
    let out = module
        .forward(vec![IValue::from(x.clone()), IValue::Double(3.0)])
        .unwrap();
    assert_eq!(values_f32(&out.to_tensor().unwrap()), vec![15.0, 9.0]);
    module
        .forward(vec![IValue::from(x), IValue::Double(1.0)])
        .unwrap();
    assert!(matches!(module.attr("calls").unwrap(), IValue::Int(2)));
    let out = module
        .run_method("helper", vec![IValue::from(tensor_f32(&[0.0, 0.0], &[2]))])
        .unwrap();
    assert_eq!(values_f32(&out.to_tensor().unwrap()), vec![1.5, 2.5]);
}

#[test]
fn argument_errors_use_pytorch_messages() {
    let Fixture { module, .. } = fixture();
    let x = IValue::from(tensor_f32(&[1.0, 2.0], &[2]));
    let error = module
        .forward(vec![x.clone(), IValue::Double(1.0), IValue::Int(3)])
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "forward() expected at most 3 argument(s) but received 4 argument(s). Declaration: forward(__torch__.M self, Tensor x, float scale) -> Tensor"
    );
    let error = module.forward(vec![x.clone()]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "forward() is missing value for argument 'scale'. Declaration: forward(__torch__.M self, Tensor x, float scale) -> Tensor"
    );
    let error = module
        .forward(vec![IValue::Int(1), IValue::Double(1.0)])
        .unwrap_err();
    assert!(error
        .to_string()
        .starts_with("forward() Expected a value of type 'Tensor' for argument 'x' but instead found type 'int'."));
    let error = module.run_method("missing", vec![]).unwrap_err();
    assert!(matches!(error, RuntimeError::UnknownMethod { .. }));
}

#[test]
fn attributes_parameters_buffers_and_children() {
    let Fixture {
        module,
        child_class,
    } = fixture();
    let parameters: Vec<String> = module
        .named_parameters(true)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert_eq!(parameters, vec!["weight"]);
    let buffers: Vec<String> = module
        .named_buffers(true)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert_eq!(buffers, vec!["child.bias"]);
    assert!(module.named_buffers(false).is_empty());
    let children = module.named_children();
    assert_eq!(children.len(), 1);
    assert_eq!(children[0].0, "child");
    assert_eq!(
        children[0].1.class().qualified_name(),
        child_class.qualified_name()
    );
    let names: Vec<String> = module.named_modules().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, vec!["".to_string(), "child".to_string()]);

    let error = module.attr("nope").unwrap_err();
    assert_eq!(
        error.to_string(),
        "Object of class '__torch__.M' has no attribute 'nope'"
    );
    module.set_attr("scale", IValue::Double(0.5)).unwrap();
    assert!(matches!(module.attr("scale").unwrap(), IValue::Double(v) if v == 0.5));
}

#[test]
fn runaway_recursion_hits_the_call_depth_limit() {
    // def forever(x: int) -> int: return forever(x)
    let methods = Arc::new(TestMethods::default());
    let mut graph = Graph::new();
    let x = graph.add_input(Type::Int, Some("x"));
    let call = prim(&mut graph, "prim::CallFunction", &[x], &[Type::Int]);
    graph.set_attribute(
        call,
        "name",
        AttributeValue::Str("__torch__.forever".into()),
    );
    graph.register_output(graph.node_output(call, 0));
    methods.add_function("__torch__.forever", graph);
    let entry = methods
        .functions
        .lock()
        .unwrap()
        .get("__torch__.forever")
        .map(|executor| executor.graph().clone())
        .unwrap();
    let options = RunOptions {
        max_call_depth: 50,
        ..RunOptions::default()
    };
    let error = ferrojit_runtime::run_shared_graph(
        &entry,
        vec![IValue::Int(1)],
        methods.as_ref(),
        &options,
    )
    .unwrap_err();
    assert_eq!(error, RuntimeError::CallDepthExceeded(50));
    // The default limit of 1000 frames lives on the heap, not the Rust stack.
    let error = ferrojit_runtime::run_shared_graph(
        &entry,
        vec![IValue::Int(1)],
        methods.as_ref(),
        &RunOptions::default(),
    )
    .unwrap_err();
    assert_eq!(error, RuntimeError::CallDepthExceeded(1000));
}
