//! Helpers shared by the fixture tests: paths, reading torch.save files, comparing values.

#![allow(dead_code)]

use ferrojit_runtime::IValue;
use std::path::PathBuf;

pub fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/export")
}

pub fn load_torch_save(name: &str) -> IValue {
    let path = fixture_dir().join(name);
    ferrojit_serialize::torch_save::load_file(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()))
}

/// Compares `actual` with PyTorch's `expected`: float tensors with rtol 1e-4 and atol 1e-5
/// (NaN matches NaN), everything else exactly; containers element by element.
pub fn compare(actual: &IValue, expected: &IValue, path: &str) -> Result<(), String> {
    match (actual, expected) {
        (IValue::Tensor(_), IValue::Tensor(_)) => {
            let a = actual.to_tensor().map_err(|e| e.to_string())?;
            let e = expected.to_tensor().map_err(|e| e.to_string())?;
            if a.dtype() != e.dtype() {
                return Err(format!(
                    "{path}: dtype {:?} != expected {:?}",
                    a.dtype(),
                    e.dtype()
                ));
            }
            if a.sizes() != e.sizes() {
                return Err(format!(
                    "{path}: sizes {:?} != expected {:?}",
                    a.sizes(),
                    e.sizes()
                ));
            }
            let (av, ev) = (a.to_f64_vec(), e.to_f64_vec());
            for (index, (x, y)) in av.iter().zip(&ev).enumerate() {
                let close = if e.dtype().is_floating_point() {
                    (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= 1e-5 + 1e-4 * y.abs()
                } else {
                    x == y
                };
                if !close {
                    return Err(format!("{path}: element {index} is {x}, expected {y}"));
                }
            }
            Ok(())
        }
        (IValue::Tuple(a), IValue::Tuple(e)) => compare_items(&a.items, &e.items, path),
        (IValue::List(a), IValue::List(e)) => compare_items(&a.to_vec(), &e.to_vec(), path),
        (IValue::Tuple(a), IValue::List(e)) => compare_items(&a.items, &e.to_vec(), path),
        (IValue::Dict(a), IValue::Dict(e)) => {
            let (a, e) = (a.entries(), e.entries());
            if a.len() != e.len() {
                return Err(format!("{path}: {} keys, expected {}", a.len(), e.len()));
            }
            for ((ak, av), (ek, ev)) in a.iter().zip(&e) {
                if !ak.key_equals(ek) {
                    return Err(format!(
                        "{path}: key {} where {} was expected",
                        ak.python_repr(),
                        ek.python_repr()
                    ));
                }
                compare(av, ev, &format!("{path}[{}]", ek.python_repr()))?;
            }
            Ok(())
        }
        (IValue::Double(a), IValue::Double(e)) => {
            if (a - e).abs() <= 1e-5 + 1e-4 * e.abs() {
                Ok(())
            } else {
                Err(format!("{path}: {a} != expected {e}"))
            }
        }
        _ => {
            if actual.equals(expected).unwrap_or(false) {
                Ok(())
            } else {
                Err(format!(
                    "{path}: {} != expected {}",
                    actual.python_repr(),
                    expected.python_repr()
                ))
            }
        }
    }
}

fn compare_items(actual: &[IValue], expected: &[IValue], path: &str) -> Result<(), String> {
    if actual.len() != expected.len() {
        return Err(format!(
            "{path}: {} items, expected {}",
            actual.len(),
            expected.len()
        ));
    }
    for (index, (a, e)) in actual.iter().zip(expected).enumerate() {
        compare(a, e, &format!("{path}[{index}]"))?;
    }
    Ok(())
}
