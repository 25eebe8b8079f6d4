//! Reading real PyTorch archives, rejecting broken ones, and writing aligned,
//! deterministic archives.

use std::io::Write;

use ferrojit_archive::error::ArchiveError;
use ferrojit_archive::zip_archive::{ArchiveLimits, ArchiveReader, ArchiveWriter};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|error| panic!("cannot read {path}: {error}"))
}

fn le_u16(bytes: &[u8], at: usize) -> usize {
    usize::from(u16::from_le_bytes([bytes[at], bytes[at + 1]]))
}

fn le_u32(bytes: &[u8], at: usize) -> usize {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as usize
}

/// Walks the local headers from the start of the file: (name, data offset, size).
fn local_entries(bytes: &[u8]) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while bytes[at..].starts_with(b"PK\x03\x04") {
        let flags = le_u16(bytes, at + 6);
        assert_eq!(flags & 0x08, 0, "expected sizes in the local header");
        let size = le_u32(bytes, at + 18);
        let name_len = le_u16(bytes, at + 26);
        let extra_len = le_u16(bytes, at + 28);
        let name = String::from_utf8(bytes[at + 30..at + 30 + name_len].to_vec()).unwrap();
        let data = at + 30 + name_len + extra_len;
        out.push((name, data, size));
        at = data + size;
    }
    out
}

#[test]
fn reads_a_real_torch_save_archive() {
    let reader = ArchiveReader::from_bytes(fixture("torch_save_nested.pt")).expect("open");
    assert_eq!(reader.root_name(), "torch_save_nested");
    assert_eq!(
        reader.record_names(),
        [
            "data.pkl",
            ".format_version",
            ".storage_alignment",
            "byteorder",
            "data/0",
            "data/1",
            "version",
            ".data/serialization_id"
        ]
    );
    assert_eq!(reader.read_record("byteorder").unwrap(), b"little");
    assert_eq!(reader.read_record("version").unwrap(), b"3\n");
    assert_eq!(reader.read_record(".format_version").unwrap(), b"1");
    assert_eq!(reader.read_record(".storage_alignment").unwrap(), b"64");
    // data/0 is torch.ones(2) float32; data/1 is torch.arange(6.).
    assert_eq!(
        reader.read_record("data/0").unwrap(),
        [0, 0, 0x80, 0x3f, 0, 0, 0x80, 0x3f]
    );
    let arange: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
    assert_eq!(reader.read_record("data/1").unwrap(), arange);
    assert_eq!(
        reader.read_record("data.pkl").unwrap(),
        fixture("torch_save_nested.pkl")
    );
    assert!(reader.has_record("data.pkl"));
    assert!(!reader.has_record("torch_save_nested/data.pkl"));
    // PyTorch aligns record data to 64 bytes.
    for name in reader.record_names() {
        let (start, end) = reader.stored_data_range(name).unwrap().expect("stored");
        assert_eq!(start % 64, 0, "{name}");
        assert_eq!(end - start, reader.record_size(name).unwrap());
    }
}

#[test]
fn corrupted_stored_and_compressed_data_fails_its_crc() {
    let original = fixture("torch_save_nested.pt");
    // A STORED record (data/1, float32 arange): flip one byte of its data.
    let reader = ArchiveReader::from_bytes(original.clone()).expect("open");
    let (data_start, _) = reader.stored_data_range("data/1").unwrap().expect("stored");
    let mut bytes = original.clone();
    bytes[data_start as usize + 5] ^= 0x40;
    let reader = ArchiveReader::from_bytes(bytes).expect("the directory is intact");
    match reader.read_record("data/1") {
        Err(ArchiveError::Corrupt(message)) => {
            assert!(
                message.contains("data/1") && message.contains("CRC"),
                "{message}"
            )
        }
        other => panic!("expected a CRC error, got {other:?}"),
    }
    // The other records still read.
    assert_eq!(reader.read_record("byteorder").unwrap(), b"little");

    // A DEFLATED record goes through the zip crate's reader, which checks the CRC too.
    let original = fixture("jit_small.pt");
    let reader = ArchiveReader::from_bytes(original.clone()).expect("open");
    let code = reader.read_record("code/__torch__.py").unwrap();
    let mut corrupted_any = false;
    for offset in (0..original.len()).step_by(7) {
        let mut bytes = original.clone();
        bytes[offset] ^= 0x01;
        let Ok(reader) = ArchiveReader::from_bytes(bytes) else {
            continue;
        };
        if let Ok(read) = reader.read_record("code/__torch__.py") {
            // A flip outside this record's bytes leaves it as it was.
            assert_eq!(
                read, code,
                "byte {offset} changed the record without an error"
            );
        } else {
            corrupted_any = true;
        }
    }
    assert!(corrupted_any, "no flip reached the compressed record");
}

#[test]
fn reads_a_real_torchscript_archive_with_compressed_code() {
    let bytes = fixture("jit_small.pt");
    let reader = ArchiveReader::open(format!(
        "{}/tests/data/jit_small.pt",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("open");
    assert_eq!(reader.root_name(), "jit_small");
    assert!(reader.has_record("constants.pkl"));
    assert!(reader.has_record("code/__torch__/torch/nn/modules/linear.py"));
    // Deflated record: not stored, decompresses to its declared size.
    assert_eq!(reader.stored_data_range("code/__torch__.py").unwrap(), None);
    let code = String::from_utf8(reader.read_record("code/__torch__.py").unwrap()).unwrap();
    assert!(code.contains("class Small(Module):"), "{code}");
    assert_eq!(reader.bytes_produced(), code.len() as u64);
    // constants.pkl of a module without tensor constants: PROTO 2, EMPTY_TUPLE, STOP.
    assert_eq!(reader.read_record("constants.pkl").unwrap(), b"\x80\x02).");
    assert!(bytes.len() > 1000);
}

#[test]
fn missing_record_and_missing_file() {
    let reader = ArchiveReader::from_bytes(fixture("torch_save_nested.pt")).unwrap();
    let error = reader.read_record("data/7").unwrap_err();
    assert!(matches!(error, ArchiveError::MissingRecord(ref name) if name == "data/7"));
    assert_eq!(error.to_string(), "archive has no record 'data/7'");
    let error = ArchiveReader::open("/nonexistent/model.pt").unwrap_err();
    assert!(matches!(error, ArchiveError::Io { .. }), "{error}");
}

#[test]
fn not_a_zip() {
    for input in [&b""[..], b"hello world", b"\x80\x02}q\x00.", b"PK"] {
        let error = ArchiveReader::from_bytes(input.to_vec()).unwrap_err();
        assert!(
            matches!(error, ArchiveError::NotZip(_)),
            "{input:?}: {error}"
        );
        assert!(error.to_string().starts_with("not a zip archive: "));
    }
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = fixture("torch_save_nested.pt");
    for cut in 0..bytes.len() {
        let result = ArchiveReader::from_bytes(bytes[..cut].to_vec());
        assert!(result.is_err(), "cut at {cut} opened");
    }
}

#[test]
fn corrupted_bytes_never_panic() {
    // Flip each byte of the central directory and end records: open/read may fail but must not panic.
    let bytes = fixture("torch_save_state_dict.pt");
    let start = bytes.len().saturating_sub(700);
    for at in start..bytes.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut broken = bytes.clone();
            broken[at] ^= flip;
            if let Ok(reader) = ArchiveReader::from_bytes(broken) {
                for name in reader.record_names().to_vec() {
                    let _ = reader.read_record(&name);
                }
            }
        }
    }
}

fn torch_save_record_set(writer: &mut ArchiveWriter<std::io::Cursor<Vec<u8>>>) {
    // A torch.save-shaped archive holding torch.ones(2).
    let pickle = b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\nq\x00((X\x07\x00\x00\x00storageq\x01ctorch\nFloatStorage\nq\x02X\x01\x00\x00\x000q\x03X\x03\x00\x00\x00cpuq\x04K\x02tq\x05QK\x00K\x02\x85q\x06K\x01\x85q\x07\x89ccollections\nOrderedDict\nq\x08)Rq\x09tq\x0aRq\x0b.";
    writer.write_record("data.pkl", pickle).unwrap();
    writer.write_record(".format_version", b"1").unwrap();
    writer.write_record(".storage_alignment", b"64").unwrap();
    writer.write_record("byteorder", b"little").unwrap();
    writer
        .write_record("data/0", &[0, 0, 0x80, 0x3f, 0, 0, 0x80, 0x3f])
        .unwrap();
    writer.write_record("version", b"3\n").unwrap();
    writer
        .write_record(
            ".data/serialization_id",
            b"0000000000000000000000000000000000000000",
        )
        .unwrap();
}

#[test]
fn writer_aligns_record_data_to_64_bytes() {
    let mut writer = ArchiveWriter::in_memory("archive").unwrap();
    torch_save_record_set(&mut writer);
    for size in [0usize, 1, 63, 64, 65, 1000] {
        writer
            .write_record(&format!("extra/{size}"), &vec![0xab; size])
            .unwrap();
    }
    let bytes = writer.finish_into_bytes().unwrap();
    let entries = local_entries(&bytes);
    assert_eq!(entries.len(), 13);
    for (name, data_offset, _) in &entries {
        assert!(name.starts_with("archive/"));
        assert_eq!(data_offset % 64, 0, "{name} data at {data_offset}");
    }
    let reader = ArchiveReader::from_bytes(bytes.clone()).unwrap();
    assert_eq!(reader.root_name(), "archive");
    for (name, data_offset, size) in &entries {
        let relative = name.strip_prefix("archive/").unwrap();
        assert_eq!(
            reader.stored_data_range(relative).unwrap(),
            Some((*data_offset as u64, (data_offset + size) as u64))
        );
        assert_eq!(
            reader.read_record(relative).unwrap(),
            &bytes[*data_offset..data_offset + size]
        );
    }
    assert_eq!(reader.read_record("extra/65").unwrap(), vec![0xab; 65]);
}

#[test]
fn writer_is_deterministic() {
    let build = || {
        let mut writer = ArchiveWriter::in_memory("archive").unwrap();
        torch_save_record_set(&mut writer);
        writer.finish_into_bytes().unwrap()
    };
    let first = build();
    assert_eq!(first, build());
    // Writing to a file gives the same bytes.
    let path = std::env::temp_dir().join(format!("ferrojit_zip_test_{}.pt", std::process::id()));
    let mut writer = ArchiveWriter::create(&path, "archive").unwrap();
    let mut memory = ArchiveWriter::in_memory("archive").unwrap();
    torch_save_record_set(&mut memory);
    let expected = memory.finish_into_bytes().unwrap();
    for name in ArchiveReader::from_bytes(expected.clone())
        .unwrap()
        .record_names()
    {
        let data = ArchiveReader::from_bytes(expected.clone())
            .unwrap()
            .read_record(name)
            .unwrap();
        writer.write_record(name, &data).unwrap();
    }
    writer.finish().unwrap().flush().unwrap();
    let on_disk = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(on_disk, expected);
    assert_eq!(first, expected);
}

#[test]
fn writer_rejects_bad_and_duplicate_names() {
    assert!(matches!(
        ArchiveWriter::in_memory(""),
        Err(ArchiveError::InvalidName(_))
    ));
    assert!(matches!(
        ArchiveWriter::in_memory("a/b"),
        Err(ArchiveError::InvalidName(_))
    ));
    let mut writer = ArchiveWriter::in_memory("archive").unwrap();
    for bad in ["", "../x", "/abs", "a//b", "a\\b", "nul\0", "dir/"] {
        assert!(
            matches!(
                writer.write_record(bad, b"x"),
                Err(ArchiveError::InvalidName(_))
            ),
            "{bad:?}"
        );
    }
    writer.write_record("data.pkl", b"x").unwrap();
    assert!(matches!(
        writer.write_record("data.pkl", b"y"),
        Err(ArchiveError::DuplicateEntry(_))
    ));
}

fn two_record_archive(root_a: &str, root_b: &str) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file(format!("{root_a}/a"), options).unwrap();
    zip.write_all(b"first").unwrap();
    zip.start_file(format!("{root_b}/b"), options).unwrap();
    zip.write_all(b"other").unwrap();
    zip.finish().unwrap().into_inner()
}

#[test]
fn layout_must_have_one_root_folder() {
    let error = ArchiveReader::from_bytes(two_record_archive("one", "two")).unwrap_err();
    assert!(matches!(error, ArchiveError::Layout(_)), "{error}");
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    zip.start_file("data.pkl", zip::write::SimpleFileOptions::default())
        .unwrap();
    zip.write_all(b"x").unwrap();
    let bytes = zip.finish().unwrap().into_inner();
    assert!(matches!(
        ArchiveReader::from_bytes(bytes),
        Err(ArchiveError::Layout(_))
    ));
}

#[test]
fn duplicate_entry_names_are_rejected() {
    // Rename "root/b" to "root/a" in both the local and the central headers.
    let mut bytes = two_record_archive("root", "root");
    let mut renamed = 0;
    for at in 0..bytes.len() - 6 {
        if &bytes[at..at + 6] == b"root/b" {
            bytes[at + 5] = b'a';
            renamed += 1;
        }
    }
    assert_eq!(renamed, 2);
    let error = ArchiveReader::from_bytes(bytes).unwrap_err();
    assert!(matches!(error, ArchiveError::DuplicateEntry(_)), "{error}");
}

#[test]
fn overlapping_entries_are_rejected() {
    // Point the second central header's local-header offset at the first entry.
    let mut bytes = two_record_archive("root", "root");
    let central: Vec<usize> = (0..bytes.len() - 4)
        .filter(|&at| &bytes[at..at + 4] == b"PK\x01\x02")
        .collect();
    assert_eq!(central.len(), 2);
    bytes[central[1] + 42..central[1] + 46].copy_from_slice(&0u32.to_le_bytes());
    let error = ArchiveReader::from_bytes(bytes).unwrap_err();
    assert!(matches!(error, ArchiveError::Corrupt(_)), "{error}");
}

#[test]
fn size_caps_count_bytes_actually_produced() {
    // 8 MiB of zeros deflate to a few KiB: a small zip bomb.
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("archive/bomb", options).unwrap();
    zip.write_all(&vec![0u8; 8 << 20]).unwrap();
    zip.start_file("archive/small", options).unwrap();
    zip.write_all(&[1u8; 1000]).unwrap();
    let bytes = zip.finish().unwrap().into_inner();
    assert!(bytes.len() < 100_000);

    let limits = ArchiveLimits {
        max_record_bytes: 1 << 20,
        ..ArchiveLimits::default()
    };
    let reader = ArchiveReader::from_bytes_with_limits(bytes.clone(), limits).unwrap();
    assert!(matches!(
        reader.read_record("bomb"),
        Err(ArchiveError::LimitExceeded(_))
    ));
    assert_eq!(reader.read_record("small").unwrap(), vec![1u8; 1000]);

    // The total cap counts every read.
    let limits = ArchiveLimits {
        max_total_bytes: 2500,
        ..ArchiveLimits::default()
    };
    let reader = ArchiveReader::from_bytes_with_limits(bytes.clone(), limits).unwrap();
    reader.read_record("small").unwrap();
    reader.read_record("small").unwrap();
    assert!(matches!(
        reader.read_record("small"),
        Err(ArchiveError::LimitExceeded(_))
    ));
    assert_eq!(reader.bytes_produced(), 2000);

    let limits = ArchiveLimits {
        max_entries: 1,
        ..ArchiveLimits::default()
    };
    let error = ArchiveReader::from_bytes_with_limits(bytes, limits).unwrap_err();
    assert!(matches!(error, ArchiveError::LimitExceeded(_)), "{error}");
}
