//! The pickler's bytes, compared with what CPython's `pickle.dumps(..., protocol=2)`
//! writes for the same values (expected bytes taken from CPython 3.11).

use ferrojit_archive::error::PickleError;
use ferrojit_archive::pickle_value::PickleValue;
use ferrojit_archive::pickler::pickle;
use ferrojit_archive::unpickler::{unpickle, UnpicklerOptions};

fn int(value: i64) -> PickleValue {
    PickleValue::Int(value)
}

#[test]
fn matches_cpython_for_simple_values() {
    // pickle.dumps([1, 2], protocol=2)
    let list = PickleValue::list(vec![int(1), int(2)]);
    assert_eq!(pickle(&list).unwrap(), b"\x80\x02]q\x00(K\x01K\x02e.");

    // pickle.dumps({'a': (1, 2.5, None, True, False)}, protocol=2)
    let dict = PickleValue::dict(vec![(
        PickleValue::str("a"),
        PickleValue::tuple(vec![
            int(1),
            PickleValue::Float(2.5),
            PickleValue::None,
            PickleValue::Bool(true),
            PickleValue::Bool(false),
        ]),
    )]);
    assert_eq!(
        pickle(&dict).unwrap(),
        b"\x80\x02}q\x00X\x01\x00\x00\x00aq\x01(K\x01G@\x04\x00\x00\x00\x00\x00\x00N\x88\x89tq\x02s."
    );

    // pickle.dumps((1, 2, 3, 4), protocol=2)
    let tuple = PickleValue::tuple(vec![int(1), int(2), int(3), int(4)]);
    assert_eq!(
        pickle(&tuple).unwrap(),
        b"\x80\x02(K\x01K\x02K\x03K\x04tq\x00."
    );

    // pickle.dumps([-1, 256, 65536, 2**31, -2**63, 2**63-1], protocol=2)
    let ints = PickleValue::list(vec![
        int(-1),
        int(256),
        int(65536),
        int(1 << 31),
        int(i64::MIN),
        int(i64::MAX),
    ]);
    assert_eq!(
        pickle(&ints).unwrap(),
        b"\x80\x02]q\x00(J\xff\xff\xff\xffM\x00\x01J\x00\x00\x01\x00\x8a\x05\x00\x00\x00\x80\x00\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80\x8a\x08\xff\xff\xff\xff\xff\xff\xff\x7fe."
    );

    // pickle.dumps({}, protocol=2), pickle.dumps([], protocol=2), pickle.dumps((), protocol=2)
    assert_eq!(
        pickle(&PickleValue::dict(vec![])).unwrap(),
        b"\x80\x02}q\x00."
    );
    assert_eq!(
        pickle(&PickleValue::list(vec![])).unwrap(),
        b"\x80\x02]q\x00."
    );
    assert_eq!(pickle(&PickleValue::tuple(vec![])).unwrap(), b"\x80\x02).");
}

#[test]
fn bytes_like_cpython_protocol_2() {
    // pickle.dumps(b'ab', protocol=2)
    assert_eq!(
        pickle(&PickleValue::bytes(b"ab")).unwrap(),
        b"\x80\x02c_codecs\nencode\nq\x00X\x02\x00\x00\x00abq\x01X\x06\x00\x00\x00latin1q\x02\x86q\x03Rq\x04."
    );
    // pickle.dumps([b'\xff', b'c'], protocol=2): the global and "latin1" are memoized once.
    assert_eq!(
        pickle(&PickleValue::list(vec![PickleValue::bytes(b"\xff"), PickleValue::bytes(b"c")])).unwrap(),
        b"\x80\x02]q\x00(c_codecs\nencode\nq\x01X\x02\x00\x00\x00\xc3\xbfq\x02X\x06\x00\x00\x00latin1q\x03\x86q\x04Rq\x05h\x01X\x01\x00\x00\x00cq\x06h\x03\x86q\x07Rq\x08e."
    );
}

#[test]
fn batches_like_cpython() {
    // pickle.dumps(list(range(1001)), protocol=2) ends with "...M\xe7\x03e(M\xe8\x03e."
    let list = PickleValue::list((0..1001).map(int).collect());
    let bytes = pickle(&list).unwrap();
    assert!(bytes.ends_with(b"M\xe6\x03M\xe7\x03e(M\xe8\x03e."));
    // pickle.dumps({i: i for i in range(1001)}, protocol=2) ends with "M\xe7\x03u(M\xe8\x03M\xe8\x03u."
    let dict = PickleValue::dict((0..1001).map(|i| (int(i), int(i))).collect());
    let bytes = pickle(&dict).unwrap();
    assert!(bytes.ends_with(b"M\xe7\x03M\xe7\x03u(M\xe8\x03M\xe8\x03u."));
    // Exactly one item: APPEND (pickle.dumps([7], protocol=2)).
    assert_eq!(
        pickle(&PickleValue::list(vec![int(7)])).unwrap(),
        b"\x80\x02]q\x00K\x07a."
    );
}

#[test]
fn shared_values_are_written_once() {
    // Two tensors sharing one persistent id allocation: the pid is written once.
    let pid = PickleValue::persistent_id(PickleValue::tuple(vec![
        PickleValue::str("storage"),
        PickleValue::global("torch", "FloatStorage"),
        PickleValue::str("0"),
        PickleValue::str("cpu"),
        int(4),
    ]));
    let rebuild = PickleValue::global("torch._utils", "_rebuild_tensor_v2");
    let tensor = |offset: i64| {
        PickleValue::reduce(
            rebuild.clone(),
            vec![
                pid.clone(),
                int(offset),
                PickleValue::tuple(vec![int(2)]),
                PickleValue::tuple(vec![int(1)]),
                PickleValue::Bool(false),
                PickleValue::reduce(PickleValue::global("collections", "OrderedDict"), vec![]),
            ],
        )
    };
    let value = PickleValue::list(vec![tensor(0), tensor(2)]);
    let bytes = pickle(&value).unwrap();
    let count = |needle: &[u8]| bytes.windows(needle.len()).filter(|w| *w == needle).count();
    assert_eq!(count(b"Q"), 1, "BINPERSID once");
    assert_eq!(count(b"FloatStorage"), 1);
    assert_eq!(count(b"_rebuild_tensor_v2"), 1, "GLOBAL memoized by name");
    assert_eq!(count(b"OrderedDict"), 1);

    let reread = unpickle(&bytes, &UnpicklerOptions::torch_save()).unwrap();
    let PickleValue::List(items) = &reread else {
        panic!()
    };
    let items = items.borrow();
    let pid_of = |tensor: &PickleValue| {
        let PickleValue::Reduce(data) = tensor else {
            panic!()
        };
        let args = data.borrow().args.clone();
        args.as_tuple().unwrap()[0].ptr_id()
    };
    assert!(pid_of(&items[0]).is_some());
    assert_eq!(pid_of(&items[0]), pid_of(&items[1]));
    // `collections.OrderedDict()` reads back as an empty plain dict.
    let PickleValue::Reduce(data) = &items[1] else {
        panic!()
    };
    let args = data.borrow().args.clone();
    assert!(matches!(&args.as_tuple().unwrap()[5], PickleValue::Dict(d) if d.borrow().is_empty()));
}

#[test]
fn objects_with_state_and_items_round_trip() {
    let object = PickleValue::object("__torch__", "M", vec![]);
    if let PickleValue::Object(data) = &object {
        let mut data = data.borrow_mut();
        data.state = Some(PickleValue::dict(vec![(
            PickleValue::str("training"),
            PickleValue::Bool(true),
        )]));
        data.dict_items.push((PickleValue::str("k"), int(3)));
    }
    let bytes = pickle(&object).unwrap();
    let reread = unpickle(&bytes, &UnpicklerOptions::torchscript_data()).unwrap();
    assert!(object.structurally_equal(&reread));
    assert!(!object.structurally_equal(&PickleValue::object("__torch__", "M", vec![])));
    // Bytes and long strings round-trip.
    let value = PickleValue::tuple(vec![
        PickleValue::bytes(&[0, 1, 255]),
        PickleValue::bytes(&vec![7u8; 300]),
        PickleValue::str(&"é".repeat(200)),
        PickleValue::Float(-0.0),
        PickleValue::Float(f64::INFINITY),
    ]);
    // Bytes are written via `_codecs.encode`, which the torch.save preset allows.
    let reread = unpickle(&pickle(&value).unwrap(), &UnpicklerOptions::torch_save()).unwrap();
    assert!(value.structurally_equal(&reread));
}

#[test]
fn deep_values_are_written_without_recursion() {
    let mut value = PickleValue::None;
    for _ in 0..200_000 {
        value = PickleValue::list(vec![value]);
    }
    let bytes = pickle(&value).expect("deep value pickles");
    // 200000 levels are far past the default depth limit, and their bookkeeping past
    // the default value memory budget: both lifted.
    let options = UnpicklerOptions {
        max_depth: usize::MAX,
        max_value_bytes: Some(usize::MAX),
        ..UnpicklerOptions::default()
    };
    let reread = unpickle(&bytes, &options).expect("and loads");
    assert!(value.structurally_equal(&reread));
}

#[test]
fn unwritable_values_are_errors() {
    // A list containing itself is written with a memo reference ...
    let list = PickleValue::list(vec![]);
    if let PickleValue::List(items) = &list {
        items.borrow_mut().push(list.clone());
    }
    assert_eq!(pickle(&list).unwrap(), b"\x80\x02]q\x00h\x00a.");
    // ... but a tuple reached again while its items are written is refused.
    let tuple = PickleValue::tuple(vec![list.clone()]);
    if let PickleValue::List(items) = &list {
        items.borrow_mut().clear();
        items.borrow_mut().push(tuple.clone());
    }
    assert!(matches!(pickle(&tuple), Err(PickleError::Unpicklable(_))));
    // So is a reduce whose arguments contain the reduce result.
    let reduce = PickleValue::reduce(PickleValue::global("m", "f"), vec![list.clone()]);
    if let PickleValue::List(items) = &list {
        items.borrow_mut().clear();
        items.borrow_mut().push(reduce.clone());
    }
    assert!(matches!(pickle(&reduce), Err(PickleError::Unpicklable(_))));
    // Break the hand-made cycle so the test does not leak.
    if let PickleValue::List(items) = &list {
        items.borrow_mut().clear();
    }
    assert!(pickle(&PickleValue::global("a\nb", "c")).is_err());
}
