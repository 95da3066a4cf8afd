//! Cooperations: agents registered and deregistered as a unit.
//!
//! [`Coop`] is the builder: add agents, choose binders, then register it (through
//! [`Environment::register_coop`](crate::Environment::register_coop) or
//! [`Context::register_coop`](crate::Context::register_coop)). Registration is all or nothing.
//! [`CoopHandle`] deregisters it later.
//!
//! Deregistration runs children first: a cooperation's agents receive `finish` only once all
//! its child cooperations are fully gone. A cooperation is fully gone when every agent has
//! run `finish`; then its parent hears of it, and its `notify_deregistered` mailboxes receive
//! [`CoopDeregistered`].

mod builder;
mod named_subs;
mod register;
mod registered;
mod wait;

pub use builder::{AgentHandle, Coop};
pub use registered::CoopHandle;
pub(crate) use registered::{CoopInner, finish_epoch};
pub use wait::{CoopGone, CoopWaitError};

/// A cooperation's identity, unique within its environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CoopId(pub u64);

/// Why a cooperation was deregistered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeregReason {
    /// Its work is done.
    Normal,
    /// The environment is stopping.
    Shutdown,
    /// Its parent cooperation is deregistering.
    Parent,
    /// One of its agents panicked (reaction
    /// [`PanicReaction::DeregisterCoop`](crate::PanicReaction::DeregisterCoop)).
    Panic,
    /// An application-defined code.
    User(u32),
    /// A supervisor gave up: its children failed more often than its restart intensity
    /// allows (see [`crate::supervision`]); the supervisor above it decides what follows.
    Escalated,
}

/// What the runtime knows of the panic that deregistered a cooperation
/// ([`CoopHandle::panic_notice`]).
///
/// ```
/// use cohort::{Agent, Context, DeregReason};
/// use std::time::Duration;
///
/// struct Fragile;
/// impl Agent for Fragile {
///     fn start(&mut self, _: &mut Context<'_, Self>) {
///         panic!("no luck");
///     }
/// }
///
/// let env = cohort::Environment::builder().start().unwrap();
/// let mut coop = env.new_coop();
/// coop.add(Fragile);
/// let handle = env.register_coop(coop).unwrap();
/// handle.wait_gone(Duration::from_secs(10)).unwrap();
/// let notice = handle.panic_notice().unwrap();
/// assert_eq!(notice.message, "no luck");
/// assert_eq!(notice.during, "start");
/// assert!(notice.agent_type.ends_with("Fragile"));
/// env.stop();
/// env.wait();
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PanicNotice {
    /// The agent's name ([`Agent::name`](crate::Agent::name)).
    pub agent: String,
    /// The agent's Rust type.
    pub agent_type: &'static str,
    /// The message type whose handler panicked, or the hook (`start`, `finish`, `on_enter`,
    /// `on_exit`, `dead-letter handler`).
    pub during: &'static str,
    /// The panic message (`<non-string panic payload>` if it was not a string).
    pub message: String,
}

/// Sent to each `notify_registered` mailbox once a cooperation is registered.
#[derive(Debug, Clone)]
pub struct CoopRegistered {
    /// The cooperation.
    pub id: CoopId,
    /// Its name, if it was given one.
    pub name: Option<String>,
}

/// Sent to each `notify_deregistered` mailbox once a cooperation is fully gone (every agent
/// has run `finish`).
#[derive(Debug, Clone)]
pub struct CoopDeregistered {
    /// The cooperation.
    pub id: CoopId,
    /// Its name, if it was given one.
    pub name: Option<String>,
    /// Why it was deregistered.
    pub reason: DeregReason,
}

/// A lifecycle step run by a worker for one group of agents.
pub(crate) enum Step {
    Start,
    /// The registration failed: the messages kept for the group's agents until their
    /// `start` (1:N deliveries while it registered) become `NotRegistered` dead letters.
    Abandon,
    /// `drained`: the queue's remote half was already moved ahead of this demand once.
    Finish {
        drained: bool,
    },
}

#[cfg(test)]
mod sizes {
    //! The memory budget of skynet (a million agents in 256 MiB) rests on these sizes.

    use crate::agent::cell::{AgentBody, AgentCell};

    #[test]
    fn agent_cell_fits_a_128_byte_allocation() {
        // A skynet node: parent mailbox and five counters (48 bytes). Its subscription table
        // is shared with the other nodes (`Subscriptions::share`), so the cell is all it has.
        struct Node {
            _parent: crate::Mbox,
            _counters: [u64; 5],
        }
        impl crate::Agent for Node {}
        // An `Arc` adds 16 bytes and glibc 8: 104 + 16 + 8 = 128.
        assert!(std::mem::size_of::<AgentCell<AgentBody<Node>>>() <= 104);
    }

    #[test]
    fn a_cooperation_pays_16_bytes_for_its_multi_consumer_subscriptions() {
        // Skynet registers a cooperation per ten agents.
        assert_eq!(std::mem::size_of::<super::named_subs::NamedSubs>(), 16);
    }

    #[test]
    fn message_demand_is_40_bytes() {
        assert_eq!(std::mem::size_of::<crate::agent::demand::Demand>(), 40);
    }
}
