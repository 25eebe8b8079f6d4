//! Saves a module as a `torch.jit.save` archive that `torch.jit.load` reads: code re-printed
//! from ferrojit's IR by the Python printer, `data.pkl` and `constants.pkl` from the jit
//! pickler rules, raw storages under `data/N` and `constants/N`, and the small records
//! PyTorch writes (`version`, `byteorder`, `.data/serialization_id`).
//!
//! Record order follows PyTorch 2.15: `data/N`, `data.pkl`, `code/….py` (each followed by
//! its `.debug_pkl`), `constants/N`, `constants.pkl`, `version` (`.data/version` from
//! version 6 on), `byteorder`, `.data/serialization_id`. Every record is STORED with its
//! data 64-byte aligned.
//!
//! `.debug_pkl` files are minimal but valid: PyTorch's `FORMAT_WITH_STRING_TABLE` form with
//! an empty string table and no ranges, i.e. `("FORMAT_WITH_STRING_TABLE", (), ())`.
//! Tracebacks in PyTorch then point at the printed code instead of the original source.
//!
//! Everything written is a pure function of the module, so saving the same module twice
//! gives the same bytes, and load → save → load → save is a fixed point.

use std::path::Path;
use std::sync::Arc;

use ferrojit_frontend::compilation_unit::CompilationUnit;
use ferrojit_frontend::source::SourceFile;
use ferrojit_runtime::ivalue::{IValue, TupleValue};
use ferrojit_runtime::module::Module;
use ferrojit_runtime::object::Object;

use crate::import::{CompiledMethods, LoadedModule, RegistrySchemas};
use crate::load_error::LoadError;
use crate::python_printer::{
    code_record_name, print_program_with_graph_classes, GraphClass, GraphMethod,
};
use crate::values::ValueWriter;
use ferrojit_archive::pickle_value::PickleValue;
use ferrojit_archive::pickler::pickle;
use ferrojit_archive::serialization_id::ContentHash;
use ferrojit_archive::zip_archive::ArchiveWriter;
use ferrojit_ir::{ClassType, Graph, Type};

/// Saves a loaded module to `path` (root folder: the file's stem, as PyTorch).
pub fn save_module(loaded: &LoadedModule, path: &Path) -> Result<(), LoadError> {
    let root_name = path
        .file_stem()
        .and_then(|stem| stem.to_str())
        .filter(|stem| !stem.is_empty())
        .unwrap_or("archive");
    let bytes = save_module_to_bytes(&loaded.module, &loaded.unit, root_name)?;
    ferrojit_archive::zip_archive::replace_file(path, &bytes).map_err(|source| LoadError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Serializes `module` (whose classes live in `unit`) as a TorchScript archive.
pub fn save_module_to_bytes(
    module: &Module,
    unit: &CompilationUnit,
    root_name: &str,
) -> Result<Vec<u8>, LoadError> {
    save_module_with_graph_classes_to_bytes(module, unit, &[], root_name)
}

/// Saves an object of a class whose methods are given as graphs (a frozen module: `class`
/// holds the attributes kept, `methods` the frozen graphs, each with `self` first) to
/// `path`. Each method's signature is that of the method of the same name of
/// `original_class` (in `loaded`'s unit), with `self` typed as `class`; every other class
/// the object reaches comes from `loaded`'s unit.
pub fn save_object_with_graph_methods(
    loaded: &LoadedModule,
    object: &Arc<Object>,
    original_class: &ClassType,
    methods: &[(String, Graph)],
    path: &Path,
) -> Result<(), LoadError> {
    let root_name = path
        .file_stem()
        .and_then(|stem| stem.to_str())
        .filter(|stem| !stem.is_empty())
        .unwrap_or("archive");
    let bytes = save_object_with_graph_methods_to_bytes(
        loaded,
        object,
        original_class,
        methods,
        root_name,
    )?;
    ferrojit_archive::zip_archive::replace_file(path, &bytes).map_err(|source| LoadError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// [`save_object_with_graph_methods`] into bytes.
pub fn save_object_with_graph_methods_to_bytes(
    loaded: &LoadedModule,
    object: &Arc<Object>,
    original_class: &ClassType,
    methods: &[(String, Graph)],
    root_name: &str,
) -> Result<Vec<u8>, LoadError> {
    let class = object.class().clone();
    let mut graph_methods = Vec::new();
    for (name, graph) in methods {
        let mut schema = loaded.unit.method(original_class, name)?.schema().clone();
        if let Some(receiver) = schema.arguments.first_mut() {
            receiver.ty = Type::Class(class.clone());
        }
        graph_methods.push(GraphMethod {
            name: name.clone(),
            schema,
            graph: Arc::new(graph.clone()),
        });
    }
    let graph_class = GraphClass {
        class,
        methods: graph_methods,
    };
    save_module_with_graph_classes_to_bytes(
        &Module::new(object.clone()),
        &loaded.unit,
        &[graph_class],
        root_name,
    )
}

/// Serializes `module` as a TorchScript archive, where the classes in `graph_classes`
/// (a frozen module's class, say) print their methods from the graphs given there, and
/// every other class comes from `unit`.
pub fn save_module_with_graph_classes_to_bytes(
    module: &Module,
    unit: &CompilationUnit,
    graph_classes: &[GraphClass],
    root_name: &str,
) -> Result<Vec<u8>, LoadError> {
    let mut data_writer = ValueWriter::for_torchscript();
    let data_value = data_writer.convert(&IValue::Object(module.object().clone()), "data.pkl")?;
    let data = pickle_record(&data_value, "data.pkl")?;

    let program =
        print_program_with_graph_classes(unit, data_writer.classes(), &[], graph_classes)?;

    let mut constants_writer = ValueWriter::for_torchscript();
    let constants_value = IValue::Tuple(TupleValue::new(program.constants.clone()));
    let constants = constants_writer.convert(&constants_value, "constants.pkl")?;
    let constants = pickle_record(&constants, "constants.pkl")?;
    let debug = minimal_debug_pickle()?;

    let mut archive = ArchiveWriter::in_memory(root_name)?;
    let mut digest = ContentHash::new();
    let mut write = |archive: &mut ArchiveWriter<_>, name: &str, bytes: &[u8]| {
        digest.update(name.as_bytes());
        digest.update(bytes);
        archive.write_record(name, bytes)
    };
    for (index, storage) in data_writer.storages().iter().enumerate() {
        write(
            &mut archive,
            &format!("data/{index}"),
            &storage.to_le_bytes(),
        )?;
    }
    write(&mut archive, "data.pkl", &data)?;
    for (qualifier, text) in &program.files {
        let record = code_record_name(qualifier);
        write(&mut archive, &record, text.as_bytes())?;
        write(&mut archive, &format!("{record}.debug_pkl"), &debug)?;
    }
    for (index, storage) in constants_writer.storages().iter().enumerate() {
        write(
            &mut archive,
            &format!("constants/{index}"),
            &storage.to_le_bytes(),
        )?;
    }
    write(&mut archive, "constants.pkl", &constants)?;
    let version = format!("{}\n", program.min_version);
    let version_record = if program.min_version >= 6 {
        ".data/version"
    } else {
        "version"
    };
    write(&mut archive, version_record, version.as_bytes())?;
    write(&mut archive, "byteorder", b"little")?;
    let id = digest.serialization_id();
    archive.write_record(".data/serialization_id", id.as_bytes())?;
    Ok(archive.finish_into_bytes()?)
}

fn pickle_record(value: &PickleValue, record: &str) -> Result<Vec<u8>, LoadError> {
    pickle(value).map_err(|source| LoadError::Pickle {
        record: record.to_string(),
        source,
    })
}

/// `("FORMAT_WITH_STRING_TABLE", (), ())`: a source range table with no ranges.
fn minimal_debug_pickle() -> Result<Vec<u8>, LoadError> {
    let value = PickleValue::tuple(vec![
        PickleValue::str("FORMAT_WITH_STRING_TABLE"),
        PickleValue::tuple(vec![]),
        PickleValue::tuple(vec![]),
    ]);
    pickle_record(&value, "debug_pkl")
}

/// The class `ferrojit compile` wraps the entry function in.
pub const COMPILED_MODULE_CLASS: &str = "__torch__.CompiledModule";

/// Compiles TorchScript source (top-level functions and script classes, defined under
/// `__torch__`) and wraps it in a module whose `forward` calls `entry` (default: `forward`,
/// else `main`, else the last function defined).
pub fn module_from_source(
    source: &str,
    file_name: &str,
    entry: Option<&str>,
) -> Result<LoadedModule, LoadError> {
    let unit = CompilationUnit::new(RegistrySchemas::builtins());
    unit.define_source(SourceFile::new(file_name, source.to_string()), "__torch__")?;
    let functions = unit.function_names();
    let entry_name = match entry {
        Some(name) => format!("__torch__.{name}"),
        None => ["__torch__.forward", "__torch__.main"]
            .iter()
            .map(|name| name.to_string())
            .find(|name| functions.contains(name))
            .or_else(|| functions.last().cloned())
            .ok_or_else(|| LoadError::format(file_name, "the source defines no functions"))?,
    };
    let function = unit.function(&entry_name)?;
    function.graph(&unit)?;
    let schema = function.schema();
    let mut signature = vec!["self".to_string()];
    signature.extend(
        schema
            .arguments
            .iter()
            .map(|a| format!("{}: {}", a.name, a.ty.annotation_str())),
    );
    let arguments: Vec<String> = schema.arguments.iter().map(|a| a.name.clone()).collect();
    let return_type = schema
        .returns
        .first()
        .map(|r| r.ty.annotation_str())
        .unwrap_or_else(|| "None".to_string());
    let (_, class_name) = COMPILED_MODULE_CLASS
        .rsplit_once('.')
        .unwrap_or(("", COMPILED_MODULE_CLASS));
    let wrapper = format!(
        "class {class_name}(Module):\n  training : bool\n  def forward({}) -> {return_type}:\n    return {entry_name}({})\n",
        signature.join(", "),
        arguments.join(", ")
    );
    unit.define_source(SourceFile::new("<ferrojit compile>", wrapper), "__torch__")?;
    let unit = Arc::new(unit);
    let class = unit.resolve_class(COMPILED_MODULE_CLASS)?;
    let object = Object::new(class, CompiledMethods::new(unit.clone()));
    object.set_attr("training", IValue::Bool(true))?;
    Ok(LoadedModule {
        module: Module::new(object),
        unit,
    })
}
