//! The library example of README.md ("Use it as a library"), as a program:
//! `cargo run -p ferrojit --example readme` from the repository root.
//!
//! `snippet.rs` is byte for byte the README's ```rust block; `tests/readme_example.rs`
//! checks that and runs it, so a README edit that breaks the example fails a test.

include!("snippet.rs");
