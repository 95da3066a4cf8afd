//! [`BroadcastLog`]: one entry per send for the subscribers of a type spread over many
//! queues, instead of one demand per queue.
//!
//! A send to a multi-consumer mailbox whose subscribers of the type sit on several queues
//! (agents of a `thread_pool` or `work_stealing` pool with individual fifo, `active_obj`
//! agents) appends the message to the type's log once. Each queue (a *group*: the subscribers
//! bound to it) reads the log through its own cursor. What tells a queue that the log has
//! something for it is a *marker* demand in the queue, and most sends push none:
//!
//! ```text
//!   sender ── append ──▶ log: │ m0 │ m1 │ m2 │ m3 │ m4 │ …      (segments of SEGMENT entries)
//!                                ▲              ▲
//!                                │cursor q1     │cursor q2      (one per group)
//!   q1: … [marker] d7 …          q2: … [marker] …
//! ```
//!
//! - **Coalescing.** A group has a `pending` flag: a marker is queued and has not started.
//!   A send appends, publishes the new length, then pushes a marker only to the groups whose
//!   flag is clear (and sets it). A marker, when it starts, clears the flag and then reads
//!   the length (a Dekker pair with the sender's publish-then-check, both sequentially
//!   consistent): either the marker sees the entry, or the sender sees the flag clear and
//!   pushes another marker. A marker then handles the group's entries from its cursor on,
//!   as many per run as the worker's turn has left (each entry counts as one demand for
//!   `max_demands_at_once`), putting itself back at the front of its queue until it has
//!   caught up with the length it read.
//! - **Order per sender.** An entry is handled where some marker stands in the group's
//!   queue, which may be before something its sender pushed to that queue earlier. So a send
//!   is *forced* (a marker pushed to every group, whatever their flags) unless the sending
//!   thread's previous push of any kind was an append to this same log
//!   ([`last_append`](super::last_append)); a marker stops before a forced entry that is not
//!   its own, which its own marker, behind the sender's earlier pushes, handles. Markers are
//!   pushed under the log's lock, so a group sees them in append order.
//! - **Memory.** Entries live in a chain of segments; a group holds the segment its cursor
//!   is in, and a segment (with its entries) is freed when the last group has moved past it.
//! - **Undeliverable.** A marker that is rejected (its queue is gone) counts every entry the
//!   group had not handled as a dead letter of each of its agents, and clears the flag so
//!   that later sends push (and so count) again. A rejection found while the appending
//!   thread holds the log's lock (a marker pushed to a queue that is gone) is reported once
//!   the lock is released: a dead-letter hook may send to the same mailbox.

use crate::sync::{AtomicBool, AtomicU64, AtomicUsize, Mutex, Ordering};
use crossbeam_utils::CachePadded;
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::{Arc, PoisonError};

/// A rejection's report (dead letters), deferred while a log's lock is held.
type Report = Box<dyn FnOnce()>;

#[cfg(not(cohort_loom))]
thread_local! {
    /// Rejections counted while this thread holds a log's writer lock, reported once it is
    /// released: a dead-letter hook may send to the same mailbox, which appends again.
    static DEFERRED: std::cell::RefCell<Option<Vec<Report>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `report` now, or after the log lock this thread holds is released.
fn report(report: Report) {
    #[cfg(not(cohort_loom))]
    let report = DEFERRED.with(|d| match d.borrow_mut().as_mut() {
        Some(later) => {
            later.push(report);
            None
        }
        None => Some(report),
    });
    #[cfg(not(cohort_loom))]
    let Some(report) = report else { return };
    report()
}

/// Entries per segment.
const SEGMENT: usize = if cfg!(cohort_loom) { 2 } else { 256 };

/// The queue side of a log: what a group is and how a marker reaches it.
pub(crate) trait LogGroup: Send + Sync + Sized + 'static {
    /// What the log holds. Groups read entries concurrently through `&Self::Entry`, so
    /// [`LogGroup::handle`] must only use what is safe to share between threads.
    type Entry: Send + 'static;
    /// Queues a marker for this group (a remote push from the sending thread).
    fn push_marker(&self, marker: Marker<Self>);
    /// Delivers `entry` to this group's agents, on the thread that runs the group's queue.
    fn handle(&self, entry: &Self::Entry);
    /// Counts `n` entries as undeliverable to this group's agents.
    fn reject(&self, n: u64);
}

/// The log of one message type of one mailbox.
pub(crate) struct BroadcastLog<G: LogGroup> {
    /// How many entries are published (readable).
    len: AtomicU64,
    writer: Mutex<Writer<G::Entry>>,
    /// Padded: each is written by the worker that runs its queue.
    groups: Box<[CachePadded<GroupState<G>>]>,
}

struct Writer<E> {
    tail: Arc<Segment<E>>,
    len: u64,
}

struct GroupState<G: LogGroup> {
    target: G,
    /// A marker is queued for this group and has not started.
    pending: AtomicBool,
    /// The next entry this group handles. Written by the thread that runs the group's queue
    /// (or, once nothing runs it, by whoever rejects its markers).
    cursor: AtomicU64,
    /// The segment that holds entry `cursor` (or ends there).
    segment: UnsafeCell<Arc<Segment<G::Entry>>>,
}

struct Segment<E> {
    /// The index of the first entry.
    base: u64,
    slots: Box<[Slot<E>]>,
    /// How many slots are written (read when the segment is dropped).
    filled: AtomicUsize,
    next: Mutex<Option<Arc<Segment<E>>>>,
}

struct Slot<E> {
    /// The entry's sender pushed a marker to every group for it.
    forced: UnsafeCell<bool>,
    entry: UnsafeCell<MaybeUninit<E>>,
}

// SAFETY: a slot is written once, by the appender under the writer lock, before the length
// that covers it is published (release); readers read it only after loading that length
// (acquire), and only through `&E` handed to `LogGroup::handle`, whose contract is to use
// what is thread-safe. Entries are `Send`, so dropping them on any thread is sound.
unsafe impl<E: Send> Sync for Segment<E> {}
// SAFETY: as above.
unsafe impl<E: Send> Send for Segment<E> {}
// SAFETY: `segment` is only touched by the thread that runs the group's queue (one at a time,
// handed over through the queue's run-queue protocol); everything else is atomic or `G`.
unsafe impl<G: LogGroup> Sync for GroupState<G> {}
// SAFETY: as above.
unsafe impl<G: LogGroup> Send for GroupState<G> {}

impl<E> Segment<E> {
    fn new(base: u64) -> Self {
        Self {
            base,
            slots: (0..SEGMENT)
                .map(|_| Slot {
                    forced: UnsafeCell::new(false),
                    entry: UnsafeCell::new(MaybeUninit::uninit()),
                })
                .collect(),
            filled: AtomicUsize::new(0),
            next: Mutex::new(None),
        }
    }

    fn take_next(&self) -> Option<Arc<Segment<E>>> {
        self.next
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    fn next(&self) -> Option<Arc<Segment<E>>> {
        self.next
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl<E> Drop for Segment<E> {
    fn drop(&mut self) {
        let filled = self.filled.load(Ordering::Acquire);
        for slot in &mut self.slots[..filled] {
            // SAFETY: the first `filled` slots were written, and this is their last user.
            unsafe { slot.entry.get_mut().assume_init_drop() };
        }
        // Unlink the chain iteratively: a long backlog must not recurse once per segment.
        let mut next = self.take_next();
        while let Some(seg) = next {
            next = match Arc::try_unwrap(seg) {
                Ok(seg) => seg.take_next(),
                Err(_) => None,
            };
        }
    }
}

impl<G: LogGroup> BroadcastLog<G> {
    /// A log for `groups`, empty.
    pub(crate) fn new(groups: impl IntoIterator<Item = G>) -> Self {
        let first = Arc::new(Segment::new(0));
        let groups = groups
            .into_iter()
            .map(|target| {
                CachePadded::new(GroupState {
                    target,
                    pending: AtomicBool::new(false),
                    cursor: AtomicU64::new(0),
                    segment: UnsafeCell::new(first.clone()),
                })
            })
            .collect();
        Self {
            len: AtomicU64::new(0),
            writer: Mutex::new(Writer {
                tail: first,
                len: 0,
            }),
            groups,
        }
    }

    /// Appends `entry` and makes every group handle it. `forced`: the sending thread pushed
    /// something else since its last append to this log (see the module docs).
    pub(crate) fn append(self: &Arc<Self>, entry: G::Entry, forced: bool) {
        // An append may run inside another one (a dead-letter hook reached from a marker
        // push): its reports then wait for the outer lock too.
        #[cfg(not(cohort_loom))]
        let outer = DEFERRED.with(|d| d.borrow_mut().replace(Vec::new()));
        self.append_locked(entry, forced);
        #[cfg(not(cohort_loom))]
        for r in DEFERRED
            .with(|d| std::mem::replace(&mut *d.borrow_mut(), outer))
            .into_iter()
            .flatten()
        {
            report(r);
        }
    }

    fn append_locked(self: &Arc<Self>, entry: G::Entry, forced: bool) {
        let mut w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let n = w.len;
        let mut index = (n - w.tail.base) as usize;
        if index == SEGMENT {
            let next = Arc::new(Segment::new(n));
            *w.tail.next.lock().unwrap_or_else(PoisonError::into_inner) = Some(next.clone());
            w.tail = next;
            index = 0;
        }
        let slot = &w.tail.slots[index];
        // SAFETY: slot `n` is past the published length, so no reader looks at it, and only
        // the writer (this thread, under the lock) writes slots.
        unsafe {
            *slot.forced.get() = forced;
            (*slot.entry.get()).write(entry);
        }
        w.tail.filled.store(index + 1, Ordering::Release);
        w.len = n + 1;
        // Publish, then look at the flags (see the module docs: the Dekker pair).
        self.len.store(n + 1, Ordering::SeqCst);
        for (i, g) in self.groups.iter().enumerate() {
            if forced || !g.pending.load(Ordering::SeqCst) {
                // Before the push: the marker clears it when it starts.
                g.pending.store(true, Ordering::SeqCst);
                g.target.push_marker(Marker {
                    log: self.clone(),
                    group: i as u32,
                    start: n,
                    started: false,
                });
            }
        }
    }
}

/// A demand that makes one group handle what the log has for it.
pub(crate) struct Marker<G: LogGroup> {
    log: Arc<BroadcastLog<G>>,
    group: u32,
    /// The entry whose append pushed this marker.
    start: u64,
    started: bool,
}

impl<G: LogGroup> Marker<G> {
    /// Handles the group's next entry; returns the marker if it must run again (the caller
    /// puts it back at the front of the queue).
    ///
    /// # Safety
    /// As for [`Marker::run`].
    #[cfg(test)]
    pub(crate) unsafe fn step(mut self) -> Option<Self> {
        // SAFETY: as the caller guarantees.
        let (_, more) = unsafe { self.run(1) };
        more.then_some(self)
    }

    /// Handles up to `budget` (at least one) of the group's entries, one after the other;
    /// returns how many it handled and whether the marker must run again (the caller puts
    /// it back at the front of the queue).
    ///
    /// # Safety
    /// Called on the thread that runs the group's queue, for a marker that came out of it.
    pub(crate) unsafe fn run(&mut self, budget: usize) -> (usize, bool) {
        let g = &self.log.groups[self.group as usize];
        if !self.started {
            self.started = true;
            g.pending.store(false, Ordering::SeqCst);
        }
        let len = self.log.len.load(Ordering::SeqCst);
        let mut c = g.cursor.load(Ordering::Relaxed);
        let mut handled = 0;
        while c < len && handled < budget.max(1) {
            // SAFETY: this thread runs the group's queue (caller): the only one to touch it,
            // and no reference to it outlives this iteration.
            let segment = unsafe { &mut *g.segment.get() };
            if c == segment.base + SEGMENT as u64 {
                // Linked before any entry in it was published (`len` above is past it).
                let Some(next) = segment.next() else {
                    debug_assert!(false, "log segment not linked");
                    return (handled, false);
                };
                *segment = next;
            }
            let slot = &segment.slots[(c - segment.base) as usize];
            // SAFETY: `c < len`, published after the slot was written (acquire above).
            if unsafe { *slot.forced.get() } && c > self.start {
                // A later marker, behind its sender's earlier pushes, handles it.
                return (handled, false);
            }
            // SAFETY: as above: the slot is written.
            let entry: *const G::Entry = unsafe { (*slot.entry.get()).assume_init_ref() };
            // The handler may run for long: the cursor is past this entry before it starts.
            c += 1;
            g.cursor.store(c, Ordering::Relaxed);
            // SAFETY: the slot stays written until its segment is dropped, and this group
            // holds the segment until its cursor has left it (only this thread moves it).
            g.target.handle(unsafe { &*entry });
            handled += 1;
        }
        (handled, c < len)
    }

    /// The marker will never run: counts what its group had not handled as undeliverable.
    pub(crate) fn reject(self) {
        let Marker { log, group, .. } = self;
        let g = &log.groups[group as usize];
        // As a start (see `step`): a later send pushes another marker, which is rejected in
        // turn, so nothing is left uncounted.
        g.pending.store(false, Ordering::SeqCst);
        let len = log.len.load(Ordering::SeqCst);
        let mut c = g.cursor.load(Ordering::Relaxed);
        while c < len {
            match g
                .cursor
                .compare_exchange(c, len, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => {
                    let log = log.clone();
                    return report(Box::new(move || {
                        log.groups[group as usize].target.reject(len - c)
                    }));
                }
                Err(now) => c = now,
            }
        }
    }

    /// The group this marker is for.
    pub(crate) fn group(&self) -> &G {
        &self.log.groups[self.group as usize].target
    }
}

#[cfg(all(test, not(cohort_loom)))]
mod tests {
    use super::*;
    use std::sync::Mutex as StdMutex;

    /// A group whose queue is a plain vector, run by the test.
    #[derive(Default, Clone)]
    struct VecGroup(Arc<VecQueue>);
    #[derive(Default)]
    struct VecQueue {
        queue: StdMutex<Vec<Marker<VecGroup>>>,
        handled: StdMutex<Vec<u64>>,
        rejected: AtomicU64,
    }
    impl std::ops::Deref for VecGroup {
        type Target = VecQueue;
        fn deref(&self) -> &VecQueue {
            &self.0
        }
    }
    impl LogGroup for VecGroup {
        type Entry = u64;
        fn push_marker(&self, marker: Marker<Self>) {
            self.queue.lock().unwrap().push(marker);
        }
        fn handle(&self, entry: &u64) {
            self.handled.lock().unwrap().push(*entry);
        }
        fn reject(&self, n: u64) {
            self.rejected.fetch_add(n, Ordering::Relaxed);
        }
    }
    impl VecGroup {
        /// Runs every queued marker to the end, in order; returns how many steps ran.
        fn run(&self) -> usize {
            let mut steps = 0;
            loop {
                let next = {
                    let mut q = self.queue.lock().unwrap();
                    if q.is_empty() {
                        return steps;
                    }
                    q.remove(0)
                };
                let mut m = Some(next);
                while let Some(marker) = m {
                    steps += 1;
                    // SAFETY: the test is the only runner of this group.
                    m = unsafe { marker.step() };
                }
            }
        }
    }

    fn log(n: usize) -> (Arc<BroadcastLog<VecGroup>>, Vec<VecGroup>) {
        let groups: Vec<_> = (0..n).map(|_| VecGroup::default()).collect();
        (Arc::new(BroadcastLog::new(groups.clone())), groups)
    }

    #[test]
    fn unforced_appends_share_one_marker_and_every_group_gets_every_entry_in_order() {
        let (log, groups) = log(3);
        let count = SEGMENT as u64 * 3 + 5;
        for i in 0..count {
            log.append(i, false);
        }
        for g in &groups {
            assert_eq!(g.queue.lock().unwrap().len(), 1, "one marker while pending");
            g.run();
            assert_eq!(*g.handled.lock().unwrap(), (0..count).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_marker_that_started_lets_the_next_append_push_another() {
        let (log, groups) = log(1);
        log.append(0, false);
        groups[0].run();
        log.append(1, false);
        assert_eq!(groups[0].queue.lock().unwrap().len(), 1);
        groups[0].run();
        assert_eq!(*groups[0].handled.lock().unwrap(), vec![0, 1]);
    }

    #[test]
    fn a_marker_stops_before_a_forced_entry_that_is_not_its_own() {
        let (log, groups) = log(1);
        log.append(0, false);
        log.append(1, false);
        log.append(2, true);
        log.append(3, false);
        let g = &groups[0];
        let mut first = Some(g.queue.lock().unwrap().remove(0));
        while let Some(m) = first {
            // SAFETY: the test runs the group.
            first = unsafe { m.step() };
        }
        assert_eq!(
            *g.handled.lock().unwrap(),
            vec![0, 1],
            "stops before entry 2"
        );
        g.run();
        assert_eq!(*g.handled.lock().unwrap(), vec![0, 1, 2, 3]);
    }

    #[test]
    fn rejected_markers_count_each_unhandled_entry_once_and_later_sends_too() {
        let (log, groups) = log(2);
        for i in 0..5 {
            log.append(i, false);
        }
        let g = &groups[1];
        let m = g.queue.lock().unwrap().remove(0);
        // SAFETY: the test runs the group.
        let m = unsafe { m.step() }.expect("more to do");
        m.reject();
        assert_eq!(g.rejected.load(Ordering::Relaxed), 4);
        log.append(5, false);
        let again = g.queue.lock().unwrap().remove(0);
        again.reject();
        assert_eq!(g.rejected.load(Ordering::Relaxed), 5);
        groups[0].run();
        assert_eq!(groups[0].handled.lock().unwrap().len(), 6);
    }

    #[test]
    fn a_rejection_found_during_an_append_is_reported_after_it_and_may_append_again() {
        // A group whose queue is gone: its markers are rejected as they are pushed, and the
        // rejection's report (think of a dead-letter hook) sends to the same log once.
        #[derive(Clone, Default)]
        struct Gone(Arc<GoneState>);
        #[derive(Default)]
        struct GoneState {
            log: StdMutex<Option<std::sync::Weak<BroadcastLog<Gone>>>>,
            rejected: AtomicU64,
        }
        impl LogGroup for Gone {
            type Entry = u64;
            fn push_marker(&self, marker: Marker<Self>) {
                marker.reject();
            }
            fn handle(&self, _: &u64) {}
            fn reject(&self, n: u64) {
                if self.0.rejected.fetch_add(n, Ordering::SeqCst) == 0 {
                    let log = self
                        .0
                        .log
                        .lock()
                        .unwrap()
                        .as_ref()
                        .and_then(|l| l.upgrade());
                    if let Some(log) = log {
                        log.append(99, false);
                    }
                }
            }
        }
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let group = Gone::default();
        let state = group.0.clone();
        std::thread::spawn(move || {
            let log = Arc::new(BroadcastLog::new([group.clone()]));
            *group.0.log.lock().unwrap() = Some(Arc::downgrade(&log));
            log.append(1, false);
            let _ = done_tx.send(());
        });
        done_rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the append deadlocked on its own lock");
        assert_eq!(
            state.rejected.load(Ordering::SeqCst),
            2,
            "both entries counted"
        );
    }

    #[test]
    fn entries_are_dropped_once_when_every_group_is_past_them() {
        let drops = Arc::new(AtomicUsize::new(0));
        struct Counted(Arc<AtomicUsize>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        #[derive(Default, Clone)]
        struct Sink(Arc<StdMutex<Vec<Marker<Sink>>>>);
        impl LogGroup for Sink {
            type Entry = Counted;
            fn push_marker(&self, marker: Marker<Self>) {
                self.0.lock().unwrap().push(marker);
            }
            fn handle(&self, _: &Counted) {}
            fn reject(&self, _: u64) {}
        }
        let sinks = [Sink::default(), Sink::default()];
        let log = Arc::new(BroadcastLog::new(sinks.iter().cloned()));
        let total = SEGMENT * 2 + 3;
        for _ in 0..total {
            log.append(Counted(drops.clone()), false);
        }
        let run = |s: &Sink| {
            let mut m = s.0.lock().unwrap().pop();
            while let Some(marker) = m {
                // SAFETY: the test runs the group.
                m = unsafe { marker.step() };
            }
        };
        run(&sinks[0]);
        assert_eq!(
            drops.load(Ordering::Relaxed),
            0,
            "group 1 holds the first segment"
        );
        run(&sinks[1]);
        assert_eq!(
            drops.load(Ordering::Relaxed),
            SEGMENT * 2,
            "both past two segments"
        );
        drop(log);
        drop(sinks);
        assert_eq!(drops.load(Ordering::Relaxed), total);
    }
}

#[cfg(all(test, cohort_loom))]
mod loom_model {
    //! The marker hand-off: a sender that appends and a group that runs its markers; no
    //! entry is left without a marker that handles it (no lost wake-up), none handled twice.

    use super::*;
    use loom::sync::Mutex as LoomMutex;
    use std::collections::VecDeque;

    #[derive(Default, Clone)]
    struct Group(Arc<GroupQueue>);
    #[derive(Default)]
    struct GroupQueue {
        queue: LoomMutex<VecDeque<Marker<Group>>>,
        handled: LoomMutex<Vec<u64>>,
    }
    impl std::ops::Deref for Group {
        type Target = GroupQueue;
        fn deref(&self) -> &GroupQueue {
            &self.0
        }
    }
    impl LogGroup for Group {
        type Entry = u64;
        fn push_marker(&self, marker: Marker<Self>) {
            self.queue.lock().unwrap().push_back(marker);
        }
        fn handle(&self, entry: &u64) {
            self.handled.lock().unwrap().push(*entry);
        }
        fn reject(&self, _: u64) {
            panic!("nothing is rejected in this model");
        }
    }

    fn drain(g: &Group) {
        loop {
            let next = g.queue.lock().unwrap().pop_front();
            let Some(marker) = next else { return };
            let mut m = Some(marker);
            while let Some(marker) = m {
                // SAFETY: one runner at a time: the consumer thread, then the final check.
                m = unsafe { marker.step() };
            }
        }
    }

    fn check(senders: u64, per_sender: u64, forced_every: u64) {
        loom::model(move || {
            let group = Group::default();
            let log = Arc::new(BroadcastLog::new([group.clone()]));
            let threads: Vec<_> = (0..senders)
                .map(|s| {
                    let log = log.clone();
                    loom::thread::spawn(move || {
                        for i in 0..per_sender {
                            let n = s * per_sender + i;
                            log.append(n, forced_every > 0 && n % forced_every == 0);
                        }
                    })
                })
                .collect();
            let consumer = {
                let group = group.clone();
                loom::thread::spawn(move || drain(&group))
            };
            for t in threads {
                t.join().unwrap();
            }
            consumer.join().unwrap();
            drain(&group);
            let mut handled = group.handled.lock().unwrap().clone();
            let count = handled.len();
            handled.sort_unstable();
            handled.dedup();
            assert_eq!(handled.len(), count, "an entry handled twice");
            assert_eq!(count as u64, senders * per_sender, "an entry never handled");
            assert!(
                group.queue.lock().unwrap().is_empty(),
                "markers left in the queue"
            );
        });
    }

    #[test]
    fn one_sender_coalesced_markers_lose_no_entry() {
        check(1, 3, 0);
    }

    #[test]
    fn two_senders_with_a_forced_entry_lose_no_entry() {
        check(2, 2, 3);
    }
}
