//! Lexer tests: layout tokens (NEWLINE/INDENT/DEDENT), literals, operators, lexical errors.

use ferrojit_frontend::error::ErrorKind;
use ferrojit_frontend::lexer::{tokenize, Token, TokenKind};
use ferrojit_frontend::source::SourceFile;

fn lex(text: &str) -> Vec<Token> {
    match tokenize(&SourceFile::new("test.py", text)) {
        Ok(tokens) => tokens,
        Err(error) => panic!("unexpected lex error: {error}"),
    }
}

/// Compact spelling of a token stream: layout tokens in capitals, literals tagged.
fn show(text: &str) -> String {
    lex(text)
        .iter()
        .map(|token| match &token.kind {
            TokenKind::Name(name) => name.clone(),
            TokenKind::Keyword(keyword) => keyword.as_str().to_string(),
            TokenKind::Int(value) => format!("int:{value}"),
            TokenKind::Float(value) => format!("float:{value:?}"),
            TokenKind::Imaginary(value) => format!("imag:{value:?}"),
            TokenKind::Str(literal) => {
                let mut flags = String::new();
                if literal.is_fstring {
                    flags.push('f');
                }
                if literal.is_raw {
                    flags.push('r');
                }
                if literal.is_bytes {
                    flags.push('b');
                }
                format!("str{flags}:{:?}", literal.value)
            }
            TokenKind::Punct(punct) => punct.as_str().to_string(),
            TokenKind::TypeComment(text) => format!("TC:{text}"),
            TokenKind::Newline => "NL".to_string(),
            TokenKind::Indent => "IND".to_string(),
            TokenKind::Dedent => "DED".to_string(),
            TokenKind::Eof => "EOF".to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn lex_error(text: &str) -> ferrojit_frontend::error::FrontendError {
    match tokenize(&SourceFile::new("test.py", text)) {
        Ok(tokens) => panic!("expected a lex error, got {} tokens", tokens.len()),
        Err(error) => error,
    }
}

#[test]
fn nested_blocks_and_multi_level_dedent() {
    let text = "def f(x):\n    if x:\n        while x:\n            x = 1\n    return x\ny = 2\n";
    assert_eq!(
        show(text),
        "def f ( x ) : NL IND if x : NL IND while x : NL IND x = int:1 NL DED DED return x NL \
         DED y = int:2 NL EOF"
    );
}

#[test]
fn dedent_to_zero_at_end_of_file_without_trailing_newline() {
    assert_eq!(
        show("if a:\n  if b:\n    c"),
        "if a : NL IND if b : NL IND c NL DED DED EOF"
    );
}

#[test]
fn blank_and_comment_lines_produce_nothing() {
    let text = "# header\n\nx = 1  # trailing\n\n    # indented comment\n\t\n  \ny = 2\n# end";
    assert_eq!(show(text), "x = int:1 NL y = int:2 NL EOF");
}

#[test]
fn brackets_spanning_lines_suppress_layout() {
    let text = "def f(a,\n      b: int,\n  c) -> int:\n  return [a,\nb,\n    c]\n";
    assert_eq!(
        show(text),
        "def f ( a , b : int , c ) -> int : NL IND return [ a , b , c ] NL DED EOF"
    );
}

#[test]
fn backslash_continuation_joins_lines() {
    assert_eq!(
        show("x = 1 + \\\n        2\ny = 3\n"),
        "x = int:1 + int:2 NL y = int:3 NL EOF"
    );
    // CRLF line endings behave the same.
    assert_eq!(show("x = 1 \\\r\n + 2\r\n"), "x = int:1 + int:2 NL EOF");
}

#[test]
fn tabs_count_to_next_multiple_of_eight() {
    // A tab and eight spaces are the same indentation level.
    assert_eq!(
        show("if a:\n\tb\n        c\n"),
        "if a : NL IND b NL c NL DED EOF"
    );
    // Four spaces then a tab is also column 8.
    assert_eq!(
        show("if a:\n    \tb\n\tc\n"),
        "if a : NL IND b NL c NL DED EOF"
    );
}

#[test]
fn type_comments_are_kept() {
    assert_eq!(
        show("def f(x):\n    # type: (int) -> int\n    return x\n"),
        "def f ( x ) : NL TC:(int) -> int IND return x NL DED EOF"
    );
    assert_eq!(
        show("x = []  # type: List[int]\n"),
        "x = [ ] TC:List[int] NL EOF"
    );
}

#[test]
fn integer_literals() {
    assert_eq!(
        show("0 7 1_000 0x_fF 0o17 0b1010 0B1 00 18446744073709551615"),
        "int:0 int:7 int:1000 int:255 int:15 int:10 int:1 int:0 int:18446744073709551615 NL EOF"
    );
}

#[test]
fn float_literals() {
    assert_eq!(
        show("1. .5 1e-3 2.5E+2 1_0.2_5 3.e1 inf"),
        "float:1.0 float:0.5 float:0.001 float:250.0 float:10.25 float:30.0 inf NL EOF"
    );
}

/// Python's imaginary literals: an integer or float followed by `j` or `J`; `1.+2.j` (how
/// PyTorch writes a complex constant in code) is a float plus an imaginary literal.
#[test]
fn imaginary_literals() {
    assert_eq!(
        show("3j 1.5J 1.+2.j 1e3j"),
        "imag:3.0 imag:1.5 float:1.0 + imag:2.0 imag:1000.0 NL EOF"
    );
}

#[test]
fn string_literals() {
    assert_eq!(
        show(r#"'a' "b\n" 'it\'s' r'\d+' f"{x}!" '\x41\101\u00e9' b'z' "\q""#),
        "str:\"a\" str:\"b\\n\" str:\"it's\" strr:\"\\\\d+\" strf:\"{x}!\" str:\"AAé\" \
         strb:\"z\" str:\"\\\\q\" NL EOF"
    );
    assert_eq!(
        show("s = '''one\n'two'\n  three'''\n"),
        "s = str:\"one\\n'two'\\n  three\" NL EOF"
    );
    assert_eq!(show("s = \"a\\\nb\"\n"), "s = str:\"ab\" NL EOF");
}

#[test]
fn operators_longest_match() {
    assert_eq!(
        show("a -> ** // @ << >> += -= *= /= //= %= **= &= |= ^= <<= >>= @= == != <= >= ..."),
        "a -> ** // @ << >> += -= *= /= //= %= **= &= |= ^= <<= >>= @= == != <= >= ... NL EOF"
    );
    assert_eq!(
        show("x[1:2,::-1]"),
        "x [ int:1 : int:2 , : : - int:1 ] NL EOF"
    );
}

#[test]
fn keywords_and_names() {
    assert_eq!(
        show("not_a is not None and True or False in lambda"),
        "not_a is not None and True or False in lambda NL EOF"
    );
    // Keywords are recognized by exact spelling only.
    assert!(matches!(lex("none")[0].kind, TokenKind::Name(_)));
}

#[test]
fn token_ranges_point_at_source() {
    let tokens = lex("x = foo(y)\n  \nif z:\n    w\n");
    let ranges: Vec<(String, (usize, usize))> = tokens
        .iter()
        .map(|token| (token.range.text().to_string(), token.range.line_col()))
        .collect();
    assert_eq!(ranges[0], ("x".to_string(), (1, 1)));
    assert_eq!(ranges[3], ("(".to_string(), (1, 8)));
    assert_eq!(ranges[6], ("\n".to_string(), (1, 11)));
    assert_eq!(ranges[7], ("if".to_string(), (3, 1)));
    // INDENT borrows the range of the first token of its line.
    assert_eq!(tokens[11].kind, TokenKind::Indent);
    assert_eq!(ranges[11], ("w".to_string(), (4, 5)));
}

#[test]
fn inconsistent_dedent_is_an_error() {
    let error = lex_error("if a:\n    b\n  c\n");
    assert_eq!(error.kind, ErrorKind::Lexical);
    assert!(error.message.contains("unindent does not match"));
    assert_eq!(error.line_col(), Some((3, 3)));
}

#[test]
fn bracket_errors() {
    let error = lex_error("x = (1,\n  [2, 3]\n");
    assert_eq!(error.message, "'(' was never closed");
    assert_eq!(error.line_col(), Some((1, 5)));

    let error = lex_error("x = (1, 2]\n");
    assert!(error.message.contains("does not match"));
    assert_eq!(error.line_col(), Some((1, 10)));

    let error = lex_error("x = 1)\n");
    assert_eq!(error.message, "unmatched ')'");
}

#[test]
fn literal_errors() {
    assert!(lex_error("x = 'abc\n")
        .message
        .contains("unterminated string"));
    assert!(lex_error("x = '''abc\n")
        .message
        .contains("unterminated triple-quoted"));
    assert!(lex_error("x = 012\n").message.contains("leading zeros"));
    assert!(lex_error("x = 1__0\n").message.contains("invalid number"));
    assert!(lex_error("x = 1_\n").message.contains("invalid number"));
    assert!(lex_error("x = 0x\n").message.contains("invalid number"));
    assert!(lex_error("x = 12abc\n").message.contains("invalid number"));
    assert!(lex_error("x = 0x3j\n").message.contains("invalid number"));
    assert!(lex_error("x = 3jk\n").message.contains("invalid number"));
    assert!(lex_error("x = 18446744073709551616\n")
        .message
        .contains("too large"));
    assert!(lex_error("x = '\\x4'\n").message.contains("escape"));
    assert!(lex_error("x = $\n").message.contains("invalid character"));
    assert!(lex_error("x = 1 \\ 2\n").message.contains("continuation"));
    assert!(lex_error("x = 1 \\").message.contains("continuation"));
}

#[test]
fn empty_input() {
    assert_eq!(show(""), "EOF");
    assert_eq!(show("\n\n  # only comments\n"), "EOF");
}
