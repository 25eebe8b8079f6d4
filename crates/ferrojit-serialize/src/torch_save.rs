//! `torch.save` / `torch.load` files: a zip with `data.pkl` (protocol 2) and raw storages
//! under `data/N`, read into `IValue`s and written so that PyTorch's `torch.load` (with its
//! default `weights_only=True`) reads them back.
//!
//! Records PyTorch 2.15 writes, in order: `data.pkl`, `.format_version` (`1`),
//! `.storage_alignment` (`64`), `byteorder` (`little`), `data/0`…, `version` (`3\n`),
//! `.data/serialization_id`. The root folder is the file's stem.

use std::path::Path;

use ferrojit_runtime::ivalue::IValue;

use crate::load_error::LoadError;
use crate::values::{unpickle_record, ValueReader, ValueWriter};
use ferrojit_archive::serialization_id::ContentHash;
use ferrojit_archive::unpickler::UnpicklerOptions;
use ferrojit_archive::zip_archive::{ArchiveReader, ArchiveWriter};

/// Reads a `torch.save` file.
pub fn load_file(path: &Path) -> Result<IValue, LoadError> {
    let archive = ArchiveReader::open(path)?;
    load_archive(&archive)
}

/// Reads a `torch.save` file held in memory.
pub fn load_bytes(bytes: Vec<u8>) -> Result<IValue, LoadError> {
    let archive = ArchiveReader::from_bytes(bytes)?;
    load_archive(&archive)
}

/// Reads a `torch.save` file from an opened archive (for callers that choose the
/// [`ferrojit_archive::zip_archive::ArchiveLimits`]).
pub fn load_archive(archive: &ArchiveReader) -> Result<IValue, LoadError> {
    if !archive.has_record("data.pkl") {
        return Err(LoadError::format(
            "data.pkl",
            "the archive has no data.pkl record",
        ));
    }
    let pickled = unpickle_record(archive, "data.pkl", UnpicklerOptions::torch_save())?;
    let mut reader = ValueReader::new(archive, "data.pkl", "data", None)?;
    reader.convert(&pickled)
}

/// Serializes `value` in the `torch.save` format with root folder `root_name`.
pub fn save_to_bytes(value: &IValue, root_name: &str) -> Result<Vec<u8>, LoadError> {
    let mut writer = ValueWriter::new();
    let pickled = writer.convert(value, "data.pkl")?;
    let data = ferrojit_archive::pickler::pickle(&pickled).map_err(|source| LoadError::Pickle {
        record: "data.pkl".to_string(),
        source,
    })?;
    let mut archive = ArchiveWriter::in_memory(root_name)?;
    archive.write_record("data.pkl", &data)?;
    archive.write_record(".format_version", b"1")?;
    archive.write_record(".storage_alignment", b"64")?;
    archive.write_record("byteorder", b"little")?;
    let mut digest = ContentHash::new();
    digest.update(&data);
    for (index, storage) in writer.storages().iter().enumerate() {
        let bytes = storage.to_le_bytes();
        digest.update(&bytes);
        archive.write_record(&format!("data/{index}"), &bytes)?;
    }
    archive.write_record("version", b"3\n")?;
    archive.write_record(
        ".data/serialization_id",
        digest.serialization_id().as_bytes(),
    )?;
    Ok(archive.finish_into_bytes()?)
}

/// Writes `value` to `path` in the `torch.save` format (root folder: the file's stem).
pub fn save_file(value: &IValue, path: &Path) -> Result<(), LoadError> {
    let root_name = path
        .file_stem()
        .and_then(|stem| stem.to_str())
        .filter(|stem| !stem.is_empty())
        .unwrap_or("archive");
    let bytes = save_to_bytes(value, root_name)?;
    ferrojit_archive::zip_archive::replace_file(path, &bytes).map_err(|source| LoadError::Io {
        path: path.display().to_string(),
        source,
    })
}
