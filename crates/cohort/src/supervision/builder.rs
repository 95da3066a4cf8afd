//! [`SupervisorBuilder`]: a supervisor's policy and children, checked when built.

use super::backoff::{Backoff, Jitter};
use super::error::SupervisorError;
use super::intensity::{Intensity, RestartWindow};
use super::spec::ChildSpec;
use super::strategy::Strategy;
use super::supervisor::{Child, ChildState, Supervisor};
use crate::mailbox::Mbox;
use crate::runtime::coop::DeregReason;
use std::sync::Arc;

/// Builds a [`Supervisor`]: its strategy, restart intensity, back-off, the reasons that count
/// as failures, where its events go, and its children in start order.
///
/// ```
/// use cohort::supervision::{Backoff, ChildSpec, Intensity, Strategy, Supervisor};
/// use cohort::{Agent, DeregReason};
/// use std::time::Duration;
///
/// struct Worker;
/// impl Agent for Worker {}
///
/// let sup = Supervisor::builder("workers")
///     .strategy(Strategy::OneForOne)
///     .intensity(Intensity::new(5, Duration::from_secs(10)))
///     .backoff(Backoff::exponential(Duration::from_millis(10), Duration::from_secs(1)).jitter(0.2))
///     .restart_on(DeregReason::User(3))
///     .child(ChildSpec::new("worker", |coop| {
///         coop.add(Worker);
///     }))
///     .build()
///     .unwrap();
/// # let _ = sup;
/// ```
#[derive(Debug)]
pub struct SupervisorBuilder {
    name: Arc<str>,
    strategy: Strategy,
    intensity: Intensity,
    backoff: Backoff,
    restart_on: Vec<DeregReason>,
    events: Option<Mbox>,
    children: Vec<ChildSpec>,
}

impl SupervisorBuilder {
    pub(super) fn new(name: impl Into<String>) -> Self {
        Self {
            name: Arc::from(name.into()),
            strategy: Strategy::default(),
            intensity: Intensity::default(),
            backoff: Backoff::default(),
            restart_on: vec![DeregReason::Panic, DeregReason::Escalated],
            events: None,
            children: Vec::new(),
        }
    }

    /// Which children restart when one fails (default [`Strategy::OneForOne`]).
    pub fn strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// How many restarts are allowed in a window before giving up (default
    /// [`Intensity::default`]: 3 in 5 s).
    pub fn intensity(mut self, intensity: Intensity) -> Self {
        self.intensity = intensity;
        self
    }

    /// The delay before each restart (default [`Backoff::None`]).
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Also counts `reason` as a failure (by default [`DeregReason::Panic`] and
    /// [`DeregReason::Escalated`] are). [`DeregReason::Parent`] and
    /// [`DeregReason::Shutdown`] never are: they mean the supervisor itself is stopping.
    pub fn restart_on(mut self, reason: DeregReason) -> Self {
        if !self.restart_on.contains(&reason) {
            self.restart_on.push(reason);
        }
        self
    }

    /// Sends every [`SupervisionEvent`](super::SupervisionEvent) to `mbox`.
    pub fn events(mut self, mbox: Mbox) -> Self {
        self.events = Some(mbox);
        self
    }

    /// Adds a child; children start in the order they are added (and stop in reverse).
    pub fn child(mut self, spec: ChildSpec) -> Self {
        self.children.push(spec);
        self
    }

    /// The supervisor, an agent to add to a cooperation.
    ///
    /// Errors: [`SupervisorError::DuplicateChild`], [`SupervisorError::ZeroWindow`],
    /// [`SupervisorError::InvalidBackoff`].
    pub fn build(self) -> Result<Supervisor, SupervisorError> {
        if self.intensity.within().is_zero() {
            return Err(SupervisorError::ZeroWindow);
        }
        self.backoff
            .check()
            .map_err(SupervisorError::InvalidBackoff)?;
        for (i, c) in self.children.iter().enumerate() {
            if self.children[..i].iter().any(|o| o.name == c.name) {
                return Err(SupervisorError::DuplicateChild(c.name.to_string()));
            }
        }
        let seed = Arc::as_ptr(&self.name) as *const u8 as u64 ^ self.children.len() as u64;
        Ok(Supervisor {
            name: self.name,
            strategy: self.strategy,
            intensity: self.intensity,
            backoff: self.backoff,
            restart_on: self.restart_on,
            events: self.events,
            children: self
                .children
                .into_iter()
                .map(|spec| Child {
                    spec,
                    state: ChildState::Idle,
                    incarnation: 0,
                    recent: RestartWindow::default(),
                })
                .collect(),
            window: RestartWindow::default(),
            jitter: Jitter::new(seed),
            batches: Vec::new(),
            next_batch: 0,
            gave_up: false,
        })
    }
}
