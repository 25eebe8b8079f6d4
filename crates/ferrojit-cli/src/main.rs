//! The `ferrojit` command line: runs TorchScript archives saved by PyTorch.
//!
//! Every failure ends the process with a non-zero status and exactly one `error: …` line
//! on stderr.

mod allocator;
mod commands;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "ferrojit",
    version,
    about = "Run PyTorch TorchScript archives without libtorch"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Load MODEL (a torch.jit.save archive), call a method on the inputs, save the result.
    Run {
        /// The TorchScript archive.
        model: PathBuf,
        /// The positional arguments: a torch.save file of a tuple (any other value is the only
        /// argument), a .npy array, the arrays of a .npz or .safetensors file in stored order,
        /// or a .json list of arguments (numbers, strings, lists, dicts, tensors as
        /// {"dtype": "float32", "shape": [2, 4], "data": [...]}).
        #[arg(long)]
        inputs: Option<PathBuf>,
        /// An argument after those of --inputs (repeat, in order): an int, a float, True,
        /// False, None, or else a string ('3' in quotes is the string "3").
        #[arg(long = "arg", value_name = "VALUE", allow_hyphen_values = true)]
        extra_arguments: Vec<String>,
        /// Where to write the result; the extension picks the format: .pt (torch.save),
        /// .npy (one tensor), .npz or .safetensors (the result's tensors), .json. Checked
        /// before the model loads.
        #[arg(long)]
        output: Option<PathBuf>,
        /// Print nothing on success (errors still go to stderr).
        #[arg(long, short)]
        quiet: bool,
        /// The method to call.
        #[arg(long, default_value = "forward")]
        method: String,
        /// Stop with an error after N interpreter steps (per call, `__setstate__` during
        /// loading included): a bound for untrusted models.
        #[arg(long, value_name = "N")]
        max_steps: Option<u64>,
        /// Allow the values of one pickle (in MODEL or INPUTS) BYTES of memory. The default,
        /// a third of the file's bytes outside the pickle plus 20 MiB, keeps the memory
        /// spent on a hostile file bounded; a torch.save of more than about half a million
        /// plain Python numbers needs more.
        #[arg(long, value_name = "BYTES")]
        max_pickle_memory: Option<u64>,
        /// For a .pt2 archive: which of its programs to run.
        #[arg(long = "model", value_name = "NAME", default_value = "model")]
        program: String,
        /// Run each TorchScript graph as written, without the optimizing executor (which
        /// specializes a plan per input shape and runs PyTorch's passes on it).
        #[arg(long)]
        no_optimize: bool,
        /// Run with grad mode on and gradients recorded, as a Python process runs by default
        /// (`torch.autograd.grad`, `.backward()` and `.grad` work; nothing is fused natively,
        /// and inputs that require grad get differentiable graphs). Without it the run is an
        /// inference run.
        #[arg(long)]
        grad: bool,
    },
    /// Re-save a TorchScript archive through ferrojit's own printer and pickler.
    Convert {
        /// The TorchScript archive to read.
        input: PathBuf,
        /// Where to write the new archive.
        #[arg(short, long)]
        output: PathBuf,
        /// For a .pt2 archive: lower every program to core ATen first, as
        /// `ExportedProgram.run_decompositions()` does (what is not lowered is listed).
        #[arg(long)]
        decompose: bool,
        /// With --decompose: refuse a program that keeps an operator PyTorch would decompose.
        #[arg(long, requires = "decompose")]
        strict: bool,
    },
    /// Compile a TorchScript source file and save it as a module calling the entry function.
    /// Freeze a TorchScript module as `torch.jit.freeze` does: attributes that are never
    /// mutated become constants, training-only code folds away, and batch norms, adds,
    /// muls and dropouts fold into the layers before them. Saves an archive PyTorch loads.
    Freeze {
        model: PathBuf,
        #[arg(short, long)]
        output: PathBuf,
        /// A method (besides forward) or attribute to keep; repeat for several.
        #[arg(long = "preserve", value_name = "NAME")]
        preserve: Vec<String>,
        /// Put the module in eval mode first (`module.eval()`); PyTorch refuses to freeze a
        /// module in training mode.
        #[arg(long)]
        eval: bool,
        /// Then apply `torch.jit.optimize_for_inference`'s CPU passes (implies --eval).
        #[arg(long)]
        optimize_for_inference: bool,
        /// Leave interface-typed submodules alone (`freeze_interfaces=False`): PyTorch then
        /// refuses a module whose methods read one. By default their calls are inlined.
        #[arg(long)]
        no_freeze_interfaces: bool,
    },
    /// Convert a TorchScript module's method into an Export IR program (as torch.export would
    /// export it) on example inputs, and save it as a .pt2 archive torch.export.load reads.
    Export {
        /// The TorchScript archive.
        model: PathBuf,
        /// A torch.save file with the example arguments: a tuple of arguments, a list of
        /// such tuples (the first is used), or a single value (the only argument).
        #[arg(long)]
        inputs: PathBuf,
        /// Where to write the .pt2 archive.
        #[arg(short, long)]
        output: PathBuf,
        /// The method to convert.
        #[arg(long, default_value = "forward")]
        method: String,
        /// A dynamic dimension, `NAME:DIM=SYMBOL[MIN,MAX]` (for example `x:0=batch[1,64]`).
        #[arg(long = "dynamic", value_name = "SPEC")]
        dynamic: Vec<String>,
        /// Lower the program to core ATen, as `ExportedProgram.run_decompositions()` does.
        #[arg(long)]
        decompose: bool,
        /// With --decompose: refuse a program that keeps an operator PyTorch would decompose.
        #[arg(long, requires = "decompose")]
        strict: bool,
    },
    Compile {
        /// The source file (top-level functions and script classes).
        source: PathBuf,
        /// Where to write the archive.
        #[arg(short, long)]
        output: PathBuf,
        /// The function `forward` calls (default: `forward`, else `main`, else the last one).
        #[arg(long)]
        entry: Option<String>,
    },
    /// Trace a function of a TorchScript source file on example inputs (as torch.jit.trace
    /// does: branches frozen, loops unrolled, sizes recorded) and save the trace as a module;
    /// or retrace the forward of a TorchScript archive (MODEL.pt), keeping its parameters.
    Trace {
        /// The source file (TorchScript-subset Python), or a TorchScript archive.
        source: PathBuf,
        /// The function to trace (for a source file).
        #[arg(long)]
        entry: Option<String>,
        /// A torch.save file holding the tuple of example inputs (tensors).
        #[arg(long)]
        inputs: PathBuf,
        /// Where to write the traced archive.
        #[arg(short, long)]
        output: PathBuf,
        /// Check the trace on these inputs too (repeatable), as torch.jit.trace's
        /// check_inputs: retrace and compare graphs, compare outputs with an eager run.
        #[arg(long = "check-inputs", value_name = "ARGS.pt")]
        check_inputs: Vec<PathBuf>,
    },
    /// Time opening MODEL and running its forward (or --method): prints load_ms=, the spread,
    /// median_ms=.
    Bench {
        /// The TorchScript archive or torch.export `.pt2` archive.
        model: PathBuf,
        /// A torch.save file holding a tuple of positional arguments.
        #[arg(long)]
        inputs: Option<PathBuf>,
        /// Timed runs.
        #[arg(long, default_value_t = 20)]
        iters: usize,
        /// Untimed runs first (the first run, which compiles, always happens).
        #[arg(long, default_value_t = 3)]
        warmup: usize,
        /// Intra-op threads (default: the number of cores).
        #[arg(long)]
        threads: Option<usize>,
        /// For a .pt2 archive: which of its programs to time.
        #[arg(long = "model", value_name = "NAME", default_value = "model")]
        program: String,
        /// Time the TorchScript graph as written, without the optimizing executor.
        #[arg(long)]
        no_optimize: bool,
        /// The TorchScript method to time (a training step, say).
        #[arg(long, default_value = "forward")]
        method: String,
        /// Time with grad mode on and gradients recorded, as `run --grad` runs (a training
        /// step that calls `torch.autograd.grad` or `backward`, or a forward that records its
        /// graph), with differentiable graphs and no native fusion, as under `run --grad`.
        #[arg(long)]
        grad: bool,
    },
    /// Parse IR text in PyTorch's format, verify it and print it back canonically.
    Ir {
        /// A file holding one graph as `str(graph)` prints it.
        file: PathBuf,
        /// Run this pass on the graph before printing it (repeat for several, run in order).
        /// Names are PyTorch's without `_jit_pass_` (`dce`, `cse`, `peephole`, `inline`,
        /// `constant_propagation`, `loop_unrolling`, `decompose_ops`, ...); an unknown name
        /// gets an error that lists them all.
        #[arg(long = "pass", value_name = "NAME")]
        passes: Vec<String>,
    },
    /// List the operator schemas this build runs, one per line, sorted (with --torchvision builds,
    /// torchvision's operators too).
    Ops {
        /// Instead: how many of torch's core ATen overloads (torch.Tag.core) a .pt2 program
        /// can call, as N/TOTAL, and the list of those missing.
        #[arg(long)]
        core: bool,
        /// Instead: torch 2.15's public aten overloads (tests/fixtures/ops_schemas) this build lacks, count first.
        #[arg(long, conflicts_with = "core")]
        missing: bool,
    },
    /// Show a method's graph (--graph), the model's code (--code) or its module tree
    /// (--summary, the default); or check that this build has every operator it calls
    /// (--check).
    Inspect {
        /// The TorchScript archive or .pt2 program. With no view flag, --summary is shown.
        model: PathBuf,
        /// The method whose graph --graph prints.
        #[arg(long, default_value = "forward")]
        method: String,
        #[arg(long, group = "view")]
        graph: bool,
        #[arg(long, group = "view")]
        code: bool,
        #[arg(long, group = "view")]
        summary: bool,
        /// Compile every method (running nothing) and list the operators the model calls
        /// that this build lacks; exits non-zero when any is missing.
        #[arg(long, group = "view")]
        check: bool,
        /// For a .pt2 archive: which of its programs to show.
        #[arg(long = "model", value_name = "NAME", default_value = "model")]
        program: String,
        /// With --graph: print the graph the optimizing executor runs for the inputs given
        /// by --inputs (PyTorch's `graph_for`), not the graph as written.
        #[arg(long)]
        optimized: bool,
        /// With --optimized: a torch.save file holding the tuple of positional arguments.
        #[arg(long)]
        inputs: Option<PathBuf>,
        /// With --optimized: the plan of a call that records gradients, as `run --grad` makes
        /// it (a module whose parameters require grad gets differentiable graphs, as it
        /// does in a Python process).
        #[arg(long)]
        grad: bool,
    },
    /// Serve models over HTTP/1.1 with the Open Inference Protocol (KServe v2, what KServe,
    /// Triton and Seldon clients speak): health, metadata and infer (JSON or binary tensors),
    /// with Prometheus metrics at /metrics. Stops gracefully on SIGTERM or ctrl-c.
    Serve {
        /// The models (TorchScript archives or .pt2 programs), served under their file stems.
        #[arg(required = true)]
        models: Vec<PathBuf>,
        /// The URL name of each model, in the order of MODELS (default: the file stem).
        #[arg(long = "name", value_name = "NAME")]
        names: Vec<String>,
        /// The port to listen on.
        #[arg(long, default_value_t = 8000)]
        port: u16,
        /// The address to listen on (0.0.0.0 inside a container).
        #[arg(long, default_value = "127.0.0.1")]
        host: std::net::IpAddr,
        /// The method an infer request calls.
        #[arg(long, default_value = "forward")]
        method: String,
        /// Join requests whose non-batch dims match into runs of up to N rows along dim 0
        /// (only for models whose outputs are batched along dim 0). 1: no batching.
        #[arg(long, value_name = "N", default_value_t = 1)]
        max_batch_size: usize,
        /// With --max-batch-size: how long the first request of a batch waits for others.
        #[arg(long, value_name = "MS", default_value_t = 0)]
        max_queue_delay_ms: u64,
        /// Requests per model admitted and not yet answered; more get 503.
        #[arg(long, value_name = "N", default_value_t = 64)]
        max_queue: usize,
        /// The largest request body accepted; larger ones get 413.
        #[arg(long, value_name = "BYTES", default_value_t = 64 * 1024 * 1024)]
        max_body_bytes: usize,
        /// How long a request may wait for its model; then 504.
        #[arg(long, value_name = "MS", default_value_t = 60_000)]
        timeout_ms: u64,
    },
}

fn main() -> ExitCode {
    allocator::tune_for_tensors();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            use clap::error::ErrorKind;
            if matches!(
                error.kind(),
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
            ) {
                print!("{error}");
                return ExitCode::SUCCESS;
            }
            if error.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                eprintln!("error: no command given (see `ferrojit --help`)");
                return ExitCode::from(2);
            }
            let rendered = error.render().to_string();
            let first_line = rendered.lines().next().unwrap_or("invalid arguments");
            let message = first_line.strip_prefix("error: ").unwrap_or(first_line);
            eprintln!("error: {message} (see `ferrojit --help`)");
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            // One line, whatever the underlying error printed.
            let single_line = message
                .split('\n')
                .map(str::trim_end)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" | ");
            eprintln!("error: {single_line}");
            ExitCode::FAILURE
        }
    }
}

/// Dispatches to one module per command (`commands/<name>.rs`).
fn run(cli: Cli) -> Result<(), String> {
    #[cfg(feature = "torchvision")]
    ferrojit_torchvision::register().map_err(|e| format!("torchvision operators: {e}"))?;
    // The autograd operators always compile; recording is installed by `run --grad` only.
    ferrojit_autograd::register_operators().map_err(|e| format!("autograd operators: {e}"))?;
    match cli.command {
        Command::Run {
            model,
            inputs,
            extra_arguments,
            output,
            quiet,
            method,
            max_steps,
            max_pickle_memory,
            program,
            no_optimize,
            grad,
        } => commands::run::run_model(&commands::run::RunModelOptions {
            model: &model,
            inputs: inputs.as_deref(),
            extra_arguments: &extra_arguments,
            output: output.as_deref(),
            method: &method,
            program: &program,
            quiet,
            max_steps,
            max_pickle_memory,
            optimize: !no_optimize,
            grad,
        }),
        Command::Convert {
            input,
            output,
            decompose,
            strict,
        } => commands::convert::convert(&input, &output, decompose.then_some(strict)),
        Command::Freeze {
            model,
            output,
            preserve,
            eval,
            optimize_for_inference,
            no_freeze_interfaces,
        } => commands::freeze::freeze_model(
            &model,
            &output,
            &preserve,
            eval,
            optimize_for_inference,
            !no_freeze_interfaces,
        ),
        Command::Export {
            model,
            inputs,
            output,
            method,
            dynamic,
            decompose,
            strict,
        } => commands::export::export_model(&commands::export::ExportOptions {
            model: &model,
            inputs: &inputs,
            output: &output,
            method: &method,
            dynamic: &dynamic,
            decompose: decompose.then_some(strict),
        }),
        Command::Compile {
            source,
            output,
            entry,
        } => commands::compile::compile(&source, &output, entry.as_deref()),
        Command::Trace {
            source,
            entry,
            inputs,
            output,
            check_inputs,
        } => commands::trace::trace(&commands::trace::TraceOptions {
            source: &source,
            entry: entry.as_deref(),
            inputs: &inputs,
            output: &output,
            check_inputs: &check_inputs,
        }),
        Command::Bench {
            model,
            inputs,
            iters,
            warmup,
            threads,
            program,
            no_optimize,
            method,
            grad,
        } => commands::bench::bench_model(&commands::bench::BenchOptions {
            optimize: !no_optimize,
            model: &model,
            inputs: inputs.as_deref(),
            iterations: iters,
            warmup,
            threads,
            method: &method,
            program: &program,
            grad,
        }),
        Command::Ir { file, passes } => commands::ir::print_ir_after_passes(&file, &passes),
        Command::Ops { missing: true, .. } => commands::ops::missing_operators(),
        Command::Ops { core: false, .. } => commands::ops::list_operators(),
        Command::Ops { core: true, .. } => commands::ops::core_coverage(),
        Command::Inspect {
            model,
            method,
            graph,
            code,
            summary,
            check,
            program,
            optimized,
            inputs,
            grad,
        } => {
            if grad && !optimized {
                return Err("--grad needs --optimized".to_string());
            }
            if check {
                if optimized {
                    return Err("--optimized needs --graph".to_string());
                }
                return commands::check::check(&model, &program);
            }
            use commands::inspect::InspectView;
            let view = match (graph, code, summary) {
                (true, _, _) => InspectView::Graph,
                (_, true, _) => InspectView::Code,
                // With no view named, the summary: the one view every file has.
                _ => InspectView::Summary,
            };
            if commands::pt2::is_pt2(&model) {
                use commands::pt2::Pt2View;
                let view = match view {
                    InspectView::Graph => Pt2View::Graph,
                    InspectView::Code => Pt2View::Code,
                    InspectView::Summary => Pt2View::Summary,
                };
                if optimized {
                    return Err(
                        "--optimized applies to TorchScript archives; a .pt2 program \
                                runs as exported"
                            .to_string(),
                    );
                }
                return commands::pt2::inspect_program(&model, &program, view);
            }
            if optimized {
                if view != InspectView::Graph {
                    return Err("--optimized needs --graph".to_string());
                }
                if inputs.is_none() {
                    return Err(
                        "--optimized needs --inputs ARGS.pt: the executor specializes \
                                its plan on the inputs' dtypes and shapes"
                            .to_string(),
                    );
                }
                return commands::inspect::print_optimized_graph(
                    &model,
                    &method,
                    inputs.as_deref(),
                    grad,
                );
            }
            commands::inspect::inspect_model(&model, &method, view)
        }
        Command::Serve {
            models,
            names,
            port,
            host,
            method,
            max_batch_size,
            max_queue_delay_ms,
            max_queue,
            max_body_bytes,
            timeout_ms,
        } => commands::serve::serve(&commands::serve::ServeOptions {
            models: &models,
            names: &names,
            address: std::net::SocketAddr::new(host, port),
            method: &method,
            max_batch_size,
            max_queue_delay_ms,
            max_queue,
            max_body_bytes,
            timeout_ms,
        }),
    }
}
