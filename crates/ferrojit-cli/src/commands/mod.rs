//! One module per `ferrojit` subcommand; each exposes a function returning `Result<(), String>`
//! whose error is printed as the single `error:` line.

pub mod run;
