//! The park/unpark protocol between one worker thread and the threads that give it work.
//!
//! A worker with nothing to do spins for a while (the caller's business), then calls
//! [`Wakeup::sleep`]; a producer that has just published work calls [`Wakeup::notify`].
//! The protocol is Dekker's: the worker announces `sleeping` then re-checks for work, the
//! producer publishes work then checks `sleeping`, each with a `SeqCst` fence in between, so
//! at least one of them sees the other and no wake-up is lost. `std::thread::park` keeps an
//! unpark token, so an unpark that lands before the park is not lost either.
//! The loom model at the end of this file checks exactly this (`RUSTFLAGS="--cfg cohort_loom"`).

use crate::sync::{AtomicBool, AtomicU8, Mutex, Thread, current_thread, fence, park};
use std::sync::Arc;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, SeqCst};

/// Wakes one parked worker thread.
#[derive(Debug)]
pub(crate) struct Wakeup {
    sleeping: AtomicBool,
    thread: Mutex<Option<Thread>>,
}

impl Default for Wakeup {
    fn default() -> Self {
        Self::new()
    }
}

impl Wakeup {
    /// A wake-up with no worker registered yet.
    pub(crate) fn new() -> Self {
        Self {
            sleeping: AtomicBool::new(false),
            thread: Mutex::new(None),
        }
    }

    /// Registers the calling thread as the worker that [`Wakeup::notify`] unparks.
    pub(crate) fn register_current(&self) {
        *self.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(current_thread());
    }

    /// Called by a producer after it has published work: wakes the worker if it sleeps.
    /// Costs a fence and a load when the worker is awake.
    #[inline]
    pub(crate) fn notify(&self) {
        fence(SeqCst);
        if self.sleeping_after_fence() && self.sleeping.swap(false, SeqCst) {
            self.unpark();
        }
    }

    /// The producer's look at `sleeping` after its `SeqCst` fence.
    #[cfg(not(cohort_loom))]
    #[inline]
    fn sleeping_after_fence(&self) -> bool {
        self.sleeping.load(Relaxed)
    }

    /// Under loom: a read-modify-write, which reads the latest value. The two fences already
    /// guarantee that one side sees the other; loom 0.7 does not model that guarantee, and
    /// orders a plain store only by happens-before, so this load could return the producer's
    /// own earlier `swap` over the worker's later announcement.
    #[cfg(cohort_loom)]
    fn sleeping_after_fence(&self) -> bool {
        self.sleeping.fetch_or(false, Relaxed)
    }

    /// As [`Wakeup::notify`] without its fence, for a caller that fenced already (a pool
    /// checking several workers after one fence). Returns true if the worker was asleep.
    #[inline]
    pub(crate) fn notify_fenced(&self) -> bool {
        if self.sleeping.load(Relaxed) && self.sleeping.swap(false, SeqCst) {
            self.unpark();
            return true;
        }
        false
    }

    /// Wakes the worker unconditionally (shutdown, close).
    pub(crate) fn force(&self) {
        self.sleeping.store(false, SeqCst);
        self.unpark();
    }

    /// Unparks the registered worker (its park keeps the token if it is not parked yet).
    #[cold]
    pub(crate) fn unpark(&self) {
        if let Some(t) = self
            .thread
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            t.unpark();
        }
    }

    /// As [`Wakeup::sleep`], but parks for at most `timeout`.
    #[cfg(not(cohort_loom))]
    pub(crate) fn sleep_timeout(&self, timeout: std::time::Duration, has_work: impl Fn() -> bool) {
        self.sleeping.store(true, Relaxed);
        fence(SeqCst);
        if !has_work() {
            std::thread::park_timeout(timeout);
        }
        self.sleeping.store(false, Relaxed);
    }

    /// Under loom (no timed park): as [`Wakeup::sleep`].
    #[cfg(cohort_loom)]
    pub(crate) fn sleep_timeout(&self, _timeout: std::time::Duration, has_work: impl Fn() -> bool) {
        self.sleep(has_work)
    }

    /// Called by the worker when it found no work: parks unless `has_work` turns true after
    /// the worker announced that it sleeps. Returns on a notify (or spuriously); the caller
    /// re-checks for work.
    pub(crate) fn sleep(&self, has_work: impl Fn() -> bool) {
        self.set_sleeping(true);
        fence(SeqCst);
        if !has_work() {
            park();
        }
        self.set_sleeping(false);
    }

    /// The worker's announcement.
    #[cfg(not(cohort_loom))]
    #[inline]
    fn set_sleeping(&self, v: bool) {
        self.sleeping.store(v, Relaxed);
    }

    /// Under loom: a read-modify-write, so that every write of `sleeping` is one and loom
    /// orders them all (see `sleeping_after_fence`).
    #[cfg(cohort_loom)]
    fn set_sleeping(&self, v: bool) {
        self.sleeping.swap(v, Relaxed);
    }
}

/// How a queue run by a dedicated thread wakes it: a [`Wakeup`] of its own (`one_thread`,
/// `active_obj`, `active_group`), or one shared by the several queues that one thread runs
/// (`prio_one_thread`: a queue per priority), each flagging itself on a push.
#[derive(Debug)]
pub(crate) enum QueueWakeup {
    /// The queue's worker runs this queue only.
    Own(Wakeup),
    /// The queue's worker runs every queue of `group`; this one is flagged by `bit`.
    Shared {
        /// The worker's wake-up and the flags of its queues.
        group: Arc<SharedWakeup>,
        /// This queue's flag in [`SharedWakeup::flagged`].
        bit: u8,
    },
}

impl QueueWakeup {
    /// After a push from another thread: flags the queue (shared) and wakes the worker.
    #[inline]
    pub(crate) fn notify(&self) {
        match self {
            QueueWakeup::Own(w) => w.notify(),
            QueueWakeup::Shared { group, bit } => group.notify(*bit),
        }
    }

    /// The thread that runs the queue (and, shared, the group's other queues).
    pub(crate) fn register_current(&self) {
        match self {
            QueueWakeup::Own(w) => w.register_current(),
            QueueWakeup::Shared { group, .. } => group.register_current(),
        }
    }

    /// Wakes the worker unconditionally (close).
    pub(crate) fn force(&self) {
        match self {
            QueueWakeup::Own(w) => w.force(),
            QueueWakeup::Shared { group, .. } => group.wakeup.force(),
        }
    }

    /// Sleeps until a notify, unless `has_work` turns true after the worker announced that
    /// it sleeps.
    pub(crate) fn sleep(&self, has_work: impl Fn() -> bool) {
        match self {
            QueueWakeup::Own(w) => w.sleep(has_work),
            QueueWakeup::Shared { group, .. } => group.sleep(has_work),
        }
    }
}

/// One worker thread's wake-up shared by up to eight queues, with a flag per queue: a push
/// from another thread raises its queue's flag unless it is up already (and then wakes the
/// worker if it sleeps), and the worker lowers it when it has no use for it (whenever
/// another priority is about to run, the queue read to its end, and before it sleeps). The
/// worker reads the word at every demand to learn which queues received work from outside;
/// while it runs a queue's flow, each push to that queue finds the flag up and neither
/// writes the word nor fences, so the word's line stays shared between the senders' cores
/// and the worker's instead of moving at every push.
///
/// A push that finds its flag up needs nothing more, because the worker lowers a flag with a
/// read-modify-write of the word and then reads its queue's index with a read-modify-write of
/// the queue's state ([`lower`](Self::lower), then `has_remote_after_lower`), the word in
/// which every push reserves its slot: a reservation before that read is found by it; one
/// after it acquires the lowering, so its push then finds the flag down (or raised again by a
/// later push, whose lowering comes later still) and raises it. The flags are a hint on top
/// of the queues: a push is in its queue before its flag is raised (release, then the
/// worker's acquire load), so a flag always leads to its push; a push whose flag is not up
/// yet is found by the worker's look at the queues before it sleeps ([`Wakeup::sleep`]'s
/// check), which keeps wake-ups from being lost.
#[derive(Debug)]
pub(crate) struct SharedWakeup {
    wakeup: Wakeup,
    flags: AtomicU8,
}

impl Default for SharedWakeup {
    fn default() -> Self {
        Self::new()
    }
}

impl SharedWakeup {
    /// No worker registered, no queue flagged.
    pub(crate) fn new() -> Self {
        Self {
            wakeup: Wakeup::new(),
            flags: AtomicU8::new(0),
        }
    }

    /// A producer pushed to the queue flagged by `bit`: raises the flag and wakes the worker
    /// if it sleeps, unless the flag is up already (the worker has yet to read that queue to
    /// its end, and finds this push when it does).
    #[inline]
    pub(crate) fn notify(&self, bit: u8) {
        if self.flags.load(Acquire) & bit != 0 {
            return;
        }
        // Release: the push before the flag (see `flagged`).
        self.flags.fetch_or(bit, AcqRel);
        self.wakeup.notify();
    }

    /// The worker: the flags up now (queues whose remote halves may hold demands it has not
    /// read). A load, which leaves the word's line shared with the senders.
    #[inline]
    pub(crate) fn flagged(&self) -> u8 {
        // Acquire: with the pushes made before the flags were raised.
        self.flags.load(Acquire)
    }

    /// The worker has read the remote halves of the queues flagged by `which` to their ends:
    /// lowers their flags. The worker then reads each such queue's index with a
    /// read-modify-write (`has_remote_after_lower`), which finds any push that saw its flag
    /// still up.
    #[inline]
    pub(crate) fn lower(&self, which: u8) {
        self.flags.fetch_and(!which, AcqRel);
    }

    /// Whether some queue is flagged, for the worker's look after it announced that it
    /// sleeps: paired with a raiser's look at the announcement, as [`Wakeup::sleep`]'s check
    /// is (under loom a read-modify-write, for the reason given at [`Wakeup::notify`]).
    #[inline]
    pub(crate) fn any_flagged_latest(&self) -> bool {
        #[cfg(not(cohort_loom))]
        return self.flags.load(Relaxed) != 0;
        #[cfg(cohort_loom)]
        return self.flags.fetch_or(0, Relaxed) != 0;
    }

    /// The worker's thread, for [`notify`](Self::notify).
    pub(crate) fn register_current(&self) {
        self.wakeup.register_current();
    }

    /// The worker: parks unless `has_work` (which must look at the queues themselves, not
    /// at the flags) turns true after it announced that it sleeps.
    pub(crate) fn sleep(&self, has_work: impl Fn() -> bool) {
        self.wakeup.sleep(has_work);
    }
}
