//! The fenced code blocks of a Markdown text, for the tests that check README.md's snippets
//! (crates/ferrojit/tests/readme_example.rs and crates/ferrojit-cli/tests/readme_snippets.rs
//! include this file with `#[path]`, so both read the README the same way).

/// The fenced blocks of `markdown`: (info string, body), in order. Panics on an unclosed
/// fence, which only a broken README has.
pub fn fenced_blocks(markdown: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in markdown.lines() {
        match open.take() {
            None => {
                if let Some(info) = line.strip_prefix("```") {
                    open = Some((info.trim().to_string(), String::new()));
                }
            }
            Some((info, mut body)) => {
                if line.trim_end() == "```" {
                    blocks.push((info, body));
                } else {
                    body.push_str(line);
                    body.push('\n');
                    open = Some((info, body));
                }
            }
        }
    }
    assert!(open.is_none(), "README.md has an unclosed code fence");
    blocks
}
