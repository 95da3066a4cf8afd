//! [`Handler`]: a type-erased message handler in two words, whose static table also names the
//! message type it takes, so that an agent with a single subscription keeps it inline in its
//! cell with no key beside it (see [`Subscriptions`](super::subscription::Subscriptions)).
//!
//! A `Box<dyn FnMut>` has the same two words, but its vtable is opaque: the key would need two
//! more. Here the table is a [`HandlerVt`] built per (message key, closure type) as a constant,
//! and carries the key, the call, the drop, and the stand-in that holds the handler's place in
//! the table while it runs.

use crate::agent::{Agent, Context};
use crate::message::Envelope;
use std::any::TypeId;
use std::marker::PhantomData;
use std::ptr::NonNull;

/// A handler's static table.
pub(crate) struct HandlerVt<A: Agent> {
    /// The subscription key of the messages the handler takes.
    key: TypeId,
    /// Calls the closure at the handler's data pointer.
    call: for<'c> unsafe fn(NonNull<u8>, &mut A, Envelope, &mut Context<'c, A>),
    /// Drops the closure at the handler's data pointer (and frees its box).
    drop: unsafe fn(NonNull<u8>),
    /// The table of the stand-in left in the subscription table while the handler runs: the
    /// same key, no code. `None` for a stand-in itself.
    stand_in: Option<&'static HandlerVt<A>>,
}

/// A boxed closure (no allocation when it is zero-sized, as a method or a closure capturing
/// nothing is) and its [`HandlerVt`].
pub(crate) struct Handler<A: Agent> {
    data: NonNull<u8>,
    vt: &'static HandlerVt<A>,
}

// SAFETY: a handler owns a closure that is `Send` (`Handler::new` requires it) and a pointer
// to an immutable static table.
unsafe impl<A: Agent> Send for Handler<A> {}

/// The constant tables of one closure type `F` taking messages of key `K`.
struct Tables<A, K, F>(PhantomData<fn(A, K, F)>);

impl<A, K, F> Tables<A, K, F>
where
    A: Agent,
    K: 'static,
    F: for<'c> FnMut(&mut A, Envelope, &mut Context<'c, A>) + Send + 'static,
{
    const REAL: &'static HandlerVt<A> = &HandlerVt {
        key: TypeId::of::<K>(),
        call: call_closure::<A, F>,
        drop: drop_closure::<F>,
        stand_in: Some(Self::STAND_IN),
    };
    const STAND_IN: &'static HandlerVt<A> = &HandlerVt {
        key: TypeId::of::<K>(),
        call: call_nothing::<A>,
        drop: drop_nothing,
        stand_in: None,
    };
}

/// # Safety
/// `data` is the `F` a handler built with [`Tables::REAL`] owns, not borrowed elsewhere.
unsafe fn call_closure<A: Agent, F>(
    data: NonNull<u8>,
    agent: &mut A,
    msg: Envelope,
    ctx: &mut Context<'_, A>,
) where
    F: for<'c> FnMut(&mut A, Envelope, &mut Context<'c, A>),
{
    // SAFETY: `data` came from `Box::into_raw` of an `F` and is borrowed only here (caller).
    let f = unsafe { &mut *data.as_ptr().cast::<F>() };
    f(agent, msg, ctx)
}

/// # Safety
/// `data` is the `F` a handler built with [`Tables::REAL`] owns; it is not used again.
unsafe fn drop_closure<F>(data: NonNull<u8>) {
    // SAFETY: `data` came from `Box::into_raw` of an `F` (caller); the box is given back once.
    drop(unsafe { Box::from_raw(data.as_ptr().cast::<F>()) })
}

/// A stand-in is never called: the table hands out the real handler, never its stand-in.
unsafe fn call_nothing<A: Agent>(_: NonNull<u8>, _: &mut A, _: Envelope, _: &mut Context<'_, A>) {}

/// A stand-in owns nothing.
unsafe fn drop_nothing(_: NonNull<u8>) {}

impl<A: Agent> Handler<A> {
    /// A handler running `f` for messages of subscription key `TypeId::of::<K>()`.
    pub(crate) fn new<K, F>(f: F) -> Self
    where
        K: 'static,
        F: for<'c> FnMut(&mut A, Envelope, &mut Context<'c, A>) + Send + 'static,
    {
        let data = NonNull::from(Box::leak(Box::new(f))).cast::<u8>();
        Self {
            data,
            vt: Tables::<A, K, F>::REAL,
        }
    }

    /// The subscription key of the messages it takes.
    #[inline(always)]
    pub(crate) fn key(&self) -> TypeId {
        self.vt.key
    }

    /// Whether this is a stand-in for a handler that is running.
    #[inline(always)]
    pub(crate) fn is_stand_in(&self) -> bool {
        self.vt.stand_in.is_none()
    }

    /// Takes the handler out, leaving its stand-in (same key) in its place.
    #[inline(always)]
    pub(crate) fn take(&mut self) -> Self {
        let stand_in = Self {
            data: NonNull::dangling(),
            vt: self.vt.stand_in.unwrap_or(self.vt),
        };
        std::mem::replace(self, stand_in)
    }

    /// Puts `running` (taken by [`Handler::take`]) back in place of this stand-in, which owns
    /// nothing and so is not dropped (no call on the path of every message).
    #[inline(always)]
    pub(crate) fn restore(&mut self, running: Self) {
        debug_assert!(self.is_stand_in());
        std::mem::forget(std::mem::replace(self, running));
    }

    /// Runs the handler.
    #[inline(always)]
    pub(crate) fn call(&mut self, agent: &mut A, msg: Envelope, ctx: &mut Context<'_, A>) {
        // SAFETY: `data` is the closure `vt` was built for (see `new`; a stand-in's call
        // ignores it), and `&mut self` borrows it exclusively.
        unsafe { (self.vt.call)(self.data, agent, msg, ctx) }
    }
}

impl<A: Agent> Drop for Handler<A> {
    fn drop(&mut self) {
        // SAFETY: `data` is the closure `vt` was built for, dropped once, here (a stand-in's
        // drop ignores it).
        unsafe { (self.vt.drop)(self.data) }
    }
}

#[cfg(all(test, not(cohort_loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Nobody;
    impl Agent for Nobody {}

    #[test]
    fn two_words_with_a_niche() {
        assert_eq!(std::mem::size_of::<Handler<Nobody>>(), 16);
        assert_eq!(std::mem::size_of::<Option<Handler<Nobody>>>(), 16);
    }

    #[test]
    fn keys_stand_ins_and_drops() {
        let dropped = Arc::new(AtomicUsize::new(0));
        struct Count(Arc<AtomicUsize>);
        impl Drop for Count {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        let held = Count(dropped.clone());
        let mut h = Handler::<Nobody>::new::<u32, _>(
            move |_: &mut Nobody, _: Envelope, _: &mut Context<'_, Nobody>| {
                let _ = &held;
            },
        );
        assert_eq!(h.key(), TypeId::of::<u32>());
        assert!(!h.is_stand_in());
        let running = h.take();
        assert!(h.is_stand_in() && !running.is_stand_in());
        assert_eq!(h.key(), TypeId::of::<u32>());
        drop(h);
        assert_eq!(dropped.load(Ordering::Relaxed), 0);
        drop(running);
        assert_eq!(dropped.load(Ordering::Relaxed), 1);
        // A zero-sized closure allocates nothing and drops nothing.
        let zst = Handler::<Nobody>::new::<u8, _>(
            |_: &mut Nobody, _: Envelope, _: &mut Context<'_, Nobody>| {},
        );
        assert_eq!(zst.key(), TypeId::of::<u8>());
    }
}
