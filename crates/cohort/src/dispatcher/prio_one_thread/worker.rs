//! The worker loop of `prio_one_thread`: one thread running a queue of demands per priority.
//!
//! Every agent of priority `p` is bound to queue `p`, as every agent of a `one_thread`
//! dispatcher is bound to its one queue; so a handler's send to an agent of its own priority is
//! a push to the local half of the queue that runs it (no atomic operation, no allocation), and
//! an agent's demands keep their order (one queue). A send from another thread, or to another
//! priority, goes to that queue's remote half and flags the queue in the thread's
//! [`SharedWakeup`] (unless the flag is up already): the loop reads that one word per demand to
//! learn whether anything arrived from outside, and lowers a flag it took in when another
//! priority is about to run or before it sleeps (see [`SharedWakeup`] for why a push that found
//! its flag up is never lost). The loop keeps a bit per priority that may have demands (in
//! either half); the mode chooses among them. A remote half moves to its local tail when the
//! local half runs dry, and every [`defaults::LOCAL_BATCH`] demands when its priority ran (as
//! `one_thread`'s does), at most that batch at a time, so a busy local flow does not keep
//! remote demands waiting, and a flood from outside moves no more than the loop runs (a
//! priority waiting behind a higher one keeps its backlog in its remote half's blocks):
//! - strict: the highest priority with demands, chosen again after every demand;
//! - quoted: priorities take turns from the highest down, each running up to its quota of
//!   demands (or until it has none), then the next lower one (wrapping to the highest).

use crate::defaults;
use crate::dispatcher::reuse::spin::{Spinner, WorkerSpin};
use crate::queue::wakeup::SharedWakeup;
use crate::queue::{DedicatedReader, EventQueue, Local, QueueArc, QueueItem, RunningGuard};
use crate::stats::WorkerProbe;
use std::cell::Cell;

/// Number of agent priorities (`P0` lowest to `P7` highest, as in SObjectizer).
pub(crate) const PRIORITIES: usize = 8;
// One bit per priority in a `u8` (the flags of `SharedWakeup`, `Ready`).
const _: () = assert!(PRIORITIES <= u8::BITS as usize);

/// How a priority dispatcher chooses among priorities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PrioMode {
    /// Always the highest priority with work, chosen again after every demand.
    Strict,
    /// Round robin from the highest priority down, each priority handling up to its quota of
    /// demands before the next one gets its turn.
    Quoted([usize; PRIORITIES]),
}

/// The worker's view of which priorities have demands.
#[derive(Default)]
struct Ready {
    /// Bit `p`: queue `p` may hold a demand, in its local or its remote half.
    any: u8,
    /// Bit `p`: queue `p`'s remote half may hold demands not moved yet (flagged by a push,
    /// found by a look at the queue, or left after a move of [`defaults::LOCAL_BATCH`]).
    remote: u8,
    /// Bit `p`: queue `p`'s flag is up and already counted in `any` and `remote` (a flag stays
    /// up until the worker lowers it, see [`Arrivals`], and counts once).
    absorbed: u8,
}

impl Ready {
    /// Queues `which` have demands in their remote halves.
    #[inline]
    fn add_remote(&mut self, which: u8) {
        self.any |= which;
        self.remote |= which;
    }
}

/// The queue that this thread runs now (the one local sends go to), switched only when the
/// priority changes.
struct Current<'q, T: QueueItem> {
    queues: &'q [QueueArc<T>],
    index: usize,
    guard: Option<RunningGuard<'q, T>>,
}

impl<'q, T: QueueItem> Current<'q, T> {
    /// Makes queue `p` the one this thread runs and returns it.
    #[inline]
    fn enter(&mut self, p: usize) -> Local<'q, T> {
        let q = &*self.queues[p];
        if self.index != p || self.guard.is_none() {
            self.guard = None;
            // SAFETY: this thread is the only one that runs the queues of its dispatcher (one
            // worker), and the guard is dropped before they are (the loop owns it).
            self.guard = Some(unsafe { RunningGuard::enter(q) });
            self.index = p;
        }
        // SAFETY: the guard of `q` is held in `self` until the priority changes, and the
        // token is used only until the loop enters another queue.
        unsafe { Local::assume(q) }
    }
}

/// Runs `queues` (index = priority) on this thread by `mode` until they are all closed and
/// empty, executing each demand with `execute(queue, demand, budget)`, which returns how many
/// demands that counts as (at least one). Every queue must have been built with
/// [`EventQueue::in_group`] on `group`, bit `1 << index`.
pub(crate) fn run_prio<T: QueueItem>(
    queues: &[QueueArc<T>],
    group: &SharedWakeup,
    mode: PrioMode,
    spin: WorkerSpin,
    probe: Option<&WorkerProbe>,
    mut execute: impl FnMut(&EventQueue<T>, T, usize) -> usize,
) {
    debug_assert!(queues.len() <= PRIORITIES);
    group.register_current();
    let mut ready = Ready::default();
    let mut current = Current {
        queues,
        index: 0,
        guard: None,
    };
    // Quoted: the priority being served and the demands left in its quota ("priority 0,
    // quota spent": the first choice wraps to the highest).
    let mut cursor = (0usize, 0usize);
    let all_closed = || queues.iter().all(|q| q.is_closed());
    let readers: Vec<DedicatedReader<'_, T>> = queues
        .iter()
        // SAFETY: this thread is the dedicated worker of every queue of `queues`, the one
        // reader of their remote halves, until it retires them below.
        .map(|q| unsafe { DedicatedReader::claim(q) })
        .collect();
    let any_remote = || readers.iter().any(DedicatedReader::has_remote);
    let arrivals = Arrivals {
        group,
        readers: &readers,
    };
    let _turns = crate::dispatcher::turn_end::TurnScope::enter();
    let spinner = Spinner::new(spin);
    // Bit `p`: priority `p` ran a demand in the last pass.
    let mut ran_in_pass = 0u8;
    loop {
        let t0 = probe.and_then(WorkerProbe::start);
        // Every `LOCAL_BATCH` demands, behind whatever the local halves hold, for the queues
        // whose own flow ran (and whose flag is up: a push that found it up is in the remote
        // half unflagged): a queue that waits behind a higher priority keeps its backlog in
        // its remote half (it takes some in once its local half runs dry).
        let which = (ready.remote | ready.absorbed) & ran_in_pass;
        if which != 0 {
            move_remote(&mut current, &mut ready, which);
        }
        ran_in_pass = 0;
        let mut ran = 0;
        while ran < defaults::LOCAL_BATCH {
            // Flags the worker has not taken in yet (those it took in stay up until it lowers
            // them, so the word holds at least those).
            let flags = group.flagged();
            if flags != ready.absorbed {
                arrivals.absorb(&mut ready, flags);
            }
            let Some((p, budget)) = choose(mode, ready.any, &mut cursor) else {
                break;
            };
            let Some((q, d)) = next_demand(&mut current, &mut ready, p) else {
                arrivals.ran_dry(&mut ready, p);
                continue;
            };
            let n = execute(q.queue(), d, budget);
            ran += n;
            ran_in_pass |= 1 << p;
            if let PrioMode::Quoted(_) = mode {
                cursor.1 = cursor.1.saturating_sub(n);
            }
            // The handler's local sends went to `q`, the queue it ran from.
            if q.is_empty() && ready.remote & (1 << p) == 0 {
                // Run dry: what a burst of sends grew its local ring to goes back.
                q.release_spare();
                arrivals.ran_dry(&mut ready, p);
            }
        }
        if ran > 0 {
            crate::dispatcher::turn_end::end_turn();
        }
        if let (Some(p), Some(t0)) = (probe, t0) {
            let left = (0..queues.len()).map(|i| current.enter(i).len()).sum();
            p.busy(t0, ran, left);
        }
        if ran > 0 || ready.any != 0 {
            continue;
        }
        // Nothing flagged, nothing left: a push may have landed with its flag still unset
        // (its sender between the two), or found its flag up and left it: look at the queues
        // themselves.
        if any_remote() {
            ready.add_remote(
                (0..queues.len())
                    .filter(|&i| readers[i].has_remote())
                    .fold(0, |m, i| m | 1 << i),
            );
            arrivals.lower_stale(&mut ready);
            continue;
        }
        if all_closed() {
            // Closed and empty: but a remote push may race with the close; take it first.
            if any_remote() {
                continue;
            }
            break;
        }
        let t0 = probe.and_then(WorkerProbe::start);
        let work = || any_remote() || all_closed();
        // Flags the worker took in stay up while it spins, so that pushes that keep coming
        // find them up and neither write the word nor fence; it lowers them only once the
        // spin is over, before it sleeps (see `SharedWakeup`).
        let absorbed = ready.absorbed;
        let found = Cell::new(None);
        spinner.wait(
            || group.flagged() & !absorbed != 0 || work(),
            || {
                let up = group.flagged();
                if up != 0 {
                    let with_work = arrivals.lower_and_look(up);
                    found.set(Some((up, with_work)));
                    if with_work != 0 {
                        return;
                    }
                }
                crate::dispatcher::reuse::release_thread_caches();
                // A flag raised after the worker announced that it sleeps is seen here, or
                // its raiser sees the announcement and wakes the worker.
                group.sleep(|| group.any_flagged_latest() || work());
            },
        );
        if let Some((lowered, with_work)) = found.get() {
            ready.absorbed &= !lowered;
            ready.add_remote(with_work);
        }
        if let (Some(p), Some(t0)) = (probe, t0) {
            p.idle(t0);
        }
    }
    current.guard = None;
    for r in readers {
        r.retire();
    }
    crate::dispatcher::reuse::release_thread_caches();
}

/// What arrives from other threads: the flags of the thread's [`SharedWakeup`] and the
/// remote halves of its queues, which the worker reads.
struct Arrivals<'a, 'q, T: QueueItem> {
    group: &'a SharedWakeup,
    readers: &'a [DedicatedReader<'q, T>],
}

impl<T: QueueItem> Arrivals<'_, '_, T> {
    /// Lowers the flags `which` and looks at their queues once more, in a way ordered against
    /// every push (see [`SharedWakeup`]): the queues of `which` with demands, among them any
    /// pushed by a sender that saw its flag still up.
    #[inline(never)]
    fn lower_and_look(&self, which: u8) -> u8 {
        self.group.lower(which);
        (0..self.readers.len())
            .filter(|&i| which & (1 << i) != 0 && self.readers[i].has_remote_after_lower())
            .fold(0, |m, i| m | 1 << i)
    }

    /// Flags stay up only for the priority the worker runs (and while it spins): the pushes
    /// to any other priority must raise theirs, for the worker's next choice to see them. So
    /// when the worker takes in new flags, and when it finds work by looking at the queues,
    /// it lowers the flags it took in for queues it has read to their ends, and looks at
    /// those queues once more (what it finds goes into `ready`).
    #[cold]
    #[inline(never)]
    fn lower_stale(&self, ready: &mut Ready) {
        let stale = ready.absorbed & !ready.remote;
        if stale != 0 {
            let with_work = self.lower_and_look(stale);
            ready.absorbed &= !stale;
            ready.add_remote(with_work);
        }
    }

    /// New flags are up (`flags` holds every flag the worker took in, and more): the worker
    /// takes them in, after lowering those it has no use for ([`Self::lower_stale`]).
    #[cold]
    #[inline(never)]
    fn absorb(&self, ready: &mut Ready, flags: u8) {
        let new = flags & !ready.absorbed;
        self.lower_stale(ready);
        ready.absorbed |= new;
        ready.add_remote(new);
    }

    /// Priority `p` has no demand left that the worker knows of. If another has, the worker
    /// runs that one next, so `p`'s flag, if the worker took it in, comes down
    /// ([`Self::lower_stale`]).
    #[inline]
    fn ran_dry(&self, ready: &mut Ready, p: usize) {
        ready.any &= !(1 << p);
        if ready.any != 0 && ready.absorbed & (1 << p) != 0 {
            self.lower_stale(ready);
        }
    }
}

/// Queue `p`, entered, and its next demand: from its local half, or, when that is empty,
/// from its remote half moved there first.
#[inline]
fn next_demand<'q, T: QueueItem>(
    current: &mut Current<'q, T>,
    ready: &mut Ready,
    p: usize,
) -> Option<(Local<'q, T>, T)> {
    let q = current.enter(p);
    if let Some(d) = q.pop() {
        return Some((q, d));
    }
    if ready.remote & (1 << p) == 0 {
        return None;
    }
    move_remote(current, ready, 1 << p);
    let q = current.enter(p);
    q.pop().map(|d| (q, d))
}

/// Moves the remote halves of the queues in `which` to their local tails (up to
/// [`defaults::LOCAL_BATCH`] each, what one pass runs: a backlog stays in the remote half's
/// blocks, which are reused, rather than growing a local ring), keeping the bit of those that
/// kept some.
#[inline(never)]
fn move_remote<T: QueueItem>(current: &mut Current<'_, T>, ready: &mut Ready, which: u8) {
    for p in (0..current.queues.len()).filter(|p| which & (1 << p) != 0) {
        let q = current.enter(p);
        if q.drain_remote(defaults::LOCAL_BATCH) > 0 {
            // Moved to the local half, which the worker runs only for a priority it counts
            // as ready (this one may have run dry before these arrived).
            ready.any |= 1 << p;
        }
        if !q.has_remote() {
            ready.remote &= !(1 << p);
        }
    }
}

/// The priority to run next and the budget of its demand, or `None` when no queue may hold
/// one.
#[inline]
fn choose(mode: PrioMode, local: u8, cursor: &mut (usize, usize)) -> Option<(usize, usize)> {
    if local == 0 {
        return None;
    }
    match mode {
        // The highest priority holding a demand.
        PrioMode::Strict => Some(((u8::BITS - 1 - local.leading_zeros()) as usize, 1)),
        PrioMode::Quoted(quotas) => {
            let (mut p, left) = *cursor;
            if left > 0 && local & (1 << p) != 0 {
                return Some((p, left));
            }
            // The next lower priority with demands, wrapping to the highest.
            loop {
                p = if p == 0 { PRIORITIES - 1 } else { p - 1 };
                if local & (1 << p) != 0 {
                    *cursor = (p, quotas[p]);
                    return Some((p, quotas[p]));
                }
            }
        }
    }
}

#[cfg(all(test, not(cohort_loom)))]
mod tests {
    use super::*;
    use crate::queue::wakeup::SharedWakeup;
    use std::sync::Arc;
    use std::time::Duration;

    #[derive(Debug)]
    struct Item(usize, u32);

    impl QueueItem for Item {
        type Early = ();

        fn reject(self) {
            panic!("{self:?} was never executed");
        }
    }

    /// A wake-up group and a queue in it for each of two priorities.
    fn two_priorities() -> (Arc<SharedWakeup>, Vec<QueueArc<Item>>) {
        let group = Arc::new(SharedWakeup::new());
        let queues = (0..2)
            .map(|p| EventQueue::in_group(group.clone(), 1 << p))
            .collect();
        (group, queues)
    }

    /// Runs `queues` in strict order on this thread, without spinning, until they close.
    fn run_strict(
        queues: &[QueueArc<Item>],
        group: &SharedWakeup,
        execute: impl FnMut(&EventQueue<Item>, Item, usize) -> usize,
    ) {
        run_prio(
            queues,
            group,
            PrioMode::Strict,
            Duration::ZERO.into(),
            None,
            execute,
        )
    }

    /// A burst of a handler's own sends to its priority's queue grows that local ring; once
    /// they have run, the queue is dry and its ring gives back what it grew beyond its kept
    /// capacity.
    #[test]
    fn a_burst_of_local_sends_gives_its_memory_back_once_run() {
        const BURST: u32 = 20_000;
        let (group, mut queues) = two_priorities();
        queues[1].push_remote(Item(1, 0));
        let mut ran = 0;
        run_strict(&queues, &group, |q, it, _| {
            if it.1 == 0 {
                let local = q.local().expect("a demand runs on its queue's thread");
                for i in 1..=BURST {
                    local.push(Item(1, i));
                }
            }
            assert_eq!(it.1, ran, "the burst runs in order");
            ran += 1;
            if ran == BURST + 1 {
                for q in &queues {
                    q.close();
                }
            }
            1
        });
        assert_eq!(ran, BURST + 1);
        let q = QueueArc::get_mut(&mut queues[1]).expect("the worker has returned");
        assert_eq!(
            q.local_capacity_for_test(),
            crate::queue::KEPT_CAPACITY,
            "the local ring kept its burst's slots"
        );
    }

    /// Strict order with both priorities flooded from outside before the worker starts: the
    /// higher one runs first, in order, and the lower one keeps its backlog in its remote
    /// half meanwhile: neither local ring grows beyond two batches (what a pass moves in, behind
    /// what the last one left).
    #[test]
    fn a_flood_waiting_behind_a_higher_priority_stays_in_its_remote_half() {
        const N: u32 = 5_000;
        let (group, mut queues) = two_priorities();
        for i in 0..N {
            for (p, q) in queues.iter().enumerate() {
                q.push_remote(Item(p, i));
            }
        }
        let mut ran: Vec<(usize, u32)> = Vec::new();
        run_strict(&queues, &group, |_, it, _| {
            ran.push((it.0, it.1));
            if ran.len() == 2 * N as usize {
                for q in &queues {
                    q.close();
                }
            }
            1
        });
        let expected: Vec<(usize, u32)> = (0..N)
            .map(|i| (1, i))
            .chain((0..N).map(|i| (0, i)))
            .collect();
        assert!(
            ran == expected,
            "not priority 1 in order, then priority 0 in order"
        );
        for (p, q) in queues.iter_mut().enumerate() {
            let q = QueueArc::get_mut(q).expect("the worker has returned");
            assert!(
                q.local_capacity_for_test() <= 2 * defaults::LOCAL_BATCH,
                "priority {p}'s local ring grew to {} slots for a batch of {}",
                q.local_capacity_for_test(),
                defaults::LOCAL_BATCH
            );
        }
    }
}
