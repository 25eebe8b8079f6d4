//! A method's result tensor is the only handle on its storage, contiguous and covering all
//! of it: what lets the Python package move a result's elements into numpy without a copy
//! (crates/ferrojit-python/src/owned_results.rs). A parameter returned as it is stays shared.

use std::path::PathBuf;

use ferrojit::IValue;

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

#[test]
fn forward_results_own_their_storage() {
    for file in ["mlp.pt", "mlp.pt2"] {
        let model = ferrojit::load(examples().join(file)).unwrap();
        let arguments = ferrojit::load_arguments(examples().join("mlp_inputs.pt")).unwrap();
        for call in 0..2 {
            let result = model.forward(arguments.clone()).unwrap();
            let tensor = result.into_tensor().unwrap();
            let storage = tensor.storage();
            let label = format!("{file} call {call}");
            assert_eq!(
                storage.handle_count(),
                1,
                "{label}: the result's storage is shared"
            );
            assert!(tensor.is_contiguous(), "{label}");
            assert_eq!(tensor.storage_offset(), 0, "{label}");
            assert_eq!(tensor.numel(), storage.len_elements(), "{label}");
            assert!(!storage.is_borrowed(), "{label}");
            // Moving the buffer out leaves the model able to run again (next iteration).
            assert!(tensor.into_storage().try_into_buffer().is_ok(), "{label}");
        }
    }
}

#[test]
fn a_parameter_read_from_the_module_stays_shared() {
    let model = ferrojit::load(examples().join("mlp.pt")).unwrap();
    let module = model.torchscript_module().expect("a TorchScript model");
    let fc1 = module
        .named_children()
        .into_iter()
        .find(|(name, _)| name == "fc1")
        .expect("fc1")
        .1;
    let weight: IValue = fc1.attr("weight").expect("fc1.weight");
    let tensor = weight.into_tensor().unwrap();
    assert!(
        tensor.storage().handle_count() > 1,
        "the module still holds its weight, so a result must not take it"
    );
}
