//! Shared helpers for the compiler tests: an operator registry built from PyTorch's schema
//! strings (`data/schemas.txt`, written by `data/generate_graphs.py`) and a normaliser for
//! printed graphs.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use ferrojit_frontend::operators::OperatorSchemas;
use ferrojit_ir::{parse_schema, FunctionSchema};

pub struct TestOperators {
    by_name: HashMap<String, Vec<Arc<FunctionSchema>>>,
}

impl OperatorSchemas for TestOperators {
    fn overloads(&self, qualified_name: &str) -> Vec<Arc<FunctionSchema>> {
        self.by_name
            .get(qualified_name)
            .cloned()
            .unwrap_or_default()
    }
}

pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("data")
}

/// The schema lines of `data/schemas.txt` (PyTorch's, one per line), each parsed; the file
/// holds 337 of them.
pub const SCHEMA_LINES: usize = 337;

/// Parses every line of `data/schemas.txt`, failing on the first line ferrojit cannot parse
/// (each names its line) or when the file holds fewer than [`SCHEMA_LINES`] schemas.
pub fn parse_schema_file() -> Result<Vec<FunctionSchema>, String> {
    let path = data_dir().join("schemas.txt");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut schemas = Vec::new();
    let mut failures = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match parse_schema(line) {
            Ok(schema) => schemas.push(schema),
            Err(error) => failures.push(format!("schemas.txt:{}: {line}: {error}", number + 1)),
        }
    }
    if !failures.is_empty() {
        return Err(failures.join("\n"));
    }
    if schemas.len() < SCHEMA_LINES {
        return Err(format!(
            "schemas.txt holds {} schemas, fewer than {SCHEMA_LINES}",
            schemas.len()
        ));
    }
    Ok(schemas)
}

/// Every schema PyTorch registers for the operators the tests use, in registration order.
/// Panics, naming each line, when a schema does not parse.
pub fn operators() -> Arc<dyn OperatorSchemas> {
    let schemas = parse_schema_file().unwrap_or_else(|failures| panic!("{failures}"));
    let mut by_name: HashMap<String, Vec<Arc<FunctionSchema>>> = HashMap::new();
    for schema in schemas {
        by_name
            .entry(schema.name.clone())
            .or_default()
            .push(Arc::new(schema));
    }
    Arc::new(TestOperators { by_name })
}

#[test]
fn every_schema_of_the_schema_file_parses() {
    if let Err(failures) = parse_schema_file() {
        panic!("{failures}");
    }
}

/// Normalises a printed graph so that ours and PyTorch's compare structurally:
/// * `# file:line:col` comments are dropped;
/// * constants are removed and every use of one is replaced by its type and value (both
///   compilers pool constants, but place and number them differently);
/// * value names lose their uniquing suffix (`x.27` → `x`) and are renumbered per base name
///   in order of first appearance (`%x#0`, `%x#1`); unnamed values and `_N` temporaries
///   become `%#N`.
pub fn normalize(text: &str) -> String {
    let mut constants: HashMap<String, String> = HashMap::new();
    let mut lines = Vec::new();
    for raw in text.lines() {
        let line = match raw.find(" # ") {
            Some(index) => &raw[..index],
            None => raw,
        };
        let trimmed = line.trim_start();
        if let Some((lhs, rhs)) = trimmed.split_once(" = prim::Constant") {
            if let Some((name, ty)) = lhs.split_once(" : ") {
                let value = rhs.trim_end_matches("()");
                constants.insert(name.to_string(), format!("const<{ty}{value}>"));
                continue;
            }
        }
        lines.push(line.to_string());
    }
    let mut counters: HashMap<String, usize> = HashMap::new();
    let mut renamed: HashMap<String, String> = HashMap::new();
    let mut out = String::new();
    for line in lines {
        let mut result = String::new();
        let chars: Vec<char> = line.chars().collect();
        let mut index = 0;
        while index < chars.len() {
            if chars[index] == '%' {
                let mut end = index + 1;
                while end < chars.len()
                    && (chars[end].is_ascii_alphanumeric()
                        || chars[end] == '_'
                        || chars[end] == '.')
                {
                    end += 1;
                }
                let name: String = chars[index..end].iter().collect();
                if let Some(constant) = constants.get(&name) {
                    result.push_str(constant);
                } else {
                    let replacement = renamed.entry(name.clone()).or_insert_with(|| {
                        let bare = &name[1..];
                        let base = match bare.rsplit_once('.') {
                            Some((base, digits)) if digits.chars().all(|c| c.is_ascii_digit()) => {
                                base
                            }
                            _ => bare,
                        };
                        // Plain numbers are unnamed values; `_N` names (printer temporaries
                        // in code/ files) are kept by PyTorch only in some places, so they
                        // count as unnamed too.
                        let temporary = base.strip_prefix('_').is_some_and(|d| {
                            !d.is_empty() && d.chars().all(|c| c.is_ascii_digit())
                        });
                        let base = if temporary || base.chars().all(|c| c.is_ascii_digit()) {
                            ""
                        } else {
                            base
                        };
                        let counter = counters.entry(base.to_string()).or_insert(0);
                        let text = format!("%{base}#{counter}");
                        *counter += 1;
                        text
                    });
                    result.push_str(replacement);
                }
                index = end;
            } else {
                result.push(chars[index]);
                index += 1;
            }
        }
        out.push_str(result.trim_end());
        out.push('\n');
    }
    out
}
