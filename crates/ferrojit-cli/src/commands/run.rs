//! `ferrojit run`: load an archive, call a method on the arguments from `--inputs` (a
//! torch.save, `.npy`, `.npz`, `.safetensors` or JSON file) and `--arg` values, print the
//! result (or its structure) and save it in the format `--output`'s extension names.

use std::path::Path;

use ferrojit_archive::zip_archive::{ArchiveLimits, ArchiveReader};
use ferrojit_runtime::interpreter::RunOptions;
use ferrojit_serialize::import::load_module_from_archive;

use super::not_a_model::model_load_error;
use super::result_summary::{report_result, ResultDisplay};
use super::values_io::{parse_argument, prepare_output, read_arguments, write_result};

/// What `ferrojit run` was asked to do for a TorchScript archive.
#[derive(Debug, Clone)]
pub struct RunModelOptions<'a> {
    pub model: &'a Path,
    pub inputs: Option<&'a Path>,
    /// `--arg` values, passed after the inputs' arguments.
    pub extra_arguments: &'a [String],
    pub output: Option<&'a Path>,
    pub method: &'a str,
    /// For a `.pt2` archive: which program to run (`--model`).
    pub program: &'a str,
    /// `--quiet`: print nothing on success.
    pub quiet: bool,
    /// Bounds every interpreted call (the method and each `__setstate__` run while loading):
    /// past it the run fails with "step budget of N exceeded".
    pub max_steps: Option<u64>,
    /// Replaces the default cap on the memory a pickle's values may take
    /// ([`ArchiveReader::pickle_value_budget`]), for both the model and the inputs.
    pub max_pickle_memory: Option<u64>,
    /// Run through the optimizing executor (the default; `--no-optimize` turns it off).
    pub optimize: bool,
    /// `--grad`: grad mode on and gradients recorded, as in a Python process. Without it the
    /// run is an inference run (grad mode off), and a program asking for a gradient fails
    /// with an error naming the flag.
    pub grad: bool,
}

pub fn run_model(request: &RunModelOptions<'_>) -> Result<(), String> {
    let RunModelOptions {
        model,
        inputs,
        extra_arguments,
        output,
        method,
        program,
        quiet,
        max_steps,
        max_pickle_memory,
        optimize,
        grad,
    } = *request;
    // Checked before anything loads or runs: a typo in the path must not cost a model run.
    let output = output.map(prepare_output).transpose()?;
    let limits = ArchiveLimits {
        max_pickle_value_bytes: max_pickle_memory,
        ..ArchiveLimits::default()
    };
    let mut arguments = match inputs {
        Some(path) => read_arguments(path, limits)?,
        None => Vec::new(),
    };
    arguments.extend(extra_arguments.iter().map(|text| parse_argument(text)));
    let display = if quiet {
        ResultDisplay::Quiet
    } else if output.is_some() {
        ResultDisplay::SummaryOnly
    } else {
        ResultDisplay::Auto
    };
    if super::pt2::is_pt2(model) {
        let result = super::pt2::run_program(model, program, arguments)?;
        report_result(&result, display)?;
        if let Some(target) = &output {
            write_result(&result, target)?;
        }
        return Ok(());
    }
    if grad {
        ferrojit_autograd::register().map_err(|e| format!("autograd: {e}"))?;
    }
    // The method runs on this thread, so this thread's grad mode is the run's. A run that
    // records gradients fuses nothing natively (a fused group records no backward); the
    // optimizing executor gives calls whose inputs require grad differentiable graphs, or,
    // with `FERROJIT_AUTODIFF=off`, the graph runs as written.
    ferrojit_runtime::autograd::set_grad_enabled(grad);
    let fuse_natively = optimize && !grad;
    let optimize = optimize && (!grad || ferrojit_opt::autodiff::autodiff_enabled_by_default());
    // Loading runs `__setstate__` methods once each: not worth specializing.
    let load_options = RunOptions {
        max_steps,
        ..RunOptions::default()
    };
    let options = RunOptions {
        optimizer: optimize.then(ferrojit_opt::graph_executor::SpecializingOptimizer::shared),
        fusion_backend: fuse_natively.then(ferrojit_codegen::shared_backend),
        ..load_options.clone()
    };
    let cannot_load = |e: &dyn std::fmt::Display| model_load_error(model, e);
    let archive = ArchiveReader::open_with_limits(model, limits).map_err(|e| cannot_load(&e))?;
    let loaded = load_module_from_archive(&archive, &load_options).map_err(|e| cannot_load(&e))?;
    let class = loaded.module.object().class();
    if !class.has_method(method) {
        let mut methods = class.method_names();
        methods.sort();
        return Err(format!(
            "the model ({}) has no method '{method}'; its methods are: {}",
            class.qualified_name(),
            methods.join(", ")
        ));
    }
    let result = loaded
        .module
        .run_method_with_options(method, arguments, &options)
        .map_err(|e| {
            // Like Python: the TorchScript traceback first, the one `error:` line last.
            if let Some(traceback) = e.traceback_frames_text() {
                eprint!("{traceback}");
            }
            format!("{method}() failed: {e}")
        })?;
    report_result(&result, display)?;
    if let Some(target) = &output {
        write_result(&result, target)?;
    }
    Ok(())
}
