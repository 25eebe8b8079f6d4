//! `str` methods (PyTorch's string operator table in register_prim_ops.cpp) as typed
//! kernels: search, split/join, strip, case mapping, predicates, padding and indexing. `%`-formatting and
//! the int/text conversions are in `str_format_ops`.
//!
//! PyTorch works on the bytes of a `std::string` and uses the C locale's `<cctype>`
//! classification. ferrojit does too wherever a position or a length is involved (`len`,
//! indexing, slicing, `find`/`count` offsets, `startswith` windows, padding widths, `list(s)`):
//! `len("héllo")` is 6 and `"héllo".find("l")` is 3, as in PyTorch. A result that would cut a
//! UTF-8 character in two is an error here (Rust strings stay valid UTF-8); PyTorch builds it
//! and fails when the string reaches Python. Splitting on whitespace, `splitlines` and
//! `strip` match single bytes from their sets, as PyTorch's `find_first_of` does (so
//! `"a\u{2000}b".split()` is `["a", "b"]`); case mapping keeps to ASCII, as `<cctype>` does.
//! `replace` with an empty `old` inserts at the front, as PyTorch's loop does.

use std::ops::Deref;
use std::sync::Arc;

use super::binding::{typed, FromArgument};
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::opdef::OperatorDeclaration;

/// A `str` argument that shares the argument's text instead of copying it, as the `String`
/// conversion does: `len(s)` and `s[i]` stay O(1) in a loop over a long string. Any other
/// value is `to_str`'s type error, the same message as for `String`.
pub(crate) struct SharedStr(pub Arc<str>);

impl FromArgument for SharedStr {
    fn from_argument(value: &IValue) -> Result<Self> {
        match value {
            IValue::Str(text) => Ok(SharedStr(Arc::clone(text))),
            // Never a string here: the conversion fails with `to_str`'s own message.
            other => other.to_str().map(|text| SharedStr(Arc::from(text))),
        }
    }
}

impl Deref for SharedStr {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// The longest string a kernel builds (in characters): padding to a huge width fails with an
/// error instead of exhausting memory.
pub(crate) const MAX_STRING_CHARS: usize = 1 << 28;

pub(crate) fn too_long(what: &str) -> RuntimeError {
    RuntimeError::Other(format!(
        "{what}: the result would exceed {MAX_STRING_CHARS} characters"
    ))
}

/// A string built from bytes PyTorch would produce, or an error when they cut a character.
fn string_from_bytes(bytes: Vec<u8>, what: &str) -> Result<String> {
    String::from_utf8(bytes).map_err(|error| {
        RuntimeError::Other(format!(
            "{what}: the result is not valid UTF-8 (TorchScript strings are bytes, and this \
             cuts a multi-byte character at byte {})",
            error.utf8_error().valid_up_to()
        ))
    })
}

/// `std::string::find(needle, from)`: the first match at or after `from`
/// (an empty needle matches at `from` itself while `from <= len`).
fn find_from(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if from > haystack.len() {
        return None;
    }
    if needle.is_empty() {
        return Some(from);
    }
    if needle.len() > haystack.len() {
        return None;
    }
    (from..=haystack.len() - needle.len()).find(|&i| haystack[i..i + needle.len()] == *needle)
}

/// The last match of `needle` in `haystack` (PyTorch loops `find` from one past each match).
fn rfind_all(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let mut found = find_from(haystack, needle, 0)?;
    while let Some(next) = find_from(haystack, needle, found + 1) {
        found = next;
    }
    Some(found)
}

/// PyTorch's start/end adjustment for `find`, `count`, `startswith`...: negative values
/// count from the end, and `end = -1` means the whole string.
fn adjust_bounds(size: usize, start: i64, end: i64) -> (i64, i64) {
    let size = i64::try_from(size).unwrap_or(i64::MAX);
    let start = if start < 0 {
        size.saturating_add(start).max(0)
    } else {
        start
    };
    let end = if end < 0 {
        size.saturating_add(end).saturating_add(1).max(0)
    } else {
        end
    };
    (start, end)
}

/// PyTorch's `stringFindImpl`: the index of the first (or last) match of `needle` within
/// `text[start:end]`, or -1.
fn find_impl(text: &[u8], needle: &[u8], start: i64, end: i64, reverse: bool) -> i64 {
    let (start, end) = adjust_bounds(text.len(), start, end);
    let window: &[u8] = if end > start {
        let first = usize::try_from(start).unwrap_or(usize::MAX);
        let last = usize::try_from(end).unwrap_or(usize::MAX).min(text.len());
        if first >= last {
            &[]
        } else {
            &text[first..last]
        }
    } else {
        &[]
    };
    if window.len() < needle.len() {
        return -1;
    }
    let found = if reverse {
        rfind_all(window, needle)
    } else {
        find_from(window, needle, 0)
    };
    match found {
        Some(position) => position as i64 + start,
        None => -1,
    }
}

/// `find`, `rfind`, `index`, `rindex`: the first (or last) match of `needle` in
/// `text[start:end]`; -1 when none, or a ValueError for the `index` forms.
fn find_kernel(
    text: &str,
    needle: &str,
    start: i64,
    end: i64,
    reverse: bool,
    raise: bool,
) -> Result<i64> {
    let result = find_impl(text.as_bytes(), needle.as_bytes(), start, end, reverse);
    if raise && result < 0 {
        return Err(RuntimeError::Other(
            "ValueError: substring not found".to_string(),
        ));
    }
    Ok(result)
}

fn find(text: SharedStr, needle: SharedStr, start: i64, end: i64) -> Result<i64> {
    find_kernel(&text, &needle, start, end, false, false)
}

fn rfind(text: SharedStr, needle: SharedStr, start: i64, end: i64) -> Result<i64> {
    find_kernel(&text, &needle, start, end, true, false)
}

fn index(text: SharedStr, needle: SharedStr, start: i64, end: i64) -> Result<i64> {
    find_kernel(&text, &needle, start, end, false, true)
}

fn rindex(text: SharedStr, needle: SharedStr, start: i64, end: i64) -> Result<i64> {
    find_kernel(&text, &needle, start, end, true, true)
}

/// `str.count(sub, start, end)`: non-overlapping matches starting before `end`.
fn count(text: SharedStr, needle: SharedStr, start: i64, end: i64) -> Result<i64> {
    let (text, needle) = (text.as_bytes(), needle.as_bytes());
    let size = text.len() as i64;
    if start > size {
        return Ok(0);
    }
    let (start, end) = adjust_bounds(text.len(), start, end);
    if needle.is_empty() {
        // PyTorch loops forever here; Python counts every position of the window.
        let last = end.min(size);
        return Ok(if last < start { 0 } else { last - start + 1 });
    }
    let mut occurrences = 0i64;
    let mut position = usize::try_from(start).unwrap_or(0);
    while let Some(found) = find_from(text, needle, position) {
        if (found as i64) < end {
            occurrences += 1;
        } else {
            break;
        }
        position = found + needle.len();
    }
    Ok(occurrences)
}

/// The `[start:end]` window `startswith`/`endswith` test (end=-1 means the whole string).
fn str_window(text: &str, start: i64, end: i64) -> &[u8] {
    let bytes = text.as_bytes();
    let (start, end) = adjust_bounds(bytes.len(), start, end);
    let size = bytes.len() as i64;
    let (start, end) = (start.min(size), end.min(size));
    if end <= start {
        return &[];
    }
    &bytes[start as usize..end as usize]
}

fn startswith(text: SharedStr, prefix: SharedStr, start: i64, end: i64) -> Result<bool> {
    Ok(str_window(&text, start, end).starts_with(prefix.as_bytes()))
}

fn endswith(text: SharedStr, suffix: SharedStr, start: i64, end: i64) -> Result<bool> {
    Ok(str_window(&text, start, end).ends_with(suffix.as_bytes()))
}

// ----- split / join ----------------------------------------------------------------------

/// The separator bytes of `str.split()` without an argument. PyTorch's source writes them
/// as a C++ string, `" \t\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"`, and matches it with
/// `find_first_of`, so the set is bytes: `\x85` is the single byte 0x85, and `\u2028` and
/// `\u2029` contribute their UTF-8 bytes E2, 80, A8 and A9, each a separator on its own.
const SPLIT_WHITESPACE: &[u8] = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x85\xe2\x80\xa8\xa9";

/// The line boundary bytes of `splitlines`: the same set without space and tab.
const LINE_BOUNDARIES: &[u8] = b"\n\r\x0b\x0c\x1c\x1d\x1e\x85\xe2\x80\xa8\xa9";

fn split(text: SharedStr, separator: Option<SharedStr>, max: i64) -> Result<Vec<String>> {
    let Some(separator) = separator else {
        // Runs of whitespace bytes separate; `max` is ignored, as in PyTorch.
        return text
            .as_bytes()
            .split(|byte| SPLIT_WHITESPACE.contains(byte))
            .filter(|part| !part.is_empty())
            .map(|part| string_from_bytes(part.to_vec(), "str.split"))
            .collect();
    };
    let (text, separator): (&str, &str) = (&text, &separator);
    if separator.is_empty() {
        return Err(RuntimeError::Other(
            "ValueError: empty separator".to_string(),
        ));
    }
    Ok(if max < 0 {
        text.split(separator).map(str::to_string).collect()
    } else {
        let pieces = usize::try_from(max).unwrap_or(usize::MAX).saturating_add(1);
        text.splitn(pieces, separator).map(str::to_string).collect()
    })
}

/// `str.rsplit(separator=' ', max=-1)`: splits from the right (PyTorch's default separator
/// is a single space, not the whitespace algorithm of `split()`).
fn rsplit(text: SharedStr, separator: SharedStr, max: i64) -> Result<Vec<String>> {
    let (text, separator): (&str, &str) = (&text, &separator);
    if separator.is_empty() {
        return Err(RuntimeError::Other(
            "ValueError: empty separator".to_string(),
        ));
    }
    let mut parts: Vec<String> = if max < 0 {
        text.rsplit(separator).map(str::to_string).collect()
    } else {
        let pieces = usize::try_from(max).unwrap_or(usize::MAX).saturating_add(1);
        text.rsplitn(pieces, separator)
            .map(str::to_string)
            .collect()
    };
    parts.reverse();
    Ok(parts)
}

/// `str.splitlines(keepends)`: every boundary character ends a line; with `keepends` PyTorch
/// adds the boundary as its own list element.
fn splitlines(text: SharedStr, keepends: bool) -> Result<Vec<String>> {
    let bytes = text.as_bytes();
    let mut parts = Vec::new();
    let mut start = 0;
    for (at, byte) in bytes.iter().enumerate() {
        if LINE_BOUNDARIES.contains(byte) {
            parts.push(string_from_bytes(
                bytes[start..at].to_vec(),
                "str.splitlines",
            )?);
            if keepends {
                parts.push(string_from_bytes(vec![*byte], "str.splitlines")?);
            }
            start = at + 1;
        }
    }
    if start != bytes.len() {
        parts.push(string_from_bytes(
            bytes[start..].to_vec(),
            "str.splitlines",
        )?);
    }
    Ok(parts)
}

fn join(separator: SharedStr, values: Vec<String>) -> Result<String> {
    let mut out = String::new();
    for (position, item) in values.iter().enumerate() {
        if position > 0 {
            out.push_str(&separator);
        }
        out.push_str(item);
        if out.len() > MAX_STRING_CHARS {
            return Err(too_long("str.join"));
        }
    }
    Ok(out)
}

/// `list(s)`: the bytes of a string, each as a string.
fn chars_list(text: SharedStr) -> Result<Vec<String>> {
    text.as_bytes()
        .iter()
        .map(|&byte| string_from_bytes(vec![byte], "list(str)"))
        .collect()
}

/// The three strings of `partition`/`rpartition`.
fn three_strings(before: &str, found: &str, after: &str) -> Vec<IValue> {
    vec![before.into(), found.into(), after.into()]
}

fn partition(text: SharedStr, separator: SharedStr) -> Result<Vec<IValue>> {
    let (text, separator): (&str, &str) = (&text, &separator);
    Ok(match text.find(separator) {
        Some(position) => three_strings(
            &text[..position],
            separator,
            &text[position + separator.len()..],
        ),
        None => three_strings(text, "", ""),
    })
}

fn rpartition(text: SharedStr, separator: SharedStr) -> Result<Vec<IValue>> {
    let (text, separator): (&str, &str) = (&text, &separator);
    Ok(match text.rfind(separator) {
        Some(position) => three_strings(
            &text[..position],
            separator,
            &text[position + separator.len()..],
        ),
        None => three_strings("", "", text),
    })
}

fn replace(text: SharedStr, old: SharedStr, new: SharedStr, max: i64) -> Result<String> {
    let (text, old, new): (&str, &str, &str) = (&text, &old, &new);
    if old.is_empty() {
        // PyTorch finds "" where it last inserted `new` and inserts again, so every
        // insertion lands at the front, and without a `max` it never stops.
        if max < 0 {
            return Err(RuntimeError::Other(
                "str.replace with an empty `old` and no `max` never returns in TorchScript \
                 (PyTorch inserts `new` at the front forever); pass a `max`"
                    .to_string(),
            ));
        }
        let count = usize::try_from(max).unwrap_or(usize::MAX);
        if new.len().saturating_mul(count).saturating_add(text.len()) > MAX_STRING_CHARS {
            return Err(too_long("str.replace"));
        }
        return Ok(new.repeat(count) + text);
    }
    let limit = usize::try_from(max).unwrap_or(usize::MAX);
    let matches = text.matches(old).count();
    let replaced = matches.min(limit);
    let growth = new.len().saturating_sub(old.len()).saturating_mul(replaced);
    if text.len().saturating_add(growth) > MAX_STRING_CHARS {
        return Err(too_long("str.replace"));
    }
    Ok(if max < 0 {
        text.replace(old, new)
    } else {
        text.replacen(old, new, limit)
    })
}

// ----- strip -----------------------------------------------------------------------------

fn strip_kernel(text: &str, chars: &str, left: bool, right: bool) -> Result<String> {
    // PyTorch's `find_first_not_of(chars)`: any byte of `chars` is stripped on its own.
    let set = chars.as_bytes();
    let mut out = text.as_bytes();
    if right {
        let keep = out
            .iter()
            .rposition(|byte| !set.contains(byte))
            .map_or(0, |at| at + 1);
        out = &out[..keep];
    }
    if left {
        let skip = out
            .iter()
            .position(|byte| !set.contains(byte))
            .unwrap_or(out.len());
        out = &out[skip..];
    }
    string_from_bytes(out.to_vec(), "str.strip")
}

fn strip(text: SharedStr, chars: SharedStr) -> Result<String> {
    strip_kernel(&text, &chars, true, true)
}

fn lstrip(text: SharedStr, chars: SharedStr) -> Result<String> {
    strip_kernel(&text, &chars, true, false)
}

fn rstrip(text: SharedStr, chars: SharedStr) -> Result<String> {
    strip_kernel(&text, &chars, false, true)
}

// ----- case ------------------------------------------------------------------------------

fn lower(text: SharedStr) -> Result<String> {
    Ok(text.chars().map(|c| c.to_ascii_lowercase()).collect())
}

fn upper(text: SharedStr) -> Result<String> {
    Ok(text.chars().map(|c| c.to_ascii_uppercase()).collect())
}

fn swapcase(text: SharedStr) -> Result<String> {
    Ok(text
        .chars()
        .map(|c| {
            if c == c.to_ascii_uppercase() {
                c.to_ascii_lowercase()
            } else {
                c.to_ascii_uppercase()
            }
        })
        .collect())
}

fn capitalize(text: SharedStr) -> Result<String> {
    Ok(text
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i == 0 {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect())
}

/// `str.title()`: upper case after every non-letter, lower case elsewhere.
fn title(text: SharedStr) -> Result<String> {
    let mut out = String::new();
    let mut previous_is_letter = false;
    for c in text.chars() {
        out.push(if previous_is_letter {
            c.to_ascii_lowercase()
        } else {
            c.to_ascii_uppercase()
        });
        previous_is_letter = c.is_ascii_alphabetic();
    }
    Ok(out)
}

// ----- predicates ------------------------------------------------------------------------

/// C's `isspace` in the C locale.
fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

/// Python's `is*` string methods are False for the empty string.
fn all_chars(text: &str, test: fn(char) -> bool) -> Result<bool> {
    Ok(!text.is_empty() && text.chars().all(test))
}

fn isdigit(text: SharedStr) -> Result<bool> {
    all_chars(&text, |c| c.is_ascii_digit())
}

fn isspace(text: SharedStr) -> Result<bool> {
    all_chars(&text, is_c_space)
}

fn isalnum(text: SharedStr) -> Result<bool> {
    all_chars(&text, |c| c.is_ascii_alphanumeric())
}

fn isalpha(text: SharedStr) -> Result<bool> {
    all_chars(&text, |c| c.is_ascii_alphabetic())
}

/// `isupper`/`islower`: at least one letter, and every letter of the wanted case.
fn cased(text: &str, want_upper: bool) -> Result<bool> {
    let mut found_letter = false;
    let mut all_match = true;
    for c in text.chars() {
        if c.is_ascii_alphabetic() {
            found_letter = true;
            let matches = if want_upper {
                c.is_ascii_uppercase()
            } else {
                c.is_ascii_lowercase()
            };
            if !matches {
                all_match = false;
                break;
            }
        }
    }
    Ok(found_letter && all_match)
}

fn isupper(text: SharedStr) -> Result<bool> {
    cased(&text, true)
}

fn islower(text: SharedStr) -> Result<bool> {
    cased(&text, false)
}

/// PyTorch's (Python 2 style) `isidentifier`: non-empty, not starting with a digit, all
/// alphanumeric.
fn isidentifier(text: SharedStr) -> Result<bool> {
    Ok(match text.chars().next() {
        None => false,
        Some(first) if first.is_ascii_digit() => false,
        Some(_) => text.chars().all(|c| c.is_ascii_alphanumeric()),
    })
}

fn istitle(text: SharedStr) -> Result<bool> {
    let mut result = false;
    let mut previous_is_letter = false;
    for c in text.chars() {
        if previous_is_letter {
            if c != c.to_ascii_lowercase() {
                result = false;
                break;
            }
        } else {
            if c != c.to_ascii_uppercase() {
                result = false;
                break;
            }
            if c.is_ascii_alphabetic() {
                result = true;
            }
        }
        previous_is_letter = c.is_ascii_alphabetic();
    }
    Ok(result)
}

/// True for the empty string, unlike the other predicates.
fn isprintable(text: SharedStr) -> Result<bool> {
    Ok(text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c.is_ascii_punctuation() || c == ' '))
}

// ----- padding ---------------------------------------------------------------------------

/// The fill character: one byte, as PyTorch checks the `std::string`'s size.
fn fill_char(fill: &str) -> Result<char> {
    match fill.as_bytes() {
        [byte] => Ok(char::from(*byte)),
        _ => Err(RuntimeError::Other(
            "TypeError: The fill character must be exactly one character long".to_string(),
        )),
    }
}

/// How many fill characters reach `width` bytes (0 when the string is already that long).
fn padding(text: &str, width: i64, what: &str) -> Result<usize> {
    let length = text.len();
    let width = usize::try_from(width).unwrap_or(0);
    if width > MAX_STRING_CHARS {
        return Err(too_long(what));
    }
    Ok(width.saturating_sub(length))
}

fn repeat_char(c: char, count: usize) -> String {
    std::iter::repeat_n(c, count).collect()
}

fn ljust(text: SharedStr, width: i64, fill: SharedStr) -> Result<String> {
    let fill = fill_char(&fill)?;
    let count = padding(&text, width, "str.ljust")?;
    Ok(format!("{}{}", &*text, repeat_char(fill, count)))
}

fn rjust(text: SharedStr, width: i64, fill: SharedStr) -> Result<String> {
    let fill = fill_char(&fill)?;
    let count = padding(&text, width, "str.rjust")?;
    Ok(format!("{}{}", repeat_char(fill, count), &*text))
}

/// `str.center`: PyTorch puts the extra fill character on the left when `width` is odd.
fn center(text: SharedStr, width: i64, fill: SharedStr) -> Result<String> {
    let fill = fill_char(&fill)?;
    let total = padding(&text, width, "str.center")?;
    let (mut left, mut right) = (total / 2, total.div_ceil(2));
    if width % 2 != 0 {
        std::mem::swap(&mut left, &mut right);
    }
    Ok(format!(
        "{}{}{}",
        repeat_char(fill, left),
        &*text,
        repeat_char(fill, right)
    ))
}

/// `str.zfill`: zeros on the left (PyTorch does not move a sign in front of them).
fn zfill(text: SharedStr, width: i64) -> Result<String> {
    let count = padding(&text, width, "str.zfill")?;
    Ok(format!("{}{}", repeat_char('0', count), &*text))
}

fn expandtabs(text: SharedStr, tabsize: i64) -> Result<String> {
    let mut out = String::new();
    let mut column: i64 = 0;
    for c in text.chars() {
        if c != '\t' {
            out.push(c);
            // Columns count bytes, as PyTorch's loop over the `std::string` does.
            column += c.len_utf8() as i64;
        } else if tabsize > 0 {
            loop {
                out.push(' ');
                column += 1;
                if column % tabsize == 0 {
                    break;
                }
            }
        }
        if out.len() > MAX_STRING_CHARS {
            return Err(too_long("str.expandtabs"));
        }
    }
    Ok(out)
}

// ----- indexing --------------------------------------------------------------------------

fn str_len(text: SharedStr) -> Result<i64> {
    Ok(text.len() as i64)
}

fn str_getitem(text: SharedStr, index: i64) -> Result<String> {
    let text = text.as_bytes();
    let position = super::normalize_index(index, text.len())
        .ok_or_else(|| RuntimeError::IndexError("string index out of range".to_string()))?;
    string_from_bytes(vec![text[position]], "str[index]")
}

fn str_slice(text: SharedStr, start: Option<i64>, end: Option<i64>, step: i64) -> Result<String> {
    let bytes = text.as_bytes();
    let (first, step, count) = super::slice_indices(bytes.len(), start, end, step)?;
    let mut out = Vec::with_capacity(count);
    let mut position = first;
    for _ in 0..count {
        if let Some(byte) = usize::try_from(position).ok().and_then(|p| bytes.get(p)) {
            out.push(*byte);
        }
        position += step;
    }
    string_from_bytes(out, "str slice")
}

/// Every `str` operator, in PyTorch's registration order within each name.
///
/// The `strip` family's default (`' \n\t\f\v'` in PyTorch's source) is written with the
/// control characters themselves: the schema parser reads only the `\n` and `\t` escapes.
pub fn declarations() -> Vec<OperatorDeclaration> {
    vec![
        typed("aten::list(str t) -> str[]", chars_list),
        typed("aten::lower(str self) -> str", lower),
        typed("aten::len.str(str s) -> int", str_len),
        typed(
            "aten::__getitem__.str(str s, int index) -> str",
            str_getitem,
        ),
        typed("aten::isdigit(str self) -> bool", isdigit),
        typed("aten::isspace(str self) -> bool", isspace),
        typed("aten::isalnum(str self) -> bool", isalnum),
        typed("aten::isalpha(str self) -> bool", isalpha),
        typed("aten::isdecimal(str self) -> bool", isdigit),
        typed("aten::isnumeric(str self) -> bool", isdigit),
        typed("aten::upper(str self) -> str", upper),
        typed("aten::swapcase(str self) -> str", swapcase),
        typed(
            "aten::slice.str(str string, int? start=None, int? end=None, int step=1) -> str",
            str_slice,
        ),
        typed(
            "aten::strip(str self, str chars=' \\n\\t\\f\\v') -> str",
            strip,
        ),
        typed(
            "aten::split.str(str self, str? separator=None, int max=-1) -> str[]",
            split,
        ),
        typed(
            "aten::splitlines(str self, bool keepends=False) -> str[]",
            splitlines,
        ),
        typed("aten::isupper(str self) -> bool", isupper),
        typed("aten::islower(str self) -> bool", islower),
        typed("aten::capitalize(str self) -> str", capitalize),
        typed("aten::title(str self) -> str", title),
        typed(
            "aten::center(str self, int width, str fillchar=' ') -> str",
            center,
        ),
        typed(
            "aten::count(str self, str substr, int start=0, int end=-1) -> int",
            count,
        ),
        typed(
            "aten::endswith(str self, str substr, int start=0, int end=-1) -> bool",
            endswith,
        ),
        typed(
            "aten::startswith(str self, str substr, int start=0, int end=-1) -> bool",
            startswith,
        ),
        typed(
            "aten::expandtabs(str self, int tabsize=8) -> str",
            expandtabs,
        ),
        typed(
            "aten::find(str self, str substr, int start=0, int end=-1) -> int",
            find,
        ),
        typed(
            "aten::rfind(str self, str substr, int start=0, int end=-1) -> int",
            rfind,
        ),
        typed(
            "aten::index.str(str self, str substr, int start=0, int end=-1) -> int",
            index,
        ),
        typed(
            "aten::rindex(str self, str substr, int start=0, int end=-1) -> int",
            rindex,
        ),
        typed("aten::isidentifier(str self) -> bool", isidentifier),
        typed("aten::istitle(str self) -> bool", istitle),
        typed("aten::isprintable(str self) -> bool", isprintable),
        typed(
            "aten::ljust(str self, int width, str fillchar=' ') -> str",
            ljust,
        ),
        typed(
            "aten::rjust(str self, int width, str fillchar=' ') -> str",
            rjust,
        ),
        typed("aten::zfill(str self, int width) -> str", zfill),
        typed(
            "aten::lstrip(str self, str chars=' \\n\\t\\f\\v') -> str",
            lstrip,
        ),
        typed(
            "aten::rstrip(str self, str chars=' \\n\\t\\f\\v') -> str",
            rstrip,
        ),
        typed(
            "aten::replace(str self, str old, str new, int max=-1) -> str",
            replace,
        ),
        typed(
            "aten::partition(str self, str separator) -> (str, str, str)",
            partition,
        ),
        typed(
            "aten::rpartition(str self, str separator) -> (str, str, str)",
            rpartition,
        ),
        typed(
            "aten::rsplit(str self, str separator=' ', int max=-1) -> str[]",
            rsplit,
        ),
        typed("aten::join(str self, str[] values) -> str", join),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> SharedStr {
        SharedStr(Arc::from(text))
    }

    #[test]
    fn find_family_follows_pytorch() {
        assert_eq!(find(s("banana"), s("an"), 0, -1).unwrap(), 1);
        assert_eq!(rfind(s("banana"), s("an"), 0, -1).unwrap(), 3);
        assert_eq!(find(s("banana"), s("zz"), 0, -1).unwrap(), -1);
        assert_eq!(rfind(s("banana"), s(""), 0, -1).unwrap(), 6);
        assert_eq!(count(s("banana"), s("a"), 0, -1).unwrap(), 3);
        assert_eq!(count(s("banana"), s("ana"), 0, -1).unwrap(), 1);
        let error = index(s("banana"), s("zz"), 0, -1).unwrap_err();
        assert!(error.to_string().contains("substring not found"));
        // A window: "banana"[2:] -> "nana".
        assert_eq!(find(s("banana"), s("a"), 2, -1).unwrap(), 3);
    }

    #[test]
    fn split_family_follows_pytorch() {
        assert_eq!(split(s(" x y  z "), None, -1).unwrap(), ["x", "y", "z"]);
        assert_eq!(split(s("a.b.c"), Some(s(".")), 1).unwrap(), ["a", "b.c"]);
        assert_eq!(rsplit(s("a.b.c"), s("."), 1).unwrap(), ["a.b", "c"]);
        assert_eq!(split(s(",a,"), Some(s(",")), -1).unwrap(), ["", "a", ""]);
        assert!(split(s("a"), Some(s("")), -1).is_err());
        assert_eq!(
            splitlines(s("a\nb\r\nc"), false).unwrap(),
            ["a", "b", "", "c"]
        );
        assert_eq!(splitlines(s("a\nb"), true).unwrap(), ["a", "\n", "b"]);
        // U+2028 is three boundary bytes to PyTorch, so two empty lines sit inside it.
        assert_eq!(
            splitlines(s("a\u{2028}b"), false).unwrap(),
            ["a", "", "", "b"]
        );
        // U+2000 (E2 80 80) is made of separator bytes only.
        assert_eq!(split(s("a\u{2000}b"), None, -1).unwrap(), ["a", "b"]);
        // "é" (C3 A9): A9 separates and would leave C3 alone.
        assert!(split(s("é"), None, -1).is_err());
        let joined = join(s("-"), vec!["a".to_string(), "b".to_string()]).unwrap();
        assert_eq!(joined, "a-b");
        let parts = partition(s("k=v=w"), s("=")).unwrap();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[2].to_str().unwrap(), "v=w");
        let parts = rpartition(s("k=v=w"), s("=")).unwrap();
        assert_eq!(parts[0].to_str().unwrap(), "k=v");
        let parts = rpartition(s("kvw"), s("=")).unwrap();
        assert_eq!(parts[2].to_str().unwrap(), "kvw");
    }

    #[test]
    fn strip_case_and_padding() {
        assert_eq!(strip(s("  xhix  "), s(" x")).unwrap(), "hi");
        assert_eq!(title(s("hello wORLD 2nd")).unwrap(), "Hello World 2Nd");
        assert_eq!(center(s("42"), 7, s("*")).unwrap(), "***42**");
        assert_eq!(zfill(s("-42"), 5).unwrap(), "00-42");
        assert!(ljust(s("a"), 3, s("ab")).is_err());
        assert!(zfill(s("a"), 1 << 40).is_err());
        assert_eq!(replace(s("banana"), s("a"), s(""), 1).unwrap(), "bnana");
        assert_eq!(replace(s("ab"), s(""), s("-"), 2).unwrap(), "--ab");
        assert!(replace(s("ab"), s(""), s("-"), -1).is_err());
        // Bytes, as in PyTorch: "é" is C3 A9 and both bytes are in "©Ã" (C2 A9, C3 83).
        assert_eq!(strip(s("éxé"), s("©Ã")).unwrap(), "x");
        // Stripping one byte of a character would cut it: an error, not a broken string.
        assert!(strip(s("àa"), s("é")).is_err());
        assert!(isupper(s("AB1")).unwrap());
        assert!(!isdigit(s("")).unwrap());
    }

    #[test]
    fn a_str_argument_shares_its_text_and_refuses_other_values() {
        let value = IValue::from("shared");
        let IValue::Str(original) = &value else {
            panic!("a str value");
        };
        let argument = SharedStr::from_argument(&value).unwrap();
        assert!(Arc::ptr_eq(&argument.0, original));
        let error = SharedStr::from_argument(&IValue::Int(1)).err().unwrap();
        assert_eq!(
            error.to_string(),
            IValue::Int(1).to_str().unwrap_err().to_string()
        );
    }
}
