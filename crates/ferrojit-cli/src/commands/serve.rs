//! `ferrojit serve`: hosts models behind the Open Inference Protocol (KServe v2) until
//! SIGTERM or ctrl-c.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use ferrojit_serve::{BatchPolicy, ModelSpec, Server, ServerConfig};

/// The command line's choices.
pub struct ServeOptions<'a> {
    pub models: &'a [PathBuf],
    pub names: &'a [String],
    pub address: SocketAddr,
    pub method: &'a str,
    pub max_batch_size: usize,
    pub max_queue_delay_ms: u64,
    pub max_queue: usize,
    pub max_body_bytes: usize,
    pub timeout_ms: u64,
}

pub fn serve(options: &ServeOptions) -> Result<(), String> {
    if options.names.len() > options.models.len() {
        return Err(format!(
            "{} --name given for {} models",
            options.names.len(),
            options.models.len()
        ));
    }
    if options.max_batch_size == 0 {
        return Err("--max-batch-size must be at least 1".to_string());
    }
    if options.max_queue == 0 {
        return Err("--max-queue must be at least 1".to_string());
    }
    let models = options
        .models
        .iter()
        .enumerate()
        .map(|(index, path)| ModelSpec {
            name: options.names.get(index).cloned(),
            path: path.clone(),
        })
        .collect();
    let config = ServerConfig {
        address: options.address,
        models,
        method: options.method.to_string(),
        policy: BatchPolicy {
            max_batch_size: options.max_batch_size,
            max_queue_delay: Duration::from_millis(options.max_queue_delay_ms),
            max_queue: options.max_queue,
        },
        max_body_bytes: options.max_body_bytes,
        request_timeout: Duration::from_millis(options.timeout_ms),
        ..ServerConfig::default()
    };
    let server = Server::bind(config).map_err(|error| error.to_string())?;
    eprintln!(
        "serving {} on http://{} (KServe v2: /v2/models/NAME/infer; metrics: /metrics)",
        server.model_names().join(", "),
        server.local_addr()
    );
    server
        .run_until(ferrojit_serve::shutdown_signal())
        .map_err(|error| error.to_string())?;
    eprintln!("stopped");
    Ok(())
}
