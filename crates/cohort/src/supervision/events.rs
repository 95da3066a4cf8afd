//! [`SupervisionEvent`]: what a supervisor reports to its events mailbox.

use crate::error::RegisterError;
use crate::runtime::coop::{CoopId, DeregReason, PanicNotice};
use std::sync::Arc;
use std::time::Duration;

/// What a supervisor did or saw, sent to the mailbox given to
/// [`SupervisorBuilder::events`](super::SupervisorBuilder::events). Every event is also counted
/// in [`RuntimeStats::supervision`](crate::RuntimeStats::supervision), events mailbox or not.
///
/// ```
/// use cohort::supervision::SupervisionEvent;
/// fn describe(e: &SupervisionEvent) -> String {
///     match e {
///         SupervisionEvent::ChildStarted { child, incarnation, .. } => format!("{child} #{incarnation} up"),
///         SupervisionEvent::ChildFailed { child, failure, .. } => format!("{child} failed: {failure}"),
///         SupervisionEvent::ChildExited { child, reason, .. } => format!("{child} ended: {reason:?}"),
///         SupervisionEvent::ChildRestarting { child, attempt, delay, .. } => {
///             format!("{child}: restart #{attempt} in {delay:?}")
///         }
///         SupervisionEvent::GaveUp { supervisor, restarts, within } => {
///             format!("{supervisor} gave up after {restarts} restarts in {within:?}")
///         }
///     }
/// }
/// # let _ = describe;
/// ```
#[derive(Debug, Clone)]
pub enum SupervisionEvent {
    /// A child's cooperation was registered (its first start or a restart).
    ChildStarted {
        /// The supervisor's name.
        supervisor: Arc<str>,
        /// The child's name.
        child: Arc<str>,
        /// 1 for the first start, then one more at each restart.
        incarnation: u64,
        /// The child's cooperation.
        coop: CoopId,
    },
    /// A child failed: it ended for a reason the supervisor counts as a failure, or it could
    /// not be started.
    ChildFailed {
        /// The supervisor's name.
        supervisor: Arc<str>,
        /// The child's name.
        child: Arc<str>,
        /// The incarnation that failed.
        incarnation: u64,
        /// What happened.
        failure: ChildFailure,
    },
    /// A child ended for a reason that is not a failure and is not restarted (a transient
    /// child's normal end, any end of a temporary child).
    ChildExited {
        /// The supervisor's name.
        supervisor: Arc<str>,
        /// The child's name.
        child: Arc<str>,
        /// Why its cooperation ended.
        reason: DeregReason,
    },
    /// A child will be started again after `delay`.
    ChildRestarting {
        /// The supervisor's name.
        supervisor: Arc<str>,
        /// The child's name.
        child: Arc<str>,
        /// The child's restarts within the intensity window, this one included.
        attempt: u32,
        /// The back-off before it starts.
        delay: Duration,
    },
    /// The supervisor exceeded its restart intensity: its cooperation ends with
    /// [`DeregReason::Escalated`], which the supervisor above it sees.
    GaveUp {
        /// The supervisor's name.
        supervisor: Arc<str>,
        /// The restarts it allowed within the window.
        restarts: u32,
        /// The window.
        within: Duration,
    },
}

/// How a child failed.
#[derive(Debug, Clone)]
pub enum ChildFailure {
    /// Its cooperation ended with `reason`; `panic` says which agent panicked during which
    /// message type or hook, and the panic message, when a panic ended it.
    Ended {
        /// Why the cooperation ended.
        reason: DeregReason,
        /// The panic, if one ended it.
        panic: Option<PanicNotice>,
    },
    /// It could not be started.
    StartFailed(StartError),
}

impl std::fmt::Display for ChildFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChildFailure::Ended {
                panic: Some(p),
                reason,
            } => write!(
                f,
                "{reason:?}: agent `{}` ({}) panicked in `{}`: {}",
                p.agent, p.agent_type, p.during, p.message
            ),
            ChildFailure::Ended { reason, .. } => write!(f, "ended: {reason:?}"),
            ChildFailure::StartFailed(e) => write!(f, "start failed: {e}"),
        }
    }
}

/// Why a child could not be started. Each counts as a failure (restarted under the same
/// intensity limit, so a child that can never start ends with the supervisor giving up).
#[derive(Debug, Clone, thiserror::Error)]
pub enum StartError {
    /// The factory panicked.
    #[error("the child's factory panicked: {0}")]
    FactoryPanicked(String),
    /// The factory added no agent.
    #[error("the child's factory built an empty cooperation: add at least one agent")]
    EmptyCoop,
    /// Registering the cooperation failed (an agent's `define` failed or panicked, a binder
    /// refused it).
    #[error("registering the child's cooperation failed: {0}")]
    Register(Arc<RegisterError>),
}
