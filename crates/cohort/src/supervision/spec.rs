//! [`ChildSpec`]: a supervised child, as a factory that builds its cooperation anew, and its
//! [`Restart`] type.

use crate::runtime::coop::Coop;
use std::fmt;
use std::sync::Arc;

/// When a child is restarted (OTP's restart types).
///
/// ```
/// use cohort::supervision::Restart;
/// assert_eq!(Restart::default(), Restart::Permanent);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Restart {
    /// Always restarted when it ends, whatever the reason (a normal end too), unless its
    /// supervisor or the environment is stopping.
    #[default]
    Permanent,
    /// Restarted only when it ends for a reason the supervisor counts as a failure
    /// ([`SupervisorBuilder::restart_on`](super::SupervisorBuilder::restart_on): a panic and an
    /// escalation by default); a normal end is final.
    Transient,
    /// Never restarted (and stopped, not restarted, when a sibling's failure restarts the
    /// others).
    Temporary,
}

/// The closure that builds a child's cooperation.
pub(super) type Factory = Box<dyn FnMut(&mut Coop) + Send>;

/// A supervised child: a name unique within its supervisor, a factory that adds the child's
/// agents to a fresh cooperation (called at the first start and at every restart, so each
/// incarnation starts from fresh state), and a [`Restart`] type.
///
/// The factory gets a cooperation that is already a child of the supervisor's and named
/// `supervisor/child`; it adds agents and may set binders and panic reactions. Whatever it
/// needs to share between incarnations (a named mailbox, a counter) it captures.
///
/// ```
/// use cohort::supervision::{ChildSpec, Restart};
/// use cohort::Agent;
///
/// struct Worker { jobs: u32 }
/// impl Agent for Worker {}
///
/// let spec = ChildSpec::new("worker", |coop| {
///     coop.add(Worker { jobs: 0 });
/// })
/// .restart(Restart::Transient);
/// assert_eq!(spec.name(), "worker");
/// ```
pub struct ChildSpec {
    pub(super) name: Arc<str>,
    pub(super) factory: Factory,
    pub(super) restart: Restart,
}

impl ChildSpec {
    /// A permanent child named `name`, built by `factory`.
    pub fn new(name: impl Into<String>, factory: impl FnMut(&mut Coop) + Send + 'static) -> Self {
        Self {
            name: Arc::from(name.into()),
            factory: Box::new(factory),
            restart: Restart::Permanent,
        }
    }

    /// Sets the restart type.
    pub fn restart(mut self, restart: Restart) -> Self {
        self.restart = restart;
        self
    }

    /// The child's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Debug for ChildSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildSpec")
            .field("name", &self.name)
            .field("restart", &self.restart)
            .finish_non_exhaustive()
    }
}
