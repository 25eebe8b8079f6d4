//! Syntax tree for TorchScript source. Every node carries the [`SourceRange`] it was parsed from.
//!
//! Type annotations are ordinary expressions (`List[Tuple[int, Tensor]]` is a `Subscript`);
//! interpreting them is the compiler's job.

use crate::source::SourceRange;

/// A parsed file: its top-level statements.
#[derive(Debug, Clone)]
pub struct Module {
    pub body: Vec<Stmt>,
    pub range: SourceRange,
}

/// A name with its location (function, class, parameter, attribute, keyword names).
#[derive(Debug, Clone)]
pub struct Ident {
    pub name: String,
    pub range: SourceRange,
}

/// A `# type: ...` comment attached to a `def` or an assignment; `text` excludes `type:`.
#[derive(Debug, Clone)]
pub struct TypeComment {
    pub text: String,
    pub range: SourceRange,
}

#[derive(Debug, Clone)]
pub struct Stmt {
    pub kind: StmtKind,
    pub range: SourceRange,
}

#[derive(Debug, Clone)]
pub enum StmtKind {
    Def(Def),
    ClassDef(ClassDef),
    Assign(Assign),
    AugAssign(AugAssign),
    Return(Option<Expr>),
    /// `elif` is represented as an `If` that is the only statement of `orelse`.
    If(If),
    While(While),
    For(For),
    Break,
    Continue,
    Pass,
    Expr(Expr),
    Raise(Raise),
    Assert(Assert),
    Del(Vec<Expr>),
    With(With),
    Global(Vec<Ident>),
    Nonlocal(Vec<Ident>),
    /// `import a.b.c [as d], ...`
    Import(Vec<ImportAlias>),
    /// `from [.]a.b import c [as d], ...` (`names` empty with `star` for `import *`).
    ImportFrom(ImportFrom),
}

#[derive(Debug, Clone)]
pub struct Def {
    pub name: Ident,
    pub params: Vec<Param>,
    pub returns: Option<Expr>,
    pub body: Vec<Stmt>,
    /// Decorator expressions, in source order (`@torch.jit.export` → `Attribute`).
    pub decorators: Vec<Expr>,
    /// A `# type: (int, Tensor) -> Tensor` comment on the line(s) after the header.
    pub type_comment: Option<TypeComment>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// Ordinary parameter.
    Normal,
    /// Declared before a `/` marker.
    PositionalOnly,
    /// Declared after `*` or `*args`.
    KeywordOnly,
    /// `*args`
    VarPositional,
    /// `**kwargs`
    VarKeyword,
}

#[derive(Debug, Clone)]
pub struct Param {
    pub name: Ident,
    pub kind: ParamKind,
    pub annotation: Option<Expr>,
    pub default: Option<Expr>,
    pub range: SourceRange,
}

#[derive(Debug, Clone)]
pub struct ClassDef {
    pub name: Ident,
    pub bases: Vec<Expr>,
    /// `class C(Base, metaclass=M)` keyword arguments.
    pub keywords: Vec<Keyword>,
    pub body: Vec<Stmt>,
    pub decorators: Vec<Expr>,
}

/// `a = b`, `a = b = c`, `a, b = c`, `x: int = 3`, bare `x: int`.
#[derive(Debug, Clone)]
pub struct Assign {
    /// Left-hand sides, outermost first (`a = b = c` gives `[a, b]`). Exactly one when annotated.
    pub targets: Vec<Expr>,
    pub annotation: Option<Expr>,
    /// `None` only for a bare annotation `x : int`.
    pub value: Option<Expr>,
    pub type_comment: Option<TypeComment>,
}

#[derive(Debug, Clone)]
pub struct AugAssign {
    pub target: Expr,
    pub op: BinOpKind,
    pub value: Expr,
}

#[derive(Debug, Clone)]
pub struct If {
    pub test: Expr,
    pub body: Vec<Stmt>,
    pub orelse: Vec<Stmt>,
}

#[derive(Debug, Clone)]
pub struct While {
    pub test: Expr,
    pub body: Vec<Stmt>,
    /// Python's `while ... else:`; not TorchScript, kept so the compiler can reject it.
    pub orelse: Vec<Stmt>,
}

#[derive(Debug, Clone)]
pub struct For {
    pub target: Expr,
    pub iter: Expr,
    pub body: Vec<Stmt>,
    /// Python's `for ... else:`; not TorchScript, kept so the compiler can reject it.
    pub orelse: Vec<Stmt>,
}

#[derive(Debug, Clone)]
pub struct Raise {
    pub exc: Option<Expr>,
    pub cause: Option<Expr>,
}

#[derive(Debug, Clone)]
pub struct Assert {
    pub test: Expr,
    pub msg: Option<Expr>,
}

#[derive(Debug, Clone)]
pub struct With {
    pub items: Vec<WithItem>,
    pub body: Vec<Stmt>,
}

#[derive(Debug, Clone)]
pub struct WithItem {
    pub context: Expr,
    pub target: Option<Expr>,
    pub range: SourceRange,
}

#[derive(Debug, Clone)]
pub struct ImportAlias {
    /// Dotted name, e.g. `torch.nn.functional` (or a single name in `from ... import`).
    pub name: String,
    pub alias: Option<Ident>,
    pub range: SourceRange,
}

#[derive(Debug, Clone)]
pub struct ImportFrom {
    /// Dotted module name without leading dots (may be empty for `from . import x`).
    pub module: String,
    /// Number of leading dots (relative import level).
    pub level: usize,
    pub names: Vec<ImportAlias>,
    pub star: bool,
}

#[derive(Debug, Clone)]
pub struct Expr {
    pub kind: ExprKind,
    pub range: SourceRange,
}

#[derive(Debug, Clone)]
pub enum ExprKind {
    Name(String),
    /// Integer literal magnitude (negative numbers are `UnaryOp(Neg, Int)`).
    Int(u64),
    Float(f64),
    /// Imaginary literal `2j`: the complex number with real part 0 and this imaginary part.
    Imaginary(f64),
    /// String literal; adjacent literals are concatenated into one.
    Str(String),
    /// f-string (or concatenation containing one): the raw template text with `{...}` fields
    /// unparsed; braces from plain parts are doubled so the template stays unambiguous.
    FString(String),
    Bool(bool),
    None,
    Ellipsis,
    Attribute {
        value: Box<Expr>,
        attr: Ident,
    },
    Call {
        func: Box<Expr>,
        /// Positional arguments; `*xs` appears as `Starred`.
        args: Vec<Expr>,
        keywords: Vec<Keyword>,
    },
    /// `value[index]`; several indices form a `Tuple`, slices are `Slice`.
    Subscript {
        value: Box<Expr>,
        index: Box<Expr>,
    },
    /// `lower:upper:step` inside a subscript.
    Slice {
        lower: Option<Box<Expr>>,
        upper: Option<Box<Expr>>,
        step: Option<Box<Expr>>,
    },
    BinOp {
        op: BinOpKind,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    UnaryOp {
        op: UnaryOpKind,
        operand: Box<Expr>,
    },
    /// `a and b and c` is one node with three values.
    BoolOp {
        op: BoolOpKind,
        values: Vec<Expr>,
    },
    /// Chained comparison `a < b <= c`: `ops.len() == comparators.len()`.
    Compare {
        left: Box<Expr>,
        ops: Vec<CmpOpKind>,
        comparators: Vec<Expr>,
    },
    /// `body if test else orelse`
    IfExp {
        test: Box<Expr>,
        body: Box<Expr>,
        orelse: Box<Expr>,
    },
    Tuple(Vec<Expr>),
    List(Vec<Expr>),
    Set(Vec<Expr>),
    Dict {
        keys: Vec<Expr>,
        values: Vec<Expr>,
    },
    ListComp {
        elt: Box<Expr>,
        generators: Vec<Comprehension>,
    },
    DictComp {
        key: Box<Expr>,
        value: Box<Expr>,
        generators: Vec<Comprehension>,
    },
    Starred(Box<Expr>),
}

/// `name=value` in a call, or `**value` when `name` is `None`.
#[derive(Debug, Clone)]
pub struct Keyword {
    pub name: Option<Ident>,
    pub value: Expr,
    pub range: SourceRange,
}

/// One `for target in iter if cond...` clause of a comprehension.
#[derive(Debug, Clone)]
pub struct Comprehension {
    pub target: Expr,
    pub iter: Expr,
    pub ifs: Vec<Expr>,
    pub range: SourceRange,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOpKind {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    MatMul,
    BitAnd,
    BitOr,
    BitXor,
    LShift,
    RShift,
}

impl BinOpKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BinOpKind::Add => "+",
            BinOpKind::Sub => "-",
            BinOpKind::Mul => "*",
            BinOpKind::Div => "/",
            BinOpKind::FloorDiv => "//",
            BinOpKind::Mod => "%",
            BinOpKind::Pow => "**",
            BinOpKind::MatMul => "@",
            BinOpKind::BitAnd => "&",
            BinOpKind::BitOr => "|",
            BinOpKind::BitXor => "^",
            BinOpKind::LShift => "<<",
            BinOpKind::RShift => ">>",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOpKind {
    /// `-x`
    Neg,
    /// `+x`
    Pos,
    /// `~x`
    Invert,
    /// `not x`
    Not,
}

impl UnaryOpKind {
    pub fn as_str(self) -> &'static str {
        match self {
            UnaryOpKind::Neg => "-",
            UnaryOpKind::Pos => "+",
            UnaryOpKind::Invert => "~",
            UnaryOpKind::Not => "not",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BoolOpKind {
    And,
    Or,
}

impl BoolOpKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BoolOpKind::And => "and",
            BoolOpKind::Or => "or",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOpKind {
    Eq,
    NotEq,
    Lt,
    Le,
    Gt,
    Ge,
    Is,
    IsNot,
    In,
    NotIn,
}

impl CmpOpKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CmpOpKind::Eq => "==",
            CmpOpKind::NotEq => "!=",
            CmpOpKind::Lt => "<",
            CmpOpKind::Le => "<=",
            CmpOpKind::Gt => ">",
            CmpOpKind::Ge => ">=",
            CmpOpKind::Is => "is",
            CmpOpKind::IsNot => "is not",
            CmpOpKind::In => "in",
            CmpOpKind::NotIn => "not in",
        }
    }
}

impl Expr {
    pub fn new(kind: ExprKind, range: SourceRange) -> Expr {
        Expr { kind, range }
    }

    /// The dotted name this expression spells (`torch.jit.export`), if it is only names
    /// and attribute accesses.
    pub fn dotted_name(&self) -> Option<String> {
        let mut parts = Vec::new();
        let mut current = self;
        loop {
            match &current.kind {
                ExprKind::Name(name) => {
                    parts.push(name.as_str());
                    break;
                }
                ExprKind::Attribute { value, attr } => {
                    parts.push(attr.name.as_str());
                    current = value;
                }
                _ => return None,
            }
        }
        parts.reverse();
        Some(parts.join("."))
    }
}
