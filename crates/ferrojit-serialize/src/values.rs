//! Converts between pickled data (`PickleValue`) and runtime values (`IValue`), the part of
//! loading and saving shared by TorchScript archives and `torch.save` files: tensors over
//! `data/N` storages, containers, devices, type tags and script objects.

use std::collections::HashMap;
use std::sync::Arc;

use ferrojit_ir::{ClassType, Type};
use ferrojit_runtime::ivalue::{DictValue, IValue, ListValue, TupleValue};
use ferrojit_runtime::object::{MethodSource, Object};
use ferrojit_runtime::Device;
use ferrojit_tensor::{Complex128, DType, Storage, Tensor, TensorError};

use crate::load_error::LoadError;
use ferrojit_archive::pickle_value::PickleValue;
use ferrojit_archive::unpickler::{unpickle, UnpicklerOptions};
use ferrojit_archive::zip_archive::ArchiveReader;

/// Containers nested deeper than this are refused: the conversion recurses once per level.
pub const MAX_VALUE_DEPTH: usize = 500;

/// Resolves `__torch__.…` classes met in a pickle to class types.
pub trait ClassResolver {
    fn resolve(&self, qualified_name: &str) -> Result<Arc<ClassType>, LoadError>;
    fn methods(&self) -> Arc<dyn MethodSource>;
    /// The enum class `qualified_name` (`class Color(Enum)` in the archive's code): its
    /// members' names and values, and the values' type. `None`: no such enum.
    fn resolve_enum(&self, _qualified_name: &str) -> Result<Option<EnumMembers>, LoadError> {
        Ok(None)
    }
}

/// An enum class's members (name, value) in declaration order, and the values' type.
pub struct EnumMembers {
    pub members: Vec<(String, IValue)>,
    pub value_type: Type,
}

/// Unpickles archive record `record` with `options`' allowlist, under the archive's value
/// budget for it ([`ArchiveReader::pickle_value_budget`]).
pub fn unpickle_record(
    archive: &ArchiveReader,
    record: &str,
    options: UnpicklerOptions,
) -> Result<PickleValue, LoadError> {
    let bytes = archive.read_record(record)?;
    let options = UnpicklerOptions {
        max_value_bytes: Some(archive.pickle_value_budget(record)),
        ..options
    };
    unpickle(&bytes, &options).map_err(|source| LoadError::Pickle {
        record: record.to_string(),
        source,
    })
}

/// One tensor of the legacy format's tensor table (`model.json`) with its `requiresGrad`,
/// which belongs to each handle made from the entry rather than to the tensor value.
#[derive(Clone)]
pub struct TableTensor {
    pub tensor: Tensor,
    pub requires_grad: bool,
}

impl TableTensor {
    /// A new handle on the entry's tensor, requiring grad as the entry says.
    pub fn to_ivalue(&self) -> IValue {
        IValue::tensor_with_requires_grad(self.tensor.clone(), self.requires_grad)
    }
}

/// Reads one pickle's values, loading storages from `<storage_folder>/<key>` records.
pub struct ValueReader<'a> {
    archive: &'a ArchiveReader,
    pickle_record: String,
    storage_folder: String,
    little_endian: bool,
    storages: HashMap<String, Storage>,
    converted: HashMap<usize, IValue>,
    classes: Option<&'a dyn ClassResolver>,
    /// Objects whose `__setstate__` must run once the whole tree exists, in creation order.
    pending_setstate: Vec<(Arc<Object>, IValue)>,
    /// The legacy format's tensor table (`model.json`), which `build_tensor_from_id` indexes.
    tensor_table: Vec<TableTensor>,
}

impl<'a> ValueReader<'a> {
    pub fn new(
        archive: &'a ArchiveReader,
        pickle_record: &str,
        storage_folder: &str,
        classes: Option<&'a dyn ClassResolver>,
    ) -> Result<ValueReader<'a>, LoadError> {
        let little_endian = read_byte_order(archive)?;
        Ok(ValueReader {
            archive,
            pickle_record: pickle_record.to_string(),
            storage_folder: storage_folder.to_string(),
            little_endian,
            storages: HashMap::new(),
            converted: HashMap::new(),
            classes,
            pending_setstate: Vec::new(),
            tensor_table: Vec::new(),
        })
    }

    /// Gives `build_tensor_from_id(N)` (legacy `attributes.pkl`) its tensor table.
    pub fn with_tensor_table(mut self, tensors: Vec<TableTensor>) -> ValueReader<'a> {
        self.tensor_table = tensors;
        self
    }

    fn error(&self, message: impl Into<String>) -> LoadError {
        LoadError::format(&self.pickle_record, message)
    }

    /// Objects whose class defines `__setstate__`, with the state to pass, in load order.
    pub fn take_pending_setstate(&mut self) -> Vec<(Arc<Object>, IValue)> {
        std::mem::take(&mut self.pending_setstate)
    }

    /// Converts a whole pickled value.
    pub fn convert(&mut self, value: &PickleValue) -> Result<IValue, LoadError> {
        self.convert_at(value, 0)
    }

    fn convert_at(&mut self, value: &PickleValue, depth: usize) -> Result<IValue, LoadError> {
        if depth > MAX_VALUE_DEPTH {
            return Err(self.error(format!(
                "values nested deeper than {MAX_VALUE_DEPTH} levels"
            )));
        }
        if let Some(id) = value.ptr_id() {
            if let Some(done) = self.converted.get(&id) {
                return Ok(done.clone());
            }
        }
        let result = match value {
            PickleValue::None => IValue::None,
            PickleValue::Bool(b) => IValue::Bool(*b),
            PickleValue::Int(i) => IValue::Int(*i),
            PickleValue::Float(f) => IValue::Double(*f),
            PickleValue::Str(s) => IValue::Str(Arc::from(&**s)),
            PickleValue::Bytes(_) => return Err(self.error("raw bytes values are not supported")),
            PickleValue::Tuple(items) => {
                let mut converted = Vec::with_capacity(items.len());
                for item in items.iter() {
                    converted.push(self.convert_at(item, depth + 1)?);
                }
                IValue::Tuple(TupleValue::new(converted))
            }
            PickleValue::List(items) => {
                // Borrowed, not cloned: conversion only reads pickle values, and a copy of
                // a million-element list is memory a hostile file could make us spend.
                let items = items.borrow();
                let mut converted = Vec::with_capacity(items.len());
                for item in items.iter() {
                    converted.push(self.convert_at(item, depth + 1)?);
                }
                let element_type = unify_types(converted.iter().map(IValue::type_of));
                IValue::List(ListValue::new(element_type, converted))
            }
            PickleValue::Dict(entries) => {
                let entries = entries.borrow();
                self.convert_dict(&entries, depth)?
            }
            PickleValue::Reduce(reduce) => {
                let (callable, args) = {
                    let data = reduce.borrow();
                    (data.callable.clone(), data.args.clone())
                };
                self.convert_reduce(&callable, &args, depth)?
            }
            PickleValue::Object(object) => {
                let (module, name, state, dict_items) = {
                    let data = object.borrow();
                    (
                        data.module.clone(),
                        data.name.clone(),
                        data.state.clone(),
                        data.dict_items.clone(),
                    )
                };
                if !dict_items.is_empty() {
                    return Err(
                        self.error(format!("object of class {module}.{name} has dict items"))
                    );
                }
                self.convert_object(&module, &name, state.as_ref(), depth)?
            }
            PickleValue::Global(global) => {
                return Err(self.error(format!(
                    "global {}.{} used as a value",
                    global.module, global.name
                )));
            }
            PickleValue::PersistentId(_) => {
                return Err(self.error("a persistent id outside a tensor rebuild"));
            }
        };
        if let Some(id) = value.ptr_id() {
            self.converted.insert(id, result.clone());
        }
        Ok(result)
    }

    fn convert_dict(
        &mut self,
        entries: &[(PickleValue, PickleValue)],
        depth: usize,
    ) -> Result<IValue, LoadError> {
        let mut keys = Vec::with_capacity(entries.len());
        let mut values = Vec::with_capacity(entries.len());
        for (key, value) in entries {
            keys.push(self.convert_at(key, depth + 1)?);
            values.push(self.convert_at(value, depth + 1)?);
        }
        let key_type = unify_types(keys.iter().map(IValue::type_of));
        let value_type = unify_types(values.iter().map(IValue::type_of));
        let dict = DictValue::new(key_type, value_type);
        for (key, value) in keys.into_iter().zip(values) {
            if !matches!(
                key,
                IValue::Str(_)
                    | IValue::Int(_)
                    | IValue::Double(_)
                    | IValue::Bool(_)
                    | IValue::Tensor(_)
            ) {
                return Err(self.error(format!(
                    "dict key of type {} is not supported",
                    key.tag_name()
                )));
            }
            dict.insert(key, value);
        }
        Ok(IValue::Dict(dict))
    }

    fn convert_reduce(
        &mut self,
        callable: &PickleValue,
        args: &PickleValue,
        depth: usize,
    ) -> Result<IValue, LoadError> {
        let Some((module, name)) = callable.as_global() else {
            return Err(self.error(format!("REDUCE on a {}", callable.kind_name())));
        };
        if ferrojit_archive::pickle_value::is_enum_class_call(callable, args) {
            return self.enum_member(module, name, args, depth);
        }
        let args = args
            .as_tuple()
            .ok_or_else(|| self.error("REDUCE arguments are not a tuple"))?;
        match (module, name) {
            ("torch._utils", "_rebuild_tensor_v2") => self.rebuild_tensor(args),
            ("torch._utils", "_rebuild_parameter") => {
                let tensor = args
                    .first()
                    .ok_or_else(|| self.error("_rebuild_parameter without a tensor"))?;
                let tensor = self.convert_at(tensor, depth + 1)?;
                // The parameter is a new handle on the tensor (PyTorch's `_make_subclass`),
                // requiring grad as its own argument says, else as the tensor did.
                let requires_grad = match args.get(1) {
                    Some(PickleValue::Bool(requires_grad)) => *requires_grad,
                    _ => tensor.to_tensor_cell()?.requires_grad(),
                };
                Ok(IValue::tensor_with_requires_grad(
                    tensor.into_tensor()?,
                    requires_grad,
                ))
            }
            ("torch.jit._pickle", "restore_type_tag") => {
                let value = args
                    .first()
                    .ok_or_else(|| self.error("restore_type_tag without a value"))?;
                self.convert_at(value, depth + 1)
            }
            (
                "torch.jit._pickle",
                "build_intlist" | "build_tensorlist" | "build_doublelist" | "build_boollist",
            ) => {
                let value = args
                    .first()
                    .ok_or_else(|| self.error(format!("{name} without a list")))?;
                self.convert_at(value, depth + 1)
            }
            ("torch.jit._pickle", "build_tensor_from_id") => {
                let index = args
                    .first()
                    .and_then(PickleValue::as_int)
                    .ok_or_else(|| self.error("build_tensor_from_id without an integer id"))?;
                usize::try_from(index)
                    .ok()
                    .and_then(|index| self.tensor_table.get(index))
                    .map(TableTensor::to_ivalue)
                    .ok_or_else(|| {
                        self.error(format!(
                            "build_tensor_from_id({index}) is outside the tensor table ({} tensors)",
                            self.tensor_table.len()
                        ))
                    })
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
            // Python's pickling of a complex number: `complex(re, im)` (ints are accepted as
            // Python's constructor accepts them).
            ("builtins", "complex") => {
                let part = |index: usize| match args.get(index) {
                    Some(PickleValue::Float(value)) => Some(*value),
                    Some(PickleValue::Int(value)) => Some(*value as f64),
                    None => Some(0.0),
                    Some(_) => None,
                };
                match (part(0), part(1)) {
                    (Some(re), Some(im)) if args.len() <= 2 => {
                        Ok(IValue::Complex(Complex128::new(re, im)))
                    }
                    _ => Err(self.error("builtins.complex takes up to two numbers")),
                }
            }
            ("collections", "OrderedDict") => {
                // The unpickler turns OrderedDict() into a dict already; a call with items
                // (a list of pairs) can still appear.
                Ok(IValue::Dict(DictValue::new(Type::Str, Type::Any)))
            }
            _ => Err(self.error(format!("unsupported global {module}.{name}"))),
        }
    }

    /// `__torch__.Color` applied to a member's value: the member with that value, as
    /// PyTorch's unpickler finds it (by value, among the class's members in order).
    fn enum_member(
        &mut self,
        module: &str,
        name: &str,
        value: &PickleValue,
        depth: usize,
    ) -> Result<IValue, LoadError> {
        let qualified = format!("{module}.{name}");
        let classes = self
            .classes
            .ok_or_else(|| self.error(format!("enum {qualified} is not allowed here")))?;
        let Some(enum_type) = classes.resolve_enum(&qualified)? else {
            return Err(self.error(format!(
                "{qualified} is applied to a bare value, but the archive's code defines no enum of that name"
            )));
        };
        let value = self.convert_at(value, depth + 1)?;
        let same = |member: &IValue| match (member, &value) {
            (IValue::Str(a), IValue::Str(b)) => a == b,
            (IValue::Int(a), IValue::Int(b)) => a == b,
            (IValue::Double(a), IValue::Double(b)) => a == b,
            _ => false,
        };
        let Some((member, member_value)) = enum_type.members.iter().find(|(_, v)| same(v)) else {
            return Err(self.error(format!("{qualified} has no member with value {value}")));
        };
        let class = ferrojit_runtime::interpreter::code::enum_runtime_class(
            &qualified,
            enum_type.value_type.clone(),
        );
        Ok(IValue::Object(Object::with_slots(
            class,
            vec![
                IValue::Str(Arc::from(member.as_str())),
                member_value.clone(),
            ],
            classes.methods(),
        )))
    }

    /// `_rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)`: a new tensor
    /// handle, its `requires_grad` on the handle (the tensor value has none).
    fn rebuild_tensor(&mut self, args: &[PickleValue]) -> Result<IValue, LoadError> {
        if args.len() < 4 {
            return Err(self.error(format!(
                "_rebuild_tensor_v2 takes at least 4 arguments, got {}",
                args.len()
            )));
        }
        let storage = match &args[0] {
            PickleValue::PersistentId(pid) => self.storage_reference(pid)?,
            other => {
                return Err(self.error(format!(
                    "tensor storage is a {}, not a persistent id",
                    other.kind_name()
                )))
            }
        };
        let offset = self.non_negative(&args[1], "storage offset")?;
        let sizes = self.int_tuple(&args[2], "size")?;
        let strides = self.int_tuple(&args[3], "stride")?;
        // The view is checked against the declared element count before the storage is
        // read, so a bad view is refused without decoding (and copying) its storage.
        check_view_fits(&storage, offset, &sizes, &strides).map_err(|source| {
            LoadError::Tensor {
                context: self.pickle_record.clone(),
                source,
            }
        })?;
        let storage = self.load_storage(storage)?;
        let tensor = Tensor::from_storage(storage, offset, sizes, strides).map_err(|source| {
            LoadError::Tensor {
                context: self.pickle_record.clone(),
                source,
            }
        })?;
        let requires_grad = matches!(args.get(4), Some(PickleValue::Bool(true)));
        Ok(IValue::tensor_with_requires_grad(tensor, requires_grad))
    }

    fn non_negative(&self, value: &PickleValue, what: &str) -> Result<usize, LoadError> {
        match value {
            PickleValue::Int(i) if *i >= 0 => {
                usize::try_from(*i).map_err(|_| self.error(format!("{what} {i} is too large")))
            }
            PickleValue::Int(i) => Err(self.error(format!("{what} {i} is negative"))),
            other => Err(self.error(format!("{what} is a {}, not an int", other.kind_name()))),
        }
    }

    fn int_tuple(&self, value: &PickleValue, what: &str) -> Result<Vec<usize>, LoadError> {
        let items = value.as_tuple().ok_or_else(|| {
            self.error(format!(
                "tensor {what} is a {}, not a tuple",
                value.kind_name()
            ))
        })?;
        items
            .iter()
            .map(|item| self.non_negative(item, what))
            .collect()
    }

    /// Reads `('storage', torch.FloatStorage, key, location, numel)`, checking everything
    /// but the record itself.
    fn storage_reference(&self, pid: &PickleValue) -> Result<StorageReference, LoadError> {
        let parts = pid
            .as_tuple()
            .ok_or_else(|| self.error("persistent id is not a tuple"))?;
        // PyTorch ≤ 1.5 appended a sixth item, the view metadata, always None in TorchScript
        // archives (it described storage views of the old torch.save format).
        let legacy_view = parts.len() == 6 && matches!(parts[5], PickleValue::None);
        if !(parts.len() == 5 || legacy_view) || parts[0].as_str() != Some("storage") {
            return Err(self.error("persistent id is not ('storage', type, key, location, numel)"));
        }
        let (_, type_name) = parts[1]
            .as_global()
            .ok_or_else(|| self.error("storage type is not a global"))?;
        let dtype =
            DType::from_torch_storage_name(type_name).map_err(|source| LoadError::Tensor {
                context: self.pickle_record.clone(),
                source,
            })?;
        let key = parts[2]
            .as_str()
            .ok_or_else(|| self.error("storage key is not a string"))?
            .to_string();
        // Storages are loaded onto the CPU; a location naming no real device is refused.
        let location = parts[3]
            .as_str()
            .ok_or_else(|| self.error("storage location is not a string"))?;
        Device::parse(location)
            .map_err(|_| self.error(format!("storage {key} is on unknown device '{location}'")))?;
        let numel = self.non_negative(&parts[4], "storage element count")?;
        let byte_size = numel.checked_mul(dtype.item_size()).ok_or_else(|| {
            self.error(format!(
                "storage {key}: {numel} elements overflow the byte size"
            ))
        })?;
        Ok(StorageReference {
            key,
            dtype,
            numel,
            byte_size,
        })
    }

    /// The storage a reference names: decoded from its record on first use, shared after.
    fn load_storage(&mut self, reference: StorageReference) -> Result<Storage, LoadError> {
        let StorageReference {
            key,
            dtype,
            numel,
            byte_size,
        } = reference;
        if let Some(existing) = self.storages.get(&key) {
            if existing.dtype() != dtype {
                return Err(self.error(format!("storage {key} is used with two dtypes")));
            }
            return Ok(existing.clone());
        }
        let record = format!("{}/{}", self.storage_folder, key);
        let actual = self
            .archive
            .record_size(&record)
            .ok_or_else(|| LoadError::format(&record, "storage record is missing"))?;
        if actual != byte_size as u64 {
            return Err(LoadError::format(
                &record,
                format!(
                    "storage holds {actual} bytes but {numel} {} elements need {byte_size}",
                    dtype.name()
                ),
            ));
        }
        // STORED records (all of PyTorch's) are borrowed from the mapped file without a copy.
        let storage = match self.archive.stored_shared(&record)? {
            Some((bytes, range)) => {
                Storage::from_shared_bytes(dtype, bytes, range, self.little_endian)
            }
            None => {
                let bytes = self.archive.record_bytes(&record)?;
                Storage::from_bytes(dtype, &bytes, self.little_endian)
            }
        }
        .map_err(|source| LoadError::Tensor {
            context: record.clone(),
            source,
        })?;
        self.storages.insert(key, storage.clone());
        Ok(storage)
    }

    fn convert_object(
        &mut self,
        module: &str,
        name: &str,
        state: Option<&PickleValue>,
        depth: usize,
    ) -> Result<IValue, LoadError> {
        let qualified = format!("{module}.{name}");
        let classes = self
            .classes
            .ok_or_else(|| self.error(format!("class {qualified} is not allowed here")))?;
        let class = classes.resolve(&qualified)?;
        let object = Object::new(class.clone(), classes.methods());
        let Some(state) = state else {
            return Err(self.error(format!("object of class {qualified} has no state")));
        };
        if class.has_method("__setstate__") {
            let state = self.convert_at(state, depth + 1)?;
            self.pending_setstate.push((object.clone(), state));
            return Ok(IValue::Object(object));
        }
        let PickleValue::Dict(entries) = state else {
            return Err(self.error(format!(
                "state of {qualified} is a {}, not a dict",
                state.kind_name()
            )));
        };
        let entries = entries.borrow().clone();
        for (key, value) in &entries {
            let attribute = key.as_str().ok_or_else(|| {
                self.error(format!("attribute name of {qualified} is not a string"))
            })?;
            let declared = class.attribute(attribute).ok_or_else(|| {
                self.error(format!(
                    "{qualified} has no attribute '{attribute}' declared in its code"
                ))
            })?;
            let converted = self.convert_at(value, depth + 1)?;
            let converted = retype_container(converted, &declared.ty);
            object.set_attr(attribute, converted)?;
        }
        Ok(IValue::Object(object))
    }
}

/// A storage named by a persistent id, checked but not read yet.
struct StorageReference {
    key: String,
    dtype: DType,
    /// Declared element count.
    numel: usize,
    /// `numel` × item size (checked not to overflow).
    byte_size: usize,
}

/// Whether a view with this geometry stays inside a storage of `storage.numel` elements:
/// the rules and errors of `Tensor::from_storage`, applied before the storage exists.
/// Zero-size views are always valid.
fn check_view_fits(
    storage: &StorageReference,
    offset: usize,
    sizes: &[usize],
    strides: &[usize],
) -> Result<(), TensorError> {
    if sizes.len() != strides.len() {
        return Err(TensorError::InvalidArgument(format!(
            "mismatch in length of strides and shape: {} vs {}",
            strides.len(),
            sizes.len()
        )));
    }
    if ferrojit_tensor::shape::checked_numel(sizes)? == 0 {
        return Ok(());
    }
    // Largest element index the view reaches; None when it overflows.
    let last = sizes
        .iter()
        .zip(strides)
        .try_fold(offset, |last, (&size, &stride)| {
            (size - 1)
                .checked_mul(stride)
                .and_then(|extent| last.checked_add(extent))
        });
    if last.is_some_and(|last| last < storage.numel) {
        return Ok(());
    }
    let item_size = storage.dtype.item_size();
    Err(TensorError::StorageOutOfBounds {
        sizes: sizes.to_vec(),
        strides: strides.to_vec(),
        offset,
        item_size,
        required_bytes: last.map_or(u128::MAX, |last| (last as u128 + 1) * item_size as u128),
        storage_bytes: storage.byte_size,
    })
}

/// Gives a freshly unpickled list or dict the element types its declaration names, so that
/// `List[int]` attributes are `int[]` lists even when empty.
pub(crate) fn retype_container(value: IValue, declared: &Type) -> IValue {
    match (&value, declared) {
        (IValue::List(list), Type::List(element)) if list.element_type() != element.as_ref() => {
            IValue::List(ListValue::new((**element).clone(), list.to_vec()))
        }
        (IValue::Dict(dict), Type::Dict(key, value_type))
            if dict.key_type() != key.as_ref() || dict.value_type() != value_type.as_ref() =>
        {
            let retyped = DictValue::new((**key).clone(), (**value_type).clone());
            for (k, v) in dict.entries() {
                retyped.insert(k, v);
            }
            IValue::Dict(retyped)
        }
        _ => value,
    }
}

/// The common type of a container's elements: their type if all agree, `Any` otherwise
/// (and for empty containers, whose type a declaration or type tag supplies).
pub fn unify_types(mut types: impl Iterator<Item = Type>) -> Type {
    let Some(first) = types.next() else {
        return Type::Any;
    };
    for ty in types {
        if ty != first {
            return Type::Any;
        }
    }
    first
}

/// Reads the `byteorder` record: `little` (or absent, for old files) or `big`.
pub fn read_byte_order(archive: &ArchiveReader) -> Result<bool, LoadError> {
    if !archive.has_record("byteorder") {
        return Ok(true);
    }
    let bytes = archive.read_record("byteorder")?;
    match bytes.as_slice() {
        b"little" => Ok(true),
        b"big" => Ok(false),
        other => Err(LoadError::format(
            "byteorder",
            format!(
                "unsupported byte order '{}'",
                String::from_utf8_lossy(&other[..other.len().min(32)])
            ),
        )),
    }
}

/// Writes values as pickles, collecting the storages their tensors reference.
///
/// Two modes: `torch.save` files (plain containers; objects refused) and TorchScript
/// archives ([`ValueWriter::for_torchscript`]: objects as `GLOBAL '__torch__.… Name'`
/// EMPTY_TUPLE NEWOBJ + state BUILD, typed lists and dicts tagged as PyTorch's jit
/// pickler tags them, shared lists, dicts, tuples and objects written once).
#[derive(Default)]
pub struct ValueWriter {
    storages: Vec<Storage>,
    /// One persistent id per storage, shared so the pickler writes it once and memoizes it.
    storage_ids: Vec<PickleValue>,
    torchscript: bool,
    /// Already converted shared values (lists, dicts, tuples, objects), by address.
    shared: HashMap<usize, PickleValue>,
    /// One `PickleValue` per distinct string, so the pickler memoizes strings by content.
    strings: HashMap<String, PickleValue>,
    /// Qualified names of the classes of the objects written, in first-seen order.
    classes: Vec<String>,
}

impl ValueWriter {
    pub fn new() -> ValueWriter {
        ValueWriter::default()
    }

    /// A writer for TorchScript archives (`data.pkl`, `constants.pkl`).
    pub fn for_torchscript() -> ValueWriter {
        ValueWriter {
            torchscript: true,
            ..ValueWriter::default()
        }
    }

    /// The storages referenced so far; storage `i` is written as record `data/i`.
    pub fn storages(&self) -> &[Storage] {
        &self.storages
    }

    /// The classes of the objects written so far, in first-seen order.
    pub fn classes(&self) -> &[String] {
        &self.classes
    }

    /// The shared persistent id of `storage`, assigning it the next key on first sight.
    fn storage_id(&mut self, storage: &Storage) -> PickleValue {
        if let Some(index) = self
            .storages
            .iter()
            .position(|s| Storage::ptr_eq(s, storage))
        {
            return self.storage_ids[index].clone();
        }
        let key = self.storages.len();
        let pid = PickleValue::persistent_id(PickleValue::tuple(vec![
            self.string("storage"),
            PickleValue::global("torch", storage.dtype().to_torch_storage_name()),
            self.string(&key.to_string()),
            self.string("cpu"),
            PickleValue::Int(storage.len_elements() as i64),
        ]));
        self.storages.push(storage.clone());
        self.storage_ids.push(pid.clone());
        pid
    }

    fn string(&mut self, text: &str) -> PickleValue {
        if !self.torchscript {
            return PickleValue::str(text);
        }
        self.strings
            .entry(text.to_string())
            .or_insert_with(|| PickleValue::str(text))
            .clone()
    }

    /// Converts a value to its pickled form. `what` names the file for error messages.
    pub fn convert(&mut self, value: &IValue, what: &str) -> Result<PickleValue, LoadError> {
        self.convert_at(value, None, what, 0)
    }

    fn shared_key(value: &IValue) -> Option<usize> {
        match value {
            IValue::List(list) => Some(Arc::as_ptr(list) as *const u8 as usize),
            IValue::Dict(dict) => Some(Arc::as_ptr(dict) as *const u8 as usize),
            IValue::Tuple(tuple) => Some(Arc::as_ptr(tuple) as *const u8 as usize),
            IValue::Object(object) => Some(Arc::as_ptr(object) as *const u8 as usize),
            _ => None,
        }
    }

    fn convert_at(
        &mut self,
        value: &IValue,
        declared: Option<&Type>,
        what: &str,
        depth: usize,
    ) -> Result<PickleValue, LoadError> {
        if depth > MAX_VALUE_DEPTH {
            return Err(LoadError::format(
                what,
                format!("values nested deeper than {MAX_VALUE_DEPTH} levels"),
            ));
        }
        let key = if self.torchscript {
            Self::shared_key(value)
        } else {
            None
        };
        if let Some(key) = key {
            if let Some(done) = self.shared.get(&key) {
                return Ok(done.clone());
            }
        }
        let result = match value {
            IValue::None => PickleValue::None,
            IValue::Bool(b) => PickleValue::Bool(*b),
            IValue::Int(i) => PickleValue::Int(*i),
            IValue::Double(f) => PickleValue::Float(*f),
            // Python pickles a complex as `builtins.complex(re, im)`, which PyTorch's
            // unpickler reads back too.
            IValue::Complex(c) => PickleValue::reduce(
                PickleValue::global("builtins", "complex"),
                vec![PickleValue::Float(c.re), PickleValue::Float(c.im)],
            ),
            IValue::Str(s) => self.string(s),
            IValue::Tensor(cell) => self.tensor(&cell.get(), cell.requires_grad()),
            IValue::Device(device) => {
                let text = self.string(&device.to_string());
                PickleValue::reduce(PickleValue::global("torch", "device"), vec![text])
            }
            IValue::List(list) => {
                let element_type = match (list.element_type(), declared) {
                    (Type::Any, Some(Type::List(declared))) => (**declared).clone(),
                    (own, _) => own.clone(),
                };
                let mut items = Vec::new();
                for item in list.to_vec() {
                    items.push(self.convert_at(&item, Some(&element_type), what, depth + 1)?);
                }
                let plain = PickleValue::list(items);
                if self.torchscript {
                    let builder = match element_type {
                        Type::Int => Some("build_intlist"),
                        Type::Float => Some("build_doublelist"),
                        Type::Bool => Some("build_boollist"),
                        Type::Tensor => Some("build_tensorlist"),
                        _ => None,
                    };
                    match builder {
                        Some(builder) => PickleValue::reduce(
                            PickleValue::global("torch.jit._pickle", builder),
                            vec![plain],
                        ),
                        None => {
                            let tag = self.string(&Type::list(element_type).annotation_str());
                            PickleValue::reduce(
                                PickleValue::global("torch.jit._pickle", "restore_type_tag"),
                                vec![plain, tag],
                            )
                        }
                    }
                } else {
                    plain
                }
            }
            IValue::Tuple(tuple) => {
                let element_types: Vec<Option<Type>> = match declared {
                    Some(Type::Tuple(types)) if types.len() == tuple.items.len() => {
                        types.iter().cloned().map(Some).collect()
                    }
                    _ => vec![None; tuple.items.len()],
                };
                let mut items = Vec::new();
                for (item, ty) in tuple.items.iter().zip(&element_types) {
                    items.push(self.convert_at(item, ty.as_ref(), what, depth + 1)?);
                }
                PickleValue::tuple(items)
            }
            IValue::Dict(dict) => {
                let (key_type, value_type) = match (dict.key_type(), dict.value_type(), declared) {
                    (Type::Any, _, Some(Type::Dict(k, v)))
                    | (_, Type::Any, Some(Type::Dict(k, v))) => ((**k).clone(), (**v).clone()),
                    (k, v, _) => (k.clone(), v.clone()),
                };
                let mut items = Vec::new();
                for (key, item) in dict.entries() {
                    items.push((
                        self.convert_at(&key, Some(&key_type), what, depth + 1)?,
                        self.convert_at(&item, Some(&value_type), what, depth + 1)?,
                    ));
                }
                let plain = PickleValue::dict(items);
                if self.torchscript {
                    let tag = self.string(&Type::dict(key_type, value_type).annotation_str());
                    PickleValue::reduce(
                        PickleValue::global("torch.jit._pickle", "restore_type_tag"),
                        vec![plain, tag],
                    )
                } else {
                    plain
                }
            }
            IValue::Object(object) => {
                if !self.torchscript {
                    return Err(LoadError::format(
                        what,
                        format!(
                            "cannot write an object of class {} to a torch.save file",
                            object.class().qualified_name()
                        ),
                    ));
                }
                let declared_enum = match declared {
                    Some(Type::Enum(_)) => true,
                    Some(Type::Optional(inner)) => matches!(**inner, Type::Enum(_)),
                    _ => false,
                };
                if declared_enum {
                    return self.enum_member(object, what, depth);
                }
                return self.object(object, key, what, depth);
            }
            IValue::Future(_) => {
                return Err(LoadError::format(what, "cannot write a Future"));
            }
            IValue::Generator(_) => {
                return Err(LoadError::format(what, "cannot write a Generator"));
            }
            IValue::Uninitialized => {
                return Err(LoadError::format(
                    what,
                    "cannot write an uninitialized value",
                ))
            }
        };
        if let Some(key) = key {
            self.shared.insert(key, result.clone());
        }
        Ok(result)
    }

    /// An enum member as PyTorch writes it: `GLOBAL '<qualifier> <Enum>'`, the member's
    /// value, REDUCE (the class applied to the value, no argument tuple).
    fn enum_member(
        &mut self,
        member: &Arc<Object>,
        what: &str,
        depth: usize,
    ) -> Result<PickleValue, LoadError> {
        let qualified = member.class().qualified_name().to_string();
        let (module, name) = qualified
            .rsplit_once('.')
            .ok_or_else(|| LoadError::format(what, format!("enum {qualified} has no qualifier")))?;
        let value = member.get_attr("value")?;
        let value = self.convert_at(&value, None, what, depth + 1)?;
        Ok(PickleValue::enum_member(module, name, value))
    }

    /// `GLOBAL '<qualifier> <Name>'` EMPTY_TUPLE NEWOBJ, then the state and BUILD: the
    /// result of `__getstate__` when the class defines it, else the attribute dict.
    fn object(
        &mut self,
        object: &Arc<Object>,
        key: Option<usize>,
        what: &str,
        depth: usize,
    ) -> Result<PickleValue, LoadError> {
        let class = object.class().clone();
        let qualified = class.qualified_name().to_string();
        let (module, name) = qualified.rsplit_once('.').ok_or_else(|| {
            LoadError::format(what, format!("class {qualified} has no qualifier"))
        })?;
        if !self.classes.contains(&qualified) {
            self.classes.push(qualified.clone());
        }
        let pickled = PickleValue::object(module, name, vec![]);
        if let Some(key) = key {
            self.shared.insert(key, pickled.clone());
        }
        let state = if class.has_method("__getstate__") {
            let state = ferrojit_runtime::module::Module::new(object.clone())
                .run_method("__getstate__", vec![])?;
            self.convert_at(&state, None, what, depth + 1)?
        } else {
            let slots = object.slots();
            let mut items = Vec::new();
            for (index, attribute) in class.attributes().iter().enumerate() {
                let value = slots.get(index).cloned().unwrap_or(IValue::None);
                let key = self.string(&attribute.name);
                items.push((
                    key,
                    self.convert_at(&value, Some(&attribute.ty), what, depth + 1)?,
                ));
            }
            PickleValue::dict(items)
        };
        if let PickleValue::Object(data) = &pickled {
            data.borrow_mut().state = Some(state);
        }
        Ok(pickled)
    }

    /// `_rebuild_tensor_v2(...)` of a tensor handle whose `requires_grad` is as given.
    fn tensor(&mut self, tensor: &Tensor, requires_grad: bool) -> PickleValue {
        let pid = self.storage_id(tensor.storage());
        let ints = |values: &[usize]| {
            PickleValue::tuple(values.iter().map(|&v| PickleValue::Int(v as i64)).collect())
        };
        PickleValue::reduce(
            PickleValue::global("torch._utils", "_rebuild_tensor_v2"),
            vec![
                pid,
                PickleValue::Int(tensor.storage_offset() as i64),
                ints(tensor.sizes()),
                ints(tensor.strides()),
                PickleValue::Bool(requires_grad),
                PickleValue::reduce(PickleValue::global("collections", "OrderedDict"), vec![]),
            ],
        )
    }
}
