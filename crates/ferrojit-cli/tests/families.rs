//! Model families from outside ferrojit (issue 20, item 5): Hugging Face `transformers` models
//! (traced), `timm` models (scripted and traced) and an audio front end, built from configs with
//! random weights by tests/fixtures/families/generate.py and compared with what PyTorch
//! computed from the same archive (float: rtol 1e-4, atol 1e-5; integers exactly). The
//! committed subset always runs; the whole set (tests/fixtures/families_large/, rebuilt by
//! `generate.py --large`) runs in an ignored test that skips with a message when absent.
//! tests/fixtures/families/FAMILIES_RESULTS.md records the last full check.

use std::path::{Path, PathBuf};

use ferrojit_conformance::{compare_with, repo_root, require_at_least, Comparison};
use ferrojit_opt::graph_executor::SpecializingOptimizer;
use ferrojit_runtime::interpreter::RunOptions;
use ferrojit_runtime::IValue;
use ferrojit_serialize::import::load_module;
use ferrojit_serialize::torch_save;

const RTOL: f64 = 1e-4;
const ATOL: f64 = 1e-5;

fn families_dir() -> PathBuf {
    repo_root().join("tests/fixtures/families")
}

fn large_families_dir() -> PathBuf {
    repo_root().join("tests/fixtures/families_large")
}

/// Loads `dir/NAME.pt`, runs forward on `NAME.inputs.pt` and compares with
/// `NAME.expected.pt`; then runs a second load through the optimizing executor, which must
/// give exactly the interpreter's result.
fn run_family_model(dir: &Path, name: &str) -> Result<(), String> {
    let file = |suffix: &str| dir.join(format!("{name}{suffix}"));
    let read_arguments = || -> Result<Vec<IValue>, String> {
        Ok(
            match torch_save::load_file(&file(".inputs.pt"))
                .map_err(|e| format!("{name}: inputs: {e}"))?
            {
                IValue::Tuple(tuple) => tuple.items.to_vec(),
                other => vec![other],
            },
        )
    };
    let expected = torch_save::load_file(&file(".expected.pt"))
        .map_err(|e| format!("{name}: expected: {e}"))?;
    let loaded = load_module(&file(".pt")).map_err(|e| format!("{name}: load: {e}"))?;
    let actual = loaded
        .module
        .run_method_with_options("forward", read_arguments()?, &RunOptions::default())
        .map_err(|e| format!("{name}: forward: {e}"))?;
    compare_with(&actual, &expected, name, Comparison::models(RTOL, ATOL))
        .map_err(|problem| format!("{name}: mismatch: {problem}"))?;
    let reloaded = load_module(&file(".pt")).map_err(|e| format!("{name}: reload: {e}"))?;
    let optimized_options = RunOptions {
        optimizer: Some(SpecializingOptimizer::shared()),
        ..RunOptions::default()
    };
    let optimized = reloaded
        .module
        .run_method_with_options("forward", read_arguments()?, &optimized_options)
        .map_err(|e| format!("{name}: optimized forward: {e}"))?;
    compare_with(&optimized, &actual, name, Comparison::models(0.0, 0.0))
        .map_err(|problem| format!("{name}: optimized run differs: {problem}"))
}

fn check(name: &str) {
    if let Err(message) = run_family_model(&families_dir(), name) {
        panic!("{message}");
    }
}

#[test]
fn hugging_face_bert_traced() {
    check("hf_bert_traced");
}

/// Issue 20: a left-padded row's padded queries attend to no key; PyTorch's
/// scaled_dot_product_attention returns 0 for them, where ferrojit once gave NaN logits.
#[test]
fn hugging_face_gpt2_with_a_left_padded_mask_traced() {
    check("hf_gpt2_left_padded_traced");
}

#[test]
fn hugging_face_t5_encoder_decoder_traced() {
    check("hf_t5_traced");
}

#[test]
fn hugging_face_llama_style_decoder_left_padded_traced() {
    check("hf_llama_left_padded_traced");
}

/// Wav2Vec2's positional convolution is weight-normed: the trace calls `aten::_weight_norm`,
/// which ferrojit lacked.
#[test]
fn hugging_face_wav2vec2_traced_with_weight_norm() {
    check("hf_wav2vec2_traced");
}

/// Issue 20: timm keeps an `Enum` as a module attribute, which PyTorch pickles as the class
/// applied to its bare value; scripted ViT and Mixer failed to load on it.
#[test]
fn timm_vit_scripted_loads_its_enum_attribute() {
    check("timm_vit_tiny_patch16_224_scripted");
}

#[test]
fn timm_mixer_scripted() {
    check("timm_mixer_s16_224_scripted");
}

#[test]
fn timm_convnext_traced() {
    check("timm_convnext_atto_traced");
}

#[test]
fn timm_mobilenetv3_scripted() {
    check("timm_mobilenetv3_small_050_scripted");
}

/// Issue 20: torchvision's detection transform resizes with bilinear interpolation and
/// recompute_scale_factor=True; ferrojit was off by about 2e-5 on data in [0, 1].
#[test]
fn bilinear_resize_with_recomputed_scale_factor() {
    check("resize_bilinear_recompute_scale_scripted");
}

/// Models of families_large that ferrojit cannot run yet, each with the reason
/// FAMILIES_RESULTS.md gives. The large test checks that each still fails (so that a fix
/// removes it from this list) and that every other model passes.
const KNOWN_GAPS: &[(&str, &str)] = &[];

/// Every model of tests/fixtures/families_large that is present. Slow: run with
/// `cargo test --release -p ferrojit-cli --test families -- --ignored`.
#[test]
#[ignore = "slow: runs tests/fixtures/families_large (build it with generate.py --large)"]
fn large_family_models_match_pytorch() {
    let dir = large_families_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!(
            "skipped: {} is absent; run `python tests/fixtures/families/generate.py --large` to build it",
            dir.display()
        );
        return;
    };
    let mut names: Vec<String> = entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter_map(|file| {
            let stem = file.strip_suffix(".pt")?;
            (!stem.ends_with(".inputs") && !stem.ends_with(".expected")).then(|| stem.to_string())
        })
        .collect();
    names.sort();
    if let Err(message) = require_at_least(&dir.display().to_string(), names.len(), MINIMUM_LARGE) {
        panic!("{message}: rebuild it with generate.py --large");
    }
    let mut failures = Vec::new();
    for name in &names {
        let outcome = run_family_model(&dir, name);
        match (
            KNOWN_GAPS.iter().find(|(gap, _)| *gap == name.as_str()),
            outcome,
        ) {
            (None, Err(message)) => failures.push(message),
            (Some((_, reason)), Ok(())) => failures.push(format!(
                "{name} passes now: remove it from KNOWN_GAPS ({reason})"
            )),
            _ => {}
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} family models differ from what FAMILIES_RESULTS.md expects:\n{}",
        failures.len(),
        names.len(),
        failures.join("\n")
    );
}

/// How many models a whole families_large holds (the saved rows of FAMILIES_RESULTS.md).
const MINIMUM_LARGE: usize = 94;
