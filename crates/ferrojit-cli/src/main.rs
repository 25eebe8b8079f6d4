//! The `ferrojit` command line: runs TorchScript archives saved by PyTorch.
//!
//! Every failure ends the process with a non-zero status and exactly one `error: …` line
//! on stderr.

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
        /// A torch.save file holding a tuple of positional arguments (a single non-tuple value
        /// is passed as the only argument).
        #[arg(long)]
        inputs: Option<PathBuf>,
        /// Where to write the result, as a torch.save file that torch.load reads.
        #[arg(long)]
        output: Option<PathBuf>,
        /// The method to call.
        #[arg(long, default_value = "forward")]
        method: String,
    },
}

fn main() -> ExitCode {
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
    match cli.command {
        Command::Run {
            model,
            inputs,
            output,
            method,
        } => commands::run::run_model(&model, inputs.as_deref(), output.as_deref(), &method),
    }
}
