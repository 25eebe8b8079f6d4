//! The fine-tuning example (issue 23, item 8), run with a few steps: the loss falls, only
//! `fc` changes, and the saved archive reloads in ferrojit with the new `fc` weights and gives
//! the fine-tuned logits. (tests/fixtures/autograd/check_fine_tuned_in_pytorch.py checks the
//! same archive in PyTorch; its result is in tests/fixtures/COMPATIBILITY.md.)

use std::path::PathBuf;

#[allow(dead_code)]
#[path = "../examples/fine_tune/fine_tune.rs"]
mod fine_tune;

use fine_tune::{fine_tune, FineTuneSettings};

fn archive() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/autograd/resnet18_narrow.pt")
}

fn values(tensor: &ferrojit::Tensor) -> Vec<f32> {
    tensor
        .to_dtype(ferrojit::DType::Float32)
        .to_vec::<f32>()
        .expect("float values")
}

fn parameters(model: &ferrojit::Model) -> Vec<(String, Vec<f32>)> {
    model
        .torchscript_module()
        .expect("a TorchScript module")
        .named_parameters(true)
        .into_iter()
        .map(|(name, tensor)| (name, values(&tensor)))
        .collect()
}

#[test]
fn fine_tuning_the_last_layer_lowers_the_loss_and_saves_a_loadable_archive() {
    // FERROJIT_FINE_TUNE_KEEP=<folder> keeps the archive and its `.check.pt` there, for
    // check_fine_tuned_in_pytorch.py.
    let kept = std::env::var_os("FERROJIT_FINE_TUNE_KEEP").map(PathBuf::from);
    let folder = kept.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("ferrojit_fine_tune_{}", std::process::id()))
    });
    std::fs::create_dir_all(&folder).unwrap();
    let output = folder.join("fine_tuned.pt");
    let settings = FineTuneSettings {
        steps: 4,
        ..FineTuneSettings::default()
    };
    let report = fine_tune(&archive(), &output, &settings).expect("the example runs");
    assert_eq!(report.losses.len(), settings.steps + 1);
    assert_eq!(report.trained, vec!["fc.weight", "fc.bias"]);
    // Every step lowers the loss on the training batch, and the whole run by a real margin.
    for pair in report.losses.windows(2) {
        assert!(pair[1] < pair[0], "the loss rose: {:?}", report.losses);
    }
    let (first, last) = (report.losses[0], report.losses[settings.steps]);
    assert!(
        last < 0.8 * first,
        "the loss fell too little: {:?}",
        report.losses
    );

    let original = ferrojit::load(archive()).unwrap();
    let reloaded = ferrojit::load(&output).expect("the saved archive reloads");
    let (before, after) = (parameters(&original), parameters(&reloaded));
    assert_eq!(
        before.iter().map(|p| &p.0).collect::<Vec<_>>(),
        after.iter().map(|p| &p.0).collect::<Vec<_>>()
    );
    for ((name, old), (_, new)) in before.iter().zip(&after) {
        if name.starts_with("fc.") {
            assert_ne!(old, new, "{name} was not trained");
        } else {
            assert_eq!(old, new, "{name} changed though only fc trains");
        }
    }
    // The reloaded archive computes the fine-tuned model's logits.
    let logits = reloaded
        .forward(vec![report.images.clone().into()])
        .unwrap()
        .to_tensor()
        .unwrap();
    assert_eq!(logits.sizes(), report.logits.sizes());
    for (index, (a, b)) in values(&logits)
        .iter()
        .zip(values(&report.logits))
        .enumerate()
    {
        assert!(
            (a - b).abs() <= 1e-5 + 1e-5 * b.abs(),
            "logit {index}: {a} vs {b}"
        );
    }
    let check = ferrojit::IValue::tuple(vec![
        report.images.clone().into(),
        report.labels.clone().into(),
        report.logits.clone().into(),
    ]);
    ferrojit::save_values(&check, output.with_extension("check.pt")).unwrap();
    if kept.is_none() {
        std::fs::remove_dir_all(&folder).ok();
    }
}
