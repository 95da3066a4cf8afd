//! The priority policy of a pool (`prio_one_thread`): one worker, a run queue per priority
//! that other threads push to, flagged in one word, and a FIFO per priority that only the
//! worker uses. See `docs/runtime-semantics.md`, "Pool dispatchers".

use super::{Pool, QueueRef, WorkerCtx, take_from};
use std::sync::atomic::Ordering;

/// How a priority dispatcher chooses among priorities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PrioMode {
    /// Always the highest priority with work, re-checked after every demand.
    Strict,
    /// Round robin from the highest priority down, each priority handling up to its quota of
    /// demands before the next one gets its turn.
    Quoted([usize; PRIORITIES]),
}

/// Number of agent priorities (`p0` lowest to `p7` highest, as in SObjectizer).
pub(crate) const PRIORITIES: usize = 8;
// One bit per priority in a `u8` (`Pool::prio_woken`, `WorkerCtx::prio_held`).
const _: () = assert!(PRIORITIES <= u8::BITS as usize);

impl Pool {
    /// Priority policy: strict takes the highest priority with work (its queues run one
    /// demand per turn); quoted serves the current priority until its quota is used up or it
    /// has nothing left, then the next lower one (wrapping to the highest).
    pub(super) fn next_by_priority(&self, ctx: &WorkerCtx, mode: PrioMode) -> Option<QueueRef> {
        self.prio_take_woken(ctx);
        match mode {
            PrioMode::Strict => {
                let held = ctx.prio_held.get();
                // The highest priority holding a queue.
                (held != 0)
                    .then(|| self.prio_take(ctx, (u8::BITS - 1 - held.leading_zeros()) as usize))
                    .flatten()
            }
            PrioMode::Quoted(quotas) => {
                let (mut p, left) = ctx.prio_cursor.get();
                if left > 0
                    && let Some(q) = self.prio_take(ctx, p)
                {
                    return Some(q);
                }
                for _ in 0..PRIORITIES {
                    p = if p == 0 { PRIORITIES - 1 } else { p - 1 };
                    if let Some(q) = self.prio_take(ctx, p) {
                        ctx.prio_cursor.set((p, quotas[p]));
                        return Some(q);
                    }
                }
                None
            }
        }
    }

    /// Priority policy: the queues woken from outside since the last look (their priorities
    /// flagged in `prio_woken`) join the back of the worker's own FIFO of their priority, in
    /// the order they were woken, so neither kind of wake-up starves the other.
    pub(super) fn prio_take_woken(&self, ctx: &WorkerCtx) {
        if self.prio_woken.load(Ordering::Relaxed) == 0 {
            return;
        }
        // Acquire: the pushes made before the flags were set. A push whose flag comes after
        // this swap is found at the next look (its flag stays set).
        let woken = self.prio_woken.swap(0, Ordering::Acquire);
        let mut local = ctx.prio_local.borrow_mut();
        let mut held = ctx.prio_held.get();
        for p in (0..PRIORITIES).filter(|p| woken & (1 << p) != 0) {
            while let Some(q) = take_from(&self.by_priority[p]) {
                local[p].push_back(q);
                held |= 1 << p;
            }
        }
        ctx.prio_held.set(held);
    }

    /// Priority policy: the next queue of priority `p` in this worker's own FIFOs.
    pub(super) fn prio_take(&self, ctx: &WorkerCtx, p: usize) -> Option<QueueRef> {
        if ctx.prio_held.get() & (1 << p) == 0 {
            return None;
        }
        let mut local = ctx.prio_local.borrow_mut();
        let q = local[p].pop_front();
        if local[p].is_empty() {
            ctx.prio_held.set(ctx.prio_held.get() & !(1 << p));
        }
        q
    }

    /// Priority policy: the pool's one worker schedules `q` itself (it woke it, or it has
    /// work left after its turn): into its own FIFO of the queue's priority.
    pub(super) fn prio_keep(&self, ctx: &WorkerCtx, q: QueueRef) {
        debug_assert_eq!(self.wakeups.len(), 1, "a priority pool has one worker");
        let p = usize::from(q.priority());
        ctx.prio_local.borrow_mut()[p].push_back(q);
        ctx.prio_held.set(ctx.prio_held.get() | 1 << p);
    }

    /// Quoted round robin: `ran` demands of priority `p` were handled.
    pub(super) fn spend_quota(&self, ctx: &WorkerCtx, p: usize, ran: usize) {
        let (cur, left) = ctx.prio_cursor.get();
        if cur == p {
            ctx.prio_cursor.set((cur, left.saturating_sub(ran)));
        }
    }
}
