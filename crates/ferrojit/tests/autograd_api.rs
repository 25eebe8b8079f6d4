//! The facade's Rust autograd API (`ferrojit::autograd`, issue 23 item 8) on a loaded model:
//! gradients reach parameters and inputs, `no_grad` records nothing, PyTorch's errors come
//! back as errors, and a very long graph is freed without exhausting the stack.

use ferrojit::autograd::{self, GradOptions};
use ferrojit::{IValue, Tensor};

fn mlp() -> ferrojit::Model {
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    ferrojit::load(format!("{examples}/mlp.pt")).expect("mlp.pt loads")
}

fn sum(value: IValue) -> IValue {
    autograd::call_operator("aten::sum", vec![value]).expect("sum")
}

#[test]
fn backward_through_a_model_reaches_its_parameters_and_inputs() {
    ferrojit::enable_autograd().unwrap();
    let _recording = autograd::enable_grad();
    let model = mlp();
    let module = model.torchscript_module().expect("a TorchScript module");
    let parameters = module.named_parameters(true);
    assert!(!parameters.is_empty());
    let x = IValue::from(Tensor::from_vec(vec![0.25_f32; 8], &[2, 4]).unwrap());
    autograd::set_requires_grad(&x, true).unwrap();
    assert!(autograd::requires_grad(&x).unwrap());
    assert!(autograd::is_leaf(&x).unwrap());

    let output = model.forward(vec![x.clone(), 0.5.into()]).unwrap();
    assert!(!autograd::is_leaf(&output).unwrap());
    let name = autograd::grad_fn_name(&output).unwrap().expect("a grad_fn");
    // An operator's node (`AddmmBackward0`, ...), or, as in PyTorch's optimized TorchScript
    // graphs, the node of the prim::DifferentiableGraph that the executor grouped the MLP into.
    assert!(
        name.ends_with("Backward0") || name == "DifferentiableGraphBackward",
        "{name}"
    );
    autograd::backward(&[sum(output)], GradOptions::default()).unwrap();

    let gradient = autograd::grad_of(&x).unwrap().expect("x.grad");
    assert_eq!(gradient.to_tensor().unwrap().sizes(), &[2, 4]);
    // Each parameter the model read (as loaded: requires_grad as PyTorch saved it) has a
    // gradient of its own shape.
    for (path, tensor) in parameters {
        let mut owner = module.clone();
        let mut value = IValue::None;
        for part in path.split('.') {
            value = owner.attr(part).expect("attribute");
            if let IValue::Object(object) = &value {
                owner = ferrojit::Module::new(object.clone());
            }
        }
        let gradient = autograd::grad_of(&value).unwrap();
        let gradient = gradient.unwrap_or_else(|| panic!("{path} has no .grad"));
        assert_eq!(
            gradient.to_tensor().unwrap().sizes(),
            tensor.sizes(),
            "{path}"
        );
    }
}

#[test]
fn grad_returns_what_backward_would_accumulate_and_leaves_grad_alone() {
    ferrojit::enable_autograd().unwrap();
    let _recording = autograd::enable_grad();
    // y = sum(x * w): dy/dx = w and dy/dw = x.
    let x = IValue::from(Tensor::from_vec(vec![1.0_f64, 2.0, 3.0], &[3]).unwrap());
    let w = IValue::from(Tensor::from_vec(vec![-1.0_f64, 0.5, 4.0], &[3]).unwrap());
    autograd::set_requires_grad(&x, true).unwrap();
    autograd::set_requires_grad(&w, true).unwrap();
    let product = autograd::call_operator("aten::mul.Tensor", vec![x.clone(), w.clone()]);
    let y = sum(product.unwrap());
    let gradients = autograd::grad(&[y], &[x.clone(), w.clone()], GradOptions::default());
    let gradients = gradients.unwrap();
    let values = |value: &IValue| value.to_tensor().unwrap().to_vec::<f64>().unwrap();
    assert_eq!(values(&gradients[0]), vec![-1.0, 0.5, 4.0]);
    assert_eq!(values(&gradients[1]), vec![1.0, 2.0, 3.0]);
    assert!(autograd::grad_of(&x).unwrap().is_none());
    assert!(autograd::grad_of(&w).unwrap().is_none());
}

#[test]
fn no_grad_records_nothing_and_pytorchs_errors_come_back() {
    ferrojit::enable_autograd().unwrap();
    let _recording = autograd::enable_grad();
    let x = IValue::from(Tensor::from_vec(vec![1.0_f32, 2.0], &[2]).unwrap());
    autograd::set_requires_grad(&x, true).unwrap();
    let untracked = {
        let _no_grad = autograd::no_grad();
        assert!(!ferrojit::is_grad_enabled());
        sum(autograd::call_operator("aten::mul.Tensor", vec![x.clone(), x.clone()]).unwrap())
    };
    assert!(ferrojit::is_grad_enabled(), "the guard restores grad mode");
    assert!(autograd::is_leaf(&untracked).unwrap());
    assert!(!autograd::requires_grad(&untracked).unwrap());
    let error = autograd::backward(&[untracked], GradOptions::default()).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("element 0 of tensors does not require grad and does not have a grad_fn"),
        "{error}"
    );
    // A second backward through freed saved tensors is PyTorch's error too.
    let y = sum(autograd::call_operator("aten::mul.Tensor", vec![x.clone(), x.clone()]).unwrap());
    autograd::backward(std::slice::from_ref(&y), GradOptions::default()).unwrap();
    let error = autograd::backward(&[y], GradOptions::default()).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("Trying to backward through the graph a second time"),
        "{error}"
    );
    // An in-place write to a leaf that requires grad, while recording.
    let error = autograd::call_operator("aten::mul_.Scalar", vec![x, IValue::Double(2.0)]);
    let error = error.unwrap_err().to_string();
    assert!(
        error
            .contains("a leaf Variable that requires grad is being used in an in-place operation."),
        "{error}"
    );
}

#[test]
fn a_very_long_graph_is_freed_without_exhausting_the_stack() {
    ferrojit::enable_autograd().unwrap();
    // A test thread's stack (2 MiB by default) held a recursive drop of a few thousand
    // nodes at most; this chain is far longer.
    let _recording = autograd::enable_grad();
    let x = IValue::from(Tensor::from_vec(vec![1.0_f32], &[1]).unwrap());
    autograd::set_requires_grad(&x, true).unwrap();
    let mut y = x.clone();
    for _ in 0..100_000 {
        y = autograd::call_operator("aten::mul.Scalar", vec![y, IValue::Double(1.0)]).unwrap();
    }
    assert!(!autograd::is_leaf(&y).unwrap());
    drop(y);
    // And a shorter chain still differentiates end to end: d(x * 1 * ... * 1)/dx = 1.
    let mut y = x.clone();
    for _ in 0..1_000 {
        y = autograd::call_operator("aten::mul.Scalar", vec![y, IValue::Double(1.0)]).unwrap();
    }
    let gradients = autograd::grad(&[sum(y)], &[x], GradOptions::default()).unwrap();
    let gradient = gradients[0].to_tensor().unwrap().to_vec::<f32>().unwrap();
    assert_eq!(gradient, vec![1.0]);
}
