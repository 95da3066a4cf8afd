//! Misuse and undeliverable messages: each gets a typed error or a counted dead letter, and
//! leaves the environment working.

#[path = "../common/mod.rs"]
mod common;

mod environment;
mod pools;
