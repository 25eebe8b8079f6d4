//! The error type shared by the whole frontend (lexer, parser and compiler).

use std::fmt;

use crate::source::SourceRange;

/// Which stage of the frontend rejected the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Bad characters, literals, brackets or indentation.
    Lexical,
    /// Token sequence that is not valid (TorchScript-subset) Python.
    Syntax,
    /// Input nested deeper than the parser's fixed limit.
    TooDeeplyNested,
    /// Well-formed source the compiler cannot accept (types, unsupported features, ...).
    Semantic,
}

/// An additional message attached to an error, optionally pointing at more source.
#[derive(Debug, Clone)]
pub struct Note {
    pub message: String,
    pub range: Option<SourceRange>,
}

/// A frontend error: message, optional source location, optional notes.
///
/// `Display` renders it like PyTorch's `ErrorReport`: the message, a colon, and the highlighted
/// source excerpt with `<--- HERE` under the offending range.
#[derive(Debug, Clone, thiserror::Error)]
pub struct FrontendError {
    pub kind: ErrorKind,
    pub message: String,
    pub range: Option<SourceRange>,
    pub notes: Vec<Note>,
}

impl FrontendError {
    /// A general error (kind [`ErrorKind::Semantic`]), e.g. raised by the compiler.
    pub fn new(message: impl Into<String>, range: impl Into<Option<SourceRange>>) -> FrontendError {
        FrontendError {
            kind: ErrorKind::Semantic,
            message: message.into(),
            range: range.into(),
            notes: Vec::new(),
        }
    }

    /// An error from the lexer.
    pub fn lexical(message: impl Into<String>, range: SourceRange) -> FrontendError {
        FrontendError::new(message, range).with_kind(ErrorKind::Lexical)
    }

    /// An error from the parser.
    pub fn syntax(message: impl Into<String>, range: SourceRange) -> FrontendError {
        FrontendError::new(message, range).with_kind(ErrorKind::Syntax)
    }

    /// Replaces the kind.
    pub fn with_kind(mut self, kind: ErrorKind) -> FrontendError {
        self.kind = kind;
        self
    }

    /// Appends a note, e.g. "'foo' is being compiled since it was called from" + call site.
    pub fn with_note(
        mut self,
        message: impl Into<String>,
        range: impl Into<Option<SourceRange>>,
    ) -> FrontendError {
        self.notes.push(Note {
            message: message.into(),
            range: range.into(),
        });
        self
    }

    /// 1-based (line, column) of the error location, if it has one.
    pub fn line_col(&self) -> Option<(usize, usize)> {
        self.range.as_ref().map(SourceRange::line_col)
    }
}

fn write_message(
    f: &mut fmt::Formatter<'_>,
    message: &str,
    range: Option<&SourceRange>,
) -> fmt::Result {
    match range {
        Some(range) => write!(f, "{}:\n{}", message, range.highlight()),
        None => f.write_str(message),
    }
}

impl fmt::Display for FrontendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_message(f, &self.message, self.range.as_ref())?;
        for note in &self.notes {
            f.write_str("\n")?;
            write_message(f, &note.message, note.range.as_ref())?;
        }
        Ok(())
    }
}
