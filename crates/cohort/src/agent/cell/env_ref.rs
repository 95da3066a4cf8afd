//! [`EnvRef`]: an agent's environment and, when it declared some, its message limits, in
//! the one word its header already spent on the environment.
//!
//! The word is an `Arc<E>` pointer, or (bit 0 set) a pointer to a boxed [`Limited`] that owns
//! that `Arc` and the limits. So a cell without limits pays no memory for them (skynet's
//! memory budget); the send path reads the word only when the header's `limited` flag says
//! the agent has limits, so a sender to an agent without them leaves the word's line alone.
//! The word changes once, while the agent is defined (status `NEW`); senders read the limits
//! only after seeing the agent `ACTIVE`, which the registering thread publishes after
//! `define` (release/acquire). A sender racing with that change may still read the
//! environment through the old word: it points at the same live environment.

use crate::sync::{AtomicUsize, Ordering};
use std::marker::PhantomData;
use std::sync::Arc;

const LIMITED: usize = 1;

/// The environment of an agent with message limits, and the limits.
struct Limited<E, L> {
    env: Arc<E>,
    limits: L,
}

/// What the word owns, for variance and drop check.
type Owns<E, L> = (Arc<E>, Box<Limited<E, L>>);

/// See the module documentation.
pub(crate) struct EnvRef<E, L> {
    word: AtomicUsize,
    _owns: PhantomData<Owns<E, L>>,
}

// SAFETY: it owns an `Arc<E>` or a `Box<Limited<E, L>>` and hands out shared references
// only: `Send`/`Sync` when those are.
unsafe impl<E: Send + Sync, L: Send + Sync> Send for EnvRef<E, L> {}
// SAFETY: as above.
unsafe impl<E: Send + Sync, L: Send + Sync> Sync for EnvRef<E, L> {}

impl<E, L> EnvRef<E, L> {
    pub(crate) fn new(env: Arc<E>) -> Self {
        Self {
            word: AtomicUsize::new(Arc::into_raw(env) as usize),
            _owns: PhantomData,
        }
    }

    #[inline(always)]
    fn word(&self) -> usize {
        self.word.load(Ordering::Acquire)
    }

    /// The limits, if set.
    #[inline(always)]
    pub(crate) fn limits(&self) -> Option<&L> {
        let w = self.word();
        if w & LIMITED == 0 {
            return None;
        }
        // SAFETY: a tagged word points at a live `Limited`, freed only with `self`.
        Some(unsafe { &(*((w & !LIMITED) as *const Limited<E, L>)).limits })
    }

    /// The environment.
    #[inline]
    pub(crate) fn get(&self) -> &E {
        let w = self.word();
        if w & LIMITED == 0 {
            // SAFETY: an untagged word is an `Arc<E>` pointer owned by `self` (or by the
            // `Limited` that took it over, which lives as long as `self`).
            unsafe { &*(w as *const E) }
        } else {
            // SAFETY: as in `limits`.
            unsafe { &(*((w & !LIMITED) as *const Limited<E, L>)).env }
        }
    }

    /// One more handle to the environment.
    pub(crate) fn arc(&self) -> Arc<E> {
        let e: *const E = self.get();
        // SAFETY: `e` is the data pointer of a live `Arc<E>` (see `get`).
        unsafe { crate::sync::arc_from_ref(e) }
    }

    /// Sets the limits; false if they were already set (nothing changes then).
    ///
    /// # Safety
    /// Not called concurrently with itself (the registering thread, in `define`).
    pub(crate) unsafe fn set_limits(&self, limits: L) -> bool {
        let w = self.word();
        if w & LIMITED != 0 {
            return false;
        }
        // SAFETY: the untagged word is the `Arc<E>` this `EnvRef` owns: the box takes it
        // over (same pointee, so concurrent readers of the old word stay valid).
        let env = unsafe { Arc::from_raw(w as *const E) };
        let boxed = Box::into_raw(Box::new(Limited { env, limits }));
        self.word.store(boxed as usize | LIMITED, Ordering::Release);
        true
    }
}

impl<E, L> Drop for EnvRef<E, L> {
    fn drop(&mut self) {
        let w = self.word();
        if w & LIMITED == 0 {
            // SAFETY: the owned `Arc<E>` (see `new`), released once.
            unsafe { drop(Arc::from_raw(w as *const E)) }
        } else {
            // SAFETY: the owned `Limited` (see `set_limits`), released once.
            unsafe { drop(Box::from_raw((w & !LIMITED) as *mut Limited<E, L>)) }
        }
    }
}

impl<E, L> std::ops::Deref for EnvRef<E, L> {
    type Target = E;
    #[inline]
    fn deref(&self) -> &E {
        self.get()
    }
}

#[cfg(all(test, not(cohort_loom)))]
mod tests {
    use super::*;

    #[test]
    fn limits_take_over_the_environment_and_both_are_freed() {
        let env = Arc::new(5u32);
        let r: EnvRef<u32, String> = EnvRef::new(env.clone());
        assert_eq!(*r, 5);
        assert!(r.limits().is_none());
        assert_eq!(Arc::strong_count(&env), 2);
        // SAFETY: one thread.
        assert!(unsafe { r.set_limits("ten".into()) });
        // SAFETY: one thread.
        assert!(!unsafe { r.set_limits("again".into()) });
        assert_eq!(r.limits().map(String::as_str), Some("ten"));
        assert_eq!(*r, 5);
        let more = r.arc();
        assert_eq!(Arc::strong_count(&env), 3);
        drop(more);
        drop(r);
        assert_eq!(Arc::strong_count(&env), 1);
    }
}

#[cfg(all(test, cohort_loom))]
mod loom_model {
    use super::*;
    use loom::sync::atomic::AtomicU8;

    /// The registering thread sets limits and then publishes `ACTIVE`; a sender that sees
    /// `ACTIVE` sees the limits, and reads a valid environment whatever it sees.
    #[test]
    fn limits_published_by_the_status() {
        loom::model(|| {
            let env = Arc::new(7u32);
            let r = Arc::new(EnvRef::<u32, u64>::new(env));
            let status = Arc::new(AtomicU8::new(0));
            let (r2, s2) = (r.clone(), status.clone());
            let sender = loom::thread::spawn(move || {
                let active = s2.load(Ordering::Acquire) == 1;
                assert_eq!(*r2.get(), 7);
                if active {
                    assert_eq!(r2.limits(), Some(&42));
                }
            });
            // SAFETY: only this thread sets limits.
            assert!(unsafe { r.set_limits(42) });
            status.store(1, Ordering::Release);
            sender.join().unwrap();
            assert_eq!(r.limits(), Some(&42));
        });
    }
}
