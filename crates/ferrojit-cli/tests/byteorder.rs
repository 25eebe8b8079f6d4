//! Big-endian `torch.save` files (`byteorder` = `big`, storages byte-swapped) read back as
//! the same values as their little-endian originals, as `torch.load` reads them
//! (tests/fixtures/byteorder, made by its generate.py). PyTorch's `torch.jit.load` ignores
//! `byteorder`, so big-endian TorchScript archives have no PyTorch behaviour to test
//! (tests/fixtures/byteorder/checks.json).

mod common;

use common::{assert_matches, fixture, read_json};
use ferrojit_serialize::torch_save;

#[test]
fn little_endian_original_reads_as_pytorch_reads_it() {
    let value = torch_save::load_file(&fixture("byteorder/tensors.pt")).unwrap();
    assert_matches(
        &value,
        &read_json(&fixture("byteorder/tensors.json")),
        "tensors.pt",
    );
}

#[test]
fn big_endian_copy_reads_the_same_values_for_every_dtype() {
    let value = torch_save::load_file(&fixture("byteorder/tensors.big.pt")).unwrap();
    assert_matches(
        &value,
        &read_json(&fixture("byteorder/tensors.json")),
        "tensors.big.pt",
    );
}

#[test]
fn big_endian_values_are_bit_identical_to_the_originals() {
    // assert_matches compares floats with a tolerance; byte order must lose nothing.
    let little = torch_save::load_file(&fixture("byteorder/tensors.pt")).unwrap();
    let big = torch_save::load_file(&fixture("byteorder/tensors.big.pt")).unwrap();
    let (little, big) = (little.to_dict().unwrap(), big.to_dict().unwrap());
    for ((name, l), (_, b)) in little.entries().iter().zip(big.entries()) {
        let (l, b) = (l.to_tensor().unwrap(), b.to_tensor().unwrap());
        let bits = |values: Vec<f64>| values.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(l.to_f64_vec()),
            bits(b.to_f64_vec()),
            "{}",
            name.python_repr()
        );
    }
}
