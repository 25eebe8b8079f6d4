//! Tokenizer for the Python subset used by TorchScript (printed `code/` files and hand-written).
//!
//! Produces Python-style layout tokens: `Newline` ends each logical line, `Indent`/`Dedent`
//! bracket blocks. Layout is suppressed inside (), [], {} and after a trailing backslash; blank
//! and comment-only lines produce nothing except `# type:` comments, which are kept as tokens.

use std::fmt;
use std::sync::{Arc, OnceLock};

use crate::error::FrontendError;
use crate::source::{SourceFile, SourceRange};

/// Reserved words. Some (`try`, `yield`, `lambda`, ...) are not TorchScript but are still
/// reserved so the parser can report them as unsupported instead of misreading them as names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Keyword {
    Def,
    Class,
    Return,
    If,
    Elif,
    Else,
    For,
    In,
    While,
    Break,
    Continue,
    Pass,
    And,
    Or,
    Not,
    Is,
    None,
    True,
    False,
    Assert,
    Raise,
    With,
    As,
    Global,
    Nonlocal,
    Del,
    Lambda,
    Import,
    From,
    Try,
    Except,
    Finally,
    Yield,
    Async,
    Await,
}

const KEYWORDS: &[(&str, Keyword)] = &[
    ("def", Keyword::Def),
    ("class", Keyword::Class),
    ("return", Keyword::Return),
    ("if", Keyword::If),
    ("elif", Keyword::Elif),
    ("else", Keyword::Else),
    ("for", Keyword::For),
    ("in", Keyword::In),
    ("while", Keyword::While),
    ("break", Keyword::Break),
    ("continue", Keyword::Continue),
    ("pass", Keyword::Pass),
    ("and", Keyword::And),
    ("or", Keyword::Or),
    ("not", Keyword::Not),
    ("is", Keyword::Is),
    ("None", Keyword::None),
    ("True", Keyword::True),
    ("False", Keyword::False),
    ("assert", Keyword::Assert),
    ("raise", Keyword::Raise),
    ("with", Keyword::With),
    ("as", Keyword::As),
    ("global", Keyword::Global),
    ("nonlocal", Keyword::Nonlocal),
    ("del", Keyword::Del),
    ("lambda", Keyword::Lambda),
    ("import", Keyword::Import),
    ("from", Keyword::From),
    ("try", Keyword::Try),
    ("except", Keyword::Except),
    ("finally", Keyword::Finally),
    ("yield", Keyword::Yield),
    ("async", Keyword::Async),
    ("await", Keyword::Await),
];

impl Keyword {
    /// The keyword spelled `word`, if it is one.
    pub fn from_word(word: &str) -> Option<Keyword> {
        // Comparing the first byte before the whole word keeps this from being a string
        // comparison per keyword for every identifier (a tenth of loading a model's code).
        let first = *word.as_bytes().first()?;
        by_first_byte(&KEYWORD_BUCKETS, KEYWORDS)[usize::from(first)]
            .iter()
            .map(|&index| KEYWORDS[index])
            .find(|(spelling, _)| *spelling == word)
            .map(|(_, keyword)| keyword)
    }

    /// Source spelling.
    pub fn as_str(self) -> &'static str {
        KEYWORDS
            .iter()
            .find(|(_, keyword)| *keyword == self)
            .map(|&(spelling, _)| spelling)
            .unwrap_or("?")
    }
}

/// Operators and punctuation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Punct {
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Colon,
    Semicolon,
    Dot,
    Ellipsis,
    Arrow,
    Assign,
    Plus,
    Minus,
    Star,
    Slash,
    DoubleSlash,
    Percent,
    DoubleStar,
    At,
    Amp,
    Pipe,
    Caret,
    Tilde,
    LShift,
    RShift,
    Eq,
    NotEq,
    Lt,
    Le,
    Gt,
    Ge,
    PlusAssign,
    MinusAssign,
    StarAssign,
    SlashAssign,
    DoubleSlashAssign,
    PercentAssign,
    DoubleStarAssign,
    AtAssign,
    AmpAssign,
    PipeAssign,
    CaretAssign,
    LShiftAssign,
    RShiftAssign,
}

/// Longest spellings first so that matching greedily picks e.g. `**=` over `**` over `*`.
const PUNCTS: &[(&str, Punct)] = &[
    ("**=", Punct::DoubleStarAssign),
    ("//=", Punct::DoubleSlashAssign),
    ("<<=", Punct::LShiftAssign),
    (">>=", Punct::RShiftAssign),
    ("...", Punct::Ellipsis),
    ("->", Punct::Arrow),
    ("**", Punct::DoubleStar),
    ("//", Punct::DoubleSlash),
    ("<<", Punct::LShift),
    (">>", Punct::RShift),
    ("==", Punct::Eq),
    ("!=", Punct::NotEq),
    ("<=", Punct::Le),
    (">=", Punct::Ge),
    ("+=", Punct::PlusAssign),
    ("-=", Punct::MinusAssign),
    ("*=", Punct::StarAssign),
    ("/=", Punct::SlashAssign),
    ("%=", Punct::PercentAssign),
    ("@=", Punct::AtAssign),
    ("&=", Punct::AmpAssign),
    ("|=", Punct::PipeAssign),
    ("^=", Punct::CaretAssign),
    ("(", Punct::LParen),
    (")", Punct::RParen),
    ("[", Punct::LBracket),
    ("]", Punct::RBracket),
    ("{", Punct::LBrace),
    ("}", Punct::RBrace),
    (",", Punct::Comma),
    (":", Punct::Colon),
    (";", Punct::Semicolon),
    (".", Punct::Dot),
    ("=", Punct::Assign),
    ("+", Punct::Plus),
    ("-", Punct::Minus),
    ("*", Punct::Star),
    ("/", Punct::Slash),
    ("%", Punct::Percent),
    ("@", Punct::At),
    ("&", Punct::Amp),
    ("|", Punct::Pipe),
    ("^", Punct::Caret),
    ("~", Punct::Tilde),
    ("<", Punct::Lt),
    (">", Punct::Gt),
];

/// For each first byte, the indices (in table order) of the spellings that start with it:
/// looking a word or operator up then compares a few candidates, not the whole table
/// (these lookups were a large part of lexing a model's code).
fn by_first_byte<T>(
    buckets: &'static OnceLock<Vec<Vec<usize>>>,
    table: &[(&str, T)],
) -> &'static [Vec<usize>] {
    buckets.get_or_init(|| {
        let mut buckets = vec![Vec::new(); 256];
        for (index, (spelling, _)) in table.iter().enumerate() {
            if let Some(&first) = spelling.as_bytes().first() {
                buckets[usize::from(first)].push(index);
            }
        }
        buckets
    })
}

static KEYWORD_BUCKETS: OnceLock<Vec<Vec<usize>>> = OnceLock::new();
static PUNCT_BUCKETS: OnceLock<Vec<Vec<usize>>> = OnceLock::new();

impl Punct {
    /// Source spelling.
    pub fn as_str(self) -> &'static str {
        PUNCTS
            .iter()
            .find(|(_, punct)| *punct == self)
            .map(|&(spelling, _)| spelling)
            .unwrap_or("?")
    }
}

/// A string literal's decoded value and prefix flags.
#[derive(Debug, Clone, PartialEq)]
pub struct StringToken {
    /// Value with escapes processed (raw strings keep backslashes).
    pub value: String,
    pub is_raw: bool,
    /// `f"..."`: the value still contains the `{...}` replacement fields, unparsed.
    pub is_fstring: bool,
    pub is_bytes: bool,
}

/// What a token is.
#[derive(Debug, Clone, PartialEq)]
pub enum TokenKind {
    Name(String),
    Keyword(Keyword),
    /// Integer literal; Python's magnitude (sign is a separate operator), at most `u64::MAX`.
    Int(u64),
    Float(f64),
    /// Imaginary literal (`2j`, `1.5J`): the imaginary part of a complex with real part 0.
    Imaginary(f64),
    Str(StringToken),
    Punct(Punct),
    /// A `# type: ...` comment; holds the text after `type:`, trimmed.
    TypeComment(String),
    Newline,
    Indent,
    Dedent,
    Eof,
}

impl TokenKind {
    /// Human description for error messages.
    pub fn describe(&self) -> String {
        match self {
            TokenKind::Name(name) => format!("identifier '{name}'"),
            TokenKind::Keyword(keyword) => format!("'{}'", keyword.as_str()),
            TokenKind::Int(value) => format!("integer literal {value}"),
            TokenKind::Float(value) => format!("float literal {value:?}"),
            TokenKind::Imaginary(value) => format!("imaginary literal {value:?}j"),
            TokenKind::Str(_) => "string literal".to_string(),
            TokenKind::Punct(punct) => format!("'{}'", punct.as_str()),
            TokenKind::TypeComment(_) => "type comment".to_string(),
            TokenKind::Newline => "newline".to_string(),
            TokenKind::Indent => "indent".to_string(),
            TokenKind::Dedent => "dedent".to_string(),
            TokenKind::Eof => "end of input".to_string(),
        }
    }
}

impl fmt::Display for TokenKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

/// A token and where it came from.
///
/// `Indent`/`Dedent` carry the range of the first token of the line that caused them;
/// `Newline` carries the line terminator (zero-width at end of input); `Eof` is zero-width
/// just after the last non-blank character.
#[derive(Debug, Clone)]
pub struct Token {
    pub kind: TokenKind,
    pub range: SourceRange,
}

/// Columns a tab advances to (next multiple of 8), as in CPython's tokenizer.
const TAB_SIZE: usize = 8;

/// Splits `file` into tokens, ending with `Newline`, `Dedent`s to column 0 and `Eof`.
pub fn tokenize(file: &Arc<SourceFile>) -> Result<Vec<Token>, FrontendError> {
    let mut lexer = Lexer {
        file,
        text: file.text(),
        pos: 0,
        tokens: Vec::new(),
        indents: vec![0],
        brackets: Vec::new(),
        pending_layout: Vec::new(),
        line_has_tokens: false,
        at_line_start: true,
    };
    lexer.run()?;
    Ok(lexer.tokens)
}

struct Lexer<'a> {
    file: &'a Arc<SourceFile>,
    text: &'a str,
    pos: usize,
    tokens: Vec<Token>,
    /// Open indentation columns; always starts with 0.
    indents: Vec<usize>,
    /// Open brackets: (opening char, byte offset).
    brackets: Vec<(char, usize)>,
    /// Indent/Dedent tokens waiting for the next real token (whose range they borrow).
    pending_layout: Vec<TokenKind>,
    /// Whether the current logical line has produced a token (so it needs a `Newline`).
    line_has_tokens: bool,
    /// Whether we are at the beginning of a physical line where indentation counts.
    at_line_start: bool,
}

fn is_identifier_start(ch: char) -> bool {
    ch == '_' || ch.is_alphabetic()
}

fn is_identifier_continue(ch: char) -> bool {
    ch == '_' || ch.is_alphanumeric()
}

impl<'a> Lexer<'a> {
    fn range(&self, start: usize, end: usize) -> SourceRange {
        SourceRange::new(self.file.clone(), start, end)
    }

    fn error(&self, message: impl Into<String>, start: usize, end: usize) -> FrontendError {
        FrontendError::lexical(message, self.range(start, end))
    }

    fn peek_char(&self) -> Option<char> {
        match self.text.as_bytes().get(self.pos) {
            Some(&byte) if byte.is_ascii() => Some(char::from(byte)),
            _ => self
                .text
                .get(self.pos..)
                .and_then(|rest| rest.chars().next()),
        }
    }

    fn char_at(&self, offset: usize) -> Option<char> {
        self.text.get(offset..).and_then(|rest| rest.chars().next())
    }

    fn byte_at(&self, offset: usize) -> Option<u8> {
        self.text.as_bytes().get(offset).copied()
    }

    /// Length of a line terminator at `offset` (`\n` or `\r\n`), or 0.
    fn newline_len(&self, offset: usize) -> usize {
        match (self.byte_at(offset), self.byte_at(offset + 1)) {
            (Some(b'\n'), _) => 1,
            (Some(b'\r'), Some(b'\n')) => 2,
            _ => 0,
        }
    }

    fn push(&mut self, kind: TokenKind, start: usize, end: usize) {
        let range = self.range(start, end);
        if !self.pending_layout.is_empty() {
            self.push_pending_layout(&range);
        }
        self.tokens.push(Token { kind, range });
        self.line_has_tokens = true;
    }

    fn push_pending_layout(&mut self, range: &SourceRange) {
        for layout in self.pending_layout.drain(..) {
            self.tokens.push(Token {
                kind: layout,
                range: range.clone(),
            });
        }
    }

    /// End of the word starting at `start` (for pointing errors at a whole token-ish span).
    fn word_end(&self, start: usize) -> usize {
        let rest = self.text.get(start..).unwrap_or("");
        let length = rest
            .find(|ch: char| ch.is_whitespace())
            .unwrap_or(rest.len());
        start + length.max(rest.chars().next().map_or(0, char::len_utf8))
    }

    fn run(&mut self) -> Result<(), FrontendError> {
        loop {
            if self.at_line_start && self.brackets.is_empty() && !self.start_line()? {
                continue;
            }
            self.skip_blanks();
            let start = self.pos;
            let Some(ch) = self.peek_char() else {
                break;
            };
            match ch {
                '#' => self.lex_comment(),
                '\n' | '\r' if self.newline_len(start) > 0 => {
                    let length = self.newline_len(start);
                    self.pos += length;
                    if self.brackets.is_empty() {
                        if self.line_has_tokens {
                            let range = self.range(start, start + length);
                            self.tokens.push(Token {
                                kind: TokenKind::Newline,
                                range,
                            });
                            self.line_has_tokens = false;
                        }
                        self.at_line_start = true;
                    }
                }
                '\\' => {
                    let length = self.newline_len(start + 1);
                    if length > 0 {
                        self.pos += 1 + length;
                    } else if start + 1 >= self.text.len() {
                        return Err(self.error(
                            "unexpected end of input after line continuation character",
                            start,
                            start + 1,
                        ));
                    } else {
                        return Err(self.error(
                            "unexpected character after line continuation character",
                            start,
                            start + 1,
                        ));
                    }
                }
                '"' | '\'' => self.lex_string(start, start, "")?,
                ch if ch.is_ascii_digit() => self.lex_number(start)?,
                '.' if self
                    .char_at(start + 1)
                    .is_some_and(|next| next.is_ascii_digit()) =>
                {
                    self.lex_number(start)?
                }
                ch if is_identifier_start(ch) => self.lex_word(start)?,
                _ => self.lex_punct(start, ch)?,
            }
        }
        self.finish()
    }

    /// Handles indentation at the start of a physical line. Returns false when the line was
    /// blank or comment-only and has been consumed entirely.
    fn start_line(&mut self) -> Result<bool, FrontendError> {
        let mut column = 0usize;
        let mut offset = self.pos;
        while let Some(byte) = self.byte_at(offset) {
            match byte {
                b' ' => column += 1,
                b'\t' => column = (column / TAB_SIZE + 1) * TAB_SIZE,
                b'\x0c' => column = 0,
                _ => break,
            }
            offset += 1;
        }
        self.pos = offset;
        match self.byte_at(offset) {
            None => {
                self.at_line_start = false;
                return Ok(true);
            }
            Some(b'#') => {
                self.lex_comment();
                return self.consume_blank_line_end();
            }
            _ if self.newline_len(offset) > 0 => {
                return self.consume_blank_line_end();
            }
            _ => {}
        }
        self.at_line_start = false;
        let current = self.indents.last().copied().unwrap_or(0);
        if column > current {
            self.indents.push(column);
            self.pending_layout.push(TokenKind::Indent);
        } else if column < current {
            while self.indents.last().is_some_and(|&open| open > column) {
                self.indents.pop();
                self.pending_layout.push(TokenKind::Dedent);
            }
            if self.indents.last().copied() != Some(column) {
                let end = self.word_end(offset);
                return Err(self.error(
                    "unindent does not match any outer indentation level",
                    offset,
                    end,
                ));
            }
        }
        Ok(true)
    }

    /// After a blank or comment-only line: eat its terminator and stay at line start.
    fn consume_blank_line_end(&mut self) -> Result<bool, FrontendError> {
        let length = self.newline_len(self.pos);
        if length == 0 {
            // End of input right after a comment.
            self.at_line_start = false;
            return Ok(true);
        }
        self.pos += length;
        Ok(false)
    }

    fn skip_blanks(&mut self) {
        while let Some(byte) = self.byte_at(self.pos) {
            match byte {
                b' ' | b'\t' | b'\x0c' => self.pos += 1,
                b'\r' if self.byte_at(self.pos + 1) != Some(b'\n') => self.pos += 1,
                _ => break,
            }
        }
    }

    /// Skips a `#` comment up to (not including) the line terminator; keeps `# type:` ones.
    fn lex_comment(&mut self) {
        let start = self.pos;
        let rest = self.text.get(start..).unwrap_or("");
        let length = rest.find(['\n', '\r']).unwrap_or(rest.len());
        self.pos = start + length;
        let body = rest.get(1..length).unwrap_or("").trim_start();
        if let Some(annotation) = body.strip_prefix("type:") {
            // Not routed through `push`: a type comment must not steal pending layout tokens
            // or mark a comment-only line as having content.
            let range = self.range(start, start + length);
            self.tokens.push(Token {
                kind: TokenKind::TypeComment(annotation.trim().to_string()),
                range,
            });
        }
    }

    fn lex_word(&mut self, start: usize) -> Result<(), FrontendError> {
        let rest = self.text.get(start..).unwrap_or("");
        // ASCII identifiers by byte; a non-ASCII character continues by `char`.
        let ascii = rest
            .bytes()
            .position(|byte| !(byte.is_ascii_alphanumeric() || byte == b'_'))
            .unwrap_or(rest.len());
        let length = if rest
            .as_bytes()
            .get(ascii)
            .is_some_and(|byte| !byte.is_ascii())
        {
            rest.find(|ch: char| !is_identifier_continue(ch))
                .unwrap_or(rest.len())
        } else {
            ascii
        };
        let word = rest.get(..length).unwrap_or("");
        let end = start + length;
        let next = self.byte_at(end);
        if matches!(next, Some(b'"') | Some(b'\'')) {
            let lower = word.to_ascii_lowercase();
            if matches!(
                lower.as_str(),
                "r" | "u" | "f" | "b" | "rb" | "br" | "fr" | "rf"
            ) {
                return self.lex_string(start, end, &lower);
            }
        }
        self.pos = end;
        let kind = match Keyword::from_word(word) {
            Some(keyword) => TokenKind::Keyword(keyword),
            None => TokenKind::Name(word.to_string()),
        };
        self.push(kind, start, end);
        Ok(())
    }

    fn lex_punct(&mut self, start: usize, ch: char) -> Result<(), FrontendError> {
        let rest = self.text.get(start..).unwrap_or("");
        let first = rest.as_bytes().first().copied().unwrap_or(0);
        // Longer spellings come first in PUNCTS, so the first match is the longest.
        let found = by_first_byte(&PUNCT_BUCKETS, PUNCTS)[usize::from(first)]
            .iter()
            .map(|&index| PUNCTS[index])
            .find(|(spelling, _)| rest.starts_with(spelling));
        let Some((spelling, punct)) = found else {
            let end = start + ch.len_utf8();
            return Err(self.error(format!("invalid character '{ch}'"), start, end));
        };
        let end = start + spelling.len();
        match punct {
            Punct::LParen | Punct::LBracket | Punct::LBrace => self.brackets.push((ch, start)),
            Punct::RParen | Punct::RBracket | Punct::RBrace => {
                let expected_open = match punct {
                    Punct::RParen => '(',
                    Punct::RBracket => '[',
                    _ => '{',
                };
                match self.brackets.pop() {
                    None => return Err(self.error(format!("unmatched '{ch}'"), start, end)),
                    Some((open, _)) if open != expected_open => {
                        return Err(self.error(
                            format!(
                                "closing parenthesis '{ch}' does not match opening parenthesis '{open}'"
                            ),
                            start,
                            end,
                        ))
                    }
                    Some(_) => {}
                }
            }
            _ => {}
        }
        self.pos = end;
        self.push(TokenKind::Punct(punct), start, end);
        Ok(())
    }

    fn finish(&mut self) -> Result<(), FrontendError> {
        if let Some(&(open, offset)) = self.brackets.last() {
            return Err(self.error(
                format!("'{open}' was never closed"),
                offset,
                offset + open.len_utf8(),
            ));
        }
        let trimmed_end = self.text.trim_end().len();
        let eof_range = self.range(trimmed_end, trimmed_end);
        if self.line_has_tokens {
            self.tokens.push(Token {
                kind: TokenKind::Newline,
                range: eof_range.clone(),
            });
            self.line_has_tokens = false;
        }
        while self.indents.len() > 1 {
            self.indents.pop();
            self.tokens.push(Token {
                kind: TokenKind::Dedent,
                range: eof_range.clone(),
            });
        }
        self.tokens.push(Token {
            kind: TokenKind::Eof,
            range: eof_range,
        });
        Ok(())
    }

    /// Reads digits accepted by `is_digit`, allowing single underscores between digits
    /// (and, after a radix prefix, one leading underscore). Returns the digits without
    /// underscores; the position ends after the last digit.
    fn read_digits(
        &mut self,
        literal_start: usize,
        is_digit: fn(u8) -> bool,
        allow_leading_underscore: bool,
    ) -> Result<String, FrontendError> {
        let mut digits = String::new();
        loop {
            match self.byte_at(self.pos) {
                Some(byte) if is_digit(byte) => {
                    digits.push(byte as char);
                    self.pos += 1;
                }
                Some(b'_') => {
                    let after_ok = self.byte_at(self.pos + 1).is_some_and(is_digit);
                    let before_ok = !digits.is_empty() || allow_leading_underscore;
                    if !(after_ok && before_ok) {
                        let end = self.word_end(literal_start);
                        return Err(self.error("invalid number literal", literal_start, end));
                    }
                    self.pos += 1;
                }
                _ => return Ok(digits),
            }
        }
    }

    fn lex_number(&mut self, start: usize) -> Result<(), FrontendError> {
        if self.lex_plain_decimal(start) {
            return Ok(());
        }
        self.pos = start;
        let radix_prefix = match (self.byte_at(start), self.byte_at(start + 1)) {
            (Some(b'0'), Some(b'x' | b'X')) => Some(16),
            (Some(b'0'), Some(b'o' | b'O')) => Some(8),
            (Some(b'0'), Some(b'b' | b'B')) => Some(2),
            _ => None,
        };
        let kind = if let Some(radix) = radix_prefix {
            self.pos = start + 2;
            let is_digit: fn(u8) -> bool = match radix {
                16 => |byte| byte.is_ascii_hexdigit(),
                8 => |byte| (b'0'..=b'7').contains(&byte),
                _ => |byte| byte == b'0' || byte == b'1',
            };
            let digits = self.read_digits(start, is_digit, true)?;
            if digits.is_empty() {
                let end = self.word_end(start);
                return Err(self.error("invalid number literal", start, end));
            }
            let value = u64::from_str_radix(&digits, radix)
                .map_err(|_| self.error("integer literal is too large", start, self.pos))?;
            TokenKind::Int(value)
        } else {
            let integer_digits = self.read_digits(start, |byte| byte.is_ascii_digit(), false)?;
            let mut is_float = false;
            let mut float_text = integer_digits.clone();
            if self.byte_at(self.pos) == Some(b'.') {
                is_float = true;
                self.pos += 1;
                float_text.push('.');
                let fraction = self.read_digits(start, |byte| byte.is_ascii_digit(), false)?;
                float_text.push_str(&fraction);
            }
            if matches!(self.byte_at(self.pos), Some(b'e' | b'E')) {
                let sign_len = usize::from(matches!(self.byte_at(self.pos + 1), Some(b'+' | b'-')));
                if self
                    .byte_at(self.pos + 1 + sign_len)
                    .is_some_and(|byte| byte.is_ascii_digit())
                {
                    is_float = true;
                    float_text.push('e');
                    if sign_len == 1 && self.byte_at(self.pos + 1) == Some(b'-') {
                        float_text.push('-');
                    }
                    self.pos += 1 + sign_len;
                    let exponent = self.read_digits(start, |byte| byte.is_ascii_digit(), false)?;
                    float_text.push_str(&exponent);
                }
            }
            if is_float {
                if float_text.starts_with('.') {
                    float_text.insert(0, '0');
                }
                let value: f64 = float_text
                    .parse()
                    .map_err(|_| self.error("invalid float literal", start, self.pos))?;
                TokenKind::Float(value)
            } else {
                if integer_digits.len() > 1
                    && integer_digits.bytes().any(|byte| byte != b'0')
                    && integer_digits.starts_with('0')
                {
                    return Err(self.error(
                        "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers",
                        start,
                        self.pos,
                    ));
                }
                let value: u64 = integer_digits
                    .parse()
                    .map_err(|_| self.error("integer literal is too large", start, self.pos))?;
                TokenKind::Int(value)
            }
        };
        if let Some(next) = self.peek_char() {
            if next == 'j' || next == 'J' {
                // Python's imaginary literal: a decimal integer or float followed by `j`.
                let magnitude = match kind {
                    TokenKind::Int(value) if radix_prefix.is_none() => value as f64,
                    TokenKind::Float(value) => value,
                    _ => {
                        let end = self.word_end(start);
                        return Err(self.error("invalid number literal", start, end));
                    }
                };
                self.pos += 1;
                if self.peek_char().is_some_and(is_identifier_continue) {
                    let end = self.word_end(start);
                    return Err(self.error("invalid number literal", start, end));
                }
                self.push(TokenKind::Imaginary(magnitude), start, self.pos);
                return Ok(());
            }
            if is_identifier_continue(next) {
                let end = self.word_end(start);
                return Err(self.error("invalid number literal", start, end));
            }
        }
        self.push(kind, start, self.pos);
        Ok(())
    }

    /// The common case of a number literal, without building its text: decimal digits (no
    /// leading zero unless alone, no underscore) followed by something that ends a number.
    /// Returns false, having consumed nothing, for every other literal.
    fn lex_plain_decimal(&mut self, start: usize) -> bool {
        let bytes = self.text.as_bytes().get(start..).unwrap_or(&[]);
        let length = bytes
            .iter()
            .position(|byte| !byte.is_ascii_digit())
            .unwrap_or(bytes.len());
        if length == 0 || length > 19 || (length > 1 && bytes[0] == b'0') {
            return false;
        }
        if let Some(&next) = bytes.get(length) {
            if next == b'.' || next == b'_' || next >= 0x80 || next.is_ascii_alphanumeric() {
                return false;
            }
        }
        let value = bytes[..length]
            .iter()
            .fold(0u64, |value, &digit| value * 10 + u64::from(digit - b'0'));
        self.pos = start + length;
        self.push(TokenKind::Int(value), start, self.pos);
        true
    }

    /// Lexes a string literal whose prefix (lowercased, may be empty) spans `start..quote_pos`.
    fn lex_string(
        &mut self,
        start: usize,
        quote_pos: usize,
        prefix: &str,
    ) -> Result<(), FrontendError> {
        let is_raw = prefix.contains('r');
        let is_fstring = prefix.contains('f');
        let is_bytes = prefix.contains('b');
        let Some(quote) = self.byte_at(quote_pos) else {
            return Err(self.error("unterminated string literal", start, quote_pos));
        };
        let triple = self.byte_at(quote_pos + 1) == Some(quote)
            && self.byte_at(quote_pos + 2) == Some(quote);
        let mut offset = quote_pos + if triple { 3 } else { 1 };
        let mut value = String::new();
        let unterminated = |lexer: &Self, end: usize| {
            let message = if triple {
                "unterminated triple-quoted string literal"
            } else {
                "unterminated string literal"
            };
            lexer.error(message, start, end)
        };
        loop {
            let Some(ch) = self.char_at(offset) else {
                return Err(unterminated(self, offset));
            };
            if ch as u32 == u32::from(quote) {
                if !triple {
                    offset += 1;
                    break;
                }
                if self.byte_at(offset + 1) == Some(quote)
                    && self.byte_at(offset + 2) == Some(quote)
                {
                    offset += 3;
                    break;
                }
                value.push(ch);
                offset += 1;
                continue;
            }
            if (ch == '\n' || ch == '\r') && !triple {
                return Err(unterminated(self, offset));
            }
            if ch != '\\' {
                value.push(ch);
                offset += ch.len_utf8();
                continue;
            }
            // Backslash.
            let escape_start = offset;
            offset += 1;
            let Some(escaped) = self.char_at(offset) else {
                return Err(unterminated(self, offset));
            };
            let newline = self.newline_len(offset);
            if is_raw {
                // Raw strings keep the backslash; it still prevents the next quote from ending
                // the literal.
                value.push('\\');
                if newline > 0 {
                    value.push_str(self.text.get(offset..offset + newline).unwrap_or(""));
                    offset += newline;
                } else {
                    value.push(escaped);
                    offset += escaped.len_utf8();
                }
                continue;
            }
            if newline > 0 {
                offset += newline;
                continue;
            }
            offset += escaped.len_utf8();
            match escaped {
                '\\' => value.push('\\'),
                '\'' => value.push('\''),
                '"' => value.push('"'),
                'n' => value.push('\n'),
                't' => value.push('\t'),
                'r' => value.push('\r'),
                'a' => value.push('\u{7}'),
                'b' => value.push('\u{8}'),
                'f' => value.push('\u{c}'),
                'v' => value.push('\u{b}'),
                '0'..='7' => {
                    let mut code = escaped.to_digit(8).unwrap_or(0);
                    for _ in 0..2 {
                        match self.byte_at(offset) {
                            Some(byte @ b'0'..=b'7') => {
                                code = code * 8 + u32::from(byte - b'0');
                                offset += 1;
                            }
                            _ => break,
                        }
                    }
                    value.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                }
                'x' | 'u' | 'U' if !(is_bytes && escaped != 'x') => {
                    let width = match escaped {
                        'x' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    let hex = self.text.get(offset..offset + width).unwrap_or("");
                    let code = if hex.len() == width && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                        u32::from_str_radix(hex, 16).ok().and_then(char::from_u32)
                    } else {
                        None
                    };
                    let Some(decoded) = code else {
                        return Err(self.error(
                            format!("invalid \\{escaped} escape in string literal"),
                            escape_start,
                            (offset + width).min(self.text.len()),
                        ));
                    };
                    value.push(decoded);
                    offset += width;
                }
                'N' if !is_bytes => {
                    return Err(self.error(
                        "\\N{...} escapes are not supported",
                        escape_start,
                        offset,
                    ));
                }
                other => {
                    // Unknown escapes keep the backslash, as in Python.
                    value.push('\\');
                    value.push(other);
                }
            }
        }
        self.pos = offset;
        self.push(
            TokenKind::Str(StringToken {
                value,
                is_raw,
                is_fstring,
                is_bytes,
            }),
            start,
            offset,
        );
        Ok(())
    }
}
