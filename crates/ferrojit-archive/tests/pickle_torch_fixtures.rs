//! Unpickles pickles written by real PyTorch 2.15 (see tests/data/generate.py) and
//! checks the trees against the structure shown by `pickletools.dis`.

use ferrojit_archive::pickle_value::PickleValue;
use ferrojit_archive::pickler::pickle;
use ferrojit_archive::unpickler::{unpickle, UnpicklerOptions};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|error| panic!("cannot read {path}: {error}"))
}

fn dict_get(dict: &PickleValue, key: &str) -> PickleValue {
    let PickleValue::Dict(items) = dict else {
        panic!("expected dict, got {dict:?}");
    };
    let items = items.borrow();
    let found = items
        .iter()
        .find(|(k, _)| k.as_str() == Some(key))
        .unwrap_or_else(|| panic!("no key {key}"));
    found.1.clone()
}

fn dict_keys(dict: &PickleValue) -> Vec<String> {
    let PickleValue::Dict(items) = dict else {
        panic!("expected dict, got {dict:?}");
    };
    let items = items.borrow();
    items
        .iter()
        .map(|(k, _)| k.as_str().expect("str key").to_string())
        .collect()
}

fn ints(value: &PickleValue) -> Vec<i64> {
    value
        .as_tuple()
        .expect("tuple")
        .iter()
        .map(|item| item.as_int().expect("int"))
        .collect()
}

/// Checks `_rebuild_tensor_v2((storage pid), offset, size, stride, requires_grad, OrderedDict())`
/// and returns the storage key.
fn check_tensor(
    value: &PickleValue,
    offset: i64,
    size: &[i64],
    stride: &[i64],
    numel: i64,
    requires_grad: bool,
) -> String {
    let PickleValue::Reduce(data) = value else {
        panic!("expected reduce, got {value:?}");
    };
    let data = data.borrow();
    assert!(data
        .callable
        .is_global("torch._utils", "_rebuild_tensor_v2"));
    assert!(data.state.is_none());
    let args = data.args.as_tuple().expect("args tuple");
    assert_eq!(args.len(), 6);
    let PickleValue::PersistentId(pid) = &args[0] else {
        panic!("expected persistent id, got {:?}", args[0]);
    };
    let pid = pid.as_tuple().expect("pid tuple");
    assert_eq!(pid.len(), 5);
    assert_eq!(pid[0].as_str(), Some("storage"));
    assert!(pid[1].is_global("torch", "FloatStorage"));
    assert_eq!(pid[3].as_str(), Some("cpu"));
    assert_eq!(pid[4].as_int(), Some(numel));
    assert_eq!(args[1].as_int(), Some(offset));
    assert_eq!(ints(&args[2]), size);
    assert_eq!(ints(&args[3]), stride);
    assert!(matches!(args[4], PickleValue::Bool(flag) if flag == requires_grad));
    // OrderedDict() became an empty plain dict.
    let PickleValue::Dict(hooks) = &args[5] else {
        panic!("expected dict for backward hooks, got {:?}", args[5]);
    };
    assert!(hooks.borrow().is_empty());
    pid[2].as_str().expect("storage key").to_string()
}

#[test]
fn torch_save_nested_containers_and_tensors() {
    let bytes = fixture("torch_save_nested.pkl");
    let root = unpickle(&bytes, &UnpicklerOptions::torch_save()).expect("unpickle");
    assert_eq!(dict_keys(&root), ["a", "b", "shared", "ints", "nested"]);

    assert_eq!(
        check_tensor(&dict_get(&root, "a"), 0, &[2], &[1], 2, false),
        "0"
    );

    let PickleValue::List(b) = &dict_get(&root, "b") else {
        panic!("b is not a list");
    };
    let b = b.borrow();
    assert_eq!(b.len(), 5);
    assert_eq!(b[0].as_int(), Some(1));
    assert!(matches!(b[1], PickleValue::Float(x) if x == 2.5));
    assert_eq!(b[2].as_str(), Some("x"));
    assert!(matches!(b[3], PickleValue::None));
    assert!(matches!(b[4], PickleValue::Bool(true)));

    // base = arange(6); (base, base[2:4]): both refer to storage "1".
    let shared = dict_get(&root, "shared");
    let shared = shared.as_tuple().expect("tuple");
    assert_eq!(check_tensor(&shared[0], 0, &[6], &[1], 6, false), "1");
    assert_eq!(check_tensor(&shared[1], 2, &[2], &[1], 6, false), "1");
    // Both rebuild calls use the memoized `_rebuild_tensor_v2` global and the same
    // memoized OrderedDict global; the memoized "1" key string is the same allocation.
    let key_ptr = |tensor: &PickleValue| {
        let PickleValue::Reduce(data) = tensor else {
            unreachable!()
        };
        let args = data.borrow().args.clone();
        let PickleValue::PersistentId(pid) = &args.as_tuple().unwrap()[0] else {
            unreachable!()
        };
        let PickleValue::Str(key) = &pid.as_tuple().unwrap()[2] else {
            unreachable!()
        };
        std::rc::Rc::as_ptr(key) as *const u8 as usize
    };
    assert_eq!(key_ptr(&shared[0]), key_ptr(&shared[1]));

    assert_eq!(
        ints(&dict_get(&root, "ints")),
        [-5, 300, 70000, -(1i64 << 31), 1i64 << 40, -(1i64 << 40)]
    );

    let nested = dict_get(&root, "nested");
    let PickleValue::List(x) = &dict_get(&nested, "x") else {
        panic!("x is not a list");
    };
    let x = x.borrow();
    assert_eq!(x.len(), 2);
    let PickleValue::List(first) = &x[0] else {
        panic!()
    };
    assert_eq!(first.borrow().len(), 2);
    let PickleValue::List(second) = &x[1] else {
        panic!()
    };
    assert_eq!(second.borrow()[0].as_int(), Some(3));
    assert_eq!(dict_get(&nested, "y").as_tuple().map(<[_]>::len), Some(0));
}

#[test]
fn torch_save_state_dict_with_metadata_build() {
    let bytes = fixture("torch_save_state_dict.pkl");
    let root = unpickle(&bytes, &UnpicklerOptions::torch_save()).expect("unpickle");
    // OrderedDict + SETITEMS + BUILD(_metadata) -> a plain dict of the two parameters.
    assert_eq!(dict_keys(&root), ["weight", "bias"]);
    assert_eq!(
        check_tensor(&dict_get(&root, "weight"), 0, &[1, 2], &[2, 1], 2, false),
        "0"
    );
    assert_eq!(
        check_tensor(&dict_get(&root, "bias"), 0, &[1], &[1], 1, false),
        "1"
    );
}

#[test]
fn torch_save_pickle_is_rejected_by_torchscript_allowlist_only_where_expected() {
    // The TorchScript preset has no `_codecs.encode` or dtype globals, but plain
    // tensors only need `_rebuild_tensor_v2`, storages and OrderedDict.
    let bytes = fixture("torch_save_nested.pkl");
    assert!(unpickle(&bytes, &UnpicklerOptions::torchscript_data()).is_ok());
    // The deny-all default rejects the first global at byte 14.
    let error = unpickle(&bytes, &UnpicklerOptions::default()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "disallowed global 'torch._utils._rebuild_tensor_v2' at byte 14"
    );
}

#[test]
fn torchscript_module_data_pkl() {
    let bytes = fixture("jit_small_data.pkl");
    // A torch.save allowlist must refuse TorchScript classes.
    let error = unpickle(&bytes, &UnpicklerOptions::torch_save()).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("disallowed global '__torch__.Small'"),
        "{error}"
    );

    let root = unpickle(&bytes, &UnpicklerOptions::torchscript_data()).expect("unpickle");
    let PickleValue::Object(module) = &root else {
        panic!("expected object, got {root:?}");
    };
    let module = module.borrow();
    assert_eq!((&*module.module, &*module.name), ("__torch__", "Small"));
    assert_eq!(module.args.as_tuple().map(<[_]>::len), Some(0));
    let state = module.state.clone().expect("BUILD state");
    assert_eq!(
        dict_keys(&state),
        ["training", "_is_full_backward_hook", "d", "l", "lin"]
    );
    assert!(matches!(
        dict_get(&state, "training"),
        PickleValue::Bool(true)
    ));

    // d: restore_type_tag({"k": 1}, "Dict[str, int]")
    let PickleValue::Reduce(d) = &dict_get(&state, "d") else {
        panic!()
    };
    let d = d.borrow();
    assert!(d
        .callable
        .is_global("torch.jit._pickle", "restore_type_tag"));
    let d_args = d.args.as_tuple().unwrap();
    assert_eq!(dict_keys(&d_args[0]), ["k"]);
    assert_eq!(dict_get(&d_args[0], "k").as_int(), Some(1));
    assert_eq!(d_args[1].as_str(), Some("Dict[str, int]"));

    // l: build_doublelist([1.0, 2.0])
    let PickleValue::Reduce(l) = &dict_get(&state, "l") else {
        panic!()
    };
    let l = l.borrow();
    assert!(l
        .callable
        .is_global("torch.jit._pickle", "build_doublelist"));
    let PickleValue::List(values) = &l.args.as_tuple().unwrap()[0] else {
        panic!()
    };
    let values: Vec<f64> = values
        .borrow()
        .iter()
        .map(|v| match v {
            PickleValue::Float(x) => *x,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(values, [1.0, 2.0]);

    // lin: __torch__.torch.nn.modules.linear.Linear with weight [3, 2] / bias [3].
    let lin = dict_get(&state, "lin");
    let PickleValue::Object(lin) = &lin else {
        panic!()
    };
    let lin = lin.borrow();
    assert_eq!(&*lin.module, "__torch__.torch.nn.modules.linear");
    assert_eq!(&*lin.name, "Linear");
    let lin_state = lin.state.clone().unwrap();
    assert_eq!(
        dict_keys(&lin_state),
        ["weight", "bias", "training", "_is_full_backward_hook"]
    );
    assert_eq!(
        check_tensor(
            &dict_get(&lin_state, "weight"),
            0,
            &[3, 2],
            &[2, 1],
            6,
            true
        ),
        "0"
    );
    assert_eq!(
        check_tensor(&dict_get(&lin_state, "bias"), 0, &[3], &[1], 3, true),
        "1"
    );
    // The TorchScript pickler memoizes the storage global; both pids share it by value.
    assert!(matches!(
        dict_get(&lin_state, "training"),
        PickleValue::Bool(true)
    ));
}

#[test]
fn fixtures_round_trip_through_the_pickler() {
    for (name, options) in [
        ("torch_save_nested.pkl", UnpicklerOptions::torch_save()),
        ("torch_save_state_dict.pkl", UnpicklerOptions::torch_save()),
        ("jit_small_data.pkl", UnpicklerOptions::torchscript_data()),
    ] {
        let original = unpickle(&fixture(name), &options).expect("unpickle");
        let written = pickle(&original).expect("pickle");
        let reread = unpickle(&written, &options).expect("re-unpickle");
        assert!(
            original.structurally_equal(&reread),
            "{name} changed in round trip"
        );
        // Writing is deterministic.
        assert_eq!(pickle(&reread).expect("pickle again"), written, "{name}");
    }
}

#[test]
fn every_truncation_of_real_pickles_is_an_error() {
    for (name, options) in [
        ("torch_save_nested.pkl", UnpicklerOptions::torch_save()),
        ("jit_small_data.pkl", UnpicklerOptions::torchscript_data()),
    ] {
        let bytes = fixture(name);
        for cut in 0..bytes.len() {
            let result = unpickle(&bytes[..cut], &options);
            assert!(result.is_err(), "{name} cut at {cut} was accepted");
        }
    }
}
