//! Method arguments and results as JSON.
//!
//! [`parse_json_arguments`] reads a JSON list of positional arguments. Each argument is
//! written plainly:
//!
//! | JSON | value |
//! |---|---|
//! | `3`, `2.5`, `true`, `null`, `"text"` | `int`, `float`, `bool`, `None`, `str` |
//! | `[1, 2]`, `[[1.5], [2.0]]` | `List[int]`, `List[List[float]]` (ints and floats mixed: floats) |
//! | `{"dtype": "float32", "shape": [2, 2], "data": [1, 2, 3, 4]}` | a tensor (`data` flat or nested, row-major; `"nan"`, `"inf"`, `"-inf"` for those floats) |
//! | `{"a": 1, "b": 2}` | `Dict[str, int]` (keys come in sorted order) |
//!
//! or in the tagged form the fixture generators write (`tests/fixtures/README.md`):
//! `{"tensor": {...}}`, `{"int": 3}`, `{"float": 2.5}`, `{"bool": true}`, `{"str": "…"}`,
//! `{"none": null}`, `{"tuple": [...]}`, `{"list": [...]}`, `{"dict": [[key, value], …]}`.
//! An object with exactly one of those keys is read as tagged. A top-level `{"tuple": [...]}`
//! holds the arguments (as `examples/mlp_inputs.json` does); any other single top-level value
//! that is not a list is the only argument.
//!
//! [`ivalue_to_json`] writes the tagged form, which keeps tuples, lists and dict order apart;
//! its output reads back through [`parse_json_arguments`] as one argument, except a tuple,
//! which (like `examples/mlp_inputs.json`) reads back as its items.

use std::sync::Arc;

use ferrojit_ir::Type;
use ferrojit_runtime::ivalue::{DictValue, IValue};
use ferrojit_tensor::{DType, Tensor};
use serde_json::{Map, Number, Value as Json};

use super::ArrayFileError;

/// The keys of the tagged encoding.
const TAGS: [&str; 9] = [
    "tensor", "int", "float", "bool", "str", "none", "tuple", "list", "dict",
];

/// Parses JSON text into the positional arguments of a method call.
pub fn parse_json_arguments(text: &str) -> Result<Vec<IValue>, ArrayFileError> {
    let json: Json =
        serde_json::from_str(text).map_err(|e| ArrayFileError::JsonSyntax(e.to_string()))?;
    match &json {
        Json::Array(items) => items
            .iter()
            .enumerate()
            .map(|(index, item)| value_from_json(item, &format!("[{index}]")))
            .collect(),
        Json::Object(object) if tag_of(object) == Some("tuple") => {
            match value_from_json(&json, "")? {
                IValue::Tuple(tuple) => Ok(tuple.items.to_vec()),
                _ => unreachable_tuple(),
            }
        }
        other => Ok(vec![value_from_json(other, "")?]),
    }
}

/// Keeps [`parse_json_arguments`] free of a panic path should tagged tuples ever change.
fn unreachable_tuple() -> Result<Vec<IValue>, ArrayFileError> {
    Err(ArrayFileError::JsonValue {
        at: String::new(),
        message: "a tagged tuple did not read as a tuple".to_string(),
    })
}

/// The tag of a one-key tagged object, if it is one.
fn tag_of(object: &Map<String, Json>) -> Option<&'static str> {
    if object.len() != 1 {
        return None;
    }
    let key = object.keys().next()?;
    TAGS.iter().copied().find(|tag| tag == key)
}

fn value_error(at: &str, message: impl Into<String>) -> ArrayFileError {
    ArrayFileError::JsonValue {
        at: if at.is_empty() {
            "the top level".to_string()
        } else {
            at.to_string()
        },
        message: message.into(),
    }
}

/// One argument, plain or tagged.
fn value_from_json(json: &Json, at: &str) -> Result<IValue, ArrayFileError> {
    Ok(match json {
        Json::Null => IValue::None,
        Json::Bool(flag) => IValue::Bool(*flag),
        Json::Number(number) => number_value(number, at)?,
        Json::String(text) => IValue::string(text),
        Json::Array(items) => list_value(items, at)?,
        Json::Object(object) => {
            if let Some(tag) = tag_of(object) {
                let body = &object[tag];
                return tagged_value(tag, body, &format!("{at}.{tag}"));
            }
            if object.contains_key("dtype") && object.contains_key("data") {
                return Ok(IValue::from(tensor_from_json(object, at)?));
            }
            let mut entries = Vec::with_capacity(object.len());
            for (key, value) in object {
                entries.push((
                    IValue::string(key),
                    value_from_json(value, &format!("{at}.{key}"))?,
                ));
            }
            dict_value(Type::Str, entries)
        }
    })
}

fn number_value(number: &Number, at: &str) -> Result<IValue, ArrayFileError> {
    if let Some(int) = number.as_i64() {
        return Ok(IValue::Int(int));
    }
    if number.is_u64() {
        return Err(value_error(
            at,
            format!("{number} does not fit an int (64-bit)"),
        ));
    }
    number
        .as_f64()
        .map(IValue::Double)
        .ok_or_else(|| value_error(at, format!("{number} is not a number ferrojit reads")))
}

/// A float from a number or one of the strings the fixtures use for non-finite values.
fn float_from_json(json: &Json, at: &str) -> Result<f64, ArrayFileError> {
    match json {
        Json::Number(number) => number
            .as_f64()
            .ok_or_else(|| value_error(at, format!("{number} is not a float"))),
        Json::String(text) => match text.as_str() {
            "nan" | "NaN" => Ok(f64::NAN),
            "inf" | "Infinity" => Ok(f64::INFINITY),
            "-inf" | "-Infinity" => Ok(f64::NEG_INFINITY),
            _ => Err(value_error(at, format!("\"{text}\" is not a float"))),
        },
        other => Err(value_error(at, format!("{other} is not a float"))),
    }
}

/// A list with the element type its items share (ints and floats together make floats).
fn list_value(items: &[Json], at: &str) -> Result<IValue, ArrayFileError> {
    let values = items
        .iter()
        .enumerate()
        .map(|(index, item)| value_from_json(item, &format!("{at}[{index}]")))
        .collect::<Result<Vec<_>, _>>()?;
    let all = |check: fn(&IValue) -> bool| values.iter().all(check);
    if !values.is_empty() && all(|v| matches!(v, IValue::Int(_) | IValue::Double(_))) {
        if all(|v| matches!(v, IValue::Int(_))) {
            return Ok(IValue::list(Type::Int, values));
        }
        let floats = values
            .into_iter()
            .map(|v| match v {
                IValue::Int(int) => IValue::Double(int as f64),
                other => other,
            })
            .collect();
        return Ok(IValue::list(Type::Float, floats));
    }
    let element = common_type(&values);
    Ok(IValue::list(element, values))
}

/// The one type every value has, or `Any` (also for no values).
fn common_type(values: &[IValue]) -> Type {
    let mut types = values.iter().map(IValue::type_of);
    let Some(first) = types.next() else {
        return Type::Any;
    };
    if types.all(|ty| ty == first) {
        first
    } else {
        Type::Any
    }
}

fn dict_value(key_type: Type, entries: Vec<(IValue, IValue)>) -> IValue {
    let values: Vec<IValue> = entries.iter().map(|(_, value)| value.clone()).collect();
    let dict = DictValue::new(key_type, common_type(&values));
    for (key, value) in entries {
        dict.insert(key, value);
    }
    IValue::Dict(dict)
}

/// A value of the tagged encoding.
fn tagged_value(tag: &str, body: &Json, at: &str) -> Result<IValue, ArrayFileError> {
    let items = |body: &Json| {
        body.as_array()
            .ok_or_else(|| value_error(at, format!("'{tag}' needs a list")))
            .and_then(|items| {
                items
                    .iter()
                    .enumerate()
                    .map(|(index, item)| value_from_json(item, &format!("{at}[{index}]")))
                    .collect::<Result<Vec<_>, _>>()
            })
    };
    Ok(match tag {
        "tensor" => {
            let object = body
                .as_object()
                .ok_or_else(|| value_error(at, "a tensor needs dtype, shape and data"))?;
            IValue::from(tensor_from_json(object, at)?)
        }
        "int" => match body {
            Json::Number(number) => match number_value(number, at)? {
                IValue::Int(int) => IValue::Int(int),
                _ => return Err(value_error(at, format!("{number} is not an int"))),
            },
            other => return Err(value_error(at, format!("{other} is not an int"))),
        },
        "float" => IValue::Double(float_from_json(body, at)?),
        "bool" => IValue::Bool(
            body.as_bool()
                .ok_or_else(|| value_error(at, format!("{body} is not a bool")))?,
        ),
        "str" => IValue::string(
            body.as_str()
                .ok_or_else(|| value_error(at, format!("{body} is not a string")))?,
        ),
        "none" => IValue::None,
        "tuple" => IValue::tuple(items(body)?),
        "list" => {
            let values = items(body)?;
            IValue::list(common_type(&values), values)
        }
        "dict" => {
            let pairs = body
                .as_array()
                .ok_or_else(|| value_error(at, "'dict' needs a list of [key, value] pairs"))?;
            let mut entries = Vec::with_capacity(pairs.len());
            for (index, pair) in pairs.iter().enumerate() {
                let here = format!("{at}[{index}]");
                match pair.as_array().map(Vec::as_slice) {
                    Some([key, value]) => entries.push((
                        value_from_json(key, &format!("{here}[0]"))?,
                        value_from_json(value, &format!("{here}[1]"))?,
                    )),
                    _ => return Err(value_error(&here, "not a [key, value] pair")),
                }
            }
            let keys: Vec<IValue> = entries.iter().map(|(key, _)| key.clone()).collect();
            dict_value(common_type(&keys), entries)
        }
        _ => return Err(value_error(at, format!("unknown tag '{tag}'"))),
    })
}

/// A dtype from its torch name (with or without `torch.`, and the common aliases).
fn dtype_from_name(name: &str) -> Option<DType> {
    let name = name.strip_prefix("torch.").unwrap_or(name);
    Some(match name {
        "bool" => DType::Bool,
        "uint8" => DType::UInt8,
        "int8" => DType::Int8,
        "int16" | "short" => DType::Int16,
        "int32" | "int" => DType::Int32,
        "int64" | "long" => DType::Int64,
        "float16" | "half" => DType::Float16,
        "bfloat16" => DType::BFloat16,
        "float32" | "float" => DType::Float32,
        "float64" | "double" => DType::Float64,
        _ => return None,
    })
}

/// `{"dtype": ..., "shape": [...], "data": [...]}` as a tensor; without `shape`, the shape
/// of nested `data` (a flat list is one-dimensional).
fn tensor_from_json(object: &Map<String, Json>, at: &str) -> Result<Tensor, ArrayFileError> {
    for key in object.keys() {
        if !matches!(key.as_str(), "dtype" | "shape" | "data") {
            return Err(value_error(
                at,
                format!("a tensor takes only dtype, shape and data, not '{key}'"),
            ));
        }
    }
    let dtype_name = object.get("dtype").and_then(Json::as_str).ok_or_else(|| {
        value_error(
            at,
            "a tensor's 'dtype' must be a string such as \"float32\"",
        )
    })?;
    let dtype = dtype_from_name(dtype_name).ok_or_else(|| {
        value_error(
            at,
            format!("dtype '{dtype_name}' is not supported (bool, uint8, int8-64, float16, bfloat16, float32, float64)"),
        )
    })?;
    let data = object
        .get("data")
        .ok_or_else(|| value_error(at, "a tensor needs 'data'"))?;
    let mut elements = Vec::new();
    let nested_shape = flatten_data(data, &mut elements, at)?;
    let shape = match object.get("shape") {
        Some(Json::Array(sizes)) => sizes
            .iter()
            .map(|size| {
                size.as_u64()
                    .and_then(|size| usize::try_from(size).ok())
                    .ok_or_else(|| value_error(at, format!("shape entry {size} is not a size")))
            })
            .collect::<Result<Vec<usize>, _>>()?,
        Some(other) => return Err(value_error(at, format!("shape {other} is not a list"))),
        None => nested_shape,
    };
    let numel = shape
        .iter()
        .try_fold(1usize, |acc, &size| acc.checked_mul(size));
    if numel != Some(elements.len()) {
        return Err(value_error(
            at,
            format!("{} data values for shape {shape:?}", elements.len()),
        ));
    }
    let here = |index: usize| format!("{at}.data[{index}]");
    let tensor = match dtype {
        DType::Bool => {
            let values = elements
                .iter()
                .enumerate()
                .map(|(index, item)| match item {
                    Json::Bool(flag) => Ok(*flag),
                    Json::Number(n) if n.as_i64() == Some(0) => Ok(false),
                    Json::Number(n) if n.as_i64() == Some(1) => Ok(true),
                    other => Err(value_error(&here(index), format!("{other} is not a bool"))),
                })
                .collect::<Result<Vec<bool>, _>>()?;
            Tensor::from_vec(values, &shape)?
        }
        dtype if dtype.is_floating_point() => {
            let values = elements
                .iter()
                .enumerate()
                .map(|(index, item)| float_from_json(item, &here(index)))
                .collect::<Result<Vec<f64>, _>>()?;
            Tensor::from_vec(values, &shape)?.to_dtype(dtype)
        }
        dtype => {
            let values = elements
                .iter()
                .enumerate()
                .map(|(index, item)| {
                    item.as_i64().ok_or_else(|| {
                        value_error(&here(index), format!("{item} is not an integer"))
                    })
                })
                .collect::<Result<Vec<i64>, _>>()?;
            let tensor = Tensor::from_vec(values.clone(), &shape)?.to_dtype(dtype);
            // A value the dtype cannot hold would wrap silently; refuse it instead.
            if tensor.to_i64_vec() != values {
                return Err(value_error(
                    at,
                    format!("a data value does not fit {}", dtype.name()),
                ));
            }
            tensor
        }
    };
    Ok(tensor)
}

/// Collects the leaves of (possibly nested) `data` in row-major order and returns the nested
/// shape; ragged nesting is an error.
fn flatten_data<'a>(
    data: &'a Json,
    leaves: &mut Vec<&'a Json>,
    at: &str,
) -> Result<Vec<usize>, ArrayFileError> {
    let Json::Array(items) = data else {
        // A bare number is a 0-d tensor's single value.
        leaves.push(data);
        return Ok(Vec::new());
    };
    let mut inner: Option<Vec<usize>> = None;
    for item in items {
        let shape = flatten_data(item, leaves, at)?;
        match &inner {
            Some(previous) if *previous != shape => {
                return Err(value_error(at, "ragged nested 'data'"))
            }
            Some(_) => {}
            None => inner = Some(shape),
        }
    }
    let mut shape = vec![items.len()];
    shape.extend(inner.unwrap_or_default());
    Ok(shape)
}

/// A float as the fixtures write it: a number, or `"nan"`, `"inf"`, `"-inf"`.
fn float_json(value: f64) -> Json {
    match Number::from_f64(value) {
        Some(number) => Json::Number(number),
        None if value.is_nan() => Json::String("nan".into()),
        None if value > 0.0 => Json::String("inf".into()),
        None => Json::String("-inf".into()),
    }
}

fn tagged(tag: &str, body: Json) -> Json {
    let mut object = Map::new();
    object.insert(tag.to_string(), body);
    Json::Object(object)
}

/// A value in the tagged JSON encoding (`tests/fixtures/README.md`).
pub fn ivalue_to_json(value: &IValue) -> Result<Json, ArrayFileError> {
    to_json_at(value, "")
}

fn to_json_at(value: &IValue, at: &str) -> Result<Json, ArrayFileError> {
    let sequence = |items: &[IValue]| {
        items
            .iter()
            .enumerate()
            .map(|(index, item)| to_json_at(item, &format!("{at}[{index}]")))
            .collect::<Result<Vec<_>, _>>()
            .map(Json::Array)
    };
    Ok(match value {
        IValue::None => tagged("none", Json::Null),
        IValue::Bool(flag) => tagged("bool", Json::Bool(*flag)),
        IValue::Int(int) => tagged("int", Json::from(*int)),
        IValue::Double(float) => tagged("float", float_json(*float)),
        IValue::Str(text) => tagged("str", Json::String(text.to_string())),
        IValue::Tensor(cell) => tagged("tensor", tensor_json(&cell.get(), at)?),
        IValue::Tuple(tuple) => tagged("tuple", sequence(&tuple.items)?),
        IValue::List(list) => tagged("list", sequence(&list.to_vec())?),
        IValue::Dict(dict) => {
            let pairs = dict
                .entries()
                .iter()
                .enumerate()
                .map(|(index, (key, value))| {
                    let here = format!("{at}[{index}]");
                    Ok(Json::Array(vec![
                        to_json_at(key, &here)?,
                        to_json_at(value, &here)?,
                    ]))
                })
                .collect::<Result<Vec<_>, ArrayFileError>>()?;
            tagged("dict", Json::Array(pairs))
        }
        other => {
            return Err(ArrayFileError::UnwritableValue {
                kind: other.tag_name(),
                at: if at.is_empty() {
                    "the top level".to_string()
                } else {
                    at.to_string()
                },
            })
        }
    })
}

fn tensor_json(tensor: &Arc<Tensor>, at: &str) -> Result<Json, ArrayFileError> {
    let dtype = tensor.dtype();
    let data: Vec<Json> = match dtype {
        DType::Bool => tensor
            .to_i64_vec()
            .into_iter()
            .map(|v| Json::Bool(v != 0))
            .collect(),
        DType::ComplexFloat | DType::ComplexDouble => {
            return Err(ArrayFileError::UnwritableValue {
                kind: "complex tensor",
                at: at.to_string(),
            })
        }
        dtype if dtype.is_floating_point() => {
            tensor.to_f64_vec().into_iter().map(float_json).collect()
        }
        _ => tensor.to_i64_vec().into_iter().map(Json::from).collect(),
    };
    let mut object = Map::new();
    object.insert("dtype".into(), Json::String(dtype.name().into()));
    object.insert(
        "shape".into(),
        Json::Array(
            tensor
                .sizes()
                .iter()
                .map(|&s| Json::from(s as u64))
                .collect(),
        ),
    );
    object.insert("data".into(), Json::Array(data));
    Ok(Json::Object(object))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_arguments() {
        let arguments = parse_json_arguments(
            r#"[{"dtype": "float32", "shape": [2, 2], "data": [[1, 2], [3.5, "inf"]]},
                3, 2.5, true, null, "text", [1, 2], [1, 2.5], {"b": 1, "a": 2}]"#,
        )
        .unwrap();
        assert_eq!(arguments.len(), 9);
        let tensor = arguments[0].to_tensor().unwrap();
        assert_eq!(tensor.dtype(), DType::Float32);
        assert_eq!(tensor.sizes(), &[2, 2]);
        assert_eq!(tensor.to_f64_vec(), vec![1.0, 2.0, 3.5, f64::INFINITY]);
        assert_eq!(arguments[1].to_int().unwrap(), 3);
        assert_eq!(arguments[2].to_double().unwrap(), 2.5);
        assert!(arguments[3].to_bool().unwrap());
        assert!(arguments[4].is_none());
        assert_eq!(arguments[5].to_str().unwrap(), "text");
        assert_eq!(arguments[6].type_of(), Type::list(Type::Int));
        assert_eq!(arguments[7].to_double_vec().unwrap(), vec![1.0, 2.5]);
        assert_eq!(arguments[8].type_of(), Type::dict(Type::Str, Type::Int));
    }

    #[test]
    fn tagged_tuple_at_top_level_and_round_trip() {
        let text = r#"{"tuple": [{"tensor": {"dtype": "int64", "shape": [3], "data": [1, -2, 3]}},
                                 {"float": "nan"}, {"dict": [[{"str": "k"}, {"int": 4}]]}]}"#;
        let arguments = parse_json_arguments(text).unwrap();
        assert_eq!(arguments.len(), 3);
        assert_eq!(
            arguments[0].to_tensor().unwrap().to_i64_vec(),
            vec![1, -2, 3]
        );
        assert!(arguments[1].to_double().unwrap().is_nan());
        let written = ivalue_to_json(&IValue::tuple(arguments.clone())).unwrap();
        let again = parse_json_arguments(&written.to_string()).unwrap();
        assert_eq!(again.len(), 3);
        assert_eq!(again[0].to_tensor().unwrap().to_i64_vec(), vec![1, -2, 3]);
        assert_eq!(again[2].to_dict().unwrap().len(), 1);
    }

    #[test]
    fn bad_values_name_their_place() {
        let cases = [
            (
                r#"[{"dtype": "float32", "shape": [3], "data": [1, 2]}]"#,
                "[0]",
            ),
            (r#"[1, {"dtype": "quux", "data": [1]}]"#, "[1]"),
            (r#"[{"dtype": "int8", "shape": [1], "data": [300]}]"#, "[0]"),
            (r#"[{"dtype": "int64", "data": [1.5]}]"#, "[0].data[0]"),
            (r#"[{"dtype": "float32", "data": [[1, 2], [3]]}]"#, "[0]"),
            (
                r#"[{"dtype": "float32", "shape": [4294967296, 4294967296, 4294967296], "data": []}]"#,
                "[0]",
            ),
            (r#"[18446744073709551615]"#, "[0]"),
            (r#"{"int": 1.5}"#, ".int"),
        ];
        for (text, place) in cases {
            let error = parse_json_arguments(text).unwrap_err();
            assert!(
                matches!(&error, ArrayFileError::JsonValue { at, .. } if at == place),
                "{text}: {error}"
            );
        }
        assert!(matches!(
            parse_json_arguments("[1, "),
            Err(ArrayFileError::JsonSyntax(_))
        ));
    }
}
