//! A graph builder: makes an `ExportedProgram` with its state from Rust.
