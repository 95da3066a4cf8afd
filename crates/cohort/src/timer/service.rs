//! The timer service of one environment: the queue of pending timers and the `cohort-timer`
//! thread that fires them.
//!
//! The thread starts with the first timer and parks (a condition-variable wait with a
//! timeout) until the earliest deadline: no polling, no busy loop, so an environment with one
//! 1 ms periodic timer wakes 1,000 times a second and no more (SObjectizer issue #97).
//!
//! Locks: the queue lock (`state`) is never held while a timer fires, while a message or a
//! task is dropped, or while a task's own lock is taken (the compaction only *tries* a
//! task's lock); a task's lock is held while its message is delivered. So the only order is
//! task lock → queue lock (a dead-letter hook scheduling a timer), and no cycle exists.

use super::Entry;
use super::queue::{Queue, TimerQueue};
use super::task::{Fired, Task};
use crate::defaults;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Why a timer could not be scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The environment is stopping.
    Stopped,
    /// The `cohort-timer` thread could not be spawned.
    NoThread,
}

struct State {
    queue: Queue,
    next_seq: u64,
    /// The deadline the thread sleeps until (`u64::MAX`: no deadline; 0: awake). A timer
    /// scheduled earlier than this wakes the thread.
    sleeping_until: u64,
    started: bool,
    stopped: bool,
}

/// One environment's timers.
pub(crate) struct TimerService {
    epoch: Instant,
    state: Mutex<State>,
    wake: Condvar,
    /// Set (under `state`) when the environment stops; read by the firing loop.
    stopped: AtomicBool,
    /// Active timers: scheduled and neither fired for the last time nor cancelled.
    active: AtomicUsize,
    /// Entries in the queue whose timer was cancelled (an estimate: may lag a little).
    cancelled: AtomicIsize,
    /// Entries in the queue (updated under `state`).
    queued: AtomicUsize,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Set before the first timer by a test environment: time is `virtual_now`, moved only
    /// by [`advance_to`](Self::advance_to), and no thread is spawned.
    manual: AtomicBool,
    virtual_now: AtomicU64,
}

impl TimerService {
    pub(crate) fn new(kind: TimerQueue) -> Arc<Self> {
        Arc::new(Self {
            epoch: Instant::now(),
            state: Mutex::new(State {
                queue: Queue::new(kind),
                next_seq: 0,
                sleeping_until: u64::MAX,
                started: false,
                stopped: false,
            }),
            wake: Condvar::new(),
            stopped: AtomicBool::new(false),
            active: AtomicUsize::new(0),
            cancelled: AtomicIsize::new(0),
            queued: AtomicUsize::new(0),
            thread: Mutex::new(None),
            manual: AtomicBool::new(false),
            virtual_now: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Nanoseconds since the service was created.
    fn now(&self) -> u64 {
        if self.manual.load(Ordering::Relaxed) {
            return self.virtual_now.load(Ordering::Relaxed);
        }
        nanos(self.epoch.elapsed())
    }

    /// The timers' clock: time since the service was created, or the virtual time of a test
    /// environment (supervisors measure restart windows with it, so tests can move it).
    pub(crate) fn clock(&self) -> Duration {
        Duration::from_nanos(self.now())
    }

    /// Switches to a manual clock (virtual time starting at zero) fired by
    /// [`advance_to`](Self::advance_to) on the caller's thread: for the test kit, before
    /// any timer is scheduled.
    pub(crate) fn use_manual_clock(&self) {
        self.manual.store(true, Ordering::Relaxed);
    }

    /// The manual clock's time.
    pub(crate) fn virtual_now(&self) -> Duration {
        Duration::from_nanos(self.virtual_now.load(Ordering::Relaxed))
    }

    /// The earliest pending deadline, on the service's clock.
    pub(crate) fn next_deadline(&self) -> Option<Duration> {
        self.lock().queue.next_deadline().map(Duration::from_nanos)
    }

    /// Manual clock: fires, on this thread and in deadline order, every timer due up to
    /// `target`, the clock standing at each one's deadline when it fires; then sets the
    /// clock to `target` (never backwards).
    pub(crate) fn advance_to(&self, target: Duration) {
        let target = nanos(target);
        let (mut due, mut again) = (Vec::new(), Vec::new());
        loop {
            {
                let mut st = self.lock();
                if st.stopped {
                    break;
                }
                match st.queue.next_deadline() {
                    Some(at) if at <= target => {
                        self.virtual_now.fetch_max(at, Ordering::Relaxed);
                        // One deadline at a time, so a timer scheduled while firing fires in turn.
                        st.queue.pop_due(at, &mut due);
                        self.queued.store(st.queue.len(), Ordering::Relaxed);
                    }
                    _ => break,
                }
            }
            self.fire(&mut due, &mut again);
        }
        self.virtual_now.fetch_max(target, Ordering::Relaxed);
    }

    /// Active timers.
    pub(crate) fn active(&self) -> usize {
        self.active.load(Ordering::Relaxed)
    }

    /// Schedules `task` to fire `delay` from now.
    pub(crate) fn schedule(
        self: &Arc<Self>,
        delay: Duration,
        task: Arc<dyn Task>,
    ) -> Result<(), Refused> {
        let at = self.now().saturating_add(nanos(delay));
        let mut st = self.lock();
        if st.stopped {
            return Err(Refused::Stopped);
        }
        if !st.started {
            if !self.manual.load(Ordering::Relaxed) {
                self.spawn()?;
            }
            st.started = true;
        }
        let seq = st.next_seq;
        st.next_seq += 1;
        st.queue.push(Entry { at, seq, task });
        self.active.fetch_add(1, Ordering::Relaxed);
        self.queued.store(st.queue.len(), Ordering::Relaxed);
        if at < st.sleeping_until {
            // Earlier than what the thread waits for (or it waits for nothing): wake it.
            self.wake.notify_one();
        }
        Ok(())
    }

    fn spawn(self: &Arc<Self>) -> Result<(), Refused> {
        let me = self.clone();
        match std::thread::Builder::new()
            .name("cohort-timer".into())
            .spawn(move || me.run())
        {
            Ok(h) => {
                *self.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(h);
                Ok(())
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot spawn the cohort-timer thread");
                Err(Refused::NoThread)
            }
        }
    }

    /// A handle cancelled an active timer (still in the queue, or about to fire).
    pub(crate) fn cancelled_one(&self) {
        self.active.fetch_sub(1, Ordering::Relaxed);
        self.cancelled.fetch_add(1, Ordering::Relaxed);
        self.maybe_compact();
    }

    /// Removes cancelled entries once they are at least [`defaults::TIMER_COMPACT_MIN`] and
    /// outnumber the live ones: memory follows the active timers, at amortised O(1) per
    /// cancel.
    fn maybe_compact(&self) {
        let cancelled = self.cancelled.load(Ordering::Relaxed).max(0) as usize;
        if cancelled < defaults::TIMER_COMPACT_MIN
            || cancelled * 2 < self.queued.load(Ordering::Relaxed)
        {
            return;
        }
        let mut removed = Vec::new();
        {
            let mut st = self.lock();
            st.queue.remove_inactive(&mut removed);
            self.queued.store(st.queue.len(), Ordering::Relaxed);
        }
        self.cancelled
            .fetch_sub(removed.len() as isize, Ordering::Relaxed);
        drop(removed); // outside the lock
    }

    /// The `cohort-timer` thread.
    fn run(&self) {
        let mut due = Vec::new();
        let mut again = Vec::new();
        loop {
            {
                let mut st = self.lock();
                loop {
                    if st.stopped {
                        return;
                    }
                    let now = self.now();
                    match st.queue.next_deadline() {
                        Some(at) if at <= now => {
                            st.queue.pop_due(now, &mut due);
                            break;
                        }
                        Some(at) => {
                            st.sleeping_until = at;
                            st = self
                                .wake
                                .wait_timeout(st, Duration::from_nanos(at - now))
                                .unwrap_or_else(|e| e.into_inner())
                                .0;
                        }
                        None => {
                            st.sleeping_until = u64::MAX;
                            st = self.wake.wait(st).unwrap_or_else(|e| e.into_inner());
                        }
                    }
                }
                st.sleeping_until = 0;
                self.queued.store(st.queue.len(), Ordering::Relaxed);
            }
            self.fire(&mut due, &mut again);
            self.maybe_compact();
        }
    }

    /// Fires the `due` timers and queues again the periodic ones (`again` is scratch).
    fn fire(&self, due: &mut Vec<Entry>, again: &mut Vec<Entry>) {
        let now = self.now();
        for e in due.drain(..) {
            if self.stopped.load(Ordering::Acquire) {
                // `stop` may be running on this very thread (a dead-letter hook): what
                // it could not reach is cancelled here.
                if e.task.cancel() {
                    self.active.fetch_sub(1, Ordering::Relaxed);
                }
                continue;
            }
            match e.task.fire(&self.active) {
                Fired::Done => {}
                Fired::Again(period) => {
                    let mut at = e.at.saturating_add(period);
                    if at <= now {
                        // Late by more than a period: no burst to catch up.
                        at = now.saturating_add(period);
                    }
                    again.push(Entry { at, ..e });
                }
                Fired::Cancelled => {
                    self.cancelled.fetch_sub(1, Ordering::Relaxed);
                }
            }
        }
        if !again.is_empty() {
            let mut st = self.lock();
            if !st.stopped {
                for mut e in again.drain(..) {
                    e.seq = st.next_seq;
                    st.next_seq += 1;
                    st.queue.push(e);
                }
                self.queued.store(st.queue.len(), Ordering::Relaxed);
            }
        }
        for e in again.drain(..) {
            // Stopped meanwhile.
            if e.task.cancel() {
                self.active.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// The environment stops: every pending timer is cancelled, the thread ends (and is
    /// joined, unless this is it). Idempotent.
    pub(crate) fn shutdown(&self) {
        let mut all = Vec::new();
        {
            let mut st = self.lock();
            st.stopped = true;
            self.stopped.store(true, Ordering::Release);
            st.queue.take_all(&mut all);
            self.queued.store(0, Ordering::Relaxed);
            self.wake.notify_all();
        }
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(h) = thread
            && h.thread().id() != std::thread::current().id()
        {
            let _ = h.join();
        }
        for e in all {
            if e.task.cancel() {
                self.active.fetch_sub(1, Ordering::Relaxed);
            }
        }
        self.cancelled.store(0, Ordering::Relaxed);
    }
}

/// A duration in nanoseconds, saturating (a delay of `Duration::MAX` never fires).
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
