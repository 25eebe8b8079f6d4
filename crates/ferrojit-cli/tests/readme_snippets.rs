//! Every fenced code block of README.md is tested, here or beside the code it shows: the
//! quick start's `cargo run … -p ferrojit-cli -- ARGS` line runs the `ferrojit` binary on
//! those arguments, the command synopsis names only real subcommands, and the server
//! snippet starts `ferrojit serve` and sends the `curl` request. The README is parsed when
//! the tests run, so an edit that breaks a snippet fails here. Blocks tested elsewhere: the
//! ```rust and ```toml blocks and the `run_any_model` lines
//! (crates/ferrojit/tests/readme_example.rs), the ```python block
//! (python/tests/test_readme.py). Exempt lines are listed in `EXEMPT_LINES` with the reason.

mod common;

#[path = "../../ferrojit/tests/support/readme_fences.rs"]
mod readme_fences;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use common::repo_root;
use ferrojit_serialize::array_files::read_npy;
use ferrojit_serialize::torch_save;

/// Shell lines not run by any test, each with the reason.
const EXEMPT_LINES: &[(&str, &str)] = &[
    (
        "cargo test --workspace",
        "the test suite itself: running it from a test would recurse",
    ),
    (
        "pip install maturin",
        "installs from PyPI; python/run_tests.sh installs maturin the same way and builds \
         the wheel, then runs python/tests (test_readme.py runs the ```python block)",
    ),
    (
        "cd python && maturin build --release --out dist && pip install dist/ferrojit-*.whl",
        "the wheel build of python/run_tests.sh (there in the dev profile, to save time)",
    ),
];

/// Lines run by crates/ferrojit/tests/readme_example.rs.
const RUN_ANY_MODEL_PREFIX: &str = "cargo run -p ferrojit --example run_any_model -- ";

/// The fenced blocks of README.md: (info string, body), in order.
fn readme_blocks() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md reads");
    readme_fences::fenced_blocks(&text)
}

/// The ```sh blocks' commands: continuation lines (a `curl … -d '…` body spanning lines)
/// joined to their command.
fn shell_commands() -> Vec<String> {
    let mut commands = Vec::new();
    for (info, body) in readme_blocks() {
        if info != "sh" {
            continue;
        }
        let mut current = String::new();
        for line in body.lines() {
            if !current.is_empty() {
                current.push('\n');
            }
            current.push_str(line);
            // A command ends where its single quotes balance.
            if current.matches('\'').count().is_multiple_of(2) {
                if !current.trim().is_empty() {
                    commands.push(current.trim().to_string());
                }
                current.clear();
            }
        }
        assert!(
            current.is_empty(),
            "unbalanced quote in a ```sh block: {current}"
        );
    }
    commands
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("readme_snippets");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

/// Runs the `ferrojit` binary from the repository root, as the README's reader does.
fn ferrojit(arguments: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferrojit"))
        .args(arguments)
        .current_dir(repo_root())
        .output()
        .expect("ferrojit runs")
}

fn split_words(command: &str) -> Vec<String> {
    command.split_whitespace().map(str::to_string).collect()
}

#[test]
fn every_readme_block_is_tested_somewhere() {
    let mut kinds = Vec::new();
    for (info, body) in readme_blocks() {
        match info.as_str() {
            "sh" | "rust" | "toml" | "python" => kinds.push(info.clone()),
            // The command synopsis (see `the_synopsis_names_real_subcommands`).
            "" if body.starts_with("ferrojit run ") => kinds.push("synopsis".to_string()),
            other => panic!("README.md block ```{other} has no test: add one\n{body}"),
        }
    }
    for kind in ["sh", "rust", "toml", "python", "synopsis"] {
        assert!(kinds.iter().any(|k| k == kind), "no ```{kind} block left");
    }
    for command in shell_commands() {
        let handled = command.starts_with("cargo run --release -p ferrojit-cli -- ")
            || command.starts_with(RUN_ANY_MODEL_PREFIX)
            || command.starts_with("ferrojit serve ")
            || command.starts_with("curl ")
            || EXEMPT_LINES.iter().any(|(line, _)| *line == command);
        assert!(
            handled,
            "README shell line has no test and no exemption: {command}"
        );
    }
}

#[test]
fn the_quick_start_command_runs() {
    const PREFIX: &str = "cargo run --release -p ferrojit-cli -- ";
    let commands: Vec<String> = shell_commands()
        .into_iter()
        .filter(|command| command.starts_with(PREFIX))
        .collect();
    assert_eq!(commands.len(), 1, "{commands:?}");
    let mut arguments = split_words(&commands[0][PREFIX.len()..]);
    // The README writes into the repository's target/; the test writes into its own
    // scratch folder instead.
    let output_path = scratch("mlp_out.pt");
    let at = arguments
        .iter()
        .position(|argument| argument == "--output")
        .expect("the quick start writes --output");
    assert_eq!(arguments[at + 1], "target/mlp_out.pt");
    arguments[at + 1] = output_path.to_string_lossy().into_owned();

    let output = ferrojit(&arguments);
    assert!(
        output.status.success(),
        "{arguments:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    // "prints its dtype and shape": one short line, not the values.
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(
        stdout.contains("float32") && stdout.contains("[2, 3]"),
        "{stdout}"
    );
    // The file holds PyTorch's result (tests/fixtures/cli_inputs/generate.py).
    let written = torch_save::load_file(&output_path).expect("torch.load-able output");
    let written = written.to_tensor().unwrap();
    let expected = read_npy(
        &std::fs::read(repo_root().join("tests/fixtures/cli_inputs/mlp_expected.npy")).unwrap(),
    )
    .unwrap();
    assert_eq!(written.sizes(), expected.sizes());
    for (a, e) in written.to_f64_vec().iter().zip(expected.to_f64_vec()) {
        assert!((a - e).abs() <= 1e-6 + 1e-5 * e.abs(), "{a} vs {e}");
    }

    // "drop --output to print the values".
    arguments.drain(at..at + 2);
    let output = ferrojit(&arguments);
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("tensor("), "{stdout}");
}

#[test]
fn the_synopsis_names_real_subcommands() {
    let synopsis = readme_blocks()
        .into_iter()
        .find(|(info, body)| info.is_empty() && body.starts_with("ferrojit run "))
        .expect("the command synopsis")
        .1;
    let help = ferrojit(&["--help".to_string()]);
    let help = String::from_utf8_lossy(&help.stdout).to_string();
    // One entry per `ferrojit SUB …` line, with its indented continuation lines.
    let mut entries: Vec<Vec<String>> = Vec::new();
    for line in synopsis.lines() {
        let trimmed = line.trim().trim_start_matches("(or: ");
        let words = split_words(trimmed);
        if words.first().map(String::as_str) == Some("ferrojit") {
            entries.push(words);
        } else if let Some(last) = entries.last_mut() {
            last.extend(words);
        }
    }
    let named = entries.len();
    for words in &entries {
        let subcommand = &words[1];
        assert!(
            help.lines()
                .any(|line| line.trim_start().starts_with(&format!("{subcommand} "))),
            "README's synopsis shows `ferrojit {subcommand}`, which --help lacks:\n{help}"
        );
        // Every --flag the synopsis gives the subcommand is one its --help knows.
        let sub_help = ferrojit(&[subcommand.clone(), "--help".to_string()]);
        let sub_help = String::from_utf8_lossy(&sub_help.stdout).to_string();
        for word in &words[2..] {
            let flag = word
                .trim_start_matches(['[', '('])
                .split(|c: char| !(c.is_alphanumeric() || c == '-'))
                .next()
                .unwrap_or("");
            if flag.starts_with("--") && flag.len() > 2 {
                assert!(
                    sub_help.contains(flag),
                    "README's synopsis gives `ferrojit {subcommand} {flag}`, unknown to it"
                );
            }
        }
    }
    assert!(named >= 10, "{synopsis}");
}

/// Kills the server this test started when the test ends, passing or not.
struct ServerProcess(Child);

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn the_serve_snippet_answers_the_curl_request() {
    let commands = shell_commands();
    let serve = commands
        .iter()
        .find(|command| command.starts_with("ferrojit serve "))
        .expect("README starts a server");
    let mut arguments = split_words(serve.trim_end_matches('&'));
    arguments.remove(0);
    // The README's port, 8000, may be taken on a test machine: use a free one, and the
    // same one in the request.
    let at = arguments
        .iter()
        .position(|a| a == "--port")
        .expect("--port");
    let readme_port = arguments[at + 1].clone();
    let port = free_port();
    arguments[at + 1] = port.to_string();
    let server = Command::new(env!("CARGO_BIN_EXE_ferrojit"))
        .args(&arguments)
        .current_dir(repo_root())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("ferrojit serve starts");
    let _server = ServerProcess(server);
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let started = Instant::now();
    while TcpStream::connect(address).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the server never listened on {address}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let curls: Vec<&String> = commands.iter().filter(|c| c.starts_with("curl ")).collect();
    assert_eq!(curls.len(), 1, "{curls:?}");
    let curl = curls[0];
    let url = curl
        .split_whitespace()
        .find(|word| word.starts_with("localhost:"))
        .expect("a localhost URL");
    let path = url
        .strip_prefix(&format!("localhost:{readme_port}"))
        .expect("the request goes to the server's port");
    let body = curl
        .split_once("-d '")
        .and_then(|(_, rest)| rest.rsplit_once('\''))
        .map(|(body, _)| body)
        .expect("a -d '…' body");
    let response = ferrojit_serve::client::send(
        address,
        "POST",
        path,
        &[("content-type", "application/json")],
        body.as_bytes(),
    )
    .expect("the request is answered");
    let text = String::from_utf8_lossy(&response.body).to_string();
    assert_eq!(response.status, 200, "{text}");
    let reply: serde_json::Value = serde_json::from_str(&text).unwrap();
    let output = &reply["outputs"][0];
    assert_eq!(output["datatype"], "FP32", "{text}");
    assert_eq!(output["shape"], serde_json::json!([1, 3]), "{text}");
    let expected = read_npy(
        &std::fs::read(repo_root().join("tests/fixtures/cli_inputs/readme_serve_expected.npy"))
            .unwrap(),
    )
    .unwrap();
    let actual: Vec<f64> = output["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let expected = expected.to_f64_vec();
    assert_eq!(actual.len(), expected.len());
    for (a, e) in actual.iter().zip(&expected) {
        assert!((a - e).abs() <= 1e-6 + 1e-5 * e.abs(), "{a} vs {e}");
    }
}
