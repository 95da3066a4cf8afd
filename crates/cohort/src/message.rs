//! Messages in flight: the type-erased [`Envelope`] a mailbox carries to a handler.
//!
//! Any `Send + 'static` type is a message; nothing is implemented by hand. An envelope is
//! two words: a pointer to the message type's static [`MsgMeta`] and the payload. A payload
//! that fits in one word (signals, integers, small `Copy` structs) is stored inline and costs
//! no allocation; a larger one is boxed once (the message's single allocation).
//!
//! Immutable messages are handled by reference (`&M`); a [`Mutable<M>`] message has exactly
//! one receiver and is handed to its handler by value. The two are distinct subscription keys,
//! as `M` and `mutable_msg<M>` are in SObjectizer.

use std::any::TypeId;
use std::mem::{ManuallyDrop, MaybeUninit, align_of, size_of};
use std::sync::Arc;

pub(crate) use crate::Mutable;

/// The static description of one message type in one representation.
pub(crate) struct MsgMeta {
    /// The subscription key: `TypeId` of `M`, or of `Mutable<M>` for mutable messages.
    pub(crate) key: TypeId,
    /// The message type's name, for dead letters and tracing.
    pub(crate) name: fn() -> &'static str,
    /// Drops an unconsumed payload; `None` when there is nothing to drop.
    pub(crate) drop: Option<unsafe fn(&mut Payload)>,
    /// The payload is an `Arc<M>` shared by several receivers (1:N delivery), even when `M`
    /// would fit inline.
    pub(crate) shared: bool,
    /// A [`Mutable<M>`] message: one receiver, handled by value.
    pub(crate) mutable: bool,
    /// Makes another envelope of the same message for another receiver: a bit copy of a
    /// one-word payload without drop glue, or one more count on a shared `Arc`. `None` for
    /// messages with one receiver.
    pub(crate) copy: Option<unsafe fn(&Payload) -> Payload>,
    /// Turns a boxed immutable payload into a shared one (`Arc<M>`) with its meta, so that a
    /// forwarded message can reach several receivers. `None` where `copy` already works or
    /// the message is mutable.
    pub(crate) share: Option<ShareFn>,
    /// Borrows the message (the user's `M`, also for a mutable one) for inspection, e.g. by
    /// the dead-letter hook.
    pub(crate) any: unsafe fn(&Envelope) -> &dyn std::any::Any,
}

/// # Safety
/// `e` was built from an `M` and has not been consumed.
unsafe fn any_of<M: Send + 'static>(e: &Envelope) -> &dyn std::any::Any {
    // SAFETY: as the caller guarantees.
    unsafe { e.get::<M>() }
}

/// Moves a boxed or inline immutable payload into a shared `Arc`, with the shared meta.
pub(crate) type ShareFn = unsafe fn(Payload) -> (&'static MsgMeta, Payload);

/// One word of payload: the message itself when it fits, else a pointer to its box.
pub(crate) type Payload = MaybeUninit<usize>;

/// Whether `M` is stored inline in the envelope's payload word.
pub(crate) const fn is_inline<M>() -> bool {
    size_of::<M>() <= size_of::<usize>() && align_of::<M>() <= align_of::<usize>()
}

struct Metas<M>(std::marker::PhantomData<M>);

impl<M: Send + 'static> Metas<M> {
    const IMMUTABLE: &'static MsgMeta = &MsgMeta {
        key: TypeId::of::<M>(),
        name: std::any::type_name::<M>,
        drop: drop_fn::<M>(),
        shared: false,
        mutable: false,
        share: if is_inline::<M>() && !std::mem::needs_drop::<M>() {
            None
        } else {
            Some(share_boxed::<M>)
        },
        copy: if is_inline::<M>() && !std::mem::needs_drop::<M>() {
            Some(copy_bits)
        } else {
            None
        },
        any: any_of::<M>,
    };
    const SHARED: &'static MsgMeta = &MsgMeta {
        key: TypeId::of::<M>(),
        name: std::any::type_name::<M>,
        drop: Some(drop_arc::<M>),
        shared: true,
        mutable: false,
        share: None,
        copy: Some(retain_arc::<M>),
        any: any_of::<M>,
    };
    const MUTABLE: &'static MsgMeta = &MsgMeta {
        key: TypeId::of::<Mutable<M>>(),
        name: std::any::type_name::<Mutable<M>>,
        drop: drop_fn::<M>(),
        shared: false,
        mutable: true,
        share: None,
        copy: None,
        any: any_of::<M>,
    };
}

/// # Safety
/// `p` holds a one-word message without drop glue.
unsafe fn copy_bits(p: &Payload) -> Payload {
    *p
}

/// # Safety
/// `p` holds one strong count of a live `Arc<M>`.
unsafe fn retain_arc<M>(p: &Payload) -> Payload {
    // SAFETY: the caller guarantees a live `Arc<M>` data pointer: one more count, owned by
    // the new payload.
    unsafe { Arc::increment_strong_count(p.assume_init() as *const M) };
    *p
}

/// # Safety
/// `p` holds an immutable `M` stored as `Metas::<M>::IMMUTABLE` stores it (inline or boxed),
/// not used again. (`M` is `Sync`: `Envelope::immutable` requires it.)
unsafe fn share_boxed<M: Send + 'static>(p: Payload) -> (&'static MsgMeta, Payload) {
    let msg: M = if is_inline::<M>() {
        // SAFETY: an inline `M` is at the start of the word (caller).
        unsafe { p.as_ptr().cast::<M>().read() }
    } else {
        // SAFETY: a boxed payload is a `Box<M>` pointer owned by the caller.
        unsafe { *Box::from_raw(p.assume_init() as *mut M) }
    };
    let mut out = Payload::uninit();
    out.write(Arc::into_raw(Arc::new(msg)) as usize);
    (Metas::<M>::SHARED, out)
}

const fn drop_fn<M>() -> Option<unsafe fn(&mut Payload)> {
    if is_inline::<M>() {
        if std::mem::needs_drop::<M>() {
            Some(drop_inline::<M>)
        } else {
            None
        }
    } else {
        Some(drop_boxed::<M>)
    }
}

/// # Safety
/// `p` holds an initialised inline `M` that is not used again.
unsafe fn drop_inline<M>(p: &mut Payload) {
    // SAFETY: the caller guarantees `p` holds an initialised `M` stored inline.
    unsafe { std::ptr::drop_in_place(p.as_mut_ptr().cast::<M>()) }
}

/// # Safety
/// `p` holds a pointer obtained from `Arc::<M>::into_raw` whose strong count is owned by the
/// envelope.
unsafe fn drop_arc<M>(p: &mut Payload) {
    // SAFETY: the caller guarantees `p` holds one strong count of a live `Arc<M>`.
    unsafe { drop(Arc::from_raw(p.assume_init() as *const M)) }
}

/// # Safety
/// `p` holds a pointer obtained from `Box::<M>::into_raw` that is not used again.
unsafe fn drop_boxed<M>(p: &mut Payload) {
    // SAFETY: the caller guarantees `p` holds a live `Box<M>` pointer, owned by the envelope.
    unsafe { drop(Box::from_raw(p.assume_init() as *mut M)) }
}

/// A message in flight, type-erased. Drops its payload unless a handler consumed it.
pub(crate) struct Envelope {
    meta: &'static MsgMeta,
    payload: Payload,
}

// SAFETY: an envelope is only built from `M: Send` values (see `immutable` and `mutable`) and
// owns its payload exclusively, so moving it to another thread moves an `M` across threads.
unsafe impl Send for Envelope {}

impl Envelope {
    /// An immutable message, handled by reference.
    #[inline]
    pub(crate) fn immutable<M: Send + Sync + 'static>(msg: M) -> Self {
        Self {
            meta: Metas::<M>::IMMUTABLE,
            payload: store(msg),
        }
    }

    /// An immutable message already in its box (built there field by field, so that it is
    /// not copied from the sender's stack into the box).
    #[inline]
    pub(crate) fn immutable_boxed<M: Send + Sync + 'static>(msg: Box<M>) -> Self {
        if is_inline::<M>() {
            return Self::immutable(*msg);
        }
        let mut payload = Payload::uninit();
        payload.write(Box::into_raw(msg) as usize);
        Self {
            meta: Metas::<M>::IMMUTABLE,
            payload,
        }
    }

    /// One receiver's share of a message several receivers handle by reference.
    #[inline]
    pub(crate) fn shared<M: Send + Sync + 'static>(msg: Arc<M>) -> Self {
        let mut payload = Payload::uninit();
        payload.write(Arc::into_raw(msg) as usize);
        Self {
            meta: Metas::<M>::SHARED,
            payload,
        }
    }

    /// An immutable message for any number of receivers: inline when it fits in one word
    /// without drop glue (copied per receiver), else shared through one `Arc`.
    #[inline]
    pub(crate) fn for_many<M: Send + Sync + 'static>(msg: M) -> Self {
        if is_inline::<M>() && !std::mem::needs_drop::<M>() {
            Envelope::immutable(msg)
        } else {
            Envelope::shared(Arc::new(msg))
        }
    }

    /// Whether [`Envelope::duplicate`] can copy it for another receiver.
    #[inline]
    pub(crate) fn can_duplicate(&self) -> bool {
        self.meta.copy.is_some()
    }

    /// A mutable message, handed to its one receiver by value.
    #[inline]
    pub(crate) fn mutable<M: Send + 'static>(msg: M) -> Self {
        Self {
            meta: Metas::<M>::MUTABLE,
            payload: store(msg),
        }
    }

    /// Another envelope of the same message, for another receiver (1:N delivery); `None`
    /// for a message that has one receiver.
    #[inline]
    pub(crate) fn duplicate(&self) -> Option<Envelope> {
        let copy = self.meta.copy?;
        // SAFETY: `copy` belongs to this payload's meta, so it matches how it was stored.
        let payload = unsafe { copy(&self.payload) };
        Some(Envelope {
            meta: self.meta,
            payload,
        })
    }

    /// The same immutable message in a form that [`Envelope::duplicate`] can copy for
    /// several receivers (a forwarded message published to a multi-consumer mailbox).
    pub(crate) fn into_shareable(self) -> Envelope {
        match self.meta.share {
            Some(share) if self.meta.copy.is_none() => {
                let this = ManuallyDrop::new(self);
                // SAFETY: `share` belongs to this meta (an immutable `M`, which `immutable`
                // requires to be `Sync`); the payload is moved out once and the envelope
                // is forgotten.
                let (meta, payload) = unsafe { share(this.payload) };
                Envelope { meta, payload }
            }
            _ => self,
        }
    }

    /// The subscription key of this message.
    #[inline]
    pub(crate) fn key(&self) -> TypeId {
        self.meta.key
    }

    /// Whether the payload is shared by several receivers (1:N delivery).
    #[inline]
    pub(crate) fn is_shared(&self) -> bool {
        self.meta.shared
    }

    /// Whether this is a mutable message (one receiver, handled by value).
    #[inline]
    pub(crate) fn is_mutable(&self) -> bool {
        self.meta.mutable
    }

    /// The message type's name.
    pub(crate) fn type_name(&self) -> &'static str {
        (self.meta.name)()
    }

    /// The function that names the message type (kept when the envelope is consumed).
    #[inline]
    pub(crate) fn type_name_fn(&self) -> fn() -> &'static str {
        self.meta.name
    }

    /// Borrows the message (the user's type) for inspection.
    pub(crate) fn as_any(&self) -> &dyn std::any::Any {
        // SAFETY: `meta` was made for the type the payload holds, and an envelope that is
        // still alive has not been consumed.
        unsafe { (self.meta.any)(self) }
    }

    /// Borrows the message as an `M`.
    ///
    /// # Safety
    /// The envelope was built from an `M` (its key is `TypeId::of::<M>()` or of
    /// `Mutable<M>`) and has not been consumed.
    #[inline]
    pub(crate) unsafe fn get<M: 'static>(&self) -> &M {
        if is_inline::<M>() && !self.meta.shared {
            // SAFETY: inline messages are written at the start of the payload word, which is
            // large and aligned enough for `M` (`is_inline`), and initialised (caller).
            unsafe { &*self.payload.as_ptr().cast::<M>() }
        } else {
            // SAFETY: a boxed or shared payload holds a live `Box<M>` or `Arc<M>` data pointer
            // (caller); both point at the `M`.
            unsafe { &*(self.payload.assume_init() as *const M) }
        }
    }

    /// Borrows an unshared message as a mutable `M`: the envelope owns it alone.
    ///
    /// # Safety
    /// As for [`Envelope::get`], and the payload is not shared ([`Envelope::is_shared`]).
    #[inline]
    pub(crate) unsafe fn get_mut<M: 'static>(&mut self) -> &mut M {
        if is_inline::<M>() {
            // SAFETY: as in `get`; the word is this envelope's own.
            unsafe { &mut *self.payload.as_mut_ptr().cast::<M>() }
        } else {
            // SAFETY: an unshared payload is a `Box<M>` pointer this envelope owns (caller).
            unsafe { &mut *(self.payload.assume_init() as *mut M) }
        }
    }

    /// Takes the box of an unshared message out as a `Box<M>` (its memory can be reused).
    ///
    /// # Safety
    /// As for [`Envelope::get_mut`].
    #[inline]
    pub(crate) unsafe fn into_box<M: 'static>(self) -> Box<M> {
        if is_inline::<M>() {
            // SAFETY: as the caller guarantees.
            return Box::new(unsafe { self.take::<M>() });
        }
        let this = ManuallyDrop::new(self);
        // SAFETY: an unshared boxed payload is a `Box<M>` pointer this envelope owns
        // (caller), reclaimed once: `ManuallyDrop` keeps the envelope from dropping it.
        unsafe { Box::from_raw(this.payload.assume_init() as *mut M) }
    }

    /// Takes the message out as an `M`; the envelope then drops nothing.
    ///
    /// # Safety
    /// As for [`Envelope::get`].
    #[inline]
    pub(crate) unsafe fn take<M: 'static>(self) -> M {
        let this = ManuallyDrop::new(self);
        if is_inline::<M>() {
            // SAFETY: as in `get`; `ManuallyDrop` keeps the envelope from dropping it again.
            unsafe { this.payload.as_ptr().cast::<M>().read() }
        } else {
            // SAFETY: as in `get`; the box is reclaimed exactly once here.
            unsafe { *Box::from_raw(this.payload.assume_init() as *mut M) }
        }
    }
}

#[inline]
fn store<M>(msg: M) -> Payload {
    let mut payload = Payload::uninit();
    if is_inline::<M>() {
        // SAFETY: `M` fits in the payload word with its alignment (`is_inline`).
        unsafe { payload.as_mut_ptr().cast::<M>().write(msg) };
    } else {
        payload.write(Box::into_raw(Box::new(msg)) as usize);
    }
    payload
}

impl Drop for Envelope {
    #[inline]
    fn drop(&mut self) {
        if let Some(drop) = self.meta.drop {
            // SAFETY: the payload was stored for this meta's type and not consumed (`take`
            // forgets the envelope), so it is dropped exactly once.
            unsafe { drop(&mut self.payload) }
        }
    }
}

#[cfg(test)]
#[allow(clippy::undocumented_unsafe_blocks)] // each envelope is read as the type it was built from
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn inline_and_boxed_round_trip() {
        let e = Envelope::immutable(42u64);
        assert_eq!(e.key(), TypeId::of::<u64>());
        assert_eq!(unsafe { *e.get::<u64>() }, 42);
        let s = Envelope::mutable(String::from("hello"));
        assert_eq!(s.key(), TypeId::of::<Mutable<String>>());
        assert_eq!(unsafe { s.take::<String>() }, "hello");
        struct Sig;
        let z = Envelope::immutable(Sig);
        assert!(unsafe { z.get::<Sig>() } as *const Sig as usize != 0);
        let big = Envelope::immutable([7u64; 8]);
        assert_eq!(unsafe { big.get::<[u64; 8]>() }[7], 7);
    }

    #[test]
    fn payload_dropped_once() {
        let n = Arc::new(AtomicUsize::new(0));
        drop(Envelope::immutable(Counted(n.clone()))); // inline (one word)
        drop(Envelope::immutable((Counted(n.clone()), 1u64))); // boxed
        let taken = unsafe { Envelope::mutable(Counted(n.clone())).take::<Counted>() };
        assert_eq!(n.load(Ordering::SeqCst), 2);
        drop(taken);
        assert_eq!(n.load(Ordering::SeqCst), 3);
    }
}
