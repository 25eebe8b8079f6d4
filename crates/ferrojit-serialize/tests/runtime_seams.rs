//! The runtime's seams as a compiled program meets them: each function's executor (its
//! compiled code lives with the function and goes when the module does) and the operator
//! observer (sees every operator call of a run, in order, with its values).

use std::sync::Arc;

use ferrojit_runtime::interpreter::{CallRecorder, RunOptions};
use ferrojit_runtime::ivalue::IValue;
use ferrojit_serialize::export::module_from_source;
use ferrojit_tensor::Tensor;

const PROGRAM: &str = "
def helper(y: Tensor, i: int) -> Tensor:
    return y + i * 2

def forward(x: Tensor, n: int) -> Tensor:
    y = x * 3
    for i in range(n):
        y = helper(y, i)
    return torch.relu(y)
";

fn tensor(values: &[f32]) -> IValue {
    IValue::from(Tensor::from_slice(values, &[values.len()]).unwrap())
}

fn floats(value: &IValue) -> Vec<f64> {
    value.to_tensor().unwrap().to_f64_vec()
}

#[test]
fn a_function_compiles_once_and_its_code_goes_with_the_module() {
    let loaded = module_from_source(PROGRAM, "seams.py", Some("forward")).unwrap();
    let object = loaded.module.object().clone();
    let executor = object
        .methods()
        .method_executor(object.class(), "forward")
        .unwrap();
    assert!(!executor.is_compiled());
    let result = loaded
        .module
        .forward(vec![tensor(&[1.0, -5.0]), IValue::Int(2)])
        .unwrap();
    assert_eq!(floats(&result), vec![5.0, 0.0]);
    assert!(executor.is_compiled());
    // The same executor comes back for the same method, holding the same code.
    let again = object
        .methods()
        .method_executor(object.class(), "forward")
        .unwrap();
    assert!(Arc::ptr_eq(&executor, &again));
    assert!(Arc::ptr_eq(
        &executor.code().unwrap(),
        &again.code().unwrap()
    ));
    let helper = object
        .methods()
        .function_executor("__torch__.helper")
        .unwrap();
    assert!(helper.is_compiled(), "the call compiled the helper");

    // Nothing else holds the executors: dropping the module and the unit frees them and
    // their code (a process-wide cache keyed by graph used to keep the code).
    let code = Arc::downgrade(&executor.code().unwrap());
    let executors = [Arc::downgrade(&executor), Arc::downgrade(&helper)];
    drop((executor, again, helper, object, loaded));
    assert!(executors.iter().all(|weak| weak.upgrade().is_none()));
    assert!(code.upgrade().is_none());
}

#[test]
fn an_observer_sees_each_operator_call_in_order_with_its_values() {
    let loaded = module_from_source(PROGRAM, "seams.py", Some("forward")).unwrap();
    let recorder = CallRecorder::new();
    let options = RunOptions {
        observer: Some(recorder.clone()),
        ..RunOptions::default()
    };
    let result = loaded
        .module
        .run_method_with_options(
            "forward",
            vec![tensor(&[1.0, -5.0]), IValue::Int(2)],
            &options,
        )
        .unwrap();
    assert_eq!(floats(&result), vec![5.0, 0.0]);

    let calls = recorder.calls();
    let names: Vec<&str> = calls.iter().map(|call| call.operator.as_str()).collect();
    // `i * 2` is computed inline when no one observes; observed, it is a call like the rest.
    assert_eq!(
        names,
        [
            "aten::mul.Scalar",
            "aten::mul.int",
            "aten::add.Scalar",
            "aten::mul.int",
            "aten::add.Scalar",
            "aten::relu",
        ]
    );
    let ints = |values: &[IValue]| -> Vec<i64> {
        values.iter().map(|value| value.to_int().unwrap()).collect()
    };
    // x * 3
    assert_eq!(floats(&calls[0].inputs[0]), vec![1.0, -5.0]);
    assert_eq!(calls[0].inputs[1].to_int().unwrap(), 3);
    assert_eq!(
        floats(&calls[0].outputs.as_ref().unwrap()[0]),
        vec![3.0, -15.0]
    );
    // i * 2 for i = 0, then i = 1
    assert_eq!(ints(&calls[1].inputs), vec![0, 2]);
    assert_eq!(ints(calls[1].outputs.as_ref().unwrap()), vec![0]);
    assert_eq!(ints(&calls[3].inputs), vec![1, 2]);
    assert_eq!(ints(calls[3].outputs.as_ref().unwrap()), vec![2]);
    // y + 2 with its default alpha, which the call left out
    assert_eq!(floats(&calls[4].inputs[0]), vec![3.0, -15.0]);
    assert_eq!(ints(&calls[4].inputs[1..]), vec![2, 1]);
    assert_eq!(
        floats(&calls[4].outputs.as_ref().unwrap()[0]),
        vec![5.0, -13.0]
    );
    // relu
    assert_eq!(
        floats(&calls[5].outputs.as_ref().unwrap()[0]),
        vec![5.0, 0.0]
    );

    // Without the observer the same run sees nothing new and gives the same result.
    let unobserved = loaded
        .module
        .forward(vec![tensor(&[1.0, -5.0]), IValue::Int(2)])
        .unwrap();
    assert_eq!(floats(&unobserved), vec![5.0, 0.0]);
    assert_eq!(recorder.calls().len(), calls.len());
}

#[test]
fn an_observer_sees_a_failing_call_and_its_error_still_propagates() {
    let source = "
def forward(x: Tensor) -> Tensor:
    return x.view(7)
";
    let loaded = module_from_source(source, "seams_fail.py", Some("forward")).unwrap();
    let recorder = CallRecorder::new();
    let options = RunOptions {
        observer: Some(recorder.clone()),
        ..RunOptions::default()
    };
    let observed = loaded
        .module
        .run_method_with_options("forward", vec![tensor(&[1.0, 2.0])], &options)
        .unwrap_err();
    let plain = loaded
        .module
        .forward(vec![tensor(&[1.0, 2.0])])
        .unwrap_err();
    assert_eq!(observed.to_string(), plain.to_string());
    let calls = recorder.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].operator, "aten::view");
    assert!(calls[0].outputs.is_none());
}
