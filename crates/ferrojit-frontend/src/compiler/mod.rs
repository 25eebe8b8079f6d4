//! The TorchScript compiler: turns one `def` (a free function or a method) into an SSA graph
//! in the shape PyTorch's `ir_emitter` + `ConvertToSSA` + cleanup passes produce.
//!
//! Variables live in a stack of frames (one per block being emitted). `if` branches that
//! assign variables become `prim::If` outputs (sorted by name, as PyTorch's `std::set`);
//! loops carry every variable that the body assigns and that exists before the loop. Early
//! returns are handled by emitting the code that follows an `if` into the branch that does
//! not return, which is the structure PyTorch's exit transform leaves after its cleanups.

mod calls;
mod expressions;
mod for_loops;
mod fork;
mod isinstance;
mod statements;
mod sugared;
mod torch_functional;
pub(crate) mod types;

use ferrojit_ir::Prim;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use ferrojit_ir::{
    AttributeValue, BlockId, ClassType, Graph, InsertPoint, NamedTupleType, NodeId, SourceLocation,
    Type, ValueDefinition, ValueId,
};

use crate::ast::Def;
use crate::compilation_unit::CompilationUnit;
use crate::error::FrontendError;
use crate::source::SourceRange;

/// What the compiler needs to know about where a function lives.
pub(crate) struct CompileContext<'a> {
    pub unit: &'a CompilationUnit,
    /// Qualifier of the defining file, e.g. `__torch__.torch.nn.modules.linear`.
    pub qualifier: &'a str,
    /// The class whose method is being compiled (`None` for free functions).
    pub owner: Option<Arc<ClassType>>,
    /// The simple name of the function or method being compiled.
    pub function_name: &'a str,
}

/// A compile-time-only value a name can stand for (PyTorch's non-simple `SugaredValue`s):
/// calling it or reading its attributes emits code, but it has no run-time value itself.
#[derive(Debug, Clone)]
pub(crate) enum Sugared {
    /// A free function of the compilation unit, by qualified name.
    Function(String),
    /// A script class: calling it constructs an instance.
    Class(Arc<ClassType>),
    /// `C.__new__`: allocates an instance without running `__init__`.
    ClassNew(Arc<ClassType>),
    /// A NamedTuple class: calling it builds the tuple.
    NamedTuple(Arc<NamedTupleType>),
    /// An enum class: its members are attributes, and it iterates over them.
    Enum(Arc<crate::compilation_unit::EnumInfo>),
    /// A builtin reached through a module path (`torch.jit.fork`), by canonical name.
    Builtin(String),
    /// A function defined inside the function being compiled (a closure for `fork`).
    Closure(Arc<Def>),
}

/// One formal parameter of the function being compiled.
pub(crate) struct Parameter {
    pub name: String,
    pub ty: Type,
}

/// Compiles `def` into a verified graph. `declared_return` is `None` when the return type
/// is to be inferred from the body.
pub(crate) fn compile_function(
    context: CompileContext<'_>,
    def: &Def,
    parameters: &[Parameter],
    declared_return: Option<Type>,
) -> Result<Graph, FrontendError> {
    compile_function_with_names(context, def, parameters, declared_return, BTreeMap::new())
}

/// Compiles `def` with some names already bound to sugared values (a closure sees the
/// functions its enclosing function bound).
pub(crate) fn compile_function_with_names(
    context: CompileContext<'_>,
    def: &Def,
    parameters: &[Parameter],
    declared_return: Option<Type>,
    sugared: BTreeMap<String, Sugared>,
) -> Result<Graph, FrontendError> {
    let mut emitter = Emitter::new(context, declared_return);
    emitter.frames[0].sugared = sugared;
    for parameter in parameters {
        let value = emitter
            .graph
            .add_input(parameter.ty.clone(), Some(&parameter.name));
        emitter.frames[0].vars.insert(parameter.name.clone(), value);
    }
    let exit = emitter.emit_statements(&def.body, &[], true)?;
    let output = match exit {
        Exit::Returns(value) => value,
        Exit::FallsThrough => {
            emitter.location = None;
            let none = emitter.none_constant();
            emitter.check_return_type(none, &def.name.range)?;
            none
        }
        Exit::Raises => {
            let ty = emitter.declared_return.clone().unwrap_or(Type::NoneType);
            emitter.uninitialized(ty)
        }
        Exit::LoopEnd(_) => {
            return Err(FrontendError::new(
                "internal compiler error: loop exit outside of a loop",
                def.name.range.clone(),
            ))
        }
    };
    emitter.graph.register_output(output);
    ferrojit_opt::cleanup::eliminate_dead_code_and_pool_constants(&mut emitter.graph);
    ferrojit_ir::verifier::verify(&emitter.graph).map_err(|error| {
        FrontendError::new(
            format!(
                "internal compiler error: the graph built for this function is invalid ({error})"
            ),
            def.name.range.clone(),
        )
    })?;
    Ok(emitter.graph)
}

/// How control leaves a statement list.
#[derive(Debug, Clone)]
pub(crate) enum Exit {
    FallsThrough,
    Returns(ValueId),
    Raises,
    /// The end of a loop body was reached (by falling off it, `continue`, `break` or a
    /// `return` inside the loop): the values are the body block's outputs, the continue
    /// condition followed by the carried variables (PyTorch's exit transform, done while
    /// emitting).
    LoopEnd(Vec<ValueId>),
}

/// The loop whose body is being emitted.
pub(crate) struct LoopContext {
    /// Variables carried around the loop, in block-output order.
    pub carried: Vec<String>,
    /// `while` loops re-test their condition at `continue` and at the end of the body.
    pub while_test: Option<crate::ast::Expr>,
}

/// Hidden variables a `return` inside a loop sets before leaving the loop.
pub(crate) const DID_RETURN: &str = "$did_return";
pub(crate) const RETURN_VALUE: &str = "$return_value";

/// Variables assigned in one block. Sorted, because PyTorch orders block outputs by name.
pub(crate) struct Frame {
    pub block: BlockId,
    pub vars: BTreeMap<String, ValueId>,
    /// Variables defined on only one side of an `if`: using one is PyTorch's
    /// "x is not defined in the false branch" error.
    /// PyTorch reports it at the `if` (stored here) with a note at the use.
    pub partly_defined: BTreeMap<String, (&'static str, SourceRange)>,
    /// Types from annotations (`o: Optional[int] = None`): later assignments are checked
    /// against these rather than against the type of the first value.
    pub declared: BTreeMap<String, Type>,
    /// Names bound to compile-time values (`_0 = __torch__.m.helper`).
    pub sugared: BTreeMap<String, Sugared>,
}

pub(crate) struct Emitter<'a> {
    pub context: CompileContext<'a>,
    pub graph: Graph,
    pub frames: Vec<Frame>,
    pub declared_return: Option<Type>,
    /// `[]` literals without a type: retyped by schema matching like PyTorch's
    /// `prim::EmptyListLiteral`.
    pub empty_list_literals: HashSet<ValueId>,
    /// Source range of the construct being emitted; recorded on new nodes.
    pub location: Option<SourceRange>,
    pub loop_depth: usize,
    pub loops: Vec<LoopContext>,
    /// The annotated type of the attribute assignment being emitted (`self.x: T = v`).
    pub pending_attribute_type: Option<Type>,
}

/// PyTorch's `meaningfulName`: `_0`, `_12` are printer temporaries and do not name values.
pub(crate) fn meaningful_name(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        None | Some('$') => false,
        Some('_') => !chars.all(|c| c.is_ascii_digit()),
        Some(_) => true,
    }
}

impl<'a> Emitter<'a> {
    fn new(context: CompileContext<'a>, declared_return: Option<Type>) -> Emitter<'a> {
        let graph = Graph::new();
        let top = graph.top_block();
        Emitter {
            context,
            graph,
            frames: vec![Frame {
                block: top,
                vars: BTreeMap::new(),
                partly_defined: BTreeMap::new(),
                declared: BTreeMap::new(),
                sugared: BTreeMap::new(),
            }],
            declared_return,
            empty_list_literals: HashSet::new(),
            location: None,
            loop_depth: 0,
            loops: Vec::new(),
            pending_attribute_type: None,
        }
    }

    pub fn error(&self, message: impl Into<String>, range: &SourceRange) -> FrontendError {
        FrontendError::new(message, range.clone())
    }

    // ----- blocks and insertion --------------------------------------------------------

    pub fn current_block(&self) -> BlockId {
        self.frames
            .last()
            .map(|f| f.block)
            .unwrap_or_else(|| self.graph.top_block())
    }

    pub fn push_frame(&mut self, block: BlockId) {
        self.frames.push(Frame {
            block,
            vars: BTreeMap::new(),
            partly_defined: BTreeMap::new(),
            declared: BTreeMap::new(),
            sugared: BTreeMap::new(),
        });
        self.graph.set_insert_point(InsertPoint::EndOf(block));
    }

    pub fn pop_frame(&mut self) -> Frame {
        let frame = self.frames.pop().unwrap_or(Frame {
            block: self.graph.top_block(),
            vars: BTreeMap::new(),
            partly_defined: BTreeMap::new(),
            declared: BTreeMap::new(),
            sugared: BTreeMap::new(),
        });
        let block = self.current_block();
        self.graph.set_insert_point(InsertPoint::EndOf(block));
        frame
    }

    fn source_location(&self) -> Option<SourceLocation> {
        self.location.as_ref().map(|range| {
            let (line, column) = range.line_col();
            SourceLocation {
                file: Arc::from(range.file.name()),
                line: line as u32,
                column: column.saturating_sub(1) as u32,
                range: Some(range.clone()),
            }
        })
    }

    /// Inserts a node at the end of the current block, recording the current location.
    pub fn insert(&mut self, kind: &str, inputs: &[ValueId], output_types: &[Type]) -> NodeId {
        let node = self.graph.insert(kind, inputs, output_types);
        self.graph.set_source_location(node, self.source_location());
        node
    }

    pub fn insert_one(&mut self, kind: &str, inputs: &[ValueId], output_type: Type) -> ValueId {
        let node = self.insert(kind, inputs, &[output_type]);
        self.graph.node_output(node, 0)
    }

    pub fn constant(&mut self, value: Option<AttributeValue>, ty: Type) -> ValueId {
        let value = self.graph.insert_constant(value, ty);
        if let Some(node) = self.graph.producer(value) {
            self.graph.set_source_location(node, self.source_location());
        }
        value
    }

    pub fn int_constant(&mut self, value: i64) -> ValueId {
        self.constant(Some(AttributeValue::Int(value)), Type::Int)
    }

    pub fn float_constant(&mut self, value: f64) -> ValueId {
        self.constant(Some(AttributeValue::Float(value)), Type::Float)
    }

    pub fn complex_constant(&mut self, real: f64, imaginary: f64) -> ValueId {
        self.constant(
            Some(AttributeValue::Complex(real, imaginary)),
            Type::Complex,
        )
    }

    pub fn bool_constant(&mut self, value: bool) -> ValueId {
        self.constant(Some(AttributeValue::Int(value as i64)), Type::Bool)
    }

    pub fn str_constant(&mut self, value: &str) -> ValueId {
        self.constant(Some(AttributeValue::Str(value.to_string())), Type::Str)
    }

    pub fn none_constant(&mut self) -> ValueId {
        self.constant(None, Type::NoneType)
    }

    /// `prim::Uninitialized` of `ty`, placed at the top of the graph as PyTorch does.
    pub fn uninitialized(&mut self, ty: Type) -> ValueId {
        let saved = self.graph.insert_point();
        let top = self.graph.top_block();
        match self.graph.block_nodes(top).first() {
            Some(&first) => self.graph.set_insert_point(InsertPoint::Before(first)),
            None => self.graph.set_insert_point(InsertPoint::EndOf(top)),
        }
        let node = self.graph.insert(Prim::Uninitialized.name(), &[], &[ty]);
        self.graph.set_insert_point(saved);
        self.graph.node_output(node, 0)
    }

    // ----- variables ----------------------------------------------------------------------

    pub fn lookup(&self, name: &str) -> Option<ValueId> {
        self.frames
            .iter()
            .rev()
            .find_map(|frame| frame.vars.get(name).copied())
    }

    /// The annotated type of a variable, if it was declared with one.
    pub fn lookup_declared(&self, name: &str) -> Option<Type> {
        self.frames
            .iter()
            .rev()
            .find_map(|frame| frame.declared.get(name).cloned())
    }

    fn lookup_outer(&self, name: &str) -> Option<ValueId> {
        let count = self.frames.len().saturating_sub(1);
        self.frames[..count]
            .iter()
            .rev()
            .find_map(|frame| frame.vars.get(name).copied())
    }

    fn defined_in_block(&self, value: ValueId, block: BlockId) -> bool {
        match self.graph.value_definition(value) {
            ValueDefinition::NodeOutput { node, .. } => {
                self.graph.node(node).owning_block == Some(block)
            }
            ValueDefinition::BlockParameter { block: owner, .. } => owner == block,
        }
    }

    /// Binds `name` to `value` in the current frame, naming the value as PyTorch does.
    pub fn set_var(
        &mut self,
        name: &str,
        value: ValueId,
        range: &SourceRange,
    ) -> Result<(), FrontendError> {
        self.bind_var(name, value, range, true)
    }

    /// Binds without giving the value a debug name.
    pub fn set_var_without_naming(
        &mut self,
        name: &str,
        value: ValueId,
        range: &SourceRange,
    ) -> Result<(), FrontendError> {
        self.bind_var(name, value, range, false)
    }

    fn bind_var(
        &mut self,
        name: &str,
        value: ValueId,
        range: &SourceRange,
        name_value: bool,
    ) -> Result<(), FrontendError> {
        if let Some(outer) = self.lookup_outer(name) {
            {
                let outer_type = self
                    .lookup_declared(name)
                    .unwrap_or_else(|| self.graph.value_type(outer).clone());
                let new_type = self.graph.value_type(value).clone();
                if !new_type.is_subtype_of(&outer_type) {
                    return Err(self.error(
                        format!(
                            "Variable '{name}' previously had type {} but is now being assigned to a value of type {}",
                            outer_type.annotation_str(),
                            new_type.annotation_str()
                        ),
                        range,
                    ));
                }
            }
        }
        let block = self.current_block();
        if name_value
            && self.graph.debug_name(value).is_none()
            && meaningful_name(name)
            && self.defined_in_block(value, block)
        {
            self.graph.set_debug_name(value, name);
        }
        if let Some(frame) = self.frames.last_mut() {
            frame.vars.insert(name.to_string(), value);
        }
        Ok(())
    }

    /// Checks a returned value against the declared return type.
    pub fn check_return_type(
        &self,
        value: ValueId,
        range: &SourceRange,
    ) -> Result<(), FrontendError> {
        if let Some(declared) = &self.declared_return {
            let actual = self.graph.value_type(value);
            if !actual.is_subtype_of(declared) {
                return Err(self.error(
                    format!(
                        "Return value was annotated as having type {} but is actually of type {}",
                        declared.annotation_str(),
                        actual.annotation_str()
                    ),
                    range,
                ));
            }
        }
        Ok(())
    }

    /// Whether `object` is `self` inside the `__init__` of `class`, where assignments to
    /// unknown attributes define them.
    pub fn is_init_self(&self, object: ValueId, class: &ClassType) -> bool {
        self.context.function_name == "__init__"
            && self
                .context
                .owner
                .as_ref()
                .is_some_and(|owner| owner.qualified_name() == class.qualified_name())
            && self.graph.inputs().first() == Some(&object)
    }

    pub fn type_resolver(&self) -> types::TypeResolver<'_> {
        types::TypeResolver {
            unit: self.context.unit,
            qualifier: self.context.qualifier,
        }
    }
}
