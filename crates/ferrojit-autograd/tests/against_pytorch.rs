//! ferrojit-autograd against PyTorch: per-operator gradients (float32 and float64),
//! double backward, the error texts, and TorchScript archives calling
//! `torch.autograd.grad`/`backward`, all from tests/fixtures/autograd/generate.py.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use ferrojit_autograd::call::{self, call};
use ferrojit_autograd::{grad, GradOptions};
use ferrojit_ir::Type;
use ferrojit_runtime::{IValue, TensorCell};
use ferrojit_tensor::{DType, Tensor};
use serde_json::Value;

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/autograd")
}

fn fixtures() -> &'static Value {
    static DATA: OnceLock<Value> = OnceLock::new();
    DATA.get_or_init(|| {
        ferrojit_autograd::register().expect("autograd registers");
        let text = std::fs::read_to_string(fixture_dir().join("autograd.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    })
}

fn tensor_of(value: &Value) -> Tensor {
    let shape: Vec<usize> = value["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap() as usize)
        .collect();
    let data = value["data"].as_array().unwrap();
    match value["dtype"].as_str().unwrap() {
        "float32" => Tensor::from_vec(
            data.iter().map(|v| v.as_f64().unwrap() as f32).collect(),
            &shape,
        ),
        "float64" => Tensor::from_vec(data.iter().map(|v| v.as_f64().unwrap()).collect(), &shape),
        "int64" => Tensor::from_vec(data.iter().map(|v| v.as_i64().unwrap()).collect(), &shape),
        "bool" => Tensor::from_vec(data.iter().map(|v| v.as_bool().unwrap()).collect(), &shape),
        other => panic!("dtype {other}"),
    }
    .unwrap()
}

/// A tensor value, with `requires_grad` as the fixture says; leaves are collected.
fn tensor_value(value: &Value, leaves: &mut Vec<Arc<TensorCell>>) -> IValue {
    let requires_grad = value["requires_grad"].as_bool().unwrap_or(false)
        && matches!(value["dtype"].as_str(), Some("float32" | "float64"));
    let ivalue = IValue::tensor_with_requires_grad(tensor_of(value), requires_grad);
    if requires_grad {
        leaves.push(ivalue.to_tensor_cell().unwrap().clone());
    }
    ivalue
}

fn argument(value: &Value, leaves: &mut Vec<Arc<TensorCell>>) -> IValue {
    let (kind, inner) = value.as_object().unwrap().iter().next().unwrap();
    match kind.as_str() {
        "tensor" => tensor_value(inner, leaves),
        "tensors" => IValue::list(
            Type::Tensor,
            inner
                .as_array()
                .unwrap()
                .iter()
                .map(|t| tensor_value(t, leaves))
                .collect(),
        ),
        "int" => IValue::Int(inner.as_i64().unwrap()),
        "float" => IValue::Double(inner.as_f64().unwrap()),
        "bool" => IValue::Bool(inner.as_bool().unwrap()),
        "str" => IValue::string(inner.as_str().unwrap()),
        "none" => IValue::None,
        "ints" => IValue::int_list(
            &inner
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_i64().unwrap())
                .collect::<Vec<_>>(),
        ),
        other => panic!("argument kind {other}"),
    }
}

fn as_f64(tensor: &Tensor) -> Vec<f64> {
    match tensor.dtype() {
        DType::Float32 => tensor
            .contiguous()
            .to_vec::<f32>()
            .unwrap()
            .into_iter()
            .map(f64::from)
            .collect(),
        // Batch norm's num_batches_tracked.
        DType::Int64 => tensor
            .contiguous()
            .to_vec::<i64>()
            .unwrap()
            .into_iter()
            .map(|value| value as f64)
            .collect(),
        _ => tensor.contiguous().to_vec::<f64>().unwrap(),
    }
}

fn assert_close(case: &str, actual: &Tensor, expected: &Tensor) {
    let (rtol, atol) = if expected.dtype() == DType::Float64 {
        (1e-9, 1e-10)
    } else {
        (1e-4, 1e-5)
    };
    assert_eq!(actual.sizes(), expected.sizes(), "{case}: shape");
    assert_eq!(actual.dtype(), expected.dtype(), "{case}: dtype");
    for (i, (a, e)) in as_f64(actual).iter().zip(as_f64(expected)).enumerate() {
        assert!(
            (a - e).abs() <= atol + rtol * e.abs(),
            "{case}: element {i} is {a}, PyTorch gives {e}"
        );
    }
}

/// grad_fn names that differ because ferrojit records the composite operator PyTorch
/// decomposes (`matmul` into `mv`/`_unsafe_view`, `linear` into `addmm`/`_unsafe_view`).
fn name_differs_by_design(case: &str) -> bool {
    case.starts_with("matmul_") || case.starts_with("linear_") || case.starts_with("dropout_")
}

#[test]
fn operator_gradients_match_pytorch() {
    let data = fixtures();
    let mut checked = 0;
    let mut failures = Vec::new();
    for case in data["ops"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap().to_string();
        match std::panic::catch_unwind(|| check_case(case)) {
            Ok(()) => checked += 1,
            Err(panic) => failures.push(format!(
                "{name}: {}",
                panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= 100, "only {checked} cases");
}

fn check_case(case: &Value) {
    {
        let name = case["name"].as_str().unwrap();
        let mut leaves = Vec::new();
        let arguments: Vec<IValue> = case["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| argument(a, &mut leaves))
            .collect();
        let outputs = call(case["op"].as_str().unwrap(), arguments)
            .unwrap_or_else(|e| panic!("{name}: forward: {e}"));
        let output = outputs[0].to_tensor_cell().unwrap().clone();
        assert_close(
            &format!("{name} forward"),
            &output.get(),
            &tensor_of(&case["output"]),
        );
        if !name_differs_by_design(name) {
            assert_eq!(
                ferrojit_autograd::grad_fn_name(&output).as_deref(),
                case["grad_fn"].as_str(),
                "{name}: grad_fn"
            );
        }
        let double = case.get("double").is_some();
        let grad_output = IValue::from(tensor_of(&case["grad_output"]));
        let grads = grad(
            &[output],
            &leaves,
            &[Some(grad_output)],
            GradOptions {
                retain_graph: None,
                create_graph: double,
            },
            true,
        )
        .unwrap_or_else(|e| panic!("{name}: backward: {e}"));
        for (index, (actual, expected)) in grads
            .iter()
            .zip(case["grads"].as_array().unwrap())
            .enumerate()
        {
            match (actual, expected.is_null()) {
                (Some(actual), false) => assert_close(
                    &format!("{name} grad {index}"),
                    &actual.to_tensor().unwrap(),
                    &tensor_of(expected),
                ),
                (None, true) => {}
                (actual, _) => panic!("{name} grad {index}: got {actual:?}, expected {expected}"),
            }
        }
        if let Some(second) = case.get("double") {
            // sum_i <grads_i, v_i>, differentiated again.
            let mut total: Option<IValue> = None;
            for (g, v) in grads.iter().zip(second["vs"].as_array().unwrap()) {
                let Some(g) = g else { continue };
                if !g.to_tensor_cell().unwrap().requires_grad() {
                    continue;
                }
                let product = call::mul(g, &IValue::from(tensor_of(v))).unwrap();
                let summed = call::call1("aten::sum", vec![product]).unwrap();
                total = Some(match total {
                    None => summed,
                    Some(t) => call::add(&t, &summed).unwrap(),
                });
            }
            let total = total.expect("a second-order graph");
            let seconds = grad(
                &[total.to_tensor_cell().unwrap().clone()],
                &leaves,
                &[],
                GradOptions::default(),
                true,
            )
            .unwrap_or_else(|e| panic!("{name}: double backward: {e}"));
            for (index, (actual, expected)) in seconds
                .iter()
                .zip(second["grads"].as_array().unwrap())
                .enumerate()
            {
                match (actual, expected.is_null()) {
                    (Some(actual), false) => assert_close(
                        &format!("{name} second-order grad {index}"),
                        &actual.to_tensor().unwrap(),
                        &tensor_of(expected),
                    ),
                    (Some(actual), true) => {
                        // PyTorch: unused; ferrojit may return zeros.
                        assert!(as_f64(&actual.to_tensor().unwrap())
                            .iter()
                            .all(|v| *v == 0.0));
                    }
                    (None, true) => {}
                    (None, false) => panic!("{name} second-order grad {index}: missing"),
                }
            }
        }
    }
}

fn expected_error(key: &str) -> String {
    fixtures()["errors"][key].as_str().unwrap().to_string()
}

fn leaf(values: Vec<f32>) -> IValue {
    let length = values.len();
    IValue::tensor_with_requires_grad(Tensor::from_vec(values, &[length]).unwrap(), true)
}

fn cell(value: &IValue) -> Arc<TensorCell> {
    value.to_tensor_cell().unwrap().clone()
}

fn backward_of(value: &IValue) -> Result<(), ferrojit_runtime::RuntimeError> {
    ferrojit_autograd::backward(&[cell(value)], &[], GradOptions::default())
}

fn message(error: ferrojit_runtime::RuntimeError) -> String {
    match error {
        ferrojit_runtime::RuntimeError::Other(text) => text,
        other => other.to_string(),
    }
}

#[test]
fn error_texts_match_pytorch() {
    let _ = fixtures();
    // A second backward through freed saved values.
    let x = leaf(vec![0.5, -1.0, 2.0]);
    let y = call::call1("aten::sum", vec![call::unary("aten::exp", &x).unwrap()]).unwrap();
    backward_of(&y).unwrap();
    assert_eq!(
        message(backward_of(&y).unwrap_err()),
        expected_error("second_backward")
    );

    // With retain_graph the second one works and accumulates.
    let x = leaf(vec![0.5, -1.0]);
    let y = call::call1("aten::sum", vec![call::unary("aten::exp", &x).unwrap()]).unwrap();
    let retain = GradOptions {
        retain_graph: Some(true),
        create_graph: false,
    };
    ferrojit_autograd::backward(&[cell(&y)], &[], retain).unwrap();
    ferrojit_autograd::backward(&[cell(&y)], &[], retain).unwrap();
    let accumulated = as_f64(&cell(&x).autograd().grad().unwrap().get());
    assert!((accumulated[0] - 2.0 * 0.5f64.exp()).abs() < 1e-5);

    // A tensor without grad_fn.
    let plain = IValue::from(Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap());
    let summed = call::call1("aten::sum", vec![plain]).unwrap();
    assert_eq!(
        message(backward_of(&summed).unwrap_err()),
        expected_error("no_grad_fn")
    );

    // An in-place op on a leaf that requires grad.
    let x = leaf(vec![1.0, 2.0]);
    let error = call::call("aten::add_.Scalar", vec![x.clone(), IValue::Double(1.0)]).unwrap_err();
    assert_eq!(message(error), expected_error("leaf_in_place"));
    // ... allowed under no_grad (an optimizer step).
    {
        let _guard = ferrojit_autograd::no_grad();
        call::call("aten::add_.Scalar", vec![x.clone(), IValue::Double(1.0)]).unwrap();
    }
    assert_eq!(as_f64(&cell(&x).get()), vec![2.0, 3.0]);

    // A saved tensor modified in place (its grad_fn named in the text).
    let x = leaf(vec![1.0, 2.0, 3.0]);
    let y = call::scale(&x, 2.0).unwrap();
    let z = call::mul(&y, &y).unwrap();
    call::call("aten::add_.Scalar", vec![y.clone(), IValue::Double(1.0)]).unwrap();
    let total = call::call1("aten::sum", vec![z]).unwrap();
    assert_eq!(
        message(backward_of(&total).unwrap_err()),
        expected_error("modified_saved")
    );

    // A saved tensor that does not require grad, modified in place.
    let x = leaf(vec![1.0, 2.0, 3.0]);
    let w = IValue::from(Tensor::from_vec(vec![1.0f32, 1.0, 1.0], &[3]).unwrap());
    let y = call::call1("aten::sum", vec![call::mul(&x, &w).unwrap()]).unwrap();
    call::call("aten::add_.Scalar", vec![w.clone(), IValue::Double(1.0)]).unwrap();
    assert_eq!(
        message(backward_of(&y).unwrap_err()),
        expected_error("modified_saved_plain")
    );

    // grad_outputs of the wrong shape, a non-scalar output without gradient, an unused input.
    let x = leaf(vec![1.0, 2.0]);
    let y = call::scale(&x, 2.0).unwrap();
    let wrong = IValue::from(Tensor::ones(&[3], DType::Float32).unwrap());
    let error = grad(
        &[cell(&y)],
        &[cell(&x)],
        &[Some(wrong)],
        GradOptions::default(),
        false,
    );
    assert_eq!(
        message(error.unwrap_err()),
        expected_error("grad_outputs_shape")
    );
    assert_eq!(
        message(backward_of(&y).unwrap_err()),
        expected_error("non_scalar")
    );
    let unused = leaf(vec![1.0, 2.0]);
    let total = call::call1("aten::sum", vec![y]).unwrap();
    let error = grad(
        &[cell(&total)],
        &[cell(&x), cell(&unused)],
        &[],
        GradOptions::default(),
        false,
    );
    assert_eq!(message(error.unwrap_err()), expected_error("unused"));
}

#[test]
fn tensors_track_their_history() {
    let _ = fixtures();
    let x = leaf(vec![1.0, -2.0, 3.0]);
    assert!(cell(&x).autograd().is_leaf());
    let y = call::mul(&x, &x).unwrap();
    assert_eq!(
        ferrojit_autograd::grad_fn_name(&cell(&y)).as_deref(),
        Some("MulBackward0")
    );
    assert!(!cell(&y).autograd().is_leaf());
    assert!(cell(&y).requires_grad());
    // detach: same data, no history; requires_grad_(False) on a non-leaf is refused.
    let detached = call::call1("aten::detach", vec![y.clone()]).unwrap();
    assert!(!cell(&detached).requires_grad());
    assert!(call::call("aten::requires_grad_", vec![y.clone(), IValue::Bool(false)]).is_err());
    // retain_grad keeps a non-leaf's gradient.
    call::call("aten::retain_grad", vec![y.clone()]).unwrap();
    let total = call::call1("aten::sum", vec![y.clone()]).unwrap();
    backward_of(&total).unwrap();
    assert_eq!(
        as_f64(&cell(&y).autograd().grad().unwrap().get()),
        vec![1.0, 1.0, 1.0]
    );
    assert_eq!(
        as_f64(&cell(&x).autograd().grad().unwrap().get()),
        vec![2.0, -4.0, 6.0]
    );
    // No recording with grad mode off.
    let _off = ferrojit_autograd::no_grad();
    let z = call::mul(&x, &x).unwrap();
    assert!(!cell(&z).requires_grad());
    assert!(ferrojit_autograd::grad_fn_name(&cell(&z)).is_none());
}

#[test]
fn an_operator_without_formula_fails_when_a_gradient_flows_through_it() {
    let _ = fixtures();
    let x = leaf(vec![1.0, 2.0, 3.0]);
    // `igamma` stays without a formula (PyTorch differentiates only its `other` argument).
    let y = call::call1("aten::igamma", vec![x.clone(), x.clone()]).unwrap();
    assert_eq!(
        ferrojit_autograd::grad_fn_name(&cell(&y)).as_deref(),
        Some("IgammaBackward0")
    );
    let total = call::call1("aten::sum", vec![y]).unwrap();
    let error = message(backward_of(&total).unwrap_err());
    assert_eq!(error, "the derivative for 'igamma' is not implemented.");
}

fn load(name: &str) -> ferrojit_runtime::Module {
    let _ = fixtures();
    ferrojit_serialize::import::load_module(&fixture_dir().join(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .module
}

fn tuple_items(value: IValue) -> Vec<IValue> {
    value.to_tuple().unwrap().items.clone()
}

#[test]
fn scripted_autograd_grad_with_create_graph_matches_pytorch() {
    let expected = &fixtures()["scripts"]["grad"];
    let module = load("script_grad.pt");
    let x = IValue::tensor_with_requires_grad(tensor_of(&expected["x"]), true);
    let w = IValue::tensor_with_requires_grad(tensor_of(&expected["w"]), true);
    let items = tuple_items(module.forward(vec![x, w]).unwrap());
    assert_close(
        "g1",
        &items[0].to_tensor().unwrap(),
        &tensor_of(&expected["g1"]),
    );
    assert_close(
        "gg",
        &items[1].to_tensor().unwrap(),
        &tensor_of(&expected["gg"]),
    );
}

#[test]
fn scripted_backward_and_grad_attribute_match_pytorch() {
    let expected = &fixtures()["scripts"]["backward"];
    let module = load("script_backward.pt");
    let x = IValue::from(tensor_of(&expected["x"]));
    let w = IValue::from(tensor_of(&expected["w"]));
    let items = tuple_items(module.forward(vec![x, w]).unwrap());
    assert_close(
        "before",
        &items[0].to_tensor().unwrap(),
        &tensor_of(&expected["before"]),
    );
    assert_close(
        "after",
        &items[1].to_tensor().unwrap(),
        &tensor_of(&expected["after"]),
    );
    for (index, key) in [(2, "is_leaf"), (3, "requires_grad"), (4, "enabled")] {
        assert_eq!(
            items[index].to_bool().unwrap(),
            expected[key].as_bool().unwrap(),
            "{key}"
        );
    }
}

/// `aten::backward` returns nothing: the frontend's dead code elimination must keep it
/// because its operator is registered as having side effects (it writes the leaves' `.grad`).
#[test]
fn compiled_backward_call_survives_dead_code_elimination() {
    let _ = fixtures();
    let source = "def f(x: Tensor, w: Tensor) -> Tensor:\n    y = torch.sum(torch.mul(x, w))\n    torch.autograd.backward(y)\n    z = torch.sum(w)\n    torch.autograd.backward([z], None, True)\n    return x\n";
    let unit = ferrojit_frontend::compile_source(
        source,
        ferrojit_serialize::import::RegistrySchemas::builtins(),
    )
    .unwrap();
    let graph = unit.function("__torch__.f").unwrap().graph(&unit).unwrap();
    let text = graph.to_string();
    assert_eq!(text.matches("aten::backward").count(), 2, "{text}");
    assert!(text.contains("aten::mul"), "{text}");
}

#[test]
fn scripted_grad_mode_matches_pytorch() {
    let expected = &fixtures()["scripts"]["no_grad"];
    let module = load("script_no_grad.pt");
    let x = IValue::from(Tensor::ones(&[2], DType::Float32).unwrap());
    let items = tuple_items(module.forward(vec![x]).unwrap());
    for (index, value) in items.iter().enumerate() {
        assert_eq!(
            value.to_bool().unwrap(),
            expected[index].as_bool().unwrap(),
            "item {index}"
        );
    }
}

fn last_line(text: &str) -> String {
    text.lines()
        .last()
        .unwrap_or_default()
        .trim_start_matches("RuntimeError: ")
        .to_string()
}

#[test]
fn scripted_grad_errors_match_pytorch() {
    let scripts = &fixtures()["scripts"];
    let module = load("script_grad_of_constant.pt");
    let x = IValue::from(Tensor::ones(&[2], DType::Float32).unwrap());
    let w = IValue::tensor_with_requires_grad(Tensor::ones(&[2], DType::Float32).unwrap(), true);
    let error = module
        .forward(vec![x.clone(), w.clone()])
        .unwrap_err()
        .to_string();
    let expected = last_line(scripts["grad_of_constant_error"].as_str().unwrap());
    assert!(error.contains(&expected), "{error} lacks {expected}");
    let module = load("script_grad_inputs.pt");
    let error = module.forward(vec![x, w]).unwrap_err().to_string();
    let expected = last_line(scripts["input_not_requiring_grad_error"].as_str().unwrap());
    assert!(error.contains(&expected), "{error} lacks {expected}");
}

#[test]
fn scripted_training_steps_match_pytorch() {
    train_in_script_and_compare("train", "script_train.pt", "train_steps");
}

/// The training fixture: 50 Adam steps of the batch-norm CNN inside TorchScript end
/// with PyTorch's loss history, parameters and batch-norm running statistics.
#[test]
fn scripted_fifty_adam_steps_match_pytorch() {
    let expected = &fixtures()["scripts"]["train_adam"];
    assert_eq!(expected["steps"].as_i64(), Some(50));
    let module = train_in_script_and_compare("train_adam", "script_train_adam.pt", "train_adam");
    let buffers = module.named_buffers(true);
    let expected_buffers = expected["buffers"].as_object().unwrap();
    assert_eq!(buffers.len(), expected_buffers.len());
    for (name, value) in buffers {
        let want = &expected_buffers[&format!("net.{name}").replace("net.net.", "net.")];
        assert_close(&name, &value, &tensor_of(want));
    }
}

/// Runs `method(x, target, steps, lr)` of the archive with the fixture's arguments under
/// `key`, and checks the returned losses and the parameters it leaves against PyTorch's.
fn train_in_script_and_compare(key: &str, archive: &str, method: &str) -> ferrojit_runtime::Module {
    let expected = &fixtures()["scripts"][key];
    let module = load(archive);
    let x = IValue::from(tensor_of(&expected["x"]));
    let target: Vec<i64> = expected["target"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    let length = target.len();
    let target = IValue::from(Tensor::from_vec(target, &[length]).unwrap());
    let steps = expected["steps"].as_i64().unwrap();
    let losses = module
        .run_method(
            method,
            vec![
                x,
                target,
                IValue::Int(steps),
                IValue::Double(expected["lr"].as_f64().unwrap()),
            ],
        )
        .unwrap();
    let losses = losses.to_double_vec().unwrap();
    let expected_losses: Vec<f64> = expected["losses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(losses.len(), expected_losses.len());
    for (step, (a, e)) in losses.iter().zip(&expected_losses).enumerate() {
        assert!(
            (a - e).abs() <= 1e-5 + 1e-4 * e.abs(),
            "loss {step}: {a} vs {e}"
        );
    }
    let parameters = module.named_parameters(true);
    let expected_parameters = expected["params"].as_object().unwrap();
    assert_eq!(parameters.len(), expected_parameters.len());
    for (name, value) in parameters {
        let want = &expected_parameters[&format!("net.{name}").replace("net.net.", "net.")];
        assert_close(&name, &value, &tensor_of(want));
    }
    module
}
