//! Parser for TorchScript source: recursive descent for statements, precedence climbing (Pratt)
//! for expressions with Python's operator precedence.
//!
//! Nesting (blocks, brackets, operator chains) is bounded by [`MAX_NESTING_DEPTH`] so that
//! hostile input yields an error instead of overflowing the stack, both here and in later
//! passes that walk the tree recursively.

use std::sync::{Arc, Mutex};

use crate::ast::{
    Assert, Assign, AugAssign, BinOpKind, BoolOpKind, ClassDef, CmpOpKind, Comprehension, Def,
    Expr, ExprKind, For, Ident, If, ImportAlias, ImportFrom, Keyword as KeywordArg, Module, Param,
    ParamKind, Raise, Stmt, StmtKind, TypeComment, UnaryOpKind, While, With, WithItem,
};
use crate::error::{ErrorKind, FrontendError};
use crate::lexer::{tokenize, Keyword, Punct, Token, TokenKind};
use crate::source::{SourceFile, SourceRange};

/// Deepest allowed nesting of blocks, brackets and operator applications.
pub const MAX_NESTING_DEPTH: usize = 256;

/// Stack reserved for the parsing thread. Unoptimized builds use over 10 KiB of stack per
/// nesting level, more than a default 2 MiB test thread can give for [`MAX_NESTING_DEPTH`]
/// levels; the memory is only reserved, pages are touched as the recursion goes.
pub const LARGE_STACK_BYTES: usize = 64 << 20;

/// Nesting depth that is safe to parse on whatever thread the caller is on. Parsing runs on
/// the caller's thread with this limit first; only input nested deeper (rare: real files nest
/// a few levels) is parsed again, on a helper thread with a [`LARGE_STACK_BYTES`] stack and
/// the full [`MAX_NESTING_DEPTH`] limit. The parse is deterministic, so the first attempt
/// fails with `TooDeeplyNested` exactly when the input nests deeper than this, and any other
/// result is the one the full-limit parse would give.
const SMALL_DEPTH_BOUND: usize = 48;

/// Tokenizes `file` and runs `parse` on it within the nesting limits (see
/// [`SMALL_DEPTH_BOUND`]), so that no input can overflow the stack.
fn parse_bounded<T: Send>(
    file: Arc<SourceFile>,
    parse: fn(&mut Parser) -> Result<T, FrontendError>,
) -> Result<T, FrontendError> {
    let tokens = tokenize(&file)?;
    let mut parser = Parser::new(file.clone(), tokens, SMALL_DEPTH_BOUND);
    match parse(&mut parser) {
        Err(error) if error.kind == ErrorKind::TooDeeplyNested => {
            let tokens = tokenize(&file)?;
            run_on_large_stack(move || parse(&mut Parser::new(file, tokens, MAX_NESTING_DEPTH)))
        }
        result => result,
    }
}

/// Runs `work` on a helper thread with a [`LARGE_STACK_BYTES`] stack and returns its result
/// (panics are propagated). Falls back to the current thread if no thread can be started.
/// The compiler can use this too when it walks deeply nested trees recursively.
pub fn run_on_large_stack<T, F>(work: F) -> T
where
    F: FnOnce() -> T + Send,
    T: Send,
{
    let slot = Mutex::new(Some(work));
    let take = |slot: &Mutex<Option<F>>| match slot.lock() {
        Ok(mut guard) => guard.take(),
        Err(poisoned) => poisoned.into_inner().take(),
    };
    let spawned = std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("ferrojit-parse".to_string())
            .stack_size(LARGE_STACK_BYTES)
            .spawn_scoped(scope, || take(&slot).map(|work| work()));
        match handle {
            Ok(handle) => match handle.join() {
                Ok(result) => result,
                Err(payload) => std::panic::resume_unwind(payload),
            },
            Err(_) => None,
        }
    });
    match spawned {
        Some(result) => result,
        // The thread could not be started, so `work` is still in the slot.
        None => match take(&slot) {
            Some(work) => work(),
            None => unreachable!("work was neither run nor left in its slot"),
        },
    }
}

/// Parses a whole file into its top-level statements.
pub fn parse_file(file: Arc<SourceFile>) -> Result<Module, FrontendError> {
    parse_bounded(file, parse_module)
}

fn parse_module(parser: &mut Parser) -> Result<Module, FrontendError> {
    let mut body = Vec::new();
    while !parser.at_kind(&TokenKind::Eof) {
        if parser.at_kind(&TokenKind::Newline) {
            parser.bump();
            continue;
        }
        body.extend(parser.parse_statement()?);
    }
    let range = SourceRange::whole_file(parser.file.clone());
    Ok(Module { body, range })
}

/// Parses a file consisting of a single expression (e.g. a type string such as
/// `List[Tuple[int, Tensor]]`). Surrounding whitespace and newlines are allowed; a top-level
/// comma makes a `Tuple`.
pub fn parse_expression(file: Arc<SourceFile>) -> Result<Expr, FrontendError> {
    parse_bounded(file, parse_whole_expression)
}

fn parse_whole_expression(parser: &mut Parser) -> Result<Expr, FrontendError> {
    while parser.at_kind(&TokenKind::Newline) || parser.at_kind(&TokenKind::Indent) {
        parser.bump();
    }
    let expr = parser.parse_testlist(false)?;
    while parser.at_kind(&TokenKind::Newline) || parser.at_kind(&TokenKind::Dedent) {
        parser.bump();
    }
    if !parser.at_kind(&TokenKind::Eof) {
        return Err(parser.unexpected("end of expression"));
    }
    Ok(expr)
}

/// Convenience: [`parse_expression`] on `text` in a file named `name`.
pub fn parse_expression_str(name: &str, text: &str) -> Result<Expr, FrontendError> {
    parse_expression(SourceFile::new(name, text))
}

// Binding powers, lowest first.
const BP_IFEXP: u8 = 1;
const BP_OR: u8 = 2;
const BP_AND: u8 = 3;
const BP_NOT: u8 = 4;
const BP_CMP: u8 = 5;
const BP_BITOR: u8 = 6;
const BP_BITXOR: u8 = 7;
const BP_BITAND: u8 = 8;
const BP_SHIFT: u8 = 9;
const BP_ARITH: u8 = 10;
const BP_TERM: u8 = 11;
const BP_UNARY: u8 = 12;
const BP_POW: u8 = 13;

fn binary_operator(punct: Punct) -> Option<(BinOpKind, u8)> {
    Some(match punct {
        Punct::Pipe => (BinOpKind::BitOr, BP_BITOR),
        Punct::Caret => (BinOpKind::BitXor, BP_BITXOR),
        Punct::Amp => (BinOpKind::BitAnd, BP_BITAND),
        Punct::LShift => (BinOpKind::LShift, BP_SHIFT),
        Punct::RShift => (BinOpKind::RShift, BP_SHIFT),
        Punct::Plus => (BinOpKind::Add, BP_ARITH),
        Punct::Minus => (BinOpKind::Sub, BP_ARITH),
        Punct::Star => (BinOpKind::Mul, BP_TERM),
        Punct::Slash => (BinOpKind::Div, BP_TERM),
        Punct::DoubleSlash => (BinOpKind::FloorDiv, BP_TERM),
        Punct::Percent => (BinOpKind::Mod, BP_TERM),
        Punct::At => (BinOpKind::MatMul, BP_TERM),
        Punct::DoubleStar => (BinOpKind::Pow, BP_POW),
        _ => return None,
    })
}

fn augmented_operator(punct: Punct) -> Option<BinOpKind> {
    Some(match punct {
        Punct::PlusAssign => BinOpKind::Add,
        Punct::MinusAssign => BinOpKind::Sub,
        Punct::StarAssign => BinOpKind::Mul,
        Punct::SlashAssign => BinOpKind::Div,
        Punct::DoubleSlashAssign => BinOpKind::FloorDiv,
        Punct::PercentAssign => BinOpKind::Mod,
        Punct::DoubleStarAssign => BinOpKind::Pow,
        Punct::AtAssign => BinOpKind::MatMul,
        Punct::AmpAssign => BinOpKind::BitAnd,
        Punct::PipeAssign => BinOpKind::BitOr,
        Punct::CaretAssign => BinOpKind::BitXor,
        Punct::LShiftAssign => BinOpKind::LShift,
        Punct::RShiftAssign => BinOpKind::RShift,
        _ => return None,
    })
}

fn describe_expr(expr: &Expr) -> &'static str {
    match &expr.kind {
        ExprKind::Call { .. } => "function call",
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Imaginary(_)
        | ExprKind::Str(_)
        | ExprKind::FString(_) => "literal",
        ExprKind::Bool(_) | ExprKind::None | ExprKind::Ellipsis => "constant",
        ExprKind::BinOp { .. } | ExprKind::UnaryOp { .. } | ExprKind::BoolOp { .. } => "expression",
        ExprKind::Compare { .. } => "comparison",
        ExprKind::IfExp { .. } => "conditional expression",
        ExprKind::ListComp { .. } | ExprKind::DictComp { .. } => "comprehension",
        ExprKind::Dict { .. } => "dict literal",
        ExprKind::Set(_) => "set display",
        _ => "expression",
    }
}

struct Parser {
    file: Arc<SourceFile>,
    tokens: Vec<Token>,
    position: usize,
    /// `# type:` comments, in source order, not yet attached to a node.
    type_comments: Vec<TypeComment>,
    /// Current nesting depth (see [`MAX_NESTING_DEPTH`]).
    depth: usize,
    /// The deepest nesting this parse allows (see [`SMALL_DEPTH_BOUND`]).
    max_depth: usize,
    /// End offset of the last consumed non-layout token, for node ranges.
    last_end: usize,
    /// Returned by `peek` past the end; the lexer always ends with `Eof` anyway.
    eof: Token,
}

impl Parser {
    fn new(file: Arc<SourceFile>, all_tokens: Vec<Token>, max_depth: usize) -> Parser {
        let mut tokens = Vec::with_capacity(all_tokens.len());
        let mut type_comments = Vec::new();
        for token in all_tokens {
            match token.kind {
                TokenKind::TypeComment(text) => type_comments.push(TypeComment {
                    text,
                    range: token.range,
                }),
                _ => tokens.push(token),
            }
        }
        let end = file.text().len();
        let eof = Token {
            kind: TokenKind::Eof,
            range: SourceRange::new(file.clone(), end, end),
        };
        Parser {
            file,
            tokens,
            position: 0,
            type_comments,
            depth: 0,
            max_depth: max_depth.min(MAX_NESTING_DEPTH),
            last_end: 0,
            eof,
        }
    }

    // ----- token cursor -----

    fn peek(&self) -> &Token {
        self.tokens.get(self.position).unwrap_or(&self.eof)
    }

    fn peek_nth(&self, ahead: usize) -> &Token {
        self.tokens.get(self.position + ahead).unwrap_or(&self.eof)
    }

    /// Consumes the current token. Its kind is moved out, not cloned (names own a `String`):
    /// the parser never looks back at a consumed token.
    fn bump(&mut self) -> Token {
        let token = match self.tokens.get_mut(self.position) {
            Some(token) => {
                self.position += 1;
                Token {
                    kind: std::mem::replace(&mut token.kind, TokenKind::Newline),
                    range: token.range.clone(),
                }
            }
            None => self.eof.clone(),
        };
        if !matches!(
            token.kind,
            TokenKind::Newline | TokenKind::Indent | TokenKind::Dedent | TokenKind::Eof
        ) {
            self.last_end = token.range.end;
        }
        token
    }

    fn at_kind(&self, kind: &TokenKind) -> bool {
        &self.peek().kind == kind
    }

    fn at_punct(&self, punct: Punct) -> bool {
        self.peek().kind == TokenKind::Punct(punct)
    }

    fn at_keyword(&self, keyword: Keyword) -> bool {
        self.peek().kind == TokenKind::Keyword(keyword)
    }

    fn eat_punct(&mut self, punct: Punct) -> Option<Token> {
        self.at_punct(punct).then(|| self.bump())
    }

    fn eat_keyword(&mut self, keyword: Keyword) -> Option<Token> {
        self.at_keyword(keyword).then(|| self.bump())
    }

    fn expect_punct(&mut self, punct: Punct) -> Result<Token, FrontendError> {
        match self.eat_punct(punct) {
            Some(token) => Ok(token),
            None => Err(self.unexpected(&format!("'{}'", punct.as_str()))),
        }
    }

    fn expect_keyword(&mut self, keyword: Keyword) -> Result<Token, FrontendError> {
        match self.eat_keyword(keyword) {
            Some(token) => Ok(token),
            None => Err(self.unexpected(&format!("'{}'", keyword.as_str()))),
        }
    }

    fn expect_name(&mut self, what: &str) -> Result<Ident, FrontendError> {
        match &self.peek().kind {
            TokenKind::Name(name) => {
                let name = name.clone();
                let token = self.bump();
                Ok(Ident {
                    name,
                    range: token.range,
                })
            }
            _ => Err(self.unexpected(what)),
        }
    }

    /// "expected X but found Y" at the current token.
    fn unexpected(&self, expected: &str) -> FrontendError {
        let token = self.peek();
        let message = match token.kind {
            TokenKind::Indent => "unexpected indent".to_string(),
            _ => format!("expected {expected} but found {}", token.kind.describe()),
        };
        FrontendError::syntax(message, token.range.clone())
    }

    fn error_at(&self, message: impl Into<String>, range: SourceRange) -> FrontendError {
        FrontendError::syntax(message, range)
    }

    fn range_from(&self, start: usize) -> SourceRange {
        SourceRange::new(self.file.clone(), start, self.last_end.max(start))
    }

    /// One more level of nesting; errors out past the limit.
    fn descend(&mut self) -> Result<(), FrontendError> {
        self.depth += 1;
        if self.depth > self.max_depth {
            let range = self.peek().range.clone();
            return Err(FrontendError::syntax(
                format!("input is nested too deeply (more than {MAX_NESTING_DEPTH} levels)"),
                range,
            )
            .with_kind(ErrorKind::TooDeeplyNested));
        }
        Ok(())
    }

    /// Runs `parse` one nesting level deeper.
    fn nested<T>(
        &mut self,
        parse: impl FnOnce(&mut Parser) -> Result<T, FrontendError>,
    ) -> Result<T, FrontendError> {
        let saved = self.depth;
        let result = self.descend().and_then(|()| parse(self));
        self.depth = saved;
        result
    }

    /// Removes and returns the first unattached type comment starting in `[from, to)`.
    fn take_type_comment(&mut self, from: usize, to: usize) -> Option<TypeComment> {
        let index = self
            .type_comments
            .iter()
            .position(|comment| comment.range.start >= from && comment.range.start < to)?;
        Some(self.type_comments.remove(index))
    }

    fn at_statement_end(&self) -> bool {
        matches!(
            self.peek().kind,
            TokenKind::Newline | TokenKind::Eof | TokenKind::Punct(Punct::Semicolon)
        )
    }

    /// Whether the current token can begin an expression (used after commas).
    fn starts_expression(&self) -> bool {
        match &self.peek().kind {
            TokenKind::Name(_) | TokenKind::Int(_) | TokenKind::Float(_) | TokenKind::Str(_) => {
                true
            }
            TokenKind::Keyword(keyword) => matches!(
                keyword,
                Keyword::Not
                    | Keyword::None
                    | Keyword::True
                    | Keyword::False
                    | Keyword::Lambda
                    | Keyword::Await
                    | Keyword::Yield
            ),
            TokenKind::Punct(punct) => matches!(
                punct,
                Punct::LParen
                    | Punct::LBracket
                    | Punct::LBrace
                    | Punct::Minus
                    | Punct::Plus
                    | Punct::Tilde
                    | Punct::Ellipsis
                    | Punct::Star
            ),
            _ => false,
        }
    }

    // ----- statements -----

    fn parse_statement(&mut self) -> Result<Vec<Stmt>, FrontendError> {
        let token = self.peek().clone();
        match &token.kind {
            TokenKind::Indent => Err(self.error_at("unexpected indent", token.range)),
            TokenKind::Punct(Punct::At) => Ok(vec![self.parse_decorated()?]),
            TokenKind::Keyword(Keyword::Def) => Ok(vec![self.parse_def(Vec::new())?]),
            TokenKind::Keyword(Keyword::Class) => Ok(vec![self.parse_class(Vec::new())?]),
            TokenKind::Keyword(Keyword::If) => Ok(vec![self.parse_if()?]),
            TokenKind::Keyword(Keyword::While) => Ok(vec![self.parse_while()?]),
            TokenKind::Keyword(Keyword::For) => Ok(vec![self.parse_for()?]),
            TokenKind::Keyword(Keyword::With) => Ok(vec![self.parse_with()?]),
            TokenKind::Keyword(
                keyword @ (Keyword::Try
                | Keyword::Except
                | Keyword::Finally
                | Keyword::Async
                | Keyword::Yield),
            ) => Err(self.error_at(
                format!("'{}' is not supported in TorchScript", keyword.as_str()),
                token.range,
            )),
            TokenKind::Keyword(keyword @ (Keyword::Elif | Keyword::Else)) => Err(self.error_at(
                format!("'{}' without a matching 'if'", keyword.as_str()),
                token.range,
            )),
            _ => self.parse_simple_line(),
        }
    }

    /// Statements on one logical line: `a = 1; b = 2` then a newline.
    fn parse_simple_line(&mut self) -> Result<Vec<Stmt>, FrontendError> {
        let mut statements = vec![self.parse_small_statement()?];
        while self.eat_punct(Punct::Semicolon).is_some() {
            if matches!(self.peek().kind, TokenKind::Newline | TokenKind::Eof) {
                break;
            }
            statements.push(self.parse_small_statement()?);
        }
        let newline_end = match self.peek().kind {
            TokenKind::Newline => self.bump().range.end,
            TokenKind::Eof => self.peek().range.end,
            _ => return Err(self.unexpected("end of statement")),
        };
        if let Some(last) = statements.last_mut() {
            let statement_end = last.range.end;
            if let StmtKind::Assign(assign) = &mut last.kind {
                let limit = newline_end.max(statement_end + 1);
                assign.type_comment = self.take_type_comment(statement_end, limit);
            }
        }
        Ok(statements)
    }

    /// Body after a `:` — an indented block or statements on the same line.
    fn parse_suite(&mut self) -> Result<Vec<Stmt>, FrontendError> {
        self.nested(|parser| {
            if parser.at_kind(&TokenKind::Newline) {
                parser.bump();
                if !parser.at_kind(&TokenKind::Indent) {
                    let range = parser.peek().range.clone();
                    return Err(parser.error_at("expected an indented block", range));
                }
                parser.bump();
                let mut body = Vec::new();
                while !matches!(parser.peek().kind, TokenKind::Dedent | TokenKind::Eof) {
                    body.extend(parser.parse_statement()?);
                }
                if parser.at_kind(&TokenKind::Dedent) {
                    parser.bump();
                }
                Ok(body)
            } else {
                parser.parse_simple_line()
            }
        })
    }

    fn parse_small_statement(&mut self) -> Result<Stmt, FrontendError> {
        let token = self.peek().clone();
        let start = token.range.start;
        let kind = match &token.kind {
            TokenKind::Keyword(Keyword::Pass) => {
                self.bump();
                StmtKind::Pass
            }
            TokenKind::Keyword(Keyword::Break) => {
                self.bump();
                StmtKind::Break
            }
            TokenKind::Keyword(Keyword::Continue) => {
                self.bump();
                StmtKind::Continue
            }
            TokenKind::Keyword(Keyword::Return) => {
                self.bump();
                if self.at_statement_end() {
                    StmtKind::Return(None)
                } else {
                    StmtKind::Return(Some(self.parse_testlist(true)?))
                }
            }
            TokenKind::Keyword(Keyword::Raise) => {
                self.bump();
                let exc = if self.at_statement_end() {
                    None
                } else {
                    Some(self.parse_expr()?)
                };
                let cause = match (&exc, self.eat_keyword(Keyword::From)) {
                    (Some(_), Some(_)) => Some(self.parse_expr()?),
                    _ => None,
                };
                StmtKind::Raise(Raise { exc, cause })
            }
            TokenKind::Keyword(Keyword::Assert) => {
                self.bump();
                let test = self.parse_expr()?;
                let msg = match self.eat_punct(Punct::Comma) {
                    Some(_) => Some(self.parse_expr()?),
                    None => None,
                };
                StmtKind::Assert(Assert { test, msg })
            }
            TokenKind::Keyword(Keyword::Del) => {
                self.bump();
                let mut targets = Vec::new();
                loop {
                    let target = self.parse_bp(BP_BITOR)?;
                    self.check_target(&target, "delete")?;
                    targets.push(target);
                    if self.eat_punct(Punct::Comma).is_none() || !self.starts_expression() {
                        break;
                    }
                }
                StmtKind::Del(targets)
            }
            TokenKind::Keyword(keyword @ (Keyword::Global | Keyword::Nonlocal)) => {
                let is_global = *keyword == Keyword::Global;
                self.bump();
                let mut names = vec![self.expect_name("a name")?];
                while self.eat_punct(Punct::Comma).is_some() {
                    names.push(self.expect_name("a name")?);
                }
                if is_global {
                    StmtKind::Global(names)
                } else {
                    StmtKind::Nonlocal(names)
                }
            }
            TokenKind::Keyword(Keyword::Import) => {
                self.bump();
                let mut names = Vec::new();
                loop {
                    names.push(self.parse_import_alias(true)?);
                    if self.eat_punct(Punct::Comma).is_none() {
                        break;
                    }
                }
                StmtKind::Import(names)
            }
            TokenKind::Keyword(Keyword::From) => self.parse_import_from()?,
            TokenKind::Keyword(
                keyword @ (Keyword::Def
                | Keyword::Class
                | Keyword::If
                | Keyword::While
                | Keyword::For
                | Keyword::With
                | Keyword::Try),
            ) => {
                return Err(self.error_at(
                    format!(
                        "'{}' statement must start on its own line",
                        keyword.as_str()
                    ),
                    token.range,
                ))
            }
            _ => self.parse_expression_statement()?,
        };
        Ok(Stmt {
            kind,
            range: self.range_from(start),
        })
    }

    fn parse_expression_statement(&mut self) -> Result<StmtKind, FrontendError> {
        let first = self.parse_testlist(true)?;
        if self.at_punct(Punct::Colon) {
            if !matches!(
                first.kind,
                ExprKind::Name(_) | ExprKind::Attribute { .. } | ExprKind::Subscript { .. }
            ) {
                return Err(self.error_at(
                    format!(
                        "only a single name, attribute or subscript can be annotated, not a {}",
                        describe_expr(&first)
                    ),
                    first.range,
                ));
            }
            self.bump();
            let annotation = self.parse_expr()?;
            let value = match self.eat_punct(Punct::Assign) {
                Some(_) => Some(self.parse_testlist(true)?),
                None => None,
            };
            return Ok(StmtKind::Assign(Assign {
                targets: vec![first],
                annotation: Some(annotation),
                value,
                type_comment: None,
            }));
        }
        if let TokenKind::Punct(punct) = self.peek().kind {
            if let Some(op) = augmented_operator(punct) {
                if !matches!(
                    first.kind,
                    ExprKind::Name(_) | ExprKind::Attribute { .. } | ExprKind::Subscript { .. }
                ) {
                    return Err(self.error_at(
                        format!(
                            "augmented assignment needs a name, attribute or subscript target, not a {}",
                            describe_expr(&first)
                        ),
                        first.range,
                    ));
                }
                self.bump();
                let value = self.parse_testlist(true)?;
                return Ok(StmtKind::AugAssign(AugAssign {
                    target: first,
                    op,
                    value,
                }));
            }
        }
        if self.at_punct(Punct::Assign) {
            let mut targets = vec![first];
            let value = loop {
                self.bump();
                let next = self.parse_testlist(true)?;
                if !self.at_punct(Punct::Assign) {
                    break next;
                }
                targets.push(next);
            };
            for target in &targets {
                self.check_target(target, "assign to")?;
            }
            return Ok(StmtKind::Assign(Assign {
                targets,
                annotation: None,
                value: Some(value),
                type_comment: None,
            }));
        }
        Ok(StmtKind::Expr(first))
    }

    /// Checks that `target` can be assigned (or deleted, or bound by `for`/`with`).
    fn check_target(&self, target: &Expr, verb: &str) -> Result<(), FrontendError> {
        match &target.kind {
            ExprKind::Name(_) | ExprKind::Attribute { .. } | ExprKind::Subscript { .. } => Ok(()),
            ExprKind::Tuple(elements) | ExprKind::List(elements) => {
                for element in elements {
                    self.check_target(element, verb)?;
                }
                Ok(())
            }
            ExprKind::Starred(inner) if verb != "delete" => self.check_target(inner, verb),
            _ => Err(self.error_at(
                format!("cannot {verb} {}", describe_expr(target)),
                target.range.clone(),
            )),
        }
    }

    fn parse_import_alias(&mut self, dotted: bool) -> Result<ImportAlias, FrontendError> {
        let first = self.expect_name("a module name")?;
        let start = first.range.start;
        let mut name = first.name;
        if dotted {
            while self.eat_punct(Punct::Dot).is_some() {
                name.push('.');
                name.push_str(&self.expect_name("a name after '.'")?.name);
            }
        }
        let alias = match self.eat_keyword(Keyword::As) {
            Some(_) => Some(self.expect_name("a name after 'as'")?),
            None => None,
        };
        Ok(ImportAlias {
            name,
            alias,
            range: self.range_from(start),
        })
    }

    fn parse_import_from(&mut self) -> Result<StmtKind, FrontendError> {
        self.bump();
        let mut level = 0;
        loop {
            if self.eat_punct(Punct::Dot).is_some() {
                level += 1;
            } else if self.eat_punct(Punct::Ellipsis).is_some() {
                level += 3;
            } else {
                break;
            }
        }
        let mut module = String::new();
        if matches!(self.peek().kind, TokenKind::Name(_)) {
            module = self.expect_name("a module name")?.name;
            while self.eat_punct(Punct::Dot).is_some() {
                module.push('.');
                module.push_str(&self.expect_name("a name after '.'")?.name);
            }
        } else if level == 0 {
            return Err(self.unexpected("a module name"));
        }
        self.expect_keyword(Keyword::Import)?;
        if self.eat_punct(Punct::Star).is_some() {
            return Ok(StmtKind::ImportFrom(ImportFrom {
                module,
                level,
                names: Vec::new(),
                star: true,
            }));
        }
        let parenthesized = self.eat_punct(Punct::LParen).is_some();
        let mut names = Vec::new();
        loop {
            names.push(self.parse_import_alias(false)?);
            if self.eat_punct(Punct::Comma).is_none() {
                break;
            }
            if parenthesized && self.at_punct(Punct::RParen) {
                break;
            }
        }
        if parenthesized {
            self.expect_punct(Punct::RParen)?;
        }
        Ok(StmtKind::ImportFrom(ImportFrom {
            module,
            level,
            names,
            star: false,
        }))
    }

    fn parse_decorated(&mut self) -> Result<Stmt, FrontendError> {
        let mut decorators = Vec::new();
        while self.eat_punct(Punct::At).is_some() {
            decorators.push(self.parse_expr()?);
            if !self.at_kind(&TokenKind::Newline) {
                return Err(self.unexpected("newline after decorator"));
            }
            self.bump();
        }
        match self.peek().kind {
            TokenKind::Keyword(Keyword::Def) => self.parse_def(decorators),
            TokenKind::Keyword(Keyword::Class) => self.parse_class(decorators),
            _ => Err(self.unexpected("'def' or 'class' after decorators")),
        }
    }

    fn parse_def(&mut self, decorators: Vec<Expr>) -> Result<Stmt, FrontendError> {
        let start = self.expect_keyword(Keyword::Def)?.range.start;
        let name = self.expect_name("a function name")?;
        self.expect_punct(Punct::LParen)?;
        let params = self.parse_params()?;
        self.expect_punct(Punct::RParen)?;
        let returns = match self.eat_punct(Punct::Arrow) {
            Some(_) => Some(self.parse_expr()?),
            None => None,
        };
        let colon = self.expect_punct(Punct::Colon)?;
        let body_start = self
            .tokens
            .get(self.position..)
            .unwrap_or(&[])
            .iter()
            .find(|token| !matches!(token.kind, TokenKind::Newline | TokenKind::Indent))
            .map_or(self.file.text().len(), |token| token.range.start);
        let type_comment = self.take_type_comment(colon.range.end, body_start);
        let body = self.parse_suite()?;
        Ok(Stmt {
            kind: StmtKind::Def(Def {
                name,
                params,
                returns,
                body,
                decorators,
                type_comment,
            }),
            range: self.range_from(start),
        })
    }

    fn parse_params(&mut self) -> Result<Vec<Param>, FrontendError> {
        let mut params: Vec<Param> = Vec::new();
        let mut keyword_only = false;
        let mut seen_default = false;
        while !self.at_punct(Punct::RParen) {
            let start = self.peek().range.start;
            if self.eat_punct(Punct::Slash).is_some() {
                if keyword_only || params.iter().any(|param| param.kind != ParamKind::Normal) {
                    return Err(self.error_at("'/' must come before '*'", self.range_from(start)));
                }
                for param in &mut params {
                    param.kind = ParamKind::PositionalOnly;
                }
            } else if self.eat_punct(Punct::DoubleStar).is_some() {
                let name = self.expect_name("a parameter name after '**'")?;
                let annotation = self.parse_optional_annotation()?;
                params.push(Param {
                    name,
                    kind: ParamKind::VarKeyword,
                    annotation,
                    default: None,
                    range: self.range_from(start),
                });
            } else if self.eat_punct(Punct::Star).is_some() {
                if keyword_only {
                    return Err(self.error_at("'*' may appear only once", self.range_from(start)));
                }
                keyword_only = true;
                if matches!(self.peek().kind, TokenKind::Name(_)) {
                    let name = self.expect_name("a parameter name")?;
                    let annotation = self.parse_optional_annotation()?;
                    params.push(Param {
                        name,
                        kind: ParamKind::VarPositional,
                        annotation,
                        default: None,
                        range: self.range_from(start),
                    });
                }
            } else {
                let name = self.expect_name("a parameter name")?;
                let annotation = self.parse_optional_annotation()?;
                let default = match self.eat_punct(Punct::Assign) {
                    Some(_) => Some(self.parse_expr()?),
                    None => None,
                };
                if default.is_some() {
                    seen_default = true;
                } else if seen_default && !keyword_only {
                    return Err(
                        self.error_at("non-default argument follows default argument", name.range)
                    );
                }
                params.push(Param {
                    name,
                    kind: if keyword_only {
                        ParamKind::KeywordOnly
                    } else {
                        ParamKind::Normal
                    },
                    annotation,
                    default,
                    range: self.range_from(start),
                });
            }
            if self.eat_punct(Punct::Comma).is_none() {
                break;
            }
        }
        Ok(params)
    }

    fn parse_optional_annotation(&mut self) -> Result<Option<Expr>, FrontendError> {
        match self.eat_punct(Punct::Colon) {
            Some(_) => Ok(Some(self.parse_expr()?)),
            None => Ok(None),
        }
    }

    fn parse_class(&mut self, decorators: Vec<Expr>) -> Result<Stmt, FrontendError> {
        let start = self.expect_keyword(Keyword::Class)?.range.start;
        let name = self.expect_name("a class name")?;
        let (bases, keywords) = if self.eat_punct(Punct::LParen).is_some() {
            let arguments = self.parse_call_arguments()?;
            self.expect_punct(Punct::RParen)?;
            arguments
        } else {
            (Vec::new(), Vec::new())
        };
        self.expect_punct(Punct::Colon)?;
        let body = self.parse_suite()?;
        Ok(Stmt {
            kind: StmtKind::ClassDef(ClassDef {
                name,
                bases,
                keywords,
                body,
                decorators,
            }),
            range: self.range_from(start),
        })
    }

    /// `if` or `elif` (an `elif` chain becomes nested `If`s in `orelse`).
    fn parse_if(&mut self) -> Result<Stmt, FrontendError> {
        let start = self.bump().range.start;
        let test = self.parse_expr()?;
        self.expect_punct(Punct::Colon)?;
        let body = self.parse_suite()?;
        let orelse = if self.at_keyword(Keyword::Elif) {
            vec![self.nested(Parser::parse_if)?]
        } else if self.eat_keyword(Keyword::Else).is_some() {
            self.expect_punct(Punct::Colon)?;
            self.parse_suite()?
        } else {
            Vec::new()
        };
        Ok(Stmt {
            kind: StmtKind::If(If { test, body, orelse }),
            range: self.range_from(start),
        })
    }

    fn parse_loop_else(&mut self) -> Result<Vec<Stmt>, FrontendError> {
        if self.eat_keyword(Keyword::Else).is_some() {
            self.expect_punct(Punct::Colon)?;
            self.parse_suite()
        } else {
            Ok(Vec::new())
        }
    }

    fn parse_while(&mut self) -> Result<Stmt, FrontendError> {
        let start = self.bump().range.start;
        let test = self.parse_expr()?;
        self.expect_punct(Punct::Colon)?;
        let body = self.parse_suite()?;
        let orelse = self.parse_loop_else()?;
        Ok(Stmt {
            kind: StmtKind::While(While { test, body, orelse }),
            range: self.range_from(start),
        })
    }

    fn parse_for(&mut self) -> Result<Stmt, FrontendError> {
        let start = self.bump().range.start;
        let target = self.parse_target_list()?;
        self.expect_keyword(Keyword::In)?;
        let iter = self.parse_testlist(true)?;
        self.expect_punct(Punct::Colon)?;
        let body = self.parse_suite()?;
        let orelse = self.parse_loop_else()?;
        Ok(Stmt {
            kind: StmtKind::For(For {
                target,
                iter,
                body,
                orelse,
            }),
            range: self.range_from(start),
        })
    }

    fn parse_with(&mut self) -> Result<Stmt, FrontendError> {
        let start = self.bump().range.start;
        let mut items = Vec::new();
        loop {
            let item_start = self.peek().range.start;
            let context = self.parse_expr()?;
            let target = match self.eat_keyword(Keyword::As) {
                Some(_) => {
                    let target = self.parse_star_target()?;
                    self.check_target(&target, "assign to")?;
                    Some(target)
                }
                None => None,
            };
            items.push(WithItem {
                context,
                target,
                range: self.range_from(item_start),
            });
            if self.eat_punct(Punct::Comma).is_none() {
                break;
            }
        }
        self.expect_punct(Punct::Colon)?;
        let body = self.parse_suite()?;
        Ok(Stmt {
            kind: StmtKind::With(With { items, body }),
            range: self.range_from(start),
        })
    }

    // ----- expressions -----

    /// A full expression without top-level commas (Python's `test`).
    fn parse_expr(&mut self) -> Result<Expr, FrontendError> {
        self.parse_bp(BP_IFEXP)
    }

    /// `expr` or `*expr`.
    fn parse_star_or_expr(&mut self) -> Result<Expr, FrontendError> {
        if let Some(star) = self.eat_punct(Punct::Star) {
            let inner = self.parse_bp(BP_BITOR)?;
            let range = star.range.to(&inner.range);
            return Ok(Expr::new(ExprKind::Starred(Box::new(inner)), range));
        }
        self.parse_expr()
    }

    /// Comma-separated expressions; more than one (or a trailing comma) makes a `Tuple`.
    fn parse_testlist(&mut self, allow_star: bool) -> Result<Expr, FrontendError> {
        let parse_one = |parser: &mut Parser| {
            if allow_star {
                parser.parse_star_or_expr()
            } else {
                parser.parse_expr()
            }
        };
        let first = parse_one(self)?;
        if !self.at_punct(Punct::Comma) {
            return Ok(first);
        }
        let start = first.range.start;
        let mut elements = vec![first];
        while self.eat_punct(Punct::Comma).is_some() {
            if !self.starts_expression() {
                break;
            }
            elements.push(parse_one(self)?);
        }
        Ok(Expr::new(ExprKind::Tuple(elements), self.range_from(start)))
    }

    /// A single binding target at bitwise-or level (so `in` is left alone), maybe starred.
    fn parse_star_target(&mut self) -> Result<Expr, FrontendError> {
        if let Some(star) = self.eat_punct(Punct::Star) {
            let inner = self.parse_bp(BP_BITOR)?;
            let range = star.range.to(&inner.range);
            return Ok(Expr::new(ExprKind::Starred(Box::new(inner)), range));
        }
        self.parse_bp(BP_BITOR)
    }

    /// Targets of `for` loops and comprehensions: `x`, `a, b`, `(a, b), *c`.
    fn parse_target_list(&mut self) -> Result<Expr, FrontendError> {
        let first = self.parse_star_target()?;
        let target = if self.at_punct(Punct::Comma) {
            let start = first.range.start;
            let mut elements = vec![first];
            while self.eat_punct(Punct::Comma).is_some() {
                if !self.starts_expression() {
                    break;
                }
                elements.push(self.parse_star_target()?);
            }
            Expr::new(ExprKind::Tuple(elements), self.range_from(start))
        } else {
            first
        };
        self.check_target(&target, "assign to")?;
        Ok(target)
    }

    fn parse_bp(&mut self, min_bp: u8) -> Result<Expr, FrontendError> {
        // `nested` restores the depth afterwards, which also undoes the extra levels that
        // operator chains add below.
        self.nested(|parser| parser.parse_bp_chain(min_bp))
    }

    fn parse_bp_chain(&mut self, min_bp: u8) -> Result<Expr, FrontendError> {
        let mut lhs = self.parse_prefix(min_bp)?;
        loop {
            let kind = self.peek().kind.clone();
            match kind {
                TokenKind::Keyword(Keyword::If) if min_bp <= BP_IFEXP => {
                    self.descend()?;
                    self.bump();
                    let test = self.parse_bp(BP_OR)?;
                    if self.eat_keyword(Keyword::Else).is_none() {
                        return Err(self.unexpected("'else' in conditional expression"));
                    }
                    let orelse = self.parse_bp(BP_IFEXP)?;
                    let range = lhs.range.to(&orelse.range);
                    lhs = Expr::new(
                        ExprKind::IfExp {
                            test: Box::new(test),
                            body: Box::new(lhs),
                            orelse: Box::new(orelse),
                        },
                        range,
                    );
                }
                TokenKind::Keyword(keyword @ (Keyword::Or | Keyword::And))
                    if min_bp
                        <= if keyword == Keyword::Or {
                            BP_OR
                        } else {
                            BP_AND
                        } =>
                {
                    self.descend()?;
                    let (op, operand_bp) = if keyword == Keyword::Or {
                        (BoolOpKind::Or, BP_AND)
                    } else {
                        (BoolOpKind::And, BP_NOT)
                    };
                    let start = lhs.range.start;
                    let mut values = vec![lhs];
                    while self.eat_keyword(keyword).is_some() {
                        values.push(self.parse_bp(operand_bp)?);
                    }
                    lhs = Expr::new(ExprKind::BoolOp { op, values }, self.range_from(start));
                }
                _ if min_bp <= BP_CMP && self.comparison_operator().is_some() => {
                    self.descend()?;
                    let start = lhs.range.start;
                    let mut ops = Vec::new();
                    let mut comparators = Vec::new();
                    while let Some((op, token_count)) = self.comparison_operator() {
                        for _ in 0..token_count {
                            self.bump();
                        }
                        ops.push(op);
                        comparators.push(self.parse_bp(BP_BITOR)?);
                    }
                    lhs = Expr::new(
                        ExprKind::Compare {
                            left: Box::new(lhs),
                            ops,
                            comparators,
                        },
                        self.range_from(start),
                    );
                }
                TokenKind::Punct(punct) => {
                    let Some((op, bp)) = binary_operator(punct) else {
                        break;
                    };
                    if bp < min_bp {
                        break;
                    }
                    self.descend()?;
                    self.bump();
                    // `**` is right-associative and its right operand may carry a unary sign.
                    let right_bp = if op == BinOpKind::Pow {
                        BP_UNARY
                    } else {
                        bp + 1
                    };
                    let rhs = self.parse_bp(right_bp)?;
                    let range = lhs.range.to(&rhs.range);
                    lhs = Expr::new(
                        ExprKind::BinOp {
                            op,
                            left: Box::new(lhs),
                            right: Box::new(rhs),
                        },
                        range,
                    );
                }
                _ => break,
            }
        }
        Ok(lhs)
    }

    /// The comparison operator at the cursor and how many tokens it spans.
    fn comparison_operator(&self) -> Option<(CmpOpKind, usize)> {
        Some(match &self.peek().kind {
            TokenKind::Punct(Punct::Eq) => (CmpOpKind::Eq, 1),
            TokenKind::Punct(Punct::NotEq) => (CmpOpKind::NotEq, 1),
            TokenKind::Punct(Punct::Lt) => (CmpOpKind::Lt, 1),
            TokenKind::Punct(Punct::Le) => (CmpOpKind::Le, 1),
            TokenKind::Punct(Punct::Gt) => (CmpOpKind::Gt, 1),
            TokenKind::Punct(Punct::Ge) => (CmpOpKind::Ge, 1),
            TokenKind::Keyword(Keyword::In) => (CmpOpKind::In, 1),
            TokenKind::Keyword(Keyword::Is) => {
                if self.peek_nth(1).kind == TokenKind::Keyword(Keyword::Not) {
                    (CmpOpKind::IsNot, 2)
                } else {
                    (CmpOpKind::Is, 1)
                }
            }
            TokenKind::Keyword(Keyword::Not)
                if self.peek_nth(1).kind == TokenKind::Keyword(Keyword::In) =>
            {
                (CmpOpKind::NotIn, 2)
            }
            _ => return None,
        })
    }

    fn parse_prefix(&mut self, min_bp: u8) -> Result<Expr, FrontendError> {
        let token = self.peek().clone();
        let (op, operand_bp) = match &token.kind {
            TokenKind::Keyword(Keyword::Not) => {
                if min_bp > BP_NOT {
                    return Err(
                        self.error_at("'not' must be parenthesized in this position", token.range)
                    );
                }
                (UnaryOpKind::Not, BP_NOT)
            }
            TokenKind::Punct(Punct::Minus) => (UnaryOpKind::Neg, BP_UNARY),
            TokenKind::Punct(Punct::Plus) => (UnaryOpKind::Pos, BP_UNARY),
            TokenKind::Punct(Punct::Tilde) => (UnaryOpKind::Invert, BP_UNARY),
            TokenKind::Keyword(keyword @ (Keyword::Lambda | Keyword::Await | Keyword::Yield)) => {
                return Err(self.error_at(
                    format!("'{}' is not supported in TorchScript", keyword.as_str()),
                    token.range,
                ))
            }
            _ => return self.parse_postfix(),
        };
        self.bump();
        let operand = self.parse_bp(operand_bp)?;
        let range = token.range.to(&operand.range);
        Ok(Expr::new(
            ExprKind::UnaryOp {
                op,
                operand: Box::new(operand),
            },
            range,
        ))
    }

    /// An atom followed by any number of `.name`, `(args)` and `[index]` trailers.
    fn parse_postfix(&mut self) -> Result<Expr, FrontendError> {
        let mut expr = self.parse_atom()?;
        loop {
            let start = expr.range.start;
            match self.peek().kind {
                TokenKind::Punct(Punct::Dot) => {
                    self.descend()?;
                    self.bump();
                    let attr = self.expect_name("an attribute name after '.'")?;
                    expr = Expr::new(
                        ExprKind::Attribute {
                            value: Box::new(expr),
                            attr,
                        },
                        self.range_from(start),
                    );
                }
                TokenKind::Punct(Punct::LParen) => {
                    self.descend()?;
                    self.bump();
                    let (args, keywords) = self.parse_call_arguments()?;
                    self.expect_punct(Punct::RParen)?;
                    expr = Expr::new(
                        ExprKind::Call {
                            func: Box::new(expr),
                            args,
                            keywords,
                        },
                        self.range_from(start),
                    );
                }
                TokenKind::Punct(Punct::LBracket) => {
                    self.descend()?;
                    self.bump();
                    let index = self.parse_subscript_items()?;
                    self.expect_punct(Punct::RBracket)?;
                    expr = Expr::new(
                        ExprKind::Subscript {
                            value: Box::new(expr),
                            index: Box::new(index),
                        },
                        self.range_from(start),
                    );
                }
                _ => return Ok(expr),
            }
        }
    }

    /// Arguments up to (not including) `)`: positional, `*args`, `name=value`, `**kwargs`.
    fn parse_call_arguments(&mut self) -> Result<(Vec<Expr>, Vec<KeywordArg>), FrontendError> {
        let mut args = Vec::new();
        let mut keywords: Vec<KeywordArg> = Vec::new();
        while !self.at_punct(Punct::RParen) {
            let start = self.peek().range.start;
            if self.at_punct(Punct::Star) {
                args.push(self.parse_star_or_expr()?);
            } else if self.eat_punct(Punct::DoubleStar).is_some() {
                let value = self.parse_expr()?;
                keywords.push(KeywordArg {
                    name: None,
                    value,
                    range: self.range_from(start),
                });
            } else if matches!(self.peek().kind, TokenKind::Name(_))
                && self.peek_nth(1).kind == TokenKind::Punct(Punct::Assign)
            {
                let name = self.expect_name("an argument name")?;
                self.bump();
                let value = self.parse_expr()?;
                keywords.push(KeywordArg {
                    name: Some(name),
                    value,
                    range: self.range_from(start),
                });
            } else {
                let value = self.parse_expr()?;
                if self.at_keyword(Keyword::For) {
                    return Err(self.error_at(
                        "generator expressions are not supported in TorchScript",
                        self.range_from(start),
                    ));
                }
                if !keywords.is_empty() {
                    return Err(
                        self.error_at("positional argument follows keyword argument", value.range)
                    );
                }
                args.push(value);
            }
            if self.eat_punct(Punct::Comma).is_none() {
                break;
            }
        }
        Ok((args, keywords))
    }

    /// The inside of `[...]` after a value: one index, a slice, or a tuple of them.
    fn parse_subscript_items(&mut self) -> Result<Expr, FrontendError> {
        let start = self.peek().range.start;
        let mut items = Vec::new();
        let mut trailing_comma = false;
        loop {
            items.push(self.parse_slice_item()?);
            if self.eat_punct(Punct::Comma).is_none() {
                break;
            }
            if self.at_punct(Punct::RBracket) {
                trailing_comma = true;
                break;
            }
        }
        if items.len() == 1 && !trailing_comma {
            if let Some(item) = items.pop() {
                return Ok(item);
            }
        }
        Ok(Expr::new(ExprKind::Tuple(items), self.range_from(start)))
    }

    fn parse_slice_item(&mut self) -> Result<Expr, FrontendError> {
        let start = self.peek().range.start;
        let lower = if self.at_punct(Punct::Colon) {
            None
        } else {
            let expr = self.parse_star_or_expr()?;
            if !self.at_punct(Punct::Colon) {
                return Ok(expr);
            }
            Some(Box::new(expr))
        };
        self.expect_punct(Punct::Colon)?;
        let ends_part = |parser: &Parser| {
            matches!(
                parser.peek().kind,
                TokenKind::Punct(Punct::Colon | Punct::Comma | Punct::RBracket)
            )
        };
        let upper = if ends_part(self) {
            None
        } else {
            Some(Box::new(self.parse_expr()?))
        };
        let step = if self.eat_punct(Punct::Colon).is_some() && !ends_part(self) {
            Some(Box::new(self.parse_expr()?))
        } else {
            None
        };
        Ok(Expr::new(
            ExprKind::Slice { lower, upper, step },
            self.range_from(start),
        ))
    }

    fn parse_atom(&mut self) -> Result<Expr, FrontendError> {
        let token = self.peek().clone();
        let kind = match &token.kind {
            TokenKind::Name(name) => ExprKind::Name(name.clone()),
            TokenKind::Int(value) => ExprKind::Int(*value),
            TokenKind::Float(value) => ExprKind::Float(*value),
            TokenKind::Imaginary(value) => ExprKind::Imaginary(*value),
            TokenKind::Keyword(Keyword::True) => ExprKind::Bool(true),
            TokenKind::Keyword(Keyword::False) => ExprKind::Bool(false),
            TokenKind::Keyword(Keyword::None) => ExprKind::None,
            TokenKind::Punct(Punct::Ellipsis) => ExprKind::Ellipsis,
            TokenKind::Str(_) => return self.parse_strings(),
            TokenKind::Punct(Punct::LParen) => return self.parse_parenthesized(),
            TokenKind::Punct(Punct::LBracket) => return self.parse_list_display(),
            TokenKind::Punct(Punct::LBrace) => return self.parse_brace_display(),
            _ => return Err(self.unexpected("an expression")),
        };
        self.bump();
        Ok(Expr::new(kind, token.range))
    }

    /// One or more adjacent string literals, concatenated.
    fn parse_strings(&mut self) -> Result<Expr, FrontendError> {
        let start = self.peek().range.start;
        let mut parts = Vec::new();
        while let TokenKind::Str(literal) = &self.peek().kind {
            let literal = literal.clone();
            let token = self.bump();
            if literal.is_bytes {
                return Err(self.error_at(
                    "bytes literals are not supported in TorchScript",
                    token.range,
                ));
            }
            parts.push(literal);
        }
        let range = self.range_from(start);
        if parts.iter().any(|part| part.is_fstring) {
            let mut template = String::new();
            for part in &parts {
                if part.is_fstring {
                    template.push_str(&part.value);
                } else {
                    template.push_str(&part.value.replace('{', "{{").replace('}', "}}"));
                }
            }
            Ok(Expr::new(ExprKind::FString(template), range))
        } else {
            let value: String = parts.iter().map(|part| part.value.as_str()).collect();
            Ok(Expr::new(ExprKind::Str(value), range))
        }
    }

    fn parse_parenthesized(&mut self) -> Result<Expr, FrontendError> {
        let start = self.bump().range.start;
        if self.eat_punct(Punct::RParen).is_some() {
            return Ok(Expr::new(
                ExprKind::Tuple(Vec::new()),
                self.range_from(start),
            ));
        }
        let first = self.parse_star_or_expr()?;
        if self.at_keyword(Keyword::For) {
            return Err(self.error_at(
                "generator expressions are not supported in TorchScript",
                self.range_from(start),
            ));
        }
        if self.eat_punct(Punct::RParen).is_some() {
            if matches!(first.kind, ExprKind::Starred(_)) {
                return Err(
                    self.error_at("cannot use starred expression here", first.range.clone())
                );
            }
            // Keep the node, widen its range over the parentheses for better highlights.
            return Ok(Expr::new(first.kind, self.range_from(start)));
        }
        let mut elements = vec![first];
        while self.eat_punct(Punct::Comma).is_some() {
            if self.at_punct(Punct::RParen) {
                break;
            }
            elements.push(self.parse_star_or_expr()?);
        }
        self.expect_punct(Punct::RParen)?;
        Ok(Expr::new(ExprKind::Tuple(elements), self.range_from(start)))
    }

    fn parse_list_display(&mut self) -> Result<Expr, FrontendError> {
        let start = self.bump().range.start;
        if self.eat_punct(Punct::RBracket).is_some() {
            return Ok(Expr::new(
                ExprKind::List(Vec::new()),
                self.range_from(start),
            ));
        }
        let first = self.parse_star_or_expr()?;
        if self.at_keyword(Keyword::For) {
            let generators = self.parse_comprehension_clauses()?;
            self.expect_punct(Punct::RBracket)?;
            return Ok(Expr::new(
                ExprKind::ListComp {
                    elt: Box::new(first),
                    generators,
                },
                self.range_from(start),
            ));
        }
        let mut elements = vec![first];
        while self.eat_punct(Punct::Comma).is_some() {
            if self.at_punct(Punct::RBracket) {
                break;
            }
            elements.push(self.parse_star_or_expr()?);
        }
        self.expect_punct(Punct::RBracket)?;
        Ok(Expr::new(ExprKind::List(elements), self.range_from(start)))
    }

    fn parse_brace_display(&mut self) -> Result<Expr, FrontendError> {
        let start = self.bump().range.start;
        if self.eat_punct(Punct::RBrace).is_some() {
            return Ok(Expr::new(
                ExprKind::Dict {
                    keys: Vec::new(),
                    values: Vec::new(),
                },
                self.range_from(start),
            ));
        }
        if self.at_punct(Punct::DoubleStar) {
            return Err(self.error_at(
                "dict unpacking is not supported in TorchScript",
                self.peek().range.clone(),
            ));
        }
        let first = self.parse_star_or_expr()?;
        if self.eat_punct(Punct::Colon).is_some() {
            let first_value = self.parse_expr()?;
            if self.at_keyword(Keyword::For) {
                let generators = self.parse_comprehension_clauses()?;
                self.expect_punct(Punct::RBrace)?;
                return Ok(Expr::new(
                    ExprKind::DictComp {
                        key: Box::new(first),
                        value: Box::new(first_value),
                        generators,
                    },
                    self.range_from(start),
                ));
            }
            let mut keys = vec![first];
            let mut values = vec![first_value];
            while self.eat_punct(Punct::Comma).is_some() {
                if self.at_punct(Punct::RBrace) {
                    break;
                }
                keys.push(self.parse_expr()?);
                self.expect_punct(Punct::Colon)?;
                values.push(self.parse_expr()?);
            }
            self.expect_punct(Punct::RBrace)?;
            return Ok(Expr::new(
                ExprKind::Dict { keys, values },
                self.range_from(start),
            ));
        }
        if self.at_keyword(Keyword::For) {
            return Err(self.error_at(
                "set comprehensions are not supported in TorchScript",
                self.range_from(start),
            ));
        }
        let mut elements = vec![first];
        while self.eat_punct(Punct::Comma).is_some() {
            if self.at_punct(Punct::RBrace) {
                break;
            }
            elements.push(self.parse_star_or_expr()?);
        }
        self.expect_punct(Punct::RBrace)?;
        Ok(Expr::new(ExprKind::Set(elements), self.range_from(start)))
    }

    /// `for target in iter [if cond]...`, repeated.
    fn parse_comprehension_clauses(&mut self) -> Result<Vec<Comprehension>, FrontendError> {
        let mut generators = Vec::new();
        while self.at_keyword(Keyword::For) {
            let start = self.bump().range.start;
            let target = self.parse_target_list()?;
            self.expect_keyword(Keyword::In)?;
            let iter = self.parse_bp(BP_OR)?;
            let mut ifs = Vec::new();
            while self.eat_keyword(Keyword::If).is_some() {
                ifs.push(self.parse_bp(BP_OR)?);
            }
            generators.push(Comprehension {
                target,
                iter,
                ifs,
                range: self.range_from(start),
            });
        }
        Ok(generators)
    }
}
