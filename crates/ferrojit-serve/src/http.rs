//! The REST routes of the v2 protocol (health, metadata, infer) and `/metrics`, over hyper.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};

use crate::batcher::{JobError, SubmitError};
use crate::model::outputs_of;
use crate::protocol::{encode_infer_response, parse_infer_request};
use crate::State;

/// The binary tensor extension's header: the JSON part's length.
pub const HEADER_LENGTH: &str = "inference-header-content-length";

type HttpResponse = Response<Full<Bytes>>;

fn respond(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> HttpResponse {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

fn json_response(status: StatusCode, document: &Value) -> HttpResponse {
    respond(
        status,
        "application/json",
        document.to_string().into_bytes(),
    )
}

/// The protocol's error body, `{"error": "..."}`.
fn error(status: StatusCode, message: impl Into<String>) -> HttpResponse {
    json_response(status, &json!({ "error": message.into() }))
}

/// Answers one request, and counts it.
pub(crate) async fn handle(state: Arc<State>, request: Request<Incoming>) -> HttpResponse {
    let started = Instant::now();
    let path = request.uri().path().to_string();
    let (model, response) = route(&state, request, &path).await;
    let latency = path.ends_with("/infer").then(|| started.elapsed());
    state
        .metrics
        .record_request(&model, response.status().as_u16(), latency);
    response
}

/// `models/{name}[/versions/{version}]{rest}` split into the name and the rest.
fn model_path(rest: &str) -> (&str, &str) {
    let (name, tail) = rest.split_once('/').map_or((rest, ""), |(n, t)| (n, t));
    let tail = match tail.strip_prefix("versions/") {
        Some(versioned) => versioned.split_once('/').map_or("", |(_, after)| after),
        None => tail,
    };
    (name, tail)
}

async fn route(
    state: &Arc<State>,
    request: Request<Incoming>,
    path: &str,
) -> (String, HttpResponse) {
    let method = request.method().clone();
    let path = path.trim_end_matches('/');
    let get = method == Method::GET || method == Method::HEAD;
    let not_allowed = || {
        error(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{method} is not allowed on {path}"),
        )
    };
    let plain = |response| (String::new(), response);
    match path {
        "/v2/health/live" if get => plain(json_response(StatusCode::OK, &json!({"live": true}))),
        "/v2/health/ready" if get => {
            let ready = state.ready.load(Ordering::SeqCst);
            let status = if ready {
                StatusCode::OK
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
            plain(json_response(status, &json!({ "ready": ready })))
        }
        "/v2" if get => plain(json_response(
            StatusCode::OK,
            &json!({
                "name": "ferrojit",
                "version": env!("CARGO_PKG_VERSION"),
                "extensions": ["binary_tensor_data", "model_repository_index"],
            }),
        )),
        "/v2/repository/index" if method == Method::POST => {
            let models: Vec<Value> = state
                .models
                .keys()
                .map(|name| json!({"name": name, "version": "1", "state": "READY"}))
                .collect();
            plain(json_response(StatusCode::OK, &Value::Array(models)))
        }
        "/metrics" if get => plain(respond(
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            state.metrics.render().into_bytes(),
        )),
        "/v2/health/live" | "/v2/health/ready" | "/v2" | "/metrics" => plain(not_allowed()),
        _ => {
            let Some(rest) = path.strip_prefix("/v2/models/") else {
                return plain(error(StatusCode::NOT_FOUND, format!("no route {path}")));
            };
            let (name, tail) = model_path(rest);
            let Some(served) = state.models.get(name) else {
                let names: Vec<&str> = state.models.keys().map(String::as_str).collect();
                return plain(error(
                    StatusCode::NOT_FOUND,
                    format!("no model '{name}' (served: {})", names.join(", ")),
                ));
            };
            let name = name.to_string();
            let response = match tail {
                "" if get => json_response(StatusCode::OK, &served.model.metadata()),
                "ready" if get => {
                    json_response(StatusCode::OK, &json!({"name": name, "ready": true}))
                }
                "infer" if method == Method::POST => infer(state, &name, request).await,
                "" | "ready" | "infer" => not_allowed(),
                _ => error(StatusCode::NOT_FOUND, format!("no route {path}")),
            };
            (name, response)
        }
    }
}

async fn infer(state: &Arc<State>, name: &str, request: Request<Incoming>) -> HttpResponse {
    let served = &state.models[name];
    let limit = state.config.max_body_bytes;
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the request body ({} bytes) is over the limit of {limit} bytes",
                declared.unwrap_or(0)
            ),
        );
    }
    let header_length = match request.headers().get(HEADER_LENGTH) {
        None => None,
        Some(value) => match value.to_str().ok().and_then(|v| v.parse::<usize>().ok()) {
            Some(length) => Some(length),
            None => {
                return error(
                    StatusCode::BAD_REQUEST,
                    "Inference-Header-Content-Length is not a number",
                )
            }
        },
    };
    let body = match Limited::new(request.into_body(), limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(failure) if failure.downcast_ref::<LengthLimitError>().is_some() => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the request body is over the limit of {limit} bytes"),
            )
        }
        Err(failure) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("reading the body failed: {failure}"),
            )
        }
    };
    let mut parsed = match parse_infer_request(&body, header_length) {
        Ok(parsed) => parsed,
        Err(message) => return error(StatusCode::BAD_REQUEST, message),
    };
    let inputs = std::mem::take(&mut parsed.inputs);
    let arguments = match served.model.arguments_from(inputs) {
        Ok(arguments) => arguments,
        Err(message) => return error(StatusCode::BAD_REQUEST, message),
    };
    let receiver = match served.queue.submit(arguments) {
        Ok(receiver) => receiver,
        Err(SubmitError::Full) => {
            state.metrics.set_queue_depth(name, served.queue.depth());
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "model '{name}' has {} requests waiting, its limit (--max-queue); try again later",
                    served.queue.depth()
                ),
            );
        }
        Err(SubmitError::Closed) => {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                "the server is shutting down",
            )
        }
    };
    state.metrics.set_queue_depth(name, served.queue.depth());
    let timeout = state.config.request_timeout;
    let result = match tokio::time::timeout(timeout, receiver).await {
        Err(_) => {
            return error(
                StatusCode::GATEWAY_TIMEOUT,
                format!(
                    "model '{name}' gave no answer within {} ms",
                    timeout.as_millis()
                ),
            )
        }
        Ok(Err(_)) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the model's worker stopped",
            )
        }
        Ok(Ok(result)) => result,
    };
    let value = match result {
        Ok(value) => value,
        Err(JobError::Run(message)) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("running model '{name}': {message}"),
            )
        }
        Err(JobError::Internal(message)) => {
            return error(StatusCode::INTERNAL_SERVER_ERROR, message)
        }
    };
    let encoded =
        outputs_of(&value).and_then(|outputs| encode_infer_response(name, &parsed, outputs));
    match encoded {
        Ok(encoded) => match encoded.header_length {
            None => respond(StatusCode::OK, "application/json", encoded.body),
            Some(length) => {
                let mut response =
                    respond(StatusCode::OK, "application/octet-stream", encoded.body);
                response
                    .headers_mut()
                    .insert(HEADER_LENGTH, HeaderValue::from(length));
                response
            }
        },
        Err(message) => error(StatusCode::BAD_REQUEST, message),
    }
}

#[cfg(test)]
mod tests {
    use super::model_path;

    #[test]
    fn versioned_model_paths_drop_the_version() {
        assert_eq!(model_path("mlp"), ("mlp", ""));
        assert_eq!(model_path("mlp/infer"), ("mlp", "infer"));
        assert_eq!(model_path("mlp/versions/1/infer"), ("mlp", "infer"));
        assert_eq!(model_path("mlp/versions/1"), ("mlp", ""));
    }
}
