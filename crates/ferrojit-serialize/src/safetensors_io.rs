//! safetensors files (Hugging Face's format), read and written through the `safetensors` crate.
//!
//! A `.safetensors` file is an 8-byte little-endian header length, a JSON header naming each tensor's dtype,
//! shape and byte range, an optional `__metadata__` map of strings, and the raw little-endian
//! element bytes, C-contiguous. The `safetensors` crate parses and validates the header
//! (UTF-8, JSON, offsets that tile the data section exactly, sizes that match shape × dtype
//! with overflow-checked arithmetic); this module adds a cheap pre-check of its own that keeps
//! the crate's end-of-data sum from overflowing, maps dtypes both ways, and builds ferrojit
//! tensors.
//!
//! Tensors come back in file order (ascending data offset). Writing follows the crate's
//! order (by dtype, then by name), as `safetensors.torch.save_file` does, so ferrojit and
//! PyTorch write identical bytes for the same tensors and at most one metadata entry (the
//! crate keeps metadata in a hash map, so several entries come out in varying order).
//! Non-contiguous tensors are written contiguous; only their logical elements are written.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use ferrojit_tensor::{contiguous_strides, DType, Storage, Tensor, TensorError};
use safetensors::tensor::Metadata;
use safetensors::{Dtype, SafeTensorError, SafeTensors, View};

use crate::load_error::LoadError;

/// The header key that holds the free-form string metadata; no tensor may use it as a name.
pub const METADATA_KEY: &str = "__metadata__";

/// Size of the little-endian header-length prefix.
const LENGTH_PREFIX: usize = 8;

/// What can go wrong reading or writing a safetensors file.
#[derive(Debug, thiserror::Error)]
pub enum SafetensorsError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not a well-formed safetensors file (as judged by the `safetensors` crate).
    #[error("invalid safetensors file: {0}")]
    Format(#[source] SafeTensorError),
    /// The header is too short to hold its own declared length, or its offsets run past the
    /// end of the file.
    #[error("invalid safetensors file: {0}")]
    Header(String),
    /// A tensor whose element type ferrojit's tensors cannot hold (F8, complex, unsigned 16-64 …).
    #[error("tensor '{name}': safetensors dtype {dtype} is not supported by ferrojit")]
    UnsupportedDtype { name: String, dtype: String },
    #[error("tensor '{name}': {source}")]
    Tensor {
        name: String,
        #[source]
        source: TensorError,
    },
    #[error("tensor name '{0}' appears more than once")]
    DuplicateName(String),
    #[error("'{METADATA_KEY}' is reserved for the metadata map and cannot name a tensor")]
    ReservedName,
    /// Writing failed inside the `safetensors` crate (e.g. a header over its 100 MB limit).
    #[error("cannot write safetensors data: {0}")]
    Write(#[source] SafeTensorError),
}

impl From<SafetensorsError> for LoadError {
    fn from(error: SafetensorsError) -> LoadError {
        match error {
            SafetensorsError::Io { path, source } => LoadError::Io { path, source },
            other => LoadError::format("safetensors", other.to_string()),
        }
    }
}

/// The whole content of a safetensors file: tensors in file order and the metadata map.
#[derive(Debug, Clone)]
pub struct SafetensorsContents {
    pub tensors: Vec<(String, Tensor)>,
    /// The `__metadata__` map; `None` when the header has none.
    pub metadata: Option<BTreeMap<String, String>>,
}

/// ferrojit's dtype for a safetensors dtype; `None` for the ones ferrojit has no tensors of.
pub fn dtype_from_safetensors(dtype: Dtype) -> Option<DType> {
    Some(match dtype {
        Dtype::BOOL => DType::Bool,
        Dtype::U8 => DType::UInt8,
        Dtype::I8 => DType::Int8,
        Dtype::I16 => DType::Int16,
        Dtype::I32 => DType::Int32,
        Dtype::I64 => DType::Int64,
        Dtype::F16 => DType::Float16,
        Dtype::BF16 => DType::BFloat16,
        Dtype::F32 => DType::Float32,
        Dtype::C64 => DType::ComplexFloat,
        Dtype::F64 => DType::Float64,
        _ => return None,
    })
}

/// The safetensors dtype for a ferrojit dtype; `None` for complex128, which the format lacks.
pub fn dtype_to_safetensors(dtype: DType) -> Option<Dtype> {
    Some(match dtype {
        DType::Bool => Dtype::BOOL,
        DType::UInt8 => Dtype::U8,
        DType::Int8 => Dtype::I8,
        DType::Int16 => Dtype::I16,
        DType::Int32 => Dtype::I32,
        DType::Int64 => Dtype::I64,
        DType::Float16 => Dtype::F16,
        DType::BFloat16 => Dtype::BF16,
        DType::Float32 => Dtype::F32,
        DType::Float64 => Dtype::F64,
        DType::ComplexFloat => Dtype::C64,
        DType::ComplexDouble => return None,
    })
}

/// Reads a safetensors file: tensors in file order (metadata is dropped; see [`read_safetensors`]).
pub fn load_safetensors(path: &Path) -> Result<Vec<(String, Tensor)>, SafetensorsError> {
    Ok(read_safetensors(path)?.tensors)
}

/// Parses safetensors bytes: tensors in file order (metadata is dropped; see
/// [`read_safetensors_bytes`]).
pub fn load_safetensors_bytes(bytes: &[u8]) -> Result<Vec<(String, Tensor)>, SafetensorsError> {
    Ok(read_safetensors_bytes(bytes)?.tensors)
}

/// Reads a safetensors file: tensors and metadata.
pub fn read_safetensors(path: &Path) -> Result<SafetensorsContents, SafetensorsError> {
    let bytes = std::fs::read(path).map_err(|source| SafetensorsError::Io {
        path: path.display().to_string(),
        source,
    })?;
    read_safetensors_bytes(&bytes)
}

/// Parses safetensors bytes: tensors and metadata. Never panics on any input; every
/// allocation is bounded by the input's length.
pub fn read_safetensors_bytes(bytes: &[u8]) -> Result<SafetensorsContents, SafetensorsError> {
    precheck_offsets(bytes)?;
    let (header_len, metadata) =
        SafeTensors::read_metadata(bytes).map_err(SafetensorsError::Format)?;
    let data_start = header_len
        .checked_add(LENGTH_PREFIX)
        .ok_or_else(|| SafetensorsError::Header("header length overflows".to_string()))?;
    let data = bytes.get(data_start..).ok_or_else(|| {
        SafetensorsError::Header("header length runs past the end of the file".to_string())
    })?;
    let tensors = metadata
        .offset_keys()
        .into_iter()
        .map(|name| {
            let tensor = tensor_from_header(&metadata, &name, data)?;
            Ok((name, tensor))
        })
        .collect::<Result<Vec<_>, SafetensorsError>>()?;
    let user_metadata = metadata
        .metadata()
        .as_ref()
        .map(|map| map.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
    Ok(SafetensorsContents {
        tensors,
        metadata: user_metadata,
    })
}

/// Builds one tensor from its (already validated) header entry and the data section.
fn tensor_from_header(
    metadata: &Metadata,
    name: &str,
    data: &[u8],
) -> Result<Tensor, SafetensorsError> {
    let info = metadata.info(name).ok_or_else(|| {
        SafetensorsError::Format(SafeTensorError::TensorNotFound(name.to_string()))
    })?;
    let dtype =
        dtype_from_safetensors(info.dtype).ok_or_else(|| SafetensorsError::UnsupportedDtype {
            name: name.to_string(),
            dtype: info.dtype.to_string(),
        })?;
    let (start, end) = info.data_offsets;
    let raw = data.get(start..end).ok_or_else(|| {
        SafetensorsError::Header(format!("tensor '{name}': offsets out of range"))
    })?;
    let numel = info
        .shape
        .iter()
        .try_fold(1usize, |acc, &size| acc.checked_mul(size))
        .ok_or_else(|| SafetensorsError::Tensor {
            name: name.to_string(),
            source: TensorError::SizeOverflow,
        })?;
    let expected = numel.checked_mul(dtype.item_size());
    if expected != Some(raw.len()) {
        return Err(SafetensorsError::Header(format!(
            "tensor '{name}': {} bytes for shape {:?} of {}",
            raw.len(),
            info.shape,
            dtype.name()
        )));
    }
    let tensor_error = |source| SafetensorsError::Tensor {
        name: name.to_string(),
        source,
    };
    let storage = Storage::from_bytes(dtype, raw, true).map_err(tensor_error)?;
    let sizes = info.shape.clone();
    let strides = contiguous_strides(&sizes);
    Tensor::from_storage(storage, 0, sizes, strides).map_err(tensor_error)
}

/// Rejects files whose data offsets name bytes beyond the end of the file, before the
/// `safetensors` crate adds them up (its end-of-data sum is not overflow-checked, so offsets
/// near `u64::MAX` would otherwise abort a debug build). Scans the JSON header's number
/// tokens that follow a `"data_offsets"` key, outside strings; anything malformed is left for
/// the crate's JSON parser to report.
fn precheck_offsets(bytes: &[u8]) -> Result<(), SafetensorsError> {
    let Some(prefix) = bytes.get(..LENGTH_PREFIX) else {
        return Ok(());
    };
    let mut length = [0u8; LENGTH_PREFIX];
    length.copy_from_slice(prefix);
    let Ok(header_len) = usize::try_from(u64::from_le_bytes(length)) else {
        return Ok(());
    };
    let Some(header) = header_len
        .checked_add(LENGTH_PREFIX)
        .and_then(|end| bytes.get(LENGTH_PREFIX..end))
    else {
        return Ok(());
    };
    let data_len = bytes.len() - LENGTH_PREFIX - header.len();
    let mut scanner = HeaderScanner::new(header);
    while let Some(offset) = scanner.next_data_offset() {
        let in_range = offset.parse::<u128>().is_ok_and(|v| v <= data_len as u128);
        if !in_range {
            return Err(SafetensorsError::Header(format!(
                "data offset {offset} is past the end of the {data_len}-byte data section"
            )));
        }
    }
    Ok(())
}

/// A minimal tokenizer over a JSON header: yields the number tokens inside each
/// `"data_offsets": [...]` array. Strings (with escapes) are skipped, so metadata values can
/// never be mistaken for offsets.
struct HeaderScanner<'a> {
    text: &'a [u8],
    pos: usize,
    /// Whether the last string token may have been the key "data_offsets".
    last_string_was_offsets: bool,
    /// Whether the scanner is inside a `data_offsets` array.
    in_offsets: bool,
}

impl<'a> HeaderScanner<'a> {
    fn new(text: &'a [u8]) -> Self {
        HeaderScanner {
            text,
            pos: 0,
            last_string_was_offsets: false,
            in_offsets: false,
        }
    }

    /// Skips a string starting at `self.pos` (an opening quote) and returns its raw body.
    fn skip_string(&mut self) -> &'a [u8] {
        let start = self.pos + 1;
        let mut i = start;
        while let Some(&b) = self.text.get(i) {
            match b {
                b'\\' => i += 2,
                b'"' => {
                    self.pos = i + 1;
                    return self.text.get(start..i).unwrap_or_default();
                }
                _ => i += 1,
            }
        }
        self.pos = self.text.len();
        self.text.get(start..).unwrap_or_default()
    }

    fn next_data_offset(&mut self) -> Option<String> {
        while let Some(&b) = self.text.get(self.pos) {
            match b {
                b'"' => {
                    let body = self.skip_string();
                    // A key spelled with escapes might decode to "data_offsets": check it too.
                    self.last_string_was_offsets = body == b"data_offsets" || body.contains(&b'\\');
                }
                b'[' => {
                    self.in_offsets = self.last_string_was_offsets;
                    self.last_string_was_offsets = false;
                    self.pos += 1;
                }
                b']' => {
                    self.in_offsets = false;
                    self.pos += 1;
                }
                b'-' | b'0'..=b'9' => {
                    let start = self.pos;
                    while self.text.get(self.pos).is_some_and(|c| {
                        c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E')
                    }) {
                        self.pos += 1;
                    }
                    if self.in_offsets {
                        let token = self.text.get(start..self.pos).unwrap_or_default();
                        return Some(String::from_utf8_lossy(token).into_owned());
                    }
                }
                _ => self.pos += 1,
            }
        }
        None
    }
}

/// One tensor's contiguous little-endian bytes, ready for the crate's writer.
struct TensorBytes {
    dtype: Dtype,
    shape: Vec<usize>,
    data: Vec<u8>,
}

impl View for &TensorBytes {
    fn dtype(&self) -> Dtype {
        self.dtype
    }

    fn shape(&self) -> &[usize] {
        &self.shape
    }

    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.data)
    }

    fn data_len(&self) -> usize {
        self.data.len()
    }
}

/// The elements of `tensor` in logical (C-contiguous) order as little-endian bytes.
fn contiguous_le_bytes(tensor: &Tensor) -> Vec<u8> {
    let storage = tensor.storage();
    if tensor.is_contiguous()
        && tensor.storage_offset() == 0
        && storage.len_elements() == tensor.numel()
    {
        storage.to_le_bytes()
    } else {
        tensor.clone_tensor().storage().to_le_bytes()
    }
}

/// Serializes tensors (any strides; written contiguous) and optional metadata to bytes.
pub fn save_safetensors_to_bytes(
    tensors: &[(String, Tensor)],
    metadata: Option<&BTreeMap<String, String>>,
) -> Result<Vec<u8>, SafetensorsError> {
    let mut seen = HashSet::with_capacity(tensors.len());
    for (name, _) in tensors {
        if name == METADATA_KEY {
            return Err(SafetensorsError::ReservedName);
        }
        if !seen.insert(name.as_str()) {
            return Err(SafetensorsError::DuplicateName(name.clone()));
        }
    }
    let prepared: Vec<(&str, TensorBytes)> = tensors
        .iter()
        .map(|(name, tensor)| {
            let dtype = dtype_to_safetensors(tensor.dtype()).ok_or_else(|| {
                SafetensorsError::UnsupportedDtype {
                    name: name.clone(),
                    dtype: tensor.dtype().name().to_string(),
                }
            })?;
            Ok((
                name.as_str(),
                TensorBytes {
                    dtype,
                    shape: tensor.sizes().to_vec(),
                    data: contiguous_le_bytes(tensor),
                },
            ))
        })
        .collect::<Result<_, SafetensorsError>>()?;
    let info: Option<HashMap<String, String>> =
        metadata.map(|map| map.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
    safetensors::serialize(prepared.iter().map(|(name, bytes)| (*name, bytes)), info)
        .map_err(SafetensorsError::Write)
}

/// Writes tensors (any strides; written contiguous) and optional metadata to a file.
pub fn save_safetensors(
    path: &Path,
    tensors: &[(String, Tensor)],
    metadata: Option<&BTreeMap<String, String>>,
) -> Result<(), SafetensorsError> {
    let bytes = save_safetensors_to_bytes(tensors, metadata)?;
    ferrojit_archive::zip_archive::replace_file(path, &bytes).map_err(|source| {
        SafetensorsError::Io {
            path: path.display().to_string(),
            source,
        }
    })
}
