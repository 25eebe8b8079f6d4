//! Tracing Rust code into a TorchScript module that `torch.jit.load` reads, as
//! `torch.jit.trace` does for Python: [`trace`] records a closure's operator calls,
//! [`trace_module`] a [`Module`] tree whose parameters become the traced module's attributes
//! (read with `prim::GetAttr`), and [`nn`] holds a few seeded layers to build one from.
//!
//! ```
//! use ferrojit::tracing::{nn, trace_module, Module, TracedTensor};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let model = nn::Sequential::new(vec![
//!     Box::new(nn::Linear::new(4, 3, 7)?),
//!     Box::new(nn::Layer::ReLU),
//! ]);
//! let traced = trace_module(&model, ferrojit::Tensor::from_vec(vec![0.5_f32; 8], &[2, 4])?)?;
//! assert!(traced.graph_text().contains("prim::GetAttr[name=\"weight\"]"));
//! // The trace runs on another batch size, as the model does eagerly.
//! let x = ferrojit::Tensor::from_vec(vec![0.25_f32; 20], &[5, 4])?;
//! let traced_output = traced.run(vec![x.clone().into()])?.to_tensor()?;
//! let eager_output = model.forward(&TracedTensor::new(x))?.tensor()?;
//! assert_eq!(traced_output.to_f64_vec(), eager_output.to_f64_vec());
//! # Ok(())
//! # }
//! ```

pub use ferrojit_tracer::closure_trace::{
    named_parameters, trace, trace_module, Module, TracedInt, TracedTensor,
};
pub use ferrojit_tracer::nn;
pub use ferrojit_tracer::{TraceError, TracedFunction};
