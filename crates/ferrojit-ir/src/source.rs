//! Source text bookkeeping: files, byte ranges into them, and PyTorch-style highlighted excerpts.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// Produces a file's origins on first use (see [`SourceFile::with_lazy_origins`]).
pub type OriginsLoader = Box<dyn FnOnce() -> Vec<(usize, SourceRange)> + Send>;

/// One piece of TorchScript source, e.g. `code/__torch__/foo.py` from a saved archive.
///
/// Always handled through an `Arc` so that every token and AST node can point back at it cheaply.
pub struct SourceFile {
    name: String,
    text: String,
    /// Byte offset at which each line begins; the first entry is always 0.
    line_starts: Vec<usize>,
    /// The line number of the text's first line in `name` (1 unless the text is an excerpt,
    /// as the original code recorded in a `.debug_pkl` is).
    first_line_number: usize,
    /// For generated code (an archive's `code/` file): where its bytes came from, as
    /// `(offset, original range)` sorted by offset; the range at the largest offset at or
    /// before a position generated it. From the file's `.debug_pkl`, read on first use:
    /// only a traceback needs it, and reading it was over a third of loading a model.
    origins: OnceLock<Vec<(usize, SourceRange)>>,
    /// Fills `origins` when they were not given up front.
    origins_loader: Mutex<Option<OriginsLoader>>,
}

impl SourceFile {
    /// Wraps `text` (named `name` in messages) and indexes its line starts.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Arc<SourceFile> {
        SourceFile::build(name.into(), text.into(), 1, None)
    }

    /// A file whose text starts at line `first_line_number` of `name` (an excerpt).
    pub fn excerpt(
        name: impl Into<String>,
        text: impl Into<String>,
        first_line_number: usize,
    ) -> Arc<SourceFile> {
        SourceFile::build(name.into(), text.into(), first_line_number.max(1), None)
    }

    /// Generated code with the original range each of its parts came from: `origins` are
    /// `(byte offset in text, original range)` in any order.
    pub fn with_origins(
        name: impl Into<String>,
        text: impl Into<String>,
        mut origins: Vec<(usize, SourceRange)>,
    ) -> Arc<SourceFile> {
        origins.sort_by_key(|(offset, _)| *offset);
        let file = SourceFile::build(name.into(), text.into(), 1, None);
        let _ = file.origins.set(origins);
        file
    }

    /// Like [`SourceFile::with_origins`], with the origins made by `loader` the first time
    /// [`SourceFile::origin_of`] asks for them.
    pub fn with_lazy_origins(
        name: impl Into<String>,
        text: impl Into<String>,
        loader: OriginsLoader,
    ) -> Arc<SourceFile> {
        SourceFile::build(name.into(), text.into(), 1, Some(loader))
    }

    fn origins(&self) -> &[(usize, SourceRange)] {
        self.origins.get_or_init(|| {
            let loader = self
                .origins_loader
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            let mut origins = loader.map(|load| load()).unwrap_or_default();
            origins.sort_by_key(|(offset, _)| *offset);
            origins
        })
    }

    /// The original range that generated the code at byte `offset`, when recorded.
    pub fn origin_of(&self, offset: usize) -> Option<&SourceRange> {
        let origins = self.origins();
        let after = origins.partition_point(|(start, _)| *start <= offset);
        let (_, range) = &origins[after.checked_sub(1)?];
        // PyTorch records code with no source as an empty range of an empty text.
        (!range.file.text.is_empty()).then_some(range)
    }

    fn build(
        name: String,
        text: String,
        first_line_number: usize,
        origins_loader: Option<OriginsLoader>,
    ) -> Arc<SourceFile> {
        let mut line_starts = vec![0];
        line_starts.extend(
            text.bytes()
                .enumerate()
                .filter(|&(_, byte)| byte == b'\n')
                .map(|(index, _)| index + 1),
        );
        Arc::new(SourceFile {
            name,
            text,
            line_starts,
            first_line_number,
            origins: OnceLock::new(),
            origins_loader: Mutex::new(origins_loader),
        })
    }

    /// The file name shown in messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The line number in `name` of the text's first line (1 unless the text is an excerpt).
    pub fn first_line_number(&self) -> usize {
        self.first_line_number
    }

    /// The whole source text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Byte offsets at which lines begin (0-based line index → offset).
    pub fn line_starts(&self) -> &[usize] {
        &self.line_starts
    }

    /// Number of lines; a final empty line after a trailing newline is not counted.
    pub fn line_count(&self) -> usize {
        let mut count = self.line_starts.len();
        if count > 1 && self.line_starts.last() == Some(&self.text.len()) {
            count -= 1;
        }
        count
    }

    /// 0-based index of the line containing byte `offset` (offsets past the end map to the last line).
    pub fn line_index(&self, offset: usize) -> usize {
        // `line_starts` is sorted and starts with 0, so the partition point is at least 1.
        self.line_starts
            .partition_point(|&start| start <= offset)
            .saturating_sub(1)
    }

    /// Byte range of 0-based line `index`, excluding its line terminator (`\n` or `\r\n`).
    pub fn line_bounds(&self, index: usize) -> Option<(usize, usize)> {
        let start = *self.line_starts.get(index)?;
        let mut end = match self.line_starts.get(index + 1) {
            Some(&next) => next - 1,
            None => self.text.len(),
        };
        if end > start && self.text.as_bytes().get(end - 1) == Some(&b'\r') {
            end -= 1;
        }
        Some((start, end))
    }

    /// Text of 0-based line `index` without its terminator; empty when out of range.
    pub fn line_text(&self, index: usize) -> &str {
        self.line_bounds(index)
            .and_then(|(start, end)| self.text.get(start..end))
            .unwrap_or("")
    }

    /// 1-based (line, column) of byte `offset`; the column counts characters, not bytes.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = self.clamp_offset(offset);
        let line = self.line_index(offset);
        let line_start = self.line_starts.get(line).copied().unwrap_or(0);
        let column = self
            .text
            .get(line_start..offset)
            .map(|prefix| prefix.chars().count())
            .unwrap_or(0);
        (line + 1, column + 1)
    }

    /// Moves `offset` into the text and back onto a character boundary.
    fn clamp_offset(&self, offset: usize) -> usize {
        let mut offset = offset.min(self.text.len());
        while offset > 0 && !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        offset
    }
}

impl fmt::Debug for SourceFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SourceFile")
            .field("name", &self.name)
            .field("len", &self.text.len())
            .finish()
    }
}

/// A byte range `[start, end)` of a [`SourceFile`].
#[derive(Clone)]
pub struct SourceRange {
    pub file: Arc<SourceFile>,
    pub start: usize,
    pub end: usize,
}

/// Lines of context PyTorch shows before and after a highlighted range.
pub const CONTEXT_LINES: usize = 2;

impl SourceRange {
    /// Builds a range, clamping it into the file and onto character boundaries.
    pub fn new(file: Arc<SourceFile>, start: usize, end: usize) -> SourceRange {
        let start = file.clamp_offset(start);
        let end = file.clamp_offset(end).max(start);
        SourceRange { file, start, end }
    }

    /// A range covering the whole file.
    pub fn whole_file(file: Arc<SourceFile>) -> SourceRange {
        let end = file.text.len();
        SourceRange {
            file,
            start: 0,
            end,
        }
    }

    /// The smallest range covering both `self` and `other` (which must be in the same file;
    /// if not, `self` is returned unchanged).
    pub fn to(&self, other: &SourceRange) -> SourceRange {
        if !Arc::ptr_eq(&self.file, &other.file) {
            return self.clone();
        }
        SourceRange::new(
            self.file.clone(),
            self.start.min(other.start),
            self.end.max(other.end),
        )
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.end.saturating_sub(self.start)
    }

    /// True for a zero-width range.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The covered text (empty if the range is somehow invalid).
    pub fn text(&self) -> &str {
        self.file.text.get(self.start..self.end).unwrap_or("")
    }

    /// 1-based (line, column) of the start; column counts characters.
    pub fn line_col(&self) -> (usize, usize) {
        self.file.line_col(self.start)
    }

    /// 1-based (line, column) of the end.
    pub fn end_line_col(&self) -> (usize, usize) {
        self.file.line_col(self.end)
    }

    /// PyTorch's `SourceRange::highlight`: location header, context lines, tildes, `<--- HERE`.
    pub fn highlight(&self) -> String {
        self.print_with_context(CONTEXT_LINES, "")
    }

    /// Like [`SourceRange::highlight`] with a chosen number of context lines before and after,
    /// and an optional function name for the header (`, in forward`).
    pub fn print_with_context(&self, context_lines: usize, function_name: &str) -> String {
        let file = &self.file;
        let start = file.clamp_offset(self.start);
        let end = file.clamp_offset(self.end).max(start);
        let first_line = file.line_index(start);
        // A range ending right after a newline still belongs to the line of that newline.
        let last_line = if end > start {
            file.line_index(end - 1).max(first_line)
        } else {
            first_line
        };

        let mut out = String::new();
        if !file.name.is_empty() {
            out.push_str(&format!(
                "  File \"{}\", line {}",
                file.name,
                file.first_line_number + first_line
            ));
            if !function_name.is_empty() {
                out.push_str(", in ");
                out.push_str(function_name);
            }
            out.push('\n');
        }
        for line in first_line.saturating_sub(context_lines)..first_line {
            out.push_str(file.line_text(line));
            out.push('\n');
        }

        // Work out the marker line under each highlighted line first, so that `<--- HERE`
        // can go on the last one that actually has tildes.
        let mut markers: Vec<(usize, String, usize)> = Vec::new();
        for line in first_line..=last_line {
            let Some((line_start, line_end)) = file.line_bounds(line) else {
                continue;
            };
            let line_str = file.text.get(line_start..line_end).unwrap_or("");
            let segment_start = start.clamp(line_start, line_end);
            let segment_end = end.clamp(line_start, line_end);
            let mut padding = String::new();
            let mut tildes = 0usize;
            let mut seen_content = false;
            for (relative, ch) in line_str.char_indices() {
                let offset = line_start + relative;
                if offset >= segment_end {
                    break;
                }
                let blank = ch == ' ' || ch == '\t';
                if offset < segment_start || (!seen_content && blank) {
                    padding.push(if ch == '\t' { '\t' } else { ' ' });
                } else {
                    seen_content = true;
                    tildes += 1;
                }
            }
            markers.push((line, padding, tildes));
        }
        let last_marked = markers.iter().rposition(|(_, _, tildes)| *tildes > 0);
        for (index, (line, padding, tildes)) in markers.iter().enumerate() {
            out.push_str(file.line_text(*line));
            out.push('\n');
            match last_marked {
                Some(last) if *tildes > 0 => {
                    out.push_str(padding);
                    out.push_str(&"~".repeat(*tildes));
                    if index == last {
                        out.push_str(" <--- HERE");
                    }
                    out.push('\n');
                }
                None if index == 0 => {
                    // Zero-width range (or only blanks): point at the start column.
                    let line_start = file.line_starts.get(*line).copied().unwrap_or(0);
                    let prefix = file.text.get(line_start..start).unwrap_or("");
                    for ch in prefix.chars() {
                        out.push(if ch == '\t' { '\t' } else { ' ' });
                    }
                    out.push_str("~ <--- HERE\n");
                }
                _ => {}
            }
        }
        let after_end = (last_line + 1 + context_lines).min(file.line_count());
        for line in last_line + 1..after_end {
            out.push_str(file.line_text(line));
            out.push('\n');
        }
        out
    }
}

impl fmt::Display for SourceRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.highlight())
    }
}

impl fmt::Debug for SourceRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (line, column) = self.line_col();
        let (end_line, end_column) = self.end_line_col();
        write!(
            f,
            "{}:{}:{}-{}:{}",
            self.file.name, line, column, end_line, end_column
        )
    }
}

impl PartialEq for SourceRange {
    fn eq(&self, other: &SourceRange) -> bool {
        Arc::ptr_eq(&self.file, &other.file) && self.start == other.start && self.end == other.end
    }
}

impl Eq for SourceRange {}
