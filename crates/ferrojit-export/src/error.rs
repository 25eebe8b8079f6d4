//! Typed errors of the `.pt2` reader and runner; every failure is one of these, never a panic.

use thiserror::Error;

/// Everything that can go wrong while reading or running a torch.export program.
#[derive(Debug, Error)]
pub enum ExportError {
    /// The zip layer failed (truncated file, corrupt directory, missing record).
    #[error(transparent)]
    Archive(#[from] ferrojit_archive::error::ArchiveError),
    /// The file is a zip, but not a `.pt2` archive torch.export reads.
    #[error("not a torch.export .pt2 archive: {0}")]
    NotPt2(String),
    /// An AOTInductor package: compiled native code, which ferrojit does not run.
    #[error("'{0}' is an AOTInductor package: it holds compiled native code (a .so that links libtorch), which ferrojit does not run; save the program with torch.export.save instead")]
    AotInductor(String),
    /// The archive has no program of the requested name.
    #[error("the archive has no model named '{name}' (it has: {available})")]
    MissingModel { name: String, available: String },
    /// A JSON record could not be parsed, or is too large or too deeply nested.
    #[error("bad JSON in '{record}': {message}")]
    Json { record: String, message: String },
    /// The JSON parsed but does not follow the export schema.
    #[error("bad export schema at {path}: {message}")]
    Schema { path: String, message: String },
    /// The program was written with a schema major version this reader does not read.
    #[error("the program's schema version is {found_major}.{found_minor}, but ferrojit reads schema version {supported_major}.x")]
    SchemaVersion {
        found_major: i64,
        found_minor: i64,
        supported_major: i64,
    },
    /// A weight or constant does not match its metadata or its storage file.
    #[error("bad tensor '{name}': {message}")]
    Tensor { name: String, message: String },
    /// A symbolic expression string that the bounded parser refuses.
    #[error("bad symbolic expression '{expression}': {message}")]
    SymbolicExpression { expression: String, message: String },
    /// A pytree spec that cannot be read, or a value that does not fit it.
    #[error("pytree spec: {0}")]
    TreeSpec(String),
    /// A graph refers to a value, node, subgraph or constant that does not exist.
    #[error("the graph refers to {kind} '{name}', which does not exist")]
    MissingReference { kind: &'static str, name: String },
    /// An input given to `run` does not match what the program was exported with.
    #[error("input {input}: {message}")]
    Input { input: String, message: String },
    /// Something the reader or runner does not support yet.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// An operator failed while running a node.
    #[error("node '{node}' ({target}): {source}")]
    Node {
        node: String,
        target: String,
        #[source]
        source: Box<ExportError>,
    },
    /// A tensor operation failed.
    #[error(transparent)]
    TensorOperation(#[from] ferrojit_tensor::TensorError),
    /// A runtime failure (operator kernel, value conversion).
    #[error(transparent)]
    Runtime(#[from] ferrojit_runtime::RuntimeError),
}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, ExportError>;

/// A schema error at `path`.
pub(crate) fn schema_error(path: &str, message: impl Into<String>) -> ExportError {
    ExportError::Schema {
        path: path.to_string(),
        message: message.into(),
    }
}
