//! A small `torch.nn` surface for [`crate::closure_trace`]: layers with seeded weights whose
//! parameters become the traced module's attributes, named and nested as PyTorch names
//! them (`__torch__.torch.nn.modules.linear.Linear`, a `Sequential`'s children `0`, `1`, …).
//! Initialization follows PyTorch's bounds (uniform in ±1/√fan_in for `Linear` and
//! `Conv2d`, ones and zeros for `LayerNorm`) from a fixed-seed generator, so that the same
//! seed gives the same model on every machine; it does not reproduce PyTorch's numbers.

use ferrojit_tensor::Tensor;

use crate::closure_trace::{Module, TracedTensor};
use crate::error::{Result, TraceError};

/// Numbers in [-1, 1) from a xorshift generator: deterministic and platform-independent.
#[derive(Debug, Clone)]
pub struct SeededUniform {
    state: u64,
}

impl SeededUniform {
    /// A generator for `seed` (0 is replaced by 1: xorshift must not start at zero).
    pub fn new(seed: u64) -> SeededUniform {
        SeededUniform { state: seed.max(1) }
    }

    /// The next number in [-1, 1); the top 24 bits make it exact in `f32`.
    pub fn next_unit(&mut self) -> f32 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        ((self.state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    /// A tensor of `sizes` with values uniform in [-bound, bound).
    pub fn tensor(&mut self, sizes: &[usize], bound: f32) -> Result<Tensor> {
        let count = sizes.iter().product();
        let values: Vec<f32> = (0..count).map(|_| self.next_unit() * bound).collect();
        Tensor::from_vec(values, sizes).map_err(|error| TraceError::Runtime {
            node: "nn initialization".to_string(),
            location: String::new(),
            message: error.to_string(),
        })
    }
}

fn filled(sizes: &[usize], value: f32) -> Result<Tensor> {
    let count = sizes.iter().product();
    Tensor::from_vec(vec![value; count], sizes).map_err(|error| TraceError::Runtime {
        node: "nn initialization".to_string(),
        location: String::new(),
        message: error.to_string(),
    })
}

fn refuse(what: String) -> TraceError {
    TraceError::Unsupported {
        what,
        location: String::new(),
    }
}

/// `nn.Linear(in_features, out_features)`.
#[derive(Debug, Clone)]
pub struct Linear {
    pub weight: TracedTensor,
    pub bias: TracedTensor,
}

impl Linear {
    /// Weights and bias uniform in ±1/√in_features, from `seed`.
    pub fn new(in_features: usize, out_features: usize, seed: u64) -> Result<Linear> {
        if in_features == 0 || out_features == 0 {
            return Err(refuse(format!(
                "a Linear({in_features}, {out_features}) (features must be positive)"
            )));
        }
        let mut random = SeededUniform::new(seed);
        let bound = 1.0 / (in_features as f32).sqrt();
        Ok(Linear {
            weight: TracedTensor::parameter(random.tensor(&[out_features, in_features], bound)?),
            bias: TracedTensor::parameter(random.tensor(&[out_features], bound)?),
        })
    }
}

impl Module for Linear {
    fn qualified_name(&self) -> String {
        "__torch__.torch.nn.modules.linear.Linear".to_string()
    }
    fn parameters(&self) -> Vec<(String, TracedTensor)> {
        vec![
            ("weight".to_string(), self.weight.clone()),
            ("bias".to_string(), self.bias.clone()),
        ]
    }
    fn forward(&self, input: &TracedTensor) -> Result<TracedTensor> {
        input.linear(&self.weight, Some(&self.bias))
    }
}

/// `nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding)` (square kernel,
/// no dilation, one group).
#[derive(Debug, Clone)]
pub struct Conv2d {
    pub weight: TracedTensor,
    pub bias: TracedTensor,
    pub stride: i64,
    pub padding: i64,
}

impl Conv2d {
    /// Weights and bias uniform in ±1/√(in_channels·kernel²), from `seed`.
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel_size: usize,
        stride: i64,
        padding: i64,
        seed: u64,
    ) -> Result<Conv2d> {
        if in_channels == 0 || out_channels == 0 || kernel_size == 0 || stride <= 0 || padding < 0 {
            return Err(refuse(format!(
                "a Conv2d({in_channels}, {out_channels}, kernel_size={kernel_size}, \
                 stride={stride}, padding={padding}) (sizes and stride must be positive, \
                 padding not negative)"
            )));
        }
        let mut random = SeededUniform::new(seed);
        let fan_in = in_channels * kernel_size * kernel_size;
        let bound = 1.0 / (fan_in as f32).sqrt();
        Ok(Conv2d {
            weight: TracedTensor::parameter(random.tensor(
                &[out_channels, in_channels, kernel_size, kernel_size],
                bound,
            )?),
            bias: TracedTensor::parameter(random.tensor(&[out_channels], bound)?),
            stride,
            padding,
        })
    }
}

impl Module for Conv2d {
    fn qualified_name(&self) -> String {
        "__torch__.torch.nn.modules.conv.Conv2d".to_string()
    }
    fn parameters(&self) -> Vec<(String, TracedTensor)> {
        vec![
            ("weight".to_string(), self.weight.clone()),
            ("bias".to_string(), self.bias.clone()),
        ]
    }
    fn forward(&self, input: &TracedTensor) -> Result<TracedTensor> {
        input.conv2d(
            &self.weight,
            Some(&self.bias),
            [self.stride; 2],
            [self.padding; 2],
            [1, 1],
            1,
        )
    }
}

/// `nn.LayerNorm(normalized_shape)` with `eps = 1e-5`, weight ones and bias zeros.
#[derive(Debug, Clone)]
pub struct LayerNorm {
    pub normalized_shape: Vec<i64>,
    pub weight: TracedTensor,
    pub bias: TracedTensor,
    pub eps: f64,
}

impl LayerNorm {
    /// PyTorch's initialization: weight ones, bias zeros.
    pub fn new(normalized_shape: &[usize]) -> Result<LayerNorm> {
        if normalized_shape.is_empty() || normalized_shape.contains(&0) {
            return Err(refuse(format!(
                "a LayerNorm({normalized_shape:?}) (the shape must be non-empty and positive)"
            )));
        }
        Ok(LayerNorm {
            normalized_shape: normalized_shape.iter().map(|&s| s as i64).collect(),
            weight: TracedTensor::parameter(filled(normalized_shape, 1.0)?),
            bias: TracedTensor::parameter(filled(normalized_shape, 0.0)?),
            eps: 1e-5,
        })
    }
}

impl Module for LayerNorm {
    fn qualified_name(&self) -> String {
        "__torch__.torch.nn.modules.normalization.LayerNorm".to_string()
    }
    fn parameters(&self) -> Vec<(String, TracedTensor)> {
        vec![
            ("weight".to_string(), self.weight.clone()),
            ("bias".to_string(), self.bias.clone()),
        ]
    }
    fn forward(&self, input: &TracedTensor) -> Result<TracedTensor> {
        input.layer_norm(
            &self.normalized_shape,
            Some(&self.weight),
            Some(&self.bias),
            self.eps,
        )
    }
}

/// The parameterless layers: activations, pooling, flattening.
#[derive(Debug, Clone)]
pub enum Layer {
    /// `nn.ReLU()`.
    ReLU,
    /// `nn.GELU()`.
    GELU,
    /// `nn.Sigmoid()`.
    Sigmoid,
    /// `nn.Tanh()`.
    Tanh,
    /// `nn.Softmax(dim)`.
    Softmax(i64),
    /// `nn.MaxPool2d(kernel_size, stride)`.
    MaxPool2d { kernel_size: i64, stride: i64 },
    /// `nn.AdaptiveAvgPool2d((height, width))`.
    AdaptiveAvgPool2d(i64, i64),
    /// `nn.Flatten(start_dim, end_dim)`.
    Flatten(i64, i64),
}

impl Module for Layer {
    fn qualified_name(&self) -> String {
        let (file, class) = match self {
            Layer::ReLU => ("activation", "ReLU"),
            Layer::GELU => ("activation", "GELU"),
            Layer::Sigmoid => ("activation", "Sigmoid"),
            Layer::Tanh => ("activation", "Tanh"),
            Layer::Softmax(_) => ("activation", "Softmax"),
            Layer::MaxPool2d { .. } => ("pooling", "MaxPool2d"),
            Layer::AdaptiveAvgPool2d(..) => ("pooling", "AdaptiveAvgPool2d"),
            Layer::Flatten(..) => ("flatten", "Flatten"),
        };
        format!("__torch__.torch.nn.modules.{file}.{class}")
    }
    fn forward(&self, input: &TracedTensor) -> Result<TracedTensor> {
        match self {
            Layer::ReLU => input.relu(),
            Layer::GELU => input.gelu(),
            Layer::Sigmoid => input.sigmoid(),
            Layer::Tanh => input.tanh(),
            Layer::Softmax(dim) => input.softmax(*dim),
            Layer::MaxPool2d {
                kernel_size,
                stride,
            } => input.max_pool2d([*kernel_size; 2], [*stride; 2], [0, 0]),
            Layer::AdaptiveAvgPool2d(height, width) => input.adaptive_avg_pool2d([*height, *width]),
            Layer::Flatten(start, end) => input.flatten(*start, *end),
        }
    }
}

/// `nn.Sequential(...)`: children named `0`, `1`, …, applied in order.
pub struct Sequential {
    pub layers: Vec<Box<dyn Module>>,
}

impl Sequential {
    /// A sequence of layers.
    pub fn new(layers: Vec<Box<dyn Module>>) -> Sequential {
        Sequential { layers }
    }
}

impl Module for Sequential {
    fn qualified_name(&self) -> String {
        "__torch__.torch.nn.modules.container.Sequential".to_string()
    }
    fn children(&self) -> Vec<(String, &dyn Module)> {
        self.layers
            .iter()
            .enumerate()
            .map(|(index, layer)| (index.to_string(), layer.as_ref()))
            .collect()
    }
    fn forward(&self, input: &TracedTensor) -> Result<TracedTensor> {
        let mut value = input.clone();
        for layer in &self.layers {
            value = layer.forward(&value)?;
        }
        Ok(value)
    }
}
