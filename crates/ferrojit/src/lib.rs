//! ferrojit: load PyTorch models and run them from Rust, with neither Python nor libtorch.
//!
//! One entry point takes both of PyTorch's deployable formats: a TorchScript archive
//! (`torch.jit.save`, usually `.pt`) and a torch.export program (`torch.export.save`, usually
//! `.pt2`). [`load`] looks at the file, not at its name, and gives a [`Model`]; an
//! application calls [`Model::run`] (or [`Model::run_method`]) and need not care which format
//! it was handed.
//!
//! ```
//! # fn main() -> Result<(), ferrojit::Error> {
//! # let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
//! // The same model, scripted (`mlp.pt`) and exported (`mlp.pt2`).
//! let x = ferrojit::Tensor::from_vec(vec![0.5_f32; 8], &[2, 4])?;
//! let mut results = Vec::new();
//! for file in ["mlp.pt", "mlp.pt2"] {
//!     let model = ferrojit::load(format!("{examples}/{file}"))?;
//!     let output = model.run(vec![x.clone().into(), 0.5.into()])?;
//!     results.push(output.to_tensor()?.to_vec::<f32>()?);
//! }
//! assert_eq!(results[0], results[1]);
//! # Ok(())
//! # }
//! ```
//!
//! # Inputs and outputs
//! Arguments and results are [`IValue`]s, TorchScript's value type: tensors, numbers,
//! strings, lists, tuples, dicts and `None`. A [`Tensor`] converts into an `IValue` with
//! `into()`, as do `f64`, `i64`, `bool` and `String`; [`IValue::to_tensor`] and its
//! siblings read results back. [`load_values`] and [`save_values`] read and write
//! `torch.save` files, so arguments can come from Python and results go back to it.
//!
//! # Threads
//! Kernels split large tensors across a worker pool. [`set_num_threads`] sizes it, and must
//! be called before the first model runs; [`num_threads`] reads it.
//!
//! # Untrusted files
//! Model files are programs: load only files you trust to run. Every length, offset and
//! stride in a file is checked, and nesting is bounded, so a malformed file gives an
//! [`Error`], never a panic. [`LoadOptions`] adds bounds of its own: a step budget for each
//! call of interpreted code and a cap on the memory a pickle's values may take.

#![deny(missing_docs)]

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ferrojit_archive::zip_archive::{ArchiveLimits, ArchiveReader};
use ferrojit_export::{ExportedModule, Pt2Archive};
use ferrojit_runtime::interpreter::RunOptions;
use ferrojit_serialize::import::{load_module_from_archive, LoadedModule};

pub mod tracing;
pub use tracing::{trace, trace_module};

pub use ferrojit_export::DEFAULT_MODEL_NAME;
pub use ferrojit_runtime::ivalue::IValue;
pub use ferrojit_runtime::{num_threads, Module};
pub use ferrojit_tensor::{DType, Tensor};

/// Everything that can go wrong while loading or running a model. Each variant names the
/// file or method involved; its text is one line, fit for an `error:` message.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be opened or is not a zip archive at all.
    #[error("cannot read {path}: {message}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The file is a zip archive, but neither a TorchScript archive nor a `.pt2` program.
    #[error("{path} is neither a TorchScript archive nor a torch.export .pt2 program: {message}")]
    UnknownFormat {
        /// The file.
        path: PathBuf,
        /// What the file holds instead, as far as ferrojit can tell.
        message: String,
    },
    /// A TorchScript archive that could not be loaded.
    #[error("cannot load TorchScript archive {path}: {source}")]
    TorchScript {
        /// The file.
        path: PathBuf,
        /// The loader's error.
        source: Box<ferrojit_serialize::load_error::LoadError>,
    },
    /// A `.pt2` program that could not be loaded.
    #[error("cannot load .pt2 program {path}: {source}")]
    Exported {
        /// The file.
        path: PathBuf,
        /// The reader's error.
        source: Box<ferrojit_export::ExportError>,
    },
    /// The model has no method of that name.
    #[error("the model has no method '{method}'; its methods are: {available}")]
    NoSuchMethod {
        /// The method asked for.
        method: String,
        /// The methods it has, comma-separated.
        available: String,
    },
    /// A method of a TorchScript model failed while running (an exception it raised, a
    /// shape or dtype error in an operator, an exceeded step budget, ...).
    #[error("{method}() failed: {source}")]
    Run {
        /// The method that failed.
        method: String,
        /// The interpreter's error.
        source: Box<ferrojit_runtime::RuntimeError>,
    },
    /// A `.pt2` program failed while running (an input that breaks the program's input
    /// constraints, an operator error, ...).
    #[error("forward() failed: {0}")]
    RunExported(Box<ferrojit_export::ExportError>),
    /// A tensor could not be made or read (a length that does not match the shape, a dtype
    /// that does not match the element type, ...).
    #[error(transparent)]
    Tensor(#[from] Box<ferrojit_tensor::TensorError>),
    /// A value could not be converted (for example [`IValue::to_tensor`] on a list).
    #[error(transparent)]
    Value(#[from] Box<ferrojit_runtime::RuntimeError>),
    /// [`set_num_threads`] was given 0, or was called after the worker pool started.
    #[error("cannot set the thread count to {0}: it must be at least 1, and set before the first model runs")]
    Threads(usize),
}

/// A `Result` whose error is [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Which of PyTorch's formats a [`Model`] was loaded from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelFormat {
    /// A TorchScript archive written by `torch.jit.save` (`.pt`).
    TorchScript,
    /// A torch.export program written by `torch.export.save` (`.pt2`).
    ExportedProgram,
}

/// Bounds and choices for [`load_with_options`]. The defaults suit trusted files.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// The most interpreter steps one call of TorchScript code may take (while loading, for
    /// `__setstate__`, and in every later call of the model); past it the call fails.
    /// `None`: no bound.
    pub max_steps: Option<u64>,
    /// A cap on the memory the values of one pickle may take, replacing the default cap.
    pub max_pickle_memory: Option<u64>,
    /// Which program of a `.pt2` archive to load (archives may hold several); the default
    /// is [`DEFAULT_MODEL_NAME`], `model`, as `torch.export.load` reads.
    pub program: String,
    /// Run TorchScript through the optimizing graph executor (the default): each method
    /// gets a plan per input shape, with PyTorch's passes run on it. `false` runs every
    /// graph as written (`ferrojit run --no-optimize`). A `.pt2` program always runs as
    /// exported.
    pub optimize: bool,
}

impl Default for LoadOptions {
    fn default() -> LoadOptions {
        LoadOptions {
            max_steps: None,
            max_pickle_memory: None,
            program: DEFAULT_MODEL_NAME.to_string(),
            optimize: true,
        }
    }
}

/// A loaded model, from either format. It can be shared between threads; calls of a
/// `.pt2` program take turns, because a program may update its buffers.
pub struct Model {
    path: PathBuf,
    inner: Inner,
}

enum Inner {
    TorchScript {
        loaded: LoadedModule,
        options: RunOptions,
    },
    Exported {
        module: Mutex<Box<ExportedModule>>,
        sample_inputs: Option<Vec<IValue>>,
    },
}

/// Loads the model at `path`, a TorchScript archive or a `.pt2` program, with the default
/// [`LoadOptions`].
///
/// ```
/// # let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
/// let model = ferrojit::load(format!("{examples}/mlp.pt2")).unwrap();
/// assert_eq!(model.format(), ferrojit::ModelFormat::ExportedProgram);
/// assert_eq!(model.method_names(), vec!["forward".to_string()]);
/// ```
pub fn load(path: impl AsRef<Path>) -> Result<Model> {
    load_with_options(path, &LoadOptions::default())
}

/// Loads the model at `path` with `options`: the format is read from the file's records, not
/// its name.
///
/// ```
/// # let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
/// let options = ferrojit::LoadOptions { max_steps: Some(1_000_000), ..Default::default() };
/// let model = ferrojit::load_with_options(format!("{examples}/mlp.pt"), &options).unwrap();
/// assert_eq!(model.format(), ferrojit::ModelFormat::TorchScript);
/// ```
pub fn load_with_options(path: impl AsRef<Path>, options: &LoadOptions) -> Result<Model> {
    let path = path.as_ref().to_path_buf();
    let read_error = |message: String| Error::Read {
        path: path.clone(),
        message,
    };
    let limits = ArchiveLimits {
        max_pickle_value_bytes: options.max_pickle_memory,
        ..ArchiveLimits::default()
    };
    if ferrojit_export::looks_like_pt2(&path) {
        let exported = |source| Error::Exported {
            path: path.clone(),
            source: Box::new(source),
        };
        let archive = Pt2Archive::open(&path).map_err(exported)?;
        let sample_inputs = archive
            .sample_inputs(&options.program)
            .ok()
            .flatten()
            .filter(|inputs| inputs.kwargs.is_empty())
            .map(|inputs| inputs.args);
        let loaded = archive.load(&options.program).map_err(exported)?;
        let module = ExportedModule::new(loaded).map_err(exported)?;
        return Ok(Model {
            path,
            inner: Inner::Exported {
                module: Mutex::new(Box::new(module)),
                sample_inputs,
            },
        });
    }
    let archive =
        ArchiveReader::open_with_limits(&path, limits).map_err(|e| read_error(e.to_string()))?;
    if !archive.has_record("data.pkl") && !archive.has_record("version") {
        return Err(Error::UnknownFormat {
            path: path.clone(),
            message: "the archive has no data.pkl, no version record and no .pt2 program"
                .to_string(),
        });
    }
    let run_options = RunOptions {
        max_steps: options.max_steps,
        ..RunOptions::default()
    };
    let loaded =
        load_module_from_archive(&archive, &run_options).map_err(|source| Error::TorchScript {
            path: path.clone(),
            source: Box::new(source),
        })?;
    // Loading runs each `__setstate__` once, unoptimized; the model's calls are optimized.
    let run_options = RunOptions {
        optimizer: options
            .optimize
            .then(ferrojit_opt::graph_executor::SpecializingOptimizer::shared),
        fusion_backend: options.optimize.then(ferrojit_codegen::shared_backend),
        ..run_options
    };
    Ok(Model {
        path,
        inner: Inner::TorchScript {
            loaded,
            options: run_options,
        },
    })
}

impl Model {
    /// The file the model was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The format the file was in.
    pub fn format(&self) -> ModelFormat {
        match self.inner {
            Inner::TorchScript { .. } => ModelFormat::TorchScript,
            Inner::Exported { .. } => ModelFormat::ExportedProgram,
        }
    }

    /// The methods [`Model::run_method`] can call, sorted. A `.pt2` program has one,
    /// `forward`.
    pub fn method_names(&self) -> Vec<String> {
        match &self.inner {
            Inner::TorchScript { loaded, .. } => {
                let mut names = loaded.module.object().class().method_names();
                names.sort();
                names
            }
            Inner::Exported { .. } => vec!["forward".to_string()],
        }
    }

    /// Runs `forward` on positional arguments: what calling the module does in Python.
    /// For a `.pt2` program the arguments are checked against its input constraints first,
    /// and a buffer the program mutates keeps its new value for the next call, as
    /// `torch.export.load(path).module()` keeps it.
    ///
    /// ```
    /// # let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    /// let model = ferrojit::load(format!("{examples}/mlp.pt")).unwrap();
    /// let x = ferrojit::Tensor::from_vec(vec![1.0_f32; 4], &[1, 4]).unwrap();
    /// let y = model.run(vec![x.into(), 2.0.into()]).unwrap().to_tensor().unwrap();
    /// assert_eq!(y.sizes(), &[1, 3]);
    /// ```
    pub fn run(&self, inputs: Vec<IValue>) -> Result<IValue> {
        self.run_method("forward", inputs)
    }

    /// Runs the method called `method` on positional arguments.
    ///
    /// ```
    /// # let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    /// let model = ferrojit::load(format!("{examples}/mlp.pt")).unwrap();
    /// let error = model.run_method("predict", vec![]).unwrap_err();
    /// assert!(error.to_string().contains("no method 'predict'"));
    /// ```
    pub fn run_method(&self, method: &str, inputs: Vec<IValue>) -> Result<IValue> {
        let no_such_method = || Error::NoSuchMethod {
            method: method.to_string(),
            available: self.method_names().join(", "),
        };
        match &self.inner {
            Inner::TorchScript { loaded, options } => {
                if !loaded.module.class().has_method(method) {
                    return Err(no_such_method());
                }
                loaded
                    .module
                    .run_method_with_options(method, inputs, options)
                    .map_err(|source| Error::Run {
                        method: method.to_string(),
                        source: Box::new(source),
                    })
            }
            Inner::Exported { module, .. } => {
                if method != "forward" {
                    return Err(no_such_method());
                }
                // A call that panicked poisons the lock; the module's state is still whole
                // (a buffer mutation is written only after the program returns).
                let mut module = module
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                module
                    .run(inputs)
                    .map_err(|error| Error::RunExported(Box::new(error)))
            }
        }
    }

    /// The example inputs saved with a `.pt2` program (`torch.export.save` stores the ones
    /// `export()` was called with), when the archive has positional ones. TorchScript
    /// archives keep none: `None`.
    pub fn sample_inputs(&self) -> Option<Vec<IValue>> {
        match &self.inner {
            Inner::TorchScript { .. } => None,
            Inner::Exported { sample_inputs, .. } => sample_inputs.clone(),
        }
    }

    /// The TorchScript module, for callers that need its attributes, submodules or code;
    /// `None` for a `.pt2` program.
    pub fn torchscript_module(&self) -> Option<&Module> {
        match &self.inner {
            Inner::TorchScript { loaded, .. } => Some(&loaded.module),
            Inner::Exported { .. } => None,
        }
    }
}

/// Sizes the kernels' worker pool: `threads` workers (as `torch.set_num_threads`). It must
/// be called before any model runs.
///
/// ```
/// // Too late once a model ran in this process, and 0 is never valid.
/// assert!(ferrojit::set_num_threads(0).is_err());
/// ```
pub fn set_num_threads(threads: usize) -> Result<()> {
    if threads == 0 || !ferrojit_runtime::set_num_threads(threads) {
        return Err(Error::Threads(threads));
    }
    Ok(())
}

/// Reads a `torch.save` file: the arguments a Python user saved with
/// `torch.save((x, 0.5), "inputs.pt")`, or results to compare with. A tuple comes back as
/// [`IValue::Tuple`]; [`load_arguments`] unpacks it.
pub fn load_values(path: impl AsRef<Path>) -> Result<IValue> {
    let path = path.as_ref();
    ferrojit_serialize::torch_save::load_file(path).map_err(|e| Error::Read {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Reads a `torch.save`d tuple of positional arguments (a single saved value is one
/// argument), ready for [`Model::run`].
///
/// ```
/// # let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
/// let arguments = ferrojit::load_arguments(format!("{examples}/mlp_inputs.pt")).unwrap();
/// assert_eq!(arguments.len(), 2);
/// ```
pub fn load_arguments(path: impl AsRef<Path>) -> Result<Vec<IValue>> {
    Ok(match load_values(path)? {
        IValue::Tuple(tuple) => tuple.items.to_vec(),
        other => vec![other],
    })
}

/// Writes `value` as a `torch.save` file that `torch.load` reads.
pub fn save_values(value: &IValue, path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    ferrojit_serialize::torch_save::save_file(value, path).map_err(|e| Error::Read {
        path: path.to_path_buf(),
        message: format!("cannot write: {e}"),
    })
}

impl From<ferrojit_tensor::TensorError> for Error {
    fn from(error: ferrojit_tensor::TensorError) -> Error {
        Error::Tensor(Box::new(error))
    }
}

impl From<ferrojit_runtime::RuntimeError> for Error {
    fn from(error: ferrojit_runtime::RuntimeError) -> Error {
        Error::Value(Box::new(error))
    }
}
