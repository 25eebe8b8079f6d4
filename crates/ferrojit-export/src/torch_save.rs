//! The `torch.save` files a `.pt2` archive holds (pickled weights and constants with
//! `use_pickle`, `data/sample_inputs/NAME.pt`, and the older flat layout's
//! `serialized_state_dict.pt`, `serialized_constants.pt` and `serialized_example_inputs.pt`),
//! read into values. Only plain data is accepted: tensors (`_rebuild_tensor_v2`, parameters),
//! numbers, strings, `None`, tuples, lists, dicts and devices. Anything else (a tensor
//! subclass, a custom object) is refused with an error that names the class, since reading
//! it would mean running that class's Python code.
//!
//! This reader lives here, on `ferrojit-archive`'s unpickler, so that `ferrojit-export` does
//! not depend on the TorchScript frontend that `ferrojit-serialize` brings in.

use crate::error::{ExportError, Result};
use ferrojit_archive::error::PickleError;
use ferrojit_archive::pickle_value::PickleValue;
use ferrojit_archive::unpickler::{unpickle, UnpicklerOptions};
use ferrojit_archive::zip_archive::{ArchiveLimits, ArchiveReader};
use ferrojit_ir::Type;
use ferrojit_runtime::{Device, DictValue, IValue, ListValue, TupleValue};
use ferrojit_tensor::{DType, Storage, Tensor};
use std::collections::HashMap;

/// How deeply containers may nest in a `torch.save` value.
pub const MAX_SAVED_VALUE_DEPTH: usize = 200;

/// Reads the `torch.save` file held in `bytes`; `what` names it in errors (the record it
/// came from, such as `data/weights/weight_0`).
pub fn load_torch_save_bytes(bytes: Vec<u8>, what: &str) -> Result<IValue> {
    load_torch_save_bytes_with_limits(bytes, what, &ArchiveLimits::default())
}

/// [`load_torch_save_bytes`] under `limits`: the `.pt2` archive's own limits, so a pickle
/// nested in it (a `use_pickle` weight, constants, sample inputs) is read under the same
/// record and total bounds and the same `max_pickle_value_bytes` cap as the archive.
pub fn load_torch_save_bytes_with_limits(
    bytes: Vec<u8>,
    what: &str,
    limits: &ArchiveLimits,
) -> Result<IValue> {
    let archive = ArchiveReader::from_bytes_with_limits(bytes, *limits).map_err(|error| {
        ExportError::Tensor {
            name: what.to_string(),
            message: format!("not a torch.save file: {error}"),
        }
    })?;
    let mut reader = SavedValueReader::new(&archive, what)?;
    reader.read()
}

/// Converts one `torch.save` archive's pickle into values.
struct SavedValueReader<'a> {
    archive: &'a ArchiveReader,
    what: String,
    little_endian: bool,
    storages: HashMap<String, Storage>,
}

impl<'a> SavedValueReader<'a> {
    fn new(archive: &'a ArchiveReader, what: &str) -> Result<SavedValueReader<'a>> {
        let little_endian = match archive
            .has_record("byteorder")
            .then(|| archive.read_record("byteorder"))
            .transpose()?
            .as_deref()
        {
            None | Some(b"little") => true,
            Some(b"big") => false,
            Some(other) => {
                return Err(ExportError::Tensor {
                    name: what.to_string(),
                    message: format!("byteorder '{}'", String::from_utf8_lossy(other)),
                })
            }
        };
        Ok(SavedValueReader {
            archive,
            what: what.to_string(),
            little_endian,
            storages: HashMap::new(),
        })
    }

    fn error(&self, message: impl Into<String>) -> ExportError {
        ExportError::Tensor {
            name: self.what.clone(),
            message: message.into(),
        }
    }

    fn read(&mut self) -> Result<IValue> {
        if !self.archive.has_record("data.pkl") {
            return Err(self.error("the torch.save file has no data.pkl record"));
        }
        let bytes = self.archive.read_record("data.pkl")?;
        let options = UnpicklerOptions {
            max_value_bytes: Some(self.archive.pickle_value_budget("data.pkl")),
            ..UnpicklerOptions::torch_save()
        };
        let pickled = unpickle(&bytes, &options).map_err(|error| match error {
            PickleError::DisallowedGlobal { module, name, .. } => self.error(format!(
                "it refers to {module}.{name} (a tensor subclass or a custom object), which ferrojit does not load"
            )),
            other => self.error(format!("data.pkl: {other}")),
        })?;
        self.convert(&pickled, 0)
    }

    fn convert(&mut self, value: &PickleValue, depth: usize) -> Result<IValue> {
        if depth > MAX_SAVED_VALUE_DEPTH {
            return Err(self.error(format!(
                "values nested deeper than {MAX_SAVED_VALUE_DEPTH} levels"
            )));
        }
        Ok(match value {
            PickleValue::None => IValue::None,
            PickleValue::Bool(value) => IValue::Bool(*value),
            PickleValue::Int(value) => IValue::Int(*value),
            PickleValue::Float(value) => IValue::Double(*value),
            PickleValue::Str(text) => IValue::string(text),
            PickleValue::Tuple(items) => IValue::Tuple(TupleValue::new(
                items
                    .iter()
                    .map(|item| self.convert(item, depth + 1))
                    .collect::<Result<_>>()?,
            )),
            PickleValue::List(items) => {
                let items = items.borrow();
                let converted = items
                    .iter()
                    .map(|item| self.convert(item, depth + 1))
                    .collect::<Result<Vec<_>>>()?;
                let element_type = common_type(&converted);
                IValue::List(ListValue::new(element_type, converted))
            }
            PickleValue::Dict(entries) => {
                let entries = entries.borrow();
                let mut keys = Vec::with_capacity(entries.len());
                let mut values = Vec::with_capacity(entries.len());
                for (key, value) in entries.iter() {
                    keys.push(self.convert(key, depth + 1)?);
                    values.push(self.convert(value, depth + 1)?);
                }
                let dict = DictValue::new(common_type(&keys), common_type(&values));
                for (key, value) in keys.into_iter().zip(values) {
                    if !matches!(
                        key,
                        IValue::Str(_) | IValue::Int(_) | IValue::Double(_) | IValue::Bool(_)
                    ) {
                        return Err(self.error(format!(
                            "a dict key of type {} is not supported",
                            key.tag_name()
                        )));
                    }
                    dict.insert(key, value);
                }
                IValue::Dict(dict)
            }
            PickleValue::Reduce(reduce) => {
                let (callable, args) = {
                    let data = reduce.borrow();
                    (data.callable.clone(), data.args.clone())
                };
                self.convert_reduce(&callable, &args, depth)?
            }
            PickleValue::Object(object) => {
                let data = object.borrow();
                return Err(self.error(format!(
                    "it holds an object of class {}.{}, which ferrojit does not load (it would run Python code)",
                    data.module, data.name
                )));
            }
            PickleValue::Global(global) => {
                return Err(self.error(format!(
                    "global {}.{} used as a value",
                    global.module, global.name
                )))
            }
            PickleValue::Bytes(_) => return Err(self.error("raw bytes values are not supported")),
            PickleValue::PersistentId(_) => {
                return Err(self.error("a storage reference outside a tensor"))
            }
        })
    }

    fn convert_reduce(
        &mut self,
        callable: &PickleValue,
        args: &PickleValue,
        depth: usize,
    ) -> Result<IValue> {
        let Some((module, name)) = callable.as_global() else {
            return Err(self.error(format!("a call of a {}", callable.kind_name())));
        };
        let args = args
            .as_tuple()
            .ok_or_else(|| self.error("call arguments are not a tuple"))?;
        match (module, name) {
            ("torch._utils", "_rebuild_tensor_v2") => {
                let (tensor, requires_grad) = self.rebuild_tensor(args)?;
                Ok(IValue::tensor_with_requires_grad(tensor, requires_grad))
            }
            ("torch._utils", "_rebuild_parameter") => {
                let tensor = args
                    .first()
                    .ok_or_else(|| self.error("_rebuild_parameter without a tensor"))?;
                let tensor = self.convert(tensor, depth + 1)?;
                // The flag lives on the tensor handle (its `TensorCell`), as in PyTorch.
                if let Some(PickleValue::Bool(requires_grad)) = args.get(1) {
                    tensor.to_tensor_cell()?.set_requires_grad(*requires_grad);
                }
                Ok(tensor)
            }
            ("torch", "device") => {
                let text = args
                    .first()
                    .and_then(PickleValue::as_str)
                    .ok_or_else(|| self.error("torch.device without a string"))?;
                let mut device = Device::parse(text)?;
                if let Some(index) = args.get(1).and_then(PickleValue::as_int) {
                    device.index = Some(index);
                }
                Ok(IValue::from(device))
            }
            // The unpickler turns `OrderedDict()` into a dict itself; a call with no items
            // may still reach here.
            ("collections", "OrderedDict") if args.is_empty() => {
                Ok(IValue::Dict(DictValue::new(Type::Str, Type::Any)))
            }
            _ => Err(self.error(format!(
                "it calls {module}.{name} (a tensor subclass or a custom object), which ferrojit does not load"
            ))),
        }
    }

    /// The tensor of a `_rebuild_tensor_v2` call, and its `requires_grad` argument.
    fn rebuild_tensor(&mut self, args: &[PickleValue]) -> Result<(Tensor, bool)> {
        let [storage, offset, sizes, strides, ..] = args else {
            return Err(self.error(format!(
                "_rebuild_tensor_v2 takes at least 4 arguments, got {}",
                args.len()
            )));
        };
        let PickleValue::PersistentId(pid) = storage else {
            return Err(self.error("a tensor's storage is not a storage reference"));
        };
        let parts = pid
            .as_tuple()
            .filter(|parts| parts.len() == 5 && parts[0].as_str() == Some("storage"))
            .ok_or_else(|| {
                self.error("a storage reference is not ('storage', type, key, location, numel)")
            })?;
        let (_, type_name) = parts[1]
            .as_global()
            .ok_or_else(|| self.error("a storage type is not a global"))?;
        let dtype = DType::from_torch_storage_name(type_name)
            .map_err(|error| self.error(error.to_string()))?;
        let key = parts[2]
            .as_str()
            .ok_or_else(|| self.error("a storage key is not a string"))?
            .to_string();
        let numel = self.non_negative(&parts[4], "storage element count")?;
        let offset = self.non_negative(offset, "storage offset")?;
        let sizes = self.int_tuple(sizes, "size")?;
        let strides = self.int_tuple(strides, "stride")?;
        let storage = self.storage(&key, dtype, numel)?;
        let tensor = Tensor::from_storage(storage, offset, sizes, strides)
            .map_err(|error| self.error(error.to_string()))?;
        let requires_grad = matches!(args.get(4), Some(PickleValue::Bool(true)));
        Ok((tensor, requires_grad))
    }

    /// The storage `data/KEY`, read once and shared by every tensor that names it.
    fn storage(&mut self, key: &str, dtype: DType, numel: usize) -> Result<Storage> {
        if let Some(existing) = self.storages.get(key) {
            if existing.dtype() != dtype {
                return Err(self.error(format!("storage {key} is used with two dtypes")));
            }
            return Ok(existing.clone());
        }
        if key.contains('/') || key.contains("..") {
            return Err(self.error(format!("bad storage key '{key}'")));
        }
        let record = format!("data/{key}");
        let size = self
            .archive
            .record_size(&record)
            .ok_or_else(|| self.error(format!("the storage record {record} is missing")))?;
        let needed = numel
            .checked_mul(dtype.item_size())
            .ok_or_else(|| self.error(format!("storage {key}: {numel} elements overflow")))?;
        if size != needed as u64 {
            return Err(self.error(format!(
                "storage {key} holds {size} bytes but {numel} {} elements need {needed}",
                dtype.name()
            )));
        }
        let storage = match self.archive.stored_shared(&record)? {
            Some((bytes, range)) => {
                Storage::from_shared_bytes(dtype, bytes, range, self.little_endian)
            }
            None => Storage::from_bytes(
                dtype,
                &self.archive.read_record(&record)?,
                self.little_endian,
            ),
        }
        .map_err(|error| self.error(error.to_string()))?;
        self.storages.insert(key.to_string(), storage.clone());
        Ok(storage)
    }

    fn non_negative(&self, value: &PickleValue, what: &str) -> Result<usize> {
        value
            .as_int()
            .and_then(|value| usize::try_from(value).ok())
            .ok_or_else(|| self.error(format!("the {what} is not a non-negative int")))
    }

    fn int_tuple(&self, value: &PickleValue, what: &str) -> Result<Vec<usize>> {
        value
            .as_tuple()
            .ok_or_else(|| self.error(format!("the tensor {what} is not a tuple")))?
            .iter()
            .map(|item| self.non_negative(item, what))
            .collect()
    }
}

/// The element type of a list or dict's values: the one type they all have, else `Any`.
fn common_type(values: &[IValue]) -> Type {
    let mut types = values.iter().map(IValue::type_of);
    match types.next() {
        None => Type::Any,
        Some(first) => {
            if types.all(|other| other == first) {
                first
            } else {
                Type::Any
            }
        }
    }
}
