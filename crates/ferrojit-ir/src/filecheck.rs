//! FileCheck with PyTorch's directive semantics (`torch/csrc/jit/testing/file_check.cpp`):
//! checks that a text (usually a printed graph) contains patterns in order.
//!
//! Directives are comments: `#`, up to six spaces or tabs, then `CHECK` followed by one of
//! `: `, `-NEXT: `, `-SAME: `, `-NOT: `, `-DAG: `, `-COUNT-N: `, `-COUNT-EXACTLY-N: `,
//! `-SOURCE-HIGHLIGHTED: `, `-REGEX: `; the pattern is the rest of the line, a plain
//! substring except for `CHECK-REGEX`.
//!
//! Each check searches from the end of the previous match. `SAME` allows no newline in
//! between; `NEXT` must match on the very next line; `COUNT-N` is N consecutive
//! non-overlapping matches (`EXACTLY` adds a `NOT` for one more); consecutive `NOT`s form a
//! group checked between the previous and the next positive match (or the end); consecutive
//! `DAG`s match in any order, each searched from the end of the previous group.
//! `SOURCE-HIGHLIGHTED` finds the pattern with `~` exactly under it on the next line and does
//! not move the search position. Failures read like PyTorch's, with the searched position
//! marked `~~~ <--- HERE`.
//!
//! `CHECK-REGEX` patterns are compiled by the `regex` crate, whose syntax covers what PyTorch's
//! ECMAScript patterns use in practice (classes, `\d \w \s`, groups, alternation, repetition,
//! anchors) and whose matching time is linear in the text, so no pattern can hang a test.
//! A pattern that does not compile is reported before any check runs.

use std::fmt;

use crate::attributes::quote_string;
use crate::graph::Graph;

/// A failed check, or a directive that could not be parsed. The message is PyTorch's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FileCheckError {
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckKind {
    Check,
    Next,
    Same,
    Not,
    Count { count: usize },
    Dag,
    SourceHighlighted,
    Regex,
}

/// One directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub kind: CheckKind,
    pub pattern: String,
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            CheckKind::Check => write!(f, "CHECK")?,
            CheckKind::Next => write!(f, "CHECK-NEXT")?,
            CheckKind::Same => write!(f, "CHECK-SAME")?,
            CheckKind::Not => write!(f, "CHECK-NOT")?,
            CheckKind::Count { count } => write!(f, "CHECK-COUNT-{count}")?,
            CheckKind::Dag => write!(f, "CHECK-DAG")?,
            CheckKind::SourceHighlighted => write!(f, "CHECK-SOURCE-HIGHLIGHTED")?,
            CheckKind::Regex => write!(f, "CHECK-REGEX")?,
        }
        write!(f, ": {}", self.pattern)
    }
}

/// A list of checks, grouped as PyTorch groups them (runs of NOT and runs of DAG).
#[derive(Debug, Clone, Default)]
pub struct FileCheck {
    groups: Vec<Vec<Check>>,
}

/// A half-open byte range of the checked text.
#[derive(Debug, Clone, Copy)]
struct Range {
    start: usize,
    end: usize,
}

impl FileCheck {
    pub fn new() -> FileCheck {
        FileCheck::default()
    }

    /// Reads every `# CHECK…` directive of `text`.
    pub fn from_directives(text: &str) -> Result<FileCheck, FileCheckError> {
        let mut file_check = FileCheck::new();
        let mut position = find_next_directive(text, 0);
        while let Some(start) = position {
            let end = file_check.parse_single(text, start)?;
            position = find_next_directive(text, end);
        }
        Ok(file_check)
    }

    pub fn add(&mut self, check: Check) {
        let groupable = matches!(check.kind, CheckKind::Not | CheckKind::Dag);
        match self.groups.last_mut() {
            Some(group) if groupable && group[0].kind == check.kind => group.push(check),
            _ => self.groups.push(vec![check]),
        }
    }

    fn with(mut self, kind: CheckKind, pattern: &str) -> FileCheck {
        self.add(Check {
            kind,
            pattern: pattern.to_string(),
        });
        self
    }

    pub fn check(self, pattern: &str) -> FileCheck {
        self.with(CheckKind::Check, pattern)
    }
    pub fn check_next(self, pattern: &str) -> FileCheck {
        self.with(CheckKind::Next, pattern)
    }
    pub fn check_same(self, pattern: &str) -> FileCheck {
        self.with(CheckKind::Same, pattern)
    }
    pub fn check_not(self, pattern: &str) -> FileCheck {
        self.with(CheckKind::Not, pattern)
    }
    pub fn check_dag(self, pattern: &str) -> FileCheck {
        self.with(CheckKind::Dag, pattern)
    }
    pub fn check_source_highlighted(self, pattern: &str) -> FileCheck {
        self.with(CheckKind::SourceHighlighted, pattern)
    }
    pub fn check_regex(self, pattern: &str) -> FileCheck {
        self.with(CheckKind::Regex, pattern)
    }
    /// `count` consecutive matches; `exactly` also requires no further match after them.
    /// A count of zero is `check_not`, as in PyTorch.
    pub fn check_count(self, pattern: &str, count: usize, exactly: bool) -> FileCheck {
        if count == 0 {
            return self.check_not(pattern);
        }
        let file_check = self.with(CheckKind::Count { count }, pattern);
        if exactly {
            file_check.check_not(pattern)
        } else {
            file_check
        }
    }

    /// Parses the directive whose `CHECK` word ends at `start`; returns where it ends.
    fn parse_single(&mut self, text: &str, start: usize) -> Result<usize, FileCheckError> {
        let rest = &text[start..];
        let line_end = rest.find('\n').map(|i| start + i).unwrap_or(text.len());
        let simple = [
            (": ", CheckKind::Check),
            ("-NEXT: ", CheckKind::Next),
            ("-SAME: ", CheckKind::Same),
            ("-NOT: ", CheckKind::Not),
            ("-DAG: ", CheckKind::Dag),
            ("-SOURCE-HIGHLIGHTED: ", CheckKind::SourceHighlighted),
            ("-REGEX: ", CheckKind::Regex),
        ];
        for (suffix, kind) in simple {
            if rest.starts_with(suffix) {
                let pattern = &text[(start + suffix.len()).min(line_end)..line_end];
                self.add(Check {
                    kind,
                    pattern: pattern.to_string(),
                });
                return Ok(line_end);
            }
        }
        if let Some(after) = rest.strip_prefix("-COUNT-") {
            let (exactly, after) = match after.strip_prefix("EXACTLY-") {
                Some(after) => (true, after),
                None => (false, after),
            };
            let count_start = text.len() - after.len();
            let colon = after[..line_end - count_start].find(": ");
            let parsed =
                colon.and_then(|colon| after[..colon].parse::<usize>().ok().map(|n| (n, colon)));
            let Some((count, colon)) = parsed else {
                return Err(FileCheckError {
                    message: format!(
                        "Could not parse check at:\n{}Check for bad input.",
                        highlight(text, start, start + 1)
                    ),
                });
            };
            if count == 0 {
                // PyTorch accepts the directive and then fails an internal assert when it runs;
                // refuse it up front with a message that says what to write instead.
                return Err(FileCheckError {
                    message: format!(
                        "CHECK-COUNT-0 can never match; write CHECK-NOT instead, at:\n{}Check for bad input.",
                        highlight(text, start, start + 1)
                    ),
                });
            }
            let pattern_start = (count_start + colon + 2).min(line_end);
            let pattern = text[pattern_start..line_end].to_string();
            *self = std::mem::take(self).check_count(&pattern, count, exactly);
            return Ok(line_end);
        }
        Err(FileCheckError {
            message: format!(
                "Could not parse check at:\n{}Check for bad input.",
                highlight(text, start, start + 1)
            ),
        })
    }

    /// Runs the checks over a graph's printed form.
    pub fn run_graph(&self, graph: &Graph) -> Result<(), FileCheckError> {
        self.run(&graph.to_ir_string())
    }

    /// Runs the checks over `text`.
    pub fn run(&self, text: &str) -> Result<(), FileCheckError> {
        if self.groups.first().is_none_or(|g| g.is_empty()) {
            return Err(FileCheckError {
                message:
                    "No checks have been added to this instance of Filecheck! Check for bad input."
                        .to_string(),
            });
        }
        for check in self.groups.iter().flatten() {
            if check.kind == CheckKind::Regex {
                if let Err(error) = regex::Regex::new(&check.pattern) {
                    return Err(FileCheckError {
                        message: format!("Invalid regex in {check}\n{error}"),
                    });
                }
            }
        }
        let mut previous = Range { start: 0, end: 0 };
        let mut index = 0;
        while index < self.groups.len() {
            let group = &self.groups[index];
            if group[0].kind != CheckKind::Not {
                previous = match_group(group, text, previous)?;
            } else if let Some(next) = self.groups.get(index + 1) {
                let after = match_group(next, text, previous)?;
                check_nots(group, text, previous.end, after.start)?;
                previous = after;
                index += 1;
            } else {
                check_nots(group, text, previous.end, text.len())?;
            }
            index += 1;
        }
        Ok(())
    }
}

/// Runs the `# CHECK` directives found in `checks` over `text`.
pub fn run_directives(checks: &str, text: &str) -> Result<(), FileCheckError> {
    FileCheck::from_directives(checks)?.run(text)
}

/// The byte offset just after the `CHECK` of the next directive at or after `from`.
fn find_next_directive(text: &str, from: usize) -> Option<usize> {
    let mut search = from;
    loop {
        let hash = search + text.get(search..)?.find('#')?;
        let mut position = hash + 1;
        let mut spaces = 0;
        while spaces < 6 && matches!(text.as_bytes().get(position), Some(b' ' | b'\t')) {
            position += 1;
            spaces += 1;
        }
        if text[position..].starts_with("CHECK") {
            return Some(position + "CHECK".len());
        }
        search = position.max(hash + 1);
    }
}

/// Where a pattern occurs at or after `start`, ending by `limit`: (position, length).
fn find(check: &Check, text: &str, start: usize, limit: usize) -> Option<(usize, usize)> {
    if start > text.len() {
        return None;
    }
    let found = if check.kind == CheckKind::Regex {
        let pattern = regex::Regex::new(&check.pattern).ok()?;
        pattern
            .find_at(text, start)
            .map(|found| (found.start(), found.len()))
    } else {
        text[start..]
            .find(check.pattern.as_str())
            .map(|offset| (start + offset, check.pattern.len()))
    };
    found.filter(|(position, length)| position + length <= limit)
}

fn expect_find(check: &Check, text: &str, start: usize) -> Result<(usize, usize), FileCheckError> {
    expect_find_for(check, check, text, start)
}

/// Finds `searched`; a failure names `reported` as the check it came from.
fn expect_find_for(
    searched: &Check,
    reported: &Check,
    text: &str,
    start: usize,
) -> Result<(usize, usize), FileCheckError> {
    find(searched, text, start, text.len()).ok_or_else(|| {
        // PyTorch reports regex failures without the searched text, and passes the
        // pattern's length as the end of the searched range.
        let (label, searched_text) = if searched.kind == CheckKind::Regex {
            ("regex ", String::new())
        } else {
            ("", highlight(text, start, searched.pattern.len()))
        };
        FileCheckError {
            message: format!(
                "Expected to find {label}{} but did not find it\nSearched string:\n{searched_text}From {reported}\n",
                quote_string(&searched.pattern),
            ),
        }
    })
}

fn expect_no_newline(
    check: &Check,
    text: &str,
    from: usize,
    to: usize,
) -> Result<(), FileCheckError> {
    if let Some(offset) = text[from..to.max(from)].find('\n') {
        return Err(FileCheckError {
            message: format!(
                "Expected to not find {} but found it\n{}From {check}\n",
                quote_string("\n"),
                highlight(text, from + offset, from + offset + 1)
            ),
        });
    }
    Ok(())
}

fn check_nots(group: &[Check], text: &str, start: usize, end: usize) -> Result<(), FileCheckError> {
    if end < start {
        return Ok(());
    }
    for check in group {
        if let Some((position, length)) = find(check, text, start, end) {
            return Err(FileCheckError {
                message: format!(
                    "Expected to not find {} but found it\n{}From {check}\n",
                    quote_string(&check.pattern),
                    highlight(text, position, position + length)
                ),
            });
        }
    }
    Ok(())
}

fn match_group(group: &[Check], text: &str, previous: Range) -> Result<Range, FileCheckError> {
    let check = &group[0];
    if check.kind == CheckKind::Dag {
        let mut begin = usize::MAX;
        let mut end = 0;
        for check in group {
            let (position, length) = expect_find(check, text, previous.end)?;
            begin = begin.min(position);
            end = end.max(position + length);
        }
        return Ok(Range { start: begin, end });
    }
    let start = previous.end;
    match check.kind {
        CheckKind::Check | CheckKind::Regex => {
            let (position, length) = expect_find(check, text, start)?;
            Ok(Range {
                start: position,
                end: position + length,
            })
        }
        CheckKind::Same => {
            let (position, length) = expect_find(check, text, start)?;
            expect_no_newline(check, text, start, position)?;
            Ok(Range {
                start: position,
                end: position + length,
            })
        }
        CheckKind::Next => {
            let newline = Check {
                kind: CheckKind::Check,
                pattern: "\n".to_string(),
            };
            let (line_end, _) = expect_find_for(&newline, check, text, start)?;
            let (position, length) = expect_find(check, text, line_end + 1)?;
            expect_no_newline(check, text, line_end + 1, position)?;
            Ok(Range {
                start: position,
                end: position + length,
            })
        }
        CheckKind::Count { count } => {
            let mut cursor = start;
            let mut first = usize::MAX;
            for _ in 0..count {
                let (position, length) = expect_find(check, text, cursor)?;
                first = first.min(position);
                cursor = position + length;
            }
            Ok(Range {
                start: first,
                end: cursor,
            })
        }
        CheckKind::SourceHighlighted => {
            check_source_highlighted(check, text, start)?;
            Ok(previous)
        }
        CheckKind::Not | CheckKind::Dag => Ok(previous),
    }
}

/// The pattern must occur with `~` under exactly its columns on the next line.
fn check_source_highlighted(check: &Check, text: &str, start: usize) -> Result<(), FileCheckError> {
    let not_highlighted = |position: usize| FileCheckError {
        message: format!(
            "Expected to find {}highlighted but it is not.\n{}",
            quote_string(&check.pattern),
            highlight(text, position, check.pattern.len())
        ),
    };
    let mut search = start;
    let mut found_once = false;
    while let Some((position, length)) = find(check, text, search, text.len()) {
        found_once = true;
        let line_start = text[..position].rfind('\n').map(|i| i + 1).unwrap_or(0);
        let column = position - line_start;
        let Some(next_line_start) = text[position..].find('\n').map(|i| position + i + 1) else {
            return Err(not_highlighted(position));
        };
        let next_line_end = text[next_line_start..]
            .find('\n')
            .map(|i| next_line_start + i)
            .unwrap_or(text.len());
        let next_line = &text[next_line_start..next_line_end];
        let under = next_line.get(column..column + length);
        if next_line_start + column + length >= text.len() {
            return Err(not_highlighted(position));
        }
        if under.is_some_and(|u| u.bytes().all(|b| b == b'~')) {
            let highlight_start = next_line_start + column;
            let highlight_end = highlight_start + length;
            let tilde = Check {
                kind: CheckKind::Check,
                pattern: "~".to_string(),
            };
            for (from, to) in [
                (highlight_start.saturating_sub(1), highlight_start),
                (highlight_end, highlight_end + 1),
            ] {
                if let Some((found, _)) = find(&tilde, text, from, to) {
                    return Err(FileCheckError {
                        message: format!(
                            "Expected to not find {} but found it\n{}From {check}\n",
                            quote_string("~"),
                            highlight(text, found, found + 1)
                        ),
                    });
                }
            }
            return Ok(());
        }
        search = position + 1;
    }
    if !found_once {
        expect_find(check, text, start)?;
    }
    Err(not_highlighted(start))
}

/// Lines of context PyTorch prints around a highlighted range.
const CONTEXT_LINES: usize = 3;

/// PyTorch's `SourceRange::highlight` for the byte range `start..end` of `text`: up to three
/// lines of context before, each line of the range followed by `~` under it (`<--- HERE` on
/// the last), then up to three lines after. `end` may lie before `start` (PyTorch passes a
/// length as the end for ranges that were not found); then only context is printed.
fn highlight(text: &str, start: usize, end: usize) -> String {
    let bytes = text.as_bytes();
    let at = |i: usize| bytes.get(i).copied().unwrap_or(0);
    let size = bytes.len();
    if start > size {
        return String::new();
    }
    let range_end = end.min(size);
    let mut begin_line = start;
    while begin_line > 0 && at(begin_line - 1) != b'\n' {
        begin_line -= 1;
    }
    let mut end_line = range_end;
    while end_line < size && at(end_line) != b'\n' {
        end_line += 1;
    }
    let mut begin_context = begin_line;
    let mut newlines = 0;
    while begin_context > 0 {
        if at(begin_context - 1) == b'\n' {
            newlines += 1;
        }
        if newlines >= CONTEXT_LINES {
            break;
        }
        begin_context -= 1;
    }
    let mut end_context = end_line;
    newlines = 0;
    while end_context < size {
        if at(end_context) == b'\n' {
            newlines += 1;
        }
        if newlines >= CONTEXT_LINES {
            break;
        }
        end_context += 1;
    }
    let slice = |from: usize, to: usize| {
        String::from_utf8_lossy(&bytes[from.min(size)..to.min(size).max(from.min(size))])
            .into_owned()
    };
    let mut out = slice(begin_context, start);
    let mut line_start = start;
    let mut line_end = start;
    while line_start < range_end {
        while line_end < size && at(line_end) != b'\n' {
            line_end += 1;
        }
        let actual_line = slice(line_start, line_end + 1);
        out.push_str(&actual_line);
        if !actual_line.ends_with('\n') {
            out.push('\n');
        }
        let mut highlight_begin = line_start;
        while highlight_begin > 0 && at(highlight_begin - 1) != b'\n' {
            highlight_begin -= 1;
        }
        let mut highlight_end = line_start;
        while highlight_end < range_end && at(highlight_end) != b'\n' {
            highlight_end += 1;
        }
        let mut empty_space = 0;
        for i in highlight_begin..highlight_end {
            if at(i) == b' ' || i < start {
                empty_space += 1;
            } else {
                break;
            }
        }
        let highlight_space = highlight_end - highlight_begin - empty_space;
        if highlight_space > 0 {
            let more_lines = (line_end..=range_end).any(|i| at(i) != b'\n' && at(i) != b' ');
            out.push_str(&" ".repeat(empty_space));
            out.push_str(&"~".repeat(highlight_space));
            out.push_str(if more_lines && line_end != range_end {
                "\n"
            } else {
                " <--- HERE\n"
            });
        }
        line_end += 1;
        line_start = line_end;
    }
    if line_end <= size {
        // PyTorch takes `end_context - line_end` characters; when the context ends before
        // `line_end` (a range whose end was given as a length) that count wraps around and
        // the rest of the text is printed. Keep that, so messages match PyTorch's.
        let tail = if end_context < line_end {
            slice(line_end, size)
        } else {
            slice(line_end, end_context)
        };
        out.push_str(&tail);
        if !tail.is_empty() && !tail.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}
