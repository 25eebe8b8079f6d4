//! cargo-fuzz target `pt2_archive`: see `fuzz/harness.rs` for what it checks.
#![no_main]

#[allow(dead_code)]
#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::fuzz_pt2_archive(data));
