//! Parses real `code/` files printed by PyTorch 2.x's `torch.jit.save` (fixtures in tests/data,
//! produced by tests/data/generate_fixtures.py.txt) and checks their structure.
//!
//! The expected outlines and expression counts below were produced by CPython's own `ast` module
//! on the same files (statement type, 1-based line and column; expression node counts, where
//! Python's `Constant` covers our int/float/str/bool/None/ellipsis literals).

use std::collections::BTreeMap;

use ferrojit_frontend::ast::{Expr, ExprKind, Module, Stmt, StmtKind};
use ferrojit_frontend::parser::parse_file;
use ferrojit_frontend::source::SourceFile;

const NET_ROOT_OUTLINE: &str = r"
ClassDef Net@1:1
  Assign@2:3
  Assign@3:3
  AnnAssign@4:3
  AnnAssign@5:3
  AnnAssign@6:3
  AnnAssign@7:3
  AnnAssign@8:3
  FunctionDef forward@9:3
    Assign@12:5
    Assign@13:5
    Assign@14:5
    Assign@15:5
    Assign@16:5
    Assign@17:5
    Assign@18:5
    Assign@19:5
    Assign@20:5
    Assign@21:5
    Assign@22:5
    While@23:5
      Assign@24:7
      Assign@25:7
      Assign@26:7
      Assign@27:7
      Assign@28:7
    Assign@29:5
    Assign@30:5
    Assign@31:5
    Assign@32:5
    Assign@33:5
    For@34:5
      Assign@35:7
      Assign@36:7
    Return@37:5
  FunctionDef describe@38:3
    Assign@40:5
    Assign@41:5
    Assign@42:5
    Assign@43:5
    If@44:5
      Pass@45:7
      Expr@47:7
    If@48:5
      Assign@49:7
      Assign@51:7
    Return@52:5
ClassDef Block@53:1
  Assign@54:3
  Assign@55:3
  AnnAssign@56:3
  AnnAssign@57:3
  AnnAssign@58:3
  AnnAssign@59:3
  FunctionDef forward@60:3
    Assign@62:5
    Assign@63:5
    If@64:5
      Assign@65:7
      Assign@66:7
      Assign@67:7
      If@69:7
        Assign@70:9
        Assign@72:9
      Assign@73:7
    Return@74:5
FunctionDef scale_and_sum@75:1
  Assign@77:3
  Assign@78:3
  Assign@79:3
  For@80:3
    Assign@81:5
    If@82:5
      Assign@83:7
      Assign@84:7
      Assign@86:7
    Assign@87:5
  Return@88:3
";
const NET_ROOT_EXPR_COUNTS: &str =
    "Attribute=70, Call=53, Constant=35, List=9, Name=225, Subscript=12, Tuple=10, UnaryOp=3";

const LINEAR_OUTLINE: &str = r"
ClassDef Linear@1:1
  Assign@2:3
  Assign@3:3
  AnnAssign@4:3
  AnnAssign@5:3
  AnnAssign@6:3
  AnnAssign@7:3
  AnnAssign@8:3
  AnnAssign@9:3
  FunctionDef forward@10:3
    Assign@12:5
    Assign@13:5
    Return@14:5
";
const LINEAR_EXPR_COUNTS: &str = "Attribute=8, Call=1, Constant=4, List=2, Name=28, Subscript=2";

const CONTAINER_OUTLINE: &str = r"
ClassDef ModuleList@1:1
  Assign@2:3
  Assign@3:3
  AnnAssign@4:3
  AnnAssign@5:3
  Assign@6:3
  Assign@7:3
  FunctionDef __len__@8:3
    Return@9:5
";
const CONTAINER_EXPR_COUNTS: &str = "Attribute=7, Constant=3, List=2, Name=13, Subscript=2";

fn load(name: &str) -> Module {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) => panic!("cannot read {path}: {error}"),
    };
    match parse_file(SourceFile::new(format!("code/__torch__/{name}"), text)) {
        Ok(module) => module,
        Err(error) => panic!("{name} failed to parse: {error}"),
    }
}

/// Statement outline in the same format as the Python script that produced the expectations.
fn outline(body: &[Stmt], depth: usize, lines: &mut Vec<String>) {
    for stmt in body {
        let (line, column) = stmt.range.line_col();
        let name = match &stmt.kind {
            StmtKind::Def(def) => format!("FunctionDef {}", def.name.name),
            StmtKind::ClassDef(class) => format!("ClassDef {}", class.name.name),
            StmtKind::Assign(assign) if assign.annotation.is_some() => "AnnAssign".to_string(),
            StmtKind::Assign(_) => "Assign".to_string(),
            StmtKind::AugAssign(_) => "AugAssign".to_string(),
            StmtKind::Return(_) => "Return".to_string(),
            StmtKind::If(_) => "If".to_string(),
            StmtKind::While(_) => "While".to_string(),
            StmtKind::For(_) => "For".to_string(),
            StmtKind::Break => "Break".to_string(),
            StmtKind::Continue => "Continue".to_string(),
            StmtKind::Pass => "Pass".to_string(),
            StmtKind::Expr(_) => "Expr".to_string(),
            StmtKind::Raise(_) => "Raise".to_string(),
            StmtKind::Assert(_) => "Assert".to_string(),
            StmtKind::Del(_) => "Delete".to_string(),
            StmtKind::With(_) => "With".to_string(),
            StmtKind::Global(_) => "Global".to_string(),
            StmtKind::Nonlocal(_) => "Nonlocal".to_string(),
            StmtKind::Import(_) => "Import".to_string(),
            StmtKind::ImportFrom(_) => "ImportFrom".to_string(),
        };
        lines.push(format!("{}{name}@{line}:{column}", "  ".repeat(depth)));
        let (body, orelse): (&[Stmt], &[Stmt]) = match &stmt.kind {
            StmtKind::Def(def) => (&def.body, &[]),
            StmtKind::ClassDef(class) => (&class.body, &[]),
            StmtKind::If(if_stmt) => (&if_stmt.body, &if_stmt.orelse),
            StmtKind::While(while_stmt) => (&while_stmt.body, &while_stmt.orelse),
            StmtKind::For(for_stmt) => (&for_stmt.body, &for_stmt.orelse),
            StmtKind::With(with) => (&with.body, &[]),
            _ => (&[], &[]),
        };
        outline(body, depth + 1, lines);
        outline(orelse, depth + 1, lines);
    }
}

fn count_expr(expr: &Expr, counts: &mut BTreeMap<&'static str, usize>) {
    let name = match &expr.kind {
        ExprKind::Name(_) => "Name",
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Imaginary(_)
        | ExprKind::Str(_)
        | ExprKind::Bool(_)
        | ExprKind::None
        | ExprKind::Ellipsis => "Constant",
        ExprKind::FString(_) => "JoinedStr",
        ExprKind::Attribute { .. } => "Attribute",
        ExprKind::Call { .. } => "Call",
        ExprKind::Subscript { .. } => "Subscript",
        ExprKind::Slice { .. } => "Slice",
        ExprKind::BinOp { .. } => "BinOp",
        ExprKind::UnaryOp { .. } => "UnaryOp",
        ExprKind::BoolOp { .. } => "BoolOp",
        ExprKind::Compare { .. } => "Compare",
        ExprKind::IfExp { .. } => "IfExp",
        ExprKind::Tuple(_) => "Tuple",
        ExprKind::List(_) => "List",
        ExprKind::Set(_) => "Set",
        ExprKind::Dict { .. } => "Dict",
        ExprKind::ListComp { .. } => "ListComp",
        ExprKind::DictComp { .. } => "DictComp",
        ExprKind::Starred(_) => "Starred",
    };
    *counts.entry(name).or_default() += 1;
    let mut children: Vec<&Expr> = Vec::new();
    match &expr.kind {
        ExprKind::Attribute { value, .. } | ExprKind::Starred(value) => children.push(value),
        ExprKind::Call {
            func,
            args,
            keywords,
        } => {
            children.push(func);
            children.extend(args);
            children.extend(keywords.iter().map(|keyword| &keyword.value));
        }
        ExprKind::Subscript { value, index } => children.extend([&**value, &**index]),
        ExprKind::Slice { lower, upper, step } => children.extend(
            [lower, upper, step]
                .into_iter()
                .flatten()
                .map(|item| &**item),
        ),
        ExprKind::BinOp { left, right, .. } => children.extend([&**left, &**right]),
        ExprKind::UnaryOp { operand, .. } => children.push(operand),
        ExprKind::BoolOp { values, .. } => children.extend(values),
        ExprKind::Compare {
            left, comparators, ..
        } => {
            children.push(left);
            children.extend(comparators);
        }
        ExprKind::IfExp { test, body, orelse } => children.extend([&**test, &**body, &**orelse]),
        ExprKind::Tuple(items) | ExprKind::List(items) | ExprKind::Set(items) => {
            children.extend(items)
        }
        ExprKind::Dict { keys, values } => {
            children.extend(keys);
            children.extend(values);
        }
        _ => {}
    }
    for child in children {
        count_expr(child, counts);
    }
}

fn count_stmts(body: &[Stmt], counts: &mut BTreeMap<&'static str, usize>) {
    for stmt in body {
        let mut exprs: Vec<&Expr> = Vec::new();
        match &stmt.kind {
            StmtKind::Def(def) => {
                exprs.extend(&def.decorators);
                for param in &def.params {
                    exprs.extend(param.annotation.iter().chain(param.default.iter()));
                }
                exprs.extend(def.returns.iter());
                count_stmts(&def.body, counts);
            }
            StmtKind::ClassDef(class) => {
                exprs.extend(&class.bases);
                count_stmts(&class.body, counts);
            }
            StmtKind::Assign(assign) => {
                exprs.extend(&assign.targets);
                exprs.extend(assign.annotation.iter().chain(assign.value.iter()));
            }
            StmtKind::Return(value) => exprs.extend(value.iter()),
            StmtKind::Expr(value) => exprs.push(value),
            StmtKind::If(if_stmt) => {
                exprs.push(&if_stmt.test);
                count_stmts(&if_stmt.body, counts);
                count_stmts(&if_stmt.orelse, counts);
            }
            StmtKind::While(while_stmt) => {
                exprs.push(&while_stmt.test);
                count_stmts(&while_stmt.body, counts);
            }
            StmtKind::For(for_stmt) => {
                exprs.extend([&for_stmt.target, &for_stmt.iter]);
                count_stmts(&for_stmt.body, counts);
            }
            StmtKind::Pass => {}
            other => panic!("statement kind not expected in these fixtures: {other:?}"),
        }
        for expr in exprs {
            count_expr(expr, counts);
        }
    }
}

fn check(name: &str, expected_outline: &str, expected_counts: &str) -> Module {
    let module = load(name);
    let mut lines = Vec::new();
    outline(&module.body, 0, &mut lines);
    assert_eq!(
        lines.join("\n"),
        expected_outline.trim(),
        "outline of {name}"
    );
    let mut counts = BTreeMap::new();
    count_stmts(&module.body, &mut counts);
    let counts: Vec<String> = counts
        .iter()
        .map(|(kind, count)| format!("{kind}={count}"))
        .collect();
    assert_eq!(
        counts.join(", "),
        expected_counts,
        "expression counts of {name}"
    );
    module
}

fn body_of(stmt: &Stmt) -> &[Stmt] {
    match &stmt.kind {
        StmtKind::Def(def) => &def.body,
        StmtKind::ClassDef(class) => &class.body,
        _ => panic!("expected a def or class"),
    }
}

#[test]
fn net_module_matches_python_ast() {
    let module = check("net_root.py", NET_ROOT_OUTLINE, NET_ROOT_EXPR_COUNTS);
    // Spot checks of details the counts cannot see.
    let net_forward = &body_of(&module.body[0])[7];
    let StmtKind::Def(forward) = &net_forward.kind else {
        panic!("expected Net.forward");
    };
    let params: Vec<&str> = forward
        .params
        .iter()
        .map(|p| p.name.name.as_str())
        .collect();
    assert_eq!(params, ["self", "x", "n"]);
    assert_eq!(
        forward.params[0]
            .annotation
            .as_ref()
            .and_then(Expr::dotted_name)
            .as_deref(),
        Some("__torch__.Net")
    );
    assert!(matches!(
        forward.params[2].default.as_ref().map(|d| &d.kind),
        Some(ExprKind::Int(3))
    ));
    // `a, b, = torch.chunk(out, 2, -1)`: a two-element tuple target.
    let StmtKind::Assign(unpack) = &forward.body[14].kind else {
        panic!("expected the chunk unpacking");
    };
    assert!(matches!(&unpack.targets[0].kind, ExprKind::Tuple(items) if items.len() == 2));
    assert_eq!(unpack.targets[0].range.text(), "a, b,");

    // `def scale_and_sum(xs: List[Tensor], factor: float=2.)`
    let StmtKind::Def(function) = &module.body[2].kind else {
        panic!("expected scale_and_sum");
    };
    assert_eq!(function.name.name, "scale_and_sum");
    assert!(matches!(
        function.params[1].default.as_ref().map(|d| &d.kind),
        Some(ExprKind::Float(value)) if *value == 2.0
    ));
    assert_eq!(
        function.returns.as_ref().map(|r| r.range.text()),
        Some("Tuple[Tensor, int]")
    );

    // `_11 = torch.add("small\n", s)` keeps the decoded newline.
    let describe = &body_of(&module.body[0])[8];
    let StmtKind::If(second_if) = &body_of(describe)[5].kind else {
        panic!("expected the second if in describe");
    };
    let StmtKind::Assign(assign) = &second_if.orelse[0].kind else {
        panic!("expected assignment in else");
    };
    let Some(ExprKind::Call { args, .. }) = assign.value.as_ref().map(|v| &v.kind) else {
        panic!("expected call");
    };
    assert!(matches!(&args[0].kind, ExprKind::Str(text) if text == "small\n"));
}

#[test]
fn linear_module_matches_python_ast() {
    let module = check("linear.py", LINEAR_OUTLINE, LINEAR_EXPR_COUNTS);
    let class_body = body_of(&module.body[0]);
    let StmtKind::Assign(parameters) = &class_body[0].kind else {
        panic!("expected __parameters__");
    };
    let Some(ExprKind::List(names)) = parameters.value.as_ref().map(|v| &v.kind) else {
        panic!("expected a list");
    };
    let names: Vec<&str> = names
        .iter()
        .filter_map(|name| match &name.kind {
            ExprKind::Str(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(names, ["weight", "bias"]);
    let StmtKind::Assign(out_features) = &class_body[7].kind else {
        panic!("expected out_features");
    };
    assert_eq!(
        out_features.annotation.as_ref().map(|a| a.range.text()),
        Some("Final[int]")
    );
    assert!(matches!(
        out_features.value.as_ref().map(|v| &v.kind),
        Some(ExprKind::Int(4))
    ));
}

#[test]
fn container_module_matches_python_ast() {
    check("container.py", CONTAINER_OUTLINE, CONTAINER_EXPR_COUNTS);
}

#[test]
fn every_prefix_and_corruption_of_a_fixture_is_handled_without_panicking() {
    let path = format!("{}/tests/data/net_root.py", env!("CARGO_MANIFEST_DIR"));
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) => panic!("cannot read {path}: {error}"),
    };
    let mut failures = 0usize;
    for end in (0..=text.len()).filter(|&end| text.is_char_boundary(end)) {
        let prefix = &text[..end];
        if parse_file(SourceFile::new("prefix.py", prefix)).is_err() {
            failures += 1;
        }
    }
    // Cutting mid-line usually breaks the syntax, so many prefixes must be rejected.
    assert!(failures > text.len() / 4);
    // Replace single characters with awkward ones; results vary, but nothing may panic.
    let replacements = ["(", ")", ":", "\n", "\t", "'", "\\", "é", " ", "#"];
    for (index, _) in text.char_indices().step_by(7) {
        for replacement in replacements {
            let mut corrupted = text.clone();
            let width = corrupted[index..].chars().next().map_or(0, char::len_utf8);
            corrupted.replace_range(index..index + width, replacement);
            if let Err(error) = parse_file(SourceFile::new("corrupt.py", corrupted)) {
                assert!(error.to_string().contains("<--- HERE"));
            }
        }
    }
}
