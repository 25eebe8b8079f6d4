//! Compiling a graph into `Code`: a flat instruction list over a register file (one register
//! per IR value, plus hidden loop counters), with operators resolved up front and register
//! reads turned into moves at each value's last use.

use std::fmt;
use std::sync::Arc;

use ferrojit_ir::{
    AttributeValue, BlockId, DefaultValue, FunctionSchema, Graph, NodeId, Prim, SourceLocation,
    Type, ValueId,
};

use super::liveness::Liveness;
use crate::error::{Result, RuntimeError};
use crate::ivalue::{Device, IValue};
use crate::number_op::NumberOp;
use crate::registry::{Kernel, OperatorRegistry};

/// One interpreter instruction. Jump targets are absolute instruction indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Instruction {
    /// Push a copy of a register.
    Load(usize),
    /// Push a register's value, leaving it empty (the value's last read).
    Move(usize),
    /// Pop into a register.
    Store(usize),
    /// Copy register `from` into register `to` (`Load(from)` then `Store(to)`).
    Copy {
        from: usize,
        to: usize,
    },
    /// Move register `from` into register `to`, leaving `from` empty (`Move(from)` then
    /// `Store(to)`).
    Transfer {
        from: usize,
        to: usize,
    },
    /// Clear a register whose value is dead on this path.
    Drop(usize),
    /// Pop and discard (an output nobody reads).
    Pop,
    /// Push a constant from the constant table.
    Constant(usize),
    /// Run a registry operator from the operator table.
    Operator(usize),
    /// A builtin int/float number operator (`aten::add.int`, `aten::lt`, ...): computed
    /// inline when both operands are ints or floats, else by the operator's kernel
    /// (`operator`, an index into the operator table).
    Number {
        op: NumberOp,
        operator: usize,
    },
    /// A `Number` whose operands are read in place: `Load`/`Move`/`Constant` instructions
    /// that pushed them were folded in (`a` may also be `Stack`: already on the stack).
    NumberWith {
        op: NumberOp,
        a: Operand,
        b: Operand,
        operator: usize,
    },
    /// `NumberWith` then `Store(to)`: the result goes straight into a register.
    NumberInto {
        op: NumberOp,
        a: Operand,
        b: Operand,
        operator: usize,
        to: usize,
    },
    /// `NumberWith` then `JumpIfFalse(target)`: a comparison that branches on its result.
    NumberJumpIfFalse {
        op: NumberOp,
        a: Operand,
        b: Operand,
        operator: usize,
        target: usize,
    },
    /// Run a primitive from the primitive table.
    Prim(usize),
    /// Pop a bool; jump when it is false.
    JumpIfFalse(usize),
    Jump(usize),
    /// Loop head: continue while `cond` holds and `counter < max`, else jump to `exit`.
    LoopCondition {
        counter: usize,
        max: usize,
        cond: usize,
        exit: usize,
    },
    /// A loop's back edge: pop the body's condition into `cond`, add one to `counter`, and
    /// jump to `body` while `cond` holds and `counter < max`, else fall through to the
    /// exit (`Store(cond)`, `Increment(counter)`, `Jump` to the `LoopCondition` in one).
    LoopNext {
        counter: usize,
        max: usize,
        cond: usize,
        body: usize,
    },
    /// `LoopNext` for a body whose condition is the constant `true` (a `for` loop): `cond`
    /// still holds the `true` that let the body run, so only the counter decides.
    LoopNextCounted {
        counter: usize,
        max: usize,
        body: usize,
    },
    /// Leave the frame; the outputs are on the stack.
    Return,
}

/// Where a `NumberWith` instruction reads an operand. Indices are 32-bit to keep
/// instructions small (an operand that does not fit is not folded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    /// The value on top of the stack (only for the first operand).
    Stack,
    /// A register, left in place.
    Load(u32),
    /// A register, emptied (its last use).
    Move(u32),
    /// An entry of the constant table.
    Constant(u32),
}

impl Operand {
    /// The operand an instruction pushes, for the pure pushes.
    fn pushed_by(instruction: Instruction) -> Option<Operand> {
        let narrow = |index: usize| u32::try_from(index).ok();
        match instruction {
            Instruction::Load(r) => narrow(r).map(Operand::Load),
            Instruction::Move(r) => narrow(r).map(Operand::Move),
            Instruction::Constant(c) => narrow(c).map(Operand::Constant),
            _ => None,
        }
    }
}

/// A resolved registry operator.
#[derive(Clone)]
pub struct CompiledOperator {
    pub schema: Arc<FunctionSchema>,
    pub kernel: Kernel,
    /// For vararg schemas the interpreter pushes this input count after the inputs.
    pub num_inputs: usize,
}

impl fmt::Debug for CompiledOperator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.schema.full_name())
    }
}

/// Primitive operations executed by the interpreter itself.
#[derive(Debug, Clone)]
pub enum PrimOp {
    GetAttr(String),
    SetAttr(String),
    CallMethod {
        name: String,
        num_inputs: usize,
        num_outputs: usize,
    },
    CallFunction {
        name: String,
        num_inputs: usize,
        num_outputs: usize,
    },
    TupleConstruct(usize),
    TupleUnpack(usize),
    TupleIndex,
    ListConstruct {
        count: usize,
        element_type: Type,
    },
    ListUnpack(usize),
    DictConstruct {
        pairs: usize,
        key_type: Type,
        value_type: Type,
    },
    RaiseException {
        has_class: bool,
    },
    Uninitialized,
    Print(usize),
    /// `prim::fork`: runs the compiled subgraph on the inputs; leaves a future.
    Fork {
        code: Arc<Code>,
        num_inputs: usize,
    },
    /// `prim::TypeCheck`: leaves its inputs and pushes whether each matches its type.
    TypeCheck(Vec<ferrojit_ir::TensorRefinement>),
    /// `prim::FusionGroup`: the fusion backend runs the group when it can; otherwise its
    /// compiled subgraph runs as a call.
    FusionGroup {
        group_key: u64,
        subgraph: Arc<Graph>,
        code: Arc<Code>,
        num_inputs: usize,
        num_outputs: usize,
    },
    /// `prim::DifferentiableGraph`: with a symbolic gradient attached and a gradient to
    /// record, the autograd hook runs it (see `differentiable_graph`); otherwise its compiled
    /// subgraph runs as a call.
    DifferentiableGraph {
        code: Arc<Code>,
        gradient: Option<Arc<super::differentiable_graph::SymbolicGradient>>,
        num_inputs: usize,
        num_outputs: usize,
    },
    /// `aten::wait`: replaces the future on the stack with its value. A forked task whose
    /// future is still running elsewhere suspends here and frees its thread.
    Wait,
    /// `x.tolist()`: pops the tensor, the list depth and the element type code.
    ToList,
    /// `isinstance(x, (T1, T2))`: pops a value, pushes whether it matches one of the types.
    IsInstance(Vec<Type>),
    /// A new instance of a script class with every attribute unset (`C.__new__(C)`).
    CreateObject(Arc<ferrojit_ir::ClassType>),
    /// An enum member: pops the member's value and wraps it with the member's name. The
    /// class describes the run-time representation: an object with `name` and `value`.
    EnumConstant {
        class: Arc<ferrojit_ir::ClassType>,
        name: String,
    },
}

/// A graph compiled for the interpreter.
#[derive(Debug, Clone)]
pub struct Code {
    pub instructions: Vec<Instruction>,
    pub constants: Vec<IValue>,
    pub operators: Vec<CompiledOperator>,
    pub prims: Vec<PrimOp>,
    pub register_count: usize,
    pub num_inputs: usize,
    pub num_outputs: usize,
    /// Where each run of instructions came from: `(first instruction, location)`, sorted by
    /// instruction. An instruction belongs to the last entry at or before it. Only read
    /// when an error leaves the interpreter, to build its TorchScript traceback.
    pub locations: Vec<(usize, Option<SourceLocation>)>,
}

impl Code {
    /// The source location of the node instruction `pc` was compiled from, if known.
    pub fn location_at(&self, pc: usize) -> Option<&SourceLocation> {
        let after = self.locations.partition_point(|(start, _)| *start <= pc);
        after
            .checked_sub(1)
            .and_then(|index| self.locations[index].1.as_ref())
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, instruction) in self.instructions.iter().enumerate() {
            write!(f, "{index:4} ")?;
            match instruction {
                Instruction::Constant(c) => match self.constants.get(*c) {
                    Some(value) => writeln!(f, "CONSTANT {}", value.python_repr())?,
                    None => writeln!(f, "CONSTANT ?{c}")?,
                },
                Instruction::Operator(o)
                | Instruction::Number { operator: o, .. }
                | Instruction::NumberWith { operator: o, .. }
                | Instruction::NumberInto { operator: o, .. }
                | Instruction::NumberJumpIfFalse { operator: o, .. } => {
                    match self.operators.get(*o) {
                        Some(op) => writeln!(f, "OP {}", op.schema.full_name())?,
                        None => writeln!(f, "OP ?{o}")?,
                    }
                }
                Instruction::Prim(p) => match self.prims.get(*p) {
                    Some(prim) => writeln!(f, "PRIM {prim:?}")?,
                    None => writeln!(f, "PRIM ?{p}")?,
                },
                other => writeln!(f, "{other:?}")?,
            }
        }
        Ok(())
    }
}

fn invalid(message: impl Into<String>) -> RuntimeError {
    RuntimeError::InvalidGraph(message.into())
}

/// The run-time class of enum values: an object holding the member's `name` and `value`.
pub fn enum_runtime_class(enum_name: &str, value_type: Type) -> Arc<ferrojit_ir::ClassType> {
    let class = ferrojit_ir::ClassType::new(enum_name, false);
    class.add_attribute("name", Type::Str, ferrojit_ir::AttributeKind::Regular);
    class.add_attribute("value", value_type, ferrojit_ir::AttributeKind::Regular);
    class
}

/// Compiles `graph` against the builtin operator registry.
pub fn compile(graph: &Graph) -> Result<Code> {
    compile_with_registry(graph, OperatorRegistry::global())
}

/// Compiles `graph`, resolving operators in `registry`.
pub fn compile_with_registry(graph: &Graph, registry: &OperatorRegistry) -> Result<Code> {
    let mut compiler = Compiler {
        graph,
        registry,
        liveness: Liveness::new(graph),
        last_label: None,
        code: Code {
            instructions: Vec::new(),
            constants: Vec::new(),
            operators: Vec::new(),
            prims: Vec::new(),
            register_count: graph.value_capacity(),
            num_inputs: graph.inputs().len(),
            num_outputs: graph.outputs().len(),
            locations: Vec::new(),
        },
        location: None,
    };
    for &input in graph.inputs().iter().rev() {
        compiler.store_or_pop(input);
    }
    let top = graph.top_block();
    compiler.emit_block(top)?;
    compiler.push_block_outputs(top);
    compiler.emit(Instruction::Return);
    Ok(compiler.code)
}

struct Compiler<'g> {
    graph: &'g Graph,
    registry: &'g OperatorRegistry,
    liveness: Liveness<'g>,
    /// The highest instruction index a jump may land on so far: instructions before it
    /// can be rewritten by the peephole in `push_use` without moving a jump target.
    last_label: Option<usize>,
    code: Code,
    /// The location of the node being compiled (its nearest enclosing node's when it has
    /// none), recorded in `code.locations` as instructions are emitted.
    location: Option<SourceLocation>,
}

impl<'g> Compiler<'g> {
    fn emit(&mut self, instruction: Instruction) -> usize {
        let index = self.code.instructions.len();
        self.note_location(index);
        self.code.instructions.push(instruction);
        index
    }

    /// Starts a location run at instruction `index` if the location changed. Entries past
    /// `index` belong to instructions the peephole removed, and go.
    fn note_location(&mut self, index: usize) {
        let locations = &mut self.code.locations;
        while locations.last().is_some_and(|(start, _)| *start > index) {
            locations.pop();
        }
        match locations.last_mut() {
            Some((_, location)) if *location == self.location => {}
            Some((start, location)) if *start == index => *location = self.location.clone(),
            _ => locations.push((index, self.location.clone())),
        }
    }

    /// The index of the next instruction, as a jump target.
    fn here(&mut self) -> usize {
        let here = self.code.instructions.len();
        self.last_label = Some(here);
        here
    }

    fn patch(&mut self, at: usize, target: usize) {
        if let Some(instruction) = self.code.instructions.get_mut(at) {
            match instruction {
                Instruction::JumpIfFalse(t)
                | Instruction::Jump(t)
                | Instruction::NumberJumpIfFalse { target: t, .. } => *t = target,
                Instruction::LoopCondition { exit, .. } => *exit = target,
                _ => {}
            }
        }
    }

    fn new_register(&mut self) -> usize {
        self.code.register_count += 1;
        self.code.register_count - 1
    }

    fn constant(&mut self, value: IValue) -> usize {
        self.code.constants.push(value);
        self.code.constants.len() - 1
    }

    fn prim(&mut self, prim: PrimOp) {
        self.code.prims.push(prim);
        let index = self.code.prims.len() - 1;
        self.emit(Instruction::Prim(index));
    }

    /// Pushes input `input` of `node`, moving it out at its last use.
    fn push_use(&mut self, value: ValueId, node: NodeId, input: usize) {
        if self.liveness.is_last_use(value, node, input) {
            // `Store(r)` right before `Move(r)` (a value used once, by the next node):
            // the value just stays on the stack. Only when no jump lands on either
            // instruction, so every path through the `Move` has just run the `Store`.
            let register = value.index();
            let previous = self.code.instructions.len().checked_sub(1);
            if let Some(previous) = previous {
                let label = self.last_label;
                match self.code.instructions[previous] {
                    Instruction::Store(r)
                        if r == register && label.is_none_or(|label| label < previous) =>
                    {
                        self.code.instructions.pop();
                        return;
                    }
                    // A number stored for this read: leave it on the stack instead. A jump
                    // may land on the operator, which then still runs.
                    Instruction::NumberInto {
                        op,
                        a,
                        b,
                        operator,
                        to,
                    } if to == register && label.is_none_or(|label| label <= previous) => {
                        self.code.instructions[previous] =
                            Instruction::NumberWith { op, a, b, operator };
                        return;
                    }
                    _ => {}
                }
            }
            self.emit(Instruction::Move(register));
        } else {
            self.emit(Instruction::Load(value.index()));
        }
    }

    fn push_inputs(&mut self, node: NodeId) {
        let inputs = self.graph.node_inputs(node).to_vec();
        for (index, value) in inputs.into_iter().enumerate() {
            self.push_use(value, node, index);
        }
    }

    fn store_or_pop(&mut self, value: ValueId) {
        if self.graph.value_uses(value).is_empty() {
            self.emit(Instruction::Pop);
        } else {
            self.emit_store(value.index());
        }
    }

    /// Emits `Store(register)`, fusing it with a `Load`/`Move` right before it into one
    /// register-to-register instruction (with a `NumberWith`, into a `NumberInto`) when no
    /// jump lands on the `Store`.
    fn emit_store(&mut self, register: usize) {
        if let Some(previous) = self.code.instructions.len().checked_sub(1) {
            let no_label = self.last_label.is_none_or(|label| label <= previous);
            let fused = match self.code.instructions[previous] {
                Instruction::Load(from) if no_label => {
                    Some(Instruction::Copy { from, to: register })
                }
                Instruction::Move(from) if no_label => {
                    Some(Instruction::Transfer { from, to: register })
                }
                Instruction::NumberWith { op, a, b, operator } if no_label => {
                    Some(Instruction::NumberInto {
                        op,
                        a,
                        b,
                        operator,
                        to: register,
                    })
                }
                _ => None,
            };
            if let Some(fused) = fused {
                self.code.instructions[previous] = fused;
                return;
            }
        }
        self.emit(Instruction::Store(register));
    }

    /// Stores a node's outputs, which are on the stack in order.
    fn store_outputs(&mut self, node: NodeId) {
        let outputs = self.graph.node_outputs(node).to_vec();
        for output in outputs.into_iter().rev() {
            self.store_or_pop(output);
        }
    }

    fn push_block_outputs(&mut self, block: BlockId) {
        let return_node = self.graph.block_return_node(block);
        self.push_inputs(return_node);
    }

    fn emit_block(&mut self, block: BlockId) -> Result<()> {
        for node in self.graph.block_nodes(block) {
            self.emit_node(node)?;
        }
        Ok(())
    }

    fn attribute_str(&self, node: NodeId, name: &str) -> Result<String> {
        match self.graph.attribute(node, name) {
            Some(AttributeValue::Str(value)) => Ok(value.clone()),
            _ => Err(invalid(format!(
                "{} is missing its string attribute '{name}'",
                self.graph.kind(node)
            ))),
        }
    }

    fn output_type(&self, node: NodeId) -> Result<Type> {
        self.graph
            .node_outputs(node)
            .first()
            .map(|&o| self.graph.value_type(o).clone())
            .ok_or_else(|| invalid(format!("{} has no output", self.graph.kind(node))))
    }

    fn emit_node(&mut self, node: NodeId) -> Result<()> {
        let enclosing = match &self.graph.node(node).source_location {
            Some(location) => self.location.replace(location.clone()),
            None => self.location.clone(),
        };
        let result = self.emit_node_instructions(node);
        self.location = enclosing;
        result
    }

    fn emit_node_instructions(&mut self, node: NodeId) -> Result<()> {
        let kind = self.graph.kind(node).clone();
        let num_inputs = self.graph.node_inputs(node).len();
        let num_outputs = self.graph.node_outputs(node).len();
        match (kind.prim(), kind.as_str()) {
            (Some(Prim::Constant), _) => {
                let value = self.decode_constant(node)?;
                let index = self.constant(value);
                self.emit(Instruction::Constant(index));
                self.store_outputs(node);
            }
            (Some(Prim::If), _) => self.emit_if(node)?,
            (Some(Prim::Loop), _) => self.emit_loop(node)?,
            (Some(Prim::UncheckedCast), _) => {
                if num_inputs != 1 || num_outputs != 1 {
                    return Err(invalid(
                        "prim::unchecked_cast takes one input and one output",
                    ));
                }
                self.push_inputs(node);
                self.store_outputs(node);
            }
            (Some(Prim::GetAttr), _)
            | (Some(Prim::SetAttr), _)
            | (Some(Prim::CallMethod), _)
            | (Some(Prim::CallFunction), _) => {
                let name = self.attribute_str(node, "name")?;
                let prim = match kind.prim() {
                    Some(Prim::GetAttr) => PrimOp::GetAttr(name),
                    Some(Prim::SetAttr) => PrimOp::SetAttr(name),
                    Some(Prim::CallMethod) => {
                        if num_inputs == 0 {
                            return Err(invalid("prim::CallMethod needs the object as input 0"));
                        }
                        PrimOp::CallMethod {
                            name,
                            num_inputs,
                            num_outputs,
                        }
                    }
                    _ => PrimOp::CallFunction {
                        name,
                        num_inputs,
                        num_outputs,
                    },
                };
                self.push_inputs(node);
                self.prim(prim);
                self.store_outputs(node);
            }
            (Some(Prim::TupleConstruct), _)
            | (Some(Prim::TupleUnpack), _)
            | (Some(Prim::TupleIndex), _)
            | (Some(Prim::ListUnpack), _)
            | (Some(Prim::RaiseException), _)
            | (Some(Prim::Uninitialized), _)
            | (Some(Prim::Print), _) => {
                let prim = match kind.prim() {
                    Some(Prim::TupleConstruct) => PrimOp::TupleConstruct(num_inputs),
                    Some(Prim::TupleUnpack) => PrimOp::TupleUnpack(num_outputs),
                    Some(Prim::TupleIndex) => PrimOp::TupleIndex,
                    Some(Prim::ListUnpack) => PrimOp::ListUnpack(num_outputs),
                    Some(Prim::RaiseException) => PrimOp::RaiseException {
                        has_class: num_inputs >= 2,
                    },
                    Some(Prim::Uninitialized) => PrimOp::Uninitialized,
                    _ => PrimOp::Print(num_inputs),
                };
                self.push_inputs(node);
                self.prim(prim);
                self.store_outputs(node);
            }
            (_, "aten::wait") if num_inputs == 1 && num_outputs == 1 => {
                self.push_inputs(node);
                self.prim(PrimOp::Wait);
                self.store_outputs(node);
            }
            (Some(Prim::CreateObject), _) => {
                let class = match self.output_type(node)? {
                    Type::Class(class) => class,
                    other => {
                        return Err(invalid(format!(
                            "prim::CreateObject output must be a class, not {other}"
                        )))
                    }
                };
                self.prim(PrimOp::CreateObject(class));
                self.store_outputs(node);
            }
            (Some(Prim::EnumConstant), _) => {
                let Type::Enum(enum_name) = self.output_type(node)? else {
                    return Err(invalid("prim::EnumConstant output must be an enum"));
                };
                if num_inputs != 1 {
                    return Err(invalid("prim::EnumConstant takes the member's value"));
                }
                let name = self.attribute_str(node, "name")?;
                let value_type = self
                    .graph
                    .value_type(self.graph.node_inputs(node)[0])
                    .clone();
                let class = enum_runtime_class(&enum_name, value_type);
                self.push_inputs(node);
                self.prim(PrimOp::EnumConstant { class, name });
                self.store_outputs(node);
            }
            (Some(Prim::Fork), _) => {
                let Some(AttributeValue::Graph(subgraph)) = self.graph.attribute(node, "Subgraph")
                else {
                    return Err(invalid("prim::fork is missing its Subgraph"));
                };
                if subgraph.inputs().len() != num_inputs || subgraph.outputs().len() != 1 {
                    return Err(invalid(
                        "prim::fork's subgraph must take the node's inputs and return one value",
                    ));
                }
                let code = Arc::new(compile_with_registry(subgraph, self.registry)?);
                self.push_inputs(node);
                self.prim(PrimOp::Fork { code, num_inputs });
                self.store_outputs(node);
            }
            (_, "prim::TypeCheck") => {
                let types = match self.graph.attribute(node, "types") {
                    Some(AttributeValue::Types(types)) => types.clone(),
                    _ => return Err(invalid("prim::TypeCheck is missing its types")),
                };
                if types.len() != num_inputs || num_outputs != num_inputs + 1 {
                    return Err(invalid(
                        "prim::TypeCheck takes one type per input and outputs the inputs and a bool",
                    ));
                }
                let types = super::fusion::checked_types(&types)?;
                self.push_inputs(node);
                self.prim(PrimOp::TypeCheck(types));
                self.store_outputs(node);
            }
            (_, "prim::FusionGroup") => {
                let Some(AttributeValue::Graph(subgraph)) = self.graph.attribute(node, "Subgraph")
                else {
                    return Err(invalid("prim::FusionGroup is missing its Subgraph"));
                };
                if subgraph.inputs().len() != num_inputs || subgraph.outputs().len() != num_outputs
                {
                    return Err(invalid(
                        "prim::FusionGroup's subgraph must take the node's inputs and return its outputs",
                    ));
                }
                let code = Arc::new(compile_with_registry(subgraph, self.registry)?);
                self.push_inputs(node);
                self.prim(PrimOp::FusionGroup {
                    group_key: super::fusion::next_group_key(),
                    subgraph: Arc::new((**subgraph).clone()),
                    code,
                    num_inputs,
                    num_outputs,
                });
                self.store_outputs(node);
            }
            (_, "prim::DifferentiableGraph") => {
                let Some(AttributeValue::Graph(subgraph)) = self.graph.attribute(node, "Subgraph")
                else {
                    return Err(invalid("prim::DifferentiableGraph is missing its Subgraph"));
                };
                if subgraph.inputs().len() != num_inputs || subgraph.outputs().len() != num_outputs
                {
                    return Err(invalid(
                        "prim::DifferentiableGraph's subgraph must take the node's inputs and return its outputs",
                    ));
                }
                let code = Arc::new(compile_with_registry(subgraph, self.registry)?);
                let gradient = super::differentiable_graph::attached_gradient(
                    self.graph,
                    node,
                    num_inputs,
                    num_outputs,
                    self.registry,
                )?
                .map(Arc::new);
                self.push_inputs(node);
                self.prim(PrimOp::DifferentiableGraph {
                    code,
                    gradient,
                    num_inputs,
                    num_outputs,
                });
                self.store_outputs(node);
            }
            (_, "prim::tolist") => {
                if num_inputs != 3 || num_outputs != 1 {
                    return Err(invalid("prim::tolist takes (tensor, dim, element type)"));
                }
                self.push_inputs(node);
                self.prim(PrimOp::ToList);
                self.store_outputs(node);
            }
            (Some(Prim::IsInstance), _) => {
                let types = match self.graph.attribute(node, "types") {
                    Some(AttributeValue::Types(types)) => types.clone(),
                    Some(AttributeValue::Type(ty)) => vec![ty.clone()],
                    _ => return Err(invalid("prim::isinstance is missing its types")),
                };
                if num_inputs != 1 {
                    return Err(invalid("prim::isinstance takes one input"));
                }
                self.push_inputs(node);
                self.prim(PrimOp::IsInstance(types));
                self.store_outputs(node);
            }
            (Some(Prim::EnumName), _) | (Some(Prim::EnumValue), _) => {
                if num_inputs != 1 {
                    return Err(invalid(format!("{kind} takes one enum input")));
                }
                let field = if kind.is_prim(Prim::EnumName) {
                    "name"
                } else {
                    "value"
                };
                self.push_inputs(node);
                self.prim(PrimOp::GetAttr(field.to_string()));
                self.store_outputs(node);
            }
            (Some(Prim::ListConstruct), _) => {
                let element_type = match self.output_type(node)? {
                    Type::List(element) => *element,
                    other => {
                        return Err(invalid(format!(
                            "prim::ListConstruct output must be a list, not {other}"
                        )))
                    }
                };
                self.push_inputs(node);
                self.prim(PrimOp::ListConstruct {
                    count: num_inputs,
                    element_type,
                });
                self.store_outputs(node);
            }
            (Some(Prim::DictConstruct), _) => {
                let (key_type, value_type) = match self.output_type(node)? {
                    Type::Dict(key, value) => (*key, *value),
                    other => {
                        return Err(invalid(format!(
                            "prim::DictConstruct output must be a dict, not {other}"
                        )))
                    }
                };
                if !num_inputs.is_multiple_of(2) {
                    return Err(invalid("prim::DictConstruct needs key/value pairs"));
                }
                self.push_inputs(node);
                self.prim(PrimOp::DictConstruct {
                    pairs: num_inputs / 2,
                    key_type,
                    value_type,
                });
                self.store_outputs(node);
            }
            _ => self.emit_operator(node)?,
        }
        Ok(())
    }

    fn emit_operator(&mut self, node: NodeId) -> Result<()> {
        let data = self.graph.node(node);
        let operator = match &data.schema {
            Some(schema) => {
                let full_name = schema.full_name();
                self.registry
                    .lookup(&full_name)
                    .ok_or(RuntimeError::UnknownOperator(full_name))?
            }
            None => {
                let types: Vec<Type> = data
                    .inputs
                    .iter()
                    .map(|&v| self.graph.value_type(v).clone())
                    .collect();
                self.registry
                    .find_by_types(data.kind.as_str(), &types)
                    .ok_or_else(|| {
                        let names: Vec<String> = types.iter().map(Type::to_string).collect();
                        if self.registry.overloads(data.kind.as_str()).is_empty() {
                            RuntimeError::UnknownOperator(data.kind.to_string())
                        } else {
                            RuntimeError::UnknownOperator(format!(
                                "{} (no overload accepts ({}))",
                                data.kind,
                                names.join(", ")
                            ))
                        }
                    })?
            }
        };
        let schema = operator.schema.clone();
        let kernel = operator.kernel.clone();
        let num_inputs = data.inputs.len();
        let num_outputs = data.outputs.len();
        let arguments = schema.arguments.len();
        if !schema.is_vararg && num_inputs > arguments {
            return Err(invalid(format!(
                "{} has {num_inputs} inputs but its schema takes {arguments}",
                schema.full_name()
            )));
        }
        if !schema.is_varret && num_outputs != schema.returns.len() {
            return Err(invalid(format!(
                "{} has {num_outputs} outputs but its schema returns {}",
                schema.full_name(),
                schema.returns.len()
            )));
        }
        self.push_inputs(node);
        // Trailing arguments the node leaves out take their schema defaults.
        if !schema.is_vararg {
            for argument in &schema.arguments[num_inputs..] {
                let default = argument.default.as_ref().ok_or_else(|| {
                    invalid(format!(
                        "{} is missing a value for argument '{}'",
                        schema.full_name(),
                        argument.name
                    ))
                })?;
                let value = default_value(default, &argument.ty)?;
                let index = self.constant(value);
                self.emit(Instruction::Constant(index));
            }
        }
        let number_op = if schema.is_vararg {
            None
        } else {
            self.builtin_number_op(&schema, &kernel)
        };
        self.code.operators.push(CompiledOperator {
            schema,
            kernel,
            num_inputs,
        });
        let index = self.code.operators.len() - 1;
        match number_op {
            Some(op) => self.emit_number(op, index),
            None => {
                self.emit(Instruction::Operator(index));
            }
        }
        self.store_outputs(node);
        Ok(())
    }

    /// Emits a number operator, folding the pushes of its operands right before it into
    /// one `NumberWith` when no jump lands between them and the operator.
    fn emit_number(&mut self, op: NumberOp, operator: usize) {
        let len = self.code.instructions.len();
        let last_label = self.last_label;
        let may_fold = |from: usize| last_label.is_none_or(|label| label <= from);
        let instructions = &self.code.instructions;
        let pushed_at = |at: Option<usize>| {
            let at = at.filter(|&at| may_fold(at))?;
            Operand::pushed_by(instructions[at]).map(|operand| (at, operand))
        };
        let Some((b_at, b)) = pushed_at(len.checked_sub(1)) else {
            self.emit(Instruction::Number { op, operator });
            return;
        };
        let (at, a) = match pushed_at(b_at.checked_sub(1)) {
            Some((a_at, a)) => (a_at, a),
            None => (b_at, Operand::Stack),
        };
        self.code.instructions.truncate(at);
        self.emit(Instruction::NumberWith { op, a, b, operator });
    }

    /// The inline form of a number operator, when `kernel` is the builtin registry's own
    /// kernel for the schema (a custom registry may bind the name to something else).
    fn builtin_number_op(&self, schema: &FunctionSchema, kernel: &Kernel) -> Option<NumberOp> {
        let full_name = schema.full_name();
        let op = NumberOp::for_operator(&full_name)?;
        let builtin = OperatorRegistry::global().lookup(&full_name)?;
        std::ptr::addr_eq(Arc::as_ptr(&builtin.kernel), Arc::as_ptr(kernel)).then_some(op)
    }

    fn decode_constant(&self, node: NodeId) -> Result<IValue> {
        let ty = self.output_type(node)?;
        let attribute = self.graph.attribute(node, "value");
        decode_constant(&ty, attribute)
    }

    /// Clears registers of values read only in the other branch of `node` (an If) and dead
    /// after it.
    fn drops_for_branch(&self, node: NodeId, branch: BlockId) -> Vec<usize> {
        self.liveness
            .values_from_outside(node)
            .into_iter()
            .filter(|&v| {
                !self.liveness.used_in_block(v, branch) && !self.liveness.used_after(v, node)
            })
            .map(|v| v.index())
            .collect()
    }

    /// Emits `JumpIfFalse` (target patched later), fused with a `NumberWith` computing the
    /// condition right before it when no jump lands on the `JumpIfFalse`.
    fn emit_jump_if_false(&mut self) -> usize {
        if let Some(previous) = self.code.instructions.len().checked_sub(1) {
            let no_label = self.last_label.is_none_or(|label| label <= previous);
            if let Instruction::NumberWith { op, a, b, operator } = self.code.instructions[previous]
            {
                if no_label {
                    self.code.instructions[previous] = Instruction::NumberJumpIfFalse {
                        op,
                        a,
                        b,
                        operator,
                        target: 0,
                    };
                    return previous;
                }
            }
        }
        self.emit(Instruction::JumpIfFalse(0))
    }

    fn emit_if(&mut self, node: NodeId) -> Result<()> {
        let blocks = self.graph.node_blocks(node).to_vec();
        let [then_block, else_block] = blocks.as_slice() else {
            return Err(invalid("prim::If needs exactly two blocks"));
        };
        let (then_block, else_block) = (*then_block, *else_block);
        if self.graph.node_inputs(node).len() != 1 {
            return Err(invalid("prim::If takes exactly one condition input"));
        }
        let outputs = self.graph.node_outputs(node).len();
        for block in [then_block, else_block] {
            if self.graph.block_outputs(block).len() != outputs {
                return Err(invalid(
                    "prim::If block output count differs from the node's",
                ));
            }
        }
        self.push_inputs(node);
        let jump_to_else = self.emit_jump_if_false();
        for register in self.drops_for_branch(node, then_block) {
            self.emit(Instruction::Drop(register));
        }
        self.emit_block(then_block)?;
        self.push_block_outputs(then_block);
        self.store_outputs(node);
        let jump_to_end = self.emit(Instruction::Jump(0));
        let else_start = self.here();
        self.patch(jump_to_else, else_start);
        for register in self.drops_for_branch(node, else_block) {
            self.emit(Instruction::Drop(register));
        }
        self.emit_block(else_block)?;
        self.push_block_outputs(else_block);
        self.store_outputs(node);
        let end = self.here();
        self.patch(jump_to_end, end);
        Ok(())
    }

    /// Whether `value` is a `prim::Constant` bool `true`.
    fn is_constant_true(&self, value: ValueId) -> bool {
        self.graph.producer(value).is_some_and(|node| {
            self.graph.kind(node).is_prim(Prim::Constant)
                && *self.graph.value_type(value) == Type::Bool
                && matches!(
                    self.graph.attribute(node, "value"),
                    Some(AttributeValue::Int(v)) if *v != 0
                )
        })
    }

    fn emit_loop(&mut self, node: NodeId) -> Result<()> {
        let blocks = self.graph.node_blocks(node).to_vec();
        let [body] = blocks.as_slice() else {
            return Err(invalid("prim::Loop needs exactly one block"));
        };
        let body = *body;
        let inputs = self.graph.node_inputs(node).to_vec();
        let outputs = self.graph.node_outputs(node).to_vec();
        let parameters = self.graph.block_parameters(body).to_vec();
        let body_outputs = self.graph.block_outputs(body).len();
        let carried = outputs.len();
        if inputs.len() != carried + 2
            || parameters.len() != carried + 1
            || body_outputs != carried + 1
        {
            return Err(invalid(
                "prim::Loop needs (max_trip_count, cond, carried...) inputs, an (iter, carried...) body and (cond, carried...) body outputs",
            ));
        }
        let counter = self.new_register();
        let max = self.new_register();
        let cond = self.new_register();

        self.push_use(inputs[0], node, 0);
        self.emit(Instruction::Store(max));
        self.push_use(inputs[1], node, 1);
        self.emit(Instruction::Store(cond));
        for (index, &input) in inputs.iter().enumerate().skip(2) {
            self.push_use(input, node, index);
        }
        // Carried values live in the body parameters' registers between iterations.
        for &parameter in parameters[1..].iter().rev() {
            self.emit(Instruction::Store(parameter.index()));
        }
        let zero = self.constant(IValue::Int(0));
        self.emit(Instruction::Constant(zero));
        self.emit(Instruction::Store(counter));

        let head = self.here();
        self.emit(Instruction::LoopCondition {
            counter,
            max,
            cond,
            exit: 0,
        });
        let body_start = self.here();
        let iteration = parameters[0];
        if !self.graph.value_uses(iteration).is_empty() {
            self.emit(Instruction::Load(counter));
            self.emit(Instruction::Store(iteration.index()));
        }
        self.emit_block(body)?;
        let return_node = self.graph.block_return_node(body);
        let body_cond = self.graph.block_outputs(body)[0];
        // A constant `true` condition read in place (not moved out) needs no push: `cond`
        // already holds `true` whenever the body runs.
        let counted = self.is_constant_true(body_cond)
            && !self.liveness.is_last_use(body_cond, return_node, 0);
        let outputs_from = usize::from(counted);
        for (index, value) in self
            .graph
            .block_outputs(body)
            .to_vec()
            .into_iter()
            .enumerate()
        {
            if index >= outputs_from {
                self.push_use(value, return_node, index);
            }
        }
        for &parameter in parameters[1..].iter().rev() {
            self.emit_store(parameter.index());
        }
        if counted {
            self.emit(Instruction::LoopNextCounted {
                counter,
                max,
                body: body_start,
            });
        } else {
            self.emit(Instruction::LoopNext {
                counter,
                max,
                cond,
                body: body_start,
            });
        }
        let exit = self.here();
        self.patch(head, exit);

        for (output, parameter) in outputs.iter().zip(&parameters[1..]) {
            if self.graph.value_uses(*output).is_empty() {
                self.emit(Instruction::Drop(parameter.index()));
            } else {
                self.emit(Instruction::Move(parameter.index()));
                self.emit(Instruction::Store(output.index()));
            }
        }
        if !self.graph.value_uses(iteration).is_empty() {
            self.emit(Instruction::Drop(iteration.index()));
        }
        for value in self.liveness.values_from_outside(node) {
            if !self.liveness.used_after(value, node) {
                self.emit(Instruction::Drop(value.index()));
            }
        }
        Ok(())
    }
}

/// Reads a `prim::Constant`'s value attribute; the output type decides the reading
/// (IR_CONVENTIONS.md).
pub fn decode_constant(ty: &Type, attribute: Option<&AttributeValue>) -> Result<IValue> {
    let mismatch = || {
        invalid(format!(
            "prim::Constant of type {ty} has an unexpected value attribute {attribute:?}"
        ))
    };
    let Some(attribute) = attribute else {
        return match ty {
            Type::NoneType | Type::Optional(_) | Type::Any => Ok(IValue::None),
            _ => Err(invalid(format!(
                "prim::Constant of type {ty} has no value attribute"
            ))),
        };
    };
    Ok(match (ty, attribute) {
        (Type::Optional(inner), _) => return decode_constant(inner, Some(attribute)),
        (Type::Bool, AttributeValue::Int(v)) => IValue::Bool(*v != 0),
        (Type::Int, AttributeValue::Int(v)) => IValue::Int(*v),
        (Type::Float, AttributeValue::Float(v)) => IValue::Double(*v),
        (Type::Float, AttributeValue::Int(v)) => IValue::Double(*v as f64),
        (Type::Number, AttributeValue::Int(v)) => IValue::Int(*v),
        (Type::Number, AttributeValue::Float(v)) => IValue::Double(*v),
        (Type::Complex | Type::Number, AttributeValue::Complex(re, im)) => {
            IValue::Complex(ferrojit_tensor::Complex128::new(*re, *im))
        }
        (Type::Str, AttributeValue::Str(v)) => IValue::string(v),
        (Type::Device, AttributeValue::Str(v)) => IValue::from(Device::parse(v)?),
        // `torch.Generator(device="cpu", seed=N)`, made once per compiled graph, as PyTorch's
        // constant is: calls share (and advance) it.
        (Type::Generator, AttributeValue::Int(seed)) => {
            IValue::Generator(ferrojit_tensor::ops::random::new_generator(*seed as u64))
        }
        (Type::Tensor, AttributeValue::Tensor(t)) => IValue::from(t.clone()),
        // Constant propagation types a tensor constant with its static facts
        // (`Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)`), as PyTorch prints it.
        (Type::RefinedTensor(_), AttributeValue::Tensor(t)) => IValue::from(t.clone()),
        (Type::List(element), AttributeValue::Tensors(tensors))
            if matches!(**element, Type::Tensor | Type::RefinedTensor(_)) =>
        {
            IValue::list(
                Type::Tensor,
                tensors.iter().cloned().map(IValue::from).collect(),
            )
        }
        (Type::List(element), AttributeValue::Ints(values)) => match element.as_ref() {
            Type::Int => IValue::int_list(values),
            Type::Bool => IValue::list(
                Type::Bool,
                values.iter().map(|&v| IValue::Bool(v != 0)).collect(),
            ),
            _ => return Err(mismatch()),
        },
        (Type::List(element), AttributeValue::Floats(values)) if **element == Type::Float => {
            IValue::list(
                Type::Float,
                values.iter().map(|&v| IValue::Double(v)).collect(),
            )
        }
        (Type::List(element), AttributeValue::Strs(values)) if **element == Type::Str => {
            IValue::list(
                Type::Str,
                values.iter().map(|v| IValue::string(v)).collect(),
            )
        }
        _ => return Err(mismatch()),
    })
}

/// A schema default as a value (`MemoryFormat`/`Layout`/reduction names map to their c10 ints).
pub fn default_value(default: &DefaultValue, ty: &Type) -> Result<IValue> {
    let element = match ty {
        Type::Optional(inner) => inner.as_ref(),
        other => other,
    };
    Ok(match default {
        DefaultValue::None => IValue::None,
        DefaultValue::Bool(v) => IValue::Bool(*v),
        DefaultValue::Int(v) => match element {
            Type::Float => IValue::Double(*v as f64),
            _ => IValue::Int(*v),
        },
        DefaultValue::Float(v) => IValue::Double(*v),
        DefaultValue::Str(v) => IValue::string(v),
        DefaultValue::IntList(values) => IValue::int_list(values),
        DefaultValue::FloatList(values) => IValue::list(
            Type::Float,
            values.iter().map(|&v| IValue::Double(v)).collect(),
        ),
        DefaultValue::BoolList(values) => IValue::list(
            Type::Bool,
            values.iter().map(|&v| IValue::Bool(v)).collect(),
        ),
        DefaultValue::EmptyList => match element {
            Type::List(inner) => IValue::list(inner.as_ref().clone(), Vec::new()),
            _ => IValue::list(Type::Any, Vec::new()),
        },
        DefaultValue::Named(name) => IValue::Int(match name.as_str() {
            "contiguous_format" | "strided" | "None" => 0,
            "preserve_format" | "Mean" => 1,
            "channels_last" | "Sum" => 2,
            "long" => 4,
            other => {
                return Err(invalid(format!("unsupported schema default '{other}'")));
            }
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interpreter::run_graph;
    use crate::object::NoMethods;
    use ferrojit_ir::parse_schema;

    fn op(graph: &mut Graph, schema: &str, inputs: &[ValueId], output: Type) -> ValueId {
        let schema = parse_schema(schema).unwrap();
        let node = graph.insert(&schema.name, inputs, &[output]);
        graph.set_node_schema(node, Some(Arc::new(schema)));
        graph.node_outputs(node)[0]
    }

    /// `(x + x) < 10` with folded operands: numbers run inline, anything else through the
    /// kernel with the operands pushed as the folded instructions would have.
    #[test]
    fn folded_number_operators_fall_back_to_their_kernels() {
        let mut g = Graph::new();
        let x = g.add_input(Type::Number, Some("x"));
        let sum = op(
            &mut g,
            "aten::add(Scalar a, Scalar b) -> Scalar",
            &[x, x],
            Type::Number,
        );
        let ten = g.insert_constant(Some(AttributeValue::Int(10)), Type::Int);
        let less = op(
            &mut g,
            "aten::lt(Scalar a, Scalar b) -> bool",
            &[sum, ten],
            Type::Bool,
        );
        g.register_output(sum);
        g.register_output(less);
        let code = compile(&g).unwrap();
        let folded = code
            .instructions
            .iter()
            .filter(|i| {
                matches!(
                    i,
                    Instruction::NumberWith { .. } | Instruction::NumberInto { .. }
                )
            })
            .count();
        assert!(folded >= 1, "{code}");
        let run = |value: IValue| run_graph(&g, vec![value], &NoMethods).unwrap();
        let outputs = run(IValue::Int(3));
        assert!(matches!(outputs[..], [IValue::Int(6), IValue::Bool(true)]));
        let outputs = run(IValue::Double(7.5));
        assert!(matches!(outputs[..], [IValue::Double(s), IValue::Bool(false)] if s == 15.0));
        // Bools are numbers to the kernel only.
        let outputs = run(IValue::Bool(true));
        assert!(matches!(outputs[..], [IValue::Int(2), IValue::Bool(true)]));
        let error = run_graph(&g, vec![IValue::from("a")], &NoMethods).unwrap_err();
        assert!(error.to_string().contains("Scalar"), "{error}");
    }
}
