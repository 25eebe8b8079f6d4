//! The `TracerWarning` texts, word for word as PyTorch 2.15 gives them, so that a user who
//! knows PyTorch's warnings recognizes ferrojit's.

/// What a tensor (or a traced size) was converted to: PyTorch's word for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conversion {
    Boolean,
    Integer,
    Float,
    Number,
    List,
    Index,
}

impl Conversion {
    fn word(self) -> &'static str {
        match self {
            Conversion::Boolean => "boolean",
            Conversion::Integer => "integer",
            Conversion::Float => "float",
            Conversion::Number => "number",
            Conversion::List => "list",
            Conversion::Index => "index",
        }
    }
}

/// Control flow or a number now depends on tensor data the trace cannot record.
pub fn python_dataflow(conversion: Conversion) -> String {
    format!(
        "Converting a tensor to a Python {} might cause the trace to be incorrect. We can't \
         record the data flow of Python values, so this value will be treated as a constant \
         in the future. This means that the trace might not generalize to other inputs!",
        conversion.word()
    )
}

/// `len(tensor)`: the length becomes a constant.
pub fn len_of_tensor() -> String {
    "Using len to get tensor shape might cause the trace to be incorrect. Recommended usage \
     would be tensor.shape[0]. Passing a tensor of different shape might lead to errors or \
     silently give incorrect results."
        .to_string()
}

/// `torch.tensor(...)` inside a trace: its value is baked in.
pub fn tensor_constant() -> String {
    "torch.tensor results are registered as constants in the trace. You can safely ignore \
     this warning if you use this function to create tensors out of constant variables that \
     would be the same every time you call this function. In any other case, this might \
     cause the trace to be incorrect."
        .to_string()
}
