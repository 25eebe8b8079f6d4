//! Tensor data in and out of the v2 protocol: JSON arrays (flat or nested) and the binary
//! tensor extension's little-endian bytes.

use ferrojit::{DType, Tensor};
use half::{bf16, f16};
use serde_json::Value;

use crate::datatype::Datatype;

/// A decoded input or output tensor: numbers in a ferrojit tensor, or byte strings.
#[derive(Debug, Clone)]
pub enum WireTensor {
    /// A numeric or boolean tensor.
    Tensor(Tensor),
    /// BYTES elements with their shape.
    Bytes {
        /// The shape the request declared.
        shape: Vec<usize>,
        /// One entry per element.
        elements: Vec<Vec<u8>>,
    },
}

/// The number of elements of `shape`, or a message when the product overflows.
pub fn element_count(shape: &[usize]) -> Result<usize, String> {
    shape.iter().try_fold(1usize, |count, &size| {
        count
            .checked_mul(size)
            .ok_or_else(|| format!("shape {shape:?} has more elements than fit in memory"))
    })
}

/// Collects the leaves of a (possibly nested) JSON array in row-major order.
fn flatten<'a>(value: &'a Value, leaves: &mut Vec<&'a Value>, depth: usize) -> Result<(), String> {
    match value {
        Value::Array(items) => {
            if depth > 64 {
                return Err("data is nested more than 64 levels deep".to_string());
            }
            for item in items {
                flatten(item, leaves, depth + 1)?;
            }
            Ok(())
        }
        leaf => {
            leaves.push(leaf);
            Ok(())
        }
    }
}

fn number(leaf: &Value, index: usize) -> Result<f64, String> {
    match leaf {
        Value::Number(number) => number
            .as_f64()
            .ok_or_else(|| format!("element {index} ({number}) is not a finite number")),
        Value::Bool(flag) => Ok(f64::from(u8::from(*flag))),
        other => Err(format!("element {index} is {other}, not a number")),
    }
}

fn integer(leaf: &Value, index: usize, low: i64, high: i64) -> Result<i64, String> {
    let value = match leaf {
        Value::Number(number) => number.as_i64().ok_or_else(|| {
            format!("element {index} ({number}) is not an integer in the 64-bit range")
        })?,
        Value::Bool(flag) => i64::from(*flag),
        other => return Err(format!("element {index} is {other}, not an integer")),
    };
    if value < low || value > high {
        return Err(format!(
            "element {index} ({value}) is outside the type's range [{low}, {high}]"
        ));
    }
    Ok(value)
}

fn boolean(leaf: &Value, index: usize) -> Result<bool, String> {
    match leaf {
        Value::Bool(flag) => Ok(*flag),
        Value::Number(number) if number.as_i64() == Some(0) => Ok(false),
        Value::Number(number) if number.as_i64() == Some(1) => Ok(true),
        other => Err(format!("element {index} is {other}, not a boolean")),
    }
}

fn collect<T>(
    leaves: &[&Value],
    convert: impl Fn(&Value, usize) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    leaves
        .iter()
        .enumerate()
        .map(|(index, leaf)| convert(leaf, index))
        .collect()
}

fn tensor_of<T: ferrojit_tensor::Element>(
    values: Vec<T>,
    shape: &[usize],
) -> Result<WireTensor, String> {
    Tensor::from_vec(values, shape)
        .map(WireTensor::Tensor)
        .map_err(|error| error.to_string())
}

/// Decodes a JSON `data` field (flat or nested) into a tensor of `datatype` and `shape`.
pub fn decode_json(
    data: &Value,
    datatype: Datatype,
    shape: &[usize],
) -> Result<WireTensor, String> {
    let mut leaves = Vec::new();
    flatten(data, &mut leaves, 0)?;
    let expected = element_count(shape)?;
    if leaves.len() != expected {
        return Err(format!(
            "data has {} elements but shape {shape:?} needs {expected}",
            leaves.len()
        ));
    }
    let dtype = match datatype {
        Datatype::Bytes => {
            let elements = collect(&leaves, |leaf, index| match leaf {
                Value::String(text) => Ok(text.as_bytes().to_vec()),
                other => Err(format!("element {index} is {other}, not a string")),
            })?;
            return Ok(WireTensor::Bytes {
                shape: shape.to_vec(),
                elements,
            });
        }
        Datatype::Numeric(dtype) => dtype,
    };
    match dtype {
        DType::Bool => tensor_of(collect(&leaves, boolean)?, shape),
        DType::UInt8 => tensor_of(
            collect(&leaves, |l, i| integer(l, i, 0, 255).map(|v| v as u8))?,
            shape,
        ),
        DType::Int8 => tensor_of(
            collect(&leaves, |l, i| integer(l, i, -128, 127).map(|v| v as i8))?,
            shape,
        ),
        DType::Int16 => tensor_of(
            collect(&leaves, |l, i| {
                integer(l, i, i16::MIN.into(), i16::MAX.into()).map(|v| v as i16)
            })?,
            shape,
        ),
        DType::Int32 => tensor_of(
            collect(&leaves, |l, i| {
                integer(l, i, i32::MIN.into(), i32::MAX.into()).map(|v| v as i32)
            })?,
            shape,
        ),
        DType::Int64 => tensor_of(
            collect(&leaves, |l, i| integer(l, i, i64::MIN, i64::MAX))?,
            shape,
        ),
        DType::Float16 => tensor_of(
            collect(&leaves, |l, i| number(l, i).map(f16::from_f64))?,
            shape,
        ),
        DType::BFloat16 => tensor_of(
            collect(&leaves, |l, i| number(l, i).map(bf16::from_f64))?,
            shape,
        ),
        DType::Float32 => tensor_of(
            collect(&leaves, |l, i| number(l, i).map(|v| v as f32))?,
            shape,
        ),
        DType::Float64 => tensor_of(collect(&leaves, number)?, shape),
        DType::ComplexFloat | DType::ComplexDouble => {
            Err("complex tensors have no v2 datatype".to_string())
        }
    }
}

/// Decodes BYTES elements from the binary extension: each is a 4-byte little-endian length
/// and that many bytes.
fn decode_binary_bytes(bytes: &[u8], count: usize) -> Result<Vec<Vec<u8>>, String> {
    let mut elements = Vec::with_capacity(count.min(bytes.len() / 4 + 1));
    let mut rest = bytes;
    while !rest.is_empty() {
        let Some((length, tail)) = rest.split_first_chunk::<4>() else {
            return Err(format!(
                "BYTES element {} has a truncated length prefix",
                elements.len()
            ));
        };
        let length = u32::from_le_bytes(*length) as usize;
        if tail.len() < length {
            return Err(format!(
                "BYTES element {} declares {length} bytes but {} remain",
                elements.len(),
                tail.len()
            ));
        }
        elements.push(tail[..length].to_vec());
        rest = &tail[length..];
    }
    if elements.len() != count {
        return Err(format!(
            "binary data holds {} BYTES elements but the shape needs {count}",
            elements.len()
        ));
    }
    Ok(elements)
}

/// Decodes `bytes` (the binary tensor extension: little-endian, row-major) into a tensor.
pub fn decode_binary(
    bytes: &[u8],
    datatype: Datatype,
    shape: &[usize],
) -> Result<WireTensor, String> {
    let count = element_count(shape)?;
    let dtype = match datatype {
        Datatype::Bytes => {
            return Ok(WireTensor::Bytes {
                shape: shape.to_vec(),
                elements: decode_binary_bytes(bytes, count)?,
            })
        }
        Datatype::Numeric(dtype) => dtype,
    };
    let size = datatype.element_size().unwrap_or(1);
    if Some(bytes.len()) != count.checked_mul(size) {
        return Err(format!(
            "binary data has {} bytes but {} elements of {} need {}",
            bytes.len(),
            count,
            datatype.name(),
            count.saturating_mul(size)
        ));
    }
    macro_rules! read {
        ($ty:ty, $width:expr) => {
            bytes
                .chunks_exact($width)
                .map(|chunk| <$ty>::from_le_bytes(chunk.try_into().expect("chunks_exact width")))
                .collect::<Vec<$ty>>()
        };
    }
    match dtype {
        DType::Bool => tensor_of(bytes.iter().map(|&b| b != 0).collect::<Vec<bool>>(), shape),
        DType::UInt8 => tensor_of(bytes.to_vec(), shape),
        DType::Int8 => tensor_of(read!(i8, 1), shape),
        DType::Int16 => tensor_of(read!(i16, 2), shape),
        DType::Int32 => tensor_of(read!(i32, 4), shape),
        DType::Int64 => tensor_of(read!(i64, 8), shape),
        DType::Float16 => tensor_of(
            read!(u16, 2)
                .into_iter()
                .map(f16::from_bits)
                .collect::<Vec<_>>(),
            shape,
        ),
        DType::BFloat16 => tensor_of(
            read!(u16, 2)
                .into_iter()
                .map(bf16::from_bits)
                .collect::<Vec<_>>(),
            shape,
        ),
        DType::Float32 => tensor_of(read!(f32, 4), shape),
        DType::Float64 => tensor_of(read!(f64, 8), shape),
        DType::ComplexFloat | DType::ComplexDouble => {
            Err("complex tensors have no v2 datatype".to_string())
        }
    }
}

fn float_json(value: f64) -> Value {
    // JSON has no NaN or infinity; they become null, as Python's json module cannot
    // round-trip them either without extensions.
    serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)
}

/// The flat JSON `data` array of an output.
pub fn encode_json(tensor: &WireTensor) -> Result<Value, String> {
    let tensor = match tensor {
        WireTensor::Bytes { elements, .. } => {
            return Ok(Value::Array(
                elements
                    .iter()
                    .map(|element| Value::String(String::from_utf8_lossy(element).into_owned()))
                    .collect(),
            ))
        }
        WireTensor::Tensor(tensor) => tensor,
    };
    let error = |e: ferrojit_tensor::TensorError| e.to_string();
    let values: Vec<Value> = match tensor.dtype() {
        DType::Bool => tensor
            .to_vec::<bool>()
            .map_err(error)?
            .into_iter()
            .map(Value::Bool)
            .collect(),
        DType::UInt8 => tensor
            .to_vec::<u8>()
            .map_err(error)?
            .into_iter()
            .map(Value::from)
            .collect(),
        DType::Int8 => tensor
            .to_vec::<i8>()
            .map_err(error)?
            .into_iter()
            .map(Value::from)
            .collect(),
        DType::Int16 => tensor
            .to_vec::<i16>()
            .map_err(error)?
            .into_iter()
            .map(Value::from)
            .collect(),
        DType::Int32 => tensor
            .to_vec::<i32>()
            .map_err(error)?
            .into_iter()
            .map(Value::from)
            .collect(),
        DType::Int64 => tensor
            .to_vec::<i64>()
            .map_err(error)?
            .into_iter()
            .map(Value::from)
            .collect(),
        DType::Float16 => tensor
            .to_vec::<f16>()
            .map_err(error)?
            .into_iter()
            .map(|v| float_json(v.to_f64()))
            .collect(),
        DType::BFloat16 => tensor
            .to_vec::<bf16>()
            .map_err(error)?
            .into_iter()
            .map(|v| float_json(v.to_f64()))
            .collect(),
        DType::Float32 => tensor
            .to_vec::<f32>()
            .map_err(error)?
            .into_iter()
            .map(|v| float_json(f64::from(v)))
            .collect(),
        DType::Float64 => tensor
            .to_vec::<f64>()
            .map_err(error)?
            .into_iter()
            .map(float_json)
            .collect(),
        other => return Err(format!("a {other:?} output has no v2 datatype")),
    };
    Ok(Value::Array(values))
}

/// The binary extension's bytes of an output: little-endian, row-major; BYTES elements
/// length-prefixed.
pub fn encode_binary(tensor: &WireTensor) -> Result<Vec<u8>, String> {
    let tensor = match tensor {
        WireTensor::Bytes { elements, .. } => {
            let mut bytes = Vec::new();
            for element in elements {
                let length = u32::try_from(element.len())
                    .map_err(|_| "a BYTES element is longer than 4 GiB".to_string())?;
                bytes.extend_from_slice(&length.to_le_bytes());
                bytes.extend_from_slice(element);
            }
            return Ok(bytes);
        }
        WireTensor::Tensor(tensor) => tensor,
    };
    let error = |e: ferrojit_tensor::TensorError| e.to_string();
    macro_rules! little_endian {
        ($ty:ty) => {
            tensor
                .to_vec::<$ty>()
                .map_err(error)?
                .into_iter()
                .flat_map(|v| v.to_le_bytes())
                .collect()
        };
    }
    Ok(match tensor.dtype() {
        DType::Bool => tensor
            .to_vec::<bool>()
            .map_err(error)?
            .into_iter()
            .map(u8::from)
            .collect(),
        DType::UInt8 => tensor.to_vec::<u8>().map_err(error)?,
        DType::Int8 => little_endian!(i8),
        DType::Int16 => little_endian!(i16),
        DType::Int32 => little_endian!(i32),
        DType::Int64 => little_endian!(i64),
        DType::Float16 => little_endian!(f16),
        DType::BFloat16 => little_endian!(bf16),
        DType::Float32 => little_endian!(f32),
        DType::Float64 => little_endian!(f64),
        other => return Err(format!("a {other:?} output has no v2 datatype")),
    })
}

impl WireTensor {
    /// The tensor's shape.
    pub fn shape(&self) -> Vec<usize> {
        match self {
            WireTensor::Tensor(tensor) => tensor.sizes().to_vec(),
            WireTensor::Bytes { shape, .. } => shape.clone(),
        }
    }

    /// The protocol datatype.
    pub fn datatype(&self) -> Result<Datatype, String> {
        match self {
            WireTensor::Tensor(tensor) => Datatype::of_dtype(tensor.dtype())
                .ok_or_else(|| format!("a {:?} tensor has no v2 datatype", tensor.dtype())),
            WireTensor::Bytes { .. } => Ok(Datatype::Bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_and_flat_json_give_the_same_tensor() {
        let fp32 = Datatype::parse("FP32").unwrap();
        let nested = serde_json::json!([[1.0, 2.0], [3.0, 4.5]]);
        let flat = serde_json::json!([1.0, 2.0, 3.0, 4.5]);
        for data in [nested, flat] {
            let WireTensor::Tensor(tensor) = decode_json(&data, fp32, &[2, 2]).unwrap() else {
                panic!("FP32 decodes to a tensor")
            };
            assert_eq!(tensor.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.5]);
            assert_eq!(tensor.sizes(), &[2, 2]);
        }
    }

    #[test]
    fn bad_json_data_is_refused_with_the_reason() {
        let int32 = Datatype::parse("INT32").unwrap();
        let count = decode_json(&serde_json::json!([1, 2, 3]), int32, &[2, 2]).unwrap_err();
        assert!(
            count.contains("3 elements but shape [2, 2] needs 4"),
            "{count}"
        );
        let range =
            decode_json(&serde_json::json!([1, 5_000_000_000i64]), int32, &[2]).unwrap_err();
        assert!(range.contains("element 1"), "{range}");
        let kind = decode_json(&serde_json::json!(["a"]), int32, &[1]).unwrap_err();
        assert!(kind.contains("not an integer"), "{kind}");
    }

    #[test]
    fn binary_round_trip_for_every_numeric_datatype() {
        for name in [
            "BOOL", "UINT8", "INT8", "INT16", "INT32", "INT64", "FP16", "BF16", "FP32", "FP64",
        ] {
            let datatype = Datatype::parse(name).unwrap();
            let data = serde_json::json!([0, 1, 1, 0, 1, 0]);
            let decoded = decode_json(&data, datatype, &[2, 3]).unwrap();
            let bytes = encode_binary(&decoded).unwrap();
            assert_eq!(bytes.len(), 6 * datatype.element_size().unwrap(), "{name}");
            let again = decode_binary(&bytes, datatype, &[2, 3]).unwrap();
            assert_eq!(
                encode_json(&again).unwrap(),
                encode_json(&decoded).unwrap(),
                "{name}"
            );
        }
        let short = decode_binary(&[0; 7], Datatype::parse("FP32").unwrap(), &[2]).unwrap_err();
        assert!(short.contains("7 bytes"), "{short}");
    }

    #[test]
    fn bytes_elements_are_length_prefixed() {
        let tensor = WireTensor::Bytes {
            shape: vec![2],
            elements: vec![b"ab".to_vec(), b"".to_vec()],
        };
        let bytes = encode_binary(&tensor).unwrap();
        assert_eq!(bytes, vec![2, 0, 0, 0, b'a', b'b', 0, 0, 0, 0]);
        let WireTensor::Bytes { elements, .. } =
            decode_binary(&bytes, Datatype::Bytes, &[2]).unwrap()
        else {
            panic!("BYTES decodes to byte strings")
        };
        assert_eq!(elements, vec![b"ab".to_vec(), Vec::new()]);
        let truncated = decode_binary(&bytes[..5], Datatype::Bytes, &[2]).unwrap_err();
        assert!(truncated.contains("declares 2 bytes"), "{truncated}");
    }
}
