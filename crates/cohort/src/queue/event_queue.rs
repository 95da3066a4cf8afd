//! [`EventQueue`]: the demand queue of one or more agents, run by one worker at a time.
//!
//! A queue has two halves:
//! - **local**: a plain ring buffer ([`LocalRing`]), touched only by the thread that
//!   currently runs the queue. A send from a handler running on this queue to an agent bound
//!   to this queue (the whole single-thread path) pushes here: no lock, no atomic
//!   read-modify-write, no refcount.
//! - **remote**: for every other sender. A queue run by a dedicated thread has a lock-free
//!   MPMC segment queue (`crossbeam_queue::SegQueue`), followed by a [`Wakeup::notify`]. A
//!   pool queue has a list of blocks whose write index lives in its state word
//!   ([`remote_blocks`]): a send to a busy pool queue is one compare-and-swap on the state
//!   (reserving an index and keeping [`SCHEDULED`]) and one slot written; its runner pops
//!   exactly the indices the state shows, without a fence or a look at the senders' lines.
//!   A sender that finds an idle pool queue claims it (sets [`SCHEDULED`]) and owns it until
//!   it hands it to a run queue: it leaves its demand in the queue's one-demand `first` slot,
//!   next to the state it has just written, and the next turn runs it before anything else
//!   (see [`EventQueue::push_remote`]). A turn ends in idle only when it has read the remote
//!   half up to the state's index and its local half is empty, so a push is never left
//!   behind, and no turn needs a fence to know.
//!
//! The worker only ever executes from the local half; it moves the remote half to the local
//! tail in batches ([`EventQueue::drain_remote`]). So the local half is the queue's one
//! total order, and FIFO holds per sender: a given sender thread always uses the same half.

use super::local_ring::LocalRing;
use super::remote_blocks::{self, Block, Head, Tail};
use super::wakeup::{QueueWakeup, SharedWakeup, Wakeup};
use crate::demand::Demand;
use crate::mbox::MboxId;
use crate::message::Envelope;
use crate::sync::{AtomicBool, AtomicU64, HandOffCell, SegQueue};
use std::cell::{Cell, UnsafeCell};
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

#[cfg(not(loom))]
thread_local! {
    /// The queue the current thread is running, or null.
    static RUNNING: Cell<*const ()> = const { Cell::new(ptr::null()) };
}
#[cfg(loom)]
loom::thread_local! {
    static RUNNING: Cell<*const ()> = Cell::new(ptr::null());
}

#[cfg(not(loom))]
thread_local! {
    /// The broadcast log this thread appended to last, if it pushed nothing since (and
    /// started or ended no turn on a queue since): see [`last_log`].
    static LAST_LOG: Cell<usize> = const { Cell::new(0) };
}
#[cfg(loom)]
loom::thread_local! {
    static LAST_LOG: Cell<usize> = Cell::new(0);
}

/// Whether the current sender's previous push of any kind was an append to a given
/// broadcast log (`named/log.rs`): such an append keeps its order without a marker of its
/// own. Every remote push, and every start and end of a turn (a new sender on this thread),
/// forgets it.
pub(crate) mod last_log {
    use super::LAST_LOG;

    /// True if the last push of this sender was an append to the log at `log`.
    #[inline]
    pub(crate) fn is(log: usize) -> bool {
        LAST_LOG.with(|l| l.get() == log)
    }

    /// Records an append to the log at `log` (after its markers were pushed).
    #[inline]
    pub(crate) fn set(log: usize) {
        LAST_LOG.with(|l| l.set(log))
    }

    /// Forgets the last append.
    #[inline]
    pub(crate) fn forget() {
        LAST_LOG.with(|l| l.set(0))
    }
}

/// The queue the current thread runs (its address), or null.
#[inline]
pub(crate) fn running_queue() -> *const () {
    RUNNING.with(|r| r.get())
}

/// True while the current thread runs some queue (a worker inside a handler or a demand).
#[inline]
pub(crate) fn runs_a_queue() -> bool {
    !running_queue().is_null()
}

/// What a queue holds: demands (the loom model uses plain values).
pub(crate) trait QueueItem: Send {
    /// Accounts for an item that will never run (its queue is dropped).
    fn reject(self);
}

impl QueueItem for Demand {
    fn reject(self) {
        Demand::reject(self)
    }
}

/// What a pool does with a queue that got work while idle: puts it on a run queue.
pub(crate) trait Schedule<T: QueueItem>: Send + Sync {
    /// Makes `queue` run soon, on some worker of the pool.
    fn schedule(&self, queue: Arc<EventQueue<T>>);
}

/// Who runs the queue, and so how a sender makes it run.
enum Notifier<T: QueueItem> {
    /// A dedicated worker thread, woken from its park; the queue's remote half is a
    /// `SegQueue` (which any thread may sweep once the worker has exited).
    Thread(Box<ThreadSide<T>>),
    /// A pool's workers: the queue is scheduled when it goes from idle to having work; its
    /// remote half is the list of blocks of [`remote_blocks`], indexed by the state.
    Pool { scheduler: Arc<dyn Schedule<T>> },
}

/// What a queue run by a dedicated thread has that a pool queue has not.
struct ThreadSide<T> {
    wakeup: QueueWakeup,
    remote: SegQueue<T>,
}

/// A per-queue word that a pool's policy owns (`work_stealing`: the queue's home worker;
/// `adv_thread_pool`: its thread-safe demands in flight); the queue only stores it.
#[cfg(not(loom))]
pub(crate) type PolicyWord = std::sync::atomic::AtomicU32;
/// A per-queue word that a pool's policy owns (loom's, so a model checks the protocol on it).
#[cfg(loom)]
pub(crate) type PolicyWord = loom::sync::atomic::AtomicU32;

/// Pool queue state flag: the queue is in a run queue, a LIFO slot or a worker's turn, and
/// exactly one party holds it. Without it the queue is idle: nobody holds it and its remote
/// half is empty (a turn ends in idle only when it has read up to the state's index).
const SCHEDULED: u64 = 1;
/// Pool queue state flag: remote message demands hold their own reference to their agent.
/// Clear while the queue's agents live: a demand reserved then may borrow the agent, because
/// the queue's finish step moves every such demand ahead of `finish` (see
/// [`EventQueue::close_lending`], and "Agent lifetime" in `docs/runtime-semantics.md`). Set
/// once, by the runner, at that step.
const SENDERS_OWN: u64 = 2;
/// Pool queue state: the remote half's write index sits above the flags; one remote push
/// adds this (see [`remote_blocks`]).
const ONE_PUSH: u64 = 4;

/// The remote half's write index in a state word.
#[inline]
fn tail_index(state: u64) -> u64 {
    state / ONE_PUSH
}

/// The demand queue of one or more agents.
///
/// Laid out in three cache lines (`repr(C)`): what never changes after creation (how to make
/// the queue run, its limits); what senders write ([`SendersLine`]: the pool state with the
/// remote half's write index, the claiming sender's demand, the remote half's tail block,
/// the home worker), which the runner reads and writes a few times per turn; and what the
/// runner writes at every demand ([`RunnerLine`]: the local half and the remote half's
/// read end). So a sender that pushes to a busy queue, demand after demand, never takes the
/// runner's busiest line away from the core that runs the queue, and a send that wakes an
/// idle queue moves one line of it between cores (locality 8,000 agents x 20 accesses x
/// 64 B, work_stealing 6.4-6.6 to 6.9-7.5 M msg/s when that replaced four). A queue is 192
/// bytes; the remote half's blocks come with its first remote push.
#[repr(C)]
pub(crate) struct EventQueue<T: QueueItem = Demand> {
    notifier: Notifier<T>,
    /// Messages that reached an agent before its `start` ran, by cell address, replayed right
    /// after `start` (rare: kept here rather than in every agent).
    early: UnsafeCell<Vec<(usize, MboxId, Envelope)>>,
    /// How many demands a pool worker runs from this queue before it moves on (saturated at
    /// `u32::MAX`); unused by a dedicated worker thread.
    max_demands_at_once: u32,
    closed: AtomicBool,
    /// Set by the worker when it has exited: nothing will run this queue again.
    retired: AtomicBool,
    senders: SendersLine<T>,
    run: RunnerLine<T>,
}

/// The part of an [`EventQueue`] that a sender writes, on a cache line of its own: the pool
/// state, the demand of the sender that claimed the idle queue, and the worker to schedule it
/// on. A send that wakes an idle pool queue touches this one line of the queue, and the
/// worker that runs the turn reads it once.
#[repr(C, align(64))]
struct SendersLine<T: QueueItem> {
    /// The demand of the sender that claimed the idle queue (set [`SCHEDULED`]), taken by the
    /// next turn before anything else (it is the oldest: the queue was empty). Written only by
    /// that sender, before it hands the queue to a run queue; read only by the queue's runner.
    /// Initialised when `has_first` says so (an `Option` would take a line and a half).
    first: HandOffCell<MaybeUninit<T>>,
    /// Pool queues: the remote half's write index (times [`ONE_PUSH`]), [`SENDERS_OWN`] and
    /// [`SCHEDULED`].
    state: AtomicU64,
    /// Pool queues: the remote half's senders' end (see [`remote_blocks`]).
    remote_tail: Tail<T>,
    /// A word the pool's policy owns (see [`PolicyWord`]); on the senders' line because a
    /// sender that schedules the queue may read it.
    policy: PolicyWord,
    /// Whether `first` holds a demand; handed over with it.
    has_first: HandOffCell<bool>,
}

/// The part of an [`EventQueue`] that its runner writes at every demand, on a cache line of
/// its own.
#[repr(C, align(64))]
struct RunnerLine<T: QueueItem> {
    local: UnsafeCell<LocalRing<T>>,
    /// Pool queues: the remote half's runner's end (see [`remote_blocks`]).
    remote_head: Head<T>,
}

// SAFETY: `local` is only accessed by the thread that runs the queue (guarded by `RUNNING`,
// see `is_running_here`), and only one thread runs a queue at a time (`RunningGuard` is held by
// exactly one worker). Everything else is thread-safe by itself.
unsafe impl<T: QueueItem> Sync for EventQueue<T> {}
// SAFETY: items are `Send`; see above for `local`.
unsafe impl<T: QueueItem> Send for EventQueue<T> {}

impl<T: QueueItem> EventQueue<T> {
    /// A queue run by a dedicated worker thread.
    pub(crate) fn new() -> Self {
        Self::with_notifier(
            Notifier::Thread(Box::new(ThreadSide {
                wakeup: QueueWakeup::Own(Wakeup::new()),
                remote: SegQueue::new(),
            })),
            usize::MAX,
        )
    }

    /// A queue run by a dedicated worker thread that runs the other queues of `group` too;
    /// a push from another thread sets `bit` in the group's flags before it wakes the worker.
    pub(crate) fn in_group(group: Arc<SharedWakeup>, bit: u8) -> Self {
        Self::with_notifier(
            Notifier::Thread(Box::new(ThreadSide {
                wakeup: QueueWakeup::Shared { group, bit },
                remote: SegQueue::new(),
            })),
            usize::MAX,
        )
    }

    /// A queue run by the workers of a pool, `max_demands_at_once` demands per turn.
    pub(crate) fn pooled(scheduler: Arc<dyn Schedule<T>>, max_demands_at_once: usize) -> Self {
        Self::with_notifier(Notifier::Pool { scheduler }, max_demands_at_once)
    }

    fn with_notifier(notifier: Notifier<T>, max_demands_at_once: usize) -> Self {
        Self {
            notifier,
            early: UnsafeCell::new(Vec::new()),
            max_demands_at_once: u32::try_from(max_demands_at_once).unwrap_or(u32::MAX),
            closed: AtomicBool::new(false),
            retired: AtomicBool::new(false),
            senders: SendersLine {
                first: HandOffCell::new(MaybeUninit::uninit()),
                state: AtomicU64::new(0),
                remote_tail: Tail::new(),
                policy: PolicyWord::new(0),
                has_first: HandOffCell::new(false),
            },
            run: RunnerLine {
                local: UnsafeCell::new(LocalRing::new()),
                remote_head: Head::new(),
            },
        }
    }

    /// True on the thread that currently runs this queue.
    #[inline]
    pub(crate) fn is_running_here(&self) -> bool {
        RUNNING.with(|r| ptr::eq(r.get(), (self as *const Self).cast::<()>()))
    }

    /// Pushes to the local half.
    ///
    /// # Safety
    /// The caller runs this queue (`is_running_here()` is true).
    #[inline]
    pub(crate) unsafe fn push_local(&self, d: T) {
        debug_assert!(self.is_running_here());
        // SAFETY: only the running thread touches `local` (caller), and no reference to it is
        // held across this call: pushes happen from handlers, never while the worker borrows it.
        unsafe { (*self.run.local.get()).push_back(d) }
    }

    /// Pushes the demand `make` builds to the local half, making room first: the demand is
    /// then written straight into its slot, not built on the stack and copied (a copy that
    /// stalls on store forwarding, see [`LocalRing`]). A demand built before the call, as
    /// `push_local` takes it, lives across the ring's growth check and is copied: ThreadRing
    /// on `one_thread` 36.6-38.5 M hops/s that way, 41-42 M with this one.
    ///
    /// # Safety
    /// As [`push_local`](Self::push_local).
    #[inline(always)]
    pub(crate) unsafe fn push_local_with(&self, make: impl FnOnce() -> T) {
        debug_assert!(self.is_running_here());
        // SAFETY: as in `push_local`.
        unsafe { (*self.run.local.get()).push_back_with(make) }
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
    /// way): ThreadRing thread_pool individual, every hop a claim, 9.8-10.1 to 10.6-10.7 M
    /// hops/s on 2 vCPUs.
    ///
    /// `make` is told whether the demand may borrow its agent (a pool queue whose agents have
    /// not begun to finish: see [`SENDERS_OWN`]); when false it must own a reference. A
    /// borrowing send leaves the agent's reference count alone, the one line that every
    /// remote message otherwise takes from the runner's core and the runner takes back
    /// (ThreadRing thread_pool individual 10.3 to 11.9 M hops/s on 2 vCPUs).
    /// `make` must not panic: a claimed queue or a reserved slot would wait for it forever.
    #[inline(always)]
    pub(crate) fn push_remote_with(&self, make: impl FnOnce(bool) -> T) {
        last_log::forget();
        match &self.notifier {
            Notifier::Thread(side) => {
                side.remote.push(make(false));
                side.wakeup.notify();
                // `notify` ends with a SeqCst fence: either the exiting worker sees this push
                // in its last sweep, or we see `retired` here and sweep ourselves.
                if self.retired.load(Ordering::Relaxed) {
                    self.reject_remote();
                }
            }
            Notifier::Pool { scheduler } => self.push_pooled(make, &**scheduler),
        }
    }

    /// A pool queue's remote push: one compare-and-swap on the state either claims the idle
    /// queue or reserves an index of the remote half (see [`remote_blocks`]).
    #[inline(always)]
    fn push_pooled(&self, make: impl FnOnce(bool) -> T, scheduler: &dyn Schedule<T>) {
        let state = &self.senders.state;
        let (tail, head) = (&self.senders.remote_tail, &self.run.remote_head);
        // A block for the next link, taken before the reservation of a block's last slot (so
        // that the senders waiting on the marker wait for stores, not an allocation).
        let mut next: *mut Block<T> = ptr::null_mut();
        let backoff = crate::sync::Backoff::new();
        // Acquire: a state past a marker comes with the block linked before it.
        let mut s = state.load(Ordering::Acquire);
        loop {
            if s & SCHEDULED == 0 {
                if let Err(now) = state.compare_exchange_weak(
                    s,
                    s | SCHEDULED,
                    // Release too: every write of the state both acquires and releases, so a
                    // sender that reads an index also reads the blocks linked before it,
                    // whoever wrote the state last (not only through release sequences).
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    s = now;
                    continue;
                }
                // An idle pool queue that this sender just claimed: nobody runs it until it
                // is handed to a run queue below, so the sender may leave its demand in the
                // queue's `first` slot, on the line it has just written (acquire above: the
                // last runner's release of the idle state, after it took the slot's previous
                // demand), and save the remote push and pop. Its remote half is empty (a turn
                // ends in idle only when it has read up to the index), so this sender's
                // earlier demands ran before, and FIFO per sender holds. A push racing with
                // this claim reserves an index and runs after this demand.
                // SAFETY: the queue is SCHEDULED and in no run queue: this thread is its only
                // user, and the slot is empty (every turn takes it; nothing else fills it).
                unsafe {
                    self.senders.has_first.with_mut(|has| {
                        debug_assert!(!*has);
                        *has = true;
                    });
                    self.senders
                        .first
                        .with_mut(|first| *first = MaybeUninit::new(make(s & SENDERS_OWN == 0)));
                };
                if !next.is_null() {
                    head.give_back(next);
                }
                scheduler.schedule(self.arc());
                return;
            }
            let index = tail_index(s);
            if remote_blocks::is_marker(index) {
                // Another sender is linking the next block in.
                backoff.snooze();
                s = crate::sync::load_latest(state);
                continue;
            }
            if remote_blocks::is_last_slot(index) && next.is_null() {
                next = head.take_block();
            }
            let block = tail.block(head);
            // Release: the runner that reads this index (acquire) reads the blocks linked
            // before it; the value itself is published by its slot's tag.
            match state.compare_exchange_weak(s, s + ONE_PUSH, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    let borrow = s & SENDERS_OWN == 0;
                    let step = || {
                        state.fetch_add(ONE_PUSH, Ordering::AcqRel);
                    };
                    // SAFETY: this sender reserved `index` (the exchange above), `block` is the
                    // tail block read after a state that had `index` (acquire), and `next` is
                    // set when `index` is a block's last slot.
                    unsafe { tail.write(block, index, next, step, || make(borrow)) };
                    if !remote_blocks::is_last_slot(index) && !next.is_null() {
                        // Taken for a last slot that another sender got.
                        head.give_back(next);
                    }
                    // The queue was scheduled (not idle: see above): its runner reads up to the
                    // new index before its turn can end in idle.
                    return;
                }
                Err(now) => s = now,
            }
        }
    }

    /// A new strong reference to this queue (every queue lives in an `Arc`).
    fn arc(&self) -> Arc<Self> {
        let p: *const Self = self;
        // SAFETY: queues are only ever created inside an `Arc` (dispatchers build them with
        // `Arc::new`) and `self` is alive: take one more strong count and wrap it.
        unsafe {
            Arc::increment_strong_count(p);
            Arc::from_raw(p)
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

    /// A pool worker is done with its turn: returns true if the queue has more work and this
    /// caller must schedule it again (it won the race to do so).
    ///
    /// # Safety
    /// The caller just ran this queue and no longer runs it (its guard is dropped).
    pub(crate) unsafe fn finish_turn(&self) -> bool {
        let Notifier::Pool { .. } = &self.notifier else {
            return false;
        };
        let state = &self.senders.state;
        // SAFETY: the state is still SCHEDULED, so no other runner can start (senders only
        // claim or schedule an idle queue): nobody touches the local half while we read it.
        if unsafe { !(*self.run.local.get()).is_empty() } {
            return true;
        }
        // Idle only if the runner has read the remote half up to the state's index (no push
        // since, none left by a drain that stopped at its limit); otherwise the queue stays
        // scheduled and runs again. Release: a sender that claims the idle queue then fills
        // its `first` slot.
        // SAFETY: the caller ran this queue and nobody else reads the head.
        let head = unsafe { self.run.remote_head.index() };
        let busy = (head * ONE_PUSH) | SCHEDULED;
        match state.compare_exchange(busy, busy & !SCHEDULED, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => false,
            // Once the agents have begun to finish (rare: a second try, not a load per turn).
            Err(now) if now == busy | SENDERS_OWN => state
                .compare_exchange(now, now & !SCHEDULED, Ordering::AcqRel, Ordering::Relaxed)
                .is_err(),
            Err(_) => true,
        }
    }

    /// The finish step of the queue's agents: from now on a remote message demand owns its
    /// agent reference, and every remote demand reserved before, which may borrow it, moves to
    /// the local tail now, ahead of whatever the caller pushes next (the step that runs
    /// `finish`, after which the cooperation may drop the agents). Waits for a sender between
    /// its reservation and its write (a few instructions, unless it was preempted there). A
    /// queue run by a dedicated thread moves what its remote half holds.
    ///
    /// A pool queue serves one group of one cooperation (a queue per agent or per
    /// cooperation), so this runs once per queue, and no handler of its agents
    /// runs after the `finish` that follows it.
    ///
    /// # Safety
    /// The caller runs this queue.
    pub(crate) unsafe fn close_lending(&self) {
        let Notifier::Pool { .. } = &self.notifier else {
            // SAFETY: the caller runs this queue.
            unsafe { self.drain_remote(usize::MAX) };
            return;
        };
        // AcqRel, like every write of the state: with the blocks linked before the index.
        let tail = tail_index(self.senders.state.fetch_or(SENDERS_OWN, Ordering::AcqRel));
        let head = &self.run.remote_head;
        let backoff = crate::sync::Backoff::new();
        loop {
            // SAFETY: the caller runs this queue: the head is its alone.
            unsafe { self.move_to_local(usize::MAX, || head.pop(tail)) };
            // SAFETY: as above.
            if unsafe { head.index() } == tail {
                return;
            }
            // A slot reserved before the flag and not written yet stopped the move.
            backoff.snooze();
        }
    }

    /// Called by the worker once it has left its loop: whatever arrives from now on (a sender
    /// that saw its receiver alive just before it finished) is rejected at once, counted as a
    /// dead letter, instead of waiting in a queue nobody runs.
    pub(crate) fn retire(&self) {
        self.retired.store(true, Ordering::SeqCst);
        crate::sync::fence(Ordering::SeqCst);
        self.reject_remote();
    }

    /// A pool swept this scheduled queue (its workers are gone): reject what it holds and
    /// make it idle again, so that a later send finds it idle and is rejected in turn.
    #[cold]
    pub(crate) fn abandon(&self) {
        // SAFETY: the queue came out of a run queue (or a slot) of a pool whose workers are
        // gone: nobody runs it, and a sender claims it only once it is idle again (below).
        if let Some(d) = unsafe { self.take_first() } {
            d.reject();
        }
        // SAFETY: as above.
        while let Some(d) = unsafe { (*self.run.local.get()).pop_front() } {
            d.reject();
        }
        // Then the remote half, up to an index that no push passed before the queue went
        // idle (as a turn ends).
        // SAFETY: as above: this thread holds the queue, the runner's end is its own.
        while unsafe { self.finish_turn() } {
            // SAFETY: as above.
            while let Some(d) = unsafe { self.pop_remote() } {
                d.reject();
            }
        }
    }

    /// A queue run by a dedicated thread: rejects its remote half (that thread has exited).
    #[cold]
    pub(crate) fn reject_remote(&self) {
        if let Notifier::Thread(side) = &self.notifier {
            while let Some(d) = side.remote.pop() {
                d.reject();
            }
        }
    }

    /// Pushes a demand that holds no borrowed agent reference, through the right half.
    #[inline]
    pub(crate) fn push(&self, d: T) {
        if self.is_running_here() {
            // SAFETY: checked just above.
            unsafe { self.push_local(d) }
        } else {
            self.push_remote(d)
        }
    }

    /// Pops the next demand to execute.
    ///
    /// # Safety
    /// The caller runs this queue.
    #[inline]
    pub(crate) unsafe fn pop_local(&self) -> Option<T> {
        // SAFETY: as in `push_local`; the borrow ends before the demand is executed.
        unsafe { (*self.run.local.get()).pop_front() }
    }

    /// Whether the local half is empty.
    ///
    /// # Safety
    /// The caller runs this queue.
    #[inline]
    pub(crate) unsafe fn local_is_empty(&self) -> bool {
        // SAFETY: as in `push_local`.
        unsafe { (*self.run.local.get()).is_empty() }
    }

    /// Takes the demand of the sender that claimed this idle queue, if any: a turn's first
    /// demand, before the local half and the remote half.
    ///
    /// # Safety
    /// The caller runs this queue.
    #[inline]
    pub(crate) unsafe fn take_first(&self) -> Option<T> {
        // SAFETY: the slot is written only by the claiming sender before the queue was
        // scheduled (the run queue's hand-off orders it before this turn), and read only by
        // the runner (caller).
        unsafe {
            if !self
                .senders
                .has_first
                .with_mut(|has| std::mem::replace(has, false))
            {
                return None;
            }
            Some(
                self.senders
                    .first
                    .with_mut(|first| first.assume_init_read()),
            )
        }
    }

    /// Puts a popped demand back at the head of the local half.
    ///
    /// # Safety
    /// The caller runs this queue.
    pub(crate) unsafe fn unpop_local(&self, d: T) {
        // SAFETY: as in `push_local`.
        unsafe { (*self.run.local.get()).push_front(d) }
    }

    /// Moves up to `max` remote demands to the local tail; returns how many moved.
    ///
    /// # Safety
    /// The caller runs this queue.
    #[inline]
    pub(crate) unsafe fn drain_remote(&self, max: usize) -> usize {
        match &self.notifier {
            Notifier::Pool { .. } => {
                // One load of the state, which the turn touches anyway, says how many were
                // pushed (acquire: with the blocks they went to). A push after it fails the
                // turn's end (`finish_turn`), which runs the queue again.
                let tail = self.remote_tail();
                let head = &self.run.remote_head;
                // SAFETY: the caller runs this queue: the head is its alone.
                if unsafe { head.index() } == tail {
                    // The common case on a hand-off: nothing pushed while the queue waited.
                    return 0;
                }
                // SAFETY: as above.
                unsafe { self.move_to_local(max, || head.pop(tail)) }
            }
            Notifier::Thread(side) => {
                // Two loads, where an empty `pop` costs a full fence; a push racing with
                // this check is seen by the worker's next look.
                if side.remote.is_empty() {
                    return 0;
                }
                // SAFETY: the caller runs this queue.
                unsafe { self.move_to_local(max, || side.remote.pop()) }
            }
        }
    }

    /// Moves up to `max` demands that `pop` yields to the local tail; returns how many moved.
    ///
    /// # Safety
    /// The caller runs this queue, and `pop` is safe to call on the thread that does.
    #[inline]
    unsafe fn move_to_local(&self, max: usize, mut pop: impl FnMut() -> Option<T>) -> usize {
        let mut n = 0;
        while n < max {
            let Some(d) = pop() else { break };
            // SAFETY: the caller runs this queue.
            unsafe { self.push_local(d) };
            n += 1;
        }
        n
    }

    /// A pool queue's remote write index, as the state shows it now (acquire: with the
    /// blocks linked before it).
    #[inline]
    fn remote_tail(&self) -> u64 {
        tail_index(self.senders.state.load(Ordering::Acquire))
    }

    /// A pool queue: takes the next demand of the remote half, if one was pushed by now.
    ///
    /// # Safety
    /// The caller runs (or holds) this queue.
    unsafe fn pop_remote(&self) -> Option<T> {
        let tail = self.remote_tail();
        // SAFETY: caller: the head is its alone.
        unsafe { self.run.remote_head.pop(tail) }
    }

    /// Keeps a message that reached agent `cell` before its `start` ran.
    ///
    /// # Safety
    /// The caller runs this queue.
    #[cold]
    pub(crate) unsafe fn stash_early(&self, cell: usize, mbox: MboxId, msg: Envelope) {
        // SAFETY: only the running thread touches `early` (caller); no borrow is held across.
        unsafe { (*self.early.get()).push((cell, mbox, msg)) }
    }

    /// Takes the messages stashed for agent `cell`, in arrival order.
    ///
    /// # Safety
    /// The caller runs this queue.
    #[inline]
    pub(crate) unsafe fn take_early(&self, cell: usize) -> Vec<(MboxId, Envelope)> {
        // SAFETY: as in `stash_early`.
        let early = unsafe { &mut *self.early.get() };
        if early.is_empty() {
            return Vec::new();
        }
        let mut mine = Vec::new();
        let mut rest = Vec::with_capacity(early.len());
        for (c, m, e) in early.drain(..) {
            if c == cell {
                mine.push((m, e))
            } else {
                rest.push((c, m, e))
            }
        }
        *early = rest;
        mine
    }

    /// Demands waiting in both halves (for statistics).
    ///
    /// # Safety
    /// The caller runs this queue.
    pub(crate) unsafe fn len_here(&self) -> usize {
        let remote = match &self.notifier {
            Notifier::Thread(side) => side.remote.len(),
            Notifier::Pool { .. } => {
                let tail = self.remote_tail();
                // SAFETY: the caller runs this queue: the head is its alone.
                let head = unsafe { self.run.remote_head.index() };
                usize::try_from(remote_blocks::count(head, tail)).unwrap_or(usize::MAX)
            }
        };
        // SAFETY: only the running thread touches `local` and `first` (caller).
        unsafe {
            usize::from(self.senders.has_first.with_mut(|has| *has))
                + (*self.run.local.get()).len()
                + remote
        }
    }

    /// A queue run by a dedicated thread: true when its remote half has demands.
    #[inline]
    pub(crate) fn has_remote(&self) -> bool {
        match &self.notifier {
            Notifier::Thread(side) => !side.remote.is_empty(),
            Notifier::Pool { .. } => false,
        }
    }

    /// Sleeps until a remote push or a close (the caller spins first).
    pub(crate) fn sleep(&self) {
        if let Notifier::Thread(side) = &self.notifier {
            side.wakeup.sleep(|| self.has_remote() || self.is_closed());
        }
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
}

impl<T: QueueItem> Drop for EventQueue<T> {
    fn drop(&mut self) {
        // Whatever is left was never executed: count it, never lose it silently.
        // SAFETY: `&mut self`: nobody else holds the queue.
        if let Some(d) = unsafe { self.take_first() } {
            d.reject();
        }
        while let Some(d) = self.run.local.get_mut().pop_front() {
            d.reject();
        }
        match &self.notifier {
            Notifier::Thread(_) => self.reject_remote(),
            Notifier::Pool { .. } => {
                let tail = self.remote_tail();
                // SAFETY: `&mut self`: no sender is left.
                unsafe { self.run.remote_head.free_all(tail, T::reject) };
            }
        }
    }
}

/// Marks the current thread as running a queue until dropped.
pub(crate) struct RunningGuard {
    prev: *const (),
}

impl RunningGuard {
    /// # Safety
    /// No other thread runs `q` while the guard lives, and `q` outlives the guard.
    pub(crate) unsafe fn enter<T: QueueItem>(q: &EventQueue<T>) -> Self {
        let prev = RUNNING.with(|r| r.replace((q as *const EventQueue<T>).cast::<()>()));
        last_log::forget();
        Self { prev }
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        RUNNING.with(|r| r.set(self.prev));
        last_log::forget();
    }
}

#[cfg(all(test, loom))]
mod loom_model {
    //! The pool hand-off: a queue scheduled by the sender that finds it idle, run by at most
    //! one worker at a time, rescheduled by the worker that ends a turn with work left.

    use super::{EventQueue, RunningGuard, Schedule};
    use crate::queue::LoomItem as Item;
    use loom::sync::Mutex;
    use loom::sync::atomic::AtomicBool;
    use std::collections::VecDeque;
    use std::sync::Arc;
    use std::sync::atomic::Ordering::SeqCst;

    /// A run queue of scheduled queues.
    #[derive(Default)]
    struct RunQueue(Mutex<VecDeque<Arc<EventQueue<Item>>>>);
    impl Schedule<Item> for RunQueue {
        fn schedule(&self, q: Arc<EventQueue<Item>>) {
            self.0.lock().unwrap().push_back(q);
        }
    }

    /// The finish step's demand (pushed from outside, as deregistration does) and the demand
    /// it leaves behind the ones it moved (the one that runs `finish`).
    const FINISH: Item = Item(9, 0);
    const FINISHED: Item = Item(9, 1);
    /// How the lending model's producer marks an item made borrowing or owning.
    const BORROWING: u8 = 0;
    const OWNING: u8 = 1;

    /// One worker's pass: runs scheduled queues until the run queue is empty.
    fn work(rq: &RunQueue, log: &Mutex<Vec<Item>>, in_turn: &AtomicBool) {
        loop {
            let next = rq.0.lock().unwrap().pop_front();
            let Some(q) = next else { return };
            assert!(
                !in_turn.swap(true, SeqCst),
                "two workers ran one queue at once"
            );
            {
                // SAFETY: this worker took the queue from the run queue.
                let _g = unsafe { RunningGuard::enter(&*q) };
                // One at a time: the claiming sender's item first, else the local half after
                // a drain of one (a turn that leaves some ends scheduled).
                // SAFETY: as above.
                let next = unsafe { q.take_first() }.or_else(|| unsafe {
                    q.drain_remote(1);
                    q.pop_local()
                });
                match next {
                    Some(it) => {
                        log.lock().unwrap().push(it);
                        if it == FINISH {
                            // As the finish step: close, then what runs `finish` behind.
                            // SAFETY: as above.
                            unsafe {
                                q.close_lending();
                                q.push_local(FINISHED);
                            }
                        }
                    }
                    // A sender between its reservation and its write: a real worker goes on
                    // to other queues; the model lets the other threads run.
                    None => loom::thread::yield_now(),
                }
            }
            in_turn.store(false, SeqCst);
            // SAFETY: the turn is over.
            if unsafe { q.finish_turn() } {
                rq.schedule(q);
            }
        }
    }

    /// A pooled queue (one demand per turn), its run queue, and the log of what ran.
    struct Pooled {
        rq: Arc<RunQueue>,
        q: Arc<EventQueue<Item>>,
        log: Arc<Mutex<Vec<Item>>>,
        in_turn: Arc<AtomicBool>,
    }

    impl Pooled {
        fn new() -> Self {
            let rq = Arc::new(RunQueue::default());
            Self {
                q: Arc::new(EventQueue::<Item>::pooled(rq.clone(), 1)),
                rq,
                log: Arc::new(Mutex::new(Vec::new())),
                in_turn: Arc::new(AtomicBool::new(false)),
            }
        }

        /// A worker thread that runs turns until it finds nothing scheduled.
        fn spawn_worker(&self) -> loom::thread::JoinHandle<()> {
            let (rq, log, in_turn) = (self.rq.clone(), self.log.clone(), self.in_turn.clone());
            loom::thread::spawn(move || work(&rq, &log, &in_turn))
        }

        /// A last pass once every thread is joined: whatever was pushed must have left the
        /// queue scheduled (a lost schedule would strand items, caught by the caller's count).
        fn last_pass(&self) -> Vec<Item> {
            work(&self.rq, &self.log, &self.in_turn);
            self.log.lock().unwrap().clone()
        }
    }

    /// Checks `f` in every interleaving, with room for spins: a sender waiting on a marker or
    /// a runner on a slot being written yields to the model, and paths are longer than
    /// loom's default allows.
    fn model(f: impl Fn() + Sync + Send + 'static) {
        let mut model = loom::model::Builder::new();
        model.max_branches = 20_000;
        model.check(f);
    }

    fn check(producers: u8, per_producer: u8, workers: usize) {
        model(move || {
            let pooled = Pooled::new();
            let q = &pooled.q;
            let senders: Vec<_> = (0..producers)
                .map(|p| {
                    let q = q.clone();
                    loom::thread::spawn(move || {
                        for i in 0..per_producer {
                            q.push_remote(Item(p, i));
                        }
                    })
                })
                .collect();
            // Workers race with the producers; each stops when it finds nothing scheduled.
            let worker_threads: Vec<_> = (0..workers).map(|_| pooled.spawn_worker()).collect();
            for t in senders.into_iter().chain(worker_threads) {
                t.join().unwrap();
            }
            let log = pooled.last_pass();
            assert_eq!(
                log.len(),
                usize::from(producers) * usize::from(per_producer)
            );
            for p in 0..producers {
                let seq: Vec<u8> = log.iter().filter(|it| it.0 == p).map(|it| it.1).collect();
                assert_eq!(
                    seq,
                    (0..per_producer).collect::<Vec<_>>(),
                    "FIFO per producer"
                );
            }
        });
    }

    /// Every item runs exactly once, in order, with one turn at a time, and the queue is
    /// never left idle with work in it (the workers would spin forever: loom reports it).
    #[test]
    fn pooled_queue_one_producer_two_workers() {
        check(1, 2, 2);
    }

    #[test]
    fn pooled_queue_two_producers_one_worker() {
        check(2, 1, 1);
    }

    #[test]
    fn pooled_queue_two_producers_two_items_one_worker() {
        check(2, 2, 1);
    }

    /// Enough remote pushes to fill a block (two slots under loom) and link the next, while
    /// the worker reads: the marker, the link, the spare block's reuse.
    #[test]
    fn pooled_queue_crosses_remote_blocks() {
        check(1, 5, 1);
    }

    /// The finish step closes lending while a sender pushes: every demand made borrowing
    /// (reserved before the close) runs before the demand that runs `finish`, every one run
    /// before the close was made borrowing, and nothing is lost. Loom reports a runner that
    /// waits for ever on a reserved slot, or a lost schedule.
    fn lending_closes(items: u8) {
        model(move || {
            let pooled = Pooled::new();
            let q = &pooled.q;
            let producer = {
                let q = q.clone();
                loom::thread::spawn(move || {
                    for i in 0..items {
                        q.push_remote_with(|borrow| {
                            Item(if borrow { BORROWING } else { OWNING }, i)
                        });
                    }
                })
            };
            let finisher = {
                let q = q.clone();
                loom::thread::spawn(move || q.push_remote(FINISH))
            };
            let worker = pooled.spawn_worker();
            for t in [producer, finisher, worker] {
                t.join().unwrap();
            }
            let log = pooled.last_pass();
            assert_eq!(log.len(), usize::from(items) + 2, "{log:?}");
            let at = |it: Item| log.iter().position(|x| *x == it).unwrap();
            let (close, finished) = (at(FINISH), at(FINISHED));
            for (k, it) in log.iter().enumerate() {
                if it.0 == BORROWING {
                    assert!(k < finished, "a borrowing demand ran after finish: {log:?}");
                }
                if k < close {
                    assert_eq!(it.0, BORROWING, "reserved before the close: {log:?}");
                }
            }
        });
    }

    #[test]
    fn close_lending_with_one_push() {
        lending_closes(1);
    }

    #[test]
    fn close_lending_with_two_pushes() {
        lending_closes(2);
    }
}
#[cfg(all(test, not(loom)))]
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
