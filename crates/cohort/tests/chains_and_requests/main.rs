//! Message chains, request/reply, timers.

#[path = "../common/mod.rs"]
mod common;

mod mchain;
mod request_reply;
mod timers;
