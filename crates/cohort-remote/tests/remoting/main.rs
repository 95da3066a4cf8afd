//! Two nodes and what happens between them: messages, asks and replies, mailbox references,
//! TLS, faults on the connection, and a peer in another process or network namespace.

#[path = "../common/mod.rs"]
mod common;

mod faults;
mod mbox_ref;
mod process;
mod remote;
mod remote_ask;
mod tls;
