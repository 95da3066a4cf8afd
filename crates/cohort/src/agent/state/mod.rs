//! Agent states, in the line of SObjectizer's: hierarchical (substates, an initial
//! substate), handlers per state inherited by substates and overridden there, `on_enter` /
//! `on_exit` hooks, shallow and deep history, transfer to another state, suppression, time
//! limits; plus the agent's dead-letter handler.
//!
//! An agent that never creates a state lives in its default state and pays nothing: its
//! handlers are found by the same table scan (which also compares a small state index), and
//! no state storage exists.
//!
//! How it works: each subscription entry carries the index of its state. A message is looked
//! up in the current (innermost) state first; on a miss the parents are walked, so switching
//! state only changes an index, whatever the number of handlers. See
//! `docs/runtime-semantics.md`, "Agent states", for the exact rules.
//!
//! ```
//! use cohort::{Agent, Context, DefineError};
//!
//! struct Toggle;
//! struct Lamp { flips: u32 }
//!
//! impl Agent for Lamp {
//!     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
//!         let off = ctx.new_state("off")?;
//!         let on = ctx.new_state("on")?;
//!         ctx.in_state(&off).on(move |me, _: &Toggle, ctx| {
//!             me.flips += 1;
//!             ctx.change_state(&on).unwrap();
//!             ctx.send_self(Toggle);
//!         })?;
//!         ctx.in_state(&on).on(move |me, _: &Toggle, ctx| {
//!             me.flips += 1;
//!             ctx.change_state(&off).unwrap();
//!             if me.flips < 10 { ctx.send_self(Toggle) } else { ctx.stop_environment() }
//!         })?;
//!         ctx.change_state(&off)?;
//!         Ok(())
//!     }
//!     fn start(&mut self, ctx: &mut Context<'_, Self>) {
//!         ctx.send_self(Toggle);
//!     }
//! }
//!
//! cohort::launch(|env| {
//!     let mut coop = env.new_coop();
//!     coop.add(Lamp { flips: 0 });
//!     env.register_coop(coop)?;
//!     Ok(())
//! })
//! .unwrap();
//! ```

mod context;
mod dispatch;
pub(crate) mod machine;
pub(crate) mod time_limit;
pub(crate) mod unhandled;

pub use context::InState;
pub(crate) use machine::StateMachine;
pub use unhandled::Unhandled;

use std::fmt;

/// The index of the default state, the one every agent starts in.
pub(crate) const DEFAULT_STATE: u16 = 0;

/// The pseudo-state of per-type dead-letter handlers (`Context::on_dead_letter_of`): never
/// current, consulted when no state takes a message.
pub(crate) const DEAD_LETTER_STATE: u16 = u16::MAX;

/// A state of one agent: a small copyable handle made by
/// [`Context::new_state`](crate::Context::new_state) or
/// [`Context::new_substate`](crate::Context::new_substate), valid only with that agent's
/// context (any other agent's refuses it with a typed error).
///
/// ```
/// use cohort::{Agent, Context, DefineError};
///
/// struct Door;
/// impl Agent for Door {
///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
///         let closed = ctx.new_state("closed")?;
///         let locked = ctx.new_substate(&closed, "locked")?;
///         ctx.change_state(&closed)?; // lands in `locked`, the first substate
///         assert_eq!(ctx.current_state(), locked);
///         assert!(ctx.is_in(&closed) && ctx.is_in(&locked));
///         assert_eq!(ctx.state_name(&locked), Some("locked"));
///         Ok(())
///     }
///     fn start(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.stop_environment();
///     }
/// }
///
/// cohort::launch(|env| {
///     let mut coop = env.new_coop();
///     coop.add(Door);
///     env.register_coop(coop)?;
///     Ok(())
/// })
/// .unwrap();
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct State {
    /// The owning agent's direct mailbox id.
    pub(crate) agent: usize,
    pub(crate) index: u16,
}

impl fmt::Debug for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "State(#{} of agent {:#x})", self.index, self.agent)
    }
}

/// What a state remembers of its substates when it is left, for the next time it is the
/// target of a switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum History {
    /// Nothing: a switch to the state lands in its initial substate.
    #[default]
    None,
    /// The direct substate last active: a switch lands there (and then in that substate's
    /// initial substate, or its own history).
    Shallow,
    /// The innermost substate last active: a switch lands exactly there.
    Deep,
}

/// A state operation was refused.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum StateError {
    /// The state belongs to another agent.
    #[error(
        "state {state} belongs to another agent: use the states created by this agent's own context"
    )]
    ForeignState {
        /// The state, as its `Debug` shows it.
        state: String,
    },
    /// Substates nest too deep.
    #[error(
        "state `{state}` would nest deeper than {max} levels: flatten the state tree (cohort::defaults::MAX_STATE_DEPTH)"
    )]
    TooDeep {
        /// The refused state's name.
        state: String,
        /// The deepest nesting allowed.
        max: usize,
    },
    /// The agent has too many states.
    #[error("an agent can have at most {max} states: reuse states instead of creating new ones")]
    TooManyStates {
        /// The most states allowed.
        max: usize,
    },
    /// The state given as an initial substate is not a direct substate.
    #[error(
        "state `{state}` is not a direct substate of `{parent}`: pick one of its own substates"
    )]
    NotASubstate {
        /// The state given.
        state: String,
        /// The state whose initial substate was being set.
        parent: String,
    },
    /// `change_state` was called from an `on_enter` or `on_exit` hook.
    #[error(
        "cannot switch to state `{target}` from an on_enter/on_exit hook: switch from a handler, or use a time limit"
    )]
    ChangeInHook {
        /// The target state's name.
        target: String,
    },
}
