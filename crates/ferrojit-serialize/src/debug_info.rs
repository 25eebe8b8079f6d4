//! `code/*.py.debug_pkl`: where each part of an archive's generated code came from.
//!
//! PyTorch writes, beside every `code/` file, a pickle mapping byte offsets in the generated
//! code to ranges of the original Python source, which its tracebacks show as "original
//! code". Two layouts exist:
//! - `("FORMAT_WITH_STRING_TABLE", strings, entries)` (PyTorch 1.10 and later): each source
//!   is `(line indices into strings, filename index, starting line)`;
//! - a bare tuple of entries whose sources are `(text, filename, starting line)`.
//!
//! Each entry is `(offset, (source, start, end)[, debug handle])`. Debug information is
//! optional: a record that does not have one of these shapes is ignored rather than failing
//! the load, and nothing in it is trusted (indices and offsets are checked, sizes capped).

use std::collections::HashMap;
use std::sync::Arc;

use ferrojit_ir::source::{OriginsLoader, SourceFile, SourceRange};

use ferrojit_archive::pickle_value::PickleValue;
use ferrojit_archive::unpickler::{unpickle, UnpicklerOptions};
use ferrojit_archive::zip_archive::ArchiveReader;

/// Entries kept from one record; PyTorch writes a few per statement.
const MAX_ENTRIES: usize = 1 << 20;

/// Reads `record` (a `.debug_pkl`) into its `(offset, original range)` pairs when first
/// asked: only tracebacks use them, and reading them all was over 40% of loading resnet18.
/// A missing or unreadable record, or one not in a known layout, gives no origins.
pub fn lazy_origins(archive: &ArchiveReader, record: &str) -> OriginsLoader {
    if !archive.has_record(record) {
        return Box::new(Vec::new);
    }
    let options = UnpicklerOptions {
        max_value_bytes: Some(archive.pickle_value_budget(record)),
        ..UnpicklerOptions::torchscript_data()
    };
    match archive.deferred_record(record) {
        Ok(deferred) => Box::new(move || match deferred.read() {
            Ok(pickle) => origins_from_pickle(&pickle, &options),
            Err(_) => Vec::new(),
        }),
        Err(_) => Box::new(Vec::new),
    }
}

fn origins_from_pickle(pickle: &[u8], options: &UnpicklerOptions) -> Vec<(usize, SourceRange)> {
    match unpickle(pickle, options) {
        Ok(value) => parse_origins(&value).unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

/// The items of a tuple or a list (the TorchScript pickler writes int lists as
/// `torch.jit._pickle.build_intlist(list)`).
fn items(value: &PickleValue) -> Option<Vec<PickleValue>> {
    match value {
        PickleValue::Tuple(items) => Some(items.to_vec()),
        PickleValue::List(items) => Some(items.borrow().clone()),
        PickleValue::Reduce(reduce) => {
            let reduce = reduce.borrow();
            if !reduce
                .callable
                .is_global("torch.jit._pickle", "build_intlist")
            {
                return None;
            }
            match reduce.args.as_tuple()? {
                [list @ PickleValue::List(_)] => items(list),
                _ => None,
            }
        }
        _ => None,
    }
}

fn index(value: &PickleValue) -> Option<usize> {
    usize::try_from(value.as_int()?).ok()
}

/// The excerpt a pickled source describes: `(line indices, filename index, starting line)`
/// with a string table, `(text, filename, starting line)` without.
fn source_file(source: &PickleValue, strings: Option<&[String]>) -> Option<Arc<SourceFile>> {
    let source = items(source)?;
    let [text, filename, starting_line] = source.as_slice() else {
        return None;
    };
    let (text, filename) = match strings {
        Some(strings) => {
            let mut joined = String::new();
            for line in items(text)? {
                joined.push_str(strings.get(index(&line)?)?);
            }
            (joined, strings.get(index(filename)?)?.clone())
        }
        None => (
            text.as_str()?.to_string(),
            filename.as_str().unwrap_or("").to_string(),
        ),
    };
    Some(SourceFile::excerpt(filename, text, index(starting_line)?))
}

/// Parses a decoded `.debug_pkl`; `None` when it has neither layout.
pub fn parse_origins(value: &PickleValue) -> Option<Vec<(usize, SourceRange)>> {
    let top = items(value)?;
    let (strings, entries) = match top.as_slice() {
        [tag, strings, entries] if tag.as_str() == Some("FORMAT_WITH_STRING_TABLE") => {
            let strings: Option<Vec<String>> = items(strings)?
                .iter()
                .map(|s| s.as_str().map(str::to_string))
                .collect();
            (Some(strings?), items(entries)?)
        }
        _ => (None, top),
    };
    if entries.len() > MAX_ENTRIES {
        return None;
    }
    // Many entries share a source, pickled once and referenced through the memo: each
    // distinct source object becomes one file, built the first time it is seen.
    let mut files: HashMap<usize, Arc<SourceFile>> = HashMap::new();
    let mut origins = Vec::with_capacity(entries.len());
    for entry in &entries {
        let entry = items(entry)?;
        let (offset, range) = match entry.as_slice() {
            [offset, range] | [offset, range, _] => (index(offset)?, items(range)?),
            _ => return None,
        };
        let [source, start, end] = range.as_slice() else {
            return None;
        };
        let file = match source.ptr_id().and_then(|id| files.get(&id)) {
            Some(file) => file.clone(),
            None => {
                let file = source_file(source, strings.as_deref())?;
                if let Some(id) = source.ptr_id() {
                    files.insert(id, file.clone());
                }
                file
            }
        };
        let (start, end) = (index(start)?, index(end)?);
        origins.push((offset, SourceRange::new(file, start, end.max(start))));
    }
    Some(origins)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(value: i64) -> PickleValue {
        PickleValue::Int(value)
    }

    fn table_record(line_index: i64, start: i64, end: i64) -> PickleValue {
        let source = PickleValue::tuple(vec![
            PickleValue::list(vec![int(1), int(line_index)]),
            int(0),
            int(10),
        ]);
        let range = PickleValue::tuple(vec![source, int(start), int(end)]);
        PickleValue::tuple(vec![
            PickleValue::str("FORMAT_WITH_STRING_TABLE"),
            PickleValue::tuple(vec![
                PickleValue::str("f.py"),
                PickleValue::str("def f():\n"),
                PickleValue::str("    return 1\n"),
            ]),
            PickleValue::tuple(vec![PickleValue::tuple(vec![int(5), range, int(0)])]),
        ])
    }

    #[test]
    fn string_table_entries_become_ranges_of_their_excerpt() {
        let origins = parse_origins(&table_record(2, 13, 21)).unwrap();
        let [(offset, range)] = origins.as_slice() else {
            panic!("{origins:?}")
        };
        assert_eq!(*offset, 5);
        assert_eq!(range.file.name(), "f.py");
        assert_eq!(range.text(), "return 1");
        // The excerpt starts at line 10 of f.py, so its second line is line 11.
        assert!(range.highlight().starts_with("  File \"f.py\", line 11"));
    }

    #[test]
    fn malformed_records_are_ignored_not_trusted() {
        // A line index past the string table, a negative offset, the wrong shapes.
        assert!(parse_origins(&table_record(7, 0, 1)).is_none());
        assert!(parse_origins(&table_record(2, -1, 1)).is_none());
        assert!(parse_origins(&PickleValue::Int(3)).is_none());
        assert!(parse_origins(&PickleValue::tuple(vec![int(1)])).is_none());
        // Offsets past the excerpt are clamped into it.
        let origins = parse_origins(&table_record(2, 5, 9999)).unwrap();
        assert_eq!(origins[0].1.text(), "():\n    return 1\n");
    }
}
