//! An asymmetric fence pair for the LIFO slots: the owner of a slot orders a store before a
//! load on every hand-off, and the other workers only when they steal from it or park with no
//! time limit, which is rare. So the owner's side can be a compiler fence and the other side
//! a heavy fence that makes every running thread of the process execute a full memory
//! barrier (Linux `membarrier`, private expedited): together they order as two `SeqCst`
//! fences do.
//!
//! The process registers for `membarrier` once. In a process with one thread registering is
//! a quick system call, so it is done before `main` (an `.init_array` entry); with more
//! threads it waits for an RCU grace period, long enough to slow a pool's first work, so if
//! the early registration did not happen (the linker may leave the entry out) the first pool
//! starts it on a thread of its own. Until
//! it is done, and where the kernel lacks it (or under valgrind or loom), both sides are
//! `SeqCst` fences. Each slot switches once, by its owner, who announces it (a store between
//! two `SeqCst` fences); a heavy fence reads that announcement after a `SeqCst` fence of its
//! own and issues `membarrier` only if it saw it. If it did not, its fence precedes the
//! owner's second fence in their total order, so the owner's later loads see what the heavy
//! side stored before: the pair still orders as two `SeqCst` fences, from both sides.

use crate::sync::{AtomicBool, Ordering, fence};
#[cfg(not(cohort_loom))]
use std::sync::atomic::AtomicBool as StdAtomicBool;

/// Whether the process is registered for private expedited `membarrier`.
#[cfg(not(cohort_loom))]
static REGISTERED: StdAtomicBool = StdAtomicBool::new(false);

/// The early registration: run by the loader before `main`, while the process has one
/// thread.
#[cfg(all(target_os = "linux", not(cohort_loom), not(test)))]
#[used]
// SAFETY: `.init_array` holds `extern "C" fn()` entries that the loader calls once before
// `main`; this one only makes a system call and stores a flag (no allocation, no panic, no
// use of anything that `main` sets up).
#[unsafe(link_section = ".init_array")]
static REGISTER_BEFORE_MAIN: extern "C" fn() = register_before_main;

#[cfg(all(target_os = "linux", not(cohort_loom), not(test)))]
extern "C" fn register_before_main() {
    register_and_note();
}

/// Starts the process's registration for `membarrier`, once, on a thread of its own, unless
/// it was done before `main`.
pub(crate) fn start_registration() {
    #[cfg(not(cohort_loom))]
    {
        if registered() {
            return;
        }
        static STARTED: std::sync::Once = std::sync::Once::new();
        STARTED.call_once(|| {
            let spawned = std::thread::Builder::new()
                .name("cohort-membarrier".into())
                .spawn(register_and_note);
            // No thread, no registration: the fences stay symmetric.
            drop(spawned);
        });
    }
}

/// Registers the process and notes it for the owners' fences.
#[cfg(not(cohort_loom))]
fn register_and_note() {
    if register() {
        REGISTERED.store(true, Ordering::Release);
    }
}

#[cfg(not(cohort_loom))]
fn registered() -> bool {
    REGISTERED.load(Ordering::Acquire)
}

#[cfg(cohort_loom)]
fn registered() -> bool {
    false
}

/// The owner's side of a slot's fence pair, and whether it has switched to a compiler fence.
pub(crate) struct OwnerFence {
    /// Written by the owner only, once, false to true.
    light: AtomicBool,
}

impl OwnerFence {
    pub(crate) fn new() -> Self {
        Self {
            light: AtomicBool::new(false),
        }
    }

    /// The owner's fence: orders its earlier stores before its later loads, against another
    /// thread's [`heavy_fence`].
    #[inline(always)]
    pub(crate) fn owner_fence(&self) {
        if self.light.load(Ordering::Relaxed) {
            std::sync::atomic::compiler_fence(Ordering::SeqCst);
        } else {
            self.symmetric_fence();
        }
    }

    /// A `SeqCst` fence; and once the process is registered, the switch to a compiler fence,
    /// announced between two `SeqCst` fences (see the module's doc).
    #[cold]
    fn symmetric_fence(&self) {
        fence(Ordering::SeqCst);
        if registered() {
            self.light.store(true, Ordering::Relaxed);
            fence(Ordering::SeqCst);
        }
    }

    /// Whether the owner may use a compiler fence alone: read by the heavy side after its
    /// `SeqCst` fence.
    pub(crate) fn is_light(&self) -> bool {
        self.light.load(Ordering::Relaxed)
    }
}

/// The rare side's fence, against the owners of the slots for which `any_light` says a
/// compiler fence may be all they issue: a `SeqCst` fence, then `membarrier` if so.
pub(crate) fn heavy_fence(any_light: impl FnOnce() -> bool) {
    fence(Ordering::SeqCst);
    if any_light() {
        membarrier();
    }
}

/// Registers the process for private expedited `membarrier`; false where it is not offered.
#[cfg(all(target_os = "linux", not(cohort_loom)))]
fn register() -> bool {
    use rustix::thread::{MembarrierCommand, membarrier, membarrier_query};
    let offered = membarrier_query();
    offered.contains_command(MembarrierCommand::PrivateExpedited)
        && offered.contains_command(MembarrierCommand::RegisterPrivateExpedited)
        && membarrier(MembarrierCommand::RegisterPrivateExpedited).is_ok()
}

#[cfg(all(not(target_os = "linux"), not(cohort_loom)))]
fn register() -> bool {
    false
}

/// Every running thread of the process executes a full barrier before this returns (one
/// that is not running passed one when it stopped). Called only once an owner has seen the
/// process registered.
#[cfg(all(target_os = "linux", not(cohort_loom)))]
fn membarrier() {
    use rustix::thread::{MembarrierCommand, membarrier};
    // Cannot fail once the process is registered: it fails only for an unknown command or an
    // unregistered process.
    let done = membarrier(MembarrierCommand::PrivateExpedited);
    debug_assert!(
        done.is_ok(),
        "membarrier failed after registration: {done:?}"
    );
}

#[cfg(any(not(target_os = "linux"), cohort_loom))]
fn membarrier() {
    fence(Ordering::SeqCst);
}

#[cfg(all(test, not(cohort_loom)))]
mod tests {
    use super::{OwnerFence, heavy_fence, registered, start_registration};

    /// Once the registration thread is done (where the kernel offers `membarrier`), an
    /// owner's fence switches to a compiler fence and a heavy fence issues `membarrier`.
    #[test]
    #[cfg(target_os = "linux")]
    fn an_owner_switches_once_the_process_is_registered() {
        crate::testing::watchdog(std::time::Duration::from_secs(60), check_the_switch);
    }

    #[cfg(target_os = "linux")]
    fn check_the_switch() {
        start_registration();
        let offered = rustix::thread::membarrier_query()
            .contains_command(rustix::thread::MembarrierCommand::RegisterPrivateExpedited);
        let owner = OwnerFence::new();
        owner.owner_fence();
        if !offered {
            assert!(!owner.is_light());
            return;
        }
        // The registration runs on its own thread: wait for it (the watchdog bounds this),
        // then the next fence switches.
        while !registered() {
            std::thread::yield_now();
        }
        owner.owner_fence();
        assert!(owner.is_light());
        heavy_fence(|| owner.is_light());
    }
}
