//! The prim table: every node kind the IR itself gives meaning to (`prim::If`, `prim::Loop`,
//! `prim::Constant`, ...), with its arity, its nested blocks and whether it has side effects.
//!
//! The verifier checks each prim node against this table, dead code elimination keeps the
//! prims marked as having side effects, and the interpreter's compiler and the printers match
//! on [`Prim`] rather than on spelled-out names. A node's [`crate::Symbol`] records its
//! `Prim` when it has one, so these checks compare enums, not strings.
//!
//! Operators (`aten::add`, and prims PyTorch registers with a schema and a kernel, such as
//! `prim::dtype`) are not here: their records live in the runtime's operator registry.

/// How many inputs or outputs a prim takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    Exactly(usize),
    AtLeast(usize),
    /// Any number, including none.
    Any,
}

impl Arity {
    pub fn allows(self, count: usize) -> bool {
        match self {
            Arity::Exactly(n) => count == n,
            Arity::AtLeast(n) => count >= n,
            Arity::Any => true,
        }
    }
}

impl std::fmt::Display for Arity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Arity::Exactly(n) => write!(f, "exactly {n}"),
            Arity::AtLeast(n) => write!(f, "at least {n}"),
            Arity::Any => write!(f, "any number of"),
        }
    }
}

macro_rules! prim_table {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $name:literal,
            inputs: $inputs:expr, outputs: $outputs:expr, blocks: $blocks:expr,
            side_effects: $side_effects:expr;
    )*) => {
        /// A node kind with meaning in the IR itself. See [`PRIMS`] for each one's record.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Prim {
            $( $(#[$doc])* $variant, )*
        }

        /// One record per [`Prim`], in the enum's order.
        pub const PRIMS: &[PrimInfo] = &[
            $( PrimInfo {
                prim: Prim::$variant,
                name: $name,
                inputs: $inputs,
                outputs: $outputs,
                blocks: $blocks,
                side_effects: $side_effects,
            }, )*
        ];

        impl Prim {
            /// The prim named `qualified` (`prim::If`), if it is one.
            pub fn from_name(qualified: &str) -> Option<Prim> {
                match qualified {
                    $( $name => Some(Prim::$variant), )*
                    _ => None,
                }
            }
        }
    };
}

/// What the IR knows about one prim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrimInfo {
    pub prim: Prim,
    /// The qualified name, as PyTorch prints it.
    pub name: &'static str,
    pub inputs: Arity,
    pub outputs: Arity,
    /// How many nested blocks the node owns (function bodies of `prim::fork` and
    /// `prim::DifferentiableGraph` are subgraph attributes, not blocks).
    pub blocks: usize,
    /// Whether the node must stay even when nothing reads its outputs: it raises, prints,
    /// writes an attribute, calls code that may do any of those, or starts a task.
    pub side_effects: bool,
}

use Arity::{Any, AtLeast, Exactly};

prim_table! {
    /// A constant; its value is the `value` attribute (absent for `None`).
    Constant = "prim::Constant", inputs: Exactly(0), outputs: Exactly(1), blocks: 0, side_effects: false;
    /// The last node of every block; its inputs are the block's outputs.
    Return = "prim::Return", inputs: Any, outputs: Exactly(0), blocks: 0, side_effects: false;
    /// `if`: a condition, two blocks returning the node's outputs.
    If = "prim::If", inputs: Exactly(1), outputs: Any, blocks: 2, side_effects: false;
    /// Loops: `(max_trip_count, start_condition, carried...)`, one body block.
    Loop = "prim::Loop", inputs: AtLeast(2), outputs: Any, blocks: 1, side_effects: false;
    TupleConstruct = "prim::TupleConstruct", inputs: Any, outputs: Exactly(1), blocks: 0, side_effects: false;
    TupleUnpack = "prim::TupleUnpack", inputs: Exactly(1), outputs: Any, blocks: 0, side_effects: false;
    TupleIndex = "prim::TupleIndex", inputs: Exactly(2), outputs: Exactly(1), blocks: 0, side_effects: false;
    ListConstruct = "prim::ListConstruct", inputs: Any, outputs: Exactly(1), blocks: 0, side_effects: false;
    ListUnpack = "prim::ListUnpack", inputs: Exactly(1), outputs: Any, blocks: 0, side_effects: false;
    /// Keys and values alternate in the inputs.
    DictConstruct = "prim::DictConstruct", inputs: Any, outputs: Exactly(1), blocks: 0, side_effects: false;
    /// Reads the attribute named by the `name` attribute.
    GetAttr = "prim::GetAttr", inputs: Exactly(1), outputs: Exactly(1), blocks: 0, side_effects: false;
    /// Writes the attribute named by the `name` attribute: `(object, value)`.
    SetAttr = "prim::SetAttr", inputs: Exactly(2), outputs: Exactly(0), blocks: 0, side_effects: true;
    /// Calls the script function named by the `name` attribute on the inputs (PyTorch
    /// passes the function as input 0; ferrojit names it, so it may take no inputs).
    CallFunction = "prim::CallFunction", inputs: Any, outputs: Any, blocks: 0, side_effects: true;
    /// Calls the method named by the `name` attribute: `(self, arguments...)`.
    CallMethod = "prim::CallMethod", inputs: AtLeast(1), outputs: Any, blocks: 0, side_effects: true;
    CreateObject = "prim::CreateObject", inputs: Exactly(0), outputs: Exactly(1), blocks: 0, side_effects: false;
    /// `raise`: the message, and the exception's class name when known.
    RaiseException = "prim::RaiseException", inputs: AtLeast(1), outputs: Exactly(0), blocks: 0, side_effects: true;
    /// A value on paths that raise or return early; never read.
    Uninitialized = "prim::Uninitialized", inputs: Exactly(0), outputs: Exactly(1), blocks: 0, side_effects: false;
    Print = "prim::Print", inputs: Any, outputs: Exactly(0), blocks: 0, side_effects: true;
    /// Enters a `with` block's context manager.
    Enter = "prim::Enter", inputs: Exactly(1), outputs: Any, blocks: 0, side_effects: true;
    /// Leaves a `with` block's context manager.
    Exit = "prim::Exit", inputs: Exactly(1), outputs: Any, blocks: 0, side_effects: true;
    /// `torch.jit.fork`: runs the `Subgraph` attribute on the inputs, gives a future.
    Fork = "prim::fork", inputs: Any, outputs: Exactly(1), blocks: 0, side_effects: true;
    /// `isinstance` against the `types` attribute.
    IsInstance = "prim::isinstance", inputs: Exactly(1), outputs: Exactly(1), blocks: 0, side_effects: false;
    UncheckedCast = "prim::unchecked_cast", inputs: Exactly(1), outputs: Exactly(1), blocks: 0, side_effects: false;
    EnumName = "prim::EnumName", inputs: Exactly(1), outputs: Exactly(1), blocks: 0, side_effects: false;
    EnumValue = "prim::EnumValue", inputs: Exactly(1), outputs: Exactly(1), blocks: 0, side_effects: false;
    /// A member of an enum class, built from the member's value.
    EnumConstant = "prim::EnumConstant", inputs: Exactly(1), outputs: Exactly(1), blocks: 0, side_effects: false;
    /// A differentiable region (PyTorch's autodiff); its body is the `Subgraph` attribute.
    DifferentiableGraph = "prim::DifferentiableGraph", inputs: Any, outputs: Any, blocks: 0, side_effects: false;
}

impl Prim {
    /// This prim's record.
    pub fn info(self) -> &'static PrimInfo {
        // PRIMS is written in the enum's order (the macro emits both from one list).
        &PRIMS[self as usize]
    }

    /// The qualified name (`prim::If`).
    pub fn name(self) -> &'static str {
        self.info().name
    }

    pub fn has_side_effects(self) -> bool {
        self.info().side_effects
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_enum_order_and_names_round_trip() {
        for (index, info) in PRIMS.iter().enumerate() {
            assert_eq!(info.prim as usize, index, "{} is out of order", info.name);
            assert_eq!(Prim::from_name(info.name), Some(info.prim));
            assert_eq!(info.prim.name(), info.name);
            assert!(info.name.starts_with("prim::"), "{}", info.name);
        }
        assert_eq!(Prim::from_name("aten::add"), None);
        assert_eq!(Prim::from_name("prim::dtype"), None);
    }

    #[test]
    fn arities_allow_what_they_say() {
        assert!(Exactly(2).allows(2) && !Exactly(2).allows(3));
        assert!(AtLeast(1).allows(5) && !AtLeast(1).allows(0));
        assert!(Any.allows(0));
    }
}
