//! The typed errors of the runtime. Each message says what went wrong and what to fix.

use std::io;

/// Subscribing a handler failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SubscribeError {
    /// A handler for this message type on this mailbox already exists.
    #[error(
        "a handler for `{message_type}` on this mailbox already exists in the default state: subscribe once per (mailbox, message type, state)"
    )]
    AlreadySubscribed {
        /// The message type's name.
        message_type: &'static str,
    },
    /// A handler (or transfer, or suppression) for this message type on this mailbox already
    /// exists in this state.
    #[error(
        "a handler for `{message_type}` on this mailbox already exists in state `{state}`: subscribe once per (mailbox, message type, state)"
    )]
    AlreadySubscribedInState {
        /// The message type's name.
        message_type: &'static str,
        /// The state's name.
        state: String,
    },
    /// The state belongs to another agent.
    #[error(
        "state {state} belongs to another agent: subscribe in states created by this agent's own context"
    )]
    ForeignState {
        /// The state, as its `Debug` shows it.
        state: String,
    },
    /// An agent can only subscribe to its own direct mailbox (or to multi-consumer ones).
    #[error(
        "cannot subscribe to `{message_type}` on another agent's direct mailbox: subscribe on a named mailbox, or let that agent subscribe"
    )]
    ForeignDirectMailbox {
        /// The message type's name.
        message_type: &'static str,
    },
    /// A custom mailbox ([`CustomMbox`](crate::CustomMbox)) delivers by itself: agents cannot
    /// subscribe to it.
    #[error(
        "cannot subscribe to `{message_type}` on a custom mailbox: it delivers messages itself; subscribe on a named mailbox it forwards to"
    )]
    NotSubscribable {
        /// The message type's name.
        message_type: &'static str,
    },
    /// A unique-subscribers mailbox already has a subscriber for this message type.
    #[error(
        "unique-subscribers mailbox `{mailbox}` already has a subscriber for `{message_type}`: one agent per message type there (use a multi-consumer mailbox for several)"
    )]
    UniqueSubscriberTaken {
        /// The message type's name.
        message_type: &'static str,
        /// The mailbox's name.
        mailbox: String,
    },
    /// A mutable message has one receiver: a multi-consumer mailbox cannot carry it.
    #[error(
        "cannot subscribe to mutable `{message_type}` on multi-consumer mailbox `{mailbox}`: use a unique-subscribers mailbox or the agent's direct mailbox"
    )]
    MutableOnMultiConsumer {
        /// The message type's name.
        message_type: &'static str,
        /// The mailbox's name.
        mailbox: String,
    },
    /// Delivery filters exist only on multi-consumer and unique-subscribers mailboxes.
    #[error(
        "cannot set a delivery filter for `{message_type}` on a direct mailbox: filter in the handler, or subscribe through a named mailbox"
    )]
    FilterOnDirectMailbox {
        /// The message type's name.
        message_type: &'static str,
    },
    /// A delivery filter belongs to a subscription, which must exist first.
    #[error(
        "no subscription to `{message_type}` on this mailbox to filter: subscribe first, then set the delivery filter"
    )]
    FilterWithoutSubscription {
        /// The message type's name.
        message_type: &'static str,
    },
}

/// Declaring message limits failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum LimitError {
    /// Two limits for one message type.
    #[error("two message limits for `{message_type}`: declare one limit per message type")]
    DuplicateType {
        /// The message type's name.
        message_type: &'static str,
    },
    /// Two default limits.
    #[error("two default message limits: declare at most one `default_*` limit")]
    DuplicateDefault,
    /// Limits were already set for this agent.
    #[error(
        "message limits already set for this agent: call `set_message_limits` once, with every limit"
    )]
    AlreadySet,
    /// Limits are declared in `define`, before the agent can receive messages.
    #[error("message limits can only be set in `define`: move the call there")]
    NotInDefine,
}

/// A send was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SendError {
    /// A mutable message has exactly one receiver: a multi-consumer mailbox cannot carry it.
    #[error(
        "mutable message `{message_type}` sent to multi-consumer mailbox `{mailbox}`: send it to an agent's direct mailbox, or send it immutable with `send`"
    )]
    MutableToMultiConsumer {
        /// The message type.
        message_type: &'static str,
        /// The mailbox's name.
        mailbox: String,
    },
}

/// Binding an agent to a dispatcher failed.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// The dispatcher was shut down.
    #[error("dispatcher `{name}` was shut down: bind to a running dispatcher")]
    DispatcherShutDown {
        /// The dispatcher's name.
        name: String,
    },
    /// The group name belongs to another `active_group` dispatcher of the environment.
    #[error(
        "group `{group}` already belongs to active_group dispatcher `{owner}`: use another group name or that dispatcher"
    )]
    GroupTaken {
        /// The group name.
        group: String,
        /// The dispatcher that owns it.
        owner: String,
    },
    /// The binder's dispatcher belongs to another environment than the cooperation's.
    #[error(
        "dispatcher `{name}` belongs to another environment: bind the cooperation's agents to a dispatcher built with the cooperation's own environment"
    )]
    OtherEnvironment {
        /// The dispatcher's name.
        name: String,
    },
    /// The dispatcher could not start a worker thread.
    #[error("dispatcher `{name}` could not start a worker thread: {source}")]
    Spawn {
        /// The dispatcher's name.
        name: String,
        /// The operating system's error.
        source: io::Error,
    },
}

/// Registering a cooperation failed; nothing of it was started.
#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    /// The cooperation has no agent.
    #[error("the cooperation has no agent: add at least one agent before registering it")]
    EmptyCoop,
    /// The environment is stopping or stopped.
    #[error("the environment is stopping: register cooperations before calling stop()")]
    EnvironmentStopped,
    /// The parent cooperation is deregistering or gone.
    #[error("the parent cooperation is deregistering: a child cannot join it")]
    ParentDeregistering,
    /// The parent cooperation belongs to another environment.
    #[error(
        "the parent cooperation belongs to another environment: set a parent registered in the cooperation's own environment"
    )]
    ParentInOtherEnvironment,
    /// An agent's `define` returned an error or panicked.
    #[error("agent #{index} `{agent}` failed in define: {reason}")]
    Define {
        /// The agent's name.
        agent: String,
        /// Its position in the cooperation (order of `add`).
        index: usize,
        /// What went wrong.
        reason: String,
    },
    /// An agent could not be bound to its dispatcher.
    #[error("agent #{index} `{agent}` could not be bound: {source}")]
    Bind {
        /// The agent's name.
        agent: String,
        /// Its position in the cooperation (order of `add`).
        index: usize,
        /// Why binding failed.
        source: BindError,
    },
}

/// Creating a dispatcher (or a binder with parameters) failed.
#[derive(Debug, thiserror::Error)]
pub enum DispatcherError {
    /// A parameter is out of its range.
    #[error("dispatcher `{dispatcher}`: invalid `{parameter}`: {reason}")]
    InvalidParameter {
        /// The dispatcher's name.
        dispatcher: String,
        /// The parameter's name, as its builder method is called.
        parameter: &'static str,
        /// What is wrong and what to use instead.
        reason: String,
    },
    /// The environment is stopping or stopped.
    #[error("the environment is stopping: create dispatchers before calling stop()")]
    EnvironmentStopped,
    /// A worker thread could not be started.
    #[error("dispatcher `{name}` could not start a worker thread: {source}")]
    Spawn {
        /// The dispatcher's name.
        name: String,
        /// The operating system's error.
        source: io::Error,
    },
}

impl DispatcherError {
    /// An invalid parameter error.
    pub(crate) fn invalid(
        dispatcher: &str,
        parameter: &'static str,
        reason: impl Into<String>,
    ) -> Self {
        DispatcherError::InvalidParameter {
            dispatcher: dispatcher.to_string(),
            parameter,
            reason: reason.into(),
        }
    }
}

/// Launching an environment failed.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The default dispatcher could not be created.
    #[error("could not create the default dispatcher: {0}")]
    Dispatcher(#[from] DispatcherError),
    /// The init function returned an error; the environment was stopped.
    #[error("the init function failed: {0}")]
    Init(Box<dyn std::error::Error + Send + Sync + 'static>),
}

/// Running a future for an agent, or asking another agent without blocking, was refused.
#[derive(Debug, Clone, Copy, thiserror::Error, PartialEq, Eq)]
pub enum AsyncError {
    /// The agent's cooperation has begun to deregister (or the agent has finished): nothing
    /// it starts now could deliver to it.
    #[error(
        "the agent is finishing (its cooperation is deregistering): spawn futures and ask only from an agent that runs"
    )]
    AgentFinishing,
    /// The environment has stopped: its tokio runtime is shut down.
    #[error(
        "the environment has stopped and its async runtime is shut down: spawn while the environment runs"
    )]
    EnvironmentStopped,
    /// Asking from `define`: the agent takes no event before it starts.
    #[error("cannot ask from `define`: ask from `start` or a handler")]
    AskInDefine,
    /// An ask with a zero timeout could never be answered in time.
    #[error("an ask with a zero timeout can never get its reply: give a positive timeout")]
    ZeroTimeout,
    /// The embedded runtime needs at least one worker thread.
    #[error(
        "the embedded async runtime needs at least one thread: pass a positive count to `async_threads`"
    )]
    ZeroThreads,
}
