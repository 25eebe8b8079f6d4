//! Compares a runtime value with the JSON encoding of PyTorch's value that the fixture
//! generators write (see tests/fixtures/README.md); the one JSON comparator of the test code.

use ferrojit_runtime::ivalue::IValue;
use serde_json::Value as Json;

/// Float tolerances of the JSON fixtures (float32's: rtol 1e-5, atol 1e-6); integers,
/// booleans and strings compare exactly.
pub const RTOL: f64 = 1e-5;
pub const ATOL: f64 = 1e-6;

/// Reads a JSON number as the generators write floats: a number, or `"nan"`, `"inf"`,
/// `"-inf"` for the values JSON cannot spell; booleans read as 0 and 1.
pub fn json_float(value: &Json) -> Result<f64, String> {
    match value {
        Json::Number(n) => n.as_f64().ok_or_else(|| format!("bad number {n}")),
        Json::String(s) if s == "nan" => Ok(f64::NAN),
        Json::String(s) if s == "inf" => Ok(f64::INFINITY),
        Json::String(s) if s == "-inf" => Ok(f64::NEG_INFINITY),
        Json::Bool(b) => Ok(f64::from(u8::from(*b))),
        other => Err(format!("not a number in expected JSON: {other}")),
    }
}

/// Whether `actual` is within the tolerance of `expected`; NaN matches only NaN and an
/// infinity only the same infinity.
fn close(actual: f64, expected: f64) -> bool {
    if expected.is_nan() {
        return actual.is_nan();
    }
    if expected.is_infinite() {
        return actual == expected;
    }
    (actual - expected).abs() <= ATOL + RTOL * expected.abs()
}

/// Reads a JSON array of non-negative integers (a shape or strides).
fn json_dims(value: &Json, path: &str, what: &str) -> Result<Vec<usize>, String> {
    value
        .as_array()
        .ok_or_else(|| format!("{path}: bad expected {what} {value}"))?
        .iter()
        .map(|d| {
            d.as_u64()
                .and_then(|d| usize::try_from(d).ok())
                .ok_or_else(|| format!("{path}: bad expected {what} {value}"))
        })
        .collect()
}

/// Compares `actual` with the JSON encoding of PyTorch's value (`{"tensor": {"dtype",
/// "shape", "data", optional "stride" and "storage_offset"}}`, `{"list": [...]}`, ...);
/// `Err` names the first difference, `path` its position inside the value.
pub fn compare_json(actual: &IValue, expected: &Json, path: &str) -> Result<(), String> {
    let (tag, body) = expected
        .as_object()
        .and_then(|object| object.iter().next())
        .ok_or_else(|| format!("{path}: bad expected JSON {expected}"))?;
    let mismatch = || {
        format!(
            "{path}: expected {}, got {}",
            expected,
            actual.python_repr()
        )
    };
    match (tag.as_str(), actual) {
        ("none", IValue::None) => Ok(()),
        ("bool", IValue::Bool(b)) if Some(*b) == body.as_bool() => Ok(()),
        ("int", IValue::Int(i)) if Some(*i) == body.as_i64() => Ok(()),
        ("float", IValue::Double(f)) if close(*f, json_float(body)?) => Ok(()),
        ("str", IValue::Str(s)) if Some(&**s) == body.as_str() => Ok(()),
        ("tuple", IValue::Tuple(tuple)) => compare_json_items(&tuple.items, body, path),
        ("list", IValue::List(list)) => compare_json_items(&list.to_vec(), body, path),
        ("dict", IValue::Dict(dict)) => {
            let expected_entries = body.as_array().ok_or_else(mismatch)?;
            let entries = dict.entries();
            if entries.len() != expected_entries.len() {
                return Err(format!(
                    "{path}: {} dict entries instead of {}",
                    entries.len(),
                    expected_entries.len()
                ));
            }
            for (index, ((key, value), pair)) in entries.iter().zip(expected_entries).enumerate() {
                compare_json(key, &pair[0], &format!("{path}.key{index}"))?;
                compare_json(value, &pair[1], &format!("{path}[{index}]"))?;
            }
            Ok(())
        }
        ("tensor", IValue::Tensor(tensor)) => {
            let tensor = tensor.get();
            let dtype = body["dtype"].as_str().ok_or_else(mismatch)?;
            if tensor.dtype().name() != dtype {
                return Err(format!(
                    "{path}: dtype {} instead of {dtype}",
                    tensor.dtype().name()
                ));
            }
            let shape = json_dims(&body["shape"], path, "shape")?;
            if tensor.sizes() != shape.as_slice() {
                return Err(format!(
                    "{path}: shape {:?} instead of {shape:?}",
                    tensor.sizes()
                ));
            }
            if let Some(stride) = body.get("stride") {
                let stride = json_dims(stride, path, "stride")?;
                if tensor.strides() != stride.as_slice() {
                    return Err(format!(
                        "{path}: stride {:?} instead of {stride:?}",
                        tensor.strides()
                    ));
                }
            }
            if let Some(offset) = body.get("storage_offset") {
                if Some(tensor.storage_offset() as u64) != offset.as_u64() {
                    return Err(format!(
                        "{path}: storage offset {} instead of {offset}",
                        tensor.storage_offset()
                    ));
                }
            }
            let data = body["data"].as_array().ok_or_else(mismatch)?;
            let values = tensor.to_f64_vec();
            if values.len() != data.len() {
                return Err(format!(
                    "{path}: {} elements instead of {}",
                    values.len(),
                    data.len()
                ));
            }
            let exact = !tensor.dtype().is_floating_point();
            for (index, (a, e)) in values.iter().zip(data).enumerate() {
                let e = json_float(e)?;
                if (exact && *a != e) || (!exact && !close(*a, e)) {
                    return Err(format!("{path}: element {index} is {a} instead of {e}"));
                }
            }
            Ok(())
        }
        _ => Err(mismatch()),
    }
}

fn compare_json_items(actual: &[IValue], expected: &Json, path: &str) -> Result<(), String> {
    let expected = expected
        .as_array()
        .ok_or_else(|| format!("{path}: bad expected items"))?;
    if actual.len() != expected.len() {
        return Err(format!(
            "{path}: {} items instead of {}",
            actual.len(),
            expected.len()
        ));
    }
    for (index, (a, e)) in actual.iter().zip(expected).enumerate() {
        compare_json(a, e, &format!("{path}[{index}]"))?;
    }
    Ok(())
}
