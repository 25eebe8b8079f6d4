//! What `run` prints for a result: its repr when short, otherwise (or when the result goes
//! to `--output`) its structure with each tensor's dtype and shape; nothing with `--quiet`.

use ferrojit_runtime::ivalue::IValue;

use super::pt2::write_stdout;

/// A repr longer than this many lines is summarized instead.
pub const MAX_REPR_LINES: usize = 20;

/// Items shown per tuple, list or dict before "… N more".
const MAX_ITEMS_SHOWN: usize = 10;

/// Nesting shown before a container is only named.
const MAX_DEPTH_SHOWN: usize = 8;

/// How `run` reports its result on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultDisplay {
    /// `--quiet`: nothing.
    Quiet,
    /// The repr, or the summary when the repr is long.
    Auto,
    /// The summary (the result went to a file).
    SummaryOnly,
}

/// Prints the result as `display` says.
pub fn report_result(result: &IValue, display: ResultDisplay) -> Result<(), String> {
    match display {
        ResultDisplay::Quiet => Ok(()),
        ResultDisplay::SummaryOnly => write_stdout(&describe_structure(result)),
        ResultDisplay::Auto => {
            let repr = result.python_repr();
            let lines = repr.lines().count();
            if lines <= MAX_REPR_LINES {
                return write_stdout(&format!("{repr}\n"));
            }
            write_stdout(&format!(
                "{}({lines} lines as a repr; shown as its structure: --output FILE saves it)\n",
                describe_structure(result)
            ))
        }
    }
}

/// The value's structure, one line per tensor or container, e.g.
/// `tuple (2 items)` then `  [0] Tensor float32 [1, 1000]`.
pub fn describe_structure(value: &IValue) -> String {
    let mut out = String::new();
    describe_into(value, "", 0, &mut out);
    out
}

fn describe_into(value: &IValue, label: &str, depth: usize, out: &mut String) {
    let indent = "  ".repeat(depth);
    let items: Vec<(String, IValue)> = match value {
        IValue::Tuple(tuple) => indexed(tuple.items.iter().cloned()),
        IValue::List(list) => indexed(list.to_vec().into_iter()),
        IValue::Dict(dict) => dict
            .entries()
            .into_iter()
            .map(|(key, item)| (format!("[{}]", key.python_repr()), item))
            .collect(),
        IValue::Tensor(cell) => {
            let tensor = cell.get();
            let sizes: Vec<String> = tensor.sizes().iter().map(usize::to_string).collect();
            out.push_str(&format!(
                "{indent}{label}Tensor {} [{}]\n",
                tensor.dtype().name(),
                sizes.join(", ")
            ));
            return;
        }
        other => {
            let mut repr = other.python_repr();
            if repr.len() > 80 || repr.contains('\n') {
                let cut = (0..=80.min(repr.len()))
                    .rev()
                    .find(|&i| repr.is_char_boundary(i) && !repr[..i].contains('\n'))
                    .unwrap_or(0);
                repr.truncate(cut);
                repr.push_str("...");
            }
            out.push_str(&format!("{indent}{label}{repr}\n"));
            return;
        }
    };
    let kind = match value {
        IValue::Tuple(_) => "tuple",
        IValue::List(_) => "list",
        _ => "dict",
    };
    let noun = if items.len() == 1 { "item" } else { "items" };
    out.push_str(&format!("{indent}{label}{kind} ({} {noun})\n", items.len()));
    if depth >= MAX_DEPTH_SHOWN {
        if !items.is_empty() {
            out.push_str(&format!("{indent}  ...\n"));
        }
        return;
    }
    for (item_label, item) in items.iter().take(MAX_ITEMS_SHOWN) {
        describe_into(item, &format!("{item_label} "), depth + 1, out);
    }
    if items.len() > MAX_ITEMS_SHOWN {
        out.push_str(&format!(
            "{indent}  ... {} more\n",
            items.len() - MAX_ITEMS_SHOWN
        ));
    }
}

fn indexed(items: impl Iterator<Item = IValue>) -> Vec<(String, IValue)> {
    items
        .enumerate()
        .map(|(index, item)| (format!("[{index}]"), item))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrojit_tensor::Tensor;

    #[test]
    fn structure_lists_shapes_and_elides_long_containers() {
        let tensor = IValue::from(Tensor::zeros(&[2, 3], ferrojit_tensor::DType::Float32).unwrap());
        let many = IValue::tuple(vec![IValue::Int(1); 15]);
        let text = describe_structure(&IValue::tuple(vec![tensor, many]));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "tuple (2 items)");
        assert_eq!(lines[1], "  [0] Tensor float32 [2, 3]");
        assert_eq!(lines[2], "  [1] tuple (15 items)");
        assert_eq!(lines.last().copied(), Some("    ... 5 more"));
    }
}
