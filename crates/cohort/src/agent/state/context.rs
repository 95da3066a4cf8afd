//! The state API of [`Context`]: creating states, switching, querying, and [`InState`], the
//! builder that subscribes and configures in one state.

use super::machine::{Hook, StateMachine};
use super::unhandled::Unhandled;
use super::{DEAD_LETTER_STATE, DEFAULT_STATE, History, State, StateError};
use crate::agent::subscription::{HANDLE, NewHandler, SUPPRESS};
use crate::agent::{Agent, Context, immutable_handler, mutable_handler};
use crate::error::SubscribeError;
use crate::mailbox::Mbox;
use crate::message::Mutable;
use std::any::TypeId;
use std::borrow::Cow;
use std::time::Duration;

impl<'a, A: Agent> Context<'a, A> {
    fn agent_key(&self) -> usize {
        self.cell().mbox_id().0
    }

    fn machine(&mut self) -> &mut StateMachine<A> {
        self.subs
            .machine
            .get_or_insert_with(|| Box::new(StateMachine::new()))
    }

    fn handle(&self, index: u16) -> State {
        State {
            agent: self.agent_key(),
            index,
        }
    }

    /// The index of `st` if it is one of this agent's states.
    fn own(&self, st: &State) -> Option<u16> {
        let known = match &self.subs.machine {
            Some(m) => m.states.len(),
            None => 1,
        };
        (st.agent == self.agent_key() && usize::from(st.index) < known).then_some(st.index)
    }

    fn own_or_err(&self, st: &State) -> Result<u16, StateError> {
        self.own(st).ok_or_else(|| StateError::ForeignState {
            state: format!("{st:?}"),
        })
    }

    /// Creates a top-level state of this agent.
    ///
    /// States are usually created in [`Agent::define`] and captured by the handlers that
    /// switch to them (a [`State`] is `Copy`); an agent that never creates one stays in its
    /// default state. See the [`State`] example.
    pub fn new_state(&mut self, name: impl Into<Cow<'static, str>>) -> Result<State, StateError> {
        let i = self.machine().add(name.into(), None)?;
        Ok(self.handle(i))
    }

    /// Creates a substate of `parent` (the parent is given at creation, so no state can be
    /// its own ancestor). The first substate of a state is its initial substate: a switch to
    /// the parent lands there (see [`InState::initial_substate`] to choose another).
    ///
    /// Errors: `parent` is another agent's state, or nesting would exceed
    /// [`MAX_STATE_DEPTH`](crate::defaults::MAX_STATE_DEPTH).
    pub fn new_substate(
        &mut self,
        parent: &State,
        name: impl Into<Cow<'static, str>>,
    ) -> Result<State, StateError> {
        let p = self.own_or_err(parent)?;
        let i = self.machine().add(name.into(), Some(p))?;
        Ok(self.handle(i))
    }

    /// The default state: the one every agent starts in, a top-level state like the others
    /// (substates of it inherit its handlers, other states do not).
    pub fn default_state(&self) -> State {
        self.handle(DEFAULT_STATE)
    }

    /// The current state: the innermost active one.
    pub fn current_state(&self) -> State {
        self.handle(self.subs.current())
    }

    /// Whether `st` is active: the current state or one of its ancestors.
    pub fn is_in(&self, st: &State) -> bool {
        match (self.own(st), &self.subs.machine) {
            (Some(i), Some(m)) => m.is_in(i),
            (Some(i), None) => i == DEFAULT_STATE,
            (None, _) => false,
        }
    }

    /// The name `st` was created with; `None` for another agent's state.
    pub fn state_name(&self, st: &State) -> Option<&str> {
        let i = self.own(st)?;
        Some(match &self.subs.machine {
            Some(m) => m.name(i),
            None => "<default>",
        })
    }

    /// Switches to `st` (and down into its initial substates, or the ones its history
    /// remembers). The switch takes effect at once: [`Context::current_state`] shows it and
    /// the next message is handled in the new state. The `on_exit` hooks of the states left
    /// (innermost first), then the `on_enter` hooks of the states entered (outermost first)
    /// run as soon as the running handler returns, before any other message; for a switch
    /// made in `define`, before `start`. Switching to the current state does nothing. Hooks
    /// and time limits are taken from the states as they are at the switch: set them before
    /// switching into a state (in `define`, configure first, then switch).
    ///
    /// Errors: `st` belongs to another agent, or this is called from an `on_enter`/`on_exit`
    /// hook.
    pub fn change_state(&mut self, st: &State) -> Result<(), StateError> {
        let target = self.own_or_err(st)?;
        let machine = self.machine();
        if machine.in_hook {
            return Err(StateError::ChangeInHook {
                target: machine.name(target).to_string(),
            });
        }
        machine.switch(target);
        Ok(())
    }

    /// Subscribes and configures in state `st`.
    ///
    /// ```
    /// use cohort::{Agent, Context, DefineError, History};
    ///
    /// struct Work;
    /// struct Pause;
    /// struct Machine { log: Vec<&'static str> }
    /// impl Agent for Machine {
    ///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
    ///         let running = ctx.new_state("running")?;
    ///         let paused = ctx.new_state("paused")?;
    ///         ctx.in_state(&running)
    ///             .on_enter(|me: &mut Self, _: &mut Context<'_, Self>| me.log.push("enter running"))?
    ///             .on(move |me, _: &Work, _| me.log.push("work"))?
    ///             .on(move |_, _: &Pause, ctx| {
    ///                 ctx.change_state(&paused).unwrap()
    ///             })?;
    ///         ctx.in_state(&paused).suppress::<Work>()?.on_enter(|me: &mut Self, ctx: &mut Context<'_, Self>| {
    ///             me.log.push("paused");
    ///             assert_eq!(me.log, ["enter running", "work", "paused"]);
    ///             ctx.stop_environment();
    ///         })?;
    ///         ctx.change_state(&running)?;
    ///         Ok(())
    ///     }
    ///     fn start(&mut self, ctx: &mut Context<'_, Self>) {
    ///         ctx.send_self(Work);
    ///         ctx.send_self(Pause);
    ///         ctx.send_self(Work); // suppressed in `paused`
    ///     }
    /// }
    ///
    /// cohort::launch(|env| {
    ///     let mut coop = env.new_coop();
    ///     coop.add(Machine { log: Vec::new() });
    ///     env.register_coop(coop)?;
    ///     Ok(())
    /// })
    /// .unwrap();
    /// ```
    pub fn in_state(&mut self, st: &State) -> InState<'_, 'a, A> {
        InState {
            ctx: self,
            state: *st,
        }
    }

    /// Sets the agent's dead-letter handler: it receives every message that no handler of
    /// the current state (nor of its parents) takes, instead of the message being counted as
    /// a [`DeliveryFailure::NoHandler`](crate::DeliveryFailure::NoHandler) dead letter.
    /// Suppressed messages do not reach it. Replaces a previous dead-letter handler. See
    /// [`Unhandled`] for an example.
    pub fn on_dead_letter<F>(&mut self, handler: F)
    where
        F: for<'c> FnMut(&mut A, Unhandled, &mut Context<'c, A>) + Send + 'static,
    {
        self.machine().dead_letter = Some(Box::new(handler));
    }

    /// Sets the agent's dead-letter handler for immutable messages of type `M` on its direct
    /// mailbox: an `M` that no handler of the current state (nor of its parents) takes goes to
    /// it, before [`Context::on_dead_letter`]'s handler for any type. A second one for `M` is
    /// [`SubscribeError::AlreadySubscribedInState`].
    ///
    /// ```
    /// use cohort::{Agent, Context, DefineError};
    ///
    /// struct Late(u32);
    /// struct Closed;
    /// impl Agent for Closed {
    ///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
    ///         let shut = ctx.new_state("shut")?; // handles nothing
    ///         ctx.on_dead_letter_of(|_, late: &Late, ctx| {
    ///             assert_eq!(late.0, 3);
    ///             ctx.stop_environment();
    ///         })?;
    ///         ctx.change_state(&shut)?;
    ///         Ok(())
    ///     }
    ///     fn start(&mut self, ctx: &mut Context<'_, Self>) {
    ///         ctx.send_self(Late(3));
    ///     }
    /// }
    ///
    /// cohort::launch(|env| {
    ///     let mut coop = env.new_coop();
    ///     coop.add(Closed);
    ///     env.register_coop(coop)?;
    ///     Ok(())
    /// })
    /// .unwrap();
    /// ```
    pub fn on_dead_letter_of<M, F>(&mut self, handler: F) -> Result<(), SubscribeError>
    where
        M: Send + 'static,
        F: for<'c> FnMut(&mut A, &M, &mut Context<'c, A>) + Send + 'static,
    {
        self.machine();
        self.add_entry(
            DEAD_LETTER_STATE,
            HANDLE,
            None,
            TypeId::of::<M>(),
            std::any::type_name::<M>,
            immutable_handler(handler),
        )
    }
}

/// Subscribes handlers, transfers and suppressions in one state, and sets its hooks, history,
/// initial substate and time limit: made by [`Context::in_state`]. Each method returns the
/// builder again, so calls chain with `?`.
///
/// A subscription is per (mailbox, message type, state): a second one for the same triple is
/// [`SubscribeError::AlreadySubscribedInState`]. A state's substates inherit its
/// subscriptions and can override them with their own.
pub struct InState<'c, 'a, A: Agent> {
    ctx: &'c mut Context<'a, A>,
    state: State,
}

impl<'c, 'a, A: Agent> InState<'c, 'a, A> {
    fn index(&self) -> Result<u16, SubscribeError> {
        self.ctx
            .own(&self.state)
            .ok_or_else(|| SubscribeError::ForeignState {
                state: format!("{:?}", self.state),
            })
    }

    fn info(&mut self) -> Result<&mut super::machine::StateInfo<A>, StateError> {
        let i = self.ctx.own_or_err(&self.state)?;
        Ok(&mut self.ctx.machine().states[usize::from(i)])
    }

    /// Subscribes `handler` to immutable `M` on the direct mailbox in this state.
    pub fn on<M, F>(&mut self, handler: F) -> Result<&mut Self, SubscribeError>
    where
        M: Send + 'static,
        F: for<'x> FnMut(&mut A, &M, &mut Context<'x, A>) + Send + 'static,
    {
        let i = self.index()?;
        self.ctx.add_entry(
            i,
            HANDLE,
            None,
            TypeId::of::<M>(),
            std::any::type_name::<M>,
            immutable_handler(handler),
        )?;
        Ok(self)
    }

    /// Subscribes `handler` to mutable `M` (sent with `send_mut`) in this state.
    pub fn on_mut<M, F>(&mut self, handler: F) -> Result<&mut Self, SubscribeError>
    where
        M: Send + 'static,
        F: for<'x> FnMut(&mut A, M, &mut Context<'x, A>) + Send + 'static,
    {
        let i = self.index()?;
        self.ctx.add_entry(
            i,
            HANDLE,
            None,
            TypeId::of::<Mutable<M>>(),
            std::any::type_name::<Mutable<M>>,
            mutable_handler(handler),
        )?;
        Ok(self)
    }

    /// Subscribes `handler` to immutable `M` arriving through `mbox` (the agent's own direct
    /// mailbox or a multi-consumer one) in this state.
    pub fn subscribe<M, F>(&mut self, mbox: &Mbox, handler: F) -> Result<&mut Self, SubscribeError>
    where
        M: Send + Sync + 'static,
        F: for<'x> FnMut(&mut A, &M, &mut Context<'x, A>) + Send + 'static,
    {
        let i = self.index()?;
        self.ctx.add_entry(
            i,
            HANDLE,
            Some(mbox),
            TypeId::of::<M>(),
            std::any::type_name::<M>,
            immutable_handler(handler),
        )?;
        Ok(self)
    }

    /// A message of type `M` (write `Mutable<T>` for mutable messages) arriving through the
    /// direct mailbox in this state switches the agent to `target` and is then handled
    /// there, as if it had arrived in `target`.
    ///
    /// ```
    /// use cohort::{Agent, Context, DefineError};
    ///
    /// struct Request(u32);
    /// struct Server;
    /// impl Agent for Server {
    ///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
    ///         let idle = ctx.new_state("idle")?;
    ///         let busy = ctx.new_state("busy")?;
    ///         // A request wakes the server up and is served in `busy`.
    ///         ctx.in_state(&idle).transfer_to_state::<Request>(&busy)?;
    ///         ctx.in_state(&busy).on(move |_, r: &Request, ctx| {
    ///             assert!(ctx.is_in(&busy));
    ///             assert_eq!(r.0, 42);
    ///             ctx.stop_environment();
    ///         })?;
    ///         ctx.change_state(&idle)?;
    ///         Ok(())
    ///     }
    ///     fn start(&mut self, ctx: &mut Context<'_, Self>) {
    ///         ctx.send_self(Request(42));
    ///     }
    /// }
    ///
    /// cohort::launch(|env| {
    ///     let mut coop = env.new_coop();
    ///     coop.add(Server);
    ///     env.register_coop(coop)?;
    ///     Ok(())
    /// })
    /// .unwrap();
    /// ```
    pub fn transfer_to_state<M: 'static>(
        &mut self,
        target: &State,
    ) -> Result<&mut Self, SubscribeError> {
        self.transfer(None, TypeId::of::<M>(), std::any::type_name::<M>, target)
    }

    /// As [`InState::transfer_to_state`], for `M` arriving through `mbox`.
    pub fn transfer_to_state_from<M: 'static>(
        &mut self,
        mbox: &Mbox,
        target: &State,
    ) -> Result<&mut Self, SubscribeError> {
        self.transfer(
            Some(mbox),
            TypeId::of::<M>(),
            std::any::type_name::<M>,
            target,
        )
    }

    fn transfer(
        &mut self,
        mbox: Option<&Mbox>,
        key: TypeId,
        type_name: fn() -> &'static str,
        target: &State,
    ) -> Result<&mut Self, SubscribeError> {
        let i = self.index()?;
        let t = self
            .ctx
            .own(target)
            .ok_or_else(|| SubscribeError::ForeignState {
                state: format!("{target:?}"),
            })?;
        self.ctx
            .add_entry(i, t, mbox, key, type_name, NewHandler::placeholder())?;
        Ok(self)
    }

    /// A message of type `M` (write `Mutable<T>` for mutable messages) arriving through the
    /// direct mailbox is ignored in this state and its substates, even if a parent state
    /// handles it. It is not a dead letter (nor does it reach the dead-letter handler).
    pub fn suppress<M: 'static>(&mut self) -> Result<&mut Self, SubscribeError> {
        let i = self.index()?;
        self.ctx.add_entry(
            i,
            SUPPRESS,
            None,
            TypeId::of::<M>(),
            std::any::type_name::<M>,
            NewHandler::placeholder(),
        )?;
        Ok(self)
    }

    /// As [`InState::suppress`], for `M` arriving through `mbox`.
    pub fn suppress_from<M: 'static>(&mut self, mbox: &Mbox) -> Result<&mut Self, SubscribeError> {
        let i = self.index()?;
        self.ctx.add_entry(
            i,
            SUPPRESS,
            Some(mbox),
            TypeId::of::<M>(),
            std::any::type_name::<M>,
            NewHandler::placeholder(),
        )?;
        Ok(self)
    }

    /// Removes this state's subscription (handler, transfer or suppression) to `M` on the
    /// direct mailbox; true if there was one.
    pub fn unsubscribe<M: 'static>(&mut self) -> bool {
        let Ok(i) = self.index() else { return false };
        let id = self.ctx.cell().mbox_id();
        let cell = self.ctx.cell.as_ptr();
        let coop = self.ctx.coop_ptr();
        self.ctx.subs.remove(id, TypeId::of::<M>(), i, cell, coop)
    }

    /// Sets the hook that runs each time the agent enters this state (replacing a previous
    /// one). It cannot switch state (see [`Context::change_state`]).
    pub fn on_enter<F>(&mut self, hook: F) -> Result<&mut Self, StateError>
    where
        F: for<'x> FnMut(&mut A, &mut Context<'x, A>) + Send + 'static,
    {
        self.info()?.on_enter = Some(Box::new(hook) as Hook<A>);
        Ok(self)
    }

    /// Sets the hook that runs each time the agent leaves this state, and when the agent
    /// finishes while in it (replacing a previous one).
    pub fn on_exit<F>(&mut self, hook: F) -> Result<&mut Self, StateError>
    where
        F: for<'x> FnMut(&mut A, &mut Context<'x, A>) + Send + 'static,
    {
        self.info()?.on_exit = Some(Box::new(hook) as Hook<A>);
        Ok(self)
    }

    /// Sets what this state remembers of its substates when it is left (see [`History`]).
    ///
    /// ```
    /// use cohort::{Agent, Context, DefineError, History};
    ///
    /// struct Next;
    /// struct Player;
    /// impl Agent for Player {
    ///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
    ///         let playing = ctx.new_state("playing")?;
    ///         let track1 = ctx.new_substate(&playing, "track 1")?;
    ///         let track2 = ctx.new_substate(&playing, "track 2")?;
    ///         let paused = ctx.new_state("paused")?;
    ///         ctx.in_state(&playing).history(History::Shallow)?;
    ///         ctx.in_state(&track1).on(move |_, _: &Next, ctx| {
    ///             ctx.change_state(&track2).unwrap();
    ///             ctx.change_state(&paused).unwrap();
    ///             ctx.change_state(&playing).unwrap(); // back to track 2, not track 1
    ///             assert_eq!(ctx.current_state(), track2);
    ///             ctx.stop_environment();
    ///         })?;
    ///         ctx.change_state(&playing)?; // lands in track 1, the initial substate
    ///         Ok(())
    ///     }
    ///     fn start(&mut self, ctx: &mut Context<'_, Self>) {
    ///         ctx.send_self(Next);
    ///     }
    /// }
    ///
    /// cohort::launch(|env| {
    ///     let mut coop = env.new_coop();
    ///     coop.add(Player);
    ///     env.register_coop(coop)?;
    ///     Ok(())
    /// })
    /// .unwrap();
    /// ```
    pub fn history(&mut self, history: History) -> Result<&mut Self, StateError> {
        let info = self.info()?;
        info.history = history;
        if history == History::None {
            info.last_active = None;
        }
        Ok(self)
    }

    /// Makes `sub` this state's initial substate (by default the first substate created).
    /// Error: `sub` is not a direct substate of this state, or belongs to another agent.
    pub fn initial_substate(&mut self, sub: &State) -> Result<&mut Self, StateError> {
        let s = self.ctx.own_or_err(sub)?;
        let i = self.ctx.own_or_err(&self.state)?;
        let machine = self.ctx.machine();
        if machine.parent(s) != Some(i) {
            return Err(StateError::NotASubstate {
                state: machine.name(s).to_string(),
                parent: machine.name(i).to_string(),
            });
        }
        machine.states[usize::from(i)].initial = Some(s);
        Ok(self)
    }

    /// After `limit` spent in this state (including its substates), the agent switches to
    /// `target`. Leaving the state earlier cancels it; each entry starts it afresh. Applies
    /// from the next entry into the state.
    ///
    /// ```
    /// use cohort::{Agent, Context, DefineError};
    /// use std::time::Duration;
    ///
    /// struct Answer;
    /// struct Caller;
    /// impl Agent for Caller {
    ///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
    ///         let waiting = ctx.new_state("waiting for an answer")?;
    ///         let gave_up = ctx.new_state("gave up")?;
    ///         ctx.in_state(&waiting)
    ///             .time_limit(Duration::from_millis(5), &gave_up)?
    ///             .on(|_, _: &Answer, _| unreachable!())?;
    ///         ctx.in_state(&gave_up)
    ///             .on_enter(|_: &mut Self, ctx: &mut Context<'_, Self>| ctx.stop_environment())?;
    ///         ctx.change_state(&waiting)?; // nobody answers
    ///         Ok(())
    ///     }
    /// }
    ///
    /// cohort::launch(|env| {
    ///     let mut coop = env.new_coop();
    ///     coop.add(Caller);
    ///     env.register_coop(coop)?;
    ///     Ok(())
    /// })
    /// .unwrap();
    /// ```
    pub fn time_limit(&mut self, limit: Duration, target: &State) -> Result<&mut Self, StateError> {
        let t = self.ctx.own_or_err(target)?;
        self.info()?.time_limit = Some((limit, t));
        Ok(self)
    }
}
