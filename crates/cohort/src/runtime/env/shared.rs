//! [`EnvShared`]: the state every handle to one environment shares (cooperation count,
//! dispatchers, dead letters, named mailboxes, tracer) and how it stops.

use super::stats_thread::StatsThread;
use crate::dispatcher::{Binder, DispatcherCore, DispatcherHandle};
use crate::error::DispatcherError;
use crate::mailbox::IndirectMbox;
use crate::mailbox::dead_letter::{DeadLetter, DeadLetterHook, DeliveryFailure};
use crate::panic::PanicReaction;
use crate::runtime::coop::{CoopId, CoopInner, DeregReason};
use crate::stats::StatsSwitch;
use crate::trace::{self, MessageTracing, TraceEvent, TraceStep};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Finished {
    Running,
    /// Every cooperation is gone; dispatchers are shutting down.
    Done,
    /// Worker threads joined.
    Joined,
}

/// Mailboxes by name, held weakly (a name lives while someone holds its mailbox).
pub(super) type MboxNames = std::collections::HashMap<Arc<str>, std::sync::Weak<IndirectMbox>>;

/// An environment's identity, unique in the process: a binder carries its dispatcher's, so
/// that a cooperation refuses a dispatcher of another environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EnvId(u64);

impl EnvId {
    /// A new identity (process-wide counter: environments are few).
    pub(super) fn next() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        EnvId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// The state shared by every handle to one environment.
pub(crate) struct EnvShared {
    /// Unique in the process: what a binder names to say which environment its dispatcher
    /// belongs to.
    pub(super) id: EnvId,
    pub(super) root: Mutex<Option<Arc<CoopInner>>>,
    pub(super) default_binder: OnceLock<Binder>,
    pub(super) dispatchers: Mutex<Vec<Arc<dyn DispatcherCore>>>,
    pub(super) next_coop_id: AtomicU64,
    pub(super) coops: AtomicUsize,
    pub(super) autoshutdown: bool,
    pub(super) init_done: AtomicBool,
    pub(super) stopping: AtomicBool,
    pub(super) finished: Mutex<Finished>,
    pub(super) finished_cv: Condvar,
    pub(crate) panic_reaction: PanicReaction,
    pub(super) dead_letters: AtomicU64,
    pub(super) dead_letter_hook: Option<DeadLetterHook>,
    pub(super) panics: AtomicU64,
    /// What supervisors did (see [`crate::supervision`]).
    pub(crate) supervision: crate::stats::SupervisionCounters,
    pub(crate) worker_spin: crate::WorkerSpin,
    /// Agents of registered cooperations.
    pub(super) agents: AtomicUsize,
    /// Whether workers keep statistics.
    pub(super) stats_on: StatsSwitch,
    /// The thread that distributes statistics, while on.
    pub(super) stats_thread: Mutex<Option<StatsThread>>,
    /// Named mailboxes alive: the same name gives the same mailbox while anyone holds it.
    pub(super) named: Mutex<MboxNames>,
    /// Delayed and periodic messages, and the `cohort-timer` thread (started with the first).
    pub(crate) timers: Arc<crate::timer::TimerService>,
    /// `active_group` group names in use: name -> (dispatcher id, dispatcher name).
    pub(super) group_names: Mutex<std::collections::HashMap<String, (usize, String)>>,
    /// Named unique-subscribers mailboxes alive (a namespace of their own).
    pub(super) unique_named: Mutex<MboxNames>,
    /// The tokio runtime agents' futures run on (started on first use) and their table.
    pub(crate) futures: crate::future::AsyncRuntime,
    /// The message tracer, while tracing is on (see [`crate::trace`]).
    pub(super) tracer: RwLock<Option<Arc<MessageTracing>>>,
}

impl Drop for EnvShared {
    fn drop(&mut self) {
        if self.tracer.get_mut().is_ok_and(|t| t.is_some()) {
            trace::count(false);
        }
    }
}

impl EnvShared {
    pub(super) fn named_count(&self) -> usize {
        let names = self.named.lock().unwrap_or_else(|e| e.into_inner());
        names.values().filter(|w| w.strong_count() > 0).count()
    }

    pub(crate) fn stats_switch(&self) -> StatsSwitch {
        self.stats_on.clone()
    }

    pub(crate) fn agents_added(&self, n: usize) {
        self.agents.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn agents_removed(&self, n: usize) {
        self.agents.fetch_sub(n, Ordering::Relaxed);
    }

    /// Claims `group` for dispatcher `id`; the owner's name if another dispatcher has it.
    pub(crate) fn claim_group(&self, group: &str, id: usize, name: &str) -> Result<(), String> {
        let mut names = self.group_names.lock().unwrap_or_else(|e| e.into_inner());
        match names.get(group) {
            Some((owner, owner_name)) if *owner != id => Err(owner_name.clone()),
            _ => {
                names.insert(group.to_string(), (id, name.to_string()));
                Ok(())
            }
        }
    }

    /// Releases `group` if dispatcher `id` holds it.
    pub(crate) fn release_group(&self, group: &str, id: usize) {
        let mut names = self.group_names.lock().unwrap_or_else(|e| e.into_inner());
        if names.get(group).is_some_and(|(owner, _)| *owner == id) {
            names.remove(group);
        }
    }

    /// The root cooperation; `None` once the environment has stopped and been joined.
    pub(crate) fn root(&self) -> Option<Arc<CoopInner>> {
        self.root.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn default_binder(&self) -> Binder {
        self.default_binder
            .get()
            .expect("default dispatcher is created with the environment")
            .clone()
    }

    /// Registers a new dispatcher (it stops and joins with the environment) and returns its
    /// handle, whose binders belong to this environment.
    pub(crate) fn add_dispatcher(
        &self,
        d: Arc<dyn DispatcherCore>,
    ) -> Result<DispatcherHandle, DispatcherError> {
        let mut ds = self.dispatchers.lock().unwrap_or_else(|e| e.into_inner());
        if self.is_stopping()
            || *self.finished.lock().unwrap_or_else(|e| e.into_inner()) != Finished::Running
        {
            d.shutdown();
            return Err(DispatcherError::EnvironmentStopped);
        }
        ds.push(d.clone());
        Ok(DispatcherHandle::new(d, self.id))
    }

    /// The environment's identity, unique in the process.
    #[inline]
    pub(crate) fn id(&self) -> EnvId {
        self.id
    }

    pub(crate) fn next_coop_id(&self) -> CoopId {
        CoopId(self.next_coop_id.fetch_add(1, Ordering::Relaxed))
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    pub(crate) fn coop_registered(&self) {
        self.coops.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn coop_gone(&self) {
        self.coops.fetch_sub(1, Ordering::SeqCst);
    }

    /// The root lost its last child while the environment runs.
    pub(crate) fn last_coop_gone(&self) {
        if self.autoshutdown && self.init_done.load(Ordering::SeqCst) {
            self.stop();
        }
    }

    /// Deregisters every cooperation. Idempotent.
    pub(crate) fn stop(&self) {
        if self.stopping.swap(true, Ordering::AcqRel) {
            return;
        }
        // Snapshots sent during shutdown would only become dead letters.
        self.stop_stats();
        // Pending timers are cancelled; the timer thread ends.
        self.timers.shutdown();
        if let Some(root) = self.root() {
            root.deregister(DeregReason::Shutdown);
        }
    }

    /// Every cooperation is gone: shut the dispatchers down and wake the waiters.
    pub(crate) fn root_gone(&self) {
        let ds: Vec<_> = self
            .dispatchers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut f = self.finished.lock().unwrap_or_else(|e| e.into_inner());
        for d in &ds {
            d.shutdown();
        }
        *f = Finished::Done;
        self.finished_cv.notify_all();
    }

    /// Blocks until every cooperation is gone, then joins every worker thread.
    pub(super) fn wait(&self) {
        let mut f = self.finished.lock().unwrap_or_else(|e| e.into_inner());
        while *f == Finished::Running {
            f = self.finished_cv.wait(f).unwrap_or_else(|e| e.into_inner());
        }
        if *f == Finished::Joined {
            return;
        }
        drop(f);
        let ds: Vec<_> =
            std::mem::take(&mut *self.dispatchers.lock().unwrap_or_else(|e| e.into_inner()));
        for d in &ds {
            d.join();
        }
        // Every agent has finished (its futures cancelled): the embedded runtime stops.
        self.futures.shutdown();
        // Break the root <-> environment cycle.
        let root = self.root.lock().unwrap_or_else(|e| e.into_inner()).take();
        drop(root);
        *self.finished.lock().unwrap_or_else(|e| e.into_inner()) = Finished::Joined;
        self.finished_cv.notify_all();
    }

    /// Replaces the message tracer (`None`: tracing off).
    pub(super) fn set_tracer(&self, t: Option<MessageTracing>) {
        let mut slot = self.tracer.write().unwrap_or_else(|e| e.into_inner());
        let was_on = slot.is_some();
        *slot = t.map(Arc::new);
        if was_on != slot.is_some() {
            trace::count(slot.is_some());
        }
    }

    /// Reports a delivery step to the tracer, if this environment traces.
    #[cold]
    pub(crate) fn trace(&self, e: &TraceEvent<'_>) {
        let tracer = self
            .tracer
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(t) = tracer
            && t.emit(e).is_err()
        {
            self.count_panic();
            tracing::error!("the message tracer panicked");
        }
    }

    /// Reports a step of `msg`'s delivery to the tracer.
    #[cold]
    pub(crate) fn trace_step(
        &self,
        step: TraceStep,
        msg: &crate::message::Envelope,
        mbox: Option<crate::mailbox::MboxId>,
        agent: Option<crate::mailbox::MboxId>,
    ) {
        self.trace(&TraceEvent {
            step,
            message_type: msg.type_name(),
            mbox,
            agent,
            agent_name: None,
        })
    }

    #[cold]
    pub(crate) fn dead_letter(&self, message_type: &'static str, reason: DeliveryFailure) {
        self.dead_letter_with(&DeadLetter::bare(message_type, reason))
    }

    /// Counts a dead letter and hands it, with what is known of it, to the hook.
    #[cold]
    pub(crate) fn dead_letter_with(&self, letter: &DeadLetter<'_>) {
        let (message_type, reason) = (letter.message_type, letter.reason);
        if trace::on() {
            self.trace(&TraceEvent {
                step: TraceStep::Dropped(reason),
                message_type,
                mbox: letter.mbox,
                agent: letter.agent,
                agent_name: None,
            });
        }
        if let Some(hook) = &self.dead_letter_hook {
            // The hook runs on a sender's or a worker's thread: its panic must not unwind
            // through the runtime.
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(letter))).is_err() {
                self.count_panic();
                tracing::error!(message_type, %reason, "the dead-letter hook panicked");
            }
        }
        // Counted last, with release ordering: whoever sees the count (an
        // `Environment::dead_letters()` load) also sees what the trace and the hook did.
        self.dead_letters.fetch_add(1, Ordering::Release);
    }

    pub(crate) fn count_panic(&self) {
        self.panics.fetch_add(1, Ordering::Relaxed);
    }
}
