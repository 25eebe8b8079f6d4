//! Typed errors for the pickle VM, the pickler and the zip archive layer.

use thiserror::Error;

/// Everything that can go wrong while reading or writing a pickle.
///
/// Every reading error carries the byte offset of the opcode that failed, so a
/// bad file can be located with `pickletools.dis`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PickleError {
    /// An opcode's argument runs past the end of the input.
    #[error("pickle truncated at byte {offset}: {opcode} needs {needed} bytes but only {available} remain")]
    Truncated {
        offset: usize,
        opcode: &'static str,
        needed: u64,
        available: usize,
    },
    /// The input ended before a STOP opcode.
    #[error("pickle ended at byte {offset} without a STOP opcode")]
    MissingStop { offset: usize },
    /// An opcode byte outside the supported subset.
    #[error("unsupported pickle opcode 0x{byte:02x} at byte {offset}")]
    UnknownOpcode { byte: u8, offset: usize },
    /// A GLOBAL / STACK_GLOBAL naming something the allowlist rejects.
    #[error("disallowed global '{module}.{name}' at byte {offset}")]
    DisallowedGlobal {
        module: String,
        name: String,
        offset: usize,
    },
    /// Structurally invalid input: stack/mark/memo underflow, wrong operand kinds, bad text.
    #[error("invalid pickle at byte {offset} ({opcode}): {message}")]
    Invalid {
        offset: usize,
        opcode: &'static str,
        message: String,
    },
    /// A configured bound (nesting depth, memo size, ...) was exceeded.
    #[error("pickle limit exceeded at byte {offset} ({opcode}): {message}")]
    LimitExceeded {
        offset: usize,
        opcode: &'static str,
        message: String,
    },
    /// The loaded value graph contains a reference cycle (a container that contains itself).
    #[error("pickle value graph contains a reference cycle")]
    Cycle,
    /// Bytes follow the STOP opcode (only reported by the strict `unpickle`).
    #[error("{count} trailing bytes after STOP at byte {offset}")]
    TrailingBytes { offset: usize, count: usize },
    /// The pickler was given a value it cannot write.
    #[error("cannot pickle value: {0}")]
    Unpicklable(String),
}

/// Everything that can go wrong while reading or writing a PyTorch zip archive.
#[derive(Debug, Error)]
pub enum ArchiveError {
    /// The file could not be opened, read or written.
    #[error("cannot access '{path}': {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The bytes do not start like a zip archive at all.
    #[error("not a zip archive: {0}")]
    NotZip(String),
    /// The bytes look like a zip archive but its structure is broken (truncated, bad offsets, ...).
    #[error("corrupt zip archive: {0}")]
    Corrupt(String),
    /// The archive's entries do not follow PyTorch's single-root-folder layout.
    #[error("bad archive layout: {0}")]
    Layout(String),
    /// Two entries with the same name.
    #[error("duplicate zip entry '{0}'")]
    DuplicateEntry(String),
    /// The requested record does not exist.
    #[error("archive has no record '{0}'")]
    MissingRecord(String),
    /// An entry count or decompressed-size cap was exceeded.
    #[error("archive limit exceeded: {0}")]
    LimitExceeded(String),
    /// A compression method or zip feature this reader does not accept.
    #[error("unsupported zip feature: {0}")]
    Unsupported(String),
    /// A record or root name given to the writer is not acceptable.
    #[error("invalid record name '{0}'")]
    InvalidName(String),
    /// The zip writer failed.
    #[error("cannot write zip archive: {0}")]
    Write(String),
}
