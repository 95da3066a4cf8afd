//! The state tree of one agent and what a switch does: which states are left and entered,
//! in which order, and what history remembers.

use super::{DEFAULT_STATE, History, StateError, unhandled::Unhandled};
use crate::agent::{Agent, Context};
use crate::defaults::MAX_STATE_DEPTH;
use std::borrow::Cow;
use std::time::Duration;

/// An `on_enter` / `on_exit` hook.
pub(crate) type Hook<A> = Box<dyn for<'c> FnMut(&mut A, &mut Context<'c, A>) + Send>;

/// The agent's dead-letter handler.
pub(crate) type DeadLetterHandler<A> =
    Box<dyn for<'c> FnMut(&mut A, Unhandled, &mut Context<'c, A>) + Send>;

/// What a pending time limit holds: dropping it cancels the timer.
pub(crate) type TimerSlot = crate::timer::TimerHandle;

/// The most states an agent can have (indices below the subscription actions' sentinels).
pub(crate) const MAX_STATES: usize = u16::MAX as usize - 2;

/// Work a switch leaves for after the running hook: hooks need the agent, which the handler
/// that switched is still borrowing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Run the state's `on_exit`.
    Exit(u16),
    /// Run the state's `on_enter`, then start its time limit.
    Enter(u16),
}

/// One state.
pub(crate) struct StateInfo<A: Agent> {
    pub(crate) name: Cow<'static, str>,
    pub(crate) parent: Option<u16>,
    /// 0 for a top-level state.
    pub(crate) depth: u8,
    /// The substate entered when this state is the target of a switch (the first substate
    /// created, unless changed).
    pub(crate) initial: Option<u16>,
    pub(crate) history: History,
    /// Shallow history: the direct substate last active; deep: the innermost one.
    pub(crate) last_active: Option<u16>,
    pub(crate) on_enter: Option<Hook<A>>,
    pub(crate) on_exit: Option<Hook<A>>,
    /// After how long in this state the agent switches to which state.
    pub(crate) time_limit: Option<(Duration, u16)>,
    /// The running time limit's timer.
    pub(crate) timer: Option<TimerSlot>,
    /// Bumped each time the state is left: a time-out message of an older stay is stale.
    pub(crate) epoch: u32,
}

impl<A: Agent> StateInfo<A> {
    fn new(name: Cow<'static, str>, parent: Option<u16>, depth: u8) -> Self {
        Self {
            name,
            parent,
            depth,
            initial: None,
            history: History::None,
            last_active: None,
            on_enter: None,
            on_exit: None,
            time_limit: None,
            timer: None,
            epoch: 0,
        }
    }
}

/// The states of one agent, created the first time the agent uses a state feature.
pub(crate) struct StateMachine<A: Agent> {
    /// The current (innermost) state.
    pub(crate) current: u16,
    /// A switch left hooks or time limits to run (`pending` is not empty).
    pub(crate) has_pending: bool,
    pub(crate) states: Vec<StateInfo<A>>,
    /// Effects of switches not yet run (see [`Effect`]).
    pub(crate) pending: Vec<Effect>,
    /// An `on_enter` / `on_exit` hook is running: switching is refused.
    pub(crate) in_hook: bool,
    pub(crate) dead_letter: Option<DeadLetterHandler<A>>,
}

impl<A: Agent> StateMachine<A> {
    pub(crate) fn new() -> Self {
        Self {
            current: DEFAULT_STATE,
            has_pending: false,
            states: vec![StateInfo::new(Cow::Borrowed("<default>"), None, 0)],
            pending: Vec::new(),
            in_hook: false,
            dead_letter: None,
        }
    }

    pub(crate) fn name(&self, s: u16) -> &str {
        self.states
            .get(usize::from(s))
            .map_or("<dead-letter handler>", |i| &i.name)
    }

    pub(crate) fn parent(&self, s: u16) -> Option<u16> {
        self.states[usize::from(s)].parent
    }

    /// Adds a state under `parent` (top level if `None`); the first substate of a state is
    /// its initial substate.
    pub(crate) fn add(
        &mut self,
        name: Cow<'static, str>,
        parent: Option<u16>,
    ) -> Result<u16, StateError> {
        if self.states.len() >= MAX_STATES {
            return Err(StateError::TooManyStates { max: MAX_STATES });
        }
        let depth = match parent {
            None => 0,
            Some(p) => self.states[usize::from(p)].depth + 1,
        };
        if usize::from(depth) >= MAX_STATE_DEPTH {
            return Err(StateError::TooDeep {
                state: name.into_owned(),
                max: MAX_STATE_DEPTH,
            });
        }
        let index = self.states.len() as u16;
        self.states.push(StateInfo::new(name, parent, depth));
        if let Some(p) = parent {
            let p = &mut self.states[usize::from(p)];
            p.initial.get_or_insert(index);
        }
        Ok(index)
    }

    /// Whether `s` is the current state or one of its ancestors.
    pub(crate) fn is_in(&self, s: u16) -> bool {
        let mut c = Some(self.current);
        while let Some(i) = c {
            if i == s {
                return true;
            }
            c = self.parent(i);
        }
        false
    }

    /// The innermost state a switch to `target` lands in: down through history or initial
    /// substates.
    fn landing(&self, target: u16) -> u16 {
        let mut s = target;
        loop {
            let info = &self.states[usize::from(s)];
            let next = match (info.history, info.last_active) {
                (History::Shallow | History::Deep, Some(l)) => Some(l),
                _ => info.initial,
            };
            match next {
                Some(n) => s = n,
                None => return s,
            }
        }
    }

    /// The innermost state that contains both `a` and `b`, if any.
    fn common_ancestor(&self, mut a: u16, mut b: u16) -> Option<u16> {
        let depth = |s: u16| self.states[usize::from(s)].depth;
        while depth(a) > depth(b) {
            a = self.parent(a)?;
        }
        while depth(b) > depth(a) {
            b = self.parent(b)?;
        }
        while a != b {
            a = self.parent(a)?;
            b = self.parent(b)?;
        }
        Some(a)
    }

    /// Switches from the current state to `target`: records history, cancels the time
    /// limits of the states left and queues their hooks (exits innermost first, then entries
    /// outermost first). True if effects are pending.
    pub(crate) fn switch(&mut self, target: u16) -> bool {
        let leaf = self.landing(target);
        let old = self.current;
        if leaf == old {
            return self.has_pending;
        }
        let common = self.common_ancestor(old, leaf);
        self.leave(old, common);
        let first_entry = self.pending.len();
        let mut s = Some(leaf);
        while s != common {
            let Some(i) = s else { break };
            let info = &self.states[usize::from(i)];
            if info.on_enter.is_some() || info.time_limit.is_some() {
                self.pending.push(Effect::Enter(i));
            }
            s = info.parent;
        }
        self.pending[first_entry..].reverse();
        self.current = leaf;
        self.has_pending = !self.pending.is_empty();
        self.has_pending
    }

    /// Leaves `from` and its ancestors up to (not including) `until`, innermost first.
    pub(crate) fn leave(&mut self, from: u16, until: Option<u16>) {
        let mut prev = None;
        let mut s = Some(from);
        while s != until {
            let Some(i) = s else { break };
            let info = &mut self.states[usize::from(i)];
            match info.history {
                History::None => {}
                History::Shallow => info.last_active = prev.or(info.last_active),
                History::Deep if i != from => info.last_active = Some(from),
                History::Deep => {}
            }
            if info.time_limit.is_some() {
                info.epoch = info.epoch.wrapping_add(1);
                info.timer = None;
            }
            if info.on_exit.is_some() {
                self.pending.push(Effect::Exit(i));
                self.has_pending = true;
            }
            prev = Some(i);
            s = info.parent;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Dummy;
    impl Agent for Dummy {}

    fn hook() -> Hook<Dummy> {
        Box::new(|_: &mut Dummy, _: &mut Context<'_, Dummy>| {})
    }

    #[test]
    fn exits_innermost_first_then_enters_outermost_first() {
        let mut m = StateMachine::<Dummy>::new();
        let a = m.add("a".into(), None).unwrap();
        let a1 = m.add("a1".into(), Some(a)).unwrap();
        let a11 = m.add("a11".into(), Some(a1)).unwrap();
        let b = m.add("b".into(), None).unwrap();
        let b1 = m.add("b1".into(), Some(b)).unwrap();
        for s in [a, a1, a11, b, b1] {
            m.states[usize::from(s)].on_enter = Some(hook());
            m.states[usize::from(s)].on_exit = Some(hook());
        }
        assert!(m.switch(a));
        assert_eq!(m.current, a11, "a switch lands in the initial substates");
        assert_eq!(
            m.pending,
            [Effect::Enter(a), Effect::Enter(a1), Effect::Enter(a11)]
        );
        m.pending.clear();
        m.switch(b);
        assert_eq!(m.current, b1);
        assert_eq!(
            m.pending,
            [
                Effect::Exit(a11),
                Effect::Exit(a1),
                Effect::Exit(a),
                Effect::Enter(b),
                Effect::Enter(b1)
            ]
        );
        m.pending.clear();
        m.has_pending = false;
        assert!(!m.switch(b), "switching to the current state does nothing");
    }

    #[test]
    fn depth_is_bounded() {
        let mut m = StateMachine::<Dummy>::new();
        let mut parent = None;
        for _ in 0..MAX_STATE_DEPTH {
            parent = Some(m.add("s".into(), parent).unwrap());
        }
        assert!(matches!(
            m.add("deep".into(), parent),
            Err(StateError::TooDeep { .. })
        ));
    }
}
