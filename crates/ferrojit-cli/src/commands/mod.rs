//! One module per `ferrojit` subcommand; each exposes a function returning `Result<(), String>`
//! whose error is printed as the single `error:` line.

pub mod bench;
pub mod check;
pub mod compile;
pub mod convert;
pub mod export;
pub mod freeze;
pub mod inspect;
pub mod ir;
pub mod not_a_model;
pub mod ops;
pub mod progress;
pub mod pt2;
pub mod result_summary;
pub mod run;
pub mod serve;
pub mod trace;
pub mod values_io;
