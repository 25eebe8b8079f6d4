//! The Open Inference Protocol's tensor data types and their ferrojit dtypes.

use ferrojit::DType;

/// A tensor data type as the v2 protocol names it (`FP32`, `INT64`, `BYTES`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Datatype {
    /// A numeric or boolean tensor stored as ferrojit's dtype.
    Numeric(DType),
    /// Byte strings: each element is a length-prefixed run of bytes (a `str` argument).
    Bytes,
}

/// The protocol's names, paired with ferrojit's dtypes, in the specification's order.
const NUMERIC_NAMES: [(&str, DType); 10] = [
    ("BOOL", DType::Bool),
    ("UINT8", DType::UInt8),
    ("INT8", DType::Int8),
    ("INT16", DType::Int16),
    ("INT32", DType::Int32),
    ("INT64", DType::Int64),
    ("FP16", DType::Float16),
    ("BF16", DType::BFloat16),
    ("FP32", DType::Float32),
    ("FP64", DType::Float64),
];

/// The names a request may use, for error messages.
pub const SUPPORTED_NAMES: &str =
    "BOOL, UINT8, INT8, INT16, INT32, INT64, FP16, BF16, FP32, FP64, BYTES";

impl Datatype {
    /// Parses a protocol name; `None` for names the protocol does not define or ferrojit
    /// has no dtype for (`UINT16`, `UINT32`, `UINT64`).
    pub fn parse(name: &str) -> Option<Datatype> {
        if name == "BYTES" {
            return Some(Datatype::Bytes);
        }
        NUMERIC_NAMES
            .iter()
            .find(|(candidate, _)| *candidate == name)
            .map(|&(_, dtype)| Datatype::Numeric(dtype))
    }

    /// The datatype of a ferrojit tensor; `None` for complex dtypes, which the protocol
    /// cannot carry.
    pub fn of_dtype(dtype: DType) -> Option<Datatype> {
        NUMERIC_NAMES
            .iter()
            .any(|&(_, candidate)| candidate == dtype)
            .then_some(Datatype::Numeric(dtype))
    }

    /// The protocol's name.
    pub fn name(self) -> &'static str {
        match self {
            Datatype::Bytes => "BYTES",
            Datatype::Numeric(dtype) => NUMERIC_NAMES
                .iter()
                .find(|&&(_, candidate)| candidate == dtype)
                .map(|&(name, _)| name)
                .unwrap_or("UNSUPPORTED"),
        }
    }

    /// Bytes per element in the binary tensor extension; `None` for BYTES (variable).
    pub fn element_size(self) -> Option<usize> {
        match self {
            Datatype::Bytes => None,
            Datatype::Numeric(dtype) => Some(match dtype {
                DType::Bool | DType::UInt8 | DType::Int8 => 1,
                DType::Int16 | DType::Float16 | DType::BFloat16 => 2,
                DType::Int32 | DType::Float32 => 4,
                DType::Int64 | DType::Float64 => 8,
                DType::ComplexFloat => 8,
                DType::ComplexDouble => 16,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_round_trips_and_unknown_names_are_refused() {
        for name in SUPPORTED_NAMES.split(", ") {
            let parsed = Datatype::parse(name).unwrap();
            assert_eq!(parsed.name(), name);
        }
        assert_eq!(Datatype::parse("FP128"), None);
        assert_eq!(Datatype::parse("fp32"), None);
        assert_eq!(Datatype::of_dtype(DType::ComplexFloat), None);
        assert_eq!(
            Datatype::parse("INT32").unwrap().element_size(),
            Some(4),
            "INT32 is four bytes on the wire"
        );
    }
}
