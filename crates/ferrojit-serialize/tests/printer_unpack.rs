//! A one-element unpack (`x, = xs`) survives saving: the printer must keep it a statement,
//! because as an inlined expression it would print the container in place of its element.

use ferrojit_runtime::ivalue::IValue;
use ferrojit_serialize::export::{module_from_source, save_module_to_bytes};
use ferrojit_serialize::import::load_module_from_bytes;

const PROGRAM: &str = "
def first(k: List[int]) -> int:
    return k[0]

def forward(xs: List[int], pair: Tuple[Tensor], sizes: Tuple[int]) -> Tuple[List[int], Tensor, int]:
    x, = xs
    t, = pair
    return [x], t + 1, first(sizes)
";

fn printed_code(bytes: &[u8]) -> String {
    let archive = ferrojit_archive::zip_archive::ArchiveReader::from_bytes(bytes.to_vec()).unwrap();
    archive
        .record_names()
        .iter()
        .filter(|name| name.split('/').any(|part| part == "code") && name.ends_with(".py"))
        .map(|name| String::from_utf8(archive.read_record(name).unwrap()).unwrap())
        .collect()
}

fn call(module: &ferrojit_runtime::module::Module) -> (Vec<i64>, Vec<f64>, i64) {
    let tensor = ferrojit_tensor::Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let args = vec![
        IValue::int_list(&[7]),
        IValue::tuple(vec![IValue::from(tensor)]),
        IValue::tuple(vec![IValue::Int(800)]),
    ];
    let result = module.run_method("forward", args).unwrap();
    let IValue::Tuple(items) = &result else {
        panic!("expected a tuple, got {result:?}");
    };
    let list = items.items[0].to_int_vec().unwrap();
    let tensor = items.items[1].to_tensor().unwrap().to_f64_vec();
    let chosen = items.items[2].to_int().unwrap();
    (list, tensor, chosen)
}

#[test]
fn a_one_element_unpack_is_saved_as_a_statement_and_reloads_with_the_same_results() {
    let loaded = module_from_source(PROGRAM, "unpack.py", Some("forward")).unwrap();
    let before = call(&loaded.module);
    assert_eq!(before, (vec![7], vec![2.0, 3.0], 800));

    let bytes = save_module_to_bytes(&loaded.module, &loaded.unit, "unpack").unwrap();
    let code = printed_code(&bytes);
    assert!(code.contains(", = xs"), "list unpack was not kept:\n{code}");
    assert!(
        code.contains(", = pair"),
        "tuple unpack was not kept:\n{code}"
    );
    // The tuple passed where a list is expected is unpacked by the compiler (no name).
    assert!(
        !code.contains("[sizes]"),
        "unpack printed as its container:\n{code}"
    );

    let reloaded = load_module_from_bytes(bytes).unwrap();
    assert_eq!(call(&reloaded.module), before);
}
