//! What happens when a handler panics.

/// The reaction to a panic in an agent's handler or hook.
///
/// Chosen per agent ([`Coop::set_agent_panic_reaction`](crate::Coop::set_agent_panic_reaction)),
/// else per cooperation ([`Coop::set_panic_reaction`](crate::Coop::set_panic_reaction)), else
/// for the environment ([`EnvironmentBuilder::panic_reaction`](crate::EnvironmentBuilder::panic_reaction)).
/// Every panic is caught, logged through `tracing` (agent, message type, panic message) and
/// counted ([`Environment::panics`](crate::Environment::panics)) before the reaction applies.
///
/// ```
/// use cohort::PanicReaction;
/// assert_eq!(PanicReaction::default(), PanicReaction::DeregisterCoop);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PanicReaction {
    /// Abort the whole process at once.
    Abort,
    /// Stop the environment: every cooperation deregisters with reason `Shutdown`.
    ShutdownEnvironment,
    /// Deregister the agent's cooperation with reason `Panic` (the default).
    #[default]
    DeregisterCoop,
    /// Log, count, and carry on with the next message.
    Ignore,
}
