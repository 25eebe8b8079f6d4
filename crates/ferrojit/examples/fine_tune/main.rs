//! Fine-tunes the `fc` layer of a resnet18 TorchScript archive with ferrojit's Rust autograd
//! API and saves the result:
//!
//! ```text
//! cargo run -p ferrojit --example fine_tune -- \
//!     tests/fixtures/autograd/resnet18_narrow.pt /tmp/fine_tuned.pt [STEPS]
//! ```
//!
//! It also writes `<output>.check.pt` (the images, labels and ferrojit's logits), which
//! `tests/fixtures/autograd/check_fine_tuned_in_pytorch.py` reruns in PyTorch.

mod fine_tune;

use std::path::PathBuf;
use std::process::ExitCode;

use fine_tune::{fine_tune, FineTuneSettings};

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    if arguments.len() < 2 || arguments.len() > 3 {
        eprintln!("usage: fine_tune ARCHIVE.pt OUTPUT.pt [STEPS]");
        return ExitCode::from(2);
    }
    let mut settings = FineTuneSettings::default();
    if let Some(steps) = arguments.get(2) {
        match steps.parse() {
            Ok(steps) => settings.steps = steps,
            Err(_) => {
                eprintln!("STEPS must be a whole number, not '{steps}'");
                return ExitCode::from(2);
            }
        }
    }
    let output = PathBuf::from(&arguments[1]);
    let report = match fine_tune(PathBuf::from(&arguments[0]).as_path(), &output, &settings) {
        Ok(report) => report,
        Err(message) => {
            eprintln!("fine_tune: {message}");
            return ExitCode::FAILURE;
        }
    };
    for (step, loss) in report.losses.iter().enumerate() {
        println!("step {step:3}  loss {loss:.6}");
    }
    println!("trained: {}", report.trained.join(", "));
    let check = output.with_extension("check.pt");
    let values = ferrojit::IValue::tuple(vec![
        report.images.into(),
        report.labels.into(),
        report.logits.into(),
    ]);
    if let Err(error) = ferrojit::save_values(&values, &check) {
        eprintln!("fine_tune: {error}");
        return ExitCode::FAILURE;
    }
    println!("saved {} and {}", report.saved.display(), check.display());
    ExitCode::SUCCESS
}
