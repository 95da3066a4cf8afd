//! Supervision: cooperations that restart what failed, with strategies, limits and back-off.
//!
//! A [`Supervisor`] is an agent. It owns child cooperations, each built by a factory
//! ([`ChildSpec`]) that adds agents to a fresh cooperation, so a restarted agent starts from
//! fresh state. Each child cooperation is a child of the supervisor's own and notifies the
//! supervisor when it is gone ([`CoopDeregistered`](crate::CoopDeregistered)); nothing is
//! added to the message path: a supervised agent handles messages exactly as any other.
//!
//! When a child's cooperation ends, the supervisor looks at the reason:
//! - a reason in its failure set ([`SupervisorBuilder::restart_on`]:
//!   [`DeregReason::Panic`] and [`DeregReason::Escalated`] by default, add any
//!   [`DeregReason::User`] code) is a failure; the child's [`Restart`] type decides
//!   whether it comes back (permanent and transient: yes; temporary: no);
//! - any other reason is a normal end: only a permanent child comes back;
//! - [`DeregReason::Parent`] and [`DeregReason::Shutdown`] mean the supervisor or the
//!   environment is stopping: nothing restarts.
//!
//! A restart follows the [`Strategy`] (one-for-one, one-for-all, rest-for-one: siblings it
//! names are deregistered with [`DeregReason::Normal`] and restarted with the failed child,
//! in start order), waits for the [`Backoff`] on the environment's timers, and counts
//! against the [`Intensity`]: one restart too many and the supervisor gives up; its own
//! cooperation ends with [`DeregReason::Escalated`], which a supervisor above it counts as
//! a failure, up the tree. Each step is a [`SupervisionEvent`] (to the mailbox given to
//! [`SupervisorBuilder::events`]) and a count in
//! [`RuntimeStats::supervision`](crate::RuntimeStats::supervision).
//!
//! [`DeregReason::Escalated`]: crate::DeregReason::Escalated
//! [`DeregReason::Normal`]: crate::DeregReason::Normal
//! [`DeregReason::Panic`]: crate::DeregReason::Panic
//! [`DeregReason::Parent`]: crate::DeregReason::Parent
//! [`DeregReason::Shutdown`]: crate::DeregReason::Shutdown
//! [`DeregReason::User`]: crate::DeregReason::User
//!
//! # Addressing a supervised agent
//!
//! A restarted agent is a new agent with a new direct mailbox: sends to the old
//! incarnation's direct mailbox are dead letters (`ReceiverGone`), counted. Clients address
//! a supervised agent through a mailbox that outlives incarnations: a named mailbox
//! ([`Environment::named_mbox`](crate::Environment::named_mbox)) or a unique-subscribers
//! mailbox the factory captures, to which each incarnation subscribes in `define`. The
//! failed incarnation still handles what its queue held when it failed (a cooperation
//! drains before `finish`); messages published while no incarnation is subscribed are dead
//! letters (`NoSubscriber`), counted.
//!
//! ```
//! use cohort::supervision::{ChildSpec, SupervisionEvent, Supervisor};
//! use cohort::testing::TestEnv;
//! use cohort::{Agent, Context, DefineError, Mbox};
//!
//! struct Job(u32);
//!
//! /// Fails on job 3; its restarted incarnation handles the rest.
//! struct Worker { jobs: Mbox }
//! impl Agent for Worker {
//!     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
//!         let jobs = self.jobs.clone();
//!         ctx.subscribe(&jobs, |_, j: &Job, _| {
//!             assert_ne!(j.0, 3, "job 3 fails");
//!         })?;
//!         Ok(())
//!     }
//! }
//!
//! let t = TestEnv::new();
//! let jobs = t.environment().named_mbox("jobs"); // outlives every incarnation
//! let events = t.probe::<SupervisionEvent>().unwrap();
//! let j = jobs.clone();
//! let sup = Supervisor::builder("workers")
//!     .events(events.mbox())
//!     .child(ChildSpec::new("worker", move |coop| {
//!         coop.add(Worker { jobs: j.clone() });
//!     }))
//!     .build()
//!     .unwrap();
//! let mut coop = t.new_coop();
//! coop.add(sup);
//! t.register(coop).unwrap();
//! for n in 1..=5 {
//!     jobs.send(Job(n));
//!     t.run_until_quiet().unwrap();
//! }
//! let s = t.environment().stats().supervision;
//! assert_eq!((s.child_starts, s.child_failures, s.restarts), (2, 1, 1));
//! assert_eq!(events.len(), 4); // started, failed, restarting, started
//! //! ```

mod backoff;
mod builder;
mod error;
mod events;
mod intensity;
mod spec;
mod strategy;
mod supervisor;

pub use backoff::Backoff;
pub use builder::SupervisorBuilder;
pub use error::SupervisorError;
pub use events::{ChildFailure, StartError, SupervisionEvent};
pub use intensity::Intensity;
pub use spec::{ChildSpec, Restart};
pub use strategy::Strategy;
pub use supervisor::Supervisor;
