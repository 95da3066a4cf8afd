//! [`EventQueue`]: the demand queue of one or more agents, run by one worker at a time.
//!
//! A queue has two halves:
//! - **local**: a plain ring buffer ([`LocalRing`]), touched only by the thread that
//!   currently runs the queue. A send from a handler running on this queue to an agent bound
//!   to this queue (the whole single-thread path) pushes here: no lock, no atomic
//!   read-modify-write, no refcount.
//! - **remote**: for every other sender, a list of blocks whose write index lives in the
//!   queue's state word ([`remote_blocks`]): a send is one compare-and-swap on the state
//!   (reserving an index; on a pool queue, keeping [`SCHEDULED`]) and one slot written; the
//!   runner pops exactly the indices the state shows, without a fence or a look at the
//!   senders' lines. On a queue run by a dedicated thread the same compare-and-swap reads
//!   and clears the worker's [`SLEEPING`] flag (the sender then unparks it); its worker
//!   sleeps only when the state's index is the one it has read up to, and as it exits
//!   it flags the state [`RETIRED`] and rejects what was reserved before, so a later push
//!   finds the flag and rejects its own demand (one party sweeps, one reader pops).
//!   A sender that finds an idle pool queue claims it (sets [`SCHEDULED`]) and owns it until
//!   it hands it to a run queue: it leaves its demand in the queue's one-demand `first` slot,
//!   next to the state it has just written, and the next turn runs it before anything else
//!   (see [`EventQueue::push_remote`]). A turn ends in idle only when it has read the remote
//!   half up to the state's index and its local half is empty, so a push is never left
//!   behind, and no turn needs a fence to know.
//!
//! The worker executes from the local half, moving the remote half to the local tail in
//! batches ([`Local::drain_remote`]); a dedicated worker whose local half is empty runs the
//! next remote demand straight from its slot first ([`DedicatedReader::pop_written`]). Each
//! half keeps its order, and FIFO holds per sender: a given sender thread always uses the
//! same half.
//!
//! [`DedicatedReader::pop_written`]: super::DedicatedReader::pop_written
//!
//! [`remote_blocks`]: super::remote_blocks
//! [`RETIRED`]: super::pool_state::RETIRED
//! [`SCHEDULED`]: super::pool_state::SCHEDULED
//! [`SLEEPING`]: super::pool_state::SLEEPING

use super::block_pool::BlockPool;
use super::local::Local;
use super::local_ring::LocalRing;
use super::pool_state::UNBOUND;
use super::queue_arc::{QueueArc, RefCount};
use super::remote_blocks::{Head, Tail};
use super::scheduled::Scheduled;
use super::sender_epoch;
use super::wakeup::{QueueWakeup, SharedWakeup, Wakeup};
use crate::agent::demand::Demand;
use crate::sync::{AtomicBool, AtomicU64, HandOffCell};
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// What a pool queue does with the memory it took for its demands when a turn leaves it idle
/// (see [`QueueItem::idle_memory`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdleMemory {
    /// Gives it back as the turn ends (a queue no worker sweeps: the unit tests').
    GiveBack,
    /// Keeps it until a sweep gives it back (the loom models, which sweep by hand).
    #[cfg(all(test, cohort_loom))]
    Keep,
    /// Keeps it, and the turn lists a queue that keeps a remote block for its worker's sweep
    /// (demands).
    List,
}

/// What a queue holds: demands (the loom model uses plain values).
pub(crate) trait QueueItem: Send + 'static {
    /// What the queue's owner keeps aside for one of its targets until it can take it (an
    /// agent's message that arrived before its `start`).
    type Early: Send;

    /// Accounts for an item that will never run (its queue is dropped).
    fn reject(self);

    /// What a pool queue of this item type does with the memory it took for its demands
    /// (local slots, remote blocks) when a turn leaves it idle.
    fn idle_memory() -> IdleMemory {
        IdleMemory::GiveBack
    }

    /// Lists `q`, which went idle keeping a remote block, for the current worker's sweep
    /// (see [`sweep_list`](super::sweep_list)). Called only for [`IdleMemory::List`].
    fn list_for_sweep(_q: QueueArc<Self>)
    where
        Self: Sized,
    {
    }

    /// Where the remote halves' blocks go when a queue's spare is taken, shared by every
    /// queue of this item type; `None`: to the allocator.
    fn block_pool() -> Option<&'static BlockPool<Self>>
    where
        Self: Sized,
    {
        None
    }
}

/// What a pool does with a queue that got work while idle: puts it on a run queue.
pub(crate) trait Schedule<T: QueueItem>: Send + Sync {
    /// Makes `queue` run soon, on some worker of the pool.
    fn schedule(&self, queue: Scheduled<T>);
}

/// Who runs the queue, and so how a sender makes it run.
pub(super) enum Notifier<T: QueueItem> {
    /// A dedicated worker thread, woken from its park after a remote push.
    Thread(Box<ThreadSide>),
    /// A pool's workers: the queue is scheduled when it goes from idle to having work.
    Pool { scheduler: Arc<dyn Schedule<T>> },
}

/// What a queue run by a dedicated thread has that a pool queue has not.
pub(super) struct ThreadSide {
    pub(super) wakeup: QueueWakeup,
}

/// A per-queue word that a pool's policy owns (`work_stealing`: the queue's home worker;
/// `adv_thread_pool`: its thread-safe demands in flight); the queue only stores it.
#[cfg(not(cohort_loom))]
pub(crate) type PolicyWord = std::sync::atomic::AtomicU32;
/// A per-queue word that a pool's policy owns (loom's, so a model checks the protocol on it).
#[cfg(cohort_loom)]
pub(crate) type PolicyWord = loom::sync::atomic::AtomicU32;

/// The demand queue of one or more agents.
///
/// Laid out in three cache lines (`repr(C)`): what never changes after creation (how to make
/// the queue run, its limits) and the strong count, which moves only when the queue is bound,
/// unbound or handed to a new owner; what senders write ([`SendersLine`]: the pool state with the
/// remote half's write index, the claiming sender's demand, the remote half's tail block,
/// the pool policy's word), which the runner reads and writes a few times per turn; and what the
/// runner writes at every demand ([`RunnerLine`]: the local half and the remote half's
/// read end). So a sender that pushes to a busy queue, demand after demand, never takes the
/// runner's busiest line away from the core that runs the queue, and a send that wakes an
/// idle queue moves one line of it between cores. A queue is 192 bytes; the remote half's
/// blocks come with its first remote push.
#[repr(C)]
pub(crate) struct EventQueue<T: QueueItem = Demand> {
    /// The queue's strong count (see [`QueueArc`]).
    pub(super) refs: RefCount,
    pub(super) notifier: Notifier<T>,
    /// Messages that reached an agent before its `start` ran, by cell address, replayed right
    /// after `start` (rare: kept here rather than in every agent).
    pub(super) early: UnsafeCell<Vec<(usize, T::Early)>>,
    /// How many demands a pool worker runs from this queue before it moves on (saturated at
    /// `u32::MAX`); unused by a dedicated worker thread.
    pub(super) max_demands_at_once: u32,
    pub(super) closed: AtomicBool,
    /// Whether a worker's sweep list holds the queue (see [`IdleMemory::List`]): set by the
    /// turn that lists it, cleared by the sweep that gives its memory back; only the
    /// queue's runner reads or writes it, rarely, so it sits in the padding of this line
    /// rather than in the runner's, which it would take past 64 bytes.
    pub(super) listed: std::cell::Cell<bool>,
    pub(super) senders: SendersLine<T>,
    pub(super) run: RunnerLine<T>,
    /// Whether the pool's count of the queue was given back: the loom models check that no
    /// hold borrows it afterwards, and that it goes once.
    #[cfg(cohort_loom)]
    pub(super) pool_count_gone: loom::sync::atomic::AtomicBool,
}

/// The part of an [`EventQueue`] that a sender writes, on a cache line of its own: the pool
/// state, the demand of the sender that claimed the idle queue, and the worker to schedule it
/// on. A send that wakes an idle pool queue touches this one line of the queue, and the
/// worker that runs the turn reads it once.
#[repr(C, align(64))]
pub(super) struct SendersLine<T: QueueItem> {
    /// The demand of the sender that claimed the idle queue (set [`SCHEDULED`]), taken by the
    /// next turn before anything else (it is the oldest: the queue was empty). Written only by
    /// that sender, before it hands the queue to a run queue; read only by the queue's runner.
    /// Initialised when `has_first` says so (an `Option` would take a line and a half).
    ///
    /// [`SCHEDULED`]: super::pool_state::SCHEDULED
    pub(super) first: HandOffCell<MaybeUninit<T>>,
    /// The remote half's write index (times [`ONE_PUSH`]) and flags: [`SCHEDULED`],
    /// [`SENDERS_OWN`], [`UNBOUND`] and [`RELEASE_AT_IDLE`] on a pool queue; [`SLEEPING`] and
    /// [`RETIRED`] on a queue run by a dedicated thread.
    ///
    /// [`ONE_PUSH`]: super::pool_state::ONE_PUSH
    /// [`RELEASE_AT_IDLE`]: super::pool_state::RELEASE_AT_IDLE
    /// [`RETIRED`]: super::pool_state::RETIRED
    /// [`SCHEDULED`]: super::pool_state::SCHEDULED
    /// [`SENDERS_OWN`]: super::pool_state::SENDERS_OWN
    /// [`SLEEPING`]: super::pool_state::SLEEPING
    /// [`UNBOUND`]: super::pool_state::UNBOUND
    pub(super) state: AtomicU64,
    /// The remote half's senders' end (see [`Tail`]).
    pub(super) remote_tail: Tail<T>,
    /// A word the pool's policy owns (see [`PolicyWord`]); on the senders' line because a
    /// sender that schedules the queue may read it.
    pub(super) policy: PolicyWord,
    /// Whether `first` holds a demand; handed over with it.
    pub(super) has_first: HandOffCell<bool>,
}

/// The part of an [`EventQueue`] that its runner writes at every demand, on a cache line of
/// its own.
#[repr(C, align(64))]
pub(super) struct RunnerLine<T: QueueItem> {
    pub(super) local: UnsafeCell<LocalRing<T>>,
    /// The remote half's runner's end (see [`Head`]).
    pub(super) remote_head: Head<T>,
}

// SAFETY: `local` is only accessed by the thread that runs the queue (through its `Local`
// token, see `running.rs`), and only one thread runs a queue at a time (`RunningGuard` is held
// by exactly one worker). Everything else is thread-safe by itself.
unsafe impl<T: QueueItem> Sync for EventQueue<T> {}
// SAFETY: items are `Send`; see above for `local`.
unsafe impl<T: QueueItem> Send for EventQueue<T> {}

impl<T: QueueItem> EventQueue<T> {
    /// A queue run by a dedicated worker thread. (Every constructor returns the queue in its
    /// [`QueueArc`]: a claiming sender hands the queue to a run queue from `&self`.)
    #[expect(
        clippy::new_ret_no_self,
        reason = "a queue is only ever made inside its QueueArc"
    )]
    pub(crate) fn new() -> QueueArc<T> {
        Self::with_notifier(
            Notifier::Thread(Box::new(ThreadSide {
                wakeup: QueueWakeup::Own(Wakeup::new()),
            })),
            usize::MAX,
            0,
        )
    }

    /// A queue run by a dedicated worker thread that runs the other queues of `group` too;
    /// a push from another thread sets `bit` in the group's flags before it wakes the worker.
    pub(crate) fn in_group(group: Arc<SharedWakeup>, bit: u8) -> QueueArc<T> {
        Self::with_notifier(
            Notifier::Thread(Box::new(ThreadSide {
                wakeup: QueueWakeup::Shared { group, bit },
            })),
            usize::MAX,
            0,
        )
    }

    /// A queue run by the workers of a pool, `max_demands_at_once` demands per turn; its
    /// pool holds no count of it until [`hold_for_pool`](QueueArc::hold_for_pool).
    pub(crate) fn pooled(
        scheduler: Arc<dyn Schedule<T>>,
        max_demands_at_once: usize,
    ) -> QueueArc<T> {
        Self::with_notifier(Notifier::Pool { scheduler }, max_demands_at_once, UNBOUND)
    }

    fn with_notifier(notifier: Notifier<T>, max_demands_at_once: usize, state: u64) -> QueueArc<T> {
        // The pool's buffer is allocated with the first queue, before the heap grows: made
        // during a burst it would sit at the heap's top for good, and the allocator can give
        // back no memory below it once the burst is over.
        let _ = T::block_pool();
        QueueArc::new(Self {
            refs: RefCount::one(),
            notifier,
            early: UnsafeCell::new(Vec::new()),
            max_demands_at_once: u32::try_from(max_demands_at_once).unwrap_or(u32::MAX),
            closed: AtomicBool::new(false),
            listed: std::cell::Cell::new(false),
            senders: SendersLine {
                first: HandOffCell::new(MaybeUninit::uninit()),
                state: AtomicU64::new(state),
                remote_tail: Tail::new(),
                policy: PolicyWord::new(0),
                has_first: HandOffCell::new(false),
            },
            run: RunnerLine {
                local: UnsafeCell::new(LocalRing::new()),
                remote_head: Head::new(),
            },
            #[cfg(cohort_loom)]
            pool_count_gone: loom::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Pushes from any thread to the remote half and wakes the worker if it sleeps.
    #[inline]
    pub(crate) fn push_remote(&self, d: T) {
        self.push_remote_with(move |_| d)
    }

    /// Pushes the demand `make` builds to the remote half, from any thread, and wakes the
    /// worker if it sleeps. `make` runs once the demand's place is known (a pool queue's
    /// `first` slot or remote slot, after the compare-and-swap that claims it), so the
    /// demand is written there, not built in the sender's frame and copied: a copy read just
    /// after the sender wrote it, half a line at a time, stalls on store forwarding. Inlined
    /// into the sender for the same reason (a closure passed by reference is copied the same
    /// way).
    ///
    /// `make` is told whether the demand may borrow its agent; when false it must own a
    /// reference. When true it may borrow if its agent has not begun to finish as `make`
    /// reads it: the agent's finish step moves every demand reserved before it ahead of
    /// `finish` (a pool queue closes lending for good, see `SENDERS_OWN`; on a dedicated
    /// queue, which serves agents that finish at different times, the finish step reads the
    /// index with a read-modify-write of the state, ordered against every reservation, so a
    /// sender that still sees its agent active reserved below that index). A borrowing send
    /// leaves the agent's reference count alone, the one line that every remote message
    /// otherwise takes from the runner's core and the runner takes back.
    /// `make` must not panic: a claimed queue or a reserved slot would wait for it forever.
    #[inline(always)]
    pub(crate) fn push_remote_with(&self, make: impl FnOnce(bool) -> T) {
        sender_epoch::advance();
        match &self.notifier {
            // `make` reads the agent's status after the reservation, a read-modify-write of
            // the state, which the finish step also reads with one (`close_lending`): either
            // the finish step's comes first, and `make` sees the agent finishing and owns a
            // reference, or the reservation does, and the finish step moves the demand ahead
            // of `finish`.
            Notifier::Thread(side) => self.push_dedicated(make, &side.wakeup),
            Notifier::Pool { scheduler } => self.push_pooled(make, &**scheduler),
        }
    }

    /// How many demands a pool worker runs per turn.
    pub(crate) fn max_demands_at_once(&self) -> usize {
        self.max_demands_at_once as usize
    }

    /// The word the pool's policy keeps for this queue (opaque to the queue).
    #[inline]
    pub(crate) fn policy_word(&self) -> &PolicyWord {
        &self.senders.policy
    }

    /// Registers the calling thread as this queue's worker for wake-ups.
    pub(crate) fn register_worker(&self) {
        if let Notifier::Thread(side) = &self.notifier {
            side.wakeup.register_current();
        }
    }

    /// Asks the worker to exit once the queue is empty.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        if let Notifier::Thread(side) = &self.notifier {
            side.wakeup.force();
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// The local half's capacity (its runner is gone: the test's worker has returned).
    #[cfg(all(test, not(cohort_loom)))]
    pub(crate) fn local_capacity_for_test(&mut self) -> usize {
        self.run.local.get_mut().capacity()
    }
}

impl<T: QueueItem> Drop for EventQueue<T> {
    fn drop(&mut self) {
        // Whatever is left was never executed: count it, never lose it silently.
        // SAFETY: `&mut self`: nobody else holds the queue.
        let local = unsafe { Local::new(self) };
        if let Some(d) = local.take_first() {
            d.reject();
        }
        while let Some(d) = local.pop() {
            d.reject();
        }
        let tail = self.remote_tail();
        // SAFETY: `&mut self`: no sender is left.
        unsafe { self.run.remote_head.free_all(tail, T::reject) };
    }
}

#[cfg(all(test, not(cohort_loom)))]
mod layout_tests {
    use super::*;

    /// Three lines apart: what never changes, what senders write, what the runner writes. A
    /// queue is 192 bytes (its remote half's blocks come with its first remote push).
    #[test]
    fn senders_and_runner_use_separate_lines() {
        assert_eq!(std::mem::size_of::<EventQueue>(), 192);
        assert_eq!(std::mem::offset_of!(EventQueue, senders), 64);
        assert_eq!(std::mem::offset_of!(EventQueue, run), 128);
        assert_eq!(std::mem::size_of::<SendersLine<Demand>>(), 64);
        assert_eq!(std::mem::size_of::<RunnerLine<Demand>>(), 64);
    }
}
