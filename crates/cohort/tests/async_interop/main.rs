//! Agents and async code: futures owned by an agent (`Context::spawn`), asks that do not
//! block (`Context::request`), the tokio runtime an environment starts on first use, and
//! message chains awaited from async code.

#[path = "../common/mod.rs"]
mod common;

mod ask;
mod chains;
mod runtime;
mod spawn;

use std::sync::{Mutex, MutexGuard};

/// Tests that start an environment's embedded runtime count its threads by name: they run
/// one at a time so that another test's runtime is not counted.
static RUNTIME_TESTS: Mutex<()> = Mutex::new(());

fn one_runtime_at_a_time() -> MutexGuard<'static, ()> {
    RUNTIME_TESTS.lock().unwrap_or_else(|e| e.into_inner())
}
