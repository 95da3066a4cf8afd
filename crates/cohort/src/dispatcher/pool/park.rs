//! How an idle pool worker parks (for a while, then with no time limit), and how filling a
//! LIFO slot wakes it: a worker parked for good must look at the other workers' slots once
//! more after each fill, to take a queue stranded there by a blocked owner (nobody else would
//! wake it for that).

use super::asymmetric_fence::heavy_fence;
use crate::queue::wakeup::Wakeup;
use crate::sync::{AtomicBool, AtomicUsize, Ordering, fence};

/// The workers of a pool parked with no time limit, and how many are.
pub(crate) struct ForeverParked {
    flags: Box<[AtomicBool]>,
    count: AtomicUsize,
}

impl ForeverParked {
    pub(crate) fn new(workers: usize) -> Self {
        Self {
            flags: (0..workers).map(|_| AtomicBool::new(false)).collect(),
            count: AtomicUsize::new(0),
        }
    }

    /// Worker `index` parks on `wakeup` until `ready()` holds: first for
    /// [`PARK_FOR_GOOD_AFTER`](crate::defaults::PARK_FOR_GOOD_AFTER), then with no time
    /// limit. Before that second sleep, its count increment, a heavy fence and the slot loads
    /// in `ready` pair with a filler's slot store, owner's fence and count load (see
    /// [`wake_others`](Self::wake_others)): one of the two sees the other. The first sleep
    /// has no heavy fence: a fill that races with it is seen when it ends. `any_light` says
    /// whether another slot's owner may fence with a compiler fence alone. (Loom, which
    /// models both fences as `SeqCst` fences, cannot tell the heavy one from the fence in
    /// `Wakeup::sleep`; against a filler's compiler fence only the heavy one counts.)
    ///
    /// `sweep` runs when the first sleep ends with no work, and after each bounded sleep that
    /// it asks for: while it returns a time (queues still waiting to give back their memory,
    /// see `queue::sweep_list`), the worker sleeps no longer than that, counted as parked all
    /// along, and a fill that races with such a sleep is seen when it ends, as with the first.
    pub(crate) fn park(
        &self,
        index: usize,
        wakeup: &Wakeup,
        any_light: impl FnOnce() -> bool,
        ready: impl Fn() -> bool,
        mut sweep: impl FnMut() -> Option<std::time::Duration>,
    ) {
        self.flags[index].store(true, Ordering::SeqCst);
        self.count.fetch_add(1, Ordering::SeqCst);
        crate::dispatcher::reuse::release_thread_caches();
        wakeup.sleep_timeout(crate::defaults::PARK_FOR_GOOD_AFTER, &ready);
        while !ready() {
            if let Some(next) = sweep() {
                wakeup.sleep_timeout(next, &ready);
                continue;
            }
            heavy_fence(any_light);
            wakeup.sleep(ready);
            break;
        }
        self.count.fetch_sub(1, Ordering::SeqCst);
        self.flags[index].store(false, Ordering::Relaxed);
    }

    /// A LIFO slot of worker `filler` was filled (a store and the owner's fence, or a
    /// `SeqCst` swap): wakes every other worker parked with no time limit, once, to watch it.
    #[inline]
    pub(crate) fn wake_others(&self, filler: usize, wakeups: &[Wakeup]) {
        // Loom models SeqCst loads and read-modify-writes as acquire/release, not as members
        // of one total order; the fence gives its model the order that the slot's SeqCst swap
        // and this SeqCst load have in a real build.
        #[cfg(cohort_loom)]
        fence(Ordering::SeqCst);
        if self.count.load(Ordering::SeqCst) == 0 {
            return;
        }
        // A worker counted here may not have said it sleeps yet; its look at the slots comes
        // after it says so and a SeqCst fence, so with this fence either that look sees the
        // slot filled or the loads below see it sleeping.
        fence(Ordering::SeqCst);
        for (j, parked) in self.flags.iter().enumerate() {
            if j != filler && parked.load(Ordering::Relaxed) {
                wakeups[j].notify_fenced();
            }
        }
    }
}
