//! The end of a worker's turn: work that a handler's sends start, deferred until the worker
//! has run the demands it had at hand, so that it is done once for all of them.
//!
//! A [`CustomMbox`](crate::CustomMbox) whose delivery hands messages to another thread (a
//! network writer) would wake that thread at every send; the first wake-up then takes one
//! message and the next ones follow in small pieces. [`defer`] lets it wake that thread
//! once, when the worker that runs the sending handlers ends its turn (it ran its local
//! batch, [`LOCAL_BATCH`](crate::defaults::LOCAL_BATCH) demands at most, or found nothing
//! more to run): the batch follows what the worker had queued. On a thread that does not end
//! turns (a plain thread, a tokio task, `test_thread`) [`defer`] returns `false` and the
//! caller does the work at once. A handler that blocks in one of cohort's waits ends the
//! turn's deferred work first; one that blocks otherwise (a lock, a socket, a `std`
//! channel) holds it until it returns.
//!
//! ```
//! use cohort::dispatcher::turn_end::{TurnEnd, defer};
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//!
//! struct Flush(AtomicUsize);
//! impl TurnEnd for Flush {
//!     fn turn_ended(&self) {
//!         self.0.fetch_add(1, Ordering::Relaxed);
//!     }
//! }
//!
//! let flush = Arc::new(Flush(AtomicUsize::new(0)));
//! // Not on a worker: nothing is deferred, the caller flushes itself.
//! if !defer(&flush) {
//!     flush.turn_ended();
//! }
//! assert_eq!(flush.0.load(Ordering::Relaxed), 1);
//! ```

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

/// Work to run once at the end of the current worker's turn ([`defer`]).
pub trait TurnEnd: Send + Sync + 'static {
    /// The turn in which [`defer`] was called has ended (called on the worker's thread,
    /// once per turn however many times it was deferred): between two turns, or earlier,
    /// inside the handler, when a handler of the turn blocks in one of cohort's waits
    /// ([`PendingReply::wait`](crate::PendingReply::wait), a message chain's blocking
    /// receive or send), whose outcome may depend on it.
    fn turn_ended(&self);
}

thread_local! {
    /// `Some` while this thread is a worker that ends turns: what waits for the end of the
    /// current one.
    static PENDING: RefCell<Option<Vec<Arc<dyn TurnEnd>>>> = const { RefCell::new(None) };
}

/// Runs `hook` at the end of the current worker's turn, once however many times it is
/// deferred in that turn; `false` (nothing deferred) when this thread does not end turns,
/// and then the caller does the work itself. A hook deferred by another hook runs at the
/// next turn end (or at once when the worker is stopping).
pub fn defer<T: TurnEnd>(hook: &Arc<T>) -> bool {
    if cfg!(cohort_loom) {
        return false;
    }
    PENDING
        .try_with(|p| {
            let mut p = p.borrow_mut();
            let Some(list) = p.as_mut() else {
                return false;
            };
            let ptr = Arc::as_ptr(hook).cast::<()>();
            if !list.iter().any(|h| Arc::as_ptr(h).cast::<()>() == ptr) {
                list.push(hook.clone());
            }
            true
        })
        .unwrap_or(false)
}

/// Runs what waits for the end of this thread's turn (a worker loop, after each turn).
#[inline]
pub(crate) fn end_turn() {
    let pending = PENDING.with(|p| match p.borrow_mut().as_mut() {
        Some(list) if !list.is_empty() => Some(std::mem::take(list)),
        _ => None,
    });
    if let Some(mut hooks) = pending {
        run(&mut hooks);
        // The list's room is kept for the next turn (unless a hook deferred another).
        PENDING.with(|p| {
            if let Some(list) = p.borrow_mut().as_mut()
                && list.is_empty()
            {
                *list = hooks;
            }
        });
    }
}

/// Runs and drops `hooks`; a hook that panics is logged and the others still run (the
/// worker goes on).
#[cold]
fn run(hooks: &mut Vec<Arc<dyn TurnEnd>>) {
    for h in hooks.drain(..) {
        if catch_unwind(AssertUnwindSafe(|| h.turn_ended())).is_err() {
            tracing::error!("a turn-end hook panicked");
        }
    }
}

/// This thread ends turns while the scope lives; what is pending when it ends runs then.
pub(crate) struct TurnScope(());

impl TurnScope {
    /// Makes this thread one that ends turns ([`end_turn`] after each).
    pub(crate) fn enter() -> Self {
        // Loom runs its threads on one OS thread: no turn ends there (`defer` says false).
        if !cfg!(cohort_loom) {
            PENDING.with(|p| *p.borrow_mut() = Some(Vec::new()));
        }
        TurnScope(())
    }
}

impl Drop for TurnScope {
    fn drop(&mut self) {
        // No turn end follows: the thread stops ending turns first, so that a hook deferred
        // by the last ones is done at once by its caller.
        let pending = PENDING.try_with(|p| p.borrow_mut().take()).ok().flatten();
        if let Some(mut hooks) = pending {
            run(&mut hooks);
        }
    }
}
