//! Loads a `torch.jit.save` archive into a runnable `Module`: classes come from `code/`
//! (parsed on demand, compiled on first call), objects and tensors from `data.pkl`,
//! `CONSTANTS.cN` from `constants.pkl`. Archives of PyTorch ≤ 1.2 (`model.json`, no
//! `data.pkl`) go to [`crate::legacy`].

use std::path::Path;
use std::sync::Arc;

use ferrojit_frontend::compilation_unit::{CompilationUnit, ConstantValue, Function};
use ferrojit_frontend::operators::OperatorSchemas;
use ferrojit_frontend::source::SourceFile;
use ferrojit_frontend::upgraders;
use ferrojit_ir::{AttributeValue, ClassType, FunctionSchema, Type};
use ferrojit_runtime::error::RuntimeError;
use ferrojit_runtime::interpreter::{GraphExecutor, RunOptions};
use ferrojit_runtime::ivalue::IValue;
use ferrojit_runtime::module::Module;
use ferrojit_runtime::object::MethodSource;
use ferrojit_runtime::registry::OperatorRegistry;

use crate::debug_info::lazy_origins;
use crate::load_error::LoadError;
use crate::values::{unpickle_record, ClassResolver, EnumMembers, ValueReader};
use ferrojit_archive::unpickler::UnpicklerOptions;
use ferrojit_archive::zip_archive::ArchiveReader;

/// Archive format versions this loader reads. PyTorch writes 3 for plain models and up to
/// 10 when operators with upgraders appear; code of an archive older than an operator's
/// change runs that operator's upgrader (`ferrojit_frontend::upgraders`).
const SUPPORTED_VERSIONS: std::ops::RangeInclusive<u64> = 1..=10;

/// The compiler's view of the runtime's operator registry.
pub struct RegistrySchemas {
    registry: &'static OperatorRegistry,
}

impl RegistrySchemas {
    pub fn builtins() -> Arc<RegistrySchemas> {
        Arc::new(RegistrySchemas {
            registry: OperatorRegistry::global(),
        })
    }
}

impl OperatorSchemas for RegistrySchemas {
    fn overloads(&self, qualified_name: &str) -> Vec<Arc<FunctionSchema>> {
        self.registry.overloads(qualified_name)
    }
}

/// Hands the runtime method and function graphs from a compilation unit, compiling them
/// on first use.
pub struct CompiledMethods {
    unit: Arc<CompilationUnit>,
}

impl CompiledMethods {
    pub fn new(unit: Arc<CompilationUnit>) -> Arc<CompiledMethods> {
        Arc::new(CompiledMethods { unit })
    }

    pub fn unit(&self) -> &Arc<CompilationUnit> {
        &self.unit
    }
}

impl CompiledMethods {
    /// The function's executor, kept in the function itself so that its compiled code is
    /// built once and dropped with the compilation unit.
    fn executor_of(&self, function: &Function) -> Result<Arc<GraphExecutor>, RuntimeError> {
        let graph = function
            .graph(&self.unit)
            .map_err(|error| RuntimeError::Other(error.to_string()))?;
        function
            .executor(|| GraphExecutor::new(graph))
            .ok_or_else(|| {
                RuntimeError::Other(format!(
                    "{} holds an executor of another type",
                    function.qualified_name()
                ))
            })
    }
}

impl MethodSource for CompiledMethods {
    fn method_executor(
        &self,
        class: &ClassType,
        name: &str,
    ) -> Result<Arc<GraphExecutor>, RuntimeError> {
        let function = self
            .unit
            .method(class, name)
            .map_err(|error| RuntimeError::Other(error.to_string()))?;
        self.executor_of(&function)
    }

    fn function_executor(&self, qualified_name: &str) -> Result<Arc<GraphExecutor>, RuntimeError> {
        let function = self
            .unit
            .function(qualified_name)
            .map_err(|error| RuntimeError::Other(error.to_string()))?;
        self.executor_of(&function)
    }

    fn method_schema(&self, class: &ClassType, name: &str) -> Option<FunctionSchema> {
        let function = self.unit.method(class, name).ok()?;
        Some(function.schema().clone())
    }

    fn shared(&self) -> Option<Arc<dyn MethodSource>> {
        Some(Arc::new(CompiledMethods {
            unit: self.unit.clone(),
        }))
    }
}

pub(crate) struct ArchiveClasses {
    pub(crate) methods: Arc<CompiledMethods>,
}

impl ClassResolver for ArchiveClasses {
    fn resolve(&self, qualified_name: &str) -> Result<Arc<ClassType>, LoadError> {
        if !qualified_name.starts_with("__torch__.") {
            return Err(LoadError::format(
                "data.pkl",
                format!("class {qualified_name} is outside __torch__ and cannot be loaded"),
            ));
        }
        Ok(self.methods.unit().resolve_class(qualified_name)?)
    }

    fn methods(&self) -> Arc<dyn MethodSource> {
        self.methods.clone()
    }

    fn resolve_enum(&self, qualified_name: &str) -> Result<Option<EnumMembers>, LoadError> {
        if !qualified_name.starts_with("__torch__.") {
            return Ok(None);
        }
        let Some(info) = self.methods.unit().try_resolve_enum(qualified_name)? else {
            return Ok(None);
        };
        let members = info
            .members
            .iter()
            .filter_map(|(name, constant)| {
                let value = match constant {
                    ConstantValue::Scalar(Some(AttributeValue::Str(text)), _) => {
                        IValue::Str(Arc::from(text.as_str()))
                    }
                    ConstantValue::Scalar(Some(AttributeValue::Int(number)), _) => {
                        IValue::Int(*number)
                    }
                    ConstantValue::Scalar(Some(AttributeValue::Float(number)), _) => {
                        IValue::Double(*number)
                    }
                    _ => return None,
                };
                Some((name.clone(), value))
            })
            .collect();
        Ok(Some(EnumMembers {
            members,
            value_type: info.value_type.clone(),
        }))
    }
}

/// A loaded TorchScript archive.
pub struct LoadedModule {
    pub module: Module,
    pub unit: Arc<CompilationUnit>,
}

/// Loads a `torch.jit.save` archive from a file.
pub fn load_module(path: &Path) -> Result<LoadedModule, LoadError> {
    load_module_with_options(path, &RunOptions::default())
}

/// Loads a `torch.jit.save` archive from a file; `options` bound the `__setstate__`
/// methods that run during loading (e.g. a step budget for untrusted models).
pub fn load_module_with_options(
    path: &Path,
    options: &RunOptions,
) -> Result<LoadedModule, LoadError> {
    let archive = ArchiveReader::open(path)?;
    load_module_from_archive(&archive, options)
}

/// Loads a `torch.jit.save` archive held in memory.
pub fn load_module_from_bytes(bytes: Vec<u8>) -> Result<LoadedModule, LoadError> {
    load_module_from_bytes_with_options(bytes, &RunOptions::default())
}

/// Loads a `torch.jit.save` archive held in memory, with `options` bounding `__setstate__`.
pub fn load_module_from_bytes_with_options(
    bytes: Vec<u8>,
    options: &RunOptions,
) -> Result<LoadedModule, LoadError> {
    let archive = ArchiveReader::from_bytes(bytes)?;
    load_module_from_archive(&archive, options)
}

/// Reads and checks the archive's version record.
fn check_version(archive: &ArchiveReader) -> Result<u64, LoadError> {
    // Old archives name the record `version` too; a missing one is refused rather than guessed.
    let name = if archive.has_record("version") {
        "version"
    } else if archive.has_record(".data/version") {
        ".data/version"
    } else {
        return Err(LoadError::format(
            "version",
            "the archive has no version record",
        ));
    };
    let bytes = archive.read_record(name)?;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(32)])
        .trim()
        .to_string();
    let version: u64 = text
        .parse()
        .map_err(|_| LoadError::format(name, format!("version '{text}' is not a number")))?;
    if !SUPPORTED_VERSIONS.contains(&version) {
        return Err(LoadError::format(
            name,
            format!(
                "archive format version {version} is not supported (this build reads {} to {})",
                SUPPORTED_VERSIONS.start(),
                SUPPORTED_VERSIONS.end()
            ),
        ));
    }
    Ok(version)
}

/// Maps a qualifier such as `__torch__.torch.nn.modules.linear` to its `code/` record.
fn code_record_name(qualifier: &str) -> String {
    format!("code/{}.py", qualifier.replace('.', "/"))
}

/// Loads a `torch.jit.save` archive from an opened archive (for callers that choose the
/// [`ferrojit_archive::zip_archive::ArchiveLimits`]), with `options` bounding `__setstate__`.
pub fn load_module_from_archive(
    archive: &ArchiveReader,
    options: &RunOptions,
) -> Result<LoadedModule, LoadError> {
    let version = check_version(archive)?;
    if crate::legacy::is_legacy_archive(archive) {
        return crate::legacy::load_legacy_module(archive, version, options);
    }
    if !archive.has_record("data.pkl") {
        return Err(LoadError::format(
            "data.pkl",
            "the archive has no data.pkl record (is it a TorchScript archive?)",
        ));
    }
    if let Some(description) = crate::file_kind::describe_torch_save_file(archive) {
        return Err(LoadError::format("data.pkl", description));
    }

    let mut unit = CompilationUnit::new(RegistrySchemas::builtins());
    // The version decides which operator semantics the archive's code compiles to.
    upgraders::configure(&mut unit, version)?;
    // The archive reader is single-threaded, while the compilation unit may compile from
    // any thread, so the (small) code records are read up front; parsing stays on demand.
    // Each file keeps the original ranges its `.debug_pkl` records, for tracebacks.
    let mut sources = std::collections::HashMap::new();
    for name in archive.record_names() {
        if name.starts_with("code/") && name.ends_with(".py") {
            let bytes = archive.read_record(name)?;
            let text = String::from_utf8(bytes)
                .map_err(|_| LoadError::format(name, "source code is not valid UTF-8"))?;
            let loader = lazy_origins(archive, &format!("{name}.debug_pkl"));
            sources.insert(
                name.clone(),
                SourceFile::with_lazy_origins(name, text, loader),
            );
        }
    }
    unit.set_source_loader(Box::new(move |qualifier: &str| {
        sources.get(&code_record_name(qualifier)).cloned()
    }));
    unit.set_constants(load_constants(archive)?);
    let unit = Arc::new(unit);
    let methods = CompiledMethods::new(unit.clone());
    let classes = ArchiveClasses {
        methods: methods.clone(),
    };

    // Storages are decoded in the archive's `byteorder` (as torch.load does). PyTorch's
    // torch.jit.load (2.15) ignores that record and reads big-endian bytes as little-endian;
    // tests/fixtures/byteorder/checks.json records it.
    let pickled = unpickle_record(archive, "data.pkl", UnpicklerOptions::torchscript_data())?;
    let mut reader = ValueReader::new(archive, "data.pkl", "data", Some(&classes))?;
    let root = reader.convert(&pickled)?;
    // PyTorch runs __setstate__ after the object graph exists, innermost objects first.
    for (object, state) in reader.take_pending_setstate().into_iter().rev() {
        Module::new(object).run_method_with_options("__setstate__", vec![state], options)?;
    }
    let IValue::Object(object) = root else {
        return Err(LoadError::format(
            "data.pkl",
            format!(
                "the root value is a {}, not a module object",
                root.tag_name()
            ),
        ));
    };
    Ok(LoadedModule {
        module: Module::new(object),
        unit,
    })
}

/// Reads `constants.pkl` (a tuple) into the compiler's constant table.
fn load_constants(
    archive: &ArchiveReader,
) -> Result<Vec<(Option<AttributeValue>, Type)>, LoadError> {
    if !archive.has_record("constants.pkl") {
        return Ok(Vec::new());
    }
    let pickled = unpickle_record(
        archive,
        "constants.pkl",
        UnpicklerOptions::torchscript_data(),
    )?;
    let mut reader = ValueReader::new(archive, "constants.pkl", "constants", None)?;
    let IValue::Tuple(tuple) = reader.convert(&pickled)? else {
        return Err(LoadError::format(
            "constants.pkl",
            "the constant table is not a tuple",
        ));
    };
    tuple
        .items
        .iter()
        .enumerate()
        .map(|(index, value)| {
            constant_attribute(value).ok_or_else(|| {
                LoadError::format(
                    "constants.pkl",
                    format!(
                        "constant c{index} is a {}, which is not supported yet",
                        value.tag_name()
                    ),
                )
            })
        })
        .collect()
}

fn constant_attribute(value: &IValue) -> Option<(Option<AttributeValue>, Type)> {
    Some(match value {
        IValue::None => (None, Type::NoneType),
        IValue::Bool(b) => (Some(AttributeValue::Int(i64::from(*b))), Type::Bool),
        IValue::Int(i) => (Some(AttributeValue::Int(*i)), Type::Int),
        IValue::Double(f) => (Some(AttributeValue::Float(*f)), Type::Float),
        IValue::Str(s) => (Some(AttributeValue::Str(s.to_string())), Type::Str),
        IValue::Tensor(t) => (
            Some(AttributeValue::Tensor(ferrojit_tensor::Tensor::clone(
                &t.get(),
            ))),
            Type::Tensor,
        ),
        _ => return None,
    })
}
