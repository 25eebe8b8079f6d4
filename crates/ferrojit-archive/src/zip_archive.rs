//! Reading and writing PyTorch's zip container (`torch.save` / `torch.jit.save` files).
//!
//! Every PyTorch archive has exactly one top-level folder with an arbitrary name
//! (the file stem when saving to a path, e.g. `model` for `model.pt`; `archive`
//! when `torch.save` writes to a buffer); records are addressed relative to it.
//! PyTorch writes records STORED (except `torch.jit.save`'s code files) with the
//! data 64-byte aligned (padding in an `FB` extra field) and all-zero DOS
//! timestamps. [`ArchiveWriter`] pads with the zip crate's alignment extra field
//! instead and stamps 1980-01-01 00:00; `torch.load` (also with `mmap=True`) and
//! `torch.jit.load` accept its output.
//!
//! Records written by PyTorch 2.15 (checked with the real library):
//!
//! `torch.save(obj, "model.pt")`, root `model/` (`archive/` for a buffer):
//! - `data.pkl`: the pickled object; tensors reference storages by persistent id
//!   `("storage", torch.FloatStorage, "0", "cpu", numel)`
//! - `.format_version`: `1`
//! - `.storage_alignment`: `64`
//! - `byteorder`: `little`
//! - `data/0`, `data/1`, ...: raw storage bytes
//! - `version`: `3\n`
//! - `.data/serialization_id`: 40 decimal digits
//!
//! `torch.jit.save(module, "m.pt")`, root `m/`:
//! - `data/0`, ...: raw storage bytes (written first)
//! - `data.pkl`: the module object tree (`__torch__.*` classes)
//! - `code/__torch__.py`, `code/__torch__/....py` (DEFLATE-compressed), and
//!   `*.py.debug_pkl` source ranges (compressed)
//! - `constants.pkl`: tuple of tensor constants
//! - `version`: `3\n`
//! - `byteorder`: `little`
//! - `.data/serialization_id`
//!
//! The reader never uses entry names as filesystem paths; they are only map keys.
//! It checks the entry count, duplicate and overlapping entries, and caps the bytes
//! actually produced by decompression (per record and in total).

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashMap;
use std::io::{Cursor, Read, Seek, Write};
use std::path::Path;
use std::sync::Arc;

use miniz_oxide::inflate::TINFLStatus;
use zip::result::ZipError;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipArchive, ZipWriter};

use crate::error::ArchiveError;
use ferrojit_tensor::SharedBytes;

/// Caps applied while reading an archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchiveLimits {
    /// Maximum number of entries in the central directory.
    pub max_entries: usize,
    /// Maximum decompressed size of one record.
    pub max_record_bytes: u64,
    /// Maximum decompressed bytes produced over the reader's lifetime (all reads).
    pub max_total_bytes: u64,
    /// Maximum bytes produced by *decompressing* DEFLATE records over the reader's
    /// lifetime. STORED records cannot be larger than the file, but a compressed one can
    /// expand a thousandfold; PyTorch only compresses the (small) `code/` files, so this
    /// cap keeps a zip bomb's memory use to a small constant.
    pub max_inflated_bytes: u64,
    /// Maximum bytes one DEFLATE-compressed record *outside* `code/` may expand to.
    /// PyTorch compresses only the `code/` folder; pickles and storages are STORED. A
    /// compressed pickle is read whole and can expand again in the pickle VM (a few MB of
    /// one-byte opcodes make a million containers), so this is kept small.
    pub max_inflated_record_bytes_outside_code: u64,
    /// Cap on the estimated memory of the values one pickle record builds
    /// ([`crate::unpickler::UnpicklerOptions::max_value_bytes`]). `None`: derived from the
    /// file, see [`ArchiveReader::pickle_value_budget`].
    pub max_pickle_value_bytes: Option<u64>,
}

impl Default for ArchiveLimits {
    fn default() -> Self {
        ArchiveLimits {
            max_entries: 1_000_000,
            max_record_bytes: 16 << 30,
            max_total_bytes: 16 << 30,
            max_inflated_bytes: DEFAULT_MAX_INFLATED_BYTES,
            max_inflated_record_bytes_outside_code: DEFAULT_MAX_INFLATED_RECORD_BYTES_OUTSIDE_CODE,
            max_pickle_value_bytes: None,
        }
    }
}

/// Fixed part of the default pickle value budget, see [`ArchiveReader::pickle_value_budget`].
pub const PICKLE_VALUE_BUDGET_BASE: u64 = 20 << 20;

/// Default for [`ArchiveLimits::max_inflated_bytes`].
pub const DEFAULT_MAX_INFLATED_BYTES: u64 = 16 << 20;
/// Default for [`ArchiveLimits::max_inflated_record_bytes_outside_code`].
pub const DEFAULT_MAX_INFLATED_RECORD_BYTES_OUTSIDE_CODE: u64 = 1 << 20;

/// Size of the fixed part of a central directory header (the smallest possible entry).
const CENTRAL_HEADER_LEN: u64 = 46;
/// Size of the end of central directory record without its comment.
const END_RECORD_LEN: usize = 22;
/// Size of the zip64 end of central directory locator.
const ZIP64_LOCATOR_LEN: usize = 20;
/// Size of the fixed part of the zip64 end of central directory record.
const ZIP64_END_RECORD_LEN: u64 = 56;

/// Data alignment PyTorch uses for records.
pub const RECORD_ALIGNMENT: u16 = 64;

/// The archive bytes (a memory map of the file, or a buffer), shared between the zip reader
/// and the tensor storages that borrow STORED records from them without a copy.
#[derive(Clone)]
struct ArchiveBytes(SharedBytes);

impl ArchiveBytes {
    fn slice(&self) -> &[u8] {
        AsRef::<[u8]>::as_ref(&*self.0)
    }
}

impl AsRef<[u8]> for ArchiveBytes {
    fn as_ref(&self) -> &[u8] {
        self.slice()
    }
}

/// Maps the file at `path` read-only, or reads it when it cannot be mapped (an empty file,
/// a pipe, a file system without mmap).
fn map_or_read(path: &Path) -> Result<SharedBytes, ArchiveError> {
    let io_error = |source| ArchiveError::Io {
        path: path.display().to_string(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io_error)?;
    let is_regular_nonempty = file
        .metadata()
        .map(|metadata| metadata.is_file() && metadata.len() > 0)
        .unwrap_or(false);
    if is_regular_nonempty {
        // SAFETY: the mapping is read-only and private, and Rust code only ever sees it as
        // immutable bytes (tensor storages copy them before their first write). What this
        // cannot rule out is another process truncating or rewriting the file while it is
        // mapped, which would change the bytes or fault on access; every memory-mapped loader
        // (safetensors, `torch.load(mmap=True)`) shares that caveat. ferrojit itself never
        // writes over a file it has mapped: `ArchiveWriter::create` unlinks an existing file
        // first, so the mapped inode lives on untouched.
        if let Ok(map) = unsafe { memmap2::Mmap::map(&file) } {
            return Ok(Arc::new(map));
        }
    }
    let mut bytes = Vec::new();
    let mut file = file;
    file.read_to_end(&mut bytes).map_err(io_error)?;
    Ok(Arc::new(bytes))
}

#[derive(Clone, Copy)]
struct RecordInfo {
    /// Declared uncompressed size.
    size: u64,
    /// Byte range of the (possibly compressed) data in the archive, checked against the
    /// file's length and the central directory when the archive was opened.
    data_range: (u64, u64),
    /// STORED (true) or DEFLATED (false); no other method is accepted.
    stored: bool,
    /// CRC-32 of the uncompressed data, from the central directory.
    crc: u32,
}

impl RecordInfo {
    /// The data's byte range when the record is STORED.
    fn stored_range(&self) -> Option<(u64, u64)> {
        self.stored.then_some(self.data_range)
    }
}

/// A PyTorch zip archive held in memory.
pub struct ArchiveReader {
    /// The whole file, for zero-copy access to STORED records.
    bytes: ArchiveBytes,
    root: String,
    /// Record names relative to the root, in archive order.
    names: Vec<String>,
    records: HashMap<String, RecordInfo>,
    limits: ArchiveLimits,
    produced: Cell<u64>,
    /// Bytes produced by decompressing DEFLATE records so far.
    inflated: Cell<u64>,
}

impl std::fmt::Debug for ArchiveReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArchiveReader")
            .field("root", &self.root)
            .field("records", &self.names)
            .finish_non_exhaustive()
    }
}

fn zip_error_text(error: &ZipError) -> String {
    match error {
        ZipError::Io(io) => format!("i/o error: {io}"),
        ZipError::InvalidArchive(message) => message.to_string(),
        ZipError::UnsupportedArchive(message) => message.to_string(),
        ZipError::FileNotFound => "entry not found".to_string(),
        ZipError::InvalidPassword => "encrypted entry".to_string(),
        other => other.to_string(),
    }
}

/// Reads a little-endian u16/u32 at `offset` of `bytes`, if in bounds.
fn le_u16(bytes: &[u8], offset: usize) -> Option<u16> {
    let raw = bytes.get(offset..offset.checked_add(2)?)?;
    Some(u16::from_le_bytes([raw[0], raw[1]]))
}

/// Reads a little-endian u32 at `offset` of `bytes`, if in bounds.
fn le_u32(bytes: &[u8], offset: usize) -> Option<u32> {
    let raw = bytes.get(offset..offset.checked_add(4)?)?;
    Some(u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]))
}

/// Reads a little-endian u64 at `offset` of `bytes`, if in bounds.
fn le_u64(bytes: &[u8], offset: usize) -> Option<u64> {
    let raw = bytes.get(offset..offset.checked_add(8)?)?;
    let mut buffer = [0u8; 8];
    buffer.copy_from_slice(raw);
    Some(u64::from_le_bytes(buffer))
}

/// Where the central directory is, as declared by the end records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CentralDirectory {
    offset: u64,
    size: u64,
    entries: u64,
}

fn corrupt(message: impl Into<String>) -> ArchiveError {
    ArchiveError::Corrupt(message.into())
}

/// Validates the end of central directory record (and its zip64 form) before the zip
/// crate sees the bytes: the record must end the file exactly (with its comment), the
/// central directory must lie inside the file before it, and the declared entry count
/// must fit in the directory's size. This bounds everything the zip crate allocates
/// from declared counts, and rejects truncated files early with a clear message.
fn check_central_directory(
    bytes: &[u8],
    limits: &ArchiveLimits,
) -> Result<CentralDirectory, ArchiveError> {
    let length = bytes.len();
    if length < END_RECORD_LEN {
        return Err(corrupt(format!(
            "{length} bytes is too short to hold an end of central directory record (truncated?)"
        )));
    }
    // The record is followed only by its comment (at most 65535 bytes).
    let lowest = length.saturating_sub(END_RECORD_LEN + usize::from(u16::MAX));
    let mut position = length - END_RECORD_LEN;
    let end = loop {
        if bytes.get(position..position + 4) == Some(b"PK\x05\x06".as_slice()) {
            let comment = le_u16(bytes, position + 20).map(usize::from);
            if comment.is_some_and(|comment| position + END_RECORD_LEN + comment == length) {
                break position;
            }
        }
        if position == lowest {
            return Err(corrupt(
                "no end of central directory record at the end of the file (truncated?)",
            ));
        }
        position -= 1;
    };
    let field16 = |offset: usize| le_u16(bytes, end + offset).unwrap_or(0);
    let field32 = |offset: usize| le_u32(bytes, end + offset).unwrap_or(0);
    let (disk, cd_disk) = (field16(4), field16(6));
    let (disk_entries, entries) = (field16(8), field16(10));
    let (size, offset) = (field32(12), field32(16));
    let is_zip64 =
        disk_entries == u16::MAX || entries == u16::MAX || size == u32::MAX || offset == u32::MAX;
    let (directory, directory_end_limit) = if is_zip64 {
        let locator = end.checked_sub(ZIP64_LOCATOR_LEN).ok_or_else(|| {
            corrupt("zip64 end of central directory locator is missing (truncated?)")
        })?;
        if bytes.get(locator..locator + 4) != Some(b"PK\x06\x07".as_slice()) {
            return Err(corrupt("zip64 end of central directory locator is missing"));
        }
        let record_disk = le_u32(bytes, locator + 4).unwrap_or(u32::MAX);
        let record_offset = le_u64(bytes, locator + 8).unwrap_or(u64::MAX);
        let disks = le_u32(bytes, locator + 16).unwrap_or(0);
        if record_disk != 0 || disks > 1 {
            return Err(ArchiveError::Unsupported(
                "multi-disk zip archives are not supported".to_string(),
            ));
        }
        let record_end = record_offset.checked_add(ZIP64_END_RECORD_LEN);
        if record_end.is_none_or(|record_end| record_end > locator as u64) {
            return Err(corrupt(format!(
                "zip64 end of central directory record at {record_offset} is outside the file"
            )));
        }
        // In bounds: record_offset + 56 <= locator < length.
        let record = record_offset as usize;
        if bytes.get(record..record + 4) != Some(b"PK\x06\x06".as_slice()) {
            return Err(corrupt(
                "zip64 end of central directory record has a bad signature",
            ));
        }
        let zip64_disk = le_u32(bytes, record + 16).unwrap_or(u32::MAX);
        let zip64_cd_disk = le_u32(bytes, record + 20).unwrap_or(u32::MAX);
        let zip64_disk_entries = le_u64(bytes, record + 24).unwrap_or(u64::MAX);
        let zip64_entries = le_u64(bytes, record + 32).unwrap_or(u64::MAX);
        if zip64_disk != 0 || zip64_cd_disk != 0 {
            return Err(ArchiveError::Unsupported(
                "multi-disk zip archives are not supported".to_string(),
            ));
        }
        if zip64_disk_entries != zip64_entries {
            return Err(corrupt(format!(
                "zip64 end record declares {zip64_disk_entries} entries on this disk but {zip64_entries} in all"
            )));
        }
        (
            CentralDirectory {
                offset: le_u64(bytes, record + 48).unwrap_or(u64::MAX),
                size: le_u64(bytes, record + 40).unwrap_or(u64::MAX),
                entries: zip64_entries,
            },
            record_offset,
        )
    } else {
        if disk != 0 || cd_disk != 0 {
            return Err(ArchiveError::Unsupported(
                "multi-disk zip archives are not supported".to_string(),
            ));
        }
        if disk_entries != entries {
            return Err(corrupt(format!(
                "end record declares {disk_entries} entries on this disk but {entries} in all"
            )));
        }
        (
            CentralDirectory {
                offset: u64::from(offset),
                size: u64::from(size),
                entries: u64::from(entries),
            },
            end as u64,
        )
    };
    directory
        .offset
        .checked_add(directory.size)
        .filter(|&directory_end| directory_end <= directory_end_limit)
        .ok_or_else(|| {
            corrupt(format!(
                "central directory ({} bytes at offset {}) runs past the end records at {directory_end_limit} (truncated?)",
                directory.size, directory.offset
            ))
        })?;
    if directory.entries > directory.size / CENTRAL_HEADER_LEN {
        return Err(corrupt(format!(
            "{} entries cannot fit in a {}-byte central directory",
            directory.entries, directory.size
        )));
    }
    if directory.entries > limits.max_entries as u64 {
        return Err(ArchiveError::LimitExceeded(format!(
            "{} entries, at most {} allowed",
            directory.entries, limits.max_entries
        )));
    }
    if directory.entries == 0 {
        return Err(ArchiveError::Layout("archive has no entries".to_string()));
    }
    Ok(directory)
}

/// An entry name as UTF-8 text, refusing names no PyTorch writer produces and that would
/// be dangerous if anyone ever used them as paths: NUL, backslashes, drive colons, an
/// absolute path, and empty, `.` or `..` components (a trailing `/` marks a directory).
/// Names are only ever map keys here; this keeps hostile ones out of error messages and
/// out of whatever a caller might do with [`ArchiveReader::record_names`].
fn checked_entry_name(raw: &[u8]) -> Result<String, ArchiveError> {
    let shown = || {
        String::from_utf8_lossy(&raw[..raw.len().min(200)])
            .escape_debug()
            .to_string()
    };
    let name = std::str::from_utf8(raw).map_err(|_| {
        ArchiveError::Corrupt(format!("entry name '{}' is not valid UTF-8", shown()))
    })?;
    let body = name.strip_suffix('/').unwrap_or(name);
    let bad = body.is_empty()
        || body.contains(['\0', '\\', ':'])
        || body
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == "..");
    if bad {
        return Err(ArchiveError::Corrupt(format!(
            "entry name '{}' is not a plain relative path",
            shown()
        )));
    }
    Ok(name.to_string())
}

/// Size of the fixed part of a local file header.
const LOCAL_HEADER_LEN: usize = 30;
/// General purpose flag: sizes and CRC follow the data (a data descriptor) and are zero
/// in the local header. PyTorch's writer sets it on every record.
const FLAG_DATA_DESCRIPTOR: u16 = 1 << 3;

/// What the central directory says about one entry, to compare with its local header.
struct CentralEntry {
    header_start: u64,
    name: Vec<u8>,
    method: u16,
    crc: u32,
    compressed_size: u64,
    size: u64,
}

/// Checks that an entry's local header agrees with its central directory header: the same
/// name and compression method and, unless a data descriptor follows the data, the same
/// CRC and sizes. Readers that trust one or the other would otherwise see different
/// files in the same archive.
fn check_local_header(
    bytes: &[u8],
    central: &CentralEntry,
    shown_name: &str,
) -> Result<(), ArchiveError> {
    let disagree = |what: &str| {
        corrupt(format!(
            "the local header of entry '{shown_name}' disagrees with the central directory ({what})"
        ))
    };
    let start = usize::try_from(central.header_start).map_err(|_| disagree("offset"))?;
    if bytes.get(start..start.saturating_add(4)) != Some(b"PK\x03\x04".as_slice()) {
        return Err(disagree("no local header signature"));
    }
    let field16 = |at: usize| le_u16(bytes, start + at);
    let field32 = |at: usize| le_u32(bytes, start + at);
    let (Some(flags), Some(method), Some(name_len)) = (field16(6), field16(8), field16(26)) else {
        return Err(disagree("truncated"));
    };
    let name_start = start + LOCAL_HEADER_LEN;
    let name = bytes.get(name_start..name_start.saturating_add(usize::from(name_len)));
    if name != Some(central.name.as_slice()) {
        return Err(disagree("name"));
    }
    if method != central.method {
        return Err(disagree("compression method"));
    }
    if flags & FLAG_DATA_DESCRIPTOR == 0 {
        let (Some(crc), Some(compressed), Some(size)) = (field32(14), field32(18), field32(22))
        else {
            return Err(disagree("truncated"));
        };
        // 0xFFFFFFFF: the real value is in the zip64 extra field (compared by the zip crate).
        let matches = |local: u32, central: u64| local == u32::MAX || u64::from(local) == central;
        if crc != central.crc {
            return Err(disagree("CRC"));
        }
        if !matches(compressed, central.compressed_size) || !matches(size, central.size) {
            return Err(disagree("sizes"));
        }
    }
    Ok(())
}

/// Counts central directory headers starting at `start`, to detect entries the zip
/// crate silently merged because they share a name.
fn count_central_headers(bytes: &[u8], start: u64) -> usize {
    let Ok(mut position) = usize::try_from(start) else {
        return 0;
    };
    let mut count = 0;
    while bytes.get(position..position.saturating_add(4)) == Some(b"PK\x01\x02".as_slice()) {
        let (Some(name_len), Some(extra_len), Some(comment_len)) = (
            le_u16(bytes, position + 28),
            le_u16(bytes, position + 30),
            le_u16(bytes, position + 32),
        ) else {
            break;
        };
        count += 1;
        position = position
            .saturating_add(46)
            .saturating_add(usize::from(name_len))
            .saturating_add(usize::from(extra_len))
            .saturating_add(usize::from(comment_len));
    }
    count
}

impl ArchiveReader {
    /// Memory-maps the file at `path` (reads it where it cannot be mapped) and opens it
    /// with default limits. Only the zip directory and the records asked for are touched.
    pub fn open(path: impl AsRef<Path>) -> Result<ArchiveReader, ArchiveError> {
        ArchiveReader::open_with_limits(path, ArchiveLimits::default())
    }

    /// Memory-maps the file at `path` (reads it where it cannot be mapped) and opens it
    /// with the given limits.
    pub fn open_with_limits(
        path: impl AsRef<Path>,
        limits: ArchiveLimits,
    ) -> Result<ArchiveReader, ArchiveError> {
        ArchiveReader::from_shared_with_limits(map_or_read(path.as_ref())?, limits)
    }

    /// Reads the whole file at `path` into memory (no memory map) and opens it with the
    /// given limits: for files that another process may rewrite while they are in use,
    /// which would fault a mapped file's tensors.
    pub fn open_in_memory(
        path: impl AsRef<Path>,
        limits: ArchiveLimits,
    ) -> Result<ArchiveReader, ArchiveError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| ArchiveError::Io {
            path: path.display().to_string(),
            source,
        })?;
        ArchiveReader::from_bytes_with_limits(bytes, limits)
    }

    /// Opens an archive held in memory with default limits.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<ArchiveReader, ArchiveError> {
        ArchiveReader::from_bytes_with_limits(bytes, ArchiveLimits::default())
    }

    /// Opens an archive held in memory with the given limits.
    pub fn from_bytes_with_limits(
        bytes: Vec<u8>,
        limits: ArchiveLimits,
    ) -> Result<ArchiveReader, ArchiveError> {
        ArchiveReader::from_shared_with_limits(Arc::new(bytes), limits)
    }

    /// Opens an archive over shared bytes (a memory map or a buffer) with the given limits.
    pub fn from_shared_with_limits(
        shared: SharedBytes,
        limits: ArchiveLimits,
    ) -> Result<ArchiveReader, ArchiveError> {
        ArchiveReader::from_shared_with_layout(shared, limits, false)
    }

    /// Memory-maps the file at `path` and opens it with default limits, also accepting a
    /// flat zip whose records sit at the top level with no folder around them (the layout
    /// older `torch.export.save` wrote with Python's `zipfile`). A flat archive's
    /// [`ArchiveReader::root_name`] is empty and its record names are the entry names.
    pub fn open_allowing_flat(path: impl AsRef<Path>) -> Result<ArchiveReader, ArchiveError> {
        ArchiveReader::open_allowing_flat_with_limits(path, ArchiveLimits::default())
    }

    /// [`ArchiveReader::open_allowing_flat`] with the given limits (a `.pt2` archive read
    /// under a caller's bounds).
    pub fn open_allowing_flat_with_limits(
        path: impl AsRef<Path>,
        limits: ArchiveLimits,
    ) -> Result<ArchiveReader, ArchiveError> {
        ArchiveReader::from_shared_with_layout(map_or_read(path.as_ref())?, limits, true)
    }

    /// [`ArchiveReader::open_allowing_flat`] for an archive held in memory.
    pub fn from_bytes_allowing_flat(bytes: Vec<u8>) -> Result<ArchiveReader, ArchiveError> {
        ArchiveReader::from_bytes_allowing_flat_with_limits(bytes, ArchiveLimits::default())
    }

    /// [`ArchiveReader::from_bytes_allowing_flat`] with the given limits.
    pub fn from_bytes_allowing_flat_with_limits(
        bytes: Vec<u8>,
        limits: ArchiveLimits,
    ) -> Result<ArchiveReader, ArchiveError> {
        ArchiveReader::from_shared_with_layout(Arc::new(bytes), limits, true)
    }

    fn from_shared_with_layout(
        shared: SharedBytes,
        limits: ArchiveLimits,
        allow_flat: bool,
    ) -> Result<ArchiveReader, ArchiveError> {
        let shared = ArchiveBytes(shared);
        let bytes = shared.slice();
        let looks_like_zip = bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06");
        if !looks_like_zip {
            let shown: Vec<u8> = bytes.iter().copied().take(8).collect();
            return Err(ArchiveError::NotZip(format!(
                "{} bytes starting with {:02x?} (expected 'PK\\x03\\x04')",
                bytes.len(),
                shown
            )));
        }
        let file_length = bytes.len() as u64;
        let directory = check_central_directory(bytes, &limits)?;
        let mut archive = ZipArchive::new(Cursor::new(shared.clone()))
            .map_err(|error| ArchiveError::Corrupt(zip_error_text(&error)))?;
        if archive.offset() != 0 {
            return Err(ArchiveError::Corrupt(format!(
                "{} bytes of unknown data before the first entry",
                archive.offset()
            )));
        }
        if archive.central_directory_start() != directory.offset {
            return Err(corrupt(format!(
                "central directory found at {} but declared at {}",
                archive.central_directory_start(),
                directory.offset
            )));
        }
        let entry_count = archive.len();
        if entry_count > limits.max_entries {
            return Err(ArchiveError::LimitExceeded(format!(
                "{entry_count} entries, at most {} allowed",
                limits.max_entries
            )));
        }
        let header_count = count_central_headers(bytes, archive.central_directory_start());
        if header_count as u64 != directory.entries {
            return Err(corrupt(format!(
                "end record declares {} entries but the central directory holds {header_count}",
                directory.entries
            )));
        }
        if header_count != entry_count {
            return Err(ArchiveError::DuplicateEntry(format!(
                "{header_count} central directory entries but only {entry_count} distinct names"
            )));
        }

        let mut full_names = Vec::with_capacity(entry_count);
        let mut spans: Vec<(u64, u64, usize)> = Vec::with_capacity(entry_count);
        let mut infos = Vec::with_capacity(entry_count);
        let mut centrals = Vec::with_capacity(entry_count);
        for index in 0..entry_count {
            let entry = archive
                .by_index_raw(index)
                .map_err(|error| ArchiveError::Corrupt(zip_error_text(&error)))?;
            let name = checked_entry_name(entry.name_raw())?;
            if entry.encrypted() {
                return Err(ArchiveError::Unsupported(format!(
                    "entry '{name}' is encrypted"
                )));
            }
            let method = entry.compression();
            if !matches!(
                method,
                CompressionMethod::Stored | CompressionMethod::Deflated
            ) {
                return Err(ArchiveError::Unsupported(format!(
                    "entry '{name}' uses compression {method:?}"
                )));
            }
            let data_start = entry.data_start();
            let data_end = data_start
                .checked_add(entry.compressed_size())
                .filter(|&end| end <= file_length && end <= directory.offset)
                .ok_or_else(|| {
                    ArchiveError::Corrupt(format!(
                        "entry '{name}' data runs past the central directory or the end of the file"
                    ))
                })?;
            centrals.push(CentralEntry {
                header_start: entry.header_start(),
                name: entry.name_raw().to_vec(),
                method: if method == CompressionMethod::Stored {
                    0
                } else {
                    8
                },
                crc: entry.crc32(),
                compressed_size: entry.compressed_size(),
                size: entry.size(),
            });
            if method == CompressionMethod::Stored && entry.compressed_size() != entry.size() {
                return Err(ArchiveError::Corrupt(format!(
                    "stored entry '{name}' has compressed size {} but size {}",
                    entry.compressed_size(),
                    entry.size()
                )));
            }
            spans.push((entry.header_start(), data_end, index));
            let stored = method == CompressionMethod::Stored;
            infos.push((
                entry.size(),
                (data_start, data_end),
                stored,
                entry.is_dir(),
                entry.crc32(),
            ));
            full_names.push(name);
        }
        spans.sort_unstable();
        for pair in spans.windows(2) {
            if pair[1].0 < pair[0].1 {
                return Err(ArchiveError::Corrupt(format!(
                    "entries '{}' and '{}' overlap",
                    full_names[pair[0].2], full_names[pair[1].2]
                )));
            }
        }
        for (central, name) in centrals.iter().zip(&full_names) {
            check_local_header(bytes, central, name)?;
        }

        let flat = allow_flat && full_names.iter().any(|name| !name.contains('/'));
        let root = if flat {
            String::new()
        } else {
            Self::find_root(&full_names)?
        };
        let prefix = if flat {
            String::new()
        } else {
            format!("{root}/")
        };
        let mut names = Vec::with_capacity(entry_count);
        let mut records = HashMap::with_capacity(entry_count);
        for (full_name, (size, data_range, stored, is_dir, crc)) in full_names.iter().zip(infos) {
            if is_dir {
                continue;
            }
            let relative = full_name.strip_prefix(&prefix).unwrap_or_default();
            if relative.is_empty() {
                continue;
            }
            let info = RecordInfo {
                size,
                data_range,
                stored,
                crc,
            };
            if records.insert(relative.to_string(), info).is_some() {
                return Err(ArchiveError::DuplicateEntry(full_name.clone()));
            }
            names.push(relative.to_string());
        }
        Ok(ArchiveReader {
            bytes: shared,
            root,
            names,
            records,
            limits,
            produced: Cell::new(0),
            inflated: Cell::new(0),
        })
    }

    /// The single top-level folder every entry must live in.
    fn find_root(full_names: &[String]) -> Result<String, ArchiveError> {
        let mut root: Option<&str> = None;
        for name in full_names {
            let Some((first, _)) = name.split_once('/') else {
                return Err(ArchiveError::Layout(format!(
                    "entry '{name}' is not inside a top-level folder"
                )));
            };
            if first.is_empty() {
                return Err(ArchiveError::Layout(format!(
                    "entry '{name}' has an empty top-level folder name"
                )));
            }
            match root {
                None => root = Some(first),
                Some(existing) if existing == first => {}
                Some(existing) => {
                    return Err(ArchiveError::Layout(format!(
                        "entries disagree on the top-level folder: '{existing}' and '{first}'"
                    )))
                }
            }
        }
        root.map(str::to_string)
            .ok_or_else(|| ArchiveError::Layout("archive has no entries".to_string()))
    }

    /// The top-level folder name (e.g. `archive`).
    pub fn root_name(&self) -> &str {
        &self.root
    }

    /// Record names relative to the root, in archive order (directories excluded).
    pub fn record_names(&self) -> &[String] {
        &self.names
    }

    /// Whether a record with this relative name exists.
    pub fn has_record(&self, name: &str) -> bool {
        self.records.contains_key(name)
    }

    /// Declared uncompressed size of a record.
    pub fn record_size(&self, name: &str) -> Option<u64> {
        self.records.get(name).map(|info| info.size)
    }

    /// For a STORED record, the byte range `start..end` of its data within the
    /// archive bytes (for later zero-copy use); `None` for compressed records.
    pub fn stored_data_range(&self, name: &str) -> Result<Option<(u64, u64)>, ArchiveError> {
        let info = self
            .records
            .get(name)
            .ok_or_else(|| ArchiveError::MissingRecord(name.to_string()))?;
        Ok(info.stored_range())
    }

    /// The value memory budget for unpickling record `name` (a `.pkl`), in bytes.
    ///
    /// [`ArchiveLimits::max_pickle_value_bytes`] when set. Otherwise the smaller of the
    /// unpickler's own default for the record's length and `(F - P) / 3 + 20 MiB`, where
    /// `F` is the file's length and `P` the record's. This keeps rejecting a file within
    /// twice its size plus 64 MiB: the file and the read copy of the pickle are held while
    /// the values are built and converted, and a check that fails late, after conversion,
    /// has also spent the pickle values and the converted ones. Measured on a list of a
    /// million ints, those take about 2.4 times the unpickler's estimate (which is what the
    /// budget caps), so the process peaks near `F + P + 2.4 × budget + 10 MiB`. A pickle of
    /// one-byte opcodes costs 24 or more bytes of values per byte, so without this a
    /// hostile pickle of a few MB would take hundreds. Real model files hold mostly tensor
    /// data and a small pickle, far inside the budget; a `torch.save` of more than about
    /// half a million plain Python numbers needs `max_pickle_value_bytes` (the CLI's
    /// `--max-pickle-memory`).
    pub fn pickle_value_budget(&self, name: &str) -> usize {
        if let Some(limit) = self.limits.max_pickle_value_bytes {
            return usize::try_from(limit).unwrap_or(usize::MAX);
        }
        let record_length = self.record_size(name).unwrap_or(0);
        let file_length = self.bytes.slice().len() as u64;
        let from_file = (file_length.saturating_sub(record_length) / 3)
            .saturating_add(PICKLE_VALUE_BUDGET_BASE);
        let from_record = crate::unpickler::default_value_budget(
            usize::try_from(record_length).unwrap_or(usize::MAX),
        );
        usize::try_from(from_file)
            .unwrap_or(usize::MAX)
            .min(from_record)
    }

    /// Decompressed bytes produced by `read_record` so far.
    pub fn bytes_produced(&self) -> u64 {
        self.produced.get()
    }

    /// A record's bytes: borrowed from the file for STORED records (no copy, no CRC
    /// check), decompressed with [`ArchiveReader::read_record`] otherwise. Large tensor
    /// storages are read this way so that loading never holds two copies of them.
    pub fn record_bytes(&self, name: &str) -> Result<Cow<'_, [u8]>, ArchiveError> {
        let info = self
            .records
            .get(name)
            .ok_or_else(|| ArchiveError::MissingRecord(name.to_string()))?;
        if let Some((start, end)) = info.stored_range() {
            // The range was checked against the file length when the archive was opened.
            let range = (usize::try_from(start).ok(), usize::try_from(end).ok());
            if let (Some(start), Some(end)) = range {
                if let Some(slice) = self.bytes.slice().get(start..end) {
                    return Ok(Cow::Borrowed(slice));
                }
            }
            return Err(corrupt(format!("record '{name}' lies outside the file")));
        }
        self.read_record(name).map(Cow::Owned)
    }

    /// For a STORED record, the archive's shared bytes and the record's byte range in them,
    /// so that a tensor storage can borrow the data without a copy; `None` for compressed
    /// records. Errors for a missing record.
    pub fn stored_shared(
        &self,
        name: &str,
    ) -> Result<Option<(SharedBytes, std::ops::Range<usize>)>, ArchiveError> {
        let info = self
            .records
            .get(name)
            .ok_or_else(|| ArchiveError::MissingRecord(name.to_string()))?;
        let Some((start, end)) = info.stored_range() else {
            return Ok(None);
        };
        // The range was checked against the file length when the archive was opened.
        match (usize::try_from(start), usize::try_from(end)) {
            (Ok(start), Ok(end)) if start <= end && end <= self.bytes.slice().len() => {
                Ok(Some((self.bytes.0.clone(), start..end)))
            }
            _ => Err(corrupt(format!("record '{name}' lies outside the file"))),
        }
    }

    /// Reads and (if needed) decompresses a record, enforcing the size caps on the
    /// bytes actually produced and checking the CRC.
    pub fn read_record(&self, name: &str) -> Result<Vec<u8>, ArchiveError> {
        let info = self.record_within_caps(name)?;
        let data = decode_record(name, info, self.record_raw_bytes(name, info)?)?;
        let read = data.len() as u64;
        self.produced.set(self.produced.get().saturating_add(read));
        if !info.stored {
            self.inflated.set(self.inflated.get().saturating_add(read));
        }
        Ok(data)
    }

    /// A handle that reads record `name` later, from any thread, with the same checks as
    /// [`ArchiveReader::read_record`]. Its declared size is counted against the caps now,
    /// so records put off this way cannot add up past them.
    pub fn deferred_record(&self, name: &str) -> Result<DeferredRecord, ArchiveError> {
        let info = self.record_within_caps(name)?;
        let (start, end) = info.data_range;
        let range = usize::try_from(start).ok()..usize::try_from(end).ok();
        let (Some(start), Some(end)) = (range.start, range.end) else {
            return Err(corrupt(format!("record '{name}' lies outside the file")));
        };
        self.produced
            .set(self.produced.get().saturating_add(info.size));
        if !info.stored {
            self.inflated
                .set(self.inflated.get().saturating_add(info.size));
        }
        Ok(DeferredRecord {
            name: name.to_string(),
            bytes: self.bytes.0.clone(),
            range: start..end,
            info: *info,
        })
    }

    /// The record's info, after checking that its declared size fits every cap left.
    fn record_within_caps(&self, name: &str) -> Result<&RecordInfo, ArchiveError> {
        let info = self
            .records
            .get(name)
            .ok_or_else(|| ArchiveError::MissingRecord(name.to_string()))?;
        let total_left = self
            .limits
            .max_total_bytes
            .saturating_sub(self.produced.get());
        let mut cap = self.limits.max_record_bytes.min(total_left);
        let compressed = !info.stored;
        let in_code = name.starts_with("code/");
        if compressed {
            let inflated_left = self
                .limits
                .max_inflated_bytes
                .saturating_sub(self.inflated.get());
            cap = cap.min(inflated_left);
            if !in_code {
                cap = cap.min(self.limits.max_inflated_record_bytes_outside_code);
            }
        }
        if info.size > cap {
            return Err(ArchiveError::LimitExceeded(format!(
                "record '{name}' declares {} bytes, over the cap of {cap}{}",
                info.size,
                match (compressed, in_code) {
                    (false, _) => "",
                    (true, true) => " for compressed records",
                    (true, false) => " for compressed records outside code/",
                }
            )));
        }
        Ok(info)
    }

    /// The record's bytes as they lie in the file (compressed or not).
    fn record_raw_bytes(&self, name: &str, info: &RecordInfo) -> Result<&[u8], ArchiveError> {
        let (start, end) = info.data_range;
        match (usize::try_from(start), usize::try_from(end)) {
            (Ok(start), Ok(end)) => self.bytes.slice().get(start..end),
            _ => None,
        }
        .ok_or_else(|| corrupt(format!("record '{name}' lies outside the file")))
    }
}

/// A record read later (see [`ArchiveReader::deferred_record`]); it holds the archive's
/// bytes alive and nothing else of the reader.
pub struct DeferredRecord {
    name: String,
    bytes: SharedBytes,
    range: std::ops::Range<usize>,
    info: RecordInfo,
}

impl DeferredRecord {
    /// The record's bytes, inflated and CRC-checked.
    pub fn read(&self) -> Result<Vec<u8>, ArchiveError> {
        let raw = (*self.bytes)
            .as_ref()
            .get(self.range.clone())
            .ok_or_else(|| corrupt(format!("record '{}' lies outside the file", self.name)))?;
        decode_record(&self.name, &self.info, raw)
    }
}

/// Inflates the raw DEFLATE stream `raw` into at most `limit` bytes, in one pass into a
/// buffer of the declared size (growing a buffer from a guess, as miniz's `Vec` helpers do,
/// cost a copy and a fresh zeroed decompressor state per record). The buffer is also capped
/// at DEFLATE's largest expansion of `raw` (1032:1), so an untrusted size cannot reserve
/// more than the stream could fill. `Err(HasMoreOutput)`: the stream holds more than `limit`.
fn inflate_at_most(raw: &[u8], limit: usize) -> Result<Vec<u8>, TINFLStatus> {
    use miniz_oxide::inflate::core::{decompress, inflate_flags, DecompressorOxide};
    let most_deflate_can_produce = raw.len().saturating_mul(1032).saturating_add(64);
    let mut output = vec![0u8; limit.min(most_deflate_can_produce)];
    let mut state = Box::<DecompressorOxide>::default();
    let flags = inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
    let (status, _, written) = decompress(&mut state, raw, &mut output, 0, flags);
    match status {
        TINFLStatus::Done => {
            output.truncate(written);
            Ok(output)
        }
        TINFLStatus::HasMoreOutput if output.len() < limit => Err(TINFLStatus::Failed),
        status => Err(status),
    }
}

/// Inflates (when DEFLATED) and CRC-checks a record's `raw` bytes. Records are sliced out of
/// the mapped file and inflated here: the zip crate's per-entry reader cost far more than
/// the work itself for the many small code and debug records of a model.
fn decode_record(name: &str, info: &RecordInfo, raw: &[u8]) -> Result<Vec<u8>, ArchiveError> {
    let data = if info.stored {
        raw.to_vec()
    } else {
        // The declared size is untrusted: inflate at most that much, so a stream that
        // expands further is caught there.
        let limit = usize::try_from(info.size).unwrap_or(usize::MAX);
        match inflate_at_most(raw, limit) {
            Ok(data) => data,
            Err(TINFLStatus::HasMoreOutput) => {
                return Err(ArchiveError::Corrupt(format!(
                    "record '{name}' holds more than {} bytes, the size it declares",
                    info.size
                )));
            }
            Err(status) => {
                return Err(ArchiveError::Corrupt(format!(
                    "record '{name}': invalid DEFLATE data ({status:?})"
                )));
            }
        }
    };
    if (data.len() as u64) < info.size {
        return Err(ArchiveError::Corrupt(format!(
            "record '{name}' holds {} bytes but declares {}",
            data.len(),
            info.size
        )));
    }
    if crc32fast::hash(&data) != info.crc {
        return Err(ArchiveError::Corrupt(format!(
            "record '{name}': the data does not match its CRC-32 (the file is corrupt)"
        )));
    }
    Ok(data)
}

fn check_name(name: &str, allow_slash: bool) -> Result<(), ArchiveError> {
    let bad = name.is_empty()
        || name.contains('\0')
        || name.contains('\\')
        || (!allow_slash && name.contains('/'))
        || name.split('/').any(|part| part.is_empty() || part == "..");
    if bad {
        return Err(ArchiveError::InvalidName(name.to_string()));
    }
    Ok(())
}

/// Writes a PyTorch-style archive: one root folder, STORED records whose data is
/// 64-byte aligned, fixed timestamps (1980-01-01), so equal input gives equal bytes.
pub struct ArchiveWriter<W: Write + Seek> {
    zip: ZipWriter<W>,
    root: String,
}

/// Writes `bytes` to `path` by writing a temporary file beside it and renaming it over
/// `path`. The file that was there is never truncated: it may be memory-mapped by an
/// [`ArchiveReader`] (saving a module over the file it was loaded from), and truncating a
/// mapped file would pull the bytes out from under the tensors that borrow them. A symbolic
/// link at `path` is written through, not replaced.
pub fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.is_symlink());
    let file_name = path.file_name().and_then(|name| name.to_str());
    let (false, Some(file_name)) = (is_link, file_name) else {
        return std::fs::write(path, bytes);
    };
    let temporary =
        path.with_file_name(format!(".{file_name}.ferrojit-{}.tmp", std::process::id()));
    let written =
        std::fs::write(&temporary, bytes).and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

impl ArchiveWriter<std::fs::File> {
    /// Creates the file at `path`, replacing a regular file already there.
    ///
    /// An existing regular file is unlinked rather than truncated: it may be memory-mapped
    /// by an [`ArchiveReader`] (converting a file onto itself), and truncating a mapped file
    /// would pull the bytes out from under the tensors that borrow them.
    pub fn create(path: impl AsRef<Path>, root_name: &str) -> Result<Self, ArchiveError> {
        check_name(root_name, false)?;
        let path = path.as_ref();
        if std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.is_file()) {
            std::fs::remove_file(path).map_err(|source| ArchiveError::Io {
                path: path.display().to_string(),
                source,
            })?;
        }
        let file = std::fs::File::create(path).map_err(|source| ArchiveError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Ok(ArchiveWriter::new(file, root_name))
    }
}

impl ArchiveWriter<Cursor<Vec<u8>>> {
    /// Writes into memory; get the bytes with [`ArchiveWriter::finish_into_bytes`].
    pub fn in_memory(root_name: &str) -> Result<Self, ArchiveError> {
        check_name(root_name, false)?;
        Ok(ArchiveWriter::new(Cursor::new(Vec::new()), root_name))
    }

    /// Finishes the archive and returns its bytes.
    pub fn finish_into_bytes(self) -> Result<Vec<u8>, ArchiveError> {
        Ok(self.finish()?.into_inner())
    }
}

impl<W: Write + Seek> ArchiveWriter<W> {
    fn new(sink: W, root_name: &str) -> Self {
        ArchiveWriter {
            zip: ZipWriter::new(sink),
            root: root_name.to_string(),
        }
    }

    /// Adds `root/name` with the given contents, uncompressed and 64-byte aligned.
    /// `name` is relative (e.g. `data.pkl`, `data/0`); duplicates are rejected.
    pub fn write_record(&mut self, name: &str, data: &[u8]) -> Result<(), ArchiveError> {
        check_name(name, true)?;
        let options = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Stored)
            .last_modified_time(DateTime::default())
            .with_alignment(RECORD_ALIGNMENT)
            .large_file(data.len() as u64 >= u64::from(u32::MAX));
        let full_name = format!("{}/{}", self.root, name);
        self.zip
            .start_file(full_name.as_str(), options)
            .map_err(|error| match error {
                ZipError::InvalidArchive(message) if message.contains("Duplicate") => {
                    ArchiveError::DuplicateEntry(full_name.clone())
                }
                other => ArchiveError::Write(zip_error_text(&other)),
            })?;
        self.zip
            .write_all(data)
            .map_err(|error| ArchiveError::Write(error.to_string()))
    }

    /// Writes the central directory and returns the sink.
    pub fn finish(self) -> Result<W, ArchiveError> {
        self.zip
            .finish()
            .map_err(|error| ArchiveError::Write(zip_error_text(&error)))
    }
}
