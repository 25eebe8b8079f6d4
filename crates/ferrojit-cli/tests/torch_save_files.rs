//! The torch.save reader on files PyTorch wrote, and the writer read back (the PyTorch side
//! of the writer's compatibility is checked by tests/fixtures/check_ferrojit_outputs.py).

mod common;

use common::{assert_matches, fixture, read_json};
use ferrojit_runtime::ivalue::IValue;
use ferrojit_serialize::torch_save;

fn check_reader(name: &str) -> IValue {
    let value = torch_save::load_file(&fixture(&format!("torch_save/{name}.pt")))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_matches(
        &value,
        &read_json(&fixture(&format!("torch_save/{name}.json"))),
        name,
    );
    value
}

#[test]
fn reads_nested_containers() {
    check_reader("containers");
}

#[test]
fn reads_every_dtype() {
    check_reader("dtypes");
}

#[test]
fn reads_state_dict() {
    check_reader("state_dict");
}

#[test]
fn views_share_one_storage() {
    let value = check_reader("views");
    let IValue::Tuple(tuple) = value else {
        panic!("views.pt holds a tuple")
    };
    let base = tuple.items[0].to_tensor().unwrap();
    for view in &tuple.items[1..3] {
        assert!(
            view.to_tensor().unwrap().shares_storage(&base),
            "views alias the base storage"
        );
    }
}

#[test]
fn expected_outputs_written_by_pytorch_read_back() {
    for name in [
        "scripted_fn",
        "scripted_module",
        "traced_mlp",
        "int_promotion",
        "while_loop",
    ] {
        let value = torch_save::load_file(&fixture(&format!("e2e/{name}.expected.pt"))).unwrap();
        assert_matches(
            &value,
            &read_json(&fixture(&format!("e2e/{name}.expected.json"))),
            name,
        );
    }
}

#[test]
fn written_files_read_back_with_sharing() {
    for name in ["containers", "dtypes", "views", "state_dict"] {
        let original = torch_save::load_file(&fixture(&format!("torch_save/{name}.pt"))).unwrap();
        let bytes = torch_save::save_to_bytes(&original, name).unwrap();
        let again = torch_save::load_bytes(bytes.clone()).unwrap();
        assert_matches(
            &again,
            &read_json(&fixture(&format!("torch_save/{name}.json"))),
            name,
        );
        // Deterministic: the same value gives the same bytes.
        assert_eq!(
            bytes,
            torch_save::save_to_bytes(&original, name).unwrap(),
            "{name}"
        );
    }
    let views = torch_save::load_bytes(
        torch_save::save_to_bytes(
            &torch_save::load_file(&fixture("torch_save/views.pt")).unwrap(),
            "views",
        )
        .unwrap(),
    )
    .unwrap();
    let IValue::Tuple(tuple) = views else {
        panic!()
    };
    let base = tuple.items[0].to_tensor().unwrap();
    assert!(tuple.items[1].to_tensor().unwrap().shares_storage(&base));
}
