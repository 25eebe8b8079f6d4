//! `ferrojit bench`: times opening a model and running its `forward` repeatedly, for a
//! TorchScript archive (`.pt`) and a torch.export program (`.pt2`) alike.
//!
//! Output (one `key=value` line each, for scripts to parse): `load_ms=<number>`,
//! `first_run_ms=`, then the spread of run times (`runs=`, `threads=`, `min_ms=`, `p10_ms=`,
//! `p90_ms=`, `max_ms=`, `mean_ms=`), and last `median_ms=<number>`. The two formats differ
//! only in how the model is opened and called ([`BenchTarget`]); reading the inputs, warming
//! up, timing and printing are shared. TorchScript runs through the optimizing executor
//! unless `--no-optimize`; its first run builds the plan for the inputs' shapes. `--grad`
//! times a TorchScript method with grad mode on and recording installed, as `run --grad`
//! runs it (differentiable graphs, no native fusion): a training step, or a forward that
//! records its backward graph.

use std::path::Path;
use std::time::Instant;

use ferrojit_export::{ExportedModule, Pt2Archive};
use ferrojit_runtime::interpreter::RunOptions;
use ferrojit_runtime::ivalue::IValue;
use ferrojit_serialize::import::{load_module, LoadedModule};

/// What `ferrojit bench` was asked to do.
#[derive(Debug, Clone)]
pub struct BenchOptions<'a> {
    pub model: &'a Path,
    pub inputs: Option<&'a Path>,
    pub iterations: usize,
    pub warmup: usize,
    pub threads: Option<usize>,
    /// The TorchScript method to time.
    pub method: &'a str,
    /// For a `.pt2` archive: which of its programs to time.
    pub program: &'a str,
    /// Run TorchScript through the optimizing executor (the default).
    pub optimize: bool,
    /// `--grad`: grad mode on and gradients recorded (TorchScript only; as `run --grad`).
    pub grad: bool,
}

/// The statistics printed for a list of run times in milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Spread {
    pub min: f64,
    pub p10: f64,
    pub median: f64,
    pub p90: f64,
    pub max: f64,
    pub mean: f64,
}

/// The spread of `times` (milliseconds); `None` for an empty list. The median of an even
/// count is the mean of the two middle values.
pub fn spread(times: &[f64]) -> Option<Spread> {
    if times.is_empty() {
        return None;
    }
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    let last = sorted.len() - 1;
    let at = |fraction: f64| sorted[((last as f64) * fraction).round() as usize];
    let middle = sorted.len() / 2;
    let median = if sorted.len() % 2 == 1 {
        sorted[middle]
    } else {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    };
    Some(Spread {
        min: sorted[0],
        p10: at(0.1),
        median,
        p90: at(0.9),
        max: sorted[last],
        mean: sorted.iter().sum::<f64>() / sorted.len() as f64,
    })
}

fn milliseconds(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}

/// A model opened for timing: one call of it on the positional arguments.
enum BenchTarget {
    /// A TorchScript module and the method to call (compiled on its first call).
    TorchScript {
        loaded: Box<LoadedModule>,
        method: String,
        options: RunOptions,
    },
    /// A torch.export program (its buffers persist between calls, as in `ep.module()`).
    Exported(Box<ExportedModule>),
}

impl BenchTarget {
    /// Opens `options.model` in the format its contents say.
    fn open(options: &BenchOptions<'_>) -> Result<BenchTarget, String> {
        let model = options.model;
        let cannot_load =
            |e: &dyn std::fmt::Display| format!("cannot load model {}: {e}", model.display());
        if super::pt2::is_pt2(model) {
            if options.grad {
                return Err(format!(
                    "--grad times TorchScript archives; {} is a .pt2 program",
                    model.display()
                ));
            }
            let archive = Pt2Archive::open(model).map_err(|e| cannot_load(&e))?;
            let loaded = archive.load(options.program).map_err(|e| cannot_load(&e))?;
            let module = ExportedModule::new(loaded).map_err(|e| cannot_load(&e))?;
            return Ok(BenchTarget::Exported(Box::new(module)));
        }
        let loaded = load_module(model).map_err(|e| cannot_load(&e))?;
        let method = options.method;
        let class = loaded.module.object().class();
        if !class.has_method(method) {
            return Err(format!(
                "the model ({}) has no method '{method}'",
                class.qualified_name()
            ));
        }
        // As under `run --grad`: a run that records gradients fuses nothing natively, and the
        // optimizing executor gives calls that need a gradient differentiable graphs (with
        // `FERROJIT_AUTODIFF=off`, the graph runs as written).
        let fuse_natively = options.optimize && !options.grad;
        let optimize = options.optimize
            && (!options.grad || ferrojit_opt::autodiff::autodiff_enabled_by_default());
        Ok(BenchTarget::TorchScript {
            loaded: Box::new(loaded),
            method: method.to_string(),
            options: RunOptions {
                optimizer: optimize
                    .then(ferrojit_opt::graph_executor::SpecializingOptimizer::shared),
                fusion_backend: fuse_natively.then(ferrojit_codegen::shared_backend),
                ..RunOptions::default()
            },
        })
    }

    fn run(&mut self, arguments: Vec<IValue>) -> Result<IValue, String> {
        match self {
            BenchTarget::TorchScript {
                loaded,
                method,
                options,
            } => loaded
                .module
                .run_method_with_options(method, arguments, options)
                .map_err(|e| format!("{method}() failed: {e}")),
            BenchTarget::Exported(module) => module
                .run(arguments)
                .map_err(|e| format!("forward() failed: {e}")),
        }
    }
}

/// The positional arguments in the torch.save file at `inputs` (a tuple, or one value).
pub(crate) fn read_arguments(inputs: Option<&Path>) -> Result<Vec<IValue>, String> {
    let Some(path) = inputs else {
        return Ok(Vec::new());
    };
    // Every format `run --inputs` takes.
    super::values_io::read_arguments(path, Default::default())
}

pub fn bench_model(options: &BenchOptions<'_>) -> Result<(), String> {
    if options.iterations == 0 {
        return Err("--iters must be at least 1".to_string());
    }
    if let Some(threads) = options.threads {
        if threads == 0 {
            return Err("--threads must be at least 1".to_string());
        }
        if !ferrojit_runtime::set_num_threads(threads) {
            return Err(format!(
                "cannot set the thread count to {threads}: the worker pool is already running"
            ));
        }
    }
    let arguments = read_arguments(options.inputs)?;
    if options.grad {
        ferrojit_autograd::register().map_err(|e| format!("autograd: {e}"))?;
    }
    // The method runs on this thread, so this thread's grad mode is the run's.
    ferrojit_runtime::autograd::set_grad_enabled(options.grad);
    let load_start = Instant::now();
    let mut target = BenchTarget::open(options)?;
    let load_ms = milliseconds(load_start);
    println!("load_ms={load_ms:.3}");
    // The first call compiles a TorchScript method; it counts as warm-up.
    let first_start = Instant::now();
    target.run(arguments.clone())?;
    println!("first_run_ms={:.3}", milliseconds(first_start));
    let progress = super::progress::Progress::start("warming up");
    for _ in 1..options.warmup {
        target.run(arguments.clone())?;
    }
    let mut times = Vec::with_capacity(options.iterations);
    for round in 0..options.iterations {
        progress.set_message(&format!("round {}/{}", round + 1, options.iterations));
        let start = Instant::now();
        let result = target.run(arguments.clone())?;
        times.push(milliseconds(start));
        drop(result);
    }
    drop(progress);
    let stats = spread(&times).ok_or("no timed runs")?;
    println!("runs={}", times.len());
    println!("threads={}", ferrojit_runtime::num_threads());
    println!("min_ms={:.3}", stats.min);
    println!("p10_ms={:.3}", stats.p10);
    println!("p90_ms={:.3}", stats.p90);
    println!("max_ms={:.3}", stats.max);
    println!("mean_ms={:.3}", stats.mean);
    println!("median_ms={:.3}", stats.median);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::spread;

    #[test]
    fn spread_of_known_values() {
        let stats = spread(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!(stats.min, 1.0);
        assert_eq!(stats.median, 3.0);
        assert_eq!(stats.max, 5.0);
        assert_eq!(stats.mean, 3.0);
        let even = spread(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(even.median, 2.5);
        assert!(spread(&[]).is_none());
    }
}
