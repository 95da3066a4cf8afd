//! The count of agents bound to a dispatcher whose threads exit once the dispatcher is shut
//! down and no agent is bound (`one_thread`, `prio_one_thread`, the pools).

use crate::sync::{AtomicUsize, Ordering};

/// The `shut` flag in the count's word.
const SHUT: usize = 1 << (usize::BITS - 1);

/// The number of bound agents, with a flag set once the dispatcher is shut down, in one word:
/// binding a million agents (skynet) takes no lock. Whoever brings it to "shut down, none
/// bound" closes the dispatcher's queues (the `close` argument), exactly once.
#[derive(Debug)]
pub(crate) struct BoundCount(AtomicUsize);

impl Default for BoundCount {
    fn default() -> Self {
        Self(AtomicUsize::new(0))
    }
}

impl BoundCount {
    /// Counts `agents` more bound agents (at least one) in one update; false (counting none)
    /// once the dispatcher is shut down.
    pub(crate) fn bind(&self, agents: usize, close: impl FnOnce()) -> bool {
        if self.0.fetch_add(agents, Ordering::AcqRel) & SHUT != 0 {
            self.unbind(agents, close);
            return false;
        }
        true
    }

    /// `agents` bound agents have finished (at least one).
    pub(crate) fn unbind(&self, agents: usize, close: impl FnOnce()) {
        if self.0.fetch_sub(agents, Ordering::AcqRel) == SHUT | agents {
            close();
        }
    }

    /// The dispatcher is shut down: it takes no new agent.
    pub(crate) fn shut(&self, close: impl FnOnce()) {
        if self.0.fetch_or(SHUT, Ordering::AcqRel) == 0 {
            close();
        }
    }

    /// Shut down with no agent bound: the dispatcher's threads may exit once their work is
    /// done.
    pub(crate) fn is_done(&self) -> bool {
        self.0.load(Ordering::Acquire) == SHUT
    }
}

#[cfg(test)]
mod tests {
    use super::BoundCount;
    use std::cell::Cell;

    #[test]
    fn closes_once_when_shut_and_the_last_agent_leaves() {
        let closed = Cell::new(0);
        let close = || closed.set(closed.get() + 1);
        let c = BoundCount::default();
        assert!(c.bind(1, close));
        assert!(c.bind(1, close));
        c.shut(close);
        assert_eq!(closed.get(), 0, "two agents still bound");
        assert!(!c.bind(1, close), "no binding after the shutdown");
        assert_eq!(closed.get(), 0);
        c.unbind(1, close);
        c.unbind(1, close);
        assert_eq!(closed.get(), 1);
    }

    #[test]
    fn a_cooperations_agents_leave_in_one_call() {
        let closed = Cell::new(0);
        let close = || closed.set(closed.get() + 1);
        let c = BoundCount::default();
        for _ in 0..4 {
            assert!(c.bind(1, close));
        }
        c.shut(close);
        c.unbind(3, close);
        assert_eq!(closed.get(), 0, "one agent still bound");
        c.unbind(1, close);
        assert_eq!(closed.get(), 1);
    }

    #[test]
    fn a_cooperations_agents_bind_in_one_call() {
        let closed = Cell::new(0);
        let close = || closed.set(closed.get() + 1);
        let c = BoundCount::default();
        assert!(c.bind(3, close));
        c.shut(close);
        assert!(!c.bind(2, close), "no binding after the shutdown");
        c.unbind(2, close);
        assert_eq!(closed.get(), 0, "one agent still bound");
        c.unbind(1, close);
        assert_eq!(closed.get(), 1);
    }

    #[test]
    fn closes_at_once_when_shut_with_none_bound() {
        let closed = Cell::new(0);
        let c = BoundCount::default();
        c.shut(|| closed.set(closed.get() + 1));
        assert_eq!(closed.get(), 1);
    }
}
