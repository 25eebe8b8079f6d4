//! Parser tests: operator precedence and associativity, statements, targets, nesting limits.

use ferrojit_frontend::ast::{Expr, ExprKind, Module, ParamKind, Stmt, StmtKind};
use ferrojit_frontend::error::ErrorKind;
use ferrojit_frontend::parser::{parse_expression_str, parse_file, MAX_NESTING_DEPTH};
use ferrojit_frontend::source::SourceFile;

/// Fully parenthesized prefix form of an expression, written independently of the parser.
fn sexpr(expr: &Expr) -> String {
    let list = |items: &[Expr]| items.iter().map(sexpr).collect::<Vec<_>>().join(" ");
    match &expr.kind {
        ExprKind::Name(name) => name.clone(),
        ExprKind::Int(value) => value.to_string(),
        ExprKind::Float(value) => format!("{value:?}"),
        ExprKind::Imaginary(value) => format!("{value:?}j"),
        ExprKind::Str(value) => format!("{value:?}"),
        ExprKind::FString(value) => format!("f{value:?}"),
        ExprKind::Bool(value) => if *value { "True" } else { "False" }.to_string(),
        ExprKind::None => "None".to_string(),
        ExprKind::Ellipsis => "...".to_string(),
        ExprKind::Attribute { value, attr } => format!("(. {} {})", sexpr(value), attr.name),
        ExprKind::Call {
            func,
            args,
            keywords,
        } => {
            let mut parts = vec![sexpr(func)];
            parts.extend(args.iter().map(sexpr));
            for keyword in keywords {
                match &keyword.name {
                    Some(name) => parts.push(format!("{}={}", name.name, sexpr(&keyword.value))),
                    None => parts.push(format!("**{}", sexpr(&keyword.value))),
                }
            }
            format!("(call {})", parts.join(" "))
        }
        ExprKind::Subscript { value, index } => format!("([] {} {})", sexpr(value), sexpr(index)),
        ExprKind::Slice { lower, upper, step } => {
            let part = |item: &Option<Box<Expr>>| item.as_deref().map_or("_".to_string(), sexpr);
            format!("(slice {} {} {})", part(lower), part(upper), part(step))
        }
        ExprKind::BinOp { op, left, right } => {
            format!("({} {} {})", op.as_str(), sexpr(left), sexpr(right))
        }
        ExprKind::UnaryOp { op, operand } => format!("({} {})", op.as_str(), sexpr(operand)),
        ExprKind::BoolOp { op, values } => format!("({} {})", op.as_str(), list(values)),
        ExprKind::Compare {
            left,
            ops,
            comparators,
        } => {
            let mut parts = vec![sexpr(left)];
            for (op, right) in ops.iter().zip(comparators) {
                parts.push(op.as_str().to_string());
                parts.push(sexpr(right));
            }
            format!("(cmp {})", parts.join(" "))
        }
        ExprKind::IfExp { test, body, orelse } => {
            format!("(ifexp {} {} {})", sexpr(test), sexpr(body), sexpr(orelse))
        }
        ExprKind::Tuple(items) => format!("(tuple {})", list(items)),
        ExprKind::List(items) => format!("(list {})", list(items)),
        ExprKind::Set(items) => format!("(set {})", list(items)),
        ExprKind::Dict { keys, values } => {
            let pairs: Vec<String> = keys
                .iter()
                .zip(values)
                .map(|(key, value)| format!("{}:{}", sexpr(key), sexpr(value)))
                .collect();
            format!("(dict {})", pairs.join(" "))
        }
        ExprKind::ListComp { elt, generators } => {
            let clauses: Vec<String> = generators
                .iter()
                .map(|clause| {
                    let ifs: String = clause
                        .ifs
                        .iter()
                        .map(|c| format!(" if {}", sexpr(c)))
                        .collect();
                    format!(
                        "for {} in {}{}",
                        sexpr(&clause.target),
                        sexpr(&clause.iter),
                        ifs
                    )
                })
                .collect();
            format!("(listcomp {} {})", sexpr(elt), clauses.join(" "))
        }
        ExprKind::DictComp {
            key,
            value,
            generators,
        } => {
            let clauses: Vec<String> = generators
                .iter()
                .map(|clause| format!("for {} in {}", sexpr(&clause.target), sexpr(&clause.iter)))
                .collect();
            format!(
                "(dictcomp {}:{} {})",
                sexpr(key),
                sexpr(value),
                clauses.join(" ")
            )
        }
        ExprKind::Starred(inner) => format!("(* {})", sexpr(inner)),
    }
}

fn expr(text: &str) -> String {
    match parse_expression_str("<expr>", text) {
        Ok(expr) => sexpr(&expr),
        Err(error) => panic!("unexpected parse error for {text:?}: {error}"),
    }
}

fn module(text: &str) -> Module {
    match parse_file(SourceFile::new("test.py", text)) {
        Ok(module) => module,
        Err(error) => panic!("unexpected parse error: {error}"),
    }
}

fn parse_error(text: &str) -> ferrojit_frontend::error::FrontendError {
    match parse_file(SourceFile::new("test.py", text)) {
        Ok(module) => panic!("expected an error, parsed {} statements", module.body.len()),
        Err(error) => error,
    }
}

#[test]
fn arithmetic_precedence() {
    assert_eq!(expr("-2**2"), "(- (** 2 2))");
    assert_eq!(expr("a + b * c"), "(+ a (* b c))");
    assert_eq!(expr("a * b + c"), "(+ (* a b) c)");
    assert_eq!(expr("a - b - c"), "(- (- a b) c)");
    assert_eq!(expr("2 ** 3 ** 2"), "(** 2 (** 3 2))");
    assert_eq!(expr("2 ** -1"), "(** 2 (- 1))");
    assert_eq!(expr("-a.b ** -c[0]"), "(- (** (. a b) (- ([] c 0))))");
    assert_eq!(expr("a // b % c @ d / e"), "(/ (@ (% (// a b) c) d) e)");
    assert_eq!(expr("~a + -b"), "(+ (~ a) (- b))");
    assert_eq!(expr("a << b + c"), "(<< a (+ b c))");
    assert_eq!(expr("a | b ^ c & d >> e"), "(| a (^ b (& c (>> d e))))");
    assert_eq!(expr("(a + b) * c"), "(* (+ a b) c)");
    assert_eq!(expr("- - a"), "(- (- a))");
}

#[test]
fn boolean_and_comparison_precedence() {
    assert_eq!(expr("not a == b"), "(not (cmp a == b))");
    assert_eq!(expr("a < b <= c != d"), "(cmp a < b <= c != d)");
    assert_eq!(
        expr("a is not None and b not in c or d is e"),
        "(or (and (cmp a is not None) (cmp b not in c)) (cmp d is e))"
    );
    assert_eq!(expr("a or b or c and d"), "(or a b (and c d))");
    assert_eq!(expr("not not a and b"), "(and (not (not a)) b)");
    assert_eq!(expr("a < b | c"), "(cmp a < (| b c))");
    assert_eq!(expr("a == -b"), "(cmp a == (- b))");
}

#[test]
fn conditional_expressions() {
    assert_eq!(
        expr("a if b else c if d else e"),
        "(ifexp b a (ifexp d c e))"
    );
    assert_eq!(
        expr("a or b if c and d else e"),
        "(ifexp (and c d) (or a b) e)"
    );
    assert_eq!(expr("(a if b else c) + 1"), "(+ (ifexp b a c) 1)");
}

#[test]
fn primaries_and_literals() {
    assert_eq!(
        expr("torch.cat([a, b], dim=-1, *rest, **kw)"),
        "(call (. torch cat) (list a b) (* rest) dim=(- 1) **kw)"
    );
    assert_eq!(expr("f(a, b,)"), "(call f a b)");
    assert_eq!(expr("f()()[0].x"), "(. ([] (call (call f)) 0) x)");
    assert_eq!(
        expr("x[1:2, ::-1, ..., None, :]"),
        "([] x (tuple (slice 1 2 _) (slice _ _ (- 1)) ... None (slice _ _ _)))"
    );
    assert_eq!(expr("x[0,]"), "([] x (tuple 0))");
    assert_eq!(expr("x[a:]"), "([] x (slice a _ _))");
    assert_eq!(expr("(a,)"), "(tuple a)");
    assert_eq!(expr("()"), "(tuple )");
    assert_eq!(expr("(a, b, )"), "(tuple a b)");
    assert_eq!(
        expr("[1, 2.5, 'x', True, None,]"),
        "(list 1 2.5 \"x\" True None)"
    );
    assert_eq!(expr("{'a': 1, 'b': x}"), "(dict \"a\":1 \"b\":x)");
    assert_eq!(expr("{}"), "(dict )");
    assert_eq!(expr("{1, 2}"), "(set 1 2)");
    assert_eq!(expr("'ab' \"cd\" '''ef'''"), "\"abcdef\"");
    assert_eq!(expr("'{' f'{x}' '}'"), "f\"{{{x}}}\"");
    assert_eq!(
        expr("[x * 2 for x, y in pairs if x if y for z in x]"),
        "(listcomp (* x 2) for (tuple x y) in pairs if x if y for z in x)"
    );
    assert_eq!(
        expr("{k: v for k, v in d.items()}"),
        "(dictcomp k:v for (tuple k v) in (call (. d items)))"
    );
    assert_eq!(expr("[*a, b]"), "(list (* a) b)");
}

#[test]
fn type_expressions() {
    assert_eq!(
        expr("List[Tuple[int, Tensor]]"),
        "([] List ([] Tuple (tuple int Tensor)))"
    );
    assert_eq!(
        expr("  Dict[str, Optional[__torch__.foo.Bar]]  \n"),
        "([] Dict (tuple str ([] Optional (. (. __torch__ foo) Bar))))"
    );
    assert_eq!(expr("int, float"), "(tuple int float)");
}

fn stmt_kinds(body: &[Stmt]) -> Vec<&'static str> {
    body.iter()
        .map(|stmt| match &stmt.kind {
            StmtKind::Def(_) => "def",
            StmtKind::ClassDef(_) => "class",
            StmtKind::Assign(_) => "assign",
            StmtKind::AugAssign(_) => "augassign",
            StmtKind::Return(_) => "return",
            StmtKind::If(_) => "if",
            StmtKind::While(_) => "while",
            StmtKind::For(_) => "for",
            StmtKind::Break => "break",
            StmtKind::Continue => "continue",
            StmtKind::Pass => "pass",
            StmtKind::Expr(_) => "expr",
            StmtKind::Raise(_) => "raise",
            StmtKind::Assert(_) => "assert",
            StmtKind::Del(_) => "del",
            StmtKind::With(_) => "with",
            StmtKind::Global(_) => "global",
            StmtKind::Nonlocal(_) => "nonlocal",
            StmtKind::Import(_) => "import",
            StmtKind::ImportFrom(_) => "from",
        })
        .collect()
}

#[test]
fn statements_of_every_kind() {
    let text = "\
import torch.nn as nn
from typing import (List, Tuple,)
@torch.jit.export
@decorator(1)
def f(self, x: Tensor, *, k: int = 3, **kw) -> Tuple[Tensor, int]:
    # type: (Tensor) -> Tuple[Tensor, int]
    a, b = g(x)
    a, b, = g(x)
    *c, d = h()
    y: int = 3
    z : List[int]
    self.w[0] = q = 1
    y += 1; y **= 2
    if x: return y
    elif y:
        pass
    else:
        raise ValueError('bad') from e
    for i, (j, k) in enumerate(pairs):
        if i > 2:
            break
        continue
    while not done:
        done = True
    assert x > 0, 'positive'
    del a, b[0]
    with torch.no_grad() as g, lock:
        global counter
    return a, b
";
    let parsed = module(text);
    assert_eq!(stmt_kinds(&parsed.body), ["import", "from", "def"]);
    let StmtKind::Def(def) = &parsed.body[2].kind else {
        panic!("expected def");
    };
    assert_eq!(def.name.name, "f");
    assert_eq!(def.decorators.len(), 2);
    assert_eq!(
        def.decorators[0].dotted_name().as_deref(),
        Some("torch.jit.export")
    );
    let param_names: Vec<(&str, ParamKind)> = def
        .params
        .iter()
        .map(|param| (param.name.name.as_str(), param.kind))
        .collect();
    assert_eq!(
        param_names,
        [
            ("self", ParamKind::Normal),
            ("x", ParamKind::Normal),
            ("k", ParamKind::KeywordOnly),
            ("kw", ParamKind::VarKeyword),
        ]
    );
    assert_eq!(
        def.params[2].default.as_ref().map(sexpr).as_deref(),
        Some("3")
    );
    assert_eq!(
        def.returns.as_ref().map(sexpr).as_deref(),
        Some("([] Tuple (tuple Tensor int))")
    );
    assert_eq!(
        def.type_comment
            .as_ref()
            .map(|comment| comment.text.as_str()),
        Some("(Tensor) -> Tuple[Tensor, int]")
    );
    assert_eq!(
        stmt_kinds(&def.body),
        [
            "assign",
            "assign",
            "assign",
            "assign",
            "assign",
            "assign",
            "augassign",
            "augassign",
            "if",
            "for",
            "while",
            "assert",
            "del",
            "with",
            "return"
        ]
    );
    let targets = |index: usize| match &def.body[index].kind {
        StmtKind::Assign(assign) => (
            assign.targets.iter().map(sexpr).collect::<Vec<_>>(),
            assign.annotation.as_ref().map(sexpr),
            assign.value.as_ref().map(sexpr),
        ),
        _ => panic!("expected assignment"),
    };
    assert_eq!(
        targets(0),
        (
            vec!["(tuple a b)".to_string()],
            None,
            Some("(call g x)".to_string())
        )
    );
    assert_eq!(targets(1).0, ["(tuple a b)"]);
    assert_eq!(targets(2).0, ["(tuple (* c) d)"]);
    assert_eq!(
        targets(3),
        (
            vec!["y".to_string()],
            Some("int".to_string()),
            Some("3".to_string())
        )
    );
    assert_eq!(
        targets(4),
        (
            vec!["z".to_string()],
            Some("([] List int)".to_string()),
            None
        )
    );
    assert_eq!(targets(5).0, ["([] (. self w) 0)", "q"]);

    // if / elif / else: the elif is a nested If in orelse.
    let StmtKind::If(if_stmt) = &def.body[8].kind else {
        panic!("expected if");
    };
    assert_eq!(stmt_kinds(&if_stmt.body), ["return"]);
    let StmtKind::If(elif) = &if_stmt.orelse[0].kind else {
        panic!("expected elif");
    };
    assert_eq!(sexpr(&elif.test), "y");
    assert_eq!(stmt_kinds(&elif.orelse), ["raise"]);

    let StmtKind::For(for_stmt) = &def.body[9].kind else {
        panic!("expected for");
    };
    assert_eq!(sexpr(&for_stmt.target), "(tuple i (tuple j k))");
    assert_eq!(sexpr(&for_stmt.iter), "(call enumerate pairs)");
    assert_eq!(stmt_kinds(&for_stmt.body), ["if", "continue"]);

    let StmtKind::With(with) = &def.body[13].kind else {
        panic!("expected with");
    };
    assert_eq!(with.items.len(), 2);
    assert_eq!(
        with.items[0].target.as_ref().map(sexpr).as_deref(),
        Some("g")
    );
    assert_eq!(stmt_kinds(&with.body), ["global"]);

    let StmtKind::Return(Some(value)) = &def.body[14].kind else {
        panic!("expected return");
    };
    assert_eq!(sexpr(value), "(tuple a b)");
}

#[test]
fn class_with_attribute_declarations() {
    let text = "\
class M(Module):
  __parameters__ = [\"weight\", ]
  __buffers__ = []
  weight : Tensor
  training : bool
  __annotations__[\"0\"] = __torch__.Foo
  def forward(self: __torch__.M,
    x: Tensor) -> Tensor:
    return x
";
    let parsed = module(text);
    let StmtKind::ClassDef(class) = &parsed.body[0].kind else {
        panic!("expected class");
    };
    assert_eq!(class.name.name, "M");
    assert_eq!(
        class.bases.iter().map(sexpr).collect::<Vec<_>>(),
        ["Module"]
    );
    assert_eq!(
        stmt_kinds(&class.body),
        ["assign", "assign", "assign", "assign", "assign", "def"]
    );
    let StmtKind::Assign(annotations) = &class.body[4].kind else {
        panic!("expected assignment");
    };
    assert_eq!(sexpr(&annotations.targets[0]), "([] __annotations__ \"0\")");
    assert_eq!(
        annotations.value.as_ref().map(sexpr).as_deref(),
        Some("(. __torch__ Foo)")
    );
    // The statement range of the class covers its whole body.
    assert_eq!(parsed.body[0].range.line_col(), (1, 1));
    assert_eq!(parsed.body[0].range.end_line_col(), (9, 13));
}

#[test]
fn assignment_type_comment_is_attached() {
    let parsed = module("x = []  # type: List[int]\ny = 1\n");
    let StmtKind::Assign(assign) = &parsed.body[0].kind else {
        panic!("expected assignment");
    };
    assert_eq!(
        assign
            .type_comment
            .as_ref()
            .map(|comment| comment.text.as_str()),
        Some("List[int]")
    );
    let StmtKind::Assign(second) = &parsed.body[1].kind else {
        panic!("expected assignment");
    };
    assert!(second.type_comment.is_none());
}

#[test]
fn node_ranges_cover_their_source() {
    let parsed = module("y = foo(a, b=1)[0] + (c * d)\n");
    let StmtKind::Assign(assign) = &parsed.body[0].kind else {
        panic!("expected assignment");
    };
    let value = assign.value.as_ref().map(|value| value.range.text());
    assert_eq!(value, Some("foo(a, b=1)[0] + (c * d)"));
    let Some(Expr {
        kind: ExprKind::BinOp { left, right, .. },
        ..
    }) = &assign.value
    else {
        panic!("expected binop");
    };
    assert_eq!(left.range.text(), "foo(a, b=1)[0]");
    assert_eq!(right.range.text(), "(c * d)");
    assert_eq!(parsed.body[0].range.text(), "y = foo(a, b=1)[0] + (c * d)");
}

#[test]
fn syntax_errors() {
    let cases: &[(&str, &str, (usize, usize))] = &[
        (
            "x = 1 +\n",
            "expected an expression but found newline",
            (1, 8),
        ),
        ("if x\n    y\n", "expected ':' but found newline", (1, 5)),
        ("if x:\ny = 1\n", "expected an indented block", (2, 1)),
        ("x = 1\n    y = 2\n", "unexpected indent", (2, 5)),
        ("f(x) = 3\n", "cannot assign to function call", (1, 1)),
        ("a + b += 1\n", "augmented assignment", (1, 1)),
        (
            "f(a=1, b)\n",
            "positional argument follows keyword argument",
            (1, 8),
        ),
        (
            "def f(a=1, b): pass\n",
            "non-default argument follows default",
            (1, 12),
        ),
        ("x = a == not b\n", "'not' must be parenthesized", (1, 10)),
        ("x = lambda: 1\n", "'lambda' is not supported", (1, 5)),
        ("try:\n  pass\n", "'try' is not supported", (1, 1)),
        ("x = (y for y in z)\n", "generator expressions", (1, 5)),
        (
            "x = a if b\n",
            "expected 'else' in conditional expression",
            (1, 11),
        ),
        ("else:\n  pass\n", "without a matching 'if'", (1, 1)),
        ("x = b'abc'\n", "bytes literals", (1, 5)),
        (
            "x = 1 y = 2\n",
            "expected end of statement but found identifier 'y'",
            (1, 7),
        ),
    ];
    for (text, message, position) in cases {
        let error = parse_error(text);
        assert!(
            error.message.contains(message),
            "for {text:?}: message {:?} lacks {message:?}",
            error.message
        );
        assert_eq!(error.line_col(), Some(*position), "position for {text:?}");
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let depth = 100_000;
    let text = format!("x = {}1{}\n", "(".repeat(depth), ")".repeat(depth));
    let error = parse_error(&text);
    assert_eq!(error.kind, ErrorKind::TooDeeplyNested);

    let unary = format!("x = {}1\n", "-".repeat(depth));
    assert_eq!(parse_error(&unary).kind, ErrorKind::TooDeeplyNested);

    let lists = format!("x = {}{}\n", "[".repeat(depth), "]".repeat(depth));
    assert_eq!(parse_error(&lists).kind, ErrorKind::TooDeeplyNested);

    let chain = format!("x = a{}\n", " + a".repeat(depth));
    assert_eq!(parse_error(&chain).kind, ErrorKind::TooDeeplyNested);

    let calls = format!("x = f{}\n", "()".repeat(depth));
    assert_eq!(parse_error(&calls).kind, ErrorKind::TooDeeplyNested);

    let mut blocks = String::new();
    for level in 0..2_000 {
        blocks.push_str(&" ".repeat(level));
        blocks.push_str("if x:\n");
    }
    blocks.push_str(&" ".repeat(2_000));
    blocks.push_str("pass\n");
    assert_eq!(parse_error(&blocks).kind, ErrorKind::TooDeeplyNested);
}

#[test]
fn nesting_just_under_the_limit_parses() {
    // Each parenthesis level costs one nesting level, plus one for the outer expression.
    let depth = MAX_NESTING_DEPTH - 2;
    let text = format!("x = {}1{}\n", "(".repeat(depth), ")".repeat(depth));
    let parsed = module(&text);
    assert_eq!(parsed.body.len(), 1);
    // Long flat chains that do not nest (comparisons, and/or, tuples) are fine at any length.
    let flat = format!("x = a{}\n", " and a".repeat(5_000));
    assert_eq!(module(&flat).body.len(), 1);
    let tuple = format!("x = a{}\n", ", a".repeat(5_000));
    assert_eq!(module(&tuple).body.len(), 1);
}
