//! `ferrojit run` and `inspect` as a new user meets them: inputs as `.npy`, `.npz`,
//! `.safetensors` or JSON, `--arg` scalars, output formats chosen by extension and checked
//! before the run, `--quiet`, large results summarized, `inspect --check` and `--summary`
//! folding, and the hint for an ONNX file. Expected values are PyTorch's
//! (tests/fixtures/cli_inputs/generate.py, examples/mlp_expected.json).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{assert_matches, read_json, repo_root};
use ferrojit_runtime::ivalue::IValue;
use ferrojit_serialize::array_files::{parse_json_arguments, read_npy, read_npz};
use ferrojit_serialize::safetensors_io::load_safetensors;
use ferrojit_serialize::torch_save;
use ferrojit_tensor::Tensor;

fn cli_fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures/cli_inputs").join(name)
}

fn example(name: &str) -> PathBuf {
    repo_root().join("examples").join(name)
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ergonomics");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

fn ferrojit(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferrojit"))
        .args(args)
        .output()
        .expect("ferrojit runs")
}

fn run_ok(args: &[&std::ffi::OsStr]) -> String {
    let output = ferrojit(args);
    assert!(
        output.status.success(),
        "ferrojit {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn os(text: &str) -> &std::ffi::OsStr {
    text.as_ref()
}

fn read_npy_file(path: &Path) -> Tensor {
    read_npy(&std::fs::read(path).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn assert_close(actual: &Tensor, expected: &Tensor) {
    assert_eq!(actual.dtype(), expected.dtype());
    assert_eq!(actual.sizes(), expected.sizes());
    for (a, e) in actual.to_f64_vec().iter().zip(expected.to_f64_vec()) {
        assert!((a - e).abs() <= 1e-6 + 1e-5 * e.abs(), "{a} vs {e}");
    }
}

/// Runs examples/mlp.pt on `inputs` (plus `--arg 0.5` unless the file holds both arguments)
/// writing a torch.save output, and checks it against PyTorch's result.
fn check_mlp_inputs(inputs: &Path, with_scale_arg: bool) {
    let stem = inputs
        .file_name()
        .unwrap()
        .to_string_lossy()
        .replace('.', "_");
    let output = scratch(&format!("mlp_{stem}.pt"));
    let model = example("mlp.pt");
    let mut args = vec![
        os("run"),
        model.as_os_str(),
        os("--inputs"),
        inputs.as_os_str(),
        os("--output"),
        output.as_os_str(),
    ];
    if with_scale_arg {
        args.extend([os("--arg"), os("0.5")]);
    }
    run_ok(&args);
    let value = torch_save::load_file(&output).unwrap();
    assert_matches(&value, &read_json(&example("mlp_expected.json")), "mlp");
    let expected = read_npy_file(&cli_fixture("mlp_expected.npy"));
    assert_close(&value.to_tensor().unwrap(), &expected);
}

#[test]
fn every_input_format_gives_pytorchs_result() {
    check_mlp_inputs(&example("mlp_inputs.pt"), false);
    check_mlp_inputs(&example("mlp_inputs.json"), false);
    check_mlp_inputs(&cli_fixture("mlp_args.json"), false);
    check_mlp_inputs(&cli_fixture("mlp_x.npy"), true);
    check_mlp_inputs(&cli_fixture("mlp_x_big_endian_fortran.npy"), true);
    check_mlp_inputs(&cli_fixture("mlp_x.npz"), true);
    check_mlp_inputs(&cli_fixture("mlp_x.safetensors"), true);
}

#[test]
fn arg_values_follow_the_inputs_in_order() {
    for (mode, expected) in [
        ("shift", "scalar_expected_shift.npy"),
        ("other", "scalar_expected_other.npy"),
    ] {
        let output = scratch(&format!("scalar_{mode}.npy"));
        run_ok(&[
            os("run"),
            cli_fixture("scalar_args.pt").as_os_str(),
            os("--inputs"),
            cli_fixture("scalar_x.npy").as_os_str(),
            os("--arg"),
            os("3"),
            os("--arg"),
            os("0.5"),
            os("--arg"),
            os(mode),
            os("--output"),
            output.as_os_str(),
        ]);
        assert_close(
            &read_npy_file(&output),
            &read_npy_file(&cli_fixture(expected)),
        );
    }
    // An int where the method wants a str is a type error naming the argument.
    let wrong = ferrojit(&[
        os("run"),
        cli_fixture("scalar_args.pt").as_os_str(),
        os("--inputs"),
        cli_fixture("scalar_x.npy").as_os_str(),
        os("--arg"),
        os("3"),
        os("--arg"),
        os("0.5"),
        os("--arg"),
        os("7"),
    ]);
    assert!(!wrong.status.success());
    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert!(stderr.contains("mode"), "{stderr}");
}

#[test]
fn output_formats_round_trip() {
    let run_two = |output: &Path| {
        run_ok(&[
            os("run"),
            cli_fixture("two_outputs.pt").as_os_str(),
            os("--inputs"),
            cli_fixture("scalar_x.npy").as_os_str(),
            os("--output"),
            output.as_os_str(),
        ])
    };
    let expected =
        read_npz(&std::fs::read(cli_fixture("two_outputs_expected.npz")).unwrap()).unwrap();
    let npz = scratch("two.npz");
    run_two(&npz);
    let written = read_npz(&std::fs::read(&npz).unwrap()).unwrap();
    let names: Vec<&str> = written.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["arr_0", "arr_1"]);
    for ((_, actual), (_, wanted)) in written.iter().zip(&expected) {
        assert_close(actual, wanted);
    }
    let safetensors = scratch("two.safetensors");
    run_two(&safetensors);
    let written = load_safetensors(&safetensors).unwrap();
    assert_eq!(written.len(), 2);
    for (name, wanted) in [("output_0", &expected[0].1), ("output_1", &expected[1].1)] {
        let actual = &written.iter().find(|(n, _)| n == name).unwrap().1;
        assert_close(actual, wanted);
    }
    let json = scratch("two.json");
    run_two(&json);
    // A tagged tuple at the top level reads back as its items (an argument list).
    let items = parse_json_arguments(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(items.len(), 2);
    assert_close(&items[0].to_tensor().unwrap(), &expected[0].1);
    assert_close(&items[1].to_tensor().unwrap(), &expected[1].1);
    let pt = scratch("two.pt");
    run_two(&pt);
    let IValue::Tuple(tuple) = torch_save::load_file(&pt).unwrap() else {
        panic!("a tuple result");
    };
    assert_close(&tuple.items[1].to_tensor().unwrap(), &expected[1].1);
    // A tuple has no .npy form: an error that names the alternatives, after the run.
    let output = ferrojit(&[
        os("run"),
        cli_fixture("two_outputs.pt").as_os_str(),
        os("--inputs"),
        cli_fixture("scalar_x.npy").as_os_str(),
        os("--output"),
        scratch("two.npy").as_os_str(),
    ]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains(".npz"));
}

#[test]
fn a_bad_output_path_fails_before_the_model_runs() {
    let missing_dir = scratch("no_such_dir").join("out.pt");
    let unknown_extension = scratch("out.xyz");
    for output in [&missing_dir, &unknown_extension] {
        let start = Instant::now();
        let result = ferrojit(&[
            os("run"),
            // A model file that does not exist: the output is checked before it is opened.
            os("/nonexistent/model.pt"),
            os("--output"),
            output.as_os_str(),
        ]);
        assert!(!result.status.success());
        assert!(result.stdout.is_empty(), "no model output");
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert!(stderr.contains("cannot write output"), "{stderr}");
        assert!(!stderr.contains("cannot load model"), "{stderr}");
        assert!(start.elapsed() < Duration::from_secs(20));
        assert!(!output.exists());
    }
    // A writable path is probed without leaving a file behind when the run then fails.
    let fine = scratch("fine.json");
    let result = ferrojit(&[
        os("run"),
        os("/nonexistent/model.pt"),
        os("--output"),
        fine.as_os_str(),
    ]);
    assert!(!result.status.success());
    assert!(String::from_utf8_lossy(&result.stderr).contains("cannot load model"));
    assert!(!fine.exists());
}

#[test]
fn quiet_prints_nothing_and_output_prints_a_summary() {
    let (model, inputs) = (example("mlp.pt"), example("mlp_inputs.pt"));
    let args = |extra: &[&'static std::ffi::OsStr]| {
        let mut args = vec![
            os("run"),
            model.as_os_str(),
            os("--inputs"),
            inputs.as_os_str(),
        ];
        args.extend_from_slice(extra);
        args
    };
    let full = run_ok(&args(&[]));
    assert!(full.starts_with("tensor(["), "{full}");
    assert_eq!(run_ok(&args(&[os("--quiet")])), "");
    let output = scratch("quiet.pt");
    let output_arg: &'static std::ffi::OsStr =
        Box::leak(output.clone().into_os_string().into_boxed_os_str());
    assert_eq!(run_ok(&args(&[os("-q"), os("--output"), output_arg])), "");
    assert!(output.exists());
    let summary = run_ok(&args(&[os("--output"), output_arg]));
    assert_eq!(summary, "Tensor float32 [2, 3]\n");
}

#[test]
fn a_large_result_is_summarized() {
    // 64 rows: PyTorch's repr takes a line per row.
    let data: Vec<String> = (0..64 * 4)
        .map(|i| format!("{}", i as f64 / 100.0))
        .collect();
    let inputs = scratch("big_inputs.json");
    std::fs::write(
        &inputs,
        format!(
            r#"[{{"dtype": "float32", "shape": [64, 4], "data": [{}]}}, 0.5]"#,
            data.join(", ")
        ),
    )
    .unwrap();
    let printed = run_ok(&[
        os("run"),
        example("mlp.pt").as_os_str(),
        os("--inputs"),
        inputs.as_os_str(),
    ]);
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines[0], "Tensor float32 [64, 3]", "{printed}");
    assert!(lines.len() <= 3, "{printed}");
    assert!(lines[1].contains("lines as a repr"), "{printed}");
}

#[test]
fn inspect_defaults_to_the_summary_and_folds_repeated_attributes() {
    let default = run_ok(&[os("inspect"), example("mlp.pt").as_os_str()]);
    let summary = run_ok(&[
        os("inspect"),
        os("--summary"),
        example("mlp.pt").as_os_str(),
    ]);
    assert_eq!(default, summary);
    let lines: Vec<&str> = summary.lines().collect();
    // `training` is on every module with one value; an unset `_is_full_backward_hook` is
    // never shown.
    assert_eq!(lines[0], "all 4 modules: training=False", "{summary}");
    assert!(!summary.contains("_is_full_backward_hook"), "{summary}");
    assert!(!summary.contains("__torch__"), "{summary}");
    assert!(!summary.contains("___torch_mangle"), "{summary}");
    assert!(
        summary.contains("fc1: torch.nn.modules.linear.Linear"),
        "{summary}"
    );
}

#[test]
fn inspect_check_lists_missing_operators() {
    let output = ferrojit(&[
        os("inspect"),
        os("--check"),
        cli_fixture("missing_ops.pt").as_os_str(),
    ]);
    assert!(!output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("missing operator aten::sspaddmm: 1 call (MissingOps.forward 1)"),
        "{stdout}"
    );
    assert!(stdout.contains("missing operator aten::smm"), "{stdout}");
    assert!(stdout.contains("renormed"), "{stdout}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("2 operator(s) missing"), "{stderr}");

    assert!(
        stdout.contains("missing operator aten::smm: 1 call (MissingOps.renormed 1)"),
        "{stdout}"
    );

    let ok = run_ok(&[os("inspect"), os("--check"), example("mlp.pt").as_os_str()]);
    assert!(ok.starts_with("ok: "), "{ok}");
    let ok = run_ok(&[os("inspect"), os("--check"), example("mlp.pt2").as_os_str()]);
    assert!(ok.starts_with("ok: "), "{ok}");
}

/// One method calling two missing operators (one of them twice): the check lists both, with
/// the method and the number of calls, instead of stopping at the first call the compiler
/// cannot resolve.
#[test]
fn inspect_check_lists_every_missing_operator_of_one_method() {
    let output = ferrojit(&[
        os("inspect"),
        os("--check"),
        cli_fixture("missing_ops_one_method.pt").as_os_str(),
    ]);
    assert!(!output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "missing operator aten::smm: 1 call (MissingOpsInOneMethod.forward 1)",
            "missing operator aten::sspaddmm: 2 calls (MissingOpsInOneMethod.forward 2)",
        ],
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("2 operator(s) missing"), "{stderr}");
    assert!(stderr.contains("0 other compile failure(s)"), "{stderr}");
}

#[test]
fn an_onnx_file_gets_a_hint() {
    let onnx = cli_fixture("tiny_relu.onnx");
    // By extension, and by content under a misleading name.
    let renamed = scratch("tiny_relu.pt");
    std::fs::copy(&onnx, &renamed).unwrap();
    for model in [&onnx, &renamed] {
        for command in ["run", "inspect"] {
            let output = ferrojit(&[os(command), model.as_os_str()]);
            assert!(!output.status.success());
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(stderr.contains("this is an ONNX model"), "{stderr}");
            assert!(stderr.contains("torch.jit.script(model).save"), "{stderr}");
            assert!(stderr.contains("torch.export.save"), "{stderr}");
        }
    }
}

#[test]
fn state_dicts_and_pickled_modules_get_a_hint() {
    for (file, what) in [
        ("state_dict.pt", "a state dict"),
        ("pickled_module.pt", "torch.save(model)"),
    ] {
        let model = repo_root().join("tests/fixtures/not_models").join(file);
        let output = ferrojit(&[os("run"), model.as_os_str()]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(what), "{stderr}");
        assert!(stderr.contains("torch.jit.script(model).save"), "{stderr}");
    }
}

#[test]
fn bad_inputs_files_name_the_file_and_the_problem() {
    let broken = scratch("broken.npy");
    std::fs::write(&broken, b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'").unwrap();
    let bad_json = scratch("bad.json");
    std::fs::write(
        &bad_json,
        r#"[{"dtype": "float32", "shape": [3], "data": [1]}]"#,
    )
    .unwrap();
    for (path, problem) in [(&broken, "truncated"), (&bad_json, "shape")] {
        let output = ferrojit(&[
            os("run"),
            example("mlp.pt").as_os_str(),
            os("--inputs"),
            path.as_os_str(),
        ]);
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(&path.display().to_string()), "{stderr}");
        assert!(stderr.contains(problem), "{stderr}");
    }
}

#[test]
fn progress_shows_only_on_a_terminal() {
    let model = example("mlp.pt");
    let inputs = example("mlp_inputs.pt");
    let bench = |iterations: &str| {
        vec![
            env!("CARGO_BIN_EXE_ferrojit").to_string(),
            "bench".to_string(),
            model.display().to_string(),
            "--inputs".to_string(),
            inputs.display().to_string(),
            "--iters".to_string(),
            iterations.to_string(),
        ]
    };
    // Piped stderr: no spinner.
    let arguments = bench("3000");
    let piped = Command::new(&arguments[0])
        .args(&arguments[1..])
        .output()
        .unwrap();
    assert!(piped.status.success());
    assert!(
        piped.stderr.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&piped.stderr)
    );
    // On a terminal (util-linux `script` gives the command a pseudo-terminal), the round
    // counter shows while the rounds run.
    let has_script = Command::new("script").arg("--version").output().is_ok();
    if !has_script {
        eprintln!("skipped the terminal half: no `script` command");
        return;
    }
    let arguments = bench("20000");
    // A zero delay draws the line at once and on each round, so what the test sees does not
    // depend on how long the rounds take on this machine.
    let on_terminal = Command::new("script")
        .env("FERROJIT_PROGRESS_AFTER_MS", "0")
        .args(["-qec", &arguments.join(" "), "/dev/null"])
        .output()
        .unwrap();
    assert!(on_terminal.status.success());
    let text = String::from_utf8_lossy(&on_terminal.stdout);
    assert!(text.contains("round "), "{text}");
    assert!(text.contains("median_ms="), "{text}");
}
