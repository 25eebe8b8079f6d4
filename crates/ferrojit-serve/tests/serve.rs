//! The server end to end on loopback: v2 requests over plain HTTP against examples/mlp.pt,
//! checked against PyTorch's output committed in examples/mlp_expected.json.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use ferrojit_serve::client::{send, HttpResponse};
use ferrojit_serve::{BatchPolicy, ModelSpec, RunningServer, Server, ServerConfig};
use serde_json::{json, Value};

fn examples() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples"))
}

fn read_json(name: &str) -> Value {
    let text = std::fs::read_to_string(examples().join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// `examples/mlp_inputs.json`: x (2x4 float32) and scale; and PyTorch's 2x3 result.
fn mlp_case() -> (Vec<f64>, f64, Vec<f64>) {
    let inputs = read_json("mlp_inputs.json");
    let x: Vec<f64> = inputs["tuple"][0]["tensor"]["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let scale = inputs["tuple"][1]["float"].as_f64().unwrap();
    let expected = read_json("mlp_expected.json");
    assert_eq!(expected["tensor"]["shape"], json!([2, 3]));
    let y = expected["tensor"]["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    (x, scale, y)
}

fn policy(max_batch_size: usize, delay_ms: u64, max_queue: usize) -> BatchPolicy {
    BatchPolicy {
        max_batch_size,
        max_queue_delay: Duration::from_millis(delay_ms),
        max_queue,
    }
}

fn start(configure: impl FnOnce(&mut ServerConfig)) -> RunningServer {
    let mut config = ServerConfig {
        address: SocketAddr::from(([127, 0, 0, 1], 0)),
        models: vec![ModelSpec {
            name: None,
            path: examples().join("mlp.pt"),
        }],
        ..ServerConfig::default()
    };
    configure(&mut config);
    Server::bind(config).unwrap().spawn()
}

fn post_json(address: SocketAddr, path: &str, body: &Value) -> HttpResponse {
    send(
        address,
        "POST",
        path,
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    )
    .unwrap()
}

fn infer_body(rows: &[f64], scale: f64) -> Value {
    json!({
        "id": "r1",
        "inputs": [
            {"name": "x", "shape": [rows.len() / 4, 4], "datatype": "FP32", "data": rows},
            {"name": "scale", "shape": [1], "datatype": "FP64", "data": [scale]},
        ]
    })
}

fn output_values(response: &HttpResponse) -> Vec<f64> {
    assert_eq!(response.status, 200, "{}", response.text());
    let document = response.json().unwrap();
    document["outputs"][0]["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect()
}

fn assert_close(actual: &[f64], expected: &[f64]) {
    assert_eq!(actual.len(), expected.len());
    for (a, e) in actual.iter().zip(expected) {
        assert!(
            (a - e).abs() <= 1e-5 + 1e-5 * e.abs(),
            "{actual:?} vs {expected:?}"
        );
    }
}

#[test]
fn health_metadata_and_json_infer_match_pytorch() {
    let server = start(|_| {});
    let address = server.local_addr();
    for path in [
        "/v2/health/live",
        "/v2/health/ready",
        "/v2",
        "/v2/models/mlp/ready",
    ] {
        let response = send(address, "GET", path, &[], b"").unwrap();
        assert_eq!(response.status, 200, "{path}: {}", response.text());
    }
    let metadata = send(address, "GET", "/v2/models/mlp", &[], b"")
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(metadata["name"], "mlp");
    assert_eq!(metadata["inputs"][0]["name"], "x");
    assert_eq!(metadata["inputs"][1]["name"], "scale");
    assert_eq!(metadata["inputs"][1]["datatype"], "FP64");
    assert_eq!(metadata["outputs"][0]["name"], "output__0");

    let (x, scale, expected) = mlp_case();
    let response = post_json(address, "/v2/models/mlp/infer", &infer_body(&x, scale));
    let document = response.json().unwrap();
    assert_eq!(document["id"], "r1");
    assert_eq!(document["model_name"], "mlp");
    assert_eq!(document["outputs"][0]["shape"], json!([2, 3]));
    assert_eq!(document["outputs"][0]["datatype"], "FP32");
    assert_close(&output_values(&response), &expected);

    // Nested data, inputs named differently (so mapped by position), a 0-d scale.
    let nested: Vec<Vec<f64>> = x.chunks(4).map(<[f64]>::to_vec).collect();
    let body = json!({"inputs": [
        {"name": "INPUT__0", "shape": [2, 4], "datatype": "FP32", "data": nested},
        {"name": "INPUT__1", "shape": [], "datatype": "FP32", "data": scale},
    ]});
    let response = post_json(address, "/v2/models/mlp/versions/1/infer", &body);
    assert_close(&output_values(&response), &expected);
    server.shutdown().unwrap();
}

#[test]
fn binary_tensor_extension_in_and_out() {
    let server = start(|_| {});
    let (x, scale, expected) = mlp_case();
    let header = json!({
        "inputs": [
            {"name": "x", "shape": [2, 4], "datatype": "FP32",
             "parameters": {"binary_data_size": 32}},
            {"name": "scale", "shape": [1], "datatype": "FP64",
             "parameters": {"binary_data_size": 8}},
        ],
        "outputs": [{"name": "output__0", "parameters": {"binary_data": true}}],
    })
    .to_string();
    let mut body = header.clone().into_bytes();
    for value in &x {
        body.extend_from_slice(&(*value as f32).to_le_bytes());
    }
    body.extend_from_slice(&scale.to_le_bytes());
    let length = header.len().to_string();
    let response = send(
        server.local_addr(),
        "POST",
        "/v2/models/mlp/infer",
        &[("Inference-Header-Content-Length", &length)],
        &body,
    )
    .unwrap();
    assert_eq!(response.status, 200, "{}", response.text());
    let json_length: usize = response
        .header("inference-header-content-length")
        .unwrap()
        .parse()
        .unwrap();
    let document = response.json().unwrap();
    assert_eq!(document["outputs"][0]["parameters"]["binary_data_size"], 24);
    let values: Vec<f64> = response.body[json_length..]
        .chunks_exact(4)
        .map(|c| f64::from(f32::from_le_bytes(c.try_into().unwrap())))
        .collect();
    assert_close(&values, &expected);
}

#[test]
fn client_errors_are_typed_with_messages() {
    let server = start(|config| config.max_body_bytes = 4096);
    let address = server.local_addr();
    let (x, scale, _) = mlp_case();

    let unknown = post_json(address, "/v2/models/resnet/infer", &infer_body(&x, scale));
    assert_eq!(unknown.status, 404);
    assert!(unknown.json().unwrap()["error"]
        .as_str()
        .unwrap()
        .contains("no model 'resnet'"));

    let mut bad_type = infer_body(&x, scale);
    bad_type["inputs"][0]["datatype"] = json!("FP128");
    let response = post_json(address, "/v2/models/mlp/infer", &bad_type);
    assert_eq!(response.status, 400);
    let message = response.json().unwrap()["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("FP128") && message.contains("input 'x'"),
        "{message}"
    );

    let mut bad_shape = infer_body(&x, scale);
    bad_shape["inputs"][0]["shape"] = json!([3, 4]);
    let response = post_json(address, "/v2/models/mlp/infer", &bad_shape);
    assert_eq!(response.status, 400);
    let message = response.json().unwrap()["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("8 elements but shape [3, 4] needs 12"),
        "{message}"
    );

    // Well-formed tensors the model cannot take: a run error, still a 400 with a message.
    let wrong_width = json!({"inputs": [
        {"name": "x", "shape": [1, 5], "datatype": "FP32", "data": [1, 2, 3, 4, 5]},
        {"name": "scale", "shape": [1], "datatype": "FP64", "data": [1.0]},
    ]});
    let response = post_json(address, "/v2/models/mlp/infer", &wrong_width);
    assert_eq!(response.status, 400, "{}", response.text());
    assert!(
        response.text().contains("running model 'mlp'"),
        "{}",
        response.text()
    );

    let large = vec![0.5; 4 * 400];
    let response = post_json(address, "/v2/models/mlp/infer", &infer_body(&large, scale));
    assert_eq!(response.status, 413, "{}", response.text());

    let response = send(address, "GET", "/v2/models/mlp/infer", &[], b"").unwrap();
    assert_eq!(response.status, 405);
}

#[test]
fn full_queue_is_refused_with_503_and_a_slow_answer_with_504() {
    // One admitted request waits a long batching delay, so the queue (of one) stays full.
    let server = start(|config| {
        config.policy = policy(8, 3000, 1);
        config.request_timeout = Duration::from_millis(400);
    });
    let address = server.local_addr();
    let (x, scale, _) = mlp_case();
    let first = std::thread::spawn(move || {
        post_json(address, "/v2/models/mlp/infer", &infer_body(&x[..4], scale))
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let metrics = send(address, "GET", "/metrics", &[], b"").unwrap().text();
        if metrics.contains("ferrojit_queue_depth{model=\"mlp\"} 1") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the first request never queued:\n{metrics}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let (x, _, _) = mlp_case();
    let refused = post_json(address, "/v2/models/mlp/infer", &infer_body(&x[..4], scale));
    assert_eq!(refused.status, 503, "{}", refused.text());
    assert!(refused.text().contains("--max-queue"));
    let timed_out = first.join().unwrap();
    assert_eq!(timed_out.status, 504, "{}", timed_out.text());
    let metrics = send(address, "GET", "/metrics", &[], b"").unwrap().text();
    assert!(
        metrics.contains("ferrojit_requests_total{model=\"mlp\",status=\"503\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("ferrojit_requests_total{model=\"mlp\",status=\"504\"} 1"),
        "{metrics}"
    );
}

fn metric_value(metrics: &str, series: &str) -> f64 {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(series))
        .and_then(|rest| rest.trim().parse().ok())
        .unwrap_or_else(|| panic!("no series {series} in\n{metrics}"))
}

#[test]
fn concurrent_requests_batch_and_give_the_unbatched_answers() {
    let server = start(|config| config.policy = policy(8, 300, 64));
    let address = server.local_addr();
    let (x, scale, expected) = mlp_case();
    let clients = 8;
    let barrier = Arc::new(Barrier::new(clients));
    let threads: Vec<_> = (0..clients)
        .map(|client| {
            let barrier = barrier.clone();
            let row = x[(client % 2) * 4..(client % 2) * 4 + 4].to_vec();
            std::thread::spawn(move || {
                barrier.wait();
                post_json(address, "/v2/models/mlp/infer", &infer_body(&row, scale))
            })
        })
        .collect();
    for (client, thread) in threads.into_iter().enumerate() {
        let response = thread.join().unwrap();
        let row = client % 2;
        assert_close(&output_values(&response), &expected[row * 3..row * 3 + 3]);
        assert_eq!(
            response.json().unwrap()["outputs"][0]["shape"],
            json!([1, 3])
        );
    }
    let metrics = send(address, "GET", "/metrics", &[], b"").unwrap().text();
    let runs = metric_value(&metrics, "ferrojit_batch_size_count{model=\"mlp\"}");
    let requests = metric_value(&metrics, "ferrojit_batch_size_sum{model=\"mlp\"}");
    assert_eq!(requests, clients as f64);
    assert!(
        runs < requests,
        "no run served more than one request:\n{metrics}"
    );
}

#[test]
fn metrics_follow_the_text_exposition_format() {
    let server = start(|_| {});
    let address = server.local_addr();
    let (x, scale, _) = mlp_case();
    assert_eq!(
        post_json(address, "/v2/models/mlp/infer", &infer_body(&x, scale)).status,
        200
    );
    let response = send(address, "GET", "/metrics", &[], b"").unwrap();
    assert!(response
        .header("content-type")
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    let text = response.text();
    for name in [
        "ferrojit_requests_total",
        "ferrojit_request_duration_seconds",
        "ferrojit_batch_size",
        "ferrojit_queue_depth",
    ] {
        assert!(text.contains(&format!("# TYPE {name} ")), "{name}:\n{text}");
    }
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        let (series, value) = line.rsplit_once(' ').unwrap();
        assert!(value.parse::<f64>().is_ok(), "value of {line}");
        let name_end = series.find('{').unwrap_or(series.len());
        assert!(
            series[..name_end]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "metric name in {line}"
        );
        assert!(
            series.ends_with('}') || !series.contains('{'),
            "labels in {line}"
        );
    }
    assert_eq!(
        metric_value(
            &text,
            "ferrojit_requests_total{model=\"mlp\",status=\"200\"}"
        ),
        1.0
    );
    assert_eq!(
        metric_value(
            &text,
            "ferrojit_request_duration_seconds_count{model=\"mlp\"}"
        ),
        1.0
    );
}

#[test]
fn shutdown_finishes_requests_in_flight() {
    let server = start(|config| config.policy = policy(8, 600, 8));
    let address = server.local_addr();
    let (x, scale, expected) = mlp_case();
    let in_flight = std::thread::spawn(move || {
        post_json(address, "/v2/models/mlp/infer", &infer_body(&x, scale))
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while !send(address, "GET", "/metrics", &[], b"")
        .unwrap()
        .text()
        .contains("ferrojit_queue_depth{model=\"mlp\"} 1")
    {
        assert!(Instant::now() < deadline, "the request never queued");
        std::thread::sleep(Duration::from_millis(10));
    }
    server.shutdown().unwrap();
    let response = in_flight.join().unwrap();
    assert_close(&output_values(&response), &expected);
    assert!(
        send(address, "GET", "/v2/health/live", &[], b"").is_err(),
        "the server still accepts connections after shutdown"
    );
}

#[test]
fn startup_errors_name_the_problem() {
    let missing = Server::bind(ServerConfig {
        address: SocketAddr::from(([127, 0, 0, 1], 0)),
        models: vec![ModelSpec {
            name: None,
            path: examples().join("missing.pt"),
        }],
        ..ServerConfig::default()
    });
    let message = missing.err().unwrap().to_string();
    assert!(message.contains("missing.pt"), "{message}");
    let twice = Server::bind(ServerConfig {
        address: SocketAddr::from(([127, 0, 0, 1], 0)),
        models: vec![
            ModelSpec {
                name: None,
                path: examples().join("mlp.pt"),
            },
            ModelSpec {
                name: None,
                path: examples().join("mlp.pt2"),
            },
        ],
        ..ServerConfig::default()
    });
    assert!(twice
        .err()
        .unwrap()
        .to_string()
        .contains("two models are called 'mlp'"));
}
