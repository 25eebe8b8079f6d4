//! Array files a user hands to `ferrojit run` besides `torch.save` files: NumPy's `.npy` and
//! `.npz`, and a JSON list of positional arguments (see [`json_values`]).
//!
//! Every reader takes untrusted bytes: lengths, shapes and sizes are checked before anything
//! is allocated from them, and a malformed file gets an [`ArrayFileError`] naming what is
//! wrong (and, in an `.npz`, which member), never a panic.

pub mod json_values;
pub mod npy;
pub mod npz;

pub use json_values::{ivalue_to_json, parse_json_arguments};
pub use npy::{read_npy, write_npy};
pub use npz::{read_npz, read_npz_with_limit, write_npz, DEFAULT_NPZ_MEMBER_LIMIT};

use ferrojit_tensor::{DType, TensorError};

/// What can be wrong with an array file (or a value that cannot be written as one).
#[derive(Debug, thiserror::Error)]
pub enum ArrayFileError {
    /// The bytes do not start with `\x93NUMPY`.
    #[error("not a .npy array: the data does not start with the \\x93NUMPY magic")]
    NotNpy,
    /// A format version this reader does not know (1.0, 2.0 and 3.0 are known).
    #[error(".npy format version {major}.{minor} is not supported (1.0, 2.0 and 3.0 are)")]
    UnsupportedVersion { major: u8, minor: u8 },
    /// The data ends before the part named.
    #[error("truncated .npy data: {0}")]
    Truncated(String),
    /// The header dictionary is malformed.
    #[error("invalid .npy header: {0}")]
    Header(String),
    /// A `descr` this reader has no tensor dtype for (unsigned 16-64 bit, structured, …).
    #[error(".npy dtype '{0}' is not supported (bool, int8-64, uint8, float16/32/64 and complex64/128 are)")]
    UnsupportedNpyDtype(String),
    /// The shape's element count or byte size overflows.
    #[error("the shape {0:?} is too large: its size overflows")]
    SizeOverflow(Vec<u64>),
    /// The data section is not as long as the shape and dtype say.
    #[error("the data holds {actual} bytes but shape {shape:?} of {dtype} needs {expected}")]
    DataLength {
        shape: Vec<usize>,
        dtype: &'static str,
        expected: usize,
        actual: usize,
    },
    /// A tensor dtype the format cannot store (bfloat16 in `.npy`).
    #[error("a {} tensor cannot be written as {format} (NumPy has no such dtype)", .dtype.name())]
    UnwritableDtype { dtype: DType, format: &'static str },
    /// The `.npz` zip container is malformed.
    #[error("invalid .npz archive: {0}")]
    Zip(String),
    /// One member of an `.npz` is bad.
    #[error(".npz member '{member}': {source}")]
    Member {
        member: String,
        #[source]
        source: Box<ArrayFileError>,
    },
    /// An `.npz` member inflates past the limit.
    #[error(
        ".npz member '{member}' inflates to more than {limit} bytes (a limit against zip bombs)"
    )]
    MemberTooLarge { member: String, limit: u64 },
    /// Two `.npz` members (or tensors to write) share a name.
    #[error("the array name '{0}' appears more than once")]
    DuplicateName(String),
    /// The JSON text does not parse.
    #[error("invalid JSON: {0}")]
    JsonSyntax(String),
    /// The JSON parses but a value in it is not an argument this reader understands; `at` is
    /// its position, e.g. `[0].data[3]`.
    #[error("JSON value at {at}: {message}")]
    JsonValue { at: String, message: String },
    /// A value that has no JSON form (an object, a future …).
    #[error("a {kind} value at {at} cannot be written as JSON")]
    UnwritableValue { kind: &'static str, at: String },
    #[error("{0}")]
    Tensor(#[from] TensorError),
}
