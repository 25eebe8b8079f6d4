//! A bounded load generator for `ferrojit serve`: N clients on keep-alive connections send
//! v2 infer requests (one FP32 input, binary tensor data, constant values) to a loopback
//! server until a request count or a time limit is reached, then print throughput and
//! latency percentiles.
//!
//! ```text
//! cargo run -p ferrojit-serve --example load -- --address 127.0.0.1:8000 --model resnet18 \
//!     --shape 1,3,224,224 --clients 8 --requests 400 --seconds 60
//! ```
//!
//! It refuses any address outside 127.0.0.0/8 and ::1: it is a test of this machine only.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrojit_serve::client::HttpClient;

struct Options {
    address: SocketAddr,
    model: String,
    shape: Vec<usize>,
    clients: usize,
    requests: usize,
    seconds: u64,
}

fn parse() -> Result<Options, String> {
    let mut options = Options {
        address: SocketAddr::from(([127, 0, 0, 1], 8000)),
        model: String::new(),
        shape: vec![1, 3, 224, 224],
        clients: 1,
        requests: 100,
        seconds: 60,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = |what: &str| format!("{flag} {value}: not {what}");
        match flag.as_str() {
            "--address" => options.address = value.parse().map_err(|_| bad("host:port"))?,
            "--model" => options.model = value,
            "--shape" => {
                options.shape = value
                    .split(',')
                    .map(|size| size.parse().map_err(|_| bad("a comma-separated shape")))
                    .collect::<Result<_, _>>()?
            }
            "--clients" => options.clients = value.parse().map_err(|_| bad("a count"))?,
            "--requests" => options.requests = value.parse().map_err(|_| bad("a count"))?,
            "--seconds" => options.seconds = value.parse().map_err(|_| bad("seconds"))?,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if !options.address.ip().is_loopback() {
        return Err(format!("{} is not a loopback address", options.address));
    }
    if options.model.is_empty() {
        return Err("--model NAME is required".to_string());
    }
    // Bounds: this is a bounded test, not a soak.
    options.clients = options.clients.clamp(1, 64);
    options.requests = options.requests.clamp(1, 100_000);
    options.seconds = options.seconds.clamp(1, 600);
    Ok(options)
}

fn percentile(sorted: &[Duration], fraction: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let index = ((sorted.len() as f64 * fraction).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[index].as_secs_f64() * 1000.0
}

fn main() {
    let options = match parse() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("error: {message}");
            std::process::exit(2);
        }
    };
    let count: usize = options.shape.iter().product();
    let header = serde_json::json!({
        "inputs": [{"name": "x", "shape": options.shape, "datatype": "FP32",
                    "parameters": {"binary_data_size": count * 4}}],
        "outputs": [{"name": "output__0", "parameters": {"binary_data": true}}],
    })
    .to_string();
    let mut body = header.clone().into_bytes();
    for index in 0..count {
        body.extend_from_slice(&(((index % 97) as f32 - 48.0) / 48.0).to_le_bytes());
    }
    let body = Arc::new(body);
    let header_length = header.len().to_string();
    let path = format!("/v2/models/{}/infer", options.model);
    let issued = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(options.seconds);
    let started = Instant::now();
    let workers: Vec<_> = (0..options.clients)
        .map(|_| {
            let (body, issued, path, header_length) = (
                body.clone(),
                issued.clone(),
                path.clone(),
                header_length.clone(),
            );
            let (address, limit) = (options.address, options.requests);
            std::thread::spawn(move || {
                let mut latencies = Vec::new();
                let mut failures = 0usize;
                let mut client = HttpClient::connect(address, Duration::from_secs(120)).ok();
                while issued.fetch_add(1, Ordering::SeqCst) < limit && Instant::now() < deadline {
                    let Some(connection) = client.as_mut() else {
                        failures += 1;
                        client = HttpClient::connect(address, Duration::from_secs(120)).ok();
                        continue;
                    };
                    let sent = Instant::now();
                    let headers = [("Inference-Header-Content-Length", header_length.as_str())];
                    match connection.request("POST", &path, &headers, &body) {
                        Ok(response) if response.status == 200 => latencies.push(sent.elapsed()),
                        Ok(_) => failures += 1,
                        Err(_) => {
                            failures += 1;
                            client = HttpClient::connect(address, Duration::from_secs(120)).ok();
                        }
                    }
                }
                (latencies, failures)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    let mut failures = 0;
    for worker in workers {
        let (mine, failed) = worker.join().expect("a client thread panicked");
        latencies.extend(mine);
        failures += failed;
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort();
    println!(
        "model {} shape {:?} clients {}: {} ok, {} failed in {:.2} s; {:.2} requests/s; \
         latency p50 {:.1} ms, p99 {:.1} ms",
        options.model,
        options.shape,
        options.clients,
        latencies.len(),
        failures,
        elapsed,
        latencies.len() as f64 / elapsed,
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.99),
    );
}
