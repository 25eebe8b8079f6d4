//! One record per operator overload: the schema, the kernel, what the operator does besides
//! computing its results (flags derived from the schema and the operator's name), and slots
//! that later stages read (the shape-and-dtype rule, the derivative, the fuser category).
//!
//! PyTorch keeps this metadata in `native_functions.yaml` and `derivatives.yaml`; ferrojit
//! keeps it in [`OperatorDefinition`], which is what the registry stores and hands out, so a
//! pass, a fuser or autodiff asks the registry about an operator instead of keeping its own
//! list of names.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use ferrojit_ir::{FunctionSchema, Type};
use ferrojit_tensor::DType;

use crate::error::{Result, RuntimeError};
use crate::ivalue::IValue;
use crate::registry::{Kernel, KernelFn, Stack};

/// A registered operator overload and everything known about it.
#[derive(Clone)]
pub struct OperatorDefinition {
    pub schema: Arc<FunctionSchema>,
    /// The kernel the interpreter calls (already wrapped with the alias write-back when the
    /// schema writes and returns an argument).
    pub kernel: Kernel,
    pub flags: OperatorFlags,
    /// Where the compiler puts this overload among the others of its name.
    pub overload_rank: OverloadRank,
    /// Output dtypes and sizes from the inputs'; `None` where no rule is written yet.
    pub shape_rule: Option<ShapeRule>,
    /// The gradient formulas; `None` until autodiff fills them.
    pub derivative: Option<Derivative>,
    /// How a fuser may treat the operator; `None` where nobody has said.
    pub fuser_category: Option<FuserCategory>,
}

impl fmt::Debug for OperatorDefinition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Operator({})", self.schema)
    }
}

impl OperatorDefinition {
    /// A definition with the flags its schema and name imply and empty slots.
    pub fn new(schema: FunctionSchema, kernel: Kernel, overload_rank: OverloadRank) -> Self {
        let flags = OperatorFlags::for_schema(&schema);
        OperatorDefinition {
            schema: Arc::new(schema),
            kernel,
            flags,
            overload_rank,
            shape_rule: None,
            derivative: None,
            fuser_category: None,
        }
    }

    /// `aten::add.Tensor`.
    pub fn full_name(&self) -> String {
        self.schema.full_name()
    }
}

/// What an operator does besides computing its results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperatorFlags {
    /// Observable effects outside its results (printing, warnings, seeding the global
    /// generator, grad mode, waiting on a future): never removed or reordered by a pass.
    pub has_side_effects: bool,
    /// Draws from a random generator (PyTorch's `nondeterministic_seeded` tag): two calls with
    /// the same inputs differ, so it is never deduplicated or constant-folded.
    pub nondeterministic_seeded: bool,
    /// How results and arguments may share memory, from the schema's alias annotations.
    pub aliasing: Aliasing,
}

impl OperatorFlags {
    /// The flags of an operator with this schema.
    pub fn for_schema(schema: &FunctionSchema) -> OperatorFlags {
        let name = schema.name.as_str();
        OperatorFlags {
            has_side_effects: SIDE_EFFECT_OPERATORS.contains(&name),
            nondeterministic_seeded: takes_generator(schema)
                || NONDETERMINISTIC_SEEDED_OPERATORS.contains(&name),
            aliasing: Aliasing::for_schema(schema),
        }
    }

    /// No side effects, no randomness and no writes to its arguments: the same inputs
    /// always give the same results and nothing else changes, so a pass may fold, merge or
    /// drop it. (A view is pure: it writes nothing, although its result shares memory.)
    pub fn is_pure(&self) -> bool {
        !self.has_side_effects
            && !self.nondeterministic_seeded
            && self.aliasing != Aliasing::WritesArgument
    }
}

/// Operators whose effects are not all in their results; PyTorch's alias analysis treats the
/// same ones as having side effects.
const SIDE_EFFECT_OPERATORS: &[&str] = &[
    "prim::Print",
    "prim::RaiseException",
    "aten::warn",
    "aten::manual_seed",
    "aten::seed",
    "aten::set_grad_enabled",
    "aten::wait",
];

/// Random operators that have no `Generator?` argument to recognise them by.
const NONDETERMINISTIC_SEEDED_OPERATORS: &[&str] = &[
    "aten::rand",
    "aten::rand_like",
    "aten::randn",
    "aten::randn_like",
    "aten::randint",
    "aten::randint_like",
    "aten::randperm",
    "aten::dropout",
    "aten::dropout_",
    "aten::feature_dropout",
    "aten::feature_dropout_",
    "aten::alpha_dropout",
    "aten::alpha_dropout_",
    "aten::native_dropout",
];

/// Whether the operator takes a `generator=` argument to draw from.
fn takes_generator(schema: &FunctionSchema) -> bool {
    schema.arguments.iter().any(|argument| match &argument.ty {
        // `Generator? generator=None`: a random draw. A plain `Generator self` is the
        // generator object's own methods (`manual_seed`, `initial_seed`), not a draw.
        Type::Optional(inner) => matches!(**inner, Type::Generator),
        _ => false,
    })
}

/// How an operator's results and arguments may share memory, read from the schema's alias
/// annotations (`Tensor(a!) self` is written; `Tensor(a) self -> Tensor(a)` is a view).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aliasing {
    /// Fresh results; no argument is written.
    Fresh,
    /// A result may share memory with an argument (a view, a list element); nothing written.
    ReturnsAlias,
    /// Writes at least one argument (in-place and `out=` forms, list mutation).
    WritesArgument,
}

impl Aliasing {
    /// The aliasing its schema's annotations declare.
    pub fn for_schema(schema: &FunctionSchema) -> Aliasing {
        let writes = schema
            .arguments
            .iter()
            .any(|argument| argument.alias_info.as_ref().is_some_and(writes_anywhere));
        if writes {
            return Aliasing::WritesArgument;
        }
        let returns_alias = schema.returns.iter().any(|ret| ret.alias_info.is_some());
        if returns_alias {
            Aliasing::ReturnsAlias
        } else {
            Aliasing::Fresh
        }
    }
}

fn writes_anywhere(alias: &ferrojit_ir::AliasInfo) -> bool {
    alias.is_write || alias.contained.iter().any(writes_anywhere)
}

/// The compiler takes the first overload of a name whose arguments match, so the order of
/// overloads is part of an operator's meaning. Overloads are ordered by rank, then by the
/// order they are declared in; the ranks follow PyTorch, whose native functions (tensor
/// operators) come before its hand-written builtins (the `int`/`float`/list/str forms and the
/// `prim` operators), and custom operators come last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OverloadRank {
    /// `native_functions.yaml` operators: the tensor families.
    NativeFunction,
    /// The scalar, list, string, dict and language operators.
    Builtin,
    /// The operators ATen defines as compositions of others (after the builtins, as in
    /// PyTorch, where they are registered last).
    Composite,
    /// Operators registered through the public custom-operator API.
    Custom,
}

/// One operand of a shape-and-dtype rule: what is known about an argument before running.
#[derive(Debug, Clone)]
pub enum ArgumentFact {
    /// A tensor (or a Python number used as one, marked as a wrapped number).
    Tensor(TensorFact),
    /// A non-tensor value known in advance (an `int[] dim`, a `bool keepdim`, a dtype index).
    Constant(IValue),
    /// Nothing is known.
    Unknown,
}

impl ArgumentFact {
    /// Everything about a value at hand: a tensor's dtype and sizes, or the value itself.
    pub fn of_value(value: &IValue) -> ArgumentFact {
        match value.to_tensor() {
            Ok(tensor) if matches!(value, IValue::Tensor(_)) => ArgumentFact::Tensor(TensorFact {
                dtype: Some(tensor.dtype()),
                sizes: Some(tensor.sizes().to_vec()),
                is_wrapped_number: tensor.is_wrapped_number(),
            }),
            _ => ArgumentFact::Constant(value.clone()),
        }
    }
}

/// What is known of a tensor: its dtype and sizes, each only where known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorFact {
    pub dtype: Option<DType>,
    pub sizes: Option<Vec<usize>>,
    /// A Python number standing in for a tensor: it promotes with the lowest priority.
    pub is_wrapped_number: bool,
}

impl TensorFact {
    /// A tensor of known dtype and sizes.
    pub fn known(dtype: DType, sizes: &[usize]) -> TensorFact {
        TensorFact {
            dtype: Some(dtype),
            sizes: Some(sizes.to_vec()),
            is_wrapped_number: false,
        }
    }
}

/// A shape-and-dtype rule's computation, over the arguments in schema order (the registry's
/// defaults filled in), giving one fact per tensor result.
pub type ShapeRuleFn = fn(&[ArgumentFact]) -> Result<Vec<TensorFact>>;

/// An operator's shape-and-dtype rule. The in-place and `out=` forms reuse their functional
/// form's computation: an in-place result is `self` (whose dtype and sizes do not change), an
/// `out=` result has the out tensor's dtype and the functional result's sizes (`out` is
/// resized to them).
#[derive(Clone, Copy)]
pub enum ShapeRule {
    Functional(ShapeRuleFn),
    /// Same arguments as the functional form; the result is argument 0.
    InPlace(ShapeRuleFn),
    /// The functional form's arguments followed by `out`.
    Out(ShapeRuleFn),
}

impl fmt::Debug for ShapeRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let variant = match self {
            ShapeRule::Functional(_) => "Functional",
            ShapeRule::InPlace(_) => "InPlace",
            ShapeRule::Out(_) => "Out",
        };
        write!(f, "ShapeRule::{variant}")
    }
}

impl ShapeRule {
    /// The facts of the operator's tensor results given its arguments' facts. Fails where the
    /// arguments cannot go together (shapes that do not broadcast, a dim out of range).
    pub fn apply(&self, arguments: &[ArgumentFact]) -> Result<Vec<TensorFact>> {
        match self {
            ShapeRule::Functional(rule) => rule(arguments),
            ShapeRule::InPlace(rule) => {
                let results = rule(arguments)?;
                let target = match arguments.first() {
                    Some(ArgumentFact::Tensor(fact)) => fact.clone(),
                    _ => TensorFact {
                        dtype: None,
                        sizes: None,
                        is_wrapped_number: false,
                    },
                };
                if let (Some(result), Some(sizes)) = (
                    results.first().and_then(|fact| fact.sizes.as_ref()),
                    target.sizes.as_ref(),
                ) {
                    if result != sizes {
                        return Err(RuntimeError::Other(format!(
                            "output with shape {sizes:?} doesn't match the broadcast shape \
                             {result:?}"
                        )));
                    }
                }
                Ok(vec![target])
            }
            ShapeRule::Out(rule) => {
                let Some((out, functional_arguments)) = arguments.split_last() else {
                    return Err(RuntimeError::InvalidGraph(
                        "an out= shape rule needs the out argument".to_string(),
                    ));
                };
                let mut results = rule(functional_arguments)?;
                let out_dtype = match out {
                    ArgumentFact::Tensor(fact) => fact.dtype,
                    _ => None,
                };
                for result in &mut results {
                    result.dtype = out_dtype;
                    result.is_wrapped_number = false;
                }
                Ok(results)
            }
        }
    }
}

/// The gradient of an operator, as `derivatives.yaml` writes it: for each differentiable
/// input, a formula in terms of `grad`, the inputs and the results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Derivative {
    /// `(input name, formula)`.
    pub input_gradients: Vec<(String, String)>,
}

/// How a fuser may treat an operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FuserCategory {
    /// Element by element with broadcasting: fuses with its neighbours.
    Pointwise,
    /// Reduces dimensions: may end a fusion group.
    Reduction,
    /// A matrix product or convolution: a fusion group's anchor.
    Contraction,
    /// Only changes geometry (a view): free inside a group.
    View,
    /// Not fusible.
    Opaque,
}

/// A kernel taking its arguments as a slice (popped for it per the schema) and returning its
/// results, so that it need not know how many values the stack holds.
pub type ArgumentKernel = Arc<dyn Fn(&[IValue]) -> Result<Vec<IValue>> + Send + Sync>;

/// How a declared operator's kernel takes its arguments.
#[derive(Clone)]
pub enum DeclaredKernel {
    /// Pops its own arguments and pushes its results.
    Stack(Kernel),
    /// Gets its arguments as a slice: the registry pops as many as the schema declares.
    Arguments(ArgumentKernel),
}

/// One row of a builtin family: a schema string, its kernel and the slots known when the
/// family is declared. The registry parses and checks the schema when it takes the row.
#[derive(Clone)]
pub struct OperatorDeclaration {
    pub schema: Cow<'static, str>,
    pub kernel: DeclaredKernel,
    pub shape_rule: Option<ShapeRule>,
    pub fuser_category: Option<FuserCategory>,
    /// How many arguments the kernel takes, where it says (a typed kernel); the registry
    /// refuses a schema declaring another number.
    pub arity: Option<usize>,
}

impl OperatorDeclaration {
    /// A row whose kernel works on the stack.
    pub fn stack(schema: impl Into<Cow<'static, str>>, kernel: KernelFn) -> Self {
        OperatorDeclaration {
            schema: schema.into(),
            kernel: DeclaredKernel::Stack(Arc::new(kernel)),
            shape_rule: None,
            fuser_category: None,
            arity: None,
        }
    }

    /// A row whose kernel takes an argument slice.
    pub fn arguments(
        schema: impl Into<Cow<'static, str>>,
        kernel: impl Fn(&[IValue]) -> Result<Vec<IValue>> + Send + Sync + 'static,
    ) -> Self {
        OperatorDeclaration {
            schema: schema.into(),
            kernel: DeclaredKernel::Arguments(Arc::new(kernel)),
            shape_rule: None,
            fuser_category: None,
            arity: None,
        }
    }

    /// The same row with a shape-and-dtype rule.
    pub fn with_shape_rule(mut self, rule: ShapeRule) -> Self {
        self.shape_rule = Some(rule);
        self
    }

    /// The same row, stating how many arguments its kernel takes.
    pub fn with_arity(mut self, arity: usize) -> Self {
        self.arity = Some(arity);
        self
    }

    /// The same row with a fuser category.
    pub fn with_fuser_category(mut self, category: FuserCategory) -> Self {
        self.fuser_category = Some(category);
        self
    }
}

/// The stack kernel that pops `count` arguments for an [`ArgumentKernel`] and pushes its
/// results.
pub(crate) fn argument_kernel_on_stack(count: usize, kernel: ArgumentKernel) -> Kernel {
    Arc::new(move |stack: &mut Stack| -> Result<()> {
        let start = stack.len().checked_sub(count).ok_or_else(|| {
            RuntimeError::InvalidGraph("operand stack underflow in an operator".to_string())
        })?;
        let outputs = kernel(&stack[start..])?;
        stack.truncate(start);
        stack.extend(outputs);
        Ok(())
    })
}
