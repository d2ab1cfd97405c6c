//! velaris: the CI side of the Velaris sandbox.
//!
//! The library owns every piece of behaviour; `main.rs` only parses arguments, calls
//! the binary's `cli` module (the library never sees clap) and maps the outcome to an exit code (see [`exit_codes`]).

pub mod baseline;
pub mod depsdiff;
pub mod diff;
pub mod exit_codes;
pub mod fsio;
pub mod gate;
pub mod git;
pub mod gitdeps;
pub mod github;
pub mod lockfile;
pub mod message;
pub mod package;
pub mod progress;
pub mod registry;
pub mod report;
pub mod resources;
pub mod surface;
pub mod text;
pub mod trust;
pub mod uses;
pub mod workspace;
