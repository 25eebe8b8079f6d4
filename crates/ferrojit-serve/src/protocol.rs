//! The v2 inference request and response bodies: JSON, optionally followed by binary tensor
//! data (the binary tensor extension, `Inference-Header-Content-Length`).

use serde_json::{json, Map, Value};

use crate::codec::{decode_binary, decode_json, encode_binary, encode_json, WireTensor};
use crate::datatype::{Datatype, SUPPORTED_NAMES};

/// One named input of a request.
#[derive(Debug, Clone)]
pub struct NamedInput {
    /// The name the client gave.
    pub name: String,
    /// Its data.
    pub tensor: WireTensor,
}

/// An output the client asked for, and whether it wants it as binary data.
#[derive(Debug, Clone)]
pub struct RequestedOutput {
    /// The output's name.
    pub name: String,
    /// `parameters.binary_data`, when given.
    pub binary: Option<bool>,
}

/// A parsed inference request.
#[derive(Debug, Clone)]
pub struct InferRequest {
    /// The request's `id`, echoed in the response.
    pub id: Option<String>,
    /// The inputs, in the order the client sent them.
    pub inputs: Vec<NamedInput>,
    /// The outputs asked for; empty means all.
    pub outputs: Vec<RequestedOutput>,
    /// `parameters.binary_data_output`: binary data for outputs that do not say.
    pub binary_output_default: bool,
}

fn field<'a>(object: &'a Map<String, Value>, key: &str, at: &str) -> Result<&'a Value, String> {
    object
        .get(key)
        .ok_or_else(|| format!("{at} has no \"{key}\""))
}

fn string_field(object: &Map<String, Value>, key: &str, at: &str) -> Result<String, String> {
    match field(object, key, at)? {
        Value::String(text) => Ok(text.clone()),
        other => Err(format!("{at}.{key} is {other}, not a string")),
    }
}

fn bool_parameter(object: &Map<String, Value>, key: &str) -> Option<bool> {
    object
        .get("parameters")
        .and_then(Value::as_object)
        .and_then(|parameters| parameters.get(key))
        .and_then(Value::as_bool)
}

fn parse_shape(value: &Value, at: &str) -> Result<Vec<usize>, String> {
    let Value::Array(items) = value else {
        return Err(format!("{at}.shape is {value}, not a list of sizes"));
    };
    items
        .iter()
        .map(|item| {
            item.as_u64()
                .and_then(|size| usize::try_from(size).ok())
                .ok_or_else(|| format!("{at}.shape has {item}, not a non-negative size"))
        })
        .collect()
}

/// Parses a request body. `header_length` is the `Inference-Header-Content-Length` header:
/// the JSON part's length, with binary input data after it.
pub fn parse_infer_request(
    body: &[u8],
    header_length: Option<usize>,
) -> Result<InferRequest, String> {
    let (header, mut binary) = match header_length {
        Some(length) if length > body.len() => {
            return Err(format!(
                "Inference-Header-Content-Length is {length} but the body has {} bytes",
                body.len()
            ))
        }
        Some(length) => body.split_at(length),
        None => (body, &[][..]),
    };
    let document: Value = serde_json::from_slice(header)
        .map_err(|error| format!("the request body is not JSON: {error}"))?;
    let Value::Object(request) = document else {
        return Err("the request body is not a JSON object".to_string());
    };
    let id = match request.get("id") {
        None => None,
        Some(Value::String(id)) => Some(id.clone()),
        Some(other) => return Err(format!("id is {other}, not a string")),
    };
    let Value::Array(raw_inputs) = field(&request, "inputs", "the request")? else {
        return Err("inputs is not a list".to_string());
    };
    let mut inputs = Vec::with_capacity(raw_inputs.len());
    for (index, raw) in raw_inputs.iter().enumerate() {
        let Value::Object(input) = raw else {
            return Err(format!("inputs[{index}] is not an object"));
        };
        let at = format!("inputs[{index}]");
        let name = string_field(input, "name", &at)?;
        let at = format!("input '{name}'");
        let datatype_name = string_field(input, "datatype", &at)?;
        let datatype = Datatype::parse(&datatype_name).ok_or_else(|| {
            format!("{at} has datatype '{datatype_name}'; supported: {SUPPORTED_NAMES}")
        })?;
        let shape = parse_shape(field(input, "shape", &at)?, &at)?;
        let binary_size = input
            .get("parameters")
            .and_then(Value::as_object)
            .and_then(|parameters| parameters.get("binary_data_size"));
        let tensor = match (binary_size, input.get("data")) {
            (Some(size), _) => {
                let size = size
                    .as_u64()
                    .and_then(|size| usize::try_from(size).ok())
                    .ok_or_else(|| format!("{at}: binary_data_size {size} is not a size"))?;
                if size > binary.len() {
                    return Err(format!(
                        "{at}: binary_data_size is {size} but {} bytes of binary data remain",
                        binary.len()
                    ));
                }
                let (bytes, rest) = binary.split_at(size);
                binary = rest;
                decode_binary(bytes, datatype, &shape)
                    .map_err(|message| format!("{at}: {message}"))?
            }
            (None, Some(data)) => {
                decode_json(data, datatype, &shape).map_err(|message| format!("{at}: {message}"))?
            }
            (None, None) => return Err(format!("{at} has neither data nor binary_data_size")),
        };
        inputs.push(NamedInput { name, tensor });
    }
    if !binary.is_empty() {
        return Err(format!(
            "{} bytes of binary data follow the JSON header that no input claims",
            binary.len()
        ));
    }
    let mut outputs = Vec::new();
    if let Some(raw_outputs) = request.get("outputs") {
        let Value::Array(raw_outputs) = raw_outputs else {
            return Err("outputs is not a list".to_string());
        };
        for (index, raw) in raw_outputs.iter().enumerate() {
            let Value::Object(output) = raw else {
                return Err(format!("outputs[{index}] is not an object"));
            };
            outputs.push(RequestedOutput {
                name: string_field(output, "name", &format!("outputs[{index}]"))?,
                binary: bool_parameter(output, "binary_data"),
            });
        }
    }
    Ok(InferRequest {
        id,
        inputs,
        outputs,
        binary_output_default: bool_parameter(&request, "binary_data_output").unwrap_or(false),
    })
}

/// A response body, and the JSON part's length when binary data follows it.
#[derive(Debug)]
pub struct EncodedResponse {
    /// JSON, then binary output data when `header_length` is set.
    pub body: Vec<u8>,
    /// The value of the `Inference-Header-Content-Length` response header.
    pub header_length: Option<usize>,
}

/// Builds the response for `outputs` (named in model order), keeping those `request` asks for.
pub fn encode_infer_response(
    model_name: &str,
    request: &InferRequest,
    outputs: Vec<(String, WireTensor)>,
) -> Result<EncodedResponse, String> {
    let selected: Vec<(&str, &WireTensor, bool)> = if request.outputs.is_empty() {
        outputs
            .iter()
            .map(|(name, tensor)| (name.as_str(), tensor, request.binary_output_default))
            .collect()
    } else {
        let mut selected = Vec::new();
        for wanted in &request.outputs {
            let (name, tensor) = outputs
                .iter()
                .find(|(name, _)| *name == wanted.name)
                .ok_or_else(|| {
                    let names: Vec<&str> = outputs.iter().map(|(name, _)| name.as_str()).collect();
                    format!(
                        "the model has no output '{}' (its outputs: {})",
                        wanted.name,
                        names.join(", ")
                    )
                })?;
            selected.push((
                name.as_str(),
                tensor,
                wanted.binary.unwrap_or(request.binary_output_default),
            ));
        }
        selected
    };
    let mut binary = Vec::new();
    let mut entries = Vec::new();
    for (name, tensor, as_binary) in selected {
        let mut entry = json!({
            "name": name,
            "datatype": tensor.datatype()?.name(),
            "shape": tensor.shape(),
        });
        if as_binary {
            let bytes = encode_binary(tensor)?;
            entry["parameters"] = json!({ "binary_data_size": bytes.len() });
            binary.extend_from_slice(&bytes);
        } else {
            entry["data"] = encode_json(tensor)?;
        }
        entries.push(entry);
    }
    let mut document =
        json!({ "model_name": model_name, "model_version": "1", "outputs": entries });
    if let Some(id) = &request.id {
        document["id"] = Value::String(id.clone());
    }
    let mut body = serde_json::to_vec(&document).map_err(|error| error.to_string())?;
    if binary.is_empty() && !request.outputs.iter().any(|o| o.binary == Some(true)) {
        return Ok(EncodedResponse {
            body,
            header_length: None,
        });
    }
    let header_length = body.len();
    body.extend_from_slice(&binary);
    Ok(EncodedResponse {
        body,
        header_length: Some(header_length),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_inputs_follow_the_json_header_in_input_order() {
        let header = br#"{"inputs":[
            {"name":"a","datatype":"INT32","shape":[2],"parameters":{"binary_data_size":8}},
            {"name":"b","datatype":"FP64","shape":[1],"data":[2.5]}],
            "outputs":[{"name":"output__0","parameters":{"binary_data":true}}]}"#;
        let mut body = header.to_vec();
        body.extend_from_slice(&7i32.to_le_bytes());
        body.extend_from_slice(&(-1i32).to_le_bytes());
        let request = parse_infer_request(&body, Some(header.len())).unwrap();
        let WireTensor::Tensor(a) = &request.inputs[0].tensor else {
            panic!("INT32 is a tensor")
        };
        assert_eq!(a.to_vec::<i32>().unwrap(), vec![7, -1]);
        assert_eq!(request.outputs[0].binary, Some(true));

        let extra = parse_infer_request(&[body.clone(), vec![0]].concat(), Some(header.len()));
        assert!(extra.unwrap_err().contains("1 bytes of binary data"));
        let long = parse_infer_request(&body, Some(body.len() + 1)).unwrap_err();
        assert!(long.contains("Inference-Header-Content-Length"), "{long}");
    }

    #[test]
    fn bad_datatype_names_the_input_and_the_supported_types() {
        let body = br#"{"inputs":[{"name":"x","datatype":"FP128","shape":[1],"data":[1]}]}"#;
        let message = parse_infer_request(body, None).unwrap_err();
        assert!(
            message.contains("input 'x'") && message.contains("FP128"),
            "{message}"
        );
        assert!(message.contains("FP32"), "{message}");
    }

    #[test]
    fn a_binary_output_sets_the_header_length_and_its_size() {
        let request = InferRequest {
            id: Some("7".into()),
            inputs: vec![],
            outputs: vec![],
            binary_output_default: true,
        };
        let tensor = ferrojit::Tensor::from_vec(vec![1.0_f32, 2.0], &[2]).unwrap();
        let response = encode_infer_response(
            "m",
            &request,
            vec![("output__0".into(), WireTensor::Tensor(tensor))],
        )
        .unwrap();
        let length = response.header_length.unwrap();
        let header: Value = serde_json::from_slice(&response.body[..length]).unwrap();
        assert_eq!(header["outputs"][0]["parameters"]["binary_data_size"], 8);
        assert_eq!(header["id"], "7");
        assert_eq!(&response.body[length..length + 4], &1.0_f32.to_le_bytes());
    }
}
