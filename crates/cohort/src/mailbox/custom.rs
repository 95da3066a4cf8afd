//! Mailboxes implemented outside the runtime's core: message chains, remote proxies, test
//! doubles.
//!
//! A [`CustomMbox`] receives every message sent to its [`Mbox`] as an [`AnyMessage`]: the
//! type-erased message, which it can inspect ([`AnyMessage::downcast_ref`]), take
//! ([`AnyMessage::downcast`]) or keep as it is. Sending to such a mailbox is the same
//! [`Mbox::send`] as to any other; only the last step (a `dyn` call instead of a queue push)
//! differs, so code that holds an `Mbox` never knows what is behind it.
//!
//! Agents cannot subscribe to a custom mailbox (it has no subscribers of the runtime's kind):
//! [`Context::subscribe`](crate::Context::subscribe) refuses it with
//! [`SubscribeError::NotSubscribable`](crate::SubscribeError::NotSubscribable).

use crate::mailbox::Mbox;
use crate::message::Envelope;
use std::any::TypeId;
use std::fmt;

/// A mailbox whose delivery is written by the user (or by another cohort crate).
///
/// ```
/// use cohort::{AnyMessage, CustomMbox, Mbox};
/// use std::sync::{Arc, Mutex};
///
/// /// Keeps every `u32` it receives.
/// #[derive(Default)]
/// struct Recorder(Mutex<Vec<u32>>);
/// impl CustomMbox for Recorder {
///     fn deliver(&self, msg: AnyMessage) {
///         if let Some(n) = msg.downcast_ref::<u32>() {
///             self.0.lock().unwrap().push(*n);
///         }
///     }
/// }
///
/// let rec = Arc::new(Recorder::default());
/// let mbox = Mbox::custom(rec.clone()); // `Arc<T: CustomMbox>` is a `CustomMbox` too
/// mbox.send(7u32);
/// mbox.send("ignored");
/// assert_eq!(*rec.0.lock().unwrap(), vec![7]);
/// ```
pub trait CustomMbox: Send + Sync + 'static {
    /// Receives one message sent to this mailbox, on the sender's thread. Must not block for
    /// long: the sender waits for it.
    fn deliver(&self, msg: AnyMessage);

    /// Whether [`Mbox::send_mut`] may send to this mailbox (it has exactly one consumer).
    /// `false` by default: `send_mut` is refused with
    /// [`SendError::MutableToMultiConsumer`](crate::SendError::MutableToMultiConsumer).
    fn accepts_mutable(&self) -> bool {
        false
    }

    /// The mailbox's name, if it has one (shown by `Debug` and in errors).
    fn name(&self) -> Option<&str> {
        None
    }
}

impl<T: CustomMbox> CustomMbox for std::sync::Arc<T> {
    fn deliver(&self, msg: AnyMessage) {
        (**self).deliver(msg)
    }
    fn accepts_mutable(&self) -> bool {
        (**self).accepts_mutable()
    }
    fn name(&self) -> Option<&str> {
        (**self).name()
    }
}

/// A message in flight, type-erased: what a [`CustomMbox`] receives.
///
/// Dropping it drops the message.
///
/// ```
/// use cohort::AnyMessage;
///
/// let msg = AnyMessage::new(String::from("hi"));
/// assert!(msg.is::<String>());
/// assert_eq!(msg.downcast_ref::<String>().map(String::as_str), Some("hi"));
/// let s: String = msg.downcast::<String>().ok().unwrap();
/// assert_eq!(s, "hi");
/// ```
pub struct AnyMessage {
    envelope: Envelope,
}

impl AnyMessage {
    /// Wraps an immutable message (as [`Mbox::send`] does).
    pub fn new<M: Send + Sync + 'static>(msg: M) -> Self {
        Self {
            envelope: Envelope::immutable(msg),
        }
    }

    /// Wraps a mutable message (as [`Mbox::send_mut`] does).
    pub fn new_mut<M: Send + 'static>(msg: M) -> Self {
        Self {
            envelope: Envelope::mutable(msg),
        }
    }

    pub(crate) fn from_envelope(envelope: Envelope) -> Self {
        Self { envelope }
    }

    /// The envelope (for a dead letter's view of the message).
    pub(crate) fn envelope(&self) -> &Envelope {
        &self.envelope
    }

    /// Sends this message on to `to`, as it is (immutable or mutable): what a forwarding
    /// mailbox does. A mutable message to a multi-consumer mailbox is refused.
    pub fn forward(self, to: &Mbox) -> Result<(), crate::SendError> {
        to.deliver_envelope(self.envelope, 0)
    }

    /// The message's type: `TypeId::of::<M>()` for an immutable `M`, of
    /// [`Mutable<M>`](crate::Mutable) for a mutable one.
    pub fn type_id(&self) -> TypeId {
        self.envelope.key()
    }

    /// The message type's name.
    pub fn type_name(&self) -> &'static str {
        self.envelope.type_name()
    }

    /// Whether the message is a mutable one (sent with `send_mut`).
    pub fn is_mutable(&self) -> bool {
        self.envelope.is_mutable()
    }

    /// Whether the message is an `M` (immutable or mutable).
    pub fn is<M: 'static>(&self) -> bool {
        let key = self.envelope.key();
        key == TypeId::of::<M>() || key == TypeId::of::<crate::Mutable<M>>()
    }

    /// Borrows the message as an `M`, if it is one.
    pub fn downcast_ref<M: 'static>(&self) -> Option<&M> {
        if self.is::<M>() {
            // SAFETY: the key says the envelope was built from an `M` (`immutable`, `shared`
            // or `mutable`), and it is not consumed (we own it).
            Some(unsafe { self.envelope.get::<M>() })
        } else {
            None
        }
    }

    /// Takes the message out as an `M`, if it is one and is not shared with other receivers;
    /// gives it back otherwise.
    pub fn downcast<M: 'static>(self) -> Result<M, Self> {
        if self.is::<M>() && !self.envelope.is_shared() {
            // SAFETY: as in `downcast_ref`; a non-shared envelope owns its payload (inline or
            // boxed), which `take` moves out exactly once.
            Ok(unsafe { self.envelope.take::<M>() })
        } else {
            Err(self)
        }
    }

    /// Drops the message as undeliverable for `why`: a [`Request`](crate::Request) inside
    /// completes with the matching [`RequestError`](crate::RequestError) (`ReceiverGone` for
    /// [`NodeDown`](crate::DeliveryFailure::NodeDown), ...), as when the runtime drops one.
    /// Counting it is the caller's
    /// ([`Environment::report_dead_letter`](crate::Environment::report_dead_letter)).
    ///
    /// ```
    /// use cohort::{AnyMessage, CustomMbox, DeliveryFailure, Mbox, RequestError};
    /// use std::sync::{mpsc, Mutex};
    /// use std::time::Duration;
    ///
    /// /// Hands what it receives to the test.
    /// struct Capture(Mutex<mpsc::Sender<AnyMessage>>);
    /// impl CustomMbox for Capture {
    ///     fn deliver(&self, msg: AnyMessage) {
    ///         let _ = self.0.lock().unwrap().send(msg);
    ///     }
    /// }
    ///
    /// let (tx, rx) = mpsc::channel();
    /// let mbox = Mbox::custom(Capture(Mutex::new(tx)));
    /// let pending = mbox.request::<u8, u8>(1);
    /// rx.recv().unwrap().discard(DeliveryFailure::NodeDown);
    /// assert_eq!(pending.wait(Duration::from_secs(5)), Err(RequestError::ReceiverGone));
    /// ```
    pub fn discard(self, why: crate::DeliveryFailure) {
        crate::mailbox::request::drop_with_reason(self, why)
    }
}

impl fmt::Debug for AnyMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnyMessage")
            .field("type", &self.type_name())
            .field("mutable", &self.is_mutable())
            .finish()
    }
}
