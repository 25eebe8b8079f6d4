//! `ferrojit bench` on torch.export `.pt2` fixtures (`tests/fixtures/export`) and a TorchScript
//! zoo archive: it prints the same `key=value` fields for both, each a positive number that parses;
//! `--model` picks a program of a multi-program archive; a bad program name or bad inputs give
//! one `error:` line. Nothing here is timed against a bound.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture_in(folder: &str, name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(folder)
        .join(name)
}

fn fixture(name: &str) -> PathBuf {
    fixture_in("export", name)
}

fn ferrojit(args: &[&OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferrojit"))
        .args(args)
        .output()
        .expect("ferrojit runs")
}

fn stderr_lines(output: &Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Every `key=value` line of the output, each value parsed as a number.
fn fields(output: &Output) -> HashMap<String, f64> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| {
            let (key, value) = line
                .split_once('=')
                .unwrap_or_else(|| panic!("not a key=value line: {line:?}"));
            let number = value
                .parse::<f64>()
                .unwrap_or_else(|_| panic!("{key}={value} is not a number"));
            (key.to_string(), number)
        })
        .collect()
}

/// The fields `ferrojit bench` prints, in the order it prints them.
const FIELDS: [&str; 10] = [
    "load_ms",
    "first_run_ms",
    "runs",
    "threads",
    "min_ms",
    "p10_ms",
    "p90_ms",
    "max_ms",
    "mean_ms",
    "median_ms",
];

fn bench(model: &str, program: Option<&str>, inputs: &str, iterations: &str) -> Output {
    bench_files(&fixture(model), program, &fixture(inputs), iterations)
}

fn bench_files(model: &Path, program: Option<&str>, inputs: &Path, iterations: &str) -> Output {
    let mut args: Vec<&OsStr> = vec![
        "bench".as_ref(),
        model.as_os_str(),
        "--inputs".as_ref(),
        inputs.as_os_str(),
        "--iters".as_ref(),
        iterations.as_ref(),
        "--warmup".as_ref(),
        "2".as_ref(),
        "--threads".as_ref(),
        "1".as_ref(),
    ];
    if let Some(program) = program {
        args.push(OsStr::new("--model"));
        args.push(OsStr::new(program));
    }
    ferrojit(&args)
}

fn assert_bench_fields(output: &Output, iterations: f64) {
    assert!(output.status.success(), "{:?}", stderr_lines(output));
    let keys: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_once('=').map(|(key, _)| key.to_string()))
        .collect();
    assert_eq!(keys, FIELDS, "the fields and their order");
    let values = fields(output);
    for key in FIELDS {
        assert!(values[key] > 0.0, "{key}={} is not positive", values[key]);
    }
    assert_eq!(values["runs"], iterations);
    assert_eq!(values["threads"], 1.0);
    let order = ["min_ms", "p10_ms", "median_ms", "p90_ms", "max_ms"];
    for pair in order.windows(2) {
        assert!(
            values[pair[0]] <= values[pair[1]],
            "{} {} > {} {}",
            pair[0],
            values[pair[0]],
            pair[1],
            values[pair[1]]
        );
    }
    assert!(values["min_ms"] <= values["mean_ms"] && values["mean_ms"] <= values["max_ms"]);
}

#[test]
fn bench_of_a_pt2_program_prints_every_field() {
    let output = bench(
        "transformer_encoder.pt2",
        None,
        "transformer_encoder.call0.inputs.pt",
        "5",
    );
    assert_bench_fields(&output, 5.0);
}

#[test]
fn bench_of_a_conv_net_with_buffers_prints_every_field() {
    let output = bench("convnet.pt2", None, "convnet.call0.inputs.pt", "3");
    assert_bench_fields(&output, 3.0);
}

/// The TorchScript path shares the timing and printing: the same fields, in the same order.
#[test]
fn bench_of_a_torchscript_archive_prints_the_same_fields() {
    let output = bench_files(
        &fixture_in("zoo", "small_cnn_traced.pt"),
        None,
        &fixture_in("zoo", "small_cnn_traced.inputs.pt"),
        "3",
    );
    assert_bench_fields(&output, 3.0);
}

#[test]
fn bench_model_picks_a_program_of_the_archive() {
    let output = bench(
        "two_programs.pt2",
        Some("second"),
        "two_programs_second.call0.inputs.pt",
        "4",
    );
    assert_bench_fields(&output, 4.0);
}

#[test]
fn bench_of_a_missing_program_is_one_error_line() {
    let output = bench(
        "two_programs.pt2",
        Some("third"),
        "two_programs_second.call0.inputs.pt",
        "1",
    );
    assert!(!output.status.success());
    let lines = stderr_lines(&output);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("error: "), "{lines:?}");
    assert!(lines[0].contains("third"), "{lines:?}");
}

#[test]
fn bench_with_inputs_the_program_rejects_is_one_error_line() {
    let output = bench(
        "dynamic_batch.pt2",
        None,
        "dynamic_batch.reject_wrong_dtype.inputs.pt",
        "1",
    );
    assert!(!output.status.success());
    let lines = stderr_lines(&output);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("error: forward() failed"), "{lines:?}");
}
