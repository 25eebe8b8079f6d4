//! The `.pt2` archive `torch.export.save` writes: `archive_format`, `byteorder`, the programs
//! in `models/NAME.json`, and each program's weights and constants, rebuilt from raw storage
//! files as views (`as_strided`) described by their `TensorMeta`.

use crate::error::{ExportError, Result};
use crate::json::{parse_json, Node as Json};
use crate::model::{
    scalar_type_name, scalar_type_to_dtype, ExportedProgram, PayloadMeta, SymInt, TensorMeta,
};
use ferrojit_archive::zip_archive::ArchiveReader;
use ferrojit_tensor::{DType, Storage, Tensor};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// The name of the program a one-program archive holds.
pub const DEFAULT_MODEL_NAME: &str = "model";

/// The most zeros an empty storage file may stand for.
pub const MAX_ZERO_STORAGE_BYTES: usize = 256 * 1024 * 1024;

/// An opened `.pt2` archive.
pub struct Pt2Archive {
    reader: ArchiveReader,
    little_endian: bool,
    models: Vec<String>,
}

impl std::fmt::Debug for Pt2Archive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pt2Archive")
            .field("models", &self.models)
            .finish_non_exhaustive()
    }
}

/// A program with its state: parameters and buffers (by state-dict name) and constants.
#[derive(Debug, Clone)]
pub struct LoadedProgram {
    pub name: String,
    pub program: ExportedProgram,
    /// Parameters and persistent buffers, by their state-dict names.
    pub state_dict: BTreeMap<String, Tensor>,
    /// Tensor constants and non-persistent buffers.
    pub constants: BTreeMap<String, Tensor>,
}

fn text_record(reader: &ArchiveReader, name: &str) -> Result<Option<String>> {
    if !reader.has_record(name) {
        return Ok(None);
    }
    if reader.record_size(name).unwrap_or(0) > 4096 {
        return Err(ExportError::NotPt2(format!("record '{name}' is too large")));
    }
    let bytes = reader.read_record(name)?;
    Ok(Some(String::from_utf8_lossy(&bytes).trim().to_string()))
}

impl Pt2Archive {
    /// Opens the archive at `path` (memory-mapped).
    pub fn open(path: impl AsRef<Path>) -> Result<Pt2Archive> {
        let path = path.as_ref();
        Pt2Archive::from_reader(ArchiveReader::open(path)?, &path.display().to_string())
    }

    /// Opens an archive held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Pt2Archive> {
        Pt2Archive::from_reader(ArchiveReader::from_bytes(bytes)?, "<bytes>")
    }

    fn from_reader(reader: ArchiveReader, label: &str) -> Result<Pt2Archive> {
        let names = reader.record_names();
        let is_aot_inductor = names.iter().any(|name| {
            name.starts_with("data/aotinductor/")
                || name.ends_with(".so")
                || name.ends_with(".wrapper.so")
        });
        let models: Vec<String> = names
            .iter()
            .filter_map(|name| name.strip_prefix("models/")?.strip_suffix(".json"))
            .filter(|name| !name.is_empty() && !name.contains('/'))
            .map(str::to_string)
            .collect();
        if is_aot_inductor && models.is_empty() {
            return Err(ExportError::AotInductor(label.to_string()));
        }
        match text_record(&reader, "archive_format")? {
            Some(format) if format == "pt2" => {}
            Some(format) => {
                return Err(ExportError::NotPt2(format!("archive_format is '{format}', not 'pt2'")))
            }
            None if reader.has_record("serialized_exported_program.json") => {
                return Err(ExportError::Unsupported(
                    "the older flat .pt2 layout (serialized_exported_program.json); re-save with torch.export.save from torch 2.6 or later".into(),
                ))
            }
            None if reader.has_record("data.pkl") => {
                return Err(ExportError::NotPt2(
                    "this is a TorchScript or torch.save archive (data.pkl), not a .pt2 program".into(),
                ))
            }
            None => return Err(ExportError::NotPt2("no archive_format record".into())),
        }
        if let Some(version) = text_record(&reader, "archive_version")? {
            if version != "0" {
                return Err(ExportError::NotPt2(format!(
                    "archive_version '{version}' is not the version 0 this reader reads"
                )));
            }
        }
        let little_endian = match text_record(&reader, "byteorder")?.as_deref() {
            None | Some("little") => true,
            Some("big") => false,
            Some(other) => return Err(ExportError::NotPt2(format!("byteorder '{other}'"))),
        };
        if models.is_empty() {
            return Err(ExportError::NotPt2(
                "the archive holds no models/*.json program".into(),
            ));
        }
        Ok(Pt2Archive {
            reader,
            little_endian,
            models,
        })
    }

    /// The names of the programs in the archive (`model` for a one-program archive).
    pub fn model_names(&self) -> &[String] {
        &self.models
    }

    /// Parses a JSON record.
    fn json_record(&self, name: &str) -> Result<serde_json::Value> {
        let size = self.reader.record_size(name).unwrap_or(0);
        if size > crate::json::MAX_JSON_BYTES as u64 {
            return Err(ExportError::Json {
                record: name.to_string(),
                message: format!(
                    "{size} bytes is more than the {} allowed",
                    crate::json::MAX_JSON_BYTES
                ),
            });
        }
        let bytes = self.reader.read_record(name)?;
        parse_json(name, &bytes)
    }

    /// Reads program `name` without its weights.
    pub fn program(&self, name: &str) -> Result<ExportedProgram> {
        if !self.models.iter().any(|model| model == name) {
            return Err(ExportError::MissingModel {
                name: name.to_string(),
                available: self.models.join(", "),
            });
        }
        let record = format!("models/{name}.json");
        let json = self.json_record(&record)?;
        ExportedProgram::from_json(&Json::new(&json, record))
    }

    /// Reads program `name` with its weights and constants.
    pub fn load(&self, name: &str) -> Result<LoadedProgram> {
        let program = self.program(name)?;
        let state_dict = self.payloads(
            &format!("data/weights/{name}_weights_config.json"),
            "data/weights/",
        )?;
        let constants = self.payloads(
            &format!("data/constants/{name}_constants_config.json"),
            "data/constants/",
        )?;
        Ok(LoadedProgram {
            name: name.to_string(),
            program,
            state_dict,
            constants,
        })
    }

    /// Reads a payload config and rebuilds its tensors; tensors naming the same file share
    /// one storage.
    fn payloads(&self, config_record: &str, folder: &str) -> Result<BTreeMap<String, Tensor>> {
        let mut tensors = BTreeMap::new();
        if !self.reader.has_record(config_record) {
            return Ok(tensors);
        }
        let json = self.json_record(config_record)?;
        let root = Json::new(&json, config_record);
        let config = root.get("config")?;
        let mut entries = Vec::new();
        for (fqn, entry) in config.entries()? {
            entries.push((fqn, PayloadMeta::from_json(&entry)?));
        }
        // Storages by file: its bytes, and each dtype's storage made from them.
        let mut storages: HashMap<String, Storage> = HashMap::new();
        for (fqn, payload) in entries {
            let tensor_error = |message: String| ExportError::Tensor {
                name: fqn.clone(),
                message,
            };
            if payload.use_pickle {
                return Err(ExportError::Unsupported(format!(
                    "'{fqn}' is a pickled payload (a tensor subclass or a custom object), which ferrojit does not load"
                )));
            }
            let Some(meta) = payload.tensor_meta.as_ref() else {
                return Err(tensor_error("no tensor_meta".into()));
            };
            let geometry = static_geometry(meta).map_err(tensor_error)?;
            let record = format!("{folder}{}", payload.path_name);
            if payload.path_name.contains("..") || payload.path_name.starts_with('/') {
                return Err(tensor_error(format!(
                    "bad path_name '{}'",
                    payload.path_name
                )));
            }
            let storage = match storages.get(&payload.path_name) {
                Some(storage) => {
                    if storage.dtype() != geometry.dtype {
                        return Err(ExportError::Unsupported(format!(
                            "'{fqn}' views storage '{}' as {} after another tensor viewed it as {}",
                            payload.path_name,
                            geometry.dtype.name(),
                            storage.dtype().name()
                        )));
                    }
                    storage.clone()
                }
                None => {
                    let storage =
                        self.storage(&record, &geometry)
                            .map_err(|error| match error {
                                ExportError::Archive(inner) => tensor_error(inner.to_string()),
                                other => other,
                            })?;
                    storages.insert(payload.path_name.clone(), storage.clone());
                    storage
                }
            };
            let tensor =
                Tensor::from_storage(storage, geometry.offset, geometry.sizes, geometry.strides)
                    .map_err(|error| tensor_error(error.to_string()))?;
            tensors.insert(fqn, tensor);
        }
        Ok(tensors)
    }

    /// The storage in `record`: its bytes as `dtype` elements; a zero-byte file stands for
    /// zeros as long as the view needs.
    fn storage(&self, record: &str, geometry: &Geometry) -> Result<Storage> {
        let size =
            self.reader
                .record_size(record)
                .ok_or_else(|| ExportError::MissingReference {
                    kind: "storage file",
                    name: record.to_string(),
                })?;
        let item = geometry.dtype.item_size() as u64;
        if size == 0 {
            let bytes = geometry.extent.saturating_mul(geometry.dtype.item_size());
            if bytes > MAX_ZERO_STORAGE_BYTES {
                return Err(ExportError::Tensor {
                    name: record.to_string(),
                    message: format!(
                        "an empty storage file stands for {bytes} bytes of zeros, more than the {MAX_ZERO_STORAGE_BYTES} allowed"
                    ),
                });
            }
            return Ok(Storage::zeros(geometry.dtype, geometry.extent));
        }
        if size % item != 0 {
            return Err(ExportError::Tensor {
                name: record.to_string(),
                message: format!(
                    "{size} bytes is not a whole number of {}-byte elements",
                    item
                ),
            });
        }
        let tensor_error = |message: String| ExportError::Tensor {
            name: record.to_string(),
            message,
        };
        if let Some((bytes, range)) = self.reader.stored_shared(record)? {
            return Storage::from_shared_bytes(geometry.dtype, bytes, range, self.little_endian)
                .map_err(|error| tensor_error(error.to_string()));
        }
        let bytes = self.reader.read_record(record)?;
        Storage::from_bytes(geometry.dtype, &bytes, self.little_endian)
            .map_err(|error| tensor_error(error.to_string()))
    }
}

/// A tensor's static geometry, from its metadata.
struct Geometry {
    dtype: DType,
    sizes: Vec<usize>,
    strides: Vec<usize>,
    offset: usize,
    /// Elements the view reaches: `offset + Σ (size - 1) × stride + 1`, or 0 when empty.
    extent: usize,
}

fn static_geometry(meta: &TensorMeta) -> std::result::Result<Geometry, String> {
    let dtype = scalar_type_to_dtype(meta.dtype)
        .ok_or_else(|| format!("dtype {} is not supported", scalar_type_name(meta.dtype)))?;
    if meta.layout != 7 {
        return Err(format!("layout {} is not strided", meta.layout));
    }
    let number = |value: &SymInt, what: &str| -> std::result::Result<usize, String> {
        let literal = value.as_int().ok_or_else(|| format!("symbolic {what}"))?;
        usize::try_from(literal).map_err(|_| format!("negative {what} {literal}"))
    };
    let sizes = meta
        .sizes
        .iter()
        .map(|size| number(size, "size"))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let strides = meta
        .strides
        .iter()
        .map(|stride| number(stride, "stride"))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    if sizes.len() != strides.len() {
        return Err(format!(
            "{} sizes but {} strides",
            sizes.len(),
            strides.len()
        ));
    }
    let offset = number(&meta.storage_offset, "storage offset")?;
    let overflow = || "sizes, strides and offset overflow".to_string();
    let mut numel: usize = 1;
    for size in &sizes {
        numel = numel.checked_mul(*size).ok_or_else(overflow)?;
    }
    let extent = if numel == 0 {
        0
    } else {
        let mut last = offset;
        for (size, stride) in sizes.iter().zip(&strides) {
            last = (size - 1)
                .checked_mul(*stride)
                .and_then(|reach| last.checked_add(reach))
                .ok_or_else(overflow)?;
        }
        last.checked_add(1).ok_or_else(overflow)?
    };
    Ok(Geometry {
        dtype,
        sizes,
        strides,
        offset,
        extent,
    })
}
