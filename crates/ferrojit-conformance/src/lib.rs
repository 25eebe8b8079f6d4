//! Conformance harness: runs ferrojit against cases PyTorch computed. Operator cases are
//! stored as `torch.save` files written by the generators under `tests/fixtures/ops*/`.
//!
//! An operator case file holds a list of dicts, one per case:
//! `{"name": str, "op": "aten::add.Tensor", "args": [...], "kwargs": {name: value},
//!   "expected": value}` or, for cases PyTorch rejects, `"error": "PyTorch's message"` instead
//! of `expected`. `op` is the full schema name (name plus overload) of a registered
//! operator; arguments not given are filled from the schema's defaults.

pub mod corpus;

use std::path::{Path, PathBuf};

use ferrojit_runtime::interpreter::code::default_value;
use ferrojit_runtime::ivalue::IValue;
use ferrojit_runtime::registry::OperatorRegistry;

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One operator call and what PyTorch made of it.
#[derive(Debug, Clone)]
pub struct OpCase {
    pub name: String,
    pub op: String,
    pub args: Vec<IValue>,
    pub kwargs: Vec<(String, IValue)>,
    /// PyTorch's result, or `Err(message)` when PyTorch raised.
    pub expected: Result<IValue, String>,
}

/// Reads a case file written by a fixture generator.
pub fn load_cases(path: &Path) -> Result<Vec<OpCase>, String> {
    let value = ferrojit_serialize::torch_save::load_file(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let list = value
        .to_list()
        .map_err(|e| format!("{}: {e}", path.display()))?
        .to_vec();
    let mut cases = Vec::with_capacity(list.len());
    for (index, item) in list.iter().enumerate() {
        let dict = item.to_dict().map_err(|e| format!("case {index}: {e}"))?;
        let field = |name: &str| dict.get(&IValue::string(name));
        let text = |name: &str| -> Result<String, String> {
            Ok(field(name)
                .ok_or_else(|| format!("case {index}: missing '{name}'"))?
                .to_str()
                .map_err(|e| format!("case {index}: {e}"))?
                .to_string())
        };
        let args = match field("args") {
            Some(IValue::List(list)) => list.to_vec(),
            Some(IValue::Tuple(tuple)) => tuple.items.to_vec(),
            Some(other) => return Err(format!("case {index}: args is a {}", other.tag_name())),
            None => Vec::new(),
        };
        let mut kwargs = Vec::new();
        if let Some(IValue::Dict(map)) = field("kwargs") {
            for (key, value) in map.entries() {
                kwargs.push((
                    key.to_str()
                        .map_err(|e| format!("case {index}: {e}"))?
                        .to_string(),
                    value,
                ));
            }
        }
        let expected = match (field("expected"), field("error")) {
            (_, Some(IValue::Str(message))) => Err(message.to_string()),
            (Some(value), _) => Ok(value),
            (None, _) => return Err(format!("case {index}: neither 'expected' nor 'error'")),
        };
        cases.push(OpCase {
            name: text("name").unwrap_or_else(|_| format!("case {index}")),
            op: text("op")?,
            args,
            kwargs,
            expected,
        });
    }
    Ok(cases)
}

/// Calls the case's operator through the global registry, as the interpreter would.
pub fn run_case(case: &OpCase) -> Result<IValue, String> {
    let registry = OperatorRegistry::global();
    let operator = registry
        .lookup(&case.op)
        .ok_or_else(|| format!("operator {} is not registered", case.op))?;
    let schema = &operator.schema;
    if case.args.len() > schema.arguments.len() && !schema.is_vararg {
        return Err(format!(
            "{}: {} positional arguments for {} parameters",
            case.op,
            case.args.len(),
            schema.arguments.len()
        ));
    }
    let mut stack = Vec::with_capacity(schema.arguments.len());
    for (index, argument) in schema.arguments.iter().enumerate() {
        if let Some(value) = case.args.get(index) {
            stack.push(value.clone());
        } else if let Some((_, value)) = case.kwargs.iter().find(|(name, _)| *name == argument.name)
        {
            stack.push(value.clone());
        } else if let Some(default) = &argument.default {
            stack.push(default_value(default, &argument.ty).map_err(|e| e.to_string())?);
        } else {
            return Err(format!(
                "{}: no value for argument '{}'",
                case.op, argument.name
            ));
        }
    }
    (operator.kernel)(&mut stack).map_err(|e| e.to_string())?;
    match stack.len() {
        1 => Ok(stack.pop().unwrap_or(IValue::None)),
        0 => Ok(IValue::None),
        _ => Ok(IValue::tuple(stack)),
    }
}

/// Tolerances for comparing floating results: (relative, absolute).
pub fn tolerance_for(dtype: ferrojit_tensor::DType) -> (f64, f64) {
    use ferrojit_tensor::DType;
    match dtype {
        DType::Float64 => (1e-10, 1e-12),
        DType::Float32 => (1e-5, 1e-6),
        // About two units in the last place of each half type (as torch.testing does).
        DType::Float16 => (1e-3, 1e-5),
        DType::BFloat16 => (1.6e-2, 1e-5),
        _ => (0.0, 0.0),
    }
}

/// Compares a result with PyTorch's; `Err` describes the first difference.
pub fn compare(actual: &IValue, expected: &IValue, path: &str) -> Result<(), String> {
    match (actual, expected) {
        (IValue::Tensor(a), IValue::Tensor(e)) => {
            let (a, e) = (a.get(), e.get());
            if a.dtype() != e.dtype() {
                return Err(format!(
                    "{path}: dtype {} vs PyTorch's {}",
                    a.dtype().name(),
                    e.dtype().name()
                ));
            }
            if a.sizes() != e.sizes() {
                return Err(format!(
                    "{path}: shape {:?} vs PyTorch's {:?}",
                    a.sizes(),
                    e.sizes()
                ));
            }
            let (rtol, atol) = tolerance_for(e.dtype());
            for (index, (x, y)) in a.to_f64_vec().iter().zip(e.to_f64_vec()).enumerate() {
                let same = if y.is_nan() {
                    x.is_nan()
                } else if y.is_infinite() || rtol == 0.0 {
                    *x == y
                } else {
                    (x - y).abs() <= atol + rtol * y.abs()
                };
                if !same {
                    return Err(format!("{path}: element {index} is {x}, PyTorch gives {y}"));
                }
            }
            Ok(())
        }
        (IValue::Double(a), IValue::Double(e)) => {
            if (a.is_nan() && e.is_nan()) || a == e || (a - e).abs() <= 1e-12 + 1e-9 * e.abs() {
                Ok(())
            } else {
                Err(format!("{path}: {a} vs PyTorch's {e}"))
            }
        }
        (IValue::Tuple(a), IValue::Tuple(e)) => compare_items(&a.items, &e.items, path),
        (IValue::List(a), IValue::List(e)) => compare_items(&a.to_vec(), &e.to_vec(), path),
        (IValue::List(a), IValue::Tuple(e)) => compare_items(&a.to_vec(), &e.items, path),
        // Entry by entry, so dicts holding tensors compare by value, not by identity.
        (IValue::Dict(a), IValue::Dict(e)) => {
            let (a, e) = (a.entries(), e.entries());
            if a.len() != e.len() {
                return Err(format!(
                    "{path}: {} entries vs PyTorch's {}",
                    a.len(),
                    e.len()
                ));
            }
            for (index, ((ka, va), (ke, ve))) in a.iter().zip(e.iter()).enumerate() {
                compare(ka, ke, &format!("{path}.key{index}"))?;
                compare(va, ve, &format!("{path}[{index}]"))?;
            }
            Ok(())
        }
        (a, e) => match a.equals(e) {
            Ok(true) => Ok(()),
            _ => Err(format!(
                "{path}: {} vs PyTorch's {}",
                a.python_repr(),
                e.python_repr()
            )),
        },
    }
}

fn compare_items(actual: &[IValue], expected: &[IValue], path: &str) -> Result<(), String> {
    if actual.len() != expected.len() {
        return Err(format!(
            "{path}: {} items vs PyTorch's {}",
            actual.len(),
            expected.len()
        ));
    }
    for (index, (a, e)) in actual.iter().zip(expected).enumerate() {
        compare(a, e, &format!("{path}[{index}]"))?;
    }
    Ok(())
}

/// Runs every case of a file and returns one line per failure (empty when all pass).
/// Error cases pass when ferrojit also fails; its message is not compared (categories are
/// checked by the caller where it matters).
pub fn run_case_file(path: &Path) -> Vec<String> {
    let cases = match load_cases(path) {
        Ok(cases) => cases,
        Err(error) => return vec![error],
    };
    let mut failures = Vec::new();
    for case in &cases {
        let outcome = run_case(case);
        match (&case.expected, outcome) {
            (Ok(expected), Ok(actual)) => {
                if let Err(difference) =
                    compare(&actual, expected, &format!("{} ({})", case.name, case.op))
                {
                    failures.push(difference);
                }
            }
            (Ok(_), Err(error)) => failures.push(format!(
                "{} ({}): ferrojit failed: {error}",
                case.name, case.op
            )),
            (Err(message), Ok(actual)) => failures.push(format!(
                "{} ({}): PyTorch raised '{message}' but ferrojit returned {}",
                case.name,
                case.op,
                actual.python_repr()
            )),
            (Err(_), Err(_)) => {}
        }
    }
    failures
}
