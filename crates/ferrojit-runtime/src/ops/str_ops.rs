//! `str` methods (PyTorch's string operator table in register_prim_ops.cpp): search,
//! split/join, strip, case mapping, predicates, padding and indexing. `%`-formatting and
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

use ferrojit_ir::Type;

use super::{pop_array, push, KernelTableEntry};
use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::registry::Stack;

/// The longest string a kernel builds (in characters): padding to a huge width fails with an
/// error instead of exhausting memory.
pub(crate) const MAX_STRING_CHARS: usize = 1 << 28;

pub(crate) fn too_long(what: &str) -> RuntimeError {
    RuntimeError::Other(format!(
        "{what}: the result would exceed {MAX_STRING_CHARS} characters"
    ))
}

fn bytes_of(value: &IValue) -> Result<&[u8]> {
    Ok(value.to_str()?.as_bytes())
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

fn string_list(items: Vec<String>) -> IValue {
    IValue::list(Type::Str, items.into_iter().map(IValue::from).collect())
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

fn find_kernel(stack: &mut Stack, reverse: bool, raise: bool) -> Result<()> {
    let [text, needle, start, end] = pop_array::<4>(stack)?;
    let text = bytes_of(&text)?;
    let needle = bytes_of(&needle)?;
    let result = find_impl(text, needle, start.to_int()?, end.to_int()?, reverse);
    if raise && result < 0 {
        return Err(RuntimeError::Other(
            "ValueError: substring not found".to_string(),
        ));
    }
    push(stack, result)
}

fn find(stack: &mut Stack) -> Result<()> {
    find_kernel(stack, false, false)
}

fn rfind(stack: &mut Stack) -> Result<()> {
    find_kernel(stack, true, false)
}

fn index(stack: &mut Stack) -> Result<()> {
    find_kernel(stack, false, true)
}

fn rindex(stack: &mut Stack) -> Result<()> {
    find_kernel(stack, true, true)
}

/// `str.count(sub, start, end)`: non-overlapping matches starting before `end`.
fn count(stack: &mut Stack) -> Result<()> {
    let [text, needle, start, end] = pop_array::<4>(stack)?;
    let text = bytes_of(&text)?;
    let needle = bytes_of(&needle)?;
    let size = text.len() as i64;
    let start = start.to_int()?;
    if start > size {
        return push(stack, 0i64);
    }
    let (start, end) = adjust_bounds(text.len(), start, end.to_int()?);
    if needle.is_empty() {
        // PyTorch loops forever here; Python counts every position of the window.
        let last = end.min(size);
        return push(stack, if last < start { 0 } else { last - start + 1 });
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
    push(stack, occurrences)
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

fn startswith(stack: &mut Stack) -> Result<()> {
    let [text, prefix, start, end] = pop_array::<4>(stack)?;
    let window = str_window(text.to_str()?, start.to_int()?, end.to_int()?);
    push(stack, window.starts_with(bytes_of(&prefix)?))
}

fn endswith(stack: &mut Stack) -> Result<()> {
    let [text, suffix, start, end] = pop_array::<4>(stack)?;
    let window = str_window(text.to_str()?, start.to_int()?, end.to_int()?);
    push(stack, window.ends_with(bytes_of(&suffix)?))
}

// ----- split / join ----------------------------------------------------------------------

/// The separator bytes of `str.split()` without an argument. PyTorch's source writes them
/// as a C++ string, `" \t\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"`, and matches it with
/// `find_first_of`, so the set is bytes: `\x85` is the single byte 0x85, and `\u2028` and
/// `\u2029` contribute their UTF-8 bytes E2, 80, A8 and A9, each a separator on its own.
const SPLIT_WHITESPACE: &[u8] = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x85\xe2\x80\xa8\xa9";

/// The line boundary bytes of `splitlines`: the same set without space and tab.
const LINE_BOUNDARIES: &[u8] = b"\n\r\x0b\x0c\x1c\x1d\x1e\x85\xe2\x80\xa8\xa9";

fn split(stack: &mut Stack) -> Result<()> {
    let [text, separator, max] = pop_array::<3>(stack)?;
    let max = max.to_int()?;
    let text = text.to_str()?;
    let separator = match &separator {
        IValue::None => {
            // Runs of whitespace bytes separate; `max` is ignored, as in PyTorch.
            let parts = text
                .as_bytes()
                .split(|byte| SPLIT_WHITESPACE.contains(byte))
                .filter(|part| !part.is_empty())
                .map(|part| string_from_bytes(part.to_vec(), "str.split"))
                .collect::<Result<Vec<_>>>()?;
            return push(stack, string_list(parts));
        }
        other => other.to_str()?,
    };
    if separator.is_empty() {
        return Err(RuntimeError::Other(
            "ValueError: empty separator".to_string(),
        ));
    }
    let parts: Vec<String> = if max < 0 {
        text.split(separator).map(str::to_string).collect()
    } else {
        let pieces = usize::try_from(max).unwrap_or(usize::MAX).saturating_add(1);
        text.splitn(pieces, separator).map(str::to_string).collect()
    };
    push(stack, string_list(parts))
}

/// `str.rsplit(separator=' ', max=-1)`: splits from the right (PyTorch's default separator
/// is a single space, not the whitespace algorithm of `split()`).
fn rsplit(stack: &mut Stack) -> Result<()> {
    let [text, separator, max] = pop_array::<3>(stack)?;
    let max = max.to_int()?;
    let text = text.to_str()?;
    let separator = separator.to_str()?;
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
    push(stack, string_list(parts))
}

/// `str.splitlines(keepends)`: every boundary character ends a line; with `keepends` PyTorch
/// adds the boundary as its own list element.
fn splitlines(stack: &mut Stack) -> Result<()> {
    let [text, keepends] = pop_array::<2>(stack)?;
    let keepends = keepends.to_bool()?;
    let bytes = bytes_of(&text)?;
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
    push(stack, string_list(parts))
}

fn join(stack: &mut Stack) -> Result<()> {
    let [separator, values] = pop_array::<2>(stack)?;
    let separator = separator.to_str()?;
    let items = values.to_list()?.to_vec();
    let mut out = String::new();
    for (position, item) in items.iter().enumerate() {
        if position > 0 {
            out.push_str(separator);
        }
        out.push_str(item.to_str()?);
        if out.len() > MAX_STRING_CHARS {
            return Err(too_long("str.join"));
        }
    }
    push(stack, out)
}

/// `list(s)`: the bytes of a string, each as a string.
fn chars_list(stack: &mut Stack) -> Result<()> {
    let [text] = pop_array::<1>(stack)?;
    let parts = bytes_of(&text)?
        .iter()
        .map(|&byte| string_from_bytes(vec![byte], "list(str)"))
        .collect::<Result<Vec<String>>>()?;
    push(stack, string_list(parts))
}

fn partition(stack: &mut Stack) -> Result<()> {
    let [text, separator] = pop_array::<2>(stack)?;
    let text = text.to_str()?;
    let separator = separator.to_str()?;
    let (before, found, after) = match text.find(separator) {
        Some(position) => (
            &text[..position],
            separator,
            &text[position + separator.len()..],
        ),
        None => (text, "", ""),
    };
    stack.push(before.into());
    stack.push(found.into());
    push(stack, after)
}

fn rpartition(stack: &mut Stack) -> Result<()> {
    let [text, separator] = pop_array::<2>(stack)?;
    let text = text.to_str()?;
    let separator = separator.to_str()?;
    let (before, found, after) = match text.rfind(separator) {
        Some(position) => (
            &text[..position],
            separator,
            &text[position + separator.len()..],
        ),
        None => ("", "", text),
    };
    stack.push(before.into());
    stack.push(found.into());
    push(stack, after)
}

fn replace(stack: &mut Stack) -> Result<()> {
    let [text, old, new, max] = pop_array::<4>(stack)?;
    let (text, old, new) = (text.to_str()?, old.to_str()?, new.to_str()?);
    let max = max.to_int()?;
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
        return push(stack, new.repeat(count) + text);
    }
    let limit = usize::try_from(max).unwrap_or(usize::MAX);
    let matches = text.matches(old).count();
    let replaced = matches.min(limit);
    let growth = new.len().saturating_sub(old.len()).saturating_mul(replaced);
    if text.len().saturating_add(growth) > MAX_STRING_CHARS {
        return Err(too_long("str.replace"));
    }
    let out = if max < 0 {
        text.replace(old, new)
    } else {
        text.replacen(old, new, limit)
    };
    push(stack, out)
}

// ----- strip -----------------------------------------------------------------------------

fn strip_kernel(stack: &mut Stack, left: bool, right: bool) -> Result<()> {
    let [text, chars] = pop_array::<2>(stack)?;
    // PyTorch's `find_first_not_of(chars)`: any byte of `chars` is stripped on its own.
    let set = bytes_of(&chars)?;
    let mut out = bytes_of(&text)?;
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
    push(stack, string_from_bytes(out.to_vec(), "str.strip")?)
}

fn strip(stack: &mut Stack) -> Result<()> {
    strip_kernel(stack, true, true)
}

fn lstrip(stack: &mut Stack) -> Result<()> {
    strip_kernel(stack, true, false)
}

fn rstrip(stack: &mut Stack) -> Result<()> {
    strip_kernel(stack, false, true)
}

// ----- case ------------------------------------------------------------------------------

fn map_chars(stack: &mut Stack, f: impl Fn(char) -> char) -> Result<()> {
    let [text] = pop_array::<1>(stack)?;
    let out: String = text.to_str()?.chars().map(f).collect();
    push(stack, out)
}

fn lower(stack: &mut Stack) -> Result<()> {
    map_chars(stack, |c| c.to_ascii_lowercase())
}

fn upper(stack: &mut Stack) -> Result<()> {
    map_chars(stack, |c| c.to_ascii_uppercase())
}

fn swapcase(stack: &mut Stack) -> Result<()> {
    map_chars(stack, |c| {
        if c == c.to_ascii_uppercase() {
            c.to_ascii_lowercase()
        } else {
            c.to_ascii_uppercase()
        }
    })
}

fn capitalize(stack: &mut Stack) -> Result<()> {
    let [text] = pop_array::<1>(stack)?;
    let out: String = text
        .to_str()?
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i == 0 {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect();
    push(stack, out)
}

/// `str.title()`: upper case after every non-letter, lower case elsewhere.
fn title(stack: &mut Stack) -> Result<()> {
    let [text] = pop_array::<1>(stack)?;
    let mut out = String::new();
    let mut previous_is_letter = false;
    for c in text.to_str()?.chars() {
        out.push(if previous_is_letter {
            c.to_ascii_lowercase()
        } else {
            c.to_ascii_uppercase()
        });
        previous_is_letter = c.is_ascii_alphabetic();
    }
    push(stack, out)
}

// ----- predicates ------------------------------------------------------------------------

/// C's `isspace` in the C locale.
fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

/// Python's `is*` string methods are False for the empty string.
fn all_chars(stack: &mut Stack, test: fn(char) -> bool) -> Result<()> {
    let [text] = pop_array::<1>(stack)?;
    let text = text.to_str()?;
    push(stack, !text.is_empty() && text.chars().all(test))
}

fn isdigit(stack: &mut Stack) -> Result<()> {
    all_chars(stack, |c| c.is_ascii_digit())
}

fn isspace(stack: &mut Stack) -> Result<()> {
    all_chars(stack, is_c_space)
}

fn isalnum(stack: &mut Stack) -> Result<()> {
    all_chars(stack, |c| c.is_ascii_alphanumeric())
}

fn isalpha(stack: &mut Stack) -> Result<()> {
    all_chars(stack, |c| c.is_ascii_alphabetic())
}

/// `isupper`/`islower`: at least one letter, and every letter of the wanted case.
fn cased(stack: &mut Stack, want_upper: bool) -> Result<()> {
    let [text] = pop_array::<1>(stack)?;
    let text = text.to_str()?;
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
    push(stack, found_letter && all_match)
}

fn isupper(stack: &mut Stack) -> Result<()> {
    cased(stack, true)
}

fn islower(stack: &mut Stack) -> Result<()> {
    cased(stack, false)
}

/// PyTorch's (Python 2 style) `isidentifier`: non-empty, not starting with a digit, all
/// alphanumeric.
fn isidentifier(stack: &mut Stack) -> Result<()> {
    let [text] = pop_array::<1>(stack)?;
    let text = text.to_str()?;
    let result = match text.chars().next() {
        None => false,
        Some(first) if first.is_ascii_digit() => false,
        Some(_) => text.chars().all(|c| c.is_ascii_alphanumeric()),
    };
    push(stack, result)
}

fn istitle(stack: &mut Stack) -> Result<()> {
    let [text] = pop_array::<1>(stack)?;
    let mut result = false;
    let mut previous_is_letter = false;
    for c in text.to_str()?.chars() {
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
    push(stack, result)
}

/// True for the empty string, unlike the other predicates.
fn isprintable(stack: &mut Stack) -> Result<()> {
    let [text] = pop_array::<1>(stack)?;
    let result = text
        .to_str()?
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c.is_ascii_punctuation() || c == ' ');
    push(stack, result)
}

// ----- padding ---------------------------------------------------------------------------

/// The fill character: one byte, as PyTorch checks the `std::string`'s size.
fn fill_char(fill: &IValue) -> Result<char> {
    match fill.to_str()?.as_bytes() {
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

fn ljust(stack: &mut Stack) -> Result<()> {
    let [text, width, fill] = pop_array::<3>(stack)?;
    let fill = fill_char(&fill)?;
    let text = text.to_str()?;
    let count = padding(text, width.to_int()?, "str.ljust")?;
    push(stack, format!("{text}{}", repeat_char(fill, count)))
}

fn rjust(stack: &mut Stack) -> Result<()> {
    let [text, width, fill] = pop_array::<3>(stack)?;
    let fill = fill_char(&fill)?;
    let text = text.to_str()?;
    let count = padding(text, width.to_int()?, "str.rjust")?;
    push(stack, format!("{}{text}", repeat_char(fill, count)))
}

/// `str.center`: PyTorch puts the extra fill character on the left when `width` is odd.
fn center(stack: &mut Stack) -> Result<()> {
    let [text, width, fill] = pop_array::<3>(stack)?;
    let fill = fill_char(&fill)?;
    let text = text.to_str()?;
    let width = width.to_int()?;
    let total = padding(text, width, "str.center")?;
    let (mut left, mut right) = (total / 2, total.div_ceil(2));
    if width % 2 != 0 {
        std::mem::swap(&mut left, &mut right);
    }
    push(
        stack,
        format!(
            "{}{text}{}",
            repeat_char(fill, left),
            repeat_char(fill, right)
        ),
    )
}

/// `str.zfill`: zeros on the left (PyTorch does not move a sign in front of them).
fn zfill(stack: &mut Stack) -> Result<()> {
    let [text, width] = pop_array::<2>(stack)?;
    let text = text.to_str()?;
    let count = padding(text, width.to_int()?, "str.zfill")?;
    push(stack, format!("{}{text}", repeat_char('0', count)))
}

fn expandtabs(stack: &mut Stack) -> Result<()> {
    let [text, tabsize] = pop_array::<2>(stack)?;
    let tabsize = tabsize.to_int()?;
    let mut out = String::new();
    let mut column: i64 = 0;
    for c in text.to_str()?.chars() {
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
    push(stack, out)
}

// ----- indexing --------------------------------------------------------------------------

fn str_len(stack: &mut Stack) -> Result<()> {
    let [text] = pop_array::<1>(stack)?;
    push(stack, text.to_str()?.len() as i64)
}

fn str_getitem(stack: &mut Stack) -> Result<()> {
    let [text, index] = pop_array::<2>(stack)?;
    let text = bytes_of(&text)?;
    let index = index.to_int()?;
    let position = super::normalize_index(index, text.len())
        .ok_or_else(|| RuntimeError::IndexError("string index out of range".to_string()))?;
    push(
        stack,
        string_from_bytes(vec![text[position]], "str[index]")?,
    )
}

fn str_slice(stack: &mut Stack) -> Result<()> {
    let [text, start, end, step] = pop_array::<4>(stack)?;
    let bytes = bytes_of(&text)?;
    let (first, step, count) = super::slice_indices(
        bytes.len(),
        start.to_optional_int()?,
        end.to_optional_int()?,
        step.to_int()?,
    )?;
    let mut out = Vec::with_capacity(count);
    let mut position = first;
    for _ in 0..count {
        if let Some(byte) = usize::try_from(position).ok().and_then(|p| bytes.get(p)) {
            out.push(*byte);
        }
        position += step;
    }
    push(stack, string_from_bytes(out, "str slice")?)
}

/// The table, in PyTorch's registration order within each name.
///
/// The `strip` family's default (`' \n\t\f\v'` in PyTorch's source) is written with the
/// control characters themselves: the schema parser reads only the `\n` and `\t` escapes.
pub const TABLE: &[KernelTableEntry] = &[
    ("aten::list(str t) -> str[]", chars_list),
    ("aten::lower(str self) -> str", lower),
    ("aten::len.str(str s) -> int", str_len),
    (
        "aten::__getitem__.str(str s, int index) -> str",
        str_getitem,
    ),
    ("aten::isdigit(str self) -> bool", isdigit),
    ("aten::isspace(str self) -> bool", isspace),
    ("aten::isalnum(str self) -> bool", isalnum),
    ("aten::isalpha(str self) -> bool", isalpha),
    ("aten::isdecimal(str self) -> bool", isdigit),
    ("aten::isnumeric(str self) -> bool", isdigit),
    ("aten::upper(str self) -> str", upper),
    ("aten::swapcase(str self) -> str", swapcase),
    (
        "aten::slice.str(str string, int? start=None, int? end=None, int step=1) -> str",
        str_slice,
    ),
    (
        "aten::strip(str self, str chars=' \\n\\t\\f\\v') -> str",
        strip,
    ),
    (
        "aten::split.str(str self, str? separator=None, int max=-1) -> str[]",
        split,
    ),
    (
        "aten::splitlines(str self, bool keepends=False) -> str[]",
        splitlines,
    ),
    ("aten::isupper(str self) -> bool", isupper),
    ("aten::islower(str self) -> bool", islower),
    ("aten::capitalize(str self) -> str", capitalize),
    ("aten::title(str self) -> str", title),
    (
        "aten::center(str self, int width, str fillchar=' ') -> str",
        center,
    ),
    (
        "aten::count(str self, str substr, int start=0, int end=-1) -> int",
        count,
    ),
    (
        "aten::endswith(str self, str substr, int start=0, int end=-1) -> bool",
        endswith,
    ),
    (
        "aten::startswith(str self, str substr, int start=0, int end=-1) -> bool",
        startswith,
    ),
    (
        "aten::expandtabs(str self, int tabsize=8) -> str",
        expandtabs,
    ),
    (
        "aten::find(str self, str substr, int start=0, int end=-1) -> int",
        find,
    ),
    (
        "aten::rfind(str self, str substr, int start=0, int end=-1) -> int",
        rfind,
    ),
    (
        "aten::index.str(str self, str substr, int start=0, int end=-1) -> int",
        index,
    ),
    (
        "aten::rindex(str self, str substr, int start=0, int end=-1) -> int",
        rindex,
    ),
    ("aten::isidentifier(str self) -> bool", isidentifier),
    ("aten::istitle(str self) -> bool", istitle),
    ("aten::isprintable(str self) -> bool", isprintable),
    (
        "aten::ljust(str self, int width, str fillchar=' ') -> str",
        ljust,
    ),
    (
        "aten::rjust(str self, int width, str fillchar=' ') -> str",
        rjust,
    ),
    ("aten::zfill(str self, int width) -> str", zfill),
    (
        "aten::lstrip(str self, str chars=' \\n\\t\\f\\v') -> str",
        lstrip,
    ),
    (
        "aten::rstrip(str self, str chars=' \\n\\t\\f\\v') -> str",
        rstrip,
    ),
    (
        "aten::replace(str self, str old, str new, int max=-1) -> str",
        replace,
    ),
    (
        "aten::partition(str self, str separator) -> (str, str, str)",
        partition,
    ),
    (
        "aten::rpartition(str self, str separator) -> (str, str, str)",
        rpartition,
    ),
    (
        "aten::rsplit(str self, str separator=' ', int max=-1) -> str[]",
        rsplit,
    ),
    ("aten::join(str self, str[] values) -> str", join),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn run(kernel: fn(&mut Stack) -> Result<()>, args: Vec<IValue>) -> Result<Vec<IValue>> {
        let mut stack = args;
        kernel(&mut stack)?;
        Ok(stack)
    }

    fn one(kernel: fn(&mut Stack) -> Result<()>, args: Vec<IValue>) -> IValue {
        let mut out = run(kernel, args).unwrap();
        out.pop().unwrap()
    }

    fn s(text: &str) -> IValue {
        IValue::from(text)
    }

    fn strings(value: &IValue) -> Vec<String> {
        value
            .to_list()
            .unwrap()
            .to_vec()
            .iter()
            .map(|v| v.to_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn find_family_follows_pytorch() {
        let args = |needle: &str| vec![s("banana"), s(needle), IValue::Int(0), IValue::Int(-1)];
        assert!(matches!(one(find, args("an")), IValue::Int(1)));
        assert!(matches!(one(rfind, args("an")), IValue::Int(3)));
        assert!(matches!(one(find, args("zz")), IValue::Int(-1)));
        assert!(matches!(one(rfind, args("")), IValue::Int(6)));
        assert!(matches!(one(count, args("a")), IValue::Int(3)));
        assert!(matches!(one(count, args("ana")), IValue::Int(1)));
        let error = run(index, args("zz")).unwrap_err();
        assert!(error.to_string().contains("substring not found"));
        // A window: "banana"[2:] -> "nana".
        let windowed = vec![s("banana"), s("a"), IValue::Int(2), IValue::Int(-1)];
        assert!(matches!(one(find, windowed), IValue::Int(3)));
    }

    #[test]
    fn split_family_follows_pytorch() {
        let parts = one(split, vec![s(" x y  z "), IValue::None, IValue::Int(-1)]);
        assert_eq!(strings(&parts), ["x", "y", "z"]);
        let parts = one(split, vec![s("a.b.c"), s("."), IValue::Int(1)]);
        assert_eq!(strings(&parts), ["a", "b.c"]);
        let parts = one(rsplit, vec![s("a.b.c"), s("."), IValue::Int(1)]);
        assert_eq!(strings(&parts), ["a.b", "c"]);
        let parts = one(split, vec![s(",a,"), s(","), IValue::Int(-1)]);
        assert_eq!(strings(&parts), ["", "a", ""]);
        assert!(run(split, vec![s("a"), s(""), IValue::Int(-1)]).is_err());
        let lines = one(splitlines, vec![s("a\nb\r\nc"), IValue::Bool(false)]);
        assert_eq!(strings(&lines), ["a", "b", "", "c"]);
        let lines = one(splitlines, vec![s("a\nb"), IValue::Bool(true)]);
        assert_eq!(strings(&lines), ["a", "\n", "b"]);
        // U+2028 is three boundary bytes to PyTorch, so two empty lines sit inside it.
        let lines = one(splitlines, vec![s("a\u{2028}b"), IValue::Bool(false)]);
        assert_eq!(strings(&lines), ["a", "", "", "b"]);
        // U+2000 (E2 80 80) is made of separator bytes only.
        let parts = one(split, vec![s("a\u{2000}b"), IValue::None, IValue::Int(-1)]);
        assert_eq!(strings(&parts), ["a", "b"]);
        // "é" (C3 A9): A9 separates and would leave C3 alone.
        assert!(run(split, vec![s("é"), IValue::None, IValue::Int(-1)]).is_err());
        let joined = one(
            join,
            vec![s("-"), IValue::list(Type::Str, vec![s("a"), s("b")])],
        );
        assert_eq!(joined.to_str().unwrap(), "a-b");
        let parts = run(partition, vec![s("k=v=w"), s("=")]).unwrap();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[2].to_str().unwrap(), "v=w");
        let parts = run(rpartition, vec![s("k=v=w"), s("=")]).unwrap();
        assert_eq!(parts[0].to_str().unwrap(), "k=v");
        let parts = run(rpartition, vec![s("kvw"), s("=")]).unwrap();
        assert_eq!(parts[2].to_str().unwrap(), "kvw");
    }

    #[test]
    fn strip_case_and_padding() {
        let text = one(strip, vec![s("  xhix  "), s(" x")]);
        assert_eq!(text.to_str().unwrap(), "hi");
        let text = one(title, vec![s("hello wORLD 2nd")]);
        assert_eq!(text.to_str().unwrap(), "Hello World 2Nd");
        let text = one(center, vec![s("42"), IValue::Int(7), s("*")]);
        assert_eq!(text.to_str().unwrap(), "***42**");
        let text = one(zfill, vec![s("-42"), IValue::Int(5)]);
        assert_eq!(text.to_str().unwrap(), "00-42");
        assert!(run(ljust, vec![s("a"), IValue::Int(3), s("ab")]).is_err());
        assert!(run(zfill, vec![s("a"), IValue::Int(1 << 40)]).is_err());
        let text = one(replace, vec![s("banana"), s("a"), s(""), IValue::Int(1)]);
        assert_eq!(text.to_str().unwrap(), "bnana");
        let text = one(replace, vec![s("ab"), s(""), s("-"), IValue::Int(2)]);
        assert_eq!(text.to_str().unwrap(), "--ab");
        assert!(run(replace, vec![s("ab"), s(""), s("-"), IValue::Int(-1)]).is_err());
        // Bytes, as in PyTorch: "é" is C3 A9 and both bytes are in "©Ã" (C2 A9, C3 83).
        let text = one(strip, vec![s("éxé"), s("©Ã")]);
        assert_eq!(text.to_str().unwrap(), "x");
        // Stripping one byte of a character would cut it: an error, not a broken string.
        assert!(run(strip, vec![s("àa"), s("é")]).is_err());
        assert!(matches!(one(isupper, vec![s("AB1")]), IValue::Bool(true)));
        assert!(matches!(one(isdigit, vec![s("")]), IValue::Bool(false)));
    }
}
