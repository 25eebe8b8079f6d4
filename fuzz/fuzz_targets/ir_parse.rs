//! cargo-fuzz target `ir_parse`: see `fuzz/harness.rs` for what it checks.
#![no_main]

#[allow(dead_code)]
mod harness {
    include!("../harness.rs");
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::fuzz_ir_parse(data));
