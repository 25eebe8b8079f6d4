//! Archives opened from a file are memory-mapped and their tensors borrow the STORED
//! records without a copy: results equal an in-memory load, writes go to a private copy
//! (never to the file), and saving a module over the file it was loaded from works.

use std::path::{Path, PathBuf};

use ferrojit_runtime::ivalue::IValue;
use ferrojit_serialize::export::save_module;
use ferrojit_serialize::import::{load_module, load_module_from_bytes};
use ferrojit_serialize::torch_save;
use ferrojit_tensor::Scalar;

fn e2e_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/e2e")
        .join(name)
}

/// A copy of a fixture in a temporary folder of its own (one per test: truncating a file
/// that another test has mapped would fault that test), so the test may overwrite it.
fn scratch_copy(name: &str, test: &str) -> PathBuf {
    let folder = std::env::temp_dir().join(format!(
        "ferrojit-mapped-load-{}-{test}",
        std::process::id()
    ));
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join(name);
    std::fs::copy(e2e_fixture(name), &path).unwrap();
    path
}

fn mlp_inputs() -> Vec<IValue> {
    let inputs = torch_save::load_file(&e2e_fixture("traced_mlp.inputs.pt")).unwrap();
    inputs.to_tuple().unwrap().items.clone()
}

fn forward_values(module: &ferrojit_serialize::import::LoadedModule) -> Vec<f32> {
    let output = module.module.forward(mlp_inputs()).unwrap();
    output
        .to_tensor()
        .unwrap()
        .contiguous()
        .to_vec::<f32>()
        .unwrap()
}

#[test]
fn parameters_borrow_the_mapped_file_and_compute_as_an_in_memory_load() {
    let path = scratch_copy(
        "traced_mlp.pt",
        "parameters_borrow_the_mapped_file_and_compute_as_an_in_memory_load",
    );
    let mapped = load_module(&path).unwrap();
    let parameters = mapped.module.named_parameters(true);
    assert!(!parameters.is_empty());
    for (name, tensor) in &parameters {
        assert!(tensor.storage().is_borrowed(), "{name} was copied at load");
    }
    let in_memory = load_module_from_bytes(std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(forward_values(&mapped), forward_values(&in_memory));
}

#[test]
fn writes_to_a_mapped_parameter_never_reach_the_file() {
    let path = scratch_copy(
        "traced_mlp.pt",
        "writes_to_a_mapped_parameter_never_reach_the_file",
    );
    let original = std::fs::read(&path).unwrap();
    let mapped = load_module(&path).unwrap();
    let before = forward_values(&mapped);
    let (_, first) = mapped.module.named_parameters(true).remove(0);
    first.fill_(&Scalar::Float(0.0)).unwrap();
    assert!(
        !first.storage().is_borrowed(),
        "the write copies the storage"
    );
    assert_ne!(forward_values(&mapped), before);
    assert_eq!(std::fs::read(&path).unwrap(), original);
    // A second load of the file sees the original weights.
    assert_eq!(forward_values(&load_module(&path).unwrap()), before);
}

#[test]
fn saving_over_the_mapped_file_keeps_the_loaded_module_intact() {
    let path = scratch_copy(
        "traced_mlp.pt",
        "saving_over_the_mapped_file_keeps_the_loaded_module_intact",
    );
    let mapped = load_module(&path).unwrap();
    let before = forward_values(&mapped);
    save_module(&mapped, &path).unwrap();
    // The module loaded first still reads its (still mapped, now unlinked) weights.
    assert_eq!(forward_values(&mapped), before);
    assert_eq!(forward_values(&load_module(&path).unwrap()), before);
}
