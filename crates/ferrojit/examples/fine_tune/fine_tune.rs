//! Fine-tunes the last layer (`fc`) of a loaded resnet18 TorchScript archive with ferrojit's
//! Rust autograd API (`ferrojit::autograd`), on data made here from a seed, and saves the
//! result as an archive that PyTorch loads. `main.rs` is the command line; the facade's `fine_tune` test calls
//! [`fine_tune`] with a few steps.

use std::path::{Path, PathBuf};

use ferrojit::autograd::{self, GradOptions};
use ferrojit::{IValue, Module, Tensor};

/// What one run of the example did.
#[derive(Debug, Clone)]
pub struct FineTuneReport {
    /// The training loss before each step, then after the last one (`steps + 1` values).
    pub losses: Vec<f64>,
    /// The dotted names of the parameters that were trained.
    pub trained: Vec<String>,
    /// Where the fine-tuned archive was written.
    pub saved: PathBuf,
    /// The images the losses were measured on (`[batch, 3, size, size]`), the labels, and
    /// the fine-tuned model's logits for them, so a check in PyTorch can rerun them.
    pub images: Tensor,
    pub labels: Tensor,
    pub logits: Tensor,
}

/// Settings of a run.
#[derive(Debug, Clone)]
pub struct FineTuneSettings {
    pub steps: usize,
    pub learning_rate: f64,
    pub batch: usize,
    pub image_size: usize,
    pub classes: usize,
    pub seed: u64,
}

impl Default for FineTuneSettings {
    fn default() -> FineTuneSettings {
        FineTuneSettings {
            steps: 20,
            learning_rate: 0.2,
            batch: 16,
            image_size: 32,
            classes: 10,
            seed: 23,
        }
    }
}

/// An error of the example, naming the step that failed.
pub type Failure = String;

fn failed<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> Failure {
    move |error| format!("{what}: {error}")
}

/// A small deterministic generator (xorshift64*), so the data does not depend on a crate.
struct Seeded(u64);

impl Seeded {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [-1, 1).
    fn symmetric(&mut self) -> f32 {
        ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

/// Images and class labels for training: each class has its own mean pattern, and each
/// image is its class's pattern plus noise, so `fc` has something to learn.
fn make_data(settings: &FineTuneSettings) -> Result<(Tensor, Tensor), Failure> {
    let mut random = Seeded(settings.seed.max(1));
    let pixels = 3 * settings.image_size * settings.image_size;
    let patterns: Vec<Vec<f32>> = (0..settings.classes)
        .map(|_| (0..pixels).map(|_| random.symmetric()).collect())
        .collect();
    let mut images = Vec::with_capacity(settings.batch * pixels);
    let mut labels = Vec::with_capacity(settings.batch);
    for index in 0..settings.batch {
        let label = index % settings.classes;
        labels.push(label as i64);
        images.extend(
            patterns[label]
                .iter()
                .map(|mean| mean + 0.5 * random.symmetric()),
        );
    }
    let size = settings.image_size;
    let images =
        Tensor::from_vec(images, &[settings.batch, 3, size, size]).map_err(failed("the images"))?;
    let labels = Tensor::from_vec(labels, &[settings.batch]).map_err(failed("the labels"))?;
    Ok((images, labels))
}

/// The attribute at a dotted path (`layer1.0.conv1.weight`) of `module`.
fn attribute_at(module: &Module, path: &str) -> Result<IValue, Failure> {
    let mut current = module.clone();
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        let value = current
            .attr(part)
            .map_err(|e| format!("attribute {path}: {e}"))?;
        if parts.peek().is_none() {
            return Ok(value);
        }
        match value {
            IValue::Object(object) => current = Module::new(object),
            other => return Err(format!("{path}: '{part}' is a {}", other.tag_name())),
        }
    }
    Err(format!("empty attribute path '{path}'"))
}

/// Marks `fc.*` as requiring grad and every other parameter as not (a loaded archive keeps
/// `requires_grad` as PyTorch saved it, i.e. on). Returns the trained parameters' handles.
fn mark_trainable(module: &Module) -> Result<Vec<(String, IValue)>, Failure> {
    let mut trained = Vec::new();
    for (name, _) in module.named_parameters(true) {
        let value = attribute_at(module, &name)?;
        let trainable = name.starts_with("fc.");
        autograd::set_requires_grad(&value, trainable).map_err(failed("a parameter"))?;
        if trainable {
            trained.push((name, value.clone()));
        }
    }
    if trained.is_empty() {
        return Err("the archive has no `fc` parameters to train".to_string());
    }
    Ok(trained)
}

/// `cross_entropy(model(images), labels)`, recorded for backward while grad mode is on.
fn loss_of(module: &Module, images: &Tensor, labels: &Tensor) -> Result<IValue, Failure> {
    let logits = module
        .forward(vec![IValue::from(images.clone())])
        .map_err(failed("forward"))?;
    autograd::call_operator(
        "aten::cross_entropy_loss",
        vec![
            logits,
            IValue::from(labels.clone()),
            IValue::None,
            IValue::Int(1), // reduction: mean
            IValue::Int(-100),
            IValue::Double(0.0),
        ],
    )
    .map_err(failed("cross_entropy_loss"))
}

fn scalar(value: &IValue) -> Result<f64, Failure> {
    let tensor = value.to_tensor().map_err(failed("the loss"))?;
    let values = tensor
        .to_dtype(ferrojit::DType::Float64)
        .to_vec::<f64>()
        .map_err(failed("the loss"))?;
    values
        .first()
        .copied()
        .ok_or_else(|| "the loss is empty".to_string())
}

/// Loads `archive`, trains its `fc` for `settings.steps` SGD steps (`loss.backward()`, then
/// `p -= lr * p.grad` under `no_grad`), and saves the module to `output`.
pub fn fine_tune(
    archive: &Path,
    output: &Path,
    settings: &FineTuneSettings,
) -> Result<FineTuneReport, Failure> {
    ferrojit::enable_autograd().map_err(failed("enabling autograd"))?;
    let loaded =
        ferrojit_serialize::import::load_module(archive).map_err(failed("loading the archive"))?;
    let module = loaded.module.clone();
    let trained = mark_trainable(&module)?;
    let (images, labels) = make_data(settings)?;
    let _recording = autograd::enable_grad();
    let mut losses = Vec::with_capacity(settings.steps + 1);
    for _ in 0..settings.steps {
        let loss = loss_of(&module, &images, &labels)?;
        losses.push(scalar(&loss)?);
        autograd::backward(&[loss], GradOptions::default()).map_err(failed("backward"))?;
        // The update must not be recorded: PyTorch's `with torch.no_grad():`.
        let _no_grad = autograd::no_grad();
        for (name, parameter) in &trained {
            let gradient = autograd::grad_of(parameter)
                .map_err(failed("a parameter"))?
                .ok_or_else(|| format!("{name} has no .grad after backward"))?;
            autograd::call_operator(
                "aten::sub_.Tensor",
                vec![
                    parameter.clone(),
                    gradient,
                    IValue::Double(settings.learning_rate),
                ],
            )
            .map_err(failed("the SGD update"))?;
            // `optimizer.zero_grad(set_to_none=True)`.
            autograd::set_grad(parameter, None).map_err(failed("a parameter"))?;
        }
    }
    let logits = {
        let _no_grad = autograd::no_grad();
        let loss = loss_of(&module, &images, &labels)?;
        losses.push(scalar(&loss)?);
        module
            .forward(vec![IValue::from(images.clone())])
            .and_then(|value| value.to_tensor())
            .map_err(failed("forward"))?
    };
    ferrojit_serialize::export::save_module(&loaded, output)
        .map_err(failed("saving the archive"))?;
    Ok(FineTuneReport {
        losses,
        trained: trained.into_iter().map(|(name, _)| name).collect(),
        saved: output.to_path_buf(),
        images,
        labels,
        logits: Tensor::clone(&logits),
    })
}
