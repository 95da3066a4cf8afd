//! [`Supervisor`]: the agent that starts its children's cooperations, hears when they end
//! (through `CoopDeregistered`) and restarts them as its policy says.

use super::backoff::{Backoff, Jitter};
use super::builder::SupervisorBuilder;
use super::events::{ChildFailure, StartError, SupervisionEvent};
use super::intensity::{Intensity, RestartWindow};
use super::spec::{ChildSpec, Restart};
use super::strategy::Strategy;
use crate::agent::{Agent, Context, DefineError};
use crate::error::RegisterError;
use crate::mailbox::Mbox;
use crate::runtime::coop::{CoopDeregistered, CoopHandle, CoopId, DeregReason};
use crate::stats::SupervisionCounters;
use crate::timer::TimerHandle;
use std::borrow::Cow;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

/// An agent that owns child cooperations built by factories and restarts them when they end
/// for a reason its policy names. See [the module documentation](super) for the whole
/// picture; build one with [`Supervisor::builder`].
///
/// ```
/// use cohort::supervision::{ChildSpec, Supervisor};
/// use cohort::{Agent, Context};
///
/// struct Once;
/// impl Agent for Once {
///     fn start(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.stop_environment();
///     }
/// }
///
/// cohort::launch(|env| {
///     let sup = Supervisor::builder("top")
///         .child(ChildSpec::new("once", |coop| {
///             coop.add(Once);
///         }))
///         .build()?;
///     let mut coop = env.new_coop();
///     coop.add(sup);
///     env.register_coop(coop)?;
///     Ok(())
/// })
/// .unwrap();
/// ```
pub struct Supervisor {
    pub(super) name: Arc<str>,
    pub(super) strategy: Strategy,
    pub(super) intensity: Intensity,
    pub(super) backoff: Backoff,
    pub(super) restart_on: Vec<DeregReason>,
    pub(super) events: Option<Mbox>,
    /// In start order.
    pub(super) children: Vec<Child>,
    /// The supervisor's restarts within its intensity window.
    pub(super) window: RestartWindow,
    pub(super) jitter: Jitter,
    /// Restarts waiting for their back-off or for siblings to stop.
    pub(super) batches: Vec<Batch>,
    pub(super) next_batch: u64,
    /// Set once the intensity is exceeded: nothing restarts after.
    pub(super) gave_up: bool,
}

/// One supervised child and where it is in its life.
pub(super) struct Child {
    pub(super) spec: ChildSpec,
    pub(super) state: ChildState,
    pub(super) incarnation: u64,
    /// This child's restarts within the intensity window (its back-off attempt).
    pub(super) recent: RestartWindow,
}

pub(super) enum ChildState {
    /// Not running: not started yet, or waiting in a batch for its restart.
    Idle,
    Running(CoopHandle),
    /// Stopped by the supervisor because a sibling failed; `restart` unless temporary.
    Stopping {
        coop: CoopHandle,
        restart: bool,
    },
    /// Ended and not to be restarted.
    Done,
}

impl ChildState {
    fn coop_id(&self) -> Option<CoopId> {
        match self {
            ChildState::Running(c) | ChildState::Stopping { coop: c, .. } => Some(c.id()),
            ChildState::Idle | ChildState::Done => None,
        }
    }
}

/// Children that restart together once `due` (the back-off elapsed) and none is stopping.
pub(super) struct Batch {
    id: u64,
    /// Indices, ascending (start order).
    members: Vec<usize>,
    due: bool,
    /// Cancels the back-off timer if the supervisor finishes first.
    _timer: Option<TimerHandle>,
}

/// The back-off of batch `.0` elapsed.
struct RestartDue(u64);

impl Supervisor {
    /// A builder for a supervisor named `name` (used in its children's cooperation names and
    /// in its events).
    ///
    /// ```
    /// let sup = cohort::supervision::Supervisor::builder("empty").build().unwrap();
    /// assert_eq!(sup.supervisor_name(), "empty");
    /// ```
    pub fn builder(name: impl Into<String>) -> SupervisorBuilder {
        SupervisorBuilder::new(name)
    }

    /// The supervisor's name.
    pub fn supervisor_name(&self) -> &str {
        &self.name
    }

    fn emit(&self, event: SupervisionEvent) {
        if let Some(m) = &self.events {
            m.send(event);
        }
    }

    fn in_batch(&self, i: usize) -> bool {
        self.batches.iter().any(|b| b.members.contains(&i))
    }

    /// True once nothing may start any more: given up, or the supervisor's own cooperation
    /// is deregistering (its children must not outlive it).
    fn closing(&self, ctx: &Context<'_, Self>) -> bool {
        self.gave_up || ctx.coop().dereg_reason().is_some()
    }

    /// Builds and registers child `i`'s cooperation; a failure to start is a failure.
    fn start_child(&mut self, i: usize, ctx: &mut Context<'_, Self>) {
        let env = ctx.environment();
        let counters = &env.shared().supervision;
        let child = &mut self.children[i];
        child.incarnation += 1;
        let mut coop = ctx.new_child_coop();
        coop.set_name(format!("{}/{}", self.name, child.spec.name));
        coop.notify_deregistered(ctx.self_mbox());
        let factory = &mut child.spec.factory;
        let result = match catch_unwind(AssertUnwindSafe(|| factory(&mut coop))) {
            Err(p) => Err(StartError::FactoryPanicked(panic_text(&*p))),
            Ok(()) if coop.is_empty() => Err(StartError::EmptyCoop),
            Ok(()) => match ctx.register_coop(coop) {
                Ok(h) => Ok(h),
                Err(RegisterError::ParentDeregistering | RegisterError::EnvironmentStopped) => {
                    // The supervisor is stopping: not a failure of the child.
                    child.state = ChildState::Done;
                    return;
                }
                Err(e) => Err(StartError::Register(Arc::new(e))),
            },
        };
        match result {
            Ok(handle) => {
                SupervisionCounters::bump(&counters.child_starts);
                let event = SupervisionEvent::ChildStarted {
                    supervisor: self.name.clone(),
                    child: child.spec.name.clone(),
                    incarnation: child.incarnation,
                    coop: handle.id(),
                };
                child.state = ChildState::Running(handle);
                self.emit(event);
            }
            Err(e) => {
                SupervisionCounters::bump(&counters.start_failures);
                SupervisionCounters::bump(&counters.child_failures);
                tracing::warn!(supervisor = %self.name, child = %child.spec.name, error = %e, "child failed to start");
                child.state = ChildState::Idle;
                let event = SupervisionEvent::ChildFailed {
                    supervisor: self.name.clone(),
                    child: child.spec.name.clone(),
                    incarnation: child.incarnation,
                    failure: ChildFailure::StartFailed(e),
                };
                self.emit(event);
                self.failed(i, ctx);
            }
        }
    }

    /// A child's cooperation is gone.
    fn on_gone(&mut self, m: &CoopDeregistered, ctx: &mut Context<'_, Self>) {
        if self.gave_up {
            return;
        }
        let Some(i) = self
            .children
            .iter()
            .position(|c| c.state.coop_id() == Some(m.id))
        else {
            return;
        };
        let closing = self.closing(ctx);
        match std::mem::replace(&mut self.children[i].state, ChildState::Idle) {
            ChildState::Stopping { restart, .. } => {
                if !restart || closing {
                    self.children[i].state = ChildState::Done;
                }
                self.run_ready(ctx);
            }
            ChildState::Running(handle) => {
                if closing || matches!(m.reason, DeregReason::Parent | DeregReason::Shutdown) {
                    self.children[i].state = ChildState::Done;
                    return;
                }
                let failure = self.restart_on.contains(&m.reason);
                let child = &self.children[i];
                if failure {
                    let env = ctx.environment();
                    SupervisionCounters::bump(&env.shared().supervision.child_failures);
                    self.emit(SupervisionEvent::ChildFailed {
                        supervisor: self.name.clone(),
                        child: child.spec.name.clone(),
                        incarnation: child.incarnation,
                        failure: ChildFailure::Ended {
                            reason: m.reason,
                            panic: handle.panic_notice(),
                        },
                    });
                } else {
                    self.emit(SupervisionEvent::ChildExited {
                        supervisor: self.name.clone(),
                        child: child.spec.name.clone(),
                        reason: m.reason,
                    });
                }
                let restart = match child.spec.restart {
                    Restart::Permanent => true,
                    Restart::Transient => failure,
                    Restart::Temporary => false,
                };
                if restart {
                    self.failed(i, ctx);
                } else {
                    self.children[i].state = ChildState::Done;
                }
            }
            other => self.children[i].state = other,
        }
    }

    /// Child `i` must restart: count it against the intensity, stop the siblings the
    /// strategy names, and schedule the batch after the back-off.
    fn failed(&mut self, i: usize, ctx: &mut Context<'_, Self>) {
        let env = ctx.environment();
        let shared = env.shared();
        let now = shared.timers.clock();
        if !self.window.admit(now, self.intensity) {
            return self.give_up(ctx);
        }
        let mut members = Vec::new();
        for j in self.strategy.affected(i, self.children.len()) {
            let c = &mut self.children[j];
            match std::mem::replace(&mut c.state, ChildState::Idle) {
                ChildState::Running(coop) => {
                    coop.deregister(DeregReason::Normal);
                    let restart = c.spec.restart != Restart::Temporary;
                    if restart {
                        members.push(j);
                    }
                    c.state = ChildState::Stopping { coop, restart };
                }
                ChildState::Idle => members.push(j),
                s @ ChildState::Stopping { restart: true, .. } => {
                    members.push(j);
                    c.state = s;
                }
                s => c.state = s,
            }
        }
        // A child restarts in one batch only: the newest.
        for b in &mut self.batches {
            b.members.retain(|m| !members.contains(m));
        }
        self.batches.retain(|b| !b.members.is_empty());
        let within = self.intensity.within();
        self.children[i].recent.record(now, within);
        let attempt = self.children[i].recent.count(now, within);
        let delay = self.backoff.delay(attempt, self.jitter.next());
        for &j in &members {
            SupervisionCounters::bump(&shared.supervision.restarts);
            self.emit(SupervisionEvent::ChildRestarting {
                supervisor: self.name.clone(),
                child: self.children[j].spec.name.clone(),
                attempt,
                delay,
            });
        }
        let id = self.next_batch;
        self.next_batch += 1;
        // Even an immediate restart goes through the mailbox: a child that fails as it
        // starts then loops through messages, never through recursion.
        let timer = if delay.is_zero() {
            ctx.send_self(RestartDue(id));
            None
        } else {
            Some(
                ctx.send_delayed(&ctx.self_mbox(), delay, RestartDue(id))
                    .cancel_on_drop(),
            )
        };
        self.batches.push(Batch {
            id,
            members,
            due: false,
            _timer: timer,
        });
    }

    fn give_up(&mut self, ctx: &mut Context<'_, Self>) {
        self.gave_up = true;
        self.batches.clear();
        let env = ctx.environment();
        SupervisionCounters::bump(&env.shared().supervision.give_ups);
        tracing::error!(
            supervisor = %self.name,
            max_restarts = self.intensity.max_restarts(),
            within = ?self.intensity.within(),
            "supervisor gave up: restart intensity exceeded"
        );
        self.emit(SupervisionEvent::GaveUp {
            supervisor: self.name.clone(),
            restarts: self.intensity.max_restarts(),
            within: self.intensity.within(),
        });
        ctx.deregister_coop(DeregReason::Escalated);
    }

    fn on_due(&mut self, id: u64, ctx: &mut Context<'_, Self>) {
        if let Some(b) = self.batches.iter_mut().find(|b| b.id == id) {
            b.due = true;
        }
        self.run_ready(ctx);
    }

    /// Starts every batch whose back-off elapsed and whose members have all stopped.
    fn run_ready(&mut self, ctx: &mut Context<'_, Self>) {
        loop {
            if self.closing(ctx) {
                self.batches.clear();
                return;
            }
            let ready = self.batches.iter().position(|b| {
                b.due
                    && b.members
                        .iter()
                        .all(|&j| !matches!(self.children[j].state, ChildState::Stopping { .. }))
            });
            let Some(k) = ready else { return };
            let batch = self.batches.remove(k);
            for j in batch.members {
                // A start failure earlier in this batch may have moved `j` to a newer batch.
                if self.gave_up || self.in_batch(j) {
                    continue;
                }
                if matches!(self.children[j].state, ChildState::Idle) {
                    self.start_child(j, ctx);
                }
            }
        }
    }
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&'static str>() {
        (*s).to_owned()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string panic payload>".to_owned()
    }
}

impl Agent for Supervisor {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, m: &CoopDeregistered, ctx| me.on_gone(m, ctx))?;
        ctx.on(|me: &mut Self, m: &RestartDue, ctx| me.on_due(m.0, ctx))?;
        Ok(())
    }

    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        for i in 0..self.children.len() {
            if self.closing(ctx) {
                return;
            }
            // A one-for-all failure of an earlier child already put this one in its batch.
            if matches!(self.children[i].state, ChildState::Idle) && !self.in_batch(i) {
                self.start_child(i, ctx);
            }
        }
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        // Pending back-off timers are cancelled: nothing restarts after the supervisor.
        self.batches.clear();
    }

    fn name(&self) -> Cow<'static, str> {
        Cow::Owned(format!("supervisor `{}`", self.name))
    }
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor")
            .field("name", &self.name)
            .field("strategy", &self.strategy)
            .field("intensity", &self.intensity)
            .field("backoff", &self.backoff)
            .field("children", &self.children.len())
            .finish_non_exhaustive()
    }
}
