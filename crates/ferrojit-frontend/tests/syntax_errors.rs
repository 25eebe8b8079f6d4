//! Error reporting: positions and the PyTorch-style `<--- HERE` rendering of source ranges.

use ferrojit_frontend::error::{ErrorKind, FrontendError};
use ferrojit_frontend::parser::parse_file;
use ferrojit_frontend::source::{SourceFile, SourceRange};

fn parse_error(name: &str, text: &str) -> FrontendError {
    match parse_file(SourceFile::new(name, text)) {
        Ok(module) => panic!("expected an error, parsed {} statements", module.body.len()),
        Err(error) => error,
    }
}

#[test]
fn bad_dedent_is_reported_with_highlight() {
    let text = "\
def f(x):
    if x:
        y = 1
      return y
";
    let error = parse_error("code/__torch__.py", text);
    assert_eq!(error.kind, ErrorKind::Lexical);
    assert_eq!(error.line_col(), Some((4, 7)));
    let expected = "\
unindent does not match any outer indentation level:
  File \"code/__torch__.py\", line 4
    if x:
        y = 1
      return y
      ~~~~~~ <--- HERE
";
    assert_eq!(error.to_string(), expected);
}

#[test]
fn unexpected_indent_is_reported_with_highlight() {
    let text = "x = 1\n    y = 2\n";
    let error = parse_error("m.py", text);
    assert_eq!(error.kind, ErrorKind::Syntax);
    assert_eq!(error.line_col(), Some((2, 5)));
    let expected = "\
unexpected indent:
  File \"m.py\", line 2
x = 1
    y = 2
    ~ <--- HERE
";
    assert_eq!(error.to_string(), expected);
}

#[test]
fn unclosed_paren_points_at_the_opening_paren() {
    let text = "\
def forward(self, x):
    y = torch.add(x,
                  1
    return y
";
    let error = parse_error("code/__torch__/m.py", text);
    assert_eq!(error.kind, ErrorKind::Lexical);
    assert_eq!(error.message, "'(' was never closed");
    assert_eq!(error.line_col(), Some((2, 18)));
    let expected = "\
'(' was never closed:
  File \"code/__torch__/m.py\", line 2
def forward(self, x):
    y = torch.add(x,
                 ~ <--- HERE
                  1
    return y
";
    assert_eq!(error.to_string(), expected);
}

#[test]
fn missing_operand_points_at_end_of_line() {
    let error = parse_error("f.py", "a = 1\nb = a +\nc = 2\n");
    assert_eq!(error.line_col(), Some((2, 8)));
    let expected = "\
expected an expression but found newline:
  File \"f.py\", line 2
a = 1
b = a +
       ~ <--- HERE
c = 2
";
    assert_eq!(error.to_string(), expected);
}

#[test]
fn highlight_shows_two_context_lines_each_side() {
    let file = SourceFile::new("ctx.py", "l1\nl2\nl3\nx = foo(y)\nl5\nl6\nl7\n");
    let start = "l1\nl2\nl3\nx = ".len();
    let range = SourceRange::new(file, start, start + 3);
    assert_eq!(range.text(), "foo");
    assert_eq!(range.line_col(), (4, 5));
    let expected = "  File \"ctx.py\", line 4\nl2\nl3\nx = foo(y)\n    ~~~ <--- HERE\nl5\nl6\n";
    assert_eq!(range.highlight(), expected);
    assert_eq!(
        range.print_with_context(0, "forward"),
        "  File \"ctx.py\", line 4, in forward\nx = foo(y)\n    ~~~ <--- HERE\n"
    );
}

#[test]
fn multi_line_ranges_put_here_on_the_last_line() {
    let file = SourceFile::new("ml.py", "z = bar(1,\n        2)\n");
    let start = "z = ".len();
    let end = "z = bar(1,\n        2)".len();
    let range = SourceRange::new(file, start, end);
    let expected =
        "  File \"ml.py\", line 1\nz = bar(1,\n    ~~~~~~\n        2)\n        ~~ <--- HERE\n";
    assert_eq!(range.highlight(), expected);
}

#[test]
fn tabs_in_the_prefix_are_kept_for_alignment() {
    let file = SourceFile::new("t.py", "if a:\n\tb = c\n");
    let start = "if a:\n\tb = ".len();
    let range = SourceRange::new(file, start, start + 1);
    assert_eq!(
        range.print_with_context(0, ""),
        "  File \"t.py\", line 2\n\tb = c\n\t    ~ <--- HERE\n"
    );
}

#[test]
fn columns_count_characters() {
    let file = SourceFile::new("u.py", "s = 'é' + x\n");
    let start = "s = 'é' + ".len();
    let range = SourceRange::new(file, start, start + 1);
    assert_eq!(range.line_col(), (1, 11));
    assert_eq!(
        range.print_with_context(0, ""),
        "  File \"u.py\", line 1\ns = 'é' + x\n          ~ <--- HERE\n"
    );
}

#[test]
fn general_errors_and_notes() {
    let file = SourceFile::new("g.py", "def f(x):\n    return g(x)\n");
    let call_start = "def f(x):\n    return ".len();
    let call = SourceRange::new(file.clone(), call_start, call_start + 4);
    let def_name = SourceRange::new(file, 4, 5);
    let error = FrontendError::new("Unknown builtin op: g", call)
        .with_note("'f' is being compiled since it was called from", def_name);
    assert_eq!(error.kind, ErrorKind::Semantic);
    let expected = "\
Unknown builtin op: g:
  File \"g.py\", line 2
def f(x):
    return g(x)
           ~~~~ <--- HERE

'f' is being compiled since it was called from:
  File \"g.py\", line 1
def f(x):
    ~ <--- HERE
    return g(x)
";
    assert_eq!(error.to_string(), expected);

    let bare = FrontendError::new("no location", None);
    assert_eq!(bare.to_string(), "no location");
    assert_eq!(bare.line_col(), None);
}

#[test]
fn out_of_bounds_ranges_are_clamped() {
    let file = SourceFile::new("c.py", "ab\n");
    let range = SourceRange::new(file.clone(), 10, 20);
    assert_eq!((range.start, range.end), (3, 3));
    assert_eq!(range.text(), "");
    // Rendering never panics, whatever the offsets.
    let raw = SourceRange {
        file,
        start: 7,
        end: 2,
    };
    assert!(raw.highlight().contains("<--- HERE"));
}
