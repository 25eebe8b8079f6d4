//! A model server for ferrojit that speaks the Open Inference Protocol (KServe v2) over
//! HTTP/1.1: the REST protocol KServe, Triton and Seldon clients use.
//!
//! [`Server::bind`] loads the models and binds the port; [`Server::run_until`] serves until a
//! shutdown future completes (the CLI passes [`shutdown_signal`]), then stops accepting,
//! finishes the requests in flight and joins each model's worker. Each model has one worker
//! thread fed by a bounded queue ([`batcher`]); with `max_batch_size > 1` the worker joins
//! requests whose non-batch dimensions match into one run.
//!
//! ```no_run
//! use ferrojit_serve::{ModelSpec, Server, ServerConfig};
//! let config = ServerConfig {
//!     models: vec![ModelSpec { name: None, path: "examples/mlp.pt".into() }],
//!     ..ServerConfig::default()
//! };
//! let server = Server::bind(config).unwrap();
//! println!("listening on {}", server.local_addr());
//! server.run_until(ferrojit_serve::shutdown_signal()).unwrap();
//! ```

pub mod batcher;
pub mod client;
pub mod codec;
pub mod datatype;
mod http;
pub mod metrics;
pub mod model;
pub mod protocol;

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;

pub use batcher::BatchPolicy;
use batcher::ModelQueue;
use metrics::Metrics;
use model::ServedModel;

pub use http::HEADER_LENGTH;

/// A model to serve: its file, and the name in URLs (the file stem when `None`).
#[derive(Debug, Clone)]
pub struct ModelSpec {
    /// The name in `/v2/models/{name}`; defaults to the file stem.
    pub name: Option<String>,
    /// A TorchScript archive or a `.pt2` program.
    pub path: PathBuf,
}

/// Everything the server is told.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Where to listen (port 0 picks a free one).
    pub address: SocketAddr,
    /// The models.
    pub models: Vec<ModelSpec>,
    /// The method an infer request calls.
    pub method: String,
    /// Queueing and batching, the same for every model.
    pub policy: BatchPolicy,
    /// The largest request body accepted (413 above it).
    pub max_body_bytes: usize,
    /// How long a request may wait for its model (504 after it).
    pub request_timeout: Duration,
    /// How long shutdown waits for requests in flight before closing their connections.
    pub shutdown_grace: Duration,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            address: SocketAddr::from(([127, 0, 0, 1], 8000)),
            models: Vec::new(),
            method: "forward".to_string(),
            policy: BatchPolicy {
                max_batch_size: 1,
                max_queue_delay: Duration::from_millis(0),
                max_queue: 64,
            },
            max_body_bytes: 64 * 1024 * 1024,
            request_timeout: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

/// What can stop the server from starting or running.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A model file could not be loaded or lacks the method.
    #[error("loading {path}: {message}")]
    Load {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The configuration is inconsistent.
    #[error("{0}")]
    Config(String),
    /// The address could not be bound or the runtime could not start.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The operating system's error.
        source: std::io::Error,
    },
}

/// One served model: what it is and its queue.
pub(crate) struct Hosted {
    pub(crate) model: Arc<ServedModel>,
    pub(crate) queue: ModelQueue,
}

/// What request handlers share.
pub(crate) struct State {
    pub(crate) models: BTreeMap<String, Hosted>,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) config: ServerConfig,
    pub(crate) ready: AtomicBool,
}

/// A bound server with its models loaded.
pub struct Server {
    runtime: tokio::runtime::Runtime,
    listener: tokio::net::TcpListener,
    state: Arc<State>,
}

fn model_name(spec: &ModelSpec) -> Result<String, ServeError> {
    if let Some(name) = &spec.name {
        return Ok(name.clone());
    }
    spec.path
        .file_stem()
        .and_then(|stem| stem.to_str())
        .map(str::to_string)
        .ok_or_else(|| {
            ServeError::Config(format!(
                "{} has no file stem to name the model by; give --name",
                spec.path.display()
            ))
        })
}

impl Server {
    /// Loads every model, starts their workers and binds `config.address`.
    pub fn bind(config: ServerConfig) -> Result<Server, ServeError> {
        if config.models.is_empty() {
            return Err(ServeError::Config("no model to serve".to_string()));
        }
        let metrics = Arc::new(Metrics::default());
        let mut models = BTreeMap::new();
        for spec in &config.models {
            let name = model_name(spec)?;
            if name.is_empty() || name.contains('/') {
                return Err(ServeError::Config(format!(
                    "model name '{name}' cannot be a URL path segment"
                )));
            }
            if models.contains_key(&name) {
                return Err(ServeError::Config(format!(
                    "two models are called '{name}'; give each a --name"
                )));
            }
            let model = Arc::new(ServedModel::load(&name, &spec.path, &config.method)?);
            let queue = ModelQueue::start(model.clone(), config.policy, metrics.clone());
            metrics.set_queue_depth(&name, 0);
            models.insert(name, Hosted { model, queue });
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|source| ServeError::Io {
                context: "starting the async runtime".to_string(),
                source,
            })?;
        let address = config.address;
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(address))
            .map_err(|source| ServeError::Io {
                context: format!("binding {address}"),
                source,
            })?;
        Ok(Server {
            runtime,
            listener,
            state: Arc::new(State {
                models,
                metrics,
                config,
                ready: AtomicBool::new(true),
            }),
        })
    }

    /// The address it listens on (with the port chosen when the config said 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// The names of the models served, sorted.
    pub fn model_names(&self) -> Vec<String> {
        self.state.models.keys().cloned().collect()
    }

    /// Serves until `shutdown` completes; then stops accepting, lets requests in flight
    /// finish (up to the configured grace period), and stops every model's worker.
    pub fn run_until(self, shutdown: impl Future<Output = ()>) -> Result<(), ServeError> {
        let Server {
            runtime,
            listener,
            state,
        } = self;
        let serving = state.clone();
        runtime.block_on(async move {
            let graceful = GracefulShutdown::new();
            tokio::pin!(shutdown);
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else {
                            // Out of file descriptors and the like: back off, keep serving.
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            continue;
                        };
                        let _ = stream.set_nodelay(true);
                        let state = serving.clone();
                        let service = service_fn(move |request| {
                            let state = state.clone();
                            async move {
                                Ok::<_, std::convert::Infallible>(http::handle(state, request).await)
                            }
                        });
                        let connection = http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service);
                        let connection = graceful.watch(connection);
                        tokio::spawn(async move {
                            let _ = connection.await;
                        });
                    }
                    () = &mut shutdown => break,
                }
            }
            serving.ready.store(false, Ordering::SeqCst);
            drop(listener);
            let grace = serving.config.shutdown_grace;
            tokio::select! {
                () = graceful.shutdown() => {}
                () = tokio::time::sleep(grace) => {}
            }
        });
        for hosted in state.models.values() {
            hosted.queue.close();
        }
        runtime.shutdown_timeout(Duration::from_secs(1));
        Ok(())
    }

    /// Serves on a background thread until [`RunningServer::shutdown`]: for tests and
    /// programs that embed the server.
    pub fn spawn(self) -> RunningServer {
        let address = self.local_addr();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("ferrojit-serve".to_string())
            .spawn(move || {
                self.run_until(async move {
                    let _ = stopped.await;
                })
            })
            .expect("the OS refused to start the server thread");
        RunningServer {
            address,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

/// A server running on its own thread.
pub struct RunningServer {
    address: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), ServeError>>>,
}

impl RunningServer {
    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// Starts a graceful shutdown and waits for it to end.
    pub fn shutdown(mut self) -> Result<(), ServeError> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> Result<(), ServeError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take() {
            Some(thread) => thread
                .join()
                .map_err(|_| ServeError::Config("the server thread panicked".to_string()))?,
            None => Ok(()),
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        let _ = self.stop_and_join();
    }
}

/// Completes on ctrl-c, or on SIGTERM (what Kubernetes sends before it stops a pod).
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
