//! The legacy TorchScript archive format of PyTorch ≤ 1.2: `model.json` (a JSON-encoded
//! `torch.ModelDef` protobuf), `attributes.pkl`, per-module `code/*.py` and `tensors/N`.
//!
//! Layout (PyTorch's `caffe2/proto/torch.proto` and its legacy importer):
//! - `model.json`: `protoVersion` (≤ 5), `mainModule` (a `ModuleDef`) and `tensors`, the
//!   tensor table. Each `TensorDef` gives `dims`, `strides`, `offset` (in elements),
//!   `dataType` (a caffe2 `TensorProto.DataType` name or number), `requiresGrad`, `device`,
//!   `isQuantized` and `data.key`, the record holding its storage (shared by every tensor
//!   naming the same key). 64-bit integers are JSON strings (protobuf's JSON mapping);
//!   numbers are accepted too.
//! - A `ModuleDef` has a `name` (its class is `__torch__.` followed by the names of the
//!   modules on the path to it, digit-only names prefixed with `_`), `submodules`,
//!   `parameters` (`name`, `tensorId` into the tensor table, `isBuffer`), `attributes`
//!   (`name`, `type` as annotation text, `id` into the attribute table or -1 for "set by
//!   `__setstate__`"), `torchscriptArena.key` (a code file whose top-level `def`s are the
//!   class's methods) and `getStateAttributeId` (the attribute-table entry handed to
//!   `__setstate__`).
//! - `attributes.pkl`: the attribute table, a list (proto version 2) or a tuple (3 and
//!   later). Tensors in it are `torch.jit._pickle.build_tensor_from_id(N)`, entries of the
//!   tensor table; `CONSTANTS.cN` in the code also names tensor-table entry N.
//! - `libs/<qualifier>.py`: script classes the code uses (`__torch__.Foo` in `libs/__torch__.py`).
//!
//! Everything read from the file is untrusted: every field is type-checked, indices,
//! offsets, sizes and strides are bounds-checked, and a bad field is a `LoadError` naming it.

use std::collections::HashMap;
use std::sync::Arc;

use ferrojit_frontend::compilation_unit::CompilationUnit;
use ferrojit_frontend::source::SourceFile;
use ferrojit_frontend::upgraders;
use ferrojit_ir::{AttributeKind, AttributeValue, ClassType, Type};
use ferrojit_runtime::interpreter::RunOptions;
use ferrojit_runtime::ivalue::IValue;
use ferrojit_runtime::module::Module;
use ferrojit_runtime::object::{MethodSource, Object};
use ferrojit_runtime::Device;
use ferrojit_tensor::{DType, Storage, Tensor};
use serde_json::{Map, Value as Json};

use crate::import::{ArchiveClasses, CompiledMethods, LoadedModule, RegistrySchemas};
use crate::load_error::LoadError;
use crate::values::{retype_container, unpickle_record, TableTensor, ValueReader};
use ferrojit_archive::unpickler::UnpicklerOptions;
use ferrojit_archive::zip_archive::ArchiveReader;

const MODEL: &str = "model.json";

/// The newest `protoVersion` PyTorch's legacy importer accepts.
const MAX_PROTO_VERSION: i64 = 5;

/// Modules nested deeper than this are refused (the conversion recurses once per level;
/// serde_json's own nesting limit already keeps real files far below it).
const MAX_MODULE_DEPTH: usize = 64;

/// Whether `archive` is in the legacy format: a `model.json` and no `data.pkl`.
pub fn is_legacy_archive(archive: &ArchiveReader) -> bool {
    archive.has_record(MODEL) && !archive.has_record("data.pkl")
}

fn field_error(path: &str, message: impl std::fmt::Display) -> LoadError {
    LoadError::format(MODEL, format!("{path}: {message}"))
}

fn kind_of(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a bool",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

fn as_object<'j>(value: &'j Json, path: &str) -> Result<&'j Map<String, Json>, LoadError> {
    value
        .as_object()
        .ok_or_else(|| field_error(path, format!("is {}, not an object", kind_of(value))))
}

/// An int64 field: protobuf's JSON mapping writes them as strings; numbers are accepted.
fn int_value(value: &Json, path: &str) -> Result<i64, LoadError> {
    match value {
        Json::Number(number) => number
            .as_i64()
            .ok_or_else(|| field_error(path, format!("{number} is not a 64-bit integer"))),
        Json::String(text) => text
            .trim()
            .parse::<i64>()
            .map_err(|_| field_error(path, format!("'{text}' is not a 64-bit integer"))),
        other => Err(field_error(
            path,
            format!("is {}, not an integer", kind_of(other)),
        )),
    }
}

fn optional_int(
    object: &Map<String, Json>,
    key: &str,
    path: &str,
) -> Result<Option<i64>, LoadError> {
    object
        .get(key)
        .map(|value| int_value(value, &format!("{path}.{key}")))
        .transpose()
}

fn optional_str<'j>(
    object: &'j Map<String, Json>,
    key: &str,
    path: &str,
) -> Result<Option<&'j str>, LoadError> {
    field_or(object, key, path, None, "a string", |value| {
        value.as_str().map(Some)
    })
}

fn required_str<'j>(
    object: &'j Map<String, Json>,
    key: &str,
    path: &str,
) -> Result<&'j str, LoadError> {
    optional_str(object, key, path)?
        .ok_or_else(|| field_error(&format!("{path}.{key}"), "is missing"))
}

/// `object[key]` read by `extract`, or `absent` when the field is missing; a value of another
/// JSON kind is an error naming the field and the kind it should be (`wanted`).
fn field_or<'j, T>(
    object: &'j Map<String, Json>,
    key: &str,
    path: &str,
    absent: T,
    wanted: &str,
    extract: impl Fn(&'j Json) -> Option<T>,
) -> Result<T, LoadError> {
    match object.get(key) {
        None => Ok(absent),
        Some(value) => extract(value).ok_or_else(|| {
            field_error(
                &format!("{path}.{key}"),
                format!("is {}, not {wanted}", kind_of(value)),
            )
        }),
    }
}

fn optional_bool(object: &Map<String, Json>, key: &str, path: &str) -> Result<bool, LoadError> {
    field_or(object, key, path, false, "a bool", Json::as_bool)
}

/// A repeated field: absent means empty.
fn repeated<'j>(
    object: &'j Map<String, Json>,
    key: &str,
    path: &str,
) -> Result<&'j [Json], LoadError> {
    field_or(object, key, path, &[][..], "an array", |value| {
        value.as_array().map(Vec::as_slice)
    })
}

/// A `RecordRef`'s `key`, when the field is present.
fn record_key<'j>(
    object: &'j Map<String, Json>,
    key: &str,
    path: &str,
) -> Result<Option<&'j str>, LoadError> {
    match object.get(key) {
        None => Ok(None),
        Some(value) => {
            let path = format!("{path}.{key}");
            Ok(Some(required_str(as_object(value, &path)?, "key", &path)?))
        }
    }
}

fn non_negative_list(
    object: &Map<String, Json>,
    key: &str,
    path: &str,
) -> Result<Vec<usize>, LoadError> {
    repeated(object, key, path)?
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let item_path = format!("{path}.{key}[{index}]");
            let value = int_value(item, &item_path)?;
            usize::try_from(value)
                .map_err(|_| field_error(&item_path, format!("{value} is negative")))
        })
        .collect()
}

/// caffe2's `TensorProto.DataType`, by name or number.
fn data_type(value: &Json, path: &str) -> Result<DType, LoadError> {
    let name = match value {
        Json::String(name) => name.as_str(),
        Json::Number(_) => match int_value(value, path)? {
            1 => "FLOAT",
            2 => "INT32",
            3 => "BYTE",
            5 => "BOOL",
            6 => "UINT8",
            7 => "INT8",
            9 => "INT16",
            10 => "INT64",
            12 => "FLOAT16",
            13 => "DOUBLE",
            other => {
                return Err(field_error(
                    path,
                    format!("data type {other} is not supported"),
                ))
            }
        },
        other => {
            return Err(field_error(
                path,
                format!("is {}, not a data type", kind_of(other)),
            ))
        }
    };
    Ok(match name {
        "FLOAT" => DType::Float32,
        "DOUBLE" => DType::Float64,
        "FLOAT16" => DType::Float16,
        "INT64" => DType::Int64,
        "INT32" => DType::Int32,
        "INT16" => DType::Int16,
        "INT8" => DType::Int8,
        // caffe2's BYTE is uint8_t.
        "UINT8" | "BYTE" => DType::UInt8,
        "BOOL" => DType::Bool,
        other => {
            return Err(field_error(
                path,
                format!("data type {other} is not supported"),
            ))
        }
    })
}

/// A module name atom as PyTorch's legacy importer turns it into a class name component.
fn class_atom(atom: &str, path: &str) -> Result<String, LoadError> {
    let sanitized = if !atom.is_empty() && atom.bytes().all(|b| b.is_ascii_digit()) {
        format!("_{atom}")
    } else {
        atom.to_string()
    };
    let mut chars = sanitized.chars();
    let valid = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(field_error(
            path,
            format!("module name component '{atom}' is not an identifier"),
        ));
    }
    Ok(sanitized)
}

struct LegacyLoader<'a> {
    archive: &'a ArchiveReader,
    unit: Arc<CompilationUnit>,
    methods: Arc<CompiledMethods>,
    tensors: Vec<TableTensor>,
    attributes: Vec<IValue>,
    options: &'a RunOptions,
}

/// Loads a legacy archive (see the module documentation); `version` is its version record.
pub fn load_legacy_module(
    archive: &ArchiveReader,
    version: u64,
    options: &RunOptions,
) -> Result<LoadedModule, LoadError> {
    let text = archive.read_record(MODEL)?;
    let model: Json = serde_json::from_slice(&text)
        .map_err(|error| LoadError::format(MODEL, format!("not valid JSON: {error}")))?;
    let model = as_object(&model, "model")?;
    let proto_version = optional_int(model, "protoVersion", "model")?.unwrap_or(0);
    if !(0..=MAX_PROTO_VERSION).contains(&proto_version) {
        return Err(field_error(
            "model.protoVersion",
            format!(
                "proto version {proto_version} is not supported (the legacy format has 0 to {MAX_PROTO_VERSION})"
            ),
        ));
    }
    let main = model
        .get("mainModule")
        .ok_or_else(|| field_error("model.mainModule", "is missing"))?;

    let tensors = load_tensor_table(archive, model)?;

    let mut unit = CompilationUnit::new(RegistrySchemas::builtins());
    upgraders::configure(&mut unit, version)?;
    unit.set_legacy_tensor_literals(true);
    // Script classes live under libs/ (`__torch__.Foo` in libs/__torch__.py).
    let mut sources = HashMap::new();
    for name in archive.record_names() {
        if name.starts_with("libs/") && name.ends_with(".py") {
            let bytes = archive.read_record(name)?;
            let text = String::from_utf8(bytes)
                .map_err(|_| LoadError::format(name, "source code is not valid UTF-8"))?;
            sources.insert(name.clone(), SourceFile::new(name, text));
        }
    }
    unit.set_source_loader(Box::new(move |qualifier: &str| {
        sources
            .get(&format!("libs/{}.py", qualifier.replace('.', "/")))
            .cloned()
    }));
    // `CONSTANTS.cN` is entry N of the tensor table.
    unit.set_constants(
        tensors
            .iter()
            .map(|entry| {
                (
                    Some(AttributeValue::Tensor(entry.tensor.clone())),
                    Type::Tensor,
                )
            })
            .collect(),
    );
    let unit = Arc::new(unit);
    let methods = CompiledMethods::new(unit.clone());

    let attributes = if proto_version >= 2 {
        load_attribute_table(archive, &methods, &tensors)?
    } else {
        Vec::new()
    };
    let mut loader = LegacyLoader {
        archive,
        unit: unit.clone(),
        methods,
        tensors,
        attributes,
        options,
    };
    let mut stack = vec!["__torch__".to_string()];
    let root = loader.convert_module(main, "model.mainModule", &mut stack, 0)?;
    Ok(LoadedModule {
        module: Module::new(root),
        unit,
    })
}

fn load_tensor_table(
    archive: &ArchiveReader,
    model: &Map<String, Json>,
) -> Result<Vec<TableTensor>, LoadError> {
    let mut storages: HashMap<String, Storage> = HashMap::new();
    let mut tensors = Vec::new();
    for (index, def) in repeated(model, "tensors", "model")?.iter().enumerate() {
        let path = format!("model.tensors[{index}]");
        tensors.push(load_tensor(archive, def, &path, &mut storages)?);
    }
    Ok(tensors)
}

fn load_tensor(
    archive: &ArchiveReader,
    def: &Json,
    path: &str,
    storages: &mut HashMap<String, Storage>,
) -> Result<TableTensor, LoadError> {
    let def = as_object(def, path)?;
    if optional_bool(def, "isQuantized", path)? {
        return Err(field_error(
            &format!("{path}.isQuantized"),
            "quantized tensors of the legacy format are not supported",
        ));
    }
    let dims = non_negative_list(def, "dims", path)?;
    let strides = non_negative_list(def, "strides", path)?;
    let offset = optional_int(def, "offset", path)?.unwrap_or(0);
    let offset = usize::try_from(offset)
        .map_err(|_| field_error(&format!("{path}.offset"), format!("{offset} is negative")))?;
    let dtype = data_type(
        def.get("dataType")
            .ok_or_else(|| field_error(&format!("{path}.dataType"), "is missing"))?,
        &format!("{path}.dataType"),
    )?;
    // Tensors load onto the CPU, as with today's archives; the device must still name one.
    let device = required_str(def, "device", path)?;
    Device::parse(device).map_err(|_| {
        field_error(
            &format!("{path}.device"),
            format!("'{device}' is not a device"),
        )
    })?;
    let key = record_key(def, "data", path)?
        .ok_or_else(|| field_error(&format!("{path}.data"), "is missing"))?;
    let storage = match storages.get(key) {
        Some(existing) => {
            if existing.dtype() != dtype {
                return Err(field_error(
                    &format!("{path}.dataType"),
                    format!(
                        "storage {key} is used as {} and as {}",
                        existing.dtype().name(),
                        dtype.name()
                    ),
                ));
            }
            existing.clone()
        }
        None => {
            let size = archive.record_size(key).ok_or_else(|| {
                field_error(
                    &format!("{path}.data.key"),
                    format!("record {key} is missing"),
                )
            })?;
            if size % dtype.item_size() as u64 != 0 {
                return Err(LoadError::format(
                    key,
                    format!(
                        "storage holds {size} bytes, not a whole number of {} elements",
                        dtype.name()
                    ),
                ));
            }
            let storage = match archive.stored_shared(key)? {
                Some((bytes, range)) => Storage::from_shared_bytes(dtype, bytes, range, true),
                None => Storage::from_bytes(dtype, &archive.record_bytes(key)?, true),
            }
            .map_err(|source| LoadError::Tensor {
                context: key.to_string(),
                source,
            })?;
            storages.insert(key.to_string(), storage.clone());
            storage
        }
    };
    // Checks that the view (overflow included) stays inside the storage.
    let tensor = Tensor::from_storage(storage, offset, dims, strides).map_err(|source| {
        LoadError::Tensor {
            context: format!("{MODEL}: {path}"),
            source,
        }
    })?;
    // `requiresGrad` belongs to each handle made from the entry, not to the tensor value.
    Ok(TableTensor {
        tensor,
        requires_grad: optional_bool(def, "requiresGrad", path)?,
    })
}

fn load_attribute_table(
    archive: &ArchiveReader,
    methods: &Arc<CompiledMethods>,
    tensors: &[TableTensor],
) -> Result<Vec<IValue>, LoadError> {
    const RECORD: &str = "attributes.pkl";
    let pickled = unpickle_record(archive, RECORD, UnpicklerOptions::torchscript_data())?;
    let classes = ArchiveClasses {
        methods: methods.clone(),
    };
    let mut reader = ValueReader::new(archive, RECORD, "tensors", Some(&classes))?
        .with_tensor_table(tensors.to_vec());
    let table = reader.convert(&pickled)?;
    if !reader.take_pending_setstate().is_empty() {
        return Err(LoadError::format(
            RECORD,
            "objects with __setstate__ in the attribute table are not supported",
        ));
    }
    match table {
        IValue::Tuple(tuple) => Ok(tuple.items.to_vec()),
        IValue::List(list) => Ok(list.to_vec()),
        other => Err(LoadError::format(
            RECORD,
            format!(
                "the attribute table is a {}, not a tuple or list",
                other.tag_name()
            ),
        )),
    }
}

/// Adds attribute `name` to `class`, with the value the object will hold.
fn declare(
    class: &ClassType,
    values: &mut Vec<(String, IValue)>,
    name: &str,
    ty: Type,
    kind: AttributeKind,
    value: IValue,
    path: &str,
) -> Result<(), LoadError> {
    if values.iter().any(|(existing, _)| existing == name) {
        return Err(field_error(path, format!("'{name}' is defined twice")));
    }
    class.add_attribute(name, ty, kind);
    values.push((name.to_string(), value));
    Ok(())
}

impl LegacyLoader<'_> {
    fn table_entry<'t, T>(
        table: &'t [T],
        id: i64,
        path: &str,
        what: &str,
    ) -> Result<&'t T, LoadError> {
        usize::try_from(id)
            .ok()
            .and_then(|index| table.get(index))
            .ok_or_else(|| {
                field_error(
                    path,
                    format!("{id} is outside the {what} table ({} entries)", table.len()),
                )
            })
    }

    fn convert_module(
        &mut self,
        def: &Json,
        path: &str,
        stack: &mut Vec<String>,
        depth: usize,
    ) -> Result<Arc<Object>, LoadError> {
        if depth > MAX_MODULE_DEPTH {
            return Err(field_error(
                path,
                format!("modules nested deeper than {MAX_MODULE_DEPTH} levels"),
            ));
        }
        let def = as_object(def, path)?;
        let name = required_str(def, "name", path)?;
        let pushed = stack.len();
        for atom in name.split('.') {
            let atom = class_atom(atom, &format!("{path}.name"))?;
            stack.push(atom);
        }
        let qualified = stack.join(".");
        let class = ClassType::new(qualified.clone(), true);
        let mut values: Vec<(String, IValue)> = Vec::new();

        for (index, sub) in repeated(def, "submodules", path)?.iter().enumerate() {
            let sub_path = format!("{path}.submodules[{index}]");
            let child = self.convert_module(sub, &sub_path, stack, depth + 1)?;
            let sub_name = required_str(as_object(sub, &sub_path)?, "name", &sub_path)?;
            declare(
                &class,
                &mut values,
                sub_name,
                Type::Class(child.class().clone()),
                AttributeKind::Regular,
                IValue::Object(child),
                &format!("{sub_path}.name"),
            )?;
        }
        for (index, parameter) in repeated(def, "parameters", path)?.iter().enumerate() {
            let parameter_path = format!("{path}.parameters[{index}]");
            let parameter = as_object(parameter, &parameter_path)?;
            let name = required_str(parameter, "name", &parameter_path)?;
            let id = optional_int(parameter, "tensorId", &parameter_path)?.unwrap_or(0);
            let tensor = Self::table_entry(
                &self.tensors,
                id,
                &format!("{parameter_path}.tensorId"),
                "tensor",
            )?
            .to_ivalue();
            let kind = if optional_bool(parameter, "isBuffer", &parameter_path)? {
                AttributeKind::Buffer
            } else {
                AttributeKind::Parameter
            };
            declare(
                &class,
                &mut values,
                name,
                Type::Tensor,
                kind,
                tensor,
                &format!("{parameter_path}.name"),
            )?;
        }
        for (index, attribute) in repeated(def, "attributes", path)?.iter().enumerate() {
            let attribute_path = format!("{path}.attributes[{index}]");
            let attribute = as_object(attribute, &attribute_path)?;
            let name = required_str(attribute, "name", &attribute_path)?;
            if values.iter().any(|(existing, _)| existing == name) {
                // PyTorch skips an attribute already registered (as a buffer) above.
                continue;
            }
            let type_text = required_str(attribute, "type", &attribute_path)?;
            let ty = self
                .unit
                .resolve_type_text(&format!("{MODEL} {attribute_path}.type"), type_text)?;
            let id = optional_int(attribute, "id", &attribute_path)?
                .ok_or_else(|| field_error(&format!("{attribute_path}.id"), "is missing"))?;
            let value = if id < 0 {
                // Set by __setstate__ (checked below).
                IValue::None
            } else {
                let value = Self::table_entry(
                    &self.attributes,
                    id,
                    &format!("{attribute_path}.id"),
                    "attribute",
                )?
                .clone();
                retype_container(value, &ty)
            };
            declare(
                &class,
                &mut values,
                name,
                ty,
                AttributeKind::Regular,
                value,
                &format!("{attribute_path}.name"),
            )?;
        }

        let source = match record_key(def, "torchscriptArena", path)? {
            Some(key) => {
                let bytes = self
                    .archive
                    .read_record(key)
                    .map_err(|error| field_error(&format!("{path}.torchscriptArena.key"), error))?;
                let text = String::from_utf8(bytes)
                    .map_err(|_| LoadError::format(key, "source code is not valid UTF-8"))?;
                SourceFile::new(key, text)
            }
            None => SourceFile::new(format!("<{qualified}>"), String::new()),
        };
        self.unit.define_module_class(class.clone(), source)?;

        let methods: Arc<dyn MethodSource> = self.methods.clone();
        let object = Object::new(class.clone(), methods);
        for (name, value) in values {
            object.set_attr(&name, value)?;
        }
        if let Some(id) = optional_int(def, "getStateAttributeId", path)? {
            let state = Self::table_entry(
                &self.attributes,
                id,
                &format!("{path}.getStateAttributeId"),
                "attribute",
            )?
            .clone();
            if !class.has_method("__setstate__") {
                return Err(field_error(
                    &format!("{path}.getStateAttributeId"),
                    format!("{qualified} has a state but no __setstate__ method"),
                ));
            }
            let setstate = self.unit.method(&class, "__setstate__")?;
            let arguments = match setstate.schema().arguments.len() {
                1 => Vec::new(),
                2 => vec![state],
                _ => {
                    return Err(LoadError::format(
                        MODEL,
                        format!("{qualified}.__setstate__ takes neither (self) nor (self, state)"),
                    ))
                }
            };
            Module::new(object.clone()).run_method_with_options(
                "__setstate__",
                arguments,
                self.options,
            )?;
        }
        // As PyTorch does: every attribute not typed Optional must hold a value now.
        for attribute in class.attributes() {
            let optional = matches!(attribute.ty, Type::Optional(_) | Type::NoneType | Type::Any);
            if !optional && matches!(object.get_attr(&attribute.name)?, IValue::None) {
                return Err(LoadError::format(
                    MODEL,
                    format!(
                        "the field '{}' of {qualified} was left uninitialized after __setstate__, but expected a value of type '{}'",
                        attribute.name,
                        attribute.ty.annotation_str()
                    ),
                ));
            }
        }
        stack.truncate(pushed);
        Ok(object)
    }
}
