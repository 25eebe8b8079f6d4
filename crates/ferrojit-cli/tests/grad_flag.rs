//! `ferrojit run --grad` (issue 23, item 6): a TorchScript training loop that calls
//! `torch.autograd.grad` runs with the flag and ends with PyTorch's losses
//! (tests/fixtures/autograd/generate.py, `Trainer.train_steps`); without the flag the run is
//! an inference run and the error names the flag.

use std::path::{Path, PathBuf};
use std::process::Command;

use ferrojit_conformance::repo_root;
use ferrojit_runtime::IValue;
use ferrojit_serialize::torch_save;
use ferrojit_tensor::Tensor;
use serde_json::Value;

fn temporary(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ferrojit-grad-flag-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    dir.join(name)
}

fn expected_training() -> Value {
    let path = repo_root().join("tests/fixtures/autograd/autograd.json");
    let text = std::fs::read_to_string(path).expect("autograd.json");
    let fixtures: Value = serde_json::from_str(&text).expect("autograd.json parses");
    fixtures["scripts"]["train"].clone()
}

fn numbers(value: &Value) -> Vec<f64> {
    value
        .as_array()
        .expect("a list")
        .iter()
        .map(|v| v.as_f64().expect("a number"))
        .collect()
}

/// The training step's arguments, written as a torch.save file the CLI reads.
fn write_inputs(expected: &Value, path: &Path) {
    let x = &expected["x"];
    let shape: Vec<usize> = x["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap() as usize)
        .collect();
    let data: Vec<f32> = numbers(&x["data"]).into_iter().map(|v| v as f32).collect();
    let target: Vec<i64> = expected["target"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    let length = target.len();
    let arguments = IValue::tuple(vec![
        Tensor::from_vec(data, &shape).unwrap().into(),
        Tensor::from_vec(target, &[length]).unwrap().into(),
        IValue::Int(expected["steps"].as_i64().unwrap()),
        IValue::Double(expected["lr"].as_f64().unwrap()),
    ]);
    torch_save::save_file(&arguments, path).expect("inputs saved");
}

fn run_training(inputs: &Path, output: &Path, grad: bool) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ferrojit"));
    command
        .arg("run")
        .arg(repo_root().join("tests/fixtures/autograd/script_train.pt"))
        .arg("--method")
        .arg("train_steps")
        .arg("--inputs")
        .arg(inputs)
        .arg("--output")
        .arg(output);
    if grad {
        command.arg("--grad");
    }
    command.output().expect("ferrojit runs")
}

#[test]
fn scripted_training_runs_with_grad_and_matches_pytorchs_losses() {
    let expected = expected_training();
    let inputs = temporary("train.inputs.pt");
    write_inputs(&expected, &inputs);
    let output = temporary("train.losses.pt");
    let result = run_training(&inputs, &output, true);
    assert!(
        result.status.success(),
        "ferrojit run --grad failed: {}",
        String::from_utf8_lossy(&result.stderr)
    );
    let losses = torch_save::load_file(&output)
        .expect("losses load")
        .to_double_vec()
        .expect("a list of floats");
    let expected_losses = numbers(&expected["losses"]);
    assert_eq!(losses.len(), expected_losses.len());
    for (step, (actual, wanted)) in losses.iter().zip(&expected_losses).enumerate() {
        assert!(
            (actual - wanted).abs() <= 1e-5 + 1e-4 * wanted.abs(),
            "step {step}: loss {actual}, PyTorch {wanted}"
        );
    }
}

#[test]
fn asking_for_a_gradient_without_grad_names_the_flag() {
    let expected = expected_training();
    let inputs = temporary("train-nograd.inputs.pt");
    write_inputs(&expected, &inputs);
    let result = run_training(&inputs, &temporary("unused.pt"), false);
    assert!(
        !result.status.success(),
        "an inference run computed gradients"
    );
    let stderr = String::from_utf8_lossy(&result.stderr);
    // The TorchScript traceback comes first (as PyTorch prints it); the error line is last.
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: ") && last.contains("Pass --grad to `ferrojit run`"),
        "the error line does not name --grad: {stderr}"
    );
}

fn bench_training(inputs: &Path, grad: bool) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ferrojit"));
    command
        .arg("bench")
        .arg(repo_root().join("tests/fixtures/autograd/script_train.pt"))
        .arg("--method")
        .arg("train_steps")
        .arg("--inputs")
        .arg(inputs)
        .args(["--iters", "2", "--warmup", "1", "--threads", "1"]);
    if grad {
        command.arg("--grad");
    }
    command.output().expect("ferrojit runs")
}

/// `ferrojit bench --grad --method` times the training step the way `run --grad` runs it
/// (what bench/compare.py --train calls); without --grad it is an inference run and fails
/// as `run` does.
#[test]
fn bench_times_a_training_method_with_grad() {
    let expected = expected_training();
    let inputs = temporary("bench.inputs.pt");
    write_inputs(&expected, &inputs);
    let result = bench_training(&inputs, true);
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(
        result.status.success(),
        "ferrojit bench --grad failed: {}",
        String::from_utf8_lossy(&result.stderr)
    );
    assert!(stdout.contains("runs=2\n"), "{stdout}");
    let median = stdout
        .lines()
        .find_map(|line| line.strip_prefix("median_ms="))
        .and_then(|value| value.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no median_ms line: {stdout}"));
    assert!(median > 0.0, "{stdout}");

    let inference = bench_training(&inputs, false);
    assert!(
        !inference.status.success(),
        "an inference bench computed gradients"
    );
    let stderr = String::from_utf8_lossy(&inference.stderr);
    assert!(
        stderr.contains("--grad"),
        "the error does not name --grad: {stderr}"
    );
}

/// A `.pt2` program runs as exported, without recording: `bench --grad` says so rather than
/// timing an inference run under the flag's name.
#[test]
fn bench_grad_refuses_a_pt2_program() {
    let result = Command::new(env!("CARGO_BIN_EXE_ferrojit"))
        .arg("bench")
        .arg(repo_root().join("examples/mlp.pt2"))
        .args(["--grad", "--iters", "1"])
        .output()
        .expect("ferrojit runs");
    assert!(
        !result.status.success(),
        "bench --grad timed a .pt2 program"
    );
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(
        stderr.contains("--grad times TorchScript archives"),
        "{stderr}"
    );
}
