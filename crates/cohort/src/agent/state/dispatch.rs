//! The state-aware part of handling a message, off the hot path: what happens when the
//! current state has no handler of its own (walk the parents, transfer, suppress, time-outs,
//! the dead-letter handler), and running the hooks a switch left pending.

use super::DEAD_LETTER_STATE;
use super::machine::Effect;
use super::time_limit::{self, StateTimeout};
use super::unhandled::Unhandled;
use crate::agent::cell::{AgentBody, DynCell, dead_letter_here};
use crate::agent::subscription::{HANDLE, SUPPRESS, Subscriptions};
use crate::agent::{Agent, Context};
use crate::defaults::MAX_STATE_TRANSFERS;
use crate::future::completion::Completion;
use crate::mailbox::MboxId;
use crate::mailbox::dead_letter::DeliveryFailure;
use crate::message::{Envelope, Mutable};
use std::any::TypeId;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;

/// Where a message goes in the current state.
enum Route {
    Handle(usize),
    Suppress,
    Transfer(u16),
    Missing,
}

/// Looks for (mailbox, type) in the current state, then in each of its parents.
fn route<A: Agent>(subs: &Subscriptions<A>, own: MboxId, mbox: MboxId, key: TypeId) -> Route {
    let Some(machine) = &subs.machine else {
        return Route::Missing;
    };
    let mut state = Some(machine.current);
    while let Some(s) = state {
        match subs.find(own, mbox, key, s) {
            Some((i, HANDLE)) => return Route::Handle(i),
            Some((_, SUPPRESS)) => return Route::Suppress,
            Some((_, target)) => return Route::Transfer(target),
            None => state = machine.parent(s),
        }
    }
    Route::Missing
}

impl<A: Agent> AgentBody<A> {
    /// Handles a message the current state has no handler of its own for.
    #[cold]
    #[inline(never)]
    pub(crate) fn handle_unmatched(&mut self, this: NonNull<DynCell>, mbox: MboxId, msg: Envelope) {
        let key = msg.key();
        if key == TypeId::of::<Mutable<Completion<A>>>() {
            // A future's output or an ask's outcome: no subscription, it runs in any state.
            return self.run_completion(this, msg);
        }
        if self.subs.machine.is_none() {
            return dead_letter_here(this, mbox, msg, DeliveryFailure::NoHandler);
        }
        if key == TypeId::of::<StateTimeout>() {
            // SAFETY: the key says the envelope holds a `StateTimeout`.
            let timeout = *unsafe { msg.get::<StateTimeout>() };
            return self.on_state_timeout(this, timeout);
        }
        for _ in 0..=MAX_STATE_TRANSFERS {
            match route(&self.subs, DynCell::mbox_id_at(this.as_ptr()), mbox, key) {
                Route::Handle(i) => {
                    return match self.subs.take_at(i) {
                        Some(taken) => self.run_handler(this, taken, mbox, key, msg),
                        None => dead_letter_here(this, mbox, msg, DeliveryFailure::NoHandler),
                    };
                }
                Route::Suppress => return,
                Route::Missing => return self.dead_letter(this, mbox, msg),
                Route::Transfer(target) => {
                    if let Some(m) = self.subs.machine.as_mut()
                        && m.switch(target)
                    {
                        self.run_effects(this);
                    }
                }
            }
        }
        tracing::warn!(
            agent = %self.agent.name(),
            message = msg.type_name(),
            "transfer_to_state loops: the message is dropped as a dead letter"
        );
        dead_letter_here(this, mbox, msg, DeliveryFailure::TransferLoop)
    }

    /// A message no state takes: to the agent's dead-letter handler for its type, else its
    /// dead-letter handler for any type, else counted.
    fn dead_letter(&mut self, this: NonNull<DynCell>, mbox: MboxId, msg: Envelope) {
        let key = msg.key();
        if let Some((i, HANDLE)) = self.subs.find(
            DynCell::mbox_id_at(this.as_ptr()),
            mbox,
            key,
            DEAD_LETTER_STATE,
        ) && let Some(taken) = self.subs.take_at(i)
        {
            return self.run_handler(this, taken, mbox, key, msg);
        }
        let handler = self
            .subs
            .machine
            .as_mut()
            .and_then(|m| m.dead_letter.take());
        let Some(mut handler) = handler else {
            return dead_letter_here(this, mbox, msg, DeliveryFailure::NoHandler);
        };
        let letter = Unhandled::new(msg, mbox);
        let mut ctx = Context::new(this, self.coop, &mut self.subs);
        let agent = &mut *self.agent;
        let result = catch_unwind(AssertUnwindSafe(|| handler(agent, letter, &mut ctx)));
        if let Some(m) = self.subs.machine.as_mut() {
            m.dead_letter.get_or_insert(handler);
        }
        if let Err(payload) = result {
            self.on_panic(this, "dead-letter handler", payload);
        }
        if self.subs.pending() {
            self.run_effects(this);
        }
    }

    /// A state's time limit expired: switch, unless the state was left since.
    fn on_state_timeout(&mut self, this: NonNull<DynCell>, t: StateTimeout) {
        let Some(m) = self.subs.machine.as_mut() else {
            return;
        };
        let info = &mut m.states[usize::from(t.state)];
        let Some((_, target)) = info.time_limit else {
            return;
        };
        if info.epoch != t.epoch || !m.is_in(t.state) {
            return; // stale: the state was left (and maybe entered again) since
        }
        m.states[usize::from(t.state)].timer = None;
        if m.switch(target) {
            self.run_effects(this);
        }
    }

    /// Runs the hooks and starts the time limits a switch left pending, in order.
    #[cold]
    #[inline(never)]
    pub(crate) fn run_effects(&mut self, this: NonNull<DynCell>) {
        let Some(m) = self.subs.machine.as_mut() else {
            return;
        };
        m.has_pending = false;
        let mut effects = std::mem::take(&mut m.pending);
        m.in_hook = true;
        for e in effects.drain(..) {
            match e {
                Effect::Exit(s) => self.run_hook(this, s, false),
                Effect::Enter(s) => {
                    self.run_hook(this, s, true);
                    self.start_time_limit(this, s);
                }
            }
        }
        if let Some(m) = self.subs.machine.as_mut() {
            m.in_hook = false;
            m.pending = effects; // empty: keeps its capacity for the next switch
        }
    }

    fn run_hook(&mut self, this: NonNull<DynCell>, s: u16, enter: bool) {
        let Some(m) = self.subs.machine.as_mut() else {
            return;
        };
        let info = &mut m.states[usize::from(s)];
        let slot = if enter {
            &mut info.on_enter
        } else {
            &mut info.on_exit
        };
        let Some(mut hook) = slot.take() else { return };
        let mut ctx = Context::new(this, self.coop, &mut self.subs);
        let agent = &mut *self.agent;
        let result = catch_unwind(AssertUnwindSafe(|| hook(agent, &mut ctx)));
        if let Some(m) = self.subs.machine.as_mut() {
            let info = &mut m.states[usize::from(s)];
            let slot = if enter {
                &mut info.on_enter
            } else {
                &mut info.on_exit
            };
            slot.get_or_insert(hook);
        }
        if let Err(payload) = result {
            self.on_panic(this, if enter { "on_enter" } else { "on_exit" }, payload);
        }
    }

    fn start_time_limit(&mut self, this: NonNull<DynCell>, s: u16) {
        let Some(m) = self.subs.machine.as_mut() else {
            return;
        };
        if !m.is_in(s) {
            return;
        }
        let info = &m.states[usize::from(s)];
        let Some((limit, _)) = info.time_limit else {
            return;
        };
        let msg = StateTimeout {
            state: s,
            epoch: info.epoch,
        };
        let ctx = Context::new(this, self.coop, &mut self.subs);
        let slot = time_limit::start(&ctx.environment(), &ctx.self_mbox(), limit, msg);
        if let Some(m) = self.subs.machine.as_mut() {
            m.states[usize::from(s)].timer = Some(slot);
        }
    }

    /// Leaves every active state (its `on_exit` hooks innermost first, its time limits
    /// cancelled): the agent is finishing.
    pub(crate) fn leave_states(&mut self, this: NonNull<DynCell>) {
        if let Some(m) = self.subs.machine.as_mut() {
            m.in_hook = false;
            m.leave(m.current, None);
            m.current = super::DEFAULT_STATE;
            if m.has_pending {
                self.run_effects(this);
            }
        }
    }
}
