//! The runtime's error type: everything the interpreter, the operators and modules can report.

use ferrojit_ir::source::CONTEXT_LINES;
use ferrojit_ir::SourceLocation;
use ferrojit_tensor::TensorError;

/// Every failure of the runtime. Messages follow PyTorch's wording where one exists.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuntimeError {
    /// `raise SomeException(msg)` in TorchScript (`prim::RaiseException`). Displayed as the
    /// last line of PyTorch's traceback: `builtins.Exception: msg` (the class as given).
    #[error("{class_name}: {message}")]
    Exception { class_name: String, message: String },

    /// A tensor kernel failed; `operator` is the schema name (`aten::add.Tensor`).
    #[error("{source}")]
    Tensor {
        operator: String,
        /// Boxed: tensor errors are large and would bloat every `Result` in the interpreter.
        #[source]
        source: Box<TensorError>,
    },

    /// A value had the wrong type for what was asked of it.
    #[error("expected {expected} but got {actual}{}", context_suffix(.context))]
    TypeMismatch {
        expected: String,
        actual: String,
        context: String,
    },

    /// Python's IndexError (`list index out of range`, `tuple index out of range`).
    #[error("{0}")]
    IndexError(String),

    /// Python's KeyError for dict lookups; the key is printed as Python would.
    #[error("KeyError: {0}")]
    KeyError(String),

    /// Python's ValueError (`range() arg 3 must not be zero`, list unpack length mismatch).
    #[error("{0}")]
    ValueError(String),

    /// Python's ZeroDivisionError for integer division or modulo by zero.
    #[error("ZeroDivisionError: {0}")]
    ZeroDivision(String),

    /// A call received the wrong number or kind of arguments; the text is PyTorch's full message.
    #[error("{0}")]
    Argument(String),

    /// No operator with this full name (or no overload matching these argument types).
    #[error("Unknown builtin op: {0}")]
    UnknownOperator(String),

    /// An object has no attribute with this name.
    #[error("Object of class '{class_name}' has no attribute '{attribute}'")]
    UnknownAttribute {
        class_name: String,
        attribute: String,
    },

    /// An object's class has no method with this name (or the function does not exist).
    #[error("'{owner}' has no method or function named '{name}'")]
    UnknownMethod { owner: String, name: String },

    /// A value marked `prim::Uninitialized` was read as a real value.
    #[error("use of an uninitialized value{}", context_suffix(.0))]
    Uninitialized(String),

    /// The graph is not something the interpreter can run (bad constant, wrong block count...).
    #[error("invalid graph: {0}")]
    InvalidGraph(String),

    /// `RunOptions::max_steps` instructions were executed without finishing.
    #[error("step budget of {0} exceeded")]
    StepBudgetExceeded(u64),

    /// Calls nested deeper than `RunOptions::max_call_depth`.
    #[error("maximum call depth of {0} exceeded (infinite recursion?)")]
    CallDepthExceeded(usize),

    /// Registering an operator failed (bad schema, duplicate name).
    #[error("cannot register operator: {0}")]
    Registration(String),

    /// Any other failure with a PyTorch-style message (`RuntimeError` in Python).
    #[error("{0}")]
    Other(String),

    /// An error that left interpreted code, with where it happened: the location of the
    /// failing instruction in each interpreter frame, outermost call first. Displays as the
    /// error itself; [`RuntimeError::traceback_text`] renders the frames.
    #[error("{error}")]
    Traced {
        error: Box<RuntimeError>,
        frames: Vec<SourceLocation>,
        /// For an error a `wait` raised from forked code: that code's own traceback, which
        /// PyTorch prints after the waiting code's.
        forked: Option<String>,
    },
}

fn context_suffix(context: &str) -> String {
    if context.is_empty() {
        String::new()
    } else {
        format!(" ({context})")
    }
}

impl RuntimeError {
    /// Wraps a tensor error with the operator it came from.
    pub fn tensor(operator: impl Into<String>, source: TensorError) -> RuntimeError {
        RuntimeError::Tensor {
            operator: operator.into(),
            source: Box::new(source),
        }
    }

    pub fn type_mismatch(
        expected: impl Into<String>,
        actual: impl Into<String>,
        context: impl Into<String>,
    ) -> RuntimeError {
        RuntimeError::TypeMismatch {
            expected: expected.into(),
            actual: actual.into(),
            context: context.into(),
        }
    }
}

impl RuntimeError {
    /// The error without its traceback.
    pub fn root(&self) -> &RuntimeError {
        match self {
            RuntimeError::Traced { error, .. } => error.root(),
            other => other,
        }
    }

    /// The traceback's frames, outermost call first (empty when none was recorded).
    pub fn traceback(&self) -> &[SourceLocation] {
        match self {
            RuntimeError::Traced { frames, .. } => frames,
            _ => &[],
        }
    }

    /// Adds interpreter frames around the error: `outer` are the callers of the frames it
    /// already has (outermost first). Frames without a known location are left out.
    pub fn with_outer_frames(self, outer: Vec<SourceLocation>) -> RuntimeError {
        if outer.is_empty() {
            return self;
        }
        match self {
            RuntimeError::Traced {
                error,
                frames,
                forked,
            } => {
                let mut all = outer;
                all.extend(frames);
                RuntimeError::Traced {
                    error,
                    frames: all,
                    forked,
                }
            }
            other => RuntimeError::Traced {
                error: Box::new(other),
                frames: outer,
                forked: None,
            },
        }
    }

    /// The error as `wait` raises it from forked code: a traceback that starts again at
    /// the `wait`, with the forked code's traceback kept for the message, as PyTorch does.
    pub fn raised_through_wait(&self) -> RuntimeError {
        match self.traceback_frames_text() {
            Some(forked) => RuntimeError::Traced {
                error: Box::new(self.root().clone()),
                frames: Vec::new(),
                forked: Some(forked),
            },
            None => self.root().clone(),
        }
    }

    /// PyTorch's rendering of an error raised in TorchScript: "Traceback of TorchScript
    /// (most recent call last):", each frame's file, line and function with the source
    /// highlighted, then the message. `None` when no frame has source text.
    pub fn traceback_text(&self) -> Option<String> {
        let mut text = self.traceback_frames_text()?;
        text.push_str(&self.root().to_string());
        Some(text)
    }

    /// [`RuntimeError::traceback_text`] without the final message line.
    pub fn traceback_frames_text(&self) -> Option<String> {
        let ranges: Vec<_> = self
            .traceback()
            .iter()
            .filter_map(|location| location.range.as_ref())
            .collect();
        let forked = match self {
            RuntimeError::Traced { forked, .. } => forked.as_deref(),
            _ => None,
        };
        if ranges.is_empty() {
            return forked.map(str::to_string);
        }
        // PyTorch says "serialized code" when the source is an archive's `code/` files.
        let serialized = ranges
            .iter()
            .any(|range| range.file.name().starts_with("code/"));
        let mut text = String::from(if serialized {
            "Traceback of TorchScript, serialized code (most recent call last):\n"
        } else {
            "Traceback of TorchScript (most recent call last):\n"
        });
        let mut original = String::new();
        for range in ranges {
            let function = enclosing_function(range.file.text(), range.start);
            push_frame(&mut text, range, function);
            // The archive's `.debug_pkl` says which Python source generated this code; the
            // frame keeps the generated function's name, as PyTorch's does.
            if let Some(origin) = range.file.origin_of(range.start) {
                push_frame(&mut original, origin, function);
            }
        }
        if !original.is_empty() {
            text.push_str("\nTraceback of TorchScript, original code (most recent call last):\n");
            text.push_str(&original);
        }
        if let Some(forked) = forked {
            text.push_str(
                "RuntimeError: The following operation failed in the TorchScript interpreter.\n",
            );
            text.push_str(forked);
        }
        Some(text)
    }
}

fn push_frame(text: &mut String, range: &ferrojit_ir::source::SourceRange, function: &str) {
    text.push_str(&range.print_with_context(CONTEXT_LINES, function));
    if !text.ends_with('\n') {
        text.push('\n');
    }
}

/// The name of the `def` whose body holds byte `offset` of `text`: the nearest `def` line
/// above it that is indented less than the line at `offset`.
fn enclosing_function(text: &str, offset: usize) -> &str {
    let before = text.get(..offset).unwrap_or(text);
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    let indent = |line: &str| line.len() - line.trim_start().len();
    let mut limit = indent(text.get(line_start..).unwrap_or(""));
    for line in before[..line_start].lines().rev() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if indent(line) < limit {
            if let Some(rest) = trimmed.strip_prefix("def ") {
                let end = rest.find(['(', ' ', ':']).unwrap_or(rest.len());
                return &rest[..end];
            }
            limit = indent(line);
        }
    }
    ""
}

/// Lets `?` lift tensor errors inside kernels; the operator name is filled in by the
/// interpreter when it is still empty.
impl From<TensorError> for RuntimeError {
    fn from(source: TensorError) -> RuntimeError {
        RuntimeError::Tensor {
            operator: String::new(),
            source: Box::new(source),
        }
    }
}

/// Shorthand result type of the runtime.
pub type Result<T> = std::result::Result<T, RuntimeError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_stay_small() {
        // Results of this type are returned by every instruction; keep them cheap to move.
        assert!(std::mem::size_of::<RuntimeError>() <= 80);
    }
}
