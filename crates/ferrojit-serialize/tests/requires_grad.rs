//! `requires_grad` belongs to the tensor handle (the runtime's `TensorCell`), not to the tensor
//! value: a flag set with `requires_grad_()` outlives an in-place operator that replaces the
//! handle's tensor, and the saved archive's `_rebuild_tensor_v2` records it.

use std::path::Path;

use ferrojit_archive::pickle_value::PickleValue;
use ferrojit_archive::unpickler::UnpicklerOptions;
use ferrojit_archive::zip_archive::ArchiveReader;
use ferrojit_runtime::ivalue::IValue;
use ferrojit_runtime::registry::{OperatorRegistry, Stack};
use ferrojit_serialize::export::save_module_to_bytes;
use ferrojit_serialize::import::{load_module, load_module_from_bytes};
use ferrojit_serialize::values::unpickle_record;

/// Runs one builtin operator on `arguments` and returns its single result.
fn call(full_name: &str, arguments: Vec<IValue>) -> IValue {
    let operator = OperatorRegistry::global()
        .lookup(full_name)
        .unwrap_or_else(|| panic!("no operator {full_name}"));
    let mut stack: Stack = arguments;
    (operator.kernel)(&mut stack).unwrap_or_else(|error| panic!("{full_name}: {error}"));
    assert_eq!(stack.len(), 1, "{full_name} returns one value");
    stack.remove(0)
}

/// The `requires_grad` argument (the fifth) of the `_rebuild_tensor_v2` call that the saved
/// module's `data.pkl` makes for its attribute `name`.
fn saved_requires_grad(archive_bytes: Vec<u8>, name: &str) -> bool {
    let archive = ArchiveReader::from_bytes(archive_bytes).unwrap();
    let root = unpickle_record(&archive, "data.pkl", UnpicklerOptions::torchscript_data()).unwrap();
    let PickleValue::Object(object) = &root else {
        panic!(
            "data.pkl holds a {}, not the module object",
            root.kind_name()
        );
    };
    let state = object.borrow().state.clone().expect("the module's state");
    let PickleValue::Dict(items) = &state else {
        panic!("the module's state is a {}, not a dict", state.kind_name());
    };
    let value = items
        .borrow()
        .iter()
        .find(|(key, _)| key.as_str() == Some(name))
        .map(|(_, value)| value.clone())
        .unwrap_or_else(|| panic!("no attribute {name} in data.pkl"));
    let PickleValue::Reduce(call) = &value else {
        panic!("{name} is a {}, not a reduce", value.kind_name());
    };
    let call = call.borrow();
    assert!(call
        .callable
        .is_global("torch._utils", "_rebuild_tensor_v2"));
    let args = call.args.as_tuple().expect("the arguments tuple");
    match args.get(4) {
        Some(PickleValue::Bool(flag)) => *flag,
        other => panic!("requires_grad argument is {other:?}"),
    }
}

#[test]
fn requires_grad_outlives_an_in_place_op_and_is_saved() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/serialization/views.pt");
    let loaded = load_module(&path).unwrap();
    // A buffer: PyTorch saved it with requires_grad False.
    let base = loaded.module.attr("base").unwrap();
    let saved = save_module_to_bytes(&loaded.module, &loaded.unit, "archive").unwrap();
    assert!(!saved_requires_grad(saved, "base"));

    // x.requires_grad_(); x.unsqueeze_(0): the in-place geometry change replaces the handle's
    // tensor, and the flag stays, seen through every handle (the module's attribute too).
    call(
        "aten::requires_grad_",
        vec![base.clone(), IValue::Bool(true)],
    );
    call("aten::unsqueeze_", vec![base.clone(), IValue::Int(0)]);
    call("aten::mul_.Scalar", vec![base.clone(), IValue::Int(2)]);
    let attribute = loaded.module.attr("base").unwrap();
    assert_eq!(attribute.to_tensor().unwrap().sizes(), &[1, 4, 6]);
    assert!(matches!(
        call("prim::requires_grad", vec![attribute.clone()]),
        IValue::Bool(true)
    ));
    assert!(attribute.to_string().ends_with("requires_grad=True)"));

    let saved = save_module_to_bytes(&loaded.module, &loaded.unit, "archive").unwrap();
    assert!(saved_requires_grad(saved.clone(), "base"));
    // Loaded back, the handle requires grad again.
    let reloaded = load_module_from_bytes(saved).unwrap();
    let base = reloaded.module.attr("base").unwrap();
    assert!(base.to_tensor_cell().unwrap().requires_grad());
    // The other buffers were left alone.
    assert!(!reloaded
        .module
        .attr("transposed")
        .unwrap()
        .to_tensor_cell()
        .unwrap()
        .requires_grad());
}
