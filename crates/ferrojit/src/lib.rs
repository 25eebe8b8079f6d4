//! ferrojit: load PyTorch models and run them from Rust, with neither Python nor libtorch.
//!
//! One entry point takes both of PyTorch's deployable formats: a TorchScript archive
//! (`torch.jit.save`, usually `.pt`) and a torch.export program (`torch.export.save`, usually
//! `.pt2`). [`load`] looks at the file, not at its name, and gives a [`Model`]; an
//! application calls [`Model::forward`] (or [`Model::run_method`]) and need not care which
//! format it was handed.
//!
//! # Load and run
//! ```
//! # fn main() -> Result<(), ferrojit::Error> {
//! # let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
//! // The same model, scripted (`mlp.pt`) and exported (`mlp.pt2`).
//! let x = ferrojit::Tensor::from_vec(vec![0.5_f32; 8], &[2, 4])?;
//! let mut results = Vec::new();
//! for file in ["mlp.pt", "mlp.pt2"] {
//!     let model = ferrojit::load(format!("{examples}/{file}"))?;
//!     let output = model.forward(vec![x.clone().into(), 0.5.into()])?;
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
//! siblings read results back. A tensor is made from a `Vec` or a slice of any element
//! type ([`Element`]: `f32`, `f64`, `i64`, `i32`, `i16`, `i8`, `u8`, `bool`, and
//! [`half::f16`] and [`half::bf16`]) and read back with [`Tensor::to_vec`], which checks the
//! dtype:
//!
//! ```
//! # fn main() -> Result<(), ferrojit::Error> {
//! use ferrojit::half::f16;
//! let t = ferrojit::Tensor::from_slice(&[f16::from_f32(1.5), f16::from_f32(-2.0)], &[2])?;
//! assert_eq!(t.dtype(), ferrojit::DType::Float16);
//! assert_eq!(t.to_vec::<f16>()?[0].to_f32(), 1.5);
//! // Asking for the wrong element type is an error, not a reinterpretation.
//! assert!(matches!(t.to_vec::<f32>(), Err(_)));
//! # Ok(())
//! # }
//! ```
//!
//! With the `ndarray` cargo feature, [`tensor_from_ndarray`] and [`tensor_to_ndarray`]
//! convert to and from `ndarray` arrays. [`load_values`] and [`save_values`] read and write
//! `torch.save` files, and [`load_safetensors`] and [`save_safetensors`] `.safetensors` ones,
//! so arguments can come from Python and results go back to it.
//!
//! # Batches
//! A model's `forward` usually takes a batch along the first dimension: stack the samples
//! into one tensor (one call, the kernels split it across threads), or call the model from
//! several threads at once, as a [`Model`] is `Sync`:
//!
//! ```
//! # fn main() -> Result<(), ferrojit::Error> {
//! # let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
//! let model = ferrojit::load(format!("{examples}/mlp.pt"))?;
//! let rows = [[0.1_f32, 0.2, 0.3, 0.4], [1.0, -1.0, 0.5, 0.0], [2.0, 0.0, -0.5, 1.5]];
//! let batch = ferrojit::Tensor::from_vec(rows.concat(), &[3, 4])?;
//! let batched = model.forward(vec![batch.into(), 1.0.into()])?.to_tensor()?;
//! // One row per thread gives the batch's rows.
//! let singles: Vec<Vec<f32>> = std::thread::scope(|scope| {
//!     let handles: Vec<_> = rows
//!         .iter()
//!         .map(|row| {
//!             let model = &model;
//!             scope.spawn(move || -> Result<Vec<f32>, ferrojit::Error> {
//!                 let x = ferrojit::Tensor::from_slice(&row[..], &[1, 4])?;
//!                 Ok(model.forward(vec![x.into(), 1.0.into()])?.to_tensor()?.to_vec()?)
//!             })
//!         })
//!         .collect();
//!     let joined = handles.into_iter().map(|handle| handle.join().unwrap());
//!     joined.collect::<Result<Vec<_>, ferrojit::Error>>()
//! })?;
//! let batched = batched.to_vec::<f32>()?;
//! for (index, single) in singles.iter().enumerate() {
//!     for (a, b) in single.iter().zip(&batched[index * 3..index * 3 + 3]) {
//!         assert!((a - b).abs() < 1e-5);
//!     }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # Threads
//! Kernels split large tensors across a worker pool. [`set_num_threads`] sizes it (as
//! `torch.set_num_threads`), and must be called before the first model runs;
//! [`num_threads`] reads it.
//!
//! # Errors
//! Every fallible call returns [`Error`], one enum whose variants say what failed and
//! where (the file, the method) and carry the lower layer's error as their
//! [`source`](std::error::Error::source). Its text is one line, fit for an `error:` message:
//!
//! ```
//! # let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
//! let model = ferrojit::load(format!("{examples}/mlp.pt")).unwrap();
//! match model.run_method("predict", vec![]) {
//!     Err(ferrojit::Error::NoSuchMethod { method, available }) => {
//!         assert_eq!(method, "predict");
//!         assert!(available.contains("forward"));
//!     }
//!     other => panic!("expected NoSuchMethod, got {other:?}"),
//! }
//! let missing = ferrojit::load("no/such/model.pt").err().expect("no such file");
//! assert!(matches!(missing, ferrojit::Error::Read { .. }));
//! ```
//!
//! # Custom operators
//! A TorchScript model that calls an operator of its own (`torch.ops.mylib.op`, registered
//! in Python with `torch.library`) runs once the operator is registered here, before the
//! model is loaded: [`register_operator`] takes the operator's PyTorch schema and a kernel
//! that pops its arguments from the [`Stack`] and pushes its results.
//!
//! ```
//! use ferrojit::{pop_arguments, register_operator, IValue, Stack};
//! register_operator("guide_example::scale(Tensor x, float k) -> Tensor", |stack: &mut Stack| {
//!     let [x, k] = pop_arguments::<2>(stack)?;
//!     let (x, k) = (x.to_tensor()?, k.to_double()?);
//!     let tensor_error = |e| ferrojit::RuntimeError::tensor("guide_example::scale", e);
//!     let values: Vec<f32> = x.to_vec::<f32>().map_err(tensor_error)?;
//!     let values = values.iter().map(|v| v * k as f32).collect();
//!     let scaled = ferrojit::Tensor::from_vec(values, x.sizes()).map_err(tensor_error)?;
//!     stack.push(scaled.into());
//!     Ok(())
//! })
//! .unwrap();
//! // A scripted model calling `torch.ops.guide_example.scale(x, 2.0)` now compiles and runs.
//! ```
//!
//! # Gradients
//! A TorchScript model that calls `torch.autograd.grad` or `backward` loads and compiles
//! through [`load`] (the autograd operators are always registered). Recording gradients
//! is off by default, as inference wants; [`enable_autograd`] turns it on for the process
//! and [`set_grad_enabled`] for the calling thread. The [`autograd`] module is the Rust side
//! of it: `backward`, `grad`, `no_grad` guards, `requires_grad` and `.grad`.
//!
//! # Untrusted files
//! Model files are programs: load only files you trust to run. Every length, offset and
//! stride in a file is checked, and nesting is bounded, so a malformed file gives an
//! [`Error`], never a panic. [`LoadOptions`] adds bounds of its own: a step budget for each
//! call of interpreted code, a cap on the memory a pickle's values may take, and the
//! archive reader's limits ([`ArchiveLimits`]: entries, record sizes, decompressed bytes).

#![deny(missing_docs)]

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ferrojit_archive::zip_archive::ArchiveReader;
use ferrojit_export::{ExportedModule, Pt2Archive};
use ferrojit_runtime::interpreter::RunOptions;
use ferrojit_serialize::import::{load_module_from_archive, LoadedModule};

pub mod autograd;
#[cfg(feature = "ndarray")]
mod ndarray_conversions;
pub mod tracing;
#[cfg(feature = "ndarray")]
pub use ndarray_conversions::{tensor_from_ndarray, tensor_to_ndarray};
pub use tracing::{trace, trace_module};

pub use ferrojit_archive::zip_archive::ArchiveLimits;
pub use ferrojit_export::DEFAULT_MODEL_NAME;
pub use ferrojit_runtime::autograd::{is_grad_enabled, set_grad_enabled};
pub use ferrojit_runtime::ivalue::{DictValue, IValue, ListValue, TupleValue};
pub use ferrojit_runtime::registry::pop_arguments;
pub use ferrojit_runtime::{num_threads, register_operator, Module, RuntimeError, Stack};
pub use ferrojit_tensor::{DType, Element, Scalar, Tensor, TensorError};
/// The `half` crate ferrojit's `f16` and `bf16` tensors use, so callers name the same types.
pub use half;
/// The `ndarray` crate [`tensor_from_ndarray`] and [`tensor_to_ndarray`] use (the `ndarray`
/// feature).
#[cfg(feature = "ndarray")]
pub use ndarray;

/// Everything that can go wrong while loading or running a model. Each variant names the
/// file or method involved; its text is one line, fit for an `error:` message.
/// New variants may be added, so a `match` needs a catch-all arm.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    /// An `ndarray` array and a tensor disagree on the element type
    /// ([`tensor_to_ndarray`] asked for `f32` from an `int64` tensor, ...).
    #[error("the tensor's dtype is {actual:?}, but {expected:?} elements were asked for")]
    DTypeMismatch {
        /// The dtype of the element type asked for.
        expected: DType,
        /// The tensor's dtype.
        actual: DType,
    },
    /// A safetensors file could not be read or written.
    #[error("safetensors file {path}: {source}")]
    Safetensors {
        /// The file.
        path: PathBuf,
        /// The reader's or writer's error.
        source: Box<ferrojit_serialize::safetensors_io::SafetensorsError>,
    },
    /// A TorchScript model's code or graph could not be printed or compiled.
    #[error("cannot show {what}: {message}")]
    Inspect {
        /// What was asked for (`code`, `the graph of forward`, ...).
        what: String,
        /// Why it failed.
        message: String,
    },
    /// Operators could not be registered (the autograd ones, or a recording hook that
    /// another library installed first).
    #[error("cannot register operators: {0}")]
    Operators(Box<ferrojit_runtime::RuntimeError>),
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
    /// A cap on the memory the values of one pickle may take, replacing the default cap:
    /// in a TorchScript archive each pickle, in a `.pt2` archive each `torch.save` file it
    /// holds (`use_pickle` weights, pickled constants, sample inputs).
    pub max_pickle_memory: Option<u64>,
    /// Which program of a `.pt2` archive to load (archives may hold several); the default
    /// is [`DEFAULT_MODEL_NAME`], `model`, as `torch.export.load` reads.
    pub program: String,
    /// Run TorchScript through the optimizing graph executor (the default): each method
    /// gets a plan per input shape, with PyTorch's passes run on it. `false` runs every
    /// graph as written (`ferrojit run --no-optimize`). A `.pt2` program always runs as
    /// exported.
    pub optimize: bool,
    /// Bounds on what the archive reader accepts, for both formats: how many entries, how
    /// large a record, how many bytes read in all (a `.pt2` archive's weight storages, which
    /// are borrowed from the file rather than copied, count at their size). The defaults
    /// fit any real model; lower them for files from untrusted sources. The `torch.save`
    /// files nested in a `.pt2` archive are read under the same bounds.
    pub archive_limits: ArchiveLimits,
}

impl Default for LoadOptions {
    fn default() -> LoadOptions {
        LoadOptions {
            max_steps: None,
            max_pickle_memory: None,
            program: DEFAULT_MODEL_NAME.to_string(),
            optimize: true,
            archive_limits: ArchiveLimits::default(),
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
        max_pickle_value_bytes: options
            .max_pickle_memory
            .or(options.archive_limits.max_pickle_value_bytes),
        ..options.archive_limits
    };
    // Models that call `torch.autograd.grad` or `backward` compile as they do in the CLI;
    // recording stays off until `enable_autograd`.
    ferrojit_autograd::register_operators().map_err(|error| Error::Operators(Box::new(error)))?;
    if ferrojit_export::looks_like_pt2(&path) {
        let exported = |source| Error::Exported {
            path: path.clone(),
            source: Box::new(source),
        };
        let archive = Pt2Archive::open_with_limits(&path, limits).map_err(exported)?;
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

    /// Runs `forward` on positional arguments, as calling the module does in Python; the
    /// same as [`Model::run`].
    ///
    /// ```
    /// # let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    /// let model = ferrojit::load(format!("{examples}/mlp.pt")).unwrap();
    /// let x = ferrojit::Tensor::from_vec(vec![0.5_f32; 8], &[2, 4]).unwrap();
    /// let y = model.forward(vec![x.into(), 0.5.into()]).unwrap();
    /// assert_eq!(y.to_tensor().unwrap().sizes(), &[2, 3]);
    /// ```
    pub fn forward(&self, inputs: Vec<IValue>) -> Result<IValue> {
        self.run_method("forward", inputs)
    }

    /// The model's code as PyTorch prints it: a TorchScript model's `.code` (the Python
    /// source of its class's methods, as `torch.jit.load(path).code` shows), or a `.pt2`
    /// program's `graph_module.code`.
    ///
    /// ```
    /// # let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    /// let model = ferrojit::load(format!("{examples}/mlp.pt")).unwrap();
    /// assert!(model.code().unwrap().contains("def forward(self"));
    /// ```
    pub fn code(&self) -> Result<String> {
        match &self.inner {
            Inner::TorchScript { loaded, .. } => {
                let class = loaded.module.class();
                let printed = ferrojit_serialize::python_printer::print_program(
                    &loaded.unit,
                    &[class.qualified_name().to_string()],
                    &[],
                )
                .map_err(|e| Error::Inspect {
                    what: format!("the code of {}", class.qualified_name()),
                    message: e.to_string(),
                })?;
                Ok(printed
                    .files
                    .values()
                    .map(|text| text.as_str())
                    .collect::<Vec<_>>()
                    .join("\n"))
            }
            Inner::Exported { module, .. } => {
                let module = module
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                Ok(ferrojit_export::fx_text::print_code(
                    &module.loaded().program,
                ))
            }
        }
    }

    /// The graph of `method` in TorchScript's IR text (`torch.jit.load(path).graph` for
    /// `forward`), as written in the file, before optimization; for a `.pt2` program the FX
    /// graph `torch.export.load(path).graph` prints.
    ///
    /// ```
    /// # let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    /// let model = ferrojit::load(format!("{examples}/mlp.pt")).unwrap();
    /// assert!(model.graph("forward").unwrap().starts_with("graph("));
    /// ```
    pub fn graph(&self, method: &str) -> Result<String> {
        let no_such_method = || Error::NoSuchMethod {
            method: method.to_string(),
            available: self.method_names().join(", "),
        };
        match &self.inner {
            Inner::TorchScript { loaded, .. } => {
                let class = loaded.module.class();
                if !class.has_method(method) {
                    return Err(no_such_method());
                }
                let inspect_error = |message: String| Error::Inspect {
                    what: format!("the graph of {method}"),
                    message,
                };
                let function = loaded
                    .unit
                    .method(class, method)
                    .map_err(|e| inspect_error(e.to_string()))?;
                let graph = function
                    .graph(&loaded.unit)
                    .map_err(|e| inspect_error(e.to_string()))?;
                Ok(graph.to_ir_string())
            }
            Inner::Exported { module, .. } => {
                if method != "forward" {
                    return Err(no_such_method());
                }
                let module = module
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                Ok(ferrojit_export::fx_text::print_graph(
                    &module.loaded().program,
                ))
            }
        }
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
                // A call that records gradients runs without native fusion (a fused group
                // records no backward). The optimizing executor builds its plan with
                // differentiable graphs when an input requires grad; with
                // `FERROJIT_AUTODIFF=off` such a call runs its graphs as written.
                let recording = ferrojit_runtime::autograd::is_grad_enabled()
                    && ferrojit_autograd::is_recording_installed();
                let recording_options;
                let options = if recording {
                    let optimizer = if ferrojit_opt::autodiff::autodiff_enabled_by_default() {
                        options.optimizer.clone()
                    } else {
                        None
                    };
                    recording_options = RunOptions {
                        optimizer,
                        fusion_backend: None,
                        ..options.clone()
                    };
                    &recording_options
                } else {
                    options
                };
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

/// Turns on gradient recording for the whole process (installs the autograd hook), so a
/// model that calls `torch.autograd.grad` or `backward` on tensors that require gradients
/// gets them; gradient mode is then on for threads that [`set_grad_enabled`]`(true)`.
/// Idempotent. Inference does not need it, and runs faster without it.
///
/// ```
/// ferrojit::enable_autograd().unwrap();
/// ferrojit::set_grad_enabled(true);
/// assert!(ferrojit::is_grad_enabled());
/// ferrojit::set_grad_enabled(false);
/// ```
pub fn enable_autograd() -> Result<()> {
    ferrojit_autograd::register().map_err(|error| Error::Operators(Box::new(error)))
}

/// Reads the tensors of a `.safetensors` file, in the file's order, with their names.
///
/// ```
/// let path = std::env::temp_dir().join(format!("ferrojit-doc-{}.safetensors", std::process::id()));
/// let weight = ferrojit::Tensor::from_vec(vec![1.0_f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
/// ferrojit::save_safetensors(&path, &[("weight".to_string(), weight)]).unwrap();
/// let tensors = ferrojit::load_safetensors(&path).unwrap();
/// assert_eq!(tensors[0].0, "weight");
/// assert_eq!(tensors[0].1.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub fn load_safetensors(path: impl AsRef<Path>) -> Result<Vec<(String, Tensor)>> {
    let path = path.as_ref();
    ferrojit_serialize::safetensors_io::load_safetensors(path).map_err(|source| {
        Error::Safetensors {
            path: path.to_path_buf(),
            source: Box::new(source),
        }
    })
}

/// Writes named tensors (any strides; written contiguous) as a `.safetensors` file that
/// `safetensors.torch.load_file` reads.
pub fn save_safetensors(path: impl AsRef<Path>, tensors: &[(String, Tensor)]) -> Result<()> {
    let path = path.as_ref();
    ferrojit_serialize::safetensors_io::save_safetensors(path, tensors, None).map_err(|source| {
        Error::Safetensors {
            path: path.to_path_buf(),
            source: Box::new(source),
        }
    })
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
///
/// ```
/// let path = std::env::temp_dir().join(format!("ferrojit-doc-{}.pt", std::process::id()));
/// let value = ferrojit::IValue::from(ferrojit::Tensor::from_vec(vec![1_i64, 2, 3], &[3]).unwrap());
/// ferrojit::save_values(&value, &path).unwrap();
/// let back = ferrojit::load_values(&path).unwrap();
/// assert_eq!(back.to_tensor().unwrap().to_vec::<i64>().unwrap(), vec![1, 2, 3]);
/// # std::fs::remove_file(&path).unwrap();
/// ```
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
