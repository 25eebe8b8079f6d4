//! The `.pt2` archive `torch.export.save` writes: `archive_format`, `byteorder`, the programs
//! in `models/NAME.json`, and each program's weights and constants, rebuilt from raw storage
//! files as views (`as_strided`) described by their `TensorMeta` (or, with `use_pickle`, read
//! from a `torch.save` file), and its sample inputs in `data/sample_inputs/NAME.pt`.
//!
//! Also the older flat layout that `torch.export.load` still falls back to (torch 2.15's
//! `torch/export/__init__.py`): a zip with no folder around its records, holding `version`
//! (`MAJOR.MINOR` of the schema), `serialized_exported_program.json`, and the `torch.save`
//! files `serialized_state_dict.pt`, `serialized_constants.pt` and
//! `serialized_example_inputs.pt` (each may be empty), for one program named `model`.

use crate::error::{ExportError, Result};
use crate::json::{parse_json, Node as Json};
use crate::model::{
    scalar_type_name, scalar_type_to_dtype, ExportedProgram, PayloadMeta, SymInt, TensorMeta,
    SUPPORTED_SCHEMA_MAJOR,
};
use crate::torch_save::load_torch_save_bytes_with_limits;
use ferrojit_archive::zip_archive::{ArchiveLimits, ArchiveReader};
use ferrojit_runtime::IValue;
use ferrojit_tensor::{DType, Storage, Tensor};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// The name of the program a one-program archive holds.
pub const DEFAULT_MODEL_NAME: &str = "model";

/// The most zeros an empty storage file may stand for.
pub const MAX_ZERO_STORAGE_BYTES: usize = 256 * 1024 * 1024;

/// The records of the older flat layout, which holds one program (`model`).
pub const FLAT_PROGRAM_RECORD: &str = "serialized_exported_program.json";
/// The flat layout's `torch.save`d state dict.
pub const FLAT_STATE_DICT_RECORD: &str = "serialized_state_dict.pt";
/// The flat layout's `torch.save`d constants.
pub const FLAT_CONSTANTS_RECORD: &str = "serialized_constants.pt";
/// The flat layout's `torch.save`d example inputs.
pub const FLAT_EXAMPLE_INPUTS_RECORD: &str = "serialized_example_inputs.pt";

/// How the archive lays out its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pt2Layout {
    /// `archive_format` "pt2": `models/NAME.json` and `data/...` (torch 2.6 and later).
    Packaged,
    /// The older flat zip: `serialized_exported_program.json` and its `.pt` companions.
    Flat,
}

/// An opened `.pt2` archive.
pub struct Pt2Archive {
    reader: ArchiveReader,
    /// The bounds the archive was opened with; the `torch.save` files nested in it are read
    /// under them too.
    limits: ArchiveLimits,
    little_endian: bool,
    models: Vec<String>,
    layout: Pt2Layout,
}

/// The example inputs saved with a program: positional and keyword arguments.
#[derive(Debug, Clone)]
pub struct SampleInputs {
    pub args: Vec<IValue>,
    pub kwargs: Vec<(String, IValue)>,
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
    /// Opens the archive at `path` (memory-mapped) with the default limits.
    pub fn open(path: impl AsRef<Path>) -> Result<Pt2Archive> {
        Pt2Archive::open_with_limits(path, ArchiveLimits::default())
    }

    /// Opens the archive at `path` (memory-mapped) under `limits`: how many entries, how
    /// large a record (weight storages included), how many bytes read in all, and the cap
    /// on the values each pickle in it builds (`max_pickle_value_bytes`), which applies to
    /// the `torch.save` files nested in the archive: `use_pickle` weights, pickled constants
    /// and sample inputs.
    pub fn open_with_limits(path: impl AsRef<Path>, limits: ArchiveLimits) -> Result<Pt2Archive> {
        let path = path.as_ref();
        Pt2Archive::from_reader(
            ArchiveReader::open_allowing_flat_with_limits(path, limits)?,
            limits,
            &path.display().to_string(),
        )
    }

    /// Opens an archive held in memory with the default limits.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Pt2Archive> {
        Pt2Archive::from_bytes_with_limits(bytes, ArchiveLimits::default())
    }

    /// Opens an archive held in memory under `limits` (see [`Pt2Archive::open_with_limits`]).
    pub fn from_bytes_with_limits(bytes: Vec<u8>, limits: ArchiveLimits) -> Result<Pt2Archive> {
        Pt2Archive::from_reader(
            ArchiveReader::from_bytes_allowing_flat_with_limits(bytes, limits)?,
            limits,
            "<bytes>",
        )
    }

    fn from_reader(
        reader: ArchiveReader,
        limits: ArchiveLimits,
        label: &str,
    ) -> Result<Pt2Archive> {
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
                return Err(ExportError::NotPt2(format!(
                    "archive_format is '{format}', not 'pt2'"
                )))
            }
            None if reader.has_record(FLAT_PROGRAM_RECORD) => {
                return Pt2Archive::flat(reader, limits)
            }
            None if reader.has_record("data.pkl") => {
                return Err(ExportError::NotPt2(
                    "this is a TorchScript or torch.save archive (data.pkl), not a .pt2 program"
                        .into(),
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
            limits,
            little_endian,
            models,
            layout: Pt2Layout::Packaged,
        })
    }

    /// The older flat layout. As `torch.export.load` does, it needs a `version` record of
    /// two numbers whose major is the schema's, and all four `serialized_*` records.
    fn flat(reader: ArchiveReader, limits: ArchiveLimits) -> Result<Pt2Archive> {
        let Some(version) = text_record(&reader, "version")? else {
            return Err(ExportError::NotPt2(
                "a flat archive (serialized_exported_program.json) without a version record".into(),
            ));
        };
        let parts: Vec<&str> = version.split('.').collect();
        let numbers: Option<Vec<i64>> = parts.iter().map(|part| part.parse().ok()).collect();
        let (major, minor) = match numbers.as_deref() {
            Some([major, minor]) => (*major, *minor),
            _ => {
                return Err(ExportError::NotPt2(format!(
                    "the flat archive's version '{version}' is not MAJOR.MINOR"
                )))
            }
        };
        if major != SUPPORTED_SCHEMA_MAJOR {
            return Err(ExportError::SchemaVersion {
                found_major: major,
                found_minor: minor,
                supported_major: SUPPORTED_SCHEMA_MAJOR,
            });
        }
        for record in [
            FLAT_STATE_DICT_RECORD,
            FLAT_CONSTANTS_RECORD,
            FLAT_EXAMPLE_INPUTS_RECORD,
        ] {
            if !reader.has_record(record) {
                return Err(ExportError::NotPt2(format!(
                    "the flat archive has no {record} record"
                )));
            }
        }
        Ok(Pt2Archive {
            reader,
            limits,
            little_endian: true,
            models: vec![DEFAULT_MODEL_NAME.to_string()],
            layout: Pt2Layout::Flat,
        })
    }

    /// How the archive lays out its records.
    pub fn layout(&self) -> Pt2Layout {
        self.layout
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

    fn check_model(&self, name: &str) -> Result<()> {
        if self.models.iter().any(|model| model == name) {
            return Ok(());
        }
        Err(ExportError::MissingModel {
            name: name.to_string(),
            available: self.models.join(", "),
        })
    }

    /// Reads program `name` without its weights.
    pub fn program(&self, name: &str) -> Result<ExportedProgram> {
        self.check_model(name)?;
        let record = match self.layout {
            Pt2Layout::Packaged => format!("models/{name}.json"),
            Pt2Layout::Flat => FLAT_PROGRAM_RECORD.to_string(),
        };
        let json = self.json_record(&record)?;
        ExportedProgram::from_json(&Json::new(&json, record))
    }

    /// Reads program `name` with its weights and constants.
    pub fn load(&self, name: &str) -> Result<LoadedProgram> {
        let program = self.program(name)?;
        let (state_dict, constants) = match self.layout {
            Pt2Layout::Packaged => (
                self.weights_or_legacy(
                    &format!("data/weights/{name}_weights_config.json"),
                    &format!("data/weights/{name}.pt"),
                    "data/weights/",
                )?,
                self.weights_or_legacy(
                    &format!("data/constants/{name}_constants_config.json"),
                    &format!("data/constants/{name}.pt"),
                    "data/constants/",
                )?,
            ),
            Pt2Layout::Flat => (
                self.saved_tensors(FLAT_STATE_DICT_RECORD)?,
                self.saved_tensors(FLAT_CONSTANTS_RECORD)?,
            ),
        };
        Ok(LoadedProgram {
            name: name.to_string(),
            program,
            state_dict,
            constants,
        })
    }

    /// The example inputs saved with program `name` (`data/sample_inputs/NAME.pt`, or the
    /// flat layout's `serialized_example_inputs.pt`), if the archive has them. They are read
    /// on request, not by [`Pt2Archive::load`]: they may hold values ferrojit does not read
    /// (a custom class), which must not stop the program from loading.
    pub fn sample_inputs(&self, name: &str) -> Result<Option<SampleInputs>> {
        self.check_model(name)?;
        let record = match self.layout {
            Pt2Layout::Packaged => format!("data/sample_inputs/{name}.pt"),
            Pt2Layout::Flat => FLAT_EXAMPLE_INPUTS_RECORD.to_string(),
        };
        if self.reader.record_size(&record).unwrap_or(0) == 0 {
            return Ok(None);
        }
        let value = load_torch_save_bytes_with_limits(
            self.reader.read_record(&record)?,
            &record,
            &self.limits,
        )?;
        let bad = || ExportError::Tensor {
            name: record.clone(),
            message: "the sample inputs are not an (args, kwargs) pair".into(),
        };
        let IValue::Tuple(pair) = value else {
            return Err(bad());
        };
        let [args, kwargs] = pair.items.as_slice() else {
            return Err(bad());
        };
        let args = match args {
            IValue::Tuple(tuple) => tuple.items.clone(),
            IValue::List(list) => list.to_vec(),
            _ => return Err(bad()),
        };
        let kwargs = match kwargs {
            IValue::Dict(dict) => dict
                .entries()
                .into_iter()
                .map(|(key, value)| Ok((key.to_str().map_err(|_| bad())?.to_string(), value)))
                .collect::<Result<Vec<_>>>()?,
            IValue::None => Vec::new(),
            _ => return Err(bad()),
        };
        Ok(Some(SampleInputs { args, kwargs }))
    }

    /// The tensors of a payload config, or of the `torch.save`d dict an archive written
    /// before payload configs holds instead (`data/weights/NAME.pt`), as PyTorch still reads.
    fn weights_or_legacy(
        &self,
        config_record: &str,
        legacy_record: &str,
        folder: &str,
    ) -> Result<BTreeMap<String, Tensor>> {
        if !self.reader.has_record(config_record) && self.reader.has_record(legacy_record) {
            return self.saved_tensors(legacy_record);
        }
        self.payloads(config_record, folder)
    }

    /// A `torch.save`d dict of tensors (empty when the record is empty).
    fn saved_tensors(&self, record: &str) -> Result<BTreeMap<String, Tensor>> {
        let mut tensors = BTreeMap::new();
        if self.reader.record_size(record).unwrap_or(0) == 0 {
            return Ok(tensors);
        }
        let value = load_torch_save_bytes_with_limits(
            self.reader.read_record(record)?,
            record,
            &self.limits,
        )?;
        let IValue::Dict(dict) = value else {
            return Err(ExportError::Tensor {
                name: record.to_string(),
                message: format!("holds a {}, not a dict of tensors", value.tag_name()),
            });
        };
        for (key, value) in dict.entries() {
            let name = key
                .to_str()
                .map_err(|_| ExportError::Tensor {
                    name: record.to_string(),
                    message: "a key is not a string".into(),
                })?
                .to_string();
            match value {
                IValue::Tensor(_) => {
                    tensors.insert(name, value.into_tensor()?);
                }
                other => {
                    return Err(ExportError::Unsupported(format!(
                    "'{name}' in {record} is a {} (a custom object), which ferrojit does not load",
                    other.tag_name()
                )))
                }
            }
        }
        Ok(tensors)
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
            if payload.path_name.contains("..") || payload.path_name.starts_with('/') {
                return Err(tensor_error(format!(
                    "bad path_name '{}'",
                    payload.path_name
                )));
            }
            let record = format!("{folder}{}", payload.path_name);
            // Constants name their kind by their file's prefix, as PyTorch's loader reads them.
            if folder == "data/constants/" {
                for (prefix, kind) in [
                    ("custom_obj_", "a custom object (a TorchScript class)"),
                    ("opaque_obj_", "an opaque Python object"),
                ] {
                    if payload.path_name.starts_with(prefix) {
                        return Err(ExportError::Unsupported(format!(
                            "constant '{fqn}' ({record}) is {kind}, which ferrojit does not load"
                        )));
                    }
                }
                if !payload.path_name.starts_with("tensor_") {
                    return Err(tensor_error(format!(
                        "constant file '{}' is of no kind PyTorch writes (tensor_, custom_obj_, opaque_obj_)",
                        payload.path_name
                    )));
                }
            }
            if payload.use_pickle {
                let tensor = self
                    .pickled_tensor(&record, payload.tensor_meta.as_ref())
                    .map_err(|error| match error {
                        ExportError::Archive(inner) => tensor_error(inner.to_string()),
                        other => other,
                    })?;
                tensors.insert(fqn, tensor);
                continue;
            }
            let Some(meta) = payload.tensor_meta.as_ref() else {
                return Err(tensor_error("no tensor_meta".into()));
            };
            let geometry = static_geometry(meta).map_err(tensor_error)?;
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

    /// A `use_pickle` payload: a `torch.save`d tensor, checked against its metadata's dtype and
    /// sizes.
    fn pickled_tensor(&self, record: &str, meta: Option<&TensorMeta>) -> Result<Tensor> {
        if !self.reader.has_record(record) {
            return Err(ExportError::MissingReference {
                kind: "storage file",
                name: record.to_string(),
            });
        }
        let value = load_torch_save_bytes_with_limits(
            self.reader.read_record(record)?,
            record,
            &self.limits,
        )?;
        let IValue::Tensor(_) = value else {
            return Err(ExportError::Unsupported(format!(
                "{record} is a pickled {}, not a tensor; ferrojit loads only tensors",
                value.tag_name()
            )));
        };
        let tensor = value.into_tensor()?;
        if let Some(meta) = meta {
            let geometry = static_geometry(meta).map_err(|message| ExportError::Tensor {
                name: record.to_string(),
                message,
            })?;
            if geometry.dtype != tensor.dtype() || geometry.sizes != tensor.sizes() {
                return Err(ExportError::Tensor {
                    name: record.to_string(),
                    message: format!(
                        "the pickled tensor is {} {:?} but its tensor_meta says {} {:?}",
                        tensor.dtype().name(),
                        tensor.sizes(),
                        geometry.dtype.name(),
                        geometry.sizes
                    ),
                });
            }
        }
        Ok(tensor)
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
            // A storage borrowed from the file is not read through `read_record`; counting
            // its declared size here puts it under the same record and total bounds.
            self.reader.deferred_record(record)?;
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
