//! The subscriber tables a worker thread used last, kept so that its next send to the same
//! multi-consumer mailbox reads no lock.
//!
//! A mailbox's table is an immutable snapshot (`Arc`) stamped with a number no other table
//! of any mailbox ever gets. A send loads the mailbox's current stamp (a plain load): if this
//! thread's slot for the mailbox holds a table with that stamp, that table is the current
//! one and the send uses it, with no read-modify-write at all. Otherwise it takes the
//! mailbox's read lock once, clones the current table into the slot, and goes on.
//!
//! Only threads that run agents' queues keep tables (sends from plain threads take the read
//! lock), and they drop them before they park: a table kept here holds its subscribers'
//! cells, so it must not outlive the worker's busy period. A subscription change while a
//! worker holds the old table copies the table once (copy on write), and the worker's next
//! send sees the new stamp and replaces its copy.

use super::ByType;
use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Slots per thread. A mailbox always uses the same slot (assigned round-robin when it is
/// created), so a thread that alternates between more mailboxes than this on one slot
/// falls back to the read lock for them.
const SLOTS: usize = 8;

/// A table's stamp: unique among every table of every mailbox (0 is never used).
pub(super) fn next_stamp() -> u64 {
    static STAMPS: AtomicU64 = AtomicU64::new(1);
    STAMPS.fetch_add(1, Relaxed)
}

/// The slot of a new mailbox.
pub(super) fn next_slot() -> u8 {
    static SLOT: AtomicUsize = AtomicUsize::new(0);
    (SLOT.fetch_add(1, Relaxed) % SLOTS) as u8
}

struct Slots {
    stamps: [Cell<u64>; SLOTS],
    /// Borrowed while a send uses the table; a send that reaches the same slot meanwhile (a
    /// message limit's redirect) finds it borrowed and neither uses nor replaces it.
    tables: [RefCell<Option<Arc<ByType>>>; SLOTS],
}

thread_local! {
    static SLOTS_OF_THIS_THREAD: Slots = const {
        Slots {
            stamps: [const { Cell::new(0) }; SLOTS],
            tables: [const { RefCell::new(None) }; SLOTS],
        }
    };
}

/// Calls `f` with the table stamped `stamp` and `arg` if this thread keeps that table in
/// `slot`; otherwise gives `arg` back.
#[inline]
pub(super) fn with_table<T, R>(
    slot: u8,
    stamp: u64,
    arg: T,
    f: impl FnOnce(&ByType, T) -> R,
) -> Result<R, T> {
    // Only a thread tearing its locals down has no slots; once they are there, `with`
    // cannot fail, and its closure owns `arg` (no `Option` to take it from and match on).
    if SLOTS_OF_THIS_THREAD.try_with(|_| ()).is_err() {
        return Err(arg);
    }
    SLOTS_OF_THIS_THREAD.with(move |s| {
        let i = slot as usize % SLOTS;
        if s.stamps[i].get() != stamp {
            return Err(arg);
        }
        let Ok(table) = s.tables[i].try_borrow() else {
            return Err(arg);
        };
        match table.as_deref() {
            Some(t) => Ok(f(t, arg)),
            None => Err(arg),
        }
    })
}

/// Keeps `table`, stamped `stamp`, in `slot` (dropping what the slot held), unless a send
/// in progress on this thread uses the slot.
#[inline]
pub(super) fn put(slot: u8, stamp: u64, table: Arc<ByType>) {
    let old = SLOTS_OF_THIS_THREAD
        .try_with(|s| {
            let i = slot as usize % SLOTS;
            let mut t = s.tables[i].try_borrow_mut().ok()?;
            s.stamps[i].set(stamp);
            t.replace(table)
        })
        .ok()
        .flatten();
    // Dropped here, outside the slot: it may hold the last reference to cells.
    drop(old);
}

/// Drops every table this thread keeps (a worker about to park or exit).
#[cfg(not(cohort_loom))]
pub(crate) fn release() {
    let kept = SLOTS_OF_THIS_THREAD
        .try_with(|s| {
            std::array::from_fn::<_, SLOTS, _>(|i| {
                let mut t = s.tables[i].try_borrow_mut().ok()?;
                s.stamps[i].set(0);
                t.take()
            })
        })
        .ok();
    // Dropped here, outside the slots.
    drop(kept);
}
