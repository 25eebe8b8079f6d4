//! safetensors files: fixtures written by real PyTorch (tests/fixtures/safetensors/generate.py)
//! compared with PyTorch's own `torch.save` copies of the same tensors; ferrojit's writer
//! (byte-identical re-saves, non-contiguous tensors, round trips); and malformed files,
//! which must give errors, never panics.
//!
//! With `FERROJIT_WRITE_COMPAT=1`, `write_compat_files` also leaves ferrojit-written files in
//! `target/safetensors_roundtrip/` for tests/fixtures/safetensors/check_in_pytorch.py.

use std::collections::BTreeMap;
use std::path::PathBuf;

use ferrojit_serialize::load_error::LoadError;
use ferrojit_serialize::safetensors_io::{
    load_safetensors, load_safetensors_bytes, read_safetensors, read_safetensors_bytes,
    save_safetensors, save_safetensors_to_bytes, SafetensorsError,
};
use ferrojit_serialize::torch_save;
use ferrojit_tensor::{DType, Scalar, Tensor};

/// The fixtures that have a `NAME.expected.pt` copy.
const FIXTURES: [&str; 6] = [
    "all_dtypes",
    "arange",
    "scalars_empty",
    "metadata",
    "no_tensors",
    "state_dict",
];

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/safetensors")
}

fn fixture_path(name: &str) -> PathBuf {
    fixture_dir().join(format!("{name}.safetensors"))
}

fn fixture_bytes(name: &str) -> Vec<u8> {
    let path = fixture_path(name);
    std::fs::read(&path).unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()))
}

/// PyTorch's `torch.save` copy of a fixture's tensors, in insertion order.
fn expected_tensors(name: &str) -> Vec<(String, Tensor)> {
    let path = fixture_dir().join(format!("{name}.expected.pt"));
    let value = torch_save::load_file(&path)
        .unwrap_or_else(|error| panic!("cannot load {}: {error}", path.display()));
    let dict = value.to_dict().expect("expected file holds a dict");
    dict.entries()
        .into_iter()
        .map(|(key, value)| {
            let key = key.to_str().expect("str key").to_string();
            let tensor = ferrojit_tensor::Tensor::clone(&value.to_tensor().expect("tensor value"));
            (key, tensor)
        })
        .collect()
}

/// The metadata map written by generate.py (`key=value` lines), if the fixture has one.
fn expected_metadata(name: &str) -> Option<BTreeMap<String, String>> {
    let path = fixture_dir().join(format!("{name}.metadata.txt"));
    let text = std::fs::read_to_string(path).ok()?;
    Some(
        text.lines()
            .map(|line| {
                let (key, value) = line.split_once('=').expect("key=value line");
                (key.to_string(), value.to_string())
            })
            .collect(),
    )
}

/// Elements in logical order as little-endian bytes: compares NaN payloads and signed zeros.
fn logical_bytes(tensor: &Tensor) -> Vec<u8> {
    tensor.clone_tensor().storage().to_le_bytes()
}

fn assert_same_tensor(context: &str, actual: &Tensor, expected: &Tensor) {
    assert_eq!(actual.dtype(), expected.dtype(), "{context}: dtype");
    assert_eq!(actual.sizes(), expected.sizes(), "{context}: sizes");
    assert_eq!(
        logical_bytes(actual),
        logical_bytes(expected),
        "{context}: values"
    );
}

fn assert_same_tensors(context: &str, actual: &[(String, Tensor)], expected: &[(String, Tensor)]) {
    let mut actual_names: Vec<&str> = actual.iter().map(|(n, _)| n.as_str()).collect();
    let mut expected_names: Vec<&str> = expected.iter().map(|(n, _)| n.as_str()).collect();
    actual_names.sort_unstable();
    expected_names.sort_unstable();
    assert_eq!(actual_names, expected_names, "{context}: tensor names");
    for (name, want) in expected {
        let (_, got) = actual
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{context}: no tensor {name}"));
        assert_same_tensor(&format!("{context}/{name}"), got, want);
    }
}

#[test]
fn pytorch_fixtures_match_torch_save_copies() {
    for name in FIXTURES {
        let contents =
            read_safetensors(&fixture_path(name)).unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_same_tensors(name, &contents.tensors, &expected_tensors(name));
        assert_eq!(
            contents.metadata,
            expected_metadata(name),
            "{name}: metadata"
        );
        // The convenience entry points agree.
        let tensors = load_safetensors(&fixture_path(name)).expect("load_safetensors");
        let from_bytes = load_safetensors_bytes(&fixture_bytes(name)).expect("from bytes");
        assert_same_tensors(name, &tensors, &contents.tensors);
        assert_same_tensors(name, &from_bytes, &contents.tensors);
    }
}

#[test]
fn tensors_come_back_in_file_order() {
    // PyTorch's writer (the crate's) orders by dtype, last-declared of the crate's `Dtype`
    // variants first, then by name; reading keeps that data-offset order.
    let names: Vec<String> = load_safetensors(&fixture_path("all_dtypes"))
        .expect("load")
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert_eq!(
        names,
        ["i64", "f64", "f32", "i32", "bf16", "f16", "i16", "i8", "u8", "bool"]
    );
}

#[test]
fn arange_fixture_has_known_values() {
    // Independent of every ferrojit reader: literal values PyTorch was asked to write.
    let tensors = load_safetensors(&fixture_path("arange")).expect("load");
    assert_eq!(tensors.len(), 10);
    for (name, tensor) in &tensors {
        let dtype = DType::ALL
            .into_iter()
            .find(|d| d.name() == name)
            .unwrap_or_else(|| panic!("unexpected tensor {name}"));
        assert_eq!(tensor.dtype(), dtype, "{name}");
        assert_eq!(tensor.sizes(), [2, 3], "{name}");
        assert!(tensor.is_contiguous(), "{name}");
        let want: Vec<f64> = if dtype == DType::Bool {
            vec![0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
        } else {
            vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        };
        assert_eq!(tensor.to_f64_vec(), want, "{name}");
    }
}

#[test]
fn scalars_and_empty_tensors_keep_their_shapes() {
    let tensors = load_safetensors(&fixture_path("scalars_empty")).expect("load");
    let get = |name: &str| {
        tensors
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let scalar = get("scalar_f32");
    assert_eq!(scalar.dim(), 0);
    assert_eq!(scalar.item().expect("item"), Scalar::Float(3.5));
    assert_eq!(get("scalar_i64").item().expect("item"), Scalar::Int(-7));
    assert_eq!(get("scalar_bool").item().expect("item"), Scalar::Bool(true));
    assert_eq!(get("scalar_u8").item().expect("item"), Scalar::Int(200));
    let empty = get("empty_i32_2x0x3");
    assert_eq!(empty.sizes(), [2, 0, 3]);
    assert_eq!(empty.numel(), 0);
    assert_eq!(empty.dtype(), DType::Int32);
    assert_eq!(get("empty_f64_0x5").sizes(), [0, 5]);
}

#[test]
fn resaving_pytorch_files_gives_identical_bytes() {
    // With at most one metadata entry the header is deterministic (the crate keeps metadata
    // in a hash map), so ferrojit's re-save equals PyTorch's file byte for byte.
    for name in FIXTURES {
        let contents = read_safetensors(&fixture_path(name)).expect("read");
        let resaved =
            save_safetensors_to_bytes(&contents.tensors, contents.metadata.as_ref()).expect("save");
        if contents.metadata.as_ref().is_none_or(|m| m.len() <= 1) {
            assert!(resaved == fixture_bytes(name), "{name}: bytes differ");
        }
        let again = read_safetensors_bytes(&resaved).expect("re-read");
        assert_same_tensors(name, &again.tensors, &contents.tensors);
        assert_eq!(again.metadata, contents.metadata, "{name}: metadata");
    }
}

/// Tensors built by ferrojit, several of them non-contiguous views; check_in_pytorch.py
/// rebuilds the same values with torch (keep the two in step).
fn built_tensors() -> Vec<(String, Tensor)> {
    let arange = |n: f64, dtype| Tensor::arange(0.0, n, 1.0, dtype).expect("arange");
    let transposed = arange(12.0, DType::Float32)
        .reshape(&[3, 4])
        .and_then(|t| t.t())
        .expect("t");
    let strided = arange(10.0, DType::Int64)
        .slice(0, Some(2), Some(9), 3)
        .expect("slice");
    let offset_contiguous = arange(10.0, DType::Float64)
        .narrow(0, 3, 4)
        .expect("narrow");
    let expanded = Tensor::from_vec(vec![1i16, 2, 3], &[1, 3])
        .and_then(|t| t.expand(&[2, 3]))
        .expect("expand");
    let permuted = arange(24.0, DType::BFloat16)
        .reshape(&[2, 3, 4])
        .and_then(|t| t.permute(&[2, 0, 1]))
        .expect("permute");
    let bools = Tensor::from_vec(vec![false, true, false, true, true, false], &[2, 3])
        .and_then(|t| t.t())
        .expect("bool t");
    let halves = Tensor::from_vec(vec![0.5f32, -0.0, f32::INFINITY, f32::NAN, 65504.0], &[5])
        .expect("f32")
        .to_dtype(DType::Float16);
    let selected = arange(6.0, DType::Int8)
        .reshape(&[2, 3])
        .and_then(|t| t.select(1, 2))
        .expect("select");
    vec![
        ("transposed_f32".to_string(), transposed),
        ("strided_i64".to_string(), strided),
        ("offset_contiguous_f64".to_string(), offset_contiguous),
        ("expanded_i16".to_string(), expanded),
        ("permuted_bf16".to_string(), permuted),
        ("transposed_bool".to_string(), bools),
        ("values_f16".to_string(), halves),
        ("selected_i8".to_string(), selected),
        (
            "scalar_u8".to_string(),
            Tensor::scalar_tensor(Scalar::Int(200), DType::UInt8),
        ),
        (
            "empty_i32".to_string(),
            Tensor::zeros(&[0, 3], DType::Int32).expect("zeros"),
        ),
        (
            "uint8_values".to_string(),
            Tensor::from_vec(vec![0u8, 255, 128], &[3]).expect("u8"),
        ),
    ]
}

fn built_metadata() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("writer".to_string(), "ferrojit".to_string()),
        (
            "note".to_string(),
            "non-contiguous views, written contiguous".to_string(),
        ),
    ])
}

#[test]
fn ferrojit_written_tensors_round_trip_contiguous() {
    let tensors = built_tensors();
    assert!(
        !tensors[0].1.is_contiguous(),
        "the test needs non-contiguous input"
    );
    let metadata = built_metadata();
    let bytes = save_safetensors_to_bytes(&tensors, Some(&metadata)).expect("save");
    // Data section holds exactly the logical elements (no whole storages).
    let data_bytes: usize = tensors
        .iter()
        .map(|(_, t)| t.numel() * t.dtype().item_size())
        .sum();
    let header_len = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) as usize;
    assert_eq!(bytes.len(), 8 + header_len + data_bytes);
    let back = read_safetensors_bytes(&bytes).expect("read back");
    assert_same_tensors("built", &back.tensors, &tensors);
    assert_eq!(back.metadata, Some(metadata));
    for (name, tensor) in &back.tensors {
        assert!(tensor.is_contiguous(), "{name}");
    }

    // Through the file system too.
    let dir = std::env::temp_dir().join(format!("ferrojit_safetensors_{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("built.safetensors");
    save_safetensors(&path, &tensors, None).expect("save file");
    let from_file = read_safetensors(&path).expect("read file");
    assert_same_tensors("built file", &from_file.tensors, &tensors);
    assert_eq!(from_file.metadata, None);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn write_compat_files() {
    if std::env::var("FERROJIT_WRITE_COMPAT").as_deref() != Ok("1") {
        return;
    }
    let out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/safetensors_roundtrip");
    std::fs::create_dir_all(&out).expect("create output dir");
    for name in FIXTURES {
        let contents = read_safetensors(&fixture_path(name)).expect("read");
        save_safetensors(
            &out.join(format!("resaved_{name}.safetensors")),
            &contents.tensors,
            contents.metadata.as_ref(),
        )
        .expect("save");
    }
    save_safetensors(
        &out.join("built.safetensors"),
        &built_tensors(),
        Some(&built_metadata()),
    )
    .expect("save built");
}

#[test]
fn unsupported_dtypes_are_refused_by_name() {
    for (file, tensor, dtype) in [
        ("unsupported_f8", "f8", "F8_E4M3"),
        ("unsupported_u16", "u", "U16"),
    ] {
        match load_safetensors(&fixture_path(file)) {
            Err(SafetensorsError::UnsupportedDtype { name, dtype: got }) => {
                assert_eq!(name, tensor, "{file}");
                assert_eq!(got, dtype, "{file}");
            }
            other => panic!("{file}: expected UnsupportedDtype, got {other:?}"),
        }
    }
    // C64 is complex64, which ferrojit now holds (two f32 parts per element).
    let complex = load_safetensors(&fixture_path("unsupported_c64")).expect("c64 loads");
    assert_eq!(complex.len(), 1);
    assert_eq!(complex[0].0, "c");
    assert_eq!(complex[0].1.dtype(), DType::ComplexFloat);
    let message = load_safetensors(&fixture_path("unsupported_f8"))
        .expect_err("f8")
        .to_string();
    assert!(
        message.contains("'f8'") && message.contains("F8_E4M3"),
        "{message}"
    );
}

#[test]
fn writer_refuses_duplicate_and_reserved_names() {
    let t = Tensor::zeros(&[2], DType::Float32).expect("zeros");
    let duplicate = vec![("a".to_string(), t.clone()), ("a".to_string(), t.clone())];
    assert!(matches!(
        save_safetensors_to_bytes(&duplicate, None),
        Err(SafetensorsError::DuplicateName(name)) if name == "a"
    ));
    let reserved = vec![("__metadata__".to_string(), t)];
    assert!(matches!(
        save_safetensors_to_bytes(&reserved, None),
        Err(SafetensorsError::ReservedName)
    ));
}

#[test]
fn missing_file_is_an_io_error() {
    let error = load_safetensors(&fixture_dir().join("no_such_file.safetensors"))
        .expect_err("missing file");
    assert!(matches!(error, SafetensorsError::Io { .. }), "{error:?}");
    assert!(matches!(LoadError::from(error), LoadError::Io { .. }));
}

/// A safetensors file from a raw header and data section.
fn file_with_header(header: impl AsRef<[u8]>, data: &[u8]) -> Vec<u8> {
    let header = header.as_ref();
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header);
    bytes.extend_from_slice(data);
    bytes
}

fn expect_error(context: &str, bytes: &[u8]) -> SafetensorsError {
    match read_safetensors_bytes(bytes) {
        Ok(contents) => panic!("{context}: expected an error, got {contents:?}"),
        Err(error) => {
            assert!(!error.to_string().is_empty(), "{context}");
            error
        }
    }
}

#[test]
fn malformed_headers_give_errors() {
    let eight = [0u8; 8];
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty input", vec![]),
        ("short length prefix", vec![1, 0, 0]),
        ("header length past the end", {
            let mut b = file_with_header("{}", &[]);
            b[0] = 200;
            b
        }),
        ("header length u64::MAX", {
            let mut b = file_with_header("{}", &[]);
            b[..8].copy_from_slice(&u64::MAX.to_le_bytes());
            b
        }),
        ("header length 2^63", {
            let mut b = file_with_header("{}", &[]);
            b[..8].copy_from_slice(&(1u64 << 63).to_le_bytes());
            b
        }),
        ("not UTF-8", file_with_header(b"{\"a\xff\":1}", &[])),
        ("not JSON", file_with_header("{\"a\":", &[])),
        (
            "unknown dtype",
            file_with_header(
                r#"{"a":{"dtype":"X99","shape":[2],"data_offsets":[0,8]}}"#,
                &eight,
            ),
        ),
        (
            "offsets past the data",
            file_with_header(
                r#"{"a":{"dtype":"F32","shape":[250],"data_offsets":[0,1000]}}"#,
                &eight,
            ),
        ),
        (
            "offsets far past the data",
            file_with_header(
                r#"{"a":{"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,18446744073709551615]}}"#,
                &eight,
            ),
        ),
        (
            "offset larger than u64",
            file_with_header(
                r#"{"a":{"dtype":"U8","shape":[8],"data_offsets":[0,99999999999999999999999]}}"#,
                &eight,
            ),
        ),
        (
            "negative offset",
            file_with_header(
                r#"{"a":{"dtype":"U8","shape":[8],"data_offsets":[-1,7]}}"#,
                &eight,
            ),
        ),
        (
            "fractional offset",
            file_with_header(
                r#"{"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8.0]}}"#,
                &eight,
            ),
        ),
        (
            "overlapping tensors",
            file_with_header(
                r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}"#,
                &[0u8; 12],
            ),
        ),
        (
            "gap between tensors",
            file_with_header(
                r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}"#,
                &[0u8; 12],
            ),
        ),
        (
            "data left over after the last tensor",
            file_with_header(
                r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#,
                &eight,
            ),
        ),
        (
            "end before start",
            file_with_header(
                r#"{"a":{"dtype":"U8","shape":[0],"data_offsets":[8,0]}}"#,
                &eight,
            ),
        ),
        (
            "wrong size for dtype",
            file_with_header(
                r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#,
                &eight,
            ),
        ),
        (
            "wrong size for shape",
            file_with_header(
                r#"{"a":{"dtype":"F64","shape":[2,1],"data_offsets":[0,8]}}"#,
                &eight,
            ),
        ),
        (
            "shape product overflows",
            file_with_header(
                r#"{"a":{"dtype":"F64","shape":[1099511627776,1099511627776,1099511627776],"data_offsets":[0,8]}}"#,
                &eight,
            ),
        ),
        (
            "bytes overflow usize",
            file_with_header(
                r#"{"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]}}"#,
                &eight,
            ),
        ),
        (
            "metadata that is not strings",
            file_with_header(r#"{"__metadata__":{"a":1}}"#, &[]),
        ),
        (
            "tensor entry missing fields",
            file_with_header(r#"{"a":{"dtype":"F32"}}"#, &[]),
        ),
        (
            "escaped key with a huge offset",
            file_with_header(
                r#"{"a":{"dtype":"U8","shape":[8],"data\u005foffsets":[0,18446744073709551615]}}"#,
                &eight,
            ),
        ),
    ];
    for (context, bytes) in &cases {
        expect_error(context, bytes);
    }
}

#[test]
fn offsets_summing_near_u64_max_do_not_overflow() {
    // Sixteen chained tensors whose offsets tile 0..2^64-8: each entry is self-consistent,
    // only the total says the file is far too short. (The crate's own end-of-data sum
    // overflows on this, and panics in debug builds, without ferrojit's pre-check.) The key
    // is also tried spelled with a JSON escape, which the JSON parser decodes.
    for key in ["data_offsets", r"data\u005foffsets"] {
        let step: u64 = 1 << 60;
        let mut header = String::from("{");
        for i in 0..16u64 {
            let start = i * step;
            let end = if i == 15 { u64::MAX - 7 } else { start + step };
            if i > 0 {
                header.push(',');
            }
            header.push_str(&format!(
                r#""t{i:02}":{{"dtype":"U8","shape":[{}],"{key}":[{start},{end}]}}"#,
                end - start
            ));
        }
        header.push('}');
        let error = expect_error(key, &file_with_header(&header, &[0u8; 8]));
        assert!(matches!(error, SafetensorsError::Header(_)), "{error:?}");
    }
}

#[test]
fn every_truncation_of_a_real_file_is_an_error() {
    for name in ["all_dtypes", "state_dict"] {
        let bytes = fixture_bytes(name);
        for len in 0..bytes.len() {
            expect_error(&format!("{name} cut to {len} bytes"), &bytes[..len]);
        }
    }
}

#[test]
fn corrupted_bytes_never_panic() {
    // Flip each byte of a real file in turn: the reader may accept (a changed element value)
    // or refuse, but must not panic, and anything it accepts must be a consistent tensor.
    let bytes = fixture_bytes("scalars_empty");
    for position in 0..bytes.len() {
        for mask in [0xffu8, 0x01, 0x80] {
            let mut corrupted = bytes.clone();
            corrupted[position] ^= mask;
            if let Ok(contents) = read_safetensors_bytes(&corrupted) {
                for (_, tensor) in &contents.tensors {
                    let _ = logical_bytes(tensor);
                }
            }
        }
    }
}

#[test]
fn errors_convert_to_load_error() {
    let error = read_safetensors_bytes(&[1, 2, 3]).expect_err("short");
    let converted = LoadError::from(error);
    assert!(
        matches!(converted, LoadError::Format { .. }),
        "{converted:?}"
    );
    assert!(converted.to_string().contains("safetensors"), "{converted}");
}

#[test]
fn unusual_but_valid_headers_are_accepted() {
    // An empty tensor may have a dimension larger than the file; metadata may mention
    // "data_offsets" and hold bracketed numbers; keys may come in any order.
    let header = r#"{"__metadata__":{"data_offsets":"[0, 99999999999999999999]","x\"y":"[7]"},"b":{"data_offsets":[0,4],"shape":[],"dtype":"F32"},"empty":{"dtype":"I64","shape":[0,1099511627776],"data_offsets":[4,4]}}"#;
    let bytes = file_with_header(header, &1.5f32.to_le_bytes());
    let contents = read_safetensors_bytes(&bytes).expect("valid file");
    assert_eq!(contents.tensors.len(), 2);
    let (name, scalar) = &contents.tensors[0];
    assert_eq!(name, "b");
    assert_eq!(scalar.dim(), 0);
    assert_eq!(scalar.item().expect("item"), Scalar::Float(1.5));
    let (name, empty) = &contents.tensors[1];
    assert_eq!(name, "empty");
    assert_eq!(empty.sizes(), [0, 1 << 40]);
    let metadata = contents.metadata.expect("metadata");
    assert_eq!(metadata["data_offsets"], "[0, 99999999999999999999]");
    assert_eq!(metadata["x\"y"], "[7]");
}
